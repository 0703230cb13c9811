// cgroup v1 and v2 behind one interface. A Backend knows the hierarchies and the caller's
// place in them; a Cgroup is one slice's cgroup(s), removed by its owner (Slice).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "cgroup/guard.hpp"
#include "sys/fs.hpp"
#include "sys/parse.hpp"

namespace edgeprof::detail {

// statfs magic numbers (linux/magic.h), named here so the mode logic reads as a table.
inline constexpr long kCgroup2Magic = 0x63677270;
inline constexpr long kTmpfsMagic = 0x01021994;

// unified: /sys/fs/cgroup is cgroup2. hybrid: tmpfs with a cgroup2 `unified/`. legacy: else.
CgroupMode classify_mode(std::optional<long> root_type, std::optional<long> unified_type);

// Where each hierarchy is mounted. v2: `unified` is the mount. v1: controller -> mount path
// (controllers mounted together share a path).
struct Layout {
  CgroupMode mode = CgroupMode::unified;
  std::string unified;
  std::map<std::string, std::string> v1;
};

// Discovers the layout of the real machine: mode by statfs, mounts through libcgroup (once).
Layout discover_layout(const Fs& fs);

// Whether a CPU quota is no limit at all: at least the whole capacity of the slice's `cpus`
// CPUs, which its cpuset caps anyway (`cpus` 0 when no cpuset was applied: then the quota always
// binds). Written as "max" (v2) or -1 (v1) then, because at exactly that quota the kernel's
// bandwidth accounting still throttles a busy slice now and then (0 to 5 ms per second of a
// CPU-bound run here; docs/benchmarks.md, fidelity runs 5 and 6). The plan notes it too.
inline bool quota_unlimited(std::uint64_t quota_us, std::uint64_t period_us, std::size_t cpus) {
  return cpus > 0 && quota_us >= period_us * cpus;
}

// Per-core emulation: each of `groups` core groups' share of the device's `quota_us`, no less
// than the kernel's minimum (a speed schedule's quota is a multiple of `groups`).
inline std::uint64_t per_core_quota_us(std::uint64_t quota_us, std::size_t groups) {
  return std::max<std::uint64_t>(kMinCpuQuotaUs, quota_us / groups);
}

// Per-core emulation: the core groups' limits read as one (Cgroup::cpu_bandwidth): their quotas
// summed over their common period; unlimited if any is; nullopt if any could not be read or
// their periods differ (a change half written).
inline std::optional<CpuMax> sum_core_bandwidths(const std::vector<std::optional<CpuMax>>& cores) {
  if (cores.empty()) return std::nullopt;
  CpuMax sum;
  sum.quota_us = 0;
  sum.period_us = cores.front() ? cores.front()->period_us : 0;
  bool unlimited = false;
  for (const auto& core : cores) {
    if (!core || core->period_us != sum.period_us) return std::nullopt;
    if (!core->quota_us) {
      unlimited = true;
    } else {
      *sum.quota_us += *core->quota_us;
    }
  }
  if (unlimited) sum.quota_us.reset();
  return sum;
}

// Where a slice's files are, for the sampler (Sources::of): on v2 one directory, with the
// memory.peak descriptor that reset_peak() wrote (or -1); on v1 a directory per controller.
struct SliceFiles {
  Fs fs;
  bool unified = false;
  std::string dir;                                  // v2
  int peak_fd = -1;                                 // v2
  std::map<std::string, std::string> controllers;  // v1: controller -> its directory
  // Per-core emulation (EmulationPlan::core_groups): the core groups' directories, whose
  // cpu.stat hold the throttling (the slice's own quota is unlimited then).
  std::vector<std::string> core_dirs;
};

// One slice's cgroup(s) in one backend.
class Cgroup {
 public:
  virtual ~Cgroup() = default;
  // Applies the plan; limits that cannot be applied are appended to `unapplied` when allowed,
  // else thrown as UnsupportedError.
  virtual void apply(const EmulationPlan& plan, bool allow_missing,
                     std::vector<std::string>& unapplied) = 0;
  // A directory fd for clone3(CLONE_INTO_CGROUP), or -1 when the child must be attached.
  virtual int clone_fd() const = 0;
  // cgroup.procs fds a child writes "0" into to enter the slice by itself (v1; empty on v2).
  virtual const std::vector<int>& self_attach_fds() = 0;
  // Moves a whole process (all its threads) into the slice.
  virtual void attach(pid_t pid) = 0;
  // The kernel's peak memory counter now (through the fd reset_peak() wrote, where it did).
  virtual std::optional<std::uint64_t> peak() const = 0;
  // Changes the CPU bandwidth while the slice runs (a speed schedule): 0, or the errno of the
  // failed write.
  virtual int set_cpu_bandwidth(std::uint64_t quota_us, std::uint64_t period_us) noexcept = 0;
  // The CPU bandwidth the kernel holds for the slice now (under per-core emulation the core
  // groups', summed); nullopt when its files cannot be read or parsed.
  virtual std::optional<CpuMax> cpu_bandwidth() const = 0;
  // Starts a fresh peak-memory measurement where the kernel allows it; false if it cannot.
  virtual bool reset_peak() = 0;
  virtual const char* peak_source() const = 0;
  virtual std::vector<pid_t> procs() const = 0;
  // Whether any process is in the slice, from one read (procs() reads every v1 hierarchy);
  // true when it cannot be read.
  virtual bool has_processes() const = 0;
  // Kills every process in the slice and returns once none is left (or throws after a while).
  virtual void kill_all() = 0;
  // Removes the cgroup(s); never throws. Returns false if something could not be removed.
  virtual bool remove() noexcept = 0;
  virtual std::vector<std::string> paths() const = 0;
  // Where the slice's files are, for the sampler.
  virtual SliceFiles files() const = 0;
  // What a SliceGuard does to the slice if this process dies without removing it.
  virtual GuardPlan guard_plan() const = 0;
  // Per-core emulation: the task lists (v1 `tasks`) of the core groups apply() made, in core
  // order, for a CorePlacer; empty when it made none.
  virtual std::vector<std::string> core_tasks() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual CgroupMode mode() const = 0;
  // Creates a slice cgroup named `name` beneath the parent.
  virtual std::unique_ptr<Cgroup> create(const std::string& name) = 0;
  // Names of edgeprof slices directly beneath the parent.
  virtual std::vector<std::string> slice_names() const = 0;
  // Kills and removes a left-over slice by name (found by slice_names()). One whose processes
  // are all listed as 0 (another pid namespace's, where its owner may live unseen from here) is
  // left alone. Throws as kill_all().
  void remove_stale(const std::string& name);
  // The nearest cgroup at or above the slices' parent whose CPU bandwidth is limited, as
  // "PATH (FILE QUOTA PERIOD)"; nullopt when none is (or none can be read). Processes there,
  // this one's keep-warm threads included, draw on the quota the slices draw on too.
  virtual std::optional<std::string> cpu_quota_above() const = 0;
  // Whether apply() makes per-core emulation's core groups (EmulationPlan::core_groups).
  virtual bool core_groups_supported() const = 0;

