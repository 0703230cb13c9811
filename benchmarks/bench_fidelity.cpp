// edgeprof_bench_fidelity: how faithfully a slice emulates a device (issue 6). Results:
// docs/benchmarks.md.
//
// cpu.max is time slicing, not a slower clock: within each period the workload runs at host
// speed until the quota is spent, then stalls. This program measures what that means for a
// workload, against the same workload in a slice that differs only in the quota:
//
//   1. slowdown  for a grid of devices (cores x speed) and CPU-bound kernels of 1 and 2
//                threads, the total-time slowdown (emulated / baseline) against the target
//                1 / speed, at the default period;
//   2. latency   per-iteration latency (iterations of 1, 5, 20 and 50 ms of host time) under
//                emulation, p50 / p90 / p99, against the baseline's p50 / speed, for CFS
//                periods of 1 to 100 ms; the same apart from the host's speed (each
//                iteration's wall time over its own CPU time, against 1 / speed); and the
//                total-time error and CPU cost at each period;
//   3. memory    the memory limit read back from the slice's cgroup against the bytes asked
//                for, and a workload touching just under the limit (must succeed) or just over
//                it (must be OOM-killed and reported so), 20 times each;
//   4. warm      the work per CPU-second and total-time slowdown of three workloads (the add
//                loop, a Python loop, numpy matrix products) at speeds 0.1 to 0.9 and periods
//                5 to 100 ms, with keep-warm (PlanOptions::keep_warm) off and on, against an
//                unthrottled baseline; and what keep-warm costs a CPU-bound thread outside the
//                slice, on the slice's CPU and on another.
//
// The workload is this program re-executed: --worker THREADS SEGMENTS runs, on each of THREADS
// threads, iterations of a volatile add loop whose length was calibrated here to N ms of host
// time, timing each with the steady clock and the thread's CPU clock; --touch BYTES maps and touches BYTES of anonymous
// memory. The baseline is the same worker in a slice with the same cpuset at core_speed 1.0
// and its quota lifted (a quota of cores x period still throttles now and then), and baseline
// and emulated runs alternate (ABAB) with the order of the settings rotating every repetition,
// so drift on a shared host hits both.
// Other processes on the setting's CPUs would show up as emulation error, so each pair starts
// once those CPUs have been quiet and is run again when /proc/stat shows that others took more
// than 5% of them during either run (Contention); every table says how often that happened.
//
// Needs root. Every slice is made by edgeprof beneath this process's own cgroups and removed by
// Slice's destructor, also after Ctrl-C, SIGTERM or SIGHUP (the wait is interrupted and
// unwinds); after SIGKILL the workload dies with the program (PR_SET_PDEATHSIG) and the next
// Slice created removes the slice left behind.
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "cgroup/files.hpp"
#include "sys/fs.hpp"
#include "edgeprof/edgeprof.hpp"

namespace {

using namespace bench;
namespace files = edgeprof::detail::files;

constexpr const char* kWorkerFlag = "--worker";
constexpr const char* kTouchFlag = "--touch";

std::uint64_t page_size() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

// ---------------------------------------------------------------------------------- workload

// The kernels' loop: what the worker runs and what the calibration times in this process.
void spin(std::uint64_t iterations) {
  volatile std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) x = x + i;
}

// `count` iterations of `spins` loop turns each.
struct Segment {
  std::uint64_t spins = 0;
  int count = 0;
};

std::string format_segments(const std::vector<Segment>& segments) {
  std::string out;
  for (const Segment& s : segments) {
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", s.spins, s.count);
  }
  return out;
}

std::optional<std::vector<Segment>> parse_segments(std::string_view text) {
  std::vector<Segment> out;
  for (const std::string& item : split(text, ',')) {
    Segment s;
    if (std::sscanf(item.c_str(), "%lu:%d", &s.spins, &s.count) != 2 || s.count < 1) {
      return std::nullopt;
    }
    out.push_back(s);
  }
  return out;
}

// This thread's CPU time: what the kernel charged it, on the same clock CFS bandwidth control
// charges the slice's quota with, so the host's speed does not change the ratio of wall time
// to it.
std::int64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The worker (this program with --worker): `threads` threads run every segment in order, each
// iteration timed with the steady clock and the thread's CPU clock. After the timing it prints
// "total_ns T" (from the release of the threads to the last join), "start_ns S" (the release,
// on the steady clock) and, per segment and thread, "lat SEGMENT THREAD ns ns ..." (wall) and
// "cpu SEGMENT THREAD ns ns ..." (CPU), so no output falls inside the measurement.
int worker_main(int threads, const std::vector<Segment>& segments) {
  using Lat = std::vector<std::vector<std::int64_t>>;  // [segment][iteration]
  std::vector<Lat> lat(static_cast<size_t>(threads), Lat(segments.size()));
  std::vector<Lat> cpu_lat(lat);  // each iteration's CPU time, on the thread's own CPU clock
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Lat& mine = lat[static_cast<size_t>(t)];
      Lat& cpu = cpu_lat[static_cast<size_t>(t)];
      for (size_t s = 0; s < segments.size(); ++s) {
        mine[s].reserve(static_cast<size_t>(segments[s].count));
        cpu[s].reserve(static_cast<size_t>(segments[s].count));
      }
      start.arrive_and_wait();
      for (size_t s = 0; s < segments.size(); ++s) {
        for (int i = 0; i < segments[s].count; ++i) {
          const std::int64_t c0 = thread_cpu_ns();
          const auto t0 = Clock::now();
          spin(segments[s].spins);
          mine[s].push_back((Clock::now() - t0).count());
          cpu[s].push_back(thread_cpu_ns() - c0);
        }
      }
    });
  }
  const auto t0 = Clock::now();
  start.count_down();
  for (auto& t : pool) t.join();
  const auto total = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
  std::string out = fmt::format("total_ns {}\nstart_ns {}\n", total.count(),
                                std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    t0.time_since_epoch())
                                    .count());
  for (size_t s = 0; s < segments.size(); ++s) {
    for (size_t t = 0; t < lat.size(); ++t) {
      out += fmt::format("lat {} {} {}\n", s, t, fmt::join(lat[t][s], " "));
      out += fmt::format("cpu {} {} {}\n", s, t, fmt::join(cpu_lat[t][s], " "));
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 3;
}

// The memory workload (--touch): maps `bytes` of anonymous memory and writes every byte, so
// every page is charged to the slice, then exits.
int touch_main(std::uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  std::memset(p, 0xA5, bytes);
  return 0;
}

double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// Loop turns of spin() per millisecond of CPU here, from the fastest of five timed runs after a
// warm-up one. CPU time rather than wall time, so that other processes on a shared host do not
// shorten the iterations; the baseline runs measure what an iteration really takes.
double spins_per_ms() {
  constexpr std::uint64_t kProbe = 50'000'000;
  double fastest = 0;
  for (int i = 0; i < 6; ++i) {
    const double t0 = thread_cpu_ms();
    spin(kProbe);
    const double ms = thread_cpu_ms() - t0;
    if (i == 1 || (i > 1 && ms < fastest)) fastest = ms;
  }
  return double(kProbe) / fastest;
}

// ---------------------------------------------------------------------------------- files

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw BenchError(fmt::format("readlink /proc/self/exe: {}", std::strerror(errno)));
  return std::string(buf, static_cast<size_t>(n));
}

// A whole file through the library's file layer (src/sys/fs.hpp).
std::optional<std::string> slurp(const std::string& path) {
  return edgeprof::detail::Fs().read(path);
}

// The first of `names` found in one of the slice's cgroup directories, trimmed: what the kernel
// reports back for a setting (cpu.cfs_quota_us on v1, cpu.max on v2, ...).
std::optional<std::string> read_back(const edgeprof::Slice& slice,
                                     const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    for (const std::string& dir : slice.paths()) {
      if (auto text = slurp(edgeprof::detail::join(dir, name))) return trim(*text);
    }
  }
  return std::nullopt;
}

// The CPU settings the slice's cgroup holds: "cpuset 0, 5000/10000 us".
std::string applied_cpu(const edgeprof::Slice& slice) {
  const std::string cpus = read_back(slice, {files::v2::kCpusetCpus}).value_or("?");
  if (auto quota = read_back(slice, {files::v1::kCpuCfsQuotaUs})) {
    return fmt::format("cpuset {}, {}/{} us", cpus, *quota,
                       read_back(slice, {files::v1::kCpuCfsPeriodUs}).value_or("?"));
  }
  std::string max = read_back(slice, {files::v2::kCpuMax}).value_or("? ?");
  std::replace(max.begin(), max.end(), ' ', '/');
  return fmt::format("cpuset {}, {} us", cpus, max);
}

// ---------------------------------------------------------------------------------- other load

// Seconds each CPU has spent busy since boot, by CPU number (/proc/stat: everything but idle
// and iowait; steal included, since on a virtual machine a stolen tick is one the workload did
// not get). Tick-sampled: 1 / USER_HZ resolution.
std::map<int, double> busy_seconds() {
  static const double hz = double(::sysconf(_SC_CLK_TCK));
  std::map<int, double> out;
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 4 || line.rfind("cpu", 0) != 0 || !std::isdigit(line[3])) continue;
    int cpu = 0;
    unsigned long long user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                       steal = 0;
    if (std::sscanf(line.c_str(), "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user,
                    &nice, &sys, &idle, &iowait, &irq, &softirq, &steal) == 9) {
      out[cpu] = double(user + nice + sys + irq + softirq + steal) / hz;
    }
  }
  return out;
}

// The share of `cpus`' capacity over `wall_s` that went to anything but the workload between
// two busy_seconds() snapshots; `own_s` is the workload's CPU time in that window.
double others_share(const std::map<int, double>& before, const std::map<int, double>& after,
                    const std::vector<int>& cpus, double own_s, double wall_s) {
  if (cpus.empty() || wall_s <= 0) return 0;
  double busy = 0;
  for (int c : cpus) {
    const auto a = after.find(c), b = before.find(c);
    if (a != after.end() && b != before.end()) busy += a->second - b->second;
  }
  return std::max(0.0, busy - own_s) / (wall_s * double(cpus.size()));
}

// ---------------------------------------------------------------------------------- runs

