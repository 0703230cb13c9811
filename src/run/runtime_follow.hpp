// A slice whose speed follows the inference runtime its workload loads: a device emulated at
// the speed edgeprof chose (PlanOptions::speed_kind automatic) that has published times with
// another runtime (Device::runtime_ms) switches to that runtime's speed when the sampler first
// sees the runtime in a workload's maps (runtimes.hpp), before its first inference as a rule
// (a library is mapped when it is imported). The switch is the slice's, once: later runs in
// the slice start at the runtime's speed.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/phase_kinds.hpp"
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

// The runtimes whose workloads edgeprof's counter counts (activation_counter.py), each by its
// rating's rule and timed as its rating ran: PyTorch's models by their layers (eager, one
// thread), ONNX Runtime's by their ONNX graph's nodes (one intra-op thread), PyTorch int8's by
// their operators (TorchScript too; only in a slice at that speed, which a user names). A count
// sets the speed of its runtime.
inline constexpr std::array<std::string_view, 3> kCountedRuntimes{"pytorch", "onnxruntime",
                                                                  "pytorch-int8"};
bool is_counted_runtime(std::string_view id);
// Whether ONNX Runtime's workloads are counted (where the slice counts at all): yes unless
// EDGEPROF_COUNT_ONNXRUNTIME is 0, false, off or no (any case); any other value but empty is
// an Error naming the variable (switch_setting()).
bool counts_onnxruntime();
// The variables that give the counter the slice's memory limit in bytes (0: none), the file
// whose number is the slice's use of it, and the slice's memory.stat, whose inactive file cache
// (total_inactive_file on v1, inactive_file on v2) the kernel would reclaim before failing: it
// makes its copies of an ONNX Runtime session only where they fit under the limit.
inline constexpr const char* kCountMemoryEnv = "EDGEPROF_COUNT_MEMORY_BYTES";
inline constexpr const char* kCountMemoryUsageEnv = "EDGEPROF_COUNT_MEMORY_USAGE";
inline constexpr const char* kCountMemoryStatEnv = "EDGEPROF_COUNT_MEMORY_STAT";

// The slice's memory files as the workload reads them (absolute paths): v2 memory.current and
// memory.stat where the memory controller is enabled (its files exist), v1 the memory
// hierarchy's memory.usage_in_bytes and memory.stat; both "" without the controller (no limit
// was applied either).
struct CountMemoryFiles {
  std::string usage, stat;
};
CountMemoryFiles count_memory_files(const SliceFiles& where);
// The variable that tells the counter which runtimes the slice counts ("pytorch,onnxruntime"):
// it watches for those alone.
inline constexpr const char* kCountRuntimesEnv = "EDGEPROF_COUNT_RUNTIMES";

struct ActivationCount {
  double mb = 0;
  double cpu_ms = 0;
  int calls = 0;
  std::string runtime = "pytorch";  // one of kCountedRuntimes
  double mb_per_ms() const { return mb / cpu_ms; }
};

// The last well-formed activation count among `lines` (phase-channel lines, each ending in a
// newline), "<ns> A <MB> <CPU ms> <calls> [<runtime>]" (no runtime: PyTorch's); other marks,
// malformed counts (not positive, not finite) and counts of other runtimes are skipped.
std::optional<ActivationCount> last_activation_count(std::string_view lines);

// A count the counter did not make, a copy of the session not fitting in the slice's memory:
// "<ns> A skip <runtime> memory <used> <needed> <limit>" (bytes: what the slice used, what a
// copy needed by the counter's estimate, the limit; all 0 where the counter could not read the
// limit). The last well-formed one among `lines`; nullopt where there is none.
struct SkippedCount {
  std::string runtime;
  std::uint64_t used = 0, needed = 0, limit = 0;
};
std::optional<SkippedCount> last_skipped_count(std::string_view lines);

// What a slice that counts its workload's activations (PlanOptions::count_activations) plans a
// counted speed from, for one counted runtime: the runtime, the device before its speed kind
// was applied (with_measured_nn), this host's rating of the runtime (read once, when the slice
// is made), the host and options it was
// planned with (core emulation as chosen at the start), the plan it started with (a counted
// speed keeps its CPUs and core groups), its usable CPUs, and the device as it started.
struct CountingBasis {
  std::string runtime;  // one of kCountedRuntimes
  Device measured;
  NnRating rating;
  HostFacts host;
  PlanOptions options;
  EmulationPlan plan;
  std::size_t usable_cpus = 0;
  Device start;
};

// The basis of counting `runtime`'s workloads (one of kCountedRuntimes) in a slice planned as
// `plan` from `measured` with `options`, starting as `start`, or nullopt, with a line in
// `notes` saying why a count would not set its speed where one could have: a memory term
// given, a speed schedule or a quota that follows the busy threads (they write the bandwidth
// too), no rating of the runtime on this host or one a memory term cannot be fitted with (no
// activations); nothing said with counting off, for a device without published times with
// the runtime, or a speed the user chose other than the runtime's. `will_follow`: the slice
// follows a workload to the runtime's speed (followed_speeds()), or started at it
// (runtime_start()).
std::optional<CountingBasis> counting_basis(std::string_view runtime, const Device& measured,
                                            const HostFacts& host,
                                            const PlanOptions& options,
                                            const EmulationPlan& plan, std::size_t usable_cpus,
                                            const Device& start, bool will_follow,
                                            std::vector<std::string>& notes);

