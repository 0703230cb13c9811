// The fork fallback of spawn_process (other architectures, kernels before 5.3/5.7), forced on
// this kernel so that path stays tested where the fast path is the default.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cgroup/backend.hpp"
#include "sys/clone3.hpp"
#include "edgeprof/edgeprof.hpp"
#include "helpers.hpp"
#include "sys/spawn.hpp"

using namespace edgeprof;
using namespace edgeprof::detail;
using edgeprof::test::FakeTree;
using edgeprof::test::helper;

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
