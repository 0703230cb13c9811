#include "edgeprof/slice.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <bitset>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/metric_table.hpp"
#include "analysis/short_phases.hpp"
#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "edgeprof/error.hpp"
#include "sys/parse.hpp"
#include "sys/stderr.hpp"
#include "sys/text.hpp"
#include "run/core_placer.hpp"
#include "run/cpu_ledger.hpp"
#include "nn/runner_dir.hpp"
#include "nn/runtime_table.hpp"
#include "nn/runtimes.hpp"
#include "run/phase_pipe.hpp"
#include "run/plan_warnings.hpp"
#include "run/runtime_follow.hpp"
#include "edgeprof/phase.hpp"
#include "edgeprof/version.hpp"
#include "run/keep_warm.hpp"
#include "sys/netns.hpp"
#include "sampler/sampler.hpp"
#include "sampler/sources.hpp"
#include "sys/clone3.hpp"
#include "sys/spawn.hpp"
#include "run/speed_schedule.hpp"

namespace edgeprof {

using detail::Clock;

const char* to_string(CgroupMode mode) {
  switch (mode) {
    case CgroupMode::unified:
      return "unified";
    case CgroupMode::hybrid:
      return "hybrid";
    case CgroupMode::legacy:
      return "legacy";
  }
  return "unknown";
}

const char* describe(CgroupMode mode) {
  switch (mode) {
    case CgroupMode::unified:
      return "unified (cgroup v2)";
    case CgroupMode::hybrid:
      return "hybrid (cgroup v1 controllers)";
    case CgroupMode::legacy:
      return "legacy (cgroup v1)";
  }
  return "unknown";
}

CgroupMode cgroup_mode_from_string(std::string_view text) {
  for (CgroupMode m : {CgroupMode::unified, CgroupMode::hybrid, CgroupMode::legacy}) {
    if (text == to_string(m)) return m;
  }
  throw Error(fmt::format("unknown cgroup mode '{}': expected unified, hybrid or legacy", text));
}

namespace {

const detail::Layout& layout() {
  static const detail::Layout cached = detail::discover_layout(detail::Fs());
  return cached;
}

// The parent cgroup slices are made beneath: SliceOptions::parent, else
// $EDGEPROF_CGROUP_PARENT. A path in the cgroup filesystem (/sys/fs/cgroup/mine, a likely slip
// for /mine) was joined onto the mount again, and the error named
// /sys/fs/cgroup/sys/fs/cgroup/mine/cgroup.controllers and neither setting; ".." climbed out.
std::string parent_from(const SliceOptions& options) {
  const char* env = std::getenv("EDGEPROF_CGROUP_PARENT");
  const bool given = !options.parent.empty();
  std::string parent = given ? options.parent : env && *env ? env : "";
  const char* from = given ? "the parent cgroup (SliceOptions::parent, parent=, --parent)"
                           : "EDGEPROF_CGROUP_PARENT";
  const std::string_view mount = "/sys/fs/cgroup";
  if (parent.rfind(mount, 0) == 0 && (parent.size() == mount.size() || parent[mount.size()] == '/')) {
    throw Error(fmt::format(
        "{} is '{}', a path in the cgroup filesystem: give the cgroup's own path, as "
        "/proc/self/cgroup shows it (without {} and, on cgroup v1, the hierarchy's directory: "
        "/mine for /sys/fs/cgroup/cpu/mine)",
        from, detail::printable(parent), mount));
  }
  for (std::size_t at = 0; at <= parent.size();) {
    const std::size_t end = std::min(parent.find('/', at), parent.size());
    if (parent.compare(at, end - at, "..") == 0) {
      throw Error(fmt::format("{} is '{}': a cgroup path without '..' components, as "
                              "/proc/self/cgroup shows it",
                              from, detail::printable(parent)));
    }
    at = end + 1;
  }
  return parent;
}

// Removes slices whose owner died (kill -9) before it could clean up. A slice is left alone
// while its owner (pid + start time, so a reused pid does not count) may be alive, and when
// its owner is of another pid namespace (slice_owner_may_live), and all of them when the
// mounted /proc is not numbered as this process's pid namespace (proc_numbers_own_pids).
void remove_stale_slices(detail::Backend& backend, const detail::Fs& fs) {
  if (!detail::proc_numbers_own_pids(fs)) return;
  const std::uint64_t own_ns = detail::own_pid_namespace(fs);
  for (const std::string& name : backend.slice_names()) {
    auto parsed = detail::parse_slice_name(name);
    if (!parsed) continue;
    if (detail::slice_owner_may_live(fs, *parsed, own_ns)) continue;
    try {
      backend.remove_stale(name);
    } catch (const Error&) {
      // Another process may be sweeping the same slice; the next sweep retries.
    }
  }
}

// Removes activation counter directories (detail::ActivationCounterDir) of this user and pid
// namespace (`pid_ns`) whose owner died (kill -9) before it could remove them; one is left
// alone while its owner (pid + start time) is alive, and any of another pid namespace; none
// is removed when the mounted /proc is not numbered as this namespace (proc_numbers_own_pids).
void remove_stale_counter_dirs(const detail::Fs& fs, std::uint64_t pid_ns) {
  if (pid_ns == 0 || !detail::proc_numbers_own_pids(fs)) return;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(detail::temp_root(), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::filesystem::directory_entry& entry = *it;
    const auto owner = detail::parse_counter_dir_name(entry.path().filename().native());
    struct stat st {};
    if (!owner || owner->pid_ns != pid_ns || ::lstat(entry.path().c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    if (detail::owner_may_live(fs, static_cast<pid_t>(owner->pid), owner->start)) continue;
    std::error_code ignored;  // another process may be sweeping it too
    std::filesystem::remove_all(entry.path(), ignored);
  }
}

// This process's pid and start time, which name its slices. Read once per process: a forked
// child (Python multiprocessing) has a new pid, so the cache is keyed by it.
detail::SliceName own_identity(const detail::Fs& fs) {
  static std::mutex lock;
  static detail::SliceName cached;
  std::lock_guard<std::mutex> guard(lock);
  const pid_t self = ::getpid();
  if (cached.owner != self) {
    // A name without the true start time would make this process's live slices look stale to
    // every sweep, its own next one too: no slice rather than that.
    // /proc/self, not /proc/<getpid()>: a /proc of another pid namespace numbers this process
    // otherwise, and there getpid() is another process's pid (a start time not ours), or none.
    int err = 0;
    const auto start = detail::own_start_time(fs, &err);
    if (!start) {
      throw Error(
          fmt::format("cannot name a slice: this process's start time, part of every slice's "
                      "name, cannot be read from {} ({}): {}",
                      detail::files::kProcSelfStat,
                      err ? fmt::format("{}, errno {}", std::strerror(err), err)
                          : std::string("its text did not parse"),
                      err == EMFILE || err == ENFILE
                          ? "close some files (or raise ulimit -n) and try again"
                          : "check that /proc is mounted and readable"),
          err);
    }
    cached.owner = self;
    cached.owner_start = *start;
    cached.pid_ns = detail::own_pid_namespace(fs);
  }
  return cached;
}

}  // namespace

CgroupMode cgroup_mode() { return layout().mode; }

namespace {

// Variables the plan sets together or not at all (kThreadWaitVariables, kSteadyMallocVariables):
// a workload that set one of them chose the group.
const char* variable_name(const char* name) { return name; }
const char* variable_name(const EnvDefault& v) { return v.name; }

template <class Group>
bool in_group(const Group& group, const std::string& name) {
  return std::any_of(std::begin(group), std::end(group),
                     [&](const auto& v) { return name == variable_name(v); });
}

// Whether the workload set one of `group`'s variables that the plan sets (`defaults`).
template <class Group>
bool group_chosen(const Group& group, const std::map<std::string, std::string>& defaults,
                  const detail::PreparedCommand& prepared) {
  return std::any_of(std::begin(group), std::end(group), [&](const auto& v) {
    return defaults.count(variable_name(v)) && prepared.env(variable_name(v)).has_value();
  });
}

// A timeout longer than this (a century) waits for ever: the clock cannot hold a deadline
// much further out (steady_clock counts nanoseconds in 64 bits, about 292 years), and
// std::chrono's conversion of inf or 1e300 s overflows to a deadline already past.
constexpr double kForeverTimeoutS = 100.0 * 365 * 24 * 3600;

// The deadline `timeout` gives from `from`: none for an unset, infinite or century-long one.
// Throws Error for zero, a negative one or NaN.
std::optional<std::chrono::steady_clock::time_point> deadline_after(
    std::chrono::steady_clock::time_point from,
    std::optional<std::chrono::duration<double>> timeout) {
  if (!timeout) return std::nullopt;
  const double s = timeout->count();
  if (!(s > 0)) {
    throw Error(fmt::format("a timeout is a positive number of seconds, not {}; leave it unset "
                            "(or give inf) to wait for ever",
                            s));
  }
  if (s >= kForeverTimeoutS) return std::nullopt;
  return from + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*timeout);
}

// Whether every counter the first sample read is still complete at the end (no source of one
// failed during the run).
bool counters_complete(const std::bitset<kMetricCount>& first,
                       const std::bitset<kMetricCount>& complete) {
  return (first & detail::kCounterMetrics & ~complete).none();
}

// The counters in row `row` of a series, for the metrics in `read`: a sampled run's first and
// last samples are its counters.
detail::Snapshot counters_in(const TimeSeries& series, std::size_t row,
                             const std::bitset<kMetricCount>& read) {
  detail::Snapshot c;
  if (row >= series.size()) return c;
  c.read = read & detail::kCounterMetrics;
  for (std::size_t m = 0; m < c.read.size(); ++m) {
    if (c.read.test(m)) c.values[m] = series[static_cast<Metric>(m)][row];
  }
  return c;
}

// The sources an unsampled run reads its counters through, at its start and its end: the
// sampler's, those that give a counter (on v1 4 files, on v2 2, and each core group's
// cpu.stat; a sampler opens 11-13). A file it cannot read leaves those counters unread (their
// figures 0), without a line on stderr: nothing was sampled.
detail::Sources open_counter_sources(const detail::SliceFiles& where) {
  detail::Sources sources = detail::Sources::of(where, detail::kCounterMetrics);
  sources.set_logger([](const std::string&) {});
  return sources;
}

// The slice's directory whose membership files list all its processes and threads: v2's, or on
// v1 one hierarchy's (each holds the same members), not the cpu hierarchy's where there is
// another: with per-core emulation its members are in the core groups.
std::string member_dir(const detail::SliceFiles& where) {
  std::string dir = where.dir;
  for (const auto& [controller, path] : where.controllers) {
    if (dir.empty() || controller != "cpu") dir = path;
    if (controller != "cpu") break;
  }
  return dir;
}

// Reads the slice's processes' maps through its cgroup.procs. Holds paths, not the Cgroup,
// which a closed slice drops while a sampler thread may still read.
detail::RuntimeWatch runtime_watch(const detail::SliceFiles& where) {
  return {where.fs, detail::join(member_dir(where), detail::files::kProcs)};
}

// Reads the slice's threads' states (projected core emulation: how many ran at once): v2's
// cgroup.threads, or v1's tasks.
detail::ThreadCensus thread_census(const detail::SliceFiles& where) {
  return {where.fs, {detail::join(member_dir(where), where.unified ? detail::files::v2::kThreads
                                                                   : detail::files::v1::kTasks)}};
}

// A change of the slice's speed `t_s` seconds into a run to `runtime`'s speed with the quota of
// `speed` (null: not planned), or not made (`error`).
SpeedChange speed_change(double t_s, std::string runtime,
                         const detail::FollowedSpeed* speed, std::string error) {
  SpeedChange change;
  change.t_s = t_s;
  change.runtime = std::move(runtime);
  if (speed) {
    change.cpu_quota_us = detail::written_quota_us(speed->plan);
    change.cpu_period_us = speed->plan.cpu_period_us;
  }
  change.error = std::move(error);
  return change;
}

}  // namespace

struct Slice::Impl {
  Device device;
  SliceOptions options;
  EmulationPlan plan;
  std::vector<std::string> unapplied;
  detail::Fs fs;
  std::unique_ptr<detail::Backend> backend;
  std::unique_ptr<detail::Cgroup> cgroup;
  // fork_count() when made: a forked copy of the slice leaves the slice and its workloads,
  // which are the parent's, alone (its close() or destructor killed the parent's workload).
  unsigned forks = detail::fork_count();
  // The speed schedules of children not yet reaped: stopped before the cgroup they write goes
  // (a close() with a child running left its scheduler writing to a freed Cgroup).
  std::vector<std::weak_ptr<detail::SpeedScheduler>> schedulers;
  bool forked() const { return forks != detail::fork_count(); }
  int running = 0;  // children spawned and not yet reaped
  std::uint64_t spawns = 0;  // children spawned so far
  // The speeds of runtimes the workload may load (PlanOptions::speed_kind automatic); declared
  // before the samplers that call it.
  std::unique_ptr<detail::RuntimeFollower> follower;
  // The activation counter a PyTorch workload gets on its PYTHONPATH when the follower counts
  // (PlanOptions::count_activations): made at the slice's first sampled run.
  std::optional<detail::ActivationCounterDir> counter_dir;
  // The runtime whose speed the slice started at (runtime_start()); "" for the usual start.
  std::string started_at;
  // The last run's sampler, for the next one: its thread sleeps between runs, and its stat
  // files stay open (opening them, about a dozen opens on v1, and starting and joining a
  // thread each cost a spawn more than anything else the library does).
  std::unique_ptr<detail::Sampler> spare_sampler;
  // The last unsampled run's counter sources, for the next one (their files stay open).
  std::optional<detail::Sources> spare_counters;
  // The phase pipe of the last run, for the next one (PhasePipe), kept only when nobody was
  // left in the slice after it (its final sample's task count, else has_processes()).
  std::optional<detail::PhasePipe> spare_pipe;
  // The read ends of finished runs' phase pipes that left someone in the slice (as above),
  // and of abandoned children: such a process holds the write end, and a mark it writes later must neither land in
  // another run's phases (a kept pipe) nor kill it with SIGPIPE (a closed one). Never read;
  // closed once the slice is seen empty, killed or closed.
  std::vector<detail::UniqueFd> retired_marks;
  detail::CpuLease cpus;  // plan.cpus held in the machine's CPU ledger
  // Per-core emulation: places the threads of every running workload (none while idle).
  std::unique_ptr<detail::CorePlacer> placer;
  // Removes the slice, its workload's grandchildren too, if this process dies without doing
  // it (unset when /bin/sh could not be started: then only the workload's own child dies
  // with the thread that spawned it).
  detail::SliceGuard guard;