// One run of the worker in a slice.
struct Run {
  double total_s = 0;  // the worker's own clock: release of its threads to the last join
  std::int64_t start_ns = 0;  // the release, on the steady clock
  // The host's speed meanwhile: loop turns per ms of a reference thread on a CPU outside the
  // slice, over the worker's window (Reference); unset where no CPU was free.
  std::optional<double> ref_turns_per_ms;
  double cpu_s = 0;    // user + system of the slice (cgroup counters)
  double wall_s = 0;   // Result::wall_time_s: exec to exit
  double throttled_s = 0;
  std::uint64_t periods = 0, throttled_periods = 0;
  std::vector<std::vector<double>> latency_ms;  // per segment, every thread's iterations
  // Per segment and thread, each iteration's wall time over its CPU time: how much throttling
  // stretched it, which the host's speed does not change.
  std::vector<std::vector<std::vector<double>>> stretch;
  std::string applied;                          // applied_cpu() while the slice lived
  std::uint64_t period_us = 0;                  // the plan's (it may raise what was asked)
  double others = 0;  // share of the cpuset other processes took during the run (others_share)
};

// How a shared host is kept out of the comparison: a baseline/emulated pair starts once its
// CPUs have been quiet (other processes under `threshold` of them over 0.5 s, waiting at most
// `max_wait_s`), and is run again (up to `max_attempts` in all) when others took more than
// `threshold` of them during either run. A pair still disturbed after that is kept and
// counted.
struct Contention {
  Contention(double threshold_, int max_attempts_, double max_wait_s_)
      : threshold(threshold_), max_attempts(max_attempts_), max_wait_s(max_wait_s_) {}

  double threshold;
  int max_attempts;
  double max_wait_s;
  int pairs = 0, repeats = 0, disturbed = 0;
  double waited_s = 0;
  std::vector<double> others;  // every kept run's share

  void wait_quiet(const std::vector<int>& cpus) {
    if (max_wait_s <= 0) return;
    const auto t0 = Clock::now();
    for (;;) {
      const auto before = busy_seconds();
      const auto w0 = Clock::now();
      sleep_checked(0.5);
      const double share = others_share(before, busy_seconds(), cpus, 0,
                                        seconds_between(w0, Clock::now()));
      if (share <= threshold || seconds_between(t0, Clock::now()) >= max_wait_s) break;
    }
    waited_s += seconds_between(t0, Clock::now());
  }

  // Runs `a` then `b`, repeating both while either was disturbed.
  std::pair<Run, Run> pair(const std::vector<int>& cpus, const std::function<Run()>& a,
                           const std::function<Run()>& b) {
    ++pairs;
    for (int attempt = 1;; ++attempt) {
      wait_quiet(cpus);
      Run ra = a();
      Run rb = b();
      const bool quiet = ra.others <= threshold && rb.others <= threshold;
      if (quiet || attempt == max_attempts) {
        disturbed += !quiet;
        others.push_back(ra.others);
        others.push_back(rb.others);
        return {std::move(ra), std::move(rb)};
      }
      ++repeats;
    }
  }

  std::string summary() const {
    return fmt::format(
        "Other load on the setting's CPUs (/proc/stat busy time less the workload's own): median "
        "{:.1f}%, max {:.1f}% of their capacity over a run; pairs started after up to {:g} s of "
        "quiet waiting ({:.0f} s in all) and were repeated when either run saw over {:.0f}%: {} "
        "of {} pairs repeated, {} still over after {} attempts (kept).",
        100 * quantile_of(others, 0.5), 100 * quantile_of(others, 1.0), max_wait_s, waited_s,
        100 * threshold, repeats, pairs, disturbed, max_attempts);
  }
};

// ---------------------------------------------------------------------------------- reference

// The host's own speed while a run goes on: a thread of this process, pinned to a CPU outside
// the slice, runs the worker's loop in chunks of `chunk_spins` turns and notes when each chunk
// ended. A shared virtual machine's speed drifts (up to 2.7x within minutes here, issue 6's
// Run 4), which a baseline run before or after cannot see; a reference running at the same time
// on another CPU can, as long as the drift hits both CPUs alike. (Checked on this host: one CPU's
// loop rate moved by 0.2% whether the other CPU was busy or idle.)
class Reference {
 public:
  Reference(int cpu, std::uint64_t chunk_spins) : chunk_spins_(chunk_spins) {
    ends_.reserve(1 << 16);
    thread_ = std::thread([this, cpu] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      ::pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      while (!stop_.load(std::memory_order_relaxed)) {
        spin(chunk_spins_);
        const std::int64_t now = Clock::now().time_since_epoch().count();
        std::lock_guard<std::mutex> guard(lock_);
        ends_.push_back(now);
      }
    });
  }
  ~Reference() { stop(); }
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Loop turns per ms over [from_ns, to_ns]: the chunks that ended in it (one chunk of
  // quantisation, 1 ms of work in 1 s: 0.1%); unset when none did.
  std::optional<double> turns_per_ms(std::int64_t from_ns, std::int64_t to_ns) const {
    std::lock_guard<std::mutex> guard(lock_);
    const auto a = std::lower_bound(ends_.begin(), ends_.end(), from_ns);
    const auto b = std::upper_bound(ends_.begin(), ends_.end(), to_ns);
    if (b - a < 2) return std::nullopt;
    // From the end of the first chunk in the window to the end of the last: whole chunks only.
    const double ms = double(*(b - 1) - *a) / 1e6;
    return double(chunk_spins_) * double(b - a - 1) / ms;
  }

 private:
  std::uint64_t chunk_spins_;
  std::atomic<bool> stop_{false};
  mutable std::mutex lock_;
  std::vector<std::int64_t> ends_;
  std::thread thread_;
};

edgeprof::Device cpu_device(int cores, double speed) {
  return edgeprof::make_device(fmt::format("{} x {}", cores, speed), cores, speed, "512MiB");
}

void check_ok(const edgeprof::Result& r) {
  if (r.ok()) return;
  check_stop();
  throw BenchError("the worker did not succeed: " + edgeprof::to_text(r));
}

class Runner {
 public:
  Runner(std::string exe, const std::string& dir, std::vector<int> cpus, bool keep_warm)
      : exe_(std::move(exe)), out_(dir + "/worker.out"), cpus_(std::move(cpus)),
        keep_warm_(keep_warm) {}

  // The worker with `threads` threads on `device` (its cores are the first host CPUs, the same
  // for baseline and emulated runs), CFS period `period_us`, no sampling. With
  // `reference_spins`, a Reference runs meanwhile on the first host CPU outside the slice, if
  // there is one, in chunks of that many turns.
  Run run(const edgeprof::Device& device, std::uint64_t period_us, int threads,
          const std::vector<Segment>& segments, double expected_s,
          std::uint64_t reference_spins = 0) const {
    edgeprof::SliceOptions options;
    options.plan.cpu_period_us = period_us;
    options.plan.cpus = cpus_for(device.cores);
    options.plan.keep_warm = keep_warm_;
    edgeprof::Slice slice(device, options);
    // A device at the host's speed (the baseline) runs with no quota: edgeprof writes none when
    // the quota is all of the cpuset (a quota of exactly that still throttled a busy worker,
    // 0.028 s in the median baseline run of 1.1 s in run 5, which shortened every slowdown
    // measured against it). Checked here, since every figure of this program depends on it.
    if (device.core_speed >= 1.0) require_no_quota(slice);
    Run run;
    run.applied = applied_cpu(slice);
    run.period_us = slice.plan().cpu_period_us;
    edgeprof::Command cmd;
    cmd.argv = {exe_, kWorkerFlag, std::to_string(threads), format_segments(segments)};
    cmd.stdout_stream = edgeprof::Stdio::file(out_);
    edgeprof::SpawnOptions spawn;
    spawn.sample_interval = std::chrono::nanoseconds(0);
    std::optional<Reference> reference;
    if (const auto cpu = free_cpu(device.cores); cpu && reference_spins > 0) {
      reference.emplace(*cpu, reference_spins);
    }
    const auto busy0 = busy_seconds();
    const auto t0 = Clock::now();
    const edgeprof::Result r =
        slice.spawn(cmd, spawn).wait(std::chrono::duration<double>(10 + 4 * expected_s),
                                     [] { check_stop(); });
    const double wall_s = seconds_between(t0, Clock::now());
    if (reference) reference->stop();
    check_ok(r);
    run.cpu_s = r.cpu_user_s + r.cpu_system_s;
    run.wall_s = r.wall_time_s;
    // The keep-warm threads are this program's, not others' (they run where the slice waits).
    run.others = others_share(busy0, busy_seconds(), slice.plan().cpus,
                              run.cpu_s + r.keep_warm_cpu_s, wall_s);
    run.throttled_s = r.throttled_s;
    run.periods = r.periods;
    run.throttled_periods = r.throttled_periods;
    parse_output(run, segments.size());
    if (reference) {
      run.ref_turns_per_ms = reference->turns_per_ms(
          run.start_ns, run.start_ns + static_cast<std::int64_t>(run.total_s * 1e9));
    }
    return run;
  }

  static void require_no_quota(const edgeprof::Slice& slice) {
    const std::string quota =
        read_back(slice, {files::v1::kCpuCfsQuotaUs, files::v2::kCpuMax}).value_or("-1");
    if (quota != "-1" && quota.rfind("max", 0) != 0) {
      throw BenchError("the baseline slice has a CPU quota (" + quota + "): expected none");
    }
  }

  // The first host CPU a device of `cores` cores leaves free, if any.
  std::optional<int> free_cpu(int cores) const {
    if (static_cast<size_t>(cores) >= cpus_.size()) return std::nullopt;
    return cpus_[static_cast<size_t>(cores)];
  }

  // The host CPUs a device of `cores` cores runs on: the first ones.
  std::vector<int> cpus_for(int cores) const {
    return {cpus_.begin(), cpus_.begin() + std::min<long>(cores, long(cpus_.size()))};
  }

