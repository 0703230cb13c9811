// The per-core micro-benchmark suite, this host's calibration cache, and edgeprof-probe's
// device file. Portable C++ only (no intrinsics, no assembly): the same source runs on the
// x86-64 host and, built into edgeprof-probe, on arm64 and 32-bit ARM devices, and the scores
// compare only if the work is the same. The vector kernel is in vector_kernel.cpp.
#include "edgeprof/microbench.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <nlohmann/json.hpp>

#include "edgeprof/error.hpp"
#include "edgeprof/version.hpp"
#include "sys/fs.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/stats.hpp"
#include "sys/text.hpp"

namespace edgeprof {

namespace detail {

// The largest cache file read back (what edgeprof writes there is a few kilobytes).
constexpr std::size_t kMaxCacheBytes = std::size_t(64) << 20;

// Kernels.

std::uint64_t integer_unit(std::uint64_t seed) {
  std::uint32_t keys[kIntegerKeys];
  SplitMix64 rng(seed);
  for (std::uint32_t& k : keys) k = static_cast<std::uint32_t>(rng.next() >> 40);  // 24 bits

  // Heap sort: data-dependent branches, as in parsers, tokenisers and schedulers.
  auto sift_down = [&keys](int root, int end) {
    for (;;) {
      int child = 2 * root + 1;
      if (child >= end) return;
      if (child + 1 < end && keys[child] < keys[child + 1]) ++child;
      if (keys[root] >= keys[child]) return;
      std::swap(keys[root], keys[child]);
      root = child;
    }
  };
  for (int i = kIntegerKeys / 2 - 1; i >= 0; --i) sift_down(i, kIntegerKeys);
  for (int end = kIntegerKeys - 1; end > 0; --end) {
    std::swap(keys[0], keys[end]);
    sift_down(0, end);
  }

  // Binary searches for keys from an LCG: unpredictable branches, dependent index arithmetic.
  std::uint64_t found = 0;
  std::uint32_t lcg = static_cast<std::uint32_t>(seed);
  for (int i = 0; i < kIntegerKeys; ++i) {
    lcg = lcg * 1664525u + 1013904223u;
    const std::uint32_t key = lcg >> 8;
    int lo = 0, hi = kIntegerKeys;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (keys[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    found = found * 31 + static_cast<std::uint64_t>(lo);
  }

  // A serial multiply-xorshift hash of the sorted keys.
  std::uint64_t h = found ^ 0x9e3779b97f4a7c15ull;
  for (std::uint32_t k : keys) {
    h ^= k;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  }
  return h;
}

FloatingChecksum floating_unit(std::uint64_t seed) {
  constexpr int n = kMatrixSize;
  SplitMix64 rng(seed);
  double a[n][n], b[n][n];
  // Multiples of 1/8 in (-2, 2): products and sums of 24 of them are exact in a double.
  auto value = [&rng] { return static_cast<double>(static_cast<int>(rng.next() % 31) - 15) / 8.0; };
  for (auto& row : a) {
    for (double& x : row) x = value();
  }
  for (auto& row : b) {
    for (double& x : row) x = value();
  }
  FloatingChecksum out;
  // Dot products: the reduction order is fixed without -ffast-math, so compilers keep it
  // scalar, as the suite intends (vector units are not what it measures).
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += a[i][k] * b[k][j];
      out.exact += sum * static_cast<double>((i * n + j) % 7 + 1);
    }
  }

  // A softened 12-body system, leapfrog integration.
  constexpr int m = kBodies;
  double x[m], y[m], z[m], vx[m] = {}, vy[m] = {}, vz[m] = {}, mass[m];
  for (int i = 0; i < m; ++i) {
    x[i] = value();
    y[i] = value();
    z[i] = value();
    mass[i] = 0.5 + static_cast<double>(rng.next() % 8) / 8.0;
  }
  constexpr double dt = 0.01, soft2 = 0.01;
  for (int step = 0; step < kBodySteps; ++step) {
    for (int i = 0; i < m; ++i) {
      double ax = 0, ay = 0, az = 0;
      for (int j = 0; j < m; ++j) {
        if (j == i) continue;
        const double dx = x[j] - x[i], dy = y[j] - y[i], dz = z[j] - z[i];
        const double r2 = dx * dx + dy * dy + dz * dz + soft2;
        const double inv = mass[j] / (r2 * std::sqrt(r2));
        ax += dx * inv;
        ay += dy * inv;
        az += dz * inv;
      }
      vx[i] += ax * dt;
      vy[i] += ay * dt;
      vz[i] += az * dt;
    }
    for (int i = 0; i < m; ++i) {
      x[i] += vx[i] * dt;
      y[i] += vy[i] * dt;
      z[i] += vz[i] * dt;
    }
  }
  for (int i = 0; i < m; ++i) {
    out.approx += mass[i] * (std::fabs(x[i]) + std::fabs(y[i]) + std::fabs(z[i])) +
                  100.0 * mass[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]);
  }
  return out;
}

bool floating_ok(const FloatingChecksum& c) {
  return c.exact == kFloatingExact &&
         std::fabs(c.approx - kFloatingApprox) <= kFloatingTolerance * std::fabs(kFloatingApprox);
}

ChaseBuffer::ChaseBuffer(std::size_t bytes, std::uint64_t seed) {
  const std::size_t count = std::max<std::size_t>(bytes / sizeof(Line), 2);
  auto no_memory = [&](int err) {
    return Error(fmt::format("the memory kernel cannot get its {} MiB buffer: {} (errno {}); free "
                             "some memory, or run outside a memory limit below about {} MiB",
                             (count * sizeof(Line)) >> 20, std::strerror(err), err,
                             (count * (sizeof(Line) + sizeof(std::uint32_t)) >> 20) + 64),
                 err);
  };
  void* map = ::mmap(nullptr, count * sizeof(Line), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw no_memory(errno);
#ifdef MADV_NOHUGEPAGE
  ::madvise(map, count * sizeof(Line), MADV_NOHUGEPAGE);  // EINVAL without THP: fine
#endif
  lines_ = static_cast<Line*>(map);
  try {
    order_.resize(count);
  } catch (const std::bad_alloc&) {
    ::munmap(lines_, count * sizeof(Line));
    throw no_memory(ENOMEM);
  }
  for (std::size_t i = 0; i < count; ++i) order_[i] = static_cast<std::uint32_t>(i);
  // Fisher-Yates with the suite's own generator, then link the lines in that order: one cycle
  // through every line, so each step lands on a line the caches and prefetchers cannot predict.
  // Linking writes every page, so none faults while timed.
  SplitMix64 rng(seed);
  for (std::size_t i = count - 1; i > 0; --i) {
    std::swap(order_[i], order_[static_cast<std::size_t>(rng.below(i + 1))]);
  }
  for (std::size_t k = 0; k < count; ++k) lines_[order_[k]].next = order_[(k + 1) % count];
}

ChaseBuffer::~ChaseBuffer() { ::munmap(lines_, order_.size() * sizeof(Line)); }

std::uint32_t ChaseBuffer::chase(std::uint32_t line, std::uint64_t steps) const {
  const Line* lines = lines_;
  for (std::uint64_t i = 0; i < steps; ++i) line = lines[line].next;
  return line;
}

std::uint64_t ChaseBuffer::digest(std::size_t count) const {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t k = 0; k < std::min(count, order_.size()); ++k) {
    h ^= order_[k];
    h *= 0x100000001b3ull;
  }
  return h;
}

double median(std::vector<double> values) {
  return values.empty() ? 0 : median_of(std::move(values));
}

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;
using detail::ChaseBuffer;

// Read in every iteration of a timed loop: the compiler cannot know the unit's input, so it
// cannot compute the unit once and reuse it.
volatile std::uint64_t g_integer_seed = detail::kIntegerSeed;
volatile std::uint64_t g_floating_seed = detail::kFloatingSeed;

[[noreturn]] void broken_kernel(std::string_view kernel, std::string_view detail) {
  throw Error(fmt::format(
      "the {} kernel of {} computed a wrong checksum ({}): this build of edgeprof is broken "
      "(miscompiled, or built with -ffast-math or similar); rebuild without unsafe "
      "floating-point or optimisation flags and report it if it persists",
      kernel, kSuiteVersion, detail));
}


// One kernel as the timing loop sees it: runs `units` units and throws on a wrong checksum.
struct Kernel {
  const char* name;
  double score_per_unit;  // score = units * score_per_unit / seconds
  std::uint64_t first_units;
  std::function<void(std::uint64_t)> run;
};

double seconds_of(const Kernel& kernel, std::uint64_t units) {
  const auto start = Clock::now();
  kernel.run(units);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

KernelRuns measure(const Kernel& kernel, const SuiteOptions& options) {
  const double target = std::chrono::duration<double>(options.per_kernel).count();
  // Calibrate: double the work until a run takes a tenth of the target (this also warms the
  // caches, the branch predictors and the clock up), then scale to the target.
  std::uint64_t units = kernel.first_units;
  double t = seconds_of(kernel, units);
  while (t < target / 10 && units < (std::uint64_t{1} << 40)) {
    units *= t > 0
                 ? std::clamp<std::uint64_t>(static_cast<std::uint64_t>(target / 10 / t) + 1, 2, 16)
                 : 16;
    t = seconds_of(kernel, units);
  }
  units = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(static_cast<double>(units) * target / std::max(t, 1e-9)));

  KernelRuns runs;
  runs.kernel = kernel.name;
  runs.units = units;
  for (int r = 0; r < options.repeats; ++r) {
    const double s = seconds_of(kernel, units);
    runs.scores.push_back(static_cast<double>(units) * kernel.score_per_unit / std::max(s, 1e-9));
  }
  runs.median = detail::median(runs.scores);
  runs.min = *std::min_element(runs.scores.begin(), runs.scores.end());
  runs.max = *std::max_element(runs.scores.begin(), runs.scores.end());
  return runs;
}

void run_integer(std::uint64_t units) {
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < units; ++i) {
    wrong += detail::integer_unit(g_integer_seed) != detail::kIntegerChecksum;
  }
  if (wrong) broken_kernel("integer", fmt::format("{} of {} units", wrong, units));
}

