// The Python side of include/edgeprof/phase.hpp and slice.hpp: phases marked from inside a
// workload, and the slices that run workloads. Called once from PYBIND11_MODULE in bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

// Adds mark, phase_begin, phase_end, profiled, Child, Slice and run to `m`.
void bind_run(pybind11::module_& m);
