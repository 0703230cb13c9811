// The sampler's sources and tick, on fake cgroup trees made of real captures.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <set>
#include <thread>

#include "edgeprof/result.hpp"
#include "cgroup/files.hpp"
#include "helpers.hpp"
#include "sys/parse.hpp"
#include "sampler/sources.hpp"
#include "analysis/metric_table.hpp"

using namespace edgeprof::detail;
using edgeprof::test::FakeTree;
using edgeprof::test::fixture;

namespace {

std::uint64_t value(const Columns& c, Metric m, size_t row = 0) {
  return c.values[static_cast<int>(m)].at(row);
}
bool complete(const Columns& c, Metric m) { return c.complete.test(static_cast<size_t>(m)); }

// The captures are files in tests/fixtures/VERSION, most named as the kernel names them, so the
// table's names find them here; fixture() reads one by the name the capture gave it (blkio's and
// the /proc ones differ from the kernel's).
void copy_fixtures(const FakeTree& tree, const std::string& dir, const char* version,
                   std::initializer_list<const char*> names) {
  for (const char* name : names) {
    tree.file(dir + "/" + name, fixture(std::string(version) + "/" + name));
  }
}

// A v2 slice with every file the sampler reads, from the captures.
void whole_v2_slice(const FakeTree& tree, const std::string& dir) {
  copy_fixtures(tree, dir, "v2",
                {files::v2::kCpuStat, files::v2::kMemoryCurrent, files::v2::kMemoryPeak,
                 files::v2::kMemoryStat, files::v2::kMemoryEvents, files::v2::kIoStat,
                 files::v2::kCpuPressure, files::v2::kMemoryPressure, files::v2::kIoPressure,
                 files::v2::kPidsCurrent});
  tree.file(join(dir, files::v2::kMemorySwapCurrent), "0\n");
}

// A v2 slice with two sources: cpu.stat (usage 100 us) and memory.current (4096).
Sources two_sources(const FakeTree& tree, const std::string& dir) {
  tree.file(join(dir, files::v2::kCpuStat), "usage_usec 100\nuser_usec 60\nsystem_usec 40\n");
  tree.file(join(dir, files::v2::kMemoryCurrent), "4096\n");
  return Sources::v2(Fs(tree.root()), dir);
}

}  // namespace

TEST_CASE("v2: one tick records every source of a slice", "[sampler]") {
  FakeTree tree;
  const std::string dir = "/sys/fs/cgroup/runner/edgeprof-1-2-3";
  whole_v2_slice(tree, dir);
  Sources sources = Sources::v2(Fs(tree.root()), dir);
  Columns columns;
  columns.reserve(4);
  sources.tick(1000, columns);

  REQUIRE(columns.size() == 1);
  CHECK(columns.t_ns[0] == 1000);
  const std::string stat = fixture("v2/cpu.stat");  // a capture, by its name
  CHECK(value(columns, Metric::cpu_usage_ns) == *find_key(stat, "usage_usec") * 1000);
  CHECK(value(columns, Metric::cpu_throttled_periods) == *find_key(stat, "nr_throttled"));
  CHECK(value(columns, Metric::memory_peak_bytes) == *parse_u64(fixture("v2/memory.peak")));
  CHECK(value(columns, Metric::memory_anon_bytes) == 21012480u);
  CHECK(value(columns, Metric::io_write_bytes) == 8388608u);
  CHECK(value(columns, Metric::pressure_cpu_some_us) == 728264u);
  CHECK(value(columns, Metric::tasks) == *parse_u64(fixture("v2/pids.current")));
  // Every metric of a cgroup is there; network counters only come with a namespace of its own.
  CHECK(columns.complete == columns.available);
  CHECK(columns.available.count() == static_cast<size_t>(edgeprof::kMetricCount) - 4);
  CHECK_FALSE(columns.has(Metric::net_rx_bytes));
  CHECK(columns.scheduled == std::vector<std::uint8_t>{1});
  for (const SourceStatus& s : sources.status()) {
    CAPTURE(s.name);
    CHECK(s.available);
    CHECK_FALSE(s.failed);
    CHECK_FALSE(s.host_wide);
  }
}

