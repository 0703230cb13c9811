// The per-core micro-benchmark suite: kernels and checksums, speed_from_scores, the cpuinfo
// parser on captured and hand-written /proc/cpuinfo files, the host calibration cache, the
// probe's device file, and edgeprof-probe inside a slice at half speed.
#include <sched.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "edgeprof/edgeprof.hpp"
#include "edgeprof/microbench.hpp"
#include "sys/fs.hpp"
#include "helpers.hpp"
#include "suite/microbench_detail.hpp"

using namespace edgeprof;
using namespace edgeprof::detail;
using edgeprof::test::can_create_slices;
using edgeprof::test::FakeTree;
using edgeprof::test::fixture;
using nlohmann::json;

namespace {

// Short runs: the tests check behaviour, not speed.
SuiteOptions quick_suite() {
  SuiteOptions o;
  o.per_kernel = std::chrono::milliseconds(20);
  o.repeats = 1;
  return o;
}

CoreScores scores(double integer, double floating, double memory,
                  std::string suite = kSuiteVersion) {
  CoreScores s;
  s.suite = std::move(suite);
  s.integer = integer;
  s.floating = floating;
  s.memory = memory;
  return s;
}

std::vector<int> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace

// Kernels and checksums.

TEST_CASE("the integer kernel's checksum is the known value", "[microbench]") {
  CHECK(integer_unit(kIntegerSeed) == kIntegerChecksum);
  CHECK(integer_unit(kIntegerSeed) == integer_unit(kIntegerSeed));
  CHECK(integer_unit(kIntegerSeed + 1) != kIntegerChecksum);
}

TEST_CASE("the floating-point kernel's checksum is the known value", "[microbench]") {
  const FloatingChecksum c = floating_unit(kFloatingSeed);
  CHECK(c.exact == kFloatingExact);  // bit-exact: sums of multiples of 1/64
  CHECK(c.approx == Approx(kFloatingApprox).epsilon(1e-12));
  CHECK(floating_ok(c));
  CHECK_FALSE(floating_ok(floating_unit(kFloatingSeed + 1)));
  FloatingChecksum off = c;
  off.approx *= 1 + 1e-6;
  CHECK_FALSE(floating_ok(off));
}

TEST_CASE("the memory kernel follows one cycle through every line", "[microbench]") {
  const ChaseBuffer buffer(std::size_t{1} << 20, kChaseSeed);
  REQUIRE(buffer.lines() == (std::size_t{1} << 20) / 64);
  CHECK(buffer.digest(16) == kChaseDigest1MiB);
  const std::uint32_t start = buffer.line_at(0);
  CHECK(buffer.chase(start, buffer.lines()) == start);  // one cycle, back at the start
  CHECK(buffer.chase(start, 1000) == buffer.line_at(1000));
  CHECK(buffer.chase(buffer.line_at(1000), buffer.lines() + 5) == buffer.line_at(1005));
  // No shorter cycle: the first lines.size() - 1 steps never come back.
  std::uint32_t line = start;
  std::size_t back = 0;
  for (std::size_t i = 1; i < buffer.lines(); ++i) {
    line = buffer.chase(line, 1);
    back += line == start;
  }
  CHECK(back == 0);
}

TEST_CASE("every vector unit of this CPU computes the vector kernel's exact checksum",
          "[microbench]") {
  const VectorData data(kVectorSeed);
  // Pinned: the generator, the values and the reference sums are the same on every platform.
  CHECK(data.panel_sum(0) == 348.5);
  CHECK(data.panel_sum(1) == 163.875);
  CHECK(data.panel_sum(2) == 165.25);
  CHECK(data.panel_sum(3) == 174.8125);
  CHECK(data.expected(0, 4) == 348.5 + 163.875 + 165.25 + 174.8125);
  CHECK(data.expected(3, 2) == 174.8125 + 348.5);
  CHECK(data.expected(5, 0) == 0);
  const std::vector<VectorUnit> units = edgeprof::detail::vector_units();
  REQUIRE_FALSE(units.empty());
#if defined(__x86_64__)
  CHECK(std::string(units.back().name) == "sse2");  // the baseline of every x86-64 CPU
#elif defined(__aarch64__)
  CHECK(std::string(units.back().name) == "neon");
#endif
  std::vector<std::string> names;
  for (const VectorUnit& unit : units) {
    INFO(unit.name);
    names.emplace_back(unit.name);
    CHECK(32 % (2 * unit.lanes) == 0);
    // Exact whatever the order of summation and fused or not: any first unit, any count.
    for (const auto& [first, count] : {std::pair<std::uint64_t, std::uint64_t>{0, 1},
                                       {1, 3},
                                       {2, 4},
                                       {7, 101},
                                       {1u << 20, 9}}) {
      CHECK(unit.run(data, first, count) == data.expected(first, count));
    }
  }
  CHECK(edgeprof::vector_units() == names);
}

TEST_CASE("median of the timed runs", "[microbench]") {
  CHECK(detail::median({}) == 0);
  CHECK(detail::median({3}) == 3);
  CHECK(detail::median({5, 1, 3}) == 3);
  CHECK(detail::median({4, 1, 3, 2}) == 2.5);
}

// speed_from_scores.

TEST_CASE("speed_from_scores is the geometric mean of the three ratios", "[microbench]") {
  const CoreScores host = scores(1000, 400, 10);
  CHECK(speed_from_scores(host, host) == Approx(1.0));
  CHECK(speed_from_scores(scores(500, 200, 5), host) == Approx(0.5));
  // 0.5 * 0.25 * 1 = 0.125, whose cube root is 0.5.
  CHECK(speed_from_scores(scores(500, 100, 10), host) == Approx(0.5));
  // 2 * 0.5 * 0.125 = 0.125 as well.
  CHECK(speed_from_scores(scores(2000, 200, 1.25), host) == Approx(0.5));
  CHECK(speed_from_scores(host, scores(500, 200, 5)) == Approx(2.0));
}

TEST_CASE("speed_from_scores refuses other suites and scores that are not positive",
          "[microbench]") {
  const CoreScores host = scores(1000, 400, 10);
  SECTION("another suite version") {
    const CoreScores old = scores(500, 200, 5, "edgeprof-suite-0");
    CHECK_THROWS_AS(speed_from_scores(old, host), DeviceError);
    CHECK_THROWS_WITH(speed_from_scores(old, host), Catch::Contains("edgeprof-suite-0") &&
                                                        Catch::Contains(kSuiteVersion) &&
                                                        Catch::Contains("run edgeprof-probe"));
  }
  SECTION("a zero, negative or missing score") {
    CHECK_THROWS_WITH(
        speed_from_scores(scores(500, 0, 5), host),
        Catch::Contains("device's floating score is 0") && Catch::Contains("edgeprof-probe"));
    CHECK_THROWS_AS(speed_from_scores(scores(-1, 200, 5), host), DeviceError);
    CHECK_THROWS_AS(speed_from_scores(scores(500, 200, NAN), host), DeviceError);
    CHECK_THROWS_WITH(
        speed_from_scores(host, scores(500, 200, 0)),
        Catch::Contains("host's memory score") && Catch::Contains("edgeprof calibrate-host"));
  }
}

// /proc/cpuinfo.

TEST_CASE("cpuinfo of an x86 host (captured)", "[microbench]") {
  const CpuInfo info = parse_cpuinfo(fixture("cpuinfo/x86_64-amd-epyc"));
  REQUIRE(info.cpus.size() == 2);
  CHECK(info.cpus[1].processor == 1);
  CHECK(info.cpus[0].model_name == "AMD EPYC");
  CHECK_FALSE(info.cpus[0].implementer);
  CHECK(cpu_model(info) == "AMD EPYC");
}

TEST_CASE("cpuinfo of ARM boards names the core, not the generic model name", "[microbench]") {
  SECTION("Raspberry Pi 4, arm64 kernel: no model name at all") {
    const CpuInfo info = parse_cpuinfo(fixture("cpuinfo/aarch64-raspberry-pi-4"));
    REQUIRE(info.cpus.size() == 4);
    CHECK(info.cpus[3].processor == 3);
    CHECK(info.cpus[0].implementer == 0x41u);
    CHECK(info.cpus[0].part == 0xd08u);
    CHECK(cpu_model(info) == "Cortex-A72");
    CHECK(info.model == "Raspberry Pi 4 Model B Rev 1.4");
    CHECK(info.hardware == "BCM2835");
  }
  SECTION("Jetson Nano: 'ARMv8 Processor rev 1 (v8l)' is not a model") {
    const CpuInfo info = parse_cpuinfo(fixture("cpuinfo/aarch64-jetson-nano"));
    REQUIRE(info.cpus.size() == 4);
    CHECK(info.cpus[0].model_name == "ARMv8 Processor rev 1 (v8l)");
    CHECK(cpu_model(info) == "Cortex-A57");
  }
  SECTION("Raspberry Pi 3, 32-bit kernel") {
    const CpuInfo info = parse_cpuinfo(fixture("cpuinfo/armv7-raspberry-pi-3"));
    REQUIRE(info.cpus.size() == 4);
    CHECK(cpu_model(info) == "Cortex-A53");
    CHECK(info.model == "Raspberry Pi 3 Model B Rev 1.2");
  }
  SECTION("an ARM kernel before 3.8: the CPU's fields once, after every processor") {
    // Read as the last CPU's, they made "1x ARMv7 Processor rev 4 (v7l) + 1x Cortex-A7".
    const CpuInfo info = parse_cpuinfo(fixture("cpuinfo/armv7-allwinner-a20-linux-3.4"));
    REQUIRE(info.cpus.size() == 2);
    CHECK(core_model(info.cpus[0], info) == "Cortex-A7");
    CHECK(core_model(info.cpus[1], info) == "Cortex-A7");
    CHECK(cpu_model(info) == "Cortex-A7");
    CHECK(info.hardware == "sun7i");
  }
  SECTION("a big.LITTLE phone: each kind of core with its count") {
    const CpuInfo info = parse_cpuinfo(fixture("cpuinfo/aarch64-snapdragon-865"));
    REQUIRE(info.cpus.size() == 8);
    CHECK(info.legacy_processor == "AArch64 Processor rev 14 (aarch64)");
    CHECK(info.hardware == "Qualcomm Technologies, Inc SM8250");
    CHECK(core_model(info.cpus[0], info) == "Qualcomm Kryo 4xx Silver");
    CHECK(core_model(info.cpus[7], info) == "Cortex-A77");
    CHECK(cpu_model(info) == "4x Qualcomm Kryo 4xx Silver + 4x Cortex-A77");
  }
}

TEST_CASE("cpuinfo: unknown parts, odd text", "[microbench]") {
  CHECK(cpu_model(parse_cpuinfo("")) == "unknown");
  CHECK(cpu_model(parse_cpuinfo("garbage\n\n:::\n")) == "unknown");
  // Unknown ARM part without a model name: the raw IDs, so two such devices stay apart.
  CHECK(cpu_model(parse_cpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd99\n")) ==
        "unknown (CPU implementer 0x41, part 0xd99)");
  // Unknown part with a model name: the model name.
  CHECK(cpu_model(parse_cpuinfo("processor : 0\r\nmodel name : Some CPU\r\nCPU implementer : "
                                "0x99\r\nCPU part : 0x001\r\n")) == "Some CPU");
  // Only the old global "Processor" line.
  CHECK(cpu_model(parse_cpuinfo("Processor\t: ARMv6-compatible processor rev 7 (v6l)\n")) ==
        "ARMv6-compatible processor rev 7 (v6l)");
  CHECK(arm_core_name(0x51, 0x123) == "Qualcomm part 0x123");
  CHECK(arm_core_name(0x42, 0x123).empty());
  const std::pair<unsigned, const char*> parts[] = {
      {0xd03, "Cortex-A53"}, {0xd05, "Cortex-A55"},  {0xd07, "Cortex-A57"},  {0xd08, "Cortex-A72"},
      {0xd09, "Cortex-A73"}, {0xd0a, "Cortex-A75"},  {0xd0b, "Cortex-A76"},  {0xd41, "Cortex-A78"},
      {0xd44, "Cortex-X1"},  {0xd46, "Cortex-A510"}, {0xd47, "Cortex-A710"}, {0xd4d, "Cortex-A715"},
      {0xd4e, "Cortex-X3"},  {0xd80, "Cortex-A520"}, {0xd81, "Cortex-A720"}};
  for (const auto& [part, name] : parts) {
    INFO(part);
    CHECK(arm_core_name(0x41, part) == name);
  }
}

// The suite.

TEST_CASE("run_suite gives positive scores with a bounded spread", "[microbench]") {
  const std::vector<int> before = affinity();
  std::vector<std::string> lines;
  SuiteOptions options;
  options.per_kernel = std::chrono::milliseconds(100);
  options.repeats = 5;
  options.progress = [&lines](const std::string& line) { lines.push_back(line); };
  const SuiteRun run = run_suite_detailed(options);
  CHECK(affinity() == before);  // pinned for the suite only
  CHECK(std::find(before.begin(), before.end(), run.cpu) != before.end());
  CHECK(run.scores.suite == kSuiteVersion);
  REQUIRE(run.kernels.size() == 4);
  CHECK(run.kernels[0].kernel == "integer");
  CHECK(run.kernels[3].kernel == "vector");
  CHECK(run.scores.integer == run.kernels[0].median);
  CHECK(run.scores.floating == run.kernels[1].median);
  CHECK(run.scores.memory == run.kernels[2].median);
  CHECK(run.scores.vector == run.kernels[3].median);
  // The best unit of this CPU, as an inference library would pick.
  CHECK(run.scores.vector_unit == edgeprof::vector_units().front());
  CHECK(run.scores.vector_kernel == kVectorKernelVersion);
  CHECK(lines.size() == 6);
  CHECK_THAT(lines[4], Catch::Contains("GFLOP/s (" + run.scores.vector_unit + ")"));
  for (const KernelRuns& k : run.kernels) {
    INFO(k.kernel << ": median " << k.median << ", min " << k.min << ", max " << k.max);
    CHECK(k.scores.size() == 5);
    CHECK(k.units > 0);
    CHECK(k.min > 0);
    CHECK(k.min <= k.median);
    CHECK(k.median <= k.max);
    // (How far apart the repeats are is the host's load as much as the suite's: measured in
    // docs/probe-a-device.md, not bounded here.)
  }
  CHECK(run.seconds > 0);
}

TEST_CASE("run_suite refuses bad options and a CPU it may not use", "[microbench]") {
  SuiteOptions options = quick_suite();
  options.repeats = 0;
  CHECK_THROWS_WITH(run_suite(options), Catch::Contains("repeats = 0"));
  options = quick_suite();
  options.per_kernel = std::chrono::milliseconds(0);
  CHECK_THROWS_WITH(run_suite(options), Catch::Contains("per_kernel"));
  const std::vector<int> before = affinity();
  options = quick_suite();
  options.cpu = CPU_SETSIZE - 1;
  CHECK_THROWS_WITH(run_suite(options),
                    Catch::Contains("cannot pin to CPU 1023") && Catch::Contains("taskset"));
  CHECK(affinity() == before);
  options.cpu = CPU_SETSIZE;  // was "cannot tell which CPU this thread runs on: Success"
  CHECK_THROWS_WITH(run_suite(options),
                    Catch::Contains("cannot pin to CPU 1024") && Catch::Contains("below 1024"));
  CHECK(affinity() == before);
  options = quick_suite();
  options.vector_unit = "avx9000";
  CHECK_THROWS_WITH(run_suite(options),
                    Catch::Contains("vector unit 'avx9000'") &&
                        Catch::Contains(edgeprof::vector_units().back()));
}

// The host calibration cache.

TEST_CASE("the calibration cache directory follows EDGEPROF_CACHE_DIR, then XDG, then HOME",
          "[microbench]") {
  CHECK(calibration_cache_dir("/c", "/x", "/h") == "/c");
  CHECK(calibration_cache_dir("", "/x", "/h") == "/x/edgeprof");
  CHECK(calibration_cache_dir(nullptr, "relative", "/h") == "/h/.cache/edgeprof");
  CHECK(calibration_cache_dir(nullptr, nullptr, "/h/") == "/h/.cache/edgeprof");
  CHECK(calibration_cache_dir(nullptr, nullptr, nullptr).empty());
  // A relative XDG_CACHE_HOME is ignored, as the XDG specification says: the reason given
  // called it unset.
  test::ScopedEnv own("EDGEPROF_CACHE_DIR", "");
  test::ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");
  test::ScopedEnv home("HOME", "");
  std::string why;
  CHECK_FALSE(cached_nn_rating(&why));
  CHECK_THAT(why, Catch::Contains("XDG_CACHE_HOME is unset or not an absolute path"));
}

TEST_CASE("a relative EDGEPROF_CACHE_DIR stays where it was when the working directory changes",
          "[microbench]") {
  // Taken as is, it moved with every chdir (os.chdir in a notebook): every rating measured
  // again, a minute each.
  FakeTree tmp;
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(tmp.root());
  struct Back {
    std::filesystem::path to;
    ~Back() { std::filesystem::current_path(to); }
  } back{before};
  test::ScopedEnv own("EDGEPROF_CACHE_DIR", "edgeprof-relative-cache-test/./x");
  const std::string first = host_cache_dir();
  CHECK(first == tmp.root() + "/edgeprof-relative-cache-test/x");
  std::filesystem::current_path("/");
  CHECK(host_cache_dir() == first);
}

TEST_CASE("a cache file written by two threads at once is always one of them, whole",
          "[microbench]") {
  // The temporary file was named by the process: two threads truncated each other's, a reader
  // found the cache empty or mixed, and the second rename failed ("not cached").
  FakeTree tmp;
  const std::string dir = tmp.root() + "/cache", path = dir + "/host-nn.json";
  const std::string a(64 * 1024, 'a'), b(64 * 1024, 'b');
  REQUIRE(replace_file(dir, path, a).empty());
  std::atomic<int> failures{0}, bad_reads{0};
  std::atomic<bool> writing{true};
  const auto writer = [&](const std::string& text) {
    for (int i = 0; i < 50; ++i) {
      if (!replace_file(dir, path, text).empty()) ++failures;
    }
  };
  std::thread reader([&] {
    while (writing.load()) {
      const std::string got = FakeTree::slurp(path);
      if (got != a && got != b) ++bad_reads;
    }
  });
  std::thread first(writer, std::cref(a)), second(writer, std::cref(b));
  first.join();
  second.join();
  writing.store(false);
  reader.join();
  CHECK(failures.load() == 0);
  CHECK(bad_reads.load() == 0);
  // No temporary file is left behind.
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  const mode_t mask = ::umask(0);  // (no other thread runs now)
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0644 & ~mask));  // as open(0644) gave: mkstemp's is 0600
}

