/// @file
/// What an edge device is, as far as emulation is concerned.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/export.hpp"
#include "edgeprof/microbench.hpp"
#include "edgeprof/nn.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// Smallest memory limit a device may declare: below this even a shell cannot start.
inline constexpr std::uint64_t kMinDeviceMemory = 16ull << 20;

/// Where one figure of a device comes from.
struct FigureSource {
  /// "specified" (a vendor's specification), "measured" (a published or probed measurement) or
  /// "estimated" (derived from a proxy, a different benchmark, or general knowledge).
  std::string status;
  std::string source;  ///< a URL, or a description of the measurement
};

/// The device's processor, for people and for the record (emulation uses cores and core_speed).
struct CpuDescription {
  std::string model;         ///< core type, e.g. "Cortex-A72"
  std::string soc;           ///< e.g. "BCM2711"
  double clock_mhz = 0;      ///< maximum clock of the emulated cores; 0 = unknown
  std::string architecture;  ///< e.g. "aarch64"
  std::string layout;        ///< every core cluster, e.g. "4x Cortex-A76 @ 2400 MHz + 4x A55"
};

/// Typical power draw of the whole device, for energy estimates (Result::energy).
struct PowerDescription {
  std::optional<double> idle_watts;    ///< idle, in watts
  std::optional<double> loaded_watts;  ///< all cores busy, in watts
};

/// One step of a speed schedule (thermal throttling, DVFS): from `after_s` seconds after the
/// workload starts, the cores run at `factor` times core_speed.
struct SpeedStep {
  double after_s = 0;  ///< seconds since the workload was started, 0 to 1e7
  double factor = 1;   ///< fraction of core_speed, 0.01 to 1
};

/// A device's published inference times with one runtime other than ncnn (Device::runtime_ms).
struct RuntimeTimes {
  std::string precision = "fp32";  ///< the arithmetic they ran in
  /// The threads they ran with: published at the runtime's default, all the device's cores,
  /// they are not one core's times (runtime_speed() makes them one core's).
  int threads = 1;
  std::map<std::string, double> ms;  ///< ms per inference, by model (NnRuntime::models)
};
/// Every field equal.
bool operator==(const RuntimeTimes& a, const RuntimeTimes& b);

