#include "sys/stderr.hpp"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace edgeprof::detail {

void say_on_stderr(std::string_view message) noexcept {
  std::string line;
  try {
    line.reserve(message.size() + 11);
    line.append("edgeprof: ").append(message).push_back('\n');
  } catch (...) {  // out of memory: nothing to say it with
    return;
  }
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace edgeprof::detail
