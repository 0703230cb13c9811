#include "sys/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <variant>

#include "sys/clone3.hpp"
#include "edgeprof/error.hpp"

extern char** environ;

namespace edgeprof::detail {

void reset_signals() noexcept {
  // Without CLONE_SIGHAND the handler table is the child's own copy.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

namespace {


// Set once clone3 was refused as unknown, so later spawns go straight to fork.
std::atomic<bool> clone3_unusable{false};

// Where the child reports why it could not get to the workload.
enum class Stage : int { none = -1, release, attach, dup2, chdir, netns, keep_fd, exec };
struct ChildError {
  Stage stage;
  int err;
};

// Everything the child reads, and (with CLONE_VM, sharing our memory) writes back.
struct ChildContext {
  const std::string* path;
  char* const* argv;
  char* const* envp;
  const std::string* cwd;
  const int* stdio;
  const int* procs_fds;  // cgroup.procs to write "0" into (v1 fast path)
  size_t nprocs;
  const int* keep_fds;  // stay open across exec (the phase channel)
  size_t nkeep;
  int netns_fd;  // setns into it before exec; -1 = stay in ours
  int release_fd;  // fork path: wait for one byte before going on
  int error_fd;    // fork path: report failures here; -1 = into `failure` (shared memory)
  pid_t parent;
  bool die_with_parent;
  volatile Stage failed_stage = Stage::none;  // written by a CLONE_VM child
  volatile int failed_errno = 0;
  timespec exec_time{};  // the child's clock just before execve
};

[[noreturn]] void child_fail(ChildContext& c, Stage stage) {
  ChildError e{stage, errno};
  if (c.error_fd >= 0) {
    ssize_t ignored = ::write(c.error_fd, &e, sizeof e);
    (void)ignored;
  } else {
    c.failed_errno = e.err;
    c.failed_stage = stage;
  }
  ::_exit(127);
}

// Runs in the new process between clone/fork and exec. Async-signal-safe calls only, and with
// CLONE_VM nothing of the parent's may change but `ChildContext`: no allocation, no stdio.
int child_main(void* arg) {
  ChildContext& c = *static_cast<ChildContext*>(arg);
  if (c.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != c.parent) ::_exit(127);  // the parent died before we set PDEATHSIG
  }
  if (c.release_fd >= 0) {
    char byte;
    ssize_t n;
    do {
      n = ::read(c.release_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n == 0) errno = EPIPE;  // closed by the parent (a stale errno said "Success"); fork path: own memory
    if (n != 1) child_fail(c, Stage::release);
  }
  // "0" is the writer: the child moves itself, with all its threads, into each hierarchy.
  for (size_t i = 0; i < c.nprocs; ++i) {
    if (::write(c.procs_fds[i], "0", 1) != 1) child_fail(c, Stage::attach);
  }
  // The workload starts with default signal handling, whatever the profiler had (Python
  // ignores SIGPIPE, for one), and with nothing blocked. Without CLONE_SIGHAND the handler
  // table is the child's own copy.
  reset_signals();
  for (int i = 0; i < 3; ++i) {
    if (c.stdio[i] >= 0 && ::dup2(c.stdio[i], i) < 0) child_fail(c, Stage::dup2);
  }
  if (!c.cwd->empty() && ::chdir(c.cwd->c_str()) != 0) child_fail(c, Stage::chdir);
  if (c.netns_fd >= 0 && ::setns(c.netns_fd, CLONE_NEWNET) != 0) child_fail(c, Stage::netns);
  // Descriptors the profiler left inheritable do not leak into the workload (Linux 5.11).
  ::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec);
  for (size_t i = 0; i < c.nkeep; ++i) {
    if (::fcntl(c.keep_fds[i], F_SETFD, 0) != 0) child_fail(c, Stage::keep_fd);
  }
  ::clock_gettime(CLOCK_MONOTONIC, &c.exec_time);
  ::execve(c.path->c_str(), c.argv, c.envp);
  child_fail(c, Stage::exec);
}


// The child's stack for the CLONE_VM path: one per spawning thread, kept for the next spawn.
struct Stack {
  char* base;
  size_t size;
};
Stack child_stack() {
  constexpr size_t kSize = 256 * 1024;  // glibc's posix_spawn makes do with far less
  thread_local std::unique_ptr<char[]> memory(new char[kSize + 64]);
  auto base = (reinterpret_cast<std::uintptr_t>(memory.get()) + 63) & ~std::uintptr_t{63};
  return {reinterpret_cast<char*>(base), kSize};
}

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

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && may_execute(path, &st) == 0;
}

const char* const kStreamNames[] = {"stdin", "stdout", "stderr"};

int open_stdio(const Stdio& s, int index) {
  if (s.kind == Stdio::Kind::inherit) return -1;
  if (s.kind == Stdio::Kind::fd) {
    // Our own copy, clear of 0-2 so dup2 in the child never aliases; EBADF names a bad fd.
    int fd = ::fcntl(s.fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
      int err = errno;
      throw SpawnError(fmt::format("cannot use descriptor {} as {}: {} (errno {})", s.fd,
                                   kStreamNames[index], std::strerror(err), err),
                       err, "");
    }
    return fd;
  }
  const bool input = index == 0;
  const std::string path = s.kind == Stdio::Kind::discard ? "/dev/null" : s.path;
  int flags = O_CLOEXEC | (input ? O_RDONLY : O_WRONLY);
  if (!input && s.kind == Stdio::Kind::file) flags |= O_CREAT | (s.append ? O_APPEND : O_TRUNC);
  // Not retried on EINTR: a FIFO's open waits for its other end, and Ctrl-C (Python's handler,
  // without SA_RESTART) must end that wait.
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    int err = errno;
    throw SpawnError(fmt::format("cannot open {} file '{}': {} (errno {})", kStreamNames[index],
                                 path, std::strerror(err), err),
                     err, path);
  }
  // Keep it clear of 0-2 so dup2 in the child never aliases.
  if (fd < 3) {
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    const int err = errno;
    ::close(fd);
    // -1 is "inherit": the workload's output went to ours, not to the file, silently.
    if (high < 0) {
      throw SpawnError(fmt::format("cannot use {} file '{}': no descriptor above 2 is free: {} "
                                   "(errno {})",
                                   kStreamNames[index], path, std::strerror(err), err),
                       err, path);
    }
    fd = high;
  }
  return fd;
}

}  // namespace

