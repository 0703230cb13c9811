// Reports as text for people, JSON for programs (and back), and CSV time series.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "edgeprof/error.hpp"
#include "edgeprof/slice.hpp"
#include "edgeprof/version.hpp"
#include "analysis/metric_table.hpp"
#include "device/device_json.hpp"
#include "suite/microbench_detail.hpp"
#include "nn/runtimes.hpp"
#include "sys/json_unique.hpp"
#include "sys/text.hpp"

namespace edgeprof {

using nlohmann::json;

// Host information.

const HostInfo& host_info() {
  static const HostInfo info = [] {
    // The same identity the host caches are keyed by (CPU model named on ARM too, via Fs).
    const detail::HostIdentity id = detail::host_identity();
    HostInfo h;
    h.hostname = id.hostname;
    h.kernel = id.kernel;
    h.cpu_model = id.cpu_model;
    const HostFacts facts = host_facts();
    h.cpus = static_cast<int>(facts.cpus.size());
    h.memory_bytes = facts.memory_bytes;
    return h;
  }();
  return info;
}

namespace {

// JSON building blocks. Unset optionals are null; reading back, null is unset.
template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
// Doubles that are not finite have no JSON form; they are null (and read back as unset).
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json opt(const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }

// Reading a report back. Every field is read through a Field, which knows its path in the
// report ("runs[2].phases[0].name") and refuses by that path a value of another kind, or one
// that a run cannot produce: reports are files that people keep and edit, and a figure read
// wrong would be shown as measured.

// A field that cannot be read: where it is, and what is wrong with it.
struct BadField {
  std::string path;
  std::string problem;
};

using detail::shown;

// The finite numbers a field may hold: `low` and above (only above with `open`), as named.
struct Range {
  double low;
  bool open;
  const char* says;
};
constexpr Range kFinite{-std::numeric_limits<double>::infinity(), false, "a finite number"};
constexpr Range kSeconds{0, false, "a number of seconds >= 0"};
constexpr Range kAtLeastZero{0, false, "a number >= 0"};
constexpr Range kAboveZero{0, true, "a number > 0"};
constexpr Range kAtLeastOne{1, false, "a number >= 1"};

// `v` as a T when it is a whole JSON number from `low` to `high` (1.0 is not: the writer
// writes whole numbers without a point, and a number past 64 bits is parsed as a double).
template <class T>
std::optional<T> whole_in(const json& v, T low, T high) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() || v.get<std::int64_t>() >= 0) {
    const auto u = v.get<std::uint64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (high < 0 || u > static_cast<std::uint64_t>(high)) return std::nullopt;
      if (low > 0 && u < static_cast<std::uint64_t>(low)) return std::nullopt;
    } else {
      if (u < low || u > high) return std::nullopt;
    }
    return static_cast<T>(u);
  }
  if constexpr (std::is_signed_v<T>) {
    const auto i = v.get<std::int64_t>();
    if (i >= low && i <= high) return static_cast<T>(i);
  }
  return std::nullopt;
}

template <class T>
std::string whole_says(T low, T high) {
  return fmt::format("a whole number from {} to {}", low, high);
}

class Field {
 public:
  Field(const json& value, std::string path) : value_(&value), path_(std::move(path)) {}

  const json& value() const { return *value_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(std::string problem) const { throw BadField{path_, std::move(problem)}; }
  [[noreturn]] void refuse(std::string_view must_be) const {
    fail(fmt::format("{} is not {}", shown(*value_), must_be));
  }

  // Member `key` of this object: at() one every report has; find() one that reports from
  // before it lack (nullopt); set() one that may also be null, an unset optional (nullopt).
  Field at(const char* key) const {
    if (auto f = find(key)) return *f;
    throw BadField{member_path(key), "missing"};
  }
  std::optional<Field> find(const char* key) const {
    if (!value_->is_object()) refuse("an object");
    const auto it = value_->find(key);
    if (it == value_->end()) return std::nullopt;
    return Field(*it, member_path(key));
  }
  std::optional<Field> set(const char* key) const {
    auto f = find(key);
    if (f && f->value_->is_null()) return std::nullopt;
    return f;
  }
  // An array's elements; an object's members.
  std::vector<Field> elements() const {
    if (!value_->is_array()) refuse("an array");
    std::vector<Field> out;
    for (std::size_t i = 0; i < value_->size(); ++i) out.push_back(element(i));
    return out;
  }
  std::vector<std::pair<std::string, Field>> members() const {
    if (!value_->is_object()) refuse("an object");
    std::vector<std::pair<std::string, Field>> out;
    for (auto it = value_->begin(); it != value_->end(); ++it) {
      out.emplace_back(it.key(), Field(it.value(), member_path(it.key())));
    }
    return out;
  }

  std::string text() const {
    if (!value_->is_string()) refuse("a string");
    return value_->get<std::string>();
  }
  bool flag() const {
    if (!value_->is_boolean()) refuse("true or false");
    return value_->get<bool>();
  }
  double number(const Range& range) const {
    if (value_->is_number()) {
      const double x = value_->get<double>();
      if (std::isfinite(x) && (range.open ? x > range.low : x >= range.low)) return x;
    }
    refuse(range.says);
  }
  // A figure written through num(): null where it was not finite.
  double number_or_nan(const Range& range) const {
    return value_->is_null() ? std::nan("") : number(range);
  }
  template <class T>
  T whole(T low = std::numeric_limits<T>::min(), T high = std::numeric_limits<T>::max()) const {
    if (const auto x = whole_in(*value_, low, high)) return *x;
    refuse(whole_says(low, high));
  }
  // A column of whole numbers (a series' thousands: a path is made only for an error).
  template <class T>
  std::vector<T> wholes(T low = std::numeric_limits<T>::min(),
                        T high = std::numeric_limits<T>::max()) const {
    if (!value_->is_array()) refuse("an array of " + whole_says(low, high) + "s");
    std::vector<T> out;
    out.reserve(value_->size());
    for (const json& v : *value_) {
      const auto x = whole_in(v, low, high);
      if (!x) element(out.size()).refuse(whole_says(low, high));
      out.push_back(*x);
    }
    return out;
  }
  std::vector<std::string> texts() const {
    std::vector<std::string> out;
    for (const Field& f : elements()) out.push_back(f.text());
    return out;
  }
  std::map<std::string, std::string> text_map() const {
    std::map<std::string, std::string> out;
    for (const auto& [key, f] : members()) out[key] = f.text();
    return out;
  }

  // Optional members: unset when absent (a report from before them) or null (unset).
  std::optional<double> opt_number(const char* key, const Range& range) const {
    if (const auto f = set(key)) return f->number(range);
    return std::nullopt;
  }
  template <class T>
  std::optional<T> opt_whole(const char* key, T low = std::numeric_limits<T>::min(),
                             T high = std::numeric_limits<T>::max()) const {
    if (const auto f = set(key)) return f->whole(low, high);
    return std::nullopt;
  }

 private:
  std::string member_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }
  Field element(std::size_t i) const {
    return Field((*value_)[i], fmt::format("{}[{}]", path_, i));
  }

  const json* value_;  // a pointer: a Field is assigned
  std::string path_;
};

// Parses a report's text, refusing an object that gives a key twice by its path: the parser
// would keep the last, and a report edited to say two things would be read as saying one.
json parse_report(std::string_view text) {
  try {
    return detail::parse_json_unique(text);
  } catch (const detail::DuplicateJsonKey& d) {
    throw BadField{d.path, "given twice (a JSON object's keys are unique)"};
  }
}