 private:
  void parse_output(Run& run, size_t segments) const {
    const auto text = slurp(out_);
    if (!text) throw BenchError("cannot read the worker's output " + out_);
    run.latency_ms.assign(segments, {});
    // [segment][thread] -> nanoseconds, wall and CPU
    std::vector<std::map<unsigned long, std::vector<double>>> wall(segments), cpu(segments);
    bool total = false;
    for (const std::string& line : split(*text, '\n')) {
      const std::vector<std::string> words = split(line, ' ');
      if (words.size() == 2 && words[0] == "total_ns") {
        run.total_s = std::strtod(words[1].c_str(), nullptr) / 1e9;
        total = true;
      } else if (words.size() == 2 && words[0] == "start_ns") {
        run.start_ns = std::strtoll(words[1].c_str(), nullptr, 10);
      } else if (words.size() >= 3 && (words[0] == "lat" || words[0] == "cpu")) {
        const auto s = std::strtoul(words[1].c_str(), nullptr, 10);
        const auto t = std::strtoul(words[2].c_str(), nullptr, 10);
        if (s >= segments) throw BenchError("worker output: bad segment in: " + line);
        std::vector<double>& to = (words[0] == "lat" ? wall : cpu)[s][t];
        for (size_t i = 3; i < words.size(); ++i) {
          to.push_back(std::strtod(words[i].c_str(), nullptr));
        }
      }
    }
    if (!total) throw BenchError("worker output without total_ns: " + out_);
    run.stretch.assign(segments, {});
    for (size_t s = 0; s < segments; ++s) {
      for (const auto& [t, ns] : wall[s]) {
        for (double w : ns) run.latency_ms[s].push_back(w / 1e6);
        const std::vector<double>& c = cpu[s][t];
        if (c.size() != ns.size()) {
          throw BenchError(fmt::format("worker output: {} wall times but {} CPU times for "
                                       "segment {}, thread {}",
                                       ns.size(), c.size(), s, t));
        }
        std::vector<double>& st = run.stretch[s].emplace_back();
        for (size_t i = 0; i < ns.size(); ++i) st.push_back(c[i] > 0 ? ns[i] / c[i] : 0.0);
      }
    }
  }

  std::string exe_;
  std::string out_;
  std::vector<int> cpus_;
  bool keep_warm_ = true;
};

// ---------------------------------------------------------------------------------- formatting

std::string fmt_ms(double ms) {
  const double a = std::abs(ms);
  if (a >= 100) return fmt::format("{:.0f}", ms);
  if (a >= 10) return fmt::format("{:.1f}", ms);
  if (a >= 1) return fmt::format("{:.2f}", ms);
  return fmt::format("{:.3f}", ms);
}
std::string fmt_s(double s) { return fmt::format("{:.3f}", s); }
std::string fmt_x(double r) { return fmt::format("{:.3f}x", r); }
std::string fmt_pct(double fraction) { return fmt::format("{:+.1f}%", 100.0 * fraction); }
std::string fmt_speed(double speed) { return fmt::format("{:g}", speed); }
std::string fmt_period(std::uint64_t us) { return fmt::format("{:g} ms", double(us) / 1e3); }


template <typename Field>
std::vector<double> column(const std::vector<Run>& runs, Field field) {
  std::vector<double> out;
  for (const Run& r : runs) out.push_back(field(r));
  return out;
}
const auto kTotal = [](const Run& r) { return r.total_s; };
const auto kCpu = [](const Run& r) { return r.cpu_s; };
const auto kThrottled = [](const Run& r) { return r.throttled_s; };

// ---------------------------------------------------------------------------------- options

// A run is disturbed when others took more than this share of its CPUs.
constexpr double kQuietShare = 0.05;

struct Options {
  int reps = 5;
  double work_s = 1.0;
  std::vector<double> speeds = {0.25, 0.5, 0.75};
  std::vector<double> warm_speeds = {0.1, 0.25, 0.5, 0.75, 0.9};
  // Periods other than the default that the warm part also runs at speed 0.5 (ms).
  std::vector<int> warm_periods_ms = {5, 20, 50, 100};
  std::set<std::string> warm_workloads = {"add", "python", "numpy"};
  std::vector<int> periods_ms = {1, 2, 5, 10, 20, 50, 100};
  std::vector<double> sizes_ms = {1, 5, 20, 50};
  std::vector<int> counts = {200, 60, 20, 10};
  int mem_reps = 20;
  std::vector<std::uint64_t> mem_limits = {64ull << 20, (100ull << 20) + 4096,
                                           (100ull << 20) + 1000, 256ull << 20};
  std::uint64_t under_margin = 2ull << 20;
  double quiet_wait_s = 20;
  int attempts = 4;
  std::set<std::string> only = {"slowdown", "latency", "memory", "warm"};
  bool quick = false;
  bool keep_warm = true;  // for the slowdown and latency parts
  std::string markdown;
  std::string command_line;
};

// ---------------------------------------------------------------------------------- 1. slowdown

struct GridPoint {
  int cores = 1;
  double speed = 1;
  int threads = 1;
};

// The slowdown CFS bandwidth can produce at most for `p`: the baseline keeps min(threads,
// cores) CPUs busy; the quota grants cores x speed of them, shared by whichever threads run.
double quota_bound(const GridPoint& p) {
  const double busy = std::min(p.threads, p.cores);
  return busy / std::min(busy, p.cores * p.speed);
}

// Runs `n` interleaved baseline/emulated pairs per point, the points' order rotating every
// repetition and the pair's order alternating (ABAB), and reports the slowdown table and its
// rows of the targets table.
void slowdown(const Options& o, const Runner& runner, double spins_ms, Report& report,
              Table& targets) {
  std::vector<GridPoint> points;
  for (int threads : {1, 2}) {
    for (int cores : {1, 2}) {
      for (double speed : o.speeds) {
        if (cores * speed <= double(std::min<size_t>(2, std::thread::hardware_concurrency()))) {
          points.push_back({cores, speed, threads});
        }
      }
    }
  }
  if (o.quick) points = {{1, 0.5, 1}, {2, 0.5, 2}, {2, 0.5, 1}};
  constexpr double kIterationMs = 10;
  std::vector<std::vector<Run>> base(points.size()), emul(points.size());
  Contention contention(kQuietShare, o.attempts, o.quiet_wait_s);
  std::printf("\n[slowdown] %zu settings x %d repetitions, %g s of baseline work each "
              "(load average %s)\n",
              points.size(), o.reps, o.work_s, loadavg().c_str());
  std::fflush(stdout);
  for (int rep = 0; rep < o.reps; ++rep) {
    for (size_t k = 0; k < points.size(); ++k) {
      check_stop();
      const size_t i = (static_cast<size_t>(rep) + k) % points.size();
      const GridPoint& p = points[i];
      // Each thread's share of work_s seconds of baseline time on min(threads, cores) CPUs.
      const double thread_s = o.work_s * std::min(p.threads, p.cores) / p.threads;
      const int count = std::max(1, static_cast<int>(std::lround(thread_s * 1e3 / kIterationMs)));
      const std::vector<Segment> segs = {
          {static_cast<std::uint64_t>(spins_ms * kIterationMs), count}};
      // A reference on the free CPU, where there is one, in chunks of 1 ms of work.
      const auto chunk = static_cast<std::uint64_t>(spins_ms);
      const std::function<Run()> baseline = [&] {
        return runner.run(cpu_device(p.cores, 1.0), edgeprof::kDefaultCpuPeriodUs, p.threads,
                          segs, o.work_s, chunk);
      };
      const std::function<Run()> emulated = [&] {
        return runner.run(cpu_device(p.cores, p.speed), edgeprof::kDefaultCpuPeriodUs, p.threads,
                          segs, o.work_s / p.speed, chunk);
      };
      const std::vector<int> cpus = runner.cpus_for(p.cores);
      if ((rep + static_cast<int>(i)) % 2 == 0) {
        auto [b, e] = contention.pair(cpus, baseline, emulated);
        base[i].push_back(std::move(b));
        emul[i].push_back(std::move(e));
      } else {
        auto [e, b] = contention.pair(cpus, emulated, baseline);
        base[i].push_back(std::move(b));
        emul[i].push_back(std::move(e));
      }
    }
    std::printf("  repetition %d/%d done (load average %s)\n", rep + 1, o.reps, loadavg().c_str());
    std::fflush(stdout);
  }

  Table t{fmt::format("Total-time slowdown at the default period ({})",
                      fmt_period(edgeprof::kDefaultCpuPeriodUs)),
          {"kernel", "device (cores x speed)", "applied (read back)", "n", "baseline s",
           "emulated s", "slowdown", "target 1/speed", "error", "pairs: error range",
           "cpu.max bound", "throttled s", "within 3%?", "CPU granted, cores",
           "granted / usable quota", "host speed range",
           "slowdown, drift-corrected", "error, drift-corrected",
           "pairs: drift-corrected error range", "within 3%, drift-corrected?"},
          {},
          {}};
  int met = 0, met_bound = 0, expressible = 0;
  double worst = 0, worst_bound = 0;
  int corrected = 0, met_corrected = 0;
  double worst_corrected = 0;
  double granted_worst = 0;  // the largest difference, signed
  int granted_met = 0;
  std::string granted_worst_at;
  for (size_t i = 0; i < points.size(); ++i) {
    const GridPoint& p = points[i];
    const double b = median(column(base[i], kTotal));
    const double e = median(column(emul[i], kTotal));
    const double target = 1.0 / p.speed;
    const double err = e / b / target - 1;
    std::vector<double> pair_err;
    for (size_t r = 0; r < base[i].size(); ++r) {
      pair_err.push_back(emul[i][r].total_s / base[i][r].total_s / target - 1);
    }
    std::sort(pair_err.begin(), pair_err.end());
    const double bound = quota_bound(p);
    const bool ok = std::abs(err) <= 0.03;
    met += ok;
    worst = std::max(worst, std::abs(err));
    if (std::abs(bound - target) < 1e-9) {
      ++expressible;
      met_bound += ok;
      worst_bound = std::max(worst_bound, std::abs(err));
    }
    // Drift-corrected: each run's time in reference work (time x the reference's rate then),
    // so that a host slower during one run than during the other does not count as error.
    std::vector<double> nb, ne, pair_c, rates;
    for (size_t r = 0; r < base[i].size(); ++r) {
      const Run& rb = base[i][r];
      const Run& re = emul[i][r];
      if (!rb.ref_turns_per_ms || !re.ref_turns_per_ms) continue;
      nb.push_back(rb.total_s * *rb.ref_turns_per_ms);
      ne.push_back(re.total_s * *re.ref_turns_per_ms);
      pair_c.push_back(ne.back() / nb.back() / target - 1);
      rates.push_back(*rb.ref_turns_per_ms);
      rates.push_back(*re.ref_turns_per_ms);
    }
    std::vector<std::string> drift = {"no free CPU", "", "", "", ""};
    if (!pair_c.empty() && pair_c.size() == base[i].size()) {
      std::sort(pair_c.begin(), pair_c.end());
      const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
      const double c = median(ne) / median(nb);
      const double cerr = c / target - 1;
      const bool cok = std::abs(cerr) <= 0.03;
      ++corrected;
      met_corrected += cok;
      worst_corrected = std::max(worst_corrected, std::abs(cerr));
      drift = {fmt::format("{:.2f}x", *hi / *lo), fmt_x(c), fmt_pct(cerr),
               fmt::format("{} to {}", fmt_pct(pair_c.front()), fmt_pct(pair_c.back())),
               cok ? "yes" : "**no**"};
    }
    // What the kernel granted: the slice's CPU time over the run's wall time, both the
    // kernel's own accounts, so the host's speed does not enter. The threads can use at most
    // min(threads, cores, cores x speed) cores of it.
    std::vector<double> shares;
    for (const Run& r : emul[i]) {
      if (r.wall_s > 0) shares.push_back(r.cpu_s / r.wall_s);
    }
    const double usable = std::min({double(p.threads), double(p.cores), p.cores * p.speed});
    const double granted = shares.empty() ? 0.0 : median(shares);
    const double granted_err = granted / usable - 1;
    granted_met += std::abs(granted_err) <= 0.03;
    if (std::abs(granted_err) > std::abs(granted_worst)) {
      granted_worst = granted_err;
      granted_worst_at = fmt::format("{} thread{} on {} x {}", p.threads,
                                     p.threads == 1 ? "" : "s", p.cores, fmt_speed(p.speed));
    }
    std::vector<std::string> row = {
        fmt::format("{} thread{}", p.threads, p.threads == 1 ? "" : "s"),
        fmt::format("{} x {}", p.cores, fmt_speed(p.speed)), emul[i].front().applied,
        std::to_string(base[i].size()), fmt_s(b), fmt_s(e), fmt_x(e / b), fmt_x(target),
        fmt_pct(err),
        fmt::format("{} to {}", fmt_pct(pair_err.front()), fmt_pct(pair_err.back())),
        fmt_x(bound), fmt::format("{:.2f}", median(column(emul[i], kThrottled))),
        ok ? "yes" : "**no**", fmt::format("{:.3f}", granted), fmt_pct(granted_err)};
    row.insert(row.end(), drift.begin(), drift.end());
    t.rows.push_back(std::move(row));
  }
  t.notes.push_back(fmt::format(
      "Baseline: the same worker in a slice with the same cpuset at core_speed 1.0 and no "
      "quota (median throttled time of the baseline runs: {:.3f} s). Times: the "
      "worker's own steady clock from the release of its threads to the last join, iterations "
      "of {:g} ms; {:g} s of baseline work per run. Slowdown: ratio of the medians; error: "
      "slowdown / target - 1; pairs: the same for each baseline/emulated pair.",
      [&] {
        std::vector<double> all;
        for (const auto& runs : base) {
          for (const Run& r : runs) all.push_back(r.throttled_s);
        }
        return median(all);
      }(),
      kIterationMs, o.work_s));
  t.notes.push_back(
      "cpu.max bound: the slowdown CFS bandwidth can produce at most, min(threads, cores) / "
      "min(threads, cores, cores x speed): the quota is the whole slice's, so fewer busy threads "
      "than device cores share all of it and run faster than a device core would.");
  t.notes.push_back(fmt::format(
      "Within 3% of the target: {} of {} settings; of the {} where the bound equals the target "
      "(the kernel keeps every device core busy): {}.",
      met, points.size(), expressible, met_bound));
  t.notes.push_back(
      "CPU granted: the slice's CPU time (cgroup counters) over the run's wall time "
      "(Result::wall_time_s, exec to exit), median of the emulated runs; usable quota: "
      "min(threads, cores, cores x speed) host cores. Both are the kernel's own accounts, so "
      "this checks the mechanism whatever the host's speed did; the run's start and end, less "
      "busy than its middle, count against it.");
  t.notes.push_back(
      "Drift-corrected: during every run a reference thread of this program, pinned to a host "
      "CPU outside the slice, runs the same loop in chunks of 1 ms of work; each run's time is "
      "multiplied by the reference's rate over the worker's own window, and the slowdown is the "
      "ratio of the medians of those products. Host speed range: the fastest reference rate of "
      "the setting's runs over the slowest. Only where the device leaves a host CPU free (1 core "
      "on this 2-CPU host); it assumes the host's speed changes alike on both CPUs.");
  t.notes.push_back(contention.summary());
  report.add(std::move(t));

  const std::string length =
      o.work_s >= 1 ? "" : fmt::format(" (runs of {:g} s here: a smoke run)", o.work_s);
  const int n = static_cast<int>(points.size());
  targets.rows.push_back(
      {"total-time slowdown within ±3% of 1/speed, runs of at least 1 s, every setting" + length,
       fmt::format("{} of {} settings; largest error {:.1f}%", met, n, 100 * worst),
       met == n ? "yes" : "**no**"});
  targets.rows.push_back(
      {"the same where cpu.max can express the device (the busy threads fill its cores)" + length,
       fmt::format("{} of {} settings; largest error {:.1f}%", met_bound, expressible,
                   100 * worst_bound),
       met_bound == expressible ? "yes" : "**no**"});
  targets.rows.push_back(
      {"(a check of the mechanism, not a target of the issue) CPU the kernel granted within "
       "±3% of the usable quota" + length,
       fmt::format("{} of {} settings; largest difference {} ({})", granted_met, n,
                   fmt_pct(granted_worst), granted_worst_at),
       granted_met == n ? "yes" : "**no**"});
  if (corrected > 0) {
    targets.rows.push_back(
        {"the same, drift-corrected by a reference on a free CPU (settings that leave one)" +
             length,
         fmt::format("{} of {} settings; largest error {:.1f}%", met_corrected, corrected,
                     100 * worst_corrected),
         met_corrected == corrected ? "yes" : "**no**"});
  }
}

