#include "sampler/thread_census.hpp"

#include <fmt/format.h>

#include "sys/parse.hpp"

namespace edgeprof::detail {

std::optional<double> threads_at_once(const CensusCounts& counts) {
  if (counts.readings == 0) return std::nullopt;
  return static_cast<double>(counts.runnable_sum) / static_cast<double>(counts.readings);
}

void ThreadCensus::read() noexcept {
  try {
    std::uint64_t runnable = 0;
    for (const std::string& list : tasks_) {
      const auto text = fs_.read(list);
      if (!text) continue;
      for (const pid_t tid : parse_pids(*text)) {
        const auto stat = fs_.read(fmt::format(files::kProcTidStat, tid));
        if (!stat) continue;  // it ended since the list was read
        if (parse_stat_state(*stat) == 'R') ++runnable;
      }
    }
    if (runnable > 0) {
      ++counts_.readings;
      counts_.runnable_sum += runnable;
    }
  } catch (...) {
    // Out of memory: this reading is lost.
  }
}

std::string census_warning(double at_once) {
  if (!(at_once >= kCensusWarnAt)) return {};
  return fmt::format(
      "projected core emulation divides the time of one thread on one device core by the "
      "board's speed-up, but about {:.1f} of the workload's threads were runnable at once "
      "(sampled): they shared the one core's quota, so the projected times come out too slow. "
      "Set the thread count the workload sets in code to 1 (torch.set_num_threads(1), ncnn's "
      "Option.num_threads, ONNX Runtime's intra_op_num_threads), or emulate all the cores "
      "(core emulation per-core or pooled)",
      at_once);
}

}  // namespace edgeprof::detail
