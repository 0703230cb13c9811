// A slice that counts its workload's activations (PlanOptions::count_activations): the count's
// line on the phase channel, when a slice counts, and the speed a count sets in the kernel.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"
#include "cgroup/backend.hpp"
#include "nn/runner_dir.hpp"
#include "run/runtime_follow.hpp"
#include "sys/parse.hpp"

using namespace edgeprof;
using Catch::Matchers::Contains;
using test::can_create_slices;
using test::FakeTree;

namespace {

// How long a workload that sent a count stays: the count sets this run's speed only if the
// sampler read it before the workload exited (else it is "read as it exited", the next run's).
// 3 s: 0.5 s was a few of the VM's ticks under load.
constexpr const char* kAfterCount = "; sleep 3";

// A shell command's words that write `line` on the workload's phase channel, as the counter
// does (the pipe reopened through /proc: a shell's >&N takes one digit in some shells).
std::string send(const std::string& line) {
  return "echo '" + line + "' > /proc/self/fd/${EDGEPROF_PHASE_FD%%:*}";
}

// A rating of `runtime` in the test's cache, measured from a stand-in interpreter that prints
// each model of `cases` (shell case arms setting its time t and activations a) as a runner does.
void rate_stand_in(const FakeTree& bin, const std::string& runtime, const std::string& what,
                   const std::string& cases, std::size_t models) {
  const std::string body = "#!/bin/sh\necho 'runtime " + what + "'\nshift 4\n"
                           "for m in \"$@\"; do case $m in\n" + cases +
                           "  *) continue;;\nesac\n"
                           "echo \"activations $m $a\"; echo \"$m $t $t $t\"; done\n";
  bin.file("/python-" + runtime, body);
  const std::string path = bin.root() + "/python-" + runtime;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  NnOptions options;
  options.runtime = runtime;
  options.python = path;
  const NnRating r = measure_nn_rating(options);
  REQUIRE(r.activation_mb.size() == models);
}

// This host's PyTorch rating in a cache of the test's own: the thirteen models with times and
// activations of the shape a real rating has (this project's host, rounded), so that a memory
// term can be fitted to the Pi 4's published times.
void rate_pytorch_with_activations(const FakeTree& bin, const std::string& runtime = "pytorch") {
  rate_stand_in(bin, runtime, runtime + " 2.0.test fp32 (stand-in)",
                "  efficientnet_b0) t=24.7 a=51.7;; ese_vovnet19b_dw) t=41.7 a=56.4;;\n"
                "  mixnet_s) t=23.7 a=47.5;; mnasnet_a1) t=17.8 a=47.5;; mobilenetv2_050) t=9.0 "
                "a=27.9;;\n"
                "  mobilenetv2_100) t=17.3 a=51.1;; mobilenetv2_110d) t=22.8 a=66.8;;\n"
                "  mobilenetv3_large_100) t=14.3 a=33.0;; mobilenetv3_small_050) t=4.3 a=7.0;;\n"
                "  repvgg_b0) t=67.4 a=36.9;; resnet18) t=41.2 a=29.9;; shufflenet_v2_x1_0) "
                "t=10.8 a=21.9;;\n"
                "  vgg13) t=408.9 a=104.2;;\n",
                13);
}

// This host's PyTorch int8 rating in the test's cache: the eleven quantizable models with times
// and activations (their operators' outputs) of the shape a real rating has (rounded).
void rate_int8_with_activations(const FakeTree& bin) {
  rate_stand_in(bin, "pytorch-int8", "PyTorch 2.0.test int8 qnnpack TorchScript (stand-in)",
                "  googlenet) t=72.5 a=6.04;; inception_v3) t=127.8 a=7.44;; mobilenet_v2) "
                "t=21.1 a=7.05;;\n"
                "  mobilenet_v3_large) t=16.9 a=7.10;; resnet18) t=85.4 a=3.59;; resnet50) "
                "t=191.7 a=17.0;;\n"
                "  resnext101_32x8d) t=753.4 a=40.5;; shufflenet_v2_x0_5) t=4.5 a=1.93;;\n"
                "  shufflenet_v2_x1_0) t=10.5 a=3.82;; shufflenet_v2_x1_5) t=18.1 a=5.48;;\n"
                "  shufflenet_v2_x2_0) t=32.4 a=7.42;;\n",
                11);
}

// A run whose count of `runtime`'s model (mb_per_ms as rated) set its speed: the change made
// without error, and the device at that runtime's speed with that memory term.
void check_counted(const Result& r, const SpeedChange& c, const std::string& runtime,
                   double mb_per_ms) {
  CHECK(c.runtime == runtime);
  CHECK(c.error.empty());
  CHECK(c.memory_mb_per_ms == Approx(mb_per_ms));
  REQUIRE(r.device.nn);
  CHECK(r.device.nn->basis == runtime);
  CHECK(r.device.nn->memory_mb_per_ms == Approx(mb_per_ms));
}

// What the cases in a slice count in: a cache of the test's own with the PyTorch rating above,
// and the Pi 4 (1 GB, at 256 MiB: within the v2 VM's memory too) at its PyTorch speed, counting.
struct CountingSetUp {
  FakeTree cache;
  test::ScopedEnv env{"EDGEPROF_CACHE_DIR", cache.root()};
  FakeTree bin;
  SliceOptions options;
  Device pi;
  CountingSetUp() {
    rate_pytorch_with_activations(bin);
    options.plan.measure_nn = false;
    options.plan.count_activations = true;
    pi = for_runtime(find_device("raspberry-pi-4b-1gb"), "pytorch");
    pi.memory_bytes = 256 << 20;
  }
};

}  // namespace

