// The tests' runner: their slices use a CPU ledger of their own (a temporary directory, which
// processes the tests start inherit), so that CPU choices do not depend on other edgeprof
// processes on the machine (a benchmark, a user's run). EDGEPROF_LEDGER_DIR, when set, is kept.
// And tests never spend a minute measuring this host's nn rating on first use (a catalog
// device's nn speed needs it): a test of that path asks for it itself, so a plan's notes do not
// depend on whether ncnn is installed (EDGEPROF_MEASURE_NN, when set, is kept).
#define CATCH_CONFIG_RUNNER
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

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
  const int result = Catch::Session().run(argc, argv);
  if (!made.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(made, ignored);
  }
  return result;
}