TEST_CASE("a source failing mid-run is disabled and marked, and the others go on",
          "[sampler]") {
  FakeTree tree;
  const std::string dir = "/cg";
  Sources sources = two_sources(tree, dir);
  static std::vector<std::string> logged;
  logged.clear();
  sources.set_logger([](const std::string& message) { logged.push_back(message); });
  Columns columns;
  sources.tick(1, columns);
  CHECK(value(columns, Metric::cpu_usage_ns) == 100000u);
  // Without the cpu controller cpu.stat has no throttling fields: incomplete, not zero.
  CHECK_FALSE(complete(columns, Metric::cpu_throttled_periods));
  CHECK(complete(columns, Metric::cpu_usage_ns));
  // Files that do not exist are not sources at all.
  CHECK_FALSE(columns.complete.test(static_cast<size_t>(Metric::tasks)));
  CHECK_FALSE(sources.available().test(static_cast<size_t>(Metric::tasks)));

  tree.file(join(dir, files::v2::kCpuStat), "garbage\n");
  tree.file(join(dir, files::v2::kMemoryCurrent), "8192\n");
  sources.tick(2, columns);
  REQUIRE(columns.size() == 2);
  CHECK_FALSE(complete(columns, Metric::cpu_usage_ns));
  CHECK(value(columns, Metric::cpu_usage_ns, 1) == 100000u);  // carried, and marked incomplete
  CHECK(value(columns, Metric::memory_current_bytes, 1) == 8192u);
  CHECK(complete(columns, Metric::memory_current_bytes));
  bool cpu_failed = false;
  for (const SourceStatus& s : sources.status()) {
    if (s.name == files::v2::kCpuStat) {
      cpu_failed = s.failed;
      CHECK(s.error == std::string(files::v2::kCpuStat) + " could not be parsed");
    }
  }
  CHECK(cpu_failed);
  tree.file(join(dir, files::v2::kCpuStat), "usage_usec 500\nuser_usec 300\nsystem_usec 200\n");
  sources.tick(3, columns);
  CHECK(value(columns, Metric::cpu_usage_ns, 2) == 100000u);  // disabled for the rest of the run
  // Logged once, naming the source, whatever the number of ticks after.
  REQUIRE(logged.size() == 1);
  CHECK(logged[0].find(std::string("sampling stopped for ") + files::v2::kCpuStat) !=
        std::string::npos);
}

TEST_CASE("sources kept for a slice's next run start fresh, and are not kept after a failure",
          "[sampler]") {
  FakeTree tree;
  const std::string dir = "/cg";
  Sources sources = two_sources(tree, dir);
  sources.set_logger([](const std::string&) {});
  Columns first;
  sources.tick(1, first);
  CHECK(sources.reusable());

  sources.rewind();
  tree.file(join(dir, files::v2::kCpuStat), "usage_usec 300\nuser_usec 160\nsystem_usec 140\n");
  tree.file(join(dir, files::v2::kMemoryCurrent), "not a number\n");
  Columns next;
  sources.tick(1, next);
  CHECK(value(next, Metric::cpu_usage_ns) == 300000u);        // read through the kept file
  CHECK(value(next, Metric::memory_current_bytes) == 0u);     // not the last run's 4096
  CHECK_FALSE(complete(next, Metric::memory_current_bytes));  // and marked so
  CHECK_FALSE(sources.reusable());  // memory.current failed: the next run opens its own

  Sources with_network = Sources::v2(Fs(tree.root()), dir);
  with_network.add_network(StatFile());
  CHECK_FALSE(with_network.reusable());  // one run's network namespace
}

