// Per-core emulation (CoreEmulation::per_core): the plan, the placement policy, and the kernel
// holding each thread to one device core.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include "cgroup/files.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "helpers.hpp"
#include "sys/parse.hpp"
#include "run/core_placer.hpp"

using namespace edgeprof;
using namespace edgeprof::test;
using edgeprof::detail::PlacedThread;
using edgeprof::detail::plan_moves;

namespace {

HostFacts cpus(int n) {
  HostFacts h;
  for (int i = 0; i < n; ++i) h.cpus.push_back(i);
  h.memory_bytes = 8ull << 30;
  return h;
}

PlanOptions per_core() {
  PlanOptions o;
  o.cores = CoreEmulation::per_core;
  return o;
}

// The cpu cgroup (v1's cpu hierarchy, v2's one) of each thread of `pid` but the main one:
// tid -> path.
std::map<pid_t, std::string> thread_cpu_groups(pid_t pid) {
  std::map<pid_t, std::string> out;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task_dir, ec)) {
    const pid_t tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
    if (tid == pid) continue;
    std::istringstream in(FakeTree::slurp(entry.path().string() + "/cgroup"));
    for (std::string line; std::getline(in, line);) {
      // "3:cpu:/path" (v1; "cpu,cpuacct" where mounted together)
      const auto first = line.find(':'), second = line.find(':', first + 1);
      const std::string controllers = line.substr(first + 1, second - first - 1);
      // v2's one hierarchy, unless a v1 cpu hierarchy says otherwise (hybrid hosts have both)
      if (line.rfind("0::", 0) == 0 && !out.count(tid)) out[tid] = line.substr(second + 1);
      std::istringstream names(controllers);
      for (std::string name; std::getline(names, name, ',');) {
        if (name == "cpu") {
          out[tid] = line.substr(second + 1);
          break;
        }
      }
    }
  }
  return out;
}

// The core groups' directories of a v1 slice: its cpu directory's core0 ...
std::vector<std::string> core_dirs(const Slice& slice) {
  std::vector<std::string> out;
  for (const std::string& dir : slice.paths()) {
    for (std::uint32_t k = 0; k < slice.plan().core_groups; ++k) {
      const std::string core = dir + "/" + detail::files::kCoreGroup + std::to_string(k);
      if (std::filesystem::exists(core)) out.push_back(core);
    }
  }
  return out;
}

std::uint64_t throttled_periods(const std::vector<std::string>& cores) {
  std::uint64_t n = 0;
  for (const std::string& core : cores) n += kernel_throttled_periods({core});
  return n;
}

}  // namespace

