#include "run/core_placer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <set>

#include "edgeprof/error.hpp"
#include "sys/parse.hpp"
#include "sys/thread.hpp"

namespace edgeprof::detail {

std::vector<std::pair<pid_t, int>> plan_moves(const std::vector<PlacedThread>& threads,
                                              int cores) {
  std::vector<std::pair<pid_t, int>> moves;
  if (cores <= 0) return moves;
  std::vector<int> count(static_cast<size_t>(cores), 0), busy(static_cast<size_t>(cores), 0);
  auto valid = [cores](int core) { return core >= 0 && core < cores; };
  for (const PlacedThread& t : threads) {
    if (t.fresh || !valid(t.core)) continue;
    ++count[static_cast<size_t>(t.core)];
    if (t.busy) ++busy[static_cast<size_t>(t.core)];
  }
  std::vector<const PlacedThread*> fresh;
  for (const PlacedThread& t : threads) {
    if (t.fresh || !valid(t.core)) fresh.push_back(&t);
  }
  std::sort(fresh.begin(), fresh.end(),
            [](const PlacedThread* a, const PlacedThread* b) { return a->tid < b->tid; });
  for (const PlacedThread* t : fresh) {
    int best = 0;
    for (int c = 1; c < cores; ++c) {
      const auto i = static_cast<size_t>(c), b = static_cast<size_t>(best);
      if (std::make_pair(busy[i], count[i]) < std::make_pair(busy[b], count[b])) best = c;
    }
    ++count[static_cast<size_t>(best)];
    if (best != t->core) moves.emplace_back(t->tid, best);
  }
  // Busy threads, from the most crowded group to the least, while that evens them out.
  std::vector<std::vector<pid_t>> busy_tids(static_cast<size_t>(cores));
  for (const PlacedThread& t : threads) {
    if (!t.fresh && t.busy && valid(t.core)) busy_tids[static_cast<size_t>(t.core)].push_back(t.tid);
  }
  for (auto& tids : busy_tids) std::sort(tids.begin(), tids.end());
  for (;;) {
    const auto most = std::max_element(busy.begin(), busy.end()) - busy.begin();
    const auto least = std::min_element(busy.begin(), busy.end()) - busy.begin();
    if (busy[static_cast<size_t>(most)] - busy[static_cast<size_t>(least)] < 2) break;
    // The newest busy thread of the crowded group moves (the oldest keeps its warm cache).
    const pid_t tid = busy_tids[static_cast<size_t>(most)].back();
    busy_tids[static_cast<size_t>(most)].pop_back();
    busy_tids[static_cast<size_t>(least)].push_back(tid);
    --busy[static_cast<size_t>(most)];
    ++busy[static_cast<size_t>(least)];
    --count[static_cast<size_t>(most)];
    ++count[static_cast<size_t>(least)];
    moves.emplace_back(tid, static_cast<int>(least));
  }
  return moves;
}

CorePlacer::CorePlacer(const Fs& fs, std::vector<std::string> tasks, double core_share,
                       std::vector<std::uint64_t> quota_by_busy, SetCoreQuota set_quota)
    : fs_(fs),
      tasks_(std::move(tasks)),
      core_share_(core_share),
      quota_by_busy_(std::move(quota_by_busy)),
      set_quota_(std::move(set_quota)) {
  if (!set_quota_) quota_by_busy_.clear();
  if (!quota_by_busy_.empty()) quota_now_ = quota_by_busy_.front();
  for (const std::string& path : tasks_) {
    const std::string real = fs_.resolve(path);
    UniqueFd fd(::open(real.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0) throw_sys_error(errno, "cannot open a core group's task list", real);
    write_fds_.push_back(std::move(fd));
  }
  last_load_ = std::chrono::steady_clock::now();
  thread_ = start_thread("the thread that places the workload's threads on cores", [this] { run(); });
}

CorePlacer::~CorePlacer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The next workload starts at one busy core's quota.
  if (!quota_by_busy_.empty() && quota_now_ != quota_by_busy_.front()) {
    set_quota_(quota_by_busy_.front());
  }
}

std::string CorePlacer::error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void CorePlacer::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (int n = 1;; ++n) {
    if (wake_.wait_for(lock, kPlacerRound, [this] { return stopping_; })) return;
    lock.unlock();
    round(n % kLoadRounds == 0);
    lock.lock();
  }
}

void CorePlacer::round(bool measure_load) {
  const auto now = std::chrono::steady_clock::now();
  const double window_ns = std::chrono::duration<double, std::nano>(now - last_load_).count();
  std::vector<PlacedThread> threads;
  std::set<pid_t> alive;
  for (size_t core = 0; core < tasks_.size(); ++core) {
    const auto text = fs_.read(tasks_[core]);
    if (!text) continue;
    for (pid_t tid : parse_pids(*text)) {
      alive.insert(tid);
      auto [it, added] = known_.try_emplace(tid);
      Known& k = it->second;
      k.core = static_cast<int>(core);
      PlacedThread t;
      t.tid = tid;
      t.core = k.core;
      t.fresh = added;
      if (measure_load) {
        // The thread's CPU time so far (schedstat's first field, ns).
        const auto stat = fs_.read(fmt::format(files::kProcTidSchedstat, tid));
        const auto words = split_words(stat.value_or(""));
        const auto cpu = words.empty() ? std::nullopt : parse_u64(words[0]);
        if (cpu) {
          k.busy = k.measured && window_ns > 0 &&
                   static_cast<double>(*cpu - std::min(*cpu, k.cpu_ns)) >=
                       kBusyShare * core_share_ * window_ns;
          k.cpu_ns = *cpu;
          k.measured = true;
        }
      }
      t.busy = k.busy;
      threads.push_back(t);
    }
  }
  if (measure_load) {
    last_load_ = now;
    // Per-core scaling: the quota for as many busy threads as there are (idle: unchanged).
    std::size_t busy = 0;
    for (const PlacedThread& t : threads) busy += t.busy ? 1 : 0;
    if (busy > 0 && !quota_by_busy_.empty()) {
      const std::uint64_t quota = quota_by_busy_[std::min(busy, quota_by_busy_.size()) - 1];
      if (quota != quota_now_) {
        if (int err = set_quota_(quota)) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (error_.empty()) {
            error_ = fmt::format("per-core scaling: could not set the core groups' quota to {} "
                                 "us ({}, errno {})",
                                 quota, std::strerror(err), err);
          }
        } else {
          quota_now_ = quota;
          ++quota_changes_;
        }
      }
    }
  }
  for (auto it = known_.begin(); it != known_.end();) {
    it = alive.count(it->first) ? std::next(it) : known_.erase(it);
  }
  for (const auto& [tid, core] : plan_moves(threads, static_cast<int>(tasks_.size()))) {
    const std::string text = std::to_string(tid);
    const int fd = write_fds_[static_cast<size_t>(core)].get();
    if (::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size())) {
      known_[tid].core = core;
      ++moves_;
    } else if (errno != ESRCH) {
      const int err = errno;
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_.empty()) continue;
      error_ = fmt::format(
          "per-core emulation: could not move thread {} to core group {} ({}, errno {}); it "
          "shared another core",
          tid, core, std::strerror(err), err);
    }
  }
}

}  // namespace edgeprof::detail
