#include "sys/clone3.hpp"

#include <cerrno>

namespace edgeprof::detail {

#if EDGEPROF_HAVE_CLONE3_TRAMPOLINE
long clone3_with_fn(CloneArgs* args, int (*fn)(void*), void* arg) {
  struct Entry {
    int (*fn)(void*);
    void* arg;
  } entry{fn, arg};
  long rc;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      // The child, on the new stack (16-byte aligned top); rdx survives the syscall.
      "xor %%ebp, %%ebp\n\t"
      "mov 8(%%rdx), %%rdi\n\t"
      "call *(%%rdx)\n\t"
      "mov %%eax, %%edi\n\t"
      "mov $60, %%eax\n\t"  // exit
      "syscall\n\t"
      "hlt\n\t"
      "1:\n\t"
      : "=a"(rc)
      : "0"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof(CloneArgs)), "d"(&entry)
      : "rcx", "r11", "memory", "cc");
  return rc;
}
#else
long clone3_with_fn(CloneArgs*, int (*)(void*), void*) { return -ENOSYS; }
#endif

}  // namespace edgeprof::detail