  // Keeps a finished run's phase pipe's read end open, unread, while a process left in the
  // slice may hold its write end (retired_marks); the oldest is closed beyond kMaxRetired.
  static constexpr size_t kMaxRetired = 64;
  void retire(detail::UniqueFd read_end) noexcept {
    if (retired_marks.size() == kMaxRetired) retired_marks.erase(retired_marks.begin());
    try {
      retired_marks.push_back(std::move(read_end));
    } catch (const std::bad_alloc&) {
      // Closed instead: a later mark of a leftover then gets EPIPE.
    }
  }

  // A child of the slice was reaped or abandoned.
  void child_ended() noexcept {
    if (--running == 0) placer.reset();
  }

  void require_alive() const {
    if (!cgroup) throw Error("this slice is closed: create a new Slice");
  }

  // Child::wait()s running on this slice's workloads, in any thread: a close() or kill() from
  // another thread let them finish (they read the cgroup, placer and CPU lease that destroy()
  // frees) before it went on.
  std::mutex waits_mutex;
  std::condition_variable waits_done;
  int waits = 0;
  static inline thread_local int waits_in_this_thread = 0;
  struct Waiting {  // one wait(), counted while it runs
    Impl& impl;
    explicit Waiting(Impl& i) : impl(i) {
      const std::lock_guard<std::mutex> lock(impl.waits_mutex);
      ++impl.waits;
      ++waits_in_this_thread;
    }
    ~Waiting() {
      {
        const std::lock_guard<std::mutex> lock(impl.waits_mutex);
        --impl.waits;
        --waits_in_this_thread;
      }
      impl.waits_done.notify_all();
    }
  };
  // Waits for other threads' wait()s to end, their workloads killed first (or they could run
  // for ever). Not from inside a wait() (a callback of its sampler): that wait would be waited
  // for by itself.
  void let_waits_finish() noexcept {
    std::unique_lock<std::mutex> lock(waits_mutex);
    if (waits == 0 || waits_in_this_thread > 0) return;
    lock.unlock();
    try {
      cgroup->kill_all();
    } catch (const std::exception& e) {
      detail::say_on_stderr(e.what());
    }
    lock.lock();
    waits_done.wait(lock, [this] { return waits == 0; });
  }

