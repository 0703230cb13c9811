/// @file
/// A Slice is one emulated device instance: cgroup(s) with the device's limits, owned by RAII.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/export.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/result.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// Detects the mode once (statfs of /sys/fs/cgroup) and caches it. Throws CgroupError when the
/// cgroup v1 mounts cannot be read.
CgroupMode cgroup_mode();

/// A CPU bandwidth limit as the kernel holds it (Slice::cpu_limit()).
struct CpuLimit {
  std::optional<std::uint64_t> quota_us;  ///< CPU time per period; unset: no limit
  std::uint64_t period_us = 0;            ///< the period

  /// Both fields equal.
  bool operator==(const CpuLimit& other) const {
    return quota_us == other.quota_us && period_us == other.period_us;
  }
  /// Not operator==.
  bool operator!=(const CpuLimit& other) const { return !(*this == other); }
};

/// Where a child's standard stream goes.
struct Stdio {
  /// What the stream is connected to.
  enum class Kind {
    inherit,  ///< this process's own stream
    discard,  ///< /dev/null
    file,     ///< the file `path`
    fd        ///< a copy of this process's descriptor `fd`
  };
  Kind kind = Kind::inherit;  ///< what the stream is connected to
  std::string path;           ///< for Kind::file
  bool append = false;        ///< for Kind::file opened for writing: append rather than truncate
  int fd = -1;                ///< for Kind::fd: this process's descriptor, duplicated for the child

  /// This process's own stream (the default).
  static Stdio inherit() { return {}; }
  /// /dev/null.
  static Stdio discard() { return {Kind::discard, {}, false, -1}; }
  /// A file: read for stdin; for stdout and stderr created when missing (mode 0644) and
  /// truncated, or appended to with `append`. A path holding a NUL byte is refused (SpawnError)
  /// when the command is spawned, before any file is opened.
  static Stdio file(std::string path, bool append = false) {
    return {Kind::file, std::move(path), append, -1};
  }
  /// The child's stream becomes a copy of this process's descriptor `fd` (for example 2, to
  /// send the workload's stdout to our stderr).
  static Stdio descriptor(int fd) { return {Kind::fd, {}, false, fd}; }
};

/// A command to run. argv[0] is looked up in PATH (the child's, when `env` sets one) unless it
/// contains a '/'.
struct Command {
  std::vector<std::string> argv;  ///< the program and its arguments; not empty
  /// The child's whole environment as "NAME=value" strings; nullopt = inherit this process's.
  std::optional<std::vector<std::string>> env;
  std::string cwd;  ///< empty = this process's working directory
  Stdio stdin_stream = Stdio::inherit();   ///< where the child's stdin comes from
  Stdio stdout_stream = Stdio::inherit();  ///< where the child's stdout goes
  Stdio stderr_stream = Stdio::inherit();  ///< where the child's stderr goes
};

/// Where a Slice is created and how strictly the device is emulated.
struct SliceOptions {
  /// The cgroup to create the slice beneath, as a path inside each hierarchy
  /// ("/user.slice/foo.scope"). Empty = the EDGEPROF_CGROUP_PARENT environment variable, else
  /// this process's own cgroup.
  std::string parent;
  PlanOptions plan;  ///< choices for the emulation plan (CPU period, host CPUs)
  /// Run even when a controller is missing (for example cpuset for an unprivileged systemd
  /// user); the limits it would have applied are listed in Result::unapplied.
  bool allow_missing_controllers = false;
};

class Slice;

/// How a workload is started and observed.
struct SpawnOptions {
  /// Sampling interval, 1 ms .. 60 s (kDefaultSampleIntervalNs: 10 ms); 0 = no sampling (the
  /// exact end-of-run figures are still reported).
  std::chrono::nanoseconds sample_interval{kDefaultSampleIntervalNs};
  /// Run the workload in a network namespace of its own with only loopback (an offline device);
  /// its network traffic is then counted exactly. Needs CAP_SYS_ADMIN.
  bool isolate_network = false;
};