TEST_CASE("a snapshot reads the counters' sources alone, at any rate, apart from the series",
          "[sampler]") {
  // An unsampled run's first and last readings (slice.cpp): the end-of-run counters have this
  // one reader.
  FakeTree tree;
  const std::string dir = "/cg";
  whole_v2_slice(tree, dir);
  tree.file(join(dir, files::v2::kMemoryEvents), "oom 2\noom_kill 2\n");
  Sources sources = Sources::v2(Fs(tree.root()), dir);
  static std::vector<std::string> logged;
  logged.clear();
  sources.set_logger([](const std::string& message) { logged.push_back(message); });
  sources.set_slow_every(10, 1'000'000);  // memory.events is a slow source: read all the same
  Columns columns;
  sources.tick(1, columns);
  // A source that gives no counter is not read: memory.stat's garbage fails nothing.
  tree.file(join(dir, files::v2::kMemoryStat), "garbage\n");
  tree.file(join(dir, files::v2::kCpuStat),
            "usage_usec 900\nuser_usec 700\nsystem_usec 200\nnr_periods 30\n"
            "nr_throttled 20\nthrottled_usec 5000\n");
  const Snapshot snap = sources.snapshot(kCounterMetrics);
  CHECK(snap.read == kCounterMetrics);
  CHECK(snap[Metric::cpu_user_ns] == 700000u);
  CHECK(snap[Metric::cpu_system_ns] == 200000u);
  CHECK(snap[Metric::cpu_periods] == 30u);
  CHECK(snap[Metric::cpu_throttled_periods] == 20u);
  CHECK(snap[Metric::cpu_throttled_ns] == 5000000u);
  CHECK(snap[Metric::memory_oom_kills] == 2u);
  CHECK_FALSE(snap.has(Metric::memory_current_bytes));  // not asked for
  CHECK(sources.reusable());
  CHECK(logged.empty());
  // The series is left as it was: the snapshot wrote no row.
  CHECK(columns.size() == 1);

  // A counter's source that fails is unread, disabled as in a tick, and stays so.
  tree.file(join(dir, files::v2::kCpuStat), "garbage\n");
  const Snapshot failed = sources.snapshot(kCounterMetrics);
  CHECK_FALSE(failed.has(Metric::cpu_user_ns));
  CHECK_FALSE(failed.has(Metric::cpu_throttled_periods));
  CHECK(failed.has(Metric::memory_oom_kills));
  CHECK_FALSE(sources.reusable());
  CHECK(logged.size() == 1);
  tree.file(join(dir, files::v2::kCpuStat), "usage_usec 1\nuser_usec 1\nsystem_usec 0\n");
  CHECK_FALSE(sources.snapshot(kCounterMetrics).has(Metric::cpu_user_ns));

  // Opened for the counters alone: cpu.stat and memory.events, nothing else.
  tree.file(join(dir, files::v2::kCpuStat),
            "usage_usec 9\nuser_usec 5\nsystem_usec 4\nnr_periods 3\nnr_throttled 1\n"
            "throttled_usec 7\n");
  Sources counters = Sources::v2(Fs(tree.root()), dir, -1, {}, kCounterMetrics);
  std::set<std::string> names;
  for (const SourceStatus& s : counters.status()) names.insert(s.name);
  CHECK(names == std::set<std::string>{files::v2::kCpuStat, files::v2::kMemoryEvents});
  const Snapshot snap2 = counters.snapshot(kCounterMetrics);
  CHECK(snap2.read == kCounterMetrics);
  CHECK(snap2[Metric::cpu_user_ns] == 5000u);
  CHECK(snap2[Metric::memory_oom_kills] == 2u);
}

