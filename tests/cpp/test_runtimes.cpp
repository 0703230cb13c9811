// The inference runtimes a workload loads: the maps parser on literal and captured text, the
// reading on fake /proc trees, the warning as a pure function, and real runs on this kernel.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "cgroup/files.hpp"
#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"
#include "nn/runtime_table.hpp"
#include "run/runtime_follow.hpp"
#include "nn/runtimes.hpp"
#include "sampler/sampler.hpp"

using namespace edgeprof;
using detail::RuntimesSeen;
using test::FakeTree;
using test::can_create_slices;

namespace {

// A PyTorch process in a virtual environment (the lines a real one has around libtorch_cpu.so,
// shortened: it has a few thousand).
constexpr const char* kTorchMaps =
    "55d4c3a00000-55d4c3a5b000 r--p 00000000 fd:01 1835023                    "
    "/home/ana/venv/bin/python3.11\n"
    "7f3b2c000000-7f3b2c021000 rw-p 00000000 00:00 0 \n"
    "7f3b30a00000-7f3b31b3c000 r--p 00000000 fd:01 2622466                    "
    "/home/ana/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so\n"
    "7f3b31b3c000-7f3b3e9fd000 r-xp 0113c000 fd:01 2622466                    "
    "/home/ana/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so\n"
    "7f3b3e9fd000-7f3b41e2c000 r--p 0dffd000 fd:01 2622466                    "
    "/home/ana/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so\n"
    "7f3b42000000-7f3b42100000 r-xp 00000000 fd:01 2622470                    "
    "/home/ana/venv/lib/python3.11/site-packages/torch/lib/libc10.so\n"
    "7f3b43000000-7f3b43200000 r-xp 00000000 fd:01 2622480                    "
    "/home/ana/venv/lib/python3.11/site-packages/torch/lib/libgomp-a34b3233.so.1\n"
    "7ffd5e3f2000-7ffd5e413000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd5e5e4000-7ffd5e5e6000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

constexpr const char* kOnnxMaps =
    "7f10aa000000-7f10aa400000 r-xp 00000000 08:01 399112                     "
    "/usr/local/lib/python3.11/dist-packages/onnxruntime/capi/"
    "onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so\n"
    "7f10ab000000-7f10ab010000 r-xp 00000000 08:01 399120                     "
    "/usr/local/lib/python3.11/dist-packages/onnxruntime/capi/"
    "libonnxruntime_providers_shared.so\n";

// The device of a catalog board at its nn speed, derived with ncnn.
Device nn_device(const std::string& basis = "ncnn") {
  Device d = make_device("board", 1, 0.5, "256MiB");
  NnSpeed nn;
  nn.core_speed = 0.165;
  nn.ratios = {{"mobilenet", 6.0}, {"resnet18", 6.2}};
  nn.precision = "fp32";
  nn.basis = basis;
  d.nn = nn;
  return for_speed_kind(d, SpeedKind::nn);
}

bool has_warning(const Result& r, const std::string& part) {
  return test::has_note(r.warnings, part);
}

}  // namespace

