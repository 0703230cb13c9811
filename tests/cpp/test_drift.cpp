// The host's drift since its nn rating: the arithmetic (pure), the plan's correction of an nn
// speed by it, and the probe's mechanism in a real run (stand-ins for the Python with ncnn that
// report fixed times, so no figure depends on this machine's speed).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <sched.h>
#include <fmt/format.h>
#include <cmath>
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

// A stand-in for the Python with ncnn: every reference graph takes `ms` (and, with `cpu_ms`,
// that much CPU time).
std::string fake_python(const test::FakeTree& dir, const std::string& name, double ms,
                        double cpu_ms = 0) {
  std::string body = "#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\n";
  for (const auto& g : reference_graphs()) {
    body += "echo '" + g.name + " " + std::to_string(ms) + " " + std::to_string(ms) + " " +
            std::to_string(ms) + "'\n";
    if (cpu_ms > 0) body += fmt::format("echo 'cpu {} {}'\n", g.name, cpu_ms);
  }
  dir.file("/" + name, body);
  const std::string path = dir.root() + "/" + name;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// A stand-in for the Python with PyTorch: every model it is asked for takes `ms` (and, with
// `cpu_ms`, that much CPU time); its runtime line is the same in every one.
std::string fake_torch_python(const test::FakeTree& dir, const std::string& name, double ms,
                              double cpu_ms = 0) {
  // Its arguments after the runner, the directory, warm-up and loops go to NAME.args.
  const std::string path = dir.root() + "/" + name;
  std::string body = fmt::format(
      "#!/bin/sh\necho 'runtime PyTorch 9.9 fp32 (stand-in)'\nshift 4\necho \"$@\" > '{2}.args'\n"
      "for a in \"$@\"; do case $a in\n  --*) ;;\n  *) echo \"$a {0} {0} {0}\"{1};;\nesac; "
      "done\n",
      ms, cpu_ms > 0 ? fmt::format("; echo \"cpu $a {}\"", cpu_ms) : std::string(), path);
  dir.file("/" + name, body);
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
  // Another runtime's rating without its models, or an unknown runtime: refused by name.
  NnRating torch = rated;
  torch.runtime_id = "pytorch";
  CHECK_THROWS_WITH(measure_host_drift(torch), Contains("none of the probe's graphs"));
  torch.runtime_id = "tflite";
  CHECK_THROWS_WITH(measure_host_drift(torch), Contains("runtime 'tflite' is not one"));
  CHECK_THROWS_WITH(measure_host_drift(rated), Contains("none of the probe's graphs"));
  // The probe warms each graph up as the rating does (ncnn's first inferences run slower).
  CHECK(DriftOptions{}.warmup == NnOptions{}.warmup);
}

TEST_CASE("the host drift compares CPU times where both have them: waiting for a CPU is not "
          "drift",
          "[drift]") {
  NnRating rated = rating({{"a", 10}, {"b", 20}});
  rated.cpu_ms = {{"a", 10}, {"b", 20}};
  // Now another busy process shares the CPU: twice the wall time, the same work plus 10%.
  NnRating now = rating({{"a", 22}, {"b", 44}});
  now.cpu_ms = {{"a", 11}, {"b", 22}};
  now.cpu = 1;
  const HostDrift d = host_drift(rated, now);
  CHECK(d.cpu_time);
  CHECK(d.factor == Approx(1.1));
  CHECK(d.ratios.at("a") == Approx(1.1));
  CHECK(d.wall_factor == Approx(2.2));
  CHECK(d.waiting == Approx(2.0));
  CHECK_THAT(describe(d), Contains("1.10x slower than at its nn rating") &&
                              Contains("in CPU time") && Contains("its CPU was shared") &&
                              Contains("which alone would have read as 2.20x"));

  // A rating cached before CPU times: wall time, and the wait reads as drift (said).
  NnRating old = rated;
  old.cpu_ms.clear();
  const HostDrift w = host_drift(old, now);
  CHECK_FALSE(w.cpu_time);
  CHECK(w.factor == Approx(2.2));
  CHECK(w.waiting == Approx(2.0));
  CHECK_THAT(describe(w), Contains("read as drift here: the rating has no CPU times"));

  // A probe alone on its CPU: nothing said of sharing; no CPU times at all: waiting unknown.
  NnRating alone = now;
  alone.host_ms = {{"a", 11.2}, {"b", 22.4}};
  CHECK_THAT(describe(host_drift(rated, alone)), !Contains("shared"));
  CHECK(std::isnan(host_drift(old, rating({{"a", 10}})).waiting));
  CHECK_THROWS_WITH(host_drift(rated, [&] {
                      NnRating bad = now;
                      bad.cpu_ms["a"] = 0;
                      return bad;
                    }()),
                    Contains("positive numbers"));
}

TEST_CASE("a rating whose CPU was shared is its CPU times, uncached; CPU times are cached",
          "[drift][nn]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  NnOptions n;
  n.python = fake_python(bin, "busy", 10, 5);
  std::vector<std::string> said;
  n.progress = [&](const std::string& line) { said.push_back(line); };
  const NnRating busy = measure_nn_rating(n);
  CHECK(busy.host_ms.at("squeezenet") == Approx(5));  // the work, not the wait
  CHECK(busy.cache_file.empty());
  CHECK_THAT(busy.note, Contains("was shared") && Contains("2.00x their CPU time") &&
                            Contains("not cached"));
  CHECK(has_note(said, "was shared"));
  n.progress = nullptr;
  std::string why;
  CHECK_FALSE(cached_nn_rating(&why));
  // Not for the cache (a drift probe, a subset): measured, its wait left to the caller.
  NnOptions probe = n;
  probe.cache = false;
  const NnRating probed = measure_nn_rating(probe);
  CHECK(probed.cpu_ms.at("squeezenet") == Approx(5));

  n.python = fake_python(bin, "alone", 10, 9.9);
  const NnRating rated = measure_nn_rating(n);
  REQUIRE_FALSE(rated.cache_file.empty());
  const auto cached = cached_nn_rating();
  REQUIRE(cached);
  CHECK(cached->cpu_ms.size() == reference_graphs().size());
  CHECK(cached->cpu_ms.at("squeezenet") == Approx(9.9));
  // And the probe against it compares CPU times.
  DriftOptions d;
  d.python = fake_python(bin, "shared", 20, 10.89);
  const HostDrift shared = measure_host_drift(*cached, d);
  CHECK(shared.cpu_time);
  CHECK(shared.factor == Approx(1.1));
  CHECK(shared.waiting == Approx(20 / 10.89));
}

TEST_CASE("a plan says when the drift probe's CPU was shared, and corrects only by CPU time",
          "[drift][plan]") {
  PlanOptions o;
  o.quota_scale = 1.0;
  o.drift_check = true;
  HostFacts host = test::two_cpu_host();
  HostDrift d = drift(1.25);
  d.cpu_time = true;
  d.waiting = 2.0;
  d.wall_factor = 2.5;
  host.drift = d;
  const EmulationPlan p = plan_emulation(test::nn_device(0.2), host, o);
  CHECK(p.host_drift == 1.25);
  CHECK(has_note(p.notes, "host CPU shared: the drift probe's inferences on CPU 1 took 2.00x"));
  // Wall times only: the wait cannot be told from drift, so nothing is corrected.
  d.cpu_time = false;
  host.drift = d;
  const EmulationPlan q = plan_emulation(test::nn_device(0.2), host, o);
  CHECK(q.host_drift == 1.0);
  CHECK(q.cpu_quota_us == 2000);
  CHECK(has_note(q.notes, "host drift not corrected"));
  CHECK(has_note(q.notes, "no CPU times to tell the wait from drift"));
  // Alone on its CPU: no such note.
  d.cpu_time = true;
  d.waiting = 1.02;
  host.drift = d;
  CHECK_FALSE(has_note(plan_emulation(test::nn_device(0.2), host, o).notes, "host CPU shared"));
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

  // Not the integer speed; another runtime's speed by that runtime's drift only.
  host.drift = drift(1.25);
  PlanOptions integer = o;
  integer.speed_kind = SpeedKind::integer;
  CHECK(plan_emulation(test::nn_device(0.2), host, integer).host_drift == 1.0);
  Device torch = test::nn_device(0.2);
  torch.nn->basis = "pytorch";
  const EmulationPlan by_ncnn = plan_emulation(torch, host, o);
  CHECK(by_ncnn.host_drift == 1.0);
  CHECK(has_note(by_ncnn.notes, "host drift not corrected: it was probed with ncnn and the "
                                "speed is PyTorch's"));
  host.drift->runtime_id = "pytorch";
  const EmulationPlan by_torch = plan_emulation(torch, host, o);
  CHECK(by_torch.host_drift == 1.25);
  CHECK(by_torch.cpu_quota_us == 2500);
  CHECK(has_note(by_torch.notes, "at its PyTorch rating"));
  CHECK(has_note(by_torch.notes, "1 PyTorch model probed"));
  host.drift = drift(2.0);
  host.drift->runtime_id = "pytorch";
  CHECK(has_note(plan_emulation(torch, host, o).notes,
                 "`edgeprof calibrate-host --nn --runtime pytorch --remeasure --python PY`"));

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
  // A rating from a runner without CPU times (as cached by older versions): wall times.
  CHECK(cached_nn_rating()->cpu_ms.empty());
  CHECK_FALSE(probed.drift->cpu_time);
  CHECK(std::isnan(probed.drift->waiting));
  // Not asked, the integer speed, a probed device's vector speed: no probe, no problem.
  PlanOptions off = o;
  off.drift_check = false;
  PlanOptions integer = o;
  integer.speed_kind = SpeedKind::integer;
  Device vector = test::nn_device(0.2);
  vector.nn->basis = "vector";
  for (const HostFacts& h : {with_measured_drift(test::two_cpu_host(), test::nn_device(0.2), off, cpu),
                             with_measured_drift(test::two_cpu_host(), test::nn_device(0.2), integer, cpu),
                             with_measured_drift(test::two_cpu_host(), vector, o, cpu)}) {
    CHECK_FALSE(h.drift);
    CHECK(h.drift_problem.empty());
  }
  // Another runtime's speed is probed with that runtime's rating, which is not cached here.
  Device torch = test::nn_device(0.2);
  torch.nn->basis = "pytorch";
  const HostFacts t = with_measured_drift(test::two_cpu_host(), torch, o, cpu);
  CHECK_FALSE(t.drift);
  CHECK_THAT(t.drift_problem, Contains("this host's PyTorch rating is not cached"));
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

TEST_CASE("the real runner's CPU time leaves out the wait for a CPU another process shares",
          "[drift][slow]") {
  if (std::system("python3 -c 'import ncnn' 2>/dev/null") != 0) {
    WARN("python3 has no ncnn: the real runner is not run (pip install ncnn)");
    return;
  }
  const int cpu = host_facts().cpus.back();
  NnOptions o;
  o.graphs = {"squeezenet", "mobilenet_v2"};
  o.cache = false;
  o.cpu = cpu;
  o.warmup = 1;
  o.loops = 21;  // many scheduler slices: the median inference shares the CPU
  // A busy process pinned to the runner's CPU for as long as the guard lives.
  struct Spinner {
    pid_t pid = -1;
    explicit Spinner(int on) {
      const pid_t parent = ::getpid();
      pid = ::fork();
      if (pid == 0) {
        // Gone with the test process, however it ends; never spinning on the wrong CPU.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(on, &set);
        if (::sched_setaffinity(0, sizeof set, &set) != 0) ::_exit(1);
        volatile unsigned long spins = 0;
        for (;;) spins = spins + 1;
      }
    }
    ~Spinner() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  };
  NnRating shared;
  {
    const Spinner spinner(cpu);
    REQUIRE(spinner.pid > 0);
    shared = measure_nn_rating(o);
  }
  REQUIRE(shared.cpu_ms.size() == 2);
  for (const auto& [graph, ms] : shared.host_ms) {
    INFO(graph << ": " << ms << " ms of wall, " << shared.cpu_ms.at(graph) << " ms of CPU");
    // Fair sharing gives each about half the CPU: the wall time about twice the CPU time.
    CHECK(ms > 1.3 * shared.cpu_ms.at(graph));
  }
  // Alone, the CPU time is the process's own and no more than its wall time.
  const NnRating alone = measure_nn_rating(o);
  for (const auto& [graph, ms] : alone.host_ms) {
    INFO(graph << ": " << ms << " ms of wall, " << alone.cpu_ms.at(graph) << " ms of CPU");
    CHECK(alone.cpu_ms.at(graph) > 0);
    CHECK(alone.cpu_ms.at(graph) <= ms * 1.05);
  }
}

TEST_CASE("another runtime's speed is probed with that runtime's models and corrected by them",
          "[drift]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  NnOptions n;
  n.runtime = "pytorch";
  n.python = fake_torch_python(bin, "rated", 10, 9.9);
  const NnRating rated = measure_nn_rating(n);
  REQUIRE_FALSE(rated.cache_file.empty());
  REQUIRE(rated.command == n.python);
  // Now every model takes 12.5 ms of CPU: probed with the runtime's three share models (ncnn's
  // probe graphs are not its models), in CPU time.
  DriftOptions d;
  d.python = fake_torch_python(bin, "now", 13, 12.375);
  d.cpu = host_facts().cpus.front();
  std::vector<std::string> heard;
  DriftOptions told = d;
  told.progress = [&](const std::string& line) { heard.push_back(line); };
  const HostDrift probed = measure_host_drift(rated, told);
  // Tens of seconds with a real runtime: it says what it probes, the runner's lines, the
  // reading; and it does not count activations (an inference per model it has no use for).
  REQUIRE(heard.size() >= 3);
  CHECK_THAT(heard.front(), Contains("probing this host's drift since its PyTorch rating") &&
                                Contains("3 models"));
  CHECK(heard.back() == describe(probed));
  // Not the runner's closing summary, which reads as a rating's.
  for (const std::string& line : heard) CHECK(line.rfind("3 models with", 0) != 0);
  CHECK_THAT(bin.read("/rated.args"), Contains("--activations"));
  CHECK_THAT(bin.read("/now.args"), !Contains("--activations") && Contains("--mean"));
  CHECK_THAT(bin.read("/now.args"), !Contains("--threads"));
  CHECK(probed.factor == Approx(1.25));
  // A rating of two threads is not one thread's time.
  NnRating two = rated;
  two.threads = 2;
  CHECK_THROWS_WITH(measure_host_drift(two, d),
                    Contains("measured with 2 threads") && Contains("one-thread rating"));
  // A full rating without activations is measured, and not cached over one with them.
  NnOptions bare = n;
  bare.activations = false;
  bare.python = fake_torch_python(bin, "bare", 20, 19.8);
  const NnRating without = measure_nn_rating(bare);
  CHECK(without.cache_file.empty());
  CHECK_THAT(without.note, Contains("without activations"));
  CHECK_THAT(bin.read("/bare.args"), !Contains("--activations"));
  const std::optional<NnRating> kept = cached_nn_rating(nullptr, "pytorch");
  REQUIRE(kept);
  CHECK(kept->host_ms.at("resnet18") == Approx(10));
  CHECK(probed.cpu_time);
  CHECK(probed.runtime_id == "pytorch");
  CHECK(probed.ratios.size() == 3);
  CHECK(probed.ratios.count("resnet18") == 1);
  CHECK_THAT(describe(probed), Contains("ran 1.25x slower than at its PyTorch rating") &&
                                   Contains("3 PyTorch models probed"));
  // Without an interpreter named, the rating's own (here: as fast as rated); where that is
  // gone, $EDGEPROF_PYTHON's.
  CHECK(measure_host_drift(rated, DriftOptions{}).factor == Approx(1.0));
  {
    NnRating moved = rated;
    moved.command = bin.root() + "/no-such-python";
    test::ScopedEnv python("EDGEPROF_PYTHON", d.python);
    CHECK(measure_host_drift(moved, DriftOptions{}).factor == Approx(1.25));
  }
  // int8's models share a name with ncnn's default probe graphs (mobilenet_v2): still its own
  // three.
  NnOptions q = n;
  q.runtime = "pytorch-int8";
  const NnRating int8 = measure_nn_rating(q);
  const HostDrift int8_drift = measure_host_drift(int8, d);
  CHECK(int8_drift.ratios.size() == 3);
  CHECK(int8_drift.ratios.count("shufflenet_v2_x1_0") == 1);
  // Graphs asked for are probed as asked.
  DriftOptions one = d;
  one.graphs = {"mobilenet_v2"};
  CHECK(measure_host_drift(int8, one).ratios.size() == 1);
  // A plan at the runtime's speed probes it, and is corrected by it.
  PlanOptions o;
  o.drift_check = true;
  o.quota_scale = 1.0;
  o.nn_measure.python = d.python;
  Device torch = test::nn_device(0.2);
  torch.nn->basis = "pytorch";
  const HostFacts host = with_measured_drift(test::two_cpu_host(), torch, o, d.cpu);
  REQUIRE(host.drift);
  CHECK(host.drift->runtime_id == "pytorch");
  const EmulationPlan p = plan_emulation(torch, host, o);
  CHECK(p.host_drift == Approx(1.25));
  CHECK(p.cpu_quota_us == 2500);
  // An ncnn rating's probe is not asked for (none is cached here): the runtime's alone.
  CHECK_FALSE(cached_nn_rating());
}
