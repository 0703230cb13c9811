/// @file
/// Umbrella header: everything a C++ tool needs to emulate a device and profile a workload.
#pragma once

/// @namespace edgeprof
/// Emulated edge devices (Device, Slice), runs and their reports (Result, RepeatedResult), and
/// the analysis that decides between models (rank(), compare(), Projection, score()).

#include "edgeprof/calibrate.hpp"
#include "edgeprof/catalog.hpp"
#include "edgeprof/compare.hpp"
#include "edgeprof/device.hpp"
#include "edgeprof/energy.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/microbench.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/phase.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/projection.hpp"
#include "edgeprof/rank.hpp"
#include "edgeprof/reference.hpp"
#include "edgeprof/result.hpp"
#include "edgeprof/series.hpp"
#include "edgeprof/slice.hpp"
#include "edgeprof/statistics.hpp"
#include "edgeprof/summary.hpp"
#include "edgeprof/version.hpp"