void run_floating(std::uint64_t units) {
  std::uint64_t wrong = 0;
  detail::FloatingChecksum last;
  for (std::uint64_t i = 0; i < units; ++i) {
    last = detail::floating_unit(g_floating_seed);
    wrong += !detail::floating_ok(last);
  }
  if (wrong) {
    broken_kernel("floating", fmt::format("{} of {} units; the last gave {:.17g} and {:.17g}",
                                          wrong, units, last.exact, last.approx));
  }
}

// The memory kernel goes on around the cycle from run to run; after each run the line reached
// must be the one that many steps along the cycle.
class Chase {
 public:
  explicit Chase(const ChaseBuffer& buffer) : buffer_(&buffer), line_(buffer.line_at(0)) {}
  void operator()(std::uint64_t steps) {
    line_ = buffer_->chase(line_, steps);
    position_ += steps;
    if (line_ != buffer_->line_at(position_)) {
      broken_kernel("memory", fmt::format("line {} after {} steps, expected {}", line_, position_,
                                          buffer_->line_at(position_)));
    }
  }

 private:
  const ChaseBuffer* buffer_;
  std::uint32_t line_;
  std::uint64_t position_ = 0;
};

// The vector kernel on one unit; like the memory kernel it goes on from run to run (through
// the panels), and each run's checksum must be the one its units give.
class Vector {
 public:
  Vector(const detail::VectorData& data, const detail::VectorUnit& unit)
      : data_(&data), unit_(unit) {}
  void operator()(std::uint64_t units) {
    const double got = unit_.run(*data_, next_, units);
    const double want = data_->expected(next_, units);
    if (got != want) {
      broken_kernel("vector", fmt::format("{} units from {} on {}: {:.17g}, expected {:.17g}",
                                          units, next_, unit_.name, got, want));
    }
    next_ += units;
  }

 private:
  const detail::VectorData* data_;
  detail::VectorUnit unit_;
  std::uint64_t next_ = 0;
};

detail::VectorUnit choose_vector_unit(const std::string& name) {
  const std::vector<detail::VectorUnit> units = detail::vector_units();
  if (name.empty()) return units.front();
  std::string have;
  for (const auto& u : units) {
    if (u.name == name) return u;
    have += fmt::format("{}{}", have.empty() ? "" : ", ", u.name);
  }
  throw Error(fmt::format("vector unit '{}' is not one this CPU and build can run; it has: {}",
                          name, have));
}