  void destroy() noexcept {
    if (!cgroup) {
      cpus = detail::CpuLease();
      return;
    }
    if (forked()) {
      // The copy's threads stayed in the parent: joining them would never return, and the
      // slice is the parent's to remove. Its handles are left, as the sampler's are.
      (void)cgroup.release();
      (void)placer.release();
      (void)follower.release();
      guard.dismiss();
      cpus = detail::CpuLease();
      return;
    }
    let_waits_finish();
    for (const std::weak_ptr<detail::SpeedScheduler>& w : schedulers) {
      if (const std::shared_ptr<detail::SpeedScheduler> scheduler = w.lock()) scheduler->stop();
    }
    schedulers.clear();
    spare_sampler.reset();
    spare_counters.reset();
    spare_pipe.reset();
    placer.reset();  // its descriptors hold the core groups open
    // A running workload's sampler may still see a runtime: it writes nothing from now on.
    if (follower) follower->detach();
    try {
      cgroup->kill_all();
    } catch (const std::exception& e) {
      detail::say_on_stderr(e.what());
    }
    retired_marks.clear();  // their writers are gone
    // Named before removal: remove() forgets its directories whether or not they went.
    const std::vector<std::string> paths = cgroup->paths();
    const bool removed = cgroup->remove();
    if (!removed) {
      try {
        detail::say_on_stderr(fmt::format("could not remove {}; it is removed when this "
                                          "process ends, or the next time a slice is created "
                                          "beneath the same parent",
                                          detail::describe_unremoved(fs, paths)));
      } catch (...) {  // out of memory while saying it: the slice stays, unsaid
      }
    }
    cgroup.reset();
    if (removed) {
      guard.dismiss();
    } else {
      guard.detach();
    }
    // The CPUs are free once the workload is gone, not before.
    cpus = detail::CpuLease();
  }

