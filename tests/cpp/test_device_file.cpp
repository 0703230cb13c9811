// Device files (JSON and TOML, one schema), the built-in catalog and find_device.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using edgeprof::test::can_create_slices;
namespace stdfs = std::filesystem;

namespace {

const std::string kDir = std::string(EDGEPROF_FIXTURES) + "/devices";

// The message of the DeviceError that parsing `text` throws, or "" when it parses.
std::string json_error(const std::string& text) {
  try {
    parse_device_json(text, "test.json");
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}

std::string toml_error(const std::string& text) {
  try {
    parse_device_toml(text, "test.toml");
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const char* kMinimal = R"({"edgeprof_device": 1, "name": "b", "cores": 2, "core_speed": 0.5,
                           "memory": "1GiB")";

}  // namespace

TEST_CASE("TOML and JSON device files describe the same device", "[device-file]") {
  const Device t = load_device_file(kDir + "/my-board.toml");
  const Device j = load_device_file(kDir + "/my-board.json");
  CHECK(t.name == "my-board");
  CHECK(t.aliases == std::vector<std::string>{"board"});
  CHECK(t.cores == 4);
  CHECK(t.core_speed == 0.3);
  CHECK(t.memory_bytes == 2ull << 30);
  CHECK(t.swap_bytes == 512ull << 20);
  CHECK(t.cpu.model == "Cortex-A55");
  CHECK(t.cpu.clock_mhz == 1800);
  CHECK(t.storage == "eMMC");
  CHECK(t.io_read_bps == std::optional<std::uint64_t>(150000000));
  CHECK(t.io_write_bps == std::optional<std::uint64_t>(50000000));
  CHECK(t.power.idle_watts == std::optional<double>(1.2));
  CHECK(t.power.loaded_watts == std::optional<double>(4.8));
  REQUIRE(t.speed_schedule.size() == 1);
  CHECK(t.speed_schedule[0].after_s == 30);
  CHECK(t.speed_schedule[0].factor == 0.7);
  CHECK(t.sources.at("core_speed").status == "measured");
  CHECK(t.origin == kDir + "/my-board.toml");
  // Same content: equal but for where each came from.
  Device j2 = j;
  j2.origin = t.origin;
  CHECK(j2 == t);
}

TEST_CASE("device_to_json writes a file that reads back to an equal device", "[device-file]") {
  const Device t = load_device_file(kDir + "/my-board.toml");
  Device back = parse_device_json(device_to_json(t), t.origin);
  CHECK(back == t);
  for (const Device& d : catalog_devices()) {
    CAPTURE(d.name);
    Device again = parse_device_json(device_to_json(d), "catalog");
    CHECK(again == d);
  }
}

TEST_CASE("bad device files name the file, the field and the problem", "[device-file]") {
  // Each: a mutation of a valid file, and what the error must say.
  const std::string base = std::string(kMinimal);
  struct Case {
    std::string text;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {base + "}", {}},  // valid
      {base + R"(, "coers": 4})", {"test.json", "'coers'", "unknown field"}},
      {base + R"(, "cpu": {"clock_mhz": "fast"}})", {"'cpu.clock_mhz'", "expected a number", "fast"}},
      // 0 is unknown, as Device::validate says (refused once); between 0 and 1 MHz is not.
      {base + R"(, "cpu": {"clock_mhz": 0}})", {}},
      {base + R"(, "cpu": {"clock_mhz": 0.5}})", {"'cpu.clock_mhz'", "out of range"}},
      {R"({"edgeprof_device": 1, "name": "b", "cores": 0, "core_speed": 0.5, "memory": "1GiB"})",
       {"'cores'", "out of range"}},
      {R"({"edgeprof_device": 1, "name": "b", "cores": 2, "memory": "1GiB"})",
       {"'core_speed'", "is required unless", "edgeprof-probe"}},
      {R"({"edgeprof_device": 1, "name": "b", "cores": 2, "core_speed": 0.5, "memory": "12 parsecs"})",
       {"test.json", "memory", "12 parsecs"}},
      {R"({"edgeprof_device": 2, "name": "b", "cores": 2, "core_speed": 0.5, "memory": "1GiB"})",
       {"'edgeprof_device'", "newer", "upgrade"}},
      {R"({"name": "b", "cores": 2, "core_speed": 0.5, "memory": "1GiB"})",
       {"'edgeprof_device'", "is required"}},
      {base + R"(, "power": {"idle_w": 5, "loaded_w": 2}})", {"'power.loaded_w'", "below idle_w"}},
      {base + R"(, "speed_schedule": [{"after_s": 30, "factor": 0.7}, {"after_s": 10, "factor": 0.5}]})",
       {"'speed_schedule[1].after_s'", "increasing"}},
      {base + R"(, "speed_schedule": [{"after_s": 30, "factor": 1.5}]})",
       {"'speed_schedule[0].factor'", "out of range"}},
      {base + R"(, "sources": {"cores": {"status": "guessed", "source": "x"}}})",
       {"'sources.cores.status'", "guessed", "specified, measured, estimated"}},
      {base + R"(, "storage": {"read_bps": "0"}})", {"storage", "0 bytes/s"}},
      {R"({"edgeprof_device": 1, "name": "my/board", "cores": 2, "core_speed": 0.5, )"
       R"("memory": "1GiB"})",
       {"'name'", "my/board"}},
      {"{not json", {"test.json", "not valid JSON"}},
      // A key given twice: the parser kept the last (a 1-core device here), silently.
      {base + R"(, "cores": 1})", {"test.json", "cores is given twice", "keep the one"}},
      {base + R"(, "nn": {"ms": {"squeezenet": 10}, "threads": 4}})",
       {"'nn.threads'", "is 4", "nn.threads_ms"}},
      // "04" and "4" were one table, merged.
      {base + R"(, "nn": {"ms": {"squeezenet": 10}, "threads_ms": {"04": {"squeezenet": 5}}}})",
       {"04", "from 2 to", "written as a number"}},
      // The floor in bytes: "16 MiB is below the floor of 16 MiB".
      {R"({"edgeprof_device": 1, "name": "b", "cores": 2, "core_speed": 0.5, )"
       R"("memory": 16777215})",
       {"16777215 bytes", "16777216 bytes"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string err = json_error(c.text);
    if (c.says.empty()) {
      CHECK(err.empty());
    } else {
      CHECK_FALSE(err.empty());
      for (const std::string& part : c.says) {
        CAPTURE(err, part);
        CHECK(contains(err, part));
      }
    }
  }
}

TEST_CASE("TOML errors give the line and column", "[device-file]") {
  const std::string err = toml_error("edgeprof_device = 1\nname = \"b\"\ncores = = 2\n");
  CHECK(contains(err, "test.toml:3:"));
  CHECK(contains(err, "not valid TOML"));
  const std::string typed =
      toml_error("edgeprof_device = 1\nname = \"b\"\ncores = \"four\"\ncore_speed = 0.5\n"
                 "memory = \"1GiB\"\n");
  CHECK(contains(typed, "'cores'"));
  CHECK(contains(typed, "four"));
}

TEST_CASE("an unreadable device file says which file and why", "[device-file]") {
  try {
    load_device_file("/nonexistent/board.toml");
    FAIL("loaded");
  } catch (const DeviceError& e) {
    CHECK(contains(e.what(), "/nonexistent/board.toml"));
    CHECK(contains(e.what(), "No such file"));
    CHECK(e.sys_errno() == ENOENT);
  }
}

// A FIFO blocked the open for ever (edgeprof devices show ./fifo.json, or one in a device
// directory hung every run), /dev/zero grew until bad_alloc or the OOM killer.
TEST_CASE("a device file that is not a regular file is refused at once", "[device-file]") {
  edgeprof::test::FakeTree tree;
  const std::string fifo = tree.root() + "/board.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"), tree.root()}) {
    try {
      load_device_file(path);
      FAIL("loaded " << path);
    } catch (const DeviceError& e) {
      CHECK(contains(e.what(), path));
      CHECK(contains(e.what(), "is not a regular file"));
      CHECK(e.sys_errno() == EINVAL);
    }
  }
  // A user's device directory holding one: skipped with why, the others still read.
  test::ScopedEnv env("EDGEPROF_DEVICE_PATH", tree.root());
  const UserDevices user = user_devices();
  CHECK(user.devices.empty());
  REQUIRE(user.problems.size() == 1);
  CHECK(contains(user.problems[0], "is not a regular file"));
}

TEST_CASE("probe scores give the core speed relative to this host", "[device-file]") {
  const std::string text = R"({"edgeprof_device": 1, "name": "probed", "cores": 4,
      "memory": 4124000256,
      "scores": {"suite": "edgeprof-suite-1", "integer": 10, "floating": 20, "memory": 40}})";
  DeviceLoadOptions options;
  options.host_scores = CoreScores{"edgeprof-suite-1", 40, 40, 40, 0, "", ""};
  const Device d = parse_device_json(text, "probed.json", options);
  // Geometric mean of 1/4, 1/2 and 1.
  CHECK(d.core_speed == Approx(0.5));
  CHECK(d.sources.at("core_speed").status == "measured");
  options.host_scores = CoreScores{"edgeprof-suite-0", 40, 40, 40, 0, "", ""};
  try {
    parse_device_json(text, "probed.json", options);
    FAIL("accepted scores of another suite");
  } catch (const DeviceError& e) {
    CHECK(contains(e.what(), "probed.json"));
    CHECK(contains(e.what(), "edgeprof-suite-0"));
  }
}

