#include "edgeprof/plan.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cgroup/backend.hpp"
#include "device/device_json.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/reference.hpp"
#include "nn/runtime_table.hpp"
#include "nn/runtimes.hpp"
#include "sys/fs.hpp"
#include "sys/parse.hpp"

namespace edgeprof {

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  std::string_view rest = text;
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.remove_suffix(1);
  auto bad = [&] {
    return Error(fmt::format("cannot read '{}' as a CPU list (expected e.g. \"0-3,8\")", text));
  };
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t dash = item.find('-');
    auto lo = detail::parse_u64(item.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : detail::parse_u64(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi > 65535) throw bad();
    for (auto c = *lo; c <= *hi; ++c) cpus.push_back(static_cast<int>(c));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (!sorted.empty() && sorted.front() < 0) {
    throw Error(fmt::format("CPU {} cannot be in a CPU list: CPUs are numbered from 0",
                            sorted.front()));
  }
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    // (sorted[j] + 1 would overflow at INT_MAX; the numbers are not negative here.)
    while (j + 1 < sorted.size() && sorted[j + 1] - 1 == sorted[j]) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return out;
}

HostFacts host_facts() {
  HostFacts facts;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) facts.cpus.push_back(c);
    }
  }
  // /proc/meminfo's MemTotal and SwapTotal, without the kernel formatting (and this process
  // parsing) the whole file for every slice: 0.5 us instead of 11 here.
  struct sysinfo si {};
  if (::sysinfo(&si) == 0) {
    facts.memory_bytes = std::uint64_t{si.totalram} * si.mem_unit;
    facts.swap_bytes = std::uint64_t{si.totalswap} * si.mem_unit;
  }
  detail::Fs fs;
  // A sysctl that root may change, but rarely does: read once per process.
  static const std::uint64_t slice_us = [&fs] {
    const auto text = fs.read(detail::files::kProcCfsBandwidthSlice);
    return text ? std::strtoull(text->c_str(), nullptr, 10) : 0ull;
  }();
  facts.cfs_bandwidth_slice_us = slice_us;
  if (auto disk = detail::disk_under(fs, ".", &facts.io_device_problem)) facts.io_device = *disk;
  facts.quota_share = cached_quota_share(&facts.quota_share_problem);
  for (const detail::RuntimeSpec& r : detail::runtime_table()) {
    if (!r.rating || r.id == "ncnn") continue;
    std::string why;
    if (auto share = cached_quota_share(&why, r.id)) {
      facts.runtime_quota_shares[std::string(r.id)] = *share;
    } else if (!why.empty()) {
      facts.runtime_quota_share_problems[std::string(r.id)] = std::move(why);
    }
  }
  return facts;
}

bool operator==(const ThreadsProjection& a, const ThreadsProjection& b) {
  return a.threads == b.threads && a.speedup == b.speedup && a.scaling == b.scaling &&
         a.workload_factor == b.workload_factor;
}

bool operator==(const EmulationPlan& a, const EmulationPlan& b) {
  return a.cpus == b.cpus && a.cpu_period_us == b.cpu_period_us &&
         a.cpu_quota_us == b.cpu_quota_us && a.memory_max_bytes == b.memory_max_bytes &&
         a.swap_max_bytes == b.swap_max_bytes && a.pids_max == b.pids_max &&
         a.io_device == b.io_device && a.io_read_bps == b.io_read_bps &&
         a.io_write_bps == b.io_write_bps && a.keep_warm == b.keep_warm && a.thread_env == b.thread_env &&
         a.core_groups == b.core_groups && a.core_quota_us == b.core_quota_us &&
         a.core_quota_by_busy == b.core_quota_by_busy && a.quota_scale == b.quota_scale &&
         a.emulation_log_sd == b.emulation_log_sd && a.host_drift == b.host_drift &&
         a.drift_probed == b.drift_probed && a.own_share_check == b.own_share_check &&
         a.threads_projection == b.threads_projection && a.notes == b.notes &&
         a.unapplied == b.unapplied;
}

const char* to_string(CoreEmulation cores) {
  switch (cores) {
    case CoreEmulation::per_core: return "per-core";
    case CoreEmulation::projected: return "projected";
    case CoreEmulation::automatic: return "auto";
    case CoreEmulation::pooled: break;
  }
  return "pooled";
}

CoreEmulation core_emulation_from_string(std::string_view text) {
  if (text == "pooled") return CoreEmulation::pooled;
  if (text == "per-core" || text == "per_core") return CoreEmulation::per_core;
  if (text == "projected") return CoreEmulation::projected;
  if (text == "auto" || text == "automatic") return CoreEmulation::automatic;
  throw Error(fmt::format("core_emulation = '{}' is not a way to emulate cores: use 'pooled' "
                          "(one quota for the whole device), 'per-core' (a quota per device core), "
                          "'projected' (one core, its times divided by the board's published "
                          "speed-up) or 'auto' (projected where the device's tables allow it, "
                          "else pooled)",
                          text));
}

std::map<std::string, std::string> thread_env_defaults(int cores, bool throttled) {
  std::map<std::string, std::string> env;
  if (cores < 1) return env;
  for (const char* name : kThreadCountVariables) env[name] = std::to_string(cores);
  if (throttled) {
    // Inserted whole: assigning the literals tripped GCC 12's -Wrestrict at -O3 (a false
    // positive, GCC bug 105329).
    env.insert_or_assign("OMP_WAIT_POLICY", std::string("PASSIVE"));
    env.insert_or_assign("GOMP_SPINCOUNT", std::string("0"));
    env.insert_or_assign("KMP_BLOCKTIME", std::string("0"));
  }
  return env;
}

std::uint64_t choose_cpu_period_us(std::uint64_t iteration_time_us) {
  if (iteration_time_us == 0) return kDefaultCpuPeriodUs;
  return std::clamp<std::uint64_t>(iteration_time_us / 10, kMinChosenCpuPeriodUs, 100000);
}

CpuBandwidth cpu_bandwidth(double capacity_cores, std::uint64_t period_us) {
  CpuBandwidth b{0, period_us};
  if (capacity_cores * static_cast<double>(period_us) < static_cast<double>(kMinCpuQuotaUs)) {
    b.period_us = std::min<std::uint64_t>(
        kMaxCpuPeriodUs,
        static_cast<std::uint64_t>(std::ceil(static_cast<double>(kMinCpuQuotaUs) / capacity_cores)));
  }
  b.quota_us = std::max<std::uint64_t>(
      kMinCpuQuotaUs,
      static_cast<std::uint64_t>(std::llround(capacity_cores * static_cast<double>(b.period_us))));
  return b;
}

