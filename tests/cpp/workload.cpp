// A small workload program for the tests: each mode exercises one thing a slice must emulate or
// measure. It needs nothing but libc, so it also runs inside the cgroup v2 VM.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Busy-loops on `threads` threads for `seconds` of wall time.
int spin(double seconds, int threads) {
  auto until = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([until] {
      volatile unsigned long x = 0;
      while (Clock::now() < until) {
        for (int i = 0; i < 10000; ++i) x = x + static_cast<unsigned long>(i);
      }
    });
  }
  for (auto& t : pool) t.join();
  return 0;
}

// Allocates and touches `mib` MiB (so every page is really charged), then holds it.
int touch(long mib, double hold_seconds) {
  const size_t bytes = static_cast<size_t>(mib) << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  std::memset(p, 0xA5, bytes);
  std::this_thread::sleep_for(std::chrono::duration<double>(hold_seconds));
  return 0;
}

int print_file(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (!f) return 2;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) std::fwrite(buf, 1, n, stdout);
  std::fclose(f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i, double fallback) { return argc > i ? std::atof(argv[i]) : fallback; };
  if (mode == "spin") return spin(arg(2, 1.0), static_cast<int>(arg(3, 1)));
  if (mode == "touch") return touch(static_cast<long>(arg(2, 64)), arg(3, 0));
  if (mode == "exit") return static_cast<int>(arg(2, 0));
  if (mode == "sleep") {
    std::this_thread::sleep_for(std::chrono::duration<double>(arg(2, 1)));
    return 0;
  }
  if (mode == "cgroup") return print_file("/proc/self/cgroup");
  if (mode == "env") {
    const char* v = std::getenv(argc > 2 ? argv[2] : "EDGEPROF_TEST");
    std::printf("%s\n", v ? v : "(unset)");
    return 0;
  }
  if (mode == "cwd") {
    char buf[4096];
    std::printf("%s\n", getcwd(buf, sizeof buf) ? buf : "?");
    return 0;
  }
  if (mode == "fork-sleep") {
    // Leaves a grandchild behind that outlives this process: the slice must still kill it.
    if (fork() == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return 0;
    }
    return 0;
  }
  std::fprintf(stderr,
               "usage: %s spin SECONDS [THREADS] | touch MIB [HOLD_S] | exit N | sleep S | "
               "cgroup | env NAME | cwd | fork-sleep\n",
               argv[0]);
  return 64;
}
