// What both backends share: mode detection, mount discovery, the kill loop, removal, and the
// choice of backend.
#include <libcgroup.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <limits>
#include <fmt/format.h>
#include <mutex>
#include <set>
#include <thread>

#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "sys/parse.hpp"
#include "sys/stderr.hpp"

namespace edgeprof::detail {

CgroupMode classify_mode(std::optional<long> root_type, std::optional<long> unified_type) {
  if (root_type == kCgroup2Magic) return CgroupMode::unified;
  if (root_type == kTmpfsMagic && unified_type == kCgroup2Magic) return CgroupMode::hybrid;
  return CgroupMode::legacy;
}

Layout discover_layout(const Fs& fs) {
  Layout layout;
  layout.mode = classify_mode(fs.fs_type(files::kCgroupMount),
                              fs.fs_type(join(files::kCgroupMount, "unified")));
  if (layout.mode == CgroupMode::unified) {
    layout.unified = files::kCgroupMount;
    return layout;
  }
  // libcgroup reads the mount table for us; measured to be fine for this one-off discovery
  // (docs/architecture.md), unlike for anything on the hot path. It is not thread-safe: lock.
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  static const int init = cgroup_init();
  if (init != 0) {
    throw CgroupError(fmt::format(
        "libcgroup could not read the cgroup mounts ({}, code {}); check that cgroup "
        "hierarchies are mounted under /sys/fs/cgroup",
        cgroup_strerror(init), init));
  }
  void* handle = nullptr;
  cgroup_mount_point mount{};
  for (int rc = cgroup_get_controller_begin(&handle, &mount); rc == 0;
       rc = cgroup_get_controller_next(&handle, &mount)) {
    std::string path = mount.path;
    // In hybrid mode libcgroup also lists v2-only controllers at the unified mount: skip them.
    if (fs.fs_type(path) == kCgroup2Magic) continue;
    layout.v1.emplace(mount.name, path);
  }
  cgroup_get_controller_end(&handle);
  return layout;
}

void Backend::remove_stale(const std::string& name) {
  const std::unique_ptr<Cgroup> cgroup = open_stale(name);
  if (cgroup->has_processes() && cgroup->procs().empty()) return;
  cgroup->kill_all();
  cgroup->remove();
}

std::unique_ptr<Backend> make_backend(const Fs& fs, const Layout& layout,
                                      const std::string& parent) {
  if (layout.mode == CgroupMode::unified) return make_v2_backend(fs, layout, parent);
  return make_v1_backend(fs, layout, parent);
}

std::uint64_t host_swap_bytes(const Fs& fs) {
  auto meminfo = fs.read(files::kProcMeminfo);
  return meminfo ? find_key(*meminfo, "SwapTotal:").value_or(0) * 1024 : 0;
}

std::vector<std::string> whole_disks(const Fs& fs) {
  std::vector<std::string> out;
  const auto text = fs.read(files::kProcPartitions);
  if (!text) return out;
  for (const BlockDevice& b : parse_partitions(*text)) {
    const std::string sys = fmt::format("/sys/dev/block/{}", b.dev);
    // A disk of hardware (virtio, SCSI, NVMe) has a device; loop, RAM, zram and device-mapper
    // disks have none.
    if (b.blocks > 0 && !fs.exists(sys + "/partition") && fs.exists(sys + "/device")) {
      out.push_back(b.dev);
    }
  }
  return out;
}

std::vector<std::string> counted_disks(const Fs& fs) {
  static const std::vector<std::string> hardware = whole_disks(fs);  // a host fact: read once
  std::vector<std::string> out = hardware;
  std::string problem;
  if (auto here = disk_under(fs, ".", &problem)) {
    if (std::find(out.begin(), out.end(), *here) == out.end()) out.push_back(*here);
  }
  return out;
}

std::string block_group_problem(const std::string& disk, const std::string& rule,
                                const char* file, int err) {
  return fmt::format("block I/O accounting of disk {} (cannot write '{}' to {}: {}, errno {}): "
                     "the slice's I/O on it may be counted to its parent cgroup and read 0",
                     disk, rule, file, std::strerror(err), err);
}

namespace {

// The start time in a /proc/<pid>/stat file (clock ticks after boot).
std::optional<std::uint64_t> start_time_in(const Fs& fs, const std::string& stat_path, int* err) {
  int read_err = 0;
  auto stat = fs.read(stat_path, &read_err);
  if (err) *err = stat ? 0 : read_err;
  if (!stat) return std::nullopt;
  return parse_stat_starttime(*stat);
}

}  // namespace

std::optional<std::uint64_t> process_start_time(const Fs& fs, pid_t pid, int* err) {
  return start_time_in(fs, fmt::format(fmt::runtime(files::kProcTidStat), pid), err);
}

std::optional<std::uint64_t> own_start_time(const Fs& fs, int* err) {
  return start_time_in(fs, files::kProcSelfStat, err);
}

std::uint64_t own_pid_namespace(const Fs& fs) {
  struct stat st {};
  return ::stat(fs.resolve(files::kProcSelfNsPid).c_str(), &st) == 0 ? st.st_ino : 0;
}

std::optional<pid_t> proc_self_pid(const Fs& fs) {
  char target[32];
  const ssize_t n = ::readlink(fs.resolve(files::kProcSelf).c_str(), target, sizeof target);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof target) return std::nullopt;
  const std::string text(target, static_cast<size_t>(n));
  const auto pid = parse_u64(text);
  if (!pid || *pid == 0 || *pid > std::uint64_t(std::numeric_limits<pid_t>::max()) ||
      std::to_string(*pid) != text) {
    return std::nullopt;
  }
  return static_cast<pid_t>(*pid);
}

