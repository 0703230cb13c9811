// What an edge device is, as far as emulation is concerned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprof {

// Smallest memory limit a device may declare: below this even a shell cannot start.
inline constexpr std::uint64_t kMinDeviceMemory = 16ull << 20;

// A target device. `core_speed` is the speed of one device core relative to one core of the
// host edgeprof runs on (0.25 = a quarter as fast). Construct, then call `validate()` (the
// factory functions below do).
struct Device {
  std::string name;
  int cores = 1;
  double core_speed = 1.0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t swap_bytes = 0;
  std::optional<std::uint64_t> io_read_bps;   // storage read bandwidth, bytes/s
  std::optional<std::uint64_t> io_write_bps;  // storage write bandwidth, bytes/s
  std::optional<std::int64_t> pids_max;       // most tasks the workload may have
  std::string description;
  // Where the figures come from and whether they are measured or estimated.
  std::string source;

  // Throws DeviceError naming the field and the value when something is out of range.
  void validate() const;
};

bool operator==(const Device& a, const Device& b);
inline bool operator!=(const Device& a, const Device& b) { return !(a == b); }

// Parses a byte size: a plain integer ("1048576"), binary units ("512MiB", "1.5GiB", "512Mi",
// and docker-style "512M"/"512m"), or decimal units ("500MB", "2GB", "1kB"). `field` names the
// setting in the error message. Throws DeviceError.
std::uint64_t parse_size(std::string_view text, std::string_view field = "size");

// Formats bytes for people: "512 MiB", "1.5 GiB", "999 B".
std::string format_size(std::uint64_t bytes);

// Builds and validates a device; `memory` and `swap` are size strings as parse_size takes.
Device make_device(std::string name, int cores, double core_speed, std::string_view memory,
                   std::string_view swap = "0");

// The built-in devices (a handful; a sourced catalog comes later).
const std::vector<Device>& builtin_devices();

// A built-in device by name; throws DeviceError listing the known names when there is none.
const Device& builtin_device(std::string_view name);

}  // namespace edgeprof