TEST_CASE("an activation count on the phase channel: the last well-formed one", "[counting]") {
  using detail::last_activation_count;
  CHECK_FALSE(last_activation_count(""));
  CHECK_FALSE(last_activation_count("12 M infer\n12 B load\n"));
  const auto c = last_activation_count("5 M warm\n7 A 51.14 12.5 5\n9 M infer\n");
  REQUIRE(c);
  CHECK(c->mb == Approx(51.14));
  CHECK(c->cpu_ms == Approx(12.5));
  CHECK(c->calls == 5);
  CHECK(c->runtime == "pytorch");  // none named: PyTorch's
  CHECK(c->mb_per_ms() == Approx(51.14 / 12.5));
  // A count names the runtime it counted; one not counted by edgeprof is skipped.
  const auto ort = last_activation_count("7 A 51.14 12.5 5 onnxruntime\n");
  REQUIRE(ort);
  CHECK(ort->runtime == "onnxruntime");
  const auto torch = last_activation_count("7 A 51.14 12.5 5 pytorch\n");
  REQUIRE(torch);
  CHECK(torch->runtime == "pytorch");
  // The last one wins; malformed ones are skipped, whatever follows them.
  CHECK(last_activation_count("1 A 10 2 5\n2 A 30 3 5\n")->mb == Approx(30));
  for (const char* bad : {"1 A 10 2\n", "1 A 10 2 5 x\n", "1 A 10 2 5 ncnn\n",
                          "1 A 10 2 5 onnxruntime x\n", "1 A -1 2 5\n", "1 A 10 0 5\n",
                          "1 A nan 2 5\n", "1 A 10 inf 5\n", "1 A 10 2 0\n", "1 A 10x 2 5\n",
                          "1 A10 2 5\n", "A 10 2 5\n", "1 A 1e308 1e-300 5\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(last_activation_count(bad));
    CHECK(last_activation_count(std::string("1 A 4 2 5\n") + bad)->mb == Approx(4));
  }
  // A line without its newline yet is a whole one to this parser (the sampler holds it back).
  CHECK(last_activation_count("1 A 4 2 5")->mb == Approx(4));
}

TEST_CASE("a count the counter skipped: the last well-formed word of it", "[counting]") {
  using detail::last_skipped_count;
  CHECK_FALSE(last_skipped_count(""));
  CHECK_FALSE(last_skipped_count("7 A 51.14 12.5 5 onnxruntime\n"));
  const auto skip = last_skipped_count(
      "5 M warm\n7 A skip onnxruntime memory 100000000 2660000000 268435456\n9 M infer\n");
  REQUIRE(skip);
  CHECK(skip->runtime == "onnxruntime");
  CHECK(skip->used == 100000000u);
  CHECK(skip->needed == 2660000000u);
  CHECK(skip->limit == 268435456u);
  CHECK(last_skipped_count("1 A skip onnxruntime memory 1 2 3\n2 A skip onnxruntime memory "
                           "4 5 6\n")
            ->used == 4u);
  for (const char* bad :
       {"1 A skip onnxruntime memory 1 2\n", "1 A skip ncnn memory 1 2 3\n",
        "1 A skip onnxruntime time 1 2 3\n", "1 A skip onnxruntime memory 1 2 x\n",
        "1 A skip onnxruntime memory -1 2 3\n", "1 M skip onnxruntime memory 1 2 3\n",
        "1 A skip onnxruntime memory 1 2 3 4\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(last_skipped_count(bad));
  }
  // Nor is it a count.
  CHECK_FALSE(detail::last_activation_count("1 A skip onnxruntime memory 1 2 3\n"));
  // Its warning says what it needed and had, at which speed the run went on (the device at
  // its ONNX Runtime speed by a stand-in rating: the v2 VM has none).
  CountingSetUp set_up;
  rate_pytorch_with_activations(set_up.bin, "onnxruntime");
  const Device pi = for_runtime(find_device("raspberry-pi-4b-1gb"), "onnxruntime");
  const std::string w = detail::skipped_count_warning(*skip, pi);
  CHECK_THAT(w, Contains("the workload's ONNX Runtime model was not counted: a copy of its "
                         "session would have needed about 2660 MB"));
  CHECK_THAT(w, Contains("beside the 100 MB the slice used (its inactive file cache not "
                         "counted), over its memory limit of 268 MB"));
  CHECK_THAT(w, Contains("it ran at the device's ONNX Runtime speed ("));
  CHECK_THAT(w, Contains("--runtime onnxruntime --memory-mb-per-ms M"));
  CHECK_THAT(detail::skipped_count_warning({"onnxruntime", 0, 0, 0}, pi),
             Contains("the counter could not read the slice's memory limit"));
}

TEST_CASE("the memory files a counter reads: v2's where its memory controller is on, v1's "
          "memory hierarchy's", "[counting]") {
  FakeTree tree;
  detail::SliceFiles v2{detail::Fs(tree.root()), true, "/sys/fs/cgroup/app/edgeprof-1", -1, {},
                        {}};
  CHECK(detail::count_memory_files(v2).usage.empty());  // no memory.current: not enabled
  CHECK(detail::count_memory_files(v2).stat.empty());
  tree.file("/sys/fs/cgroup/app/edgeprof-1/memory.current", "4096\n");
  const detail::CountMemoryFiles on = detail::count_memory_files(v2);
  CHECK(on.usage == tree.root() + "/sys/fs/cgroup/app/edgeprof-1/memory.current");
  CHECK(on.stat == tree.root() + "/sys/fs/cgroup/app/edgeprof-1/memory.stat");
  detail::SliceFiles v1{detail::Fs(tree.root()), false, "", -1,
                        {{"cpu", "/sys/fs/cgroup/cpu/edgeprof-1"}}, {}};
  CHECK(detail::count_memory_files(v1).usage.empty());  // no memory hierarchy
  v1.controllers["memory"] = "/sys/fs/cgroup/memory/edgeprof-1";
  const detail::CountMemoryFiles v1_on = detail::count_memory_files(v1);
  CHECK(v1_on.usage == tree.root() + "/sys/fs/cgroup/memory/edgeprof-1/memory.usage_in_bytes");
  CHECK(v1_on.stat == tree.root() + "/sys/fs/cgroup/memory/edgeprof-1/memory.stat");
}

TEST_CASE("phases: an activation count is no phase and no malformed mark", "[counting]") {
  std::size_t malformed = 99;
  const std::vector<Phase> phases = parse_phases(
      "1000 M load\n2000 A 51.1 12.5 5\n2500 A skip onnxruntime memory 1 2 3\n3000 M infer\n",
      0, TimeSeries{}, 1e-5, &malformed);
  CHECK(malformed == 0);
  REQUIRE(phases.size() == 2);
  CHECK(phases[0].name == "load");
  CHECK(phases[1].name == "infer");
}

TEST_CASE("when a slice counts activations, and why not", "[counting][nn]") {
  const FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const Device pi = find_device("raspberry-pi-4b-4gb");
  const HostFacts host = test::two_cpu_host();
  PlanOptions options;
  options.measure_nn = false;
  options.cpus = host.cpus;
  options.count_activations = true;
  const EmulationPlan plan = plan_emulation(pi, host, options);
  std::vector<std::string> notes;
  // No PyTorch rating here, then one without activations (measured before they were counted):
  // no memory term to set, said so.
  CHECK_FALSE(detail::counting_basis("pytorch", pi, host, options, plan, 2, pi, true, notes));
  CHECK(test::has_note(notes, "this host's PyTorch rating is not usable"));
  const FakeTree old;
  old.file("/torch-python", "#!/bin/sh\necho 'runtime PyTorch 2.0.test fp32 eager (stand-in)'\n"
                            "shift 4\nfor m in \"$@\"; do case $m in --*) ;; *) echo \"$m 20 20 "
                            "20\";; esac; done\n");
  std::filesystem::permissions(old.root() + "/torch-python", std::filesystem::perms::owner_all);
  NnOptions plain;
  plain.runtime = "pytorch";
  plain.python = old.root() + "/torch-python";
  REQUIRE(measure_nn_rating(plain).activation_mb.empty());
  notes.clear();
  CHECK_FALSE(detail::counting_basis("pytorch", pi, host, options, plan, 2, pi, true, notes));
  CHECK(test::has_note(notes, "needs the activations of this host's PyTorch models"));

  const FakeTree bin;
  rate_pytorch_with_activations(bin);
  notes.clear();

  options.count_activations = false;  // off: nothing, and nothing said
  CHECK_FALSE(detail::counting_basis("pytorch", pi, host, options, plan, 2, pi, true, notes));
  CHECK(notes.empty());

  options.count_activations = true;
  const auto basis = detail::counting_basis("pytorch", pi, host, options, plan, 2, pi, true, notes);
  REQUIRE(basis);
  CHECK(basis->measured.name == pi.name);
  CHECK(basis->options.cores == plan.core_emulation());  // kept as the start chose
  CHECK(test::has_note(notes, "activations: a workload's PyTorch model is counted"));

  // At the PyTorch speed the user chose: counted; with a memory term given: not.
  notes.clear();
  const Device torch = for_runtime(pi, "pytorch");
  const EmulationPlan torch_plan = plan_emulation(torch, host, options);
  CHECK(detail::counting_basis("pytorch", torch, host, options, torch_plan, 2, torch, false, notes));
  notes.clear();
  const Device given = for_runtime(pi, "pytorch", nullptr, 2.0);
  CHECK_FALSE(detail::counting_basis("pytorch", given, host, options, torch_plan, 2, given, false, notes));
  CHECK(test::has_note(notes, "has a memory term given already, 2 MB per ms"));
  // A device without PyTorch times, and one the slice does not follow to the PyTorch speed:
  // nothing to count for, and (counting being on by default) nothing said.
  notes.clear();
  const Device bbb = find_device("beaglebone-black");
  CHECK_FALSE(detail::counting_basis("pytorch", bbb, host, options, plan_emulation(bbb, host, options), 1,
                                     bbb, false, notes));
  CHECK_FALSE(detail::counting_basis("pytorch", pi, host, options, plan, 2, pi, false, notes));
  CHECK(notes.empty());

  // A speed schedule writes the bandwidth too: not counted, whoever chose the speed.
  Device scheduled = torch;
  scheduled.speed_schedule = {SpeedStep{1.0, 0.5}};
  notes.clear();
  CHECK_FALSE(detail::counting_basis("pytorch", scheduled, host, options, torch_plan, 2, scheduled, false,
                                     notes));
  CHECK(test::has_note(notes, "the device's speed schedule writes the CPU bandwidth too"));
  // ... but a device without PyTorch times has nothing to count for, schedule or not.
  Device bbb_scheduled = bbb;
  bbb_scheduled.speed_schedule = {SpeedStep{1.0, 0.5}};
  notes.clear();
  CHECK_FALSE(detail::counting_basis("pytorch", bbb_scheduled, host, options,
                                     plan_emulation(bbb_scheduled, host, options), 1,
                                     bbb_scheduled, false, notes));
  CHECK(notes.empty());

  // A device at its PyTorch speed may be given a memory term again (what a count does).
  const Device again = for_runtime(torch, "pytorch", nullptr, 3.0);
  REQUIRE(again.nn);
  CHECK(again.nn->memory_mb_per_ms == 3.0);
  CHECK(again.core_speed == Approx(for_runtime(pi, "pytorch", nullptr, 3.0).core_speed));
}

TEST_CASE("a counted workload sets the slice's speed by its memory term", "[counting][kernel]") {
  REQUIRE_CGROUPS();
  CountingSetUp set_up;
  // As a host's own share under the quota would: the count's CPU time is divided by it.
  set_up.options.plan.quota_scale = 1.5;
  std::string counter_dir;
  {
    Slice slice(set_up.pi, set_up.options);
    CHECK(test::has_note(slice.plan(), "activations: a workload's PyTorch model is counted"));
    const test::KernelBandwidth before = test::kernel_bandwidth(slice.paths());

    // A workload that reports a count as the counter does (40 MB in 10 ms of CPU time under
    // the quota, 6.67 ms of host time at a quota scale of 1.5: 6 MB per ms), after saying where
    // PYTHONPATH pointed.
    const FakeTree out;
    Command count;
    // (/bin/sh: the v2 VM has no bash.)
    count.argv = {"/bin/sh", "-c",
                  "echo \"$PYTHONPATH\" > '" + out.root() + "/path'; " + send("1 A 40 10 5") +
                      "; sleep 600"};
    count.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "PYTHONPATH=/somewhere/else"};
    Child child = slice.spawn(count);
    // (At the Pi 4's speeds the quota is the kernel's 1 ms minimum, and the period changes.)
    REQUIRE(test::eventually([&] {
      const test::KernelBandwidth now = test::kernel_bandwidth(slice.paths());
      return now.quota_us != before.quota_us || now.period_us != before.period_us;
    }));
    const test::KernelBandwidth counted = test::kernel_bandwidth(slice.paths());
    const Result r = child.wait(std::chrono::duration<double>(1e-3));
    CHECK(r.timed_out);

    // The counter came first on the workload's PYTHONPATH, the workload's own after it.
    const std::string path = FakeTree::slurp(out.root() + "/path");
    counter_dir = path.substr(0, path.find(':'));
    CHECK(path == counter_dir + ":/somewhere/else\n");
    CHECK(std::filesystem::is_regular_file(counter_dir + "/sitecustomize.py"));
    CHECK(std::filesystem::is_regular_file(counter_dir + "/torch_runner.py"));

    // The result is of the PyTorch speed with that memory term, and says when it was set.
    REQUIRE(r.device.nn);
    CHECK(r.device.nn->basis == "pytorch");
    CHECK(r.plan.quota_scale == 1.5);
    CHECK(r.device.nn->memory_mb_per_ms == Approx(6.0));
    CHECK(r.device.core_speed ==
          Approx(for_runtime(find_device("raspberry-pi-4b-1gb"), "pytorch", nullptr, 6.0)
                     .core_speed));
    REQUIRE(r.speed_changes.size() == 1);
    const SpeedChange& c = r.speed_changes[0];
    CHECK(c.runtime == "pytorch");
    CHECK(c.memory_mb_per_ms == Approx(6.0));
    CHECK(c.error.empty());
    CHECK(c.t_s >= 0);
    CHECK(std::optional<std::uint64_t>(c.cpu_quota_us) == counted.quota_us);
    CHECK(c.cpu_period_us == counted.period_us);
    CHECK(r.plan.cpu_quota_us == c.cpu_quota_us);
    CHECK(test::has_note(r.warnings, "the workload's model wrote 40 MB of activations per "
                                     "inference (counted by edgeprof's hook on its layers) in 10 "
                                     "ms of one thread's CPU time under the slice's quota "
                                     "(measured, the median of 5), 6.667 ms of this host's time "
                                     "as rated (/ 1.5: the quota scale given "
                                     "(PlanOptions::quota_scale), 1.5): 6 MB per ms (outside "
                                     "the 0.255-3.1 MB per ms of this host's rated models"));
    CHECK(r.phases.empty());  // the count is no phase
    CHECK(result_from_json(to_json(r)).speed_changes.at(0).memory_mb_per_ms == Approx(6.0));

    // The next workload starts at that speed. Its count comes in two writes, the second
    // ending the line the first began (the sampler holds the partial line back), followed by a
    // malformed one (skipped): 2 MB per ms of CPU time under the quota, 3 of host time.
    Command next_count;
    next_count.argv = {
        "/bin/sh", "-c",
        "fd=/proc/self/fd/${EDGEPROF_PHASE_FD%%:*}; printf '1 A 20' > $fd; sleep 0.3; "
        "printf ' 10 5\\n1 A 40 0 5\\n' > $fd; sleep 600"};
    Child second = slice.spawn(next_count);
    REQUIRE(test::eventually([&] {
      const test::KernelBandwidth now = test::kernel_bandwidth(slice.paths());
      return now.quota_us != counted.quota_us || now.period_us != counted.period_us;
    }));
    const Result next = second.wait(std::chrono::duration<double>(1e-3));
    REQUIRE(next.device.nn);
    CHECK(next.device.nn->memory_mb_per_ms == Approx(3.0));
    REQUIRE(next.speed_changes.size() == 1);
    CHECK(next.speed_changes[0].memory_mb_per_ms == Approx(3.0));
    CHECK(next.speed_changes[0].error.empty());
    CHECK(test::has_note(next.warnings, ": 3 MB per ms: the device ran at"));  // inside
  }
  // The counter's directory goes with the slice.
  CHECK_FALSE(counter_dir.empty());
  CHECK_FALSE(std::filesystem::exists(counter_dir));
}

TEST_CASE("a PyTorch int8 workload's count sets the slice's int8 speed, named",
          "[counting][kernel]") {
  REQUIRE_CGROUPS();
  CountingSetUp set_up;
  rate_int8_with_activations(set_up.bin);
  set_up.options.plan.quota_scale = 2.0;
  Device pi = for_runtime(find_device("raspberry-pi-4b-1gb"), "pytorch-int8");
  pi.memory_bytes = 256 << 20;
  Slice slice(pi, set_up.options);
  CHECK(test::has_note(slice.plan(), "activations: a workload's PyTorch int8 model is counted "
                                     "(its operators'"));
  // The counter is told to count int8 (by operators), not fp32 (by layers): 40 MB in 10 ms
  // under the quota, 5 ms as rated, 8 MB per ms.
  const FakeTree out;
  Command int8;
  int8.argv = {"/bin/sh", "-c",
               "echo \"$EDGEPROF_COUNT_RUNTIMES\" > '" + out.root() + "/runtimes'; " +
                   send("1 A 40 10 5 pytorch-int8") + kAfterCount};
  const Result r = slice.spawn(int8).wait();
  REQUIRE(r.speed_changes.size() == 1);
  check_counted(r, r.speed_changes[0], "pytorch-int8", 8.0);
  CHECK(test::has_note(r.warnings, "(counted by edgeprof from its operators' outputs)"));
  CHECK(test::has_note(r.warnings, "--runtime pytorch-int8 --memory-mb-per-ms 8"));
  CHECK(FakeTree::slurp(out.root() + "/runtimes") == "pytorch-int8\n");
  // An fp32 count in the int8 slice is refused: the slice does not count fp32 workloads.
  Command fp32;
  fp32.argv = {"/bin/sh", "-c", send("1 A 40 10 5 pytorch") + kAfterCount};
  const Result refused = slice.spawn(fp32).wait();
  REQUIRE(refused.speed_changes.size() == 1);
  CHECK_FALSE(refused.speed_changes[0].error.empty());
}

TEST_CASE("an ONNX Runtime workload's count sets the slice's ONNX Runtime speed",
          "[counting][kernel]") {
  REQUIRE_CGROUPS();
  CountingSetUp set_up;
  rate_pytorch_with_activations(set_up.bin, "onnxruntime");
  set_up.options.plan.quota_scale = 2.0;
  Device pi = for_runtime(find_device("raspberry-pi-4b-1gb"), "onnxruntime");
  pi.memory_bytes = 256 << 20;
  Slice slice(pi, set_up.options);
  CHECK(test::has_note(slice.plan(), "activations: a workload's ONNX Runtime model is counted "
                                     "(its ONNX graph's nodes'"));
  // A count of PyTorch's: the slice counts no PyTorch workload (its speed is ONNX Runtime's).
  Command torch;
  torch.argv = {"/bin/sh", "-c", send("1 A 40 10 5 pytorch") + kAfterCount};
  const Result refused = slice.spawn(torch).wait();
  REQUIRE(refused.speed_changes.size() == 1);
  CHECK_THAT(refused.speed_changes[0].error,
             Contains("the slice runs at its ONNX Runtime speed and does not count PyTorch "
                      "workloads"));
  // ONNX Runtime's: 40 MB in 10 ms under the quota, 5 ms as rated: 8 MB per ms. The counter
  // is told which runtimes the slice counts, and the memory its copies must fit in.
  const FakeTree out;
  Command ort;
  ort.argv = {"/bin/sh", "-c",
              "echo \"$EDGEPROF_COUNT_RUNTIMES\" > '" + out.root() + "/runtimes'; "
              "echo \"$EDGEPROF_COUNT_MEMORY_BYTES\" > '" + out.root() + "/memory'; "
              "cat \"$EDGEPROF_COUNT_MEMORY_USAGE\" > '" + out.root() + "/usage'; "
              "cat \"$EDGEPROF_COUNT_MEMORY_STAT\" > '" + out.root() + "/stat'; " +
              send("1 A 40 10 5 onnxruntime") + kAfterCount};
  const Result r = slice.spawn(ort).wait();
  REQUIRE(r.speed_changes.size() == 1);
  check_counted(r, r.speed_changes[0], "onnxruntime", 8.0);
  CHECK(test::has_note(r.warnings, "(counted by edgeprof from its ONNX graph's nodes)"));
  CHECK(test::has_note(r.warnings, "--runtime onnxruntime --memory-mb-per-ms 8"));
  CHECK(FakeTree::slurp(out.root() + "/runtimes") == "onnxruntime\n");
  CHECK(FakeTree::slurp(out.root() + "/memory") == std::to_string(256 << 20) + "\n");
  // The slice's memory files, readable by the workload: a number, and the stat's keys.
  CHECK(detail::parse_u64(FakeTree::slurp(out.root() + "/usage")));
  CHECK_THAT(FakeTree::slurp(out.root() + "/stat"), Contains("inactive_file "));

  // A workload whose count the counter skipped for want of memory: its warning says so, and
  // not that no count came.
  Command skipped;
  skipped.argv = {"/bin/sh", "-c",
                  send("1 A skip onnxruntime memory 100000000 300000000 268435456") +
                      kAfterCount};
  const Result s = slice.spawn(skipped).wait();
  CHECK(s.speed_changes.empty());
  CHECK(test::has_note(s.warnings, "the workload's ONNX Runtime model was not counted: a copy "
                                   "of its session would have needed about 300 MB"));
  // It ran at the speed the workload before it counted, which the slice kept, and says so.
  CHECK(test::has_note(s.warnings, "; it ran at the speed an earlier workload in the slice "
                                   "counted (8 MB per ms)"));
  CHECK(test::has_note(s.warnings, "this run started at the ONNX Runtime speed an earlier "
                                   "workload in the slice counted (8 MB per ms)"));
}

TEST_CASE("an ONNX Runtime count sets its speed in a slice that followed the workload to "
          "PyTorch's", "[counting][kernel]") {
  // A Python that imported PyTorch (to export its model, say) and infers with ONNX Runtime:
  // the maps show PyTorch first, the count says which runtime infers.
  REQUIRE_CGROUPS();
  CountingSetUp set_up;
  rate_pytorch_with_activations(set_up.bin, "onnxruntime");
  set_up.options.plan.quota_scale = 2.0;
  Device pi = find_device("raspberry-pi-4b-1gb");  // at the speed edgeprof chooses: followed
  pi.memory_bytes = 256 << 20;
  // The workload helper under PyTorch's library name: its executable is mapped from that file.
  const FakeTree dir;
  const std::string library = dir.root() + "/libtorch_cpu.so";
  std::filesystem::copy_file(test::helper("edgeprof_workload"), library);
  std::filesystem::permissions(library, std::filesystem::perms::owner_all);
  const std::string go = dir.root() + "/go";
  Slice slice(pi, set_up.options);
  CHECK(test::has_note(slice.plan(), "activations: a workload's ONNX Runtime model is counted"));
  CHECK(test::has_note(slice.plan(), "activations: a workload's PyTorch model is counted"));
  const test::KernelBandwidth start = test::kernel_bandwidth(slice.paths());
  Command both;
  both.argv = {"/bin/sh", "-c",
               "'" + library + "' sleep 600 & while [ ! -e '" + go +
                   "' ]; do sleep 0.05; done; " + send("1 A 40 10 5 onnxruntime") +
                   "; sleep 600"};
  Child child = slice.spawn(both);
  // Followed to PyTorch's speed once the maps show it, ...
  REQUIRE(test::eventually([&] {
    const test::KernelBandwidth now = test::kernel_bandwidth(slice.paths());
    return now.quota_us != start.quota_us || now.period_us != start.period_us;
  }));
  const test::KernelBandwidth followed = test::kernel_bandwidth(slice.paths());
  // ... then ONNX Runtime's count (8 MB per ms as rated) sets ONNX Runtime's speed.
  { std::ofstream(go).put('\n'); }
  REQUIRE(test::eventually([&] {
    const test::KernelBandwidth now = test::kernel_bandwidth(slice.paths());
    return now.quota_us != followed.quota_us || now.period_us != followed.period_us;
  }));
  const Result r = child.wait(std::chrono::duration<double>(1e-3));
  CHECK(r.timed_out);
  CHECK(r.runtimes_seen.count("pytorch"));
  REQUIRE_FALSE(r.speed_changes.empty());
  check_counted(r, r.speed_changes.back(), "onnxruntime", 8.0);
  // PyTorch in the maps is not warned of: the count said which runtime infers.
  CHECK_FALSE(test::has_note(r.warnings, "the workload loaded PyTorch (libtorch_cpu.so); the "
                                         "device's speed was derived with"));
  CHECK(test::has_note(r.warnings, "the workload loaded PyTorch (libtorch_cpu.so): the device "
                                   "ran at"));
}

TEST_CASE("ONNX Runtime's workloads are counted by default; the environment turns it off",
          "[counting]") {
  for (const char* on : {"", "1", "true", "ON", "yes"}) {
    const test::ScopedEnv set("EDGEPROF_COUNT_ONNXRUNTIME", on);
    CHECK(detail::counts_onnxruntime());
  }
  {
    const test::ScopedEnv env("EDGEPROF_COUNT_ONNXRUNTIME", "");  // restored after
    ::unsetenv("EDGEPROF_COUNT_ONNXRUNTIME");
    CHECK(detail::counts_onnxruntime());
  }
  for (const char* off : {"0", "false", "Off", "no"}) {
    const test::ScopedEnv set("EDGEPROF_COUNT_ONNXRUNTIME", off);
    CHECK_FALSE(detail::counts_onnxruntime());
  }
}

TEST_CASE("a count that comes as the workload ends sets the next run's speed, not this one's",
          "[counting][kernel]") {
  REQUIRE_CGROUPS();
  const CountingSetUp set_up;
  Slice slice(set_up.pi, set_up.options);
  for (int i = 0; i < 5; ++i) {
    // Written just before the exit: read during the run or at its end, whichever comes first.
    Command count;
    count.argv = {"/bin/sh", "-c", send(fmt::format("1 A {} 10 5", 10 * (i + 1)))};
    const Result r = slice.spawn(count).wait();
    for (const SpeedChange& c : r.speed_changes) CHECK(c.t_s <= r.wall_time_s);
    // Read during the run, a change; as the workload exited, a warning; never nothing, nor
    // the warning of a workload that sent none.
    CHECK(r.speed_changes.size() + test::has_note(r.warnings, "was read as it exited") == 1);
    CHECK_FALSE(test::has_note(r.warnings, "sent no count of its own"));
    // Either way the slice runs at it from then on.
    const Result next = slice.spawn(test::workload({"sleep", "0.01"})).wait();
    REQUIRE(next.device.nn);
    CHECK(next.device.nn->memory_mb_per_ms == Approx(i + 1.0));
    // ... which it did not count: said.
    CHECK(test::has_note(next.warnings, "an earlier workload in the slice counted"));
  }
}

TEST_CASE("a run from which no count came says at which speed it ran", "[counting]") {
  const FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const FakeTree bin;
  rate_pytorch_with_activations(bin);
  const Device pi = find_device("raspberry-pi-4b-4gb");
  const Device torch = for_runtime(pi, "pytorch");
  const detail::RuntimesSeen pytorch{{"pytorch", "libtorch_cpu.so"}};
  // PyTorch loaded and no count: at the speed over the models, with what would set its own.
  const std::vector<std::string> both{"pytorch", "onnxruntime"};
  const auto none = detail::uncounted_warning(torch, nullptr, pytorch, both);
  REQUIRE(none);
  CHECK_THAT(*none, Contains("loaded PyTorch but sent no activation count"));
  CHECK_THAT(*none, Contains("--runtime pytorch --memory-mb-per-ms M"));
  CHECK_THAT(*none, Contains("--no-count-activations"));
  // No PyTorch, or a speed that is not PyTorch's over the models: nothing.
  CHECK_FALSE(detail::uncounted_warning(torch, nullptr, {}, both));
  CHECK_FALSE(detail::uncounted_warning(pi, nullptr, pytorch, both));
  CHECK_FALSE(detail::uncounted_warning(for_runtime(pi, "pytorch", nullptr, 2.0), nullptr,
                                        pytorch, both));
  // ... nor for a runtime the slice does not count.
  CHECK_FALSE(detail::uncounted_warning(torch, nullptr, pytorch, {"onnxruntime"}));
  // ONNX Runtime: its Python module loaded, said; a program of another language linking its
  // library is not what the counter counts: nothing.
  rate_pytorch_with_activations(bin, "onnxruntime");
  const Device ort = for_runtime(pi, "onnxruntime");
  const auto python = detail::uncounted_warning(
      ort, nullptr, {{"onnxruntime", "onnxruntime_pybind11_state.so"}}, both);
  REQUIRE(python);
  CHECK_THAT(*python, Contains("loaded ONNX Runtime but sent no activation count"));
  CHECK_THAT(*python, Contains("its graph's nodes' outputs"));
  CHECK_FALSE(
      detail::uncounted_warning(ort, nullptr, {{"onnxruntime", "libonnxruntime.so.1"}}, both));
  // PyTorch int8: PyTorch's libraries loaded, said, with what the counter counts there.
  rate_int8_with_activations(bin);
  const Device int8 = for_runtime(pi, "pytorch-int8");
  const std::vector<std::string> counted_int8{"pytorch-int8"};
  const auto quantized = detail::uncounted_warning(int8, nullptr, pytorch, counted_int8);
  REQUIRE(quantized);
  CHECK_THAT(*quantized, Contains("loaded PyTorch but sent no activation count, so it ran at "
                                  "the device's PyTorch int8 speed"));
  CHECK_THAT(*quantized, Contains("a model that runs quantized operators"));
  CHECK_THAT(*quantized, Contains("--runtime pytorch-int8 --memory-mb-per-ms M"));
  // At the speed an earlier workload's count set, whatever this one loaded; PyTorch's advice
  // only for a PyTorch workload.
  detail::CountedSwitch earlier;
  earlier.mb_per_ms = 2.5;
  earlier.speed = detail::FollowedSpeed{"pytorch", for_runtime(pi, "pytorch", nullptr, 2.5), {}};
  const auto other = detail::uncounted_warning(earlier.speed->device, &earlier, {}, both);
  REQUIRE(other);
  CHECK_THAT(*other, Contains("an earlier workload in the slice counted (2.5 MB per ms)"));
  CHECK_THAT(*other, !Contains("--runtime"));
  const auto again = detail::uncounted_warning(earlier.speed->device, &earlier, pytorch, both);
  REQUIRE(again);
  CHECK_THAT(*again, Contains("--runtime pytorch --memory-mb-per-ms M"));
  detail::CountedSwitch earlier_int8;
  earlier_int8.mb_per_ms = 1.5;
  earlier_int8.count.runtime = "pytorch-int8";
  earlier_int8.speed = detail::FollowedSpeed{"pytorch-int8", for_runtime(pi, "pytorch-int8"), {}};
  const auto again_int8 =
      detail::uncounted_warning(earlier_int8.speed->device, &earlier_int8, pytorch, counted_int8);
  REQUIRE(again_int8);
  CHECK_THAT(*again_int8, Contains("--runtime pytorch-int8 --memory-mb-per-ms M"));
  // A count read as the workload exited: the next run's speed, and the command line.
  CHECK_THAT(detail::late_count_warning(earlier),
             Contains("(2.5 MB per ms) was read as it exited: it did not set this run's speed, "
                      "only that of the slice's next run; --runtime pytorch "
                      "--memory-mb-per-ms 2.5"));
}

TEST_CASE("repeated runs count once, then start at the counted speed", "[counting][kernel]") {
  REQUIRE_CGROUPS();
  CountingSetUp set_up;
  set_up.options.plan.quota_scale = 2.0;
  const FakeTree out;
  Command count;
  // Each run says where PYTHONPATH pointed, then counts 40 MB in 10 ms (5 ms of host time at
  // the quota scale of 2: 8 MB per ms) and waits for it to be read.
  count.argv = {"/bin/sh", "-c",
                "echo \"x$PYTHONPATH\" >> '" + out.root() + "/paths'; " +
                    send("1 A 40 10 5") + "; sleep 1"};
  count.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  RunOptions options;
  options.slice = set_up.options;
  const RepeatedResult rr = run_repeated(count, set_up.pi, 2, 1, options);
  REQUIRE(rr.warmups.size() == 1);
  REQUIRE(rr.runs.size() == 2);
  // The warm-up counted and switched.
  REQUIRE(rr.warmups[0].speed_changes.size() == 1);
  CHECK(rr.warmups[0].speed_changes[0].memory_mb_per_ms == Approx(8.0));
  // The others started at that speed, had no counter and changed nothing.
  for (const Result& r : rr.runs) {
    CHECK(r.speed_changes.empty());
    REQUIRE(r.device.nn);
    CHECK(r.device.nn->basis == "pytorch");
    CHECK(r.device.nn->memory_mb_per_ms == Approx(8.0));
    CHECK(test::has_note(r.plan.notes, "activations: not counted again: run 1 of 3 (a warm-up) "
                                       "counted 8 MB per ms"));
  }
  const std::string paths = FakeTree::slurp(out.root() + "/paths");
  CHECK_THAT(paths.substr(0, paths.find('\n')), Contains("edgeprof-count-"));
  CHECK(paths.substr(paths.find('\n') + 1) == "x\nx\n");
}

TEST_CASE("repeated runs retry a counted speed's planning only, not the run's own error",
          "[counting][kernel]") {
  REQUIRE_CGROUPS();
  // An interrupt (the caller's check) in the run after the count was taken for the counted
  // speed's planning failing: the run was silently made again, counting again.
  CountingSetUp set_up;
  set_up.options.plan.quota_scale = 2.0;
  Command count;
  count.argv = {"/bin/sh", "-c", send("1 A 40 10 5") + "; sleep 1"};
  count.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  RunOptions options;
  options.slice = set_up.options;
  bool armed = false, interrupted = false;
  options.check = [&] {
    if (armed && !interrupted) {
      interrupted = true;
      throw Error("interrupted by the caller");
    }
  };
  int runs = 0;
  bool warmup_counted = false;
  const RunCallback progress = [&](int, int, bool, const Result& r) {
    ++runs;
    armed = true;
    // The warm-up's count set the speed: the next run starts at it (the retry's case).
    warmup_counted = r.speed_changes.size() == 1 && r.speed_changes[0].memory_mb_per_ms > 0;
  };
  CHECK_THROWS_WITH(run_repeated(count, set_up.pi, 2, 1, options, progress),
                    "interrupted by the caller");
  CHECK(runs == 1);  // the warm-up counted; the next run's interrupt ended it all
  CHECK(warmup_counted);
  CHECK(test::our_slices().empty());
}

TEST_CASE("the counter's directory holds the counter as sitecustomize and the PyTorch runner",
          "[counting]") {
  std::string path;
  {
    const detail::ActivationCounterDir dir(detail::CounterDirOwner{7, 42, 99});
    path = dir.path();
    CHECK_THAT(path, Contains("/edgeprof-count-7-42-99-"));
    const std::string name = std::filesystem::path(path).filename();
    CHECK(detail::parse_counter_dir_name(name) == detail::CounterDirOwner{7, 42, 99});
    CHECK_THAT(FakeTree::slurp(path + "/sitecustomize.py"), Contains("def _count(torch, fd)"));
    CHECK_THAT(FakeTree::slurp(path + "/torch_runner.py"), Contains("def written_bytes("));
  }
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a counter directory's name: its owner's pid namespace, pid and start time",
          "[counting]") {
  const detail::CounterDirOwner owner{4026531836, 1234, 5678};
  CHECK(detail::counter_dir_prefix(owner) == "edgeprof-count-4026531836-1234-5678");
  CHECK(detail::parse_counter_dir_name("edgeprof-count-4026531836-1234-5678-aB3xYz") == owner);
  for (const char* other : {"edgeprof-count-1-2-3", "edgeprof-count-1-2-3-abcdefg",
                            "edgeprof-count-1-2-abcdef", "edgeprof-count-1-0-3-abcdef",
                            "edgeprof-count-x-2-3-abcdef", "edgeprof-nn-1-2-3-abcdef",
                            "edgeprof-count--1-2-3-abcdef", "edgeprof-count-1-2-3--abcdef",
                            // look-alikes that parsed before: only what counter_dir_prefix()
                            // writes is a counter's directory
                            "edgeprof-count-01-2-3-abcdef", "edgeprof-count-1-02-3-abcdef",
                            "edgeprof-count-1-2-03-abcdef", "edgeprof-count-1-4294967296-3-abcdef"}) {
    CHECK_FALSE(detail::parse_counter_dir_name(other));
  }
}

TEST_CASE("a counting slice makes its counter's directory at its first sampled run, and "
          "sweeps those of dead owners",
          "[counting][kernel]") {
  REQUIRE_CGROUPS();
  CountingSetUp set_up;
  const FakeTree tmp;
  const test::ScopedEnv tmpdir("TMPDIR", tmp.root());
  namespace fs = std::filesystem;
  struct stat ns {};
  REQUIRE(::stat("/proc/self/ns/pid", &ns) == 0);
  const std::uint64_t pid_ns = ns.st_ino;
  const auto start = detail::process_start_time(detail::Fs(), ::getpid());
  REQUIRE(start);
  // Left by: a process that died (this pid, another start time: the pid reused), one that
  // lives (this one), one of another pid namespace (not judged), and something else.
  const long pid = ::getpid();
  const std::string dead = detail::counter_dir_prefix({pid_ns, pid, *start + 1}) + "-dead00";
  const std::string live = detail::counter_dir_prefix({pid_ns, pid, *start}) + "-live00";
  const std::string other_ns = detail::counter_dir_prefix({pid_ns + 1, pid, 1}) + "-othe00";
  for (const std::string& d : {dead, live, other_ns, std::string("edgeprof-count-mine")}) {
    fs::create_directories(tmp.root() + "/" + d + "/sub");
  }
  auto counter_dirs = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(tmp.root())) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<std::string> before = counter_dirs();
  {
    Slice slice(set_up.pi, set_up.options);
    CHECK(counter_dirs() == before);  // none made yet, none swept
    SpawnOptions unsampled;
    unsampled.sample_interval = std::chrono::nanoseconds(0);
    CHECK(slice.spawn(test::workload({"exit", "0"}), unsampled).wait().ok());
    CHECK(counter_dirs() == before);  // an unsampled run has no counter
    CHECK(slice.spawn(test::workload({"exit", "0"})).wait().ok());
    CHECK_FALSE(fs::exists(tmp.root() + "/" + dead));
    CHECK(fs::exists(tmp.root() + "/" + live + "/sub"));
    CHECK(fs::exists(tmp.root() + "/" + other_ns + "/sub"));
    CHECK(fs::exists(tmp.root() + "/edgeprof-count-mine"));
    CHECK(counter_dirs().size() == before.size());  // the dead one gone, the slice's made
  }
  CHECK(counter_dirs().size() == before.size() - 1);  // the slice's gone with it
}

