/// @file
/// The emulation plan: a pure function from (device, host) to cgroup settings.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/export.hpp"
#include "edgeprof/nn.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// What the plan needs to know about the host. `host_facts()` reads them; tests make their own.
struct HostFacts {
  std::vector<int> cpus;          ///< CPUs this process may use (its affinity / cpuset)
  std::uint64_t memory_bytes = 0; ///< MemTotal
  std::uint64_t swap_bytes = 0;   ///< SwapTotal
  /// "MAJ:MIN" of the whole disk that holds the current directory, whose bandwidth a device's
  /// storage figures limit; "" when there is none (tmpfs, overlay, network filesystems).
  std::string io_device;
  /// Why io_device is empty, for the report.
  std::string io_device_problem;
  /// The CFS bandwidth slice: how much of a slice's quota each CPU draws at a time
  /// (/proc/sys/kernel/sched_cfs_bandwidth_slice_us); 0 = unknown, taken as the kernel's
  /// default, kDefaultCfsBandwidthSliceUs.
  std::uint64_t cfs_bandwidth_slice_us = 0;
  /// This host's own share under CPU quotas (cached_quota_share(), nn.hpp), from which an nn
  /// speed's plan takes its quota scale (PlanOptions::quota_scale); empty when not measured.
  std::optional<QuotaShare> quota_share;
  /// Why quota_share is empty, for the plan's note.
  std::string quota_share_problem;
  /// Other runtimes' own shares (cached_quota_share(why, id)), by NnRuntime id: a plan at such
  /// a runtime's nn speed (NnSpeed::basis "pytorch") takes its quota scale from that runtime's
  /// share, else from quota_share (ncnn's) and says so.
  std::map<std::string, QuotaShare> runtime_quota_shares;
  /// Why a runtime's share is not in runtime_quota_shares (not measured yet, corrupt, measured
  /// on another host), by NnRuntime id, for the plan's note.
  std::map<std::string, std::string> runtime_quota_share_problems;
  /// How much slower this host runs inference now than at its rating with the runtime of the
  /// plan's nn speed (HostDrift, nn.hpp: measure_host_drift()), from which a plan with
  /// PlanOptions::drift_check corrects that speed; empty when not probed.
  std::optional<HostDrift> drift;
  /// Why drift is empty where a plan asked for it, for the plan's note.
  std::string drift_problem;
  /// quota_share checked at the plan's quota just before the run (with_checked_quota_share(),
  /// PlanOptions::drift_check); where it was applied, quota_share's shares are already
  /// multiplied by its measured / cached. Empty when not checked.
  std::optional<QuotaShareCheck> quota_share_check;
  /// Why quota_share_check is empty where a plan asked for it, for the plan's note.
  std::string quota_share_check_problem;
};

/// The kernel's default CFS bandwidth slice (sched_cfs_bandwidth_slice_us), in microseconds.
inline constexpr std::uint64_t kDefaultCfsBandwidthSliceUs = 5000;

/// Reads this host's facts from /proc and sched_getaffinity, and its own shares under a quota
/// from the cache (cached_quota_share(), ncnn's and every other runtime's measured). A figure
/// that cannot be read is left empty or 0.
HostFacts host_facts();

/// Shortest CFS bandwidth period the kernel accepts, in microseconds.
inline constexpr std::uint64_t kMinCpuPeriodUs = 1000;
/// Longest CFS bandwidth period the kernel accepts, in microseconds.
inline constexpr std::uint64_t kMaxCpuPeriodUs = 1000000;
/// Smallest CFS bandwidth quota the kernel accepts, in microseconds.
inline constexpr std::uint64_t kMinCpuQuotaUs = 1000;
/// Default period: short enough that a 100 ms inference sees the device's speed rather than a
/// burst-then-stall pattern, long enough that the scheduler's bandwidth accounting stays cheap.
/// A plan lengthens it where several CPUs share the quota (PlanOptions::cpu_period_us).
inline constexpr std::uint64_t kDefaultCpuPeriodUs = 10000;
/// PlanOptions::cpu_period_us for "chosen by edgeprof".
inline constexpr std::uint64_t kChosenCpuPeriod = 0;
/// The longest period a plan lengthens kDefaultCpuPeriodUs to for a shared quota: two busy
/// threads on 2 x 0.25 shared evenly at 40 ms (docs/benchmarks.md, "Thread shares").
inline constexpr std::uint64_t kMaxEvenCpuPeriodUs = 40000;

