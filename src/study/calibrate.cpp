// Core speed calibrated from workloads measured on the real device (docs/calibrate-speed.md).
#include "edgeprof/calibrate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "edgeprof/error.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/rank.hpp"
#include "edgeprof/result.hpp"
#include "study/calibrate_detail.hpp"
#include "sys/text.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

SpeedModel fit_speed_model(const std::vector<std::pair<double, double>>& points) {
  std::set<double> speeds;
  for (const auto& [s, v] : points) {
    if (!(s > 0) || !(v > 0) || !std::isfinite(s) || !std::isfinite(v)) {
      throw Error(fmt::format("cannot fit a speed model to the point (speed {}, value {}): both "
                              "must be positive",
                              s, v));
    }
    speeds.insert(s);
  }
  if (speeds.size() < 2) {
    throw Error(fmt::format("cannot fit value = a / speed + b to {} distinct speed{}: it takes "
                            "at least two",
                            speeds.size(), speeds.size() == 1 ? "" : "s"));
  }
  // Linear least squares in x = 1 / speed.
  double mx = 0, my = 0;
  for (const auto& [s, v] : points) {
    mx += 1.0 / s;
    my += v;
  }
  mx /= double(points.size());
  my /= double(points.size());
  double sxx = 0, sxy = 0;
  for (const auto& [s, v] : points) {
    sxx += (1.0 / s - mx) * (1.0 / s - mx);
    sxy += (1.0 / s - mx) * (v - my);
  }
  SpeedModel m;
  m.a = sxy / sxx;
  m.b = my - m.a * mx;
  return m;
}

double solve_core_speed(const std::vector<SpeedModel>& models, const std::vector<double>& targets,
                        double lo, double hi) {
  if (models.size() != targets.size()) {
    throw Error(fmt::format("solve_core_speed: {} models but {} targets", models.size(),
                            targets.size()));
  }
  // An infinite end made the grid's every point inf or NaN: the answer was inf or NaN.
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) {
    throw Error(fmt::format("solve_core_speed: the range [{}, {}] is not a finite positive "
                            "interval",
                            lo, hi));
  }
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < models.size(); ++i) {
    if (!(targets[i] > 0) || !std::isfinite(targets[i])) {
      throw Error(fmt::format("solve_core_speed: target {} is {}; targets must be positive and "
                              "finite",
                              i, targets[i]));
    }
    if (!std::isfinite(models[i].a) || !std::isfinite(models[i].b)) {
      throw Error(fmt::format("solve_core_speed: model {} (a = {}, b = {}) is not finite", i,
                              models[i].a, models[i].b));
    }
    if (models[i].a > 0) used.push_back(i);
  }
  if (used.empty()) {
    throw Error("no workload's figure depends on the core speed (each fit has a <= 0): the "
                "workloads cannot calibrate it; use CPU-bound ones");
  }
  // The objective in u = ln s; a model that predicts a value <= 0 is infinitely wrong.
  auto cost = [&](double u) {
    const double s = std::exp(u);
    double c = 0;
    for (std::size_t i : used) {
      const double v = models[i].at(s);
      if (!(v > 0)) return std::numeric_limits<double>::infinity();
      const double e = std::log(v / targets[i]);
      c += e * e;
    }
    return c;
  };
  // A grid, then golden-section search around its best point: the objective need not be
  // unimodal across models, but between two grid points it is smooth.
  const double ulo = std::log(lo), uhi = std::log(hi);
  constexpr int kGrid = 400;
  double best_u = ulo, best_c = cost(ulo);
  for (int k = 1; k <= kGrid; ++k) {
    const double u = ulo + (uhi - ulo) * k / kGrid;
    const double c = cost(u);
    if (c < best_c) best_c = c, best_u = u;
  }
  const double step = (uhi - ulo) / kGrid;
  double a = std::max(ulo, best_u - step), b = std::min(uhi, best_u + step);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double c1 = cost(x1), c2 = cost(x2);
  for (int it = 0; it < 100 && b - a > 1e-12; ++it) {
    if (c1 <= c2) {
      b = x2, x2 = x1, c2 = c1;
      x1 = b - g * (b - a), c1 = cost(x1);
    } else {
      a = x1, x1 = x2, c1 = c2;
      x2 = a + g * (b - a), c2 = cost(x2);
    }
  }
  const double u = (a + b) / 2;
  return std::exp(cost(u) <= best_c ? u : best_u);
}

