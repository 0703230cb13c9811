#include "sys/json_unique.hpp"

#include <fmt/format.h>

#include <set>
#include <vector>

namespace edgeprof::detail {

using nlohmann::json;

json parse_json_unique(std::string_view text) {
  struct Level {
    bool array = false;
    std::size_t elements = 0;  // an array's elements begun
    std::string key;           // an object's member being read
    std::set<std::string> keys;
  };
  std::vector<Level> levels;
  const auto element_begins = [&] {
    if (!levels.empty() && levels.back().array) ++levels.back().elements;
  };
  const auto path = [&] {
    std::string out;
    for (const Level& l : levels) {
      if (l.array) {
        out += fmt::format("[{}]", l.elements - 1);
      } else {
        out += (out.empty() ? "" : ".") + l.key;
      }
    }
    return out;
  };
  return json::parse(text, [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        element_begins();
        levels.push_back({event == json::parse_event_t::array_start, 0, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        levels.pop_back();
        break;
      case json::parse_event_t::key:
        levels.back().key = parsed.get<std::string>();
        if (!levels.back().keys.insert(levels.back().key).second) {
          throw DuplicateJsonKey{path()};
        }
        break;
      case json::parse_event_t::value:
        element_begins();
        break;
    }
    return true;
  });
}

}  // namespace edgeprof::detail
