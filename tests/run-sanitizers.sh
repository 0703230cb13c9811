#!/usr/bin/env bash
# The C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer, or ThreadSanitizer: a build
# of their own (build/asan or build/tsan), then edgeprof_tests on this host's cgroups; a report
# from any process (the tests or the programs they start) fails the run with exit 86. Not part
# of run-all.sh: a cold sanitizer build takes about 15 minutes on two CPUs (ccache makes later
# ones quick). docs/testing.md#sanitizers.
#
# usage: bash tests/run-sanitizers.sh [address|thread] [CATCH2 TEST SPEC...]
#        (default: address, every test)
# Environment: SANITIZER_BUILD_DIR (default build/asan or build/tsan).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
kind=${1:-address}
[[ $# -gt 0 ]] && shift
case "$kind" in
  address)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    dir=${SANITIZER_BUILD_DIR:-build/asan} ;;
  thread)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    dir=${SANITIZER_BUILD_DIR:-build/tsan} ;;
  *) echo "usage: bash tests/run-sanitizers.sh [address|thread] [TEST SPEC...]" >&2; exit 2 ;;
esac
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# Warnings are not errors here: GCC's -Wmaybe-uninitialized misfires on libstdc++'s <regex>
# (in Catch2's main) under the sanitizers' instrumentation. The test build is the one that
# holds the zero-warning line.
cmake -S . -B "$dir" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEDGEPROF_WERROR=OFF -DEDGEPROF_BUILD_BENCHMARKS=OFF -DEDGEPROF_BUILD_PROBE=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="${flags%% -fno-omit*}" \
  -DCMAKE_SHARED_LINKER_FLAGS="${flags%% -fno-omit*}" >/dev/null
cmake --build "$dir"
# Every report is an error that ends its process and is written to a file: the helper programs
# the tests start inside slices are instrumented too and inherit these, and a report in one of
# them must fail the run even where a test does not look at the helper's exit status.
reports=$(cd "$dir" && pwd)/sanitizer-report
rm -f "$reports".*
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:exitcode=86:log_path=$reports}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:exitcode=86:log_path=$reports}
# The tests fork children that start threads (a slice, its sampler) before they exec or exit.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=86:second_deadlock_stack=1:die_after_fork=0:log_path=$reports}
status=0
"$dir/tests/edgeprof_tests" "$@" || status=$?
if compgen -G "$reports.*" >/dev/null; then
  echo "run-sanitizers: sanitizer reports (the first lines of each):" >&2
  for f in "$reports".*; do
    echo "== $f" >&2
    head -40 "$f" >&2
  done
  exit 86
fi
exit "$status"
