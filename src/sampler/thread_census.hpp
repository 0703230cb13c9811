// How many of the workload's threads ran at once (issue 33). Under projected core emulation one
// device core runs the workload and the board's speed-up divides its time, which holds for one
// thread: a workload that starts more in code (ncnn's Option.num_threads,
// torch.set_num_threads) shares the core's quota among them and its projected time comes out
// too slow. No variable says so; the threads' CPU time does. The sampler's thread reads the
// slice's task lists and each thread's CPU time about every 100 ms; the arithmetic is pure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fs.hpp"

namespace edgeprof::detail {

// Thread id -> its CPU time so far (ns), as one reading saw it.
using ThreadTimes = std::map<pid_t, std::uint64_t>;

// What the threads did between two readings: the CPU time of the threads in both (a thread
// born between them has no start; one that ended, no end: neither is counted), that of the
// busiest of them, and the sum of their squares.
struct CensusWindow {
  std::uint64_t total_ns = 0;
  std::uint64_t busiest_ns = 0;
  double square_sum = 0;  // ns^2
  // The effective number of threads that shared the window's CPU time (the inverse Simpson
  // index of their shares, total^2 / sum of squares): N for N equally busy threads, 1 for one,
  // 1.22 for shares of 90% and 10%. Less sensitive than total / busiest to the scheduler's
  // unevenness within a window (three threads sharing 25 ms of quota as 12, 8 and 5 ms: 2.7,
  // where total / busiest gives 2.1). 0 for a window without CPU time.
  double threads() const {
    return square_sum > 0 ? static_cast<double>(total_ns) * static_cast<double>(total_ns) / square_sum
                          : 0.0;
  }
};
CensusWindow census_window(const ThreadTimes& before, const ThreadTimes& after);

// The windows' effective thread counts (CensusWindow::threads), averaged weighted by their CPU
// time: 1 when one thread did the work at a time, about N when N threads were equally busy at
// once. nullopt before any CPU time was seen in a window.
std::optional<double> threads_at_once(const std::vector<CensusWindow>& windows);

class ThreadCensus {
 public:
  // `tasks`: the slice's thread lists (v1 `tasks` of its cpu hierarchy, v2 `cgroup.threads`).
  ThreadCensus(Fs fs, std::vector<std::string> tasks) : fs_(std::move(fs)), tasks_(std::move(tasks)) {}

  // One reading: the threads in the lists and their CPU time (a thread that ended between the
  // list and its file is left out). Never throws (out of memory: this reading is skipped).
  void read() noexcept;
  // Forgets the windows and the last reading, for the next run.
  void reset() {
    last_.clear();
    windows_.clear();
    read_once_ = false;
  }
  std::optional<double> threads_at_once() const { return detail::threads_at_once(windows_); }
  const std::vector<CensusWindow>& windows() const { return windows_; }

 private:
  Fs fs_;
  std::vector<std::string> tasks_;
  ThreadTimes last_;
  bool read_once_ = false;
  std::vector<CensusWindow> windows_;
};

// The warning of a projected run whose threads ran `at_once` (threads_at_once()) at a time,
// when that is kCensusWarnAt or more; empty otherwise.
inline constexpr double kCensusWarnAt = 1.5;
std::string census_warning(double at_once);

}  // namespace edgeprof::detail
