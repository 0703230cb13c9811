// Bindings of include/edgeprof/result.hpp, series.hpp, summary.hpp and statistics.hpp: type
// conversion only. A series' columns are numpy views of its storage, not copies.
#include "bind_results.hpp"
#include "bind_common.hpp"

#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <edgeprof/energy.hpp>
#include <edgeprof/error.hpp>
#include <edgeprof/result.hpp>
#include <edgeprof/series.hpp>
#include <edgeprof/statistics.hpp>
#include <edgeprof/summary.hpp>
#include <map>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace edgeprof;
using edgeprof_py::fs_text;
using edgeprof_py::fs_texts;
using edgeprof_py::text;
using edgeprof_py::text_of;
using edgeprof_py::texts_of;

namespace {

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

// The report a pickled `what` carries (pickled by this release: one JSON text).
std::string pickled_text(const py::tuple& state, const char* what) {
  if (state.size() != 1 || !py::isinstance<py::str>(state[0])) {
    throw Error(std::string("cannot unpickle this ") + what + ": it was pickled by another "
                "edgeprof release; pickle it again with this one");
  }
  return state[0].cast<std::string>();
}

}  // namespace

void bind_results(py::module_& m) {
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
      .def(
          "__contains__",
          [](const TimeSeries& s, const py::object& name) {
            if (!py::isinstance<py::str>(name)) return false;
            const auto names = metric_names(s.available);
            return std::find(names.begin(), names.end(), name.cast<std::string>()) != names.end();
          },
          py::arg("metric"),
          "Whether the series has the metric's column (`'tasks' in r.series`); False for a "
          "name that is no metric.")
      .def_property_readonly("available",
                             [](const TimeSeries& s) { return metric_names(s.available); },
                             "The metrics some source provided in this run (a list of names); "
                             "indexing the series with another raises KeyError.")
      .def_property_readonly("complete",
                             [](const TimeSeries& s) { return metric_names(s.complete); },
                             "The available metrics recorded in every row (a list of names); a "
                             "source that failed mid-run repeats its last good value and is "
                             "left out here.")
      .def_property_readonly(
          "read_every",
          [](const TimeSeries& s) {
            std::map<std::string, std::uint32_t> every;
            for (int i = 0; i < kMetricCount; ++i) {
              if (s.available.test(static_cast<size_t>(i))) {
                every[to_string(static_cast<Metric>(i))] = s.read_every[static_cast<size_t>(i)];
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
      .def_readonly("cpu_cores_avg", &Summary::cpu_cores_avg,
                    "Measured: CPU used over the run, in host cores (the CPU time counter's "
                    "difference / time); None when not available.")
      .def_readonly("cpu_cores_p95", &Summary::cpu_cores_p95,
                    "Sampled: the 95th percentile of CPU used over windows of cpu_window_s, in "
                    "host cores; None when not available.")
      .def_readonly("cpu_cores_peak", &Summary::cpu_cores_peak,
                    "Sampled: the highest CPU used over a window of cpu_window_s, in host cores; "
                    "None when not available.")
      .def_readonly("cpu_window_s", &Summary::cpu_window_s,
                    "The length of the windows of cpu_cores_p95 and cpu_cores_peak, in seconds "
                    "(100 ms, or the sampling interval if longer; 0 without CPU usage).")
      .def_readonly("cpu_windows_carried", &Summary::cpu_windows_carried,
                    "Windows that counted more CPU than the quota lets through (time the kernel "
                    "charged at a tick's edge or beyond the quota); their excess is carried into "
                    "the windows after them, so p95 and peak are rates the slice could have had. "
                    "Only where a quota held for the whole run; else 0.")
      .def_readonly("cpu_capacity_avg", &Summary::cpu_capacity_avg,
                    "cpu_cores_avg as a fraction of the slice's capacity (plan.capacity_cores: "
                    "cores x speed x quota scale, one core's under projected emulation); None "
                    "when not available.")
      .def_readonly("cpu_capacity_p95", &Summary::cpu_capacity_p95,
                    "cpu_cores_p95 as a fraction of the slice's capacity (plan.capacity_cores: "
                    "cores x speed x quota scale, one core's under projected emulation); None "
                    "when not available.")
      .def_readonly("cpu_capacity_peak", &Summary::cpu_capacity_peak,
                    "cpu_cores_peak as a fraction of the slice's capacity (plan.capacity_cores: "
                    "cores x speed x quota scale, one core's under projected emulation); None "
                    "when not available.")
      .def_readonly("throttled_fraction", &Summary::throttled_fraction,
                    "Measured: throttled periods / periods (cpu.stat), a fraction; None when not "
                    "available.")
      .def_readonly("memory_avg_bytes", &Summary::memory_avg_bytes,
                    "Sampled: the time-weighted average of the memory charged to the slice, in "
                    "bytes; None when not available.")
      .def_readonly("memory_sampled_peak_bytes", &Summary::memory_sampled_peak_bytes,
                    "Sampled: the highest sample of the memory charged to the slice, in bytes; "
                    "None when not available.")
      .def_readonly("memory_anon_peak_bytes", &Summary::memory_anon_peak_bytes,
                    "Sampled: the highest anonymous memory (heap, stacks) of the slice, in bytes; "
                    "None when not available.")
      .def_readonly("memory_file_peak_bytes", &Summary::memory_file_peak_bytes,
                    "Sampled: the highest page cache of the slice, in bytes; None when not "
                    "available.")
      .def_readonly("memory_swap_peak_bytes", &Summary::memory_swap_peak_bytes,
                    "Sampled: the most of the slice's memory in swap, in bytes; None when not "
                    "available.")
      .def_readonly("major_faults", &Summary::major_faults,
                    "Measured: major page faults (ones that read from storage) over the run; None "
                    "when not available.")
      .def_readonly("io_read_bytes", &Summary::io_read_bytes,
                    "Measured: bytes read from block devices over the run; None when not "
                    "available.")
      .def_readonly("io_write_bytes", &Summary::io_write_bytes,
                    "Measured: bytes written to block devices over the run; None when not "
                    "available.")
      .def_readonly("io_read_ops", &Summary::io_read_ops,
                    "Measured: read operations on block devices over the run; None when not "
                    "available.")
      .def_readonly("io_write_ops", &Summary::io_write_ops,
                    "Measured: write operations on block devices over the run; None when not "
                    "available.")
      .def_readonly("net_rx_bytes", &Summary::net_rx_bytes,
                    "Measured: network bytes received over the run; None unless the workload ran "
                    "in its own network namespace.")
      .def_readonly("net_tx_bytes", &Summary::net_tx_bytes,
                    "Measured: network bytes sent over the run; None unless the workload ran in "
                    "its own network namespace.")
      .def_readonly("net_rx_packets", &Summary::net_rx_packets,
                    "Measured: network packets received over the run; None unless the workload "
                    "ran in its own network namespace.")
      .def_readonly("net_tx_packets", &Summary::net_tx_packets,
                    "Measured: network packets sent over the run; None unless the workload ran "
                    "in its own network namespace.")
      .def_readonly("pressure_cpu_some_s", &Summary::pressure_cpu_some_s,
                    "Measured: PSI stall seconds in which some tasks waited for CPU; host-wide on "
                    "cgroup v1 (pressure_host_wide); None when not available.")
      .def_readonly("pressure_memory_some_s", &Summary::pressure_memory_some_s,
                    "Measured: PSI stall seconds in which some tasks waited for memory; host-wide "
                    "on cgroup v1 (pressure_host_wide); None when not available.")
      .def_readonly("pressure_memory_full_s", &Summary::pressure_memory_full_s,
                    "Measured: PSI stall seconds in which all tasks waited for memory; host-wide "
                    "on cgroup v1 (pressure_host_wide); None when not available.")
      .def_readonly("pressure_io_some_s", &Summary::pressure_io_some_s,
                    "Measured: PSI stall seconds in which some tasks waited for I/O; host-wide on "
                    "cgroup v1 (pressure_host_wide); None when not available.")
      .def_readonly("pressure_io_full_s", &Summary::pressure_io_full_s,
                    "Measured: PSI stall seconds in which all tasks waited for I/O; host-wide on "
                    "cgroup v1 (pressure_host_wide); None when not available.")
      .def_readonly("pressure_host_wide", &Summary::pressure_host_wide,
                    "True when the pressure figures describe the whole host, not the slice "
                    "(cgroup v1).")
      .def_readonly("tasks_peak", &Summary::tasks_peak,
                    "Sampled: the most tasks (threads) seen in the slice at once; None when not "
                    "available.")
      .def_readonly("samples", &Summary::samples, "How many samples were taken.")
      .def_readonly("interval_s", &Summary::interval_s,
                    "The sampling interval requested, in seconds (0 = no sampling).")
      .def_readonly("interval_p50_s", &Summary::interval_p50_s,
                    "The sampling interval achieved: the median gap between scheduled samples, "
                    "in seconds; None with fewer than two scheduled samples or no sampling.")
      .def_readonly("jitter_p50_s", &Summary::jitter_p50_s,
                    "How late scheduled samples were, median, in seconds; None with fewer than "
                    "two scheduled samples or no sampling.")
      .def_readonly("jitter_p99_s", &Summary::jitter_p99_s,
                    "How late scheduled samples were, 99th percentile, in seconds; None with "
                    "fewer than two scheduled samples or no sampling.")
      .def_readonly("missed_deadlines", &Summary::missed_deadlines,
                    "Scheduled samples skipped because a sample took too long.")
      .def(py::self == py::self);

  py::class_<SpeedChange>(m, "SpeedChange", "A CPU bandwidth change during a run: a step of "
                                            "the device's speed schedule, or the switch to the "
                                            "speed of a runtime the workload loaded.")
      .def_readonly("t_s", &SpeedChange::t_s, "Measured: seconds since the workload's release.")
      .def_readonly("factor", &SpeedChange::factor,
                    "The step's fraction of the device's core_speed.")
      .def_readonly("cpu_quota_us", &SpeedChange::cpu_quota_us,
                    "The quota written (cpu.max / cpu.cfs_quota_us), in microseconds.")
      .def_readonly("cpu_period_us", &SpeedChange::cpu_period_us,
                    "The period written, in microseconds.")
      .def_property_readonly("error", text_of(&SpeedChange::error),
                             "Why the write failed; '' when it was applied.")
      .def_readonly("runtime", &SpeedChange::runtime,
                    "The runtime whose speed the device ran at from then on; '' for a schedule's "
                    "step.")
      .def_readonly("memory_mb_per_ms", &SpeedChange::memory_mb_per_ms,
                    "The workload's activation MB per ms of this host's one-thread time that set "
                    "the speed (counted MB over one thread's CPU ms measured under the slice "
                    "divided by this host's own share at the slice's quota and host drift; "
                    "count_activations); 0 otherwise.")
      .def("__repr__", [](const SpeedChange& c) {
        // The fields that say what the change was: a runtime's, a count's, a failure.
        std::string text = "SpeedChange(t_s=" + py::repr(py::float_(c.t_s)).cast<std::string>() +
                           ", factor=" + py::repr(py::float_(c.factor)).cast<std::string>();
        if (!c.runtime.empty()) {
          text += ", runtime=" + py::repr(py::str(c.runtime)).cast<std::string>();
        }
        if (c.memory_mb_per_ms > 0) {
          text += ", memory_mb_per_ms=" +
                  py::repr(py::float_(c.memory_mb_per_ms)).cast<std::string>();
        }
        if (!c.error.empty()) text += ", error=" + py::repr(py::str(c.error)).cast<std::string>();
        return text + ")";
      });
  m.def("estimate_energy_j", &estimate_energy_j, py::arg("power"), py::arg("wall_s"),
        py::arg("cpu_s"), py::arg("capacity_cores"),
        "Estimated joules: idle W x wall_s + (loaded W - idle W) x min(cpu_s / "
        "capacity_cores, wall_s) (docs/energy.md).");

  py::class_<Phase>(m, "Phase", "A phase the workload marked, with its own figures.")
      .def_readonly("name", &Phase::name,
                    "The name given to the mark, made printable: bytes that are not UTF-8 as "
                    "\\xNN, control characters as \\u00NN, a backslash doubled.")
      .def_readonly("start_s", &Phase::start_s,
                    "Measured: the workload's monotonic clock at the phase's begin, in seconds "
                    "since the workload was released to exec.")
      .def_readonly("end_s", &Phase::end_s,
                    "Measured: the same at the phase's end (the run's end when ended_by_exit), "
                    "in seconds since the workload was released to exec.")
      .def_property_readonly("wall_time_s", &Phase::wall_time_s,
                             "end_s - start_s, in seconds.")
      .def_readonly("ended_by_exit", &Phase::ended_by_exit,
                    "True when the phase was still open when the workload exited.")
      .def_readonly("cpu_s", &Phase::cpu_s,
                    "Sampled: CPU seconds of the slice during the phase, interpolated between "
                    "samples; None when CPU usage was not sampled throughout.")
      .def_readonly("memory_start_bytes", &Phase::memory_start_bytes,
                    "Sampled: memory of the slice at the last sample at or before the phase "
                    "began, in bytes; None when memory was not sampled throughout.")
      .def_readonly("memory_peak_bytes", &Phase::memory_peak_bytes,
                    "Sampled: the highest sample of the slice's memory during the phase, in "
                    "bytes; None when memory was not sampled throughout.")
      .def_readonly("memory_net_peak_bytes", &Phase::memory_net_peak_bytes,
                    "Sampled: memory_peak_bytes - memory_start_bytes, the phase's own footprint "
                    "net of what was in use before, in bytes; None when memory was not sampled "
                    "throughout.")
      .def_readonly("energy_j", &Phase::energy_j, "Estimated: the device's energy over the phase (J).")
      .def(py::self == py::self)
      .def("__repr__", [](const Phase& p) {
        return "Phase(name=" + py::repr(py::str(p.name)).cast<std::string>() +
               ", wall_time_s=" + py::repr(py::float_(p.wall_time_s())).cast<std::string>() + ")";
      });

  py::class_<SourceStatus>(m, "SourceStatus", "One sampled file and how it fared in the run.")
      .def_readonly("name", &SourceStatus::name,
                    "The file (or pair of files): 'cpu.stat', 'memory.stat', "
                    "'/proc/pressure/io', ...")
      .def_readonly("available", &SourceStatus::available,
                    "True when it was opened at the start of the run.")
      .def_readonly("failed", &SourceStatus::failed,
                    "True when it was disabled during the run after a read or parse failure.")
      .def_readonly("host_wide", &SourceStatus::host_wide,
                    "True when it describes the whole host, not the slice (v1 pressure).")
      .def_property_readonly("error", text_of(&SourceStatus::error),
                             "Why it is missing or failed.")
      .def_readonly("read_every", &SourceStatus::read_every,
                    "Read at every n-th scheduled sample (1 = every one).");

  py::class_<HostInfo>(m, "HostInfo", "The machine a report was measured on.")
      .def_readonly("hostname", &HostInfo::hostname, "The host's name (gethostname()).")
      .def_readonly("kernel", &HostInfo::kernel, "The kernel release (uname).")
      .def_readonly("cpu_model", &HostInfo::cpu_model,
                    "The 'model name' of /proc/cpuinfo; '' when the kernel shows none.")
      .def_readonly("cpus", &HostInfo::cpus, "The number of CPUs this process may use.")
      .def_readonly("memory_bytes", &HostInfo::memory_bytes,
                    "The host's memory (MemTotal), in bytes.");
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
      .def_property_readonly("unapplied", texts_of(&Result::unapplied),
                    "Limits the device asks for that were not applied, each with the reason.")
      .def_property_readonly(
          "command",
          [](const Result& r) { return fs_texts(r.command); },
          "The command's argv (as os.fsdecode() gives it: bytes that are not UTF-8 as "
          "surrogate escapes).")
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
      .def_property_readonly("warnings", texts_of(&Result::warnings),
                    "Things the user should know about this run (a source that failed, marks "
                    "that were lost).")
      .def_property_readonly(
          "runtimes_seen",
          [](const Result& r) {
            py::dict out;
            for (const auto& [id, file] : r.runtimes_seen) out[text(id)] = fs_text(file);
            return out;
          },
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
           "'measured', 'sampled', 'projected' or 'estimated': how figure NAME of this "
           "run was made.")
      .def("to_json", [](const Result& r) { return to_json(r); },
           "The whole result as JSON (schema_version REPORT_SCHEMA_VERSION).")
      .def_static("from_json", [](const std::string& text) { return result_from_json(text); },
                  py::arg("text"), "Reads what to_json wrote; equal to the original.")
      .def("to_csv", [](const Result& r) { return to_csv(r); },
           "The time series as CSV text, after a first line naming the format (`# "
           "edgeprof.series schema_version=1 edgeprof_version=...`; pandas: comment=\"#\").")
      // Pickled as its report (from_json gives an equal Result; the device's nn details, as
      // in a saved report, are not in it): a result comes back from a process pool's worker
      // (joblib, concurrent.futures).
      .def(py::pickle([](const Result& r) { return py::make_tuple(to_json(r)); },
                      [](const py::tuple& state) {
                        return result_from_json(pickled_text(state, "Result"));
                      }))
      .def(py::self == py::self)
      .def("__str__", [](const Result& r) { return text(to_text(r)); });

  py::class_<Statistic>(m, "Statistic", "One figure over repeated runs.")
      .def_readonly("n", &Statistic::n, "The number of values.")
      .def_readonly("median", &Statistic::median, "The median of the values.")
      .def_readonly("mean", &Statistic::mean, "The mean of the values.")
      .def_readonly("stddev", &Statistic::stddev,
                    "The sample standard deviation (n - 1); 0 for one value.")
      .def_readonly("ci95_low", &Statistic::ci95_low,
                    "The low end of the Student t 95% interval of the mean; the mean itself for "
                    "one value.")
      .def_readonly("ci95_high", &Statistic::ci95_high,
                    "The high end of the Student t 95% interval of the mean; the mean itself for "
                    "one value.")
      .def_readonly("min", &Statistic::min, "The smallest value.")
      .def_readonly("max", &Statistic::max, "The largest value.")
      .def(py::self == py::self)
      .def("__repr__", [](const Statistic& s) {
        return "Statistic(n=" + std::to_string(s.n) +
               ", median=" + py::repr(py::float_(s.median)).cast<std::string>() +
               ", ci95=(" + py::repr(py::float_(s.ci95_low)).cast<std::string>() + ", " +
               py::repr(py::float_(s.ci95_high)).cast<std::string>() + "))";
      });
  m.def("statistics", &statistics, py::arg("values"),
        "n, median, mean, sample stddev, Student t 95% interval of the mean, min, max.");
  m.def("student_t_quantile", &student_t_quantile, py::arg("p"), py::arg("dof"),
        "The t with P(T <= t) = p for Student's t with dof degrees of freedom (infinite dof: "
        "the normal distribution's). Raises edgeprof.Error unless 0 < p < 1 and dof > 0.");

  py::class_<RepeatedResult>(m, "RepeatedResult",
                             "The runs of a repeated measurement and their statistics.")
      .def_readonly("warmups", &RepeatedResult::warmups,
                    "The warm-up runs (a list of Result), run first and not counted.")
      .def_readonly("runs", &RepeatedResult::runs,
                    "The counted runs (a list of Result), in order.")
      .def_readonly("stats", &RepeatedResult::stats,
                    "A dict of figure name -> Statistic over the counted runs: only figures "
                    "present and finite in every run ('wall_time_s', "
                    "'phase.<name>.wall_time_s', ...).")
      .def("stat", &RepeatedResult::stat, py::arg("name"), py::return_value_policy::copy,
           "The Statistic of figure `name`; raises edgeprof.Error listing the names there are.")
      .def_property_readonly("ok", &RepeatedResult::all_ok,
                             "True when there are counted runs and every one is ok (warm-ups "
                             "do not count).")
      .def("to_json", [](const RepeatedResult& r) { return to_json(r); },
           "The whole repeated result as JSON: the counts, all_ok, the statistics, and every run "
           "and warm-up as Result.to_json writes it.")
      .def("to_csv", [](const RepeatedResult& r) { return to_csv(r); },
           "The runs' time series as one CSV with a leading run column, after a first line "
           "`# edgeprof.repeated_series schema_version=1 ...`; a metric some run lacks is "
           "empty in its rows.")
      .def_static("from_json",
                  [](const std::string& text) { return repeated_from_json(text); },
                  py::arg("text"),
                  "Reads what to_json wrote (the statistics as stored; those the text lacks are "
                  "computed from its runs); raises edgeprof.Error when the text is not such a "
                  "report.")
      .def(py::pickle([](const RepeatedResult& r) { return py::make_tuple(to_json(r)); },
                      [](const py::tuple& state) {
                        return repeated_from_json(pickled_text(state, "RepeatedResult"));
                      }))
      .def(py::self == py::self)
      .def("__str__", [](const RepeatedResult& r) { return text(to_text(r)); });
}
