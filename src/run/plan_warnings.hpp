// What a run says in its warnings about the plan it ran under (issue 33, issue 36 item 11): the
// plan's notes that must not stay in the notes alone.
#pragma once

#include <string>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/plan.hpp"

namespace edgeprof::detail {

// The warnings a run under `plan` (for `device`, as the run ended: a followed runtime's) gives:
// the notes of a drift check that could not correct the speed (but not one within the probe's
// own noise), of a host CPU the drift probe shared, of a probe whose kernels spread widely, of
// a quota scale short of this host's own share; a drift that was corrected; a pooled quota
// that lets a thread outrun a device core. In that order; empty when none applies.
std::vector<std::string> plan_warnings(const EmulationPlan& plan, const Device& device);

}  // namespace edgeprof::detail
