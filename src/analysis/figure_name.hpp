// Named figures (figures(), include/edgeprof/result.hpp): the parts of a name.
#pragma once

#include <string>
#include <string_view>

namespace edgeprof::detail {

// A figure's own name, after a phase's "phase.<name>." (a phase may be named anything, dots
// included): "all_cores_wall_time_s" for "phase.a.b.all_cores_wall_time_s".
inline std::string figure_own_name(std::string_view name) {
  const auto dot = name.rfind('.');
  return std::string(dot == std::string_view::npos ? name : name.substr(dot + 1));
}

}  // namespace edgeprof::detail
