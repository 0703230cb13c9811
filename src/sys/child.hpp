// Running a measuring program (7-Zip's benchmark, the nn runner) as a child: its output
// collected, a timeout, progress, and no child left behind on any exit path.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgeprof::detail {

// What came out of a finished child.
struct ChildOutput {
  std::string text;  // stdout and stderr, interleaved
  int status = 0;    // waitpid's
  double seconds = 0;
};

// Runs argv with stdout and stderr into one pipe, stdin from /dev/null, on the calling thread's
// CPU affinity; stops it (SIGKILL) and throws Error after `timeout`. Progress: "  <what>
// running: N s" every 10 s, and each line of output that `on_line` returns text for. The child's
// environment is this process's with `env_set` set (replacing the inherited values).
ChildOutput run_child(
    const std::vector<std::string>& argv, std::chrono::seconds timeout,
    const std::function<void(const std::string&)>& progress, std::string_view what,
    const std::function<std::string(std::string_view)>& on_line = {},
    const std::vector<std::pair<std::string, std::string>>& env_set = {});

// `name` when it contains '/' and is executable, else the first executable `name` on PATH.
std::optional<std::string> find_on_path(const std::string& name);

// The last `n` lines of `text`, for an error message.
std::string tail(std::string_view text, int n);

// "exit status 3" or "signal 9", from a waitpid status.
std::string describe_status(int status);

}  // namespace edgeprof::detail
