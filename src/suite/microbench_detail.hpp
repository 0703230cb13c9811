// The parts of the micro-benchmark suite and edgeprof-probe that tests reach directly: the
// kernels' work units and checksums, the /proc/cpuinfo parser, and the device-file writer.
#pragma once

#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/microbench.hpp"

namespace edgeprof::detail {

// edgeprof-probe's job, private to the program (src/probe) and its tests.
// What edgeprof-probe does.
struct ProbeOptions {
  std::string name;    //< the device's name in the file; "" = this machine's host name
  bool quick = false;  //< shorter timed runs (about 1 s for the suite): a first look, tests
  // The vector kernel's unit (SuiteOptions::vector_unit); "" = the best of this CPU.
  std::string vector_unit;
  // Receives progress lines for people (edgeprof-probe prints them on stderr); may be empty.
  std::function<void(const std::string&)> progress;
};

// Measures this machine as edgeprof-probe does and returns its device file (JSON, schema
// version 1): cores this process may use, MemTotal, the CPU model, and the suite's scores
// (the vector kernel's on the best vector unit, named in the file) on the fastest CPU (the highest cpu_capacity, then cpuinfo_max_freq; named in `description`).
// Throws DeviceError for an unusable name and what run_suite throws.
std::string probe_device_json(const ProbeOptions& options = {});

class Fs;

// splitmix64: a tiny generator whose sequence is the same on every platform and compiler, as
// the suite's data must be (std's distributions are implementation-defined).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, bound) for shuffling; bound > 0.
  std::uint64_t below(std::uint64_t bound) { return next() % bound; }

 private:
  std::uint64_t state_;
};

// Integer kernel. One unit: 256 keys from `seed`, heap-sorted, 256 binary searches for keys
// from an LCG, and a multiply-xorshift hash of the result: branchy, L1-resident, serial.
inline constexpr int kIntegerKeys = 256;
inline constexpr std::uint64_t kIntegerSeed = 0x5eed0001;
inline constexpr std::uint64_t kIntegerChecksum = 0xdd77e1ea4802fb96ull;
std::uint64_t integer_unit(std::uint64_t seed);

// Floating-point kernel. One unit: a 24x24 matrix product by dot products (values are
// multiples of 1/8 below 2, so every sum is exact and the result is the same with or without
// fused multiply-add) and 4 leapfrog steps of a softened 12-body system (square roots and
// divisions; contraction changes its last bits, so it is compared with a tolerance).
inline constexpr int kMatrixSize = 24;
inline constexpr int kBodies = 12;
inline constexpr int kBodySteps = 4;
inline constexpr std::uint64_t kFloatingSeed = 0x5eed0002;
struct FloatingChecksum {
  double exact = 0;   // the matrix product: bit-exact everywhere
  double approx = 0;  // the n-body system: equal within kFloatingTolerance
};
inline constexpr double kFloatingExact = 1585.109375;
inline constexpr double kFloatingApprox = 38.803876710493505;
inline constexpr double kFloatingTolerance = 1e-9;  // relative
FloatingChecksum floating_unit(std::uint64_t seed);
// Whether `c` is the checksum of the unit of kFloatingSeed.
bool floating_ok(const FloatingChecksum& c);

// Memory-bound kernel: a buffer of 64-byte lines linked into one random cycle; following the
// links is one dependent, cache-missing load per step. The suite uses kChaseBytes, far beyond
// any last-level cache of the devices and hosts in question.
inline constexpr std::size_t kChaseBytes = std::size_t{128} << 20;
inline constexpr std::uint64_t kChaseSeed = 0x5eed0003;
class ChaseBuffer {
 public:
  // Maps and links `bytes` / 64 lines (at least 2) in pages of the base size (no transparent
  // huge pages, whose use depends on each system's settings); every page is written, so none
  // faults while timed. Throws Error when the memory cannot be had.
  ChaseBuffer(std::size_t bytes, std::uint64_t seed);
  ~ChaseBuffer();
  ChaseBuffer(const ChaseBuffer&) = delete;
  ChaseBuffer& operator=(const ChaseBuffer&) = delete;

  std::size_t lines() const { return order_.size(); }
  // The line reached `position` steps along the cycle from its start.
  std::uint32_t line_at(std::uint64_t position) const {
    return order_[static_cast<std::size_t>(position % order_.size())];
  }
  // Follows `steps` links from `line` and returns the line reached.
  std::uint32_t chase(std::uint32_t line, std::uint64_t steps) const;
  // FNV-1a over the first `count` lines of the cycle: pins down the generator and the shuffle.
  std::uint64_t digest(std::size_t count) const;