TEST_CASE("one table of runtimes: recognised by their libraries, rated where it says how",
          "[runtimes]") {
  std::set<std::string_view> ids, stems;
  std::vector<std::string> rated;
  for (const detail::RuntimeSpec& r : detail::runtime_table()) {
    CHECK(ids.insert(r.id).second);  // ids are unique
    CHECK_FALSE(r.name.empty());
    // A runtime edgeprof cannot see is no entry, but for another precision of one it can
    // (PyTorch int8 loads PyTorch's libraries), which has a rating and no stems of its own.
    if (r.precision_of.empty()) {
      REQUIRE_FALSE(r.stems.empty());
    } else {
      CHECK(r.stems.empty());
      REQUIRE(r.rating);
      CHECK(ids.count(r.precision_of));  // listed after the runtime it is a precision of
      CHECK(r.rating->precision != nn_runtime(std::string(r.precision_of)).precision);
    }
    for (const std::string_view s : r.stems) CHECK(stems.insert(s).second);  // no stem twice
    if (r.rating) {
      rated.emplace_back(r.id);
      // Its runner was compiled in, and its cache file is its own.
      CHECK(detail::runner_source(r.rating->runner) != nullptr);
      CHECK(r.rating->reads_graphs == r.rating->models.empty());
    }
  }
  // nn_runtimes() is the rated ones, in the table's order, ncnn first.
  std::vector<std::string> listed;
  for (const NnRuntime& r : nn_runtimes()) listed.push_back(r.id);
  CHECK(listed == rated);
  REQUIRE_FALSE(listed.empty());
  CHECK(listed.front() == "ncnn");
  // The cache files keep their names (a rename would drop every cached rating).
  CHECK(nn_runtime("ncnn").cache_name == "host-nn.json");
  CHECK(nn_runtime("pytorch").cache_name == "host-nn-pytorch.json");
  CHECK(nn_runtime("onnxruntime").cache_name == "host-nn-onnxruntime.json");
  CHECK(nn_runtime("onnxruntime").models == nn_runtime("pytorch").models);
  CHECK(nn_runtime("pytorch").models.size() == 13);
  CHECK(nn_runtime("pytorch-int8").cache_name == "host-nn-pytorch-int8.json");
  CHECK(nn_runtime("pytorch-int8").precision == "int8");
  CHECK(nn_runtime("pytorch-int8").precision_of == "pytorch");
  CHECK(nn_runtime("pytorch-int8").models.size() == 11);  // torchvision's quantizable ones
  CHECK(nn_runtime("pytorch").precision_of.empty());
  // What the runner is told, for scripts that run it themselves (benchmarks/torch_boards.py).
  // The models timed in passes through them all (a host's wandering speed shared alike), each
  // model run for a while in every pass and its mean taken (as a workload's loop runs and the
  // published tables were timed), each model's activations counted.
  CHECK(nn_runtime("pytorch-int8").runner_args ==
        std::vector<std::string>{"--precision=int8", "--rounds=8", "--min-time=2", "--mean",
                                 "--activations"});
  CHECK(nn_runtime("onnxruntime").runner_args ==
        std::vector<std::string>{"--backend=onnxruntime", "--rounds=8", "--min-time=2",
                                 "--mean", "--activations=graph"});
  CHECK(nn_runtime("pytorch").runner_args ==
        std::vector<std::string>{"--rounds=8", "--min-time=2", "--mean", "--activations"});
  CHECK(nn_runtime("ncnn").runner_args.empty());
  // A runtime that is only recognised is named in a run, but has no rating.
  CHECK(detail::runtime_name("tensorflow-lite") == "TensorFlow Lite");
  CHECK_THROWS_WITH(nn_runtime("tensorflow-lite"),
                    Catch::Contains("recognises but cannot run the runtime 'tensorflow-lite'"));
  CHECK(detail::runner_source("no_such_runner.py") == nullptr);
  CHECK(detail::runner_source("runner.py") == nn_runner_source());
  // Every rated runtime caches its rating and its own share under names of its own.
  std::set<std::string_view> names;
  for (const detail::RuntimeSpec& r : detail::runtime_table()) {
    if (!r.rating) continue;
    CHECK_FALSE(r.rating->cache_name.empty());
    CHECK_FALSE(r.rating->share_cache_name.empty());
    CHECK(names.insert(r.rating->cache_name).second);
    CHECK(names.insert(r.rating->share_cache_name).second);
    CHECK_FALSE(r.rating->share_models.empty());
    // How long its share takes is the descriptor's, and what nn_runtimes() tells callers.
    CHECK(r.rating->share_seconds > 0);
    CHECK(nn_runtime(r.id).share_seconds == r.rating->share_seconds);
    CHECK(nn_runtime(r.id).share_duration == detail::share_duration(r.id));
  }
  CHECK(detail::share_duration("ncnn") == "about 80 s");
  CHECK(detail::share_duration("pytorch") == "about 13 minutes");
  CHECK(detail::share_duration("onnxruntime") == "about 3 minutes");
  CHECK(detail::share_duration("tensorflow-lite") == "a few minutes");
  CHECK(detail::find_runtime("onnxruntime")->name == "ONNX Runtime");
  CHECK(detail::find_runtime("tflite") == nullptr);
}

TEST_CASE("runtimes in maps: PyTorch in a virtual environment, by its library's file name",
          "[runtimes]") {
  const RuntimesSeen seen = detail::runtimes_in_maps(kTorchMaps);
  CHECK(seen == RuntimesSeen{{"pytorch", "libtorch_cpu.so"}});
  CHECK(detail::runtime_name("pytorch") == "PyTorch");
  CHECK(detail::runtime_name("no-such-runtime") == "no-such-runtime");
}

TEST_CASE("runtimes in maps: ONNX Runtime's Python module", "[runtimes]") {
  CHECK(detail::runtimes_in_maps(kOnnxMaps) ==
        RuntimesSeen{
            {"onnxruntime", "onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"}});
}

TEST_CASE("runtimes in maps: a directory named ncnn is not ncnn; a model file is no library",
          "[runtimes]") {
  const std::string maps =
      "7f0000000000-7f0000001000 r-xp 00000000 08:01 11 /home/ana/src/ncnn/build/libfoo.so\n"
      "7f0000001000-7f0000002000 r--p 00000000 08:01 12 /home/ana/models/ncnn/ncnn.bin\n"
      "7f0000002000-7f0000003000 r--s 00000000 08:01 13 /home/ana/ncnn.param\n"
      "7f0000003000-7f0000004000 r-xp 00000000 08:01 14 /usr/lib/libncnn_helper.so\n"
      "7f0000004000-7f0000005000 r-xp 00000000 08:01 15 /opt/torch/libtorch_cpu.txt\n";
  CHECK(detail::runtimes_in_maps(maps).empty());
}

