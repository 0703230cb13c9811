#include "sys/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace edgeprof::detail {

char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = b(i);
  const std::size_t length = lead < 0x80           ? 1
                             : (lead >> 5) == 0x6  ? 2
                             : (lead >> 4) == 0xE  ? 3
                             : (lead >> 3) == 0x1E ? 4
                                                   : 0;
  if (length == 0 || i + length > s.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t c = length == 1 ? lead : (lead & (0x7Fu >> length));
  for (std::size_t k = 1; k < length; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    c = (c << 6) | (b(i + k) & 0x3Fu);
  }
  static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kLeast[length] || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) {
    ++i;
    return 0xFFFD;
  }
  i += length;
  return c;
}

bool not_utf8_at(std::string_view s, std::size_t at, char32_t c) {
  return c == 0xFFFD && s.substr(at, 3) != "\xEF\xBF\xBD";
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const char32_t c = next_code_point(text, i);
    if (not_utf8_at(text, at, c)) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[at]));
    } else if (is_control(c)) {
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c));
    } else {
      out += text.substr(at, i - at);
    }
  }
  return out;
}

std::string printable_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    out += printable(text.substr(start, end - start));
    if (end == text.size()) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::string name_problem(std::string_view name) {
  constexpr const char* kRule =
      "a name holds no '/' or control characters, and neither starts nor ends with a space";
  if (name.empty()) return fmt::format("'' is not a usable name; {}", kRule);
  if (name.front() == ' ' || name.back() == ' ') {
    return fmt::format("'{}' is not a usable name; {}", printable(name), kRule);
  }
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t at = i;
    const char32_t c = next_code_point(name, i);
    std::string what;
    if (not_utf8_at(name, at, c)) {
      what = fmt::format("the byte \\x{:02X} is not UTF-8", static_cast<unsigned char>(name[at]));
    } else if (c == '/' || is_control(c)) {
      what = fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
    } else {
      continue;
    }
    return fmt::format("'{}' is not a usable name ({}); {}", printable(name), what, kRule);
  }
  return {};
}

}  // namespace edgeprof::detail