// ---------------------------------------------------------------------------------- 2. latency

struct LatencyConfig {
  int cores = 1;
  double speed = 0.5;
  int threads = 1;
};

// Per requested period, the runs of one config; periods the plan raised to one already measured
// are not run twice.
struct PeriodRuns {
  std::uint64_t requested_us = 0, effective_us = 0;
  std::vector<Run> base, emul;
};

std::string config_label(const LatencyConfig& c) {
  return fmt::format("{} thread{} on {} x {}", c.threads, c.threads == 1 ? "" : "s", c.cores,
                     fmt_speed(c.speed));
}

std::string period_label(const PeriodRuns& p) {
  return p.requested_us == p.effective_us
             ? fmt_period(p.effective_us)
             : fmt::format("{} (asked {})", fmt_period(p.effective_us), fmt_period(p.requested_us));
}

// Every iteration of segment `s` in `runs` (all threads), ascending.
std::vector<double> pooled(const std::vector<Run>& runs, size_t s) {
  std::vector<double> all;
  for (const Run& r : runs) all.insert(all.end(), r.latency_ms[s].begin(), r.latency_ms[s].end());
  std::sort(all.begin(), all.end());
  return all;
}

// The period the plan chooses for setting `c` when told its iterations take `host_ms` of host
// time, that is host_ms / speed on the device.
std::uint64_t chosen_period_us(const LatencyConfig& c, double host_ms) {
  static const edgeprof::HostFacts host = edgeprof::host_facts();
  edgeprof::PlanOptions po;
  po.iteration_time_us = static_cast<std::uint64_t>(std::llround(host_ms * 1000 / c.speed));
  return edgeprof::plan_emulation(cpu_device(c.cores, c.speed), host, po).cpu_period_us;
}

// Every iteration's stretch (wall / CPU) of segment `s` in `runs`, all threads; ascending.
std::vector<double> pooled_stretch(const std::vector<Run>& runs, size_t s) {
  std::vector<double> all;
  for (const Run& r : runs) {
    for (const std::vector<double>& thread : r.stretch[s]) {
      all.insert(all.end(), thread.begin(), thread.end());
    }
  }
  std::sort(all.begin(), all.end());
  return all;
}

// The p50 target is met within this.
constexpr double kP50Tolerance = 0.05;
// Iterations at least this long must meet it.
constexpr double kP50FromMs = 5;

