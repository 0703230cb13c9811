#include "sampler/thread_census.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "parse.hpp"

namespace edgeprof::detail {

CensusWindow census_window(const ThreadTimes& before, const ThreadTimes& after) {
  CensusWindow w;
  for (const auto& [tid, now] : after) {
    const auto then = before.find(tid);
    if (then == before.end()) continue;
    // A thread id reused by a new thread between the readings counts from zero.
    const std::uint64_t used = now >= then->second ? now - then->second : 0;
    w.total_ns += used;
    w.busiest_ns = std::max(w.busiest_ns, used);
    w.square_sum += static_cast<double>(used) * static_cast<double>(used);
  }
  return w;
}

std::optional<double> threads_at_once(const std::vector<CensusWindow>& windows) {
  double weighted = 0, total = 0;
  for (const CensusWindow& w : windows) {
    if (w.total_ns == 0) continue;
    weighted += static_cast<double>(w.total_ns) * w.threads();
    total += static_cast<double>(w.total_ns);
  }
  if (total <= 0) return std::nullopt;
  return weighted / total;
}

void ThreadCensus::read() noexcept {
  try {
    ThreadTimes now;
    for (const std::string& list : tasks_) {
      const auto text = fs_.read(list);
      if (!text) continue;
      for (const pid_t tid : parse_pids(*text)) {
        const auto stat = fs_.read(fmt::format(files::kProcTidSchedstat, tid));
        if (!stat) continue;  // it ended since the list was read
        const auto words = split_words(*stat);
        const auto cpu = words.empty() ? std::nullopt : parse_u64(words[0]);
        if (cpu) now.emplace(tid, *cpu);
      }
    }
    if (read_once_) {
      const CensusWindow w = census_window(last_, now);
      if (w.total_ns > 0) windows_.push_back(w);
    }
    last_ = std::move(now);
    read_once_ = true;
  } catch (...) {
    // Out of memory: this reading is lost, the next one starts a new window.
  }
}

std::string census_warning(double at_once) {
  if (!(at_once >= kCensusWarnAt)) return {};
  return fmt::format(
      "projected core emulation divides the time of one thread on one device core by the "
      "board's speed-up, but about {:.1f} of the workload's threads ran at once (sampled: the "
      "effective number sharing its CPU time): they shared the one core's quota, so the projected "
      "times come out too slow. Set the thread count the workload sets in code to 1 "
      "(torch.set_num_threads(1), ncnn's Option.num_threads, ONNX Runtime's "
      "intra_op_num_threads), or emulate all the cores (core emulation per-core or "
      "pooled)",
      at_once);
}

}  // namespace edgeprof::detail
