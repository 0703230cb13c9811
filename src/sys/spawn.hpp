// Starting a process inside a cgroup before it runs a single instruction of the workload.
#pragma once

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/slice.hpp"
#include "sys/fs.hpp"

namespace edgeprof::detail {

using Clock = std::chrono::steady_clock;

// 0 when exec may run `path` as far as its permissions go, else the errno. Asked for the
// effective user and groups, as exec checks them (access() asks for the real ones: a setuid
// caller's or a setresuid one's answer differs); where they differ from the real ones, from
// the mode bits (ACLs are not read), of `known` where the caller has stat()ed it already.
int may_execute(const std::string& path, const struct stat* known = nullptr);

// The first executable regular file named `program` in the ':'-separated directories of
// `search` (an empty entry is "."); "" when there is none, with *denied set when a file of that
// name exists but is not executable.
std::string find_in_path(const std::string& program, std::string_view search,
                         bool* denied = nullptr);

// The program exec will run: argv[0] as given when it holds a '/', else the first executable
// file of that name in PATH (the command's own PATH where it gives an environment). Throws
// SpawnError for an empty command, a NUL byte in any of its strings (arguments, environment,
// directory, stdio file paths) or a program PATH does not have.
std::string resolve_program(const Command& command);

// resolve_program(), and a program given by path (relative to the command's directory) that
// does not exist, is a directory or is not executable refused too, before a run that comes
// long after the call (compare()'s later pairs); a SpawnError naming the path and errno.
void check_runnable(const Command& command);

// In a child between fork and exec (async-signal-safe): every signal's handling back to the
// default, whatever the parent had (Python ignores SIGPIPE, for one), and nothing blocked.
void reset_signals() noexcept;

// Everything the child needs, prepared in the parent: between fork and exec only
// async-signal-safe calls are allowed, so nothing is allocated there.
class PreparedCommand {
 public:
  // Resolves argv[0] through PATH and opens the stdio files; throws SpawnError naming the file.
  explicit PreparedCommand(const Command& command);
  ~PreparedCommand();
  PreparedCommand(const PreparedCommand&) = delete;
  PreparedCommand& operator=(const PreparedCommand&) = delete;

  const std::string& path() const { return path_; }
  char* const* envp() const;

  // Sets NAME=value in the child's environment (replacing an inherited NAME).
  void set_env(const std::string& name, const std::string& value);
  // NAME's value in the child's environment as it stands; unset when it has none.
  std::optional<std::string> env(const std::string& name) const;
  // Keeps this descriptor of ours open, at the same number, in the child (every other one
  // above 2 is closed at exec).
  void keep_fd(int fd) { keep_fds_.push_back(fd); }
  // The child joins this network namespace (an fd of /proc/.../ns/net) before exec.
  void set_netns(int fd) { netns_fd_ = fd; }

 private:
  friend struct Spawner;
  std::string path_;
  std::vector<std::string> argv_storage_, env_storage_;
  std::deque<std::string> added_env_;  // set_env's strings (a deque: they never move)
  std::vector<char*> argv_, envp_;
  std::string cwd_;
  int stdio_[3] = {-1, -1, -1};  // -1 = inherit
  std::vector<int> keep_fds_;
  int netns_fd_ = -1;
  bool own_env_ = false;  // envp_ built here (else this process's environ as it is)
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd pidfd;  // -1 before Linux 5.3
  Clock::time_point released;  // when the child was about to exec
  const char* placement = "";  // "clone3" (born inside), "vfork+attach" or "fork+attach"
};

// How the child gets into the slice.
struct Placement {
  int cgroup_fd = -1;           // cgroup v2: born inside it (clone3 CLONE_INTO_CGROUP)
  std::vector<int> procs_fds;   // cgroup v1: the child writes "0" into each cgroup.procs
  std::function<void(pid_t)> attach;  // fallback: the parent places the held child
  // PR_SET_PDEATHSIG: the child is killed when the *thread* that spawned it ends (the kernel's
  // rule), so only where nothing else (a SliceGuard) kills it when this process dies.
  bool die_with_parent = false;
};

// Starts the command inside the slice, before it runs an instruction of the workload.
//
// Fast path (x86-64, Linux >= 5.3): clone3(CLONE_VM | CLONE_VFORK), as glibc's posix_spawn:
// no page tables are copied and the parent sleeps until the child has exec'd. On v2 the child
// is created inside the cgroup; on v1 it enters by writing itself into `procs_fds`.
// Fallback (other architectures, older kernels, or `fast` = false): fork; the child waits on a
// pipe until `attach(pid)` placed it, then execs.
// Returns after the exec succeeded; throws SpawnError (with errno and path) when it failed, and
// before starting anything when SIGCHLD is ignored (SIG_IGN or SA_NOCLDWAIT: the kernel would
// discard the child's exit status).
Spawned spawn_process(const PreparedCommand& command, const Placement& placement,
                      bool fast = true);

// The status reap() gives for a child whose status was lost: neither WIFEXITED nor WIFSIGNALED,
// so a result made of it has no exit code and no signal.
inline constexpr int kLostStatus = -1;

struct Exit {
  int status = 0;  // as from waitpid
  rusage usage{};
  Clock::time_point when;
};

// wait_exit()'s error when the child's status was lost (it was reaped elsewhere): the child is
// gone, so its caller has nothing of it to kill, and no other workload to end for it.
class StatusLost : public SpawnError {
 public:
  using SpawnError::SpawnError;
};

// Waits for the child's exit via its pidfd until `deadline` (nullopt = for ever), calling
// `tick` at least every `tick_every` while waiting (with neither, wait4 blocks). Returns nullopt
// when the deadline passed. Throws StatusLost (errno ECHILD) when the child was reaped before
// it could be (SIGCHLD ignored, or another waitpid(-1) in this process): its status is lost.
std::optional<Exit> wait_exit(const Spawned& child, std::optional<Clock::time_point> deadline,
                              const std::function<void()>& tick,
                              std::chrono::milliseconds tick_every);

// Blocks until the child has exited (after it was killed) and reaps it. Never throws: a child
// reaped already gives kLostStatus (its callers unwind from wait_exit()'s error, or have killed
// it at a timeout, or are a destructor).
Exit reap(const Spawned& child);

}  // namespace edgeprof::detail
