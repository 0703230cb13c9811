/// @file
/// Time series sampled from a slice's cgroup files while a workload runs.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// Every figure the sampler records, named by what and in which unit. Cumulative counters grow
/// over the run (the report takes differences); gauges are levels at the sample's instant.
/// The pressure (PSI) stall times are host-wide on cgroup v1; the network figures are recorded
/// only with the workload in its own network namespace (SpawnOptions::isolate_network).
enum class Metric : int {
  cpu_usage_ns,             ///< counter: CPU time of all tasks of the slice
  cpu_user_ns,              ///< counter: the part of it spent in user mode
  cpu_system_ns,            ///< counter: the part of it spent in the kernel
  cpu_periods,              ///< counter: CFS bandwidth periods with runnable tasks
  cpu_throttled_periods,    ///< counter: periods in which the slice used up its quota
  cpu_throttled_ns,         ///< counter: time the slice's tasks waited for the next period
  memory_current_bytes,     ///< gauge: memory charged to the slice (anon + page cache + kernel)
  memory_peak_bytes,        ///< gauge: the kernel's high-water mark, where it keeps one
  memory_anon_bytes,        ///< gauge: anonymous memory (heap, stacks)
  memory_file_bytes,        ///< gauge: page cache
  memory_swap_bytes,        ///< gauge: the slice's memory in swap
  memory_major_faults,      ///< counter: page faults that had to read from storage
  memory_oom_kills,         ///< counter: tasks killed by the OOM killer
  io_read_bytes,            ///< counter: bytes read from block devices
  io_write_bytes,           ///< counter: bytes written to block devices
  io_read_ops,              ///< counter: read operations on block devices
  io_write_ops,             ///< counter: write operations on block devices
  pressure_cpu_some_us,     ///< counter: PSI stall time, some tasks waiting for CPU
  pressure_memory_some_us,  ///< counter: PSI stall time, some tasks waiting for memory
  pressure_memory_full_us,  ///< counter: PSI stall time, all tasks waiting for memory
  pressure_io_some_us,      ///< counter: PSI stall time, some tasks waiting for I/O
  pressure_io_full_us,      ///< counter: PSI stall time, all tasks waiting for I/O
  tasks,                    ///< gauge: tasks (threads) in the slice
  net_rx_bytes,             ///< counter: bytes received
  net_tx_bytes,             ///< counter: bytes sent
  net_rx_packets,           ///< counter: packets received
  net_tx_packets,           ///< counter: packets sent
};
/// Number of metrics: the size of TimeSeries::values and of its metric bitsets.
inline constexpr int kMetricCount = static_cast<int>(Metric::net_tx_packets) + 1;

/// "cpu_usage_ns", ...; the names used in JSON, CSV and Python.
const char* to_string(Metric m);
/// The metric that to_string() names `name`; nullopt for an unknown name.
std::optional<Metric> metric_from_string(std::string_view name);
/// true for counters (cumulative), false for gauges.
bool is_cumulative(Metric m);

/// Samples in columns: one time column and one column per metric, preallocated and grown
/// geometrically when a run outlasts the reservation.
struct TimeSeries {
  /// When each sample was actually taken: monotonic nanoseconds since the workload was released
  /// to exec (the first sample, taken just before, is slightly negative); never decreasing.
  std::vector<std::int64_t> t_ns;
  /// One column per metric, indexed by Metric, each as long as t_ns.
  std::array<std::vector<std::uint64_t>, kMetricCount> values;
  /// 1 = taken at a deadline of the sampling schedule; 0 = an extra sample (at a phase mark, or
  /// the final one after the workload was reaped).
  std::vector<std::uint8_t> scheduled;
  /// Metrics some source provided for this run; the others' columns hold zeros and mean
  /// nothing.
  std::bitset<kMetricCount> available;
  /// Metrics recorded in every row; only available ones. A source that failed mid-run keeps
  /// its rows (the last good value repeated) and is marked incomplete here, never a silent zero.
  std::bitset<kMetricCount> complete;
  /// How often each metric was read, in scheduled samples: 1 = at every one (CPU time and
  /// throttling, memory usage); n = at every n-th, about every 100 ms, its last value repeated
  /// between (memory breakdown, pressure, block I/O, tasks, OOM kills, network). Extra samples
  /// (phase marks, the final one) read every metric.
  std::array<std::uint32_t, kMetricCount> read_every = [] {
    std::array<std::uint32_t, kMetricCount> every{};
    every.fill(1);
    return every;
  }();

  /// Number of samples (rows).
  size_t size() const { return t_ns.size(); }
  /// Reserves room for `rows` samples in every column.
  void reserve(size_t rows);
  /// The column of metric `m`.
  const std::vector<std::uint64_t>& operator[](Metric m) const {
    return values[static_cast<size_t>(m)];
  }
  /// Whether `m` is available in this run.
  bool has(Metric m) const { return available.test(static_cast<size_t>(m)); }

  /// CPU used between consecutive samples, in host cores (size() - 1 values, the first for the
  /// gap between rows 0 and 1; empty when CPU usage is not available). Throws Error when an
  /// available metric's column (or `scheduled`, unless empty) is not as long as t_ns, when
  /// `complete` names a metric `available` does not, or when t_ns goes back in time.
  std::vector<double> cpu_cores() const;
};

/// Every column and flag equal.
bool operator==(const TimeSeries& a, const TimeSeries& b);
/// Some column or flag differs.
inline bool operator!=(const TimeSeries& a, const TimeSeries& b) { return !(a == b); }

/// One sampled file (or pair of files) and how it fared in a run.
struct SourceStatus {
  std::string name;        ///< "cpu.stat", "memory.stat", "/proc/pressure/io", ...
  bool available = false;  ///< opened at the start of the run
  bool failed = false;     ///< disabled during the run after a read or parse failure
  bool host_wide = false;  ///< it describes the whole host, not the slice (v1 pressure)
  std::string error;       ///< why it is missing or failed
  /// Read at every n-th scheduled sample (1 = every one; TimeSeries::read_every).
  std::uint32_t read_every = 1;
};

/// Every field equal.
bool operator==(const SourceStatus& a, const SourceStatus& b);

}  // namespace edgeprof
EDGEPROF_API_END
