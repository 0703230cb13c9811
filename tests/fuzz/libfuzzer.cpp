// The coverage-guided fuzzer (libFuzzer, clang): one program for every target of targets.hpp,
// chosen by EDGEPROF_FUZZ_TARGET. tests/run-fuzz.sh builds and runs it; docs/testing.md#fuzzing.
//
//   EDGEPROF_FUZZ_TARGET=list           prints the targets' names and exits
//   EDGEPROF_FUZZ_TARGET=<name>         fuzzes that target (libFuzzer's own flags and corpus
//                                       folders follow on the command line)
//   EDGEPROF_FUZZ_SEEDS_TO=<folder>     first writes the target's seeds there (its first corpus)
//
// An input its parsers must not answer as they did (an exception not edgeprof's, or any from a
// parser of kernel text) aborts, and libFuzzer keeps it as a crash; so does anything the
// sanitizers report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "targets.hpp"

namespace {

const edgeprof::fuzz::Target* g_target = nullptr;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "edgeprof_fuzz: %s\nset EDGEPROF_FUZZ_TARGET to one of:", why);
  for (const auto& t : edgeprof::fuzz::targets()) std::fprintf(stderr, " %s", t.name.c_str());
  std::fprintf(stderr, "\n");
  std::exit(2);
}

void write_seeds(const edgeprof::fuzz::Target& target, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "edgeprof_fuzz: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    std::exit(2);
  }
  for (const std::string& seed : target.seeds()) {
    // Named by content, as libFuzzer names its own: writing them again changes nothing.
    const auto path = dir / ("seed-" + std::to_string(std::hash<std::string>{}(seed)));
    std::ofstream out(path, std::ios::binary);
    out << seed;
    if (!out) {
      std::fprintf(stderr, "edgeprof_fuzz: cannot write %s\n", path.c_str());
      std::exit(2);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("EDGEPROF_FUZZ_TARGET");
  if (!name || !*name) usage("no target");
  if (std::string(name) == "list") {
    for (const auto& t : edgeprof::fuzz::targets()) std::printf("%s\n", t.name.c_str());
    std::exit(0);
  }
  g_target = edgeprof::fuzz::find_target(name);
  if (!g_target) usage((std::string("no target named '") + name + "'").c_str());
  if (const char* dir = std::getenv("EDGEPROF_FUZZ_SEEDS_TO"); dir && *dir) {
    write_seeds(*g_target, dir);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string what = edgeprof::fuzz::check(*g_target, input);
  if (!what.empty()) {
    std::fprintf(stderr, "edgeprof_fuzz: %s: %s\n", g_target->name.c_str(), what.c_str());
    std::abort();
  }
  return 0;
}
