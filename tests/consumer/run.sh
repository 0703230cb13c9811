#!/usr/bin/env bash
# Tests edgeprof's packaging the way users consume it (in the style of fmtlib's test/*-test):
#   1. configure, build and install edgeprof to a temporary prefix;
#   2. build examples/cpp against that prefix with find_package(edgeprof CONFIG) and run it;
#   3. check the installed config and version files (tests/consumer/config), and the build
#      tree's (EDGEPROF_INSTALL_FROM) as a package directory;
#   4. build tests/consumer/subdir, which pulls edgeprof in with add_subdirectory() as a shared
#      library, and check the symbols it exports (in the background, while 1-3 run: the two
#      library builds are most of the time);
#   5. compile every installed public header on its own.
#
# usage: tests/consumer/run.sh [SOURCE_DIR]     (default: the checkout this script is in)
# Environment: CXX (compiler for the header checks, default c++), CMAKE_GENERATOR (default
# Ninja when ninja is on PATH), KEEP=1 keeps the temporary directory for inspection,
# EDGEPROF_INSTALL_FROM installs from that built tree instead of building one (step 1).
#
# Step 2 runs workloads under edgeprof, so it needs a host where edgeprof can create cgroups
# (root, or a delegated cgroup).
# The bash -c '...' snippets below expand their own "$1"...: single quotes on purpose.
# shellcheck disable=SC2016
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
if [[ ! -f $src/CMakeLists.txt || ! -d $src/include/edgeprof ]]; then
  echo "consumer: $src is not an edgeprof source tree" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/edgeprof-consumer.XXXXXX")
