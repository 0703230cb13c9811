#include "sys/netns.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "edgeprof/error.hpp"
#include "sys/thread.hpp"

namespace edgeprof::detail {

NetworkNamespace::NetworkNamespace() {
  int err = 0;
  std::string step;
  int dev_fd = -1;
  // unshare() moves only the calling thread: a thread of our own that ends right after, so no
  // thread of the caller changes namespace. The descriptors keep the namespace alive.
  std::thread worker = start_thread("a thread to make the network namespace", [&] {
    auto failed = [&](const char* what) {
      err = errno;
      step = what;
    };
    if (::unshare(CLONE_NEWNET) != 0) return failed("unshare(CLONE_NEWNET)");
    const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return failed("socket");
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (::ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) {
      ::close(sock);
      return failed("reading the flags of lo");
    }
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    if (::ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) {
      ::close(sock);
      return failed("bringing lo up");
    }
    ::close(sock);
    ns_fd_.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (ns_fd_.get() < 0) return failed("opening /proc/thread-self/ns/net");
    dev_fd = ::open("/proc/thread-self/net/dev", O_RDONLY | O_CLOEXEC);
    if (dev_fd < 0) return failed("opening /proc/thread-self/net/dev");
  });
  worker.join();
  if (err) {
    ns_fd_.reset();
    const std::string message = fmt::format(
        "cannot give the workload a network namespace of its own: {}: {} (errno {}){}", step,
        std::strerror(err), err,
        err == EPERM ? ". It needs CAP_SYS_ADMIN: run as root, or leave isolate_network off "
                       "(the workload then shares this machine's network and its traffic is "
                       "not reported)"
                     : "");
    if (err == EPERM || err == EACCES) throw PermissionDenied(message, err);
    throw Error(message, err);
  }
  dev_ = StatFile::adopt(dev_fd, "/proc/thread-self/net/dev (the workload's namespace)");
}

}  // namespace edgeprof::detail