TEST_CASE("host_calibration measures once, then reads the cache", "[microbench]") {
  FakeTree tmp;
  const std::string dir = tmp.root() + "/cache/sub";  // created on demand
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", dir);
  const std::string file = dir + "/host-calibration.json";

  const HostCalibration first = host_calibration(false, quick_suite());
  CHECK_FALSE(first.from_cache);
  CHECK(first.cache_file == file);
  CHECK_THAT(first.note, Catch::Contains("no cached calibration"));
  CHECK(first.scores.suite == kSuiteVersion);
  CHECK(first.scores.integer > 0);
  CHECK(first.cpu_model == cpu_model(parse_cpuinfo(FakeTree::slurp("/proc/cpuinfo"))));
  CHECK_FALSE(first.kernel.empty());
  CHECK(first.measured_at.size() == 20);  // 2025-01-31T12:00:00Z
  REQUIRE(std::filesystem::exists(file));
  CHECK_FALSE(std::filesystem::exists(file + "." + std::to_string(::getpid()) + ".tmp"));

  const HostCalibration second = host_calibration(false, quick_suite());
  CHECK(second.from_cache);
  CHECK(second.note.empty());
  CHECK(second.scores == first.scores);
  CHECK(second.measured_at == first.measured_at);
  CHECK(second.cpu_model == first.cpu_model);

  SECTION("remeasure measures and rewrites") {
    const HostCalibration again = host_calibration(true, quick_suite());
    CHECK_FALSE(again.from_cache);
    CHECK(again.note == "re-measured on request");
    const HostCalibration after = host_calibration(false, quick_suite());
    CHECK(after.from_cache);
    CHECK(after.scores == again.scores);
  }
  SECTION("another vector unit's scores are neither cached nor read from the cache") {
    const auto units = edgeprof::vector_units();
    if (units.size() > 1) {
      SuiteOptions other = quick_suite();
      other.vector_unit = units.back();  // sse2 here: not this CPU's best
      const HostCalibration slower = host_calibration(false, other);
      CHECK_FALSE(slower.from_cache);
      CHECK(slower.cache_file.empty());
      CHECK(slower.scores.vector_unit == units.back());
      CHECK_THAT(slower.note, Catch::Contains(units.back()) && Catch::Contains("not cached"));
      CHECK_FALSE(host_calibration(true, other).from_cache);
      // The cache still holds the best unit's (it held the last call's unit, whatever it was).
      const HostCalibration after = host_calibration(false, quick_suite());
      CHECK(after.from_cache);
      CHECK(after.scores == first.scores);
      CHECK(after.scores.vector_unit == units.front());
    }
  }
  SECTION("a corrupt file is re-measured and rewritten") {
    std::ofstream(file) << "{\"edgeprof_host_calibration\": 1, \"scores\": ";
    const HostCalibration fixed = host_calibration(false, quick_suite());
    CHECK_FALSE(fixed.from_cache);
    CHECK_THAT(fixed.note, Catch::Contains("corrupt") && Catch::Contains(file));
    CHECK(host_calibration(false, quick_suite()).from_cache);
  }
  SECTION("a negative score is corrupt too") {
    json j = json::parse(FakeTree::slurp(file));
    j["scores"]["memory"] = -1;
    std::ofstream(file) << j.dump();
    CHECK_THAT(host_calibration(false, quick_suite()).note, Catch::Contains("corrupt"));
  }
  SECTION("another kernel, CPU or suite is re-measured") {
    json j = json::parse(FakeTree::slurp(file));
    j["kernel"] = "2.6.32-old";
    std::ofstream(file) << j.dump();
    const HostCalibration other = host_calibration(false, quick_suite());
    CHECK_FALSE(other.from_cache);
    CHECK_THAT(other.note, Catch::Contains("kernel '2.6.32-old'"));
    j = json::parse(FakeTree::slurp(file));
    j["scores"]["suite"] = "edgeprof-suite-0";
    std::ofstream(file) << j.dump();
    CHECK_THAT(host_calibration(false, quick_suite()).note,
               Catch::Contains("suite 'edgeprof-suite-0'"));
  }
}

