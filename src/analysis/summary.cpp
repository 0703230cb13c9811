// The pure analysis of a run: summary of a time series, phases from marks, statistics.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include "edgeprof/error.hpp"
#include "edgeprof/result.hpp"
#include "analysis/figure_name.hpp"
#include "analysis/metric_table.hpp"
#include "analysis/phase_kinds.hpp"
#include "sys/parse.hpp"
#include "sys/stats.hpp"
#include "sys/text.hpp"

namespace edgeprof {

namespace {

using detail::percentile;

// Complete and available: check_shape() refuses a series that is one and not the other, and
// only an available metric's column is known to have a value per sample.
bool complete(const TimeSeries& s, Metric m) {
  return s.size() > 0 && s.complete.test(static_cast<size_t>(m)) && s.has(m);
}

std::optional<std::uint64_t> delta(const TimeSeries& s, Metric m) {
  if (!complete(s, m)) return std::nullopt;
  const auto& v = s[m];
  return v.back() >= v.front() ? v.back() - v.front() : 0;
}

std::optional<std::uint64_t> peak(const TimeSeries& s, Metric m) {
  if (!complete(s, m)) return std::nullopt;
  return *std::max_element(s[m].begin(), s[m].end());
}

std::optional<double> seconds(std::optional<std::uint64_t> us) {
  if (!us) return std::nullopt;
  return double(*us) / 1e6;
}

}  // namespace

Summary summarize(const TimeSeries& s, double interval_s, double capacity_cores,
                  std::uint64_t missed_deadlines, bool pressure_host_wide, double cpu_period_s) {
  detail::check_shape(s);
  Summary out;
  out.samples = s.size();
  out.interval_s = interval_s;
  out.missed_deadlines = missed_deadlines;
  out.pressure_host_wide = pressure_host_wide;
  if (s.size() == 0) return out;

  // Rows taken on the schedule; extra samples (phase marks, the final one) are left out of the
  // per-interval figures.
  std::vector<size_t> rows;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i >= s.scheduled.size() || s.scheduled[i]) rows.push_back(i);
  }
  const double interval_ns = interval_s * 1e9;
  if (rows.size() >= 2 && interval_ns > 0) {
    std::vector<double> gaps, lateness;
    const std::int64_t t0 = s.t_ns[rows[0]];
    for (size_t k = 0; k < rows.size(); ++k) {
      const double since = double(s.t_ns[rows[k]] - t0);
      lateness.push_back(std::fmod(since, interval_ns) / 1e9);
      if (k) gaps.push_back(double(s.t_ns[rows[k]] - s.t_ns[rows[k - 1]]) / 1e9);
    }
    out.interval_p50_s = percentile(gaps, 0.5);
    out.jitter_p50_s = percentile(lateness, 0.5);
    out.jitter_p99_s = percentile(lateness, 0.99);
  }

  const double span_ns = double(s.t_ns.back() - s.t_ns.front());
  if (complete(s, Metric::cpu_usage_ns)) {
    const auto& usage = s[Metric::cpu_usage_ns];
    if (span_ns > 0) out.cpu_cores_avg = double(usage.back() - usage.front()) / span_ns;
    // Rates over windows of at least kCpuRateWindowNs (or the interval, if longer): the kernel
    // charges CPU time to a cgroup at scheduler ticks, so rates over a few milliseconds are
    // mostly quantisation noise.
    const double window_ns = std::max(interval_ns, double(kCpuRateWindowNs));
    out.cpu_window_s = window_ns / 1e9;
    // A window holds at most what the quota lets through: a period's quota for every period it
    // touches (one more than it spans). A window that counted more was charged time run at a
    // tick's edge, or beyond the quota, which the kernel takes back by throttling the periods
    // after (CFS bandwidth's runtime debt): the excess is carried into the windows after it,
    // as the kernel repays it (issue 36: "peak 0.58 host cores" under a quota of 0.197).
    // Only where the quota held (the kernel counted its periods) at one period all run.
    const auto periods = delta(s, Metric::cpu_periods);
    const bool quota_held = cpu_period_s > 0 && capacity_cores > 0 && periods && *periods > 0;
    const double period_ns = cpu_period_s * 1e9;
    std::vector<double> rates;
    double carry = 0;
    for (size_t a = 0, b = 1; b < rows.size(); ++b) {
      const double dt = double(s.t_ns[rows[b]] - s.t_ns[rows[a]]);
      if (dt < window_ns * 0.999) continue;
      const auto c0 = usage[rows[a]], c1 = usage[rows[b]];
      const double counted = c1 >= c0 ? double(c1 - c0) : 0.0;
      const double cpu = counted + carry;
      a = b;
      // A period's quota (capacity x period) for each period the window may touch.
      const double most =
          quota_held ? capacity_cores * period_ns * (std::ceil(dt / period_ns) + 1) : cpu;
      if (counted > most) out.cpu_windows_carried += 1;  // its own count, not what it was passed
      const double shown = std::min(cpu, most);
      carry = cpu - shown;
      rates.push_back(shown / dt);
    }
    if (!rates.empty()) {
      out.cpu_cores_p95 = percentile(rates, 0.95);
      out.cpu_cores_peak = *std::max_element(rates.begin(), rates.end());
    }
    if (capacity_cores > 0) {
      auto fraction = [&](std::optional<double> cores) -> std::optional<double> {
        if (!cores) return std::nullopt;
        return *cores / capacity_cores;
      };
      out.cpu_capacity_avg = fraction(out.cpu_cores_avg);
      out.cpu_capacity_p95 = fraction(out.cpu_cores_p95);
      out.cpu_capacity_peak = fraction(out.cpu_cores_peak);
    }
  }
  auto periods = delta(s, Metric::cpu_periods);
  auto throttled = delta(s, Metric::cpu_throttled_periods);
  if (periods && throttled) {
    out.throttled_fraction = *periods ? double(*throttled) / double(*periods) : 0.0;
  }

  if (complete(s, Metric::memory_current_bytes)) {
    const auto& mem = s[Metric::memory_current_bytes];
    out.memory_sampled_peak_bytes = *std::max_element(mem.begin(), mem.end());
    if (span_ns > 0) {
      double area = 0;  // trapezoids over every row, extra samples included
      for (size_t i = 1; i < s.size(); ++i) {
        area += 0.5 * (double(mem[i]) + double(mem[i - 1])) * double(s.t_ns[i] - s.t_ns[i - 1]);
      }
      out.memory_avg_bytes = static_cast<std::uint64_t>(std::llround(area / span_ns));
    } else {
      out.memory_avg_bytes = mem.front();
    }
  }
  // The figures one metric makes alone (detail::kMetricTable): a counter's difference, a gauge's
  // sampled peak, microseconds in seconds.
  for (const detail::MetricRow& row : detail::kMetricTable) {
    if (row.summary_count) {
      out.*row.summary_count = row.cumulative ? delta(s, row.metric) : peak(s, row.metric);
    } else if (row.summary_seconds) {
      out.*row.summary_seconds = seconds(delta(s, row.metric));
    }
  }
  return out;
}

