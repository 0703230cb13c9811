#include "cgroup/guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "cgroup/files.hpp"
#include "edgeprof/error.hpp"

namespace edgeprof::detail {

namespace {

// $1 limit file, $2 its no-limit text, $3 kill file, $4 freeze file, $5 frozen, $6 thawed,
// $7 the process list; then the slice's directories. POSIX sh (dash): read, echo, kill and test are built in; cat,
// sleep and rmdir are coreutils'.
constexpr const char* kScript = R"sh(trap '' INT TERM HUP QUIT TSTP TTIN TTOU PIPE USR1 USR2
cd /
# Until the profiler is gone: end of file (a byte means go without touching anything).
IFS= read -r line && exit 0
# Gone means this shell gets another parent (a thread's end leaves it the same process); the
# kernel closes a dying process's files before it hands its children on, so wait for that.
# Still the same after 2 s: the profiler lives and closed the pipe itself.
n=0
while :; do
  read -r _ _ _ parent _ < /proc/$$/stat
  [ "$parent" != "$PPID" ] && break
  n=$((n + 1))
  [ $n -ge 200 ] && exit 0
  sleep 0.01
done
lift=$1 unlimited=$2 killf=$3 freeze=$4 frozen=$5 thawed=$6 procs=$7
shift 7
for d in "$@"; do
  for f in "$d/$lift" "$d"/*/"$lift"; do
    if [ -n "$lift" ] && [ -f "$f" ]; then echo "$unlimited" > "$f"; fi
  done
  if [ -n "$killf" ] && [ -f "$d/$killf" ]; then echo 1 > "$d/$killf"; fi
done 2>/dev/null
n=0
while [ $n -lt 1000 ]; do
  pids=
  for d in "$@"; do pids="$pids $(cat "$d/$procs" "$d"/*/"$procs" 2>/dev/null)"; done
  case $pids in *[0-9]*) ;; *) break ;; esac
  if [ $n -lt 3 ] && [ -n "$freeze" ]; then
    for d in "$@"; do if [ -f "$d/$freeze" ]; then echo "$frozen" > "$d/$freeze"; fi; done 2>/dev/null
  fi
  kill -9 $pids 2>/dev/null
  if [ -n "$freeze" ]; then
    for d in "$@"; do if [ -f "$d/$freeze" ]; then echo "$thawed" > "$d/$freeze"; fi; done 2>/dev/null
  fi
  sleep 0.01
  n=$((n + 1))
done
n=0
while [ $n -lt 200 ]; do
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
  // Both above 2: a process started with stdin closed got the pipe as fd 0, and the guard,
  // its input closed at exec, took the live slice for one left behind.
  UniqueFd read_end(above_stdio(fds[0]));
  fd_ = UniqueFd(above_stdio(fds[1]));
  if (read_end.get() < 0 || fd_.get() < 0) {
    const int err = errno;
    fd_.reset();
    throw CgroupError(fmt::format("cannot start the slice's guard: fcntl(F_DUPFD_CLOEXEC): {} "
                                  "(errno {})",
                                  std::strerror(err), err));
  }

  std::vector<std::string> args = {"sh", "-c", kScript, "edgeprof-guard",
                                   plan.limit_file, plan.no_limit, plan.kill_file,
                                   plan.freeze_file, plan.frozen, plan.thawed, files::kProcs};
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
}

SliceGuard::SliceGuard(SliceGuard&& other) noexcept
    : pid_(other.pid_), fd_(std::move(other.fd_)) {
  other.pid_ = -1;
}

SliceGuard& SliceGuard::operator=(SliceGuard&& other) noexcept {
  if (this != &other) {
    dismiss();
    pid_ = other.pid_;
    fd_ = std::move(other.fd_);
    other.pid_ = -1;
  }
  return *this;
}

void SliceGuard::dismiss() noexcept {
  if (pid_ > 0) {
    // Ours, blocked in read(): nothing of its script has run yet.
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  fd_.reset();
}

}  // namespace edgeprof::detail