namespace {

// A speed calibrated here is the one to emulate: not to be replaced by the device's nn speed,
// nor by a runtime's speed that a run follows when its workload loads the runtime.
void forget_nn(Device& d) {
  d.nn.reset();
  d.nn_ms.clear();
  d.nn_precision.clear();
  d.nn_threads_ms.clear();  // a file keeps them only beside nn_ms
  d.runtime_ms.clear();
  d.speed_kind.clear();
  d.sources.erase("nn");
  d.sources.erase("runtimes");
  // A probed device's vector score: loaded again, its file's gave it an nn speed, which auto
  // emulated in place of the calibrated one. The other scores are kept (measured).
  if (d.scores) {
    d.scores->vector = 0;
    d.scores->vector_unit.clear();
    d.scores->vector_kernel.clear();
    d.scores->spread.erase("vector");
  }
  d.nn_missing = "the core speed was calibrated against the device";
}

}  // namespace

namespace detail {

PeriodRun::PeriodRun(const std::vector<DeviceMeasurement>& workloads, int cores, double lo,
                     double hi, MeasureAtSpeed measure, std::function<void()> on_round,
                     std::string figure)
    : workloads_(workloads), cores_(cores), lo_(lo), hi_(hi), measure_(std::move(measure)),
      on_round_(std::move(on_round)), figure_(std::move(figure)) {}

PeriodSpeedFit PeriodRun::operator()(const std::vector<double>& speeds) {
  PeriodSpeedFit fit;
  fit.workloads.resize(workloads_.size());
  for (std::size_t i = 0; i < workloads_.size(); ++i) {
    fit.workloads[i].name = workloads_[i].name;
    fit.workloads[i].device_value = workloads_[i].device_value;
  }
  for (double s : speeds) measure_all(s, fit);
  // Verify at the solved speed; when the new points move the solution by more than 2%,
  // measure there once more. The residuals are those of the last speed measured.
  Solution solution = solve(fit);
  measure_all(solution.speed, fit);
  Solution again = solve(fit);
  if (std::abs(again.speed / solution.speed - 1) > 0.02) {
    solution = std::move(again);
    measure_all(solution.speed, fit);
  }
  // The models and flags of the solution reported: the second solve's, kept beside the
  // first's speed, left a workload at the 5% edge out of a solution that used it.
  for (std::size_t i = 0; i < fit.workloads.size(); ++i) {
    fit.workloads[i].model = solution.models[i];
    fit.workloads[i].speed_sensitive = solution.sensitive[i];
  }
  const double speed = solution.speed;
  fit.core_speed = speed;
  // Of the speed reported (a cap the first solution hit and the second did not is not this
  // speed's) and of the workloads its solution used.
  if (speed >= hi_ * 0.999) {
    // Below 1 the cap is the host's CPUs shared by more device cores, not a host core's speed.
    fit.notes.push_back(
        hi_ >= 1 ? fmt::format("the device's workloads call for a core speed at or above 1, a "
                               "host core's: the device is as fast as this host or faster, and "
                               "the speed is capped there")
                 : fmt::format("the device's workloads call for a core speed at or above "
                               "{:.4g}, the fastest this host's CPUs can give each of {} device "
                               "cores: the speed is capped there, and the emulated device is "
                               "slower than the real one",
                               hi_, cores_));
    // A workload whose figure at any speed is above the device's: no speed matches it.
    for (std::size_t i = 0; i < fit.workloads.size(); ++i) {
      const WorkloadSpeedFit& w = fit.workloads[i];
      if (solution.sensitive[i] && w.model.b >= w.device_value) {
        fit.notes.push_back(fmt::format(
            "workload '{}' takes {:.4g} here even at unbounded speed, more than the device's "
            "{:.4g}: no core speed matches it; is the device's figure of the same scope (a "
            "phase against the whole run, a warm run against a cold one)?",
            w.name, w.model.b, w.device_value));
      }
    }
  }
  if (speed <= lo_ * 1.001 && lo_ < hi_) {
    fit.notes.push_back(fmt::format(
        "the speed hit the lower bound {:.4g} of a host core: check that the device's figures "
        "are in the figure's unit (seconds, not milliseconds) and of the same scope",
        lo_));
  }
  for (const WorkloadSpeedFit& w : fit.workloads) {
    if (!w.speed_sensitive) {
      fit.notes.push_back(fmt::format("workload '{}' hardly depends on the CPU speed (under 5% "
                                      "of its figure): left out of the solution, its residual "
                                      "still reported",
                                      w.name));
    }
  }
  double sum = 0;
  for (WorkloadSpeedFit& w : fit.workloads) {
    w.emulated = w.points.back().second;
    w.residual = w.emulated / w.device_value - 1;
    sum += w.residual * w.residual;
  }
  fit.rms_residual = std::sqrt(sum / double(fit.workloads.size()));
  fit.period_us = period_us_;
  if (periods_seen_.size() > 1) {
    std::vector<double> ms;
    for (std::uint64_t p : periods_seen_) ms.push_back(double(p) / 1000);
    fit.notes.push_back(fmt::format(
        "the runs at this period ran at CFS periods of {} ms: the plan lengthens the period "
        "where a speed's quota would be under a millisecond",
        fmt::join(ms, ", ")));
  }
  return fit;
}

void PeriodRun::measure_all(double speed, PeriodSpeedFit& fit) {
  if (on_round_) on_round_();
  for (std::size_t i = 0; i < workloads_.size(); ++i) {
    const SpeedSample m = measure_(workloads_[i], speed);
    period_us_ = m.period_us;
    periods_seen_.insert(m.period_us);
    fit.workloads[i].points.emplace_back(speed, m.value);
  }
}

PeriodRun::Solution PeriodRun::solve(const PeriodSpeedFit& fit) const {
  Solution out;
  std::vector<SpeedModel> models;
  std::vector<double> targets;
  for (const WorkloadSpeedFit& w : fit.workloads) {
    const SpeedModel m = fit_speed_model(w.points);
    // Sensitive when the speed-dependent part is at least 5% of the value at the slowest
    // speed measured: a sleep's fit has a small a of either sign from noise alone.
    double slowest = w.points.front().first;
    for (const auto& pt : w.points) slowest = std::min(slowest, pt.first);
    const bool sensitive = m.a > 0 && m.a / slowest >= kSensitiveShare * m.at(slowest);
    out.models.push_back(m);
    out.sensitive.push_back(sensitive);
    if (sensitive) {
      models.push_back(m);
      targets.push_back(w.device_value);
    }
  }
  if (models.empty()) {
    throw Error(fmt::format(
        "no workload's {} depends on the core speed (in none is the part that scales with 1 / "
        "speed 5% of the figure at the slowest speed measured): the workloads cannot calibrate "
        "it; use CPU-bound workloads and a figure that grows as the CPU slows (wall_time_s or "
        "a phase's wall time, not cpu_time_s, which a quota does not change)",
        figure_));
  }
  out.speed = solve_core_speed(models, targets, lo_, hi_);
  return out;
}

}  // namespace detail

