// edgeprof._core: converts between Python and C++ types and nothing else. Everything that
// emulates, spawns or measures lives in the C++ library.
#include <pybind11/chrono.h>
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <edgeprof/edgeprof.hpp>

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
void raise(PyObject* type, const Error& e, const char* path = nullptr) {
  py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunction(type, "s", e.what()));
  if (!exc) return;  // the constructor raised; that error stands
  if (e.sys_errno() != 0) exc.attr("errno") = e.sys_errno();
  if (path) exc.attr("path") = path;
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
  long long bytes = value.cast<long long>();
  if (bytes < 0) throw DeviceError(std::string(field) + " must not be negative");
  return static_cast<std::uint64_t>(bytes);
}

Device to_device(const py::object& value) {
  if (py::isinstance<py::str>(value)) return builtin_device(value.cast<std::string>());
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
                              const std::vector<int>& cpus, bool allow_missing) {
  SliceOptions o;
  if (!parent.is_none()) o.parent = parent.cast<std::string>();
  o.plan.cpu_period_us = cpu_period_us;
  o.plan.cpus = cpus;
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

std::optional<std::chrono::duration<double>> to_timeout(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  if (*seconds <= 0) throw py::value_error("timeout must be positive (seconds)");
  return std::chrono::duration<double>(*seconds);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "edgeprof's C++ core. Use the `edgeprof` package rather than this module.";
  m.attr("__version__") = version();
  m.attr("DEFAULT_CPU_PERIOD_US") = kDefaultCpuPeriodUs;

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

  py::class_<Device>(m, "Device", "A target device: cores, core speed relative to one host "
                                  "core, memory, swap and optional limits.")
      .def(py::init([](std::string name, int cores, double core_speed, py::object memory,
                       py::object swap, std::optional<std::uint64_t> io_read_bps,
                       std::optional<std::uint64_t> io_write_bps,
                       std::optional<std::int64_t> pids_max, std::string description,
                       std::string source) {
             Device d;
             d.name = std::move(name);
             d.cores = cores;
             d.core_speed = core_speed;
             d.memory_bytes = to_size(memory, "memory");
             d.swap_bytes = to_size(swap, "swap");
             d.io_read_bps = io_read_bps;
             d.io_write_bps = io_write_bps;
             d.pids_max = pids_max;
             d.description = std::move(description);
             d.source = std::move(source);
             d.validate();
             return d;
           }),
           py::kw_only(), py::arg("name"), py::arg("cores"), py::arg("core_speed"),
           py::arg("memory"), py::arg("swap") = py::int_(0), py::arg("io_read_bps") = py::none(),
           py::arg("io_write_bps") = py::none(), py::arg("pids_max") = py::none(),
           py::arg("description") = "", py::arg("source") = "user-supplied")
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
      .def(py::self == py::self)
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.name)); })
      .def("__repr__", [](const Device& d) {
        return "Device(name='" + d.name + "', cores=" + std::to_string(d.cores) +
               ", core_speed=" + py::repr(py::float_(d.core_speed)).cast<std::string>() +
               ", memory='" + format_size(d.memory_bytes) + "')";
      });

  m.def("builtin_devices", &builtin_devices, "The built-in devices.");
  m.def("builtin_device", &builtin_device, py::arg("name"),
        "A built-in device by name; DeviceError lists the known names when there is none.");
  m.def("parse_size", &parse_size, py::arg("text"), py::arg("field") = "size",
        "Bytes in a size such as \"512MiB\", \"1.5GiB\", \"500MB\" or \"512M\".");
  m.def("format_size", &format_size, py::arg("bytes"));
  m.def("cgroup_mode", [] { return to_string(cgroup_mode()); },
        "'unified' (cgroup v2), 'hybrid' or 'legacy' (cgroup v1 controllers).");

  py::class_<EmulationPlan>(m, "EmulationPlan", "The cgroup settings that emulate a device.")
      .def_readonly("cpus", &EmulationPlan::cpus)
      .def_readonly("cpu_period_us", &EmulationPlan::cpu_period_us)
      .def_readonly("cpu_quota_us", &EmulationPlan::cpu_quota_us)
      .def_readonly("memory_max_bytes", &EmulationPlan::memory_max_bytes)
      .def_readonly("swap_max_bytes", &EmulationPlan::swap_max_bytes)
      .def_readonly("pids_max", &EmulationPlan::pids_max)
      .def_readonly("notes", &EmulationPlan::notes)
      .def_property_readonly("capacity_cores", &EmulationPlan::capacity_cores);

  m.def(
      "plan_emulation",
      [](const py::object& device, std::uint64_t cpu_period_us, const std::vector<int>& cpus) {
        PlanOptions o;
        o.cpu_period_us = cpu_period_us;
        o.cpus = cpus;
        return plan_emulation(to_device(device), host_facts(), o);
      },
      py::arg("device"), py::arg("cpu_period_us") = kDefaultCpuPeriodUs,
      py::arg("cpus") = std::vector<int>{},
      "The cgroup settings that would emulate the device on this host (nothing is created).");

  py::class_<Result>(m, "Result", "What happened to one workload, from kernel counters.")
      .def_readonly("exit_code", &Result::exit_code)
      .def_readonly("signal", &Result::signal)
      .def_readonly("timed_out", &Result::timed_out)
      .def_readonly("oom_killed", &Result::oom_killed)
      .def_readonly("oom_kills", &Result::oom_kills)
      .def_readonly("wall_time_s", &Result::wall_time_s)
      .def_readonly("cpu_user_s", &Result::cpu_user_s)
      .def_readonly("cpu_system_s", &Result::cpu_system_s)
      .def_readonly("peak_memory_bytes", &Result::peak_memory_bytes)
      .def_readonly("peak_memory_source", &Result::peak_memory_source)
      .def_readonly("throttled_s", &Result::throttled_s)
      .def_readonly("throttled_periods", &Result::throttled_periods)
      .def_readonly("periods", &Result::periods)
      .def_readonly("child_max_rss_bytes", &Result::child_max_rss_bytes)
      .def_readonly("placement", &Result::placement)
      .def_readonly("device", &Result::device)
      .def_readonly("plan", &Result::plan)
      .def_property_readonly("cgroup_mode", [](const Result& r) { return to_string(r.cgroup_mode); })
      .def_readonly("unapplied", &Result::unapplied)
      .def_readonly("command", &Result::command)
      .def_property_readonly("ok", &Result::ok)
      .def("to_json", [](const Result& r) { return to_json(r); })
      .def("__str__", [](const Result& r) { return to_text(r); });

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
                       bool allow_missing) {
             Device d = to_device(device);
             SliceOptions o = to_slice_options(parent, cpu_period_us, cpus, allow_missing);
             py::gil_scoped_release release;
             return std::make_unique<Slice>(std::move(d), std::move(o));
           }),
           py::arg("device"), py::kw_only(), py::arg("parent") = py::none(),
           py::arg("cpu_period_us") = kDefaultCpuPeriodUs, py::arg("cpus") = std::vector<int>{},
           py::arg("allow_missing_controllers") = false)
      .def(
          "spawn",
          [](Slice& s, const std::vector<std::string>& argv, const py::object& env,
             const py::object& cwd, const py::object& stdin_, const py::object& stdout_,
             const py::object& stderr_) {
            Command c = to_command(argv, env, cwd, stdin_, stdout_, stderr_);
            py::gil_scoped_release release;
            return s.spawn(c);
          },
          py::arg("argv"), py::kw_only(), py::arg("env") = py::none(), py::arg("cwd") = py::none(),
          py::arg("stdin") = py::none(), py::arg("stdout") = py::none(),
          py::arg("stderr") = py::none(),
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
         const py::object& parent, std::uint64_t cpu_period_us, const std::vector<int>& cpus,
         bool allow_missing) {
        Device d = to_device(device);
        Command c = to_command(argv, env, cwd, stdin_, stdout_, stderr_);
        RunOptions o;
        o.slice = to_slice_options(parent, cpu_period_us, cpus, allow_missing);
        o.timeout = to_timeout(timeout);
        o.check = python_signals();
        py::gil_scoped_release release;
        return run(c, d, o);
      },
      py::arg("argv"), py::kw_only(), py::arg("device"), py::arg("timeout") = py::none(),
      py::arg("env") = py::none(), py::arg("cwd") = py::none(), py::arg("stdin") = py::none(),
      py::arg("stdout") = py::none(), py::arg("stderr") = py::none(),
      py::arg("parent") = py::none(), py::arg("cpu_period_us") = kDefaultCpuPeriodUs,
      py::arg("cpus") = std::vector<int>{}, py::arg("allow_missing_controllers") = false,
      "Runs argv in a fresh slice emulating `device` (a Device or a built-in device's name) "
      "and returns its Result; the slice is removed before returning, also on errors and "
      "Ctrl-C.\n\n"
      "timeout: seconds, then the workload is killed and Result.timed_out is set.\n"
      "env, cwd, stdin, stdout, stderr: as Slice.spawn.\n"
      "parent: the cgroup to create the slice beneath (default: $EDGEPROF_CGROUP_PARENT, "
      "else this process's own cgroup).\n"
      "cpu_period_us: the CFS bandwidth period; cpus: explicit host CPUs for the cpuset.\n"
      "allow_missing_controllers: run even when a cgroup controller is missing; the limits "
      "not applied are listed in Result.unapplied.");
}
