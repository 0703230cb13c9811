// Core speed calibrated from workloads: the fit, the solver, and a real calibration against
// workloads whose device figures are known.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "edgeprof/calibrate.hpp"
#include "edgeprof/error.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using namespace edgeprof::test;

TEST_CASE("fit_speed_model recovers value = a / speed + b", "[calibrate]") {
  const SpeedModel m = fit_speed_model({{1.0, 0.3}, {0.5, 0.5}, {0.25, 0.9}});
  CHECK(m.a == Approx(0.2));
  CHECK(m.b == Approx(0.1));
  CHECK(m.at(0.1) == Approx(2.1));
  CHECK_THROWS_WITH(fit_speed_model({{0.5, 1.0}, {0.5, 1.1}}),
                    Catch::Contains("at least two"));
  CHECK_THROWS_WITH(fit_speed_model({{0.5, 1.0}, {0.0, 1.1}}),
                    Catch::Contains("positive"));
}

TEST_CASE("solve_core_speed finds the speed that matches every workload", "[calibrate]") {
  // Two workloads, both consistent with speed 0.3: the solution is exact.
  const std::vector<SpeedModel> models = {{0.2, 0.0}, {0.1, 0.25}};
  const std::vector<double> targets = {0.2 / 0.3, 0.1 / 0.3 + 0.25};
  CHECK(solve_core_speed(models, targets, 0.01, 1.0) == Approx(0.3).epsilon(1e-6));
  // Inconsistent targets: in between, nearer the one the log error favours.
  const double s = solve_core_speed({{1, 0}, {1, 0}}, {2.0, 8.0}, 0.01, 1.0);
  CHECK(s == Approx(0.25).epsilon(1e-6));  // geometric mean of 0.5 and 0.125
  // Capped at the range; a workload the speed does not affect is left out.
  CHECK(solve_core_speed({{0.1, 0}}, {0.05}, 0.01, 1.0) == Approx(1.0));
  CHECK(solve_core_speed({{0.2, 0}, {0, 1}}, {1.0, 5.0}, 0.01, 1.0) == Approx(0.2).epsilon(1e-6));
  CHECK_THROWS_WITH(solve_core_speed({{0, 1}}, {2.0}, 0.01, 1.0),
                    Catch::Contains("CPU-bound"));
  CHECK_THROWS_AS(solve_core_speed({{1, 0}}, {-1.0}, 0.01, 1.0), Error);
  // Infinities gave inf or NaN for an answer.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(solve_core_speed({{1, 0}}, {1.0}, 0.01, inf), Catch::Contains("finite"));
  CHECK_THROWS_WITH(solve_core_speed({{1, 0}}, {inf}, 0.01, 1.0), Catch::Contains("finite"));
  CHECK_THROWS_WITH(solve_core_speed({{inf, 0}}, {1.0}, 0.01, 1.0), Catch::Contains("model 0"));
  CHECK_THROWS_WITH(solve_core_speed({{1, std::nan("")}}, {1.0}, 0.01, 1.0),
                    Catch::Contains("model 0"));
}

