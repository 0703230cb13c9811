// bench_nn: how close emulated CNN inference lands to real devices (issues 16 and 29).
//
// One run writes docs/fidelity.md's tables. It measures this host's nn rating (the reference
// graphs with ncnn, one thread), then, device by device, for every catalog device with
// published ncnn times:
//  - one thread: runs the graphs under `run()` emulating one core of the device at its nn speed
//    and compares each graph's emulated time with the published one: median and worst
//    |emulated / published - 1|, Kendall tau, and what the integer (7-Zip) speed would have
//    given. Held out (leave-one-graph-out), from the same run: each graph's emulated time
//    rescaled to the speed derived without that graph, so the graph did not shape the speed it
//    is predicted at. And the emulation's own share: the same graphs run unthrottled on the
//    same CPU just before, emulated time x speed / unthrottled time (1: the quota bought its
//    share of a host core's work), with the host's drift since its rating, as that unthrottled
//    run and as the library's half-second probe (measure_host_drift()) see it;
//  - N threads (each N > 1 of --threads): all N cores at the nn speed from the one-thread
//    times, against the published N-thread runs, where the device has them and N x its nn speed
//    fits this host's CPUs; the same figures, held out the same way, and the speed-up over one
//    thread of the board and of the emulation. Projected (the default, as in a run: auto, which
//    projects every device with such tables), one thread on one device core instead, its times
//    divided by the board's speed-up (held out: from the other graphs' tables); with 1 in
//    --threads, those one-thread times are the one-thread part's (one emulated run per device,
//    as a user's projected run is one run).
// Progress goes to stderr with each device's elapsed time; the tables (with the start, the end
// and the duration of the run) to stdout and, with --markdown FILE, to FILE.
//
// Usage: edgeprof_bench_nn [--devices A,B,...] [--graphs X,Y,...] [--threads 1,4] [--quick]
//        [--warmup N] [--loops N] [--period-us N] [--no-keep-warm] [--markdown FILE]
// --device NAME and --graph NAME are repeatable aliases of --devices and --graphs.
// --quick: one device, three small graphs, one timed loop, one thread: the ctest smoke run.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "edgeprof/edgeprof.hpp"
#include "suite/microbench_detail.hpp"

using namespace edgeprof;

