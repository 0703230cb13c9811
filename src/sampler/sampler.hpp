// The sampler: a thread that sleeps in epoll_wait until a timerfd's absolute deadlines, and
// takes an extra sample when the workload marks a phase. It outlives a run, so that a slice's
// next run reuses it: starting and joining a thread per run cost a spawn of /bin/true about a
// quarter of its time (docs/benchmarks.md). Between runs it sleeps, and ends after an idle while.
#pragma once

#include <bitset>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "nn/runtimes.hpp"
#include "sampler/sources.hpp"
#include "sampler/thread_census.hpp"

namespace edgeprof::detail {

inline constexpr std::chrono::nanoseconds kMinSampleInterval = std::chrono::milliseconds(1);
inline constexpr std::chrono::nanoseconds kMaxSampleInterval = std::chrono::seconds(60);
inline constexpr std::size_t kInitialSamples = 128;  // samples reserved per run
// How long the thread sleeps after a run before it ends: a slice's next run soon after reuses it,
// and a process that forks later (Python's multiprocessing) mostly finds no extra thread.
inline constexpr std::chrono::milliseconds kSamplerIdleExit{100};

// Throws Error naming the value when `interval` is outside 1 ms .. 60 s.
void check_sample_interval(std::chrono::nanoseconds interval);

// How many times this process is a fork away from the one that started: an object made before
// a fork whose thread or lock the child lacks (a Sampler, a RuntimeFollower) knows by it.
unsigned fork_count();

class Sampler {
 public:
  using Clock = std::chrono::steady_clock;

