// Projected core emulation (CoreEmulation::projected): one device core, the workload told to
// start one thread, its times divided by the board's published speed-up.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "edgeprof/calibrate.hpp"
#include "edgeprof/compare.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/result.hpp"
#include "edgeprof/slice.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using namespace edgeprof::test;

namespace {

HostFacts two_cpus() {
  HostFacts h;
  h.cpus = {0, 1};
  h.memory_bytes = 8ull << 30;
  return h;
}

// Speed-ups 2, 2, 2, 1 (median 2, contention 1/3).
Device quad() { return quad_board(); }

PlanOptions projected() {
  PlanOptions o;
  o.cores = CoreEmulation::projected;
  // The device's core speed and quota exactly, whatever this host has rated or measured of
  // itself (an nn speed from a cached rating, its own share under a quota).
  o.speed_kind = SpeedKind::integer;
  o.quota_scale = 1.0;
  return o;
}

}  // namespace

TEST_CASE("the board's speed-up at k threads, and how far one graph's is from it",
          "[projected][scaling]") {
  const auto s = core_scaling(quad());
  REQUIRE(s);
  CHECK(s->speedup_at(1) == 1.0);
  CHECK(s->speedup_at(4) == Approx(2.0));
  CHECK(s->speedup_at(2) == Approx(1.5));  // 2 x 1 / (1 + 1/3)
  // Leave one out: three are at the others' median (2); ResNet-18's 1 is half of it.
  CHECK(s->loo_median_error == Approx(0.0));
  CHECK(s->loo_worst_error == Approx(0.5));
  // The spread a projected interval takes: sqrt((0 + 0 + 0 + ln(1/2)^2) / 4) = ln 2 / 2.
  CHECK(s->loo_log_sd == Approx(std::log(2.0) / 2));
  // A board faster than linear keeps its own speed-up at its table's threads.
  Device super = quad();
  for (auto& [graph, ms] : super.nn_threads_ms[4]) ms = super.nn_ms[graph] / 4.5;
  CHECK(core_scaling(super)->speedup_at(4) == Approx(4.5));
}

TEST_CASE("projected: one device core, one thread, and the board's speed-up in the plan",
          "[plan][projected]") {
  CHECK(core_emulation_from_string("projected") == CoreEmulation::projected);
  CHECK(std::string(to_string(CoreEmulation::projected)) == "projected");

  const EmulationPlan plan = plan_emulation(quad(), two_cpus(), projected());
  CHECK(plan.cpus.size() == 1);
  CHECK(plan.core_groups == 0);
  CHECK(plan.capacity_cores() == Approx(0.25));  // one core's quota, not the pool's 1.0
  REQUIRE(plan.threads_projection);
  CHECK(plan.threads_projection->threads == 4);
  CHECK(plan.threads_projection->speedup == Approx(2.0));
  CHECK(plan.threads_projection->scaling.graphs == 4);
  for (const char* name : kThreadCountVariables) {
    CAPTURE(name);
    CHECK(plan.thread_env.at(name) == "1");
  }
  CHECK(has_note(plan, "projected: one of the device's 4 cores is emulated"));
  CHECK_FALSE(has_note(plan, "the CPU quota (1.00 host cores) is the whole slice's"));

  // Narrowed to two of its cores: the four-thread table's contention carried to two.
  const EmulationPlan two = plan_emulation(for_threads(quad(), 2), two_cpus(), projected());
  REQUIRE(two.threads_projection);
  CHECK(two.threads_projection->threads == 2);
  CHECK(two.threads_projection->speedup == Approx(1.5));
  CHECK(two.threads_projection->scaling.threads == 4);

  // Held out: without ResNet-18, every speed-up left is 2.
  CHECK(project_threads(quad(), "resnet18").speedup == Approx(2.0));
  CHECK(project_threads(quad(), "resnet18").scaling.graphs == 3);

  // One core: nothing to project. Pooled: no projection.
  Device one = quad();
  one.cores = 1;
  one.nn_threads_ms.clear();
  CHECK_FALSE(plan_emulation(one, two_cpus(), projected()).threads_projection);
  PlanOptions pooled = projected();
  pooled.cores = CoreEmulation::pooled;
  CHECK_FALSE(plan_emulation(quad(), two_cpus(), pooled).threads_projection);
}

