// edgeprof._core: converts between Python and C++ types and nothing else. Everything that
// emulates, spawns or measures lives in the C++ library. This file makes the module and its
// exceptions; each bind_*.cpp adds a layer's classes and functions. The calls keep the order in
// which the classes were always registered: pybind11 converts a default argument when its
// function is defined, and names a class in a signature only once the class is registered.
#include <pybind11/pybind11.h>

#include <edgeprof/error.hpp>
#include <edgeprof/plan.hpp>
#include <edgeprof/version.hpp>
#include <exception>
#include <string>
#include <string_view>

#include "bind_analysis.hpp"
#include "bind_common.hpp"
#include "bind_devices.hpp"
#include "bind_microbench.hpp"
#include "bind_results.hpp"
#include "bind_run.hpp"
#include "bind_study.hpp"

namespace py = pybind11;
using namespace edgeprof;
using edgeprof_py::text;

namespace {

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
  bind_devices(m);
  bind_results(m);
  bind_analysis(m);
  bind_study(m);
  bind_run(m);
}