/// Called at least every 50 ms while a workload runs; it may throw to abort the run, in which
/// case the slice's processes are killed before the exception propagates.
using InterruptCheck = std::function<void()>;

/// A workload started in a Slice. Must not outlive the Slice. Move-only. Destroying a Child that
/// was not waited for kills and reaps it.
class Child {
 public:
  /// Takes over the workload of another Child; the moved-from one's pid() and wait() throw
  /// Error.
  Child(Child&&) noexcept;
  /// Takes over the workload of another Child.
  Child& operator=(Child&&) noexcept;
  /// Not copyable: a Child owns its workload.
  Child(const Child&) = delete;
  /// Not copyable: a Child owns its workload.
  Child& operator=(const Child&) = delete;
  /// Kills and reaps the workload when it was not waited for.
  ~Child();

  /// The process id of the workload (the direct child).
  pid_t pid() const;

  /// Waits for the workload to exit. With a timeout, kills everything in the slice, and the
  /// workload itself if it moved out of the slice, when it passes and reports timed_out. Waiting twice returns the same result. The timeout counts
  /// from the workload's release to exec (infinite or a century or more: none); zero, a
  /// negative one or NaN throws Error and leaves the workload running. `check` is called while
  /// waiting (InterruptCheck). Throws SpawnError when the workload's exit status was lost
  /// (reaped by another waitpid(-1) in this process, or SIGCHLD ignored since the spawn); the
  /// slice's other workloads run on, and a later wait() gives a result with neither exit code
  /// nor signal. Threads waiting on one Child take turns: the first makes the
  /// result, the others get it once it is made (their own timeouts wait for the first's).
  Result wait(std::optional<std::chrono::duration<double>> timeout = std::nullopt,
              const InterruptCheck& check = {}) &;
  /// The same for a Child that is going away (`slice.spawn(command).wait()`,
  /// `std::move(child).wait()`): the result is moved out rather than copied, and a later wait()
  /// on the same Child throws Error.
  Result wait(std::optional<std::chrono::duration<double>> timeout = std::nullopt,
              const InterruptCheck& check = {}) &&;

 private:
  friend class Slice;
  struct State;
  explicit Child(std::unique_ptr<State> state);
  State& state() const;  // Error for a moved-from Child
  std::unique_ptr<State> state_;
};

/// Creates the cgroup(s) of one emulated device under the parent, applies the limits, and on
/// destruction kills everything in them and removes them (also during exception unwinding).
/// Not thread-safe: use one Slice per thread.
class Slice {
 public:
  /// Plans the emulation (plan_emulation()), creates the slice under the parent and applies the
  /// limits; slices left behind by processes that died are removed on the way. Throws as
  /// plan_emulation() does, UnsupportedError when a controller is missing (unless
  /// allow_missing_controllers), and PermissionDenied or CgroupError when the cgroups cannot be
  /// created or written.
  explicit Slice(Device device, SliceOptions options = {});
  /// Takes over the cgroups of another Slice; the moved-from one is closed() and its other
  /// members but close() throw Error.
  Slice(Slice&&) noexcept;
  /// Kills and removes this slice's cgroups, then takes over those of another Slice.
  Slice& operator=(Slice&&) noexcept;
  /// Not copyable: a Slice owns its cgroups.
  Slice(const Slice&) = delete;
  /// Not copyable: a Slice owns its cgroups.
  Slice& operator=(const Slice&) = delete;
  /// Kills everything in the slice and removes its cgroups; problems are printed to stderr,
  /// never thrown.
  ~Slice();

  /// Starts the command inside the slice: the child is in the cgroup before it executes its
  /// first instruction. Throws SpawnError when the command cannot be executed (or holds a NUL
  /// byte), when SIGCHLD is ignored in this process (SIG_IGN or SA_NOCLDWAIT: the workload's
  /// exit status would be lost), or when no process could be made (EAGAIN: a process limit
  /// reached, the device's pids_max where the child is born in the slice, ulimit -u, the
  /// host's), Error when the slice is closed or the sampling interval is out
  /// of range, and PermissionDenied when isolate_network lacks CAP_SYS_ADMIN.
  Child spawn(const Command& command, const SpawnOptions& options = {});