TEST_CASE("v1: hierarchies, the exact CPU split and host-wide pressure", "[sampler]") {
  FakeTree tree;
  const std::map<std::string, std::string> dirs = {
      {"cpu", "/sys/fs/cgroup/cpu/s"},
      {"cpuacct", "/sys/fs/cgroup/cpuacct/s"},
      {"memory", "/sys/fs/cgroup/memory/s"},
      {"blkio", "/sys/fs/cgroup/blkio/s"},
  };  // no pids hierarchy: tasks is unavailable, not zero
  copy_fixtures(tree, dirs.at("cpu"), "v1", {files::v1::kCpuStat});
  copy_fixtures(tree, dirs.at("cpuacct"), "v1",
                {files::v1::kCpuacctUsage, files::v1::kCpuacctStat});
  copy_fixtures(tree, dirs.at("memory"), "v1",
                {files::v1::kMemoryUsageInBytes, files::v1::kMemoryMaxUsageInBytes,
                 files::v1::kMemoryStat, files::v1::kMemoryOomControl});
  tree.file(join(dirs.at("blkio"), files::v1::kBlkioThrottleIoServiceBytesRecursive),
            fixture("v1/blkio.throttle.io_service_bytes"));
  tree.file(join(dirs.at("blkio"), files::v1::kBlkioThrottleIoServicedRecursive),
            fixture("v1/blkio.throttle.io_serviced"));
  // Host-wide PSI is a host file: its names are in src/sys/fs.hpp's table.
  tree.file(files::kProcPressureMemory, fixture("v1/proc_pressure_memory"));
  Sources sources = Sources::v1(Fs(tree.root()), dirs);
  Columns columns;
  sources.tick(5, columns);
  const auto usage = *parse_u64(fixture("v1/cpuacct.usage"));
  CHECK(value(columns, Metric::cpu_usage_ns) == usage);
  CHECK(value(columns, Metric::cpu_user_ns) + value(columns, Metric::cpu_system_ns) == usage);
  CHECK(value(columns, Metric::memory_oom_kills) == 1u);
  CHECK(value(columns, Metric::io_write_bytes) == 4194304u);
  CHECK(value(columns, Metric::pressure_memory_full_us) == 16156u);
  CHECK_FALSE(sources.available().test(static_cast<size_t>(Metric::tasks)));
  bool host_wide = false;
  for (const SourceStatus& s : sources.status()) {
    if (s.name == files::kProcPressureMemory) host_wide = s.host_wide && s.available;
  }
  CHECK(host_wide);

  // Opened for the end-of-run counters alone (an unsampled run): their three sources, four
  // files, and none of the others, not even listed as missing (pids).
  Sources counters = Sources::v1(Fs(tree.root()), dirs, {}, kCounterMetrics);
  std::set<std::string> names;
  for (const SourceStatus& s : counters.status()) names.insert(s.name);
  const std::string cpu_time =
      std::string(files::v1::kCpuacctUsage) + "+" + files::v1::kCpuacctStat;
  CHECK(names ==
        std::set<std::string>{cpu_time, files::v1::kCpuStat, files::v1::kMemoryOomControl});
  const Snapshot snap = counters.snapshot(kCounterMetrics);
  CHECK(snap.read == kCounterMetrics);
  CHECK(snap[Metric::cpu_user_ns] + snap[Metric::cpu_system_ns] == usage);
  CHECK(snap[Metric::memory_oom_kills] == 1u);
}

#include <chrono>
#include <thread>
#include <unistd.h>

#include "edgeprof/edgeprof.hpp"

