// Bindings of include/edgeprof/microbench.hpp and reference.hpp: type conversion only. The suite
// and 7-Zip's benchmark run without the GIL, so other Python threads go on while they measure.
#include "bind_microbench.hpp"

#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <edgeprof/microbench.hpp>
#include <edgeprof/reference.hpp>
#include <functional>
#include <optional>
#include <string>

namespace py = pybind11;
using namespace edgeprof;

namespace {

std::string repr_float(double v) { return py::repr(py::float_(v)).cast<std::string>(); }

std::string repr_str(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

std::string repr(const CoreScores& s) {
  return "CoreScores(suite=" + repr_str(s.suite) + ", integer=" + repr_float(s.integer) +
         ", floating=" + repr_float(s.floating) + ", memory=" + repr_float(s.memory) + ")";
}

}  // namespace

void bind_microbench(py::module_& m) {
  m.attr("SUITE_VERSION") = kSuiteVersion;

  py::class_<CoreScores>(m, "CoreScores",
                         "Per-core (single-thread) scores of the micro-benchmark suite; higher "
                         "is faster. Only ratios between machines measured by the same suite "
                         "version mean anything.")
      .def(py::init([](double integer, double floating, double memory, std::string suite) {
             CoreScores s;
             s.suite = std::move(suite);
             s.integer = integer;
             s.floating = floating;
             s.memory = memory;
             return s;
           }),
           py::kw_only(), py::arg("integer"), py::arg("floating"), py::arg("memory"),
           py::arg("suite") = kSuiteVersion)
      .def_readonly("suite", &CoreScores::suite, "The suite version that measured them.")
      .def_readonly("integer", &CoreScores::integer, "Integer kernel: units per second.")
      .def_readonly("floating", &CoreScores::floating, "Floating-point kernel: units per second.")
      .def_readonly("memory", &CoreScores::memory,
                    "Memory-bound kernel: millions of dependent loads per second.")
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def("__repr__", [](const CoreScores& s) { return repr(s); });

  m.def(
      "run_suite",
      [](double per_kernel_s, int repeats, int cpu) {
        if (!std::isfinite(per_kernel_s) || per_kernel_s < 0.001 || per_kernel_s > 60) {
          throw py::value_error("run_suite: per_kernel_s must be between 0.001 and 60 s, got " +
                                repr_float(per_kernel_s));
        }
        SuiteOptions options;
        options.per_kernel = std::chrono::milliseconds(std::llround(per_kernel_s * 1000));
        options.repeats = repeats;
        options.cpu = cpu;
        py::gil_scoped_release unlocked;
        return run_suite(options);
      },
      py::kw_only(), py::arg("per_kernel_s") = 0.2, py::arg("repeats") = 5, py::arg("cpu") = -1,
      "Runs the micro-benchmark suite on one CPU (cpu=-1: the one this thread is on) and "
      "returns the median scores of `repeats` timed runs of about per_kernel_s seconds each.");

  m.def("speed_from_scores", &speed_from_scores, py::arg("device"), py::arg("host"),
        "One device core's speed relative to one host core: the geometric mean of the three "
        "score ratios. DeviceError when the suite versions differ or a score is not positive.");

  py::class_<HostCalibration>(m, "HostCalibration",
                              "This host's per-core scores and where they came from.")
      .def_readonly("scores", &HostCalibration::scores)
      .def_readonly("cpu_model", &HostCalibration::cpu_model)
      .def_readonly("kernel", &HostCalibration::kernel)
      .def_readonly("hostname", &HostCalibration::hostname)
      .def_readonly("measured_at", &HostCalibration::measured_at,
                    "When the scores were measured, ISO 8601 UTC.")
      .def_readonly("from_cache", &HostCalibration::from_cache)
      .def_readonly("cache_file", &HostCalibration::cache_file,
                    "The cache file, or '' when no cache directory is known.")
      .def_readonly("note", &HostCalibration::note,
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
      "same CPU model, kernel and host name, else measured (a few seconds) and cached.");

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
      .def_readonly("command", &ReferenceRating::command)
      .def_readonly("version", &ReferenceRating::version, "7-Zip's banner line.")
      .def_readonly("cpu", &ReferenceRating::cpu, "The host CPU 7-Zip was pinned to.")
      .def_readonly("cpu_model", &ReferenceRating::cpu_model)
      .def_readonly("kernel", &ReferenceRating::kernel)
      .def_readonly("hostname", &ReferenceRating::hostname)
      .def_readonly("measured_at", &ReferenceRating::measured_at, "ISO 8601 UTC.")
      .def_readonly("seconds", &ReferenceRating::seconds, "How long the benchmark took.")
      .def_readonly("cache_file", &ReferenceRating::cache_file,
                    "Where it is cached; '' when it could not be.")
      .def_readonly("note", &ReferenceRating::note,
                    "Why it was not cached; '' when it was, or was read from the cache.")
      .def("__str__", [](const ReferenceRating& r) { return describe(r); })
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
      "measure_reference_rating",
      [](const std::string& program, int cpu, double timeout_s,
         const std::optional<std::function<void(const std::string&)>>& progress) {
        if (!std::isfinite(timeout_s) || timeout_s < 1) {
          throw py::value_error("measure_reference_rating: timeout_s must be at least 1, got " +
                                repr_float(timeout_s));
        }
        ReferenceOptions options;
        options.program = program;
        options.cpu = cpu;
        options.timeout = std::chrono::seconds(std::llround(timeout_s));
        if (progress) options.progress = *progress;
        py::gil_scoped_release unlocked;
        return measure_reference_rating(options);
      },
      py::kw_only(), py::arg("program") = "", py::arg("cpu") = -1, py::arg("timeout_s") = 600.0,
      py::arg("progress") = py::none(),
      "Runs 7-Zip's single-thread benchmark (`7zz b -mmt1`, about 40 s) pinned to one CPU and "
      "caches the rating, so that catalog devices loaded from then on have core speeds "
      "relative to this host. progress(line) is called as it goes. Error when no 7-Zip is "
      "installed or it fails.");
}
