/// @file
/// The catalog's reference core, and this host's speed relative to it.
///
/// The catalog gives each device's core speed relative to one reference core (an Intel Pentium
/// G4600 at 3.6 GHz, rated 4448 MIPS by 7-Zip's single-thread benchmark), because that is what
/// published benchmarks allow; emulation needs it relative to a core of this host. 7-Zip's own
/// benchmark, run here, bridges the two: this host's rating over the reference core's.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// The catalog's reference core, for people.
inline constexpr const char* kReferenceCore = "Intel Pentium G4600 at 3.6 GHz";
/// The reference core's 7-Zip single-thread total rating (`7za b -mmt1`), MIPS, from
/// sbc-bench's results table: the same benchmark the catalog's device speeds come from.
inline constexpr double kReferenceCoreMips = 4448;

/// What `7z b` printed, the parts edgeprof uses.
struct SevenZipBenchmark {
  std::string version;  ///< the banner's first line, e.g. "7-Zip (z) 26.02 (x64) : ..."
  double compress_mips = 0;    ///< "Avr:" compressing rating
  double decompress_mips = 0;  ///< "Avr:" decompressing rating
  double total_mips = 0;       ///< "Tot:" rating: the figure sbc-bench reports
  int threads = 0;             ///< "Benchmark threads", 0 when not printed
};

/// Parses the text of `7z b` (p7zip 16.02 and 7-Zip 21 and later print the same table). Throws
/// Error naming `origin` and what is missing when there is no "Tot:" line with a positive
/// rating (a failed or interrupted benchmark).
SevenZipBenchmark parse_7zip_benchmark(std::string_view text, std::string_view origin = "7z b");

/// This host's speed relative to the reference core, and how it was measured.
struct ReferenceRating {
  double host_mips = 0;     ///< this host's 7-Zip single-thread total rating
  std::string command;      ///< the command that measured it, e.g. "/usr/bin/7zz b -mmt1"
  std::string version;      ///< 7-Zip's banner line
  int cpu = -1;             ///< the host CPU the benchmark was pinned to
  std::string cpu_model;    ///< from /proc/cpuinfo
  std::string kernel;       ///< kernel release (uname -r)
  std::string hostname;     ///< host name
  std::string measured_at;  ///< ISO 8601 UTC
  double seconds = 0;       ///< how long the benchmark took
  std::string cache_file;   ///< where it is cached; "" when it could not be
  std::string note;         ///< why it was measured or not cached; "" when read from the cache

  /// One host core / one reference core: host_mips / kReferenceCoreMips.
  double speed() const { return host_mips / kReferenceCoreMips; }
};

/// This host's cached rating: read from `host-reference.json` in the calibration cache
/// directory (as host_calibration()) when it was measured on the same CPU model, kernel release
/// and host name. Never measures (that takes about 40 s): nullopt when nothing usable is cached,
/// with the reason in `*why` when given.
std::optional<ReferenceRating> cached_reference_rating(std::string* why = nullptr);

/// How measure_reference_rating runs 7-Zip.
struct ReferenceOptions {
  /// The 7-Zip program; "" = the first of 7zz, 7z and 7za on PATH.
  std::string program;
  /// The arguments after the program. The default is sbc-bench's single-thread run, the one the
  /// catalog's ratings come from; another one (fewer dictionary sizes, say) measures faster but
  /// rates differently, and is not cached.
  std::vector<std::string> arguments{"b", "-mmt1"};
  /// The CPU to pin 7-Zip to; -1 = the CPU the calling thread is on.
  int cpu = -1;
  /// The benchmark is stopped, and Error thrown, when it runs longer.
  std::chrono::seconds timeout{600};
  /// Receives a line for people as the benchmark goes (may be empty).
  std::function<void(const std::string&)> progress;
};

/// Runs 7-Zip's single-thread benchmark pinned to one CPU (about 40 s) and caches the result
/// for cached_reference_rating() and the device loaders. Throws Error when no 7-Zip is found
/// (install Debian's `7zip` or `p7zip-full`), when it fails or times out (with the end of its
/// output), or when its output has no rating.
ReferenceRating measure_reference_rating(const ReferenceOptions& options = {});

/// Gives `device` a core speed from `reference_speed`, the speed of one of its cores relative to
/// the reference core: core_speed = reference_speed / this host's speed relative to the
/// reference core. That is `host_reference_speed` when given (as DeviceLoadOptions: 0 = not
/// known), else cached_reference_rating()'s. When it is not known, core_speed is
/// reference_speed uncorrected (Device::reference_uncorrected()), and its source says how to
/// correct it. Sets reference_speed, host_reference_speed and, unless `device.sources` has one
/// already, the source of core_speed (estimated). Throws DeviceError naming the value when
/// reference_speed is not a positive number, or host_reference_speed is negative or not finite.
void apply_reference_speed(Device& device, double reference_speed,
                           std::optional<double> host_reference_speed = std::nullopt);

/// A line for people: "3946 MIPS by 7-Zip: 0.887 of the reference core (Intel Pentium G4600
/// at 3.6 GHz, 4448 MIPS), measured 2026-11-22T10:00:00Z".
std::string describe(const ReferenceRating& rating);

}  // namespace edgeprof
EDGEPROF_API_END
