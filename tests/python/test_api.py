"""The Python API's shape: a small top level for running and profiling, the rest in
submodules by task, and every name the top level had before them still there for one release
with a DeprecationWarning that names its new home."""

import importlib
import pickle
import warnings

import pytest

import edgeprof
from conftest import requires_cgroups
from edgeprof import _core

SUBMODULES = ["analysis", "devices", "emulation", "nn", "profiling", "results", "speed"]

# edgeprof.__all__ before the submodules (0.x, 2026-11): each must still resolve.
FORMER_TOP_LEVEL = [
    "__version__", "Agreement", "BudgetCheck", "builtin_device", "builtin_devices",
    "cached_nn_rating", "cached_quota_share", "cached_reference_rating", "calibrate_speed",
    "Calibration", "catalog_devices", "cgroup_mode", "CgroupError", "check_budget", "Child",
    "choose_cpu_period_us", "compare", "Comparison", "ComparisonRow", "CoreScores",
    "CpuDescription", "DEFAULT_CPU_PERIOD_US", "DEFAULT_INTERVAL_S", "Device",
    "device_search_path", "DeviceError", "EmulationPlan", "Error", "estimate_energy_j", "figure",
    "figures", "FigureSource", "find_calibration", "find_device", "fit_speed_model",
    "format_size", "host_calibration", "host_info", "HostCalibration", "HostDrift", "HostInfo",
    "kendall", "load_calibrations", "load_device_file", "mark", "measure_host_drift",
    "measure_nn_rating", "measure_quota_share", "measure_reference_rating", "METRICS",
    "nn_runtimes", "nn_speed", "nn_speed_from_scores", "NnRating", "NnRuntime", "NnSpeed",
    "pareto", "pareto_front", "parse_size", "PeriodSpeedFit", "PermissionDenied", "Phase",
    "phase", "plan_emulation", "PowerDescription", "Prediction", "profile", "Profiled",
    "profiled", "profiled_function", "project", "Projection", "QuotaShare", "QuotaSharePoint",
    "rank", "RankedItem", "REFERENCE_CORE", "REFERENCE_CORE_MIPS", "reference_graphs",
    "ReferenceGraph", "ReferenceRating", "RemoteTraceback", "RepeatedResult",
    "REPORT_SCHEMA_VERSION", "Result", "run", "run_suite", "RuntimeTimes", "save_calibrations",
    "Score", "score", "Slice", "solve_core_speed", "SourceStatus", "SpawnError", "spearman",
    "speed_from_scores", "SpeedCalibration", "SpeedChange", "SpeedModel", "SpeedStep",
    "Statistic", "statistics", "SUITE_VERSION", "Summary", "ThreadsProjection", "time_interval",
    "TimeInterval", "TimeSeries", "UnsupportedError", "user_devices", "UserDevices",
    "VECTOR_KERNEL_VERSION", "vector_units", "WorkerDied", "WorkloadSpeedFit",
]


def test_the_top_level_is_small_and_every_name_in_it_exists():
    assert len(edgeprof.__all__) <= 25
    assert len(set(edgeprof.__all__)) == len(edgeprof.__all__)
    for name in edgeprof.__all__:
        assert hasattr(edgeprof, name), name
    # What a first run needs is there without a submodule.
    for name in ("run", "profile", "phase", "compare", "Device", "find_device", "Result",
                 "Error", "__version__"):
        assert name in edgeprof.__all__
    assert set(SUBMODULES) <= set(dir(edgeprof))


@pytest.mark.parametrize("module", SUBMODULES)
def test_each_submodule_exports_what_it_lists(module):
    m = importlib.import_module(f"edgeprof.{module}")
    assert getattr(edgeprof, module) is m
    assert m.__doc__ and m.__all__
    for name in m.__all__:
        obj = getattr(m, name)
        # The compiled library's objects themselves, not copies (mark and phase wrap theirs).
        if hasattr(_core, name) and getattr(obj, "__module__", "") == "edgeprof._core":
            assert obj is getattr(_core, name), name


