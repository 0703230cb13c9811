#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "edgeprof/error.hpp"
#include "edgeprof/plan.hpp"
#include "run/plan_warnings.hpp"

using namespace edgeprof;

namespace {
HostFacts host(int cpus, std::uint64_t memory = 8ull << 30) {
  HostFacts h;
  for (int i = 0; i < cpus; ++i) h.cpus.push_back(i);
  h.memory_bytes = memory;
  return h;
}
// The plan's notes but keep-warm's, which every throttling plan ends with (tested on its own).
std::vector<std::string> without_keep_warm(const EmulationPlan& p) {
  std::vector<std::string> out;
  for (const std::string& n : p.notes) {
    if (n.find("docs/keep-warm.md") == std::string::npos) out.push_back(n);
  }
  return out;
}
// The same without the thread environment's note, which every plan has (tested on its own).
std::vector<std::string> notes_of(const EmulationPlan& p) {
  std::vector<std::string> out;
  for (const std::string& n : without_keep_warm(p)) {
    if (n.find("docs/threads.md") == std::string::npos) out.push_back(n);
  }
  return out;
}
}  // namespace

TEST_CASE("quota is cores x speed x period over min(cores, host CPUs) CPUs", "[plan]") {
  auto plan = plan_emulation(make_device("d", 1, 0.5, "512MiB"), host(4));
  CHECK(plan.cpus == std::vector<int>{0});
  CHECK(plan.cpu_period_us == kDefaultCpuPeriodUs);
  CHECK(plan.cpu_quota_us == 5000);
  CHECK(plan.capacity_cores() == Approx(0.5));
  CHECK(plan.memory_max_bytes == 512ull << 20);
  CHECK(plan.swap_max_bytes == 0);
  CHECK(notes_of(plan).empty());
  CHECK(plan.unapplied.empty());
  // Swap the host lacks cannot be used: a limit unapplied, not only a note (issue 36, item 11).
  Device swapping = make_device("s", 1, 0.5, "512MiB");
  swapping.swap_bytes = 1ull << 30;
  HostFacts no_swap = host(4);
  no_swap.swap_bytes = 0;
  const EmulationPlan swap_plan = plan_emulation(swapping, no_swap);
  REQUIRE(swap_plan.unapplied.size() == 1);
  CHECK_THAT(swap_plan.unapplied[0], Catch::StartsWith("swap:") && Catch::Contains("1 GiB"));
  CHECK(notes_of(swap_plan).empty());

  auto four = plan_emulation(make_device("pi", 4, 0.25, "4GiB"), host(2));
  CHECK(four.cpus == std::vector<int>{0, 1});
  // At the default 10 ms, 5 ms per CPU per period would be one bandwidth slice: the period is
  // lengthened to two.
  CHECK(four.cpu_period_us == 20000);
  CHECK(four.cpu_quota_us == 20000);
  REQUIRE(notes_of(four).size() == 3);
  CHECK_THAT(notes_of(four)[0], Catch::Contains("4 cores are emulated on 2 host CPUs") &&
                                     Catch::Contains("spin-waits") && Catch::Contains("OpenMP"));
  // One busy thread may take the whole slice's quota: up to a host core, not a quarter.
  CHECK_THAT(notes_of(four)[1], Catch::Contains("a single thread at up to 1.00 of a host core "
                                            "instead of 0.25"));
  CHECK_THAT(notes_of(four)[2], Catch::Contains("cpu period 20000 us instead of the default"));
  auto two = plan_emulation(make_device("duo", 2, 0.3, "1GiB"), host(4));
  CHECK(two.cpu_period_us == 34000);
  REQUIRE(notes_of(two).size() == 2);
  CHECK_THAT(notes_of(two)[0], Catch::Contains("up to 0.60 of a host core instead of 0.3"));
  CHECK_THAT(notes_of(two)[1], Catch::Contains("cpu period 34000 us"));

  // A device as fast as the cpuset it gets: its quota is all of it, and the plan says that the
  // kernel gets none (backends write "max" / -1).
  for (const Device& full : {make_device("fast", 1, 1.0, "512MiB"),
                             make_device("two", 2, 1.0, "512MiB"),
                             make_device("four", 4, 0.5, "512MiB")}) {
    auto p = plan_emulation(full, host(2));
    CAPTURE(full.name);
    CHECK(p.cpu_quota_us == p.cpu_period_us * p.cpus.size());
    CHECK(p.capacity_cores() == Approx(double(p.cpus.size())));
    REQUIRE_FALSE(notes_of(p).empty());
    CHECK_THAT(notes_of(p).back(), Catch::Contains("the kernel gets no quota"));
  }
  CHECK(notes_of(plan_emulation(make_device("almost", 1, 0.99, "512MiB"), host(2))).empty());
}