bool proc_numbers_own_pids(const Fs& fs) { return proc_self_pid(fs) == ::getpid(); }

namespace {

// Whether some process in this /proc is in the pid namespace `ns` (the inode of its ns/pid),
// or this cannot be ruled out (no process seen, or one's namespace unreadable: EACCES for
// another user's process).
bool pid_namespace_may_be_used(const Fs& fs, std::uint64_t ns) {
  bool seen = false;
  for (const std::string& pid : fs.subdirs("/proc")) {
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    seen = true;
    struct stat st {};
    if (::stat(fs.resolve(join(join("/proc", pid), "ns/pid")).c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // it exited since the listing
      return true;
    }
    if (st.st_ino == ns) return true;
  }
  return !seen;
}

}  // namespace

bool slice_owner_may_live(const Fs& fs, const SliceName& name, std::uint64_t own_pid_ns) {
  if (name.pid_ns == 0) return owner_may_live(fs, name.owner, name.owner_start);  // an old name
  if (own_pid_ns == 0) return true;  // which numbering this /proc is in cannot be told
  if (name.pid_ns != own_pid_ns) {
    // Another namespace's pid means nothing here. Only from the root pid namespace does /proc
    // show every process: there a namespace with no process left has ended (a container that
    // stopped), and its slices with it; from anywhere else nothing can be ruled out.
    return own_pid_ns != kRootPidNamespace || pid_namespace_may_be_used(fs, name.pid_ns);
  }
  return owner_may_live(fs, name.owner, name.owner_start);
}

bool owner_may_live(const Fs& fs, pid_t pid, std::uint64_t start) {
  int err = 0;
  const auto now = process_start_time(fs, pid, &err);
  if (now) return *now == start;
  return !(err == ENOENT || err == ESRCH);
}

std::string describe_survivor(const Fs& fs, pid_t pid) {
  const auto stat = fs.read(fmt::format(fmt::runtime(files::kProcTidStat), pid));
  if (!stat) return fmt::format("pid {}, gone by the time its state was read", pid);
  const std::optional<char> state = parse_stat_state(*stat);
  if (!state) return fmt::format("pid {}: look at /proc/{}/stack", pid, pid);
  const char* meaning = "look at /proc/{}/stack";
  switch (*state) {
    case 'R':
      meaning = "runnable, waiting for a CPU: a busy CPU, or the slice's CPU limit or weight; look "
                "at /proc/{}/sched";
      break;
    case 'D':
      meaning = "uninterruptible sleep, in the kernel: look at /proc/{}/stack";
      break;
    case 'Z':
      meaning = "exited, not yet reaped by its parent: look at the parent in /proc/{}/status";
      break;
  }
  return fmt::format("pid {}, state {} ({})", pid, *state,
                     fmt::format(fmt::runtime(meaning), pid));
}

void kill_loop(const Fs& fs, const std::function<std::vector<pid_t>()>& list,
               const std::function<bool(bool)>& set_frozen, const std::string& where,
               int patience_ms, const KillListed& kill) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(patience_ms);
  auto again_at = start + std::chrono::seconds(1);
  std::set<pid_t> killed;
  for (int round = 0;; ++round) {
    // Freezing stops a forking task between its forks; it also stops a killed one on its way
    // out, so rounds that find only the killed (exiting) leave the freezer alone. The killed
    // are not signalled again: SIGKILL is pending for them already, and a pid signalled again
    // after its process was reaped could be a stranger's. Once a second every listed one is
    // (a pid reused in the slice, a tree killed while a task was moving in).
    std::vector<pid_t> pids = list();
    const bool again = Clock::now() >= again_at;
    if (again) again_at = Clock::now() + std::chrono::seconds(1);
    const auto is_fresh = [&](pid_t pid) { return again || killed.count(pid) == 0; };
    const bool fresh = std::any_of(pids.begin(), pids.end(), is_fresh);
    {
      // SIGKILL is delivered to frozen tasks only once they thaw: thawed at the end of the
      // round, or when the kill throws.
      struct Thaw {
        const std::function<bool(bool)>* set_frozen;
        ~Thaw() {
          if (set_frozen) (*set_frozen)(false);
        }
      };
      const bool frozen = fresh && set_frozen && set_frozen(true);
      const Thaw thaw{frozen ? &set_frozen : nullptr};
      if (frozen) pids = list();  // what forked before the freeze took hold
      std::vector<pid_t> to_kill;
      std::copy_if(pids.begin(), pids.end(), std::back_inserter(to_kill), is_fresh);
      if (!to_kill.empty()) {
        if (kill) {
          kill(to_kill);
        } else {
          for (pid_t pid : to_kill) {
            // kill(0) and kill(-n) would reach process groups, this one's too.
            if (pid > 0) ::kill(pid, SIGKILL);
          }
        }
        killed.insert(to_kill.begin(), to_kill.end());
      }
    }
    if (pids.empty()) return;
    if (Clock::now() > deadline) {
      throw CgroupError(fmt::format("{} processes in {} survived SIGKILL for {} ms (for example {})",
                                    pids.size(), where, patience_ms,
                                    describe_survivor(fs, pids.front())));
    }
    // Killed tasks leave cgroup.procs once they have exited: give them a moment.
    std::this_thread::sleep_for(std::chrono::microseconds(round < 10 ? 100 : 2000));
  }
}