/// The shortest period choose_cpu_period_us() picks: shorter ones cost the workload measurably
/// (each throttle and unthrottle is work for the scheduler; +16% total time at 2 ms, measured in
/// docs/benchmarks.md), although the kernel accepts down to kMinCpuPeriodUs.
inline constexpr std::uint64_t kMinChosenCpuPeriodUs = 5000;
/// Keep-warm applies where each of the slice's CPUs gets at most this share of every period
/// (quota / (period x CPUs)): where it waits at least 45% of each period. Above it the threads
/// delayed the workload's return more often than they saved (docs/keep-warm.md: ncnn at 0.58
/// of a CPU did 1/1.16 of its share of work with them, 1/1.00 without; at 0.40, 1/1.02 with
/// them and 1/1.09 without; where between the two it turns is not measured).
inline constexpr double kKeepWarmMaxShare = 0.55;

/// The CFS period for a workload whose iterations (one inference, one training step) take
/// `iteration_time_us` on the device: a tenth of it, so that each iteration spans many periods
/// and is off by at most about (1 - speed) / 10 of itself for where it starts in a period,
/// instead of a burst at full speed and a stall; within kMinChosenCpuPeriodUs .. 100 ms
/// (docs/period.md has the measurements behind the rule). 0 = unknown: kDefaultCpuPeriodUs.
/// plan_emulation() may lengthen it for a device of several cores (PlanOptions::iteration_time_us).
std::uint64_t choose_cpu_period_us(std::uint64_t iteration_time_us);

/// The switches below read an environment variable: 1, true, on or yes is on; 0, false, off or
/// no is off (any case); unset or empty is the default; any other value throws Error naming the
/// variable.
///
/// EDGEPROF_MEASURE_NN, on by default: PlanOptions::measure_nn's default.
bool measure_nn_by_default();

/// EDGEPROF_STEADY_MALLOC, on by default: PlanOptions::steady_malloc's default (the switch for
/// Python and the command line).
bool steady_malloc_by_default();

/// EDGEPROF_DRIFT_CHECK, off by default: PlanOptions::drift_check's default.
bool drift_check_by_default();

/// EDGEPROF_COUNT_ACTIVATIONS, on by default: PlanOptions::count_activations's default.
/// (EDGEPROF_COUNT_ONNXRUNTIME, a switch of the same kind, turns off the count of ONNX Runtime's
/// workloads alone.)
bool count_activations_by_default();

/// How a device of several cores gets its CPU capacity.
enum class CoreEmulation {
  /// One quota of cores x speed for the whole slice: a thread runs faster than a device core
  /// whenever its siblings idle (up to cores x speed, at most a host CPU).
  pooled,
  /// One cgroup of one core's quota (speed x period) per device core, the workload's threads
  /// spread over them as they appear and as their load shows: no thread runs faster than a
  /// device core, N busy threads get N cores' worth (docs/threads.md). Child cgroups of the
  /// slice's cpu hierarchy on v1, threaded cgroups on v2; where neither can be made, the slice
  /// falls back to pooled and says so in Result::unapplied.
  per_core,
  /// One device core at its speed, the workload's width variables set to 1
  /// (kThreadCountVariables), and its times divided by the board's published speed-up from one
  /// thread to all its cores (core_scaling(), device.hpp; EmulationPlan::threads_projection;
  /// Result::projected_s()): the k-core time is projected, not emulated. For a device emulated
  /// at its nn speed with a published multi-thread table; a workload that starts its own
  /// threads whatever the environment says (ncnn's num_threads, torch.set_num_threads) must be
  /// given one (the result warns when its environment says otherwise). ncnn's graphs projected
  /// so to all cores landed within a held-out median 8-29% of seven boards, the pooled quota
  /// 9-54% of six (docs/fidelity.md).
  projected,
  /// projected where it applies (a device of several cores at its nn speed with a published
  /// multi-thread table), pooled elsewhere; the plan's notes say which and why
  /// (resolve_core_emulation()). On a second kind of host projected landed within 9-16% of
  /// all eight boards with such tables, pooled 8-29% with their graphs' ranking mostly lost.
  automatic
};

