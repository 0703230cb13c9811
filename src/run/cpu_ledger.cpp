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
    shared_at_take_ = o.shared_at_take_;
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

UniqueFd CpuLedger::lock_ledger() {
  if (!problem_.empty()) return UniqueFd();
  const std::string path = dir_ + "/" + kLedgerLock;
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) {
    problem_ = sys_message(
        errno, "opening the CPU ledger", path, "set EDGEPROF_LEDGER_DIR to a writable directory");
    return UniqueFd();
  }
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      problem_ = sys_message(errno, "locking the CPU ledger", path);
      return UniqueFd();
    }
  }
  return fd;
}

std::vector<std::pair<int, pid_t>> CpuLedger::held(int cpu) const {
  std::vector<std::pair<int, pid_t>> out;
  for (int slot = 0; slot < kMaxSlots; ++slot) {
    UniqueFd fd(::open(slot_path(cpu, slot).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) break;  // slots are made lowest first and never removed: the last one
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) continue;  // free (closing unlocks it)
    out.emplace_back(slot, read_pid(fd.get()));
  }
  return out;
}

int CpuLedger::use(int cpu) const {
  if (!problem_.empty()) {
    auto it = local_.find(cpu);
    return it == local_.end() ? 0 : it->second;
  }
  return static_cast<int>(held(cpu).size());
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
    int taken = kNotHeld;
    UniqueFd fd;
    for (int slot = 0; slot < kMaxSlots && taken < 0; ++slot) {
      fd = UniqueFd(
          ::open(slot_path(c, slot).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
      if (fd.get() < 0) break;
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
      const std::string pid = fmt::format("{}\n", ::getpid());
      if (::ftruncate(fd.get(), 0) != 0 ||
          ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        // The slot is held all the same; its holder reads as unknown.
      }
      taken = slot;
    }
    lease.slots_.push_back(taken);
    lease.fds_.push_back(taken != kNotHeld ? std::move(fd) : UniqueFd());
  }
  lease.ledger_ = this;  // only now: a lease being filled is not given back under lock_
  return lease;
}

std::vector<CpuHolder> CpuLedger::others(const CpuLease& lease) {
  std::vector<CpuHolder> out;
  std::lock_guard<std::mutex> guard(lock_);
  const UniqueFd ledger = lock_ledger();
  for (size_t i = 0; i < lease.cpus_.size(); ++i) {
    const int c = lease.cpus_[i];
    if (!problem_.empty()) {
      const int n = use(c) - 1;
      for (int k = 0; k < n; ++k) out.push_back({c, ::getpid()});
      continue;
    }
    for (const auto& [slot, pid] : held(c)) {
      if (slot != lease.slots_[i]) out.push_back({c, pid});
    }
  }
  return out;
}

void CpuLedger::give(CpuLease& lease) noexcept {
  std::lock_guard<std::mutex> guard(lock_);
  for (size_t i = 0; i < lease.cpus_.size(); ++i) {
    if (lease.slots_[i] == kCountedHere) --local_[lease.cpus_[i]];
  }
  lease.fds_.clear();  // closing a slot file releases its lock
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
