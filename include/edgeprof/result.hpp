/// @file
/// What a run produced: exact end-of-run figures, the sampled time series and its summary
/// (summary.hpp), phases, and (for repeated runs) statistics (statistics.hpp). Every figure
/// says how it was obtained.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/energy.hpp"
#include "edgeprof/export.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/series.hpp"
#include "edgeprof/statistics.hpp"
#include "edgeprof/summary.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// How this machine mounts cgroups. unified = pure cgroup v2; hybrid = v1 controllers plus a
/// cgroup2 mount at /sys/fs/cgroup/unified; legacy = v1 only.
enum class CgroupMode {
  unified,  ///< pure cgroup v2
  hybrid,   ///< v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified
  legacy    ///< v1 only
};
/// "unified", "hybrid" or "legacy".
const char* to_string(CgroupMode mode);
/// For people: "unified (cgroup v2)", "hybrid (cgroup v1 controllers)", "legacy (cgroup v1)".
const char* describe(CgroupMode mode);
/// Inverse of to_string; throws Error for anything else.
CgroupMode cgroup_mode_from_string(std::string_view text);

/// The machine a report was measured on.
struct HostInfo {
  std::string hostname;   ///< gethostname()
  std::string kernel;     ///< uname release
  std::string cpu_model;  ///< /proc/cpuinfo "model name" (empty when the kernel shows none)
  int cpus = 0;           ///< CPUs this process may use
  std::uint64_t memory_bytes = 0;  ///< MemTotal
};
/// This host's information, read once per process.
const HostInfo& host_info();
/// Every field equal.
bool operator==(const HostInfo& a, const HostInfo& b);

/// The default sampling interval. 10 ms: the default cpu.max period, so throttling shows at the
/// granularity the kernel enforces it; fine enough for inferences of tens of milliseconds; and
/// cheap (docs/benchmarks.md). 1 ms .. 60 s may be asked for.
inline constexpr std::int64_t kDefaultSampleIntervalNs = 10'000'000;

/// A change of the CPU bandwidth during a run, made by the device's speed schedule
/// (Device::speed_schedule: thermal throttling, DVFS), or by a switch to the speed of a runtime
/// the workload loaded (`runtime`; PlanOptions::speed_kind automatic), or to the speed of the
/// workload's counted activations (`memory_mb_per_ms`; PlanOptions::count_activations).
struct SpeedChange {
  /// Measured: when the new bandwidth was written, in seconds since the workload was released.
  double t_s = 0;
  double factor = 1;                ///< the step's fraction of the device's core_speed
  /// The runtime whose speed the device ran at from then on (an NnRuntime id, "pytorch"); the
  /// Result's device and plan are then that speed's. "" for a speed schedule's step.
  std::string runtime;
  /// The workload's activation MB per ms of this host's one-thread time that set the speed:
  /// its model's layers' output MB in one inference (counted) over one thread's CPU time per
  /// inference (measured under the slice, a median) divided by this host's own share at the
  /// slice's quota (1 unthrottled; the quota scale the user gave instead) and host drift; the
  /// device's speed then has that memory term (NnSpeed). 0 for a change of another kind.
  double memory_mb_per_ms = 0;
  std::uint64_t cpu_quota_us = 0;   ///< the quota written (cpu.max / cpu.cfs_quota_us)
  std::uint64_t cpu_period_us = 0;  ///< the period written
  std::string error;                ///< why the write failed; "" when it was applied
};

/// What happened to one workload.
struct Result {
  std::optional<int> exit_code;  ///< set when the workload exited
  std::optional<int> signal;     ///< set when a signal ended it
  bool timed_out = false;        ///< edgeprof killed it at the timeout
  bool oom_killed = false;       ///< the kernel's OOM killer killed a task of the slice
  std::uint64_t oom_kills = 0;   ///< how many tasks the OOM killer killed in the slice