int may_execute(const std::string& path, const struct stat* known) {
  if (::getuid() == ::geteuid() && ::getgid() == ::getegid()) {
    return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
  }
  // exec's rule for the effective ids, from the mode bits (ACLs aside): faccessat's AT_EACCESS
  // needs faccessat2 (Linux 5.8), without which glibc asks for the real ids all the same. The
  // stat itself searches the path as the effective user.
  struct stat st {};
  if (known) {
    st = *known;
  } else if (::stat(path.c_str(), &st) != 0) {
    return errno;
  }
  const uid_t euid = ::geteuid();
  if (euid == 0) return st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH) ? 0 : EACCES;
  mode_t bit = S_IXOTH;
  if (st.st_uid == euid) {
    bit = S_IXUSR;
  } else {
    bool member = st.st_gid == ::getegid();
    const int n = ::getgroups(0, nullptr);
    if (!member && n > 0) {
      std::vector<gid_t> groups(static_cast<std::size_t>(n));
      const int got = ::getgroups(n, groups.data());
      member = got > 0 && std::find(groups.begin(), groups.begin() + got, st.st_gid) !=
                              groups.begin() + got;
    }
    if (member) bit = S_IXGRP;
  }
  return st.st_mode & bit ? 0 : EACCES;
}

std::string find_in_path(const std::string& program, std::string_view search, bool* denied) {
  for (size_t start = 0; start <= search.size();) {
    const size_t colon = search.find(':', start);
    const std::string dir(search.substr(start, colon - start));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    if (denied && ::access(candidate.c_str(), F_OK) == 0) *denied = true;
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return {};
}

std::string resolve_program(const Command& command) {
  if (command.argv.empty() || command.argv.front().empty()) {
    throw SpawnError("the command is empty: give at least the program to run", EINVAL, "");
  }
  // The kernel takes C strings, which end at the first NUL: an argument holding one would run
  // as the text before it ("/bin/tr\0ue" as /bin/tr), silently; a stdio file's path would open
  // the file the text before it names ("/tmp/out\0.txt" as /tmp/out).
  const auto refuse_nul = [](const std::string& s, const std::string& what,
                             const char* would = "the program would get only the text before it",
                             const std::string& path = "") {
    if (const size_t at = s.find('\0'); at != std::string::npos) {
      throw SpawnError(fmt::format("{} holds a NUL byte at offset {} (after \"{}\"): {}; remove "
                                   "the NUL",
                                   what, at, s.substr(0, at), would),
                       EINVAL, path);
    }
  };
  for (size_t i = 0; i < command.argv.size(); ++i) {
    refuse_nul(command.argv[i], i == 0 ? "the program" : fmt::format("argument {}", i));
  }
  if (command.env) {
    for (size_t i = 0; i < command.env->size(); ++i) {
      refuse_nul((*command.env)[i], fmt::format("environment entry {}", i));
    }
  }
  refuse_nul(command.cwd, "the working directory");
  // Before any of them is opened (an output file is created when missing).
  const Stdio* const streams[] = {&command.stdin_stream, &command.stdout_stream,
                                  &command.stderr_stream};
  for (int i = 0; i < 3; ++i) {
    if (streams[i]->kind == Stdio::Kind::file) {
      refuse_nul(streams[i]->path, fmt::format("the {} file", kStreamNames[i]),
                 "the file opened would be the one the text before it names", streams[i]->path);
    }
  }
  const std::string& program = command.argv.front();
  if (program.find('/') != std::string::npos) return program;
  std::string search = "/usr/local/bin:/usr/bin:/bin";
  if (command.env) {
    for (const std::string& e : *command.env) {
      if (e.rfind("PATH=", 0) == 0) search = e.substr(5);
    }
  } else if (const char* path = std::getenv("PATH")) {
    search = path;
  }
  bool denied = false;
  std::string found = find_in_path(program, search, &denied);
  if (found.empty()) {
    int err = denied ? EACCES : ENOENT;
    throw SpawnError(fmt::format("cannot execute '{}': {} in PATH ({}) (errno {})", program,
                                 denied ? "found but not executable" : "not found", search, err),
                     err, program);
  }
  return found;
}

void check_runnable(const Command& command) {
  const std::string program = resolve_program(command);
  if (command.argv.front().find('/') == std::string::npos) return;  // found in PATH
  // Relative to the directory the workload starts in, as exec will resolve it.
  const std::string path = program.front() != '/' && !command.cwd.empty()
                               ? command.cwd + "/" + program
                               : program;
  struct stat st {};
  int err = 0;
  if (::stat(path.c_str(), &st) != 0) {
    err = errno;
  } else if (S_ISDIR(st.st_mode)) {
    throw SpawnError(fmt::format("cannot execute '{}': it is a directory", path), EACCES, path);
  } else {
    err = may_execute(path, &st);
  }
  if (err != 0) {
    throw SpawnError(
        fmt::format("cannot execute '{}': {} (errno {})", path, std::strerror(err), err), err,
        path);
  }
}

PreparedCommand::PreparedCommand(const Command& command) : path_(resolve_program(command)) {
  argv_storage_ = command.argv;
  if (command.env) env_storage_ = *command.env;
  cwd_ = command.cwd;
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
  // Inheriting: this process's environ as it is (no copy), as posix_spawn callers pass it.
  if (command.env) {
    own_env_ = true;
    for (std::string& e : env_storage_) envp_.push_back(e.data());
    envp_.push_back(nullptr);
  }
}

void PreparedCommand::set_env(const std::string& name, const std::string& value) {
  // The child's environment points into this process's environ (or the command's own), minus
  // an inherited NAME, plus NAME=value: no copy of the other variables' strings.
  const size_t n = name.size();
  const auto is_name = [&](const char* e) {
    return std::strncmp(e, name.c_str(), n) == 0 && e[n] == '=';
  };
  if (!own_env_) {
    size_t count = 0;
    for (char** e = environ; e && *e; ++e) ++count;
    envp_.reserve(count + 2);
    for (char** e = environ; e && *e; ++e) {
      if (!is_name(*e)) envp_.push_back(*e);
    }
    own_env_ = true;
  } else {
    envp_.pop_back();  // the terminating null
    envp_.erase(std::remove_if(envp_.begin(), envp_.end(), is_name), envp_.end());
  }
  added_env_.push_back(name + "=" + value);
  envp_.push_back(added_env_.back().data());
  envp_.push_back(nullptr);
}

std::optional<std::string> PreparedCommand::env(const std::string& name) const {
  const size_t n = name.size();
  for (char* const* e = envp(); e && *e; ++e) {
    if (std::strncmp(*e, name.c_str(), n) == 0 && (*e)[n] == '=') return std::string(*e + n + 1);
  }
  return std::nullopt;
}

char* const* PreparedCommand::envp() const {
  return own_env_ ? const_cast<char* const*>(envp_.data()) : environ;
}

PreparedCommand::~PreparedCommand() {
  for (int fd : stdio_) {
    if (fd >= 0) ::close(fd);
  }
}

struct Spawner {
  static void fill(ChildContext& ctx, const PreparedCommand& c, const Placement& placement) {
    ctx.path = &c.path_;
    ctx.argv = c.argv_.data();
    ctx.envp = c.envp();
    ctx.cwd = &c.cwd_;
    ctx.stdio = c.stdio_;
    ctx.procs_fds = placement.procs_fds.data();
    ctx.nprocs = placement.procs_fds.size();
    ctx.keep_fds = c.keep_fds_.data();
    ctx.nkeep = c.keep_fds_.size();
    ctx.netns_fd = c.netns_fd_;
    ctx.release_fd = -1;
    ctx.error_fd = -1;
    ctx.parent = ::getpid();
    ctx.die_with_parent = placement.die_with_parent;
  }

  // clone3(CLONE_VM | CLONE_VFORK): returns false when the kernel does not know it.
  static bool try_vfork(const PreparedCommand& c, const Placement& placement, Spawned& out) {
    ChildContext ctx;
    fill(ctx, c, placement);
    CloneArgs args{};
    int pidfd = -1;
    args.flags = kCloneVm | kCloneVfork | kClonePidfd;
    if (placement.cgroup_fd >= 0) {
      args.flags |= kCloneIntoCgroup;
      args.cgroup = static_cast<std::uint64_t>(placement.cgroup_fd);
      ctx.nprocs = 0;
    }
    args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    const Stack stack = child_stack();
    args.stack = reinterpret_cast<std::uintptr_t>(stack.base);
    args.stack_size = stack.size;
    // No signal handler may run in the child while it shares our memory (as glibc does).
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    const long rc = clone3_with_fn(&args, child_main, &ctx);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc == -ENOSYS || rc == -E2BIG || rc == -EINVAL) {
      clone3_unusable.store(true, std::memory_order_relaxed);  // kernel older than 5.7 / 5.3
      return false;
    }
    if (rc < 0) start_failed(c, "clone3", static_cast<int>(-rc), placement.cgroup_fd >= 0);
    // CLONE_VFORK: we run again once the child has exec'd or exited.
    out.pid = static_cast<pid_t>(rc);
    out.pidfd.reset(pidfd);
    out.placement = placement.cgroup_fd >= 0 ? "clone3" : "vfork+attach";
    if (ctx.failed_stage != Stage::none) {
      reap_failed(out.pid);
      out.pidfd.reset();
      fail(c, ChildError{ctx.failed_stage, ctx.failed_errno});
    }
    out.released = Clock::time_point(std::chrono::duration_cast<Clock::duration>(
        std::chrono::seconds(ctx.exec_time.tv_sec) +
        std::chrono::nanoseconds(ctx.exec_time.tv_nsec)));
    return true;
  }

  static Spawned fork_and_release(const PreparedCommand& c, const Placement& placement) {
    Pipe errors, release;
    ChildContext ctx;
    fill(ctx, c, placement);
    ctx.nprocs = 0;  // the parent places the child
    ctx.release_fd = release.read_end();
    ctx.error_fd = errors.write_end();
    Spawned out;
    pid_t pid = ::fork();
    if (pid == 0) {
      release.close_write();
      errors.close_read();
      child_main(&ctx);
    }
    if (pid < 0) start_failed(c, "fork", errno, false);
    release.close_read();
    errors.close_write();
    try {
      placement.attach(pid);
    } catch (...) {
      ::kill(pid, SIGKILL);
      reap_failed(pid);
      throw;
    }
    out.pid = pid;
    out.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    out.placement = "fork+attach";
    out.released = Clock::now();
    ssize_t ignored = ::write(release.write_end(), "x", 1);
    (void)ignored;
    // The error pipe closes on a successful exec (O_CLOEXEC) or carries why it failed.
    ChildError failure{Stage::none, 0};
    ssize_t n;
    do {
      n = ::read(errors.read_end(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      reap_failed(out.pid);
      out.pidfd.reset();
      fail(c, failure);
    }
    return out;
  }

  // With SIGCHLD ignored (SIG_IGN, or SA_NOCLDWAIT) the kernel reaps the child itself and
  // discards its status: wait4 then fails with ECHILD, once read as exit code 0.
  static void refuse_ignored_sigchld(const PreparedCommand& c) {
    struct sigaction now {};
    if (::sigaction(SIGCHLD, nullptr, &now) != 0) return;
    const bool ignored = now.sa_handler == SIG_IGN;
    if (ignored || (now.sa_flags & SA_NOCLDWAIT)) {
      throw SpawnError(fmt::format("cannot run '{}': SIGCHLD is {} in this process, so the kernel "
                                   "would discard the workload's exit status; restore its "
                                   "default handling (signal(SIGCHLD, SIG_DFL), without "
                                   "SA_NOCLDWAIT) before running workloads",
                                   c.path_, ignored ? "ignored (SIG_IGN)" : "flagged SA_NOCLDWAIT"),
                       0, "");
    }
  }

  // No process was made: a SpawnError (it was a plain Error) saying what limit to look at.
  // `in_slice`: the child was to be born in the slice (clone3 CLONE_INTO_CGROUP), whose
  // pids.max then counts it; elsewhere it is made in the caller's cgroup and moved in.
  [[noreturn]] static void start_failed(const PreparedCommand& c, const char* call, int err,
                                        bool in_slice) {
    std::string why;
    if (err == EAGAIN) {
      why = fmt::format(
          ": a process limit is reached: {}this user's (ulimit -u), or the host's "
          "(/proc/sys/kernel/pid_max, threads-max); end processes or raise the limit",
          in_slice ? "the slice's (the device's pids_max, counting what earlier workloads left "
                     "running in it: Slice::kill() ends them), "
                   : "");
    } else if (err == ENOMEM) {
      why = ": the host is out of memory";
    }
    throw SpawnError(fmt::format("cannot start '{}': {}: {} (errno {}){}", c.path_, call,
                                 std::strerror(err), err, why),
                     err, c.path_);
  }

  // A child that failed before its exec, reaped (the status is of no use).
  static void reap_failed(pid_t pid) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  [[noreturn]] static void fail(const PreparedCommand& c, ChildError failure) {
    const int err = failure.err;
    struct stat st{};
    if (failure.stage == Stage::exec && err == EACCES && ::stat(c.path_.c_str(), &st) == 0 &&
        S_ISDIR(st.st_mode)) {
      throw SpawnError(fmt::format("cannot execute '{}': it is a directory, not a program "
                                   "(errno {}, {}); name the program to run in it",
                                   c.path_, err, std::strerror(err)),
                       err, c.path_);
    }
    // What failed, by stage; then its errno.
    std::string what;
    std::string about = c.path_;
    switch (failure.stage) {
      case Stage::chdir:
        what = fmt::format("cannot change to working directory '{}'", c.cwd_);
        about = c.cwd_;
        break;
      case Stage::exec:
        what = fmt::format("cannot execute '{}'", c.path_);
        break;
      case Stage::netns:
        what = "the child could not join its own network namespace (setns)";
        break;
      case Stage::attach:
        what = "the child could not enter the slice (writing its pid to cgroup.procs)";
        break;
      case Stage::dup2:
        what = fmt::format("the child could not take its stdin, stdout or stderr before "
                           "executing '{}' (dup2)",
                           c.path_);
        break;
      case Stage::keep_fd:
        what = fmt::format("the child could not keep descriptor {} open (the phase pipe's write "
                           "end) before executing '{}'",
                           fmt::join(c.keep_fds_, ", "), c.path_);
        break;
      case Stage::release:
        what = fmt::format("the child was not released to execute '{}' (its release pipe "
                           "failed)",
                           c.path_);
        break;
      default:
        what = fmt::format("the child failed before executing '{}'", c.path_);
        break;
    }
    throw SpawnError(fmt::format("{}: {} (errno {})", what, std::strerror(err), err), err, about);
  }

  static Spawned spawn(const PreparedCommand& c, const Placement& placement, bool fast) {
    refuse_ignored_sigchld(c);
    Spawned out;
    if (fast && kHaveClone3Trampoline && !clone3_unusable.load(std::memory_order_relaxed) &&
        try_vfork(c, placement, out)) {
      return out;
    }
    return fork_and_release(c, placement);
  }
};

Spawned spawn_process(const PreparedCommand& command, const Placement& placement, bool fast) {
  return Spawner::spawn(command, placement, fast);
}

namespace {

static_assert(!WIFEXITED(kLostStatus) && !WIFSIGNALED(kLostStatus) && !WIFSTOPPED(kLostStatus));

// Reaps the child (blocking until it exits) and reads the clock: the exit's time, to within the
// reap. The errno when there was no status to reap: the child was reaped already (ECHILD).
std::variant<Exit, int> try_collect(const Spawned& child) {
  Exit e;
  int rc;
  while ((rc = ::wait4(child.pid, &e.status, 0, &e.usage)) < 0 && errno == EINTR) {
  }
  if (rc < 0) return errno;
  e.when = Clock::now();
  return e;
}

// The same, throwing SpawnError when the status is lost: never an exit status made up.
Exit collect(const Spawned& child) {
  auto e = try_collect(child);
  if (const Exit* exit = std::get_if<Exit>(&e)) return *exit;
  const int err = std::get<int>(e);
  throw StatusLost(
      fmt::format("the workload's exit status was lost: process {} was reaped before edgeprof "
                  "could wait for it (wait4: {}, errno {}). Either SIGCHLD is ignored in this "
                  "process (SIG_IGN or SA_NOCLDWAIT: the kernel then discards the status of "
                  "every child), or something else in it waits for any child (waitpid(-1), "
                  "wait(), a child watcher); restore SIGCHLD's default handling "
                  "(signal(SIGCHLD, SIG_DFL)) and wait only for your own children's pids",
                  child.pid, std::strerror(err), err),
      err, "");
}

// Whether the child has exited, without reaping it; also when it was reaped already (ECHILD),
// so that collect() says its status is lost rather than the wait going on for ever.
bool has_exited(const Spawned& child) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == child.pid;
}

}  // namespace

std::optional<Exit> wait_exit(const Spawned& child, std::optional<Clock::time_point> deadline,
                              const std::function<void()>& tick,
                              std::chrono::milliseconds tick_every) {
  for (;;) {
    // The clock is read only when there is a deadline to compute.
    std::optional<Clock::duration> budget;
    if (deadline) budget = std::max(Clock::duration::zero(), *deadline - Clock::now());
    if (tick && (!budget || *budget > tick_every)) budget = tick_every;
    // Nothing to do meanwhile: wait4 blocks until the exit (one system call instead of two).
    if (!budget) return collect(child);

    bool exited;
    if (child.pidfd.get() >= 0) {
      pollfd p{child.pidfd.get(), POLLIN, 0};
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
      auto until = budget ? Clock::now() + *budget : Clock::time_point::max();
      while (!(exited = has_exited(child)) && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (exited) return collect(child);
    if (tick) tick();
    if (deadline && Clock::now() >= *deadline) return std::nullopt;
  }
}

Exit reap(const Spawned& child) {
  auto e = try_collect(child);
  if (const Exit* exit = std::get_if<Exit>(&e)) return *exit;
  Exit lost;
  lost.status = kLostStatus;
  lost.when = Clock::now();
  return lost;
}

}  // namespace edgeprof::detail