TEST_CASE("calibrate_speed refuses what it cannot use, naming it", "[calibrate]") {
  const Device d = make_device("board", 1, 0.5, "256MiB");
  CHECK_THROWS_AS(calibrate_speed(d, {}), DeviceError);
  CHECK_THROWS_WITH(calibrate_speed(d, {{"w", workload({"work", "0.1"}), 0.0}}),
                    Catch::Contains("'w'") && Catch::Contains("positive"));
  SpeedFitOptions o;
  o.repeat = 0;
  CHECK_THROWS_WITH(calibrate_speed(d, {{"w", workload({"work", "0.1"}), 1.0}}, o),
                    Catch::Contains("repeat"));
  o.repeat = 1;
  o.speeds = {0.5, 0.5};
  CHECK_THROWS_WITH(calibrate_speed(d, {{"w", workload({"work", "0.1"}), 1.0}}, o),
                    Catch::Contains("two distinct speeds"));
  o.speeds = {0.5, 3.0};
  CHECK_THROWS_WITH(calibrate_speed(d, {{"w", workload({"work", "0.1"}), 1.0}}, o),
                    Catch::Contains("speed 3"));
  // Every period before the first run (a bad second one was found after the first's runs).
  o.speeds = {};
  o.periods_us = {10000, 5};
  int runs = 0;
  CHECK_THROWS_WITH(calibrate_speed(d, {{"w", workload({"work", "0.1"}), 1.0}}, o,
                                    [&](int, int, const std::string&, double, std::uint64_t) {
                                      ++runs;
                                    }),
                    Catch::Contains("periods_us[1] = 5"));
  CHECK(runs == 0);
  // Two workloads under one name were two rows of one name in the fit's table.
  o.periods_us = {};
  CHECK_THROWS_WITH(calibrate_speed(d,
                                    {{"w", workload({"work", "0.1"}), 1.0},
                                     {"w", workload({"work", "0.2"}), 2.0}},
                                    o),
                    Catch::Contains("two workloads are named 'w'"));
  // The nn speed by name: each run is at a speed the calibration tries (the plan refused the
  // first run, saying the device had no nn speed).
  o.run.slice.plan.speed_kind = SpeedKind::nn;
  CHECK_THROWS_WITH(calibrate_speed(d, {{"w", workload({"work", "0.1"}), 1.0}}, o),
                    Catch::Contains("speed_kind nn (--speed-kind nn or --runtime"));
}

