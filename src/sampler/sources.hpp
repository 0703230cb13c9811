// The sampler's sources and its tick: a plain function of (sources, now) that tests call
// directly on fake trees. The timer thread that schedules it comes on top (issue 3).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fs.hpp"

namespace edgeprof::detail {

// Every figure the sampler records. Counters are cumulative (the report takes differences).
enum class Metric : int {
  cpu_usage_ns,
  cpu_user_ns,
  cpu_system_ns,
  cpu_periods,
  cpu_throttled_periods,
  cpu_throttled_ns,
  memory_current,
  memory_peak,
  memory_anon,
  memory_file,
  memory_swap,
  memory_major_faults,
  memory_oom_kills,
  io_read_bytes,
  io_write_bytes,
  io_read_ops,
  io_write_ops,
  pressure_cpu_some_us,
  pressure_memory_some_us,
  pressure_memory_full_us,
  pressure_io_some_us,
  pressure_io_full_us,
  tasks,
};
inline constexpr int kMetricCount = static_cast<int>(Metric::tasks) + 1;
const char* metric_name(Metric m);

// Samples in columns: one time column and one column per metric, preallocated and grown
// geometrically (std::vector) when a run outlasts the reservation.
struct Columns {
  std::vector<std::int64_t> t_ns;  // when the sample was actually taken (monotonic)
  std::array<std::vector<std::uint64_t>, kMetricCount> values;
  // Whether each metric was recorded in every row so far. A metric that went missing mid-run
  // keeps its rows (filled with the last good value) but is marked here, never a silent zero.
  std::bitset<kMetricCount> complete;

  void reserve(size_t rows);
  size_t rows() const { return t_ns.size(); }
};

// What a parser writes: values (indexed by Metric) and which of them it found.
struct Reading {
  std::uint64_t* values;
  std::bitset<kMetricCount> present;
  void set(Metric m, std::uint64_t v) {
    values[static_cast<int>(m)] = v;
    present.set(static_cast<size_t>(m));
  }
};

// One stat file (or two, for v1's CPU time and I/O) and the metrics it may feed.
struct Source {
  std::string name;        // e.g. "cpu.stat"
  bool host_wide = false;  // /proc/pressure/* on v1: the whole host, not the slice
  std::vector<StatFile> files;
  std::vector<Metric> metrics;
  // Parses the files' texts; false when the source is unusable (it is then disabled).
  bool (*parse)(const std::string_view* texts, Reading& reading) = nullptr;
  bool failed = false;  // disabled after a read or parse failure mid-run
};

struct SourceStatus {
  std::string name;
  bool available = false;  // opened at the start of the run
  bool failed = false;     // disabled during the run
  bool host_wide = false;
};

class Sources {
 public:
  // The sources of a v2 slice directory / of v1 hierarchy directories (controller -> dir).
  static Sources v2(const Fs& fs, const std::string& dir);
  static Sources v1(const Fs& fs, const std::map<std::string, std::string>& dirs);

  // Takes one sample at `t_ns` into `out`: reads every live source with pread into a fixed
  // buffer and parses it without allocating (beyond `out`'s growth). Never throws: a source
  // that fails is disabled, its metrics marked incomplete from then on.
  void tick(std::int64_t t_ns, Columns& out);

  std::vector<SourceStatus> status() const;
  // Metrics some open source provides.
  std::bitset<kMetricCount> available() const;

 private:
  void add(const Fs& fs, std::string name, std::vector<std::string> paths,
           std::vector<Metric> metrics, bool (*parse)(const std::string_view*, Reading&),
           bool host_wide = false);

  std::vector<Source> sources_;
  std::vector<SourceStatus> missing_;
  std::array<std::uint64_t, kMetricCount> last_{};
};

}  // namespace edgeprof::detail