  // Throws Error when `interval` is outside 1 ms .. 60 s, or when the timerfd, epoll or eventfd
  // cannot be made. The thread starts with the first run.
  Sampler(Sources sources, std::chrono::nanoseconds interval);
  ~Sampler();  // ends and joins the thread (leaves it alone in a forked child: it is not there)
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Before start(): also read phase marks from `fd` during the next run (the non-blocking read
  // end of the phase pipe; owned by the caller, open until stop() returns). What arrives is
  // appended to marks() and sampled at once, so phase boundaries get samples of their own.
  void watch_marks(int fd) { marks_fd_ = fd; }
  // Once, before a start(): also note the inference runtimes the slice's processes load, read
  // from their maps at runtime_scan_at()'s times (on a scheduled tick, after its sample).
  void watch_runtimes(RuntimeWatch watch) { runtimes_ = std::move(watch); }
  // Before start(): called in the sampler's thread, with all the run has seen so far, after a
  // read of the maps that saw a runtime it had not (kept for later runs until replaced). It
  // runs under the sampler's lock: it must not call the sampler, and must be quick.
  void on_new_runtime(std::function<void(const RuntimesSeen&)> call) {
    on_new_runtime_ = std::move(call);
  }
  // Before start(): called in the sampler's thread, under its lock as on_new_runtime's, with the
  // complete lines of phase marks that arrived during a run, each time some do, and those left
  // in the pipe at stop() (there from the caller's thread) (an activation count,
  // RuntimeFollower::counted(); kept for later runs until replaced). Never with a partial line:
  // one is held until its newline arrives.
  void on_marks(std::function<void(std::string_view)> call) { on_marks_ = std::move(call); }
  // Once, before a start(): also read the slice's threads' states (ThreadCensus) at the first
  // sample and then on scheduled ticks about every Sources::kSlowSourceNs.
  void watch_threads(ThreadCensus census) { census_ = std::move(census); }
  // The census of the last run (or so far in this one): threads_at_once(), nullopt without one.
  std::optional<double> threads_at_once();
  // Reads the maps now, in the caller (a run at its timeout, before its processes are killed).
  void scan_runtimes();
  // The runtimes seen in the last run, or so far in this one.
  RuntimesSeen runtimes_seen();
  // Their libraries' whole paths (RuntimeWatch::paths()).
  RuntimesSeen runtime_paths();
  // Before start(): the interval of the next run (throws Error outside 1 ms .. 60 s). Slow
  // sources are then read about every Sources::kSlowSourceNs.
  void set_interval(std::chrono::nanoseconds interval);
  // Before start(): read the slow sources every `n` ticks instead (1: every source at every
  // tick, as before source rates; the sampler benchmark's baseline).
  void set_slow_every(std::uint32_t n) { sources_.set_slow_every(n, interval_.count()); }

  // Begins a run: forgets the last run's samples and marks, takes a first sample at once (in
  // the caller, so it precedes the workload however late the thread gets going), and arms the
  // timer for origin + k x interval (no drift). Returns the origin, the moment of the first
  // sample, to which every sample time is relative. Throws Error when the timer or the marks
  // cannot be armed.
  Clock::time_point start();
  // Ends the run: reads the marks left in the pipe and takes a last sample (the final counters),
  // in the caller. The thread sleeps until the next run, or ends after kSamplerIdleExit.
  void stop();

  // The samples of the last run; read after stop().
  const Columns& columns() const { return columns_; }
  Columns take_columns() { return std::move(columns_); }
  const Sources& sources() const { return sources_; }
  // The raw text of the phase marks received in the last run (read after stop()).
  const std::string& marks() const { return marks_; }
  // The metrics the first sample of the last run read (its row 0 holds real values for them).
  const std::bitset<kMetricCount>& first_read() const { return first_read_; }
  std::chrono::nanoseconds interval() const { return interval_; }
  // Deadlines of the last run passed while a sample was still being taken (the machine was too
  // busy to keep up): skipped, not bunched.
  std::uint64_t missed() const { return missed_; }
  // Whether another run may use this sampler: its sources hold no source of one run and none
  // failed, and this is the process that made it (a forked child has none of its thread).
  bool reusable() const;

 private:
  void run() noexcept;
  // Takes a sample, timed `at` (default: now).
  void sample(bool scheduled = true, std::optional<Clock::time_point> at = std::nullopt) noexcept;
  // Appends what the workload wrote to marks_; true when something arrived.
  bool drain_marks() noexcept;
  // Hands on_marks_ the complete lines of marks_ it has not had yet.
  void tell_marks() noexcept;
  // Arms the timer: first at `first`, then every `every` (0: once).
  void arm(Clock::time_point first, std::chrono::nanoseconds every) const;

  Sources sources_;
  Columns columns_;
  std::chrono::nanoseconds interval_;
  Clock::time_point origin_;
  UniqueFd timer_fd_;  // timerfd (CLOCK_MONOTONIC, absolute): the deadlines
  UniqueFd quit_fd_;   // eventfd: the destructor writes, the thread ends
  UniqueFd epoll_fd_;  // the thread waits here: timer, quit, and the marks during a run
  int marks_fd_ = -1;  // not owned; in the epoll set during a run
  std::string marks_;
  std::size_t marks_told_ = 0;  // marks_ up to here went to on_marks_
  std::function<void(std::string_view)> on_marks_;
  std::uint64_t missed_ = 0;
  std::bitset<kMetricCount> first_read_;
  std::optional<RuntimeWatch> runtimes_;
  std::size_t runtime_scans_ = 0;  // the next read is at runtime_scan_at(runtime_scans_)
  std::function<void(const RuntimesSeen&)> on_new_runtime_;
  std::optional<ThreadCensus> census_;
  Clock::time_point census_at_;  // its last reading
  unsigned forks_ = 0;  // the process's fork count when the sampler was made
  // Everything above that a run touches is guarded by `lock_` while the thread may run; the
  // thread samples only while `running_`.
  std::mutex lock_;
  bool running_ = false;  // in start() .. stop()
  bool exited_ = false;   // the thread ended after an idle while (joined by the next start())
  std::unique_ptr<std::thread> thread_;
};

}  // namespace edgeprof::detail
