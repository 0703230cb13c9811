// edgeprof_bench_sampler: what the sampler costs (issue 3). Results: docs/benchmarks.md.
//
// A CPU-bound workload (/bin/sh spinning in a loop) runs in one Slice for --seconds at a time,
// sampled in turn (the order rotates every repetition) by:
//   nobody     the CPU this process spends spawning, waiting for and reaping the workload: the
//              baseline subtracted from the edgeprof variants;
//   edgeprof   edgeprof's Sampler with the full source set at 1, 10 and 100 ms. Its CPU is this
//              process's CPU time (CLOCK_PROCESS_CPUTIME_ID: the main thread only blocks in
//              Child::wait) minus the baseline, cross-checked by the sampler thread's own run
//              time (/proc/self/task/<tid>/schedstat, in ns); the achieved intervals come from
//              the sample times the sampler recorded;
//   psrecord   psrecord (PyPI) as a separate process, `psrecord <pid> --include-children --log
//              F --log-format csv [--interval S]`, at 1, 10 and 100 ms and without --interval
//              (as fast as it can). Its CPU is the run time of its tasks (schedstat) over a
//              window of --seconds that opens at its first sample, so the Python start-up is
//              left out (it is reported apart); its samples are the rows of its log.
// Then what one tick costs: Sources::tick by source set, and one read of each file; and what a
// wake-up alone costs on the CPU that runs the workload and on an idle one.
//
// Needs root (the slice). The one slice is created beneath this process's own cgroup and removed
// by Slice's destructor, also after Ctrl-C or SIGTERM (the wait is interrupted and unwinds); the
// workload dies with the benchmark even after SIGKILL (Slice::spawn sets PR_SET_PDEATHSIG) and
// psrecord exits once the workload is gone.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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
#include "edgeprof/edgeprof.hpp"
#include "sys/fs.hpp"
#include "sys/parse.hpp"
#include "sampler/sampler.hpp"
#include "sampler/sources.hpp"
#include "sys/spawn.hpp"

extern char** environ;

