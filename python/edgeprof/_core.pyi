"""Type stubs for edgeprof's C++ core."""

import os
from typing import IO, Any, Callable, Literal, Mapping, Optional, Sequence, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str
DEFAULT_CPU_PERIOD_US: int
DEFAULT_INTERVAL_S: float
REPORT_SCHEMA_VERSION: int
METRICS: tuple[str, ...]

# None = inherit; subprocess.DEVNULL; a file descriptor; an open file object; or a path.
_Stream = Union[None, int, IO[Any], str, os.PathLike]
_DeviceLike = Union["Device", str]  # a Device or a built-in device's name

class Error(Exception): ...
class DeviceError(Error, ValueError): ...
class UnsupportedError(Error): ...
class PermissionDenied(Error, PermissionError): ...
class CgroupError(Error, OSError): ...
class SpawnError(Error, OSError):
    path: str  # the program, working directory or stdio file that failed

class Device:
    def __init__(
        self,
        *,
        name: str,
        cores: int,
        core_speed: float,
        memory: Union[str, int],
        swap: Union[str, int] = 0,
        io_read_bps: Optional[int] = None,
        io_write_bps: Optional[int] = None,
        pids_max: Optional[int] = None,
        description: str = "",
        source: str = "user-supplied",
    ) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def cores(self) -> int: ...
    @property
    def core_speed(self) -> float: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def swap_bytes(self) -> int: ...
    @property
    def io_read_bps(self) -> Optional[int]: ...
    @property
    def io_write_bps(self) -> Optional[int]: ...
    @property
    def pids_max(self) -> Optional[int]: ...
    @property
    def description(self) -> str: ...
    @property
    def source(self) -> str: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class EmulationPlan:
    @property
    def cpus(self) -> list[int]: ...
    @property
    def cpu_period_us(self) -> int: ...
    @property
    def cpu_quota_us(self) -> int: ...
    @property
    def memory_max_bytes(self) -> int: ...
    @property
    def swap_max_bytes(self) -> int: ...
    @property
    def pids_max(self) -> Optional[int]: ...
    @property
    def notes(self) -> list[str]: ...
    @property
    def capacity_cores(self) -> float: ...

class TimeSeries:
    def __len__(self) -> int: ...
    @property
    def t_ns(self) -> npt.NDArray[np.int64]: ...
    @property
    def scheduled(self) -> npt.NDArray[np.uint8]: ...
    def __getitem__(self, metric: str) -> npt.NDArray[np.uint64]: ...
    @property
    def available(self) -> list[str]: ...
    @property
    def complete(self) -> list[str]: ...
    def cpu_cores(self) -> npt.NDArray[np.float64]: ...
    def to_pandas(self) -> Any: ...  # pandas.DataFrame

class Summary:
    cpu_cores_avg: Optional[float]
    cpu_cores_p95: Optional[float]
    cpu_cores_peak: Optional[float]
    cpu_window_s: float
    cpu_capacity_avg: Optional[float]
    cpu_capacity_p95: Optional[float]
    cpu_capacity_peak: Optional[float]
    throttled_fraction: Optional[float]
    memory_avg_bytes: Optional[int]
    memory_sampled_peak_bytes: Optional[int]
    memory_anon_peak_bytes: Optional[int]
    memory_file_peak_bytes: Optional[int]
    memory_swap_peak_bytes: Optional[int]
    major_faults: Optional[int]
    io_read_bytes: Optional[int]
    io_write_bytes: Optional[int]
    io_read_ops: Optional[int]
    io_write_ops: Optional[int]
    net_rx_bytes: Optional[int]
    net_tx_bytes: Optional[int]
    net_rx_packets: Optional[int]
    net_tx_packets: Optional[int]
    pressure_cpu_some_s: Optional[float]
    pressure_memory_some_s: Optional[float]
    pressure_memory_full_s: Optional[float]
    pressure_io_some_s: Optional[float]
    pressure_io_full_s: Optional[float]
    pressure_host_wide: bool
    tasks_peak: Optional[int]
    samples: int
    interval_s: float
    interval_p50_s: Optional[float]
    jitter_p50_s: Optional[float]
    jitter_p99_s: Optional[float]
    missed_deadlines: int