// The tables of one latency setting, and its rows of the targets table.
void latency_tables(const Options& o, const LatencyConfig& c,
                    const std::vector<PeriodRuns>& periods, Report& report, Table& targets) {
  const std::string label = config_label(c);
  // The baseline of each size, pooled over every baseline run of this setting.
  std::vector<std::vector<double>> base(o.sizes_ms.size());
  for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
    for (const PeriodRuns& p : periods) {
      const std::vector<double> v = pooled(p.base, s);
      base[s].insert(base[s].end(), v.begin(), v.end());
    }
    std::sort(base[s].begin(), base[s].end());
  }
  auto target_of = [&](size_t s) { return quantile(base[s], 0.5) / c.speed; };
  auto error_of = [&](const PeriodRuns& p, size_t s) {
    return quantile(pooled(p.emul, s), 0.5) / target_of(s) - 1;
  };

  Table err{fmt::format("p50 latency error by iteration size and period: {}", label),
            {"iteration (host p50)"},
            {},
            {}};
  Table tail{fmt::format("p99 / p50 by iteration size and period: {}", label),
             {"iteration", "host"},
             {},
             {}};
  for (const PeriodRuns& p : periods) {
    err.header.push_back(period_label(p));
    tail.header.push_back(period_label(p));
  }
  for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
    const double host_p50 = quantile(base[s], 0.5);
    err.rows.push_back({fmt::format("{:g} ms ({} ms)", o.sizes_ms[s], fmt_ms(host_p50))});
    tail.rows.push_back({fmt::format("{:g} ms", o.sizes_ms[s]),
                         fmt::format("{:.2f}", quantile(base[s], 0.99) / host_p50)});
    for (const PeriodRuns& p : periods) {
      const double e = error_of(p, s);
      err.rows.back().push_back(std::abs(e) <= kP50Tolerance ? fmt_pct(e)
                                                             : "**" + fmt_pct(e) + "**");
      const std::vector<double> v = pooled(p.emul, s);
      tail.rows.back().push_back(fmt::format("{:.2f}", quantile(v, 0.99) / quantile(v, 0.5)));
    }
  }
  // The same target measured apart from the host's speed: each iteration's wall time against
  // its own CPU time / speed.
  auto stretch_error_of = [&](const PeriodRuns& p, size_t s) {
    return quantile(pooled_stretch(p.emul, s), 0.5) * c.speed - 1;
  };
  Table stretch{fmt::format("p50 stretch error by iteration size and period: {}", label),
                {"iteration", "host"},
                {},
                {}};
  for (const PeriodRuns& p : periods) stretch.header.push_back(period_label(p));
  for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
    stretch.rows.push_back({fmt::format("{:g} ms", o.sizes_ms[s])});
    // The baseline's: other processes preempting the workload, nothing else stretches it there.
    std::vector<double> b;
    for (const PeriodRuns& p : periods) {
      const std::vector<double> v = pooled_stretch(p.base, s);
      b.insert(b.end(), v.begin(), v.end());
    }
    std::sort(b.begin(), b.end());
    stretch.rows.back().push_back(fmt_pct(quantile(b, 0.5) - 1));
    for (const PeriodRuns& p : periods) {
      const double e = stretch_error_of(p, s);
      std::string cell = std::abs(e) <= kP50Tolerance ? fmt_pct(e) : "**" + fmt_pct(e) + "**";
      if (c.threads > 1) {
        double lo = 1e9, hi = -1e9;
        for (const Run& r : p.emul) {
          for (std::vector<double> thread : r.stretch[s]) {
            std::sort(thread.begin(), thread.end());
            const double te = quantile(thread, 0.5) * c.speed - 1;
            lo = std::min(lo, te);
            hi = std::max(hi, te);
          }
        }
        cell += fmt::format(" ({} to {})", fmt_pct(lo), fmt_pct(hi));
      }
      stretch.rows.back().push_back(cell);
    }
  }
  stretch.notes.push_back(fmt::format(
      "Stretch: an iteration's wall time over its own CPU time (the thread's CPU clock, which "
      "the kernel charges the quota with); error: the p50 over every iteration of the emulated "
      "runs x {} - 1. The host's speed changes both times alike, so this is what throttling "
      "did, apart from how fast the host ran; what throttling costs in CPU (the table of total "
      "time and CPU) is not in it. Host: the same for the baseline runs (other processes "
      "preempting the workload).{} In bold: outside ±{:.0f}%.",
      fmt_speed(c.speed),
      c.threads > 1 ? " In brackets: the lowest and highest p50 of one thread in one run." : "",
      100 * kP50Tolerance));
  report.add(std::move(stretch));

  Table detail{fmt::format("Per-iteration latency under emulation: {}", label),
               {"period", "iteration", "n", "target ms", "p50 ms", "p90 ms", "p99 ms", "max ms",
                "p50 error", "p99 / target"},
               {},
               {}};
  for (const PeriodRuns& p : periods) {
    for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
      const std::vector<double> v = pooled(p.emul, s);
      detail.rows.push_back({period_label(p), fmt::format("{:g} ms", o.sizes_ms[s]),
                             std::to_string(v.size()), fmt_ms(target_of(s)),
                             fmt_ms(quantile(v, 0.5)), fmt_ms(quantile(v, 0.9)),
                             fmt_ms(quantile(v, 0.99)), fmt_ms(v.empty() ? 0 : v.back()),
                             fmt_pct(error_of(p, s)),
                             fmt::format("{:.2f}", quantile(v, 0.99) / target_of(s))});
    }
  }
  const size_t runs = periods.empty() ? 0 : periods.front().emul.size();
  err.notes.push_back(fmt::format(
      "p50 of every iteration of the {} emulated runs per period ({} iterations per run and "
      "thread), pooled, against the target: the host's p50 (every iteration of this setting's "
      "{} baseline runs, in brackets) / {}. In bold: outside ±{:.0f}%. A period the plan raised "
      "(the kernel's smallest quota is 1 ms) names the period asked for.",
      runs, fmt::join(o.counts, " / "), runs * periods.size(), fmt_speed(c.speed),
      100 * kP50Tolerance));
  tail.notes.push_back(
      "The same runs; host: the baseline's. A slower clock would keep p99 / p50 at the host's; "
      "burst-then-stall widens it.");
  report.add(std::move(err));
  report.add(std::move(tail));
  report.add(std::move(detail));

  // Targets, for the latency and for the stretch: the period the plan chooses for each size,
  // and which periods meet the p50 target at each size (listed after the targets).
  std::vector<std::vector<std::string>> by_period;
  for (const bool by_stretch : {false, true}) {
    auto error = [&](const PeriodRuns& p, size_t s) {
      return by_stretch ? stretch_error_of(p, s) : error_of(p, s);
    };
    const char* what = by_stretch ? "stretch" : "latency";
    std::vector<std::string> errors;
    bool ok = true;
    for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
      if (o.sizes_ms[s] < kP50FromMs) continue;
      const std::uint64_t chosen = chosen_period_us(c, o.sizes_ms[s]);
      for (const PeriodRuns& p : periods) {
        if (p.requested_us != chosen) continue;
        errors.push_back(fmt::format("{:g} ms at {}: {}", o.sizes_ms[s],
                                     fmt_period(p.effective_us), fmt_pct(error(p, s))));
        ok = ok && std::abs(error(p, s)) <= kP50Tolerance;
      }
    }
    targets.rows.push_back(
        {fmt::format("p50 {} within ±{:.0f}% for iterations of {:g} ms or more with the "
                     "period the plan chooses, {}{}",
                     what, 100 * kP50Tolerance, kP50FromMs, label,
                     by_stretch ? " (apart from the host's speed)" : ""),
         fmt::format("{}", fmt::join(errors, ", ")), ok ? "yes" : "**no**"});
    std::vector<std::string> by_size;
    for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
      std::vector<std::string> good;
      for (const PeriodRuns& p : periods) {
        if (std::abs(error(p, s)) <= kP50Tolerance) good.push_back(fmt_period(p.effective_us));
      }
      by_size.push_back(fmt::format(
          "{:g} ms: {}", o.sizes_ms[s],
          good.empty() ? "none" : fmt::format("{}", fmt::join(good, ", "))));
    }
    by_period.push_back(
        {fmt::format("periods with p50 {} within ±{:.0f}%, by iteration size, {}", what,
                     100 * kP50Tolerance, label),
         fmt::format("{}", fmt::join(by_size, "; ")), "measured"});
  }
  targets.rows.insert(targets.rows.end(), by_period.begin(), by_period.end());
}

// The cost side of the period: total-time error and CPU time at each period.
void period_cost_table(const std::vector<LatencyConfig>& configs,
                       const std::vector<std::vector<PeriodRuns>>& all,
                       const Contention& contention, Report& report) {
  Table t{"Total time and CPU by period (the latency runs)",
          {"setting", "period", "n", "baseline s", "emulated s", "slowdown", "error",
           "emulated CPU / baseline CPU", "throttled periods / s"},
          {},
          {}};
  for (size_t k = 0; k < configs.size(); ++k) {
    const LatencyConfig& c = configs[k];
    for (const PeriodRuns& p : all[k]) {
      const double b = median(column(p.base, kTotal));
      const double e = median(column(p.emul, kTotal));
      const double tp = median(column(p.emul, [](const Run& r) {
        return r.total_s > 0 ? double(r.throttled_periods) / r.total_s : 0.0;
      }));
      t.rows.push_back({config_label(c), fmt_period(p.effective_us), std::to_string(p.emul.size()), fmt_s(b),
                        fmt_s(e), fmt_x(e / b), fmt_pct(e / b * c.speed - 1),
                        fmt_x(median(column(p.emul, kCpu)) / median(column(p.base, kCpu))),
                        fmt::format("{:.0f}", tp)});
    }
  }
  t.notes.push_back(
      "Medians of the runs; error: slowdown x speed - 1. CPU: user + system of the slice "
      "(cgroup counters), emulated over baseline for the same work: what throttling itself "
      "costs the workload. Baselines at core_speed 1.0 with no quota, at the default period.");
  t.notes.push_back(contention.summary());
  report.add(std::move(t));
}

void latency(const Options& o, const Runner& runner, double spins_ms, Report& report,
             Table& targets) {
  std::vector<LatencyConfig> configs = {{1, 0.5, 1}, {2, 0.5, 2}};
  std::vector<Segment> segs;
  double host_s = 0;
  for (size_t s = 0; s < o.sizes_ms.size(); ++s) {
    segs.push_back({static_cast<std::uint64_t>(spins_ms * o.sizes_ms[s]), o.counts[s]});
    host_s += o.sizes_ms[s] * o.counts[s] / 1e3;
  }
  const edgeprof::HostFacts host = edgeprof::host_facts();
  std::vector<std::vector<PeriodRuns>> all;
  Contention contention(kQuietShare, o.attempts, o.quiet_wait_s);
  for (const LatencyConfig& c : configs) {
    std::vector<PeriodRuns> periods;
    std::set<std::uint64_t> seen;
    // The grid, and the period the plan chooses for each iteration size.
    std::set<std::uint64_t> requested;
    for (int ms : o.periods_ms) requested.insert(static_cast<std::uint64_t>(ms) * 1000);
    for (double ms : o.sizes_ms) requested.insert(chosen_period_us(c, ms));
    for (std::uint64_t us : requested) {
      edgeprof::PlanOptions po;
      po.cpu_period_us = us;
      const auto plan = edgeprof::plan_emulation(cpu_device(c.cores, c.speed), host, po);
      if (seen.insert(plan.cpu_period_us).second) {
        periods.push_back({po.cpu_period_us, plan.cpu_period_us, {}, {}});
      }
    }
    all.push_back(std::move(periods));
  }
  std::printf("\n[latency] %zu settings x %zu periods x %d repetitions, %.2f s of host work per "
              "run (load average %s)\n",
              configs.size(), all.front().size(), o.reps, host_s, loadavg().c_str());
  std::fflush(stdout);
  for (int rep = 0; rep < o.reps; ++rep) {
    for (size_t k = 0; k < configs.size(); ++k) {
      const LatencyConfig& c = configs[k];
      std::vector<PeriodRuns>& periods = all[k];
      for (size_t j = 0; j < periods.size(); ++j) {
        check_stop();
        const size_t i = (static_cast<size_t>(rep) + j) % periods.size();
        PeriodRuns& p = periods[i];
        const std::function<Run()> baseline = [&] {
          return runner.run(cpu_device(c.cores, 1.0), edgeprof::kDefaultCpuPeriodUs, c.threads,
                            segs, host_s);
        };
        const std::function<Run()> emulated = [&] {
          return runner.run(cpu_device(c.cores, c.speed), p.requested_us, c.threads, segs,
                            host_s / c.speed);
        };
        const std::vector<int> cpus = runner.cpus_for(c.cores);
        if ((rep + static_cast<int>(i)) % 2 == 0) {
          auto [b, e] = contention.pair(cpus, baseline, emulated);
          p.base.push_back(std::move(b));
          p.emul.push_back(std::move(e));
        } else {
          auto [e, b] = contention.pair(cpus, emulated, baseline);
          p.base.push_back(std::move(b));
          p.emul.push_back(std::move(e));
        }
      }
    }
    std::printf("  repetition %d/%d done (load average %s)\n", rep + 1, o.reps, loadavg().c_str());
    std::fflush(stdout);
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    latency_tables(o, configs[k], all[k], report, targets);
  }
  period_cost_table(configs, all, contention, report);
}

// ---------------------------------------------------------------------------------- 3. memory