  /// Measured: monotonic clock from the moment the child was released to exec until its exit
  /// was observed, in seconds.
  double wall_time_s = 0;
  /// Measured: CPU time of every task of the slice during the run (cgroup counters), in user
  /// mode, in seconds.
  double cpu_user_s = 0;
  /// Measured: the same in the kernel, in seconds.
  double cpu_system_s = 0;
  /// Measured: the kernel's own peak counter for the slice; `peak_memory_source` names the file
  /// (memory.peak on v2, memory.max_usage_in_bytes on v1). Unset when the counter is missing.
  std::optional<std::uint64_t> peak_memory_bytes;
  /// The file peak_memory_bytes comes from, followed by "(peak since the slice was created)"
  /// when the kernel could not reset it for this run.
  std::string peak_memory_source;
  /// Measured: CFS bandwidth throttling during the run, in seconds.
  double throttled_s = 0;
  /// Measured: CFS bandwidth periods in which the slice was throttled.
  std::uint64_t throttled_periods = 0;
  /// Measured: CFS bandwidth periods with runnable tasks.
  std::uint64_t periods = 0;
  /// Measured: CPU time of the keep-warm threads on the slice's CPUs while the workload ran
  /// (their own thread clocks; EmulationPlan::keep_warm), in seconds. Spent outside the slice
  /// and not part of cpu_user_s or cpu_system_s; a thread shared by concurrent slices counts in
  /// each. 0 when keep-warm was off.
  double keep_warm_cpu_s = 0;
  /// Measured by wait4() for the direct child only, as a cross-check of the slice counters.
  /// Linux carries the peak resident size of the address space the child replaced at exec
  /// into this figure, and a spawned child starts in (a copy of) the caller's address space:
  /// it is never below the caller's own peak resident size at the spawn. Use
  /// peak_memory_bytes for the workload's memory.
  std::uint64_t child_max_rss_bytes = 0;

  /// How the child entered the slice: "clone3" (created inside the cgroup: cgroup v2, Linux
  /// >= 5.7), "vfork+attach" (wrote itself into cgroup.procs before exec: cgroup v1), or
  /// "fork+attach" (held on a pipe until placed: other architectures and older kernels).
  std::string placement;

  Device device;                  ///< the device emulated
  EmulationPlan plan;             ///< the cgroup settings applied
  CgroupMode cgroup_mode = CgroupMode::unified;  ///< how this host mounts cgroups
  /// Limits the device asks for that were not applied (with the reason).
  std::vector<std::string> unapplied;
  std::vector<std::string> command;  ///< the command's argv
  bool network_isolated = false;  ///< the workload ran in its own network namespace

  /// Sampled over the run (empty when sampling was off).
  TimeSeries series;
  Summary summary;                    ///< figures derived from `series`
  std::vector<SourceStatus> sources;  ///< how each sampled file fared
  std::vector<Phase> phases;          ///< the phases the workload marked, in the order they began
  /// The bandwidth changes the device's speed schedule made, or the switch to the speed of the
  /// runtime the workload loaded, in time order.
  std::vector<SpeedChange> speed_changes;
  /// Estimated: the device's energy for the whole run, in joules (estimate_energy_j with the
  /// measured wall and CPU time); unset when the device has no power figures.
  std::optional<double> energy_j;
  /// Estimated: where the device's own times may lie around this run's, as factors
  /// (device_interval() of the device's nn speed and the plan, plan.hpp, 90%): a time t of the
  /// run (its wall time, a phase's; projected_s(t) where the plan projects) stands for a device
  /// time within low x t .. high x t. It covers the speed's own error, where the quota was
  /// scaled by this host's own share the emulation's scatter (TimeInterval::emulation_log_sd),
  /// and a projection's spread where it does not cancel (TimeInterval::projection_log_sd), not a
  /// bias of the emulation (docs/fidelity.md measures how often published times fell inside). Unset when the device did not run at an nn speed with
  /// held-out errors (its described speed, a probed device's vector speed).
  std::optional<TimeInterval> device_interval;
  /// Things the user should know about this run (a source that failed, marks that were lost).
  std::vector<std::string> warnings;
  /// Sampled: the inference runtimes the workload's processes loaded, by id ("pytorch",
  /// "onnxruntime", "tensorflow-lite", "tensorflow", "ncnn", "openvino", "tvm", "mnn"), each with
  /// the library file that showed it ("libtorch_cpu.so"). Read from the processes'
  /// /proc/PID/maps 0.125, 0.25 and 0.5 s into a sampled run, then every second, and at the
  /// timeout before the kill: a run that ends sooner, or a library loaded and unloaded between
  /// two reads, is not seen. When the device ran at an nn speed derived with ncnn and another
  /// runtime is here, `warnings` says so (docs/fidelity.md).
  std::map<std::string, std::string> runtimes_seen;
  /// The variables edgeprof set in the workload's environment (EmulationPlan::thread_env minus
  /// those the workload's environment set itself).
  std::map<std::string, std::string> thread_env;
  /// Measured: how many times per-core emulation (EmulationPlan::core_groups) moved a thread
  /// of the workload to another core's group (new threads start in their creator's).
  std::uint64_t thread_moves = 0;
  /// Sampled, projected runs only (CoreEmulation::projected): about how many of the workload's
  /// threads ran at once: the mean number of the slice's threads that were runnable (state R:
  /// running, or waiting for a CPU or the quota), read about every 100 ms (every sample when
  /// the interval is longer), over the readings that found one. 1 when one thread did the work
  /// at a time (threads taking turns sleep while they wait), N when N wanted a CPU at once:
  /// they then shared the one core's quota, and `warnings` says so from 1.5. Unset on other
  /// runs, unsampled ones, ones without a runnable reading, and when another workload ran in
  /// the same slice meanwhile (its threads would be counted too).
  std::optional<double> threads_at_once;
  /// Measured: how many times per-core scaling (EmulationPlan::core_quota_by_busy) changed the
  /// core groups' quota as the number of busy threads changed.
  std::uint64_t core_quota_changes = 0;

