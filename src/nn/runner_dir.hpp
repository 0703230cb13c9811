// What runs the reference graphs with ncnn's Python package (or another runtime's models: nn.hpp's
// nn_runtimes()): the interpreter, and a temporary directory holding the graphs and the runner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprof {
struct NnRating;
}

namespace edgeprof::detail {

// Each graph's wall time over its CPU time per inference, for the graphs whose runner reported
// both (NnRating::cpu_ms): about 1 on a CPU of its own, more where another busy process or a
// hypervisor's steal had part of it (kProbeWaitingShared).
std::vector<double> wall_over_cpu(const NnRating& r);

// The name of the interpreter that runs `runtime`'s runner, not yet looked up: `given`, else
// $EDGEPROF_PYTHON (when set and not empty), else for ncnn default_ncnn_python() where set,
// else "python3". It keys readings that depend on it.
std::string nn_python_name(const std::string& given, std::string_view runtime = "ncnn");

// The Python interpreter that runs the nn runner: nn_python_name(given, runtime), found on PATH. Throws Error saying what to install for `runtime` (an NnRuntime id) when there
// is none.
std::string nn_python(const std::string& given, std::string_view runtime = "ncnn");

// A temporary directory (under $TMPDIR, else /tmp) with the runtime's runner and, for ncnn, the
// reference graphs (all, or those named), removed with everything in it (out.txt, for a run's
// output; what the runner's --export wrote) on every exit path. Throws Error naming the path and the errno when it cannot
// be made, and Error listing the runtime's models when one named is not one of them.
class NnRunnerDir {
 public:
  explicit NnRunnerDir(const std::vector<std::string>& graphs = {});  // ncnn
  NnRunnerDir(std::string_view runtime, const std::vector<std::string>& graphs);
  ~NnRunnerDir();
  NnRunnerDir(const NnRunnerDir&) = delete;
  NnRunnerDir& operator=(const NnRunnerDir&) = delete;

  const std::string& path() const { return path_; }
  std::string runner() const { return path_ + "/runner.py"; }
  std::string output() const { return path_ + "/out.txt"; }

 private:
  void remove() noexcept;
  std::string path_;
};

// Where temporary directories are made: $TMPDIR (when set and not empty), else /tmp.
std::string temp_root();

// A new directory under temp_root() named `prefix`-XXXXXX; throws Error naming the path and
// the errno when it cannot be made.
std::string make_temp_dir(std::string_view prefix);

// The process that made an activation counter directory: its pid namespace (the inode of
// /proc/self/ns/pid), pid and start time (as own_start_time() reads it), which name the
// directory, so that one left by a process that died (kill -9) can be told from a live one's,
// and one of another pid namespace sharing the directory (another container's) is not judged.
struct CounterDirOwner {
  std::uint64_t pid_ns = 0;
  long pid = 0;
  std::uint64_t start = 0;
  bool operator==(const CounterDirOwner&) const = default;
};
// "edgeprof-count-<pid_ns>-<pid>-<start>", the prefix of make_temp_dir().
std::string counter_dir_prefix(const CounterDirOwner& owner);
// The owner in a directory's name (the prefix, a dash and mkdtemp's six characters); nullopt
// for any other name.
std::optional<CounterDirOwner> parse_counter_dir_name(std::string_view name);

// A temporary directory holding edgeprof's activation counter (src/nn/activation_counter.py)
// as sitecustomize.py, and the PyTorch runner whose counting rule it loads, for a workload's
// PYTHONPATH (PlanOptions::count_activations), named by its owner (counter_dir_prefix());
// removed with everything in it when destroyed, by the process that made it only (a forked
// child's copy leaves it to its parent).
class ActivationCounterDir {
 public:
  // Throws Error as make_temp_dir(), or when a file cannot be written.
  explicit ActivationCounterDir(const CounterDirOwner& owner);
  ~ActivationCounterDir();
  ActivationCounterDir(const ActivationCounterDir&) = delete;
  ActivationCounterDir& operator=(const ActivationCounterDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  long maker_;  // getpid() of the process that made it
};

}  // namespace edgeprof::detail
