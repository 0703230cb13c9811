// The pure analysis of a run: summary, phases, statistics, JSON and CSV. No kernel needed.
#include <catch2/catch.hpp>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/metric_table.hpp"
#include "analysis/short_phases.hpp"
#include "cgroup/files.hpp"
#include "edgeprof/edgeprof.hpp"
#include "sys/parse.hpp"

using namespace edgeprof;

namespace {

// A series with one row per `t_ms`, the given CPU (ms of CPU time, cumulative) and memory.
TimeSeries make_series(const std::vector<double>& t_ms, const std::vector<double>& cpu_ms,
                       const std::vector<std::uint64_t>& memory,
                       std::vector<std::uint8_t> scheduled = {}) {
  TimeSeries s;
  for (size_t i = 0; i < t_ms.size(); ++i) {
    s.t_ns.push_back(std::llround(t_ms[i] * 1e6));
    s.scheduled.push_back(scheduled.empty() ? 1 : scheduled[i]);
    for (auto& column : s.values) column.push_back(0);
    s.values[static_cast<size_t>(Metric::cpu_usage_ns)].back() =
        static_cast<std::uint64_t>(std::llround(cpu_ms[i] * 1e6));
    s.values[static_cast<size_t>(Metric::memory_current_bytes)].back() = memory[i];
  }
  s.available.set(static_cast<size_t>(Metric::cpu_usage_ns));
  s.available.set(static_cast<size_t>(Metric::memory_current_bytes));
  s.complete = s.available;
  return s;
}

}  // namespace

TEST_CASE("summarize: CPU in host cores and device capacity, memory, the achieved interval",
          "[report]") {
  // 50 ms interval; CPU: 1 core for 200 ms, then 0.5 cores; samples at t = 50 and 250 ms are
  // 0.2 ms late.
  TimeSeries s = make_series({0, 50.2, 100, 150, 200, 250.2, 300, 350, 400},
                             {0, 50.2, 100, 150, 200, 225.1, 250, 275, 300},
                             {100, 100, 300, 300, 100, 100, 100, 100, 100});
  Summary sum = summarize(s, 0.050, 2.0, 1, true);
  CHECK(sum.samples == 9);
  CHECK(sum.missed_deadlines == 1);
  CHECK(sum.pressure_host_wide);
  CHECK(sum.cpu_window_s == Approx(0.1));
  CHECK(*sum.cpu_cores_avg == Approx(0.75));
  CHECK(*sum.cpu_cores_peak == Approx(1.0));  // windows: 1, 1, 0.5, 0.5
  CHECK(*sum.cpu_cores_p95 == Approx(1.0));
  CHECK(*sum.cpu_capacity_avg == Approx(0.375));  // of 2 cores of capacity
  CHECK(*sum.cpu_capacity_peak == Approx(0.5));
  CHECK(*sum.memory_sampled_peak_bytes == 300);
  // Trapezoids: 100 x 50.2 + 200 x 49.8 + 300 x 50 + 200 x 50 + 100 x 200, over 400 ms.
  CHECK(*sum.memory_avg_bytes == 150);
  CHECK(*sum.interval_p50_s == Approx(0.050));
  CHECK(*sum.jitter_p50_s == Approx(0.0).margin(1e-9));
  CHECK(*sum.jitter_p99_s == Approx(0.0002).epsilon(0.05));
  // Metrics that were not sampled are unset, never zero.
  CHECK_FALSE(sum.io_read_bytes);
  CHECK_FALSE(sum.tasks_peak);
  CHECK_FALSE(sum.throttled_fraction);
}

TEST_CASE("summarize: CPU rates over windows of 100 ms, extra samples left out", "[report]") {
  // 10 ms interval: a counter charged at scheduler ticks (0 then 8 ms at once) must not read as
  // 0 then 2 cores; an extra sample 0.05 ms after t = 100 ms (a phase mark) must not make a
  // spike either.
  std::vector<double> t, cpu;
  std::vector<std::uint8_t> scheduled;
  for (int i = 0; i <= 20; ++i) {
    t.push_back(i * 10.0);
    cpu.push_back((i / 2) * 8.0);  // 8 ms of CPU every 20 ms in steps: 0.4 cores
    scheduled.push_back(1);
    if (i == 10) {
      t.push_back(100.05);
      cpu.push_back(80.0 + 3.0);
      scheduled.push_back(0);
    }
  }
  TimeSeries s = make_series(t, cpu, std::vector<std::uint64_t>(t.size(), 1), scheduled);
  Summary sum = summarize(s, 0.010, 1.0);
  CHECK(*sum.cpu_cores_peak == Approx(0.4));
  CHECK(*sum.cpu_cores_p95 == Approx(0.4));
  CHECK(*sum.interval_p50_s == Approx(0.010));
  CHECK(s.cpu_cores().size() == s.size() - 1);  // the raw per-sample rates stay available
}