// A report's device is a device file (catalog.hpp's schema) plus where it was loaded from.
json device_json(const Device& d) {
  json j = detail::device_file_object(d);
  j["origin"] = d.origin;
  // Which kind of speed was emulated, and from what (report fields, not device-file ones).
  j["speed_kind"] = d.speed_kind == "nn" ? "nn" : d.reference_speed ? "integer" : "given";
  j["speed"] = describe_core_speed(d);
  // A speed with another runtime than ncnn (for_runtime()): which, to be read back as such.
  if (d.speed_kind == "nn" && d.nn && d.nn->basis != "ncnn" && d.nn->basis != "vector") {
    j["speed_runtime"] = {{"runtime", d.nn->basis},
                          {"precision", d.nn->precision},
                          {"threads", d.nn->threads},
                          {"one_core_factor", d.nn->one_core_factor}};
    if (d.nn->memory_mb_per_ms > 0) {
      j["speed_runtime"]["memory_mb_per_ms"] = d.nn->memory_mb_per_ms;
      j["speed_runtime"]["per_host_ms"] = d.nn->per_host_ms;
      j["speed_runtime"]["ms_per_mb"] = d.nn->ms_per_mb;
    }
  }
  return j;
}

Device device_from(const Field& f) {
  if (f.find("edgeprof_device")) {
    const auto text_or_empty = [&](const char* key) {
      const auto v = f.find(key);
      return v ? v->text() : std::string();
    };
    const std::string origin = text_or_empty("origin");
    const std::string kind = text_or_empty("speed_kind");
    json file = f.value();
    file.erase("origin");
    file.erase("speed_kind");
    file.erase("speed");
    file.erase("speed_runtime");
    // The device file's reader names the field itself (a DeviceError), after this origin.
    DeviceLoadOptions as_run;
    as_run.speed_as_written = true;  // the speed the run had, on whatever host reads it
    Device d = detail::device_from_file_object(file, "the report's " + f.path(), as_run);
    d.origin = origin;
    if (kind == "nn") d.speed_kind = "nn";
    const auto runtime = f.find("speed_runtime");
    if (kind == "nn" && runtime) {
      // The speed as the run had it, not ncnn's from this host's rating now; the per-model
      // ratios are not in the report.
      NnSpeed s;
      s.core_speed = d.core_speed;
      s.basis = runtime->at("runtime").text();
      if (const auto v = runtime->find("precision")) s.precision = v->text();
      if (const auto v = runtime->find("threads")) s.threads = v->whole<int>(1);
      if (const auto v = runtime->find("one_core_factor")) {
        s.one_core_factor = v->number(kAboveZero);
      }
      if (const auto v = runtime->find("memory_mb_per_ms")) {
        s.memory_mb_per_ms = v->number(kAtLeastZero);
      }
      if (const auto v = runtime->find("per_host_ms")) s.per_host_ms = v->number(kAtLeastZero);
      if (const auto v = runtime->find("ms_per_mb")) s.ms_per_mb = v->number(kAtLeastZero);
      d.nn = s;
      d.nn_missing.clear();
    }
    return d;
  }
  // Reports written before device files existed (edgeprof 0.1 development versions).
  Device d;
  d.name = f.at("name").text();
  d.cores = f.at("cores").whole<int>(1);
  d.core_speed = f.at("core_speed").number(kAboveZero);
  d.memory_bytes = f.at("memory_bytes").whole<std::uint64_t>();
  d.swap_bytes = f.at("swap_bytes").whole<std::uint64_t>();
  d.io_read_bps = f.opt_whole<std::uint64_t>("io_read_bps");
  d.io_write_bps = f.opt_whole<std::uint64_t>("io_write_bps");
  d.pids_max = f.opt_whole<std::int64_t>("pids_max", 1);
  d.description = f.at("description").text();
  d.source = f.at("source").text();
  return d;
}

json projection_json(const ThreadsProjection& p) {
  return {{"threads", p.threads},
          {"speedup", p.speedup},
          {"table_threads", p.scaling.threads},
          {"table_speedup", p.scaling.speedup},
          {"graphs", p.scaling.graphs},
          {"contention", p.scaling.contention},
          {"loo_median_error", p.scaling.loo_median_error},
          {"loo_worst_error", p.scaling.loo_worst_error},
          {"loo_log_sd", p.scaling.loo_log_sd},
          {"workload_factor", p.workload_factor}};
}

ThreadsProjection projection_from(const Field& f) {
  ThreadsProjection p;
  p.threads = f.at("threads").whole<int>(1);
  p.speedup = f.at("speedup").number(kAboveZero);
  p.scaling.threads = f.at("table_threads").whole<int>(0);
  p.scaling.speedup = f.at("table_speedup").number(kAboveZero);
  p.scaling.graphs = f.at("graphs").whole<std::size_t>();
  // Negative where the board's table scaled better than linearly.
  p.scaling.contention = f.at("contention").number(kFinite);
  // Reports before it: none.
  if (const auto v = f.find("workload_factor")) p.workload_factor = v->number(kAboveZero);
  p.scaling.loo_median_error = f.at("loo_median_error").number(kAtLeastZero);
  p.scaling.loo_worst_error = f.at("loo_worst_error").number(kAtLeastZero);
  if (const auto v = f.find("loo_log_sd")) p.scaling.loo_log_sd = v->number(kAtLeastZero);
  return p;
}

json plan_json(const EmulationPlan& p) {
  return {{"cpus", format_cpu_list(p.cpus)},
          {"cpu_period_us", p.cpu_period_us},
          {"cpu_quota_us", p.cpu_quota_us},
          {"capacity_cores", p.capacity_cores()},
          {"memory_max_bytes", p.memory_max_bytes},
          {"swap_max_bytes", p.swap_max_bytes},
          {"pids_max", opt(p.pids_max)},
          {"io_device", p.io_device},
          {"io_read_bps", opt(p.io_read_bps)},
          {"io_write_bps", opt(p.io_write_bps)},
          {"keep_warm", p.keep_warm},
          {"core_groups", p.core_groups},
          {"core_quota_us", p.core_quota_us},
          {"core_quota_by_busy", p.core_quota_by_busy},
          {"quota_scale", p.quota_scale},
          {"emulation_log_sd", p.emulation_log_sd},
          {"host_drift", p.host_drift},
          {"drift_probed", p.drift_probed},
          {"own_share_check", p.own_share_check},
          {"threads_projection", p.threads_projection ? projection_json(*p.threads_projection)
                                                      : json(nullptr)},
          {"thread_env", p.thread_env},
          {"notes", p.notes},
          {"unapplied", p.unapplied}};
}

EmulationPlan plan_from(const Field& f) {
  EmulationPlan p;
  const Field cpus = f.at("cpus");
  try {
    p.cpus = parse_cpu_list(cpus.text());
  } catch (const Error&) {
    cpus.refuse("a CPU list such as \"0-3,6\"");
  }
  p.cpu_period_us = f.at("cpu_period_us").whole<std::uint64_t>();
  p.cpu_quota_us = f.at("cpu_quota_us").whole<std::uint64_t>();
  p.memory_max_bytes = f.at("memory_max_bytes").whole<std::uint64_t>();
  p.swap_max_bytes = f.at("swap_max_bytes").whole<std::uint64_t>();
  p.pids_max = f.opt_whole<std::int64_t>("pids_max", 1);
  if (const auto v = f.find("io_device")) p.io_device = v->text();
  p.io_read_bps = f.opt_whole<std::uint64_t>("io_read_bps");
  p.io_write_bps = f.opt_whole<std::uint64_t>("io_write_bps");
  if (const auto v = f.find("keep_warm")) p.keep_warm = v->flag();
  if (const auto v = f.find("core_groups")) {  // reports before per-core emulation lack them
    p.core_groups = v->whole<std::uint32_t>();
    p.core_quota_us = f.at("core_quota_us").whole<std::uint64_t>();
    if (const auto busy = f.find("core_quota_by_busy")) {
      p.core_quota_by_busy = busy->wholes<std::uint64_t>();
    }
  }
  if (const auto v = f.find("quota_scale")) p.quota_scale = v->number(kAboveZero);
  if (const auto v = f.find("emulation_log_sd")) p.emulation_log_sd = v->number(kAtLeastZero);
  if (const auto v = f.find("host_drift")) p.host_drift = v->number(kAboveZero);
  if (const auto v = f.find("drift_probed")) p.drift_probed = v->number(kAtLeastZero);
  if (const auto v = f.find("own_share_check")) p.own_share_check = v->number(kAtLeastZero);
  if (const auto v = f.set("threads_projection")) p.threads_projection = projection_from(*v);
  // Reports before edgeprof set the workload's threads lack it.
  if (const auto v = f.find("thread_env")) p.thread_env = v->text_map();
  p.notes = f.at("notes").texts();
  if (const auto v = f.find("unapplied")) p.unapplied = v->texts();
  return p;
}

