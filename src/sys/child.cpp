// Running a measuring program as a child (child.hpp).

#include "sys/child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <cstring>

#include "edgeprof/error.hpp"
#include "sys/fs.hpp"
#include "sys/spawn.hpp"

extern char** environ;

namespace edgeprof::detail {

// The last `n` lines of `text`, for an error message.
std::string tail(std::string_view text, int n) {
  std::size_t at = text.size();
  while (n-- > 0 && at > 0) {
    at = text.rfind('\n', at - 1);
    if (at == std::string_view::npos) return std::string(text);
  }
  return std::string(text.substr(at == 0 ? 0 : at + 1));
}

std::optional<std::string> find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return may_execute(name) == 0 ? std::optional(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string found =
      find_in_path(name, path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  return found.empty() ? std::nullopt : std::optional(std::move(found));
}


ChildOutput run_child(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                      const std::function<void(const std::string&)>& progress,
                      std::string_view what,
                      const std::function<std::string(std::string_view)>& on_line,
                      const std::vector<std::pair<std::string, std::string>>& env_set) {
  std::vector<std::string> added;
  for (const auto& [name, value] : env_set) added.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(env_set.begin(), env_set.end(), [&](const auto& v) {
      return entry.size() > v.first.size() && entry.compare(0, v.first.size(), v.first) == 0 &&
             entry[v.first.size()] == '=';
    });
    if (!replaced) envp.push_back(*e);
  }
  for (std::string& a : added) envp.push_back(a.data());
  envp.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(fmt::format("cannot create a pipe for {}: {} (errno {})", argv[0],
                            std::strerror(errno), errno),
                errno);
  }
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const auto started = std::chrono::steady_clock::now();
  const int err = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    throw Error(fmt::format("cannot start {}: {} (errno {})", argv[0], std::strerror(err), err),
                err);
  }
  write_end.reset();
  // Whatever ends this function early (a progress callback that throws, Ctrl-C in Python), the
  // child does not outlive it.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);  // our own child, by pid
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  } reaper{pid};
  ChildOutput out;
  auto last_note = started;
  // Every 10 s while it runs, a progress note.
  const auto note_running = [&](std::chrono::steady_clock::time_point now) {
    if (!progress || now - last_note < std::chrono::seconds(10)) return;
    last_note = now;
    progress(fmt::format("  {} running: {:.0f} s", what,
                         std::chrono::duration<double>(now - started).count()));
  };
  bool timed_out = false;
  char buffer[4096];
  while (true) {
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, 1000);
    const auto now = std::chrono::steady_clock::now();
    if (now - started > timeout) {
      ::kill(pid, SIGKILL);  // our own child, by pid
      timed_out = true;
      break;
    }
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      const ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // end of output: the child is exiting
      const std::size_t done = out.text.rfind('\n') == std::string::npos
                                   ? 0
                                   : out.text.rfind('\n') + 1;
      out.text.append(buffer, static_cast<std::size_t>(n));
      if (on_line && progress) {
        std::size_t at = done;
        for (std::size_t nl; (nl = out.text.find('\n', at)) != std::string::npos; at = nl + 1) {
          std::string line = on_line(std::string_view(out.text).substr(at, nl - at));
          if (!line.empty()) progress(line);
        }
      }
    }
    note_running(now);
  }
  // The end of its output is not its end (a child that closed or redirected its stdout and
  // stderr and went on, or hung): waited for until the timeout too, then killed. A blocking
  // wait here outlived the timeout for as long as the child ran.
  int reaped;
  auto pause = std::chrono::milliseconds(1);
  while ((reaped = ::waitpid(pid, &out.status, timed_out ? 0 : WNOHANG)) <= 0) {
    if (reaped < 0 && errno != EINTR) break;
    if (reaped < 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now - started > timeout) {
      ::kill(pid, SIGKILL);  // our own child, by pid, not reaped yet
      timed_out = true;
      continue;
    }
    note_running(now);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  const int wait_errno = errno;
  reaper.pid = -1;
  if (timed_out) {
    throw Error(fmt::format("{} ran longer than {} s and was stopped; its output ended with:\n{}",
                            argv[0], timeout.count(), tail(out.text, 5)));
  }
  if (reaped < 0) {
    // ECHILD: the kernel discarded the status (SIGCHLD ignored) or another wait took it; the
    // status read would be 0, a success made up.
    throw Error(fmt::format("{}'s exit status was lost (waitpid: {}, errno {}): SIGCHLD is "
                            "ignored in this process (SIG_IGN or SA_NOCLDWAIT), or something "
                            "else in it waits for any child (waitpid(-1)); restore SIGCHLD's "
                            "default handling (signal(SIGCHLD, SIG_DFL))",
                            argv[0], std::strerror(wait_errno), wait_errno),
                wait_errno);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

std::string describe_status(int status) {
  return WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                           : fmt::format("signal {}", WTERMSIG(status));
}

}  // namespace edgeprof::detail
