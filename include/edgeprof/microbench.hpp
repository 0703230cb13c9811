/// @file
/// Core speed, measured rather than guessed: a short per-core micro-benchmark suite, this host's
/// cached calibration, and the device file that `edgeprof-probe` writes on a real device. A
/// device's core speed is the ratio of its scores to the host's (speed_from_scores).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// The suite's version. Scores compare only between runs of the same version: it changes
/// whenever a kernel, its work unit or its data changes.
inline constexpr const char* kSuiteVersion = "edgeprof-suite-1";

/// The vector kernel's version, apart from the suite's: the three scalar kernels of
/// kSuiteVersion give the integer speed, the vector kernel the nn speed of a probed device.
inline constexpr const char* kVectorKernelVersion = "edgeprof-vector-1";

/// Single-thread scores of one core; higher is faster. Each is work units per second of one
/// kernel and means something only as a ratio to another machine's scores of the same `suite`.
struct CoreScores {
  std::string suite;    ///< the kSuiteVersion that measured them
  double integer = 0;   ///< integer kernel: units per second (a unit sorts, searches, hashes)
  double floating = 0;  ///< floating-point kernel: units per second (a matmul and an n-body step)
  double memory = 0;    ///< memory-bound kernel: millions of dependent loads per second
  /// Vector kernel: GFLOP/s of a single-precision matrix-product block (CNN inference's inner
  /// loop) on the best vector unit of the core; 0 = not measured (a file of an older
  /// edgeprof-probe).
  double vector = 0;
  /// The unit the vector kernel ran on: "avx512f", "avx2+fma", "sse2", "neon" or "generic".
  std::string vector_unit;
  /// The kVectorKernelVersion that measured `vector`; "" when it was not measured.
  std::string vector_kernel;
  /// Measured: how far each kernel's timed runs spread, (fastest - slowest) / median, by
  /// kernel name ("integer", "floating", "memory", "vector"); absent where not recorded (one
  /// timed run, or a file of an older edgeprof-probe). A wide spread means a busy or throttling machine, and a speed
  /// from these scores uncertain by about as much.
  std::map<std::string, double> spread = {};
};

/// Every field equal.
inline bool operator==(const CoreScores& a, const CoreScores& b) {
  return a.suite == b.suite && a.integer == b.integer && a.floating == b.floating &&
         a.memory == b.memory && a.vector == b.vector && a.vector_unit == b.vector_unit &&
         a.vector_kernel == b.vector_kernel && a.spread == b.spread;
}
/// Some field differs.
inline bool operator!=(const CoreScores& a, const CoreScores& b) { return !(a == b); }

/// How long the suite measures, and where.
struct SuiteOptions {
  /// Length of one timed run of a kernel; the work per run is calibrated to it.
  std::chrono::milliseconds per_kernel{200};
  /// Timed runs per kernel, at least 1; a score is their median.
  int repeats = 5;
  /// The CPU to run on; -1 = the CPU the calling thread is on when the suite starts. The thread
  /// is pinned there for the suite and its affinity restored afterwards.
  int cpu = -1;
  /// The vector unit of the vector kernel: "" = the best this CPU has (as inference libraries
  /// choose), else one of vector_units(); one this CPU lacks is an Error.
  std::string vector_unit;
  /// Receives a line for people after each step (may be empty).
  std::function<void(const std::string&)> progress;
};

/// The vector units the vector kernel can use on this CPU, best first: on x86-64 "avx512f",
/// "avx2+fma" where the CPU and the kernel support them, and "sse2"; "neon" on arm64.
std::vector<std::string> vector_units();

/// One kernel's timed runs.
struct KernelRuns {
  std::string kernel;          ///< "integer", "floating", "memory" or "vector"
  std::uint64_t units = 0;     ///< work units in each timed run, as calibrated
  std::vector<double> scores;  ///< the score of each timed run, in run order
  double median = 0;           ///< the kernel's score
  double min = 0;              ///< the slowest run
  double max = 0;              ///< the fastest run
};

/// A run of the whole suite, with the spread behind each score.
struct SuiteRun {
  CoreScores scores;                ///< the medians
  std::vector<KernelRuns> kernels;  ///< integer, floating, memory, vector
  int cpu = -1;                     ///< the CPU the suite ran on
  double seconds = 0;               ///< wall time of the whole suite, set-up included
};

/// Runs the four kernels on one CPU (see SuiteOptions::cpu) on the calling thread. Wall time
/// is measured, so a CPU quota (a Slice's cpu.max) shows in the scores. Throws Error when a
/// kernel's checksum is wrong (a miscompiled or broken build), when the 128 MiB buffer of the
/// memory kernel cannot be allocated, when the thread cannot be pinned, or when
/// SuiteOptions::vector_unit is not one of this CPU's.
SuiteRun run_suite_detailed(const SuiteOptions& options = {});

/// run_suite_detailed(options).scores.
CoreScores run_suite(const SuiteOptions& options = {});

/// The speed of one device core relative to one host core: the geometric mean of the three
/// ratios device / host of the scalar kernels (the vector kernel's ratio is the nn speed:
/// nn_speed_from_scores in nn.hpp). Throws DeviceError when the suites differ or a score is not a positive
/// number.
double speed_from_scores(const CoreScores& device, const CoreScores& host);

/// This host's scores, and where they came from.
struct HostCalibration {
  CoreScores scores;        ///< this host's per-core scores
  std::string cpu_model;    ///< from /proc/cpuinfo, as edgeprof-probe names it
  std::string kernel;       ///< kernel release (uname -r)
  std::string hostname;     ///< host name
  std::string measured_at;  ///< when the scores were measured, ISO 8601 UTC
  /// Read from cache_file; false when measured by this call, or earlier in this process where
  /// it could not be cached (`note` says which).
  bool from_cache = false;
  /// The cache file: `$EDGEPROF_CACHE_DIR`, else `$XDG_CACHE_HOME/edgeprof`, else
  /// `~/.cache/edgeprof`, then `host-calibration.json`; "" when none of them is set.
  std::string cache_file;
  /// Why the scores were measured rather than read (no cache yet, another CPU or kernel, a
  /// corrupt file, asked to) and whether they could not be cached; "" when read from the cache.
  std::string note;
};

/// This host's calibration: read from the cache when it was measured by the same suite version
/// on the same CPU model, kernel release and host name; otherwise (or with `remeasure`) measured
/// with run_suite(options), which takes a few seconds, and cached. With a vector_unit other than
/// this CPU's best, measured and neither read from nor written to the cache (cache_file ""):
/// the cache is the host's calibration every probed device's speed is divided by. A cache that
/// cannot be read or written is never fatal: the calibration is kept for this process (later
/// calls return it, `note` saying so) and `note` says what happened. Throws what run_suite
/// throws.
HostCalibration host_calibration(bool remeasure = false, const SuiteOptions& options = {});

}  // namespace edgeprof
EDGEPROF_API_END
