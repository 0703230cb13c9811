// The nn kind of speed: the reference graphs, the runner's output, the arithmetic of a
// device's nn speed, this host's rating (measured by a stand-in and for real) and its cache,
// and the catalog's devices emulated at their nn speed by default.
#include <sched.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using Catch::Contains;
using namespace edgeprof::test;

namespace {

// A stand-in for the Python interpreter: prints what the runner prints, for every graph.
std::string fake_python(const test::FakeTree& dir, double ms) {
  std::string body = "#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\necho 'a warning ncnn may print'\n";
  for (const auto& g : reference_graphs()) {
    body += "echo '" + g.name + " " + std::to_string(ms) + " " + std::to_string(ms * 0.9) + " " +
            std::to_string(ms * 1.2) + "'\n";
  }
  dir.file("/python", body);
  const std::string path = dir.root() + "/python";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace

TEST_CASE("nn speed: geometric mean of host / device time, and its leave-one-out error",
          "[nn]") {
  // Ratios device / host: a 2, b 4 (c only on the device, d only on the host: not used).
  const NnSpeed s = nn_speed({{"a", 10}, {"b", 40}, {"c", 7}}, {{"a", 5}, {"b", 10}, {"d", 1}});
  REQUIRE(s.ratios.size() == 2);
  CHECK(s.ratios.at("a") == Approx(2));
  CHECK(s.ratios.at("b") == Approx(4));
  CHECK(s.core_speed == Approx(1 / std::sqrt(8.0)));
  // Leaving a out, b's ratio 4 predicts a at 20 ms against 10 (+100%); leaving b out, a's
  // ratio 2 predicts b at 20 ms against 40 (-50%).
  CHECK(s.loo_median_error == Approx(0.75));
  CHECK(s.loo_worst_error == Approx(1.0));
  CHECK(s.precision == "fp32");
  CHECK_THAT(describe(s), Contains("0.3536 of a host core") && Contains("2 ncnn graphs") &&
                              Contains("median error 75%") && Contains("worst 100%"));

  // One model: no leave-one-out.
  const NnSpeed one = nn_speed({{"a", 10}}, {{"a", 5}}, "fp16");
  CHECK(one.core_speed == Approx(0.5));
  CHECK(one.loo_median_error == 0);
  CHECK(one.precision == "fp16");
  CHECK_THAT(describe(one), !Contains("leave-one"));

  CHECK_THROWS_WITH(nn_speed({{"a", 10}}, {{"b", 5}}), Contains("no model has both"));
  CHECK_THROWS_WITH(nn_speed({{"a", -1}}, {{"a", 5}}), Contains("device's time of a is -1"));
  CHECK_THROWS_WITH(nn_speed({{"a", 1}}, {{"a", NAN}}), Contains("this host's time of a"));
}

TEST_CASE("the runner's output: one line per graph, warnings ignored", "[nn][parse]") {
  const NnRating r = parse_nn_output(
      "runtime ncnn 1.0.20261020 (Python 3.11.7)\n"
      "some warning from ncnn\n"
      "squeezenet 23.6272 17.7366 39.9038\n"
      "mobilenet 39.1 32.4 44.2\r\n"
      "not_a_graph 1 2 3\n");
  CHECK(r.runtime == "ncnn 1.0.20261020 (Python 3.11.7)");
  REQUIRE(r.host_ms.size() == 2);
  CHECK(r.host_ms.at("squeezenet") == Approx(23.6272));
  CHECK(r.host_ms.at("mobilenet") == Approx(39.1));
  CHECK_THROWS_WITH(parse_nn_output("mobilenet abc 1 2\n", "runner"),
                    Contains("runner") && Contains("'abc'"));
  CHECK_THROWS_WITH(parse_nn_output("mobilenet 0 1 2\n"), Contains("not a positive"));
  CHECK_THROWS_WITH(parse_nn_output("Traceback\n  oops\n", "runner"),
                    Contains("no graph was measured") && Contains("oops"));
}

TEST_CASE("the reference graphs are well-formed ncnn param text", "[nn]") {
  std::set<std::string> names;
  for (const ReferenceGraph& g : reference_graphs()) {
    INFO(g.name);
    CHECK(names.insert(g.name).second);
    CHECK(g.width > 0);
    CHECK(g.channels == 3);
    std::istringstream in(g.param);
    int magic = 0, layers = 0, blobs = 0;
    in >> magic >> layers >> blobs;
    CHECK(magic == 7767517);
    std::string line;
    std::getline(in, line);
    std::set<std::string> produced, consumed;
    int seen = 0, produced_count = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      ++seen;
      std::istringstream l(line);
      std::string type, name;
      int nin = 0, nout = 0;
      l >> type >> name >> nin >> nout;
      for (int i = 0; i < nin; ++i) {
        std::string b;
        l >> b;
        INFO(line);
        CHECK(produced.count(b) == 1);     // produced before it is used
        CHECK(consumed.insert(b).second);  // by one layer only (Split fans out)
      }
      for (int i = 0; i < nout; ++i) {
        std::string b;
        l >> b;
        CHECK(produced.insert(b).second);
        ++produced_count;
      }
    }
    CHECK(seen == layers);
    CHECK(produced_count == blobs);
    CHECK(produced.count(g.input) == 1);
    CHECK(produced.count(g.output) == 1);
    CHECK(consumed.count(g.output) == 0);
  }
  CHECK(names.count("mobilenet_v2") == 1);
  CHECK(names.size() >= 10);
}

TEST_CASE("a device's nn speed: from its published times, chosen by default, and said",
          "[nn][device]") {
  const std::string file = R"({"edgeprof_device": 1, "name": "board", "cores": 4,
    "reference_speed": 0.4, "memory": "1GiB",
    "nn": {"precision": "fp32", "threads": 1, "ms": {"mobilenet": 100, "resnet18": 300},
           "threads_ms": {"4": {"mobilenet": 60}}}})";
  DeviceLoadOptions known;
  known.host_reference_speed = 1.0;
  known.host_nn_ms = std::map<std::string, double>{{"mobilenet", 10}, {"resnet18", 20}};
  const Device d = parse_device_json(file, "board.json", known);
  REQUIRE(d.nn);
  CHECK(d.core_speed == Approx(0.4));  // the described (integer) speed is kept
  CHECK(d.nn->core_speed == Approx(1 / std::sqrt(10.0 * 15.0)));
  CHECK(d.nn_ms.size() == 2);
  CHECK(d.nn_threads_ms.at(4).at("mobilenet") == 60);
  // Written and read back alike.
  CHECK(parse_device_json(device_to_json(d), "again.json", known) == d);

  // By default the plan emulates the nn speed, and says so.
  const EmulationPlan plan = plan_emulation(d, two_cpu_host());
  CHECK(plan.capacity_cores() == Approx(4 * d.nn->core_speed).epsilon(0.01));
  CHECK(has_note(plan.notes, "speed: nn speed"));
  CHECK(has_note(plan.notes, "2 ncnn graphs"));
  std::vector<std::string> notes;
  const Device nn = for_speed_kind(d, SpeedKind::automatic, &notes);
  CHECK(nn.speed_kind == "nn");
  CHECK(nn.core_speed == d.nn->core_speed);
  CHECK_THAT(describe_core_speed(nn), Contains("nn speed"));
  CHECK(for_speed_kind(nn, SpeedKind::nn) == nn);  // twice changes nothing
  CHECK_THROWS_AS(for_speed_kind(nn, SpeedKind::integer), DeviceError);

  // Asked for the integer speed: the described one.
  PlanOptions integer;
  integer.speed_kind = SpeedKind::integer;
  CHECK(plan_emulation(d, two_cpu_host(), integer).capacity_cores() ==
        Approx(1.6).epsilon(0.01));

  // This host's nn rating not known (nor cached), and not measured on first use: integer
  // speed, with a loud note naming the command.
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  test::ScopedEnv no_measuring("EDGEPROF_MEASURE_NN", "0");
  DeviceLoadOptions unknown = known;
  unknown.host_nn_ms = std::map<std::string, double>{};
  const Device without = parse_device_json(file, "board.json", unknown);
  CHECK_FALSE(without.nn);
  const EmulationPlan fallback = plan_emulation(without, two_cpu_host());
  CHECK(fallback.capacity_cores() == Approx(1.6).epsilon(0.01));
  CHECK(has_note(fallback.notes, "calibrate-host --nn"));
  PlanOptions want_nn;
  want_nn.speed_kind = SpeedKind::nn;
  CHECK_THROWS_WITH(plan_emulation(without, two_cpu_host(), want_nn),
                    Contains("no nn speed") && Contains("--speed-kind integer"));

  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 1,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"ms": {"mobilenet": 3},
    "threads_ms": {"four": {"mobilenet": 1}}}})",
                                      "b.json"),
                    Contains("nn.threads_ms.four") && Contains("thread count"));
  CHECK(speed_kind_from_string("nn") == SpeedKind::nn);
  CHECK_THROWS_WITH(speed_kind_from_string("fast"), Contains("automatic") && Contains("integer"));
  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 1,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"ms": {"mobilenet": -3}}})",
                                      "b.json"),
                    Contains("b.json") && Contains("nn.ms.mobilenet"));
}