json host_json(const HostInfo& h) {
  return {{"hostname", h.hostname},
          {"kernel", h.kernel},
          {"cpu_model", h.cpu_model},
          {"cpus", h.cpus},
          {"memory_bytes", h.memory_bytes}};
}

HostInfo host_from(const Field& f) {
  HostInfo h;
  h.hostname = f.at("hostname").text();
  h.kernel = f.at("kernel").text();
  h.cpu_model = f.at("cpu_model").text();
  h.cpus = f.at("cpus").whole<int>(0);
  h.memory_bytes = f.at("memory_bytes").whole<std::uint64_t>();
  return h;
}

// The summary fields no single metric makes, in one table, so writing and reading agree; the
// ones a metric makes alone are in detail::kMetricTable.
struct DoubleField {
  const char* name;
  std::optional<double> Summary::*member;
};
struct CountField {
  const char* name;
  std::optional<std::uint64_t> Summary::*member;
};
constexpr DoubleField kDoubleFields[] = {
    {"cpu_cores_avg", &Summary::cpu_cores_avg},
    {"cpu_cores_p95", &Summary::cpu_cores_p95},
    {"cpu_cores_peak", &Summary::cpu_cores_peak},
    {"cpu_capacity_avg", &Summary::cpu_capacity_avg},
    {"cpu_capacity_p95", &Summary::cpu_capacity_p95},
    {"cpu_capacity_peak", &Summary::cpu_capacity_peak},
    {"throttled_fraction", &Summary::throttled_fraction},
    {"interval_p50_s", &Summary::interval_p50_s},
    {"jitter_p50_s", &Summary::jitter_p50_s},
    {"jitter_p99_s", &Summary::jitter_p99_s},
};
constexpr CountField kCountFields[] = {
    {"memory_avg_bytes", &Summary::memory_avg_bytes},
    {"memory_sampled_peak_bytes", &Summary::memory_sampled_peak_bytes},
};

json summary_json(const Summary& s) {
  json j;
  for (const auto& f : kDoubleFields) j[f.name] = opt(s.*f.member);
  for (const auto& f : kCountFields) j[f.name] = opt(s.*f.member);
  for (const detail::MetricRow& row : detail::kMetricTable) {
    if (row.summary_count) j[row.summary_name] = opt(s.*row.summary_count);
    if (row.summary_seconds) j[row.summary_name] = opt(s.*row.summary_seconds);
  }
  j["pressure_host_wide"] = s.pressure_host_wide;
  j["cpu_window_s"] = s.cpu_window_s;
  j["cpu_windows_carried"] = s.cpu_windows_carried;
  j["samples"] = s.samples;
  j["interval_s"] = s.interval_s;
  j["missed_deadlines"] = s.missed_deadlines;
  return j;
}

Summary summary_from(const Field& f) {
  Summary s;
  // Core counts, shares of the capacity and of the periods, intervals: none below 0.
  for (const auto& d : kDoubleFields) s.*d.member = f.opt_number(d.name, kAtLeastZero);
  for (const auto& c : kCountFields) s.*c.member = f.opt_whole<std::uint64_t>(c.name);
  for (const detail::MetricRow& row : detail::kMetricTable) {
    if (row.summary_count) s.*row.summary_count = f.opt_whole<std::uint64_t>(row.summary_name);
    if (row.summary_seconds) s.*row.summary_seconds = f.opt_number(row.summary_name, kSeconds);
  }
  s.pressure_host_wide = f.at("pressure_host_wide").flag();
  s.cpu_window_s = f.at("cpu_window_s").number(kSeconds);
  // Older reports merged such windows instead; their count is kept under the new name.
  auto carried = f.find("cpu_windows_carried");
  if (!carried) carried = f.find("cpu_windows_merged");
  s.cpu_windows_carried = carried ? carried->whole<std::size_t>() : 0;
  s.samples = f.at("samples").whole<std::uint64_t>();
  s.interval_s = f.at("interval_s").number(kSeconds);
  s.missed_deadlines = f.at("missed_deadlines").whole<std::uint64_t>();
  return s;
}

json phase_json(const Phase& p) {
  return {{"name", p.name},
          {"start_s", p.start_s},
          {"end_s", p.end_s},
          {"wall_time_s", p.wall_time_s()},
          {"ended_by_exit", p.ended_by_exit},
          {"cpu_s", opt(p.cpu_s)},
          {"memory_start_bytes", opt(p.memory_start_bytes)},
          {"memory_peak_bytes", opt(p.memory_peak_bytes)},
          {"memory_net_peak_bytes", opt(p.memory_net_peak_bytes)},
          {"energy_j", opt(p.energy_j)}};
}

Phase phase_from(const Field& f) {
  Phase p;
  p.name = f.at("name").text();
  // The workload's own clock: a mark stamped before the release is before 0 (parse_phases).
  p.start_s = f.at("start_s").number(kFinite);
  p.end_s = f.at("end_s").number(kFinite);
  p.ended_by_exit = f.at("ended_by_exit").flag();
  p.cpu_s = f.opt_number("cpu_s", kSeconds);
  p.memory_start_bytes = f.opt_whole<std::uint64_t>("memory_start_bytes");
  p.memory_peak_bytes = f.opt_whole<std::uint64_t>("memory_peak_bytes");
  p.memory_net_peak_bytes = f.opt_whole<std::int64_t>("memory_net_peak_bytes");  // may fall
  p.energy_j = f.opt_number("energy_j", kAtLeastZero);
  return p;
}

json metric_names(const std::bitset<kMetricCount>& bits) {
  json names = json::array();
  for (int m = 0; m < kMetricCount; ++m) {
    if (bits.test(static_cast<size_t>(m))) names.push_back(to_string(static_cast<Metric>(m)));
  }
  return names;
}

std::bitset<kMetricCount> metric_bits(const Field& names) {
  std::bitset<kMetricCount> bits;
  for (const Field& n : names.elements()) {
    const auto m = metric_from_string(n.text());
    if (!m) n.refuse("a metric's name (\"cpu_usage_ns\", \"memory_current_bytes\", ...)");
    bits.set(static_cast<size_t>(*m));
  }
  return bits;
}

json series_json(const TimeSeries& s) {
  detail::check_shape(s);  // a report that could not be read back
  json columns = json::object();
  for (int m = 0; m < kMetricCount; ++m) {
    if (s.available.test(static_cast<size_t>(m))) {
      columns[to_string(static_cast<Metric>(m))] = s.values[static_cast<size_t>(m)];
    }
  }
  // Only the metrics read less often than every sample (older reports have none: every one).
  json every = json::object();
  for (int m = 0; m < kMetricCount; ++m) {
    const std::uint32_t n = s.read_every[static_cast<size_t>(m)];
    if (n > 1 && s.available.test(static_cast<size_t>(m))) {
      every[to_string(static_cast<Metric>(m))] = n;
    }
  }
  return {{"t_ns", s.t_ns},
          {"scheduled", s.scheduled},
          {"available", metric_names(s.available)},
          {"complete", metric_names(s.complete)},
          {"read_every", every},
          {"columns", columns}};
}

