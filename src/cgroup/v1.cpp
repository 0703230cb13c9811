// cgroup v1: one directory per hierarchy (cpu, cpuacct, cpuset, memory, pids, freezer), each
// beneath the caller's own cgroup in that hierarchy.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "sys/parse.hpp"

namespace edgeprof::detail {

namespace {

// Controllers edgeprof uses on v1; freezer only makes killing race-free; blkio for the I/O
// counters and a device's storage bandwidth.
const char* const kV1Controllers[] = {"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer", "blkio"};

// One hierarchy: the controllers mounted there and the parent directory to create slices in.
struct Hierarchy {
  std::set<std::string> controllers;
  std::string parent_dir;  // absolute, under the mount
  std::string mount;
};

class V1Cgroup final : public Cgroup {
 public:
  // `create` = false adopts existing directories (a slice left behind by a dead process).
  V1Cgroup(const Fs& fs, std::vector<Hierarchy> hierarchies, const std::string& name,
           bool create)
      : fs_(fs) {
    for (Hierarchy& h : hierarchies) {
      std::string dir = join(h.parent_dir, name);
      if (int err = create ? fs_.mkdir(dir) : 0) {
        if (is_permission(err)) {
          // A hierarchy not delegated to this user (v1 delegates each hierarchy alone): apply()
          // refuses the slice, or runs it without these controllers where that is allowed.
          refused_.push_back({std::move(h.controllers), std::move(dir), err});
          continue;
        }
        remove();
        throw_sys_error(err, "cannot create cgroup", fs_.resolve(dir));
      }
      if (!create && h.controllers.count("cpu")) {
        // A left-over slice's core groups (per-core emulation): their tasks are killed too.
        for (const std::string& sub : fs_.subdirs(dir)) {
          if (sub.rfind(files::kCoreGroup, 0) == 0) core_dirs_.push_back(join(dir, sub));
        }
      }
      dirs_.push_back({std::move(h.controllers), std::move(dir), std::move(h.parent_dir)});
    }
    if (dirs_.empty() && !refused_.empty()) {
      throw_sys_error(refused_.front().err, "cannot create cgroup",
                      fs_.resolve(refused_.front().dir));
    }
  }
  ~V1Cgroup() override { close_procs_fds(); }

