// edgeprof-probe: run on a real device, it measures the device's cores, memory and per-core
// speed and writes a device file that edgeprof imports on the development machine
// (docs/probe-a-device.md). Needs nothing but the C and C++ runtimes.
#include <fcntl.h>
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
    "  --output FILE  write the device file to FILE (default: stdout)\n"
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

// Writes `text` to `path` through a temporary file and rename(2): an interrupted probe never
// leaves half a device file behind. "" on success, else the message.
std::string write_file(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  edgeprof::detail::UniqueFd fd(
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    return edgeprof::detail::sys_message(errno, "cannot create", temp, "choose another --output");
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::unlink(temp.c_str());
      return edgeprof::detail::sys_message(err, "cannot write", temp, "is the disk full?");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::close(fd.release()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return edgeprof::detail::sys_message(err, "cannot write", temp, "is the disk full?");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return edgeprof::detail::sys_message(err, "cannot rename the device file to", path, "");
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
      const std::string failed = write_file(output, text);
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
