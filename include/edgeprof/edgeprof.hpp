// Umbrella header: everything a C++ tool needs to emulate a device and profile a workload.
#pragma once

#include "edgeprof/device.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "edgeprof/version.hpp"
