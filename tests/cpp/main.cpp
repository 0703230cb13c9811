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
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sys/parse.hpp"

namespace {

int cases_with_leftovers = 0;

// "edgeprof-<pid>-<start time>-": this process's slices, not those of a process of another pid
// namespace (another CI job's) that has the same pid.
std::string own_prefix() {
  std::ifstream in("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto start = edgeprof::detail::parse_stat_starttime(stat);
  return "edgeprof-" + std::to_string(::getpid()) + "-" + std::to_string(start.value_or(0)) + "-";
}

// This process's slice directories under `dir` (down to `depth` levels). A directory that
// cannot be read, or went while it was read, is passed over, not the end of the search.
void find_own_slices(const std::filesystem::path& dir, const std::string& prefix, int depth,
                     std::vector<std::filesystem::path>& found) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_symlink(type_ec) || !it->is_directory(type_ec)) continue;
    if (it->path().filename().string().rfind(prefix, 0) == 0) {
      found.push_back(it->path());
    } else if (depth > 0) {
      find_own_slices(it->path(), prefix, depth - 1, found);
    }
  }
}

std::vector<std::filesystem::path> own_slices() {
  static const std::string prefix = own_prefix();
  std::vector<std::filesystem::path> found;
  find_own_slices("/sys/fs/cgroup", prefix, 6, found);
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