TEST_CASE("a cache directory that cannot be created is not fatal", "[microbench]") {
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", "/proc/edgeprof-cannot-be-here");
  const HostCalibration h = host_calibration(false, quick_suite());
  CHECK_FALSE(h.from_cache);
  CHECK(h.scores.integer > 0);
  CHECK_THAT(h.note, Catch::Contains("cannot create the directory") &&
                         Catch::Contains("/proc/edgeprof-cannot-be-here") &&
                         Catch::Contains("for this process only"));
  // Measured once per process: each probed device file loaded measured it again (seconds),
  // and gave the same device another speed at each load.
  const HostCalibration again = host_calibration(false, quick_suite());
  CHECK_FALSE(again.from_cache);
  CHECK(again.scores == h.scores);
  CHECK(again.measured_at == h.measured_at);
  CHECK_THAT(again.note, Catch::StartsWith("measured earlier in this process: ") &&
                             Catch::Contains("cannot create the directory"));
  // Asked to, it measures again, and keeps that.
  const HostCalibration remeasured = host_calibration(true, quick_suite());
  CHECK(host_calibration(false, quick_suite()).scores == remeasured.scores);
}

// edgeprof-probe's device file.

namespace {

// A Raspberry Pi 4's /proc and /sys, with the suite's run made up.
struct FakePi {
  FakeTree tree;
  FakePi() {
    tree.file("/proc/cpuinfo", fixture("cpuinfo/aarch64-raspberry-pi-4"));
    tree.file(files::kProcMeminfo, "MemTotal:        3884356 kB\nMemFree:          123456 kB\n"
                                   "SwapTotal:        614396 kB\nSwapFree:         614396 kB\n");
    // Raspberry Pi OS's swap file (dphys-swapfile's 100 MiB) and a zram device.
    tree.file(files::kProcSwaps,
              "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
              "/var/swap                               file\t\t102396\t\t0\t\t-2\n"
              "/dev/zram0                              partition\t512000\t\t0\t\t100\n");
    for (int c = 0; c < 4; ++c) {
      tree.file("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/cpuinfo_max_freq",
                "1800000\n");
    }
  }
};

SuiteRun made_up_run(int cpu) {
  SuiteRun run;
  run.scores = scores(75000, 30000, 2.5);
  run.scores.vector = 9.5;
  run.scores.vector_unit = "neon";
  run.scores.vector_kernel = kVectorKernelVersion;
  run.scores.spread = {{"integer", 0.05}, {"floating", 0.04}, {"memory", 0.1}, {"vector", 1.7}};
  run.cpu = cpu;
  return run;
}

}  // namespace