  void apply(const EmulationPlan& plan, bool allow_missing,
             std::vector<std::string>& unapplied) override {
    if (!refused_.empty()) {
      // What each refused hierarchy's controllers would have done for the emulation.
      auto lost = [](const std::set<std::string>& controllers) {
        static const std::map<std::string, const char*> kWhat = {
            {"cpu", "the CPU quota: the device's speed is not emulated"},
            {"cpuacct", "the CPU time counters"},
            {"cpuset", "the CPUs the device's cores run on"},
            {"memory", "the memory limit and counters"},
            {"pids", "the process limit"},
            {"freezer", "race-free killing"},
            {"blkio", "the I/O counters and storage bandwidth"}};
        std::vector<std::string> out;
        for (const std::string& c : controllers) {
          auto it = kWhat.find(c);
          out.push_back(it == kWhat.end() ? c : it->second);
        }
        return fmt::format("{}", fmt::join(out, "; "));
      };
      if (!allow_missing) {
        std::vector<std::string> names;
        for (const Refused& r : refused_) {
          names.push_back(fmt::format("'{}' ({})", fmt::join(r.controllers, ","),
                                      fs_.resolve(r.dir)));
        }
        const Refused& first = refused_.front();
        throw PermissionDenied(
            fmt::format("cannot create the slice's cgroup in the v1 hierarch{} {}: {} (errno {}). "
                        "{} not delegated to this user: run as root, give this user a cgroup of "
                        "its own in each, or allow running without {} (allow_missing_controllers "
                        "/ --allow-missing)",
                        names.size() > 1 ? "ies" : "y", fmt::join(names, ", "),
                        std::strerror(first.err), first.err,
                        names.size() > 1 ? "They are" : "It is",
                        names.size() > 1 ? "them" : "it"),
            first.err);
      }
      for (const Refused& r : refused_) {
        unapplied.push_back(fmt::format("{} (the v1 '{}' hierarchy: cannot create {}: {})",
                                        lost(r.controllers), fmt::join(r.controllers, ","),
                                        fs_.resolve(r.dir), std::strerror(r.err)));
      }
    }
    auto missing = [&](const char* controller, const std::string& what) {
      for (const Refused& r : refused_) {
        if (r.controllers.count(controller)) return;  // said above
      }
      std::string text = fmt::format("{} (the v1 '{}' controller is not mounted)", what,
                                     controller);
      if (!allow_missing) {
        throw UnsupportedError(fmt::format(
            "cannot apply {}: mount the '{}' hierarchy under /sys/fs/cgroup, or allow running "
            "without it (allow_missing_controllers / --allow-missing)",
            text, controller));
      }
      unapplied.push_back(text);
    };
    if (const Dir* d = find("cpuset")) {
      auto mems = fs_.read(join(d->parent, files::v1::kCpusetMems));
      fs_.write_or_throw(join(d->path, files::v1::kCpusetMems), mems ? *mems : "0");
      fs_.write_or_throw(join(d->path, files::v1::kCpusetCpus), format_cpu_list(plan.cpus),
                         "the CPUs must be allowed in the parent cpuset");
      cpus_ = plan.cpus.size();
    } else {
      cpus_ = 0;  // nothing caps the slice's CPUs but the quota
      missing("cpuset", fmt::format("cpuset {}", format_cpu_list(plan.cpus)));
    }
    if (const Dir* d = find("cpu")) {
      fs_.write_or_throw(join(d->path, files::v1::kCpuCfsPeriodUs), std::to_string(plan.cpu_period_us));
      if (plan.core_groups == 0) {
        fs_.write_or_throw(join(d->path, files::v1::kCpuCfsQuotaUs),
                           quota_text(plan.cpu_quota_us, plan.cpu_period_us));
      } else {
        // The cores' groups enforce the capacity; a quota of the slice's own, on a period
        // timer of its own, would throttle them where their periods overlap.
        fs_.write_or_throw(join(d->path, files::v1::kCpuCfsQuotaUs), "-1");
        for (std::uint32_t k = 0; k < plan.core_groups; ++k) {
          std::string dir = join(d->path, fmt::format("{}{}", files::kCoreGroup, k));
          if (int err = fs_.mkdir(dir)) throw_sys_error(err, "cannot create cgroup", fs_.resolve(dir));
          core_dirs_.push_back(dir);
          fs_.write_or_throw(join(dir, files::v1::kCpuCfsPeriodUs), std::to_string(plan.cpu_period_us));
          fs_.write_or_throw(join(dir, files::v1::kCpuCfsQuotaUs), std::to_string(plan.core_quota_us));
        }
      }
    } else {
      missing("cpu", "cpu quota");
    }
    if (const Dir* d = find("blkio")) {
      // The slice's block groups made now, so its I/O is counted (counted_disks).
      for (const std::string& disk : counted_disks(fs_)) {
        const std::string rule = disk + " 0";
        if (int err = fs_.write(join(d->path, files::v1::kBlkioThrottleReadBpsDevice), rule)) {
          unapplied.push_back(block_group_problem(disk, rule,
                                                  files::v1::kBlkioThrottleReadBpsDevice, err));
        }
      }
    }
    if (!plan.io_device.empty()) {
      // Best effort: a device's storage figures never stop a run.
      if (const Dir* d = find("blkio")) {
        const std::pair<const char*, std::optional<std::uint64_t>> limits[] = {
            {files::v1::kBlkioThrottleReadBpsDevice, plan.io_read_bps},
            {files::v1::kBlkioThrottleWriteBpsDevice, plan.io_write_bps}};
        for (const auto& [file, bps] : limits) {
          if (!bps) continue;
          if (int err = fs_.write(join(d->path, file), fmt::format("{} {}", plan.io_device, *bps))) {
            unapplied.push_back(fmt::format("storage bandwidth: cannot write {} ({}, errno {})",
                                            file, std::strerror(err), err));
          }
        }
      } else {
        const bool refused = std::any_of(refused_.begin(), refused_.end(), [](const Refused& r) {
          return r.controllers.count("blkio") > 0;
        });
        if (!refused) {
          unapplied.push_back("storage bandwidth (the v1 'blkio' controller is not mounted)");
        }
      }
    }
    if (const Dir* d = find("memory")) {
      fs_.write_or_throw(join(d->path, files::v1::kMemoryLimitInBytes),
                         std::to_string(plan.memory_max_bytes));
      std::string memsw = join(d->path, files::v1::kMemoryMemswLimitInBytes);
      if (fs_.exists(memsw)) {
        // Memory and swap together; past 2^64 (a swap given as "unlimited"), no limit: the sum
        // wrapped to less than the memory limit, which the kernel refused with EINVAL.
        const std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
        fs_.write_or_throw(memsw, plan.swap_max_bytes > most - plan.memory_max_bytes
                                      ? std::string("-1")
                                      : std::to_string(plan.memory_max_bytes +
                                                       plan.swap_max_bytes));
      } else if (host_swap_bytes(fs_) > 0) {
        unapplied.push_back(
            "swap limit (memory.memsw.limit_in_bytes is missing: boot the kernel with "
            "swapaccount=1); the workload may use the host's swap");
      }
    } else {
      missing("memory", "memory limit");
    }
    if (plan.pids_max) {
      if (const Dir* d = find("pids")) {
        fs_.write_or_throw(join(d->path, files::v1::kPidsMax), std::to_string(*plan.pids_max));
      } else {
        missing("pids", "pids limit");
      }
    }
  }