TEST_CASE("projected: a device without published multi-thread times is refused, saying what to "
          "do",
          "[plan][projected]") {
  try {
    plan_emulation(make_device("plain", 4, 0.25, "256MiB"), two_cpus(), projected());
    FAIL("planned");
  } catch (const UnsupportedError& e) {
    const std::string what = e.what();
    CHECK(what.find("'plain' cannot be projected") != std::string::npos);
    CHECK(what.find("nn.threads_ms") != std::string::npos);
    CHECK(what.find("'pooled'") != std::string::npos);
  }
  CHECK_THROWS_AS(core_emulation_from_string("projection"), Error);
}

TEST_CASE("core emulation auto: projected where the device's tables allow it, pooled elsewhere",
          "[plan][projected]") {
  CHECK(core_emulation_from_string("auto") == CoreEmulation::automatic);
  CHECK(std::string(to_string(CoreEmulation::automatic)) == "auto");
  PlanOptions automatic;
  automatic.cores = CoreEmulation::automatic;
  automatic.quota_scale = 1.0;
  automatic.measure_nn = false;
  // At its nn speed (graphs no host rating has, so that none changes it), with a four-thread
  // table: projected, and the plan says why.
  Device nn = make_device("nn-quad", 4, 0.25, "256MiB");
  nn.speed_kind = "nn";
  nn.nn_ms = {{"a", 10}, {"b", 20}, {"c", 40}, {"d", 80}};
  nn.nn_threads_ms[4] = {{"a", 5}, {"b", 10}, {"c", 20}, {"d", 80}};
  CHECK(resolve_core_emulation(nn, CoreEmulation::automatic) == CoreEmulation::projected);
  const EmulationPlan plan = plan_emulation(nn, two_cpus(), automatic);
  REQUIRE(plan.threads_projection);
  CHECK(plan.threads_projection->speedup == Approx(2.0));
  CHECK(plan.cpus.size() == 1);
  CHECK(has_note(plan, "core emulation auto: projected (the device has published one- and "
                       "multi-thread"));
  // auto is the default: a plan of default options is the same.
  PlanOptions defaults;
  CHECK(defaults.cores == CoreEmulation::automatic);
  defaults.quota_scale = 1.0;
  defaults.measure_nn = false;
  CHECK(plan_emulation(nn, two_cpus(), defaults) == plan);
  // A speed schedule is timed on the device's clock, which a one-core run does not keep:
  // pooled, and said.
  Device scheduled = nn;
  scheduled.speed_schedule = {{2.0, 0.5}};
  std::string why;
  CHECK(resolve_core_emulation(scheduled, CoreEmulation::automatic, &why) ==
        CoreEmulation::pooled);
  CHECK_THAT(why, Catch::Contains("speed schedule"));
  CHECK_FALSE(plan_emulation(scheduled, two_cpus(), automatic).threads_projection);
  // Projected by name all the same: said.
  PlanOptions by_name = automatic;
  by_name.cores = CoreEmulation::projected;
  CHECK(has_note(plan_emulation(scheduled, two_cpus(), by_name),
                 "projected with a speed schedule"));
  // Its tables are CNN inference's: at another speed, pooled, and said.
  PlanOptions integer = automatic;
  integer.speed_kind = SpeedKind::integer;
  const EmulationPlan at_integer = plan_emulation(quad(), two_cpus(), integer);
  CHECK_FALSE(at_integer.threads_projection);
  CHECK(at_integer.cpus.size() == 2);
  CHECK(has_note(at_integer,
                 "core emulation auto: pooled (the device is not emulated at its nn speed"));
  // No multi-thread table: pooled, which could not have been otherwise, so the auto note is
  // left to the pooled quota's own (a thread at up to a host core).
  Device plain = nn;
  plain.name = "plain";
  plain.nn_threads_ms.clear();
  CHECK(resolve_core_emulation(plain, CoreEmulation::automatic, &why) == CoreEmulation::pooled);
  CHECK_THAT(why, Catch::Contains("the device has no published"));
  const EmulationPlan unprojected = plan_emulation(plain, two_cpus(), automatic);
  CHECK_FALSE(unprojected.threads_projection);
  CHECK(unprojected.core_emulation() == CoreEmulation::pooled);
  CHECK_FALSE(has_note(unprojected, "core emulation auto"));
  CHECK(has_note(unprojected, "a single thread at up to"));
  // A table too small to project with: the projection's own reason.
  Device small = nn;
  small.name = "small";
  small.nn_threads_ms[4] = {{"a", 5}, {"b", 10}};
  CHECK(has_note(plan_emulation(small, two_cpus(), automatic),
                 "core emulation auto: pooled (device 'small' cannot be projected"));
  // One core: nothing to choose, nothing said. The other modes are what they say.
  CHECK_FALSE(has_note(plan_emulation(for_threads(nn, 1), two_cpus(), automatic),
                       "core emulation auto"));
  CHECK(resolve_core_emulation(plain, CoreEmulation::projected) == CoreEmulation::projected);
  CHECK(resolve_core_emulation(nn, CoreEmulation::pooled) == CoreEmulation::pooled);
  CHECK(resolve_core_emulation(nn, CoreEmulation::per_core) == CoreEmulation::per_core);
}

