"""The Auptimizer Profiler's published fits, reproduced and extended with edgeprof.

Reads the dataset in ``../shared/datasets/auptimizer-figures`` (or ``$EDGEPROF_DATASETS/
auptimizer-figures``); it is not copied into the project. Used by ``test_projection.py`` and,
run as a script, prints the tables of ``docs/projection.md``::

    python3 tests/python/auptimizer.py
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import edgeprof

# The metric names of the fits file, as the points file spells them.
POINT_METRIC = {"avg_inference_time_per_sample_s": "inference_time_s",
                "script_total_runtime_s": "script_runtime_s"}


def dataset_dir() -> Optional[Path]:
    """Where the dataset is, or None."""
    candidates = []
    if os.environ.get("EDGEPROF_DATASETS"):
        candidates.append(Path(os.environ["EDGEPROF_DATASETS"]) / "auptimizer-figures")
    here = Path(__file__).resolve()
    candidates.append(here.parents[3] / "shared" / "datasets" / "auptimizer-figures")
    candidates.append(Path("/work/shared/datasets/auptimizer-figures"))
    for c in candidates:
        if (c / "figure_fit_equations.csv").is_file():
            return c
    return None


@dataclass
class Panel:
    """One published fit and the digitized points it was drawn from."""
    figure: str
    device: str
    metric: str
    cpus: str
    a: float
    b: float
    r2: float
    n_models: int
    note: str
    x: list[float]
    y: list[float]

    @property
    def label(self) -> str:
        threads = f", {self.cpus} CPU{'s' if self.cpus != '1' else ''}" \
            if self.figure.startswith("G6") else ""
        return f"{self.device}, {self.metric}{threads} ({self.figure})"


def panels(directory: Path) -> list[Panel]:
    with open(directory / "figure_fit_equations.csv", newline="") as f:
        fits = list(csv.DictReader(f))
    with open(directory / "digitized_figure_points.csv", newline="") as f:
        points = list(csv.DictReader(f))
    out = []
    for fit in fits:
        metric = POINT_METRIC.get(fit["metric"], fit["metric"])
        sel = [p for p in points
               if p["figure"] == fit["figure"] and p["device"] == fit["device"]
               and p["metric"] == metric and p["profiler_cpus"] == fit["profiler_cpus"]
               and p["device_threads_or_cores"] == fit["device_threads_or_cores"]]
        out.append(Panel(fit["figure"], fit["device"], fit["metric"], fit["profiler_cpus"],
                         float(fit["fit_slope_a"]), float(fit["fit_intercept_b"]),
                         float(fit["R2"]), int(fit["n_models"]), fit["note"],
                         [float(p["profiler_value"]) for p in sel],
                         [float(p["device_value"]) for p in sel]))
    return out


def _p(value: float) -> str:
    return f"{value:.2g}" if value > 0 else "< 1e-15"


def markdown(directory: Path) -> str:
    rows = ["| panel | n | published a, b, R² | edgeprof OLS a, b, R² | LOO error median / max "
            "| within ±10% | Spearman ρ (p) | Kendall τ-b (p) | auto picks (LOO median) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in panels(directory):
        ols = edgeprof.analysis.Projection.fit(p.x, p.y, model="linear")
        b, a = ols.coefficients
        auto = edgeprof.analysis.Projection.fit(p.x, p.y, model="auto")
        rho = edgeprof.analysis.spearman(p.x, p.y)
        tau = edgeprof.analysis.kendall(p.x, p.y)
        rows.append(
            f"| {p.label} | {len(p.x)} | {p.a:g}, {p.b:+g}, {p.r2:g} "
            f"| {a:.4g}, {b:+.4g}, {ols.r_squared:.3f} "
            f"| {ols.loo_ape_median:.1%} / {ols.loo_ape_max:.1%} | {ols.loo_within_10pct:.0%} "
            f"| {rho.coefficient:.3f} ({_p(rho.p_value)}) | {tau.coefficient:.3f} "
            f"({_p(tau.p_value)}) | {auto.model} ({auto.loo_ape_median:.1%}) |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    d = dataset_dir()
    if d is None:
        raise SystemExit("the auptimizer-figures dataset is not there: set EDGEPROF_DATASETS")
    print(markdown(d), end="")