TimeSeries series_from(const Field& f) {
  TimeSeries s;
  const Field times = f.at("t_ns");
  s.t_ns = times.wholes<std::int64_t>();
  // detail::check_shape() would refuse to summarise it or write it back.
  if (const std::optional<std::size_t> i = detail::first_time_back(s.t_ns)) {
    times.elements()[*i].fail(fmt::format("{} is before the sample before it ({}): samples are "
                                          "in the order they were taken",
                                          s.t_ns[*i], s.t_ns[*i - 1]));
  }
  const Field scheduled = f.at("scheduled");
  s.scheduled = scheduled.wholes<std::uint8_t>(0, 1);
  // An empty column means every sample was scheduled (as to_csv and summarize read it): made
  // whole here, so that no reader of the series needs to know (to_pandas and plot() did not).
  if (s.scheduled.empty()) s.scheduled.assign(s.t_ns.size(), 1);
  if (s.scheduled.size() != s.t_ns.size()) {
    // detail::check_shape() would refuse to write it back.
    scheduled.fail(fmt::format("{} rows where t_ns has {}", s.scheduled.size(), s.t_ns.size()));
  }
  s.available = metric_bits(f.at("available"));
  const Field complete = f.at("complete");
  s.complete = metric_bits(complete);
  // Only a metric the run sampled can be complete (detail::check_shape() refuses the others).
  if (const std::optional<Metric> m = detail::first_complete_unavailable(s)) {
    for (const Field& name : complete.elements()) {
      if (metric_from_string(name.text()) != m) continue;
      name.fail(fmt::format("{} is not in series.available: a metric the run did not sample "
                            "cannot be complete",
                            shown(name.value())));
    }
  }
  const Field columns = f.at("columns");
  const auto every = f.find("read_every");  // older reports: every metric at every sample
  for (int m = 0; m < kMetricCount; ++m) {
    const char* name = to_string(static_cast<Metric>(m));
    auto& column = s.values[static_cast<size_t>(m)];
    if (const auto c = columns.find(name)) {
      column = c->wholes<std::uint64_t>();
      if (column.size() != s.t_ns.size()) {
        c->fail(fmt::format("{} rows where t_ns has {}", column.size(), s.t_ns.size()));
      }
    } else {
      column.assign(s.t_ns.size(), 0);  // not available in the run: zeros, as recorded
    }
    if (const auto n = every ? every->find(name) : std::nullopt) {
      if (!s.available.test(static_cast<size_t>(m))) {
        n->fail("given for a metric the run did not sample (not in available)");
      }
      s.read_every[static_cast<size_t>(m)] = n->whole<std::uint32_t>(1, 60'000);
    }
  }
  return s;
}

json source_json(const SourceStatus& s) {
  return {{"name", s.name},
          {"available", s.available},
          {"failed", s.failed},
          {"host_wide", s.host_wide},
          {"error", s.error},
          {"read_every", s.read_every}};
}

SourceStatus source_from(const Field& f) {
  const auto every = f.find("read_every");
  return {f.at("name").text(),
          f.at("available").flag(),
          f.at("failed").flag(),
          f.at("host_wide").flag(),
          f.at("error").text(),
          every ? every->whole<std::uint32_t>(1) : std::uint32_t{1}};
}

json result_json(const Result& r) {
  json j;
  j["schema"] = "edgeprof.result";
  j["schema_version"] = kReportSchemaVersion;
  j["edgeprof_version"] = r.edgeprof_version;
  j["host"] = host_json(r.host);
  j["command"] = r.command;
  j["exit_code"] = opt(r.exit_code);
  j["signal"] = opt(r.signal);
  j["timed_out"] = r.timed_out;
  j["oom_killed"] = r.oom_killed;
  j["ok"] = r.ok();
  j["wall_time_s"] = num(r.wall_time_s);
  j["cpu_user_s"] = num(r.cpu_user_s);
  j["cpu_system_s"] = num(r.cpu_system_s);
  j["peak_memory_bytes"] = opt(r.peak_memory_bytes);
  j["peak_memory_source"] = r.peak_memory_source;
  for (const detail::MetricRow& row : detail::kMetricTable) {  // the end-of-run counters
    if (row.result_count) j[row.result_name] = r.*row.result_count;
    if (row.result_seconds) j[row.result_name] = num(r.*row.result_seconds);
  }
  j["child_max_rss_bytes"] = r.child_max_rss_bytes;
  j["keep_warm_cpu_s"] = num(r.keep_warm_cpu_s);
  j["provenance"] = {{"wall_time_s", "measured"},     {"cpu_user_s", "measured"},
                     {"cpu_system_s", "measured"},    {"peak_memory_bytes", "measured"},
                     {"throttled_s", "measured"},     {"child_max_rss_bytes", "measured"},
                     {"keep_warm_cpu_s", "measured"},
                     {"summary.cpu_cores_avg", "measured"},
                     {"summary.cpu_cores_p95", "sampled"},
                     {"summary.cpu_cores_peak", "sampled"},
                     {"summary.memory_*", "sampled"}, {"summary.io_*", "measured"},
                     {"summary.net_*", "measured"},   {"summary.pressure_*", "measured"},
                     {"summary.tasks_peak", "sampled"},
                     {"phases.start_s/end_s", "measured"},
                     {"phases.cpu_s/memory_*", "sampled"},
                     {"energy_j", "estimated"},
                     {"phases.energy_j", "estimated"},
                     {"speed_changes.t_s", "measured"},
                     {"speed_changes.memory_mb_per_ms", "estimated"},
                     {"runtimes_seen", "sampled"},
                     {"thread_moves", "measured"},
                     {"threads_at_once", "sampled"},
                     {"core_quota_changes", "measured"}};
  j["placement"] = r.placement;
  j["cgroup_mode"] = to_string(r.cgroup_mode);
  j["network_isolated"] = r.network_isolated;
  j["unapplied"] = r.unapplied;
  j["warnings"] = r.warnings;
  j["runtimes_seen"] = r.runtimes_seen;
  j["thread_env"] = r.thread_env;
  j["thread_moves"] = r.thread_moves;
  j["threads_at_once"] = opt(r.threads_at_once);
  j["core_quota_changes"] = r.core_quota_changes;
  j["energy_j"] = opt(r.energy_j);
  j["speed_changes"] = json::array();
  for (const SpeedChange& c : r.speed_changes) {
    j["speed_changes"].push_back({{"t_s", num(c.t_s)},
                                  {"factor", c.factor},
                                  {"cpu_quota_us", c.cpu_quota_us},
                                  {"cpu_period_us", c.cpu_period_us},
                                  {"error", c.error}});
    if (!c.runtime.empty()) j["speed_changes"].back()["runtime"] = c.runtime;
    if (c.memory_mb_per_ms > 0) j["speed_changes"].back()["memory_mb_per_ms"] = c.memory_mb_per_ms;
  }
  j["device"] = device_json(r.device);
  j["plan"] = plan_json(r.plan);
  j["summary"] = summary_json(r.summary);
  j["phases"] = json::array();
  for (const Phase& p : r.phases) {
    j["phases"].push_back(phase_json(p));
    // Derived (CoreEmulation::projected); not read back: the plan carries the speed-up.
    if (const auto projected = r.projected_s(p.wall_time_s())) {
      j["phases"].back()["projected_wall_time_s"] = num(*projected);
    }
    j["phases"].back()["all_cores_wall_time_s"] = num(r.all_cores_s(p.wall_time_s()));
    j["phases"].back()["all_cores_energy_j"] =
        p.cpu_s ? opt(r.all_cores_energy_j(p.wall_time_s(), *p.cpu_s)) : json(nullptr);
  }
  if (const auto projected = r.projected_s(r.wall_time_s)) {
    j["projected_wall_time_s"] = num(*projected);
    j["provenance"]["projected_wall_time_s"] = "projected";
    j["provenance"]["phases.projected_wall_time_s"] = "projected";
  }
  j["all_cores_wall_time_s"] = num(r.all_cores_s(r.wall_time_s));
  j["provenance"]["all_cores_wall_time_s"] = figure_provenance(r, "all_cores_wall_time_s");
  j["provenance"]["phases.all_cores_wall_time_s"] = figure_provenance(r, "all_cores_wall_time_s");
  j["all_cores_energy_j"] = opt(r.all_cores_energy_j(r.wall_time_s, r.cpu_user_s + r.cpu_system_s));
  j["provenance"]["all_cores_energy_j"] = figure_provenance(r, "all_cores_energy_j");
  j["provenance"]["phases.all_cores_energy_j"] = figure_provenance(r, "all_cores_energy_j");
  if (const auto& i = r.device_interval) {
    j["device_interval"] = {{"level", i->level},
                            {"low", num(i->low)},
                            {"high", num(i->high)},
                            {"models", i->models},
                            {"emulation_log_sd", num(i->emulation_log_sd)},
                            {"projection_log_sd", num(i->projection_log_sd)}};
    j["provenance"]["device_interval"] = "estimated";
  } else {
    j["device_interval"] = nullptr;
  }
  j["sources"] = json::array();
  for (const SourceStatus& s : r.sources) j["sources"].push_back(source_json(s));
  j["series"] = series_json(r.series);
  return j;
}

void check_schema(const Field& f, const char* schema) {
  const json& j = f.value();
  if (!j.is_object() || !j.contains("schema") || j.at("schema") != schema) {
    if (!f.path().empty()) f.refuse(fmt::format("an object with \"schema\": \"{}\"", schema));
    throw Error(fmt::format("this JSON is not an edgeprof report: expected \"schema\": \"{}\"",
                            schema));
  }
  const int found = f.at("schema_version").whole<int>(1);
  if (found > kReportSchemaVersion) {
    throw Error(fmt::format("this report has schema version {}, newer than this edgeprof ({}) "
                            "reads ({}): upgrade edgeprof",
                            found, version(), kReportSchemaVersion));
  }
}

Result result_from(const Field& f) {
  check_schema(f, "edgeprof.result");
  Result r;
  r.edgeprof_version = f.at("edgeprof_version").text();
  r.host = host_from(f.at("host"));
  r.command = f.at("command").texts();
  r.exit_code = f.opt_whole<int>("exit_code", 0, 255);  // waitpid's WEXITSTATUS
  r.signal = f.opt_whole<int>("signal", 1, 127);        // and WTERMSIG: 7 bits
  r.timed_out = f.at("timed_out").flag();
  r.oom_killed = f.at("oom_killed").flag();
  r.wall_time_s = f.at("wall_time_s").number_or_nan(kSeconds);
  r.cpu_user_s = f.at("cpu_user_s").number_or_nan(kSeconds);
  r.cpu_system_s = f.at("cpu_system_s").number_or_nan(kSeconds);
  r.peak_memory_bytes = f.opt_whole<std::uint64_t>("peak_memory_bytes");
  r.peak_memory_source = f.at("peak_memory_source").text();
  for (const detail::MetricRow& row : detail::kMetricTable) {
    // A counter newer than the report stays 0.
    const auto v = row.result_name ? f.find(row.result_name) : std::nullopt;
    if (!v) continue;
    if (row.result_count) r.*row.result_count = v->whole<std::uint64_t>();
    if (row.result_seconds) r.*row.result_seconds = v->number_or_nan(kSeconds);
  }
  r.child_max_rss_bytes = f.at("child_max_rss_bytes").whole<std::uint64_t>();
  if (const auto v = f.find("keep_warm_cpu_s")) r.keep_warm_cpu_s = v->number_or_nan(kSeconds);
  r.placement = f.at("placement").text();
  const Field mode = f.at("cgroup_mode");
  try {
    r.cgroup_mode = cgroup_mode_from_string(mode.text());
  } catch (const Error&) {
    mode.refuse("\"unified\", \"hybrid\" or \"legacy\"");
  }
  r.network_isolated = f.at("network_isolated").flag();
  r.unapplied = f.at("unapplied").texts();
  r.warnings = f.at("warnings").texts();
  // Reports before edgeprof read the workload's maps lack it.
  if (const auto v = f.find("runtimes_seen")) r.runtimes_seen = v->text_map();
  if (const auto v = f.find("thread_env")) r.thread_env = v->text_map();
  if (const auto v = f.find("thread_moves")) r.thread_moves = v->whole<std::uint64_t>();
  // A mean count of runnable threads.
  r.threads_at_once = f.opt_number("threads_at_once", kAtLeastOne);
  if (const auto v = f.find("core_quota_changes")) {
    r.core_quota_changes = v->whole<std::uint64_t>();
  }
  r.energy_j = f.opt_number("energy_j", kAtLeastZero);
  if (const auto v = f.set("device_interval")) {  // reports before intervals existed have none
    TimeInterval i;
    i.level = v->at("level").number(kAboveZero);
    i.low = v->at("low").number_or_nan(kAboveZero);
    i.high = v->at("high").number_or_nan(kAboveZero);
    i.models = v->at("models").whole<int>(0);
    // Reports before them have the speed's error only.
    if (const auto e = v->set("emulation_log_sd")) i.emulation_log_sd = e->number(kAtLeastZero);
    if (const auto e = v->set("projection_log_sd")) i.projection_log_sd = e->number(kAtLeastZero);
    r.device_interval = i;
  }
  if (const auto changes = f.find("speed_changes")) {
    for (const Field& c : changes->elements()) {
      SpeedChange change;
      // Reports of 2026-11-27 (8e36fb6..935c569) may hold a change stamped just before 0
      // (the step fell due at the release): read as at 0. Further before is no run's.
      const Field t = c.at("t_s");
      change.t_s = t.number_or_nan(kFinite);
      if (change.t_s < -1.0) t.refuse("a time from 1 s before the workload's release on");
      if (change.t_s < 0) change.t_s = 0;
      change.factor = c.at("factor").number(kAboveZero);
      change.cpu_quota_us = c.at("cpu_quota_us").whole<std::uint64_t>();
      change.cpu_period_us = c.at("cpu_period_us").whole<std::uint64_t>();
      change.error = c.at("error").text();
      if (const auto v = c.find("runtime")) change.runtime = v->text();
      if (const auto v = c.find("memory_mb_per_ms")) {
        change.memory_mb_per_ms = v->number(kAtLeastZero);
      }
      r.speed_changes.push_back(std::move(change));
    }
  }
  r.device = device_from(f.at("device"));
  r.plan = plan_from(f.at("plan"));
  r.summary = summary_from(f.at("summary"));
  for (const Field& p : f.at("phases").elements()) r.phases.push_back(phase_from(p));
  for (const Field& s : f.at("sources").elements()) r.sources.push_back(source_from(s));
  r.series = series_from(f.at("series"));
  return r;
}

json statistic_json(const Statistic& s) {
  return {{"n", s.n},           {"median", num(s.median)}, {"mean", num(s.mean)},
          {"stddev", num(s.stddev)}, {"ci95_low", num(s.ci95_low)},
          {"ci95_high", num(s.ci95_high)}, {"min", num(s.min)}, {"max", num(s.max)}};
}

// Figures may be negative (a phase's memory_net_peak_bytes), and are written through num().
Statistic statistic_from(const Field& f) {
  Statistic s;
  s.n = f.at("n").whole<std::size_t>();
  s.median = f.at("median").number_or_nan(kFinite);
  s.mean = f.at("mean").number_or_nan(kFinite);
  s.stddev = f.at("stddev").number_or_nan(kAtLeastZero);
  s.ci95_low = f.at("ci95_low").number_or_nan(kFinite);
  s.ci95_high = f.at("ci95_high").number_or_nan(kFinite);
  s.min = f.at("min").number_or_nan(kFinite);
  s.max = f.at("max").number_or_nan(kFinite);
  return s;
}

json repeated_json(const RepeatedResult& r) {
  json j;
  j["schema"] = "edgeprof.repeated";
  j["schema_version"] = kReportSchemaVersion;
  j["edgeprof_version"] = version();
  j["repeat"] = r.runs.size();
  j["warmup"] = r.warmups.size();
  j["all_ok"] = r.all_ok();
  j["stats"] = json::object();
  for (const auto& [name, s] : r.stats) j["stats"][name] = statistic_json(s);
  j["runs"] = json::array();
  for (const Result& x : r.runs) j["runs"].push_back(result_json(x));
  j["warmups"] = json::array();
  for (const Result& x : r.warmups) j["warmups"].push_back(result_json(x));
  return j;
}

// Parses JSON text and reads it with `fn`, turning a field that cannot be read and the JSON
// library's exceptions into edgeprof errors that say where.
template <class Fn>
auto from_text(std::string_view text, const char* what, Fn&& fn) {
  try {
    const json j = parse_report(text);
    return fn(Field(j, ""));
  } catch (const BadField& e) {
    throw Error(fmt::format("cannot read {} from JSON: field '{}': {}; give the file `edgeprof "
                            "run --json` wrote",
                            what, e.path, e.problem));
  } catch (const json::exception& e) {
    throw Error(fmt::format("cannot read {} from JSON: {}", what, e.what()));
  }
}

}  // namespace