TEST_CASE("a probe whose kernels spread widely is said in the plan and the run",
          "[device-file][plan][kernel]") {
  // Issue 36 item 11: once only the probe's progress on the board said so.
  const auto probed = [](const std::string& spread) {
    // 256 MiB: the cgroup v2 VM has about 1 GiB, and a run refuses a device with more.
    return R"({"edgeprof_device": 1, "name": "probed", "cores": 1, "memory": 268435456,
        "scores": {"suite": "edgeprof-suite-1", "integer": 10, "floating": 20, "memory": 40,
                   "vector": 15, "vector_unit": "neon", "vector_kernel": "edgeprof-vector-1",
                   "spread": )" + spread + "}}";
  };
  DeviceLoadOptions options;
  options.host_scores = CoreScores{"edgeprof-suite-1", 40, 40, 40, 120, "avx512f",
                                   kVectorKernelVersion, {}};
  HostFacts host;
  host.cpus = {0, 1};
  host.memory_bytes = 8ull << 30;
  PlanOptions plan_options;
  plan_options.quota_scale = 1.0;  // nothing measured on this host
  plan_options.drift_check = false;
  const auto spread_notes = [&](const Device& d, SpeedKind kind) {
    plan_options.speed_kind = kind;
    std::vector<std::string> out;
    for (const std::string& n : plan_emulation(d, host, plan_options).notes) {
      if (n.rfind("probe scores spread", 0) == 0) out.push_back(n);
    }
    return out;
  };

  const Device wide = parse_device_json(
      probed(R"({"integer": 0.06, "floating": 0.8, "memory": 0.1, "vector": 1.7})"), "wide.json",
      options);
  REQUIRE(wide.scores);
  CHECK(wide.scores->spread.at("vector") == Approx(1.7));
  // Kept when the file is written again.
  CHECK(parse_device_json(device_to_json(wide), "again.json", options).scores->spread ==
        wide.scores->spread);
  // The nn speed comes from the vector kernel: its spread is said, the scalar ones are not.
  std::vector<std::string> notes = spread_notes(wide, SpeedKind::nn);
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "vector 170%"));
  CHECK_FALSE(contains(notes[0], "floating"));
  CHECK(contains(notes[0], "edgeprof-probe"));
  // The integer speed comes from the scalar kernels.
  notes = spread_notes(wide, SpeedKind::integer);
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "floating 80%"));
  CHECK_FALSE(contains(notes[0], "vector"));
  CHECK_FALSE(contains(notes[0], "integer 6%"));

  // An idle board's spread says nothing; neither does a speed that is not the probe's.
  const Device steady = parse_device_json(
      probed(R"({"integer": 0.06, "floating": 0.05, "memory": 0.1, "vector": 0.12})"),
      "steady.json", options);
  CHECK(spread_notes(steady, SpeedKind::nn).empty());
  CHECK(spread_notes(steady, SpeedKind::integer).empty());
  Device given = wide;
  given.sources["core_speed"] = {"measured", "a benchmark of my own"};
  CHECK(spread_notes(given, SpeedKind::integer).empty());

  // A spread the schema does not know is refused, naming the field.
  CHECK_THROWS_WITH(parse_device_json(probed(R"({"vectr": 0.1})"), "typo.json", options),
                    Catch::Contains("scores.spread.vectr") && Catch::Contains("typo.json"));
  CHECK_THROWS_WITH(parse_device_json(probed(R"({"vector": -1})"), "neg.json", options),
                    Catch::Contains("scores.spread.vector"));

  // A run says it in its warnings, not only in the plan's notes.
  REQUIRE_CGROUPS();
  Command c;
  c.argv = {"true"};
  RunOptions run_options;
  run_options.slice.plan = plan_options;
  run_options.slice.plan.speed_kind = SpeedKind::nn;
  const Result r = run(c, wide, run_options);
  REQUIRE(r.ok());
  bool warned = false;
  for (const std::string& w : r.warnings) warned = warned || contains(w, "vector 170%");
  CHECK(warned);
}

