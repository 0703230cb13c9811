// The backends against fake cgroup trees: what they write where, and what they refuse.
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <thread>

#include "cgroup/backend.hpp"
#include "cgroup/files.hpp"
#include "run/runtime_follow.hpp"
#include "sampler/sources.hpp"
#include "edgeprof/error.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using namespace edgeprof::detail;
using edgeprof::test::FakeTree;

TEST_CASE("the cgroup mode is decided by the filesystem types", "[cgroup]") {
  CHECK(classify_mode(kCgroup2Magic, std::nullopt) == CgroupMode::unified);
  CHECK(classify_mode(kTmpfsMagic, kCgroup2Magic) == CgroupMode::hybrid);
  CHECK(classify_mode(kTmpfsMagic, std::nullopt) == CgroupMode::legacy);
  CHECK(classify_mode(kTmpfsMagic, kTmpfsMagic) == CgroupMode::legacy);
  CHECK(classify_mode(std::nullopt, std::nullopt) == CgroupMode::legacy);
}

namespace {

EmulationPlan sample_plan() {
  EmulationPlan plan;
  plan.cpus = {0, 1};
  plan.cpu_period_us = 10000;
  plan.cpu_quota_us = 5000;
  plan.memory_max_bytes = 64ull << 20;
  plan.swap_max_bytes = 16ull << 20;
  plan.pids_max = 100;
  return plan;
}

// The interface files the kernel would create in a new cgroup directory.
void kernel_files(const FakeTree& tree, const std::string& dir,
                  std::initializer_list<const char*> names) {
  for (const char* name : names) tree.file(dir + "/" + name, "");
}

// A v2 backend on `tree` for a caller in cgroup `own` (beneath /sys/fs/cgroup), whose
// cgroup.controllers and cgroup.subtree_control hold `controllers` and `subtree`.
std::unique_ptr<Backend> fake_v2(const FakeTree& tree, const std::string& own,
                                 const std::string& controllers, const std::string& subtree) {
  const std::string dir = "/sys/fs/cgroup" + own;
  tree.file(files::kProcSelfCgroup, "0::" + own + "\n");
  tree.file(join(dir, files::v2::kControllers), controllers + "\n");
  tree.file(join(dir, files::v2::kSubtreeControl), subtree + "\n");
  Layout layout{CgroupMode::unified, "/sys/fs/cgroup", {}};
  return make_v2_backend(Fs(tree.root()), layout, "");
}

// A v1 backend on `tree` with only the cpu and memory hierarchies, the caller at their roots.
std::unique_ptr<Backend> fake_v1_cpu_memory(const FakeTree& tree) {
  tree.file(files::kProcSelfCgroup, "3:cpu:/\n4:memory:/\n");
  tree.dir("/sys/fs/cgroup/cpu");
  tree.dir("/sys/fs/cgroup/memory");
  Layout layout{CgroupMode::legacy, "", {{"cpu", "/sys/fs/cgroup/cpu"}, {"memory", "/sys/fs/cgroup/memory"}}};
  return make_v1_backend(Fs(tree.root()), layout, "");
}

}  // namespace

TEST_CASE("v2: slices go beneath the caller's own cgroup with every limit written", "[cgroup]") {
  FakeTree tree;
  const std::string own = "/sys/fs/cgroup/user.slice/app.scope";
  auto backend = fake_v2(tree, "/user.slice/app.scope", "cpuset cpu io memory pids",
                         "cpuset cpu memory pids");
  CHECK(backend->mode() == CgroupMode::unified);

  auto cgroup = backend->create("edgeprof-1-2-3");
  const std::string dir = own + "/edgeprof-1-2-3";
  REQUIRE(tree.exists(dir));
  CHECK(cgroup->clone_fd() >= 0);
  kernel_files(tree, dir,
               {files::v2::kCpusetCpus, files::v2::kCpuMax, files::v2::kMemoryMax,
                files::v2::kMemorySwapMax, files::v2::kPidsMax, files::kProcs});
  std::vector<std::string> unapplied;
  cgroup->apply(sample_plan(), false, unapplied);
  CHECK(unapplied.empty());
  CHECK(tree.read(join(dir, files::v2::kCpusetCpus)) == "0-1");
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "5000 10000");
  CHECK(tree.read(join(dir, files::v2::kMemoryMax)) == "67108864");
  CHECK(tree.read(join(dir, files::v2::kMemorySwapMax)) == "16777216");
  CHECK(tree.read(join(dir, files::v2::kPidsMax)) == "100");
  // A quota of the whole cpuset is no limit: written as none, also by a speed schedule.
  EmulationPlan full = sample_plan();
  full.cpu_quota_us = 20000;
  cgroup->apply(full, false, unapplied);
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "max 10000");
  CHECK(cgroup->set_cpu_bandwidth(14000, 10000) == 0);
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "14000 10000");
  CHECK(cgroup->set_cpu_bandwidth(20000, 10000) == 0);
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "max 10000");
  cgroup->attach(4321);
  CHECK(tree.read(join(dir, files::kProcs)) == "4321");
  CHECK(backend->slice_names() == std::vector<std::string>{"edgeprof-1-2-3"});
  for (auto* f : {files::v2::kCpusetCpus, files::v2::kCpuMax, files::v2::kMemoryMax,
                  files::v2::kMemorySwapMax, files::v2::kPidsMax, files::kProcs}) {
    std::filesystem::remove(tree.root() + dir + "/" + f);
  }
  CHECK(cgroup->remove());
  CHECK_FALSE(tree.exists(dir));
}

TEST_CASE("v2: the peak is read through the file each run resets, by the sampler too",
          "[cgroup][sampler]") {
  // Since Linux 6.12 writing to memory.peak starts a new peak for reads through that open file
  // only: the end-of-run peak and the sampler's memory.peak column must both read through it.
  // Here the reset file is then replaced by another under the same name, which a reader that
  // opened the path afresh would read instead.
  FakeTree tree;
  const std::string own = "/sys/fs/cgroup/app.scope";
  auto backend = fake_v2(tree, "/app.scope", "cpuset cpu io memory pids", "cpuset cpu memory pids");
  auto cgroup = backend->create("edgeprof-1-2-3");
  const std::string peak = join(own + "/edgeprof-1-2-3", files::v2::kMemoryPeak);
  tree.file(peak, "4096\n");
  REQUIRE(cgroup->reset_peak());
  CHECK(tree.read(peak) == "reset\n");
  tree.overwrite(peak, "40960\n");  // the peak since the reset
  std::filesystem::remove(tree.root() + peak);
  tree.file(peak, "1\n");  // another file under the name

  CHECK(cgroup->peak() == 40960u);
  Sources sources = Sources::of(cgroup->files());
  Columns columns;
  sources.tick(0, columns);
  REQUIRE(columns.has(Metric::memory_peak_bytes));
  CHECK(columns[Metric::memory_peak_bytes][0] == 40960u);
}