std::string format_runs(const KernelRuns& k, std::string_view unit) {
  return fmt::format("{:<8} {:>12.6g} {} (median of {}; min {:.6g}, max {:.6g}, spread {:.1f}%)",
                     k.kernel, k.median, unit, k.scores.size(), k.min, k.max,
                     k.median > 0 ? 100.0 * (k.max - k.min) / k.median : 0.0);
}

}  // namespace

SuiteRun run_suite_detailed(const SuiteOptions& options) {
  if (options.repeats < 1) {
    throw Error(fmt::format("SuiteOptions::repeats = {} is invalid; run each kernel at least once",
                            options.repeats));
  }
  if (options.per_kernel.count() <= 0) {
    throw Error(
        fmt::format("SuiteOptions::per_kernel = {} ms is invalid; give a positive time "
                    "such as 200 ms",
                    options.per_kernel.count()));
  }
  const auto start = Clock::now();
  auto say = [&options](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  const detail::VectorUnit unit = choose_vector_unit(options.vector_unit);
  detail::PinnedThread pin(options.cpu);
  SuiteRun out;
  out.cpu = pin.cpu();
  out.scores.suite = kSuiteVersion;

  say(fmt::format("{} on CPU {}: linking the memory kernel's {} MiB buffer", kSuiteVersion, out.cpu,
                  detail::kChaseBytes >> 20));
  const ChaseBuffer buffer(detail::kChaseBytes, detail::kChaseSeed);

  const Kernel integer{"integer", 1.0, 1, run_integer};
  const Kernel floating{"floating", 1.0, 1, run_floating};
  const Kernel memory{"memory", 1e-6, 4096, Chase(buffer)};
  const detail::VectorData vector_data(detail::kVectorSeed);
  const Kernel vector{"vector", detail::kVectorFlopsPerUnit * 1e-9, 4, Vector(vector_data, unit)};

  out.kernels.push_back(measure(integer, options));
  say(format_runs(out.kernels.back(), "units/s"));
  out.kernels.push_back(measure(floating, options));
  say(format_runs(out.kernels.back(), "units/s"));
  out.kernels.push_back(measure(memory, options));
  say(format_runs(out.kernels.back(), "M loads/s"));
  out.kernels.push_back(measure(vector, options));
  say(format_runs(out.kernels.back(), fmt::format("GFLOP/s ({})", unit.name)));
  out.scores.integer = out.kernels[0].median;
  out.scores.floating = out.kernels[1].median;
  out.scores.memory = out.kernels[2].median;
  out.scores.vector = out.kernels[3].median;
  out.scores.vector_unit = unit.name;
  out.scores.vector_kernel = kVectorKernelVersion;
  // A spread needs two runs at least: one run's is not recorded (not a measured 0).
  for (const KernelRuns& k : out.kernels) {
    if (k.median > 0 && k.scores.size() >= 2) {
      out.scores.spread[k.kernel] = (k.max - k.min) / k.median;
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  say(fmt::format("suite done in {:.1f} s", out.seconds));
  return out;
}

CoreScores run_suite(const SuiteOptions& options) { return run_suite_detailed(options).scores; }

std::vector<std::string> vector_units() {
  std::vector<std::string> names;
  for (const auto& u : detail::vector_units()) names.emplace_back(u.name);
  return names;
}

double speed_from_scores(const CoreScores& device, const CoreScores& host) {
  if (device.suite != host.suite) {
    throw DeviceError(fmt::format(
        "the device's scores come from suite '{}' but this host's from '{}'; scores compare "
        "only within one suite version: run edgeprof-probe of this edgeprof ({}, suite {}) on "
        "the device again, and import its new file",
        device.suite, host.suite, version(), kSuiteVersion));
  }
  const struct {
    const char* name;
    double device, host;
  } pairs[] = {{"integer", device.integer, host.integer},
               {"floating", device.floating, host.floating},
               {"memory", device.memory, host.memory}};
  double log_sum = 0;
  for (const auto& p : pairs) {
    for (const auto& [whose, value] : {std::pair{"device", p.device}, std::pair{"host", p.host}}) {
      if (!(value > 0) || !std::isfinite(value)) {
        throw DeviceError(fmt::format(
            "the {}'s {} score is {}; scores are positive numbers measured by the suite ({}): "
            "{}",
            whose, p.name, value, device.suite,
            std::string_view(whose) == "device"
                ? "run edgeprof-probe on the device again and import its new file"
                : "re-measure this host (edgeprof calibrate-host)"));
      }
    }
    log_sum += std::log(p.device / p.host);
  }
  return std::exp(log_sum / 3);
}

// /proc/cpuinfo.

namespace detail {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// The decimal number that `text` starts with, after blanks: "1800000\n" -> 1800000. The
// library's parse.hpp has the like, but parse.cpp needs 128-bit integers that 32-bit ARM lacks,
// and edgeprof-probe (this file without the library) must build there.
std::optional<std::uint64_t> leading_number(std::string_view text) {
  text = trim(text);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return v;
}

std::optional<unsigned> parse_hex(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    v = v * 16 + d;
  }
  return v;
}

struct ArmPart {
  unsigned implementer, part;
  const char* name;
};

// From Linux's arch/arm64/include/asm/cputype.h and arch/arm/include/asm/cputype.h. Qualcomm's
// Kryo 5xx and later report ARM's own parts.
constexpr ArmPart kArmParts[] = {
    {0x41, 0xb76, "ARM1176"},
    {0x41, 0xc05, "Cortex-A5"},
    {0x41, 0xc07, "Cortex-A7"},
    {0x41, 0xc08, "Cortex-A8"},
    {0x41, 0xc09, "Cortex-A9"},
    {0x41, 0xc0d, "Cortex-A12"},
    {0x41, 0xc0e, "Cortex-A17"},
    {0x41, 0xc0f, "Cortex-A15"},
    {0x41, 0xd03, "Cortex-A53"},
    {0x41, 0xd04, "Cortex-A35"},
    {0x41, 0xd05, "Cortex-A55"},
    {0x41, 0xd07, "Cortex-A57"},
    {0x41, 0xd08, "Cortex-A72"},
    {0x41, 0xd09, "Cortex-A73"},
    {0x41, 0xd0a, "Cortex-A75"},
    {0x41, 0xd0b, "Cortex-A76"},
    {0x41, 0xd0c, "Neoverse-N1"},
    {0x41, 0xd0d, "Cortex-A77"},
    {0x41, 0xd0e, "Cortex-A76AE"},
    {0x41, 0xd40, "Neoverse-V1"},
    {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd42, "Cortex-A78AE"},
    {0x41, 0xd44, "Cortex-X1"},
    {0x41, 0xd46, "Cortex-A510"},
    {0x41, 0xd47, "Cortex-A710"},
    {0x41, 0xd48, "Cortex-X2"},
    {0x41, 0xd49, "Neoverse-N2"},
    {0x41, 0xd4b, "Cortex-A78C"},
    {0x41, 0xd4c, "Cortex-X1C"},
    {0x41, 0xd4d, "Cortex-A715"},
    {0x41, 0xd4e, "Cortex-X3"},
    {0x41, 0xd80, "Cortex-A520"},
    {0x41, 0xd81, "Cortex-A720"},
    {0x41, 0xd82, "Cortex-X4"},
    {0x4e, 0x003, "NVIDIA Denver"},
    {0x4e, 0x004, "NVIDIA Carmel"},
    {0x51, 0x200, "Qualcomm Kryo"},
    {0x51, 0x800, "Qualcomm Kryo 2xx Gold"},
    {0x51, 0x801, "Qualcomm Kryo 2xx Silver"},
    {0x51, 0x802, "Qualcomm Kryo 3xx Gold"},
    {0x51, 0x803, "Qualcomm Kryo 3xx Silver"},
    {0x51, 0x804, "Qualcomm Kryo 4xx Gold"},
    {0x51, 0x805, "Qualcomm Kryo 4xx Silver"},
    {0x51, 0xc00, "Qualcomm Falkor"},
};

}  // namespace

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "processor") {
      CpuInfoEntry entry;
      entry.processor = static_cast<int>(leading_number(value).value_or(info.cpus.size()));
      info.cpus.push_back(entry);
    } else if (key == "Model") {
      info.model = value;
    } else if (key == "Hardware") {
      info.hardware = value;
    } else if (key == "Processor") {
      info.legacy_processor = value;
    } else if (key == "Features") {
      for (std::string_view rest = value; !rest.empty();) {
        const std::size_t end = std::min(rest.find_first_of(" \t"), rest.size());
        const std::string_view flag = rest.substr(0, end);
        if (flag == "neon" || flag == "asimd") info.simd = true;
        rest = trim(rest.substr(end));
      }
    } else if (!info.cpus.empty()) {
      CpuInfoEntry& cpu = info.cpus.back();
      if (key == "model name") {
        cpu.model_name = value;
      } else if (key == "CPU implementer") {
        cpu.implementer = parse_hex(value);
      } else if (key == "CPU part") {
        cpu.part = parse_hex(value);
      }
    }
  }
  // ARM kernels before 3.8 list every CPU with its BogoMIPS only, then the CPU's fields once
  // (after the global "Processor" line): they are every CPU's. Read as the last CPU's, they
  // made a quad-core Cortex-A7 "1x ARMv7 Processor + 1x Cortex-A7", a big.LITTLE layout.
  if (!info.legacy_processor.empty() && info.cpus.size() > 1) {
    const CpuInfoEntry last = info.cpus.back();
    const bool bare =
        std::all_of(info.cpus.begin(), info.cpus.end() - 1, [](const CpuInfoEntry& c) {
          return !c.implementer && !c.part && c.model_name.empty();
        });
    if (bare && (last.implementer || last.part || !last.model_name.empty())) {
      for (CpuInfoEntry& c : info.cpus) {
        c.implementer = last.implementer;
        c.part = last.part;
        c.model_name = last.model_name;
      }
    }
  }
  return info;
}

