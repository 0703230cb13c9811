// A Slice is one emulated device instance: cgroup(s) with the device's limits, owned by RAII.
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
#include "edgeprof/plan.hpp"
#include "edgeprof/result.hpp"

namespace edgeprof {

// Detects the mode once (statfs of /sys/fs/cgroup) and caches it.
CgroupMode cgroup_mode();

// Where a child's standard stream goes.
struct Stdio {
  enum class Kind { inherit, discard, file, fd };
  Kind kind = Kind::inherit;
  std::string path;     // for Kind::file
  bool append = false;  // for Kind::file opened for writing
  int fd = -1;          // for Kind::fd: a descriptor of this process, duplicated for the child

  static Stdio inherit() { return {}; }
  static Stdio discard() { return {Kind::discard, {}, false, -1}; }
  static Stdio file(std::string path, bool append = false) {
    return {Kind::file, std::move(path), append, -1};
  }
  // The child's stream becomes a copy of this process's descriptor `fd` (for example 2, to
  // send the workload's stdout to our stderr).
  static Stdio descriptor(int fd) { return {Kind::fd, {}, false, fd}; }
};

// A command to run. argv[0] is looked up in PATH (the child's, when `env` sets one) unless it
// contains a '/'.
struct Command {
  std::vector<std::string> argv;
  // The child's whole environment as "NAME=value" strings; nullopt = inherit this process's.
  std::optional<std::vector<std::string>> env;
  std::string cwd;  // empty = this process's working directory
  Stdio stdin_stream = Stdio::inherit();
  Stdio stdout_stream = Stdio::inherit();
  Stdio stderr_stream = Stdio::inherit();
};

struct SliceOptions {
  // The cgroup to create the slice beneath, as a path inside each hierarchy
  // ("/user.slice/foo.scope"). Empty = the EDGEPROF_CGROUP_PARENT environment variable, else
  // this process's own cgroup.
  std::string parent;
  PlanOptions plan;
  // Run even when a controller is missing (for example cpuset for an unprivileged systemd
  // user); the limits it would have applied are listed in Result::unapplied.
  bool allow_missing_controllers = false;
};

class Slice;

// How a workload is started and observed.
struct SpawnOptions {
  // Sampling interval, 1 ms .. 60 s (kDefaultSampleIntervalNs: 10 ms); 0 = no sampling (the
  // exact end-of-run figures are still reported).
  std::chrono::nanoseconds sample_interval{kDefaultSampleIntervalNs};
  // Run the workload in a network namespace of its own with only loopback (an offline device);
  // its network traffic is then counted exactly. Needs CAP_SYS_ADMIN.
  bool isolate_network = false;
};

// Called at least every 50 ms while a workload runs; it may throw to abort the run, in which
// case the slice's processes are killed before the exception propagates.
using InterruptCheck = std::function<void()>;

// A workload started in a Slice. Must not outlive the Slice. Move-only. Destroying a Child that
// was not waited for kills and reaps it.
class Child {
 public:
  Child(Child&&) noexcept;
  Child& operator=(Child&&) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const;

  // Waits for the workload to exit. With a timeout, kills everything in the slice when it
  // passes and reports timed_out. Waiting twice returns the same result.
  Result wait(std::optional<std::chrono::duration<double>> timeout = std::nullopt,
              const InterruptCheck& check = {});

 private:
  friend class Slice;

// How a workload is started and observed.
struct SpawnOptions {
  // Sampling interval, 1 ms .. 60 s (kDefaultSampleIntervalNs: 10 ms); 0 = no sampling (the
  // exact end-of-run figures are still reported).
  std::chrono::nanoseconds sample_interval{kDefaultSampleIntervalNs};
  // Run the workload in a network namespace of its own with only loopback (an offline device);
  // its network traffic is then counted exactly. Needs CAP_SYS_ADMIN.
  bool isolate_network = false;
};
  struct State;
  explicit Child(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Creates the cgroup(s) of one emulated device under the parent, applies the limits, and on
// destruction kills everything in them and removes them (also during exception unwinding).
// Not thread-safe: use one Slice per thread.
class Slice {
 public:
  explicit Slice(Device device, SliceOptions options = {});
  Slice(Slice&&) noexcept;
  Slice& operator=(Slice&&) noexcept;
  Slice(const Slice&) = delete;
  Slice& operator=(const Slice&) = delete;
  ~Slice();

  // Starts the command inside the slice: the child is in the cgroup before it executes its
  // first instruction. Throws SpawnError when the command cannot be executed.
  Child spawn(const Command& command, const SpawnOptions& options = {});

  // Kills every process in the slice (the slice itself stays).
  void kill();

  // Kills everything in the slice and removes its cgroups now rather than at destruction (for
  // languages without deterministic destruction). Idempotent; spawn() afterwards throws.
  void close() noexcept;
  bool closed() const noexcept;

  const Device& device() const;
  const EmulationPlan& plan() const;
  CgroupMode mode() const;
  const std::vector<std::string>& unapplied() const;
  // The slice's cgroup directories (one per v1 hierarchy, one on v2).
  std::vector<std::string> paths() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

struct RunOptions {
  SliceOptions slice;
  SpawnOptions spawn;
  std::optional<std::chrono::duration<double>> timeout;
  InterruptCheck check;
};

// Runs one command in a fresh slice emulating `device` and returns its result; the slice is
// removed before returning.
Result run(const Command& command, const Device& device, const RunOptions& options = {});

// Called after each run of a repeated measurement: (index from 0, total, warm-up?, result).
using RunCallback = std::function<void(int, int, bool, const Result&)>;

// Runs the command `warmup` times (reported apart, not counted) and then `repeat` times, each in
// a fresh slice, and describes every figure over the counted runs. Runs go on after a failed
// one (its result is kept and all_ok() says so). Throws Error when repeat < 1 or warmup < 0.
RepeatedResult run_repeated(const Command& command, const Device& device, int repeat,
                            int warmup = 0, const RunOptions& options = {},
                            const RunCallback& progress = {});

}  // namespace edgeprof
