// The host's own share under a quota: the scale curve (pure), the plan's automatic choice, and
// the measurement's mechanism (real slices, a stand-in runner that reports fixed times, so no
// figure depends on this machine's speed), its cache and its errors.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "helpers.hpp"
#include "nn/runtime_table.hpp"
#include "run/plan_warnings.hpp"

using namespace edgeprof;
using namespace edgeprof::test;
using Catch::Contains;

namespace {

QuotaShare curve() {
  QuotaShare q;
  // speed, share, measured, p10, p90, samples
  q.points = {{0.1, 1.4, 1.4, 1.2, 1.6, 6}, {0.2, 1.3, 1.3, 1.1, 1.5, 6},
              {0.4, 1.2, 1.2, 1.0, 1.4, 6}};
  q.period_us = kDefaultCpuPeriodUs;
  q.keep_warm = true;
  q.graphs = {"mobilenet_v2"};
  q.measured_at = "2026-11-27T12:00:00Z";
  return q;
}

// A stand-in for the Python with ncnn: every graph takes 10 ms, however throttled; with
// `cpu_ms`, that much CPU time per inference too.
std::string fake_python(const test::FakeTree& dir, double cpu_ms = 0) {
  std::string body = "#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\n";
  for (const auto& g : reference_graphs()) {
    body += "echo '" + g.name + " 10 9 12'\n";
    if (cpu_ms > 0) body += fmt::format("echo 'cpu {} {}'\n", g.name, cpu_ms);
  }
  dir.file("/python", body);
  const std::string path = dir.root() + "/python";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// A stand-in whose MobileNet takes as long as its slice's quota makes it, where every other
// graph takes 10 ms however throttled (fake_python's): each graph's own share tells them apart.
std::string fake_throttled_python(const test::FakeTree& dir) {
  // mobilenet: 10 ms x period / quota of the CPU cgroup the stand-in runs in (v1's
  // cpu.cfs_quota_us / cfs_period_us, v2's cpu.max), as a loop throttled to that share would
  // take with the CPU to itself; 10 ms unthrottled. From the quota, not a clock: a loop timed
  // beside a busy build ran its unthrottled runs slower and its share below the bound.
  std::string body =
      "#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\nquota=-1; period=1\n"
      "while IFS=: read -r id ctl path; do\n"
      "  case \",$ctl,\" in\n"
      "    *,cpu,*) d=/sys/fs/cgroup/$ctl$path\n"
      "      quota=$(cat $d/cpu.cfs_quota_us); period=$(cat $d/cpu.cfs_period_us);;\n"
      "    ,,) if [ -f /sys/fs/cgroup$path/cpu.max ]; then\n"
      "        read -r quota period < /sys/fs/cgroup$path/cpu.max; fi;;\n"
      "  esac\n"
      "done < /proc/$$/cgroup\n"
      "case $quota in max|-1) quota=$period;; esac\n"
      "us=$((10000 * period / quota))\n";
  for (const auto& g : reference_graphs()) {
    body += g.name == "mobilenet" ? "ms=$(printf '%d.%03d' $((us/1000)) $((us%1000)))\n"
                                    "echo \"mobilenet $ms $ms $ms\"\n"
                                  : "echo '" + g.name + " 10 9 12'\n";
  }
  dir.file("/python", body);
  const std::string path = dir.root() + "/python";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// A stand-in for the Python with another runtime (`runtime`, its runner's "runtime" line):
// every model named takes 10 ms, however throttled; each call's arguments are appended to
// `<dir>/calls`.
std::string fake_runtime_python(const test::FakeTree& dir, const std::string& runtime) {
  const std::string calls = dir.root() + "/calls";
  std::string body = "#!/bin/sh\necho \"$@\" >> '" + calls + "'\necho 'runtime " + runtime +
                     " (stand-in)'\nfor a in \"$@\"; do case $a in\n  --export) "
                     "exit 0;;\nesac; done\nshift 4\nfor a in \"$@\"; do case $a in\n  "
                     "--*) ;;\n  *) echo \"$a 10 9 12\";;\nesac; done\n";
  dir.file("/python", body);
  const std::string path = dir.root() + "/python";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// A share whose points are `curve()`'s times `factor`.
QuotaShare scaled_curve(double factor, const std::string& runtime) {
  QuotaShare q = curve();
  for (QuotaSharePoint& p : q.points) {
    for (double* v : {&p.share, &p.measured, &p.p10, &p.p90}) *v *= factor;
  }
  q.runtime_id = runtime;
  q.graphs = {"mixnet_s"};
  return q;
}

}  // namespace

TEST_CASE("a plan at another runtime's speed takes that runtime's own share, else ncnn's and "
          "says so",
          "[quota_share][plan]") {
  HostFacts host = test::two_cpu_host();
  host.quota_share = curve();
  host.runtime_quota_shares["pytorch"] = scaled_curve(1.2, "pytorch");
  Device torch = test::nn_device(0.2);
  torch.nn->basis = "pytorch";
  const EmulationPlan p = plan_emulation(torch, host);
  const double k = quota_scale_at(scaled_curve(1.2, "pytorch"), 0.2);
  CHECK(k > quota_scale_at(curve(), 0.2) * 1.1);
  CHECK(p.quota_scale == Approx(k).epsilon(0.001));
  CHECK(test::has_note(p.notes, "with 1 PyTorch model"));
  CHECK(test::has_note(p.notes, "--runtime pytorch"));
  CHECK_FALSE(test::has_note(p.notes, "not measured"));

  // ncnn's speed keeps ncnn's share, whatever other runtimes' are cached.
  const EmulationPlan n = plan_emulation(test::nn_device(0.2), host);
  CHECK(n.quota_scale == Approx(quota_scale_at(curve(), 0.2)).epsilon(0.001));
  CHECK(test::has_note(n.notes, "ncnn graph"));

  // Another runtime without a share of its own: ncnn's, and the note says so and how to
  // measure it.
  Device ort = test::nn_device(0.2);
  ort.nn->basis = "onnxruntime";
  const EmulationPlan o = plan_emulation(ort, host);
  CHECK(o.quota_scale == Approx(quota_scale_at(curve(), 0.2)).epsilon(0.001));
  CHECK(test::has_note(o.notes, "ONNX Runtime's own share under a quota is not measured"));
  CHECK(test::has_note(o.notes, "calibrate-host --nn --runtime onnxruntime` measures ONNX "
                                "Runtime's own (about 3 minutes on a 2-vCPU host)"));
  // One cached but refused: the note says why.
  HostFacts refused = host;
  refused.runtime_quota_share_problems["onnxruntime"] =
      "/c/host-quota-share-onnxruntime.json holds the own share of pytorch, not of onnxruntime: "
      "measure it again";
  const EmulationPlan r = plan_emulation(ort, refused);
  CHECK(r.quota_scale == Approx(quota_scale_at(curve(), 0.2)).epsilon(0.001));
  CHECK(test::has_note(r.notes, "ONNX Runtime's own share under a quota is not taken "
                                "(/c/host-quota-share-onnxruntime.json holds the own share of "
                                "pytorch, not of onnxruntime: measure it again): the quota "
                                "scale is ncnn's"));
  // Where no scale applies (a quota pooled over two CPUs), no note says ncnn's is applied.
  Device ort_quad = ort;
  ort_quad.cores = 4;
  const EmulationPlan pooled = plan_emulation(ort_quad, host);
  CHECK(pooled.quota_scale == 1.0);
  CHECK_FALSE(test::has_note(pooled.notes, "the quota scale is ncnn's"));
  // Neither share measured: the note names both commands.
  const EmulationPlan bare = plan_emulation(ort, test::two_cpu_host());
  CHECK(bare.quota_scale == 1.0);
  CHECK(test::has_note(bare.notes, "calibrate-host --nn` measures it"));
  CHECK(test::has_note(bare.notes, "--runtime onnxruntime` measures ONNX Runtime's own"));

  // A runtime's share alone, without ncnn's, is enough for that runtime.
  HostFacts only = test::two_cpu_host();
  only.runtime_quota_shares["pytorch"] = scaled_curve(1.2, "pytorch");
  CHECK(plan_emulation(torch, only).quota_scale == Approx(k).epsilon(0.001));
  CHECK(plan_emulation(test::nn_device(0.2), only).quota_scale == 1.0);

  // Not measured on the way for a runtime whose share is there; ncnn's missing share is not
  // measured for it either (nothing runs: the host comes back as it was).
  PlanOptions measuring;
  measuring.measure_nn = true;
  measuring.nn_measure.python = "/nonexistent/python";  // a measurement would say so
  const HostFacts same = with_measured_quota_share(only, torch, measuring);
  CHECK_FALSE(same.quota_share);
  CHECK(same.quota_share_problem == only.quota_share_problem);
  CHECK(same.runtime_quota_shares.size() == 1);
}

TEST_CASE("another runtime's own share is measured with its models and cached under its name",
          "[quota_share][kernel]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  CHECK_FALSE(cached_quota_share(nullptr, "pytorch"));
  const test::FakeTree bin;
  QuotaShareOptions o;
  o.runtime = "pytorch";
  o.python = fake_runtime_python(bin, "PyTorch 9.9 fp32");
  o.speeds = {0.5};
  o.rounds = 1;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  const QuotaShare q = measure_quota_share(o);
  // The runtime's own three models by default, timed by their mean over a second.
  CHECK(q.graphs == std::vector<std::string>{"mixnet_s", "mobilenetv2_100", "resnet18"});
  CHECK(q.runtime_id == "pytorch");
  CHECK(q.runtime == "PyTorch 9.9 fp32 (stand-in)");
  REQUIRE(q.points.size() == 1);
  CHECK(q.points[0].measured == Approx(0.5));  // 10 ms throttled or not
  CHECK(q.points[0].samples == 3);
  CHECK(q.cache_file == cache.root() + "/host-quota-share-pytorch.json");
  CHECK(test::has_note(lines, "with PyTorch: 3 models"));
  const std::string calls = test::FakeTree::slurp(bin.root() + "/calls");
  CHECK_THAT(calls, Contains("--threads=1 --mean --min-time=1 mixnet_s mobilenetv2_100 resnet18"));
  CHECK_THAT(calls, !Contains("--export"));  // eager PyTorch builds its models, never reads them

  // Cached under its own name: ncnn's share is not it, and host_facts() has it by id.
  REQUIRE(cached_quota_share(nullptr, "pytorch"));
  CHECK(cached_quota_share(nullptr, "pytorch")->runtime_id == "pytorch");
  std::string why;
  CHECK_FALSE(cached_quota_share(&why));
  CHECK(host_facts().runtime_quota_shares.count("pytorch") == 1);
  CHECK_FALSE(host_facts().quota_share);
  CHECK_THAT(describe(q), Contains("3 PyTorch models"));

  // A file of another runtime's share under this one's name is not taken.
  cache.file("/host-quota-share-onnxruntime.json", test::FakeTree::slurp(q.cache_file));
  CHECK_FALSE(cached_quota_share(&why, "onnxruntime"));
  CHECK_THAT(why, Contains("holds the own share of pytorch, not of onnxruntime"));
  // host_facts() keeps why, for the plan's note; a runtime never measured says so.
  const HostFacts facts = host_facts();
  REQUIRE(facts.runtime_quota_share_problems.count("onnxruntime") == 1);
  CHECK_THAT(facts.runtime_quota_share_problems.at("onnxruntime"),
             Contains("holds the own share of pytorch"));
  CHECK_THAT(facts.runtime_quota_share_problems.at("pytorch-int8"),
             Contains("not measured yet") && Contains("host-quota-share-pytorch-int8.json"));
  CHECK(facts.runtime_quota_share_problems.count("pytorch") == 0);

  // ONNX Runtime's models are exported once, unthrottled, before any slice times them.
  const test::FakeTree ort_bin;
  o.runtime = "onnxruntime";
  o.python = fake_runtime_python(ort_bin, "ONNX Runtime 9.9");
  o.graphs = {"mixnet_s"};
  const QuotaShare ort = measure_quota_share(o);
  CHECK(ort.runtime_id == "onnxruntime");
  const std::string ort_calls = test::FakeTree::slurp(ort_bin.root() + "/calls");
  const auto first_line = ort_calls.substr(0, ort_calls.find('\n'));
  CHECK_THAT(first_line, Contains("0 0 --threads=1 --backend=onnxruntime --mean --min-time=1 "
                                  "--export mixnet_s"));
  CHECK(std::count(ort_calls.begin(), ort_calls.end(), '\n') == 4);  // export, 2 alone, 1 slice
  REQUIRE(cached_quota_share(nullptr, "onnxruntime"));

  // An unknown runtime: named, with the known ones.
  o.runtime = "tflite";
  CHECK_THROWS_WITH(measure_quota_share(o), Contains("no runtime is named 'tflite'") &&
                                                Contains("pytorch"));
  CHECK_THROWS_WITH(cached_quota_share(nullptr, "tflite"), Contains("'tflite'"));
  CHECK_THROWS_WITH(cached_quota_share(nullptr, "tensorflow-lite"),
                    Contains("recognises but cannot run the runtime 'tensorflow-lite'"));
}

TEST_CASE("the own share between the points is linear in log speed, 1 at a whole CPU",
          "[quota_share]") {
  const QuotaShare q = curve();
  CHECK(own_share_at(q, 0.05) == Approx(1.4));  // below the points: the lowest's
  CHECK(own_share_at(q, 0.1) == Approx(1.4));
  CHECK(own_share_at(q, std::sqrt(0.1 * 0.2)) == Approx(1.35));
  CHECK(own_share_at(q, 0.4) == Approx(1.2));
  CHECK(own_share_at(q, std::sqrt(0.4)) == Approx(1.1));  // halfway to 1 at a whole CPU
  CHECK(own_share_at(q, 1.0) == 1.0);
  CHECK(own_share_at(q, 3.0) == 1.0);
  CHECK(own_share_at(QuotaShare{}, 0.2) == 1.0);
  for (double bad : {0.0, -0.2, std::nan("")}) {
    CHECK_THROWS_WITH(own_share_at(q, bad), Contains("not a positive number"));
    CHECK_THROWS_WITH(quota_scale_at(q, bad), Contains("not a positive number"));
  }
}

TEST_CASE("the quota scale is the own share of the scaled quota, not of the device's",
          "[quota_share]") {
  const QuotaShare q = curve();
  for (double s : {0.02, 0.1, 0.2, 0.3, 0.6, 0.9}) {
    const double k = quota_scale_at(q, s);
    CHECK(k == Approx(own_share_at(q, k * s)).epsilon(1e-6));
    // A scaled quota is throttled less, so it needs less than the device's own share.
    CHECK(k <= own_share_at(q, s) + 1e-9);
  }
  CHECK(quota_scale_at(q, 0.05) == Approx(1.4));  // 0.07 is still below the lowest point
  CHECK(quota_scale_at(q, 1.0) == 1.0);
  CHECK(quota_scale_at(QuotaShare{}, 0.2) == 1.0);
  QuotaShare huge = q;
  for (QuotaSharePoint& p : huge.points) p.share = 9;
  CHECK(quota_scale_at(huge, 0.01) == kMaxQuotaScale);
  QuotaShare tiny = q;
  for (QuotaSharePoint& p : tiny.points) p.share = 0.1;
  CHECK(quota_scale_at(tiny, 0.1) == kMinQuotaScale);
}

TEST_CASE("how much one emulated time scatters: the own share's p10-p90 as a log sd",
          "[quota_share][interval]") {
  const QuotaShare q = curve();
  const double z = 2 * 1.2815516;  // a normal distribution's p10-p90 in standard deviations
  CHECK(own_share_log_sd(q, 0.1) == Approx(std::log(1.6 / 1.2) / z));
  CHECK(own_share_log_sd(q, 0.05) == Approx(std::log(1.6 / 1.2) / z));  // the lowest's below
  CHECK(own_share_log_sd(q, 0.4) == Approx(std::log(1.4 / 1.0) / z));
  CHECK(own_share_log_sd(q, 0.9) == Approx(std::log(1.4 / 1.0) / z));   // the highest's above
  CHECK(own_share_log_sd(q, std::sqrt(0.1 * 0.2)) ==
        Approx((std::log(1.6 / 1.2) + std::log(1.5 / 1.1)) / 2 / z));
  CHECK(own_share_log_sd(QuotaShare{}, 0.2) == 0.0);
  QuotaShare old = q;  // points without percentiles give no spread
  for (QuotaSharePoint& p : old.points) p.p10 = p.p90 = 0;
  CHECK(own_share_log_sd(old, 0.2) == 0.0);
  CHECK_THROWS_WITH(own_share_log_sd(q, 0.0), Contains("not a positive number"));
}

TEST_CASE("the emulation's scatter from the quartiles where measured: one held-up run does not "
          "widen it",
          "[quota_share][interval]") {
  QuotaShare q = curve();
  const double z = 2 * 0.6744898;  // a normal distribution's p25-p75 in standard deviations
  for (QuotaSharePoint& p : q.points) {
    p.p25 = 1.25;
    p.p75 = 1.35;
  }
  // At 0.1 one run of nine was held up: p90 6.2 (seen on a host), the quartiles unmoved.
  q.points[0].p90 = 6.2;
  CHECK(own_share_log_sd(q, 0.1) == Approx(std::log(1.35 / 1.25) / z));
  CHECK(own_share_log_sd(q, 0.4) == Approx(std::log(1.35 / 1.25) / z));
  // A point cached before quartiles keeps p10-p90 beside points that have them.
  q.points[2].p25 = q.points[2].p75 = 0;
  CHECK(own_share_log_sd(q, 0.4) == Approx(std::log(1.4 / 1.0) / (2 * 1.2815516)));
}

TEST_CASE("an nn speed's plan takes the host's own share as its quota scale, and says so",
          "[quota_share][plan]") {
  HostFacts host = test::two_cpu_host();
  host.quota_share = curve();
  const EmulationPlan p = plan_emulation(test::nn_device(0.2), host);
  const double k = quota_scale_at(curve(), 0.2);  // about 1.27
  CHECK(k > 1.2);
  CHECK(p.cpu_quota_us == static_cast<std::uint64_t>(std::llround(2000 * k)));
  CHECK(p.quota_scale == Approx(k).epsilon(0.001));
  CHECK(test::has_note(p.notes, "this host's own share"));
  CHECK(test::has_note(p.notes, "at 0.2 of a CPU"));
  // The spread at the scaled quota goes with the scale, into the run's interval.
  CHECK(p.emulation_log_sd == Approx(own_share_log_sd(curve(), k * 0.2)));
  CHECK(p.emulation_log_sd > 0);

  // Below 0.1 of a CPU the plan stretches the period to give the quota 1 ms, as the
  // measurement's slices did: still scaled (the lowest point's share below the points).
  const EmulationPlan slow = plan_emulation(test::nn_device(0.05), host);
  CHECK(slow.cpu_period_us == 20000);
  CHECK(slow.quota_scale == Approx(1.4));
  CHECK(slow.cpu_quota_us == 1400);

  // The integer speed is not an nn speed: unscaled, without a note.
  PlanOptions integer;
  integer.speed_kind = SpeedKind::integer;
  const EmulationPlan i = plan_emulation(test::nn_device(0.2), host, integer);
  CHECK(i.quota_scale == 1.0);
  CHECK(i.emulation_log_sd == 0.0);
  CHECK_FALSE(test::has_note(i.notes, "own share"));

  // A scale given wins.
  PlanOptions given;
  given.quota_scale = 1.0;
  CHECK(plan_emulation(test::nn_device(0.2), host, given).cpu_quota_us == 2000);
  // A quota rounded down to whole microseconds is not "capped" (it said so at 14:28 UTC on
  // 2026-11-28 for a quota of 1439 us of 10000).
  given.quota_scale = 1.0001;  // 2000.2 us, rounded to 2000
  const EmulationPlan rounded = plan_emulation(test::nn_device(0.2), host, given);
  CHECK(rounded.cpu_quota_us == 2000);
  CHECK(test::has_note(rounded.notes, "quota scale 1"));
  CHECK_FALSE(test::has_note(rounded.notes, "capped"));
  // A quota that the CPUs' whole time caps is.
  given.quota_scale = 4.0;
  const EmulationPlan capped = plan_emulation(test::nn_device(0.5), host, given);
  CHECK(capped.cpu_quota_us == 10000);
  CHECK(test::has_note(capped.notes, "capped at the CPUs' whole time"));

  // Measured at another period, or without keep-warm: not applied, and the note says why.
  PlanOptions longer;
  longer.cpu_period_us = 100000;
  const EmulationPlan l = plan_emulation(test::nn_device(0.2), host, longer);
  CHECK(l.quota_scale == 1.0);
  CHECK(test::has_note(l.notes, "measured at a 10 ms period with keep-warm and this plan asks for 100 ms"));
  // A warning of the result too: such a run is about the scale slower (the plan's note alone
  // went unseen, and period.md recommends giving the iteration time).
  CHECK(test::has_note(detail::plan_warnings(l, test::nn_device(0.2)),
                       "measured at a 10 ms period with keep-warm and this plan asks for 100 ms"));
  CHECK(detail::plan_warnings(plan_emulation(test::nn_device(0.2), host), test::nn_device(0.2))
            .empty());
  PlanOptions cold;
  cold.keep_warm = false;
  CHECK(plan_emulation(test::nn_device(0.2), host, cold).quota_scale == 1.0);
  // Above kKeepWarmMaxShare no plan runs keep-warm: a share measured with or without it is
  // taken either way (refused before, so a share measured only above 0.55 was never used).
  CHECK(plan_emulation(test::nn_device(0.7), host, cold).quota_scale > 1.0);
  HostFacts warm_less = host;
  warm_less.quota_share->keep_warm = false;
  CHECK(plan_emulation(test::nn_device(0.7), warm_less).quota_scale > 1.0);
  CHECK(plan_emulation(test::nn_device(0.2), warm_less).quota_scale == 1.0);
  // Nor after the scale: a core of 0.5 scaled by 1.15 gets 0.58 of a CPU, without keep-warm.
  const EmulationPlan half = plan_emulation(test::nn_device(0.5), warm_less);
  CHECK(half.quota_scale == Approx(quota_scale_at(curve(), 0.5)).epsilon(0.001));
  CHECK(half.quota_scale * 0.5 > kKeepWarmMaxShare);
  CHECK_FALSE(half.keep_warm);

  // Not measured: unscaled, and the note names the command.
  HostFacts bare = test::two_cpu_host();
  bare.quota_share_problem = "this host's own share under a quota is not measured yet";
  const EmulationPlan b = plan_emulation(test::nn_device(0.2), bare);
  CHECK(b.quota_scale == 1.0);
  CHECK(test::has_note(b.notes, "not measured yet"));
  CHECK(test::has_note(b.notes, "calibrate-host --nn"));

  // A quota pooled over several CPUs is not what was measured: unscaled, and said; per core,
  // each core group is one CPU's quota, scaled.
  Device quad = test::nn_device(0.2);
  quad.cores = 4;
  const EmulationPlan pooled = plan_emulation(quad, host);
  CHECK(pooled.quota_scale == 1.0);
  CHECK(test::has_note(pooled.notes, "pooled over 2 host CPUs"));
  PlanOptions cores;
  cores.cores = CoreEmulation::per_core;
  const EmulationPlan per_core = plan_emulation(quad, host, cores);
  CHECK(per_core.core_quota_us == static_cast<std::uint64_t>(std::llround(2000 * k)));

  // Nor is one measured for such plans on the way (nothing runs: no share, no problem added).
  PlanOptions measuring;
  measuring.measure_nn = true;
  CHECK_FALSE(with_measured_quota_share(bare, quad, measuring).quota_share);
  measuring.cpu_period_us = 50000;
  CHECK_FALSE(with_measured_quota_share(bare, test::nn_device(0.2), measuring).quota_share);
  measuring.cpu_period_us = kChosenCpuPeriod;
  measuring.keep_warm = false;
  CHECK(with_measured_quota_share(bare, test::nn_device(0.2), measuring).quota_share_problem ==
        bare.quota_share_problem);

  // Not measuring on the way: with_measured_quota_share leaves the host as it is.
  PlanOptions no;
  no.measure_nn = false;
  CHECK_FALSE(with_measured_quota_share(bare, test::nn_device(0.2), no).quota_share);
}

TEST_CASE("a quota scale short of the host's own share is said, with by how much",
          "[quota_share][plan]") {
  // The own share measured on an Intel Xeon host on 2026-12-02 (a busy day): a throttled slice
  // bought a tenth of its quota's work at 0.05 of a CPU, and no scale up to kMaxQuotaScale
  // makes it up for a device core below about 0.03 of a CPU.
  HostFacts host = test::two_cpu_host();
  QuotaShare steep = curve();
  steep.points = {{0.05, 11.0, 11.0, 9.0, 13.0, 9},
                  {0.1, 5.14, 5.14, 4.0, 6.0, 9},
                  {0.2, 2.49, 2.49, 2.0, 3.0, 9},
                  {0.4, 1.53, 1.53, 1.3, 1.8, 9}};
  host.quota_share = steep;
  const EmulationPlan slow = plan_emulation(test::nn_device(0.02), host);
  CHECK(slow.quota_scale == Approx(kMaxQuotaScale).epsilon(0.01));
  const double left = own_share_at(steep, slow.quota_scale * 0.02) / slow.quota_scale;
  CHECK(left > 1.5);
  REQUIRE(test::has_note(slow.notes, "quota scale short"));
  CHECK(test::has_note(slow.notes, fmt::format("about {:.0f}% too slow", 100 * (left - 1))));
  CHECK(test::has_note(slow.notes, "calibrate-host --nn --remeasure"));
  // A run says it in its warnings.
  const std::vector<std::string> warned = detail::plan_warnings(slow, test::nn_device(0.02));
  CHECK(test::has_note(warned, "quota scale short"));

  // Where the scale reaches the share, nothing is said: this curve at 0.2, the steep one at 0.1.
  host.quota_share = curve();
  CHECK_FALSE(test::has_note(plan_emulation(test::nn_device(0.2), host), "quota scale short"));
  host.quota_share = steep;
  const EmulationPlan met = plan_emulation(test::nn_device(0.1), host);
  CHECK(met.quota_scale > 2);
  CHECK(met.quota_scale < kMaxQuotaScale);
  CHECK_FALSE(test::has_note(met, "quota scale short"));
  // Nor where the scale was given rather than measured.
  PlanOptions given;
  given.quota_scale = 1.0;
  CHECK_FALSE(test::has_note(plan_emulation(test::nn_device(0.02), host, given),
                             "quota scale short"));
}

TEST_CASE("a plan says what the own share's check before the run found, and warns when it moved",
          "[quota_share][plan]") {
  HostFacts host = test::two_cpu_host();
  host.quota_share = curve();
  PlanOptions checking;
  checking.drift_check = true;
  const double k = quota_scale_at(curve(), 0.2);
  QuotaShareCheck c;
  c.speed = k * 0.2;
  c.cached = own_share_at(curve(), c.speed);
  c.measured = c.cached * 1.1;  // within kShareCheckBand: kept
  c.graphs = kShareCheckGraphs;
  c.cpu = 1;
  c.seconds = 1.5;
  host.quota_share_check = c;
  const EmulationPlan kept = plan_emulation(test::nn_device(0.2), host, checking);
  CAPTURE(kept.notes);
  CHECK(kept.quota_scale == Approx(k).epsilon(0.001));
  CHECK(test::has_note(kept.notes, fmt::format("own share checked just before the run at {:.3g} "
                                               "of a CPU on CPU 1 (2 ncnn graphs",
                                               c.speed)));
  CHECK(test::has_note(kept.notes, "within 1.5x: the cached share kept"));
  CHECK(kept.own_share_check == Approx(1.1));
  CHECK_FALSE(test::has_note(detail::plan_warnings(kept, test::nn_device(0.2)), "own share"));

  // Moved: the host's share (as with_checked_quota_share() leaves it, multiplied by measured /
  // cached) gives the plan its scale; the note and the run's warning say so.
  QuotaShare doubled = curve();
  for (QuotaSharePoint& p : doubled.points) p.share *= 2;
  host.quota_share = doubled;
  c.measured = c.cached * 2;
  c.applied = true;
  c.factor = 2;
  c.checks = 1;
  host.quota_share_check = c;
  const EmulationPlan moved = plan_emulation(test::nn_device(0.2), host, checking);
  CHECK(moved.quota_scale == Approx(quota_scale_at(doubled, 0.2)).epsilon(0.001));
  CHECK(moved.quota_scale > k * 1.5);
  CHECK(test::has_note(moved.notes, "own share moved"));
  CHECK(test::has_note(moved.notes, "(2.00x; followed beyond 1.5x): the quota scale follows the share now (the cached one "
                                    "times 2.00)"));
  CHECK(moved.own_share_check == Approx(2.0));
  CHECK(test::has_note(detail::plan_warnings(moved, test::nn_device(0.2)), "own share moved"));

  // A check that failed is said, and warned of, where the plan asked for it.
  host.quota_share = curve();
  host.quota_share_check.reset();
  host.quota_share_check_problem = "the check failed: no ncnn";
  const EmulationPlan failed = plan_emulation(test::nn_device(0.2), host, checking);
  CHECK(failed.quota_scale == Approx(k).epsilon(0.001));
  CHECK(test::has_note(failed.notes, "own share not checked: the check failed: no ncnn"));
  CHECK(failed.own_share_check == 0);
  CHECK(test::has_note(detail::plan_warnings(failed, test::nn_device(0.2)),
                       "own share not checked"));
  CHECK_FALSE(test::has_note(plan_emulation(test::nn_device(0.2), host), "own share not checked"));
  // Nor is anything said where the scale is not the share's.
  PlanOptions given = checking;
  given.quota_scale = 1.0;
  CHECK_FALSE(test::has_note(plan_emulation(test::nn_device(0.2), host, given), "own share"));
}

TEST_CASE("the own share is checked at the plan's quota in a real slice, and a run follows it",
          "[quota_share][kernel]") {
  REQUIRE_CGROUPS();
  const test::FakeTree bin;
  HostFacts host = test::two_cpu_host();
  host.quota_share = curve();
  host.quota_share->points[1].by_graph = {{"mobilenet_v2", 1.3}};
  PlanOptions o;
  o.drift_check = true;
  o.nn_measure.python = fake_python(bin);
  const Device board = test::nn_device(0.2);
  const EmulationPlan plan = plan_emulation(board, host, o);
  const int cpu = host_facts().cpus.front();
  const HostFacts checked = with_checked_quota_share(host, board, o, cpu);
  INFO(checked.quota_share_check_problem);
  REQUIRE(checked.quota_share_check);
  const QuotaShareCheck& c = *checked.quota_share_check;
  // The stand-in takes 10 ms throttled or not: emulated x speed / unthrottled = the speed
  // checked. The first check, at the plan's scaled quota (about 0.25 of a CPU), reads about a
  // fifth of the cached 1.27: followed, the quota falls to kMinQuotaScale's 0.1 of a CPU, more
  // than 20% away, where a second check reads again.
  const double first = double(plan.cpu_quota_us) / double(plan.cpu_period_us);
  CHECK(first > 0.25);
  CHECK(c.checks == 2);
  CHECK(c.speed == Approx(0.2 * kMinQuotaScale));
  CHECK(c.measured == Approx(c.speed));
  CHECK(c.cached == Approx(own_share_at(curve(), c.speed)));
  CHECK(c.cpu == cpu);
  CHECK(c.graphs == kShareCheckGraphs);
  CHECK(c.seconds > 0);
  // Far below the cached share: applied, the share multiplied by the two checks' ratios.
  CHECK(c.applied);
  const double ratio1 = first / own_share_at(curve(), first);
  QuotaShare once = curve();
  for (QuotaSharePoint& p : once.points) p.share *= ratio1;
  CHECK(c.factor == Approx(ratio1 * c.speed / own_share_at(once, c.speed)));
  REQUIRE(checked.quota_share->points.size() == curve().points.size());
  CHECK(checked.quota_share->points[1].share == Approx(curve().points[1].share * c.factor));
  // Each graph's own share follows alike, so that what is shown stays on one scale.
  CHECK(checked.quota_share->points[1].by_graph.at("mobilenet_v2") == Approx(1.3 * c.factor));
  // Checked once: a second call within kDriftProbeReuse uses the same readings.
  const HostFacts again = with_checked_quota_share(host, board, o, cpu);
  REQUIRE(again.quota_share_check);
  CHECK(again.quota_share_check->measured_at == c.measured_at);
  // Not asked for, or a scale given: not checked.
  PlanOptions off = o;
  off.drift_check = false;
  CHECK_FALSE(with_checked_quota_share(host, board, off, cpu).quota_share_check);
  PlanOptions given = o;
  given.quota_scale = 1.0;
  CHECK_FALSE(with_checked_quota_share(host, board, given, cpu).quota_share_check);
  PlanOptions drift_alone = o;
  drift_alone.share_check = false;
  CHECK_FALSE(with_checked_quota_share(host, board, drift_alone, cpu).quota_share_check);
  // A runner that fails: no check, and why.
  PlanOptions broken = o;
  broken.nn_measure.python = bin.root() + "/no-such-python";
  const HostFacts failed = with_checked_quota_share(host, board, broken, cpu);
  CHECK_FALSE(failed.quota_share_check);
  CHECK_THAT(failed.quota_share_check_problem, Contains("the check failed"));

  // A run with drift_check checks its own share on its CPU, and warns that it moved.
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  QuotaShareOptions m;
  m.python = o.nn_measure.python;
  m.graphs = {"squeezenet"};
  m.speeds = {0.25, 0.5};
  m.rounds = 1;
  REQUIRE_FALSE(measure_quota_share(m).cache_file.empty());  // shares 0.375 (see below)
  Command cmd;
  cmd.argv = {"true"};
  RunOptions r;
  r.slice.plan.drift_check = true;
  r.slice.plan.nn_measure.python = o.nn_measure.python;
  const Result run_result = run(cmd, test::nn_device(0.2), r);
  REQUIRE(run_result.ok());
  CHECK(test::has_note(run_result.plan.notes,
                       fmt::format("own share moved: checked just before the run at {:.3g} of a "
                                   "CPU on CPU {}",
                                   run_result.plan.quota_scale * 0.2,
                                   run_result.plan.cpus.front())));
  CHECK(test::has_note(run_result.warnings, "own share moved"));
  CHECK(run_result.plan.own_share_check > 0);
}

TEST_CASE("the own share is measured in real slices between unthrottled runs, and cached",
          "[quota_share][kernel]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  std::string why;
  CHECK_FALSE(cached_quota_share(&why));
  CHECK_THAT(why, Contains("not measured yet"));

  const test::FakeTree bin;
  QuotaShareOptions o;
  o.python = fake_python(bin);
  o.graphs = {"squeezenet", "mobilenet"};
  o.speeds = {0.5, 0.25};
  o.rounds = 1;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  const QuotaShare q = measure_quota_share(o);
  // The stand-in takes 10 ms throttled or not: emulated x speed / unthrottled = the speed,
  // which rises with the speed, so the shares are pooled into their mean.
  REQUIRE(q.points.size() == 2);
  CHECK(q.points[0].speed == 0.25);
  CHECK(q.points[0].measured == Approx(0.25));
  CHECK(q.points[1].measured == Approx(0.5));
  CHECK(q.points[0].share == Approx(0.375));
  CHECK(q.points[1].share == Approx(0.375));
  CHECK(q.points[1].samples == 2);
  CHECK(q.period_us == kDefaultCpuPeriodUs);  // the slices' own plan
  CHECK(q.runtime == "ncnn 1.0.test (stand-in)");
  CHECK(q.cpu >= 0);
  CHECK(test::has_note(lines, "[2/2] speed 0.5"));
  CHECK(q.cache_file == cache.root() + "/host-quota-share.json");

  const auto cached = cached_quota_share();
  REQUIRE(cached);
  CHECK(cached->points.size() == 2);
  CHECK(cached->points[1].measured == Approx(0.5));
  CHECK(cached->points[1].share == Approx(0.375));
  // Every sample 0.5: the quartiles measured and cached.
  CHECK(q.points[1].p25 == Approx(0.5));
  CHECK(cached->points[1].p25 == Approx(0.5));
  CHECK(cached->points[1].p75 == Approx(0.5));
  CHECK(host_facts().quota_share.has_value());
  CHECK_THAT(describe(*cached), Contains("0.38 at 0.5 of a CPU") && Contains("10 ms period"));
  // Each graph's own median per speed, as measured (not pooled), cached and described at the
  // smallest quota.
  REQUIRE(q.points[0].by_graph.size() == 2);
  CHECK(q.points[0].by_graph.at("mobilenet") == Approx(0.25));
  CHECK(q.points[0].by_graph.at("squeezenet") == Approx(0.25));
  REQUIRE(cached->points[1].by_graph.size() == 2);
  CHECK(cached->points[1].by_graph.at("squeezenet") == Approx(0.5));
  CHECK_THAT(describe(*cached), Contains("(at 0.25: mobilenet 0.25, squeezenet 0.25)"));
  // A share cached before them still reads, without them.
  auto old = nlohmann::json::parse(test::FakeTree::slurp(q.cache_file));
  for (auto& p : old["points"]) p.erase("by_graph");
  cache.file("/host-quota-share.json", old.dump());
  REQUIRE(cached_quota_share(&why));
  CHECK(cached_quota_share()->points[0].by_graph.empty());
  CHECK_THAT(describe(*cached_quota_share()), !Contains("(at 0.25:"));

  // A quick measure (two graphs, two speeds) replaced a cache of the default graphs at every
  // default speed: each later plan took the poorer share. Now it is not cached over it.
  {
    const detail::RuntimeSpec& ncnn = *detail::find_runtime("ncnn");
    auto full = nlohmann::json::parse(test::FakeTree::slurp(q.cache_file));
    full["graphs"] = std::vector<std::string>(ncnn.rating->share_models.begin(),
                                              ncnn.rating->share_models.end());
    const nlohmann::json point = full["points"][0];
    full["points"] = nlohmann::json::array();
    for (const double speed : QuotaShareOptions{}.speeds) {
      nlohmann::json p = point;
      p["speed"] = speed;
      full["points"].push_back(p);
    }
    full["rounds"] = QuotaShareOptions{}.rounds;
    full["loops"] = QuotaShareOptions{}.loops;
    full["measured_at"] = "2026-01-02T03:04:05Z";
    cache.file("/host-quota-share.json", full.dump());
    REQUIRE(cached_quota_share(&why));
    const QuotaShare quick = measure_quota_share(o);
    CHECK(quick.cache_file.empty());
    CHECK_THAT(quick.note, Contains("without mobilenet_v2, regnety_400m") &&
                               Contains("not at speed 0.05, 0.1, 0.2, 0.4, 0.7") &&
                               Contains("with 1 round of 5 inferences (the default: 3 of 5)") &&
                               Contains("not cached") &&
                               Contains("(of 2026-01-02T03:04:05Z), which it does not replace"));
    CHECK(cached_quota_share()->points.size() == 5);
    // A measure short of the default replaces a cache as short as itself (as above).
    old["measured_at"] = "2026-01-01T00:00:00Z";
    cache.file("/host-quota-share.json", old.dump());
    CHECK_FALSE(measure_quota_share(o).cache_file.empty());
    CHECK(cached_quota_share()->points.size() == 2);
  }

  // A corrupt cache is not used, and says so.
  cache.file("/host-quota-share.json", "{\"edgeprof_host_quota_share\": 1, \"points\": []}");
  CHECK_FALSE(cached_quota_share(&why));
  CHECK_THAT(why, Contains("corrupt") && Contains("host-quota-share.json"));

  // Unthrottled runs that waited for their CPU (10 ms of wall for 5 of CPU: another busy
  // process had half of it) would make every share too low: refused, nothing cached.
  const test::FakeTree busy_cache;
  test::ScopedEnv busy_env("EDGEPROF_CACHE_DIR", busy_cache.root());
  const test::FakeTree busy_bin;
  o.python = fake_python(busy_bin, 5);
  o.progress = nullptr;
  CHECK_THROWS_WITH(measure_quota_share(o),
                    Contains("was shared") && Contains("2.00x their CPU time") &&
                        Contains("not cached"));
  CHECK_FALSE(cached_quota_share());
  // Alone on the CPU (CPU time about the wall time): measured and cached as before.
  const test::FakeTree alone_bin;
  o.python = fake_python(alone_bin, 9.9);
  CHECK_FALSE(measure_quota_share(o).cache_file.empty());
}

TEST_CASE("a share measured above keep-warm's limit is still a keep-warm share a plan takes",
          "[quota_share][kernel]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  QuotaShareOptions o;
  o.python = fake_python(bin);
  o.graphs = {"squeezenet"};
  o.speeds = {0.25, 0.7};  // 0.7: a plan's slice there runs without keep-warm
  o.rounds = 1;
  const QuotaShare q = measure_quota_share(o);
  REQUIRE(q.points.size() == 2);
  CHECK(q.points[1].speed == 0.7);
  // Keep-warm ran where plans have it (0.25), so the share is a keep-warm one: before the
  // 0.7 point's slice without it turned the flag off, and no default plan took the share.
  CHECK(q.keep_warm);
  const auto cached = cached_quota_share();
  REQUIRE(cached);
  CHECK(cached->keep_warm);
  HostFacts host = test::two_cpu_host();
  host.quota_share = *cached;
  const EmulationPlan p = plan_emulation(test::nn_device(0.6), host);
  CHECK(test::has_note(p.notes, "this host's own share"));
  CHECK_FALSE(test::has_note(p.notes, "give --quota-scale"));
  CHECK(p.quota_scale == Approx(quota_scale_at(*cached, 0.6)).epsilon(0.001));

  // Speeds all above the limit: keep-warm never ran, so the share is not a keep-warm one (it
  // claimed to be before, and plans with keep-warm took a share measured without).
  o.speeds = {0.7, 0.8};
  const QuotaShare high = measure_quota_share(o);
  CHECK_FALSE(high.keep_warm);
  REQUIRE(cached_quota_share());
  CHECK_FALSE(cached_quota_share()->keep_warm);
}

TEST_CASE("measuring the own share refuses what it cannot measure", "[quota_share]") {
  QuotaShareOptions o;
  o.speeds = {1.0};
  CHECK_THROWS_WITH(measure_quota_share(o), Contains("speed 1 is outside (0, 1)"));
  o.speeds = {0.2};
  o.rounds = 0;
  CHECK_THROWS_WITH(measure_quota_share(o), Contains("rounds 0"));
  o.rounds = 1;
  o.graphs = {"no-such-graph"};
  o.python = "/bin/sh";
  CHECK_THROWS_WITH(measure_quota_share(o), Contains("no-such-graph"));
  // (No graphs: the runtime's own three, QuotaShareOptions::graphs.)
}

TEST_CASE("each graph's own share is its own, not another's", "[quota_share][kernel]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  QuotaShareOptions o;
  o.python = fake_throttled_python(bin);
  o.graphs = {"squeezenet", "mobilenet"};
  o.speeds = {0.25};
  o.rounds = 1;
  const QuotaShare q = measure_quota_share(o);
  REQUIRE(q.points.size() == 1);
  REQUIRE(q.points[0].by_graph.size() == 2);
  // SqueezeNet's time ignores the quota: emulated x speed / unthrottled is the speed exactly.
  CHECK(q.points[0].by_graph.at("squeezenet") == Approx(0.25));
  // MobileNet's time follows the quota, a quarter of a CPU: 4 times as long, a share of 1.
  CHECK(q.points[0].by_graph.at("mobilenet") == Approx(1.0).epsilon(0.02));
}
