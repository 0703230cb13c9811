// A line on stderr from a path that must not throw (a destructor, a noexcept close): fmt::print
// throws when stderr cannot be written (a closed pipe, a terminal hung up), which there is
// std::terminate.
#pragma once

#include <string_view>

namespace edgeprof::detail {

// Writes "edgeprof: ", `message` and a newline to stderr with write(2), retried on EINTR and
// after a short write; a failure is ignored (there is nowhere else to say it).
void say_on_stderr(std::string_view message) noexcept;

}  // namespace edgeprof::detail