struct TouchRun {
  bool ok = false, oom = false;
  std::optional<int> signal;
  std::uint64_t peak = 0;
  double wall_s = 0;
  std::string limit;  // the limit file as read back from this run's slice
};

std::string memory_file(edgeprof::CgroupMode mode) {
  return mode == edgeprof::CgroupMode::unified ? files::v2::kMemoryMax
                                               : files::v1::kMemoryLimitInBytes;
}
std::string swap_file(edgeprof::CgroupMode mode) {
  return mode == edgeprof::CgroupMode::unified ? files::v2::kMemorySwapMax
                                               : files::v1::kMemoryMemswLimitInBytes;
}

// A device with exactly `bytes` of memory (no size-string rounding) and no swap.
edgeprof::Device memory_device(std::uint64_t bytes) {
  edgeprof::Device d;
  d.name = fmt::format("memory {}", bytes);
  d.memory_bytes = bytes;
  d.validate();
  return d;
}

// One fresh slice with `limit` bytes, as edgeprof::run makes per run, touching `bytes`.
TouchRun touch_run(const std::string& exe, std::uint64_t limit, std::uint64_t bytes) {
  edgeprof::Slice slice(memory_device(limit));
  TouchRun run;
  run.limit = read_back(slice, {memory_file(slice.mode())}).value_or("?");
  edgeprof::Command cmd;
  cmd.argv = {exe, kTouchFlag, std::to_string(bytes)};
  edgeprof::SpawnOptions spawn;
  spawn.sample_interval = std::chrono::nanoseconds(0);
  const edgeprof::Result r =
      slice.spawn(cmd, spawn).wait(std::chrono::seconds(60), [] { check_stop(); });
  if (r.timed_out) throw BenchError(fmt::format("touch {} timed out", bytes));
  run.ok = r.ok();
  run.oom = r.oom_killed;
  run.signal = r.signal;
  run.peak = r.peak_memory_bytes.value_or(0);
  run.wall_s = r.wall_time_s;
  return run;
}

void memory(const Options& o, const std::string& exe, Report& report, Table& targets) {
  std::printf("\n[memory] %zu limits x %d repetitions of a touch just under and just over "
              "(load average %s)\n",
              o.mem_limits.size(), o.mem_reps, loadavg().c_str());
  std::fflush(stdout);
  Table limits{"Memory limit: asked for, planned, read back from the cgroup",
               {"asked bytes", "plan bytes", "read back bytes", "read back - asked", "file",
                "slices read", "all the same", "swap limit read back"},
               {},
               {}};
  Table oom{"Touching just under and just over the limit (a fresh slice per run)",
            {"limit (read back)", "touch", "bytes touched", "n", "exit 0", "OOM reported",
             "killed by SIGKILL", "peak max bytes", "limit - peak max", "median wall ms"},
            {},
            {}};
  int exact = 0, page_exact = 0, under_runs = 0, under_ok = 0, under_oom = 0, over_runs = 0,
      over_oom = 0;
  bool peaks_ok = true;
  std::vector<std::string> rounded;
  for (std::uint64_t asked : o.mem_limits) {
    std::string file, swap, text;
    std::uint64_t plan_bytes = 0;
    {
      const edgeprof::Slice slice(memory_device(asked));
      file = memory_file(slice.mode());
      swap = swap_file(slice.mode());
      text = read_back(slice, {file}).value_or("?");
      swap = fmt::format("{} ({})", read_back(slice, {swap}).value_or("-"), swap);
      plan_bytes = slice.plan().memory_max_bytes;
    }
    const std::uint64_t applied = std::strtoull(text.c_str(), nullptr, 10);
    // Just under: the limit less a margin for the process itself (stack, page tables, the
    // binary's private pages); just over: one page past the limit in anonymous memory alone,
    // which cannot be reclaimed (there is no swap).
    const std::uint64_t under = applied - o.under_margin, over = applied + page_size();
    std::vector<TouchRun> below, above;
    for (int rep = 0; rep < o.mem_reps; ++rep) {
      check_stop();
      if (rep % 2 == 0) {
        below.push_back(touch_run(exe, asked, under));
        above.push_back(touch_run(exe, asked, over));
      } else {
        above.push_back(touch_run(exe, asked, over));
        below.push_back(touch_run(exe, asked, under));
      }
    }
    bool same = true;
    for (const auto* runs : {&below, &above}) {
      for (const TouchRun& r : *runs) same = same && r.limit == text;
    }
    exact += applied == asked;
    page_exact += applied == asked / page_size() * page_size();
    if (applied != asked) rounded.push_back(fmt::format("{} -> {}", asked, applied));
    limits.rows.push_back(
        {std::to_string(asked), std::to_string(plan_bytes), text,
         fmt::format("{:+}", static_cast<long long>(applied) - static_cast<long long>(asked)),
         file, std::to_string(1 + below.size() + above.size()), same ? "yes" : "**no**", swap});
    for (const auto& [name, bytes, runs] : {std::tuple{"limit - margin", under, &below},
                                            std::tuple{"limit + 1 page", over, &above}}) {
      int ok = 0, ooms = 0, killed = 0;
      std::uint64_t peak = 0;
      std::vector<double> wall;
      for (const TouchRun& r : *runs) {
        ok += r.ok;
        ooms += r.oom;
        killed += r.signal == SIGKILL;
        peak = std::max(peak, r.peak);
        wall.push_back(r.wall_s * 1e3);
      }
      const int n = static_cast<int>(runs->size());
      peaks_ok = peaks_ok && peak <= applied;
      if (runs == &below) {
        under_runs += n;
        under_ok += ok;
        under_oom += ooms;
      } else {
        over_runs += n;
        over_oom += ooms;
      }
      oom.rows.push_back({std::to_string(applied), name, std::to_string(bytes), std::to_string(n),
                          fmt::format("{}/{}", ok, n), fmt::format("{}/{}", ooms, n),
                          fmt::format("{}/{}", killed, n), std::to_string(peak),
                          fmt::format("{:+}", static_cast<long long>(applied) -
                                                  static_cast<long long>(peak)),
                          fmt_ms(median(wall))});
    }
  }
  limits.notes.push_back(fmt::format(
      "Read back from the slice's memory cgroup while it lived: one slice made for this table, "
      "then every slice of the runs below. The kernel keeps the limit in pages of {} B and "
      "rounds a value that is not a multiple of the page size down.",
      page_size()));
  oom.notes.push_back(fmt::format(
      "Under and over alternate. Margin: {} B left for the process's own memory (stack, page "
      "tables, the binary's private pages). OOM reported: Result::oom_killed (oom_kill in "
      "memory.oom_control on v1, memory.events on v2). Peak: Result::peak_memory_bytes (the "
      "kernel's own peak counter), the highest of the runs. Wall: Result::wall_time_s.",
      o.under_margin));
  report.add(std::move(limits));
  report.add(std::move(oom));

  const int n = static_cast<int>(o.mem_limits.size());
  targets.rows.push_back(
      {"memory limit honoured to the byte (read back from the cgroup)",
       fmt::format("{} of {} exactly; {} of {} to the page{}", exact, n, page_exact, n,
                   rounded.empty() ? std::string()
                                   : fmt::format(" (rounded down: {})", fmt::join(rounded, ", "))),
       exact == n ? "yes" : page_exact == n ? "to the page" : "**no**"});
  targets.rows.push_back({"OOM detected every time (touching the limit + 1 page)",
                          fmt::format("{}/{} reported", over_oom, over_runs),
                          over_oom == over_runs ? "yes" : "**no**"});
  targets.rows.push_back(
      {"no false OOM (touching the limit - margin)",
       fmt::format("{}/{} reported OOM, {}/{} exited 0; peak never above the limit: {}", under_oom,
                   under_runs, under_ok, under_runs, peaks_ok ? "yes" : "no"),
       under_oom == 0 && under_ok == under_runs && peaks_ok ? "yes" : "**no**"});
}

// ---------------------------------------------------------------------------------- 4. keep-warm

// The keep-warm part (issue 15): whether a throttled slice does the work per CPU-second an
// unthrottled one does, with the slice's CPUs kept warm (PlanOptions::keep_warm) and without,
// and what keeping them warm costs other work on the host.

// A fixed amount of work, run as it is by edgeprof::run.
struct WarmWorkload {
  std::string name;
  edgeprof::Command command;
};

// One run: the slice's CPU time and the wall time of the same work, and the keep-warm
// threads' CPU.
struct WarmRun {
  double cpu_s = 0, wall_s = 0, warm_cpu_s = 0;
};

WarmRun warm_run(const WarmWorkload& w, const edgeprof::Device& device, std::uint64_t period_us,
                 const std::vector<int>& cpus, bool keep_warm, double expected_s) {
  edgeprof::RunOptions o;
  o.slice.plan.cpu_period_us = period_us;
  o.slice.plan.cpus = cpus;
  o.slice.plan.keep_warm = keep_warm;
  o.spawn.sample_interval = std::chrono::nanoseconds(0);
  o.timeout = std::chrono::duration<double>(10 + 4 * expected_s);
  o.check = [] { check_stop(); };
  const edgeprof::Result r = edgeprof::run(w.command, device, o);
  check_ok(r);
  // Above kKeepWarmMaxShare the plan leaves it off whatever is asked: the default is measured.
  if (keep_warm != r.plan.keep_warm && device.core_speed <= edgeprof::kKeepWarmMaxShare) {
    throw BenchError(fmt::format("keep_warm {} was asked for but the plan has {}", keep_warm,
                                 r.plan.keep_warm));
  }
  return {r.cpu_user_s + r.cpu_system_s, r.wall_time_s, r.keep_warm_cpu_s};
}

// A Python command, or nothing when python3 (or the module it imports) is missing here.
std::optional<edgeprof::Command> python_command(const std::string& code,
                                                const std::string& module = {}) {
  const std::string probe = "python3 -c 'import " + (module.empty() ? "sys" : module) +
                            "' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) return std::nullopt;
  edgeprof::Command c;
  c.argv = {"python3", "-c", code};
  c.stdout_stream = edgeprof::Stdio::discard();
  return c;
}

