// The kinds of line on the phase channel that are no phase's begin, end or mark.
#pragma once

namespace edgeprof::detail {

// A count of the workload's activations (the activation counter's, src/nn/activation_counter.py;
// read by run/runtime_follow.hpp): "<monotonic ns> A <MB> <CPU ms> <calls> [<runtime>]", the MB
// its model wrote in one inference (counted) and one thread's CPU time per inference (measured,
// the median of `calls` timed inferences), or word of a count skipped, "<ns> A skip <runtime>
// memory <used> <needed> <limit>". parse_phases() skips both.
inline constexpr char kActivationMark = 'A';

}  // namespace edgeprof::detail
