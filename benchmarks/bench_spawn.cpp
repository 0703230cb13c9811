// edgeprof_bench_spawn: what a Slice costs (issue 2). Results: docs/benchmarks.md.
//
//   1. spawn   /bin/true in a reused Slice (slice.spawn(cmd).wait()) against posix_spawn +
//              waitpid. Slice::spawn's default path (src/sys/spawn.cpp, x86-64) is
//              clone3(CLONE_VM|CLONE_VFORK): on cgroup v2 the child is born in the slice
//              (CLONE_INTO_CGROUP, placement "clone3"), on v1 it writes "0" into cgroup.procs
//              fds the slice keeps ("vfork+attach"); fork + pipe + parent attach is only the
//              fallback ("fork+attach": other architectures, kernels < 5.3 / 5.7). Also run:
//              replicas of both paths with the same system calls (the default one untimed and
//              timed, the fallback timed) to show where the time goes, the fallback without
//              cgroup work, minimal vfork-style spawns as lower bounds (no pidfd, no clock
//              reads, no library), and the same after 50 ms of idleness (on v1 the first
//              cgroup.procs write then waits for an RCU grace period).
//   2. create  { Slice s(device); } against Debian's cgroup-tools run as processes (cgcreate,
//              cgset, cgexec, cgdelete: what a shell-script profiler does), and a replica of
//              Slice construction and destruction that times each step.
//   3. reads   a slice's stat file read N times: pread on a kept fd, open/read/close, and
//              libcgroup (cgroup_get_cgroup + getter, and its line iterator).
//
// The variants of each benchmark are interleaved (the order rotates every repetition) so that
// noise on a shared host hits them alike. Needs root.
//
// Where the cgroups go: on cgroup v1 the benchmark creates a container edgeprof-bench-<pid>
// beneath its own cgroup in each hierarchy edgeprof uses and moves itself in, so every slice and
// every cgroup-tools group lands beneath it. On exit, also after Ctrl-C or SIGTERM, it moves back
// and removes the container and anything left beneath it. Containers of a benchmark that died
// (SIGKILL) are removed by the next run. On cgroup v2 (the VM) slices go beneath the process's
// own cgroup as usual.
#include <fcntl.h>
#include <fmt/format.h>
#include <libcgroup.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "sys/clone3.hpp"
#include "sys/fs.hpp"
#include "sys/parse.hpp"
#include "sys/spawn.hpp"
#include "edgeprof/edgeprof.hpp"

extern char** environ;

namespace {

using namespace bench;
namespace files = edgeprof::detail::files;
using edgeprof::detail::kCloseRangeCloexec;

constexpr const char* kTrue = "/bin/true";
constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
// The v1 controllers edgeprof creates a slice in, and the ones the cgroup-tools variant uses.
const std::vector<std::string> kEdgeprofControllers = {"cpu",  "cpuacct", "cpuset", "memory",
                                                       "pids", "freezer", "blkio"};
const std::vector<std::string> kToolControllers = {"cpu", "cpuacct", "cpuset", "memory", "pids"};

// ---------------------------------------------------------------------------------- files

// The library's file layer (src/sys/fs.hpp) on the real filesystem: open/read/close, and one
// write(2) of the whole value, as cgroup files want.
using edgeprof::detail::join;
const edgeprof::detail::Fs kFs;

std::optional<std::string> read_file(const std::string& path) { return kFs.read(path); }

int write_file(const std::string& path, std::string_view value) { return kFs.write(path, value); }

void write_or_throw(const std::string& path, std::string_view value) {
  if (int err = write_file(path, value)) {
    throw BenchError(fmt::format("cannot write '{}' to {}: {}", value, path, std::strerror(err)));
  }
}

bool exists(const std::string& path) { return kFs.exists(path); }

std::vector<std::string> subdirs(const std::string& path) { return kFs.subdirs(path); }

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

// The parent pid of `pid` from /proc/<pid>/stat, or -1.
pid_t parent_of(pid_t pid) {
  auto stat = read_file(fmt::format(files::kProcTidStat, pid));
  auto ppid = stat ? edgeprof::detail::parse_stat_ppid(*stat) : std::nullopt;
  return ppid.value_or(-1);
}

// ---------------------------------------------------------------------------------- statistics

struct Stats {
  size_t n = 0;
  double median = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
};

Stats summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = quantile(v, 0.5);
  s.p90 = quantile(v, 0.9);
  s.p99 = quantile(v, 0.99);
  s.mean = edgeprof::statistics(v).mean;
  s.max = v.back();
  return s;
}

std::string fmt_us(double us) {
  if (us < 10) return fmt::format("{:.2f}", us);
  if (us < 1000) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}
std::string fmt_ratio(double r) { return fmt::format("{:.2f}x", r); }

// Phases of one instrumented operation, in the order they were first recorded.
class Phases {
 public:
  void add(const std::string& name, double us) {
    for (auto& [n, v] : phases_) {
      if (n == name) {
        v.push_back(us);
        return;
      }
    }
    phases_.push_back({name, {us}});
  }
  const std::vector<std::pair<std::string, std::vector<double>>>& all() const { return phases_; }

 private:
  std::vector<std::pair<std::string, std::vector<double>>> phases_;
};

Table phase_table(const std::string& title, const Phases& phases, const std::string& total_name) {
  Table t{title,
          {"phase", "n", "median us", "p90 us", "p99 us", "max us", "mean us", "share of median"},
          {},
          {}};
  double total = 0;
  for (const auto& [name, v] : phases.all()) {
    if (name == total_name) total = summarize(v).median;
  }
  for (const auto& [name, v] : phases.all()) {
    Stats s = summarize(v);
    std::string share = total > 0 && name != total_name && name.rfind("  ", 0) != 0
                            ? fmt::format("{:.0f}%", 100.0 * s.median / total)
                            : "";
    t.rows.push_back({name, std::to_string(s.n), fmt_us(s.median), fmt_us(s.p90), fmt_us(s.p99),
                      fmt_us(s.max), fmt_us(s.mean), share});
  }
  return t;
}

// ------------------------------------------------------------------------- cgroup v1 layout

// controller -> mount point of its v1 hierarchy, found as edgeprof finds it (libcgroup, once).
std::map<std::string, std::string> v1_mounts() {
  std::map<std::string, std::string> out;
  const edgeprof::detail::Layout layout = edgeprof::detail::discover_layout(edgeprof::detail::Fs());
  for (const std::string& c : kEdgeprofControllers) {
    if (auto it = layout.v1.find(c); it != layout.v1.end()) out[c] = it->second;
  }
  return out;
}

// controller -> this process's cgroup in that hierarchy, parsed as edgeprof parses it.
std::map<std::string, std::string> own_v1_paths() {
  std::map<std::string, std::string> out;
  const std::string text = read_file(edgeprof::detail::files::kProcSelfCgroup).value_or("");
  for (const auto& m : edgeprof::detail::parse_proc_cgroup(text)) {
    for (const std::string& c : m.controllers) out[c] = m.path;
  }
  return out;
}

