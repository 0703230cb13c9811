// A small workload program for the tests: each mode exercises one thing a slice must emulate or
// measure. It needs nothing but libc, so it also runs inside the cgroup v2 VM.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <edgeprof/phase.hpp>

#include <cerrno>
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

// Busy-loops on `threads` threads until `path` exists: the test creates it once it has seen what it
// waits for (the kernel throttling the slice, a quota changed), however long that takes.
int spin_until(const char* path, int threads) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([path] {
      volatile unsigned long x = 0;
      while (::access(path, F_OK) != 0) {
        for (int i = 0; i < 100000; ++i) x = x + static_cast<unsigned long>(i);
      }
    });
  }
  for (auto& t : pool) t.join();
  return 0;
}

// A fixed amount of work: busy-loops until this thread has used `cpu_seconds` of CPU, then
// sleeps `sleep_seconds`. Under a quota of speed x one core it takes cpu / speed + sleep.
int work(double cpu_seconds, double sleep_seconds) {
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  const double until = cpu_now() + cpu_seconds;
  volatile unsigned long x = 0;
  while (cpu_now() < until) {
    for (int i = 0; i < 10000; ++i) x = x + static_cast<unsigned long>(i);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(sleep_seconds));
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

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// What the kernel says about this process, for cross-checks: CPU seconds, peak RSS (KiB) from
// getrusage and VmHWM (KiB) from /proc/self/status.
void report_self(long long started_ns) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  long hwm = -1;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "VmHWM: %ld kB", &hwm) == 1) break;
    }
    std::fclose(f);
  }
  std::printf("utime=%.6f stime=%.6f maxrss_kib=%ld vmhwm_kib=%ld start_ns=%lld end_ns=%lld\n",
              double(u.ru_utime.tv_sec) + double(u.ru_utime.tv_usec) / 1e6,
              double(u.ru_stime.tv_sec) + double(u.ru_stime.tv_usec) / 1e6, u.ru_maxrss, hwm,
              started_ns, monotonic_ns());
  std::fflush(stdout);
}

// `count` phases named "step", each spinning `cpu_ms` of CPU time (the quota's ms, not the
// clock's).
int short_phases(int count, double cpu_ms) {
  for (int i = 0; i < count; ++i) {
    edgeprof::ScopedPhase step("step");
    timespec start{}, now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    do {
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    } while (double(now.tv_sec - start.tv_sec) * 1e3 + double(now.tv_nsec - start.tv_nsec) / 1e6 <
             cpu_ms);
  }
  return 0;
}

// Phases a profiler should see: load (32 MiB touched), compute (0.3 s of CPU), and an explicit
// idle phase (0.2 s asleep).
int phases() {
  std::printf("profiled=%d\n", edgeprof::profiled() ? 1 : 0);
  std::fflush(stdout);
  edgeprof::mark("load");
  // Ten 5 ms samples before the touch: the phase's baseline, the last sample stamped at or
  // before the mark, may read memory a moment after its stamp (tens of ms on a loaded host),
  // and counted part of the buffer as baseline.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const size_t bytes = size_t{32} << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  std::memset(p, 0x5A, bytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  edgeprof::mark("compute");
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  spin(0.3, 1);
  getrusage(RUSAGE_SELF, &after);
  auto seconds = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
  std::printf("spin_cpu=%.6f\n", seconds(after.ru_utime) - seconds(before.ru_utime) +
                                      seconds(after.ru_stime) - seconds(before.ru_stime));
  std::fflush(stdout);
  {
    edgeprof::ScopedPhase idle("idle");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  munmap(p, bytes);
  return 0;
}

// Sends `bytes` to itself over TCP on 127.0.0.1 (works with only loopback up).
int loopback(long bytes) {
  int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(server, 1) != 0 ||
      getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("loopback server");
    return 3;
  }
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("loopback connect");
    return 3;
  }
  int peer = accept(server, nullptr, nullptr);
  std::thread sender([&] {
    std::vector<char> chunk(65536, 'x');
    long left = bytes;
    while (left > 0) {
      ssize_t n = send(client, chunk.data(), static_cast<size_t>(std::min<long>(left, 65536)), 0);
      if (n <= 0) break;
      left -= n;
    }
    shutdown(client, SHUT_WR);
  });
  char buf[65536];
  long got = 0;
  ssize_t n;
  while ((n = recv(peer, buf, sizeof buf, 0)) > 0) got += n;
  sender.join();
  std::printf("received=%ld\n", got);
  return got == bytes ? 0 : 4;
}

