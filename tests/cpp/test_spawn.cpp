// The fork fallback of spawn_process (other architectures, kernels before 5.3/5.7), forced on
// this kernel so that path stays tested where the fast path is the default.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cgroup/backend.hpp"
#include "sys/clone3.hpp"
#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"
#include "sys/child.hpp"
#include "sys/spawn.hpp"

using namespace edgeprof;
using namespace edgeprof::detail;
using edgeprof::test::can_create_slices;
using edgeprof::test::FakeTree;
using edgeprof::test::helper;
using edgeprof::test::our_slices;
using edgeprof::test::program;

namespace {

// A real cgroup with limits applied, owned by the test.
struct TestCgroup {
  Fs fs;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Cgroup> cgroup;

  TestCgroup() {
    backend = make_backend(fs, discover_layout(fs), "");
    cgroup = backend->create("edgeprof-" + std::to_string(::getpid()) + "-0-999");
    std::vector<std::string> unapplied;
    cgroup->apply(plan_emulation(make_device("t", 1, 0.5, "128MiB"), host_facts()), true,
                  unapplied);
  }
  ~TestCgroup() {
    cgroup->kill_all();
    cgroup->remove();
  }
};

Exit run_to_exit(const Spawned& child) {
  auto exit = wait_exit(child, std::nullopt, {}, std::chrono::milliseconds(50));
  return *exit;
}

// SIGCHLD handled as given for one scope; the old handling is put back on the way out, also
// when a check fails (FAIL and REQUIRE throw).
class ScopedSigchld {
 public:
  ScopedSigchld(void (*handler)(int), int flags) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    REQUIRE(::sigaction(SIGCHLD, &sa, &old_) == 0);
  }
  ~ScopedSigchld() { ::sigaction(SIGCHLD, &old_, nullptr); }
  ScopedSigchld(const ScopedSigchld&) = delete;
  ScopedSigchld& operator=(const ScopedSigchld&) = delete;

 private:
  struct sigaction old_ {};
};

Command exit_3() {
  Command c;
  c.argv = {"/bin/sh", "-c", "exit 3"};
  return c;
}

// No slice: the parent "places" the held child nowhere (the fork path, on every build).
Placement nowhere() {
  Placement placement;
  placement.attach = [](pid_t) {};
  return placement;
}

}  // namespace

TEST_CASE("the fork fallback places the child before it execs", "[kernel][spawn]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root");
    return;
  }
  TestCgroup cg;
  FakeTree tmp;
  Command command;
  command.argv = {helper("edgeprof_workload"), "cgroup"};
  command.stdout_stream = Stdio::file(tmp.root() + "/out");
  PreparedCommand prepared(command);
  Placement placement;
  placement.attach = [&](pid_t pid) { cg.cgroup->attach(pid); };
  Spawned child = spawn_process(prepared, placement, /*fast=*/false);
  CHECK(std::string(child.placement) == "fork+attach");
  Exit exit = run_to_exit(child);
  REQUIRE(WIFEXITED(exit.status));
  CHECK(WEXITSTATUS(exit.status) == 0);
  const std::string name = std::filesystem::path(cg.cgroup->paths().front()).filename();
  CHECK_THAT(FakeTree::slurp(tmp.root() + "/out"), Catch::Contains(name));
}

TEST_CASE("the fork fallback reports exec failures with errno and path", "[kernel][spawn]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root");
    return;
  }
  TestCgroup cg;
  FakeTree tmp;
  tmp.file("/script", "#!/bin/sh\n");  // not executable
  Command command;
  command.argv = {tmp.root() + "/script"};
  PreparedCommand prepared(command);
  Placement placement;
  placement.attach = [&](pid_t pid) { cg.cgroup->attach(pid); };
  try {
    spawn_process(prepared, placement, /*fast=*/false);
    FAIL("spawned");
  } catch (const SpawnError& e) {
    CHECK(e.sys_errno() == EACCES);
    CHECK(e.path() == tmp.root() + "/script");
  }
  // A failed placement kills the held child and reports the error.
  placement.attach = [](pid_t) { throw CgroupError("placement failed on purpose"); };
  Command ok;
  ok.argv = {helper("edgeprof_workload"), "exit", "0"};
  PreparedCommand prepared_ok(ok);
  CHECK_THROWS_WITH(spawn_process(prepared_ok, placement, false), "placement failed on purpose");
}

