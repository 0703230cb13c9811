// The emulation's own share under CPU quotas on this host: ncnn's reference graphs run
// alternately unthrottled and in a one-core slice at a few speeds, on one CPU; emulated time x
// speed / unthrottled time, the quota scale that gives a throttled slice its core's work.
// Cached beside the nn rating; plan.cpp applies it to nn speeds (PlanOptions::quota_scale).

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "sys/child.hpp"
#include "suite/microbench_detail.hpp"
#include "nn/recent.hpp"
#include "nn/runner_dir.hpp"
#include "nn/runtime_table.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

namespace {

using nlohmann::json;

constexpr int kCacheSchema = 1;

std::string cache_path(const std::string& dir, const detail::RuntimeSpec& spec) {
  return dir.empty() ? std::string() : dir + "/" + std::string(spec.rating->share_cache_name);
}

const detail::RuntimeSpec& rated_runtime(std::string_view id) {
  return detail::rated_runtime(id, "own share under a quota");
}

json share_json(const QuotaShare& q) {
  json points = json::array();
  for (const QuotaSharePoint& p : q.points) {
    points.push_back({{"speed", p.speed},
                      {"share", p.share},
                      {"measured", p.measured},
                      {"p10", p.p10},
                      {"p90", p.p90},
                      {"p25", p.p25},
                      {"p75", p.p75},
                      {"samples", p.samples},
                      {"by_graph", p.by_graph}});
  }
  return {{"edgeprof_host_quota_share", kCacheSchema},
          {"points", points},
          {"period_us", q.period_us},
          {"keep_warm", q.keep_warm},
          {"graphs", q.graphs},
          {"rounds", q.rounds},
          {"loops", q.loops},
          {"cpu", q.cpu},
          {"runtime", q.runtime},
          {"runtime_id", q.runtime_id},
          {"cpu_model", q.cpu_model},
          {"kernel", q.kernel},
          {"hostname", q.hostname},
          {"measured_at", q.measured_at},
          {"seconds", q.seconds}};
}

QuotaShare share_from_json(const json& j) {
  if (j.at("edgeprof_host_quota_share").get<int>() != kCacheSchema) {
    throw std::runtime_error("another schema version");
  }
  QuotaShare q;
  double last = 0;
  for (const json& p : j.at("points")) {
    QuotaSharePoint point;
    point.speed = p.at("speed").get<double>();
    point.share = p.at("share").get<double>();
    point.measured = p.at("measured").get<double>();
    point.p10 = p.at("p10").get<double>();
    point.p90 = p.at("p90").get<double>();
    point.p25 = p.value("p25", 0.0);  // shares cached before quartiles: none
    point.p75 = p.value("p75", 0.0);
    point.samples = p.at("samples").get<int>();
    if (const auto g = p.find("by_graph"); g != p.end()) {  // none in shares cached before it
      point.by_graph = g->get<std::map<std::string, double>>();
    }
    if (!(point.speed > last && point.speed < 1) || !(point.share > 0) ||
        !std::isfinite(point.share)) {
      throw std::runtime_error(fmt::format("point at speed {} with share {}: speeds must rise "
                                           "within (0, 1) and shares be positive",
                                           point.speed, point.share));
    }
    last = point.speed;
    q.points.push_back(point);
  }
  if (q.points.empty()) throw std::runtime_error("no points");
  q.period_us = j.at("period_us").get<std::uint64_t>();
  q.keep_warm = j.at("keep_warm").get<bool>();
  q.graphs = j.at("graphs").get<std::vector<std::string>>();
  q.rounds = j.at("rounds").get<int>();
  q.loops = j.at("loops").get<int>();
  q.cpu = j.at("cpu").get<int>();
  q.runtime = j.at("runtime").get<std::string>();
  q.runtime_id = j.value("runtime_id", std::string("ncnn"));  // ncnn's, cached before others
  q.cpu_model = j.at("cpu_model").get<std::string>();
  q.kernel = j.at("kernel").get<std::string>();
  q.hostname = j.at("hostname").get<std::string>();
  q.measured_at = j.at("measured_at").get<std::string>();
  q.seconds = j.at("seconds").get<double>();
  return q;
}

std::optional<QuotaShare> read_cached(const std::string& path, std::string_view runtime,
                                      std::string* why) {
  auto say = [why](std::string text) {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  const auto text = detail::read_host_cache(path, "own share under a quota", why);
  if (!text) return std::nullopt;
  QuotaShare q;
  try {
    q = share_from_json(json::parse(*text));
  } catch (const std::exception& e) {
    return say(fmt::format("{} is corrupt ({}): measure it again", path, e.what()));
  }
  if (q.runtime_id != runtime) {
    return say(fmt::format("{} holds the own share of {}, not of {}: measure it again", path,
                           q.runtime_id, runtime));
  }
  const std::string change = detail::identity_change({q.cpu_model, q.kernel, q.hostname},
                                                     detail::host_identity());
  if (!change.empty()) return say(fmt::format("{} was measured on {}: measure it again", path, change));
  q.cache_file = path;
  return q;
}

// "" when `q` was measured as fully as a default measure is (QuotaShareOptions{}): the
// runtime's share models, every default speed, as many rounds and inferences; else what it
// left out, for a note.
std::string short_of_default(const QuotaShare& q, const detail::RuntimeSpec& spec) {
  std::vector<std::string> missing;
  for (const std::string_view g : spec.rating->share_models) {
    if (std::find(q.graphs.begin(), q.graphs.end(), g) == q.graphs.end()) missing.emplace_back(g);
  }
  std::vector<double> speeds;
  for (const double s : QuotaShareOptions{}.speeds) {
    if (std::none_of(q.points.begin(), q.points.end(),
                     [s](const QuotaSharePoint& p) { return std::abs(p.speed - s) < 1e-9; })) {
      speeds.push_back(s);
    }
  }
  std::string out;
  if (!missing.empty()) out = fmt::format("without {}", fmt::join(missing, ", "));
  if (!speeds.empty()) {
    out += fmt::format("{}not at speed {:g}", out.empty() ? "" : ", ", fmt::join(speeds, ", "));
  }
  const QuotaShareOptions defaults;
  if (q.rounds < defaults.rounds || q.loops < defaults.loops) {
    out += fmt::format("{}with {} round{} of {} inferences (the default: {} of {})",
                       out.empty() ? "" : ", ", q.rounds, q.rounds == 1 ? "" : "s", q.loops,
                       defaults.rounds, defaults.loops);
  }
  return out;
}

// A one-core device at `speed` of a host CPU; memory as much as the host has (the runs are
// about CPU, and a small host, such as a 1 GiB VM, has less than a fixed figure).
Device one_core(const char* name, double speed) {
  Device d = make_device(name, 1, speed, "1GiB");
  if (const std::uint64_t memory = host_facts().memory_bytes) d.memory_bytes = memory;
  return d;
}

// The graphs' times from one run of the runner under `device` on `cpu` (host_ms, and cpu_ms
// where the runner reports it).
NnRating run_graphs(const detail::RuntimeSpec& spec, const detail::NnRunnerDir& dir,
                    const std::string& python, const Device& device, const QuotaShareOptions& o,
                    int cpu, std::string* runtime, bool* keep_warm, bool exporting = false) {
  Command c;
  c.argv = {python, dir.runner(), dir.path(), exporting ? "0" : std::to_string(o.warmup),
            exporting ? "0" : std::to_string(o.loops), "--threads=1"};
  for (const std::string_view a : spec.rating->share_args) c.argv.emplace_back(a);
  if (exporting) c.argv.emplace_back("--export");
  c.argv.insert(c.argv.end(), o.graphs.begin(), o.graphs.end());
  c.stdout_stream = Stdio::file(dir.output());
  RunOptions r;
  r.spawn.sample_interval = std::chrono::nanoseconds(0);
  r.slice.plan.cpus = {cpu};
  r.slice.plan.quota_scale = 1.0;
  r.slice.plan.speed_kind = SpeedKind::integer;
  r.timeout = std::chrono::duration<double>(o.timeout);
  const Result result = run(c, device, r);
  std::ifstream in(dir.output());
  std::stringstream text;
  text << in.rdbuf();
  if (!result.ok()) {
    // Every runner exits 3 for a missing runtime (saying so on its stderr, which the caller's
    // terminal gets; its stdout is here).
    const bool missing = result.exit_code == 3 ||
                         text.str().find(" is not installed") != std::string::npos;
    throw Error(fmt::format(
        "{}: the {} runner failed {} a slice of speed {:g} (exit {}); its output ended "
        "with:\n{}",
        missing ? fmt::format("{} is missing ({})", spec.name, spec.rating->install) : python,
        spec.name, exporting ? "exporting its models in" : "in", device.core_speed,
        result.exit_code.value_or(-1), detail::tail(text.str(), 10)));
  }
  if (exporting) return {};
  NnRating parsed = parse_nn_output(text.str(),
                                    fmt::format("{} runner at speed {:g}", spec.name,
                                                device.core_speed),
                                    std::string(spec.id));
  if (runtime && !parsed.runtime.empty()) *runtime = parsed.runtime;
  // Keep-warm as plans have it: asked of the slices at or under kKeepWarmMaxShare of a CPU;
  // above it a plan turns it off, the measurement's as a device's.
  if (keep_warm && device.core_speed <= kKeepWarmMaxShare) {
    *keep_warm = *keep_warm && result.plan.keep_warm;
  }
  return parsed;
}

// Each point's share: the measured medians, pooled where a faster speed's exceeds a slower's
// (pool-adjacent-violators, weighted by samples), so that the shares never rise with speed.
void non_increasing(std::vector<QuotaSharePoint>& points) {
  struct Block {
    double value, weight;
    std::size_t count;
  };
  std::vector<Block> blocks;
  for (const QuotaSharePoint& p : points) {
    blocks.push_back({p.measured, double(std::max(p.samples, 1)), 1});
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].value < blocks.back().value) {
      Block b = blocks.back();
      blocks.pop_back();
      Block& a = blocks.back();
      a.value = (a.value * a.weight + b.value * b.weight) / (a.weight + b.weight);
      a.weight += b.weight;
      a.count += b.count;
    }
  }
  std::size_t i = 0;
  for (const Block& b : blocks) {
    for (std::size_t k = 0; k < b.count; ++k) points[i++].share = b.value;
  }
}

