// The CPU ledger of the run layer: which host CPUs the live slices of this process use.
#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

namespace edgeprof::detail {

// Which host CPUs the live slices of this process use, so that slices running at the same time
// (concurrent trials of a hyper-parameter search) get CPUs of their own while there are enough.
class CpuLedger {
 public:
  // The host's CPUs, least used first (lowest number among equals).
  std::vector<int> order(const std::vector<int>& host) {
    std::lock_guard<std::mutex> guard(lock_);
    std::vector<int> out = host;
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return use(a) < use(b); });
    return out;
  }
  // Records the CPUs of a new slice; returns how many other slices already use one of them.
  int take(const std::vector<int>& cpus) {
    std::lock_guard<std::mutex> guard(lock_);
    int shared = 0;
    for (int c : cpus) shared = std::max(shared, use(c));
    for (int c : cpus) ++use_[c];
    return shared;
  }
  void give(const std::vector<int>& cpus) {
    std::lock_guard<std::mutex> guard(lock_);
    for (int c : cpus) --use_[c];
  }

 private:
  int use(int cpu) const {
    auto it = use_.find(cpu);
    return it == use_.end() ? 0 : it->second;
  }
  std::mutex lock_;
  std::map<int, int> use_;
};

// The process's one ledger.
CpuLedger& cpu_ledger();

}  // namespace edgeprof::detail
