#include "cgroup/guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "sys/clone3.hpp"
#include "edgeprof/error.hpp"

namespace edgeprof::detail {

namespace {

constexpr int kPidfdIdType = 3;  // P_PIDFD (Linux 5.4), which glibc 2.36's headers lack

// $1 the profiler's pid (as the mounted /proc numbers it), $2 limit file, $3 its no-limit text,
// $4 kill file, $5 freeze file, $6 frozen, $7 thawed, $8 the process list, $9 weight file, ${10}
// its highest weight; then the slice's directories. POSIX sh (dash): read, echo, kill and test
// are built in; cat, sleep and rmdir are coreutils'.
constexpr const char* kScript = R"sh(trap '' INT TERM HUP QUIT TSTP TTIN TTOU PIPE USR1 USR2
cd /
# Until the profiler is gone: end of file (a whole line would mean go without touching anything).
IFS= read -r line && exit 0
# Gone means this shell has another parent than the profiler (a thread's end leaves it the
# same process); the kernel closes a dying process's files before it hands its children on,
# so wait for that. Still the profiler's after 2 s: it lives and closed the pipe itself.
# /proc/self, not /proc/$$: a /proc of another pid namespace numbers this shell otherwise.
n=0
while :; do
  read -r _ _ _ parent _ < /proc/self/stat
  [ "$parent" != "$1" ] && break
  n=$((n + 1))
  [ $n -ge 200 ] && exit 0
  sleep 0.01
done
lift=$2 unlimited=$3 killf=$4 freeze=$5 frozen=$6 thawed=$7 procs=$8 weight=$9 highest=${10}
shift 10
for d in "$@"; do
  for f in "$d/$lift" "$d"/*/"$lift"; do
    if [ -n "$lift" ] && [ -f "$f" ]; then echo "$unlimited" > "$f"; fi
  done
  for f in "$d/$weight" "$d"/*/"$weight"; do
    if [ -n "$weight" ] && [ -f "$f" ]; then echo "$highest" > "$f"; fi
  done
  if [ -n "$killf" ] && [ -f "$d/$killf" ]; then echo 1 > "$d/$killf"; fi
done 2>/dev/null
# Kill what is listed, then remove what is empty, core groups first; again until all is gone
# (a process may still join between a kill and a removal), for about 10 s.
n=0
while [ $n -lt 1000 ]; do
  pids=
  for d in "$@"; do
    # A 0 is a process of another pid namespace: kill would take it for this process group.
    for p in $(cat "$d/$procs" "$d"/*/"$procs" 2>/dev/null); do
      [ "$p" -gt 0 ] 2>/dev/null && pids="$pids $p"
    done
  done
  case $pids in
    *[0-9]*)
      if [ $n -lt 3 ] && [ -n "$freeze" ]; then
        for d in "$@"; do if [ -f "$d/$freeze" ]; then echo "$frozen" > "$d/$freeze"; fi; done 2>/dev/null
      fi
      kill -9 $pids 2>/dev/null
      if [ -n "$freeze" ]; then
        for d in "$@"; do if [ -f "$d/$freeze" ]; then echo "$thawed" > "$d/$freeze"; fi; done 2>/dev/null
      fi ;;
  esac
  left=
  for d in "$@"; do
    for s in "$d"/*/; do if [ -d "$s" ]; then rmdir "$s" 2>/dev/null || left=1; fi; done
    if [ -d "$d" ]; then rmdir "$d" 2>/dev/null || left=1; fi
  done
  [ -z "$left" ] && exit 0
  sleep 0.01
  n=$((n + 1))
done
exit 1
)sh";

// posix_spawn's objects, destroyed on every path.
struct SpawnObjects {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnObjects() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnObjects() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

// `fd` moved to a number above 2 (close-on-exec), or -1 with errno.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int err = errno;
  ::close(fd);
  errno = err;
  return moved;
}

}  // namespace

const char* guard_script() { return kScript; }

SliceGuard::SliceGuard(const GuardPlan& plan) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    throw CgroupError(fmt::format("cannot start the slice's guard: pipe2: {} (errno {})",
                                  std::strerror(err), err));
  }
  // Both above 2: in a process started with stdin and stdout closed the write end became
  // fd 1, and the first line the profiler printed dismissed the guard.
  UniqueFd read_end(above_stdio(fds[0]));
  fd_ = UniqueFd(above_stdio(fds[1]));
  if (read_end.get() < 0 || fd_.get() < 0) {
    const int err = errno;
    fd_.reset();
    throw CgroupError(fmt::format("cannot start the slice's guard: fcntl(F_DUPFD_CLOEXEC): {} "
                                  "(errno {})",
                                  std::strerror(err), err));
  }

  // The profiler's pid as the guard reads its parent's: in /proc's numbering, which in a pid
  // namespace without its own /proc is not getpid()'s.
  const pid_t profiler = proc_self_pid(Fs()).value_or(::getpid());
  std::vector<std::string> args = {"sh", "-c", kScript, "edgeprof-guard",
                                   std::to_string(profiler), plan.limit_file, plan.no_limit, plan.kill_file,
                                   plan.freeze_file, plan.frozen, plan.thawed, files::kProcs,
                                   plan.weight_file, plan.highest_weight};
  args.insert(args.end(), plan.dirs.begin(), plan.dirs.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};

  SpawnObjects o;
  // Input: the pipe; output to /dev/null, so that it holds none of the caller's pipes; nothing
  // else of ours (closefrom: glibc 2.34).
  posix_spawn_file_actions_adddup2(&o.actions, read_end.get(), 0);
  posix_spawn_file_actions_addopen(&o.actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&o.actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&o.actions, 3);
  // Its own process group (a terminal's Ctrl-C is the profiler's to handle), default signal
  // actions (the script ignores what it must) and nothing blocked.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setpgroup(&o.attr, 0);
  posix_spawnattr_setsigmask(&o.attr, &none);
  posix_spawnattr_setsigdefault(&o.attr, &all);
  posix_spawnattr_setflags(&o.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  if (int err = ::posix_spawn(&pid, "/bin/sh", &o.actions, &o.attr, argv.data(), envp)) {
    fd_.reset();
    throw CgroupError(fmt::format(
        "cannot start the slice's guard (/bin/sh, which removes the slice if this process is "
        "killed): {} (errno {})",
        std::strerror(err), err));
  }
  pid_ = pid;
  owner_ = ::getpid();
  // Signalled and waited for through a pidfd (Linux 5.3): the pid alone could name another
  // process once the guard was reaped by someone else (a caller's waitpid(-1)).
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  pidfd_ = UniqueFd(pidfd >= 0 ? above_stdio(pidfd) : -1);
}

