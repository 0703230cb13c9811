/// @file
/// The library's version, for the preprocessor and at run time. This file is the one place the
/// version is written: CMakeLists.txt and pyproject.toml read it from the three numbers below.
#pragma once

#include "edgeprof/export.hpp"

/// The MAJOR part of the version.
#define EDGEPROF_VERSION_MAJOR 0
/// The MINOR part of the version.
#define EDGEPROF_VERSION_MINOR 1
/// The PATCH part of the version.
#define EDGEPROF_VERSION_PATCH 0
/// @cond
#define EDGEPROF_VERSION_STR_(x) #x
#define EDGEPROF_VERSION_STR(x) EDGEPROF_VERSION_STR_(x)
/// @endcond
/// The whole version, "MAJOR.MINOR.PATCH", as a string literal.
#define EDGEPROF_VERSION_STRING                                                    \
  EDGEPROF_VERSION_STR(EDGEPROF_VERSION_MAJOR)                                     \
  "." EDGEPROF_VERSION_STR(EDGEPROF_VERSION_MINOR) "." EDGEPROF_VERSION_STR(EDGEPROF_VERSION_PATCH)

EDGEPROF_API_BEGIN
namespace edgeprof {
/// The library's version, "MAJOR.MINOR.PATCH".
inline const char* version() { return EDGEPROF_VERSION_STRING; }
}  // namespace edgeprof
EDGEPROF_API_END
