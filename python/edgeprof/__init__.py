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

The work is done by the C++ library (``edgeprof._core``); this package re-exports it and adds
what is Pythonic (pandas frames, the phase context manager, the command line).
"""

from edgeprof._core import (
    DEFAULT_CPU_PERIOD_US,
    DEFAULT_INTERVAL_S,
    METRICS,
    REPORT_SCHEMA_VERSION,
    CgroupError,
    Child,
    Device,
    DeviceError,
    EmulationPlan,
    Error,
    HostInfo,
    Phase,
    PermissionDenied,
    RepeatedResult,
    Result,
    Slice,
    SourceStatus,
    SpawnError,
    Statistic,
    Summary,
    TimeSeries,
    UnsupportedError,
    __version__,
    builtin_device,
    builtin_devices,
    cgroup_mode,
    format_size,
    host_info,
    parse_size,
    plan_emulation,
    run,
    statistics,
)
from edgeprof._core import (
    Agreement,
    BudgetCheck,
    Calibration,
    Comparison,
    ComparisonRow,
    Score,
    score,
    Prediction,
    Projection,
    RankedItem,
    check_budget,
    figure,
    figures,
    find_calibration,
    kendall,
    pareto_front,
    project,
    spearman,
)
from edgeprof._analysis import load_calibrations, pareto, rank, save_calibrations
from edgeprof._phases import mark, phase, profiled
from edgeprof._profile import Profiled, RemoteTraceback, WorkerDied, profile, profiled_function
from edgeprof import _compare as _compare_module
from edgeprof import _display, _frames
from edgeprof._compare import compare

_frames.install()
_display.install()
_compare_module.install()
del _frames, _display, _compare_module

__all__ = [
    "Comparison",
    "ComparisonRow",
    "Score",
    "compare",
    "score",
    "Profiled",
    "RemoteTraceback",
    "WorkerDied",
    "profile",
    "profiled_function",
    "Agreement",
    "BudgetCheck",
    "Calibration",
    "Prediction",
    "Projection",
    "RankedItem",
    "check_budget",
    "figure",
    "figures",
    "find_calibration",
    "kendall",
    "load_calibrations",
    "pareto",
    "pareto_front",
    "project",
    "rank",
    "save_calibrations",
    "spearman",
    "DEFAULT_CPU_PERIOD_US",
    "DEFAULT_INTERVAL_S",
    "METRICS",
    "REPORT_SCHEMA_VERSION",
    "CgroupError",
    "Child",
    "Device",
    "DeviceError",
    "EmulationPlan",
    "Error",
    "HostInfo",
    "Phase",
    "PermissionDenied",
    "RepeatedResult",
    "Result",
    "Slice",
    "SourceStatus",
    "SpawnError",
    "Statistic",
    "Summary",
    "TimeSeries",
    "UnsupportedError",
    "__version__",
    "builtin_device",
    "builtin_devices",
    "cgroup_mode",
    "format_size",
    "host_info",
    "mark",
    "parse_size",
    "phase",
    "plan_emulation",
    "profiled",
    "run",
    "statistics",
]
