// Device files (JSON or TOML, one schema), the built-in catalog (the same schema, compiled in)
// and finding a device by name or path.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

// toml++ is used header-only: the library gains no run-time dependency.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

#include "catalog_data.hpp"
#include "device/device_json.hpp"
#include "device/device_rules.hpp"
#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/microbench.hpp"
#include "edgeprof/reference.hpp"
#include "sys/fs.hpp"
#include "sys/json_unique.hpp"
#include "suite/microbench_detail.hpp"
#include "suite/reference_detail.hpp"
#include "sys/parse.hpp"
#include "sys/text.hpp"

namespace edgeprof {

using json = nlohmann::json;

namespace {

using detail::printable;
using detail::Range;
using detail::shown;

// Reads one JSON object of the schema, naming the origin (file or catalog entry) and the
// field's dotted path in every error, and refusing fields it does not know (typos would
// otherwise be silently ignored).
class Reader {
 public:
  Reader(const json& j, std::string origin, std::string path)
      : j_(j), origin_(std::move(origin)), path_(std::move(path)) {
    if (!j_.is_object()) fail("", fmt::format("expected a table/object, got {}", kind(j_)));
  }

  // The message is printable: a field name or value from the file is echoed without the
  // control characters it may hold.
  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    const std::string where = field.empty() ? path_ : dotted(field);
    throw DeviceError(printable(fmt::format("{}: {}{}{}", origin_, where.empty() ? "" : "field '",
                                            where.empty() ? "" : where + "': ", what)));
  }

  bool has(const char* key) {
    seen_.insert(key);
    return j_.contains(key) && !j_.at(key).is_null();
  }
  const json& at(const char* key) {
    seen_.insert(key);
    return j_.at(key);
  }

  std::string string(const char* key, bool required = false) {
    if (!has(key)) {
      if (required) fail(key, "is required");
      return {};
    }
    const json& v = at(key);
    if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", kind(v)));
    const std::string problem = detail::text_problem(v.get_ref<const std::string&>());
    if (!problem.empty()) fail(key, problem);
    return v.get<std::string>();
  }

  // A device's name or alias (detail::name_problem).
  std::string name(const char* key) {
    if (!has(key)) fail(key, "is required");
    const json& v = at(key);
    if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", kind(v)));
    const std::string problem = detail::name_problem(v.get_ref<const std::string&>());
    if (!problem.empty()) fail(key, problem);
    return v.get<std::string>();
  }

  std::optional<double> number(const char* key, Range range, bool required = false) {
    const auto [min, max] = range;
    if (!has(key)) {
      if (required) fail(key, "is required");
      return std::nullopt;
    }
    const json& v = at(key);
    if (!v.is_number()) fail(key, fmt::format("expected a number, got {}", kind(v)));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < min || x > max) {
      fail(key, fmt::format("{} is out of range; it must be between {} and {}", shown(v), min,
                            max));
    }
    return x;
  }

  std::optional<std::int64_t> integer(const char* key, std::int64_t min, std::int64_t max,
                                      bool required = false) {
    if (!has(key)) {
      if (required) fail(key, "is required");
      return std::nullopt;
    }
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, fmt::format("expected a whole number, got {}", shown(v)));
    // Past int64's range (JSON's unsigned), named as written, not as a wrapped negative.
    constexpr std::int64_t kMost = std::numeric_limits<std::int64_t>::max();
    const bool huge = v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(kMost);
    const std::int64_t x = huge ? kMost : v.get<std::int64_t>();
    if (x < min || x > max) {
      fail(key,
           fmt::format("{} is out of range; it must be between {} and {}", v.dump(), min, max));
    }
    return x;
  }

  // A byte size: an integer number of bytes or a size string ("512MiB").
  std::optional<std::uint64_t> size(const char* key, bool required = false) {
    if (!has(key)) {
      if (required) fail(key, "is required");
      return std::nullopt;
    }
    const json& v = at(key);
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
      return v.get<std::uint64_t>();
    }
    if (!v.is_string()) {
      fail(key, fmt::format("expected bytes as a whole number or a size string such as "
                            "\"512MiB\", got {}",
                            shown(v)));
    }
    try {
      return parse_size(v.get<std::string>(), dotted(key));
    } catch (const DeviceError& e) {
      throw DeviceError(printable(fmt::format("{}: {}", origin_, e.what())));
    }
  }

  Reader object(const char* key) {
    const json& v = at(key);
    return Reader(v, origin_, dotted(key));
  }

  // After reading: every key must have been asked for.
  void no_unknown_fields() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!seen_.count(it.key())) {
        std::string known;
        for (const std::string& k : seen_) known += (known.empty() ? "" : ", ") + k;
        fail(it.key(), fmt::format("unknown field (a typo?); the fields here are: {}", known));
      }
    }
  }

  std::string dotted(std::string_view field) const {
    return path_.empty() ? std::string(field) : path_ + "." + std::string(field);
  }
  const std::string& origin() const { return origin_; }

  static std::string kind(const json& v) {
    if (v.is_string()) return fmt::format("the string {}", v.dump());
    if (v.is_boolean()) return fmt::format("the boolean {}", v.dump());
    if (v.is_number()) return fmt::format("the number {}", shown(v));
    if (v.is_array()) return "a list";
    if (v.is_object()) return "a table";
    return "null";
  }

 private:
  const json& j_;
  std::string origin_;
  std::string path_;
  std::set<std::string> seen_;
};

