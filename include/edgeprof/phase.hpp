/// @file
/// Phase marks for workloads: a program run under edgeprof tells the profiler where its phases
/// (load, warm-up, inference, ...) begin and end, and the report gives each phase its own wall
/// time, CPU time and memory.
///
/// Header-only and free of dependencies, so a C++ workload needs neither to link edgeprof nor
/// to know whether it runs under it: outside edgeprof every call is a cheap no-op (one load of a
/// cached flag).
///
/// The channel: edgeprof hands the workload the write end of a non-blocking pipe and names it
/// in the environment, `EDGEPROF_PHASE_FD=<fd>:<inode>`. The inode guards against writing into
/// an unrelated file that happens to have that number (the variable was inherited by a process
/// whose descriptors were closed). Each mark is one line, `<CLOCK_MONOTONIC ns> <B|E|M> <name>`
/// and a newline, written with one write() below PIPE_BUF, so concurrent marks from several
/// threads or processes never interleave. A mark that finds the pipe full is dropped, never
/// blocks.
#pragma once

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// The environment variable that names the phase channel to the workload.
inline constexpr const char* kPhaseEnv = "EDGEPROF_PHASE_FD";

namespace phase_detail {

/// The channel's fd, or -1 outside edgeprof; decided once per process.
inline int channel() {
  static const int fd = [] {
    const char* value = std::getenv(kPhaseEnv);
    if (!value) return -1;
    int fd_number = -1;
    unsigned long long inode = 0;
    if (std::sscanf(value, "%d:%llu", &fd_number, &inode) != 2 || fd_number < 0) return -1;
    struct stat st {};
    if (::fstat(fd_number, &st) != 0 || !S_ISFIFO(st.st_mode) ||
        static_cast<unsigned long long>(st.st_ino) != inode) {
      return -1;
    }
    return fd_number;
  }();
  return fd;
}

/// Writes one mark of `kind` ('B', 'E' or 'M') for phase `name`, stamped with the monotonic
/// clock; does nothing outside edgeprof.
inline void send(char kind, std::string_view name) {
  const int fd = channel();
  if (fd < 0) return;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  char line[256];
  int n = std::snprintf(line, sizeof line, "%lld %c ",
                        static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec, kind);
  if (n <= 0) return;
  // Names are one line of at most 200 bytes; anything else becomes '_'.
  size_t used = static_cast<size_t>(n);
  for (size_t i = 0; i < name.size() && i < 200; ++i) {
    const char c = name[i];
    line[used++] = (c == '\n' || c == '\r' || c == '\0') ? '_' : c;
  }
  line[used++] = '\n';
  ssize_t ignored = ::write(fd, line, used);  // EAGAIN (pipe full): the mark is dropped
  (void)ignored;
}

}  // namespace phase_detail

/// True when this process runs under edgeprof with a phase channel.
inline bool profiled() { return phase_detail::channel() >= 0; }

/// Starts phase `name`; the phase started by the previous mark() ends here. The last one ends
/// when the workload exits. The simplest way to split a program into consecutive phases.
/// A name is cut at 200 bytes, and line breaks and NULs in it become '_'.
inline void mark(std::string_view name) { phase_detail::send('M', name); }

/// Begins a phase explicitly (phases may nest; phase_end() closes it).
inline void phase_begin(std::string_view name) { phase_detail::send('B', name); }
/// Ends a phase explicitly: closes the latest open phase of that name.
inline void phase_end(std::string_view name) { phase_detail::send('E', name); }

/// A phase for the lifetime of a scope: `{ edgeprof::ScopedPhase p("inference"); run(); }`.
/// `name` must outlive the object (a string literal does).
class ScopedPhase {
 public:
  /// Begins phase `name` (phase_begin()).
  explicit ScopedPhase(std::string_view name) : name_(name) { phase_begin(name_); }
  /// Ends the phase (phase_end()).
  ~ScopedPhase() { phase_end(name_); }
  /// Not copyable: a copy would end the phase twice.
  ScopedPhase(const ScopedPhase&) = delete;
  /// Not copyable: a copy would end the phase twice.
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  std::string_view name_;
};

}  // namespace edgeprof
EDGEPROF_API_END
