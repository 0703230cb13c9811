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
  d.runtime_ms.clear();
  d.speed_kind.clear();
  d.sources.erase("nn");
  d.sources.erase("runtimes");
  d.nn_missing = "the core speed was calibrated against the device";
}


// The share of a workload's figure, at the slowest speed measured, that must scale with 1 /
// speed for the workload to take part in solving for the speed.
constexpr double kSensitiveShare = 0.05;

// Runs the calibration at one period; `run` carries that period.
class PeriodRun {
 public:
  PeriodRun(const Device& device, const std::vector<DeviceMeasurement>& workloads,
            const SpeedFitOptions& options, RunOptions run, double lo, double hi,
            const SpeedFitProgress& progress, int& done, int& planned)
      : device_(device), workloads_(workloads), options_(options), run_(std::move(run)),
        lo_(lo), hi_(hi), progress_(progress), done_(done), planned_(planned) {}

  PeriodSpeedFit operator()(const std::vector<double>& speeds) {
    PeriodSpeedFit fit;
    fit.workloads.resize(workloads_.size());
    for (std::size_t i = 0; i < workloads_.size(); ++i) {
      fit.workloads[i].name = workloads_[i].name;
      fit.workloads[i].device_value = workloads_[i].device_value;
    }
    for (double s : speeds) measure_all(s, fit);
    double speed = solve(fit);
    // Verify at the solved speed; when the new points move the solution by more than 2%,
    // measure there once more. The residuals are those of the last speed measured.
    measure_all(speed, fit);
    const double again = solve(fit);
    if (std::abs(again / speed - 1) > 0.02) {
      speed = again;
      measure_all(speed, fit);
    }
    fit.core_speed = speed;
    // Of the speed reported (a cap the first solution hit and the second did not is not this
    // speed's) and the last solution's workloads.
    if (speed >= hi_ * 0.999) {
      fit.notes.push_back(fmt::format(
          "the device's workloads call for a core speed at or above {:.4g}, the fastest this "
          "host can emulate for {} cores: the device is as fast as this host or faster, and the "
          "speed is capped there",
          hi_, device_.cores));
    }
    if (speed <= lo_ * 1.001) {
      fit.notes.push_back(fmt::format("the speed hit the lower bound {:.4g}", lo_));
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
    return fit;
  }

 private:
  void measure_all(double speed, PeriodSpeedFit& fit) {
    planned_ += int(workloads_.size()) * options_.repeat;
    for (std::size_t i = 0; i < workloads_.size(); ++i) {
      fit.workloads[i].points.emplace_back(speed, measure(workloads_[i], speed));
    }
  }

  double measure(const DeviceMeasurement& w, double speed) {
    Device d = device_;
    d.core_speed = speed;
    d.speed_schedule.clear();
    forget_nn(d);
    std::vector<double> values;
    for (int k = 0; k < options_.repeat; ++k) {
      const Result r = edgeprof::run(w.command, d, run_);
      if (!r.ok()) {
        throw Error(fmt::format(
            "calibrating {}: workload '{}' failed at core speed {:.4f}: {}; every workload "
            "must succeed under emulation (more memory? a longer timeout?)",
            device_.name, w.name, speed, exit_text(r)));
      }
      values.push_back(figure(r, options_.figure));
      period_us_ = r.plan.cpu_period_us;
      ++done_;
      if (progress_) progress_(done_, planned_, w.name, speed, period_us_);
    }
    return detail::median_of(std::move(values));
  }

  double solve(PeriodSpeedFit& fit) {
    std::vector<SpeedModel> models;
    std::vector<double> targets;
    for (WorkloadSpeedFit& w : fit.workloads) {
      w.model = fit_speed_model(w.points);
      // Sensitive when the speed-dependent part is at least 5% of the value at the slowest
      // speed measured: a sleep's fit has a small a of either sign from noise alone.
      double slowest = w.points.front().first;
      for (const auto& pt : w.points) slowest = std::min(slowest, pt.first);
      w.speed_sensitive =
          w.model.a > 0 && w.model.a / slowest >= kSensitiveShare * w.model.at(slowest);
      if (w.speed_sensitive) {
        models.push_back(w.model);
        targets.push_back(w.device_value);
      }
    }
    if (models.empty()) {
      throw Error("no workload's figure depends on the core speed (each changes by less than 5% "
                  "between the speeds measured): the workloads cannot calibrate it; use "
                  "CPU-bound ones");
    }
    return solve_core_speed(models, targets, lo_, hi_);
  }

  const Device& device_;
  const std::vector<DeviceMeasurement>& workloads_;
  const SpeedFitOptions& options_;
  RunOptions run_;
  double lo_, hi_;
  const SpeedFitProgress& progress_;
  int& done_;
  int& planned_;
  std::uint64_t period_us_ = 0;
};

}  // namespace

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
  int done = 0, planned = 0;
  std::vector<std::uint64_t> periods = options.periods_us;
  if (periods.empty()) periods.push_back(0);  // 0: as options.run.slice.plan says
  for (std::uint64_t p : periods) {
    RunOptions run = options.run;
    // The calibration runs at the speeds it measures: a count of the workload's activations
    // must not set another (PlanOptions::count_activations).
    run.slice.plan.count_activations = false;
    if (p) {
      run.slice.plan.cpu_period_us = p;
      run.slice.plan.iteration_time_us = 0;
    }
    PeriodRun calibrate(device, workloads, options, run, lo, hi, progress, done, planned);
    out.periods.push_back(calibrate(speeds));
  }
  const auto best = std::min_element(
      out.periods.begin(), out.periods.end(),
      [](const PeriodSpeedFit& a, const PeriodSpeedFit& b) { return a.rms_residual < b.rms_residual; });
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
  for (const PeriodSpeedFit& p : c.periods) {
    const bool chosen = p.period_us == c.period_us && p.core_speed == c.core_speed;
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
