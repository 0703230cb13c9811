// The sampler's sources and its tick: a plain function of (sources, now) that tests call
// directly on fake trees. The timer thread (sampler.hpp) only schedules it.
#pragma once

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cgroup/backend.hpp"
#include "edgeprof/series.hpp"
#include "sys/fs.hpp"

namespace edgeprof::detail {

using edgeprof::Metric;
using edgeprof::SourceStatus;
using edgeprof::TimeSeries;

using Columns = TimeSeries;

// What a parser writes: values (indexed by Metric) and which of them it found.
struct Reading {
  std::uint64_t* values;
  std::bitset<kMetricCount> present;
  void set(Metric m, std::uint64_t v) {
    values[static_cast<int>(m)] = v;
    present.set(static_cast<size_t>(m));
  }
};

// One reading of some metrics, outside any series: values indexed by Metric, and which of them
// were read (a metric no open source gives, or whose source failed, is not).
struct Snapshot {
  std::array<std::uint64_t, kMetricCount> values{};
  std::bitset<kMetricCount> read;
  bool has(Metric m) const { return read.test(static_cast<size_t>(m)); }
  std::uint64_t operator[](Metric m) const { return values[static_cast<size_t>(m)]; }
};

// How often a source is read: at every tick (what a CPU or memory series needs: CPU time and
// throttling, memory usage), or every Sources::slow_every() ticks (what moves slowly or costs
// the kernel more to format: memory.stat's breakdown, pressure, block I/O, tasks, OOM kills,
// network). Extra samples (phase marks, the final one) read every source.
enum class Rate { every_tick, slow };

// One stat file (or two, for v1's CPU time and I/O) and the metrics it may feed.
struct Source {
  std::string name;        // e.g. "cpu.stat"
  bool host_wide = false;  // /proc/pressure/* on v1: the whole host, not the slice
  Rate rate = Rate::every_tick;
  std::vector<StatFile> files;
  std::vector<Metric> metrics;
  // Parses the files' texts; false when the source is unusable (it is then disabled).
  bool (*parse)(const std::string_view* texts, Reading& reading) = nullptr;
  bool failed = false;  // disabled after a read or parse failure mid-run
  std::string error;    // why it failed (set once, when it does)
};

class Sources {
 public:
  // The sources of a v2 slice directory / of v1 hierarchy directories (controller -> dir).
  // `peak_fd`, when open, is the slice's memory.peak as reset for each run: read through a copy
  // of it, because since Linux 6.12 a reset applies only to reads through the reset file.
  // `only`: the metrics wanted; a source that gives none of them is not opened (an unsampled
  // run's end-of-run counters open 4 files on v1, not 13).
  static Sources v2(const Fs& fs, const std::string& dir, int peak_fd = -1,
                    const std::vector<std::string>& core_dirs = {},
                    const std::bitset<kMetricCount>& only = kAllMetrics);
  // `core_dirs`: per-core emulation's core groups, whose cpu.stat hold the throttling.
  static Sources v1(const Fs& fs, const std::map<std::string, std::string>& dirs,
                    const std::vector<std::string>& core_dirs = {},
                    const std::bitset<kMetricCount>& only = kAllMetrics);
  // The sources of a slice, by its version: files opened now, kept open by the Sources.
  static Sources of(const SliceFiles& where,
                    const std::bitset<kMetricCount>& only = kAllMetrics) {
    return where.unified ? v2(where.fs, where.dir, where.peak_fd, where.core_dirs, only)
                         : v1(where.fs, where.controllers, where.core_dirs, only);
  }
  static_assert(kMetricCount < 64, "kAllMetrics is a 64-bit mask");
  static constexpr std::bitset<kMetricCount> kAllMetrics{(1ULL << kMetricCount) - 1};
  // Adds the network counters of a workload in its own network namespace: `dev` is net/dev
  // opened inside it (the open file keeps the namespace readable after every process left).
  void add_network(StatFile dev);

