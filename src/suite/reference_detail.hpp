// The reference core's private constants shared with the device-file reader.
#pragma once

namespace edgeprof::detail {

// How sources["core_speed"] begins where apply_reference_speed() derived the speed (corrected
// or not): the device-file reader drops such a source when it derives the speed again.
inline constexpr const char* kReferenceSpeedSource = "reference_speed ";

}  // namespace edgeprof::detail
