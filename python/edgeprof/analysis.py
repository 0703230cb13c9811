"""Analysis: comparing and ranking candidates, budgets, rank agreement, Pareto fronts, and
projections fitted on your own device's measurements (calibrations).

    from edgeprof import analysis
    c = analysis.compare({"a": ["python3", "a.py"]}, ["raspberry-pi-4"])
    analysis.kendall(emulated, published)
"""

from edgeprof._analysis import load_calibrations, pareto, rank, save_calibrations
from edgeprof._compare import compare
from edgeprof._core import (
    Agreement,
    BudgetCheck,
    Calibration,
    Comparison,
    ComparisonRow,
    Prediction,
    Projection,
    RankedItem,
    Score,
    calibrations_from_json,
    calibrations_to_json,
    check_budget,
    find_calibration,
    kendall,
    pareto_front,
    project,
    score,
    spearman,
)

__all__ = [
    "Agreement",
    "BudgetCheck",
    "Calibration",
    "Comparison",
    "ComparisonRow",
    "Prediction",
    "Projection",
    "RankedItem",
    "Score",
    "calibrations_from_json",
    "calibrations_to_json",
    "check_budget",
    "compare",
    "find_calibration",
    "kendall",
    "load_calibrations",
    "pareto",
    "pareto_front",
    "project",
    "rank",
    "save_calibrations",
    "score",
    "spearman",
]