class Phase:
    name: str
    start_s: float
    end_s: float
    wall_time_s: float
    ended_by_exit: bool
    cpu_s: Optional[float]
    memory_start_bytes: Optional[int]
    memory_peak_bytes: Optional[int]
    memory_net_peak_bytes: Optional[int]

class SourceStatus:
    name: str
    available: bool
    failed: bool
    host_wide: bool
    error: str

class HostInfo:
    hostname: str
    kernel: str
    cpu_model: str
    cpus: int
    memory_bytes: int

def host_info() -> HostInfo: ...

class Result:
    @property
    def exit_code(self) -> Optional[int]: ...
    @property
    def signal(self) -> Optional[int]: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def oom_killed(self) -> bool: ...
    @property
    def oom_kills(self) -> int: ...
    @property
    def wall_time_s(self) -> float: ...
    @property
    def cpu_user_s(self) -> float: ...
    @property
    def cpu_system_s(self) -> float: ...
    @property
    def peak_memory_bytes(self) -> Optional[int]: ...
    @property
    def peak_memory_source(self) -> str: ...
    @property
    def throttled_s(self) -> float: ...
    @property
    def throttled_periods(self) -> int: ...
    @property
    def periods(self) -> int: ...
    @property
    def child_max_rss_bytes(self) -> int: ...
    @property
    def placement(self) -> str: ...
    @property
    def device(self) -> Device: ...
    @property
    def plan(self) -> EmulationPlan: ...
    @property
    def cgroup_mode(self) -> Literal["unified", "hybrid", "legacy"]: ...
    @property
    def unapplied(self) -> list[str]: ...
    @property
    def command(self) -> list[str]: ...
    @property
    def network_isolated(self) -> bool: ...
    @property
    def series(self) -> TimeSeries: ...
    @property
    def summary(self) -> Summary: ...
    @property
    def sources(self) -> list[SourceStatus]: ...
    @property
    def phases(self) -> list[Phase]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def host(self) -> HostInfo: ...
    @property
    def edgeprof_version(self) -> str: ...
    @property
    def ok(self) -> bool: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> "Result": ...
    def to_csv(self) -> str: ...
    def to_pandas(self) -> Any: ...  # pandas.DataFrame of the time series
    def phases_to_pandas(self) -> Any: ...

class Statistic:
    n: int
    median: float
    mean: float
    stddev: float
    ci95_low: float
    ci95_high: float
    min: float
    max: float

def statistics(values: Sequence[float]) -> Statistic: ...
def student_t_quantile(p: float, dof: float) -> float: ...

class RepeatedResult:
    @property
    def warmups(self) -> list[Result]: ...
    @property
    def runs(self) -> list[Result]: ...
    @property
    def stats(self) -> dict[str, Statistic]: ...
    def stat(self, name: str) -> Statistic: ...
    @property
    def ok(self) -> bool: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> "RepeatedResult": ...
    def to_pandas(self) -> Any: ...  # pandas.DataFrame, one row per figure

def mark(name: str) -> None: ...
def phase_begin(name: str) -> None: ...
def phase_end(name: str) -> None: ...
def profiled() -> bool: ...

class Child:
    @property
    def pid(self) -> int: ...
    def wait(self, timeout: Optional[float] = None) -> Result: ...

class Slice:
    def __init__(
        self,
        device: _DeviceLike,
        *,
        parent: Optional[str] = None,
        cpu_period_us: int = ...,
        cpus: Sequence[int] = (),
        allow_missing_controllers: bool = False,
    ) -> None: ...
    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        cwd: Union[None, str, os.PathLike] = None,
        stdin: _Stream = None,
        stdout: _Stream = None,
        stderr: _Stream = None,
        interval: Optional[float] = ...,
        isolate_network: bool = False,
    ) -> Child: ...
    def kill(self) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def device(self) -> Device: ...
    @property
    def plan(self) -> EmulationPlan: ...
    @property
    def mode(self) -> Literal["unified", "hybrid", "legacy"]: ...
    @property
    def unapplied(self) -> list[str]: ...
    @property
    def paths(self) -> list[str]: ...
    def __enter__(self) -> "Slice": ...
    def __exit__(self, *args: object) -> None: ...

