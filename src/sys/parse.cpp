#include "sys/parse.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <utility>

#include "edgeprof/error.hpp"
#include "sys/text.hpp"

namespace edgeprof::detail {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

void find_keys(std::string_view text, const std::string_view* keys, std::size_t count,
               std::optional<std::uint64_t>* out) {
  for (std::size_t i = 0; i < count; ++i) out[i].reset();
  std::size_t left = count;
  size_t pos = 0;
  while (left > 0 && pos < text.size()) {
    const size_t nl = text.find('\n', pos);  // memchr
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    size_t at = pos;
    while (at < end && is_space(text[at])) ++at;
    size_t key_end = at;
    while (key_end < end && !is_space(text[key_end])) ++key_end;
    const std::string_view key = text.substr(at, key_end - at);
    for (std::size_t i = 0; i < count; ++i) {
      if (out[i] || keys[i].empty() || key != keys[i]) continue;
      std::string_view rest = trim(text.substr(key_end, end - key_end));
      rest = rest.substr(0, rest.find_first_of(" \t"));  // "24591236 kB" -> "24591236"
      out[i] = parse_u64(rest);  // a line without a number is passed over
      if (out[i]) --left;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
}

std::optional<std::uint64_t> find_key(std::string_view text, std::string_view key) {
  std::optional<std::uint64_t> value;
  find_keys(text, &key, 1, &value);
  return value;
}

std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text) {
  std::vector<CgroupMembership> out;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) return;
    size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return;
    auto id = parse_u64(line.substr(0, c1));
    if (!id) return;
    CgroupMembership m;
    m.hierarchy = static_cast<int>(*id);
    std::string_view list = line.substr(c1 + 1, c2 - c1 - 1);
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view name = list.substr(0, comma);
      if (!name.empty()) m.controllers.emplace_back(name);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    m.path = std::string(line.substr(c2 + 1));
    out.push_back(std::move(m));
  });
  return out;
}

std::vector<pid_t> parse_pids(std::string_view text) {
  std::vector<pid_t> out;
  for_each_line(text, [&](std::string_view line) {
    const auto v = parse_u64(line);
    if (v && *v > 0 && *v <= std::uint64_t(std::numeric_limits<pid_t>::max())) {
      out.push_back(static_cast<pid_t>(*v));
    }
  });
  return out;
}

bool lists_processes(std::string_view text) {
  bool any = false;
  for_each_line(text, [&](std::string_view line) { any = any || parse_u64(line).has_value(); });
  return any;
}

