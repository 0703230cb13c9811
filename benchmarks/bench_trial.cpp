// edgeprof_bench_trial: what edgeprof adds to one trial (issue 5). Results: docs/benchmarks.md.
//
// A hyper-parameter search scores each trial by running a workload on an emulated device, one
// fresh slice per trial (edgeprof::run). This program measures, per trial, how much wall time
// and CPU that costs against running the same command without edgeprof:
//
//   baseline   posix_spawn + waitpid of the command, no cgroup;
//   run        edgeprof::run(command, device): plan, slice creation with the device's limits,
//              spawn into the slice, the sampler (at 10 ms, the default; also 1 and 100 ms and
//              none), wait, the result and its summary, removal of the slice;
//   steps      the same through the public API with a clock between the steps: the Slice
//              constructor, Slice::spawn (split by Result::wall_time_s at the child's exec),
//              Child::wait and the Slice destructor; also on a host-sized device (no emulated
//              slowdown, so what is left is edgeprof's own).
//
// Wall time is a steady clock around the whole trial; CPU is this process's getrusage
// (RUSAGE_SELF, every thread: the sampler and the bookkeeping, not the workload), and the
// workload's own CPU is RUSAGE_CHILDREN. Workloads: /bin/true, and this program re-executed
// with --spin N, a single-threaded loop of N iterations calibrated at start to about 50 ms and
// 1 s of CPU (a fixed amount of work, so a slowdown shows as time). The variants take turns, the
// order rotating every repetition, after unrecorded warm-up rounds.
//
// Needs root. Every slice is made by edgeprof beneath this process's own cgroups and removed by
// Slice's destructor, also after Ctrl-C, SIGTERM or SIGHUP (the wait is interrupted and
// unwinds); after SIGKILL the workload dies with the program (PR_SET_PDEATHSIG) and the next
// Slice created removes the slice left behind.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "edgeprof/edgeprof.hpp"

extern char** environ;

namespace {

using namespace bench;

constexpr const char* kTrue = "/bin/true";
constexpr const char* kSpinFlag = "--spin";
constexpr double kSpinSeconds = 0.05;

// ---------------------------------------------------------------------------------- workload

// The spin workload's loop: what the child runs (this program with --spin N) and what the
// calibration times in this process.
void spin(std::uint64_t iterations) {
  volatile std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) x = x + i;
}

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Iterations of spin() that take about `seconds` of CPU here: the median of five runs after a
// warm-up one, timed on this thread's CPU clock so that other processes on a shared host do not
// stretch it (the workload is a fixed amount of work; their wall time is measured as it comes).
std::uint64_t iterations_for(double seconds) {
  constexpr std::uint64_t kProbe = 50'000'000;
  std::vector<double> took;
  for (int i = 0; i < 6; ++i) {
    const double t0 = thread_cpu_s();
    spin(kProbe);
    if (i > 0) took.push_back(thread_cpu_s() - t0);
  }
  return static_cast<std::uint64_t>(seconds / quantile_of(took, 0.5) * double(kProbe));
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw BenchError(fmt::format("readlink /proc/self/exe: {}", std::strerror(errno)));
  return std::string(buf, static_cast<size_t>(n));
}

struct Workload {
  std::string label;  // "/bin/true", "spin 50 ms of CPU"
  std::vector<std::string> argv;
  int reps = 0;
};

// ---------------------------------------------------------------------------------- clocks

struct Usage {
  double self_ms = 0;      // this process, every thread (RUSAGE_SELF)
  double children_ms = 0;  // reaped children (RUSAGE_CHILDREN)
};

double cpu_ms(const rusage& u) {
  auto ms = [](const timeval& tv) { return double(tv.tv_sec) * 1e3 + double(tv.tv_usec) / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

Usage usage_now() {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return {cpu_ms(self), cpu_ms(children)};
}

double ms_between(Clock::time_point a, Clock::time_point b) { return us_between(a, b) / 1000.0; }

// ---------------------------------------------------------------------------------- trials

// One trial as measured from outside.
struct Sample {
  double wall_ms = 0;
  double self_cpu_ms = 0;
  double workload_cpu_ms = 0;
  // edgeprof variants: what the Result says.
  double workload_wall_ms = 0;  // Result::wall_time_s
  double throttled_ms = 0;
  double samples = 0;
  std::string placement;
};

// The steps of a trial through the public API (wall ms and this process's CPU ms each).
struct Steps {
  struct Step {
    std::string name;
    std::vector<double> wall_ms, cpu_ms;
  };
  std::vector<Step> steps;
  void add(size_t i, const std::string& name, double wall, double cpu) {
    if (steps.size() <= i) steps.resize(i + 1);
    steps[i].name = name;
    steps[i].wall_ms.push_back(wall);
    steps[i].cpu_ms.push_back(cpu);
  }
};

// posix_spawn + waitpid; throws unless the command exits 0.
void spawn_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc != 0) throw BenchError(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    check_stop();
    throw BenchError(
        fmt::format("{} (posix_spawn) did not exit 0: wait status {}", argv[0], status));
  }
}

