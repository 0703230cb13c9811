// The CPU ledger of the run layer: which host CPUs the live slices of every edgeprof process on
// this machine use.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sys/fs.hpp"

namespace edgeprof::detail {

// Another slice holding one of a lease's CPUs.
struct CpuHolder {
  int cpu = 0;
  pid_t pid = 0;  // the process that holds it (0 when its slot file does not say)
};

// The warning for a run whose CPUs `holders` also held ("" when none did); `self` is this
// process's pid. Pure.
std::string sharing_warning(const std::vector<CpuHolder>& holders, pid_t self);

// Where the machine's ledger lives: `env` (EDGEPROF_LEDGER_DIR) when set; /run/edgeprof for root;
// $XDG_RUNTIME_DIR/edgeprof; /tmp/edgeprof-ledger-<uid>. Pure.
std::string ledger_dir(const char* env, uid_t euid, const char* xdg_runtime_dir);

// One slice's claim on its CPUs: one locked slot file per CPU, released when destroyed (and by
// the kernel when the process ends, however it ends).
class CpuLease {
 public:
  CpuLease() = default;
  CpuLease(CpuLease&& o) noexcept { *this = std::move(o); }
  CpuLease& operator=(CpuLease&& o) noexcept;
  CpuLease(const CpuLease&) = delete;
  CpuLease& operator=(const CpuLease&) = delete;
  ~CpuLease();

  const std::vector<int>& cpus() const { return cpus_; }
  // How many other slices (of any process) used one of these CPUs when they were taken.
  int shared_at_take() const { return shared_at_take_; }
  // Why some of these CPUs are counted in this process only ("" when the machine's ledger holds
  // them all): another edgeprof process does not see them.
  const std::string& problem() const { return problem_; }

 private:
  friend class CpuLedger;
  std::vector<int> cpus_;
  std::vector<int> slots_;  // the slot held per CPU (kNotHeld, kCountedHere: in-process count)
  std::vector<UniqueFd> fds_;   // the locked slot files
  class CpuLedger* ledger_ = nullptr;
  pid_t owner_ = 0;  // the process that took it: a forked copy's release leaves the locks be
  int shared_at_take_ = 0;
  std::string problem_;
};


// Which host CPUs the live slices use, so that slices running at the same time (the trials of
// a hyper-parameter search, in threads of one process or in processes of their own) get CPUs of
// their own while there are enough. Machine-wide: a CPU is held through an flock(2)ed slot file
// (`cpu<N>.<k>` in the ledger's directory, holding the holder's pid), which the kernel releases
// when the holder closes it or ends, so a killed process leaves nothing held; `ledger.lock`
// serialises the scans. Where the directory cannot be used, the ledger counts this process's
// slices only and problem() says why; where one slot file cannot be opened (no fd left), that
// lease counts its CPU in this process and CpuLease::problem() says why. A release unlocks the
// slot even where a process forked meanwhile keeps a copy of its fd (a forked child does not
// hold the parent's CPUs), and removes the free slot files at the end of each CPU's list.
class CpuLedger {
 public:
  explicit CpuLedger(std::string dir);

  const std::string& dir() const { return dir_; }
  // Why the ledger is this process's only ("" when it is the machine's).
  std::string problem() {
    std::lock_guard<std::mutex> guard(lock_);
    return problem_;
  }

  // The host's CPUs, least used first (lowest number among equals).
  std::vector<int> order(const std::vector<int>& host);
  // Takes `cpus` for a slice.
  CpuLease take(const std::vector<int>& cpus);
  // Takes the `n` least used of `host` (as order() ranks them, in that order), choosing and
  // taking under one lock: slices made at the same moment get distinct CPUs.
  CpuLease take_least_used(const std::vector<int>& host, std::size_t n);
  // The slices other than `lease`'s that hold one of its CPUs now.
  std::vector<CpuHolder> others(const CpuLease& lease);

 private:
  friend class CpuLease;
  void give(CpuLease& lease) noexcept;
  // Held slots of `cpu` (their index and holder), under the ledger lock. A slot file that
  // cannot be opened is skipped (with no fd left, the rest of the list too).
  // `mine`: a slot the caller holds, not opened (a scan for others skips its own).
  std::vector<std::pair<int, pid_t>> held(int cpu, int mine = kNotHeld) const;
  // Removes the free slot files at the end of `cpu`'s list, under the ledger lock.
  void prune(int cpu) const;
  std::string slot_path(int cpu, int slot) const;
  static constexpr int kNotHeld = -1, kCountedHere = -2;
  // Locks the ledger (nothing when it cannot be used: problem_ says why, unless
  // `record_problem` is false, for a best-effort caller).
  UniqueFd lock_ledger(bool record_problem = true);
  int use(int cpu) const;
  std::vector<int> order_locked(const std::vector<int>& host) const;
  CpuLease take_locked(const std::vector<int>& cpus);

  std::string dir_;
  std::string problem_;
  std::mutex lock_;
  std::map<int, int> local_;  // in-process counts, when there is no machine ledger
};

// The process's one ledger (in ledger_dir() of the environment at its first use; never
// destroyed, so that a slice released while the process exits still finds it).
CpuLedger& cpu_ledger();

}  // namespace edgeprof::detail