TEST_CASE("v2: a missing controller is an error naming it, unless allowed", "[cgroup]") {
  // What an unprivileged systemd user gets: cpu, memory and pids, but no cpuset.
  FakeTree tree;
  const std::string own = "/sys/fs/cgroup/user.slice/user@1000.service/app.scope";
  auto backend = fake_v2(tree, "/user.slice/user@1000.service/app.scope", "cpu memory pids",
                         "cpu memory pids");
  auto cgroup = backend->create("edgeprof-1-2-4");
  const std::string dir = own + "/edgeprof-1-2-4";
  kernel_files(tree, dir,
               {files::v2::kCpuMax, files::v2::kMemoryMax, files::v2::kMemorySwapMax,
                files::v2::kPidsMax});
  std::vector<std::string> unapplied;
  CHECK_THROWS_WITH(cgroup->apply(sample_plan(), false, unapplied),
                    Catch::Contains("'cpuset'") && Catch::Contains("Delegate="));
  CHECK_THROWS_AS(cgroup->apply(sample_plan(), false, unapplied), UnsupportedError);
  cgroup->apply(sample_plan(), true, unapplied);
  REQUIRE(unapplied.size() == 1);
  CHECK_THAT(unapplied[0], Catch::Contains("cpuset"));
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "5000 10000");
  // Without a cpuset the quota is all that holds the slice to its CPUs' worth: kept in full.
  EmulationPlan full = sample_plan();
  full.cpu_quota_us = 20000;
  cgroup->apply(full, true, unapplied);
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "20000 10000");
}

TEST_CASE("v2: an explicit parent is used instead of the caller's cgroup", "[cgroup]") {
  FakeTree tree;
  tree.file(files::kProcSelfCgroup, "0::/elsewhere\n");
  const std::string jobs = "/sys/fs/cgroup/jobs";
  tree.file(join(jobs, files::v2::kControllers), "cpuset cpu memory pids\n");
  tree.file(join(jobs, files::v2::kSubtreeControl), "");
  Layout layout{CgroupMode::unified, "/sys/fs/cgroup", {}};
  auto backend = make_v2_backend(Fs(tree.root()), layout, "/jobs");
  // Each controller is enabled for the children with its own write.
  CHECK(tree.read(join(jobs, files::v2::kSubtreeControl)) == "+pids");
  backend->create("edgeprof-9-9-9");
  CHECK(tree.exists("/sys/fs/cgroup/jobs/edgeprof-9-9-9"));
  CHECK_FALSE(tree.exists("/sys/fs/cgroup/elsewhere"));
  std::filesystem::remove(tree.root() + "/sys/fs/cgroup/jobs/edgeprof-9-9-9");
}

TEST_CASE("v2: a CPU quota above the slices is found, the nearest first", "[cgroup][keep-warm]") {
  FakeTree tree;
  auto backend = fake_v2(tree, "/kubepods/pod1/app", "cpuset cpu memory pids",
                         "cpuset cpu memory pids");
  // No cpu.max anywhere (cpu not enabled above), or "max": no limit.
  CHECK_FALSE(backend->cpu_quota_above());
  const std::string kubepods = "/sys/fs/cgroup/kubepods";
  tree.file(join(kubepods + "/pod1/app", files::v2::kCpuMax), "max 100000\n");
  tree.file(join(kubepods, files::v2::kCpuMax), "max 100000\n");
  CHECK_FALSE(backend->cpu_quota_above());
  tree.file(join(kubepods, files::v2::kCpuMax), "400000 100000\n");
  // The answer is a message, and names the file in its words (literal, as printed).
  CHECK(backend->cpu_quota_above() == "/sys/fs/cgroup/kubepods (cpu.max 400000 100000)");
  tree.file(join(kubepods + "/pod1", files::v2::kCpuMax), "200000 100000\n");
  CHECK(backend->cpu_quota_above() == "/sys/fs/cgroup/kubepods/pod1 (cpu.max 200000 100000)");
  // The root has no cpu.max; one planted there is not read.
  FakeTree root_tree;
  auto at_root = fake_v2(root_tree, "/", "cpuset cpu memory pids", "cpuset cpu memory pids");
  root_tree.file(join("/sys/fs/cgroup", files::v2::kCpuMax), "1000 100000\n");
  CHECK_FALSE(at_root->cpu_quota_above());
}

TEST_CASE("v1: a CPU quota above the slices is found in the cpu hierarchy", "[cgroup][keep-warm]") {
  FakeTree tree;
  tree.file(files::kProcSelfCgroup, "4:cpu,cpuacct:/batch/job7\n3:memory:/batch/job7\n");
  tree.dir("/sys/fs/cgroup/cpu,cpuacct/batch/job7");
  tree.dir("/sys/fs/cgroup/memory/batch/job7");
  Layout layout{CgroupMode::legacy, "", {}};
  layout.v1["cpu"] = layout.v1["cpuacct"] = "/sys/fs/cgroup/cpu,cpuacct";
  layout.v1["memory"] = "/sys/fs/cgroup/memory";
  auto backend = make_v1_backend(Fs(tree.root()), layout, "");
  CHECK_FALSE(backend->cpu_quota_above());
  const std::string batch = "/sys/fs/cgroup/cpu,cpuacct/batch";
  tree.file(join(batch + "/job7", files::v1::kCpuCfsQuotaUs), "-1\n");
  tree.file(join(batch, files::v1::kCpuCfsQuotaUs), "50000\n");
  tree.file(join(batch, files::v1::kCpuCfsPeriodUs), "100000\n");
  // A message, which names the files in its words (literal, as printed).
  CHECK(backend->cpu_quota_above() ==
        "/sys/fs/cgroup/cpu,cpuacct/batch (cpu.cfs_quota_us 50000, cpu.cfs_period_us 100000)");
  // The mount (root cgroup) itself is not read.
  tree.file(join(batch, files::v1::kCpuCfsQuotaUs), "-1\n");
  tree.file(join("/sys/fs/cgroup/cpu,cpuacct", files::v1::kCpuCfsQuotaUs), "1000\n");
  CHECK_FALSE(backend->cpu_quota_above());
}