TEST_CASE("a projected result divides its times by the speed-up, in text, JSON and figures",
          "[report][projected]") {
  Result r;
  r.exit_code = 0;
  r.wall_time_s = 3.0;
  r.peak_memory_bytes = 1u << 20;
  r.device = quad();
  r.plan = plan_emulation(quad(), two_cpus(), projected());
  Phase infer;
  infer.name = "infer";
  infer.start_s = 1.0;
  infer.end_s = 2.0;
  r.phases.push_back(infer);
  REQUIRE(r.projected_s(3.0));
  CHECK(*r.projected_s(3.0) == Approx(1.5));

  const std::string text = to_text(r);
  CHECK(text.find("1.500000 s wall with all 4 cores") != std::string::npos);
  CHECK(text.find("infer: 0.500 s wall with all 4 cores") != std::string::npos);
  // The device as run, one of its cores, says so.
  Result one_core = r;
  one_core.device = for_threads(quad(), 1);
  one_core.device.name = "quad";
  CHECK(to_text(one_core).find("quad (one core of its 4 ran, projected to all 4; speed") !=
        std::string::npos);
  RepeatedResult repeated;
  repeated.runs = {one_core};
  repeated.stats = describe_runs(repeated.runs);
  {
    // Every row's median under the header's, a phase's long figure names too (they pushed
    // their rows' numbers to the right).
    RepeatedResult named = repeated;
    named.runs.front().phases.front().name = "inference";
    named.stats = describe_runs(named.runs);
    REQUIRE(named.stats.count("phase.inference.all_cores_wall_time_s"));
    const std::string table = to_text(named);
    const std::size_t header = table.find("\nfigure") + 1;
    const std::size_t end = table.find("median", header) - header + 5;  // its last column
    int rows = 0;
    for (std::size_t at = table.find('\n', header) + 1; at > 0 && at < table.size();
         at = table.find('\n', at) + 1) {  // npos + 1 is 0: the end
      const std::string row = table.substr(at, table.find('\n', at) - at);
      INFO(row);
      REQUIRE(row.size() > end + 1);
      CHECK(row[end] != ' ');
      CHECK(row[end + 1] == ' ');
      ++rows;
    }
    CHECK(rows == static_cast<int>(named.stats.size()));
  }
  CHECK(to_text(repeated).find("on quad (one of its 4 cores ran: wall_time_s and the cpu "
                               "figures are that core's") != std::string::npos);

  const std::string json = to_json(r);
  CHECK(json.find("\"projected_wall_time_s\":1.5") != std::string::npos);
  const Result back = result_from_json(json);
  REQUIRE(back.plan.threads_projection);
  CHECK(*back.plan.threads_projection == *r.plan.threads_projection);
  CHECK(back.plan.threads_projection->scaling.loo_log_sd == Approx(std::log(2.0) / 2));
  CHECK(back.plan == r.plan);

  const auto f = figures(r);
  CHECK(f.at("projected_wall_time_s") == Approx(1.5));
  CHECK(f.at("phase.infer.projected_wall_time_s") == Approx(0.5));
  // The device's all-core time: the projection here; the run's own time stays measured.
  CHECK(f.at("all_cores_wall_time_s") == Approx(1.5));
  CHECK(f.at("phase.infer.all_cores_wall_time_s") == Approx(0.5));
  CHECK(f.at("wall_time_s") == Approx(3.0));
  CHECK(figure_provenance(r, "all_cores_wall_time_s") == std::string("projected"));
  CHECK(figure_provenance(r, "wall_time_s") == std::string("measured"));
  CHECK(figure_provenance(r, "phase.infer.projected_wall_time_s") == std::string("projected"));
  // A phase's name is not the figure's: a phase called "projected_x" has a measured wall time
  // and a sampled cpu_s (as every phase's), neither projected.
  CHECK(figure_provenance(r, "phase.projected_x.wall_time_s") == std::string("measured"));
  CHECK(figure_provenance(r, "phase.projected_x.cpu_s") == std::string("sampled"));
  CHECK(figure_provenance(r, "phase.all_cores_x.cpu_s") == std::string("sampled"));
  CHECK(json.find("\"all_cores_wall_time_s\":1.5") != std::string::npos);

  // Scored on the projected figure: projected, not measured.
  Budget budget;
  budget.latency_figure = "projected_wall_time_s";
  const Score sc = score(r, budget);
  CHECK(sc.latency == Approx(1.5));
  CHECK(sc.latency_provenance == "projected");
  {
    // Its check against a limit says so too (every figure's check said "measured").
    Budget limited = budget;
    limited.latency_s = 10.0;
    const Score checked = score(r, limited);
    REQUIRE(checked.latency_check);
    CHECK(checked.latency_check->provenance == "projected");
    limited.latency_figure = "wall_time_s";
    const Score measured = score(r, limited);
    REQUIRE(measured.latency_check);
    CHECK(measured.latency_check->provenance == "measured");
  }
  // By default a budget holds the device's all-core time: the projected one here.
  CHECK(score(r).latency == Approx(1.5));
  CHECK(score(r).latency_provenance == "projected");
  budget.latency_figure = "wall_time_s";
  CHECK(score(r, budget).latency == Approx(3.0));
  CHECK(score(r, budget).latency_provenance == "measured");
  {
    // A typo or a bad limit is refused whatever the run's outcome (a failed run skipped every
    // check: an HPO study found its typo only once a trial succeeded).
    Result failed = r;
    failed.exit_code = 1;
    REQUIRE_FALSE(failed.ok());
    Budget typo;
    typo.latency_figure = "wal_time_s";
    CHECK_THROWS_WITH(score(failed, typo), Catch::Contains("'wal_time_s' is not a figure"));
    // Its figures measure the failure: NaN (they were the run's, a finite objective).
    CHECK(std::isnan(score(failed).latency));
    CHECK(std::isnan(score(failed).memory));
    CHECK(score(failed).latency_provenance.empty());
    Budget negative;
    negative.latency_s = -1;
    CHECK_THROWS_WITH(score(failed, negative), Catch::Contains("latency limit is -1"));
    negative.latency_s = std::nullopt;
    negative.memory_bytes = std::nan("");
    CHECK_THROWS_WITH(score(r, negative), Catch::Contains("memory limit is nan"));
  }

  Result plain;
  plain.exit_code = 0;  // a run that succeeded (a failed one's score is NaN)
  plain.wall_time_s = 3.0;
  plain.peak_memory_bytes = 1u << 20;
  CHECK_FALSE(plain.projected_s(3.0));
  CHECK(figures(plain).count("projected_wall_time_s") == 0);
  CHECK(to_json(plain).find("\"projected_wall_time_s\"") == std::string::npos);
  // Without a projection the all-core time is the measured one (all cores were emulated).
  CHECK(plain.all_cores_s(3.0) == 3.0);
  CHECK(figures(plain).at("all_cores_wall_time_s") == 3.0);
  CHECK(figure_provenance(plain, "all_cores_wall_time_s") == std::string("measured"));
  CHECK(score(plain).latency == 3.0);
  CHECK(score(plain).latency_provenance == "measured");
}