  // Takes one sample at `t_ns` into `out`: reads every live source with pread into a fixed
  // buffer and parses it without allocating (beyond `out`'s growth). Never throws: a source
  // that fails is disabled, its metrics marked incomplete from then on.
  // `scheduled` = taken at a deadline (false for extra samples: phase marks, the final one).
  void tick(std::int64_t t_ns, Columns& out, bool scheduled = true);
  // The same, stamped by `now` (nanoseconds) read just before and just after the CPU time
  // source: the stamp is the middle of that read. A thread preempted between a stamp and the
  // read (for tens of ms on a loaded host or in an emulated VM) would pin the counter to the
  // wrong time, and a rate over a 100 ms window to a wrong one (1.19 cores for a one-core
  // slice was seen). A read that took over kMaxStampGapNs, and over four times the quickest
  // read of this run (reads are slower in an emulated VM), is tried again, up to kStampTries
  // times; the best-bracketed try is kept, its values with its stamp. Returns the stamp.
  template <typename Now>
  std::int64_t tick_stamped(Now&& now, Columns& out, bool scheduled = true) {
    begin(out);
    const int cpu = cpu_source();
    if (cpu < 0) {
      const std::int64_t t_ns = now();
      read_rest(out, -1, scheduled, t_ns);
      push(t_ns, out, scheduled);
      return t_ns;
    }
    std::int64_t t_ns = 0;
    std::int64_t best_gap = -1;
    const std::int64_t slow = std::max(kMaxStampGapNs, 4 * quickest_gap_);
    for (int i = 0; i < kStampTries; ++i) {
      const std::int64_t before = now();
      read_source(sources_[static_cast<size_t>(cpu)], out);
      const std::int64_t after = now();
      const std::int64_t gap = after - before;
      if (best_gap < 0 || gap < best_gap) {
        best_gap = gap;
        t_ns = before + gap / 2;
        kept_ = last_;  // the values of the try whose stamp is kept
      }
      if (gap <= slow) break;
    }
    if (quickest_gap_ < 0 || best_gap < quickest_gap_) quickest_gap_ = best_gap;
    last_ = kept_;
    read_rest(out, cpu, scheduled, t_ns);
    push(t_ns, out, scheduled);
    return t_ns;
  }
  static constexpr std::int64_t kMaxStampGapNs = 200'000;  // a read takes about 1-10 us here
  static constexpr int kStampTries = 3;

  // Reads now every live source that gives one of `wanted`, whatever its rate, into a
  // Snapshot of its own: no series, and the values the next tick compares with are left alone.
  // A source that fails is disabled as in a tick (status(), reusable()).
  Snapshot snapshot(const std::bitset<kMetricCount>& wanted);

  std::vector<SourceStatus> status() const;
  // Whether the next run in the same slice can sample with these open files: no source failed
  // and none belongs to one run (the network namespace's counters).
  bool reusable() const;
  // Forgets the last values read, for the next run.
  void rewind() {
    last_.fill(0);
    slow_read_ = false;
  }
  // Slow sources are read every `n` intervals of `interval_ns` (1: at every tick, the default),
  // by the samples' times, so that deadlines missed on a busy machine do not stretch the gap.
  // The sampler sets it from its interval: about every kSlowSourceNs.
  void set_slow_every(std::uint32_t n, std::int64_t interval_ns) {
    slow_every_ = std::max<std::uint32_t>(n, 1);
    slow_gap_ns_ = slow_every_ > 1 ? (2 * std::int64_t(slow_every_) - 1) * interval_ns / 2 : 0;
  }
  std::uint32_t slow_every() const { return slow_every_; }
  static constexpr std::int64_t kSlowSourceNs = 100'000'000;
  // Metrics some open source provides.
  std::bitset<kMetricCount> available() const;

 private:
  void fail(Source& s, size_t file, int error);
  // Reads and parses one source into last_ (marking its metrics incomplete in `out` when it
  // fails); sources from `first` on; the row of last_ at `t_ns`.
  void begin(Columns& out);  // the first row: which metrics are available
  void read_source(Source& s, Columns& out) { read_source(s, last_.data(), out.complete); }
  // Into `values` (indexed by Metric); clears in `complete` the metrics the source did not give.
  void read_source(Source& s, std::uint64_t* values, std::bitset<kMetricCount>& complete);
  // Every source but `skip` (-1: none) that is due at `t_ns`: all of them for an extra sample.
  void read_rest(Columns& out, int skip, bool scheduled, std::int64_t t_ns);
  int cpu_source() const;                  // the index of the CPU time source, or -1
  void push(std::int64_t t_ns, Columns& out, bool scheduled);
  void add(const Fs& fs, std::string name, std::vector<std::string> paths,
           std::vector<Metric> metrics, bool (*parse)(const std::string_view*, Reading&),
           Rate rate = Rate::every_tick, bool host_wide = false);

  // Called once per failure, outside the hot path (default: a line on stderr).
 public:
  using Logger = void (*)(const std::string& message);
  void set_logger(Logger logger) { logger_ = logger; }

 private:
  std::vector<Source> sources_;
  Logger logger_ = nullptr;
  std::vector<SourceStatus> missing_;
  std::bitset<kMetricCount> only_ = kAllMetrics;  // what the sources were opened for
  // Each file of a source is read into kSourceBuffer bytes of scratch_ (stat files are small:
  // memory.stat is the largest, about 1.5 KiB on 6.1); views_ holds the texts for the parser.
  static constexpr std::size_t kSourceBuffer = 8192;
  void reserve_scratch(std::size_t files);
  std::vector<char> scratch_;
  std::vector<std::string_view> views_;
  std::array<std::uint64_t, kMetricCount> last_{};
  std::array<std::uint64_t, kMetricCount> kept_{};  // tick_stamped's kept try
  std::int64_t quickest_gap_ = -1;                  // tick_stamped's quickest CPU read
  bool per_run_ = false;  // holds a source of one run (add_network)
  std::uint32_t slow_every_ = 1;
  std::int64_t slow_gap_ns_ = 0;   // a slow source is due this long after its last read
  std::int64_t last_slow_ns_ = 0;  // when the slow sources were last read in this run
  bool slow_read_ = false;         // whether they were read yet in this run
};

}  // namespace edgeprof::detail