TEST_CASE("the default period is lengthened, or the plan says, where threads may share the "
          "quota unevenly",
          "[plan]") {
  auto uneven_note = [](const EmulationPlan& p) {
    for (const std::string& n : p.notes) {
      if (n.find("unequal shares") != std::string::npos) return true;
    }
    return false;
  };
  const Device two = make_device("two", 2, 0.5, "1GiB");
  // The default 10 ms would give each CPU one 5 ms slice: lengthened to two.
  auto chosen = plan_emulation(two, host(2));
  CHECK(chosen.cpu_period_us == 20000);
  CHECK(chosen.cpu_quota_us == 20000);
  CHECK_FALSE(uneven_note(chosen));
  CHECK_THAT(notes_of(chosen).back(), Catch::Contains("instead of the default 10000 us") &&
                                      Catch::Contains("two 5 ms bandwidth slices"));
  // A period asked for is kept, with the note where it is short.
  PlanOptions ten;
  ten.cpu_period_us = 10000;
  const auto kept = plan_emulation(two, host(2), ten);
  CHECK(kept.cpu_period_us == 10000);
  CHECK(uneven_note(kept));
  PlanOptions longer;
  longer.cpu_period_us = 20000;  // 10 ms per CPU: two slices
  CHECK_FALSE(uneven_note(plan_emulation(two, host(2), longer)));
  HostFacts fine = host(2);
  fine.cfs_bandwidth_slice_us = 1000;  // a host tuned to 1 ms slices: five per CPU at 10 ms
  CHECK(plan_emulation(two, fine).cpu_period_us == 10000);
  CHECK_FALSE(uneven_note(plan_emulation(two, fine)));
  // Two slices would take 100 ms: lengthened to 40 ms only, and the note.
  const auto slow = plan_emulation(make_device("slow", 2, 0.1, "1GiB"), host(2));
  CHECK(slow.cpu_period_us == kMaxEvenCpuPeriodUs);
  CHECK(uneven_note(slow));
  CHECK_THAT(notes_of(slow).back(), Catch::Contains("A period of 100 ms or more"));
  // One CPU draws from the pool alone: nothing to share.
  const auto one = plan_emulation(make_device("one", 1, 0.25, "1GiB"), host(2));
  CHECK(one.cpu_period_us == kDefaultCpuPeriodUs);
  CHECK_FALSE(uneven_note(one));
}

TEST_CASE("the plan honours the period option and explicit CPUs", "[plan]") {
  PlanOptions options;
  options.cpu_period_us = 100000;
  options.cpus = {2, 3};
  auto plan = plan_emulation(make_device("d", 2, 0.3, "1GiB"), host(4), options);
  CHECK(plan.cpus == std::vector<int>{2, 3});
  CHECK(plan.cpu_quota_us == 60000);
  options.cpus = {7};
  CHECK_THROWS_AS(plan_emulation(make_device("d", 1, 0.3, "1GiB"), host(4), options),
                  UnsupportedError);
  // A CPU given twice counted twice: a quota of 3.6 cores on a cpuset of 2 ("0,0-1,1").
  options.cpus = {0, 1, 0, 1};
  CHECK_THROWS_WITH(plan_emulation(make_device("d", 4, 0.9, "1GiB"), host(4), options),
                    Catch::Contains("CPU 0 is asked for twice"));
  options.cpus = {};
  options.cpu_period_us = 500;
  CHECK_THROWS_WITH(plan_emulation(make_device("d", 1, 0.3, "1GiB"), host(4), options),
                    Catch::Contains("cpu_period_us = 500"));
}