TEST_CASE("per-core: a quota per device core, no pooled-quota notes", "[plan][per-core]") {
  const Device pi = make_device("pi", 4, 0.25, "4GiB");
  const EmulationPlan pooled = plan_emulation(pi, cpus(2));
  CHECK(pooled.core_groups == 0);
  CHECK(pooled.core_quota_us == 0);
  CHECK(has_note(pooled, "a single thread at up to"));

  const EmulationPlan plan = plan_emulation(pi, cpus(2), per_core());
  CHECK(plan.core_groups == 4);
  CHECK(plan.cpu_period_us == kDefaultCpuPeriodUs);  // no lengthening for a shared pool
  CHECK(plan.core_quota_us == 2500);
  CHECK(plan.cpu_quota_us == 10000);
  CHECK(plan.capacity_cores() == Approx(1.0));
  CHECK(has_note(plan, "per-core: each of the device's 4 cores is a cgroup of its own"));
  CHECK(has_note(plan, "at most 2 of them run at one instant"));
  CHECK_FALSE(has_note(plan, "a single thread at up to"));
  CHECK_FALSE(has_note(plan, "spin-waits"));
  CHECK(plan.thread_env.at("OMP_WAIT_POLICY") == "PASSIVE");

  // A core slower than 1 ms per period: the period is lengthened for the core's quota.
  const EmulationPlan slow = plan_emulation(make_device("slow", 2, 0.05, "1GiB"), cpus(2), per_core());
  CHECK(slow.cpu_period_us == 20000);
  CHECK(slow.core_quota_us == 1000);
  CHECK(has_note(slow, "per-core quota reaches the kernel's 1 ms minimum"));

  // Nothing to split: one core, or cores as fast as the host's (no quota binds a thread).
  CHECK(plan_emulation(make_device("one", 1, 0.5, "1GiB"), cpus(2), per_core()).core_groups == 0);
  CHECK(plan_emulation(make_device("fast", 2, 1.0, "1GiB"), cpus(2), per_core()).core_groups == 0);
  // Two cores of half a CPU on two CPUs: the pool would be unlimited, the cores are not.
  const EmulationPlan halves = plan_emulation(make_device("h", 4, 0.5, "1GiB"), cpus(2), per_core());
  CHECK(halves.core_groups == 4);
  CHECK(halves.core_quota_us == 5000);
  CHECK(halves.thread_env.count("OMP_WAIT_POLICY") == 1);

  CHECK(core_emulation_from_string("per-core") == CoreEmulation::per_core);
  CHECK(core_emulation_from_string("pooled") == CoreEmulation::pooled);
  CHECK(std::string(to_string(CoreEmulation::per_core)) == "per-core");
  CHECK_THROWS_WITH(core_emulation_from_string("percore"),
                    Catch::StartsWith("core_emulation = 'percore'") &&
                        Catch::Contains("per-core"));  // not "cores", another option
}

TEST_CASE("placement: a pool started at once spreads, busy threads get cores of their own",
          "[per-core]") {
  using Moves = std::vector<std::pair<pid_t, int>>;
  // A process and the four threads it just made, all in core 0 and seen for the first time.
  std::vector<PlacedThread> fresh;
  for (pid_t tid = 100; tid <= 104; ++tid) fresh.push_back({tid, 0, true, false});
  CHECK(plan_moves(fresh, 4) == Moves{{101, 1}, {102, 2}, {103, 3}});

  // A busy main thread in core 0 and an idle helper in core 1: the new thread goes to a core
  // with neither busy threads nor others.
  std::vector<PlacedThread> some = {{10, 0, false, true}, {11, 1, false, false}, {12, 0, true, false}};
  CHECK(plan_moves(some, 3) == Moves{{12, 2}});

  // Three busy threads in one core, one idle core: the newest busy ones move until even.
  std::vector<PlacedThread> crowded = {{20, 0, false, true}, {21, 0, false, true},
                                       {22, 0, false, true}, {23, 1, false, true}};
  CHECK(plan_moves(crowded, 3) == Moves{{22, 2}});
  // More busy threads than cores: they differ by at most one per core, nothing moves.
  std::vector<PlacedThread> many = {{30, 0, false, true}, {31, 0, false, true},
                                    {32, 1, false, true}};
  CHECK(plan_moves(many, 2).empty());
  // Idle threads stay put, whatever the counts.
  std::vector<PlacedThread> idle = {{40, 0, false, false}, {41, 0, false, false}};
  CHECK(plan_moves(idle, 2).empty());
  // A thread in a group the placer does not know is placed like a new one.
  CHECK(plan_moves({{50, 7, false, true}}, 2) == Moves{{50, 0}});
  CHECK(plan_moves(fresh, 0).empty());
}

TEST_CASE("core groups' cpu.stat figures are summed, a field only where every group has it",
          "[per-core][parse]") {
  detail::CpuStat a, b;
  a.periods = 10;
  a.throttled_periods = 4;
  a.throttled_ns = 1000;
  b.periods = 5;
  b.throttled_periods = 1;
  const detail::CpuStat stats[] = {a, b};
  const detail::CpuStat sum = detail::sum_cpu_stats(stats, 2);
  CHECK(sum.periods == 15u);
  CHECK(sum.throttled_periods == 5u);
  CHECK_FALSE(sum.throttled_ns);
  CHECK_FALSE(detail::sum_cpu_stats(stats, 0).periods);
}

