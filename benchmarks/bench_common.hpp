// bench_common.hpp: helpers shared by the benchmark programs (bench_spawn.cpp, bench_sampler.cpp):
// clock helpers, the error types and the stop-signal handling (SIGINT/SIGTERM/SIGHUP set a flag
// that check_stop() turns into Interrupted), string and quantile helpers, the result tables
// (printed as text, written as Markdown for docs/benchmarks.md), the machine lines of a report's
// preamble and main()'s exit statuses. Not part of the library.
#pragma once

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "edgeprof/edgeprof.hpp"
#include "suite/microbench_detail.hpp"
#include "sys/stats.hpp"

namespace bench {

// ---------------------------------------------------------------------------------- time

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
inline double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// ------------------------------------------------------------------------------ errors, signals

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A scratch directory under /tmp (`/tmp/<prefix>-XXXXXX`), removed with what is in it when it
// goes out of scope, on errors too.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      throw BenchError(fmt::format("cannot create a directory {}: {}", pattern,
                                   std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
// The benchmark cannot run here at all (not root, no cgroups): exit 77, "skipped".
struct CannotRun : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Thrown between repetitions and from waits once SIGINT/SIGTERM/SIGHUP arrived, to unwind and
// clean up.
struct Interrupted {};

inline volatile std::sig_atomic_t g_stop = 0;
inline void on_stop_signal(int) { g_stop = 1; }
inline void check_stop() {
  if (g_stop) throw Interrupted{};
}

inline void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

// Sleeps `seconds`, in steps short enough to notice a stop signal.
inline void sleep_checked(double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
  for (auto now = Clock::now(); now < until; now = Clock::now()) {
    check_stop();
    std::this_thread::sleep_for(
        std::min<Clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
}

// ---------------------------------------------------------------------------------- strings

inline std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? s.npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// ---------------------------------------------------------------------------------- statistics

// Quantile q of `v` (0 when empty): the library's order statistic (src/sys/stats.hpp, numpy's
// linear interpolation), as the reports' figures use.
inline double quantile(const std::vector<double>& v, double q) {
  return v.empty() ? 0 : edgeprof::detail::percentile(v, q);
}
inline double quantile_of(const std::vector<double>& v, double q) { return quantile(v, q); }
inline double median(const std::vector<double>& v) { return quantile(v, 0.5); }

// ---------------------------------------------------------------------------------- tables

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // printed under the table
};

inline std::string render_text(const Table& t) {
  std::vector<size_t> width(t.header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  measure(t.header);
  for (const auto& row : t.rows) measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = " ";
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      out += i == 0 ? cell + pad : "  " + pad + cell;
    }
    return out + "\n";
  };
  std::string out = "\n" + t.title + "\n" + std::string(t.title.size(), '-') + "\n";
  out += line(t.header);
  for (const auto& row : t.rows) out += line(row);
  for (const auto& note : t.notes) out += "  " + note + "\n";
  return out;
}

inline std::string md_cell(const std::string& s) {
  // Markdown drops leading spaces: indented (sub-)rows get a visible marker instead.
  if (s.rfind("  ", 0) == 0) return "&emsp;↳ " + md_cell(s.substr(2));
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

// The table as Markdown; with `escape_cells` through md_cell, else the cells as they are.
inline std::string render_markdown(const Table& t, bool escape_cells) {
  auto cells = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (const std::string& c : row) out += " " + (escape_cells ? md_cell(c) : c) + " |";
    return out + "\n";
  };
  std::string out = "#### " + t.title + "\n\n" + cells(t.header) + "|";
  for (size_t i = 0; i < t.header.size(); ++i) out += i == 0 ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& row : t.rows) out += cells(row);
  if (!t.notes.empty()) out += "\n";
  for (const auto& note : t.notes) out += "- " + note + "\n";
  return out + "\n";
}

// The tables of a run: printed as they come, written as Markdown at the end.
struct Report {
  std::string program;        // named in the Markdown's first line
  bool escape_cells = false;  // see render_markdown
  std::vector<std::string> preamble;
  std::vector<Table> tables;

