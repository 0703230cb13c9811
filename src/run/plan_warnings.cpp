#include "run/plan_warnings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace edgeprof::detail {

namespace {

// How the notes a run repeats as warnings begin (src/device/plan.cpp writes them; the run
// layer may not include the device layer's device_json.hpp, which names the probe's).
// "this host's own share was measured at a": the quota scale left out for another period or
// keep-warm setting than the share's, which made such runs about the scale slower, unsaid.
constexpr const char* kWarningNotes[] = {"host drift not corrected", "host CPU shared",
                                         "probe scores spread", "quota scale short",
                                         "own share moved", "own share not checked",
                                         "this host's own share was measured at a"};

bool is_warning_note(const std::string& note) {
  if (note.rfind("host drift not corrected", 0) == 0 &&
      note.find("cannot tell from its own noise") != std::string::npos) {
    return false;  // within the probe's own noise: nothing to act on
  }
  return std::any_of(std::begin(kWarningNotes), std::end(kWarningNotes),
                     [&](const char* start) { return note.rfind(start, 0) == 0; });
}

// A device of several cores emulated by one quota for all of them lets a thread outrun a
// device core while its siblings idle, and its threads scale as this host's CPUs do: said in
// every such result's warnings (issue 33), not only in the plan's notes. Empty otherwise.
std::string pooled_warning(const EmulationPlan& plan, const Device& device) {
  if (device.cores < 2 || plan.core_emulation() != CoreEmulation::pooled) return {};
  const double capacity = plan.capacity_cores();
  const double core = capacity / device.cores;  // a device core's share of the quota
  const double one_thread = std::min(1.0, capacity);
  if (!(capacity > 0) || !(one_thread > 1.05 * core)) return {};
  std::vector<std::string> ways;
  if (resolve_core_emulation(device, CoreEmulation::automatic) == CoreEmulation::projected) {
    ways.emplace_back("'projected' (one core, its times divided by the board's published "
                      "speed-up)");
  }
  if (device.cores <= static_cast<int>(kMaxCoreGroups)) ways.emplace_back("'per-core'");
  return fmt::format(
      "the device's {} cores share one CPU quota of {:.2f} host cores (core emulation "
      "pooled): a thread runs faster than a device core while its siblings idle, up to {:.2f} "
      "of a host core instead of {:.3g}, and the threads scale as this host's CPUs do, not as "
      "the board's{} (docs/threads.md)",
      device.cores, capacity, one_thread, core,
      ways.empty() ? std::string()
                   : fmt::format("; core emulation {} keeps a thread to a device core",
                                 fmt::join(ways, " or ")));
}

}  // namespace

std::vector<std::string> plan_warnings(const EmulationPlan& plan, const Device& device) {
  std::vector<std::string> out;
  for (const std::string& note : plan.notes) {
    if (is_warning_note(note)) out.push_back(note);
  }
  if (plan.host_drift != 1.0) {
    out.push_back(fmt::format(
        "this host ran {:.2f}x {} than at its nn rating just before the run, and the device's "
        "nn speed was corrected by it (the plan's notes); if the host stays so, measure the "
        "rating again (`edgeprof calibrate-host --nn --remeasure`)",
        plan.host_drift >= 1 ? plan.host_drift : 1 / plan.host_drift,
        plan.host_drift >= 1 ? "slower" : "faster"));
  }
  if (std::string pooled = pooled_warning(plan, device); !pooled.empty()) {
    out.push_back(std::move(pooled));
  }
  return out;
}

}  // namespace edgeprof::detail