namespace {

void usage(FILE* to) {
  std::fputs(
      "usage: edgeprof_bench_nn [--devices A,B,...] [--graphs X,Y,...] [--threads 1,4] [--quick]\n"
      "                         [--warmup N] [--loops N] [--period-us N] [--no-keep-warm]\n"
      "                         [--core-emulation auto|pooled|per-core|projected]\n"
      "                         [--core-scaling]\n"
      "                         [--no-thread-env] [--quota-scale X] [--drift-check]\n"
      "                         [--no-share-check] [--share-bias X]\n"
      "                         [--cached-rating] [--scaling-powers 1,0.75]\n"
      "                         [--markdown FILE]\n"
      "\n"
      "How close emulated CNN inference lands to the times ncnn published for real devices:\n"
      "the reference graphs run with ncnn under emulation of each catalog device at its nn\n"
      "speed, against the device's published times; per device the median and worst error,\n"
      "Kendall tau, and the same held out (each graph at the speed derived without it).\n"
      "Needs root and python3 with ncnn (pip install ncnn).\n"
      "\n"
      "  --devices LIST    catalog devices to emulate (default: all with published times);\n"
      "                    --device NAME adds one\n"
      "  --graphs LIST     reference graphs to run (default: all); --graph NAME adds one\n"
      "  --threads LIST    thread counts (default 1,4): 1 is the one-thread table, each N > 1\n"
      "                    a table of the devices with published N-thread runs that fit here\n"
      "  --warmup N        untimed inferences per graph under emulation (default 4, as the\n"
      "                    host's rating)\n"
      "  --loops N         timed inferences per graph under emulation; their median counts\n"
      "                    (default 5)\n"
      "  --period-us N     the CFS period, 1000 to 1000000 us (default 0: edgeprof's choice)\n"
      "  --no-keep-warm    emulate with keep-warm off\n"
      "  --core-emulation M  auto (the default, as a run's: projected for a device with\n"
      "                    multi-thread tables, pooled elsewhere), pooled (one quota for all\n"
      "                    cores), per-core (a quota per device core, threads spread over them)\n"
      "                    or projected (one thread on one core, its time / the board's\n"
      "                    speed-up; docs/threads.md). Projected with 1 in --threads: the\n"
      "                    one-thread part's emulated times are the ones projected\n"
      "  --core-scaling    with per-core: each core's quota follows the busy threads as the\n"
      "                    board's published tables scale (PlanOptions::core_scaling)\n"
      "  --quota-scale X   the CPU quota times X, 0.5 to 4, or auto (the default: this host's\n"
      "                    own share, measured at the start with measure_quota_share(), as\n"
      "                    plans apply it to nn speeds; PlanOptions::quota_scale)\n"
      "  --drift-check     correct each device's nn speed by the host's drift since the\n"
      "                    rating, probed just before its run (PlanOptions::drift_check),\n"
      "                    and follow the host's own share checked at the plan's quota\n"
      "  --no-share-check  with --drift-check: the drift alone (PlanOptions::share_check)\n"
      "  --share-bias X    after measuring this host's own share, cache it multiplied by X\n"
      "                    (0.25 to 4): a cache made stale on purpose, for what\n"
      "                    --drift-check's check of the share does about one\n"
      "  --cached-rating   use this host's cached nn rating, as a run does, however old\n"
      "                    (measured first when none is cached): the drift since it was\n"
      "                    measured then shows, and --drift-check has something to correct\n"
      "  --scaling-powers LIST  projected rows: the workload's own scaling (workload_scaling(),\n"
      "                    from this host's 1- and 2-thread times) also to each of these\n"
      "                    powers, 0 to 1, a set of columns each (default 1, the factor as\n"
      "                    PlanOptions::workload_scaling applies it)\n"
      "  --no-thread-env   leave the runner's environment alone (by default it gets the\n"
      "                    device's OMP_NUM_THREADS and passive OpenMP waiting)\n"
      "  --no-held-out     does nothing: the held-out figures now come from the one run\n"
      "  --quick           one device, three small graphs, one timed loop, one thread (unless\n"
      "                    --devices, --graphs or --threads say otherwise): the ctest smoke run\n"
      "  --markdown FILE   also write the tables as Markdown to FILE\n"
      "\n"
      "Exit status: 0 done, 1 error, 2 usage, 77 cannot run here (not root, no ncnn).\n",
      to);
}

const bench::Cli kCli{"edgeprof_bench_nn", usage};

struct Args {
  bool quick = false;
  // Under emulation as the host rating (NnOptions): four untimed inferences first. With one,
  // the next few ran slower (ncnn's first inferences, not the emulation): a Pi 4's median error
  // was 36% with warm-up 1 and 3 timed runs, 15% with warm-up 4 and 8 (2026-11-26).
  int warmup = 4;
  int loops = 5;
  std::vector<std::string> devices;  // empty: every device with published times
  std::vector<std::string> graphs;   // empty: every reference graph
  std::vector<int> threads{1, 4};    // ascending, no repeats
  bool threads_given = false;
  std::uint64_t period_us = 0;  // the CFS period (0: edgeprof's choice)
  bool keep_warm = true;
  // As a run's default: projected where a device has multi-thread tables, pooled elsewhere.
  CoreEmulation cores = CoreEmulation::automatic;
  bool thread_env = true;
  bool core_scaling = false;
  std::optional<double> quota_scale;  // empty: auto
  bool drift_check = false;           // PlanOptions::drift_check
  bool share_check = true;            // PlanOptions::share_check
  double share_bias = 1.0;            // the cached own share x this, on purpose
  // This host's rating from the cache (as a user's run reads it, however old) rather than
  // measured at the start: the host's drift since then is what --drift-check corrects.
  bool cached_rating = false;
  std::vector<double> scaling_powers{1.0};  // the workload's own scaling, to these powers
  std::string markdown;
  std::string command_line;
};

int whole_number(const std::string& flag, const char* value, int lo, int hi) {
  const double x = kCli.number(flag, value, lo, hi);
  if (x != std::floor(x)) kCli.fail(fmt::format("{} wants a whole number, not '{}'", flag, value));
  return static_cast<int>(x);
}

// The items of a comma list; fails on a missing value or an empty item ("a,,b").
std::vector<std::string> list(const std::string& flag, const char* value) {
  if (!value) kCli.fail(fmt::format("{} wants a comma-separated list", flag));
  std::vector<std::string> items = bench::split(value, ',');
  for (const std::string& item : items) {
    if (item.empty()) kCli.fail(fmt::format("{}: empty item in '{}'", flag, value));
  }
  return items;
}

// Devices the benchmark can compare: published one-thread times that the catalog marks measured.
bool has_published_times(const Device& d) {
  return !d.nn_ms.empty() && d.sources.count("nn") && d.sources.at("nn").status == "measured";
}

// Fails (exit 2) naming the flag and the name when a device or graph is not one there is.
void check_names(const Args& a) {
  std::vector<std::string> known;
  for (const Device& d : catalog_devices()) {
    if (has_published_times(d)) known.push_back(d.name);
  }
  for (const std::string& name : a.devices) {
    const bool found =
        std::any_of(catalog_devices().begin(), catalog_devices().end(),
                    [&](const Device& d) { return has_published_times(d) && d.answers_to(name); });
    if (!found) {
      kCli.fail(fmt::format("--devices: '{}' is not a catalog device with published times ({})",
                            name, fmt::join(known, ", ")));
    }
  }
  std::vector<std::string> graphs;
  for (const ReferenceGraph& g : reference_graphs()) graphs.push_back(g.name);
  for (const std::string& name : a.graphs) {
    if (std::find(graphs.begin(), graphs.end(), name) == graphs.end()) {
      kCli.fail(fmt::format("--graphs: '{}' is not a reference graph ({})", name,
                            fmt::join(graphs, ", ")));
    }
  }
}

Args parse_args(int argc, char** argv) {
  Args a;
  a.command_line = bench::command_line(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (s == "--quick") {
      a.quick = true;
    } else if (s == "--warmup") {
      a.warmup = whole_number(s, value(), 0, 1000);
    } else if (s == "--loops") {
      a.loops = whole_number(s, value(), 1, 1000);
    } else if (s == "--devices" || s == "--graphs") {
      std::vector<std::string>& to = s == "--devices" ? a.devices : a.graphs;
      for (std::string& item : list(s, value())) to.push_back(std::move(item));
    } else if (s == "--device" || s == "--graph") {
      const char* v = value();
      if (!v) kCli.fail(fmt::format("{} wants a name", s));
      (s == "--device" ? a.devices : a.graphs).push_back(v);
    } else if (s == "--threads") {
      a.threads.clear();
      for (const std::string& n : list(s, value())) {
        a.threads.push_back(whole_number(s, n.c_str(), 1, 64));
      }
      a.threads_given = true;
    } else if (s == "--period-us") {
      const char* v = value();
      a.period_us = static_cast<std::uint64_t>(whole_number(s, v, 0, 1000000));
      if (a.period_us != 0 && a.period_us < 1000) {
        kCli.fail(fmt::format("--period-us wants 0 or 1000 to 1000000, not '{}'", v));
      }
    } else if (s == "--no-keep-warm") {
      a.keep_warm = false;
    } else if (s == "--core-emulation") {
      const char* v = value();
      try {
        a.cores = core_emulation_from_string(v ? v : "");
      } catch (const Error& e) {
        kCli.fail(e.what());
      }
    } else if (s == "--no-thread-env") {
      a.thread_env = false;
    } else if (s == "--quota-scale") {
      const char* v = value();
      if (v && std::string_view(v) == "auto") {
        a.quota_scale.reset();
      } else {
        a.quota_scale = kCli.number(s, v, kMinQuotaScale, kMaxQuotaScale);
      }
    } else if (s == "--core-scaling") {
      a.core_scaling = true;
    } else if (s == "--drift-check") {
      a.drift_check = true;
    } else if (s == "--no-share-check") {
      a.share_check = false;
    } else if (s == "--share-bias") {
      a.share_bias = std::atof(value());
      if (!(a.share_bias >= 0.25 && a.share_bias <= 4)) {
        throw Error("--share-bias: give a factor from 0.25 to 4");
      }
    } else if (s == "--cached-rating") {
      a.cached_rating = true;
    } else if (s == "--scaling-powers") {
      a.scaling_powers.clear();
      for (const std::string& item : list(s, value())) {
        a.scaling_powers.push_back(kCli.number(s, item.c_str(), 0, 1));
      }
    } else if (s == "--no-held-out") {
      fmt::print(stderr,
                 "bench_nn: --no-held-out does nothing now: the held-out figures come "
                 "from the one emulated run at no extra cost\n");
    } else {
      kCli.shared_option(s, value, a.markdown);
    }
  }
  std::sort(a.threads.begin(), a.threads.end());
  a.threads.erase(std::unique(a.threads.begin(), a.threads.end()), a.threads.end());
  if (a.quick) {
    a.warmup = 1;
    a.loops = 1;
    if (a.devices.empty()) a.devices = {"raspberry-pi-5-8gb"};
    if (a.graphs.empty()) a.graphs = {"squeezenet", "mobilenet_v2", "shufflenet_v2"};
    if (!a.threads_given) a.threads = {1};
  }
  return a;
}

// ------------------------------------------------------------------------------ figures

double median(std::vector<double> v) { return v.empty() ? NAN : bench::quantile_of(v, 0.5); }

// Kendall tau of two orderings; NaN where kendall() has none (fewer than 3 graphs, or a
// constant input), rather than one device's figure ending the run.
double tau(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 3) return NAN;
  try {
    return kendall(x, y).coefficient;
  } catch (const Error&) {
    return NAN;
  }
}

// Predicted times against published ones, over the graphs `predicted` has.
struct Fit {
  double median = NAN;  // of |predicted / published - 1|
  double worst = NAN;
  double tau = NAN;
  int graphs = 0;
};

Fit fit(const std::map<std::string, double>& predicted,
        const std::map<std::string, double>& published) {
  std::vector<double> errs, x, y;
  for (const auto& [g, ms] : predicted) {
    errs.push_back(std::abs(ms / published.at(g) - 1));
    x.push_back(ms);
    y.push_back(published.at(g));
  }
  Fit f;
  f.graphs = static_cast<int>(errs.size());
  if (errs.empty()) return f;
  f.median = median(errs);
  f.worst = *std::max_element(errs.begin(), errs.end());
  f.tau = tau(x, y);
  return f;
}