TEST_CASE("v1: one directory per hierarchy, each under the caller's cgroup there", "[cgroup]") {
  FakeTree tree;
  tree.file(files::kProcSelfCgroup, edgeprof::test::fixture("v1/proc_self_cgroup"));
  const std::string mem_parent = "/sys/fs/cgroup/memory/process_api/742a94da09bad8f76c354094074a054f";
  tree.dir(mem_parent);
  tree.file(join("/sys/fs/cgroup/cpuset", files::v1::kCpusetMems), "0\n");
  for (auto* h : {"cpu", "cpuacct", "pids", "freezer"}) tree.dir(std::string("/sys/fs/cgroup/") + h);
  Layout layout{CgroupMode::hybrid, "", {}};
  for (auto* c : {"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer"}) {
    layout.v1[c] = std::string("/sys/fs/cgroup/") + c;
  }
  auto backend = make_v1_backend(Fs(tree.root()), layout, "");
  CHECK(backend->mode() == CgroupMode::hybrid);
  auto cgroup = backend->create("edgeprof-1-2-3");
  CHECK(cgroup->clone_fd() == -1);
  CHECK(cgroup->paths().size() == 6);
  CHECK(tree.exists(mem_parent + "/edgeprof-1-2-3"));
  CHECK(tree.exists("/sys/fs/cgroup/cpu/edgeprof-1-2-3"));
  const std::string cpu_dir = "/sys/fs/cgroup/cpu/edgeprof-1-2-3";
  const std::string cpuset_dir = "/sys/fs/cgroup/cpuset/edgeprof-1-2-3";
  const std::string mem_dir = mem_parent + "/edgeprof-1-2-3";
  const std::string pids_dir = "/sys/fs/cgroup/pids/edgeprof-1-2-3";
  const std::string freezer_dir = "/sys/fs/cgroup/freezer/edgeprof-1-2-3";
  kernel_files(tree, cpu_dir,
               {files::v1::kCpuCfsPeriodUs, files::v1::kCpuCfsQuotaUs, files::kProcs});
  kernel_files(tree, cpuset_dir, {files::v1::kCpusetCpus, files::v1::kCpusetMems, files::kProcs});
  kernel_files(tree, mem_dir,
               {files::v1::kMemoryLimitInBytes, files::v1::kMemoryMemswLimitInBytes,
                files::kProcs});
  kernel_files(tree, pids_dir, {files::v1::kPidsMax, files::kProcs});
  kernel_files(tree, "/sys/fs/cgroup/cpuacct/edgeprof-1-2-3", {files::kProcs});
  kernel_files(tree, freezer_dir, {files::kProcs});
  std::vector<std::string> unapplied;
  cgroup->apply(sample_plan(), false, unapplied);
  CHECK(unapplied.empty());
  CHECK(tree.read(join(cpuset_dir, files::v1::kCpusetMems)) == "0\n");
  CHECK(tree.read(join(cpuset_dir, files::v1::kCpusetCpus)) == "0-1");
  CHECK(tree.read(join(cpu_dir, files::v1::kCpuCfsPeriodUs)) == "10000");
  CHECK(tree.read(join(cpu_dir, files::v1::kCpuCfsQuotaUs)) == "5000");
  CHECK(tree.read(join(mem_dir, files::v1::kMemoryLimitInBytes)) == "67108864");
  {
    // A quota of the whole cpuset is no limit: -1, also when a speed schedule restores it.
    EmulationPlan full = sample_plan();
    full.cpu_quota_us = 20000;
    std::vector<std::string> ignored;
    cgroup->apply(full, false, ignored);
    CHECK(tree.read(join(cpu_dir, files::v1::kCpuCfsQuotaUs)) == "-1");
    CHECK(cgroup->set_cpu_bandwidth(7000, 10000) == 0);
    CHECK(tree.read(join(cpu_dir, files::v1::kCpuCfsQuotaUs)) == "7000");
    CHECK(cgroup->set_cpu_bandwidth(20000, 10000) == 0);
    CHECK(tree.read(join(cpu_dir, files::v1::kCpuCfsQuotaUs)) == "-1");
    cgroup->apply(sample_plan(), false, ignored);
  }
  // memsw limits memory + swap together.
  CHECK(tree.read(join(mem_dir, files::v1::kMemoryMemswLimitInBytes)) == "83886080");
  {
    // A swap given as "unlimited" (2^64 - 1): no limit, not the sum wrapped to less than the
    // memory (which the kernel refuses).
    EmulationPlan unlimited = sample_plan();
    unlimited.swap_max_bytes = std::numeric_limits<std::uint64_t>::max();
    std::vector<std::string> ignored;
    cgroup->apply(unlimited, false, ignored);
    CHECK(tree.read(join(mem_dir, files::v1::kMemoryMemswLimitInBytes)) == "-1");
    cgroup->apply(sample_plan(), false, ignored);
  }
  CHECK(tree.read(join(pids_dir, files::v1::kPidsMax)) == "100");
  cgroup->attach(777);
  CHECK(tree.read(join(mem_dir, files::kProcs)) == "777");
  CHECK(tree.read(join(freezer_dir, files::kProcs)) == "777");
}

