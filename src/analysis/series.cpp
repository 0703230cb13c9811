#include "edgeprof/series.hpp"

namespace edgeprof {

namespace {

constexpr const char* kNames[kMetricCount] = {
    "cpu_usage_ns",
    "cpu_user_ns",
    "cpu_system_ns",
    "cpu_periods",
    "cpu_throttled_periods",
    "cpu_throttled_ns",
    "memory_current_bytes",
    "memory_peak_bytes",
    "memory_anon_bytes",
    "memory_file_bytes",
    "memory_swap_bytes",
    "memory_major_faults",
    "memory_oom_kills",
    "io_read_bytes",
    "io_write_bytes",
    "io_read_ops",
    "io_write_ops",
    "pressure_cpu_some_us",
    "pressure_memory_some_us",
    "pressure_memory_full_us",
    "pressure_io_some_us",
    "pressure_io_full_us",
    "tasks",
    "net_rx_bytes",
    "net_tx_bytes",
    "net_rx_packets",
    "net_tx_packets",
};

}  // namespace

const char* to_string(Metric m) { return kNames[static_cast<int>(m)]; }

std::optional<Metric> metric_from_string(std::string_view name) {
  for (int i = 0; i < kMetricCount; ++i) {
    if (name == kNames[i]) return static_cast<Metric>(i);
  }
  return std::nullopt;
}

bool is_cumulative(Metric m) {
  switch (m) {
    case Metric::memory_current_bytes:
    case Metric::memory_peak_bytes:
    case Metric::memory_anon_bytes:
    case Metric::memory_file_bytes:
    case Metric::memory_swap_bytes:
    case Metric::tasks:
      return false;
    default:
      return true;
  }
}

void TimeSeries::reserve(size_t rows) {
  t_ns.reserve(rows);
  scheduled.reserve(rows);
  for (auto& column : values) column.reserve(rows);
}

std::vector<double> TimeSeries::cpu_cores() const {
  std::vector<double> out;
  if (!has(Metric::cpu_usage_ns) || size() < 2) return out;
  const auto& usage = (*this)[Metric::cpu_usage_ns];
  out.reserve(size() - 1);
  for (size_t i = 1; i < size(); ++i) {
    const double dt = double(t_ns[i] - t_ns[i - 1]);
    const double du = usage[i] >= usage[i - 1] ? double(usage[i] - usage[i - 1]) : 0.0;
    out.push_back(dt > 0 ? du / dt : 0.0);
  }
  return out;
}

bool operator==(const TimeSeries& a, const TimeSeries& b) {
  return a.t_ns == b.t_ns && a.scheduled == b.scheduled && a.values == b.values &&
         a.available == b.available && a.complete == b.complete && a.read_every == b.read_every;
}

bool operator==(const SourceStatus& a, const SourceStatus& b) {
  return a.name == b.name && a.available == b.available && a.failed == b.failed &&
         a.host_wide == b.host_wide && a.error == b.error && a.read_every == b.read_every;
}

}  // namespace edgeprof