TEST_CASE("a descriptor the child cannot keep is named, on both paths", "[spawn]") {
  // Each stage names itself: a failed fcntl on the kept descriptor said only "the child failed
  // before executing".
  const int closed = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(closed >= 0);
  ::close(closed);
  Command ok;
  ok.argv = {"/bin/true"};
  for (const bool fast : {true, false}) {
    CAPTURE(fast);
    PreparedCommand prepared(ok);
    prepared.keep_fd(closed);
    Placement nowhere;
    nowhere.attach = [](pid_t) {};
    try {
      spawn_process(prepared, nowhere, fast);
      FAIL("spawned");
    } catch (const SpawnError& e) {
      CHECK(e.sys_errno() == EBADF);
      CHECK_THAT(e.what(), Catch::Contains("could not keep descriptor " + std::to_string(closed)));
    }
  }
}

TEST_CASE("the fast path reports a failed self-attach", "[kernel][spawn]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root");
    return;
  }
  if (!edgeprof::detail::kHaveClone3Trampoline) {
    WARN("skipped: no fast path in this build (x86-64 only, and not under the sanitizers)");
    return;
  }
  // A cgroup.procs fd opened read-only: the child's write of "0" fails with EBADF.
  TestCgroup cg;
  int bad = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  Command ok;
  ok.argv = {helper("edgeprof_workload"), "exit", "0"};
  PreparedCommand prepared(ok);
  Placement placement;
  placement.procs_fds = {bad};
  placement.attach = [&](pid_t pid) { cg.cgroup->attach(pid); };
  try {
    spawn_process(prepared, placement, true);
    FAIL("spawned");
  } catch (const SpawnError& e) {
    CHECK(e.sys_errno() == EBADF);
    CHECK_THAT(e.what(), Catch::Contains("cgroup.procs"));  // the message's words (spawn.cpp's)
  }
  ::close(bad);
}

TEST_CASE("a NUL byte in the program, an argument, the environment or the directory is refused",
          "[spawn]") {
  using namespace std::string_literals;
  const auto refused = [](const Command& c, const std::string& part) {
    try {
      PreparedCommand prepared(c);
      FAIL("prepared a command with a NUL byte");
    } catch (const SpawnError& e) {
      CHECK(e.sys_errno() == EINVAL);
      CHECK_THAT(e.what(), Catch::Contains(part));
    }
  };
  Command c;
  c.argv = {"/bin/tr\0ue"s};  // would run /bin/tr
  refused(c, "the program holds a NUL byte at offset 7 (after \"/bin/tr\")");
  c.argv = {"/bin/echo", "a", "b\0c"s};
  refused(c, "argument 2 holds a NUL byte at offset 1");
  c.argv = {"/bin/true"};
  c.env = std::vector<std::string>{"PATH=/bin", "X=1\0Y=2"s};
  refused(c, "environment entry 1 holds a NUL byte");
  c.env.reset();
  c.cwd = "/tmp\0/x"s;
  refused(c, "the working directory holds a NUL byte");
  c.cwd.clear();
  PreparedCommand fine(c);  // the same command without them
}

// exec checks the effective user; access() asked about the real one, so a caller whose two
// differ (setuid, setresuid) was told a program it may run could not be executed.
TEST_CASE("a program is checked for the effective user, as exec checks it", "[spawn]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to give the real and effective uids two values");
    return;
  }
  FakeTree dir;  // mode 0700, the root's: the real uid given below may not even search it
  dir.file("/tool", "#!/bin/sh\nexit 0\n");
  REQUIRE(::chmod((dir.root() + "/tool").c_str(), 0700) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    if (::setresuid(65534, 0, 0) != 0) ::_exit(10);
    try {
      check_runnable(program(dir.root() + "/tool"));
    } catch (...) {
      code |= 1;
    }
    if (find_in_path("tool", dir.root()) != dir.root() + "/tool") code |= 2;
    if (may_execute(dir.root() + "/tool") != 0) code |= 4;
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) {
    WARN("skipped: setresuid(65534, 0, 0) failed (uid 65534 not mapped here?)");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);  // 1, 2, 4: a check said no
  // A file with no execute bit stays refused, for root too.
  dir.file("/data", "x\n");
  REQUIRE(::chmod((dir.root() + "/data").c_str(), 0644) == 0);
  CHECK(may_execute(dir.root() + "/data") == EACCES);
  CHECK_THROWS_AS(check_runnable(program(dir.root() + "/data")), SpawnError);
}