TEST_CASE("the probe's device file", "[microbench]") {
  FakePi pi;
  const ProbeFacts facts = read_probe_facts(Fs(pi.tree.root()), {0, 1, 2, 3}, "aarch64", "pi4");
  CHECK(facts.memory_bytes == 3884356ull * 1024);
  // The swap file, not zram (compressed RAM): left out, a probed device had no swap.
  CHECK(facts.swap_bytes == 102396ull * 1024);
  CHECK(facts.zram_bytes == 512000ull * 1024);
  REQUIRE(facts.max_khz.size() == 4);
  CHECK(facts.max_khz[2] == 1800000u);
  CHECK_FALSE(facts.capacity[2]);
  CHECK(fastest_cpu(facts) == 3);  // a tie: the highest number, away from CPU 0's interrupts

  const json j = json::parse(probe_json(facts, made_up_run(3), "my-pi", "2025-01-31T12:00:00Z"));
  CHECK(j.at("edgeprof_device") == 1);
  CHECK(j.at("name") == "my-pi");
  CHECK(j.at("cores") == 4);
  CHECK(j.at("memory") == 3884356ull * 1024);
  CHECK(j.at("swap") == 102396ull * 1024);
  CHECK(j.at("cpu").at("model") == "Cortex-A72");
  CHECK(j.at("cpu").at("clock_mhz") == 1800.0);
  CHECK(j.at("cpu").at("architecture") == "aarch64");
  CHECK(j.at("cpu").at("layout") == "4x Cortex-A72 @ 1800 MHz");
  CHECK(j.at("scores") == json({{"suite", kSuiteVersion},
                                {"integer", 75000.0},
                                {"floating", 30000.0},
                                {"memory", 2.5},
                                {"vector", 9.5},
                                {"vector_unit", "neon"},
                                {"vector_kernel", kVectorKernelVersion},
                                {"spread", {{"floating", 0.04},
                                            {"integer", 0.05},
                                            {"memory", 0.1},
                                            {"vector", 1.7}}}}));
  const std::string description = j.at("description");
  CHECK_THAT(description, Catch::StartsWith(std::string("probed by edgeprof-probe ") + version() +
                                            " on 2025-01-31T12:00:00Z") &&
                              Catch::Contains("CPU 3 (Cortex-A72, 1800 MHz)") &&
                              Catch::Contains("Raspberry Pi 4 Model B Rev 1.4"));
  CHECK_THAT(j.at("sources").at("swap").at("source").get<std::string>(),
             Catch::EndsWith("/proc/swaps without zram (500 MiB of zram, compressed RAM, left "
                             "out)"));
  for (const char* figure : {"cores", "memory", "swap", "cpu", "scores"}) {
    INFO(figure);
    CHECK(j.at("sources").at(figure).at("status") == "measured");
    CHECK_THAT(j.at("sources").at(figure).at("source").get<std::string>(),
               Catch::StartsWith("edgeprof-probe "));
  }
  CHECK(j.size() == 9);  // nothing the schema does not know
  // The file loads as the device the probe saw.
  const Device loaded = parse_device_json(j.dump(), "pi4.json");
  CHECK(loaded.memory_bytes == 3884356ull * 1024);
  CHECK(loaded.swap_bytes == 102396ull * 1024);
  CHECK(loaded.cpu.clock_mhz == 1800.0);

  // A cpufreq file reading 0 (or under 1000 kHz) is no clock: left out, not written as 0,
  // which the loader refused, nor "@ 0 MHz" in the layout.
  FakePi zero;
  for (int c = 0; c < 4; ++c) {
    zero.tree.file("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/cpuinfo_max_freq",
                   "0\n");
  }
  const ProbeFacts no_khz = read_probe_facts(Fs(zero.tree.root()), {0, 1, 2, 3}, "armv7l", "pi");
  const json no_clock = json::parse(probe_json(no_khz, made_up_run(3), "my-pi", "now"));
  CHECK_FALSE(no_clock.at("cpu").contains("clock_mhz"));
  CHECK(no_clock.at("cpu").value("layout", "").find("MHz") == std::string::npos);
  CHECK(no_clock.at("description").get<std::string>().find("0 MHz") == std::string::npos);
  CHECK(parse_device_json(no_clock.dump(), "pi4.json").cpu.clock_mhz == 0);

  // Without /proc/swaps the figure is SwapTotal, zram and all, and says so (it named
  // /proc/swaps, whose zram it says it leaves out).
  FakePi no_swaps;
  std::filesystem::remove(no_swaps.tree.root() + files::kProcSwaps);
  const ProbeFacts total = read_probe_facts(Fs(no_swaps.tree.root()), {0, 1, 2, 3}, "aarch64", "pi");
  CHECK(total.swap_bytes == 614396ull * 1024);
  const json from_total = json::parse(probe_json(total, made_up_run(3), "my-pi", "now"));
  CHECK(from_total.at("swap") == 614396ull * 1024);
  CHECK_THAT(from_total.at("sources").at("swap").at("source").get<std::string>(),
             Catch::Contains("/proc/meminfo SwapTotal") && !Catch::Contains("without zram"));
}

