// The Python side of include/edgeprof/microbench.hpp: per-core scores, the suite, and this
// host's calibration. Called once from PYBIND11_MODULE in bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

// Adds CoreScores, run_suite, speed_from_scores, HostCalibration, host_calibration and
// SUITE_VERSION to `m`.
void bind_microbench(pybind11::module_& m);