namespace {

// Field `n` (3 or later) of /proc/<pid>/stat; nullopt when the text has fewer fields.
std::optional<std::string_view> stat_field(std::string_view text, int n) {
  // The command name (field 2) may contain spaces and parentheses: count from the last ')'.
  size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(paren + 1);
  int field = 2;
  while (!rest.empty()) {
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    if (rest.empty()) break;
    size_t end = rest.find_first_of(" \t\n\r");
    if (++field == n) return rest.substr(0, end);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> parse_stat_starttime(std::string_view text) {
  auto word = stat_field(text, 22);
  return word ? parse_u64(*word) : std::nullopt;
}

std::optional<pid_t> parse_stat_ppid(std::string_view text) {
  auto word = stat_field(text, 4);
  auto value = word ? parse_u64(*word) : std::nullopt;
  if (!value || *value > std::uint64_t(std::numeric_limits<pid_t>::max())) return std::nullopt;
  return static_cast<pid_t>(*value);
}

std::optional<char> parse_stat_state(std::string_view text) {
  const auto word = stat_field(text, 3);
  if (!word || word->size() != 1) return std::nullopt;
  const char state = word->front();
  const bool letter = (state >= 'A' && state <= 'Z') || (state >= 'a' && state <= 'z');
  return letter ? std::optional<char>(state) : std::nullopt;
}

std::optional<int> parse_stat_processor(std::string_view text) {
  const auto word = stat_field(text, 39);
  const auto value = word ? parse_u64(*word) : std::nullopt;
  if (!value || *value > std::uint64_t(std::numeric_limits<int>::max())) return std::nullopt;
  return static_cast<int>(*value);
}

std::string format_slice_name(const SliceName& name) {
  std::string out =
      fmt::format("edgeprof-{}-{}-{}", name.owner, name.owner_start, name.sequence);
  if (name.pid_ns != 0) out += fmt::format("-{}", name.pid_ns);
  return out;
}

std::optional<SliceName> parse_slice_name(std::string_view name) {
  const std::string_view original = name;
  constexpr std::string_view prefix = "edgeprof-";
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  // Three numbers (names before the pid namespace was in them) or four.
  std::uint64_t parts[4] = {0, 0, 0, 0};
  int n = 0;
  for (;;) {
    if (n == 4) return std::nullopt;
    const size_t dash = name.find('-');
    auto value = parse_u64(name.substr(0, dash));
    if (!value) return std::nullopt;
    parts[n++] = *value;
    if (dash == std::string_view::npos) break;
    name.remove_prefix(dash + 1);
  }
  if (n < 3 || parts[0] == 0 || parts[0] > std::uint64_t(std::numeric_limits<pid_t>::max())) {
    return std::nullopt;
  }
  if (n == 4 && parts[3] == 0) return std::nullopt;  // written only when known
  const SliceName out{static_cast<pid_t>(parts[0]), parts[1], parts[2], parts[3]};
  // Only what format_slice_name() writes: a look-alike such as "edgeprof-01-2-3" or
  // "edgeprof- 1-2-3" (someone else's directory) is not taken for pid 1's slice and swept.
  if (format_slice_name(out) != original) return std::nullopt;
  return out;
}

CpuSplit split_cpu_time(std::uint64_t usage_ns, std::uint64_t user_ticks,
                        std::uint64_t system_ticks) {
  const std::uint64_t ticks = user_ticks + system_ticks;
  if (ticks == 0) return {usage_ns, 0};
  // 128-bit product: usage_ns x ticks overflows 64 bits after a few CPU-days.
  __extension__ using u128 = unsigned __int128;
  auto user = static_cast<std::uint64_t>(u128{usage_ns} * user_ticks / ticks);
  return {user, usage_ns - user};
}

CpuStat parse_cpu_stat_v2(std::string_view text) {
  static constexpr std::string_view keys[] = {"usage_usec", "user_usec",    "system_usec",
                                              "nr_periods", "nr_throttled", "throttled_usec"};
  std::optional<std::uint64_t> v[6];
  find_keys(text, keys, v);
  auto ns = [](std::optional<std::uint64_t> us) {
    return us ? std::optional<std::uint64_t>(*us * 1000) : std::nullopt;
  };
  return {ns(v[0]), ns(v[1]), ns(v[2]), v[3], v[4], ns(v[5])};
}

CpuStat parse_cpu_stat_v1(std::string_view text) {
  static constexpr std::string_view keys[] = {"nr_periods", "nr_throttled", "throttled_time"};
  std::optional<std::uint64_t> v[3];
  find_keys(text, keys, v);
  CpuStat c;
  c.periods = v[0];
  c.throttled_periods = v[1];
  c.throttled_ns = v[2];
  return c;
}

CpuStat sum_cpu_stats(const CpuStat* stats, std::size_t count) {
  CpuStat sum;
  if (count == 0) return sum;
  auto add = [&](std::optional<std::uint64_t> CpuStat::*field) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!(stats[i].*field)) return;
      total += *(stats[i].*field);
    }
    sum.*field = total;
  };
  for (auto field : {&CpuStat::usage_ns, &CpuStat::user_ns, &CpuStat::system_ns,
                     &CpuStat::periods, &CpuStat::throttled_periods, &CpuStat::throttled_ns}) {
    add(field);
  }
  return sum;
}

CpuStat parse_cpuacct(std::string_view usage, std::string_view stat) {
  CpuStat c;
  const auto total = parse_u64(usage);
  if (!total) return c;
  static constexpr std::string_view keys[] = {"user", "system"};
  std::optional<std::uint64_t> ticks[2];
  find_keys(stat, keys, ticks);
  const CpuSplit split = split_cpu_time(*total, ticks[0].value_or(0), ticks[1].value_or(0));
  c.usage_ns = *total;
  c.user_ns = split.user_ns;
  c.system_ns = split.system_ns;
  return c;
}

namespace {

// Calls fn(key, value) for each "key=value" word of a line.
template <class Fn>
void for_each_pair(std::string_view line, Fn&& fn) {
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    std::string_view word = line.substr(i, j - i);
    size_t eq = word.find('=');
    if (eq != std::string_view::npos) fn(word.substr(0, eq), word.substr(eq + 1));
    i = j;
  }
}

}  // namespace

IoTotals parse_io_stat(std::string_view text) {
  IoTotals t;
  for_each_line(text, [&](std::string_view line) {
    for_each_pair(line, [&](std::string_view key, std::string_view value) {
      const std::uint64_t v = parse_u64(value).value_or(0);
      if (key == "rbytes") t.read_bytes += v;
      if (key == "wbytes") t.write_bytes += v;
      if (key == "rios") t.read_ops += v;
      if (key == "wios") t.write_ops += v;
    });
  });
  return t;
}

std::optional<NetTotals> parse_net_dev(std::string_view text) {
  if (text.substr(0, 6) != "Inter-") return std::nullopt;
  NetTotals t;
  bool ok = true;
  int line_no = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++line_no <= 2 || !ok) return;  // two header lines
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      ok = trim(line).empty();
      return;
    }
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets ...
    std::uint64_t fields[10] = {};
    std::string_view rest = line.substr(colon + 1);
    for (int i = 0; i < 10; ++i) {
      rest = trim(rest);
      const size_t end = std::min(rest.find(' '), rest.size());
      auto v = parse_u64(rest.substr(0, end));
      if (!v) {
        ok = false;
        return;
      }
      fields[i] = *v;
      rest = rest.substr(end);
    }
    t.rx_bytes += fields[0];
    t.rx_packets += fields[1];
    t.tx_bytes += fields[8];
    t.tx_packets += fields[9];
  });
  if (!ok) return std::nullopt;
  return t;
}

