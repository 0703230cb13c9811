// The device-file schema (include/edgeprof/catalog.hpp) as JSON values, for the parts of the
// library that embed a device in a larger document (reports) without a round trip through text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "edgeprof/catalog.hpp"
#include "edgeprof/device.hpp"

namespace edgeprof::detail {

// How sources["core_speed"] begins where the speed came from a probe's scores (against this
// host's), the way the plan tells such a speed from a given one.
inline constexpr const char* kProbeScoresSource = "edgeprof-probe scores";
// A probe kernel's runs spread (fastest - slowest over the median) beyond which a speed from
// them is said to be uncertain, in the plan's notes and the run's warnings. A probe on an idle
// board spreads 5-12%; 41% was seen on a shared host's AVX-512 clock, 170% on a busy board.
inline constexpr double kWideProbeSpread = 0.5;
// How that note begins (a run repeats it in its warnings: src/run/plan_warnings.cpp).
inline constexpr const char* kProbeSpreadNote = "probe scores spread";

// A JSON value as an error message shows it: as written (nan, inf and -inf, which a TOML
// file can hold and JSON's dump() gives as null), bytes that are not UTF-8 replaced, cut short
// after about 40 bytes (at a whole character).
std::string shown(const nlohmann::json& value);

// A device as a device-file object (what device_to_json() prints).
nlohmann::json device_file_object(const Device& device);

// A device from a device-file object, every error prefixed with `origin`; throws DeviceError.
Device device_from_file_object(const nlohmann::json& object, const std::string& origin,
                               const DeviceLoadOptions& options = {});

}  // namespace edgeprof::detail