  /// Where it was measured.
  HostInfo host;
  /// The version of edgeprof that measured it.
  std::string edgeprof_version;

  /// true when the workload exited with status 0 and was neither killed nor timed out.
  bool ok() const { return exit_code && *exit_code == 0 && !timed_out && !oom_killed; }
  /// Projected (CoreEmulation::projected): `measured_s`, a time of this one-core run (the wall
  /// time, a phase's), as the device with all the plan's threads_projection->threads cores
  /// would take it: measured_s / the board's speed-up. Unset when the plan has no projection.
  std::optional<double> projected_s(double measured_s) const;
  /// The device's time with all its cores for `measured_s`, a time of this run: projected_s()
  /// where the plan projects, else `measured_s` itself (the run emulated all the device's
  /// cores, or the device has one). Figures "all_cores_wall_time_s" and
  /// "phase.<name>.all_cores_wall_time_s", what compare() and score() rank and budget by
  /// default, whatever the core emulation.
  double all_cores_s(double measured_s) const { return projected_s(measured_s).value_or(measured_s); }
  /// Estimated: the device's energy with all its cores for a span of this run that took
  /// `measured_s` and used `cpu_s` of CPU (the run's wall and CPU time, a phase's), in joules.
  /// Where the plan projects, the whole board over all_cores_s(measured_s) with each of its
  /// cores as busy as the one that ran (estimate_projected_energy_j); else estimate_energy_j,
  /// energy_j's figure. Figures "all_cores_energy_j" and "phase.<name>.all_cores_energy_j".
  /// nullopt without the device's power figures.
  std::optional<double> all_cores_energy_j(double measured_s, double cpu_s) const;
};

/// Every field equal (doubles compared exactly).
bool operator==(const Result& a, const Result& b);
/// Some field differs.
inline bool operator!=(const Result& a, const Result& b) { return !(a == b); }

/// The JSON schema version written by to_json and accepted by result_from_json.
inline constexpr int kReportSchemaVersion = 1;

/// How a run ended, in words: "exit code 0", "killed by signal 9", "killed at the timeout", or
/// "killed by the out-of-memory killer (...)".
std::string exit_text(const Result& result);

/// A readable multi-line summary, every figure labelled with where it came from.
std::string to_text(const Result& result);
/// One JSON object: schema version, edgeprof version, host, device, plan, cgroup mode, the
/// exact figures, summary, phases, sources and the time series (columns).
std::string to_json(const Result& result);
/// Reads what to_json wrote; throws Error naming the field when the text is not such a report
/// (or one of a newer schema version).
Result result_from_json(std::string_view json);
/// The time series as CSV: a first line naming the format, `# edgeprof.series schema_version=1
/// edgeprof_version=...` (a comment: pandas reads past it with `comment="#"`), then a header of
/// t_s and scheduled (1 or 0), one column per metric available in the run and the derived
/// cpu_cores (CPU used since the previous sample, in host cores), and a row per sample.
/// Throws Error for a misshapen series (see summarize()), as to_json() does.
std::string to_csv(const Result& result);

