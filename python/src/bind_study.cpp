// Bindings of include/edgeprof/compare.hpp and calibrate.hpp: type conversion only. compare and
// calibrate_speed run without the GIL; Ctrl-C still reaches Python (python_signals).
#include "bind_study.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <edgeprof/calibrate.hpp>
#include <edgeprof/compare.hpp>
#include <edgeprof/device.hpp>
#include <edgeprof/plan.hpp>
#include <edgeprof/projection.hpp>
#include <edgeprof/rank.hpp>
#include <edgeprof/result.hpp>
#include <edgeprof/slice.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bind_common.hpp"

namespace py = pybind11;
using namespace edgeprof;
using namespace edgeprof_py;

namespace {

// edgeprof.score for a Result or a RepeatedResult (overloads of one Python function: the
// second's doc only says how it differs, as help() prints both).
template <class Runs>
void def_score(py::module_& m, const char* doc) {
  m.def(
      "score",
      [](const Runs& r, std::optional<double> latency, std::optional<double> memory,
         const std::string& latency_figure, const std::string& memory_figure,
         const std::optional<Calibration>& latency_calibration,
         const std::optional<Calibration>& memory_calibration) {
        Budget b;
        b.latency_s = latency;
        if (memory) b.memory_bytes = *memory;
        b.latency_figure = latency_figure;
        b.memory_figure = memory_figure;
        return score(r, b, latency_calibration, memory_calibration);
      },
      py::arg("result"), py::kw_only(), py::arg("latency") = py::none(),
      py::arg("memory") = py::none(), py::arg("latency_figure") = "all_cores_wall_time_s",
      py::arg("memory_figure") = "peak_memory_bytes",
      py::arg("latency_calibration") = py::none(), py::arg("memory_calibration") = py::none(),
      doc);
}

}  // namespace