/// A target device. `core_speed` is the speed of one device core relative to one core of the
/// host edgeprof runs on (0.25 = a quarter as fast). Construct, then call `validate()` (the
/// factory functions below do).
struct Device {
  std::string name;                           ///< e.g. "raspberry-pi-4"
  int cores = 1;                              ///< CPU cores, 1 to 4096
  double core_speed = 1.0;                    ///< one device core / one host core, 1e-6 to 1000
  std::uint64_t memory_bytes = 0;             ///< RAM, at least kMinDeviceMemory
  std::uint64_t swap_bytes = 0;               ///< swap, 0 = none
  std::optional<std::uint64_t> io_read_bps;   ///< storage read bandwidth, bytes/s
  std::optional<std::uint64_t> io_write_bps;  ///< storage write bandwidth, bytes/s
  std::optional<std::int64_t> pids_max;       ///< most tasks the workload may have
  std::string description;                    ///< for people: processor, clock, memory
  /// Free-text note on where the figures come from (per-figure sources are in `sources`).
  std::string source;
  std::vector<std::string> aliases;  ///< other names find_device() accepts
  CpuDescription cpu;                ///< the processor, described
  std::string storage;               ///< storage kind, e.g. "microSD"; bandwidth in io_*_bps
  PowerDescription power;            ///< typical power draw
  /// Per-core scores measured by edgeprof-probe on the device; core_speed comes from them.
  std::optional<CoreScores> scores;
  /// The speed of one device core relative to the catalog's reference core (reference.hpp),
  /// when that is what the description gives (the catalog's speeds are); core_speed is then
  /// reference_speed / host_reference_speed.
  std::optional<double> reference_speed;
  /// One host core / one reference core, as used to turn reference_speed into core_speed; unset
  /// when this host's speed was not known (measure_reference_rating(), `edgeprof calibrate-host
  /// --reference`), in which case core_speed is reference_speed uncorrected.
  std::optional<double> host_reference_speed;
  /// Published CNN inference times of one device core (ncnn's benchncnn, one thread), in ms
  /// by reference graph name (nn.hpp); empty = none published for this device.
  std::map<std::string, double> nn_ms;
  /// The precision nn_ms was measured at: "fp32", or "fp16" (ARMv8.2 half precision, which
  /// benchncnn uses where the core has it).
  std::string nn_precision;
  /// Published times with several threads (the device's cores), ms by graph, by thread count;
  /// for comparing multi-core emulation with the board (bench_nn --threads), not for the speed.
  std::map<int, std::map<std::string, double>> nn_threads_ms;
  /// Published inference times with other runtimes than ncnn, by NnRuntime id ("pytorch",
  /// nn.hpp): the speed with that runtime (runtime_speed(), for_runtime()); sources["runtimes"]
  /// says where they come from.
  std::map<std::string, RuntimeTimes> runtime_ms;
  /// The nn speed on this host, from nn_ms and this host's nn rating (cached_nn_rating());
  /// unset when either is missing, and `nn_missing` says why.
  std::optional<NnSpeed> nn;
  /// Why `nn` is unset: no published times, or this host's nn rating is not measured.
  std::string nn_missing;
  /// The kind of speed core_speed is: "nn" once for_speed_kind() chose the nn speed; "" for
  /// the speed the description gives (the catalog's: 7-Zip's integer rating).
  std::string speed_kind;
  /// Speed steps in increasing order of after_s; empty = full speed throughout.
  std::vector<SpeedStep> speed_schedule;
  /// Figure name ("cores", "core_speed", "memory", "cpu", "storage", "power", ...) -> where it
  /// comes from and whether it is specified, measured or estimated.
  std::map<std::string, FigureSource> sources;
  /// Where the description was loaded from: "catalog", a file path, or "" when built in code.
  std::string origin;

  /// Throws DeviceError naming the field and the value when something is out of range.
  void validate() const;
  /// Whether `n` is this device's name or one of its aliases.
  bool answers_to(std::string_view n) const;
  /// Whether core_speed is reference_speed taken as this host's, uncorrected: this host's
  /// speed relative to the reference core was not known when the device was loaded.
  bool reference_uncorrected() const {
    return reference_speed && !host_reference_speed && core_speed == *reference_speed;
  }
};

/// Both fields equal.
inline bool operator==(const FigureSource& a, const FigureSource& b) {
  return a.status == b.status && a.source == b.source;
}
/// Every field equal.
inline bool operator==(const CpuDescription& a, const CpuDescription& b) {
  return a.model == b.model && a.soc == b.soc && a.clock_mhz == b.clock_mhz &&
         a.architecture == b.architecture && a.layout == b.layout;
}
/// Both figures equal.
inline bool operator==(const PowerDescription& a, const PowerDescription& b) {
  return a.idle_watts == b.idle_watts && a.loaded_watts == b.loaded_watts;
}
/// Both fields equal.
inline bool operator==(const SpeedStep& a, const SpeedStep& b) {
  return a.after_s == b.after_s && a.factor == b.factor;
}
/// Every field equal.
bool operator==(const Device& a, const Device& b);
/// Some field differs.
inline bool operator!=(const Device& a, const Device& b) { return !(a == b); }

/// Parses a byte size: a plain integer ("1048576"), binary units ("512MiB", "1.5GiB", "512Mi",
/// "KiB"..."TiB" in any case ("512mib"), and docker-style "512M"/"512m"), or decimal units ("500MB", "2GB",
/// "1kB"). `field` names the setting in the error message. Throws DeviceError, also for a
/// decimal unit in another case ("512mb": docker's MiB or SI's MB?).
std::uint64_t parse_size(std::string_view text, std::string_view field = "size");

/// Formats bytes for people: "512 MiB", "1.50 GiB", "999 B".
std::string format_size(std::uint64_t bytes);
/// A signed number of bytes (a phase's net peak, a change of memory) as format_size() writes
/// its magnitude, "-" before a negative one: "-1.50 GiB". Rounded to whole bytes; Error for a
/// value that is not finite or whose magnitude is past 2^64.
std::string format_signed_size(double bytes);

