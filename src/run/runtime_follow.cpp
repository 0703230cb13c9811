#include "run/runtime_follow.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

#include "cgroup/files.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "sampler/sampler.hpp"
#include "sys/fs.hpp"
#include "sys/parse.hpp"

namespace edgeprof::detail {

namespace {

// "its ncnn speed", "its PyTorch speed", "its described core speed".
std::string speed_of(const Device& device) {
  if (device.speed_kind == "nn" && device.nn) {
    if (device.nn->basis == "vector") return "its vector-kernel nn speed";
    return fmt::format("its {} speed", runtime_name(device.nn->basis));
  }
  return "its described core speed";
}

// A runtime a workload can be seen to load that the device has a speed with: not ncnn (the
// speed a run starts at), not a precision of another runtime (PyTorch int8 shows PyTorch's
// libraries: named with --runtime, never followed), with published times on the device.
bool followable(const NnRuntime& rt, const Device& measured) {
  return rt.id != "ncnn" && rt.precision_of.empty() && measured.runtime_ms.count(rt.id) != 0;
}

}  // namespace

Device device_as_run(const Device& at_speed, const EmulationPlan& plan,
                     std::size_t usable_cpus) {
  if (!plan.threads_projection || at_speed.cores < 2) return fit_to_cpus(at_speed, usable_cpus);
  Device one = for_threads(at_speed, 1);
  one.name = at_speed.name;
  one.aliases = at_speed.aliases;
  one.sources["cores"].source =
      fmt::format("1 of the device's {} cores: core emulation projected runs one and projects "
                  "its times to all {}",
                  at_speed.cores, plan.threads_projection->threads);
  return one;
}

std::optional<ActivationCount> last_activation_count(std::string_view lines) {
  std::optional<ActivationCount> last;
  for_each_line(lines, [&](std::string_view line) {
    // "<ns> A <MB> <CPU ms> <calls>[ <runtime>]"
    const std::size_t a = line.find(' ');
    if (a == std::string_view::npos || line.size() < a + 3 || line[a + 1] != kActivationMark ||
        line[a + 2] != ' ') {
      return;
    }
    const char* p = line.data() + a + 3;
    const char* end = line.data() + line.size();
    ActivationCount c;
    auto field = [&](auto& out) {
      while (p < end && *p == ' ') ++p;
      const auto [next, ec] = std::from_chars(p, end, out);
      if (ec != std::errc() || (next < end && *next != ' ')) return false;
      p = next;
      return true;
    };
    if (!field(c.mb) || !field(c.cpu_ms) || !field(c.calls)) return;
    if (p != end) {  // the runtime counted
      while (p < end && *p == ' ') ++p;
      const std::string_view runtime(p, static_cast<std::size_t>(end - p));
      if (!is_counted_runtime(runtime)) return;
      c.runtime = std::string(runtime);
    }
    if (!(std::isfinite(c.mb) && c.mb > 0 && std::isfinite(c.cpu_ms) && c.cpu_ms > 0 &&
          std::isfinite(c.mb_per_ms())) ||
        c.calls < 1) {
      return;
    }
    last = c;
  });
  return last;
}

std::optional<SkippedCount> last_skipped_count(std::string_view lines) {
  std::optional<SkippedCount> last;
  for_each_line(lines, [&](std::string_view line) {
    const std::vector<std::string> words = split_words(line);
    if (words.size() != 8 || words[1] != std::string(1, kActivationMark) || words[2] != "skip" ||
        !is_counted_runtime(words[3]) || words[4] != "memory") {
      return;
    }
    const auto used = parse_u64(words[5]), needed = parse_u64(words[6]),
               limit = parse_u64(words[7]);
    if (used && needed && limit) last = SkippedCount{words[3], *used, *needed, *limit};
  });
  return last;
}

std::string skipped_count_warning(const SkippedCount& skip, const Device& device,
                                  const CountedSwitch* earlier) {
  const std::string name = runtime_name(skip.runtime);
  const std::string why =
      skip.limit == 0
          ? std::string("the counter could not read the slice's memory limit")
          : fmt::format("a copy of its session would have needed about {:.0f} MB (five times "
                        "its model's size, and eight times its inputs' or, for the second copy, "
                        "its activations'; estimated) beside the {:.0f} MB the slice used (its "
                        "inactive file cache not counted), over its memory limit of {:.0f} MB",
                        static_cast<double>(skip.needed) / 1e6,
                        static_cast<double>(skip.used) / 1e6,
                        static_cast<double>(skip.limit) / 1e6);
  const std::string ran =
      earlier && earlier->speed
          ? fmt::format("the speed an earlier workload in the slice counted ({:.4g} MB per ms)",
                        earlier->mb_per_ms)
          : "the device's " + speed_of(device).substr(4);
  return fmt::format(
      "the workload's {} model was not counted: {}; it ran at {} ({:.3g} of a host core), not "
      "at its own model's. Give its own speed (--runtime {} --memory-mb-per-ms M, M from "
      "edgeprof.nn.memory_intensity), or emulate a device with more memory (docs/devices.md, "
      "\"A workload's own speed\")",
      name, why, ran, device.core_speed, skip.runtime);
}

CountMemoryFiles count_memory_files(const SliceFiles& where) {
  CountMemoryFiles out;
  if (where.unified) {
    if (where.dir.empty() || !where.fs.exists(join(where.dir, files::v2::kMemoryCurrent))) {
      return out;
    }
    out.usage = where.fs.resolve(join(where.dir, files::v2::kMemoryCurrent));
    out.stat = where.fs.resolve(join(where.dir, files::v2::kMemoryStat));
    return out;
  }
  const auto memory = where.controllers.find("memory");
  if (memory == where.controllers.end()) return out;
  out.usage = where.fs.resolve(join(memory->second, files::v1::kMemoryUsageInBytes));
  out.stat = where.fs.resolve(join(memory->second, files::v1::kMemoryStat));
  return out;
}

namespace {

// What a counted runtime's count counts, in the counter's words (activation_counter.py).
std::string_view counted_from(std::string_view runtime) {
  if (runtime == "onnxruntime") return "its ONNX graph's nodes'";
  if (runtime == "pytorch-int8") return "its operators'";
  return "its layers'";
}

}  // namespace

bool is_counted_runtime(std::string_view id) {
  return std::find(kCountedRuntimes.begin(), kCountedRuntimes.end(), id) != kCountedRuntimes.end();
}

bool counts_onnxruntime() {
  return switch_from_env("EDGEPROF_COUNT_ONNXRUNTIME", true);
}

std::vector<std::string> RuntimeFollower::counted_runtimes() const {
  std::vector<std::string> out;
  for (const CountingBasis& b : counting_) out.push_back(b.runtime);
  return out;
}

std::optional<CountingBasis> counting_basis(std::string_view runtime, const Device& measured,
                                            const HostFacts& host, const PlanOptions& options,
                                            const EmulationPlan& plan, std::size_t usable_cpus,
                                            const Device& start, bool will_follow,
                                            std::vector<std::string>& notes) {
  if (!options.count_activations) return std::nullopt;
  const std::string name = runtime_name(runtime);
  auto refuse = [&](const std::string& why) {
    notes.push_back(fmt::format("activations: a workload's {} model is not counted ({}), so its "
                                "own activations do not set its speed",
                                name, why));
    return std::nullopt;
  };
  const bool at_counted = measured.speed_kind == "nn" && measured.nn &&
                          measured.nn->basis == runtime;
  if (at_counted && measured.nn->memory_mb_per_ms > 0) {
    return refuse(fmt::format("the device's {} speed has a memory term given already, {:.4g} MB "
                              "per ms",
                              name, measured.nn->memory_mb_per_ms));
  }
  // Nothing to count for (on by default: not said): a device without the runtime's times, or
  // a speed the user chose other than the runtime's.
  const bool automatic = options.speed_kind == SpeedKind::automatic && measured.speed_kind.empty();
  if (!at_counted && !(automatic && measured.runtime_ms.count(std::string(runtime)))) {
    return std::nullopt;
  }
  if (!measured.speed_schedule.empty() || !plan.core_quota_by_busy.empty()) {
    return refuse(fmt::format("the device's {} writes the CPU bandwidth too",
                              measured.speed_schedule.empty()
                                  ? "per-core quota that follows the busy threads"
                                  : "speed schedule"));
  }
  // A slice that does not run the runtime's workload at them (no rating of it here, or a plan
  // of other CPUs, which the runtime's notes say).
  if (!at_counted && !will_follow) return std::nullopt;
  std::string why;
  std::optional<NnRating> rating = cached_nn_rating(&why, runtime);
  if (!rating) return refuse(fmt::format("this host's {} rating is not usable: {}", name, why));
  try {
    for_runtime(measured, *rating, nullptr, 1.0);  // a memory term can be fitted
  } catch (const Error& e) {
    return refuse(e.what());
  }
  CountingBasis basis{std::string(runtime), measured, std::move(*rating), host, options, plan,
                      usable_cpus, start};
  if (basis.options.cores == CoreEmulation::automatic) basis.options.cores = plan.core_emulation();
  notes.push_back(fmt::format(
      "activations: a workload's {} model is counted ({} output MB in one inference, then its "
      "CPU time per inference; docs/devices.md, \"A workload's own speed\"), and the device "
      "runs at its {} speed with that memory term from then on",
      name, counted_from(runtime), name));
  return basis;
}

std::uint64_t written_quota_us(const EmulationPlan& plan) {
  return plan.core_groups ? plan.core_quota_us * plan.core_groups : plan.cpu_quota_us;
}

std::vector<FollowedSpeed> followed_speeds(const Device& measured, const HostFacts& host,
                                           const PlanOptions& options, const EmulationPlan& plan,
                                           std::size_t usable_cpus,
                                           std::vector<std::string>& notes,
                                           std::string_view current) {
  std::vector<FollowedSpeed> speeds;
  // A speed the user chose (the option, or a device whose speed kind is set already:
  // for_speed_kind(), for_runtime()) is kept.
  if (options.speed_kind != SpeedKind::automatic || !measured.speed_kind.empty() ||
      measured.runtime_ms.empty()) {
    return speeds;
  }
  std::vector<std::string> names;
  for (const auto& [id, times] : measured.runtime_ms) names.push_back(runtime_name(id));
  if (!measured.speed_schedule.empty() || !plan.core_quota_by_busy.empty()) {
    notes.push_back(fmt::format(
        "runtime: the speed stays as planned whatever runtime the workload loads (the device's "
        "{} would need the quotas rewritten together); the device has published times with {}: "
        "emulate Device.for_runtime() (--runtime) for a workload that uses one",
        measured.speed_schedule.empty() ? "per-core quota that follows the busy threads"
                                        : "speed schedule",
        fmt::join(names, " and ")));
    return speeds;
  }
  // A followed speed changes the quota, not how the cores are emulated: core emulation auto
  // keeps what it chose for the start.
  PlanOptions same = options;
  if (same.cores == CoreEmulation::automatic) same.cores = plan.core_emulation();
  for (const NnRuntime& rt : nn_runtimes()) {
    if (!followable(rt, measured) || rt.id == current) continue;
    try {
      FollowedSpeed speed;
      speed.runtime = rt.id;
      const Device at = for_runtime(measured, rt.id);
      speed.plan = plan_emulation(at, host, same);
      if (speed.plan.core_groups != plan.core_groups || speed.plan.cpus != plan.cpus) {
        notes.push_back(fmt::format(
            "runtime: not followed to {} speed: its plan has other CPUs or core groups than "
            "this one (emulate Device.for_runtime('{}'), --runtime {}, to run at it)",
            rt.name, rt.id, rt.id));
        continue;
      }
      speed.device = device_as_run(at, speed.plan, usable_cpus);
      notes.push_back(fmt::format(
          "runtime: if the workload loads {}, the device runs at its {} speed from then on "
          "({}; quota {} us per {} us), at the speed above before; emulate "
          "Device.for_runtime('{}') (--runtime {}) to run at it from the start{}",
          rt.name, rt.name,
          at.nn ? describe(*at.nn) : fmt::format("{:.3g} of a host core", at.core_speed),
          written_quota_us(speed.plan), speed.plan.cpu_period_us, rt.id, rt.id,
          precision_hint(measured, rt.id)));
      speeds.push_back(std::move(speed));
    } catch (const Error& e) {
      notes.push_back(fmt::format("runtime: a workload that loads {} is not run at the device's "
                                  "{} speed: {}",
                                  rt.name, rt.name, e.what()));
    }
  }
  return speeds;
}

std::optional<Device> runtime_start(const Device& measured, const HostFacts& host,
                                    const PlanOptions& options, const std::string& why,
                                    std::vector<std::string>& notes) {
  if (options.speed_kind != SpeedKind::automatic || !measured.speed_kind.empty()) {
    return std::nullopt;
  }
  for (const NnRuntime& rt : nn_runtimes()) {
    if (!followable(rt, measured)) continue;
    try {
      Device at = for_runtime(measured, rt.id);
      plan_emulation(at, host, options);  // throws where this one cannot be emulated either
      notes.push_back(fmt::format(
          "speed: {} cannot be emulated at the speed edgeprof would choose ({}); it starts at "
          "its {} speed instead ({:.3g} of a host core), the one of its published runtimes this "
          "host can emulate: a workload that loads another runtime the device has times with "
          "switches to that one's speed, and one that loads neither runs at a speed that is "
          "not its own (the result's warnings say so)",
          measured.name, why, rt.name, at.core_speed));
      return at;
    } catch (const Error&) {
      // This runtime's speed cannot be had here either: the next one.
    }
  }
  return std::nullopt;
}

std::optional<std::string> start_warning(const Device& device, std::string_view runtime,
                                         const RuntimesSeen& seen) {
  // A runtime seen is said by runtime_warning() when it is not the speed's own.
  if (runtime.empty() || !seen.empty()) return std::nullopt;
  return fmt::format(
      "{} ran at its {} speed ({:.3g} of a host core), its other speeds being faster than a host "
      "core here, but the workload loaded no runtime edgeprof knows: its times are those of "
      "{} on the device, which may not be what it ran (docs/devices.md, \"Other runtimes\")",
      device.name, runtime_name(runtime), device.core_speed, runtime_name(runtime));
}

CountDivisor count_divisor(const CountingBasis& basis, const EmulationPlan& plan) {
  CountDivisor d;
  std::string share;
  // The quota the counted thread ran under, in CPUs: a core's, or the whole quota, which a
  // pool over several CPUs throttles one thread by as one CPU's would (the plan takes no share
  // there for several threads, which ran too fast scaled).
  const double applied = plan.quota_group_cores();
  if (applied >= 1) {
    // Not throttled: no share.
  } else if (basis.options.quota_scale) {
    d.value = *basis.options.quota_scale;
    share = fmt::format("the quota scale given (PlanOptions::quota_scale), {:.3g}", d.value);
  } else {
    const auto it = basis.host.runtime_quota_shares.find(basis.runtime);
    const bool own = it != basis.host.runtime_quota_shares.end() && !it->second.points.empty();
    const QuotaShare* q = own ? &it->second
                          : basis.host.quota_share && !basis.host.quota_share->points.empty()
                              ? &*basis.host.quota_share
                              : nullptr;
    if (q) {
      d.value = own_share_at(*q, applied);
      share = fmt::format("this host's own share with {} at the slice's quota of {:.3g} of a "
                          "CPU, {:.3g}",
                          own ? runtime_name(basis.runtime)
                              : fmt::format("ncnn ({}'s not measured)", runtime_name(basis.runtime)),
                          applied, d.value);
    }
  }
  if (plan.host_drift != 1) {
    share += fmt::format("{}its host drift {:.3g}", share.empty() ? "" : ", times ",
                         plan.host_drift);
    d.value *= plan.host_drift;
  }
  d.from = std::move(share);
  return d;
}

RuntimeFollower::RuntimeFollower(std::vector<FollowedSpeed> speeds, Cgroup* cgroup,
                                 std::uint64_t quota_us, std::uint64_t period_us,
                                 std::vector<CountingBasis> counting)
    : speeds_(std::move(speeds)),
      counting_(std::move(counting)),
      cgroup_(cgroup),
      quota_us_(quota_us),
      period_us_(period_us),
      forks_(fork_count()) {}

void RuntimeFollower::seen(const RuntimesSeen& seen) noexcept {
  if (done_.load(std::memory_order_acquire) || counted_done_.load(std::memory_order_acquire)) {
    return;
  }
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.load(std::memory_order_relaxed) || counted_done_.load(std::memory_order_relaxed) ||
        !cgroup_) {
      return;
    }
    for (const FollowedSpeed& speed : speeds_) {
      const auto it = seen.find(speed.runtime);
      if (it == seen.end()) continue;
      RuntimeSwitch made;
      made.speed = &speed;
      made.library = it->second;
      const int err =
          cgroup_->set_cpu_bandwidth(written_quota_us(speed.plan), speed.plan.cpu_period_us);
      made.when = std::chrono::steady_clock::now();
      if (err) {
        // Part of it may have been written (the period, some core groups): the plan's back.
        cgroup_->set_cpu_bandwidth(quota_us_, period_us_);
        made.error = fmt::format("could not write the CPU bandwidth of {} speed: {} (errno {})",
                                 runtime_name(speed.runtime), std::strerror(err), err);
      } else {
        quota_us_ = written_quota_us(speed.plan);
        period_us_ = speed.plan.cpu_period_us;
      }
      made_ = std::move(made);
      done_.store(true, std::memory_order_release);
      return;
    }
  } catch (...) {
    // Out of memory formatting the error: not switched; a read that sees a new runtime again
    // tries again.
  }
}