namespace {

using namespace bench;
namespace files = edgeprof::detail::files;
using edgeprof::detail::Columns;
using edgeprof::detail::Sampler;
using edgeprof::detail::Sources;

constexpr const char* kWorkloadScript = "while :; do :; done";
const std::vector<int> kIntervalsMs = {1, 10, 100};
const std::vector<int> kBareIntervalsMs = {1, 10};  // the bare wake-up loop

// ---------------------------------------------------------------------------------- files

// The library's file layer (src/sys/fs.hpp) on the real filesystem.
std::optional<std::string> read_file(const std::string& path) {
  return edgeprof::detail::Fs().read(path);
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// An executable named `name` in PATH (or `name` itself when it has a slash), or "": the
// library's own lookup (src/sys/spawn.hpp), as a workload's program is found.
std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  return edgeprof::detail::find_in_path(name,
                                        path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
}

// ------------------------------------------------------------------------------ CPU clocks

double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Run time of the tasks (threads) of `pid` but `skip_tid`, from schedstat (ns, where
// /proc/<pid>/stat has clock ticks of 10 ms). nullopt when the kernel has no schedstat.
std::optional<double> tasks_cpu_s(pid_t pid, pid_t skip_tid = -1) {
  const std::string dir = fmt::format("/proc/{}/task", pid);
  std::optional<double> total;
  for (const std::string& tid : edgeprof::detail::Fs().subdirs(dir)) {
    if (!all_digits(tid) || std::atol(tid.c_str()) == skip_tid) continue;
    auto text = read_file(fmt::format(files::kProcTidSchedstat, tid));
    if (!text) continue;
    auto ns = edgeprof::detail::parse_u64(split(*text, ' ').front());
    if (ns) total = total.value_or(0) + double(*ns) * 1e-9;
  }
  return total;
}

double rusage_cpu_s(const rusage& ru) {
  return double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) * 1e-6 +
         double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) * 1e-6;
}

// ---------------------------------------------------------------------------------- statistics


struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(const std::vector<double>& v) {
  if (v.empty()) return {};
  return {median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// Three significant figures at most, as the other benchmark tables.
std::string num(double x) {
  const double a = std::abs(x);
  if (a >= 1000) return fmt::format("{:.0f}", x);
  if (a >= 100) return fmt::format("{:.1f}", x);
  if (a >= 10) return fmt::format("{:.2f}", x);
  if (a >= 1) return fmt::format("{:.2f}", x);
  return fmt::format("{:.3f}", x);
}
// "0.312 (0.301-0.330)": the median of the repetitions and their range.
std::string with_range(const std::vector<double>& v, double scale = 1) {
  if (v.empty()) return "";
  const Spread s = spread(v);
  if (v.size() == 1) return num(s.median * scale);
  return fmt::format("{} ({} to {})", num(s.median * scale), num(s.min * scale),
                     num(s.max * scale));
}
std::string ratio(double num_, double den) {
  if (!(den > 0) || !(num_ > 0)) return "";
  return fmt::format("{:.0f}x", num_ / den);
}

// ------------------------------------------------------------------------- the slice's files

// Where the sampler reads: the slice's directory on v2, controller -> directory on v1.
struct SourceDirs {
  bool v2 = false;
  std::string dir;
  std::map<std::string, std::string> v1;

  // The full source set, as edgeprof samples a slice; on v1 `only` restricts it to the sources
  // of those controllers (the host-wide /proc/pressure sources are always there).
  Sources make(const std::set<std::string>* only = nullptr) const {
    const edgeprof::detail::Fs fs;
    if (v2) return Sources::v2(fs, dir);
    if (!only) return Sources::v1(fs, v1);
    std::map<std::string, std::string> some;
    for (const auto& [controller, path] : v1) {
      if (only->count(controller)) some[controller] = path;
    }
    return Sources::v1(fs, some);
  }

  // The files the sources read (as src/sampler/sources.cpp names them), for the per-file
  // micro-measurement; the ones missing here are left out.
  std::vector<std::pair<std::string, std::string>> files() const {
    std::vector<std::pair<std::string, std::string>> out;  // label, path
    auto add = [&](const std::string& label, const std::string& path) {
      if (::access(path.c_str(), R_OK) == 0) out.emplace_back(label, path);
    };
    if (v2) {
      for (const char* f :
           {files::v2::kCpuStat, files::v2::kMemoryCurrent, files::v2::kMemoryPeak,
            files::v2::kMemoryStat, files::v2::kMemorySwapCurrent, files::v2::kMemoryEvents,
            files::v2::kIoStat, files::v2::kCpuPressure, files::v2::kMemoryPressure,
            files::v2::kIoPressure, files::v2::kPidsCurrent}) {
        add(f, edgeprof::detail::join(dir, f));
      }
      return out;
    }
    const std::vector<std::pair<const char*, const char*>> v1_files = {
        {"cpuacct", files::v1::kCpuacctUsage},
        {"cpuacct", files::v1::kCpuacctStat},
        {"cpu", files::v1::kCpuStat},
        {"memory", files::v1::kMemoryUsageInBytes},
        {"memory", files::v1::kMemoryMaxUsageInBytes},
        {"memory", files::v1::kMemoryStat},
        {"memory", files::v1::kMemoryOomControl},
        {"blkio", files::v1::kBlkioThrottleIoServiceBytesRecursive},
        {"blkio", files::v1::kBlkioThrottleIoServicedRecursive},
        {"pids", files::v1::kPidsCurrent}};
    for (const auto& [controller, file] : v1_files) {
      if (auto it = v1.find(controller); it != v1.end())
        add(file, edgeprof::detail::join(it->second, file));
    }
    for (const char* f :
         {files::kProcPressureCpu, files::kProcPressureMemory, files::kProcPressureIo})
      add(f, f);
    return out;
  }
};

// The sampler's directories for `slice`.
SourceDirs source_dirs(const edgeprof::Slice& slice) {
  SourceDirs d;
  if (slice.mode() == edgeprof::CgroupMode::unified) {
    d.v2 = true;
    d.dir = slice.paths().front();
    return d;
  }
  const auto layout = edgeprof::detail::discover_layout(edgeprof::detail::Fs());
  for (const std::string& path : slice.paths()) {
    for (const auto& [controller, mount] : layout.v1) {
      if (path.rfind(mount + "/", 0) == 0) d.v1[controller] = path;
    }
  }
  return d;
}

// ------------------------------------------------------------------------------ the workload

edgeprof::Child start_workload(edgeprof::Slice& slice) {
  edgeprof::Command cmd;
  cmd.argv = {"/bin/sh", "-c", kWorkloadScript};
  cmd.stdin_stream = edgeprof::Stdio::discard();
  // Slice::spawn's own sampler is off: the variants below run theirs (or none).
  edgeprof::SpawnOptions options;
  options.sample_interval = std::chrono::nanoseconds::zero();
  return slice.spawn(cmd, options);
}

// Runs the workload for `seconds`; it must still be running then (it is killed at the timeout).
void run_workload(edgeprof::Child& child, double seconds) {
  const edgeprof::Result r = child.wait(std::chrono::duration<double>(seconds), check_stop);
  if (!r.timed_out) {
    throw BenchError(
        fmt::format("the workload ended before its {} s: {}", seconds, edgeprof::to_text(r)));
  }
}

// --------------------------------------------------------------------- psrecord, a process

// psrecord sampling `pid`; killed and reaped by the destructor if it is still running.
class Psrecord {
 public:
  Psrecord(const std::string& exe, pid_t pid, int interval_ms, const std::string& log) {
    std::vector<std::string> argv = {
        exe, std::to_string(pid), "--include-children", "--log", log, "--log-format", "csv"};
    if (interval_ms > 0) {
      argv.push_back("--interval");
      argv.push_back(fmt::format("{}", interval_ms / 1000.0));
    }
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const int rc = ::posix_spawn(&pid_, exe.c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw BenchError(fmt::format("cannot run {}: {}", exe, std::strerror(rc)));
  }
  ~Psrecord() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      reap(0);
    }
  }
  Psrecord(const Psrecord&) = delete;
  Psrecord& operator=(const Psrecord&) = delete;

  pid_t pid() const { return pid_; }
  bool running() { return reaped_ ? false : !reap(WNOHANG); }

  // Waits up to `seconds` for it to exit by itself (it does once the workload is gone), then
  // kills it. Returns its CPU time (wait4's rusage).
  double finish(double seconds) {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(seconds));
    while (!reaped_ && Clock::now() < until) {
      if (reap(WNOHANG)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!reaped_) {
      std::fprintf(stderr, "edgeprof_bench_sampler: psrecord did not exit by itself: killed\n");
      ::kill(pid_, SIGKILL);
      reap(0);
    }
    return rusage_cpu_s(usage_);
  }

 private:
  bool reap(int flags) {
    int status = 0;
    for (;;) {
      const pid_t got = ::wait4(pid_, &status, flags, &usage_);
      if (got < 0 && errno == EINTR) continue;
      if (got == pid_ || got < 0) reaped_ = true;
      return reaped_;
    }
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  rusage usage_{};
};

// A temporary file name, removed by the destructor.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/edgeprof-bench-sampler-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw BenchError(fmt::format("mkstemp: {}", std::strerror(errno)));
    ::close(fd);
    path_ = name;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The elapsed times (s) of the first `rows` rows of psrecord's CSV log, header skipped.
std::vector<double> psrecord_times(const std::string& text, size_t rows) {
  std::vector<double> out;
  const std::vector<std::string> lines = split(text, '\n');
  for (size_t i = 1; i < lines.size() && out.size() < rows; ++i) {
    if (lines[i].empty()) continue;
    out.push_back(std::strtod(lines[i].c_str(), nullptr));
  }
  return out;
}

size_t data_rows(const std::string& path) {
  const std::string text = read_file(path).value_or("");
  const auto lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return lines > 0 ? lines - 1 : 0;  // the header
}

// ------------------------------------------------------------------------------ one run

struct Variant {
  // edgeprof_all: every source at every tick (the sampler before source rates), the baseline
  // of what the rates save.
  enum class Kind { nobody, bare, edgeprof, edgeprof_all, psrecord } kind;
  int interval_ms;  // psrecord: 0 = without --interval

  std::string label() const {
    switch (kind) {
      case Kind::nobody:
        return "nobody samples (baseline)";
      case Kind::bare:
        return fmt::format("bare wake-up loop, {} ms", interval_ms);
      case Kind::edgeprof:
        return fmt::format("edgeprof Sampler, {} ms", interval_ms);
      case Kind::edgeprof_all:
        return fmt::format("edgeprof, all sources each tick, {} ms", interval_ms);
      case Kind::psrecord:
        return interval_ms > 0 ? fmt::format("psrecord --interval {}", interval_ms / 1000.0)
                               : "psrecord without --interval";
    }
    return "?";
  }
};

struct Outcome {
  double wall_s = 0;  // the measured window
  double cpu_s = 0;   // nobody, edgeprof: this process's; psrecord: psrecord's, in the window
  std::optional<double> thread_cpu_s;  // edgeprof: the sampler thread's (schedstat)
  double startup_cpu_s = 0;            // psrecord: until its first sample
  double total_cpu_s = 0;              // psrecord: wait4's, start to exit
  size_t samples = 0;                  // in the window
  std::vector<double> intervals_ms;    // achieved, between consecutive samples of the window
  std::uint64_t missed = 0;            // edgeprof, bare: deadlines skipped
};

// Intervals (ms) between consecutive times (ns) where both are scheduled (all when
// `scheduled` is empty); returns how many times were scheduled.
size_t scheduled_intervals(const std::vector<std::int64_t>& t_ns,
                           const std::vector<std::uint8_t>& scheduled, std::vector<double>& out) {
  size_t n = 0;
  auto on_schedule = [&](size_t i) { return scheduled.empty() || scheduled[i] != 0; };
  for (size_t i = 0; i < t_ns.size(); ++i) {
    if (!on_schedule(i)) continue;
    if (n++ > 0 && on_schedule(i - 1)) out.push_back(double(t_ns[i] - t_ns[i - 1]) / 1e6);
  }
  return n;
}

// Sleeps as Sampler::run does: epoll_wait on a timerfd that expires at origin + k x period.
class PeriodicTimer {
 public:
  PeriodicTimer(Clock::time_point origin, std::chrono::nanoseconds period)
      : timer_(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)),
        epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (timer_.get() < 0 || epoll_.get() < 0) throw BenchError("cannot create a timerfd or epoll");
    const auto first = (origin + period).time_since_epoch();
    itimerspec spec{};
    spec.it_value = {static_cast<time_t>(first.count() / 1000000000),
                     static_cast<long>(first.count() % 1000000000)};
    spec.it_interval = {static_cast<time_t>(period.count() / 1000000000),
                        static_cast<long>(period.count() % 1000000000)};
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0 ||
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, timer_.get(), &ev) != 0) {
      throw BenchError("cannot arm the timerfd");
    }
  }
  // Sleeps until the next deadline; returns how many passed (more than 1: some were missed).
  std::uint64_t wait() {
    for (;;) {
      epoll_event ev{};
      if (::epoll_wait(epoll_.get(), &ev, 1, -1) < 0 && errno != EINTR) {
        throw BenchError("epoll_wait failed");
      }
      std::uint64_t n = 0;
      if (::read(timer_.get(), &n, sizeof n) == sizeof n && n > 0) return n;
    }
  }

 private:
  edgeprof::detail::UniqueFd timer_, epoll_;
};

