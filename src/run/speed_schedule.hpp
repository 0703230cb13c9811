// A device's speed schedule (thermal throttling, DVFS) applied while a workload runs: a thread
// that sleeps until each step is due and rewrites the slice's CPU bandwidth.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "cgroup/backend.hpp"
#include "edgeprof/device.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/result.hpp"

namespace edgeprof::detail {

class SpeedScheduler {
 public:
  // Starts the thread; steps are relative to `start` (the workload's release).
  SpeedScheduler(Cgroup& cgroup, const EmulationPlan& plan, std::vector<SpeedStep> steps,
                 std::chrono::steady_clock::time_point start);
  SpeedScheduler(const SpeedScheduler&) = delete;
  SpeedScheduler& operator=(const SpeedScheduler&) = delete;
  ~SpeedScheduler();

  // Stops the thread (steps not yet due are not applied) and returns what was applied. Safe to
  // call again, and from two threads at once (a slice's close() and its child's wait()).
  std::vector<SpeedChange> stop();

 private:
  void run();

  Cgroup& cgroup_;
  EmulationPlan plan_;
  std::vector<SpeedStep> steps_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<SpeedChange> changes_;
  std::mutex join_mutex_;  // one join of thread_ at a time
  std::thread thread_;
};

}  // namespace edgeprof::detail
