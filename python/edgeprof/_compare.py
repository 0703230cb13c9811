"""``edgeprof.compare``: every workload on every device, ranked, as a tidy table."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from edgeprof import _core

_Devices = Union[str, "_core.Device", Sequence[Union[str, "_core.Device"]]]


def _tqdm(total: int, desc: str) -> Any:
    """A tqdm bar of `total` runs, or False where tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return False
    return tqdm(total=total, desc=desc, unit="run")


def _said(line: str) -> bool:
    """Prints a progress line on stderr; False when stderr cannot take it."""
    try:
        print(line, file=sys.stderr, flush=True)
        return True
    except (OSError, ValueError):  # ValueError: stderr closed
        return False


class _Progress:
    """tqdm where installed, else one line per run on stderr. Where stderr cannot take it (a
    full disk, a closed pipe), the progress stops and the runs go on (the error ended the
    comparison, its results lost)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None

    def __call__(self, done: int, total: int, workload: str, device: str,
                 result: "_core.Result") -> None:
        if not self.enabled:
            return
        try:
            if self.bar is None:
                self.bar = _tqdm(total, "edgeprof compare")
            if self.bar:
                self.bar.set_postfix_str(f"{workload} on {device}", refresh=False)
                self.bar.update(1)
                return
        except (OSError, ValueError):
            self.enabled = False
            return
        outcome = "ok" if result.ok else "FAILED"
        self.enabled = _said(f"edgeprof: [{done}/{total}] {workload} on {device}: "
                             f"{result.wall_time_s:.3f} s, {outcome}")

    def close(self) -> None:
        if self.bar:
            try:
                self.bar.close()
            except (OSError, ValueError):
                pass


class _RunProgress:
    """``run(repeat=...)``'s progress: tqdm where installed, else one line per run on stderr.
    The binding makes one for ``progress=True`` (and by default when there is more than one
    run)."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.enabled = True

    def __call__(self, index: int, total: int, warmup: bool, result: "_core.Result") -> None:
        if not self.enabled:
            return
        try:
            if self.bar is None:
                self.bar = _tqdm(total, "edgeprof run")
            if self.bar:
                self.bar.set_postfix_str("warm-up" if warmup else "", refresh=False)
                self.bar.update(1)
                if index + 1 >= total:
                    self.bar.close()
                return
        except (OSError, ValueError):  # as _Progress: the runs go on without it
            self.enabled = False
            return
        outcome = "ok" if result.ok else "FAILED"
        kind = "warm-up" if warmup else "run"
        self.enabled = _said(f"edgeprof: [{index + 1}/{total}] {kind} "
                             f"{result.wall_time_s:.3f} s, {outcome}")