TEST_CASE("runtimes in maps: deleted files, spaces in paths, versions and auditwheel's names",
          "[runtimes]") {
  const std::string maps =
      "7f0000000000-7f0000001000 r-xp 00000000 08:01 21 "
      "/tmp/pip-unpack-x1/libonnxruntime.so.1.17.1 (deleted)\n"
      "7f0000001000-7f0000002000 r-xp 00000000 08:01 22 /home/ana/My Models/libtvm_runtime.so\n"
      "7f0000002000-7f0000003000 r-xp 00000000 08:01 23 "
      "/usr/lib/python3/dist-packages/ncnn.libs/libncnn-1a2b3c4d.so.1\n"
      "7f0000003000-7f0000004000 r-xp 00000000 08:01 24 "
      "/usr/lib/python3/dist-packages/tflite_runtime/"
      "_pywrap_tensorflow_interpreter_wrapper.cpython-311-x86_64-linux-gnu.so\n"
      "7f0000004000-7f0000005000 r-xp 00000000 08:01 25 /usr/lib/libopenvino.so.2024.0.0\n"
      "7f0000005000-7f0000006000 r-xp 00000000 08:01 26 /opt/tf/libtensorflow_framework.so.2\n"
      "7f0000006000-7f0000007000 rw-s 00000000 00:01 27 /memfd:ncnn.so (deleted)\n";
  CHECK(detail::runtimes_in_maps(maps) ==
        RuntimesSeen{{"ncnn", "libncnn-1a2b3c4d.so.1"},
                     {"onnxruntime", "libonnxruntime.so.1.17.1"},
                     {"openvino", "libopenvino.so.2024.0.0"},
                     {"tensorflow", "libtensorflow_framework.so.2"},
                     {"tensorflow-lite",
                      "_pywrap_tensorflow_interpreter_wrapper.cpython-311-x86_64-linux-gnu.so"},
                     {"tvm", "libtvm_runtime.so"}});
}

TEST_CASE("runtimes in maps: a real Python process that imported ncnn", "[runtimes]") {
  // tests/fixtures/maps/python3-ncnn.txt: /proc/self/maps of `python3 -c 'import ncnn'` here
  // (PyPI's ncnn wheel: ncnn/ncnn.cpython-311-x86_64-linux-gnu.so, ncnn.libs/libgomp-*.so).
  CHECK(detail::runtimes_in_maps(test::fixture("maps/python3-ncnn.txt")) ==
        RuntimesSeen{{"ncnn", "ncnn.cpython-311-x86_64-linux-gnu.so"}});
  CHECK(detail::runtimes_in_maps("").empty());
  CHECK(detail::runtimes_in_maps("garbage\n\n7f00-7f01 r-xp\n").empty());
}

TEST_CASE("the maps are read early, then once a second", "[runtimes]") {
  using std::chrono::milliseconds;
  CHECK(detail::runtime_scan_at(0) == milliseconds(125));
  CHECK(detail::runtime_scan_at(1) == milliseconds(250));
  CHECK(detail::runtime_scan_at(2) == milliseconds(500));
  CHECK(detail::runtime_scan_at(3) == milliseconds(1000));
  CHECK(detail::runtime_scan_at(4) == milliseconds(2000));
  CHECK(detail::runtime_scan_at(10) == milliseconds(8000));
}

TEST_CASE("the warning: another runtime than the one the nn speed was derived with",
          "[runtimes]") {
  const Device nn = nn_device();
  const RuntimesSeen torch = {{"pytorch", "libtorch_cpu.so"}};
  const auto warning = detail::runtime_warning(nn, torch);
  REQUIRE(warning);
  CHECK_THAT(*warning, Catch::StartsWith("the workload loaded PyTorch (libtorch_cpu.so); the "
                                         "device's speed was derived with ncnn (0.165 of a host "
                                         "core)"));
  CHECK_THAT(*warning, Catch::Contains("docs/fidelity.md"));

  // Several, ncnn among them: the others are named.
  const RuntimesSeen three = {{"ncnn", "libncnn.so.1"},
                              {"onnxruntime", "libonnxruntime.so.1.17.1"},
                              {"pytorch", "libtorch_cpu.so"},
                              {"tvm", "libtvm.so"}};
  CHECK_THAT(*detail::runtime_warning(nn, three),
             Catch::StartsWith("the workload loaded ONNX Runtime (libonnxruntime.so.1.17.1), "
                               "PyTorch (libtorch_cpu.so) and TVM (libtvm.so);"));

  // No warning: ncnn alone, nothing seen, the integer speed, a probed device's vector speed.
  CHECK_FALSE(detail::runtime_warning(nn, {{"ncnn", "libncnn.so.1"}}));
  CHECK_FALSE(detail::runtime_warning(nn, {}));
  CHECK_FALSE(detail::runtime_warning(make_device("board", 1, 0.5, "256MiB"), torch));
  Device integer = nn_device();
  integer.speed_kind.clear();
  CHECK_FALSE(detail::runtime_warning(integer, torch));
  CHECK_FALSE(detail::runtime_warning(nn_device("vector"), torch));
}

TEST_CASE("a device at its PyTorch speed is warned of other runtimes, not of PyTorch",
          "[runtimes]") {
  const Device torch_speed = nn_device("pytorch");
  const RuntimesSeen torch = {{"pytorch", "libtorch_cpu.so"}};
  CHECK_FALSE(detail::runtime_warning(torch_speed, torch));
  const auto other = detail::runtime_warning(
      torch_speed, {{"onnxruntime", "libonnxruntime.so.1.17.1"}, {"pytorch", "libtorch_cpu.so"}});
  REQUIRE(other);
  CHECK_THAT(*other, Catch::StartsWith("the workload loaded ONNX Runtime "
                                       "(libonnxruntime.so.1.17.1); the device's speed was "
                                       "derived with PyTorch (0.165 of a host core)"));
  CHECK_THAT(*other, !Catch::Contains("--runtime pytorch"));
  // At ncnn's speed, a PyTorch workload is told how to get PyTorch's.
  CHECK_THAT(*detail::runtime_warning(nn_device(), torch), Catch::Contains("--runtime pytorch"));
  // Every rated runtime seen gets the hint (ONNX Runtime's was missing); a recognised one not.
  const auto ort = detail::runtime_warning(
      nn_device(), {{"onnxruntime", "libonnxruntime.so.1.17.1"}, {"tvm", "libtvm.so"}});
  REQUIRE(ort);
  CHECK_THAT(*ort, Catch::Contains("for ONNX Runtime, devices with published ONNX Runtime times "
                                   "run at their ONNX Runtime speed with --runtime onnxruntime"));
  CHECK_THAT(*ort, !Catch::Contains("--runtime tvm") && !Catch::Contains("--runtime pytorch"));
}

