// A slice's block groups: the kernel's per-(cgroup, disk) account of block I/O. Made lazily on
// a cgroup's first I/O with an allocation that may not sleep, and when that fails the I/O is
// charged to an ancestor without a word, so a slice makes them itself when it is created
// (detail::whole_disks). Parser on literal text; the kernel test on the host (v1) and in the VM.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cgroup/backend.hpp"
#include "edgeprof/edgeprof.hpp"
#include "fs.hpp"
#include "helpers.hpp"
#include "parse.hpp"

using namespace edgeprof;
using edgeprof::test::can_create_slices;
using edgeprof::test::FakeTree;

TEST_CASE("/proc/partitions: every device with its number and size", "[parse]") {
  const auto devices = detail::parse_partitions(
      "major minor  #blocks  name\n"
      "\n"
      " 254        0  268435456 vda\n"
      " 254        1  268434415 vda1\n"
      "   1        0      65536 ram0\n"
      "   7        0          0 loop0\n"
      "garbage line\n");
  REQUIRE(devices.size() == 4);
  CHECK(devices[0].dev == "254:0");
  CHECK(devices[0].name == "vda");
  CHECK(devices[0].blocks == 268435456u);
  CHECK(devices[1].dev == "254:1");
  CHECK(devices[2].dev == "1:0");
  CHECK(devices[3].blocks == 0);
  CHECK(detail::parse_partitions("").empty());
}

TEST_CASE("whole disks: partitions and empty devices left out", "[parse]") {
  FakeTree tree;
  tree.file("/proc/partitions",
            "major minor  #blocks  name\n\n 254 0 1000 vda\n 254 1 999 vda1\n 7 0 0 loop0\n"
            " 1 0 64 ram0\n");
  tree.file("/sys/dev/block/254:1/partition", "1\n");
  const detail::Fs fs(tree.root());
  CHECK(detail::whole_disks(fs) == std::vector<std::string>{"254:0", "1:0"});
}

TEST_CASE("a new slice has its block group of the disk before any I/O", "[kernel][io]") {
  REQUIRE_CGROUPS();
  // The disk the storage tests use: EDGEPROF_TEST_DISK in the VM, else the current directory.
  const char* dir = std::getenv("EDGEPROF_TEST_DISK");
  struct stat st {};
  REQUIRE(::stat(dir && *dir ? dir : ".", &st) == 0);
  if (major(st.st_dev) == 0) {
    WARN("skipped: the current directory has no block device (set EDGEPROF_TEST_DISK)");
    return;
  }
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  const detail::Fs fs;
  const auto disks = detail::whole_disks(fs);
  if (std::find(disks.begin(), disks.end(), dev) == disks.end()) {
    WARN("skipped: " << dev << " is a partition; its disk is tested instead only where it is whole");
    return;
  }
  Slice slice(make_device("blkg", 1, 1.0, "64MiB"));
  // v1 lists a line per block group in its service counters, zeros included; v2's io.stat
  // likewise names every block group it has.
  std::string listed;
  for (const std::string& path : slice.paths()) {
    for (const char* file : {"/blkio.throttle.io_service_bytes_recursive", "/io.stat"}) {
      if (std::filesystem::exists(path + file)) listed += FakeTree::slurp(path + file);
    }
  }
  CAPTURE(dev, listed);
  CHECK(listed.find(dev + " ") != std::string::npos);
}
