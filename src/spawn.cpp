#include "spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <thread>

#include "edgeprof/error.hpp"

extern char** environ;

namespace edgeprof::detail {

namespace {

// clone3's argument, as in <linux/sched.h> (CLONE_ARGS_SIZE_VER2), spelt out here because that
// header clashes with glibc's <sched.h>.
struct CloneArgs {
  std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
      set_tid, set_tid_size, cgroup;
};
constexpr std::uint64_t kClonePidfd = 0x1000;
constexpr std::uint64_t kCloneIntoCgroup = 0x200000000ULL;
constexpr unsigned kCloseRangeCloexec = 1u << 2;
#ifndef SYS_clone3
constexpr long SYS_clone3 = 435;
#endif
#ifndef SYS_pidfd_open
constexpr long SYS_pidfd_open = 434;
#endif
#ifndef SYS_close_range
constexpr long SYS_close_range = 436;
#endif

// Set once clone3(CLONE_INTO_CGROUP) was refused as unknown, so later spawns go straight to fork.
std::atomic<bool> clone3_unusable{false};

// What the child reports through the error pipe when it cannot get to the workload.
enum class Stage : int { release, dup2, chdir, exec };
struct ChildError {
  Stage stage;
  int err;
};

class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) {
      throw Error(fmt::format("cannot create a pipe: {} (errno {})", std::strerror(errno), errno),
                  errno);
    }
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_read() { close_fd(fds_[0]); }
  void close_write() { close_fd(fds_[1]); }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int fds_[2] = {-1, -1};
};

[[noreturn]] void child_fail(int error_fd, Stage stage) {
  ChildError e{stage, errno};
  ssize_t ignored = ::write(error_fd, &e, sizeof e);
  (void)ignored;
  ::_exit(127);
}

// Runs in the new process between fork/clone and exec: async-signal-safe calls only.
[[noreturn]] void child_main(const std::string& path, char* const* argv, char* const* envp,
                             const std::string& cwd, const int* stdio, int release_fd,
                             int error_fd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before we set PDEATHSIG
  if (release_fd >= 0) {
    char byte;
    ssize_t n;
    do {
      n = ::read(release_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) child_fail(error_fd, Stage::release);
  }
  // The workload starts with default signal handling, whatever the profiler had (Python
  // ignores SIGPIPE, for one), and with nothing blocked.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int i = 0; i < 3; ++i) {
    if (stdio[i] >= 0 && ::dup2(stdio[i], i) < 0) child_fail(error_fd, Stage::dup2);
  }
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) child_fail(error_fd, Stage::chdir);
  // Descriptors the profiler left inheritable do not leak into the workload (Linux 5.11).
  ::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec);
  ::execve(path.c_str(), argv, envp);
  child_fail(error_fd, Stage::exec);
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

int open_stdio(const Stdio& s, int index) {
  if (s.kind == Stdio::Kind::inherit) return -1;
  const bool input = index == 0;
  const std::string path = s.kind == Stdio::Kind::discard ? "/dev/null" : s.path;
  int flags = O_CLOEXEC | (input ? O_RDONLY : O_WRONLY);
  if (!input && s.kind == Stdio::Kind::file) flags |= O_CREAT | (s.append ? O_APPEND : O_TRUNC);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    int err = errno;
    static const char* const kNames[] = {"stdin", "stdout", "stderr"};
    throw SpawnError(fmt::format("cannot open {} file '{}': {} (errno {})", kNames[index], path,
                                 std::strerror(err), err),
                     err, path);
  }
  // Keep it clear of 0-2 so dup2 in the child never aliases.
  if (fd < 3) {
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    fd = high;
  }
  return fd;
}

}  // namespace

