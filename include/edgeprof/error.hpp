/// @file
/// The one exception family thrown by edgeprof's public API.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// Base of every error edgeprof throws. The message names what was wrong (file, value, errno)
/// and what to do about it; `sys_errno()` is the errno behind it, or 0.
class Error : public std::runtime_error {
 public:
  /// An error with `message` as its what(), caused by errno `sys_errno` (0 = none).
  explicit Error(const std::string& message, int sys_errno = 0)
      : std::runtime_error(message), errno_(sys_errno) {}
  /// The errno of the failed system call behind the error, or 0.
  int sys_errno() const noexcept { return errno_; }

 private:
  int errno_;
};

/// A device description or size string is invalid (bad field, bad value).
class DeviceError : public Error {
 public:
  using Error::Error;
};

/// The host cannot emulate what was asked (too little capacity, missing controller, ...).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

/// The caller may not create or change the cgroups it needs (EACCES, EPERM, EROFS), or lacks
/// the capability a feature needs (CAP_SYS_ADMIN for SpawnOptions::isolate_network).
class PermissionDenied : public Error {
 public:
  using Error::Error;
};

/// A cgroup file operation failed for another reason.
class CgroupError : public Error {
 public:
  using Error::Error;
};

/// The workload could not be started: no such file, not executable, bad working directory...
/// `path()` is the file that failed. Also: its exit status could not be collected (SIGCHLD
/// ignored, or the workload reaped by another wait in this process).
class SpawnError : public Error {
 public:
  /// An error about `path` (empty when no file is to blame), caused by errno `sys_errno`.
  SpawnError(const std::string& message, int sys_errno, std::string path)
      : Error(message, sys_errno), path_(std::move(path)) {}
  /// The file the error is about: the program, the working directory or a stdio file; empty
  /// when there is none (an empty command, a bad descriptor).
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

}  // namespace edgeprof
EDGEPROF_API_END