// Leave-one-graph-out from one emulated run: each graph's time emulated at `speed_all` (the
// speed derived from every graph of `one_thread_ms`, the device's published one-thread times)
// rescaled to s_-g, the speed derived without that graph: emulated ms x speed_all / s_-g. The
// rescaling takes a slice's time to go as 1 / speed: docs/benchmarks.md's keep-warm section
// (issue 26) measured a CPU-bound loop's total time within +0.1..+0.5% of it at speeds 0.25 to
// 0.75. With a dozen graphs, leaving one out moves the speed by a few percent, so what the
// rescale relies on is 1 / speed between two nearby speeds. Below 0.25 (the Pi Zero 2 W, the
// Pi 3 B+) that was not measured; a bias of the emulation that is the same at both speeds stays
// in the held-out figure as it is in the in-sample one. Empty with fewer than two
// published graphs (no speed without one of them). `intervals`, when given, receives each
// graph's 90% interval (time_interval()) from the speed without it, where it has one, with
// `projection_log_sd`'s spread for the graph where given (a projected row: the board's
// speed-up without the graph, as a run's Result::device_interval has it).
std::map<std::string, double> held_out(const std::map<std::string, double>& emulated,
                                       const std::map<std::string, double>& one_thread_ms,
                                       const NnRating& host, const std::string& precision,
                                       double speed_all,
                                       std::map<std::string, TimeInterval>* intervals = nullptr,
                                       double emulation_log_sd = 0,
                                       const std::map<std::string, double>* projection_log_sd =
                                           nullptr) {
  std::map<std::string, double> out;
  if (one_thread_ms.size() < 2) return out;
  for (const auto& [g, ms] : emulated) {
    std::map<std::string, double> others = one_thread_ms;
    others.erase(g);
    const NnSpeed without = nn_speed(others, host.host_ms, precision);
    out[g] = ms * speed_all / without.core_speed;
    if (intervals) {
      // As the run's own Result::device_interval: the plan's emulation spread included.
      double p = 0;
      if (projection_log_sd) {
        const auto it = projection_log_sd->find(g);
        if (it != projection_log_sd->end()) p = it->second;
      }
      if (const auto i = time_interval(without, 0.9, emulation_log_sd, p)) (*intervals)[g] = *i;
    }
  }
  return out;
}

// The share of graphs whose published time lies within its held-out interval around its
// held-out time; NaN when no graph has an interval.
double coverage(const std::map<std::string, double>& held,
                const std::map<std::string, TimeInterval>& intervals,
                const std::map<std::string, double>& published) {
  int inside = 0, n = 0;
  for (const auto& [g, ms] : held) {
    const auto i = intervals.find(g);
    const auto p = published.find(g);
    if (i == intervals.end() || p == published.end()) continue;
    ++n;
    if (p->second >= ms * i->second.low && p->second <= ms * i->second.high) ++inside;
  }
  return n ? double(inside) / n : NAN;
}

// ------------------------------------------------------------------------------ emulation

// The graphs' times when run with `threads` threads under `device`, ms by graph.
// `quota_scale`, when given, receives the scale the plan applied.
// `projection`, when given, receives the plan's (CoreEmulation::projected), if any.
std::map<std::string, double> emulate(const Device& device, const std::string& dir,
                                      const std::vector<std::string>& graphs, int threads,
                                      const Args& a, double* quota_scale = nullptr,
                                      std::optional<ThreadsProjection>* projection = nullptr,
                                      double* emulation_log_sd = nullptr,
                                      double* host_drift = nullptr,
                                      double* drift_probed = nullptr,
                                      std::map<std::string, double>* cpu_ms = nullptr,
                                      double* own_share_check = nullptr) {
  Command c;
  c.argv = {"python3", dir + "/runner.py", dir, std::to_string(a.warmup)};
  c.argv.push_back(std::to_string(a.loops));
  c.argv.push_back("--threads=" + std::to_string(threads));
  c.argv.insert(c.argv.end(), graphs.begin(), graphs.end());
  c.stdout_stream = Stdio::file(dir + "/out.txt");
  RunOptions o;
  o.spawn.sample_interval = std::chrono::nanoseconds(0);
  o.slice.plan.cpu_period_us = a.period_us;
  o.slice.plan.keep_warm = a.keep_warm;
  o.slice.plan.cores = a.cores;
  o.slice.plan.thread_env = a.thread_env;
  o.slice.plan.core_scaling = a.core_scaling;
  o.slice.plan.quota_scale = a.quota_scale;
  o.slice.plan.drift_check = a.drift_check;
  o.slice.plan.share_check = a.share_check;
  const Result r = run(c, device, o);
  if (host_drift) *host_drift = r.plan.host_drift;
  if (drift_probed) *drift_probed = r.plan.drift_probed;
  if (own_share_check) *own_share_check = r.plan.own_share_check;
  if (quota_scale) *quota_scale = r.plan.quota_scale;
  if (emulation_log_sd) *emulation_log_sd = r.plan.emulation_log_sd;
  if (projection) *projection = r.plan.threads_projection;
  std::ifstream in(dir + "/out.txt");
  std::stringstream text;
  text << in.rdbuf();
  if (!r.ok()) {
    throw Error(fmt::format("the runner failed under {}: exit {}; {}", device.name,
                            r.exit_code.value_or(-1), text.str()));
  }
  NnRating parsed = parse_nn_output(text.str(), "runner under " + device.name);
  if (cpu_ms) *cpu_ms = parsed.cpu_ms;
  return parsed.host_ms;
}

// The plan's own share check as "1.42 (followed)", "1.05 (kept)", or "n/a".
std::string share_check_text(double check) {
  if (!std::isfinite(check)) return "n/a";
  return fmt::format("{:.2f} ({})", check, beyond_share_check_band(check) ? "followed" : "kept");
}

bool selected(const std::vector<std::string>& only, const std::string& graph) {
  return only.empty() || std::find(only.begin(), only.end(), graph) != only.end();
}

