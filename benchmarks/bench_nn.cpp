// bench_nn: how close emulated CNN inference lands to real devices (issue 16).
//
// Measures this host's nn rating (the reference graphs with ncnn, one thread), then, for every
// catalog device with published one-thread ncnn times, runs the same graphs under `run()`
// emulating one core of the device at its nn speed, and compares each graph's emulated time
// with the published one: median and worst |emulated / published - 1|, Kendall tau. Held out:
// a second run at the speed derived from every other graph (0, 2, 4, ... in the catalog order)
// times the remaining ones, which did not shape the speed. The integer (7-Zip) speed is shown
// beside for what it predicted. Results as a Markdown table (--markdown FILE).
//
// Usage: edgeprof_bench_nn [--quick] [--warmup N] [--loops N] [--device NAME]... [--graph NAME]...
//        [--period-us N] [--no-keep-warm] [--no-held-out] [--threads N] [--markdown F]
// --threads N: all N cores of each device at its nn speed, against the published N-thread runs
// (devices whose N x nn speed fits this host).
// --quick: one device, three graphs, one timed loop (about 20 s): the ctest smoke run.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "edgeprof/edgeprof.hpp"

using namespace edgeprof;

namespace {

struct Args {
  bool quick = false;
  int warmup = 1;
  int loops = 3;
  std::vector<std::string> devices;
  std::string markdown;
  std::vector<std::string> graphs;  // --graph: only these
  std::uint64_t period_us = 0;      // --period-us: the CFS period (0: edgeprof's choice)
  bool keep_warm = true;            // --no-keep-warm
  bool held_out = true;             // --no-held-out: skip the second run
  int threads = 1;                  // --threads N: compare with the published N-thread runs
};

struct Row {
  std::string device;
  std::string precision;
  int graphs = 0;
  double speed = 0;            // nn speed used
  double integer_speed = 0;    // the 7-Zip one, for comparison
  double integer_median = 0;   // median |err| the integer speed gives (projected from nn runs)
  double median = 0, worst = 0, tau = 0;
  double held_median = 0, held_worst = 0;
  int held = 0;
  double loo = 0;  // the arithmetic's leave-one-out median error
  std::map<std::string, double> errors;
};

double median(std::vector<double> v) { return v.empty() ? NAN : bench::quantile_of(v, 0.5); }

std::string temp_dir() {
  std::string pattern = "/tmp/edgeprof-bench-nn-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw Error("cannot create a temporary directory");
  return pattern;
}

// The graphs' times when run under `device` (one core), ms by graph.
std::map<std::string, double> emulate(const Device& device, const std::string& dir,
                                      const std::vector<std::string>& graphs, const Args& a) {
  Command c;
  c.argv = {"python3", dir + "/runner.py", dir, std::to_string(a.warmup), std::to_string(a.loops),
            "--threads=" + std::to_string(a.threads)};
  c.argv.insert(c.argv.end(), graphs.begin(), graphs.end());
  c.stdout_stream = Stdio::file(dir + "/out.txt");
  RunOptions o;
  o.spawn.sample_interval = std::chrono::nanoseconds(0);
  o.slice.plan.cpu_period_us = a.period_us;
  o.slice.plan.keep_warm = a.keep_warm;
  const Result r = run(c, device, o);
  std::ifstream in(dir + "/out.txt");
  std::stringstream text;
  text << in.rdbuf();
  if (!r.ok()) {
    throw Error(fmt::format("the runner failed under {}: exit {}; {}", device.name,
                            r.exit_code.value_or(-1), text.str()));
  }
  return parse_nn_output(text.str(), "runner under " + device.name).host_ms;
}

Row measure_device(const Device& catalog, const NnRating& host, const std::string& dir,
                   const Args& a, const std::vector<std::string>& only) {
  Row row;
  row.device = catalog.name;
  row.precision = catalog.nn_precision;
  std::map<std::string, double> published;
  for (const auto& [g, ms] : catalog.nn_ms) {
    if (host.host_ms.count(g) && (only.empty() || std::count(only.begin(), only.end(), g))) {
      published[g] = ms;
    }
  }
  const NnSpeed speed = nn_speed(published, host.host_ms, catalog.nn_precision);
  row.speed = speed.core_speed;
  row.loo = speed.loo_median_error;
  row.integer_speed = catalog.core_speed;
  std::vector<std::string> graphs;
  for (const auto& [g, ms] : published) graphs.push_back(g);
  row.graphs = int(graphs.size());

  // 1. All graphs at the nn speed from all of them: what a user gets.
  Device one = for_threads(catalog, 1);
  one.nn = speed;
  one.speed_kind.clear();
  const auto emulated = emulate(for_speed_kind(one, SpeedKind::nn), dir, graphs, a);
  std::vector<double> e, p, errs, integer_errs;
  for (const auto& [g, ms] : emulated) {
    const double err = ms / published.at(g) - 1;
    row.errors[g] = err;
    errs.push_back(std::abs(err));
    // At the integer speed the same graph would take speed_nn / speed_integer as long.
    integer_errs.push_back(std::abs(ms * row.speed / row.integer_speed / published.at(g) - 1));
    e.push_back(ms);
    p.push_back(published.at(g));
  }
  row.median = median(errs);
  row.worst = *std::max_element(errs.begin(), errs.end());
  row.integer_median = median(integer_errs);
  row.tau = e.size() >= 3 ? kendall(e, p).coefficient : NAN;

  // 2. Held out: the speed from every other graph; the rest timed at it.
  if (a.held_out && graphs.size() >= 4) {
    std::map<std::string, double> train;
    std::vector<std::string> test;
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      if (i % 2 == 0) train[graphs[i]] = published[graphs[i]];
      else test.push_back(graphs[i]);
    }
    Device held = for_threads(catalog, 1);
    held.nn = nn_speed(train, host.host_ms, catalog.nn_precision);
    held.speed_kind.clear();
    const auto times = emulate(for_speed_kind(held, SpeedKind::nn), dir, test, a);
    std::vector<double> herrs;
    for (const auto& [g, ms] : times) herrs.push_back(std::abs(ms / published.at(g) - 1));
    row.held = int(herrs.size());
    row.held_median = median(herrs);
    row.held_worst = *std::max_element(herrs.begin(), herrs.end());
  }
  return row;
}

