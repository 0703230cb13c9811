// The reference core: parsing 7-Zip's benchmark, measuring and caching this host's rating, and
// the catalog's speeds corrected by it.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/reference.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using Catch::Contains;
using test::has_note;
using test::two_cpu_host;

namespace {

// A program that stands in for 7-Zip: a shell script in `dir` running `body`.
std::string script(const test::FakeTree& dir, const std::string& name, const std::string& body) {
  dir.file("/" + name, "#!/bin/sh\n" + body + "\n");
  const std::string path = dir.root() + "/" + name;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) return c;
  }
  FAIL("no CPU in this thread's affinity");
  return -1;
}

}  // namespace

TEST_CASE("7-Zip's benchmark output: the total rating and its halves", "[reference][parse]") {
  const SevenZipBenchmark z = parse_7zip_benchmark(test::fixture("7zip/7zz-26.02-b-mmt1.txt"));
  CHECK(z.total_mips == 3807);
  CHECK(z.compress_mips == 3580);
  CHECK(z.decompress_mips == 4034);
  CHECK(z.threads == 1);
  CHECK_THAT(z.version, Contains("7-Zip (z) 26.02"));

  const SevenZipBenchmark p =
      parse_7zip_benchmark(test::fixture("7zip/p7zip-16.02-b-mmt1.tail.txt"));
  CHECK(p.total_mips == 3946);
  CHECK(p.compress_mips == 3758);
  CHECK(p.decompress_mips == 4135);
  CHECK_THAT(p.version, Contains("p7zip Version 16.02"));

  // Interrupted before the summary: no rating, and the error says whose output and what ended it.
  std::string cut = test::fixture("7zip/7zz-26.02-b-mmt1.txt");
  cut = cut.substr(0, cut.find("Avr:"));
  CHECK_THROWS_WITH(parse_7zip_benchmark(cut, "/usr/bin/7zz b -mmt1"),
                    Contains("/usr/bin/7zz b -mmt1") && Contains("\"Tot:\"") &&
                        Contains("25:"));
  CHECK_THROWS_WITH(parse_7zip_benchmark("Tot:  100  0  0\n"), Contains("no \"Tot:\" line"));

  // A thread count past an int is no count (once INT_MIN, undefined behaviour: tests/run-fuzz.sh).
  const SevenZipBenchmark huge = parse_7zip_benchmark(
      "7-Zip 26.02 Benchmark threads: 3" + std::string(120, '3') + "\nTot:  100  100  3800\n");
  CHECK(huge.threads == 0);
  CHECK(huge.total_mips == 3800);
}