// A thread that sleeps as Sampler::run does (epoll_wait on a periodic timerfd with absolute
// deadlines; deadlines passed while busy are skipped) and does nothing else: what any sampling
// thread pays here, in CPU and jitter.
class BareWakeups {
 public:
  BareWakeups(std::chrono::milliseconds period, double seconds) : period_(period) {
    wakes_.reserve(static_cast<size_t>(seconds * 1000 / double(period.count())) + 1024);
  }
  ~BareWakeups() { stop(); }
  BareWakeups(const BareWakeups&) = delete;
  BareWakeups& operator=(const BareWakeups&) = delete;

  // As Sampler::start: time zero is now.
  void start() {
    origin_ = Clock::now();
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<std::int64_t>& wakes_ns() const { return wakes_; }
  std::uint64_t missed() const { return missed_; }

 private:
  void run() {
    PeriodicTimer timer(Clock::now(), period_);
    while (!stopping_.load(std::memory_order_relaxed)) {
      const auto now = Clock::now();
      if (wakes_.size() < wakes_.capacity()) {
        wakes_.push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - origin_).count());
      }
      missed_ += timer.wait() - 1;
    }
  }

  std::chrono::milliseconds period_;
  Clock::time_point origin_;
  std::vector<std::int64_t> wakes_;
  std::uint64_t missed_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

Outcome run_nobody(edgeprof::Slice& slice, double seconds) {
  Outcome o;
  const double c0 = process_cpu_s();
  const auto w0 = Clock::now();
  edgeprof::Child child = start_workload(slice);
  run_workload(child, seconds);
  o.wall_s = seconds_between(w0, Clock::now());
  o.cpu_s = process_cpu_s() - c0;
  return o;
}

// Runs the workload for `seconds` while a thread of this process (the sampler, or the bare
// loop) runs from start() to stop(); its CPU and the window into `o`.
template <typename Thread>
void run_beside(edgeprof::Slice& slice, Thread& thread, double seconds, Outcome& o) {
  const double c0 = process_cpu_s();
  const auto w0 = Clock::now();
  thread.start();
  {
    edgeprof::Child child = start_workload(slice);
    run_workload(child, seconds);
  }
  // The thread's own time, read while it still exists (the sampler's final sample is left out).
  o.thread_cpu_s = tasks_cpu_s(::getpid(), ::getpid());
  thread.stop();
  o.wall_s = seconds_between(w0, Clock::now());
  o.cpu_s = process_cpu_s() - c0;
  o.missed = thread.missed();
}

Outcome run_edgeprof(edgeprof::Slice& slice, const SourceDirs& dirs, int interval_ms,
                     double seconds, bool all_every_tick = false) {
  Outcome o;
  Sampler sampler(dirs.make(), std::chrono::milliseconds(interval_ms));
  if (all_every_tick) sampler.set_slow_every(1);
  run_beside(slice, sampler, seconds, o);
  // Samples taken at deadlines only: stop()'s final sample is not.
  o.samples =
      scheduled_intervals(sampler.columns().t_ns, sampler.columns().scheduled, o.intervals_ms);
  return o;
}

Outcome run_bare(edgeprof::Slice& slice, int interval_ms, double seconds) {
  Outcome o;
  BareWakeups loop(std::chrono::milliseconds(interval_ms), seconds);
  run_beside(slice, loop, seconds, o);
  o.samples = scheduled_intervals(loop.wakes_ns(), {}, o.intervals_ms);
  return o;
}

