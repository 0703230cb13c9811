#include "run/cpu_ledger.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace edgeprof::detail {
namespace {

// Slots per CPU: how many slices may hold one CPU at a time (more share it uncounted).
constexpr int kMaxSlots = 256;
constexpr const char* kLedgerLock = "ledger.lock";

pid_t read_pid(int fd) {
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return 0;
  return static_cast<pid_t>(std::strtol(buffer, nullptr, 10));
}

}  // namespace

std::string sharing_warning(const std::vector<CpuHolder>& holders, pid_t self) {
  if (holders.empty()) return {};
  std::map<pid_t, std::vector<int>> by_pid;
  for (const CpuHolder& h : holders) {
    std::vector<int>& cpus = by_pid[h.pid];
    if (std::find(cpus.begin(), cpus.end(), h.cpu) == cpus.end()) cpus.push_back(h.cpu);
  }
  std::vector<std::string> who;
  for (auto& [pid, cpus] : by_pid) {
    std::sort(cpus.begin(), cpus.end());
    const std::string list = fmt::format("{}", fmt::join(cpus, ","));
    if (pid == self) {
      who.push_back(fmt::format("another slice of this process (CPU {})", list));
    } else if (pid == 0) {
      who.push_back(fmt::format("an edgeprof process that did not say which (CPU {})", list));
    } else {
      who.push_back(fmt::format("edgeprof process {} (CPU {})", pid, list));
    }
  }
  return fmt::format(
      "this run shared host CPUs with {}: the workloads competed for them, so its times may be "
      "slower than the device's; run them one after another, or give each its own CPUs "
      "(cpus=, PlanOptions::cpus) (docs/hpo.md)",
      fmt::join(who, ", "));
}

std::string ledger_dir(const char* env, uid_t euid, const char* xdg_runtime_dir) {
  if (env && *env) return env;
  if (euid == 0) return "/run/edgeprof";
  if (xdg_runtime_dir && *xdg_runtime_dir) return std::string(xdg_runtime_dir) + "/edgeprof";
  return fmt::format("/tmp/edgeprof-ledger-{}", euid);
}

CpuLease& CpuLease::operator=(CpuLease&& o) noexcept {
  if (this != &o) {
    if (ledger_) ledger_->give(*this);
    cpus_ = std::move(o.cpus_);
    slots_ = std::move(o.slots_);
    fds_ = std::move(o.fds_);
    ledger_ = std::exchange(o.ledger_, nullptr);
    owner_ = o.owner_;
    shared_at_take_ = o.shared_at_take_;
    problem_ = std::move(o.problem_);
  }
  return *this;
}

CpuLease::~CpuLease() {
  if (ledger_) ledger_->give(*this);
}

CpuLedger::CpuLedger(std::string dir) : dir_(std::move(dir)) {
  // Only a directory of this user's that nobody else may write: in a shared /tmp another user
  // could otherwise plant links where the slot files go, or hold the ledger's lock.
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    problem_ = sys_message(errno, "creating the CPU ledger's directory", dir_,
                           "set EDGEPROF_LEDGER_DIR to a writable directory");
    return;
  }
  struct stat st{};
  if (::lstat(dir_.c_str(), &st) != 0) {
    problem_ = sys_message(errno, "reading the CPU ledger's directory", dir_);
    return;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    problem_ = fmt::format(
        "the CPU ledger's directory {} is not used: it is {} (it must be a directory of "
        "this user that no one else may write); set EDGEPROF_LEDGER_DIR to one",
        dir_,
        !S_ISDIR(st.st_mode)         ? "not a directory"
        : st.st_uid != ::geteuid()   ? fmt::format("owned by uid {}", st.st_uid)
                                     : std::string("writable by others"));
    return;
  }
  lock_ledger();  // sets problem_ when the ledger cannot be opened or locked
}

std::string CpuLedger::slot_path(int cpu, int slot) const {
  return fmt::format("{}/cpu{}.{}", dir_, cpu, slot);
}

UniqueFd CpuLedger::lock_ledger(bool record_problem) {
  if (!problem_.empty()) return UniqueFd();
  const std::string path = dir_ + "/" + kLedgerLock;
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) {
    if (record_problem) {
      problem_ = sys_message(
          errno, "opening the CPU ledger", path, "set EDGEPROF_LEDGER_DIR to a writable directory");
    }
    return UniqueFd();
  }
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      if (record_problem) problem_ = sys_message(errno, "locking the CPU ledger", path);
      return UniqueFd();
    }
  }
  return fd;
}

std::vector<std::pair<int, pid_t>> CpuLedger::held(int cpu, int mine) const {
  std::vector<std::pair<int, pid_t>> out;
  for (int slot = 0; slot < kMaxSlots; ++slot) {
    if (slot == mine) continue;  // held by the caller (and so present): four system calls saved
    UniqueFd fd(::open(slot_path(cpu, slot).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) {
      // Slots are made lowest first and removed from the end only: a missing one is the last.
      if (errno == ENOENT || errno == EMFILE || errno == ENFILE) break;
      continue;  // a link planted there, or a file not ours: not a slot of this ledger
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) continue;  // free (closing unlocks it)
    out.emplace_back(slot, read_pid(fd.get()));
  }
  return out;
}

void CpuLedger::prune(int cpu) const {
  int last = -1;
  struct stat st{};
  while (last + 1 < kMaxSlots && ::lstat(slot_path(cpu, last + 1).c_str(), &st) == 0) ++last;
  // From the end while free: a taker holds the ledger's lock from open to flock, so a slot seen
  // free here is not being taken.
  for (; last >= 0; --last) {
    const std::string path = slot_path(cpu, last);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0 || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return;
    ::unlink(path.c_str());
  }
}

int CpuLedger::use(int cpu) const {
  auto it = local_.find(cpu);
  const int here = it == local_.end() ? 0 : it->second;
  return here + (problem_.empty() ? static_cast<int>(held(cpu).size()) : 0);
}

std::vector<int> CpuLedger::order_locked(const std::vector<int>& host) const {
  std::map<int, int> uses;  // read once per CPU: the sort compares each several times
  for (int c : host) uses[c] = use(c);
  std::vector<int> out = host;
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return uses[a] < uses[b]; });
  return out;
}