Device fit_to_cpus(const Device& device, std::size_t cpus) {
  const double needed = device.cores * device.core_speed;
  if (needed <= static_cast<double>(std::min<std::size_t>(static_cast<std::size_t>(device.cores),
                                                          cpus)) + 1e-9) {
    return device;
  }
  const int fit =
      static_cast<int>(std::floor(static_cast<double>(cpus) / device.core_speed + 1e-9));
  if (fit < 1 || device.core_speed > 1.0 + 1e-9) {
    throw UnsupportedError(fmt::format(
        "device '{}' needs {:.2f} host cores of CPU capacity ({} cores x speed {}): one of its "
        "cores is faster than a host CPU, which no quota can emulate. Emulate it on a faster "
        "host, or lower core_speed",
        device.name, needed, device.cores, describe_core_speed(device)));
  }
  return for_threads(device, std::min(fit, device.cores));
}

using detail::switch_from_env;

bool measure_nn_by_default() { return switch_from_env("EDGEPROF_MEASURE_NN", true); }

bool steady_malloc_by_default() { return switch_from_env("EDGEPROF_STEADY_MALLOC", true); }

bool count_activations_by_default() { return switch_from_env("EDGEPROF_COUNT_ACTIVATIONS", true); }

bool drift_check_by_default() { return switch_from_env("EDGEPROF_DRIFT_CHECK", false); }

