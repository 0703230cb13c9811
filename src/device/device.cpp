#include "edgeprof/device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <fmt/format.h>

#include "device/device_rules.hpp"
#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "nn/runtimes.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/text.hpp"

namespace edgeprof {

namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Longest suffixes first so "MiB" is not read as "M" + "iB".
constexpr Unit kUnits[] = {
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"kB", 1e3},     {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
    {"TB", 1e12},    {"Ki", 1024.0},     {"Mi", 1048576.0},     {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},             {"K", 1024.0},         {"M", 1048576.0},
    {"G", 1073741824.0},                 {"T", 1099511627776.0}, {"k", 1024.0},
    {"m", 1048576.0},                    {"g", 1073741824.0},    {"B", 1.0},
    {"b", 1.0},
};

[[noreturn]] void bad_size(std::string_view text, std::string_view field, std::string_view why) {
  throw DeviceError(fmt::format(
      "{}: cannot read '{}' as a size ({}). Write bytes as a number with an optional unit, "
      "for example 536870912, 512MiB, 1.5GiB or 500MB",
      field, detail::printable(text), why));
}

}  // namespace

namespace detail {

std::string text_problem(std::string_view text) {
  std::size_t position = 0;  // in characters, from 1
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const char32_t c = next_code_point(text, i);
    ++position;
    if (detail::not_utf8_at(text, at, c)) {
      return fmt::format("is not UTF-8 (the byte \\x{:02X} at character {})",
                         static_cast<unsigned char>(text[at]), position);
    }
    if (detail::is_control(c) && c != '\t' && c != '\n' && c != '\r') {
      return fmt::format(
          "holds U+{:04X}, a control character, at character {}; a device's text is printed "
          "to terminals, which would obey it, so control characters other than tabs and line "
          "breaks are refused",
          static_cast<std::uint32_t>(c), position);
    }
  }
  return {};
}

}  // namespace detail

std::uint64_t parse_size(std::string_view text, std::string_view field) {
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) bad_size(text, field, "it is empty");
  // The last n characters in lower case.
  const auto tail = [&s](std::size_t n) {
    std::string t(s.substr(s.size() - std::min(n, s.size())));
    for (char& c : t) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    return t;
  };
  // A decimal unit in a case of its own ("512mb", "2Gb") may mean either: docker reads it as
  // MiB, SI as MB (or megabits).
  const std::string two = tail(2);
  const std::string_view number = s.substr(0, s.size() - std::min<std::size_t>(2, s.size()));
  const bool plain = !number.empty() && number.find_first_not_of("0123456789. ") == number.npos;
  if (plain && (two == "kb" || two == "mb" || two == "gb" || two == "tb") &&
      std::none_of(std::begin(kUnits), std::end(kUnits), [&s](const Unit& unit) {
        return unit.suffix.size() == 2 && s.substr(s.size() - 2) == unit.suffix;
      })) {
    const char upper = static_cast<char>(two[0] - 'a' + 'A');
    const char decimal = two[0] == 'k' ? 'k' : upper;
    bad_size(text, field,
             fmt::format("'{}' may mean {}iB or {}B: write {}{}iB (binary) or {}{}B (decimal)",
                         detail::printable(s.substr(s.size() - 2)), upper, decimal,
                         detail::printable(number), upper, detail::printable(number), decimal));
  }
  double factor = 1.0;
  for (const Unit& unit : kUnits) {
    // The binary units written out mean one thing in any case: "512mib", "2GIB".
    const bool binary = unit.suffix.size() == 3;
    const std::size_t n = unit.suffix.size();
    if (s.size() > n && (binary ? tail(3) == fmt::format("{}ib", static_cast<char>(
                                                             unit.suffix[0] - 'A' + 'a'))
                                : s.substr(s.size() - n) == unit.suffix)) {
      factor = unit.factor;
      s.remove_suffix(n);
      while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      break;
    }
  }
  // Digits with at most one '.', nothing else: no signs, exponents, or stray words.
  bool dot = false;
  for (char c : s) {
    if (c == '.' && !dot) {
      dot = true;
    } else if (c < '0' || c > '9') {
      bad_size(text, field, "unknown number or unit");
    }
  }
  if (s.empty() || s == ".") bad_size(text, field, "no number");
  // strtod, not stod: a number past double's range is "too large" (stod throws out_of_range).
  const std::string digits(s);
  double value = std::strtod(digits.c_str(), nullptr) * factor;
  if (!(value < 18446744073709551615.0)) bad_size(text, field, "too large");
  double rounded = std::round(value);
  if (std::fabs(value - rounded) > 1e-6 * std::max(1.0, value)) {
    bad_size(text, field, "not a whole number of bytes");
  }
  return static_cast<std::uint64_t>(rounded);
}

