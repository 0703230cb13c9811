// The fuzz targets: every parser of outside input, the real inputs it starts from, and what it
// may throw. One table for both fuzzers: the mutation fuzzer in the C++ tests
// (tests/cpp/test_fuzz.cpp, any compiler, every test run) and the coverage-guided libFuzzer
// harness (tests/fuzz/libfuzzer.cpp, clang; tests/run-fuzz.sh). docs/testing.md#fuzzing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprof::fuzz {

// What a parser may do with bad input besides parsing it.
enum class Allowed {
  nothing,          // a parser of kernel text: parse or skip, never throw
  edgeprof_errors,  // a parser of what people and programs write: an edgeprof::Error, a message
};

struct Target {
  std::string name;  // also the folder of its kept findings, tests/fixtures/fuzz/<name>/
  Allowed allowed = Allowed::edgeprof_errors;
  std::function<std::vector<std::string>()> seeds;    // real inputs: fixtures, reports written
  std::function<void(const std::string&)> parse;      // feeds every parser of this kind of input
};

// Every target, in a fixed order.
const std::vector<Target>& targets();

// The target named `name`, or nullptr.
const Target* find_target(std::string_view name);

// Feeds `input` to the target's parsers: "" when they parsed it or failed as allowed, else what
// went wrong ("an exception not edgeprof's: ...").
std::string check(const Target& target, const std::string& input);

// The inputs that once broke the target's parsers, kept in tests/fixtures/fuzz/<name>/.
std::vector<std::string> kept_findings(const Target& target);

// Where kept findings live (the fixtures' fuzz folder).
std::string kept_findings_dir(const Target& target);

}  // namespace edgeprof::fuzz
