// Phases too short for a quota's period to time one by one (docs/period.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "edgeprof/summary.hpp"

namespace edgeprof::detail {

// A warning when a phase that repeated (at least three times) took a median wall time shorter
// than `period_s`, the CFS period of a quota that throttled the run: under a quota such a phase
// runs at the host's speed while the period's quota lasts and waits out the rest of the period
// when it does not, so its single times are not the device's; only their mean over many
// periods is. nullopt when no phase name is that short (or `period_s` is not positive).
std::optional<std::string> short_phase_warning(const std::vector<Phase>& phases, double period_s);

}  // namespace edgeprof::detail