PreparedCommand::PreparedCommand(const Command& command) {
  if (command.argv.empty() || command.argv.front().empty()) {
    throw SpawnError("the command is empty: give at least the program to run", EINVAL, "");
  }
  argv_storage_ = command.argv;
  if (command.env) {
    env_storage_ = *command.env;
  } else {
    for (char** e = environ; e && *e; ++e) env_storage_.emplace_back(*e);
  }
  cwd_ = command.cwd;

  const std::string& program = command.argv.front();
  if (program.find('/') != std::string::npos) {
    path_ = program;
  } else {
    std::string search = "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& e : env_storage_) {
      if (e.rfind("PATH=", 0) == 0) search = e.substr(5);
    }
    bool denied = false;
    for (size_t start = 0; start <= search.size();) {
      size_t colon = search.find(':', start);
      std::string dir = search.substr(start, colon - start);
      std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
      if (is_executable_file(candidate)) {
        path_ = candidate;
        break;
      }
      if (::access(candidate.c_str(), F_OK) == 0) denied = true;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    if (path_.empty()) {
      int err = denied ? EACCES : ENOENT;
      throw SpawnError(fmt::format("cannot execute '{}': {} in PATH ({}) (errno {})", program,
                                   denied ? "found but not executable" : "not found", search,
                                   err),
                       err, program);
    }
  }
  try {
    stdio_[0] = open_stdio(command.stdin_stream, 0);
    stdio_[1] = open_stdio(command.stdout_stream, 1);
    stdio_[2] = open_stdio(command.stderr_stream, 2);
  } catch (...) {
    for (int fd : stdio_) {
      if (fd >= 0) ::close(fd);
    }
    throw;
  }
  for (std::string& a : argv_storage_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  for (std::string& e : env_storage_) envp_.push_back(e.data());
  envp_.push_back(nullptr);
}

PreparedCommand::~PreparedCommand() {
  for (int fd : stdio_) {
    if (fd >= 0) ::close(fd);
  }
}

struct Spawner {
  static Spawned spawn(const PreparedCommand& c, int cgroup_fd,
                       const std::function<void(pid_t)>& place) {
    Pipe errors;
    Spawned out;
    const pid_t parent = ::getpid();

    if (cgroup_fd >= 0 && !clone3_unusable.load(std::memory_order_relaxed)) {
      CloneArgs args{};
      int pidfd = -1;
      args.flags = kCloneIntoCgroup | kClonePidfd;
      args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
      args.exit_signal = SIGCHLD;
      args.cgroup = static_cast<std::uint64_t>(cgroup_fd);
      out.released = Clock::now();
      long rc = ::syscall(SYS_clone3, &args, sizeof args);
      if (rc == 0) {
        errors.close_read();
        child_main(c.path_, c.argv_.data(), c.envp_.data(), c.cwd_, c.stdio_, -1,
                   errors.write_end(), parent);
      }
      if (rc > 0) {
        out.pid = static_cast<pid_t>(rc);
        out.pidfd = pidfd;
        out.cloned_into_cgroup = true;
      } else if (errno == ENOSYS || errno == E2BIG || errno == EINVAL) {
        clone3_unusable.store(true, std::memory_order_relaxed);  // kernel older than 5.7
      } else {
        int err = errno;
        throw Error(fmt::format("cannot start a process inside the cgroup (clone3 "
                                "CLONE_INTO_CGROUP): {} (errno {})",
                                std::strerror(err), err),
                    err);
      }
    }

    if (out.pid < 0) {
      Pipe release;
      pid_t pid = ::fork();
      if (pid == 0) {
        release.close_write();
        errors.close_read();
        child_main(c.path_, c.argv_.data(), c.envp_.data(), c.cwd_, c.stdio_, release.read_end(),
                   errors.write_end(), parent);
      }
      if (pid < 0) {
        int err = errno;
        throw Error(fmt::format("cannot fork: {} (errno {})", std::strerror(err), err), err);
      }
      release.close_read();
      try {
        place(pid);
      } catch (...) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw;
      }
      out.pid = pid;
      out.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 before Linux 5.3
      out.released = Clock::now();
      ssize_t ignored = ::write(release.write_end(), "x", 1);
      (void)ignored;
    }

    // The error pipe closes on a successful exec (O_CLOEXEC) or carries why it failed.
    errors.close_write();
    ChildError failure{};
    ssize_t n;
    do {
      n = ::read(errors.read_end(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return out;

    ::waitpid(out.pid, nullptr, 0);
    if (out.pidfd >= 0) ::close(out.pidfd);
    const int err = failure.err;
    switch (failure.stage) {
      case Stage::chdir:
        throw SpawnError(fmt::format("cannot change to working directory '{}': {} (errno {})",
                                     c.cwd_, std::strerror(err), err),
                         err, c.cwd_);
      case Stage::exec:
        throw SpawnError(fmt::format("cannot execute '{}': {} (errno {})", c.path_,
                                     std::strerror(err), err),
                         err, c.path_);
      default:
        throw SpawnError(fmt::format("the child failed before executing '{}': {} (errno {})",
                                     c.path_, std::strerror(err), err),
                         err, c.path_);
    }
  }
};

Spawned spawn_process(const PreparedCommand& command, int cgroup_fd,
                      const std::function<void(pid_t)>& place) {
  return Spawner::spawn(command, cgroup_fd, place);
}

namespace {

Exit collect(const Spawned& child) {
  Exit e;
  e.when = Clock::now();
  while (::wait4(child.pid, &e.status, 0, &e.usage) < 0 && errno == EINTR) {
  }
  return e;
}

// Whether the child has exited, without reaping it.
bool has_exited(const Spawned& child) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == child.pid;
}

}  // namespace

std::optional<Exit> wait_exit(const Spawned& child, std::optional<Clock::time_point> deadline,
                              const std::function<void()>& tick,
                              std::chrono::milliseconds tick_every) {
  for (;;) {
    auto now = Clock::now();
    std::optional<Clock::duration> budget;
    if (deadline) budget = std::max(Clock::duration::zero(), *deadline - now);
    if (tick && (!budget || *budget > tick_every)) budget = tick_every;

    bool exited;
    if (child.pidfd >= 0) {
      pollfd p{child.pidfd, POLLIN, 0};
      timespec ts{};
      if (budget) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*budget).count();
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
      }
      int rc = ::ppoll(&p, 1, budget ? &ts : nullptr, nullptr);
      exited = rc > 0;
    } else {
      // No pidfd (Linux < 5.3): poll every millisecond.
      auto until = budget ? now + *budget : Clock::time_point::max();
      while (!(exited = has_exited(child)) && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (exited) return collect(child);
    if (tick) tick();
    if (deadline && Clock::now() >= *deadline) return std::nullopt;
  }
}

Exit reap(const Spawned& child) { return collect(child); }

}  // namespace edgeprof::detail
