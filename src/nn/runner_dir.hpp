// What runs the reference graphs with ncnn's Python package: the interpreter, and a temporary
// directory holding the graphs and the runner (nn.hpp's nn_runner_source()).
#pragma once

#include <string>
#include <vector>

namespace edgeprof::detail {

// The Python interpreter that runs the nn runner: `given`, else $EDGEPROF_PYTHON, else python3,
// found on PATH. Throws Error saying what to install when there is none.
std::string nn_python(const std::string& given);

// A temporary directory (under $TMPDIR, else /tmp) with the reference graphs (all, or those
// named) and the runner, removed with the files it holds (and out.txt, for a run's output) on
// every exit path. Throws Error naming the path and the errno when it cannot be made.
class NnRunnerDir {
 public:
  explicit NnRunnerDir(const std::vector<std::string>& graphs = {});
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

}  // namespace edgeprof::detail
