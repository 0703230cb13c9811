#include "edgeprof/slice.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fmt/format.h>
#include <mutex>

#include "cgroup/backend.hpp"
#include "edgeprof/error.hpp"
#include "parse.hpp"
#include "spawn.hpp"

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

namespace {

const detail::Layout& layout() {
  static const detail::Layout cached = detail::discover_layout(detail::Fs());
  return cached;
}

std::string parent_from(const SliceOptions& options) {
  if (!options.parent.empty()) return options.parent;
  if (const char* env = std::getenv("EDGEPROF_CGROUP_PARENT"); env && *env) return env;
  return {};
}

// Removes slices whose owner died (kill -9) before it could clean up. A slice is left alone
// while its owner (pid + start time, so a reused pid does not count) is alive.
void remove_stale_slices(detail::Backend& backend, const detail::Fs& fs) {
  for (const std::string& name : backend.slice_names()) {
    auto parsed = detail::parse_slice_name(name);
    if (!parsed) continue;
    auto start = detail::process_start_time(fs, parsed->owner);
    if (start && *start == parsed->owner_start) continue;
    try {
      backend.remove_stale(name);
    } catch (const Error&) {
      // Another process may be sweeping the same slice; the next sweep retries.
    }
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
    cached.owner = self;
    cached.owner_start = detail::process_start_time(fs, self).value_or(0);
  }
  return cached;
}

}  // namespace

CgroupMode cgroup_mode() { return layout().mode; }

struct Slice::Impl {
  Device device;
  SliceOptions options;
  EmulationPlan plan;
  std::vector<std::string> unapplied;
  detail::Fs fs;
  std::unique_ptr<detail::Backend> backend;
  std::unique_ptr<detail::Cgroup> cgroup;
  int running = 0;  // children spawned and not yet reaped

  void require_alive() const {
    if (!cgroup) throw Error("this slice is closed: create a new Slice");
  }

  void destroy() noexcept {
    if (!cgroup) return;
    try {
      cgroup->kill_all();
    } catch (const std::exception& e) {
      fmt::print(stderr, "edgeprof: {}\n", e.what());
    }
    if (!cgroup->remove()) {
      fmt::print(stderr, "edgeprof: could not remove {}; it is removed the next time a slice "
                         "is created beneath the same parent\n",
                 fmt::join(cgroup->paths(), ", "));
    }
    cgroup.reset();
  }

  ~Impl() { destroy(); }
};

