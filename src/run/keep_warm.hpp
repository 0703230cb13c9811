// Keep-warm: while a throttled slice waits for its next CFS period, its CPUs would go idle, and
// an idle CPU that halts (a virtual CPU exits to its hypervisor; a physical one enters a C-state
// or lowers its clock) resumes slowly and cold: the workload then does less work per CPU-second
// of quota than it does unthrottled, and runs slower than the device (docs/keep-warm.md has the
// measurements). One thread per CPU, of this process and so outside the slice, at SCHED_IDLE
// (it runs only when nothing else on that CPU wants to) and pinned to the CPU, keeps it busy.
//
// Threads of this process end with it, whatever kills it: a killed profiler leaves none behind.
// Concurrent slices of this process that share a CPU share its thread.
#pragma once

#include <time.h>

#include <string>
#include <vector>

namespace edgeprof::detail {

// A hold on the keep-warm threads of some CPUs: the first hold on a CPU starts its thread, the
// last one released stops and joins it. Move-only; an empty lease holds nothing.
class WarmLease {
 public:
  WarmLease() = default;
  // Starts (or shares) a thread on each CPU. Never throws for a thread that cannot be started
  // or placed (a CPU this process may not use): that CPU is left out and error() says why.
  explicit WarmLease(const std::vector<int>& cpus);
  WarmLease(WarmLease&& other) noexcept;
  WarmLease& operator=(WarmLease&& other) noexcept;
  WarmLease(const WarmLease&) = delete;
  WarmLease& operator=(const WarmLease&) = delete;
  ~WarmLease() { release(); }

  // Lets go of the threads (the last hold on a CPU stops its thread). Idempotent.
  void release() noexcept;
  // The CPUs whose threads this lease holds.
  const std::vector<int>& cpus() const { return cpus_; }
  // CPU time the held threads used since this lease began, in seconds (their own thread
  // clocks; a thread shared with another lease counts in both). 0 for an empty lease.
  double cpu_seconds() const;
  // Why some CPU has no thread; "" when every one asked for has one.
  const std::string& error() const { return error_; }

 private:
  std::vector<int> cpus_;
  std::vector<clockid_t> clocks_;  // each thread's CPU clock
  std::vector<double> start_s_;  // each thread's CPU time when the lease began
  std::string error_;
};

// How many keep-warm threads this process runs now (for tests and leak checks).
int warm_threads();

}  // namespace edgeprof::detail
