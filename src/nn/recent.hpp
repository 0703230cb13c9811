// Readings a run makes before it starts (the drift probe, the own-share check), kept for
// kDriftProbeReuse so that a run's repeats and a comparison's runs share one rather than paying
// for it each time (1.5-6 s apiece).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "edgeprof/plan.hpp"

namespace edgeprof::detail {

// By key (CPU, rating or share, interpreter...); thread-safe. Meant as a function's static.
template <typename Key, typename Value>
class RecentReadings {
 public:
  // The reading under `key` made in the last kDriftProbeReuse, if any.
  std::optional<Value> find(const Key& key) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = readings_.find(key);
    if (it == readings_.end() || Clock::now() - it->second.first >= kDriftProbeReuse) {
      return std::nullopt;
    }
    return it->second.second;
  }
  void put(const Key& key, Value value) {
    const std::lock_guard<std::mutex> lock(mutex_);
    readings_[key] = {Clock::now(), std::move(value)};
  }

 private:
  using Clock = std::chrono::steady_clock;
  mutable std::mutex mutex_;
  std::map<Key, std::pair<Clock::time_point, Value>> readings_;
};

}  // namespace edgeprof::detail