Slice::Slice(Device device, SliceOptions options) : impl_(std::make_shared<Impl>()) {
  static std::atomic<std::uint64_t> sequence{0};
  Impl& s = *impl_;
  s.plan = plan_emulation(device, host_facts(), options.plan);
  s.device = std::move(device);
  s.options = std::move(options);
  s.backend = detail::make_backend(s.fs, layout(), parent_from(s.options));
  remove_stale_slices(*s.backend, s.fs);

  detail::SliceName name = own_identity(s.fs);
  name.sequence = sequence.fetch_add(1) + 1;
  s.cgroup = s.backend->create(detail::format_slice_name(name));
  try {
    s.cgroup->apply(s.plan, s.options.allow_missing_controllers, s.unapplied);
  } catch (...) {
    s.cgroup->remove();
    s.cgroup.reset();
    throw;
  }
  if (s.device.io_read_bps || s.device.io_write_bps) {
    s.unapplied.push_back("I/O bandwidth (storage emulation is not implemented yet)");
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

const Device& Slice::device() const { return impl_->device; }
const EmulationPlan& Slice::plan() const { return impl_->plan; }
CgroupMode Slice::mode() const { return impl_->backend->mode(); }
const std::vector<std::string>& Slice::unapplied() const { return impl_->unapplied; }
std::vector<std::string> Slice::paths() const {
  return impl_->cgroup ? impl_->cgroup->paths() : std::vector<std::string>{};
}

void Slice::close() noexcept {
  if (impl_) impl_->destroy();
}

bool Slice::closed() const noexcept { return !impl_ || !impl_->cgroup; }

void Slice::kill() {
  impl_->require_alive();
  impl_->cgroup->kill_all();
}

struct Child::State {
  std::shared_ptr<Slice::Impl> slice;
  detail::Spawned process;
  detail::Counters before;
  bool peak_reset = false;
  std::vector<std::string> argv;
  std::optional<Result> result;

  Result finish(const detail::Exit& exit, bool timed_out);
  void close_pidfd() {
    if (process.pidfd >= 0) ::close(process.pidfd);
    process.pidfd = -1;
  }
};

Child::Child(std::unique_ptr<State> state) : state_(std::move(state)) {}
Child::Child(Child&&) noexcept = default;
Child& Child::operator=(Child&&) noexcept = default;

Child::~Child() {
  if (!state_ || state_->result) return;
  ::kill(state_->process.pid, SIGKILL);
  detail::reap(state_->process);
  state_->close_pidfd();
  --state_->slice->running;
}

pid_t Child::pid() const { return state_->process.pid; }

Child Slice::spawn(const Command& command) {
  impl_->require_alive();
  Impl& s = *impl_;
  detail::PreparedCommand prepared(command);
  auto state = std::make_unique<Child::State>();
  state->slice = impl_;
  state->argv = command.argv;
  // A fresh peak per workload when the slice is idle and the kernel can reset it.
  if (s.running == 0) state->peak_reset = s.cgroup->reset_peak();
  state->before = s.cgroup->counters();
  detail::Placement placement;
  placement.cgroup_fd = s.cgroup->clone_fd();
  placement.procs_fds = s.cgroup->self_attach_fds();
  placement.attach = [&s](pid_t pid) { s.cgroup->attach(pid); };
  state->process = detail::spawn_process(prepared, placement);
  ++s.running;
  return Child(std::move(state));
}

Result Child::State::finish(const detail::Exit& exit, bool timed_out) {
  close_pidfd();
  --slice->running;
  Result r;
  if (WIFEXITED(exit.status)) r.exit_code = WEXITSTATUS(exit.status);
  if (WIFSIGNALED(exit.status)) r.signal = WTERMSIG(exit.status);
  r.timed_out = timed_out;
  r.wall_time_s = std::chrono::duration<double>(exit.when - process.released).count();
  r.child_max_rss_bytes = static_cast<std::uint64_t>(exit.usage.ru_maxrss) * 1024;

  const detail::Counters after = slice->cgroup ? slice->cgroup->counters() : detail::Counters{};
  auto delta = [](std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
    return a && b && *b >= *a ? *b - *a : 0;
  };
  r.cpu_user_s = double(delta(before.user_ns, after.user_ns)) / 1e9;
  r.cpu_system_s = double(delta(before.system_ns, after.system_ns)) / 1e9;
  r.throttled_s = double(delta(before.throttled_ns, after.throttled_ns)) / 1e9;
  r.throttled_periods = delta(before.throttled_periods, after.throttled_periods);
  r.periods = delta(before.periods, after.periods);
  r.oom_kills = delta(before.oom_kills, after.oom_kills);
  r.oom_killed = r.oom_kills > 0;
  if (after.memory_peak) {
    r.peak_memory_bytes = after.memory_peak;
    r.peak_memory_source = slice->cgroup->peak_source();
    if (!peak_reset) r.peak_memory_source += " (peak since the slice was created)";
  }
  r.device = slice->device;
  r.plan = slice->plan;
  r.cgroup_mode = slice->backend->mode();
  r.unapplied = slice->unapplied;
  r.command = argv;
  r.placement = process.placement;
  return r;
}

Result Child::wait(std::optional<std::chrono::duration<double>> timeout,
                   const InterruptCheck& check) {
  State& s = *state_;
  if (s.result) return *s.result;
  std::optional<Clock::time_point> deadline;
  if (timeout) {
    deadline = s.process.released + std::chrono::duration_cast<Clock::duration>(*timeout);
  }
  std::optional<detail::Exit> exit;
  try {
    exit = detail::wait_exit(s.process, deadline, check, std::chrono::milliseconds(50));
  } catch (...) {
    // Interrupted (Ctrl-C in Python, or the caller's own check): nothing keeps running, and
    // the child is reaped so the destructor has nothing left to do.
    if (s.slice->cgroup) s.slice->cgroup->kill_all();
    s.result = s.finish(detail::reap(s.process), false);
    throw;
  }
  bool timed_out = false;
  if (!exit) {
    timed_out = true;
    if (s.slice->cgroup) s.slice->cgroup->kill_all();
    exit = detail::reap(s.process);
  }
  s.result = s.finish(*exit, timed_out);
  return *s.result;
}

Result run(const Command& command, const Device& device, const RunOptions& options) {
  Slice slice(device, options.slice);
  Child child = slice.spawn(command);
  return child.wait(options.timeout, options.check);
}

}  // namespace edgeprof