// The slice's kill ends what the slice holds: a workload that moved itself out of it
// (systemd-run --scope, cgexec) was not killed, and the wait for its exit outlasted the timeout
// and the interrupt (until `sleep 30` ended on its own, exit code 0).
TEST_CASE("a timeout or an interrupt ends a workload that left its slice", "[kernel][spawn]") {
  REQUIRE_CGROUPS();
  // The slice first: making one sweeps the test cgroup's name (start time 0) as stale.
  Slice slice(make_device("t", 1, 1.0, "128MiB"));
  TestCgroup elsewhere;
  Command leave;
  const FakeTree marks;
  const std::string left = marks.root() + "/left";
  leave.argv = {"/bin/sh", "-c",
                "m=$1; shift; for d in \"$@\"; do echo $$ > \"$d/cgroup.procs\" || exit 3; done; "
                ": > \"$m\"; exec sleep 30",
                "sh", left};
  for (const std::string& dir : elsewhere.cgroup->paths()) leave.argv.push_back(dir);
  SpawnOptions quiet;
  quiet.sample_interval = std::chrono::nanoseconds(0);
  {
    Child c = slice.spawn(leave, quiet);
    // It left before the timeout: the case is tested.
    REQUIRE(test::eventually([&] { return std::filesystem::exists(left); }));
    const Result r = c.wait(std::chrono::milliseconds(1));
    CHECK(r.timed_out);
    CHECK(r.signal == SIGKILL);
    CHECK_FALSE(r.exit_code);  // 3: it could not leave; 0: sleep ran to its end
  }
  {
    std::filesystem::remove(left);
    Child c = slice.spawn(leave, quiet);
    REQUIRE(test::eventually([&] { return std::filesystem::exists(left); }));
    const auto until = Clock::now() + std::chrono::milliseconds(10);
    struct Interrupted {};
    CHECK_THROWS_AS(c.wait(std::nullopt,
                           [&] {
                             if (Clock::now() > until) throw Interrupted{};
                           }),
                    Interrupted);
    const Result r = c.wait();  // the result made on the way out
    CHECK(std::filesystem::exists(left));
    CHECK(r.signal == SIGKILL);
  }
  CHECK_FALSE(elsewhere.cgroup->has_processes());
}

// clone3 into a slice at its pids.max fails with EAGAIN (v2; on v1 the child is made outside
// and moved in, which pids.max allows): it was a plain Error, "cannot start a process inside
// the cgroup: clone3: Resource temporarily unavailable", naming neither limit nor remedy.
TEST_CASE("a spawn refused by the slice's process limit is a SpawnError naming it",
          "[kernel][spawn]") {
  REQUIRE_CGROUPS();
  Device d = make_device("t", 1, 1.0, "128MiB");
  d.pids_max = 1;
  Slice slice(d);
  if (slice.mode() != CgroupMode::unified) {
    WARN("skipped: on cgroup v1 a workload is moved into the slice, which pids.max allows");
    return;
  }
  SpawnOptions quiet;
  quiet.sample_interval = std::chrono::nanoseconds(0);
  // Where the child is made outside and moved in (the fork fallback: sanitizer builds, other
  // architectures, kernels before 5.7), pids.max allows the move.
  if (slice.spawn(program("/bin/true"), quiet).wait().placement != "clone3") {
    WARN("skipped: workloads are not born in the slice here (clone3 CLONE_INTO_CGROUP)");
    return;
  }
  Command sleep;
  sleep.argv = {"/bin/sleep", "30"};
  Child running = slice.spawn(sleep, quiet);
  try {
    (void)slice.spawn(program("/bin/true"), quiet);
    FAIL("a second process was started past pids.max 1");
  } catch (const SpawnError& e) {
    CHECK(e.sys_errno() == EAGAIN);
    CHECK_THAT(e.what(), Catch::Contains("cannot start '/bin/true'") &&
                             Catch::Contains("the slice's (the device's pids_max") &&
                             Catch::Contains("Slice::kill()"));
  }
  slice.kill();
  CHECK(running.wait().signal == SIGKILL);
}