namespace {

// The value of a counter at time t, interpolated linearly between the rows around it.
std::optional<double> counter_at(const TimeSeries& s, Metric m, std::int64_t t) {
  if (!complete(s, m)) return std::nullopt;
  const auto& v = s[m];
  auto it = std::lower_bound(s.t_ns.begin(), s.t_ns.end(), t);
  if (it == s.t_ns.begin()) return double(v.front());
  if (it == s.t_ns.end()) return double(v.back());
  const size_t hi = static_cast<size_t>(it - s.t_ns.begin());
  const size_t lo = hi - 1;
  const double span = double(s.t_ns[hi] - s.t_ns[lo]);
  const double f = span > 0 ? double(t - s.t_ns[lo]) / span : 1.0;
  return double(v[lo]) + f * (double(v[hi]) - double(v[lo]));
}

// Fills the sampled figures of a phase [start, end] (ns since release).
void measure_phase(Phase& p, const TimeSeries& s, std::int64_t start, std::int64_t end) {
  auto c0 = counter_at(s, Metric::cpu_usage_ns, start);
  auto c1 = counter_at(s, Metric::cpu_usage_ns, end);
  if (c0 && c1) p.cpu_s = std::max(0.0, *c1 - *c0) / 1e9;
  if (!complete(s, Metric::memory_current_bytes)) return;
  const auto& mem = s[Metric::memory_current_bytes];
  // Memory when the phase began: the last sample at or before the mark (the workload goes on
  // after marking, so the sample the mark triggers already holds some of the phase's own
  // memory). The peak: every sample up to the first one at or after the end (the one the end
  // mark triggers).
  size_t first = static_cast<size_t>(
      std::upper_bound(s.t_ns.begin(), s.t_ns.end(), start) - s.t_ns.begin());
  first = first > 0 ? first - 1 : 0;
  size_t last = static_cast<size_t>(
      std::lower_bound(s.t_ns.begin(), s.t_ns.end(), end) - s.t_ns.begin());
  if (s.size() == 0) return;
  first = std::min(first, s.size() - 1);
  last = std::min(last, s.size() - 1);
  p.memory_start_bytes = mem[first];
  std::uint64_t top = 0;
  for (size_t i = first; i <= last; ++i) top = std::max(top, mem[i]);
  p.memory_peak_bytes = top;
  p.memory_net_peak_bytes = static_cast<std::int64_t>(top) - static_cast<std::int64_t>(mem[first]);
}

// A phase's name as the workload wrote it, made printable without making two names one: a
// report writes UTF-8, which made two names differing only in bytes that are not UTF-8 one
// name (and one statistic key for both). A backslash is doubled, so that an escape stands
// only for what it escapes (a tab and the text "\u0009" stay two names).
std::string phase_name(std::string_view raw) {
  std::string doubled;
  doubled.reserve(raw.size());
  for (char c : raw) {
    if (c == '\\') doubled += '\\';
    doubled += c;
  }
  return detail::printable(doubled);
}

}  // namespace

