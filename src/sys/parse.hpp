// Pure parsers of cgroup and /proc text. No I/O: tests feed them literal text and captures.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprof::detail {

// `s` without leading and trailing blanks, tabs and line ends.
std::string_view trim(std::string_view s);

// Calls fn(line) for each line of `text`, without its newline (a last line without one too).
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// A decimal unsigned integer, surrounding whitespace allowed; nullopt otherwise.
std::optional<std::uint64_t> parse_u64(std::string_view text);

// The value of `key` in flat-keyed text ("key value" per line), as cpu.stat, memory.stat,
// memory.events, memory.oom_control and /proc/meminfo ("MemTotal:") are written.
std::optional<std::uint64_t> find_key(std::string_view text, std::string_view key);
// Several keys in one pass over the lines: out[i] = the value of keys[i], or nullopt. The
// sampler reads its multi-key files (memory.stat has about 70 lines on v1) this way.
void find_keys(std::string_view text, const std::string_view* keys, std::size_t count,
               std::optional<std::uint64_t>* out);
template <std::size_t N>
void find_keys(std::string_view text, const std::string_view (&keys)[N],
               std::optional<std::uint64_t> (&out)[N]) {
  find_keys(text, keys, N, out);
}

// One line of /proc/<pid>/cgroup: "hierarchy-id:controller,list:/path".
struct CgroupMembership {
  int hierarchy = 0;
  std::vector<std::string> controllers;  // empty for the v2 line ("0::/path")
  std::string path;
};
std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text);

// The pids in cgroup.procs or cgroup.threads (one per line) that this process can name: a 0 (a
// process of another pid namespace, which kill() would read as the caller's own process group
// and a cgroup.procs write as the caller itself) and numbers no pid_t holds are left out.
std::vector<pid_t> parse_pids(std::string_view text);
// Whether cgroup.procs lists any process, those of other pid namespaces (listed as 0) too.
bool lists_processes(std::string_view text);

// Field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat; nullopt when malformed.
std::optional<std::uint64_t> parse_stat_starttime(std::string_view text);
// Field 4 (ppid, the parent's pid) of /proc/<pid>/stat; nullopt when malformed.
std::optional<pid_t> parse_stat_ppid(std::string_view text);
// Field 3 (state: 'R' running or runnable, 'S' sleeping, 'D', 'Z', ...) of /proc/<pid>/stat or
// /proc/<pid>/task/<tid>/stat; nullopt when malformed.
std::optional<char> parse_stat_state(std::string_view text);
// Field 39 (processor: the CPU the task last ran on) of /proc/<pid>/stat or
// /proc/<pid>/task/<tid>/stat; nullopt when malformed.
std::optional<int> parse_stat_processor(std::string_view text);

// Slice directory names: "edgeprof-<owner pid>-<owner starttime>-<sequence>-<owner pid
// namespace>" (the inode of the owner's /proc/self/ns/pid, in whose numbering its pid is; the
// last part left out, and 0 here, when unknown, as in names before it).
struct SliceName {
  pid_t owner = 0;
  std::uint64_t owner_start = 0;
  std::uint64_t sequence = 0;
  std::uint64_t pid_ns = 0;
};
std::string format_slice_name(const SliceName& name);
std::optional<SliceName> parse_slice_name(std::string_view name);

// cgroup v1 CPU time: cpuacct.usage is exact (scheduler runtime, ns) but cpuacct.usage_user
// and usage_sys are tick samples that can exceed it (seen: 1.07 s "user" for 0.76 s of
// runtime). Split the exact total in the ratio of cpuacct.stat's user and system ticks, as the
// kernel's cputime_adjust() does; with no ticks at all, count it as user time.
struct CpuSplit {
  std::uint64_t user_ns = 0;
  std::uint64_t system_ns = 0;
};
CpuSplit split_cpu_time(std::uint64_t usage_ns, std::uint64_t user_ticks,
                        std::uint64_t system_ticks);

