// The thread census of projected runs (sampler/thread_census.hpp): how many of the workload's
// threads were runnable at once. The arithmetic is pure; the reader runs on a fake tree of
// captured files; a real projected run is in test_projected.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "cgroup/files.hpp"
#include "helpers.hpp"
#include "sampler/thread_census.hpp"
#include "sys/parse.hpp"

using namespace edgeprof::detail;
using edgeprof::test::FakeTree;
using edgeprof::test::fixture;

TEST_CASE("a thread's state from its captured stat line", "[census][parse]") {
  // /proc/self/stat of cat while it read it (running), and of a sleeping process whose
  // command name holds ") (" (the state is after the last ')').
  CHECK(parse_stat_state(fixture("proc/stat.running")) == 'R');
  CHECK(parse_stat_state(fixture("proc/stat.sleeping")) == 'S');
  CHECK(parse_stat_state("12 (x) D 1 2") == 'D');
  CHECK(parse_stat_state("12 (x) t 1") == 't');
  CHECK_FALSE(parse_stat_state(""));
  CHECK_FALSE(parse_stat_state("12 (x"));
  CHECK_FALSE(parse_stat_state("12 (x) "));
  CHECK_FALSE(parse_stat_state("12 (x) RS 1"));
  CHECK_FALSE(parse_stat_state("12 (x) 1 2"));
}

TEST_CASE("threads at once: the mean runnable count over the readings that found one",
          "[census]") {
  CHECK_FALSE(threads_at_once(CensusCounts{}));
  CHECK(*threads_at_once({4, 4}) == Approx(1.0));   // one thread at a time
  CHECK(*threads_at_once({10, 30}) == Approx(3.0));  // three at once
  CHECK(*threads_at_once({4, 5}) == Approx(1.25));   // a helper beside the worker, now and then
  // The warning starts at 1.5.
  CHECK(census_warning(1.25).empty());
  CHECK(census_warning(1.49).empty());
  const std::string w = census_warning(3.0);
  CHECK_THAT(w, Catch::Contains("about 3.0 of the workload's threads were runnable at once"));
  CHECK_THAT(w, Catch::Contains("torch.set_num_threads(1)"));
}

TEST_CASE("the census reads the slice's thread list and each thread's state", "[census]") {
  FakeTree tree;
  const std::string running = fixture("proc/stat.running");
  const std::string sleeping = fixture("proc/stat.sleeping");
  const std::string tasks = join("/cg", files::v1::kTasks);  // v1's thread list
  tree.file(tasks, "100\n101\n102\n");
  tree.file("/proc/100/stat", running);
  tree.file("/proc/101/stat", running);
  tree.file("/proc/102/stat", sleeping);
  ThreadCensus census(Fs(tree.root()), {"/cg/gone", tasks});  // a list that cannot be read
  CHECK_FALSE(census.threads_at_once());
  census.read();
  CHECK(census.counts().readings == 1);
  CHECK(*census.threads_at_once() == Approx(2.0));
  // 101 ended after the list was read (no stat file): left out.
  tree.file(tasks, "100\n101\n102\n103\n");
  std::filesystem::remove(tree.root() + "/proc/101/stat");
  tree.file("/proc/103/stat", sleeping);
  census.read();
  CHECK(*census.threads_at_once() == Approx(1.5));  // (2 + 1) / 2
  // A reading with nothing runnable (the workload waited on I/O) is not one.
  tree.file("/proc/100/stat", sleeping);
  census.read();
  CHECK(census.counts().readings == 2);
  census.reset();
  CHECK_FALSE(census.threads_at_once());
}