/// Builds and validates a device; `memory` and `swap` are size strings as parse_size takes.
/// Throws DeviceError.
Device make_device(std::string name, int cores, double core_speed, std::string_view memory,
                   std::string_view swap = "0");

/// The device as a workload with `threads` busy threads sees it. The CPU quota limits the slice,
/// not each thread, so fewer busy threads than cores would each run faster than a device core,
/// up to a whole host core: for `threads` below `device.cores` this is a copy with `threads`
/// cores at the same core_speed, named "<name>-<threads>-thread(s)", its "cores" source saying
/// so, and its loaded power scaled to the cores kept (so that an energy estimate, whose CPU
/// share is taken of the emulated cores, stays that of the whole device). Otherwise an
/// unchanged copy. Throws DeviceError for `threads` below 1.
Device for_threads(const Device& device, int threads);

/// How a device's cores slow each other down when several are busy (shared memory bandwidth and
/// caches), read from its published CNN inference times with one thread (Device::nn_ms) and
/// with N (Device::nn_threads_ms): the median speed-up S = t1 / tN over the graphs in both
/// tables, taken as S = N / (1 + contention x (N - 1)).
struct CoreScaling {
  int threads = 0;         ///< N, the thread count of the published table used
  double speedup = 1;      ///< the median t1 / tN over the graphs in both tables
  std::size_t graphs = 0;  ///< how many graphs both tables have
  double contention = 0;   ///< (N / speedup - 1) / (N - 1); 0 where the board scaled linearly
  /// Leave-one-graph-out: |each graph's own t1 / tN over the median of the others' - 1|, the
  /// median and the largest, as fractions: how far one workload's speed-up is from the
  /// device's (what a projection with `speedup` adds to the one-thread error). 0 below 3 graphs.
  double loo_median_error = 0;
  double loo_worst_error = 0;  ///< the largest of those
  /// The root mean square of those graphs' log(own speed-up / the others' median): the spread
  /// of a projected time's log error that the speed-up adds (TimeInterval::projection_log_sd);
  /// 0 below 3 graphs.
  double loo_log_sd = 0;
  /// Each busy core's speed with `busy` cores busy, relative to one busy core alone:
  /// 1 / (1 + contention x (busy - 1)); 1 for busy <= 1.
  double efficiency(int busy) const;
  /// The speed-up from one busy thread to `busy`: `speedup` at `threads`, else busy x
  /// efficiency(busy); 1 for busy <= 1.
  double speedup_at(int busy) const;
};
/// Every field equal.
bool operator==(const CoreScaling& a, const CoreScaling& b);

/// The device's CoreScaling from nn_ms and its multi-thread table with the most threads up to
/// its core count, over the graphs both have but `without_graph` (for held-out figures);
/// nullopt when it has no such table or fewer than 3 graphs in common.
std::optional<CoreScaling> core_scaling(const Device& device, std::string_view without_graph = {});

/// One device core's speed with `runtime` (an NnRuntime id other than "ncnn", nn.hpp) on this
/// host: the device's published times with it (Device::runtime_ms) against this host's rating
/// with it (`host`, measure_nn_rating()), the geometric mean over the models both have, with its
/// leave-one-model-out error (NnSpeed, basis `runtime`). Times of N threads are made one
/// core's by multiplying them by the board's speed-up from one thread to N from its ncnn tables
/// (core_scaling(): estimated, the runtime's own being unpublished; NnSpeed::one_core_factor).
/// Throws DeviceError naming what is missing: no times with the runtime, a multi-thread table
/// without the ncnn tables to scale it, or no model in common; Error for an unknown runtime.
/// With `memory_mb_per_ms` > 0 (a workload's activation MB per ms of this host's one-thread
/// time), the workload's own speed by a memory term instead: nn_memory_fit() of the one-core
/// times against the rating's times and activations (NnSpeed::memory_mb_per_ms; estimated,
/// docs/fidelity.md); DeviceError when the rating has no activations (measured before they
/// were counted) or fewer than 4 models, Error for a figure that is not positive.
NnSpeed runtime_speed(const Device& device, std::string_view runtime, const NnRating& host,
                      double memory_mb_per_ms = 0);

