// The Python side of include/edgeprof/microbench.hpp: per-core scores, the suite, and this
// host's calibration. Called once from PYBIND11_MODULE in bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <optional>
#include <string>

// Adds CoreScores, run_suite, speed_from_scores, HostCalibration, host_calibration and
// SUITE_VERSION to `m`.
void bind_microbench(pybind11::module_& m);

// The progress callback of a long measurement (a rating, the quota share), which runs with the
// GIL released: after `progress` (when given) Python's pending signals are checked, so that
// Ctrl-C, or a SIGTERM handler that raises, unwinds the measurement (its children killed on
// the way) instead of waiting for its end, a minute or more. `progress` gets each line as
// text() gives it (a path in it that is not UTF-8 would fail pybind11's own conversion).
std::function<void(const std::string&)> with_signal_check(
    std::optional<std::function<void(pybind11::str)>> progress);