TEST_CASE("a kernel older than 4.13 counts no OOM kills: the count is missing, nothing fails",
          "[sampler]") {
  FakeTree tree;
  const std::map<std::string, std::string> dirs = {{"memory", "/sys/fs/cgroup/memory/s"}};
  tree.file(join(dirs.at("memory"), files::v1::kMemoryOomControl),
            "oom_kill_disable 0\nunder_oom 0\n");  // Linux 4.12's keys
  Sources sources = Sources::v1(Fs(tree.root()), dirs);
  Columns columns;
  sources.tick(1, columns);
  CHECK_FALSE(complete(columns, Metric::memory_oom_kills));
  int found = 0;
  for (const SourceStatus& s : sources.status()) {
    if (s.name != files::v1::kMemoryOomControl) continue;
    ++found;
    CHECK(s.available);
    CHECK_FALSE(s.failed);
  }
  CHECK(found == 1);
  CHECK(sources.reusable());  // the next run keeps these files
  CHECK_FALSE(sources.snapshot(kCounterMetrics).has(Metric::memory_oom_kills));
  // A later kernel's file gives it.
  tree.file(join(dirs.at("memory"), files::v1::kMemoryOomControl),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  CHECK(sources.snapshot(kCounterMetrics)[Metric::memory_oom_kills] == 3u);
}

TEST_CASE("slow sources are read every n-th tick and at every extra sample, the fast ones "
          "at every tick",
          "[sampler]") {
  FakeTree tree;
  const std::string dir = "/sys/fs/cgroup/runner/edgeprof-1-2-3";
  whole_v2_slice(tree, dir);
  Sources sources = Sources::v2(Fs(tree.root()), dir);
  sources.set_slow_every(3, 10);  // every 3 intervals of 10 (ns, as the ticks below)
  Columns columns;
  // Each tick sees new values in a fast file (memory.current) and a slow one (pids.current).
  for (int i = 0; i < 7; ++i) {
    tree.file(join(dir, files::v2::kMemoryCurrent), std::to_string(1000 + i) + "\n");
    tree.file(join(dir, files::v2::kPidsCurrent), std::to_string(10 + i) + "\n");
    sources.tick(i * 10, columns, /*scheduled=*/i != 5);  // row 5: a phase mark's sample
  }
  std::vector<std::uint64_t> memory, tasks;
  for (size_t r = 0; r < columns.size(); ++r) {
    memory.push_back(value(columns, Metric::memory_current_bytes, r));
    tasks.push_back(value(columns, Metric::tasks, r));
  }
  CHECK(memory == std::vector<std::uint64_t>{1000, 1001, 1002, 1003, 1004, 1005, 1006});
  // The slow file at the 0th and 3rd scheduled sample (rows 0 and 3) and at the extra one (row
  // 5); row 6, the 5th scheduled, repeats it.
  CHECK(tasks == std::vector<std::uint64_t>{10, 10, 10, 13, 13, 15, 15});
  CHECK(complete(columns, Metric::tasks));
  CHECK(columns.read_every[static_cast<size_t>(Metric::tasks)] == 3);
  CHECK(columns.read_every[static_cast<size_t>(Metric::memory_current_bytes)] == 1);
  CHECK(columns.read_every[static_cast<size_t>(Metric::cpu_usage_ns)] == 1);
  for (const SourceStatus& s : sources.status()) {
    CAPTURE(s.name);
    const bool fast = s.name == files::v2::kCpuStat || s.name == files::v2::kMemoryCurrent ||
                      s.name == files::v2::kMemoryPeak;
    CHECK(s.read_every == (fast ? 1u : 3u));
  }
  // By the samples' times, not their count: after deadlines missed on a busy machine (no row
  // between 10 and 50), the next row is due at once.
  sources.rewind();
  Columns late;
  for (int t : {0, 10, 50, 60}) {
    tree.file(join(dir, files::v2::kPidsCurrent), std::to_string(t) + "\n");
    sources.tick(t, late);
  }
  CHECK(late.values[static_cast<size_t>(Metric::tasks)] ==
        std::vector<std::uint64_t>{0, 0, 50, 50});
  // A new run starts counting again: its first row reads every source.
  sources.rewind();
  Columns next;
  tree.file(join(dir, files::v2::kPidsCurrent), "99\n");
  sources.tick(0, next);
  CHECK(value(next, Metric::tasks) == 99u);
}

TEST_CASE("the sources read a live slice", "[sampler][kernel]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root");
    return;
  }
  using namespace edgeprof;
  Slice slice(make_device("sampled", 1, 1.0, "256MiB"));
  std::map<std::string, std::string> dirs;  // v1: controller -> directory, from the mount path
  for (const std::string& path : slice.paths()) {
    for (const char* c : {"cpu", "cpuacct", "memory", "pids", "blkio"}) {
      if (path.rfind(std::string("/sys/fs/cgroup/") + c + "/", 0) == 0) dirs[c] = path;
    }
  }
  Sources sources = slice.mode() == CgroupMode::unified
                        ? Sources::v2(Fs(), slice.paths().front())
                        : Sources::v1(Fs(), dirs);
  Command c;
  c.argv = {edgeprof::test::helper("edgeprof_workload"), "touch", "64", "30"};
  Child child = slice.spawn(c);
  Columns columns;
  sources.tick(0, columns);  // at once: before the workload has done its work
  // Until the workload holds its 64 MiB, however long the load makes that take (the limit only
  // ends the wait on a broken source).
  const auto& mem = columns.values[static_cast<int>(Metric::memory_current_bytes)];
  std::int64_t t = 0;
  edgeprof::test::eventually([&] {
    sources.tick(++t, columns);
    return mem.back() >= (64u << 20);
  });
  slice.kill();
  child.wait();
  CHECK(complete(columns, Metric::cpu_usage_ns));
  CHECK(complete(columns, Metric::memory_current_bytes));
  CHECK(complete(columns, Metric::tasks));
  CHECK(mem.back() >= (64u << 20));
  // The slice's live CPU counter: touching the memory took CPU. (Not necessarily after the first
  // tick: on a loaded machine the workload may have done all its work before this thread ran.)
  const auto& cpu = columns.values[static_cast<int>(Metric::cpu_usage_ns)];
  CHECK(cpu.back() > 0u);
  CHECK(cpu.back() >= cpu.front());
  CHECK(columns.values[static_cast<int>(Metric::tasks)].back() == 1u);
}