def test_every_former_top_level_name_resolves_once_more_with_a_warning():
    homes = {n: m for m in SUBMODULES for n in importlib.import_module(f"edgeprof.{m}").__all__}
    for name in FORMER_TOP_LEVEL:
        if name in edgeprof.__all__:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                getattr(edgeprof, name)  # no warning
            continue
        assert name in homes, f"{name} is in no submodule"
        with pytest.warns(DeprecationWarning, match=f"edgeprof.{homes[name]}.{name}"):
            old = getattr(edgeprof, name)
        assert old is getattr(importlib.import_module(f"edgeprof.{homes[name]}"), name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        edgeprof.nope  # noqa: B018


def test_a_call_pybind11_cannot_match_names_the_argument_not_the_whole_signature():
    """A misspelled keyword or a value of the wrong type was a TypeError holding the signature of
    up to 30 arguments and the call; it names the argument and what it must be."""
    pi = edgeprof.find_device("raspberry-pi-4b-1gb")

    def message(call) -> str:
        with pytest.raises(TypeError) as e:
            call()
        assert "incompatible" not in str(e.value) and "Invoked with" not in str(e.value)
        return str(e.value)

    assert message(lambda: edgeprof.run(["true"], device=pi, repaet=2)) == (
        "run(): no argument named 'repaet' (did you mean 'repeat' or 'parent'?)")
    assert message(lambda: edgeprof.run(["true"], device=pi, repeat=2**64)) == (
        "run(): repeat=18446744073709551616 is out of range")
    # Past a C++ int but within 64 bits: pybind11 writes int and int64_t alike, so only perhaps.
    assert message(lambda: edgeprof.run(["true"], device=pi, repeat=2**40)) == (
        "run(): repeat=1099511627776 is perhaps out of range (where a C++ int is taken: "
        "-2147483648 to 2147483647)")
    assert message(lambda: edgeprof.run(["true"], device=pi, cpu_period_us=-1)) == (
        "run(): cpu_period_us=-1 is perhaps out of range (where an unsigned number is taken: 0 "
        "or more)")
    # Not where another argument could be the culprit (a list of SpeedStep, unjudged): a large
    # valid int is not blamed, pybind11's message stands.
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        edgeprof.Device(name="b", cores=2, core_speed=0.5, memory="1GiB",
                        io_read_bps=3_000_000_000, speed_schedule=[(30, 0.7)])
    assert message(lambda: edgeprof.run(["true"], device=pi, interval="fast")) == (
        "run(): interval='fast' (str) is not a number or None")
    assert message(lambda: edgeprof.run(["true"])) == "run(): device is required"
    assert "pass the others by name" in message(lambda: edgeprof.run(["true"], pi))
    # Constructors too, in every module that takes them from the extension.
    assert message(lambda: edgeprof.Device(name="b", cores=1, core_speed=0.5, memroy="1GiB")) == (
        "Device(): no argument named 'memroy' (did you mean 'memory'?)")
    assert message(lambda: edgeprof.emulation.Slice(pi, cpus=[0, "a"])).startswith(
        "Slice(): cpus=[0, 'a'] (list) is not a list whose items are each an int")
    assert message(lambda: edgeprof.emulation.plan_emulation(pi, keep_warm="yes")) == (
        "plan_emulation(): keep_warm='yes' (str) is not True or False")
    # Methods and static methods too (were pybind11's dump of the signature and the call).
    assert message(lambda: pi.for_threads(2**40)) == (
        "Device.for_threads(): threads=1099511627776 is perhaps out of range (where a C++ int "
        "is taken: -2147483648 to 2147483647)")
    assert message(lambda: pi.for_runtime(None)) == (
        "Device.for_runtime(): runtime=None (NoneType) is not a str")
    assert message(lambda: edgeprof.Result.from_json(text=1)) == (
        "Result.from_json(): text=1 (int) is not a str")
    # A path or name of the wrong type names the argument (was os.fspath's "expected str,
    # bytes or os.PathLike object, not NoneType").
    with pytest.raises(TypeError, match="^find_device's name_or_path .* must be a str, bytes or "
                                        "os.PathLike, got NoneType$"):
        edgeprof.find_device(None)
    # Only what pybind11 surely cannot convert is named: a numpy array is a sequence, bytes a
    # str; where the culprit cannot be told (a list of SpeedModel), pybind11's message stands.
    import numpy as np
    with pytest.raises(TypeError, match="incompatible function arguments"):
        edgeprof.speed.solve_core_speed(["m"], np.array([1.0]), 0.1, 1.0)
    assert message(lambda: edgeprof.analysis.kendall({1.0, 2.0, 3.0}, [1.0, 2.0, "a"])) == (
        "kendall(): y=[1.0, 2.0, 'a'] (list) is not a list whose items are each a number")

    class BadRepr:
        def __repr__(self):
            raise ValueError("no repr")

    with pytest.raises(TypeError, match="incompatible function arguments"):
        edgeprof.results.statistics(BadRepr())  # the diagnosis raised: pybind11's message
    # Extra positional arguments may be the required ones: not said to be missing.
    extra = message(lambda: edgeprof.Device("b", 1, 0.5, "1GiB"))
    assert "positional" in extra and "required" not in extra
    # A TypeError of another call, made below the wrapped one (a callback's), is not this
    # call's: it is raised as it was, not blamed on this call's arguments.
    from edgeprof import _args
    inner = edgeprof.results.statistics.__wrapped__
    outer = _args._explained(lambda x: inner("x"), "outer()",
                             [_args._Param("x", "str", True, False)], False, "m", "outer")
    with pytest.raises(TypeError, match=r"statistics\(\): incompatible function arguments"):
        outer(5)
    # Functions stay picklable (process pools, functools.partial) as the same object.
    assert pickle.loads(pickle.dumps(edgeprof.results.statistics)) is edgeprof.results.statistics
    assert edgeprof.results.statistics([1.0, 2.0]).n == 2
    # What the bindings refuse themselves is unchanged, and a good call works as before.
    with pytest.raises(TypeError, match="device: expected a Device"):
        edgeprof.emulation.plan_emulation(5)
    assert edgeprof.Device(name="b", cores=1, core_speed=0.5, memory="1GiB").cores == 1


# compare(): what it checks before the first run, and its plot. These run workloads.


def _stand_in_ncnn_python(tmp_path) -> str:
    """A 'Python with ncnn' that reports 10 ms for every reference graph: this host's nn rating
    (as tests/python/test_nn.py makes it), so that a catalog device has an nn speed."""
    lines = ["#!/bin/sh", "echo 'runtime ncnn 1.0.test (stand-in)'"]
    lines += [f"echo '{g.name} 10.0 10.0 10.0'" for g in edgeprof.nn.reference_graphs()]
    fake = tmp_path / "python"
    fake.write_text("\n".join(lines) + "\n")
    fake.chmod(0o755)
    return str(fake)


@requires_cgroups
def test_compare_at_the_nn_speed_refuses_a_device_without_one_before_any_run(tmp_path,
                                                                            monkeypatch):
    """The first device ran all its workloads before the second was found to have no nn speed
    (its runs' time lost); now every device is checked first."""
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    edgeprof.nn.measure_nn_rating(python=_stand_in_ncnn_python(tmp_path))
    rated = edgeprof.find_device("raspberry-pi-zero-2w").for_threads(1)
    plain = edgeprof.Device(name="plain-board", cores=1, core_speed=0.5, memory="256MiB")
    assert rated.nn is not None and plain.nn is None
    marker = tmp_path / "ran"
    workloads = {"touch": ["touch", str(marker)]}
    with pytest.raises(edgeprof.DeviceError, match="plain-board has no nn speed"):
        edgeprof.compare(workloads, [rated, plain], repeat=1, progress=False, speed_kind="nn")
    assert not marker.exists()  # the rated board, first in the list, never ran
    # The same workload on the rated board alone runs (the marker can be written), at nn speed.
    c = edgeprof.compare(workloads, [rated], repeat=1, progress=False, speed_kind="nn")
    assert marker.exists() and c.rows[0].result.ok
    assert c.rows[0].result.runs[0].device.speed_kind == "nn"


@requires_cgroups
def test_the_comparison_plot_draws_dollar_signs_as_written(tmp_path):
    """'$' began matplotlib's mathematics: "$HOME" lost its sign and went italic, "$\\frac$"
    made drawing raise."""
    plt = pytest.importorskip("matplotlib.pyplot")
    board = edgeprof.Device(name="$board", cores=1, core_speed=1.0, memory="256MiB")
    c = edgeprof.compare({"$HOME": ["true"], "$\\frac$": ["true"]}, board, repeat=1,
                         progress=False)
    fig = c.plot()
    try:
        fig.savefig(tmp_path / "c.png")  # drawn: "$\frac$" raised here
        ax = fig.axes[0]
        assert sorted(t.get_text() for t in ax.texts) == [r"\$HOME", r"\$\frac\$"]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [r"\$board"]
    finally:
        plt.close(fig)