def compare(workloads: Union[Mapping[str, Union[str, Sequence[str]]], Iterable[tuple[str, Any]]],
            devices: _Devices = "raspberry-pi-4", *, repeat: int = 5, warmup: int = 0,
            metric: str = "all_cores_wall_time_s", memory_metric: str = "peak_memory_bytes",
            test: str = "mann-whitney", alpha: float = 0.05,
            calibrations: Optional[Sequence["_core.Calibration"]] = None,
            projected_target: str = "", interval: Optional[float] = _core.DEFAULT_INTERVAL_S,
            timeout: Optional[float] = None, progress: bool = True,
            core_emulation: str = "auto", speed_kind: str = "automatic",
            keep_warm: bool = True, thread_env: bool = True,
            quota_scale: Optional[float] = None, core_scaling: bool = False,
            drift_check: Optional[bool] = None, workload_scaling: Optional[float] = None,
            count_activations: Optional[bool] = None,
            cpu_period_us: int = 0, iteration_time: Optional[float] = None,
            parent: Optional[str] = None,
            allow_missing_controllers: bool = False) -> "_core.Comparison":
    """Runs every workload on every device ``repeat`` times (each in a fresh slice) and ranks the
    workloads per device by the median of ``metric``, with ties where the test cannot separate
    them; marks the Pareto front of (metric, memory); projects ``projected_target`` with the
    calibration found for each (device, workload) when ``calibrations`` are given.

    ``workloads`` maps names to commands (a list of arguments, or a string split like a shell
    would). Shows progress (tqdm where installed). Ctrl-C stops at once and leaves nothing
    behind. The result prints as a table; ``to_pandas()`` gives one row per workload x device.
    A workload whose run failed, or lacks ``metric``, is not ranked (``rank`` 0, NA in
    ``to_pandas()``); a command that cannot be executed, or a device with more memory than this
    host, is refused before any run.

    ``core_emulation`` to ``allow_missing_controllers``: how each slice emulates its device, as
    ``run()`` takes them. The default ``metric``, ``all_cores_wall_time_s``, is each device's
    time with all its cores whatever the core emulation: measured where the run emulated all of
    them, projected from one core's time under ``core_emulation="projected"`` (which ``"auto"``,
    the default, picks for a board with published multi-thread times; ranked as by the
    measured one-core times; docs/threads.md). ``wall_time_s`` is always the run's measured time.
    """
    pairs = list(workloads.items()) if isinstance(workloads, Mapping) else list(workloads)
    names = [str(n) for n, _ in pairs]
    # As bytes: an argument that is not UTF-8 (a surrogate escape) reaches the workload as given.
    # A command given as bytes is split as a str is; a path is one program (iterated, bytes
    # became their numbers, a path raised "not iterable").
    argvs = [[os.fsencode(a if isinstance(a, (bytes, os.PathLike)) else str(a))
              for a in (_split(n, os.fsdecode(c)) if isinstance(c, (str, bytes))
                        else [c] if isinstance(c, os.PathLike) else c)] for n, c in pairs]
    if isinstance(devices, (str, _core.Device)):
        devices = [devices]
    bar = _Progress(progress)
    try:
        return _core._compare(  # wrong types named as compare()'s by _args.install
            names, argvs, list(devices), repeat, warmup, metric, memory_metric, test, alpha,
            list(calibrations or []), projected_target, interval, timeout, bar, parent=parent,
            cpu_period_us=cpu_period_us, allow_missing_controllers=allow_missing_controllers,
            iteration_time=iteration_time, keep_warm=keep_warm, speed_kind=speed_kind,
            thread_env=thread_env, core_emulation=core_emulation, core_scaling=core_scaling,
            quota_scale=quota_scale, drift_check=drift_check, workload_scaling=workload_scaling,
            count_activations=count_activations)
    finally:
        bar.close()


