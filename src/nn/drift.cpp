// The host's drift since its nn rating: a short probe of a few of the rating's graphs, now,
// against their rated times (plan.cpp corrects an nn speed by it, PlanOptions::drift_check).

#include <fmt/format.h>
#include <fmt/ranges.h>


#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "nn/recent.hpp"
#include "nn/runner_dir.hpp"
#include "nn/runtime_table.hpp"
#include "nn/runtimes.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/spawn.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

HostDrift host_drift(const NnRating& rated, const NnRating& now) {
  if (rated.runtime_id != now.runtime_id) {
    throw Error(fmt::format("host drift: the rating was measured with {} and the probe with {}; "
                            "probe with the rating's runtime",
                            rated.runtime_id, now.runtime_id));
  }
  if (rated.precision != now.precision) {
    throw Error(fmt::format("host drift: the rating was measured in {} and the probe in {}; "
                            "measure the rating again ({})",
                            rated.precision, now.precision,
                            detail::remeasure_command(rated.runtime_id)));
  }
  if (!rated.runtime.empty() && !now.runtime.empty() && rated.runtime != now.runtime) {
    throw Error(fmt::format("host drift: the rating was measured with {} and the probe ran {}: "
                            "a new version is not the host's drift; measure the rating again "
                            "({})",
                            rated.runtime, now.runtime,
                            detail::remeasure_command(rated.runtime_id)));
  }
  HostDrift d;
  const auto valid = [](double ms) { return ms > 0 && std::isfinite(ms); };
  // In CPU time where both measured it for every graph compared: waiting for a CPU is not the
  // host's speed (a throttled slice barely waits).
  std::vector<std::string> common;
  for (const auto& [graph, ms] : now.host_ms) {
    if (rated.host_ms.count(graph)) common.push_back(graph);
  }
  d.cpu_time = !common.empty() && std::all_of(common.begin(), common.end(), [&](const auto& g) {
    return rated.cpu_ms.count(g) && now.cpu_ms.count(g);
  });
  std::vector<double> ratios, wall_ratios, waiting;
  for (const std::string& graph : common) {
    const double ms = now.host_ms.at(graph), rated_ms = rated.host_ms.at(graph);
    const double cpu = d.cpu_time ? now.cpu_ms.at(graph) : 1.0;
    const double rated_cpu = d.cpu_time ? rated.cpu_ms.at(graph) : 1.0;
    if (!valid(ms) || !valid(rated_ms) || !valid(cpu) || !valid(rated_cpu)) {
      throw Error(fmt::format("host drift: graph '{}' took {} ms ({} ms of CPU) in the probe and "
                              "{} ms ({} ms of CPU) in the rating; times must be positive numbers",
                              graph, ms, cpu, rated_ms, rated_cpu));
    }
    const double ratio = d.cpu_time ? cpu / rated_cpu : ms / rated_ms;
    d.ratios[graph] = ratio;
    ratios.push_back(ratio);
    wall_ratios.push_back(ms / rated_ms);
    if (const auto c = now.cpu_ms.find(graph); c != now.cpu_ms.end() && valid(c->second)) {
      waiting.push_back(ms / c->second);
    }
  }
  if (ratios.empty()) {
    throw Error(fmt::format("host drift: the probe ran no graph the rating has ({} graph{} "
                            "probed, {} rated); probe some of the rating's graphs",
                            now.host_ms.size(), now.host_ms.size() == 1 ? "" : "s",
                            rated.host_ms.size()));
  }
  d.factor = detail::median_of(ratios);
  d.wall_factor = detail::median_of(wall_ratios);
  d.waiting = waiting.empty() ? NAN : detail::median_of(waiting);
  d.cpu = now.cpu;
  d.loops = now.loops;
  d.measured_at = now.measured_at;
  d.rated_at = rated.measured_at;
  d.seconds = now.seconds;
  d.runtime_id = rated.runtime_id;
  return d;
}

