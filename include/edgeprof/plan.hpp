// The emulation plan: a pure function from (device, host) to cgroup settings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/device.hpp"

namespace edgeprof {

// What the plan needs to know about the host. `host_facts()` reads them; tests make their own.
struct HostFacts {
  std::vector<int> cpus;          // CPUs this process may use (its affinity / cpuset)
  std::uint64_t memory_bytes = 0; // MemTotal
  std::uint64_t swap_bytes = 0;   // SwapTotal
};

// Reads this host's facts from /proc and sched_getaffinity.
HostFacts host_facts();

// Kernel bounds on the CFS bandwidth period and quota, in microseconds.
inline constexpr std::uint64_t kMinCpuPeriodUs = 1000;
inline constexpr std::uint64_t kMaxCpuPeriodUs = 1000000;
inline constexpr std::uint64_t kMinCpuQuotaUs = 1000;
// Default period: short enough that a 10 ms inference sees the device's speed rather than a
// burst-then-stall pattern, long enough that the scheduler's bandwidth accounting stays cheap.
inline constexpr std::uint64_t kDefaultCpuPeriodUs = 10000;

struct PlanOptions {
  std::uint64_t cpu_period_us = kDefaultCpuPeriodUs;
  // Host CPUs for the cpuset, in order of preference (the first ones are used); empty = the
  // ones this process's other live slices use least, lowest number first.
  std::vector<int> cpus;
};

// cgroup settings that emulate one device on this host.
struct EmulationPlan {
  std::vector<int> cpus;             // cpuset.cpus
  std::uint64_t cpu_period_us = 0;   // cpu.max period / cpu.cfs_period_us
  std::uint64_t cpu_quota_us = 0;    // cpu.max quota / cpu.cfs_quota_us
  std::uint64_t memory_max_bytes = 0;
  std::uint64_t swap_max_bytes = 0;
  std::optional<std::int64_t> pids_max;
  std::vector<std::string> notes;    // where the emulation differs from the device, and why

  // The CPU capacity granted, in host cores (quota / period).
  double capacity_cores() const {
    return cpu_period_us ? double(cpu_quota_us) / double(cpu_period_us) : 0.0;
  }
};

bool operator==(const EmulationPlan& a, const EmulationPlan& b);

// Throws UnsupportedError when the host cannot emulate the device (more CPU capacity or memory
// than the host has, CPUs not available) and DeviceError for an invalid device.
EmulationPlan plan_emulation(const Device& device, const HostFacts& host,
                             const PlanOptions& options = {});

// "0-3,8" <-> {0,1,2,3,8}. parse_cpu_list throws Error on malformed text.
std::vector<int> parse_cpu_list(std::string_view text);
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace edgeprof