std::string arm_core_name(unsigned implementer, unsigned part) {
  for (const ArmPart& p : kArmParts) {
    if (p.implementer == implementer && p.part == part) return p.name;
  }
  if (implementer == 0x51) return fmt::format("Qualcomm part {:#05x}", part);
  return {};
}

std::string core_model(const CpuInfoEntry& cpu, const CpuInfo& info) {
  if (cpu.implementer && cpu.part) {
    std::string name = arm_core_name(*cpu.implementer, *cpu.part);
    if (!name.empty()) return name;
  }
  if (!cpu.model_name.empty()) return cpu.model_name;
  if (!info.legacy_processor.empty()) return info.legacy_processor;
  if (cpu.implementer && cpu.part) {
    return fmt::format("unknown (CPU implementer {:#04x}, part {:#05x})", *cpu.implementer,
                       *cpu.part);
  }
  return "unknown";
}

std::string cpu_model(const CpuInfo& info) {
  std::vector<std::pair<std::string, int>> counts;  // in order of first appearance
  for (const CpuInfoEntry& cpu : info.cpus) {
    const std::string model = core_model(cpu, info);
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == model; });
    if (it == counts.end()) {
      counts.emplace_back(model, 1);
    } else {
      ++it->second;
    }
  }
  if (counts.empty()) return info.legacy_processor.empty() ? "unknown" : info.legacy_processor;
  if (counts.size() == 1) return counts.front().first;
  std::string out;
  for (const auto& [model, count] : counts) {
    out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", count, model);
  }
  return out;
}

// Host calibration.

