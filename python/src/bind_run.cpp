// Bindings of include/edgeprof/phase.hpp and slice.hpp: type conversion only. Waits run without
// the GIL; Ctrl-C still reaches Python (python_signals).
#include "bind_run.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <edgeprof/device.hpp>
#include <edgeprof/error.hpp>
#include <edgeprof/phase.hpp>
#include <edgeprof/plan.hpp>
#include <edgeprof/result.hpp>
#include <edgeprof/slice.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_common.hpp"

namespace py = pybind11;
using namespace edgeprof;
using namespace edgeprof_py;

namespace {

// subprocess.DEVNULL, accepted for "discard this stream".
constexpr int kDevnull = -3;

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

}  // namespace

void bind_run(py::module_& m) {
  m.def("mark", [](const std::string& name) { edgeprof::mark(name); }, py::arg("name"),
        "Starts phase `name` (the previous mark's phase ends). A no-op outside edgeprof.");
  m.def("phase_begin", [](const std::string& name) { edgeprof::phase_begin(name); },
        py::arg("name"),
        "Begins phase `name` explicitly (phases may nest; phase_end closes it). A no-op outside "
        "edgeprof.");
  m.def("phase_end", [](const std::string& name) { edgeprof::phase_end(name); },
        py::arg("name"),
        "Ends a phase explicitly: closes the latest open phase of that name. A no-op outside "
        "edgeprof.");
  m.def("profiled", &edgeprof::profiled,
        "True when this process runs under edgeprof with a phase channel.");

  py::class_<Child>(m, "Child", "A workload started in a Slice.")
      .def_property_readonly("pid", &Child::pid,
                             "The process id of the workload (the direct child).")
      .def(
          "wait",
          [](Child& c, std::optional<double> timeout) {
            auto t = to_timeout(timeout);
            py::gil_scoped_release release;
            return c.wait(t, python_signals());
          },
          py::arg("timeout") = py::none(),
          "Waits for the workload to exit and returns its Result. After `timeout` seconds it "
          "kills everything in the slice (and the workload itself if it left the slice) and "
          "reports timed_out. Ctrl-C kills the workload and "
          "raises KeyboardInterrupt. The GIL is released while waiting. Waiting again gives "
          "the same Result; two threads waiting at once take turns (the second gets the "
          "first's Result, and its timeout is the first's).");

  py::class_<CpuLimit>(m, "CpuLimit",
                           "A CPU bandwidth limit as the kernel holds it (Slice.cpu_limit()).")
      .def_readonly("quota_us", &CpuLimit::quota_us, "CPU time per period; None: no limit")
      .def_readonly("period_us", &CpuLimit::period_us, "The period, in microseconds.")
      .def("__eq__", [](const CpuLimit& a, const CpuLimit& b) { return a == b; },
           py::is_operator())
      .def("__repr__", [](const CpuLimit& b) {
        return "CpuLimit(quota_us=" + (b.quota_us ? std::to_string(*b.quota_us) : "None") +
               ", period_us=" + std::to_string(b.period_us) + ")";
      });

  py::class_<Slice>(m, "Slice", "One emulated device instance (its cgroups).")
      .def(py::init([](const py::object& device, const py::object& parent,
                       std::uint64_t cpu_period_us, const std::vector<int>& cpus,
                       bool allow_missing, std::optional<double> iteration_time,
                       bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check, std::optional<double> workload_scaling, std::optional<bool> count_activations) {
             Device d = to_device(device);
             SliceOptions o =
                 to_slice_options(parent, cpu_period_us, cpus, allow_missing,
                                  iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check, workload_scaling, count_activations);
             py::gil_scoped_release release;
             return std::make_unique<Slice>(std::move(d), std::move(o));
           }),
           py::arg("device"), py::kw_only(), py::arg("parent") = py::none(),
           py::arg("cpu_period_us") = kChosenCpuPeriod, py::arg("cpus") = std::vector<int>{},
           py::arg("allow_missing_controllers") = false, py::arg("iteration_time") = py::none(),
           py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(), py::arg("workload_scaling") = py::none(), py::arg("count_activations") = py::none())
      .def(
          "spawn",
          [](Slice& s, const std::vector<std::string>& argv, const py::object& env,
             const py::object& cwd, const py::object& stdin_, const py::object& stdout_,
             const py::object& stderr_, std::optional<double> interval, bool isolate_network) {
            Command c = to_command(argv, env, cwd, stdin_, stdout_, stderr_);
            SpawnOptions o;
            o.sample_interval = to_interval(interval);
            o.isolate_network = isolate_network;
            std::optional<Child> child;
            {
              py::gil_scoped_release release;
              child.emplace(s.spawn(c, o));
            }
            // The Child keeps its Slice: `Slice(d).spawn(argv).wait()` collected the slice at
            // once, which killed the workload. Kept here, not by py::keep_alive<0, 1>: pybind11
            // (3.1) runs that after an argument that did not convert too, on no result, which
            // crashed the interpreter (`spawn("true")`, a str for the list).
            py::object result = py::cast(std::move(*child));
            // s's own Python object (pybind11 finds the instance it registered for s).
            py::detail::keep_alive_impl(result, py::cast(&s, py::return_value_policy::reference));
            return result;
          },
          py::arg("argv"), py::kw_only(), py::arg("env") = py::none(), py::arg("cwd") = py::none(),
          py::arg("stdin") = py::none(), py::arg("stdout") = py::none(),
          py::arg("stderr") = py::none(),
          py::arg("interval") = double(kDefaultSampleIntervalNs) / 1e9,
          py::arg("isolate_network") = false,
          "Starts argv inside the slice (inside before its first instruction) and returns a "
          "Child. env replaces the whole environment; stdin/stdout/stderr take None (inherit), "
          "subprocess.DEVNULL, a file descriptor, an open file object or a file path. SpawnError (errno, path) when it cannot start.")
      .def("kill", &Slice::kill, py::call_guard<py::gil_scoped_release>(),
           "Kills every process in the slice (the slice itself stays). Raises edgeprof.Error "
           "when the slice is closed.")
      .def("close", &Slice::close, py::call_guard<py::gil_scoped_release>(),
           "Kills everything in the slice and removes its cgroups now (as the end of a with "
           "block does). Calling it again does nothing; spawn afterwards raises edgeprof.Error.")
      .def_property_readonly("closed", &Slice::closed,
                             "True once close() was called (also by the end of a with block).")
      .def_property_readonly("device", &Slice::device, "The device emulated (a Device).")
      .def_property_readonly("plan", &Slice::plan,
                             "The cgroup settings applied (an EmulationPlan), with notes on "
                             "where they differ from the device.")
      .def_property_readonly("mode", [](const Slice& s) { return to_string(s.mode()); },
                             "How this host mounts cgroups: 'unified' (v2), 'hybrid' (v1 "
                             "controllers plus a cgroup2 mount) or 'legacy' (v1 only).")
      .def_property_readonly("unapplied", &Slice::unapplied,
                             "Limits of the device that were not applied (a list of str), each "
                             "with the reason.")
      .def_property_readonly("paths", &Slice::paths,
                             "The slice's cgroup directories (one per v1 hierarchy, one on v2); "
                             "empty once closed.")
      .def("cpu_limit", &Slice::cpu_limit,
           "The CPU bandwidth limit the kernel holds for the slice now (CpuLimit): the "
           "plan's after the start, another while a speed schedule or a followed runtime changed "
           "it; under per-core emulation the core groups' quotas summed.")
      .def("__enter__",
           [](Slice& s) -> Slice& {
             // A closed slice entered silently, and the spawn in the block failed.
             if (s.closed()) throw edgeprof::Error("this slice is closed: create a new Slice");
             return s;
           },
           py::return_value_policy::reference)
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
         bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check, std::optional<double> workload_scaling, std::optional<bool> count_activations) -> py::object {
        Device d = to_device(device);
        Command c = to_command(argv, env, cwd, stdin_, stdout_, stderr_);
        RunOptions o;
        o.slice = to_slice_options(parent, cpu_period_us, cpus, allow_missing,
                                  iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check, workload_scaling, count_activations);
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
      py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(), py::arg("workload_scaling") = py::none(), py::arg("count_activations") = py::none(),
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
      "their CPU is Result.keep_warm_cpu_s.\n"
      "count_activations: on a device with published PyTorch or ONNX Runtime times, a "
      "sampled workload's model in that runtime is counted (its activations in one inference, its CPU "
      "time in five at one thread) and the device runs at its speed with that runtime with "
      "that memory term from then on (Result.speed_changes); None (the default): on unless "
      "EDGEPROF_COUNT_ACTIVATIONS=0 (EDGEPROF_COUNT_ONNXRUNTIME=0: ONNX Runtime's alone not "
      "counted; docs/devices.md, \"A workload's own speed\").");
}