TEST_CASE("this host's nn rating is measured, cached, and the catalog follows it",
          "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  std::string why;
  CHECK_FALSE(cached_nn_rating(&why));
  CHECK_THAT(why, Contains("not measured yet"));
  const Device before = find_device("raspberry-pi-4b-8gb");
  CHECK_FALSE(before.nn);
  CHECK(before.nn_ms.size() >= 10);
  CHECK(before.nn_precision == "fp32");
  CHECK(before.sources.at("nn").status == "measured");
  CHECK_THAT(before.sources.at("nn").source, Contains("Tencent/ncnn"));
  CHECK(find_device("raspberry-pi-5-8gb").nn_precision == "fp16");
  CHECK(find_device("beaglebone-black").nn_ms.empty());

  const test::FakeTree bin;
  NnOptions options;
  options.python = fake_python(bin, 10.0);
  std::vector<std::string> lines;
  options.progress = [&](const std::string& l) { lines.push_back(l); };
  const NnRating r = measure_nn_rating(options);
  CHECK(r.host_ms.size() == reference_graphs().size());
  CHECK(r.runtime == "ncnn 1.0.test (stand-in)");
  CHECK(r.cache_file == cache.root() + "/host-nn.json");
  CHECK(has_note(lines, "[1/"));
  REQUIRE(cached_nn_rating());
  CHECK(cached_nn_rating()->host_ms == r.host_ms);

  // Every catalog device with published times now has an nn speed: its times over 10 ms.
  const Device pi = find_device("raspberry-pi-4b-8gb");
  REQUIRE(pi.nn);
  CHECK(pi.nn->core_speed == Approx(1 / std::exp([&] {
                                      double s = 0;
                                      for (const auto& [m, ms] : pi.nn_ms) s += std::log(ms / 10);
                                      return s / double(pi.nn_ms.size());
                                    }())));
  const EmulationPlan plan = plan_emulation(for_threads(pi, 1), two_cpu_host());
  CHECK(has_note(plan.notes, "speed: nn speed"));

  // A failing runner: an error with its output, nothing cached over the good rating.
  bin.file("/broken", "#!/bin/sh\necho 'error: the Python package ncnn is not installed'\nexit 3\n");
  std::filesystem::permissions(bin.root() + "/broken", std::filesystem::perms::owner_all);
  options.python = bin.root() + "/broken";
  CHECK_THROWS_WITH(measure_nn_rating(options), Contains("ncnn is missing") &&
                                                    Contains("exit status 3"));
  options.python = bin.root() + "/no-such-python";
  CHECK_THROWS_WITH(measure_nn_rating(options), Contains("pip install ncnn"));
  CHECK(cached_nn_rating()->host_ms == r.host_ms);
}