void check_result(const edgeprof::Result& r) {
  if (r.ok()) return;
  check_stop();
  throw BenchError("the workload did not succeed under edgeprof: " + edgeprof::to_text(r));
}

// What the Result says (the outside figures are filled in by measure()).
Sample sample_of(const edgeprof::Result& r) {
  check_result(r);
  Sample s;
  s.workload_wall_ms = r.wall_time_s * 1e3;
  s.throttled_ms = r.throttled_s * 1e3;
  s.samples = double(r.summary.samples);
  s.placement = r.placement;
  return s;
}

// Runs `trial` and measures it from outside.
template <typename Trial>
Sample measure(Trial&& trial) {
  const Usage u0 = usage_now();
  const auto t0 = Clock::now();
  Sample s = trial();
  const auto t1 = Clock::now();
  const Usage u1 = usage_now();
  s.wall_ms = ms_between(t0, t1);
  s.self_cpu_ms = u1.self_ms - u0.self_ms;
  s.workload_cpu_ms = u1.children_ms - u0.children_ms;
  return s;
}

// One trial through the public API with the clock and getrusage read between the steps;
// records them into `steps` unless it is null (warm-up).
Sample stepwise_trial(const edgeprof::Command& cmd, const edgeprof::Device& device,
                      const edgeprof::InterruptCheck& check, Steps* steps) {
  const Usage u0 = usage_now();
  const auto t0 = Clock::now();
  Clock::time_point t1, t2, t3;
  Usage u1, u2, u3;
  edgeprof::Result r;
  {
    edgeprof::Slice slice(device);
    t1 = Clock::now();
    u1 = usage_now();
    edgeprof::Child child = slice.spawn(cmd);
    t2 = Clock::now();
    u2 = usage_now();
    r = child.wait(std::nullopt, check);
    t3 = Clock::now();
    u3 = usage_now();
  }
  const auto t4 = Clock::now();
  const Usage u4 = usage_now();
  const Sample s = sample_of(r);
  if (!steps) return s;
  const double total_ms = ms_between(t0, t4);
  const double spawn_ms = ms_between(t1, t2);
  // When the child exec'd, on this clock: Child::wait returns within tens of microseconds of
  // the exit (the /bin/true trials), so the exec was Result::wall_time_s before that.
  const double to_exec_ms = ms_between(t1, t3) - s.workload_wall_ms;
  const double none = std::nan("");
  steps->add(0, "Slice constructor (plan, create, limits)", ms_between(t0, t1),
             u1.self_ms - u0.self_ms);
  steps->add(1, "Slice::spawn (starts the sampler, places the child)", spawn_ms,
             u2.self_ms - u1.self_ms);
  steps->add(2, "  until the child's exec (estimated)", to_exec_ms, none);
  steps->add(3, "  then until spawn returns (this thread wakes up)", spawn_ms - to_exec_ms, none);
  steps->add(4, "Child::wait (stops the sampler, the result)", ms_between(t2, t3),
             u3.self_ms - u2.self_ms);
  steps->add(5, "~Slice (kill_all, remove)", ms_between(t3, t4), u4.self_ms - u3.self_ms);
  steps->add(6, "total", total_ms, u4.self_ms - u0.self_ms);
  steps->add(7, "Result::wall_time_s (the workload, exec to exit)", s.workload_wall_ms, none);
  steps->add(8, "total - Result::wall_time_s", total_ms - s.workload_wall_ms, none);
  return s;
}

struct Variant {
  std::string name;
  std::function<Sample()> trial;
  std::optional<int> interval_ms;  // edgeprof's sampling interval; 0 = none
};