TEST_CASE("a device at its PyTorch int8 speed: PyTorch's libraries are its own, not another's",
          "[runtimes]") {
  const RuntimesSeen torch = {{"pytorch", "libtorch_cpu.so"}};
  // PyTorch int8 is seen as PyTorch (the same libraries): no warning.
  CHECK_FALSE(detail::runtime_warning(nn_device("pytorch-int8"), torch));
  // ONNX Runtime beside it is another runtime.
  const auto other = detail::runtime_warning(
      nn_device("pytorch-int8"),
      {{"onnxruntime", "libonnxruntime.so.1.17.1"}, {"pytorch", "libtorch_cpu.so"}});
  REQUIRE(other);
  CHECK_THAT(*other, Catch::StartsWith("the workload loaded ONNX Runtime "
                                       "(libonnxruntime.so.1.17.1); the device's speed was "
                                       "derived with PyTorch int8"));
  // At ncnn's speed a PyTorch workload hears of PyTorch's int8 speed where the device has
  // int8 times, and only there.
  Device with_int8 = nn_device();
  with_int8.runtime_ms["pytorch-int8"] = RuntimeTimes{"int8", 4, {{"resnet18", 100}}};
  const auto hint = detail::runtime_warning(with_int8, torch);
  REQUIRE(hint);
  // Each hint with its own parentheses: the int8 one after the runtimes' pointer, not beside it.
  CHECK_THAT(*hint, Catch::EndsWith("--runtime pytorch (Device.for_runtime, docs/devices.md); "
                                    "int8 models: --runtime pytorch-int8 (the device's PyTorch "
                                    "int8 times)"));
  CHECK_THAT(*detail::runtime_warning(nn_device(), torch), !Catch::Contains("pytorch-int8"));
  CHECK(detail::precision_hint(with_int8, "onnxruntime").empty());
  // PyTorch's libraries show "pytorch", whatever the precision.
  CHECK(detail::runtimes_in_maps("7f0000000000-7f0000001000 r-xp 00000000 08:01 1 "
                                 "/venv/lib/torch/lib/libtorch_cpu.so\n") == torch);
}

TEST_CASE("reading a slice's maps on a fake /proc: exited and unreadable processes are skipped",
          "[runtimes]") {
  FakeTree tree;
  const std::string procs =
      detail::join("/sys/fs/cgroup/pids/edgeprof-1-2-3", detail::files::kProcs);
  tree.file(procs, "300\n100\n200\n");
  tree.file("/proc/100/maps", kTorchMaps);
  // 200 exited after cgroup.procs was read: no /proc/200. 300's maps cannot be read.
  tree.dir("/proc/300/maps");
  detail::RuntimeWatch watch(detail::Fs(tree.root()), procs);
  watch.scan();
  CHECK(watch.seen() == RuntimesSeen{{"pytorch", "libtorch_cpu.so"}});

  // What was seen stays seen after the process is gone; reset() forgets it for the next run.
  tree.file(procs, "");
  watch.scan();
  CHECK(watch.seen().count("pytorch") == 1);
  watch.reset();
  CHECK(watch.seen().empty());

  // A removed slice (no cgroup.procs): nothing, and no exception.
  detail::RuntimeWatch gone(detail::Fs(tree.root()),
                            detail::join("/sys/fs/cgroup/pids/gone", detail::files::kProcs));
  gone.scan();
  CHECK(gone.seen().empty());
}

