// What glibc 2.36 lacks for spawning: clone3 with a function on a stack of the child's own
// (what glibc does internally for posix_spawn), and the numbers of newer system calls.
// Private to edgeprof (and its benchmark).
#pragma once

#include <sys/syscall.h>

#include <cstdint>

// System call numbers (x86-64 and aarch64 share them) for headers older than the kernel.
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

namespace edgeprof::detail {

// clone3's argument, as in <linux/sched.h> (CLONE_ARGS_SIZE_VER2), spelt out here because that
// header clashes with glibc's <sched.h>.
struct CloneArgs {
  std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
      set_tid, set_tid_size, cgroup;
};
inline constexpr std::uint64_t kCloneVm = 0x100;
inline constexpr std::uint64_t kCloneVfork = 0x4000;
inline constexpr std::uint64_t kClonePidfd = 0x1000;
inline constexpr std::uint64_t kCloneIntoCgroup = 0x200000000ULL;
inline constexpr unsigned kCloseRangeCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC, Linux 5.11

// The sanitizers cannot follow a child that shares this process's memory on a stack of its own
// (ASan reports its frames as stack-buffer-underflow, and the parent, waiting for the vfork
// child, hangs): a sanitized build (tests/run-sanitizers.sh) forks. GCC says so with
// __SANITIZE_*__, clang (before 2025) only through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(__SANITIZE_HWADDRESS__)
#define EDGEPROF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer) || __has_feature(hwaddress_sanitizer)
#define EDGEPROF_SANITIZED 1
#endif
#endif
// Elsewhere than x86-64 the fork path is used: a trampoline that cannot be tested here is not
// shipped.
#if defined(__x86_64__) && !defined(EDGEPROF_SANITIZED)
#define EDGEPROF_HAVE_CLONE3_TRAMPOLINE 1
#else
#define EDGEPROF_HAVE_CLONE3_TRAMPOLINE 0
#endif
inline constexpr bool kHaveClone3Trampoline = EDGEPROF_HAVE_CLONE3_TRAMPOLINE;

// clone3(args) with the child calling fn(arg) on the stack in args->stack and exiting with its
// result, as glibc's internal clone3.S does. The libc syscall() wrapper cannot be used with
// CLONE_VM: the child would return into the wrapper's frame on an empty stack. Returns the
// child's pid, or -errno (-ENOSYS where kHaveClone3Trampoline is false).
long clone3_with_fn(CloneArgs* args, int (*fn)(void*), void* arg);

}  // namespace edgeprof::detail