TEST_CASE("a probe built without NEON on a CPU with it says its vector score is scalar code's",
          "[microbench]") {
  const CpuInfo pi3 = parse_cpuinfo(fixture("cpuinfo/armv7-raspberry-pi-3"));
  CHECK(pi3.simd);
  CHECK(parse_cpuinfo(fixture("cpuinfo/aarch64-raspberry-pi-4")).simd);
  CHECK_FALSE(parse_cpuinfo(fixture("cpuinfo/x86_64-amd-epyc")).simd);
  CHECK_FALSE(parse_cpuinfo("processor : 0\nFeatures : half thumb vfp neonx\n").simd);
  CHECK_THAT(vector_unit_warning(pi3, "generic"),
             Catch::Contains("has NEON") && Catch::Contains("-mfpu=neon"));
  CHECK(vector_unit_warning(pi3, "neon").empty());
  CHECK(vector_unit_warning(CpuInfo{}, "generic").empty());  // an ARMv6 without it: no warning

  FakePi pi;
  pi.tree.file("/proc/cpuinfo", fixture("cpuinfo/armv7-raspberry-pi-3"));
  const ProbeFacts facts = read_probe_facts(Fs(pi.tree.root()), {0, 1, 2, 3}, "armv7l", "pi3");
  SuiteRun scalar = made_up_run(3);
  scalar.scores.vector_unit = "generic";
  CHECK_THAT(json::parse(probe_json(facts, scalar, "pi3", "now")).at("description").get<std::string>(),
             Catch::Contains("built without the CPU's NEON"));
  CHECK(json::parse(probe_json(facts, made_up_run(3), "pi3", "now"))
            .at("description")
            .get<std::string>()
            .find("NEON") == std::string::npos);
}

