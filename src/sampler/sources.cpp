#include "sampler/sources.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include "cgroup/files.hpp"
#include "sys/parse.hpp"

namespace edgeprof::detail {

namespace {

// Sets metrics[i] from keys[i] of flat-keyed text (one pass). Returns false, and sets nothing,
// when one of the first `required` keys is missing.
template <std::size_t N>
bool take(std::string_view text, const std::string_view (&keys)[N], const Metric (&metrics)[N],
          Reading& r, std::size_t required = N) {
  std::optional<std::uint64_t> values[N];
  find_keys(text, keys, values);
  for (std::size_t i = 0; i < required; ++i) {
    if (!values[i]) return false;
  }
  for (std::size_t i = 0; i < N; ++i) {
    if (values[i]) r.set(metrics[i], *values[i]);
  }
  return true;
}

bool take_single(std::string_view text, Reading& r, Metric m) {
  auto v = parse_u64(text);
  if (v) r.set(m, *v);
  return v.has_value();
}

// Parsers, one per file kind. They receive the texts of the source's files in order.

// Sets what `c` holds of the metrics; false when one of `required` is missing.
bool set_cpu(const CpuStat& c, Reading& v, std::initializer_list<Metric> required) {
  const std::pair<Metric, const std::optional<std::uint64_t>*> fields[] = {
      {Metric::cpu_usage_ns, &c.usage_ns},
      {Metric::cpu_user_ns, &c.user_ns},
      {Metric::cpu_system_ns, &c.system_ns},
      {Metric::cpu_periods, &c.periods},
      {Metric::cpu_throttled_periods, &c.throttled_periods},
      {Metric::cpu_throttled_ns, &c.throttled_ns}};
  for (Metric m : required) {
    for (const auto& [metric, value] : fields) {
      if (metric == m && !*value) return false;
    }
  }
  for (const auto& [metric, value] : fields) {
    if (*value) v.set(metric, **value);
  }
  return true;
}

bool v2_cpu_stat(const std::string_view* t, Reading& v) {
  // The throttling fields appear only with the cpu controller enabled: not required.
  return set_cpu(parse_cpu_stat_v2(t[0]), v,
                 {Metric::cpu_usage_ns, Metric::cpu_user_ns, Metric::cpu_system_ns});
}

bool v1_cpu_time(const std::string_view* t, Reading& v) {
  return set_cpu(parse_cpuacct(t[0], t[1]), v, {Metric::cpu_usage_ns});
}

bool v1_cpu_stat(const std::string_view* t, Reading& v) {
  return set_cpu(parse_cpu_stat_v1(t[0]), v,
                 {Metric::cpu_periods, Metric::cpu_throttled_periods, Metric::cpu_throttled_ns});
}

// Per-core emulation: the throttling of N core groups' cpu.stat (v1 or v2), summed; only the
// throttling: the slice's own counters hold the CPU time of every group.
template <CpuStat (*Parse)(std::string_view), std::size_t N>
bool core_cpu_stats(const std::string_view* t, Reading& v) {
  std::array<CpuStat, N> cores;  // no allocation per tick
  for (std::size_t i = 0; i < N; ++i) cores[i] = Parse(t[i]);
  CpuStat sum = sum_cpu_stats(cores.data(), N);
  sum.usage_ns = sum.user_ns = sum.system_ns = std::nullopt;
  return set_cpu(sum, v,
                 {Metric::cpu_periods, Metric::cpu_throttled_periods, Metric::cpu_throttled_ns});
}

using Parser = bool (*)(const std::string_view*, Reading&);
template <CpuStat (*Parse)(std::string_view), std::size_t... I>
constexpr std::array<Parser, sizeof...(I)> core_parsers(std::index_sequence<I...>) {
  return {&core_cpu_stats<Parse, I + 1>...};
}
// The parsers for 1 .. kMaxCoreGroups core groups, at index N - 1.
constexpr auto kV1CoreCpuStats =
    core_parsers<parse_cpu_stat_v1>(std::make_index_sequence<kMaxCoreGroups>());
constexpr auto kV2CoreCpuStats =
    core_parsers<parse_cpu_stat_v2>(std::make_index_sequence<kMaxCoreGroups>());

// The core groups' cpu.stat files.
std::vector<std::string> core_stats(const std::vector<std::string>& core_dirs, const char* file) {
  std::vector<std::string> stats;
  for (const std::string& dir : core_dirs) stats.push_back(join(dir, file));
  return stats;
}
const std::string kCoreGroupsSource = fmt::format("{} (core groups)", files::v1::kCpuStat);

// Files holding one number: memory.current, memory.peak, memory.swap.current, pids.current...
template <Metric M>
bool single(const std::string_view* t, Reading& v) {
  return take_single(t[0], v, M);
}

bool v2_memory_stat(const std::string_view* t, Reading& v) {
  static constexpr std::string_view keys[] = {"anon", "file", "pgmajfault"};
  static constexpr Metric metrics[] = {Metric::memory_anon_bytes, Metric::memory_file_bytes,
                                       Metric::memory_major_faults};
  return take(t[0], keys, metrics, v);
}

bool v1_memory_stat(const std::string_view* t, Reading& v) {
  // total_swap is absent without swap accounting: not required.
  static constexpr std::string_view keys[] = {"total_rss", "total_cache", "total_pgmajfault",
                                              "total_swap"};
  static constexpr Metric metrics[] = {Metric::memory_anon_bytes, Metric::memory_file_bytes,
                                       Metric::memory_major_faults, Metric::memory_swap_bytes};
  return take(t[0], keys, metrics, v, 3);
}

// memory.events (v2) and memory.oom_control (v1) both count "oom_kill", since Linux 4.13: on
// an older kernel the count is missing (incomplete), and the file is no failure.
bool oom_kills(const std::string_view* t, Reading& v) {
  static constexpr std::string_view keys[] = {"oom_kill"};
  static constexpr Metric metrics[] = {Metric::memory_oom_kills};
  return take(t[0], keys, metrics, v, 0);
}

bool set_io(Reading& v, std::uint64_t read_bytes, std::uint64_t write_bytes, std::uint64_t read_ops,
            std::uint64_t write_ops) {
  v.set(Metric::io_read_bytes, read_bytes);
  v.set(Metric::io_write_bytes, write_bytes);
  v.set(Metric::io_read_ops, read_ops);
  v.set(Metric::io_write_ops, write_ops);
  return true;
}

bool v2_io_stat(const std::string_view* t, Reading& v) {
  const IoTotals io = parse_io_stat(t[0]);
  return set_io(v, io.read_bytes, io.write_bytes, io.read_ops, io.write_ops);
}

bool v1_blkio(const std::string_view* t, Reading& v) {
  const ReadWrite bytes = parse_blkio(t[0]), ops = parse_blkio(t[1]);
  return set_io(v, bytes.read, bytes.write, ops.read, ops.write);
}

bool net_dev(const std::string_view* t, Reading& v) {
  auto totals = parse_net_dev(t[0]);
  if (!totals) return false;
  v.set(Metric::net_rx_bytes, totals->rx_bytes);
  v.set(Metric::net_tx_bytes, totals->tx_bytes);
  v.set(Metric::net_rx_packets, totals->rx_packets);
  v.set(Metric::net_tx_packets, totals->tx_packets);
  return true;
}

bool pressure_cpu(const std::string_view* t, Reading& v) {
  Pressure p = parse_pressure(t[0]);
  if (!p.some_us) return false;
  v.set(Metric::pressure_cpu_some_us, *p.some_us);
  return true;
}
// memory.pressure and io.pressure: the "some" and "full" stall totals.
bool pressure_pair(std::string_view text, Reading& v, Metric some, Metric full) {
  Pressure p = parse_pressure(text);
  if (!p.some_us || !p.full_us) return false;
  v.set(some, *p.some_us);
  v.set(full, *p.full_us);
  return true;
}
bool pressure_memory(const std::string_view* t, Reading& v) {
  return pressure_pair(t[0], v, Metric::pressure_memory_some_us, Metric::pressure_memory_full_us);
}
bool pressure_io(const std::string_view* t, Reading& v) {
  return pressure_pair(t[0], v, Metric::pressure_io_some_us, Metric::pressure_io_full_us);
}

}  // namespace


void Sources::add(const Fs& fs, std::string name, std::vector<std::string> paths,
                  std::vector<Metric> metrics, bool (*parse)(const std::string_view*, Reading&),
                  Rate rate, bool host_wide) {
  if (std::none_of(metrics.begin(), metrics.end(),
                   [&](Metric m) { return only_.test(static_cast<size_t>(m)); })) {
    return;  // not wanted: neither opened nor listed
  }
  Source s;
  s.name = std::move(name);
  s.host_wide = host_wide;
  s.rate = rate;
  s.metrics = std::move(metrics);
  s.parse = parse;
  for (const std::string& path : paths) {
    if (path.empty()) {  // v1: the controller is not part of the slice
      missing_.push_back({s.name, false, false, host_wide,
                          "its cgroup v1 controller is not mounted or not used for slices"});
      return;
    }
    StatFile file(fs, path);
    if (!file.ok()) {
      missing_.push_back({s.name, false, false, host_wide, file.error()});
      return;
    }
    s.files.push_back(std::move(file));
  }
  reserve_scratch(s.files.size());
  sources_.push_back(std::move(s));
}

void Sources::reserve_scratch(std::size_t files) {
  if (scratch_.size() < files * kSourceBuffer) scratch_.resize(files * kSourceBuffer);
  if (views_.size() < files) views_.resize(files);
}

Sources Sources::v2(const Fs& fs, const std::string& dir, int peak_fd,
                    const std::vector<std::string>& core_dirs,
                    const std::bitset<kMetricCount>& only) {
  Sources s;
  s.only_ = only;
  auto f = [&](const char* name) { return join(dir, name); };
  using M = Metric;
  s.add(fs, files::v2::kCpuStat, {f(files::v2::kCpuStat)},
        {M::cpu_usage_ns, M::cpu_user_ns, M::cpu_system_ns, M::cpu_periods,
         M::cpu_throttled_periods, M::cpu_throttled_ns},
        v2_cpu_stat);
  if (!core_dirs.empty() && core_dirs.size() <= kMaxCoreGroups) {
    // After the slice's own cpu.stat, whose throttling (none: no quota of its own) it replaces.
    s.add(fs, kCoreGroupsSource, core_stats(core_dirs, files::v2::kCpuStat),
          {M::cpu_periods, M::cpu_throttled_periods, M::cpu_throttled_ns},
          kV2CoreCpuStats[core_dirs.size() - 1]);
  }
  s.add(fs, files::v2::kMemoryCurrent, {f(files::v2::kMemoryCurrent)}, {M::memory_current_bytes},
        single<M::memory_current_bytes>);
  s.add(fs, files::v2::kMemoryPeak, {f(files::v2::kMemoryPeak)}, {M::memory_peak_bytes},
        single<M::memory_peak_bytes>);
  if (peak_fd >= 0 && !s.sources_.empty() && s.sources_.back().name == files::v2::kMemoryPeak) {
    // A copy of the descriptor shares the open file, and so the reset, with the original.
    Source& peak = s.sources_.back();
    const int copy = ::fcntl(peak_fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0) peak.files[0] = StatFile::adopt(copy, peak.files[0].path());
  }
  // The rest moves slowly, or costs the kernel more to format (memory.stat): read at the slow
  // rate (Rate), and at every extra sample.
  constexpr Rate slow = Rate::slow;
  s.add(fs, files::v2::kMemoryStat, {f(files::v2::kMemoryStat)},
        {M::memory_anon_bytes, M::memory_file_bytes, M::memory_major_faults}, v2_memory_stat,
        slow);
  s.add(fs, files::v2::kMemorySwapCurrent, {f(files::v2::kMemorySwapCurrent)},
        {M::memory_swap_bytes}, single<M::memory_swap_bytes>, slow);
  s.add(fs, files::v2::kMemoryEvents, {f(files::v2::kMemoryEvents)}, {M::memory_oom_kills},
        oom_kills, slow);
  s.add(fs, files::v2::kIoStat, {f(files::v2::kIoStat)},
        {M::io_read_bytes, M::io_write_bytes, M::io_read_ops, M::io_write_ops}, v2_io_stat, slow);
  s.add(fs, files::v2::kCpuPressure, {f(files::v2::kCpuPressure)}, {M::pressure_cpu_some_us},
        pressure_cpu, slow);
  s.add(fs, files::v2::kMemoryPressure, {f(files::v2::kMemoryPressure)},
        {M::pressure_memory_some_us, M::pressure_memory_full_us}, pressure_memory, slow);
  s.add(fs, files::v2::kIoPressure, {f(files::v2::kIoPressure)},
        {M::pressure_io_some_us, M::pressure_io_full_us}, pressure_io, slow);
  s.add(fs, files::v2::kPidsCurrent, {f(files::v2::kPidsCurrent)}, {M::tasks}, single<M::tasks>,
        slow);
  return s;
}

Sources Sources::v1(const Fs& fs, const std::map<std::string, std::string>& dirs,
                    const std::vector<std::string>& core_dirs,
                    const std::bitset<kMetricCount>& only) {
  Sources s;
  s.only_ = only;
  using M = Metric;
  auto f = [&](const char* controller, const char* name) {
    auto it = dirs.find(controller);
    return it == dirs.end() ? std::string() : join(it->second, name);
  };
  s.add(fs, fmt::format("{}+{}", files::v1::kCpuacctUsage, files::v1::kCpuacctStat),
        {f("cpuacct", files::v1::kCpuacctUsage), f("cpuacct", files::v1::kCpuacctStat)},
        {M::cpu_usage_ns, M::cpu_user_ns, M::cpu_system_ns}, v1_cpu_time);
  if (core_dirs.empty() || core_dirs.size() > kMaxCoreGroups) {  // (plan_emulation caps them)
    s.add(fs, files::v1::kCpuStat, {f("cpu", files::v1::kCpuStat)},
          {M::cpu_periods, M::cpu_throttled_periods, M::cpu_throttled_ns}, v1_cpu_stat);
  } else {
    s.add(fs, kCoreGroupsSource, core_stats(core_dirs, files::v1::kCpuStat),
          {M::cpu_periods, M::cpu_throttled_periods, M::cpu_throttled_ns},
          kV1CoreCpuStats[core_dirs.size() - 1]);
  }
  s.add(fs, files::v1::kMemoryUsageInBytes, {f("memory", files::v1::kMemoryUsageInBytes)},
        {M::memory_current_bytes}, single<M::memory_current_bytes>);
  s.add(fs, files::v1::kMemoryMaxUsageInBytes, {f("memory", files::v1::kMemoryMaxUsageInBytes)},
        {M::memory_peak_bytes}, single<M::memory_peak_bytes>);
  // The rest moves slowly, or costs the kernel more to format (memory.stat, about 40 lines):
  // read at the slow rate (Rate), and at every extra sample.
  constexpr Rate slow = Rate::slow;
  s.add(fs, files::v1::kMemoryStat, {f("memory", files::v1::kMemoryStat)},
        {M::memory_anon_bytes, M::memory_file_bytes, M::memory_major_faults, M::memory_swap_bytes},
        v1_memory_stat, slow);
  s.add(fs, files::v1::kMemoryOomControl, {f("memory", files::v1::kMemoryOomControl)},
        {M::memory_oom_kills}, oom_kills, slow);
  s.add(fs,
        fmt::format("{}+{}", files::v1::kBlkioThrottleIoServiceBytesRecursive,
                    files::v1::kBlkioThrottleIoServicedRecursive),
        {f("blkio", files::v1::kBlkioThrottleIoServiceBytesRecursive),
         f("blkio", files::v1::kBlkioThrottleIoServicedRecursive)},
        {M::io_read_bytes, M::io_write_bytes, M::io_read_ops, M::io_write_ops}, v1_blkio, slow);
  // v1 has no per-cgroup pressure: the host's, labelled host-wide.
  s.add(fs, files::kProcPressureCpu, {files::kProcPressureCpu}, {M::pressure_cpu_some_us},
        pressure_cpu, slow, true);
  s.add(fs, files::kProcPressureMemory, {files::kProcPressureMemory},
        {M::pressure_memory_some_us, M::pressure_memory_full_us}, pressure_memory, slow, true);
  s.add(fs, files::kProcPressureIo, {files::kProcPressureIo},
        {M::pressure_io_some_us, M::pressure_io_full_us}, pressure_io, slow, true);
  s.add(fs, files::v1::kPidsCurrent, {f("pids", files::v1::kPidsCurrent)}, {M::tasks},
        single<M::tasks>, slow);
  return s;
}

void Sources::add_network(StatFile dev) {
  Source s;
  s.name = "net/dev";
  s.metrics = {Metric::net_rx_bytes, Metric::net_tx_bytes, Metric::net_rx_packets,
               Metric::net_tx_packets};
  s.parse = net_dev;
  s.rate = Rate::slow;
  s.files.push_back(std::move(dev));
  reserve_scratch(1);
  sources_.push_back(std::move(s));
  per_run_ = true;
}

void Sources::begin(Columns& out) {
  if (out.size() == 0) {
    out.available = available();
    out.complete = out.available;
    out.read_every.fill(1);
    for (const Source& s : sources_) {
      if (s.rate != Rate::slow) continue;
      for (Metric m : s.metrics) out.read_every[static_cast<size_t>(m)] = slow_every_;
    }
    slow_read_ = false;
  }
}

void Sources::tick(std::int64_t t_ns, Columns& out, bool scheduled) {
  begin(out);
  read_rest(out, -1, scheduled, t_ns);
  push(t_ns, out, scheduled);
}

Snapshot Sources::snapshot(const std::bitset<kMetricCount>& wanted) {
  Snapshot snap;
  snap.read = wanted & available();
  for (Source& s : sources_) {
    const bool gives = std::any_of(s.metrics.begin(), s.metrics.end(), [&](Metric m) {
      return wanted.test(static_cast<size_t>(m));
    });
    if (!gives) continue;
    if (s.failed) {
      for (Metric m : s.metrics) snap.read.reset(static_cast<size_t>(m));
      continue;
    }
    read_source(s, snap.values.data(), snap.read);
  }
  return snap;
}

void Sources::read_source(Source& s, std::uint64_t* values, std::bitset<kMetricCount>& complete) {
  if (s.failed) return;
  // Buffers made when the source was added (reserve_scratch): no allocation per tick.
  std::string_view* texts = views_.data();
  bool ok = true;
  int error = 0;
  size_t i = 0;
  for (; i < s.files.size() && ok; ++i) {
    auto text = s.files[i].read_into(scratch_.data() + i * kSourceBuffer, kSourceBuffer);
    ok = text.has_value();
    if (ok)
      texts[i] = *text;
    else
      error = errno;
  }
  Reading reading{values, {}};
  if (ok && !s.parse(texts, reading)) {
    ok = false;
    i = 0;
  }
  if (!ok) fail(s, i, error);  // reported by status(); the run goes on
  // A metric the file did not give this time (or ever) is incomplete, never a silent zero.
  for (Metric m : s.metrics) {
    if (!reading.present.test(static_cast<size_t>(m))) complete.reset(static_cast<size_t>(m));
  }
}

void Sources::read_rest(Columns& out, int skip, bool scheduled, std::int64_t t_ns) {
  // The first row, an extra sample, and a scheduled one slow_gap_ns_ after the last read.
  const bool slow_due = !scheduled || !slow_read_ || t_ns - last_slow_ns_ >= slow_gap_ns_;
  if (slow_due) {
    slow_read_ = true;
    last_slow_ns_ = t_ns;
  }
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (static_cast<int>(k) == skip) continue;
    if (sources_[k].rate == Rate::slow && !slow_due) continue;
    read_source(sources_[k], out);
  }
}