TEST_CASE("a probed device's vector score gives its nn speed, used by default and said",
          "[device-file][nn]") {
  const std::string text = R"({"edgeprof_device": 1, "name": "probed", "cores": 4,
      "memory": 4124000256,
      "scores": {"suite": "edgeprof-suite-1", "integer": 10, "floating": 20, "memory": 40,
                 "vector": 15, "vector_unit": "neon", "vector_kernel": "edgeprof-vector-1"}})";
  DeviceLoadOptions options;
  CoreScores host{"edgeprof-suite-1", 40, 40, 40, 120, "avx512f", kVectorKernelVersion};
  options.host_scores = host;
  const Device d = parse_device_json(text, "probed.json", options);
  CHECK(d.core_speed == Approx(0.5));  // the integer speed, from the scalar kernels
  REQUIRE(d.nn);
  CHECK(d.nn->core_speed == Approx(0.125));
  CHECK(d.nn->basis == "vector");
  CHECK(d.nn->precision == "fp32");
  CHECK(d.nn->vector_units == "neon on the device, avx512f here");
  CHECK(d.nn->ratios.empty());

  std::vector<std::string> notes;
  const Device nn = for_speed_kind(d, SpeedKind::automatic, &notes);
  CHECK(nn.core_speed == Approx(0.125));
  CHECK(nn.speed_kind == "nn");
  CHECK(nn.sources.at("core_speed").status == "estimated");
  CHECK(contains(nn.sources.at("core_speed").source, "vector-kernel score"));
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "from edgeprof-probe's vector kernel (fp32; neon on the device, "
                           "avx512f here"));
  CHECK(describe_core_speed(nn) ==
        "0.125 of a host core (nn speed: edgeprof-probe's vector kernel, fp32; neon on the "
        "device, avx512f here)");
  CHECK(for_speed_kind(d, SpeedKind::integer).core_speed == Approx(0.5));

  // Written back with its vector score, read again the same.
  const Device again = parse_device_json(device_to_json(d), "again.json", options);
  REQUIRE(again.scores);
  CHECK(*again.scores == *d.scores);

  // A host calibrated before the vector kernel: no nn speed, and why.
  options.host_scores = CoreScores{"edgeprof-suite-1", 40, 40, 40, 0, "", ""};
  const Device old_host = parse_device_json(text, "probed.json", options);
  CHECK_FALSE(old_host.nn);
  CHECK(contains(old_host.nn_missing, "this host has no vector-kernel score"));
  CHECK(contains(old_host.nn_missing, "edgeprof calibrate-host"));

  // A file of an older probe: no nn speed, and what to do.
  const std::string old = R"({"edgeprof_device": 1, "name": "probed", "cores": 4,
      "memory": 4124000256,
      "scores": {"suite": "edgeprof-suite-1", "integer": 10, "floating": 20, "memory": 40}})";
  options.host_scores = host;
  const Device old_probe = parse_device_json(old, "old.json", options);
  CHECK_FALSE(old_probe.nn);
  CHECK(contains(old_probe.nn_missing, "older edgeprof-probe"));
  CHECK_THROWS_WITH(for_speed_kind(old_probe, SpeedKind::nn),
                    Catch::Contains("older edgeprof-probe"));

  // Another version of the kernel does not compare.
  std::string other = text;
  other.replace(other.find("edgeprof-vector-1"), 17, "edgeprof-vector-0");
  const Device other_kernel = parse_device_json(other, "other.json", options);
  CHECK_FALSE(other_kernel.nn);
  CHECK(contains(other_kernel.nn_missing, "edgeprof-vector-0"));
}