TEST_CASE("this host's real nn rating, with ncnn (short form)", "[nn][slow]") {
  if (std::system("python3 -c 'import ncnn' 2>/dev/null") != 0) {
    WARN("python3 has no ncnn: the real nn rating is not run (pip install ncnn)");
    return;
  }
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  NnOptions options;
  options.warmup = 1;  // without, the first inference of the first graph took 215 ms here
  options.loops = 1;
  const NnRating r = measure_nn_rating(options);
  CHECK(r.host_ms.size() == reference_graphs().size());
  CHECK_THAT(r.runtime, Contains("ncnn"));
  // Every graph timed: a finite, positive time. (How long, and how the graphs compare, is this
  // host's speed and load: benchmarks/bench_nn.cpp measures it.)
  for (const auto& [graph, ms] : r.host_ms) {
    INFO(graph << ": " << ms << " ms");
    CHECK(std::isfinite(ms));
    CHECK(ms > 0);
  }
  REQUIRE(cached_nn_rating());
  const Device pi = find_device("raspberry-pi-4b-8gb");
  REQUIRE(pi.nn);
  WARN(describe(r) << "\n" << pi.name << ": " << describe(*pi.nn));
}

TEST_CASE("a catalog run emulates the nn speed by default and reports it", "[nn][kernel]") {
  REQUIRE_CGROUPS();
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  NnOptions options;
  options.python = fake_python(bin, 10.0);
  measure_nn_rating(options);
  // The Pi Zero 2 W: its 512 MiB fit the cgroup v2 VM too.
  const Device pi = for_threads(find_device("raspberry-pi-zero-2w"), 1);
  REQUIRE(pi.nn);
  const Result r = run(workload({"exit"}), pi);
  REQUIRE(r.ok());
  CHECK(r.device.speed_kind == "nn");
  CHECK(r.device.core_speed == Approx(pi.nn->core_speed));
  CHECK(has_note(r.plan.notes, "speed: nn speed"));
  CHECK_THAT(to_text(r), Contains("nn speed"));
  CHECK_THAT(to_json(r), Contains("\"speed_kind\":\"nn\""));
}

