// The thread census of projected runs (sampler/thread_census.hpp): how many of the workload's
// threads ran at once, from their CPU time. The arithmetic is pure; the reader runs on a fake
// tree of captured files; a real projected run is in test_projected.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "helpers.hpp"
#include "sampler/thread_census.hpp"

using namespace edgeprof::detail;
using edgeprof::test::FakeTree;
using edgeprof::test::fixture;

TEST_CASE("census windows: the threads in both readings, their CPU time and the busiest's",
          "[census]") {
  // Thread 10 used 30 ms, 11 used 10 ms; 12 was born and 9 ended between them: not counted.
  const ThreadTimes before{{9, 5'000'000}, {10, 100'000'000}, {11, 40'000'000}};
  const ThreadTimes after{{10, 130'000'000}, {11, 50'000'000}, {12, 7'000'000}};
  const CensusWindow w = census_window(before, after);
  CHECK(w.total_ns == 40'000'000);
  CHECK(w.busiest_ns == 30'000'000);
  // The effective number of threads: 40^2 / (30^2 + 10^2) = 1.6.
  CHECK(w.threads() == Approx(1.6));
  // A thread id reused by a younger thread (its time went down) counts nothing.
  CHECK(census_window({{10, 100}}, {{10, 40}}).total_ns == 0);
  CHECK(census_window({}, after).total_ns == 0);
}

TEST_CASE("threads at once: the effective number of busy threads, weighted by CPU time",
          "[census]") {
  // A window from each thread's CPU time in it.
  const auto window = [](std::vector<std::uint64_t> used) {
    ThreadTimes before, after;
    for (pid_t tid = 0; tid < static_cast<pid_t>(used.size()); ++tid) {
      before[tid] = 1000;
      after[tid] = 1000 + used[static_cast<size_t>(tid)];
    }
    return census_window(before, after);
  };
  CHECK_FALSE(threads_at_once({}));
  CHECK_FALSE(threads_at_once({window({0, 0})}));
  // One thread at a time: 1, whichever thread it was.
  CHECK(*threads_at_once({window({10, 0}), window({0, 20})}) == Approx(1.0));
  // Four equally busy threads: 4.
  CHECK(*threads_at_once({window({10, 10, 10, 10}), window({20, 20, 20, 20})}) == Approx(4.0));
  // Three threads the scheduler served unevenly within a window: still near three.
  CHECK(*threads_at_once({window({12, 8, 5})}) == Approx(625.0 / 233.0));
  // Weighted by CPU time: a busy window of three threads outweighs a quiet one of one.
  CHECK(*threads_at_once({window({30, 30, 30}), window({10})}) == Approx((90 * 3 + 10) / 100.0));
  // A worker with a helper thread beside it: 1.22.
  CHECK(*threads_at_once({window({90, 10})}) == Approx(100.0 * 100 / (8100 + 100)));
  // The warning starts at 1.5: a helper thread beside the worker does not raise it.
  CHECK(census_warning(1.2).empty());
  CHECK(census_warning(1.49).empty());
  const std::string w = census_warning(3.0);
  CHECK_THAT(w, Catch::Contains("about 3.0 of the workload's threads ran at once"));
  CHECK_THAT(w, Catch::Contains("torch.set_num_threads(1)"));
}

TEST_CASE("the census reads the slice's thread list and each thread's schedstat", "[census]") {
  FakeTree tree;
  // Three fields: the CPU time (ns), the time waiting to run, the slices run.
  const auto stat = [](std::uint64_t cpu_ns) {
    return std::to_string(cpu_ns) + " 3429115 2\n";
  };
  tree.file("/cg/tasks", "100\n101\n");
  tree.file("/proc/100/schedstat", stat(1'000'000));
  tree.file("/proc/101/schedstat", stat(2'000'000));
  ThreadCensus census(Fs(tree.root()), {"/cg/tasks"});
  census.read();
  CHECK_FALSE(census.threads_at_once());  // one reading: no window yet
  // 100 and 101 each used 20 ms; 102 appeared; 101's file went (it ended after the list).
  tree.file("/cg/tasks", "100\n101\n102\n");
  tree.file("/proc/100/schedstat", stat(21'000'000));
  tree.file("/proc/101/schedstat", stat(22'000'000));
  tree.file("/proc/102/schedstat", stat(5'000'000));
  census.read();
  REQUIRE(census.windows().size() == 1);
  CHECK(census.windows()[0].total_ns == 40'000'000);
  CHECK(*census.threads_at_once() == Approx(2.0));
  // 101 ended: 100 used 10 ms, 102 nothing more; a list that cannot be read is skipped.
  tree.file("/cg/tasks", "100\n102\n");
  tree.file("/proc/100/schedstat", stat(31'000'000));
  ThreadCensus with_gone(Fs(tree.root()), {"/cg/gone", "/cg/tasks"});
  census.read();
  // Windows of 2.0 (40 ms) and 1.0 (10 ms): (2 x 40 + 1 x 10) / 50.
  CHECK(*census.threads_at_once() == Approx(90.0 / 50.0));
  // A window without CPU time is not one; reset forgets them all.
  census.read();
  CHECK(census.windows().size() == 2);
  census.reset();
  CHECK(census.windows().empty());
  CHECK_FALSE(census.threads_at_once());
  with_gone.read();
  tree.file("/proc/100/schedstat", stat(41'000'000));
  with_gone.read();
  CHECK(*with_gone.threads_at_once() == Approx(1.0));
}

TEST_CASE("the census on captured schedstat files of a busy thread", "[census]") {
  // /proc/self/schedstat of a Python loop, read before and after 0.2 s of spinning (on a host
  // busy with a build: it ran 0.1 s of them).
  FakeTree tree;
  tree.file("/cg/cgroup.threads", "4242\n");
  tree.file("/proc/4242/schedstat", fixture("proc/schedstat"));
  ThreadCensus census(Fs(tree.root()), {"/cg/cgroup.threads"});
  census.read();
  tree.file("/proc/4242/schedstat", fixture("proc/schedstat.later"));
  census.read();
  REQUIRE(census.windows().size() == 1);
  CHECK(census.windows()[0].total_ns == 154451250 - 54137212);
  CHECK(*census.threads_at_once() == Approx(1.0));
}