/// The device emulated at its speed with `runtime`: for "ncnn", for_speed_kind(device, nn);
/// for another runtime, a copy whose nn is runtime_speed() with this host's cached rating
/// (cached_nn_rating(&why, runtime)), core_speed that speed, speed_kind "nn", and the source of
/// core_speed saying so (a note in `notes` too). Throws DeviceError when the device has no
/// published times with the runtime (naming the devices that have), or this host's rating is
/// not measured (with the command that measures it). `memory_mb_per_ms` > 0: the workload's
/// own speed by a memory term (runtime_speed()). A device at the runtime's speed already is
/// given the speed of `memory_mb_per_ms` (0: one speed over the models) from its published
/// times; one at another runtime's speed is refused (load it again).
Device for_runtime(const Device& device, std::string_view runtime,
                   std::vector<std::string>* notes = nullptr, double memory_mb_per_ms = 0);

/// As for_runtime() above, from the rating given (`host`, NnRating::runtime_id naming the
/// runtime, not ncnn) instead of this host's cached one: a rating a tool keeps, or one read
/// once for several speeds (a slice that counts activations sets its speed by it).
Device for_runtime(const Device& device, const NnRating& host,
                   std::vector<std::string>* notes = nullptr, double memory_mb_per_ms = 0);

/// Which kind of work a device's core speed is for.
enum class SpeedKind {
  /// nn where the device has an nn speed on this host, else its core speed as described.
  automatic,
  /// CNN inference (ncnn, fp32 unless the device's times say otherwise): Device::nn.
  nn,
  /// The core speed the description gives: the catalog's is 7-Zip's integer rating.
  integer,
};

/// "automatic", "nn", "integer".
const char* to_string(SpeedKind kind);
/// The inverse of to_string(); throws Error listing the names for anything else.
SpeedKind speed_kind_from_string(std::string_view name);

/// The device with the core speed of `kind`: for nn (and automatic when the device has one), a
/// copy whose core_speed is Device::nn's, speed_kind "nn" and the source of core_speed saying
/// so; otherwise an unchanged copy. Appends to `notes` (when given) what was chosen and why:
/// a device with published nn times that this host cannot use yet gets a note with the command
/// that fixes it (`edgeprof calibrate-host --nn`). Throws DeviceError for nn when the device
/// has no nn speed, saying why. Applying it twice changes nothing.
Device for_speed_kind(const Device& device, SpeedKind kind, std::vector<std::string>* notes = nullptr);

/// The device with its nn speed on this host, when it has published CNN inference times
/// (Device::nn_ms) but no nn speed only because this host's nn rating is not measured yet:
/// measures the rating (measure_nn_rating(options): once per host, seconds on a desktop CPU, cached for
/// later runs and loads) and derives the speed from it; `options.progress` first hears why and
/// how long, then each graph. Any other device: an unchanged copy, nothing measured. Throws
/// Error when the rating cannot be measured, saying what to install or to emulate the device
/// at its integer speed instead.
Device with_measured_nn(const Device& device, const NnOptions& options = {});

/// The core speed for people, with where it came from: "0.5 of a host core"; for the nn speed
/// "0.1317 of a host core (nn speed: 12 ncnn graphs, fp32; leave-one-graph-out median error 18%,
/// worst 52%)"; for a speed derived
/// from the reference core, "0.4388 of a host core (0.373 of the reference core / this host's
/// 0.850)", or "0.373 of the reference core, uncorrected for this host" when reference_uncorrected().
std::string describe_core_speed(const Device& device);

/// The built-in devices: the catalog (catalog.hpp, catalog_devices()).
const std::vector<Device>& builtin_devices();

/// A built-in device by name or alias; throws DeviceError listing the known names when there is
/// none. find_device() (catalog.hpp) also finds the user's device files.
const Device& builtin_device(std::string_view name);

}  // namespace edgeprof
EDGEPROF_API_END
