/// @file
/// The library's version, for the preprocessor and at run time.
#pragma once

/// The MAJOR part of the version.
#define EDGEPROF_VERSION_MAJOR 0
/// The MINOR part of the version.
#define EDGEPROF_VERSION_MINOR 1
/// The PATCH part of the version.
#define EDGEPROF_VERSION_PATCH 0
/// The whole version, "MAJOR.MINOR.PATCH", as a string literal.
#define EDGEPROF_VERSION_STRING "0.1.0"

namespace edgeprof {
/// The library's version, "MAJOR.MINOR.PATCH".
inline const char* version() { return EDGEPROF_VERSION_STRING; }
}  // namespace edgeprof
