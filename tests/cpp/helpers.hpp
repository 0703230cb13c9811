// Test helpers: temporary fake trees, fixture lookup, and the paths of the helper programs.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cgroup/files.hpp"
#include "edgeprof/edgeprof.hpp"

namespace edgeprof::test {

// A directory tree in /tmp that a detail::Fs can be rooted at; removed on destruction.
class FakeTree {
 public:
  FakeTree() {
    char pattern[] = "/tmp/edgeprof-test-XXXXXX";
    root_ = ::mkdtemp(pattern);
  }
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return root_; }
  void file(const std::string& path, const std::string& content) const {
    std::filesystem::create_directories(std::filesystem::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << content;
  }
  // Overwrites in place without truncating, as a kernel counter changes under a reader: a
  // concurrent pread never sees an empty file. `content` must be as long as the old content.
  void overwrite(const std::string& path, const std::string& content) const {
    std::fstream f(root_ + path, std::ios::in | std::ios::out | std::ios::binary);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  // Replaces the file at once (a new file renamed over it): a concurrent reader sees the old
  // content or the new, never the empty file of a truncation.
  void replace(const std::string& path, const std::string& content) const {
    const std::string temp = root_ + path + ".new";
    std::ofstream(temp) << content;
    std::filesystem::rename(temp, root_ + path);
  }
  void dir(const std::string& path) const { std::filesystem::create_directories(root_ + path); }
  std::string read(const std::string& path) const { return slurp(root_ + path); }
  bool exists(const std::string& path) const { return std::filesystem::exists(root_ + path); }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string root_;
};

// Sets an environment variable for one scope and restores the old value (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A stand-in for a Python with torch, torchvision and timm, for measure_nn_rating() with
// runtime "pytorch": prints the runner's output with every model at `ms`.
inline std::string fake_torch_python(const FakeTree& dir, double ms) {
  const std::string args = dir.root() + "/args.txt";
  std::string body = "#!/bin/sh\necho \"$@\" > '" + args + "'\n" +
                     "echo 'runtime PyTorch 2.0.test fp32 eager (stand-in)'\n" +
                     "echo 'mobilenet_v2 1.0 1.0 1.0'\n" +
                     "shift 4\nfor m in \"$@\"; do echo \"activations $m 12.5\"; echo \"$m " +
                     std::to_string(ms) + " " + std::to_string(ms * 0.9) + " " +
                     std::to_string(ms * 1.2) + "\"; done\n";
  dir.file("/torch-python", body);
  const std::string path = dir.root() + "/torch-python";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

inline std::string fixture(const std::string& name) {
  return FakeTree::slurp(std::string(EDGEPROF_FIXTURES) + "/" + name);
}

// The helper programs sit next to the test binary (also inside the VM, at the same path).
inline std::string helper(const std::string& name) {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / name;
}

// The lines `command` (run by /bin/sh) prints, without their newlines, once it exits.
inline std::vector<std::string> output_lines(const std::string& command) {
  std::vector<std::string> lines;
  FILE* out = ::popen(command.c_str(), "r");
  if (!out) return lines;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, out)) {
    std::string line = buf;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    lines.push_back(line);
  }
  ::pclose(out);
  return lines;
}

// Whether this process may create slices; the reason is printed once when it may not.
inline bool can_create_slices() {
  static const bool ok = [] {
    try {
      edgeprof::Slice probe(edgeprof::make_device("probe", 1, 1.0, "64MiB"));
      return true;
    } catch (const edgeprof::PermissionDenied& e) {
      std::fprintf(stderr, "SKIPPING [kernel] tests: %s\n", e.what());
      return false;
    }
  }();
  return ok;
}

#define REQUIRE_CGROUPS()                                  \
  do {                                                     \
    if (!can_create_slices()) {                            \
      WARN("skipped: no permission to create cgroups");    \
      return;                                              \
    }                                                      \
  } while (0)

inline edgeprof::Command program(std::string path) {
  edgeprof::Command c;
  c.argv = {std::move(path)};
  return c;
}

inline edgeprof::Command workload(std::vector<std::string> args) {
  edgeprof::Command c;
  c.argv = {helper("edgeprof_workload")};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  return c;
}

// Whether one of `notes` (a plan's, say) contains `part`.
inline bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  for (const std::string& n : notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}
inline bool has_note(const EmulationPlan& plan, const std::string& part) {
  return has_note(plan.notes, part);
}

// Polls `done` every few milliseconds until it holds; false when `limit` passed first. For a test
// that waits for an event (the kernel counted a throttle, a thread ran, a file appeared): how long
// the event takes is the machine's business, so the limit only ends a wait on a broken mechanism.
template <class Done>
bool eventually(Done done, std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The file `name` in the first of a slice's directories that has it (Slice::paths(): one on v2,
// one per hierarchy on v1); "" when none has it.
inline std::string slice_file(const std::vector<std::string>& dirs, const std::string& name) {
  for (const std::string& dir : dirs) {
    if (std::filesystem::exists(dir + "/" + name)) return FakeTree::slurp(dir + "/" + name);
  }
  return {};
}

// The first of a slice's directories that has the file `name`; "" when none has it.
inline std::string slice_dir_with(const std::vector<std::string>& dirs, const std::string& name) {
  for (const std::string& dir : dirs) {
    if (std::filesystem::exists(dir + "/" + name)) return dir;
  }
  return {};
}

// Writes a kernel file (cgroup control files take one write); REQUIREs that the kernel took it.
inline void write_kernel_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  REQUIRE(out.good());
}

// How many pids a cgroup.procs text lists.
inline long count_pids(const std::string& procs) {
  std::istringstream in(procs);
  long n = 0;
  for (long pid = 0; in >> pid;) ++n;
  return n;
}

// The CPU bandwidth the kernel holds for a slice, read back from cpu.max (v2) or
// cpu.cfs_quota_us and cpu.cfs_period_us (v1): what the plan wrote, not what it meant to.
struct KernelBandwidth {
  std::optional<std::uint64_t> quota_us;  // unset: no limit ("max" on v2, -1 on v1)
  std::uint64_t period_us = 0;            // 0: the slice has no cpu controller file
};
inline KernelBandwidth kernel_bandwidth(const std::vector<std::string>& dirs) {
  KernelBandwidth b;
  std::string quota;
  // v2's cpu.max: "QUOTA PERIOD" or "max PERIOD".
  std::istringstream v2(slice_file(dirs, detail::files::v2::kCpuMax));
  if (!(v2 >> quota >> b.period_us)) {
    std::istringstream q(slice_file(dirs, detail::files::v1::kCpuCfsQuotaUs));
    std::istringstream p(slice_file(dirs, detail::files::v1::kCpuCfsPeriodUs));
    quota.clear();
    b.period_us = 0;
    q >> quota;
    p >> b.period_us;
  }
  if (!quota.empty() && quota != "max" && quota != "-1") b.quota_us = std::stoull(quota);
  return b;
}

// One field of a slice's cpu.stat (the cpu hierarchy's on v1): "nr_throttled", "usage_usec", ...
// 0 when missing.
inline std::uint64_t kernel_cpu_stat(const std::vector<std::string>& dirs, const std::string& key) {
  std::string text = slice_file(dirs, detail::files::v2::kCpuStat);
  if (text.empty()) text = slice_file(dirs, detail::files::v1::kCpuStat);
  std::istringstream in(text);
  std::string k;
  std::uint64_t value = 0;
  while (in >> k >> value) {
    if (k == key) return value;
  }
  return 0;
}

// CFS periods in which the kernel throttled the slice since it was created.
inline std::uint64_t kernel_throttled_periods(const std::vector<std::string>& dirs) {
  return kernel_cpu_stat(dirs, "nr_throttled");
}

// CPU time of every task the slice has held since it was created, in seconds: cpuacct.usage (v1,
// ns) or cpu.stat usage_usec (v2).
inline double kernel_cpu_usage_s(const std::vector<std::string>& dirs) {
  std::istringstream v1(slice_file(dirs, detail::files::v1::kCpuacctUsage));
  std::uint64_t ns = 0;
  if (v1 >> ns) return double(ns) / 1e9;
  return double(kernel_cpu_stat(dirs, "usage_usec")) / 1e6;
}

// What a run's samples show of their schedule whatever the load: no sample taken on the schedule
// came before its deadline (the j-th after the first at least j intervals after it, deadlines
// being absolute and relative to the first sample), and no more were taken or counted as missed
// than deadlines had passed by the last sample. How many a busy machine let through is the
// sampler benchmark's (benchmarks/bench_sampler.cpp).
inline void check_schedule(const TimeSeries& s, std::chrono::nanoseconds interval,
                           std::uint64_t missed) {
  REQUIRE(s.size() > 0);
  const std::int64_t t0 = s.t_ns.front();
  const std::int64_t every = interval.count();
  std::int64_t j = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < s.scheduled.size() && !s.scheduled[i]) continue;
    CAPTURE(i, j, s.t_ns[i] - t0);
    CHECK(s.t_ns[i] - t0 >= j * every);
    ++j;
  }
  CAPTURE(j, missed, s.t_ns.back() - t0);
  CHECK(std::uint64_t(j) + missed <= std::uint64_t((s.t_ns.back() - t0) / every) + 1);
}