std::string calibration_cache_dir(const char* edgeprof_cache_dir, const char* xdg_cache_home,
                                  const char* home) {
  auto set = [](const char* v) { return v != nullptr && *v != '\0'; };
  if (set(edgeprof_cache_dir)) return edgeprof_cache_dir;
  if (set(xdg_cache_home) && xdg_cache_home[0] == '/') {
    return join(xdg_cache_home, "edgeprof");
  }
  if (set(home)) return join(join(home, ".cache"), "edgeprof");
  return {};
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

PinnedThread::PinnedThread(int cpu) : PinnedThread(std::vector<int>{cpu}) {}

PinnedThread::PinnedThread(const std::vector<int>& cpus) {
  CPU_ZERO(&saved_);
  if (::sched_getaffinity(0, sizeof saved_, &saved_) != 0) {
    throw Error(fmt::format("cannot read this thread's CPU affinity: {} (errno {})",
                            std::strerror(errno), errno),
                errno);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= CPU_SETSIZE) {  // was "cannot tell which CPU this thread runs on: Success"
      throw Error(fmt::format("cannot pin to CPU {}: a CPU number is below {}; choose a CPU "
                              "this process may run on (taskset -pc {} lists them)",
                              cpu, CPU_SETSIZE, ::getpid()));
    }
    if (cpu < 0) cpu = ::sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      throw Error(fmt::format("cannot tell which CPU this thread runs on: {} (errno {}); name a "
                              "CPU to run on",
                              std::strerror(errno), errno),
                  errno);
    }
    if (cpu_ < 0) cpu_ = cpu;
    CPU_SET(cpu, &set);
  }
  if (cpus.empty()) throw Error("PinnedThread: no CPU given; name the CPUs to pin to");
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    const int err = errno;
    throw Error(fmt::format("cannot pin to CPU {}: {} (errno {}); choose a CPU this process may "
                            "run on (taskset -pc {} lists them)",
                            fmt::join(cpus, ","), std::strerror(err), err, ::getpid()),
                err);
  }
  // The kernel keeps only the CPUs the cpuset allows: pinned to fewer than asked is an error.
  cpu_set_t got;
  CPU_ZERO(&got);
  if (::sched_getaffinity(0, sizeof got, &got) == 0 && !CPU_EQUAL(&got, &set)) {
    ::sched_setaffinity(0, sizeof saved_, &saved_);
    throw Error(fmt::format("cannot pin to CPUs {}: the kernel allowed only {} of them; choose "
                            "CPUs this process may run on (taskset -pc {} lists them)",
                            fmt::join(cpus, ","), CPU_COUNT(&got), ::getpid()));
  }
}

PinnedThread::~PinnedThread() { ::sched_setaffinity(0, sizeof saved_, &saved_); }

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

HostIdentity host_identity() {
  HostIdentity id;
  id.cpu_model = cpu_model(parse_cpuinfo(Fs().read(files::kProcCpuinfo).value_or("")));
  utsname u{};
  if (::uname(&u) == 0) id.kernel = u.release;
  id.hostname = host_name();
  return id;
}

std::string identity_change(const HostIdentity& then, const HostIdentity& now) {
  const struct {
    const char* what;
    const std::string& then;
    const std::string& now;
  } keys[] = {{"CPU model", then.cpu_model, now.cpu_model},
              {"kernel", then.kernel, now.kernel},
              {"host name", then.hostname, now.hostname}};
  for (const auto& k : keys) {
    if (k.then != k.now) return fmt::format("{} '{}', this is '{}'", k.what, k.then, k.now);
  }
  return {};
}

std::string host_cache_dir() {
  const std::string dir = calibration_cache_dir(
      std::getenv("EDGEPROF_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  if (dir.empty() || dir.front() == '/') return dir;
  // A relative EDGEPROF_CACHE_DIR (or HOME): against the working directory this process had
  // when it first used it, so that a later chdir (os.chdir in a notebook) does not move the
  // cache (every rating measured again, a minute each) and notes name one place.
  static std::mutex mutex;
  static std::map<std::string, std::string> resolved;  // by the value given
  const std::lock_guard<std::mutex> lock(mutex);
  auto [at, first] = resolved.try_emplace(dir);
  if (first) {
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(dir, ec);
    at->second = ec ? dir : absolute.lexically_normal().string();
  }
  return at->second;
}

std::optional<std::string> read_host_cache(const std::string& path, std::string_view what,
                                           std::string* why) {
  auto say = [why](std::string text) {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  if (path.empty()) {
    return say(kNoCacheDir);
  }
  int err = 0;
  auto text = Fs().read_user_file(path, kMaxCacheBytes, &err);
  if (!text) {
    if (err == EINVAL || err == EFBIG) {
      return say(fmt::format("{} {}: remove it and measure again", path,
                             user_file_problem(err, kMaxCacheBytes)));
    }
    return say(err == ENOENT ? fmt::format("this host's {} is not measured yet (no {})", what, path)
                             : sys_message(err, "cannot read", path, "measure it again"));
  }
  return text;
}

namespace {

// The process's umask without setting it (umask(2) sets it, a race with other threads): from
// /proc/self/status (Linux 4.7 and later), else the usual 022.
mode_t current_umask() {
  const std::optional<std::string> status = Fs().read(files::kProcSelfStatus);
  if (status) {
    const std::size_t at = status->find("\nUmask:");
    if (at != std::string::npos) {
      return static_cast<mode_t>(std::strtoul(status->c_str() + at + 7, nullptr, 8) & 0777);
    }
  }
  return 022;
}

}  // namespace

std::string replace_file(const std::string& dir, const std::string& path, std::string_view text,
                         const char* remedy) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return sys_message(ec.value(), "cannot create the directory", dir, remedy);
  // A name of its own per call (two threads of one process writing the same cache truncated
  // each other's file, and one's rename then found none), on the file system of `path`.
  std::string temp = path + ".tmp.XXXXXX";
  UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (fd.get() < 0) return sys_message(errno, "cannot create", temp, remedy);
  const auto failed = [&](int err, const char* what) {
    ::unlink(temp.c_str());
    return sys_message(err, what, temp, remedy);
  };
  // mkstemp's file is 0600: the mode open(0644) gave, less the umask; best effort (a file
  // system that refuses chmod keeps 0600, and the cache still works).
  (void)::fchmod(fd.get(), 0644 & ~current_umask());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return failed(n < 0 ? errno : EIO, "cannot write");
    done += static_cast<std::size_t>(n);
  }
  // On the disk before it is renamed: a crash then leaves the old file or the new, never an
  // empty one (read as corrupt).
  if (::fsync(fd.get()) != 0) return failed(errno, "cannot write");
  if (::close(fd.release()) != 0) return failed(errno, "cannot write");
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return sys_message(err, "cannot rename the new file to", path, remedy);
  }
  return {};
}

}  // namespace detail