std::vector<Phase> parse_phases(std::string_view marks, std::int64_t release_ns,
                                const TimeSeries& series, double end_s, std::size_t* malformed) {
  struct Open {
    std::string name;
    std::int64_t start;
    size_t index;  // into out
  };
  std::vector<Phase> out;
  std::vector<std::int64_t> starts, ends;
  std::vector<Open> open_explicit;  // B ... E
  std::optional<Open> open_mark;    // M ... next M
  std::size_t bad = 0;
  if (!std::isfinite(end_s) || std::fabs(end_s) > 9e9) {
    throw Error(fmt::format("parse_phases: the run's end {} s is not a time", end_s));
  }
  detail::check_shape(series);
  const std::int64_t end_ns = static_cast<std::int64_t>(std::llround(end_s * 1e9));

  auto begin = [&](std::string_view name, std::int64_t t) {
    Phase p;
    p.name = phase_name(name);
    p.start_s = double(t) / 1e9;
    out.push_back(std::move(p));
    starts.push_back(t);
    ends.push_back(t);
    return Open{std::string(name), t, out.size() - 1};
  };
  auto finish = [&](const Open& o, std::int64_t t) {
    out[o.index].end_s = double(t) / 1e9;
    ends[o.index] = t;
  };

  size_t pos = 0;
  while (pos < marks.size()) {
    size_t nl = marks.find('\n', pos);
    if (nl == std::string_view::npos) {  // a partial last line (the workload was killed)
      ++bad;
      break;
    }
    std::string_view line = marks.substr(pos, nl - pos);
    pos = nl + 1;
    const size_t a = line.find(' ');
    auto t_abs = a == std::string_view::npos ? std::nullopt : detail::parse_u64(line.substr(0, a));
    // A stamp past int64 (the workload writes these lines) is malformed, not an overflow.
    std::int64_t t = 0;
    if (!t_abs || line.size() < a + 3 || line[a + 2] != ' ' ||
        *t_abs > std::uint64_t(std::numeric_limits<std::int64_t>::max()) ||
        __builtin_sub_overflow(static_cast<std::int64_t>(*t_abs), release_ns, &t)) {
      ++bad;
      continue;
    }
    const char kind = line[a + 1];
    const std::string_view name = line.substr(a + 3);
    if (kind == 'M') {
      if (open_mark) finish(*open_mark, t);
      open_mark = begin(name, t);
    } else if (kind == 'B') {
      open_explicit.push_back(begin(name, t));
    } else if (kind == 'E') {
      auto it = std::find_if(open_explicit.rbegin(), open_explicit.rend(),
                             [&](const Open& o) { return o.name == name; });
      if (it == open_explicit.rend()) {
        ++bad;  // an end without a begin
        continue;
      }
      finish(*it, t);
      open_explicit.erase(std::next(it).base());
    } else if (kind != detail::kActivationMark) {  // an activation count: no phase
      ++bad;
    }
  }
  auto close_at_exit = [&](const Open& o) {
    finish(o, std::max(end_ns, o.start));
    out[o.index].ended_by_exit = true;
  };
  if (open_mark) close_at_exit(*open_mark);
  for (const Open& o : open_explicit) close_at_exit(o);
  for (size_t i = 0; i < out.size(); ++i) measure_phase(out[i], series, starts[i], ends[i]);
  if (malformed) *malformed = bad;
  return out;
}