TEST_CASE("summarize: a window's CPU beyond the quota is carried into the windows after it",
          "[report]") {
  // 0.2 cores of quota (10 ms periods), sampled every 10 ms. A window may hold eleven periods'
  // quota (it touches eleven): 22 ms. The third window counted 60 ms (the kernel charged a lump
  // it then took back by throttling): 0.2, 0, 0.6, 0.2, 0.1 cores as counted.
  const double per_10ms[] = {2, 0, 6, 2, 1};
  std::vector<double> t{0}, cpu{0};
  for (int w = 0; w < 5; ++w) {
    for (int i = 0; i < 10; ++i) {
      t.push_back(t.back() + 10);
      cpu.push_back(cpu.back() + per_10ms[w]);
    }
  }
  TimeSeries s = make_series(t, cpu, std::vector<std::uint64_t>(t.size(), 1));
  // The kernel counted a period every 10 ms: the quota held.
  auto& periods = s.values[static_cast<size_t>(Metric::cpu_periods)];
  for (size_t i = 0; i < periods.size(); ++i) periods[i] = i;
  s.available.set(static_cast<size_t>(Metric::cpu_periods));
  s.complete = s.available;
  Summary sum = summarize(s, 0.010, 0.2, 0, false, 0.010);
  // Shown 20, 0, 22 (38 carried), 22 (20 + 38: 36 carried), 22 (10 + 36: 24 left): every
  // window one the quota could hold, none dropped, and nothing moved backwards in time. One
  // window counted too much itself; the two after it only took its excess.
  CHECK(sum.cpu_windows_carried == 1);
  CHECK(*sum.cpu_cores_peak == Approx(0.22));
  CHECK(*sum.cpu_capacity_peak == Approx(1.1));
  CHECK(*sum.cpu_cores_p95 == Approx(0.22));
  CHECK(*sum.cpu_cores_avg == Approx(0.22));  // measured: the counter's whole difference
  // The old merging (with a tick's slack at either end) reported 0.3 cores, 150%.
  // A bigger quota holds 0.6 cores: nothing carried, the counted rates shown.
  const Summary big = summarize(s, 0.010, 2.0, 0, false, 0.010);
  CHECK(big.cpu_windows_carried == 0);
  CHECK(*big.cpu_cores_peak == Approx(0.6));
  // Without the quota's period (a speed that changed during the run), nothing is carried.
  CHECK(summarize(s, 0.010, 0.2).cpu_windows_carried == 0);
  CHECK(*summarize(s, 0.010, 0.2).cpu_cores_peak == Approx(0.6));
  // Nor without periods counted (no quota held: no cpu controller, or no limit).
  s.complete.reset(static_cast<size_t>(Metric::cpu_periods));
  CHECK(summarize(s, 0.010, 0.2, 0, false, 0.010).cpu_windows_carried == 0);
}

TEST_CASE("a metric incomplete after a failed source is not summarised", "[report]") {
  TimeSeries s = make_series({0, 10}, {0, 5}, {1, 2});
  s.complete.reset(static_cast<size_t>(Metric::memory_current_bytes));
  Summary sum = summarize(s, 0.010, 1.0);
  CHECK(sum.cpu_cores_avg);
  CHECK_FALSE(sum.memory_avg_bytes);
  CHECK_FALSE(sum.memory_sampled_peak_bytes);
}

TEST_CASE("a repeated phase shorter than the period is named, with its count, median and mean",
          "[report][phase]") {
  const auto phase = [](const std::string& name, double start, double wall, bool open = false) {
    Phase p;
    p.name = name;
    p.start_s = start;
    p.end_s = start + wall;
    p.ended_by_exit = open;
    return p;
  };
  std::vector<Phase> phases;
  // 'infer': 0.002, 0.002, 0.050 s: median 2 ms, mean 18 ms. 'load' once (not repeated);
  // 'step' three times at 30 ms; an open phase does not count.
  for (double w : {0.002, 0.050, 0.002}) phases.push_back(phase("infer", 0, w));
  phases.push_back(phase("load", 0, 0.001));
  for (int i = 0; i < 3; ++i) phases.push_back(phase("step", 1, 0.030));
  phases.push_back(phase("infer", 2, 0.001, true));
  const auto w = detail::short_phase_warning(phases, 0.023);
  REQUIRE(w);
  CHECK(w->find("phase 'infer' (3 times, median 2 ms, mean 18 ms) took a median shorter than "
                "the quota's period (23 ms)") == 0);
  CHECK(w->find("step") == std::string::npos);
  CHECK(w->find("load") == std::string::npos);
  // A longer period catches 'step' too, the shortest first.
  const auto both = detail::short_phase_warning(phases, 0.1);
  REQUIRE(both);
  CHECK(both->find("phases 'infer' (3 times") == 0);
  CHECK(both->find("'step' (3 times, median 30 ms") != std::string::npos);
  CHECK_FALSE(detail::short_phase_warning(phases, 0.0015));
  CHECK_FALSE(detail::short_phase_warning(phases, 0));
  CHECK_FALSE(detail::short_phase_warning({}, 0.1));
}

TEST_CASE("a mark stamped past int64 is malformed, and a run's end must be a time",
          "[report][phase]") {
  // The workload writes these lines: 2^63 and up was a signed overflow in the profiler.
  std::size_t malformed = 0;
  const auto phases = parse_phases("9223372036854775808 B x\n18446744073709551615 M y\n", 5, {},
                                   1.0, &malformed);
  CHECK(phases.empty());
  CHECK(malformed == 2);
  // Within int64, but its distance from the release is not: malformed too.
  malformed = 0;
  CHECK(parse_phases("9223372036854775807 M z\n", -5, {}, 1.0, &malformed).empty());
  CHECK(malformed == 1);
  CHECK_THROWS_AS(parse_phases("", 0, {}, std::nan(""), nullptr), Error);
}

TEST_CASE("phases from marks: consecutive marks, explicit begin/end, open at exit",
          "[report][phase]") {
  const std::int64_t release = 5'000'000'000;  // the workload's clock at release
  // Samples every 10 ms from release; memory grows from 10 to 50 during "load".
  TimeSeries s = make_series({0, 10, 20, 30, 40, 50}, {0, 1, 2, 12, 22, 23},
                             {10, 30, 50, 50, 50, 20});
  auto at = [&](double ms) { return std::to_string(release + std::llround(ms * 1e6)); };
  const std::string marks = at(5) + " M load\n" + at(20) + " M compute\n" + at(20) +
                            " B inner loop\n" + at(40) + " E inner loop\n" + at(41) +
                            " E never begun\n" + "garbage\n" + at(45) + " B";
  std::size_t malformed = 0;
  auto phases = parse_phases(marks, release, s, 0.050, &malformed);
  CHECK(malformed == 3);  // the end without a begin, the garbage line, the partial last line
  REQUIRE(phases.size() == 3);
  CHECK(phases[0].name == "load");
  CHECK(phases[0].start_s == Approx(0.005));
  CHECK(phases[0].end_s == Approx(0.020));
  CHECK_FALSE(phases[0].ended_by_exit);
  CHECK(*phases[0].cpu_s == Approx(0.0015));  // interpolated: 0.5 ms -> 2 ms
  CHECK(*phases[0].memory_start_bytes == 10);  // the last sample before the start
  CHECK(*phases[0].memory_peak_bytes == 50);
  CHECK(*phases[0].memory_net_peak_bytes == 40);
  CHECK(phases[1].name == "compute");
  CHECK(phases[1].ended_by_exit);
  CHECK(phases[1].end_s == Approx(0.050));
  CHECK(phases[2].name == "inner loop");  // names may contain spaces
  CHECK(phases[2].wall_time_s() == Approx(0.020));
  CHECK(*phases[2].cpu_s == Approx(0.020));
  CHECK(*phases[2].memory_net_peak_bytes == 0);
}

