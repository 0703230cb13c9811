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
#include <optional>
#include <string>

#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "edgeprof/edgeprof.hpp"
#include "sys/fs.hpp"
#include "helpers.hpp"
#include "sys/parse.hpp"

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

TEST_CASE("whole disks: disks of hardware only, partitions and empty devices left out",
          "[parse]") {
  FakeTree tree;
  tree.file(detail::files::kProcPartitions,
            "major minor  #blocks  name\n\n 254 0 1000 vda\n 254 1 999 vda1\n 7 0 0 loop0\n"
            " 1 0 64 ram0\n 7 1 500 loop1\n 259 0 2000 nvme0n1\n");
  tree.file("/sys/dev/block/254:0/device/vendor", "0x1af4\n");
  tree.file("/sys/dev/block/254:1/partition", "1\n");
  tree.file("/sys/dev/block/254:1/device/vendor", "0x1af4\n");  // as sysfs shows a partition's
  tree.file("/sys/dev/block/259:0/device/model", "x\n");
  tree.file("/sys/dev/block/1:0/size", "128\n");  // a RAM disk: no device
  tree.file("/sys/dev/block/7:1/size", "1000\n");  // a loop disk: no device
  const detail::Fs fs(tree.root());
  CHECK(detail::whole_disks(fs) == std::vector<std::string>{"254:0", "259:0"});
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
  // A slice counts the disks of hardware and the one under the current directory (the test
  // disk in the VM, a RAM disk).
  const std::filesystem::path previous = std::filesystem::current_path();
  if (dir && *dir) std::filesystem::current_path(dir);
  std::string problem;
  const auto disk = detail::disk_under(detail::Fs(), ".", &problem);
  REQUIRE(disk);
  std::optional<Slice> made;
  made.emplace(make_device("blkg", 1, 1.0, "64MiB"));
  std::filesystem::current_path(previous);
  Slice& slice = *made;
  for (const std::string& u : slice.unapplied()) {
    CHECK_THAT(u, !Catch::Contains("block I/O accounting"));
  }
  // v1 lists a line per block group in its service counters, zeros included; v2's io.stat
  // likewise names every block group it has.
  std::string listed;
  for (const std::string& path : slice.paths()) {
    for (const char* file : {detail::files::v1::kBlkioThrottleIoServiceBytesRecursive,
                             detail::files::v2::kIoStat}) {
      const std::string counters = detail::join(path, file);
      if (std::filesystem::exists(counters)) listed += FakeTree::slurp(counters);
    }
  }
  CAPTURE(*disk, listed);
  CHECK(listed.find(*disk + " ") != std::string::npos);
}