std::optional<double> Result::projected_s(double measured_s) const {
  if (!plan.threads_projection || !(plan.threads_projection->speedup > 0)) return std::nullopt;
  return measured_s / plan.threads_projection->speedup;
}

std::string exit_text(const Result& r) {
  if (r.timed_out) return "killed at the timeout";
  if (r.oom_killed) {
    return fmt::format("killed by the out-of-memory killer ({} task{} killed{})", r.oom_kills,
                       r.oom_kills == 1 ? "" : "s",
                       r.signal ? fmt::format(", workload ended by signal {}", *r.signal) : "");
  }
  if (r.signal) return fmt::format("killed by signal {}", *r.signal);
  if (!r.exit_code) return "exit status lost (reaped by another wait)";
  return fmt::format("exit code {}", *r.exit_code);
}

namespace {

std::string size_or(const std::optional<std::uint64_t>& v) {
  return v ? format_size(*v) : std::string("n/a");
}

std::string seconds_or(const std::optional<double>& v, const char* fmt_spec = "{:.3f} s") {
  return v ? fmt::format(fmt::runtime(fmt_spec), *v) : std::string("n/a");
}

std::string percent_or(const std::optional<double>& v) {
  return v ? fmt::format("{:.0f}%", *v * 100) : std::string("n/a");
}

}  // namespace