TEST_CASE("the probe runs on the fastest core of a big.LITTLE device", "[microbench]") {
  FakeTree phone;
  phone.file("/proc/cpuinfo", fixture("cpuinfo/aarch64-snapdragon-865"));
  const struct {
    int cpu;
    const char* capacity;
    const char* khz;
  } cores[] = {{0, "261", "1804800"}, {1, "261", "1804800"}, {2, "261", "1804800"},
               {3, "261", "1804800"}, {4, "871", "2419200"}, {5, "871", "2419200"},
               {6, "871", "2419200"}, {7, "1024", "2841600"}};
  for (const auto& c : cores) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c.cpu);
    phone.file(dir + "/cpu_capacity", c.capacity);
    phone.file(dir + "/cpufreq/cpuinfo_max_freq", c.khz);
  }
  ProbeFacts facts =
      read_probe_facts(Fs(phone.root()), {0, 1, 2, 3, 4, 5, 6, 7}, "aarch64", "localhost");
  CHECK(fastest_cpu(facts) == 7);
  const json j = json::parse(probe_json(facts, made_up_run(7), "phone", "2025-01-31T12:00:00Z"));
  CHECK(j.at("cpu").at("model") == "Cortex-A77");
  CHECK(j.at("cpu").at("clock_mhz") == 2841.6);
  CHECK(j.at("cpu").at("layout") ==
        "4x Qualcomm Kryo 4xx Silver @ 1804 MHz + 3x Cortex-A77 @ 2419 MHz + "
        "1x Cortex-A77 @ 2841 MHz");
  CHECK_THAT(j.at("description").get<std::string>(),
             Catch::Contains("CPU 7 (Cortex-A77, 2841 MHz); the fastest of the 8 usable CPUs"));

  // Without cpu_capacity (older kernels) the clock decides; with neither, nothing does.
  facts.capacity.assign(8, std::nullopt);
  CHECK(fastest_cpu(facts) == 7);
  facts.max_khz.assign(8, std::nullopt);
  CHECK(fastest_cpu(facts) == -1);
  const json unknown = json::parse(probe_json(facts, made_up_run(2), "phone", "now"));
  CHECK_THAT(unknown.at("description").get<std::string>(),
             Catch::Contains("CPU 2 (Qualcomm Kryo 4xx Silver); the one it started on"));
  CHECK_FALSE(unknown.at("cpu").contains("clock_mhz"));
}