TEST_CASE("per-core: one busy thread gets one device core, not the pool", "[kernel][per-core]") {
  REQUIRE_CGROUPS();
  const bool sampled = GENERATE(true, false);
  SliceOptions options;
  options.plan.cores = CoreEmulation::per_core;
  Slice slice(make_device("quad", 4, 0.25, "256MiB"), options);
  REQUIRE(slice.plan().core_groups == 4);
  CHECK(slice.unapplied().empty());
  const std::vector<std::string> cores = core_dirs(slice);
  REQUIRE(cores.size() == 4);
  for (const std::string& core : cores) {
    const KernelBandwidth held = kernel_bandwidth({core});
    CHECK(held.quota_us == slice.plan().core_quota_us);
    CHECK(held.period_us == slice.plan().cpu_period_us);
  }
  // Read back as one: the four cores' quotas summed.
  CHECK(slice.cpu_limit() ==
        CpuLimit{slice.plan().core_quota_us * 4, slice.plan().cpu_period_us});
  // The slice's own cpu group has no quota of its own: the cores' groups hold the capacity.
  for (const std::string& dir : slice.paths()) {
    if (std::filesystem::exists(dir + "/" + detail::files::v1::kCpuCfsQuotaUs) ||
        std::filesystem::exists(dir + "/" + detail::files::v2::kCpuMax)) {
      CHECK(!kernel_bandwidth({dir}).quota_us);
    }
    // v2: the core groups are threaded cgroups of the slice's threaded domain.
    const std::string type_file = dir + "/" + detail::files::v2::kType;
    if (std::filesystem::exists(type_file)) {
      CHECK(FakeTree::slurp(type_file) == "domain threaded\n");
      const std::string core0 = dir + "/" + detail::files::kCoreGroup + "0";
      CHECK(FakeTree::slurp(core0 + "/" + detail::files::v2::kType) == "threaded\n");
    }
  }

  FakeTree tmp;
  SpawnOptions spawn;
  if (!sampled) spawn.sample_interval = std::chrono::nanoseconds(0);
  Child child = slice.spawn(workload({"spin-until", tmp.root() + "/stop", "1"}), spawn);
  const bool throttled = eventually([&] { return throttled_periods(cores) >= 40; });
  tmp.file("/stop", "");
  const Result r = std::move(child).wait();
  REQUIRE(throttled);
  REQUIRE(r.ok());
  // A quarter of a host core, the device core's, where the pool would allow a whole one. The
  // kernel holds the group there; load only lowers it (check_held_to's bound, in test_kernel).
  if (std::getenv("EDGEPROF_IN_VM") == nullptr) {
    const double used = (r.cpu_user_s + r.cpu_system_s) / r.wall_time_s;
    CAPTURE(used);
    CHECK(used <= 0.25 * 1.25);
  }
  // The result's throttling is the core groups', summed, sampled or not.
  CHECK(r.throttled_periods >= 40);
  CHECK(r.plan.core_groups == 4);
  CHECK_THAT(to_text(r), Catch::Contains("4 core groups of 2500 us / 10000 us"));
}