// The workloads, each sized to about `work_s` of CPU at full speed here: the fidelity worker's
// add loop (registers only), a Python loop (an interpreter: instruction cache, branch
// predictors, memory), and float32 matrix products in numpy on one thread (the vector units
// CNN inference uses). Sizes are calibrated by one unthrottled run of each.
std::vector<WarmWorkload> warm_workloads(const std::string& exe, double spins_ms, double work_s,
                                         bool quick, const std::set<std::string>& names) {
  std::vector<WarmWorkload> out;
  const int count = std::max(1, static_cast<int>(std::lround(work_s * 1e3 / 10)));
  edgeprof::Command add;
  add.argv = {exe, kWorkerFlag, "1",
              format_segments({{static_cast<std::uint64_t>(spins_ms * 10), count}})};
  add.stdout_stream = edgeprof::Stdio::discard();
  if (names.count("add")) out.push_back({"add loop (C++)", add});
  if (quick) return out;
  const edgeprof::Device full = cpu_device(1, 1.0);
  auto sized = [&](const std::string& name, const std::string& module,
                   const std::function<std::string(long)>& code, long trial) {
    auto c = python_command(code(trial), module);
    if (!c) {
      std::printf("  %s: skipped (python3%s not found)\n", name.c_str(),
                  module.empty() ? "" : (" with " + module).c_str());
      return;
    }
    // One thread, as the slice has one core.
    c->env = std::vector<std::string>{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1",
                                      "MKL_NUM_THREADS=1"};
    for (char** e = environ; *e; ++e) c->env->push_back(*e);
    const WarmRun r = warm_run({name, *c}, full, edgeprof::kDefaultCpuPeriodUs, {0}, false, 60);
    const long n = std::max(1L, std::lround(double(trial) * work_s / std::max(r.cpu_s, 1e-3)));
    c->argv.back() = code(n);
    out.push_back({name, *c});
  };
  if (names.count("python")) {
    sized("Python loop", "", [](long n) {
      return fmt::format("x = 0\nfor i in range({}):\n    x += i\n", n);
    }, 5'000'000);
  }
  if (names.count("numpy")) {
    sized("numpy sgemm 128", "numpy", [](long n) {
      return fmt::format("import numpy as np\na = np.ones((128, 128), np.float32)\n"
                         "for _ in range({}):\n    a = (a @ a) * np.float32(1e-3)\n", n);
    }, 20'000);
  }
  return out;
}

// What keeping a CPU warm costs other work: a thread of this program, outside any slice, counts
// add-loop turns on the slice's CPU and on another, while a 1 x 0.5 slice runs a workload with
// keep-warm off or on (alternating). Where the two CPUs share a core's execution resources
// (SMT siblings, or virtual CPUs on them), the spinning CPU slows the other.
void warm_cost(const Options& o, const std::string& exe, double spins_ms, Report& report) {
  const std::vector<int> host = edgeprof::host_facts().cpus;
  Table t{"Keep-warm: cost to other work (a CPU-bound thread outside the slice, 1 x 0.5 slice "
          "on host CPU " + std::to_string(host.front()) + ")",
          {"other work on", "n", "turns/ms, off", "turns/ms, on", "slower with keep-warm on"},
          {},
          {fmt::format("turns/ms: a normal-priority thread's add-loop rate while the slice's "
                       "workload (the add loop, {:g} s of CPU) ran, median over runs with "
                       "keep-warm off and on alternating",
                       o.work_s)}};
  const auto chunk = static_cast<std::uint64_t>(spins_ms);
  const int count = std::max(1, static_cast<int>(std::lround(o.work_s * 1e3 / 10)));
  edgeprof::Command add;
  add.argv = {exe, kWorkerFlag, "1",
              format_segments({{static_cast<std::uint64_t>(spins_ms * 10), count}})};
  add.stdout_stream = edgeprof::Stdio::discard();
  const WarmWorkload w{"add loop", add};
  std::vector<std::pair<std::string, int>> places = {{"the same CPU", host.front()}};
  if (host.size() > 1) places.push_back({"another CPU", host[1]});
  for (const auto& [label, cpu] : places) {
    std::vector<double> rate[2];
    for (int rep = 0; rep < 2 * o.reps; ++rep) {
      check_stop();
      const bool warm = (rep % 4 == 1 || rep % 4 == 2);  // off on on off ...
      Reference other(cpu, chunk);
      const auto t0 = Clock::now();
      warm_run(w, cpu_device(1, 0.5), edgeprof::kDefaultCpuPeriodUs, {host.front()}, warm,
               2 * o.work_s);
      const auto t1 = Clock::now();
      other.stop();
      const auto ns = [](Clock::time_point p) {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(p.time_since_epoch()).count();
      };
      if (auto r = other.turns_per_ms(ns(t0), ns(t1))) rate[warm].push_back(*r);
    }
    const double a = median(rate[0]), b = median(rate[1]);
    t.rows.push_back({label, std::to_string(rate[1].size()), fmt::format("{:.0f}", a),
                      fmt::format("{:.0f}", b), fmt_pct(1 - b / a)});
  }
  report.add(std::move(t));
}

struct WarmSetting {
  double speed = 0.5;
  std::uint64_t period_us = 10000;
};

void keep_warm_part(const Options& o, const std::string& exe, double spins_ms, Report& report,
                    Table& targets) {
  const std::vector<int> cpus = {edgeprof::host_facts().cpus.front()};
  std::vector<WarmSetting> settings;
  for (double s : o.warm_speeds) settings.push_back({s, edgeprof::kDefaultCpuPeriodUs});
  for (int ms : o.warm_periods_ms) {
    const auto us = static_cast<std::uint64_t>(ms) * 1000;
    if (us >= edgeprof::kMinChosenCpuPeriodUs && us != edgeprof::kDefaultCpuPeriodUs) {
      settings.push_back({0.5, us});
    }
  }
  if (o.quick) settings = {{0.5, edgeprof::kDefaultCpuPeriodUs}};
  std::printf("\n[keep-warm] workloads sized to %g s of CPU (load average %s)\n", o.work_s,
              loadavg().c_str());
  std::fflush(stdout);
  const std::vector<WarmWorkload> workloads =
      warm_workloads(exe, spins_ms, o.work_s, o.quick, o.warm_workloads);
  std::printf("  %zu workloads x %zu settings x %d repetitions: baseline, keep-warm off and on, "
              "in rotating order\n",
              workloads.size(), settings.size(), o.reps);
  std::fflush(stdout);
  // [workload][setting] -> runs
  using Runs = std::vector<std::vector<std::vector<WarmRun>>>;
  Runs base(workloads.size(), std::vector<std::vector<WarmRun>>(settings.size()));
  Runs off = base, on = base;
  Contention contention(kQuietShare, o.attempts, o.quiet_wait_s);
  for (int rep = 0; rep < o.reps; ++rep) {
    for (size_t w = 0; w < workloads.size(); ++w) {
      for (size_t k = 0; k < settings.size(); ++k) {
        check_stop();
        const size_t i = (static_cast<size_t>(rep) + k) % settings.size();
        const WarmSetting& s = settings[i];
        const double expect = o.work_s / s.speed;
        std::function<void()> steps[3] = {
            [&] {
              base[w][i].push_back(warm_run(workloads[w], cpu_device(1, 1.0),
                                            edgeprof::kDefaultCpuPeriodUs, cpus, true, o.work_s));
            },
            [&] {
              off[w][i].push_back(
                  warm_run(workloads[w], cpu_device(1, s.speed), s.period_us, cpus, false, expect));
            },
            [&] {
              on[w][i].push_back(
                  warm_run(workloads[w], cpu_device(1, s.speed), s.period_us, cpus, true, expect));
            }};
        contention.wait_quiet(cpus);
        // Rotate which of the three runs first, so drift hits them alike.
        for (size_t j = 0; j < 3; ++j) steps[(static_cast<size_t>(rep) + i + j) % 3]();
      }
    }
    std::printf("  repetition %d/%d done (load average %s)\n", rep + 1, o.reps, loadavg().c_str());
    std::fflush(stdout);
  }

  Table t{"Keep-warm: work per CPU-second and total-time slowdown, 1 core on host CPU " +
              std::to_string(cpus.front()),
          {"workload", "speed", "period", "n", "baseline CPU s", "CPU ratio, off",
           "CPU ratio, on", "stretch error, off", "stretch error, on", "slowdown error, off",
           "slowdown error, on", "on: pairs' error range",
           "keep-warm CPU s (on)", "within 3%, on?"},
          {},
          {"CPU ratio: the slice's CPU time for the same work over the baseline's (unthrottled, no "
           "quota, same CPU), median of the per-repetition ratios; 1.000 = the quota buys the "
           "work it should.",
           "stretch error: the run's wall time over its own CPU time, times the speed, less 1: "
           "what throttling did to the wall time apart from the host's speed and the work per "
           "CPU-second (0 = the workload got exactly its quota), median.",
           "slowdown error: emulated wall time over the baseline's, times the speed, less 1 "
           "(0 = exactly 1 / speed), median over repetitions; each repetition runs baseline, "
           "off and on back to back in rotating order.",
           "keep-warm CPU: CPU seconds of the idle-priority threads during the run "
           "(Result::keep_warm_cpu_s), median.",
           fmt::format("Above speed {:g} (PlanOptions::keep_warm's limit, kKeepWarmMaxShare) "
                       "the plan leaves keep-warm off: there the 'on' runs are the default, "
                       "without it.",
                       edgeprof::kKeepWarmMaxShare),
           fmt::format("Each repetition of a setting started once its CPU had been quiet (other "
                       "processes under {:.0f}% of it over 0.5 s, waiting at most {:g} s; {:.0f} "
                       "s waited in all).",
                       100 * kQuietShare, o.quiet_wait_s, contention.waited_s)}};
  int met_on = 0, met_off = 0, total = 0;
  double worst_on = 0, worst_off = 0;
  for (size_t w = 0; w < workloads.size(); ++w) {
    for (size_t i = 0; i < settings.size(); ++i) {
      const auto ratio = [&](const std::vector<WarmRun>& runs, auto field) {
        std::vector<double> v;
        for (size_t r = 0; r < runs.size(); ++r) v.push_back(field(runs[r]) / field(base[w][i][r]));
        return v;
      };
      const auto cpu = [](const WarmRun& r) { return r.cpu_s; };
      const auto wall = [](const WarmRun& r) { return r.wall_s; };
      const double speed = settings[i].speed;
      const auto stretch = [&](const std::vector<WarmRun>& runs) {
        std::vector<double> v;
        for (const WarmRun& r : runs) v.push_back(r.wall_s / std::max(r.cpu_s, 1e-9) * speed - 1);
        return median(v);
      };
      std::vector<double> err_on = ratio(on[w][i], wall), err_off = ratio(off[w][i], wall);
      for (double& e : err_on) e = e * speed - 1;
      for (double& e : err_off) e = e * speed - 1;
      std::vector<double> warm, base_cpu;
      for (const WarmRun& r : on[w][i]) warm.push_back(r.warm_cpu_s);
      for (const WarmRun& r : base[w][i]) base_cpu.push_back(r.cpu_s);
      const double e_on = median(err_on), e_off = median(err_off);
      ++total;
      met_on += std::abs(e_on) <= 0.03;
      met_off += std::abs(e_off) <= 0.03;
      worst_on = std::max(worst_on, std::abs(e_on));
      worst_off = std::max(worst_off, std::abs(e_off));
      t.rows.push_back({workloads[w].name, fmt_speed(speed), fmt_period(settings[i].period_us),
                        std::to_string(on[w][i].size()),
                        fmt_s(median(base_cpu)),
                        fmt::format("{:.3f}", median(ratio(off[w][i], cpu))),
                        fmt::format("{:.3f}", median(ratio(on[w][i], cpu))),
                        fmt_pct(stretch(off[w][i])), fmt_pct(stretch(on[w][i])), fmt_pct(e_off),
                        fmt_pct(e_on),
                        fmt::format("{} .. {}", fmt_pct(quantile_of(err_on, 0)),
                                    fmt_pct(quantile_of(err_on, 1))),
                        fmt_s(median(warm)), std::abs(e_on) <= 0.03 ? "yes" : "no"});
    }
  }
  report.add(std::move(t));
  targets.rows.push_back({"keep-warm on: total-time slowdown within ±3% of 1 / speed",
                          fmt::format("{} of {} settings (worst {}); off: {} of {} (worst {})",
                                      met_on, total, fmt_pct(worst_on), met_off, total,
                                      fmt_pct(worst_off)),
                          met_on == total ? "yes" : "no"});
  warm_cost(o, exe, spins_ms, report);
}


// ---------------------------------------------------------------------------------- main

void usage(FILE* to) {
  std::fprintf(
      to,
      "usage: edgeprof_bench_fidelity [--quick] [--reps N] [--work-seconds S]\n"
      "                               [--periods MS,MS,...] [--mem-reps N]\n"
      "                               [--only slowdown,latency,memory,warm] [--no-keep-warm]\n"
      "                               [--markdown FILE]\n"
      "\n"
      "Measures how faithfully a slice emulates a device: the total-time slowdown of CPU-bound\n"
      "kernels against 1/speed, per-iteration latency against the host's / speed for CFS\n"
      "periods of 1 to 100 ms, memory limits and OOM detection, and the work per CPU-second of\n"
      "throttled workloads with keep-warm off and on, and its cost to other work (see\n"
      "docs/benchmarks.md).\n"
      "Needs root.\n"
      "\n"
      "  --reps N          baseline/emulated pairs per setting (default 5)\n"
      "  --work-seconds S  baseline work per slowdown run (default 1)\n"
      "  --periods LIST    CFS periods for the latency part, ms (default 1,2,5,10,20,50,100)\n"
      "  --mem-reps N      runs under and over each memory limit (default 20)\n"
      "  --quiet-wait S    wait up to S s for the CPUs to be quiet before a pair (default 20)\n"
      "  --attempts N      run a pair up to N times while disturbed (default 4)\n"
      "  --only LIST       parts to run (default all)\n"
      "  --warm-speeds L   the warm part's speeds at the default period (default\n"
      "                    0.1,0.25,0.5,0.75,0.9)\n"
      "  --warm-periods L  the other periods, ms, the warm part runs at speed 0.5 (default\n"
      "                    5,20,50,100; 'none' for none)\n"
      "  --warm-workloads L  the warm part's workloads: add, python, numpy (default all)\n"
      "  --no-keep-warm    run the slowdown and latency parts with keep-warm off (the warm\n"
      "                    part compares off and on whatever this says)\n"
      "  --quick           a smoke run (about 15 s): fewer settings, periods and repetitions,\n"
      "                    no waiting for quiet CPUs\n"
      "  --markdown FILE   also write the tables as Markdown to FILE\n"
      "\n"
      "Exit status: 0 done (a missed target is reported, not an error), 1 error, 2 usage,\n"
      "77 cannot run here (not root, no cgroups), 130 interrupted (after cleaning up).\n");
}

const bench::Cli kCli{"edgeprof_bench_fidelity", usage};

Options parse_options(int argc, char** argv) {
  Options o;
  o.command_line = command_line(argc, argv);
  bool reps_given = false, work_given = false, periods_given = false, mem_given = false,
       wait_given = false, attempts_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--no-keep-warm") {
      o.keep_warm = false;
    } else if (a == "--reps") {
      o.reps = static_cast<int>(kCli.number(a, value(), 1, 1000));
      reps_given = true;
    } else if (a == "--work-seconds") {
      o.work_s = kCli.number(a, value(), 0.05, 600);
      work_given = true;
    } else if (a == "--periods") {
      const char* v = value();
      if (!v) kCli.fail("--periods wants a list of milliseconds");
      o.periods_ms.clear();
      for (const std::string& p : split(v, ',')) {
        o.periods_ms.push_back(static_cast<int>(kCli.number(a, p.c_str(), 1, 1000)));
      }
      periods_given = true;
    } else if (a == "--mem-reps") {
      o.mem_reps = static_cast<int>(kCli.number(a, value(), 1, 10000));
      mem_given = true;
    } else if (a == "--quiet-wait") {
      o.quiet_wait_s = kCli.number(a, value(), 0, 3600);
      wait_given = true;
    } else if (a == "--attempts") {
      o.attempts = static_cast<int>(kCli.number(a, value(), 1, 100));
      attempts_given = true;
    } else if (a == "--warm-speeds") {
      const char* v = value();
      if (!v) kCli.fail("--warm-speeds wants a list of speeds, e.g. 0.25,0.5,0.75");
      o.warm_speeds.clear();
      for (const std::string& p : split(v, ',')) {
        o.warm_speeds.push_back(kCli.number(a, p.c_str(), 0.01, 1));
      }
    } else if (a == "--warm-periods") {
      const char* v = value();
      if (!v) kCli.fail("--warm-periods wants a list of milliseconds or 'none'");
      o.warm_periods_ms.clear();
      if (std::string(v) != "none") {
        for (const std::string& p : split(v, ',')) {
          o.warm_periods_ms.push_back(static_cast<int>(kCli.number(a, p.c_str(), 1, 1000)));
        }
      }
    } else if (a == "--warm-workloads") {
      const char* v = value();
      if (!v) kCli.fail("--warm-workloads wants add, python and/or numpy");
      o.warm_workloads.clear();
      for (const std::string& w : split(v, ',')) {
        if (w != "add" && w != "python" && w != "numpy") {
          kCli.fail(fmt::format("--warm-workloads: unknown workload '{}' (add, python, numpy)", w));
        }
        o.warm_workloads.insert(w);
      }
    } else if (a == "--only") {
      const char* v = value();
      if (!v) kCli.fail("--only wants slowdown, latency, memory and/or warm");
      o.only.clear();
      for (const std::string& part : split(v, ',')) {
        if (part != "slowdown" && part != "latency" && part != "memory" && part != "warm") {
          kCli.fail(fmt::format("--only: unknown part '{}'", part));
        }
        o.only.insert(part);
      }
    } else {
      kCli.shared_option(a, value, o.markdown);
    }
  }
  if (o.quick) {
    if (!reps_given) o.reps = 1;
    if (!work_given) o.work_s = 0.3;
    if (!periods_given) o.periods_ms = {1, 10, 100};
    if (!mem_given) o.mem_reps = 2;
    if (!wait_given) o.quiet_wait_s = 0;
    if (!attempts_given) o.attempts = 1;
    o.sizes_ms = {1, 5, 20};
    o.counts = {50, 20, 5};
    o.mem_limits = {64ull << 20};
  }
  return o;
}