TEST_CASE("Student t quantiles match reference tables", "[report][stats]") {
  // Reference values: scipy.stats.t.ppf.
  CHECK(student_t_quantile(0.975, 1) == Approx(12.706204736).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 2) == Approx(4.302652730).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 4) == Approx(2.776445105).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 10) == Approx(2.228138852).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 30) == Approx(2.042272456).epsilon(1e-9));
  CHECK(student_t_quantile(0.95, 4) == Approx(2.131846786).epsilon(1e-9));
  CHECK(student_t_quantile(0.995, 7) == Approx(3.499483297).epsilon(1e-9));
  CHECK(student_t_quantile(0.025, 10) == Approx(-2.228138852).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 1e6) == Approx(1.959966).epsilon(1e-5));
  // Past 1e12 degrees of freedom the quantile was 0.25 (1e15), 8.6e141 (1e300) and 0 (inf).
  for (double dof : {1e12, 1e15, 1e300, std::numeric_limits<double>::infinity()}) {
    CHECK(student_t_quantile(0.975, dof) == Approx(1.959964).epsilon(1e-6));
    CHECK(student_t_cdf(1.959964, dof) == Approx(0.975).epsilon(1e-6));
  }
  CHECK_THROWS_AS(student_t_cdf(std::nan(""), 3), Error);
  CHECK_THROWS_AS(student_t_cdf(1, 0), Error);
  CHECK_THROWS_AS(student_t_cdf(1, std::nan("")), Error);
  CHECK_THROWS_AS(student_t_quantile(1.0, 3), Error);
  CHECK_THROWS_AS(student_t_quantile(0.5, 0), Error);
}

TEST_CASE("statistics of repeated figures", "[report][stats]") {
  Statistic s = statistics({2, 4, 4, 4, 5, 5, 7, 9});
  CHECK(s.n == 8);
  CHECK(s.mean == Approx(5));
  CHECK(s.median == Approx(4.5));
  CHECK(s.stddev == Approx(2.138089935));
  const double half = 2.364624252 * 2.138089935 / std::sqrt(8.0);
  CHECK(s.ci95_low == Approx(5 - half));
  CHECK(s.ci95_high == Approx(5 + half));
  CHECK(s.min == 2);
  CHECK(s.max == 9);
  Statistic one = statistics({3});
  CHECK(one.stddev == 0);
  CHECK(one.ci95_low == 3);
  CHECK_THROWS_AS(statistics({}), Error);
}

namespace {

Result sample_result() {
  Result r;
  r.exit_code = 0;
  r.wall_time_s = 1.25;
  r.cpu_user_s = 0.75;
  r.cpu_system_s = 0.1;
  r.peak_memory_bytes = 123456789;
  r.peak_memory_source = detail::files::v2::kMemoryPeak;
  r.throttled_s = 0.3;
  r.throttled_periods = 30;
  r.periods = 125;
  r.child_max_rss_bytes = 100000;
  r.placement = "clone3";
  r.device = make_device("board", 2, 0.5, "512MiB");
  r.plan.cpus = {0, 1};
  r.plan.cpu_period_us = 10000;
  r.plan.cpu_quota_us = 10000;
  r.plan.quota_scale = 1.25;  // round-trips (reports before it read as 1)
  r.plan.host_drift = 1.15;   // so do the drift applied and the probe's reading
  r.plan.drift_probed = 1.15;
  r.plan.own_share_check = 1.3;  // and the own share's check
  r.plan.memory_max_bytes = 512u << 20;
  r.plan.notes = {"a note"};
  r.cgroup_mode = CgroupMode::hybrid;
  r.unapplied = {"I/O bandwidth"};
  r.command = {"python3", "-c", "print(\"hi\")\n"};
  r.network_isolated = true;
  r.series = make_series({-0.1, 10, 20}, {0, 3, 9}, {5, 7, 6}, {1, 1, 0});
  r.summary = summarize(r.series, 0.01, 1.0);
  r.sources = {{detail::files::v2::kCpuStat, true, false, false, ""},
               {detail::files::v2::kIoStat, false, false, false, "opening io.stat: No such file"}};
  Phase p;
  p.name = "load";
  p.start_s = 0.001;
  p.end_s = 0.015;
  p.cpu_s = 0.004;
  p.memory_start_bytes = 7;
  p.memory_peak_bytes = 7;
  p.memory_net_peak_bytes = 0;
  r.phases = {p};
  r.warnings = {"careful"};
  r.host = host_info();
  r.edgeprof_version = version();
  return r;
}

}  // namespace

TEST_CASE("a result survives JSON unchanged", "[report][json]") {
  const Result r = sample_result();
  const std::string text = to_json(r);
  const Result back = result_from_json(text);
  CHECK(back == r);
  CHECK(back.series == r.series);
  CHECK(back.command == r.command);
  CHECK(back.summary.cpu_cores_avg == r.summary.cpu_cores_avg);
  CHECK_FALSE(back.summary.io_read_bytes);  // unset stays unset
  CHECK(to_json(back) == text);
  CHECK(text.find("\"schema_version\":1") != std::string::npos);

  Result changed = r;
  changed.series.values[static_cast<size_t>(Metric::cpu_usage_ns)][1] += 1;
  CHECK(changed != r);
}