TEST_CASE("a count's CPU time is divided by the own share at the quota the slice applies",
          "[counting]") {
  // PyTorch's own share 2.0 at 0.05 of a CPU, 1.5 at 0.1, 1.2 at 0.4; ncnn's flat 1.1.
  detail::CountingBasis basis;
  basis.runtime = "pytorch";
  QuotaShare pytorch;
  pytorch.runtime_id = "pytorch";
  for (const auto& [speed, share] : {std::pair{0.05, 2.0}, {0.1, 1.5}, {0.4, 1.2}}) {
    QuotaSharePoint p;
    p.speed = speed;
    p.share = share;
    pytorch.points.push_back(p);
  }
  QuotaShare ncnn = pytorch;
  ncnn.runtime_id = "ncnn";
  for (QuotaSharePoint& p : ncnn.points) p.share = 1.1;
  basis.host.runtime_quota_shares["pytorch"] = pytorch;
  basis.host.quota_share = ncnn;
  EmulationPlan plan;
  plan.cpus = {1};
  plan.cpu_period_us = 100000;

  SECTION("throttled on one CPU: PyTorch's share there, whatever scale the plan applied") {
    // 10 ms per 100 ms: 0.1 of a CPU. A plan whose scale stopped short (at kMaxQuotaScale, say)
    // still divides by the share the slice runs at.
    plan.cpu_quota_us = 10000;
    plan.quota_scale = 1.2;
    const detail::CountDivisor d = detail::count_divisor(basis, plan);
    CHECK(d.value == Approx(1.5));
    CHECK_THAT(d.from, Contains("own share with PyTorch at the slice's quota of 0.1 of a CPU"));
    plan.host_drift = 1.1;
    CHECK(detail::count_divisor(basis, plan).value == Approx(1.65));
    CHECK_THAT(detail::count_divisor(basis, plan).from, Contains("times its host drift 1.1"));
  }
  SECTION("the share is the counted runtime's: ONNX Runtime's not measured, ncnn's") {
    basis.runtime = "onnxruntime";
    plan.cpu_quota_us = 10000;
    const detail::CountDivisor d = detail::count_divisor(basis, plan);
    CHECK(d.value == Approx(1.1));
    CHECK_THAT(d.from, Contains("ncnn (ONNX Runtime's not measured)"));
  }
  SECTION("PyTorch's share not measured: ncnn's, said") {
    basis.host.runtime_quota_shares.clear();
    plan.cpu_quota_us = 10000;
    const detail::CountDivisor d = detail::count_divisor(basis, plan);
    CHECK(d.value == Approx(1.1));
    CHECK_THAT(d.from, Contains("ncnn (PyTorch's not measured)"));
  }
  SECTION("a quota of the CPU's whole time is not throttled: 1, though the plan scaled up to it") {
    plan.cpu_quota_us = 100000;
    plan.quota_scale = 1.4;
    CHECK(detail::count_divisor(basis, plan).value == 1);
    CHECK(detail::count_divisor(basis, plan).from.empty());
  }
  SECTION("a quota pooled over two CPUs throttles the counted thread as one CPU's would") {
    // 10 ms per 100 ms over two CPUs: the thread gets 0.1 of a CPU.
    plan.cpus = {0, 1};
    plan.cpu_quota_us = 10000;
    CHECK(detail::count_divisor(basis, plan).value == Approx(1.5));
    // 150 ms per 100 ms: a thread runs unthrottled.
    plan.cpu_quota_us = 150000;
    CHECK(detail::count_divisor(basis, plan).value == 1);
  }
  SECTION("per core: each core's quota") {
    plan.cpus = {0, 1};
    plan.core_groups = 4;
    plan.core_quota_us = 5000;
    plan.cpu_quota_us = 20000;
    CHECK(detail::count_divisor(basis, plan).value == Approx(2.0));
  }
  SECTION("a quota scale the user gave: that scale, not called a share; 1 unthrottled") {
    // The plan applied less of it (capped, say): the scale given stands for the share.
    basis.options.quota_scale = 1.3;
    plan.cpu_quota_us = 10000;
    plan.quota_scale = 1.1;
    const detail::CountDivisor d = detail::count_divisor(basis, plan);
    CHECK(d.value == Approx(1.3));
    CHECK_THAT(d.from, Contains("the quota scale given (PlanOptions::quota_scale), 1.3"));
    CHECK_THAT(d.from, !Contains("share"));
    plan.cpu_quota_us = 100000;
    CHECK(detail::count_divisor(basis, plan).value == 1);
  }
}

TEST_CASE("counting is on by default; the environment turns it off", "[counting]") {
  {
    const test::ScopedEnv env("EDGEPROF_COUNT_ACTIVATIONS", "1");
    CHECK(count_activations_by_default());
    CHECK(PlanOptions{}.count_activations);
  }
  for (const char* off : {"0", "false", "OFF", "No"}) {
    const test::ScopedEnv env("EDGEPROF_COUNT_ACTIVATIONS", off);
    CAPTURE(off);
    CHECK_FALSE(count_activations_by_default());
    CHECK_FALSE(PlanOptions{}.count_activations);
  }
  {
    const test::ScopedEnv env("EDGEPROF_COUNT_ACTIVATIONS", "");  // restored after
    ::unsetenv("EDGEPROF_COUNT_ACTIVATIONS");
    CHECK(count_activations_by_default());
  }
}
