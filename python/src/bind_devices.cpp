// Bindings of include/edgeprof/device.hpp, catalog.hpp and plan.hpp: type conversion only.
#include "bind_devices.hpp"

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <edgeprof/catalog.hpp>
#include <edgeprof/device.hpp>
#include <edgeprof/error.hpp>
#include <edgeprof/nn.hpp>
#include <edgeprof/microbench.hpp>
#include <edgeprof/plan.hpp>
#include <edgeprof/reference.hpp>
#include <edgeprof/result.hpp>
#include <edgeprof/slice.hpp>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_common.hpp"

namespace py = pybind11;
using namespace edgeprof;
using namespace edgeprof_py;

namespace {

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

// A Device's nn speed for its pickle, field by field, and back.
py::tuple nn_state(const NnSpeed& n) {
  return py::make_tuple(n.core_speed, n.ratios, n.loo_median_error, n.loo_worst_error,
                        n.loo_log_sd, n.precision, n.basis, n.threads, n.one_core_factor,
                        n.vector_units, n.memory_mb_per_ms, n.per_host_ms, n.ms_per_mb);
}

NnSpeed nn_from_state(const py::handle& state) {
  const auto t = py::reinterpret_borrow<py::tuple>(state);
  if (!py::isinstance<py::tuple>(state) || t.size() != 13) {
    throw Error("cannot unpickle this Device's nn speed: it was pickled by another edgeprof "
                "release; pickle it again with this one");
  }
  NnSpeed n;
  n.core_speed = t[0].cast<double>();
  n.ratios = t[1].cast<std::map<std::string, double>>();
  n.loo_median_error = t[2].cast<double>();
  n.loo_worst_error = t[3].cast<double>();
  n.loo_log_sd = t[4].cast<double>();
  n.precision = t[5].cast<std::string>();
  n.basis = t[6].cast<std::string>();
  n.threads = t[7].cast<int>();
  n.one_core_factor = t[8].cast<double>();
  n.vector_units = t[9].cast<std::string>();
  n.memory_mb_per_ms = t[10].cast<double>();
  n.per_host_ms = t[11].cast<double>();
  n.ms_per_mb = t[12].cast<double>();
  return n;
}

}  // namespace

