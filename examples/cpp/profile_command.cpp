// profile_command: run one command on an emulated edge device and report what it cost.
//
//   profile_command [--device NAME] [--timeout SECONDS] [--json] -- COMMAND [ARGS...]
//
// This example shows the whole edgeprof C++ workflow in one place:
//   * pick a built-in device by name (edgeprof::builtin_device),
//   * create a Slice for it: the cgroup(s) with the device's CPU and memory limits, removed
//     again when the Slice is destroyed,
//   * spawn the command inside the slice and wait for it, with an optional timeout,
//   * print the measured Result with edgeprof::to_text or edgeprof::to_json,
//   * map every edgeprof::Error to a one-line message, and exit the way a shell would.
//
// The workload inherits this program's stdin, stdout and stderr; the report is printed on
// stdout after the workload has ended (with --json it is a single line: the last one).
//
// Exit status: the workload's exit code, or 128 + the signal that ended it (so 137 when it was
// killed at the timeout or by the OOM killer); 2 when edgeprof itself failed (unknown device,
// command not found, no permission to create cgroups...) or the arguments were wrong.

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <edgeprof/edgeprof.hpp>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kProgram = "profile_command";
constexpr int kExitFailure = 2;  // like grep and diff: 2 = the tool itself failed

struct Options {
  std::string device = "raspberry-pi-4";
  std::optional<std::chrono::duration<double>> timeout;
  bool json = false;
  std::vector<std::string> command;
};

// A mistake on the command line: reported together with the usage.
struct UsageError {
  std::string message;
};

constexpr const char* kUsage =
    "usage: profile_command [--device NAME] [--timeout SECONDS] [--json] -- COMMAND [ARGS...]";

void print_help() {
  std::cout
      << kUsage << "\n\n"
      << "Runs COMMAND inside cgroups that emulate an edge device and reports what it used.\n\n"
      << "  --device NAME      built-in device to emulate (default raspberry-pi-4), one of:\n";
  for (const edgeprof::Device& d : edgeprof::builtin_devices()) {
    std::cout << "                       " << d.name << "  " << d.description << "\n";
  }
  std::cout << "  --timeout SECONDS  kill the workload after this long (fractions allowed)\n"
            << "  --json             print the report as one JSON object instead of text\n";
}

double parse_seconds(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(seconds) || seconds <= 0) {
    throw UsageError{"--timeout wants a positive number of seconds, not '" + text + "'"};
  }
  return seconds;
}

Options parse_args(int argc, char** argv) {
  Options opts;
  int i = 1;
  // The value of an option, from "--name=value" or from the next argument.
  auto value = [&](std::string_view arg, std::string_view name) -> std::optional<std::string> {
    if (arg == name) {
      if (i + 1 >= argc) throw UsageError{std::string(name) + " needs a value"};
      return std::string(argv[++i]);
    }
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
      return std::string(arg.substr(name.size() + 1));
    }
    return std::nullopt;
  };

  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      print_help();
      std::exit(0);
    }
    if (arg == "--json") {
      opts.json = true;
    } else if (auto v = value(arg, "--device")) {
      opts.device = *v;
    } else if (auto t = value(arg, "--timeout")) {
      opts.timeout = std::chrono::duration<double>(parse_seconds(*t));
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError{"unknown option '" + std::string(arg) + "'"};
    } else {
      break;  // the command starts here; "--" is only needed when it begins with '-'
    }
  }
  opts.command.assign(argv + i, argv + argc);
  if (opts.command.empty()) throw UsageError{"no command given"};
  return opts;
}

// SIGINT/SIGTERM must not kill this process outright: the slice's destructor is what removes
// its cgroups (and kills whatever the workload left running), so a plain signal death would
// leave edgeprof-* cgroups behind. The handler only records the signal; the InterruptCheck
// below turns it into an exception, and the unwinding cleans up.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) { g_signal = sig; }

struct Interrupted {
  int signal;
};

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// A shell reports a process killed by signal N as exit status 128 + N.
int exit_status(const edgeprof::Result& result) {
  if (result.signal) return 128 + *result.signal;
  if (result.exit_code) return *result.exit_code;
  return kExitFailure;  // neither exited nor signalled: cannot happen, but never report success
}

int profile(const Options& opts) {
  const edgeprof::Device& device = edgeprof::builtin_device(opts.device);

  edgeprof::Command cmd;
  cmd.argv = opts.command;

  // Creates the cgroups and applies the device's limits; throws if the host cannot emulate it.
  edgeprof::Slice slice{device};
  // The child is inside the slice before it runs its first instruction, so nothing it does
  // escapes the limits or the measurements.
  auto child = slice.spawn(cmd);
  // Called every 50 ms or so while waiting; throwing from it kills the workload.
  auto check = [] {
    if (g_signal != 0) throw Interrupted{g_signal};
  };
  auto result = child.wait(opts.timeout, check);

  std::cout << (opts.json ? edgeprof::to_json(result) + "\n" : edgeprof::to_text(result))
            << std::flush;
  return exit_status(result);
}  // ~Slice: removes the cgroups

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opts = parse_args(argc, argv);
    install_signal_handlers();
    return profile(opts);
  } catch (const UsageError& e) {
    std::cerr << kProgram << ": " << e.message << "\n"
              << kUsage << "\n"
              << "Run '" << kProgram << " --help' for the options and devices.\n";
    return kExitFailure;
  } catch (const Interrupted& e) {
    // The slice is gone by now; report the interruption the way a shell would.
    std::cerr << kProgram << ": interrupted by signal " << e.signal << "; workload killed\n";
    return 128 + e.signal;
  } catch (const edgeprof::Error& e) {
    // Every edgeprof error message already names what failed and what to do about it.
    std::cerr << kProgram << ": " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    // Anything else (bad_alloc...) is caught too: an exception escaping main() may terminate
    // without unwinding, and then no destructor would remove the slice's cgroups.
    std::cerr << kProgram << ": " << e.what() << "\n";
    return kExitFailure;
  }
}