// A slice's CPU time and CFS throttling, in nanoseconds and periods, as far as its files say.
// One parser per file kind, shared by the end-of-run counters and the sampler.
struct CpuStat {
  std::optional<std::uint64_t> usage_ns, user_ns, system_ns;
  std::optional<std::uint64_t> periods, throttled_periods, throttled_ns;
};
// v2 cpu.stat (microseconds; the throttling fields only with the cpu controller enabled).
CpuStat parse_cpu_stat_v2(std::string_view text);
// v1 cpu.stat: the throttling fields only (throttled_time in nanoseconds).
CpuStat parse_cpu_stat_v1(std::string_view text);
// v1 cpuacct.usage and cpuacct.stat: the exact total, split by split_cpu_time (nullopt fields
// when cpuacct.usage is not a number).
CpuStat parse_cpuacct(std::string_view usage, std::string_view stat);
// Field by field, the sum of several cgroups' figures (per-core emulation's core groups); a
// field is set only when every one has it. An empty list gives all fields unset.
CpuStat sum_cpu_stats(const CpuStat* stats, std::size_t count);

// Block I/O of a cgroup, summed over its devices.
struct IoTotals {
  std::uint64_t read_bytes = 0, write_bytes = 0, read_ops = 0, write_ops = 0;
};
// v2 io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N" per device.
IoTotals parse_io_stat(std::string_view text);
// v1 blkio.throttle.io_service_bytes / io_serviced: "MAJ:MIN Read N", "MAJ:MIN Write N", ...
// Returns {sum of Read, sum of Write}.
struct ReadWrite {
  std::uint64_t read = 0, write = 0;
};
ReadWrite parse_blkio(std::string_view text);

// The block devices of /proc/partitions ("major minor #blocks name" after a heading line),
// as "MAJ:MIN" with their size in 1 KiB blocks; lines that do not parse are skipped.
struct BlockDevice {
  std::string dev;  ///< "MAJ:MIN"
  std::string name;
  std::uint64_t blocks = 0;
};
std::vector<BlockDevice> parse_partitions(std::string_view text);

// Pressure stall information ("some ... total=N" / "full ... total=N", microseconds stalled).
// `full` is absent from cpu.pressure before Linux 5.13.
struct Pressure {
  std::optional<std::uint64_t> some_us, full_us;
};
Pressure parse_pressure(std::string_view text);

// /proc/<pid>/net/dev, summed over every interface of the namespace. nullopt when the text is
// not in that format (no "Inter-|" header or a malformed interface line).
struct NetTotals {
  std::uint64_t rx_bytes = 0, rx_packets = 0, tx_bytes = 0, tx_packets = 0;
};
std::optional<NetTotals> parse_net_dev(std::string_view text);

// A CPU bandwidth limit as the kernel holds it: v2's cpu.max ("max 100000", "20000 100000"),
// or v1's cpu.cfs_quota_us ("-1" or microseconds) with cpu.cfs_period_us. quota_us unset: no
// limit. nullopt when the text is not in that format.
struct CpuMax {
  std::optional<std::uint64_t> quota_us;
  std::uint64_t period_us = 0;
};
std::optional<CpuMax> parse_cpu_max(std::string_view text);
std::optional<CpuMax> parse_cfs_bandwidth(std::string_view quota, std::string_view period);

// Whitespace-separated words ("cpuset cpu io memory pids" of cgroup.controllers).
std::vector<std::string> split_words(std::string_view text);

// An on/off switch's value (an environment variable's): 1, true, on, yes are true; 0, false,
// off, no false (any case, surrounding blanks allowed); anything else (empty) nullopt.
std::optional<bool> parse_switch(std::string_view text);

// The setting of a switch environment variable `name` whose value is `value` (getenv's): `unset`
// when it is unset or empty, else parse_switch's; Error naming the variable and its value for
// anything else (EDGEPROF_DRIFT_CHECK=yes once read as off, EDGEPROF_STEADY_MALLOC=no as on).
bool switch_setting(const char* name, const char* value, bool unset);
// switch_setting() of the environment variable `name`.
bool switch_from_env(const char* name, bool unset);

// The names among `names` that a mistyped `key` most likely meant (for "no such name" errors):
// compared without case, '-', '_' and spaces, those that start with the key, else those within
// an edit distance of a third of the key's length (at least 2), the closest first; at most
// `limit`.
std::vector<std::string> close_names(std::string_view key, const std::vector<std::string>& names,
                                     std::size_t limit = 4);

}  // namespace edgeprof::detail