std::string format_size(std::uint64_t bytes) {
  constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  if (std::fabs(value - std::round(value)) < 0.005) return fmt::format("{:.0f} {}", value, kNames[unit]);
  return fmt::format("{:.2f} {}", value, kNames[unit]);
}

std::string format_signed_size(double bytes) {
  const double m = std::fabs(bytes);
  if (!(m <= 0x1p64)) {
    throw Error(fmt::format("format_signed_size: {} is not a number of bytes whose magnitude is "
                            "at most 2^64",
                            bytes));
  }
  // 2^64 - 1 arrives as the double 2^64: the largest uint64 it stands for.
  const std::uint64_t whole = m >= 0x1p64 ? std::numeric_limits<std::uint64_t>::max()
                                          : static_cast<std::uint64_t>(std::nearbyint(m));
  return (bytes < 0 && whole > 0 ? "-" : "") + format_size(whole);
}

void Device::validate() const {
  using detail::Range;
  const std::string problem = detail::name_problem(name);
  if (!problem.empty()) throw DeviceError(fmt::format("device name: {}", problem));
  const std::string who = fmt::format("device '{}'", name);
  const auto fail = [&who](std::string_view what) {
    throw DeviceError(fmt::format("{}: {}", who, what));
  };
  for (const std::string& alias : aliases) {
    const std::string bad = detail::name_problem(alias);
    if (!bad.empty()) fail(fmt::format("alias {}", bad));
  }
  // The bounds a device file has, so that what is valid here reads back from device_to_json().
  const auto in = [](double x, Range r) { return x >= r.min && x <= r.max; };
  const auto check = [&](std::string_view field, double x, Range r, std::string_view what = {}) {
    if (!in(x, r)) {
      fail(fmt::format("{} = {} is invalid; {}it must be between {} and {}", field, x, what,
                       r.min, r.max));
    }
  };
  const auto check_text = [&](std::string_view field, std::string_view text) {
    const std::string bad = detail::text_problem(text);
    if (!bad.empty()) fail(fmt::format("{} {}", field, bad));
  };
  if (cores < 1 || cores > detail::kMaxDeviceCores) {
    fail(fmt::format("cores = {} is invalid; a device has 1 to {} cores", cores,
                     detail::kMaxDeviceCores));
  }
  check("core_speed", core_speed, detail::kSpeedRange,
        "it is the speed of one device core relative to one host core (for example 0.25), and ");
  for (const auto& [field, value] :
       {std::pair{"reference_speed", reference_speed},
        std::pair{"host_reference_speed", host_reference_speed}}) {
    if (value) {
      check(field, *value, detail::kSpeedRange, "it is a speed relative to the reference core; ");
    }
  }
  if (memory_bytes < kMinDeviceMemory) {
    // In bytes as well: 16777215 rounds to "16 MiB", and the floor read "16 MiB is below the
    // floor of 16 MiB".
    fail(fmt::format("memory = {} ({} bytes) is below the floor of {} ({} bytes); give the "
                     "device's RAM, for example \"512MiB\"",
                     memory_bytes == 0 ? "0" : format_size(memory_bytes), memory_bytes,
                     format_size(kMinDeviceMemory), kMinDeviceMemory));
  }
  if (pids_max && (*pids_max < 1 || *pids_max > detail::kMaxPids)) {
    fail(fmt::format("pids_max = {} is invalid; it must be between 1 and {}", *pids_max,
                     detail::kMaxPids));
  }
  if ((io_read_bps && *io_read_bps == 0) || (io_write_bps && *io_write_bps == 0)) {
    fail("an I/O bandwidth of 0 bytes/s is invalid");
  }
  check_text("description", description);
  check_text("source", source);
  check_text("cpu.model", cpu.model);
  check_text("cpu.soc", cpu.soc);
  check_text("cpu.architecture", cpu.architecture);
  check_text("cpu.layout", cpu.layout);
  check_text("storage", storage);
  if (cpu.clock_mhz != 0) {
    check("cpu.clock_mhz", cpu.clock_mhz, detail::kClockMhzRange, "0 = unknown; ");
  }
  for (const auto& [field, w] :
       {std::pair{"idle_w", power.idle_watts}, std::pair{"loaded_w", power.loaded_watts}}) {
    if (w) check(fmt::format("power.{}", field), *w, detail::kWattsRange);
  }
  if (power.idle_watts && power.loaded_watts && *power.loaded_watts < *power.idle_watts) {
    fail(fmt::format("loaded power {} W is below idle power {} W", *power.loaded_watts,
                     *power.idle_watts));
  }
  double last = -1.0;
  for (const SpeedStep& step : speed_schedule) {
    if (!in(step.after_s, detail::kAfterRange) || step.after_s <= last) {
      fail(fmt::format("speed_schedule step at after_s = {} is invalid; steps start at 0 s or "
                       "later (up to {} s), in increasing order",
                       step.after_s, detail::kAfterRange.max));
    }
    if (!in(step.factor, detail::kFactorRange)) {
      fail(fmt::format("speed_schedule factor = {} at {} s is invalid; it is a fraction of "
                       "core_speed in [{}, {}]",
                       step.factor, step.after_s, detail::kFactorRange.min,
                       detail::kFactorRange.max));
    }
    last = step.after_s;
  }
  if (scores) {
    check_text("scores.suite", scores->suite);
    check("scores.integer", scores->integer, detail::kScoreRange);
    check("scores.floating", scores->floating, detail::kScoreRange);
    check("scores.memory", scores->memory, detail::kScoreRange);
    if (scores->vector != 0) {
      check("scores.vector", scores->vector, detail::kScoreRange, "0 = none; ");
      check_text("scores.vector_unit", scores->vector_unit);
      check_text("scores.vector_kernel", scores->vector_kernel);
    }
    for (const auto& [kernel, spread] : scores->spread) {
      if (!detail::one_of(kernel, detail::kKernels)) {
        fail(fmt::format("scores.spread names '{}', which is no probe kernel (integer, "
                         "floating, memory, vector)",
                         detail::printable(kernel)));
      }
      check(fmt::format("scores.spread.{}", kernel), spread, detail::kSpreadRange);
    }
  }
  // Published times: by reference graph (nn) or by a runtime's model (runtimes). A graph's
  // name is not checked: tables of made-up graphs serve core_scaling() and its tests, though a
  // device file holds only reference graphs.
  const auto check_times = [&](const std::string& field, const std::map<std::string, double>& ms,
                               const std::vector<std::string>* known) {
    for (const auto& [model, value] : ms) {
      if (known && std::find(known->begin(), known->end(), model) == known->end()) {
        fail(fmt::format("{} names '{}', which this edgeprof has no rating for", field,
                         detail::printable(model)));
      }
      check(fmt::format("{}.{}", field, model), value, detail::kMsRange);
    }
  };
  if (!nn_precision.empty() && nn_precision != "fp32" && nn_precision != "fp16") {
    fail(fmt::format("nn_precision '{}' is not fp32 or fp16", detail::printable(nn_precision)));
  }
  check_times("nn.ms", nn_ms, nullptr);
  for (const auto& [threads, times] : nn_threads_ms) {
    if (threads < 2 || threads > detail::kMaxDeviceCores) {
      fail(fmt::format("nn.threads_ms has {} threads; it must be between 2 and {}", threads,
                       detail::kMaxDeviceCores));
    }
    check_times(fmt::format("nn.threads_ms.{}", threads), times, nullptr);
  }
  for (const auto& [runtime, times] : runtime_ms) {
    const std::string& id = runtime;  // a lambda may not capture a structured binding (clang 14)
    const auto known = std::find_if(nn_runtimes().begin(), nn_runtimes().end(),
                                    [&](const NnRuntime& r) { return r.id == id; });
    if (id == "ncnn" || known == nn_runtimes().end()) {
      fail(fmt::format("runtimes names '{}', which is no runtime edgeprof rates besides ncnn "
                       "(ncnn's times are nn_ms)",
                       detail::printable(id)));
    }
    const std::string field = "runtimes." + id;
    if (!is_nn_precision(times.precision)) {
      fail(fmt::format("{}.precision '{}' is not fp32, fp16 or int8", field,
                       detail::printable(times.precision)));
    }
    if (times.threads < 1 || times.threads > detail::kMaxDeviceCores) {
      fail(fmt::format("{}.threads = {} is invalid; it must be between 1 and {}", field,
                       times.threads, detail::kMaxDeviceCores));
    }
    if (times.ms.empty()) fail(fmt::format("{}.ms is empty", field));
    check_times(field + ".ms", times.ms, &known->models);
  }
  for (const auto& [figure, s] : sources) {
    if (!detail::one_of(figure, detail::kFigures)) {
      fail(fmt::format("sources names '{}', which is no figure of a device",
                       detail::printable(figure)));
    }
    if (!detail::one_of(s.status, detail::kStatuses)) {
      fail(fmt::format("sources.{}.status '{}' is not one of specified, measured, estimated",
                       figure, detail::printable(s.status)));
    }
    check_text(fmt::format("sources.{}.source", figure), s.source);
  }
}