// Removes a cgroup directory tree bottom-up. Processes found inside are killed only when they
// are this process's own children (nothing else can be in the benchmark's cgroups).
bool remove_tree(const std::string& dir) {
  bool ok = true;
  for (const std::string& sub : subdirs(dir)) ok = remove_tree(join(dir, sub)) && ok;
  if (exists(join(dir, files::v1::kFreezerState))) {
    write_file(join(dir, files::v1::kFreezerState), "THAWED");
  }
  for (int round = 0;; ++round) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return ok;
    int err = errno;
    if (err != EBUSY || round >= 300) {
      std::fprintf(stderr, "edgeprof_bench_spawn: cannot remove %s: %s\n", dir.c_str(),
                   std::strerror(err));
      return false;
    }
    if (auto procs = read_file(join(dir, files::kProcs))) {
      for (const std::string& word : split(*procs, '\n')) {
        pid_t pid = static_cast<pid_t>(std::atoi(word.c_str()));
        if (pid > 0 && parent_of(pid) == ::getpid()) {
          ::kill(pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The container cgroup edgeprof-bench-<pid> in each v1 hierarchy edgeprof uses (see the top of
// the file). setup() moves this process in; teardown() (also from the destructor) moves it back
// and removes everything beneath.
class BenchArea {
 public:
  struct Hierarchy {
    std::string mount;                     // /sys/fs/cgroup/cpu
    std::vector<std::string> controllers;  // mounted there
    std::string own;                       // our cgroup before the benchmark, e.g. "/"
    std::string container;                 // own + "/edgeprof-bench-<pid>"
    std::string dir() const { return join(mount, container); }
  };

  BenchArea() = default;
  BenchArea(const BenchArea&) = delete;
  BenchArea& operator=(const BenchArea&) = delete;
  ~BenchArea() { teardown(); }

  void setup() {
    const auto mounts = v1_mounts();
    const auto own = own_v1_paths();
    const std::string name = fmt::format("edgeprof-bench-{}", ::getpid());
    std::map<std::string, size_t> by_mount;
    for (const std::string& c : kEdgeprofControllers) {
      auto m = mounts.find(c);
      if (m == mounts.end()) continue;
      auto [it, added] = by_mount.emplace(m->second, hierarchies_.size());
      if (added) {
        auto o = own.find(c);
        std::string own_path = o == own.end() ? "/" : o->second;
        hierarchies_.push_back({m->second, {}, own_path, join(own_path, name)});
      }
      hierarchies_[it->second].controllers.push_back(c);
    }
    if (hierarchies_.empty()) {
      throw CannotRun(
          "no cgroup v1 hierarchy (cpu, cpuacct, cpuset, memory, pids, freezer, blkio) is "
          "mounted");
    }
    sweep_stale();
    for (const Hierarchy& h : hierarchies_) {
      if (::mkdir(h.dir().c_str(), 0755) != 0) {
        int err = errno;
        throw BenchError(fmt::format("cannot create {}: {}", h.dir(), std::strerror(err)));
      }
      created_.push_back(h.dir());
      if (exists(join(h.dir(), files::v1::kCpusetCpus))) {
        for (const char* f : {files::v1::kCpusetCpus, files::v1::kCpusetMems}) {
          auto value = read_file(join(join(h.mount, h.own), f));
          write_or_throw(join(h.dir(), f), trim(value.value_or("0")));
        }
      }
    }
    moved_ = true;
    const std::string self = std::to_string(::getpid());
    for (const Hierarchy& h : hierarchies_) write_or_throw(join(h.dir(), files::kProcs), self);
  }

  // Returns false when something could not be removed (and says so on stderr).
  bool teardown() noexcept {
    bool ok = true;
    if (moved_) {
      const std::string self = std::to_string(::getpid());
      for (const Hierarchy& h : hierarchies_) {
        const std::string procs = join(join(h.mount, h.own), files::kProcs);
        if (int err = write_file(procs, self)) {
          std::fprintf(stderr, "edgeprof_bench_spawn: cannot move back to %s: %s\n", procs.c_str(),
                       std::strerror(err));
          ok = false;
        }
      }
      moved_ = false;
    }
    for (const std::string& dir : created_) ok = remove_tree(dir) && ok;
    created_.clear();
    return ok;
  }

  const std::vector<Hierarchy>& hierarchies() const { return hierarchies_; }

  // The hierarchy a controller is mounted in, or nullptr.
  const Hierarchy* find(const std::string& controller) const {
    for (const Hierarchy& h : hierarchies_) {
      if (std::find(h.controllers.begin(), h.controllers.end(), controller) !=
          h.controllers.end()) {
        return &h;
      }
    }
    return nullptr;
  }

  // "cpu" for a path under the cpu mount ("cpu,cpuacct" for a shared one).
  std::string label_of(const std::string& path) const {
    for (const Hierarchy& h : hierarchies_) {
      if (path.rfind(h.mount + "/", 0) == 0)
        return fmt::format("{}", fmt::join(h.controllers, ","));
    }
    return path;
  }

 private:
  // Containers whose benchmark died (SIGKILL) are removed when empty; never kills anything
  // (remove_tree kills only our own children, and a dead benchmark's are not ours).
  void sweep_stale() {
    for (const Hierarchy& h : hierarchies_) {
      const std::string parent = join(h.mount, h.own);
      for (const std::string& sub : subdirs(parent)) {
        if (sub.rfind("edgeprof-bench-", 0) != 0) continue;
        const std::string suffix = sub.substr(std::strlen("edgeprof-bench-"));
        if (suffix.empty() || suffix.find_first_not_of("0123456789") != std::string::npos) {
          continue;
        }
        const pid_t owner = static_cast<pid_t>(std::atol(suffix.c_str()));
        if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // its benchmark still runs
        std::printf("note: removing %s left by a benchmark that died\n", join(parent, sub).c_str());
        remove_tree(join(parent, sub));
      }
    }
  }

  std::vector<Hierarchy> hierarchies_;
  std::vector<std::string> created_;
  bool moved_ = false;
};

// ------------------------------------------------------------------------- processes

// posix_spawn + waitpid; returns the wait status.
int spawn_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc != 0) throw BenchError(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("wait status {}", status);
}

// Runs a cgroup-tools command and throws when it fails (unless a signal asked us to stop).
void run_tool(const std::vector<std::string>& argv) {
  int status = spawn_and_wait(argv);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  check_stop();
  throw BenchError(fmt::format("'{}' failed ({})", fmt::join(argv, " "), describe_status(status)));
}

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// ------------------------------------------------------------- the slice, as seen from outside

struct SliceView {
  edgeprof::CgroupMode mode = edgeprof::CgroupMode::unified;
  std::vector<std::string> paths;   // the slice's directories
  std::vector<std::string> labels;  // hierarchy of each path ("cpu", "memory", "cgroup2")

  // The slice's copy of a file, in whichever hierarchy has it.
  std::optional<std::string> file(const std::string& name) const {
    for (const std::string& p : paths) {
      if (exists(join(p, name))) return join(p, name);
    }
    return std::nullopt;
  }
};

SliceView view_of(const edgeprof::Slice& slice, const BenchArea* area) {
  SliceView v;
  v.mode = slice.mode();
  v.paths = slice.paths();
  for (const std::string& p : v.paths) {
    v.labels.push_back(area && v.mode != edgeprof::CgroupMode::unified ? area->label_of(p)
                                                                       : "cgroup2");
  }
  return v;
}

// What Slice::spawn and Child::wait do with the slice's files around a run: reset the peak
// (a write), read the counters before, and read them again after.
struct CounterFiles {
  std::optional<std::string> reset_path;
  std::string reset_value;
  // The backends write the reset into a kept fd; v2 stops trying once the kernel refused
  // (before 6.12).
  std::vector<std::string> reads;
  std::string peak;  // the one of `reads` read at a run's end only
};

CounterFiles counter_files(const SliceView& v) {
  CounterFiles c;
  auto add = [&](const char* name) {
    if (auto f = v.file(name)) c.reads.push_back(*f);
  };
  if (v.mode == edgeprof::CgroupMode::unified) {
    c.reset_path = v.file(files::v2::kMemoryPeak);
    c.reset_value = "reset\n";
    for (const char* f : {files::v2::kCpuStat, files::v2::kMemoryPeak, files::v2::kMemoryEvents}) {
      add(f);
    }
    c.peak = v.file(files::v2::kMemoryPeak).value_or("");
  } else {
    c.reset_path = v.file(files::v1::kMemoryMaxUsageInBytes);
    c.reset_value = "0";
    c.peak = v.file(files::v1::kMemoryMaxUsageInBytes).value_or("");
    for (const char* f : {files::v1::kCpuacctUsage, files::v1::kCpuacctStat, files::v1::kCpuStat,
                          files::v1::kMemoryMaxUsageInBytes, files::v1::kMemoryOomControl}) {
      add(f);
    }
  }
  return c;
}

// Descriptors the slice keeps for its life, as the backends do: cgroup.procs of each hierarchy
// (v1 self-attach) and the counter files.
class KeptFds {
 public:
  KeptFds(const SliceView& v, const CounterFiles& c) : reset_value_(c.reset_value) {
    for (const std::string& p : v.paths)
      procs_.push_back(open_or_throw(join(p, files::kProcs), O_WRONLY));
    // On v2 before Linux 6.12 memory.peak cannot be reset: root may open it for writing, but
    // the write fails (EINVAL); reset() then stops trying, as the v2 backend does.
    if (c.reset_path) reset_ = ::open(c.reset_path->c_str(), O_WRONLY | O_CLOEXEC);
    for (const std::string& f : c.reads) {
      if (f == c.peak) peak_ = static_cast<int>(counters_.size());
      counters_.push_back(open_or_throw(f, O_RDONLY));
    }
  }
  ~KeptFds() {
    for (int fd : procs_) ::close(fd);
    for (int fd : counters_) ::close(fd);
    if (reset_ >= 0) ::close(reset_);
  }
  KeptFds(const KeptFds&) = delete;
  KeptFds& operator=(const KeptFds&) = delete;

  // The minimal spawns: pwrite the reset, one pread per counter file.
  void reset_and_read() const {
    reset();
    read();
  }
  void reset() const {
    if (reset_ < 0) return;
    const auto n = ::pwrite(reset_, reset_value_.data(), reset_value_.size(), 0);
    if (n != static_cast<ssize_t>(reset_value_.size())) {
      ::close(reset_);
      reset_ = -1;
    }
  }
  void read() const {
    char buf[4096];
    for (int fd : counters_) {
      ssize_t ignored = ::pread(fd, buf, sizeof buf, 0);
      (void)ignored;
    }
  }
  // As edgeprof's StatFile::read: pread from offset 0 until a short read (one call each); the
  // peak only at a run's end (`with_peak`), as Slice reads it.
  void read_all(bool with_peak) const {
    char buf[4096];
    for (size_t i = 0; i < counters_.size(); ++i) {
      const int fd = counters_[i];
      if (!with_peak && static_cast<int>(i) == peak_) continue;
      for (off_t offset = 0;;) {
        ssize_t n = ::pread(fd, buf, sizeof buf, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        offset += n;
        if (static_cast<size_t>(n) < sizeof buf) break;
      }
    }
  }
  const std::vector<int>& procs() const { return procs_; }

 private:
  static int open_or_throw(const std::string& path, int flags) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) throw BenchError(fmt::format("open {}: {}", path, std::strerror(errno)));
    return fd;
  }
  std::vector<int> procs_, counters_;
  int peak_ = -1;  // index in counters_
  mutable int reset_ = -1;  // closed once the kernel refused a reset
  std::string reset_value_;
};

// The counter work of Slice::spawn before the child starts: reset the peak as the backend does,
// then read the cumulative counter files through their kept fds.
void counters_before(const KeptFds& kept) {
  kept.reset();
  kept.read_all(false);
}

// ------------------------------------------------------ 1. spawn: instrumented replicas

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
std::int64_t ns_of(Clock::time_point t) {  // steady_clock is CLOCK_MONOTONIC
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
std::int64_t ns_of(const timespec& ts) { return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec; }
double us_ns(std::int64_t a, std::int64_t b) { return double(b - a) / 1000.0; }

// Keeps values the compiler would otherwise drop (edgeprof's wall time, computed and unused).
volatile double g_sink = 0;

// What the fork replica's child stamps into a page shared with the parent (CLOCK_MONOTONIC, ns).
struct ChildClock {
  std::int64_t started, released, signals_reset;
};

ChildClock* child_clock() {
  static ChildClock* page = [] {
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw BenchError(fmt::format("mmap: {}", std::strerror(errno)));
    return static_cast<ChildClock*>(p);
  }();
  return page;
}

// The child side of edgeprof's fork fallback (src/sys/spawn.cpp child_main with a release pipe),
// with the same system calls.
[[noreturn]] void replica_child(int release_fd, int error_fd, pid_t parent, char* const* argv,
                                ChildClock* clock) {
  clock->started = mono_ns();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  if (release_fd >= 0) {
    char byte;
    ssize_t n;
    do {
      n = ::read(release_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);
  }
  clock->released = mono_ns();
  edgeprof::detail::reset_signals();
  clock->signals_reset = mono_ns();
  ::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec);
  ::execve(argv[0], argv, environ);
  int err = errno;
  ssize_t ignored = ::write(error_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

void check_exit(int status, const char* who) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  check_stop();
  throw BenchError(fmt::format("{} in {}: {}", kTrue, who, describe_status(status)));
}

// edgeprof's fork fallback ("fork+attach": other architectures, kernels before 5.3 / 5.7;
// src/sys/spawn.cpp fork_and_release) rebuilt from the outside with a clock between the steps: the
// counters (on kept fds, as the backends now read them), fork (the child held on a pipe), the
// parent's writes of the pid into each cgroup.procs, release and exec, and the wait. `cgroup` =
// false leaves out everything cgroup-related (counters, attach): the bare fork + pipe + exec.
void replica_spawn(const SliceView& v, const KeptFds& kept, bool cgroup, Phases* phases) {
  char* argv[] = {const_cast<char*>(kTrue), nullptr};
  ChildClock* clock = child_clock();
  auto t0 = Clock::now();
  if (cgroup) counters_before(kept);
  auto t1 = Clock::now();
  int errors[2], release[2];
  if (::pipe2(errors, O_CLOEXEC) != 0 || ::pipe2(release, O_CLOEXEC) != 0) {
    throw BenchError(fmt::format("pipe2: {}", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(release[1]);
    ::close(errors[0]);
    replica_child(release[0], errors[1], parent, argv, clock);
  }
  if (pid < 0) throw BenchError(fmt::format("fork: {}", std::strerror(errno)));
  ::close(release[0]);
  auto t2 = Clock::now();
  std::vector<double> each;
  if (cgroup) {
    const std::string value = std::to_string(pid);
    for (size_t i = 0; i < v.paths.size(); ++i) {
      auto a = Clock::now();
      int err = write_file(join(v.paths[i], files::kProcs), value);
      each.push_back(us_between(a, Clock::now()));
      if (err != 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw BenchError(
            fmt::format("cannot attach pid {} to {}: {}", pid, v.paths[i], std::strerror(err)));
      }
    }
  }
  auto t3 = Clock::now();
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ssize_t ignored = ::write(release[1], "x", 1);
  (void)ignored;
  auto t3b = Clock::now();
  ::close(release[1]);
  ::close(errors[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(errors[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(errors[0]);
  auto t4 = Clock::now();
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  if (pidfd >= 0) ::close(pidfd);
  auto t5 = Clock::now();
  if (cgroup) kept.read_all(true);
  auto t6 = Clock::now();
  if (n > 0) {
    throw BenchError(fmt::format("the replica child could not execute {}: {}", kTrue,
                                 std::strerror(child_errno)));
  }
  check_exit(status, "the fork-fallback replica");
  if (!phases) return;
  phases->add("reset peak + read counters (before)", us_between(t0, t1));
  phases->add("pipes + fork (parent side)", us_between(t1, t2));
  phases->add(fmt::format("attach: write pid to {} cgroup.procs", v.paths.size()),
              us_between(t2, t3));
  for (size_t i = 0; i < each.size(); ++i) {
    phases->add(fmt::format("  cgroup.procs {}", v.labels[i]), each[i]);
  }
  phases->add("pidfd_open + release write", us_between(t3, t3b));
  phases->add("release -> exec committed (parent waits on the error pipe)", us_between(t3b, t4));
  phases->add("  child wakes up after the release write", us_ns(ns_of(t3b), clock->released));
  phases->add("  child: reset 64 signal handlers + mask",
              us_ns(clock->released, clock->signals_reset));
  phases->add("  child: close_range + execve until close-on-exec",
              us_ns(clock->signals_reset, ns_of(t4)));
  phases->add("wait for exit (wait4)", us_between(t4, t5));
  phases->add("read counters (after)", us_between(t5, t6));
  phases->add("total", us_between(t0, t6));
}

// The trampoline edgeprof itself uses (src/sys/clone3.hpp), so the replica measures the same code.
using edgeprof::detail::CloneArgs;
using edgeprof::detail::kCloneIntoCgroup;
using edgeprof::detail::kClonePidfd;
constexpr bool kHaveClone3OnStack = edgeprof::detail::kHaveClone3Trampoline;
long clone3_on_stack(CloneArgs* args, int (*fn)(void*), void* arg) {
  return edgeprof::detail::clone3_with_fn(args, fn, arg);
}

// The kernel does not know clone3 (before 5.3) or CLONE_INTO_CGROUP (before 5.7): edgeprof then
// takes its fork fallback, and the rows that need clone3 are left out.
struct Clone3Refused : BenchError {
  using BenchError::BenchError;
};

// What the default-path replica's child reads and, sharing the parent's memory (CLONE_VM),
// writes back: how it failed, and with `timed` its timestamps (CLOCK_MONOTONIC, ns).
constexpr size_t kMaxProcs = 16;
struct VforkChild {
  const int* procs;
  size_t nprocs;
  char* const* argv;
  pid_t parent;
  bool timed;
  volatile int stage = 0;  // 0 = exec'd, 1 = attach failed, 2 = exec failed
  volatile int err = 0;
  std::int64_t started = 0, checked = 0, signals_reset = 0;
  std::int64_t attached[kMaxProcs] = {};
  timespec exec_time{};  // edgeprof's own clock read, just before execve
  int phase_fd = -1;     // the phase pipe's write end, inherited by the workload
  char* const* envp = nullptr;
};

// The phase pipe a slice keeps between runs (src/run/slice.cpp), and the environment naming it.
struct ReplicaPhasePipe {
  int read = -1, write = -1;
  std::string env;
  std::vector<char*> envp;
  ReplicaPhasePipe() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw BenchError(fmt::format("pipe2: {}", std::strerror(errno)));
    }
    read = ends[0];
    write = ends[1];
    struct stat st {};
    ::fstat(write, &st);
    env = fmt::format("EDGEPROF_PHASE_FD={}:{}", write, st.st_ino);
    for (char** e = environ; e && *e; ++e) envp.push_back(*e);
    envp.push_back(env.data());
    envp.push_back(nullptr);
  }
};
const ReplicaPhasePipe& replica_phase_pipe() {
  static const ReplicaPhasePipe pipe;
  return pipe;
}

// src/sys/spawn.cpp child_main on the default path, with the same system calls: runs on its own
// stack in the parent's memory, the parent suspended until it execs (CLONE_VFORK).
int replica_vfork_child(void* p) {
  VforkChild& c = *static_cast<VforkChild*>(p);
  if (c.timed) c.started = mono_ns();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != c.parent) ::_exit(127);
  if (c.timed) c.checked = mono_ns();
  for (size_t i = 0; i < c.nprocs; ++i) {
    if (::write(c.procs[i], "0", 1) != 1) {
      c.err = errno;
      c.stage = 1;
      ::_exit(127);
    }
    if (c.timed && i < kMaxProcs) c.attached[i] = mono_ns();
  }
  edgeprof::detail::reset_signals();
  if (c.timed) c.signals_reset = mono_ns();
  ::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec);
  if (::fcntl(c.phase_fd, F_SETFD, 0) != 0) {
    c.err = errno;
    c.stage = 2;
    ::_exit(127);
  }
  ::clock_gettime(CLOCK_MONOTONIC, &c.exec_time);
  ::execve(c.argv[0], c.argv, c.envp);
  c.err = errno;
  c.stage = 2;
  ::_exit(127);
}

// edgeprof's default path (src/sys/spawn.cpp try_vfork, x86-64): the counters on kept fds,
// clone3(CLONE_VM|CLONE_VFORK|CLONE_PIDFD) with all signals blocked, the child born in the slice
// (v2: CLONE_INTO_CGROUP with `cgroup_fd`) or writing "0" into the kept cgroup.procs fds (v1:
// `cgroup_fd` = -1), the workload inheriting the slice's kept phase pipe, then the wait without
// a deadline (wait4, a clock read), the phase pipe read until empty and the counters again.
// edgeprof reads the clock twice per run (the child just before execve, the parent after the
// reap); with `phases` the replica adds a clock read between the steps and in the child, and
// records them.
void replica_vfork_spawn(const SliceView& v, const KeptFds& kept, int cgroup_fd,
                         Phases* phases) {
  alignas(64) static char stack[256 * 1024];  // src/sys/spawn.cpp's child stack is as large
  char* argv[] = {const_cast<char*>(kTrue), nullptr};
  const bool timed = phases != nullptr;
  auto stamp = [timed] { return timed ? Clock::now() : Clock::time_point{}; };
  const auto t0 = stamp();
  counters_before(kept);
  const auto t1 = stamp();
  const ReplicaPhasePipe& phase = replica_phase_pipe();
  VforkChild c{kept.procs().data(), cgroup_fd >= 0 ? 0 : kept.procs().size(), argv, ::getpid(),
               timed};
  c.phase_fd = phase.write;
  c.envp = phase.envp.data();
  int pidfd = -1;
  CloneArgs ca{};
  ca.flags = CLONE_VM | CLONE_VFORK | kClonePidfd;
  if (cgroup_fd >= 0) {
    ca.flags |= kCloneIntoCgroup;
    ca.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  }
  ca.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
  ca.exit_signal = SIGCHLD;
  ca.stack = reinterpret_cast<std::uintptr_t>(stack);
  ca.stack_size = sizeof stack;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const long rc = clone3_on_stack(&ca, replica_vfork_child, &c);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  const auto t2 = stamp();
  if (rc == -ENOSYS || rc == -E2BIG || rc == -EINVAL) {
    throw Clone3Refused(fmt::format("clone3{}: {}", cgroup_fd >= 0 ? " CLONE_INTO_CGROUP" : "",
                                    std::strerror(static_cast<int>(-rc))));
  }
  if (rc < 0) {
    throw BenchError(fmt::format("clone3: {}", std::strerror(static_cast<int>(-rc))));
  }
  const auto pid = static_cast<pid_t>(rc);
  if (c.stage != 0) {
    ::waitpid(pid, nullptr, 0);
    ::close(pidfd);
    throw BenchError(fmt::format("the replica child could not {}: {}",
                                 c.stage == 1 ? "attach itself" : "execute /bin/true",
                                 std::strerror(c.err)));
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const auto exited = Clock::now();  // edgeprof's Exit::when
  ::close(pidfd);
  char marks[4096];
  while (::read(phase.read, marks, sizeof marks) > 0) {
  }
  const auto t3 = stamp();
  kept.read_all(true);
  const auto t4 = stamp();
  g_sink = us_ns(ns_of(c.exec_time), ns_of(exited));  // Result::wall_time_s
  check_exit(status, "the default-path replica");
  if (!phases) return;
  phases->add("reset peak + read counters (before)", us_between(t0, t1));
  phases->add(cgroup_fd >= 0 ? "block signals + clone3 (CLONE_INTO_CGROUP) until the child runs"
                             : "block signals + clone3 until the child runs",
              us_ns(ns_of(t1), c.started));
  phases->add("child: PR_SET_PDEATHSIG + getppid", us_ns(c.started, c.checked));
  std::int64_t last = c.checked;
  if (c.nprocs > 0 && c.nprocs <= kMaxProcs) {
    phases->add(fmt::format("child: write \"0\" into {} kept cgroup.procs", c.nprocs),
                us_ns(c.checked, c.attached[c.nprocs - 1]));
    for (size_t i = 0; i < c.nprocs; ++i) {
      phases->add(fmt::format("  cgroup.procs {}", v.labels[i]),
                  us_ns(i == 0 ? c.checked : c.attached[i - 1], c.attached[i]));
    }
    last = c.attached[c.nprocs - 1];
  }
  phases->add("child: reset 64 signal handlers + mask", us_ns(last, c.signals_reset));
  phases->add("child: close_range + clock read", us_ns(c.signals_reset, ns_of(c.exec_time)));
  phases->add("execve until the parent resumes (CLONE_VFORK release)",
              us_ns(ns_of(c.exec_time), ns_of(t2)));
  phases->add("wait for exit (wait4, clock read, close pidfd, read the phase pipe)",
              us_between(t2, t3));
  phases->add("read counters (after)", us_between(t3, t4));
  phases->add("total", us_between(t0, t4));
}

// ------------------------------------ 1. spawn: minimal vfork-style spawns (lower bounds)

struct VforkArgs {
  const int* procs;
  size_t nprocs;
  char* const* argv;
  volatile int err;
  volatile int stage;  // 0 = exec'd, 1 = attach failed, 2 = exec failed
};

// Runs on its own stack in the parent's memory (CLONE_VM), the parent suspended until it execs
// (CLONE_VFORK), as glibc's posix_spawn child does. It puts itself into the slice by writing
// "0" (= the writer) into each kept cgroup.procs, so no pipe handshake is needed. Unlike
// edgeprof's child: no getppid check, no clock read.
int vfork_child(void* p) {
  auto* a = static_cast<VforkArgs*>(p);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (size_t i = 0; i < a->nprocs; ++i) {
    if (::write(a->procs[i], "0", 1) != 1) {
      a->err = errno;
      a->stage = 1;
      ::_exit(127);
    }
  }
  edgeprof::detail::reset_signals();
  ::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec);
  ::execve(a->argv[0], a->argv, environ);
  a->err = errno;
  a->stage = 2;
  ::_exit(127);
}

// How the minimal spawn puts the child into the slice.
enum class Placement {
  self_attach,  // clone(CLONE_VM|CLONE_VFORK); the child writes "0" into each cgroup.procs
  clone3_into,  // clone3(CLONE_VM|CLONE_VFORK|CLONE_INTO_CGROUP): born inside (cgroup v2)
};

// The least a vfork-style spawn into the slice can do: no pidfd (waitpid), no clock read, one
// pread per counter file, none of the library's bookkeeping. Not edgeprof code.
void vfork_spawn(const KeptFds& kept, Placement how, int cgroup_fd = -1) {
  alignas(64) static char stack[64 * 1024];
  char* argv[] = {const_cast<char*>(kTrue), nullptr};
  kept.reset_and_read();
  VforkArgs args{kept.procs().data(), how == Placement::self_attach ? kept.procs().size() : 0, argv,
                 0, 0};
  // As glibc does: no signal handler may run in the child while it shares our memory.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  pid_t pid;
  int clone_errno = 0;
  if (how == Placement::self_attach) {
    pid = ::clone(vfork_child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
    clone_errno = errno;
  } else {
    CloneArgs ca{};
    ca.flags = CLONE_VM | CLONE_VFORK | kCloneIntoCgroup;
    ca.exit_signal = SIGCHLD;
    ca.stack = reinterpret_cast<std::uintptr_t>(stack);
    ca.stack_size = sizeof stack;
    ca.cgroup = static_cast<std::uint64_t>(cgroup_fd);
    long rc = clone3_on_stack(&ca, vfork_child, &args);
    pid = rc < 0 ? -1 : static_cast<pid_t>(rc);
    clone_errno = rc < 0 ? static_cast<int>(-rc) : 0;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) throw BenchError(fmt::format("clone: {}", std::strerror(clone_errno)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kept.read();
  if (args.stage != 0) {
    throw BenchError(fmt::format("the minimal vfork-style child could not {}: {}",
                                 args.stage == 1 ? "attach itself" : "execute /bin/true",
                                 std::strerror(args.err)));
  }
  check_exit(status, "the minimal vfork-style spawn");
}

// Runs `variants` `reps` times, the order rotating every repetition; returns the samples (µs).
// With `idle`, sleeps that long before each sample (a spawn after a quiet spell).
std::vector<std::vector<double>> interleave(const std::vector<std::function<void()>>& variants,
                                            int reps, int warmup,
                                            std::chrono::milliseconds idle = {}) {
  for (int w = 0; w < warmup; ++w) {
    for (const auto& v : variants) {
      check_stop();
      v();
    }
  }
  std::vector<std::vector<double>> samples(variants.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < variants.size(); ++k) {
      check_stop();
      size_t i = (static_cast<size_t>(rep) + k) % variants.size();
      if (idle.count() > 0) std::this_thread::sleep_for(idle);
      auto t0 = Clock::now();
      variants[i]();
      samples[i].push_back(us_between(t0, Clock::now()));
    }
  }
  return samples;
}

struct Options {
  int spawn_reps = 300;
  int create_reps = 100;
  int reads = 10000;
  bool quick = false;
  bool tools = true;
  std::set<std::string> only;  // empty = all
  std::string markdown;
  std::string command_line;
  bool wants(const std::string& what) const { return only.empty() || only.count(what); }
};

std::vector<std::string> stats_row(const std::string& name, const Stats& s, double baseline) {
  return {name,
          std::to_string(s.n),
          fmt_us(s.median),
          fmt_us(s.p90),
          fmt_us(s.p99),
          fmt_us(s.max),
          fmt_us(s.mean),
          baseline > 0 ? fmt_ratio(s.median / baseline) : ""};
}

const std::vector<std::string> kStatsHeader = {
    "variant", "n", "median us", "p90 us", "p99 us", "max us", "mean us", "median / baseline"};

edgeprof::Device bench_device() {
  // As many cores as this process may use, at full speed: the cpuset and quota then leave the
  // child as free to run as posix_spawn's child is, and the comparison is about mechanism.
  int cores = std::max<int>(1, static_cast<int>(edgeprof::host_facts().cpus.size()));
  return edgeprof::make_device("bench", cores, 1.0, "256MiB");
}

// What a clock read costs here: the median gap between back-to-back steady_clock reads, and the
// clocksource behind them (the vDSO reads tsc without a system call, hpet only through one).
struct ClockCost {
  double us = 0;
  std::string source;
};
ClockCost clock_cost() {
  std::vector<double> gaps;
  for (int i = 0; i < 1000; ++i) {
    auto a = Clock::now();
    gaps.push_back(us_between(a, Clock::now()));
  }
  ClockCost c{summarize(gaps).median, "unknown"};
  if (auto s = read_file("/sys/devices/system/clocksource/clocksource0/current_clocksource")) {
    c.source = trim(*s);
  }
  return c;
}

// What Result::placement says, spelt out.
std::string describe_placement(const std::string& placement, size_t nprocs) {
  if (placement == "clone3") {
    return "born inside the slice by clone3(CLONE_VM|CLONE_VFORK|CLONE_INTO_CGROUP), no "
           "cgroup.procs write";
  }
  if (placement == "vfork+attach") {
    return fmt::format(
        "clone3(CLONE_VM|CLONE_VFORK), the child wrote \"0\" into the slice's {} kept "
        "cgroup.procs fds",
        nprocs);
  }
  if (placement == "fork+attach") {
    return fmt::format(
        "the fork fallback: forked, held on a pipe while the parent wrote its pid into {} "
        "cgroup.procs; the fallback replica below is what edgeprof did here",
        nprocs);
  }
  return "unknown";
}

void bench_spawn(const Options& o, const BenchArea* area, Report& report) {
  const edgeprof::Device device = bench_device();
  edgeprof::Slice slice(device);
  const SliceView v = view_of(slice, area);
  const CounterFiles counters = counter_files(v);
  const KeptFds kept(v, counters);
  edgeprof::Command cmd;
  cmd.argv = {kTrue};
  std::string placement;
  const bool v2 = v.mode == edgeprof::CgroupMode::unified;
  const ClockCost clock = clock_cost();

  // On cgroup v2 the clone3 rows put the child in the slice with CLONE_INTO_CGROUP.
  int slice_fd = -1;
  if (v2 && kHaveClone3OnStack) {
    slice_fd = ::open(v.paths.at(0).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (slice_fd < 0)
      throw BenchError(fmt::format("open {}: {}", v.paths[0], std::strerror(errno)));
  }
  struct FdCloser {
    int& fd;
    ~FdCloser() {
      if (fd >= 0) ::close(fd);
    }
  } close_slice_fd{slice_fd};
  // Whether the kernel takes edgeprof's default path (clone3 with CLONE_VM|CLONE_VFORK, and
  // CLONE_INTO_CGROUP on v2); one untimed run of the replica tells.
  std::string no_clone3;
  if (!kHaveClone3OnStack) {
    no_clone3 = "not x86-64: edgeprof uses its fork fallback here";
  } else {
    try {
      replica_vfork_spawn(v, kept, slice_fd, nullptr);
    } catch (const Clone3Refused& e) {
      no_clone3 = fmt::format("the kernel refused {}: edgeprof uses its fork fallback here",
                              e.what());
    }
  }
  const bool clone3 = no_clone3.empty();

  const std::string default_path =
      v2 ? "replica of edgeprof's clone3 path (CLONE_VM|CLONE_VFORK|CLONE_INTO_CGROUP)"
         : "replica of edgeprof's vfork+attach path (clone3 CLONE_VM|CLONE_VFORK)";
  struct Variant {
    std::string name;
    std::function<void()> run;
    bool after_idle;  // also run in the 50 ms-idle benchmark
  };
  Phases vfork_phases, fork_phases, cold_vfork_phases, cold_fork_phases;
  Phases* vfork_record = nullptr;
  Phases* fork_record = nullptr;
  std::vector<Variant> list;
  list.push_back({"posix_spawn + waitpid (baseline)",
                  [] { check_exit(spawn_and_wait({kTrue}), "posix_spawn"); }, true});
  list.push_back({"Slice::spawn(/bin/true).wait(), reused slice",
                  [&] {
                    edgeprof::Result r = slice.spawn(cmd).wait();
                    if (!r.ok()) {
                      check_stop();
                      throw BenchError(fmt::format("Slice::spawn({}) did not succeed: {}", kTrue,
                                                   edgeprof::to_text(r)));
                    }
                    placement = r.placement;
                  },
                  true});
  // The spawn mechanism alone: no sampler thread, no samples (SpawnOptions::sample_interval 0).
  edgeprof::SpawnOptions unsampled;
  unsampled.sample_interval = std::chrono::nanoseconds(0);
  list.push_back({"Slice::spawn(/bin/true, sampling off).wait(), reused slice",
                  [&] {
                    edgeprof::Result r = slice.spawn(cmd, unsampled).wait();
                    if (!r.ok()) {
                      check_stop();
                      throw BenchError(fmt::format("Slice::spawn({}) did not succeed: {}", kTrue,
                                                   edgeprof::to_text(r)));
                    }
                  },
                  true});
  if (clone3) {
    list.push_back({default_path + ", untimed",
                    [&] { replica_vfork_spawn(v, kept, slice_fd, nullptr); }, false});
    list.push_back({default_path + ", timed phases",
                    [&] { replica_vfork_spawn(v, kept, slice_fd, vfork_record); },
                    true});
  }
  list.push_back({"replica of edgeprof's fork fallback (fork + pipe + parent attach), timed phases",
                  [&] { replica_spawn(v, kept, true, fork_record); }, true});
  list.push_back({"fork fallback without cgroup work (fork + pipe + exec)",
                  [&] { replica_spawn(v, kept, false, nullptr); }, false});
  list.push_back({"minimal vfork+attach: clone(CLONE_VM|CLONE_VFORK), kept fds, waitpid",
                  [&] { vfork_spawn(kept, Placement::self_attach); }, true});
  if (clone3 && slice_fd >= 0) {
    list.push_back(
        {"minimal clone3 CLONE_VM|CLONE_VFORK|CLONE_INTO_CGROUP, kept fds, waitpid",
         [&] { vfork_spawn(kept, Placement::clone3_into, slice_fd); }, true});
  }
  std::vector<std::function<void()>> variants;
  for (const Variant& x : list) variants.push_back(x.run);

  std::printf("\n[1/3] spawn: %d repetitions of %zu variants (interleaved)...\n", o.spawn_reps,
              variants.size());
  std::fflush(stdout);
  auto samples = interleave(variants, 0, o.quick ? 2 : 10);  // warm-up, not recorded
  vfork_record = &vfork_phases;
  fork_record = &fork_phases;
  samples = interleave(variants, o.spawn_reps, 0);

  const double base = summarize(samples[0]).median;
  Table t{
      fmt::format("Spawn /bin/true: Slice::spawn vs posix_spawn ({})", edgeprof::to_string(v.mode)),
      kStatsHeader,
      {},
      {}};
  for (size_t i = 0; i < list.size(); ++i) {
    t.rows.push_back(stats_row(list[i].name, summarize(samples[i]), i == 0 ? 0 : base));
  }
  const double sampled_ratio = summarize(samples[1]).median / base;
  const double ratio = summarize(samples[2]).median / base;
  const double target = v2 ? 1.1 : 1.5;
  t.notes.push_back(fmt::format(
      "Slice::spawn took its \"{}\" path: {}; device: {} cores x {} speed, {} (cpuset {}, quota "
      "{}/{} us)",
      placement, describe_placement(placement, v.paths.size()), device.cores, device.core_speed,
      edgeprof::format_size(device.memory_bytes), edgeprof::format_cpu_list(slice.plan().cpus),
      slice.plan().cpu_quota_us, slice.plan().cpu_period_us));
  if (!clone3) t.notes.push_back("clone3 rows left out: " + no_clone3);
  t.notes.push_back(
      "the replicas issue the same system calls as src/sys/spawn.cpp (default path: try_vfork + "
      "child_main; fallback: fork_and_release) and the backend's counter work (pread on kept "
      "fds, the peak reset as the backend does it). The untimed replica reads the clock only "
      "where edgeprof does (twice: the child just before execve, the parent when the pidfd is "
      "readable); the timed ones add a read between the steps.");
  t.notes.push_back(
      "the minimal rows are lower bounds, not edgeprof code: the child shares the parent's "
      "memory until it execs (CLONE_VM|CLONE_VFORK, as posix_spawn) and enters the slice by "
      "writing \"0\" into the kept cgroup.procs fds or is born inside (clone3); no pidfd "
      "(waitpid), no clock read, one pread per counter file, no library bookkeeping");
  t.notes.push_back(fmt::format(
      "a clock read (back-to-back steady_clock::now) costs {} us here (clocksource {})",
      fmt_us(clock.us), clock.source));
  t.notes.push_back(
      "the default Slice::spawn also samples the slice every 10 ms (SpawnOptions::sample_interval):"
      " a sampler thread, a sample before the child is released and one after it is reaped; "
      "\"sampling off\" is the spawn mechanism alone, as the target was set");
  t.notes.push_back(fmt::format(
      "target: median <= {}x posix_spawn on cgroup {} (sampling off): {} ({}); with the default "
      "sampling: {}",
      target, v2 ? "v2" : "v1", ratio <= target ? "MET" : "MISSED", fmt_ratio(ratio),
      fmt_ratio(sampled_ratio)));
  report.add(std::move(t));

  if (clone3) {
    Table p = phase_table(
        fmt::format("Where the time goes: phases of the {} ({})", default_path,
                    edgeprof::to_string(v.mode)),
        vfork_phases, "total");
    // Parent: 5 stamps; child: 3, and one per cgroup.procs write when it attaches itself.
    const size_t extra_reads = 8 + (slice_fd >= 0 ? 0 : kept.procs().size());
    p.notes.push_back(fmt::format(
        "Rows named \"child:\" are timestamps the child writes into the parent's memory "
        "(CLONE_VM); the parent sleeps from clone3 until the child's execve has replaced its "
        "memory (CLONE_VFORK). Indented rows split the row above. The timed replica reads the "
        "clock {} times more per run than the untimed one (which reads it where edgeprof does).",
        extra_reads));
    report.add(std::move(p));
  }
  Table p = phase_table(
      fmt::format("Where the time goes: phases of the fork fallback replica ({})",
                  edgeprof::to_string(v.mode)),
      fork_phases, "total");
  p.notes.push_back(
      "The replica issues the same system calls as edgeprof's fork fallback (src/sys/spawn.cpp "
      "fork_and_release; used on other architectures and kernels before 5.3 / 5.7), with a clock "
      "read between the steps. Indented rows split the row above: single cgroup.procs writes, "
      "and the child's side (timestamps it writes into a shared page).");
  report.add(std::move(p));

  // After a quiet spell, as when a profiler starts one long workload: nothing has touched the
  // cgroup locks for a while.
  const int cold_reps = std::max(3, o.spawn_reps / 10);
  const auto idle = std::chrono::milliseconds(50);
  std::vector<std::function<void()>> cold;
  std::vector<std::string> cold_names;
  for (const Variant& x : list) {
    if (!x.after_idle) continue;
    cold.push_back(x.run);
    cold_names.push_back(x.name);
  }
  std::printf("\n[1/3] spawn after %lld ms idle: %d repetitions of %zu variants...\n",
              static_cast<long long>(idle.count()), cold_reps, cold.size());
  std::fflush(stdout);
  vfork_record = &cold_vfork_phases;
  fork_record = &cold_fork_phases;
  auto cold_samples = interleave(cold, cold_reps, 0, idle);
  vfork_record = fork_record = nullptr;
  const double cold_base = summarize(cold_samples[0]).median;
  Table c{fmt::format("Spawn after {} ms idle ({})", idle.count(), edgeprof::to_string(v.mode)),
          kStatsHeader,
          {},
          {}};
  for (size_t i = 0; i < cold.size(); ++i) {
    c.rows.push_back(stats_row(cold_names[i], summarize(cold_samples[i]), i == 0 ? 0 : cold_base));
  }
  auto phase_rows = [&c](const char* who, const Phases& phases) {
    for (const auto& [name, values] : phases.all()) {
      if (name.find(files::kProcs) == std::string::npos &&
          name.find("clone3") == std::string::npos) {
        continue;
      }
      Stats s = summarize(values);
      c.rows.push_back({fmt::format("{} phase: {}", who, name[0] == ' ' ? name.substr(2) : name),
                        std::to_string(s.n), fmt_us(s.median), fmt_us(s.p90), fmt_us(s.p99),
                        fmt_us(s.max), fmt_us(s.mean), ""});
    }
  };
  if (clone3) phase_rows("default-path replica", cold_vfork_phases);
  phase_rows("fork fallback replica", cold_fork_phases);
  c.notes.push_back(fmt::format(
      "each sample is preceded by {} ms of sleep; the order of the variants rotates as above",
      idle.count()));
  report.add(std::move(c));
}

// ------------------------------------------------------ 2. create/remove

// Paths (relative to each hierarchy's root) of a cgroup-tools group `name` in the container:
// controllers that share a path are grouped, as in "-g cpu,cpuacct:/path".
struct ToolGroup {
  std::vector<std::pair<std::vector<std::string>, std::string>> buckets;  // controllers, path
  std::vector<std::string> dirs;                                          // absolute
  std::string cpuset_path;                                                // relative

  std::vector<std::string> g_args() const {
    std::vector<std::string> out;
    for (const auto& [controllers, path] : buckets) {
      out.push_back("-g");
      out.push_back(fmt::format("{}:{}", fmt::join(controllers, ","), path));
    }
    return out;
  }
  // cgdelete 2.0.2 removes only the first controller of each -g (see bench_create): one call per
  // controller position, each call taking one controller of every path.
  std::vector<std::vector<std::string>> delete_calls() const {
    size_t most = 0;
    for (const auto& b : buckets) most = std::max(most, b.first.size());
    std::vector<std::vector<std::string>> calls;
    for (size_t k = 0; k < most; ++k) {
      std::vector<std::string> call = {"/usr/bin/cgdelete"};
      for (const auto& [controllers, path] : buckets) {
        if (k < controllers.size()) {
          call.push_back("-g");
          call.push_back(controllers[k] + ":" + path);
        }
      }
      calls.push_back(std::move(call));
    }
    return calls;
  }
};

ToolGroup tool_group(const BenchArea& area, const std::string& name) {
  ToolGroup g;
  for (const std::string& c : kToolControllers) {
    const BenchArea::Hierarchy* h = area.find(c);
    if (!h) continue;
    const std::string rel = join(h->container, name);
    auto it = std::find_if(g.buckets.begin(), g.buckets.end(),
                           [&](const auto& b) { return b.second == rel; });
    if (it == g.buckets.end()) {
      g.buckets.push_back({{c}, rel});
    } else {
      it->first.push_back(c);
    }
    const std::string dir = join(h->mount, rel);
    if (std::find(g.dirs.begin(), g.dirs.end(), dir) == g.dirs.end()) g.dirs.push_back(dir);
    if (c == "cpuset") g.cpuset_path = rel;
  }
  return g;
}

// The slice name's owner start time: src/run/slice.cpp reads /proc/self/stat once per process (per
// pid), so only the replica's first slice pays for it.
void read_own_start_time_once() {
  static pid_t done_for = -1;
  if (done_for == ::getpid()) return;
  (void)read_file(fmt::format(files::kProcTidStat, "self"));
  done_for = ::getpid();
}

// Replica of Slice construction + destruction on cgroup v1 (src/run/slice.cpp, src/cgroup/v1.cpp),
// timed step by step. Creates edgeprof-bench-r<N> in the container.
void replica_create_v1(const BenchArea& area, const edgeprof::Device& device,
                       const std::string& name, Phases& ph) {
  auto T = [] { return Clock::now(); };
  auto t0 = T();
  edgeprof::HostFacts facts = edgeprof::host_facts();
  auto t1 = T();
  edgeprof::EmulationPlan plan = edgeprof::plan_emulation(device, facts);
  auto t2 = T();
  (void)read_file(files::kProcSelfCgroup);
  auto t3 = T();
  for (const auto& h : area.hierarchies()) {
    for (const std::string& sub : subdirs(h.dir())) {
      // The sweep reads the owner's start time for every edgeprof slice it finds.
      if (sub.rfind("edgeprof-", 0) == 0 && sub.size() > 9 && std::isdigit(sub[9])) {
        (void)read_file(fmt::format(files::kProcTidStat, std::atoi(sub.c_str() + 9)));
      }
    }
  }
  auto t4 = T();
  read_own_start_time_once();
  auto t5 = T();
  std::vector<std::string> dirs;
  std::vector<double> mk;
  for (const auto& h : area.hierarchies()) {
    auto a = T();
    std::string dir = join(h.dir(), name);
    if (::mkdir(dir.c_str(), 0755) != 0) {
      int err = errno;
      for (const auto& d : dirs) ::rmdir(d.c_str());
      throw BenchError(fmt::format("cannot create {}: {}", dir, std::strerror(err)));
    }
    mk.push_back(us_between(a, T()));
    dirs.push_back(dir);
  }
  auto t6 = T();
  auto dir_of = [&](const char* controller) -> std::optional<std::string> {
    for (size_t i = 0; i < dirs.size(); ++i) {
      const auto& cs = area.hierarchies()[i].controllers;
      if (std::find(cs.begin(), cs.end(), controller) != cs.end()) return dirs[i];
    }
    return std::nullopt;
  };
  try {
    if (auto d = dir_of("cpuset")) {
      auto mems = read_file(join(parent_dir(*d), files::v1::kCpusetMems));
      write_or_throw(join(*d, files::v1::kCpusetMems), mems ? *mems : "0");
      write_or_throw(join(*d, files::v1::kCpusetCpus), edgeprof::format_cpu_list(plan.cpus));
    }
    if (auto d = dir_of("cpu")) {
      write_or_throw(join(*d, files::v1::kCpuCfsPeriodUs), std::to_string(plan.cpu_period_us));
      write_or_throw(join(*d, files::v1::kCpuCfsQuotaUs), std::to_string(plan.cpu_quota_us));
    }
    if (auto d = dir_of("memory")) {
      write_or_throw(join(*d, files::v1::kMemoryLimitInBytes),
                     std::to_string(plan.memory_max_bytes));
      if (exists(join(*d, files::v1::kMemoryMemswLimitInBytes))) {
        write_or_throw(join(*d, files::v1::kMemoryMemswLimitInBytes),
                       std::to_string(plan.memory_max_bytes + plan.swap_max_bytes));
      } else {
        (void)read_file(files::kProcMeminfo);
      }
    }
  } catch (...) {
    for (const auto& d : dirs) ::rmdir(d.c_str());
    throw;
  }
  auto t7 = T();
  // Destruction: kill_all lists every hierarchy's cgroup.procs and freezes, kills and thaws
  // only when a process is there (never here: nothing ran in the slice); then rmdir.
  for (const auto& d : dirs) (void)read_file(join(d, files::kProcs));
  auto t8 = T();
  std::vector<double> rm;
  for (const auto& d : dirs) {
    auto a = T();
    if (::rmdir(d.c_str()) != 0) {
      int err = errno;
      throw BenchError(fmt::format("cannot remove {}: {}", d, std::strerror(err)));
    }
    rm.push_back(us_between(a, T()));
  }
  auto t9 = T();
  ph.add("host_facts(): affinity, sysinfo, the working directory's disk", us_between(t0, t1));
  ph.add("plan_emulation()", us_between(t1, t2));
  ph.add("backend: read /proc/self/cgroup", us_between(t2, t3));
  ph.add(fmt::format("stale sweep: list {} parent dirs", area.hierarchies().size()),
         us_between(t3, t4));
  ph.add("slice name: own start time (/proc/self/stat once per process)", us_between(t4, t5));
  ph.add(fmt::format("mkdir x{}", dirs.size()), us_between(t5, t6));
  for (size_t i = 0; i < mk.size(); ++i) {
    ph.add(fmt::format("  mkdir {}", fmt::join(area.hierarchies()[i].controllers, ",")), mk[i]);
  }
  ph.add("apply limits (cpuset, cfs, memory, memsw)", us_between(t6, t7));
  ph.add(fmt::format("kill_all: read {} cgroup.procs (empty: no freezing)", dirs.size()),
         us_between(t7, t8));
  ph.add(fmt::format("rmdir x{}", dirs.size()), us_between(t8, t9));
  for (size_t i = 0; i < rm.size(); ++i) {
    ph.add(fmt::format("  rmdir {}", fmt::join(area.hierarchies()[i].controllers, ",")), rm[i]);
  }
  ph.add("total", us_between(t0, t9));
}

// Replica of Slice construction + destruction on cgroup v2 (src/cgroup/v2.cpp).
void replica_create_v2(const std::string& parent, const edgeprof::Device& device,
                       const std::string& name, Phases& ph) {
  auto T = [] { return Clock::now(); };
  auto t0 = T();
  edgeprof::HostFacts facts = edgeprof::host_facts();
  auto t1 = T();
  edgeprof::EmulationPlan plan = edgeprof::plan_emulation(device, facts);
  auto t2 = T();
  (void)read_file(files::kProcSelfCgroup);
  (void)read_file(join(parent, files::v2::kControllers));
  (void)read_file(join(parent, files::v2::kSubtreeControl));
  auto t3 = T();
  for (const std::string& sub : subdirs(parent)) {
    if (sub.rfind("edgeprof-", 0) == 0 && sub.size() > 9 && std::isdigit(sub[9])) {
      (void)read_file(fmt::format(files::kProcTidStat, std::atoi(sub.c_str() + 9)));
    }
  }
  auto t4 = T();
  read_own_start_time_once();
  auto t5 = T();
  const std::string dir = join(parent, name);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    throw BenchError(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  auto t6 = T();
  try {
    if (exists(join(dir, files::v2::kCpusetCpus))) {
      write_or_throw(join(dir, files::v2::kCpusetCpus), edgeprof::format_cpu_list(plan.cpus));
    }
    write_or_throw(join(dir, files::v2::kCpuMax),
                   fmt::format("{} {}", plan.cpu_quota_us, plan.cpu_period_us));
    write_or_throw(join(dir, files::v2::kMemoryMax), std::to_string(plan.memory_max_bytes));
    if (exists(join(dir, files::v2::kMemorySwapMax))) {
      write_or_throw(join(dir, files::v2::kMemorySwapMax), std::to_string(plan.swap_max_bytes));
    } else {
      (void)read_file(files::kProcMeminfo);
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::rmdir(dir.c_str());
    throw;
  }
  auto t7 = T();
  // kill_all: cgroup.kill only when a process is there (never here: nothing ran in the slice).
  (void)read_file(join(dir, files::kProcs));
  auto t8 = T();
  if (fd >= 0) ::close(fd);
  if (::rmdir(dir.c_str()) != 0) {
    throw BenchError(fmt::format("cannot remove {}: {}", dir, std::strerror(errno)));
  }
  auto t9 = T();
  ph.add("host_facts(): affinity, sysinfo, the working directory's disk", us_between(t0, t1));
  ph.add("plan_emulation()", us_between(t1, t2));
  ph.add("backend: /proc/self/cgroup, cgroup.controllers, subtree_control", us_between(t2, t3));
  ph.add("stale sweep: list the parent dir", us_between(t3, t4));
  ph.add("slice name: own start time (/proc/self/stat once per process)", us_between(t4, t5));
  ph.add("mkdir + open dir fd", us_between(t5, t6));
  ph.add("apply limits (cpuset, cpu.max, memory.max, swap.max)", us_between(t6, t7));
  ph.add("kill_all: read cgroup.procs (empty: no cgroup.kill)", us_between(t7, t8));
  ph.add("close + rmdir", us_between(t8, t9));
  ph.add("total", us_between(t0, t9));
}

void bench_create(const Options& o, const BenchArea* area, Report& report) {
  const edgeprof::Device device = bench_device();
  std::string parent_v2;
  edgeprof::CgroupMode mode = edgeprof::cgroup_mode();
  if (mode == edgeprof::CgroupMode::unified) {
    edgeprof::Slice probe(device);
    parent_v2 = parent_dir(probe.paths().at(0));
  }
  edgeprof::Command cmd;
  cmd.argv = {kTrue};

  std::string no_tools;
  if (!o.tools) {
    no_tools = "--no-tools was given";
  } else if (!area) {
    no_tools = "cgroup-tools are compared on cgroup v1 only";
  } else {
    for (const char* tool :
         {"/usr/bin/cgcreate", "/usr/bin/cgdelete", "/usr/bin/cgexec", "/usr/bin/cgset"}) {
      if (!executable(tool)) {
        no_tools =
            fmt::format("{} is not installed{}", tool,
                        std::getenv("EDGEPROF_IN_VM") ? " (not in the VM's initramfs)"
                                                      : " (apt-get install -y cgroup-tools)");
        break;
      }
    }
  }
  const bool tools = no_tools.empty();

  int serial = 0;
  size_t leftovers = 0, single_calls = 0;
  Phases phases;
  bool record = false;
  std::vector<std::string> names;
  std::vector<std::function<void()>> variants;

  names.push_back("edgeprof: { Slice s(device); }");
  variants.push_back([&] { edgeprof::Slice s(device); });
  names.push_back("edgeprof: Slice + spawn(/bin/true) + wait + remove");
  Phases with_spawn;
  variants.push_back([&] {
    auto t0 = Clock::now();
    Clock::time_point t1, t2;
    {
      edgeprof::Slice s(device);
      t1 = Clock::now();
      edgeprof::Result r = s.spawn(cmd).wait();
      t2 = Clock::now();
      if (!r.ok()) {
        check_stop();
        throw BenchError("Slice::spawn(/bin/true) failed: " + edgeprof::to_text(r));
      }
    }
    auto t3 = Clock::now();
    if (!record) return;
    with_spawn.add("Slice constructor", us_between(t0, t1));
    with_spawn.add("spawn + wait (first child in a new slice)", us_between(t1, t2));
    with_spawn.add("Slice destructor (kill_all + rmdir)", us_between(t2, t3));
    with_spawn.add("total", us_between(t0, t3));
  });
  names.push_back("replica of Slice create + remove (phases below)");
  variants.push_back([&] {
    const std::string name = fmt::format("edgeprof-bench-r{}", ++serial);
    Phases scratch;
    if (area) {
      replica_create_v1(*area, device, name, record ? phases : scratch);
    } else {
      replica_create_v2(parent_v2, device, name, record ? phases : scratch);
    }
  });
  if (tools) {
    // A shell-script profiler: cgcreate ...; cgdelete ... (as one usually writes it).
    names.push_back("cgcreate + cgdelete (one call, as usually written)");
    variants.push_back([&] {
      ToolGroup g = tool_group(*area, fmt::format("edgeprof-bench-t{}", ++serial));
      std::vector<std::string> create = {"/usr/bin/cgcreate"}, remove = {"/usr/bin/cgdelete"};
      for (const auto& a : g.g_args()) {
        create.push_back(a);
        remove.push_back(a);
      }
      run_tool(create);
      run_tool(remove);
      // Not timed separately: what cgdelete left (it exits 0 regardless) is removed here.
      ++single_calls;
      for (const std::string& d : g.dirs) {
        if (exists(d)) {
          ++leftovers;
          ::rmdir(d.c_str());
        }
      }
    });
    names.push_back("cgcreate + cgdelete per hierarchy (baseline)");
    variants.push_back([&] {
      ToolGroup g = tool_group(*area, fmt::format("edgeprof-bench-t{}", ++serial));
      std::vector<std::string> create = {"/usr/bin/cgcreate"};
      for (const auto& a : g.g_args()) create.push_back(a);
      run_tool(create);
      for (const auto& call : g.delete_calls()) run_tool(call);
      for (const std::string& d : g.dirs) {
        if (exists(d)) throw BenchError("cgdelete per hierarchy left " + d + " behind");
      }
    });
    names.push_back("cgcreate + cgset cpuset + cgexec /bin/true + cgdelete (baseline)");
    variants.push_back([&] {
      ToolGroup g = tool_group(*area, fmt::format("edgeprof-bench-t{}", ++serial));
      std::vector<std::string> create = {"/usr/bin/cgcreate"}, exec = {"/usr/bin/cgexec"};
      for (const auto& a : g.g_args()) {
        create.push_back(a);
        exec.push_back(a);
      }
      exec.push_back(kTrue);
      run_tool(create);
      if (!g.cpuset_path.empty()) {
        const BenchArea::Hierarchy* h = area->find("cpuset");
        const std::string parent = join(h->mount, h->container);
        run_tool({"/usr/bin/cgset", "-r",
                  std::string(files::v1::kCpusetCpus) + "=" +
                      trim(read_file(join(parent, files::v1::kCpusetCpus)).value_or("0")), "-r",
                  std::string(files::v1::kCpusetMems) + "=" +
                      trim(read_file(join(parent, files::v1::kCpusetMems)).value_or("0")),
                  g.cpuset_path});
      }
      run_tool(exec);
      for (const auto& call : g.delete_calls()) run_tool(call);
    });
  }

  std::printf("\n[2/3] create/remove: %d repetitions of %zu variants (interleaved)...\n",
              o.create_reps, variants.size());
  std::fflush(stdout);
  auto samples = interleave(variants, 0, o.quick ? 1 : 3);
  record = true;
  leftovers = single_calls = 0;
  samples = interleave(variants, o.create_reps, 0);

  auto stats = [&](size_t i) { return summarize(samples[i]); };
  const double base_create = tools ? stats(4).median : 0;
  const double base_spawn = tools ? stats(5).median : 0;
  Table t{fmt::format("Slice create + remove vs cgroup-tools ({})", edgeprof::to_string(mode)),
          kStatsHeader,
          {},
          {}};
  if (tools) {
    t.rows.push_back(stats_row(names[3], stats(3), base_create));
    t.rows.push_back(stats_row(names[4], stats(4), 0));
  }
  t.rows.push_back(stats_row(names[0], stats(0), base_create));
  t.rows.push_back(stats_row(names[2], stats(2), base_create));
  if (tools) t.rows.push_back(stats_row(names[5], stats(5), 0));
  t.rows.push_back(stats_row(names[1], stats(1), base_spawn));
  if (tools) {
    t.notes.push_back(fmt::format(
        "cgroup-tools groups get cpu,cpuacct,cpuset,pids at the container path and memory at "
        "{} (our own memory cgroup); edgeprof also creates freezer and blkio and writes the device's "
        "limits, which the cgroup-tools rows do not (only cpuset.cpus/mems, needed before "
        "cgexec can put a task in the cpuset).",
        area->find("memory") ? join(area->find("memory")->container, "...") : "-"));
    t.notes.push_back(fmt::format(
        "Debian's cgdelete (libcgroup 2.0.2) removed only the first controller of each -g "
        "group and still exited 0: it left {} of {} directories behind in {} calls ({} per "
        "call); the per-hierarchy rows call it once per controller position ({} calls).",
        leftovers, single_calls * tool_group(*area, "x").dirs.size(), single_calls,
        single_calls ? fmt::format("{:.1f}", double(leftovers) / double(single_calls)) : "-",
        tool_group(*area, "x").delete_calls().size()));
  } else {
    t.notes.push_back("cgroup-tools comparison skipped: " + no_tools);
  }
  const double create_ms = stats(0).median / 1000.0;
  if (mode != edgeprof::CgroupMode::unified) {
    t.notes.push_back(
        fmt::format("target: Slice create + remove median < 1 ms on the host: {} "
                    "({:.3f} ms)",
                    create_ms < 1.0 ? "MET" : "MISSED", create_ms));
  } else {
    t.notes.push_back(
        fmt::format("Slice create + remove median {:.3f} ms (no target in the VM; "
                    "TCG timings are emulated)",
                    create_ms));
  }
  report.add(std::move(t));
  report.add(phase_table(fmt::format("Where the time goes: Slice create + remove replica ({})",
                                     edgeprof::to_string(mode)),
                         phases, "total"));
  report.add(phase_table(fmt::format("Where the time goes: Slice + spawn + wait + remove ({})",
                                     edgeprof::to_string(mode)),
                         with_spawn, "total"));
}

// ------------------------------------------------------ 3. reads

struct ReadTarget {
  std::string label;       // "cpu.stat"
  std::string path;        // absolute
  std::string controller;  // for libcgroup
  std::string cgroup;      // path relative to the hierarchy root, for libcgroup
  std::string file;        // file name
};

enum class Method { pread_kept, open_read_close, lcg_get, lcg_iter };
const char* method_name(Method m) {
  switch (m) {
    case Method::pread_kept:
      return "pread on a kept fd";
    case Method::open_read_close:
      return "open + read + close";
    case Method::lcg_get:
      return "libcgroup cgroup_get_cgroup + get_value_string";
    case Method::lcg_iter:
      return "libcgroup cgroup_read_value_begin/next/end";
  }
  return "?";
}

std::string lcg_error(int rc) {
  // cgroup_strerror(ECGNONEMPTY) crashes in 2.0.2 (DESIGN.md): print the number for that one.
  if (rc == ECGNONEMPTY) return fmt::format("libcgroup error {}", rc);
  return fmt::format("libcgroup error {}: {}", rc, cgroup_strerror(rc));
}

// One read by `m`; returns the bytes read (or throws with why it failed).
size_t read_once(Method m, const ReadTarget& t, int kept_fd) {
  char buf[4096];
  switch (m) {
    case Method::pread_kept: {
      ssize_t n = ::pread(kept_fd, buf, sizeof buf, 0);
      if (n <= 0) throw BenchError(fmt::format("pread {}: {}", t.path, std::strerror(errno)));
      return static_cast<size_t>(n);
    }
    case Method::open_read_close: {
      int fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw BenchError(fmt::format("open {}: {}", t.path, std::strerror(errno)));
      size_t total = 0;
      for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        total += static_cast<size_t>(n);
      }
      ::close(fd);
      return total;
    }
    case Method::lcg_get: {
      cgroup* cg = cgroup_new_cgroup(t.cgroup.c_str());
      if (!cg) throw BenchError("cgroup_new_cgroup failed");
      int rc = cgroup_get_cgroup(cg);
      char* value = nullptr;
      if (rc == 0) {
        cgroup_controller* c = cgroup_get_controller(cg, t.controller.c_str());
        rc = c ? cgroup_get_value_string(c, t.file.c_str(), &value) : ECGROUPNOTEXIST;
      }
      cgroup_free(&cg);
      if (rc != 0 || !value) {
        std::free(value);
        throw BenchError(
            fmt::format("cgroup_get_cgroup({}) / {}: {}", t.cgroup, t.file, lcg_error(rc)));
      }
      size_t len = std::strlen(value);
      std::free(value);
      return len;
    }
    case Method::lcg_iter: {
      void* handle = nullptr;
      std::string name = t.file;
      char line[256];
      size_t total = 0;
      int rc = cgroup_read_value_begin(t.controller.c_str(), t.cgroup.c_str(), name.data(), &handle,
                                       line, static_cast<int>(sizeof line));
      while (rc == 0) {
        total += std::strlen(line);
        rc = cgroup_read_value_next(&handle, line, static_cast<int>(sizeof line));
      }
      if (handle) cgroup_read_value_end(&handle);
      if (rc != ECGEOF) {
        throw BenchError(
            fmt::format("cgroup_read_value_begin({}, {}): {}", t.cgroup, t.file, lcg_error(rc)));
      }
      return total;
    }
  }
  return 0;
}

void bench_reads(const Options& o, Report& report) {
  const edgeprof::Device device = bench_device();
  edgeprof::Slice slice(device);
  const edgeprof::CgroupMode mode = slice.mode();
  const bool v2 = mode == edgeprof::CgroupMode::unified;
  const auto mounts = v1_mounts();

  // libcgroup is initialised once, as an application would.
  int init = cgroup_init();

  std::vector<ReadTarget> targets;
  auto add = [&](const std::string& file, const std::string& controller) {
    for (const std::string& dir : slice.paths()) {
      const std::string path = join(dir, file);
      if (!exists(path)) continue;
      std::string mount = kCgroupRoot;
      if (!v2) {
        auto m = mounts.find(controller);
        if (m == mounts.end()) continue;
        mount = m->second;
      }
      if (dir.rfind(mount + "/", 0) != 0) continue;
      std::string rel = dir.substr(mount.size());
      targets.push_back({file, path, controller, rel.empty() ? "/" : rel, file});
      return;
    }
  };
  add(files::v2::kCpuStat, "cpu");
  add(v2 ? files::v2::kMemoryCurrent : files::v1::kMemoryUsageInBytes, "memory");
  if (targets.empty()) throw BenchError("the slice has neither cpu.stat nor a memory usage file");

  std::vector<Method> methods = {Method::pread_kept, Method::open_read_close, Method::lcg_get,
                                 Method::lcg_iter};
  Table t{fmt::format("{} reads of a slice stat file ({})", o.reads, edgeprof::to_string(mode)),
          {"file", "method", "n", "mean us", "median us", "p99 us", "mean / pread"},
          {},
          {}};

  // Clock overhead, included in every sample below.
  std::vector<double> empty;
  for (int i = 0; i < 10000; ++i) {
    auto a = Clock::now();
    empty.push_back(us_between(a, Clock::now()));
  }
  const Stats clock = summarize(empty);

  std::printf(
      "\n[3/3] reads: %d reads x %zu methods x %zu files (interleaved in blocks of "
      "100)...\n",
      o.reads, methods.size(), targets.size());
  std::fflush(stdout);
  for (const ReadTarget& target : targets) {
    int fd = ::open(target.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw BenchError(fmt::format("open {}: {}", target.path, std::strerror(errno)));
    std::vector<Method> usable;
    std::vector<std::string> why;
    for (Method m : methods) {
      try {
        if ((m == Method::lcg_get || m == Method::lcg_iter) && init != 0) {
          throw BenchError("cgroup_init: " + lcg_error(init));
        }
        read_once(m, target, fd);
        usable.push_back(m);
      } catch (const BenchError& e) {
        why.push_back(fmt::format("{}: {}", method_name(m), e.what()));
      }
    }
    std::vector<std::vector<double>> samples(usable.size());
    const int block = std::min(100, o.reads);
    for (int done = 0, round = 0; done < o.reads; done += block, ++round) {
      for (size_t k = 0; k < usable.size(); ++k) {
        check_stop();
        size_t i = (static_cast<size_t>(round) + k) % usable.size();
        for (int r = 0; r < block && done + r < o.reads; ++r) {
          auto a = Clock::now();
          read_once(usable[i], target, fd);
          samples[i].push_back(us_between(a, Clock::now()));
        }
      }
    }
    ::close(fd);
    double pread_mean = 0;
    for (size_t i = 0; i < usable.size(); ++i) {
      Stats s = summarize(samples[i]);
      if (usable[i] == Method::pread_kept) pread_mean = s.mean;
      t.rows.push_back({target.label, method_name(usable[i]), std::to_string(s.n), fmt_us(s.mean),
                        fmt_us(s.median), fmt_us(s.p99),
                        pread_mean > 0 ? fmt_ratio(s.mean / pread_mean) : ""});
    }
    for (const auto& w : why) t.notes.push_back(fmt::format("{}: skipped, {}", target.label, w));
  }
  t.notes.push_back(fmt::format(
      "Each sample includes one clock read pair ({} us median). libcgroup: cgroup_init once; "
      "cgroup_get_cgroup stats every file and reads every controller file in each hierarchy "
      "where the group's path exists, then the getter returns at most 99 bytes of the file.",
      fmt_us(clock.median)));
  report.add(std::move(t));
}

// ------------------------------------------------------------------------------ main

void usage(FILE* to) {
  std::fprintf(to,
               "usage: edgeprof_bench_spawn [--quick] [--spawn-reps N] [--create-reps N]\n"
               "                            [--reads N] [--only spawn,create,reads]\n"
               "                            [--no-tools] [--markdown FILE]\n"
               "\n"
               "Measures what an edgeprof Slice costs: spawning /bin/true in a slice against\n"
               "posix_spawn, creating and removing a slice against Debian's cgroup-tools, and\n"
               "reading a slice's stat file three ways (see docs/benchmarks.md). Needs root.\n"
               "\n"
               "  --spawn-reps N    repetitions of each spawn variant (default 300)\n"
               "  --create-reps N   repetitions of each create/remove variant (default 100)\n"
               "  --reads N         reads per file and method (default 10000)\n"
               "  --quick           a smoke run: 20 / 10 / 200\n"
               "  --only LIST       run only these benchmarks (spawn, create, reads)\n"
               "  --no-tools        skip the cgroup-tools processes\n"
               "  --markdown FILE   also write the tables as Markdown to FILE\n"
               "\n"
               "Exit status: 0 done, 1 error, 2 usage, 77 cannot run here (not root, no\n"
               "cgroups), 130 interrupted (after cleaning up).\n");
}

int parse_count(const char* flag, const char* value) {
  char* end = nullptr;
  long n = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || n < 1 || n > 10000000) {
    std::fprintf(stderr, "edgeprof_bench_spawn: %s wants a positive number, not '%s'\n", flag,
                 value ? value : "");
    std::exit(2);
  }
  return static_cast<int>(n);
}

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> words;
  for (int i = 0; i < argc; ++i) words.emplace_back(argv[i]);
  o.command_line = fmt::format("{}", fmt::join(words, " "));
  bool reps_given[3] = {false, false, false};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--spawn-reps") {
      o.spawn_reps = parse_count("--spawn-reps", value());
      reps_given[0] = true;
    } else if (a == "--create-reps") {
      o.create_reps = parse_count("--create-reps", value());
      reps_given[1] = true;
    } else if (a == "--reads") {
      o.reads = parse_count("--reads", value());
      reps_given[2] = true;
    } else if (a == "--no-tools") {
      o.tools = false;
    } else if (a == "--markdown") {
      const char* v = value();
      if (!v) {
        std::fprintf(stderr, "edgeprof_bench_spawn: --markdown wants a file name\n");
        std::exit(2);
      }
      o.markdown = v;
    } else if (a == "--only") {
      const char* v = value();
      for (const std::string& w : split(v ? v : "", ',')) {
        if (w != "spawn" && w != "create" && w != "reads") {
          std::fprintf(stderr, "edgeprof_bench_spawn: --only takes spawn, create, reads\n");
          std::exit(2);
        }
        o.only.insert(w);
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "edgeprof_bench_spawn: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      std::exit(2);
    }
  }
  if (o.quick) {
    if (!reps_given[0]) o.spawn_reps = 20;
    if (!reps_given[1]) o.create_reps = 10;
    if (!reps_given[2]) o.reads = 200;
  }
  return o;
}

std::vector<std::string> machine_lines(const Options& o, double discovery_ms) {
  std::vector<std::string> out = bench::machine_lines(o.command_line);
  out.push_back(fmt::format("repetitions: spawn {}, create/remove {}, reads {}", o.spawn_reps,
                            o.create_reps, o.reads));
  out.push_back(fmt::format(
      "first use of the library in the process (cgroup layout discovery{}): "
      "{:.2f} ms, once",
      edgeprof::cgroup_mode() == edgeprof::CgroupMode::unified ? ""
                                                               : " with libcgroup's cgroup_init",
      discovery_ms));
  return out;
}

int run(const Options& o) {
  if (::geteuid() != 0) {
    throw CannotRun(
        "needs root: it creates cgroups beneath its own cgroup in every hierarchy (run it with "
        "sudo)");
  }
  if (!exists(kCgroupRoot)) throw CannotRun("/sys/fs/cgroup is not mounted");
  auto d0 = Clock::now();
  const edgeprof::CgroupMode mode = edgeprof::cgroup_mode();
  const double discovery_ms = us_between(d0, Clock::now()) / 1000.0;

  Report report;
  report.program = "edgeprof_bench_spawn";
  report.escape_cells = true;
  report.preamble = machine_lines(o, discovery_ms);
  std::printf("edgeprof_bench_spawn\n");
  for (const auto& line : report.preamble) std::printf("  %s\n", line.c_str());
  std::fflush(stdout);

  BenchArea area;
  const bool v1 = mode != edgeprof::CgroupMode::unified;
  if (v1) area.setup();
  const BenchArea* a = v1 ? &area : nullptr;
  int status = 0;
  try {
    if (o.wants("spawn")) bench_spawn(o, a, report);
    if (o.wants("create")) bench_create(o, a, report);
    if (o.wants("reads")) bench_reads(o, report);
  } catch (const Interrupted&) {
    std::printf("\ninterrupted: cleaning up\n");
    status = 130;
  }
  if (v1 && !area.teardown()) {
    std::fprintf(stderr, "edgeprof_bench_spawn: some cgroups could not be removed (above)\n");
    status = 1;
  }
  if (status == 0 && !o.markdown.empty()) {
    std::ofstream out(o.markdown);
    out << report.markdown();
    if (!out) throw BenchError(fmt::format("cannot write {}", o.markdown));
    std::printf("\nwrote %s\n", o.markdown.c_str());
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse_options(argc, argv);
  return bench::guarded_main("edgeprof_bench_spawn", "interrupted", [&] { return run(o); });
}