// The variants of one workload: the baseline first, then edgeprof::run at each interval, then
// the step-by-step trial at the default interval (recording into `steps`).
std::vector<Variant> variants_for(const Workload& w, const edgeprof::Device& device,
                                  Steps*& steps) {
  edgeprof::Command cmd;
  cmd.argv = w.argv;
  const edgeprof::InterruptCheck check = [] { check_stop(); };
  std::vector<Variant> out;
  out.push_back({"posix_spawn + waitpid (baseline)",
                 [argv = w.argv] {
                   spawn_and_wait(argv);
                   return Sample{};
                 },
                 std::nullopt});
  for (int ms : {10, 1, 100, 0}) {
    edgeprof::RunOptions options;
    options.spawn.sample_interval = std::chrono::milliseconds(ms);
    options.check = check;
    const std::string name =
        ms == 10  ? std::string("edgeprof::run, sampling every 10 ms (the default)")
        : ms == 0 ? std::string("edgeprof::run, no sampling (sample_interval 0)")
                  : fmt::format("edgeprof::run, sampling every {} ms", ms);
    out.push_back({name, [=] { return sample_of(edgeprof::run(cmd, device, options)); }, ms});
  }
  // A device as large as this host: no emulated slowdown, so what is left is edgeprof's own.
  const int cpus = std::max(1, static_cast<int>(edgeprof::host_facts().cpus.size()));
  const edgeprof::Device host_sized = edgeprof::make_device("host-sized", cpus, 1.0, "1GiB");
  edgeprof::RunOptions options;
  options.check = check;
  out.push_back({fmt::format("edgeprof::run, host-sized device ({} cores x 1.0), 10 ms", cpus),
                 [=] { return sample_of(edgeprof::run(cmd, host_sized, options)); }, std::nullopt});
  out.push_back({"Slice + spawn + wait + ~Slice, step by step (10 ms)",
                 [cmd, device, check, &steps] { return stepwise_trial(cmd, device, check, steps); },
                 10});
  return out;
}