SpeedCalibration calibrate_speed(const Device& device,
                                 const std::vector<DeviceMeasurement>& workloads,
                                 const SpeedFitOptions& options,
                                 const SpeedFitProgress& progress) {
  device.validate();
  if (workloads.empty()) throw DeviceError("calibrate_speed: give at least one workload");
  if (options.run.slice.plan.speed_kind == SpeedKind::nn) {
    // Each run is at a core speed the calibration tries: the plan was refused at the first
    // run, saying the device had no nn speed.
    throw DeviceError("calibrate_speed: speed_kind nn (--speed-kind nn or --runtime on the "
                      "command line) cannot apply: the calibration runs the device at the core "
                      "speeds it tries; leave them out");
  }
  check_figure_name(options.figure, "calibrate_speed's figure");
  std::set<std::string> seen;
  for (const DeviceMeasurement& w : workloads) {
    // Two under one name are one row of the fit's table, and one device figure lost to the CLI.
    if (!seen.insert(w.name).second) {
      throw DeviceError(fmt::format("calibrate_speed: two workloads are named '{}': names must "
                                    "be unique", detail::printable(w.name)));
    }
    if (!(w.device_value > 0) || !std::isfinite(w.device_value)) {
      throw DeviceError(fmt::format("calibrate_speed: workload '{}' has device value {}; it "
                                    "must be the positive {} measured on the device",
                                    w.name, w.device_value, options.figure));
    }
    if (w.command.argv.empty()) {
      throw DeviceError(fmt::format("calibrate_speed: workload '{}' has no command", w.name));
    }
  }
  // Its scaling comes from the device's published CNN times, which a calibrated speed replaces
  // (every run would have been refused, "cannot be projected from one core").
  if (options.run.slice.plan.cores == CoreEmulation::projected && device.cores > 1) {
    throw DeviceError(fmt::format(
        "calibrate_speed: core emulation 'projected' cannot be calibrated: its scaling from one "
        "core to {}'s {} comes from the device's published CNN inference times, and a core "
        "speed calibrated here replaces them; calibrate with core emulation 'pooled' (what "
        "'auto' runs a calibrated device as) or 'per-core'",
        device.name, device.cores));
  }
  const bool all_cores = options.figure.find("all_cores_") != std::string::npos;
  if (options.run.slice.plan.cores == CoreEmulation::projected && !all_cores &&
      options.figure.find("projected_") == std::string::npos) {
    throw DeviceError(fmt::format(
        "calibrate_speed: core emulation 'projected' runs one device core and projects to all "
        "of them, so figure '{}' is the one core's; calibrate with a figure of all its cores "
        "(all_cores_wall_time_s, phase.NAME.all_cores_wall_time_s) or another core emulation",
        options.figure));
  }
  if (options.run.slice.plan.cores == CoreEmulation::automatic &&
      options.figure.find("projected_") != std::string::npos) {
    throw DeviceError(fmt::format(
        "calibrate_speed: core emulation 'auto' projects only a device at its nn speed, and a "
        "calibrated core speed is emulated as such, pooled: figure '{}' would be missing from "
        "every run; calibrate all_cores_wall_time_s (projected or measured, whichever ran)",
        options.figure));
  }
  if (options.repeat < 1) {
    throw DeviceError(fmt::format("calibrate_speed: repeat = {}; it must be at least 1",
                                  options.repeat));
  }
  // Each period before any run (a bad second one was refused after the first one's runs).
  for (std::size_t i = 0; i < options.periods_us.size(); ++i) {
    const std::uint64_t p = options.periods_us[i];
    if (p != kChosenCpuPeriod && (p < kMinCpuPeriodUs || p > kMaxCpuPeriodUs)) {
      throw DeviceError(fmt::format("calibrate_speed: periods_us[{}] = {} is out of range: the "
                                    "kernel accepts {} to {} us (or 0: as the plan says)",
                                    i, p, kMinCpuPeriodUs, kMaxCpuPeriodUs));
    }
  }
  // The fastest speed the plan accepts: the device's cores on at most as many host CPUs.
  const std::size_t host_cpus = options.run.slice.plan.cpus.empty()
                                    ? host_facts().cpus.size()
                                    : options.run.slice.plan.cpus.size();
  const double hi =
      double(std::min<std::size_t>(std::size_t(device.cores), host_cpus)) / device.cores;
  const double lo = std::min(0.01, hi);
  std::vector<double> speeds = options.speeds;
  if (speeds.empty()) speeds = {hi, hi / 3};
  for (double s : speeds) {
    if (!(s > 0 && s <= hi)) {
      throw DeviceError(fmt::format("calibrate_speed: speed {} is outside (0, {:.4g}], what "
                                    "this host can emulate for {} cores",
                                    s, hi, device.cores));
    }
  }
  if (std::set<double>(speeds.begin(), speeds.end()).size() < 2) {
    throw DeviceError("calibrate_speed: give at least two distinct speeds to measure at");
  }

  SpeedCalibration out;
  std::vector<std::uint64_t> periods = options.periods_us;
  if (periods.empty()) periods.push_back(0);  // 0: as options.run.slice.plan says
  // Every run known from the start: each speed asked and the check at the solution, per
  // period; a period whose check moves the solution by more than 2% adds a round. (The total
  // grew as rounds began: the first progress line said [1/2] of a dozen runs.)
  const int per_round = int(workloads.size()) * options.repeat;
  int done = 0, planned = int(periods.size()) * int(speeds.size() + 1) * per_round;
  for (std::uint64_t p : periods) {
    RunOptions run = options.run;
    // The calibration runs at the speeds it measures: a count of the workload's activations
    // must not set another (PlanOptions::count_activations).
    run.slice.plan.count_activations = false;
    if (p) {
      run.slice.plan.cpu_period_us = p;
      run.slice.plan.iteration_time_us = 0;
    }
    // Each workload `repeat` times under emulation at the speed; their median.
    const auto measure = [&](const DeviceMeasurement& w, double speed) {
      Device d = device;
      d.core_speed = speed;
      d.speed_schedule.clear();
      forget_nn(d);
      std::vector<double> values;
      detail::SpeedSample sample;
      for (int k = 0; k < options.repeat; ++k) {
        const Result r = edgeprof::run(w.command, d, run);
        if (!r.ok()) {
          throw Error(fmt::format(
              "calibrating {}: workload '{}' failed at core speed {:.4f}: {}; every workload "
              "must succeed under emulation (more memory? a longer timeout?)",
              device.name, w.name, speed, exit_text(r)));
        }
        double value = 0;
        try {
          value = figure(r, options.figure);
        } catch (const Error& e) {
          throw Error(fmt::format("calibrating {}: workload '{}' at core speed {:.4f}: {}",
                                  device.name, w.name, speed, e.what()));
        }
        // A 0 (no throttling at full speed, an empty phase) or NaN cannot be fitted as
        // a / speed + b, nor be a residual: the fit failed naming no workload, or a NaN rms
        // residual spoiled the choice of period.
        if (!(value > 0) || !std::isfinite(value)) {
          throw Error(fmt::format(
              "calibrating {}: workload '{}' gave {} = {} at core speed {:.4f}; the figure must "
              "be positive and finite in every run: choose a figure the workload always has "
              "(wall_time_s, a phase it always runs)",
              device.name, w.name, options.figure, value, speed));
        }
        values.push_back(value);
        sample.period_us = r.plan.cpu_period_us;
        ++done;
        if (progress) progress(done, planned, w.name, speed, sample.period_us);
      }
      sample.value = detail::median_of(std::move(values));
      return sample;
    };
    std::size_t round = 0;
    detail::PeriodRun calibrate(workloads, device.cores, lo, hi, measure, [&] {
      if (++round > speeds.size() + 1) planned += per_round;
    }, options.figure);
    out.periods.push_back(calibrate(speeds));
  }
  const auto best = std::min_element(
      out.periods.begin(), out.periods.end(),
      [](const PeriodSpeedFit& a, const PeriodSpeedFit& b) { return a.rms_residual < b.rms_residual; });
  out.chosen = static_cast<std::size_t>(best - out.periods.begin());
  out.core_speed = best->core_speed;
  out.period_us = best->period_us;
  out.rms_residual = best->rms_residual;
  // The chosen period's: another period's cap or left-out workload is not this speed's.
  out.notes = best->notes;
  for (const WorkloadSpeedFit& w : best->workloads) {
    out.max_abs_residual = std::max(out.max_abs_residual, std::abs(w.residual));
  }
  out.device = device;
  out.device.core_speed = out.core_speed;
  forget_nn(out.device);
  // The calibrated speed is this host's own: not derived from the reference core.
  out.device.reference_speed.reset();
  out.device.host_reference_speed.reset();
  out.device.sources.erase("reference_speed");
  out.device.origin.clear();
  std::vector<std::string> names;
  // Escaped: a device's text holds no control characters (validate() would refuse the device).
  for (const DeviceMeasurement& w : workloads) names.push_back(detail::printable(w.name));
  out.device.sources["core_speed"] = FigureSource{
      "measured",
      fmt::format("calibrated by edgeprof from {} workload{} measured on the device ({}), "
                  "{} against this host at a {:g} ms CFS period: rms residual {:.1f}%, largest "
                  "{:.1f}%",
                  workloads.size(), workloads.size() == 1 ? "" : "s", fmt::join(names, ", "),
                  options.figure, double(out.period_us) / 1000, 100 * out.rms_residual,
                  100 * out.max_abs_residual)};
  return out;
}