std::vector<int> CpuLedger::order(const std::vector<int>& host) {
  std::lock_guard<std::mutex> guard(lock_);
  const UniqueFd ledger = lock_ledger();
  return order_locked(host);
}

CpuLease CpuLedger::take(const std::vector<int>& cpus) {
  std::lock_guard<std::mutex> guard(lock_);
  const UniqueFd ledger = lock_ledger();
  return take_locked(cpus);
}

CpuLease CpuLedger::take_least_used(const std::vector<int>& host, std::size_t n) {
  std::lock_guard<std::mutex> guard(lock_);
  const UniqueFd ledger = lock_ledger();
  std::vector<int> cpus = order_locked(host);
  cpus.resize(std::min(n, cpus.size()));
  return take_locked(cpus);
}

CpuLease CpuLedger::take_locked(const std::vector<int>& cpus) {
  CpuLease lease;
  for (int c : cpus) {
    lease.shared_at_take_ = std::max(lease.shared_at_take_, use(c));
    lease.cpus_.push_back(c);
    if (!problem_.empty()) {
      ++local_[c];
      lease.slots_.push_back(kCountedHere);
      lease.fds_.emplace_back();
      continue;
    }
    int taken = kNotHeld, error = 0;
    UniqueFd fd;
    for (int slot = 0; slot < kMaxSlots && taken < 0; ++slot) {
      fd = UniqueFd(
          ::open(slot_path(c, slot).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
      if (fd.get() < 0) {
        error = errno;
        if (error == EMFILE || error == ENFILE) break;
        continue;  // a link planted there: the next slot
      }
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
      const std::string pid = fmt::format("{}\n", ::getpid());
      if (::ftruncate(fd.get(), 0) != 0 ||
          ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        // The slot is held all the same; its holder reads as unknown.
      }
      taken = slot;
    }
    if (taken == kNotHeld) {
      // Counted here at least, and said: the other processes cannot see this CPU taken.
      ++local_[c];
      taken = kCountedHere;
      const std::string why =
          error ? sys_message(error, "taking a slot of the CPU ledger", slot_path(c, 0),
                              "raise the open-file limit (ulimit -n) or close files")
                : fmt::format("all {} slots of CPU {} in the CPU ledger {} are held", kMaxSlots,
                              c, dir_);
      if (lease.problem_.empty()) {
        lease.problem_ = why + ": other edgeprof processes do not see this slice's CPUs taken";
      }
    }
    lease.slots_.push_back(taken);
    lease.fds_.push_back(taken >= 0 ? std::move(fd) : UniqueFd());
  }
  lease.owner_ = ::getpid();
  lease.ledger_ = this;  // only now: a lease being filled is not given back under lock_
  return lease;
}

std::vector<CpuHolder> CpuLedger::others(const CpuLease& lease) {
  std::vector<CpuHolder> out;
  std::lock_guard<std::mutex> guard(lock_);
  const UniqueFd ledger = lock_ledger();
  for (size_t i = 0; i < lease.cpus_.size(); ++i) {
    const int c = lease.cpus_[i];
    auto it = local_.find(c);
    const int here =
        (it == local_.end() ? 0 : it->second) - (lease.slots_[i] == kCountedHere ? 1 : 0);
    for (int k = 0; k < here; ++k) out.push_back({c, ::getpid()});
    if (!problem_.empty()) continue;
    for (const auto& [slot, pid] : held(c, lease.slots_[i])) out.push_back({c, pid});
  }
  return out;
}

void CpuLedger::give(CpuLease& lease) noexcept {
  std::lock_guard<std::mutex> guard(lock_);
  const bool mine = lease.owner_ == ::getpid();
  bool unlocked = false;
  for (size_t i = 0; i < lease.cpus_.size(); ++i) {
    if (lease.slots_[i] == kCountedHere) --local_[lease.cpus_[i]];
    // Unlocked explicitly: closing does not unlock while a forked child keeps a copy of the fd.
    // A forked child's copy of the lease only closes its fds: the parent's CPUs stay held.
    if (mine && lease.fds_[i].get() >= 0) {
      ::flock(lease.fds_[i].get(), LOCK_UN);
      unlocked = true;
    }
  }
  lease.fds_.clear();
  // Tidying, best effort: under the ledger's lock, or not at all (a failure here does not turn
  // the ledger into this process's own).
  if (unlocked && problem_.empty()) {
    try {
      if (const UniqueFd ledger = lock_ledger(/*record_problem=*/false); ledger.get() >= 0) {
        for (size_t i = 0; i < lease.cpus_.size(); ++i) {
          if (lease.slots_[i] >= 0) prune(lease.cpus_[i]);
        }
      }
    } catch (...) {  // out of memory for a path: the free slot files stay, harmlessly
    }
  }
  lease.cpus_.clear();
  lease.slots_.clear();
  lease.ledger_ = nullptr;
}

CpuLedger& cpu_ledger() {
  static CpuLedger* const ledger = new CpuLedger(
      ledger_dir(std::getenv("EDGEPROF_LEDGER_DIR"), ::geteuid(), std::getenv("XDG_RUNTIME_DIR")));
  return *ledger;
}

}  // namespace edgeprof::detail
