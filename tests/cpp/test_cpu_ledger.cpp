// The machine's CPU ledger: slices of different processes take distinct CPUs while there are
// enough, a run that had to share says so, and a killed holder leaves nothing held.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <sstream>

#include "edgeprof/slice.hpp"
#include "helpers.hpp"
#include "run/cpu_ledger.hpp"

using namespace edgeprof;
using namespace edgeprof::test;
using edgeprof::detail::CpuHolder;
using edgeprof::detail::CpuLease;
using edgeprof::detail::CpuLedger;

TEST_CASE("the CPU ledger's directory: the variable, root's /run, the user's runtime directory",
          "[ledger]") {
  using edgeprof::detail::ledger_dir;
  CHECK(ledger_dir("/x/ledger", 0, "/run/user/1000") == "/x/ledger");
  CHECK(ledger_dir("", 0, nullptr) == "/run/edgeprof");
  CHECK(ledger_dir(nullptr, 1000, "/run/user/1000") == "/run/user/1000/edgeprof");
  CHECK(ledger_dir(nullptr, 1000, "") == "/tmp/edgeprof-ledger-1000");
}

TEST_CASE("a shared run's warning names who shared which CPUs", "[ledger]") {
  using edgeprof::detail::sharing_warning;
  CHECK(sharing_warning({}, 10).empty());
  const std::string w = sharing_warning({{1, 42}, {0, 42}, {1, 42}, {1, 10}, {0, 0}}, 10);
  CAPTURE(w);
  CHECK(w.find("edgeprof process 42 (CPU 0,1)") != std::string::npos);
  CHECK(w.find("another slice of this process (CPU 1)") != std::string::npos);
  CHECK(w.find("did not say which (CPU 0)") != std::string::npos);
  CHECK(w.find("cpus=") != std::string::npos);  // what to do
}

TEST_CASE("two ledgers on one directory see each other's CPUs, as two processes do",
          "[ledger]") {
  FakeTree dir;
  // Two ledgers open their slot files separately; flock(2) locks belong to the open file, so
  // they exclude each other exactly as two processes' would.
  CpuLedger a(dir.root()), b(dir.root());
  REQUIRE(a.problem().empty());
  CpuLease first = a.take({0});
  CHECK(first.shared_at_take() == 0);
  CHECK(b.order({0, 1}) == std::vector<int>{1, 0});  // the free CPU first
  CHECK(a.order({0, 1}) == std::vector<int>{1, 0});
  {
    CpuLease second = b.take({0, 1});
    CHECK(second.shared_at_take() == 1);
    const std::vector<CpuHolder> seen = b.others(second);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].cpu == 0);
    CHECK(seen[0].pid == ::getpid());  // the slot file names its holder
    CHECK(a.others(first).size() == 1);
    CHECK(b.order({0, 1}) == std::vector<int>{1, 0});  // CPU 0 has two, CPU 1 one
  }
  // Released: CPU 0's second slot is free again and taken again, not a third one made.
  CHECK(a.others(first).empty());
  CpuLease again = b.take({0});
  CHECK(again.shared_at_take() == 1);
  CHECK(dir.exists("/cpu0.1"));
  CHECK_FALSE(dir.exists("/cpu0.2"));
  // A moved lease is released once, by its new owner.
  CpuLease moved = std::move(again);
  CHECK(a.others(first).size() == 1);
  moved = CpuLease();
  CHECK(a.others(first).empty());
}

namespace {

// Forks a child that, with `release` set, first releases its copy of `lease` (as a child's
// destructors would), and then lives until the returned function is called.
std::function<void()> fork_holding(CpuLease& lease, bool release) {
  int to_child[2], from_child[2];
  REQUIRE(::pipe(to_child) == 0);
  REQUIRE(::pipe(from_child) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char c = 0;
    if (release) lease = CpuLease();
    (void)!::write(from_child[1], "r", 1);
    (void)!::read(to_child[0], &c, 1);
    ::_exit(0);  // no destructors: as a multiprocessing worker ends
  }
  char c = 0;
  REQUIRE(::read(from_child[0], &c, 1) == 1);
  return [=] {
    (void)!::write(to_child[1], "x", 1);
    ::waitpid(child, nullptr, 0);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
  };
}

}  // namespace