TEST_CASE("a comparison's table says which device's figures were projected", "[projected]") {
  Result one;
  one.exit_code = 0;
  one.wall_time_s = 3.0;
  one.peak_memory_bytes = 1u << 20;
  Result projected_run = one;
  projected_run.plan = plan_emulation(quad(), two_cpus(), projected());
  Comparison c;
  for (const auto& [device, run] : {std::pair{"quad", projected_run}, std::pair{"plain", one}}) {
    ComparisonRow row;
    row.workload = "w";
    row.device = device;
    row.result.runs = {run};
    row.value = figure(run, c.options.metric);
    row.memory = figure(run, c.options.memory_metric);
    row.rank = 1;
    c.rows.push_back(row);
  }
  const std::string text = to_text(c);
  CAPTURE(text);
  {
    // A memory figure that is not bytes is a number, a negative size has its sign (a phase's
    // net peak: the cast of a negative double to uint64 was undefined), and a phase named
    // "read_bytes" does not make its CPU seconds a size.
    Comparison other = c;
    other.options.memory_metric = "phase.read_bytes.cpu_s";
    other.rows.front().memory = 0.37;
    CHECK(to_text(other).find(" 0.37 ") != std::string::npos);
    other.options.memory_metric = "phase.load.memory_net_peak_bytes";
    other.rows.front().memory = -3.0 * 1048576;
    CHECK(to_text(other).find(" -3 MiB ") != std::string::npos);
  }
  // The default metric is the all-core time: projected on the projected device only.
  CHECK(text.find("quad (emulated), 5 runs each; ranked by median all_cores_wall_time_s "
                  "(all_cores_wall_time_s projected from one of its 4 cores)") !=
        std::string::npos);
  CHECK(text.find("plain (emulated), 5 runs each; ranked by median all_cores_wall_time_s "
                  "(ties") != std::string::npos);
  CHECK(text.find("1.5 ") != std::string::npos);  // 3 s on one core / a speed-up of 2
  // Ranked on the measured one-core time: the line says that one core ran.
  c.options.metric = "wall_time_s";
  CHECK(to_text(c).find("ranked by median wall_time_s (one of its 4 cores ran, measured)") !=
        std::string::npos);
  // A sampled figure is said to be sampled, not measured (it was headed "measured").
  c.options.memory_metric = "memory_sampled_peak_bytes";
  CHECK(to_text(c).find("ranked by median wall_time_s (one of its 4 cores ran; "
                        "memory_sampled_peak_bytes sampled)") != std::string::npos);
  CHECK(to_text(c).find("plain (emulated), 5 runs each; ranked by median wall_time_s "
                        "(memory_sampled_peak_bytes sampled)") != std::string::npos);
}

