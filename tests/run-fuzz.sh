#!/usr/bin/env bash
# The coverage-guided fuzzer (libFuzzer, clang-14): builds tests/fuzz in build/fuzz (the library
# instrumented, with AddressSanitizer and UndefinedBehaviorSanitizer) and runs every target of
# tests/fuzz/targets.hpp for SECONDS each, starting from its seeds (the fixtures, reports this
# library writes), its kept findings (tests/fixtures/fuzz/<target>/) and the corpus earlier runs
# grew (build/fuzz/corpus/<target>/). A finding (a crash, a sanitizer report, an exception a
# parser must not throw, a timeout) fails the run naming the file libFuzzer kept it in.
# docs/testing.md#fuzzing.
#
# usage: bash tests/run-fuzz.sh [SECONDS PER TARGET (default 10)] [TARGET...]
# Environment: FUZZ_BUILD_DIR (default build/fuzz), CXX (default clang++-14).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-10}
[[ $# -gt 0 ]] && shift
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "run-fuzz: SECONDS must be a whole number of seconds per target, not '$seconds'" >&2
  exit 2
fi
dir=${FUZZ_BUILD_DIR:-build/fuzz}
cxx=${CXX:-clang++-14}
if ! command -v "$cxx" >/dev/null; then
  echo "run-fuzz: $cxx not found: install clang (Debian: apt-get install clang-14" \
    "libclang-rt-14-dev) or set CXX to a clang++ with libFuzzer" >&2
  exit 2
fi
cc=${cxx/clang++/clang}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
CC=$cc CXX=$cxx cmake -S . -B "$dir" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGEPROF_BUILD_FUZZERS=ON -DEDGEPROF_WERROR=ON \
  -DEDGEPROF_BUILD_TESTS=OFF -DEDGEPROF_BUILD_BENCHMARKS=OFF -DEDGEPROF_BUILD_PROBE=OFF \
  -DEDGEPROF_INSTALL=OFF >/dev/null
cmake --build "$dir" --target edgeprof_fuzz
fuzzer=$dir/tests/fuzz/edgeprof_fuzz
if (($# == 0)); then
  mapfile -t names < <(EDGEPROF_FUZZ_TARGET=list "$fuzzer")
else
  names=("$@")
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=()
for name in "${names[@]}"; do
  corpus=$dir/corpus/$name
  findings=$dir/findings/$name
  mkdir -p "$corpus" "$findings"
  kept=tests/fixtures/fuzz/$name
  corpora=("$corpus")  # the first folder is the one libFuzzer adds to
  [[ -d $kept ]] && corpora+=("$kept")
  echo "== $name: ${seconds} s"
  status=0
  EDGEPROF_FUZZ_TARGET=$name EDGEPROF_FUZZ_SEEDS_TO=$corpus "$fuzzer" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$findings/" -print_final_stats=1 "${corpora[@]}" \
    >"$findings.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added)' \
    "$findings.log" | tr '\n' ' ' || true
  echo
  if ((status != 0)); then
    failed+=("$name")
    echo "run-fuzz: $name failed (exit $status); its log: $findings.log; the input:" >&2
    ls "$findings"/* >&2 2>/dev/null || true
    grep -m3 -E 'edgeprof_fuzz:|ERROR:|SUMMARY:' "$findings.log" >&2 || true
  fi
done
if ((${#failed[@]})); then
  echo "run-fuzz: findings in ${failed[*]}: fix the parser, and keep the input in" \
    "tests/fixtures/fuzz/<target>/ (the C++ tests and this script replay it)" >&2
  exit 1
fi
echo "run-fuzz: ${#names[@]} targets, ${seconds} s each, no finding"
