#!/usr/bin/env bash
# Installs what the tests need and runs every test tier:
#   1. C++ (ctest): unit tests, real-kernel tests on this machine's cgroups, the same tests in a
#      cgroup v2 qemu VM, packaging (install + find_package / add_subdirectory consumers), the
#      benchmarks' quick runs, the header docs;
#   2. the coverage-guided fuzzer (libFuzzer, clang) on every parser of outside input, briefly;
#   3. Python (pytest): the API and the CLI on real cgroups, in the cgroup v2 VM and here;
#   4. a final check that no edgeprof cgroup was left behind.
# Tiers, what each checks and how long each takes: docs/testing.md.
#
# Usage: bash tests/run-all.sh           (as root; Debian 12 or similar): every tier
#        bash tests/run-all.sh --quick   the host's C++ and Python tests only: no VM, no
#                                        packaging, no benchmarks, no libFuzzer (a few
#                                        minutes, warm build)
# Environment: BUILD_DIR (default build/test), EDGEPROF_SKIP_VM=1 skips the VM tier, PYTHON.
# ccache is used for both builds when it is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build/test}
# The active virtual environment's python3, else the checkout's .venv (README's first command
# makes it), else python3.
if [[ -z ${PYTHON:-} && -z ${VIRTUAL_ENV:-} && -x .venv/bin/python3 ]]; then
  PYTHON=$PWD/.venv/bin/python3
fi
PYTHON=${PYTHON:-python3}
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: bash tests/run-all.sh [--quick]" >&2; exit 2 ;;
esac
((quick)) && EDGEPROF_SKIP_VM=1

step() { printf '\n=== %s  (%s s)\n' "$*" "$SECONDS"; }

packages=(g++ pkg-config cmake ninja-build libcgroup-dev libfmt-dev nlohmann-json3-dev libeigen3-dev libtomlplusplus-dev catch2 cgroup-tools postgresql doxygen 7zip)
[[ ${EDGEPROF_SKIP_VM:-0} == 1 ]] || packages+=(qemu-system-x86 linux-image-amd64 busybox-static cpio)
((quick)) || packages+=(clang-14 libclang-rt-14-dev)  # the coverage-guided fuzzer (libFuzzer)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  if [[ $(id -u) != 0 ]]; then
    echo "run-all.sh: missing packages (${missing[*]}); run as root or install them first" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"  # pip's build
fi

step "installing the Python package with its test dependencies"
"$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore ".[test]"

step "building the C++ library, tests and benchmarks (warnings are errors)"
vm=ON
[[ ${EDGEPROF_SKIP_VM:-0} == 1 ]] && vm=OFF
cmake -S . -B "$BUILD_DIR" -G Ninja -DEDGEPROF_WERROR=ON -DEDGEPROF_TEST_VM=$vm \
  "${launcher[@]}" >/dev/null
cmake --build "$BUILD_DIR"

if ((quick)); then
  step "C++ tests on this host (ctest -R cpp-host)"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -R '^cpp-host$'
else
  step "C++ tests (ctest)"
  ctest --test-dir "$BUILD_DIR" --output-on-failure
fi

step "coverage-guided fuzzing of the parsers (tests/run-fuzz.sh, 5 s per target)"
if ((quick)); then
  echo "skipped (--quick)"
else
  bash tests/run-fuzz.sh 5
fi

step "Python tests in the cgroup v2 VM (pytest)"
if [[ $vm == ON ]]; then
  PYTHON=$PYTHON tests/vm/run-pytest-v2.sh -q
else
  echo "skipped (EDGEPROF_SKIP_VM=1 or --quick)"
fi

step "Python tests (pytest)"
"$PYTHON" -m pytest -p no:cacheprovider tests/python

step "leftover cgroups"
left=$(find /sys/fs/cgroup -maxdepth 6 -type d -name 'edgeprof-[0-9]*' 2>/dev/null || true)
if [[ -n $left ]]; then
  echo "the tests left these cgroups behind:" >&2
  echo "$left" >&2
  exit 1
fi
echo "none"
step "done"
