// Bindings of include/edgeprof/microbench.hpp and reference.hpp: type conversion only. The suite
// and 7-Zip's benchmark run without the GIL, so other Python threads go on while they measure.
#include "bind_microbench.hpp"

#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <edgeprof/microbench.hpp>
#include <edgeprof/error.hpp>
#include <edgeprof/nn.hpp>
#include <edgeprof/reference.hpp>
#include <functional>
#include <optional>
#include <string>

#include "bind_common.hpp"

namespace py = pybind11;
using namespace edgeprof;
using edgeprof_py::fs_path;
using edgeprof_py::fs_text;
using edgeprof_py::fs_text_of;
using edgeprof_py::text;
using edgeprof_py::text_of;
using edgeprof_py::to_whole_seconds;

namespace {

std::string repr_float(double v) { return py::repr(py::float_(v)).cast<std::string>(); }

std::string repr_str(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

std::string repr(const CoreScores& s) {
  return "CoreScores(suite=" + repr_str(s.suite) + ", integer=" + repr_float(s.integer) +
         ", floating=" + repr_float(s.floating) + ", memory=" + repr_float(s.memory) +
         ", vector=" + repr_float(s.vector) + ", vector_unit=" + repr_str(s.vector_unit) + ")";
}

}  // namespace

std::function<void(const std::string&)> with_signal_check(
    std::optional<std::function<void(py::str)>> progress) {
  auto check = edgeprof_py::python_signals();
  return [progress = std::move(progress), check = std::move(check)](const std::string& line) {
    if (progress) {
      py::gil_scoped_acquire gil;
      (*progress)(edgeprof_py::text(line));
    }
    if (check) check();
  };
}

void bind_microbench(py::module_& m) {
  m.attr("SUITE_VERSION") = kSuiteVersion;
  m.attr("VECTOR_KERNEL_VERSION") = kVectorKernelVersion;

  py::class_<CoreScores>(m, "CoreScores",
                         "Per-core (single-thread) scores of the micro-benchmark suite; higher "
                         "is faster. Only ratios between machines measured by the same suite "
                         "version mean anything.")
      .def(py::init([](double integer, double floating, double memory, std::string suite,
                       double vector, std::string vector_unit, std::string vector_kernel) {
             CoreScores s;
             s.suite = std::move(suite);
             s.integer = integer;
             s.floating = floating;
             s.memory = memory;
             s.vector = vector;
             s.vector_unit = std::move(vector_unit);
             s.vector_kernel = vector > 0 && vector_kernel.empty() ? kVectorKernelVersion
                                                                   : std::move(vector_kernel);
             return s;
           }),
           py::kw_only(), py::arg("integer"), py::arg("floating"), py::arg("memory"),
           py::arg("suite") = kSuiteVersion, py::arg("vector") = 0.0,
           py::arg("vector_unit") = "", py::arg("vector_kernel") = "")
      .def_readonly("suite", &CoreScores::suite, "The suite version that measured them.")
      .def_readonly("integer", &CoreScores::integer, "Integer kernel: units per second.")
      .def_readonly("floating", &CoreScores::floating, "Floating-point kernel: units per second.")
      .def_readonly("memory", &CoreScores::memory,
                    "Memory-bound kernel: millions of dependent loads per second.")
      .def_readonly("vector", &CoreScores::vector,
                    "Vector kernel: GFLOP/s of a single-precision matrix-product block on the "
                    "best vector unit; 0 when not measured.")
      .def_readonly("vector_unit", &CoreScores::vector_unit,
                    "The unit the vector kernel ran on: 'avx512f', 'avx2+fma', 'sse2', 'neon' or "
                    "'generic'.")
      .def_readonly("vector_kernel", &CoreScores::vector_kernel,
                    "The vector kernel's version; '' when not measured.")
      .def_readonly("spread", &CoreScores::spread,
                    "Measured: how far each kernel's timed runs spread, (fastest - slowest) / "
                    "median, by kernel name; empty where not recorded (an older probe's file). "
                    "Beyond 0.5 a run's warnings say the speed from these scores is uncertain.")
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def("__repr__", [](const CoreScores& s) { return repr(s); });

  m.def(
      "run_suite",
      [](double per_kernel_s, int repeats, int cpu, std::string vector_unit) {
        if (!std::isfinite(per_kernel_s) || per_kernel_s < 0.001 || per_kernel_s > 60) {
          throw py::value_error("run_suite: per_kernel_s must be between 0.001 and 60 s, got " +
                                repr_float(per_kernel_s));
        }
        SuiteOptions options;
        options.per_kernel = std::chrono::milliseconds(std::llround(per_kernel_s * 1000));
        options.repeats = repeats;
        options.cpu = cpu;
        options.vector_unit = std::move(vector_unit);
        py::gil_scoped_release unlocked;
        return run_suite(options);
      },
      py::kw_only(), py::arg("per_kernel_s") = 0.2, py::arg("repeats") = 5, py::arg("cpu") = -1,
      py::arg("vector_unit") = "",
      "Runs the micro-benchmark suite on one CPU (cpu=-1: the one this thread is on) and "
      "returns the median scores of `repeats` timed runs of about per_kernel_s seconds each. "
      "vector_unit: the vector kernel's unit ('' = the best of this CPU; see vector_units()).");

  m.def("vector_units", &vector_units,
        "The vector units the suite's vector kernel can use on this CPU, best first.");

  m.def("speed_from_scores", &speed_from_scores, py::arg("device"), py::arg("host"),
        "One device core's speed relative to one host core: the geometric mean of the three "
        "score ratios. DeviceError when the suite versions differ or a score is not positive.");

  py::class_<HostCalibration>(m, "HostCalibration",
                              "This host's per-core scores and where they came from.")
      .def_readonly("scores", &HostCalibration::scores, "This host's per-core scores (CoreScores).")
      .def_readonly("cpu_model", &HostCalibration::cpu_model,
                    "The CPU model, from /proc/cpuinfo as edgeprof-probe names it.")
      .def_readonly("kernel", &HostCalibration::kernel, "The kernel release (uname -r).")
      .def_readonly("hostname", &HostCalibration::hostname, "The host name.")
      .def_readonly("measured_at", &HostCalibration::measured_at,
                    "When the scores were measured, ISO 8601 UTC.")
      .def_readonly("from_cache", &HostCalibration::from_cache,
                    "True when read from cache_file; False when measured by this call, or earlier in "
                    "this process where it could not be cached (note says which).")
      .def_property_readonly("cache_file", fs_text_of(&HostCalibration::cache_file),
                    "The cache file, or '' when no cache directory is known.")
      .def_property_readonly("note", text_of(&HostCalibration::note),
                    "Why the scores were measured rather than read, and whether they could not "
                    "be cached; '' when read from the cache.")
      .def("__repr__", [](const HostCalibration& h) {
        return "HostCalibration(scores=" + repr(h.scores) + ", cpu_model=" + repr_str(h.cpu_model) +
               ", measured_at=" + repr_str(h.measured_at) +
               ", from_cache=" + (h.from_cache ? "True" : "False") + ")";
      });

  m.def(
      "host_calibration",
      [](bool remeasure) {
        py::gil_scoped_release unlocked;
        return host_calibration(remeasure);
      },
      py::arg("remeasure") = false,
      "This host's scores: read from the cache when this suite version measured them on the "
      "same CPU model, kernel and host name, else measured (a few seconds) and cached; where it "
      "cannot be cached, kept for this process (later calls return it, note saying so).");

  m.attr("REFERENCE_CORE") = kReferenceCore;
  m.attr("REFERENCE_CORE_MIPS") = kReferenceCoreMips;
  py::class_<ReferenceRating>(m, "ReferenceRating",
                              "This host's 7-Zip single-thread rating: its speed relative to the "
                              "catalog's reference core, which the catalog's speeds are given "
                              "against.")
      .def_readonly("host_mips", &ReferenceRating::host_mips,
                    "This host's 7-Zip single-thread total rating, MIPS.")
      .def_property_readonly("speed", &ReferenceRating::speed,
                             "One host core / one reference core: host_mips / "
                             "REFERENCE_CORE_MIPS.")
      .def_property_readonly("command", fs_text_of(&ReferenceRating::command),
                             "The command that measured it, e.g. '/usr/bin/7zz b -mmt1'.")
      .def_readonly("version", &ReferenceRating::version, "7-Zip's banner line.")
      .def_readonly("cpu", &ReferenceRating::cpu, "The host CPU 7-Zip was pinned to.")
      .def_readonly("cpu_model", &ReferenceRating::cpu_model, "The CPU model, from /proc/cpuinfo.")
      .def_readonly("kernel", &ReferenceRating::kernel, "The kernel release (uname -r).")
      .def_readonly("hostname", &ReferenceRating::hostname, "The host name.")
      .def_readonly("measured_at", &ReferenceRating::measured_at, "ISO 8601 UTC.")
      .def_readonly("seconds", &ReferenceRating::seconds, "How long the benchmark took.")
      .def_property_readonly("cache_file", fs_text_of(&ReferenceRating::cache_file),
                    "Where it is cached; '' when it could not be.")
      .def_property_readonly("note", text_of(&ReferenceRating::note),
                    "Why it was not cached; '' when it was, or was read from the cache.")
      .def("__str__", [](const ReferenceRating& r) { return text(describe(r)); })
      .def("__repr__", [](const ReferenceRating& r) {
        return "ReferenceRating(host_mips=" + repr_float(r.host_mips) +
               ", speed=" + repr_float(r.speed()) + ", measured_at=" + repr_str(r.measured_at) +
               ")";
      });

  m.def(
      "cached_reference_rating", [] { return cached_reference_rating(); },
      "This host's cached 7-Zip rating (measured on the same CPU model, kernel and host name), "
      "or None. Never measures.");
  m.def(
      "why_not_cached_reference_rating",
      [] {
        std::string why;
        // (A path that is not UTF-8 shows its bytes escaped.)
        return edgeprof_py::text(cached_reference_rating(&why) ? std::string() : why);
      },
      "Why cached_reference_rating() gives None (not measured yet, the file corrupt, measured on "
      "another CPU, kernel or host: the file and what to do), or '' when it gives a rating.");
  m.def(
      "measure_reference_rating",
      [](const py::object& program, int cpu, double timeout_s,
         const std::optional<std::function<void(py::str)>>& progress) {
        ReferenceOptions options;
        options.program = fs_path(program, "measure_reference_rating's program");
        options.cpu = cpu;
        options.timeout = to_whole_seconds("measure_reference_rating", timeout_s);
        options.progress = with_signal_check(progress);
        py::gil_scoped_release unlocked;
        return measure_reference_rating(options);
      },
      py::kw_only(), py::arg("program") = "", py::arg("cpu") = -1, py::arg("timeout_s") = 600.0,
      py::arg("progress") = py::none(),
      "Runs 7-Zip's single-thread benchmark (`7zz b -mmt1`, 40-60 s) pinned to one CPU and "
      "caches the rating, so that catalog devices loaded from then on have core speeds "
      "relative to this host. progress(line) is called as it goes. Error when no 7-Zip is "
      "installed or it fails.");

  py::class_<ReferenceGraph>(m, "ReferenceGraph",
                             "A reference CNN graph in ncnn's param format, generated by "
                             "edgeprof to the architecture benchncnn's graph of that name has.")
      .def_readonly("name", &ReferenceGraph::name, "benchncnn's name for it, e.g. 'mobilenet_v2'.")
      .def_readonly("width", &ReferenceGraph::width, "The input width.")
      .def_readonly("height", &ReferenceGraph::height, "The input height.")
      .def_readonly("channels", &ReferenceGraph::channels, "The input channels.")
      .def_readonly("input", &ReferenceGraph::input, "The input blob's name.")
      .def_readonly("output", &ReferenceGraph::output, "The output blob's name.")
      .def_readonly("param", &ReferenceGraph::param, "The graph, ncnn param text.")
      .def_readonly("about", &ReferenceGraph::about, "The architecture, for people.")
      .def("__repr__", [](const ReferenceGraph& g) {
        return "ReferenceGraph(name=" + repr_str(g.name) + ")";
      });
  m.def("reference_graphs", &reference_graphs, "The reference CNN graphs, in measuring order.");
  m.def(
      "write_reference_graphs",
      [](const py::object& directory, const std::vector<std::string>& graphs) {
        write_reference_graphs(
            fs_path(directory, "write_reference_graphs' directory"),
            graphs);
      },
      py::arg("directory"), py::arg("graphs") = std::vector<std::string>{},
      "Writes <name>.param and graphs.txt (name width height channels input output) into an "
      "existing directory: all graphs, or those named.");
  m.def("nn_runner_source", &nn_runner_source,
        "The Python program that runs the graphs with ncnn: runner.py DIR WARMUP LOOPS "
        "[GRAPH...] prints '<name> <avg ms> <min ms> <max ms>' per graph.");

  py::class_<NnSpeed>(m, "NnSpeed", "A device's nn core speed on this host (CNN inference), "
                                    "from its published times and this host's.")
      .def_readonly("core_speed", &NnSpeed::core_speed,
                    "One device core / one host core: the geometric mean over the models of "
                    "host time / device time.")
      .def_readonly("ratios", &NnSpeed::ratios, "device ms / host ms, by model.")
      .def_readonly("loo_median_error", &NnSpeed::loo_median_error,
                    "Leave-one-model-out |predicted / published - 1|, median.")
      .def_readonly("loo_worst_error", &NnSpeed::loo_worst_error,
                    "Leave-one-model-out |predicted / published - 1|, worst; 0 with fewer than 2 "
                    "models.")
      .def_readonly("loo_log_sd", &NnSpeed::loo_log_sd,
                    "Standard deviation of the held-out log(published / predicted) errors; 0 "
                    "with fewer than 3 models.")
      .def_readonly("precision", &NnSpeed::precision,
                    "The precision of the device's published times: 'fp32', or 'fp16' where the "
                    "core has ARMv8.2 half-precision arithmetic and benchncnn used it.")
      .def_readonly("basis", &NnSpeed::basis,
                    "'ncnn' (published per-graph times) or 'vector' (edgeprof-probe's vector "
                    "kernel on the device against this host's).")
      .def_readonly("vector_units", &NnSpeed::vector_units,
                    "For basis 'vector': the units the kernel ran on, device and host.")
      .def_readonly("memory_mb_per_ms", &NnSpeed::memory_mb_per_ms,
                    "A workload's activation MB per host ms, for its own speed by a memory term "
                    "(Device.for_runtime); 0 for one speed.")
      .def_readonly("per_host_ms", &NnSpeed::per_host_ms,
                    "With a memory term: device ms per host ms, one core.")
      .def_readonly("ms_per_mb", &NnSpeed::ms_per_mb,
                    "With a memory term: device ms per MB of activations, one core.")
      .def_readonly("threads", &NnSpeed::threads,
                    "The thread count of the device's published times (1, or its cores).")
      .def_readonly("one_core_factor", &NnSpeed::one_core_factor,
                    "What the device's times were multiplied by to be one core's: the board's "
                    "speed-up from one thread to `threads` by its ncnn tables (estimated).")
      .def("__str__", [](const NnSpeed& s) { return describe(s); })
      .def("__repr__", [](const NnSpeed& s) {
        return "NnSpeed(core_speed=" + repr_float(s.core_speed) +
               ", models=" + std::to_string(s.ratios.size()) + ")";
      });
  m.def("is_nn_precision", &is_nn_precision, py::arg("precision"),
        "Whether edgeprof knows this precision: 'fp32', 'fp16' or 'int8'.");
  m.def("nn_speed", &nn_speed, py::arg("device_ms"), py::arg("host_ms"),
        py::arg("precision") = "fp32",
        "The nn speed from a device's published ms per model and this host's (dicts by model "
        "name), over the models both have.");
  m.def("nn_speed_from_scores", &nn_speed_from_scores, py::arg("device"), py::arg("host"),
        "The nn speed of a probed device: its vector-kernel score / this host's (fp32).");
  py::class_<NnMemoryFit>(m, "NnMemoryFit",
                          "A device time as per_host_ms x this host's one-thread time + "
                          "ms_per_mb per MB of activations (estimated; nn_memory_fit()).")
      .def_readonly("per_host_ms", &NnMemoryFit::per_host_ms, "Device ms per host ms.")
      .def_readonly("ms_per_mb", &NnMemoryFit::ms_per_mb, "Device ms per MB of activations.")
      .def_readonly("held_out_ms", &NnMemoryFit::held_out_ms,
                    "Each model's device time from a fit on the others, by model.")
      .def_readonly("loo_median_error", &NnMemoryFit::loo_median_error,
                    "Held-out |predicted / published - 1|, median.")
      .def_readonly("loo_worst_error", &NnMemoryFit::loo_worst_error,
                    "Held-out |predicted / published - 1|, worst.")
      .def_readonly("loo_log_sd", &NnMemoryFit::loo_log_sd,
                    "Standard deviation of the held-out log(published / predicted).")
      .def("__repr__", [](const NnMemoryFit& f) {
        return "NnMemoryFit(per_host_ms=" + repr_float(f.per_host_ms) +
               ", ms_per_mb=" + repr_float(f.ms_per_mb) +
               ", models=" + std::to_string(f.held_out_ms.size()) + ")";
      });
  m.def("nn_memory_fit", &nn_memory_fit, py::arg("device_ms"), py::arg("host_ms"),
        py::arg("activation_mb"),
        "Fits a device's ms per model (dict by model name) as a multiple of this host's "
        "one-thread ms plus a cost per MB of activations (NnRating.activation_mb), both terms "
        ">= 0, with each model held out; Error with fewer than 4 models in all three.");
  m.def("nn_memory_predict", &nn_memory_predict, py::arg("fit"), py::arg("host_ms"),
        py::arg("activation_mb"),
        "A device time by the fit: per_host_ms x host_ms + ms_per_mb x activation_mb.");
  py::class_<TimeInterval>(m, "TimeInterval",
                           "Where a device's own time may lie around an emulated one: low x .. "
                           "high x it, for a share `level` of workloads (estimated).")
      .def_readonly("level", &TimeInterval::level, "The share of workloads expected inside.")
      .def_readonly("low", &TimeInterval::low, "Device time / emulated time at the lower end.")
      .def_readonly("high", &TimeInterval::high, "Device time / emulated time at the upper end.")
      .def_readonly("models", &TimeInterval::models,
                    "The models whose held-out errors it comes from.")
      .def_readonly("emulation_log_sd", &TimeInterval::emulation_log_sd,
                    "The emulation's spread included (sd of log time); 0: the speed's error "
                    "only.")
      .def_readonly("projection_log_sd", &TimeInterval::projection_log_sd,
                    "A projected time's spread from the board's speed-up included (sd of log "
                    "time); 0: not projected.")
      .def("__repr__", [](const TimeInterval& i) {
        return "TimeInterval(level=" + repr_float(i.level) + ", low=" + repr_float(i.low) +
               ", high=" + repr_float(i.high) + ", models=" + std::to_string(i.models) +
               ", emulation_log_sd=" + repr_float(i.emulation_log_sd) +
               ", projection_log_sd=" + repr_float(i.projection_log_sd) + ")";
      });
  m.def("time_interval",
        py::overload_cast<const NnSpeed&, double, double, double>(&time_interval),
        py::arg("speed"), py::arg("level") = 0.9,
        py::arg("emulation_log_sd") = 0.0, py::arg("projection_log_sd") = 0.0,
        "The interval of a device's time around one emulated at `speed`, from the spread of its "
        "held-out errors, the emulation's and a projection's (sd of log time; Student's t); "
        "None with fewer than 3 models or a vector speed.");
  m.def("time_interval",
        py::overload_cast<const NnMemoryFit&, double, double, double>(&time_interval),
        py::arg("fit"), py::arg("level") = 0.9, py::arg("emulation_log_sd") = 0.0,
        py::arg("projection_log_sd") = 0.0,
        "The same interval around a time predicted by a memory fit (nn_memory_predict), from "
        "the fit's held-out errors (t with models - 2 degrees of freedom); None with fewer "
        "than 4 models.");

  py::class_<RuntimeTimes>(m, "RuntimeTimes",
                           "A device's published inference times with one runtime other than "
                           "ncnn (Device.runtime_ms).")
      .def_readonly("precision", &RuntimeTimes::precision,
                    "The arithmetic they ran in, e.g. 'fp32'.")
      .def_readonly("threads", &RuntimeTimes::threads,
                    "The threads they ran with (the runtime's default: all the cores).")
      .def_readonly("ms", &RuntimeTimes::ms, "ms per inference, by model.")
      .def("__repr__", [](const RuntimeTimes& t) {
        return "RuntimeTimes(precision=" + repr_str(t.precision) +
               ", threads=" + std::to_string(t.threads) +
               ", models=" + std::to_string(t.ms.size()) + ")";
      });
  py::class_<NnRuntime>(m, "NnRuntime",
                        "A runtime this host's nn rating can be measured with (nn_runtimes()).")
      .def_readonly("id", &NnRuntime::id, "'ncnn', 'pytorch': as in Result.runtimes_seen.")
      .def_readonly("name", &NnRuntime::name, "Its name for people, e.g. 'PyTorch'.")
      .def_readonly("install", &NnRuntime::install, "What installs it.")
      .def_readonly("precision", &NnRuntime::precision,
                    "The arithmetic its rating runs in; '' for ncnn (the host's).")
      .def_readonly("models", &NnRuntime::models, "What its rating times, in order.")
      .def_readonly("cache_name", &NnRuntime::cache_name,
                    "Its rating's cache file in the calibration cache directory: 'host-nn.json', "
                    "'host-nn-pytorch.json', ...")
      .def_readonly("precision_of", &NnRuntime::precision_of,
                    "The runtime this one is another precision of: 'pytorch' for "
                    "'pytorch-int8' (named with runtime=, never seen in a workload's maps); "
                    "'' for a runtime itself.")
      .def_readonly("runner_args", &NnRuntime::runner_args,
                    "What its runner is told before the models, as the rating tells it.")
      .def_readonly("share_seconds", &NnRuntime::share_seconds,
                    "About how long its own share under a quota takes on a 2-vCPU host.")
      .def_readonly("share_duration", &NnRuntime::share_duration,
                    "share_seconds as notes say it: 'about 80 s', 'about 13 minutes'.")
      .def("__repr__", [](const NnRuntime& r) { return "NnRuntime(id=" + repr_str(r.id) + ")"; });
  m.def("nn_runtimes", &nn_runtimes, py::return_value_policy::copy,
        "Every runtime an nn rating can be measured with, ncnn first.");
  m.def(
      "set_default_ncnn_python",
      [](const py::object& path) {
        set_default_ncnn_python(fs_path(path, "set_default_ncnn_python's path"));
      },
      py::arg("path"),
        "The interpreter ncnn's measurements run in where none is named and $EDGEPROF_PYTHON "
        "is unset; '' = python3 on PATH. edgeprof sets it to sys.executable on import.");
  m.def(
      "default_ncnn_python", [] { return fs_text(default_ncnn_python()); },
        "The interpreter set_default_ncnn_python() gave; '' = none (python3 on PATH).");
  py::class_<NnRating>(m, "NnRating", "This host's CNN inference times: the reference graphs "
                                      "run with ncnn (or another runtime's models), one thread, "
                                      "pinned to one CPU.")
      .def_readonly("host_ms", &NnRating::host_ms, "Median ms per inference, by graph or model.")
      .def_readonly("cpu_ms", &NnRating::cpu_ms,
                    "The runner's CPU time per inference (median ms, by graph), where it "
                    "reports it: the work without the wait for a CPU.")
      .def_readonly("activation_mb", &NnRating::activation_mb,
                    "MB each model's layers write per inference, where the runner reports it "
                    "(PyTorch's, PyTorch int8's and ONNX Runtime's ratings).")
      .def_readonly("runtime_id", &NnRating::runtime_id, "'ncnn', 'pytorch' (NnRuntime.id).")
      .def_readonly("runtime", &NnRating::runtime,
                    "The runtime as its runner reported it, e.g. 'ncnn 1.0.20261020 (PyPI)'.")
      .def_readonly("precision", &NnRating::precision,
                    "The arithmetic the graphs ran in: 'fp32', or 'fp16' on ARMv8.2 cores.")
      .def_property_readonly("command", fs_text_of(&NnRating::command),
                             "The interpreter that ran it.")
      .def_readonly("cpu", &NnRating::cpu, "The CPU it was pinned to (the first of several).")
      .def_readonly("loops", &NnRating::loops, "Timed inferences per graph, after the warm-up.")
      .def_readonly("cpu_model", &NnRating::cpu_model, "The CPU model, from /proc/cpuinfo.")
      .def_readonly("kernel", &NnRating::kernel, "The kernel release.")
      .def_readonly("hostname", &NnRating::hostname, "The host name.")
      .def_readonly("measured_at", &NnRating::measured_at, "When it was measured, ISO 8601 UTC.")
      .def_readonly("seconds", &NnRating::seconds, "How long it took, in seconds.")
      .def_property_readonly("cache_file", fs_text_of(&NnRating::cache_file),
                             "Where it is cached; '' when it was not.")
      .def_property_readonly("note", text_of(&NnRating::note),
                             "Why it was not cached; '' otherwise.")
      .def("__str__", [](const NnRating& r) { return text(describe(r)); })
      .def("__repr__", [](const NnRating& r) {
        return "NnRating(graphs=" + std::to_string(r.host_ms.size()) +
               ", measured_at=" + repr_str(r.measured_at) + ")";
      });
  m.def(
      "cached_nn_rating",
      [](const std::string& runtime) { return cached_nn_rating(nullptr, runtime); },
      py::kw_only(), py::arg("runtime") = "ncnn",
      "This host's cached nn rating with the runtime (same CPU model, kernel and host name, "
      "every graph or model), or None. Never measures. Error for an unknown runtime.");
  m.def(
      "why_not_cached_nn_rating",
      [](const std::string& runtime) {
        std::string why;
        // (A path that is not UTF-8 shows its bytes escaped.)
        return edgeprof_py::text(cached_nn_rating(&why, runtime) ? std::string() : why);
      },
      py::kw_only(), py::arg("runtime") = "ncnn",
      "Why cached_nn_rating(runtime=) gives None (not measured yet, the file corrupt, measured "
      "on another CPU, kernel or host, its models changed: the file and what to do), or '' when "
      "it gives a rating.");
  m.def(
      "measure_nn_rating",
      [](const std::string& runtime, const py::object& python,
         const std::vector<std::string>& graphs, int warmup, int loops, int cpu, double timeout_s,
         const std::optional<std::function<void(py::str)>>& progress) {
        NnOptions options;
        options.runtime = runtime;
        options.python =
            fs_path(python, "measure_nn_rating's python");
        options.graphs = graphs;
        options.warmup = warmup;
        options.loops = loops;
        options.cpu = cpu;
        options.timeout = to_whole_seconds("measure_nn_rating", timeout_s);
        options.progress = with_signal_check(progress);
        py::gil_scoped_release unlocked;
        return measure_nn_rating(options);
      },
      py::kw_only(), py::arg("runtime") = "ncnn", py::arg("python") = "",
      py::arg("graphs") = std::vector<std::string>{},
      py::arg("warmup") = 4, py::arg("loops") = 8, py::arg("cpu") = -1,
      py::arg("timeout_s") = 900.0, py::arg("progress") = py::none(),
      "Runs the reference graphs with ncnn (the Python package, `pip install ncnn`), or the "
      "models of another runtime (runtime='pytorch': `pip install torch torchvision timm`), "
      "one thread pinned to one CPU (ncnn's seconds, another runtime's about a minute), and caches the times when every graph "
      "ran; ncnn's give catalog devices with published times an nn speed. python: the "
      "interpreter with the runtime; by default $EDGEPROF_PYTHON, else for ncnn this one "
      "(sys.executable), else python3 on PATH. Error when the runtime is unknown, Python or the "
      "runtime is missing, or it fails.");

  py::class_<HostScaling>(m, "HostScaling",
                          "How this host's CNN inference speeds up from one thread to N, graph "
                          "by graph (measure_host_scaling()).")
      .def_readonly("threads", &HostScaling::threads, "N.")
      .def_readonly("one_ms", &HostScaling::one_ms,
                    "Median ms per inference with one thread, by graph (measured).")
      .def_readonly("many_ms", &HostScaling::many_ms, "The same with N threads (measured).")
      .def_readonly("cpus", &HostScaling::cpus, "The CPUs the N threads had.")
      .def_readonly("rounds", &HostScaling::rounds,
                    "How many one- and N-thread runs each were made, alternating.")
      .def_readonly("runtime", &HostScaling::runtime,
                    "The runtime, e.g. 'ncnn 1.0.20261020 (Python 3.11.7)'.")
      .def_readonly("measured_at", &HostScaling::measured_at, "When it was measured, ISO 8601 UTC.")
      .def_readonly("seconds", &HostScaling::seconds, "How long it took, in seconds.")
      .def("speedup", &HostScaling::speedup, py::arg("graph"),
           "one_ms / many_ms of a graph; Error for a graph not measured.")
      .def("median_speedup", [](const HostScaling& h, const std::string& without) {
             return h.median_speedup(without);
           }, py::arg("without_graph") = "",
           "The median speed-up over the graphs but `without_graph`.")
      .def("__repr__", [](const HostScaling& h) {
        return "HostScaling(threads=" + std::to_string(h.threads) +
               ", graphs=" + std::to_string(h.one_ms.size()) +
               ", median_speedup=" + repr_float(h.one_ms.empty() ? 0.0 : h.median_speedup()) +
               ")";
      });
  m.def(
      "measure_host_scaling",
      [](const py::object& python, const std::string& runtime,
         const std::vector<std::string>& graphs, int threads, const std::vector<int>& cpus,
         int rounds, int warmup, int loops, double timeout_s,
         const std::optional<std::function<void(py::str)>>& progress) {
        HostScalingOptions options;
        options.python =
            fs_path(python, "measure_host_scaling's python");
        options.runtime = runtime;
        options.graphs = graphs;
        options.threads = threads;
        options.cpus = cpus;
        options.rounds = rounds;
        options.warmup = warmup;
        options.loops = loops;
        options.timeout = to_whole_seconds("measure_host_scaling", timeout_s);
        options.progress = with_signal_check(progress);
        py::gil_scoped_release unlocked;
        return measure_host_scaling(options);
      },
      py::kw_only(), py::arg("python") = "", py::arg("runtime") = "ncnn",
      py::arg("graphs") = std::vector<std::string>{}, py::arg("threads") = 2,
      py::arg("cpus") = std::vector<int>{}, py::arg("rounds") = 3, py::arg("warmup") = 3,
      py::arg("loops") = 7, py::arg("timeout_s") = 600.0, py::arg("progress") = py::none(),
      "Runs the reference graphs with ncnn (or runtime='pytorch' or 'onnxruntime': its "
      "models) unthrottled, alternately with N threads on N CPUs and one (about 30 s for "
      "ncnn), and returns how each sped up. Nothing is cached. Error for options out of range, "
      "when Python or the runtime is missing, or when N threads ran the median graph slower "
      "than one (the other CPUs were busy: measure again).");
  m.def(
      "workload_scaling",
      [](const HostScaling& host, double workload_speedup, const std::string& without_graph) {
        return workload_scaling(host, workload_speedup, without_graph);
      },
      py::arg("host"), py::arg("workload_speedup"), py::kw_only(),
      py::arg("without_graph") = "",
      "The factor on a board's published speed-up for a workload that sped up "
      "`workload_speedup` times from one thread to host.threads on this host: that over the "
      "median speed-up of the graphs or models host measured, within 0.5 to 2. Give it to "
      "run(), Slice, compare() or plan_emulation() as workload_scaling= (projected core "
      "emulation; docs/threads.md). "
      "Error for a speed-up that is not a positive number.");

  py::class_<QuotaSharePoint>(m, "QuotaSharePoint",
                              "The emulation's own share at one fraction of a host CPU.")
      .def_readonly("speed", &QuotaSharePoint::speed, "The quota, as a fraction of a host CPU.")
      .def_readonly("share", &QuotaSharePoint::share,
                    "Emulated time x speed / unthrottled time, the medians made "
                    "non-increasing in speed: 1.3 is a quota that bought 1 / 1.3 of its share "
                    "of a core's work.")
      .def_readonly("measured", &QuotaSharePoint::measured,
                    "The median as measured, before the shares were made non-increasing.")
      .def_readonly("p10", &QuotaSharePoint::p10,
                    "The 10th percentile of emulated time x speed / unthrottled time over the "
                    "graphs and rounds.")
      .def_readonly("p90", &QuotaSharePoint::p90, "Its 90th percentile.")
      .def_readonly("p25", &QuotaSharePoint::p25, "0 in a share cached before quartiles.")
      .def_readonly("p75", &QuotaSharePoint::p75,
                    "Its 75th percentile; 0 in a share cached before quartiles.")
      .def_readonly("samples", &QuotaSharePoint::samples, "Graphs x rounds.")
      .def_readonly("by_graph", &QuotaSharePoint::by_graph,
                    "Each graph's (or model's) own median over the rounds; {} in shares cached "
                    "before it.")
      .def("__repr__", [](const QuotaSharePoint& p) {
        return "QuotaSharePoint(speed=" + repr_float(p.speed) + ", share=" + repr_float(p.share) +
               ")";
      });
  py::class_<QuotaShare>(m, "QuotaShare",
                         "This host's own share under CPU quotas for one runtime's inference "
                         "(runtime_id): the quota scale that plans of nn speeds apply.")
      .def_readonly("points", &QuotaShare::points, "By speed, ascending.")
      .def_readonly("period_us", &QuotaShare::period_us,
                    "The CFS period the slices asked for, in us: always edgeprof's default "
                    "(10000); their plans lengthen it where the quota would fall under 1 ms, as a "
                    "device's plan does.")
      .def_readonly("keep_warm", &QuotaShare::keep_warm,
                    "Whether keep-warm ran where plans have it (quotas up to 0.55 of a CPU); "
                    "False where no slice ran at or under that.")
      .def_readonly("graphs", &QuotaShare::graphs,
                    "The reference graphs (or the runtime's models) run.")
      .def_readonly("rounds", &QuotaShare::rounds, "Times every speed was measured.")
      .def_readonly("loops", &QuotaShare::loops, "Timed inferences per graph and run.")
      .def_readonly("cpu", &QuotaShare::cpu, "The CPU the slices had.")
      .def_readonly("runtime", &QuotaShare::runtime,
                    "The runtime, e.g. 'ncnn 1.0.20261020 (PyPI)'.")
      .def_readonly("runtime_id", &QuotaShare::runtime_id,
                    "The NnRuntime id whose inference was timed: 'ncnn', 'pytorch', ...")
      .def_readonly("cpu_model", &QuotaShare::cpu_model, "The CPU model, from /proc/cpuinfo.")
      .def_readonly("kernel", &QuotaShare::kernel, "The kernel release.")
      .def_readonly("hostname", &QuotaShare::hostname, "The host name.")
      .def_readonly("measured_at", &QuotaShare::measured_at, "When it was measured, ISO 8601 UTC.")
      .def_readonly("seconds", &QuotaShare::seconds, "How long it took, in seconds.")
      .def_property_readonly("cache_file", fs_text_of(&QuotaShare::cache_file),
                             "Where it is cached; '' when it was not.")
      .def_property_readonly("note", text_of(&QuotaShare::note),
                             "Why it was not cached; '' otherwise.")
      .def("share_at", &own_share_at, py::arg("speed"),
           "The own share of a slice whose quota is `speed` of a host CPU (interpolated).")
      .def("log_sd_at", &own_share_log_sd, py::arg("speed"),
           "How much one emulated time scatters at a quota of `speed` of a host CPU (sd of "
           "log own share, from the interquartile range of the nearest points).")
      .def("scale_at", &quota_scale_at, py::arg("speed"),
           "The quota scale for a device core of `speed` of a host CPU: the k whose scaled "
           "quota's own share is k.")
      .def("__str__", [](const QuotaShare& q) { return describe(q); })
      .def("__repr__", [](const QuotaShare& q) {
        return "QuotaShare(points=" + std::to_string(q.points.size()) +
               ", measured_at=" + repr_str(q.measured_at) + ")";
      });
  m.def(
      "cached_quota_share",
      [](const std::string& runtime) { return cached_quota_share(nullptr, runtime); },
      py::kw_only(), py::arg("runtime") = "ncnn",
      "This host's cached own share under a quota with `runtime` (same CPU model, kernel and "
      "host name), or None. Never measures. Error for an unknown runtime.");
  m.def(
      "why_not_cached_quota_share",
      [](const std::string& runtime) {
        std::string why;
        // (A path that is not UTF-8 shows its bytes escaped.)
        return edgeprof_py::text(cached_quota_share(&why, runtime) ? std::string() : why);
      },
      py::kw_only(), py::arg("runtime") = "ncnn",
      "Why cached_quota_share(runtime=) gives None (not measured yet, the file corrupt, measured "
      "on another CPU, kernel or host: the file and what to do), or '' when it gives a share.");
  m.def(
      "measure_quota_share",
      [](const std::string& runtime, const py::object& python,
         const std::optional<std::vector<std::string>>& graphs,
         const std::optional<std::vector<double>>& speeds, int rounds, int warmup, int loops,
         int cpu, double timeout_s,
         const std::optional<std::function<void(py::str)>>& progress) {
        QuotaShareOptions options;
        options.runtime = runtime;
        options.python =
            fs_path(python, "measure_quota_share's python");
        if (graphs) options.graphs = *graphs;
        if (speeds) options.speeds = *speeds;
        options.rounds = rounds;
        options.warmup = warmup;
        options.loops = loops;
        options.cpu = cpu;
        options.timeout = to_whole_seconds("measure_quota_share", timeout_s);
        options.progress = with_signal_check(progress);
        py::gil_scoped_release unlocked;
        return measure_quota_share(options);
      },
      py::kw_only(), py::arg("runtime") = "ncnn", py::arg("python") = "",
      py::arg("graphs") = py::none(), py::arg("speeds") = py::none(), py::arg("rounds") = 3,
      py::arg("warmup") = 2,
      py::arg("loops") = 5, py::arg("cpu") = -1, py::arg("timeout_s") = 600.0,
      py::arg("progress") = py::none(),
      "Measures this host's own share under a CPU quota with `runtime` (about "
      "NnRuntime.share_seconds; needs root for the slices, and the runtime): reference graphs "
      "(or the runtime's models) run one thread, alternately unthrottled and in one-core "
      "slices at a few speeds (graphs, speeds: None = the runtime's defaults), and caches it "
      "for the plans of nn speeds at that runtime's speed. Error when an option is out of "
      "range, the runtime is unknown, Python or the runtime is missing, or a run fails.");

  py::class_<HostDrift>(m, "HostDrift",
                        "How much slower this host runs inference now than at its rating "
                        "with a runtime (measured by a short probe of a few of its graphs).")
      .def_readonly("factor", &HostDrift::factor,
                    "Median over the probe's graphs of time now / time at the rating; above 1, "
                    "slower now. In CPU time where the rating has it (cpu_time).")
      .def_readonly("ratios", &HostDrift::ratios,
                    "Time now / time at the rating, by graph (CPU times where cpu_time).")
      .def_readonly("cpu_time", &HostDrift::cpu_time, "factor compares CPU times.")
      .def_readonly("waiting", &HostDrift::waiting,
                    "The probe's wall time / its CPU time per inference (median): about 1 when "
                    "it had its CPU to itself; NaN when its runner reported no CPU time.")
      .def_readonly("wall_factor", &HostDrift::wall_factor,
                    "Median wall time now / at the rating: what an unthrottled run sees.")
      .def_readonly("cpu", &HostDrift::cpu, "The CPU the probe ran on.")
      .def_readonly("loops", &HostDrift::loops,
                    "Timed inferences per graph; their median is the time.")
      .def_readonly("measured_at", &HostDrift::measured_at, "When the probe ran, ISO 8601 UTC.")
      .def_readonly("rated_at", &HostDrift::rated_at, "The rating's measured_at.")
      .def_readonly("seconds", &HostDrift::seconds, "How long the probe took, in seconds.")
      .def_readonly("runtime_id", &HostDrift::runtime_id,
                    "The rating's runtime: 'ncnn', 'pytorch', ...")
      .def("__str__", [](const HostDrift& d) { return describe(d); })
      .def("__repr__", [](const HostDrift& d) {
        return "HostDrift(factor=" + repr_float(d.factor) + ", measured_at=" +
               repr_str(d.measured_at) + ")";
      });
  m.def(
      "measure_host_drift",
      [](const NnRating& rating, const py::object& python,
         const std::optional<std::vector<std::string>>& graphs, int warmup, int loops, int cpu,
         double timeout_s,
         const std::optional<std::function<void(py::str)>>& progress) {
        DriftOptions options;
        options.python = fs_path(python, "measure_host_drift's python");
        if (graphs) options.graphs = *graphs;
        options.warmup = warmup;
        options.loops = loops;
        options.cpu = cpu;
        options.timeout = to_whole_seconds("measure_host_drift", timeout_s);
        options.progress = with_signal_check(progress);
        py::gil_scoped_release unlocked;
        return measure_host_drift(rating, options);
      },
      py::arg("rating"), py::kw_only(), py::arg("python") = "", py::arg("graphs") = py::none(),
      py::arg("warmup") = 4, py::arg("loops") = 5, py::arg("cpu") = -1,
      py::arg("timeout_s") = 60.0, py::arg("progress") = py::none(),
      "Probes this host's drift since `rating` (an NnRating, cached_nn_rating()): a few of "
      "its graphs with ncnn, one thread, pinned, unthrottled (about half a second); another "
      "runtime's rating with that runtime and three of its models, timed as it was rated, in "
      "the interpreter it ran in unless `python` names one (tens of seconds; progress(line) "
      "hears it go). Error when the rating has none of the graphs, or Python or the runtime "
      "is missing.");
}
