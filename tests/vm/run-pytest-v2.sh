#!/usr/bin/env bash
# run-pytest-v2.sh: run the Python tests (tests/python, pytest) inside the
# pure cgroup v2 qemu VM of run-v2.sh, against the installed edgeprof.
#
# Usage: tests/vm/run-pytest-v2.sh [PYTEST ARGS...]
#
# Runs, in the VM (see run-v2.sh: cgroup2 only, 5 GiB by default, started in /runner),
#   python3 -m pytest -p no:cacheprovider CHECKOUT/tests/python [PYTEST ARGS...]
# with the host's python3 ($PYTHON if set; by its real path, e.g.
# /root/.pyenv/versions/3.11.7/bin/python3.11, which is also sys.executable in
# the VM; in a virtual environment, the environment's bin/python3 with its
# pyvenv.cfg and site-packages, as on Debian, whose own python3 refuses pip
# outside one) and exits with pytest's status, or run-v2.sh's own (124
# timeout, 125 VM failure).
# CHECKOUT is the checkout holding this script; its pyproject.toml (pytest's
# configuration) comes along. If an argument names an existing file or
# directory (optionally with ::node-id), CHECKOUT/tests/python is not added:
#   tests/vm/run-pytest-v2.sh -v tests/python/test_cli.py::test_help_has_examples
# Relative paths work as on the host (the VM starts in the same directory),
# but only CHECKOUT/tests/python is copied in. Output is uncoloured unless
# stdout is a terminal. Install edgeprof first (README's first command).
#
# The interpreter's tree (1.1 GB) is far too big for an initramfs, so only a
# minimal subset goes in, at the same absolute paths, via EDGEPROF_VM_EXTRA:
# the stdlib without test, idlelib, tkinter, turtledemo, ensurepip, lib2to3,
# pydoc_data, config-* and site-packages; lib-dynload without CPython's test
# modules and _tkinter; libpython; from site-packages what the tests import:
# edgeprof, numpy (+ numpy.libs), pytest, _pytest, pluggy, iniconfig,
# packaging, pygments and py.py (the last two imported by pytest 9); and the
# system libraries ldd lists for the extension modules. No .dist-info goes
# in, so pytest loads no entry-point plugins (pytest-benchmark, hypothesis)
# in the VM. run-v2.sh adds the interpreter's bin/ siblings (small scripts).
# Expect ~80 MiB of initramfs and ~10 s to build it, ~10 s to boot.
#
# Environment: EDGEPROF_VM_EXTRA (more paths to copy in), EDGEPROF_VM_KERNEL
# and EDGEPROF_VM_RUNNER are passed on to run-v2.sh.

set -euo pipefail

readonly SELF=${0##*/}
msg() { printf '%s: %s\n' "$SELF" "$*" >&2; }
die() {
  msg "error: $*"
  exit 125
}

case ${1:-} in
  -h | --help)
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"
    exit 0
    ;;
esac

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
checkout=$(cd -- "$here/../.." && pwd -P)
tests_dir=$checkout/tests/python
run_v2=$here/run-v2.sh
[[ -d $tests_dir ]] || die "no Python tests at $tests_dir"
[[ -x $run_v2 ]] || die "$run_v2 is missing or not executable"
host_python=${PYTHON:-python3}
command -v "$host_python" >/dev/null || die "$host_python not found in PATH"

# The host interpreter tells where its pieces are: line 1 is the interpreter
# to run (PROGRAM), the other lines the paths to copy in.
listing=$(
  "$host_python" - <<'PY'
import importlib.util
import os
import subprocess
import sys
import sysconfig

def fail(message):
    sys.exit(f"run-pytest-v2.sh: error: {message}")

venv = sys.prefix != sys.base_prefix
# In a virtual environment the interpreter is the environment's bin/python3 (a link to the
# base one, copied as a file), which finds the environment through its pyvenv.cfg.
exe = os.path.abspath(sys.executable) if venv else os.path.realpath(sys.executable)
stdlib = sysconfig.get_path("stdlib")
site = sysconfig.get_path("purelib")
dynload = sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload")
libdir = sysconfig.get_config_var("LIBDIR")
ldlibrary = sysconfig.get_config_var("LDLIBRARY")  # libpython3.11.so, or .a if static

SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
               "pydoc_data", "site-packages", "dist-packages"}
# Extension modules nobody imports here: CPython's own test modules, and
# _tkinter (tkinter is left out; it would drag in X11 and Tcl/Tk).
SKIP_DYNLOAD = ("_test", "_ctypes_test", "_xxtestfuzz", "xxlimited", "_tkinter")
# What the tests import, and what that imports (pytest 9 needs pygments and
# its py.py shim).
PACKAGES = ["edgeprof", "numpy", "pytest", "_pytest", "pluggy", "iniconfig", "packaging",
            "pygments", "py"]

