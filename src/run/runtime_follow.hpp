// A slice whose speed follows the inference runtime its workload loads: a device emulated at
// the speed edgeprof chose (PlanOptions::speed_kind automatic) that has published times with
// another runtime (Device::runtime_ms) switches to that runtime's speed when the sampler first
// sees the runtime in a workload's maps (runtimes.hpp), before its first inference as a rule
// (a library is mapped when it is imported). The switch is the slice's, once: later runs in
// the slice start at the runtime's speed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/backend.hpp"
#include "edgeprof/device.hpp"
#include "edgeprof/plan.hpp"
#include "nn/runtimes.hpp"

namespace edgeprof::detail {

// The device at one runtime's speed, and its plan (the slice's CPUs and core groups).
struct FollowedSpeed {
  std::string runtime;  // NnRuntime id ("pytorch")
  Device device;        // as emulated (the slice's cores)
  EmulationPlan plan;
};

// A switch that was made.
struct RuntimeSwitch {
  const FollowedSpeed* speed = nullptr;
  std::string library;  // the library that showed the runtime (RuntimesSeen)
  std::chrono::steady_clock::time_point when;
  std::string error;  // why the bandwidth could not be written ("" when it was)
};

// The device as `plan` runs it on `usable_cpus` host CPUs, from the device at its speed (before
// fit_to_cpus): as many of its cores as fit (fit_to_cpus, its name then saying how many), except
// under a projection (CoreEmulation::projected) one of its cores (for_threads(device, 1), whose
// power is one core's) under the device's own name and aliases, however many would fit: the
// run's answer is that whole device's, and calibrations and reports find it by that name.
Device device_as_run(const Device& at_speed, const EmulationPlan& plan, std::size_t usable_cpus);

// The bandwidth a plan writes through Cgroup::set_cpu_bandwidth: the slice's quota, or per
// core, each core group's quota times their number (the backend divides it among them).
std::uint64_t written_quota_us(const EmulationPlan& plan);

class RuntimeFollower {
 public:
  // `speeds` in order of preference (nn_runtimes()'s): when one read of the maps sees several,
  // the first one's speed is taken. `cgroup` is the slice's, whose bandwidth the plan set to
  // `quota_us` (written_quota_us()) per `period_us`: put back when a switch fails part-way.
  RuntimeFollower(std::vector<FollowedSpeed> speeds, Cgroup* cgroup, std::uint64_t quota_us,
                  std::uint64_t period_us);
  RuntimeFollower(const RuntimeFollower&) = delete;
  RuntimeFollower& operator=(const RuntimeFollower&) = delete;

  const std::vector<FollowedSpeed>& speeds() const { return speeds_; }

  // From the sampler's thread, with what a run has seen so far: the first time a runtime with
  // a speed is among them, writes that speed's CPU bandwidth to the slice's cgroup (nothing
  // once detached). Never throws.
  void seen(const RuntimesSeen& seen) noexcept;
  // Before the cgroup goes (the slice closes, perhaps while a workload runs): waits for a
  // write in progress, and writes nothing after. In a forked child (no sampler thread there,
  // and the lock may have been held at the fork) it only forgets the cgroup.
  void detach() noexcept;
  // The switch, once made. Takes no lock (safe in a forked child).
  std::optional<RuntimeSwitch> switched() const;

 private:
  std::vector<FollowedSpeed> speeds_;
  std::mutex mutex_;  // guards cgroup_ while a switch writes through it
  Cgroup* cgroup_;
  std::uint64_t quota_us_, period_us_;
  unsigned forks_;  // fork_count() when made
  RuntimeSwitch made_;  // written once, before done_ is set
  std::atomic<bool> done_{false};
};

// The speeds a slice planned as `plan` (from `measured`, the device before its speed kind was
// applied, with `options`) may follow: for each runtime after ncnn in nn_runtimes() that the
// device has published times with, the device at that speed (for_runtime(), fit to
// `usable_cpus` as the slice's) and its plan. None unless options.speed_kind is automatic and
// the device has no speed schedule nor a per-core quota that follows the busy threads.
// `notes` gets a line per runtime: followed at which speed, or why not (no rating on this
// host, with the command that measures it).
// `current` is the runtime whose speed the slice starts at ("" for ncnn's or the described
// speed: runtime_start()), which is not followed again.
std::vector<FollowedSpeed> followed_speeds(const Device& measured, const HostFacts& host,
                                           const PlanOptions& options, const EmulationPlan& plan,
                                           std::size_t usable_cpus,
                                           std::vector<std::string>& notes,
                                           std::string_view current = {});

// A device whose speed edgeprof chose (PlanOptions::speed_kind automatic) but cannot emulate
// here (`why`: its ncnn or described speed is faster than a host core, the Raspberry Pi 5's
// fp16 tables), started instead at the first runtime speed (nn_runtimes()'s order) that can
// be planned: for_runtime(measured, id), with a note in `notes` saying why and what a
// workload of another runtime gets. Unset when none can, or the speed was the user's choice.
std::optional<Device> runtime_start(const Device& measured, const HostFacts& host,
                                    const PlanOptions& options, const std::string& why,
                                    std::vector<std::string>& notes);

// The warning of a run at `runtime`'s speed in a slice that started at a runtime's speed
// (runtime_start()) whose workload loaded no runtime at all; nullopt otherwise (another
// runtime seen is runtime_warning()'s).
std::optional<std::string> start_warning(const Device& device, std::string_view runtime,
                                         const RuntimesSeen& seen);

// The warning of a run in which the switch was made, `since_release_s` after its workload was
// released: how long it ran at which speed (`before` the device as the slice began).
std::string switch_warning(const Device& before, const RuntimeSwitch& made,
                           double since_release_s);

}  // namespace edgeprof::detail