// Runs every variant `reps` times, the order rotating every repetition.
std::vector<std::vector<Sample>> interleave(const std::vector<Variant>& variants, int reps) {
  std::vector<std::vector<Sample>> out(variants.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < variants.size(); ++k) {
      check_stop();
      const size_t i = (static_cast<size_t>(rep) + k) % variants.size();
      out[i].push_back(measure(variants[i].trial));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------- tables

std::string fmt_ms(double ms) {
  if (std::isnan(ms)) return "";
  const double a = std::abs(ms);
  if (a >= 100) return fmt::format("{:.0f}", ms);
  if (a >= 10) return fmt::format("{:.1f}", ms);
  if (a >= 1) return fmt::format("{:.2f}", ms);
  return fmt::format("{:.3f}", ms);
}
std::string fmt_diff(double ms) { return (ms >= 0 ? "+" : "") + fmt_ms(ms); }
std::string fmt_ratio(double r) { return fmt::format("{:.2f}x", r); }

template <typename Field>
std::vector<double> column(const std::vector<Sample>& samples, Field field) {
  std::vector<double> out;
  for (const Sample& s : samples) out.push_back(field(s));
  return out;
}
double p90(std::vector<double> v) { return quantile_of(std::move(v), 0.9); }

const auto kWall = [](const Sample& s) { return s.wall_ms; };
const auto kSelf = [](const Sample& s) { return s.self_cpu_ms; };
const auto kChildren = [](const Sample& s) { return s.workload_cpu_ms; };

// Per trial: every variant against the baseline (row 0).
Table trial_table(const Workload& w, const edgeprof::Device& device, edgeprof::CgroupMode mode,
                  const std::vector<Variant>& variants,
                  const std::vector<std::vector<Sample>>& samples) {
  Table t{fmt::format("Per trial: {} on {} ({})", w.label, device.name, edgeprof::to_string(mode)),
          {"variant", "n", "wall median ms", "wall p90 ms", "wall - baseline ms", "wall / baseline",
           "workload's own wall ms", "throttled ms", "own CPU median ms", "own CPU p90 ms",
           "own CPU - baseline ms", "workload CPU ms"},
          {},
          {}};
  const double base_wall = median(column(samples[0], kWall));
  const double base_cpu = median(column(samples[0], kSelf));
  for (size_t i = 0; i < variants.size(); ++i) {
    const auto wall = column(samples[i], kWall);
    const auto cpu = column(samples[i], kSelf);
    const bool base = i == 0;
    auto result = [&](auto field) { return base ? "" : fmt_ms(median(column(samples[i], field))); };
    t.rows.push_back({variants[i].name, std::to_string(samples[i].size()), fmt_ms(median(wall)),
                      fmt_ms(p90(wall)), base ? "" : fmt_diff(median(wall) - base_wall),
                      base ? "" : fmt_ratio(median(wall) / base_wall),
                      result([](const Sample& s) { return s.workload_wall_ms; }),
                      result([](const Sample& s) { return s.throttled_ms; }), fmt_ms(median(cpu)),
                      fmt_ms(p90(cpu)), base ? "" : fmt_diff(median(cpu) - base_cpu),
                      fmt_ms(median(column(samples[i], kChildren)))});
  }
  const std::vector<Sample>& run10 = samples[1];
  t.notes.push_back(fmt::format(
      "Medians; differences and ratios are of the medians. Workload's own wall: "
      "Result::wall_time_s (exec to exit); throttled: Result::throttled_s (the device's CPU "
      "quota at work, not edgeprof's overhead). Own CPU: getrusage(RUSAGE_SELF) of this process "
      "(every thread: the sampler and the bookkeeping, not the workload); workload CPU: "
      "RUSAGE_CHILDREN. Placement: \"{}\"; samples per trial at 10 ms: {} (median).",
      run10.empty() ? "" : run10.front().placement,
      median(column(run10, [](const Sample& s) { return s.samples; }))));
  return t;
}

// Where the step-by-step trial's wall time and CPU go.
Table steps_table(const Workload& w, const Steps& steps, const std::vector<Sample>& baseline) {
  Table t{fmt::format("Where a trial goes: {}, step by step (10 ms)", w.label),
          {"step", "n", "wall median ms", "wall p90 ms", "share of median", "own CPU median ms"},
          {},
          {}};
  double total = 0;
  for (const Steps::Step& s : steps.steps) {
    if (s.name == "total") total = median(s.wall_ms);
  }
  bool after_total = false;
  for (const Steps::Step& s : steps.steps) {
    const bool sub = s.name.rfind("  ", 0) == 0;
    const bool is_total = s.name == "total";
    const double cpu =
        s.cpu_ms.empty() || std::isnan(s.cpu_ms.front()) ? std::nan("") : median(s.cpu_ms);
    t.rows.push_back({s.name, std::to_string(s.wall_ms.size()), fmt_ms(median(s.wall_ms)),
                      fmt_ms(p90(s.wall_ms)),
                      total > 0 && !is_total && !sub && !after_total
                          ? fmt::format("{:.0f}%", 100.0 * median(s.wall_ms) / total)
                          : "",
                      fmt_ms(cpu)});
    after_total = after_total || is_total;
  }
  t.rows.push_back({"posix_spawn + waitpid (the baseline, same run)",
                    std::to_string(baseline.size()), fmt_ms(median(column(baseline, kWall))),
                    fmt_ms(p90(column(baseline, kWall))), "",
                    fmt_ms(median(column(baseline, kSelf)))});
  t.notes.push_back(
      "Result::wall_time_s runs from the child's clock read just before execve (inside "
      "Slice::spawn) to its exit (inside Child::wait). Slice::spawn is split taking the exec "
      "to be Result::wall_time_s before Child::wait returned: the second part is then this "
      "thread's wake-up after the exec less wait's own work after the exit, and negative where "
      "that work takes longer (tens of microseconds). "
      "Each row is the median of its own column, so the rows need not add up.");
  return t;
}

// Below this many samples a trial's sampler CPU is mostly the thread's start and its first and
// final samples: no rate per second of workload is given.
constexpr double kSteadySamples = 10;

// The sampler's part: each interval against edgeprof::run without sampling, same run.
void sampler_rows(const Workload& w, const std::vector<Variant>& variants,
                  const std::vector<std::vector<Sample>>& samples, Table& t) {
  std::optional<size_t> none;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].interval_ms == 0) none = i;
  }
  if (!none) return;
  const double wall0 = median(column(samples[*none], kWall));
  const double cpu0 = median(column(samples[*none], kSelf));
  for (int ms : {1, 10, 100}) {
    for (size_t i = 0; i < variants.size(); ++i) {
      // The edgeprof::run rows only (the step-by-step row also samples at 10 ms).
      if (variants[i].interval_ms != ms || variants[i].name.rfind("edgeprof::run", 0) != 0) {
        continue;
      }
      const double n = median(column(samples[i], [](const Sample& s) { return s.samples; }));
      const double cpu = median(column(samples[i], kSelf)) - cpu0;
      const double workload_s =
          median(column(samples[i], [](const Sample& s) { return s.workload_wall_ms; })) / 1e3;
      t.rows.push_back({w.label, fmt::format("{} ms", ms), fmt::format("{:.0f}", n),
                        fmt_diff(median(column(samples[i], kWall)) - wall0), fmt_diff(cpu),
                        n > 0 ? fmt::format("{:.0f}", 1e3 * cpu / n) : "",
                        n >= kSteadySamples && workload_s > 0
                            ? fmt::format("{:.2f}%", 0.1 * cpu / workload_s)
                            : ""});
    }
  }
}