  ~Impl() { destroy(); }
};

Slice::Slice(Device device, SliceOptions options) : impl_(std::make_shared<Impl>()) {
  static std::atomic<std::uint64_t> sequence{0};
  // Before the slice's descriptors: with stdout closed, the first of them became fd 1.
  detail::occupy_closed_stdio();
  Impl& s = *impl_;
  HostFacts host = host_facts();
  PlanOptions plan_options = options.plan;
  // Without explicit CPUs, the least used ones: concurrent slices do not share CPUs while the
  // host has enough.
  const bool choose_cpus = plan_options.cpus.empty();
  if (choose_cpus) plan_options.cpus = detail::cpu_ledger().order(host.cpus);
  const std::size_t usable_cpus = plan_options.cpus.size();
  // Measured once per host when a catalog device's nn speed needs this host's nn rating.
  const Device measured = with_measured_nn(device, plan_options);
  host = with_measured_quota_share(std::move(host), measured, plan_options);
  // The device as planned: as measured, or at a runtime's speed where the speed edgeprof
  // chose cannot be emulated here (faster than a host core) and a runtime's can.
  Device planned = measured;
  std::vector<std::string> start_notes;
  try {
    s.plan = plan_emulation(planned, host, plan_options);
  } catch (const UnsupportedError& e) {
    std::optional<Device> start =
        detail::runtime_start(measured, host, plan_options, e.what(), start_notes);
    if (!start) throw;
    planned = std::move(*start);
    s.started_at = planned.nn->basis;
    s.plan = plan_emulation(planned, host, plan_options);
  }
  if (choose_cpus) {
    // Chosen and taken under the ledger's lock: a slice made meanwhile (another process's, or
    // another thread's while this one planned or measured) may have taken the CPUs planned.
    s.cpus = detail::cpu_ledger().take_least_used(host.cpus, s.plan.cpus.size());
    plan_options.cpus = s.cpus.cpus();
    std::vector<int> taken = s.cpus.cpus();
    std::sort(taken.begin(), taken.end());
    if (taken != s.plan.cpus) s.plan = plan_emulation(planned, host, plan_options);
  } else {
    s.cpus = detail::cpu_ledger().take(s.plan.cpus);
  }
  const int shared = s.cpus.shared_at_take();
  if (plan_options.drift_check) {
    // Probed on the slice's own first CPU once it holds it, and not where another slice runs
    // there: its load would read as drift and stay in the quota after it left.
    std::vector<int> mine = s.cpus.cpus();
    std::sort(mine.begin(), mine.end());
    if (shared > 0 || !detail::cpu_ledger().others(s.cpus).empty()) {
      host.drift_problem = "another edgeprof slice holds this slice's CPUs, and a probe would "
                           "read its load as the host's drift";
      if (plan_options.share_check) host.quota_share_check_problem = host.drift_problem;
    } else if (!mine.empty()) {
      host = with_measured_drift(std::move(host), planned, plan_options, mine.front());
      // The own share at the quota of the plan as corrected for the drift, checked there.
      host = with_checked_quota_share(std::move(host), planned, plan_options, mine.front());
    }
    s.plan = plan_emulation(planned, host, plan_options);
  }
  // The device as emulated: as many of its cores as fit (the plan's note says so), or one of
  // them when projected, so that its figures (power, for the energy estimate) are those of the
  // cores run.
  s.device = detail::device_as_run(for_speed_kind(planned, plan_options.speed_kind), s.plan,
                                   usable_cpus);
  s.options = std::move(options);
  s.backend = detail::make_backend(s.fs, layout(), parent_from(s.options));
  if (s.plan.core_groups > 0 && !s.backend->core_groups_supported()) {
    s.unapplied.push_back(fmt::format(
        "per-core emulation ({} core groups): no cpu controller for the slice; the device's "
        "cores share one quota, so a thread may run faster than a device core while its "
        "siblings idle (docs/threads.md)",
        s.plan.core_groups));
    plan_options.cores = CoreEmulation::pooled;
    s.plan = plan_emulation(planned, host, plan_options);
  }
  // Keep-warm threads run in this process's cgroup: beneath a CPU quota they would spend the
  // quota the slice needs whenever it waits, and slow it down instead.
  if (s.plan.keep_warm) {
    if (auto above = s.backend->cpu_quota_above()) {
      plan_options.keep_warm = false;
      s.plan = plan_emulation(planned, host, plan_options);
      s.plan.notes.push_back(fmt::format(
          "keep-warm is off: {} limits the CPU of this process and the slice together, and "
          "threads keeping the slice's CPUs busy would spend that quota while the slice waits; "
          "a throttled workload may then do less work per CPU-second than it would unthrottled "
          "(docs/keep-warm.md)",
          *above));
    }
  }
  if (shared > 0) {
    s.plan.notes.push_back(fmt::format(
        "shares host CPUs {} with {} other slice{} alive at the same time (of this or another "
        "edgeprof process): their workloads compete for them while both run (docs/hpo.md)",
        format_cpu_list(s.plan.cpus), shared, shared == 1 ? "" : "s"));
  }
  // A workload that loads a runtime the device has published times with runs at that speed
  // from when it is seen.
  s.plan.notes.insert(s.plan.notes.begin(), start_notes.begin(), start_notes.end());
  std::vector<detail::FollowedSpeed> speeds = detail::followed_speeds(
      measured, host, plan_options, s.plan, usable_cpus, s.plan.notes, s.started_at);
  // Each counted runtime the slice starts at or follows a workload to.
  std::vector<detail::CountingBasis> counting;
  for (const std::string_view runtime : detail::kCountedRuntimes) {
    if (runtime == "onnxruntime" && !detail::counts_onnxruntime()) continue;  // turned off
    const bool follows =
        s.started_at == runtime ||
        std::any_of(speeds.begin(), speeds.end(),
                    [&](const detail::FollowedSpeed& f) { return f.runtime == runtime; });
    if (auto basis = detail::counting_basis(runtime, measured, host, plan_options, s.plan,
                                            usable_cpus, s.device, follows, s.plan.notes)) {
      counting.push_back(std::move(*basis));
    }
  }
  remove_stale_slices(*s.backend, s.fs);

  detail::SliceName name = own_identity(s.fs);
  name.sequence = sequence.fetch_add(1) + 1;
  s.unapplied.insert(s.unapplied.begin(), s.plan.unapplied.begin(), s.plan.unapplied.end());
  s.cgroup = s.backend->create(detail::format_slice_name(name));
  try {
    s.cgroup->apply(s.plan, s.options.allow_missing_controllers, s.unapplied);
  } catch (...) {
    s.cgroup->remove();
    s.cgroup.reset();
    throw;
  }
  try {
    s.guard = detail::SliceGuard(s.cgroup->guard_plan());
  } catch (const CgroupError& e) {
    s.unapplied.push_back(fmt::format(
        "{}: if this process is killed, the workload's own process dies with the thread that "
        "started it, but processes it started keep running in the slice until the next slice "
        "made beneath the same parent removes it",
        e.what()));
  }
  if (!speeds.empty() || !counting.empty()) {
    s.follower = std::make_unique<detail::RuntimeFollower>(
        std::move(speeds), s.cgroup.get(), detail::written_quota_us(s.plan), s.plan.cpu_period_us,
        std::move(counting));
  }
}

Slice::Slice(Slice&&) noexcept = default;
Slice& Slice::operator=(Slice&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->destroy();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Slice::~Slice() {
  if (impl_) impl_->destroy();
}

Slice::Impl& Slice::impl() const {
  if (!impl_) throw Error("this Slice was moved from: use the Slice it was moved to");
  return *impl_;
}

const Device& Slice::device() const { return impl().device; }
const EmulationPlan& Slice::plan() const { return impl().plan; }
CgroupMode Slice::mode() const { return impl().backend->mode(); }
const std::vector<std::string>& Slice::unapplied() const { return impl().unapplied; }
std::vector<std::string> Slice::paths() const {
  return impl().cgroup ? impl_->cgroup->paths() : std::vector<std::string>{};
}

CpuLimit Slice::cpu_limit() const {
  if (!impl_ || !impl_->cgroup) {
    throw Error("cpu_limit(): the slice is closed; read it before close() or the end of the "
                "with block");
  }
  const auto read = impl_->cgroup->cpu_bandwidth();
  if (!read) {
    throw CgroupError(fmt::format("cpu_limit(): cannot read the CPU bandwidth files of the "
                                  "slice in {} (no cpu controller, a file not in the kernel's "
                                  "format, or core groups with different periods)",
                                  fmt::join(impl_->cgroup->paths(), ", ")));
  }
  CpuLimit out;
  out.quota_us = read->quota_us;
  out.period_us = read->period_us;
  return out;
}

void Slice::close() noexcept {
  if (impl_) impl_->destroy();
}

bool Slice::closed() const noexcept { return !impl_ || !impl_->cgroup; }

void Slice::kill() {
  impl().require_alive();
  impl_->cgroup->kill_all();
  impl_->retired_marks.clear();  // their writers are gone
}

struct Child::State {
  std::shared_ptr<Slice::Impl> slice;
  detail::Spawned process;
  // An unsampled run's counters: their sources, and their reading at the spawn.
  std::optional<detail::Sources> counter_sources;
  detail::Snapshot before;
  std::bitset<kMetricCount> first_read;  // the metrics the first sample read
  bool peak_reset = false;
  std::vector<std::string> argv;
  std::optional<Result> result;
  // Observation: the phase channel, the sampler, the network namespace.
  detail::PhasePipe marks;
  std::unique_ptr<detail::NetworkNamespace> netns;
  std::unique_ptr<detail::Sampler> sampler;
  // The slice's CPUs kept busy while the workload runs (EmulationPlan::keep_warm).
  detail::WarmLease warm;
  // The device's speed schedule, applied while the workload runs (declared after `slice`, so
  // destroyed, and its thread stopped, before the slice it writes to may go).
  std::shared_ptr<detail::SpeedScheduler> scheduler;
  Clock::time_point origin;  // the sampler's time zero
  std::chrono::nanoseconds interval{0};
  std::uint64_t missed = 0;  // sampling deadlines the sampler could not keep

  std::string marks_text;
  // Runtimes seen by a read of the maps outside the sampler (an unsampled run's timeout).
  detail::RuntimesSeen runtimes;
  detail::RuntimesSeen runtime_paths;  // their libraries' whole paths
  std::map<std::string, std::string> thread_env;  // what the workload's environment was given
  std::string width_warning;  // projected: the workload may start more than one thread
  std::string counter_warning;  // the activation counter's directory could not be made
  // Set by the sampler's thread when this workload's phase channel brought an activation count
  // (another workload's in the slice is not this one's).
  std::shared_ptr<std::atomic<bool>> count_sent = std::make_shared<std::atomic<bool>>(false);
  // Set by the sampler's thread when it brought word of a count the counter skipped (the
  // last such).
  struct Skipped {
    std::mutex mutex;
    std::optional<detail::SkippedCount> count;
  };
  std::shared_ptr<Skipped> skipped = std::make_shared<Skipped>();
  // Whether the slice ran nothing else when this child started, and its spawn count then: the
  // thread census counts the whole slice, so it stands for this workload only when alone.
  bool alone_at_spawn = true;
  std::uint64_t spawns_before = 0;
  bool ran_alone = true;  // and nothing else started or ran in it until it ended
  // Processes an earlier workload left running in the slice when this one started (read for
  // the thread census only): they share its quota, and the census would count their threads.
  std::size_t left_at_spawn = 0;
  std::uint64_t moves_before = 0;  // the slice's CorePlacer's moves when this child started
  std::uint64_t quota_changes_before = 0;  // and its quota changes
  bool switched_at_spawn = false;  // the slice ran at a runtime's speed already (RuntimeFollower)
  // Other slices holding this slice's CPUs when the workload started and when it ended.
  std::vector<detail::CpuHolder> sharers;

  unsigned forks = detail::fork_count();  // when spawned: a forked copy leaves the workload
  bool result_given_away = false;  // moved out by wait() &&
  // Held by a wait(): two threads waiting on one Child both finished it (a crash, or two
  // results for one workload); the second now gets the first's result. `waiter` is the
  // thread that holds it.
  std::mutex waiting;
  std::atomic<std::thread::id> waiter{};
  // The workload was reaped, and the slice told it ended: a finish() that threw after either
  // leaves ~Child neither a reaped pid to signal (another process's, once reused) nor a
  // second count of the child's end.
  bool reaped = false;
  bool ended = false;
  void end_in_slice() noexcept {
    if (!ended) slice->child_ended();
    ended = true;
  }
  detail::Exit reap() {
    detail::Exit e = detail::reap(process);
    reaped = true;
    return e;
  }
  // SIGKILL to the workload itself, before it is reaped (by its pidfd while it has one: the
  // pid may name another process once reaped elsewhere). The slice's kill misses a workload
  // that moved itself out of it (systemd-run --scope, cgexec): its reap then waited for it to
  // end on its own, past the timeout or the Ctrl-C.
  void kill_direct() noexcept {
    if (reaped) return;
    if (process.pidfd.get() >= 0) {
      ::syscall(SYS_pidfd_send_signal, process.pidfd.get(), SIGKILL, nullptr, 0);
    } else {
      ::kill(process.pid, SIGKILL);
    }
  }

  // The slice's processes killed on a timeout or an interrupt. A kill that fails (a process
  // in uninterruptible sleep outlives SIGKILL past the kill's 5 s) is said in the result's
  // warnings: thrown, it replaced the caller's interrupt, and a timed-out run lost its result.
  // The slice's removal tries again.
  std::string kill_error;
  void kill_slice() noexcept {
    if (!slice->cgroup) return;
    try {
      slice->cgroup->kill_all();
    } catch (const std::exception& e) {
      try {
        kill_error = fmt::format("could not end every process of the slice after the "
                                 "workload's timeout or interrupt: {}",
                                 e.what());
      } catch (...) {
        kill_error = "could not end every process of the slice";
      }
    }
  }
  // The killed workload, reaped. After a kill that failed, the workload itself may be what
  // survived SIGKILL (uninterruptible sleep): waited for a few seconds, not for ever (a reap
  // blocked, beyond any timeout or Ctrl-C); nullopt while it lives.
  std::optional<detail::Exit> reap_killed() {
    if (kill_error.empty()) return reap();
    try {
      std::optional<detail::Exit> e = detail::wait_exit(
          process, Clock::now() + std::chrono::seconds(5), [] {}, std::chrono::milliseconds(50));
      if (e) reaped = true;
      return e;
    } catch (const detail::StatusLost&) {
      return reap();  // reaped elsewhere: its status is lost
    }
  }

  // wait(): the stored result, after waiting if it was not waited for yet.
  Result& await(std::optional<std::chrono::duration<double>> timeout, const InterruptCheck& check);
  Result finish(const detail::Exit& exit, bool timed_out);
  void observe(Result& r, const detail::Exit& exit);
  void analyse(Result& r);
  // Before the slice's processes are killed while they run (a timeout, an interrupt): the
  // libraries they loaded are in their maps only while they live.
  void scan_runtimes() noexcept;
  void close_pidfd() {
    process.pidfd.reset();
  }
};

Child::Child(std::unique_ptr<State> state) : state_(std::move(state)) {}
Child::Child(Child&&) noexcept = default;
// Assigning over a Child that was never waited for ends its workload, as destroying it does.
Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    Child abandoned(std::move(*this));
    state_ = std::move(other.state_);
  }
  return *this;
}

Child::~Child() {
  if (!state_ || state_->result) return;
  if (state_->forks != detail::fork_count()) {
    // A forked copy: the workload is the parent's child, to end and reap, and the threads of
    // its sampler and scheduler stayed there: the state is left as it is.
    (void)state_.release();
    return;
  }
  if (!state_->reaped) {
    state_->kill_direct();
    detail::reap(state_->process);
  }
  state_->close_pidfd();
  // What the workload left in the slice may still hold the phase pipe's write end.
  Slice::Impl& slice = *state_->slice;
  if (slice.cgroup && state_->marks.read.get() >= 0) slice.retire(std::move(state_->marks.read));
  state_->end_in_slice();
}

pid_t Child::pid() const { return state().process.pid; }

Child Slice::spawn(const Command& command, const SpawnOptions& options) {
  impl().require_alive();
  Impl& s = *impl_;
  if (options.sample_interval.count() != 0) detail::check_sample_interval(options.sample_interval);
  detail::PreparedCommand prepared(command);
  // Default-initialised: every member has its own initialiser, so the zeroing that
  // make_unique's value-initialisation adds (several kilobytes, the stored Result) is skipped.
  std::unique_ptr<Child::State> state(new Child::State);
  state->slice = impl_;
  state->argv = command.argv;
  state->interval = options.sample_interval;

  // The phase channel: the slice's spare one when it has one (a run in progress has it
  // otherwise), else a new one. What a previous run's workload wrote was read at its end.
  if (s.spare_pipe) {
    state->marks = std::move(*s.spare_pipe);
    s.spare_pipe.reset();
  } else {
    state->marks = detail::make_phase_pipe();
  }
  prepared.set_env(kPhaseEnv, state->marks.env);
  // The device's width and passive waiting, where the workload has not chosen its own.
  const std::map<std::string, std::string>& defaults = s.plan.thread_env;
  const bool wait_chosen = group_chosen(kThreadWaitVariables, defaults, prepared);
  // (glibc's tunables name the same thresholds: glibc.malloc.mmap_threshold, ...)
  const std::optional<std::string> tunables = prepared.env("GLIBC_TUNABLES");
  const bool malloc_chosen = (tunables && tunables->find("glibc.malloc.") != std::string::npos) ||
                             group_chosen(kSteadyMallocVariables, defaults, prepared);
  for (const auto& [name, value] : defaults) {
    if ((wait_chosen && in_group(kThreadWaitVariables, name)) ||
        (malloc_chosen && in_group(kSteadyMallocVariables, name)) ||
        prepared.env(name).has_value()) {
      continue;
    }
    prepared.set_env(name, value);
    state->thread_env.emplace(name, value);
  }
  // Projected: the one core's time is divided by the board's speed-up, which holds for one
  // thread; a workload told to start more shares the one core's quota among them.
  if (s.plan.threads_projection) {
    std::string wider;
    for (const char* name : kThreadCountVariables) {
      const std::optional<std::string> value = prepared.env(name);
      if (value && *value != "1") wider += fmt::format("{}{}={}", wider.empty() ? "" : " ", name, *value);
    }
    if (!wider.empty() || defaults.empty()) {
      state->width_warning = fmt::format(
          "projected core emulation divides the time of one thread on one device core by the "
          "board's speed-up, but the workload's environment {}: its threads share the one "
          "core's quota and the projected times come out too slow; set them to 1, or leave "
          "them unset with the thread environment on",
          wider.empty() ? "was left alone (thread_env off), so it may start one thread per "
                          "host CPU"
                        : "sets " + wider);
    }
  }
  prepared.keep_fd(state->marks.write.get());
  // The activation counter, first on the workload's PYTHONPATH (off sys.path at once, off
  // PYTHONPATH once the process imports PyTorch, leaving the rest as it was: unset, empty or
  // the workload's own), where a sampler can hear it.
  // Its directory is made for the slice's first sampled run (tried again at the next one when
  // it cannot be made).
  if (s.follower && s.follower->counts() && options.sample_interval.count() != 0) {
    if (!s.counter_dir) {
      try {
        const detail::SliceName me = own_identity(s.fs);
        remove_stale_counter_dirs(s.fs, me.pid_ns);
        s.counter_dir.emplace(detail::CounterDirOwner{me.pid_ns, me.owner, me.owner_start});
      } catch (const Error& e) {
        state->counter_warning = fmt::format("activations: not counted: {}", e.what());
      }
    }
    if (s.counter_dir) {
      const std::optional<std::string> path = prepared.env("PYTHONPATH");
      prepared.set_env("PYTHONPATH",
                       path ? s.counter_dir->path() + ":" + *path : s.counter_dir->path());
      prepared.set_env(detail::kCountRuntimesEnv,
                       fmt::format("{}", fmt::join(s.follower->counted_runtimes(), ",")));
      // The room its copies of an ONNX Runtime session must fit in (0: no limit), and where
      // the slice's use of it is read.
      const detail::CountMemoryFiles memory = detail::count_memory_files(s.cgroup->files());
      prepared.set_env(detail::kCountMemoryEnv, memory.usage.empty()
                                                    ? "0"
                                                    : std::to_string(s.plan.memory_max_bytes));
      prepared.set_env(detail::kCountMemoryUsageEnv, memory.usage);
      prepared.set_env(detail::kCountMemoryStatEnv, memory.stat);
    }
  }

  // A fresh peak per workload when the slice is idle and the kernel can reset it (before a
  // sampler is made: its memory.peak reads through the file that was reset).
  if (s.running == 0) state->peak_reset = s.cgroup->reset_peak();

  if (options.isolate_network) {
    state->netns = std::make_unique<detail::NetworkNamespace>();
    prepared.set_netns(state->netns->fd());
  }
  if (options.sample_interval.count() != 0) {
    // A sampler kept from before a fork (this is the child) has no thread here: not reused.
    if (s.spare_sampler && !s.spare_sampler->reusable()) s.spare_sampler.reset();
    if (s.spare_sampler && !state->netns) {
      state->sampler = std::move(s.spare_sampler);
      state->sampler->set_interval(options.sample_interval);
    } else {
      // A workload in its own network namespace adds that namespace's counters, a source of
      // one run: such a sampler is made for the run and not kept.
      detail::Sources sources = detail::Sources::of(s.cgroup->files());
      if (state->netns) sources.add_network(state->netns->take_dev());
      state->sampler =
          std::make_unique<detail::Sampler>(std::move(sources), options.sample_interval);
      state->sampler->watch_runtimes(runtime_watch(s.cgroup->files()));
      if (s.plan.threads_projection) state->sampler->watch_threads(thread_census(s.cgroup->files()));
    }
    state->sampler->watch_marks(state->marks.read.get());
    if (s.follower) {
      state->sampler->on_new_runtime(
          [follower = s.follower.get()](const detail::RuntimesSeen& seen) {
            follower->seen(seen);
          });
    } else {
      state->sampler->on_new_runtime(nullptr);
    }
    if (s.follower && s.follower->counts()) {
      state->sampler->on_marks(
          [follower = s.follower.get(), sent = state->count_sent,
           skipped = state->skipped](std::string_view lines) {
            if (follower->counted(lines)) sent->store(true, std::memory_order_relaxed);
            try {
              if (auto skip = detail::last_skipped_count(lines)) {
                std::lock_guard<std::mutex> lock(skipped->mutex);
                skipped->count = std::move(skip);
              }
            } catch (...) {
              // Out of memory: the run's warning says less.
            }
          });
    } else {
      state->sampler->on_marks(nullptr);
    }
  }
  state->switched_at_spawn = s.follower && s.follower->switched();

  if (!state->sampler) {
    if (s.spare_counters && s.spare_counters->reusable()) {
      state->counter_sources = std::move(s.spare_counters);
    } else {
      state->counter_sources = open_counter_sources(s.cgroup->files());
    }
    s.spare_counters.reset();
    state->before = state->counter_sources->snapshot(detail::kCounterMetrics);
  }
  // Per-core emulation: the workload starts in the first core's group, and its threads are
  // spread from there (one placer for all the slice's running workloads).
  if (!s.placer) {
    if (std::vector<std::string> tasks = s.cgroup->core_tasks(); !tasks.empty()) {
      const std::uint64_t groups = s.plan.core_groups, period = s.plan.cpu_period_us;
      s.placer = std::make_unique<detail::CorePlacer>(
          s.fs, std::move(tasks), double(s.plan.core_quota_us) / double(period),
          s.plan.core_quota_by_busy, [cgroup = s.cgroup.get(), groups, period](std::uint64_t q) {
            return cgroup->set_cpu_bandwidth(q * groups, period);
          });
    }
  }
  state->sharers = detail::cpu_ledger().others(s.cpus);
  if (s.running == 0 && s.plan.threads_projection && state->sampler) {
    state->left_at_spawn = s.cgroup->procs().size();
  }
  state->moves_before = s.placer ? s.placer->moves() : 0;
  state->quota_changes_before = s.placer ? s.placer->quota_changes() : 0;
  detail::Placement placement;
  placement.cgroup_fd = s.cgroup->clone_fd();
  placement.procs_fds = s.cgroup->self_attach_fds();
  placement.attach = [&s](pid_t pid) { s.cgroup->attach(pid); };
  placement.die_with_parent = !s.guard;
  // Warm before the child is released, so that its first throttled period finds them running.
  if (s.plan.keep_warm) state->warm = detail::WarmLease(s.plan.cpus);
  // The sampler starts before the child is released, so its first sample is the baseline.
  state->origin = state->sampler ? state->sampler->start() : Clock::now();
  try {
    state->process = detail::spawn_process(prepared, placement);
  } catch (...) {
    if (state->sampler) state->sampler->stop();
    throw;
  }
  state->alone_at_spawn = s.running == 0 && state->left_at_spawn == 0;
  state->spawns_before = s.spawns;
  ++s.running;
  ++s.spawns;
  // From here the Child owns the workload: what throws below (a thread that cannot start)
  // leaves ~Child to kill and reap it and to count its end, as for any Child not waited for.
  Child child(std::move(state));
  if (!s.device.speed_schedule.empty()) {
    Child::State& started = *child.state_;
    started.scheduler = std::make_shared<detail::SpeedScheduler>(
        *s.cgroup, s.plan, s.device.speed_schedule, started.process.released);
    std::erase_if(s.schedulers, [](const auto& w) { return w.expired(); });
    s.schedulers.push_back(started.scheduler);
  }
  return child;
}

Result Child::State::finish(const detail::Exit& exit, bool timed_out) {
  close_pidfd();
  Result r;
  if (slice->placer) {
    r.thread_moves = slice->placer->moves() - moves_before;
    r.core_quota_changes = slice->placer->quota_changes() - quota_changes_before;
    if (std::string error = slice->placer->error(); !error.empty()) r.warnings.push_back(error);
  }
  if (slice->cgroup) {
    std::vector<detail::CpuHolder> now = detail::cpu_ledger().others(slice->cpus);
    sharers.insert(sharers.end(), now.begin(), now.end());
  }
  if (std::string shared = detail::sharing_warning(sharers, ::getpid()); !shared.empty()) {
    r.warnings.push_back(std::move(shared));
  }
  if (const std::string problem = detail::cpu_ledger().problem(); !problem.empty()) {
    r.warnings.push_back(fmt::format("{}: the CPU ledger counts this process's slices only, so "
                                     "another edgeprof process may share these CPUs unseen",
                                     problem));
  } else if (!slice->cpus.problem().empty()) {
    r.warnings.push_back(slice->cpus.problem());
  }
  // Another workload ran in the slice beside this one: the census counted its threads too.
  ran_alone = alone_at_spawn && slice->running == 1 && slice->spawns == spawns_before + 1;
  end_in_slice();
  // The workload has ended: its CPUs need no keeping warm.
  r.keep_warm_cpu_s = warm.cpu_seconds();
  if (!warm.error().empty()) r.warnings.push_back(warm.error());
  if (!kill_error.empty()) r.warnings.push_back(kill_error);
  warm.release();
  observe(r, exit);
  if (WIFEXITED(exit.status)) r.exit_code = WEXITSTATUS(exit.status);
  if (WIFSIGNALED(exit.status)) r.signal = WTERMSIG(exit.status);
  r.timed_out = timed_out;
  r.wall_time_s = std::chrono::duration<double>(exit.when - process.released).count();
  r.child_max_rss_bytes = static_cast<std::uint64_t>(exit.usage.ru_maxrss) * 1024;

  // One reader of the counters, the sampler's sources: a sampled run's first and last samples
  // are its counters; an unsampled run read them at its spawn and reads them now. A source
  // that failed during a sampled run leaves the end to sources opened afresh.
  detail::Snapshot after;
  if (interval.count() != 0) {  // sampled
    before = counters_in(r.series, 0, first_read);
    if (r.series.size() > 0 && counters_complete(first_read, r.series.complete)) {
      after = counters_in(r.series, r.series.size() - 1, r.series.complete);
    } else if (slice->cgroup) {
      after = open_counter_sources(slice->cgroup->files()).snapshot(detail::kCounterMetrics);
    }
  } else if (counter_sources) {
    if (slice->cgroup) {
      after = counter_sources->snapshot(detail::kCounterMetrics);
      if (!slice->spare_counters && counter_sources->reusable()) {
        slice->spare_counters = std::move(counter_sources);
      }
    }
    counter_sources.reset();
  }
  const std::optional<std::uint64_t> peak =
      slice->cgroup ? slice->cgroup->peak() : std::optional<std::uint64_t>();
  auto delta = [&](Metric m) -> std::uint64_t {
    return before.has(m) && after.has(m) && after[m] >= before[m] ? after[m] - before[m] : 0;
  };
  // The run's CPU time is the difference of the totals (user + system: on v1 cpuacct.usage,
  // exact). Its split is the difference of the user parts, kept within it: v1 splits each
  // total by the tick counts since the slice was made, so one tick of system time in a short
  // run can move the split of the whole history, and the user part can even shrink.
  const auto total = [](const detail::Snapshot& c) -> std::optional<std::uint64_t> {
    if (!c.has(Metric::cpu_user_ns) || !c.has(Metric::cpu_system_ns)) return std::nullopt;
    return c[Metric::cpu_user_ns] + c[Metric::cpu_system_ns];
  };
  const std::optional<std::uint64_t> total_before = total(before), total_after = total(after);
  const std::uint64_t cpu_ns = total_before && total_after && *total_after >= *total_before
                                   ? *total_after - *total_before
                                   : 0;
  const std::uint64_t user_ns = std::min(cpu_ns, delta(Metric::cpu_user_ns));
  r.cpu_user_s = double(user_ns) / 1e9;
  r.cpu_system_s = double(cpu_ns - user_ns) / 1e9;
  // The other counters' differences, each into its field (detail::kMetricTable).
  for (const detail::MetricRow& row : detail::kMetricTable) {
    if (row.result_count) r.*row.result_count = delta(row.metric);
    if (row.result_seconds) r.*row.result_seconds = double(delta(row.metric)) / 1e9;
  }
  r.oom_killed = r.oom_kills > 0;
  if (peak) {
    r.peak_memory_bytes = peak;
    r.peak_memory_source = slice->cgroup->peak_source();
    if (!peak_reset) r.peak_memory_source += " (peak since the slice was created)";
  }
  r.device = slice->device;
  r.plan = slice->plan;
  if (const auto made = slice->follower ? slice->follower->switched() : std::nullopt) {
    // The slice runs at the speed of the runtime a workload loaded: since this run began, or
    // since the time in the change.
    if (made->error.empty()) {
      r.device = made->speed->device;
      r.plan = made->speed->plan;
    }
    if (!switched_at_spawn) {
      // At 0 when another workload of the slice, running beside this one, made it before this
      // one was released.
      const SpeedChange change = speed_change(
          std::max(0.0, std::chrono::duration<double>(made->when - process.released).count()),
          made->speed->runtime, made->speed, made->error);
      r.speed_changes.push_back(change);
      r.warnings.push_back(detail::switch_warning(slice->device, *made, change.t_s));
    }
  }
  if (slice->follower && slice->follower->counts()) {
    // The last count that set the slice's speed by the workload's exit, before this run (it
    // started at that speed) or during it; and each count during it, a change at its time
    // (refused ones with their error). A count read after the exit sets the slice's speed for
    // the next run, not this one's.
    const detail::CountedSwitches counted = slice->follower->counted_switches();
    const detail::CountedSwitch* applied =
        counted.applied && counted.applied->when <= exit.when ? &*counted.applied : nullptr;
    for (const detail::CountedSwitch& made : counted.counts) {
      if (made.when > exit.when) break;
      if (made.error.empty()) applied = &made;
      if (made.when < process.released) continue;
      SpeedChange change =
          speed_change(std::chrono::duration<double>(made.when - process.released).count(),
                       made.count.runtime, made.speed ? &*made.speed : nullptr, made.error);
      change.memory_mb_per_ms = made.mb_per_ms;
      r.speed_changes.push_back(change);
      r.warnings.push_back(detail::counted_warning(made, change.t_s));
    }
    if (applied) {
      r.device = applied->speed->device;
      r.plan = applied->speed->plan;
    }
    // What this workload's counts did not say: one read as it exited (the next run's speed),
    // or none at all (a sampled run: an unsampled one has no counter).
    if (count_sent->load(std::memory_order_relaxed)) {
      if (!counted.counts.empty() && counted.counts.back().when > exit.when) {
        r.warnings.push_back(detail::late_count_warning(counted.counts.back()));
      }
    } else if (interval.count() != 0) {
      std::optional<detail::SkippedCount> skip;
      {
        std::lock_guard<std::mutex> lock(skipped->mutex);
        skip = skipped->count;
      }
      // A count skipped says why; the speed an earlier workload counted is said too.
      if (skip) r.warnings.push_back(detail::skipped_count_warning(*skip, r.device, applied));
      if (!skip || applied) {
        if (auto warning = detail::uncounted_warning(r.device, applied, r.runtimes_seen,
                                                     slice->follower->counted_runtimes())) {
          r.warnings.push_back(std::move(*warning));
        }
      }
    }
    // In time order with a runtime's switch.
    std::stable_sort(r.speed_changes.begin(), r.speed_changes.end(),
                     [](const SpeedChange& a, const SpeedChange& b) { return a.t_s < b.t_s; });
  }
  // What the plan the run ended with says that a run must say too (a followed runtime's
  // speed is not corrected for drift, and has its own quota).
  for (std::string& w : detail::plan_warnings(r.plan, r.device)) r.warnings.push_back(std::move(w));
  if (r.device.speed_kind == "nn" && r.device.nn) {
    // A projected time carries the board's speed-up's error too (device_interval()).
    r.device_interval = device_interval(*r.device.nn, r.plan);
  }
  r.cgroup_mode = slice->backend->mode();
  r.unapplied = slice->unapplied;
  r.command = argv;
  r.placement = process.placement;
  r.network_isolated = netns != nullptr;
  r.host = host_info();
  r.edgeprof_version = version();
  analyse(r);
  return r;
}

// Stops the sampler (its last sample holds the final counters) and collects what it saw.
void Child::State::observe(Result& r, const detail::Exit& exit) {
  if (scheduler) {
    const std::vector<SpeedChange> applied = scheduler->stop();
    scheduler.reset();
    // The scheduler runs until the workload is reaped: a step that fell due after its exit
    // slowed nothing, and is not the run's.
    const double exited_s = std::chrono::duration<double>(exit.when - process.released).count();
    for (const SpeedChange& c : applied) {
      if (c.t_s <= exited_s) r.speed_changes.push_back(c);
    }
    // The next workload in this slice starts at the device's full speed again.
    if (!applied.empty() && slice->cgroup) {
      if (int err = slice->cgroup->set_cpu_bandwidth(slice->plan.cpu_quota_us,
                                                     slice->plan.cpu_period_us)) {
        r.warnings.push_back(fmt::format("could not restore the CPU bandwidth after the speed "
                                         "schedule: {} (errno {})",
                                         std::strerror(err), err));
      }
    }
  }
  if (sampler) {
    sampler->stop();
    first_read = sampler->first_read();
    r.series = sampler->take_columns();
    r.sources = sampler->sources().status();
    missed = sampler->missed();
    // Times relative to the release of the child, not to the sampler's start.
    const std::int64_t shift = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   origin - process.released)
                                   .count();
    for (auto& t : r.series.t_ns) t += shift;
    marks_text = sampler->marks();
    detail::merge_runtimes(runtimes, sampler->runtimes_seen());
    detail::merge_runtimes(runtime_paths, sampler->runtime_paths());
    if (ran_alone) r.threads_at_once = sampler->threads_at_once();
    // The next run in this slice reuses it, its thread asleep until then.
    if (slice->cgroup && !slice->spare_sampler && sampler->reusable()) {
      slice->spare_sampler = std::move(sampler);
    } else {
      sampler.reset();
    }
  } else {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(marks.read.get(), buffer, sizeof buffer)) > 0) {
      marks_text.append(buffer, static_cast<size_t>(n));
    }
    // Read only now: a pipe that filled dropped every mark after, and the phases were
    // silently fewer. A pipe is full short of its size: a line that does not fit in its last
    // page's rest goes to a new page, so each page may end with up to a line (phase.hpp's are
    // at most 256 bytes) unused.
    const int capacity = ::fcntl(marks.read.get(), F_GETPIPE_SZ);
    if (capacity > 0 && marks_text.size() + static_cast<std::size_t>(capacity) / 4096 * 256 >=
                            static_cast<std::size_t>(capacity)) {
      r.warnings.push_back(fmt::format(
          "the phase marks all but filled their channel ({} of {} bytes) in this unsampled "
          "run, which reads them only at its end: marks written once it was full were "
          "dropped, so phases and marks may be missing; sample the run (an interval) to read "
          "them as they come",
          marks_text.size(), capacity));
    }
  }
  r.runtimes_seen = std::move(runtimes);
  r.thread_env = thread_env;
  if (!width_warning.empty()) r.warnings.push_back(width_warning);
  if (!counter_warning.empty()) r.warnings.push_back(counter_warning);
  if (left_at_spawn != 0) {
    r.warnings.push_back(fmt::format(
        "{} process(es) an earlier workload left running in the slice ran beside this one, "
        "sharing its quota; its busy threads were not counted (the count would include "
        "theirs): end them with Slice.kill() before the next run",
        left_at_spawn));
  }
  if (r.threads_at_once) {
    if (std::string census = detail::census_warning(*r.threads_at_once); !census.empty()) {
      r.warnings.push_back(std::move(census));
    }
  }

  // The phase pipe, read to its end. A process the workload left in the slice holds its write
  // end: is anyone left? The final sample (after the reaping) counted the tasks where it could;
  // else one read of the slice's processes says. (Another run's processes count too: a pipe
  // that could have been kept is retired then.)
  bool anyone_left = true;
  if (r.series.size() != 0 && r.series.has(Metric::tasks) &&
      r.series.complete.test(static_cast<size_t>(Metric::tasks))) {
    anyone_left = r.series[Metric::tasks].back() != 0;
  } else if (slice->cgroup) {
    anyone_left = slice->cgroup->has_processes();
  }
  if (slice->cgroup && !anyone_left) {
    // Nobody else can write to it, nor to a retired one: the slice's next run may use it.
    slice->retired_marks.clear();
    if (!slice->spare_pipe) {
      slice->spare_pipe = std::move(marks);
    } else {
      marks = detail::PhasePipe{};
    }
  } else if (slice->cgroup) {
    // A later mark from whoever is left goes nowhere, and costs them nothing.
    slice->retire(std::move(marks.read));
    marks = detail::PhasePipe{};
  } else {
    marks = detail::PhasePipe{};
  }
}

