// capture_fixtures: records real cgroup v2 interface files for the parser tests in
// tests/fixtures/v2/. It runs inside the cgroup v2 test VM (tests/vm/run-v2.sh) as root and
// writes everything to /tmp/capture/, which run-v2.sh --capture copies back to the host.
// See tests/fixtures/v2/README.md for the exact command.
//
// What it does:
//   1. moves every process of its own cgroup into a leaf, so that it may enable controllers
//      for child cgroups (v2 "no internal processes" rule);
//   2. runs a short CPU + memory (+ block I/O) workload in child "workload" with
//      cpu.max "50000 100000" so throttling shows, and captures that cgroup's files while the
//      workload is still alive (so memory.current and pids.current are not zero);
//   3. runs a process that touches 64 MiB in child "oom" with memory.max 16M and captures
//      memory.events / memory.peak after it was OOM-killed.
// It also reports whether clone3(CLONE_INTO_CGROUP) and cgroup.kill work in this kernel.
//
// Build (from the checkout): g++ -std=c++20 -O2 -Wall -Wextra -I src -o capture_fixtures
// tests/vm/capture_fixtures.cpp
//
// It links nothing of edgeprof; the cgroup files' names come from src/cgroup/files.hpp (a header
// of names alone), and the captures it writes take those names.

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/sched.h>  // struct clone_args, CLONE_INTO_CGROUP
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cgroup/files.hpp"

namespace files = edgeprof::detail::files;

namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
constexpr const char* kCaptureDir = "/tmp/capture";
constexpr std::size_t kMiB = 1024 * 1024;

int g_failures = 0;

void Fail(const std::string& what) {
  std::fprintf(stderr, "capture_fixtures: FAILED: %s\n", what.c_str());
  ++g_failures;
}

std::string ErrnoText() { return std::strerror(errno); }

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// Cgroup files must be written with a single write(2); the kernel reports errors there.
bool WriteFile(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  int saved = errno;
  close(fd);
  errno = saved;
  return ok;
}

void MustWrite(const std::string& path, const std::string& value) {
  if (!WriteFile(path, value)) Fail("write '" + value + "' to " + path + ": " + ErrnoText());
}

// Copies one file into the capture directory under `name` (verbatim, byte for byte).
void Capture(const std::string& src, const std::string& name) {
  std::string content;
  if (!ReadFile(src, &content)) {
    Fail("read " + src + ": " + ErrnoText());
    return;
  }
  std::ofstream(std::string(kCaptureDir) + "/" + name, std::ios::binary) << content;
  std::printf("captured %-24s <- %s (%zu bytes)\n", name.c_str(), src.c_str(), content.size());
}

// Own cgroup path from the "0::<path>" line of /proc/self/cgroup.
std::string OwnCgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

// clone3() has no glibc wrapper in Debian 12. Without CLONE_VM the child runs on a copy of the
// parent's stack, exactly like fork(). Returns the pid, 0 in the child, -1 on error.
pid_t Clone3IntoCgroup(int cgroup_fd) {
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  return static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
}

bool clone3_worked = false;

// Starts `body` in a new process placed in cgroup `dir`: with clone3(CLONE_INTO_CGROUP) when the
// kernel has it (no window in which the child runs elsewhere), else fork() + cgroup.procs.
template <typename Body>
pid_t SpawnInto(const std::string& dir, Body body) {
  int cg_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  pid_t pid = cg_fd >= 0 ? Clone3IntoCgroup(cg_fd) : -1;
  if (pid < 0) {
    std::printf("clone3(CLONE_INTO_CGROUP) failed (%s); falling back to fork\n",
                ErrnoText().c_str());
    pid = fork();
    if (pid == 0 && !WriteFile(dir + "/" + files::kProcs, "0")) _exit(90);
  } else if (pid > 0) {
    clone3_worked = true;
  }
  if (cg_fd >= 0 && pid != 0) close(cg_fd);
  if (pid == 0) {
    body();
    _exit(0);
  }
  return pid;
}

// Touches every page so the memory is really charged to the cgroup.
char* TouchMemory(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0x5a, bytes);
  return static_cast<char*>(p);
}

// A RAM disk gives io.stat something to show (the VM has no other block device). brd.ko must be
// copied into the VM (EDGEPROF_VM_EXTRA); without it io.stat stays empty, which is noted.
std::string SetUpRamDisk() {
  utsname u{};
  uname(&u);
  std::string module = std::string("/lib/modules/") + u.release + "/kernel/drivers/block/brd.ko";
  int fd = open(module.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::printf("no %s in the VM: io.stat will be empty\n", module.c_str());
    return {};
  }
  long rc = syscall(SYS_finit_module, fd, "rd_nr=1 rd_size=16384", 0);
  close(fd);
  if (rc != 0 && errno != EEXIST) {
    std::printf("loading brd failed (%s): io.stat will be empty\n", ErrnoText().c_str());
    return {};
  }
  for (int i = 0; i < 100; ++i) {  // devtmpfs creates the node asynchronously
    if (access("/dev/ram0", R_OK | W_OK) == 0) return "/dev/ram0";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

// Direct I/O, so the reads and writes reach the device in this process's cgroup.
void DoBlockIo(const std::string& device) {
  int fd = open(device.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return;
  constexpr std::size_t kChunk = 256 * 1024;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, kChunk) != 0) return;
  std::memset(buf, 0xa5, kChunk);
  for (off_t off = 0; off < static_cast<off_t>(8 * kMiB); off += kChunk) {
    if (pwrite(fd, buf, kChunk, off) < 0) break;
  }
  for (off_t off = 0; off < static_cast<off_t>(4 * kMiB); off += kChunk) {
    if (pread(fd, buf, kChunk, off) < 0) break;
  }
  fsync(fd);
  free(buf);
  close(fd);
}

// The workload: 20 MiB touched, ~1 s of busy CPU (throttled to half by cpu.max), some block I/O;
// then it tells the parent it is done and waits to be killed.
void Workload(int ready_fd, const std::string& device) {
  Capture("/proc/self/cgroup", "proc_self_cgroup");
  char* mem = TouchMemory(20 * kMiB);
  if (mem == nullptr) _exit(91);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
  std::uint64_t sum = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (std::size_t i = 0; i < 20 * kMiB; i += 4096) sum += static_cast<unsigned char>(mem[i]++);
  }
  if (!device.empty()) DoBlockIo(device);
  char ok = sum != 0 ? 'y' : 'n';
  if (write(ready_fd, &ok, 1) != 1) _exit(92);
  for (;;) pause();
}

