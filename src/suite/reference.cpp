// This host's speed relative to the catalog's reference core: 7-Zip's single-thread benchmark,
// run pinned to one CPU, parsed, and cached beside the host calibration.

#include "edgeprof/reference.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "edgeprof/error.hpp"
#include "edgeprof/version.hpp"
#include "sys/fs.hpp"
#include "suite/microbench_detail.hpp"
#include "suite/reference_detail.hpp"
#include "sys/text.hpp"
#include "sys/spawn.hpp"
#include "sys/child.hpp"

namespace edgeprof {

namespace {

using nlohmann::json;

constexpr int kCacheSchema = 1;

// The numbers of a line, in order ("Tot:   100   3948   3946" -> {100, 3948, 3946}).
std::vector<double> numbers_of(std::string_view line) {
  std::vector<double> out;
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] >= '0' && line[i] <= '9') {
      double v = 0;
      const auto r = std::from_chars(line.data() + i, line.data() + line.size(), v);
      out.push_back(v);
      i = static_cast<std::size_t>(r.ptr - line.data());
    } else {
      ++i;
    }
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

struct CacheFile {
  std::string dir, path;
};

CacheFile cache_file() {
  const std::string dir = detail::host_cache_dir();
  return {dir, dir.empty() ? std::string() : detail::reference_cache_file(dir)};
}

json rating_json(const ReferenceRating& r) {
  return {{"edgeprof_host_reference", kCacheSchema},
          {"host_mips", r.host_mips},
          {"reference_core", kReferenceCore},
          {"reference_mips", kReferenceCoreMips},
          {"command", r.command},
          {"version", r.version},
          {"cpu", r.cpu},
          {"cpu_model", r.cpu_model},
          {"kernel", r.kernel},
          {"hostname", r.hostname},
          {"measured_at", r.measured_at},
          {"seconds", r.seconds},
          {"measured_by", fmt::format("edgeprof {}", version())}};
}

}  // namespace

namespace detail {

std::string reference_cache_file(const std::string& dir) {
  return join(dir, "host-reference.json");
}

}  // namespace detail

SevenZipBenchmark parse_7zip_benchmark(std::string_view text, std::string_view origin) {
  SevenZipBenchmark b;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = trim(rest.substr(0, nl));
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (b.version.empty() && (starts_with(line, "7-Zip") || starts_with(line, "p7zip"))) {
      b.version = std::string(line);
    } else if (line.find("Benchmark threads:") != std::string_view::npos) {
      const auto v = numbers_of(line.substr(line.find("Benchmark threads:")));
      // A count, or nothing: 7-Zip never starts more than a few thousand threads.
      if (!v.empty() && v.back() >= 1 && v.back() <= 1e6) b.threads = static_cast<int>(v.back());
    } else if (starts_with(line, "Avr:")) {
      // "Avr:  3594 100 3759 3758 | 47451 100 4137 4135": speed, usage, R/U, rating per half.
      const auto bar = line.find('|');
      const auto left = numbers_of(line.substr(0, bar));
      if (!left.empty()) b.compress_mips = left.back();
      if (bar != std::string_view::npos) {
        const auto right = numbers_of(line.substr(bar + 1));
        if (!right.empty()) b.decompress_mips = right.back();
      }
    } else if (starts_with(line, "Tot:")) {
      const auto v = numbers_of(line);
      if (!v.empty()) b.total_mips = v.back();
    }
  }
  if (!(b.total_mips > 0) || !std::isfinite(b.total_mips)) {
    throw Error(fmt::format(
        "{}: no \"Tot:\" line with a rating in 7-Zip's benchmark output: the benchmark failed or "
        "was interrupted; its output ended with:\n{}",
        origin, detail::tail(text, 5)));
  }
  return b;
}