int Sources::cpu_source() const {
  for (size_t k = 0; k < sources_.size(); ++k) {
    const auto& m = sources_[k].metrics;
    if (!sources_[k].failed && std::find(m.begin(), m.end(), Metric::cpu_usage_ns) != m.end()) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

void Sources::push(std::int64_t t_ns, Columns& out, bool scheduled) {
  out.t_ns.push_back(t_ns);
  out.scheduled.push_back(scheduled ? 1 : 0);
  for (int m = 0; m < kMetricCount; ++m) out.values[m].push_back(last_[m]);
}

// The rare path: a source stopped working mid-run. Allocates (once per source).
void Sources::fail(Source& s, size_t file, int error) {
  s.failed = true;
  const std::string path = file > 0 && file <= s.files.size() ? s.files[file - 1].path() : s.name;
  s.error =
      error ? sys_message(error, "reading", path) : fmt::format("{} could not be parsed", s.name);
  const std::string message = fmt::format(
      "edgeprof: sampling stopped for {} ({}); its metrics are marked incomplete "
      "and the run goes on",
      s.name, s.error);
  if (logger_) {
    logger_(message);
  } else {
    fmt::print(stderr, "{}\n", message);
  }
}

std::vector<SourceStatus> Sources::status() const {
  std::vector<SourceStatus> out = missing_;
  for (const Source& s : sources_) {
    out.push_back({s.name, true, s.failed, s.host_wide, s.error,
                   s.rate == Rate::slow ? slow_every_ : 1u});
  }
  return out;
}

bool Sources::reusable() const {
  if (per_run_) return false;
  for (const Source& s : sources_) {
    if (s.failed) return false;
  }
  return true;
}

std::bitset<kMetricCount> Sources::available() const {
  std::bitset<kMetricCount> bits;
  for (const Source& s : sources_) {
    for (Metric m : s.metrics) bits.set(static_cast<size_t>(m));
  }
  return bits;
}

}  // namespace edgeprof::detail