TEST_CASE("calibrate_speed finds the core speed of a device from workloads measured on it",
          "[kernel][calibrate]") {
  REQUIRE_CGROUPS();
  // The "device": a slice at 0.3 of a host core, where each workload is timed once, as a user
  // would time it on the real device. Every figure here is a timed run on a shared host, so how
  // close the calibration comes to 0.3 is the load's as much as calibrate_speed's: this test
  // checks what calibrate_speed does with the runs (the fit and the solver have their exact
  // tests above; the accuracy a quiet host gives is in docs/calibrate-speed.md).
  const double truth = 0.3;
  const Device device = make_device("board", 1, truth, "256MiB");
  RunOptions quiet;
  quiet.spawn.sample_interval = std::chrono::nanoseconds(0);
  std::vector<DeviceMeasurement> measured = {
      {"cpu+sleep", workload({"work", "0.15", "0.1"}), 0},
      {"cpu", workload({"work", "0.1"}), 0},
      {"sleep", workload({"sleep", "0.2"}), 0}};
  // What each does: CPU seconds busy (a fixed amount of work), then seconds asleep. Under a quota
  // of `speed` of a host core it takes at least 0.9 x cpu / speed + sleep (the first period may
  // find a whole quota ready): a lower bound the quota imposes, which load only adds to.
  const std::pair<double, double> work[] = {{0.15, 0.1}, {0.1, 0}, {0, 0.2}};
  const auto least_s = [&](size_t i, double speed) {
    return 0.9 * work[i].first / speed + work[i].second;
  };
  for (size_t i = 0; i < measured.size(); ++i) {
    DeviceMeasurement& m = measured[i];
    // Once unmeasured first: under emulation in the cgroup v2 VM, the first run of a program
    // also translates its code, which made the "device" 10-20% slower than any later run.
    REQUIRE(run(m.command, device, quiet).ok());
    const Result r = run(m.command, device, quiet);
    REQUIRE(r.ok());
    CHECK(r.wall_time_s >= least_s(i, truth));  // the device's quota held it
    m.device_value = r.wall_time_s;
  }
  SpeedFitOptions o;
  o.repeat = 1;
  o.run = quiet;
  // Speeds ten times apart: a CPU-bound workload then takes 0.9 s or more longer at the slower
  // one, beyond what load has added to a run here (0.34 s to a 0.3 s spin in the VM), so its fit
  // depends on the speed and the solver has something to solve.
  o.speeds = {1.0, 0.1};
  int calls = 0;
  // A board whose speed came from the reference core, as the catalog's do.
  Device board = make_device("board", 1, 0.9, "256MiB");
  board.reference_speed = 0.9;
  board.sources["reference_speed"] = {"estimated", "a 7-Zip rating"};
  // And published PyTorch times, whose speed a run follows when the workload loads PyTorch.
  RuntimeTimes torch_times;
  torch_times.precision = "fp32";
  torch_times.threads = 1;
  torch_times.ms = {{"resnet18", 400.0}};
  board.runtime_ms["pytorch"] = torch_times;
  board.sources["runtimes"] = {"measured", "a benchmark"};
  const SpeedCalibration c =
      calibrate_speed(board, measured, o,
                      [&](int done, int planned, const std::string&, double, std::uint64_t) {
                        ++calls;
                        CHECK(done <= planned);
                      });
  CAPTURE(to_text(c));
  // Measure at 1 and 0.1, verify at the solution (and maybe once more): 9 to 12 runs.
  CHECK(calls >= 9);
  CHECK(calls <= 12);
  // A speed in the range searched (the host's fastest for one core down to 0.01).
  CHECK(std::isfinite(c.core_speed));
  CHECK(c.core_speed >= 0.01);
  CHECK(c.core_speed <= 1.0);
  CHECK(std::isfinite(c.rms_residual));
  REQUIRE(c.periods.size() == 1);
  // The notes say what holds of the speed reported: the cap where it is at the cap (1.0, one
  // core), none where it is not (a first solution's cap was said of a second's speed).
  bool capped = false;
  for (const std::string& n : c.notes) {
    capped = capped || n.find("capped there") != std::string::npos;
  }
  CHECK(capped == (c.core_speed >= 0.999));
  CHECK(c.notes == c.periods[0].notes);  // the chosen period's
  CHECK(c.periods[0].core_speed == c.core_speed);
  CHECK(c.period_us == c.periods[0].period_us);
  REQUIRE(c.periods[0].workloads.size() == 3);
  bool any_sensitive = false;
  for (size_t i = 0; i < c.periods[0].workloads.size(); ++i) {
    const WorkloadSpeedFit& w = c.periods[0].workloads[i];
    CAPTURE(w.name);
    // Measured at the speeds asked for, then at the solution; each run held by its quota.
    REQUIRE(w.points.size() >= 3);
    CHECK(w.points[0].first == 1.0);
    CHECK(w.points[1].first == 0.1);
    CHECK(w.points.back().first == c.core_speed);
    for (const auto& [speed, value] : w.points) {
      CAPTURE(speed, value);
      CHECK(value >= least_s(i, speed));
    }
    CHECK(w.device_value == measured[i].device_value);
    CHECK(w.emulated == w.points.back().second);
    CHECK(w.residual == Approx(w.emulated / w.device_value - 1));
    any_sensitive = any_sensitive || w.speed_sensitive;
    // A workload left out of the solution is named in the notes.
    if (!w.speed_sensitive) {
      bool noted = false;
      for (const std::string& n : c.notes) {
        noted = noted || n.find("'" + w.name + "'") != std::string::npos;
      }
      CHECK(noted);
    }
  }
  CHECK(any_sensitive);  // else calibrate_speed throws
  // The calibrated device carries its speed and where it came from.
  CHECK(c.device.core_speed == c.core_speed);
  CHECK(c.device.sources.at("core_speed").status == "measured");
  CHECK_THAT(c.device.sources.at("core_speed").source, Catch::Contains("3 workloads"));
  // ... and no longer a speed relative to the reference core, which it was not derived from.
  CHECK_FALSE(c.device.reference_speed);
  CHECK_FALSE(c.device.host_reference_speed);
  CHECK_FALSE(c.device.sources.count("reference_speed"));
  // Nor a runtime's times: a run of a PyTorch workload followed them to the PyTorch speed in
  // place of the calibrated one (and so did the calibration's own runs, with this host's
  // PyTorch rating).
  CHECK(c.device.runtime_ms.empty());
  CHECK_FALSE(c.device.sources.count("runtimes"));
}
