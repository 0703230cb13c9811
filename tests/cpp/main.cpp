// The tests' runner: their slices use a CPU ledger of their own (a temporary directory, which
// processes the tests start inherit), so that CPU choices do not depend on other edgeprof
// processes on the machine (a benchmark, a user's run). EDGEPROF_LEDGER_DIR, when set, is kept.
// And tests never spend a minute measuring this host's nn rating on first use (a catalog
// device's nn speed needs it): a test of that path asks for it itself, so a plan's notes do not
// depend on whether ncnn is installed (EDGEPROF_MEASURE_NN, when set, is kept).
//
// No slice outlives the test case that made it: after each case the runner looks for this
// process's slices (edgeprof-<pid>-...) under /sys/fs/cgroup, names the case that left them,
// removes them and fails the run. (A slice left by the tests once surfaced, as a dead owner's,
// in a later Python test, with nothing to say which test had made it.)
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

int cases_with_leftovers = 0;

// This process's slice directories, deepest first (a slice's core groups before the slice).
std::vector<std::filesystem::path> own_slices() {
  namespace fs = std::filesystem;
  const std::string prefix = "edgeprof-" + std::to_string(::getpid()) + "-";
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it("/sys/fs/cgroup", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it.depth() > 6) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ec)) continue;
    if (it->path().filename().string().rfind(prefix, 0) == 0) {
      found.push_back(it->path());
      it.disable_recursion_pending();
    }
  }
  return found;
}

void remove_tree(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& sub : std::filesystem::directory_iterator(dir, ec)) {
    if (sub.is_directory(ec)) remove_tree(sub.path());
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    std::fprintf(stderr, "  could not remove %s either: %s\n", dir.c_str(), std::strerror(errno));
  }
}

struct NoSliceOutlivesItsTest : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const auto left = own_slices();
    if (left.empty()) return;
    ++cases_with_leftovers;
    std::fprintf(stderr, "LEFT BEHIND: test case \"%s\" ended with %zu of this process's slices "
                 "in place:\n", stats.testInfo.name.c_str(), left.size());
    for (const auto& dir : left) {
      std::fprintf(stderr, "  %s\n", dir.c_str());
      remove_tree(dir);
    }
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(NoSliceOutlivesItsTest)

int main(int argc, char* argv[]) {
  ::setenv("EDGEPROF_MEASURE_NN", "0", 0);
  std::string made;
  if (const char* set = ::getenv("EDGEPROF_LEDGER_DIR"); !set || !*set) {
    char dir[] = "/tmp/edgeprof-test-ledger-XXXXXX";
    if (::mkdtemp(dir) != nullptr) {
      made = dir;
      ::setenv("EDGEPROF_LEDGER_DIR", dir, 1);
    }
  }
  int result = Catch::Session().run(argc, argv);
  if (!made.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(made, ignored);
  }
  if (cases_with_leftovers > 0) {
    std::fprintf(stderr, "%d test case(s) left slices behind (LEFT BEHIND above)\n",
                 cases_with_leftovers);
    if (result == 0) result = 1;
  }
  return result;
}
