/// @file
/// Comparing workloads on devices, and scoring one run for hyper-parameter searches.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "edgeprof/export.hpp"
#include "edgeprof/projection.hpp"
#include "edgeprof/rank.hpp"
#include "edgeprof/slice.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// A named command to compare.
struct Workload {
  std::string name;  ///< unique among the workloads compared
  Command command;   ///< what to run
};

/// How compare() runs, ranks and projects.
struct CompareOptions {
  int repeat = 5;  ///< runs per workload and device (5 lets Mann-Whitney separate at 0.05)
  int warmup = 0;  ///< runs per workload and device before those, not counted
  /// Ranked on, lower is better: the device's time with all its cores, projected or measured
  /// (Result::all_cores_s) by default.
  std::string metric = "all_cores_wall_time_s";
  std::string memory_metric = "peak_memory_bytes";  ///< the second axis of the Pareto front
  RankOptions rank;  ///< how the workloads are ranked on `metric`
  RunOptions run;    ///< how each run is started and observed
  /// Projections to the devices' own numbers: the calibration found for (device name, target,
  /// family = workload name, else any family) is applied to each run.
  std::vector<Calibration> calibrations;
  std::string projected_target;  ///< e.g. "device_wall_time_s"; empty = no projection
};

/// One workload on one device.
struct ComparisonRow {
  std::string workload;   ///< the workload's name
  std::string device;     ///< the device's name
  RepeatedResult result;  ///< its runs and their statistics
  /// The median of the ranked metric; NaN when a run failed or lacks it (a phase's figure
  /// where the workload marked no such phase).
  double value = 0;
  /// The median of the memory metric; NaN when a run failed or lacks it (the peak where the
  /// kernel keeps none: cgroup v2 before Linux 5.19).
  double memory = 0;
  /// Among the workloads ranked on this device (1 is the best); 0 when this one is not ranked:
  /// a run failed, or lacks the metric (`value` is NaN). Such rows come after the ranked ones.
  int rank = 0;
  bool tied = false;   ///< shares its rank with another workload on this device
  bool pareto = false;  ///< on the (metric, memory) Pareto front of the rows with both
  std::optional<Prediction> projected;  ///< of the run with the median metric
};

/// What compare() found.
struct Comparison {
  std::vector<ComparisonRow> rows;  ///< by device (in the order given), then rank
  CompareOptions options;           ///< the options it ran with
};

/// Called after each run: (runs done, runs in all, workload, device, result). Warm-ups count as
/// runs.
using CompareProgress =
    std::function<void(int, int, const std::string&, const std::string&, const Result&)>;

/// Runs every workload on every device `repeat` times (after `warmup`), ranks the workloads per
/// device with ties (rank()), marks the Pareto front of (metric, memory) per device, and projects
/// with a calibration where one is given. Throws, before any run, Error for no workloads, no
/// devices, duplicate workload or device names, a metric or memory_metric that is no figure name
/// (check_figure_name()), rank.alpha outside (0, 1), repeat < 1, warmup < 0 or more runs than an
/// int counts, and UnsupportedError for a device of several cores that core emulation
/// "projected" cannot project (project_threads()), and DeviceError for a device without an nn
/// speed when PlanOptions::speed_kind is nn (for_speed_kind()). Also before any run:
/// SpawnError for a command that cannot be executed (not in PATH, not an executable file: a
/// program an earlier workload would build is refused too),
/// DeviceError for an invalid device (Device::validate()) and UnsupportedError for a device
/// with more memory than this host. A workload that fails keeps its row (its result says so),
/// not ranked (rank 0). Errors that prevent a later run (from Slice or Slice::spawn())
/// propagate.
Comparison compare(const std::vector<Workload>& workloads, const std::vector<Device>& devices,
                   const CompareOptions& options = {}, const CompareProgress& progress = {});

/// A readable table: one block per device.
std::string to_text(const Comparison& comparison);

/// What an objective function needs from one run, against an optional budget.
struct Budget {
  std::optional<double> latency_s;             ///< limit on `latency_figure`, in seconds
  std::optional<double> memory_bytes;          ///< limit on `memory_figure`, in bytes
  /// Any figure() name, e.g. "phase.inference.all_cores_wall_time_s"; by default the run's
  /// time with all the device's cores (Result::all_cores_s), projected or measured. With a
  /// latency calibration, the latency is its projection instead (of its own target, from its
  /// own features): this names only the figure scored without one.
  std::string latency_figure = "all_cores_wall_time_s";
  /// Any figure() name; with a memory calibration, as latency_figure.
  std::string memory_figure = "peak_memory_bytes";
};

/// One run scored by score().
struct Score {
  bool ok = false;  ///< the run succeeded (exit 0, not killed, not timed out)
  /// The figure, projected when a latency calibration is given; NaN for a failed run, or where
  /// the run lacks the figure when only the other figure's limit is given. A figure the run
  /// lacks is an Error, naming the figures there are, when its limit is given or no limit is.
  double latency = 0;
  /// As latency, for memory: a budget of latency alone gets NaN where the kernel keeps no peak
  /// (cgroup v2 before Linux 5.19); memory_figure "memory_sampled_peak_bytes" is sampled there.
  double memory = 0;
  /// "measured", "sampled", "projected" or "estimated" (figure_provenance()); "" for NaN
  std::string latency_provenance;
  std::string memory_provenance;  ///< as latency_provenance
  ///@{
  /// The projections, when a calibration was given and the run succeeded.
  std::optional<Prediction> latency_prediction, memory_prediction;
  ///@}
  ///@{
  /// The checks against the budget's limits, for each limit given when the run succeeded.
  std::optional<BudgetCheck> latency_check, memory_check;
  ///@}
  bool fits = false;   ///< ok, and within every limit given
  /// Sum of the relative overruns of the limits (0 when within them): a penalty for a
  /// single-objective search, e.g. objective = accuracy - penalty. 0 for a failed run, whose
  /// limits were not checked: test `ok` first (a failed trial is not a fitting one).
  double penalty = 0;
};

/// Scores a run: its latency and memory figures (projected through the calibrations when given),
/// checked against the budget. A failed run scores ok = false, fits = false and NaN figures
/// (they would measure the failure: the time to a crash or a kill). Throws Error, whatever the
/// run's outcome, for a figure name that is none
/// (check_figure_name()) or a limit that is not positive and finite; and when a successful run
/// lacks a figure the budget names.
Score score(const Result& result, const Budget& budget = {},
            const std::optional<Calibration>& latency_calibration = std::nullopt,
            const std::optional<Calibration>& memory_calibration = std::nullopt);
/// Scores repeated runs of one workload (run_repeated()) by their medians: each figure the
/// median over the runs, and through a calibration its prediction at the median of each of its
/// features (every run checked as project() checks it). ok when every run succeeded; when one
/// failed, as a failed run. Throws as above, and Error for a RepeatedResult without runs.
Score score(const RepeatedResult& runs, const Budget& budget = {},
            const std::optional<Calibration>& latency_calibration = std::nullopt,
            const std::optional<Calibration>& memory_calibration = std::nullopt);

}  // namespace edgeprof
EDGEPROF_API_END
