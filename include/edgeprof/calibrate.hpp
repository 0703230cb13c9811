/// @file
/// Core speed calibrated from workloads: given workloads measured on the real device, the core
/// speed (and CFS period) at which emulation reproduces those measurements, with the residual.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/export.hpp"
#include "edgeprof/slice.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// One workload and what it measured on the real device.
struct DeviceMeasurement {
  std::string name;          ///< for the report
  Command command;           ///< how to run it here
  double device_value = 0;   ///< the figure on the device (seconds for "wall_time_s"); > 0
};

/// A workload's figure as a function of the emulated core speed s: value = a / s + b. a is the
/// part that scales with CPU speed (host-core seconds of CPU-bound work), b the part that does
/// not (sleeping, I/O, waiting). Fitted by least squares over the measured (speed, value) points.
struct SpeedModel {
  double a = 0;  ///< scales with 1 / speed
  double b = 0;  ///< does not depend on speed
  /// The model's value at speed `s`.
  double at(double s) const { return a / s + b; }
};

/// Least-squares fit of value = a / speed + b to (speed, value) points with at least two
/// distinct speeds. Throws Error otherwise, or when a speed or value is not positive.
SpeedModel fit_speed_model(const std::vector<std::pair<double, double>>& points);

/// The speed in [lo, hi] that minimises the sum over workloads of (ln(model_i(s) / target_i))^2,
/// the relative error of each workload weighted alike whatever its length. Models whose `a` is
/// not positive (a workload the CPU speed does not affect) are left out; throws Error when none
/// remains, when lo, hi or a target is not positive and finite, or a model is not finite.
double solve_core_speed(const std::vector<SpeedModel>& models, const std::vector<double>& targets,
                        double lo, double hi);

/// How calibrate_speed() measures.
struct SpeedFitOptions {
  std::string figure = "wall_time_s";  ///< the figure compared (figure() names)
  int repeat = 3;  ///< runs per workload and speed; their median is used (>= 1)
  /// Speeds to measure each workload at before solving (at least two distinct ones); empty =
  /// the fastest speed this host can emulate for the device, and a third of it.
  std::vector<double> speeds;
  /// Candidate CFS periods; the one with the smallest residual wins. Empty = the period
  /// `run.slice.plan` gives (its cpu_period_us or iteration_time_us).
  std::vector<std::uint64_t> periods_us;
  RunOptions run;  ///< how each run's slice is made and observed (period and CPUs, timeout)
};

/// Called as calibrate_speed() goes: (runs done, runs planned, workload, speed, period). The
/// runs planned are known from the start (each speed and the check at the solution, per period)
/// and grow only by a round of re-measuring when a check moved a period's solution by over 2%.
using SpeedFitProgress =
    std::function<void(int, int, const std::string&, double, std::uint64_t)>;

/// One workload's part of a calibration.
struct WorkloadSpeedFit {
  std::string name;           ///< DeviceMeasurement::name
  double device_value = 0;    ///< measured on the device
  /// Measured here: (speed, median of the figure over `repeat` runs), in the order run.
  std::vector<std::pair<double, double>> points;
  /// The fit the calibrated speed was solved with: of every point but the last round's, which
  /// was measured at that speed after it was solved.
  SpeedModel model;
  double emulated = 0;        ///< measured here at the calibrated speed (median)
  double residual = 0;        ///< emulated / device_value - 1, measured
  /// Whether the part that scales with 1 / speed is at least 5% of `model`'s figure at the
  /// slowest speed measured; workloads that are not were left out of the solution reported.
  bool speed_sensitive = true;
};

/// The calibration at one candidate period.
struct PeriodSpeedFit {
  /// The CFS period of the runs (of the last where the plan gave some another: a note says)
  std::uint64_t period_us = 0;
  double core_speed = 0;                   ///< solved at this period
  double rms_residual = 0;                 ///< root mean square of the workloads' residuals
  std::vector<WorkloadSpeedFit> workloads; ///< one per DeviceMeasurement, in order
  std::vector<std::string> notes;          ///< of the solution reported: limits hit,
                                           ///< workloads left out
};

/// What calibrate_speed() found.
struct SpeedCalibration {
  double core_speed = 0;         ///< the calibrated speed, at `period_us`
  std::uint64_t period_us = 0;   ///< the candidate period with the smallest residual
  double rms_residual = 0;       ///< at that period, measured
  double max_abs_residual = 0;   ///< the largest |residual| at that period, measured
  std::vector<PeriodSpeedFit> periods;  ///< every candidate period, in the order given
  std::size_t chosen = 0;               ///< the index in `periods` of the one taken
  /// The input device with core_speed replaced and sources["core_speed"] saying how it was
  /// calibrated ("measured"), without what would replace that speed in a run: its nn and
  /// runtime tables (nn, runtimes) and a probe's vector score.
  Device device;
  std::vector<std::string> notes;  ///< the chosen period's (PeriodSpeedFit::notes)
};

/// Measures each workload here at a few core speeds, fits value = a / speed + b per workload,
/// solves for the core speed that makes the emulated figures match the device's, then runs every
/// workload again at that speed and reports the measured residuals (refitting and solving once
/// more with those runs when the speed moves by more than 2%). What it reports at a period is of
/// one solution: the speed, each workload's model and speed_sensitive flag it was solved with,
/// the notes, and the residuals of the runs at that speed. The device's cores, memory and
/// the rest stay as given; its speed schedule is not applied while calibrating. Throws, before
/// any run, DeviceError for a device validate() refuses and on bad input (no workloads, two
/// workloads of one name, speed_kind nn (each run is at a speed it tries), a workload without
/// a command or whose device_value is not positive and finite, repeat < 1, a
/// speed outside what this host can emulate, fewer than two distinct speeds, a period in
/// periods_us outside kMinCpuPeriodUs..kMaxCpuPeriodUs (0 allowed: the plan's), core emulation
/// "projected" for a device of several cores (its scaling is of the published CNN times a
/// calibrated speed replaces), "projected" for one core with a figure that is neither an
/// all_cores_ nor a projected_ one, "auto" with a
/// projected_ one) and Error for a figure that is no figure name (check_figure_name()); Error
/// when a run fails (naming the workload, speed and outcome) or no workload's figure depends on
/// the core speed. Errors that prevent a run (from Slice or Slice::spawn()) propagate.
SpeedCalibration calibrate_speed(const Device& device,
                                 const std::vector<DeviceMeasurement>& workloads,
                                 const SpeedFitOptions& options = {},
                                 const SpeedFitProgress& progress = {});

/// A readable report of a calibration: the speed, each workload's device and emulated figures
/// and residual, and every candidate period.
std::string to_text(const SpeedCalibration& calibration);

}  // namespace edgeprof
EDGEPROF_API_END
