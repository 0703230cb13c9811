// This host's own parallel scaling of CNN inference and the projection that follows a
// workload's: the arithmetic (pure), the measurement's mechanism (a stand-in for the Python
// with ncnn that reports fixed times and records the CPUs it was given), and the plan.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/result.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using Catch::Contains;

namespace {

NnRating run_of(std::map<std::string, double> ms, int threads) {
  NnRating r;
  r.host_ms = std::move(ms);
  r.threads = threads;
  r.runtime = "ncnn 1.0.test (stand-in)";
  r.measured_at = "2026-11-28T15:00:00Z";
  return r;
}

}  // namespace

TEST_CASE("the host's scaling is each graph's median one- over multi-thread time",
          "[scaling]") {
  const HostScaling h = host_scaling(
      {run_of({{"a", 10}, {"b", 20}}, 1), run_of({{"a", 12}, {"b", 18}, {"c", 4}}, 1)},
      {run_of({{"a", 5}, {"b", 20}}, 2), run_of({{"a", 6}, {"b", 18}}, 2)});
  CHECK(h.threads == 2);
  CHECK(h.rounds == 2);
  CHECK(h.one_ms.size() == 2);  // "c" ran with one thread only
  CHECK(h.speedup("a") == Approx(2.0));  // 11 / 5.5
  CHECK(h.speedup("b") == Approx(1.0));
  CHECK(h.median_speedup() == Approx(1.5));
  CHECK(h.median_speedup("a") == Approx(1.0));
  CHECK_THROWS_WITH(h.speedup("c"), Contains("'c' was not measured"));

  // A workload's factor: its speed-up over the graphs' median, within 0.5 .. 2.
  CHECK(workload_scaling(h, 1.5) == Approx(1.0));
  CHECK(workload_scaling(h, 1.2) == Approx(0.8));
  CHECK(workload_scaling(h, 2.0, "a") == Approx(2.0));  // held out: against b's 1.0
  CHECK(workload_scaling(h, 9.0) == 2.0);
  CHECK(workload_scaling(h, 0.3) == 0.5);
  CHECK_THROWS_WITH(workload_scaling(h, 0), Contains("give a positive number"));

  CHECK_THROWS_WITH(host_scaling({}, {}), Contains("at least one"));
  CHECK_THROWS_WITH(host_scaling({run_of({{"a", 1}}, 1)}, {run_of({{"b", 1}}, 2)}),
                    Contains("no graph in common"));
  CHECK_THROWS_WITH(host_scaling({run_of({{"a", -1}}, 1)}, {run_of({{"a", 1}}, 2)}),
                    Contains("positive numbers"));
}