std::optional<ReferenceRating> cached_reference_rating(std::string* why) {
  auto say = [why](std::string text) {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  const CacheFile cache = cache_file();
  const auto text = detail::read_host_cache(cache.path, "7-Zip rating", why);
  if (!text) return std::nullopt;
  ReferenceRating r;
  try {
    const json j = json::parse(*text);
    if (j.at("edgeprof_host_reference").get<int>() != kCacheSchema) {
      return say(fmt::format("{} has another schema version: measure it again", cache.path));
    }
    r.host_mips = j.at("host_mips").get<double>();
    r.command = j.at("command").get<std::string>();
    r.version = j.at("version").get<std::string>();
    r.cpu = j.at("cpu").get<int>();
    r.cpu_model = j.at("cpu_model").get<std::string>();
    r.kernel = j.at("kernel").get<std::string>();
    r.hostname = j.at("hostname").get<std::string>();
    r.measured_at = j.at("measured_at").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    if (!(r.host_mips > 0) || !std::isfinite(r.host_mips)) {
      throw std::runtime_error("host_mips is not a positive number");
    }
  } catch (const std::exception& e) {
    return say(fmt::format("{} is corrupt ({}): measure it again", cache.path, e.what()));
  }
  const std::string change =
      detail::identity_change({r.cpu_model, r.kernel, r.hostname}, detail::host_identity());
  if (!change.empty()) {
    return say(fmt::format("{} was measured on {}: measure it again", cache.path, change));
  }
  r.cache_file = cache.path;
  return r;
}

ReferenceRating measure_reference_rating(const ReferenceOptions& options) {
  const std::string& program = options.program;
  std::optional<std::string> found;
  if (program.empty()) {
    for (const char* name : {"7zz", "7z", "7za"}) {
      if ((found = detail::find_on_path(name))) break;
    }
    if (!found) {
      throw Error(
          "no 7-Zip program on PATH (looked for 7zz, 7z and 7za): install one (Debian and "
          "Ubuntu: apt-get install 7zip; Fedora: dnf install 7zip) and measure again");
    }
  } else if (!(found = detail::find_on_path(program))) {
    throw Error(fmt::format("the 7-Zip program '{}' is not an executable file here; give its "
                            "path or install 7-Zip",
                            program));
  }
  std::vector<std::string> argv{*found};
  argv.insert(argv.end(), options.arguments.begin(), options.arguments.end());
  std::string command = *found;
  for (const std::string& a : options.arguments) command += " " + a;

  ReferenceRating r;
  detail::ChildOutput out;
  {
    detail::PinnedThread pin(options.cpu);  // posix_spawn's child inherits this affinity
    r.cpu = pin.cpu();
    if (options.progress) {
      options.progress(fmt::format("running `{}` on CPU {} (40-60 s)", command, r.cpu));
    }
    out = detail::run_child(argv, options.timeout, options.progress, "7-Zip benchmark");
  }
  if (!WIFEXITED(out.status) || WEXITSTATUS(out.status) != 0) {
    throw Error(fmt::format(
        "`{}` failed ({} {}); its output ended with:\n{}", command,
        WIFEXITED(out.status) ? "exit status" : "signal",
        WIFEXITED(out.status) ? WEXITSTATUS(out.status) : WTERMSIG(out.status), detail::tail(out.text, 5)));
  }
  const SevenZipBenchmark b = parse_7zip_benchmark(out.text, command);
  r.host_mips = b.total_mips;
  r.command = command;
  r.version = b.version;
  const detail::HostIdentity id = detail::host_identity();
  r.cpu_model = id.cpu_model;
  r.kernel = id.kernel;
  r.hostname = id.hostname;
  r.measured_at = detail::utc_now();
  r.seconds = out.seconds;

  const ReferenceOptions defaults;
  const CacheFile cache = cache_file();
  if (options.arguments != defaults.arguments) {
    r.note = "measured with other arguments than `b -mmt1`, which rate differently: not cached";
  } else if (cache.path.empty()) {
    r.note = fmt::format("{}: not cached, so catalog devices are not corrected; set "
                         "EDGEPROF_CACHE_DIR",
                         detail::kNoCacheDir);
  } else {
    const std::string failed =
        detail::replace_file(cache.dir, cache.path, rating_json(r).dump(2) + "\n");
    if (failed.empty()) {
      r.cache_file = cache.path;
    } else {
      r.note = failed + ", so catalog devices are not corrected";
    }
  }
  if (options.progress) options.progress(describe(r));
  return r;
}

void apply_reference_speed(Device& device, double reference_speed,
                           std::optional<double> host_reference_speed) {
  if (!std::isfinite(reference_speed) || reference_speed <= 0) {
    throw DeviceError(fmt::format(
        "reference_speed {} is not a positive number: give the speed of one device core "
        "relative to the reference core ({}), for example 0.373 for a Raspberry Pi 4",
        reference_speed, kReferenceCore));
  }
  if (host_reference_speed &&
      (!std::isfinite(*host_reference_speed) || *host_reference_speed < 0)) {
    throw DeviceError(fmt::format(
        "host_reference_speed {} is not a speed: give this host's speed relative to the "
        "reference core (a positive number, or 0 for not known), or leave it out to use the "
        "cached one (`edgeprof calibrate-host --reference`)",
        *host_reference_speed));
  }
  std::optional<ReferenceRating> rating;
  std::string why;
  double host = 0;
  if (host_reference_speed) {
    host = *host_reference_speed;
  } else if ((rating = cached_reference_rating(&why))) {
    host = rating->speed();
  }
  device.reference_speed = reference_speed;
  FigureSource source;
  source.status = "estimated";
  if (host > 0) {
    device.core_speed = reference_speed / host;
    device.host_reference_speed = host;
    source.source = fmt::format(
        "{}{:g} / {:.3f}, this host's speed relative to the reference core ({})",
        detail::kReferenceSpeedSource, reference_speed, host,
        rating ? describe(*rating) : std::string("given by the caller"));
  } else {
    device.core_speed = reference_speed;
    device.host_reference_speed.reset();
    source.source = fmt::format(
        "{}{:g} taken as this host's, uncorrected: {}. Run `edgeprof calibrate-host "
        "--reference` (needs 7-Zip) to correct it",
        detail::kReferenceSpeedSource, reference_speed,
        // `why` may name the cache file: its bytes that are not UTF-8 as \xNN, as device text
        // must be UTF-8 (a cache directory whose path is not UTF-8 made every catalog device
        // refused).
        why.empty() ? "this host's speed relative to the reference core is not known"
                    : detail::printable(why));
  }
  device.sources.try_emplace("core_speed", std::move(source));
}

std::string describe(const ReferenceRating& rating) {
  return fmt::format(
      "{:.0f} MIPS by 7-Zip: {:.3f} of the reference core ({}, {:.0f} MIPS), measured {}",
      rating.host_mips, rating.speed(), kReferenceCore, kReferenceCoreMips, rating.measured_at);
}

}  // namespace edgeprof
