"""edgeprof: profile ML workloads under emulated edge devices.

Run a real command inside cgroups that emulate a device's cores, core speed and memory, and get
back exact, honestly labelled measurements::

    import edgeprof
    dev = edgeprof.Device(name="my-board", cores=2, core_speed=0.5, memory="512MiB")
    r = edgeprof.run(["python3", "infer.py"], device=dev)
    r.wall_time_s, r.cpu_user_s, r.peak_memory_bytes, r.oom_killed
    r.summary.cpu_cores_p95, r.series["memory_current_bytes"], r.to_pandas()

    # inside the workload: phases of its own
    with edgeprof.phase("inference"):
        model(x)

The top level holds what a run needs; the rest is in submodules by task:
``edgeprof.devices`` (the catalog, device files), ``edgeprof.emulation`` (plans, slices, the
host), ``edgeprof.results`` (results, series, statistics, figures), ``edgeprof.analysis``
(compare, rankings, budgets, calibrations), ``edgeprof.speed`` (host and core speeds, the quota's
own share), ``edgeprof.nn`` (inference speeds and runtimes) and ``edgeprof.profiling``
(profiling Python functions, phases). A name that used to be at the top level still works for
one release, with a DeprecationWarning naming its submodule.

The work is done by the C++ library (``edgeprof._core``); this package re-exports it and adds
what is Pythonic (pandas frames, the phase context manager, the command line).
"""

import importlib as _importlib
import sys as _sys
import warnings as _warnings

from edgeprof import _args, _core

# ncnn's measurements (this host's rating, its own share, drift probes), where no interpreter is
# named and $EDGEPROF_PYTHON is unset, run in this interpreter, which has ncnn (a dependency of
# this package): python3 on PATH may be another (a venv's edgeprof run without activating it, a
# notebook kernel, cron), where a first run measuring the rating failed with "pip install ncnn".
if _sys.executable:
    _core.set_default_ncnn_python(_sys.executable)

# Before anything takes a name from _core: a call with a misspelled keyword or a value of the
# wrong type names the argument instead of dumping the signature.
_args.install(_core)

from edgeprof._core import (
    CgroupError,
    Device,
    DeviceError,
    Error,
    PermissionDenied,
    RepeatedResult,
    Result,
    Slice,
    SpawnError,
    UnsupportedError,
    __version__,
    find_device,
    plan_emulation,
    run,
    score,
)
from edgeprof._phases import mark, phase, profiled
from edgeprof._profile import Profiled, WorkerDied, profile, profiled_function
from edgeprof import _compare as _compare_module
from edgeprof import _display, _frames
from edgeprof._compare import compare
from edgeprof import analysis, devices, emulation, nn, profiling, results, speed

_frames.install()
_display.install()
_compare_module.install()
del _frames, _display, _compare_module

__all__ = [
    "__version__",
    # run a workload under an emulated device, and what comes back
    "run",
    "Device",
    "find_device",
    "Slice",
    "plan_emulation",
    "Result",
    "RepeatedResult",
    # profile Python functions, mark phases from inside the workload
    "profile",
    "profiled_function",
    "Profiled",
    "phase",
    "mark",
    "profiled",
    # choose between candidates
    "compare",
    "score",
    # errors
    "Error",
    "CgroupError",
    "DeviceError",
    "PermissionDenied",
    "SpawnError",
    "UnsupportedError",
    "WorkerDied",
]

_SUBMODULES = ("analysis", "devices", "emulation", "nn", "profiling", "results", "speed")
# Names that were at the top level before the submodules (one release): where they are now.
_MOVED = {name: module for module in _SUBMODULES
          for name in _importlib.import_module(f"edgeprof.{module}").__all__
          if name not in __all__}


def __getattr__(name: str):
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'edgeprof' has no attribute {name!r}")
    _warnings.warn(f"edgeprof.{name} is now edgeprof.{module}.{name}; the top-level name goes "
                   f"in the next release", DeprecationWarning, stacklevel=2)
    return getattr(_importlib.import_module(f"edgeprof.{module}"), name)


def __dir__() -> list:
    return sorted(set(__all__) | set(_SUBMODULES))