// The figures derived from the samples and the marks.
void Child::State::analyse(Result& r) {
  const bool host_wide_pressure = slice->backend->mode() != CgroupMode::unified;
  // One period and quota all run, unless the speed changed during it.
  const double period_s = r.speed_changes.empty() ? double(r.plan.cpu_period_us) / 1e6 : 0.0;
  r.summary = summarize(r.series, std::chrono::duration<double>(interval).count(),
                        r.plan.capacity_cores(), missed, host_wide_pressure, period_s);
  const std::int64_t release_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(process.released.time_since_epoch())
          .count();
  std::size_t malformed = 0;
  r.phases = parse_phases(marks_text, release_ns, r.series, r.wall_time_s, &malformed);
  const double capacity = r.plan.capacity_cores();
  r.energy_j = estimate_energy_j(r.device.power, r.wall_time_s, r.cpu_user_s + r.cpu_system_s,
                                 capacity);
  for (Phase& ph : r.phases) {
    if (ph.cpu_s) {
      ph.energy_j = estimate_energy_j(r.device.power, ph.wall_time_s(), *ph.cpu_s, capacity);
    }
  }
  // Throttled by one quota throughout: a phase shorter than its period is not timed one by one.
  if (r.throttled_periods > 0) {
    if (auto warning = detail::short_phase_warning(r.phases, period_s)) {
      r.warnings.push_back(std::move(*warning));
    }
  }
  if (malformed) {
    r.warnings.push_back(fmt::format("{} phase mark{} could not be read (a partial line from a "
                                     "killed workload, or an end without a begin)",
                                     malformed, malformed == 1 ? "" : "s"));
  }
  // Where a count of the device's runtime set its speed in this run, the other runtimes the
  // slice counts are not warned of: the count says which one the workload infers with (a
  // PyTorch it imported to export its model sent none); others are.
  detail::RuntimesSeen others = r.runtimes_seen;
  if (r.device.nn && slice->follower &&
      std::any_of(r.speed_changes.begin(), r.speed_changes.end(), [&](const SpeedChange& c) {
        return c.error.empty() && c.memory_mb_per_ms > 0 && c.runtime == r.device.nn->basis;
      })) {
    for (const std::string& counted : slice->follower->counted_runtimes()) others.erase(counted);
  }
  if (auto warning = detail::runtime_warning(r.device, others)) {
    r.warnings.push_back(std::move(*warning));
  }
  if (!slice->started_at.empty() && r.device.nn) {
    if (auto warning = detail::start_warning(r.device, r.device.nn->basis, r.runtimes_seen)) {
      r.warnings.push_back(std::move(*warning));
    }
  }
  // The nn speed came from this host's rating of a runtime the workload loaded another
  // release of (read here, after the run: the package's directory, not on the sampler's
  // thread).
  const detail::RuntimeSpec* rated =
      r.device.nn && r.device.speed_kind == "nn" ? detail::find_runtime(r.device.nn->basis)
                                                 : nullptr;
  if (rated && rated->rating) {
    const std::string basis(rated->id);
    const auto library = runtime_paths.find(detail::loaded_as(basis));
    if (library != runtime_paths.end()) {
      const std::optional<std::string> loaded =
          detail::package_version(detail::Fs(), library->second);
      const std::optional<NnRating> rating =
          loaded ? cached_nn_rating(nullptr, basis) : std::nullopt;
      if (rating) {
        if (auto warning = detail::version_warning(basis, *loaded, rating->runtime,
                                                   rating->cache_file, rating->measured_at)) {
          r.warnings.push_back(std::move(*warning));
        }
      }
    }
  }
  for (const SourceStatus& st : r.sources) {
    if (st.failed) {
      r.warnings.push_back(fmt::format("sampling of {} stopped during the run ({}); its "
                                       "figures are marked incomplete",
                                       st.name, st.error));
    }
  }
}

