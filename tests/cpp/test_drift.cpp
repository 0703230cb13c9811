// The host's drift since its nn rating: the arithmetic (pure), the plan's correction of an nn
// speed by it, and the probe's mechanism in a real run (stand-ins for the Python with ncnn that
// report fixed times, so no figure depends on this machine's speed).
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <filesystem>
#include <string>
#include <vector>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using namespace edgeprof::test;
using Catch::Contains;

namespace {

NnRating rating(std::map<std::string, double> ms) {
  NnRating r;
  r.host_ms = std::move(ms);
  r.measured_at = "2026-11-28T14:00:00Z";
  r.cpu = 0;
  return r;
}

HostDrift drift(double factor) {
  HostDrift d;
  d.factor = factor;
  d.ratios = {{"squeezenet", factor}};
  d.cpu = 1;
  d.measured_at = "2026-11-28T15:00:00Z";
  d.rated_at = "2026-11-28T14:00:00Z";
  return d;
}

// A stand-in for the Python with ncnn: every reference graph takes `ms`.
std::string fake_python(const test::FakeTree& dir, const std::string& name, double ms) {
  std::string body = "#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\n";
  for (const auto& g : reference_graphs()) {
    body += "echo '" + g.name + " " + std::to_string(ms) + " " + std::to_string(ms) + " " +
            std::to_string(ms) + "'\n";
  }
  dir.file("/" + name, body);
  const std::string path = dir.root() + "/" + name;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace

TEST_CASE("the host drift is the median of the probe's times over the rating's", "[drift]") {
  const NnRating rated = rating({{"a", 10}, {"b", 20}, {"c", 5}});
  NnRating now = rating({{"a", 12}, {"b", 22}, {"d", 3}});
  now.measured_at = "2026-11-28T15:00:00Z";
  now.cpu = 1;
  now.loops = 5;
  const HostDrift d = host_drift(rated, now);
  CHECK(d.factor == Approx(1.15));  // the median of 1.2 and 1.1; "d" is not rated
  CHECK(d.ratios.size() == 2);
  CHECK(d.ratios.at("a") == Approx(1.2));
  CHECK(d.cpu == 1);
  CHECK(d.loops == 5);
  CHECK(d.rated_at == "2026-11-28T14:00:00Z");
  CHECK(d.measured_at == "2026-11-28T15:00:00Z");
  CHECK_THAT(describe(d), Contains("ran 1.15x slower than at its nn rating") &&
                              Contains("2 ncnn graphs probed on CPU 1"));
  CHECK_THAT(describe(host_drift(rated, rating({{"a", 8}}))), Contains("1.25x faster"));

  CHECK_THROWS_WITH(host_drift(rated, rating({{"d", 3}})),
                    Contains("no graph the rating has"));
  NnRating other = now;
  other.runtime_id = "pytorch";
  CHECK_THROWS_WITH(host_drift(rated, other), Contains("with ncnn and the probe with pytorch"));
  other = now;
  other.precision = "fp16";
  CHECK_THROWS_WITH(host_drift(rated, other), Contains("in fp32 and the probe in fp16"));
  CHECK_THROWS_WITH(host_drift(rated, rating({{"a", 0}})), Contains("positive numbers"));
  NnRating torch = rated;
  torch.runtime_id = "pytorch";
  CHECK_THROWS_WITH(measure_host_drift(torch), Contains("this rating is pytorch's"));
  CHECK_THROWS_WITH(measure_host_drift(rated), Contains("none of the probe's graphs"));
}

TEST_CASE("a plan with drift_check corrects the nn speed by the host's drift, and says so",
          "[drift][plan]") {
  PlanOptions o;
  o.quota_scale = 1.0;  // the device's capacity exactly: the drift alone moves the quota
  o.drift_check = true;
  HostFacts host = test::two_cpu_host();
  host.drift = drift(1.25);
  const EmulationPlan p = plan_emulation(test::nn_device(0.2), host, o);
  CHECK(p.host_drift == 1.25);
  CHECK(p.cpu_quota_us == 2500);  // 0.2 x 1.25 of a 10 ms period
  CHECK(has_note(p.notes, "host drift corrected: this host ran 1.25x slower"));
  CHECK(has_note(p.notes, "0.2 x 1.25 = 0.25 of a host core now"));

  // Not asked: the rating's speed, nothing said.
  PlanOptions off = o;
  off.drift_check = false;
  const EmulationPlan q = plan_emulation(test::nn_device(0.2), host, off);
  CHECK(q.host_drift == 1.0);
  CHECK(q.cpu_quota_us == 2000);
  CHECK_FALSE(has_note(q.notes, "host drift"));

  // Within the probe's own noise: not corrected, said in the notes only.
  host.drift = drift(1.05);
  const EmulationPlan near = plan_emulation(test::nn_device(0.2), host, o);
  CHECK(near.host_drift == 1.0);
  CHECK(near.cpu_quota_us == 2000);
  CHECK(has_note(near.notes, "within the +-10% the probe cannot tell from its own noise"));

  // Beyond what a plan applies: not corrected, and the note says to measure again.
  host.drift = drift(2.0);
  const EmulationPlan far = plan_emulation(test::nn_device(0.2), host, o);
  CHECK(far.host_drift == 1.0);
  CHECK(far.cpu_quota_us == 2000);
  CHECK(has_note(far.notes, "host drift not corrected"));
  CHECK(has_note(far.notes, "--remeasure"));

  // Not probed (the probe failed): the problem is said.
  HostFacts bare = test::two_cpu_host();
  bare.drift_problem = "the probe failed: ncnn is missing";
  const EmulationPlan b = plan_emulation(test::nn_device(0.2), bare, o);
  CHECK(b.host_drift == 1.0);
  CHECK(has_note(b.notes, "host drift not corrected: the probe failed: ncnn is missing"));

  // Only an ncnn nn speed: the integer speed, and another runtime's, are not ncnn's rating's.
  host.drift = drift(1.25);
  PlanOptions integer = o;
  integer.speed_kind = SpeedKind::integer;
  CHECK(plan_emulation(test::nn_device(0.2), host, integer).host_drift == 1.0);
  Device torch = test::nn_device(0.2);
  torch.nn->basis = "pytorch";
  CHECK(plan_emulation(torch, host, o).host_drift == 1.0);

  // Too fast for a quota once corrected: not corrected (a quota cannot give more than a CPU).
  host.drift = drift(1.4);
  const EmulationPlan fast = plan_emulation(test::nn_device(0.8), host, o);
  CHECK(fast.host_drift == 1.0);
  CHECK(fast.drift_probed == 1.4);
  CHECK(has_note(fast.notes, "would be faster than a host CPU"));
}

TEST_CASE("with_measured_drift probes only where the plan would use it", "[drift]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  NnOptions n;
  n.python = fake_python(bin, "rated", 10);
  REQUIRE_FALSE(measure_nn_rating(n).cache_file.empty());
  PlanOptions o;
  o.drift_check = true;
  o.nn_measure.python = fake_python(bin, "now", 11);
  const int cpu = host_facts().cpus.front();
  const HostFacts probed = with_measured_drift(test::two_cpu_host(), test::nn_device(0.2), o, cpu);
  REQUIRE(probed.drift);
  CHECK(probed.drift->factor == Approx(1.1));
  CHECK(probed.drift->cpu == cpu);
  // Not asked, the integer speed, another runtime's speed: no probe, no problem.
  PlanOptions off = o;
  off.drift_check = false;
  PlanOptions integer = o;
  integer.speed_kind = SpeedKind::integer;
  Device torch = test::nn_device(0.2);
  torch.nn->basis = "pytorch";
  for (const HostFacts& h : {with_measured_drift(test::two_cpu_host(), test::nn_device(0.2), off, cpu),
                             with_measured_drift(test::two_cpu_host(), test::nn_device(0.2), integer, cpu),
                             with_measured_drift(test::two_cpu_host(), torch, o, cpu)}) {
    CHECK_FALSE(h.drift);
    CHECK(h.drift_problem.empty());
  }
}

TEST_CASE("a run with drift_check probes the rating's graphs on its CPU and corrects its speed",
          "[drift][kernel]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  // The rating: every graph 10 ms; now every graph takes 12.
  NnOptions n;
  n.python = fake_python(bin, "rated", 10);
  const NnRating rated = measure_nn_rating(n);
  REQUIRE_FALSE(rated.cache_file.empty());
  DriftOptions d;
  d.python = fake_python(bin, "now", 12);
  d.cpu = host_facts().cpus.front();
  const HostDrift probed = measure_host_drift(rated, d);
  CHECK(probed.factor == Approx(1.2));
  CHECK(probed.cpu == d.cpu);
  CHECK(probed.seconds > 0);

  // Without a cached rating a plan asked to check says why it could not.
  {
    const test::FakeTree empty;
    test::ScopedEnv none("EDGEPROF_CACHE_DIR", empty.root());
    PlanOptions o;
    o.drift_check = true;
    const HostFacts h = with_measured_drift(test::two_cpu_host(), test::nn_device(0.2), o, d.cpu);
    CHECK_FALSE(h.drift);
    CHECK_THAT(h.drift_problem, Contains("not cached"));
  }

  REQUIRE_CGROUPS();
  Command c;
  c.argv = {"true"};
  RunOptions o;
  o.slice.plan.quota_scale = 1.0;
  o.slice.plan.drift_check = true;
  o.slice.plan.nn_measure.python = d.python;
  const Result r = run(c, test::nn_device(0.2), o);
  REQUIRE(r.ok());
  CHECK(r.plan.host_drift == Approx(1.2));
  CHECK(r.plan.drift_probed == Approx(1.2));
  CHECK(r.plan.cpu_quota_us == 2400);
  CHECK(has_note(r.plan.notes, "host drift corrected"));
  CHECK(has_note(r.warnings, "this host ran 1.20x slower than at its nn rating"));
  // Probed on the slice's own CPU.
  CHECK(has_note(r.plan.notes, fmt::format("probed on CPU {}", r.plan.cpus.front())));

  // A probe that fails: the run goes on at the rating's speed, and the warning says why.
  o.slice.plan.nn_measure.python = bin.root() + "/no-such-python";
  const Result failed = run(c, test::nn_device(0.2), o);
  REQUIRE(failed.ok());
  CHECK(failed.plan.host_drift == 1.0);
  CHECK(failed.plan.cpu_quota_us == 2000);
  CHECK(has_note(failed.warnings, "host drift not corrected: the probe failed"));
}
