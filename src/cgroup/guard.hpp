// A slice's guard: a small process that removes the slice when the profiler that made it dies
// without removing it (SIGKILL, a crash, the OOM killer), and the workload with it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sys/fs.hpp"

namespace edgeprof::detail {

// What a guard does to a slice left behind, in the backend's file names (files::); every
// directory absolute.
struct GuardPlan {
  std::vector<std::string> dirs;  // the slice's directories (v1: one per hierarchy)
  std::string limit_file;         // its CPU limit, in each directory and its core groups
  std::string no_limit;           // the text that lifts it ("-1", "max")
  std::string weight_file;        // its CPU weight, likewise (CpuLimitLift says why)
  std::string highest_weight;     // the text that raises it to the highest
  std::string kill_file;          // kills the whole tree at once (v2 cgroup.kill), or ""
  std::string freeze_file;        // stops forks between kills, or ""
  std::string frozen, thawed;     // its texts
};

// Starts `/bin/sh` running a fixed script with the read end of a pipe as its input; only this
// process holds the write end (close-on-exec: no workload inherits it). While this process
// lives, the guard sleeps in read(). When this process is gone, by whatever death, the read
// returns end of file and the guard lifts the slice's CPU limit, kills every process in it (the
// workload's grandchildren too), and removes its directories, core groups first.
//
// A process the profiler forked without exec keeps the write end, and the guard waits for it
// as well. The guard ignores terminal and termination signals and leaves the terminal's
// process group, so Ctrl-C and SIGTERM reach the profiler, which removes the slice itself.
class SliceGuard {
 public:
  SliceGuard() = default;
  // Throws CgroupError (with errno) when the guard cannot be started.
  explicit SliceGuard(const GuardPlan& plan);
  ~SliceGuard() { dismiss(); }
  SliceGuard(SliceGuard&& other) noexcept;
  SliceGuard& operator=(SliceGuard&& other) noexcept;
  SliceGuard(const SliceGuard&) = delete;
  SliceGuard& operator=(const SliceGuard&) = delete;

  // The slice was removed by this process (or is about to be): ends the guard (SIGKILL, then
  // reaped) without its touching anything.
  void dismiss() noexcept;
  // The slice could not be removed (a process survived, a group beneath it): the guard is left
  // to remove it when this process ends, its pipe's write end kept open, on purpose, until
  // then (dismissed, nothing removed the slice until a later slice beneath the same parent).
  void detach() noexcept;
  pid_t pid() const { return pid_; }
  explicit operator bool() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that started it
  UniqueFd fd_;       // the pipe's write end
  UniqueFd pidfd_;    // the guard's, -1 before Linux 5.3
};

// The guard's script, for tests and docs.
const char* guard_script();

}  // namespace edgeprof::detail
