// The nn kind of speed: this host's CNN inference times (the reference graphs run with ncnn,
// or another runtime's models with it, one thread, pinned), cached beside the 7-Zip rating; and
// a device's nn core speed from its published times and this host's.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <tuple>
#include <nlohmann/json.hpp>

#include "sys/child.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/statistics.hpp"
#include "sys/parse.hpp"
#include "sys/text.hpp"
#include "edgeprof/version.hpp"
#include "sys/fs.hpp"
#include "suite/microbench_detail.hpp"
#include "nn/runner_dir.hpp"
#include "nn/runtime_table.hpp"
#include "nn/runtimes.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

namespace {

// A runner argument that counts activations: PyTorch's runner's --activations, or
// --activations=graph (ONNX Runtime's graph rule).
bool counts_activations(std::string_view arg) {
  return arg == "--activations" || arg.starts_with("--activations=");
}

}  // namespace

namespace {

using nlohmann::json;

// 2: "precision" and "graphs" (a digest of the reference graphs' param text) added.
constexpr int kCacheSchema = 2;

// One entry per runtime a rating can be measured with (nn/runtime_table.cpp's with a rating):
// what it times, with which runner, and where it is cached.
struct RuntimeEntry {
  NnRuntime info;
  const char* runner = nullptr;  // the runner's Python source
  bool reads_graphs = false;     // it runs the reference graphs (ncnn), not models it builds
  bool multi_thread = false;     // a rating may run several threads
  std::string digest;            // what a cached rating must have been measured with
};

// FNV-1a over strings: a cached rating of graphs (a fixed architecture) or a runner that has
// changed since is not this edgeprof's.
std::string fnv_digest(const std::vector<std::string_view>& parts) {
  std::uint64_t h = 14695981039346656037ull;
  for (const std::string_view part : parts) {
    for (const char c : part) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // a separator, so that "ab"+"c" and "a"+"bc" differ
    h *= 1099511628211ull;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

// What a runner's environment gets: kSteadyMallocVariables, whatever this process's says. In
// the digest of every rating of models (not ncnn's graphs), as NAME=value, so that one cached
// before them (or with other values) is measured again.
std::vector<std::pair<std::string, std::string>> rating_env() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const EnvDefault& v : kSteadyMallocVariables) out.emplace_back(v.name, v.value);
  return out;
}

const std::vector<RuntimeEntry>& runtime_entries() {
  static const std::vector<RuntimeEntry> table = [] {
    std::vector<RuntimeEntry> entries;
    for (const detail::RuntimeSpec& spec : detail::runtime_table()) {
      if (!spec.rating) continue;  // recognised in maps, not rated
      const detail::RuntimeRatingSpec& r = *spec.rating;
      RuntimeEntry e;
      e.info = {std::string(spec.id),        std::string(spec.name), std::string(r.install),
                std::string(r.precision),    {},                     std::string(r.cache_name),
                std::string(spec.precision_of), {}, 0, {}};
      e.runner = detail::runner_source(r.runner);
      if (!e.runner) {
        throw Error(fmt::format("edgeprof was built without the runner src/nn/{} of {}: "
                                "rebuild it from a complete source tree",
                                r.runner, spec.name));
      }
      e.reads_graphs = r.reads_graphs;
      e.multi_thread = r.multi_thread;
      e.info.share_seconds = r.share_seconds;
      e.info.share_duration = detail::share_duration(spec.id);
      for (const std::string_view a : r.runner_args) e.info.runner_args.emplace_back(a);
      if (r.reads_graphs) {
        std::vector<std::string_view> graph_text;  // the digest: every graph's name and text
        for (const auto& g : reference_graphs()) {
          e.info.models.push_back(g.name);
          graph_text.push_back(g.name);
          graph_text.push_back(g.param);
        }
        // (Not the runner's environment: ncnn's runner faulted in no page either way, so its
        // ratings cached before kSteadyMallocVariables stand.)
        e.digest = fnv_digest(graph_text);
      } else {
        for (const std::string_view m : r.models) e.info.models.emplace_back(m);
        std::vector<std::string_view> parts(e.info.models.begin(), e.info.models.end());
        parts.insert(parts.end(), e.info.runner_args.begin(), e.info.runner_args.end());
        parts.push_back(e.runner);
        std::vector<std::string> env;  // NAME=value, alive while digested
        for (const auto& [name, value] : rating_env()) env.push_back(name + "=" + value);
        parts.insert(parts.end(), env.begin(), env.end());
        e.digest = fnv_digest(parts);
      }
      entries.push_back(std::move(e));
    }
    return entries;
  }();
  return table;
}

const RuntimeEntry& runtime_entry(std::string_view id) {
  const detail::RuntimeSpec& spec = detail::rated_runtime(id, "nn runtime");
  for (const RuntimeEntry& e : runtime_entries()) {
    if (e.info.id == spec.id) return e;
  }
  // runtime_entries() has one entry per rated runtime of the table.
  throw Error(fmt::format("nn rating: the runtime '{}' has no entry: report this", id));
}

struct CacheFile {
  std::string dir, path;
};

CacheFile cache_file(const RuntimeEntry& e) {
  const std::string dir = detail::host_cache_dir();
  return {dir, dir.empty() ? std::string() : detail::join(dir, e.info.cache_name)};
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool is_model(const RuntimeEntry& e, std::string_view name) {
  return std::find(e.info.models.begin(), e.info.models.end(), name) != e.info.models.end();
}

json rating_json(const NnRating& r, const RuntimeEntry& e) {
  return {{"edgeprof_host_nn", kCacheSchema},
          {"host_ms", r.host_ms},
          {"cpu_ms", r.cpu_ms},
          {"activation_mb", r.activation_mb},
          {"runtime_id", r.runtime_id},
          {"runtime", r.runtime},
          {"precision", r.precision},
          {"graphs", e.digest},
          {"command", r.command},
          {"cpu", r.cpu},
          {"loops", r.loops},
          {"cpu_model", r.cpu_model},
          {"kernel", r.kernel},
          {"hostname", r.hostname},
          {"measured_at", r.measured_at},
          {"seconds", r.seconds},
          {"measured_by", fmt::format("edgeprof {}", version())}};
}

void write_file(const std::string& path, std::string_view text) {
  detail::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  int err = fd.get() < 0 ? errno : 0;
  for (std::size_t done = 0; !err && done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : EIO;
    else done += static_cast<std::size_t>(n);
  }
  if (err) {
    throw Error(detail::sys_message(err, "cannot write", path, "give a writable directory"),
                err);
  }
}

}  // namespace

namespace detail {

std::string nn_python_name(const std::string& given, std::string_view runtime) {
  if (!given.empty()) return given;
  const char* env = std::getenv("EDGEPROF_PYTHON");
  if (env && *env) return env;
  if (runtime == "ncnn") {
    if (std::string set = default_ncnn_python(); !set.empty()) return set;
  }
  return "python3";
}

std::string nn_python(const std::string& given, std::string_view runtime) {
  const std::string name = nn_python_name(given, runtime);
  auto found = detail::find_on_path(name);
  if (!found) {
    const NnRuntime& r = runtime_entry(runtime).info;
    throw Error(fmt::format(
        "no Python interpreter '{}' here: the nn rating runs {}'s Python package; install "
        "Python 3 and `{}`, or name the interpreter (EDGEPROF_PYTHON, --python)",
        name, r.name, r.install));
  }
  return *found;
}

std::string temp_root() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

std::string make_temp_dir(std::string_view prefix) {
  std::string pattern = fmt::format("{}/{}-XXXXXX", temp_root(), prefix);
  if (!::mkdtemp(pattern.data())) {
    throw Error(fmt::format("cannot create a temporary directory {}: {} (errno {}); set "
                            "TMPDIR to a writable directory",
                            pattern, std::strerror(errno), errno),
                errno);
  }
  return pattern;
}

namespace {
constexpr std::string_view kCounterDirPrefix = "edgeprof-count-";
}

std::string counter_dir_prefix(const CounterDirOwner& owner) {
  return fmt::format("{}{}-{}-{}", kCounterDirPrefix, owner.pid_ns, owner.pid, owner.start);
}

std::optional<CounterDirOwner> parse_counter_dir_name(std::string_view name) {
  const std::string_view original = name;  // the prefix, a dash and mkdtemp's six characters
  if (name.substr(0, kCounterDirPrefix.size()) != kCounterDirPrefix) return std::nullopt;
  name.remove_prefix(kCounterDirPrefix.size());
  CounterDirOwner owner;
  const char* p = name.data();
  const char* end = name.data() + name.size();
  auto number = [&](auto& out) {
    const auto [next, ec] = std::from_chars(p, end, out);
    if (ec != std::errc() || next == end || *next != '-') return false;
    p = next + 1;
    return true;
  };
  if (!number(owner.pid_ns) || !number(owner.pid) || !number(owner.start) || owner.pid <= 0 ||
      owner.pid > std::numeric_limits<pid_t>::max() || end - p != 6) {
    return std::nullopt;
  }
  // Only what counter_dir_prefix() writes ("edgeprof-count-1-01-2-..." is another's directory).
  if (counter_dir_prefix(owner) != original.substr(0, original.size() - 7)) return std::nullopt;
  return owner;
}

ActivationCounterDir::ActivationCounterDir(const CounterDirOwner& owner)
    : path_(make_temp_dir(counter_dir_prefix(owner))), maker_(::getpid()) {
  try {
    for (const auto& [file, as] : {std::pair<const char*, const char*>{"activation_counter.py",
                                                                       "sitecustomize.py"},
                                   {"torch_runner.py", "torch_runner.py"}}) {
      const char* source = runner_source(file);
      if (!source) throw Error(fmt::format("this edgeprof was built without {}", file));
      write_file(path_ + "/" + as, source);
    }
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    throw;
  }
}

ActivationCounterDir::~ActivationCounterDir() {
  if (::getpid() != maker_) return;  // a forked child's copy: its parent's
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

NnRunnerDir::NnRunnerDir(const std::vector<std::string>& graphs)
    : NnRunnerDir("ncnn", graphs) {}

NnRunnerDir::NnRunnerDir(std::string_view runtime, const std::vector<std::string>& graphs) {
  const RuntimeEntry& e = runtime_entry(runtime);
  for (const std::string& name : graphs) {
    if (!is_model(e, name)) {
      std::string known;
      for (const std::string& m : e.info.models) known += (known.empty() ? "" : ", ") + m;
      throw Error(fmt::format("the {} rating has no {} named '{}'; it has: {}", e.info.name,
                              e.reads_graphs ? "reference graph" : "model", name, known));
    }
  }
  path_ = make_temp_dir("edgeprof-nn");
  try {
    if (e.reads_graphs) write_reference_graphs(path_, graphs);
    write_file(runner(), e.runner);
  } catch (...) {
    remove();
    throw;
  }
}

NnRunnerDir::~NnRunnerDir() { remove(); }

void NnRunnerDir::remove() noexcept {
  // Everything in it: the graphs, the runner and its output, and what a runner's --export
  // wrote (ONNX files, TorchScript, a .part file of a killed export).
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}


std::vector<double> wall_over_cpu(const NnRating& r) {
  std::vector<double> out;
  for (const auto& [name, ms] : r.host_ms) {
    if (const auto c = r.cpu_ms.find(name); c != r.cpu_ms.end()) out.push_back(ms / c->second);
  }
  return out;
}

std::string nn_cache_file(const std::string& dir) {
  return join(dir, runtime_entry("ncnn").info.cache_name);
}

}  // namespace detail

const std::vector<NnRuntime>& nn_runtimes() {
  static const std::vector<NnRuntime> runtimes = [] {
    std::vector<NnRuntime> out;
    for (const RuntimeEntry& e : runtime_entries()) out.push_back(e.info);
    return out;
  }();
  return runtimes;
}

const NnRuntime& nn_runtime(std::string_view id) { return runtime_entry(id).info; }

namespace {
std::mutex& default_ncnn_python_mutex() {
  static std::mutex m;
  return m;
}
std::string& default_ncnn_python_path() {
  static std::string path;
  return path;
}
}  // namespace

void set_default_ncnn_python(std::string path) {
  const std::lock_guard<std::mutex> lock(default_ncnn_python_mutex());
  default_ncnn_python_path() = std::move(path);
}

std::string default_ncnn_python() {
  const std::lock_guard<std::mutex> lock(default_ncnn_python_mutex());
  return default_ncnn_python_path();
}

bool is_nn_precision(std::string_view precision) {
  return precision == "fp32" || precision == "fp16" || precision == "int8";
}

NnSpeed nn_speed(const std::map<std::string, double>& device_ms,
                 const std::map<std::string, double>& host_ms, std::string precision) {
  if (precision.empty()) precision = "fp32";  // a device's unsaid precision (Device::nn_precision)
  if (!is_nn_precision(precision)) {
    throw Error(fmt::format("nn_speed: precision '{}' is not fp32, fp16 or int8: give the "
                            "precision the device's times were measured in",
                            detail::printable(precision)));
  }
  NnSpeed out;
  out.precision = std::move(precision);
  for (const auto& [name, ms] : device_ms) {
    const auto h = host_ms.find(name);
    if (h == host_ms.end()) continue;
    for (const auto& [who, v] : {std::pair<const char*, double>{"the device's", ms},
                                 std::pair<const char*, double>{"this host's", h->second}}) {
      if (!std::isfinite(v) || v <= 0) {
        throw Error(fmt::format("{} time of {} is {} ms; an inference time must be a positive "
                                "number of milliseconds",
                                who, name, v));
      }
    }
    out.ratios[name] = ms / h->second;
  }
  if (out.ratios.empty()) {
    throw Error(fmt::format("no model has both a device time ({} models) and a host time ({} "
                            "models): the nn speed needs at least one in both",
                            device_ms.size(), host_ms.size()));
  }
  double log_sum = 0;
  for (const auto& [name, r] : out.ratios) log_sum += std::log(r);
  const double n = double(out.ratios.size());
  out.core_speed = std::exp(-log_sum / n);
  if (out.ratios.size() >= 2) {
    std::vector<double> errors;
    double log_squares = 0;
    for (const auto& [name, r] : out.ratios) {
      // The others' geometric mean ratio predicts this model's device time.
      const double others = std::exp((log_sum - std::log(r)) / (n - 1));
      errors.push_back(std::abs(others / r - 1));
      log_squares += std::pow(std::log(r / others), 2);  // the held-out log errors' mean is 0
    }
    out.loo_median_error = detail::median_of(errors);
    out.loo_worst_error = *std::max_element(errors.begin(), errors.end());
    if (out.ratios.size() >= 3) out.loo_log_sd = std::sqrt(log_squares / (n - 1));
  }
  return out;
}

namespace {

// time_interval()'s arithmetic: a 90% (`level`) interval from the spread of `models` held-out
// log errors (`loo_log_sd`) of a prediction with `parameters` fitted (Student's t with models -
// parameters degrees of freedom), the emulation's and a projection's spreads; the arguments'
// errors.
std::optional<TimeInterval> interval_of(double loo_log_sd, int models, int parameters,
                                        double level, double emulation_log_sd,
                                        double projection_log_sd) {
  if (!(level > 0 && level < 1)) {
    throw Error(fmt::format("an interval's level is a share between 0 and 1 (0.9 for 90%), "
                            "not {}",
                            level));
  }
  if (!(emulation_log_sd >= 0) || !std::isfinite(emulation_log_sd)) {
    throw Error(fmt::format("an interval's emulation spread is a standard deviation of log "
                            "times (0 or more, e.g. 0.1), not {}",
                            emulation_log_sd));
  }
  if (!(projection_log_sd >= 0) || !std::isfinite(projection_log_sd)) {
    throw Error(fmt::format("an interval's projection spread is a standard deviation of log "
                            "times (0 or more, e.g. 0.1: CoreScaling::loo_log_sd), not {}",
                            projection_log_sd));
  }
  if (models - parameters < 2 || !(loo_log_sd >= 0)) return std::nullopt;
  const double n = models;
  // The ratios' own spread, from the held-out errors' (each n / (n - 1) times a deviation; for
  // more than one parameter, as for one: an approximation).
  const double s = loo_log_sd * (n - 1) / n;
  const double k = student_t_quantile(0.5 + level / 2, n - parameters) *
                   std::sqrt(s * s * (1 + 1 / n) + emulation_log_sd * emulation_log_sd +
                             projection_log_sd * projection_log_sd);
  TimeInterval interval;
  interval.emulation_log_sd = emulation_log_sd;
  interval.projection_log_sd = projection_log_sd;
  interval.level = level;
  interval.low = std::exp(-k);
  interval.high = std::exp(k);
  interval.models = models;
  return interval;
}

}  // namespace

std::optional<TimeInterval> time_interval(const NnSpeed& speed, double level,
                                          double emulation_log_sd, double projection_log_sd) {
  // A probed device's vector speed has no held-out errors: checked for the arguments' errors.
  const int models = speed.basis == "vector" ? 0 : static_cast<int>(speed.ratios.size());
  // A memory term's held-out errors are its fit's, of two parameters (runtime_speed()).
  const int parameters = speed.memory_mb_per_ms > 0 ? 2 : 1;
  return interval_of(speed.loo_log_sd, models, parameters, level, emulation_log_sd,
                     projection_log_sd);
}

std::optional<TimeInterval> time_interval(const NnMemoryFit& fit, double level,
                                          double emulation_log_sd, double projection_log_sd) {
  // Two parameters fitted: a multiple of the host's time and a cost per MB.
  return interval_of(fit.loo_log_sd, static_cast<int>(fit.held_out_ms.size()), 2, level,
                     emulation_log_sd, projection_log_sd);
}

NnSpeed nn_speed_from_scores(const CoreScores& device, const CoreScores& host) {
  for (const auto& [who, sc, fix] :
       {std::tuple<const char*, const CoreScores*, const char*>{
            "the device", &device, "run this edgeprof's edgeprof-probe on the device again"},
        {"this host", &host, "re-measure this host (edgeprof calibrate-host)"}}) {
    if (sc->vector_kernel.empty() || !(sc->vector > 0) || !std::isfinite(sc->vector)) {
      throw Error(fmt::format(
          "{} has no vector-kernel score (vector = {}, kernel '{}'), which the nn speed of a "
          "probed device needs: {}",
          who, sc->vector, sc->vector_kernel, fix));
    }
  }
  if (device.vector_kernel != host.vector_kernel) {
    throw Error(fmt::format(
        "the device's vector score comes from '{}' but this host's from '{}'; they compare "
        "only within one kernel version: run this edgeprof's edgeprof-probe on the device "
        "again",
        device.vector_kernel, host.vector_kernel));
  }
  NnSpeed out;
  out.core_speed = device.vector / host.vector;
  out.precision = "fp32";
  out.basis = "vector";
  out.vector_units = fmt::format("{} on the device, {} here",
                                 device.vector_unit.empty() ? "?" : device.vector_unit,
                                 host.vector_unit.empty() ? "?" : host.vector_unit);
  return out;
}

std::string describe(const NnSpeed& s) {
  if (s.basis == "vector") {
    return fmt::format("nn speed {:.4g} of a host core from edgeprof-probe's vector kernel ({}; "
                       "{}; not checked against inference on the device, docs/fidelity.md)",
                       s.core_speed, s.precision, s.vector_units);
  }
  const bool ncnn = s.basis == "ncnn";
  std::string text =
      ncnn ? fmt::format("nn speed {:.4g} of a host core from {} ncnn graph{} ({})", s.core_speed,
                         s.ratios.size(), s.ratios.size() == 1 ? "" : "s", s.precision)
           : fmt::format("{} speed {:.4g} of a host core from {} model{} ({}{})",
                         detail::runtime_name(s.basis), s.core_speed, s.ratios.size(),
                         s.ratios.size() == 1 ? "" : "s", s.precision,
                         s.threads > 1
                             ? fmt::format("; the device's {}-thread times x {:.3g}, its speed-up "
                                           "from one thread to {} by its ncnn tables (estimated)",
                                           s.threads, s.one_core_factor, s.threads)
                             : std::string());
  if (s.memory_mb_per_ms > 0) {
    text += fmt::format("; for a workload writing {:.3g} MB of activations per ms of this host's "
                        "time, with a memory term: {:.3g} x its host time + {:.3g} ms per MB "
                        "(estimated)",
                        s.memory_mb_per_ms, s.per_host_ms, s.ms_per_mb);
  }
  if (s.ratios.size() >= 2) {
    text += fmt::format("; leave-one-{}-out median error {:.0f}% (worst {:.0f}%)",
                        ncnn ? "graph" : "model", 100 * s.loo_median_error,
                        100 * s.loo_worst_error);
  }
  if (const std::optional<TimeInterval> i = time_interval(s)) {
    text += fmt::format("; a device time within {:.2f}-{:.2f}x the emulated one ({:.0f}% "
                        "interval, estimated)",
                        i->low, i->high, 100 * i->level);
  }
  return text;
}

NnRating parse_nn_output(std::string_view text, std::string_view origin,
                         std::string_view runtime) {
  const RuntimeEntry& e = runtime_entry(runtime);
  NnRating r;
  r.runtime_id = e.info.id;
  detail::for_each_line(text, [&](std::string_view line) {
    const auto w = words(line);
    if (w.empty()) return;
    if (w[0] == "runtime") {
      // What follows the word (a line of the word alone names none).
      r.runtime = std::string(detail::trim(line.substr(line.find("runtime") + 7)));
      return;
    }
    const auto positive = [&](std::string_view name, std::string_view figure,
                              std::string_view what, std::string_view unit) {
      double v = 0;
      const auto res = std::from_chars(figure.data(), figure.data() + figure.size(), v);
      if (res.ec != std::errc() || res.ptr != figure.data() + figure.size() ||
          !std::isfinite(v) || v <= 0) {
        throw Error(fmt::format("{}: the {} of {} is '{}', not a positive number of {} (line "
                                "'{}')",
                                origin, what, name, figure, unit, line));
      }
      return v;
    };
    if (w.size() == 3 && w[0] == "cpu" && is_model(e, w[1])) {
      r.cpu_ms[std::string(w[1])] = positive(w[1], w[2], "CPU time", "ms");
      return;
    }
    if (w.size() == 3 && w[0] == "activations" && is_model(e, w[1])) {
      r.activation_mb[std::string(w[1])] = positive(w[1], w[2], "activations", "MB");
      return;
    }
    if (w.size() != 4 || !is_model(e, w[0])) return;
    r.host_ms[std::string(w[0])] = positive(w[0], w[1], "time", "ms");
  });
  if (r.host_ms.empty()) {
    throw Error(fmt::format("{}: no graph was measured; its output ended with:\n{}", origin,
                            detail::tail(text, 5)));
  }
  return r;
}

std::optional<NnRating> cached_nn_rating(std::string* why, std::string_view runtime) {
  auto say = [why](std::string text) {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  const RuntimeEntry& e = runtime_entry(runtime);
  const CacheFile cache = cache_file(e);
  const auto text = detail::read_host_cache(
      cache.path, e.reads_graphs ? "nn rating" : e.info.name + " rating", why);
  if (!text) return std::nullopt;
  NnRating r;
  std::string graphs;
  try {
    const json j = json::parse(*text);
    if (j.at("edgeprof_host_nn").get<int>() != kCacheSchema) {
      return say(fmt::format("{} has another schema version: measure it again", cache.path));
    }
    // Files written before runtimes had ids are ncnn's.
    r.runtime_id = j.value("runtime_id", std::string("ncnn"));
    if (r.runtime_id != e.info.id) {
      return say(fmt::format("{} holds a rating with runtime '{}', not '{}': measure it again",
                             cache.path, r.runtime_id, e.info.id));
    }
    r.host_ms = j.at("host_ms").get<std::map<std::string, double>>();
    // Ratings cached before the runner reported CPU time have none.
    if (j.contains("cpu_ms")) r.cpu_ms = j.at("cpu_ms").get<std::map<std::string, double>>();
    if (j.contains("activation_mb")) {  // since 2026-12-04
      r.activation_mb = j.at("activation_mb").get<std::map<std::string, double>>();
    }
    r.runtime = j.at("runtime").get<std::string>();
    r.precision = j.at("precision").get<std::string>();
    graphs = j.at("graphs").get<std::string>();
    r.command = j.at("command").get<std::string>();
    r.cpu = j.at("cpu").get<int>();
    r.loops = j.at("loops").get<int>();
    r.cpu_model = j.at("cpu_model").get<std::string>();
    r.kernel = j.at("kernel").get<std::string>();
    r.hostname = j.at("hostname").get<std::string>();
    r.measured_at = j.at("measured_at").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    for (const auto* figures : {&r.host_ms, &r.cpu_ms, &r.activation_mb}) {
      for (const auto& [name, v] : *figures) {
        if (!std::isfinite(v) || v <= 0) {
          throw std::runtime_error(fmt::format("{}'s {} is not a positive number", name,
                                               figures == &r.activation_mb ? "activation MB"
                                                                           : "time"));
        }
      }
    }
  } catch (const std::exception& corrupt) {
    return say(fmt::format("{} is corrupt ({}): measure it again", cache.path, corrupt.what()));
  }
  for (const std::string& m : e.info.models) {
    if (!r.host_ms.count(m)) {
      return say(fmt::format("{} has no time for the {} {} (measured by an older edgeprof): "
                             "measure it again",
                             cache.path, e.reads_graphs ? "graph" : "model", m));
    }
  }
  if (graphs != e.digest) {
    return say(fmt::format("{} was measured with {} that {} changed since (an older edgeprof): "
                           "measure it again",
                           cache.path, e.reads_graphs ? "reference graphs" : "a runner",
                           e.reads_graphs ? "have" : "has"));
  }
  const std::string change =
      detail::identity_change({r.cpu_model, r.kernel, r.hostname}, detail::host_identity());
  if (!change.empty()) {
    return say(fmt::format("{} was measured on {}: measure it again", cache.path, change));
  }
  r.cache_file = cache.path;
  return r;
}

std::string host_nn_precision(std::string_view cpuinfo) {
  std::size_t start = 0;
  while (start < cpuinfo.size()) {
    std::size_t end = cpuinfo.find('\n', start);
    if (end == std::string_view::npos) end = cpuinfo.size();
    const std::string_view line = cpuinfo.substr(start, end - start);
    start = end + 1;
    if (line.rfind("Features", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    for (const std::string_view w : words(line.substr(colon + 1))) {
      if (w == "asimdhp") return "fp16";
    }
  }
  return "fp32";
}

std::string nn_runner_source() { return runtime_entry("ncnn").runner; }

void write_reference_graphs(const std::string& directory, const std::vector<std::string>& graphs) {
  for (const std::string& name : graphs) {
    if (!is_model(runtime_entry("ncnn"), name)) {
      std::string known;
      for (const auto& g : reference_graphs()) known += (known.empty() ? "" : ", ") + g.name;
      throw Error(fmt::format("no reference graph is named '{}'; the graphs are: {}", name,
                              known));
    }
  }
  std::string index;
  for (const auto& g : reference_graphs()) {
    if (!graphs.empty() && std::find(graphs.begin(), graphs.end(), g.name) == graphs.end()) {
      continue;
    }
    write_file(directory + "/" + g.name + ".param", g.param);
    index += fmt::format("{} {} {} {} {} {}\n", g.name, g.width, g.height, g.channels, g.input,
                         g.output);
  }
  write_file(directory + "/graphs.txt", index);
}

NnRating measure_nn_rating(const NnOptions& options) {
  if (options.warmup < 0 || options.loops < 1) {
    throw Error(fmt::format("nn rating: warmup {} and loops {}: give warmup >= 0 and loops >= 1",
                            options.warmup, options.loops));
  }
  const RuntimeEntry& e = runtime_entry(options.runtime);
  if (options.threads < 1 || (options.threads > 1 && !e.multi_thread)) {
    std::string multi;
    for (const RuntimeEntry& m : runtime_entries()) {
      if (m.multi_thread) multi += (multi.empty() ? "" : ", ") + m.info.id;
    }
    throw Error(fmt::format("nn rating: threads {} with {}: give 1, or more with {}",
                            options.threads, e.info.id, multi));
  }
  const std::string python = detail::nn_python(options.python, e.info.id);
  const detail::NnRunnerDir dir(e.info.id, options.graphs);  // throws naming an unknown model
  std::vector<std::string> argv{python, dir.runner(), dir.path(),
                                std::to_string(options.warmup), std::to_string(options.loops)};
  if (options.threads > 1) argv.push_back(fmt::format("--threads={}", options.threads));
  for (const std::string& a : e.info.runner_args) {
    if (options.activations || !counts_activations(a)) argv.push_back(a);
  }
  // ncnn's runner runs every graph it finds without names; other runners build what they
  // are told.
  const std::vector<std::string>& wanted =
      options.graphs.empty() && !e.reads_graphs ? e.info.models : options.graphs;
  argv.insert(argv.end(), wanted.begin(), wanted.end());
  const std::size_t count = options.graphs.empty() ? e.info.models.size() : options.graphs.size();
  detail::ChildOutput out;
  int cpu = -1;
  std::vector<int> ran_on;
  {
    // The child inherits this affinity: one CPU, or N for N threads.
    std::vector<int> cpus = options.cpus;
    if (options.threads > 1 && !cpus.empty()) {
      std::vector<int> sorted = cpus;
      std::sort(sorted.begin(), sorted.end());
      if (cpus.size() != static_cast<std::size_t>(options.threads) || sorted.front() < 0 ||
          std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
        throw Error(fmt::format("nn rating: CPUs {} for {} threads: give one distinct CPU per "
                                "thread, or none (the first {} this thread may run on)",
                                fmt::join(cpus, ","), options.threads, options.threads));
      }
    }
    if (options.threads > 1 && cpus.empty()) {
      std::vector<int> usable;
      cpu_set_t mine;
      CPU_ZERO(&mine);
      if (::sched_getaffinity(0, sizeof mine, &mine) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c) {
          if (CPU_ISSET(c, &mine)) usable.push_back(c);
        }
      }
      if (usable.size() < static_cast<std::size_t>(options.threads)) {
        throw Error(fmt::format("nn rating: {} threads need {} CPUs, and this thread may run on "
                                "{}: give fewer threads, or run where more CPUs are allowed "
                                "(taskset, the cpuset)",
                                options.threads, options.threads, usable.size()));
      }
      cpus.assign(usable.begin(), usable.begin() + options.threads);
    }
    detail::PinnedThread pin(options.threads > 1 ? cpus : std::vector<int>{options.cpu});
    cpu = pin.cpu();
    ran_on = options.threads > 1 ? cpus : std::vector<int>{cpu};
    if (options.progress) {
      options.progress(fmt::format("running {} {} with {} ({}), {}", count,
                                   e.reads_graphs ? "reference CNN graphs" : "models",
                                   e.info.name, python,
                                   options.threads > 1
                                       ? fmt::format("{} threads on CPUs {}", options.threads,
                                                     fmt::join(ran_on, ","))
                                       : fmt::format("one thread on CPU {}", cpu)));
    }
    std::size_t done = 0;
    auto on_line = [&](std::string_view line) -> std::string {
      const auto w = words(line);
      if (w.size() == 4 && is_model(e, w[0])) {
        return fmt::format("  [{}/{}] {}: {} ms", ++done, count, w[0], w[1]);
      }
      return std::string();
    };
    out = detail::run_child(argv, options.timeout, options.progress, e.info.id, on_line,
                            rating_env());
  }
  if (!WIFEXITED(out.status) || WEXITSTATUS(out.status) != 0) {
    // Both runners say "<runtime> is not installed" with the command that installs it.
    const bool missing = out.text.find(" is not installed") != std::string::npos;
    throw Error(fmt::format("{}: the {} runner failed ({}); its output ended with:\n{}",
                            missing ? e.info.name + " is missing" : python, e.info.name,
                            detail::describe_status(out.status), detail::tail(out.text, 5)));
  }
  NnRating r = parse_nn_output(out.text, fmt::format("{} ({} runner)", python, e.info.name),
                               e.info.id);
  r.command = python;
  r.cpu = cpu;
  r.threads = options.threads;
  r.cpus = ran_on;
  r.loops = options.loops;
  const detail::Fs fs;
  r.precision = !e.info.precision.empty()
                    ? e.info.precision
                    : host_nn_precision(fs.read(detail::files::kProcCpuinfo).value_or(""));
  const detail::HostIdentity id = detail::host_identity();
  r.cpu_model = id.cpu_model;
  r.kernel = id.kernel;
  r.hostname = id.hostname;
  r.measured_at = detail::utc_now();
  r.seconds = out.seconds;
  const CacheFile cache = cache_file(e);
  // A one-thread rating made while another process shared its CPU (or a hypervisor stole it)
  // has wall times too long by the wait, and every nn speed from them would be too fast: its
  // times are then its CPU times (which alone on a CPU are within about 0.1% of the wall
  // times here), and it is not cached. A drift probe (not for the cache) keeps both: the
  // caller weighs the wait (host_drift()).
  const std::vector<double> waiting = detail::wall_over_cpu(r);
  const double waited = waiting.empty() ? 1.0 : detail::median_of(waiting);
  const bool shared = options.threads <= 1 && options.cache && options.graphs.empty() &&
                      waiting.size() == r.host_ms.size() && waited > kProbeWaitingShared;
  if (shared) {
    r.host_ms = r.cpu_ms;
    r.note = fmt::format(
        "CPU {} was shared while it was measured (its inferences took {:.2f}x their CPU time: "
        "another busy process or a hypervisor's steal), so its times are the inferences' CPU "
        "times and it is not cached: measure it again when CPU {} is idle (or on another: "
        "NnOptions::cpu)",
        cpu, waited, cpu);
  } else if (options.threads > 1) {
    r.note = fmt::format("measured with {} threads: not cached", options.threads);
  } else if (!options.cache) {
    r.note = "not cached (NnOptions::cache)";
  } else if (!options.activations &&
             std::any_of(e.info.runner_args.begin(), e.info.runner_args.end(),
                         [](const std::string& a) { return counts_activations(a); })) {
    r.note = "measured without activations (NnOptions::activations): not cached";
  } else if (!options.graphs.empty()) {
    r.note = fmt::format("measured a subset of the {}: not cached",
                         e.reads_graphs ? "reference graphs" : "models");
  } else if (cache.path.empty()) {
    r.note = fmt::format("{}: not cached, so it is measured again where it is next needed; "
                         "set EDGEPROF_CACHE_DIR",
                         detail::kNoCacheDir);
  } else {
    const std::string failed =
        detail::replace_file(cache.dir, cache.path, rating_json(r, e).dump(2) + "\n");
    if (failed.empty()) {
      r.cache_file = cache.path;
    } else {
      r.note = failed + ", so it is measured again where it is next needed";
    }
  }
  if (options.progress) {
    options.progress(shared ? describe(r) + "; " + r.note : describe(r));
  }
  return r;
}

std::string describe(const NnRating& r) {
  const bool graphs = r.runtime_id == "ncnn";
  std::string text = fmt::format(
      "{} {}{} with {}, {}, {}:", r.host_ms.size(), graphs ? "graph" : "model",
      r.host_ms.size() == 1 ? "" : "s",
      r.runtime.empty() ? detail::runtime_name(r.runtime_id) : r.runtime, r.precision,
      r.threads > 1 ? fmt::format("{} threads on CPUs {}", r.threads, fmt::join(r.cpus, ","))
                    : fmt::format("one thread on CPU {}", r.cpu));
  bool first = true;
  for (const auto& [name, ms] : r.host_ms) {
    text += fmt::format("{} {} {:.1f} ms", first ? "" : ",", name, ms);
    first = false;
  }
  if (!r.measured_at.empty()) text += fmt::format("; measured {}", r.measured_at);
  return text;
}

}  // namespace edgeprof
