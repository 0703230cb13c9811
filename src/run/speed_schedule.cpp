#include "run/speed_schedule.hpp"

#include <cstring>
#include <fmt/format.h>

#include "sys/thread.hpp"

namespace edgeprof::detail {

SpeedScheduler::SpeedScheduler(Cgroup& cgroup, const EmulationPlan& plan,
                               std::vector<SpeedStep> steps,
                               std::chrono::steady_clock::time_point start)
    : cgroup_(cgroup), plan_(plan), steps_(std::move(steps)), start_(start) {
  thread_ = start_thread("the thread of the device's speed schedule", [this] { run(); });
}

SpeedScheduler::~SpeedScheduler() { stop(); }

std::vector<SpeedChange> SpeedScheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  {
    const std::lock_guard<std::mutex> joining(join_mutex_);
    if (thread_.joinable()) thread_.join();
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  return changes_;
}

void SpeedScheduler::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (const SpeedStep& step : steps_) {
    const auto due = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(step.after_s));
    if (wake_.wait_until(lock, due, [this] { return stopping_; })) return;
    SpeedChange change;
    change.factor = step.factor;
    // Per-core emulation: each core's bandwidth, its period lengthened as a core's quota
    // needs; the quota written for the device is the cores' together.
    const std::uint64_t groups = plan_.core_groups ? plan_.core_groups : 1;
    const CpuBandwidth b = cpu_bandwidth(plan_.quota_group_cores() * step.factor,
                                         plan_.cpu_period_us);
    change.cpu_quota_us = b.quota_us * groups;
    change.cpu_period_us = b.period_us;
    const int err = cgroup_.set_cpu_bandwidth(change.cpu_quota_us, change.cpu_period_us);
    change.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (err) {
      change.error = fmt::format("could not write the CPU bandwidth: {} (errno {})",
                                 std::strerror(err), err);
    }
    changes_.push_back(std::move(change));
  }
}

}  // namespace edgeprof::detail