int run(const Options& o) {
  if (::geteuid() != 0) {
    throw CannotRun("needs root: it creates slices beneath its own cgroups (run it with sudo)");
  }
  if (::access("/sys/fs/cgroup", F_OK) != 0) throw CannotRun("/sys/fs/cgroup is not mounted");
  const std::string exe = self_exe();
  const ScratchDir dir("edgeprof-bench-fidelity");
  const edgeprof::HostFacts host = edgeprof::host_facts();
  const Runner runner(exe, dir.path(), host.cpus, o.keep_warm);
  const double spins_ms = spins_per_ms();

  Report report;
  report.program = "edgeprof_bench_fidelity";
  report.escape_cells = true;
  report.preamble = machine_lines(o.command_line);
  report.preamble.push_back(fmt::format(
      "workload: `edgeprof_bench_fidelity {} THREADS N:COUNT,...`, a volatile add loop, "
      "calibrated to {:.0f} turns per ms here; each setting's cores are host CPUs {} onwards, "
      "the same for baseline and emulated runs; no sampling (sample_interval 0); keep-warm {} "
      "in the slowdown and latency parts",
      kWorkerFlag, spins_ms, host.cpus.empty() ? 0 : host.cpus.front(),
      o.keep_warm ? "on (the default)" : "off (--no-keep-warm)"));
  report.preamble.push_back(fmt::format(
      "CFS bandwidth: default period {} (kDefaultCpuPeriodUs); the kernel hands quota to each "
      "CPU in slices of {} us ({})",
      fmt_period(edgeprof::kDefaultCpuPeriodUs),
      trim(slurp(files::kProcCfsBandwidthSlice).value_or("?")), files::kProcCfsBandwidthSlice));
  report.preamble.push_back(fmt::format("load average at the start: {}", loadavg()));
  std::printf("edgeprof_bench_fidelity\n");
  for (const auto& line : report.preamble) std::printf("  %s\n", line.c_str());
  std::fflush(stdout);

  Table targets{"Targets (this run)", {"target", "result", "met?"}, {}, {}};
  if (o.only.count("slowdown")) slowdown(o, runner, spins_ms, report, targets);
  if (o.only.count("latency")) latency(o, runner, spins_ms, report, targets);
  if (o.only.count("memory")) memory(o, exe, report, targets);
  if (o.only.count("warm")) keep_warm_part(o, exe, spins_ms, report, targets);
  report.add(std::move(targets));

  finish(report, o.markdown);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The workloads: this program re-executed inside a slice.
  if (argc == 4 && std::strcmp(argv[1], kWorkerFlag) == 0) {
    const auto segments = parse_segments(argv[3]);
    const int threads = std::atoi(argv[2]);
    if (!segments || threads < 1) return 64;
    return worker_main(threads, *segments);
  }
  if (argc == 3 && std::strcmp(argv[1], kTouchFlag) == 0) {
    return touch_main(std::strtoull(argv[2], nullptr, 10));
  }
  const Options o = parse_options(argc, argv);
  return bench::guarded_main("edgeprof_bench_fidelity", "interrupted (cleaned up)",
                             [&] { return run(o); });
}
