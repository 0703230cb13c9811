// The sampler's timer thread: it only schedules Sources::tick at absolute deadlines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "sampler/sources.hpp"

namespace edgeprof::detail {

inline constexpr std::chrono::nanoseconds kMinSampleInterval = std::chrono::milliseconds(1);
inline constexpr std::chrono::nanoseconds kMaxSampleInterval = std::chrono::seconds(60);

class Sampler {
 public:
  using Clock = std::chrono::steady_clock;

  // Throws Error when `interval` is outside 1 ms .. 60 s.
  Sampler(Sources sources, std::chrono::nanoseconds interval);
  ~Sampler();  // stops the thread if still running
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts the thread: a first sample at once, then one at each absolute deadline start + k x
  // interval (no drift). Sample times are recorded relative to `origin`.
  void start(Clock::time_point origin);
  // Wakes the thread at once, takes a last sample (the final counters) and joins.
  void stop();

  // The samples; read after stop().
  const Columns& columns() const { return columns_; }
  const Sources& sources() const { return sources_; }
  // Deadlines passed while a sample was still being taken (the machine was too busy).
  std::uint64_t missed() const { return missed_; }

 private:
  void run();
  void sample() noexcept;

  Sources sources_;
  Columns columns_;
  std::chrono::nanoseconds interval_;
  Clock::time_point origin_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
  std::uint64_t missed_ = 0;
};

}  // namespace edgeprof::detail