TEST_CASE("the catalog: real devices, every figure sourced", "[device-file][catalog]") {
  const auto& devices = catalog_devices();
  CHECK(devices.size() >= 12);
  std::set<std::string> names;
  for (const Device& d : devices) {
    CAPTURE(d.name);
    CHECK(names.insert(d.name).second);
    for (const std::string& a : d.aliases) CHECK(names.insert(a).second);
    CHECK(d.origin == "catalog");
    CHECK_FALSE(d.description.empty());
    CHECK_FALSE(d.cpu.model.empty());
    CHECK(d.cpu.clock_mhz > 0);
    CHECK(d.power.idle_watts.has_value());
    CHECK(d.power.loaded_watts.has_value());
    for (const char* figure :
         {"cores", "reference_speed", "core_speed", "memory", "cpu", "storage", "power"}) {
      CAPTURE(figure);
      REQUIRE(d.sources.count(figure));
      CHECK_FALSE(d.sources.at(figure).source.empty());
    }
    // No probe results ship with the catalog: every speed is an estimate relative to the
    // reference core, and says so.
    CHECK(d.reference_speed.has_value());
    CHECK(d.sources.at("reference_speed").status == "estimated");
    CHECK(d.sources.at("core_speed").status == "estimated");
  }
  // The names of the first built-in devices still work.
  for (const char* old : {"raspberry-pi-4", "raspberry-pi-3b", "jetson-nano", "raspberry-pi-zero-2w"}) {
    CHECK_NOTHROW(builtin_device(old));
  }
  CHECK(builtin_device("raspberry-pi-4").name == "raspberry-pi-4b-4gb");
}

TEST_CASE("a device directory the user named that is not there is said, and a file taken for a "
          "name is pointed to",
          "[device-file]") {
  const stdfs::path dir =
      stdfs::temp_directory_path() / ("edgeprof-nodir-" + std::to_string(::getpid()));
  stdfs::remove_all(dir);
  {
    // Silently no devices before.
    test::ScopedEnv env("EDGEPROF_DEVICE_PATH", (dir / "devices").string());
    const UserDevices user = user_devices();
    CHECK(user.devices.empty());
    REQUIRE(user.problems.size() == 1);
    CHECK(contains(user.problems[0], "devices: the device directory cannot be read"));
    CHECK(contains(user.problems[0], "errno 2"));
    CHECK(contains(user.problems[0], "EDGEPROF_DEVICE_PATH"));
  }
  {
    // The default directory need not exist.
    test::ScopedEnv env("EDGEPROF_DEVICE_PATH", "");
    test::ScopedEnv home("XDG_CONFIG_HOME", (dir / "config").string());
    CHECK(user_devices().problems.empty());
  }
  // "mydev" here is a name to find_device(): the file is pointed to, not read.
  stdfs::create_directories(dir);
  const stdfs::path before = stdfs::current_path();
  stdfs::current_path(dir);
  { std::ofstream("mydev") << "name = \"mydev\"\n"; }
  CHECK_THROWS_WITH(find_device("mydev"),
                    Catch::Contains("no device named 'mydev'") &&
                        Catch::Contains("a file 'mydev' is in the current directory") &&
                        Catch::Contains("e.g. ./mydev"));
  CHECK_THROWS_WITH(find_device("otherdev"), !Catch::Contains("current directory"));
  stdfs::current_path(before);
  stdfs::remove_all(dir);
}