std::string to_text(const Result& r) {
  const EmulationPlan& p = r.plan;
  const Summary& s = r.summary;
  std::string out;
  auto row = [&](std::string_view label, const std::string& value, std::string_view how) {
    out += fmt::format("{:<14}{}{}{}\n", label, value, how.empty() ? "" : "   ", how);
  };
  // Projected: one of the device's cores ran; the figures below are that core's unless they
  // say "with all N cores".
  const std::string one_of =
      p.threads_projection && r.device.cores == 1
          ? fmt::format("one core of its {} ran, projected to all {}",
                        p.threads_projection->threads, p.threads_projection->threads)
          : std::string();
  row("device",
      one_of.empty()
          ? fmt::format("{} ({} cores x speed {}, {} memory)", r.device.name, r.device.cores,
                        describe_core_speed(r.device), format_size(r.device.memory_bytes))
          : fmt::format("{} ({}; speed {}, {} memory)", r.device.name, one_of,
                        describe_core_speed(r.device), format_size(r.device.memory_bytes)),
      "");
  row("emulation",
      fmt::format("cpus {}, quota {:.3g} cores ({} us / {} us), memory.max {}, cgroup {}, "
                  "child placed by {}{}",
                  format_cpu_list(p.cpus), p.capacity_cores(), p.cpu_quota_us, p.cpu_period_us,
                  format_size(p.memory_max_bytes), describe(r.cgroup_mode), r.placement,
                  r.network_isolated ? ", own network namespace (loopback only)" : ""),
      "");
  row("outcome", exit_text(r), "");
  row("wall time", fmt::format("{:.6f} s", r.wall_time_s),
      "measured (monotonic clock, exec to exit)");
  if (const auto& proj = p.threads_projection; proj && r.projected_s(r.wall_time_s)) {
    row("projected",
        fmt::format("{:.6f} s wall with all {} cores = the time measured on one device core / "
                    "{:.3g}, the board's speed-up from 1 to {} threads{} (a graph's own was "
                    "{:.0f}% from it in the median, {:.0f}% at worst)",
                    *r.projected_s(r.wall_time_s), proj->threads, proj->speedup,
                    proj->threads,
                    proj->workload_factor != 1.0
                        ? fmt::format(" ({:.3g}) x the workload's own scaling ({:.3g})",
                                      proj->speedup / proj->workload_factor,
                                      proj->workload_factor)
                        : std::string(),
                    100 * proj->scaling.loo_median_error, 100 * proj->scaling.loo_worst_error),
        "projected from the published one- and multi-thread tables");
    if (r.threads_at_once) {
      row("busy threads", fmt::format("{:.2f} at once (1 for one; more shared the one core's "
                                      "quota and make the projection too slow)",
                                      *r.threads_at_once),
          "sampled (threads runnable at once, about every 100 ms)");
    }
  }
  if (const auto& i = r.device_interval) {
    const double t = r.projected_s(r.wall_time_s).value_or(r.wall_time_s);
    row("on the device",
        fmt::format("{:.3f} .. {:.3f} s wall ({:.0f}% interval: {:.2f}-{:.2f}x the {} time, from "
                    "the speed's held-out errors over {} {}{}{})",
                    t * i->low, t * i->high, 100 * i->level, i->low, i->high,
                    r.projected_s(r.wall_time_s) ? "projected" : "measured", i->models,
                    r.device.nn && r.device.nn->basis != "ncnn" ? "models" : "graphs",
                    i->projection_log_sd > 0
                        ? fmt::format(", the board's speed-up's spread (sd {:.2f})",
                                      i->projection_log_sd)
                        : std::string(),
                    i->emulation_log_sd > 0
                        ? fmt::format(" and the emulation's spread on this host (sd {:.2f} in "
                                      "log time)",
                                      i->emulation_log_sd)
                        : std::string("; the emulation's own error not included")),
        "estimated");
  }
  row("cpu time", fmt::format("{:.3f} s user + {:.3f} s system", r.cpu_user_s, r.cpu_system_s),
      "measured (cgroup counters)");
  if (s.cpu_cores_avg) {
    row("cpu use",
        fmt::format("avg {:.2f} / p95 {} / peak {} host cores = {} / {} / {} of the device{}",
                    *s.cpu_cores_avg, seconds_or(s.cpu_cores_p95, "{:.2f}"),
                    seconds_or(s.cpu_cores_peak, "{:.2f}"), percent_or(s.cpu_capacity_avg),
                    percent_or(s.cpu_capacity_p95), percent_or(s.cpu_capacity_peak),
                    one_of.empty() ? "" : "'s core"),
        fmt::format("avg measured, p95/peak sampled over {:g} ms windows{}",
                    s.cpu_window_s * 1e3,
                    s.cpu_windows_carried
                        ? fmt::format(" ({} counted more CPU than the quota lets through, "
                                      "repaid by throttling after: the excess carried into "
                                      "the windows after)",
                                      s.cpu_windows_carried)
                        : std::string()));
  }
  if (r.peak_memory_bytes) {
    row("peak memory", format_size(*r.peak_memory_bytes),
        fmt::format("measured (kernel counter {})", r.peak_memory_source));
  } else {
    row("peak memory", "unavailable (no memory controller)", "");
  }
  if (s.memory_avg_bytes) {
    row("memory",
        fmt::format("avg {}, anon peak {}, page cache peak {}", format_size(*s.memory_avg_bytes),
                    size_or(s.memory_anon_peak_bytes), size_or(s.memory_file_peak_bytes)),
        "sampled");
  }
  row("throttled",
      fmt::format("{:.3f} s in {} of {} periods{}", r.throttled_s, r.throttled_periods, r.periods,
                  s.throttled_fraction ? fmt::format(" ({})", percent_or(s.throttled_fraction))
                                       : ""),
      p.core_groups ? "measured (cpu.stat of the core groups, summed)" : "measured (cpu.stat)");
  if (p.core_groups) {
    row("per-core",
        fmt::format("{} core groups of {} us / {} us each; threads moved between them {} time{}{}",
                    p.core_groups, p.core_quota_us, p.cpu_period_us, r.thread_moves,
                    r.thread_moves == 1 ? "" : "s",
                    p.core_quota_by_busy.empty()
                        ? std::string()
                        : fmt::format("; quota set for the busy threads {} time{} ({} us with "
                                      "all busy)",
                                      r.core_quota_changes, r.core_quota_changes == 1 ? "" : "s",
                                      p.core_quota_by_busy.back())),
        "moves measured");
  }
  if (p.keep_warm) {
    row("keep-warm",
        fmt::format("{:.3f} s of CPU on cpus {}, outside the slice, not in the cpu time above",
                    r.keep_warm_cpu_s, format_cpu_list(p.cpus)),
        "measured (thread clocks)");
  }
  if (s.io_read_bytes || s.io_write_bytes) {
    row("block i/o",
        fmt::format("read {} in {} ops, written {} in {} ops", size_or(s.io_read_bytes),
                    s.io_read_ops.value_or(0), size_or(s.io_write_bytes),
                    s.io_write_ops.value_or(0)),
        "measured");
  }
  if (s.net_rx_bytes) {
    row("network", fmt::format("received {}, sent {}", size_or(s.net_rx_bytes),
                               size_or(s.net_tx_bytes)),
        "measured (own network namespace)");
  }
  if (s.pressure_cpu_some_s || s.pressure_memory_some_s || s.pressure_io_some_s) {
    row("stalls (PSI)",
        fmt::format("cpu {}, memory {} (full {}), io {} (full {})",
                    seconds_or(s.pressure_cpu_some_s), seconds_or(s.pressure_memory_some_s),
                    seconds_or(s.pressure_memory_full_s), seconds_or(s.pressure_io_some_s),
                    seconds_or(s.pressure_io_full_s)),
        s.pressure_host_wide ? "measured, HOST-WIDE (cgroup v1 has no per-slice pressure)"
                             : "measured");
  }
  if (s.tasks_peak) row("tasks", fmt::format("peak {}", *s.tasks_peak), "sampled");
  if (s.samples) {
    row("sampling",
        fmt::format("{} samples every {:g} ms; achieved {} ms median, lateness p50 {} / p99 {} "
                    "ms{}",
                    s.samples, s.interval_s * 1e3,
                    s.interval_p50_s ? fmt::format("{:.3f}", *s.interval_p50_s * 1e3) : "n/a",
                    s.jitter_p50_s ? fmt::format("{:.3f}", *s.jitter_p50_s * 1e3) : "n/a",
                    s.jitter_p99_s ? fmt::format("{:.3f}", *s.jitter_p99_s * 1e3) : "n/a",
                    s.missed_deadlines ? fmt::format(", {} deadlines missed", s.missed_deadlines)
                                       : ""),
        "");
  }
  for (const Phase& ph : r.phases) {
    row("phase",
        fmt::format("{}: {:.3f} s wall{}, cpu {}, memory {} -> peak {} (net {}{})", ph.name,
                    ph.wall_time_s(), ph.ended_by_exit ? " (to exit)" : "",
                    seconds_or(ph.cpu_s), size_or(ph.memory_start_bytes),
                    size_or(ph.memory_peak_bytes),
                    ph.memory_net_peak_bytes && *ph.memory_net_peak_bytes < 0 ? "" : "+",
                    ph.memory_net_peak_bytes
                        ? format_signed_size(static_cast<double>(*ph.memory_net_peak_bytes))
                        : "n/a"),
        "wall measured, rest sampled");
    if (const auto projected = r.projected_s(ph.wall_time_s())) {
      row("phase", fmt::format("{}: {:.3f} s wall with all {} cores", ph.name, *projected,
                               p.threads_projection->threads),
          "projected");
    }
  }
  if (r.energy_j) {
    std::string phases;
    for (const Phase& ph : r.phases) {
      if (ph.energy_j) phases += fmt::format(", {} {:.3g} J", ph.name, *ph.energy_j);
    }
    row("energy", fmt::format("{:.3g} J on the device{}{}", *r.energy_j,
                              one_of.empty() ? "" : "'s one core over its measured time", phases),
        fmt::format("estimated from the device's idle {:g} W and loaded {:g} W and the measured "
                    "CPU use",
                    r.device.power.idle_watts.value_or(0), r.device.power.loaded_watts.value_or(0)));
    const auto all = r.all_cores_energy_j(r.wall_time_s, r.cpu_user_s + r.cpu_system_s);
    if (p.threads_projection && all) {
      std::string all_phases;
      for (const Phase& ph : r.phases) {
        if (!ph.cpu_s) continue;
        if (auto e = r.all_cores_energy_j(ph.wall_time_s(), *ph.cpu_s)) {
          all_phases += fmt::format(", {} {:.3g} J", ph.name, *e);
        }
      }
      row("energy", fmt::format("{:.3g} J with all {} cores over the projected time{}", *all,
                                p.threads_projection->threads, all_phases),
          "estimated, projected (the whole board, each core as busy as the one that ran)");
    }
  }
  for (const SpeedChange& c : r.speed_changes) {
    if (!c.runtime.empty()) {
      const bool counted = c.memory_mb_per_ms > 0;
      const std::string to =
          detail::runtime_name(c.runtime) + " speed" +
          (counted ? fmt::format(" with a memory term of {:.4g} MB per ms", c.memory_mb_per_ms)
                   : "");
      row("speed change",
          c.error.empty() ? fmt::format("at {:.3f} s: to the {} (quota {} us per {} us)", c.t_s,
                                        to, c.cpu_quota_us, c.cpu_period_us)
                          : fmt::format("at {:.3f} s: to the {} FAILED: {}", c.t_s, to, c.error),
          counted ? "time measured; the workload's activations counted, its CPU time measured"
                  : "time measured; the workload loaded the runtime");
      continue;
    }
    row("speed change",
        c.error.empty()
            ? fmt::format("at {:.3f} s: x{:g} of core speed (quota {} us per {} us)", c.t_s,
                          c.factor, c.cpu_quota_us, c.cpu_period_us)
            : fmt::format("at {:.3f} s: x{:g} FAILED: {}", c.t_s, c.factor, c.error),
        "time measured; from the device's speed schedule");
  }
  if (!r.runtimes_seen.empty()) {
    std::string seen;
    for (const auto& [id, library] : r.runtimes_seen) {
      seen += fmt::format("{}{} ({})", seen.empty() ? "" : ", ", detail::runtime_name(id),
                          library);
    }
    row("runtimes", seen, "sampled (the workload's /proc/PID/maps)");
  }
  if (!r.thread_env.empty()) {
    std::string set;
    for (const auto& [name, value] : r.thread_env) {
      set += fmt::format("{}{}={}", set.empty() ? "" : " ", name, value);
    }
    row("environment", set, "set by edgeprof where the workload's own did not");
  }
  for (const std::string& note : p.notes) row("note", note, "");
  for (const std::string& u : r.unapplied) row("NOT APPLIED", u, "");
  for (const std::string& w : r.warnings) row("warning", w, "");
  return detail::printable_lines(out);
}