namespace {

// Writes `to` into each of `files` that reads otherwise (v2's cpu.max "max 100000" counts as
// "max"), saving in `saved` what each read before.
void write_saving(const Fs& fs, std::vector<std::pair<std::string, std::string>>& files,
                  std::vector<std::pair<std::string, std::string>>& saved) {
  for (auto& [file, to] : files) {
    auto old = fs.read(file);
    if (!old) continue;
    const std::string text(trim(*old));
    if (text == to || text.rfind(to + " ", 0) == 0) continue;  // an inner lift's, or the user's
    if (fs.write(file, to) == 0) saved.emplace_back(std::move(file), text);
  }
}

// Puts back what write_saving saved, in order; a text that cannot go back is said on stderr
// with `consequence`.
void put_back_saved(const Fs& fs, std::vector<std::pair<std::string, std::string>>& saved,
                    const char* consequence) {
  const auto texts = std::move(saved);
  saved.clear();
  // Every text put back before anything is said: a message that could not be formatted
  // skipped the rest.
  std::vector<std::pair<std::size_t, int>> failed;  // index in texts, errno
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (int err = fs.write(texts[i].first, texts[i].second)) failed.emplace_back(i, err);
  }
  for (const auto& [i, err] : failed) {
    const auto& [file, text] = texts[i];
    detail::say_on_stderr(fmt::format(
        "could not put '{}' back into {} after a kill ({}, errno {}): the slice's next "
        "workload would run {}",
        text, fs.resolve(file), std::strerror(err), err, consequence));
  }
}

}  // namespace