namespace {

// How far the own share at the quota applied may exceed the scale applied before a plan says
// its times run too slow: a point of the measurement moves by about 10% between runs.
constexpr double kQuotaScaleShortBy = 1.15;

// The quota scale a plan applies, where it comes from, and a note when an nn speed's plan
// applies none for want of a measurement.
struct QuotaScaleChoice {
  double scale = 1.0;
  std::string from;  // for the note of the scale
  std::string note;  // why an nn speed gets no scale; "" otherwise
  double log_sd = 0;  // the own share's spread at the scaled quota, when the scale is from it
  const QuotaShare* share = nullptr;  // the measured share the scale is from, if it is
  std::string check_note;  // the share's check just before the run, when it is from one
  double check = 0;        // its measured / cached; 0 = not checked
  std::string share_note;  // ncnn's share taken for another runtime's speed, and why
};

// HostFacts::quota_share_check as a plan note, where the scale is from the share and the plan
// asked for the check (PlanOptions::drift_check); "" otherwise.
std::string share_check_note(const HostFacts& host, const PlanOptions& options) {
  if (host.quota_share_check) {
    const QuotaShareCheck& k = *host.quota_share_check;
    const double ratio = k.measured / k.cached;
    const std::string how = fmt::format(
        "checked just before the run at {:.3g} of a CPU on CPU {} ({} ncnn graph{} unthrottled "
        "and in a one-core slice, {:.1f} s, measured), it read {:.2f} against the cached {:.2f}",
        k.speed, k.cpu, k.graphs.size(), k.graphs.size() == 1 ? "" : "s", k.seconds, k.measured,
        k.cached);
    if (!k.applied) {
      return fmt::format("own share {}, within {:g}x: the cached share kept", how,
                         1 + kShareCheckBand);
    }
    return fmt::format(
        "own share moved: {} ({:.2f}x; followed beyond {:g}x): the quota scale follows the share now "
        "(the cached one times {:.2f}{}). The host's load has changed since its own share was "
        "measured; measure it again when the host is steady (`edgeprof calibrate-host --nn "
        "--remeasure`)",
        how, ratio, 1 + kShareCheckBand, k.factor,
        k.checks > 1 ? ", from a second check at the quota the first gave" : "");
  }
  if (options.drift_check && options.share_check && !host.quota_share_check_problem.empty()) {
    return fmt::format("own share not checked: {}; the cached share applied as measured",
                       host.quota_share_check_problem);
  }
  return {};
}

QuotaScaleChoice choose_quota_scale(const Device& device, const HostFacts& host,
                                    const PlanOptions& options, double cpu_share,
                                    std::size_t pooled_cpus) {
  QuotaScaleChoice c;
  if (options.quota_scale) {
    c.scale = *options.quota_scale;
    c.from = "PlanOptions::quota_scale";
    return c;
  }
  if (device.speed_kind != "nn" || cpu_share >= 1.0) return c;
  const char* then = "the quota is the device's capacity, and a throttled slice may do less "
                     "ncnn work per CPU-second than unthrottled (docs/fidelity.md)";
  // At another runtime's speed, that runtime's own share where measured; else ncnn's, said
  // where it is applied.
  const QuotaShare* runtime_share = nullptr;
  std::string other;  // the other runtime whose own share is missing
  if (device.nn && device.nn->basis != "ncnn" && device.nn->basis != "vector") {
    const auto it = host.runtime_quota_shares.find(device.nn->basis);
    if (it != host.runtime_quota_shares.end() && !it->second.points.empty()) {
      runtime_share = &it->second;
    } else {
      other = device.nn->basis;
    }
  }
  const std::string measure_other =
      other.empty() ? std::string()
                    : fmt::format("`edgeprof calibrate-host --nn --runtime {}` measures {}'s own "
                                  "({} on a 2-vCPU host)",
                                  other, detail::runtime_name(other),
                                  detail::share_duration(other));
  if (!runtime_share && (!host.quota_share || host.quota_share->points.empty())) {
    c.note = fmt::format("this host's own share under a quota is not measured ({}): {}; "
                         "`edgeprof calibrate-host --nn` measures it ({}){}",
                         host.quota_share_problem.empty() ? std::string("not cached")
                                                          : host.quota_share_problem,
                         then, detail::share_duration("ncnn"),
                         measure_other.empty() ? "" : ", and " + measure_other);
    return c;
  }
  if (pooled_cpus > 1) {
    c.note = fmt::format("the quota is pooled over {} host CPUs, and this host's own share was "
                         "measured for one thread on one CPU at the default period: the quota "
                         "is the device's capacity (four ncnn threads under the scaled pool ran "
                         "too fast on the Raspberry Pis, docs/fidelity.md); per-core emulation "
                         "(--core-emulation per-core) gets the scale",
                         pooled_cpus);
    return c;
  }
  const QuotaShare& q = runtime_share ? *runtime_share : *host.quota_share;
  // The period asked for, before the plan stretches it for a quota under 1 ms or lengthens it
  // for a pool: the measurement's slices asked for the default and were stretched alike.
  const std::uint64_t asked =
      options.iteration_time_us ? choose_cpu_period_us(options.iteration_time_us)
      : options.cpu_period_us == kChosenCpuPeriod ? kDefaultCpuPeriodUs
                                                  : options.cpu_period_us;
  // Keep-warm matters only where plans run it: a share measured with it (or without) is the
  // same measurement as far as a slice above kKeepWarmMaxShare goes, the share after the scale
  // (what the plan's slice gets and decides keep-warm by).
  const bool keep_warm_applies = quota_scale_at(q, cpu_share) * cpu_share <= kKeepWarmMaxShare ||
                                 !device.speed_schedule.empty();
  if (q.period_us != asked || (keep_warm_applies && q.keep_warm != options.keep_warm)) {
    c.note = fmt::format("this host's own share was measured at a {:g} ms period{} and this "
                         "plan asks for {:g} ms{}: {}; give --quota-scale (quota_scale, "
                         "PlanOptions::quota_scale) to scale it anyway",
                         double(q.period_us) / 1000, q.keep_warm ? " with keep-warm" : "",
                         double(asked) / 1000,
                         options.keep_warm ? " with keep-warm" : " without", then);
    return c;
  }
  if (!other.empty()) {
    const auto problem = host.runtime_quota_share_problems.find(other);
    c.share_note = fmt::format(
        "{0}'s own share under a quota is {2}: the quota scale is ncnn's, and a throttled {0} "
        "process may buy less work than ncnn's (PyTorch's small models 15-35% less here, "
        "docs/fidelity.md); {1}",
        detail::runtime_name(other), measure_other,
        problem == host.runtime_quota_share_problems.end()
            ? std::string("not measured on this host")
            : "not taken (" + problem->second + ")");
  }
  c.scale = quota_scale_at(q, cpu_share);
  c.log_sd = own_share_log_sd(q, c.scale * cpu_share);
  c.share = &q;
  c.check_note = share_check_note(host, options);
  if (host.quota_share_check) {
    c.check = host.quota_share_check->measured / host.quota_share_check->cached;
  }
  c.from = fmt::format("this host's own share under the scaled quota ({:.3g} of a CPU) for a "
                       "device core at {:.3g} of a CPU, measured {} with {} {} {}{} "
                       "(`edgeprof calibrate-host --nn{}`)",
                       c.scale * cpu_share, cpu_share, q.measured_at, q.graphs.size(),
                       detail::runtime_name(q.runtime_id),
                       q.runtime_id == "ncnn" ? "graph" : "model", q.graphs.size() == 1 ? "" : "s",
                       q.runtime_id == "ncnn" ? "" : " --runtime " + q.runtime_id);
  return c;
}

// PlanOptions::drift_check: the nn speed times the host's drift since its rating, where it was
// probed and is within the range a plan applies.
void correct_for_drift(Device& device, const HostFacts& host, EmulationPlan& plan) {
  if (host.drift && host.drift->runtime_id != device.nn->basis) {
    plan.notes.push_back(fmt::format(
        "host drift not corrected: it was probed with {} and the speed is {}'s",
        detail::runtime_name(host.drift->runtime_id), detail::runtime_name(device.nn->basis)));
    return;
  }
  const std::string remeasure = detail::remeasure_command(device.nn->basis);
  if (!host.drift) {
    plan.notes.push_back(fmt::format(
        "host drift not corrected: {}; the nn speed is the rating's",
        host.drift_problem.empty()
            ? std::string("not probed (with_measured_drift() probes it; a Slice does)")
            : host.drift_problem));
    return;
  }
  const HostDrift& d = *host.drift;
  plan.drift_probed = d.factor;
  if (d.waiting > kProbeWaitingShared) {
    plan.notes.push_back(fmt::format(
        "host CPU shared: the drift probe's inferences on CPU {} took {:.2f}x their CPU time, so "
        "another busy process (or a hypervisor's steal) had part of it: a throttled slice "
        "barely waits for it, but unthrottled times and the emulation's spread move with it",
        d.cpu, d.waiting));
    if (!d.cpu_time) {
      plan.notes.push_back(fmt::format(
          "host drift not corrected: the probe read {:.2f}x, but the rating has no CPU times to "
          "tell the wait from drift: measure the rating again ({})",
          d.factor, remeasure));
      return;
    }
  }
  if (!(d.factor >= kMinHostDrift && d.factor <= kMaxHostDrift)) {
    plan.notes.push_back(fmt::format(
        "host drift not corrected: {}, beyond the {:g} .. {:g} a plan applies (another "
        "workload on the CPU, or a host much changed since its rating): measure the rating "
        "again ({})",
        describe(d), kMinHostDrift, kMaxHostDrift, remeasure));
    return;
  }
  if (std::abs(d.factor - 1) < kHostDriftDeadBand) {
    plan.notes.push_back(fmt::format(
        "host drift not corrected: {}, within the +-{:.0f}% the probe cannot tell from its own "
        "noise",
        describe(d), 100 * kHostDriftDeadBand));
    return;
  }
  if (device.core_speed * d.factor > 1.0) {
    plan.notes.push_back(fmt::format(
        "host drift not corrected: {}, and the device's core at {:.4g} x {:.3g} of a host core "
        "would be faster than a host CPU, which a quota cannot give",
        describe(d), device.core_speed, d.factor));
    return;
  }
  const double before = device.core_speed;
  device.core_speed *= d.factor;
  device.nn->core_speed *= d.factor;
  plan.host_drift = d.factor;
  plan.notes.push_back(fmt::format("host drift corrected: {}, so the device's nn speed is "
                                   "{:.4g} x {:.3g} = {:.4g} of a host core now",
                                   describe(d), before, d.factor, device.core_speed));
}

// The probe's kernels behind the speed emulated (the vector kernel for an nn speed from the
// scores, the three scalar ones for a core speed from them) that spread beyond
// kWideProbeSpread, said with what to do; "" when none did or the speed is not the probe's.
std::string probe_spread_note(const Device& device) {
  if (!device.scores || device.scores->spread.empty()) return {};
  std::vector<std::string> kernels;
  if (device.speed_kind == "nn") {
    if (!device.nn || device.nn->basis != "vector") return {};
    kernels = {"vector"};
  } else {
    const auto source = device.sources.find("core_speed");
    if (source == device.sources.end() ||
        source->second.source.rfind(detail::kProbeScoresSource, 0) != 0) {
      return {};
    }
    kernels = {"integer", "floating", "memory"};
  }
  std::vector<std::string> wide;
  for (const std::string& k : kernels) {
    const auto it = device.scores->spread.find(k);
    if (it == device.scores->spread.end() || !(it->second > detail::kWideProbeSpread)) continue;
    wide.push_back(fmt::format("{} {:.0f}%", k, 100 * it->second));
  }
  if (wide.empty()) return {};
  return fmt::format(
      "{} widely on the device ({}: fastest minus slowest timed run over the median), so the "
      "speed from them is uncertain: the board was busy or throttling while it was probed. "
      "Probe it again idle and cool (edgeprof-probe; docs/probe-a-device.md)",
      detail::kProbeSpreadNote, fmt::join(wide, ", "));
}

}  // namespace