 protected:
  // The left-over slice `name` as it is, not removed when destroyed (for remove_stale()).
  virtual std::unique_ptr<Cgroup> open_stale(const std::string& name) = 0;
};

// `parent` is a cgroup path ("/a/b") or empty for this process's own cgroup.
std::unique_ptr<Backend> make_v1_backend(const Fs& fs, const Layout& layout,
                                         const std::string& parent);
std::unique_ptr<Backend> make_v2_backend(const Fs& fs, const Layout& layout,
                                         const std::string& parent);
std::unique_ptr<Backend> make_backend(const Fs& fs, const Layout& layout,
                                      const std::string& parent);

// SwapTotal of /proc/meminfo in bytes (0 when unreadable).
std::uint64_t host_swap_bytes(const Fs& fs);

// The host's disks of hardware with a size ("MAJ:MIN", from /proc/partitions; whole disks: a
// partition's I/O is its disk's in the block cgroup), and counted_disks() those plus the disk
// under the current directory (where a workload most likely writes, a RAM disk included).
// A slice writes a no-limit rule for each counted disk (v1 blkio.throttle.read_bps_device
// "MAJ:MIN 0", v2 io.max "MAJ:MIN rbps=max"): the kernel then makes the slice's block group of
// that disk at once, with an allocation that may sleep. Made on the first I/O instead, it is
// allocated without sleeping, and when that fails the kernel charges the I/O to the closest
// ancestor cgroup without a word: the slice's counters read 0 (seen here when many slices had
// come and gone and a build ran beside them). Loop and device-mapper disks are left alone: a
// rule would turn on throttling checks for every bio of theirs, host-wide.
std::vector<std::string> whole_disks(const Fs& fs);
std::vector<std::string> counted_disks(const Fs& fs);
// What a run's report says when that rule could not be written.
std::string block_group_problem(const std::string& disk, const std::string& rule,
                                const char* file, int err);

// A process that outlived its SIGKILL as /proc/<pid>/stat shows it: "pid 41, state R (runnable:
// ...)" with what the state means and where to look next.
std::string describe_survivor(const Fs& fs, pid_t pid);

// Reads /proc/<pid>/stat's start time, or nullopt when it cannot (the process is gone, or the
// file could not be read: `err`, when given, gets the errno, 0 for a text that did not parse).
std::optional<std::uint64_t> process_start_time(const Fs& fs, pid_t pid, int* err = nullptr);

// This process's start time from /proc/self/stat, or nullopt (`err` as above). Unlike
// process_start_time(fs, getpid()), right when the mounted /proc numbers another pid namespace
// (there /proc/<getpid()> is another process, or none).
std::optional<std::uint64_t> own_start_time(const Fs& fs, int* err = nullptr);

// The inode of this process's pid namespace (of /proc/self/ns/pid), 0 when it cannot be read.
std::uint64_t own_pid_namespace(const Fs& fs);

// This process's pid as the mounted /proc numbers it (where /proc/self points), or nullopt.
std::optional<pid_t> proc_self_pid(const Fs& fs);

// Whether the mounted /proc numbers processes as this process's pid namespace does: its
// /proc/self names getpid(). False when it is another namespace's /proc (`unshare --pid`
// without `--mount-proc`, a container handed the host's /proc) or /proc/self cannot be read:
// a pid in a slice's or a counter directory's name cannot be looked up in it, so sweeps leave
// everything alone.
bool proc_numbers_own_pids(const Fs& fs);

// Whether the process `pid` that started at `start` may still be alive: false only when /proc
// says it is gone (no such process) or that its pid now names a process started at another
// time. A stat that cannot be read for another reason (this process out of file descriptors)
// or does not parse counts as alive: a sweep leaves alone what it could not check.
bool owner_may_live(const Fs& fs, pid_t pid, std::uint64_t start);
// The inode of the root pid namespace (the kernel's PROC_PID_INIT_INO), whose /proc shows
// every process of every pid namespace.
inline constexpr std::uint64_t kRootPidNamespace = 0xEFFFFFFCu;

// Whether the slice `name` may belong to a live process. In this pid namespace (`own_pid_ns`)
// or a name without one: owner_may_live(). Of another: yes, unless this is the root pid
// namespace and no process in /proc is in that one any more. With `own_pid_ns` unknown (0:
// a kernel without pid namespaces, whose names have none either): yes for a name with one. A
// sweep removes only slices for which this is false, and none at all where /proc numbers
// another namespace (proc_numbers_own_pids).
bool slice_owner_may_live(const Fs& fs, const SliceName& name, std::uint64_t own_pid_ns);

// How kill_loop kills what it lists (those not killed before; every listed one again once a
// second): empty, SIGKILL to each listed pid above 0; else this (v2: a write to cgroup.kill).
using KillListed = std::function<void(const std::vector<pid_t>& pids)>;

// Kills the processes listed by `list` until it comes back empty, with `freeze`/`thaw` around
// each round that finds a process not killed before (so a fork bomb cannot outrun the loop,
// while the killed are left to run their exits). Throws CgroupError naming `where` if
// processes survive for `patience_ms`, with the state /proc (read through `fs`) gives the first.
void kill_loop(const Fs& fs, const std::function<std::vector<pid_t>()>& list,
               const std::function<bool(bool)>& set_frozen, const std::string& where,
               int patience_ms = 5000, const KillListed& kill = {});

// Serialises a slice's CPU-limit writes (Cgroup::set_cpu_bandwidth) with a CpuLimitLift: a
// write asked for while the limit is lifted (a core placer as the killed threads go, a speed
// schedule) is held, and made when the lift ends in place of the limit the lift saved.
struct BandwidthGate {
  std::mutex mutex;
  int lifted = 0;  // lifts in progress (kills from two threads at once): the last puts back
  std::vector<std::pair<std::string, std::string>> saved;       // (file, text before the lift)
  std::vector<std::pair<std::string, std::string>> saved_weights;  // likewise, CPU weights
  std::optional<std::pair<std::uint64_t, std::uint64_t>> held;  // (quota_us, period_us)

