#include "nn/runtimes.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "edgeprof/device.hpp"
#include "nn/runtime_table.hpp"
#include "sys/parse.hpp"

namespace edgeprof::detail {

namespace {

// /proc/<pid>/maps, read through Fs.
std::string maps_path(pid_t pid) { return fmt::format(detail::files::kProcPidMaps, pid); }

constexpr std::string_view kDeleted = " (deleted)";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The file a line of maps names ("" for anonymous memory, [heap], [stack], [vdso]): the sixth
// field to the end of the line (a path may hold spaces), without " (deleted)" (*deleted says
// whether it had it: the file is gone, or another is at its path now).
std::string_view mapped_path(std::string_view line, bool* deleted) {
  *deleted = false;
  for (int field = 0; field < 5; ++field) {
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) return {};
    line.remove_prefix(start);
    const size_t end = line.find(' ');
    if (end == std::string_view::npos) return {};
    line.remove_prefix(end);
  }
  const size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) return {};
  line.remove_prefix(start);
  if (line.empty() || line.front() != '/') return {};
  if (line.size() >= kDeleted.size() &&
      line.substr(line.size() - kDeleted.size()) == kDeleted) {
    line.remove_suffix(kDeleted.size());
    *deleted = true;
  }
  return line;
}

// The stem of a shared object's file name ("libtorch_cpu" of libtorch_cpu.so,
// "onnxruntime_pybind11_state" of onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so,
// "libncnn" of auditwheel's libncnn-1a2b3c4d.so.1); "" when the name is not a shared object's
// (a model file ncnn.bin, an executable).
std::string_view library_stem(std::string_view file) {
  const bool shared = (file.size() > 3 && file.substr(file.size() - 3) == ".so") ||
                      file.find(".so.") != std::string_view::npos;
  if (!shared) return {};
  std::string_view stem = file.substr(0, file.find('.'));
  // auditwheel renames the libraries it bundles into a wheel: "-" and 8 hex digits.
  constexpr size_t kHash = 9;
  if (stem.size() > kHash && stem[stem.size() - kHash] == '-' &&
      std::all_of(stem.end() - 8, stem.end(), is_hex)) {
    stem.remove_suffix(kHash);
  }
  return stem;
}

}  // namespace

std::string runtime_name(std::string_view id) {
  for (const RuntimeSpec& r : runtime_table()) {
    if (id == r.id) return std::string(r.name);
  }
  return std::string(id);
}

std::string loaded_as(std::string_view id) {
  for (const RuntimeSpec& r : runtime_table()) {
    if (id == r.id && !r.precision_of.empty()) return std::string(r.precision_of);
  }
  return std::string(id);
}

RuntimesSeen runtimes_in_maps(std::string_view maps, RuntimesSeen* paths) {
  RuntimesSeen seen;
  std::string_view last;  // a library has several areas, on consecutive lines
  detail::for_each_line(maps, [&](std::string_view line) {
    bool deleted = false;
    const std::string_view path = mapped_path(line, &deleted);
    if (path.empty() || path == last) return;
    last = path;
    const std::string_view file = path.substr(path.rfind('/') + 1);
    const std::string_view stem = library_stem(file);
    if (stem.empty()) return;
    for (const RuntimeSpec& r : runtime_table()) {
      if (std::find(r.stems.begin(), r.stems.end(), stem) != r.stems.end()) {
        seen.emplace(std::string(r.id), std::string(file));
        if (paths && !deleted) paths->emplace(std::string(r.id), std::string(path));
        break;
      }
    }
  });
  return seen;
}

std::optional<std::string> package_version(const Fs& fs, std::string_view library) {
  // A wheel's distribution name in its .dist-info directory: lower case, '-' as '_'.
  const auto normal = [](std::string_view t) {
    std::string out(t);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c == '-') c = '_';
    }
    return out;
  };
  constexpr std::string_view kSuffix = ".dist-info", kLibs = ".libs";
  std::string_view dir = library.substr(0, library.rfind('/'));
  for (int level = 0; level < 4; ++level) {
    const std::size_t slash = dir.rfind('/');
    if (slash == std::string_view::npos || slash == 0) break;
    const std::string_view parent = dir.substr(0, slash);
    std::string_view name = dir.substr(slash + 1);
    // auditwheel's directory of a wheel's bundled libraries: "<name>.libs".
    if (name.size() > kLibs.size() && name.substr(name.size() - kLibs.size()) == kLibs) {
      name.remove_suffix(kLibs.size());
    }
    const std::string want = normal(name);
    for (const std::string& entry : fs.subdirs(parent)) {
      const std::string_view e(entry);
      const std::size_t at = want.size() + 1;  // where the version begins, after '-'
      if (e.size() > at + kSuffix.size() && e[want.size()] == '-' &&
          e.substr(e.size() - kSuffix.size()) == kSuffix &&
          normal(e.substr(0, want.size())) == want) {
        return std::string(e.substr(at, e.size() - at - kSuffix.size()));
      }
    }
    dir = parent;
  }
  return std::nullopt;
}

