// The device-file schema (include/edgeprof/catalog.hpp) as JSON values, for the parts of the
// library that embed a device in a larger document (reports) without a round trip through text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "edgeprof/catalog.hpp"
#include "edgeprof/device.hpp"

namespace edgeprof::detail {

// A device as a device-file object (what device_to_json() prints).
nlohmann::json device_file_object(const Device& device);

// A device from a device-file object, every error prefixed with `origin`; throws DeviceError.
Device device_from_file_object(const nlohmann::json& object, const std::string& origin,
                               const DeviceLoadOptions& options = {});

}  // namespace edgeprof::detail