Device read_device(const json& j, const std::string& origin, const DeviceLoadOptions& options) {
  Reader r(j, origin, "");
  // Every table is read in full before the version check would matter, but a newer file
  // should fail on its version, not on the first field this version does not know.
  const auto version = r.integer("edgeprof_device", 1, 1000000, true);
  if (*version > kDeviceSchemaVersion) {
    r.fail("edgeprof_device",
           fmt::format("schema version {} is newer than this edgeprof reads ({}); upgrade "
                       "edgeprof",
                       *version, kDeviceSchemaVersion));
  }
  Device d;
  d.name = r.name("name");
  if (r.has("aliases")) {
    const json& a = r.at("aliases");
    if (!a.is_array()) r.fail("aliases", "expected a list of names");
    for (const json& n : a) {
      if (!n.is_string()) r.fail("aliases", fmt::format("expected names, got {}", n.dump()));
      const std::string problem = detail::name_problem(n.get_ref<const std::string&>());
      if (!problem.empty()) r.fail("aliases", problem);
      d.aliases.push_back(n.get<std::string>());
    }
  }
  d.description = r.string("description");
  d.cores = static_cast<int>(*r.integer("cores", 1, detail::kMaxDeviceCores, true));
  const auto speed = r.number("core_speed", detail::kSpeedRange);
  d.reference_speed = r.number("reference_speed", detail::kSpeedRange);
  const auto host_reference = r.number("host_reference_speed", detail::kSpeedRange);
  if (host_reference && (!speed || !d.reference_speed)) {
    r.fail("host_reference_speed",
           "records the host a core_speed was derived on from reference_speed, and needs both; "
           "leave it out to derive core_speed from reference_speed on this host");
  }
  d.memory_bytes = *r.size("memory", true);
  d.swap_bytes = r.size("swap").value_or(0);
  d.pids_max = r.integer("pids_max", 1, detail::kMaxPids);
  d.source = r.string("source");

  if (r.has("cpu")) {
    Reader c = r.object("cpu");
    d.cpu.model = c.string("model");
    d.cpu.soc = c.string("soc");
    // 0 is unknown, as Device::validate and docs/devices.md say (it was refused here, and a
    // file written with it could not be read back).
    d.cpu.clock_mhz = c.number("clock_mhz", {0.0, detail::kClockMhzRange.max}).value_or(0.0);
    if (d.cpu.clock_mhz != 0) c.number("clock_mhz", detail::kClockMhzRange);  // 0 < MHz < 1
    d.cpu.architecture = c.string("architecture");
    d.cpu.layout = c.string("layout");
    c.no_unknown_fields();
  }
  if (r.has("storage")) {
    Reader s = r.object("storage");
    d.storage = s.string("kind");
    d.io_read_bps = s.size("read_bps");
    d.io_write_bps = s.size("write_bps");
    if ((d.io_read_bps && *d.io_read_bps == 0) || (d.io_write_bps && *d.io_write_bps == 0)) {
      s.fail("", "a bandwidth of 0 bytes/s is invalid; leave it out when it is unknown");
    }
    s.no_unknown_fields();
  }
  if (r.has("power")) {
    Reader p = r.object("power");
    d.power.idle_watts = p.number("idle_w", detail::kWattsRange);
    d.power.loaded_watts = p.number("loaded_w", detail::kWattsRange);
    if (d.power.idle_watts && d.power.loaded_watts && *d.power.loaded_watts < *d.power.idle_watts) {
      p.fail("loaded_w", fmt::format("{} W is below idle_w {} W", *d.power.loaded_watts,
                                     *d.power.idle_watts));
    }
    p.no_unknown_fields();
  }
  if (r.has("scores")) {
    Reader s = r.object("scores");
    CoreScores sc;
    sc.suite = s.string("suite", true);
    sc.integer = *s.number("integer", detail::kScoreRange, true);
    sc.floating = *s.number("floating", detail::kScoreRange, true);
    sc.memory = *s.number("memory", detail::kScoreRange, true);
    // The vector kernel's score: files of an older edgeprof-probe have none.
    if (auto v = s.number("vector", detail::kScoreRange)) {
      sc.vector = *v;
      sc.vector_unit = s.string("vector_unit");
      sc.vector_kernel = s.string("vector_kernel", true);
    }
    // How far each kernel's runs spread: files of an older edgeprof-probe have none.
    if (s.has("spread")) {
      Reader spread = s.object("spread");
      for (const char* kernel : detail::kKernels) {
        if (auto v = spread.number(kernel, detail::kSpreadRange)) sc.spread[kernel] = *v;
      }
      spread.no_unknown_fields();
    }
    s.no_unknown_fields();
    d.scores = sc;
  }
  if (r.has("speed_schedule")) {
    const json& steps = r.at("speed_schedule");
    if (!steps.is_array()) r.fail("speed_schedule", "expected a list of {after_s, factor} steps");
    double last = -1;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      Reader s(steps[i], origin, fmt::format("speed_schedule[{}]", i));
      SpeedStep step;
      step.after_s = *s.number("after_s", detail::kAfterRange, true);
      step.factor = *s.number("factor", detail::kFactorRange, true);
      s.no_unknown_fields();
      if (step.after_s <= last) {
        s.fail("after_s", "steps must be in increasing order of after_s");
      }
      last = step.after_s;
      d.speed_schedule.push_back(step);
    }
  }
  if (r.has("nn")) {
    Reader n = r.object("nn");
    d.nn_precision = n.string("precision");
    if (d.nn_precision.empty()) d.nn_precision = "fp32";
    if (d.nn_precision != "fp32" && d.nn_precision != "fp16") {
      n.fail("precision", fmt::format("'{}' is not fp32 or fp16", d.nn_precision));
    }
    // The times in `ms` are of one thread; several threads' go in threads_ms.
    if (n.has("threads")) {
      const json& threads = n.at("threads");
      if (!threads.is_number_integer() || threads.get<std::int64_t>() != 1) {
        n.fail("threads", fmt::format("is {}: the times in nn.ms are one thread's (1); give "
                                      "several threads' times in nn.threads_ms, by thread "
                                      "count (\"4\" = {{...}})",
                                      threads.dump()));
      }
    }
    if (!n.has("ms")) n.fail("ms", "is required: the published ms per inference by graph name");
    // One precision per table: int8 graphs' times (benchncnn's `_int8` names) beside fp32 or
    // fp16 ones would mix precisions in one speed, and are refused by name.
    auto one_precision = [&](const json& times, const std::string& field) {
      if (!times.is_object()) return;
      for (const auto& [name, value] : times.items()) {
        if (name.size() > 5 && name.compare(name.size() - 5, 5, "_int8") == 0) {
          n.fail(field + "." + name,
                 fmt::format("is an int8 graph's time, and this table's precision is {}: one "
                             "table has one precision (edgeprof's reference graphs are fp32; "
                             "int8 ones are not generated), so mixing them is refused; remove "
                             "the int8 times",
                             d.nn_precision));
        }
      }
    };
    if (n.has("ms")) one_precision(n.at("ms"), "ms");
    if (n.has("threads_ms") && n.at("threads_ms").is_object()) {
      for (const auto& [key, times] : n.at("threads_ms").items()) {
        one_precision(times, "threads_ms." + key);
      }
    }
    // ms per inference by reference graph; a name that is not one is an unknown field.
    auto read_times = [](Reader times, std::map<std::string, double>& out) {
      for (const auto& g : reference_graphs()) {
        if (auto v = times.number(g.name.c_str(), detail::kMsRange)) out[g.name] = *v;
      }
      times.no_unknown_fields();
    };
    read_times(n.object("ms"), d.nn_ms);
    if (n.has("threads_ms")) {
      const json& by_threads = n.at("threads_ms");
      Reader check(by_threads, origin, "nn.threads_ms");  // an object, or a clear error
      for (const auto& [key, times] : by_threads.items()) {
        int count = 0;
        const auto res = std::from_chars(key.data(), key.data() + key.size(), count);
        // Written as a count is ("04" and "4" were one table, merged silently).
        if (res.ec != std::errc() || res.ptr != key.data() + key.size() || count < 2 ||
            count > detail::kMaxDeviceCores || key != std::to_string(count)) {
          check.fail(key, fmt::format("expected a thread count from 2 to {} as the key, written "
                                      "as a number (\"4\")",
                                      detail::kMaxDeviceCores));
        }
        read_times(Reader(times, origin, "nn.threads_ms." + key), d.nn_threads_ms[count]);
      }
    }
    n.no_unknown_fields();
  }
  if (r.has("runtimes")) {
    // Published times with other runtimes than ncnn (whose are `nn`), by runtime id.
    Reader by_runtime = r.object("runtimes");
    if (by_runtime.has("ncnn")) {
      by_runtime.fail("ncnn", "ncnn's times go in `nn` (nn.ms, nn.threads_ms), not here");
    }
    for (const NnRuntime& known : nn_runtimes()) {
      if (known.id == "ncnn" || !by_runtime.has(known.id.c_str())) continue;
      Reader t = by_runtime.object(known.id.c_str());
      RuntimeTimes times;
      times.precision = t.string("precision");
      // Unsaid: the precision of the runtime's rating (int8 for pytorch-int8), else fp32.
      if (times.precision.empty()) {
        times.precision = known.precision.empty() ? "fp32" : known.precision;
      }
      if (!is_nn_precision(times.precision)) {
        t.fail("precision", fmt::format("'{}' is not fp32, fp16 or int8", times.precision));
      }
      // A precision of a runtime (pytorch-int8) holds times in that precision only: its
      // rating's models run in it, and a speed from other times would be refused later.
      if (!known.precision_of.empty() && times.precision != known.precision) {
        t.fail("precision",
               fmt::format("'{}': runtimes.{} holds {} times only; {}'s other times go in "
                           "runtimes.{}",
                           times.precision, known.id, known.precision,
                           nn_runtime(known.precision_of).name, known.precision_of));
      }
      for (const NnRuntime& other : nn_runtimes()) {
        // Another precision of this runtime with a rating of its own: its times go there.
        if (other.precision_of == known.id && other.precision == times.precision) {
          t.fail("precision",
                 fmt::format("'{}': {}'s {} times go in runtimes.{}, a speed of its own "
                             "(--runtime {})",
                             times.precision, known.name, times.precision, other.id,
                             other.id));
        }
      }
      times.threads = static_cast<int>(*t.integer("threads", 1, detail::kMaxDeviceCores, true));
      if (!t.has("ms")) t.fail("ms", "is required: the published ms per inference by model");
      Reader ms = t.object("ms");
      for (const std::string& model : known.models) {
        if (auto v = ms.number(model.c_str(), detail::kMsRange)) times.ms[model] = *v;
      }
      ms.no_unknown_fields();  // a model this edgeprof's rating does not time
      if (times.ms.empty()) t.fail("ms", "is empty: give ms per inference by model name");
      t.no_unknown_fields();
      d.runtime_ms[known.id] = std::move(times);
    }
    by_runtime.no_unknown_fields();  // a runtime edgeprof has no rating for (ncnn's: `nn`)
  }
  if (r.has("sources")) {
    Reader s = r.object("sources");
    for (const char* figure : detail::kFigures) {
      if (!s.has(figure)) continue;
      Reader f = s.object(figure);
      FigureSource fs;
      fs.status = f.string("status", true);
      if (!detail::one_of(fs.status, detail::kStatuses)) {
        f.fail("status", fmt::format("'{}' is not one of specified, measured, estimated",
                                     fs.status));
      }
      fs.source = f.string("source", true);
      f.no_unknown_fields();
      d.sources[figure] = fs;
    }
    s.no_unknown_fields();
  }
  r.no_unknown_fields();

  // The core speed: given, or from the probe's scores against this host's, or from the speed
  // relative to the reference core and this host's.
  std::optional<CoreScores> host_scores;  // this host's suite scores, read once when needed
  auto host_suite = [&]() -> const CoreScores& {
    if (!host_scores) {
      host_scores = options.host_scores ? *options.host_scores : host_calibration().scores;
    }
    return *host_scores;
  };
  // A core_speed edgeprof derived from reference_speed (a file it wrote: `devices show --json`)
  // is derived again here: kept, a speed for another host (or one left uncorrected before this
  // host's rating was measured) stayed. Told from a speed given by hand by its source, which
  // edgeprof wrote, and its value: the writer's doubles read back exactly, and the division
  // repeats bit for bit (an edited speed, or a hand-written file giving both speeds, is kept).
  const auto said = d.sources.find("core_speed");
  const bool derived =
      speed && d.reference_speed && !options.speed_as_written && said != d.sources.end() &&
      said->second.source.rfind(detail::kReferenceSpeedSource, 0) == 0 &&
      *speed == (host_reference ? *d.reference_speed / *host_reference : *d.reference_speed);
  if (derived) {
    d.sources.erase(said);  // the other host's (or the uncorrected) derivation
    apply_reference_speed(d, *d.reference_speed, options.host_reference_speed);
  } else if (speed) {
    d.core_speed = *speed;
    d.host_reference_speed = host_reference;
  } else if (d.scores) {
    const CoreScores& host = host_suite();
    try {
      d.core_speed = speed_from_scores(*d.scores, host);
    } catch (const Error& e) {
      throw DeviceError(printable(fmt::format("{}: {}", origin, e.what())));
    }
    if (!d.sources.count("core_speed")) {
      d.sources["core_speed"] = {
          "measured", fmt::format("{} ({}) against this host's", detail::kProbeScoresSource,
                                  host.suite)};
    }
  } else if (d.reference_speed) {
    apply_reference_speed(d, *d.reference_speed, options.host_reference_speed);
  } else {
    r.fail("core_speed",
           "is required unless the file has `scores` from edgeprof-probe or a `reference_speed` "
           "(the speed of one device core relative to one core of this host, for example 0.25)");
  }
  if (!d.nn_ms.empty()) {
    std::string why;
    std::optional<std::map<std::string, double>> host = options.host_nn_ms;
    if (!host) {
      if (auto rating = cached_nn_rating(&why)) host = rating->host_ms;
    } else if (host->empty()) {
      why = "this host's nn rating was given as not known";
      host.reset();
    }
    if (host) {
      try {
        d.nn = nn_speed(d.nn_ms, *host, d.nn_precision);
      } catch (const Error& e) {
        d.nn_missing = e.what();
      }
    } else {
      d.nn_missing = why;
    }
  } else if (d.scores && d.scores->vector > 0) {
    // A probed device: its vector kernel against this host's.
    try {
      d.nn = nn_speed_from_scores(*d.scores, host_suite());
    } catch (const Error& e) {
      d.nn_missing = e.what();
    }
  } else {
    d.nn_missing = d.scores ? "no published CNN inference times, and the probe's scores have no "
                              "vector kernel (a file of an older edgeprof-probe: probe again)"
                            : "no published CNN inference times";
  }
  d.origin = origin;
  try {
    d.validate();
  } catch (const DeviceError& e) {
    throw DeviceError(printable(fmt::format("{}: {}", origin, e.what())));
  }
  return d;
}