TEST_CASE("find_device: catalog, then the user's device directories, or a path", "[device-file]") {
  const stdfs::path dir = stdfs::temp_directory_path() / ("edgeprof-devices-" + std::to_string(::getpid()));
  stdfs::create_directories(dir);
  stdfs::copy_file(kDir + "/my-board.toml", dir / "my-board.toml",
                   stdfs::copy_options::overwrite_existing);
  { std::ofstream(dir / "broken.json") << "{\"edgeprof_device\": 1}"; }
  test::ScopedEnv env("EDGEPROF_DEVICE_PATH", dir.string());

  CHECK(find_device("jetson-nano").origin == "catalog");
  CHECK(find_device("board").name == "my-board");  // by alias
  CHECK(find_device(kDir + "/my-board.json").name == "my-board");  // by path
  const UserDevices user = user_devices();
  REQUIRE(user.devices.size() == 1);
  REQUIRE(user.problems.size() == 1);
  CHECK(contains(user.problems[0], "broken.json"));
  try {
    find_device("no-such-board");
    FAIL("found");
  } catch (const DeviceError& e) {
    CHECK(contains(e.what(), "no-such-board"));
    CHECK(contains(e.what(), "my-board"));      // the user's devices are listed
    CHECK(contains(e.what(), "raspberry-pi-5"));  // and the catalog's
    CHECK(contains(e.what(), "broken.json"));   // and the files that did not load
  }
  // A device find_device() cannot reach by its name is said, not listed: one an earlier file
  // defines (the first by path answered), and a built-in device's name (the catalog answered).
  {
    std::ifstream in(kDir + "/my-board.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream(dir / "zz-again.toml") << text.str();
    std::string builtin = text.str();
    builtin.replace(builtin.find("\"my-board\""), 10, "\"jetson-nano\"");
    std::ofstream(dir / "shadow.toml") << builtin;
    // Its own name, an alias a built-in device holds: listed, found by its name.
    std::string alias = text.str();
    alias.replace(alias.find("\"my-board\""), 10, "\"my-pi\"");
    alias.replace(alias.find("[\"board\"]"), 9, "[\"raspberry-pi-4\"]");
    std::ofstream(dir / "alias.toml") << alias;
  }
  const UserDevices clashes = user_devices();
  CHECK(clashes.devices.size() == 2);
  CHECK(find_device("my-pi").name == "my-pi");
  REQUIRE(clashes.problems.size() == 3);
  std::string said;
  for (const std::string& p : clashes.problems) said += p + "\n";
  CHECK(contains(said, "zz-again.toml: a device named 'my-board' was read before it"));
  CHECK(contains(said, "shadow.toml: 'jetson-nano' is a name of the built-in jetson-nano"));
  // A NUL ends no path or name here (open() read the path before it; the message was cut).
  CHECK_THROWS_WITH(find_device(std::string("jetson-nano\0x", 13)),
                    Catch::Contains("no device named 'jetson-nano\\u0000x'"));
  CHECK_THROWS_WITH(load_device_file(kDir + "/my-board.toml" + std::string(1, '\0') + "x"),
                    Catch::Contains("holds a NUL byte"));
  CHECK_THROWS_WITH(find_device("\x1b[2J"), Catch::Contains("no device named '\\u001b[2J'"));
  stdfs::remove_all(dir);
}

TEST_CASE("a device file may give its speed relative to the reference core", "[device-file]") {
  const std::string text = R"({"edgeprof_device": 1, "name": "b", "cores": 2,
                               "reference_speed": 0.4, "memory": "1GiB"})";
  DeviceLoadOptions at_half;
  at_half.host_reference_speed = 0.5;  // this host's core: half the reference core
  const Device d = parse_device_json(text, "b.json", at_half);
  CHECK(d.core_speed == Approx(0.8));
  CHECK(d.reference_speed == 0.4);
  CHECK(d.host_reference_speed == 0.5);
  CHECK_FALSE(d.reference_uncorrected());
  CHECK(d.sources.at("core_speed").status == "estimated");
  CHECK(contains(d.sources.at("core_speed").source, "0.4 / 0.500"));
  CHECK(describe_core_speed(d) == "0.8 of a host core (0.4 of the reference core / this host's 0.500)");
  // Written with the core speed it was derived to, and the host it was derived on: read back as
  // written where the speed a run had must stay (a report's device, a pickled one), the same
  // device on this host, and derived again on another (that host's speed was kept).
  DeviceLoadOptions as_written;
  as_written.speed_as_written = true;
  as_written.host_reference_speed = 0.25;
  CHECK(parse_device_json(device_to_json(d), "b.json", as_written) == d);
  CHECK(parse_device_json(device_to_json(d), "b.json", at_half) == d);
  DeviceLoadOptions at_quarter;
  at_quarter.host_reference_speed = 0.25;
  const Device elsewhere = parse_device_json(device_to_json(d), "b.json", at_quarter);
  CHECK(elsewhere.core_speed == Approx(1.6));
  CHECK(elsewhere.host_reference_speed == 0.25);
  CHECK(contains(elsewhere.sources.at("core_speed").source, "0.4 / 0.250"));
  CHECK_FALSE(contains(elsewhere.sources.at("core_speed").source, "0.500"));
  // A core_speed given by hand (not what reference_speed gives) is the file's speed.
  std::string edited = device_to_json(d);
  const std::size_t at = edited.find("\"core_speed\": ");
  REQUIRE(at != std::string::npos);
  const std::size_t end = edited.find(',', at);
  edited.replace(at, end - at, "\"core_speed\": 0.7");
  CHECK(parse_device_json(edited, "b.json", at_quarter).core_speed == 0.7);
  // So is a hand-written file's that gives both speeds, equal, without edgeprof's source.
  CHECK(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 2, "core_speed": 0.4,
                               "reference_speed": 0.4, "memory": "1GiB"})",
                          "b.json", at_quarter)
            .core_speed == 0.4);

  DeviceLoadOptions unknown;
  unknown.host_reference_speed = 0;
  const Device u = parse_device_json(text, "b.json", unknown);
  CHECK(u.core_speed == 0.4);
  CHECK(u.reference_uncorrected());
  CHECK(contains(u.sources.at("core_speed").source, "uncorrected"));
  CHECK(describe_core_speed(u) == "0.4 of the reference core, uncorrected for this host");
  // Saved uncorrected, then read once this host's rating is known: corrected (it stayed
  // uncorrected), its source no longer the uncorrected one's.
  const Device corrected = parse_device_json(device_to_json(u), "b.json", at_half);
  CHECK(corrected.core_speed == Approx(0.8));
  CHECK_FALSE(corrected.reference_uncorrected());
  CHECK_FALSE(contains(corrected.sources.at("core_speed").source, "uncorrected"));
  unknown.speed_as_written = true;
  CHECK(parse_device_json(device_to_json(u), "b.json", unknown) == u);
  CHECK(describe_core_speed(make_device("m", 1, 0.25, "1GiB")) == "0.25 of a host core");

  // A given core_speed wins; host_reference_speed only records where it was derived.
  CHECK(contains(json_error(R"({"edgeprof_device": 1, "name": "b", "cores": 2,
                                "reference_speed": 0.4, "host_reference_speed": 0.9,
                                "memory": "1GiB"})"),
                 "host_reference_speed"));
  CHECK(contains(json_error(R"({"edgeprof_device": 1, "name": "b", "cores": 2,
                                "core_speed": 0.4, "host_reference_speed": 0.9,
                                "memory": "1GiB"})"),
                 "host_reference_speed"));
  CHECK(contains(json_error(R"({"edgeprof_device": 1, "name": "b", "cores": 2,
                                "reference_speed": 0, "memory": "1GiB"})"),
                 "reference_speed"));
  CHECK(contains(json_error(R"({"edgeprof_device": 1, "name": "b", "cores": 2,
                                "memory": "1GiB"})"),
                 "reference_speed"));  // the missing speed's message names every way to give it
}

