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

namespace edgeprof {

// How this machine mounts cgroups. unified = pure cgroup v2; hybrid = v1 controllers plus a
// cgroup2 mount at /sys/fs/cgroup/unified; legacy = v1 only.
enum class CgroupMode { unified, hybrid, legacy };
// "unified", "hybrid" or "legacy".
const char* to_string(CgroupMode mode);
// For people: "unified (cgroup v2)", "hybrid (cgroup v1 controllers)", "legacy (cgroup v1)".
const char* describe(CgroupMode mode);

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

// What happened to one workload, measured from kernel counters at its end.
struct Result {
  std::optional<int> exit_code;  // set when the workload exited
  std::optional<int> signal;     // set when a signal ended it
  bool timed_out = false;        // edgeprof killed it at the timeout
  bool oom_killed = false;       // the kernel's OOM killer killed a task of the slice
  std::uint64_t oom_kills = 0;   // how many tasks the OOM killer killed in the slice

  // Measured: monotonic clock from the moment the child was released to exec until its exit
  // was observed.
  double wall_time_s = 0;
  // Measured: CPU time of every task of the slice during the run (cgroup counters).
  double cpu_user_s = 0;
  double cpu_system_s = 0;
  // Measured: the kernel's own peak counter for the slice; `peak_memory_source` names the file
  // (memory.peak on v2, memory.max_usage_in_bytes on v1). Unset when the counter is missing.
  std::optional<std::uint64_t> peak_memory_bytes;
  std::string peak_memory_source;
  // Measured: CFS bandwidth throttling during the run.
  double throttled_s = 0;
  std::uint64_t throttled_periods = 0;
  std::uint64_t periods = 0;
  // Measured by wait4() for the direct child only, as a cross-check of the slice counters.
  std::uint64_t child_max_rss_bytes = 0;

  // How the child entered the slice: "clone3" (created inside the cgroup: cgroup v2, Linux
  // >= 5.7), "vfork+attach" (wrote itself into cgroup.procs before exec: cgroup v1), or
  // "fork+attach" (held on a pipe until placed: other architectures and older kernels).
  std::string placement;

  Device device;
  EmulationPlan plan;
  CgroupMode cgroup_mode = CgroupMode::unified;
  // Limits the device asks for that were not applied (with the reason).
  std::vector<std::string> unapplied;
  std::vector<std::string> command;

  // true when the workload exited with status 0 and was neither killed nor timed out.
  bool ok() const { return exit_code && *exit_code == 0 && !timed_out && !oom_killed; }
};

// A readable multi-line summary, every figure labelled with where it came from.
std::string to_text(const Result& result);
// One JSON object with every field above.
std::string to_json(const Result& result);

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
  Child spawn(const Command& command);

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
  std::optional<std::chrono::duration<double>> timeout;
  InterruptCheck check;
};

// Runs one command in a fresh slice emulating `device` and returns its result; the slice is
// removed before returning.
Result run(const Command& command, const Device& device, const RunOptions& options = {});

}  // namespace edgeprof