SliceGuard::SliceGuard(SliceGuard&& other) noexcept
    : pid_(other.pid_), owner_(other.owner_), fd_(std::move(other.fd_)),
      pidfd_(std::move(other.pidfd_)) {
  other.pid_ = -1;
}

SliceGuard& SliceGuard::operator=(SliceGuard&& other) noexcept {
  if (this != &other) {
    dismiss();
    pid_ = other.pid_;
    owner_ = other.owner_;
    fd_ = std::move(other.fd_);
    pidfd_ = std::move(other.pidfd_);
    other.pid_ = -1;
  }
  return *this;
}

void SliceGuard::detach() noexcept {
  if (pid_ > 0 && ::getpid() == owner_) {
    (void)fd_.release();  // open until this process ends: then the guard removes the slice
  }
  pid_ = -1;
  pidfd_.reset();
  fd_.reset();
}

void SliceGuard::dismiss() noexcept {
  // In a process forked from the owner, the guard is the owner's: only our copy of the pipe
  // goes.
  if (pid_ > 0 && ::getpid() == owner_) {
    // Ours, blocked in read(): nothing of its script has run yet.
    if (pidfd_.get() >= 0) {
      ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
      siginfo_t info;
      while (::waitid(static_cast<idtype_t>(kPidfdIdType), static_cast<id_t>(pidfd_.get()),
                      &info, WEXITED) < 0 &&
             errno == EINTR) {
      }
    } else {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  pid_ = -1;
  pidfd_.reset();
  fd_.reset();
}

}  // namespace edgeprof::detail