// A host of two CPUs and 8 GiB, for plans.
inline HostFacts two_cpu_host() {
  HostFacts h;
  h.cpus = {0, 1};
  h.memory_bytes = 8ull << 30;
  return h;
}

// Four cores at 0.25 with published CNN tables: four threads ran twice as fast as one on three
// graphs, as fast on ResNet-18 (the board's median speed-up 2, contention 1/3).
inline Device quad_board() {
  Device d = make_device("quad", 4, 0.25, "256MiB");
  d.nn_ms = {{"squeezenet", 10}, {"mobilenet", 20}, {"mobilenet_v2", 40}, {"resnet18", 80}};
  d.nn_threads_ms[4] = {
      {"squeezenet", 5}, {"mobilenet", 10}, {"mobilenet_v2", 20}, {"resnet18", 80}};
  return d;
}

// A one-core device emulated at its ncnn nn speed `speed` (a fraction of a host core).
inline Device nn_device(double speed) {
  Device d = make_device("board", 1, 0.9, "256MiB");
  NnSpeed nn;
  nn.core_speed = speed;
  nn.ratios = {{"mobilenet", speed}};
  d.nn = nn;
  return d;
}

// Directories of slices this process made that are still there, under `top` (a slice sits a few
// levels below the mount: beneath the caller's cgroup or its parent).
inline std::vector<std::string> our_slices(const std::string& top = "/sys/fs/cgroup") {
  namespace fs = std::filesystem;
  const std::string prefix = "edgeprof-" + std::to_string(::getpid()) + "-";
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(top, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it.depth() >= 4) it.disable_recursion_pending();
    if (it->is_directory(ec) && it->path().filename().string().rfind(prefix, 0) == 0) {
      found.push_back(it->path());
    }
  }
  return found;
}

}  // namespace edgeprof::test