// A byte that is not UTF-8 (a workload's argument, a path) is written as U+FFFD: JSON holds
// text only, and the report must still be written.
std::string to_json(const Result& r) {
  return result_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result result_from_json(std::string_view text) {
  return from_text(text, "an edgeprof result", [](const Field& f) { return result_from(f); });
}

namespace {

// The CSV's first line, a comment naming its format and the edgeprof that wrote it (the
// comment prefix of the W3C's CSV dialect; pandas reads past it with comment="#").
constexpr int kCsvSchemaVersion = 1;
std::string csv_marker(const char* schema) {
  return fmt::format("# {} schema_version={} edgeprof_version={}\n", schema, kCsvSchemaVersion,
                     version());
}

// The CSV's header for `columns` (metrics) and whether it has cpu_cores, after `lead`.
std::string csv_header(std::string_view lead, const std::bitset<kMetricCount>& columns,
                       bool with_cores) {
  std::string out(lead);
  out += "t_s,scheduled";
  for (int m = 0; m < kMetricCount; ++m) {
    if (columns.test(static_cast<size_t>(m))) {
      out += ',';
      out += to_string(static_cast<Metric>(m));
    }
  }
  if (with_cores) out += ",cpu_cores";
  out += '\n';
  return out;
}

// `s`'s rows under that header, each after `lead`; a column `s` lacks is left empty.
void csv_rows(std::string& out, std::string_view lead, const TimeSeries& s,
              const std::vector<double>& cores, const std::bitset<kMetricCount>& columns,
              bool with_cores) {
  for (size_t i = 0; i < s.size(); ++i) {
    out += lead;
    out += fmt::format("{:.9f},{}", double(s.t_ns[i]) / 1e9,
                       i < s.scheduled.size() ? int(s.scheduled[i]) : 1);
    for (int m = 0; m < kMetricCount; ++m) {
      if (!columns.test(static_cast<size_t>(m))) continue;
      if (s.available.test(static_cast<size_t>(m))) {
        out += fmt::format(",{}", s.values[static_cast<size_t>(m)][i]);
      } else {
        out += ',';
      }
    }
    if (with_cores) out += i && !cores.empty() ? fmt::format(",{:.6f}", cores[i - 1]) : ",";
    out += '\n';
  }
}

}  // namespace

std::string to_csv(const Result& r) {
  const TimeSeries& s = r.series;
  const auto cores = s.cpu_cores();
  const bool with_cores = !cores.empty();
  std::string out = csv_marker("edgeprof.series") + csv_header("", s.available, with_cores);
  csv_rows(out, "", s, cores, s.available, with_cores);
  return out;
}

std::string to_csv(const RepeatedResult& r) {
  std::bitset<kMetricCount> columns;
  bool with_cores = false;
  std::vector<std::vector<double>> cores;
  cores.reserve(r.runs.size());
  for (const Result& run : r.runs) {
    columns |= run.series.available;
    cores.push_back(run.series.cpu_cores());
    with_cores = with_cores || !cores.back().empty();
  }
  std::string out =
      csv_marker("edgeprof.repeated_series") + csv_header("run,", columns, with_cores);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    csv_rows(out, fmt::format("{},", i + 1), r.runs[i].series, cores[i], columns, with_cores);
  }
  return out;
}