// Stdio::file("/tmp/out\0.txt") wrote /tmp/out.
TEST_CASE("a NUL byte in a stdin, stdout or stderr file's path is refused before any is opened",
          "[spawn]") {
  using namespace std::string_literals;
  FakeTree tmp;
  const std::string cut = tmp.root() + "/out";  // what the NUL would leave of the path
  const auto refused = [&](const Command& c, const std::string& stream) {
    try {
      PreparedCommand prepared(c);
      FAIL("prepared a command whose " << stream << " file holds a NUL byte");
    } catch (const SpawnError& e) {
      CHECK(e.sys_errno() == EINVAL);
      CHECK_THAT(e.what(), Catch::Contains("the " + stream + " file holds a NUL byte at offset " +
                                           std::to_string(cut.size()) + " (after \"" + cut +
                                           "\")"));
      CHECK(e.path() == cut + "\0.txt"s);
    }
  };
  Command c;
  c.argv = {"/bin/true"};
  c.stdout_stream = Stdio::file(cut + "\0.txt"s);
  refused(c, "stdout");
  c.stdout_stream = Stdio::inherit();
  c.stderr_stream = Stdio::file(cut + "\0.txt"s, /*append=*/true);
  refused(c, "stderr");
  CHECK_FALSE(tmp.exists("/out"));  // nothing created at the text before the NUL
  // stdin's file is checked before stdout's is created (it was read from /out, which exists).
  tmp.file("/out", "");
  c.stderr_stream = Stdio::inherit();
  c.stdin_stream = Stdio::file(cut + "\0.txt"s);
  c.stdout_stream = Stdio::file(tmp.root() + "/created");
  refused(c, "stdin");
  CHECK_FALSE(tmp.exists("/created"));
}

// signal(SIGCHLD, SIG_IGN), then a workload that exits 3: the kernel discards its status, and
// wait4's ECHILD was read as exit code 0 (ok() true).
TEST_CASE("a workload is not started while SIGCHLD is ignored: its exit status would be lost",
          "[spawn]") {
  const Command c = exit_3();
  const Placement placement = nowhere();
  const auto refused = [&](const std::string& how) {
    PreparedCommand prepared(c);
    try {
      spawn_process(prepared, placement, /*fast=*/false);
      FAIL("spawned with SIGCHLD " << how);
    } catch (const SpawnError& e) {
      CHECK_THAT(e.what(), Catch::Contains("SIGCHLD is " + how) &&
                               Catch::Contains("signal(SIGCHLD, SIG_DFL)"));
    }
  };
  {
    ScopedSigchld ignored(SIG_IGN, 0);
    refused("ignored (SIG_IGN)");
  }
  {
    ScopedSigchld no_zombies(SIG_DFL, SA_NOCLDWAIT);
    refused("flagged SA_NOCLDWAIT");
  }
  // With SIGCHLD's default back, the same command's own status.
  PreparedCommand prepared(c);
  const Spawned child = spawn_process(prepared, placement, /*fast=*/false);
  const Exit exit = run_to_exit(child);
  REQUIRE(WIFEXITED(exit.status));
  CHECK(WEXITSTATUS(exit.status) == 3);
}

// Another waitpid in the process (a waitpid(-1), a child watcher) reaped the workload first:
// wait4's ECHILD was read as exit code 0.
TEST_CASE("an exit status reaped by another wait is an error, never exit code 0", "[spawn]") {
  const Command c = exit_3();
  const Placement placement = nowhere();
  const auto reaped_elsewhere = [&] {
    PreparedCommand prepared(c);
    Spawned child = spawn_process(prepared, placement, /*fast=*/false);
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 3);
    return child;
  };
  const auto lost = [](const SpawnError& e) {
    CHECK(e.sys_errno() == ECHILD);
    CHECK_THAT(e.what(), Catch::Contains("exit status was lost") &&
                             Catch::Contains("SIG_IGN or SA_NOCLDWAIT") &&
                             Catch::Contains("waitpid(-1)"));
  };
  {  // wait4 alone (no deadline, nothing to call meanwhile)
    const Spawned child = reaped_elsewhere();
    try {
      wait_exit(child, std::nullopt, {}, std::chrono::milliseconds(50));
      FAIL("an exit status was given");
    } catch (const SpawnError& e) {
      lost(e);
    }
  }
  {  // through the pidfd (or the polling without one), with a tick
    const Spawned child = reaped_elsewhere();
    try {
      wait_exit(child, std::nullopt, [] {}, std::chrono::milliseconds(1));
      FAIL("an exit status was given");
    } catch (const SpawnError& e) {
      lost(e);
    }
    // reap() (after a kill, in a destructor) does not throw, nor make a status up.
    const Exit after = reap(child);
    CHECK(after.status == kLostStatus);
    CHECK_FALSE(WIFEXITED(after.status));
    CHECK_FALSE(WIFSIGNALED(after.status));
  }
}

