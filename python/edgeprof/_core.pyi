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
_Provenance = Literal["measured", "sampled", "projected", "estimated"]  # figure_provenance()

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
        core_speed: Optional[float] = None,  # or reference_speed, not both
        memory: Union[str, int],
        swap: Union[str, int] = 0,
        io_read_bps: Optional[int] = None,
        io_write_bps: Optional[int] = None,
        pids_max: Optional[int] = None,
        description: str = "",
        source: str = "user-supplied",
        speed_schedule: Sequence[SpeedStep] = (),
        idle_watts: Optional[float] = None,
        loaded_watts: Optional[float] = None,
        reference_speed: Optional[float] = None,  # core_speed = it / this host's (cached)
        host_reference_speed: Optional[float] = None,  # instead of the cached one; 0 = not known
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
    @property
    def aliases(self) -> list[str]: ...
    @property
    def cpu(self) -> CpuDescription: ...
    @property
    def storage(self) -> str: ...  # storage kind, e.g. "microSD"; bandwidth in io_*_bps
    @property
    def power(self) -> PowerDescription: ...
    @property
    def scores(self) -> Optional[CoreScores]: ...  # probed devices: the suite's scores
    @property
    def reference_speed(self) -> Optional[float]: ...  # one device core / the reference core
    @property
    def host_reference_speed(self) -> Optional[float]: ...  # one host core / the reference core
    @property
    def speed_text(self) -> str: ...  # "0.4388 of a host core (0.373 of the reference core / ...)"
    @property
    def reference_uncorrected(self) -> bool: ...  # core_speed is reference_speed as it is
    @property
    def nn_ms(self) -> dict[str, float]: ...  # published one-thread ncnn times, ms by graph
    @property
    def nn_precision(self) -> str: ...  # "fp32" or "fp16", of nn_ms
    @property
    def nn(self) -> Optional[NnSpeed]: ...  # the nn speed on this host; None: see nn_missing
    @property
    def nn_missing(self) -> str: ...  # why nn is None
    @property
    def runtime_ms(self) -> dict[str, RuntimeTimes]: ...  # other runtimes' published times
    def for_runtime(self, runtime: str, *,
                    memory_mb_per_ms: float = 0.0) -> Device: ...  # at its speed
    @property
    def speed_kind(self) -> str: ...  # "nn" once for_speed_kind chose it; "" otherwise
    def for_speed_kind(self, kind: str) -> Device: ...  # "automatic", "nn" or "integer"
    @property
    def speed_schedule(self) -> list[SpeedStep]: ...
    @property
    def sources(self) -> dict[str, FigureSource]: ...  # figure name -> where it comes from
    @property
    def origin(self) -> str: ...  # "catalog", a file path, or "" when built in code
    def for_threads(self, threads: int) -> Device: ...  # fewer busy threads than cores: that many cores
    def to_json(self) -> str: ...  # this device as a device file
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class FigureSource:
    @property
    def status(self) -> Literal["specified", "measured", "estimated"]: ...
    @property
    def source(self) -> str: ...

class CpuDescription:
    @property
    def model(self) -> str: ...
    @property
    def soc(self) -> str: ...
    @property
    def clock_mhz(self) -> Optional[float]: ...
    @property
    def architecture(self) -> str: ...
    @property
    def layout(self) -> str: ...

class PowerDescription:
    @property
    def idle_watts(self) -> Optional[float]: ...
    @property
    def loaded_watts(self) -> Optional[float]: ...

class SpeedStep:
    def __init__(self, after_s: float, factor: float) -> None: ...
    @property
    def after_s(self) -> float: ...
    @property
    def factor(self) -> float: ...

class UserDevices:
    @property
    def devices(self) -> list[Device]: ...
    @property
    def problems(self) -> list[str]: ...  # per file that did not load, or whose device no name reaches

def catalog_devices() -> list[Device]: ...
def load_device_file(path: Union[str, os.PathLike]) -> Device: ...
def find_device(name_or_path: Union[str, os.PathLike]) -> Device: ...
def user_devices() -> UserDevices: ...
def device_search_path() -> list[str]: ...

SUITE_VERSION: str  # "edgeprof-suite-1"
# glibc's malloc thresholds that nn ratings and (by default) workloads get (docs/threads.md)
STEADY_MALLOC_ENV: dict[str, str]
VECTOR_KERNEL_VERSION: str  # "edgeprof-vector-1"