// ---------------------------------------------------------------------------------- main

struct Options {
  int reps_true = 200;
  int reps_spin = 60;
  int reps_long = 10;
  double long_s = 1.0;
  std::string device = "raspberry-pi-4";
  bool quick = false;
  std::string markdown;
  std::string command_line;
};

void usage(FILE* to) {
  std::fprintf(to,
               "usage: edgeprof_bench_trial [--quick] [--reps-true N] [--reps-spin N]\n"
               "                            [--reps-long N] [--long-seconds S]\n"
               "                            [--device NAME] [--markdown FILE]\n"
               "\n"
               "Measures what edgeprof adds to one trial: edgeprof::run (a fresh slice, the\n"
               "sampler, the result, removal) against posix_spawn + waitpid of the same command,\n"
               "in wall time and in this process's CPU, step by step, and at sampling intervals\n"
               "of 1, 10 and 100 ms (see docs/benchmarks.md). Needs root.\n"
               "\n"
               "  --reps-true N      repetitions with /bin/true (default 200)\n"
               "  --reps-spin N      repetitions with a 50 ms spin (default 60)\n"
               "  --reps-long N      repetitions with the long spin (default 10; 0 = leave out)\n"
               "  --long-seconds S   length of the long spin (default 1)\n"
               "  --device NAME      the built-in device to emulate (default raspberry-pi-4)\n"
               "  --quick            a smoke run: 5 / 3 / 0 repetitions\n"
               "  --markdown FILE    also write the tables as Markdown to FILE\n"
               "\n"
               "Exit status: 0 done, 1 error, 2 usage, 77 cannot run here (not root, no\n"
               "cgroups), 130 interrupted (after cleaning up).\n");
}

const bench::Cli kCli{"edgeprof_bench_trial", usage};

Options parse_options(int argc, char** argv) {
  Options o;
  o.command_line = command_line(argc, argv);
  bool given[3] = {false, false, false};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--reps-true") {
      o.reps_true = static_cast<int>(kCli.number(a, value(), 1, 100000));
      given[0] = true;
    } else if (a == "--reps-spin") {
      o.reps_spin = static_cast<int>(kCli.number(a, value(), 1, 100000));
      given[1] = true;
    } else if (a == "--reps-long") {
      o.reps_long = static_cast<int>(kCli.number(a, value(), 0, 100000));
      given[2] = true;
    } else if (a == "--long-seconds") {
      o.long_s = kCli.number(a, value(), 0.1, 600);
    } else if (a == "--device") {
      const char* v = value();
      if (!v || !*v) kCli.fail("--device wants a built-in device name (edgeprof devices)");
      o.device = v;
    } else {
      kCli.shared_option(a, value, o.markdown);
    }
  }
  if (o.quick) {
    if (!given[0]) o.reps_true = 5;
    if (!given[1]) o.reps_spin = 3;
    if (!given[2]) o.reps_long = 0;
  }
  return o;
}

std::string seconds_label(double s) {
  return s < 1 ? fmt::format("{:.0f} ms", s * 1e3) : fmt::format("{:g} s", s);
}

