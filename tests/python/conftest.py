import glob
import os
import subprocess
import sys
import time

import pytest

# Tests never spend a minute measuring this host's nn rating on first use (a catalog device's
# nn speed needs it; PlanOptions::measure_nn): a test of that path asks for it itself.
os.environ.setdefault("EDGEPROF_MEASURE_NN", "0")

# The tests' slices, and the edgeprof processes the tests start, use a CPU ledger of their own, so
# that their CPU choices do not depend on other edgeprof processes on the machine.
if not os.environ.get("EDGEPROF_LEDGER_DIR"):
    import atexit
    import shutil
    import tempfile

    os.environ["EDGEPROF_LEDGER_DIR"] = tempfile.mkdtemp(prefix="edgeprof-test-ledger-")
    atexit.register(shutil.rmtree, os.environ["EDGEPROF_LEDGER_DIR"], True)

import edgeprof  # noqa: E402


def _can_create_slices() -> tuple[bool, str]:
    try:
        with edgeprof.Slice(edgeprof.Device(name="probe", cores=1, core_speed=1.0, memory="64MiB")):
            return True, ""
    except edgeprof.PermissionDenied as e:
        return False, str(e)


CAN_CREATE, WHY_NOT = _can_create_slices()

# The cgroup v2 VM: its CPUs are emulated (qemu TCG), 10 to 50 times slower than this machine and
# unevenly so. Tests there assert what was done (the limit written, the kernel's counts, the
# structure of a result), never how long it took or how much CPU it got.
IN_VM = "EDGEPROF_IN_VM" in os.environ

# How long a wait may last before the test calls it a hang: no working run, however loaded the
# machine or slow the VM, comes near it. It guards waits; it measures nothing.
HANG_S = 600

# Reports captured from real runs, for tests that need a Result but no slice.
REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "reports")


def captured_report_text() -> str:
    """A run's report (falling-memory.json): `python3 fall.py` under --cores 1 --speed 1
    --memory 256MiB --interval 20ms, phases "load" (40 MiB allocated and touched) and "infer"
    (freed): 27 samples, memory rising to 50.5 MiB and falling."""
    with open(os.path.join(REPORTS, "falling-memory.json"), encoding="utf-8") as f:
        return f.read()


requires_cgroups = pytest.mark.skipif(not CAN_CREATE, reason=f"cannot create cgroups: {WHY_NOT}")


def our_slices(pid: int | None = None) -> list[str]:
    """Slice directories owned by `pid` (default: this process) anywhere under /sys/fs/cgroup."""
    prefix = f"edgeprof-{pid or os.getpid()}-"
    found = []
    for depth in range(1, 5):
        pattern = "/sys/fs/cgroup" + "/*" * depth
        found += [p for p in glob.glob(pattern) if os.path.basename(p).startswith(prefix)]
    return found


@pytest.fixture(autouse=True)
def no_leftover_slices():
    yield
    assert our_slices() == [], "a test left cgroups behind"


@pytest.fixture
def half_core():
    return edgeprof.Device(name="half-core", cores=1, core_speed=0.5, memory="256MiB")


def cli(*args: str, env_extra: dict[str, str] | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    """`edgeprof ARGS...` run as users run it, in a subprocess; `env_extra` adds to its
    environment."""
    if env_extra:
        kwargs["env"] = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-m", "edgeprof", *args], capture_output=True,
                          text=True, timeout=HANG_S, **kwargs)


def cpu_limit(slice) -> tuple[int | None, int]:
    """(quota_us, period_us) as the kernel holds them for a slice (`Slice.cpu_limit()`,
    read from its files; the C++ tests check that reader against the files themselves); quota
    None when unlimited."""
    held = slice.cpu_limit()
    return held.quota_us, held.period_us


def poll_until_changed(read, old):
    """Reads `read()` until it differs from `old`, and returns it: for kernel state that sends
    no event (a quota file). The wait has no bound but HANG_S, which only a hang reaches."""
    deadline = time.monotonic() + HANG_S
    while (value := read()) == old:
        assert time.monotonic() < deadline, f"still {old!r} after {HANG_S} s"
        time.sleep(0.005)
    return value


def idle_threads() -> dict[int, tuple[set[int], str]]:
    """This process's SCHED_IDLE threads (edgeprof's keep-warm threads): thread id -> (the CPUs
    it may run on, its /proc cgroup text)."""
    found = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        try:
            if os.sched_getscheduler(tid) != os.SCHED_IDLE:
                continue
            with open(f"/proc/self/task/{tid}/cgroup") as f:
                found[tid] = (os.sched_getaffinity(tid), f.read())
        except (ProcessLookupError, FileNotFoundError):
            pass  # a thread that ended meanwhile
    return found