// A counted speed set (or not: `error`): the device at its PyTorch speed with the memory term
// of the workload's counted MB per ms (for_runtime(), device.hpp).
struct CountedSwitch {
  ActivationCount count;
  std::optional<FollowedSpeed> speed;  // unset when it could not be planned
  std::chrono::steady_clock::time_point when;
  std::string error;  // why it was not set ("" when it was)
  // The speed the slice ran at when the count came (kept, when it was not set): "its PyTorch
  // speed" and its core_speed.
  std::string before;
  double before_speed = 0;
  // What the count's CPU time was divided by to be this host's one-thread time as rated
  // (count_divisor()), and what that was.
  double scale = 1;
  std::string scale_from;
  double mb_per_ms = 0;  // count.mb / (count.cpu_ms / scale): the memory term's
  // The least and most MB per ms of the rating's models (activation MB over host ms), the
  // range the memory term was fitted on: a count outside it extrapolates (said).
  double rated_low = 0, rated_high = 0;
};

// What one CPU ms of the counted thread under `plan` (in a slice of `basis`) is in this host's
// time as its PyTorch rating ran it (one thread, unthrottled), and in words: this host's own
// share at the quota the thread ran under (a throttled thread needs more CPU time for the same
// work): a core's quota per core, else the whole quota, pooled or not (one thread under a pool
// is throttled as under one CPU's quota); PyTorch's measured share where cached, else ncnn's
// (whatever share the plan took: a count may come before the maps scan moves the slice to its
// PyTorch plan); 1 where that quota is a CPU's whole time or more, or no share is measured; the
// quota scale the user gave instead of a share; times the plan's host drift. (A share measured
// at another period or keep-warm than the plan's, which the plan refuses, is taken here.)
struct CountDivisor {
  double value = 1;
  std::string from;  // "" for 1 (no share applies, no drift)
};
CountDivisor count_divisor(const CountingBasis& basis, const EmulationPlan& plan);

// What counts did: the last switch made (its device and plan are the slice's from then on),
// and every count's, made or refused, in order (the latest kMaxCounts).
struct CountedSwitches {
  static constexpr std::size_t kMaxCounts = 64;
  std::optional<CountedSwitch> applied;
  std::vector<CountedSwitch> counts;
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
  // `counting`: the runtimes whose workloads' activations the slice counts (counting_basis()).
  RuntimeFollower(std::vector<FollowedSpeed> speeds, Cgroup* cgroup, std::uint64_t quota_us,
                  std::uint64_t period_us, std::vector<CountingBasis> counting = {});
  RuntimeFollower(const RuntimeFollower&) = delete;
  RuntimeFollower& operator=(const RuntimeFollower&) = delete;

  const std::vector<FollowedSpeed>& speeds() const { return speeds_; }

  // From the sampler's thread, with what a run has seen so far: the first time a runtime with
  // a speed is among them, writes that speed's CPU bandwidth to the slice's cgroup (nothing
  // once detached). Never throws.
  void seen(const RuntimesSeen& seen) noexcept;
  // From the sampler's thread, with the complete lines the phase channel brought: for the last
  // activation count among them, plans the device at the speed of the count's runtime with its
  // memory term (from that runtime's basis's rating: no file is read) and writes its bandwidth
  // (the last count wins; a runtime seen later switches nothing; a count sets its runtime's
  // speed also where the slice followed the workload to another's: a process that loaded both
  // infers with the one counted). Refused when the slice counts no workload of the count's
  // runtime (no basis). Nothing without a counting basis, or once detached. Returns
  // whether the lines held a count. Never throws.
  bool counted(std::string_view lines) noexcept;
  // What counts did. Takes the lock, except in a forked child (no sampler thread there), where
  // it is empty.
  CountedSwitches counted_switches() const;
  bool counts() const { return !counting_.empty(); }
  // The runtimes whose counts it takes (its bases'), in kCountedRuntimes' order.
  std::vector<std::string> counted_runtimes() const;
  // Before the cgroup goes (the slice closes, perhaps while a workload runs): waits for a
  // write in progress, and writes nothing after. In a forked child (no sampler thread there,
  // and the lock may have been held at the fork) it only forgets the cgroup.
  void detach() noexcept;
  // The switch, once made. Takes no lock (safe in a forked child).
  std::optional<RuntimeSwitch> switched() const;

 private:
  std::vector<FollowedSpeed> speeds_;
  std::vector<CountingBasis> counting_;
  mutable std::mutex mutex_;  // guards cgroup_, the bandwidth written and counted_
  Cgroup* cgroup_;
  std::uint64_t quota_us_, period_us_;  // the bandwidth written last
  CountedSwitches counted_;
  std::atomic<bool> counted_done_{false};  // a count set the speed: seen() switches nothing
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

// The warning of a run in which a count set the speed (`made`), `since_release_s` after its
// workload was released, or was refused (`made.error`): what was counted, and at which speed
// the run went on.
std::string counted_warning(const CountedSwitch& made, double since_release_s);

// The warning of a sampled run in a counting slice whose workload sent no count: it ran at the
// speed a count of an earlier workload in the slice set (`earlier`, which may be another
// model's), or it loaded a runtime the slice counts (`counted`; `seen`: for ONNX Runtime its
// Python module, the counter counting Python alone) and ran at `device`, that runtime's speed
// over the models; nullopt otherwise.
std::optional<std::string> uncounted_warning(const Device& device, const CountedSwitch* earlier,
                                             const RuntimesSeen& seen,
                                             const std::vector<std::string>& counted);

// The warning of a run whose workload's count was skipped (`skip`), which ran at `device`: the
// speed `earlier` counted (another workload's in the slice) where set.
std::string skipped_count_warning(const SkippedCount& skip, const Device& device,
                                  const CountedSwitch* earlier = nullptr);

// The warning of a run whose workload's count (`made`) was read as it exited: it set the speed
// of the slice's next run, not this one's.
std::string late_count_warning(const CountedSwitch& made);

}  // namespace edgeprof::detail