/// The runs of a repeated measurement and their statistics.
struct RepeatedResult {
  std::vector<Result> warmups;  ///< run first, not counted
  std::vector<Result> runs;     ///< the counted runs, in order
  /// Per figure: "wall_time_s", "cpu_user_s", "cpu_system_s", "cpu_time_s",
  /// "peak_memory_bytes", "throttled_s", "cpu_cores_avg", "memory_avg_bytes", ...
  /// and "phase.<name>.wall_time_s" / ".cpu_s" / ".memory_net_peak_bytes" for phases marked
  /// in every run. Only figures present in every run are described, and only those finite in
  /// each: a figure that is not finite (NaN, inf) in some run has no statistic.
  std::map<std::string, Statistic> stats;

  /// The statistic of figure `name`; throws Error listing the names.
  const Statistic& stat(const std::string& name) const;
  /// true when there are counted runs and every one is ok() (warm-ups do not count).
  bool all_ok() const;
};
/// Every run, warm-up and statistic equal.
bool operator==(const RepeatedResult& a, const RepeatedResult& b);

/// Every named figure of a result: "wall_time_s", "cpu_user_s", "cpu_system_s", "cpu_time_s",
/// "throttled_s", "child_max_rss_bytes", "peak_memory_bytes" (when measured), the summary's
/// figures that were available ("cpu_cores_avg", "memory_avg_bytes", "io_read_bytes", ...), and
/// for each phase name "phase.<name>.wall_time_s", ".cpu_s" (summed over the phase's
/// occurrences) and ".memory_net_peak_bytes" (the largest); with a projection
/// (Result::projected_s) also "projected_wall_time_s" and "phase.<name>.projected_wall_time_s";
/// always "all_cores_wall_time_s" and "phase.<name>.all_cores_wall_time_s" (Result::all_cores_s:
/// projected where the plan projects, measured otherwise; figure_provenance() says which); with
/// the device's power figures "energy_j" and "all_cores_energy_j" (Result::all_cores_energy_j),
/// and for phases whose CPU was sampled "phase.<name>.energy_j" / ".all_cores_energy_j".
std::map<std::string, double> figures(const Result& result);

/// Whether `name` is one that figures() gives for some result: one of a run's figures, or
/// "phase.<phase name>.<a phase's figure>". For checking a name before any run.
bool is_figure_name(std::string_view name);
/// Throws Error unless is_figure_name(name), naming `what` ("compare's metric") and the names
/// there are.
void check_figure_name(std::string_view name, std::string_view what);
/// Whether a figure named `name` is a number of bytes (peak_memory_bytes, a phase's
/// memory_net_peak_bytes: its name ends in "_bytes"), to be shown as a size.
bool is_size_figure(std::string_view name);

/// "projected" for a figure of `result` that its plan's projection made (a projected_* figure,
/// an all_cores_* figure of a projected run, its energy included), "estimated" for the other
/// energies (energy_j, all_cores_energy_j), "sampled" for one read from the samples
/// (cpu_cores_p95, cpu_cores_peak, memory_avg_bytes, memory_sampled_peak_bytes, tasks_peak, a
/// phase's cpu_s and memory_net_peak_bytes: the report's provenance table), else "measured".
const char* figure_provenance(const Result& result, const std::string& name);

/// Computes `stats` from the runs (a pure function): every figure present and finite in every
/// run.
std::map<std::string, Statistic> describe_runs(const std::vector<Result>& runs);

/// A table of every figure's statistics, after a line naming the command, the device and how
/// many runs succeeded.
std::string to_text(const RepeatedResult& result);
/// The runs' time series as one CSV (not the warm-ups'): after a first line
/// `# edgeprof.repeated_series schema_version=1 edgeprof_version=...`, a leading `run` column
/// (1, 2, ...), then to_csv(const Result&)'s columns for every metric available in any run,
/// empty in the rows of a run that did not have it.
std::string to_csv(const RepeatedResult& result);
/// One JSON object: schema version, edgeprof version, the counts, all_ok, the statistics, and
/// every run and warm-up as to_json(const Result&) writes it.
std::string to_json(const RepeatedResult& result);
/// Reads what to_json wrote (the statistics as stored, not recomputed); throws Error when the
/// text is not such a report.
RepeatedResult repeated_from_json(std::string_view json);

}  // namespace edgeprof
EDGEPROF_API_END