// A measuring program (7-Zip's benchmark, the nn runner) run while SIGCHLD was ignored: its
// status was discarded by the kernel and read as 0, a success.
TEST_CASE("a measuring program's lost exit status is an error, never status 0", "[spawn]") {
  {
    ScopedSigchld ignored(SIG_IGN, 0);
    try {
      run_child({"/bin/sh", "-c", "exit 3"}, std::chrono::seconds(20), {}, "a test program");
      FAIL("a status was given");
    } catch (const Error& e) {
      CHECK(e.sys_errno() == ECHILD);
      CHECK_THAT(e.what(), Catch::Contains("/bin/sh's exit status was lost") &&
                               Catch::Contains("signal(SIGCHLD, SIG_DFL)"));
    }
  }
  const ChildOutput out =
      run_child({"/bin/sh", "-c", "exit 3"}, std::chrono::seconds(20), {}, "a test program");
  REQUIRE(WIFEXITED(out.status));
  CHECK(WEXITSTATUS(out.status) == 3);
}

// The timeout held only while the program wrote: one that closed its output and went on (or
// hung) was waited for until it ended, and its status given as the program's.
TEST_CASE("a measuring program is stopped at its timeout after its output ended", "[spawn]") {
  try {
    run_child({"/bin/sh", "-c", "exec >/dev/null 2>&1; exec sleep 30"}, std::chrono::seconds(1),
              {}, "a test program");
    FAIL("the program's status was given");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("/bin/sh ran longer than 1 s and was stopped"));
  }
  // One that ends after closing its output still gives its status.
  const ChildOutput out = run_child({"/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 0.2; exit 4"},
                                    std::chrono::seconds(20), {}, "a test program");
  REQUIRE(WIFEXITED(out.status));
  CHECK(WEXITSTATUS(out.status) == 4);
}

TEST_CASE("run() with SIGCHLD ignored is refused and leaves no slice, not exit code 0",
          "[kernel][spawn]") {
  REQUIRE_CGROUPS();
  const Device device = make_device("t", 1, 0.5, "128MiB");
  {
    ScopedSigchld ignored(SIG_IGN, 0);
    CHECK_THROWS_AS(run(exit_3(), device), SpawnError);
  }
  CHECK(our_slices().empty());
  CHECK(run(exit_3(), device).exit_code == 3);
}

TEST_CASE("a workload reaped by another wait fails its wait() and leaves no slice",
          "[kernel][spawn]") {
  REQUIRE_CGROUPS();
  {
    Slice slice(make_device("t", 1, 0.5, "128MiB"));
    Child child = slice.spawn(exit_3());
    int status = 0;
    REQUIRE(::waitpid(child.pid(), &status, 0) == child.pid());  // as a waitpid(-1) would
    REQUIRE(WEXITSTATUS(status) == 3);
    CHECK_THROWS_AS(child.wait(), SpawnError);
    // The result kept for a later wait() has no exit status rather than a made-up one.
    const Result r = child.wait();
    CHECK_FALSE(r.exit_code);
    CHECK_FALSE(r.signal);
    CHECK_FALSE(r.ok());
  }
  CHECK(our_slices().empty());
}

TEST_CASE("a workload reaped by another wait leaves the slice's other workloads running",
          "[kernel][spawn]") {
  REQUIRE_CGROUPS();
  // The lost status's error path ended every process in the slice, as an interrupt does.
  Slice slice(make_device("t", 1, 0.5, "128MiB"));
  Child other = slice.spawn(test::workload({"sleep", "30"}));
  Child child = slice.spawn(exit_3());
  int status = 0;
  REQUIRE(::waitpid(child.pid(), &status, 0) == child.pid());  // as a waitpid(-1) would
  CHECK_THROWS_AS(child.wait(), SpawnError);
  // Still running: not killed by the other's error (kill(pid, 0) sees a zombie too, so by
  // waitid without reaping: nothing has exited).
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(other.pid()), &info, WEXITED | WNOHANG | WNOWAIT) ==
          0);
  CHECK(info.si_pid == 0);
  slice.close();  // ends it
  CHECK(other.wait().signal == SIGKILL);
}
