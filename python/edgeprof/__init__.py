"""edgeprof: profile ML workloads under emulated edge devices.

Run a real command inside cgroups that emulate a device's cores, core speed and memory, and get
back exact, honestly labelled measurements::

    import edgeprof
    dev = edgeprof.Device(name="my-board", cores=2, core_speed=0.5, memory="512MiB")
    r = edgeprof.run(["python3", "infer.py"], device=dev)
    r.wall_time_s, r.cpu_user_s, r.peak_memory_bytes, r.oom_killed

The work is done by the C++ library (``edgeprof._core``); this package re-exports it.
"""

from edgeprof._core import (
    DEFAULT_CPU_PERIOD_US,
    CgroupError,
    Child,
    Device,
    DeviceError,
    EmulationPlan,
    Error,
    PermissionDenied,
    Result,
    Slice,
    SpawnError,
    UnsupportedError,
    __version__,
    builtin_device,
    builtin_devices,
    cgroup_mode,
    format_size,
    parse_size,
    plan_emulation,
    run,
)

__all__ = [
    "DEFAULT_CPU_PERIOD_US",
    "CgroupError",
    "Child",
    "Device",
    "DeviceError",
    "EmulationPlan",
    "Error",
    "PermissionDenied",
    "Result",
    "Slice",
    "SpawnError",
    "UnsupportedError",
    "__version__",
    "builtin_device",
    "builtin_devices",
    "cgroup_mode",
    "format_size",
    "parse_size",
    "plan_emulation",
    "run",
]