void bind_study(py::module_& m) {
  py::class_<ComparisonRow>(m, "ComparisonRow", "One workload on one device.")
      .def_readonly("workload", &ComparisonRow::workload, "The workload's name.")
      .def_readonly("device", &ComparisonRow::device, "The device's name.")
      .def_readonly("result", &ComparisonRow::result,
                    "Its runs and their statistics (RepeatedResult).")
      .def_readonly("value", &ComparisonRow::value,
                    "The median of the ranked metric; NaN when a run failed or lacks it (a "
                    "phase's figure where the workload marked no such phase).")
      .def_readonly("memory", &ComparisonRow::memory,
                    "The median of the memory metric; NaN when a run failed or lacks it (the peak "
                    "where the kernel keeps none: cgroup v2 before Linux 5.19).")
      .def_readonly("rank", &ComparisonRow::rank,
                    "Among the workloads ranked on this device, 1 the best; 0 when this one is "
                    "not ranked (a run failed, or lacks the metric), such rows coming after the "
                    "ranked ones.")
      .def_readonly("tied", &ComparisonRow::tied,
                    "Whether it shares its rank with another workload on this device.")
      .def_readonly("pareto", &ComparisonRow::pareto,
                    "Whether it is on the (metric, memory) Pareto front of this device's rows "
                    "that have both.")
      .def_readonly("projected", &ComparisonRow::projected,
                    "The calibration's Prediction for the run with the median metric; None "
                    "without one (no projected_target, no calibration for this row, or no "
                    "value).");
  py::class_<Comparison>(m, "Comparison", "Workloads compared on devices.")
      .def_readonly("rows", &Comparison::rows,
                    "One ComparisonRow per workload and device: by device (in the order given), "
                    "then rank.")
      .def_property_readonly("metric", [](const Comparison& c) { return c.options.metric; },
                             "The figure ranked on, lower is better.")
      .def_property_readonly("memory_metric",
                             [](const Comparison& c) { return c.options.memory_metric; },
                             "The memory figure: the second axis of the Pareto front.")
      .def_property_readonly("projected_target",
                             [](const Comparison& c) { return c.options.projected_target; },
                             "The figure projected through the calibrations, e.g. "
                             "'device_wall_time_s'; '' = no projection.")
      .def_property_readonly("repeat", [](const Comparison& c) { return c.options.repeat; },
                             "Runs per workload and device, warm-ups not counted.")
      .def("__str__", [](const Comparison& c) { return text(to_text(c)); });
  m.def(
      "_compare",
      [](const std::vector<std::string>& names, const std::vector<std::vector<std::string>>& argvs,
         const std::vector<py::object>& devices, int repeat, int warmup,
         const std::string& metric, const std::string& memory_metric, const std::string& test,
         double alpha, const std::vector<Calibration>& calibrations,
         const std::string& projected_target, std::optional<double> interval,
         std::optional<double> timeout, const std::optional<CompareProgress>& progress,
         const py::object& parent, std::uint64_t cpu_period_us, bool allow_missing,
         std::optional<double> iteration_time, bool keep_warm, const std::string& speed_kind,
         bool thread_env, const std::string& core_emulation, bool core_scaling,
         std::optional<double> quota_scale, std::optional<bool> drift_check, std::optional<double> workload_scaling, std::optional<bool> count_activations) {
        std::vector<Workload> workloads;
        for (size_t i = 0; i < names.size(); ++i) {
          Command c;
          c.argv = argvs[i];
          c.stdout_stream = Stdio::discard();
          workloads.push_back({names[i], c});
        }
        std::vector<Device> devs;
        for (const py::object& d : devices) devs.push_back(to_device(d));
        CompareOptions o;
        o.repeat = repeat;
        o.warmup = warmup;
        o.metric = metric;
        o.memory_metric = memory_metric;
        o.rank.alpha = alpha;
        o.rank.test = test == "welch" ? RankTest::welch : RankTest::mann_whitney;
        if (test != "welch" && test != "mann-whitney") {
          throw py::value_error("test must be 'mann-whitney' or 'welch', not '" + test + "'");
        }
        o.calibrations = calibrations;
        o.projected_target = projected_target;
        o.run.slice = to_slice_options(parent, cpu_period_us, {}, allow_missing, iteration_time,
                                       keep_warm, speed_kind, thread_env, core_emulation,
                                       core_scaling, quota_scale, drift_check, workload_scaling, count_activations);
        o.run.spawn.sample_interval = to_interval(interval);
        o.run.timeout = to_timeout(timeout);
        o.run.check = python_signals();
        py::gil_scoped_release release;
        return compare(workloads, devs, o, progress.value_or(CompareProgress{}));
      },
      py::arg("names"), py::arg("argvs"), py::arg("devices"), py::arg("repeat"),
      py::arg("warmup"), py::arg("metric"), py::arg("memory_metric"), py::arg("test"),
      py::arg("alpha"), py::arg("calibrations"), py::arg("projected_target"),
      py::arg("interval"), py::arg("timeout"), py::arg("progress"), py::kw_only(),
      py::arg("parent") = py::none(), py::arg("cpu_period_us") = kChosenCpuPeriod,
      py::arg("allow_missing_controllers") = false, py::arg("iteration_time") = py::none(),
      py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic",
      py::arg("thread_env") = true, py::arg("core_emulation") = "auto",
      py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(), py::arg("workload_scaling") = py::none(), py::arg("count_activations") = py::none());

  py::class_<SpeedModel>(m, "SpeedModel", "A figure as a function of core speed: a / speed + b.")
      .def(py::init([](double a, double b) { return SpeedModel{a, b}; }), py::arg("a"),
           py::arg("b"))
      .def_readonly("a", &SpeedModel::a, "The part that scales with 1 / speed.")
      .def_readonly("b", &SpeedModel::b, "The part that does not depend on the speed.")
      .def("at", &SpeedModel::at, py::arg("speed"), "The model's value at `speed`: a / speed + b.")
      .def("__repr__", [](const SpeedModel& sm) {
        return "SpeedModel(a=" + py::repr(py::float_(sm.a)).cast<std::string>() +
               ", b=" + py::repr(py::float_(sm.b)).cast<std::string>() + ")";
      });
  m.def("fit_speed_model", &fit_speed_model, py::arg("points"),
        "Least-squares fit of value = a / speed + b to (speed, value) points.");
  m.def("solve_core_speed", &solve_core_speed, py::arg("models"), py::arg("targets"),
        py::arg("lo"), py::arg("hi"),
        "The speed in [lo, hi] minimising the sum of squared log errors of the models against "
        "the targets; models with a <= 0 are left out.");
  py::class_<WorkloadSpeedFit>(m, "WorkloadSpeedFit", "One workload's part of a calibration.")
      .def_readonly("name", &WorkloadSpeedFit::name, "The workload's name, as given.")
      .def_readonly("device_value", &WorkloadSpeedFit::device_value,
                    "The figure measured on the device (seconds for 'wall_time_s').")
      .def_readonly("points", &WorkloadSpeedFit::points,
                    "Measured here: (speed, median figure) in the order run.")
      .def_readonly("model", &WorkloadSpeedFit::model,
                    "The fit (SpeedModel) the calibrated speed was solved with: of every point "
                    "but the last round's, which was measured at that speed after it was solved.")
      .def_readonly("emulated", &WorkloadSpeedFit::emulated,
                    "Measured here at the calibrated speed (median).")
      .def_readonly("residual", &WorkloadSpeedFit::residual, "emulated / device_value - 1.")
      .def_readonly("speed_sensitive", &WorkloadSpeedFit::speed_sensitive,
                    "Whether the part that scales with 1 / speed is at least 5% of model's "
                    "figure at the slowest speed measured; workloads that are not were left out "
                    "of the solution reported.");
  py::class_<PeriodSpeedFit>(m, "PeriodSpeedFit", "The calibration at one candidate period.")
      .def_readonly("period_us", &PeriodSpeedFit::period_us,
                    "The CFS period of the runs, in us; where the plan lengthened it for some, "
                    "the last run's (a note says so).")
      .def_readonly("core_speed", &PeriodSpeedFit::core_speed,
                    "The core speed solved at this period.")
      .def_readonly("rms_residual", &PeriodSpeedFit::rms_residual,
                    "Root mean square of the workloads' residuals (measured).")
      .def_readonly("workloads", &PeriodSpeedFit::workloads,
                    "One WorkloadSpeedFit per workload, in the order given.")
      .def_property_readonly("notes", texts_of(&PeriodSpeedFit::notes),
                             "Of the solution reported: limits hit, workloads left out.");
  py::class_<SpeedCalibration>(m, "SpeedCalibration", "What calibrate_speed() found.")
      .def_readonly("core_speed", &SpeedCalibration::core_speed,
                    "The calibrated core speed (one device core / one host core), at period_us.")
      .def_readonly("period_us", &SpeedCalibration::period_us,
                    "The candidate CFS period with the smallest residual, in us.")
      .def_readonly("rms_residual", &SpeedCalibration::rms_residual,
                    "Root mean square of the workloads' residuals at that period (measured).")
      .def_readonly("max_abs_residual", &SpeedCalibration::max_abs_residual,
                    "The largest |residual| at that period (measured).")
      .def_readonly("periods", &SpeedCalibration::periods,
                    "Every candidate period's PeriodSpeedFit, in the order given.")
      .def_readonly("chosen", &SpeedCalibration::chosen,
                    "The index in periods of the period taken (the smallest rms residual).")
      .def_readonly("device", &SpeedCalibration::device,
                    "The device with the calibrated core_speed and its source.")
      .def_property_readonly("notes", texts_of(&SpeedCalibration::notes),
                             "The chosen period's notes (PeriodSpeedFit.notes).")
      .def("__str__", [](const SpeedCalibration& c) { return text(to_text(c)); });
  m.def(
      "calibrate_speed",
      [](const py::object& device,
         const std::vector<std::tuple<std::string, std::vector<std::string>, double>>& workloads,
         const std::string& figure, int repeat, const std::vector<double>& speeds,
         const std::vector<std::uint64_t>& periods_us, const py::object& parent,
         std::uint64_t cpu_period_us, const std::vector<int>& cpus, bool allow_missing,
         std::optional<double> iteration_time, bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check, std::optional<double> workload_scaling, std::optional<double> timeout,
         const std::optional<SpeedFitProgress>& progress) {
        Device d = to_device(device);
        std::vector<DeviceMeasurement> measured;
        for (const auto& [name, argv, value] : workloads) {
          Command c;
          c.argv = argv;
          c.stdout_stream = Stdio::discard();
          measured.push_back({name, c, value});
        }
        SpeedFitOptions o;
        o.figure = figure;
        o.repeat = repeat;
        o.speeds = speeds;
        o.periods_us = periods_us;
        o.run.slice = to_slice_options(parent, cpu_period_us, cpus, allow_missing,
                                  iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check, workload_scaling);
        o.run.spawn.sample_interval = std::chrono::nanoseconds(0);
        o.run.timeout = to_timeout(timeout);
        o.run.check = python_signals();
        py::gil_scoped_release release;
        return calibrate_speed(d, measured, o, progress.value_or(SpeedFitProgress{}));
      },
      py::arg("device"), py::arg("workloads"), py::kw_only(),
      py::arg("figure") = "wall_time_s", py::arg("repeat") = 3,
      py::arg("speeds") = std::vector<double>{}, py::arg("periods_us") = std::vector<std::uint64_t>{},
      py::arg("parent") = py::none(), py::arg("cpu_period_us") = kChosenCpuPeriod,
      py::arg("cpus") = std::vector<int>{}, py::arg("allow_missing_controllers") = false,
      py::arg("iteration_time") = py::none(), py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(), py::arg("workload_scaling") = py::none(),
      py::arg("timeout") = py::none(), py::arg("progress") = py::none(),
      "Finds the core speed at which emulating `device` reproduces figures measured on the "
      "real device. workloads: (name, argv, device_value) tuples, device_value being the "
      "figure (seconds of wall time by default) measured on the device. Measures each "
      "workload here at a few speeds, fits figure = a / speed + b, solves, and runs every "
      "workload again at the solution to report measured residuals. periods_us: candidate "
      "CFS periods, the best kept. progress(done, planned, workload, speed, period_us).");

  py::class_<Score>(m, "Score", "What an objective function needs from one run.")
      .def_readonly("ok", &Score::ok,
                    "True when the run succeeded (exit 0, not killed, not timed out); for a "
                    "RepeatedResult, when every run did.")
      .def_readonly("latency", &Score::latency,
                    "The latency figure (score()'s latency_figure, in its unit), or its "
                    "projection when a latency calibration is given; NaN for a failed run, or "
                    "where the run lacks the figure and only memory's limit is given.")
      .def_readonly("memory", &Score::memory,
                    "The memory figure (score()'s memory_figure: bytes by default), or its "
                    "projection when a memory calibration is given; NaN for a failed run, or "
                    "where the run lacks the figure and only latency's limit is given (the peak "
                    "where the kernel keeps none: cgroup v2 before Linux 5.19).")
      .def_readonly("latency_provenance", &Score::latency_provenance,
                    "How latency was obtained: 'measured', 'sampled', 'projected' or 'estimated' "
                    "(Result.figure_provenance); '' where latency is NaN.")
      .def_readonly("memory_provenance", &Score::memory_provenance,
                    "How memory was obtained, as latency_provenance; '' where memory is NaN.")
      .def_readonly("latency_prediction", &Score::latency_prediction,
                    "The latency calibration's Prediction; None without a latency calibration or "
                    "for a failed run.")
      .def_readonly("memory_prediction", &Score::memory_prediction,
                    "The memory calibration's Prediction; None without a memory calibration or "
                    "for a failed run.")
      .def_readonly("latency_check", &Score::latency_check,
                    "The BudgetCheck against the latency limit; None without a limit or for a "
                    "failed run.")
      .def_readonly("memory_check", &Score::memory_check,
                    "The BudgetCheck against the memory limit; None without a limit or for a "
                    "failed run.")
      .def_readonly("fits", &Score::fits, "True when ok and within every limit given.")
      .def_readonly("penalty", &Score::penalty,
                    "Sum of the relative overruns of the limits, 0 within them (objective = "
                    "accuracy - penalty, say); 0 for a failed run, whose limits were not checked: "
                    "test ok first.")
      .def("__repr__", [](const Score& s) {
        return std::string("Score(ok=") + (s.ok ? "True" : "False") +
               ", latency=" + py::repr(py::float_(s.latency)).cast<std::string>() + " (" +
               s.latency_provenance + "), memory=" +
               py::repr(py::float_(s.memory)).cast<std::string>() + " (" + s.memory_provenance +
               "), fits=" + (s.fits ? "True" : "False") +
               ", penalty=" + py::repr(py::float_(s.penalty)).cast<std::string>() + ")";
      });
  // One run, or repeated runs by their medians: one function of Python's, two of C++'s.
  def_score<Result>(
      m,
      "Scores a run for an objective: latency and memory (projected through the calibrations "
      "when given) against the budget (latency in the figure's unit, memory in bytes). With a "
      "calibration, the figure is its projection of its own target from its own features, and "
      "latency_figure/memory_figure are not used: give the calibration of the device the run "
      "emulated (find_calibration). penalty = sum of relative overruns; a failed run has ok = "
      "fits = False and NaN latency and memory (its figures would measure the failure), which "
      "Optuna records as a failed trial. A figure the run lacks raises edgeprof.Error when its "
      "limit is given or no limit is; with only the other's limit it is NaN (memory where the "
      "kernel keeps no peak: cgroup v2 before Linux 5.19).");
  def_score<RepeatedResult>(
      m,
      "As above, for a RepeatedResult (run(..., repeat=N)): scored by its medians, each "
      "figure's, and a calibration's prediction at its features' medians; not ok when a run "
      "failed.");
}