namespace {

using nlohmann::json;

constexpr const char* kCacheName = "host-calibration.json";
constexpr int kCacheSchema = 1;

utsname uname_or_empty() {
  utsname u{};
  if (::uname(&u) != 0) std::memset(&u, 0, sizeof u);
  return u;
}

json scores_json(const CoreScores& s) {
  json j = {{"suite", s.suite},
            {"integer", s.integer},
            {"floating", s.floating},
            {"memory", s.memory},
            {"vector", s.vector},
            {"vector_unit", s.vector_unit},
            {"vector_kernel", s.vector_kernel}};
  if (!s.spread.empty()) j["spread"] = s.spread;
  return j;
}

// Reads a cache file; nullopt with the reason in *why when it is missing, corrupt, or for
// another suite, CPU, kernel or host.
std::optional<HostCalibration> read_cache(const std::string& path, const HostCalibration& here,
                                          std::string* why) {
  int err = 0;
  const auto text = detail::Fs().read_user_file(path, detail::kMaxCacheBytes, &err);
  if (!text) {
    *why = err == ENOENT ? fmt::format("no cached calibration in {} yet: measured", path)
           : err == EINVAL || err == EFBIG
               ? fmt::format("the cached calibration {} {}: measured instead", path,
                             detail::user_file_problem(err, detail::kMaxCacheBytes))
               : detail::sys_message(err, "cannot read the cached calibration", path,
                                     "measured instead");
    return std::nullopt;
  }
  HostCalibration cached;
  try {
    const json j = json::parse(*text);
    if (j.at("edgeprof_host_calibration").get<int>() != kCacheSchema) {
      *why =
          fmt::format("the cached calibration in {} has another schema version: re-measured", path);
      return std::nullopt;
    }
    const json& s = j.at("scores");
    cached.scores.suite = s.at("suite").get<std::string>();
    cached.scores.integer = s.at("integer").get<double>();
    cached.scores.floating = s.at("floating").get<double>();
    cached.scores.memory = s.at("memory").get<double>();
    cached.scores.vector = s.value("vector", 0.0);
    cached.scores.vector_unit = s.value("vector_unit", "");
    cached.scores.vector_kernel = s.value("vector_kernel", "");
    cached.scores.spread = s.value("spread", std::map<std::string, double>{});
    cached.cpu_model = j.at("cpu_model").get<std::string>();
    cached.kernel = j.at("kernel").get<std::string>();
    cached.hostname = j.at("hostname").get<std::string>();
    cached.measured_at = j.at("measured_at").get<std::string>();
    for (double v : {cached.scores.integer, cached.scores.floating, cached.scores.memory}) {
      if (!(v > 0) || !std::isfinite(v)) throw std::runtime_error("a score is not positive");
    }
  } catch (const std::exception& e) {
    *why = fmt::format("the cached calibration in {} is corrupt ({}): re-measured", path, e.what());
    return std::nullopt;
  }
  std::string change =
      cached.scores.suite != here.scores.suite
          ? fmt::format("suite '{}', this is '{}'", cached.scores.suite, here.scores.suite)
          : detail::identity_change({cached.cpu_model, cached.kernel, cached.hostname},
                                    {here.cpu_model, here.kernel, here.hostname});
  if (change.empty() && (cached.scores.vector_kernel != kVectorKernelVersion ||
                         !(cached.scores.vector > 0) || !std::isfinite(cached.scores.vector))) {
    change = fmt::format("vector kernel '{}', this is '{}'", cached.scores.vector_kernel,
                         kVectorKernelVersion);
  }
  if (!change.empty()) {
    *why = fmt::format("the cached calibration in {} is for {}: re-measured", path, change);
    return std::nullopt;
  }
  return cached;
}

// Writes the cache through a temporary file and rename(2), so a reader never sees half a
// file. "" on success, else why not.
std::string write_cache(const std::string& dir, const std::string& path, const HostCalibration& h,
                        const SuiteRun& run) {
  json spread = json::object();
  for (const KernelRuns& k : run.kernels) {
    spread[k.kernel] = {{"min", k.min}, {"max", k.max}, {"runs", k.scores.size()}};
  }
  const json j = {
      {"edgeprof_host_calibration", kCacheSchema},
      {"scores", scores_json(h.scores)},
      {"cpu_model", h.cpu_model},
      {"kernel", h.kernel},
      {"hostname", h.hostname},
      {"measured_at", h.measured_at},
      {"cpu", run.cpu},
      {"suite_seconds", run.seconds},
      {"spread", spread},
      {"measured_by", fmt::format("edgeprof {}, compiled by {}", version(), __VERSION__)}};
  return detail::replace_file(dir, path, j.dump(2) + "\n");
}

// This process's calibration where it could not be cached, by cache file ("" for none), as the
// cache would have held it (whatever SuiteOptions::cpu): each probed device file loaded measured
// the suite again (seconds each), and gave the same device another speed at each load. Never
// destroyed: a thread still in host_calibration() at exit must not find it gone.
std::mutex& uncached_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<std::string, HostCalibration>& uncached() {
  static auto* m = new std::map<std::string, HostCalibration>;
  return *m;
}

}  // namespace

HostCalibration host_calibration(bool remeasure, const SuiteOptions& options) {
  const detail::Fs fs;
  HostCalibration h;
  h.scores.suite = kSuiteVersion;
  const detail::HostIdentity id = detail::host_identity();
  h.cpu_model = id.cpu_model;
  h.kernel = id.kernel;
  h.hostname = id.hostname;
  const std::string dir = detail::host_cache_dir();
  if (!dir.empty()) h.cache_file = detail::join(dir, kCacheName);

  // The cache holds this host's calibration, the suite's with the best vector unit, by which
  // every probed device's speed is divided: another unit's (sse2's vector score is a sixth of
  // avx512f's) cached made every later probed speed that many times too fast.
  const bool own_unit =
      options.vector_unit.empty() || options.vector_unit == vector_units().front();
  if (!own_unit) {
    h.note = fmt::format("measured with the vector unit {}, not this CPU's best ({}): not "
                         "cached{}",
                         options.vector_unit, vector_units().front(),
                         h.cache_file.empty() ? "" : ", and " + h.cache_file + " left as it was");
    h.cache_file.clear();
  } else if (h.cache_file.empty()) {
    h.note = fmt::format("{}: measured, not cached; set EDGEPROF_CACHE_DIR to keep the "
                         "calibration",
                         detail::kNoCacheDir);
  } else if (remeasure) {
    h.note = "re-measured on request";
  } else {
    std::string why;
    if (auto cached = read_cache(h.cache_file, h, &why)) {
      cached->from_cache = true;
      cached->cache_file = h.cache_file;
      return *cached;
    }
    h.note = why;
  }
  const std::string key = h.cache_file;
  if (own_unit && !remeasure) {
    const std::lock_guard lock(uncached_mutex());
    if (auto it = uncached().find(key); it != uncached().end()) {
      HostCalibration earlier = it->second;
      earlier.note = "measured earlier in this process: " + earlier.note;
      return earlier;
    }
  }

  const SuiteRun run = run_suite_detailed(options);
  h.scores = run.scores;
  h.measured_at = detail::utc_now();
  bool kept = false;
  if (!h.cache_file.empty()) {
    const std::string failed = write_cache(dir, h.cache_file, h, run);
    kept = failed.empty();
    if (!kept) h.note += fmt::format("; {}, so it is kept for this process only", failed);
  }
  if (own_unit) {
    const std::lock_guard lock(uncached_mutex());
    if (kept) {
      uncached().erase(key);
    } else {
      uncached()[key] = h;
    }
  }
  return h;
}