bool RuntimeFollower::counted(std::string_view lines) noexcept {
  if (counting_.empty()) return false;
  bool any = false;
  try {
    const std::optional<ActivationCount> count = last_activation_count(lines);
    if (!count) return false;
    any = true;
    // The basis of the count's runtime (all share the slice's start and plan).
    const auto basis =
        std::find_if(counting_.begin(), counting_.end(),
                     [&](const CountingBasis& c) { return c.runtime == count->runtime; });
    const CountingBasis& b = basis != counting_.end() ? *basis : counting_.front();
    // Under the lock throughout (in the sampler's thread, under the sampler's lock too: a fit
    // of the rating's models and a plan, no file read, once per count).
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cgroup_) return true;
    CountedSwitch made;
    made.count = *count;
    // The speed the slice runs at now: the last count's, else the runtime's it switched to,
    // else the start's.
    const Device* now = &b.start;
    const EmulationPlan* plan_now = &b.plan;
    if (counted_.applied) {
      now = &counted_.applied->speed->device;
      plan_now = &counted_.applied->speed->plan;
    } else if (done_.load(std::memory_order_relaxed) && made_.error.empty()) {
      now = &made_.speed->device;
      plan_now = &made_.speed->plan;
    }
    made.before = speed_of(*now);
    made.before_speed = now->core_speed;
    if (basis != counting_.end()) {
      // Not for a count of another runtime: its divisor and range would be the wrong one's.
      CountDivisor divisor = count_divisor(b, *plan_now);
      made.scale = divisor.value;
      made.scale_from = std::move(divisor.from);
      for (const auto& [model, mb] : b.rating.activation_mb) {
        const auto ms = b.rating.host_ms.find(model);
        if (ms == b.rating.host_ms.end() || !(ms->second > 0)) continue;
        const double m = mb / ms->second;
        made.rated_low = made.rated_low == 0 ? m : std::min(made.rated_low, m);
        made.rated_high = std::max(made.rated_high, m);
      }
    }
    made.mb_per_ms = count->mb / (count->cpu_ms / made.scale);
    if (basis == counting_.end()) {
      made.error = fmt::format("the slice runs at {} and does not count {} workloads",
                               made.before, runtime_name(count->runtime));
    } else {
      // Also where the slice followed the workload to another runtime's speed (a Python that
      // imported PyTorch to export its model and infers with ONNX Runtime): the count says
      // which runtime infers.
      try {
        const Device at = for_runtime(b.measured, b.rating, nullptr, made.mb_per_ms);
        FollowedSpeed speed;
        speed.runtime = b.runtime;
        speed.plan = plan_emulation(at, b.host, b.options);
        if (speed.plan.core_groups != b.plan.core_groups || speed.plan.cpus != b.plan.cpus) {
          throw Error("its plan has other CPUs or core groups than the slice's");
        }
        speed.device = device_as_run(at, speed.plan, b.usable_cpus);
        made.speed = std::move(speed);
      } catch (const std::exception& e) {
        made.error = e.what();
      }
    }
    if (made.error.empty()) {
      const EmulationPlan& plan = made.speed->plan;
      const int err = cgroup_->set_cpu_bandwidth(written_quota_us(plan), plan.cpu_period_us);
      if (err) {
        cgroup_->set_cpu_bandwidth(quota_us_, period_us_);  // as before, whole
        made.error = fmt::format("could not write the CPU bandwidth: {} (errno {})",
                                 std::strerror(err), err);
      } else {
        quota_us_ = written_quota_us(plan);
        period_us_ = plan.cpu_period_us;
        counted_done_.store(true, std::memory_order_release);
      }
    }
    made.when = std::chrono::steady_clock::now();
    if (made.error.empty()) counted_.applied = made;
    if (counted_.counts.size() == CountedSwitches::kMaxCounts) {
      counted_.counts.erase(counted_.counts.begin());
    }
    counted_.counts.push_back(std::move(made));
  } catch (...) {
    // Out of memory: this count sets nothing; a later one may.
  }
  return any;
}

