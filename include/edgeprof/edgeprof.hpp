// Umbrella header: everything a C++ tool needs to emulate a device and profile a workload.
#pragma once

#include "edgeprof/compare.hpp"
#include "edgeprof/device.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/phase.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/projection.hpp"
#include "edgeprof/rank.hpp"
#include "edgeprof/result.hpp"
#include "edgeprof/series.hpp"
#include "edgeprof/slice.hpp"
#include "edgeprof/version.hpp"
