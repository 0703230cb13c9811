// Mutation fuzzing of every parser of outside input (issue 36): cgroup and /proc files, device
// files, reports, calibrations, the runners' and 7-Zip's output, sizes and CPU lists. Each
// target starts from real inputs (the fixtures, and reports and calibrations this library
// writes), mutates them with a fixed seed, and feeds the parser: a parser of kernel text must
// never throw, the others only edgeprof::Error (a clear message), never another exception.
//
// The short form runs in the test command (EDGEPROF_FUZZ_ITERATIONS mutations per target,
// default 300); a longer one: EDGEPROF_FUZZ_ITERATIONS=200000 EDGEPROF_FUZZ_SEED=N
// build/test/tests/edgeprof_tests "[fuzz]". A finding is written to a file named in the
// failure; copy it into tests/fixtures/fuzz/<target>/ to keep it as a regression input, which
// every run replays first.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/parse.hpp"
#include "nn/runtimes.hpp"

using namespace edgeprof;
using edgeprof::test::fixture;

namespace {

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const std::uint64_t n = std::strtoull(v, &end, 10);
  if (*end != '\0') FAIL(name << " must be a whole number, not '" << v << "'");
  return n;
}

// One mutation of `in`: a byte changed, a run deleted or repeated, a number made huge, bytes
// that parsers treat specially, or a cut.
std::string mutate(const std::string& in, std::mt19937_64& rng) {
  std::string s = in;
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  static const char kSpecial[] = {'\0', '\n', '\r', ' ', '\t', '-', '+', '.', '9', '0', 'e',
                                  '"',  '{',  '}',  '[', ']',  ':', ',', '=', '#', '\\', '\xff',
                                  '\x80'};
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // a special byte
        if (!s.empty()) s[pick(s.size())] = kSpecial[pick(sizeof kSpecial)];
        break;
      case 2: {  // delete a run
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(64, s.size() - at)));
        break;
      }
      case 3: {  // repeat a run
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        const std::string run = s.substr(at, 1 + pick(64));
        s.insert(at, run);
        break;
      }
      case 4:  // a long number
        s.insert(pick(s.size() + 1), std::string(1 + pick(400), '9'));
        break;
      case 5:  // cut
        s.resize(pick(s.size() + 1));
        break;
      case 6:  // a negative sign or a decimal point before a digit
        for (std::size_t i = pick(s.size() + 1); i < s.size(); ++i) {
          if (s[i] >= '0' && s[i] <= '9') {
            s.insert(i, pick(2) ? "-" : ".");
            break;
          }
        }
        break;
      default:  // a random byte inserted
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                 static_cast<char>(rng()));
        break;
    }
  }
  return s;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Where a failing input goes, for the report and for keeping.
std::string keep_finding(const std::string& target, const std::string& input) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path =
      (dir / ("edgeprof-fuzz-" + target + "-" + std::to_string(std::hash<std::string>{}(input))))
          .string();
  std::ofstream(path, std::ios::binary) << input;
  return path;
}

enum class Allowed { nothing, edgeprof_errors };

// Feeds `parse` the regression inputs kept for `target`, the seeds, and mutations of them.
void fuzz(const std::string& target, const std::vector<std::string>& seeds,
          const std::function<void(const std::string&)>& parse, Allowed allowed) {
  std::vector<std::string> inputs;
  const std::filesystem::path kept = std::filesystem::path(EDGEPROF_FIXTURES) / "fuzz" / target;
  if (std::filesystem::is_directory(kept)) {
    for (const auto& e : std::filesystem::directory_iterator(kept)) inputs.push_back(read_all(e));
  }
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  // FNV-1a of the target's name: the same mutations with every standard library.
  std::uint64_t name_hash = 14695981039346656037ull;
  for (unsigned char ch : target) name_hash = (name_hash ^ ch) * 1099511628211ull;
  std::mt19937_64 rng(env_number("EDGEPROF_FUZZ_SEED", 36) ^ name_hash);
  const std::uint64_t iterations = env_number("EDGEPROF_FUZZ_ITERATIONS", 300);
  for (std::uint64_t i = 0; i < iterations && !seeds.empty(); ++i) {
    inputs.push_back(mutate(seeds[i % seeds.size()], rng));
  }
  std::size_t failures = 0;
  for (const std::string& input : inputs) {
    std::string what;
    try {
      parse(input);
    } catch (const Error& e) {
      if (allowed == Allowed::nothing) what = std::string("edgeprof::Error: ") + e.what();
    } catch (const std::exception& e) {
      what = std::string("an exception not edgeprof's: ") + e.what();
    } catch (...) {
      what = "an unknown exception";
    }
    if (!what.empty() && failures++ < 3) {  // the first few: enough to start from
      FAIL_CHECK(target << ": " << what << " (input kept in " << keep_finding(target, input)
                        << ")");
    }
  }
  CHECK(failures == 0);
}

std::vector<std::string> fixtures(std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* n : names) out.push_back(fixture(n));
  return out;
}