// Statistics.

namespace {

// Continued fraction of the regularised incomplete beta function (modified Lentz).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-15) break;
  }
  return h;
}

// I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
  return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double dof) {
  if (std::isnan(t) || !(dof > 0)) {
    throw Error(fmt::format("student_t_cdf needs a t that is a number and dof > 0, got t = {}, "
                            "dof = {}",
                            t, dof));
  }
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // Past 1e7 degrees of freedom the normal distribution is within 1e-7 of Student's t, and
  // the incomplete beta function's fraction no longer converges (1e15 gave 0.46 at t = 1.96).
  if (dof > 1e7) return 0.5 * std::erfc(-t / std::sqrt(2.0));
  const double tail = 0.5 * incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t));
  return t >= 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (!(p > 0 && p < 1) || !(dof > 0)) {
    throw Error(fmt::format("student_t_quantile needs 0 < p < 1 and dof > 0, got p = {}, "
                            "dof = {}",
                            p, dof));
  }
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, dof);
  // Bisection on the CDF: monotone, and 200 halvings of [0, hi] reach double precision.
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, dof) < p) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, dof) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

Statistic statistics(const std::vector<double>& values) {
  if (values.empty()) throw Error("cannot describe an empty sample: no runs were measured");
  for (double v : values) {
    // NaN would break the sort of the median (no strict weak order), inf every spread.
    if (!std::isfinite(v)) throw Error(fmt::format("cannot describe a sample holding {}", v));
  }
  Statistic s;
  s.n = values.size();
  s.median = percentile(values, 0.5);
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / double(s.n);
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  if (s.n >= 2) {
    double ss = 0;
    for (double v : values) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / double(s.n - 1));
    const double half =
        student_t_quantile(0.975, double(s.n - 1)) * s.stddev / std::sqrt(double(s.n));
    s.ci95_low = s.mean - half;
    s.ci95_high = s.mean + half;
  } else {
    s.ci95_low = s.ci95_high = s.mean;
  }
  return s;
}

