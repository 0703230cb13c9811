// Every inference runtime edgeprof knows, in one table: how a process shows that it loaded it
// (the shared objects in its /proc/PID/maps, runtimes.hpp) and, for the runtimes a rating can be
// measured with, how (nn.hpp's NnRuntime and nn_runtimes(), measure_nn_rating()). A runtime with
// a rating is an entry here, its runner (src/nn/<name>_runner.py: CMakeLists.txt compiles in
// every src/nn/*runner.py) and its devices' published times (src/catalog/devices.json).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace edgeprof::detail {

// How this host's rating with a runtime is measured.
struct RuntimeRatingSpec {
  std::string_view install;    // what installs it: "pip install ncnn"
  std::string_view precision;  // its arithmetic: "fp32"; "" = the host's (host_nn_precision())
  // What it times: the reference graphs, written beside the runner (ncnn), or `models`, which
  // its runner builds itself.
  bool reads_graphs = false;
  std::span<const std::string_view> models;
  // Its cache file in the host cache directory. Never renamed: a new name drops every cached
  // rating.
  std::string_view cache_name;
  std::string_view runner;  // the runner's file in src/nn: "torch_runner.py"
  std::span<const std::string_view> runner_args;  // given to the runner before the models
  bool multi_thread = false;  // whether a rating may run several threads (NnOptions::threads)
  // What its own share under a quota (measure_quota_share()) times by default: a few of its
  // models (ncnn: reference graphs), given to the runner after `share_args` (ncnn: none, the
  // median of LOOPS; the others --mean --min-time, a quota's periods averaged over a second).
  std::span<const std::string_view> share_models;
  std::span<const std::string_view> share_args;
  // Whether the runner's --export writes the models to its folder first, unthrottled, so that
  // the throttled runs read them rather than export or quantize (minutes at 0.05 of a CPU).
  bool share_exports = false;
  // The share's cache file in the host cache directory; never renamed, as cache_name.
  std::string_view share_cache_name;
  // About how long the share takes with its defaults (NnRuntime::share_seconds), rounded from
  // the times measured on the 2-vCPU hosts of docs/fidelity.md: the plans' notes and the
  // progress line quote it, so that no figure of one host is written out elsewhere.
  int share_seconds = 0;
};

struct RuntimeSpec {
  // "pytorch": Result::runtimes_seen's key, NnRating::runtime_id, the catalog's runtimes.<id>.
  std::string_view id;
  std::string_view name;  // for people: "PyTorch"
  // The shared objects that show it, by stem (runtimes.hpp's library_stem()).
  std::span<const std::string_view> stems;
  const RuntimeRatingSpec* rating = nullptr;  // nullptr: recognised in maps, not rated
  // Another precision of the runtime with this id ("pytorch" for "pytorch-int8"): the same
  // libraries, so no stems of its own; a workload that loads them runs at this one's speed only
  // when named (--runtime), and is not warned about as another runtime. "" = a runtime itself.
  std::string_view precision_of;
};

// ncnn first, then the other runtimes with a rating (the order of nn_runtimes(), and the order
// in which a workload that loads several is followed), then the runtimes only recognised.
// Constant data: safe to read from the sampler thread at any time.
std::span<const RuntimeSpec> runtime_table();

// The entry with `id`; nullptr for none.
const RuntimeSpec* find_runtime(std::string_view id);

// The entry with `id` that has a rating. Otherwise an Error that begins with `what` (what was
// asked for: "own share under a quota"), says whether edgeprof recognises the runtime but cannot
// run it or knows no such id, and lists the ids that have a rating.
const RuntimeSpec& rated_runtime(std::string_view id, std::string_view what);

// "about 80 s", "about 13 minutes": how long the own share under a quota of the runtime `id`
// takes (RuntimeRatingSpec::share_seconds), for notes and progress lines; "a few minutes" for
// an id without one.
std::string share_duration(std::string_view id);

// The command that measures runtime `id`'s rating again, quoted for a note:
// "`edgeprof calibrate-host --nn --remeasure`" for ncnn, with "--runtime ID ... --python PY"
// for the others.
std::string remeasure_command(std::string_view id);

// The Python source of the runner compiled in from src/nn/`file`; nullptr for no such file.
const char* runner_source(std::string_view file);

}  // namespace edgeprof::detail