// "file:line:column" of a place toml++ names; "file:line" on a line written with escapes
// (TomlppReadable, below), whose columns toml++ counts in the escaped text.
std::string toml_position(const std::string& origin, std::uint32_t line, std::uint32_t column,
                          const std::set<std::size_t>& escaped_lines) {
  if (escaped_lines.count(line)) return fmt::format("{}:{}", origin, line);
  return fmt::format("{}:{}:{}", origin, line, column);
}

// TOML tables map one to one onto JSON objects; dates and times have no place in the schema.
json json_from_toml(const toml::node& node, const std::string& origin,
                    const std::set<std::size_t>& escaped_lines) {
  if (const auto* t = node.as_table()) {
    json j = json::object();
    for (const auto& [k, v] : *t) {
      j[std::string(k.str())] = json_from_toml(v, origin, escaped_lines);
    }
    return j;
  }
  if (const auto* a = node.as_array()) {
    json j = json::array();
    for (const auto& v : *a) j.push_back(json_from_toml(v, origin, escaped_lines));
    return j;
  }
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return i->get();
  if (const auto* f = node.as_floating_point()) return f->get();
  if (const auto* b = node.as_boolean()) return b->get();
  const auto& src = node.source();
  throw DeviceError(fmt::format("{}: dates and times are not part of a device file",
                                toml_position(origin, src.begin.line, src.begin.column,
                                              escaped_lines)));
}