void CaptureWorkloadCgroup(const std::string& base, const std::string& device) {
  const std::string dir = base + "/workload";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Fail("mkdir " + dir);
  MustWrite(dir + "/" + files::v2::kCpuMax, "50000 100000");
  MustWrite(dir + "/" + files::v2::kMemoryMax, std::to_string(256 * kMiB));
  MustWrite(dir + "/" + files::v2::kPidsMax, "64");
  // memory.swap.max stays "max" on purpose: parsers must handle the literal.

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Fail("pipe2");
  pid_t pid = SpawnInto(dir, [&] { Workload(pipe_fds[1], device); });
  close(pipe_fds[1]);
  if (pid < 0) return Fail("spawn workload: " + ErrnoText());
  char ok = 0;
  if (read(pipe_fds[0], &ok, 1) != 1 || ok != 'y') Fail("workload did not finish its work");
  close(pipe_fds[0]);

  namespace v2 = files::v2;
  for (const char* f : {v2::kCpuStat, v2::kMemoryStat, v2::kMemoryEvents, v2::kMemoryPeak,
                        v2::kMemoryCurrent, v2::kMemoryMax, v2::kMemorySwapMax, v2::kCpuMax,
                        v2::kCpusetCpusEffective, v2::kPidsCurrent, v2::kPidsMax, v2::kIoStat,
                        v2::kControllers, v2::kSubtreeControl, v2::kCpuPressure,
                        v2::kMemoryPressure, v2::kIoPressure, v2::kEvents}) {
    Capture(dir + "/" + f, f);
  }

  // cgroup.kill (kernel >= 5.14) SIGKILLs the whole subtree.
  if (!WriteFile(dir + "/" + files::v2::kKill, "1")) {
    std::printf("cgroup.kill: %s; using kill(2)\n", ErrnoText().c_str());
    kill(pid, SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::printf("cgroup.kill: workload ended by %s\n",
              WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? "SIGKILL (works)" : "other");
  if (rmdir(dir.c_str()) != 0) Fail("rmdir " + dir + ": " + ErrnoText());
}

void CaptureOomCgroup(const std::string& base) {
  const std::string dir = base + "/oom";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Fail("mkdir " + dir);
  MustWrite(dir + "/" + files::v2::kMemoryMax, "16M");
  MustWrite(dir + "/" + files::v2::kMemorySwapMax, "0");  // no swap in the VM anyway; be explicit
  pid_t pid = SpawnInto(dir, [] { TouchMemory(64 * kMiB); });
  if (pid < 0) return Fail("spawn oom child: " + ErrnoText());
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    std::printf("oom child was OOM-killed as expected\n");
  } else {
    Fail("oom child was not OOM-killed (status " + std::to_string(status) + ")");
  }
  Capture(dir + "/" + files::v2::kMemoryEvents, std::string(files::v2::kMemoryEvents) + ".oom");
  Capture(dir + "/" + files::v2::kMemoryPeak, std::string(files::v2::kMemoryPeak) + ".oom");
  if (rmdir(dir.c_str()) != 0) Fail("rmdir " + dir + ": " + ErrnoText());
}

}  // namespace

int main() {
  // This program rearranges cgroups as root: never let it loose on a real machine.
  struct statfs fs{};
  if (std::getenv("EDGEPROF_IN_VM") == nullptr || statfs(kCgroupRoot, &fs) != 0 ||
      fs.f_type != CGROUP2_SUPER_MAGIC) {
    std::fprintf(stderr, "capture_fixtures: run me through tests/vm/run-v2.sh (cgroup v2 VM)\n");
    return 2;
  }
  mkdir(kCaptureDir, 0755);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // Our cgroup (/runner) also holds the init shell. A cgroup with processes cannot enable
  // controllers for its children, so move every process into a leaf first.
  const std::string base = std::string(kCgroupRoot) + OwnCgroup();
  const std::string leaf = base + "/leaf";
  if (mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) Fail("mkdir " + leaf);
  std::string procs;
  ReadFile(base + "/" + files::kProcs, &procs);
  std::istringstream pids(procs);
  for (std::string pid; pids >> pid;) {
    if (!WriteFile(leaf + "/" + files::kProcs, pid) && errno != ESRCH) Fail("move " + pid);
  }
  for (const char* c : {"cpuset", "cpu", "io", "memory", "pids"}) {
    MustWrite(base + "/" + files::v2::kSubtreeControl, std::string("+") + c);
  }

  Capture("/proc/self/mounts", "proc_mounts");
  Capture("/proc/self/mountinfo", "mountinfo");
  CaptureWorkloadCgroup(base, SetUpRamDisk());
  CaptureOomCgroup(base);
  std::printf("clone3(CLONE_INTO_CGROUP): %s\n", clone3_worked ? "works" : "not available");

  if (g_failures != 0) {
    std::fprintf(stderr, "capture_fixtures: %d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("capture_fixtures: all fixtures captured\n");
  return 0;
}