TEST_CASE("a runtime's version: its wheel's dist-info beside the package's directory",
          "[runtimes]") {
  // A rating measured with one PyTorch set the speed of a workload that loaded another,
  // unsaid (a `pip install -U torch` since): the versions are now compared.
  FakeTree tree;
  const std::string site = "/venv/lib/python3.11/site-packages";
  tree.file(site + "/torch/lib/libtorch_cpu.so", "");
  tree.dir(site + "/torch-2.5.1+cpu.dist-info");
  tree.dir(site + "/torchvision-0.20.1.dist-info");  // another package's, not torch's
  tree.file(site + "/onnxruntime/capi/onnxruntime_pybind11_state.so", "");
  tree.dir(site + "/onnxruntime-1.20.1.dist-info");
  tree.file(site + "/ncnn.libs/libncnn-1a2b3c4d.so.1", "");  // auditwheel's
  tree.dir(site + "/NCNN-1.0.20240410.dist-info");  // any case
  tree.file("/usr/lib/libtorch_cpu.so", "");  // a system library: no wheel
  const detail::Fs fs(tree.root());
  CHECK(detail::package_version(fs, site + "/torch/lib/libtorch_cpu.so") == "2.5.1+cpu");
  CHECK(detail::package_version(fs, site + "/onnxruntime/capi/onnxruntime_pybind11_state.so") ==
        "1.20.1");
  CHECK(detail::package_version(fs, site + "/ncnn.libs/libncnn-1a2b3c4d.so.1") == "1.0.20240410");
  CHECK_FALSE(detail::package_version(fs, "/usr/lib/libtorch_cpu.so"));
  CHECK_FALSE(detail::package_version(fs, "libtorch_cpu.so"));

  CHECK(detail::version_in("PyTorch 2.5.1+cpu fp32 eager (torchvision 0.20.1)", "pytorch") ==
        "2.5.1+cpu");
  CHECK(detail::version_in("PyTorch 2.5.1 int8 qnnpack TorchScript", "pytorch-int8") == "2.5.1");
  CHECK(detail::version_in("ONNX Runtime 1.20.1 fp32 CPU provider", "onnxruntime") == "1.20.1");
  CHECK(detail::version_in("ncnn 1.0.20240410 (Python 3.11.7)", "ncnn") == "1.0.20240410");
  // ncnn built without its version says "dev": not Python's "3.11.7)" instead.
  CHECK_FALSE(detail::version_in("ncnn dev (Python 3.11.7)", "ncnn"));
  CHECK_FALSE(detail::version_in("PyTorch 2.5.1 fp32", "onnxruntime"));  // another's text

  // The warning: another release than the rating's; none where they agree (PyPI's torch is
  // "2.5.1" in its .dist-info, "2.5.1+cu124" in torch.__version__) or one is unknown.
  const auto other = detail::version_warning("pytorch", "2.5.1+cpu", "PyTorch 2.1.0 fp32 eager",
                                             "/c/host-nn-pytorch.json", "2026-01-02T03:04:05Z");
  REQUIRE(other);
  CHECK_THAT(*other, Catch::Contains("the workload loaded PyTorch 2.5.1+cpu") &&
                         Catch::Contains("measured with PyTorch 2.1.0 (/c/host-nn-pytorch.json") &&
                         Catch::Contains("--nn --runtime pytorch --remeasure --python PY"));
  // int8 is a precision of PyTorch: its libraries are PyTorch's.
  const auto int8 = detail::version_warning("pytorch-int8", "2.5.1", "PyTorch 2.1.0 int8 qnnpack",
                                            "/c/i.json", "2026-01-02T03:04:05Z");
  REQUIRE(int8);
  CHECK_THAT(*int8, Catch::Contains("--runtime pytorch-int8"));
  CHECK_FALSE(detail::version_warning("pytorch", "2.5.1", "PyTorch 2.5.1+cu124 fp32", "", ""));
  CHECK_FALSE(detail::version_warning("pytorch", "2.5.1+cpu", "PyTorch 2.5.1+cpu fp32", "", ""));
  CHECK_FALSE(detail::version_warning("pytorch", "", "PyTorch 2.1.0 fp32", "", ""));
  CHECK_FALSE(detail::version_warning("ncnn", "1.0.1", "ncnn dev (Python 3.11.7)", "", ""));

  // Read with the maps: the whole path of the first library that showed each runtime, not of a
  // deleted one (its path may hold another release since).
  const std::string procs = detail::join("/cg", detail::files::kProcs);
  tree.file(procs, "100\n");
  tree.file("/proc/100/maps", "7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /old/torch/lib/"
                              "libtorch_cpu.so (deleted)\n"
                              "7f0000001000-7f0000002000 r-xp 00000000 08:01 2 " +
                                  site + "/torch/lib/libtorch_cpu.so\n");
  detail::RuntimeWatch watch(fs, procs);
  watch.scan();
  CHECK(watch.seen() == RuntimesSeen{{"pytorch", "libtorch_cpu.so"}});
  CHECK(watch.paths() == RuntimesSeen{{"pytorch", site + "/torch/lib/libtorch_cpu.so"}});
  watch.reset();
  CHECK(watch.paths().empty());
}

TEST_CASE("a read looks at a bounded number of processes and goes on where it stopped",
          "[runtimes]") {
  FakeTree tree;
  const std::string procs = detail::join("/cg", detail::files::kProcs);
  std::string list;
  const int n = static_cast<int>(detail::kMaxMapsPerScan) + 2;
  for (int pid = 1; pid <= n; ++pid) {
    list += std::to_string(pid) + "\n";
    tree.file("/proc/" + std::to_string(pid) + "/maps", "");
  }
  tree.file(procs, list);
  tree.file("/proc/" + std::to_string(n) + "/maps", kOnnxMaps);  // the last one
  detail::RuntimeWatch watch(detail::Fs(tree.root()), procs);
  watch.scan();
  CHECK(watch.seen().empty());  // the first kMaxMapsPerScan processes
  watch.scan();
  CHECK(watch.seen().count("onnxruntime") == 1);
}