json write_device(const Device& d) {
  json j = {{"edgeprof_device", kDeviceSchemaVersion}, {"name", d.name}};
  if (!d.aliases.empty()) j["aliases"] = d.aliases;
  if (!d.description.empty()) j["description"] = d.description;
  j["cores"] = d.cores;
  j["core_speed"] = d.core_speed;
  if (d.reference_speed) j["reference_speed"] = *d.reference_speed;
  if (d.host_reference_speed) j["host_reference_speed"] = *d.host_reference_speed;
  j["memory"] = d.memory_bytes;
  if (d.swap_bytes) j["swap"] = d.swap_bytes;
  if (d.pids_max) j["pids_max"] = *d.pids_max;
  if (!d.source.empty()) j["source"] = d.source;
  json cpu = json::object();
  if (!d.cpu.model.empty()) cpu["model"] = d.cpu.model;
  if (!d.cpu.soc.empty()) cpu["soc"] = d.cpu.soc;
  if (d.cpu.clock_mhz > 0) cpu["clock_mhz"] = d.cpu.clock_mhz;
  if (!d.cpu.architecture.empty()) cpu["architecture"] = d.cpu.architecture;
  if (!d.cpu.layout.empty()) cpu["layout"] = d.cpu.layout;
  if (!cpu.empty()) j["cpu"] = cpu;
  json storage = json::object();
  if (!d.storage.empty()) storage["kind"] = d.storage;
  if (d.io_read_bps) storage["read_bps"] = *d.io_read_bps;
  if (d.io_write_bps) storage["write_bps"] = *d.io_write_bps;
  if (!storage.empty()) j["storage"] = storage;
  json power = json::object();
  if (d.power.idle_watts) power["idle_w"] = *d.power.idle_watts;
  if (d.power.loaded_watts) power["loaded_w"] = *d.power.loaded_watts;
  if (!power.empty()) j["power"] = power;
  if (d.scores) {
    j["scores"] = {{"suite", d.scores->suite},
                   {"integer", d.scores->integer},
                   {"floating", d.scores->floating},
                   {"memory", d.scores->memory}};
    if (d.scores->vector > 0) {
      j["scores"]["vector"] = d.scores->vector;
      j["scores"]["vector_unit"] = d.scores->vector_unit;
      j["scores"]["vector_kernel"] = d.scores->vector_kernel;
    }
    if (!d.scores->spread.empty()) j["scores"]["spread"] = d.scores->spread;
  }
  if (!d.speed_schedule.empty()) {
    json steps = json::array();
    for (const SpeedStep& s : d.speed_schedule) {
      steps.push_back({{"after_s", s.after_s}, {"factor", s.factor}});
    }
    j["speed_schedule"] = steps;
  }
  if (!d.nn_ms.empty()) {
    j["nn"] = {{"precision", d.nn_precision.empty() ? "fp32" : d.nn_precision},
               {"threads", 1},
               {"ms", d.nn_ms}};
    if (!d.nn_threads_ms.empty()) {
      json by_threads = json::object();
      for (const auto& [threads, times] : d.nn_threads_ms) {
        by_threads[std::to_string(threads)] = times;
      }
      j["nn"]["threads_ms"] = by_threads;
    }
  }
  if (!d.runtime_ms.empty()) {
    json by_runtime = json::object();
    for (const auto& [id, t] : d.runtime_ms) {
      by_runtime[id] = {{"precision", t.precision}, {"threads", t.threads}, {"ms", t.ms}};
    }
    j["runtimes"] = by_runtime;
  }
  if (!d.sources.empty()) {
    json sources = json::object();
    for (const auto& [figure, s] : d.sources) {
      sources[figure] = {{"status", s.status}, {"source", s.source}};
    }
    j["sources"] = sources;
  }
  return j;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The catalog as loaded for one state of this host's cached 7-Zip rating (its speeds are
// relative to the reference core). Rebuilt when the cache file changes; older builds are kept,
// since callers hold references into them.
class Catalog {
 public:
  const std::vector<Device>& devices() {
    const std::string key = cache_key();
    std::lock_guard<std::mutex> lock(mutex_);
    if (built_.empty() || key != key_) {
      built_.push_back(load());
      key_ = key;
    }
    return built_.back();
  }

 private:
  // What tells the cache files (7-Zip and nn ratings) from others, without reading them.
  static std::string cache_key() {
    const std::string dir = detail::host_cache_dir();
    if (dir.empty()) return {};
    std::string key;
    for (const std::string& file : {detail::reference_cache_file(dir), detail::nn_cache_file(dir)}) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0) {
        key += "-;";
      } else {
        key += fmt::format("{}:{}:{}.{};", st.st_ino, st.st_size, st.st_mtim.tv_sec,
                           st.st_mtim.tv_nsec);
      }
    }
    return key;
  }

  static std::vector<Device> load() {
    std::vector<Device> out;
    std::string text;
    for (const char* piece : detail::kCatalogJsonPieces) text += piece;
    const json doc = detail::parse_json_unique(text);  // a key given twice: a build's bug
    const DeviceLoadOptions defaults;  // no probe scores; this host's cached 7-Zip rating
    for (const json& entry : doc.at("devices")) {
      const std::string name = entry.value("name", std::string("?"));
      out.push_back(read_device(entry, "catalog entry '" + name + "'", defaults));
      out.back().origin = "catalog";
    }
    return out;
  }

  std::mutex mutex_;
  std::deque<std::vector<Device>> built_;
  std::string key_;
};

