// The sampler's timer thread: it only schedules Sources::tick at absolute deadlines, and takes
// an extra sample when the workload marks a phase.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "sampler/sources.hpp"

namespace edgeprof::detail {

inline constexpr std::chrono::nanoseconds kMinSampleInterval = std::chrono::milliseconds(1);
inline constexpr std::chrono::nanoseconds kMaxSampleInterval = std::chrono::seconds(60);
inline constexpr std::size_t kInitialSamples = 128;  // samples reserved per run

// Throws Error naming the value when `interval` is outside 1 ms .. 60 s.
void check_sample_interval(std::chrono::nanoseconds interval);

class Sampler {
 public:
  using Clock = std::chrono::steady_clock;

  // Throws Error when `interval` is outside 1 ms .. 60 s, or when no eventfd can be made.
  Sampler(Sources sources, std::chrono::nanoseconds interval);
  ~Sampler();  // stops the thread if still running
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Before start(): also read phase marks from `fd` (the non-blocking read end of the phase
  // pipe; owned by the caller). The thread appends what arrives to marks() and takes a sample
  // at once, so phase boundaries get samples of their own.
  void watch_marks(int fd) { marks_fd_ = fd; }

  // Takes a first sample at once (in the caller), then starts the thread, which samples at each
  // absolute deadline origin + k x interval (no drift). Sample times are recorded relative to
  // `origin`, which should be about now.
  void start(Clock::time_point origin);
  // Wakes the thread at once, takes a last sample (the final counters) and joins.
  void stop();

  // The samples; read after stop().
  const Columns& columns() const { return columns_; }
  Columns take_columns() { return std::move(columns_); }
  const Sources& sources() const { return sources_; }
  // After stop(): the sources, rewound for another run.
  Sources take_sources() {
    sources_.rewind();
    return std::move(sources_);
  }
  // The raw text of the phase marks received (read after stop()).
  const std::string& marks() const { return marks_; }
  std::chrono::nanoseconds interval() const { return interval_; }
  // Deadlines passed while a sample was still being taken (the machine was too busy).
  std::uint64_t missed() const { return missed_; }

 private:
  void run();
  void sample(bool scheduled = true) noexcept;
  // Reads what the workload wrote: whether marks arrived, and whether a writer is left. (The
  // pipe's end at the workload's exit is no phase boundary: stop() takes the final sample.)
  struct Drained {
    bool marks = false;
    bool open = true;
  };
  Drained drain_marks() noexcept;

  Sources sources_;
  Columns columns_;
  std::chrono::nanoseconds interval_;
  Clock::time_point origin_;
  UniqueFd stop_fd_;   // eventfd: stop() writes, the thread wakes
  int marks_fd_ = -1;  // not owned
  std::string marks_;
  std::thread thread_;
  std::uint64_t missed_ = 0;
};

}  // namespace edgeprof::detail