std::optional<TimeInterval> device_interval(const NnSpeed& speed, const EmulationPlan& plan,
                                            double level) {
  const auto& projection = plan.threads_projection;
  const bool projected = projection && projection->speedup != 1.0;
  // A table timed at the projected threads whose one-core factor is the projection's speed-up
  // (the same board's scaling at the same threads, no workload factor): it cancels.
  const bool same_threads = projected && speed.threads > 1 &&
                            speed.threads == projection->threads &&
                            std::abs(projection->speedup / speed.one_core_factor - 1) < 1e-9;
  return time_interval(speed, level, plan.emulation_log_sd,
                       projected && !same_threads ? projection->scaling.loo_log_sd : 0.0);
}

ThreadsProjection project_threads(const Device& device, std::string_view without_graph) {
  // The device's own table of the most threads up to its cores; a device narrowed to k of its
  // cores (for_threads) without one keeps its tables: the widest one's scaling carried to k.
  std::optional<CoreScaling> scaling = core_scaling(device, without_graph);
  if (!scaling) {
    Device wide = device;
    for (const auto& [n, times] : device.nn_threads_ms) wide.cores = std::max(wide.cores, n);
    scaling = core_scaling(wide, without_graph);
  }
  if (!scaling) {
    throw UnsupportedError(fmt::format(
        "device '{}' cannot be projected from one core: it has no published multi-thread CNN "
        "inference times with at least 3 graphs in common with its one-thread times "
        "(nn.threads_ms in a device file, docs/devices.md); emulate its cores as 'pooled' or "
        "'per-core' instead",
        device.name));
  }
  ThreadsProjection p;
  p.threads = device.cores;
  p.speedup = scaling->speedup_at(device.cores);
  p.scaling = *scaling;
  return p;
}

Device with_measured_nn(const Device& device, const PlanOptions& options) {
  if (options.speed_kind == SpeedKind::integer || device.nn || device.nn_ms.empty()) return device;
  // Not measuring: a rating cached since the device was loaded is still used.
  if (!options.measure_nn && !cached_nn_rating()) return device;
  return with_measured_nn(device, options.nn_measure);
}

CoreEmulation resolve_core_emulation(const Device& device, CoreEmulation asked,
                                     std::string* why) {
  if (asked != CoreEmulation::automatic) return asked;
  const auto say = [&](std::string text) {
    if (why) *why = std::move(text);
  };
  if (device.cores < 2) {
    say("one core: nothing to pool or project");
    return CoreEmulation::pooled;
  }
  if (device.nn_threads_ms.empty()) {
    say("the device has no published multi-thread CNN inference times to project with");
    return CoreEmulation::pooled;
  }
  if (device.speed_kind != "nn") {
    say("the device is not emulated at its nn speed, and its published multi-thread times are "
        "of CNN inference at that speed");
    return CoreEmulation::pooled;
  }
  if (!device.speed_schedule.empty()) {
    say("the device has a speed schedule, timed on the device's clock, which a one-core run "
        "projected to all cores does not keep");
    return CoreEmulation::pooled;
  }
  try {
    project_threads(device);
  } catch (const UnsupportedError& e) {
    say(e.what());
    return CoreEmulation::pooled;
  }
  say("the device has published one- and multi-thread CNN inference times at its nn speed");
  return CoreEmulation::projected;
}