TEST_CASE("the catalog's speeds are relative to the reference core, corrected by this host's "
          "cached 7-Zip rating",
          "[reference][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const Device pi = find_device("raspberry-pi-4");
  REQUIRE(pi.reference_speed);
  CHECK(*pi.reference_speed == 0.373);

  // Not measured: the speed is the reference speed as it is, and the device and plan say so.
  std::string why;
  CHECK_FALSE(cached_reference_rating(&why));
  CHECK_THAT(why, Contains("not measured yet") && Contains(cache.root()));
  CHECK(pi.reference_uncorrected());
  CHECK(pi.core_speed == 0.373);
  CHECK_THAT(pi.sources.at("core_speed").source,
             Contains("uncorrected") && Contains("calibrate-host --reference"));
  CHECK(has_note(plan_emulation(pi, two_cpu_host()), "calibrate-host --reference"));
  const std::vector<Device>& before = catalog_devices();
  Device mine;
  mine.name = "mine";
  mine.cores = 1;
  mine.memory_bytes = 64ull << 20;
  apply_reference_speed(mine, 0.5);
  CHECK(mine.core_speed == 0.5);
  CHECK(mine.reference_uncorrected());
  CHECK_THAT(mine.sources.at("core_speed").source, Contains("calibrate-host --reference"));

  // Measured (7-Zip's output as captured here: 3807 MIPS) and cached.
  const test::FakeTree bin;
  const int cpu = first_allowed_cpu();
  ReferenceOptions options;
  options.program =
      script(bin, "7zz", "cat '" + std::string(EDGEPROF_FIXTURES) + "/7zip/7zz-26.02-b-mmt1.txt'");
  options.cpu = cpu;
  const ReferenceRating r = measure_reference_rating(options);
  CHECK(r.host_mips == 3807);
  CHECK(r.cpu == cpu);
  CHECK(r.speed() == Approx(3807.0 / 4448.0));
  CHECK(r.cache_file == cache.root() + "/host-reference.json");
  CHECK(r.note.empty());
  CHECK_THAT(r.command, Contains("7zz b -mmt1"));
  CHECK_THAT(describe(r), Contains("3807 MIPS") && Contains("0.856 of the reference core"));
  const auto cached = cached_reference_rating();
  REQUIRE(cached);
  CHECK(cached->host_mips == 3807);

  // The catalog follows: 0.373 of the reference core is 0.436 of this host's.
  const Device corrected = find_device("raspberry-pi-4");
  CHECK(corrected.core_speed == Approx(0.373 * 4448.0 / 3807.0));
  REQUIRE(corrected.host_reference_speed);
  CHECK(*corrected.host_reference_speed == Approx(3807.0 / 4448.0));
  CHECK_FALSE(corrected.reference_uncorrected());
  CHECK_THAT(corrected.sources.at("core_speed").source, Contains("3807 MIPS by 7-Zip"));
  CHECK_FALSE(has_note(plan_emulation(corrected, two_cpu_host()), "calibrate-host --reference"));
  CHECK(parse_device_json(device_to_json(corrected), "x") == [&] {
    Device d = corrected;
    d.origin = "x";
    return d;
  }());
  CHECK(before.front().reference_uncorrected());  // an earlier catalog stays readable

  // A device of one's own, given relative to the reference core, follows too; a host speed
  // given by the caller wins over the cached one; the source is the caller's when it has one.
  mine.sources.clear();
  apply_reference_speed(mine, 0.5);
  CHECK(mine.core_speed == Approx(0.5 * 4448.0 / 3807.0));
  CHECK_FALSE(mine.reference_uncorrected());
  CHECK_THAT(mine.sources.at("core_speed").source, Contains("3807 MIPS by 7-Zip"));
  mine.sources["core_speed"] = {"measured", "my own benchmark"};
  apply_reference_speed(mine, 0.4, 0.8);
  CHECK(mine.core_speed == Approx(0.5));
  CHECK(*mine.host_reference_speed == 0.8);
  CHECK(mine.sources.at("core_speed").source == "my own benchmark");
  CHECK_THROWS_AS(apply_reference_speed(mine, -0.5), DeviceError);
  CHECK_THROWS_WITH(apply_reference_speed(mine, -0.5),
                    Contains("reference_speed -0.5 is not a positive number"));
  CHECK_THROWS_WITH(apply_reference_speed(mine, 0.5, std::nan("")),
                    Contains("host_reference_speed nan is not a speed"));
  CHECK(mine.core_speed == Approx(0.5));  // unchanged by a failed call

  // A rating of another host is not used.
  {
    std::string text = cache.read("/host-reference.json");
    const std::string key = "\"hostname\": \"";
    text.insert(text.find(key) + key.size(), "elsewhere-");
    cache.file("/host-reference.json", text);
  }
  CHECK_FALSE(cached_reference_rating(&why));
  CHECK_THAT(why, Contains("host name") && Contains("elsewhere-"));
  CHECK(find_device("raspberry-pi-4").reference_uncorrected());

  // Other arguments rate differently: measured, not cached.
  options.arguments = {"b", "-mmt1", "-md18"};
  const ReferenceRating quick = measure_reference_rating(options);
  CHECK(quick.cache_file.empty());
  CHECK_THAT(quick.note, Contains("not cached"));
  CHECK_FALSE(cached_reference_rating());
}