TEST_CASE("the period is chosen from the workload's iteration time", "[plan]") {
  CHECK(choose_cpu_period_us(0) == kDefaultCpuPeriodUs);
  CHECK(choose_cpu_period_us(200000) == 20000);    // 200 ms inference: 20 ms periods
  CHECK(choose_cpu_period_us(40000) == 5000);      // shorter periods cost more than they gain
  CHECK(choose_cpu_period_us(500) == 5000);
  CHECK(choose_cpu_period_us(10000000) == 100000);  // 10 s steps: 100 ms is plenty
  PlanOptions options;
  options.iteration_time_us = 100000;
  auto plan = plan_emulation(make_device("d", 1, 0.5, "512MiB"), host(2), options);
  CHECK(plan.cpu_period_us == 10000);
  CHECK(plan.cpu_quota_us == 5000);
  REQUIRE(notes_of(plan).size() == 1);
  CHECK_THAT(notes_of(plan)[0], Catch::Contains("chosen for iterations of 100 ms (a tenth"));
  // The quota floor still wins: 0.1 cores cannot have a 5 ms period.
  options.iteration_time_us = 20000;
  auto slow = plan_emulation(make_device("d", 1, 0.1, "512MiB"), host(2), options);
  CHECK(slow.cpu_period_us == 10000);
  CHECK(slow.cpu_quota_us == 1000);
  options.cpu_period_us = 5000;
  CHECK_THROWS_WITH(plan_emulation(make_device("d", 1, 0.5, "512MiB"), host(2), options),
                    Catch::Contains("not both"));
}

TEST_CASE("on several CPUs the chosen period gives each CPU two bandwidth slices, where it can",
          "[plan]") {
  PlanOptions options;
  options.iteration_time_us = 100000;  // a tenth is 10 ms: one 5 ms slice per CPU
  HostFacts h = host(2);
  auto plan = plan_emulation(make_device("d", 2, 0.5, "512MiB"), h, options);
  CHECK(plan.cpu_period_us == 20000);
  CHECK(plan.cpu_quota_us == 20000);
  REQUIRE(notes_of(plan).size() == 2);  // the quota is the slice's, and the period
  CHECK_THAT(notes_of(plan)[1], Catch::Contains("a tenth would be 10000 us") &&
                                Catch::Contains("two 5 ms bandwidth slices"));
  // Two slices would take longer than a quarter of the iteration: a tenth, and a note.
  options.iteration_time_us = 40000;
  plan = plan_emulation(make_device("d", 2, 0.5, "512MiB"), h, options);
  CHECK(plan.cpu_period_us == 5000);
  REQUIRE(notes_of(plan).size() == 3);
  CHECK_THAT(notes_of(plan)[1], Catch::Contains("(a tenth, within 5 to 100 ms)"));
  CHECK_THAT(notes_of(plan)[2], Catch::Contains("A period of 20 ms or more shares evenly"));
  // A smaller slice on this host: a tenth is already enough.
  h.cfs_bandwidth_slice_us = 1000;
  options.iteration_time_us = 100000;
  plan = plan_emulation(make_device("d", 2, 0.5, "512MiB"), h, options);
  CHECK(plan.cpu_period_us == 10000);
  // One CPU: nothing to share.
  plan = plan_emulation(make_device("d", 1, 0.5, "512MiB"), host(2), options);
  CHECK(plan.cpu_period_us == 10000);
}

TEST_CASE("a tiny quota stretches the period to the kernel's 1 ms minimum", "[plan]") {
  auto plan = plan_emulation(make_device("slow", 1, 0.05, "64MiB"), host(2));
  CHECK(plan.cpu_period_us == 20000);
  CHECK(plan.cpu_quota_us == 1000);
  REQUIRE(notes_of(plan).size() == 1);
  CHECK_THAT(notes_of(plan)[0], Catch::Contains("1 ms minimum"));
}

TEST_CASE("a device too big for the host runs as many of its cores as fit, saying so", "[plan]") {
  // 4 x 0.8 on 2 CPUs: 2 of its cores (1.6 host cores).
  const EmulationPlan big = plan_emulation(make_device("big", 4, 0.8, "1GiB"), host(2));
  CHECK(big.cpus == std::vector<int>{0, 1});
  CHECK(big.capacity_cores() == Approx(2 * 0.8).epsilon(1e-3));
  REQUIRE_FALSE(notes_of(big).empty());
  CHECK_THAT(notes_of(big)[0], Catch::Contains("2 of the device's 4 cores are emulated") &&
                                   Catch::Contains("3.20 host cores") &&
                                   Catch::Contains("2 host CPUs") &&
                                   Catch::Contains("at most 2 busy threads"));
  // 4 x 0.5035 (a Raspberry Pi 4 at 1.8 GHz on a host 0.85 of the reference core) fits 3 cores:
  // the same plan as for_threads(device, 3), and the note says so.
  const Device pi = make_device("pi", 4, 0.5035, "1GiB");
  const EmulationPlan fitted = plan_emulation(pi, host(2));
  const EmulationPlan three = plan_emulation(for_threads(pi, 3), host(2));
  CHECK(fitted.capacity_cores() == Approx(3 * 0.5035).epsilon(1e-3));
  CHECK(fitted.cpu_quota_us == three.cpu_quota_us);
  CHECK(fitted.cpu_period_us == three.cpu_period_us);
  CHECK(fitted.cpus == three.cpus);
  CHECK_THAT(notes_of(fitted)[0], Catch::Contains("3 of the device's 4 cores") &&
                                      Catch::Contains("2.01 host cores"));
  // What fits as it is gets no such note.
  for (const std::string& note : notes_of(three)) {
    CHECK_THAT(note, !Catch::Contains("of the device's"));
  }
}