Outcome run_psrecord(edgeprof::Slice& slice, const std::string& exe, int interval_ms,
                     double seconds) {
  Outcome o;
  edgeprof::Child child = start_workload(slice);
  const TempFile log;
  Psrecord ps(exe, child.pid(), interval_ms, log.path());
  // The window opens at psrecord's first sample: its Python start-up is not sampling.
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  size_t rows0 = 0;
  while ((rows0 = data_rows(log.path())) == 0) {
    check_stop();
    if (!ps.running()) throw BenchError("psrecord exited before its first sample");
    if (Clock::now() > give_up) throw BenchError("psrecord took 30 s to take a first sample");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto w0 = Clock::now();
  const double c0 = tasks_cpu_s(ps.pid()).value_or(0);
  sleep_checked(seconds);
  const double c1 = tasks_cpu_s(ps.pid()).value_or(0);
  const auto w1 = Clock::now();
  const std::string text = read_file(log.path()).value_or("");
  const size_t rows1 = data_rows(log.path());
  slice.kill();
  child.wait();
  o.total_cpu_s = ps.finish(10);
  o.wall_s = seconds_between(w0, w1);
  o.cpu_s = c1 - c0;
  o.startup_cpu_s = c0;
  o.samples = rows1 - rows0;
  const std::vector<double> times = psrecord_times(text, rows1);
  for (size_t i = rows0; i < times.size(); ++i)
    o.intervals_ms.push_back((times[i] - times[i - 1]) * 1000);
  return o;
}

// -------------------------------------------------------------------------------- options

struct Options {
  double seconds = 5;
  int reps = 5;
  int ticks = 2000;
  bool quick = false;
  std::string psrecord = "psrecord";  // "" = --no-psrecord
  std::string markdown;
  std::string command_line;
};

// ------------------------------------------------------------------ 1 + 2. CPU and intervals

struct Results {
  std::vector<Variant> variants;
  std::vector<std::vector<Outcome>> runs;  // per variant, per repetition

  const std::vector<Outcome>& of(Variant::Kind kind, int interval_ms) const {
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].kind == kind && variants[i].interval_ms == interval_ms) return runs[i];
    }
    static const std::vector<Outcome> none;
    return none;
  }
};

Results measure(const Options& o, edgeprof::Slice& slice, const SourceDirs& dirs,
                const std::string& psrecord) {
  Results r;
  r.variants.push_back({Variant::Kind::nobody, 0});
  for (int ms : kIntervalsMs) r.variants.push_back({Variant::Kind::edgeprof, ms});
  for (int ms : kIntervalsMs) {
    if (ms < 100) r.variants.push_back({Variant::Kind::edgeprof_all, ms});  // the same at 100
  }
  for (int ms : kBareIntervalsMs) r.variants.push_back({Variant::Kind::bare, ms});
  if (!psrecord.empty()) {
    for (int ms : kIntervalsMs) r.variants.push_back({Variant::Kind::psrecord, ms});
    r.variants.push_back({Variant::Kind::psrecord, 0});
  }
  r.runs.resize(r.variants.size());
  const size_t n = r.variants.size();
  std::printf("\n[1/2] %d repetitions x %zu variants x %g s of workload (interleaved)...\n", o.reps,
              n, o.seconds);
  std::fflush(stdout);
  for (int rep = 0; rep < o.reps; ++rep) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (static_cast<size_t>(rep) + k) % n;
      const Variant& v = r.variants[i];
      check_stop();
      Outcome out;
      switch (v.kind) {
        case Variant::Kind::nobody:
          out = run_nobody(slice, o.seconds);
          break;
        case Variant::Kind::bare:
          out = run_bare(slice, v.interval_ms, o.seconds);
          break;
        case Variant::Kind::edgeprof:
          out = run_edgeprof(slice, dirs, v.interval_ms, o.seconds);
          break;
        case Variant::Kind::edgeprof_all:
          out = run_edgeprof(slice, dirs, v.interval_ms, o.seconds, true);
          break;
        case Variant::Kind::psrecord:
          out = run_psrecord(slice, psrecord, v.interval_ms, o.seconds);
          break;
      }
      std::printf("  rep %d  %-32s %6zu samples  cpu %.4f s in %.3f s\n", rep + 1,
                  v.label().c_str(), out.samples, out.cpu_s, out.wall_s);
      std::fflush(stdout);
      r.runs[i].push_back(std::move(out));
    }
  }
  return r;
}

// What the sampler itself spends, per repetition: the process's CPU over the window minus the
// median baseline, per second of the window (a fraction of one core).
std::vector<double> edgeprof_core_share(const std::vector<Outcome>& runs, double baseline_cpu_s) {
  std::vector<double> out;
  for (const Outcome& x : runs) out.push_back((x.cpu_s - baseline_cpu_s) / x.wall_s);
  return out;
}
std::vector<double> thread_core_share(const std::vector<Outcome>& runs) {
  std::vector<double> out;
  for (const Outcome& x : runs) {
    if (x.thread_cpu_s) out.push_back(*x.thread_cpu_s / x.wall_s);
  }
  return out;
}
std::vector<double> psrecord_core_share(const std::vector<Outcome>& runs) {
  std::vector<double> out;
  for (const Outcome& x : runs) out.push_back(x.cpu_s / x.wall_s);
  return out;
}
std::vector<double> per_second(const std::vector<Outcome>& runs) {
  std::vector<double> out;
  for (const Outcome& x : runs) out.push_back(double(x.samples) / x.wall_s);
  return out;
}

struct Verdicts {
  std::optional<double> share_10ms;    // edgeprof at 10 ms, fraction of one core
  std::optional<double> jitter_p99;    // edgeprof at 1 ms, |interval - 1 ms| p99, ms
  std::optional<double> achieved_1ms;  // edgeprof at 1 ms, samples per second
  std::uint64_t missed_1ms = 0;
  std::map<int, double> psrecord_ratio;  // interval -> psrecord / edgeprof CPU per second
  // The bare wake-up loop: the floor on this machine.
  std::optional<double> bare_share_10ms, bare_jitter_p99, bare_achieved_1ms;
};

