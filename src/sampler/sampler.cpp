#include "sampler/sampler.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "edgeprof/error.hpp"

namespace edgeprof::detail {

void check_sample_interval(std::chrono::nanoseconds interval) {
  if (interval < kMinSampleInterval || interval > kMaxSampleInterval) {
    throw Error(fmt::format("sampling interval {} ms is out of range: edgeprof samples every "
                            "1 ms to 60 s",
                            std::chrono::duration<double, std::milli>(interval).count()));
  }
}

Sampler::Sampler(Sources sources, std::chrono::nanoseconds interval)
    : sources_(std::move(sources)), interval_(interval) {
  check_sample_interval(interval);
  stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (stop_fd_.get() < 0) {
    throw Error(fmt::format("cannot create the sampler's eventfd: {} (errno {})",
                            std::strerror(errno), errno),
                errno);
  }
  // Room for a short run; the columns double beyond. (Reserving minutes' worth cost a short
  // workload about 1.4 MB of allocation, and the page faults, per spawn.)
  columns_.reserve(kInitialSamples);
}

Sampler::~Sampler() { stop(); }

void Sampler::start(Clock::time_point origin) {
  origin_ = origin;
  // The first sample in the caller, so it is taken before the workload is released however
  // late the thread gets going (starting a thread under software emulation takes milliseconds).
  sample();
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  ssize_t ignored = ::write(stop_fd_.get(), &one, sizeof one);
  (void)ignored;
  thread_.join();
}

void Sampler::sample(bool scheduled) noexcept {
  try {
    const auto now = Clock::now();
    sources_.tick(std::chrono::duration_cast<std::chrono::nanoseconds>(now - origin_).count(),
                  columns_, scheduled);
  } catch (...) {
    // Only growing the columns can throw (out of memory): the run goes on without samples.
  }
}

Sampler::Drained Sampler::drain_marks() noexcept {
  Drained d;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(marks_fd_, buffer, sizeof buffer);
    if (n > 0) {
      d.marks = true;
      try {
        marks_.append(buffer, static_cast<size_t>(n));
      } catch (...) {
        return d;  // out of memory: marks are lost, sampling goes on
      }
      continue;
    }
    if (n == 0) {  // every writer closed it
      d.open = false;
      return d;
    }
    if (errno == EINTR) continue;
    d.open = errno == EAGAIN;  // nothing more for now
    return d;
  }
}

void Sampler::run() {
  pollfd fds[2] = {{stop_fd_.get(), POLLIN, 0}, {marks_fd_, POLLIN, 0}};
  nfds_t count = marks_fd_ >= 0 ? 2 : 1;
  // The first sample was taken by start(); the schedule counts from the origin.
  auto deadline = origin_;
  for (bool first = true;; first = false) {
    if (!first) sample();
    deadline += interval_;
    auto now = Clock::now();
    if (deadline <= now) {
      // Too busy to keep up: skip the deadlines already passed rather than bunch samples.
      const auto behind = (now - deadline) / interval_ + 1;
      missed_ += static_cast<std::uint64_t>(behind);
      deadline += behind * interval_;
    }
    bool stopping = false;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
      if (left.count() <= 0) break;
      const timespec ts{static_cast<time_t>(left.count() / 1000000000),
                        static_cast<long>(left.count() % 1000000000)};
      const int rc = ::ppoll(fds, count, &ts, nullptr);
      if (rc > 0 && fds[0].revents) {
        stopping = true;
        break;
      }
      if (rc > 0 && count == 2 && fds[1].revents) {
        const Drained d = drain_marks();
        if (!d.open) count = 1;   // the pipe's writers are gone (the workload exited)
        if (d.marks) sample(false);  // a phase boundary: sample it now
      }
      now = Clock::now();
    }
    if (stopping) break;
  }
  if (marks_fd_ >= 0) drain_marks();
  sample(false);  // the final counters, after the workload was reaped
}

}  // namespace edgeprof::detail