CountedSwitches RuntimeFollower::counted_switches() const {
  if (forks_ != fork_count()) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  return counted_;
}

void RuntimeFollower::detach() noexcept {
  if (forks_ != fork_count()) {
    cgroup_ = nullptr;  // a forked child: no sampler thread writes here
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  cgroup_ = nullptr;
}

std::optional<RuntimeSwitch> RuntimeFollower::switched() const {
  if (!done_.load(std::memory_order_acquire)) return std::nullopt;
  return made_;
}

std::string switch_warning(const Device& before, const RuntimeSwitch& made,
                           double since_release_s) {
  const FollowedSpeed& s = *made.speed;
  const std::string name = runtime_name(s.runtime);
  if (!made.error.empty()) {
    return fmt::format(
        "the workload loaded {} ({}), and the device has a {} speed ({:.3g} of a host core), "
        "but {}: the whole run ran at {} ({:.3g}) and its times are not {}'s; emulate "
        "Device.for_runtime('{}') (--runtime {}) to plan it from the start",
        name, made.library, name, s.device.core_speed, made.error, speed_of(before),
        before.core_speed, name, s.runtime, s.runtime);
  }
  return fmt::format(
      "the workload loaded {} ({}): the device ran at {} ({:.3g} of a host core) for the first "
      "{:.2f} s, then at its {} speed ({:.3g}), the runtime's own ratio of device to host time "
      "(docs/devices.md, \"Other runtimes\"); what ran before the switch (the import, a first "
      "inference) ran at the other speed. Emulate Device.for_runtime('{}') (--runtime {}) to "
      "run at it from the start{}",
      name, made.library, speed_of(before), before.core_speed, since_release_s, name,
      s.device.core_speed, s.runtime, s.runtime, precision_hint(before, s.runtime));
}

std::string counted_warning(const CountedSwitch& made, double since_release_s) {
  const ActivationCount& c = made.count;
  std::string outside;
  if (made.rated_high > 0 && (made.mb_per_ms < made.rated_low || made.mb_per_ms > made.rated_high)) {
    outside = fmt::format(" (outside the {:.3g}-{:.3g} MB per ms of this host's rated models, "
                          "which the memory term was fitted on: it extrapolates, estimated)",
                          made.rated_low, made.rated_high);
  }
  const std::string counted = fmt::format(
      "the workload's model wrote {:.4g} MB of activations per inference (counted {}) in "
      "{:.4g} ms of one thread's CPU time under the slice's quota (measured, the median of "
      "{}){}: {:.4g} MB per ms{}",
      c.mb,
      c.runtime == "onnxruntime"    ? "by edgeprof from its ONNX graph's nodes"
      : c.runtime == "pytorch-int8" ? "by edgeprof from its operators' outputs"
                                    : "by edgeprof's hook on its layers",
      c.cpu_ms, c.calls,
      made.scale != 1 ? fmt::format(", {:.4g} ms of this host's time as rated (/ {:.3g}: {})",
                                    c.cpu_ms / made.scale, made.scale, made.scale_from)
                      : std::string(),
      made.mb_per_ms, outside);
  if (!made.error.empty() || !made.speed) {
    return fmt::format("{}, but the device's speed was not set from it: {}; the run went on at "
                       "{} ({:.3g} of a host core)",
                       counted, made.error, made.before, made.before_speed);
  }
  return fmt::format(
      "{}: the device ran at {} ({:.3g} of a host core) for the first {:.2f} s, then at its {} "
      "speed with that memory term ({:.3g}; docs/devices.md, \"A workload's own speed\"); the "
      "import and the inferences before the count ran at the other speed (--runtime {} "
      "--memory-mb-per-ms {:.4g} runs at it from the start; repeated runs do after the first "
      "count)",
      counted, made.before, made.before_speed, since_release_s,
      runtime_name(made.speed->runtime), made.speed->device.core_speed, made.speed->runtime,
      made.mb_per_ms);
}

std::string late_count_warning(const CountedSwitch& made) {
  return fmt::format(
      "the workload's activation count ({:.4g} MB per ms{}) was read as it exited: it did not "
      "set this run's speed, only that of the slice's next run; --runtime {} "
      "--memory-mb-per-ms {:.4g} runs at it from the start",
      made.mb_per_ms, made.error.empty() ? "" : ", refused: " + made.error, made.count.runtime,
      made.mb_per_ms);
}

std::optional<std::string> uncounted_warning(const Device& device, const CountedSwitch* earlier,
                                             const RuntimesSeen& seen,
                                             const std::vector<std::string>& counted) {
  if (earlier && earlier->speed) {
    const std::string& runtime = earlier->count.runtime;
    return fmt::format(
        "this run started at the {} speed an earlier workload in the slice counted ({:.4g} MB "
        "per ms) and sent no count of its own, so it ran at that workload's speed, which is "
        "another model's if it ran one: run it in a slice of its own{}",
        runtime_name(runtime), earlier->mb_per_ms,
        seen.count(loaded_as(runtime)) ? fmt::format(", or at its own speed (--runtime {} "
                                          "--memory-mb-per-ms M)",
                                          runtime)
                            : std::string());
  }
  // At the speed over the models of a runtime the slice counts, the workload having loaded it
  // (ONNX Runtime's Python module: a program of another language is not counted).
  if (!device.nn || device.nn->memory_mb_per_ms > 0 ||
      std::find(counted.begin(), counted.end(), device.nn->basis) == counted.end()) {
    return std::nullopt;
  }
  const std::string& runtime = device.nn->basis;
  const auto library = seen.find(loaded_as(runtime));
  if (library == seen.end() ||
      (runtime == "onnxruntime" &&
       library->second.rfind("onnxruntime_pybind11_state", 0) != 0)) {
    return std::nullopt;
  }
  const std::string name = runtime_name(runtime);
  return fmt::format(
      "the workload loaded {} but sent no activation count, so it ran at the device's {} speed "
      "over the models ({:.3g} of a host core), not at its own model's: the counter counts {}, "
      "in a Python process that has edgeprof's counter on its PYTHONPATH (not one started with "
      "another environment, nor a run shorter than that). Give its own speed (--runtime {} "
      "--memory-mb-per-ms M, from a run that counted), or turn counting off "
      "(--no-count-activations) to be told nothing (docs/devices.md, \"A workload's own "
      "speed\")",
      runtime_name(loaded_as(runtime)), name, device.core_speed,
      runtime == "onnxruntime"
          ? "the first session that runs (on the CPU, its inputs arrays), its graph's nodes' "
            "outputs in one inference of a copy of it at one thread, then its CPU time in five, "
            "where the copies fit in the slice's memory (what it uses and five times the "
            "model's size)"
          : runtime == "pytorch-int8"
          ? "a model that runs quantized operators on the CPU (TorchScript too) once it has "
            "inferred six times with the same shapes (not a compiled model)"
          : "an eager model that infers on the CPU (eval mode or autograd off) once it has "
            "inferred six times with the same shapes (not a training step's forward, a "
            "TorchScript or compiled model)",
      runtime);
}

}  // namespace edgeprof::detail
