#include "analysis/short_phases.hpp"

#include "sys/stats.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace edgeprof::detail {

std::optional<std::string> short_phase_warning(const std::vector<Phase>& phases,
                                               double period_s) {
  if (!(period_s > 0)) return std::nullopt;
  std::map<std::string, std::vector<double>> walls;
  for (const Phase& p : phases) {
    if (!p.ended_by_exit) walls[p.name].push_back(p.wall_time_s());
  }
  struct Short {
    std::string name;
    std::size_t count;
    double median_s, mean_s;
  };
  std::vector<Short> found;
  for (auto& [name, w] : walls) {
    if (w.size() < 3) continue;
    const double median = median_of(w);
    if (!(median < period_s)) continue;
    double sum = 0;
    for (double x : w) sum += x;
    found.push_back({name, w.size(), median, sum / double(w.size())});
  }
  if (found.empty()) return std::nullopt;
  // The shortest first; ties in name order (the map's).
  std::stable_sort(found.begin(), found.end(),
                   [](const Short& a, const Short& b) { return a.median_s < b.median_s; });
  std::vector<std::string> said;
  for (std::size_t i = 0; i < found.size() && i < 3; ++i) {
    said.push_back(fmt::format("'{}' ({} times, median {:.3g} ms, mean {:.3g} ms)", found[i].name,
                               found[i].count, found[i].median_s * 1e3, found[i].mean_s * 1e3));
  }
  if (found.size() > 3) said.push_back(fmt::format("{} more", found.size() - 3));
  return fmt::format(
      "phase{} {} took a median shorter than the quota's period ({:.3g} ms): under a quota such "
      "a phase runs at this host's speed while the period's quota lasts and waits out the rest "
      "of the period when it does not, so its single times (median, percentiles) are not the "
      "device's; the mean over many is. Give the phase's time on the device as the iteration "
      "time (iteration_time, --iteration-time) for a period a tenth of it where the quota "
      "allows (docs/period.md)",
      found.size() == 1 ? "" : "s", fmt::join(said, ", "), period_s * 1e3);
}

}  // namespace edgeprof::detail