#include "sampler/sampler.hpp"

namespace {

// Counts reads of one file through inotify (IN_ACCESS): how a test knows that the sampler's
// thread took samples, where a sleep would guess how long that takes on a loaded machine. The
// kernel merges reads that follow each other before the test looks into one event, so the count
// is a lower bound on the reads. Watch a file that each sample reads once: not the first source
// (the CPU time, which a sample may read again when a read was slow; Sources::tick_stamped).
class ReadCounter {
 public:
  explicit ReadCounter(const std::string& path) : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::inotify_add_watch(fd_, path.c_str(), IN_ACCESS) >= 0);
  }
  ~ReadCounter() { ::close(fd_); }
  ReadCounter(const ReadCounter&) = delete;
  ReadCounter& operator=(const ReadCounter&) = delete;

  // The reads seen so far.
  int seen() {
    alignas(inotify_event) char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd_, buffer, sizeof buffer)) > 0) {
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
        if (e->mask & IN_ACCESS) ++seen_;
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return seen_;
  }
  // Waits until `n` reads were seen in all; false when ten minutes passed first (a broken sampler).
  bool wait_for(int n) {
    return edgeprof::test::eventually([&] { return seen() >= n; }, std::chrono::seconds(600));
  }

 private:
  int fd_;
  int seen_ = 0;
};

// The ids of this process's threads.
std::set<pid_t> thread_ids() {
  std::set<pid_t> ids;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    ids.insert(static_cast<pid_t>(std::stol(it->path().filename().string())));
  }
  return ids;
}

}  // namespace

TEST_CASE("the sampler refuses intervals outside 1 ms .. 60 s", "[sampler]") {
  FakeTree tree;
  CHECK_THROWS_WITH(Sampler(Sources::v2(Fs(tree.root()), "/cg"), std::chrono::microseconds(500)),
                    Catch::Contains("1 ms to 60 s"));
  CHECK_THROWS_AS(Sampler(Sources::v2(Fs(tree.root()), "/cg"), std::chrono::seconds(61)),
                  edgeprof::Error);
  CHECK_NOTHROW(Sampler(Sources::v2(Fs(tree.root()), "/cg"), std::chrono::milliseconds(1)));
}