TEST_CASE("TOML: characters the TOML reader would misread are read as written, and refused "
          "where TOML allows none",
          "[device-file]") {
  const std::string minimal =
      "edgeprof_device = 1\nname = \"b\"\ncores = 2\ncore_speed = 0.5\nmemory = \"1GiB\"\n";
  // Latin-1, Greek and CJK punctuation (toml++ 3.3.0 asked its whitespace table of them, which
  // reached __builtin_unreachable: undefined behaviour) in comments, double- and
  // single-quoted strings, multi-line ones and after a line-ending backslash: the same values.
  const Device d = parse_device_toml(
      minimal + "# 25 \u00b0C, 5 \u00b5s\ndescription = \"Cort\u00e9x \u03bb \u3001 \\\" \u00e9\"\n"
                "[sources.core_speed]\nstatus = 'measured'\n"
                "source = '''C:\\lab \"\u00e9\" \u00a7\n2026'''''\n",
      "test.toml");
  CHECK(d.description == "Cort\u00e9x \u03bb \u3001 \" \u00e9");
  REQUIRE(d.sources.count("core_speed"));
  CHECK(d.sources.at("core_speed").source == "C:\\lab \"\u00e9\" \u00a7\n2026''");
  CHECK(parse_device_toml(minimal + "description = \"\"\"a \\\n  \u00a7 'x' \u00e9\"\"\"\n",
                          "test.toml")
            .description == "a \u00a7 'x' \u00e9");
  CHECK(parse_device_toml(minimal + "description = '\u00e9 \\ \"'\n", "test.toml").description ==
        "\u00e9 \\ \"");
  // A quoted key: read (and then refused by the schema, naming it).
  CHECK(contains(toml_error(minimal + "\"k\u00e9y\" = 1\n"), "k\u00e9y"));
  // Outside a string (the fuzzer's finding, kept in tests/fixtures/fuzz/device-toml/), and
  // escaped by a backslash: refused, saying where.
  const std::string after_value = toml_error(minimal + "swap = 1\ufefd\n");
  CHECK(contains(after_value, "test.toml:6:9: U+FEFD is outside a string"));
  CHECK(contains(toml_error(minimal + "description = 4\u00e9\n"), "U+00E9"));
  CHECK(contains(toml_error(minimal + "description = \"\"\"a\n\\\u00a7\"\"\"\n"),
                 "test.toml:7:2: U+00A7 follows a backslash"));
  // Columns count characters, as toml++'s do; on a line written with escapes toml++'s own
  // columns are the escaped text's, so only the line is named.
  CHECK(contains(toml_error(minimal + "description = \"\u65e5\" \u00a1\n"),
                 "test.toml:6:19: U+00A1 is outside a string"));
  CHECK(contains(toml_error(minimal + "description = \"\u00e9\" x\n"),
                 "test.toml:6: not valid TOML"));
  // Bytes that are not UTF-8 (an overlong quote, then U+00A1) are left to toml++, which says so.
  CHECK(contains(toml_error(minimal + "description = \"x\xC0\xA2 \u00a1\"\n"), "test.toml:6"));
  CHECK_FALSE(contains(toml_error(minimal + "description = \"x\xC0\xA2 \u00a1\"\n"),
                       "outside a string"));
}

