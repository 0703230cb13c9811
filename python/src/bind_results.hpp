// The Python side of include/edgeprof/result.hpp, series.hpp, summary.hpp and statistics.hpp:
// what a run measured, and the statistics of repeated runs. Called once from PYBIND11_MODULE in
// bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

// Adds DEFAULT_INTERVAL_S, REPORT_SCHEMA_VERSION, METRICS, TimeSeries, Summary, SpeedChange,
// Phase, SourceStatus, HostInfo, Result, Statistic and RepeatedResult, and estimate_energy_j,
// host_info, statistics and student_t_quantile to `m`.
void bind_results(pybind11::module_& m);