namespace {

// Every name figures() can give: a run's figures, and each phase's after "phase.<name>.".
constexpr std::string_view kRunFigureNames[] = {
    "wall_time_s",        "projected_wall_time_s", "all_cores_wall_time_s",
    "cpu_user_s",         "cpu_system_s",          "cpu_time_s",
    "throttled_s",        "child_max_rss_bytes",   "peak_memory_bytes",
    "cpu_cores_avg",      "cpu_cores_p95",         "cpu_cores_peak",
    "cpu_capacity_avg",   "throttled_fraction",    "memory_avg_bytes",
    "memory_sampled_peak_bytes", "io_read_bytes",  "io_write_bytes",
    "net_rx_bytes",       "net_tx_bytes",          "tasks_peak",
    "energy_j",           "all_cores_energy_j"};
constexpr std::string_view kPhaseFigureNames[] = {
    "wall_time_s", "projected_wall_time_s", "all_cores_wall_time_s", "cpu_s",
    "memory_net_peak_bytes", "energy_j", "all_cores_energy_j"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

}  // namespace

bool is_figure_name(std::string_view name) {
  if (listed(kRunFigureNames, name)) return true;
  constexpr std::string_view kPhase = "phase.";
  if (name.substr(0, kPhase.size()) != kPhase) return false;
  // "phase.<name>.<figure>": a phase may be named anything, dots included, but not nothing.
  const std::string_view rest = name.substr(kPhase.size());
  const auto dot = rest.rfind('.');
  return dot != std::string_view::npos && dot > 0 &&
         listed(kPhaseFigureNames, rest.substr(dot + 1));
}

bool is_size_figure(std::string_view name) {
  constexpr std::string_view kBytes = "_bytes";
  return name.size() >= kBytes.size() && name.substr(name.size() - kBytes.size()) == kBytes;
}

void check_figure_name(std::string_view name, std::string_view what) {
  if (is_figure_name(name)) return;
  throw Error(fmt::format("{} '{}' is not a figure edgeprof measures: give one of {}, or "
                          "phase.<phase name>.<one of {}> (docs/repeats-and-reports.md)",
                          what, name, fmt::join(kRunFigureNames, ", "),
                          fmt::join(kPhaseFigureNames, ", ")));
}

std::map<std::string, double> figures(const Result& r) {
  std::map<std::string, double> f;
  f["wall_time_s"] = r.wall_time_s;
  if (const auto projected = r.projected_s(r.wall_time_s)) f["projected_wall_time_s"] = *projected;
  f["all_cores_wall_time_s"] = r.all_cores_s(r.wall_time_s);
  f["cpu_user_s"] = r.cpu_user_s;
  f["cpu_system_s"] = r.cpu_system_s;
  f["cpu_time_s"] = r.cpu_user_s + r.cpu_system_s;
  f["throttled_s"] = r.throttled_s;
  f["child_max_rss_bytes"] = double(r.child_max_rss_bytes);
  if (r.peak_memory_bytes) f["peak_memory_bytes"] = double(*r.peak_memory_bytes);
  const Summary& s = r.summary;
  auto put = [&](const char* name, auto v) {
    if (v) f[name] = double(*v);
  };
  put("cpu_cores_avg", s.cpu_cores_avg);
  put("cpu_cores_p95", s.cpu_cores_p95);
  put("cpu_cores_peak", s.cpu_cores_peak);
  put("cpu_capacity_avg", s.cpu_capacity_avg);
  put("throttled_fraction", s.throttled_fraction);
  put("memory_avg_bytes", s.memory_avg_bytes);
  put("memory_sampled_peak_bytes", s.memory_sampled_peak_bytes);
  put("io_read_bytes", s.io_read_bytes);
  put("io_write_bytes", s.io_write_bytes);
  put("net_rx_bytes", s.net_rx_bytes);
  put("net_tx_bytes", s.net_tx_bytes);
  put("tasks_peak", s.tasks_peak);
  put("energy_j", r.energy_j);
  put("all_cores_energy_j", r.all_cores_energy_j(r.wall_time_s, r.cpu_user_s + r.cpu_system_s));
  // Per phase name: wall, CPU, net peak memory, energy, all-core energy (summed, or the max).
  std::map<std::string, std::array<std::optional<double>, 5>> phases;
  for (const Phase& p : r.phases) {
    auto& v = phases[p.name];
    v[0] = v[0].value_or(0) + p.wall_time_s();
    if (p.cpu_s) v[1] = v[1].value_or(0) + *p.cpu_s;
    if (p.memory_net_peak_bytes) {
      v[2] = std::max(v[2].value_or(-1e300), double(*p.memory_net_peak_bytes));
    }
    if (p.energy_j) v[3] = v[3].value_or(0) + *p.energy_j;
    if (p.cpu_s) {
      if (auto e = r.all_cores_energy_j(p.wall_time_s(), *p.cpu_s)) v[4] = v[4].value_or(0) + *e;
    }
  }
  for (const auto& [name, v] : phases) {
    put(("phase." + name + ".wall_time_s").c_str(), v[0]);
    if (v[0]) put(("phase." + name + ".projected_wall_time_s").c_str(), r.projected_s(*v[0]));
    if (v[0]) f["phase." + name + ".all_cores_wall_time_s"] = r.all_cores_s(*v[0]);
    put(("phase." + name + ".cpu_s").c_str(), v[1]);
    put(("phase." + name + ".memory_net_peak_bytes").c_str(), v[2]);
    put(("phase." + name + ".energy_j").c_str(), v[3]);
    put(("phase." + name + ".all_cores_energy_j").c_str(), v[4]);
  }
  return f;
}


const char* figure_provenance(const Result& result, const std::string& name) {
  const std::string own = detail::figure_own_name(name);
  if (own.rfind("projected_", 0) == 0) return "projected";
  // An all-core energy of a projected run is both: the projection is what a ranking must say.
  if (own.rfind("all_cores_", 0) == 0 && result.plan.threads_projection) return "projected";
  if (own == "energy_j" || own == "all_cores_energy_j") return "estimated";
  // Read from the samples, as the report's provenance table says (a ranking by one was
  // headed "measured").
  const bool phase = own.size() < name.size();
  if (own == "cpu_cores_p95" || own == "cpu_cores_peak" || own == "memory_avg_bytes" ||
      own == "memory_sampled_peak_bytes" || own == "tasks_peak" ||
      (phase && (own == "cpu_s" || own == "memory_net_peak_bytes"))) {
    return "sampled";
  }
  return "measured";
}

std::map<std::string, Statistic> describe_runs(const std::vector<Result>& runs) {
  std::map<std::string, std::vector<double>> values;
  for (const Result& r : runs) {
    for (const auto& [name, v] : figures(r)) values[name].push_back(v);
  }
  std::map<std::string, Statistic> out;
  for (const auto& [name, v] : values) {
    // Present in every run, and finite in each (a figure of NaN has no statistics).
    const bool finite = std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    if (v.size() == runs.size() && finite) out[name] = statistics(v);
  }
  return out;
}

std::optional<double> estimate_energy_j(const PowerDescription& power, double wall_s,
                                        double cpu_s, double capacity_cores) {
  if (!power.idle_watts || !power.loaded_watts || !(capacity_cores > 0)) return std::nullopt;
  if (!std::isfinite(wall_s) || !std::isfinite(cpu_s)) return std::nullopt;
  // The share of the device's CPU capacity in use, averaged over the interval; above 1 only
  // through counter noise, which would overstate the power beyond `loaded`.
  const double busy_s = std::min(std::max(cpu_s, 0.0) / capacity_cores, std::max(wall_s, 0.0));
  return *power.idle_watts * wall_s + (*power.loaded_watts - *power.idle_watts) * busy_s;
}

std::optional<double> estimate_projected_energy_j(const PowerDescription& core_power, int threads,
                                                  double speedup, double wall_s, double cpu_s,
                                                  double capacity_cores) {
  if (!core_power.idle_watts || !core_power.loaded_watts || threads < 1 || !(speedup > 0)) {
    return std::nullopt;
  }
  // The whole device: the same idle, `threads` times the one core's loaded share.
  PowerDescription whole;
  whole.idle_watts = core_power.idle_watts;
  whole.loaded_watts = *core_power.idle_watts +
                       (*core_power.loaded_watts - *core_power.idle_watts) * threads;
  // Its capacity is `threads` cores, each as busy over wall_s / speedup as the one was over
  // wall_s: the CPU time scales by threads / speedup.
  const double n = threads;
  return estimate_energy_j(whole, wall_s / speedup, cpu_s * n / speedup, capacity_cores * n);
}

std::optional<double> Result::all_cores_energy_j(double measured_s, double cpu_s) const {
  if (plan.threads_projection) {
    return estimate_projected_energy_j(device.power, plan.threads_projection->threads,
                                       plan.threads_projection->speedup, measured_s, cpu_s,
                                       plan.capacity_cores());
  }
  return estimate_energy_j(device.power, measured_s, cpu_s, plan.capacity_cores());
}

}  // namespace edgeprof
