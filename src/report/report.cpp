// Reports as text for people, JSON for programs (and back), and CSV time series.
#include <fmt/format.h>
#include <unistd.h>

#include <bitset>
#include <cmath>
#include <string_view>
#include <nlohmann/json.hpp>

#include "edgeprof/error.hpp"
#include "edgeprof/slice.hpp"
#include "edgeprof/version.hpp"
#include "analysis/metric_table.hpp"
#include "device/device_json.hpp"
#include "suite/microbench_detail.hpp"
#include "nn/runtimes.hpp"

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

template <class T>
void get_opt(const json& j, const char* key, std::optional<T>& out) {
  if (!j.contains(key) || j.at(key).is_null()) {
    out.reset();
  } else {
    out = j.at(key).get<T>();
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

Device device_from(const json& j) {
  if (j.contains("edgeprof_device")) {
    json file = j;
    const std::string origin = file.value("origin", std::string());
    const std::string kind = file.value("speed_kind", std::string());
    const json runtime = file.value("speed_runtime", json());
    file.erase("origin");
    file.erase("speed_kind");
    file.erase("speed");
    file.erase("speed_runtime");
    Device d = detail::device_from_file_object(file, "the report's device");
    d.origin = origin;
    if (kind == "nn") d.speed_kind = "nn";
    if (kind == "nn" && runtime.is_object()) {
      // The speed as the run had it, not ncnn's from this host's rating now; the per-model
      // ratios are not in the report.
      NnSpeed s;
      s.core_speed = d.core_speed;
      s.basis = runtime.at("runtime").get<std::string>();
      s.precision = runtime.value("precision", std::string());
      s.threads = runtime.value("threads", 1);
      s.one_core_factor = runtime.value("one_core_factor", 1.0);
      s.memory_mb_per_ms = runtime.value("memory_mb_per_ms", 0.0);
      s.per_host_ms = runtime.value("per_host_ms", 0.0);
      s.ms_per_mb = runtime.value("ms_per_mb", 0.0);
      d.nn = s;
      d.nn_missing.clear();
    }
    return d;
  }
  // Reports written before device files existed (edgeprof 0.1 development versions).
  Device d;
  d.name = j.at("name").get<std::string>();
  d.cores = j.at("cores").get<int>();
  d.core_speed = j.at("core_speed").get<double>();
  d.memory_bytes = j.at("memory_bytes").get<std::uint64_t>();
  d.swap_bytes = j.at("swap_bytes").get<std::uint64_t>();
  get_opt(j, "io_read_bps", d.io_read_bps);
  get_opt(j, "io_write_bps", d.io_write_bps);
  get_opt(j, "pids_max", d.pids_max);
  d.description = j.at("description").get<std::string>();
  d.source = j.at("source").get<std::string>();
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

ThreadsProjection projection_from(const json& j) {
  ThreadsProjection p;
  p.threads = j.at("threads").get<int>();
  p.speedup = j.at("speedup").get<double>();
  if (p.threads < 1 || !(p.speedup > 0) || !std::isfinite(p.speedup)) {
    throw Error(fmt::format("plan.threads_projection: threads {} and speedup {} are not a "
                            "projection (threads at least 1, a speed-up above 0); the report "
                            "was edited or damaged: write it again with edgeprof",
                            p.threads, p.speedup));
  }
  p.scaling.threads = j.at("table_threads").get<int>();
  p.scaling.speedup = j.at("table_speedup").get<double>();
  p.scaling.graphs = j.at("graphs").get<std::size_t>();
  p.scaling.contention = j.at("contention").get<double>();
  // Reports before it: none.
  if (j.contains("workload_factor")) p.workload_factor = j.at("workload_factor").get<double>();
  p.scaling.loo_median_error = j.at("loo_median_error").get<double>();
  p.scaling.loo_worst_error = j.at("loo_worst_error").get<double>();
  if (j.contains("loo_log_sd")) p.scaling.loo_log_sd = j.at("loo_log_sd").get<double>();
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

EmulationPlan plan_from(const json& j) {
  EmulationPlan p;
  p.cpus = parse_cpu_list(j.at("cpus").get<std::string>());
  p.cpu_period_us = j.at("cpu_period_us").get<std::uint64_t>();
  p.cpu_quota_us = j.at("cpu_quota_us").get<std::uint64_t>();
  p.memory_max_bytes = j.at("memory_max_bytes").get<std::uint64_t>();
  p.swap_max_bytes = j.at("swap_max_bytes").get<std::uint64_t>();
  get_opt(j, "pids_max", p.pids_max);
  if (j.contains("io_device")) p.io_device = j.at("io_device").get<std::string>();
  get_opt(j, "io_read_bps", p.io_read_bps);
  get_opt(j, "io_write_bps", p.io_write_bps);
  if (j.contains("keep_warm")) p.keep_warm = j.at("keep_warm").get<bool>();
  if (j.contains("core_groups")) {  // reports before per-core emulation lack them
    p.core_groups = j.at("core_groups").get<std::uint32_t>();
    p.core_quota_us = j.at("core_quota_us").get<std::uint64_t>();
    if (j.contains("core_quota_by_busy")) {
      p.core_quota_by_busy = j.at("core_quota_by_busy").get<std::vector<std::uint64_t>>();
    }
  }
  if (j.contains("quota_scale")) p.quota_scale = j.at("quota_scale").get<double>();
  if (j.contains("emulation_log_sd")) p.emulation_log_sd = j.at("emulation_log_sd").get<double>();
  if (j.contains("host_drift")) p.host_drift = j.at("host_drift").get<double>();
  if (j.contains("drift_probed")) p.drift_probed = j.at("drift_probed").get<double>();
  if (j.contains("own_share_check")) p.own_share_check = j.at("own_share_check").get<double>();
  if (j.contains("threads_projection") && !j.at("threads_projection").is_null()) {
    p.threads_projection = projection_from(j.at("threads_projection"));
  }
  if (j.contains("thread_env")) {  // reports before edgeprof set the workload's threads lack it
    p.thread_env = j.at("thread_env").get<std::map<std::string, std::string>>();
  }
  p.notes = j.at("notes").get<std::vector<std::string>>();
  if (j.contains("unapplied")) p.unapplied = j.at("unapplied").get<std::vector<std::string>>();
  return p;
}

json host_json(const HostInfo& h) {
  return {{"hostname", h.hostname},
          {"kernel", h.kernel},
          {"cpu_model", h.cpu_model},
          {"cpus", h.cpus},
          {"memory_bytes", h.memory_bytes}};
}

HostInfo host_from(const json& j) {
  HostInfo h;
  h.hostname = j.at("hostname").get<std::string>();
  h.kernel = j.at("kernel").get<std::string>();
  h.cpu_model = j.at("cpu_model").get<std::string>();
  h.cpus = j.at("cpus").get<int>();
  h.memory_bytes = j.at("memory_bytes").get<std::uint64_t>();
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

Summary summary_from(const json& j) {
  Summary s;
  for (const auto& f : kDoubleFields) get_opt(j, f.name, s.*f.member);
  for (const auto& f : kCountFields) get_opt(j, f.name, s.*f.member);
  for (const detail::MetricRow& row : detail::kMetricTable) {
    if (row.summary_count) get_opt(j, row.summary_name, s.*row.summary_count);
    if (row.summary_seconds) get_opt(j, row.summary_name, s.*row.summary_seconds);
  }
  s.pressure_host_wide = j.at("pressure_host_wide").get<bool>();
  s.cpu_window_s = j.at("cpu_window_s").get<double>();
  // Older reports merged such windows instead; their count is kept under the new name.
  s.cpu_windows_carried =
      j.value("cpu_windows_carried", j.value("cpu_windows_merged", std::size_t{0}));
  s.samples = j.at("samples").get<std::uint64_t>();
  s.interval_s = j.at("interval_s").get<double>();
  s.missed_deadlines = j.at("missed_deadlines").get<std::uint64_t>();
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

Phase phase_from(const json& j) {
  Phase p;
  p.name = j.at("name").get<std::string>();
  p.start_s = j.at("start_s").get<double>();
  p.end_s = j.at("end_s").get<double>();
  p.ended_by_exit = j.at("ended_by_exit").get<bool>();
  get_opt(j, "cpu_s", p.cpu_s);
  get_opt(j, "memory_start_bytes", p.memory_start_bytes);
  get_opt(j, "memory_peak_bytes", p.memory_peak_bytes);
  get_opt(j, "memory_net_peak_bytes", p.memory_net_peak_bytes);
  get_opt(j, "energy_j", p.energy_j);
  return p;
}

json metric_names(const std::bitset<kMetricCount>& bits) {
  json names = json::array();
  for (int m = 0; m < kMetricCount; ++m) {
    if (bits.test(static_cast<size_t>(m))) names.push_back(to_string(static_cast<Metric>(m)));
  }
  return names;
}

std::bitset<kMetricCount> metric_bits(const json& names) {
  std::bitset<kMetricCount> bits;
  for (const auto& n : names) {
    auto m = metric_from_string(n.get<std::string>());
    if (!m) throw Error(fmt::format("unknown metric '{}'", n.get<std::string>()));
    bits.set(static_cast<size_t>(*m));
  }
  return bits;
}

json series_json(const TimeSeries& s) {
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

TimeSeries series_from(const json& j) {
  TimeSeries s;
  s.t_ns = j.at("t_ns").get<std::vector<std::int64_t>>();
  s.scheduled = j.at("scheduled").get<std::vector<std::uint8_t>>();
  s.available = metric_bits(j.at("available"));
  s.complete = metric_bits(j.at("complete"));
  for (int m = 0; m < kMetricCount; ++m) {
    const char* name = to_string(static_cast<Metric>(m));
    auto& column = s.values[static_cast<size_t>(m)];
    if (j.at("columns").contains(name)) {
      column = j.at("columns").at(name).get<std::vector<std::uint64_t>>();
      if (column.size() != s.t_ns.size()) {
        throw Error(fmt::format("series column {} has {} rows, t_ns has {}", name,
                                column.size(), s.t_ns.size()));
      }
    } else {
      column.assign(s.t_ns.size(), 0);  // not available in the run: zeros, as recorded
    }
    if (j.contains("read_every") && j.at("read_every").contains(name)) {
      const json& n = j.at("read_every").at(name);
      if (!n.is_number_unsigned() || n.get<std::uint64_t>() < 1 ||
          n.get<std::uint64_t>() > 60'000 || !s.available.test(static_cast<size_t>(m))) {
        throw Error(fmt::format("series read_every of {} is {}: a metric of the run is read at "
                                "every n-th sample, n from 1 to 60000",
                                name, n.dump()));
      }
      s.read_every[static_cast<size_t>(m)] = n.get<std::uint32_t>();
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

SourceStatus source_from(const json& j) {
  return {j.at("name").get<std::string>(), j.at("available").get<bool>(),
          j.at("failed").get<bool>(), j.at("host_wide").get<bool>(),
          j.at("error").get<std::string>(), j.value("read_every", std::uint32_t{1})};
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

void check_schema(const json& j, const char* schema) {
  if (!j.is_object() || !j.contains("schema") || j.at("schema") != schema) {
    throw Error(fmt::format("this JSON is not an edgeprof report: expected \"schema\": \"{}\"",
                            schema));
  }
  const int found = j.at("schema_version").get<int>();
  if (found > kReportSchemaVersion) {
    throw Error(fmt::format("this report has schema version {}, newer than this edgeprof ({}) "
                            "reads ({}): upgrade edgeprof",
                            found, version(), kReportSchemaVersion));
  }
}

Result result_from(const json& j) {
  check_schema(j, "edgeprof.result");
  Result r;
  r.edgeprof_version = j.at("edgeprof_version").get<std::string>();
  r.host = host_from(j.at("host"));
  r.command = j.at("command").get<std::vector<std::string>>();
  get_opt(j, "exit_code", r.exit_code);
  get_opt(j, "signal", r.signal);
  r.timed_out = j.at("timed_out").get<bool>();
  r.oom_killed = j.at("oom_killed").get<bool>();
  auto number = [&](const char* key) {
    return j.at(key).is_null() ? std::nan("") : j.at(key).get<double>();
  };
  r.wall_time_s = number("wall_time_s");
  r.cpu_user_s = number("cpu_user_s");
  r.cpu_system_s = number("cpu_system_s");
  get_opt(j, "peak_memory_bytes", r.peak_memory_bytes);
  r.peak_memory_source = j.at("peak_memory_source").get<std::string>();
  for (const detail::MetricRow& row : detail::kMetricTable) {
    // A counter newer than the report stays 0.
    if (!row.result_name || !j.contains(row.result_name)) continue;
    if (row.result_count) r.*row.result_count = j.at(row.result_name).get<std::uint64_t>();
    if (row.result_seconds) r.*row.result_seconds = number(row.result_name);
  }
  r.child_max_rss_bytes = j.at("child_max_rss_bytes").get<std::uint64_t>();
  if (j.contains("keep_warm_cpu_s")) r.keep_warm_cpu_s = number("keep_warm_cpu_s");
  r.placement = j.at("placement").get<std::string>();
  r.cgroup_mode = cgroup_mode_from_string(j.at("cgroup_mode").get<std::string>());
  r.network_isolated = j.at("network_isolated").get<bool>();
  r.unapplied = j.at("unapplied").get<std::vector<std::string>>();
  r.warnings = j.at("warnings").get<std::vector<std::string>>();
  if (j.contains("runtimes_seen")) {  // reports before edgeprof read the workload's maps lack it
    r.runtimes_seen = j.at("runtimes_seen").get<std::map<std::string, std::string>>();
  }
  if (j.contains("thread_env")) {
    r.thread_env = j.at("thread_env").get<std::map<std::string, std::string>>();
  }
  if (j.contains("thread_moves")) r.thread_moves = j.at("thread_moves").get<std::uint64_t>();
  get_opt(j, "threads_at_once", r.threads_at_once);
  if (r.threads_at_once && !(*r.threads_at_once >= 1)) {
    throw Error(fmt::format("threads_at_once is {}: it is a mean count of runnable threads, 1 or "
                            "more; the report was not written by edgeprof",
                            *r.threads_at_once));
  }
  if (j.contains("core_quota_changes")) {
    r.core_quota_changes = j.at("core_quota_changes").get<std::uint64_t>();
  }
  get_opt(j, "energy_j", r.energy_j);
  if (const auto it = j.find("device_interval"); it != j.end() && it->is_object()) {
    TimeInterval i;  // reports before intervals existed have none
    i.level = it->at("level").get<double>();
    // Written through num(): a non-finite factor is null.
    i.low = it->at("low").is_null() ? std::nan("") : it->at("low").get<double>();
    i.high = it->at("high").is_null() ? std::nan("") : it->at("high").get<double>();
    i.models = it->at("models").get<int>();
    if (const auto e = it->find("emulation_log_sd"); e != it->end() && e->is_number()) {
      i.emulation_log_sd = e->get<double>();  // reports before it have the speed's error only
    }
    if (const auto e = it->find("projection_log_sd"); e != it->end() && e->is_number()) {
      i.projection_log_sd = e->get<double>();
    }
    r.device_interval = i;
  }
  if (j.contains("speed_changes")) {
    for (const auto& c : j.at("speed_changes")) {
      SpeedChange change;
      change.t_s = c.at("t_s").is_null() ? std::nan("") : c.at("t_s").get<double>();
      change.factor = c.at("factor").get<double>();
      change.cpu_quota_us = c.at("cpu_quota_us").get<std::uint64_t>();
      change.cpu_period_us = c.at("cpu_period_us").get<std::uint64_t>();
      change.error = c.at("error").get<std::string>();
      if (c.contains("runtime")) change.runtime = c.at("runtime").get<std::string>();
      change.memory_mb_per_ms = c.value("memory_mb_per_ms", 0.0);
      r.speed_changes.push_back(std::move(change));
    }
  }
  r.device = device_from(j.at("device"));
  r.plan = plan_from(j.at("plan"));
  r.summary = summary_from(j.at("summary"));
  for (const auto& p : j.at("phases")) r.phases.push_back(phase_from(p));
  for (const auto& s : j.at("sources")) r.sources.push_back(source_from(s));
  r.series = series_from(j.at("series"));
  return r;
}

json statistic_json(const Statistic& s) {
  return {{"n", s.n},           {"median", num(s.median)}, {"mean", num(s.mean)},
          {"stddev", num(s.stddev)}, {"ci95_low", num(s.ci95_low)},
          {"ci95_high", num(s.ci95_high)}, {"min", num(s.min)}, {"max", num(s.max)}};
}

Statistic statistic_from(const json& j) {
  Statistic s;
  s.n = j.at("n").get<std::size_t>();
  s.median = j.at("median").get<double>();
  s.mean = j.at("mean").get<double>();
  s.stddev = j.at("stddev").get<double>();
  s.ci95_low = j.at("ci95_low").get<double>();
  s.ci95_high = j.at("ci95_high").get<double>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
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

// Parses JSON text, turning the library's exceptions into edgeprof errors that say where.
template <class Fn>
auto from_text(std::string_view text, const char* what, Fn&& fn) {
  try {
    return fn(json::parse(text));
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
  return fmt::format("exit code {}", r.exit_code.value_or(-1));
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
                    ph.memory_net_peak_bytes && *ph.memory_net_peak_bytes < 0 ? "-" : "+",
                    ph.memory_net_peak_bytes
                        ? format_size(static_cast<std::uint64_t>(
                              std::llabs(*ph.memory_net_peak_bytes)))
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
  return out;
}

// A byte that is not UTF-8 (a workload's argument, a path) is written as U+FFFD: JSON holds
// text only, and the report must still be written.
std::string to_json(const Result& r) {
  return result_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result result_from_json(std::string_view text) {
  return from_text(text, "an edgeprof result", [](const json& j) { return result_from(j); });
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
              const std::bitset<kMetricCount>& columns, bool with_cores) {
  const auto cores = s.cpu_cores();
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
  const bool with_cores = !s.cpu_cores().empty();
  std::string out = csv_marker("edgeprof.series") + csv_header("", s.available, with_cores);
  csv_rows(out, "", s, s.available, with_cores);
  return out;
}

std::string to_csv(const RepeatedResult& r) {
  std::bitset<kMetricCount> columns;
  bool with_cores = false;
  for (const Result& run : r.runs) {
    columns |= run.series.available;
    with_cores = with_cores || !run.series.cpu_cores().empty();
  }
  std::string out =
      csv_marker("edgeprof.repeated_series") + csv_header("run,", columns, with_cores);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    csv_rows(out, fmt::format("{},", i + 1), r.runs[i].series, columns, with_cores);
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
    throw Error(fmt::format("no statistic '{}' (present in every run: {})", name,
                            fmt::join(names, ", ")));
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
  out += fmt::format("{:<34}{:>12}{:>12}{:>12}{:>27}{:>12}{:>12}\n", "figure", "median", "mean",
                     "stddev", "95% CI of the mean", "min", "max");
  for (const auto& [name, s] : r.stats) {
    out += fmt::format("{:<34}{:>12.6g}{:>12.6g}{:>12.4g}{:>13.6g} .. {:<10.6g}{:>12.6g}{:>12.6g}\n",
                       name, s.median, s.mean, s.stddev, s.ci95_low, s.ci95_high, s.min, s.max);
  }
  return out;
}

std::string to_json(const RepeatedResult& r) {
  return repeated_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

RepeatedResult repeated_from_json(std::string_view text) {
  return from_text(text, "an edgeprof repeated result", [](const json& j) {
    check_schema(j, "edgeprof.repeated");
    RepeatedResult r;
    for (const auto& x : j.at("runs")) r.runs.push_back(result_from(x));
    for (const auto& x : j.at("warmups")) r.warmups.push_back(result_from(x));
    for (const auto& [name, s] : j.at("stats").items()) r.stats[name] = statistic_from(s);
    // Figures added since the report was written (all_cores_wall_time_s, the energies): their
    // statistics from the runs, as describe_runs() would have made them then.
    for (auto& [name, s] : describe_runs(r.runs)) r.stats.try_emplace(name, std::move(s));
    return r;
  });
}

}  // namespace edgeprof