bool Device::answers_to(std::string_view n) const {
  return name == n || std::find(aliases.begin(), aliases.end(), n) != aliases.end();
}

bool operator==(const Device& a, const Device& b) {
  return a.name == b.name && a.cores == b.cores && a.core_speed == b.core_speed &&
         a.memory_bytes == b.memory_bytes && a.swap_bytes == b.swap_bytes &&
         a.io_read_bps == b.io_read_bps && a.io_write_bps == b.io_write_bps &&
         a.pids_max == b.pids_max && a.description == b.description && a.source == b.source &&
         a.aliases == b.aliases && a.cpu == b.cpu && a.storage == b.storage &&
         a.power == b.power && a.scores == b.scores && a.reference_speed == b.reference_speed &&
         a.host_reference_speed == b.host_reference_speed && a.speed_schedule == b.speed_schedule &&
         a.sources == b.sources && a.nn_ms == b.nn_ms && a.nn_precision == b.nn_precision &&
         a.nn_threads_ms == b.nn_threads_ms && a.runtime_ms == b.runtime_ms &&
         a.speed_kind == b.speed_kind;
}

bool operator==(const RuntimeTimes& a, const RuntimeTimes& b) {
  return a.precision == b.precision && a.threads == b.threads && a.ms == b.ms;
}