TEST_CASE("a pooled quota of several cores is said in the result's warnings; a core's is not",
          "[kernel][per-core]") {
  REQUIRE_CGROUPS();
  const auto warned = [](const Result& r) {
    for (const std::string& w : r.warnings) {
      if (w.find("core emulation pooled") != std::string::npos) return true;
    }
    return false;
  };
  RunOptions pooled;  // the default core emulation
  pooled.slice.plan.measure_nn = false;
  const Result r = run(program("/bin/true"), make_device("quad", 4, 0.25, "256MiB"), pooled);
  REQUIRE(r.ok());
  CHECK(warned(r));
  CHECK_THAT(to_text(r), Catch::Contains("a thread runs faster than a device core"));
  // A device without published multi-thread times is not told to use projected.
  CHECK_THAT(to_text(r), !Catch::Contains("'projected'"));
  CHECK_THAT(to_text(r), Catch::Contains("core emulation 'per-core' keeps a thread"));
  RunOptions per_core = pooled;
  per_core.slice.plan.cores = CoreEmulation::per_core;
  const Result by_core =
      run(program("/bin/true"), make_device("quad", 4, 0.25, "256MiB"), per_core);
  REQUIRE(by_core.plan.core_groups == 4);  // not fallen back to a pooled quota
  CHECK_FALSE(warned(by_core));
  // One core, and cores at a whole host core each (no thread can outrun one): nothing to say.
  CHECK_FALSE(warned(run(program("/bin/true"), make_device("one", 1, 0.25, "256MiB"), pooled)));
  CHECK_FALSE(warned(run(program("/bin/true"), make_device("pair", 2, 1.0, "256MiB"), pooled)));
}

TEST_CASE("per-core: four busy threads made after the start get a core each",
          "[kernel][per-core]") {
  REQUIRE_CGROUPS();
  SliceOptions options;
  options.plan.cores = CoreEmulation::per_core;
  Slice slice(make_device("quad", 4, 0.25, "256MiB"), options);
  FakeTree tmp;
  Child child = slice.spawn(workload({"spin-until", tmp.root() + "/stop", "4"}));
  std::map<pid_t, std::string> groups;
  const bool spread = eventually([&] {
    groups = thread_cpu_groups(child.pid());
    std::set<std::string> distinct;
    for (const auto& [tid, group] : groups) distinct.insert(group);
    return groups.size() == 4 && distinct.size() == 4;
  });
  tmp.file("/stop", "");
  const Result r = std::move(child).wait();
  REQUIRE(spread);
  for (const auto& [tid, group] : groups) {
    CHECK(group.find("/core") != std::string::npos);
  }
  CHECK(r.ok());
  CHECK(r.thread_moves >= 3);
}

namespace {
// A four-core device whose published times say four threads ran twice as fast as one: S = 2,
// contention (4 / 2 - 1) / 3 = 1/3, so four busy cores each run at half a lone core's speed.
Device scaled_quad() {
  Device d = make_device("scaled-quad", 4, 0.25, "256MiB");
  d.speed_kind = "nn";
  d.nn_ms = {{"a", 10}, {"b", 20}, {"c", 40}, {"d", 80}};
  d.nn_threads_ms[4] = {{"a", 5}, {"b", 10}, {"c", 20}, {"d", 80}};
  return d;
}
}  // namespace

TEST_CASE("the board's scaling: median speed-up, contention, held out", "[per-core][scaling]") {
  const auto s = core_scaling(scaled_quad());
  REQUIRE(s);
  CHECK(s->threads == 4);
  CHECK(s->graphs == 4);
  CHECK(s->speedup == Approx(2.0));  // speed-ups 2, 2, 2, 1: median 2
  CHECK(s->contention == Approx(1.0 / 3));
  CHECK(s->efficiency(1) == 1.0);
  CHECK(s->efficiency(4) == Approx(0.5));
  CHECK(s->efficiency(2) == Approx(0.75));
  // Without graph "a": speed-ups 2, 2, 1, median 2 still; without two, too few graphs.
  CHECK(core_scaling(scaled_quad(), "a")->graphs == 3);
  Device few = scaled_quad();
  few.nn_threads_ms[4].erase("a");
  few.nn_threads_ms[4].erase("b");
  CHECK_FALSE(core_scaling(few));
  // A board that scaled linearly or better has no contention.
  Device linear = scaled_quad();
  for (auto& [graph, ms] : linear.nn_threads_ms[4]) ms = linear.nn_ms[graph] / 4.5;
  CHECK(core_scaling(linear)->contention == 0.0);
  // A table of more threads than the device has cores is not its scaling.
  Device two = scaled_quad();
  two.cores = 2;
  CHECK_FALSE(core_scaling(two));
  CHECK_FALSE(core_scaling(make_device("plain", 4, 0.25, "1GiB")));
}

