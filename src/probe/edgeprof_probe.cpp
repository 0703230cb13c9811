// edgeprof-probe: run on a real device, it measures the device's cores, memory and per-core
// speed and writes a device file that edgeprof imports on the development machine
// (docs/probe-a-device.md). Needs nothing but the C and C++ runtimes.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "edgeprof/error.hpp"
#include "edgeprof/microbench.hpp"
#include "edgeprof/version.hpp"
#include "sys/fs.hpp"
#include "suite/microbench_detail.hpp"

namespace {

constexpr const char* kUsage =
    "usage: edgeprof-probe [--name NAME] [--output FILE] [--quick] [--vector-unit UNIT]\n"
    "                      [--help] [--version]\n"
    "\n"
    "Measures this device for edgeprof: the CPUs this process may use, the memory (MemTotal),\n"
    "the CPU model, and the per-core scores of the micro-benchmark suite (integer, floating\n"
    "point, memory latency, and a vector kernel: the matrix-product block CNN inference spends\n"
    "its time in, on the best vector unit) on the fastest CPU. Writes a device file (JSON) to\n"
    "FILE or stdout; progress goes to stderr. Import the file on the machine that runs edgeprof:\n"
    "    edgeprof run --device FILE ...\n"
    "\n"
    "  --name NAME    the device's name in the file (default: the host name)\n"
    "  --output FILE  write the device file to FILE, a name ending in .json (default: stdout)\n"
    "  --quick        shorter timed runs (about 1 s instead of about 4 s): noisier scores\n"
    "  --vector-unit UNIT\n"
    "                 the vector kernel's unit instead of the best (this CPU has: UNITS)\n"
    "  --help         print this help\n"
    "  --version      print the version and the suite version\n"
    "\n"
    "Run it on an idle device with its usual cooling; close other programs first.\n";

std::string units() {
  std::string out;
  for (const std::string& u : edgeprof::vector_units()) out += (out.empty() ? "" : ", ") + u;
  return out;
}

void print_usage(std::FILE* to) {
  std::string text = kUsage;
  text.replace(text.find("UNITS"), 5, units());
  std::fputs(text.c_str(), to);
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "edgeprof-probe: %s\n", message.c_str());
  print_usage(stderr);
  return 2;
}

// The directory `path` is in ("." for a bare name).
std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Why the device file cannot be written to `path`, before the suite runs (a mistyped
// directory threw the measurement away at the end); "" when it can be tried.
std::string output_problem(const std::string& path) {
  constexpr std::string_view kJson = ".json";
  if (path.size() <= kJson.size() || path.substr(path.size() - kJson.size()) != kJson) {
    // Read by its extension: pi.toml was read as TOML, a name without one looked up as a
    // device's name, and a device directory takes only .json files.
    return "--output " + path + ": give a file name ending in .json (the file is JSON, and "
           "edgeprof reads a device file by its extension)";
  }
  const std::string dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return "--output " + path + ": the directory " + dir + " does not exist: create it, or "
             "choose another --output";
    }
    return edgeprof::detail::sys_message(errno, "cannot use the directory", dir,
                                         "choose another --output");
  }
  if (!S_ISDIR(st.st_mode)) {
    return "--output " + path + ": " + dir + " is not a directory: choose another --output";
  }
  // Write and search: a new file is made in it, then renamed.
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return edgeprof::detail::sys_message(errno, "cannot write into", dir,
                                         "choose another --output");
  }
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return "--output " + path + " is a directory: give the file's name";
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  edgeprof::detail::ProbeOptions options;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    // "--name NAME" and "--name=NAME" alike.
    auto value = [&](std::string_view flag, std::string& out) {
      if (arg == flag) {
        if (i + 1 >= argc) return false;
        out = argv[++i];
        return true;
      }
      if (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag &&
          arg[flag.size()] == '=') {
        out = std::string(arg.substr(flag.size() + 1));
        return true;
      }
      return false;
    };
    if (arg == "--help" || arg == "-h") {
      print_usage(stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("edgeprof-probe %s (%s)\n", edgeprof::version(), edgeprof::kSuiteVersion);
      return 0;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg.substr(0, 13) == "--vector-unit") {
      if (!value("--vector-unit", options.vector_unit) || options.vector_unit.empty()) {
        return usage_error("--vector-unit needs a unit (" + units() + ")");
      }
    } else if (arg.substr(0, 6) == "--name") {
      if (!value("--name", options.name)) return usage_error("--name needs a value");
    } else if (arg.substr(0, 8) == "--output" || arg == "-o") {
      if (!value(arg == "-o" ? "-o" : "--output", output) || output.empty()) {
        return usage_error("--output needs a file name");
      }
    } else {
      return usage_error("unknown argument '" + std::string(arg) + "'");
    }
  }

  if (!output.empty() && output != "-") {
    if (const std::string problem = output_problem(output); !problem.empty()) {
      std::fprintf(stderr, "edgeprof-probe: %s\n", problem.c_str());
      return 2;
    }
  }
  options.progress = [](const std::string& line) {
    std::fprintf(stderr, "edgeprof-probe: %s\n", line.c_str());
  };
  try {
    const std::string text = edgeprof::detail::probe_device_json(options);
    if (output.empty() || output == "-") {
      if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
          std::fflush(stdout) != 0) {
        std::fprintf(stderr, "edgeprof-probe: cannot write the device file to stdout: %s\n",
                     std::strerror(errno));
        return 1;
      }
    } else {
      // A temporary file of its own, synced, then renamed: an interrupted probe never leaves
      // half a device file, nor overwrites a file that happens to be named FILE.tmp.
      const std::string failed = edgeprof::detail::replace_file(directory_of(output), output,
                                                                text, "choose another --output");
      if (!failed.empty()) {
        std::fprintf(stderr, "edgeprof-probe: %s\n", failed.c_str());
        return 1;
      }
      std::fprintf(stderr,
                   "edgeprof-probe: wrote %s; copy it to the edgeprof machine and run "
                   "`edgeprof run --device %s ...`\n",
                   output.c_str(), output.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "edgeprof-probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