std::vector<std::string> keys(const std::map<std::string, double>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

// One device core at its nn speed against the published one-thread times.
struct OneThreadRow {
  std::string device;
  std::string precision;
  double speed = 0;          // the nn speed emulated
  double integer_speed = 0;  // the 7-Zip one, for comparison
  Fit emulated, held, integer;
  // Held out: the share of graphs whose published time fell within their 90% interval.
  double coverage = NAN;
  double coverage_speed_only = NAN;  // the same with the speed's error alone in the interval
  std::map<std::string, double> errors;  // emulated / published - 1, by graph
  // The emulation's own share: emulated x speed / the same graph unthrottled on the same CPU
  // just before (median, p10, p90 over the graphs); 1 is a quota that buys a core's work.
  double share = NAN, share_p10 = NAN, share_p90 = NAN;
  // The same over the graphs the host's own share was not measured with (held out), and the
  // quota scale the plan applied.
  double share_held = NAN;
  double quota_scale = 1;
  double emulation_log_sd = 0;  // the plan's, in the interval as in a run's
  // The host's drift since its rating: the unthrottled time now / at the rating (median).
  double drift = NAN;
  // The same drift as the library's half-second probe sees it just before the emulated run
  // (measure_host_drift(): four of the graphs): whether it tracks `drift` says whether
  // correcting a run by it (PlanOptions::drift_check) removes the host's drift. With
  // --drift-check it is the plan's own probe, applied (`applied`), else one made here.
  double probe_drift = NAN;
  // Without --drift-check, the same probe's wall-time drift and its wall / CPU time (about 1
  // alone on its CPU; HostDrift::waiting).
  double probe_wall = NAN, probe_waiting = NAN;
  bool applied = false;
  // With --drift-check, the plan's check of the host's own share at its quota: measured /
  // cached (followed beyond kShareCheckBand); NAN where not checked.
  double share_check = NAN;
  // The emulated times themselves (ms by graph): a projection to all cores in the same run
  // divides these rather than emulating one core again.
  std::map<std::string, double> emulated_ms;
};

// The graphs unthrottled, one thread, as the emulated runs are made but without a quota (a
// one-core device at speed 1 on the CPU the emulation gets): the reference the emulation's own
// share is taken against, minutes rather than an hour from the run it is compared with.
std::map<std::string, double> unthrottled(const std::string& dir,
                                          const std::vector<std::string>& graphs, const Args& a,
                                          std::map<std::string, double>* cpu_ms) {
  return emulate(make_device("unthrottled", 1, 1.0, "4GiB"), dir, graphs, 1, a, nullptr,
                 nullptr, nullptr, nullptr, nullptr, cpu_ms);
}

OneThreadRow measure_one_thread(const Device& catalog, const NnRating& host, int probe_cpu,
                                const std::string& dir,
                                const std::vector<std::string>& share_graphs, const Args& a) {
  OneThreadRow row;
  row.device = catalog.name;
  row.precision = catalog.nn_precision;
  std::map<std::string, double> published;
  for (const auto& [g, ms] : catalog.nn_ms) {
    if (host.host_ms.count(g) && selected(a.graphs, g)) published[g] = ms;
  }
  const NnSpeed speed = nn_speed(published, host.host_ms, catalog.nn_precision);
  row.speed = speed.core_speed;
  row.integer_speed = catalog.core_speed;

  Device one = for_threads(catalog, 1);
  one.nn = speed;
  one.speed_kind.clear();
  std::map<std::string, double> reference_cpu;
  const auto reference = unthrottled(dir, keys(published), a, &reference_cpu);
  if (!a.drift_check) {
    DriftOptions probe;
    probe.cpu = probe_cpu;
    try {
      const HostDrift d = measure_host_drift(host, probe);
      row.probe_drift = d.factor;
      row.probe_wall = d.wall_factor;
      row.probe_waiting = d.waiting;
    } catch (const Error& e) {
      fmt::print(stderr, "  drift probe failed: {}\n", e.what());
    }
  }
  double applied = 1, probed = 0, checked = 0;
  const auto emulated = emulate(for_speed_kind(one, SpeedKind::nn), dir, keys(published), 1, a,
                                &row.quota_scale, nullptr, &row.emulation_log_sd, &applied,
                                &probed, nullptr, &checked);
  if (a.drift_check) {
    row.probe_drift = probed > 0 ? probed : NAN;
    row.applied = applied != 1.0;
    row.share_check = checked > 0 ? checked : NAN;
  }
  std::vector<double> shares, drifts, held;
  for (const auto& [g, ms] : emulated) {
    if (!reference.count(g)) continue;
    // The slice's own speed: the nn speed, corrected by the drift where the plan was; against
    // the work of the unthrottled run (its CPU time where it has it: another process sharing
    // the CPU lengthens that run's wall time, not the throttled one's).
    const double work = reference_cpu.count(g) ? reference_cpu.at(g) : reference.at(g);
    shares.push_back(ms * row.speed * applied / work);
    // In CPU time where both have it, as the probe compares (HostDrift::cpu_time).
    const bool cpu = reference_cpu.count(g) && host.cpu_ms.count(g);
    drifts.push_back(cpu ? reference_cpu.at(g) / host.cpu_ms.at(g)
                         : reference.at(g) / host.host_ms.at(g));
    if (std::find(share_graphs.begin(), share_graphs.end(), g) == share_graphs.end()) {
      held.push_back(shares.back());
    }
  }
  if (!held.empty()) row.share_held = median(held);
  if (!shares.empty()) {
    row.share = bench::quantile_of(shares, 0.5);
    row.share_p10 = bench::quantile_of(shares, 0.1);
    row.share_p90 = bench::quantile_of(shares, 0.9);
    row.drift = median(drifts);
  }
  std::map<std::string, double> at_integer;
  for (const auto& [g, ms] : emulated) {
    row.errors[g] = ms / published.at(g) - 1;
    // At the integer speed the same graph would take speed_nn / speed_integer as long.
    at_integer[g] = ms * row.speed / row.integer_speed;
  }
  row.emulated = fit(emulated, published);
  row.integer = fit(at_integer, published);
  row.emulated_ms = emulated;
  std::map<std::string, TimeInterval> intervals;
  const auto held_ms = held_out(emulated, published, host, catalog.nn_precision, row.speed,
                               &intervals, row.emulation_log_sd);
  row.held = fit(held_ms, published);
  row.coverage = coverage(held_ms, intervals, published);
  std::map<std::string, TimeInterval> speed_only;
  held_out(emulated, published, host, catalog.nn_precision, row.speed, &speed_only);
  row.coverage_speed_only = coverage(held_ms, speed_only, published);
  return row;
}

// All `threads` cores of a device at its nn speed against its published `threads`-thread runs;
// `skipped` says why not when they were not run.
struct ThreadsRow {
  std::string device;
  std::string skipped;
  int cores = 0;
  double speed = 0;  // per core, from the one-thread times of the graphs compared
  Fit emulated, held;
  double coverage = NAN;           // held out: the share within their 90% interval
  double geomean_error = NAN;      // geometric mean of emulated / published, - 1
  double board_speedup = NAN;      // geometric mean of published one-thread / N-thread time
  double emulation_speedup = NAN;  // the same, one thread emulated being host time / speed
  double projected_speedup = NAN;  // CoreEmulation::projected: the plan's divisor
  bool projected = false;          // the core emulation the device resolved to
  bool reused = false;             // projected from the one-thread part's emulated times
  // Projected, each graph's speed-up also times its own scaling on this host relative to the
  // other graphs' (workload_scaling(), PlanOptions::workload_scaling): the same figures.
  // One per Args::scaling_powers: the factor to that power.
  std::vector<Fit> scaled_held;
  std::vector<double> scaled_geomean_error;
};

ThreadsRow measure_threads(const Device& catalog, const NnRating& host, const std::string& dir,
                           const Args& a, int threads, int cpus,
                           const std::optional<HostScaling>& scaling,
                           const OneThreadRow* one_thread) {
  ThreadsRow row;
  row.device = catalog.name;
  const auto published_it = catalog.nn_threads_ms.find(threads);
  if (published_it == catalog.nn_threads_ms.end()) {
    row.skipped = fmt::format("no published {}-thread times", threads);
    return row;
  }
  std::map<std::string, double> one, many;
  for (const auto& [g, ms] : published_it->second) {
    if (host.host_ms.count(g) && catalog.nn_ms.count(g) && selected(a.graphs, g)) {
      many[g] = ms;
      one[g] = catalog.nn_ms.at(g);
    }
  }
  if (many.empty()) {
    row.skipped = fmt::format("none of the graphs run has published {}-thread times", threads);
    return row;
  }
  Device d = catalog;
  d.nn = nn_speed(one, host.host_ms, catalog.nn_precision);
  d.speed_kind.clear();
  if (threads < d.cores) d = for_threads(d, threads);
  row.cores = d.cores;
  row.speed = d.nn->core_speed;
  const double capacity = d.cores * row.speed;
  // Projected: one device core runs one thread, its times / the board's speed-up. Auto, as a
  // run resolves it for this device.
  const bool projected = resolve_core_emulation(for_speed_kind(d, SpeedKind::nn), a.cores) ==
                         CoreEmulation::projected;
  row.projected = projected;
  // The one-thread part of this run emulated the same one core (at the speed from all of the
  // device's one-thread times, as a user's run has it): its times are the ones to project.
  const bool reuse =
      projected && one_thread && std::all_of(many.begin(), many.end(), [&](const auto& g) {
        return one_thread->emulated_ms.count(g.first) > 0;
      });
  if (reuse) row.speed = one_thread->speed;
  if (projected ? row.speed > 1 : capacity > cpus) {
    row.skipped = projected ? fmt::format("one core at {:.4f} of a host CPU is faster than it",
                                          row.speed)
                            : fmt::format("{} x {:.4f} = {:.2f} host CPUs do not fit this host's {}",
                                          d.cores, row.speed, capacity, cpus);
    return row;
  }
  std::optional<ThreadsProjection> projection;
  double emulation_log_sd = 0;
  std::map<std::string, double> emulated;
  std::map<std::string, TimeInterval> intervals;
  std::map<std::string, double> held;
  // Projected: each graph's interval carries the board's speed-up's spread without it.
  std::map<std::string, double> projection_log_sd;
  if (projected) {
    for (const auto& [g, ms] : many) {
      try {
        projection_log_sd[g] = project_threads(d, g).scaling.loo_log_sd;
      } catch (const UnsupportedError&) {
        // Fewer than three graphs left: the graph's held-out figure is dropped below.
      }
    }
  }
  if (reuse) {
    row.reused = true;
    for (const auto& [g, ms] : many) emulated[g] = one_thread->emulated_ms.at(g);
    emulation_log_sd = one_thread->emulation_log_sd;
    projection = project_threads(d);  // what the plan of a projected run divides by
    std::map<std::string, double> published_one;  // as measure_one_thread's speed had them
    for (const auto& [g, ms] : catalog.nn_ms) {
      if (host.host_ms.count(g) && selected(a.graphs, g)) published_one[g] = ms;
    }
    held = held_out(emulated, published_one, host, catalog.nn_precision, row.speed, &intervals,
                    emulation_log_sd, &projection_log_sd);
  } else {
    emulated = emulate(for_speed_kind(d, SpeedKind::nn), dir, keys(many),
                       projected ? 1 : threads, a, nullptr, &projection, &emulation_log_sd);
    held = held_out(emulated, one, host, catalog.nn_precision, row.speed, &intervals,
                    emulation_log_sd, &projection_log_sd);
  }
  if (projected) {
    if (!projection) throw Error("bench_nn: a projected plan without a projection");
    row.projected_speedup = projection->speedup;
    for (auto& [g, ms] : emulated) ms /= projection->speedup;
    // Held out: the speed-up too from the other graphs' tables (none with fewer than three
    // graphs left: the graph's held-out figure is then dropped).
    for (auto it = held.begin(); it != held.end();) {
      try {
        it->second /= project_threads(d, it->first).speedup;
        ++it;
      } catch (const UnsupportedError&) {
        it = held.erase(it);
      }
    }
  }
  if (projected && scaling && scaling->one_ms.size() >= 2) {
    // What PlanOptions::workload_scaling does with the graph's own host speed-up, held out:
    // against the median of the other graphs'; also to the powers asked for.
    for (const double power : a.scaling_powers) {
      std::map<std::string, double> scaled = emulated, scaled_held = held;
      double log_scaled = 0;
      for (auto& [g, ms] : scaled) {
        // A graph the scaling runs did not measure keeps the board's median.
        const double w = scaling->one_ms.count(g) && scaling->many_ms.count(g)
                             ? std::pow(workload_scaling(*scaling, scaling->speedup(g), g), power)
                             : 1.0;
        ms /= w;
        if (scaled_held.count(g)) scaled_held[g] /= w;
        log_scaled += std::log(ms / many.at(g));
      }
      row.scaled_held.push_back(fit(scaled_held, many));
      row.scaled_geomean_error.push_back(
          std::exp(log_scaled / static_cast<double>(scaled.size())) - 1);
    }
  }
  row.emulated = fit(emulated, many);
  row.held = fit(held, many);
  row.coverage = coverage(held, intervals, many);
  double log_error = 0, log_board = 0, log_emulation = 0;
  for (const auto& [g, ms] : emulated) {
    log_error += std::log(ms / many.at(g));
    log_board += std::log(one.at(g) / many.at(g));
    log_emulation += std::log(host.host_ms.at(g) / row.speed / ms);
  }
  const double n = static_cast<double>(emulated.size());
  row.geomean_error = std::exp(log_error / n) - 1;
  row.board_speedup = std::exp(log_board / n);
  // Projected: the divisor, not something the emulation did (the table shows it instead).
  row.emulation_speedup = projected ? NAN : std::exp(log_emulation / n);
  return row;
}

// ------------------------------------------------------------------------------ report

std::string pct(double x) { return std::isnan(x) ? "n/a" : fmt::format("{:.0f}%", 100 * x); }
std::string fixed2(double x) { return std::isnan(x) ? "n/a" : fmt::format("{:.2f}", x); }

std::string utc_now() {
  char text[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  return text;
}

std::string duration(double seconds) {
  const long s = std::lround(seconds);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

std::string one_thread_table(const std::vector<OneThreadRow>& rows,
                             const std::vector<std::string>& skipped, const NnRating& host,
                             const NnOptions& rating, const Args& a) {
  std::string md = fmt::format(
      "#### One thread\n\n"
      "Host: {}; {}; this host's rating with warm-up {} and {} timed inferences per graph, the "
      "emulated runs with warm-up {} and {}; one thread. Held out (leave-one-graph-out): each "
      "graph's emulated time rescaled to the speed derived without that graph (emulated x "
      "speed from all graphs / speed without it), against its published time. Integer speed: "
      "the emulated time scaled by nn speed / integer speed. Own share: the emulated time x the "
      "nn speed / the same graph run unthrottled on the same CPU just before it (its CPU time "
      "per inference where the runner reports it), median "
      "(p10-p90) over the graphs: 1.00 is a quota that buys exactly its share of a host core; "
      "held-out graphs: the same over the graphs the host's own share was not measured with. "
      "Quota scale: the plan's (by default this host's own share at the nn speed). "
      "Host drift: that unthrottled time / this host's rating, median, in CPU time per "
      "inference where the rating has it (as the probe compares); the "
      "probe's: measure_host_drift() just before the emulated run (four graphs, about half a "
      "second, on CPU {}), applied to the speed where marked (--drift-check: the plan's own "
      "probe, PlanOptions::drift_check); drift left: host drift / the probe's, what a "
      "correction by the probe leaves. Own share check (--drift-check): the plan's check of "
      "this host's own share at its quota just before the run over the cached share "
      "(EmulationPlan::own_share_check), followed beyond 1.5x (or 1/1.5x). Coverage: the "
      "share of graphs whose published time "
      "lies within the 90% interval (time_interval(), from the speed without the graph, with "
      "the plan's emulation spread as a run's own interval has it; emulation sd) around the "
      "held-out time, and with the speed's error alone.\n\n"
      "| device | precision | graphs | nn speed | median \\|err\\| | worst | Kendall tau | "
      "held-out median (worst) | held-out tau | 90% interval coverage (emulation sd) | "
      "coverage, speed's error only | integer speed's median "
      "\\|err\\| | own share (p10-p90) | own share, held-out graphs | quota scale | host drift | "
      "probe's drift | drift left | own share check |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      host.cpu_model, host.runtime, rating.warmup, rating.loops, a.warmup, a.loops,
      host_facts().cpus.front());
  for (const OneThreadRow& r : rows) {
    md += fmt::format("| {} | {} | {} | {:.4f} | {} | {} | {} | {} ({}) | {} | {} ({:.2f}) | {} | "
                      "{} | {} ({}-{}) | {} | {:.3f} | {} | {} | {} | {} |\n",
                      r.device, r.precision, r.emulated.graphs, r.speed, pct(r.emulated.median),
                      pct(r.emulated.worst), fixed2(r.emulated.tau), pct(r.held.median),
                      pct(r.held.worst), fixed2(r.held.tau), pct(r.coverage),
                      r.emulation_log_sd, pct(r.coverage_speed_only), pct(r.integer.median),
                      fixed2(r.share), fixed2(r.share_p10), fixed2(r.share_p90),
                      fixed2(r.share_held), r.quota_scale, fixed2(r.drift),
                      fixed2(r.probe_drift) + (r.applied ? " (applied)" : ""),
                      fixed2(r.drift / r.probe_drift), share_check_text(r.share_check));
  }
  {
    // How much of the host's drift a correction by the probe removes, over the devices.
    std::vector<double> off, left;
    for (const OneThreadRow& r : rows) {
      if (!std::isfinite(r.drift) || !std::isfinite(r.probe_drift)) continue;
      off.push_back(std::abs(r.drift - 1));
      left.push_back(std::abs(r.drift / r.probe_drift - 1));
    }
    if (!off.empty()) {
      md += fmt::format(
          "\nHost drift over the {} devices: |drift - 1| median {} (largest {}); after a "
          "correction by the probe, |drift left - 1| median {} (largest {}). Measured.\n",
          off.size(), pct(median(off)), pct(*std::max_element(off.begin(), off.end())),
          pct(median(left)), pct(*std::max_element(left.begin(), left.end())));
    }
  }
  for (const std::string& why : skipped) md += "\nSkipped " + why + "\n";

  md += "\nPer graph, emulated / published - 1:\n\n| device |";
  std::vector<std::string> names;
  for (const auto& g : reference_graphs()) {
    if (selected(a.graphs, g.name)) names.push_back(g.name);
  }
  for (const auto& n : names) md += " " + n + " |";
  md += "\n|---|";
  for (std::size_t i = 0; i < names.size(); ++i) md += "---|";
  md += "\n";
  for (const OneThreadRow& r : rows) {
    md += "| " + r.device + " |";
    for (const auto& n : names) {
      md += r.errors.count(n) ? fmt::format(" {:+.0f}% |", 100 * r.errors.at(n)) : " |";
    }
    md += "\n";
  }
  return md + "\n";
}

// Speed only (estimated, nothing emulated), every catalog device with published one-thread
// times: each graph's time predicted from this host's as host ms / the speed without the graph,
// and whether the published time lies within its 90% interval (time_interval() of that speed).
std::string speed_only_coverage(const NnRating& host) {
  int inside = 0, n = 0, devices = 0;
  std::vector<double> per_device, errors;
  for (const Device& d : catalog_devices()) {
    if (!has_published_times(d)) continue;
    std::map<std::string, double> predicted, published;
    std::map<std::string, TimeInterval> intervals;
    for (const auto& [g, ms] : d.nn_ms) {
      if (!host.host_ms.count(g)) continue;
      std::map<std::string, double> others = d.nn_ms;
      others.erase(g);
      try {
        const NnSpeed without = nn_speed(others, host.host_ms, d.nn_precision);
        const std::optional<TimeInterval> i = time_interval(without);
        if (!i) continue;
        predicted[g] = host.host_ms.at(g) / without.core_speed;
        published[g] = ms;
        intervals[g] = *i;
      } catch (const Error&) {
        continue;  // no other graph in common
      }
    }
    if (predicted.empty()) continue;
    ++devices;
    const double c = coverage(predicted, intervals, published);
    per_device.push_back(c);
    for (const auto& [g, ms] : predicted) {
      ++n;
      inside += published[g] >= ms * intervals[g].low && published[g] <= ms * intervals[g].high;
      errors.push_back(std::abs(ms / published[g] - 1));
    }
  }
  if (!n) return "";
  return fmt::format(
      "#### 90% intervals, speed only\n\n"
      "Estimated, nothing emulated: every catalog device with published one-thread ncnn times "
      "({} devices, {} graph times), each graph's time predicted as this host's / the nn speed "
      "without that graph, with its 90% interval (time_interval(), from the same speed). "
      "Coverage: {:.0f}% of the published times inside (per device: median {:.0f}%, p10 "
      "{:.0f}%, worst {:.0f}%); the held-out median \\|err\\| of the same predictions {:.0f}%.\n\n",
      devices, n, 100.0 * inside / n, 100 * median(per_device),
      100 * bench::quantile_of(per_device, 0.1),
      100 * *std::min_element(per_device.begin(), per_device.end()), 100 * median(errors));
}

// A row's workload-scaling cells: three per power, "n/a" where it was not made.
std::string scaled_cells(const ThreadsRow& r, std::size_t powers) {
  std::string cells;
  for (std::size_t i = 0; i < powers; ++i) {
    if (i >= r.scaled_held.size() || !r.scaled_held[i].graphs) {
      cells += " n/a | n/a | n/a |";
      continue;
    }
    const Fit& f = r.scaled_held[i];
    cells += fmt::format(" {} ({}) | {} | {:+.0f}% |", pct(f.median), pct(f.worst), fixed2(f.tau),
                         100 * r.scaled_geomean_error[i]);
  }
  return cells;
}

std::string threads_table(int threads, const std::vector<ThreadsRow>& rows, const NnRating& host,
                          int cpus, const Args& a, const std::optional<HostScaling>& scaling) {
  // Auto resolves per device: the table says which way each row was made.
  const auto any = [&](bool ThreadsRow::*field) {
    return std::any_of(rows.begin(), rows.end(),
                       [&](const ThreadsRow& r) { return r.skipped.empty() && r.*field; });
  };
  const bool projected = any(&ThreadsRow::projected);
  const bool reused = any(&ThreadsRow::reused);
  // The workload's own scaling: three columns per power.
  std::string scaled_heads, scaled_rule;
  for (const double power : a.scaling_powers) {
    const std::string which =
        power == 1 ? std::string("with the workload's own scaling")
                   : fmt::format("with the workload's own scaling to the power {:g}", power);
    scaled_heads += fmt::format(" {}: held-out median (worst) | its held-out tau | its geometric "
                                "mean error |",
                                which);
    scaled_rule += "---|---|---|";
  }
  std::string md = fmt::format(
      "#### {} threads{}\n\n"
      "Host: {}; {}; {}, at the nn speed from the one-thread times of {}, "
      "warm-up {} and {} timed inferences per graph. Held out: each graph's emulated time "
      "rescaled to the speed derived without that graph's one-thread time{}; its 90% interval "
      "(time_interval()) as a run's, from the same held-out speed{}. The emulation's "
      "speed-up over one thread takes one thread emulated as this host's time / the nn speed."
      "\n\n"
      "{}"
      "| device | emulated | graphs | median \\|err\\| | geometric mean error | Kendall tau | "
      "held-out median (worst) | held-out tau | 90% interval coverage | board's speed-up over 1 "
      "thread | emulation's |{}\n"
      "|---|---|---|---|---|---|---|---|---|---|---|{}\n",
      threads, projected ? ", projected from one" : "", host.cpu_model, host.runtime,
      projected ? fmt::format("one thread on one device core (core emulation projected{}), its "
                              "time divided by the board's published speed-up from 1 to {} "
                              "threads (the median over the graphs of its tables){}",
                              a.cores == CoreEmulation::automatic ? ", as auto chose" : "",
                              threads,
                              reused ? "; the one-thread times are the one-thread part's of "
                                       "this run, at its speed (one emulated run per device, "
                                       "as a projected run is one run)"
                                     : "")
                : fmt::format("{} threads emulated on {} host CPUs", threads, cpus),
      reused ? "all the graphs run (the one-thread part's)" : "the graphs compared", a.warmup,
      a.loops,
      projected ? ", and divided by the speed-up from the other graphs' tables" : "",
      projected ? ", the emulation's spread and the spread of the board's speed-up without the "
                  "graph (CoreScaling::loo_log_sd)"
                : ", with the emulation's spread",
      scaling ? fmt::format(
                    "With the workload's own scaling: each graph's projected time divided "
                    "again by workload_scaling() of its own speed-up on this host from 1 to {} "
                    "threads over the other graphs' median (PlanOptions::workload_scaling; "
                    "this host's scaling measured at the start: {} graphs, {} rounds, CPUs "
                    "{}); to a power p, that factor^p (p = 1: the option's).\n\n",
                    scaling->threads, scaling->one_ms.size(), scaling->rounds,
                    fmt::join(scaling->cpus, ","))
      : scaled_heads.empty()
          ? std::string()
          : std::string("With the workload's own scaling: n/a in this run, this host's scaling "
                        "not measured (--quick, one CPU, per-core or pooled core emulation) or "
                        "refused as disturbed (the log says why).\n\n"),
      scaled_heads, scaled_rule);
  std::string notes;
  for (const ThreadsRow& r : rows) {
    if (!r.skipped.empty()) {
      notes +=
          fmt::format("\nNot emulated with {} threads: {}: {}\n", threads, r.device, r.skipped);
      continue;
    }
    md += fmt::format(
        "| {} | {} | {} | {} | {:+.0f}% | {} | {} ({}) | {} | {} | {:.2f}x | "
        "{} |{}\n",
        r.device,
        std::isnan(r.projected_speedup)
            ? fmt::format("{} x {:.4f}", r.cores, r.speed)
            : fmt::format("1 x {:.4f} / {:.3f}", r.speed, r.projected_speedup),
        r.emulated.graphs, pct(r.emulated.median),
        100 * r.geomean_error, fixed2(r.emulated.tau), pct(r.held.median), pct(r.held.worst),
        fixed2(r.held.tau), pct(r.coverage), r.board_speedup,
        std::isnan(r.emulation_speedup) ? std::string("n/a (projected)")
                                        : fmt::format("{:.2f}x", r.emulation_speedup),
        scaled_cells(r, a.scaling_powers.size()));
  }
  return md + notes + "\n";
}

// A copy of the cache directory for one run, made the process's (EDGEPROF_CACHE_DIR), removed
// when the run ends: a cache biased on purpose never touches the user's own.
class CacheCopy {
 public:
  explicit CacheCopy(const std::string& from) {
    std::string dir = (std::filesystem::temp_directory_path() / "edgeprof-bench-cache.XXXXXX");
    if (!::mkdtemp(dir.data())) {
      throw Error(fmt::format("cannot make a directory for a copy of the cache: {} (errno {})",
                              std::strerror(errno), errno));
    }
    dir_ = dir;
    for (const auto& entry : std::filesystem::directory_iterator(from)) {
      if (entry.is_regular_file()) {
        std::filesystem::copy_file(entry.path(), dir_ / entry.path().filename());
      }
    }
    if (const char* was = std::getenv("EDGEPROF_CACHE_DIR")) was_ = was;
    ::setenv("EDGEPROF_CACHE_DIR", dir_.c_str(), 1);
  }
  CacheCopy(const CacheCopy&) = delete;
  CacheCopy& operator=(const CacheCopy&) = delete;
  ~CacheCopy() {
    if (was_) {
      ::setenv("EDGEPROF_CACHE_DIR", was_->c_str(), 1);
    } else {
      ::unsetenv("EDGEPROF_CACHE_DIR");
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> was_;
};

int run_benchmark(const Args& a) {
  const std::string started = utc_now();
  const auto t0 = bench::Clock::now();
  const bench::ScratchDir scratch("edgeprof-bench-nn");
  const std::string& dir = scratch.path();
  write_reference_graphs(dir);
  {
    std::ofstream(dir + "/runner.py") << nn_runner_source();
  }
  NnOptions rating;
  // This host's rating as `edgeprof calibrate-host --nn` measures it (warm-up 4, 8 timed runs
  // per graph); the quick run, once each.
  if (a.quick) {
    rating.warmup = 1;
    rating.loops = 1;
  }
  rating.graphs = a.graphs;
  rating.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  std::string why_not_cached;
  const std::optional<NnRating> cached =
      a.cached_rating ? cached_nn_rating(&why_not_cached) : std::nullopt;
  if (a.cached_rating) {
    fmt::print(stderr, "{}\n",
               cached ? fmt::format("this host's cached nn rating, measured {} ({})",
                                    cached->measured_at, cached->cache_file)
                      : fmt::format("no cached nn rating ({}): measuring one", why_not_cached));
  }
  const NnRating host = cached ? *cached : measure_nn_rating(rating);
  const double rating_s = bench::seconds_between(t0, bench::Clock::now());
  const int cpus = static_cast<int>(host_facts().cpus.size());
  // The drift probe runs where the emulated runs do when nothing else holds a CPU: the first.
  const int probe_cpu = host_facts().cpus.front();
  // This host's own share under a quota, measured now as plans use it (cached for them), unless
  // the scale is given; the quick run leaves the quota as the device's.
  std::string share_text = "quota scale as given";
  std::optional<CacheCopy> biased_cache;  // --share-bias: the run's own copy of the cache
  std::vector<std::string> share_graphs;
  Args args = a;
  if (a.quick && !a.quota_scale) args.quota_scale = 1.0;
  if (!args.quota_scale) {
    QuotaShareOptions so;
    so.progress = rating.progress;
    so.cpu = probe_cpu;
    const QuotaShare share = measure_quota_share(so);
    if (share.cache_file.empty()) {
      throw Error(fmt::format("the host's own share was not cached ({}), so plans would not "
                              "apply it: give --quota-scale", share.note));
    }
    share_text = describe(share);
    share_graphs = share.graphs;
    if (args.share_bias != 1.0) {
      // A stale cache, on purpose: the shares the plans read, times the bias.
      std::ifstream in(share.cache_file);
      nlohmann::json j = nlohmann::json::parse(in);
      for (nlohmann::json& p : j.at("points")) {
        for (const char* k : {"share", "measured", "p10", "p25", "p75", "p90"}) {
          p[k] = p.at(k).get<double>() * args.share_bias;
        }
      }
      // In a copy of the cache for this run: the user's own once stayed biased, and every
      // later plan took the biased share.
      biased_cache.emplace(std::filesystem::path(share.cache_file).parent_path().string());
      const std::string biased =
          biased_cache->path(std::filesystem::path(share.cache_file).filename().string());
      const std::string failed =
          edgeprof::detail::replace_file(biased_cache->dir(), biased, j.dump(2) + "\n");
      if (!failed.empty()) throw Error(failed);
      share_text += fmt::format("; cached x{:g} on purpose in a copy of the cache for this run "
                                "(--share-bias: a stale cache)",
                                args.share_bias);
    }
  }

  // Projected to several threads: this host's own scaling of each graph, for the variant that
  // follows it (PlanOptions::workload_scaling); about 30 s.
  std::optional<HostScaling> host_scaling;
  const bool many_threads = std::any_of(a.threads.begin(), a.threads.end(),
                                        [](int n) { return n > 1; });
  const bool may_project =
      a.cores == CoreEmulation::projected || a.cores == CoreEmulation::automatic;
  if (may_project && many_threads && !a.quick && cpus >= 2) {
    HostScalingOptions hs;
    hs.graphs = a.graphs;
    hs.progress = rating.progress;
    try {
      host_scaling = measure_host_scaling(hs);
    } catch (const Error& e) {
      // A disturbed measurement (the second CPU taken): the variants that follow it are left
      // out of this run, the rest goes on. Anything else (a runner failing) ends the run.
      if (std::string_view(e.what()).find("ran slower than with one") == std::string_view::npos) {
        throw;
      }
      fmt::print(stderr, "{}; the workload's own scaling is left out of this run\n", e.what());
    }
  }
  if (host_scaling) {
    std::string line = "this host's speed-up from 1 to 2 threads:";
    for (const auto& [g, ms] : host_scaling->one_ms) {
      line += fmt::format(" {} {:.2f}", g, host_scaling->speedup(g));
    }
    fmt::print(stderr, "{} (median {:.2f}, {:.0f} s)\n", line, host_scaling->median_speedup(),
               host_scaling->seconds);
  }

  std::vector<const Device*> devices;
  for (const Device& d : catalog_devices()) {
    const bool chosen = a.devices.empty() ||
                        std::any_of(a.devices.begin(), a.devices.end(),
                                    [&](const std::string& name) { return d.answers_to(name); });
    if (has_published_times(d) && chosen) devices.push_back(&d);
  }
  const bool one_thread = a.threads.front() == 1;
  std::vector<OneThreadRow> rows;
  std::vector<std::string> skipped;  // devices this host cannot emulate, with why
  std::map<int, std::vector<ThreadsRow>> threads_rows;
  std::vector<std::string> device_times;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const Device& d = *devices[i];
    const auto device_t0 = bench::Clock::now();
    fmt::print(stderr, "emulating {} ({} of {}) ...\n", d.name, i + 1, devices.size());
    if (one_thread) {
      try {
        rows.push_back(
            measure_one_thread(d, host, probe_cpu, dir, share_graphs, args));
        const OneThreadRow& r = rows.back();
        fmt::print(stderr,
                   "  1 thread at nn speed {:.4f}: median error {}, worst {}, tau {}; held out "
                   "{} (worst {}), tau {}, 90% interval coverage {}; own share {} ({}-{}; "
                   "held-out graphs {}) at quota scale {:.3f}, host drift {} (probe {}{}, left "
                   "{}; the probe's wall-time drift {}, wall / CPU time {}); own share check "
                   "{}\n",
                   r.speed, pct(r.emulated.median), pct(r.emulated.worst), fixed2(r.emulated.tau),
                   pct(r.held.median), pct(r.held.worst), fixed2(r.held.tau), pct(r.coverage),
                   fixed2(r.share),
                   fixed2(r.share_p10), fixed2(r.share_p90), fixed2(r.share_held), r.quota_scale,
                   fixed2(r.drift), fixed2(r.probe_drift), r.applied ? ", applied" : "",
                   fixed2(r.drift / r.probe_drift), fixed2(r.probe_wall),
                   fixed2(r.probe_waiting), share_check_text(r.share_check));
      } catch (const UnsupportedError& e) {
        // A device faster than one host core at its nn speed (the Pi 5 on a slow or busy
        // host): nothing to emulate here; said, not fatal.
        fmt::print(stderr, "  1 thread skipped: {}\n", e.what());
        skipped.push_back(fmt::format("{}: {}", d.name, e.what()));
      }
    }
    for (int n : a.threads) {
      if (n == 1) continue;
      ThreadsRow r;
      try {
        const OneThreadRow* one =
            one_thread && !rows.empty() && rows.back().device == d.name ? &rows.back() : nullptr;
        r = measure_threads(d, host, dir, args, n, cpus, host_scaling, one);
      } catch (const UnsupportedError& e) {
        r.device = d.name;
        r.skipped = e.what();
      }
      if (r.skipped.empty()) {
        fmt::print(stderr,
                   "  {} threads, {}: median error {}, tau {}; held out {}, 90% interval "
                   "coverage {}\n",
                   n,
                   r.projected ? fmt::format("projected: 1 x {:.4f} / {:.3f}{}", r.speed,
                                             r.projected_speedup,
                                             r.reused ? " (the one-thread run's times)" : "")
                               : fmt::format("{} x {:.4f}", r.cores, r.speed),
                   pct(r.emulated.median), fixed2(r.emulated.tau), pct(r.held.median),
                   pct(r.coverage));
      } else {
        fmt::print(stderr, "  {} threads skipped: {}\n", n, r.skipped);
      }
      threads_rows[n].push_back(std::move(r));
    }
    const double s = bench::seconds_between(device_t0, bench::Clock::now());
    fmt::print(stderr, "  {} done in {} ({} since the start)\n", d.name, duration(s),
               duration(bench::seconds_between(t0, bench::Clock::now())));
    device_times.push_back(fmt::format("{} {}", d.name, duration(s)));
  }

  std::string md = fmt::format(
      "Run: started {}, ended {}, {} in all: this host's rating {}, then per device (all its "
      "runs) {}.\n\nCommand: `{}`\n\nQuota scale: {}.\n\n",
      started, utc_now(), duration(bench::seconds_between(t0, bench::Clock::now())),
      cached ? fmt::format("cached, measured {}", host.measured_at)
             : fmt::format("{} (measured {})", duration(rating_s), host.measured_at),
      devices.empty() ? "none" : fmt::format("{}", fmt::join(device_times, ", ")), a.command_line,
      share_text);
  if (one_thread) md += one_thread_table(rows, skipped, host, rating, args);
  for (const auto& [n, r] : threads_rows) {
    md += threads_table(n, r, host, cpus, args, host_scaling);
  }
  md += speed_only_coverage(host);
  fmt::print("{}", md);
  if (!a.markdown.empty()) {
    std::ofstream out(a.markdown);
    out << md;
    if (!out) throw Error(fmt::format("cannot write {}", a.markdown));
    fmt::print(stderr, "wrote {}\n", a.markdown);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  try {
    check_names(a);
    if (::geteuid() != 0) {
      fmt::print(stderr, "bench_nn: cannot run here: needs root (slices)\n");
      return 77;
    }
    if (std::system("python3 -c 'import ncnn' 2>/dev/null") != 0) {
      fmt::print(stderr, "bench_nn: cannot run here: python3 has no ncnn (pip install ncnn)\n");
      return 77;
    }
    return run_benchmark(a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_nn: {}\n", e.what());
    return 1;
  }
}