TEST_CASE("compare projected by name refuses a device it cannot project before any run",
          "[projected]") {
  Device plain = make_device("plain", 4, 0.25, "256MiB");
  CompareOptions options;
  options.repeat = 1;
  options.run.slice.plan = projected();
  int runs = 0;
  try {
    // quad first: without the check its run would come before plain's refusal.
    compare({{"w", workload({"exit", "0"})}}, {quad(), plain}, options,
            [&](int, int, const std::string&, const std::string&, const Result&) { ++runs; });
    FAIL("compared");
  } catch (const UnsupportedError& e) {
    CHECK_THAT(e.what(), Catch::Contains("'plain'"));
  }
  CHECK(runs == 0);
}

TEST_CASE("projected: the workload runs on one CPU and is told to start one thread",
          "[kernel][projected]") {
  REQUIRE_CGROUPS();
  SliceOptions options;
  options.plan = projected();
  Device named = quad();
  named.aliases = {"quad-board"};
  Slice slice(named, options);
  REQUIRE(slice.plan().threads_projection);
  CHECK(slice.plan().cpus.size() == 1);
  CHECK(slice.plan().core_emulation() == CoreEmulation::projected);
  // One of its cores runs, under the device's own name (calibrations are found by it).
  CHECK(slice.device().cores == 1);
  CHECK(slice.device().name == "quad");
  CHECK(slice.device().aliases == std::vector<std::string>{"quad-board"});
  {
    // A device whose cores would not all fit this host keeps its name too (not
    // "<name>-2-threads", as fit_to_cpus would call it): one core is what runs either way.
    Device big = named;
    big.core_speed = 0.8;  // 3.2 host cores for all four, more than the one CPU offered
    SliceOptions one_cpu = options;
    one_cpu.plan.cpus = {host_facts().cpus.front()};
    Slice wide(big, one_cpu);
    REQUIRE(wide.plan().threads_projection);
    CHECK(wide.plan().threads_projection->threads == 4);
    CHECK(wide.device().cores == 1);
    CHECK(wide.device().name == "quad");
  }
  const auto width_warnings = [](const Result& r) {
    std::vector<std::string> out;
    for (const std::string& w : r.warnings) {
      if (w.find("projected core emulation") != std::string::npos) out.push_back(w);
    }
    return out;
  };
  FakeTree tmp;
  auto run_env = [&](const std::optional<std::vector<std::string>>& env) {
    Command c = workload({"env", "OMP_NUM_THREADS"});
    c.env = env;
    c.stdout_stream = Stdio::file(tmp.root() + "/out");
    return slice.spawn(c).wait();
  };
  // Given an environment without the variable, as a user's shell would be.
  const Result r = run_env(std::vector<std::string>{"PATH=/bin:/usr/bin"});
  REQUIRE(r.ok());
  CHECK(r.device.name == "quad");
  CHECK(FakeTree::slurp(tmp.root() + "/out") == "1\n");
  CHECK(r.thread_env.at("OMP_NUM_THREADS") == "1");
  INFO(fmt::format("warnings: {}", fmt::join(r.warnings, " | ")));
  CHECK(width_warnings(r).empty());
  REQUIRE(r.plan.threads_projection);
  REQUIRE(r.projected_s(r.wall_time_s));
  CHECK(*r.projected_s(r.wall_time_s) == Approx(r.wall_time_s / 2.0));
  // The device that ran: one of its cores (its power, for the energy estimate, one core's).
  CHECK(r.device.cores == 1);

  // A workload whose environment asks for four threads keeps them, and is warned.
  const Result wide = run_env(std::vector<std::string>{"PATH=/bin:/usr/bin", "OMP_NUM_THREADS=4"});
  REQUIRE(wide.ok());
  CHECK(FakeTree::slurp(tmp.root() + "/out") == "4\n");
  INFO(fmt::format("warnings: {}", fmt::join(wide.warnings, " | ")));
  REQUIRE(width_warnings(wide).size() == 1);
  CHECK(width_warnings(wide)[0].find("sets OMP_NUM_THREADS=4") != std::string::npos);

  // With the thread environment off nothing tells it one thread: warned too.
  SliceOptions off = options;
  off.plan.thread_env = false;
  Slice plain(quad(), off);
  Command c = workload({"env", "OMP_NUM_THREADS"});
  c.env = std::vector<std::string>{"PATH=/bin:/usr/bin"};
  c.stdout_stream = Stdio::file(tmp.root() + "/out");
  const Result left = plain.spawn(c).wait();
  REQUIRE(left.ok());
  REQUIRE(width_warnings(left).size() == 1);
  CHECK(width_warnings(left)[0].find("thread_env off") != std::string::npos);
}

