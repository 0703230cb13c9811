// JSON parsed with every object's keys unique: nlohmann::json keeps the last of a key given
// twice, and a file edited to say two things (a report, a device file) was read as saying one.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace edgeprof::detail {

// An object that gives a key twice, by the key's path ("devices[3].cores").
struct DuplicateJsonKey {
  std::string path;
};

// json::parse(text), throwing DuplicateJsonKey for a key given twice in one object, and
// json::exception for text that is not JSON.
nlohmann::json parse_json_unique(std::string_view text);

}  // namespace edgeprof::detail