std::vector<BlockDevice> parse_partitions(std::string_view text) {
  std::vector<BlockDevice> out;
  for_each_line(text, [&](std::string_view line) {
    const std::vector<std::string> w = split_words(line);
    if (w.size() != 4) return;
    const auto major = parse_u64(w[0]), minor = parse_u64(w[1]), blocks = parse_u64(w[2]);
    if (!major || !minor || !blocks) return;  // the heading
    out.push_back({std::to_string(*major) + ":" + std::to_string(*minor), w[3], *blocks});
  });
  return out;
}

ReadWrite parse_blkio(std::string_view text) {
  ReadWrite rw;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    // "MAJ:MIN Op N"; the closing "Total N" line has no device.
    size_t a = line.find(' ');
    if (a == std::string_view::npos || line.substr(0, a).find(':') == std::string_view::npos) {
      return;
    }
    std::string_view rest = trim(line.substr(a + 1));
    size_t b = rest.find(' ');
    if (b == std::string_view::npos) return;
    std::string_view op = rest.substr(0, b);
    const std::uint64_t v = parse_u64(rest.substr(b + 1)).value_or(0);
    if (op == "Read") rw.read += v;
    if (op == "Write") rw.write += v;
  });
  return rw;
}

Pressure parse_pressure(std::string_view text) {
  Pressure p;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    const bool some = line.rfind("some ", 0) == 0;
    const bool full = line.rfind("full ", 0) == 0;
    if (!some && !full) return;
    // "total=N" is one of the words (the last one as the kernel writes it).
    for (size_t at = line.find("total="); at != std::string_view::npos;
         at = line.find("total=", at + 1)) {
      if (!is_space(line[at - 1])) continue;  // at >= 5: after "some " / "full "
      std::string_view value = line.substr(at + 6);
      value = value.substr(0, value.find_first_of(" \t"));
      (some ? p.some_us : p.full_us) = parse_u64(value);
      break;
    }
  });
  return p;
}

std::optional<CpuMax> parse_cpu_max(std::string_view text) {
  const std::vector<std::string> w = split_words(text);
  if (w.size() != 2) return std::nullopt;
  const auto period = parse_u64(w[1]);
  if (!period || *period == 0) return std::nullopt;
  CpuMax out;
  out.period_us = *period;
  if (w[0] == "max") return out;
  out.quota_us = parse_u64(w[0]);
  if (!out.quota_us) return std::nullopt;
  return out;
}

std::optional<CpuMax> parse_cfs_bandwidth(std::string_view quota, std::string_view period) {
  const auto p = parse_u64(period);
  if (!p || *p == 0) return std::nullopt;
  CpuMax out;
  out.period_us = *p;
  if (trim(quota) == "-1") return out;
  out.quota_us = parse_u64(quota);
  if (!out.quota_us) return std::nullopt;
  return out;
}

std::optional<bool> parse_switch(std::string_view text) {
  std::string word(trim(text));
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (word == "1" || word == "true" || word == "on" || word == "yes") return true;
  if (word == "0" || word == "false" || word == "off" || word == "no") return false;
  return std::nullopt;
}

bool switch_setting(const char* name, const char* value, bool unset) {
  if (!value || !*value) return unset;
  if (const auto on = parse_switch(value)) return *on;
  throw Error(fmt::format("{}={} is not a switch: set it to 1 (or true, on, yes) or 0 (or false, "
                          "off, no), or unset it for the default ({})",
                          name, printable(value), unset ? "on" : "off"));
}

bool switch_from_env(const char* name, bool unset) {
  return switch_setting(name, std::getenv(name), unset);
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j > i) out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

namespace {

std::string folded(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c);
  }
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> close_names(std::string_view key, const std::vector<std::string>& names,
                                     std::size_t limit) {
  const std::string k = folded(key);
  if (k.empty()) return {};
  std::vector<std::pair<std::size_t, std::string>> prefixed, near;
  const std::size_t most = std::max<std::size_t>(2, k.size() / 3);
  for (const std::string& name : names) {
    const std::string n = folded(name);
    // The same without dashes and case first ("raspberry-pi4": the alias "raspberry-pi-4"; it
    // was left out, as neither longer nor near once longer names matched).
    if (n.size() >= k.size() && n.compare(0, k.size(), k) == 0) {
      prefixed.emplace_back(n.size() - k.size(), name);
    } else if (const std::size_t d = edit_distance(k, n); d <= most) {
      near.emplace_back(d, name);
    }
  }
  auto& chosen = prefixed.empty() ? near : prefixed;
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [score, name] : chosen) {
    if (out.size() == limit) break;
    out.push_back(name);
  }
  return out;
}

}  // namespace edgeprof::detail
