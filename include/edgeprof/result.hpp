/// @file
/// What a run produced: exact end-of-run figures, the sampled time series and its summary,
/// phases, and (for repeated runs) statistics. Every figure says how it was obtained.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/series.hpp"

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

/// CPU rates (p95, peak) are taken over windows of at least this long: the kernel charges CPU
/// time to cgroups at scheduler ticks (every 4 ms at HZ=250), so a rate over 5 ms can be off by
/// more than 100%, one over 100 ms by at most about 8% per running task (docs/sampling.md).
inline constexpr std::int64_t kCpuRateWindowNs = 100'000'000;

/// Figures derived from the samples. Unset = the metric was not available in this run (never a
/// silent zero). Provenance: "measured" figures are differences of exact kernel counters between
/// the first and last sample; "sampled" figures are taken from the samples, so they may miss
/// what happened between two samples.
struct Summary {
  ///@{
  /// CPU used, in host cores: the average over the run is measured (counter difference / time);
  /// p95 and peak are sampled, over windows of cpu_window_s (kCpuRateWindowNs or the interval).
  std::optional<double> cpu_cores_avg, cpu_cores_p95, cpu_cores_peak;
  ///@}
  /// Length of the windows of cpu_cores_p95 and cpu_cores_peak, in seconds (0 without CPU
  /// usage).
  double cpu_window_s = 0;
  ///@{
  /// The same as a fraction of the emulated device's capacity (cores x speed).
  std::optional<double> cpu_capacity_avg, cpu_capacity_p95, cpu_capacity_peak;
  ///@}
  /// Measured: throttled periods / periods (cpu.stat).
  std::optional<double> throttled_fraction;
  ///@{
  /// Sampled: memory charged to the slice, time-weighted average and highest sample.
  std::optional<std::uint64_t> memory_avg_bytes, memory_sampled_peak_bytes;
  ///@}
  ///@{
  /// Sampled: the highest anonymous memory and page cache.
  std::optional<std::uint64_t> memory_anon_peak_bytes, memory_file_peak_bytes;
  ///@}
  /// Sampled: the most of the slice's memory in swap.
  std::optional<std::uint64_t> memory_swap_peak_bytes;
  /// Measured counters over the run: major page faults.
  std::optional<std::uint64_t> major_faults;
  ///@{
  /// Measured counters over the run: bytes and operations of block I/O.
  std::optional<std::uint64_t> io_read_bytes, io_write_bytes, io_read_ops, io_write_ops;
  ///@}
  ///@{
  /// Measured counters over the run: network bytes and packets (own network namespace only).
  std::optional<std::uint64_t> net_rx_bytes, net_tx_bytes, net_rx_packets, net_tx_packets;
  ///@}
  ///@{
  /// Measured: PSI stall seconds over the run; host-wide on cgroup v1 (pressure_host_wide).
  std::optional<double> pressure_cpu_some_s, pressure_memory_some_s, pressure_memory_full_s,
      pressure_io_some_s, pressure_io_full_s;
  ///@}
  /// The pressure figures describe the whole host, not the slice (cgroup v1).
  bool pressure_host_wide = false;
  /// Sampled: the most tasks (threads) seen in the slice at once.
  std::optional<std::uint64_t> tasks_peak;

  /// The sampling itself: how many samples were taken.
  std::uint64_t samples = 0;
  double interval_s = 0;                   ///< requested, in seconds (0 = no sampling)
  std::optional<double> interval_p50_s;    ///< achieved, median of the gaps between samples
  std::optional<double> jitter_p50_s;      ///< how late scheduled samples were, median
  std::optional<double> jitter_p99_s;      ///< the same, 99th percentile
  std::uint64_t missed_deadlines = 0;      ///< skipped because a sample took too long
};
/// Every field equal.
bool operator==(const Summary& a, const Summary& b);

/// Computes the summary from a time series (a pure function; exported for tests and tools that
/// build series of their own). `interval_s` is the requested sampling interval and
/// `capacity_cores` the emulated device's CPU capacity. CPU percentiles and the achieved
/// interval use the scheduled samples only (series.scheduled), so the extra samples taken at
/// phase marks do not skew them.
Summary summarize(const TimeSeries& series, double interval_s, double capacity_cores,
                  std::uint64_t missed_deadlines = 0, bool pressure_host_wide = false);

/// A phase the workload marked (edgeprof/phase.hpp, edgeprof.phase() in Python).
struct Phase {
  std::string name;  ///< as given to the mark
  ///@{
  /// Measured: the workload's own monotonic clock at the marks, in seconds since the workload
  /// was released to exec.
  double start_s = 0, end_s = 0;
  ///@}
  bool ended_by_exit = false;  ///< still open when the workload exited
  /// Sampled: CPU time of the slice during the phase, interpolated between samples (the
  /// sampler takes a sample as soon as a mark arrives, so the error is a few microseconds'
  /// worth of CPU at each end).
  std::optional<double> cpu_s;
  ///@{
  /// Sampled: memory of the slice at the last sample at or before the phase began, the highest
  /// sample during it, and the difference (the phase's own footprint, net of what was in use
  /// before).
  std::optional<std::uint64_t> memory_start_bytes, memory_peak_bytes;
  std::optional<std::int64_t> memory_net_peak_bytes;
  ///@}
  /// Estimated: the device's energy over the phase, in joules (estimate_energy_j with the
  /// phase's wall and CPU time); unset without the device's power figures or the phase's CPU.
  std::optional<double> energy_j;