// Writes `mib` MiB to `path` with O_DIRECT (past the page cache, so the block layer counts it),
// reads it back the same way, and removes the file. Exit 5 when the filesystem refuses O_DIRECT
// (tmpfs).
int direct_io(const char* path, long mib) {
  const int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0600);
  if (fd < 0) {
    std::perror(path);
    return errno == EINVAL ? 5 : 3;
  }
  const size_t chunk = 1 << 20;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, chunk) != 0) return 2;
  std::memset(buf, 0x42, chunk);
  int rc = 0;
  for (long i = 0; i < mib && rc == 0; ++i) {
    if (write(fd, buf, chunk) != static_cast<ssize_t>(chunk)) rc = errno == EINVAL ? 5 : 3;
  }
  for (long i = 0; i < mib && rc == 0; ++i) {
    if (pread(fd, buf, chunk, static_cast<off_t>(i) * static_cast<off_t>(chunk)) !=
        static_cast<ssize_t>(chunk)) {
      rc = 3;
    }
  }
  close(fd);
  unlink(path);
  std::free(buf);
  return rc;
}

// Writes `mib` MiB through the page cache, then fsyncs when `sync`. The file stays.
int buffered_write(const char* path, long mib, bool sync) {
  const int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) {
    std::perror(path);
    return 3;
  }
  std::vector<char> buf(1 << 20, 0x42);
  int rc = 0;
  for (long i = 0; i < mib && rc == 0; ++i) {
    if (write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) rc = 3;
  }
  if (rc == 0 && sync && fsync(fd) != 0) rc = 3;
  close(fd);
  return rc;
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
  const long long started = monotonic_ns();
  const std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i, double fallback) { return argc > i ? std::atof(argv[i]) : fallback; };
  if (mode == "spin") return spin(arg(2, 1.0), static_cast<int>(arg(3, 1)));
  if (mode == "spin-until" && argc > 2) return spin_until(argv[2], static_cast<int>(arg(3, 1)));
  if (mode == "work") return work(arg(2, 0.1), arg(3, 0));
  if (mode == "touch") return touch(static_cast<long>(arg(2, 64)), arg(3, 0));
  if (mode == "exit") return static_cast<int>(arg(2, 0));
  if (mode == "spin-report") {
    spin(arg(2, 1.0), static_cast<int>(arg(3, 1)));
    report_self(started);
    return 0;
  }
  if (mode == "touch-report") {
    if (int rc = touch(static_cast<long>(arg(2, 64)), arg(3, 0))) return rc;
    report_self(started);
    return 0;
  }
  if (mode == "phases") return phases();
  if (mode == "short-phases") return short_phases(static_cast<int>(arg(2, 40)), arg(3, 1.0));
  if (mode == "direct-io" && argc > 3) return direct_io(argv[2], static_cast<long>(arg(3, 8)));
  if (mode == "buffered-write" && argc > 3) {
    return buffered_write(argv[2], static_cast<long>(arg(3, 8)),
                          argc > 4 && std::string(argv[4]) == "fsync");
  }
  if (mode == "loopback") return loopback(static_cast<long>(arg(2, 1 << 20)));
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
    // Leaves a grandchild behind that outlives this process: the slice must still kill it. It
    // sleeps far longer than a test, however slow, takes to look for it there.
    if (fork() == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(600));
      return 0;
    }
    return 0;
  }
  if (mode == "fork-mark" && argc > 3) {
    // Leaves a grandchild in the slice that, once GO exists, marks phase "leftover", then
    // creates DONE and sleeps far longer than a test (the slice kills it). SIGPIPE stays at
    // its default: a mark into a pipe whose read end was closed kills it (it never creates DONE).
    if (fork() == 0) {
      while (access(argv[2], F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      edgeprof::mark("leftover");
      if (FILE* f = std::fopen(argv[3], "w")) std::fclose(f);
      std::this_thread::sleep_for(std::chrono::seconds(600));
      _exit(0);
    }
    return 0;
  }
  if (mode == "wait-for" && argc > 2) {
    // Sleeps until PATH exists.
    while (access(argv[2], F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 0;
  }
  if (mode == "fork-sleepers") {
    // N children asleep far longer than a test; this process waits for them (for ever).
    const long n = static_cast<long>(arg(2, 1));
    for (long i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid < 0) return 1;
      if (pid == 0) {
        std::this_thread::sleep_for(std::chrono::seconds(600));
        _exit(0);
      }
    }
    while (wait(nullptr) > 0) {
    }
    return 0;
  }
  std::fprintf(stderr,
               "usage: %s spin SECONDS [THREADS] | spin-report SECONDS [THREADS] | spin-until PATH [THREADS] | "
               "work CPU_S [SLEEP_S] | touch MIB "
               "[HOLD_S] | touch-report MIB [HOLD_S] | phases | loopback BYTES | direct-io PATH MIB | "
               "buffered-write PATH MIB [fsync] | exit N | "
               "sleep S | cgroup | env NAME | cwd | fork-sleep | fork-mark GO DONE | wait-for PATH | fork-sleepers N\n",
               argv[0]);
  return 64;
}