  /// Kills every process in the slice (the slice itself stays). Throws Error when the slice is
  /// closed.
  void kill();

  /// Kills everything in the slice and removes its cgroups now rather than at destruction (for
  /// languages without deterministic destruction). Idempotent; spawn() afterwards throws.
  void close() noexcept;
  /// Whether close() was called (or the slice was moved from).
  bool closed() const noexcept;

  /// The device emulated.
  const Device& device() const;
  /// The cgroup settings applied, with notes on where they differ from the device.
  const EmulationPlan& plan() const;
  /// How this host mounts cgroups.
  CgroupMode mode() const;
  /// Limits of the device that were not applied, each with the reason.
  const std::vector<std::string>& unapplied() const;
  /// The CPU bandwidth limit the kernel holds for the slice now, read from its files. After the
  /// constructor it is the plan's quota and period (EmulationPlan::cpu_quota_us and
  /// cpu_period_us), or no limit where the plan's quota is at least the whole of the CPUs its
  /// cpuset holds (the kernel would still throttle at exactly that quota, so none is written).
  /// It changes while a workload runs when a speed schedule steps, a followed runtime's speed
  /// applies or per-core scaling (PlanOptions::core_scaling) follows the busy threads, and reads
  /// no limit while kill() or a timeout's kill lifts it for the killed to exit. Under per-core
  /// emulation it is the core groups' quotas summed over their common period. Throws Error
  /// when the slice is closed, CgroupError when the files cannot be read or disagree.
  CpuLimit cpu_limit() const;
  /// The slice's cgroup directories (one per v1 hierarchy, one on v2); empty once closed.
  /// Throws Error for a moved-from Slice.
  std::vector<std::string> paths() const;

  /// The slice's state, defined in the library; public only so that a Child can share it.
  struct Impl;

 private:
  Impl& impl() const;  // Error for a moved-from Slice
  std::shared_ptr<Impl> impl_;
};

/// How run() and run_repeated() create each slice, start the workload and wait for it.
struct RunOptions {
  SliceOptions slice;  ///< where the slice is created
  SpawnOptions spawn;  ///< how the workload is started and observed
  /// Kill the workload when it runs longer than this (from its release to exec); unset, an
  /// infinite one or one of a century or more = wait for ever. run() throws Error for zero, a
  /// negative one or NaN before it creates anything.
  std::optional<std::chrono::duration<double>> timeout;
  InterruptCheck check;  ///< called while waiting
};

/// Runs one command in a fresh slice emulating `device` and returns its result; the slice is
/// removed before returning. Throws as the Slice constructor, Slice::spawn() and Child::wait()
/// do (a lost exit status: SpawnError, the slice removed all the same).
Result run(const Command& command, const Device& device, const RunOptions& options = {});

/// Called after each run of a repeated measurement: (index from 0, total, warm-up?, result).
using RunCallback = std::function<void(int, int, bool, const Result&)>;

/// Runs the command `warmup` times (reported apart, not counted) and then `repeat` times, each in
/// a fresh slice, and describes every figure over the counted runs. Runs go on after a failed
/// one (its result is kept and all_ok() says so). Once a run's activation count has set its
/// speed (PlanOptions::count_activations), the later runs start at that speed and count
/// nothing (their plan's notes say from which run). Throws Error when repeat < 1, warmup < 0 or
/// the two make more runs than an int counts, before any run; otherwise throws as run() does.
RepeatedResult run_repeated(const Command& command, const Device& device, int repeat,
                            int warmup = 0, const RunOptions& options = {},
                            const RunCallback& progress = {});

}  // namespace edgeprof
EDGEPROF_API_END
