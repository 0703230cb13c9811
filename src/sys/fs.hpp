// The one filesystem layer: every /sys/fs/cgroup and /proc access goes through Fs, whose root
// is injectable so tests can point a whole hierarchy at a temporary directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/error.hpp"

namespace edgeprof::detail {

// Host file names, in one place; the cgroup files are in cgroup/files.hpp.
namespace files {
inline constexpr const char* kProcSelfCgroup = "/proc/self/cgroup";
// This process as the mounted /proc numbers it (a symlink to its pid there), its stat and the
// file whose inode names its pid namespace.
inline constexpr const char* kProcSelf = "/proc/self";
inline constexpr const char* kProcSelfStat = "/proc/self/stat";
// Its status, whose "Umask:" line gives the umask without setting it.
inline constexpr const char* kProcSelfStatus = "/proc/self/status";
inline constexpr const char* kProcSelfNsPid = "/proc/self/ns/pid";
inline constexpr const char* kProcMeminfo = "/proc/meminfo";
inline constexpr const char* kProcSwaps = "/proc/swaps";
inline constexpr const char* kProcPartitions = "/proc/partitions";
inline constexpr const char* kProcCpuinfo = "/proc/cpuinfo";
// The host's pressure stall information (cgroup v1 has none of its own).
inline constexpr const char* kProcPressureCpu = "/proc/pressure/cpu";
inline constexpr const char* kProcPressureMemory = "/proc/pressure/memory";
inline constexpr const char* kProcPressureIo = "/proc/pressure/io";
// How much quota a CPU takes from a CFS bandwidth pool at a time (us).
inline constexpr const char* kProcCfsBandwidthSlice =
    "/proc/sys/kernel/sched_cfs_bandwidth_slice_us";
inline constexpr const char* kCgroupMount = "/sys/fs/cgroup";
// A thread's scheduler statistics, by thread id: its CPU time (ns) is the first field.
inline constexpr const char* kProcTidSchedstat = "/proc/{}/schedstat";
// A thread's status line, by thread id: its state is the field after the command's ")".
inline constexpr const char* kProcTidStat = "/proc/{}/stat";
// A process's memory mappings, by pid: the libraries a runtime has loaded.
inline constexpr const char* kProcPidMaps = "/proc/{}/maps";
}  // namespace files

class Fs;
// Why Fs::read_user_file() failed, for a message: "is not a regular file (a directory, FIFO or
// device)", "is larger than N MiB" or "cannot be read: <strerror> (errno N)".
std::string user_file_problem(int err, std::size_t max_bytes);
// The whole disk ("MAJ:MIN") holding `path` (stat(2) of the real path; /sys/dev/block read
// through `fs`: a partition's parent directory is its disk's), or nullopt with why in `problem`.
std::optional<std::string> disk_under(const Fs& fs, const char* path, std::string* problem);

// Whether errno `err` means "not allowed" (EACCES, EPERM, EROFS).
bool is_permission(int err);
// Opens /dev/null on each of this process's standard descriptors (0, 1, 2) that is closed, so
// that none of the library's long-lived descriptors (the phase pipe, the CPU ledger's slots,
// the cgroup files kept open) takes that number: the embedding program's writes to stdout, or
// reads of stdin, would reach it. Never throws; one that cannot be opened stays closed.
void occupy_closed_stdio() noexcept;
// The message for a failed system call on `path`: what was being done, the errno, and the
// remedy (`hint`, or for EACCES/EPERM/EROFS how to get write access).
std::string sys_message(int err, std::string_view action, std::string_view path,
                        std::string_view hint = {});
// Throws PermissionDenied for EACCES/EPERM/EROFS, CgroupError otherwise.
[[noreturn]] void throw_sys_error(int err, std::string_view action, std::string_view path,
                                  std::string_view hint = {});

// A file descriptor owned by one object: closed on destruction, movable.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

class Fs {
 public:
  // `root` is prefixed to every absolute path; "" is the real filesystem.
  explicit Fs(std::string root = {}) : root_(std::move(root)) {}

  std::string resolve(std::string_view path) const { return root_ + std::string(path); }
  const std::string& root() const { return root_; }

  // Reads a whole (small) file. nullopt and errno in *err on failure.
  std::optional<std::string> read(std::string_view path, int* err = nullptr) const;
  // Reads or throws an error naming the file.
  std::string read_or_throw(std::string_view path) const;
  // Reads a whole file a user named (a device file, a cached calibration): a regular file of at
  // most `max_bytes` only, since a FIFO would block the open for ever and /dev/zero never end.
  // nullopt and errno in *err on failure: the open's or read's, EINVAL for anything but a
  // regular file, EFBIG for one larger than `max_bytes` (user_file_problem() words them).
  std::optional<std::string> read_user_file(std::string_view path, std::size_t max_bytes,
                                            int* err = nullptr) const;
  // Writes `value` in a single write(2) (cgroup files want one value per write). 0 or errno.
  int write(std::string_view path, std::string_view value) const;
  void write_or_throw(std::string_view path, std::string_view value,
                      std::string_view hint = {}) const;
  bool exists(std::string_view path) const;
  int mkdir(std::string_view path) const;  // 0 or errno
  int rmdir(std::string_view path) const;  // 0 or errno
  // Names of the subdirectories of `path` (empty when it cannot be read).
  std::vector<std::string> subdirs(std::string_view path) const;
  // statfs f_type of `path`, or nullopt.
  std::optional<long> fs_type(std::string_view path) const;

 private:
  std::string root_;
};

// A small stat file opened once and re-read from offset 0 with pread: a kept fd costs well
// under a microsecond per read against about 6 for open/read/close (docs/benchmarks.md).
class StatFile {
 public:
  StatFile() = default;
  StatFile(const Fs& fs, std::string_view path);  // not ok() when the file is missing
  // Takes ownership of an open descriptor.
  static StatFile adopt(int fd, std::string path) {
    StatFile f;
    f.fd_.reset(fd);
    f.path_ = std::move(path);
    return f;
  }
  // Movable, not copyable: the descriptor is a UniqueFd.

  bool ok() const { return fd_.get() >= 0; }
  const std::string& path() const { return path_; }
  // Why the file could not be opened ("" when it is open).
  std::string error() const;
  // Reads the whole file; as read_into, a short read is taken as its end.
  std::optional<std::string> read() const;
  // Reads into `buffer` without allocating (the sampler's hot path): one pread when the content
  // is shorter than `capacity` (a short read of a seq_file is its end). nullopt on an error
  // (errno says which; EFBIG when the file does not fit in `capacity` bytes).
  std::optional<std::string_view> read_into(char* buffer, size_t capacity) const;

 private:
  UniqueFd fd_;
  std::string path_;
  int error_ = 0;  // errno of the failed open
};

// Joins cgroup paths without doubling slashes: join("/a/", "/b") == "/a/b".
std::string join(std::string_view a, std::string_view b);

}  // namespace edgeprof::detail
