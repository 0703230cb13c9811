// Inference runtimes a workload loaded, from its processes' /proc/<pid>/maps: a device's nn
// speed was measured with one runtime (ncnn), and another runtime's ratio of device to host can
// differ (docs/fidelity.md). The parser is pure; RuntimeWatch reads through Fs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/fs.hpp"

namespace edgeprof {
struct Device;
}

namespace edgeprof::detail {

// Runtime id ("pytorch", "onnxruntime", ...) -> the library file that showed it (the first one
// seen). The ids are Result::runtimes_seen's keys.
using RuntimesSeen = std::map<std::string, std::string>;

// The runtimes edgeprof recognises are nn/runtime_table.hpp's, each with the shared objects that
// show it by stem: the file name up to its first '.', without auditwheel's "-<8 hex digits>"
// (libtorch_cpu.so, libonnxruntime.so.1.17.1,
// onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so, libncnn-1a2b3c4d.so.1).
// The runtime's name for people ("PyTorch"); the id itself when it is not known.
std::string runtime_name(std::string_view id);
// The runtime a workload of `id` is seen to load in its maps: itself, or the runtime it is a
// precision of (PyTorch int8 loads PyTorch's libraries).
std::string loaded_as(std::string_view id);

// The runtimes whose libraries the text of a /proc/<pid>/maps maps. A library counts by its file
// name only (a directory named ncnn is not ncnn), and a deleted file (" (deleted)") still counts:
// it is mapped. Lines without a path (anonymous memory, [heap], [stack]) are skipped.
// With `paths`, also each runtime's library by its whole path (the first one seen that is not
// deleted: a deleted one's path may hold another version now).
RuntimesSeen runtimes_in_maps(std::string_view maps, RuntimesSeen* paths = nullptr);

// The version of the installed Python package that holds `library` (a path in `fs`): the first
// directory above the library (up to four levels: torch/lib, onnxruntime/capi, auditwheel's
// ncnn.libs) beside which its wheel's `<name>-<version>.dist-info` is ("2.5.1+cpu" of
// torch-2.5.1+cpu.dist-info); nullopt where there is none (a system library).
std::optional<std::string> package_version(const Fs& fs, std::string_view library);
// The version in a rating's runtime text, the word after the runtime's name at its start
// ("PyTorch 2.5.1+cpu fp32 eager (...)": "2.5.1+cpu" for "pytorch"); nullopt where that word
// does not begin with a digit (ncnn's "dev" build).
std::optional<std::string> version_in(std::string_view runtime_text, std::string_view id);
// Adds what `more` saw that `into` has not yet.
void merge_runtimes(RuntimesSeen& into, const RuntimesSeen& more);

// When the sampler reads the maps, the k-th time (k from 0), since the run's start: at 125,
// 250 and 500 ms, then every second (1, 2, 3 s, ...). Early, so that a short run is seen; then
// seldom, because maps has a line per library area and thread stack (long for a PyTorch process).
std::chrono::nanoseconds runtime_scan_at(std::size_t k);
// The most processes one read looks at; the next read goes on where it stopped, so a workload
// of many processes (data loaders) costs a bounded time per read.
inline constexpr std::size_t kMaxMapsPerScan = 8;

// The runtimes seen in a slice's processes so far: reads the slice's cgroup.procs and the maps
// of its processes through Fs. A process that exited, or whose maps cannot be read, is skipped.
class RuntimeWatch {
 public:
  // `procs` is the path of a cgroup.procs file of the slice (any of its v1 hierarchies).
  RuntimeWatch(Fs fs, std::string procs) : fs_(std::move(fs)), procs_(std::move(procs)) {}

  // Reads up to kMaxMapsPerScan of the slice's processes, from where the last read stopped.
  // Never throws (out of memory: that read sees nothing more).
  void scan() noexcept;
  // Forgets what was seen, for the next run.
  void reset() {
    seen_.clear();
    paths_.clear();
    next_pid_ = 0;
  }
  const RuntimesSeen& seen() const { return seen_; }
  // Their libraries' whole paths (runtimes_in_maps()'s `paths`), for package_version() after
  // the run (not on the sampler's thread).
  const RuntimesSeen& paths() const { return paths_; }

 private:
  Fs fs_;
  std::string procs_;
  RuntimesSeen seen_;
  RuntimesSeen paths_;
  pid_t next_pid_ = 0;  // the next read starts at the first process at or above it
};

// The warning a run gets when its device was emulated at an nn speed derived with ncnn and the
// workload loaded another runtime; nullopt otherwise (integer speed, a probed device's vector
// speed, only ncnn seen).
std::optional<std::string> runtime_warning(const Device& device, const RuntimesSeen& seen);

// For a workload that loads `runtime` ("pytorch") on `device`: how to run at the device's speed
// with another precision of it where the device has published times with one ("; int8 models:
// --runtime pytorch-int8 (its PyTorch int8 times)"), since the maps cannot tell precisions
// apart; "" where it has none.
std::string precision_hint(const Device& device, std::string_view runtime);

// The warning a run gets when its speed came from this host's rating of `basis` (an NnSpeed's)
// and the workload loaded (`loaded`: the library's version, package_version()) another
// release of that runtime than the rating was measured with (`rating_runtime`,
// NnRating::runtime; `rating_file` and `measured_at` name it): versions compared without a
// local label ("+cpu", "+cu124", which one side may lack); nullopt when they agree or either
// is not known.
std::optional<std::string> version_warning(std::string_view basis, std::string_view loaded,
                                           std::string_view rating_runtime,
                                           std::string_view rating_file,
                                           std::string_view measured_at);

}  // namespace edgeprof::detail