TEST_CASE("the sampler ticks on its deadlines and stops at once with a final sample",
          "[sampler]") {
  FakeTree tree;
  const std::string memory_current = join("/cg", files::v2::kMemoryCurrent);
  tree.file(join("/cg", files::v2::kCpuStat), "usage_usec 100\nuser_usec 60\nsystem_usec 40\n");
  tree.file(memory_current, "4096\n");
  {
    const auto interval = std::chrono::milliseconds(10);
    Sampler sampler(Sources::v2(Fs(tree.root()), "/cg"), interval);
    ReadCounter reads(tree.root() + memory_current);
    sampler.start();
    // Three samples by the thread after the first (start()'s), however long they take.
    const bool ticked = reads.wait_for(reads.seen() + 3);
    tree.overwrite(memory_current, "8192\n");  // the sampler may be reading it now
    sampler.stop();
    REQUIRE(ticked);
    const Columns& c = sampler.columns();
    CAPTURE(c.size(), sampler.missed());
    CHECK(c.size() >= 5);  // start()'s, the thread's three and the final sample
    for (size_t i = 1; i < c.size(); ++i) CHECK(c.t_ns[i] > c.t_ns[i - 1]);
    CHECK(value(c, Metric::memory_current_bytes, c.size() - 1) == 8192u);  // the final counters
    CHECK(complete(c, Metric::memory_current_bytes));
    // The first sample is time zero and the deadlines follow it: no sample on the schedule comes
    // before its deadline (once, the deadlines followed a time zero taken before the first
    // sample, and came early). How late samples come on a loaded machine, and how many deadlines
    // it misses, is benchmarks/bench_sampler.cpp's.
    CHECK(c.t_ns[0] == 0);
    edgeprof::test::check_schedule(c, interval, sampler.missed());
  }
  {
    // A 60 s interval: stop() wakes the thread instead of waiting for the next deadline. (30 s:
    // far more than any load makes a stop take, far less than the deadline it must not wait for.)
    Sampler sampler(Sources::v2(Fs(tree.root()), "/cg"), std::chrono::seconds(60));
    sampler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto before = Sampler::Clock::now();
    sampler.stop();
    CHECK(Sampler::Clock::now() - before < std::chrono::seconds(30));
    CHECK(sampler.columns().size() == 2);  // the first sample and the final one
  }
}

