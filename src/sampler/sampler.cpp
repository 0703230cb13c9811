#include "sampler/sampler.hpp"

#include <fmt/format.h>

#include "edgeprof/error.hpp"

namespace edgeprof::detail {

Sampler::Sampler(Sources sources, std::chrono::nanoseconds interval)
    : sources_(std::move(sources)), interval_(interval) {
  if (interval < kMinSampleInterval || interval > kMaxSampleInterval) {
    throw Error(fmt::format("sampling interval {} ms is out of range: edgeprof samples every "
                            "1 ms to 60 s",
                            std::chrono::duration<double, std::milli>(interval).count()));
  }
  // Ten minutes' worth up front at 100 ms, less at finer intervals; vectors grow beyond.
  columns_.reserve(static_cast<size_t>(std::min<std::int64_t>(
      6000, std::chrono::minutes(10) / std::max(interval, std::chrono::nanoseconds(100000000)) +
                1024)));
}

Sampler::~Sampler() { stop(); }

void Sampler::start(Clock::time_point origin) {
  origin_ = origin;
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> guard(lock_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Sampler::sample() noexcept {
  try {
    const auto now = Clock::now();
    sources_.tick(std::chrono::duration_cast<std::chrono::nanoseconds>(now - origin_).count(),
                  columns_);
  } catch (...) {
    // Only growing the columns can throw (out of memory): the run goes on without samples.
  }
}

void Sampler::run() {
  std::unique_lock<std::mutex> guard(lock_);
  auto deadline = Clock::now();
  while (!stopping_) {
    guard.unlock();
    sample();
    guard.lock();
    deadline += interval_;
    const auto now = Clock::now();
    if (deadline <= now) {
      // Too busy to keep up: skip the deadlines already passed rather than bunch samples.
      const auto behind = (now - deadline) / interval_ + 1;
      missed_ += static_cast<std::uint64_t>(behind);
      deadline += behind * interval_;
    }
    wake_.wait_until(guard, deadline, [this] { return stopping_; });
  }
  guard.unlock();
  sample();  // the final counters, after the workload was reaped
}

}  // namespace edgeprof::detail