TEST_CASE("each metric's row: one name, and its summary and Result fields made and kept",
          "[report][json]") {
  using detail::kMetricTable;
  // Every metric a row, each name once, the names to_string and metric_from_string use.
  std::set<std::string> names, fields;
  for (const detail::MetricRow& row : kMetricTable) {
    CHECK(names.insert(row.name).second);
    CHECK(metric_from_string(row.name) == row.metric);
    CHECK(is_cumulative(row.metric) == row.cumulative);
    if (row.summary_name) CHECK(fields.insert(row.summary_name).second);
    if (row.result_name) CHECK(fields.insert(row.result_name).second);
    // A Result field is a run's difference: only a counter has one.
    if (row.result_count || row.result_seconds) CHECK(row.cumulative);
  }
  CHECK(names.size() == size_t(kMetricCount));
  // The fields the table makes, pinned: a row that lost its field would pass the loops below.
  CHECK(fields == std::set<std::string>{
                      "memory_anon_peak_bytes", "memory_file_peak_bytes", "memory_swap_peak_bytes",
                      "major_faults", "io_read_bytes", "io_write_bytes", "io_read_ops",
                      "io_write_ops", "pressure_cpu_some_s", "pressure_memory_some_s",
                      "pressure_memory_full_s", "pressure_io_some_s", "pressure_io_full_s",
                      "tasks_peak", "net_rx_bytes", "net_tx_bytes", "net_rx_packets",
                      "net_tx_packets", "periods", "throttled_periods", "throttled_s",
                      "oom_kills"});

  // A series in which metric i grows by 1000 * (i + 1) over three rows (a gauge peaks in the
  // middle): each table-made summary field holds its own metric's figure.
  TimeSeries s = make_series({0, 100, 200}, {0, 50, 100}, {10, 20, 15});
  for (const detail::MetricRow& row : kMetricTable) {
    const auto i = static_cast<size_t>(row.metric);
    const std::uint64_t step = 1000 * (i + 1);
    s.values[i] = row.cumulative ? std::vector<std::uint64_t>{7, 7 + step, 7 + 2 * step}
                                 : std::vector<std::uint64_t>{7, 7 + 2 * step, 7 + step};
    s.available.set(i);
  }
  s.complete = s.available;
  Result r = sample_result();
  r.summary = summarize(s, 0.1, 1.0);
  std::uint64_t n = 1;
  for (const detail::MetricRow& row : kMetricTable) {
    const std::uint64_t step = 1000 * (static_cast<size_t>(row.metric) + 1);
    INFO(row.name);
    if (row.summary_count) {
      CHECK(r.summary.*row.summary_count == (row.cumulative ? 2 * step : 7 + 2 * step));
    }
    if (row.summary_seconds) {
      CHECK(r.summary.*row.summary_seconds == Approx(double(2 * step) / 1e6));
    }
    if (row.result_count) r.*row.result_count = 100 + n++;
    if (row.result_seconds) r.*row.result_seconds = 0.25 * double(n++);
  }
  // Written and read back under the names the table gives.
  const std::string text = to_json(r);
  const Result back = result_from_json(text);
  for (const detail::MetricRow& row : kMetricTable) {
    INFO(row.name);
    const auto written = [&](const char* key) {
      return text.find(fmt::format("\"{}\":", key)) != std::string::npos;
    };
    if (row.summary_name) CHECK(written(row.summary_name));
    if (row.result_name) CHECK(written(row.result_name));
    if (row.summary_count) CHECK(back.summary.*row.summary_count == r.summary.*row.summary_count);
    if (row.summary_seconds) {
      CHECK(back.summary.*row.summary_seconds == r.summary.*row.summary_seconds);
    }
    if (row.result_count) CHECK(back.*row.result_count == r.*row.result_count);
    if (row.result_seconds) CHECK(back.*row.result_seconds == r.*row.result_seconds);
  }
  // The end-of-run counters: each Result field's metric, and the CPU time's split.
  for (Metric m : {Metric::cpu_user_ns, Metric::cpu_system_ns, Metric::cpu_periods,
                   Metric::cpu_throttled_periods, Metric::cpu_throttled_ns,
                   Metric::memory_oom_kills}) {
    CHECK(detail::kCounterMetrics.test(static_cast<size_t>(m)));
  }
  CHECK(detail::kCounterMetrics.count() == 6);

  // A report from before a counter was added reads it as 0, the rest as written.
  auto j = nlohmann::json::parse(text);
  j.erase("oom_kills");
  const Result older = result_from_json(j.dump());
  CHECK(older.oom_kills == 0u);
  CHECK(older.periods == r.periods);
}

TEST_CASE("reading JSON that is not a report names what is wrong", "[report][json]") {
  CHECK_THROWS_WITH(result_from_json("{\"a\": 1}"), Catch::Contains("not an edgeprof report"));
  CHECK_THROWS_WITH(result_from_json("[1, 2"), Catch::Contains("cannot read"));
  std::string newer = to_json(sample_result());
  newer.replace(newer.find("\"schema_version\":1"), 18, "\"schema_version\":99");
  CHECK_THROWS_WITH(result_from_json(newer), Catch::Contains("upgrade edgeprof"));
  std::string broken = to_json(sample_result());
  broken.replace(broken.find("\"wall_time_s\":1.25"), 13, "\"wall_time_x\"");
  CHECK_THROWS_WITH(result_from_json(broken), Catch::Contains("wall_time_s"));
}

namespace {

// The sample report as JSON text, with the value at `pointer` ("/phases/0/name") replaced by
// `value` as written (JSON text: "-1", "1180591620717411303424", "\"fast\"").
std::string edited_report(const std::string& pointer, const std::string& value,
                          std::string text = to_json(sample_result())) {
  auto j = nlohmann::json::parse(text);
  j[nlohmann::json::json_pointer(pointer)] = "@edited@";
  text = j.dump();
  text.replace(text.find("\"@edited@\""), 10, value);
  return text;
}

}  // namespace