def builtin_devices() -> list[Device]: ...
def builtin_device(name: str) -> Device: ...
def parse_size(text: str, field: str = "size") -> int: ...
def format_size(bytes: float) -> str: ...  # rounded to whole bytes; ValueError below 0
def cgroup_mode() -> Literal["unified", "hybrid", "legacy"]: ...
def plan_emulation(
    device: _DeviceLike, cpu_period_us: int = ..., cpus: Sequence[int] = ()
) -> EmulationPlan: ...
_Progress = Callable[[int, int, bool, Result], None]

@overload
def run(
    argv: Sequence[str],
    *,
    device: _DeviceLike,
    timeout: Optional[float] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Union[None, str, os.PathLike] = None,
    stdin: _Stream = None,
    stdout: _Stream = None,
    stderr: _Stream = None,
    interval: Optional[float] = ...,
    isolate_network: bool = False,
    repeat: Literal[1] = 1,
    warmup: Literal[0] = 0,
    progress: Optional[_Progress] = None,
    parent: Optional[str] = None,
    cpu_period_us: int = ...,
    cpus: Sequence[int] = (),
    allow_missing_controllers: bool = False,
) -> Result: ...
@overload
def run(
    argv: Sequence[str],
    *,
    device: _DeviceLike,
    timeout: Optional[float] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Union[None, str, os.PathLike] = None,
    stdin: _Stream = None,
    stdout: _Stream = None,
    stderr: _Stream = None,
    interval: Optional[float] = ...,
    isolate_network: bool = False,
    repeat: int = 1,
    warmup: int = 0,
    progress: Optional[_Progress] = None,
    parent: Optional[str] = None,
    cpu_period_us: int = ...,
    cpus: Sequence[int] = (),
    allow_missing_controllers: bool = False,
) -> Union[Result, RepeatedResult]: ...

# Ranking and projection.

def figure(result: Result, name: str) -> float: ...
def figures(result: Result) -> dict[str, float]: ...
def figure_samples(result: RepeatedResult, name: str) -> list[float]: ...

class RankedItem:
    name: str
    index: int
    value: float
    n: int
    rank: int
    tied: bool

def _rank(
    names: Sequence[str], samples: Sequence[Sequence[float]], higher_is_better: bool, test: str,
    alpha: float
) -> list[RankedItem]: ...
def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float: ...
def welch_p(a: Sequence[float], b: Sequence[float]) -> float: ...

class Agreement:
    coefficient: float
    p_value: float
    exact: bool
    n: int

def spearman(x: Sequence[float], y: Sequence[float]) -> Agreement: ...
def kendall(x: Sequence[float], y: Sequence[float]) -> Agreement: ...
def pareto_front(metrics: Sequence[Sequence[float]], maximize: Sequence[bool]) -> list[bool]: ...

class BudgetCheck:
    fits: bool
    value: float
    limit: float
    margin: float
    margin_fraction: float
    confidence: Optional[float]
    provenance: str

class Prediction:
    estimate: float
    low: float
    high: float
    confidence: float
    dof: float
    provenance: str

@overload
def check_budget(value: float, limit: float) -> BudgetCheck: ...
@overload
def check_budget(prediction: Prediction, limit: float) -> BudgetCheck: ...

class Projection:
    @staticmethod
    def fit(
        x: Sequence[Union[float, Sequence[float]]],
        y: Sequence[float],
        model: Literal["linear", "origin", "loglog", "theil_sen", "multi", "auto"] = "auto",
        ridge: float = 0.0,
        features: Optional[Sequence[str]] = None,
        target: str = "y",
    ) -> "Projection": ...
    model: str
    reason: str
    features: list[str]
    target: str
    coefficients: list[float]
    standard_errors: list[float]
    coefficient_names: list[str]
    r_squared: float
    residual_standard_error: float
    dof: float
    points: int
    loo_ape: list[float]
    loo_ape_median: float
    loo_ape_max: float
    loo_within_10pct: float
    def predict(self, x: Union[float, Sequence[float]], confidence: float = 0.95) -> Prediction: ...

class Calibration:
    def __init__(self, device: str, projection: Projection, family: str = "") -> None: ...
    device: str
    family: str
    projection: Projection

def calibrations_to_json(calibrations: Sequence[Calibration]) -> str: ...
def calibrations_from_json(text: str) -> list[Calibration]: ...
def find_calibration(
    calibrations: Sequence[Calibration], device: str, target: str, family: str = ""
) -> Optional[Calibration]: ...
def project(calibration: Calibration, result: Result, confidence: float = 0.95) -> Prediction: ...