TEST_CASE("per-core scaling: each core's quota for the number of busy threads",
          "[plan][per-core][scaling]") {
  CHECK(plan_emulation(scaled_quad(), cpus(2), per_core()).core_quota_by_busy.empty());  // off
  PlanOptions scaling = per_core();
  scaling.core_scaling = true;
  const EmulationPlan plan = plan_emulation(scaled_quad(), cpus(2), scaling);
  CHECK(plan.core_quota_us == 2500);
  CHECK(plan.core_quota_by_busy == std::vector<std::uint64_t>{2500, 1875, 1500, 1250});
  CHECK(has_note(plan, "per-core scaling: the board sped up 2.00x from 1 thread to 4"));
  // Not for a speed that is not the nn speed, nor pooled.
  Device integer = scaled_quad();
  integer.speed_kind = "";
  const EmulationPlan integer_plan = plan_emulation(integer, cpus(2), scaling);
  CHECK(integer_plan.core_quota_by_busy.empty());
  // Said where asked for and not done (it was silently the plain plan).
  CHECK(has_note(integer_plan, "core_scaling (--core-scaling) not applied: it needs the device "
                               "at its nn speed"));
  CHECK_FALSE(has_note(plan, "not applied"));
  PlanOptions pooled;
  pooled.cores = CoreEmulation::pooled;
  pooled.core_scaling = true;
  const EmulationPlan pooled_plan = plan_emulation(scaled_quad(), cpus(2), pooled);
  CHECK(pooled_plan.core_emulation() == CoreEmulation::pooled);
  CHECK(pooled_plan.core_quota_by_busy.empty());
  CHECK(has_note(pooled_plan, "core_scaling (--core-scaling) not applied: it is a way of "
                              "per-core emulation"));
  CHECK(has_note(plan_emulation(make_device("plain", 4, 0.25, "1GiB"), cpus(2), scaling),
                 "not applied: it needs the device at its nn speed"));
  // The period is lengthened for the smallest quota (all busy) to reach the kernel's 1 ms.
  Device slow = scaled_quad();
  slow.core_speed = 0.1;
  const EmulationPlan p = plan_emulation(slow, cpus(2), scaling);
  CHECK(p.cpu_period_us == 20000);
  CHECK(p.core_quota_by_busy.back() == 1000);
}

TEST_CASE("per-core scaling: four busy threads get the board's four-thread share",
          "[kernel][per-core][scaling]") {
  REQUIRE_CGROUPS();
  SliceOptions options;
  options.plan.cores = CoreEmulation::per_core;
  options.plan.core_scaling = true;
  options.plan.measure_nn = false;
  // The quotas below are the device's: not scaled by this host's own share (quota_share.cpp).
  options.plan.quota_scale = 1.0;
  Slice slice(scaled_quad(), options);
  REQUIRE(slice.plan().core_quota_by_busy.size() == 4);
  const std::vector<std::string> cores = core_dirs(slice);
  REQUIRE(cores.size() == 4);
  FakeTree tmp;
  Child child = slice.spawn(workload({"spin-until", tmp.root() + "/stop", "4"}));
  // Once the four are seen busy, every group holds the four-thread quota.
  const bool scaled = eventually([&] {
    for (const std::string& core : cores) {
      if (kernel_bandwidth({core}).quota_us != 1250u) return false;
    }
    return true;
  });
  tmp.file("/stop", "");
  const Result r = std::move(child).wait();
  REQUIRE(scaled);
  CHECK(r.ok());
  CHECK(r.core_quota_changes >= 1);
  CHECK_THAT(to_text(r), Catch::Contains("quota set for the busy threads"));
  // The next workload starts at a lone core's quota.
  for (const std::string& core : cores) CHECK(kernel_bandwidth({core}).quota_us == 2500u);
}