TEST_CASE("a process forked while a slice holds CPUs does not keep them, nor free them",
          "[ledger]") {
  FakeTree dir;
  CpuLedger a(dir.root()), b(dir.root());
  CpuLease lease = a.take({0});
  // A forked child (a multiprocessing worker, a forked helper) inherits the slot file's fd.
  const auto end_child = fork_holding(lease, false);
  CHECK(b.order({0, 1}) == std::vector<int>{1, 0});  // held
  // The parent's release frees the CPU though the child still has the fd open.
  lease = CpuLease();
  CHECK(b.order({0, 1}) == std::vector<int>{0, 1});
  CpuLease other = b.take({0});
  CHECK(other.shared_at_take() == 0);
  end_child();
  // A child that releases its copy leaves the parent's CPU held.
  const auto end_releaser = fork_holding(other, true);
  CHECK(a.order({0, 1}) == std::vector<int>{1, 0});
  end_releaser();
  CHECK(a.order({0, 1}) == std::vector<int>{1, 0});
}

TEST_CASE("released slots at the end of a CPU's list are removed", "[ledger]") {
  FakeTree dir;
  CpuLedger a(dir.root());
  CpuLease s0 = a.take({0}), s1 = a.take({0}), s2 = a.take({0});
  REQUIRE(dir.exists("/cpu0.2"));
  s1 = CpuLease();  // in the middle: kept, so that the list has no gap
  CHECK(dir.exists("/cpu0.1"));
  s2 = CpuLease();  // the end: it and the free one before it go
  CHECK_FALSE(dir.exists("/cpu0.2"));
  CHECK_FALSE(dir.exists("/cpu0.1"));
  CHECK(dir.exists("/cpu0.0"));
  s0 = CpuLease();
  CHECK_FALSE(dir.exists("/cpu0.0"));
  CpuLease again = a.take({0, 1});
  CHECK(again.shared_at_take() == 0);
  CHECK(again.problem().empty());
}

TEST_CASE("a slice that cannot open a slot file counts its CPU here and says so", "[ledger]") {
  FakeTree dir;
  CpuLedger a(dir.root());
  CpuLease first = a.take({1});
  // In a child, out of file descriptors: the ledger's own lock still opens (it is taken first),
  // the slot file does not.
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(out[0]);
    // Fill the fd table up to a limit one above the lowest free fd, leaving one for the lock.
    const int probe = ::dup(0);
    struct rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = static_cast<rlim_t>(probe) + 1;
    ::close(probe);
    ::setrlimit(RLIMIT_NOFILE, &lim);
    const rlim_t limit = lim.rlim_cur;
    CpuLease lease = a.take({0});
    lim.rlim_cur = limit + 16;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    const std::string said = lease.problem() + "|" + std::to_string(a.order({1, 0}).front());
    (void)!::write(out[1], said.data(), said.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) said.append(buffer, n);
  ::close(out[0]);
  ::waitpid(child, nullptr, 0);
  CAPTURE(said);
  CHECK_THAT(said, Catch::Contains("ulimit -n") && Catch::Contains("do not see"));
  // CPU 1 is held by the parent's first lease, CPU 0 counted in the child: neither looks free
  // (uncounted, CPU 0 would have come first).
  CHECK_THAT(said, Catch::EndsWith("|1"));
}

TEST_CASE("choosing and taking the least used CPUs is one step", "[ledger]") {
  FakeTree dir;
  CpuLedger a(dir.root()), b(dir.root());
  CpuLease first = a.take_least_used({0, 1}, 1);
  CpuLease second = b.take_least_used({0, 1}, 1);
  CHECK(first.cpus() == std::vector<int>{0});
  CHECK(second.cpus() == std::vector<int>{1});  // not the CPU the first one took meanwhile
  CHECK(second.shared_at_take() == 0);
  CpuLease third = a.take_least_used({0, 1}, 2);
  CHECK(third.cpus().size() == 2);
  CHECK(third.shared_at_take() == 1);
}