TEST_CASE("the sampler reads the maps of a run on its own", "[runtimes][sampler]") {
  FakeTree tree;
  const std::string procs = detail::join("/cg", detail::files::kProcs);
  tree.file(detail::join("/cg", detail::files::v2::kCpuStat),
            "usage_usec 100\nuser_usec 60\nsystem_usec 40\n");
  tree.file(procs, "4242\n");
  tree.file("/proc/4242/maps", kTorchMaps);
  const detail::Fs fs(tree.root());
  detail::Sampler sampler(detail::Sources::v2(fs, "/cg"), std::chrono::milliseconds(10));
  sampler.watch_runtimes(detail::RuntimeWatch(fs, procs));
  sampler.start();
  // The first read is due 125 ms after the start; however late the thread gets to it.
  const bool seen = test::eventually([&] { return sampler.runtimes_seen().count("pytorch") > 0; });
  sampler.stop();
  CHECK(seen);

  // The next run starts with nothing seen.
  tree.file(procs, "");
  sampler.start();
  sampler.stop();
  CHECK(sampler.runtimes_seen().empty());
}

TEST_CASE("runtimes seen in JSON and text; a report without them reads as none",
          "[runtimes][report][json]") {
  Result r;
  r.exit_code = 0;
  r.device = make_device("board", 1, 0.5, "256MiB");
  r.runtimes_seen = {{"pytorch", "libtorch_cpu.so"}, {"ncnn", "libncnn.so.1"}};
  r.host = host_info();
  const std::string text = to_json(r);
  CHECK_THAT(text, Catch::Contains(
                       R"("runtimes_seen":{"ncnn":"libncnn.so.1","pytorch":"libtorch_cpu.so"})"));
  const Result back = result_from_json(text);
  CHECK(back.runtimes_seen == r.runtimes_seen);
  CHECK(back == r);
  CHECK_THAT(to_text(r),
             Catch::Contains("runtimes      ncnn (libncnn.so.1), PyTorch (libtorch_cpu.so)"));

  // A report written before the field existed.
  std::string old = text;
  const std::string field =
      R"("runtimes_seen":{"ncnn":"libncnn.so.1","pytorch":"libtorch_cpu.so"},)";
  old.erase(old.find(field), field.size());
  const Result older = result_from_json(old);
  CHECK(older.runtimes_seen.empty());
  CHECK(to_text(older).find("runtimes ") == std::string::npos);
}

TEST_CASE("a run lists the runtime its workload loaded and warns at an ncnn-derived speed",
          "[runtimes][kernel]") {
  REQUIRE_CGROUPS();
  // The workload helper under a runtime's library name: its executable is mapped from that file.
  FakeTree dir;
  const std::string library = dir.root() + "/libtorch_cpu.so";
  std::filesystem::copy_file(test::helper("edgeprof_workload"), library);
  std::filesystem::permissions(library, std::filesystem::perms::owner_all);
  for (const auto interval : {kDefaultSampleIntervalNs, std::int64_t{0}}) {
    CAPTURE(interval);
    Slice slice(nn_device());
    SpawnOptions options;
    options.sample_interval = std::chrono::nanoseconds(interval);
    Command sleeper;
    sleeper.argv = {library, "sleep", "600"};
    Child child = slice.spawn(sleeper, options);
    // Once its maps hold the copy, whatever the time. (Not once /proc/PID/exe names it: exe
    // names the new program before the kernel has mapped it, and a loaded VM saw no runtime.)
    const std::string maps = "/proc/" + std::to_string(child.pid()) + "/maps";
    REQUIRE(test::eventually(
        [&] { return FakeTree::slurp(maps).find(library) != std::string::npos; }));
    // A timeout that has passed: the maps are read before the workload is killed.
    const Result r = child.wait(std::chrono::duration<double>(1e-3));
    CHECK(r.timed_out);
    CHECK(r.runtimes_seen == RuntimesSeen{{"pytorch", "libtorch_cpu.so"}});
    CHECK(has_warning(r, "the workload loaded PyTorch (libtorch_cpu.so)"));
  }
}

TEST_CASE("a Python workload that imports ncnn shows ncnn", "[runtimes][kernel]") {
  REQUIRE_CGROUPS();
  if (std::system("python3 -c 'import ncnn' 2>/dev/null") != 0) {
    WARN("python3 has no ncnn: not run (pip install ncnn)");
    return;
  }
  FakeTree dir;
  const std::string imported = dir.root() + "/imported";
  Slice slice(nn_device());
  Command python;
  python.argv = {"python3", "-c",
                 "import sys, time, ncnn\nopen(sys.argv[1], 'w').close()\ntime.sleep(600)\n",
                 imported};
  Child child = slice.spawn(python);
  REQUIRE(test::eventually([&] { return dir.exists("/imported"); }));
  const Result r = child.wait(std::chrono::duration<double>(1e-3));
  CHECK(r.timed_out);
  CHECK(r.runtimes_seen.count("ncnn") == 1);
  CHECK_FALSE(has_warning(r, "the workload loaded"));  // ncnn is the speed's own runtime
}

namespace {

// This host's PyTorch rating in a cache of the test's own (every model at 20 ms).
void rate_pytorch(const FakeTree& bin) {
  NnOptions options;
  options.runtime = "pytorch";
  options.python = test::fake_torch_python(bin, 20.0);
  measure_nn_rating(options);
}

}  // namespace

