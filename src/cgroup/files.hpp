// Every cgroup file edgeprof reads or writes, one table per version: the names appear nowhere
// else in src/. A new limit or sampled counter starts here. The core files of a cgroup
// (cgroup.procs, and v2's interface files) come first; both versions have cgroup.procs.
#pragma once

namespace edgeprof::detail::files {

inline constexpr const char* kProcs = "cgroup.procs";

// cgroup v1: one hierarchy per controller; the files of a controller's directory.
namespace v1 {
inline constexpr const char* kBlkioThrottleIoServiceBytesRecursive = "blkio.throttle.io_service_bytes_recursive";
inline constexpr const char* kBlkioThrottleIoServicedRecursive = "blkio.throttle.io_serviced_recursive";
inline constexpr const char* kBlkioThrottleReadBpsDevice = "blkio.throttle.read_bps_device";
inline constexpr const char* kBlkioThrottleWriteBpsDevice = "blkio.throttle.write_bps_device";
inline constexpr const char* kCpuCfsPeriodUs = "cpu.cfs_period_us";
inline constexpr const char* kCpuCfsQuotaUs = "cpu.cfs_quota_us";
inline constexpr const char* kCpuShares = "cpu.shares";
inline constexpr const char* kCpuSharesHighest = "262144";  // the kernel's MAX_SHARES
inline constexpr const char* kCpuStat = "cpu.stat";
inline constexpr const char* kCpuacctStat = "cpuacct.stat";
inline constexpr const char* kCpuacctUsage = "cpuacct.usage";
inline constexpr const char* kCpusetCpus = "cpuset.cpus";
inline constexpr const char* kCpusetMems = "cpuset.mems";
inline constexpr const char* kFreezerState = "freezer.state";
inline constexpr const char* kMemoryLimitInBytes = "memory.limit_in_bytes";
inline constexpr const char* kMemoryMaxUsageInBytes = "memory.max_usage_in_bytes";
inline constexpr const char* kMemoryMemswLimitInBytes = "memory.memsw.limit_in_bytes";
inline constexpr const char* kMemoryOomControl = "memory.oom_control";
inline constexpr const char* kMemoryStat = "memory.stat";
inline constexpr const char* kMemoryUsageInBytes = "memory.usage_in_bytes";
inline constexpr const char* kPidsCurrent = "pids.current";
inline constexpr const char* kPidsMax = "pids.max";
inline constexpr const char* kTasks = "tasks";
}  // namespace v1

// Per-core emulation: the name of core K's group inside the slice's cpu cgroup is kCoreGroup
// followed by K ("core0").
inline constexpr const char* kCoreGroup = "core";

// cgroup v2: one unified hierarchy.
namespace v2 {
inline constexpr const char* kControllers = "cgroup.controllers";
inline constexpr const char* kThreads = "cgroup.threads";
inline constexpr const char* kType = "cgroup.type";
inline constexpr const char* kSubtreeControl = "cgroup.subtree_control";
inline constexpr const char* kKill = "cgroup.kill";
inline constexpr const char* kFreeze = "cgroup.freeze";
inline constexpr const char* kEvents = "cgroup.events";
inline constexpr const char* kCpuMax = "cpu.max";
inline constexpr const char* kCpuPressure = "cpu.pressure";
inline constexpr const char* kCpuStat = "cpu.stat";
inline constexpr const char* kCpuWeight = "cpu.weight";
inline constexpr const char* kCpuWeightHighest = "10000";
inline constexpr const char* kCpusetCpus = "cpuset.cpus";
// Read only by the v2 fixtures' capture (tests/vm/capture_fixtures.cpp).
inline constexpr const char* kCpusetCpusEffective = "cpuset.cpus.effective";
inline constexpr const char* kIoMax = "io.max";
inline constexpr const char* kIoPressure = "io.pressure";
inline constexpr const char* kIoStat = "io.stat";
inline constexpr const char* kMemoryCurrent = "memory.current";
inline constexpr const char* kMemoryEvents = "memory.events";
inline constexpr const char* kMemoryMax = "memory.max";
inline constexpr const char* kMemoryPeak = "memory.peak";
inline constexpr const char* kMemoryPressure = "memory.pressure";
inline constexpr const char* kMemoryStat = "memory.stat";
inline constexpr const char* kMemorySwapCurrent = "memory.swap.current";
inline constexpr const char* kMemorySwapMax = "memory.swap.max";
inline constexpr const char* kPidsCurrent = "pids.current";
inline constexpr const char* kPidsMax = "pids.max";
}  // namespace v2

}  // namespace edgeprof::detail::files
