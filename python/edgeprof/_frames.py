"""Results as pandas DataFrames (pandas is imported only when asked for)."""

from __future__ import annotations

from typing import Any

from edgeprof import _core


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "to_pandas() needs pandas, which edgeprof does not install: pip install pandas"
        ) from e
    return pandas


def series_to_pandas(self: "_core.TimeSeries") -> Any:
    """One row per sample: ``t_s`` (seconds since the workload was released), ``scheduled``,
    every metric available in the run (int64: a difference of a falling gauge is negative;
    float64 for a column past 2^63), and ``cpu_cores`` (CPU used since the previous sample,
    in host cores; NaN in the first row). ``cpu_cores`` is the raw rate over each gap: the
    kernel charges CPU time at its ticks, so over a gap of microseconds (a phase mark's row,
    ``scheduled`` False, beside a timed sample) it can read tens of cores. For a rate to
    show, difference ``cpu_usage_ns`` over the scheduled rows or wider windows, as
    ``Result.plot`` does."""
    import numpy as np  # here, not at import: `import edgeprof` (and the CLI) stays fast

    pd = _pandas()
    data: dict[str, Any] = {"t_s": np.asarray(self.t_ns) / 1e9,
                            "scheduled": np.asarray(self.scheduled, dtype=bool)}
    for name in self.available:
        column = np.asarray(self[name])
        # Signed, so that a difference of a falling gauge (memory freed) is negative rather
        # than wrapping to about 1.8e19; a value past int64 (none a kernel counts) as a float.
        data[name] = (column.astype(np.int64) if not len(column) or column.max() < 2**63
                      else column.astype(np.float64))
    cores = self.cpu_cores()
    if len(cores):
        data["cpu_cores"] = np.concatenate(([np.nan], cores))
    return pd.DataFrame(data)


def result_to_pandas(self: "_core.Result") -> Any:
    """The run's time series as a DataFrame (see ``TimeSeries.to_pandas``)."""
    return series_to_pandas(self.series)


def phases_to_pandas(self: "_core.Result") -> Any:
    """One row per phase the workload marked; ``all_cores_wall_time_s`` and
    ``all_cores_energy_j`` are the phase's time and energy on the device with all its cores
    (``Result.all_cores_s``, ``Result.all_cores_energy_j_of``: projected on a projected run,
    else the measured ``wall_time_s`` and the estimated ``energy_j``)."""
    pd = _pandas()
    derived = ["all_cores_wall_time_s", "all_cores_energy_j"]
    columns = ["name", "start_s", "end_s", "wall_time_s", "all_cores_wall_time_s",
               "ended_by_exit", "cpu_s", "memory_start_bytes", "memory_peak_bytes",
               "memory_net_peak_bytes", "energy_j", "all_cores_energy_j"]
    rows = []
    for p in self.phases:
        row = {c: getattr(p, c) for c in columns if c not in derived}
        row["all_cores_wall_time_s"] = self.all_cores_s(p.wall_time_s)
        row["all_cores_energy_j"] = (None if p.cpu_s is None
                                     else self.all_cores_energy_j_of(p.wall_time_s, p.cpu_s))
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def repeated_to_pandas(self: "_core.RepeatedResult") -> Any:
    """One row per figure: n, median, mean, stddev, ci95_low, ci95_high, min, max."""
    pd = _pandas()
    fields = ["n", "median", "mean", "stddev", "ci95_low", "ci95_high", "min", "max"]
    rows = {name: {f: getattr(s, f) for f in fields} for name, s in self.stats.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=fields)
    frame.index.name = "figure"
    return frame


def install() -> None:
    """Adds the pandas methods to the core's classes."""
    _core.TimeSeries.to_pandas = series_to_pandas
    _core.Result.to_pandas = result_to_pandas
    _core.Result.phases_to_pandas = phases_to_pandas
    _core.RepeatedResult.to_pandas = repeated_to_pandas