TEST_CASE("followed speeds: a device with PyTorch times, planned at the speed edgeprof chose",
          "[runtimes][nn]") {
  const FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const Device pi = find_device("raspberry-pi-4b-4gb");
  const HostFacts host = test::two_cpu_host();
  PlanOptions options;
  options.measure_nn = false;
  options.cpus = host.cpus;
  const EmulationPlan plan = plan_emulation(pi, host, options);
  std::vector<std::string> notes;
  // No rating on this host: not followed, and the note says how to measure it.
  CHECK(detail::followed_speeds(pi, host, options, plan, 2, notes).empty());
  CHECK(test::has_note(notes, "is not run at the device's PyTorch speed"));
  CHECK(test::has_note(notes, "calibrate-host --nn --runtime pytorch"));

  const FakeTree bin;
  rate_pytorch(bin);
  notes.clear();
  const std::vector<detail::FollowedSpeed> speeds =
      detail::followed_speeds(pi, host, options, plan, 2, notes);
  REQUIRE(speeds.size() == 1);  // PyTorch; ONNX Runtime has no rating here
  const detail::FollowedSpeed& torch = speeds[0];
  CHECK(torch.runtime == "pytorch");
  REQUIRE(torch.device.nn);
  CHECK(torch.device.nn->basis == "pytorch");
  CHECK(torch.device.core_speed == Approx(for_runtime(pi, "pytorch").core_speed));
  CHECK(torch.plan.cpus == plan.cpus);
  CHECK(torch.plan.cpu_quota_us != plan.cpu_quota_us);
  CHECK(test::has_note(notes, "if the workload loads PyTorch, the device runs at its PyTorch "
                              "speed from then on"));
  CHECK(test::has_note(notes, "is not run at the device's ONNX Runtime speed"));

  // PyTorch int8, rated too: named (for_runtime), never followed, for a workload shows
  // PyTorch's libraries whatever its precision.
  const FakeTree bin8;
  NnOptions int8;
  int8.runtime = "pytorch-int8";
  int8.python = test::fake_torch_python(bin8, 40.0);
  const NnRating rated8 = measure_nn_rating(int8);
  CHECK(rated8.precision == "int8");
  CHECK(rated8.host_ms.size() == 11);
  CHECK_THAT(FakeTree::slurp(bin8.root() + "/args.txt"), Catch::Contains("--precision=int8"));
  notes.clear();
  const auto with_int8 = detail::followed_speeds(pi, host, options, plan, 2, notes);
  REQUIRE(with_int8.size() == 1);
  CHECK(with_int8[0].runtime == "pytorch");
  // PyTorch's follow note names the int8 speed the Pi 4 has, to be named.
  CHECK(test::has_note(notes, "int8 models: --runtime pytorch-int8"));
  for (const std::string& n : notes) CHECK_THAT(n, !Catch::Contains("loads PyTorch int8"));
  const Device at8 = for_runtime(pi, "pytorch-int8");
  REQUIRE(at8.nn);
  CHECK(at8.nn->basis == "pytorch-int8");
  CHECK(at8.nn->precision == "int8");
  CHECK(at8.nn->threads == 4);  // the tutorial's table: all four cores, made one core's
  CHECK(at8.core_speed != Approx(for_runtime(pi, "pytorch").core_speed));

  // Core emulation auto keeps what it chose at the start: pooled here (no nn rating: the
  // described speed), though the PyTorch speed on its own would be projected.
  PlanOptions automatic = options;
  automatic.cores = CoreEmulation::automatic;
  const EmulationPlan auto_plan = plan_emulation(pi, host, automatic);
  REQUIRE_FALSE(auto_plan.threads_projection);
  REQUIRE(plan_emulation(for_runtime(pi, "pytorch"), host, automatic).threads_projection);
  notes.clear();
  const std::vector<detail::FollowedSpeed> kept =
      detail::followed_speeds(pi, host, automatic, auto_plan, 2, notes);
  REQUIRE(kept.size() == 1);
  CHECK_FALSE(kept[0].plan.threads_projection);
  CHECK(kept[0].plan.cpus == auto_plan.cpus);

  // A speed chosen by the user is kept, whatever the workload loads.
  for (SpeedKind kind : {SpeedKind::integer, SpeedKind::nn}) {
    PlanOptions chosen = options;
    chosen.speed_kind = kind;
    notes.clear();
    CHECK(detail::followed_speeds(pi, host, chosen, plan, 2, notes).empty());
    CHECK(notes.empty());
  }
  CHECK(detail::followed_speeds(for_runtime(pi, "pytorch"), host, options, plan, 2, notes)
            .empty());
  // A device without other runtimes' times has nothing to follow.
  CHECK(detail::followed_speeds(find_device("beaglebone-black"), host, options, plan, 1, notes)
            .empty());
  // A speed schedule's quotas would be rewritten by both: kept, and the note says so.
  Device scheduled = pi;
  scheduled.speed_schedule = {SpeedStep{1.0, 0.5}};
  notes.clear();
  CHECK(detail::followed_speeds(scheduled, host, options, plan, 2, notes).empty());
  CHECK(test::has_note(notes, "the speed stays as planned whatever runtime the workload loads"));
}