paths = []
if venv:
    cfg = os.path.join(sys.prefix, "pyvenv.cfg")
    if not os.path.isfile(cfg):
        fail(f"{sys.prefix} is a virtual environment without a pyvenv.cfg")
    paths.append(cfg)
for name in sorted(os.listdir(stdlib)):
    full = os.path.join(stdlib, name)
    if name in SKIP_STDLIB or name.startswith("config-") or full == dynload:
        continue
    paths.append(full)
for name in sorted(os.listdir(dynload)):
    if not name.startswith(SKIP_DYNLOAD):
        paths.append(os.path.join(dynload, name))
if ldlibrary and ldlibrary.endswith(".so"):
    for name in sorted(os.listdir(libdir)):
        if name.startswith(ldlibrary):  # libpython3.11.so, libpython3.11.so.1.0
            paths.append(os.path.join(libdir, name))

for pkg in PACKAGES:
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.origin:
        fail(f"{pkg} is not installed for {exe}")
    top = os.path.dirname(spec.origin) if spec.submodule_search_locations else spec.origin
    if os.path.dirname(top) != site:
        fail(f"{pkg} is at {top}, not in {site} (an editable install?)")
    paths.append(top)
    if not spec.submodule_search_locations and spec.cached and os.path.isfile(spec.cached):
        paths.append(spec.cached)  # site-packages/__pycache__/py.cpython-311.pyc
    libs = top + ".libs"  # auditwheel's vendored libraries (numpy.libs)
    if os.path.isdir(libs):
        paths.append(libs)

# System libraries of all copied ELF files (run-v2.sh only does this for
# PROGRAM and its siblings); the copied trees already hold their own.
copied = tuple(p + os.sep for p in paths if os.path.isdir(p))
candidates = []
for p in paths:
    if os.path.isdir(p):
        candidates += [os.path.join(r, f) for r, _, files in os.walk(p) for f in files]
    else:
        candidates.append(p)
elves = []
for f in candidates:
    if ".so" in os.path.basename(f):
        with open(f, "rb") as fh:
            if fh.read(4) == b"\x7fELF":
                elves.append(f)
libs = set()
for chunk in range(0, len(elves), 200):
    out = subprocess.run(["ldd", *elves[chunk:chunk + 200]], capture_output=True, text=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    for line in out.splitlines():
        line = line.strip()
        if " => not found" in line:
            print(f"run-pytest-v2.sh: warning: {line.split()[0]} (needed by a copied extension"
                  " module) not found by ldd", file=sys.stderr)
        if " => /" in line:
            lib = line.split(" => ", 1)[1].rsplit(" (0x", 1)[0]
            if not os.path.normpath(lib).startswith(copied):
                libs.add(lib)
paths += sorted(libs)

for p in [exe, *paths]:
    if ":" in p or "\n" in p:
        fail(f"cannot pass {p!r} through EDGEPROF_VM_EXTRA (colon or newline)")
print(exe)
print("\n".join(paths))
PY
) || exit 125

python=${listing%%$'\n'*}
extra=${listing#*$'\n'}
extra=${extra//$'\n'/:}
extra+=:$tests_dir
[[ ! -f $checkout/pyproject.toml ]] || extra+=:$checkout/pyproject.toml
# The notebook tutorial test reads the committed notebook, the device-file tests the fixtures.
[[ ! -d $checkout/examples/notebooks ]] || extra+=:$checkout/examples/notebooks
[[ ! -d $checkout/tests/fixtures ]] || extra+=:$checkout/tests/fixtures
[[ -z ${EDGEPROF_VM_EXTRA:-} ]] || extra+=:$EDGEPROF_VM_EXTRA

# Leave out the default test directory when the arguments name tests.
default_target=("$tests_dir")
for arg in "$@"; do
  if [[ $arg != -* && -e ${arg%%::*} ]]; then
    default_target=()
    break
  fi
done

# pytest sees the VM's serial console as a terminal and would colour its
# output even when ours goes to a file or pipe (a later --color=... wins).
color=()
[[ -t 1 ]] || color=(--color=no)

# The built-in devices have up to 4 GiB, which the plan rightly refuses on a smaller host.
# 2400 s, not run-v2.sh's 900: the whole suite under software emulation took about 850 s
# on a host that ran 1.2-2x slower than usual (2026-12-05 08:52 UTC, stopped at about 95% by
# the 900 s limit's watchdog), and qemu's one thread slows in step with anything else on the
# host's two CPUs (1500 s left under 2x); the watchdog still catches a hang, 60 s before the
# limit.
EDGEPROF_VM_MEMORY=${EDGEPROF_VM_MEMORY:-5120} EDGEPROF_VM_EXTRA=$extra exec "$run_v2" --timeout 2400 -- "$python" -m pytest -p no:cacheprovider \
  "${color[@]}" "${default_target[@]}" "$@"
