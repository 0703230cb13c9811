import glob
import os
import subprocess
import sys

import pytest

import edgeprof


def _can_create_slices() -> tuple[bool, str]:
    try:
        with edgeprof.Slice(edgeprof.Device(name="probe", cores=1, core_speed=1.0, memory="64MiB")):
            return True, ""
    except edgeprof.PermissionDenied as e:
        return False, str(e)


CAN_CREATE, WHY_NOT = _can_create_slices()

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
                          text=True, timeout=600, **kwargs)