TEST_CASE("a workload that loads PyTorch switches the slice to the device's PyTorch speed",
          "[runtimes][nn][kernel]") {
  REQUIRE_CGROUPS();
  const FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const FakeTree bin;
  rate_pytorch(bin);
  // The workload helper under PyTorch's library name: its executable is mapped from that file.
  FakeTree dir;
  const std::string library = dir.root() + "/libtorch_cpu.so";
  std::filesystem::copy_file(test::helper("edgeprof_workload"), library);
  std::filesystem::permissions(library, std::filesystem::perms::owner_all);

  SliceOptions options;
  options.plan.measure_nn = false;
  Device pi = find_device("raspberry-pi-4b-1gb");
  pi.memory_bytes = 256 << 20;  // within the v2 VM's memory too
  Slice slice(pi, options);
  const Device planned = slice.device();
  CHECK(test::has_note(slice.plan(), "if the workload loads PyTorch"));
  const std::optional<std::uint64_t> quota_before = test::kernel_bandwidth(slice.paths()).quota_us;

  Command torch;
  torch.argv = {library, "sleep", "600"};
  Child child = slice.spawn(torch);  // sampled: the sampler reads the maps
  // The kernel's quota changes once the sampler has seen the library in the maps.
  REQUIRE(test::eventually(
      [&] { return test::kernel_bandwidth(slice.paths()).quota_us != quota_before; }));
  const test::KernelBandwidth switched = test::kernel_bandwidth(slice.paths());
  const Result r = child.wait(std::chrono::duration<double>(1e-3));
  CHECK(r.timed_out);
  // The result is of the PyTorch speed, and says when the switch was made and from what.
  REQUIRE(r.device.nn);
  CHECK(r.device.nn->basis == "pytorch");
  CHECK(r.device.core_speed != planned.core_speed);
  REQUIRE(r.speed_changes.size() == 1);
  const SpeedChange& c = r.speed_changes[0];
  CHECK(c.runtime == "pytorch");
  CHECK(c.error.empty());
  CHECK(c.t_s >= 0);
  CHECK(c.cpu_period_us == switched.period_us);
  CHECK(std::optional<std::uint64_t>(c.cpu_quota_us) == switched.quota_us);
  CHECK(r.plan.cpu_quota_us == c.cpu_quota_us);
  // Its interval is the PyTorch speed's, from its 13 models.
  REQUIRE(r.device_interval);
  CHECK(r.device_interval->models == 13);
  CHECK(r.device_interval->low < 1);
  CHECK(has_warning(r, "the workload loaded PyTorch (libtorch_cpu.so): the device ran at its "
                       "described core speed"));
  CHECK_FALSE(has_warning(r, "another runtime's ratio"));  // the speed is PyTorch's own
  CHECK(result_from_json(to_json(r)).speed_changes.at(0).runtime == "pytorch");

  // The slice stays at that speed: the next workload starts at it, with no change to report.
  Command sleeper = test::workload({"sleep", "0.05"});
  const Result next = slice.spawn(sleeper).wait();
  CHECK(next.speed_changes.empty());
  REQUIRE(next.device.nn);
  CHECK(next.device.nn->basis == "pytorch");
  CHECK_FALSE(has_warning(next, "the workload loaded"));
  CHECK(test::kernel_bandwidth(slice.paths()).quota_us == switched.quota_us);
}

TEST_CASE("a device faster than a host core at edgeprof's speed starts at a runtime's that fits",
          "[runtimes][nn][kernel]") {
  REQUIRE_CGROUPS();
  const FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  // The Pi 5 as it is on a slower host: faster than a host core at its described speed (and
  // at its ncnn fp16 one), slower at its PyTorch speed.
  Device pi5 = find_device("raspberry-pi-5-8gb");
  pi5.memory_bytes = 256 << 20;  // within the v2 VM's memory too
  pi5.reference_speed.reset();
  pi5.core_speed = 1.5;
  SliceOptions options;
  options.plan.measure_nn = false;
  // Without this host's PyTorch rating there is no speed to start at: refused as before.
  CHECK_THROWS_AS(Slice(pi5, options), UnsupportedError);
  // Nor at an int8 speed (as if the Pi 5 had int8 times, rated here): a precision of a runtime
  // is only ever named, never chosen for a workload whose precision nobody said.
  Device int8_only = pi5;
  int8_only.runtime_ms["pytorch-int8"] = RuntimeTimes{"int8", 4, {{"resnet18", 60}}};
  const FakeTree bin8;
  NnOptions int8;
  int8.runtime = "pytorch-int8";
  int8.python = test::fake_torch_python(bin8, 40.0);
  measure_nn_rating(int8);
  REQUIRE(for_runtime(int8_only, "pytorch-int8").core_speed < 1);  // it would fit
  CHECK_THROWS_AS(Slice(int8_only, options), UnsupportedError);

  const FakeTree bin;
  rate_pytorch(bin);
  Slice slice(pi5, options);
  REQUIRE(slice.device().nn);
  CHECK(slice.device().nn->basis == "pytorch");
  CHECK(slice.device().core_speed < 1);
  CHECK(test::has_note(slice.plan(), "cannot be emulated at the speed edgeprof would choose"));
  CHECK(test::has_note(slice.plan(), "it starts at its PyTorch speed"));
  // A workload that loads no runtime is told its times are PyTorch's.
  const Result r = slice.spawn(test::workload({"sleep", "0.05"})).wait();
  REQUIRE(r.device.nn);
  CHECK(r.device.nn->basis == "pytorch");
  CHECK(has_warning(r, "ran at its PyTorch speed"));
  CHECK(r.speed_changes.empty());
}
