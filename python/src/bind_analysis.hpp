// The Python side of include/edgeprof/rank.hpp and projection.hpp: named figures, ranking, rank
// agreement, Pareto fronts, budgets and projections. Called once from PYBIND11_MODULE in
// bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

// Adds RankedItem, Agreement, BudgetCheck, Prediction, Projection and Calibration to `m`, and
// the functions over them (figure, figures, _rank, spearman, kendall, pareto_front, check_budget,
// project, ...).
void bind_analysis(pybind11::module_& m);