void check_speed(const char* who, double speed) {
  if (!(speed > 0) || !std::isfinite(speed)) {
    throw Error(fmt::format("{}: speed {} is not a positive number of a host CPU", who, speed));
  }
}

// The value at x of the curve through `points` (x ascending): linear between them, the first's
// before them, `after` beyond the last.
double interpolate(const std::vector<std::pair<double, double>>& points, double x, double after) {
  if (x <= points.front().first) return points.front().second;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (x <= points[i].first) {
      const auto& [x0, y0] = points[i - 1];
      const auto& [x1, y1] = points[i];
      return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
  }
  return after;
}

}  // namespace

double own_share_at(const QuotaShare& q, double speed) {
  check_speed("own_share_at", speed);
  if (q.points.empty() || speed >= 1) return 1.0;
  // (log speed, share), with a whole CPU at share 1 after the points.
  std::vector<std::pair<double, double>> curve;
  for (const QuotaSharePoint& p : q.points) curve.emplace_back(std::log(p.speed), p.share);
  curve.emplace_back(0.0, 1.0);
  return interpolate(curve, std::log(speed), 1.0);
}

double quota_scale_at(const QuotaShare& q, double speed) {
  check_speed("quota_scale_at", speed);
  if (q.points.empty() || speed >= 1) return 1.0;  // a whole CPU is not throttled
  // f(k) = k - share(k x speed): negative at the smallest scale when the share there is above
  // it, positive at the largest when below; bisection finds where the scaled quota's own share
  // is the scale (shares are non-increasing in speed as measured, so f rises and the root is
  // one).
  auto f = [&](double k) { return k - own_share_at(q, k * speed); };
  double lo = kMinQuotaScale, hi = kMaxQuotaScale;
  if (f(lo) >= 0) return lo;
  if (f(hi) <= 0) return hi;
  for (int i = 0; i < 60 && hi - lo > 1e-9; ++i) {
    const double mid = (lo + hi) / 2;
    (f(mid) < 0 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double own_share_log_sd(const QuotaShare& q, double speed) {
  check_speed("own_share_log_sd", speed);
  // The 25th and 75th percentiles of a normal distribution are 0.6745 sd either side of its
  // median, the 10th and 90th 1.2816.
  constexpr double kP25ToP75Sds = 2 * 0.6744898;
  constexpr double kP10ToP90Sds = 2 * 1.2815516;
  std::vector<std::pair<double, double>> curve;  // (log speed, log sd)
  for (const QuotaSharePoint& p : q.points) {
    if (p.p25 > 0 && p.p75 >= p.p25 && std::isfinite(p.p75)) {
      curve.emplace_back(std::log(p.speed), std::log(p.p75 / p.p25) / kP25ToP75Sds);
    } else if (p.p10 > 0 && p.p90 >= p.p10 && std::isfinite(p.p90)) {
      curve.emplace_back(std::log(p.speed), std::log(p.p90 / p.p10) / kP10ToP90Sds);
    }
  }
  if (curve.empty()) return 0.0;
  return interpolate(curve, std::log(speed), curve.back().second);
}

std::optional<QuotaShare> cached_quota_share(std::string* why, std::string_view runtime) {
  const detail::RuntimeSpec& spec = rated_runtime(runtime);
  const std::string id(spec.id);
  const std::string path = cache_path(detail::host_cache_dir(), spec);
  // Read again only when the file changed: a plan asks for every slice.
  struct Memo {
    std::string path;
    struct stat st {};
    std::optional<QuotaShare> share;
    std::string why;
  };
  static std::mutex mutex;
  static std::map<std::string, Memo> memos;  // by runtime
  struct stat st {};
  const bool exists = !path.empty() && ::stat(path.c_str(), &st) == 0;
  std::lock_guard<std::mutex> lock(mutex);
  Memo& m = memos[id];
  const bool same = exists && path == m.path && st.st_ino == m.st.st_ino &&
                    st.st_size == m.st.st_size && st.st_mtim.tv_sec == m.st.st_mtim.tv_sec &&
                    st.st_mtim.tv_nsec == m.st.st_mtim.tv_nsec;
  if (!same) {
    m.why.clear();
    m.share = read_cached(path, id, &m.why);
    m.path = exists ? path : std::string();
    m.st = st;
  }
  if (!m.share && why) *why = m.why;
  return m.share;
}

QuotaShare measure_quota_share(const QuotaShareOptions& options) {
  QuotaShareOptions o = options;
  const detail::RuntimeSpec& spec = rated_runtime(o.runtime);
  if (o.graphs.empty()) {
    for (const std::string_view g : spec.rating->share_models) o.graphs.emplace_back(g);
  }
  if (o.speeds.empty()) throw Error("measure_quota_share: give at least one speed");
  for (double s : o.speeds) {
    if (!(s > 0 && s < 1)) {
      throw Error(fmt::format("measure_quota_share: speed {} is outside (0, 1): a quota of a "
                              "whole CPU or more is not throttled",
                              s));
    }
  }
  if (o.rounds < 1 || o.warmup < 0 || o.loops < 1) {
    throw Error(fmt::format("measure_quota_share: rounds {}, warmup {}, loops {}: give rounds "
                            ">= 1, warmup >= 0, loops >= 1",
                            o.rounds, o.warmup, o.loops));
  }
  std::vector<double> speeds = o.speeds;
  std::sort(speeds.begin(), speeds.end());
  speeds.erase(std::unique(speeds.begin(), speeds.end()), speeds.end());
  const auto started = std::chrono::steady_clock::now();
  const std::string python = detail::nn_python(o.python, spec.id);
  const detail::NnRunnerDir dir(spec.id, o.graphs);  // throws Error naming an unknown graph
  int cpu = o.cpu;
  if (cpu < 0) cpu = ::sched_getcpu();
  if (cpu < 0) cpu = host_facts().cpus.empty() ? 0 : host_facts().cpus.front();

  QuotaShare q;
  q.runtime_id = spec.id;
  q.graphs = o.graphs;
  q.rounds = o.rounds;
  q.loops = o.loops;
  q.cpu = cpu;
  // The period every slice asks for (edgeprof's default; below 1 ms of quota per period a
  // slice stretches it, as plans do alike).
  q.period_us = kDefaultCpuPeriodUs;
  const Device unthrottled = one_core("edgeprof-unthrottled", 1.0);
  std::map<double, std::vector<double>> shares;
  std::map<double, std::map<std::string, std::vector<double>>> by_graph;  // speed, graph
  const int total = o.rounds * int(speeds.size());
  int done = 0;
  auto say = [&](const std::string& text) {
    if (o.progress) o.progress(text);
  };
  const bool graphs = spec.rating->reads_graphs;
  say(fmt::format("measuring this host's own share under a CPU quota with {}: {} {}{} on CPU {}, "
                  "one thread, in a one-core slice at speed{} {} x {} round{}, each between "
                  "unthrottled runs{}",
                  spec.name, o.graphs.size(), graphs ? "graph" : "model",
                  o.graphs.size() == 1 ? "" : "s", cpu, speeds.size() == 1 ? "" : "s",
                  fmt::join(speeds, ", "), o.rounds, o.rounds == 1 ? "" : "s",
                  spec.id == "ncnn" ? ""
                                    : fmt::format(" ({} on a 2-vCPU host: every run starts {} "
                                                  "in its slice)",
                                                  detail::share_duration(spec.id), spec.name)));
  if (spec.rating->share_exports) {
    // Exported (or quantized) once, unthrottled, into the runner's folder: the throttled runs
    // read the files.
    say(fmt::format("  exporting {} model{} unthrottled", o.graphs.size(),
                    o.graphs.size() == 1 ? "" : "s"));
    run_graphs(spec, dir, python, unthrottled, o, cpu, nullptr, nullptr, true);
  }
  // The unthrottled runs' wall time / CPU time per inference: about 1 when they had the CPU
  // to themselves. A process sharing it (or a hypervisor's steal) lengthens them, not the
  // throttled runs, and every share would read too low.
  std::vector<double> waiting;
  auto unthrottled_ms = [&](std::string* runtime) {
    NnRating r = run_graphs(spec, dir, python, unthrottled, o, cpu, runtime, nullptr);
    const std::vector<double> w = detail::wall_over_cpu(r);
    waiting.insert(waiting.end(), w.begin(), w.end());
    return r.host_ms;
  };
  auto check_waiting = [&] {
    if (waiting.empty() || detail::median_of(waiting) <= kProbeWaitingShared) return;
    throw Error(fmt::format(
        "measure_quota_share: CPU {} was shared while this host's own share was measured: the "
        "unthrottled runs' inferences took {:.2f}x their CPU time (median), so another busy "
        "process or a hypervisor's steal had part of the CPU, and every share would read too "
        "low; not cached: measure it again when CPU {} is idle (or on another: "
        "QuotaShareOptions::cpu)",
        cpu, detail::median_of(waiting), cpu));
  };
  std::map<std::string, double> before = unthrottled_ms(&q.runtime);
  check_waiting();  // at once, rather than after a minute of rounds
  for (int round = 0; round < o.rounds; ++round) {
    for (double s : speeds) {
      const Device slow = one_core("edgeprof-quota-share", s);
      const auto emulated =
          run_graphs(spec, dir, python, slow, o, cpu, nullptr, &q.keep_warm).host_ms;
      const auto after = unthrottled_ms(nullptr);
      std::vector<double> now;
      for (const auto& [g, ms] : emulated) {
        if (!before.count(g) || !after.count(g) ||
            std::find(o.graphs.begin(), o.graphs.end(), g) == o.graphs.end()) {
          continue;
        }
        const double reference = (before.at(g) + after.at(g)) / 2;
        now.push_back(ms * s / reference);
        shares[s].push_back(now.back());
        by_graph[s][g].push_back(now.back());
      }
      before = after;
      say(fmt::format("  [{}/{}] speed {:g}: own share {:.2f} (median of {} {}{})", ++done,
                      total, s, now.empty() ? NAN : detail::median_of(now), now.size(),
                      graphs ? "graph" : "model", now.size() == 1 ? "" : "s"));
    }
  }
  check_waiting();
  // Keep-warm ran where plans have it only if a slice ran there: speeds all above
  // kKeepWarmMaxShare never asked for it, and a plan at or under it (with keep-warm) would take
  // a share measured without.
  if (std::none_of(speeds.begin(), speeds.end(),
                   [](double s) { return s <= kKeepWarmMaxShare; })) {
    q.keep_warm = false;
  }
  for (double s : speeds) {
    const std::vector<double>& v = shares[s];
    if (v.empty()) throw Error(fmt::format("measure_quota_share: no graph ran at speed {:g}", s));
    QuotaSharePoint p;
    p.speed = s;
    p.measured = detail::median_of(v);
    p.p10 = detail::percentile(v, 0.1);
    p.p90 = detail::percentile(v, 0.9);
    p.p25 = detail::percentile(v, 0.25);
    p.p75 = detail::percentile(v, 0.75);
    p.samples = int(v.size());
    for (const auto& [g, own] : by_graph[s]) p.by_graph[g] = detail::median_of(own);
    q.points.push_back(p);
  }
  non_increasing(q.points);
  const detail::HostIdentity id = detail::host_identity();
  q.cpu_model = id.cpu_model;
  q.kernel = id.kernel;
  q.hostname = id.hostname;
  q.measured_at = detail::utc_now();
  q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string cache_dir = detail::host_cache_dir();
  if (cache_dir.empty()) {
    q.note = fmt::format("{}: not cached, so other processes measure it again; set "
                         "EDGEPROF_CACHE_DIR",
                         detail::kNoCacheDir);
  } else {
    const std::string path = cache_path(cache_dir, spec);
    // A measure short of the default replaces only a cache that is short too: a quick check
    // (one graph, one speed) left every later plan a poorer share.
    const std::string shorter = short_of_default(q, spec);
    std::optional<QuotaShare> kept;
    if (!shorter.empty()) kept = read_cached(path, spec.id, nullptr);
    if (kept && short_of_default(*kept, spec).empty()) {
      q.note = fmt::format("measured {}: not cached, as {} holds a measure of the default "
                           "graphs at every default speed (of {}), which it does not replace",
                           shorter, path, kept->measured_at);
    } else if (const std::string failed =
                   detail::replace_file(cache_dir, path, share_json(q).dump(2) + "\n");
               failed.empty()) {
      q.cache_file = path;
    } else {
      q.note = failed + ", so other processes measure it again";
    }
  }
  say(describe(q));
  return q;
}

HostFacts with_measured_quota_share(HostFacts host, const Device& device,
                                    const PlanOptions& options) {
  if (options.quota_scale || !options.measure_nn) return host;
  // Only where the plan could use it (choose_quota_scale in plan.cpp): an nn speed, the default
  // period, keep-warm, one CPU or a core group per device core.
  const std::size_t cpus = options.cpus.empty() ? host.cpus.size() : options.cpus.size();
  if (options.cpu_period_us != kChosenCpuPeriod || options.iteration_time_us ||
      !options.keep_warm) {
    return host;
  }
  const Device at = for_speed_kind(device, options.speed_kind);
  if (at.speed_kind != "nn") return host;
  // At another runtime's speed (for_runtime()) the plan takes that runtime's share where
  // cached, else ncnn's, which is what is measured here: another runtime's takes minutes
  // (RuntimeRatingSpec::share_seconds), too long for a run's way; the plan's note names the
  // command.
  if (at.nn && host.runtime_quota_shares.count(at.nn->basis) != 0) return host;
  if (host.quota_share) return host;
  const bool pooled = resolve_core_emulation(at, options.cores) == CoreEmulation::pooled &&
                      std::min<std::size_t>(std::size_t(std::max(device.cores, 1)), cpus) > 1;
  if (pooled) return host;
  // Tried once per process and cache directory: a failure, or a result that could not be
  // cached, is not measured again for every slice (ncnn's share_seconds each).
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::optional<QuotaShare>, std::string>> tried;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string dir = detail::host_cache_dir();
  if (const auto it = tried.find(dir); it != tried.end()) {
    host.quota_share = it->second.first;
    host.quota_share_problem = it->second.second;
    return host;
  }
  QuotaShareOptions o;
  o.python = options.nn_measure.python;
  o.progress = options.nn_measure.progress;
  if (o.progress) {
    o.progress(fmt::format("{} is emulated at its nn speed, and this host's own share under a "
                           "CPU quota is not measured yet ({}): measuring it now, once ({}; "
                           "cached; `edgeprof calibrate-host --nn` does the same)",
                           device.name, host.quota_share_problem,
                           detail::share_duration("ncnn")));
  }
  try {
    QuotaShare q = measure_quota_share(o);
    if (q.cache_file.empty() && !q.note.empty()) {
      host.quota_share_problem = fmt::format("measured for this process only: {}", q.note);
    }
    host.quota_share = std::move(q);
  } catch (const Error& e) {
    // Only edgeprof's errors: an interrupt (Ctrl-C through the progress callback in Python)
    // or anything else unwinds the caller, uncached.
    host.quota_share_problem =
        fmt::format("measuring it failed, and is not tried again in this process: {}", e.what());
  }
  tried[dir] = {host.quota_share, host.quota_share_problem};
  return host;
}

namespace {

// The quota of one device core in `plan` as a fraction of a host CPU, where the plan's quota
// scale is from the host's own share (choose_quota_scale in plan.cpp: without
// PlanOptions::quota_scale, a scale other than 1 or the share's spread is the share's; a share
// without spread whose scale the kernel's 1 ms minimum quota undid entirely, seen only with
// stand-in runners, is not checked); 0 elsewhere.
double checked_speed(const EmulationPlan& plan) {
  if (plan.quota_scale == 1.0 && !(plan.emulation_log_sd > 0)) return 0;
  if (plan.cpu_period_us == 0 || plan.cpus.empty()) return 0;
  // A core group's quota, or the one CPU's.
  const double speed = plan.core_groups > 0
                           ? double(plan.core_quota_us) / double(plan.cpu_period_us)
                           : double(plan.cpu_quota_us) /
                                 (double(plan.cpu_period_us) * double(plan.cpus.size()));
  return speed > 0 && speed < 1 ? speed : 0;
}

// One check at `speed` on `cpu`: emulated time x speed / unthrottled time, the median over
// kShareCheckGraphs (measured); reused for kDriftProbeReuse per CPU, quota, share and
// interpreter, as the drift probe. Throws Error.
QuotaShareCheck check_share_at(double speed, int cpu, const std::string& share_measured_at,
                               const PlanOptions& options) {
  QuotaShareOptions o;
  o.python = options.nn_measure.python;
  o.graphs = kShareCheckGraphs;
  o.warmup = 1;
  o.loops = 3;
  o.timeout = std::chrono::seconds(60);
  static detail::RecentReadings<std::tuple<int, long long, std::string, std::string>,
                                QuotaShareCheck>
      recent;
  const auto key = std::make_tuple(cpu, std::llround(speed * 1e4), share_measured_at,
                                   detail::nn_python_name(o.python));
  if (auto reading = recent.find(key)) return *reading;
  const auto started = std::chrono::steady_clock::now();
  const std::string python = detail::nn_python(o.python);
  const detail::NnRunnerDir dir(o.graphs);
  const detail::RuntimeSpec& spec = rated_runtime(o.runtime);  // ncnn's: its graphs
  const NnRating alone = run_graphs(spec, dir, python, one_core("edgeprof-unthrottled", 1.0), o,
                                    cpu, nullptr, nullptr);
  // Unthrottled inferences that waited for the CPU (another process on it, a hypervisor's
  // steal) would make the share read too low: not a check.
  const std::vector<double> waiting = detail::wall_over_cpu(alone);
  if (!waiting.empty() && detail::median_of(waiting) > kProbeWaitingShared) {
    throw Error(fmt::format("CPU {} was shared (the unthrottled inferences took {:.2f}x their "
                            "CPU time)",
                            cpu, detail::median_of(waiting)));
  }
  const NnRating slow = run_graphs(spec, dir, python, one_core("edgeprof-share-check", speed), o,
                                   cpu, nullptr, nullptr);
  std::vector<double> shares;
  for (const auto& [graph, ms] : slow.host_ms) {
    const auto it = alone.host_ms.find(graph);
    if (it != alone.host_ms.end() && it->second > 0 && ms > 0) {
      shares.push_back(ms * speed / it->second);
    }
  }
  if (shares.empty()) throw Error("no graph ran both unthrottled and in the slice");
  QuotaShareCheck c;
  c.speed = speed;
  c.measured = detail::median_of(shares);
  c.graphs = o.graphs;
  c.cpu = cpu;
  c.measured_at = detail::utc_now();
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  recent.put(key, c);
  return c;
}

}  // namespace

HostFacts with_checked_quota_share(HostFacts host, const Device& device,
                                   const PlanOptions& options, int cpu) {
  if (!options.drift_check || !options.share_check || options.quota_scale ||
      host.quota_share_check || !host.quota_share || host.quota_share->points.empty()) {
    return host;
  }
  const QuotaShare cached = *host.quota_share;
  double factor = 1;
  std::optional<QuotaShareCheck> check;
  for (int round = 0; round < 2; ++round) {
    double speed = 0;
    try {
      speed = checked_speed(plan_emulation(device, host, options));
    } catch (const Error&) {
      // A device this host cannot emulate: the plan made by the caller says why.
    }
    if (speed == 0) break;
    // A second check only where the first moved the quota by more than 20%.
    if (check && std::abs(speed / check->speed - 1) <= 0.2) break;
    QuotaShareCheck now;
    try {
      now = check_share_at(speed, cpu, cached.measured_at, options);
    } catch (const Error& e) {
      if (!check) {
        host.quota_share_check_problem = fmt::format("the check failed: {}", e.what());
        return host;
      }
      break;  // the first check stands
    }
    const double ratio = now.measured / own_share_at(*host.quota_share, speed);
    now.cached = own_share_at(cached, speed);
    now.checks = round + 1;
    now.applied = check ? check->applied : false;
    if (beyond_share_check_band(ratio)) {
      factor *= ratio;
      now.applied = true;
      // The host's load moved every runtime's share alike (estimated: only ncnn's is checked).
      auto follow = [ratio](QuotaShare& q) {
        for (QuotaSharePoint& p : q.points) {
          for (double* v : {&p.share, &p.measured, &p.p10, &p.p25, &p.p75, &p.p90}) *v *= ratio;
          for (auto& [graph, own] : p.by_graph) own *= ratio;
        }
      };
      follow(*host.quota_share);
      for (auto& [id, q] : host.runtime_quota_shares) follow(q);
    }
    now.factor = factor;
    check = now;
    if (!beyond_share_check_band(ratio)) break;
  }
  if (check) host.quota_share_check = std::move(check);
  return host;
}

std::string describe(const QuotaShare& q) {
  std::string points;
  for (const QuotaSharePoint& p : q.points) {
    points += fmt::format("{}{:.2f} at {:g} of a CPU", points.empty() ? "" : ", ", p.share,
                          p.speed);
  }
  const detail::RuntimeSpec* r = detail::find_runtime(q.runtime_id);
  const std::string name(r ? r->name : q.runtime_id);
  const bool graphs = r ? r->rating && r->rating->reads_graphs : q.runtime_id == "ncnn";
  // Each graph's own at the smallest quota, where they differ the most.
  std::string own;
  if (!q.points.empty() && q.points.front().by_graph.size() > 1) {
    for (const auto& [g, share] : q.points.front().by_graph) {
      own += fmt::format("{}{} {:.2f}", own.empty() ? "" : ", ", g, share);
    }
    own = fmt::format(" (at {:g}: {})", q.points.front().speed, own);
  }
  return fmt::format("own share {}{} ({:g} ms period{}; {} {} {}{} x {} round{}, CPU {}{})",
                     points.empty() ? std::string("not measured") : points, own,
                     double(q.period_us) / 1000, q.keep_warm ? ", keep-warm" : "",
                     q.graphs.size(), name, graphs ? "graph" : "model",
                     q.graphs.size() == 1 ? "" : "s", q.rounds,
                     q.rounds == 1 ? "" : "s", q.cpu,
                     q.measured_at.empty() ? "" : ", measured " + q.measured_at);
}

}  // namespace edgeprof
