// The fuzz targets' table (targets.hpp): each parser of outside input with the real inputs it
// starts from. Built into the C++ tests and into the libFuzzer harness; EDGEPROF_FIXTURES names
// the fixtures folder in both.
#include "targets.hpp"

#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

#include "edgeprof/edgeprof.hpp"
#include "nn/runtimes.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/parse.hpp"

namespace edgeprof::fuzz {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> fixtures(std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* n : names) {
    const std::filesystem::path p = std::filesystem::path(EDGEPROF_FIXTURES) / n;
    if (!std::filesystem::is_regular_file(p)) {
      // A renamed fixture must not leave a target without its seeds, silently.
      throw std::runtime_error("fuzz seed " + p.string() +
                               " is missing: update tests/fuzz/targets.cpp");
    }
    out.push_back(read_all(p));
  }
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

const TimeSeries& sample_series() {
  static const TimeSeries series = sample_result().series;
  return series;
}

std::vector<Target> make_targets() {
  using namespace edgeprof::detail;
  std::vector<Target> t;
  t.push_back({"cgroup-text", Allowed::nothing,
               [] {
                 return fixtures({"v1/cpu.stat", "v1/cpuacct.stat", "v1/cpuacct.usage",
                                  "v1/memory.stat", "v1/memory.oom_control",
                                  "v1/blkio.throttle.io_service_bytes",
                                  "v1/blkio.throttle.io_serviced", "v1/proc_pressure_memory",
                                  "v1/proc_self_cgroup", "v2/cpu.stat", "v2/io.stat",
                                  "v2/memory.stat", "v2/memory.events", "v2/cpu.pressure",
                                  "v2/io.pressure", "v2/proc_self_cgroup", "v2/pids.current"});
               },
               [](const std::string& s) {
                 (void)parse_u64(s);
                 (void)find_key(s, "usage_usec");
                 (void)parse_cpu_stat_v1(s);
                 (void)parse_cpu_stat_v2(s);
                 (void)parse_cpuacct(s, s);
                 (void)parse_io_stat(s);
                 (void)parse_blkio(s);
                 (void)parse_pressure(s);
                 (void)parse_proc_cgroup(s);
                 (void)parse_pids(s);
                 (void)parse_stat_starttime(s);
                 (void)parse_stat_ppid(s);
                 (void)parse_slice_name(s);
                 (void)parse_net_dev(s);
                 (void)parse_partitions(s);
                 (void)split_words(s);
                 (void)parse_cpu_max(s);
                 (void)parse_cfs_bandwidth(s, s);
               }});
  t.push_back({"cpuinfo", Allowed::nothing,
               [] {
                 return fixtures({"cpuinfo/x86_64-amd-epyc", "cpuinfo/aarch64-raspberry-pi-4",
                                  "cpuinfo/armv7-raspberry-pi-3"});
               },
               [](const std::string& s) { (void)parse_cpuinfo(s); }});
  t.push_back({"maps", Allowed::nothing, [] { return fixtures({"maps/python3-ncnn.txt"}); },
               [](const std::string& s) { (void)runtimes_in_maps(s); }});
  t.push_back({"phase-marks", Allowed::nothing,
               [] {
                 return std::vector<std::string>{"100 B load\n200 E load\n250 B infer\n",
                                                 "100 M first\n150 M second\n"};
               },
               [](const std::string& s) {
                 std::size_t malformed = 0;
                 (void)parse_phases(s, 0, sample_series(), 1.0, &malformed);
               }});
  t.push_back({"device-json", Allowed::edgeprof_errors,
               [] { return fixtures({"devices/my-board.json"}); },
               [](const std::string& s) { (void)parse_device_json(s, "fuzz.json"); }});
  t.push_back({"device-toml", Allowed::edgeprof_errors,
               [] { return fixtures({"devices/my-board.toml"}); },
               [](const std::string& s) { (void)parse_device_toml(s, "fuzz.toml"); }});
  t.push_back({"report", Allowed::edgeprof_errors,
               [] { return std::vector<std::string>{to_json(sample_result())}; },
               [](const std::string& s) { (void)result_from_json(s); }});
  t.push_back({"repeated-report", Allowed::edgeprof_errors,
               [] {
                 RepeatedResult rr;
                 rr.runs = {sample_result(), sample_result()};
                 return std::vector<std::string>{to_json(rr)};
               },
               [](const std::string& s) { (void)repeated_from_json(s); }});
  t.push_back({"calibrations", Allowed::edgeprof_errors,
               [] {
                 FitOptions o;
                 o.model = FitModel::linear;
                 o.features = {"wall_time_s"};
                 o.target = "device_wall_time_s";
                 const Calibration c{"board", "model",
                                     Projection::fit(std::vector<double>{1, 2, 3, 4},
                                                     {2.1, 3.9, 6.2, 7.8}, o)};
                 return std::vector<std::string>{calibrations_to_json({c})};
               },
               [](const std::string& s) { (void)calibrations_from_json(s); }});
  t.push_back({"nn-output", Allowed::edgeprof_errors,
               [] {
                 return std::vector<std::string>{
                     "runtime ncnn 1.0.20261020 (Python 3.11.7)\nsqueezenet 23.6 17.7 39.9 20.1\n"
                     "mobilenet 39.1 32.4 44.2 35.0\n"};
               },
               [](const std::string& s) { (void)parse_nn_output(s, "fuzz"); }});
  t.push_back({"7zip", Allowed::edgeprof_errors,
               [] {
                 return fixtures(
                     {"7zip/7zz-26.02-b-mmt1.txt", "7zip/p7zip-16.02-b-mmt1.tail.txt"});
               },
               [](const std::string& s) { (void)parse_7zip_benchmark(s, "fuzz"); }});
  t.push_back({"size", Allowed::edgeprof_errors,
               [] {
                 return std::vector<std::string>{"512MiB", "1.5GiB", "500MB", " 4 GiB ",
                                                 "1048576"};
               },
               [](const std::string& s) { (void)parse_size(s, "memory"); }});
  t.push_back({"cpu-list", Allowed::edgeprof_errors,
               [] { return std::vector<std::string>{"0-3,8", "1", "0,2-5"}; },
               [](const std::string& s) { (void)parse_cpu_list(s); }});
  return t;
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = make_targets();
  return all;
}

const Target* find_target(std::string_view name) {
  for (const Target& t : targets()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string check(const Target& target, const std::string& input) {
  try {
    target.parse(input);
  } catch (const Error& e) {
    if (target.allowed == Allowed::nothing) return std::string("edgeprof::Error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("an exception not edgeprof's: ") + e.what();
  } catch (...) {
    return "an unknown exception";
  }
  return {};
}

std::string kept_findings_dir(const Target& target) {
  return (std::filesystem::path(EDGEPROF_FIXTURES) / "fuzz" / target.name).string();
}

std::vector<std::string> kept_findings(const Target& target) {
  std::vector<std::string> out;
  const std::filesystem::path kept = kept_findings_dir(target);
  if (std::filesystem::is_directory(kept)) {
    for (const auto& e : std::filesystem::directory_iterator(kept)) {
      if (e.is_regular_file()) out.push_back(read_all(e.path()));
    }
  }
  return out;
}

}  // namespace edgeprof::fuzz