CpuLimitLift::CpuLimitLift(const Fs& fs, std::vector<std::pair<std::string, std::string>> files,
                           BandwidthGate& gate, Write write,
                           std::vector<std::pair<std::string, std::string>> weights)
    : fs_(fs), gate_(gate), write_(std::move(write)) {
  const std::lock_guard<std::mutex> lock(gate_.mutex);
  write_saving(fs_, files, gate_.saved);
  write_saving(fs_, weights, gate_.saved_weights);
  gate_.lifted += 1;
}

CpuLimitLift::~CpuLimitLift() {
  const std::lock_guard<std::mutex> lock(gate_.mutex);
  // Lifts that overlap (kills from two threads) leave the putting back to the last to end: the
  // first saved the limit before either lifted it.
  if (--gate_.lifted > 0) return;
  try {
    put_back();
  } catch (...) {  // stderr unwritable: nothing more to say
  }
}

void CpuLimitLift::put_back() {
  // The limits first: a workload without its limit is worse off than one at a higher weight.
  put_back_limits();
  put_back_saved(fs_, gate_.saved_weights, "at a higher CPU weight");
}

void CpuLimitLift::put_back_limits() {
  if (gate_.held) {
    gate_.saved.clear();
    const auto [quota, period] = *gate_.held;
    gate_.held.reset();
    if (int err = write_(quota, period)) {
      detail::say_on_stderr(fmt::format(
          "could not set the slice's CPU limit to {} us per {} us after a kill ({}, errno {}): "
          "the slice's next workload would run without it",
          quota, period, std::strerror(err), err));
    }
    return;
  }
  put_back_saved(fs_, gate_.saved, "without that CPU limit");
}

int remove_dir_retrying(const Fs& fs, const std::string& path, int patience_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(patience_ms);
  for (int round = 0;; ++round) {
    int err = fs.rmdir(path);
    if (err == 0 || err == ENOENT) return 0;
    if (err != EBUSY || Clock::now() > deadline) return err;
    std::this_thread::sleep_for(std::chrono::microseconds(round < 10 ? 100 : 2000));
  }
}

std::string describe_unremoved(const Fs& fs, const std::vector<std::string>& paths) {
  std::vector<std::string> parts;
  for (const std::string& path : paths) {
    std::vector<std::string> dirs = {path};
    for (const std::string& sub : fs.subdirs(path)) dirs.push_back(join(path, sub));
    for (auto dir = dirs.rbegin(); dir != dirs.rend(); ++dir) {
      const int err = fs.rmdir(*dir);
      if (err == 0 || err == ENOENT) continue;
      // A v2 threaded core group refuses cgroup.procs: its threads, then.
      const char* what = "processes";
      std::optional<std::string> text = fs.read(join(*dir, files::kProcs));
      if (!text) {
        what = "threads";
        text = fs.read(join(*dir, files::v2::kThreads));
      }
      std::string members = text ? "none" : "unreadable";
      if (text) {
        const auto pids = parse_pids(*text);
        if (!pids.empty()) {
          members = fmt::format("{}", fmt::join(pids, " "));
        } else if (lists_processes(*text)) {
          members = "only processes of another pid namespace (listed as 0), which cannot be "
                    "signalled from here";
        }
      }
      parts.push_back(fmt::format("{} ({}, errno {}; {} in it: {})", fs.resolve(*dir),
                                  std::strerror(err), err, what, members));
    }
  }
  return parts.empty() ? fmt::format("{} (gone at a last try)", fmt::join(paths, ", "))
                       : fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace edgeprof::detail
