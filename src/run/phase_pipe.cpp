#include "run/phase_pipe.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "edgeprof/error.hpp"

namespace edgeprof::detail {

PhasePipe make_phase_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    throw Error(fmt::format("cannot create the phase pipe: {} (errno {})", std::strerror(err),
                            err),
                err);
  }
  PhasePipe p{UniqueFd(ends[0]), UniqueFd(ends[1]), {}};
  struct stat st {};
  if (::fstat(p.write.get(), &st) != 0) {
    const int err = errno;
    throw Error(fmt::format("cannot read the phase pipe's inode: {} (errno {})",
                            std::strerror(err), err),
                err);
  }
  p.env = fmt::format("{}:{}", p.write.get(), st.st_ino);
  return p;
}

}  // namespace edgeprof::detail
