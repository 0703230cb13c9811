#pragma once

#define EDGEPROF_VERSION_MAJOR 0
#define EDGEPROF_VERSION_MINOR 1
#define EDGEPROF_VERSION_PATCH 0
#define EDGEPROF_VERSION_STRING "0.1.0"

namespace edgeprof {
// The library's version, "MAJOR.MINOR.PATCH".
inline const char* version() { return EDGEPROF_VERSION_STRING; }
}  // namespace edgeprof