TEST_CASE("a catalog device's first plan measures this host's nn rating, once", "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-4b-8gb"), 1);
  REQUIRE_FALSE(pi.nn);  // published times, no host rating yet
  PlanOptions o;
  o.measure_nn = true;
  o.nn_measure.python = fake_python(bin, 10.0);
  std::vector<std::string> lines;
  o.nn_measure.progress = [&](const std::string& l) { lines.push_back(l); };
  const EmulationPlan plan = plan_emulation(pi, two_cpu_host(), o);
  CHECK(has_note(plan.notes, "speed: nn speed"));
  REQUIRE_FALSE(lines.empty());
  CHECK_THAT(lines.front(), Contains("raspberry-pi-4b-8gb") && Contains("not measured yet") &&
                                Contains("about a minute"));
  CHECK(has_note(lines, "[1/"));
  REQUIRE(cached_nn_rating());
  // Once: the next plan uses the cache and runs nothing (this interpreter does not exist).
  lines.clear();
  o.nn_measure.python = bin.root() + "/no-such-python";
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), o).notes, "speed: nn speed"));
  CHECK(lines.empty());
}

TEST_CASE("without ncnn a catalog device's first plan fails and says what to do", "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-4b-8gb"), 1);
  PlanOptions o;
  o.measure_nn = true;
  o.nn_measure.python = bin.root() + "/no-such-python";
  CHECK_THROWS_WITH(plan_emulation(pi, two_cpu_host(), o),
                    Contains("raspberry-pi-4b-8gb") && Contains("pip install ncnn") &&
                        Contains("--speed-kind integer"));
  CHECK_FALSE(cached_nn_rating());
  // The integer speed needs no rating: nothing is measured.
  PlanOptions integer = o;
  integer.speed_kind = SpeedKind::integer;
  CHECK_NOTHROW(plan_emulation(pi, two_cpu_host(), integer));
  // Measuring turned off: the integer speed, with a note that says how to fix it.
  PlanOptions off = o;
  off.measure_nn = false;
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), off).notes, "calibrate-host --nn"));
  // A device without published times has nothing to measure for.
  CHECK_NOTHROW(plan_emulation(find_device("beaglebone-black"), two_cpu_host(), o));
  CHECK_FALSE(cached_nn_rating());
}

TEST_CASE("EDGEPROF_MEASURE_NN=0 turns measuring on first use off by default", "[nn]") {
  {
    test::ScopedEnv env("EDGEPROF_MEASURE_NN", "0");
    CHECK_FALSE(PlanOptions{}.measure_nn);
  }
  {
    test::ScopedEnv env("EDGEPROF_MEASURE_NN", "1");
    CHECK(PlanOptions{}.measure_nn);
  }
}

TEST_CASE("a catalog run on an unmeasured host measures it and runs at the nn speed",
          "[nn][kernel]") {
  REQUIRE_CGROUPS();
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-zero-2w"), 1);
  REQUIRE_FALSE(pi.nn);
  RunOptions o;
  o.slice.plan.measure_nn = true;
  o.slice.plan.nn_measure.python = fake_python(bin, 10.0);
  const Result r = run(workload({"exit"}), pi, o);
  REQUIRE(r.ok());
  // The device run is the measured one, not the integer fallback.
  CHECK(r.device.speed_kind == "nn");
  CHECK(has_note(r.plan.notes, "speed: nn speed"));
  CHECK(cached_nn_rating());
}