// A killed task woken in a group its quota had held back waited, runnable, for seconds on a CPU
// busy with other work, until the group's weight was raised (issue 36).
TEST_CASE("v1: a kill raises the slice's CPU weight while the killed exit, then puts it back",
          "[cgroup][kill]") {
  FakeTree tree;
  auto cgroup = fake_v1_cpu_memory(tree)->create("edgeprof-1-2-3");
  const std::string cpu_dir = "/sys/fs/cgroup/cpu/edgeprof-1-2-3";
  const std::string shares = join(cpu_dir, files::v1::kCpuShares);
  tree.file(join(cpu_dir, files::v1::kCpuCfsQuotaUs), "5000\n");
  tree.file(shares, "1024\n");
  // Listed until the raised weight is seen: a zombie of this test's own, which SIGKILL leaves be.
  const pid_t zombie = ::fork();
  REQUIRE(zombie >= 0);
  if (zombie == 0) ::_exit(0);
  tree.file(join(cpu_dir, files::kProcs), std::to_string(zombie) + "\n");
  bool raised = false, lifted = false;
  std::thread kernel([&] {
    for (int i = 0; i < 4000 && !raised; ++i) {
      raised = tree.read(shares) == files::v1::kCpuSharesHighest;
      lifted = tree.read(join(cpu_dir, files::v1::kCpuCfsQuotaUs)) == "-1";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    tree.file(join(cpu_dir, files::kProcs), "");  // the killed have exited
  });
  cgroup->kill_all();
  kernel.join();
  ::waitpid(zombie, nullptr, 0);
  CHECK(raised);
  CHECK(lifted);
  CHECK(tree.read(shares) == "1024");
  CHECK(tree.read(join(cpu_dir, files::v1::kCpuCfsQuotaUs)) == "5000");
  // The guard, should the profiler die, raises it as well.
  const GuardPlan plan = cgroup->guard_plan();
  CHECK(plan.weight_file == files::v1::kCpuShares);
  CHECK(plan.highest_weight == files::v1::kCpuSharesHighest);
}

// The sweep of stale slices and counter directories kills and removes what owner_may_live()
// says is dead: only a process /proc says is gone, or a pid reused since. A stat it could not
// read (EMFILE: the sweeping process out of descriptors) once counted as dead, and the sweep
// killed a live profiler's workloads.
TEST_CASE("an owner counts as dead only when /proc says so", "[cgroup][kill]") {
  FakeTree tree;
  const std::string stat =
      "4242 (python3) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000000 200 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  tree.file("/proc/4242/stat", stat);
  const Fs fs(tree.root());
  CHECK(owner_may_live(fs, 4242, 98765));
  CHECK_FALSE(owner_may_live(fs, 4242, 11111));  // the pid names another process now
  CHECK_FALSE(owner_may_live(fs, 4241, 98765));  // no such process
  tree.dir("/proc/4243/stat");                   // read() fails, EISDIR: not known gone
  CHECK(owner_may_live(fs, 4243, 98765));
  tree.file("/proc/4244/stat", "garbage\n");  // nothing to compare
  CHECK(owner_may_live(fs, 4244, 98765));
  int err = -1;
  CHECK_FALSE(process_start_time(fs, 4243, &err));
  CHECK(err == EISDIR);
  CHECK(process_start_time(fs, 4242, &err) == 98765u);
  CHECK(err == 0);
  // A slice's owner: in another pid namespace its pid means nothing in this /proc, so it may
  // live; in this one (or a name without the namespace, from before it was in names), as above.
  const std::uint64_t here = 4026532100, there = 4026532000;
  CHECK(slice_owner_may_live(fs, SliceName{4241, 98765, 1, there}, here));
  CHECK_FALSE(slice_owner_may_live(fs, SliceName{4241, 98765, 1, here}, here));
  CHECK_FALSE(slice_owner_may_live(fs, SliceName{4241, 98765, 1, 0}, here));
  CHECK(slice_owner_may_live(fs, SliceName{4241, 98765, 1, there}, 0));  // ours unknown
  // A kernel without pid namespaces names its slices without one, and looks them up.
  CHECK_FALSE(slice_owner_may_live(fs, SliceName{4241, 98765, 1, 0}, 0));
  CHECK(slice_owner_may_live(fs, SliceName{4242, 98765, 1, here}, here));
  // From the root pid namespace /proc shows every process: another namespace with a process in
  // it may own a live slice, one with none has ended. (The fake ns/pid files' inodes stand for
  // namespaces.)
  tree.file("/proc/4242/ns/pid", "");
  struct stat st {};
  REQUIRE(::stat((tree.root() + "/proc/4242/ns/pid").c_str(), &st) == 0);
  const std::uint64_t in_use = st.st_ino;
  CHECK(slice_owner_may_live(fs, SliceName{77, 1, 1, in_use}, kRootPidNamespace));
  CHECK_FALSE(slice_owner_may_live(fs, SliceName{77, 1, 1, in_use + 1}, kRootPidNamespace));
  CHECK(slice_owner_may_live(fs, SliceName{77, 1, 1, in_use + 1}, here));  // not the root's
}

// In a pid namespace whose /proc was not mounted for it (unshare --pid without --mount-proc),
// /proc numbers the processes of another: there /proc/<getpid()> is another process, and the
// pids in slice names cannot be looked up. This process's own start time is read from
// /proc/self; sweeps stay off (proc_numbers_own_pids).
TEST_CASE("this process's start time and whether /proc numbers its namespace", "[cgroup]") {
  FakeTree tree;
  const Fs fs(tree.root());
  CHECK_FALSE(proc_numbers_own_pids(fs));  // no /proc/self: cannot tell
  int err = 0;
  CHECK_FALSE(own_start_time(fs, &err));
  CHECK(err == ENOENT);
  CHECK(own_pid_namespace(fs) == 0);
  tree.file("/proc/4242/stat",
            "4242 (edgeprof) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000000 "
            "200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
  tree.file("/proc/4242/ns/pid", "");
  std::filesystem::create_symlink("4242", tree.root() + "/proc/self");
  CHECK(own_start_time(fs, &err) == 98765u);
  CHECK(err == 0);
  CHECK(own_pid_namespace(fs) != 0);
  CHECK(proc_numbers_own_pids(fs) == (::getpid() == 4242));
  std::filesystem::remove(tree.root() + "/proc/self");
  std::filesystem::create_symlink(std::to_string(::getpid()), tree.root() + "/proc/self");
  CHECK(proc_numbers_own_pids(fs));
  CHECK(proc_numbers_own_pids(Fs()));
}

// Runs `body` in a forked child that has unshared a pid namespace (the next process it forks
// is that namespace's pid 1, under this /proc) and returns the child's exit status: body's
// result, or 77 when the kernel refused the namespace (no CAP_SYS_ADMIN, or none left).
int in_child_with_new_pid_namespace(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (::unshare(CLONE_NEWPID) != 0) {
      ::_exit(errno == EPERM || errno == ENOSPC || errno == EINVAL || errno == EUSERS ? 77 : 3);
    }
    int rc = 2;
    try {
      rc = body();
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The same on the kernel: a process that is pid 1 of a new pid namespace, under this /proc.
// Before, its slices were named with the start time of /proc/1 (another process: this
// machine's init) and its sweeps looked its namespace's pids up in this /proc.
TEST_CASE("in a pid namespace under another's /proc, own start time and no sweep",
          "[cgroup][kernel]") {
  const int rc = in_child_with_new_pid_namespace([] {
    const pid_t inner = ::fork();  // pid 1 of the new namespace
    if (inner < 0) return 4;
    if (inner == 0) {
      if (::getpid() != 1) ::_exit(5);
      const Fs real;
      const auto here = proc_self_pid(real);  // this process in this /proc's numbering
      if (!here || *here == 1) ::_exit(6);
      const auto mine = process_start_time(real, *here);
      if (!mine || own_start_time(real) != mine) ::_exit(7);
      if (proc_numbers_own_pids(real)) ::_exit(8);
      ::_exit(0);
    }
    int status = 0;
    if (::waitpid(inner, &status, 0) != inner) return 9;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 10;
  });
  if (rc == 77) {
    WARN("skipped: the kernel refused unshare(CLONE_NEWPID) (needs CAP_SYS_ADMIN)");
    return;
  }
  CHECK(rc == 0);  // 7: the start time of /proc/self, 8: a sweep would run
}

// A guard whose profiler is pid 1 of a namespace under another's /proc, and lives on without
// the guard's pipe (it exec'd: the write end is close-on-exec), must see that its parent is
// still the profiler and leave the slice. It read /proc/$$/stat, another process's there (or
// none), and removed the live profiler's slice at once.
TEST_CASE("a guard under another namespace's /proc knows its profiler lives",
          "[guard][kernel]") {
  FakeTree tree;
  tree.dir("/slice");
  const std::string slice = tree.root() + "/slice";
  const int rc = in_child_with_new_pid_namespace([&] {
    const pid_t inner = ::fork();  // pid 1 of the new namespace: the profiler
    if (inner < 0) return 4;
    if (inner == 0) {
      detail::GuardPlan plan;
      plan.dirs = {slice};
      try {
        detail::SliceGuard guard(plan);
        char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
        ::execv("/bin/sleep", argv);
      } catch (...) {
      }
      ::_exit(5);
    }
    // The guard removes the slice within moments when it takes its profiler for gone; it
    // leaves after about 2 s otherwise.
    for (int i = 0; i < 30 && ::access(slice.c_str(), F_OK) == 0; ++i) ::usleep(100000);
    const bool kept = ::access(slice.c_str(), F_OK) == 0;
    // Still sleeping: the guard was started and the profiler lives (not a failed start, 5).
    int status = 0;
    const pid_t ended = ::waitpid(inner, &status, WNOHANG);
    ::kill(inner, SIGKILL);  // the namespace's pid 1: its end ends the guard too
    if (ended == 0) ::waitpid(inner, nullptr, 0);
    if (ended != 0) return ended == inner && WIFEXITED(status) ? WEXITSTATUS(status) : 7;
    return kept ? 0 : 6;
  });
  if (rc == 77) {
    WARN("skipped: the kernel refused unshare(CLONE_NEWPID) (needs CAP_SYS_ADMIN)");
    return;
  }
  CHECK(rc == 0);  // 6: the guard removed a live profiler's slice
}

TEST_CASE("v1: a missing hierarchy is an error unless allowed", "[cgroup]") {
  FakeTree tree;
  auto cgroup = fake_v1_cpu_memory(tree)->create("edgeprof-1-2-3");
  kernel_files(tree, "/sys/fs/cgroup/cpu/edgeprof-1-2-3",
               {files::v1::kCpuCfsPeriodUs, files::v1::kCpuCfsQuotaUs});
  kernel_files(tree, "/sys/fs/cgroup/memory/edgeprof-1-2-3", {files::v1::kMemoryLimitInBytes});
  std::vector<std::string> unapplied;
  CHECK_THROWS_WITH(cgroup->apply(sample_plan(), false, unapplied), Catch::Contains("'cpuset'"));
  unapplied.clear();
  cgroup->apply(sample_plan(), true, unapplied);
  CHECK(unapplied.size() == 2);  // cpuset and pids
}

TEST_CASE("storage bandwidth: io.max on v2, blkio throttling on v1, never an error",
          "[cgroup][io]") {
  EmulationPlan plan = sample_plan();
  plan.io_device = "254:0";
  plan.io_read_bps = 20000000;
  SECTION("v2 with the io controller writes one io.max line; an unset direction is max") {
    FakeTree tree;
    const std::string own = "/sys/fs/cgroup/app.scope";
    auto cgroup = fake_v2(tree, "/app.scope", "cpuset cpu io memory pids",
                          "cpuset cpu io memory pids")->create("edgeprof-1-2-5");
    const std::string dir = own + "/edgeprof-1-2-5";
    kernel_files(tree, dir,
                 {files::v2::kCpusetCpus, files::v2::kCpuMax, files::v2::kMemoryMax,
                  files::v2::kMemorySwapMax, files::v2::kPidsMax, files::v2::kIoMax});
    std::vector<std::string> unapplied;
    cgroup->apply(plan, false, unapplied);
    CHECK(unapplied.empty());
    CHECK(tree.read(join(dir, files::v2::kIoMax)) == "254:0 rbps=20000000 wbps=max");
  }
  SECTION("v2 without the io controller runs, and says storage was not limited") {
    FakeTree tree;
    const std::string own = "/sys/fs/cgroup/app.scope";
    auto cgroup = fake_v2(tree, "/app.scope", "cpuset cpu memory pids",
                          "cpuset cpu memory pids")->create("edgeprof-1-2-6");
    kernel_files(tree, own + "/edgeprof-1-2-6",
                 {files::v2::kCpusetCpus, files::v2::kCpuMax, files::v2::kMemoryMax,
                  files::v2::kMemorySwapMax, files::v2::kPidsMax});
    std::vector<std::string> unapplied;
    cgroup->apply(plan, false, unapplied);  // allow_missing is false, and still no error
    REQUIRE(unapplied.size() == 1);
    CHECK_THAT(unapplied[0], Catch::Contains("storage bandwidth") && Catch::Contains("'io'"));
  }
  SECTION("v1 writes blkio.throttle files for the directions the device declares") {
    FakeTree tree;
    tree.file(files::kProcSelfCgroup, "3:cpu:/\n4:memory:/\n5:blkio:/\n6:cpuset:/\n7:pids:/\n");
    tree.file(join("/sys/fs/cgroup/cpuset", files::v1::kCpusetMems), "0\n");
    Layout layout{CgroupMode::legacy, "", {}};
    for (auto* c : {"cpu", "cpuset", "memory", "pids", "blkio"}) {
      tree.dir(std::string("/sys/fs/cgroup/") + c);
      layout.v1[c] = std::string("/sys/fs/cgroup/") + c;
    }
    auto cgroup = make_v1_backend(Fs(tree.root()), layout, "")->create("edgeprof-1-2-7");
    const std::string blkio = "/sys/fs/cgroup/blkio/edgeprof-1-2-7";
    kernel_files(tree, "/sys/fs/cgroup/cpu/edgeprof-1-2-7",
                 {files::v1::kCpuCfsPeriodUs, files::v1::kCpuCfsQuotaUs});
    kernel_files(tree, "/sys/fs/cgroup/cpuset/edgeprof-1-2-7",
                 {files::v1::kCpusetCpus, files::v1::kCpusetMems});
    kernel_files(tree, "/sys/fs/cgroup/memory/edgeprof-1-2-7", {files::v1::kMemoryLimitInBytes});
    kernel_files(tree, "/sys/fs/cgroup/pids/edgeprof-1-2-7", {files::v1::kPidsMax});
    kernel_files(tree, blkio,
                 {files::v1::kBlkioThrottleReadBpsDevice, files::v1::kBlkioThrottleWriteBpsDevice});
    plan.io_write_bps = 5000000;
    std::vector<std::string> unapplied;
    cgroup->apply(plan, true, unapplied);
    CHECK(tree.read(join(blkio, files::v1::kBlkioThrottleReadBpsDevice)) == "254:0 20000000");
    CHECK(tree.read(join(blkio, files::v1::kBlkioThrottleWriteBpsDevice)) == "254:0 5000000");
    for (const std::string& u : unapplied) CHECK_THAT(u, !Catch::Contains("storage"));
  }
}

TEST_CASE("a kept stat file re-reads the current content, without allocating", "[fs][sampler]") {
  FakeTree tree;
  tree.file("/stat", "usage_usec 10\n");
  Fs fs(tree.root());
  StatFile file(fs, "/stat");
  REQUIRE(file.ok());
  char buf[64];
  CHECK(file.read_into(buf, sizeof buf) == std::string_view("usage_usec 10\n"));
  tree.file("/stat", "usage_usec 20000\n");  // the kernel's file changes under the same fd
  CHECK(file.read_into(buf, sizeof buf) == std::string_view("usage_usec 20000\n"));
  CHECK(file.read() == std::string("usage_usec 20000\n"));
  CHECK_FALSE(file.read_into(buf, 8));  // does not fit: no half a file
  CHECK_FALSE(StatFile(fs, "/missing").ok());
  CHECK_FALSE(StatFile(fs, "/missing").read_into(buf, sizeof buf));
}

TEST_CASE("a runtime follower writes the first seen runtime's bandwidth once, none once detached",
          "[cgroup][runtimes]") {
  FakeTree tree;
  const std::string own = "/sys/fs/cgroup/user.slice/app.scope";
  auto backend = fake_v2(tree, "/user.slice/app.scope", "cpuset cpu io memory pids",
                         "cpuset cpu memory pids");
  auto cgroup = backend->create("edgeprof-1-2-3");
  const std::string dir = own + "/edgeprof-1-2-3";
  kernel_files(tree, dir,
               {files::v2::kCpusetCpus, files::v2::kCpuMax, files::v2::kMemoryMax,
                files::v2::kMemorySwapMax, files::v2::kPidsMax, files::kProcs});
  std::vector<std::string> unapplied;
  const EmulationPlan plan = sample_plan();
  cgroup->apply(plan, false, unapplied);
  auto speeds = [&] {
    std::vector<FollowedSpeed> s(2);
    s[0].runtime = "pytorch";
    s[0].plan = plan;
    s[0].plan.cpu_quota_us = 3000;
    s[1].runtime = "onnxruntime";
    s[1].plan = plan;
    s[1].plan.cpu_quota_us = 2000;
    s[1].plan.cpu_period_us = 20000;
    return s;
  };

  RuntimeFollower follower(speeds(), cgroup.get(), written_quota_us(plan), plan.cpu_period_us);
  follower.seen({});
  follower.seen({{"ncnn", "libncnn.so.1"}});  // no speed of its own to follow
  CHECK_FALSE(follower.switched());
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "5000 10000");
  // Both in one read: the first in order of preference.
  follower.seen({{"onnxruntime", "libonnxruntime.so"}, {"pytorch", "libtorch_cpu.so"}});
  const std::optional<RuntimeSwitch> made = follower.switched();
  REQUIRE(made);
  CHECK(made->speed->runtime == "pytorch");
  CHECK(made->library == "libtorch_cpu.so");
  CHECK(made->error.empty());
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "3000 10000");
  // Once per slice.
  follower.seen({{"onnxruntime", "libonnxruntime.so"}});
  CHECK(follower.switched()->speed->runtime == "pytorch");
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "3000 10000");

  // Detached (the slice closing while its workload runs): nothing is written after.
  tree.file(join(dir, files::v2::kCpuMax), "5000 10000");
  RuntimeFollower closing(speeds(), cgroup.get(), written_quota_us(plan), plan.cpu_period_us);
  closing.detach();
  closing.seen({{"pytorch", "libtorch_cpu.so"}});
  CHECK_FALSE(closing.switched());
  CHECK(tree.read(join(dir, files::v2::kCpuMax)) == "5000 10000");
}

// In a process started with stdin and stdout closed, the guard's pipe would take fds 0 and 1:
// the profiler's first line of output would go to its guard, which takes a line for its
// dismissal.
TEST_CASE("a slice guard's pipe never takes the numbers of stdin, stdout or stderr", "[guard]") {
  const int saved_in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  const int saved_out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  std::fflush(stdout);
  ::close(0);
  ::close(1);
  bool in_open = true, out_open = true;
  std::string error;
  {
    detail::GuardPlan plan;  // no directories: a guard with nothing to remove
    try {
      detail::SliceGuard guard(plan);
      in_open = ::fcntl(0, F_GETFD) >= 0;
      out_open = ::fcntl(1, F_GETFD) >= 0;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  ::dup2(saved_in, 0);
  ::dup2(saved_out, 1);
  ::close(saved_in);
  ::close(saved_out);
  REQUIRE(error.empty());
  CHECK_FALSE(in_open);
  CHECK_FALSE(out_open);
}

// Runs `body` in a forked child of a process group of its own (all that a kill(0) there could
// end): "exit 0" when it returned, "exit N" (2: it threw, 3: no group of its own), or "signal N".
std::string exits_in_own_group(const std::function<void()>& body) {
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    if (::setpgid(0, 0) != 0) ::_exit(3);
    try {
      body();
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return "waitpid failed";
  return WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                             : fmt::format("exit {}", WEXITSTATUS(status));
}

// cgroup.procs lists a process of another pid namespace (a profiler in a container sharing a
// parent cgroup with one outside) as 0; kill(0, SIGKILL) would end the caller's process group,
// the profiler with it, without a word.
TEST_CASE("a kill of a slice that lists a process as 0 does not signal the caller's group",
          "[cgroup][kill]") {
  FakeTree tree;
  auto cgroup = fake_v1_cpu_memory(tree)->create("edgeprof-1-2-3");
  const std::string cpu_dir = "/sys/fs/cgroup/cpu/edgeprof-1-2-3";
  tree.file(join(cpu_dir, files::v1::kCpuCfsQuotaUs), "5000\n");
  tree.file(join(cpu_dir, files::v1::kCpuShares), "1024\n");
  tree.file(join(cpu_dir, files::kProcs), "0\n");
  tree.file(join("/sys/fs/cgroup/memory/edgeprof-1-2-3", files::kProcs), "0\n");
  CHECK(cgroup->has_processes());  // it is not empty: it cannot be removed yet
  CHECK(exits_in_own_group([&] { cgroup->kill_all(); }) == "exit 0");
}

// kill_loop itself, whatever list it is given: a 0 (or a negative number) is never signalled.
TEST_CASE("kill_loop never signals a process group", "[cgroup][kill]") {
  FakeTree tree;
  int rounds = 0;
  CHECK(exits_in_own_group([&] {
          kill_loop(
              Fs(tree.root()),
              [&rounds] { return ++rounds < 3 ? std::vector<pid_t>{0, -1} : std::vector<pid_t>{}; },
              {}, "a fake slice");
        }) == "exit 0");
}

// A process is killed once, not again each round while it exits: a pid signalled after its
// process was reaped could be a stranger's. Those still listed a second later are again.
TEST_CASE("kill_loop kills each listed process once, and again only a second later",
          "[cgroup][kill]") {
  FakeTree tree;
  std::vector<std::vector<pid_t>> kills;
  int rounds = 0, freezes = 0;
  const auto record = [&](const std::vector<pid_t>& pids) { kills.push_back(pids); };
  const auto freeze = [&](bool on) {
    freezes += on ? 1 : 0;
    return true;
  };
  kill_loop(
      Fs(tree.root()),
      [&] {
        ++rounds;  // two listings a round that kills (one before, one after the freeze)
        if (rounds <= 8) return std::vector<pid_t>{101};
        if (rounds <= 12) return std::vector<pid_t>{101, 102};
        return std::vector<pid_t>{};
      },
      freeze, "a fake slice", 5000, record);
  CHECK(kills == std::vector<std::vector<pid_t>>{{101}, {102}});
  CHECK(freezes == 2);  // only the rounds that found a process not killed before

  kills.clear();
  rounds = 0;
  kill_loop(
      Fs(tree.root()),
      [&] {
        ++rounds;
        return kills.size() < 2 && rounds < 5000 ? std::vector<pid_t>{101} : std::vector<pid_t>{};
      },
      {}, "a fake slice", 5000, record);
  CHECK(kills == std::vector<std::vector<pid_t>>{{101}, {101}});
}

// A kill that throws while the slice is frozen thaws it on the way out (frozen, its processes
// could not even exit).
TEST_CASE("kill_loop thaws the slice when a kill throws", "[cgroup][kill]") {
  FakeTree tree;
  std::vector<bool> freezer;
  CHECK_THROWS_WITH(kill_loop(
                        Fs(tree.root()), [] { return std::vector<pid_t>{101}; },
                        [&](bool on) {
                          freezer.push_back(on);
                          return true;
                        },
                        "a fake slice", 5000,
                        [](const std::vector<pid_t>&) { throw CgroupError("cannot kill"); }),
                    "cannot kill");
  CHECK(freezer == std::vector<bool>{true, false});
}

// v2: a process that moved in while the slice was killed is killed through cgroup.kill
// written again (it was signalled by pid, and the loop waited on with the file written once).
TEST_CASE("v2: a kill writes cgroup.kill again for a process listed after the first write",
          "[cgroup][kill]") {
  FakeTree tree;
  const std::string own = "/sys/fs/cgroup/app.scope";
  auto backend = fake_v2(tree, "/app.scope", "cpuset cpu io memory pids", "cpuset cpu memory pids");
  auto cgroup = backend->create("edgeprof-1-2-3");
  const std::string dir = own + "/edgeprof-1-2-3";
  const std::string kill_file = join(dir, files::v2::kKill);
  kernel_files(tree, dir, {files::v2::kCpuMax, files::v2::kCpuWeight, files::v2::kKill});
  // Zombies of this test's own, which a signal would leave be.
  pid_t zombies[2];
  for (pid_t& z : zombies) {
    z = ::fork();
    REQUIRE(z >= 0);
    if (z == 0) ::_exit(0);
  }
  tree.file(join(dir, files::kProcs), fmt::format("{}\n", zombies[0]));
  int writes = 0;
  std::thread kernel([&] {
    for (int i = 0; i < 8000 && writes < 3; ++i) {
      if (tree.read(kill_file) == "1") {
        ++writes;
        tree.file(kill_file, "");
        // The writes before and at the first listing killed the first; the second moved in
        // after them, and a write killed it. (Replaced, not truncated: an empty list read
        // between would end the kill.)
        if (writes >= 2) {
          tree.replace(join(dir, files::kProcs),
                       writes == 2 ? fmt::format("{}\n{}\n", zombies[0], zombies[1]) : "");
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    tree.file(join(dir, files::kProcs), "");
  });
  cgroup->kill_all();
  kernel.join();
  for (pid_t z : zombies) ::waitpid(z, nullptr, 0);
  CHECK(writes == 3);
}

// v2: a slice listing only processes of another pid namespace is killed through cgroup.kill
// when it is the caller's, and left alone by the stale sweep (its owner may live there).
TEST_CASE("v2: processes listed as 0 are killed in the caller's slice, not swept", "[cgroup][kill]") {
  FakeTree tree;
  const std::string own = "/sys/fs/cgroup/app.scope";
  auto backend = fake_v2(tree, "/app.scope", "cpuset cpu io memory pids", "cpuset cpu memory pids");
  auto cgroup = backend->create("edgeprof-1-2-3");
  const std::string dir = own + "/edgeprof-1-2-3";
  kernel_files(tree, dir, {files::v2::kCpuMax, files::v2::kCpuWeight, files::v2::kKill});
  tree.file(join(dir, files::kProcs), "0\n");
  std::thread kernel([&] {  // the killed leave once cgroup.kill is written
    for (int i = 0; i < 4000 && tree.read(join(dir, files::v2::kKill)).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    tree.file(join(dir, files::kProcs), "");
  });
  cgroup->kill_all();
  kernel.join();
  CHECK(tree.read(join(dir, files::v2::kKill)) == "1");

  const std::string stale = own + "/edgeprof-4-5-6";
  kernel_files(tree, stale, {files::v2::kCpuMax, files::v2::kCpuWeight, files::v2::kKill});
  tree.file(join(stale, files::kProcs), "0\n");
  backend->remove_stale("edgeprof-4-5-6");
  CHECK(tree.read(join(stale, files::v2::kKill)).empty());
  CHECK(tree.exists(stale));
}

// The guard's script too: run in a process group of its own, on a slice directory whose process
// list holds a 0, it must remove the directory and exit, not kill its own group.
TEST_CASE("the guard's script leaves a 0 in a process list alone", "[guard][kill]") {
  FakeTree tree;
  tree.dir("/slice");
  tree.file("/procs", "0\n");
  const std::string script = detail::guard_script();
  // $1 the owner (not the script's parent, so it acts at once), no limit, kill, freeze or
  // weight file; the process list outside the directory, which can then be removed.
  std::vector<std::string> args = {"sh", "-c", script, "edgeprof-guard", "-1", "", "", "", "",
                                   "", "", "../procs", "", "", tree.root() + "/slice"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  REQUIRE(::posix_spawn_file_actions_init(&actions) == 0);
  REQUIRE(::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) == 0);
  REQUIRE(::posix_spawnattr_init(&attr) == 0);
  REQUIRE(::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP) == 0);
  REQUIRE(::posix_spawnattr_setpgroup(&attr, 0) == 0);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, "sh", &actions, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  REQUIRE(err == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_FALSE(WIFSIGNALED(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(tree.exists("/slice"));
}

TEST_CASE("a CPU limit lifted for a kill goes back, or the write asked for meanwhile is made",
          "[kill]") {
  FakeTree tree;
  const std::string limit = join("/s", files::v2::kCpuMax);
  const std::string core0 = std::string("/s/") + files::kCoreGroup + "0";  // core 0's group
  const std::string core_limit = join(core0, files::v2::kCpuMax);
  tree.file(limit, "2000 10000\n");
  tree.file(core_limit, "max 10000\n");
  const std::string weight = join("/s", files::v2::kCpuWeight);
  const std::string core_weight = join(core0, files::v2::kCpuWeight);
  tree.file(weight, "100\n");
  tree.file(core_weight, "10000\n");
  const std::vector<std::pair<std::string, std::string>> weights = {{weight, "10000"},
                                                                     {core_weight, "10000"}};
  const Fs fs(tree.root());
  BandwidthGate gate;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> written;
  const CpuLimitLift::Write write = [&](std::uint64_t q, std::uint64_t p) {
    written.emplace_back(q, p);
    return 0;
  };
  {
    const CpuLimitLift lift(fs, {{limit, "max"}, {core_limit, "max"}}, gate, write, weights);
    CHECK(gate.lifted);
    CHECK(tree.read(limit) == "max");
    // The weight raised as well: a killed task in a group its quota held back waited for CPU.
    CHECK(tree.read(weight) == files::v2::kCpuWeightHighest);
    {
      // A second thread's kill meanwhile: nothing of its own to put back.
      const CpuLimitLift inner(fs, {{limit, "max"}}, gate, write, weights);
      CHECK(gate.lifted == 2);
    }
    CHECK(tree.read(weight) == "10000");
  }
  CHECK_FALSE(gate.lifted);
  CHECK(tree.read(limit) == "2000 10000");
  CHECK(tree.read(core_limit) == "max 10000\n");  // no limit: left alone
  CHECK(tree.read(weight) == "100");
  CHECK(tree.read(core_weight) == "10000\n");  // at the highest already: left alone
  CHECK(written.empty());
  {
    const CpuLimitLift lift(fs, {{limit, "max"}}, gate, write, weights);
    // What set_cpu_bandwidth does while the limit is lifted (a core placer as threads die).
    gate.held = std::make_pair(std::uint64_t{1000}, std::uint64_t{10000});
  }
  // The newer write, not the saved text; the weight goes back either way.
  CHECK(written == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1000, 10000}});
  CHECK(tree.read(limit) == "max");
  CHECK(tree.read(weight) == "100");
  CHECK_FALSE(gate.held);
}

// A kill's survivor was once said to be "maybe in uninterruptible sleep (state D)" while it was
// runnable, waiting for a CPU (issue 36): its state is read, not guessed.
TEST_CASE("a process that outlives its SIGKILL is named with its state and what that means",
          "[kill]") {
  FakeTree tree;
  const Fs fs(tree.root());
  tree.file("/proc/41/stat", "41 (python3 (x)) R 1 41 41 0 -1 4194560 2 0 0 0 5 1\n");
  tree.file("/proc/42/stat", "42 (sleeper) D 1 42 42 0 -1 4194560 2 0 0 0 5 1\n");
  tree.file("/proc/43/stat", "43 (exited) Z 1 43 43 0 -1 4194560 2 0 0 0 5 1\n");
  tree.file("/proc/44/stat", "44 (sleeping) S 1 44 44 0 -1 4194560 2 0 0 0 5 1\n");
  CHECK(describe_survivor(fs, 41) ==
        "pid 41, state R (runnable, waiting for a CPU: a busy CPU, or the slice's CPU limit or "
        "weight; look at /proc/41/sched)");
  CHECK(describe_survivor(fs, 42) ==
        "pid 42, state D (uninterruptible sleep, in the kernel: look at /proc/42/stack)");
  CHECK_THAT(describe_survivor(fs, 43), Catch::Contains("state Z (exited, not yet reaped"));
  CHECK(describe_survivor(fs, 44) == "pid 44, state S (look at /proc/44/stack)");
  CHECK(describe_survivor(fs, 45) == "pid 45, gone by the time its state was read");
}

TEST_CASE("a slice that cannot be removed is described: each directory, why, what is in it",
          "[cgroup]") {
  FakeTree tree;
  const Fs fs(tree.root());
  // Kept by its processes (a plain directory with a file refuses rmdir, as a populated cgroup
  // would); its empty core group and the second slice directory go at the last try.
  tree.file(join("/memory/edgeprof-1-2-3", files::kProcs), "41\n42\n");
  std::filesystem::create_directories(tree.root() + "/memory/edgeprof-1-2-3/core0");
  std::filesystem::create_directories(tree.root() + "/cpu/edgeprof-1-2-3");
  const std::string text =
      describe_unremoved(fs, {"/memory/edgeprof-1-2-3", "/cpu/edgeprof-1-2-3"});
  CHECK(text == fmt::format("{}/memory/edgeprof-1-2-3 ({}, errno {}; processes in it: 41 42)",
                            tree.root(), std::strerror(ENOTEMPTY), ENOTEMPTY));
  CHECK_FALSE(std::filesystem::exists(tree.root() + "/memory/edgeprof-1-2-3/core0"));
  CHECK_FALSE(std::filesystem::exists(tree.root() + "/cpu/edgeprof-1-2-3"));

  // A v2 threaded core group refuses cgroup.procs: its threads are named instead.
  tree.file(join("/unified/edgeprof-1-2-3/core0", files::v2::kThreads), "7\n");
  tree.file(join("/unified/edgeprof-1-2-3", files::kProcs), "");
  CHECK(describe_unremoved(fs, {"/unified/edgeprof-1-2-3"}) ==
        fmt::format("{0}/unified/edgeprof-1-2-3/core0 ({1}, errno {2}; threads in it: 7), "
                    "{0}/unified/edgeprof-1-2-3 ({1}, errno {2}; processes in it: none)",
                    tree.root(), std::strerror(ENOTEMPTY), ENOTEMPTY));

  std::filesystem::remove(join(tree.root() + "/memory/edgeprof-1-2-3", files::kProcs));
  CHECK(describe_unremoved(fs, {"/memory/edgeprof-1-2-3"}) ==
        "/memory/edgeprof-1-2-3 (gone at a last try)");
  CHECK_FALSE(std::filesystem::exists(tree.root() + "/memory/edgeprof-1-2-3"));
}