std::string pct(double x);

// All the device's cores (a.threads of them) at its nn speed, against the published runs with as
// many threads. A markdown row, or "" when the device has no such runs or does not fit here.
std::string measure_threads(const Device& catalog, const NnRating& host, const std::string& dir,
                            const Args& a, const std::vector<std::string>& only, int cpus) {
  const auto published_it = catalog.nn_threads_ms.find(a.threads);
  if (published_it == catalog.nn_threads_ms.end()) return "";
  std::map<std::string, double> one, many;
  for (const auto& [g, ms] : published_it->second) {
    if (host.host_ms.count(g) && catalog.nn_ms.count(g) &&
        (only.empty() || std::count(only.begin(), only.end(), g))) {
      many[g] = ms;
      one[g] = catalog.nn_ms.at(g);
    }
  }
  if (many.empty()) return "";
  Device d = catalog;
  d.nn = nn_speed(one, host.host_ms, catalog.nn_precision);
  d.speed_kind.clear();
  if (a.threads < d.cores) d = for_threads(d, a.threads);
  const double capacity = d.cores * d.nn->core_speed;
  if (capacity > cpus) {
    fmt::print(stderr, "  {} x {:.3f} = {:.2f} host cores do not fit {} CPUs: skipped\n", d.cores,
               d.nn->core_speed, capacity, cpus);
    return "";
  }
  std::vector<std::string> graphs;
  for (const auto& [g, ms] : many) graphs.push_back(g);
  const auto emulated = emulate(for_speed_kind(d, SpeedKind::nn), dir, graphs, a);
  std::vector<double> errs, e, p;
  double log_published = 0, log_emulated = 0;
  for (const auto& [g, ms] : emulated) {
    errs.push_back(std::abs(ms / many.at(g) - 1));
    e.push_back(ms);
    p.push_back(many.at(g));
    // Speed-ups over one thread: the board's, and the emulation's (one thread emulated being
    // this host's time / the nn speed).
    log_published += std::log(one.at(g) / many.at(g));
    log_emulated += std::log(host.host_ms.at(g) / d.nn->core_speed / ms);
  }
  const double n = double(errs.size());
  double signed_log = 0;
  for (const auto& [g, ms] : emulated) signed_log += std::log(ms / many.at(g));
  return fmt::format("| {} | {} x {:.4f} | {} | {} | {:+.0f}% | {:.2f} | {:.2f}x | {:.2f}x |\n",
                     catalog.name, d.cores, d.nn->core_speed, errs.size(), pct(median(errs)),
                     100 * (std::exp(signed_log / n) - 1),
                     e.size() >= 3 ? kendall(e, p).coefficient : NAN,
                     std::exp(log_published / n), std::exp(log_emulated / n));
}