EmulationPlan plan_emulation(const Device& described, const HostFacts& host,
                             const PlanOptions& asked) {
  described.validate();
  EmulationPlan plan;
  // The speed of the kind asked for (nn where the device has it, by default).
  Device device = for_speed_kind(with_measured_nn(described, asked), asked.speed_kind, &plan.notes);
  if (std::string spread = probe_spread_note(device); !spread.empty()) {
    plan.notes.push_back(std::move(spread));
  }
  PlanOptions options = asked;
  const detail::RuntimeSpec* rated =
      device.nn ? detail::find_runtime(device.nn->basis) : nullptr;
  if (options.drift_check && device.speed_kind == "nn" && rated && rated->rating) {
    correct_for_drift(device, host, plan);
  }
  if (options.cores == CoreEmulation::automatic) {
    std::string why;
    options.cores = resolve_core_emulation(device, options.cores, &why);
    // Said where the choice could have gone the other way: a device without published
    // multi-thread times is pooled whatever else, and the pooled note says what that means.
    if (device.cores > 1 && !device.nn_threads_ms.empty()) {
      plan.notes.push_back(fmt::format("core emulation auto: {} ({})", to_string(options.cores),
                                       why));
    }
  }
  if (options.cores == CoreEmulation::projected && device.cores > 1) {
    plan.threads_projection = project_threads(device);
    const ThreadsProjection& p = *plan.threads_projection;
    plan.notes.push_back(fmt::format(
        "projected: one of the device's {} cores is emulated, its workload told to start one "
        "thread; its times with all {} are the measured ones / {:.3g}, the board's speed-up from "
        "1 to {} threads (the median over {} published ncnn graphs{}; a graph's own speed-up was "
        "{:.0f}% from the others' median, {:.0f}% at worst). A workload that starts its own "
        "threads whatever OMP_NUM_THREADS says must be given one (Result::projected_s, "
        "docs/threads.md)",
        p.threads, p.threads, p.speedup, p.threads, p.scaling.graphs,
        p.scaling.threads == p.threads
            ? ""
            : fmt::format(" with {} threads, taken to {} as contention", p.scaling.threads,
                          p.threads),
        100 * p.scaling.loo_median_error, 100 * p.scaling.loo_worst_error));
    if (options.workload_scaling) {
      const double w = *options.workload_scaling;
      plan.threads_projection->workload_factor = w;
      plan.threads_projection->speedup *= w;
      plan.notes.push_back(fmt::format(
          "the projection follows the workload's own scaling: it sped up {:.3g}x as much as the "
          "reference graphs with more threads on this host, so its speed-up on the board is "
          "taken as {:.3g} x {:.3g} = {:.3g} (PlanOptions::workload_scaling; docs/threads.md)",
          w, p.speedup / w, w, p.speedup));
    }
    if (!device.speed_schedule.empty()) {
      plan.notes.push_back(fmt::format(
          "projected with a speed schedule: its steps are timed on this one-core run's clock, "
          "which runs about {:.3g}x longer than the device's with all its cores, so they come "
          "that much later in the projected times than on the device (core emulation 'pooled' "
          "keeps the device's clock; auto chooses it)",
          p.speedup));
    }
    device = for_threads(device, 1);
  }
  if (options.workload_scaling && !plan.threads_projection) {
    plan.notes.push_back(fmt::format(
        "workload_scaling {:.3g} not applied: it moves a projection to the device's cores, and "
        "this plan is not projected (core emulation {})",
        *options.workload_scaling, to_string(options.cores)));
  }
  if (options.cpu_period_us != kChosenCpuPeriod &&
      (options.cpu_period_us < kMinCpuPeriodUs || options.cpu_period_us > kMaxCpuPeriodUs)) {
    throw Error(fmt::format("cpu_period_us = {} is out of range: the kernel accepts {} to {} us "
                            "(or 0: chosen by edgeprof)",
                            options.cpu_period_us, kMinCpuPeriodUs, kMaxCpuPeriodUs));
  }
  if (options.workload_scaling &&
      !(*options.workload_scaling >= 0.5 && *options.workload_scaling <= 2.0)) {
    throw Error(fmt::format("workload_scaling = {} is out of range: give 0.5 to 2 (the "
                            "workload's speed-up with more threads on this host over the "
                            "reference graphs', workload_scaling() in nn.hpp)",
                            *options.workload_scaling));
  }
  if (options.quota_scale &&
      !(*options.quota_scale >= kMinQuotaScale && *options.quota_scale <= kMaxQuotaScale)) {
    throw Error(fmt::format("quota_scale = {} is out of range: give {} to {} (1: the device's "
                            "capacity exactly; none: this host's measured own share for an nn "
                            "speed)",
                            *options.quota_scale, kMinQuotaScale, kMaxQuotaScale));
  }
  if (options.iteration_time_us && options.cpu_period_us != kChosenCpuPeriod) {
    throw Error(fmt::format("give either a CFS period (cpu_period_us = {}) or the workload's "
                            "iteration time ({:g} ms), not both: the period is chosen from the "
                            "iteration time",
                            options.cpu_period_us, double(options.iteration_time_us) / 1000));
  }
  const std::string who = fmt::format("device '{}'", device.name);

  // CPUs: the device's core count, capped by what the host allows this process.
  std::vector<int> usable = options.cpus.empty() ? host.cpus : options.cpus;
  for (auto it = options.cpus.begin(); it != options.cpus.end(); ++it) {
    // A CPU given twice would be counted twice: a quota for more cores than the cpuset holds.
    if (std::find(options.cpus.begin(), it, *it) != it) {
      throw UnsupportedError(fmt::format("CPU {} is asked for twice (cpus {}): give each CPU once",
                                         *it, fmt::join(options.cpus, ",")));
    }
  }
  for (int cpu : options.cpus) {
    if (std::find(host.cpus.begin(), host.cpus.end(), cpu) == host.cpus.end()) {
      throw UnsupportedError(fmt::format("CPU {} was asked for, but this process may only use "
                                         "CPUs {}",
                                         cpu, format_cpu_list(host.cpus)));
    }
  }
  if (usable.empty()) throw UnsupportedError("the host reports no usable CPUs");
  // The first ones in the order given (the host's: ascending), listed ascending.
  usable.erase(std::unique(usable.begin(), usable.end()), usable.end());
  // A device that needs more CPU capacity than the host's CPUs give: as many of its cores as fit.
  if (const Device fitted = fit_to_cpus(device, usable.size()); fitted.cores < device.cores) {
    plan.notes.push_back(fmt::format(
        "{} of the device's {} cores are emulated: all {} need {:.2f} host cores of CPU "
        "capacity ({} cores x speed {}), more than the {} host CPU{} here. A workload with at "
        "most {} busy thread{} gets the CPU it would on the device; one with more runs slower "
        "than on it (run on a larger host for all {}; for_threads, --threads: docs/devices.md)",
        fitted.cores, device.cores, device.cores, device.cores * device.core_speed, device.cores,
        describe_core_speed(device), usable.size(), usable.size() == 1 ? "" : "s", fitted.cores,
        fitted.cores == 1 ? "" : "s", device.cores));
    device = fitted;
  }
  const size_t ncpus = std::min<size_t>(static_cast<size_t>(device.cores), usable.size());
  plan.cpus.assign(usable.begin(), usable.begin() + static_cast<long>(ncpus));
  std::sort(plan.cpus.begin(), plan.cpus.end());
  const double capacity = device.cores * device.core_speed;
  const bool per_core = options.cores == CoreEmulation::per_core && device.cores > 1 &&
                        device.core_speed < 1.0 &&
                        static_cast<std::uint32_t>(device.cores) <= kMaxCoreGroups;
  if (options.cores == CoreEmulation::per_core &&
      static_cast<std::uint32_t>(device.cores) > kMaxCoreGroups) {
    plan.notes.push_back(fmt::format("per-core emulation makes at most {} core groups: the {} "
                                     "cores share one quota",
                                     kMaxCoreGroups, device.cores));
  }
  if (static_cast<size_t>(device.cores) > ncpus && !per_core) {
    plan.notes.push_back(fmt::format(
        "{} cores are emulated on {} host CPU{}: their total CPU capacity is the device's, but "
        "no more than {} threads run at the same instant, and a thread that spin-waits (an "
        "OpenMP barrier: ncnn's openmp_blocktime, OMP_WAIT_POLICY, GOMP_SPINCOUNT) spends the "
        "quota its siblings need, which on the device it would not (the plan's thread "
        "environment makes OpenMP threads wait passively; a program's own setting, such as "
        "ncnn's openmp_blocktime, is its own); 4 ncnn threads sped up 1.8-2.4x here where the "
        "boards did 1.6-2.8x, and 1.1-1.4x on a slower-rated host (docs/fidelity.md)",
        device.cores, ncpus, ncpus == 1 ? "" : "s", ncpus));
  }
  if (device.speed_kind != "nn" && device.reference_uncorrected()) {
    plan.notes.push_back(fmt::format(
        "core speed {:g} is relative to the catalog's reference core ({}), taken as this "
        "host's uncorrected: this host's speed relative to that core is not measured, so the "
        "device runs as much too fast or too slow as this host differs from it; run "
        "`edgeprof calibrate-host --reference` (needs 7-Zip, 40-60 s) once",
        device.core_speed, kReferenceCore));
  }
  // cpu.max limits the slice, not each thread: one busy thread may use the whole quota, up to
  // a host core (docs/benchmarks.md, fidelity: the cpu.max bound).
  if (device.cores > 1 && device.core_speed < 1.0 && !per_core) {
    plan.notes.push_back(fmt::format(
        "the CPU quota ({:.2f} host cores) is the whole slice's: a workload with fewer busy "
        "threads than the device's {} cores runs each of them faster than a device core, a "
        "single thread at up to {:.2f} of a host core instead of {:g}; for such a workload, "
        "emulate as many cores as it has busy threads (--threads, for_threads; "
        "docs/devices.md)",
        capacity, device.cores, std::min(1.0, capacity), device.core_speed));
  }

  // Each CPU draws the quota from the slice's pool a bandwidth slice at a time: with less than
  // two slices per CPU per period, one CPU can take most of it, and busy threads get unequal
  // shares (docs/benchmarks.md, "Thread shares"). The shortest period that gives two, whole ms:
  const std::uint64_t slice_us =
      host.cfs_bandwidth_slice_us ? host.cfs_bandwidth_slice_us : kDefaultCfsBandwidthSliceUs;
  // (Per-core groups draw one core's quota each: nothing to share evenly.)
  const bool shared_quota =
      !per_core && plan.cpus.size() > 1 && capacity < static_cast<double>(ncpus);
  const std::uint64_t even_period_us =
      shared_quota ? std::min<std::uint64_t>(
                         kMaxCpuPeriodUs,
                         static_cast<std::uint64_t>(std::ceil(
                             2.0 * static_cast<double>(slice_us) * static_cast<double>(ncpus) /
                             capacity / 1000.0)) * 1000)
                   : 0;

  // Bandwidth: quota = capacity x period; stretch the period when the quota would fall under
  // the kernel's minimum, and say so (a longer period makes the throttling coarser).
  plan.cpu_period_us =
      options.cpu_period_us == kChosenCpuPeriod ? kDefaultCpuPeriodUs : options.cpu_period_us;
  if (options.cpu_period_us == kChosenCpuPeriod && !options.iteration_time_us &&
      plan.cpu_period_us < even_period_us) {
    const std::uint64_t lengthened = std::min(even_period_us, kMaxEvenCpuPeriodUs);
    plan.notes.push_back(fmt::format(
        "cpu period {} us instead of the default {} us, so that each host CPU's share of the "
        "quota is {}two {:g} ms bandwidth slices and busy threads share it more evenly; give "
        "the workload's iteration time to choose the period for it (docs/period.md)",
        lengthened, kDefaultCpuPeriodUs, lengthened < even_period_us ? "closer to " : "",
        static_cast<double>(slice_us) / 1000.0));
    plan.cpu_period_us = lengthened;
  }
  if (options.iteration_time_us) {
    const double iteration_ms = static_cast<double>(options.iteration_time_us) / 1e3;
    plan.cpu_period_us = choose_cpu_period_us(options.iteration_time_us);
    if (plan.cpu_period_us < even_period_us && even_period_us <= options.iteration_time_us / 4) {
      plan.notes.push_back(fmt::format(
          "cpu period {} us, chosen for iterations of {:g} ms: a tenth would be {} us, "
          "lengthened so that each host CPU's share of the quota is two {:g} ms bandwidth "
          "slices and busy threads share it evenly (at most a quarter of the iteration)",
          even_period_us, iteration_ms, plan.cpu_period_us,
          static_cast<double>(slice_us) / 1000.0));
      plan.cpu_period_us = even_period_us;
    } else {
      plan.notes.push_back(fmt::format(
          "cpu period {} us, chosen for iterations of {:g} ms (a tenth, within 5 to 100 ms)",
          plan.cpu_period_us, iteration_ms));
    }
  }
  if (capacity * static_cast<double>(kMaxCpuPeriodUs) < static_cast<double>(kMinCpuQuotaUs)) {
    throw UnsupportedError(fmt::format(
        "{} has {:.4f} host cores of capacity, below what CFS bandwidth control can express "
        "(1 ms per 1 s period = 0.001 cores)",
        who, capacity));
  }
  // Per-core with the board's scaling: a busy core's quota shrinks as more are busy; the period
  // must give the smallest (all busy) the kernel's 1 ms.
  const std::optional<CoreScaling> scaling =
      per_core && options.core_scaling && device.speed_kind == "nn" &&
              device.speed_schedule.empty()
          ? core_scaling(device)
          : std::nullopt;
  if (options.core_scaling && !(scaling && scaling->contention > 0)) {
    // Asked for and not done: said (it was silently the plain per-core or pooled plan).
    plan.notes.push_back(fmt::format(
        "core_scaling (--core-scaling) not applied: {}",
        !per_core ? "it is a way of per-core emulation (--core-emulation per-core), and this "
                    "plan is not per-core"
        : device.speed_kind != "nn" ? "it needs the device at its nn speed (--speed-kind nn)"
        : !device.speed_schedule.empty() ? "the device has a speed schedule"
        : !scaling ? "the device has no published multi-thread ncnn tables to take it from"
                   : "the board's tables show no contention (it sped up as its cores)"));
  }
  const double slowest_core =
      device.core_speed * (scaling ? scaling->efficiency(device.cores) : 1.0);
  const CpuBandwidth bandwidth =
      cpu_bandwidth(per_core ? slowest_core : capacity, plan.cpu_period_us);
  if (bandwidth.period_us != plan.cpu_period_us) {
    plan.notes.push_back(fmt::format(
        "cpu period raised from {} us to {} us so the {}quota reaches the kernel's 1 ms minimum",
        plan.cpu_period_us, bandwidth.period_us, per_core ? "per-core " : ""));
  }
  plan.cpu_period_us = bandwidth.period_us;
  plan.cpu_quota_us = bandwidth.quota_us;
  if (per_core) {
    plan.core_groups = static_cast<std::uint32_t>(device.cores);
    plan.core_quota_us = cpu_bandwidth(device.core_speed, plan.cpu_period_us).quota_us;
    plan.cpu_quota_us = plan.core_quota_us * plan.core_groups;
    if (scaling && scaling->contention > 0) {
      std::string steps;
      for (int busy = 1; busy <= device.cores; ++busy) {
        const double share = device.core_speed * scaling->efficiency(busy);
        plan.core_quota_by_busy.push_back(cpu_bandwidth(share, plan.cpu_period_us).quota_us);
        steps += fmt::format("{}{} busy: {} us", busy == 1 ? "" : ", ", busy,
                             plan.core_quota_by_busy.back());
      }
      plan.notes.push_back(fmt::format(
          "per-core scaling: the board sped up {:.2f}x from 1 thread to {} (the median over the "
          "{} graphs of its published ncnn tables), where {} host cores would speed up {}x: so "
          "each core's quota follows how many of the workload's threads are busy ({}; "
          "contention {:.3f}, re-read every 50 ms); estimated from CNN inference, for any "
          "workload; without core_scaling (--core-scaling) every core keeps {} us",
          scaling->speedup, scaling->threads, scaling->graphs, scaling->threads,
          scaling->threads, steps, scaling->contention, plan.core_quota_us));
    }
    plan.notes.push_back(fmt::format(
        "per-core: each of the device's {} cores is a cgroup of its own with {} us of CPU per "
        "{} us (speed {}), and the workload's threads are spread over them as they start and "
        "as their load shows, so that no thread runs faster than a device core{}; a thread "
        "shares its creator's core until it is placed (within about 10 ms)",
        device.cores, plan.core_quota_us, plan.cpu_period_us, describe_core_speed(device),
        static_cast<size_t>(device.cores) > ncpus
            ? fmt::format(" (on {} host CPU{}: at most {} of them run at one instant)", ncpus,
                          ncpus == 1 ? "" : "s", ncpus)
            : std::string()));
  }
  const QuotaScaleChoice choice = choose_quota_scale(
      device, host, options,
      per_core ? double(plan.core_quota_us) / double(plan.cpu_period_us)
               : double(plan.cpu_quota_us) / (double(plan.cpu_period_us) * double(ncpus)),
      per_core ? 1 : ncpus);
  if (!choice.note.empty()) plan.notes.push_back(choice.note);
  if (!choice.share_note.empty()) plan.notes.push_back(choice.share_note);
  plan.emulation_log_sd = choice.log_sd;
  if (choice.scale != 1.0) {
    // The quota bought less work here than its share of a host CPU: more of it, no more than
    // the CPUs' (each core group's: one CPU's) whole time.
    // (A scale below 1 stops at the kernel's minimum quota.)
    auto scaled = [&](std::uint64_t quota, std::uint64_t cap) {
      return std::clamp<std::uint64_t>(
          static_cast<std::uint64_t>(std::llround(static_cast<double>(quota) * choice.scale)),
          kMinCpuQuotaUs, cap);
    };
    const std::uint64_t before = per_core ? plan.core_quota_us : plan.cpu_quota_us;
    if (per_core) {
      plan.core_quota_us = scaled(plan.core_quota_us, plan.cpu_period_us);
      for (std::uint64_t& q : plan.core_quota_by_busy) q = scaled(q, plan.cpu_period_us);
      plan.cpu_quota_us = plan.core_quota_us * plan.core_groups;
    } else {
      plan.cpu_quota_us = scaled(plan.cpu_quota_us, plan.cpu_period_us * ncpus);
    }
    const std::uint64_t after = per_core ? plan.core_quota_us : plan.cpu_quota_us;
    plan.quota_scale = static_cast<double>(after) / static_cast<double>(before);
    plan.notes.push_back(fmt::format(
        "quota scale {:.3g}: the {}quota is {} us per {} us instead of the device's {} us{}, "
        "for the work a throttled slice loses on this host ({}; docs/fidelity.md)",
        choice.scale, per_core ? "per-core " : "", after, plan.cpu_period_us, before,
        // Capped where the clamp, not the rounding to whole microseconds, made it smaller.
        after < static_cast<std::uint64_t>(std::llround(static_cast<double>(before) * choice.scale))
            ? fmt::format(", capped at the CPUs' whole time (x{:.3f})", plan.quota_scale)
            : std::string(),
        choice.from));
    // What the scale could not buy back: the own share at the quota applied, over the scale
    // applied (1 where quota_scale_at() found its root; more where kMaxQuotaScale or the CPUs'
    // whole time stopped it). Beyond the measurement's own noise, every time runs that much
    // too slow: said, with what to do.
    if (choice.share) {
      const double device_share =
          per_core ? double(before) / double(plan.cpu_period_us)
                   : double(before) / (double(plan.cpu_period_us) * double(ncpus));
      const double left =
          own_share_at(*choice.share, plan.quota_scale * device_share) / plan.quota_scale;
      if (left > kQuotaScaleShortBy) {
        plan.notes.push_back(fmt::format(
            "quota scale short: this host's own share at the scaled quota ({:.3g} of a CPU) is "
            "{:.3g}, beyond the scale {:.3g} that could be applied{}, so the slice buys about "
            "1/{:.2f} of a device core's work and its times run about {:.0f}% too slow. This "
            "host loses unusually much work under a quota (a busy neighbour evicting its caches "
            "while the slice waits, docs/fidelity.md); no quota scale buys it back. Measure "
            "its own share again when it is quieter (`edgeprof calibrate-host --nn{}"
            "--remeasure`), or emulate on a quieter host",
            plan.quota_scale * device_share, left * plan.quota_scale, plan.quota_scale,
            plan.quota_scale >= kMaxQuotaScale * 0.999
                ? fmt::format(" (kMaxQuotaScale, {:g})", kMaxQuotaScale)
                : std::string(" (the CPUs' whole time)"),
            left, 100 * (left - 1),
            choice.share->runtime_id == "ncnn" ? " "
                                               : " --runtime " + choice.share->runtime_id + " "));
      }
    }
  }
  if (!choice.check_note.empty()) plan.notes.push_back(choice.check_note);
  plan.own_share_check = choice.check;
  if (!per_core &&
      detail::quota_unlimited(plan.cpu_quota_us, plan.cpu_period_us, plan.cpus.size())) {
    plan.notes.push_back(fmt::format(
        "the cpu quota ({} us per {} us) is all of the {} host CPU{} of the cpuset, so where "
        "the cpuset is applied the kernel gets no quota: at exactly that quota it would still "
        "throttle a busy workload now and then",
        plan.cpu_quota_us, plan.cpu_period_us, plan.cpus.size(),
        plan.cpus.size() == 1 ? "" : "s"));
  }

  // Too few bandwidth slices per CPU, and the period was not lengthened for it: say so.
  const double per_cpu_us =
      static_cast<double>(plan.cpu_quota_us) / static_cast<double>(plan.cpus.size());
  if (shared_quota &&
      !detail::quota_unlimited(plan.cpu_quota_us, plan.cpu_period_us, plan.cpus.size()) &&
      per_cpu_us < 2.0 * static_cast<double>(slice_us)) {
    const double even_ms = static_cast<double>(even_period_us) / 1000.0;
    plan.notes.push_back(fmt::format(
        "each host CPU draws the quota in {:g} ms bandwidth slices, and {:.2f} ms per CPU per "
        "{:g} ms period is less than two of them: busy threads may get unequal shares of the "
        "quota (2 threads on 2 x 0.5 at a 10 ms period got 0.26-0.32 and 0.67-0.74 of a host "
        "core here instead of 0.5 each). A period of {:g} ms or more shares evenly, at the cost "
        "of coarser bursts for iterations shorter than it (--cpu-period-us; docs/period.md)",
        static_cast<double>(slice_us) / 1000.0, per_cpu_us / 1000.0,
        static_cast<double>(plan.cpu_period_us) / 1000.0, even_ms));
  }

  // Memory.
  if (host.memory_bytes && device.memory_bytes > host.memory_bytes) {
    throw UnsupportedError(fmt::format(
        "{} has {} of memory but this host has only {}: the limit could never be reached, so "
        "out-of-memory behaviour would not be emulated",
        who, format_size(device.memory_bytes), format_size(host.memory_bytes)));
  }
  plan.memory_max_bytes = device.memory_bytes;
  plan.swap_max_bytes = device.swap_bytes;
  if (device.swap_bytes > 0 && host.swap_bytes < device.swap_bytes) {
    plan.unapplied.push_back(fmt::format(
        "swap: the device has {} of swap but the host has {}; swap beyond the host's cannot be "
        "used, so a workload that would page on the device may be OOM-killed here instead",
        format_size(device.swap_bytes), format_size(host.swap_bytes)));
  }
  plan.pids_max = device.pids_max;

  // Storage: the disk of the current directory, where the workload's files most likely are.
  if (device.io_read_bps || device.io_write_bps) {
    if (host.io_device.empty()) {
      plan.unapplied.push_back(fmt::format("storage bandwidth: not emulated, {}",
                                           host.io_device_problem.empty()
                                               ? std::string("no block device found")
                                               : host.io_device_problem));
    } else {
      plan.io_device = host.io_device;
      plan.io_read_bps = device.io_read_bps;
      plan.io_write_bps = device.io_write_bps;
      plan.notes.push_back(fmt::format(
          "storage bandwidth is limited on disk {} (the current directory's) for reads and "
          "writes that reach the disk; the page cache is not limited (docs/storage.md)",
          plan.io_device));
    }
  }

  // Keep-warm, where the quota throttles (src/run/keep_warm.hpp says why), and the slice waits long
  // enough in each period for it to pay.
  const double share = double(plan.cpu_quota_us) /
                       (double(plan.cpu_period_us) * double(std::max<std::size_t>(plan.cpus.size(), 1)));
  const bool throttles =
      per_core ||
      !detail::quota_unlimited(plan.cpu_quota_us, plan.cpu_period_us, plan.cpus.size()) ||
      !device.speed_schedule.empty();
  // The workload's threads: the device's width, and passive waiting where a quota binds.
  if (options.thread_env) {
    plan.thread_env = thread_env_defaults(device.cores, throttles);
    if (options.steady_malloc) {
      for (const EnvDefault& v : kSteadyMallocVariables) plan.thread_env[v.name] = v.value;
    }
    std::string names;
    for (const auto& [name, value] : plan.thread_env) {
      names += fmt::format("{}{}={}", names.empty() ? "" : " ", name, value);
    }
    plan.notes.push_back(fmt::format(
        "the workload's environment gets {} where it does not set them itself: the device's "
        "{} core{} as the thread count of OpenMP, BLAS and TensorFlow{}{}; thread_env off "
        "(--no-thread-env) leaves it alone (docs/threads.md)",
        names, device.cores, device.cores == 1 ? "" : "s",
        throttles ? ", and OpenMP threads that sleep rather than spin while they wait, which "
                    "would spend the quota" : "",
        options.steady_malloc ? "; glibc's malloc thresholds settled from the start, as the "
                                "nn ratings' runners have them (steady_malloc; "
                                "EDGEPROF_STEADY_MALLOC=0 leaves glibc's own)"
                              : ""));
  }
  plan.keep_warm = options.keep_warm && throttles &&
                   (share <= kKeepWarmMaxShare || !device.speed_schedule.empty());
  if (options.keep_warm && throttles && !plan.keep_warm) {
    plan.notes.push_back(fmt::format(
        "keep-warm is off: each CPU gets {:.2f} of every period and waits only the rest; "
        "above {:.2f}, idle-priority threads keeping the CPUs busy delayed the workload's "
        "return more often than they saved (docs/keep-warm.md)",
        share, kKeepWarmMaxShare));
  }
  if (plan.keep_warm) {
    plan.notes.push_back(fmt::format(
        "host CPU{} {} {} kept busy while the workload runs by idle-priority threads of this "
        "process, outside the slice, so that a throttled CPU does not halt and resume cold and "
        "the quota buys the work it should (docs/keep-warm.md); their CPU time is reported "
        "apart from the workload's (keep_warm_cpu_s); keep_warm off (--no-keep-warm) stops "
        "them",
        plan.cpus.size() == 1 ? "" : "s", format_cpu_list(plan.cpus),
        plan.cpus.size() == 1 ? "is" : "are"));
  }
  // Each step of the schedule as the scheduler will write it (each core group's bandwidth): one
  // below the kernel's least (1 ms per 1 s) ran at that least, several times the speed asked,
  // and said nothing.
  const double per_group = plan.quota_group_cores();
  for (const SpeedStep& step : device.speed_schedule) {
    if (per_group * step.factor * static_cast<double>(kMaxCpuPeriodUs) <
        static_cast<double>(kMinCpuQuotaUs)) {
      throw UnsupportedError(fmt::format(
          "{}'s speed_schedule step at {:g} s (x{:g}) leaves {:.4g} host cores{}, below what "
          "CFS bandwidth control can express (1 ms per 1 s period = 0.001 cores): give it a "
          "larger factor, or the device more core speed",
          who, step.after_s, step.factor, per_group * step.factor,
          plan.core_groups ? " per core" : ""));
    }
  }
  return plan;
}

}  // namespace edgeprof