class CoreScores:
    def __init__(
        self,
        *,
        integer: float,
        floating: float,
        memory: float,
        suite: str = ...,
        vector: float = 0.0,
        vector_unit: str = "",
        vector_kernel: str = "",
    ) -> None: ...
    @property
    def suite(self) -> str: ...
    @property
    def integer(self) -> float: ...  # integer kernel, units per second
    @property
    def floating(self) -> float: ...  # floating-point kernel, units per second
    @property
    def memory(self) -> float: ...  # millions of dependent loads per second
    @property
    def vector(self) -> float: ...  # vector kernel, GFLOP/s on the best unit; 0 = not measured
    @property
    def vector_unit(self) -> str: ...  # "avx512f", "avx2+fma", "sse2", "neon", "generic"
    @property
    def vector_kernel(self) -> str: ...  # VECTOR_KERNEL_VERSION, or ""
    @property
    def spread(self) -> dict[str, float]: ...  # (fastest - slowest) / median per kernel
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...

def run_suite(
    *, per_kernel_s: float = 0.2, repeats: int = 5, cpu: int = -1, vector_unit: str = ""
) -> CoreScores: ...
def vector_units() -> list[str]: ...
def speed_from_scores(device: CoreScores, host: CoreScores) -> float: ...

class HostCalibration:
    @property
    def scores(self) -> CoreScores: ...
    @property
    def cpu_model(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def hostname(self) -> str: ...
    @property
    def measured_at(self) -> str: ...  # ISO 8601 UTC
    @property
    def from_cache(self) -> bool: ...
    @property
    def cache_file(self) -> str: ...  # "" when no cache directory is known
    @property
    def note(self) -> str: ...  # why measured rather than read; "" when read from the cache

def host_calibration(remeasure: bool = False) -> HostCalibration: ...

REFERENCE_CORE: str  # the catalog's reference core, "Intel Pentium G4600 at 3.6 GHz"
REFERENCE_CORE_MIPS: float  # its 7-Zip single-thread total rating, 4448

class ReferenceRating:
    @property
    def host_mips(self) -> float: ...  # this host's 7-Zip single-thread total rating
    @property
    def speed(self) -> float: ...  # host_mips / REFERENCE_CORE_MIPS
    @property
    def command(self) -> str: ...
    @property
    def version(self) -> str: ...  # 7-Zip's banner line
    @property
    def cpu(self) -> int: ...  # the CPU 7-Zip was pinned to
    @property
    def cpu_model(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def hostname(self) -> str: ...
    @property
    def measured_at(self) -> str: ...  # ISO 8601 UTC
    @property
    def seconds(self) -> float: ...
    @property
    def cache_file(self) -> str: ...  # "" when it could not be cached
    @property
    def note(self) -> str: ...  # why not cached; "" otherwise

def cached_reference_rating() -> Optional[ReferenceRating]: ...
def why_not_cached_reference_rating() -> str: ...
def measure_reference_rating(
    *,
    program: Union[str, os.PathLike] = "",
    cpu: int = -1,
    timeout_s: float = 600.0,
    progress: Optional[Callable[[str], None]] = None,
) -> ReferenceRating: ...

class ReferenceGraph:
    @property
    def name(self) -> str: ...  # benchncnn's name, e.g. "mobilenet_v2"
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def channels(self) -> int: ...
    @property
    def input(self) -> str: ...  # input blob
    @property
    def output(self) -> str: ...  # output blob
    @property
    def param(self) -> str: ...  # the graph, ncnn param text
    @property
    def about(self) -> str: ...

def reference_graphs() -> list[ReferenceGraph]: ...
def write_reference_graphs(directory: Union[str, os.PathLike[str]], graphs: list[str] = ...) -> None: ...
def nn_runner_source() -> str: ...  # runner.py DIR WARMUP LOOPS [GRAPH...]

class NnSpeed:
    @property
    def core_speed(self) -> float: ...  # geometric mean of host / device time
    @property
    def ratios(self) -> dict[str, float]: ...  # device ms / host ms, by model
    @property
    def loo_median_error(self) -> float: ...  # leave-one-model-out |predicted / published - 1|
    @property
    def loo_worst_error(self) -> float: ...
    @property
    def loo_log_sd(self) -> float: ...  # spread of the held-out log errors (time_interval)
    @property
    def precision(self) -> str: ...
    @property
    def basis(self) -> str: ...  # "ncnn", "pytorch" (another runtime) or "vector"
    @property
    def vector_units(self) -> str: ...  # basis "vector": "neon on the device, avx512f here"
    @property
    def threads(self) -> int: ...  # of the device's published times
    @property
    def one_core_factor(self) -> float: ...  # times x this = one core's (estimated)
    @property
    def memory_mb_per_ms(self) -> float: ...  # a workload's activation MB per host ms; 0: one speed
    @property
    def per_host_ms(self) -> float: ...  # with a memory term: device ms per host ms
    @property
    def ms_per_mb(self) -> float: ...  # with a memory term: device ms per MB

def is_nn_precision(precision: str) -> bool: ...  # fp32, fp16 or int8
def nn_speed(device_ms: dict[str, float], host_ms: dict[str, float], precision: str = "fp32") -> NnSpeed: ...
def nn_speed_from_scores(device: CoreScores, host: CoreScores) -> NnSpeed: ...

class NnMemoryFit:
    @property
    def per_host_ms(self) -> float: ...  # device ms per host ms
    @property
    def ms_per_mb(self) -> float: ...  # device ms per MB of activations
    @property
    def held_out_ms(self) -> dict[str, float]: ...  # each model from a fit on the others
    @property
    def loo_median_error(self) -> float: ...
    @property
    def loo_worst_error(self) -> float: ...
    @property
    def loo_log_sd(self) -> float: ...

def nn_memory_fit(device_ms: dict[str, float], host_ms: dict[str, float],
                  activation_mb: dict[str, float]) -> NnMemoryFit: ...
def nn_memory_predict(fit: NnMemoryFit, host_ms: float, activation_mb: float) -> float: ...

class TimeInterval:
    @property
    def level(self) -> float: ...  # share of workloads expected inside (0.9)
    @property
    def low(self) -> float: ...  # device time / emulated time at the lower end
    @property
    def high(self) -> float: ...
    @property
    def models(self) -> int: ...  # models whose held-out errors it comes from
    @property
    def emulation_log_sd(self) -> float: ...  # emulation's spread included; 0: speed only
    @property
    def projection_log_sd(self) -> float: ...  # speed-up's spread; 0: not projected, or it cancels

@overload
def time_interval(
    speed: NnSpeed,
    level: float = 0.9,
    emulation_log_sd: float = 0.0,
    projection_log_sd: float = 0.0,
) -> Optional[TimeInterval]: ...
@overload
def time_interval(
    fit: NnMemoryFit,
    level: float = 0.9,
    emulation_log_sd: float = 0.0,
    projection_log_sd: float = 0.0,
) -> Optional[TimeInterval]: ...  # around nn_memory_predict's time

def device_interval(
    speed: NnSpeed, plan: EmulationPlan, level: float = 0.9
) -> Optional[TimeInterval]: ...  # what a run at `speed` under `plan` reports

class RuntimeTimes:
    @property
    def precision(self) -> str: ...
    @property
    def threads(self) -> int: ...  # the threads they ran with
    @property
    def ms(self) -> dict[str, float]: ...  # ms per inference, by model

class NnRuntime:
    @property
    def id(self) -> str: ...  # "ncnn", "pytorch"
    @property
    def name(self) -> str: ...
    @property
    def install(self) -> str: ...
    @property
    def precision(self) -> str: ...  # "" for ncnn (the host's)
    @property
    def models(self) -> list[str]: ...
    @property
    def cache_name(self) -> str: ...
    @property
    def precision_of(self) -> str: ...  # "pytorch" for "pytorch-int8"; "" otherwise
    @property
    def runner_args(self) -> list[str]: ...  # ["--precision=int8", "--rounds=8", "--min-time=2", "--mean", "--activations"]
    @property
    def share_seconds(self) -> int: ...  # about how long its own share takes (2 vCPUs): 80, 780
    @property
    def share_duration(self) -> str: ...  # share_seconds as notes say it: "about 80 s"

def nn_runtimes() -> list[NnRuntime]: ...
def set_default_ncnn_python(path: Union[str, bytes, os.PathLike]) -> None: ...  # edgeprof sets sys.executable on import
def default_ncnn_python() -> str: ...  # "" = python3 on PATH

class NnRating:
    @property
    def host_ms(self) -> dict[str, float]: ...  # median ms per inference, by graph or model
    @property
    def cpu_ms(self) -> dict[str, float]: ...  # CPU ms per inference, where reported
    @property
    def activation_mb(self) -> dict[str, float]: ...  # MB written per inference, where reported
    @property
    def runtime_id(self) -> str: ...  # "ncnn", "pytorch"
    @property
    def runtime(self) -> str: ...
    @property
    def precision(self) -> str: ...  # "fp32", or "fp16" on ARMv8.2 cores
    @property
    def command(self) -> str: ...
    @property
    def cpu(self) -> int: ...
    @property
    def loops(self) -> int: ...
    @property
    def cpu_model(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def hostname(self) -> str: ...
    @property
    def measured_at(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def cache_file(self) -> str: ...
    @property
    def note(self) -> str: ...

def cached_nn_rating(*, runtime: str = "ncnn") -> Optional[NnRating]: ...
def why_not_cached_nn_rating(*, runtime: str = "ncnn") -> str: ...
def measure_nn_rating(
    *,
    runtime: str = "ncnn",
    python: Union[str, os.PathLike] = "",
    graphs: list[str] = ...,
    warmup: int = 4,
    loops: int = 8,
    cpu: int = -1,
    timeout_s: float = 900.0,
    progress: Optional[Callable[[str], None]] = None,
) -> NnRating: ...
class HostScaling:
    @property
    def threads(self) -> int: ...
    @property
    def one_ms(self) -> dict[str, float]: ...  # median ms with one thread, by graph
    @property
    def many_ms(self) -> dict[str, float]: ...  # the same with `threads` threads
    @property
    def cpus(self) -> list[int]: ...
    @property
    def rounds(self) -> int: ...
    @property
    def runtime(self) -> str: ...
    @property
    def measured_at(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    def speedup(self, graph: str) -> float: ...
    def median_speedup(self, without_graph: str = "") -> float: ...
def measure_host_scaling(
    *,
    python: Union[str, os.PathLike] = "",
    runtime: str = "ncnn",
    graphs: list[str] = ...,
    threads: int = 2,
    cpus: list[int] = ...,
    rounds: int = 3,
    warmup: int = 3,
    loops: int = 7,
    timeout_s: float = 600.0,
    progress: Optional[Callable[[str], None]] = None,
) -> HostScaling: ...
def workload_scaling(host: HostScaling, workload_speedup: float, *, without_graph: str = "") -> float: ...
class QuotaSharePoint:
    @property
    def speed(self) -> float: ...  # the quota, a fraction of a host CPU
    @property
    def share(self) -> float: ...  # emulated time x speed / unthrottled; non-increasing
    @property
    def measured(self) -> float: ...  # the median as measured
    @property
    def p10(self) -> float: ...
    @property
    def p90(self) -> float: ...
    @property
    def p25(self) -> float: ...  # 0 in a share cached before quartiles
    @property
    def p75(self) -> float: ...
    @property
    def samples(self) -> int: ...
    @property
    def by_graph(self) -> dict[str, float]: ...  # each graph's own median; {} cached before it

class QuotaShare:
    @property
    def points(self) -> list[QuotaSharePoint]: ...
    @property
    def period_us(self) -> int: ...
    @property
    def keep_warm(self) -> bool: ...
    @property
    def graphs(self) -> list[str]: ...
    @property
    def rounds(self) -> int: ...
    @property
    def loops(self) -> int: ...
    @property
    def cpu(self) -> int: ...
    @property
    def runtime(self) -> str: ...
    @property
    def runtime_id(self) -> str: ...  # "ncnn", "pytorch", ...: whose inference was timed
    @property
    def cpu_model(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def hostname(self) -> str: ...
    @property
    def measured_at(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def cache_file(self) -> str: ...
    @property
    def note(self) -> str: ...
    def share_at(self, speed: float) -> float: ...  # own share at a quota of `speed` of a CPU
    def scale_at(self, speed: float) -> float: ...  # k with k = share_at(k * speed)
    def log_sd_at(self, speed: float) -> float: ...  # sd of log own share at that quota

def cached_quota_share(*, runtime: str = "ncnn") -> Optional[QuotaShare]: ...
def why_not_cached_quota_share(*, runtime: str = "ncnn") -> str: ...
def measure_quota_share(
    *,
    runtime: str = "ncnn",
    python: Union[str, os.PathLike] = "",
    graphs: Optional[list[str]] = None,
    speeds: Optional[list[float]] = None,
    rounds: int = 3,
    warmup: int = 2,
    loops: int = 5,
    cpu: int = -1,
    timeout_s: float = 600.0,
    progress: Optional[Callable[[str], None]] = None,
) -> QuotaShare: ...
class HostDrift:
    @property
    def factor(self) -> float: ...  # median of time now / at the rating; > 1: slower now
    @property
    def ratios(self) -> dict[str, float]: ...
    @property
    def cpu_time(self) -> bool: ...  # factor compares CPU times
    @property
    def waiting(self) -> float: ...  # probe's wall / CPU time; ~1 alone on its CPU, NaN unknown
    @property
    def wall_factor(self) -> float: ...  # wall time now / at the rating
    @property
    def cpu(self) -> int: ...
    @property
    def loops(self) -> int: ...
    @property
    def measured_at(self) -> str: ...
    @property
    def rated_at(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def runtime_id(self) -> str: ...  # the rating's runtime: "ncnn", "pytorch", ...

def measure_host_drift(
    rating: NnRating,
    *,
    python: Union[str, os.PathLike] = "",
    graphs: Optional[list[str]] = None,
    warmup: int = 4,
    loops: int = 5,
    cpu: int = -1,
    timeout_s: float = 60.0,
    progress: Optional[Callable[[str], None]] = None,  # another runtime's probe: its lines
) -> HostDrift: ...
def choose_cpu_period_us(iteration_time_us: int) -> int: ...  # a tenth, within 5 to 100 ms

class ThreadsProjection:  # core emulation "projected"
    @property
    def threads(self) -> int: ...
    @property
    def speedup(self) -> float: ...  # the divisor: the board's speed-up x workload_factor
    @property
    def workload_factor(self) -> float: ...  # PlanOptions::workload_scaling; 1 = none
    @property
    def table_threads(self) -> int: ...
    @property
    def table_speedup(self) -> float: ...
    @property
    def graphs(self) -> int: ...
    @property
    def loo_median_error(self) -> float: ...
    @property
    def loo_worst_error(self) -> float: ...
    @property
    def loo_log_sd(self) -> float: ...  # the projection's spread in device_interval

class EmulationPlan:
    @property
    def cpus(self) -> list[int]: ...
    @property
    def core_emulation(self) -> str: ...  # "projected", "per-core" or "pooled", auto resolved
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
    def unapplied(self) -> list[str]: ...  # limits of the device this host cannot apply
    @property
    def io_device(self) -> str: ...  # the host disk (MAJ:MIN) limited; "" when none
    @property
    def io_read_bps(self) -> Optional[int]: ...
    @property
    def io_write_bps(self) -> Optional[int]: ...
    @property
    def keep_warm(self) -> bool: ...  # the slice's CPUs kept busy while throttled
    @property
    def thread_env(self) -> dict[str, str]: ...  # set where the workload's env does not
    @property
    def core_groups(self) -> int: ...  # per-core emulation's one-core cgroups; 0 = pooled
    @property
    def core_quota_us(self) -> int: ...
    @property
    def core_quota_by_busy(self) -> list[int]: ...  # per-core scaling: quota with k busy
    @property
    def quota_scale(self) -> float: ...  # quotas = the device's capacity x this
    @property
    def host_drift(self) -> float: ...  # drift_check: the nn speed x this; 1 = not corrected
    @property
    def drift_probed(self) -> float: ...  # drift_check: the probe's reading; 0 = not probed
    @property
    def own_share_check(self) -> float: ...  # drift_check: own share now / cached; 0: not checked
    @property
    def emulation_log_sd(self) -> float: ...  # own share's spread when scaled by it; else 0
    @property
    def threads_projection(self) -> Optional[ThreadsProjection]: ...
    @property
    def capacity_cores(self) -> float: ...

class TimeSeries:
    def __len__(self) -> int: ...
    @property
    def t_ns(self) -> npt.NDArray[np.int64]: ...
    @property
    def scheduled(self) -> npt.NDArray[np.uint8]: ...
    def __getitem__(self, metric: str) -> npt.NDArray[np.uint64]: ...
    def __contains__(self, metric: object) -> bool: ...
    @property
    def available(self) -> list[str]: ...
    @property
    def complete(self) -> list[str]: ...
    @property
    def read_every(self) -> dict[str, int]: ...  # per metric: read at every n-th sample
    def cpu_cores(self) -> npt.NDArray[np.float64]: ...
    def to_pandas(self) -> Any: ...  # pandas.DataFrame

class Summary:
    cpu_cores_avg: Optional[float]
    cpu_cores_p95: Optional[float]
    cpu_cores_peak: Optional[float]
    cpu_window_s: float
    cpu_windows_carried: int
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
    energy_j: Optional[float]  # estimated, from the device's power figures

class SourceStatus:
    name: str
    available: bool
    failed: bool
    host_wide: bool
    error: str
    read_every: int  # read at every n-th scheduled sample (1 = every one)

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
    def keep_warm_cpu_s(self) -> float: ...  # measured; outside the slice
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
    def runtimes_seen(self) -> dict[str, str]: ...  # sampled; "pytorch" -> "libtorch_cpu.so"
    @property
    def thread_env(self) -> dict[str, str]: ...  # what edgeprof set in the workload's env
    @property
    def thread_moves(self) -> int: ...  # measured; per-core emulation's thread moves
    @property
    def threads_at_once(self) -> float | None: ...  # sampled; projected: runnable threads at once
    @property
    def core_quota_changes(self) -> int: ...  # measured; per-core scaling's quota changes
    @property
    def host(self) -> HostInfo: ...
    @property
    def edgeprof_version(self) -> str: ...
    @property
    def speed_changes(self) -> list[SpeedChange]: ...  # made by the device's speed schedule
    @property
    def energy_j(self) -> Optional[float]: ...  # estimated; None without power figures
    @property
    def device_interval(self) -> Optional[TimeInterval]: ...  # estimated; None without nn speed
    @property
    def ok(self) -> bool: ...
    def projected_s(self, measured_s: float) -> Optional[float]: ...  # core emulation "projected"
    @property
    def all_cores_wall_time_s(self) -> float: ...  # all_cores_s(wall_time_s)
    def all_cores_s(self, measured_s: float) -> float: ...  # projected_s() or measured_s
    def figure_provenance(self, name: str) -> _Provenance: ...
    @property
    def all_cores_energy_j(self) -> float | None: ...  # estimated; projected where projected
    def all_cores_energy_j_of(self, measured_s: float, cpu_s: float) -> float | None: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> "Result": ...
    def to_csv(self) -> str: ...  # first line: "# edgeprof.series schema_version=1 ..."
    def to_pandas(self) -> Any: ...  # pandas.DataFrame of the time series
    def phases_to_pandas(self) -> Any: ...
    def plot(self, ax: Any = None) -> Any: ...  # matplotlib: CPU and memory over time

class SpeedChange:
    @property
    def t_s(self) -> float: ...  # measured: seconds since the workload's release
    @property
    def factor(self) -> float: ...
    @property
    def cpu_quota_us(self) -> int: ...
    @property
    def cpu_period_us(self) -> int: ...
    @property
    def error(self) -> str: ...  # "" when the change was applied
    @property
    def runtime(self) -> str: ...  # the runtime's speed switched to; "" for a schedule's step
    @property
    def memory_mb_per_ms(self) -> float: ...  # the counted activations' MB/ms that set it; 0 if not

def estimate_energy_j(
    power: PowerDescription, wall_s: float, cpu_s: float, capacity_cores: float
) -> Optional[float]: ...

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
    def to_csv(self) -> str: ...  # "# edgeprof.repeated_series ..." first, then a run column
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

class CpuLimit:
    @property
    def quota_us(self) -> Optional[int]: ...  # None: no limit
    @property
    def period_us(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

class Slice:
    def __init__(
        self,
        device: _DeviceLike,
        *,
        parent: Optional[str] = None,
        cpu_period_us: int = 0,  # 0: chosen by edgeprof (docs/period.md)
        cpus: Sequence[int] = (),
        allow_missing_controllers: bool = False,
        iteration_time: Optional[float] = None,  # seconds; chooses cpu_period_us
        keep_warm: bool = True,  # idle-priority threads keep throttled CPUs busy
        speed_kind: str = "automatic",  # "nn" where the device has it; "integer": 7-Zip
        thread_env: bool = True,  # the device's thread count, passive OpenMP waiting, settled malloc
        core_emulation: str = "auto",  # "auto": projected where the tables allow, else pooled; "pooled": one quota; "per-core": a quota per device core; "projected": one core, times / the board's speed-up
        core_scaling: bool = False,  # per-core: quota follows the busy threads, as the board
        quota_scale: Optional[float] = None,  # quotas x this; None: the host's own share for nn speeds
        drift_check: Optional[bool] = None,  # probe the host's drift since its nn rating and check its own share; None: $EDGEPROF_DRIFT_CHECK
    workload_scaling: Optional[float] = None,  # projected: the workload's own scaling, 0.5-2; None: the board's median
    count_activations: Optional[bool] = None,  # a PyTorch or ONNX Runtime workload's activations set its speed; None: on unless EDGEPROF_COUNT_ACTIVATIONS=0
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
    def cpu_limit(self) -> CpuLimit: ...
    def __enter__(self) -> "Slice": ...
    def __exit__(self, *args: object) -> None: ...

def builtin_devices() -> list[Device]: ...
def builtin_device(name: str) -> Device: ...
def parse_size(text: str, field: str = "size") -> int: ...
def format_size(bytes: float) -> str: ...  # rounded to whole bytes; Error below 0
def format_signed_size(bytes: float) -> str: ...  # "-1.50 GiB"; Error past 2^64
def cgroup_mode() -> Literal["unified", "hybrid", "legacy"]: ...
def plan_emulation(
    device: _DeviceLike,
    cpu_period_us: int = 0,  # 0: chosen by edgeprof (docs/period.md)
    cpus: Sequence[int] = (),
    iteration_time: Optional[float] = None,
    keep_warm: bool = True,
    speed_kind: str = "automatic",
    thread_env: bool = True,
    core_emulation: str = "auto",
    core_scaling: bool = False,
    quota_scale: Optional[float] = None,  # quotas x this; None: the host's own share for nn speeds
    drift_check: Optional[bool] = None,  # probe the host's drift since its nn rating and check its own share; None: $EDGEPROF_DRIFT_CHECK
    workload_scaling: Optional[float] = None,  # projected: the workload's own scaling, 0.5-2; None: the board's median
) -> EmulationPlan: ...
_Progress = Callable[[int, int, bool, Result], None]

@overload
def run(
    argv: Sequence[Union[str, bytes]],
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
    progress: Union[_Progress, bool, None] = None,  # None: shown when more than one run
    parent: Optional[str] = None,
    cpu_period_us: int = 0,  # 0: chosen by edgeprof (docs/period.md)
    cpus: Sequence[int] = (),
    allow_missing_controllers: bool = False,
    iteration_time: Optional[float] = None,
    keep_warm: bool = True,
    speed_kind: str = "automatic",
    thread_env: bool = True,
    core_emulation: str = "auto",
    core_scaling: bool = False,
    quota_scale: Optional[float] = None,  # quotas x this; None: the host's own share for nn speeds
    drift_check: Optional[bool] = None,  # probe the host's drift since its nn rating and check its own share; None: $EDGEPROF_DRIFT_CHECK
    workload_scaling: Optional[float] = None,  # projected: the workload's own scaling, 0.5-2; None: the board's median
    count_activations: Optional[bool] = None,  # a PyTorch or ONNX Runtime workload's activations set its speed; None: on unless EDGEPROF_COUNT_ACTIVATIONS=0
) -> Result: ...
@overload
def run(
    argv: Sequence[Union[str, bytes]],
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
    progress: Union[_Progress, bool, None] = None,  # None: shown when more than one run
    parent: Optional[str] = None,
    cpu_period_us: int = 0,  # 0: chosen by edgeprof (docs/period.md)
    cpus: Sequence[int] = (),
    allow_missing_controllers: bool = False,
    iteration_time: Optional[float] = None,
    keep_warm: bool = True,
    speed_kind: str = "automatic",
    thread_env: bool = True,
    core_emulation: str = "auto",
    core_scaling: bool = False,
    quota_scale: Optional[float] = None,  # quotas x this; None: the host's own share for nn speeds
    drift_check: Optional[bool] = None,  # probe the host's drift since its nn rating and check its own share; None: $EDGEPROF_DRIFT_CHECK
    workload_scaling: Optional[float] = None,  # projected: the workload's own scaling, 0.5-2; None: the board's median
    count_activations: Optional[bool] = None,  # a PyTorch or ONNX Runtime workload's activations set its speed; None: on unless EDGEPROF_COUNT_ACTIVATIONS=0
) -> Union[Result, RepeatedResult]: ...

# Ranking and projection.

def figure(result: Result, name: str) -> float: ...
def figures(result: Result) -> dict[str, float]: ...
def is_figure_name(name: str) -> bool: ...
def check_figure_name(name: str, what: str) -> None: ...  # Error naming the figures there are
def is_size_figure(name: str) -> bool: ...  # the name ends in _bytes
@overload
def figure_samples(result: RepeatedResult, name: str) -> list[float]: ...
@overload
def figure_samples(result: Result, name: str) -> list[float]: ...

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
    def __init__(self, device: str, projection: Projection, family: str = "",
                 core_emulation: str = "") -> None: ...
    device: str
    family: str
    projection: Projection
    core_emulation: str  # "projected", "pooled", "per-core"; "" when not recorded

def calibrations_to_json(calibrations: Sequence[Calibration]) -> str: ...
def calibrations_from_json(text: str) -> list[Calibration]: ...
def find_calibration(
    calibrations: Sequence[Calibration],
    device: str,
    target: str,
    family: str = "",
    core_emulation: str = "",
) -> Optional[Calibration]: ...
def project(calibration: Calibration, result: Result, confidence: float = 0.95) -> Prediction: ...

# Comparing workloads on devices (edgeprof.compare wraps _compare) and scoring trials.

class ComparisonRow:
    @property
    def workload(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def result(self) -> RepeatedResult: ...
    @property
    def value(self) -> float: ...  # median of the ranked metric; NaN when a run failed or lacks it
    @property
    def memory(self) -> float: ...  # median of the memory metric; NaN when a run failed or lacks it
    @property
    def rank(self) -> int: ...  # 1 is the best; 0 when not ranked (a run failed or lacks the metric)
    @property
    def tied(self) -> bool: ...
    @property
    def pareto(self) -> bool: ...
    @property
    def projected(self) -> Optional[Prediction]: ...

class Comparison:
    @property
    def rows(self) -> list[ComparisonRow]: ...
    @property
    def metric(self) -> str: ...
    @property
    def memory_metric(self) -> str: ...
    @property
    def projected_target(self) -> str: ...
    @property
    def repeat(self) -> int: ...
    def to_pandas(self) -> Any: ...  # pandas.DataFrame, one row per workload x device
    def plot(self, ax: Any = None) -> Any: ...  # matplotlib: time against memory

def _compare(
    names: Sequence[str],
    argvs: Sequence[Sequence[str]],
    devices: Sequence[object],
    repeat: int,
    warmup: int,
    metric: str,
    memory_metric: str,
    test: str,
    alpha: float,
    calibrations: Sequence[Calibration],
    projected_target: str,
    interval: Optional[float],
    timeout: Optional[float],
    progress: Optional[Callable[[int, int, str, str, Result], None]],
    *,
    parent: Optional[str] = None,
    cpu_period_us: int = 0,
    allow_missing_controllers: bool = False,
    iteration_time: Optional[float] = None,
    keep_warm: bool = True,
    speed_kind: str = "automatic",
    thread_env: bool = True,
    core_emulation: str = "auto",
    core_scaling: bool = False,
    quota_scale: Optional[float] = None,
    drift_check: Optional[bool] = None,  # probe the host's drift since its nn rating and check its own share; None: $EDGEPROF_DRIFT_CHECK
    workload_scaling: Optional[float] = None,  # projected: the workload's own scaling, 0.5-2; None: the board's median
    count_activations: Optional[bool] = None,  # a PyTorch or ONNX Runtime workload's activations set its speed; None: on unless EDGEPROF_COUNT_ACTIVATIONS=0
) -> Comparison: ...

class Score:
    @property
    def ok(self) -> bool: ...
    @property
    def latency(self) -> float: ...
    @property
    def memory(self) -> float: ...
    @property
    def latency_provenance(self) -> _Provenance | Literal[""]: ...
    @property
    def memory_provenance(self) -> _Provenance | Literal[""]: ...
    @property
    def latency_prediction(self) -> Optional[Prediction]: ...
    @property
    def memory_prediction(self) -> Optional[Prediction]: ...
    @property
    def latency_check(self) -> Optional[BudgetCheck]: ...
    @property
    def memory_check(self) -> Optional[BudgetCheck]: ...
    @property
    def fits(self) -> bool: ...
    @property
    def penalty(self) -> float: ...  # sum of the relative overruns of the limits

def score(
    result: Union[Result, RepeatedResult],  # repeated: by the runs' medians
    *,
    latency: Optional[float] = None,
    memory: Optional[float] = None,
    latency_figure: str = "all_cores_wall_time_s",
    memory_figure: str = "peak_memory_bytes",
    latency_calibration: Optional[Calibration] = None,
    memory_calibration: Optional[Calibration] = None,
) -> Score: ...

# Core speed calibrated from workloads measured on the real device.

class SpeedModel:
    def __init__(self, a: float, b: float) -> None: ...
    @property
    def a(self) -> float: ...  # scales with 1 / speed
    @property
    def b(self) -> float: ...  # does not depend on the speed
    def at(self, speed: float) -> float: ...

def fit_speed_model(points: Sequence[tuple[float, float]]) -> SpeedModel: ...
def solve_core_speed(
    models: Sequence[SpeedModel], targets: Sequence[float], lo: float, hi: float
) -> float: ...

class WorkloadSpeedFit:
    @property
    def name(self) -> str: ...
    @property
    def device_value(self) -> float: ...
    @property
    def points(self) -> list[tuple[float, float]]: ...  # measured (speed, median figure)
    @property
    def model(self) -> SpeedModel: ...
    @property
    def emulated(self) -> float: ...  # measured at the calibrated speed
    @property
    def residual(self) -> float: ...  # emulated / device_value - 1
    @property
    def speed_sensitive(self) -> bool: ...

class PeriodSpeedFit:
    @property
    def period_us(self) -> int: ...
    @property
    def core_speed(self) -> float: ...
    @property
    def rms_residual(self) -> float: ...
    @property
    def workloads(self) -> list[WorkloadSpeedFit]: ...
    @property
    def notes(self) -> list[str]: ...  # of this period's solution reported

class SpeedCalibration:
    @property
    def core_speed(self) -> float: ...
    @property
    def period_us(self) -> int: ...
    @property
    def rms_residual(self) -> float: ...
    @property
    def max_abs_residual(self) -> float: ...
    @property
    def periods(self) -> list[PeriodSpeedFit]: ...
    @property
    def chosen(self) -> int: ...  # the index in periods of the period taken
    @property
    def device(self) -> Device: ...  # with the calibrated core_speed and its source
    @property
    def notes(self) -> list[str]: ...

def calibrate_speed(
    device: _DeviceLike,
    workloads: Sequence[tuple[str, Sequence[str], float]],  # (name, argv, device value)
    *,
    figure: str = "wall_time_s",
    repeat: int = 3,
    speeds: Sequence[float] = (),
    periods_us: Sequence[int] = (),
    parent: Optional[str] = None,
    cpu_period_us: int = 0,  # 0: chosen by edgeprof (docs/period.md)
    cpus: Sequence[int] = (),
    allow_missing_controllers: bool = False,
    iteration_time: Optional[float] = None,
    keep_warm: bool = True,
    speed_kind: str = "automatic",
    thread_env: bool = True,
    core_emulation: str = "auto",
    core_scaling: bool = False,
    quota_scale: Optional[float] = None,  # quotas x this; None: the host's own share for nn speeds
    drift_check: Optional[bool] = None,  # probe the host's drift since its nn rating and check its own share; None: $EDGEPROF_DRIFT_CHECK
    workload_scaling: Optional[float] = None,  # projected: the workload's own scaling, 0.5-2; None: the board's median
    timeout: Optional[float] = None,
    progress: Optional[Callable[[int, int, str, float, int], None]] = None,
) -> SpeedCalibration: ...
