// How many of the workload's threads ran at once (issue 33). Under projected core emulation one
// device core runs the workload and the board's speed-up divides its time, which holds for one
// thread: a workload that starts more in code (ncnn's Option.num_threads,
// torch.set_num_threads) shares the core's quota among them and its projected time comes out
// too slow. No variable says so; the threads' states do. The sampler's thread reads the slice's
// thread list and each thread's state about every 100 ms and counts those that are runnable
// (running, or waiting for a CPU or for the quota: state R). Threads that take turns (Python
// threads serialised by the GIL, a loader handing work to the main thread) sleep while they
// wait, and count once. The arithmetic is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/fs.hpp"

namespace edgeprof::detail {

// The threads' runnable counts, reading by reading (0: none was runnable).
struct CensusCounts {
  std::uint64_t readings = 0;      // readings with at least one runnable thread
  std::uint64_t runnable_sum = 0;  // their runnable threads, summed
};

// The mean number of runnable threads over the readings that found one: 1 when one thread did
// the work at a time, N when N threads wanted a CPU at once. nullopt before any such reading.
std::optional<double> threads_at_once(const CensusCounts& counts);

class ThreadCensus {
 public:
  // `tasks`: the slice's thread lists (v1 `tasks` of its cpu hierarchy, v2 `cgroup.threads`).
  ThreadCensus(Fs fs, std::vector<std::string> tasks) : fs_(std::move(fs)), tasks_(std::move(tasks)) {}

  // One reading: the threads in the lists that are runnable (a thread that ended between the
  // list and its stat file is left out). Never throws (out of memory: the reading is skipped).
  void read() noexcept;
  // Forgets the readings, for the next run.
  void reset() { counts_ = {}; }
  std::optional<double> threads_at_once() const { return detail::threads_at_once(counts_); }
  const CensusCounts& counts() const { return counts_; }

 private:
  Fs fs_;
  std::vector<std::string> tasks_;
  CensusCounts counts_;
};

// The warning of a projected run whose threads ran `at_once` (threads_at_once()) at a time,
// when that is kCensusWarnAt or more; empty otherwise.
inline constexpr double kCensusWarnAt = 1.5;
std::string census_warning(double at_once);

}  // namespace edgeprof::detail
