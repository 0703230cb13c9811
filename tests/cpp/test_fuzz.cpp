// Mutation fuzzing of every parser of outside input (issue 36): cgroup and /proc files, device
// files, reports, calibrations, the runners' and 7-Zip's output, sizes and CPU lists. The
// targets (tests/fuzz/targets.hpp, shared with the libFuzzer harness) start from real inputs
// (the fixtures, and reports and calibrations this library writes); each is mutated with a
// fixed seed and fed to its parsers: a parser of kernel text must never throw, the others only
// edgeprof::Error (a clear message), never another exception.
//
// The short form runs in the test command (EDGEPROF_FUZZ_ITERATIONS mutations per target,
// default 300); a longer one: EDGEPROF_FUZZ_ITERATIONS=200000 EDGEPROF_FUZZ_SEED=N
// build/test/tests/edgeprof_tests "[fuzz]". A finding is written to a file named in the
// failure; copy it into tests/fixtures/fuzz/<target>/ to keep it as a regression input, which
// every run (and tests/run-fuzz.sh) replays first.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../fuzz/targets.hpp"

using namespace edgeprof::fuzz;

namespace {

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const std::uint64_t n = std::strtoull(v, &end, 10);
  if (*end != '\0') FAIL(name << " must be a whole number, not '" << v << "'");
  return n;
}

// One mutation of `in`: a byte changed, a run deleted or repeated, a number made huge, bytes
// that parsers treat specially, or a cut.
std::string mutate(const std::string& in, std::mt19937_64& rng) {
  std::string s = in;
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  static const char kSpecial[] = {'\0', '\n', '\r', ' ', '\t', '-', '+', '.', '9', '0', 'e',
                                  '"',  '{',  '}',  '[', ']',  ':', ',', '=', '#', '\\', '\xff',
                                  '\x80'};
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // a special byte
        if (!s.empty()) s[pick(s.size())] = kSpecial[pick(sizeof kSpecial)];
        break;
      case 2: {  // delete a run
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(64, s.size() - at)));
        break;
      }
      case 3: {  // repeat a run
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        const std::string run = s.substr(at, 1 + pick(64));
        s.insert(at, run);
        break;
      }
      case 4:  // a long number
        s.insert(pick(s.size() + 1), std::string(1 + pick(400), '9'));
        break;
      case 5:  // cut
        s.resize(pick(s.size() + 1));
        break;
      case 6:  // a negative sign or a decimal point before a digit
        for (std::size_t i = pick(s.size() + 1); i < s.size(); ++i) {
          if (s[i] >= '0' && s[i] <= '9') {
            s.insert(i, pick(2) ? "-" : ".");
            break;
          }
        }
        break;
      default:  // a random byte inserted
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                 static_cast<char>(rng()));
        break;
    }
  }
  return s;
}

// Where a failing input goes, for the report and for keeping.
std::string keep_finding(const std::string& target, const std::string& input) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path =
      (dir / ("edgeprof-fuzz-" + target + "-" + std::to_string(std::hash<std::string>{}(input))))
          .string();
  std::ofstream(path, std::ios::binary) << input;
  return path;
}

// Feeds the target the regression inputs kept for it, its seeds, and mutations of them.
void fuzz(const Target& target) {
  std::vector<std::string> inputs = kept_findings(target);
  const std::vector<std::string> seeds = target.seeds();
  REQUIRE_FALSE(seeds.empty());
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  // FNV-1a of the target's name: the same mutations with every standard library.
  std::uint64_t name_hash = 14695981039346656037ull;
  for (unsigned char ch : target.name) name_hash = (name_hash ^ ch) * 1099511628211ull;
  std::mt19937_64 rng(env_number("EDGEPROF_FUZZ_SEED", 36) ^ name_hash);
  const std::uint64_t iterations = env_number("EDGEPROF_FUZZ_ITERATIONS", 300);
  for (std::uint64_t i = 0; i < iterations; ++i) {
    inputs.push_back(mutate(seeds[i % seeds.size()], rng));
  }
  std::size_t failures = 0;
  for (const std::string& input : inputs) {
    const std::string what = check(target, input);
    if (!what.empty() && failures++ < 3) {  // the first few: enough to start from
      FAIL_CHECK(target.name << ": " << what << " (input kept in "
                             << keep_finding(target.name, input) << ")");
    }
  }
  CHECK(failures == 0);
}

void fuzz_all(Allowed allowed) {
  int n = 0;
  for (const Target& t : targets()) {
    if (t.allowed != allowed) continue;
    ++n;
    SECTION(t.name) { fuzz(t); }
  }
  CHECK(n > 0);
}

}  // namespace

TEST_CASE("fuzz: the parsers of kernel files never throw", "[fuzz]") {
  // cgroup and /proc files, /proc/cpuinfo, /proc/PID/maps, the phase channel.
  fuzz_all(Allowed::nothing);
}

TEST_CASE("fuzz: device files, reports, calibrations, runner output, 7-Zip's table, sizes and "
          "CPU lists fail only with edgeprof errors",
          "[fuzz]") {
  fuzz_all(Allowed::edgeprof_errors);
}

TEST_CASE("fuzz: every target has seeds, and its kept findings are read", "[fuzz]") {
  std::vector<std::string> names;
  for (const Target& t : targets()) {
    names.push_back(t.name);
    CHECK_FALSE(t.seeds().empty());
  }
  // The findings folders are named after targets: a folder no target reads is a lost input.
  const std::filesystem::path dir = std::filesystem::path(EDGEPROF_FIXTURES) / "fuzz";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    const std::string folder = e.path().filename().string();
    CHECK(std::find(names.begin(), names.end(), folder) != names.end());
    const Target* t = find_target(folder);
    if (t) CHECK_FALSE(kept_findings(*t).empty());
  }
  CHECK(find_target("no-such-target") == nullptr);
}
