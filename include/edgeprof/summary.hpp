/// @file
/// What the samples of one run add up to: the summary of a time series, and the phases the
/// workload marked. Pure functions of the series, exported for tools that build their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/export.hpp"
#include "edgeprof/series.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

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
  /// Windows whose own count was more CPU than the quota lets through (a period's quota for each
  /// period the window may touch): the kernel charged them time run at a tick's edge or beyond
  /// the quota, which it takes back by throttling the periods after. Their excess is carried
  /// into the windows after them, as the kernel repays it, so that p95 and peak are rates the
  /// slice could have had; the run's total stays in cpu_cores_avg. Only where a quota held for
  /// the whole run (summarize's cpu_period_s).
  std::size_t cpu_windows_carried = 0;
  ///@{
  /// The same as a fraction of the slice's capacity, EmulationPlan::capacity_cores() (cores x
  /// speed x quota scale; one core's under projected core emulation).
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
/// `cpu_period_s`: the CFS period of a quota that held for the whole run; given (> 0), and
/// where the series counted throttling periods, a window's excess over that quota is carried
/// into the windows after it (Summary::cpu_windows_carried). Throws Error when an available
/// metric's column (or `scheduled`, unless empty) is not as long as t_ns, when `complete` names
/// a metric `available` does not, or when t_ns goes back in time (equal times are taken).
Summary summarize(const TimeSeries& series, double interval_s, double capacity_cores,
                  std::uint64_t missed_deadlines = 0, bool pressure_host_wide = false,
                  double cpu_period_s = 0);

/// A phase the workload marked (edgeprof/phase.hpp, edgeprof.phase() in Python).
struct Phase {
  /// As given to the mark, made printable: bytes that are not UTF-8 are written as `\xNN`,
  /// control characters as `\u00NN` and a backslash as two, so two phases whose names differ
  /// only in such bytes stay two names in a report (an end mark closes the phase begun with
  /// the same bytes).
  std::string name;
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
/// lines (and ends without a begin) are skipped and counted in `*malformed`. Throws Error when
/// `end_s` is not finite or is past 9e9 s either way, or `series` is misshapen (summarize()).
std::vector<Phase> parse_phases(std::string_view marks, std::int64_t release_ns,
                                const TimeSeries& series, double end_s,
                                std::size_t* malformed = nullptr);

}  // namespace edgeprof
EDGEPROF_API_END
