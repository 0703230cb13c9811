#include "sampler/sampler.hpp"

#include <cmath>

#include <fmt/format.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "edgeprof/error.hpp"
#include "sys/thread.hpp"

namespace edgeprof::detail {

namespace {
std::atomic<unsigned> forks{0};
}  // namespace

unsigned fork_count() {
  static const bool registered =
      ::pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); }) ==
      0;
  (void)registered;
  return forks.load(std::memory_order_relaxed);
}

namespace {

// What woke the thread (epoll_event.data.u32).
enum Wake : std::uint32_t { kQuit, kTimer, kMarks };

[[noreturn]] void fail(const char* what) {
  const int err = errno;
  throw Error(fmt::format("cannot {} for the sampler: {} (errno {})", what, std::strerror(err),
                          err),
              err);
}

UniqueFd make_fd(int fd, const char* what) {
  if (fd < 0) fail(what);
  return UniqueFd(fd);
}

void watch(int epoll, int fd, Wake wake) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = wake;
  if (::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) != 0) fail("watch a file descriptor");
}

}  // namespace

void check_sample_interval(std::chrono::nanoseconds interval) {
  if (interval < kMinSampleInterval || interval > kMaxSampleInterval) {
    throw Error(fmt::format("sampling interval {} ms is out of range: edgeprof samples every "
                            "1 ms to 60 s (0: no sampling)",
                            std::chrono::duration<double, std::milli>(interval).count()));
  }
}

namespace {

// Slow sources every kSlowSourceNs: every n-th tick at this interval (at least every tick).
std::uint32_t slow_every(std::chrono::nanoseconds interval) {
  const double n = double(Sources::kSlowSourceNs) / double(interval.count());
  return static_cast<std::uint32_t>(std::max(1.0, std::round(n)));
}

}  // namespace

Sampler::Sampler(Sources sources, std::chrono::nanoseconds interval)
    : sources_(std::move(sources)), interval_(interval), forks_(fork_count()) {
  check_sample_interval(interval);
  sources_.set_slow_every(slow_every(interval), interval.count());
  timer_fd_ = make_fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK),
                      "create a timerfd");
  quit_fd_ = make_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), "create an eventfd");
  epoll_fd_ = make_fd(::epoll_create1(EPOLL_CLOEXEC), "create an epoll instance");
  watch(epoll_fd_.get(), quit_fd_.get(), kQuit);
  watch(epoll_fd_.get(), timer_fd_.get(), kTimer);
}

Sampler::~Sampler() {
  if (!thread_) return;
  if (forks_ != fork_count()) {
    // A forked child: the thread stayed in the parent, and joining its copy would never return.
    (void)thread_.release();
    return;
  }
  const std::uint64_t one = 1;
  ssize_t ignored = ::write(quit_fd_.get(), &one, sizeof one);
  (void)ignored;
  thread_->join();
}

void Sampler::set_interval(std::chrono::nanoseconds interval) {
  check_sample_interval(interval);
  interval_ = interval;
  sources_.set_slow_every(slow_every(interval), interval.count());
}

bool Sampler::reusable() const { return sources_.reusable() && forks_ == fork_count(); }

// steady_clock is CLOCK_MONOTONIC on Linux, the timerfd's clock.
void Sampler::arm(Clock::time_point first, std::chrono::nanoseconds every) const {
  auto to_timespec = [](std::chrono::nanoseconds ns) {
    return timespec{static_cast<time_t>(ns.count() / 1000000000),
                    static_cast<long>(ns.count() % 1000000000)};
  };
  itimerspec spec{};
  spec.it_value = to_timespec(first.time_since_epoch());
  spec.it_interval = to_timespec(every);
  if (::timerfd_settime(timer_fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    fail("arm the timer");
  }
}

Sampler::Clock::time_point Sampler::start() {
  std::lock_guard<std::mutex> guard(lock_);
  if (running_) throw Error("the sampler is already running a workload");
  if (thread_ && exited_) {  // it ended after an idle while: a new one
    thread_->join();
    thread_.reset();
    exited_ = false;
  }
  if (!thread_) {
    thread_ = std::make_unique<std::thread>(
        start_thread("the sampler's thread", [this] { run(); }));
  }
  missed_ = 0;
  marks_.clear();
  marks_told_ = 0;
  columns_ = Columns{};
  // Room for a short run; the columns double beyond. (Reserving minutes' worth cost a short
  // workload about 1.4 MB of allocation, and the page faults, per spawn.)
  columns_.reserve(kInitialSamples);
  sources_.rewind();
  if (runtimes_) runtimes_->reset();
  runtime_scans_ = 0;
  // Time zero is the first sample, and the deadlines follow it: a sample's lateness is then
  // its time modulo the interval (summarize), not offset by how long this start took.
  origin_ = Clock::now();
  sample(true, origin_);
  if (census_) {
    census_->reset();
    census_->read();
    census_at_ = Clock::now();
  }
  first_read_ = columns_.size() == 1 ? columns_.complete : std::bitset<kMetricCount>();
  if (marks_fd_ >= 0) watch(epoll_fd_.get(), marks_fd_, kMarks);
  try {
    arm(origin_ + interval_, interval_);
  } catch (...) {
    if (marks_fd_ >= 0) ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, marks_fd_, nullptr);
    throw;
  }
  running_ = true;
  return origin_;
}

