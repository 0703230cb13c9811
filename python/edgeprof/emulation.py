"""Emulation: how a device is emulated on this host (the plan), the slices that do it, and the
host they run on.

    from edgeprof import emulation
    plan = emulation.plan_emulation(edgeprof.find_device("jetson-nano"))
    with emulation.Slice(edgeprof.find_device("jetson-nano")) as nano:
        result = nano.spawn(["python3", "infer.py"]).wait()

A child keeps its slice (``Slice(d).spawn(argv).wait()`` works); a slice that is closed, at
the end of its ``with`` block or by ``close()``, kills the children still running in it, and is
removed once neither it nor a child of it is referenced.
"""

from edgeprof._core import (
    DEFAULT_CPU_PERIOD_US,
    DEFAULT_INTERVAL_S,
    STEADY_MALLOC_ENV,
    Child,
    CpuLimit,
    EmulationPlan,
    HostInfo,
    Slice,
    ThreadsProjection,
    cgroup_mode,
    choose_cpu_period_us,
    host_info,
    plan_emulation,
)

__all__ = [
    "DEFAULT_CPU_PERIOD_US",
    "DEFAULT_INTERVAL_S",
    "STEADY_MALLOC_ENV",
    "Child",
    "CpuLimit",
    "EmulationPlan",
    "HostInfo",
    "Slice",
    "ThreadsProjection",
    "cgroup_mode",
    "choose_cpu_period_us",
    "host_info",
    "plan_emulation",
]