  void add(Table t) {
    std::fputs(render_text(t).c_str(), stdout);
    std::fflush(stdout);
    tables.push_back(std::move(t));
  }
  std::string markdown() const {
    std::string out = "<!-- written by " + program + " --markdown -->\n\n";
    for (const auto& p : preamble) out += "- " + p + "\n";
    out += "\n";
    for (const auto& t : tables) out += render_markdown(t, escape_cells);
    return out;
  }
};

// The first line of /proc/loadavg, or "?".
inline std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line.empty() ? "?" : line;
}

// The program's command line as one string, for the report's preamble.
inline std::string command_line(int argc, char** argv) {
  return fmt::format("{}", fmt::join(std::vector<std::string>(argv, argv + argc), " "));
}

// Ends a report: the load average at the end, and the Markdown file when `markdown` names one.
inline void finish(Report& report, const std::string& markdown) {
  report.preamble.push_back(fmt::format("load average at the end: {}", loadavg()));
  std::printf("\n  load average at the end: %s\n", loadavg().c_str());
  if (!markdown.empty()) {
    std::ofstream out(markdown);
    out << report.markdown();
    if (!out) throw BenchError(fmt::format("cannot write {}", markdown));
    std::printf("\nwrote %s\n", markdown.c_str());
  }
}

// The first lines of a report's preamble: when, on what machine, and the command line.
inline std::vector<std::string> machine_lines(const std::string& command_line) {
  std::vector<std::string> out;
  const edgeprof::detail::HostIdentity host = edgeprof::detail::host_identity();
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  out.push_back(
      fmt::format("run: {}{}", date, std::getenv("EDGEPROF_IN_VM") ? " (inside the qemu VM)" : ""));
  out.push_back(fmt::format("machine: {} CPUs ({}), kernel {}, cgroups {}",
                            std::thread::hardware_concurrency(), host.cpu_model, host.kernel,
                            edgeprof::to_string(edgeprof::cgroup_mode())));
  out.push_back(fmt::format("command: `{}`", command_line));
  return out;
}

// ------------------------------------------------------------------------------ options

// What a benchmark's option parser reports a bad argument with: its name and usage text.
struct Cli {
  const char* program;
  void (*print)(FILE*);

  // Prints the problem and the usage to stderr and exits 2.
  [[noreturn]] void fail(const std::string& what) const {
    std::fprintf(stderr, "%s: %s\n", program, what.c_str());
    print(stderr);
    std::exit(2);
  }

  // The number `value` of option `flag`, which must lie in [lo, hi]; fails otherwise.
  double number(const std::string& flag, const char* value, double lo, double hi) const {
    char* end = nullptr;
    const double x = value ? std::strtod(value, &end) : 0;
    if (!value || *end != '\0' || !(x >= lo && x <= hi)) {
      fail(fmt::format("{} wants a number from {} to {}, not '{}'", flag, lo, hi,
                       value ? value : ""));
    }
    return x;
  }

  // The options every benchmark shares, tried after its own: --markdown FILE (into
  // `markdown`) and -h/--help; anything else is an unknown argument (exit 2).
  template <typename Value>
  void shared_option(const std::string& flag, Value&& value, std::string& markdown) const {
    if (flag == "--markdown") {
      const char* v = value();
      if (!v) fail("--markdown wants a file name");
      markdown = v;
    } else if (flag == "-h" || flag == "--help") {
      print(stdout);
      std::exit(0);
    } else {
      fail(fmt::format("unknown argument '{}'", flag));
    }
  }
};

// ---------------------------------------------------------------------------------- main

// Installs the stop-signal handlers and runs `run`, turning what it throws into the exit
// status: 77 cannot run here, 130 interrupted (`interrupted` is the message), 1 error.
template <typename Run>
int guarded_main(const char* program, const char* interrupted, Run&& run) {
  install_signal_handlers();
  try {
    return run();
  } catch (const CannotRun& e) {
    std::fprintf(stderr, "%s: cannot run here: %s\n", program, e.what());
    return 77;
  } catch (const Interrupted&) {
    std::fprintf(stderr, "%s: %s\n", program, interrupted);
    return 130;
  } catch (const edgeprof::PermissionDenied& e) {
    std::fprintf(stderr, "%s: permission denied: %s\n", program, e.what());
    return 77;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace bench