void Sampler::stop() {
  std::lock_guard<std::mutex> guard(lock_);
  if (!running_) return;
  running_ = false;
  // One expiry after an idle while, at which the thread ends unless a run started since.
  try {
    arm(Clock::now() + kSamplerIdleExit, std::chrono::nanoseconds(0));
  } catch (const Error&) {
    // Cannot happen with a valid timerfd. The thread then sleeps until the destructor.
  }
  if (marks_fd_ >= 0) {
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, marks_fd_, nullptr);
    drain_marks();
    tell_marks();  // a count that came as the workload ended sets the slice's speed too
    marks_fd_ = -1;
  }
  sample(false);  // the final counters, after the workload was reaped
}

void Sampler::scan_runtimes() {
  std::lock_guard<std::mutex> guard(lock_);
  if (runtimes_) runtimes_->scan();
}

std::optional<double> Sampler::threads_at_once() {
  std::lock_guard<std::mutex> guard(lock_);
  return census_ ? census_->threads_at_once() : std::nullopt;
}

RuntimesSeen Sampler::runtimes_seen() {
  std::lock_guard<std::mutex> guard(lock_);
  return runtimes_ ? runtimes_->seen() : RuntimesSeen{};
}

RuntimesSeen Sampler::runtime_paths() {
  std::lock_guard<std::mutex> guard(lock_);
  return runtimes_ ? runtimes_->paths() : RuntimesSeen{};
}

void Sampler::sample(bool scheduled, std::optional<Clock::time_point> at) noexcept {
  try {
    auto since_origin = [this](Clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
    };
    if (at) {
      // The first sample, before the child is released: nothing in the slice runs yet.
      sources_.tick(since_origin(*at), columns_, scheduled);
    } else {
      sources_.tick_stamped([&] { return since_origin(Clock::now()); }, columns_, scheduled);
    }
  } catch (...) {
    // Only growing the columns can throw (out of memory): the run goes on without samples.
  }
}

void Sampler::tell_marks() noexcept {
  if (!on_marks_) return;
  const std::size_t end = marks_.rfind('\n');
  if (end != std::string::npos && end + 1 > marks_told_) {
    const std::string_view lines(marks_.data() + marks_told_, end + 1 - marks_told_);
    marks_told_ = end + 1;
    on_marks_(lines);
  }
}

bool Sampler::drain_marks() noexcept {
  bool arrived = false;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(marks_fd_, buffer, sizeof buffer);
    if (n > 0) {
      arrived = true;
      try {
        marks_.append(buffer, static_cast<size_t>(n));
      } catch (...) {
        return arrived;  // out of memory: marks are lost, sampling goes on
      }
      continue;
    }
    // 0: every writer closed it; EAGAIN: nothing more for now. (The profiler keeps a write end
    // of a slice's pipe, so the workload's exit is no end of file, and no phase boundary.)
    if (n < 0 && errno == EINTR) continue;
    return arrived;
  }
}

void Sampler::run() noexcept {
  epoll_event events[3];
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_.get(), events, 3, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // only a closed epoll fd could do this, and the destructor joins first
    }
    bool tick = false, marked = false;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u32 == kQuit) return;
      tick |= events[i].data.u32 == kTimer;
      marked |= events[i].data.u32 == kMarks;
    }
    std::lock_guard<std::mutex> guard(lock_);
    std::uint64_t expirations = 0;
    if (tick && ::read(timer_fd_.get(), &expirations, sizeof expirations) != sizeof expirations) {
      expirations = 0;  // re-armed since it woke us (EAGAIN): a stale event
    }
    if (!running_) {
      // Between runs only the idle timer is armed and no marks are watched: its expiry ends
      // the thread. (Any other event raced with stop() or start() and is stale.)
      if (expirations > 0) {
        exited_ = true;
        return;
      }
      continue;
    }
    if (expirations > 0) {
      missed_ += expirations - 1;  // deadlines passed while the machine was too busy
      sample();
      // The maps are read seldom (a line per library area and thread stack: long for a
      // PyTorch process), after a sample, so that the sample's stamp is not delayed.
      if (runtimes_) {
        const auto elapsed = Clock::now() - origin_;
        if (elapsed >= runtime_scan_at(runtime_scans_)) {
          const std::size_t known = runtimes_->seen().size();
          runtimes_->scan();
          if (on_new_runtime_ && runtimes_->seen().size() > known) {
            on_new_runtime_(runtimes_->seen());
          }
          // A late read (a busy machine, a long interval) stands for the times that passed.
          while (runtime_scan_at(runtime_scans_) <= elapsed) ++runtime_scans_;
        }
      }
      // The threads' states about every Sources::kSlowSourceNs (at every tick when the
      // interval is longer), by the readings' times.
      if (census_) {
        const auto now = Clock::now();
        if (now - census_at_ >=
            std::chrono::nanoseconds(Sources::kSlowSourceNs) - interval_ / 2) {
          census_->read();
          census_at_ = now;
        }
      }
    }
    if (marked && drain_marks()) {
      sample(false);  // a phase boundary: sample it now
      tell_marks();
    }
  }
}

}  // namespace edgeprof::detail