// Each of these was read (2^70 as exit code -2147483648, "fast" without the field's name).
TEST_CASE("a report's field of the wrong kind is refused naming its path, the value and the kind",
          "[report][json]") {
  CHECK_THROWS_AS(result_from_json(edited_report("/wall_time_s", "\"fast\"")), Error);
  CHECK_THROWS_WITH(result_from_json(edited_report("/wall_time_s", "\"fast\"")),
                    Catch::Contains("cannot read an edgeprof result from JSON: field "
                                    "'wall_time_s': \"fast\" is not a number of seconds >= 0; "
                                    "give the file `edgeprof run --json` wrote"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/phases/0/name", "5")),
                    Catch::Contains("field 'phases[0].name': 5 is not a string"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/timed_out", "\"no\"")),
                    Catch::Contains("field 'timed_out': \"no\" is not true or false"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/summary/samples", "[1]")),
                    Catch::Contains("field 'summary.samples': [1] is not a whole number"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/series/t_ns/1", "\"x\"")),
                    Catch::Contains("field 'series.t_ns[1]': \"x\" is not a whole number"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/plan/cpus", "\"zero\"")),
                    Catch::Contains("field 'plan.cpus': \"zero\" is not a CPU list"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/cgroup_mode", "\"v3\"")),
                    Catch::Contains("field 'cgroup_mode': \"v3\" is not \"unified\""));
  CHECK_THROWS_WITH(result_from_json(edited_report("/plan", "[]")),
                    Catch::Contains("field 'plan': [] is not an object"));
  // A long value is shown cut short.
  const std::string long_text(200, 'x');
  CHECK_THROWS_WITH(result_from_json(edited_report("/exit_code", "\"" + long_text + "\"")),
                    Catch::Contains("field 'exit_code': \"xxxxxxxx") &&
                        !Catch::Contains(long_text));
  // Within a repeated report, the run's index is in the path.
  RepeatedResult rr;
  rr.runs = {sample_result(), sample_result(), sample_result()};
  rr.stats = describe_runs(rr.runs);
  const std::string repeated = to_json(rr);
  CHECK_THROWS_WITH(repeated_from_json(edited_report("/runs/2/wall_time_s", "\"fast\"", repeated)),
                    Catch::Contains("cannot read an edgeprof repeated result from JSON: field "
                                    "'runs[2].wall_time_s': \"fast\" is not a number of seconds"));
  CHECK_THROWS_WITH(repeated_from_json(edited_report("/stats/wall_time_s/n", "-2", repeated)),
                    Catch::Contains("field 'stats.wall_time_s.n': -2 is not a whole number"));
}