std::optional<std::string> version_in(std::string_view runtime_text, std::string_view id) {
  const std::string name = runtime_name(loaded_as(id)) + " ";
  if (runtime_text.substr(0, name.size()) != name) return std::nullopt;
  std::string_view word = runtime_text.substr(name.size());
  word = word.substr(0, word.find(' '));
  if (word.empty() || word.front() < '0' || word.front() > '9') return std::nullopt;
  return std::string(word);
}

std::optional<std::string> version_warning(std::string_view basis, std::string_view loaded,
                                           std::string_view rating_runtime,
                                           std::string_view rating_file,
                                           std::string_view measured_at) {
  const std::optional<std::string> rated = version_in(rating_runtime, basis);
  // A release without its local label: PyPI's torch is "2.5.1" in its .dist-info and
  // "2.5.1+cu124" in torch.__version__, which the rating's text holds.
  const auto release = [](std::string_view v) { return v.substr(0, v.find('+')); };
  if (loaded.empty() || !rated || release(*rated) == release(loaded)) return std::nullopt;
  const std::string name = runtime_name(loaded_as(basis));
  return fmt::format(
      "the workload loaded {} {}, but this host's {} rating, which set the device's speed, was "
      "measured with {} {} ({}, {}): another release of a runtime may run faster or slower "
      "here than the one rated; measure the rating again with the workload's interpreter ({}; "
      "it measures the runtime's own share under a quota too, {})",
      name, loaded, runtime_name(basis), name, *rated, rating_file, measured_at,
      remeasure_command(basis), share_duration(basis));
}

void merge_runtimes(RuntimesSeen& into, const RuntimesSeen& more) {
  for (const auto& [id, library] : more) into.emplace(id, library);
}

std::chrono::nanoseconds runtime_scan_at(std::size_t k) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  if (k < 3) return milliseconds(125) * (1 << k);
  return seconds(static_cast<long>(k) - 2);
}

void RuntimeWatch::scan() noexcept {
  try {
    const std::optional<std::string> procs = fs_.read(procs_);
    if (!procs) return;  // the slice is gone
    std::vector<pid_t> pids = parse_pids(*procs);
    std::sort(pids.begin(), pids.end());
    std::rotate(pids.begin(), std::lower_bound(pids.begin(), pids.end(), next_pid_), pids.end());
    const std::size_t n = std::min(pids.size(), kMaxMapsPerScan);
    for (std::size_t i = 0; i < n; ++i) {
      // A process that exited since cgroup.procs was read has no maps: skipped.
      if (auto maps = fs_.read(maps_path(pids[i]))) {
        RuntimesSeen paths;
        merge_runtimes(seen_, runtimes_in_maps(*maps, &paths));
        merge_runtimes(paths_, paths);
      }
    }
    next_pid_ = n < pids.size() ? pids[n] : 0;
  } catch (...) {
    // Out of memory: this read sees nothing more; the next one tries again.
  }
}

std::optional<std::string> runtime_warning(const Device& device, const RuntimesSeen& seen) {
  if (device.speed_kind != "nn" || !device.nn || device.nn->basis == "vector") return std::nullopt;
  const std::string& basis = device.nn->basis;  // "ncnn", or the runtime of for_runtime()
  // A precision of a runtime (PyTorch int8) loads that runtime's libraries.
  const std::string library = loaded_as(basis);
  std::vector<std::string> others;
  for (const auto& [id, library_file] : seen) {
    if (id != basis && id != library) {
      others.push_back(fmt::format("{} ({})", runtime_name(id), library_file));
    }
  }
  if (others.empty()) return std::nullopt;
  std::string loaded = others.front();
  for (std::size_t i = 1; i < others.size(); ++i) {
    loaded += (i + 1 == others.size() ? " and " : ", ") + others[i];
  }
  // The runtimes seen that a device can be emulated at the speed of (those with a rating).
  std::string hint;
  if (basis == "ncnn") {
    for (const RuntimeSpec& r : runtime_table()) {
      if (r.rating && r.id != basis && seen.count(std::string(r.id))) {
        hint += fmt::format("; for {0}, devices with published {0} times run at their {0} "
                            "speed with --runtime {1}",
                            r.name, r.id);
      }
    }
    if (!hint.empty()) hint += " (Device.for_runtime, docs/devices.md)";
    // After the runtimes' hints and their pointer: each says its own source in parentheses.
    for (const auto& [id, library_file] : seen) hint += precision_hint(device, id);
  }
  return fmt::format(
      "the workload loaded {}; the device's speed was derived with {} ({:.3g} of a host "
      "core), and another runtime's ratio of device to host time can differ, its ARM and x86 "
      "kernels being unequally good: see docs/fidelity.md, \"Another runtime in the workload\"{}",
      loaded, runtime_name(basis), device.core_speed, hint);
}

std::string precision_hint(const Device& device, std::string_view runtime) {
  std::string hint;
  for (const RuntimeSpec& r : runtime_table()) {
    if (!r.rating || r.precision_of != runtime) continue;
    const auto times = device.runtime_ms.find(std::string(r.id));
    if (times == device.runtime_ms.end()) continue;
    hint += fmt::format("; {} models: --runtime {} (the device's {} times)",
                        times->second.precision, r.id, r.name);
  }
  return hint;
}

}  // namespace edgeprof::detail