// toml++ 3.3.0 (Debian 12's) asks whether some code points are whitespace with a table that
// reaches __builtin_unreachable() for U+00A1-U+0499, U+2C5E-U+3057 and U+FB26-U+FEFE (bar
// U+3000): undefined behaviour, found by tests/run-fuzz.sh (U+FEFD after `edgeprof_device = 1`),
// upstream marzer/tomlplusplus#295. It asks of every character outside strings and comments, of
// every character of a key (quoted keys too), and in multi-line strings; so before it reads a
// file, such characters are written as escapes (the same value): `\u00E9` in a double-quoted
// string, and a single-quoted string that holds one is rewritten double-quoted; in comments too
// (discarded anyway). Outside strings TOML allows none of them: there they are refused, saying
// where. So the text toml++ reads holds none of them, whichever way it reads it.
bool tomlpp_cannot_class(char32_t c) {
  if (c < 0xA1 || c > 0xFEFE || c == 0x3000) return false;
  const std::uint64_t block = (static_cast<std::uint64_t>(c) - 0xA0) / 0x3FA;
  return block == 0 || block == 11 || block == 63;
}

using detail::next_code_point;  // U+FFFD for a byte that starts none: toml++ reports those

class TomlppReadable {
 public:
  TomlppReadable(std::string_view text, const std::string& origin)
      : text_(text), origin_(origin) {}