void bind_devices(py::module_& m) {
  py::class_<FigureSource>(m, "FigureSource", "Where one figure of a device comes from.")
      .def_readonly("status", &FigureSource::status,
                    "'specified', 'measured' or 'estimated'")
      .def_property_readonly("source", text_of(&FigureSource::source),
                             "A URL, or a description of the measurement.")
      .def("__repr__", [](const FigureSource& f) {
        return "FigureSource(status='" + f.status + "', source=" +
               py::repr(text(f.source)).cast<std::string>() + ")";
      });
  py::class_<CpuDescription>(m, "CpuDescription", "The device's processor, described.")
      .def_readonly("model", &CpuDescription::model, "The core type, e.g. 'Cortex-A72'.")
      .def_readonly("soc", &CpuDescription::soc, "The SoC, e.g. 'BCM2711'.")
      .def_readonly("clock_mhz", &CpuDescription::clock_mhz,
                    "The maximum clock of the emulated cores, MHz; 0 when unknown.")
      .def_readonly("architecture", &CpuDescription::architecture,
                    "The architecture, e.g. 'aarch64'.")
      .def_readonly("layout", &CpuDescription::layout,
                    "Every core cluster, e.g. '4x Cortex-A76 @ 2400 MHz + 4x A55'.");
  py::class_<PowerDescription>(m, "PowerDescription", "Typical power draw of the device.")
      .def_readonly("idle_watts", &PowerDescription::idle_watts,
                    "Idle power draw of the whole device, in watts; None when not given.")
      .def_readonly("loaded_watts", &PowerDescription::loaded_watts,
                    "Power draw with all cores busy, in watts; None when not given.");
  py::class_<SpeedStep>(m, "SpeedStep", "From after_s seconds on, factor x core_speed.")
      .def(py::init([](double after_s, double factor) { return SpeedStep{after_s, factor}; }),
           py::arg("after_s"), py::arg("factor"))
      .def_readonly("after_s", &SpeedStep::after_s,
                    "From this many seconds after the workload started (0 to 1e7).")
      .def_readonly("factor", &SpeedStep::factor,
                    "The cores' speed from then on, as a fraction of core_speed (0.01 to 1).")
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
      .def_readonly("name", &Device::name, "The device's name, e.g. 'raspberry-pi-4'.")
      .def_readonly("cores", &Device::cores, "CPU cores, 1 to 4096.")
      .def_readonly("core_speed", &Device::core_speed,
                    "One device core / one host core, 1e-6 to 1000 (0.25: a quarter as fast).")
      .def_readonly("memory_bytes", &Device::memory_bytes, "RAM, in bytes (at least 16 MiB).")
      .def_readonly("swap_bytes", &Device::swap_bytes, "Swap, in bytes; 0 = none.")
      .def_readonly("io_read_bps", &Device::io_read_bps,
                    "Storage read bandwidth, bytes/s; None = not limited.")
      .def_readonly("io_write_bps", &Device::io_write_bps,
                    "Storage write bandwidth, bytes/s; None = not limited.")
      .def_readonly("pids_max", &Device::pids_max,
                    "The most tasks the workload may have; None = no limit.")
      .def_readonly("description", &Device::description, "For people: processor, clock, memory.")
      .def_readonly("source", &Device::source,
                    "A free-text note on where the figures come from (each figure's: sources).")
      .def_readonly("aliases", &Device::aliases, "Other names find_device() accepts.")
      .def_readonly("cpu", &Device::cpu,
                    "The processor, described (CpuDescription), for people and the record: "
                    "emulation uses cores and core_speed.")
      .def_readonly("storage", &Device::storage,
                    "The storage kind, e.g. 'microSD'; its bandwidth is in io_read_bps and "
                    "io_write_bps.")
      .def_readonly("power", &Device::power,
                    "Typical power draw (PowerDescription), for energy estimates.")
      .def_readonly("scores", &Device::scores,
                    "Per-core scores edgeprof-probe measured on the device (CoreScores), which "
                    "core_speed comes from; None when it has none.")
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
      .def_property_readonly("nn_missing", text_of(&Device::nn_missing), "Why nn is None.")
      .def_readonly("runtime_ms", &Device::runtime_ms,
                    "Published inference times with other runtimes than ncnn, by runtime id "
                    "('pytorch'): RuntimeTimes (precision, threads, ms by model).")
      .def(
          "for_runtime",
          [](const Device& d, const std::string& runtime, double memory_mb_per_ms) {
            return for_runtime(d, runtime, nullptr, memory_mb_per_ms);
          },
          py::arg("runtime"), py::kw_only(), py::arg("memory_mb_per_ms") = 0.0,
          "The device at its speed with `runtime`: 'ncnn' is for_speed_kind('nn'); 'pytorch' "
          "its published PyTorch times against this host's PyTorch rating "
          "(`edgeprof calibrate-host --nn --runtime pytorch`). DeviceError when either is "
          "missing. memory_mb_per_ms > 0: a workload's own speed by a memory term, for one "
          "that writes that many MB of activations per ms of this host's one-thread time "
          "(estimated; docs/fidelity.md).")
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
      .def_readonly("speed_schedule", &Device::speed_schedule,
                    "Speed steps (SpeedStep) in increasing order of after_s; empty = full speed "
                    "throughout.")
      .def_readonly("sources", &Device::sources,
                    "Where each figure comes from, by figure name ('cores', 'core_speed', "
                    "'memory', 'cpu', 'storage', 'power', ...): a FigureSource, saying whether "
                    "specified, measured or estimated.")
      .def_property_readonly("origin", fs_text_of(&Device::origin),
                             "Where the description was loaded from: 'catalog', a file path, or "
                             "'' when built in code.")
      .def("for_threads", &for_threads, py::arg("threads"),
           "The device as a workload with `threads` busy threads sees it: with fewer threads "
           "than cores, a copy with that many cores at the same core speed (the CPU quota "
           "limits the slice, not each thread; docs/devices.md). Otherwise unchanged.")
      .def("to_json", &device_to_json, "This device as a device file (JSON).")
      // Pickled as its device file and what the file does not hold (where it was loaded from,
      // the kind of its speed, its nn speed as worked out here): a Device goes to a process
      // pool's workers (Optuna, joblib). Nothing is worked out again on the other side: a
      // PyTorch device's nn speed came back as its ncnn one, and a probed device measured the
      // host there.
      .def(py::pickle(
          [](const Device& d) {
            // Bytes, not str: a name or the nn_missing text (a cache path) need not be UTF-8.
            return py::make_tuple(1, py::bytes(device_to_json(d)), fs_text(d.origin),
                                  d.speed_kind, d.nn ? nn_state(*d.nn) : py::object(py::none()),
                                  py::bytes(d.nn_missing));
          },
          [](const py::tuple& state) {
            const auto refuse = [](const std::string& why) {
              return Error("cannot unpickle this Device (" + why +
                           "): it was pickled by another edgeprof release; pickle it again "
                           "with this one");
            };
            if (state.size() != 6 || !py::isinstance<py::int_>(state[0]) ||
                state[0].cast<int>() != 1) {
              throw refuse("not a state of this release");
            }
            if (!py::isinstance<py::bytes>(state[1]) || !py::isinstance<py::str>(state[2]) ||
                !py::isinstance<py::str>(state[3]) || !py::isinstance<py::bytes>(state[5])) {
              throw refuse("a field of another type");
            }
            const std::string speed_kind = state[3].cast<std::string>();
            if (!speed_kind.empty() && speed_kind != "nn") {
              throw refuse("a speed kind other than '' or 'nn'");
            }
            try {
              const std::string origin = fs_path(state[2], "a pickled Device's origin");
              DeviceLoadOptions load;
              load.host_scores = CoreScores{};  // the speed is in the file; nn comes below
              load.host_nn_ms = std::map<std::string, double>{};
              load.speed_as_written = true;
              Device d =
                  parse_device_json(state[1].cast<std::string>(), "a pickled Device", load);
              d.origin = origin;
              d.speed_kind = speed_kind;
              d.nn.reset();
              if (!state[4].is_none()) d.nn = nn_from_state(state[4]);
              d.nn_missing = state[5].cast<std::string>();
              return d;
            } catch (const DeviceError& e) {
              throw refuse(e.what());
            } catch (const py::cast_error&) {
              throw refuse("its nn speed has a field of another type");
            }
          }))
      .def(py::self == py::self)
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.name)); });

  m.def("builtin_devices", &builtin_devices, "The built-in devices (the catalog).");
  m.def("catalog_devices", &catalog_devices, "The built-in catalog of real devices.");
  m.def("load_device_file",
        [](py::object path) {
          return load_device_file(fs_path(path, "load_device_file's path"));
        },
        py::arg("path"), "A device from a TOML or JSON device file (docs/devices.md).");
  m.def("find_device",
        [](const py::object& name) {
          return find_device(fs_path(name, "find_device's name_or_path (a device's name or a "
                                           "device file's path)"));
        },
        py::arg("name_or_path"),
        "A device by name or alias (the catalog, then your device files), or from a file path.");
  py::class_<UserDevices>(m, "UserDevices", "The user's device files: those that loaded, and "
                                            "one message per file that did not.")
      .def_readonly("devices", &UserDevices::devices,
                    "The devices whose files loaded, in path order.")
      .def_property_readonly("problems", texts_of(&UserDevices::problems),
                             "One message per file that did not load, or whose device "
                             "find_device() cannot reach by name (a built-in device's name or "
                             "alias, or one an earlier file's device answers to).");
  m.def("user_devices", [] { return user_devices(); },
        "The devices in the user's device directories (device_search_path()).");
  m.def("device_search_path", [] { return fs_texts(device_search_path()); },
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
        if (!(bytes >= 0 && bytes <= 0x1p64))
          throw Error("format_size: a size must be a number of bytes from 0 to 2^64, got " +
                      py::repr(py::float_(bytes)).cast<std::string>());
        return format_signed_size(bytes);
      },
      py::arg("bytes"),
      "Bytes for people: '512 MiB', '1.50 GiB', '999 B' (a float rounded to whole bytes). "
      "edgeprof.Error for a size that is not between 0 and 2^64.");
  m.def("format_signed_size", &format_signed_size, py::arg("bytes"),
        "A signed number of bytes as format_size writes its magnitude, '-' before a negative "
        "one (a phase's net peak); Error past 2^64.");
  m.def("cgroup_mode", [] { return to_string(cgroup_mode()); },
        "'unified' (cgroup v2), 'hybrid' or 'legacy' (cgroup v1 controllers).");

  py::class_<ThreadsProjection>(m, "ThreadsProjection",
                                "Core emulation 'projected': how a one-core run's times become "
                                "the device's with all its cores (Result.projected_s).")
      .def_readonly("threads", &ThreadsProjection::threads,
                    "The cores the projected times are for: the device's (fewer for a device "
                    "narrowed by for_threads()).")
      .def_readonly("speedup", &ThreadsProjection::speedup,
                    "The divisor: the board's speed-up from 1 thread to `threads`, times "
                    "workload_factor.")
      .def_readonly("workload_factor", &ThreadsProjection::workload_factor,
                    "The workload's own scaling the projection follows (PlanOptions::"
                    "workload_scaling, C++); 1 = the board's median graph.")
      .def_property_readonly("table_threads",
                             [](const ThreadsProjection& p) { return p.scaling.threads; },
                             "N: the thread count of the device's published table the speed-up "
                             "is read from.")
      .def_property_readonly("table_speedup",
                             [](const ThreadsProjection& p) { return p.scaling.speedup; },
                             "The median one-thread time / table_threads-thread time over the "
                             "graphs in both published tables.")
      .def_property_readonly("graphs", [](const ThreadsProjection& p) { return p.scaling.graphs; },
                             "How many graphs both published tables have.")
      .def_property_readonly("loo_median_error",
                             [](const ThreadsProjection& p) { return p.scaling.loo_median_error; },
                             "Leave-one-graph-out: |each graph's own speed-up over the median "
                             "of the others' - 1|, median, as a fraction; 0 below 3 graphs.")
      .def_property_readonly("loo_worst_error",
                             [](const ThreadsProjection& p) { return p.scaling.loo_worst_error; },
                             "The largest of those leave-one-graph-out errors; 0 below 3 graphs.")
      .def_property_readonly(
          "loo_log_sd", [](const ThreadsProjection& p) { return p.scaling.loo_log_sd; },
          "The spread of log(one graph's speed-up / the others' median): what the projection "
          "adds to Result.device_interval.")
      .def("__repr__", [](const ThreadsProjection& p) {
        return "ThreadsProjection(threads=" + std::to_string(p.threads) +
               ", speedup=" + py::repr(py::float_(p.speedup)).cast<std::string>() + ")";
      });

  py::class_<EmulationPlan>(m, "EmulationPlan", "The cgroup settings that emulate a device.")
      .def_readonly("cpus", &EmulationPlan::cpus,
                    "The host CPUs of the slice's cpuset (cpuset.cpus).")
      .def_property_readonly(
          "core_emulation",
          [](const EmulationPlan& p) { return std::string(to_string(p.core_emulation())); },
          "How the plan emulates the device's cores: 'projected', 'per-core' or 'pooled' (what "
          "'auto' resolved to).")
      .def_readonly("cpu_period_us", &EmulationPlan::cpu_period_us,
                    "The CFS period, in us (cpu.max period / cpu.cfs_period_us).")
      .def_readonly("cpu_quota_us", &EmulationPlan::cpu_quota_us,
                    "The CFS quota per period, in us (cpu.max quota / cpu.cfs_quota_us): the "
                    "device's whole capacity. With core groups, each group holds core_quota_us "
                    "instead and the slice's own quota is left unlimited.")
      .def_readonly("memory_max_bytes", &EmulationPlan::memory_max_bytes,
                    "The memory limit, in bytes (memory.max / memory.limit_in_bytes).")
      .def_readonly("swap_max_bytes", &EmulationPlan::swap_max_bytes,
                    "Swap allowed on top of memory_max_bytes, in bytes.")
      .def_readonly("pids_max", &EmulationPlan::pids_max,
                    "The most tasks the workload may have (pids.max); None = no limit.")
      .def_property_readonly("notes", texts_of(&EmulationPlan::notes),
                             "Where the emulation differs from the device, and why.")
      .def_property_readonly("unapplied", texts_of(&EmulationPlan::unapplied),
                    "Limits of the device this host cannot apply, and why (a run lists them "
                    "in Result.unapplied).")
      .def_readonly("io_device", &EmulationPlan::io_device,
                    "The host disk (MAJ:MIN) whose bandwidth is limited; '' when none.")
      .def_readonly("io_read_bps", &EmulationPlan::io_read_bps,
                    "The read bandwidth limit on io_device, bytes/s (io.max rbps / blkio "
                    "read_bps_device); None = not limited.")
      .def_readonly("io_write_bps", &EmulationPlan::io_write_bps,
                    "The write bandwidth limit on io_device, bytes/s (io.max wbps / blkio "
                    "write_bps_device); None = not limited.")
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
      .def_readonly("own_share_check", &EmulationPlan::own_share_check,
                    "drift_check: this host's own share checked at the plan's quota over the "
                    "cached one; beyond 1.5x (or 1/1.5x) the quota scale followed it. 0 = not checked.")
      .def_readonly("threads_projection", &EmulationPlan::threads_projection,
                    "Core emulation 'projected': the projection; None otherwise.")
      .def_readonly("thread_env", &EmulationPlan::thread_env,
                    "Variables the workload's environment gets where it does not set them "
                    "(the device's thread count; passive OpenMP waiting under a quota; glibc's "
                    "malloc thresholds settled, STEADY_MALLOC_ENV).")
      .def_property_readonly("capacity_cores", &EmulationPlan::capacity_cores,
                             "The CPU capacity granted, in host cores: cpu_quota_us / "
                             "cpu_period_us (quota_scale included).");

  m.def("device_interval", &device_interval, py::arg("speed"), py::arg("plan"),
        py::arg("level") = 0.9,
        "The interval a run at `speed` under `plan` reports (Result.device_interval): "
        "time_interval with the plan's emulation spread and, where the plan projects one "
        "core's times by another speed-up than the one that made the speed's tables one "
        "core's, the board's speed-up's spread.");

  py::dict steady;
  for (const EnvDefault& v : kSteadyMallocVariables) steady[v.name] = v.value;
  m.attr("STEADY_MALLOC_ENV") = steady;

  m.def(
      "plan_emulation",
      [](const py::object& device, std::uint64_t cpu_period_us, const std::vector<int>& cpus,
         std::optional<double> iteration_time, bool keep_warm, const std::string& speed_kind, bool thread_env, const std::string& core_emulation, bool core_scaling, std::optional<double> quota_scale, std::optional<bool> drift_check, std::optional<double> workload_scaling) {
        PlanOptions o =
            to_slice_options(py::none(), cpu_period_us, cpus, false, iteration_time, keep_warm, speed_kind, thread_env, core_emulation, core_scaling, quota_scale, drift_check, workload_scaling)
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
        // Without the GIL: a first plan may measure this host's nn rating (a minute), its
        // progress taking the GIL for each line.
        py::gil_scoped_release unlocked;
        return plan_emulation(d, host, o);
      },
      py::arg("device"), py::arg("cpu_period_us") = kChosenCpuPeriod,
      py::arg("cpus") = std::vector<int>{}, py::arg("iteration_time") = py::none(),
      py::arg("keep_warm") = true, py::arg("speed_kind") = "automatic", py::arg("thread_env") = true, py::arg("core_emulation") = "auto", py::arg("core_scaling") = false, py::arg("quota_scale") = py::none(), py::arg("drift_check") = py::none(), py::arg("workload_scaling") = py::none(),
      "The cgroup settings that would emulate the device on this host (nothing is created).");
}