TEST_CASE("probe_device_json refuses a name a device file cannot hold", "[microbench]") {
  ProbeOptions options;
  options.name = " pi";
  CHECK_THROWS_AS(probe_device_json(options), DeviceError);
  options.name = "a/b";
  CHECK_THROWS_WITH(probe_device_json(options),
                    Catch::Contains("(--name): 'a/b' is not a usable name"));
  // An escape sequence too, which the probe once wrote into a file the loader refuses.
  options.name = "\x1b[31mred";
  CHECK_THROWS_WITH(probe_device_json(options), Catch::Contains("(U+001B)"));
}

// edgeprof-probe under emulation: it runs inside a slice at half the core speed and writes a
// device file with finite, positive scores. (That they come out about half of a full-speed
// slice's is a ratio of two timed runs, which a shared host's load can move either way: the
// benchmarks' business, not a test's.)

namespace {

std::string probe_program() {
  const std::string sibling = edgeprof::test::helper("edgeprof-probe");
  if (std::filesystem::exists(sibling)) return sibling;
#ifdef EDGEPROF_PROBE
  if (std::filesystem::exists(EDGEPROF_PROBE)) return EDGEPROF_PROBE;
#endif
  return {};
}

}  // namespace

TEST_CASE("edgeprof-probe runs in a slice at core_speed 0.5 and writes positive scores",
          "[microbench][kernel]") {
  REQUIRE_CGROUPS();
  if (probe_program().empty()) {
    WARN("skipped: edgeprof-probe was not built (EDGEPROF_BUILD_PROBE=OFF)");
    return;
  }
  FakeTree tmp;
  // 512 MiB: the memory kernel's buffer (128 MiB) with room to spare, and within the VM's memory.
  Slice slice(make_device("probe-half", 1, 0.5, "512MiB"));
  // The slice runs at half speed: its quota is half its period on one CPU.
  CHECK(slice.plan().cpus.size() == 1);
  CHECK(slice.plan().cpu_quota_us * 2 == slice.plan().cpu_period_us);
  const test::KernelBandwidth held = test::kernel_bandwidth(slice.paths());
  CHECK(held.quota_us == slice.plan().cpu_quota_us);
  CHECK(held.period_us == slice.plan().cpu_period_us);
  Command command;
  const std::string out = tmp.root() + "/probe.json";
  // A file of the user's named as the probe's temporary file was once: it stays.
  tmp.file("/probe.json.tmp", "mine\n");
  command.argv = {probe_program(), "--quick", "--name", "under-test", "--output", out};
  command.stderr_stream = Stdio::file(tmp.root() + "/probe.err");
  // The timeout only ends a probe that hangs; --quick takes about a second on the host.
  const Result result = slice.spawn(command).wait(std::chrono::seconds(600));
  INFO(FakeTree::slurp(tmp.root() + "/probe.err"));
  REQUIRE(result.ok());
  CHECK(result.cpu_user_s + result.cpu_system_s > 0);  // it ran inside the slice
  const json j = json::parse(FakeTree::slurp(out));
  // Through a temporary file of its own, renamed: nothing else left beside it.
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp.root())) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"probe.err", "probe.json", "probe.json.tmp"});
  CHECK(FakeTree::slurp(tmp.root() + "/probe.json.tmp") == "mine\n");
  CHECK(j.at("name") == "under-test");
  CHECK(j.at("cores") == 1);  // the slice's cpuset
  const json& s = j.at("scores");
  CHECK(s.at("suite") == kSuiteVersion);
  for (const char* kernel : {"integer", "floating", "memory", "vector"}) {
    INFO(kernel);
    const double score = s.at(kernel).get<double>();
    CHECK(std::isfinite(score));
    CHECK(score > 0);
  }
  // Scores a device file can hold: speed_from_scores and nn_speed_from_scores take them.
  CoreScores probed = scores(s.at("integer"), s.at("floating"), s.at("memory"), s.at("suite"));
  probed.vector = s.at("vector");
  probed.vector_unit = s.at("vector_unit");
  probed.vector_kernel = s.at("vector_kernel");
  CHECK(speed_from_scores(probed, probed) == Approx(1.0));
  CHECK(nn_speed_from_scores(probed, probed).core_speed == Approx(1.0));
}