def _split(name: object, command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError as e:
        raise _core.Error(f"workload {name!r}: its command {command!r} cannot be split into "
                          f"words ({e}): close its quotes or escape them") from None


def comparison_to_pandas(self: "_core.Comparison") -> Any:
    """One row per workload x device: rank, tied, pareto, medians, statistics, projection."""
    from edgeprof._frames import _pandas
    pd = _pandas()
    rows = []
    for r in self.rows:
        # A workload not ranked (a run failed, or lacks the metric) has no rank: NA, not 0.
        row = {"device": r.device, "workload": r.workload, "rank": r.rank or None, "tied": r.tied,
               "pareto": r.pareto, self.metric: r.value, self.memory_metric: r.memory,
               "runs": len(r.result.runs), "ok": r.result.ok}
        stat = r.result.stats.get(self.metric)
        if stat is not None:
            row[f"{self.metric}_ci95_low"] = stat.ci95_low
            row[f"{self.metric}_ci95_high"] = stat.ci95_high
        if self.projected_target:
            p = r.projected
            row[f"{self.projected_target} (projected)"] = p.estimate if p else None
            row[f"{self.projected_target}_low"] = p.low if p else None
            row[f"{self.projected_target}_high"] = p.high if p else None
        rows.append(row)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["rank"] = frame["rank"].astype("Int64")
    return frame


def comparison_plot(self: "_core.Comparison", ax: Any = None) -> Any:
    """Median time against median memory per workload, one colour per device, the Pareto front
    circled. Returns the matplotlib figure."""
    from edgeprof._display import _plain, _pyplot
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    devices = list(dict.fromkeys(r.device for r in self.rows))
    scale, unit = (2**20, "MiB") if _core.is_size_figure(self.memory_metric) else (1, "")
    for i, d in enumerate(devices):
        # Both figures: a row that lacks one (a failed run, a kernel that keeps no peak) has no
        # point to draw.
        rows = [r for r in self.rows
                if r.device == d and r.value == r.value and r.memory == r.memory]
        ax.scatter([r.value for r in rows], [r.memory / scale for r in rows], color=f"C{i}",
                   label=_plain(d))
        for r in rows:
            # Alternate devices label above and below their points: the same workload on two
            # similar devices would otherwise print its name twice in one place.
            ax.annotate(_plain(r.workload), (r.value, r.memory / scale), fontsize=8,
                        xytext=(4, 4 if i % 2 == 0 else -11), textcoords="offset points",
                        color=f"C{i}")
            if r.pareto:
                ax.scatter([r.value], [r.memory / scale], s=160, facecolors="none",
                           edgecolors=f"C{i}")
    ax.set_xlabel(_plain(f"{self.metric} (median, {_made(self, self.metric)})"))
    ax.set_ylabel(_plain(f"{self.memory_metric} (median, {_made(self, self.memory_metric)}"
                         f"{', ' + unit if unit else ''})"))
    ax.set_title("circled: Pareto front per device", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def _made(self: "_core.Comparison", figure: str) -> str:
    """How the rows' `figure` was made: "measured", "sampled", "projected" or "estimated" (the
    memory figure's was not said; a sampled one was called measured)."""
    made = sorted({r.result.runs[0].figure_provenance(figure)
                   for r in self.rows if r.result.runs})
    return " and ".join(made) or "measured"


def _value_text(v: float, ok: bool = False) -> str:
    return ("n/a" if ok else "failed") if v != v else f"{v:.4g}"


def _memory_text(metric: str, v: float, ok: bool = False) -> str:
    if v != v:
        return "n/a" if ok else "failed"
    if not _core.is_size_figure(metric) or not abs(v) <= 2**64:
        return f"{v:.4g}"
    return _core.format_signed_size(v)


def comparison_repr(self: "_core.Comparison") -> str:
    """One line: what was compared and each device's best workload."""
    devices = list(dict.fromkeys(r.device for r in self.rows))
    workloads = list(dict.fromkeys(r.workload for r in self.rows))
    best = [f"{r.device}: {r.workload} {_value_text(r.value)}" for r in self.rows
            if r.rank == 1] or ["none ranked"]
    return (f"<edgeprof.analysis.Comparison of {len(workloads)} workload(s) on "
            f"{len(devices)} device(s) "
            f"by median {self.metric}, {self.repeat} run(s) each; best: {'; '.join(best)}>")


def comparison_html(self: "_core.Comparison") -> str:
    """The ranking per device as a table: rank, ties, Pareto front, medians."""
    import html
    cols = ["device", "rank", "workload", f"{self.metric} (median, {_made(self, self.metric)})",
            f"{self.memory_metric} (median, {_made(self, self.memory_metric)})", "tied",
            "Pareto"]
    if self.projected_target:
        cols.append(f"{self.projected_target} (projected)")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for r in self.rows:
        cells = [r.device, str(r.rank) if r.rank else "-", r.workload,
                 _value_text(r.value, r.result.ok),
                 _memory_text(self.memory_metric, r.memory, r.result.ok),
                 "tied" if r.tied else "", "yes" if r.pareto else ""]
        if self.projected_target:
            p = r.projected
            cells.append(f"{p.estimate:.4g} ({p.low:.4g} .. {p.high:.4g})" if p else "")
        body.append("<tr>" + "".join(f"<td style='text-align:left'>{html.escape(c)}</td>"
                                     for c in cells) + "</tr>")
    return (f"<table style='font-size:90%'><caption style='text-align:left'>edgeprof compare: "
            f"{self.repeat} run(s) per workload and device, ranked by the median of "
            f"{html.escape(self.metric)}</caption><tr>{head}</tr>{''.join(body)}</table>")


def install() -> None:
    _core.Comparison.to_pandas = comparison_to_pandas
    _core.Comparison.plot = comparison_plot
    _core.Comparison.__repr__ = comparison_repr
    _core.Comparison._repr_html_ = comparison_html
