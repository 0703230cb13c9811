#include "run/keep_warm.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace edgeprof::detail {

namespace {

// The spin-wait hint: it tells the core (and its SMT sibling) that this is a wait, not work.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

struct Warmer {
  int cpu = -1;
  pthread_t thread{};
  clockid_t clock{};
  int users = 0;
  std::atomic<bool> stop{false};
  // Set by the thread once it is placed: 0, or the errno of what failed.
  std::mutex lock;
  std::condition_variable placed;
  bool ready = false;
  int error = 0;
  const char* failed = "";
};

void* warm(void* arg) {
  auto* w = static_cast<Warmer*>(arg);
  sched_param param{};
  int err = 0;
  const char* failed = "";
  // The thread was created pinned (pthread_attr_setaffinity_np); policy 0 is this thread.
  if (::sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
    err = errno;
    failed = "sched_setscheduler(SCHED_IDLE)";
  }
  {
    std::lock_guard<std::mutex> guard(w->lock);
    w->ready = true;
    w->error = err;
    w->failed = failed;
  }
  w->placed.notify_all();
  if (err) return nullptr;
  // The yield matters as much as the spinning. When a throttled slice's next period begins, the
  // kernel (unthrottle_cfs_rq) reschedules the CPU only if it is running its idle task; with
  // this thread running instead, the workload would wait for the next scheduler tick (4 ms at
  // HZ=250) and lose that part of its quota's period: +51% wall time at speed 0.9 here.
  // sched_yield() enters the scheduler every few microseconds, which then picks the workload.
  while (!w->stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 64; ++i) cpu_relax();
    ::sched_yield();
  }
  return nullptr;
}

// The process's keep-warm threads, by CPU. A forked child (Python's multiprocessing) inherits
// the map but not the threads: the map belongs to the pid that made it, and a child starts anew.
class Registry {
 public:
  // Holds CPU `cpu`'s thread, starting it when it has none. Returns its CPU clock, or an error.
  std::optional<clockid_t> hold(int cpu, std::string& error) {
    std::lock_guard<std::mutex> guard(lock_);
    adopt();
    auto& slot = warmers_[cpu];
    if (slot && slot->users > 0) {
      ++slot->users;
      return slot->clock;
    }
    auto w = std::make_unique<Warmer>();
    w->cpu = cpu;
    if (const int err = start(*w); err) {
      error = fmt::format("CPU {} is not kept warm: {} failed: {} (errno {})", cpu,
                          w->failed, std::strerror(err), err);
      warmers_.erase(cpu);
      return std::nullopt;
    }
    w->users = 1;
    slot = std::move(w);
    return slot->clock;
  }

  void release(int cpu) {
    std::unique_ptr<Warmer> done;
    {
      std::lock_guard<std::mutex> guard(lock_);
      adopt();
      auto it = warmers_.find(cpu);
      if (it == warmers_.end() || --it->second->users > 0) return;
      done = std::move(it->second);
      warmers_.erase(it);
    }
    done->stop.store(true, std::memory_order_relaxed);
    ::pthread_join(done->thread, nullptr);
  }

  int count() {
    std::lock_guard<std::mutex> guard(lock_);
    adopt();
    return static_cast<int>(warmers_.size());
  }

 private:
  // In a forked child, forgets the parent's threads (they do not exist here; their Warmers
  // are leaked, since a thread that never ran cannot be joined).
  void adopt() {
    const pid_t self = ::getpid();
    if (owner_ == self) return;
    for (auto& [cpu, w] : warmers_) (void)w.release();
    warmers_.clear();
    owner_ = self;
  }

  // Starts w's thread pinned to w.cpu with every signal blocked (signals are for the threads
  // that handle them: Ctrl-C in Python), and waits until it has taken SCHED_IDLE.
  static int start(Warmer& w) {
    pthread_attr_t attr;
    if (int err = ::pthread_attr_init(&attr)) {
      w.failed = "pthread_attr_init";
      return err;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w.cpu, &set);
    int err = ::pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    // A small stack: the loop needs next to none.
    if (!err) err = ::pthread_attr_setstacksize(&attr, 64 * 1024);
    if (err) {
      ::pthread_attr_destroy(&attr);
      w.failed = "pthread_attr_setaffinity_np";
      return err;
    }
    sigset_t all, old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    err = ::pthread_create(&w.thread, &attr, warm, &w);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::pthread_attr_destroy(&attr);
    if (err) {
      // EINVAL here: the CPU is not one this process may run on.
      w.failed = "pthread_create (pinned)";
      return err;
    }
    {
      std::unique_lock<std::mutex> guard(w.lock);
      w.placed.wait(guard, [&] { return w.ready; });
    }
    if (w.error || (err = ::pthread_getcpuclockid(w.thread, &w.clock)) != 0) {
      const int failure = w.error ? w.error : err;
      if (!w.error) w.failed = "pthread_getcpuclockid";
      w.stop.store(true);
      ::pthread_join(w.thread, nullptr);
      return failure;
    }
    return 0;
  }

  std::mutex lock_;
  pid_t owner_ = 0;
  std::map<int, std::unique_ptr<Warmer>> warmers_;
};

Registry& registry() {
  // Never destroyed: leases of static objects may outlive it at exit.
  static Registry* r = new Registry;
  return *r;
}

double clock_seconds(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return 0;
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

}  // namespace

WarmLease::WarmLease(const std::vector<int>& cpus) {
  for (int cpu : cpus) {
    std::string error;
    if (auto clock = registry().hold(cpu, error)) {
      cpus_.push_back(cpu);
      clocks_.push_back(*clock);
      start_s_.push_back(clock_seconds(*clock));
    } else if (error_.empty()) {
      error_ = std::move(error);
    }
  }
}

WarmLease::WarmLease(WarmLease&& other) noexcept
    : cpus_(std::move(other.cpus_)),
      clocks_(std::move(other.clocks_)),
      start_s_(std::move(other.start_s_)),
      error_(std::move(other.error_)) {
  other.cpus_.clear();
}

WarmLease& WarmLease::operator=(WarmLease&& other) noexcept {
  if (this != &other) {
    release();
    cpus_ = std::move(other.cpus_);
    clocks_ = std::move(other.clocks_);
    start_s_ = std::move(other.start_s_);
    error_ = std::move(other.error_);
    other.cpus_.clear();
  }
  return *this;
}

void WarmLease::release() noexcept {
  for (int cpu : cpus_) registry().release(cpu);
  cpus_.clear();
  clocks_.clear();
  start_s_.clear();
}

double WarmLease::cpu_seconds() const {
  double total = 0;
  for (std::size_t i = 0; i < clocks_.size(); ++i) {
    total += std::max(0.0, clock_seconds(clocks_[i]) - start_s_[i]);
  }
  return total;
}

int warm_threads() { return registry().count(); }

}  // namespace edgeprof::detail
