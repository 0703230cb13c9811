// edgeprof._core: converts between Python and C++ types and nothing else. Everything that
// emulates, spawns or measures lives in the C++ library.
#include <algorithm>
#include <cmath>
#include <limits>

#include <pybind11/chrono.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <edgeprof/edgeprof.hpp>

#include "bind_microbench.hpp"

namespace py = pybind11;
using namespace edgeprof;

namespace {

// subprocess.DEVNULL, accepted for "discard this stream".
constexpr int kDevnull = -3;

// Python exception classes, created in PYBIND11_MODULE.
PyObject* error_type = nullptr;
PyObject* device_error_type = nullptr;
PyObject* unsupported_error_type = nullptr;
PyObject* permission_error_type = nullptr;
PyObject* cgroup_error_type = nullptr;
PyObject* spawn_error_type = nullptr;

// Raises `type(message)` with `errno` (and `path`) set. Not OSError's `filename`: with it set,
// OSError.__str__ would print "[Errno 2] None: 'x'" instead of the message, which names the
// file already.
// A C++ message as a Python str: bytes that are not UTF-8 (a device file's or a report's, quoted
// in the message) are kept as \x escapes, not raised as a UnicodeDecodeError in its place.
py::str text(std::string_view s) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "backslashreplace"));
}

void raise(PyObject* type, const Error& e, const char* path = nullptr) {
  py::object exc = py::reinterpret_steal<py::object>(
      PyObject_CallFunctionObjArgs(type, text(e.what()).ptr(), nullptr));
  if (!exc) return;  // the constructor raised; that error stands
  if (e.sys_errno() != 0) exc.attr("errno") = e.sys_errno();
  if (path) exc.attr("path") = text(path);
  PyErr_SetObject(type, exc.ptr());
}

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const DeviceError& e) {
    raise(device_error_type, e);
  } catch (const UnsupportedError& e) {
    raise(unsupported_error_type, e);
  } catch (const PermissionDenied& e) {
    raise(permission_error_type, e);
  } catch (const CgroupError& e) {
    raise(cgroup_error_type, e);
  } catch (const SpawnError& e) {
    raise(spawn_error_type, e, e.path().c_str());
  } catch (const Error& e) {
    raise(error_type, e);
  }
}

PyObject* new_error(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("edgeprof.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

std::uint64_t to_size(const py::object& value, const char* field) {
  if (py::isinstance<py::str>(value)) return parse_size(value.cast<std::string>(), field);
  if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value)) {
    throw DeviceError(std::string(field) + ": expected a size such as \"512MiB\" or a number "
                      "of bytes, got " + py::str(py::type::of(value).attr("__name__"))
                          .cast<std::string>());
  }
  int overflow = 0;
  const long long bytes = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow > 0) {
    throw DeviceError(std::string(field) + " = " + py::str(value).cast<std::string>() +
                      " bytes is too large");
  }
  if (overflow < 0 || bytes < 0) throw DeviceError(std::string(field) + " must not be negative");
  return static_cast<std::uint64_t>(bytes);
}

Device to_device(const py::object& value) {
  if (py::isinstance<py::str>(value)) return find_device(value.cast<std::string>());
  if (py::hasattr(value, "__fspath__")) {
    return load_device_file(py::module_::import("os").attr("fspath")(value).cast<std::string>());
  }
  return value.cast<Device>();
}

Stdio to_stdio(const py::object& value, const char* name) {
  if (value.is_none()) return Stdio::inherit();
  if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    const int fd = value.cast<int>();
    if (fd == kDevnull) return Stdio::discard();
    if (fd >= 0) return Stdio::descriptor(fd);
  }
  if (py::hasattr(value, "fileno") && !py::isinstance<py::str>(value)) {
    return Stdio::descriptor(value.attr("fileno")().cast<int>());
  }
  py::object fspath = py::module_::import("os").attr("fspath");
  try {
    return Stdio::file(py::str(fspath(value)).cast<std::string>());
  } catch (const py::error_already_set&) {
    throw py::type_error(std::string(name) + ": expected None (inherit), subprocess.DEVNULL, "
                         "a file descriptor, a file object or a file path");
  }
}

Command to_command(const std::vector<std::string>& argv, const py::object& env,
                   const py::object& cwd, const py::object& stdin_, const py::object& stdout_,
                   const py::object& stderr_) {
  Command c;
  c.argv = argv;
  if (!env.is_none()) {
    std::vector<std::string> vars;
    for (auto item : env.cast<py::dict>()) {
      vars.push_back(py::str(item.first).cast<std::string>() + "=" +
                     py::str(item.second).cast<std::string>());
    }
    c.env = std::move(vars);
  }
  if (!cwd.is_none()) {
    c.cwd = py::str(py::module_::import("os").attr("fspath")(cwd)).cast<std::string>();
  }
  c.stdin_stream = to_stdio(stdin_, "stdin");
  c.stdout_stream = to_stdio(stdout_, "stdout");
  c.stderr_stream = to_stdio(stderr_, "stderr");
  return c;
}

SliceOptions to_slice_options(const py::object& parent, std::uint64_t cpu_period_us,
                              const std::vector<int>& cpus, bool allow_missing,
                              std::optional<double> iteration_time, bool keep_warm,
                              const std::string& speed_kind, bool thread_env,
                              const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale,
                              std::optional<bool> drift_check) {
  SliceOptions o;
  o.plan.core_scaling = core_scaling;
  if (drift_check) o.plan.drift_check = *drift_check;
  o.plan.quota_scale = quota_scale;
  o.plan.cores = core_emulation_from_string(core_emulation);
  o.plan.keep_warm = keep_warm;
  o.plan.thread_env = thread_env;
  o.plan.speed_kind = speed_kind_from_string(speed_kind);
  if (!parent.is_none()) o.parent = parent.cast<std::string>();
  o.plan.cpu_period_us = cpu_period_us;
  if (iteration_time) {
    if (!(*iteration_time > 0) || !std::isfinite(*iteration_time)) {
      throw py::value_error("iteration_time must be a positive number of seconds");
    }
    o.plan.iteration_time_us = static_cast<std::uint64_t>(std::llround(*iteration_time * 1e6));
  }
  o.plan.cpus = cpus;
  // A first run on a host without its nn rating measures it (about a minute): say so on
  // sys.stderr, which notebooks show too.
  o.plan.nn_measure.progress = with_signal_check([](const std::string& line) {
    py::gil_scoped_acquire gil;
    py::module_::import("sys").attr("stderr").attr("write")("edgeprof: " + line + "\n");
  });
  o.allow_missing_controllers = allow_missing;
  return o;
}

// Lets Ctrl-C reach Python while C++ waits with the GIL released: the KeyboardInterrupt is
// thrown through the wait, which kills the workload first.
InterruptCheck python_signals() {
  return [] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
}

// Seconds (None or 0 = no sampling) -> the sampler's interval; the C++ side checks the range.
// Seconds past nanoseconds' range are refused here, where they are still seconds.
std::chrono::nanoseconds to_interval(std::optional<double> seconds) {
  if (!seconds || *seconds == 0) return std::chrono::nanoseconds(0);
  if (!(*seconds > 0) || !(*seconds < 9e9)) {
    throw Error("sampling interval " + py::repr(py::float_(*seconds)).cast<std::string>() +
                " s is out of range: give seconds from 0.001 to 60, or None for no sampling");
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(*seconds * 1e9 + 0.5));
}

// A Python int as a device's core count: one past C++'s int is a DeviceError naming it.
int to_cores(const py::object& value) {
  // Any integer (numpy's too, through __index__), not a bool.
  if (py::isinstance<py::bool_>(value) || !PyIndex_Check(value.ptr())) {
    throw DeviceError("cores: expected a whole number, got " +
                      py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  }
  const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0 || n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
    throw DeviceError("cores = " + py::str(value).cast<std::string>() +
                      " is invalid; a device has at least 1 core, and at most a few thousand");
  }
  return static_cast<int>(n);
}