TEST_CASE("a report's whole numbers are checked against their type, and fractions refused",
          "[report][json]") {
  CHECK_THROWS_WITH(result_from_json(edited_report("/exit_code", "1180591620717411303424")),
                    Catch::Contains("field 'exit_code': ") &&
                        Catch::Contains("is not a whole number from 0 to 255"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/exit_code", "1.5")),
                    Catch::Contains("field 'exit_code': 1.5 is not a whole number from 0 to 255"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/exit_code", "256")),
                    Catch::Contains("field 'exit_code': 256 is not a whole number"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/signal", "0")),
                    Catch::Contains("field 'signal': 0 is not a whole number from 1"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/host/cpus", "4294967296")),
                    Catch::Contains("field 'host.cpus': 4294967296 is not a whole number from 0 "
                                    "to 2147483647"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/child_max_rss_bytes", "18446744073709551616")),
                    Catch::Contains("field 'child_max_rss_bytes'"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/series/scheduled/0", "2")),
                    Catch::Contains("field 'series.scheduled[0]': 2 is not a whole number from 0 "
                                    "to 1"));
  // The largest of a type is kept, and a signed field keeps its sign.
  CHECK(result_from_json(edited_report("/child_max_rss_bytes", "18446744073709551615"))
            .child_max_rss_bytes == 18446744073709551615u);
  CHECK(result_from_json(edited_report("/exit_code", "255")).exit_code == 255);
  Result fell = sample_result();
  fell.phases[0].memory_net_peak_bytes = -4096;
  fell.series.t_ns[0] = -100;
  CHECK(result_from_json(to_json(fell)) == fell);
}

TEST_CASE("a report's times and counts that no run produces are refused by name",
          "[report][json]") {
  CHECK_THROWS_WITH(result_from_json(edited_report("/wall_time_s", "-1")),
                    Catch::Contains("field 'wall_time_s': -1 is not a number of seconds >= 0"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/cpu_user_s", "-3")),
                    Catch::Contains("field 'cpu_user_s': -3 is not a number of seconds >= 0"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/throttled_s", "-0.5")),
                    Catch::Contains("field 'throttled_s'"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/phases/0/cpu_s", "-0.1")),
                    Catch::Contains("field 'phases[0].cpu_s'"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/peak_memory_bytes", "-1")),
                    Catch::Contains("field 'peak_memory_bytes': -1 is not a whole number from 0"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/summary/cpu_cores_avg", "-2")),
                    Catch::Contains("field 'summary.cpu_cores_avg'"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/threads_at_once", "0.5")),
                    Catch::Contains("field 'threads_at_once': 0.5 is not a number >= 1"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/plan/quota_scale", "0")),
                    Catch::Contains("field 'plan.quota_scale': 0 is not a number > 0"));
  // A speed change stamped before 0 (reports of 2026-11-27 had them) reads as at 0.
  Result changed = sample_result();
  changed.speed_changes = {SpeedChange{}};
  changed.speed_changes[0].t_s = 0.5;
  changed.speed_changes[0].factor = 1.0;
  const std::string with_change = to_json(changed);
  REQUIRE(result_from_json(with_change) == changed);
  const auto t_at = with_change.find("\"t_s\":0.5");
  REQUIRE(t_at != std::string::npos);
  std::string early = with_change;
  early.replace(t_at, 9, "\"t_s\":-0.002");
  CHECK(result_from_json(early).speed_changes.at(0).t_s == 0.0);
  std::string far = with_change;
  far.replace(t_at, 9, "\"t_s\":-5");
  CHECK_THROWS_WITH(result_from_json(far),
                    Catch::Contains("field 'speed_changes[0].t_s': -5 is not a time from 1 s"));
  // A number past a double's range is the parser's error (it has no field), still an Error.
  CHECK_THROWS_AS(result_from_json(edited_report("/wall_time_s", "1e400")), Error);
  // A figure that was not finite is written as null, and read back as such.
  Result nan = sample_result();
  nan.wall_time_s = std::nan("");
  CHECK(std::isnan(result_from_json(to_json(nan)).wall_time_s));
}

TEST_CASE("a report that gives a key twice is refused naming the key", "[report][json]") {
  const std::string text = to_json(sample_result());
  REQUIRE(text.find("\"exit_code\":0") != std::string::npos);
  const std::string twice = "{\"exit_code\":7," + text.substr(1);  // the last one said 0
  CHECK_THROWS_AS(result_from_json(twice), Error);
  CHECK_THROWS_WITH(result_from_json(twice),
                    Catch::Contains("field 'exit_code': given twice"));
  std::string in_phase = text;
  const auto phase = in_phase.find("\"name\":\"load\"");
  REQUIRE(phase != std::string::npos);
  in_phase.insert(phase, "\"name\":\"other\",");
  CHECK_THROWS_WITH(result_from_json(in_phase),
                    Catch::Contains("field 'phases[0].name': given twice"));
  // The same key in two objects is no repeat.
  CHECK(result_from_json(text) == sample_result());
}

TEST_CASE("a report's schema version below 1 or not whole is refused", "[report][json]") {
  CHECK_THROWS_WITH(result_from_json(edited_report("/schema_version", "-1")),
                    Catch::Contains("field 'schema_version': -1 is not a whole number from 1"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/schema_version", "0")),
                    Catch::Contains("field 'schema_version': 0"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/schema_version", "1.5")),
                    Catch::Contains("field 'schema_version': 1.5 is not a whole number"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/schema_version", "\"1\"")),
                    Catch::Contains("field 'schema_version'"));
  CHECK_THROWS_WITH(result_from_json(edited_report("/schema_version", "2")),
                    Catch::Contains("upgrade edgeprof"));
  CHECK(result_from_json(edited_report("/schema_version", "1")) == sample_result());
}

TEST_CASE("phase names that are not UTF-8 stay two names, escaped, through a repeated report",
          "[report][phase][json]") {
  // A report writes UTF-8: both names were written as "step\ufffd", one statistic key twice.
  std::size_t malformed = 9;
  const auto phases = parse_phases("1 B step\xff\n2 E step\xff\n3 B step\xfe\n4 E step\xfe\n"
                                   "5 M tab\there\n6 M tab\\u0009here\n7 M a\\b\n",
                                   0, {}, 1.0, &malformed);
  CHECK(malformed == 0);
  REQUIRE(phases.size() == 5);
  CHECK(phases[0].name == "step\\xFF");
  CHECK(phases[1].name == "step\\xFE");
  // Each end closed the phase begun with the same bytes.
  CHECK(phases[0].end_s == Approx(2e-9));
  CHECK(phases[1].end_s == Approx(4e-9));
  CHECK_FALSE(phases[0].ended_by_exit);
  CHECK_FALSE(phases[1].ended_by_exit);
  // A backslash is doubled, so that a tab and the text "\u0009" stay two names.
  CHECK(phases[2].name == "tab\\u0009here");
  CHECK(phases[3].name == "tab\\\\u0009here");
  CHECK(phases[4].name == "a\\\\b");
  RepeatedResult rr;
  for (double wall : {1.0, 2.0}) {
    Result r = sample_result();
    r.wall_time_s = wall;
    r.phases = phases;
    rr.runs.push_back(r);
  }
  rr.stats = describe_runs(rr.runs);
  CHECK(rr.stats.count("phase.step\\xFF.wall_time_s") == 1);
  CHECK(rr.stats.count("phase.step\\xFE.wall_time_s") == 1);
  CHECK(repeated_from_json(to_json(rr)) == rr);
}

TEST_CASE("a readable summary shows what a report holds escaped, its lines kept",
          "[report]") {
  // Phase names, warnings and a command are the workload's or a report file's: an escape
  // sequence in one reached the terminal of `edgeprof show` (it cleared the screen).
  Result r = sample_result();
  r.phases.front().name = "load\x1b[2J";
  r.warnings = {"w\x1b[31m\xc2\x9b", "two\nlines"};
  r.phases.front().memory_net_peak_bytes = std::numeric_limits<std::int64_t>::min();
  const std::string text = to_text(r);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("\xc2\x9b") == std::string::npos);
  CHECK(text.find("load\\u001b[2J") != std::string::npos);
  CHECK(text.find("w\\u001b[31m\\u009b") != std::string::npos);
  CHECK(text.find("two\nlines") != std::string::npos);
  CHECK(text.find("(net -8388608 TiB)") != std::string::npos);  // llabs(INT64_MIN) before
  RepeatedResult rr;
  rr.runs = {r};
  rr.runs.front().command = {"a\x07" "b"};
  rr.stats = describe_runs(rr.runs);
  CHECK(to_text(rr).find("a\\u0007b") != std::string::npos);
}

TEST_CASE("a repeated report without runs, or an empty scheduled column, read rightly",
          "[report][json]") {
  RepeatedResult rr;
  rr.runs = {sample_result()};
  rr.stats = describe_runs(rr.runs);
  nlohmann::json doc = nlohmann::json::parse(to_json(rr));
  doc["runs"] = nlohmann::json::array();
  CHECK_THROWS_WITH(repeated_from_json(doc.dump()),
                    Catch::Contains("field 'runs': empty; a repeated report holds at least one "
                                    "run"));
  // An empty scheduled column means every sample scheduled: made whole when read.
  nlohmann::json one = nlohmann::json::parse(to_json(sample_result()));
  one["series"]["scheduled"] = nlohmann::json::array();
  const Result back = result_from_json(one.dump());
  REQUIRE(!back.series.t_ns.empty());
  CHECK(back.series.scheduled == std::vector<std::uint8_t>(back.series.t_ns.size(), 1));
}

TEST_CASE("repeated results: statistics per figure, JSON round trip", "[report][json][stats]") {
  RepeatedResult rr;
  for (double wall : {1.0, 2.0, 3.0}) {
    Result r = sample_result();
    r.wall_time_s = wall;
    rr.runs.push_back(r);
  }
  rr.warmups.push_back(sample_result());
  rr.stats = describe_runs(rr.runs);
  CHECK(rr.stat("wall_time_s").median == 2.0);
  CHECK(rr.stat("cpu_time_s").mean == Approx(0.85));
  CHECK(rr.stat("phase.load.wall_time_s").n == 3);
  CHECK(rr.stats.count("io_read_bytes") == 0);  // not measured in these runs
  CHECK_THROWS_WITH(rr.stat("nope"),
                    Catch::Contains("wall_time_s") && Catch::Contains("name one of those"));
  CHECK(rr.all_ok());
  CHECK(repeated_from_json(to_json(rr)) == rr);
  CHECK(to_text(rr).find("95% CI") != std::string::npos);

  // A report written before a figure existed (all_cores_wall_time_s, before projections) gets
  // its statistic from the runs it holds; the ones it has are read as written.
  std::string old = to_json(rr);
  const std::string key = "\"all_cores_wall_time_s\":{";
  const auto at = old.find(key, old.find("\"stats\""));
  REQUIRE(at != std::string::npos);
  old.erase(at, old.find('}', at) + 2 - at);  // the statistic and its comma
  REQUIRE(old.find(key, old.find("\"stats\"")) == std::string::npos);
  const RepeatedResult back = repeated_from_json(old);
  REQUIRE(back.stats.count("all_cores_wall_time_s") == 1);
  CHECK(back.stat("all_cores_wall_time_s").median == 2.0);
  CHECK(back == rr);
  std::string edited = to_json(rr);
  const auto median = edited.find("\"median\":", edited.find("\"wall_time_s\":{", edited.find("\"stats\"")));
  edited.replace(median, 12, "\"median\":7.0");
  CHECK(repeated_from_json(edited).stat("wall_time_s").median == 7.0);
}

TEST_CASE("a series whose columns are shorter than its times is refused, not read past",
          "[report]") {
  TimeSeries s = make_series({0, 10, 20}, {0, 3, 9}, {5, 7, 6});
  TimeSeries short_cpu = s;
  short_cpu.values[static_cast<size_t>(Metric::cpu_usage_ns)].pop_back();
  CHECK_THROWS_WITH(short_cpu.cpu_cores(),
                    Catch::Contains("column cpu_usage_ns has 2 values for 3 samples"));
  CHECK_THROWS_AS(summarize(short_cpu, 0.01, 1.0), Error);
  CHECK_THROWS_AS(parse_phases("", 0, short_cpu, 1.0, nullptr), Error);
  Result r = sample_result();
  r.series = short_cpu;
  CHECK_THROWS_AS(to_csv(r), Error);
  CHECK_THROWS_AS(to_json(r), Error);  // its report could not be read back
  TimeSeries short_scheduled = s;
  short_scheduled.scheduled.pop_back();
  CHECK_THROWS_WITH(summarize(short_scheduled, 0.01, 1.0), Catch::Contains("column scheduled"));
  // A column the run did not sample may be empty; no scheduled column reads as all scheduled.
  TimeSeries unsampled = s;
  unsampled.values[static_cast<size_t>(Metric::io_read_bytes)].clear();
  unsampled.scheduled.clear();
  CHECK(summarize(unsampled, 0.01, 1.0).samples == 3);
  CHECK(unsampled.cpu_cores().size() == 2);
  // Nor is a report holding one read: it could not be written back.
  const std::string text = to_json(sample_result());
  const auto at = text.find("\"scheduled\":[1,1,0]");
  REQUIRE(at != std::string::npos);
  std::string edited = text;
  edited.replace(at, 19, "\"scheduled\":[1]");
  CHECK_THROWS_WITH(result_from_json(edited),
                    Catch::Contains("field 'series.scheduled': 1 rows where t_ns has 3"));
}

// `complete` naming a metric `available` does not sent summarize to back() of an empty column
// (SIGSEGV); times going back made a negative memory area, cast to about 2^64 bytes.
TEST_CASE("a series whose complete names a metric it lacks, or whose times go back, is refused",
          "[report]") {
  TimeSeries s;
  s.t_ns = {0, 10'000'000, 20'000'000};
  s.complete.set(static_cast<size_t>(Metric::memory_current_bytes));
  const auto lacks = Catch::Contains("marks memory_current_bytes complete but not available");
  CHECK_THROWS_WITH(summarize(s, 0.01, 1.0), lacks);
  CHECK_THROWS_WITH(parse_phases("", 0, s, 1.0, nullptr), lacks);
  CHECK_THROWS_WITH(s.cpu_cores(), lacks);
  Result r = sample_result();
  r.series = s;
  CHECK_THROWS_WITH(to_json(r), lacks);
  CHECK_THROWS_WITH(to_csv(r), lacks);

  // Memory 0, 0, 1000 at 0, 20, 10 ms: an area of -5000 byte-ms over a span of 10 ms.
  const TimeSeries back = make_series({0, 20, 10}, {0, 1, 2}, {0, 0, 1000});
  const auto goes_back = Catch::Contains(
      "t_ns goes back in time at sample 2: 10000000 ns after 20000000 ns at sample 1");
  CHECK_THROWS_WITH(summarize(back, 0.01, 1.0), goes_back);
  CHECK_THROWS_WITH(parse_phases("", 0, back, 1.0, nullptr), goes_back);
  CHECK_THROWS_WITH(back.cpu_cores(), goes_back);
  // Equal times are a clock that did not move: taken (their trapezoid has no width).
  const TimeSeries still = make_series({0, 10, 10, 20}, {0, 1, 1, 2}, {5, 5, 5, 5});
  CHECK(*summarize(still, 0.01, 1.0).memory_avg_bytes == 5);
  CHECK(still.cpu_cores() == std::vector<double>{0.1, 0.0, 0.1});

  // A report holding either is refused when read, naming the field (it was read, and then
  // summarised from a column of zeros or refused when written back).
  CHECK_THROWS_WITH(
      result_from_json(edited_report("/series/complete", "[\"cpu_usage_ns\",\"tasks\"]")),
      Catch::Contains("field 'series.complete[1]': \"tasks\" is not in series.available"));
  CHECK_THROWS_WITH(
      result_from_json(edited_report("/series/t_ns", "[0,20000000,10000000]")),
      Catch::Contains("field 'series.t_ns[2]': 10000000 is before the sample before it "
                      "(20000000)"));
  // As written, it reads back.
  CHECK(result_from_json(to_json(sample_result())) == sample_result());
}

TEST_CASE("the time series as CSV: available metrics and derived CPU cores", "[report]") {
  const std::string csv = to_csv(sample_result());
  // A first line naming the format and the version that wrote it, a comment.
  const std::string marker = fmt::format(
      "# edgeprof.series schema_version=1 edgeprof_version={}\n", edgeprof::version());
  REQUIRE(csv.rfind(marker, 0) == 0);
  CHECK(csv.substr(marker.size())
            .rfind("t_s,scheduled,cpu_usage_ns,memory_current_bytes,cpu_cores\n", 0) == 0);
  CHECK(csv.find("0.010000000,1,3000000,7,0.29") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
}

TEST_CASE("the runs' time series as one CSV: a run column, every run's metrics", "[report]") {
  // Runs whose sources differ (one lost its memory counter): once the second run's rows were
  // shorter than the header they were written under, their figures in the wrong columns.
  RepeatedResult rr;
  rr.runs = {sample_result(), sample_result()};
  rr.runs[1].series.available.reset(static_cast<size_t>(Metric::memory_current_bytes));
  rr.runs[1].series.complete.reset(static_cast<size_t>(Metric::memory_current_bytes));
  rr.warmups = {sample_result()};
  const std::string csv = to_csv(rr);
  std::vector<std::string> lines;
  for (size_t at = 0, next; at < csv.size(); at = next + 1) {
    next = csv.find('\n', at);
    lines.push_back(csv.substr(at, next - at));
  }
  REQUIRE(lines.size() == 8);  // the marker, the header, three rows per run, not the warm-up's
  CHECK(lines[0] == fmt::format("# edgeprof.repeated_series schema_version=1 edgeprof_version={}",
                                edgeprof::version()));
  lines.erase(lines.begin());
  CHECK(lines[0] == "run,t_s,scheduled,cpu_usage_ns,memory_current_bytes,cpu_cores");
  for (const std::string& line : lines) {
    CHECK(std::count(line.begin(), line.end(), ',') == 5);
  }
  CHECK(lines[2].rfind("1,0.010000000,1,3000000,7,0.29", 0) == 0);
  CHECK(lines[5].rfind("2,0.010000000,1,3000000,,0.29", 0) == 0);
  // One run alone: the same columns as its own CSV, after the run number.
  rr.runs.resize(1);
  const std::string one = to_csv(rr);
  CHECK(one.find("\nrun,t_s,scheduled,cpu_usage_ns,memory_current_bytes,cpu_cores\n1,") ==
        one.find('\n'));
}

// A workload's argument that is not UTF-8 made to_json throw (nlohmann's type_error 316), and
// no report could be written for the run; the byte is written as U+FFFD.
TEST_CASE("a report whose command is not UTF-8 is written, the byte replaced", "[report]") {
  Result r;
  r.command = {"/bin/echo", "a\xff" "b"};
  const std::string text = to_json(r);
  CHECK(text.find("a\xef\xbf\xbd" "b") != std::string::npos);  // U+FFFD in UTF-8
  CHECK(nlohmann::json::parse(text)["command"][1] == "a\xef\xbf\xbd" "b");
  RepeatedResult rr;
  rr.runs = {r};
  CHECK(to_json(rr).find("a\xef\xbf\xbd" "b") != std::string::npos);
}

TEST_CASE("a repeated result's table keeps every column apart and in line, long values too",
          "[report][repeated]") {
  RepeatedResult rr;
  Statistic wide;  // every cell 12 characters (the columns were 11 wide)
  wide.n = 3;
  wide.median = wide.mean = wide.ci95_low = wide.ci95_high = wide.min = wide.max = -2.29019e+07;
  wide.stddev = -2.291e+07;
  Statistic small;
  small.n = 3;
  small.median = small.mean = small.stddev = small.ci95_low = small.ci95_high = small.min =
      small.max = 1.5;
  rr.stats = {{"a", wide}, {"b", small}};
  const std::string table = to_text(rr);
  INFO(table);
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < table.size();) {
    const std::size_t end = table.find('\n', at);
    lines.push_back(table.substr(at, end - at));
    at = end + 1;
  }
  REQUIRE(lines.size() == 3);
  // Every row is name, six numbers and '..' between the interval's ends, each apart (a
  // value that filled its column ran into its neighbour's).
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::istringstream row(lines[i]);
    std::vector<std::string> cells;
    for (std::string cell; row >> cell;) cells.push_back(cell);
    REQUIRE(cells.size() == 9);
    CHECK(cells[5] == "..");
  }
  // The numbers' columns end where their header's do.
  for (const std::string head : {"median", "mean", "stddev", "max"}) {
    const std::size_t end = lines[0].find(" " + head) + head.size();
    CHECK(lines[1][end] != ' ');
    CHECK(lines[2][end] != ' ');
    CHECK((end + 1 == lines[1].size() || lines[1][end + 1] == ' '));
    CHECK((end + 1 == lines[2].size() || lines[2][end + 1] == ' '));
  }
  CHECK(lines[1].find(" .. ") == lines[2].find(" .. "));
}
