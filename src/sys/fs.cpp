#include "sys/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace edgeprof::detail {

bool is_permission(int err) { return err == EACCES || err == EPERM || err == EROFS; }

void occupy_closed_stdio() noexcept {
  const auto any_closed = [] {
    for (int fd = 0; fd <= 2; ++fd) {
      if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) return true;
    }
    return false;
  };
  // open() takes the lowest free number: a closed one of 0-2 while there is one. Never dup2
  // over a number: another thread may have just opened a file there. Inherited by children as
  // stdio is (no O_CLOEXEC).
  while (any_closed()) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null < 0) return;
    if (null > 2) {  // another thread took the closed number first
      ::close(null);
      return;
    }
  }
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string sys_message(int err, std::string_view action, std::string_view path,
                        std::string_view hint) {
  std::string message = fmt::format("{} {}: {} (errno {})", action, path, std::strerror(err), err);
  if (!hint.empty()) {
    message += fmt::format(". {}", hint);
  } else if (is_permission(err)) {
    message += fmt::format(
        ". edgeprof needs write access to the cgroup it creates slices in: run as root, or "
        "under a delegated systemd scope (systemd-run --user --scope -p Delegate=yes ...), or "
        "set EDGEPROF_CGROUP_PARENT to a cgroup you own");
  }
  return message;
}

void throw_sys_error(int err, std::string_view action, std::string_view path,
                     std::string_view hint) {
  std::string message = sys_message(err, action, path, hint);
  if (is_permission(err)) throw PermissionDenied(message, err);
  throw CgroupError(message, err);
}

namespace {

// Reads `fd` to its end into `out`: 0, EFBIG once more than `max_bytes` were read, or the
// read's errno.
int read_to_end(int fd, std::string& out, std::size_t max_bytes) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) return EFBIG;
  }
}

}  // namespace

std::optional<std::string> Fs::read(std::string_view path, int* err) const {
  const std::string full = resolve(path);
  UniqueFd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  const int e = fd.get() < 0 ? errno : read_to_end(fd.get(), out, out.max_size());
  if (e != 0) {
    if (err) *err = e;
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> Fs::read_user_file(std::string_view path, std::size_t max_bytes,
                                              int* err) const {
  const std::string full = resolve(path);
  auto fail = [err](int e) -> std::optional<std::string> {
    if (err) *err = e;
    return std::nullopt;
  };
  // O_NONBLOCK: the open of a FIFO without a writer returns at once, to be refused below.
  int fd_or_error;
  do {
    fd_or_error = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  } while (fd_or_error < 0 && errno == EINTR);
  UniqueFd fd(fd_or_error);
  if (fd.get() < 0) return fail(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(errno);
  if (!S_ISREG(st.st_mode)) return fail(EINVAL);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) return fail(EFBIG);
  // Blocking again for the read: a regular file's read ignores it, but not a lease's wait.
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) {
    return fail(errno);
  }
  std::string out;
  if (const int e = read_to_end(fd.get(), out, max_bytes)) return fail(e);  // EFBIG: it grew
  return out;
}

std::string user_file_problem(int err, std::size_t max_bytes) {
  if (err == EINVAL) return "is not a regular file (a directory, FIFO or device)";
  if (err == EFBIG) return fmt::format("is larger than {} MiB", max_bytes >> 20);
  return fmt::format("cannot be read: {} (errno {})", std::strerror(err), err);
}

std::string Fs::read_or_throw(std::string_view path) const {
  int err = 0;
  auto text = read(path, &err);
  if (!text) throw_sys_error(err, "cannot read", resolve(path));
  return *text;
}

int Fs::write(std::string_view path, std::string_view value) const {
  const std::string full = resolve(path);
  UniqueFd fd(::open(full.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (fd.get() < 0) return errno;
  for (;;) {
    ssize_t n = ::write(fd.get(), value.data(), value.size());
    if (n >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

void Fs::write_or_throw(std::string_view path, std::string_view value,
                        std::string_view hint) const {
  if (int err = write(path, value)) {
    throw_sys_error(err, fmt::format("cannot write '{}' to", value), resolve(path), hint);
  }
}

bool Fs::exists(std::string_view path) const {
  return ::access(resolve(path).c_str(), F_OK) == 0;
}

int Fs::mkdir(std::string_view path) const {
  return ::mkdir(resolve(path).c_str(), 0755) == 0 ? 0 : errno;
}

int Fs::rmdir(std::string_view path) const {
  return ::rmdir(resolve(path).c_str()) == 0 ? 0 : errno;
}

std::vector<std::string> Fs::subdirs(std::string_view path) const {
  std::vector<std::string> out;
  DIR* dir = ::opendir(resolve(path).c_str());
  if (!dir) return out;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_type != DT_DIR) continue;
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    out.emplace_back(name);
  }
  ::closedir(dir);
  return out;
}

std::optional<long> Fs::fs_type(std::string_view path) const {
  struct statfs st {};
  if (::statfs(resolve(path).c_str(), &st) != 0) return std::nullopt;
  return static_cast<long>(st.f_type);
}

StatFile::StatFile(const Fs& fs, std::string_view path)
    : fd_(::open(fs.resolve(path).c_str(), O_RDONLY | O_CLOEXEC)), path_(path) {
  if (!ok()) error_ = errno;
}

std::string StatFile::error() const {
  return ok() ? std::string() : sys_message(error_, "opening", path_);
}

std::optional<std::string> StatFile::read() const {
  if (!ok()) return std::nullopt;
  std::string out;
  char buf[4096];
  for (off_t offset = 0;;) {
    ssize_t n = ::pread(fd_.get(), buf, sizeof buf, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    offset += n;
    if (static_cast<size_t>(n) < sizeof buf) break;  // a short read of a seq_file is its end
  }
  return out;
}

std::optional<std::string_view> StatFile::read_into(char* buffer, size_t capacity) const {
  if (!ok()) return std::nullopt;
  size_t used = 0;
  for (;;) {
    if (used == capacity) {  // might be truncated: do not parse half
      errno = EFBIG;
      return std::nullopt;
    }
    ssize_t n = ::pread(fd_.get(), buffer + used, capacity - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) return std::string_view(buffer, used);
    used += static_cast<size_t>(n);
    // cgroup and /proc stat files are seq_files: a read fills the buffer unless the content
    // ends, so a short read is the end (and the extra read that would say so is saved).
    if (used < capacity) return std::string_view(buffer, used);
  }
}

std::string join(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (b.empty()) return a.empty() ? std::string("/") : std::string(a);
  return std::string(a) + "/" + std::string(b);
}

std::optional<std::string> disk_under(const Fs& fs, const char* path, std::string* problem) {
  struct stat st {};
  if (::stat(path, &st) != 0) {
    *problem = fmt::format("cannot stat {}: {}", path, std::strerror(errno));
    return std::nullopt;
  }
  if (major(st.st_dev) == 0) {
    *problem = fmt::format("{} is on a filesystem without a block device (tmpfs, overlay, NFS)",
                           std::string_view(path) == "." ? "the current directory" : path);
    return std::nullopt;
  }
  const std::string dev = fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
  const std::string sys = "/sys/dev/block/" + dev;
  if (fs.exists(sys + "/partition")) {
    if (auto parent = fs.read(sys + "/../dev")) {
      std::string d = *parent;
      while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
      return d;
    }
    *problem = fmt::format("cannot find the disk of partition {}", dev);
    return std::nullopt;
  }
  if (fs.exists(sys)) return dev;
  *problem = fmt::format("block device {} is not in /sys/dev/block", dev);
  return std::nullopt;
}

}  // namespace edgeprof::detail