// A read-only numpy view of a column owned by `owner` (kept alive by the array).
template <class T>
py::array_t<T> view(const std::vector<T>& column, const py::handle& owner) {
  py::array_t<T> a({static_cast<py::ssize_t>(column.size())}, {static_cast<py::ssize_t>(sizeof(T))},
                   column.data(), owner);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

std::vector<std::string> metric_names(const std::bitset<kMetricCount>& bits) {
  std::vector<std::string> out;
  for (int m = 0; m < kMetricCount; ++m) {
    if (bits.test(static_cast<size_t>(m))) out.emplace_back(to_string(static_cast<Metric>(m)));
  }
  return out;
}

Metric to_metric(const std::string& name) {
  if (auto m = metric_from_string(name)) return *m;
  std::vector<std::string> all;
  for (int i = 0; i < kMetricCount; ++i) all.emplace_back(to_string(static_cast<Metric>(i)));
  std::string known;
  for (const auto& n : all) known += (known.empty() ? "" : ", ") + n;
  throw py::key_error("no metric '" + name + "'; metrics: " + known);
}

// Checked by the core (a non-positive or NaN timeout is an Error; inf waits for ever).
std::optional<std::chrono::duration<double>> to_timeout(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return std::chrono::duration<double>(*seconds);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "edgeprof's C++ core. Use the `edgeprof` package rather than this module.";
  m.attr("__version__") = version();
  m.attr("DEFAULT_CPU_PERIOD_US") = kDefaultCpuPeriodUs;
  m.def("choose_cpu_period_us", &choose_cpu_period_us, py::arg("iteration_time_us"),
        "The CFS period for iterations of this length: a tenth, within 5 to 100 ms (a plan "
        "may lengthen it for a device of several cores).");

  error_type = new_error(m, "Error", PyExc_Exception, "Base of every error edgeprof raises.");
  device_error_type = new_error(m, "DeviceError",
                                py::make_tuple(py::handle(error_type), py::handle(PyExc_ValueError))
                                    .release()
                                    .ptr(),
                                "A device description or size is invalid.");
  unsupported_error_type =
      new_error(m, "UnsupportedError", error_type,
                "The host cannot emulate what was asked (capacity, missing controller).");
  permission_error_type = new_error(
      m, "PermissionDenied",
      py::make_tuple(py::handle(error_type), py::handle(PyExc_PermissionError)).release().ptr(),
      "No permission to create or change the cgroups edgeprof needs.");
  cgroup_error_type = new_error(
      m, "CgroupError",
      py::make_tuple(py::handle(error_type), py::handle(PyExc_OSError)).release().ptr(),
      "A cgroup file operation failed.");
  spawn_error_type = new_error(
      m, "SpawnError",
      py::make_tuple(py::handle(error_type), py::handle(PyExc_OSError)).release().ptr(),
      "The workload could not be started (errno and filename say why).");
  py::register_exception_translator(&translate);
  bind_microbench(m);

  py::class_<FigureSource>(m, "FigureSource", "Where one figure of a device comes from.")
      .def_readonly("status", &FigureSource::status,
                    "'specified', 'measured' or 'estimated'")
      .def_readonly("source", &FigureSource::source)
      .def("__repr__", [](const FigureSource& f) {
        return "FigureSource(status='" + f.status + "', source=" +
               py::repr(py::str(f.source)).cast<std::string>() + ")";
      });
  py::class_<CpuDescription>(m, "CpuDescription", "The device's processor, described.")
      .def_readonly("model", &CpuDescription::model)
      .def_readonly("soc", &CpuDescription::soc)
      .def_readonly("clock_mhz", &CpuDescription::clock_mhz)
      .def_readonly("architecture", &CpuDescription::architecture)
      .def_readonly("layout", &CpuDescription::layout);
  py::class_<PowerDescription>(m, "PowerDescription", "Typical power draw of the device.")
      .def_readonly("idle_watts", &PowerDescription::idle_watts)
      .def_readonly("loaded_watts", &PowerDescription::loaded_watts);
  py::class_<SpeedStep>(m, "SpeedStep", "From after_s seconds on, factor x core_speed.")
      .def(py::init([](double after_s, double factor) { return SpeedStep{after_s, factor}; }),
           py::arg("after_s"), py::arg("factor"))
      .def_readonly("after_s", &SpeedStep::after_s)
      .def_readonly("factor", &SpeedStep::factor)
      .def("__repr__", [](const SpeedStep& st) {
        return "SpeedStep(after_s=" + py::repr(py::float_(st.after_s)).cast<std::string>() +
               ", factor=" + py::repr(py::float_(st.factor)).cast<std::string>() + ")";
      });

  py::class_<Device>(m, "Device", "A target device: cores, core speed relative to one host "
                                  "core, memory, swap and optional limits.")
      .def(py::init([](std::string name, const py::object& cores_arg,
                       std::optional<double> core_speed,
                       py::object memory,
                       py::object swap, std::optional<std::uint64_t> io_read_bps,
                       std::optional<std::uint64_t> io_write_bps,
                       std::optional<std::int64_t> pids_max, std::string description,
                       std::string source, std::vector<SpeedStep> speed_schedule,
                       std::optional<double> idle_watts, std::optional<double> loaded_watts,
                       std::optional<double> reference_speed,
                       std::optional<double> host_reference_speed) {
             Device d;
             d.name = std::move(name);
             d.cores = to_cores(cores_arg);
             if (core_speed.has_value() == reference_speed.has_value()) {
               throw DeviceError(
                   "give either core_speed (relative to one core of this host) or "
                   "reference_speed (relative to the catalog's reference core), not both or "
                   "neither");
             }
             if (host_reference_speed && !reference_speed) {
               throw DeviceError("host_reference_speed needs reference_speed");
             }
             if (core_speed) {
               d.core_speed = *core_speed;
             } else {
               apply_reference_speed(d, *reference_speed, host_reference_speed);
             }
             d.memory_bytes = to_size(memory, "memory");
             d.swap_bytes = to_size(swap, "swap");
             d.io_read_bps = io_read_bps;
             d.io_write_bps = io_write_bps;
             d.pids_max = pids_max;
             d.description = std::move(description);
             d.source = std::move(source);
             d.speed_schedule = std::move(speed_schedule);
             d.power.idle_watts = idle_watts;
             d.power.loaded_watts = loaded_watts;
             d.validate();
             return d;
           }),
           py::kw_only(), py::arg("name"), py::arg("cores"), py::arg("core_speed") = py::none(),
           py::arg("memory"), py::arg("swap") = py::int_(0), py::arg("io_read_bps") = py::none(),
           py::arg("io_write_bps") = py::none(), py::arg("pids_max") = py::none(),
           py::arg("description") = "", py::arg("source") = "user-supplied",
           py::arg("speed_schedule") = std::vector<SpeedStep>{},
           py::arg("idle_watts") = py::none(), py::arg("loaded_watts") = py::none(),
           py::arg("reference_speed") = py::none(), py::arg("host_reference_speed") = py::none())
      .def_readonly("name", &Device::name)
      .def_readonly("cores", &Device::cores)
      .def_readonly("core_speed", &Device::core_speed)
      .def_readonly("memory_bytes", &Device::memory_bytes)
      .def_readonly("swap_bytes", &Device::swap_bytes)
      .def_readonly("io_read_bps", &Device::io_read_bps)
      .def_readonly("io_write_bps", &Device::io_write_bps)
      .def_readonly("pids_max", &Device::pids_max)
      .def_readonly("description", &Device::description)
      .def_readonly("source", &Device::source)
      .def_readonly("aliases", &Device::aliases)
      .def_readonly("cpu", &Device::cpu)
      .def_readonly("storage", &Device::storage)
      .def_readonly("power", &Device::power)
      .def_readonly("scores", &Device::scores)
      .def_readonly("reference_speed", &Device::reference_speed,
                    "One device core / the catalog's reference core, when the description gives "
                    "its speed that way (the catalog does); None otherwise.")
      .def_readonly("host_reference_speed", &Device::host_reference_speed,
                    "One host core / the reference core, as used to derive core_speed from "
                    "reference_speed; None when it was not known (core_speed is then "
                    "reference_speed, uncorrected).")
      .def_property_readonly("speed_text", &describe_core_speed,
                             "The core speed for people, with where it came from: '0.5 of a "
                             "host core', or derived from the reference core.")
      .def_property_readonly("reference_uncorrected", &Device::reference_uncorrected,
                             "Whether core_speed is reference_speed taken as this host's, "
                             "uncorrected (`edgeprof calibrate-host --reference` corrects it).")
      .def_readonly("nn_ms", &Device::nn_ms,
                    "Published CNN inference times of one device core (ncnn's benchncnn, one "
                    "thread), ms by reference graph; empty when none are published.")
      .def_readonly("nn_precision", &Device::nn_precision, "'fp32' or 'fp16': of nn_ms.")
      .def_readonly("nn", &Device::nn,
                    "The nn speed on this host (NnSpeed), from nn_ms and this host's nn rating; "
                    "None when either is missing (nn_missing says why).")
      .def_readonly("nn_missing", &Device::nn_missing, "Why nn is None.")
      .def_readonly("runtime_ms", &Device::runtime_ms,
                    "Published inference times with other runtimes than ncnn, by runtime id "
                    "('pytorch'): RuntimeTimes (precision, threads, ms by model).")
      .def(
          "for_runtime",
          [](const Device& d, const std::string& runtime) { return for_runtime(d, runtime); },
          py::arg("runtime"),
          "The device at its speed with `runtime`: 'ncnn' is for_speed_kind('nn'); 'pytorch' "
          "its published PyTorch times against this host's PyTorch rating "
          "(`edgeprof calibrate-host --nn --runtime pytorch`). DeviceError when either is "
          "missing.")
      .def_readonly("speed_kind", &Device::speed_kind,
                    "'nn' when core_speed is the nn speed (for_speed_kind); '' for the speed "
                    "the description gives.")
      .def(
          "for_speed_kind",
          [](const Device& d, const std::string& kind) {
            return for_speed_kind(d, speed_kind_from_string(kind));
          },
          py::arg("kind"),
          "The device with the core speed of `kind`: 'nn' (CNN inference), 'integer' (the "
          "described speed: the catalog's is 7-Zip's) or 'automatic' (nn where it has one).")
      .def_readonly("speed_schedule", &Device::speed_schedule)
      .def_readonly("sources", &Device::sources)
      .def_readonly("origin", &Device::origin)
      .def("for_threads", &for_threads, py::arg("threads"),
           "The device as a workload with `threads` busy threads sees it: with fewer threads "
           "than cores, a copy with that many cores at the same core speed (the CPU quota "
           "limits the slice, not each thread; docs/devices.md). Otherwise unchanged.")
      .def("to_json", &device_to_json, "This device as a device file (JSON).")
      .def(py::self == py::self)
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.name)); })
      .def("__repr__", [](const Device& d) {
        return "Device(name='" + d.name + "', cores=" + std::to_string(d.cores) +
               ", core_speed=" + py::repr(py::float_(d.core_speed)).cast<std::string>() +
               ", memory='" + format_size(d.memory_bytes) + "')";
      });

  m.def("builtin_devices", &builtin_devices, "The built-in devices (the catalog).");
  m.def("catalog_devices", &catalog_devices, "The built-in catalog of real devices.");
  m.def("load_device_file",
        [](py::object path) {
          return load_device_file(py::module_::import("os").attr("fspath")(path).cast<std::string>());
        },
        py::arg("path"), "A device from a TOML or JSON device file (docs/devices.md).");
  m.def("find_device", [](const std::string& name) { return find_device(name); },
        py::arg("name_or_path"),
        "A device by name or alias (the catalog, then your device files), or from a file path.");
  py::class_<UserDevices>(m, "UserDevices", "The user's device files: those that loaded, and "
                                            "one message per file that did not.")
      .def_readonly("devices", &UserDevices::devices)
      .def_readonly("problems", &UserDevices::problems);
  m.def("user_devices", [] { return user_devices(); },
        "The devices in the user's device directories (device_search_path()).");
  m.def("device_search_path", &device_search_path,
        "Directories searched for device files: $EDGEPROF_DEVICE_PATH, else "
        "~/.config/edgeprof/devices.");
  m.def("builtin_device", &builtin_device, py::arg("name"),
        "A built-in device by name; DeviceError lists the known names when there is none.");
  m.def("parse_size", &parse_size, py::arg("text"), py::arg("field") = "size",
        "Bytes in a size such as \"512MiB\", \"1.5GiB\", \"500MB\" or \"512M\".");
  // Sizes from summaries and scores are floats (averages, projections): accept any real number.
  m.def(
      "format_size",
      [](double bytes) {
        if (!std::isfinite(bytes) || bytes < 0)
          throw py::value_error("format_size: a size must be a finite number of bytes >= 0, got " +
                                py::repr(py::float_(bytes)).cast<std::string>());
        return format_size(static_cast<std::uint64_t>(std::llround(bytes)));
      },
      py::arg("bytes"));
  m.def("cgroup_mode", [] { return to_string(cgroup_mode()); },
        "'unified' (cgroup v2), 'hybrid' or 'legacy' (cgroup v1 controllers).");

  py::class_<ThreadsProjection>(m, "ThreadsProjection",
                                "Core emulation 'projected': how a one-core run's times become "
                                "the device's with all its cores (Result.projected_s).")
      .def_readonly("threads", &ThreadsProjection::threads)
      .def_readonly("speedup", &ThreadsProjection::speedup,
                    "The divisor: the board's speed-up from 1 thread to `threads`, times "
                    "workload_factor.")
      .def_readonly("workload_factor", &ThreadsProjection::workload_factor,
                    "The workload's own scaling the projection follows (PlanOptions::"
                    "workload_scaling, C++); 1 = the board's median graph.")
      .def_property_readonly("table_threads",
                             [](const ThreadsProjection& p) { return p.scaling.threads; })
      .def_property_readonly("table_speedup",
                             [](const ThreadsProjection& p) { return p.scaling.speedup; })
      .def_property_readonly("graphs", [](const ThreadsProjection& p) { return p.scaling.graphs; })
      .def_property_readonly("loo_median_error",
                             [](const ThreadsProjection& p) { return p.scaling.loo_median_error; })
      .def_property_readonly("loo_worst_error",
                             [](const ThreadsProjection& p) { return p.scaling.loo_worst_error; })
      .def_property_readonly(
          "loo_log_sd", [](const ThreadsProjection& p) { return p.scaling.loo_log_sd; },
          "The spread of log(one graph's speed-up / the others' median): what the projection "
          "adds to Result.device_interval.")
      .def("__repr__", [](const ThreadsProjection& p) {
        return "ThreadsProjection(threads=" + std::to_string(p.threads) +
               ", speedup=" + py::repr(py::float_(p.speedup)).cast<std::string>() + ")";
      });

  py::class_<EmulationPlan>(m, "EmulationPlan", "The cgroup settings that emulate a device.")
      .def_readonly("cpus", &EmulationPlan::cpus)
      .def_property_readonly(
          "core_emulation",
          [](const EmulationPlan& p) { return std::string(to_string(p.core_emulation())); },
          "How the plan emulates the device's cores: 'projected', 'per-core' or 'pooled' (what "
          "'auto' resolved to).")
      .def_readonly("cpu_period_us", &EmulationPlan::cpu_period_us)
      .def_readonly("cpu_quota_us", &EmulationPlan::cpu_quota_us)
      .def_readonly("memory_max_bytes", &EmulationPlan::memory_max_bytes)
      .def_readonly("swap_max_bytes", &EmulationPlan::swap_max_bytes)
      .def_readonly("pids_max", &EmulationPlan::pids_max)
      .def_readonly("notes", &EmulationPlan::notes)
      .def_readonly("unapplied", &EmulationPlan::unapplied,
                    "Limits of the device this host cannot apply, and why (a run lists them "
                    "in Result.unapplied).")
      .def_readonly("io_device", &EmulationPlan::io_device,
                    "The host disk (MAJ:MIN) whose bandwidth is limited; '' when none.")
      .def_readonly("io_read_bps", &EmulationPlan::io_read_bps)
      .def_readonly("io_write_bps", &EmulationPlan::io_write_bps)
      .def_readonly("keep_warm", &EmulationPlan::keep_warm,
                    "The slice's CPUs are kept busy while a throttled workload runs.")
      .def_readonly("core_groups", &EmulationPlan::core_groups,
                    "Per-core emulation: the number of one-core cgroups; 0 = one pooled quota.")
      .def_readonly("core_quota_us", &EmulationPlan::core_quota_us,
                    "Each core group's quota per cpu_period_us; 0 without core groups.")
      .def_readonly("core_quota_by_busy", &EmulationPlan::core_quota_by_busy,
                    "Per-core scaling: each core group's quota with k busy threads, at index "
                    "k - 1; empty = always core_quota_us.")
      .def_readonly("quota_scale", &EmulationPlan::quota_scale,
                    "The quotas are the device's capacity times this (1: exactly; an nn "
                    "speed's plan: this host's measured own share, QuotaShare).")
      .def_readonly("emulation_log_sd", &EmulationPlan::emulation_log_sd,
                    "When quota_scale came from this host's own share: how much one emulated "
                    "time scatters about the speed's (sd of log time), which widens "
                    "Result.device_interval; 0 otherwise.")
      .def_readonly("host_drift", &EmulationPlan::host_drift,
                    "drift_check: the host drift the nn speed was multiplied by (HostDrift."
                    "factor); 1 = not corrected.")
      .def_readonly("drift_probed", &EmulationPlan::drift_probed,
                    "drift_check: the probe's reading, applied or not; 0 = not probed.")
      .def_readonly("threads_projection", &EmulationPlan::threads_projection,
                    "Core emulation 'projected': the projection; None otherwise.")
      .def_readonly("thread_env", &EmulationPlan::thread_env,
                    "Variables the workload's environment gets where it does not set them "
                    "(the device's thread count; passive OpenMP waiting under a quota).")
      .def_property_readonly("capacity_cores", &EmulationPlan::capacity_cores);

  m.def(
      "plan_emulation",
      [](const py::object& device, std::uint64_t cpu_period_us, const std::vector<int>& cpus,
         std::optional<double> iteration_time, bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check) {
        PlanOptions o =
            to_slice_options(py::none(), cpu_period_us, cpus, false, iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check)
                .plan;
        const Device d = to_device(device);
        HostFacts host = host_facts();
        if (o.drift_check) {
          // On the plan's first CPU (the lowest of those it may use), without the GIL.
          std::vector<int> usable = o.cpus.empty() ? host.cpus : o.cpus;
          const int cpu = usable.empty() ? -1 : *std::min_element(usable.begin(), usable.end());
          py::gil_scoped_release unlocked;
          host = with_measured_drift(std::move(host), with_measured_nn(d, o), o, cpu);
        }
        return plan_emulation(d, host, o);
      },
      py::arg("device"), py::arg("cpu_period_us") = kChosenCpuPeriod,
      py::arg("cpus") = std::vector<int>{}, py::arg("iteration_time") = py::none(),
      py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(),
      "The cgroup settings that would emulate the device on this host (nothing is created).");

  m.attr("DEFAULT_INTERVAL_S") = double(kDefaultSampleIntervalNs) / 1e9;
  m.attr("REPORT_SCHEMA_VERSION") = kReportSchemaVersion;
  {
    std::vector<std::string> names;
    for (int i = 0; i < kMetricCount; ++i) names.emplace_back(to_string(static_cast<Metric>(i)));
    m.attr("METRICS") = py::tuple(py::cast(names));
  }

  py::class_<TimeSeries>(m, "TimeSeries",
                         "Samples in columns. Columns are read-only numpy views of the C++ "
                         "storage (no copy), valid as long as any of them is referenced.")
      .def("__len__", &TimeSeries::size)
      .def_property_readonly(
          "t_ns", [](py::object self) { return view(self.cast<const TimeSeries&>().t_ns, self); },
          "When each sample was taken: monotonic ns since the workload was released to exec.")
      .def_property_readonly(
          "scheduled",
          [](py::object self) { return view(self.cast<const TimeSeries&>().scheduled, self); },
          "1 = taken at a deadline of the schedule; 0 = extra (a phase mark, the final one).")
      .def("__getitem__",
           [](py::object self, const std::string& name) {
             const TimeSeries& s = self.cast<const TimeSeries&>();
             const Metric metric = to_metric(name);
             if (!s.has(metric)) {
               throw py::key_error("metric '" + name + "' was not available in this run");
             }
             return view(s[metric], self);
           },
           py::arg("metric"), "The column of a metric available in this run.")
      .def_property_readonly("available",
                             [](const TimeSeries& s) { return metric_names(s.available); })
      .def_property_readonly("complete",
                             [](const TimeSeries& s) { return metric_names(s.complete); })
      .def_property_readonly(
          "read_every",
          [](const TimeSeries& s) {
            std::map<std::string, std::uint32_t> every;
            for (int m = 0; m < kMetricCount; ++m) {
              if (s.available.test(static_cast<size_t>(m))) {
                every[to_string(static_cast<Metric>(m))] = s.read_every[static_cast<size_t>(m)];
              }
            }
            return every;
          },
          "How often each available metric was read, in scheduled samples: 1 = every one, n = "
          "every n-th (about every 100 ms; its last value repeated between).")
      .def(
          "cpu_cores",
          [](const TimeSeries& s) {
            auto v = s.cpu_cores();
            return py::array_t<double>(static_cast<py::ssize_t>(v.size()), v.data());
          },
          "CPU used between consecutive samples, in host cores (len - 1 values).")
      .def(py::self == py::self);

  py::class_<Summary>(m, "Summary",
                      "Figures derived from the samples; None = not available in this run.")
      .def_readonly("cpu_cores_avg", &Summary::cpu_cores_avg)
      .def_readonly("cpu_cores_p95", &Summary::cpu_cores_p95)
      .def_readonly("cpu_cores_peak", &Summary::cpu_cores_peak)
      .def_readonly("cpu_window_s", &Summary::cpu_window_s)
      .def_readonly("cpu_windows_carried", &Summary::cpu_windows_carried)
      .def_readonly("cpu_capacity_avg", &Summary::cpu_capacity_avg)
      .def_readonly("cpu_capacity_p95", &Summary::cpu_capacity_p95)
      .def_readonly("cpu_capacity_peak", &Summary::cpu_capacity_peak)
      .def_readonly("throttled_fraction", &Summary::throttled_fraction)
      .def_readonly("memory_avg_bytes", &Summary::memory_avg_bytes)
      .def_readonly("memory_sampled_peak_bytes", &Summary::memory_sampled_peak_bytes)
      .def_readonly("memory_anon_peak_bytes", &Summary::memory_anon_peak_bytes)
      .def_readonly("memory_file_peak_bytes", &Summary::memory_file_peak_bytes)
      .def_readonly("memory_swap_peak_bytes", &Summary::memory_swap_peak_bytes)
      .def_readonly("major_faults", &Summary::major_faults)
      .def_readonly("io_read_bytes", &Summary::io_read_bytes)
      .def_readonly("io_write_bytes", &Summary::io_write_bytes)
      .def_readonly("io_read_ops", &Summary::io_read_ops)
      .def_readonly("io_write_ops", &Summary::io_write_ops)
      .def_readonly("net_rx_bytes", &Summary::net_rx_bytes)
      .def_readonly("net_tx_bytes", &Summary::net_tx_bytes)
      .def_readonly("net_rx_packets", &Summary::net_rx_packets)
      .def_readonly("net_tx_packets", &Summary::net_tx_packets)
      .def_readonly("pressure_cpu_some_s", &Summary::pressure_cpu_some_s)
      .def_readonly("pressure_memory_some_s", &Summary::pressure_memory_some_s)
      .def_readonly("pressure_memory_full_s", &Summary::pressure_memory_full_s)
      .def_readonly("pressure_io_some_s", &Summary::pressure_io_some_s)
      .def_readonly("pressure_io_full_s", &Summary::pressure_io_full_s)
      .def_readonly("pressure_host_wide", &Summary::pressure_host_wide)
      .def_readonly("tasks_peak", &Summary::tasks_peak)
      .def_readonly("samples", &Summary::samples)
      .def_readonly("interval_s", &Summary::interval_s)
      .def_readonly("interval_p50_s", &Summary::interval_p50_s)
      .def_readonly("jitter_p50_s", &Summary::jitter_p50_s)
      .def_readonly("jitter_p99_s", &Summary::jitter_p99_s)
      .def_readonly("missed_deadlines", &Summary::missed_deadlines)
      .def(py::self == py::self);

  py::class_<SpeedChange>(m, "SpeedChange", "A CPU bandwidth change during a run: a step of "
                                            "the device's speed schedule, or the switch to the "
                                            "speed of a runtime the workload loaded.")
      .def_readonly("t_s", &SpeedChange::t_s, "Measured: seconds since the workload's release.")
      .def_readonly("factor", &SpeedChange::factor)
      .def_readonly("cpu_quota_us", &SpeedChange::cpu_quota_us)
      .def_readonly("cpu_period_us", &SpeedChange::cpu_period_us)
      .def_readonly("error", &SpeedChange::error)
      .def_readonly("runtime", &SpeedChange::runtime,
                    "The runtime whose speed the device ran at from then on; '' for a schedule's "
                    "step.")
      .def("__repr__", [](const SpeedChange& c) {
        return "SpeedChange(t_s=" + py::repr(py::float_(c.t_s)).cast<std::string>() +
               ", factor=" + py::repr(py::float_(c.factor)).cast<std::string>() + ")";
      });
  m.def("estimate_energy_j", &estimate_energy_j, py::arg("power"), py::arg("wall_s"),
        py::arg("cpu_s"), py::arg("capacity_cores"),
        "Estimated joules: idle W x wall_s + (loaded W - idle W) x cpu_s / capacity_cores.");

  py::class_<Phase>(m, "Phase", "A phase the workload marked, with its own figures.")
      .def_readonly("name", &Phase::name)
      .def_readonly("start_s", &Phase::start_s)
      .def_readonly("end_s", &Phase::end_s)
      .def_property_readonly("wall_time_s", &Phase::wall_time_s)
      .def_readonly("ended_by_exit", &Phase::ended_by_exit)
      .def_readonly("cpu_s", &Phase::cpu_s)
      .def_readonly("memory_start_bytes", &Phase::memory_start_bytes)
      .def_readonly("memory_peak_bytes", &Phase::memory_peak_bytes)
      .def_readonly("memory_net_peak_bytes", &Phase::memory_net_peak_bytes)
      .def_readonly("energy_j", &Phase::energy_j, "Estimated: the device's energy over the phase (J).")
      .def(py::self == py::self)
      .def("__repr__", [](const Phase& p) {
        return "Phase(name=" + py::repr(py::str(p.name)).cast<std::string>() +
               ", wall_time_s=" + py::repr(py::float_(p.wall_time_s())).cast<std::string>() + ")";
      });

  py::class_<SourceStatus>(m, "SourceStatus", "One sampled file and how it fared in the run.")
      .def_readonly("name", &SourceStatus::name)
      .def_readonly("available", &SourceStatus::available)
      .def_readonly("failed", &SourceStatus::failed)
      .def_readonly("host_wide", &SourceStatus::host_wide)
      .def_readonly("error", &SourceStatus::error)
      .def_readonly("read_every", &SourceStatus::read_every,
                    "Read at every n-th scheduled sample (1 = every one).");

  py::class_<HostInfo>(m, "HostInfo", "The machine a report was measured on.")
      .def_readonly("hostname", &HostInfo::hostname)
      .def_readonly("kernel", &HostInfo::kernel)
      .def_readonly("cpu_model", &HostInfo::cpu_model)
      .def_readonly("cpus", &HostInfo::cpus)
      .def_readonly("memory_bytes", &HostInfo::memory_bytes);
  m.def("host_info", &host_info, "This machine (read once per process).");

  py::class_<Result>(m, "Result", "What happened to one workload, from kernel counters.")
      .def_readonly("exit_code", &Result::exit_code,
                    "The workload's exit status; None unless it exited.")
      .def_readonly("signal", &Result::signal,
                    "The number of the signal that ended the workload; None when no signal did.")
      .def_readonly("timed_out", &Result::timed_out,
                    "True when edgeprof killed the workload at the timeout.")
      .def_readonly("oom_killed", &Result::oom_killed,
                    "True when the kernel's OOM killer killed a task of the slice.")
      .def_readonly("oom_kills", &Result::oom_kills,
                    "How many tasks the kernel's OOM killer killed in the slice.")
      .def_readonly("wall_time_s", &Result::wall_time_s,
                    "Measured: seconds of monotonic clock from the workload's release to exec "
                    "until its exit was observed.")
      .def_readonly("cpu_user_s", &Result::cpu_user_s,
                    "Measured: user-mode CPU seconds of every task of the slice during the run "
                    "(cgroup counters).")
      .def_readonly("cpu_system_s", &Result::cpu_system_s,
                    "Measured: kernel-mode CPU seconds of every task of the slice during the run "
                    "(cgroup counters).")
      .def_readonly("peak_memory_bytes", &Result::peak_memory_bytes,
                    "Measured: the kernel's peak memory counter for the slice, in bytes (the "
                    "file is peak_memory_source); None when the counter is missing.")
      .def_readonly("peak_memory_source", &Result::peak_memory_source,
                    "The file peak_memory_bytes comes from, plus '(peak since the slice was "
                    "created)' when the kernel could not reset it for this run.")
      .def_readonly("throttled_s", &Result::throttled_s,
                    "Measured: seconds of CFS bandwidth throttling of the slice during the run.")
      .def_readonly("throttled_periods", &Result::throttled_periods,
                    "Measured: CFS bandwidth periods in which the slice was throttled.")
      .def_readonly("periods", &Result::periods,
                    "Measured: CFS bandwidth periods in which the slice had runnable tasks.")
      .def_readonly("child_max_rss_bytes", &Result::child_max_rss_bytes,
                    "Measured by wait4() for the direct child only, in bytes, never below the "
                    "caller's peak RSS at the spawn; use peak_memory_bytes for the workload.")
      .def_readonly("keep_warm_cpu_s", &Result::keep_warm_cpu_s,
                    "Measured: CPU seconds of the keep-warm threads during the run (outside "
                    "the slice, not in cpu_user_s/cpu_system_s).")
      .def_readonly("placement", &Result::placement,
                    "How the child entered the slice: 'clone3', 'vfork+attach' or 'fork+attach'.")
      .def_readonly("device", &Result::device, "The device emulated (a Device).")
      .def_readonly("plan", &Result::plan, "The cgroup settings applied (an EmulationPlan).")
      .def_property_readonly(
          "cgroup_mode", [](const Result& r) { return to_string(r.cgroup_mode); },
          "How this host mounts cgroups: 'unified' (v2), 'hybrid' (v1 controllers plus a cgroup2 "
          "mount) or 'legacy' (v1 only).")
      .def_readonly("unapplied", &Result::unapplied,
                    "Limits the device asks for that were not applied, each with the reason.")
      .def_readonly("command", &Result::command, "The command's argv.")
      .def_readonly("network_isolated", &Result::network_isolated,
                    "True when the workload ran in its own network namespace.")
      .def_readonly("series", &Result::series,
                    "Sampled: the time series over the run (a TimeSeries); empty when sampling "
                    "was off.")
      .def_readonly("summary", &Result::summary,
                    "Figures derived from series (a Summary), each measured (counter "
                    "differences) or sampled; a figure is None when not available.")
      .def_readonly("sources", &Result::sources,
                    "How each sampled file fared in the run (a list of SourceStatus).")
      .def_readonly("phases", &Result::phases,
                    "The phases the workload marked (a list of Phase), in the order they began.")
      .def_readonly("warnings", &Result::warnings,
                    "Things the user should know about this run (a source that failed, marks "
                    "that were lost).")
      .def_readonly("runtimes_seen", &Result::runtimes_seen,
                    "Sampled: inference runtimes the workload loaded, id -> the library file "
                    "that showed it (from its processes' /proc/PID/maps).")
      .def_readonly("thread_moves", &Result::thread_moves,
                    "Measured: threads moved between per-core emulation's core groups.")
      .def_readonly("threads_at_once", &Result::threads_at_once,
                    "Sampled, projected runs only: about how many of the workload's threads ran "
                    "at once (the mean count of runnable threads, about every 100 ms): 1 for "
                    "one busy thread, N for N at once (warned from 1.5). None on other runs, "
                    "and when another workload shared the slice.")
      .def_readonly("core_quota_changes", &Result::core_quota_changes,
                    "Measured: times per-core scaling set the core groups' quota for the "
                    "number of busy threads.")
      .def_readonly("thread_env", &Result::thread_env,
                    "The variables edgeprof set in the workload's environment.")
      .def_readonly("speed_changes", &Result::speed_changes,
                    "The bandwidth changes of the device's speed schedule, or the switch to a "
                    "loaded runtime's speed (a list of SpeedChange), in time order.")
      .def_readonly("energy_j", &Result::energy_j,
                    "Estimated: the device's energy for the run, in joules (docs/energy.md).")
      .def_readonly("device_interval", &Result::device_interval,
                    "Estimated: factors around the run's times (projected where projected) "
                    "within which the device's own times are expected (a TimeInterval, from the "
                    "speed's held-out errors and, where the quota was scaled by this host's own "
                    "share, the emulation's scatter); None without an nn speed.")
      .def_readonly("host", &Result::host, "The machine it was measured on (a HostInfo).")
      .def_readonly("edgeprof_version", &Result::edgeprof_version,
                    "The version of edgeprof that measured it.")
      .def_property_readonly("ok", &Result::ok,
                             "True when the workload exited with status 0 and was neither "
                             "OOM-killed nor timed out.")
      .def("projected_s", &Result::projected_s, py::arg("measured_s"),
           "Core emulation 'projected': a time of this one-core run as the device with all "
           "its cores would take it; None without a projection.")
      .def_property_readonly(
          "all_cores_wall_time_s", [](const Result& r) { return r.all_cores_s(r.wall_time_s); },
          "The device's time with all its cores: wall_time_s projected where the plan "
          "projects, else wall_time_s itself.")
      .def("all_cores_s", &Result::all_cores_s, py::arg("measured_s"),
           "A time of this run as the device with all its cores takes it: projected_s() "
           "where the plan projects, else the time itself.")
      .def_property_readonly(
          "all_cores_energy_j",
          [](const Result& r) {
            return r.all_cores_energy_j(r.wall_time_s, r.cpu_user_s + r.cpu_system_s);
          },
          "Estimated: the device's energy with all its cores (J): where the plan projects, the "
          "whole board over the projected time, each core as busy as the one that ran; else "
          "energy_j. None without power figures.")
      .def("all_cores_energy_j_of", &Result::all_cores_energy_j, py::arg("measured_s"),
           py::arg("cpu_s"),
           "The device's energy with all its cores for a span of this run that took "
           "measured_s and used cpu_s of CPU (a phase's); estimated.")
      .def("figure_provenance",
           [](const Result& r, const std::string& name) { return figure_provenance(r, name); },
           py::arg("name"),
           "'projected', 'estimated' or 'measured': how figure NAME of this run was made.")
      .def("to_json", [](const Result& r) { return to_json(r); },
           "The whole result as JSON (schema_version REPORT_SCHEMA_VERSION).")
      .def_static("from_json", [](const std::string& text) { return result_from_json(text); },
                  py::arg("text"), "Reads what to_json wrote; equal to the original.")
      .def("to_csv", [](const Result& r) { return to_csv(r); },
           "The time series as CSV text.")
      .def(py::self == py::self)
      .def("__str__", [](const Result& r) { return to_text(r); });

  py::class_<Statistic>(m, "Statistic", "One figure over repeated runs.")
      .def_readonly("n", &Statistic::n)
      .def_readonly("median", &Statistic::median)
      .def_readonly("mean", &Statistic::mean)
      .def_readonly("stddev", &Statistic::stddev)
      .def_readonly("ci95_low", &Statistic::ci95_low)
      .def_readonly("ci95_high", &Statistic::ci95_high)
      .def_readonly("min", &Statistic::min)
      .def_readonly("max", &Statistic::max)
      .def(py::self == py::self)
      .def("__repr__", [](const Statistic& s) {
        return "Statistic(n=" + std::to_string(s.n) +
               ", median=" + py::repr(py::float_(s.median)).cast<std::string>() +
               ", ci95=(" + py::repr(py::float_(s.ci95_low)).cast<std::string>() + ", " +
               py::repr(py::float_(s.ci95_high)).cast<std::string>() + "))";
      });
  m.def("statistics", &statistics, py::arg("values"),
        "n, median, mean, sample stddev, Student t 95% interval of the mean, min, max.");
  m.def("student_t_quantile", &student_t_quantile, py::arg("p"), py::arg("dof"));

  py::class_<RepeatedResult>(m, "RepeatedResult",
                             "The runs of a repeated measurement and their statistics.")
      .def_readonly("warmups", &RepeatedResult::warmups)
      .def_readonly("runs", &RepeatedResult::runs)
      .def_readonly("stats", &RepeatedResult::stats)
      .def("stat", &RepeatedResult::stat, py::arg("name"), py::return_value_policy::copy)
      .def_property_readonly("ok", &RepeatedResult::all_ok)
      .def("to_json", [](const RepeatedResult& r) { return to_json(r); })
      .def_static("from_json",
                  [](const std::string& text) { return repeated_from_json(text); },
                  py::arg("text"))
      .def(py::self == py::self)
      .def("__str__", [](const RepeatedResult& r) { return to_text(r); });

  // Ranking and projection (issue 4).
  m.def("figure", &figure, py::arg("result"), py::arg("name"),
        "The value of a named figure of a result (wall_time_s, peak_memory_bytes, "
        "phase.<name>.wall_time_s, ...).");
  m.def("figures", &figures, py::arg("result"), "Every named figure of a result.");
  m.def("figure_samples", &figure_samples, py::arg("result"), py::arg("name"),
        "The values of a figure over the counted runs of a RepeatedResult.");

  py::class_<RankedItem>(m, "RankedItem", "One item of a ranking.")
      .def_readonly("name", &RankedItem::name)
      .def_readonly("index", &RankedItem::index)
      .def_readonly("value", &RankedItem::value)
      .def_readonly("n", &RankedItem::n)
      .def_readonly("rank", &RankedItem::rank)
      .def_readonly("tied", &RankedItem::tied)
      .def("__repr__", [](const RankedItem& r) {
        return "RankedItem(rank=" + std::to_string(r.rank) + (r.tied ? " tied" : "") +
               ", name=" + py::repr(py::str(r.name)).cast<std::string>() +
               ", value=" + py::repr(py::float_(r.value)).cast<std::string>() + ")";
      });
  m.def(
      "_rank",
      [](const std::vector<std::string>& names, const std::vector<std::vector<double>>& samples,
         bool higher_is_better, const std::string& test, double alpha) {
        if (names.size() != samples.size()) throw py::value_error("names and samples differ");
        std::vector<RankItem> items;
        for (size_t i = 0; i < names.size(); ++i) items.push_back({names[i], samples[i]});
        RankOptions o;
        o.higher_is_better = higher_is_better;
        o.alpha = alpha;
        if (test == "mann-whitney") {
          o.test = RankTest::mann_whitney;
        } else if (test == "welch") {
          o.test = RankTest::welch;
        } else {
          throw py::value_error("test must be 'mann-whitney' or 'welch', not '" + test + "'");
        }
        return rank(items, o);
      },
      py::arg("names"), py::arg("samples"), py::arg("higher_is_better"), py::arg("test"),
      py::arg("alpha"));
  m.def("mann_whitney_p", &mann_whitney_p, py::arg("a"), py::arg("b"));
  m.def("welch_p", &welch_p, py::arg("a"), py::arg("b"));

  py::class_<Agreement>(m, "Agreement", "Agreement between two orderings of the same items.")
      .def_readonly("coefficient", &Agreement::coefficient)
      .def_readonly("p_value", &Agreement::p_value)
      .def_readonly("exact", &Agreement::exact)
      .def_readonly("n", &Agreement::n)
      .def("__repr__", [](const Agreement& a) {
        return "Agreement(coefficient=" + py::repr(py::float_(a.coefficient)).cast<std::string>() +
               ", p_value=" + py::repr(py::float_(a.p_value)).cast<std::string>() +
               (a.exact ? ", exact" : ", asymptotic") + ", n=" + std::to_string(a.n) + ")";
      });
  m.def("spearman", &spearman, py::arg("x"), py::arg("y"),
        "Spearman's rho (ties: average ranks) with a two-sided p-value.");
  m.def("kendall", &kendall, py::arg("x"), py::arg("y"),
        "Kendall's tau-b (ties handled) with a two-sided p-value.");
  m.def("pareto_front", &pareto_front, py::arg("metrics"), py::arg("maximize"),
        "metrics[m][i] = item i's value of metric m; returns one flag per item: on the front.");

  py::class_<BudgetCheck>(m, "BudgetCheck", "Whether a figure fits a budget, and by how much.")
      .def_readonly("fits", &BudgetCheck::fits)
      .def_readonly("value", &BudgetCheck::value)
      .def_readonly("limit", &BudgetCheck::limit)
      .def_readonly("margin", &BudgetCheck::margin)
      .def_readonly("margin_fraction", &BudgetCheck::margin_fraction)
      .def_readonly("confidence", &BudgetCheck::confidence)
      .def_readonly("provenance", &BudgetCheck::provenance)
      .def("__repr__", [](const BudgetCheck& c) {
        std::string conf = c.confidence
                               ? py::repr(py::float_(*c.confidence)).cast<std::string>()
                               : std::string("None");
        return std::string("BudgetCheck(fits=") + (c.fits ? "True" : "False") +
               ", value=" + py::repr(py::float_(c.value)).cast<std::string>() +
               ", limit=" + py::repr(py::float_(c.limit)).cast<std::string>() +
               ", confidence=" + conf + ", provenance='" + c.provenance + "')";
      });

  py::class_<Prediction>(m, "Prediction", "A projected figure with its prediction interval.")
      .def_readonly("estimate", &Prediction::estimate)
      .def_readonly("low", &Prediction::low)
      .def_readonly("high", &Prediction::high)
      .def_readonly("confidence", &Prediction::confidence)
      .def_readonly("dof", &Prediction::dof)
      .def_readonly("provenance", &Prediction::provenance)
      .def("__repr__", [](const Prediction& p) {
        return "Prediction(estimate=" + py::repr(py::float_(p.estimate)).cast<std::string>() +
               ", interval=(" + py::repr(py::float_(p.low)).cast<std::string>() + ", " +
               py::repr(py::float_(p.high)).cast<std::string>() + ") at " +
               py::repr(py::float_(p.confidence)).cast<std::string>() + ", projected)";
      });
  m.def("check_budget", py::overload_cast<double, double>(&check_budget), py::arg("value"),
        py::arg("limit"));
  m.def("check_budget", py::overload_cast<const Prediction&, double>(&check_budget),
        py::arg("prediction"), py::arg("limit"));

  py::class_<Projection>(m, "Projection",
                         "device figure ~ f(what edgeprof measured), fitted on calibration "
                         "workloads measured once on the real device.")
      .def_static(
          "fit",
          [](const py::object& x, const std::vector<double>& y, const std::string& model,
             double ridge, const std::optional<std::vector<std::string>>& features,
             const std::string& target) {
            FitOptions o;
            o.model = fit_model_from_string(model);
            o.ridge = ridge;
            if (features) o.features = *features;
            o.target = target;
            // One feature (a flat sequence) or several (one row per point).
            std::vector<std::vector<double>> rows;
            for (const py::handle& item : x) {
              if (py::isinstance<py::sequence>(item) || py::hasattr(item, "__len__")) {
                rows.push_back(item.cast<std::vector<double>>());
              } else {
                rows.push_back({item.cast<double>()});
              }
            }
            return Projection::fit(rows, y, o);
          },
          py::arg("x"), py::arg("y"), py::arg("model") = "auto", py::arg("ridge") = 0.0,
          py::arg("features") = py::none(), py::arg("target") = "y",
          "x: measured under emulation (one value per point, or one row of features per "
          "point); y: the device's figures. model: linear, origin, loglog, theil_sen, multi or "
          "auto (smallest leave-one-out error).")
      .def_property_readonly("model", [](const Projection& p) { return to_string(p.model()); })
      .def_property_readonly("reason", &Projection::reason)
      .def_property_readonly("features", &Projection::features)
      .def_property_readonly("target", &Projection::target)
      .def_property_readonly("coefficients", &Projection::coefficients)
      .def_property_readonly("standard_errors", &Projection::standard_errors)
      .def_property_readonly("coefficient_names", &Projection::coefficient_names)
      .def_property_readonly("r_squared", &Projection::r_squared)
      .def_property_readonly("residual_standard_error", &Projection::residual_standard_error)
      .def_property_readonly("dof", &Projection::dof)
      .def_property_readonly("points", &Projection::points)
      .def_property_readonly("loo_ape", &Projection::loo_ape)
      .def_property_readonly("loo_ape_median", &Projection::loo_ape_median)
      .def_property_readonly("loo_ape_max", &Projection::loo_ape_max)
      .def_property_readonly("loo_within_10pct", &Projection::loo_within_10pct)
      .def(
          "predict",
          [](const Projection& p, const py::object& x, double confidence) {
            if (py::isinstance<py::sequence>(x)) {
              return p.predict(x.cast<std::vector<double>>(), confidence);
            }
            return p.predict(x.cast<double>(), confidence);
          },
          py::arg("x"), py::arg("confidence") = 0.95,
          "The projected figure with its prediction interval (Student t).")
      .def("__str__", &Projection::to_text);

  py::class_<Calibration>(m, "Calibration", "A projection for one device (and model family).")
      .def(py::init([](std::string device, const Projection& projection, std::string family,
                       std::string core_emulation) {
             return Calibration{std::move(device), std::move(family), projection,
                                std::move(core_emulation)};
           }),
           py::arg("device"), py::arg("projection"), py::arg("family") = "",
           py::arg("core_emulation") = "")
      .def_readonly("device", &Calibration::device)
      .def_readonly("family", &Calibration::family)
      .def_readonly("projection", &Calibration::projection)
      .def_readonly("core_emulation", &Calibration::core_emulation,
                    "How the runs its features came from emulated the device's cores "
                    "('projected', 'pooled', 'per-core'); '' when not recorded.");
  m.def("calibrations_to_json", &calibrations_to_json, py::arg("calibrations"));
  m.def("calibrations_from_json", &calibrations_from_json, py::arg("text"));
  m.def("find_calibration", &find_calibration, py::arg("calibrations"), py::arg("device"),
        py::arg("target"), py::arg("family") = "", py::arg("core_emulation") = "");
  m.def("project", &project, py::arg("calibration"), py::arg("result"),
        py::arg("confidence") = 0.95,
        "The device figure a calibration projects from a result's figures.");

  py::class_<ComparisonRow>(m, "ComparisonRow", "One workload on one device.")
      .def_readonly("workload", &ComparisonRow::workload)
      .def_readonly("device", &ComparisonRow::device)
      .def_readonly("result", &ComparisonRow::result)
      .def_readonly("value", &ComparisonRow::value)
      .def_readonly("memory", &ComparisonRow::memory)
      .def_readonly("rank", &ComparisonRow::rank)
      .def_readonly("tied", &ComparisonRow::tied)
      .def_readonly("pareto", &ComparisonRow::pareto)
      .def_readonly("projected", &ComparisonRow::projected);
  py::class_<Comparison>(m, "Comparison", "Workloads compared on devices.")
      .def_readonly("rows", &Comparison::rows)
      .def_property_readonly("metric", [](const Comparison& c) { return c.options.metric; })
      .def_property_readonly("memory_metric",
                             [](const Comparison& c) { return c.options.memory_metric; })
      .def_property_readonly("projected_target",
                             [](const Comparison& c) { return c.options.projected_target; })
      .def_property_readonly("repeat", [](const Comparison& c) { return c.options.repeat; })
      .def("__str__", [](const Comparison& c) { return to_text(c); });
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
         std::optional<double> quota_scale, std::optional<bool> drift_check) {
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
                                       core_scaling, quota_scale, drift_check);
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
      py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none());

  py::class_<SpeedModel>(m, "SpeedModel", "A figure as a function of core speed: a / speed + b.")
      .def(py::init([](double a, double b) { return SpeedModel{a, b}; }), py::arg("a"),
           py::arg("b"))
      .def_readonly("a", &SpeedModel::a, "The part that scales with 1 / speed.")
      .def_readonly("b", &SpeedModel::b, "The part that does not depend on the speed.")
      .def("at", &SpeedModel::at, py::arg("speed"))
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
      .def_readonly("name", &WorkloadSpeedFit::name)
      .def_readonly("device_value", &WorkloadSpeedFit::device_value)
      .def_readonly("points", &WorkloadSpeedFit::points,
                    "Measured here: (speed, median figure) in the order run.")
      .def_readonly("model", &WorkloadSpeedFit::model)
      .def_readonly("emulated", &WorkloadSpeedFit::emulated,
                    "Measured here at the calibrated speed (median).")
      .def_readonly("residual", &WorkloadSpeedFit::residual, "emulated / device_value - 1.")
      .def_readonly("speed_sensitive", &WorkloadSpeedFit::speed_sensitive);
  py::class_<PeriodSpeedFit>(m, "PeriodSpeedFit", "The calibration at one candidate period.")
      .def_readonly("period_us", &PeriodSpeedFit::period_us)
      .def_readonly("core_speed", &PeriodSpeedFit::core_speed)
      .def_readonly("rms_residual", &PeriodSpeedFit::rms_residual)
      .def_readonly("workloads", &PeriodSpeedFit::workloads);
  py::class_<SpeedCalibration>(m, "SpeedCalibration", "What calibrate_speed() found.")
      .def_readonly("core_speed", &SpeedCalibration::core_speed)
      .def_readonly("period_us", &SpeedCalibration::period_us)
      .def_readonly("rms_residual", &SpeedCalibration::rms_residual)
      .def_readonly("max_abs_residual", &SpeedCalibration::max_abs_residual)
      .def_readonly("periods", &SpeedCalibration::periods)
      .def_readonly("device", &SpeedCalibration::device,
                    "The device with the calibrated core_speed and its source.")
      .def_readonly("notes", &SpeedCalibration::notes)
      .def("__str__", [](const SpeedCalibration& c) { return to_text(c); });
  m.def(
      "calibrate_speed",
      [](const py::object& device,
         const std::vector<std::tuple<std::string, std::vector<std::string>, double>>& workloads,
         const std::string& figure, int repeat, const std::vector<double>& speeds,
         const std::vector<std::uint64_t>& periods_us, const py::object& parent,
         std::uint64_t cpu_period_us, const std::vector<int>& cpus, bool allow_missing,
         std::optional<double> iteration_time, bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check, std::optional<double> timeout,
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
                                  iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check);
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
      py::arg("iteration_time") = py::none(), py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(),
      py::arg("timeout") = py::none(), py::arg("progress") = py::none(),
      "Finds the core speed at which emulating `device` reproduces figures measured on the "
      "real device. workloads: (name, argv, device_value) tuples, device_value being the "
      "figure (seconds of wall time by default) measured on the device. Measures each "
      "workload here at a few speeds, fits figure = a / speed + b, solves, and runs every "
      "workload again at the solution to report measured residuals. periods_us: candidate "
      "CFS periods, the best kept. progress(done, planned, workload, speed, period_us).");

  py::class_<Score>(m, "Score", "What an objective function needs from one run.")
      .def_readonly("ok", &Score::ok)
      .def_readonly("latency", &Score::latency)
      .def_readonly("memory", &Score::memory)
      .def_readonly("latency_provenance", &Score::latency_provenance)
      .def_readonly("memory_provenance", &Score::memory_provenance)
      .def_readonly("latency_prediction", &Score::latency_prediction)
      .def_readonly("memory_prediction", &Score::memory_prediction)
      .def_readonly("latency_check", &Score::latency_check)
      .def_readonly("memory_check", &Score::memory_check)
      .def_readonly("fits", &Score::fits)
      .def_readonly("penalty", &Score::penalty)
      .def("__repr__", [](const Score& s) {
        return std::string("Score(ok=") + (s.ok ? "True" : "False") +
               ", latency=" + py::repr(py::float_(s.latency)).cast<std::string>() + " (" +
               s.latency_provenance + "), memory=" +
               py::repr(py::float_(s.memory)).cast<std::string>() + " (" + s.memory_provenance +
               "), fits=" + (s.fits ? "True" : "False") +
               ", penalty=" + py::repr(py::float_(s.penalty)).cast<std::string>() + ")";
      });
  m.def(
      "score",
      [](const Result& r, std::optional<double> latency, std::optional<double> memory,
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
      "Scores a run for an objective: latency and memory (projected through the calibrations "
      "when given) against the budget (latency in the figure's unit, memory in bytes). "
      "penalty = sum of relative overruns; a failed run has ok = fits = False.");

  m.def("mark", [](const std::string& name) { edgeprof::mark(name); }, py::arg("name"),
        "Starts phase `name` (the previous mark's phase ends). A no-op outside edgeprof.");
  m.def("phase_begin", [](const std::string& name) { edgeprof::phase_begin(name); },
        py::arg("name"));
  m.def("phase_end", [](const std::string& name) { edgeprof::phase_end(name); },
        py::arg("name"));
  m.def("profiled", &edgeprof::profiled,
        "True when this process runs under edgeprof with a phase channel.");

  py::class_<Child>(m, "Child", "A workload started in a Slice.")
      .def_property_readonly("pid", &Child::pid)
      .def(
          "wait",
          [](Child& c, std::optional<double> timeout) {
            auto t = to_timeout(timeout);
            py::gil_scoped_release release;
            return c.wait(t, python_signals());
          },
          py::arg("timeout") = py::none(),
          "Waits for the workload to exit and returns its Result. After `timeout` seconds it "
          "kills everything in the slice and reports timed_out. Ctrl-C kills the workload and "
          "raises KeyboardInterrupt. The GIL is released while waiting.");

  py::class_<Slice>(m, "Slice", "One emulated device instance (its cgroups).")
      .def(py::init([](const py::object& device, const py::object& parent,
                       std::uint64_t cpu_period_us, const std::vector<int>& cpus,
                       bool allow_missing, std::optional<double> iteration_time,
                       bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check) {
             Device d = to_device(device);
             SliceOptions o =
                 to_slice_options(parent, cpu_period_us, cpus, allow_missing,
                                  iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check);
             py::gil_scoped_release release;
             return std::make_unique<Slice>(std::move(d), std::move(o));
           }),
           py::arg("device"), py::kw_only(), py::arg("parent") = py::none(),
           py::arg("cpu_period_us") = kChosenCpuPeriod, py::arg("cpus") = std::vector<int>{},
           py::arg("allow_missing_controllers") = false, py::arg("iteration_time") = py::none(),
           py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none())
      .def(
          "spawn",
          [](Slice& s, const std::vector<std::string>& argv, const py::object& env,
             const py::object& cwd, const py::object& stdin_, const py::object& stdout_,
             const py::object& stderr_, std::optional<double> interval, bool isolate_network) {
            Command c = to_command(argv, env, cwd, stdin_, stdout_, stderr_);
            SpawnOptions o;
            o.sample_interval = to_interval(interval);
            o.isolate_network = isolate_network;
            py::gil_scoped_release release;
            return s.spawn(c, o);
          },
          py::arg("argv"), py::kw_only(), py::arg("env") = py::none(), py::arg("cwd") = py::none(),
          py::arg("stdin") = py::none(), py::arg("stdout") = py::none(),
          py::arg("stderr") = py::none(),
          py::arg("interval") = double(kDefaultSampleIntervalNs) / 1e9,
          py::arg("isolate_network") = false,
          "Starts argv inside the slice (inside before its first instruction) and returns a "
          "Child. env replaces the whole environment; stdin/stdout/stderr take None (inherit), "
          "subprocess.DEVNULL, a file descriptor, an open file object or a file path. SpawnError (errno, path) when it cannot start.")
      .def("kill", &Slice::kill, py::call_guard<py::gil_scoped_release>())
      .def("close", &Slice::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", &Slice::closed)
      .def_property_readonly("device", &Slice::device)
      .def_property_readonly("plan", &Slice::plan)
      .def_property_readonly("mode", [](const Slice& s) { return to_string(s.mode()); })
      .def_property_readonly("unapplied", &Slice::unapplied)
      .def_property_readonly("paths", &Slice::paths)
      .def("__enter__", [](Slice& s) -> Slice& { return s; }, py::return_value_policy::reference)
      .def("__exit__", [](Slice& s, const py::args&) {
        py::gil_scoped_release release;
        s.close();
      });

  m.def(
      "run",
      [](const std::vector<std::string>& argv, const py::object& device,
         std::optional<double> timeout, const py::object& env, const py::object& cwd,
         const py::object& stdin_, const py::object& stdout_, const py::object& stderr_,
         std::optional<double> interval, bool isolate_network, int repeat, int warmup,
         const py::object& progress, const py::object& parent,
         std::uint64_t cpu_period_us, const std::vector<int>& cpus,
         bool allow_missing, std::optional<double> iteration_time,
         bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check) -> py::object {
        Device d = to_device(device);
        Command c = to_command(argv, env, cwd, stdin_, stdout_, stderr_);
        RunOptions o;
        o.slice = to_slice_options(parent, cpu_period_us, cpus, allow_missing,
                                  iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check);
        o.spawn.sample_interval = to_interval(interval);
        o.spawn.isolate_network = isolate_network;
        o.timeout = to_timeout(timeout);
        o.check = python_signals();
        if (repeat == 1 && warmup == 0) {
          Result r;
          {
            py::gil_scoped_release release;
            r = run(c, d, o);
          }
          return py::cast(std::move(r));
        }
        // True, or None with more than one run: edgeprof's own display (Python's: tqdm or a line
        // per run); False: none; else the caller's function.
        py::object shown = progress;
        if (progress.is(py::bool_(true)) || (progress.is_none() && repeat + warmup > 1)) {
          shown = py::module_::import("edgeprof._compare").attr("_RunProgress")();
        }
        if (!shown.is_none() && !shown.is(py::bool_(false)) && !PyCallable_Check(shown.ptr())) {
          throw py::type_error("progress: expected True, False, None or a function "
                               "progress(index, total, is_warmup, result)");
        }
        const RunCallback callback = shown.is_none() || shown.is(py::bool_(false))
                                         ? RunCallback{}
                                         : shown.cast<RunCallback>();
        RepeatedResult rr;
        {
          py::gil_scoped_release release;
          rr = run_repeated(c, d, repeat, warmup, o, callback);
        }
        return py::cast(std::move(rr));
      },
      py::arg("argv"), py::kw_only(), py::arg("device"), py::arg("timeout") = py::none(),
      py::arg("env") = py::none(), py::arg("cwd") = py::none(), py::arg("stdin") = py::none(),
      py::arg("stdout") = py::none(), py::arg("stderr") = py::none(),
      py::arg("interval") = double(kDefaultSampleIntervalNs) / 1e9,
      py::arg("isolate_network") = false, py::arg("repeat") = 1, py::arg("warmup") = 0,
      py::arg("progress") = py::none(), py::arg("parent") = py::none(),
      py::arg("cpu_period_us") = kChosenCpuPeriod, py::arg("cpus") = std::vector<int>{},
      py::arg("allow_missing_controllers") = false, py::arg("iteration_time") = py::none(),
      py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(),
      "Runs argv in a fresh slice emulating `device` (a Device or a built-in device's name) "
      "and returns its Result; the slice is removed before returning, also on errors and "
      "Ctrl-C. With repeat > 1 or warmup > 0 it returns a RepeatedResult instead: warm-up runs "
      "first (kept apart), then `repeat` runs, each in a fresh slice, with statistics.\n\n"
      "timeout: seconds per run, then the workload is killed and Result.timed_out is set.\n"
      "env, cwd, stdin, stdout, stderr: as Slice.spawn.\n"
      "interval: sampling interval in seconds (1 ms .. 60 s, default 0.01); None = no "
      "sampling.\n"
      "isolate_network: run in a network namespace of its own with only loopback (an offline "
      "device), its traffic counted exactly.\n"
      "progress: called after each run as progress(index, total, is_warmup, result); True or "
      "None (the default) shows progress (tqdm where installed, else a line per run on "
      "stderr) when there is more than one run; False shows none.\n"
      "parent: the cgroup to create the slice beneath (default: $EDGEPROF_CGROUP_PARENT, "
      "else this process's own cgroup).\n"
      "cpu_period_us: the CFS bandwidth period in microseconds; 0 (the default) = 10 ms, "
      "longer where several CPUs share the quota (docs/period.md); cpus: explicit host CPUs "
      "for the cpuset.\n"
      "iteration_time: the workload's typical iteration on the device, in seconds; the CFS "
      "period is then a tenth of it, within 5 to 100 ms (docs/period.md).\n"
      "allow_missing_controllers: run even when a cgroup controller is missing; the limits "
      "not applied are listed in Result.unapplied.\n"
      "keep_warm: keep the slice's CPUs busy with idle-priority threads outside it while a "
      "throttled workload runs, so the quota buys the work it should (docs/keep-warm.md); "
      "their CPU is Result.keep_warm_cpu_s.");
}