 private:
  struct alignas(64) Line {
    std::uint32_t next;
    std::uint32_t pad[15];
  };
  Line* lines_ = nullptr;             // mmap(2)ed, lines() of them
  std::vector<std::uint32_t> order_;  // the cycle: order_[k + 1] follows order_[k]
};
// digest(16) of ChaseBuffer(1 MiB, kChaseSeed).
inline constexpr std::uint64_t kChaseDigest1MiB = 0xe3f9959fcd5fa07full;

// Vector kernel (vector_kernel.cpp). One unit: a 6 x 32 single-precision block of a matrix
// product over a depth of 128 (2 x 6 x 32 x 128 = 49,152 floating-point operations), from one
// of kVectorPanels packed panels of A (in turn) and one B, all from one seed and resident in a
// 32 KiB level-1 data cache. Values are multiples of 1/4 below 2: every sum is exact, so a
// unit's checksum (the sum of its block) is the same on every vector unit, fused or not.
inline constexpr int kVectorRows = 6;
inline constexpr int kVectorCols = 32;
inline constexpr int kVectorDepth = 128;
inline constexpr int kVectorPanels = 4;
inline constexpr double kVectorFlopsPerUnit = 2.0 * kVectorRows * kVectorCols * kVectorDepth;
inline constexpr std::uint64_t kVectorSeed = 0x5eed0004;

// The kernel's data and the checksum each panel must give.
class VectorData {
 public:
  explicit VectorData(std::uint64_t seed);
  const float* panel(int p) const {
    return a_.data() + static_cast<std::size_t>(p) * kVectorRows * kVectorDepth;
  }
  const float* b() const { return b_.data(); }
  double panel_sum(int p) const { return panel_sums_[p]; }
  // The checksum of units first, first + 1, ..., first + units - 1 (unit u uses panel
  // u % kVectorPanels).
  double expected(std::uint64_t first, std::uint64_t units) const;

 private:
  std::vector<float> a_;
  std::vector<float> b_;
  double panel_sums_[kVectorPanels] = {};
};

// One build of the kernel for one vector unit: `run` computes `units` units from `first` and
// returns their checksum.
struct VectorUnit {
  const char* name;  // "avx512f", "avx2+fma", "sse2", "neon" or "generic" (no vector unit)
  int lanes;         // single-precision lanes of one vector
  double (*run)(const VectorData& data, std::uint64_t first, std::uint64_t units);
};

// The builds this CPU can run, best first (as an inference library would choose); the last is
// the build's baseline, which every CPU it runs on has.
std::vector<VectorUnit> vector_units();

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

// One "processor" block of /proc/cpuinfo.
struct CpuInfoEntry {
  int processor = -1;
  std::string model_name;               // "model name" (x86, 32-bit ARM); "" when absent
  std::optional<unsigned> implementer;  // "CPU implementer" (ARM)
  std::optional<unsigned> part;         // "CPU part" (ARM)
};

// /proc/cpuinfo, the parts edgeprof uses.
struct CpuInfo {
  std::vector<CpuInfoEntry> cpus;
  std::string model;             // "Model" (Raspberry Pi boards): the board, "" when absent
  std::string hardware;          // "Hardware" (32-bit and vendor ARM kernels), "" when absent
  std::string legacy_processor;  // "Processor" of kernels before 3.8 (32-bit ARM), global
  bool simd = false;             // a "Features" line lists neon (32-bit ARM) or asimd (arm64)
};

// Parses /proc/cpuinfo text (x86, arm64, arm). Never throws: unknown lines are skipped.
CpuInfo parse_cpuinfo(std::string_view text);

// The name of an ARM core ("Cortex-A72"), "Qualcomm part 0x..." for Qualcomm's own unknown
// parts, "" when the pair is unknown.
std::string arm_core_name(unsigned implementer, unsigned part);

// One CPU's model: the ARM core name, else "model name", else "unknown".
std::string core_model(const CpuInfoEntry& cpu, const CpuInfo& info);

// The processor's model: one core model ("AMD EPYC", "Cortex-A72"), or for mixed cores each
// with its count in order of appearance ("4x Cortex-A55 + 3x Cortex-A77 + 1x Cortex-A77").
// "unknown" when nothing can be read.
std::string cpu_model(const CpuInfo& info);

// The calibration cache directory from the environment's values (nullptr or "" = unset):
// EDGEPROF_CACHE_DIR, else XDG_CACHE_HOME/edgeprof (when absolute, as the XDG spec says), else
// HOME/.cache/edgeprof; "" when none applies.
std::string calibration_cache_dir(const char* edgeprof_cache_dir, const char* xdg_cache_home,
                                  const char* home);

// The current time as ISO 8601 UTC, "2025-01-31T12:00:00Z".
std::string utc_now();

