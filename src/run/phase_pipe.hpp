// The phase channel between a workload and its slice (the run layer's part of phase marks).
#pragma once

#include <string>

#include "sys/fs.hpp"

namespace edgeprof::detail {

// The phase channel (edgeprof/phase.hpp): a non-blocking pipe whose write end only the child
// inherits, named in its environment with the pipe's inode. A slice keeps one for its next run,
// because creating one (pipe2, fstat, two closes) is a large part of what a spawn costs where
// system calls are slow (docs/benchmarks.md). This process holds the write end too, so the read
// end never reports EOF: marks are read until the pipe is empty, after the child was reaped.
struct PhasePipe {
  UniqueFd read, write;
  std::string env;  // "<write fd>:<inode>"
};

// A new pipe; throws Error with the errno when the kernel refuses one.
PhasePipe make_phase_pipe();

}  // namespace edgeprof::detail
