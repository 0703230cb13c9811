// Result as text for people and as JSON for programs.
#include <fmt/format.h>

#include <cmath>

#include "edgeprof/slice.hpp"

namespace edgeprof {

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

template <class T>
std::string json_optional(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "null";
}

// Doubles with enough digits to round-trip, and JSON-safe.
std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string exit_text(const Result& r) {
  if (r.timed_out) return "killed at the timeout";
  if (r.oom_killed) {
    return fmt::format("killed by the out-of-memory killer ({} task{} killed{})", r.oom_kills,
                       r.oom_kills == 1 ? "" : "s",
                       r.signal ? fmt::format(", workload ended by signal {}", *r.signal) : "");
  }
  if (r.signal) return fmt::format("killed by signal {}", *r.signal);
  return fmt::format("exit code {}", r.exit_code.value_or(-1));
}

}  // namespace

std::string to_text(const Result& r) {
  const EmulationPlan& p = r.plan;
  std::string out;
  out += fmt::format("device        {} ({} cores x speed {}, {} memory)\n", r.device.name,
                     r.device.cores, r.device.core_speed, format_size(r.device.memory_bytes));
  out += fmt::format("emulation     cpus {}, quota {:.3g} cores ({} us / {} us), memory.max {}, "
                     "cgroup {}, child placed by {}\n",
                     format_cpu_list(p.cpus), p.capacity_cores(), p.cpu_quota_us,
                     p.cpu_period_us, format_size(p.memory_max_bytes), describe(r.cgroup_mode),
                     r.placement);
  out += fmt::format("outcome       {}\n", exit_text(r));
  out += fmt::format("wall time     {:.6f} s   measured (monotonic clock, exec to exit)\n",
                     r.wall_time_s);
  out += fmt::format("cpu time      {:.3f} s user + {:.3f} s system   measured (cgroup counters)\n",
                     r.cpu_user_s, r.cpu_system_s);
  if (r.peak_memory_bytes) {
    out += fmt::format("peak memory   {}   measured (kernel counter {})\n",
                       format_size(*r.peak_memory_bytes), r.peak_memory_source);
  } else {
    out += "peak memory   unavailable (no memory controller)\n";
  }
  out += fmt::format("throttled     {:.3f} s in {} of {} periods   measured (cpu.stat)\n",
                     r.throttled_s, r.throttled_periods, r.periods);
  for (const std::string& note : p.notes) out += fmt::format("note          {}\n", note);
  for (const std::string& u : r.unapplied) out += fmt::format("NOT APPLIED   {}\n", u);
  return out;
}

std::string to_json(const Result& r) {
  const Device& d = r.device;
  const EmulationPlan& p = r.plan;
  std::string device = fmt::format(
      "{{\"name\": {}, \"cores\": {}, \"core_speed\": {}, \"memory_bytes\": {}, "
      "\"swap_bytes\": {}, \"io_read_bps\": {}, \"io_write_bps\": {}, \"pids_max\": {}, "
      "\"description\": {}, \"source\": {}}}",
      json_string(d.name), d.cores, json_number(d.core_speed), d.memory_bytes, d.swap_bytes,
      json_optional(d.io_read_bps), json_optional(d.io_write_bps), json_optional(d.pids_max),
      json_string(d.description), json_string(d.source));
  std::string plan = fmt::format(
      "{{\"cpus\": {}, \"cpu_period_us\": {}, \"cpu_quota_us\": {}, \"memory_max_bytes\": {}, "
      "\"swap_max_bytes\": {}, \"pids_max\": {}, \"notes\": {}}}",
      json_string(format_cpu_list(p.cpus)), p.cpu_period_us, p.cpu_quota_us, p.memory_max_bytes,
      p.swap_max_bytes, json_optional(p.pids_max), json_strings(p.notes));
  return fmt::format(
      "{{\"command\": {}, \"exit_code\": {}, \"signal\": {}, \"timed_out\": {}, "
      "\"oom_killed\": {}, \"oom_kills\": {}, \"wall_time_s\": {}, \"cpu_user_s\": {}, "
      "\"cpu_system_s\": {}, \"peak_memory_bytes\": {}, \"peak_memory_source\": {}, "
      "\"throttled_s\": {}, \"throttled_periods\": {}, \"periods\": {}, "
      "\"child_max_rss_bytes\": {}, \"provenance\": {{\"wall_time_s\": \"measured\", "
      "\"cpu_user_s\": \"measured\", \"cpu_system_s\": \"measured\", "
      "\"peak_memory_bytes\": \"measured\", \"throttled_s\": \"measured\"}}, "
      "\"cgroup_mode\": {}, \"placement\": {}, \"unapplied\": {}, \"device\": {}, "
      "\"plan\": {}}}",
      json_strings(r.command), json_optional(r.exit_code), json_optional(r.signal), r.timed_out,
      r.oom_killed, r.oom_kills, json_number(r.wall_time_s), json_number(r.cpu_user_s),
      json_number(r.cpu_system_s), json_optional(r.peak_memory_bytes),
      json_string(r.peak_memory_source), json_number(r.throttled_s), r.throttled_periods,
      r.periods, r.child_max_rss_bytes, json_string(to_string(r.cgroup_mode)),
      json_string(r.placement), json_strings(r.unapplied), device, plan);
}

}  // namespace edgeprof
