// Keep-warm (src/run/keep_warm.hpp): idle-priority threads that keep a throttled slice's CPUs busy.
// The lease tests need no cgroups; the [kernel] ones run real slices.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"
#include "run/keep_warm.hpp"

using namespace edgeprof;
using edgeprof::test::can_create_slices;
using edgeprof::test::eventually;
using edgeprof::test::workload;

namespace {

struct ThreadInfo {
  pid_t tid = 0;
  int policy = -1;
  std::vector<int> cpus;  // its affinity
};

// The threads of this process at SCHED_IDLE, with their affinity (/proc/self/task/*/stat:
// field 41 is the policy).
std::vector<ThreadInfo> idle_threads() {
  std::vector<ThreadInfo> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    // A thread that exits between the listing and the read fails the read with ESRCH
    // (libstdc++ throws from underflow): it is gone, which is what the callers wait for.
    std::string text;
    try {
      std::ifstream in(entry.path() / "stat");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    ThreadInfo t;
    t.tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
    for (int n = 3; fields >> field; ++n) {
      if (n == 41) t.policy = std::stoi(field);
    }
    if (t.policy != SCHED_IDLE) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(t.tid, sizeof set, &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) t.cpus.push_back(c);
      }
    }
    out.push_back(t);
  }
  return out;
}

// Whether this process has no SCHED_IDLE thread left, waiting for the last to go: a joined
// thread has run its last instruction, yet the kernel may list it in /proc/self/task until it
// has finished exiting (a while, under emulation in the cgroup v2 VM or on a loaded host).
bool idle_threads_gone() {
  return eventually([] { return idle_threads().empty(); });
}

// CPU time thread `tid` of this process has used, in nanoseconds: the first field of its
// schedstat, else utime + stime of its stat (in clock ticks); 0 when it is gone.
std::uint64_t thread_cpu_ns(pid_t tid) {
  const std::string dir = "/proc/self/task/" + std::to_string(tid);
  try {
    std::ifstream schedstat_file(dir + "/schedstat");
    std::uint64_t ns = 0;
    if (schedstat_file >> ns) return ns;
    std::ifstream stat_file(dir + "/stat");
    const std::string text((std::istreambuf_iterator<char>(stat_file)),
                           std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    std::uint64_t ticks = 0;
    for (int n = 3; fields >> field && n <= 15; ++n) {
      if (n == 14 || n == 15) ticks += std::stoull(field);
    }
    return ticks * (1000000000ull / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK)));
  } catch (const std::exception&) {
    return 0;
  }
}

// Waits until the slice's keep-warm thread (the only SCHED_IDLE thread) has run since now: an
// event whose time depends on what else wants its CPU. A thread at SCHED_IDLE still gets a
// little of a busy CPU, and all of an idle one.
bool keep_warm_thread_ran() {
  const auto threads = idle_threads();
  if (threads.size() != 1) return false;
  const pid_t tid = threads.front().tid;
  const std::uint64_t before = thread_cpu_ns(tid);
  return eventually([&] { return thread_cpu_ns(tid) > before; });
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int first_cpu() { return host_facts().cpus.front(); }

const Device& half_core() {
  static const Device d = make_device("half-core", 1, 0.5, "256MiB");
  return d;
}

}  // namespace