TEST_CASE("the ledger uses only a directory of this user that no one else may write, and "
          "follows no links",
          "[ledger]") {
  FakeTree dir;
  dir.dir("/open");
  std::filesystem::permissions(dir.root() + "/open", std::filesystem::perms::all);
  CpuLedger open(dir.root() + "/open");
  CHECK_THAT(open.problem(), Catch::Contains("writable by others") &&
                                 Catch::Contains("EDGEPROF_LEDGER_DIR"));
  // A link planted where a slot file goes is not followed: its target is left as it was.
  dir.dir("/mine");
  dir.file("/victim", "precious");
  std::filesystem::create_symlink(dir.root() + "/victim", dir.root() + "/mine/cpu0.0");
  CpuLedger mine(dir.root() + "/mine");
  REQUIRE(mine.problem().empty());
  CpuLease lease = mine.take({0});
  CHECK(dir.read("/victim") == "precious");
}

TEST_CASE("a ledger whose directory cannot be made counts this process's slices and says so",
          "[ledger]") {
  FakeTree dir;
  dir.file("/not-a-dir", "x");
  CpuLedger local(dir.root() + "/not-a-dir/ledger");
  CHECK_FALSE(local.problem().empty());
  CHECK(local.problem().find("EDGEPROF_LEDGER_DIR") != std::string::npos);
  CpuLease a = local.take({0});
  CHECK(local.order({0, 1}) == std::vector<int>{1, 0});
  CpuLease b = local.take({0});
  CHECK(b.shared_at_take() == 1);
  CHECK(local.others(b).size() == 1);
  a = CpuLease();
  CHECK(local.others(b).empty());
}

namespace {

// Another edgeprof process holding a slice of `cores` cores until killed (edgeprof_leaker
// hold): its pid and CPUs.
struct Holder {
  FILE* out = nullptr;
  pid_t pid = 0;
  std::vector<int> cpus;

  explicit Holder(int cores) {
    const std::string cmd = "exec " + helper("edgeprof_leaker") + " hold " + std::to_string(cores);
    out = ::popen(cmd.c_str(), "r");
    char line[256] = {};
    if (out && std::fgets(line, sizeof line, out)) {
      std::istringstream in(line);
      in >> pid;
      for (int c; in >> c;) cpus.push_back(c);
    }
  }
  void kill() {
    if (pid > 0) ::kill(pid, SIGKILL);
    if (out) ::pclose(out);
    out = nullptr;
    pid = 0;
  }
  ~Holder() { kill(); }
};

}  // namespace

TEST_CASE("a slice of another process keeps its CPUs to itself, and a shared run says so",
          "[kernel][ledger]") {
  REQUIRE_CGROUPS();
  const auto host = host_facts().cpus;
  if (host.size() < 2) {
    WARN("skipped: needs 2 CPUs");
    return;
  }
  {
    Holder other(1);
    REQUIRE(other.pid > 0);
    REQUIRE(other.cpus.size() == 1);
    Slice mine(make_device("mine", 1, 1.0, "64MiB"));
    CHECK(mine.plan().cpus != other.cpus);  // distinct CPUs while there are enough
    Result r = mine.spawn(workload({"exit", "0"})).wait();
    CAPTURE(r.warnings);
    CHECK_FALSE(has_note(r.warnings, "shared host CPUs"));
  }
  Holder other(static_cast<int>(host.size()));  // every CPU
  REQUIRE(other.pid > 0);
  {
    Slice mine(make_device("mine", 1, 1.0, "64MiB"));
    CHECK(has_note(mine.plan(), "shares host CPUs"));
    Result r = mine.spawn(workload({"exit", "0"})).wait();
    CAPTURE(r.warnings);
    CHECK(has_note(r.warnings, "edgeprof process " + std::to_string(other.pid)));
  }
  // Killed, it holds nothing: the kernel released its locks.
  other.kill();
  Slice mine(make_device("mine", 1, 1.0, "64MiB"));
  CHECK_FALSE(has_note(mine.plan(), "shares host CPUs"));
  Result r = mine.spawn(workload({"exit", "0"})).wait();
  CAPTURE(r.warnings);
  CHECK_FALSE(has_note(r.warnings, "shared host CPUs"));
}