  int clone_fd() const override { return -1; }

  void attach(pid_t pid) override {
    // cgroup.procs (not tasks) moves every thread of the process.
    const std::string value = std::to_string(pid);
    for (const Dir& d : dirs_) {
      fs_.write_or_throw(join(entry(d), files::kProcs), value);
    }
  }

  std::optional<std::uint64_t> peak() const override {
    char buffer[64];
    auto text = peak_file().read_into(buffer, sizeof buffer);
    return text ? parse_u64(*text) : std::nullopt;
  }

  const std::vector<int>& self_attach_fds() override {
    if (procs_fds_.empty()) {
      for (const Dir& d : dirs_) {
        const std::string path = fs_.resolve(join(entry(d), files::kProcs));
        int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
          int err = errno;
          close_procs_fds();
          throw_sys_error(err, "cannot open", path);
        }
        procs_fds_.push_back(fd);
      }
    }
    return procs_fds_;
  }

  int set_cpu_bandwidth(std::uint64_t quota_us, std::uint64_t period_us) noexcept override {
    return gate_.set(quota_us, period_us, [this](std::uint64_t q, std::uint64_t p) {
      return write_bandwidth(q, p);
    });
  }

  int write_bandwidth(std::uint64_t quota_us, std::uint64_t period_us) noexcept {
    const Dir* d = find("cpu");
    if (!d) return ENOENT;
    // The period first: a schedule may lengthen it so that a small quota stays above 1 ms.
    if (int err = fs_.write(join(d->path, files::v1::kCpuCfsPeriodUs), std::to_string(period_us))) {
      return err;
    }
    if (core_dirs_.empty()) {
      return fs_.write(join(d->path, files::v1::kCpuCfsQuotaUs), quota_text(quota_us, period_us));
    }
    // Per-core: each core's share of the device's quota.
    // (A schedule's quota for core groups is a multiple of their number: SpeedScheduler.)
    const std::uint64_t core_quota = per_core_quota_us(quota_us, core_dirs_.size());
    for (const std::string& dir : core_dirs_) {
      if (int err = fs_.write(join(dir, files::v1::kCpuCfsPeriodUs), std::to_string(period_us))) {
        return err;
      }
      if (int err = fs_.write(join(dir, files::v1::kCpuCfsQuotaUs), std::to_string(core_quota))) {
        return err;
      }
    }
    return 0;
  }