  std::string text() {
    out_.reserve(text_.size());
    for (std::size_t i = 0; i < text_.size();) {
      const std::size_t at = i;
      const char32_t c = next_code_point(text_, i);
      if (c == '\n') {
        new_line(i);
      } else if (c == '#') {  // a comment, to the line's end
        i = std::min(text_.find('\n', at), text_.size());
        copy_escaped(at, i);
        continue;
      } else if (c == '"') {
        i = basic(at, starts(at, R"(""")") ? 3 : 1);
        continue;
      } else if (c == '\'') {
        i = literal(at, starts(at, "'''") ? 3 : 1);
        continue;
      } else if (tomlpp_cannot_class(c)) {
        refuse(at, c, "is outside a string: TOML allows it only inside a string or a comment");
      }
      out_ += text_.substr(at, i - at);
    }
    return std::move(out_);
  }

 private:
  bool starts(std::size_t at, std::string_view what) const {
    return text_.substr(at, what.size()) == what;
  }
  void new_line(std::size_t next) {
    ++line_;
    line_start_ = next;
  }
  [[noreturn]] void refuse(std::size_t at, char32_t c, std::string_view why) const {
    std::size_t column = 1;  // in code points, as toml++ counts
    for (std::size_t k = line_start_; k < at; ++k) {
      column += (static_cast<unsigned char>(text_[k]) & 0xC0) != 0x80;
    }
    throw DeviceError(fmt::format("{}:{}:{}: U+{:04X} {}", origin_, line_, column,
                                  static_cast<std::uint32_t>(c), why));
  }
  void escape(char32_t c) {
    out_ += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(c));
    escaped_lines_.insert(line_);
  }
  // Text toml++ does not take as a string's value (a comment, an unterminated string: the file
  // is refused then anyway): copied, with the characters it cannot class escaped, so that no
  // such character reaches it wherever it reads, whichever way it reads.
  void copy_escaped(std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to;) {
      const std::size_t c_at = k;
      const char32_t c = next_code_point(text_, k);
      if (c == '\n') new_line(k);
      if (tomlpp_cannot_class(c)) {
        escape(c);
      } else {
        out_ += text_.substr(c_at, k - c_at);
      }
    }
  }
  // The end of a string's closing quotes from `at`: up to two more quotes are its content's.
  std::size_t closing_end(std::size_t at, char quote) const {
    std::size_t end = at + 3;
    while (end < text_.size() && end < at + 5 && text_[end] == quote) ++end;
    return end;
  }

  // A double-quoted string from `at` (its `quotes` quotes): copied with the characters toml++
  // cannot class escaped. Returns where reading goes on.
  std::size_t basic(std::size_t at, std::size_t quotes) {
    out_ += text_.substr(at, quotes);
    std::size_t j = at + quotes;
    while (j < text_.size()) {
      std::size_t k = j;
      const char32_t c = next_code_point(text_, k);
      if (c == '\n') {
        if (quotes == 1) return j;  // unterminated: toml++ says so
        new_line(k);
      } else if (quotes == 1 && c == '"') {
        out_ += '"';
        return k;
      } else if (quotes == 3 && starts(j, R"(""")")) {
        const std::size_t end = closing_end(j, '"');
        out_ += text_.substr(j, end - j);
        return end;
      } else if (c == '\\' && k < text_.size() && text_[k] != '\n') {
        std::size_t e = k;
        const char32_t escaped = next_code_point(text_, e);
        if (tomlpp_cannot_class(escaped)) {
          refuse(k, escaped, "follows a backslash: not an escape TOML has; write \\\\ for one");
        }
        out_ += text_.substr(j, e - j);  // the backslash and what it escapes, as written
        j = e;
        continue;
      } else if (tomlpp_cannot_class(c)) {
        escape(c);
        j = k;
        continue;
      }
      out_ += text_.substr(j, k - j);
      j = k;
    }
    return j;
  }

  // A single-quoted string from `at`: copied as it is, or, when it holds a character toml++
  // cannot class, rewritten double-quoted with the same value.
  std::size_t literal(std::size_t at, std::size_t quotes) {
    const std::size_t from = at + quotes;
    std::size_t to = quotes == 1 ? text_.find_first_of("'\n", from) : text_.find("'''", from);
    if (to == std::string_view::npos || text_[to] == '\n') {  // unterminated: toml++ says so
      to = std::min(to, text_.size());
      copy_escaped(at, to);
      return to;
    }
    const std::size_t end = quotes == 1 ? to + 1 : closing_end(to, '\'');
    to = end - quotes;  // the content ends before the last `quotes` quotes
    bool rewrite = false;
    for (std::size_t k = from; k < to && !rewrite;) {
      rewrite = tomlpp_cannot_class(next_code_point(text_, k));
    }
    if (!rewrite) {
      for (std::size_t k = from; k < to; ++k) {
        if (text_[k] == '\n') new_line(k + 1);
      }
      out_ += text_.substr(at, end - at);
      return end;
    }
    const std::string q(quotes, '"');
    escaped_lines_.insert(line_);  // its backslashes and quotes escaped too
    out_ += q;
    for (std::size_t k = from; k < to;) {
      const std::size_t c_at = k;
      const char32_t c = next_code_point(text_, k);
      if (c == '\\' || c == '"') {
        out_ += '\\';
        out_ += static_cast<char>(c);
        escaped_lines_.insert(line_);
      } else if (tomlpp_cannot_class(c)) {
        escape(c);
      } else {
        if (c == '\n') new_line(k);
        out_ += text_.substr(c_at, k - c_at);
      }
    }
    out_ += q;
    return end;
  }

  std::string_view text_;
  const std::string& origin_;
  std::string out_;
  std::size_t line_ = 1, line_start_ = 0;
  std::set<std::size_t> escaped_lines_;

 public:
  // The lines (from 1) written with escapes: toml++'s columns there are the escaped text's.
  const std::set<std::size_t>& escaped_lines() const { return escaped_lines_; }
};

}  // namespace