TEST_CASE("projected: threads the workload starts in code are counted and warned",
          "[kernel][projected][census]") {
  REQUIRE_CGROUPS();
  SliceOptions options;
  options.plan = projected();
  Slice slice(quad(), options);
  REQUIRE(slice.plan().threads_projection);
  const auto census_warnings = [](const Result& r) {
    std::vector<std::string> out;
    for (const std::string& w : r.warnings) {
      if (w.find("threads were runnable at once") != std::string::npos) out.push_back(w);
    }
    return out;
  };
  // Three spinning threads, whatever OMP_NUM_THREADS says (as torch.set_num_threads(3) would):
  // they share the one core's quota, and the result says so.
  const Result wide = slice.spawn(workload({"spin", "1.0", "3"})).wait();
  REQUIRE(wide.ok());
  CHECK(wide.thread_env.at("OMP_NUM_THREADS") == "1");
  REQUIRE(wide.threads_at_once);
  CHECK(*wide.threads_at_once >= 1.5);
  CHECK(census_warnings(wide).size() == 1);
  CHECK(to_text(wide).find(fmt::format("busy threads  {:.2f} at once", *wide.threads_at_once)) !=
        std::string::npos);
  // Kept in the report.
  const Result back = result_from_json(to_json(wide));
  REQUIRE(back.threads_at_once);
  CHECK(*back.threads_at_once == Approx(*wide.threads_at_once));
  // One spinning thread (its starter waits in join): about one, no warning.
  const Result one = slice.spawn(workload({"spin", "1.0", "1"})).wait();
  REQUIRE(one.ok());
  REQUIRE(one.threads_at_once);
  CHECK(*one.threads_at_once < 1.5);
  CHECK(census_warnings(one).empty());
  // Two workloads in the slice at once: the census saw both, so neither gets it.
  Child first = slice.spawn(workload({"spin", "0.4", "1"}));
  Child second = slice.spawn(workload({"spin", "0.2", "1"}));
  const Result a = first.wait(), b = second.wait();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK_FALSE(a.threads_at_once);
  CHECK_FALSE(b.threads_at_once);
  CHECK(census_warnings(a).empty());
  // Alone again: counted again.
  const Result again = slice.spawn(workload({"spin", "0.3", "1"})).wait();
  CHECK(again.threads_at_once);
  // A process the last workload left running shares the next one's quota, and the census
  // would count it with that one: no census then, and a warning that says why.
  Command leave;
  leave.argv = {"/bin/sh", "-c", "sleep 60 & exit 0"};
  REQUIRE(slice.spawn(leave).wait().ok());
  const auto left_warnings = [](const Result& r) {
    std::vector<std::string> out;
    for (const std::string& w : r.warnings) {
      if (w.find("left running in the slice") != std::string::npos) out.push_back(w);
    }
    return out;
  };
  const Result beside = slice.spawn(workload({"spin", "0.2", "1"})).wait();
  REQUIRE(beside.ok());
  CHECK_FALSE(beside.threads_at_once);
  REQUIRE(left_warnings(beside).size() == 1);
  CHECK(left_warnings(beside)[0].find("1 process(es)") == 0);
  slice.kill();
  const Result cleared = slice.spawn(workload({"spin", "0.2", "1"})).wait();
  CHECK(cleared.threads_at_once);
  CHECK(left_warnings(cleared).empty());
  // Pooled runs have no census.
  SliceOptions pooled_options;
  pooled_options.plan.cores = CoreEmulation::pooled;
  Slice pooled(quad(), pooled_options);
  const Result p = pooled.spawn(workload({"spin", "0.3", "2"})).wait();
  REQUIRE(p.ok());
  CHECK_FALSE(p.threads_at_once);
}