int run(const Options& o) {
  if (::geteuid() != 0) {
    throw CannotRun(
        "needs root: it creates a slice per trial beneath its own cgroups (run it "
        "with sudo)");
  }
  if (::access("/sys/fs/cgroup", F_OK) != 0) throw CannotRun("/sys/fs/cgroup is not mounted");
  const edgeprof::Device device = edgeprof::builtin_device(o.device);

  // The first use of the library in a process discovers the cgroup layout, once: outside the
  // trials, as in a search that runs many of them.
  const auto d0 = Clock::now();
  const edgeprof::CgroupMode mode = edgeprof::cgroup_mode();
  const double discovery_ms = ms_between(d0, Clock::now());
  const edgeprof::EmulationPlan plan = edgeprof::Slice(device).plan();

  const std::string exe = self_exe();
  std::vector<Workload> workloads;
  workloads.push_back({kTrue, {kTrue}, o.reps_true});
  const std::uint64_t spin_n = iterations_for(kSpinSeconds);
  workloads.push_back({fmt::format("spin {} of CPU", seconds_label(kSpinSeconds)),
                       {exe, kSpinFlag, std::to_string(spin_n)},
                       o.reps_spin});
  if (o.reps_long > 0) {
    const auto long_n = static_cast<std::uint64_t>(double(spin_n) * o.long_s / kSpinSeconds);
    workloads.push_back({fmt::format("spin {} of CPU", seconds_label(o.long_s)),
                         {exe, kSpinFlag, std::to_string(long_n)},
                         o.reps_long});
  }

  Report report;
  report.program = "edgeprof_bench_trial";
  report.escape_cells = true;
  report.preamble = machine_lines(o.command_line);
  report.preamble.push_back(
      fmt::format("device: {} ({} cores x {} speed, {}): cpuset {}, quota {}/{} us", device.name,
                  device.cores, device.core_speed, edgeprof::format_size(device.memory_bytes),
                  edgeprof::format_cpu_list(plan.cpus), plan.cpu_quota_us, plan.cpu_period_us));
  report.preamble.push_back(fmt::format(
      "workloads: {} ({} repetitions); `{} {} N`, a single-threaded loop, N = {} iterations "
      "(about {} of CPU here, {} repetitions){}",
      kTrue, o.reps_true, "edgeprof_bench_trial", kSpinFlag, spin_n, seconds_label(kSpinSeconds),
      o.reps_spin,
      o.reps_long > 0
          ? fmt::format(", and {} times N ({} repetitions)", o.long_s / kSpinSeconds, o.reps_long)
          : std::string()));
  report.preamble.push_back(fmt::format(
      "first use of the library in the process (cgroup layout discovery): {:.2f} ms, once",
      discovery_ms));
  report.preamble.push_back(fmt::format("load average at the start: {}", loadavg()));
  std::printf("edgeprof_bench_trial\n");
  for (const auto& line : report.preamble) std::printf("  %s\n", line.c_str());
  std::fflush(stdout);

  Table sampler{"The sampler's part: edgeprof::run at each interval against no sampling",
                {"workload", "interval", "samples per trial", "wall - no sampling ms",
                 "own CPU - no sampling ms", "own CPU per sample us",
                 "own CPU, % of one core over the workload"},
                {},
                {}};
  for (size_t k = 0; k < workloads.size(); ++k) {
    const Workload& w = workloads[k];
    Steps steps;
    Steps* record = nullptr;
    const std::vector<Variant> variants = variants_for(w, device, record);
    std::printf("\n[%zu/%zu] %s: %d repetitions of %zu variants (interleaved)...\n", k + 1,
                workloads.size(), w.label.c_str(), w.reps, variants.size());
    std::fflush(stdout);
    interleave(variants, o.quick || w.reps < 20 ? 1 : 2);  // warm-up, not recorded
    record = &steps;
    const auto samples = interleave(variants, w.reps);
    report.add(trial_table(w, device, mode, variants, samples));
    report.add(steps_table(w, steps, samples[0]));
    sampler_rows(w, variants, samples, sampler);
  }
  sampler.notes.push_back(
      "Differences of medians against edgeprof::run with sample_interval 0 (same run), which "
      "still reads the end-of-run counters. The % column divides the CPU difference by the "
      "workload's own wall time (Result::wall_time_s); it is left blank below 10 samples per "
      "trial, where starting the thread and the first and final samples dominate.");
  report.add(std::move(sampler));

  finish(report, o.markdown);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The spin workload: this program re-executed by the trials.
  if (argc == 3 && std::strcmp(argv[1], kSpinFlag) == 0) {
    spin(std::strtoull(argv[2], nullptr, 10));
    return 0;
  }
  const Options o = parse_options(argc, argv);
  return bench::guarded_main("edgeprof_bench_trial", "interrupted (cleaned up)",
                             [&] { return run(o); });
}
