// cgroup v2: one directory beneath the parent, with the controllers enabled in the parent's
// cgroup.subtree_control.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "sys/parse.hpp"

namespace edgeprof::detail {

namespace {

// Leaf that a delegated caller's processes move into, so that its own cgroup may enable
// controllers for its children ("no internal processes").
constexpr const char* kCallerLeaf = "edgeprof-caller";

// Controllers a slice uses, and what is lost without each.
struct Wanted {
  const char* controller;
  const char* loses;
};
constexpr Wanted kWanted[] = {
    {"cpu", "cpu.max quota (core count x core speed)"},
    {"cpuset", "cpuset (which host CPUs the device's cores run on)"},
    {"memory", "memory.max and memory.swap.max limits, peak memory and OOM counters"},
    {"pids", "pids.max limit"},
    {"io", "io.max storage bandwidth"},
};

std::string missing_hint(const std::string& controller) {
  return fmt::format(
      "the '{}' controller is not available to this cgroup. On systemd, user services are "
      "delegated only cpu, memory and pids: add a drop-in "
      "/etc/systemd/system/user@.service.d/delegate.conf with \"[Service]\\nDelegate=cpu "
      "cpuset io memory pids\" and log in again; as root, enable it in every ancestor's "
      "cgroup.subtree_control. Or allow running without it (allow_missing_controllers / "
      "--allow-missing)",
      controller);
}

class V2Cgroup final : public Cgroup {
 public:
  V2Cgroup(const Fs& fs, std::string dir, std::set<std::string> enabled, bool create)
      : fs_(fs), dir_(std::move(dir)), enabled_(std::move(enabled)) {
    if (create) {
      if (int err = fs_.mkdir(dir_)) throw_sys_error(err, "cannot create cgroup", fs_.resolve(dir_));
    }
    // O_RDONLY, not O_PATH: clone3 needs an fd it can fdget().
    dir_fd_.reset(::open(fs_.resolve(dir_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd_.get() < 0) {
      int err = errno;
      fs_.rmdir(dir_);
      throw_sys_error(err, "cannot open cgroup", fs_.resolve(dir_));
    }
  }
  ~V2Cgroup() override { close_fds(); }

  void apply(const EmulationPlan& plan, bool allow_missing,
             std::vector<std::string>& unapplied) override {
    for (const Wanted& w : kWanted) {
      if (enabled_.count(w.controller)) continue;
      if (std::string_view(w.controller) == "pids" && !plan.pids_max) continue;
      if (std::string_view(w.controller) == "io") {
        // Best effort: a device's storage figures never stop a run.
        if (!plan.io_device.empty()) {
          unapplied.push_back("storage bandwidth (the 'io' controller is not available)");
        }
        continue;
      }
      if (!allow_missing) {
        throw UnsupportedError(fmt::format("cannot apply the {}: {}", w.loses,
                                           missing_hint(w.controller)));
      }
      unapplied.push_back(fmt::format("{} (the '{}' controller is not available)", w.loses,
                                      w.controller));
    }
    // Without a cpuset nothing caps the slice's CPUs but the quota (quota_unlimited).
    cpus_ = 0;
    if (enabled_.count("cpuset")) {
      fs_.write_or_throw(join(dir_, files::v2::kCpusetCpus), format_cpu_list(plan.cpus),
                         "the CPUs must be allowed in the parent's cpuset.cpus.effective");
      cpus_ = plan.cpus.size();
    }
    if (enabled_.count("cpu") && plan.core_groups > 0) {
      make_core_groups(plan);
    } else if (enabled_.count("cpu")) {
      fs_.write_or_throw(join(dir_, files::v2::kCpuMax), max_text(plan.cpu_quota_us, plan.cpu_period_us));
    } else if (plan.core_groups > 0) {
      unapplied.push_back("per-core emulation (the 'cpu' controller is not available)");
    }
    if (enabled_.count("memory")) {
      fs_.write_or_throw(join(dir_, files::v2::kMemoryMax), std::to_string(plan.memory_max_bytes));
      std::string swap = join(dir_, files::v2::kMemorySwapMax);
      if (fs_.exists(swap)) {
        fs_.write_or_throw(swap, std::to_string(plan.swap_max_bytes));
      } else if (host_swap_bytes(fs_) > 0) {
        unapplied.push_back(
            "swap limit (memory.swap.max is missing: the kernel was built or booted without "
            "swap accounting); the workload may use the host's swap");
      }
    }
    if (enabled_.count("io")) {
      // The slice's block groups made now, so its I/O is counted (counted_disks).
      for (const std::string& disk : counted_disks(fs_)) {
        const std::string rule = disk + " rbps=max";
        if (int err = fs_.write(join(dir_, files::v2::kIoMax), rule)) {
          unapplied.push_back(block_group_problem(disk, rule, files::v2::kIoMax, err));
        }
      }
    }
    if (!plan.io_device.empty() && enabled_.count("io")) {
      auto limit = [](const std::optional<std::uint64_t>& bps) {
        return bps ? std::to_string(*bps) : std::string("max");
      };
      const std::string line = fmt::format("{} rbps={} wbps={}", plan.io_device,
                                           limit(plan.io_read_bps), limit(plan.io_write_bps));
      if (int err = fs_.write(join(dir_, files::v2::kIoMax), line)) {
        unapplied.push_back(fmt::format("storage bandwidth: cannot write '{}' to io.max ({}, "
                                        "errno {})",
                                        line, std::strerror(err), err));
      }
    }
    if (plan.pids_max && enabled_.count("pids")) {
      fs_.write_or_throw(join(dir_, files::v2::kPidsMax), std::to_string(*plan.pids_max));
    }
  }

  // With core groups the workload is born in the first one (a threaded cgroup takes a whole
  // process through cgroup.procs and CLONE_INTO_CGROUP alike).
  int clone_fd() const override { return core_fd_.get() >= 0 ? core_fd_.get() : dir_fd_.get(); }

  void attach(pid_t pid) override {
    fs_.write_or_throw(join(core_dirs_.empty() ? dir_ : core_dirs_.front(), files::kProcs),
                       std::to_string(pid));
  }

  std::optional<std::uint64_t> peak() const override {
    // After a reset, the peak is read through the fd that was reset (fd-local since 6.12).
    char buffer[64];
    if (peak_fd_.get() >= 0) {
      ssize_t n = ::pread(peak_fd_.get(), buffer, sizeof buffer - 1, 0);
      return n > 0 ? parse_u64(std::string_view(buffer, static_cast<size_t>(n))) : std::nullopt;
    }
    auto text = peak_file().read_into(buffer, sizeof buffer);
    return text ? parse_u64(*text) : std::nullopt;
  }

  const std::vector<int>& self_attach_fds() override {
    static const std::vector<int> none;
    return none;  // born inside by clone3, or attached by the parent
  }

  int set_cpu_bandwidth(std::uint64_t quota_us, std::uint64_t period_us) noexcept override {
    return gate_.set(quota_us, period_us, [this](std::uint64_t q, std::uint64_t p) {
      return write_bandwidth(q, p);
    });
  }

  int write_bandwidth(std::uint64_t quota_us, std::uint64_t period_us) noexcept {
    if (!enabled_.count("cpu")) return ENOENT;
    if (core_dirs_.empty()) return fs_.write(join(dir_, files::v2::kCpuMax), max_text(quota_us, period_us));
    // Per-core: each core's share (a schedule's quota for core groups is a multiple of their
    // number: SpeedScheduler).
    const std::uint64_t core_quota = per_core_quota_us(quota_us, core_dirs_.size());
    for (const std::string& dir : core_dirs_) {
      if (int err = fs_.write(join(dir, files::v2::kCpuMax), fmt::format("{} {}", core_quota, period_us))) {
        return err;
      }
    }
    return 0;
  }

  std::optional<CpuMax> cpu_bandwidth() const override {
    // Not between the writes of a change to several core groups.
    const std::lock_guard<std::mutex> lock(gate_.mutex);
    const auto read = [this](const std::string& dir) -> std::optional<CpuMax> {
      auto text = fs_.read(join(dir, files::v2::kCpuMax));
      return text ? parse_cpu_max(*text) : std::nullopt;
    };
    if (core_dirs_.empty()) return read(dir_);
    std::vector<std::optional<CpuMax>> cores;
    for (const std::string& dir : core_dirs_) cores.push_back(read(dir));
    return sum_core_bandwidths(cores);
  }

  bool reset_peak() override {
    // Since Linux 6.12 a write to memory.peak starts a new peak for reads through that fd.
    // Older kernels refuse the write: then remember that, rather than retry every spawn.
    if (peak_unresettable_) return false;
    if (peak_fd_.get() < 0) {
      peak_fd_.reset(
          ::open(fs_.resolve(join(dir_, files::v2::kMemoryPeak)).c_str(), O_RDWR | O_CLOEXEC));
    }
    if (peak_fd_.get() >= 0 && ::pwrite(peak_fd_.get(), "reset\n", 6, 0) == 6) return true;
    peak_fd_.reset();
    peak_unresettable_ = true;
    return false;
  }

  const char* peak_source() const override { return files::v2::kMemoryPeak; }

  std::vector<pid_t> procs() const override {
    auto text = fs_.read(join(dir_, files::kProcs));
    return text ? parse_pids(*text) : std::vector<pid_t>{};
  }

  // The slice's cgroup.procs lists its core groups' processes too (threaded mode).
  bool has_processes() const override {
    auto text = fs_.read(join(dir_, files::kProcs));
    return !text || lists_processes(*text);
  }

  void kill_all() override {
    // cgroup.kill reaches processes of other pid namespaces too (listed as 0, not by pid).
    if (!has_processes()) return;
    std::vector<std::pair<std::string, std::string>> limits, weights;
    limits.emplace_back(join(dir_, files::v2::kCpuMax), "max");
    weights.emplace_back(join(dir_, files::v2::kCpuWeight), files::v2::kCpuWeightHighest);
    for (const std::string& dir : core_dirs_) {
      limits.emplace_back(join(dir, files::v2::kCpuMax), "max");
      weights.emplace_back(join(dir, files::v2::kCpuWeight), files::v2::kCpuWeightHighest);
    }
    const CpuLimitLift lift(
        fs_, std::move(limits), gate_,
        [this](std::uint64_t q, std::uint64_t p) { return write_bandwidth(q, p); },
        std::move(weights));
    const std::string kill_file = join(dir_, files::v2::kKill);
    if (fs_.exists(kill_file)) {
      // cgroup.kill (Linux 5.14) kills the whole subtree atomically, forks in flight too; then
      // wait for the exits, writing it again (not signalling pids, which could be reused) for a
      // process listed that was not listed before (moved in), and once a second.
      // (Written before the first listing too: the listing drops processes of other pid
      // namespaces, listed as 0.)
      fs_.write_or_throw(kill_file, "1");
      kill_loop(fs_, [this] { return procs(); }, {}, fs_.resolve(dir_), 5000,
                [this, &kill_file](const std::vector<pid_t>&) {
                  fs_.write_or_throw(kill_file, "1");
                });
      return;
    }
    const std::string freeze_file = join(dir_, files::v2::kFreeze);
    std::function<bool(bool)> freeze;
    if (fs_.exists(freeze_file)) {
      freeze = [this, freeze_file](bool on) {
        return fs_.write(freeze_file, on ? "1" : "0") == 0;
      };
    }
    kill_loop(fs_, [this] { return procs(); }, freeze, fs_.resolve(dir_));
  }

  bool remove() noexcept override {
    close_fds();
    if (dir_.empty()) return true;
    bool ok = true;
    // Core groups first (a left-over slice's too: found, not remembered).
    for (const std::string& sub : fs_.subdirs(dir_)) {
      ok = remove_dir_retrying(fs_, join(dir_, sub)) == 0 && ok;
    }
    ok = remove_dir_retrying(fs_, dir_) == 0 && ok;
    dir_.clear();
    core_dirs_.clear();
    return ok;
  }

  std::vector<std::string> paths() const override {
    if (dir_.empty()) return {};
    return {fs_.resolve(dir_)};
  }

  GuardPlan guard_plan() const override {
    GuardPlan g;
    g.dirs = paths();
    g.limit_file = files::v2::kCpuMax;
    g.no_limit = "max";
    g.weight_file = files::v2::kCpuWeight;
    g.highest_weight = files::v2::kCpuWeightHighest;
    g.kill_file = files::v2::kKill;
    g.freeze_file = files::v2::kFreeze;
    g.frozen = "1";
    g.thawed = "0";
    return g;
  }

  SliceFiles files() const override {
    return SliceFiles{fs_, true, dir_, peak_fd_.get(), {}, core_dirs_};
  }

  std::vector<std::string> core_tasks() const override {
    std::vector<std::string> out;
    for (const std::string& dir : core_dirs_) out.push_back(join(dir, files::v2::kThreads));
    return out;
  }

 private:
  // set_cpu_bandwidth, kill_all's lift and cpu_bandwidth's read, one at a time (mutable: a
  // read locks it too)
  mutable BandwidthGate gate_;

  // Per-core emulation: the slice becomes a threaded domain whose children core0 .. are
  // threaded cgroups with one core's cpu.max each; the slice's own quota is unlimited (the
  // groups hold the capacity; a quota of its own, on a period timer of its own, would throttle
  // them where their periods overlap). The slice holds no process yet, so it may enable cpu
  // for its children.
  void make_core_groups(const EmulationPlan& plan) {
    fs_.write_or_throw(join(dir_, files::v2::kCpuMax), fmt::format("max {}", plan.cpu_period_us));
    fs_.write_or_throw(join(dir_, files::v2::kSubtreeControl), "+cpu");
    for (std::uint32_t k = 0; k < plan.core_groups; ++k) {
      std::string dir = join(dir_, fmt::format("{}{}", files::kCoreGroup, k));
      if (int err = fs_.mkdir(dir)) throw_sys_error(err, "cannot create cgroup", fs_.resolve(dir));
      core_dirs_.push_back(dir);
      fs_.write_or_throw(join(dir, files::v2::kType), "threaded",
                         "per-core emulation needs threaded cgroups (Linux 4.14)");
      fs_.write_or_throw(join(dir, files::v2::kCpuMax),
                         fmt::format("{} {}", plan.core_quota_us, plan.cpu_period_us));
    }
    core_fd_.reset(::open(fs_.resolve(core_dirs_.front()).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (core_fd_.get() < 0) throw_sys_error(errno, "cannot open cgroup", fs_.resolve(core_dirs_.front()));
  }

  void close_fds() {
    peak_file_.reset();
    dir_fd_.reset();
    core_fd_.reset();
    peak_fd_.reset();
  }

  Fs fs_;
  std::string dir_;
  std::set<std::string> enabled_;
  UniqueFd dir_fd_;
  UniqueFd core_fd_;  // per-core: the first core group, where a workload is born
  std::vector<std::string> core_dirs_;  // per-core: the core groups, in order
  UniqueFd peak_fd_;
  bool peak_unresettable_ = false;
  std::size_t cpus_ = 0;  // the cpuset's size (quota_unlimited)

  std::string max_text(std::uint64_t quota_us, std::uint64_t period_us) const {
    return quota_unlimited(quota_us, period_us, cpus_) ? fmt::format("max {}", period_us)
                                                       : fmt::format("{} {}", quota_us, period_us);
  }
  // The peak's file, opened at the first read and kept for the slice's life (the counters are
  // the sampler's sources').
  mutable std::optional<StatFile> peak_file_;
  const StatFile& peak_file() const {
    if (!peak_file_) peak_file_ = StatFile(fs_, join(dir_, files::v2::kMemoryPeak));
    return *peak_file_;
  }
};

class V2Backend final : public Backend {
 public:
  V2Backend(const Fs& fs, const Layout& layout, const std::string& parent) : fs_(fs) {
    std::string cgroup = parent;
    const bool own = parent.empty();
    if (own) {
      for (const CgroupMembership& m :
           parse_proc_cgroup(fs_.read_or_throw(files::kProcSelfCgroup))) {
        if (m.hierarchy == 0 && m.controllers.empty()) cgroup = m.path;
      }
      if (cgroup.empty()) {
        throw CgroupError(fmt::format("{} has no cgroup v2 line (\"0::/path\")",
                                      fs_.resolve(files::kProcSelfCgroup)));
      }
      // Already moved into our leaf by an earlier slice: slices go beside the leaf.
      const std::string leaf_suffix = std::string("/") + kCallerLeaf;
      if (cgroup.size() > leaf_suffix.size() &&
          cgroup.compare(cgroup.size() - leaf_suffix.size(), leaf_suffix.size(), leaf_suffix) ==
              0) {
        cgroup.resize(cgroup.size() - leaf_suffix.size());
      }
    }
    parent_dir_ = join(layout.unified, cgroup);
    mount_ = layout.unified;
    enable_controllers(own && cgroup != "/");
  }

  CgroupMode mode() const override { return CgroupMode::unified; }
  bool core_groups_supported() const override { return true; }

  std::unique_ptr<Cgroup> create(const std::string& name) override {
    return std::make_unique<V2Cgroup>(fs_, join(parent_dir_, name), enabled_, true);
  }

  std::vector<std::string> slice_names() const override {
    std::vector<std::string> names;
    for (std::string& name : fs_.subdirs(parent_dir_)) {
      if (parse_slice_name(name)) names.push_back(std::move(name));
    }
    return names;
  }

  std::optional<std::string> cpu_quota_above() const override {
    // The root has no cpu.max; a cgroup whose parent does not enable cpu has none either.
    std::string dir = parent_dir_;
    while (dir.size() > mount_.size() && dir.back() == '/') dir.pop_back();
    for (; dir.size() > mount_.size(); dir.resize(dir.rfind('/'))) {
      auto text = fs_.read(join(dir, files::v2::kCpuMax));
      if (!text) continue;
      const auto fields = split_words(*text);
      if (!fields.empty() && fields[0] != "max") {
        return fmt::format("{} (cpu.max {})", dir, fmt::join(fields, " "));
      }
    }
    return std::nullopt;
  }

 protected:
  std::unique_ptr<Cgroup> open_stale(const std::string& name) override {
    return std::make_unique<V2Cgroup>(fs_, join(parent_dir_, name), enabled_, false);
  }

 private:
  // Enables the wanted controllers for the parent's children. A non-root cgroup that holds
  // processes cannot ("no internal processes"): when the parent is our own cgroup, its
  // processes move into a leaf child first, staying under the same ancestors and limits. This
  // must happen before the first write: enabling a threaded controller (cpu, cpuset, pids) in
  // a cgroup with processes makes it a thread root, and a later +memory fails with EOPNOTSUPP.
  void enable_controllers(bool own_non_root) {
    // One process may build many backends (one per slice): serialise the set-up.
    static std::mutex lock;
    std::lock_guard<std::mutex> guard(lock);
    const std::string control = join(parent_dir_, files::v2::kSubtreeControl);
    std::set<std::string> available;
    if (auto text = fs_.read(join(parent_dir_, files::v2::kControllers))) {
      for (std::string& c : split_words(*text)) available.insert(std::move(c));
    } else {
      throw_sys_error(errno, "cannot read", fs_.resolve(join(parent_dir_, files::v2::kControllers)));
    }
    std::set<std::string> active;
    if (auto text = fs_.read(control)) {
      for (std::string& c : split_words(*text)) active.insert(std::move(c));
    }
    bool to_enable = false;
    for (const Wanted& w : kWanted) {
      to_enable = to_enable || (available.count(w.controller) && !active.count(w.controller));
    }
    if (to_enable && own_non_root) move_into_leaf();
    for (const Wanted& w : kWanted) {
      const std::string c = w.controller;
      if (active.count(c)) {
        enabled_.insert(c);
        continue;
      }
      if (!available.count(c)) continue;  // reported by apply() as missing
      int err = fs_.write(control, "+" + c);
      if (err == 0) {
        enabled_.insert(c);
      } else {
        throw_sys_error(err, fmt::format("cannot enable the '{}' controller in", c),
                        fs_.resolve(control),
                        err == EBUSY || err == EOPNOTSUPP
                            ? "the cgroup holds processes or threaded cgroups; run edgeprof in "
                              "a cgroup of its own (systemd-run --scope -p Delegate=yes ...) or "
                              "set EDGEPROF_CGROUP_PARENT to an empty cgroup"
                            : "");
      }
    }
  }

  void move_into_leaf() {
    const std::string leaf = join(parent_dir_, kCallerLeaf);
    if (int err = fs_.mkdir(leaf); err != 0 && err != EEXIST) {
      throw_sys_error(err, "cannot create cgroup", fs_.resolve(leaf));
    }
    const std::string procs = join(parent_dir_, files::kProcs);
    // Processes may fork while we move them: repeat until the parent is empty.
    for (int round = 0; round < 100; ++round) {
      auto text = fs_.read(procs);
      std::vector<pid_t> pids = text ? parse_pids(*text) : std::vector<pid_t>{};
      if (pids.empty()) return;
      for (pid_t pid : pids) {
        int err = fs_.write(join(leaf, files::kProcs), std::to_string(pid));
        if (err != 0 && err != ESRCH) {
          throw_sys_error(err, fmt::format("cannot move pid {} into", pid), fs_.resolve(leaf));
        }
      }
    }
  }

  Fs fs_;
  std::string parent_dir_;
  std::string mount_;
  std::set<std::string> enabled_;
};

}  // namespace

std::unique_ptr<Backend> make_v2_backend(const Fs& fs, const Layout& layout,
                                         const std::string& parent) {
  return std::make_unique<V2Backend>(fs, layout, parent);
}

}  // namespace edgeprof::detail
