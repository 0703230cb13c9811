// Every sampled metric once: its name (JSON, CSV, Python), whether it is a counter or a gauge,
// the summary figure made of it and the end-of-run counter of a Result it fills. A new metric
// is a Metric (include/edgeprof/series.hpp), a row here and its source
// (src/sampler/sources.cpp); a summary or Result field it fills is declared in its public header
// and bound in python/src. Names, summaries, a run's counters and the report read this table.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "edgeprof/result.hpp"
#include "edgeprof/series.hpp"
#include "edgeprof/summary.hpp"

namespace edgeprof::detail {

struct MetricRow {
  Metric metric = Metric::cpu_usage_ns;
  const char* name = "";
  bool cumulative = true;
  // The summary figure made of it, named as its field (JSON and Python): a counter's
  // difference over the run or a gauge's sampled peak (a count), or a counter of microseconds'
  // difference in seconds.
  const char* summary_name = nullptr;
  std::optional<std::uint64_t> Summary::*summary_count = nullptr;
  std::optional<double> Summary::*summary_seconds = nullptr;
  // The Result field it fills, named as the field: the run's difference (a count, or a counter of
  // nanoseconds in seconds), read at the run's start and end even when the run is not sampled.
  // Reports read it where present (0 where an older report lacks it).
  const char* result_name = nullptr;
  std::uint64_t Result::*result_count = nullptr;
  double Result::*result_seconds = nullptr;
  // Read at a run's start and end without a field of its own (the CPU time's split, which the
  // run computes from two of them).
  bool at_run_end = false;