TEST_CASE("a lease runs one idle-priority thread pinned to each CPU, shared and then stopped",
          "[keep-warm]") {
  const int cpu = first_cpu();
  REQUIRE(detail::warm_threads() == 0);
  REQUIRE(idle_threads().empty());
  {
    const auto made = std::chrono::steady_clock::now();
    detail::WarmLease a({cpu});
    CHECK(a.error().empty());
    CHECK(a.cpus() == std::vector<int>{cpu});
    const auto threads = idle_threads();
    REQUIRE(threads.size() == 1);
    CHECK(threads.front().cpus == std::vector<int>{cpu});
    {
      // A second slice on the same CPU shares the thread rather than stacking another.
      detail::WarmLease b({cpu});
      CHECK(detail::warm_threads() == 1);
      CHECK(idle_threads().size() == 1);
    }
    CHECK(detail::warm_threads() == 1);  // still held by a
    // The thread takes the CPU while nothing else wants it: its CPU time grows. (How much it
    // gets beside other work is benchmarks/bench_fidelity.cpp's, part 4.)
    CHECK(eventually([&] { return a.cpu_seconds() > 0; }));
    // One thread: never more CPU than the time since the lease began.
    const double used = a.cpu_seconds();
    CHECK(used <= seconds_since(made));
    detail::WarmLease moved = std::move(a);
    CHECK(a.cpus().empty());  // NOLINT(bugprone-use-after-move): a moved-from lease is empty
    CHECK(a.cpu_seconds() == 0);
    CHECK(detail::warm_threads() == 1);
  }
  CHECK(detail::warm_threads() == 0);
  CHECK(idle_threads_gone());
}

TEST_CASE("a CPU this process may not use is left out with the reason, not thrown",
          "[keep-warm]") {
  detail::WarmLease lease({first_cpu(), CPU_SETSIZE - 1});
  CHECK(lease.cpus() == std::vector<int>{first_cpu()});
  CHECK_THAT(lease.error(), Catch::Contains("CPU " + std::to_string(CPU_SETSIZE - 1)) &&
                                Catch::Contains("errno"));
  lease.release();
  CHECK(detail::warm_threads() == 0);
}

