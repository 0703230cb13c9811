// Starting one of the library's own threads (a sampler, a speed schedule, a core placer): the
// system's refusal (EAGAIN: a limit on threads or processes reached) becomes an edgeprof::Error
// that names the thread and what to do, not a bare std::system_error.
#pragma once

#include <fmt/format.h>

#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "edgeprof/error.hpp"

namespace edgeprof::detail {

template <class F>
std::thread start_thread(std::string_view what, F&& body) {
  try {
    return std::thread(std::forward<F>(body));
  } catch (const std::system_error& e) {
    throw Error(fmt::format("cannot start {}: {} (errno {}); a limit on threads or processes may "
                            "have been reached (ulimit -u, the cgroup's pids.max, "
                            "kernel.threads-max)",
                            what, e.code().message(), e.code().value()),
                e.code().value());
  }
}

}  // namespace edgeprof::detail
