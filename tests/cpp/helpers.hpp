// Test helpers: temporary fake trees, fixture lookup, and the paths of the helper programs.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "edgeprof/edgeprof.hpp"

namespace edgeprof::test {

// A directory tree in /tmp that a detail::Fs can be rooted at; removed on destruction.
class FakeTree {
 public:
  FakeTree() {
    char pattern[] = "/tmp/edgeprof-test-XXXXXX";
    root_ = ::mkdtemp(pattern);
  }
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return root_; }
  void file(const std::string& path, const std::string& content) const {
    std::filesystem::create_directories(std::filesystem::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << content;
  }
  // Overwrites in place without truncating, as a kernel counter changes under a reader: a
  // concurrent pread never sees an empty file. `content` must be as long as the old content.
  void overwrite(const std::string& path, const std::string& content) const {
    std::fstream f(root_ + path, std::ios::in | std::ios::out | std::ios::binary);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  void dir(const std::string& path) const { std::filesystem::create_directories(root_ + path); }
  std::string read(const std::string& path) const { return slurp(root_ + path); }
  bool exists(const std::string& path) const { return std::filesystem::exists(root_ + path); }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string root_;
};

// Sets an environment variable for one scope and restores the old value (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline std::string fixture(const std::string& name) {
  return FakeTree::slurp(std::string(EDGEPROF_FIXTURES) + "/" + name);
}

// The helper programs sit next to the test binary (also inside the VM, at the same path).
inline std::string helper(const std::string& name) {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / name;
}

// Whether this process may create slices; the reason is printed once when it may not.
inline bool can_create_slices() {
  static const bool ok = [] {
    try {
      edgeprof::Slice probe(edgeprof::make_device("probe", 1, 1.0, "64MiB"));
      return true;
    } catch (const edgeprof::PermissionDenied& e) {
      std::fprintf(stderr, "SKIPPING [kernel] tests: %s\n", e.what());
      return false;
    }
  }();
  return ok;
}

#define REQUIRE_CGROUPS()                                  \
  do {                                                     \
    if (!can_create_slices()) {                            \
      WARN("skipped: no permission to create cgroups");    \
      return;                                              \
    }                                                      \
  } while (0)

inline edgeprof::Command program(std::string path) {
  edgeprof::Command c;
  c.argv = {std::move(path)};
  return c;
}

inline edgeprof::Command workload(std::vector<std::string> args) {
  edgeprof::Command c;
  c.argv = {helper("edgeprof_workload")};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  return c;
}

}  // namespace edgeprof::test
