// This host's own parallel scaling of CNN inference (the reference graphs with one thread and
// with N, unthrottled), and the factor it puts on a board's published speed-up for a workload
// that scales better or worse than the graphs do (CoreEmulation::projected).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

double HostScaling::speedup(const std::string& graph) const {
  const auto one = one_ms.find(graph);
  const auto many = many_ms.find(graph);
  if (one == one_ms.end() || many == many_ms.end()) {
    throw Error(fmt::format("host scaling: graph '{}' was not measured; measure it "
                            "(HostScalingOptions::graphs) or ask for one that was",
                            graph));
  }
  return one->second / many->second;
}

double HostScaling::median_speedup(std::string_view without_graph) const {
  std::vector<double> s;
  for (const auto& [graph, ms] : one_ms) {
    if (graph != without_graph && many_ms.count(graph)) s.push_back(speedup(graph));
  }
  if (s.empty()) {
    throw Error(fmt::format("host scaling: no graph measured{}; measure more graphs",
                            without_graph.empty() ? std::string()
                                                  : fmt::format(" but '{}'", without_graph)));
  }
  return detail::median_of(std::move(s));
}

HostScaling host_scaling(const std::vector<NnRating>& one, const std::vector<NnRating>& many) {
  if (one.empty() || one.size() != many.size()) {
    throw Error(fmt::format("host scaling: {} one-thread and {} multi-thread runs; give as many "
                            "of each, at least one",
                            one.size(), many.size()));
  }
  HostScaling h;
  h.threads = many.front().threads;
  h.rounds = static_cast<int>(one.size());
  h.runtime = one.front().runtime;
  h.measured_at = many.front().measured_at;
  std::map<std::string, std::vector<double>> ones, manys;
  auto collect = [](const std::vector<NnRating>& runs,
                    std::map<std::string, std::vector<double>>& into) {
    for (const NnRating& r : runs) {
      for (const auto& [graph, ms] : r.host_ms) {
        if (!(ms > 0) || !std::isfinite(ms)) {
          throw Error(fmt::format("host scaling: graph '{}' took {} ms; times must be positive "
                                  "numbers",
                                  graph, ms));
        }
        into[graph].push_back(ms);
      }
    }
  };
  collect(one, ones);
  collect(many, manys);
  for (const auto& [graph, times] : ones) {
    const auto it = manys.find(graph);
    if (it == manys.end()) continue;
    h.one_ms[graph] = detail::median_of(times);
    h.many_ms[graph] = detail::median_of(it->second);
  }
  if (h.one_ms.empty()) {
    throw Error("host scaling: the one- and multi-thread runs have no graph in common; run the "
                "same graphs both ways");
  }
  return h;
}

HostScaling measure_host_scaling(const HostScalingOptions& options) {
  if (options.threads < 2 || options.rounds < 1) {
    throw Error(fmt::format("host scaling: threads {} and rounds {}: give threads >= 2 and "
                            "rounds >= 1",
                            options.threads, options.rounds));
  }
  if (!options.cpus.empty() && options.cpus.size() != static_cast<std::size_t>(options.threads)) {
    throw Error(fmt::format("host scaling: {} CPUs for {} threads; give one CPU per thread",
                            options.cpus.size(), options.threads));
  }
  const auto start = std::chrono::steady_clock::now();
  NnOptions one;
  one.cache = false;  // the rating stays the one the user measured
  one.activations = false;  // times only (a count is an export and a profile more per model)
  one.runtime = options.runtime;
  one.python = options.python;
  one.graphs = options.graphs;
  one.warmup = options.warmup;
  one.loops = options.loops;
  one.timeout = options.timeout;
  NnOptions many = one;
  many.threads = options.threads;
  many.cpus = options.cpus;
  std::vector<NnRating> ones, manys;
  for (int round = 1; round <= options.rounds; ++round) {
    manys.push_back(measure_nn_rating(many));
    // The one thread on the first of the N threads' CPUs.
    one.cpu = manys.back().cpu;
    ones.push_back(measure_nn_rating(one));
    if (options.progress) {
      options.progress(fmt::format("host scaling [{}/{}]: {} graphs with 1 and {} threads",
                                   round, options.rounds, ones.back().host_ms.size(),
                                   options.threads));
    }
  }
  HostScaling h = host_scaling(ones, manys);
  h.cpus = manys.front().cpus;
  h.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // N CPUs of its own hardly make the median graph slower than one: a run that did most likely
  // had the other CPUs taken (ncnn's graphs on this project's host: a median of 0.92 from one
  // thread to two, where quiet runs read 1.39-1.60).
  const double median = h.median_speedup();
  if (median < 1.0) {
    const char* what = options.runtime == "ncnn" ? "graphs" : "models";
    throw Error(fmt::format(
        "host scaling: with {} threads on CPUs {} the {} ran slower than with one (median "
        "speed-up {:.2f} over {} {}): most likely another busy process or a hypervisor's steal "
        "had those CPUs, and the figures would say nothing of a workload's scaling; measure "
        "again when the host is quiet (top's 'st' and 'id' columns show both)",
        h.threads, fmt::join(h.cpus, ","), what, median, h.one_ms.size(), what));
  }
  return h;
}

double workload_scaling(const HostScaling& host, double workload_speedup,
                        std::string_view without_graph) {
  if (!(workload_speedup > 0) || !std::isfinite(workload_speedup)) {
    throw Error(fmt::format("workload scaling: a speed-up of {} from 1 to {} threads; give a "
                            "positive number (its one-thread time / its {}-thread time)",
                            workload_speedup, host.threads, host.threads));
  }
  return std::clamp(workload_speedup / host.median_speedup(without_graph), 0.5, 2.0);
}

}  // namespace edgeprof