// A result as the library writes it, with a series, phases' marks and a warning.
Result sample_result() {
  Result r;
  r.device = make_device("fuzz-board", 2, 0.5, "256MiB");
  HostFacts host;
  host.cpus = {0, 1};
  host.memory_bytes = 8ull << 30;
  r.plan = plan_emulation(r.device, host);
  r.wall_time_s = 1.25;
  r.cpu_user_s = 0.5;
  r.peak_memory_bytes = 1 << 20;
  r.command = {"/bin/true", "--flag"};
  r.warnings = {"a warning"};
  for (int i = 0; i < 4; ++i) {
    r.series.t_ns.push_back(i * 10'000'000);
    r.series.scheduled.push_back(1);
    for (auto& column : r.series.values) column.push_back(static_cast<std::uint64_t>(i) * 1000);
  }
  r.series.available.set(static_cast<std::size_t>(Metric::cpu_usage_ns));
  r.series.available.set(static_cast<std::size_t>(Metric::tasks));
  r.series.read_every[static_cast<std::size_t>(Metric::tasks)] = 10;
  r.series.complete = r.series.available;
  return r;
}

}  // namespace

TEST_CASE("fuzz: the parsers of kernel files never throw", "[fuzz]") {
  using namespace edgeprof::detail;
  const auto cgroup_files = fixtures(
      {"v1/cpu.stat", "v1/cpuacct.stat", "v1/cpuacct.usage", "v1/memory.stat",
       "v1/memory.oom_control", "v1/blkio.throttle.io_service_bytes",
       "v1/blkio.throttle.io_serviced", "v1/proc_pressure_memory", "v1/proc_self_cgroup",
       "v2/cpu.stat", "v2/io.stat", "v2/memory.stat", "v2/memory.events", "v2/cpu.pressure",
       "v2/io.pressure", "v2/proc_self_cgroup", "v2/pids.current"});
  fuzz("cgroup-text",
       cgroup_files,
       [](const std::string& t) {
         (void)parse_u64(t);
         (void)find_key(t, "usage_usec");
         (void)parse_cpu_stat_v1(t);
         (void)parse_cpu_stat_v2(t);
         (void)parse_cpuacct(t, t);
         (void)parse_io_stat(t);
         (void)parse_blkio(t);
         (void)parse_pressure(t);
         (void)parse_proc_cgroup(t);
         (void)parse_pids(t);
         (void)parse_stat_starttime(t);
         (void)parse_slice_name(t);
         (void)parse_net_dev(t);
         (void)parse_partitions(t);
         (void)split_words(t);
       },
       Allowed::nothing);
  fuzz("cpuinfo",
       fixtures({"cpuinfo/x86_64-amd-epyc", "cpuinfo/aarch64-raspberry-pi-4",
                 "cpuinfo/armv7-raspberry-pi-3"}),
       [](const std::string& t) { (void)parse_cpuinfo(t); }, Allowed::nothing);
  fuzz("maps", fixtures({"maps/python3-ncnn.txt"}),
       [](const std::string& t) { (void)runtimes_in_maps(t); }, Allowed::nothing);
  const TimeSeries series = sample_result().series;
  fuzz("phase-marks",
       {"100 B load\n200 E load\n250 B infer\n", "100 M first\n150 M second\n"},
       [&series](const std::string& t) {
         std::size_t malformed = 0;
         (void)parse_phases(t, 0, series, 1.0, &malformed);
       },
       Allowed::nothing);
}

TEST_CASE("fuzz: device files, reports and calibrations fail only with edgeprof errors",
          "[fuzz]") {
  fuzz("device-json", fixtures({"devices/my-board.json"}),
       [](const std::string& t) { (void)parse_device_json(t, "fuzz.json"); },
       Allowed::edgeprof_errors);
  fuzz("device-toml", fixtures({"devices/my-board.toml"}),
       [](const std::string& t) { (void)parse_device_toml(t, "fuzz.toml"); },
       Allowed::edgeprof_errors);
  const Result r = sample_result();
  fuzz("report", {to_json(r)}, [](const std::string& t) { (void)result_from_json(t); },
       Allowed::edgeprof_errors);
  RepeatedResult rr;
  rr.runs = {r, r};
  fuzz("repeated-report", {to_json(rr)},
       [](const std::string& t) { (void)repeated_from_json(t); }, Allowed::edgeprof_errors);
  FitOptions o;
  o.model = FitModel::linear;
  o.features = {"wall_time_s"};
  o.target = "device_wall_time_s";
  const Calibration c{"board", "model",
                      Projection::fit(std::vector<double>{1, 2, 3, 4}, {2.1, 3.9, 6.2, 7.8}, o)};
  fuzz("calibrations", {calibrations_to_json({c})},
       [](const std::string& t) { (void)calibrations_from_json(t); }, Allowed::edgeprof_errors);
}

TEST_CASE("fuzz: runner output, 7-Zip's table, sizes and CPU lists fail only with edgeprof "
          "errors",
          "[fuzz]") {
  fuzz("nn-output",
       {"runtime ncnn 1.0.20261020 (Python 3.11.7)\nsqueezenet 23.6 17.7 39.9 20.1\n"
        "mobilenet 39.1 32.4 44.2 35.0\n"},
       [](const std::string& t) { (void)parse_nn_output(t, "fuzz"); }, Allowed::edgeprof_errors);
  fuzz("7zip",
       fixtures({"7zip/7zz-26.02-b-mmt1.txt", "7zip/p7zip-16.02-b-mmt1.tail.txt"}),
       [](const std::string& t) { (void)parse_7zip_benchmark(t, "fuzz"); },
       Allowed::edgeprof_errors);
  fuzz("size", {"512MiB", "1.5GiB", "500MB", " 4 GiB ", "1048576"},
       [](const std::string& t) { (void)parse_size(t, "memory"); }, Allowed::edgeprof_errors);
  fuzz("cpu-list", {"0-3,8", "1", "0,2-5"},
       [](const std::string& t) { (void)parse_cpu_list(t); }, Allowed::edgeprof_errors);
}
