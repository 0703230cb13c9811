// A user without root in a delegated cgroup v2 subtree (issue 36): what works, what is refused
// and how, and that nothing is left. Run by the ctest tier cpp-cgroup-v2-vm-unprivileged:
// tests/vm/run-v2.sh with EDGEPROF_VM_RUNNER=user runs this binary as uid 65534 alone in a
// subtree delegated to it with cpu, memory and pids only (no cpuset, no io), as systemd's
// Delegate=yes gives a user's service. Anywhere else (root, cgroup v1, outside that VM) these
// tests skip; the v1 case is in test_kernel.cpp.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cgroup/files.hpp"
#include "sys/fs.hpp"
#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using edgeprof::test::FakeTree;
using edgeprof::test::workload;
namespace files = edgeprof::detail::files;

namespace {

// This process's own cgroup directory, on a cgroup v2 mount.
std::string own_cgroup_dir() {
  std::ifstream in(files::kProcSelfCgroup);
  std::string line;
  std::getline(in, line);  // "0::/path"
  return "/sys/fs/cgroup" + line.substr(line.find("::") + 2);
}

bool delegated_user() {
  const char* layout = std::getenv("EDGEPROF_VM_RUNNER");
  if (layout && std::string(layout) == "user") {
    // The VM's user layout: a skip here would be a tier that cannot fail.
    REQUIRE(::geteuid() != 0);
    REQUIRE(cgroup_mode() == CgroupMode::unified);
    return true;
  }
  if (::geteuid() == 0 || !std::getenv("EDGEPROF_IN_VM") ||
      cgroup_mode() != CgroupMode::unified) {
    WARN("skipped: runs as a user without root in the v2 VM (tests/vm/run-v2.sh, "
         "EDGEPROF_VM_RUNNER=user; ctest cpp-cgroup-v2-vm-unprivileged)");
    return false;
  }
  return true;
}

// The slices this process made that are still there, below its own cgroup's parent.
std::vector<std::string> slices_left() {
  return edgeprof::test::our_slices(std::filesystem::path(own_cgroup_dir()).parent_path());
}

bool says(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("unprivileged (v2, cpu memory pids delegated): the limits it may set are set, the "
          "cpuset is named as not applied, a timeout and an OOM kill are clean",
          "[unprivileged]") {
  if (!delegated_user()) return;
  INFO("own cgroup " << own_cgroup_dir());
  SliceOptions options;
  options.allow_missing_controllers = true;
  {
    Slice slice(make_device("user-board", 2, 0.25, "96MiB"), options);
    const std::vector<std::string> paths = slice.paths();
    REQUIRE(paths.size() == 1);
    const std::string dir = paths.front();
    // The quota the plan computed, and the device's memory, in the slice's own files.
    const std::string cpu_max = FakeTree::slurp(dir + "/" + files::v2::kCpuMax);
    CHECK(cpu_max == std::to_string(slice.plan().cpu_quota_us) + " " +
                         std::to_string(slice.plan().cpu_period_us) + "\n");
    CHECK(FakeTree::slurp(dir + "/" + files::v2::kMemoryMax) ==
          std::to_string(96ull << 20) + "\n");
    CHECK(std::filesystem::exists(dir + "/" + files::v2::kPidsMax));
    // No cpuset: the kernel's file is absent and the plan's CPUs are not held.
    CHECK_FALSE(std::filesystem::exists(dir + "/" + files::v2::kCpusetCpus));

    const Result r = slice.spawn(workload({"spin", "0.3"})).wait();
    CAPTURE(to_text(r));
    CHECK(r.ok());
    CHECK(r.cpu_user_s + r.cpu_system_s > 0);
    CHECK(says(r.unapplied, "'cpuset'"));

    const Result slow =
        slice.spawn(workload({"sleep", "30"})).wait(std::chrono::milliseconds(300));
    CHECK(slow.timed_out);
    CHECK(slow.signal == SIGKILL);
  }
  CHECK(slices_left().empty());
  // The memory limit holds, and its OOM kill is reported as such.
  RunOptions run_options;
  run_options.slice = options;
  const Result hog = run(workload({"touch", "256"}), make_device("user-board", 1, 1.0, "64MiB"),
                         run_options);
  CAPTURE(to_text(hog));
  CHECK(hog.oom_killed);
  CHECK(hog.signal == SIGKILL);
  CHECK(slices_left().empty());
}

TEST_CASE("unprivileged (v2, no cpuset delegated): a slice is refused naming the controller and "
          "the remedies, and nothing is left",
          "[unprivileged]") {
  if (!delegated_user()) return;
  try {
    Slice slice(make_device("user-board", 2, 0.25, "96MiB"));
    FAIL("a slice was made without the cpuset controller and without allow_missing_controllers");
  } catch (const Error& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(what.find("'cpuset'") != std::string::npos);
    CHECK(what.find("Delegate=") != std::string::npos);
    CHECK(what.find("--allow-missing") != std::string::npos);
  }
  CHECK(slices_left().empty());
}