void cpu_table(const Results& r, Report& report, Verdicts& verdicts) {
  const double baseline = median([&] {
    std::vector<double> v;
    for (const Outcome& x : r.of(Variant::Kind::nobody, 0)) v.push_back(x.cpu_s);
    return v;
  }());
  const double baseline_wall = median([&] {
    std::vector<double> v;
    for (const Outcome& x : r.of(Variant::Kind::nobody, 0)) v.push_back(x.wall_s);
    return v;
  }());
  Table t{"Sampler CPU per second of workload (% of one core)",
          {"interval", "edgeprof samples/s", "edgeprof CPU % (process - baseline)",
           "edgeprof thread CPU % (schedstat)", "edgeprof us CPU / sample", "psrecord samples/s",
           "psrecord CPU %", "psrecord us CPU / sample", "psrecord / edgeprof, CPU per second",
           "per sample"},
          {},
          {}};
  double edgeprof_1ms_share = 0, edgeprof_1ms_per_sample = 0;
  for (int ms : kIntervalsMs) {
    const auto& e = r.of(Variant::Kind::edgeprof, ms);
    const auto& p = r.of(Variant::Kind::psrecord, ms);
    const std::vector<double> share = edgeprof_core_share(e, baseline);
    const std::vector<double> rate = per_second(e);
    // Below the baseline's noise the difference may come out at or under zero: the sampler
    // thread's own time then stands in for it (the cell says so).
    const std::vector<double> thread = thread_core_share(e);
    const bool fallback = !(median(share) > 0) && !thread.empty();
    const double e_share = fallback ? median(thread) : median(share);
    const double e_per_sample = e_share / median(rate) * 1e6;
    const std::string mark = fallback ? " (thread)" : "";
    if (ms == 1) {
      edgeprof_1ms_share = e_share;
      edgeprof_1ms_per_sample = e_per_sample;
    }
    if (ms == 10) verdicts.share_10ms = e_share;
    std::vector<std::string> row = {fmt::format("{} ms", ms), with_range(rate),
                                    with_range(share, 100), with_range(thread, 100),
                                    num(e_per_sample) + mark};
    if (p.empty()) {
      row.insert(row.end(), {"", "", "", "", ""});
    } else {
      const double p_share = median(psrecord_core_share(p));
      const double p_per_sample = p_share / median(per_second(p)) * 1e6;
      verdicts.psrecord_ratio[ms] = p_share / e_share;
      row.insert(row.end(), {with_range(per_second(p)), with_range(psrecord_core_share(p), 100),
                             num(p_per_sample), ratio(p_share, e_share) + mark,
                             ratio(p_per_sample, e_per_sample) + mark});
    }
    t.rows.push_back(std::move(row));
  }
  for (int ms : kBareIntervalsMs) {
    const auto& b = r.of(Variant::Kind::bare, ms);
    if (b.empty()) continue;
    const std::vector<double> share = edgeprof_core_share(b, baseline);
    if (ms == 10) verdicts.bare_share_10ms = median(share);
    t.rows.push_back({fmt::format("bare wake-up loop, {} ms (no tick)", ms),
                      with_range(per_second(b)), with_range(share, 100),
                      with_range(thread_core_share(b), 100),
                      num(median(share) / median(per_second(b)) * 1e6), "", "", "", "", ""});
  }
  // The same sampler reading every source at every tick (before source rates): what the rates
  // save, measured in the same run; the last column, all-sources / rates.
  for (int ms : kIntervalsMs) {
    const auto& a = r.of(Variant::Kind::edgeprof_all, ms);
    if (a.empty()) continue;
    const std::vector<double> share = edgeprof_core_share(a, baseline);
    const double rates = median(edgeprof_core_share(r.of(Variant::Kind::edgeprof, ms), baseline));
    t.rows.push_back({fmt::format("edgeprof, every source each tick, {} ms (before rates)", ms),
                      with_range(per_second(a)), with_range(share, 100),
                      with_range(thread_core_share(a), 100),
                      num(median(share) / median(per_second(a)) * 1e6), "", "", "",
                      "", rates > 0 ? fmt::format("all / rates {:.2f}x", median(share) / rates)
                                    : std::string()});
  }
  const auto& fastest = r.of(Variant::Kind::psrecord, 0);
  if (!fastest.empty()) {
    const double p_share = median(psrecord_core_share(fastest));
    const double p_per_sample = p_share / median(per_second(fastest)) * 1e6;
    t.rows.push_back({"psrecord without --interval vs edgeprof 1 ms", "", "", "", "",
                      with_range(per_second(fastest)),
                      with_range(psrecord_core_share(fastest), 100), num(p_per_sample),
                      ratio(p_share, edgeprof_1ms_share),
                      ratio(p_per_sample, edgeprof_1ms_per_sample)});
  }
  const size_t reps = r.runs.front().size();
  t.notes.push_back(fmt::format(
      "Medians of {} repetitions (range in brackets); ratios are of the medians. Baseline (nobody "
      "samples): this process spent {:.2f} ms of CPU spawning, waiting for and reaping a {:.2f} s "
      "workload (median).",
      reps, baseline * 1000, baseline_wall));
  if (!fastest.empty() || !r.of(Variant::Kind::psrecord, 1).empty()) {
    std::vector<double> startup, total;
    for (const auto& runs : r.runs) {
      for (const Outcome& x : runs) {
        if (x.total_cpu_s > 0) {
          startup.push_back(x.startup_cpu_s);
          total.push_back(x.total_cpu_s);
        }
      }
    }
    t.notes.push_back(fmt::format(
        "psrecord: CPU over a window that opens at its first sample; its start-up until then "
        "(interpreter, imports, first sample) took {} s of CPU (median of {} runs; not counted), "
        "a whole run {} s (wait4).",
        num(median(startup)), startup.size(), num(median(total))));
  }
  report.add(std::move(t));
}

void interval_table(const Results& r, const Options& o, Report& report, Verdicts& verdicts) {
  Table t{"Achieved intervals (ms)",
          {"sampler", "samples per run (at the set interval)", "missed deadlines", "interval p50",
           "interval p99", "interval max", "abs(interval - set) p50", "abs(interval - set) p99"},
          {},
          {}};
  // own_schedule: edgeprof and the bare loop sample at 0, I, 2I, ... of their window and count
  // missed deadlines; psrecord's window opens at one of its samples.
  auto row = [&](const std::string& name, const std::vector<Outcome>& runs, int set_ms,
                 bool own_schedule) {
    if (runs.empty()) return;
    std::vector<double> samples, missed, p50, p99, mx, d50, d99;
    for (const Outcome& x : runs) {
      samples.push_back(double(x.samples));
      missed.push_back(double(x.missed));
      std::vector<double> dev;
      for (double iv : x.intervals_ms) dev.push_back(std::abs(iv - set_ms));
      p50.push_back(quantile_of(x.intervals_ms, 0.5));
      p99.push_back(quantile_of(x.intervals_ms, 0.99));
      mx.push_back(quantile_of(x.intervals_ms, 1.0));
      d50.push_back(quantile_of(dev, 0.5));
      d99.push_back(quantile_of(dev, 0.99));
    }
    std::vector<double> due;
    for (const Outcome& x : runs) {
      if (set_ms > 0) due.push_back(std::floor(x.wall_s * 1000 / set_ms) + (own_schedule ? 1 : 0));
    }
    const std::string scheduled = due.empty() ? "" : fmt::format(" ({:.0f})", median(due));
    t.rows.push_back({name, with_range(samples) + scheduled, own_schedule ? with_range(missed) : "",
                      with_range(p50), with_range(p99), with_range(mx),
                      set_ms > 0 ? with_range(d50) : "", set_ms > 0 ? with_range(d99) : ""});
    if (name == "edgeprof 1 ms") {
      verdicts.jitter_p99 = median(d99);
      verdicts.achieved_1ms = median(per_second(runs));
      verdicts.missed_1ms = static_cast<std::uint64_t>(median(missed));
    }
    if (name == "bare wake-up loop 1 ms") {
      verdicts.bare_jitter_p99 = median(d99);
      verdicts.bare_achieved_1ms = median(per_second(runs));
    }
  };
  for (int ms : kIntervalsMs)
    row(fmt::format("edgeprof {} ms", ms), r.of(Variant::Kind::edgeprof, ms), ms, true);
  for (int ms : kBareIntervalsMs)
    row(fmt::format("bare wake-up loop {} ms", ms), r.of(Variant::Kind::bare, ms), ms, true);
  for (int ms : kIntervalsMs) {
    row(fmt::format("psrecord --interval {}", ms / 1000.0), r.of(Variant::Kind::psrecord, ms), ms,
        false);
  }
  row("psrecord without --interval", r.of(Variant::Kind::psrecord, 0), 0, false);
  t.notes.push_back(fmt::format(
      "Per run of {} s: the quantiles of its intervals, then the median of the {} runs (range in "
      "brackets). edgeprof: the times Sampler recorded (steady clock), stop()'s final sample "
      "left out; psrecord: the elapsed times of its log rows (time.time()).",
      o.seconds, r.runs.front().size()));
  report.add(std::move(t));
}

