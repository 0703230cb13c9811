"""Profiling Python functions: run one in a fresh interpreter inside a slice (``profile``,
``profiled_function``), and mark phases from inside the workload (``phase``, ``mark``).

    from edgeprof import profiling
    value, report = profiling.profile(train_step, batch, device="jetson-nano")
"""

from edgeprof._phases import mark, phase, profiled
from edgeprof._profile import Profiled, RemoteTraceback, WorkerDied, profile, profiled_function

__all__ = [
    "Profiled",
    "RemoteTraceback",
    "WorkerDied",
    "mark",
    "phase",
    "profile",
    "profiled",
    "profiled_function",
]