std::string to_text(const SpeedCalibration& c) {
  std::string s = fmt::format(
      "core speed    {:.4f} of one host core at a {:g} ms period   calibrated from measured runs\n"
      "residual      rms {:.1f}%, largest {:.1f}%   measured: emulated / device - 1 at that speed\n",
      c.core_speed, double(c.period_us) / 1000, 100 * c.rms_residual, 100 * c.max_abs_residual);
  for (std::size_t i = 0; i < c.periods.size(); ++i) {
    const PeriodSpeedFit& p = c.periods[i];
    // By index: two candidates can resolve to one period and one capped speed ("0" and "10").
    const bool chosen = i == c.chosen;
    s += fmt::format("\nperiod {:g} ms{}: speed {:.4f}, rms residual {:.1f}%\n",
                     double(p.period_us) / 1000, chosen ? " (chosen)" : "", p.core_speed,
                     100 * p.rms_residual);
    s += fmt::format("  {:<20} {:>12} {:>12} {:>9}   fit (value = a / speed + b)\n", "workload",
                     "device", "emulated", "residual");
    for (const WorkloadSpeedFit& w : p.workloads) {
      s += fmt::format("  {:<20} {:>12.4g} {:>12.4g} {:>+8.1f}%   a = {:.4g}, b = {:.4g}{}\n",
                       w.name, w.device_value, w.emulated, 100 * w.residual, w.model.a, w.model.b,
                       w.speed_sensitive ? "" : " (not CPU-bound: left out)");
    }
  }
  for (const std::string& n : c.notes) s += "note          " + n + "\n";
  return detail::printable_lines(s);
}

}  // namespace edgeprof
