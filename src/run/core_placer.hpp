// Per-core emulation (CoreEmulation::per_core): a device's cores are child cgroups of one core's
// quota each, and a thread of this process places the workload's threads in them. A new thread
// is born in its creator's group (the kernel's rule), so until it is placed it shares its
// creator's core: it is never faster than a device core, only slower for at most one round.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sys/fs.hpp"

namespace edgeprof::detail {

// How often the placer looks for new threads; every kLoadRounds-th round it also reads each
// thread's CPU time and spreads the busy ones.
inline constexpr std::chrono::milliseconds kPlacerRound{10};
inline constexpr int kLoadRounds = 5;
// A thread is busy when it used at least this share of a device core over a load window.
inline constexpr double kBusyShare = 0.25;

// One thread of the workload as a round of the placer sees it.
struct PlacedThread {
  pid_t tid = 0;
  int core = 0;        // the core group it is in now
  bool fresh = false;  // first seen in this round: its load is not known yet
  bool busy = false;   // used at least kBusyShare of a device core in the last load window
};

// Where to move threads (tid, core): fresh threads, in tid order, to the group with the fewest
// busy threads, then the fewest threads (lowest index on a tie), so that a pool started at once
// spreads at once; then busy threads from the group with the most to the group with the fewest
// while they differ by two or more (so that busy threads have cores of their own while there
// are enough, as a scheduler's load balancing would give them). Idle threads stay put: they
// cost a core nothing. Pure; `cores` > 0.
std::vector<std::pair<pid_t, int>> plan_moves(const std::vector<PlacedThread>& threads,
                                              int cores);

// One per slice while it has workloads running: concurrent workloads of a slice share its core
// groups, and one placer sees all their threads.
class CorePlacer {
 public:
  // Sets every core group's quota (per-core scaling); returns 0 or an errno.
  using SetCoreQuota = std::function<int(std::uint64_t quota_us)>;

  // `tasks` are the core groups' task lists (v1 `tasks`, v2 `cgroup.threads`; paths under
  // `fs`), in core order; `core_share` is one core's quota over the period. With
  // `quota_by_busy` (EmulationPlan::core_quota_by_busy), each load round sets the groups' quota
  // for the number of busy threads through `set_quota`, and the destructor puts back the first.
  // Opens the task lists for writing (throws Error naming the file when it cannot) and starts
  // the thread.
  CorePlacer(const Fs& fs, std::vector<std::string> tasks, double core_share,
             std::vector<std::uint64_t> quota_by_busy = {}, SetCoreQuota set_quota = {});
  CorePlacer(const CorePlacer&) = delete;
  CorePlacer& operator=(const CorePlacer&) = delete;
  ~CorePlacer();  // stops and joins the thread

  // Threads moved to another core's group so far (any thread may ask).
  std::uint64_t moves() const { return moves_.load(); }
  // Times per-core scaling changed the groups' quota so far.
  std::uint64_t quota_changes() const { return quota_changes_.load(); }
  // The first move that failed for another reason than the thread's exit; "" when none.
  std::string error();

 private:
  void run();
  void round(bool measure_load);  // one round, on the thread

  Fs fs_;
  std::vector<std::string> tasks_;
  std::vector<UniqueFd> write_fds_;  // each group's task list, open for writing
  double core_share_;
  struct Known {
    int core = 0;
    std::uint64_t cpu_ns = 0;
    bool measured = false;
    bool busy = false;  // as of the last load window
  };
  std::map<pid_t, Known> known_;
  std::chrono::steady_clock::time_point last_load_;
  std::mutex mutex_;  // guards stopping_ and error_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> moves_{0};
  std::vector<std::uint64_t> quota_by_busy_;
  SetCoreQuota set_quota_;
  std::uint64_t quota_now_ = 0;  // the quota the groups hold (per-core scaling)
  std::atomic<std::uint64_t> quota_changes_{0};
  std::string error_;
  std::thread thread_;
};

}  // namespace edgeprof::detail
