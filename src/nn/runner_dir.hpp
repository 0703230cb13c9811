// What runs the reference graphs with ncnn's Python package (or another runtime's models: nn.hpp's
// nn_runtimes()): the interpreter, and a temporary directory holding the graphs and the runner.
#pragma once

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

// The name of the interpreter that runs the nn runner, not yet looked up: `given`, else
// $EDGEPROF_PYTHON (when set and not empty), else "python3". It keys readings that depend on it.
std::string nn_python_name(const std::string& given);

// The Python interpreter that runs the nn runner: nn_python_name(given), found on PATH. Throws Error saying what to install for `runtime` (an NnRuntime id) when there
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

// A new directory under $TMPDIR (else /tmp) named `prefix`-XXXXXX; throws Error naming the
// path and the errno when it cannot be made.
std::string make_temp_dir(std::string_view prefix);

// A temporary directory holding edgeprof's activation counter (src/nn/activation_counter.py)
// as sitecustomize.py, and the PyTorch runner whose counting rule it loads, for a workload's
// PYTHONPATH (PlanOptions::count_activations); removed with everything in it when destroyed.
class ActivationCounterDir {
 public:
  ActivationCounterDir();  // throws Error as make_temp_dir(), or when a file cannot be written
  ~ActivationCounterDir();
  ActivationCounterDir(const ActivationCounterDir&) = delete;
  ActivationCounterDir& operator=(const ActivationCounterDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace edgeprof::detail