Device parse_device_json(std::string_view text, const std::string& origin,
                         const DeviceLoadOptions& options) {
  json j;
  try {
    j = detail::parse_json_unique(text);
  } catch (const json::exception& e) {  // a syntax error, or a number past a double's range
    throw DeviceError(fmt::format("{}: not valid JSON ({}); check the syntax or write TOML",
                                  origin, e.what()));
  } catch (const detail::DuplicateJsonKey& d) {
    // The parser kept the last ({"cores": 4, "cores": 1} was a 1-core device); TOML refuses it.
    throw DeviceError(fmt::format("{}: {} is given twice (a JSON object's keys are unique): "
                                  "keep the one you mean",
                                  origin, detail::printable(d.path)));
  }
  return read_device(j, origin, options);
}

Device parse_device_toml(std::string_view text, const std::string& origin,
                         const DeviceLoadOptions& options) {
  TomlppReadable readable(text, origin);
  const std::string escaped = readable.text();
  toml::table t;
  try {
    t = toml::parse(escaped, origin);
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    throw DeviceError(fmt::format(
        "{}: not valid TOML: {}",
        toml_position(origin, src.begin.line, src.begin.column, readable.escaped_lines()),
        e.description()));
  }
  return read_device(json_from_toml(t, origin, readable.escaped_lines()), origin, options);
}

Device load_device_file(const std::string& path, const DeviceLoadOptions& options) {
  if (path.find('\0') != std::string::npos) {  // open() would read the path before it
    throw DeviceError(fmt::format("the device file '{}' holds a NUL byte; no path does",
                                  detail::printable(path)));
  }
  // A device file is a few kilobytes; the catalog's whole file is under 1 MiB.
  constexpr std::size_t kMaxBytes = std::size_t(16) << 20;
  int err = 0;
  const auto text = detail::Fs().read_user_file(path, kMaxBytes, &err);
  if (!text) {
    if (err == EINVAL || err == EFBIG) {
      throw DeviceError(fmt::format("the device file {} {}: give a device file (.json or .toml)",
                                    path, detail::user_file_problem(err, kMaxBytes)),
                        err);
    }
    throw DeviceError(fmt::format("cannot read the device file {}: {} (errno {}); check the path",
                                  path, std::strerror(err), err),
                      err);
  }
  if (ends_with(path, ".toml")) return parse_device_toml(*text, path, options);
  if (ends_with(path, ".json")) return parse_device_json(*text, path, options);
  const auto first = text->find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (*text)[first] == '{') {
    return parse_device_json(*text, path, options);
  }
  return parse_device_toml(*text, path, options);
}