namespace {

constexpr const char* kNameCharacters =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";

CoreScores probe_scores(double integer, const std::string& spread_kernel = {}) {
  CoreScores s;
  s.suite = "s";
  s.integer = integer;
  s.floating = 2;
  s.memory = 3;
  if (!spread_kernel.empty()) s.spread[spread_kernel] = 0.1;
  return s;
}

}  // namespace

TEST_CASE("a device's name holds no '/' or control characters, and a message shows it escaped",
          "[device-file]") {
  const auto named = [](const std::string& name) {
    return R"({"edgeprof_device": 1, "name": )" + name +
           R"(, "cores": 2, "core_speed": 0.5, "memory": "1GiB"})";
  };
  CHECK(json_error(named(R"("Pi-4_b.v2")")).empty());
  // An escape sequence (which a terminal would obey) is refused, named by its code, and the
  // message holds it escaped: printing the message changes no terminal.
  const std::string red = json_error(named(R"("\u001b[31mred\u001b[0m")"));
  CHECK(contains(red, "test.json: field 'name': '\\u001b[31mred\\u001b[0m' is not a usable "
                      "name (U+001B); a name holds no '/' or control characters"));
  CHECK(red.find('\x1b') == std::string::npos);
  // Names that files and reports have held stay usable.
  for (const char* good : {R"("caf\u00e9")", R"("a:b")", R"("pi4+")", "\"rpi(4b)\"",
                           R"("my board")"}) {
    CAPTURE(good);
    CHECK(json_error(named(good)).empty());
  }
  for (const char* bad : {R"("")", R"(" lead")", R"("trail ")", R"("a/b")", R"("tab\there")",
                          R"("\u0085")", R"("nl\n")"}) {
    CAPTURE(bad);
    const std::string err = json_error(named(bad));
    CHECK(contains(err, "field 'name'"));
    CHECK(contains(err, "is not a usable name"));
  }
  CHECK(contains(json_error(named(R"("a/b")")), "(U+002F)"));
  CHECK(contains(json_error(named(R"("")")), "'' is not a usable name; a name holds no"));
  // Aliases: the same rule.
  const std::string alias =
      json_error(R"({"edgeprof_device": 1, "name": "b", "aliases": ["ok", "\u001b]0;x\u0007"],
                     "cores": 2, "core_speed": 0.5, "memory": "1GiB"})");
  CHECK(contains(alias, "field 'aliases'"));
  CHECK(contains(alias, "U+001B"));
  CHECK(alias.find('\x1b') == std::string::npos);
  CHECK(alias.find('\x07') == std::string::npos);
  // TOML the same.
  const std::string toml = toml_error(
      "edgeprof_device = 1\nname = \"\\u001b]0;pwned\\u0007\"\ncores = 2\ncore_speed = 0.5\n"
      "memory = \"1GiB\"\n");
  CHECK(contains(toml, "field 'name'"));
  CHECK(contains(toml, "U+001B"));
  // Every catalog name and alias keeps to it.
  for (const Device& d : catalog_devices()) {
    CAPTURE(d.name);
    CHECK(d.name.find_first_not_of(kNameCharacters) == std::string::npos);
    for (const std::string& n : d.aliases) {
      CAPTURE(n);
      CHECK(n.find_first_not_of(kNameCharacters) == std::string::npos);
    }
  }
}