// edgeprof-probe.

namespace detail {

ProbeFacts read_probe_facts(const Fs& fs, std::vector<int> cpus, std::string architecture,
                            std::string hostname) {
  ProbeFacts f;
  f.cpus = std::move(cpus);
  f.architecture = std::move(architecture);
  f.hostname = std::move(hostname);
  if (auto meminfo = fs.read(files::kProcMeminfo)) {
    // "MemTotal:  3884356 kB", "SwapTotal:  2029696 kB"
    const auto kib = [&](std::string_view field) -> std::uint64_t {
      const std::size_t at = meminfo->find(field);
      if (at == std::string::npos) return 0;
      return leading_number(std::string_view(*meminfo).substr(at + field.size())).value_or(0) *
             1024;
    };
    f.memory_bytes = kib("MemTotal:");
    f.swap_bytes = kib("SwapTotal:");
  }
  // The device's swap on disk (a Raspberry Pi OS swap file): without it a probed device got
  // none, and a workload that pages on the board was OOM-killed here. zram (a Jetson's by
  // default, a phone's) is compressed RAM: counted as swap on top of MemTotal it would let a
  // workload use more memory than the board has, so it is only said.
  if (auto swaps = fs.read(files::kProcSwaps)) {
    std::uint64_t disk = 0;
    std::string_view text = *swaps;
    text.remove_prefix(std::min(text.find('\n'), text.size()));  // "Filename Type Size ..."
    while (!text.empty()) {
      text.remove_prefix(1);  // the '\n'
      const std::string_view line = text.substr(0, text.find('\n'));
      text.remove_prefix(line.size());
      const std::size_t name_end = line.find_first_of(" \t");
      if (name_end == std::string_view::npos) continue;
      const std::string_view name = line.substr(0, name_end);
      std::string_view rest = trim(line.substr(name_end));
      rest = trim(rest.substr(std::min(rest.find_first_of(" \t"), rest.size())));  // the type
      const std::uint64_t bytes = leading_number(rest).value_or(0) * 1024;
      (name.substr(0, 9) == "/dev/zram" ? f.zram_bytes : disk) += bytes;
    }
    f.swap_bytes = disk;
    f.swap_from_swaps = true;
  }
  f.cpuinfo = parse_cpuinfo(fs.read(files::kProcCpuinfo).value_or(""));
  for (int cpu : f.cpus) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}", cpu);
    auto number = [&fs](const std::string& path) -> std::optional<std::uint64_t> {
      auto text = fs.read(path);
      return text ? leading_number(*text) : std::nullopt;
    };
    // Below 1 MHz (a cpufreq file reading 0) is no clock: unknown, as where there is none.
    std::optional<std::uint64_t> khz = number(dir + "/cpufreq/cpuinfo_max_freq");
    if (khz && *khz < 1000) khz.reset();
    f.max_khz.push_back(khz);
    f.capacity.push_back(number(dir + "/cpu_capacity"));
  }
  return f;
}

namespace {

// What tells CPUs apart: cpu_capacity (the kernel's relative performance, arm64 big.LITTLE),
// then cpuinfo_max_freq. {0, 0} = nothing known.
std::pair<std::uint64_t, std::uint64_t> speed_key(const ProbeFacts& f, std::size_t i) {
  return {i < f.capacity.size() ? f.capacity[i].value_or(0) : 0,
          i < f.max_khz.size() ? f.max_khz[i].value_or(0) : 0};
}

}  // namespace

int fastest_cpu(const ProbeFacts& facts) {
  int best = -1;
  std::pair<std::uint64_t, std::uint64_t> best_key{0, 0};
  for (std::size_t i = 0; i < facts.cpus.size(); ++i) {
    const auto key = speed_key(facts, i);
    if (key == std::pair<std::uint64_t, std::uint64_t>{0, 0}) continue;
    if (best < 0 || key >= best_key) {
      best = facts.cpus[i];
      best_key = key;
    }
  }
  return best;
}

namespace {

const CpuInfoEntry* cpuinfo_of(const CpuInfo& info, int cpu) {
  for (const CpuInfoEntry& e : info.cpus) {
    if (e.processor == cpu) return &e;
  }
  return nullptr;
}

std::optional<std::uint64_t> max_khz_of(const ProbeFacts& f, int cpu) {
  for (std::size_t i = 0; i < f.cpus.size() && i < f.max_khz.size(); ++i) {
    if (f.cpus[i] == cpu) return f.max_khz[i];
  }
  return std::nullopt;
}

// "4x Cortex-A55 @ 1800 MHz + 4x Cortex-A76 @ 2400 MHz": the usable CPUs by model and clock.
std::string layout(const ProbeFacts& f) {
  std::vector<std::pair<std::string, int>> groups;
  for (std::size_t i = 0; i < f.cpus.size(); ++i) {
    const CpuInfoEntry* e = cpuinfo_of(f.cpuinfo, f.cpus[i]);
    std::string label = e ? core_model(*e, f.cpuinfo) : cpu_model(f.cpuinfo);
    if (i < f.max_khz.size() && f.max_khz[i])
      label += fmt::format(" @ {} MHz", *f.max_khz[i] / 1000);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == label; });
    if (it == groups.end()) {
      groups.emplace_back(label, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [label, count] : groups) {
    out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", count, label);
  }
  return out;
}

// Why the suite ran on `cpu`, for the description.
std::string choice(const ProbeFacts& f, int cpu) {
  const int fastest = fastest_cpu(f);
  if (fastest < 0) {
    return fmt::format(
        "the one it started on: neither cpu_capacity nor cpufreq tells the {} "
        "usable CPUs apart",
        f.cpus.size());
  }
  if (fastest != cpu) return {};
  std::size_t equal = 0;
  const auto it = std::find(f.cpus.begin(), f.cpus.end(), fastest);
  const auto best = speed_key(f, static_cast<std::size_t>(it - f.cpus.begin()));
  for (std::size_t i = 0; i < f.cpus.size(); ++i) equal += speed_key(f, i) == best;
  if (equal == 1) return fmt::format("the fastest of the {} usable CPUs", f.cpus.size());
  if (equal == f.cpus.size()) {
    return fmt::format("the {} usable CPUs are alike by cpu_capacity and cpufreq", f.cpus.size());
  }
  return fmt::format("one of the {} fastest of the {} usable CPUs", equal, f.cpus.size());
}

// Where the swap figure came from, after "edgeprof-probe <version>".
std::string swap_source(const ProbeFacts& f) {
  if (!f.swap_from_swaps) {
    return ": /proc/meminfo SwapTotal (/proc/swaps could not be read: zram, compressed RAM, is "
           "counted if the device has any)";
  }
  if (f.zram_bytes == 0) return ": /proc/swaps";
  return fmt::format(": /proc/swaps without zram ({:.0f} MiB of zram, compressed RAM, left out)",
                     double(f.zram_bytes) / 1048576.0);
}

}  // namespace

