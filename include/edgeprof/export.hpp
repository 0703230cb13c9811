/// @file
/// Which symbols a shared libedgeprof exports. The library is compiled with hidden visibility
/// (CMake's CXX_VISIBILITY_PRESET): only what the public headers declare between
/// EDGEPROF_API_BEGIN and EDGEPROF_API_END is exported, so the library's internals
/// (`edgeprof::detail`) and the libraries compiled into it (fmt, nlohmann_json, toml++) stay
/// out of its dynamic symbol table. A region rather than a mark on each declaration: every
/// class, exception type (its typeinfo must be one across libraries for `catch` to work) and
/// function in a public header is public. tests/check_visibility.py checks the built library.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
/// Opens a region of public API in a public header (after its includes).
#define EDGEPROF_API_BEGIN _Pragma("GCC visibility push(default)")
/// Closes the region that EDGEPROF_API_BEGIN opened.
#define EDGEPROF_API_END _Pragma("GCC visibility pop")
#else
#define EDGEPROF_API_BEGIN
#define EDGEPROF_API_END
#endif