/// The most cores per-core emulation makes groups for; a device of more is pooled, with a note.
inline constexpr std::uint32_t kMaxCoreGroups = 64;

/// "pooled", "per-core", "projected" or "auto".
const char* to_string(CoreEmulation cores);
/// Inverse of to_string(CoreEmulation) ("per_core" also accepted); throws Error for anything
/// else, naming the choices.
CoreEmulation core_emulation_from_string(std::string_view text);

/// Choices the plan leaves to the caller.
struct PlanOptions {
  /// CFS bandwidth period in microseconds, kMinCpuPeriodUs .. kMaxCpuPeriodUs; the plan
  /// lengthens it when the quota would fall below kMinCpuQuotaUs (and says so in its notes).
  /// kChosenCpuPeriod (0, the default): kDefaultCpuPeriodUs, lengthened up to
  /// kMaxEvenCpuPeriodUs where several CPUs share the quota, to give each CPU two bandwidth
  /// slices of it per period (busy threads then share it evenly; docs/period.md).
  std::uint64_t cpu_period_us = kChosenCpuPeriod;
  /// The workload's typical iteration time on the device, in microseconds; when set, the period
  /// is choose_cpu_period_us(iteration_time_us), lengthened on a cpuset of several CPUs to give
  /// each CPU two bandwidth slices of quota per period (so busy threads share it evenly) when
  /// that is at most a quarter of the iteration; cpu_period_us must be left at kChosenCpuPeriod.
  std::uint64_t iteration_time_us = 0;
  /// Host CPUs for the cpuset, in order of preference (the first ones are used); empty = the
  /// ones this process's other live slices use least, lowest number first.
  std::vector<int> cpus;
  /// Keep the slice's CPUs busy while its workload runs and the quota throttles it: one thread
  /// of this process per CPU, outside the slice, at SCHED_IDLE priority, so that a throttled
  /// CPU does not halt and resume cold (a throttled workload did 1.36x the CPU time for the
  /// same work without it; docs/keep-warm.md). Applies only to plans whose quota throttles
  /// each CPU to kKeepWarmMaxShare or less, or that have a speed schedule
  /// (EmulationPlan::keep_warm); false turns it off.
  bool keep_warm = true;
  /// The kind of speed to emulate (for_speed_kind(), device.hpp): by default the nn speed
  /// (CNN inference) where the device has one on this host, else its described core speed;
  /// the plan's notes say which, from what, and how sure it is. By default also, a device
  /// with published times with another runtime (Device::runtime_ms) switches a sampled
  /// slice to that runtime's speed (for_runtime()) when a workload is seen to load it, where
  /// this host has the runtime's rating: Result::speed_changes and `warnings` say when
  /// (docs/devices.md). Any other kind, or a device whose speed kind is set, is kept.
  SpeedKind speed_kind = SpeedKind::automatic;
  /// A device with published CNN inference times (Device::nn_ms), emulated at its nn speed
  /// (speed_kind automatic or nn), on a host whose nn rating is not measured yet: measure the
  /// rating first (with_measured_nn(): once per host, seconds on a desktop CPU, cached). False: nothing
  /// is measured; an automatic plan then emulates the integer speed with a note saying the
  /// command that fixes it, an nn plan fails. Default: true unless the environment variable
  /// EDGEPROF_MEASURE_NN is 0 (for test machines and CI that must not spend the time).
  bool measure_nn = measure_nn_by_default();
  /// How with_measured_nn() measures (its `progress` hears each graph).
  NnOptions nn_measure;
  /// Give the workload the device's width and make its threads wait passively: the plan's
  /// thread_env (thread_env_defaults()), each variable set only where the workload's
  /// environment does not set it already. False: the workload's environment is left as it is.
  bool thread_env = true;
  /// With thread_env: the workload's environment also gets kSteadyMallocVariables (where it
  /// sets none of them, nor glibc.malloc tunables in GLIBC_TUNABLES), as this host's nn
  /// ratings' runners do. False: glibc's own dynamic thresholds. Default: true unless the
  /// environment variable EDGEPROF_STEADY_MALLOC is 0.
  bool steady_malloc = steady_malloc_by_default();
  /// Count a PyTorch or ONNX Runtime workload's activations and run it at the device's speed
  /// with that runtime with that memory term (NnSpeed::memory_mb_per_ms, for_runtime()): a
  /// Python workload gets edgeprof's counter on its PYTHONPATH (as sitecustomize, which also
  /// runs the environment's own). With PyTorch it counts the MB its model's layers write in its
  /// first inference and times the next ones with its shapes by one thread's CPU time (at one
  /// PyTorch thread); with ONNX Runtime (unless the environment variable
  /// EDGEPROF_COUNT_ONNXRUNTIME is 0) the MB its first countable session's ONNX graph's nodes
  /// write in one inference and five inferences of a copy of it at one thread, before that
  /// session's first run (only where the copies fit under the slice's memory limit); at the
  /// PyTorch int8 speed (named: int8 loads fp32's libraries) the MB a model's operators write
  /// in its first inference, TorchScript too, and its next five calls; each CPU
  /// time divided by this host's own share at the slice's quota (or the
  /// quota_scale given) and by the host drift. The slice sets the speed once the count arrives
  /// (Result::speed_changes; a sampled run only). For a device run at the speed edgeprof
  /// chooses or at that runtime's speed without a memory term (docs/devices.md, "A workload's
  /// own speed"; measured in docs/fidelity.md). Where it does not apply (a device without
  /// published times with the runtime, a speed the user chose other than the runtime's)
  /// nothing is said. Default: true unless the environment variable
  /// EDGEPROF_COUNT_ACTIVATIONS is 0.
  bool count_activations = count_activations_by_default();
  /// How a device of several cores gets its CPU capacity (CoreEmulation): by default
  /// automatic, projected where the device's published tables allow it at its nn speed, else
  /// pooled (the plan's notes say which and why).
  CoreEmulation cores = CoreEmulation::automatic;
  /// Per-core emulation at the nn speed of a device with published multi-thread times: each
  /// core's quota follows how many of the workload's threads are busy, so that N busy threads
  /// speed up as the board did (core_scaling(), device.hpp; EmulationPlan::core_quota_by_busy).
  /// Off by default: on this project's host the emulation's own four threads on two CPUs
  /// already sped up less than the boards, and the scaling made every device slower still
  /// (docs/threads.md has the run). Off: every core keeps core_quota_us.
  bool core_scaling = false;
  /// The CPU quota (each core group's, per-core) times this, kMinQuotaScale ..
  /// kMaxQuotaScale, capped at the CPUs' whole time: for the work a throttled slice loses on
  /// this host, which measure_quota_share() measures as the emulation's own share (emulated
  /// time x speed / the same work unthrottled): ncnn inference did 20-40% less work per
  /// CPU-second under a 10 ms period's quota than unthrottled on this project's host, a
  /// CPU-bound loop with keep-warm well under 1% (docs/fidelity.md). Empty (the default): a
  /// device emulated at its nn speed gets quota_scale_at() of the host's measured own share
  /// (HostFacts::quota_share) at the quota's share of a CPU, when the plan asks for the period
  /// it was measured at (the default; stretched alike below 0.1 of a CPU) with keep-warm, on
  /// one CPU or per core; a quota pooled over several CPUs (a lengthened period, threads
  /// sharing it) is not what was measured and gets 1, as do other plans and an nn plan on a
  /// host without the measurement (the device's capacity exactly). The plan's notes say which.
  std::optional<double> quota_scale;
  /// Probe this host's drift since its nn rating just before the run (with_measured_drift():
  /// about half a second of ncnn inference, unthrottled, on the run's first CPU; at another
  /// runtime's speed that runtime's, tens of seconds) and correct a device emulated at its nn
  /// speed by it: speed x HostDrift::factor, a host 1.2x slower
  /// than at its rating giving the slice 1.2x the quota, so that it does the device's work in
  /// the device's time (EmulationPlan::host_drift; the plan's notes say by how much). Factors
  /// within kHostDriftDeadBand of 1 (the probe's own noise) and beyond kMinHostDrift ..
  /// kMaxHostDrift (a note says to measure the rating again) are not applied. Where the quota
  /// scale is from the host's own share, also checks that share at the plan's quota
  /// (with_checked_quota_share(): 2-6 s) and follows it beyond kShareCheckBand (unless
  /// share_check is false). Default: false unless the environment variable
  /// EDGEPROF_DRIFT_CHECK is 1.
  bool drift_check = drift_check_by_default();
  /// With drift_check: also check the host's own share at the plan's quota (above); false
  /// probes the drift alone (half a second).
  bool share_check = true;
  /// CoreEmulation::projected: the workload's own parallel scaling relative to the reference
  /// graphs' on this host (workload_scaling(), nn.hpp: its one- over two-thread time / the
  /// graphs' median), 0.5 .. 2, multiplying the board's median speed-up: a workload that
  /// scales worse than a typical CNN here does so on the board too (leave-one-pair-out over
  /// ncnn's published tables, the speed-up's median error 9% with it against 14.5% without;
  /// end to end, ncnn's graphs on seven boards, closer on four and further on three,
  /// docs/fidelity.md). Empty (the default): the board's median.
  std::optional<double> workload_scaling;
};

