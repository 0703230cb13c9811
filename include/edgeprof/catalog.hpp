/// @file
/// Where devices come from: the built-in catalog, device files (JSON or TOML, one schema,
/// docs/devices.md) and the user's device directories, and finding a device by name or path.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/device.hpp"
#include "edgeprof/export.hpp"
#include "edgeprof/microbench.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// The device-file schema version this edgeprof writes and the newest it reads (the
/// `edgeprof_device` field).
inline constexpr int kDeviceSchemaVersion = 1;

/// Options for loading device files.
struct DeviceLoadOptions {
  /// This host's per-core scores, to turn a probed device's `scores` into a core speed. Unset =
  /// host_calibration() (measured once, then cached).
  std::optional<CoreScores> host_scores;
  /// One host core / one reference core, to turn a `reference_speed` (the catalog's speeds)
  /// into a core speed. Unset = cached_reference_rating() (reference.hpp; never measured here);
  /// 0 = not known: reference speeds are used uncorrected, and the device and its plan say so.
  std::optional<double> host_reference_speed;
  /// This host's nn rating (ms per reference graph), to turn a device's published `nn` times
  /// into its nn speed. Unset = cached_nn_rating() (nn.hpp; never measured here); empty = not
  /// known: the device has no nn speed, and says why.
  std::optional<std::map<std::string, double>> host_nn_ms;
  /// A core_speed that edgeprof derived from reference_speed when it wrote the file (equal to
  /// reference_speed / host_reference_speed, or to reference_speed uncorrected without a
  /// host_reference_speed) is derived again on this host, as the catalog's speeds are: one
  /// written on another host, or before `edgeprof calibrate-host --reference`, was kept. True:
  /// kept as written (a report's device, a pickled one: the speed the run had).
  bool speed_as_written = false;
};

/// Parses a device file's JSON text. `origin` (the file name) starts every error message, which
/// also names the field and the problem. Throws DeviceError.
Device parse_device_json(std::string_view text, const std::string& origin,
                         const DeviceLoadOptions& options = {});
/// Parses a device file's TOML text; as parse_device_json (TOML errors give line and column).
Device parse_device_toml(std::string_view text, const std::string& origin,
                         const DeviceLoadOptions& options = {});
/// Loads a device file: TOML for `.toml`, JSON for `.json`, else by content. Throws DeviceError
/// naming the file (with the errno when it cannot be read), the field and the problem.
Device load_device_file(const std::string& path, const DeviceLoadOptions& options = {});
/// A device as a device file (JSON, schema kDeviceSchemaVersion) that load_device_file reads
/// back to an equal device, except that a core speed it derived from reference_speed is
/// derived again with the reading host's reference rating (DeviceLoadOptions::
/// speed_as_written keeps it).
std::string device_to_json(const Device& device);

/// The built-in catalog: real devices, each figure with its source and status (docs/devices.md).
const std::vector<Device>& catalog_devices();

/// The directories searched for the user's device files: `EDGEPROF_DEVICE_PATH` (separated by
/// ':'), else `$XDG_CONFIG_HOME/edgeprof/devices`, else `~/.config/edgeprof/devices`.
std::vector<std::string> device_search_path();

/// The user's devices, from every `*.json` and `*.toml` file in device_search_path().
struct UserDevices {
  std::vector<Device> devices;        ///< the files that loaded, in path order
  /// One message per file that did not load, or whose device find_device() cannot reach by
  /// name: a built-in device's name or alias, or one an earlier file's device answers to.
  std::vector<std::string> problems;
};
/// Loads the user's device files; a broken file is reported in `problems`, not thrown.
UserDevices user_devices(const DeviceLoadOptions& options = {});

/// A device by name or alias (the catalog first, then the user's device files) or, when the
/// argument contains '/' or ends in .json or .toml, from that file. Throws DeviceError listing
/// the known names when nothing matches, or for a NUL byte in the argument.
Device find_device(std::string_view name_or_path, const DeviceLoadOptions& options = {});

}  // namespace edgeprof
EDGEPROF_API_END