// ------------------------------------------------------------------------ 3. one tick

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// What a sample costs at its real pace, as the sampler thread pays it: sleep until the next
// deadline of a periodic timerfd (as Sampler::run does), then tick, or not. CPU per period from
// this thread's CPU clock; the tick's own time by the clock around it.
struct Paced {
  std::vector<double> cpu_us;   // per block: thread CPU per period
  std::vector<double> tick_us;  // per tick (empty without ticks)
};

void paced_block(std::chrono::milliseconds period, int n, Sources* sources, Columns& columns,
                 Paced& out) {
  const double c0 = thread_cpu_s();
  PeriodicTimer timer(Clock::now(), period);
  for (int i = 0; i < n; ++i) {
    timer.wait();
    if (sources) {
      const auto a = Clock::now();
      sources->tick(i, columns);
      out.tick_us.push_back(us_between(a, Clock::now()));
    }
  }
  out.cpu_us.push_back((thread_cpu_s() - c0) / n * 1e6);
}

// The CPU a process last ran on (field 39 of /proc/<pid>/stat), or nullopt.
std::optional<int> cpu_of(pid_t pid) {
  const auto text = read_file(fmt::format(files::kProcTidStat, pid));
  return text ? edgeprof::detail::parse_stat_processor(*text) : std::nullopt;
}

// Pins the calling thread to `cpu` until destroyed, then gives it back the CPUs it had.
class PinThread {
 public:
  explicit PinThread(int cpu) {
    if (::sched_getaffinity(0, sizeof had_, &had_) != 0) throw BenchError("sched_getaffinity");
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) {
      throw BenchError(fmt::format("cannot pin this thread to CPU {}", cpu));
    }
  }
  ~PinThread() { ::sched_setaffinity(0, sizeof had_, &had_); }
  PinThread(const PinThread&) = delete;
  PinThread& operator=(const PinThread&) = delete;

 private:
  cpu_set_t had_{};
};

// A wake-up alone at 10 ms with this thread pinned to the CPU that runs the workload (it wakes
// there by preempting it) and to another CPU (it wakes a CPU that was idle, halted in a VM):
// blocks in turn; a block counts only when the workload was on the same CPU before and after it.
struct WakeWhere {
  std::vector<double> busy_us, idle_us;  // CPU per period, per block
  int blocks = 0, moved = 0;             // blocks run; of them, the workload changed CPU
  int unplaced = 0;                      // blocks not run: the workload's CPU unreadable
};

void wake_where(pid_t workload, int blocks, int periods, WakeWhere& out) {
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return;
  Columns unused;
  for (int b = 0; b < blocks; ++b) {
    for (bool on_busy : {true, false}) {
      check_stop();
      const std::optional<int> cpu = cpu_of(workload);
      if (!cpu || !CPU_ISSET(*cpu, &allowed)) {
        ++out.unplaced;
        continue;
      }
      int target = *cpu;
      if (!on_busy) {
        for (int c = 0; c < CPU_SETSIZE; ++c) {
          if (c != *cpu && CPU_ISSET(c, &allowed)) {
            target = c;
            break;
          }
        }
      }
      Paced paced;
      {
        const PinThread pin(target);
        paced_block(std::chrono::milliseconds(10), periods, nullptr, unused, paced);
      }
      ++out.blocks;
      if (cpu_of(workload) != cpu) {
        ++out.moved;
        continue;
      }
      (on_busy ? out.busy_us : out.idle_us).push_back(paced.cpu_us.front());
    }
  }
}

