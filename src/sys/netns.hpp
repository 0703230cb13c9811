// A network namespace of the workload's own, with only loopback up: an offline device whose
// network traffic can be counted exactly.
#pragma once

#include "sys/fs.hpp"

namespace edgeprof::detail {

class NetworkNamespace {
 public:
  // Creates the namespace (from a short-lived thread, so this process stays where it is) and
  // brings loopback up. Throws PermissionDenied without CAP_SYS_ADMIN, Error otherwise.
  NetworkNamespace();
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;

  // For setns(fd, CLONE_NEWNET) in the child.
  int fd() const { return ns_fd_.get(); }
  // net/dev of the namespace, opened inside it (once; later calls return a closed file).
  StatFile take_dev() { return std::move(dev_); }

 private:
  UniqueFd ns_fd_;
  StatFile dev_;
};

}  // namespace edgeprof::detail