TEST_CASE("control characters in a device's text are refused, naming the field and the code",
          "[device-file]") {
  const std::string base = std::string(kMinimal);
  struct Case {
    std::string text;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      // An OSC title sequence: ESC ... BEL.
      {base + R"(, "description": "\u001b]0;pwned\u0007desc"})",
       {"field 'description': holds U+001B, a control character, at character 1"}},
      // Tabs and line breaks are text (a TOML file's multi-line source keeps them).
      {base + R"(, "description": "a\tb\nc\r\nd"})", {}},
      {base + R"(, "source": "x\u007f"})", {"'source'", "U+007F"}},
      {base + R"(, "cpu": {"model": "A\u009b2J"}})", {"'cpu.model'", "U+009B"}},  // C1 CSI
      {base + R"(, "cpu": {"soc": "\u0000"}})", {"'cpu.soc'", "U+0000"}},
      {base + R"(, "storage": {"kind": "SD\u001b"}})", {"'storage.kind'", "U+001B"}},
      {base + R"(, "sources": {"cores": {"status": "specified", "source": "\u001b[2J"}}})",
       {"'sources.cores.source'", "U+001B"}},
      // A key the schema does not know is named in the message, escaped.
      {base + R"(, "\u001b[2J": 1})", {"'\\u001b[2J'", "unknown field"}},
      // Letters of any script, symbols and U+FFFD itself are text.
      {base + R"(, "description": "Cort\u00e9x \u03bb \u2713 \ufffd"})", {}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string err = json_error(c.text);
    if (c.says.empty()) {
      CHECK(err.empty());
      continue;
    }
    for (const std::string& part : c.says) {
      CAPTURE(err, part);
      CHECK(contains(err, part));
    }
    for (char control : {'\x1b', '\x07', '\x7f', '\t', '\n', '\r', '\0'}) {
      CHECK(err.find(control) == std::string::npos);
    }
  }
  CHECK(toml_error("edgeprof_device = 1\nname = \"b\"\ncores = 2\ncore_speed = 0.5\n"
                   "memory = \"1GiB\"\ndescription = \"\"\"\none\ntwo\"\"\"\n")
            .empty());
}

TEST_CASE("a number that is not finite is named as written", "[device-file]") {
  const std::string head = "edgeprof_device = 1\nname = \"b\"\ncores = 2\nmemory = \"1GiB\"\n";
  for (const std::string value : {"nan", "inf", "-inf"}) {
    CAPTURE(value);
    const std::string err = toml_error(head + "core_speed = " + value + "\n");
    CHECK(contains(err, "field 'core_speed': " + value + " is out of range"));
    CHECK_FALSE(contains(err, "null"));
  }
  CHECK(contains(toml_error("edgeprof_device = 1\nname = \"b\"\ncores = nan\ncore_speed = 0.5\n"
                            "memory = \"1GiB\"\n"),
                 "expected a whole number, got nan"));
  CHECK(contains(toml_error(head + "core_speed = 0.5\n[cpu]\nmodel = -inf\n"),
                 "the number -inf"));
}

TEST_CASE("what Device::validate accepts is what a device file holds: it reads back equal",
          "[device-file]") {
  Device base = make_device("b", 2, 0.5, "1GiB");
  // Each: a change of the device, and whether validate() accepts it. Accepted devices must read
  // back equal from device_to_json(); refused ones are refused by the reader too.
  struct Case {
    const char* what;
    void (*change)(Device&);
    bool valid;
  };
  const Case cases[] = {
      {"cores at the limit", [](Device& d) { d.cores = 4096; }, true},
      {"cores past it", [](Device& d) { d.cores = 5000; }, false},
      {"the fastest core", [](Device& d) { d.core_speed = 1000; }, true},
      {"faster", [](Device& d) { d.core_speed = 1000.5; }, false},
      {"the slowest core", [](Device& d) { d.core_speed = 1e-6; }, true},
      {"slower", [](Device& d) { d.core_speed = 1e-7; }, false},
      {"reference speed past the limit", [](Device& d) { d.reference_speed = 2000; }, false},
      {"pids at the limit", [](Device& d) { d.pids_max = std::int64_t{1} << 30; }, true},
      {"pids past it", [](Device& d) { d.pids_max = (std::int64_t{1} << 30) + 1; }, false},
      {"a clock", [](Device& d) { d.cpu.clock_mhz = 1800; }, true},
      {"a clock below 1 MHz", [](Device& d) { d.cpu.clock_mhz = 0.5; }, false},
      {"power at the limit", [](Device& d) { d.power.loaded_watts = 10000; }, true},
      {"power past it", [](Device& d) { d.power.loaded_watts = 10001; }, false},
      {"a slow step", [](Device& d) { d.speed_schedule = {{0, 0.01}, {1e7, 1}}; }, true},
      {"too slow a step", [](Device& d) { d.speed_schedule = {{0, 0.005}}; }, false},
      {"too late a step", [](Device& d) { d.speed_schedule = {{2e7, 0.5}}; }, false},
      {"probe scores", [](Device& d) { d.scores = probe_scores(1, "integer"); }, true},
      {"a score of 0", [](Device& d) { d.scores = probe_scores(0); }, false},
      {"a spread of no kernel", [](Device& d) { d.scores = probe_scores(1, "disk"); }, false},
      {"a source", [](Device& d) { d.sources["cores"] = {"specified", "the datasheet"}; }, true},
      {"a source of no figure", [](Device& d) { d.sources["colour"] = {"specified", "x"}; },
       false},
      {"a status of none", [](Device& d) { d.sources["cores"] = {"guessed", "x"}; }, false},
      {"an alias", [](Device& d) { d.aliases = {"pi"}; }, true},
      {"an alias with a space", [](Device& d) { d.aliases = {"my pi"}; }, true},
      {"an alias with a slash", [](Device& d) { d.aliases = {"my/pi"}; }, false},
      {"a description", [](Device& d) { d.description = "4x Cortex-A72 \u00e9"; }, true},
      {"an escape in it", [](Device& d) { d.description = "\x1b]0;pwned\x07"; }, false},
      {"a bell in cpu.layout", [](Device& d) { d.cpu.layout = "4x A76\a4x A55"; }, false},
      {"a line break in cpu.layout", [](Device& d) { d.cpu.layout = "4x A76\n4x A55"; }, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Device d = base;
    c.change(d);
    bool valid = true;
    try {
      d.validate();
    } catch (const DeviceError&) {
      valid = false;
    }
    CHECK(valid == c.valid);
    const std::string text = device_to_json(d);
    if (valid) {
      CHECK(parse_device_json(text, "b.json") == d);
    } else {
      CHECK_THROWS_AS(parse_device_json(text, "b.json"), DeviceError);
    }
  }
}
