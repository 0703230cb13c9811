// The Python side of include/edgeprof/compare.hpp and calibrate.hpp: what runs many workloads
// (compare, calibrate_speed) and scores a run against a budget. Called once from PYBIND11_MODULE
// in bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

// Adds ComparisonRow, Comparison, SpeedModel, WorkloadSpeedFit, PeriodSpeedFit, SpeedCalibration
// and Score, and _compare, fit_speed_model, solve_core_speed, calibrate_speed and score to `m`.
void bind_study(pybind11::module_& m);
