// Text as edgeprof shows and names it: UTF-8 read a code point at a time, a message's text made
// printable, and the rule of a device's name. Pure functions without 128-bit arithmetic, so
// the probe (src/probe, for 32-bit ARM boards too) shares them with the library.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace edgeprof::detail {

// The code point at `i` (advanced past it), or U+FFFD for a byte that starts none: overlong
// forms, surrogates and values past U+10FFFF are not UTF-8, and are read one byte at a time.
char32_t next_code_point(std::string_view s, std::size_t& i);

// Whether the U+FFFD that next_code_point() gave for the character at `at` stands for a byte
// that is not UTF-8 (not a U+FFFD written in `s`).
bool not_utf8_at(std::string_view s, std::size_t at, char32_t c);

// A control character: C0 (tab and line breaks included), DEL or C1.
inline bool is_control(char32_t c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

// `text` for a message or a note printed to a terminal: control characters written as JSON
// writes them (\u001b), bytes that are not UTF-8 (a path's) as \xNN; the rest as it is.
std::string printable(std::string_view text);

// printable() of each line of `text`, its line breaks ('\n') kept: a readable summary that
// holds what a workload or a report's file wrote (phase names, warnings, a command).
std::string printable_lines(std::string_view text);

// Why `name` is not usable as a device's name or alias ("" when it is): empty, not UTF-8,
// holding '/' (find_device() takes it for a path) or a control character (a terminal would
// obey an escape sequence), or starting or ending with a space (matched as written, it would
// look like another name).
std::string name_problem(std::string_view name);

}  // namespace edgeprof::detail
