#include "edgeprof/series.hpp"

#include "analysis/metric_table.hpp"

#include <fmt/format.h>

#include "edgeprof/error.hpp"

namespace edgeprof {

const char* to_string(Metric m) { return detail::metric_row(m).name; }

std::optional<Metric> metric_from_string(std::string_view name) {
  for (int i = 0; i < kMetricCount; ++i) {
    if (name == detail::kMetricTable[i].name) return static_cast<Metric>(i);
  }
  return std::nullopt;
}

bool is_cumulative(Metric m) { return detail::metric_row(m).cumulative; }

void TimeSeries::reserve(size_t rows) {
  t_ns.reserve(rows);
  scheduled.reserve(rows);
  for (auto& column : values) column.reserve(rows);
}

namespace detail {

void check_shape(const TimeSeries& s) {
  auto refuse = [&](const char* column, std::size_t n) {
    throw Error(fmt::format("this TimeSeries's column {} has {} values for {} samples (t_ns): "
                            "give every available metric's column one value per sample",
                            column, n, s.size()));
  };
  if (!s.scheduled.empty() && s.scheduled.size() != s.size()) {
    refuse("scheduled", s.scheduled.size());
  }
  for (int m = 0; m < kMetricCount; ++m) {
    const auto& column = s.values[static_cast<std::size_t>(m)];
    if (s.available.test(static_cast<std::size_t>(m)) && column.size() != s.size()) {
      refuse(to_string(static_cast<Metric>(m)), column.size());
    }
  }
  // A complete metric is read from its column, which only an available one is sure to have.
  if (const std::optional<Metric> m = first_complete_unavailable(s)) {
    throw Error(fmt::format("this TimeSeries marks {} complete but not available: complete "
                            "must be a subset of available; set it in available (with a "
                            "column of one value per sample) or clear it in complete",
                            to_string(*m)));
  }
  // Areas and rates are taken between consecutive samples: going back in time made them
  // negative (a memory average of about 2^64 bytes).
  if (const std::optional<std::size_t> i = first_time_back(s.t_ns)) {
    throw Error(fmt::format("this TimeSeries's t_ns goes back in time at sample {}: {} ns after "
                            "{} ns at sample {}; give the samples in the order they were taken",
                            *i, s.t_ns[*i], s.t_ns[*i - 1], *i - 1));
  }
}

std::optional<std::size_t> first_time_back(const std::vector<std::int64_t>& t_ns) {
  for (std::size_t i = 1; i < t_ns.size(); ++i) {
    if (t_ns[i] < t_ns[i - 1]) return i;
  }
  return std::nullopt;
}

std::optional<Metric> first_complete_unavailable(const TimeSeries& s) {
  const std::bitset<kMetricCount> extra = s.complete & ~s.available;
  for (int m = 0; m < kMetricCount; ++m) {
    if (extra.test(static_cast<std::size_t>(m))) return static_cast<Metric>(m);
  }
  return std::nullopt;
}

}  // namespace detail

std::vector<double> TimeSeries::cpu_cores() const {
  detail::check_shape(*this);
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
  // An empty scheduled column means every sample scheduled (a report reads it as such).
  const auto whole = [](const TimeSeries& s) {
    return s.scheduled.empty() ? std::vector<std::uint8_t>(s.t_ns.size(), 1) : s.scheduled;
  };
  return a.t_ns == b.t_ns && whole(a) == whole(b) && a.values == b.values &&
         a.available == b.available && a.complete == b.complete && a.read_every == b.read_every;
}

bool operator==(const SourceStatus& a, const SourceStatus& b) {
  return a.name == b.name && a.available == b.available && a.failed == b.failed &&
         a.host_wide == b.host_wide && a.error == b.error && a.read_every == b.read_every;
}

}  // namespace edgeprof