  // A limit asked for: held while a lift is in progress, else made now by `write`.
  template <class Write>
  int set(std::uint64_t quota_us, std::uint64_t period_us, Write&& write) noexcept {
    const std::lock_guard<std::mutex> lock(mutex);
    if (lifted) {
      held = {quota_us, period_us};
      return 0;
    }
    return write(quota_us, period_us);
  }
};

// Lifts a slice's CPU limit for its lifetime and puts it back: a killed task still needs CPU
// to exit, charged to its cgroup, so under a starved quota the killed queued behind it for
// seconds. `files` are (control file, its "no limit" text), parents before children (v1
// refuses a child's quota above its parent's); the old texts go back in the same order, or
// `write` makes the write the gate held. A limit that cannot be put back is said on stderr.
// `weights` are (CPU weight file, its highest weight), raised likewise and put back: a killed
// task woken in a slice that its quota had held back waited, runnable and unthrottled, for
// seconds on a CPU busy with other work, until its group's weight was raised (Linux 6.18).
class CpuLimitLift {
 public:
  using Write = std::function<int(std::uint64_t quota_us, std::uint64_t period_us)>;
  CpuLimitLift(const Fs& fs, std::vector<std::pair<std::string, std::string>> files,
               BandwidthGate& gate, Write write,
               std::vector<std::pair<std::string, std::string>> weights = {});
  ~CpuLimitLift();
  CpuLimitLift(const CpuLimitLift&) = delete;
  CpuLimitLift& operator=(const CpuLimitLift&) = delete;

 private:
  void put_back();  // under the gate's lock
  void put_back_limits();
  const Fs& fs_;
  BandwidthGate& gate_;
  Write write_;
};

// rmdir with retries: a cgroup stays busy for a moment after its last task was killed.
int remove_dir_retrying(const Fs& fs, const std::string& path, int patience_ms = 2000);

// What is left of a slice's directories (and their subdirectories) once remove() failed: each
// with the reason from one last try and the processes still in it, e.g. "/sys/.../edgeprof-1-2-3
// (Device or resource busy, errno 16; processes in it: 41 42)". A slice left behind is then
// explained where it happened, not found later with nothing to say why. A directory that goes
// at the last try is not named; where all went, "... (gone at a last try)".
std::string describe_unremoved(const Fs& fs, const std::vector<std::string>& paths);

}  // namespace edgeprof::detail