void Child::State::scan_runtimes() noexcept {
  if (sampler) {
    try {
      sampler->scan_runtimes();
    } catch (...) {
      // Only its lock could throw: nothing seen then.
    }
  } else if (slice->cgroup) {
    try {
      detail::RuntimeWatch watch = runtime_watch(slice->cgroup->files());
      watch.scan();
      detail::merge_runtimes(runtimes, watch.seen());
      detail::merge_runtimes(runtime_paths, watch.paths());
    } catch (...) {
      // Out of memory: nothing seen.
    }
  }
}

Result& Child::State::await(std::optional<std::chrono::duration<double>> timeout,
                            const InterruptCheck& check) {
  std::unique_lock<std::mutex> lock(waiting, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (waiter.load() == std::this_thread::get_id()) {
      throw Error("wait() on this Child was called again from inside its own wait() (a signal "
                  "handler, an InterruptCheck): the first wait() gives the result");
    }
    // Another thread's wait() makes the result: `check` keeps being called meanwhile (Ctrl-C
    // in Python), the timeout is the first wait()'s.
    while (!lock.try_lock()) {
      if (check) check();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  waiter.store(std::this_thread::get_id());
  struct Release {
    std::atomic<std::thread::id>& w;
    ~Release() { w.store(std::thread::id{}); }
  } release{waiter};
  const Slice::Impl::Waiting counted(*slice);
  if (result_given_away) {
    throw Error("this Child's result was moved out by an earlier wait() on it as an rvalue: "
                "keep that result, or wait() on the Child as an lvalue to keep a copy in it");
  }
  // Checked first: a bad timeout is refused whether or not the result is in.
  const std::optional<Clock::time_point> deadline = deadline_after(process.released, timeout);
  if (result) return *result;
  if (reaped) {  // its pid may be another process's by now: never waited for again
    throw Error("this Child's workload ended, but making its result failed in an earlier "
                "wait(): run the workload again");
  }
  std::optional<detail::Exit> exit;
  try {
    exit = detail::wait_exit(process, deadline, check, std::chrono::milliseconds(50));
  } catch (const detail::StatusLost&) {
    // Reaped elsewhere: this workload is gone, and the slice's others run on (they are not
    // this wait's to end).
    reaped = true;
    detail::Exit lost;
    lost.status = detail::kLostStatus;
    lost.when = Clock::now();
    result = finish(lost, false);
    throw;
  } catch (...) {
    // Interrupted (Ctrl-C in Python, or the caller's own check): nothing keeps running, and
    // the child is reaped so the destructor has nothing left to do.
    scan_runtimes();
    kill_slice();
    kill_direct();
    // The interrupt stands either way; a workload that outlived its kill stays the Child's.
    if (const std::optional<detail::Exit> killed = reap_killed()) result = finish(*killed, false);
    throw;
  }
  bool timed_out = false;
  if (!exit) {
    timed_out = true;
    scan_runtimes();
    kill_slice();
    kill_direct();
    exit = reap_killed();
    if (!exit) {
      throw CgroupError(fmt::format("{}; the workload itself (pid {}) outlived SIGKILL too, so "
                                    "its timeout gives no result",
                                    kill_error, process.pid));
    }
  }
  reaped = true;  // by wait_exit() when it gave an exit
  result = finish(*exit, timed_out);
  return *result;
}

Child::State& Child::state() const {
  if (!state_) throw Error("this Child was moved from: wait() on the Child it was moved to");
  return *state_;
}

Result Child::wait(std::optional<std::chrono::duration<double>> timeout,
                   const InterruptCheck& check) & {
  return state().await(timeout, check);
}

Result Child::wait(std::optional<std::chrono::duration<double>> timeout,
                   const InterruptCheck& check) && {
  Result r = std::move(state().await(timeout, check));
  state_->result_given_away = true;
  return r;
}

Result run(const Command& command, const Device& device, const RunOptions& options) {
  deadline_after(Clock::now(), options.timeout);  // a bad timeout is refused before anything
  Slice slice(device, options.slice);
  Child child = slice.spawn(command, options.spawn);
  return std::move(child).wait(options.timeout, options.check);
}

RepeatedResult run_repeated(const Command& command, const Device& device, int repeat,
                            int warmup, const RunOptions& options, const RunCallback& progress) {
  if (repeat < 1) throw Error(fmt::format("repeat must be at least 1, got {}", repeat));
  if (warmup < 0) throw Error(fmt::format("warmup must be 0 or more, got {}", warmup));
  if (repeat > std::numeric_limits<int>::max() - warmup) {
    throw Error(fmt::format("repeat {} and warmup {} make more runs than an int counts", repeat,
                            warmup));
  }
  deadline_after(Clock::now(), options.timeout);  // a bad timeout is refused before anything
  RepeatedResult out;
  const int total = warmup + repeat;
  // After a run whose count set its speed (PlanOptions::count_activations), the others start
  // at that speed and count nothing: the model is the same, and a count runs the model at one
  // thread until it comes.
  Device at = device;
  RunOptions each = options;
  std::string counted_note, refused;
  for (int i = 0; i < total; ++i) {
    const bool is_warmup = i < warmup;
    // A fresh slice each time, gone before the progress call. Only its planning is retried:
    // an error of the run itself (a spawn, a lost status, an interrupt) or of its cgroups is
    // the caller's, whatever speed the run had.
    std::optional<Slice> slice;
    try {
      slice.emplace(at, each.slice);
    } catch (const Error& e) {
      if (!dynamic_cast<const UnsupportedError*>(&e) && !dynamic_cast<const DeviceError*>(&e)) {
        throw;
      }
      if (counted_note.empty()) throw;
      // The counted speed cannot be planned from the start (the count's slice kept the plan
      // it started with): these runs count as the first did.
      refused = fmt::format("activations: counted in this run again: the speed an earlier run "
                            "counted cannot be planned from the start: {}",
                            e.what());
      at = device;
      each = options;
      counted_note.clear();
      slice.emplace(at, each.slice);
    }
    Result r = slice->spawn(command, each.spawn).wait(each.timeout, each.check);
    slice.reset();
    if (!refused.empty()) r.plan.notes.push_back(refused);
    if (!counted_note.empty()) {
      r.plan.notes.push_back(counted_note);
    } else if (each.slice.plan.count_activations && refused.empty()) {
      const auto c = std::find_if(r.speed_changes.rbegin(), r.speed_changes.rend(),
                                  [](const SpeedChange& change) {
                                    return detail::is_counted_runtime(change.runtime) &&
                                           change.memory_mb_per_ms > 0 && change.error.empty();
                                  });
      if (c != r.speed_changes.rend()) {
        try {
          at = for_runtime(device, c->runtime, nullptr, c->memory_mb_per_ms);
          each.slice.plan.count_activations = false;
          counted_note = fmt::format(
              "activations: not counted again: run {} of {}{} counted {:.4g} MB per ms, and this "
              "run started at the device's {} speed with that memory term (as --runtime {} "
              "--memory-mb-per-ms {:.4g} would)",
              i + 1, total, is_warmup ? " (a warm-up)" : "", c->memory_mb_per_ms,
              detail::runtime_name(c->runtime), c->runtime, c->memory_mb_per_ms);
        } catch (const Error&) {
          // Not plannable from the start (the count's slice planned it): count again.
        }
      }
    }
    if (progress) progress(i, total, is_warmup, r);
    (is_warmup ? out.warmups : out.runs).push_back(std::move(r));
  }
  out.stats = describe_runs(out.runs);
  return out;
}

}  // namespace edgeprof