/// A HostDrift::factor within this of 1 is not applied: the probe's own noise (on a host that
/// held within 0.98-1.07 of its rating, eight probes read 0.95-1.07, up to 8% from the drift;
/// docs/fidelity.md).
inline constexpr double kHostDriftDeadBand = 0.1;
/// How long with_measured_drift() uses a probe again.
inline constexpr std::chrono::seconds kDriftProbeReuse{60};
/// The smallest HostDrift::factor a plan applies (PlanOptions::drift_check).
inline constexpr double kMinHostDrift = 0.67;
/// The largest HostDrift::factor a plan applies.
inline constexpr double kMaxHostDrift = 1.5;

/// The smallest PlanOptions::quota_scale.
inline constexpr double kMinQuotaScale = 0.5;
/// The largest PlanOptions::quota_scale.
inline constexpr double kMaxQuotaScale = 4.0;

/// The variables a common runtime reads for how many threads to start: OpenMP (libgomp, LLVM),
/// OpenBLAS, MKL, BLIS, numexpr, TensorFlow's two pools. Each gets the device's core count.
inline constexpr const char* kThreadCountVariables[] = {
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",        "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"};
/// The variables that make an OpenMP runtime's idle threads sleep instead of spinning:
/// OMP_WAIT_POLICY=PASSIVE (libgomp, LLVM, Intel), GOMP_SPINCOUNT=0 (libgomp), KMP_BLOCKTIME=0
/// (LLVM, Intel). Set together, or not at all when the workload's environment sets one of them.
inline constexpr const char* kThreadWaitVariables[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                                       "KMP_BLOCKTIME"};

/// A variable edgeprof gives an environment where it is unset.
struct EnvDefault {
  const char* name;   ///< the variable: "MALLOC_MMAP_THRESHOLD_"
  const char* value;  ///< its value: "33554432"
};
/// glibc's malloc thresholds settled where its own dynamic rule ends (the largest mmap threshold
/// it moves to on a 64-bit host, 32 MiB, and twice that as the trim threshold), from the
/// start: a workload's environment gets them by default (PlanOptions::steady_malloc), and so
/// does every nn rating's runner (measure_nn_rating()), so that the two allocate alike. Without
/// them eager PyTorch handed its activations back to the kernel and faulted them in again on
/// every inference (2,300-6,400 page faults per MobileNet v2 inference on this project's host,
/// up to a third of its time in the kernel), by an amount that differed from one process to
/// the next: 22.8-35.5 ms per inference in ten processes, 16.2-20.1 ms and no fault with them
/// in three (measured, docs/fidelity.md). Set together, or not at all when the workload sets
/// one of them. The cost: freed blocks up to 32 MiB stay in the process's heap, and up to
/// 64 MiB of free heap per malloc arena is not handed back, all charged to the slice's memory
/// (docs/threads.md).
inline constexpr EnvDefault kSteadyMallocVariables[] = {{"MALLOC_MMAP_THRESHOLD_", "33554432"},
                                                        {"MALLOC_TRIM_THRESHOLD_", "67108864"}};

/// The environment a workload of a device with `cores` cores gets by default: every
/// kThreadCountVariables entry set to `cores` (so that a runtime sizing its pool from the host's
/// CPUs, or from a cpuset narrower than the device, starts the device's number of threads), and,
/// where `throttled` (a CPU quota binds), the kThreadWaitVariables: a thread spinning at a
/// barrier spends quota that its siblings need, which on the device's own cores it would not
/// (docs/threads.md has the measurements).
std::map<std::string, std::string> thread_env_defaults(int cores, bool throttled);

/// CoreEmulation::projected: how a one-core run's times become the device's `threads`-core
/// times (Result::projected_s()).
struct ThreadsProjection {
  int threads = 1;     ///< the cores the projected times are for (the device's, or --threads)
  /// The board's speed-up from one thread to `threads`: scaling.speedup_at(threads); the
  /// projected time is the measured one divided by it.
  double speedup = 1;
  CoreScaling scaling;  ///< where it comes from: the device's published tables
  /// PlanOptions::workload_scaling as applied: speedup is the board's (scaling.speedup_at(
  /// threads)) times this; 1 = the board's median graph.
  double workload_factor = 1;
};
/// Every field equal.
bool operator==(const ThreadsProjection& a, const ThreadsProjection& b);

/// cgroup settings that emulate one device on this host.
struct EmulationPlan {
  std::vector<int> cpus;                 ///< cpuset.cpus
  std::uint64_t cpu_period_us = 0;       ///< cpu.max period / cpu.cfs_period_us
  /// cpu.max quota / cpu.cfs_quota_us: the device's whole capacity. With core_groups, each
  /// core's group holds core_quota_us instead and the slice's own quota is left unlimited.
  std::uint64_t cpu_quota_us = 0;
  /// Per-core emulation (CoreEmulation::per_core): this many child cgroups of one core each,
  /// "core0" .. in the slice's cpu cgroup; 0 = one pooled quota.
  std::uint32_t core_groups = 0;
  /// Each core group's quota per cpu_period_us (speed x period); 0 without core groups.
  std::uint64_t core_quota_us = 0;
  /// Per-core scaling (PlanOptions::core_scaling): each core group's quota when k of the
  /// workload's threads are busy, at index k - 1 (the first is core_quota_us); empty = always
  /// core_quota_us.
  std::vector<std::uint64_t> core_quota_by_busy;
  /// PlanOptions::quota_scale as applied: the quotas above are the device's capacity times
  /// this (less where capped at the CPUs' whole time).
  double quota_scale = 1.0;
  /// When quota_scale came from this host's measured own share: how much one emulated time
  /// scatters about the speed's (own_share_log_sd() at the scaled quota), which widens
  /// Result::device_interval; 0 otherwise (the emulation's error is then not in the interval).
  double emulation_log_sd = 0;
  /// The host drift the nn speed was corrected by (PlanOptions::drift_check,
  /// HostFacts::drift): the device's core speed is its rated nn speed x this; 1 = not corrected.
  double host_drift = 1.0;
  /// The probe's reading (HostDrift::factor) whether applied or not; 0 = not probed.
  double drift_probed = 0;
  /// The host's own share checked at the plan's quota just before the run over the cached one
  /// (HostFacts::quota_share_check, PlanOptions::drift_check); beyond kShareCheckBand of 1 the
  /// quota scale followed it. 0 = not checked.
  double own_share_check = 0;
  /// CoreEmulation::projected: the slice is one device core, and the device's times with all
  /// its cores are projected from it; unset otherwise.
  std::optional<ThreadsProjection> threads_projection;
  std::uint64_t memory_max_bytes = 0;    ///< memory.max / memory.limit_in_bytes
  std::uint64_t swap_max_bytes = 0;      ///< swap allowed on top of memory_max_bytes
  std::optional<std::int64_t> pids_max;  ///< pids.max; unset = no limit
  /// The disk ("MAJ:MIN") whose bandwidth is limited; "" = no storage emulation.
  std::string io_device;
  std::optional<std::uint64_t> io_read_bps;   ///< io.max rbps / blkio read_bps_device
  std::optional<std::uint64_t> io_write_bps;  ///< io.max wbps / blkio write_bps_device
  /// The slice's CPUs are kept busy while a workload runs (PlanOptions::keep_warm, and the
  /// quota throttles each CPU to kKeepWarmMaxShare or less, or a speed schedule). Off also
  /// where a CPU quota above the slice would be spent by the threads (a note says so).
  bool keep_warm = false;
  /// Variables the workload's environment gets where it does not set them itself
  /// (PlanOptions::thread_env, thread_env_defaults()); empty = none.
  std::map<std::string, std::string> thread_env;
  std::vector<std::string> notes;        ///< where the emulation differs from the device, and why
  /// Limits of the device this host cannot apply, and why (swap beyond the host's, storage
  /// bandwidth without a block device): a run lists them in Result::unapplied.
  std::vector<std::string> unapplied;

  /// How the plan emulates the device's cores, resolved: projected where it has a
  /// threads_projection, per-core where it has core groups, else pooled (never automatic).
  CoreEmulation core_emulation() const {
    return threads_projection ? CoreEmulation::projected
           : core_groups      ? CoreEmulation::per_core
                              : CoreEmulation::pooled;
  }

  /// The CPU capacity granted, in host cores (quota / period; quota_scale included).
  double capacity_cores() const {
    return cpu_period_us ? double(cpu_quota_us) / double(cpu_period_us) : 0.0;
  }

  /// The CPU capacity one quota holds, in host cores: each core group's (core_quota_us /
  /// cpu_period_us) with core groups, else capacity_cores(). A speed schedule's step scales it.
  double quota_group_cores() const {
    if (!core_groups) return capacity_cores();
    return cpu_period_us ? double(core_quota_us) / double(cpu_period_us) : 0.0;
  }
};

/// Every field equal.
bool operator==(const EmulationPlan& a, const EmulationPlan& b);

/// A CFS bandwidth: `quota_us` of CPU time in every `period_us`.
struct CpuBandwidth {
  std::uint64_t quota_us = 0;   ///< cpu.max quota / cpu.cfs_quota_us
  std::uint64_t period_us = 0;  ///< cpu.max period / cpu.cfs_period_us
};

/// The bandwidth that gives `capacity_cores` host cores at `period_us`, the period lengthened
/// (up to kMaxCpuPeriodUs) when the quota would fall under kMinCpuQuotaUs; the quota is never
/// below kMinCpuQuotaUs. Used by plan_emulation() and by speed schedules.
CpuBandwidth cpu_bandwidth(double capacity_cores, std::uint64_t period_us);

/// The device as emulated on `cpus` host CPUs: an unchanged copy when its cores' CPU capacity
/// (cores x core_speed) fits them, else for_threads(device, k) with the k of its cores that fit
/// (a workload with more busy threads than k then runs slower than on the device; the plan's
/// note says so). Throws UnsupportedError when one of its cores is faster than a host CPU.
Device fit_to_cpus(const Device& device, std::size_t cpus);

/// The interval a run at `speed` under `plan` reports (Result::device_interval, `level` 0.9):
/// time_interval() of the speed with the plan's emulation spread (emulation_log_sd) and, where
/// the plan projects one core's times to more threads, the board's speed-up's spread
/// (threads_projection->scaling.loo_log_sd). Not that spread where the speed came from times
/// published at the projection's threads (NnSpeed::threads, a runtime's default-thread table)
/// through the projection's own speed-up (NnSpeed::one_core_factor == its speedup: no workload
/// factor, the device not narrowed to other threads): it made them one core's and projects
/// them back, so it cancels, and each model's own speed-up is already in the speed's held-out
/// errors. Unset as time_interval() is.
std::optional<TimeInterval> device_interval(const NnSpeed& speed, const EmulationPlan& plan,
                                            double level = 0.9);

/// CoreEmulation::projected's projection for `device` (its cores; for a device narrowed by
/// for_threads, the scaling of its widest published table carried to its cores), from all its
/// graphs but `without_graph` (for held-out figures). Throws UnsupportedError when
/// core_scaling() finds no published multi-thread table to use.
ThreadsProjection project_threads(const Device& device, std::string_view without_graph = {});

/// The core emulation a plan uses for `device`, emulated at the speed it has (for_speed_kind()
/// already applied): `asked` itself, except CoreEmulation::automatic, which is projected for a
/// device of several cores at its nn speed whose projection can be made (project_threads()),
/// and pooled otherwise. `why`, when given, receives the reason for automatic's choice.
CoreEmulation resolve_core_emulation(const Device& device, CoreEmulation asked,
                                     std::string* why = nullptr);

/// with_measured_nn(device, options.nn_measure) (device.hpp) when `options` emulate the nn
/// speed (speed_kind not integer) and allow measuring (measure_nn), or this host's nn rating is
/// cached already; else an unchanged copy. plan_emulation() and Slice call it.
Device with_measured_nn(const Device& device, const PlanOptions& options);

/// `host` with this host's own share under a quota measured (measure_quota_share(), nn.hpp: once
/// per host, about NnRuntime::share_seconds, cached) when a plan of `device` would use it and it is
/// not cached: the device is emulated at its nn speed on one CPU or per core, options.quota_scale
/// is empty, the period is edgeprof's default, keep-warm is on, and options.measure_nn allows
/// measuring (its progress and Python are options.nn_measure's). A measurement that fails, or
/// cannot be cached, is not tried again in this process: quota_share_problem says why, and the plan
/// notes it. Only ncnn's share is measured on the way: a device at another runtime's speed whose
/// share is cached (HostFacts::runtime_quota_shares) needs none, and one whose share is not takes
/// ncnn's, the plan's note naming the command that measures its own (about 13 minutes for PyTorch's
/// here, too long for a run's way). Slice calls it.
HostFacts with_measured_quota_share(HostFacts host, const Device& device,
                                    const PlanOptions& options);

/// `host` with this host's drift since its nn rating probed (measure_host_drift(), nn.hpp) on
/// `cpu` when options.drift_check asks for it and a plan of `device` would use it: the device
/// is emulated at an nn speed of a runtime edgeprof rates (ncnn's, or another's from
/// Device::for_runtime, probed with that runtime), and this host's rating with it is cached.
/// A probe of the same CPU, runtime and rating made in this process in the last
/// kDriftProbeReuse is used again (repeats and comparisons then share one reading). A probe
/// that fails leaves drift empty with drift_problem saying why (the plan notes it; the run
/// goes on uncorrected). Slice calls it once it holds its CPUs, on the first of them.
HostFacts with_measured_drift(HostFacts host, const Device& device, const PlanOptions& options,
                              int cpu);

/// `host` with its own share checked (QuotaShareCheck, nn.hpp) on `cpu` at the quota the plan of
/// `device` applies (plan_emulation(device, host, options)), when options.drift_check and
/// share_check ask for it and that plan's quota scale is from host.quota_share (an nn speed on
/// one CPU or per core, no options.quota_scale): about (0.2 s + 0.2 s / the quota) of ncnn
/// inference and start-up, 2-6 s at the smallest boards' quotas. Beyond kShareCheckBand of the
/// cached share, host.quota_share's shares are multiplied by measured / cached, so that a plan
/// made again with `host` scales its quota by the share now (capped at kMaxQuotaScale, which
/// the plan's "quota scale short" note says); where that moves the quota by more than 20%, a
/// second check at the new quota refines it. A check of the same CPU, quota and share in this
/// process in the last kDriftProbeReuse is used again. A check that fails leaves
/// quota_share_check empty and quota_share_check_problem saying why (the plan notes it; the run
/// goes on at the cached share). Slice calls it once it holds its CPUs, on the first of them.
HostFacts with_checked_quota_share(HostFacts host, const Device& device,
                                   const PlanOptions& options, int cpu);

/// Plans the device as fit_to_cpus() emulates it on the usable CPUs. Throws UnsupportedError
/// when the host cannot emulate the device (a core faster than a host CPU, more memory than the
/// host has, CPUs not available, less than 0.001 cores of capacity), DeviceError for an invalid
/// device, and Error for a cpu_period_us outside kMinCpuPeriodUs .. kMaxCpuPeriodUs.
EmulationPlan plan_emulation(const Device& device, const HostFacts& host,
                             const PlanOptions& options = {});

/// "0-3,8" -> {0,1,2,3,8}, sorted and without duplicates. Throws Error on malformed text.
std::vector<int> parse_cpu_list(std::string_view text);
/// {8,0,1,2,3} -> "0-3,8": the CPUs in ascending order, runs as ranges, each CPU once.
/// Throws Error for a negative CPU.
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace edgeprof
EDGEPROF_API_END