TEST_CASE("the plan refuses what the host cannot emulate, saying why", "[plan]") {
  // A core faster than a host CPU: no quota makes a host CPU faster.
  CHECK_THROWS_WITH(plan_emulation(make_device("fast", 2, 1.5, "1GiB"), host(2)),
                    Catch::Contains("faster than a host CPU") &&
                        Catch::Contains("3.00 host cores"));
  CHECK_THROWS_AS(plan_emulation(make_device("fast", 1, 1.2, "1GiB"), host(2)), UnsupportedError);
  CHECK_THROWS_WITH(plan_emulation(make_device("fat", 1, 0.5, "16GiB"), host(2, 8ull << 30)),
                    Catch::Contains("16 GiB") && Catch::Contains("8 GiB"));
  CHECK_THROWS_AS(plan_emulation(make_device("tiny", 1, 0.0005, "64MiB"), host(2)),
                  UnsupportedError);
}

TEST_CASE("CPU lists round-trip", "[plan]") {
  CHECK(parse_cpu_list("0-3,8\n") == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(parse_cpu_list("") == std::vector<int>{});
  CHECK(format_cpu_list({8, 0, 1, 2, 3}) == "0-3,8");
  CHECK(format_cpu_list({1, 3}) == "1,3");
  // The last CPU number an int holds: its run's next was computed by overflowing (undefined).
  constexpr int top = std::numeric_limits<int>::max();
  CHECK(format_cpu_list({top, top - 1}) == std::to_string(top - 1) + "-" + std::to_string(top));
  CHECK(format_cpu_list({top, top}) == std::to_string(top));
  CHECK(format_cpu_list({3, 3, 2}) == "2-3");  // was "2-3,3"
  CHECK_THROWS_WITH(format_cpu_list({-1, 0}), Catch::Contains("CPU -1"));
  CHECK_THROWS_AS(parse_cpu_list("3-1"), Error);
  CHECK_THROWS_AS(parse_cpu_list("a"), Error);
}

TEST_CASE("storage bandwidth goes on the host disk, or the plan lists it unapplied and why",
          "[plan][io]") {
  Device d = make_device("disk", 1, 0.5, "256MiB");
  d.io_read_bps = 40000000;
  HostFacts h = host(2);
  h.io_device = "8:0";
  EmulationPlan p = plan_emulation(d, h);
  CHECK(p.io_device == "8:0");
  CHECK(p.io_read_bps == std::optional<std::uint64_t>(40000000));
  CHECK_FALSE(p.io_write_bps);
  h.io_device.clear();
  h.io_device_problem = "the current directory is on a filesystem without a block device";
  p = plan_emulation(d, h);
  CHECK(p.io_device.empty());
  CHECK_FALSE(p.io_read_bps);
  // A limit the run does not apply: listed as such (Result::unapplied), not only noted.
  REQUIRE(p.unapplied.size() == 1);
  CHECK_THAT(p.unapplied[0], Catch::StartsWith("storage bandwidth") &&
                                 Catch::Contains("without a block device"));
  // Without storage figures nothing is planned and nothing noted about storage.
  d.io_read_bps.reset();
  h.io_device = "8:0";
  p = plan_emulation(d, h);
  CHECK(p.io_device.empty());
}

TEST_CASE("a plan that throttles keeps its CPUs warm unless asked not to, and says so", "[plan]") {
  auto plan = plan_emulation(make_device("d", 2, 0.5, "512MiB"), host(4));
  CHECK(plan.keep_warm);
  REQUIRE_FALSE(plan.notes.empty());
  CHECK_THAT(plan.notes.back(), Catch::Contains("host CPUs 0-1 are kept busy") &&
                                    Catch::Contains("docs/keep-warm.md"));
  PlanOptions off;
  off.keep_warm = false;
  const auto cold = plan_emulation(make_device("d", 2, 0.5, "512MiB"), host(4), off);
  CHECK_FALSE(cold.keep_warm);
  CHECK(cold.notes == without_keep_warm(plan));
  CHECK_FALSE(cold == plan);
  // Nothing throttles a device as fast as its cpuset: nothing to keep warm.
  const auto full = plan_emulation(make_device("full", 2, 1.0, "512MiB"), host(4));
  CHECK_FALSE(full.keep_warm);
  // A speed schedule throttles later in the run, even from full speed.
  Device hot = make_device("hot", 1, 1.0, "512MiB");
  hot.speed_schedule = {{1.0, 0.5}};
  CHECK(plan_emulation(hot, host(4)).keep_warm);
}

TEST_CASE("a speed schedule's step below what the kernel can express is refused when planned",
          "[plan]") {
  // 0.02 x 0.01 is 0.0002 cores: the scheduler wrote the kernel's least, 1 ms per 1 s (0.001),
  // five times the speed asked, and said nothing.
  Device slow = make_device("slow", 1, 0.02, "512MiB");
  slow.speed_schedule = {{0.05, 0.01}};
  CHECK_THROWS_AS(plan_emulation(slow, host(4)), UnsupportedError);
  CHECK_THROWS_WITH(plan_emulation(slow, host(4)),
                    Catch::Contains("device 'slow'") && Catch::Contains("step at 0.05 s") &&
                        Catch::Contains("0.0002 host cores") && Catch::Contains("0.001 cores"));
  // One the kernel can express (0.02 x 0.1 = 0.002 cores) is planned.
  slow.speed_schedule = {{0.05, 0.1}};
  CHECK_NOTHROW(plan_emulation(slow, host(4)));
}

TEST_CASE("keep-warm is off where each CPU waits less than 45% of every period", "[plan]") {
  // At 0.75 and 0.9 of a CPU the threads delayed the workload's return (+8% and up to +40% wall
  // time in single runs here) more than they saved; at 0.58, ncnn's +16% against +1%.
  for (double speed : {0.75, 0.9, 0.61, 0.58, 0.56}) {
    const auto plan = plan_emulation(make_device("fast", 1, speed, "512MiB"), host(4));
    INFO("speed " << speed);
    CHECK_FALSE(plan.keep_warm);
    REQUIRE_FALSE(plan.notes.empty());
    CHECK_THAT(plan.notes.back(), Catch::Contains("keep-warm is off") &&
                                      Catch::Contains("above 0.55"));
  }
  CHECK(plan_emulation(make_device("d", 1, 0.55, "512MiB"), host(4)).keep_warm);
  CHECK(plan_emulation(make_device("d", 1, 0.4, "512MiB"), host(4)).keep_warm);
  // The share is per CPU: 3 x 0.36 on two host CPUs is 0.54 of each, 3 x 0.4 0.6.
  CHECK(plan_emulation(make_device("d", 3, 0.36, "512MiB"), host(2)).keep_warm);
  CHECK_FALSE(plan_emulation(make_device("d", 3, 0.4, "512MiB"), host(2)).keep_warm);
  // Asked off, no note about it.
  PlanOptions off;
  off.keep_warm = false;
  const auto cold = plan_emulation(make_device("fast", 1, 0.9, "512MiB"), host(4), off);
  CHECK(without_keep_warm(cold) == cold.notes);
}

TEST_CASE("the workload's environment gets the device's width, and passive waiting under a quota",
          "[plan][threads]") {
  // A four-core device on two host CPUs: a runtime sizing its pool from its affinity would
  // start two threads; the variables say four.
  auto four = plan_emulation(make_device("pi", 4, 0.25, "4GiB"), host(2));
  for (const char* name : kThreadCountVariables) {
    CAPTURE(name);
    REQUIRE(four.thread_env.count(name));
    CHECK(four.thread_env.at(name) == "4");
  }
  CHECK(four.thread_env.at("OMP_WAIT_POLICY") == "PASSIVE");
  CHECK(four.thread_env.at("GOMP_SPINCOUNT") == "0");
  CHECK(four.thread_env.at("KMP_BLOCKTIME") == "0");
  bool noted = false;
  for (const std::string& n : four.notes) {
    noted = noted || (n.find("OMP_NUM_THREADS=4") != std::string::npos &&
                      n.find("sleep rather than spin") != std::string::npos);
  }
  CHECK(noted);

  // A device as fast as the host's CPUs gets no quota: its threads may spin as on the device.
  auto full = plan_emulation(make_device("full", 2, 1.0, "1GiB"), host(2));
  CHECK(full.thread_env.at("OMP_NUM_THREADS") == "2");
  CHECK(full.thread_env.count("OMP_WAIT_POLICY") == 0);

  // A device bigger than the host is emulated with the cores that fit: that is its width.
  auto big = plan_emulation(make_device("big", 8, 0.5, "1GiB"), host(2));
  CHECK(big.thread_env.at("OMP_NUM_THREADS") == "4");

  // glibc's malloc thresholds settled, as the nn ratings had them, unless asked not to.
  for (const EnvDefault& v : kSteadyMallocVariables) {
    CAPTURE(v.name);
    CHECK(four.thread_env.at(v.name) == v.value);
    CHECK(full.thread_env.at(v.name) == v.value);
  }
  PlanOptions churn;
  churn.steady_malloc = false;
  auto dynamic = plan_emulation(make_device("pi", 4, 0.25, "4GiB"), host(2), churn);
  CHECK(dynamic.thread_env.count("MALLOC_MMAP_THRESHOLD_") == 0);
  CHECK(dynamic.thread_env.at("OMP_NUM_THREADS") == "4");
  for (const std::string& n : dynamic.notes) CHECK(n.find("steady_malloc") == std::string::npos);

  PlanOptions off;
  off.thread_env = false;
  auto untouched = plan_emulation(make_device("pi", 4, 0.25, "4GiB"), host(2), off);
  CHECK(untouched.thread_env.empty());
  for (const std::string& n : untouched.notes) CHECK(n.find("OMP_NUM_THREADS") == std::string::npos);

  CHECK(untouched.thread_env.count("MALLOC_MMAP_THRESHOLD_") == 0);
  CHECK(thread_env_defaults(0, true).empty());
  CHECK(thread_env_defaults(1, false).size() == std::size(kThreadCountVariables));
}

TEST_CASE("a quota scale buys the work a throttled slice loses: more quota, capped, noted",
          "[plan]") {
  PlanOptions o;
  o.quota_scale = 1.25;
  const EmulationPlan one = plan_emulation(make_device("d", 1, 0.2, "512MiB"), host(2), o);
  CHECK(one.cpu_period_us == kDefaultCpuPeriodUs);
  CHECK(one.cpu_quota_us == 2500);  // 0.2 x 10 ms x 1.25
  CHECK(one.quota_scale == Approx(1.25));
  CHECK(one.keep_warm);  // still throttled: 0.25 of the CPU
  bool noted = false;
  for (const std::string& n : one.notes) {
    noted = noted || (n.find("quota scale 1.25") != std::string::npos &&
                      n.find("2500 us per 10000 us") != std::string::npos &&
                      n.find("2000 us") != std::string::npos);
  }
  CHECK(noted);
  // Unscaled, nothing changes and no note is added.
  const EmulationPlan plain = plan_emulation(make_device("d", 1, 0.2, "512MiB"), host(2));
  CHECK(plain.cpu_quota_us == 2000);
  CHECK(plain.quota_scale == 1.0);
  for (const std::string& n : plain.notes) CHECK(n.find("quota scale") == std::string::npos);

  // Capped at the CPUs' whole time: 2 x 0.9 x 1.25 = 2.25 CPUs on 2.
  const EmulationPlan capped = plan_emulation(make_device("d", 2, 0.9, "512MiB"), host(2), o);
  CHECK(capped.cpu_quota_us == 2 * capped.cpu_period_us);
  CHECK(capped.quota_scale == Approx(2.0 / 1.8));
  bool said = false;
  for (const std::string& n : capped.notes) said = said || n.find("capped") != std::string::npos;
  CHECK(said);

  // Per-core: each core group's quota.
  o.cores = CoreEmulation::per_core;
  const EmulationPlan cores = plan_emulation(make_device("d", 4, 0.2, "512MiB"), host(2), o);
  CHECK(cores.core_quota_us == 2500);
  CHECK(cores.cpu_quota_us == 4 * 2500);

  // Below 1, no lower than the kernel's 1 ms minimum.
  o.cores = CoreEmulation::pooled;
  o.quota_scale = 0.5;
  const EmulationPlan least = plan_emulation(make_device("d", 1, 0.1, "512MiB"), host(2), o);
  CHECK(least.cpu_quota_us == kMinCpuQuotaUs);
  CHECK(least.quota_scale == Approx(1.0));

  for (double bad : {0.1, 4.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    o.quota_scale = bad;
    CHECK_THROWS_WITH(plan_emulation(make_device("d", 1, 0.2, "512MiB"), host(2), o),
                      Catch::Contains("quota_scale") && Catch::Contains("0.5 to 4"));
  }
}

TEST_CASE("a run repeats the plan's notes that call for action in its warnings", "[plan]") {
  EmulationPlan plan;
  plan.notes = {"host drift not corrected: 1.03x, within the +-5% the probe cannot tell from its "
                "own noise",
                "host drift not corrected: the probe failed: ncnn is missing",
                "cpu period raised from 10000 us to 20000 us",
                "host CPU shared: the drift probe's inferences took 1.5x their CPU time",
                "probe scores spread widely on the device (vector 170%: ...)",
                "quota scale short: this host's own share ..."};
  plan.host_drift = 1.25;
  const std::vector<std::string> w = detail::plan_warnings(plan, make_device("one", 1, 0.5, "1GiB"));
  REQUIRE(w.size() == 5);
  CHECK(w[0] == plan.notes[1]);
  CHECK(w[1] == plan.notes[3]);
  CHECK(w[2] == plan.notes[4]);
  CHECK(w[3] == plan.notes[5]);
  CHECK(w[4].rfind("this host ran 1.25x slower than at its nn rating", 0) == 0);
  plan.notes.clear();
  plan.host_drift = 1.0;
  CHECK(detail::plan_warnings(plan, make_device("one", 1, 0.5, "1GiB")).empty());
}

TEST_CASE("a run's interval: the board's speed-up's spread only where it does not cancel",
          "[plan][interval]") {
  NnSpeed speed = nn_speed({{"a", 1}, {"b", 2}, {"c", 4}}, {{"a", 1}, {"b", 1}, {"c", 1}});
  EmulationPlan plan;
  plan.emulation_log_sd = 0.1;
  // Not projected: the speed's error and the emulation's.
  CHECK(device_interval(speed, plan)->projection_log_sd == 0);
  CHECK(device_interval(speed, plan)->emulation_log_sd == 0.1);
  CHECK(device_interval(speed, plan)->high == time_interval(speed, 0.9, 0.1)->high);
  ThreadsProjection p;
  p.threads = 4;
  p.speedup = 3;
  p.scaling.loo_log_sd = 0.2;
  plan.threads_projection = p;
  // A one-thread table projected to four: the board's speed-up's spread is added.
  CHECK(device_interval(speed, plan)->projection_log_sd == 0.2);
  CHECK(device_interval(speed, plan)->high == time_interval(speed, 0.9, 0.1, 0.2)->high);
  // A four-thread table (a runtime's, made one core's by the same speed-up) projected back to
  // four: the speed-up cancels, each model's own is in the speed's held-out errors already.
  speed.threads = 4;
  CHECK(device_interval(speed, plan)->projection_log_sd == 0.2);  // another factor: not it
  speed.one_core_factor = 3;
  CHECK(device_interval(speed, plan)->projection_log_sd == 0);
  CHECK(device_interval(speed, plan)->high == time_interval(speed, 0.9, 0.1)->high);
  // To other threads than the table's, or with the workload's own scaling: added.
  plan.threads_projection->threads = 2;
  CHECK(device_interval(speed, plan)->projection_log_sd == 0.2);
  plan.threads_projection->threads = 4;
  plan.threads_projection->workload_factor = 1.2;  // the board's speed-up times it
  plan.threads_projection->speedup = 3 * 1.2;
  CHECK(device_interval(speed, plan)->projection_log_sd == 0.2);
  // A speed-up of 1 projects nothing.
  plan.threads_projection->workload_factor = 1;
  plan.threads_projection->speedup = 1;
  speed.threads = 1;
  CHECK(device_interval(speed, plan)->projection_log_sd == 0);
  CHECK(device_interval(speed, plan, 0.5)->level == 0.5);
}