TEST_CASE("a sampler runs one workload after another, and sleeps in between", "[sampler]") {
  // A slice keeps its sampler for the next run: each run must start afresh, and nothing may
  // be sampled between runs.
  FakeTree tree;
  const std::string memory_current = join("/cg", files::v2::kMemoryCurrent);
  tree.file(join("/cg", files::v2::kCpuStat), "usage_usec 100\nuser_usec 60\nsystem_usec 40\n");
  tree.file(memory_current, "4096\n");
  int ends[2];
  REQUIRE(::pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0);
  UniqueFd read_end(ends[0]), write_end(ends[1]);
  Sampler sampler(Sources::v2(Fs(tree.root()), "/cg"), std::chrono::milliseconds(10));
  ReadCounter reads(tree.root() + memory_current);
  sampler.watch_marks(read_end.get());
  // The sampler's thread is whichever this process has beyond those it had before the first run.
  const std::set<pid_t> without_sampler = thread_ids();
  const auto sampler_threads = [&without_sampler] {
    int n = 0;
    for (pid_t id : thread_ids()) n += without_sampler.count(id) ? 0 : 1;
    return n;
  };
  sampler.start();
  const int read_at_start = reads.seen();
  CHECK(sampler_threads() == 1);
  CHECK_THROWS_WITH(sampler.start(), Catch::Contains("already running"));
  REQUIRE(::write(write_end.get(), "first\n", 6) == 6);
  // Two samples from the thread (the mark's or the schedule's), however long they take to come.
  const bool sampled = reads.wait_for(read_at_start + 2);
  sampler.stop();
  REQUIRE(sampled);
  const Columns first = sampler.take_columns();
  CHECK(sampler.marks() == "first\n");
  CAPTURE(first.size(), sampler.missed());
  CHECK(first.size() >= 4);  // start()'s, the thread's two and the final sample

  // Between runs: deadlines pass and marks arrive, and the sampler takes no notice.
  const int read_by_then = reads.seen();
  REQUIRE(::write(write_end.get(), "between\n", 8) == 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  CHECK(sampler.columns().size() == 0);
  CHECK(reads.seen() == read_by_then);

  // The next run: another interval, a fresh time origin; the marks left in the pipe are its.
  tree.overwrite(memory_current, "8192\n");
  const auto longer = std::chrono::milliseconds(25);
  sampler.set_interval(longer);
  sampler.watch_marks(read_end.get());
  sampler.start();
  const bool sampled_again = reads.wait_for(reads.seen() + 2);
  sampler.stop();
  REQUIRE(sampled_again);
  const Columns& second = sampler.columns();
  CAPTURE(second.size(), sampler.missed());
  CHECK(second.size() >= 4);  // start()'s, the thread's two and the final sample
  CHECK(second.t_ns.front() == 0);
  // On the new interval's deadlines, from the new time zero: none before them. (The mark left
  // in the pipe gets an extra, unscheduled sample.)
  edgeprof::test::check_schedule(second, longer, sampler.missed());
  CHECK(value(second, Metric::memory_current_bytes, 0) == 8192u);
  CHECK(sampler.marks() == "between\n");
  CHECK(sampler.reusable());

  // After an idle while the thread ends (however late the machine lets it run: the wait is for
  // the event); the next run starts another.
  CHECK(edgeprof::test::eventually([&] { return sampler_threads() == 0; }));
  sampler.start();
  const int read_by_next = reads.seen();
  CHECK(sampler_threads() == 1);
  const bool sampled_by_new_thread = reads.wait_for(read_by_next + 1);
  sampler.stop();
  CHECK(sampled_by_new_thread);
  CHECK(sampler.columns().size() >= 3);  // start()'s, the new thread's and the final sample
  CHECK_THROWS_WITH(sampler.set_interval(std::chrono::microseconds(10)),
                    Catch::Contains("1 ms to 60 s"));
}

TEST_CASE("a stamped tick pins the CPU counter to the middle of its own read, tried again when slow",
          "[sampler]") {
  FakeTree tree;
  const std::string dir = "/sys/fs/cgroup/runner/edgeprof-1-2-3";
  Sources sources = two_sources(tree, dir);
  // The clock: before each try of the CPU read, the counter moves on (usage = 100 us x try),
  // and each try's read takes the time `gaps` says (a thread preempted mid-read).
  auto run = [&](std::vector<std::int64_t> gaps, Columns& columns) {
    int calls = 0;
    std::int64_t t = 1'000'000;
    auto now = [&] {
      const int call = calls++;
      if (call % 2 == 0) {  // before a try
        const int attempt = call / 2 + 1;
        tree.file(join(dir, files::v2::kCpuStat), "usage_usec " + std::to_string(100 * attempt) +
                                                      "\nuser_usec 0\nsystem_usec 0\n");
        return t;
      }
      t += gaps.at(static_cast<size_t>(call / 2));  // after a try
      const std::int64_t after = t;
      t += 5'000'000;  // time passes before the next try
      return after;
    };
    return sources.tick_stamped(now, columns);
  };
  SECTION("a quick read: one try, stamped at its middle") {
    Columns columns;
    const std::int64_t stamp = run({10'000}, columns);
    CHECK(stamp == 1'000'000 + 5'000);
    REQUIRE(columns.size() == 1);
    CHECK(columns.t_ns[0] == stamp);
    CHECK(value(columns, Metric::cpu_usage_ns) == 100'000);
    CHECK(value(columns, Metric::memory_current_bytes) == 4096);
  }
  SECTION("a read preempted for 50 ms is tried again, and the quick try kept") {
    Columns columns;
    const std::int64_t stamp = run({50'000'000, 10'000}, columns);
    // Second try: before = 1 ms + 50 ms + 5 ms.
    CHECK(stamp == 56'000'000 + 5'000);
    CHECK(value(columns, Metric::cpu_usage_ns) == 200'000);
    CHECK(value(columns, Metric::memory_current_bytes) == 4096);
  }
  SECTION("where every read is slow (an emulated VM), four times the quickest is not retried") {
    Columns columns;
    run({1'000'000, 1'000'000, 1'000'000}, columns);  // 1 ms: slow, tried three times
    run({3'000'000}, columns);                        // 3 ms: under 4 x 1 ms, one try
    REQUIRE(columns.size() == 2);
    CHECK(value(columns, Metric::cpu_usage_ns, 1) == 100'000);  // the first try's
  }
  SECTION("every try slow: the best-bracketed one, its value with its stamp") {
    Columns columns;
    const std::int64_t stamp = run({50'000'000, 30'000'000, 40'000'000}, columns);
    CHECK(stamp == 56'000'000 + 15'000'000);
    CHECK(value(columns, Metric::cpu_usage_ns) == 200'000);
    CHECK(complete(columns, Metric::cpu_usage_ns));
  }
}