bool operator==(const Result& a, const Result& b) { return result_json(a) == result_json(b); }
bool operator==(const Summary& a, const Summary& b) { return summary_json(a) == summary_json(b); }
bool operator==(const Phase& a, const Phase& b) { return phase_json(a) == phase_json(b); }
bool operator==(const HostInfo& a, const HostInfo& b) { return host_json(a) == host_json(b); }
bool operator==(const Statistic& a, const Statistic& b) {
  return statistic_json(a) == statistic_json(b);
}
bool operator==(const RepeatedResult& a, const RepeatedResult& b) {
  return repeated_json(a) == repeated_json(b);
}

const Statistic& RepeatedResult::stat(const std::string& name) const {
  auto it = stats.find(name);
  if (it == stats.end()) {
    std::vector<std::string> names;
    for (const auto& [n, s] : stats) names.push_back(n);
    throw Error(fmt::format("no statistic '{}': a repeated result describes the figures every "
                            "run has ({}); name one of those, or a single run's figure from "
                            "runs[i]",
                            name, fmt::join(names, ", ")));
  }
  return it->second;
}

bool RepeatedResult::all_ok() const {
  for (const Result& r : runs) {
    if (!r.ok()) return false;
  }
  return !runs.empty();
}

std::string to_text(const RepeatedResult& r) {
  std::string out;
  if (!r.runs.empty()) {
    const Result& first = r.runs.front();
    out += fmt::format("{} runs (+{} warm-up) of {} on {}{}; {}\n", r.runs.size(),
                       r.warmups.size(), fmt::join(first.command, " "), first.device.name,
                       first.plan.threads_projection
                           ? fmt::format(" (one of its {} cores ran: wall_time_s and the cpu "
                                         "figures are that core's; all_cores_* and projected_* "
                                         "are projected to all {})",
                                         first.plan.threads_projection->threads,
                                         first.plan.threads_projection->threads)
                           : std::string(),
                       r.all_ok() ? "all succeeded" : "SOME FAILED (see runs)");
  }
  // Each column as wide as its widest cell, at least one space apart: a phase's figure names run
  // past 34 characters and a value such as -2.29019e+07 past 11, which pushed rows out of line.
  // Columns: name, median, mean, stddev, the interval's low and high (".." between), min, max.
  std::vector<std::array<std::string, 8>> rows;
  for (const auto& [name, s] : r.stats) {
    const auto g = [](double v) { return fmt::format("{:.6g}", v); };
    rows.push_back({name, g(s.median), g(s.mean), fmt::format("{:.4g}", s.stddev), g(s.ci95_low),
                    g(s.ci95_high), g(s.min), g(s.max)});
  }
  std::array<std::size_t, 8> width = {34, 12, 12, 12, 13, 10, 12, 12};  // the least
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size() + (c == 5 ? 0 : 1));  // high: left-aligned
    }
  }
  out += fmt::format("{:<{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}\n", "figure", width[0], "median",
                     width[1], "mean", width[2], "stddev", width[3], "95% CI of the mean",
                     width[4] + 4 + width[5], "min", width[6], "max", width[7]);
  for (const auto& row : rows) {
    out += fmt::format("{:<{}}{:>{}}{:>{}}{:>{}}{:>{}} .. {:<{}}{:>{}}{:>{}}\n", row[0], width[0],
                       row[1], width[1], row[2], width[2], row[3], width[3], row[4], width[4],
                       row[5], width[5], row[6], width[6], row[7], width[7]);
  }
  return detail::printable_lines(out);
}

std::string to_json(const RepeatedResult& r) {
  // repeated_from_json() refuses it: no run_repeated() makes one.
  if (r.runs.empty()) {
    throw Error("to_json: this RepeatedResult holds no runs; a report of it could not be read");
  }
  return repeated_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

RepeatedResult repeated_from_json(std::string_view text) {
  return from_text(text, "an edgeprof repeated result", [](const Field& f) {
    check_schema(f, "edgeprof.repeated");
    RepeatedResult r;
    const Field runs = f.at("runs");
    for (const Field& x : runs.elements()) r.runs.push_back(result_from(x));
    // run_repeated makes at least one: without, every reader's first run is out of bounds.
    if (r.runs.empty()) runs.fail("empty; a repeated report holds at least one run");
    for (const Field& x : f.at("warmups").elements()) r.warmups.push_back(result_from(x));
    for (const auto& [name, s] : f.at("stats").members()) r.stats[name] = statistic_from(s);
    // Figures added since the report was written (all_cores_wall_time_s, the energies): their
    // statistics from the runs, as describe_runs() would have made them then.
    for (auto& [name, s] : describe_runs(r.runs)) r.stats.try_emplace(name, std::move(s));
    return r;
  });
}

}  // namespace edgeprof