std::string device_to_json(const Device& device) { return write_device(device).dump(2) + "\n"; }

namespace detail {

json device_file_object(const Device& device) { return write_device(device); }

std::string shown(const json& v) {
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  }
  constexpr std::size_t kMost = 40;
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= kMost) return text;
  std::size_t cut = kMost;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

Device device_from_file_object(const json& object, const std::string& origin,
                               const DeviceLoadOptions& options) {
  return read_device(object, origin, options);
}

}  // namespace detail

const std::vector<Device>& catalog_devices() {
  static Catalog catalog;
  return catalog.devices();
}

std::vector<std::string> device_search_path() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EDGEPROF_DEVICE_PATH"); env && *env) {
    std::string_view rest = env;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
    return dirs;
  }
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    dirs.push_back(std::string(xdg) + "/edgeprof/devices");
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dirs.push_back(std::string(home) + "/.config/edgeprof/devices");
  }
  return dirs;
}

UserDevices user_devices(const DeviceLoadOptions& options) {
  UserDevices out;
  const char* env = std::getenv("EDGEPROF_DEVICE_PATH");
  const bool named = env && *env;  // by the user: each directory is meant to exist
  for (const std::string& dir : device_search_path()) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
      // The default directory need not exist: it holds no devices. One the user named, or one
      // that cannot be read, is said (its devices were silently not there).
      const int err = errno;
      if (named || err != ENOENT) {
        out.problems.push_back(fmt::format(
            "{}: the device directory cannot be read: {} (errno {}){}", detail::printable(dir),
            std::strerror(err), err,
            named ? "; it is on EDGEPROF_DEVICE_PATH: create it, or mend the variable" : ""));
      }
      continue;
    }
    std::vector<std::string> files;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (ends_with(name, ".json") || ends_with(name, ".toml")) files.push_back(dir + "/" + name);
    }
    ::closedir(d);
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      try {
        Device device = load_device_file(f, options);
        // A name find_device() would never reach by it: said, not listed (it was listed, and
        // another device answered). An alias another device holds leaves the device listed.
        const auto answers = [&](const Device& other) { return other.answers_to(device.name); };
        const auto& catalog = catalog_devices();
        const auto builtin = std::find_if(catalog.begin(), catalog.end(), answers);
        if (builtin != catalog.end()) {
          out.problems.push_back(fmt::format(
              "{}: '{}' is a name of the built-in {}, which find_device() gives; rename the "
              "device in the file (its path loads it as it is)",
              detail::printable(f), detail::printable(device.name), builtin->name));
          continue;
        }
        const auto earlier = std::find_if(out.devices.begin(), out.devices.end(), answers);
        if (earlier != out.devices.end()) {
          out.problems.push_back(fmt::format(
              "{}: a device named '{}' was read before it (files are read in the order of "
              "their paths), and is the one find_device() gives; rename one of them",
              detail::printable(f), detail::printable(device.name)));
          continue;
        }
        out.devices.push_back(std::move(device));
      } catch (const DeviceError& e) {
        out.problems.emplace_back(e.what());
      }
    }
  }
  return out;
}

Device find_device(std::string_view name_or_path, const DeviceLoadOptions& options) {
  const std::string key(name_or_path);
  if (key.find('\0') != std::string::npos) {
    throw DeviceError(fmt::format("no device named '{}': a name or path holds no NUL byte",
                                  detail::printable(key)));
  }
  if (key.find('/') != std::string::npos || ends_with(key, ".json") || ends_with(key, ".toml")) {
    return load_device_file(key, options);
  }
  for (const Device& d : catalog_devices()) {
    if (d.answers_to(key)) return d;
  }
  UserDevices user = user_devices(options);
  for (const Device& d : user.devices) {
    if (d.answers_to(key)) return d;
  }
  std::string known;
  std::vector<std::string> names;
  for (const Device& d : catalog_devices()) names.push_back(d.name);
  for (const Device& d : user.devices) names.push_back(d.name);
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  // Aliases may be meant too ("raspberry-pi4" is closest to "raspberry-pi-4", the default).
  const auto add_aliases = [&names](const std::vector<Device>& devices) {
    for (const Device& d : devices) {
      for (const std::string& a : d.aliases) {
        if (std::find(names.begin(), names.end(), a) == names.end()) names.push_back(a);
      }
    }
  };
  add_aliases(catalog_devices());
  add_aliases(user.devices);
  std::string broken;
  for (const std::string& p : user.problems) broken += "\n  skipped " + p;
  // A file of that name here was meant, perhaps: only a path with a '/' or a .json/.toml
  // ending is read as one.
  struct stat st {};
  if (::stat(key.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    broken += fmt::format(
        "\n  (a file '{0}' is in the current directory: a device file is given by a path with "
        "a '/' or a .json/.toml ending, e.g. ./{0})",
        detail::printable(key));
  }
  const std::vector<std::string> close = detail::close_names(key, names);
  const std::string guess =
      close.empty() ? std::string() : fmt::format(" Did you mean {}?", fmt::join(close, ", "));
  throw DeviceError(fmt::format(
      "no device named '{}'.{} Known devices: {}. Describe your own in a JSON or TOML file (see "
      "docs/devices.md) and pass its path, or put it in {}{}",
      detail::printable(key), guess, known,
      device_search_path().empty() ? "$EDGEPROF_DEVICE_PATH" : device_search_path()[0], broken));
}

}  // namespace edgeprof