TEST_CASE("a forked child has none of its parent's keep-warm threads and starts its own",
          "[keep-warm]") {
  detail::WarmLease lease({first_cpu()});
  REQUIRE(detail::warm_threads() == 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = detail::warm_threads() == 0 ? 0 : 1;
    {
      detail::WarmLease own({first_cpu()});
      if (!own.error().empty() || detail::warm_threads() != 1) code |= 2;
    }
    if (detail::warm_threads() != 0) code |= 4;
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(detail::warm_threads() == 1);
}

TEST_CASE("a throttled run keeps its CPUs warm while it runs, and no longer", "[kernel][keep-warm]") {
  REQUIRE_CGROUPS();
  Slice slice(half_core());
  REQUIRE(slice.plan().keep_warm);
  CHECK_THAT(slice.plan().notes.back(), Catch::Contains("kept busy while the workload runs"));
  // Nothing spins while the slice only exists.
  CHECK(idle_threads_gone());
  const auto spawned = std::chrono::steady_clock::now();
  Child child = slice.spawn(workload({"spin", "0.4"}));
  const auto during = idle_threads();
  REQUIRE(during.size() == 1);
  CHECK(during.front().cpus == slice.plan().cpus);
  // The thread runs while the workload waits for its next period, or after it exits (the lease
  // lasts until the wait below): how much of the CPU it gets beside the workload and the host's
  // other work is benchmarks/bench_fidelity.cpp's (part 4), so the test waits until it ran.
  const bool ran = keep_warm_thread_ran();
  const Result r = child.wait();
  REQUIRE(r.ok());
  CHECK(idle_threads_gone());
  CAPTURE(to_text(r));
  REQUIRE(ran);
  CHECK(r.keep_warm_cpu_s > 0);
  CHECK(r.keep_warm_cpu_s <= seconds_since(spawned));  // one thread, one CPU
  CHECK_THAT(to_text(r), Catch::Contains("keep-warm"));
  CHECK(result_from_json(to_json(r)).keep_warm_cpu_s == r.keep_warm_cpu_s);
  CHECK(result_from_json(to_json(r)).plan.keep_warm);
}

TEST_CASE("a fast slice is not kept warm, and gets its quota", "[kernel][keep-warm]") {
  REQUIRE_CGROUPS();
  // At speed 0.9 the slice waits 1 ms of each 10 ms period. The kernel reschedules an
  // unthrottled CPU at once only if it is idle; with a keep-warm thread there the workload
  // waited up to the next tick (4 ms at HZ=250): 0.64 of a CPU instead of 0.9. (That share is a
  // figure of the host's load: docs/keep-warm.md and benchmarks/bench_fidelity.cpp, part 4,
  // measure it. Here: no thread runs beside the workload, and the kernel holds the quota.)
  const Device fast = make_device("nine-tenths", 1, 0.9, "256MiB");
  SliceOptions options;
  options.plan.cpus = {first_cpu()};
  options.plan.cpu_period_us = 10000;
  Slice slice(fast, options);
  CHECK_FALSE(slice.plan().keep_warm);
  CHECK(slice.plan().capacity_cores() == Approx(0.9));
  const test::KernelBandwidth held = test::kernel_bandwidth(slice.paths());
  CHECK(held.quota_us == slice.plan().cpu_quota_us);
  CHECK(held.period_us == 10000u);
  REQUIRE(idle_threads_gone());
  SpawnOptions quiet;
  quiet.sample_interval = std::chrono::nanoseconds(0);
  Child child = slice.spawn(workload({"spin", "0.5"}), quiet);
  CHECK(idle_threads().empty());  // nothing kept warm while it runs
  const Result r = child.wait();
  REQUIRE(r.ok());
  CHECK_FALSE(r.plan.keep_warm);
  CHECK(r.keep_warm_cpu_s == 0);
}

TEST_CASE("keep-warm is off on request, and where nothing throttles", "[kernel][keep-warm]") {
  REQUIRE_CGROUPS();
  RunOptions off;
  off.slice.plan.keep_warm = false;
  const Result r = run(workload({"spin", "0.2"}), half_core(), off);
  REQUIRE(r.ok());
  CHECK_FALSE(r.plan.keep_warm);
  CHECK(r.keep_warm_cpu_s == 0);
  CHECK_THAT(to_text(r), !Catch::Contains("keep-warm"));
  const Result full = run(workload({"spin", "0.2"}), make_device("full", 1, 1.0, "256MiB"));
  REQUIRE(full.ok());
  CHECK_FALSE(full.plan.keep_warm);
  CHECK(full.keep_warm_cpu_s == 0);
}

TEST_CASE("keep-warm threads stop at a timeout, an interrupt and a Child never waited for",
          "[kernel][keep-warm]") {
  REQUIRE_CGROUPS();
  {
    Slice slice(half_core());
    Child child = slice.spawn(workload({"spin", "300"}));
    // Until the thread has run (an event: how soon depends on the load), then the timeout,
    // counted from the release, which has passed by then or passes soon after.
    const bool ran = keep_warm_thread_ran();
    const Result r = child.wait(std::chrono::milliseconds(300));
    CHECK(ran);
    CHECK(r.timed_out);
    CHECK(r.keep_warm_cpu_s > 0);
    CHECK(idle_threads_gone());
  }
  RunOptions interrupted;
  const auto start = std::chrono::steady_clock::now();
  interrupted.check = [&] {
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(200)) {
      throw std::runtime_error("interrupted by the test");
    }
  };
  CHECK_THROWS_WITH(run(workload({"spin", "30"}), half_core(), interrupted),
                    "interrupted by the test");
  CHECK(idle_threads_gone());
  {
    Slice slice(half_core());
    Child abandoned = slice.spawn(workload({"spin", "30"}));
    CHECK(idle_threads().size() == 1);
  }
  CHECK(idle_threads_gone());
  CHECK(detail::warm_threads() == 0);
}

TEST_CASE("concurrent slices on one CPU share its keep-warm thread", "[kernel][keep-warm]") {
  REQUIRE_CGROUPS();
  SliceOptions on_first;
  on_first.plan.cpus = {first_cpu()};
  Slice a(half_core(), on_first);
  Slice b(make_device("quarter", 1, 0.25, "256MiB"), on_first);
  Child ca = a.spawn(workload({"spin", "0.3"}));
  Child cb = b.spawn(workload({"spin", "0.3"}));
  CHECK(idle_threads().size() == 1);
  REQUIRE(ca.wait().ok());
  CHECK(idle_threads().size() == 1);  // b's run still holds it
  REQUIRE(cb.wait().ok());
  CHECK(idle_threads_gone());
}