void tick_tables(const Options& o, edgeprof::Slice& slice, const SourceDirs& dirs, Report& report) {
  struct Set {
    std::string name;
    Sources sources;
    Columns columns;
    std::vector<double> us;
  };
  std::vector<Set> sets;
  sets.push_back({"full set", dirs.make(), {}, {}});
  if (!dirs.v2) {
    const std::set<std::string> none;
    sets.push_back(
        {"/proc/pressure/* only (host-wide, in every v1 set)", dirs.make(&none), {}, {}});
    for (const char* c : {"cpuacct", "cpu", "memory", "blkio", "pids"}) {
      const std::set<std::string> one = {c};
      sets.push_back({fmt::format("{} + /proc/pressure/*", c), dirs.make(&one), {}, {}});
    }
  }
  // Each file read as the sources read it (until pread returns 0), and by one pread alone:
  // the difference is what the end-of-file call costs.
  struct File {
    std::string label;
    edgeprof::detail::StatFile file;
    int fd = -1;  // a second descriptor, for the single pread
    size_t bytes = 0;
    std::vector<double> us, single_us;
  };
  std::vector<File> files;
  for (const auto& [label, path] : dirs.files()) {
    edgeprof::detail::StatFile f(edgeprof::detail::Fs(), path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f.ok() && fd >= 0) {
      files.push_back({label, std::move(f), fd, 0, {}, {}});
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  for (Set& s : sets) s.columns.reserve(static_cast<size_t>(o.ticks) + 1);

  std::printf(
      "\n[2/2] one tick: %d ticks x %zu source sets, %d reads x %zu files x 2 ways, with the "
      "workload running (interleaved in blocks of 100)...\n",
      o.ticks, sets.size(), o.ticks, files.size());
  std::fflush(stdout);
  edgeprof::Child child = start_workload(slice);
  const size_t n = sets.size() + 2 * files.size();
  char buffer[65536];
  const int block = std::min(100, o.ticks);
  for (int done = 0, round = 0; done < o.ticks; done += block, ++round) {
    check_stop();
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (static_cast<size_t>(round) + k) % n;
      for (int b = 0; b < block && done + b < o.ticks; ++b) {
        const auto a = Clock::now();
        if (i < sets.size()) {
          sets[i].sources.tick(done + b, sets[i].columns);
          sets[i].us.push_back(us_between(a, Clock::now()));
        } else if (i < sets.size() + files.size()) {
          File& f = files[i - sets.size()];
          auto text = f.file.read_into(buffer, sizeof buffer);
          f.us.push_back(us_between(a, Clock::now()));
          f.bytes = text ? text->size() : 0;
        } else {
          File& f = files[i - sets.size() - files.size()];
          const ssize_t got = ::pread(f.fd, buffer, sizeof buffer, 0);
          f.single_us.push_back(us_between(a, Clock::now()));
          if (got < 0) f.single_us.back() = -1;  // not expected; shows in the table
        }
      }
    }
  }
  // At the sampler's pace: 1 and 10 ms, with and without a tick, alternating in blocks.
  const int paced_n = std::max(20, o.ticks / 4);
  const int paced_block_n = std::min(25, paced_n);
  std::printf("      paced: %d periods of 1 and 10 ms, with and without a tick (blocks of %d)...\n",
              paced_n, paced_block_n);
  std::fflush(stdout);
  std::map<std::pair<int, bool>, Paced> paced;
  Sources paced_sources = dirs.make();
  Columns paced_columns;
  paced_columns.reserve(static_cast<size_t>(2 * paced_n) + 1);
  for (int done = 0; done < paced_n; done += paced_block_n) {
    for (int ms : {1, 10}) {
      for (bool with_tick : {true, false}) {
        check_stop();
        paced_block(std::chrono::milliseconds(ms), std::min(paced_block_n, paced_n - done),
                    with_tick ? &paced_sources : nullptr, paced_columns, paced[{ms, with_tick}]);
      }
    }
  }
  // Where the thread wakes: on the workload's CPU or on an idle one, 10 ms, blocks in turn.
  const int where_blocks = o.quick ? 2 : 10;
  const int where_periods = o.quick ? 10 : 50;
  std::printf("      where it wakes: %d blocks of %d periods of 10 ms, pinned to the workload's CPU "
              "and to another...\n",
              2 * where_blocks, where_periods);
  std::fflush(stdout);
  WakeWhere where;
  wake_where(child.pid(), where_blocks, where_periods, where);
  slice.kill();
  child.wait();

  Table w{"Where a sample's CPU goes, at the sampler's pace (this thread's CPU clock)",
          {"period", "wake-up only: CPU us per period", "wake-up + tick: CPU us per period",
           "tick alone: median us (p99)", "tick back to back: median us"},
          {},
          {}};
  for (int ms : {1, 10}) {
    const Paced& idle = paced[{ms, false}];
    const Paced& busy = paced[{ms, true}];
    w.rows.push_back(
        {fmt::format("{} ms", ms), num(median(idle.cpu_us)), num(median(busy.cpu_us)),
         fmt::format("{} ({})", num(median(busy.tick_us)), num(quantile_of(busy.tick_us, 0.99))),
         num(median(sets.front().us))});
  }
  w.notes.push_back(fmt::format(
      "{} periods per cell, in blocks of {} (CPU per period: the median over the blocks). "
      "Wake-up: epoll_wait on a periodic timerfd, as Sampler::run sleeps; the tick: the full "
      "source set. A tick that follows a sleep finds colder caches than one that follows "
      "another tick.",
      paced_n, paced_block_n));

  Table t{"One tick (Sources::tick), by source set",
          {"source set", "sources open", "median us", "p90 us", "p99 us", "median - pressure only"},
          {},
          {}};
  const double pressure_only = sets.size() > 1 ? median(sets[1].us) : 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    size_t open = 0;
    for (const auto& s : sets[i].sources.status()) open += s.available ? 1 : 0;
    t.rows.push_back(
        {sets[i].name, std::to_string(open), num(median(sets[i].us)),
         num(quantile_of(sets[i].us, 0.9)), num(quantile_of(sets[i].us, 0.99)),
         i >= 2 || (i == 0 && sets.size() > 1) ? num(median(sets[i].us) - pressure_only) : ""});
  }
  t.notes.push_back(fmt::format(
      "{} ticks per set while the workload spins in the slice; each sample includes a clock "
      "read pair. A tick reads every open source (one pread from offset 0 per file: a short "
      "read is the end), parses it and appends a row.",
      o.ticks));
  report.add(std::move(t));

  Table f{"One read of each file (StatFile::read_into: one pread, a short read being the end)",
          {"file", "bytes", "median us", "p90 us", "p99 us", "one pread alone: median us"},
          {},
          {}};
  double sum = 0, single_sum = 0;
  for (File& x : files) {
    ::close(x.fd);
    sum += median(x.us);
    single_sum += median(x.single_us);
    f.rows.push_back({x.label, std::to_string(x.bytes), num(median(x.us)),
                      num(quantile_of(x.us, 0.9)), num(quantile_of(x.us, 0.99)),
                      num(median(x.single_us))});
  }
  f.rows.push_back({"sum of the medians", "", num(sum), "", "", num(single_sum)});
  report.add(std::move(f));
  report.add(std::move(w));
  if (!where.busy_us.empty() || !where.idle_us.empty()) {
    Table v{"Where the thread wakes: a wake-up alone at 10 ms, this thread pinned (its CPU clock)",
            {"woken on", "CPU us per period: median (range)", "blocks"},
            {},
            {}};
    auto cell = [](const std::vector<double>& us) {
      return us.empty() ? std::string("-")
                        : fmt::format("{} ({}-{})", num(median(us)),
                                      num(*std::min_element(us.begin(), us.end())),
                                      num(*std::max_element(us.begin(), us.end())));
    };
    v.rows.push_back({"the CPU running the workload (preempting it)", cell(where.busy_us),
                      std::to_string(where.busy_us.size())});
    v.rows.push_back({"another CPU (idle until the wake)", cell(where.idle_us),
                      std::to_string(where.idle_us.size())});
    v.notes.push_back(fmt::format(
        "{} periods per block, blocks in turn; {} of {} blocks left out because the workload "
        "changed CPU during them, {} not run (its CPU unreadable or not this thread's). The "
        "same wake-up as the table before's; what differs is whether the CPU it wakes on was "
        "running or idle (in a VM: halted). Only this thread's CPU is counted: what a wake "
        "on the busy CPU costs the workload it preempts is not.",
        where_periods, where.moved, where.blocks, where.unplaced));
    report.add(std::move(v));
  }
}

// ------------------------------------------------------------------------------ main