// Pins the calling thread to one CPU (-1 = the one it is on) and restores its affinity when
// destroyed. Throws Error naming the CPU and the errno.
class PinnedThread {
 public:
  explicit PinnedThread(int cpu);
  // Pinned to all of `cpus` (one of them -1: the CPU the thread is on); cpu() is the first.
  explicit PinnedThread(const std::vector<int>& cpus);
  ~PinnedThread();
  PinnedThread(const PinnedThread&) = delete;
  PinnedThread& operator=(const PinnedThread&) = delete;
  int cpu() const { return cpu_; }

 private:
  cpu_set_t saved_;
  int cpu_ = -1;
};

// This machine's host name; "unknown" when it cannot be read.
std::string host_name();

// What a cached measurement of this host is keyed on.
struct HostIdentity {
  std::string cpu_model;  // cpu_model() of /proc/cpuinfo
  std::string kernel;     // uname -r
  std::string hostname;
};
HostIdentity host_identity();
// How `then` differs from `now`, for a message: "host name 'a', this is 'b'" for the first field
// that differs (CPU model, kernel, host name); "" when they are the same host.
std::string identity_change(const HostIdentity& then, const HostIdentity& now);

// calibration_cache_dir() of this process's environment; a relative one made absolute against
// the working directory this process had when it first used it.
std::string host_cache_dir();
// Why host_cache_dir() is "", for the notes of what could not be cached (an XDG_CACHE_HOME
// that is not absolute is ignored, as the XDG specification says: it was called unset).
inline constexpr const char* kNoCacheDir =
    "no cache directory (EDGEPROF_CACHE_DIR and HOME are unset, and XDG_CACHE_HOME is unset or "
    "not an absolute path)";

// The cache file of this host's 7-Zip rating (reference.hpp) in a cache directory.
std::string reference_cache_file(const std::string& dir);

// The cache file of this host's nn rating (nn.hpp) in a cache directory.
std::string nn_cache_file(const std::string& dir);

// The text of the cache file `path` of this host (empty: no cache directory), or nullopt with why
// not in `*why`: no cache directory, "this host's <what> is not measured yet", or unreadable.
std::optional<std::string> read_host_cache(const std::string& path, std::string_view what,
                                           std::string* why);

// Writes `text` to `path` through a temporary file of its own (synced) and rename(2), creating
// `dir` first: a reader never sees half a file, whatever other writers or a crash do. "" on
// success, else why not (with the errno), ending in `remedy`.
std::string replace_file(const std::string& dir, const std::string& path, std::string_view text,
                         const char* remedy = "not cached");

// Why the probe's vector score is low, or "": a build without NEON (a 32-bit ARM compiler's
// default) ran scalar code ("generic") on a CPU whose /proc/cpuinfo lists NEON. A build with
// NEON that was asked for scalar code gets none.
std::string vector_unit_warning(const CpuInfo& info, const std::string& vector_unit);

// What edgeprof-probe reports about the machine, read once.
struct ProbeFacts {
  std::vector<int> cpus;           // CPUs this process may use
  std::uint64_t memory_bytes = 0;  // MemTotal
  std::uint64_t swap_bytes = 0;    // /proc/swaps without zram (else SwapTotal)
  std::uint64_t zram_bytes = 0;    // the zram devices' swap (a Jetson's, a phone's)
  bool swap_from_swaps = false;    // swap_bytes is /proc/swaps's (zram left out), not SwapTotal
  CpuInfo cpuinfo;
  std::vector<std::optional<std::uint64_t>> max_khz;   // cpuinfo_max_freq, per entry of cpus
  std::vector<std::optional<std::uint64_t>> capacity;  // cpu_capacity (arm64), per entry of cpus
  std::string architecture;                            // uname -m
  std::string hostname;
};

// Reads /proc/meminfo, /proc/cpuinfo and each CPU's cpufreq and cpu_capacity through `fs`;
// `cpus` are the CPUs to describe, `architecture` and `hostname` are taken as given. A file
// that cannot be read leaves its figure unset.
ProbeFacts read_probe_facts(const Fs& fs, std::vector<int> cpus, std::string architecture,
                            std::string hostname);

// The fastest of facts.cpus: the highest cpu_capacity, then the highest cpuinfo_max_freq, the
// higher-numbered CPU on a tie (CPU 0 takes more interrupts); -1 when nothing tells them apart.
int fastest_cpu(const ProbeFacts& facts);

// The device file for `facts` and `run`, named `name` and dated `when`.
std::string probe_json(const ProbeFacts& facts, const SuiteRun& run, const std::string& name,
                       const std::string& when);

}  // namespace edgeprof::detail