  /// end_s - start_s.
  double wall_time_s() const { return end_s - start_s; }
};
/// Every field equal.
bool operator==(const Phase& a, const Phase& b);

/// Turns the phase channel's text (lines `<monotonic ns> <B|E|M> <name>`) into phases, in the
/// order they began, with figures taken from `series` (times relative to `release_ns`, the
/// monotonic time the workload was released). `end_s` closes phases still open. Malformed
/// lines (and ends without a begin) are skipped and counted in `*malformed`.
std::vector<Phase> parse_phases(std::string_view marks, std::int64_t release_ns,
                                const TimeSeries& series, double end_s,
                                std::size_t* malformed = nullptr);

/// A change of the CPU bandwidth during a run, made by the device's speed schedule
/// (Device::speed_schedule: thermal throttling, DVFS).
struct SpeedChange {
  /// Measured: when the new bandwidth was written, in seconds since the workload was released.
  double t_s = 0;
  double factor = 1;                ///< the step's fraction of the device's core_speed
  std::uint64_t cpu_quota_us = 0;   ///< the quota written (cpu.max / cpu.cfs_quota_us)
  std::uint64_t cpu_period_us = 0;  ///< the period written
  std::string error;                ///< why the write failed; "" when it was applied
};

/// Estimated energy of the device over `wall_s` seconds in which the workload used `cpu_s`
/// host-core seconds of CPU, in joules: idle_watts x wall_s + (loaded_watts - idle_watts) x
/// cpu_s / capacity_cores, i.e. power linear in the share of the device's CPU capacity in use
/// (docs/energy.md). nullopt when either power figure is unknown or capacity_cores <= 0.
std::optional<double> estimate_energy_j(const PowerDescription& power, double wall_s,
                                        double cpu_s, double capacity_cores);

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
  /// The bandwidth changes the device's speed schedule made, in time order.
  std::vector<SpeedChange> speed_changes;
  /// Estimated: the device's energy for the whole run, in joules (estimate_energy_j with the
  /// measured wall and CPU time); unset when the device has no power figures.
  std::optional<double> energy_j;
  /// Things the user should know about this run (a source that failed, marks that were lost).
  std::vector<std::string> warnings;

  /// Where it was measured.
  HostInfo host;
  /// The version of edgeprof that measured it.
  std::string edgeprof_version;

  /// true when the workload exited with status 0 and was neither killed nor timed out.
  bool ok() const { return exit_code && *exit_code == 0 && !timed_out && !oom_killed; }
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
/// The time series as CSV: t_s and scheduled (1 or 0), then one column per metric available in
/// the run, then the derived cpu_cores (CPU used since the previous sample, in host cores).
std::string to_csv(const Result& result);

/// Statistics of one figure over repeated runs.
struct Statistic {
  std::size_t n = 0;  ///< number of values
  ///@{
  /// Median, mean and sample standard deviation (n - 1; 0 for one value).
  double median = 0, mean = 0, stddev = 0;
  ///@}
  ///@{
  /// Student t 95% interval of the mean (n >= 2; the mean itself for one value).
  double ci95_low = 0, ci95_high = 0;
  ///@}
  ///@{
  /// The smallest and the largest value.
  double min = 0, max = 0;
  ///@}
};
/// Every field equal.
bool operator==(const Statistic& a, const Statistic& b);
/// Describes a sample. Throws Error for an empty sample.
Statistic statistics(const std::vector<double>& values);

/// The runs of a repeated measurement and their statistics.
struct RepeatedResult {
  std::vector<Result> warmups;  ///< run first, not counted
  std::vector<Result> runs;     ///< the counted runs, in order
  /// Per figure: "wall_time_s", "cpu_user_s", "cpu_system_s", "cpu_time_s",
  /// "peak_memory_bytes", "throttled_s", "cpu_cores_avg", "memory_avg_bytes", ...
  /// and "phase.<name>.wall_time_s" / ".cpu_s" / ".memory_net_peak_bytes" for phases marked
  /// in every run. Only figures present in every run are described.
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
/// occurrences) and ".memory_net_peak_bytes" (the largest).
std::map<std::string, double> figures(const Result& result);

/// Computes `stats` from the runs (a pure function): every figure present in every run.
std::map<std::string, Statistic> describe_runs(const std::vector<Result>& runs);

/// A table of every figure's statistics, after a line naming the command, the device and how
/// many runs succeeded.
std::string to_text(const RepeatedResult& result);
/// One JSON object: schema version, edgeprof version, the counts, all_ok, the statistics, and
/// every run and warm-up as to_json(const Result&) writes it.
std::string to_json(const RepeatedResult& result);
/// Reads what to_json wrote (the statistics as stored, not recomputed); throws Error when the
/// text is not such a report.
RepeatedResult repeated_from_json(std::string_view json);

/// Student t quantile: the t with P(T <= t) = p for `dof` degrees of freedom. Throws Error
/// unless 0 < p < 1 and dof > 0.
double student_t_quantile(double p, double dof);
/// P(T <= t) for Student's t with `dof` degrees of freedom.
double student_t_cdf(double t, double dof);

}  // namespace edgeprof
