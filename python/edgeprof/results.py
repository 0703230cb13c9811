"""Results: what a run measured, its time series, phases and summary, statistics over repeated
runs, and the named figures that rankings and budgets use.

    from edgeprof import results
    rr = results.RepeatedResult.from_json(open("report.json").read())
    results.figure(rr.runs[0], "all_cores_wall_time_s")
"""

from edgeprof._core import (
    METRICS,
    REPORT_SCHEMA_VERSION,
    Phase,
    RepeatedResult,
    Result,
    SourceStatus,
    SpeedChange,
    Statistic,
    Summary,
    TimeSeries,
    check_figure_name,
    estimate_energy_j,
    figure,
    figures,
    is_figure_name,
    is_size_figure,
    statistics,
)

__all__ = [
    "METRICS",
    "REPORT_SCHEMA_VERSION",
    "Phase",
    "RepeatedResult",
    "Result",
    "SourceStatus",
    "SpeedChange",
    "Statistic",
    "Summary",
    "TimeSeries",
    "check_figure_name",
    "estimate_energy_j",
    "figure",
    "figures",
    "is_figure_name",
    "is_size_figure",
    "statistics",
]
