/// @file
/// The device's energy, estimated from its power figures and a run's wall and CPU time.
#pragma once

#include <optional>

#include "edgeprof/device.hpp"
#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// Estimated energy of the device over `wall_s` seconds in which the workload used `cpu_s`
/// host-core seconds of CPU, in joules: idle_watts x wall_s + (loaded_watts - idle_watts) x
/// cpu_s / capacity_cores, i.e. power linear in the share of the device's CPU capacity in use
/// (docs/energy.md). nullopt when either power figure is unknown or capacity_cores <= 0.
std::optional<double> estimate_energy_j(const PowerDescription& power, double wall_s,
                                        double cpu_s, double capacity_cores);

/// Estimated energy of a whole device of `threads` cores running a workload of which one of its
/// cores ran a span (projected core emulation): `core_power` is that one core's power
/// (for_threads(device, 1): the device's idle, its loaded share for one core), the span took
/// `wall_s` and used `cpu_s` of `capacity_cores`. The device takes wall_s / `speedup` with each
/// of its cores as busy as the one that ran (cores waiting on shared memory still draw power):
/// estimate_energy_j of the whole device over that time. nullopt as estimate_energy_j, or when
/// threads < 1 or speedup <= 0.
std::optional<double> estimate_projected_energy_j(const PowerDescription& core_power, int threads,
                                                  double speedup, double wall_s, double cpu_s,
                                                  double capacity_cores);

}  // namespace edgeprof
EDGEPROF_API_END