std::string pct(double x) { return std::isnan(x) ? "n/a" : fmt::format("{:.0f}%", 100 * x); }

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "bench_nn: {} needs a value\n", s);
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--quick") a.quick = true;
    else if (s == "--warmup") a.warmup = std::stoi(value());
    else if (s == "--loops") a.loops = std::stoi(value());
    else if (s == "--device") a.devices.push_back(value());
    else if (s == "--markdown") a.markdown = value();
    else if (s == "--graph") a.graphs.push_back(value());
    else if (s == "--period-us") a.period_us = std::stoull(value());
    else if (s == "--no-keep-warm") a.keep_warm = false;
    else if (s == "--no-held-out") a.held_out = false;
    else if (s == "--threads") a.threads = std::stoi(value());
    else {
      fmt::print(stderr, "usage: edgeprof_bench_nn [--quick] [--warmup N] [--loops N] "
                         "[--device NAME]... [--graph NAME]... [--period-us N] [--no-keep-warm] "
                         "[--no-held-out] [--threads N] [--markdown FILE]\n");
      return 2;
    }
  }
  if (::geteuid() != 0) {
    fmt::print(stderr, "bench_nn: cannot run here: needs root (slices)\n");
    return 77;
  }
  if (std::system("python3 -c 'import ncnn' 2>/dev/null") != 0) {
    fmt::print(stderr, "bench_nn: cannot run here: python3 has no ncnn (pip install ncnn)\n");
    return 77;
  }
  std::vector<std::string> only = a.graphs;
  if (a.quick) {
    a.warmup = 1;
    a.loops = 1;
    if (a.devices.empty()) a.devices = {"raspberry-pi-5-8gb"};
    only = {"squeezenet", "mobilenet_v2", "shufflenet_v2"};
  }
  const std::string dir = temp_dir();
  try {
    write_reference_graphs(dir);
    {
      std::ofstream(dir + "/runner.py") << nn_runner_source();
    }
    NnOptions o;
    // This host's rating as `edgeprof calibrate-host --nn` measures it (warm-up 4, 8 timed
    // runs per graph); the quick run, once each.
    if (a.quick) {
      o.warmup = 1;
      o.loops = 1;
    }
    o.graphs = only;
    o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    const NnRating host = measure_nn_rating(o);
    if (a.threads > 1) {
      std::string md = fmt::format(
          "Host: {}; {}; {} threads emulated on {} host CPUs, warm-up {} and {} timed "
          "inferences per graph.\n\n"
          "| device | emulated | graphs | median \\|err\\| | geometric mean error | Kendall tau | "
          "board's speed-up over 1 thread | emulation's |\n|---|---|---|---|---|---|---|---|\n",
          host.cpu_model, host.runtime, a.threads, host_facts().cpus.size(), a.warmup, a.loops);
      for (const Device& d : catalog_devices()) {
        if (d.sources.count("nn") == 0 || d.sources.at("nn").status != "measured") continue;
        if (!a.devices.empty() &&
            std::find(a.devices.begin(), a.devices.end(), d.name) == a.devices.end()) {
          continue;
        }
        fmt::print(stderr, "emulating {} with {} threads ...\n", d.name, a.threads);
        try {
          md += measure_threads(d, host, dir, a, only, int(host_facts().cpus.size()));
        } catch (const UnsupportedError& e) {
          fmt::print(stderr, "  skipped: {}\n", e.what());
          md += fmt::format("| {} | skipped: {} |||||||\n", d.name, e.what());
        }
      }
      fmt::print("{}", md);
      if (!a.markdown.empty()) std::ofstream(a.markdown) << md;
      std::filesystem::remove_all(dir);
      return 0;
    }
    std::vector<Row> rows;
    std::vector<std::string> skipped;  // devices this host cannot emulate, with why
    for (const Device& d : catalog_devices()) {
      if (d.nn_ms.empty() || d.sources.count("nn") == 0 ||
          d.sources.at("nn").status != "measured") {
        continue;
      }
      if (!a.devices.empty() &&
          std::find(a.devices.begin(), a.devices.end(), d.name) == a.devices.end()) {
        continue;
      }
      fmt::print(stderr, "emulating {} ...\n", d.name);
      try {
        rows.push_back(measure_device(d, host, dir, a, only));
      } catch (const UnsupportedError& e) {
        // A device faster than one host core at its nn speed (the Pi 5 on a slow or busy
        // host): nothing to emulate here; said, not fatal.
        fmt::print(stderr, "  skipped: {}\n", e.what());
        skipped.push_back(fmt::format("{}: {}", d.name, e.what()));
        continue;
      }
      const Row& r = rows.back();
      fmt::print(stderr, "  nn speed {:.4f}: median error {}, worst {}, tau {:.2f}; held out {}\n",
                 r.speed, pct(r.median), pct(r.worst), r.tau, pct(r.held_median));
    }
    std::string md = fmt::format(
        "Host: {}; {}; this host's rating with warm-up {} and {} timed inferences per graph, "
        "the emulated runs with warm-up {} and {}; one thread.\n\n"
        "| device | precision | graphs | nn speed | median \\|err\\| | worst | Kendall tau | "
        "held-out median (worst) | integer speed's median \\|err\\| |\n"
        "|---|---|---|---|---|---|---|---|---|\n",
        host.cpu_model, host.runtime, o.warmup, o.loops, a.warmup, a.loops);
    for (const Row& r : rows) {
      md += fmt::format("| {} | {} | {} | {:.4f} | {} | {} | {:.2f} | {} ({}, {} graphs) | {} |\n",
                        r.device, r.precision, r.graphs, r.speed, pct(r.median), pct(r.worst),
                        r.tau, pct(r.held_median), pct(r.held_worst), r.held,
                        pct(r.integer_median));
    }
    for (const std::string& why : skipped) md += "\nSkipped " + why + "\n";
    md += "\nPer graph, emulated / published - 1:\n\n| device |";
    std::vector<std::string> names;
    for (const auto& g : reference_graphs()) {
      if (only.empty() || std::count(only.begin(), only.end(), g.name)) names.push_back(g.name);
    }
    for (const auto& n : names) md += " " + n + " |";
    md += "\n|---|";
    for (std::size_t i = 0; i < names.size(); ++i) md += "---|";
    md += "\n";
    for (const Row& r : rows) {
      md += "| " + r.device + " |";
      for (const auto& n : names) {
        md += r.errors.count(n) ? fmt::format(" {:+.0f}% |", 100 * r.errors.at(n)) : " |";
      }
      md += "\n";
    }
    fmt::print("{}", md);
    if (!a.markdown.empty()) std::ofstream(a.markdown) << md;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_nn: {}\n", e.what());
    std::filesystem::remove_all(dir);
    return 1;
  }
  std::filesystem::remove_all(dir);
  return 0;
}