TEST_CASE("measure_reference_rating pins 7-Zip to one CPU and reports its failures",
          "[reference]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const int cpu = first_allowed_cpu();
  cpu_set_t mine;
  REQUIRE(::sched_getaffinity(0, sizeof mine, &mine) == 0);

  ReferenceOptions options;
  options.cpu = cpu;
  // Failing: its exit status and the end of its output, which shows where it ran.
  options.program = script(bin, "failing",
                           "grep Cpus_allowed_list /proc/self/status; echo 'ERROR: no memory' "
                           ">&2; exit 3");
  CHECK_THROWS_WITH(measure_reference_rating(options),
                    Contains("exit status 3") && Contains("ERROR: no memory") &&
                        Contains("Cpus_allowed_list:\t" + std::to_string(cpu) + "\n"));
  cpu_set_t after;
  REQUIRE(::sched_getaffinity(0, sizeof after, &after) == 0);
  CHECK(CPU_EQUAL(&mine, &after));  // the caller's affinity is restored

  options.program = script(bin, "silent", "echo 'Dict Speed'");
  CHECK_THROWS_WITH(measure_reference_rating(options), Contains("no \"Tot:\" line"));
  options.program = script(bin, "slow", "exec sleep 30");
  options.timeout = std::chrono::seconds(1);
  CHECK_THROWS_WITH(measure_reference_rating(options), Contains("longer than 1 s"));
  // A progress callback that throws (Ctrl-C in Python does) leaves no process behind. The first
  // progress line during the run comes after 10 s.
  options.timeout = std::chrono::seconds(60);
  options.program = script(bin, "sleepy", "echo $$ > '" + bin.root() + "/pid'; exec sleep 30");
  options.progress = [&bin](const std::string& line) {
    if (line.find("running:") == std::string::npos) return;
    // Interrupted once the script has written its pid (an event: however long a shell takes to
    // start on a loaded machine), so the test knows which process must be gone.
    test::eventually([&bin] {
      const std::string pid = bin.read("/pid");
      return !pid.empty() && pid.back() == '\n';
    });
    throw std::runtime_error("interrupted");
  };
  CHECK_THROWS_WITH(measure_reference_rating(options), Contains("interrupted"));
  const pid_t sleepy = std::stoi(bin.read("/pid"));
  CHECK(::kill(sleepy, 0) == -1);  // killed and reaped: no such process
  CHECK(errno == ESRCH);
  options.progress = nullptr;
  options.program = bin.root() + "/no-such-7z";
  CHECK_THROWS_WITH(measure_reference_rating(options),
                    Contains("no-such-7z") && Contains("install 7-Zip"));
  {
    test::ScopedEnv path("PATH", bin.root());
    CHECK_THROWS_WITH(measure_reference_rating(), Contains("7zz, 7z and 7za") &&
                                                      Contains("apt-get install 7zip"));
  }
  CHECK_FALSE(cached_reference_rating());  // nothing failed was cached
}

TEST_CASE("this host's real 7-Zip rating", "[reference][slow]") {
  const char* names[] = {"7zz", "7z", "7za"};
  bool found = false;
  for (const char* n : names) {
    found = found || std::system(("command -v " + std::string(n) + " >/dev/null").c_str()) == 0;
  }
  if (!found) {
    WARN("no 7-Zip on PATH: the real benchmark is not run (CI installs Debian's 7zip)");
    return;
  }
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const ReferenceRating r = measure_reference_rating();
  // A rating parsed from 7-Zip's own output. (Its value is this host's speed under its load at
  // the time: a figure, not something a test can bound.)
  CHECK(r.host_mips > 0);
  CHECK(r.seconds > 1);  // 7-Zip's benchmark runs for seconds; load only makes it longer
  CHECK_FALSE(r.version.empty());
  REQUIRE(cached_reference_rating());
  CHECK(cached_reference_rating()->host_mips == r.host_mips);
  WARN(describe(r));
}