TEST_CASE("edgeprof-probe refuses an --output it could not write or edgeprof could not read, "
          "before the suite runs",
          "[microbench]") {
  if (probe_program().empty()) {
    WARN("skipped: edgeprof-probe was not built (EDGEPROF_BUILD_PROBE=OFF)");
    return;
  }
  FakeTree tmp;
  const std::string err = tmp.root() + "/probe.err";
  const auto probe = [&](const std::string& output) {
    // Refused at once: the suite (seconds) never runs, so no --quick is needed to be quick.
    const int status = std::system(
        (probe_program() + " --output '" + output + "' 2> '" + err + "'").c_str());
    return std::pair<int, std::string>{WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                       FakeTree::slurp(err)};
  };
  // Read by its extension: a .toml name was read as TOML, a bare name as a device's name.
  for (const std::string name : {"/pi.toml", "/pi4"}) {
    const auto [code, said] = probe(tmp.root() + name);
    CHECK(code == 2);
    CHECK_THAT(said, Catch::Contains("give a file name ending in .json"));
  }
  // A directory that is not there, or a directory where the file would be: found at the end,
  // the measurement lost.
  const auto [code, said] = probe(tmp.root() + "/no/such/dir/pi.json");
  CHECK(code == 2);
  CHECK_THAT(said, Catch::Contains("the directory " + tmp.root() + "/no/such/dir does not exist"));
  std::filesystem::create_directory(tmp.root() + "/taken.json");
  const auto [taken_code, taken_said] = probe(tmp.root() + "/taken.json");
  CHECK(taken_code == 2);
  CHECK_THAT(taken_said, Catch::Contains("is a directory: give the file's name"));
  CHECK_FALSE(std::filesystem::exists(tmp.root() + "/pi.toml"));
}

// A cache path that is a FIFO (or a device) blocked the open for ever; it is refused at once,
// with what to do, and the rating is measured instead.
TEST_CASE("a host cache that is not a regular file is refused, not waited on", "[calibrate]") {
  FakeTree tree;
  const std::string fifo = tree.root() + "/host-nn.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string why;
  CHECK_FALSE(read_host_cache(fifo, "nn rating", &why));
  CHECK(why.find(fifo) != std::string::npos);
  CHECK(why.find("is not a regular file") != std::string::npos);
  why.clear();
  CHECK_FALSE(read_host_cache("/dev/zero", "nn rating", &why));
  CHECK(why.find("is not a regular file") != std::string::npos);
  // Fs::read_user_file itself: too large, and a regular file read whole.
  tree.file("/big", std::string(2048, 'x'));
  int err = 0;
  CHECK_FALSE(Fs(tree.root()).read_user_file("/big", 1024, &err));
  CHECK(err == EFBIG);
  CHECK(user_file_problem(EFBIG, std::size_t(64) << 20) == "is larger than 64 MiB");
  CHECK(Fs(tree.root()).read_user_file("/big", 4096, &err) == std::string(2048, 'x'));
}
