// What a device may hold: one rule for Device::validate (device.cpp) and the device-file reader
// (device_file.cpp), so that every device validate() accepts is written by device_to_json() and
// read back by load_device_file() to an equal one on this host (reports embed devices the
// same way, read back with their speed as written).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edgeprof::detail {

// Most cores a device may have (and threads a published time may name): more than any edge
// device has, and few enough that every core count is a valid thread count.
inline constexpr int kMaxDeviceCores = 4096;

// The bounds of the schema's figures, both ends allowed.
struct Range {
  double min, max;
};
// core_speed, reference_speed and host_reference_speed.
inline constexpr Range kSpeedRange{1e-6, 1000.0};
inline constexpr Range kClockMhzRange{1.0, 100000.0};  // cpu.clock_mhz; 0 = unknown
inline constexpr Range kWattsRange{0.0, 10000.0};      // power.idle_w, power.loaded_w
inline constexpr Range kScoreRange{1e-12, 1e18};       // a probe kernel's score
inline constexpr Range kSpreadRange{0.0, 1e6};         // a probe kernel's spread
inline constexpr Range kAfterRange{0.0, 1e7};          // speed_schedule[].after_s
inline constexpr Range kFactorRange{0.01, 1.0};        // speed_schedule[].factor
inline constexpr Range kMsRange{1e-3, 1e7};            // a published ms per inference
inline constexpr std::int64_t kMaxPids = std::int64_t{1} << 30;

// The statuses a figure's source may have, and the figures `sources` may describe.
inline constexpr const char* kStatuses[] = {"specified", "measured", "estimated"};
inline constexpr const char* kFigures[] = {
    "cores", "core_speed", "reference_speed", "memory", "swap",   "pids_max", "cpu",
    "storage", "power", "scores", "speed_schedule", "nn", "runtimes"};
// The probe kernels a score's spread may name.
inline constexpr const char* kKernels[] = {"integer", "floating", "memory", "vector"};

// Whether `s` is one of `list`.
template <std::size_t N>
bool one_of(std::string_view s, const char* const (&list)[N]) {
  for (const char* item : list) {
    if (s == item) return true;
  }
  return false;
}

// name_problem(), the rule of names and aliases, is in sys/text.hpp.

// Why `text` cannot be a device's free text (description, source, cpu.model, ...; "" when it
// can): not UTF-8, or a control character other than tab and line breaks (C0, DEL, C1).
// Device text is printed to terminals (`edgeprof devices`, a run's header), which would obey an
// escape sequence; a TOML file's multi-line source or description keeps its line breaks.
std::string text_problem(std::string_view text);

}  // namespace edgeprof::detail