void usage(FILE* to) {
  std::fprintf(to,
               "usage: edgeprof_bench_sampler [--quick] [--seconds S] [--reps N] [--ticks N]\n"
               "                              [--psrecord PATH | --no-psrecord]\n"
               "                              [--markdown FILE]\n"
               "\n"
               "Measures what edgeprof's sampler costs while a CPU-bound workload runs in a\n"
               "slice: CPU per second at 1, 10 and 100 ms against psrecord (PyPI) at the same\n"
               "intervals, the achieved intervals, and one tick by source and file (see\n"
               "docs/benchmarks.md). Needs root.\n"
               "\n"
               "  --seconds S       workload seconds per measurement (default 5)\n"
               "  --reps N          repetitions of every variant, interleaved (default 5)\n"
               "  --ticks N         ticks per source set and reads per file (default 2000)\n"
               "  --quick           a smoke run: 0.2 s x 1 repetition, 200 ticks\n"
               "  --psrecord PATH   the psrecord to run (default: psrecord in PATH)\n"
               "  --no-psrecord     leave psrecord out\n"
               "  --markdown FILE   also write the tables as Markdown to FILE\n"
               "\n"
               "Exit status: 0 done (a missed target is reported, not an error), 1 error,\n"
               "2 usage, 77 cannot run here (not root, no cgroups), 130 interrupted.\n");
}

const bench::Cli kCli{"edgeprof_bench_sampler", usage};

Options parse_options(int argc, char** argv) {
  Options o;
  o.command_line = command_line(argc, argv);
  bool given[3] = {false, false, false};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--seconds") {
      o.seconds = kCli.number(a, value(), 0.05, 3600);
      given[0] = true;
    } else if (a == "--reps") {
      o.reps = static_cast<int>(kCli.number(a, value(), 1, 1000));
      given[1] = true;
    } else if (a == "--ticks") {
      o.ticks = static_cast<int>(kCli.number(a, value(), 1, 10000000));
      given[2] = true;
    } else if (a == "--psrecord") {
      const char* v = value();
      if (!v || !*v) kCli.fail("--psrecord wants a path");
      o.psrecord = v;
    } else if (a == "--no-psrecord") {
      o.psrecord.clear();
    } else {
      kCli.shared_option(a, value, o.markdown);
    }
  }
  if (o.quick) {
    if (!given[0]) o.seconds = 0.2;
    if (!given[1]) o.reps = 1;
    if (!given[2]) o.ticks = 200;
  }
  return o;
}


std::vector<std::string> machine_lines(const Options& o, const std::string& psrecord) {
  std::vector<std::string> out = bench::machine_lines(o.command_line);
  out.push_back(
      fmt::format("workload: `/bin/sh -c '{}'` in a slice, {} s per measurement, {} "
                  "repetitions; {} ticks / reads per item",
                  kWorkloadScript, o.seconds, o.reps, o.ticks));
  out.push_back(psrecord.empty() ? std::string("psrecord: not run")
                                 : fmt::format("psrecord: {}", psrecord));
  out.push_back(fmt::format("load average at the start: {}", loadavg()));
  return out;
}

std::string sources_line(const Sources& sources) {
  std::vector<std::string> open, missing;
  for (const auto& s : sources.status()) {
    (s.available ? open : missing).push_back(s.name + (s.host_wide ? " (host-wide)" : ""));
  }
  return fmt::format(
      "sources: {} open ({}){}", open.size(), fmt::join(open, ", "),
      missing.empty() ? std::string() : fmt::format("; missing: {}", fmt::join(missing, ", ")));
}

Table targets_table(const Verdicts& v) {
  Table t{
      "Targets (this run)", {"target", "result", "a bare wake-up loop, same run", "met?"}, {}, {}};
  auto yes = [](bool ok) { return std::string(ok ? "yes" : "**no**"); };
  auto pct = [](const std::optional<double>& x) {
    return x ? fmt::format("{:.3f}%", *x * 100) : std::string();
  };
  if (v.share_10ms) {
    t.rows.push_back({"sampler CPU at 10 ms under 0.5% of one core", pct(v.share_10ms),
                      pct(v.bare_share_10ms), yes(*v.share_10ms < 0.005)});
  }
  if (v.jitter_p99 && v.achieved_1ms) {
    // Sustained: at least 99% of the deadlines of the run met.
    t.rows.push_back(
        {"1 ms sustained",
         fmt::format("{:.0f} samples/s, {} missed deadlines per run", *v.achieved_1ms,
                     v.missed_1ms),
         v.bare_achieved_1ms ? fmt::format("{:.0f} wake-ups/s", *v.bare_achieved_1ms) : "",
         yes(*v.achieved_1ms >= 990)});
    t.rows.push_back({"p99 jitter at 1 ms under 0.5 ms",
                      fmt::format("abs(interval - 1 ms) p99 {:.3f} ms", *v.jitter_p99),
                      v.bare_jitter_p99 ? fmt::format("{:.3f} ms", *v.bare_jitter_p99) : "",
                      yes(*v.jitter_p99 < 0.5)});
  }
  for (const auto& [ms, r] : v.psrecord_ratio) {
    t.rows.push_back({fmt::format("at least 20x less CPU per second than psrecord at {} ms", ms),
                      fmt::format("{:.0f}x", r), "", yes(r >= 20)});
  }
  if (v.psrecord_ratio.empty()) t.notes.push_back("psrecord was not run: no ratio.");
  return t;
}

int run(const Options& o) {
  if (::geteuid() != 0) {
    throw CannotRun("needs root: it creates cgroups beneath its own cgroup (run it with sudo)");
  }
  if (::access("/sys/fs/cgroup", F_OK) != 0) throw CannotRun("/sys/fs/cgroup is not mounted");

  std::string psrecord;
  if (!o.psrecord.empty()) {
    psrecord = find_in_path(o.psrecord);
    if (psrecord.empty()) {
      std::printf(
          "note: psrecord (%s) not found: its columns are left out. Install it with\n"
          "      python3 -m pip install psrecord   (from PyPI), or pass --psrecord PATH.\n",
          o.psrecord.c_str());
    }
  }
  Report report;
  report.program = "edgeprof_bench_sampler";
  report.preamble = machine_lines(o, psrecord);

  int cpus = static_cast<int>(edgeprof::host_facts().cpus.size());
  edgeprof::Slice slice(edgeprof::make_device("bench-sampler", std::max(1, cpus), 1.0, "1GiB"));
  const SourceDirs dirs = source_dirs(slice);
  report.preamble.push_back(sources_line(dirs.make()));
  std::printf("edgeprof_bench_sampler\n");
  for (const auto& line : report.preamble) std::printf("  %s\n", line.c_str());
  std::fflush(stdout);

  Verdicts verdicts;
  const Results results = measure(o, slice, dirs, psrecord);
  cpu_table(results, report, verdicts);
  interval_table(results, o, report, verdicts);
  tick_tables(o, slice, dirs, report);
  report.add(targets_table(verdicts));
  slice.close();
  finish(report, o.markdown);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  return bench::guarded_main("edgeprof_bench_sampler", "interrupted (cleaned up)",
                             [&] { return run(o); });
}
