#include "edgeprof/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "edgeprof/error.hpp"
#include "sys/spawn.hpp"
#include "sys/stats.hpp"
#include "sys/text.hpp"

namespace edgeprof {

namespace {

using detail::median_of;

// A figure of every counted run, or nothing when a run failed or lacks it (a phase's figure
// where the workload marked no such phase; the peak memory where the kernel keeps none).
std::optional<std::vector<double>> samples(const RepeatedResult& r, const std::string& name) {
  std::vector<double> out;
  for (const Result& run : r.runs) {
    auto f = figures(run);
    auto it = f.find(name);
    if (it == f.end() || !run.ok()) return std::nullopt;
    out.push_back(it->second);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// A run the row could not rank for: its outcome in the table.
std::string outcome(const ComparisonRow& row, const std::string& metric) {
  if (!row.result.all_ok()) return "FAILED (see its runs)";
  if (row.rank == 0) return fmt::format("ok, but no {} (not ranked)", metric);
  return "ok";
}

}  // namespace

Comparison compare(const std::vector<Workload>& workloads, const std::vector<Device>& devices,
                   const CompareOptions& options, const CompareProgress& progress) {
  if (workloads.empty()) throw Error("compare needs at least one workload");
  if (devices.empty()) throw Error("compare needs at least one device");
  // Before any run: a misspelled figure would rank every workload last, as failed.
  check_figure_name(options.metric, "compare's metric");
  check_figure_name(options.memory_metric, "compare's memory metric");
  // Checked again by rank() and run_repeated(), but only after runs that would then be lost.
  if (!(options.rank.alpha > 0 && options.rank.alpha < 1)) {
    throw Error(fmt::format("compare's rank.alpha must be between 0 and 1, got {}",
                            options.rank.alpha));
  }
  if (options.repeat < 1 || options.warmup < 0) {
    throw Error(fmt::format("compare needs repeat >= 1 and warmup >= 0, got {} and {}",
                            options.repeat, options.warmup));
  }
  const std::int64_t all_runs = (std::int64_t{options.repeat} + options.warmup) *
                                std::int64_t(workloads.size() * devices.size());
  if (all_runs > std::numeric_limits<int>::max()) {
    throw Error(fmt::format("compare would make {} runs, more than an int counts", all_runs));
  }
  std::set<std::string> names;
  for (const Workload& w : workloads) {
    if (!names.insert(w.name).second) {
      throw Error(fmt::format("two workloads are named '{}': names must be unique", w.name));
    }
    // A program that is not there failed its first run, after every pair before it had run
    // (the comparison then lost).
    detail::check_runnable(w.command);
  }
  const std::uint64_t host_memory = host_facts().memory_bytes;
  std::set<std::string> device_names;
  for (const Device& d : devices) {
    if (!device_names.insert(d.name).second) {
      throw Error(fmt::format("device '{}' is given twice", d.name));
    }
    d.validate();
    // As the plan refuses it (plan_emulation()), but before the devices before it ran.
    if (host_memory && d.memory_bytes > host_memory) {
      throw UnsupportedError(fmt::format(
          "device '{}' has {} of memory but this host has only {}: the limit could never be "
          "reached, so out-of-memory behaviour would not be emulated; compare it on a larger "
          "host, or leave it out",
          d.name, format_size(d.memory_bytes), format_size(host_memory)));
    }
    // Projected by name: a device whose tables cannot be projected is refused before any run,
    // not after the devices before it ran (auto makes it pooled instead).
    if (options.run.slice.plan.cores == CoreEmulation::projected && d.cores > 1) {
      project_threads(d);
    }
    // The nn speed asked for by name: a device without one is refused now, not after the
    // devices before it ran (automatic takes the integer speed there instead).
    if (options.run.slice.plan.speed_kind == SpeedKind::nn) {
      for_speed_kind(with_measured_nn(d, options.run.slice.plan), SpeedKind::nn);
    }
  }
  Comparison out;
  out.options = options;
  const int total = static_cast<int>(all_runs);
  int done = 0;
  for (const Device& device : devices) {
    std::vector<ComparisonRow> rows;
    for (const Workload& w : workloads) {
      ComparisonRow row;
      row.workload = w.name;
      row.device = device.name;
      row.result = run_repeated(w.command, device, options.repeat, options.warmup, options.run,
                                [&](int, int, bool, const Result& r) {
                                  ++done;
                                  if (progress) progress(done, total, w.name, device.name, r);
                                });
      rows.push_back(std::move(row));
    }
    // Rank the workloads whose runs all succeeded and have the metric; the others are not
    // ranked (rank 0) and come last. The memory figure is not needed to rank: a kernel that
    // keeps no peak (cgroup v2 before Linux 5.19) left every workload unranked.
    std::vector<RankItem> items;
    std::vector<size_t> ranked_rows;
    for (size_t i = 0; i < rows.size(); ++i) {
      auto v = samples(rows[i].result, options.metric);
      auto m = samples(rows[i].result, options.memory_metric);
      rows[i].value = v ? median_of(*v) : std::nan("");
      rows[i].memory = m ? median_of(*m) : std::nan("");
      if (v) {
        items.push_back({rows[i].workload, *v});
        ranked_rows.push_back(i);
      }
    }
    std::vector<ComparisonRow> ordered;
    if (!items.empty()) {
      // The front of the rows with both figures, the metric in the rank's direction (a
      // throughput is better higher), memory lower; none where no row has the memory figure.
      std::vector<size_t> both;
      std::vector<std::vector<double>> metrics(2);
      for (size_t i : ranked_rows) {
        if (std::isnan(rows[i].memory)) continue;
        both.push_back(i);
        metrics[0].push_back(rows[i].value);
        metrics[1].push_back(rows[i].memory);
      }
      if (!both.empty()) {
        const auto front = pareto_front(metrics, {options.rank.higher_is_better, false});
        for (size_t k = 0; k < both.size(); ++k) rows[both[k]].pareto = front[k];
      }
      for (const RankedItem& r : rank(items, options.rank)) {
        ComparisonRow& row = rows[ranked_rows[r.index]];
        row.rank = r.rank;
        row.tied = r.tied;
        ordered.push_back(std::move(row));
      }
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      if (std::find(ranked_rows.begin(), ranked_rows.end(), i) != ranked_rows.end()) continue;
      rows[i].rank = 0;
      rows[i].tied = false;
      ordered.push_back(std::move(rows[i]));
    }
    if (!options.projected_target.empty()) {
      for (ComparisonRow& row : ordered) {
        if (row.result.runs.empty() || std::isnan(row.value)) continue;
        auto cal = find_calibration(options.calibrations, row.device, options.projected_target,
                                    row.workload,
                                    to_string(row.result.runs.front().plan.core_emulation()));
        if (!cal) continue;
        // The run whose metric is the median (the lower middle one for an even count).
        std::vector<std::pair<double, size_t>> by;
        for (size_t i = 0; i < row.result.runs.size(); ++i) {
          by.push_back({figure(row.result.runs[i], options.metric), i});
        }
        std::sort(by.begin(), by.end());
        row.projected = project(*cal, row.result.runs[by[(by.size() - 1) / 2].second]);
      }
    }
    for (ComparisonRow& row : ordered) out.rows.push_back(std::move(row));
  }
  return out;
}

std::string to_text(const Comparison& c) {
  std::string out;
  std::string device;
  const bool projected = std::any_of(c.rows.begin(), c.rows.end(),
                                     [](const ComparisonRow& r) { return r.projected; });
  // A device whose runs were one of its cores, projected: said on its line, with the figures
  // the projection made (one core's time / the board's speed-up) rather than measured.
  // An estimated figure (an energy) is said so on every device's line.
  const auto made = [&](const ComparisonRow& row) {
    if (row.result.runs.empty()) return std::string();
    const Result& first = row.result.runs.front();
    std::vector<std::string> projected_names, estimated_names, sampled_names;
    for (const std::string& name : {c.options.metric, c.options.memory_metric}) {
      const std::string how = figure_provenance(first, name);
      if (how == "projected") projected_names.push_back(name);
      if (how == "estimated") estimated_names.push_back(name);
      if (how == "sampled") sampled_names.push_back(name);
    }
    std::vector<std::string> parts;
    if (first.plan.threads_projection) {
      const int cores = first.plan.threads_projection->threads;
      parts.push_back(
          !projected_names.empty()
              ? fmt::format("{} projected from one of its {} cores",
                            fmt::join(projected_names, ", "), cores)
              : fmt::format("one of its {} cores ran{}", cores,
                            estimated_names.empty() && sampled_names.empty() ? ", measured"
                                                                             : ""));
    }
    if (!estimated_names.empty()) {
      parts.push_back(fmt::format("{} estimated", fmt::join(estimated_names, ", ")));
    }
    if (!sampled_names.empty()) {
      parts.push_back(fmt::format("{} sampled", fmt::join(sampled_names, ", ")));
    }
    return parts.empty() ? std::string() : fmt::format(" ({})", fmt::join(parts, "; "));
  };
  for (const ComparisonRow& r : c.rows) {
    if (r.device != device) {
      device = r.device;
      out += fmt::format("\n{} (emulated), {} run{} each{}; ranked by median {}{} (ties: {} at "
                         "{:g})\n",
                         device, c.options.repeat, c.options.repeat == 1 ? "" : "s",
                         c.options.warmup ? fmt::format(" after {} warm-up", c.options.warmup)
                                          : "",
                         c.options.metric, made(r),
                         c.options.rank.test == RankTest::welch ? "Welch t test"
                                                                : "Mann-Whitney U test",
                         c.options.rank.alpha);
      out += fmt::format("{:>6}  {:<24} {:>18} {:>18} {:>7}{}  outcome\n", "rank", "workload",
                         c.options.metric, c.options.memory_metric, "pareto",
                         projected ? fmt::format(" {:>26}", c.options.projected_target) : "");
    }
    const std::string rank_text =
        r.rank == 0 ? std::string("-") : fmt::format("{}{}", r.rank, r.tied ? "=" : "");
    // A size where the metric is one and the value fits (a phase's net peak may be negative).
    const std::string_view metric = c.options.memory_metric;
    const bool size = is_size_figure(metric) && std::fabs(r.memory) <= 0x1p64;
    const std::string memory = std::isnan(r.memory) ? "n/a"
                               : size               ? format_signed_size(r.memory)
                                                    : fmt::format("{:.6g}", r.memory);
    std::string proj;
    if (projected) {
      proj = r.projected ? fmt::format(" {:>12.4g} [{:.3g}, {:.3g}]", r.projected->estimate,
                                       r.projected->low, r.projected->high)
                         : fmt::format(" {:>26}", "n/a");
    }
    out += fmt::format("{:>6}  {:<24} {:>18} {:>18} {:>7}{}  {}\n", rank_text, r.workload,
                       std::isnan(r.value) ? std::string("n/a") : fmt::format("{:.6g}", r.value),
                       memory, r.pareto ? "yes" : "", proj,
                       outcome(r, c.options.metric));
  }
  out += fmt::format("\n{} and {}: medians, measured where a device's line does not say "
                     "projected or estimated; '=' marks workloads the test cannot separate, "
                     "'-' a workload not ranked{}\n",
                     c.options.metric, c.options.memory_metric,
                     projected ? "; projected: the calibration's estimate [95% interval]" : "");
  return detail::printable_lines(out);
}

namespace {

// Refused whatever the run's outcome: a typo or a bad limit was found only once a trial
// succeeded (a failed run skipped every check).
void check_budget_inputs(const Budget& budget) {
  check_figure_name(budget.latency_figure, "score's latency figure");
  check_figure_name(budget.memory_figure, "score's memory figure");
  for (const auto& [limit, what] : {std::pair{budget.latency_s, "latency"},
                                    std::pair{budget.memory_bytes, "memory"}}) {
    if (limit && !(*limit > 0 && std::isfinite(*limit))) {
      throw Error(fmt::format("score's {} limit is {}: give a positive, finite limit (or none)",
                              what, *limit));
    }
  }
}

// The limits checked against s's figures (or predictions): fits and penalty.
void check_limits(Score& s, const Budget& budget) {
  s.fits = s.ok;
  if (budget.latency_s && s.ok) {
    s.latency_check = s.latency_prediction ? check_budget(*s.latency_prediction, *budget.latency_s)
                                           : check_budget(s.latency, *budget.latency_s);
    // A projection's check says "projected"; a figure's says how the figure was obtained (a
    // sampled or projected figure was checked as "measured").
    if (!s.latency_prediction) s.latency_check->provenance = s.latency_provenance;
    s.fits = s.fits && s.latency_check->fits;
    s.penalty += std::max(0.0, -s.latency_check->margin_fraction);
  }
  if (budget.memory_bytes && s.ok) {
    s.memory_check = s.memory_prediction ? check_budget(*s.memory_prediction, *budget.memory_bytes)
                                         : check_budget(s.memory, *budget.memory_bytes);
    if (!s.memory_prediction) s.memory_check->provenance = s.memory_provenance;
    s.fits = s.fits && s.memory_check->fits;
    s.penalty += std::max(0.0, -s.memory_check->margin_fraction);
  }
}

// A figure of a run: figure() throws, naming the figures there are, for one it lacks.
double figure_of(const Result& run, const std::map<std::string, double>& f,
                 const std::string& name) {
  auto it = f.find(name);
  return it == f.end() ? figure(run, name) : it->second;
}

// Whether a score needs its figure of the run: unless a calibration projects it instead, to
// check its limit, or when no limit is given (a multi-objective search reads both figures).
bool needs_figure(const Budget& budget, const std::optional<double>& limit,
                  const std::optional<Calibration>& c) {
  return !c && (limit || (!budget.latency_s && !budget.memory_bytes));
}

// The figure `get` gives; NaN where the run lacks it and nothing needs it (the peak where the
// kernel keeps none, cgroup v2 before Linux 5.19, failed every trial of a latency-only budget).
template <class Get>
double unless_unneeded(bool needed, Get get) {
  if (needed) return get();
  try {
    return get();
  } catch (const Error&) {
    return std::nan("");
  }
}

// Latency and memory through their calibrations, where given, then the limits: the last step of
// either score(), `predict` giving a calibration's prediction for the run or runs scored.
template <class Predict>
void project_and_check(Score& s, const Budget& budget,
                       const std::optional<Calibration>& latency_calibration,
                       const std::optional<Calibration>& memory_calibration, Predict predict) {
  for (auto [calibration, figure, prediction, provenance] :
       {std::tuple{&latency_calibration, &s.latency, &s.latency_prediction, &s.latency_provenance},
        std::tuple{&memory_calibration, &s.memory, &s.memory_prediction, &s.memory_provenance}}) {
    if (*calibration && s.ok) {
      *prediction = predict(**calibration);
      *figure = (*prediction)->estimate;
      *provenance = "projected";
    }
  }
  check_limits(s, budget);
}

}  // namespace

Score score(const Result& result, const Budget& budget,
            const std::optional<Calibration>& latency_calibration,
            const std::optional<Calibration>& memory_calibration) {
  check_budget_inputs(budget);
  Score s;
  s.ok = result.ok();
  const auto f = figures(result);
  // A failed run's figures measure the failure (the time to a crash, an OOM kill or the
  // timeout), not the workload: NaN, which an HPO search records as a failed trial (its
  // figures went into Optuna's front as real ones).
  if (s.ok) {
    s.latency = unless_unneeded(needs_figure(budget, budget.latency_s, latency_calibration),
                                [&] { return figure_of(result, f, budget.latency_figure); });
    s.memory = unless_unneeded(needs_figure(budget, budget.memory_bytes, memory_calibration),
                               [&] { return figure_of(result, f, budget.memory_figure); });
  } else {
    s.latency = s.memory = std::nan("");
  }
  // A projected_* figure, or an all_cores_* one of a projected run, is a one-core time
  // projected to all the device's cores. (A NaN figure is neither.)
  s.latency_provenance =
      std::isnan(s.latency) ? "" : figure_provenance(result, budget.latency_figure);
  s.memory_provenance = std::isnan(s.memory) ? "" : figure_provenance(result, budget.memory_figure);
  project_and_check(s, budget, latency_calibration, memory_calibration,
                    [&](const Calibration& c) { return project(c, result); });
  return s;
}

Score score(const RepeatedResult& runs, const Budget& budget,
            const std::optional<Calibration>& latency_calibration,
            const std::optional<Calibration>& memory_calibration) {
  check_budget_inputs(budget);
  if (runs.runs.empty()) {
    throw Error("score: this RepeatedResult holds no runs; score a run_repeated() result");
  }
  Score s;
  s.ok = runs.all_ok();
  s.latency = s.memory = std::nan("");
  if (!s.ok) {
    check_limits(s, budget);
    return s;
  }
  std::vector<std::map<std::string, double>> f;
  for (const Result& run : runs.runs) f.push_back(figures(run));
  const auto which = [&](std::size_t i) {
    return fmt::format("score: run {} of {}", i + 1, runs.runs.size());
  };
  // The median over the runs of each figure named: finite in every run (a NaN has no place
  // in an order), or an Error naming the run.
  const auto median = [&](const std::string& name) {
    std::vector<double> values;
    for (std::size_t i = 0; i < runs.runs.size(); ++i) {
      double v = 0;
      try {
        v = figure_of(runs.runs[i], f[i], name);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", which(i), e.what()));
      }
      if (!std::isfinite(v)) {
        throw Error(fmt::format("{}: its {} is {}, which has no median with the others; score "
                                "the runs that have it, or another figure",
                                which(i), name, v));
      }
      values.push_back(v);
    }
    return median_of(std::move(values));
  };
  // Through a calibration: each run checked as project() checks it, the prediction at the
  // median of each feature.
  const auto projected = [&](const Calibration& c) {
    for (std::size_t i = 0; i < runs.runs.size(); ++i) {
      try {
        project(c, runs.runs[i]);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", which(i), e.what()));
      }
    }
    std::vector<double> x;
    for (const std::string& feature : c.projection.features()) x.push_back(median(feature));
    return c.projection.predict(x);
  };
  const Result& first = runs.runs.front();
  s.latency = unless_unneeded(needs_figure(budget, budget.latency_s, latency_calibration),
                              [&] { return median(budget.latency_figure); });
  s.memory = unless_unneeded(needs_figure(budget, budget.memory_bytes, memory_calibration),
                             [&] { return median(budget.memory_figure); });
  s.latency_provenance =
      std::isnan(s.latency) ? "" : figure_provenance(first, budget.latency_figure);
  s.memory_provenance = std::isnan(s.memory) ? "" : figure_provenance(first, budget.memory_figure);
  project_and_check(s, budget, latency_calibration, memory_calibration, projected);
  return s;
}

}  // namespace edgeprof