  std::optional<CpuMax> cpu_bandwidth() const override {
    // Not between the writes of a change to several core groups.
    const std::lock_guard<std::mutex> lock(gate_.mutex);
    const auto read = [this](const std::string& dir) -> std::optional<CpuMax> {
      auto quota = fs_.read(join(dir, files::v1::kCpuCfsQuotaUs));
      auto period = fs_.read(join(dir, files::v1::kCpuCfsPeriodUs));
      return quota && period ? parse_cfs_bandwidth(*quota, *period) : std::nullopt;
    };
    if (core_dirs_.empty()) {
      const Dir* d = find("cpu");
      return d ? read(d->path) : std::nullopt;
    }
    std::vector<std::optional<CpuMax>> cores;
    for (const std::string& dir : core_dirs_) cores.push_back(read(dir));
    return sum_core_bandwidths(cores);
  }

  std::string quota_text(std::uint64_t quota_us, std::uint64_t period_us) const {
    return quota_unlimited(quota_us, period_us, cpus_) ? "-1" : std::to_string(quota_us);
  }

  bool reset_peak() override {
    // Once per workload: the file stays open for the next one.
    if (peak_reset_fd_.get() < 0) {
      const Dir* d = find("memory");
      if (!d) return false;
      const std::string path = fs_.resolve(join(d->path, files::v1::kMemoryMaxUsageInBytes));
      peak_reset_fd_.reset(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
      if (peak_reset_fd_.get() < 0) return false;
    }
    return ::pwrite(peak_reset_fd_.get(), "0", 1, 0) == 1;
  }

  const char* peak_source() const override { return files::v1::kMemoryMaxUsageInBytes; }

  // Every process of the slice is in each hierarchy's directory but the cpu hierarchy's, whose
  // core groups (per-core emulation) hold theirs: one of the others is read where there is one.
  bool has_processes() const override {
    const Dir* one = nullptr;
    for (const Dir& d : dirs_) {
      if (!d.controllers.count("cpu")) {
        one = &d;
        break;
      }
    }
    if (!one) {
      // Only the cpu hierarchy (or none): its directory and its core groups (0s count too:
      // other pid namespaces' processes).
      std::vector<std::string> lists;
      for (const Dir& d : dirs_) lists.push_back(join(d.path, files::kProcs));
      for (const std::string& dir : core_dirs_) lists.push_back(join(dir, files::kProcs));
      return std::any_of(lists.begin(), lists.end(), [this](const std::string& list) {
        auto text = fs_.read(list);
        return text && lists_processes(*text);
      });
    }
    auto text = fs_.read(join(one->path, files::kProcs));
    return !text || lists_processes(*text);
  }

  std::vector<pid_t> procs() const override {
    std::set<pid_t> all;
    for (const Dir& d : dirs_) {
      if (auto text = fs_.read(join(d.path, files::kProcs))) {
        for (pid_t pid : parse_pids(*text)) all.insert(pid);
      }
    }
    for (const std::string& dir : core_dirs_) {
      if (auto text = fs_.read(join(dir, files::kProcs))) {
        for (pid_t pid : parse_pids(*text)) all.insert(pid);
      }
    }
    return {all.begin(), all.end()};
  }

  void kill_all() override {
    // An idle slice needs no freezing: toggling the freezer costs about 0.1 ms each way.
    if (procs().empty()) return;
    std::function<bool(bool)> freeze;
    if (const Dir* d = find("freezer")) {
      freeze = [this, path = join(d->path, files::v1::kFreezerState)](bool on) {
        if (fs_.write(path, on ? "FROZEN" : "THAWED") != 0) return false;
        if (!on) return true;
        // Freezing is asynchronous (FREEZING until every task stopped); a bounded wait.
        for (int i = 0; i < 200; ++i) {
          auto state = fs_.read(path);
          if (state && state->rfind("FROZEN", 0) == 0) return true;
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        return true;
      };
    }
    std::vector<std::pair<std::string, std::string>> limits, weights;
    if (const Dir* d = find("cpu")) {
      limits.emplace_back(join(d->path, files::v1::kCpuCfsQuotaUs), "-1");
      weights.emplace_back(join(d->path, files::v1::kCpuShares), files::v1::kCpuSharesHighest);
    }
    for (const std::string& dir : core_dirs_) {
      limits.emplace_back(join(dir, files::v1::kCpuCfsQuotaUs), "-1");
      weights.emplace_back(join(dir, files::v1::kCpuShares), files::v1::kCpuSharesHighest);
    }
    const CpuLimitLift lift(
        fs_, std::move(limits), gate_,
        [this](std::uint64_t q, std::uint64_t p) { return write_bandwidth(q, p); },
        std::move(weights));
    kill_loop(fs_, [this] { return procs(); }, freeze, describe());
  }

  bool remove() noexcept override {
    close_procs_fds();
    peak_file_.reset();
    peak_reset_fd_.reset();
    bool ok = true;
    for (const Dir& d : dirs_) {
      // Core groups first (a left-over slice's too: found, not remembered).
      for (const std::string& sub : fs_.subdirs(d.path)) {
        ok = remove_dir_retrying(fs_, join(d.path, sub)) == 0 && ok;
      }
      ok = remove_dir_retrying(fs_, d.path) == 0 && ok;
    }
    dirs_.clear();
    core_dirs_.clear();
    return ok;
  }

  SliceFiles files() const override {
    SliceFiles f{fs_, false, {}, -1, {}, {}};
    for (const Dir& d : dirs_) {
      for (const std::string& controller : d.controllers) f.controllers[controller] = d.path;
    }
    f.core_dirs = core_dirs_;
    return f;
  }

  std::vector<std::string> core_tasks() const override {
    std::vector<std::string> out;
    for (const std::string& dir : core_dirs_) out.push_back(join(dir, files::v1::kTasks));
    return out;
  }

  std::vector<std::string> paths() const override {
    std::vector<std::string> out;
    for (const Dir& d : dirs_) out.push_back(fs_.resolve(d.path));
    return out;
  }

  GuardPlan guard_plan() const override {
    GuardPlan g;
    g.dirs = paths();
    g.limit_file = files::v1::kCpuCfsQuotaUs;
    g.no_limit = "-1";
    g.weight_file = files::v1::kCpuShares;
    g.highest_weight = files::v1::kCpuSharesHighest;
    g.freeze_file = files::v1::kFreezerState;
    g.frozen = "FROZEN";
    g.thawed = "THAWED";
    return g;
  }

 private:
  // set_cpu_bandwidth, kill_all's lift and cpu_bandwidth's read, one at a time (mutable: a
  // read locks it too)
  mutable BandwidthGate gate_;
  struct Dir {
    std::set<std::string> controllers;
    std::string path;
    std::string parent;
  };

  std::vector<std::string> core_dirs_;  // per-core: the core groups, in the cpu hierarchy
  UniqueFd peak_reset_fd_;  // memory.max_usage_in_bytes, open for writing
  std::size_t cpus_ = 0;    // the cpuset's size (quota_unlimited)

  // The peak's file, opened at the first read and kept for the slice's life (the counters are
  // the sampler's sources').
  mutable std::optional<StatFile> peak_file_;
  const StatFile& peak_file() const {
    if (!peak_file_) {
      const Dir* d = find("memory");
      peak_file_ =
          d ? StatFile(fs_, join(d->path, files::v1::kMemoryMaxUsageInBytes)) : StatFile();
    }
    return *peak_file_;
  }

  void close_procs_fds() {
    for (int fd : procs_fds_) ::close(fd);
    procs_fds_.clear();
  }

  // Where a process enters the hierarchy of `d`: its directory, or in the cpu hierarchy with
  // core groups the first core's group (its threads are spread from there).
  std::string entry(const Dir& d) const {
    return !core_dirs_.empty() && d.controllers.count("cpu") ? core_dirs_.front() : d.path;
  }

  const Dir* find(const char* controller) const {
    for (const Dir& d : dirs_) {
      if (d.controllers.count(controller)) return &d;
    }
    return nullptr;
  }

  std::string describe() const {
    return dirs_.empty() ? std::string("(removed slice)") : fs_.resolve(dirs_.front().path);
  }

  Fs fs_;
  std::vector<Dir> dirs_;
  // Hierarchies where the slice's directory could not be made for want of permission.
  struct Refused {
    std::set<std::string> controllers;
    std::string dir;
    int err = 0;
  };
  std::vector<Refused> refused_;
  std::vector<int> procs_fds_;
};

class V1Backend final : public Backend {
 public:
  V1Backend(const Fs& fs, const Layout& layout, const std::string& parent)
      : fs_(fs), mode_(layout.mode) {
    std::vector<CgroupMembership> own;
    if (parent.empty()) own = parse_proc_cgroup(fs_.read_or_throw(files::kProcSelfCgroup));
    // Group the controllers by mount (cpu and cpuacct are often mounted together).
    std::map<std::string, std::set<std::string>> by_mount;
    for (const char* controller : kV1Controllers) {
      auto it = layout.v1.find(controller);
      if (it != layout.v1.end()) by_mount[it->second].insert(controller);
    }
    for (auto& [mount, controllers] : by_mount) {
      std::string cgroup = parent.empty() ? own_path(own, *controllers.begin()) : parent;
      hierarchies_.push_back({controllers, join(mount, cgroup), mount});
    }
    if (hierarchies_.empty()) {
      throw UnsupportedError(
          "no cgroup v1 hierarchy edgeprof needs (cpu, cpuacct, cpuset, memory, pids) is "
          "mounted under /sys/fs/cgroup");
    }
  }

  CgroupMode mode() const override { return mode_; }

  bool core_groups_supported() const override {
    return std::any_of(hierarchies_.begin(), hierarchies_.end(),
                       [](const Hierarchy& h) { return h.controllers.count("cpu") > 0; });
  }

  std::unique_ptr<Cgroup> create(const std::string& name) override {
    return std::make_unique<V1Cgroup>(fs_, hierarchies_, name, true);
  }

  std::vector<std::string> slice_names() const override {
    std::set<std::string> names;
    for (const Hierarchy& h : hierarchies_) {
      for (std::string& name : fs_.subdirs(h.parent_dir)) {
        if (parse_slice_name(name)) names.insert(std::move(name));
      }
    }
    return {names.begin(), names.end()};
  }

  std::optional<std::string> cpu_quota_above() const override {
    for (const Hierarchy& h : hierarchies_) {
      if (!h.controllers.count("cpu")) continue;
      std::string dir = h.parent_dir;
      while (dir.size() > h.mount.size() && dir.back() == '/') dir.pop_back();
      for (; dir.size() > h.mount.size(); dir.resize(dir.rfind('/'))) {
        const auto quota = split_words(fs_.read(join(dir, files::v1::kCpuCfsQuotaUs)).value_or(""));
        if (quota.empty() || quota[0] == "-1") continue;
        const auto period = split_words(fs_.read(join(dir, files::v1::kCpuCfsPeriodUs)).value_or(""));
        return fmt::format("{} (cpu.cfs_quota_us {}, cpu.cfs_period_us {})", dir, quota[0],
                           period.empty() ? "?" : period[0]);
      }
    }
    return std::nullopt;
  }

 protected:
  std::unique_ptr<Cgroup> open_stale(const std::string& name) override {
    // A left-over slice may exist in only some hierarchies: take what is there.
    std::vector<Hierarchy> present;
    for (const Hierarchy& h : hierarchies_) {
      if (fs_.exists(join(h.parent_dir, name))) present.push_back(h);
    }
    return std::make_unique<V1Cgroup>(fs_, present, name, false);
  }

 private:
  static std::string own_path(const std::vector<CgroupMembership>& own,
                              const std::string& controller) {
    for (const CgroupMembership& m : own) {
      if (std::find(m.controllers.begin(), m.controllers.end(), controller) !=
          m.controllers.end()) {
        return m.path;
      }
    }
    return "/";
  }

  Fs fs_;
  CgroupMode mode_;
  std::vector<Hierarchy> hierarchies_;
};

}  // namespace

std::unique_ptr<Backend> make_v1_backend(const Fs& fs, const Layout& layout,
                                         const std::string& parent) {
  return std::make_unique<V1Backend>(fs, layout, parent);
}

}  // namespace edgeprof::detail