TEST_CASE("the host's scaling runs one thread on one CPU and N on N, alternately",
          "[scaling]") {
  const std::vector<int> usable = host_facts().cpus;
  if (usable.size() < 2) {
    WARN("skipped: one CPU");
    return;
  }
  const test::FakeTree bin;
  // Every graph 10 ms with one thread, 4 ms with two; each run records the CPUs it was given.
  std::string body =
      "#!/bin/sh\n"
      "case \"$*\" in *--threads=2*) ms=4; n=2;; *) ms=10; n=1;; esac\n"
      "grep Cpus_allowed_list /proc/self/status | cut -f2 >> " + bin.root() + "/cpus-$n\n"
      "echo 'runtime ncnn 1.0.test (stand-in)'\n";
  for (const auto& g : reference_graphs()) body += "echo \"" + g.name + " $ms $ms $ms\"\n";
  bin.file("/python", body);
  std::filesystem::permissions(bin.root() + "/python", std::filesystem::perms::owner_all);
  HostScalingOptions o;
  o.python = bin.root() + "/python";
  o.graphs = {"squeezenet", "mobilenet"};
  o.rounds = 2;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  const HostScaling h = measure_host_scaling(o);
  CHECK(h.threads == 2);
  CHECK(h.rounds == 2);
  CHECK(h.speedup("squeezenet") == Approx(2.5));
  CHECK(h.median_speedup() == Approx(2.5));
  CHECK(h.cpus == std::vector<int>{usable[0], usable[1]});
  CHECK(test::has_note(lines, "host scaling [2/2]"));
  auto read = [&](const std::string& name) {
    std::ifstream in(bin.root() + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  // Two runs each: the one thread on the first CPU alone, the two threads on both.
  CHECK(read("cpus-1") == fmt::format("{}\n{}\n", usable[0], usable[0]));
  const std::string both = format_cpu_list({usable[0], usable[1]});
  CHECK(read("cpus-2") == both + "\n" + both + "\n");

  // All the graphs, as a user's call would run them: the nn rating is left alone (the one-thread
  // runs would otherwise have replaced it).
  {
    const test::FakeTree cache;
    test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
    HostScalingOptions all;
    all.python = o.python;
    all.rounds = 1;
    const HostScaling every = measure_host_scaling(all);
    CHECK(every.one_ms.size() == reference_graphs().size());
    CHECK_FALSE(std::filesystem::exists(cache.root() + "/host-nn.json"));
    // A multi-thread rating of every graph is not cached either, and says what it was.
    NnOptions two;
    two.python = o.python;
    two.threads = 2;
    const NnRating r = measure_nn_rating(two);
    CHECK(r.cache_file.empty());
    CHECK_THAT(r.note, Contains("2 threads"));
    CHECK(r.cpus == std::vector<int>{usable[0], usable[1]});
    CHECK_THAT(describe(r), Contains(fmt::format("2 threads on CPUs {},{}", usable[0],
                                                 usable[1])));
    CHECK_FALSE(std::filesystem::exists(cache.root() + "/host-nn.json"));
    two.cpus = {usable[0]};
    CHECK_THROWS_WITH(measure_nn_rating(two), Contains("one distinct CPU per thread"));
    two.cpus = {usable[0], usable[0]};
    CHECK_THROWS_WITH(measure_nn_rating(two), Contains("one distinct CPU per thread"));
    two.cpus = {};
    two.threads = 0;
    CHECK_THROWS_WITH(measure_nn_rating(two), Contains("give 1, or more with ncnn"));
  }

  // Another runtime's models, told the threads the same way (--threads=2).
  {
    const test::FakeTree torch;
    std::string tb =
        "#!/bin/sh\n"
        "echo \"$*\" >> " + torch.root() + "/argv\n"
        "case \"$*\" in *--threads=2*) ms=6;; *) ms=9;; esac\n"
        "echo 'runtime PyTorch 2.test fp32 eager (stand-in)'\n"
        "for m in resnet18 vgg13 mobilenetv2_100; do echo \"$m $ms $ms $ms\"; done\n";
    torch.file("/python", tb);
    std::filesystem::permissions(torch.root() + "/python", std::filesystem::perms::owner_all);
    HostScalingOptions t;
    t.python = torch.root() + "/python";
    t.runtime = "pytorch";
    t.graphs = {"resnet18", "vgg13", "mobilenetv2_100"};
    t.rounds = 1;
    const HostScaling th = measure_host_scaling(t);
    CHECK(th.one_ms.size() == 3);
    CHECK(th.speedup("vgg13") == Approx(1.5));
    CHECK_THAT(th.runtime, Contains("PyTorch"));
    std::ifstream in(torch.root() + "/argv");
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    CHECK_THAT(first, Contains("--threads=2") && Contains("vgg13"));
    CHECK_THAT(second, !Contains("--threads"));
  }

  // Two threads slower than one for the median graph: the second CPU was not the run's, and
  // the figures are refused, not returned.
  {
    const test::FakeTree slow;
    std::string sb =
        "#!/bin/sh\n"
        "case \"$*\" in *--threads=2*) ms=11;; *) ms=10;; esac\n"
        "echo 'runtime ncnn 1.0.test (stand-in)'\n";
    for (const auto& g : reference_graphs()) sb += "echo \"" + g.name + " $ms $ms $ms\"\n";
    slow.file("/python", sb);
    std::filesystem::permissions(slow.root() + "/python", std::filesystem::perms::owner_all);
    HostScalingOptions s;
    s.python = slow.root() + "/python";
    s.graphs = {"squeezenet", "mobilenet", "resnet18"};
    s.rounds = 1;
    CHECK_THROWS_WITH(measure_host_scaling(s),
                      Contains("ran slower than with one") && Contains("0.91") &&
                          Contains("measure again"));
  }

  HostScalingOptions bad;
  bad.threads = 1;
  CHECK_THROWS_WITH(measure_host_scaling(bad), Contains("threads >= 2"));
  bad.threads = 2;
  bad.cpus = {0};
  CHECK_THROWS_WITH(measure_host_scaling(bad), Contains("one CPU per thread"));
}

TEST_CASE("a projection follows the workload's own scaling where it is given", "[plan][scaling]") {
  PlanOptions o;
  o.cores = CoreEmulation::projected;
  o.speed_kind = SpeedKind::integer;
  o.quota_scale = 1.0;
  const EmulationPlan board = plan_emulation(test::quad_board(), test::two_cpu_host(), o);
  REQUIRE(board.threads_projection);
  CHECK(board.threads_projection->speedup == Approx(2.0));
  CHECK(board.threads_projection->workload_factor == 1.0);

  o.workload_scaling = 0.8;  // scales worse than the reference graphs on this host
  const EmulationPlan own = plan_emulation(test::quad_board(), test::two_cpu_host(), o);
  REQUIRE(own.threads_projection);
  CHECK(own.threads_projection->speedup == Approx(1.6));
  CHECK(own.threads_projection->workload_factor == 0.8);
  CHECK(own.threads_projection->scaling == board.threads_projection->scaling);
  CHECK(test::has_note(own.notes, "2 x 0.8 = 1.6"));
  // The same quota: only the projection moves.
  CHECK(own.cpu_quota_us == board.cpu_quota_us);
  // A report keeps the factor, and its text says what the divisor is made of.
  Result r;
  r.device = test::quad_board();
  r.plan = own;
  r.wall_time_s = 1.6;
  const Result back = result_from_json(to_json(r));
  REQUIRE(back.plan.threads_projection);
  CHECK(back.plan.threads_projection->workload_factor == 0.8);
  CHECK(back.plan == own);
  CHECK(*back.projected_s(1.6) == Approx(1.0));
  CHECK_THAT(to_text(back), Contains("the board's speed-up from 1 to 4 threads (2) x the "
                                     "workload's own scaling (0.8)"));

  o.workload_scaling = 3.0;
  CHECK_THROWS_WITH(plan_emulation(test::quad_board(), test::two_cpu_host(), o),
                    Contains("workload_scaling = 3 is out of range"));
  // Not projected: nothing to follow.
  o.workload_scaling = 0.8;
  o.cores = CoreEmulation::pooled;
  const EmulationPlan pooled = plan_emulation(test::quad_board(), test::two_cpu_host(), o);
  CHECK_FALSE(pooled.threads_projection);
  CHECK(test::has_note(pooled.notes, "workload_scaling 0.8 not applied"));
}