const char* to_string(SpeedKind kind) {
  switch (kind) {
    case SpeedKind::nn: return "nn";
    case SpeedKind::integer: return "integer";
    default: return "automatic";
  }
}

SpeedKind speed_kind_from_string(std::string_view name) {
  for (SpeedKind k : {SpeedKind::automatic, SpeedKind::nn, SpeedKind::integer}) {
    if (name == to_string(k)) return k;
  }
  throw Error(fmt::format("'{}' is not a kind of speed; the kinds are automatic (nn where the "
                          "device has it), nn (CNN inference) and integer (7-Zip's rating)",
                          name));
}

namespace {

// Ratings measured on first use that could not be cached (no writable cache directory), by
// where the cache would have been: this process's later plans take one rather than measure it
// again, a minute each. (The lock is held only to read or write the map.)
struct Uncached {
  std::mutex mutex;
  std::map<std::string, NnRating> by_dir;
};
Uncached& uncached() {
  static Uncached* u = new Uncached;  // never destroyed: plans may run during exit
  return *u;
}

// Whether a rating can be cached in `dir`: it exists (or can be made) and is writable.
bool cache_dir_usable(const std::string& dir) {
  if (dir.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return !ec && ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

Device with_measured_nn(const Device& device, const NnOptions& options) {
  if (device.nn || device.nn_ms.empty()) return device;
  // Loaded before the rating was cached (by another run, say): the cache gives it now.
  std::optional<NnRating> cached = cached_nn_rating();
  const std::string cache_dir = detail::host_cache_dir();
  if (!cached) {
    const std::lock_guard<std::mutex> lock(uncached().mutex);
    if (const auto kept = uncached().by_dir.find(cache_dir); kept != uncached().by_dir.end()) {
      cached = kept->second;
    }
  }
  NnRating rating;
  if (cached) {
    rating = std::move(*cached);
  } else {
    const std::size_t graphs =
        options.graphs.empty() ? reference_graphs().size() : options.graphs.size();
    if (options.progress) {
      options.progress(fmt::format(
          "{} is emulated at its CNN inference (nn) speed, and this host's nn rating is not "
          "measured yet: measuring it now, once ({} graphs with ncnn, one thread, seconds on "
          "a desktop CPU, up to a minute or two on a slow one; cached for later runs; `edgeprof calibrate-host --nn` does the same)",
          device.name, graphs));
    }
    try {
      rating = measure_nn_rating(options);
    } catch (const Error& e) {
      throw Error(fmt::format(
          "{} is emulated at its CNN inference (nn) speed, which needs this host's nn rating, "
          "and measuring it failed: {}. Mend that (install ncnn: `pip install ncnn`) and run "
          "again, or "
          "emulate the device at its integer (7-Zip) speed (--speed-kind integer; "
          "speed_kind=\"integer\" in Python; SpeedKind::integer in C++)",
          device.name, e.what()));
    }
    // Kept only where the cache directory was the reason (not one measured on a shared CPU,
    // which a later plan measures again, perhaps idle).
    if (rating.cache_file.empty() && options.graphs.empty() && options.threads <= 1 &&
        options.cache && !cache_dir_usable(cache_dir)) {
      {
        const std::lock_guard<std::mutex> lock(uncached().mutex);
        uncached().by_dir[cache_dir] = rating;
      }
      if (options.progress) {
        options.progress(fmt::format("this host's nn rating was not cached: {}; this process "
                                     "keeps it for its later runs",
                                     rating.note));
      }
    }
  }
  Device d = device;
  try {
    d.nn = nn_speed(d.nn_ms, rating.host_ms, d.nn_precision);
    d.nn_missing.clear();
  } catch (const Error& e) {
    d.nn_missing = e.what();
  }
  return d;
}

Device for_speed_kind(const Device& device, SpeedKind kind, std::vector<std::string>* notes) {
  auto note = [notes](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  if (device.speed_kind == "nn" && kind == SpeedKind::integer) {
    throw DeviceError(fmt::format(
        "{} is already set to its nn speed; load the device again (find_device) to emulate "
        "it at its integer speed",
        device.name));
  }
  const bool want_nn = kind == SpeedKind::nn || (kind == SpeedKind::automatic && device.nn);
  if (!want_nn) {
    if (kind == SpeedKind::automatic && !device.nn_ms.empty()) {
      note(fmt::format(
          "speed: {} has published CNN inference times, but this host's nn rating is not "
          "measured ({}), so it is emulated at its integer (7-Zip) speed, which made CNN "
          "inference 3-5x too fast on Cortex-A53/A72 boards (docs/fidelity.md); run `edgeprof "
          "calibrate-host --nn` (needs `pip install ncnn`) to fix it",
          device.name, device.nn_missing));
    } else if (kind == SpeedKind::automatic && device.reference_speed) {
      note(fmt::format("speed: integer (7-Zip's rating); {} has no nn speed ({}), so CNN "
                       "inference may run faster here than on the device (docs/fidelity.md)",
                       device.name,
                       device.nn_missing.empty() ? "no published CNN inference times"
                                                 : device.nn_missing));
    } else if (kind == SpeedKind::integer && device.nn) {
      note(fmt::format("speed: integer (7-Zip's rating), as asked; the nn speed would be "
                       "{:.4g} of a host core",
                       device.nn->core_speed));
    }
    return device;
  }
  if (!device.nn) {
    const std::string fix =
        device.nn_ms.empty()
            ? "give published CNN inference times in a device file (`nn`, docs/devices.md)"
            : "run `edgeprof calibrate-host --nn` once (needs `pip install ncnn`)";
    throw DeviceError(fmt::format(
        "{} has no nn speed: {}; {}, or emulate it at its integer speed (--speed-kind integer)",
        device.name,
        device.nn_missing.empty() ? "no published CNN inference times" : device.nn_missing, fix));
  }
  Device d = device;
  d.core_speed = device.nn->core_speed;
  d.speed_kind = "nn";
  if (device.speed_kind != "nn" && device.nn->basis == "vector") {
    d.sources["core_speed"] = FigureSource{
        "estimated", fmt::format("{}: the device's vector-kernel score / this host's",
                                 describe(*device.nn))};
  } else if (device.speed_kind != "nn") {
    d.sources["core_speed"] = FigureSource{
        "estimated", fmt::format("{}: host time / published device time per graph, geometric "
                                 "mean; the device's times are {}",
                                 describe(*device.nn),
                                 device.sources.count("nn") ? device.sources.at("nn").source
                                                            : std::string("given")),
    };
  }
  note(fmt::format("speed: {}{}", describe(*device.nn),
                   device.nn->precision == "fp32"
                       ? ""
                       : fmt::format("; the device's times are {} inference, a workload in fp32 "
                                     "runs slower there than emulated",
                                     device.nn->precision)));
  return d;
}

std::string describe_core_speed(const Device& d) {
  if (d.speed_kind == "nn" && d.nn) {
    const NnSpeed& nn = *d.nn;
    if (nn.basis == "vector") {
      return fmt::format("{:.4g} of a host core (nn speed: edgeprof-probe's vector kernel, {}; {})",
                         d.core_speed, nn.precision, nn.vector_units);
    }
    std::string how =
        nn.basis == "ncnn"
            ? fmt::format("nn speed: {} ncnn graph{}, {}", nn.ratios.size(),
                          nn.ratios.size() == 1 ? "" : "s", nn.precision)
            : fmt::format("{} speed: {}{}{}", detail::runtime_name(nn.basis),
                          nn.ratios.empty()
                              ? std::string("as the report gives it")
                              : fmt::format("{} model{}", nn.ratios.size(),
                                            nn.ratios.size() == 1 ? "" : "s"),
                          nn.precision.empty() ? "" : ", " + nn.precision,
                          nn.threads > 1 ? fmt::format(", from {}-thread times x {:.3g}",
                                                       nn.threads, nn.one_core_factor)
                                         : std::string());
    if (nn.ratios.size() >= 2) {
      how += fmt::format("; leave-one-{}-out median error {:.0f}%, worst {:.0f}%",
                         nn.basis == "ncnn" ? "graph" : "model", 100 * nn.loo_median_error,
                         100 * nn.loo_worst_error);
    }
    return fmt::format("{:.4g} of a host core ({})", d.core_speed, how);
  }
  if (d.reference_uncorrected()) {
    return fmt::format("{:.4g} of the reference core, uncorrected for this host", d.core_speed);
  }
  if (d.reference_speed && d.host_reference_speed) {
    return fmt::format("{:.4g} of a host core ({:.4g} of the reference core / this host's {:.3f})",
                       d.core_speed, *d.reference_speed, *d.host_reference_speed);
  }
  return fmt::format("{:.4g} of a host core", d.core_speed);
}

NnSpeed runtime_speed(const Device& device, std::string_view runtime, const NnRating& host,
                      double memory_mb_per_ms) {
  const NnRuntime& rt = nn_runtime(runtime);  // Error for an unknown one
  if (!std::isfinite(memory_mb_per_ms) || memory_mb_per_ms < 0) {
    throw Error(fmt::format("a workload's activations per ms of host time are {} MB/ms: give a "
                            "positive number (0 for one speed over the models)",
                            memory_mb_per_ms));
  }
  if (rt.id == "ncnn") {
    throw Error("runtime_speed() is for runtimes other than ncnn: a device's ncnn speed is its "
                "nn speed (Device::nn, for_speed_kind)");
  }
  if (host.runtime_id != rt.id) {
    throw Error(fmt::format("the host rating given was measured with '{}', not with '{}'",
                            host.runtime_id, rt.id));
  }
  const auto table = device.runtime_ms.find(rt.id);
  if (table == device.runtime_ms.end() || table->second.ms.empty()) {
    throw DeviceError(fmt::format("{} has no published {} times (runtimes.{} in a device file, "
                                  "docs/devices.md)",
                                  device.name, rt.name, rt.id));
  }
  const RuntimeTimes& t = table->second;
  if (t.precision != host.precision) {
    throw DeviceError(fmt::format(
        "{}'s published {} times are {}, and this host's {} rating is {}: a speed compares one "
        "precision with the same (int8 and fp32 times of one model differ by 2-4x); give {} "
        "times in a device file",
        device.name, rt.name, t.precision, rt.name, host.precision, host.precision));
  }
  double factor = 1;
  if (t.threads > 1) {
    // The board's ncnn table of the most threads up to the runtime's (a device narrowed to
    // fewer cores by for_threads keeps the board's tables), else its widest, carried to them.
    Device wide = device;
    wide.cores = t.threads;
    std::optional<CoreScaling> scaling = core_scaling(wide);
    if (!scaling) {
      for (const auto& [n, times] : device.nn_threads_ms) wide.cores = std::max(wide.cores, n);
      scaling = core_scaling(wide);
    }
    if (!scaling) {
      throw DeviceError(fmt::format(
          "{}'s {} times ran on {} threads, and it has no published ncnn times with one and "
          "with several threads (nn.ms, nn.threads_ms) to make them one core's; give one-thread "
          "{} times (runtimes.{}.threads 1) in a device file",
          device.name, rt.name, t.threads, rt.name, rt.id));
    }
    factor = scaling->speedup_at(t.threads);
  }
  std::map<std::string, double> one_core;
  for (const auto& [model, ms] : t.ms) one_core[model] = ms * factor;
  NnSpeed s;
  try {
    s = nn_speed(one_core, host.host_ms, t.precision);
  } catch (const Error& e) {
    throw DeviceError(fmt::format("{} at its {} speed: {}", device.name, rt.name, e.what()));
  }
  s.basis = rt.id;
  s.threads = t.threads;
  s.one_core_factor = factor;
  if (memory_mb_per_ms > 0) {
    const auto fix = fmt::format("measure this host's {} rating again with this edgeprof "
                                 "(`edgeprof calibrate-host --nn --runtime {} --remeasure "
                                 "--python PYTHON`)",
                                 rt.name, rt.id);
    if (host.activation_mb.empty()) {
      throw DeviceError(fmt::format("{} with a memory term needs the activations of this host's "
                                    "{} models, and its rating has none: {}",
                                    device.name, rt.name, fix));
    }
    NnMemoryFit f;
    try {
      f = nn_memory_fit(one_core, host.host_ms, host.activation_mb);
    } catch (const Error& e) {
      throw DeviceError(fmt::format("{} with a memory term: {}", device.name, e.what()));
    }
    s.core_speed = 1 / (f.per_host_ms + f.ms_per_mb * memory_mb_per_ms);
    s.memory_mb_per_ms = memory_mb_per_ms;
    s.per_host_ms = f.per_host_ms;
    s.ms_per_mb = f.ms_per_mb;
    s.loo_median_error = f.loo_median_error;
    s.loo_worst_error = f.loo_worst_error;
    s.loo_log_sd = f.loo_log_sd;
    // Its models are the fit's (those with activations): time_interval() counts them.
    for (auto it = s.ratios.begin(); it != s.ratios.end();) {
      it = f.held_out_ms.count(it->first) ? std::next(it) : s.ratios.erase(it);
    }
  }
  return s;
}

namespace {

// Throws DeviceError where `device` is set to another runtime's speed than ncnn's or `rt`'s.
void check_not_at_other_runtime(const Device& device, const NnRuntime& rt) {
  if (device.speed_kind == "nn" && device.nn && device.nn->basis != "ncnn" &&
      device.nn->basis != rt.id) {
    throw DeviceError(fmt::format("{} is already set to its {} speed; load the device again "
                                  "(find_device) to emulate it at its {} speed",
                                  device.name, detail::runtime_name(device.nn->basis),
                                  rt.name));
  }
}

// Throws DeviceError where `device` cannot be set to `rt`'s speed (not ncnn): set to another
// runtime's speed or to its ncnn speed already, or without published times with it.
void check_runtime_settable(const Device& device, const NnRuntime& rt) {
  check_not_at_other_runtime(device, rt);
  if (device.speed_kind == "nn" && !(device.nn && device.nn->basis == rt.id)) {
    throw DeviceError(fmt::format("{} is already set to its ncnn speed; load the device again "
                                  "(find_device) to emulate it at its {} speed",
                                  device.name, rt.name));
  }
  if (!device.runtime_ms.count(rt.id)) {
    std::string have;
    for (const Device& d : builtin_devices()) {
      if (d.runtime_ms.count(rt.id)) have += (have.empty() ? "" : ", ") + d.name;
    }
    throw DeviceError(fmt::format(
        "{} has no published {} times, so it cannot be emulated at its {} speed; the catalog "
        "devices that have them: {}; or give them in a device file (runtimes.{}, "
        "docs/devices.md)",
        device.name, rt.name, rt.name, have.empty() ? "none" : have, rt.id));
  }
}

}  // namespace

Device for_runtime(const Device& device, const NnRating& host, std::vector<std::string>* notes,
                   double memory_mb_per_ms) {
  const NnRuntime& rt = nn_runtime(host.runtime_id);  // Error for an unknown one
  if (rt.id == "ncnn") {
    throw Error("for_runtime(device, rating) is for runtimes other than ncnn: a device's ncnn "
                "speed is its nn speed (for_speed_kind(device, nn))");
  }
  if (device.speed_kind == "nn" && device.nn && device.nn->basis == rt.id &&
      device.nn->memory_mb_per_ms == memory_mb_per_ms) {
    return device;
  }
  check_runtime_settable(device, rt);
  const NnSpeed s = runtime_speed(device, rt.id, host, memory_mb_per_ms);
  Device d = device;
  d.nn = s;
  d.nn_missing.clear();
  d.core_speed = s.core_speed;
  d.speed_kind = "nn";
  d.sources["core_speed"] = FigureSource{
      "estimated",
      fmt::format("{}: {}; the device's times are {}", describe(s),
                  s.memory_mb_per_ms > 0
                      ? "a x host time + b x activation MB fitted to the published times"
                      : "host time / published device time per model, geometric mean",
                  device.sources.count("runtimes") ? device.sources.at("runtimes").source
                                                   : std::string("given"))};
  if (notes) notes->push_back(fmt::format("speed: {}", describe(s)));
  return d;
}

Device for_runtime(const Device& device, std::string_view runtime,
                   std::vector<std::string>* notes, double memory_mb_per_ms) {
  const NnRuntime& rt = nn_runtime(runtime);  // Error for an unknown one
  if (device.speed_kind == "nn" && device.nn && device.nn->basis == rt.id &&
      device.nn->memory_mb_per_ms == memory_mb_per_ms) {
    return device;
  }
  if (rt.id == "ncnn") {
    check_not_at_other_runtime(device, rt);
    if (memory_mb_per_ms != 0) {
      throw Error("a memory term is for PyTorch's and ONNX Runtime's speeds, whose ratings count "
                  "activations; ncnn's speed is one over its graphs (give 0)");
    }
    return for_speed_kind(device, SpeedKind::nn, notes);
  }
  check_runtime_settable(device, rt);
  std::string why;
  const std::optional<NnRating> rating = cached_nn_rating(&why, rt.id);
  if (!rating) {
    throw DeviceError(fmt::format(
        "{} at its {} speed needs this host's {} rating, which is not usable ({}): run "
        "`edgeprof calibrate-host --nn --runtime {} --python PYTHON` with the interpreter that "
        "has {} (`{}`), about a minute",
        device.name, rt.name, rt.name, why, rt.id, rt.name, rt.install));
  }
  return for_runtime(device, *rating, notes, memory_mb_per_ms);
}

Device make_device(std::string name, int cores, double core_speed, std::string_view memory,
                   std::string_view swap) {
  Device d;
  d.name = std::move(name);
  d.cores = cores;
  d.core_speed = core_speed;
  d.memory_bytes = parse_size(memory, "memory");
  d.swap_bytes = parse_size(swap, "swap");
  d.validate();
  return d;
}

double CoreScaling::efficiency(int busy) const {
  return busy <= 1 ? 1.0 : 1.0 / (1.0 + contention * static_cast<double>(busy - 1));
}

bool operator==(const CoreScaling& a, const CoreScaling& b) {
  return a.threads == b.threads && a.speedup == b.speedup && a.graphs == b.graphs &&
         a.contention == b.contention && a.loo_median_error == b.loo_median_error &&
         a.loo_worst_error == b.loo_worst_error && a.loo_log_sd == b.loo_log_sd;
}

double CoreScaling::speedup_at(int busy) const {
  if (busy <= 1) return 1.0;
  if (busy == threads) return speedup;
  return static_cast<double>(busy) * efficiency(busy);
}

std::optional<CoreScaling> core_scaling(const Device& device, std::string_view without_graph) {
  const std::map<std::string, double>* table = nullptr;
  int threads = 0;
  for (const auto& [n, times] : device.nn_threads_ms) {
    if (n > 1 && n <= device.cores && n > threads) {
      threads = n;
      table = &times;
    }
  }
  if (!table) return std::nullopt;
  std::vector<double> speedups;
  for (const auto& [graph, ms] : *table) {
    if (graph == without_graph || !(ms > 0)) continue;
    const auto one = device.nn_ms.find(graph);
    if (one != device.nn_ms.end() && one->second > 0) speedups.push_back(one->second / ms);
  }
  if (speedups.size() < 3) return std::nullopt;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  CoreScaling s;
  s.threads = threads;
  s.graphs = speedups.size();
  s.speedup = median(speedups);
  s.contention = std::max(0.0, (threads / s.speedup - 1.0) / (threads - 1));
  std::vector<double> errors;
  double log_squares = 0;
  for (std::size_t i = 0; i < speedups.size(); ++i) {
    std::vector<double> others = speedups;
    others.erase(others.begin() + static_cast<long>(i));
    errors.push_back(std::abs(speedups[i] / median(others) - 1));
    log_squares += std::pow(std::log(speedups[i] / median(others)), 2);
  }
  s.loo_log_sd = std::sqrt(log_squares / static_cast<double>(speedups.size()));
  s.loo_median_error = median(errors);
  s.loo_worst_error = *std::max_element(errors.begin(), errors.end());
  return s;
}

Device for_threads(const Device& device, int threads) {
  if (threads < 1) {
    throw DeviceError(fmt::format("threads = {} is invalid: a workload has at least 1 busy thread",
                                  threads));
  }
  Device d = device;
  if (threads >= device.cores) return d;
  d.name = fmt::format("{}-{}-thread{}", device.name, threads, threads == 1 ? "" : "s");
  d.aliases.clear();
  d.cores = threads;
  d.sources["cores"] = {
      "specified", fmt::format("{} of the device's {} cores: emulated for a workload of {} busy "
                               "thread{} (for_threads)",
                               threads, device.cores, threads, threads == 1 ? "" : "s")};
  // Power linear in the share of the device's capacity in use: the same watts per busy core
  // when the capacity is `threads` cores instead of all of them.
  if (device.power.idle_watts && device.power.loaded_watts) {
    d.power.loaded_watts =
        *device.power.idle_watts + (*device.power.loaded_watts - *device.power.idle_watts) *
                                       threads / device.cores;
  }
  d.validate();
  return d;
}

const std::vector<Device>& builtin_devices() { return catalog_devices(); }

const Device& builtin_device(std::string_view name) {
  std::string known;
  for (const Device& d : builtin_devices()) {
    if (d.answers_to(name)) return d;
    known += known.empty() ? d.name : ", " + d.name;
  }
  throw DeviceError(fmt::format("no built-in device named '{}'; the built-in devices are: {}",
                                name, known));
}

}  // namespace edgeprof