HostDrift measure_host_drift(const NnRating& rating, const DriftOptions& options) {
  const detail::RuntimeSpec* spec = detail::find_runtime(rating.runtime_id);
  if (!spec || !spec->rating) {
    throw Error(fmt::format("host drift: the rating's runtime '{}' is not one edgeprof rates; "
                            "give a rating from cached_nn_rating()",
                            rating.runtime_id));
  }
  const bool ncnn = rating.runtime_id == "ncnn";
  NnOptions o;
  o.runtime = rating.runtime_id;
  // Another runtime's probe runs in the interpreter its rating ran in (the one with PyTorch)
  // while it is there, unless one is named.
  o.python = options.python;
  if (!ncnn && o.python.empty() && !rating.command.empty() &&
      detail::may_execute(rating.command) == 0) {
    o.python = rating.command;
  }
  // Another runtime's probe: the graphs asked for, else (ncnn's default four, which int8's
  // models share a name with) its own share models, spread over its times.
  std::vector<std::string> tried = options.graphs;
  if (!ncnn && options.graphs == DriftOptions{}.graphs) {
    tried.assign(spec->rating->share_models.begin(), spec->rating->share_models.end());
  }
  for (const std::string& g : tried) {
    if (rating.host_ms.count(g)) o.graphs.push_back(g);
  }
  if (o.graphs.empty()) {
    std::vector<std::string> rated;
    for (const auto& [graph, ms] : rating.host_ms) rated.push_back(graph);
    throw Error(fmt::format("host drift: the rating has none of the probe's graphs ({}; it has "
                            "{}): probe some of the rating's graphs (DriftOptions::graphs)",
                            fmt::join(tried, ", "),
                            rated.empty() ? std::string("none")
                                          : fmt::format("{}", fmt::join(rated, ", "))));
  }
  if (rating.threads > 1) {
    throw Error(fmt::format("host drift: the rating was measured with {} threads, and the probe "
                            "compares one thread's times: give a one-thread rating "
                            "(cached_nn_rating())",
                            rating.threads));
  }
  o.cpu = options.cpu;
  o.activations = false;  // an inference per model the probe does not need
  o.cache = false;
  if (ncnn) {
    o.warmup = options.warmup;
    o.loops = options.loops;
    o.timeout = options.timeout;
  } else {
    // The other runtimes time their models as their ratings did (the runner's arguments: a
    // quarter of a second a pass, the mean), after starting Python and the runtime: tens of
    // seconds (docs/devices.md).
    o.timeout = std::max(options.timeout, std::chrono::seconds(300));
  }
  // Another runtime's probe takes tens of seconds: say what it is, then the runner's lines.
  if (!ncnn && options.progress) {
    options.progress(fmt::format(
        "probing this host's drift since its {} rating{}: {} model{}, tens of seconds",
        detail::runtime_name(rating.runtime_id),
        rating.measured_at.empty() ? "" : fmt::format(" ({})", rating.measured_at),
        o.graphs.size(), o.graphs.size() == 1 ? "" : "s"));
    // The runner's lines, not its closing summary (a rating's, "3 models with PyTorch ...":
    // the reading below is what the probe found).
    const std::string summary = fmt::format("{} model", o.graphs.size());
    o.progress = [&options, summary](const std::string& line) {
      if (line.rfind(summary, 0) != 0) options.progress(line);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  NnRating now = measure_nn_rating(o);
  HostDrift d = host_drift(rating, now);
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ncnn && options.progress) options.progress(describe(d));
  return d;
}

HostFacts with_measured_drift(HostFacts host, const Device& device, const PlanOptions& options,
                              int cpu) {
  if (!options.drift_check || host.drift) return host;
  const Device at = for_speed_kind(device, options.speed_kind);
  // An ncnn speed, or another runtime's from its rating (not a probed device's vector speed).
  const detail::RuntimeSpec* spec = at.nn ? detail::find_runtime(at.nn->basis) : nullptr;
  if (at.speed_kind != "nn" || !spec || !spec->rating) return host;
  const std::string& runtime = at.nn->basis;
  std::string why;
  const std::optional<NnRating> rating = cached_nn_rating(&why, runtime);
  if (!rating) {
    host.drift_problem =
        fmt::format("this host's {} rating is not cached ({})",
                    runtime == "ncnn" ? "nn" : detail::runtime_name(runtime), why);
    return host;
  }
  // One reading per CPU, rating and interpreter for kDriftProbeReuse: repeats and comparisons
  // share it.
  static detail::RecentReadings<std::tuple<int, std::string, std::string, std::string>,
                                HostDrift>
      recent;
  const auto key = std::make_tuple(cpu, runtime, rating->measured_at,
                                   detail::nn_python_name(options.nn_measure.python, runtime));
  if (auto reading = recent.find(key)) {
    host.drift = std::move(reading);
    return host;
  }
  DriftOptions o;
  o.python = options.nn_measure.python;
  o.progress = options.nn_measure.progress;
  o.cpu = cpu;
  try {
    host.drift = measure_host_drift(*rating, o);
    recent.put(key, *host.drift);
  } catch (const Error& e) {
    host.drift_problem = fmt::format("the probe failed: {}", e.what());
  }
  return host;
}

std::string describe(const HostDrift& d) {
  const double f = d.factor;
  const std::string how =
      std::abs(f - 1) < 0.005 ? std::string("ran as fast as")
      : f > 1 ? fmt::format("ran {:.2f}x slower than", f)
              : fmt::format("ran {:.2f}x faster than", 1 / f);
  const bool ncnn = d.runtime_id == "ncnn";
  std::string text = fmt::format(
      "this host {} at its {} rating{}{}: {} {} {}{} probed{}{}{}", how,
      ncnn ? "nn" : detail::runtime_name(d.runtime_id),
      d.rated_at.empty() ? "" : fmt::format(" ({})", d.rated_at),
      d.cpu_time ? " in CPU time" : "", d.ratios.size(),
      ncnn ? "ncnn" : detail::runtime_name(d.runtime_id), ncnn ? "graph" : "model",
      d.ratios.size() == 1 ? "" : "s",
      d.cpu >= 0 ? fmt::format(" on CPU {}", d.cpu) : "",
      d.measured_at.empty() ? "" : fmt::format(" at {}", d.measured_at),
      d.seconds > 0 ? fmt::format(", {:.2f} s", d.seconds) : "");
  if (d.waiting > kProbeWaitingShared) {
    text += fmt::format(
        "; its CPU was shared (its inferences took {:.2f}x their CPU time: another busy process "
        "on the CPU or a hypervisor's steal{})",
        d.waiting,
        d.cpu_time ? fmt::format(", which alone would have read as {:.2f}x", d.wall_factor)
                   : std::string(", read as drift here: the rating has no CPU times"));
  }
  return text;
}

}  // namespace edgeprof