TEST_CASE("a projected run's interval carries the board's speed-up's spread; a pooled one's not",
          "[kernel][projected][interval]") {
  REQUIRE_CGROUPS();
  // The quad board at an nn speed from four graphs (ratios 4, 5, 4, 5: an interval exists).
  Device d = quad();
  d.nn = nn_speed(d.nn_ms, {{"squeezenet", 2.5}, {"mobilenet", 4}, {"mobilenet_v2", 10},
                            {"resnet18", 16}});
  SliceOptions options;
  options.plan = projected();
  options.plan.speed_kind = SpeedKind::nn;
  options.plan.measure_nn = false;
  Slice slice(d, options);
  REQUIRE(slice.plan().threads_projection);
  Command c;
  c.argv = {"true"};
  const Result r = slice.spawn(c).wait();
  REQUIRE(r.ok());
  REQUIRE(r.device_interval);
  REQUIRE(r.plan.threads_projection);
  CHECK(r.device_interval->projection_log_sd == Approx(std::log(2.0) / 2));
  // Wider than the speed's own interval by that spread.
  const std::optional<TimeInterval> speed_only =
      time_interval(*r.device.nn, 0.9, r.plan.emulation_log_sd);
  REQUIRE(speed_only);
  CHECK(r.device_interval->high > speed_only->high);
  CHECK(r.device_interval->low < speed_only->low);

  // Pooled: the workload's threads run; nothing is projected, nothing added.
  SliceOptions pooled = options;
  pooled.plan.cores = CoreEmulation::pooled;
  Slice all(d, pooled);
  CHECK_FALSE(all.plan().threads_projection);
  const Result p = all.spawn(c).wait();
  REQUIRE(p.ok());
  REQUIRE(p.device_interval);
  CHECK(p.device_interval->projection_log_sd == 0);
}

TEST_CASE("a speed is not calibrated under projection", "[projected]") {
  // The projection scales by the published CNN times a calibrated speed replaces: every run
  // was refused, "cannot be projected from one core".
  SpeedFitOptions options;
  options.run.slice.plan = projected();
  options.figure = "all_cores_wall_time_s";
  std::vector<DeviceMeasurement> workloads{{"w", workload({"exit", "0"}), 1.0}};
  try {
    calibrate_speed(quad(), workloads, options);
    FAIL("calibrated");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()).find("'projected' cannot be calibrated") != std::string::npos);
  }
  // auto emulates a calibrated core speed pooled (no nn speed): a projected figure would be
  // missing from every run, so it is refused before the first.
  options.run.slice.plan.cores = CoreEmulation::automatic;
  options.figure = "projected_wall_time_s";
  try {
    calibrate_speed(quad(), workloads, options);
    FAIL("calibrated");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()).find("core emulation 'auto'") != std::string::npos);
  }
}