groups=()  # process groups started in the background: cleanup() stops those still running
cleanup() {
  # Only groups whose leader bash still counts as running: a finished one's id may be reused.
  local running g
  running=" $(jobs -rp | tr '\n' ' ') "
  for g in "${groups[@]}"; do
    if [[ $running == *" $g "* ]]; then
      kill -TERM -- "-$g" 2>/dev/null || true
      wait "$g" 2>/dev/null || true
    fi
  done
  if [[ ${KEEP:-0} == 1 ]]; then echo "consumer: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
exec 3>&2  # the script's stderr, for the traps: a step may be redirecting fd 2 to its log
trap 'echo "consumer: interrupted" >&3; exit 130' INT
trap 'exit 143' TERM

# in_group COMMAND...: runs COMMAND in a process group of its own and waits for it. Waiting in
# the wait builtin lets the INT and TERM traps run at once (for a foreground command bash
# defers them, and forgets a SIGINT that the command, like ninja, caught), and cleanup() can
# stop the whole group, compilers included.
in_group() {
  setsid -w "$@" &
  groups+=("$!")
  wait "$!"
}

prefix=$work/prefix
cxx=${CXX:-c++}
njobs=$(nproc 2>/dev/null || echo 2)
generator=()
if [[ -z ${CMAKE_GENERATOR:-} ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
# Keep find_package() to what we point it at: no ~/.cmake/packages entries from other builds.
no_registry=(-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)

passed=0
failed=0
failures=()
log=$work/step.log

pass() {
  passed=$((passed + 1))
  printf '  ok    %s\n' "$1"
}
# fail NAME [WHY]: without WHY, shows the end of the failed step's log.
fail() {
  failed=$((failed + 1))
  failures+=("$1")
  printf '  FAIL  %s\n' "$1"
  if [[ $# -gt 1 ]]; then
    printf '%s\n' "$2" | sed 's/^/        /'
  else
    tail -n 40 "$log" | sed 's/^/        | /'
  fi
  return 0
}
# step NAME COMMAND...: runs COMMAND with its output in $log; passes when it succeeds.
step() {
  local name=$1 t0=$SECONDS
  shift
  if in_group "$@" >"$log" 2>&1; then
    ((SECONDS - t0 < 2)) || name+=" ($((SECONDS - t0)) s)"
    pass "$name"
    return 0
  fi
  fail "$name"
  return 1
}
# expect_contains NAME FILE TEXT: fails NAME unless FILE contains TEXT.
expect_contains() {
  if grep -qF -- "$3" "$2"; then return 0; fi
  fail "$1" "expected the output to contain: $3"$'\n'"got:"$'\n'"$(head -c 2000 "$2")"
  return 1
}

# run_profile ARGS...: runs profile_command; sets rc, writes $work/out and $work/err, and sets
# leftovers to the cgroups the run left behind. edgeprof names a slice
# edgeprof-<owner pid>-<start>-<n>-<pid namespace>, so slices of other edgeprof users on this host (running
# tests, say) are not mistaken for ours.
run_profile() {
  rc=0
  # The runs check packaging, not speed: on a host without a cached nn rating, a catalog
  # device's first run measured it (a minute, and the own share after it) past the watchdog.
  # (A rating cached already is still used.)
  export EDGEPROF_MEASURE_NN=0
  "$work/example/profile_command" "$@" >"$work/out" 2>"$work/err" &
  local pid=$! watchdog
  # A hung run fails after 60 s instead of hanging the test; SIGTERM lets it remove its slice.
  { timeout 60 tail --pid="$pid" -s 0.1 -f /dev/null ||
      { kill -TERM "$pid"; sleep 5; kill -KILL "$pid"; }; } >/dev/null 2>&1 &
  watchdog=$!
  wait "$pid" || rc=$?
  wait "$watchdog" || true
  leftovers=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "edgeprof-$pid-*" 2>/dev/null || true)
}
# The outputs of the last run_profile, for failure messages.
outputs() {
  printf 'exit status %s\nstdout:\n%s\nstderr:\n%s\n' "$rc" "$(cat "$work/out")" \
    "$(cat "$work/err")"
}

start=$SECONDS
echo "consumer: testing the packaging of $src"

# 4, started first, in the background. A Debug build of a shared library: a second
# configuration of the library, quicker to compile than the Release one being installed, and
# the one whose exported symbols are checked (tests/check_visibility.py).
setsid -w bash -c '
    cmake -S "$1/subdir" -B "$2/subdir-build" "${@:5}" -DCMAKE_BUILD_TYPE=Debug \
      -DBUILD_SHARED_LIBS=ON -DEDGEPROF_SOURCE_DIR="$3" &&
    cmake --build "$2/subdir-build" -j "$4" &&
    "$2/subdir-build/subdir_consumer" &&
    "${PYTHON:-python3}" "$1/../check_visibility.py" "$2/subdir-build/edgeprof-build/libedgeprof.so" || exit
    echo "$SECONDS" >"$2/subdir.seconds"' \
  _ "$here" "$work" "$src" "$njobs" "${generator[@]}" >"$work/subdir.log" 2>&1 &
subdir_pid=$!
groups+=("$subdir_pid")

# 1. Build and install once; everything below reuses this prefix. With EDGEPROF_INSTALL_FROM (a
# built tree of this source, as ctest passes its own), that tree's library is installed: the
# same install rules, without compiling the library a third time.
installed=0
if [[ -n ${EDGEPROF_INSTALL_FROM:-} ]]; then
  install_step=("install edgeprof from $EDGEPROF_INSTALL_FROM to a temporary prefix" bash -c '
      cmake --build "$1" --target edgeprof && cmake --install "$1" --prefix "$2"' _ \
      "$EDGEPROF_INSTALL_FROM" "$prefix")
else
  install_step=("install edgeprof (Release) to a temporary prefix" bash -c '
      cmake -S "$1" -B "$2/build" "${@:5}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$3" -DEDGEPROF_BUILD_TESTS=OFF -DEDGEPROF_BUILD_BENCHMARKS=OFF &&
      cmake --build "$2/build" -j "$4" &&
      cmake --install "$2/build"' _ "$src" "$work" "$prefix" "$njobs" "${generator[@]}")
fi
if step "${install_step[@]}"; then
  installed=1
  missing=()
  config=$(find "$prefix" -name edgeprofConfig.cmake -print -quit)
  config_dir=$(dirname "${config:-$prefix/lib/cmake/edgeprof/none}")
  for f in edgeprofConfig.cmake edgeprofConfigVersion.cmake edgeprofTargets.cmake; do
    [[ -f $config_dir/$f ]] || missing+=("$f")
  done
  for h in "$src"/include/edgeprof/*.hpp; do
    [[ -f $prefix/include/edgeprof/${h##*/} ]] || missing+=("include/edgeprof/${h##*/}")
  done
  if ((${#missing[@]} == 0)); then
    pass "installed: config, version file, targets and every public header"
  else
    fail "installed: config, version file, targets and every public header" \
      "missing: ${missing[*]}"
  fi
fi

# 2. The example, built as a user would: find_package(edgeprof CONFIG) from the prefix.
example_built=0
if ((installed)); then
  if step "build examples/cpp with find_package(edgeprof 0.1 CONFIG)" bash -c '
      cmake -S "$1/examples/cpp" -B "$2/example-build" "${@:4}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$3" &&
      cmake --build "$2/example-build" &&
      mkdir -p "$2/example" && cp "$2/example-build/profile_command" "$2/example/"' \
      _ "$src" "$work" "$prefix" "${generator[@]}" "${no_registry[@]}"; then
    found_dir=$(sed -n 's/^edgeprof_DIR:PATH=//p' "$work/example-build/CMakeCache.txt")
    if [[ $found_dir == "$prefix"/* ]]; then
      pass "find_package found the installed package"
      example_built=1
    else
      fail "find_package found the installed package" "edgeprof_DIR is '$found_dir', not in $prefix"
    fi
  fi
else
  fail "build examples/cpp with find_package(edgeprof 0.1 CONFIG)" "skipped: the install failed"
fi

if ((example_built)); then
  name="profile_command --device raspberry-pi-4 -- /bin/true: exit 0 and a summary"
  run_profile --device raspberry-pi-4 -- /bin/true
  if [[ $rc -ne 0 ]]; then
    fail "$name" "$(outputs)"
  elif [[ -n $leftovers ]]; then
    fail "$name" "cgroups left behind: $leftovers"
  elif expect_contains "$name" "$work/out" "raspberry-pi-4" &&
       expect_contains "$name" "$work/out" "exit code 0" &&
       expect_contains "$name" "$work/out" "wall time"; then
    pass "$name"
  fi

  name="profile_command --json -- /bin/sh -c 'exit 3': exit 3 and JSON"
  run_profile --json -- /bin/sh -c 'exit 3'
  if [[ $rc -ne 3 ]]; then
    fail "$name" "$(outputs)"
  elif [[ -n $leftovers ]]; then
    fail "$name" "cgroups left behind: $leftovers"
  elif expect_contains "$name" "$work/out" '"exit_code":3' &&
       expect_contains "$name" "$work/out" '"command":["/bin/sh","-c","exit 3"]'; then
    # The report is one JSON object on the last line; check that it parses, if python3 is here.
    if command -v python3 >/dev/null &&
       ! why=$(tail -n 1 "$work/out" | python3 -c 'import json, sys; json.load(sys.stdin)' 2>&1)
    then
      fail "$name" "the last line of stdout is not valid JSON: $why"
    else
      pass "$name"
    fi
  fi

  name="profile_command --device no-such-device -- /bin/true: exit 2 naming the device"
  run_profile --device no-such-device -- /bin/true
  if [[ $rc -ne 2 ]]; then
    fail "$name" "$(outputs)"
  elif expect_contains "$name" "$work/err" "profile_command: " &&
       expect_contains "$name" "$work/err" "no-such-device"; then
    pass "$name"
  fi

  name="profile_command -- /no/such/program: exit 2 naming the program, slice removed"
  run_profile -- /no/such/program
  if [[ $rc -ne 2 ]]; then
    fail "$name" "$(outputs)"
  elif [[ -n $leftovers ]]; then
    fail "$name" "cgroups left behind: $leftovers"
  elif expect_contains "$name" "$work/err" "/no/such/program"; then
    pass "$name"
  fi

  name="profile_command --timeout 0.2 -- sleep 10: killed, exit 137, slice removed"
  run_profile --timeout 0.2 -- sleep 10
  if [[ $rc -ne 137 ]]; then
    fail "$name" "$(outputs)"
  elif [[ -n $leftovers ]]; then
    fail "$name" "cgroups left behind: $leftovers"
  elif expect_contains "$name" "$work/out" "killed at the timeout"; then
    pass "$name"
  fi
fi

# 3. The config and version files on their own.
if ((installed)); then
  step "find_package(edgeprof 0.1) accepted, 0.2 and 1.0 refused, version.hpp agrees" \
    cmake -S "$here/config" -B "$work/config-version" "${generator[@]}" "${no_registry[@]}" \
      -DCMAKE_PREFIX_PATH="$prefix" -DCHECK=version || true
  # A static library's config needs libcgroup; a shared one's does not (checked below).
  if [[ -z $(find "$prefix" -name 'libedgeprof.so*' -print -quit) ]]; then
    step "without libcgroup, find_package(edgeprof QUIET) reports not found" \
      env PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= \
      cmake -S "$here/config" -B "$work/config-no-libcgroup" "${generator[@]}" \
        "${no_registry[@]}" -DCMAKE_PREFIX_PATH="$prefix" -DCHECK=no-libcgroup || true
  fi
else
  fail "config and version file checks" "skipped: the install failed"
fi
# The config of a shared library needs no libcgroup (it links it itself); a static one's does.
step "without libcgroup, a shared library's config is found and a static one's is not" \
  env PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= \
  cmake -S "$here/config" -B "$work/config-template" "${generator[@]}" "${no_registry[@]}" \
    -DCHECK=template -DTEMPLATE="$src/cmake/edgeprofConfig.cmake.in" || true
# The build tree is a package directory too (its config included a targets file only the
# install wrote).
if [[ -n ${EDGEPROF_INSTALL_FROM:-} ]]; then
  step "find_package(edgeprof 0.1) from the build tree (-Dedgeprof_DIR=<build>)" \
    cmake -S "$here/config" -B "$work/config-build-tree" "${generator[@]}" "${no_registry[@]}" \
      -Dedgeprof_DIR="$EDGEPROF_INSTALL_FROM" -DCHECK=found || true
fi

# 5. Every installed public header compiles on its own.
if ((installed)); then
  for h in "$src"/include/edgeprof/*.hpp; do
    header=edgeprof/${h##*/}
    step "$header compiles on its own" bash -c \
      'printf "#include <%s>\n" "$1" | "$2" -std=c++17 -Wall -Wextra -Wpedantic -Werror \
         -fsyntax-only -I"$3/include" -x c++ -' \
      _ "$header" "$cxx" "$prefix" || true
  done
else
  fail "public headers compile on their own" "skipped: the install failed"
fi

# 4, collected: options default OFF (the CMakeLists checks that itself), and it links and runs.
name="add_subdirectory consumer (Debug, shared) configures, builds, runs and exports only the API"
subdir_rc=0
wait "$subdir_pid" || subdir_rc=$?
if ((subdir_rc == 0)); then
  pass "$name ($(cat "$work/subdir.seconds") s, in the background)"
else
  log=$work/subdir.log fail "$name"
fi

echo "consumer: took $((SECONDS - start)) s"
if ((failed)); then
  echo "consumer: $passed passed, $failed failed:"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "consumer: $passed passed, 0 failed"
