// The conversions that several bind_*.cpp files share; bind_common.hpp says what each does.
#include "bind_common.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <edgeprof/catalog.hpp>
#include <edgeprof/device.hpp>
#include <edgeprof/error.hpp>
#include <edgeprof/plan.hpp>
#include <edgeprof/slice.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bind_microbench.hpp"

namespace py = pybind11;
using namespace edgeprof;

namespace edgeprof_py {

namespace {

// A new str from CPython's decoder, or its error (MemoryError) raised: never a null str.
py::str checked(PyObject* decoded) {
  if (!decoded) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

}  // namespace

py::str text(std::string_view s) {
  return checked(
      PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "backslashreplace"));
}

py::str fs_text(std::string_view s) {
  return checked(PyUnicode_DecodeFSDefaultAndSize(s.data(), static_cast<py::ssize_t>(s.size())));
}

py::list texts(const std::vector<std::string>& v) {
  py::list out;
  for (const std::string& s : v) out.append(text(s));
  return out;
}

py::list fs_texts(const std::vector<std::string>& v) {
  py::list out;
  for (const std::string& s : v) out.append(fs_text(s));
  return out;
}

std::string fs_path(const py::handle& value, std::string_view what) {
  if (!py::isinstance<py::str>(value) && !py::isinstance<py::bytes>(value) &&
      !py::hasattr(value, "__fspath__")) {
    throw py::type_error(std::string(what) + " must be a str, bytes or os.PathLike, got " +
                         py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  }
  const py::object os = py::module_::import("os");
  return os.attr("fsencode")(os.attr("fspath")(value)).cast<std::string>();
}

Device to_device(const py::object& value) {
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value)) {
    return find_device(fs_path(value, "device"));
  }
  if (py::hasattr(value, "__fspath__")) return load_device_file(fs_path(value, "device"));
  if (!py::isinstance<Device>(value)) {
    throw py::type_error(
        "device: expected a Device, a device's name or a device file's path, got " +
        py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  }
  return value.cast<Device>();
}

SliceOptions to_slice_options(const py::object& parent, std::uint64_t cpu_period_us,
                              const std::vector<int>& cpus, bool allow_missing,
                              std::optional<double> iteration_time, bool keep_warm,
                              const std::string& speed_kind, bool thread_env,
                              const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale,
                              std::optional<bool> drift_check,
                              std::optional<double> workload_scaling,
                              std::optional<bool> count_activations) {
  SliceOptions o;
  if (count_activations) o.plan.count_activations = *count_activations;
  o.plan.workload_scaling = workload_scaling;
  o.plan.core_scaling = core_scaling;
  if (drift_check) o.plan.drift_check = *drift_check;
  o.plan.quota_scale = quota_scale;
  o.plan.cores = core_emulation_from_string(core_emulation);
  o.plan.keep_warm = keep_warm;
  o.plan.thread_env = thread_env;
  o.plan.speed_kind = speed_kind_from_string(speed_kind);
  if (!parent.is_none()) o.parent = fs_path(parent, "parent (a cgroup path)");
  o.plan.cpu_period_us = cpu_period_us;
  if (iteration_time) {
    if (!(*iteration_time > 0) || !std::isfinite(*iteration_time)) {
      throw Error("iteration_time must be a positive number of seconds, got " +
                  std::string(py::repr(py::float_(*iteration_time))));
    }
    o.plan.iteration_time_us = static_cast<std::uint64_t>(std::llround(*iteration_time * 1e6));
  }
  o.plan.cpus = cpus;
  // A first run on a host without its nn rating measures it (about a minute): say so on
  // sys.stderr, which notebooks show too.
  o.plan.nn_measure.progress = with_signal_check([](py::str line) {
    py::module_::import("sys").attr("stderr").attr("write")(py::str("edgeprof: {}\n").format(line));
  });
  o.allow_missing_controllers = allow_missing;
  return o;
}

InterruptCheck python_signals() {
  return [] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
}

std::chrono::nanoseconds to_interval(std::optional<double> seconds) {
  if (!seconds || *seconds == 0) return std::chrono::nanoseconds(0);
  if (!(*seconds > 0) || !(*seconds < 9e9)) {
    throw Error("sampling interval " + py::repr(py::float_(*seconds)).cast<std::string>() +
                " s is out of range: give seconds from 0.001 to 60, or None (or 0) for no sampling");
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(*seconds * 1e9 + 0.5));
}

std::optional<std::chrono::duration<double>> to_timeout(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return std::chrono::duration<double>(*seconds);
}

std::chrono::seconds to_whole_seconds(const char* function, double timeout_s) {
  if (!std::isfinite(timeout_s) || timeout_s < 1) {
    throw Error(std::string(function) + ": timeout_s must be at least 1, got " +
                py::repr(py::float_(timeout_s)).cast<std::string>());
  }
  return std::chrono::seconds(std::llround(timeout_s));
}

}  // namespace edgeprof_py