  constexpr MetricRow summed(const char* field, std::optional<std::uint64_t> Summary::*m) const {
    MetricRow r = *this;
    r.summary_name = field;
    r.summary_count = m;
    return r;
  }
  constexpr MetricRow summed_s(const char* field, std::optional<double> Summary::*m) const {
    MetricRow r = *this;
    r.summary_name = field;
    r.summary_seconds = m;
    return r;
  }
  constexpr MetricRow in_result(const char* field, std::uint64_t Result::*m) const {
    MetricRow r = *this;
    r.result_name = field;
    r.result_count = m;
    r.at_run_end = true;
    return r;
  }
  constexpr MetricRow in_result_s(const char* field, double Result::*m) const {
    MetricRow r = *this;
    r.result_name = field;
    r.result_seconds = m;
    r.at_run_end = true;
    return r;
  }
  constexpr MetricRow read_at_run_end() const {
    MetricRow r = *this;
    r.at_run_end = true;
    return r;
  }
};

constexpr MetricRow counter(Metric m, const char* name) {
  MetricRow r;
  r.metric = m;
  r.name = name;
  return r;
}

constexpr MetricRow gauge(Metric m, const char* name) {
  MetricRow r = counter(m, name);
  r.cumulative = false;
  return r;
}

// In the order of Metric (checked below).
inline constexpr MetricRow kMetricTable[kMetricCount] = {
    counter(Metric::cpu_usage_ns, "cpu_usage_ns"),
    counter(Metric::cpu_user_ns, "cpu_user_ns").read_at_run_end(),
    counter(Metric::cpu_system_ns, "cpu_system_ns").read_at_run_end(),
    counter(Metric::cpu_periods, "cpu_periods").in_result("periods", &Result::periods),
    counter(Metric::cpu_throttled_periods, "cpu_throttled_periods")
        .in_result("throttled_periods", &Result::throttled_periods),
    counter(Metric::cpu_throttled_ns, "cpu_throttled_ns")
        .in_result_s("throttled_s", &Result::throttled_s),
    gauge(Metric::memory_current_bytes, "memory_current_bytes"),
    gauge(Metric::memory_peak_bytes, "memory_peak_bytes"),
    gauge(Metric::memory_anon_bytes, "memory_anon_bytes")
        .summed("memory_anon_peak_bytes", &Summary::memory_anon_peak_bytes),
    gauge(Metric::memory_file_bytes, "memory_file_bytes")
        .summed("memory_file_peak_bytes", &Summary::memory_file_peak_bytes),
    gauge(Metric::memory_swap_bytes, "memory_swap_bytes")
        .summed("memory_swap_peak_bytes", &Summary::memory_swap_peak_bytes),
    counter(Metric::memory_major_faults, "memory_major_faults")
        .summed("major_faults", &Summary::major_faults),
    counter(Metric::memory_oom_kills, "memory_oom_kills")
        .in_result("oom_kills", &Result::oom_kills),
    counter(Metric::io_read_bytes, "io_read_bytes")
        .summed("io_read_bytes", &Summary::io_read_bytes),
    counter(Metric::io_write_bytes, "io_write_bytes")
        .summed("io_write_bytes", &Summary::io_write_bytes),
    counter(Metric::io_read_ops, "io_read_ops").summed("io_read_ops", &Summary::io_read_ops),
    counter(Metric::io_write_ops, "io_write_ops").summed("io_write_ops", &Summary::io_write_ops),
    counter(Metric::pressure_cpu_some_us, "pressure_cpu_some_us")
        .summed_s("pressure_cpu_some_s", &Summary::pressure_cpu_some_s),
    counter(Metric::pressure_memory_some_us, "pressure_memory_some_us")
        .summed_s("pressure_memory_some_s", &Summary::pressure_memory_some_s),
    counter(Metric::pressure_memory_full_us, "pressure_memory_full_us")
        .summed_s("pressure_memory_full_s", &Summary::pressure_memory_full_s),
    counter(Metric::pressure_io_some_us, "pressure_io_some_us")
        .summed_s("pressure_io_some_s", &Summary::pressure_io_some_s),
    counter(Metric::pressure_io_full_us, "pressure_io_full_us")
        .summed_s("pressure_io_full_s", &Summary::pressure_io_full_s),
    gauge(Metric::tasks, "tasks").summed("tasks_peak", &Summary::tasks_peak),
    counter(Metric::net_rx_bytes, "net_rx_bytes").summed("net_rx_bytes", &Summary::net_rx_bytes),
    counter(Metric::net_tx_bytes, "net_tx_bytes").summed("net_tx_bytes", &Summary::net_tx_bytes),
    counter(Metric::net_rx_packets, "net_rx_packets")
        .summed("net_rx_packets", &Summary::net_rx_packets),
    counter(Metric::net_tx_packets, "net_tx_packets")
        .summed("net_tx_packets", &Summary::net_tx_packets),
};

constexpr bool metric_table_in_order() {
  for (int i = 0; i < kMetricCount; ++i) {
    if (static_cast<int>(kMetricTable[i].metric) != i) return false;
  }
  return true;
}
static_assert(metric_table_in_order(), "kMetricTable's rows must follow the order of Metric");

constexpr const MetricRow& metric_row(Metric m) { return kMetricTable[static_cast<int>(m)]; }

// A seconds field is made of microseconds (summary) or nanoseconds (Result): the metric's name
// says which, so a row of another unit cannot be converted silently.
constexpr bool ends_with(const char* s, const char* tail) {
  std::size_t n = 0, m = 0;
  while (s[n]) ++n;
  while (tail[m]) ++m;
  if (m > n) return false;
  for (std::size_t i = 0; i < m; ++i) {
    if (s[n - m + i] != tail[i]) return false;
  }
  return true;
}
constexpr bool metric_table_units_hold() {
  for (const MetricRow& row : kMetricTable) {
    if (row.summary_seconds && !ends_with(row.name, "_us")) return false;
    if (row.result_seconds && !ends_with(row.name, "_ns")) return false;
  }
  return true;
}
static_assert(metric_table_units_hold(),
              "a summed_s row's metric must count microseconds (_us), an in_result_s row's "
              "nanoseconds (_ns)");

// The end-of-run counters: what a run reads at its start and end (Sources::snapshot) whether or
// not it is sampled. Constant-initialised: usable before main().
static_assert(kMetricCount <= 64, "the metric masks are 64-bit");
constexpr unsigned long long counter_metric_mask() {
  unsigned long long mask = 0;
  for (const MetricRow& row : kMetricTable) {
    if (row.at_run_end) mask |= 1ULL << static_cast<int>(row.metric);
  }
  return mask;
}
inline constexpr std::bitset<kMetricCount> kCounterMetrics{counter_metric_mask()};

// The first sample whose time is before the one before it (t_ns never decreases; equal times
// are a clock that did not move), and the first metric marked complete but not available: the
// two rules check_shape() and a report's reader both enforce, each naming what it found.
std::optional<std::size_t> first_time_back(const std::vector<std::int64_t>& t_ns);
std::optional<Metric> first_complete_unavailable(const TimeSeries& s);

// Throws Error unless every available metric's column (and `scheduled`, unless empty) has one
// value per sample of t_ns, every complete metric is available, and t_ns never decreases: a
// TimeSeries built by hand that did not was read out of bounds (an empty column behind a
// complete bit: a crash) or summed into negative areas.
void check_shape(const TimeSeries& s);

}  // namespace edgeprof::detail