std::string probe_json(const ProbeFacts& facts, const SuiteRun& run, const std::string& name,
                       const std::string& when) {
  const CpuInfoEntry* ran_on = cpuinfo_of(facts.cpuinfo, run.cpu);
  const std::string model = ran_on ? core_model(*ran_on, facts.cpuinfo) : cpu_model(facts.cpuinfo);
  const auto khz = max_khz_of(facts, run.cpu);

  std::string description =
      fmt::format("probed by edgeprof-probe {} on {}; suite run on CPU {} ({}{})", version(), when,
                  run.cpu, model, khz ? fmt::format(", {} MHz", *khz / 1000) : "");
  if (facts.cpus.size() > 1) {
    const std::string why = choice(facts, run.cpu);
    if (!why.empty()) description += "; " + why;
  }
  if (!facts.cpuinfo.model.empty()) description += "; " + facts.cpuinfo.model;
  if (!vector_unit_warning(facts.cpuinfo, run.scores.vector_unit).empty()) {
    description += "; vector score of scalar code: this probe was built without the CPU's NEON";
  }

  // ordered_json: the file is for people too, so its fields keep the schema's order.
  using ordered = nlohmann::ordered_json;
  ordered cpu = {{"model", model}};
  if (khz) cpu["clock_mhz"] = static_cast<double>(*khz) / 1000.0;
  cpu["architecture"] = facts.architecture;
  const std::string cores_layout = layout(facts);
  if (!cores_layout.empty()) cpu["layout"] = cores_layout;

  const std::string by = fmt::format("edgeprof-probe {}", version());
  ordered j = {
      {"edgeprof_device", 1},
      {"name", name},
      {"description", description},
      {"cores", facts.cpus.size()},
      {"memory", facts.memory_bytes},
      {"swap", facts.swap_bytes},
      {"cpu", cpu},
      {"scores",
       {{"suite", run.scores.suite},
        {"integer", run.scores.integer},
        {"floating", run.scores.floating},
        {"memory", run.scores.memory},
        {"vector", run.scores.vector},
        {"vector_unit", run.scores.vector_unit},
        {"vector_kernel", run.scores.vector_kernel}}},
      {"sources",
       {{"cores", {{"status", "measured"}, {"source", by + ": sched_getaffinity"}}},
        {"memory", {{"status", "measured"}, {"source", by + ": /proc/meminfo MemTotal"}}},
        {"swap",
         {{"status", "measured"},
          {"source", by + swap_source(facts)}}},
        {"cpu", {{"status", "measured"}, {"source", by + ": /proc/cpuinfo"}}},
        {"scores",
         {{"status", "measured"}, {"source", by + ": per-core micro-benchmark suite"}}}}}};
  // How far each kernel's runs spread: a speed from a busy board's scores is said to be unsure.
  if (!run.scores.spread.empty()) j["scores"]["spread"] = run.scores.spread;
  return j.dump(2) + "\n";
}

}  // namespace detail

namespace detail {

std::string vector_unit_warning(const CpuInfo& info, const std::string& vector_unit) {
  if (vector_unit != "generic" || !info.simd) return {};
  // A build with NEON ran scalar code because it was asked to (--vector-unit generic).
  for (const VectorUnit& u : vector_units()) {
    if (std::string_view(u.name) == "neon") return {};
  }
  return "the CPU has NEON (/proc/cpuinfo Features) but this build of edgeprof-probe has none: "
         "its vector score is scalar code's, low by the width NEON gives ncnn and TFLite on this "
         "device; build the probe with NEON (32-bit ARM: -march=armv7-a -mfpu=neon in "
         "CMAKE_CXX_FLAGS) or use a 64-bit OS and the aarch64 build (docs/probe-a-device.md)";
}

std::string probe_device_json(const ProbeOptions& options) {
  const utsname u = uname_or_empty();
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  const detail::ProbeFacts facts =
      detail::read_probe_facts(detail::Fs(), std::move(cpus), u.machine, detail::host_name());
  const std::string name = options.name.empty() ? facts.hostname : options.name;
  // The device files' own rule: a name they would refuse is refused before the suite runs.
  if (const std::string problem = detail::name_problem(name); !problem.empty()) {
    throw DeviceError(fmt::format("the device's name (--name): {}", problem));
  }
  SuiteOptions suite;
  suite.cpu = detail::fastest_cpu(facts);
  if (options.quick) {
    suite.per_kernel = std::chrono::milliseconds(60);
    suite.repeats = 3;
  }
  suite.vector_unit = options.vector_unit;
  suite.progress = options.progress;
  const SuiteRun run = run_suite_detailed(suite);
  if (const std::string warning = vector_unit_warning(facts.cpuinfo, run.scores.vector_unit);
      !warning.empty() && options.progress) {
    options.progress("warning: " + warning);
  }
  return detail::probe_json(facts, run, name, detail::utc_now());
}

}  // namespace detail

}  // namespace edgeprof
