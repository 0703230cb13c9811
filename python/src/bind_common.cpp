// The conversions that several bind_*.cpp files share; bind_common.hpp says what each does.
#include "bind_common.hpp"

#include <dlfcn.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <edgeprof/catalog.hpp>
#include <edgeprof/device.hpp>
#include <edgeprof/error.hpp>
#include <edgeprof/plan.hpp>
#include <edgeprof/slice.hpp>
#include <mutex>
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
  // A first run on a host without its nn rating measures it (seconds to a minute): say so on
  // sys.stderr, which notebooks show too.
  o.plan.nn_measure.progress = with_signal_check([](py::str line) {
    py::module_::import("sys").attr("stderr").attr("write")(py::str("edgeprof: {}\n").format(line));
  });
  o.allow_missing_controllers = allow_missing;
  return o;
}

namespace {

// Ctrl-C in a thread other than the main one: Python runs signal handlers on the main thread
// only (PyErr_CheckSignals does nothing elsewhere), so a run in a worker thread (Optuna's
// n_jobs=2, a ThreadPoolExecutor) went on to its end after the main thread's
// KeyboardInterrupt. While Python's handler is its default one (KeyboardInterrupt), SIGINT is
// counted by a handler that then calls Python's own C handler; a run in another thread stops
// once the count moved since it started.
std::atomic<unsigned> g_sigints{0};
// Python's C handler, the one called next: only a handler in CPython's own code is replaced
// (another library's handler that chains to whatever it found, ours, would call ours, which
// called it, for ever; one recorded as Python's was never replaced again once Python's own
// came back).
std::atomic<void (*)(int)> g_python_handler{nullptr};

bool in_python(void (*handler)(int)) {
  Dl_info theirs{}, python{};
  return ::dladdr(reinterpret_cast<void*>(handler), &theirs) != 0 &&
         ::dladdr(reinterpret_cast<void*>(&PyErr_CheckSignals), &python) != 0 &&
         theirs.dli_fbase == python.dli_fbase;
}
std::mutex g_install_mutex;

void count_sigint(int sig, siginfo_t*, void*) {
  const int saved = errno;
  g_sigints.fetch_add(1);
  if (auto handler = g_python_handler.load()) handler(sig);
  errno = saved;
}

bool counting_now() {
  struct sigaction now {};
  return ::sigaction(SIGINT, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 &&
         now.sa_sigaction == count_sigint;
}

// The counting handler in front of Python's, where Python's handler for SIGINT is its default
// one; false where it is not (the program's own handler decides what Ctrl-C does), no handler
// of Python's is installed, or another C handler is. Called again by a run's checks: Python
// installs its handler again whenever signal.signal() is called (asyncio.run() and notebook
// kernels do, around their work), which took ours away. The GIL is held.
bool count_sigint_now() {
  py::module_ signal = py::module_::import("signal");
  if (!signal.attr("getsignal")(signal.attr("SIGINT")).is(signal.attr("default_int_handler"))) {
    return false;
  }
  const std::lock_guard<std::mutex> lock(g_install_mutex);
  struct sigaction now {};
  if (::sigaction(SIGINT, nullptr, &now) != 0) return false;
  if ((now.sa_flags & SA_SIGINFO) != 0) return now.sa_sigaction == count_sigint;
  if (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN) return false;
  if (!in_python(now.sa_handler)) return false;
  g_python_handler.store(now.sa_handler);
  struct sigaction ours = now;
  ours.sa_flags = now.sa_flags | SA_SIGINFO;
  ours.sa_sigaction = count_sigint;
  return ::sigaction(SIGINT, &ours, nullptr) == 0;
}

bool on_main_thread() {
  py::module_ threading = py::module_::import("threading");
  return threading.attr("main_thread")().is(threading.attr("current_thread")());
}

}  // namespace

InterruptCheck python_signals() {
  py::gil_scoped_acquire held;
  if (on_main_thread()) {
    return [] {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    };
  }
  const unsigned since = g_sigints.load();
  count_sigint_now();
  // The count at the start: a SIGINT counted since is this run's. Where the handler was taken
  // away, put back (at most once a second: it takes the GIL) while Python's default one is in
  // place again.
  return [since, tried = std::chrono::steady_clock::time_point()]() mutable {
    if (g_sigints.load() != since) {
      py::gil_scoped_acquire gil;
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - tried < std::chrono::seconds(1)) return;
    tried = now;
    if (!counting_now()) {
      py::gil_scoped_acquire gil;
      count_sigint_now();
    }
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
