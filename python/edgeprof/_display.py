"""How results show themselves: compact HTML in Jupyter, and plots (matplotlib, imported only
when plotting)."""

from __future__ import annotations

import html
import os
from typing import Any, Optional

from edgeprof import _core


def _size(n: Optional[float]) -> str:
    return "n/a" if n is None else _core.format_size(int(n))


def _row(label: str, value: str, how: str = "") -> str:
    return (f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td>"
            f"<td style='text-align:left;color:#777'>{html.escape(how)}</td></tr>")


def result_html(self: "_core.Result") -> str:
    """A compact table of the figures that matter, each with how it was obtained."""
    s = self.summary
    outcome = _outcome(self)
    d = self.device
    proj = self.plan.threads_projection
    # Projected, the device as run is one core of the board's (it read "1 cores", where the
    # text report says one core of its 4 ran).
    cores = (f"1 core of its {proj.threads} ran (projected to all)" if proj is not None
             else f"{d.cores} core{'' if d.cores == 1 else 's'}")
    rows = [
        _row("device", f"{d.name}: {cores} x speed {d.speed_text}, {_size(d.memory_bytes)}"),
        _row("outcome", outcome),
        _row("wall time", f"{self.wall_time_s:.4f} s", "measured"),
    ]
    if proj is not None:
        rows.append(_row("projected", f"{self.projected_s(self.wall_time_s):.4f} s with all "
                         f"{proj.threads} cores (/ {proj.speedup:.3g}, the board's speed-up)",
                         "projected"))
    rows += [
        _row("cpu time", f"{self.cpu_user_s:.3f} s user + {self.cpu_system_s:.3f} s system",
             "measured"),
        _row("peak memory", _size(self.peak_memory_bytes),
             f"measured ({self.peak_memory_source})" if self.peak_memory_source
             else "measured"),
        _row("throttled", f"{self.throttled_s:.3f} s", "measured"),
    ]
    if s.cpu_cores_avg is not None:
        p95 = f"{s.cpu_cores_p95:.2f}" if s.cpu_cores_p95 is not None else "n/a"
        rows.append(_row("cpu use", f"avg {s.cpu_cores_avg:.2f}, p95 {p95} host cores",
                         "avg measured, p95 sampled"))
    if s.memory_avg_bytes is not None:
        rows.append(_row("memory avg", _size(s.memory_avg_bytes), "sampled"))
    for p in self.phases:
        net = p.memory_net_peak_bytes
        memory = ("n/a" if net is None else  # signed, as the text summary shows it
                  f"{'' if net < 0 else '+'}{_core.format_signed_size(net)}")
        rows.append(_row(f"phase {p.name}", f"{p.wall_time_s:.4f} s, memory {memory}",
                         "wall measured, memory sampled"))
        if proj is not None:
            rows.append(_row(f"phase {p.name}",
                             f"{self.projected_s(p.wall_time_s):.4f} s with all {proj.threads} "
                             "cores", "projected"))
    for w in list(self.unapplied) + list(self.warnings):
        rows.append(_row("note", w))
    return ("<table style='font-size:90%'><caption style='text-align:left'>edgeprof result: "
            f"{html.escape(_command_text(self.command))}</caption>{''.join(rows)}</table>")


def repeated_html(self: "_core.RepeatedResult") -> str:
    head = ("<tr><th>figure</th><th>median</th><th>mean</th><th>stddev</th>"
            "<th>95% CI of the mean</th><th>min</th><th>max</th><th>how</th></tr>")
    first = self.runs[0] if self.runs else None
    # How each figure was made, as the text report and rankings say (measured, sampled,
    # projected, estimated): the table gave none.
    rows = "".join(
        f"<tr><td style='text-align:left'>{html.escape(name)}</td><td>{s.median:.6g}</td>"
        f"<td>{s.mean:.6g}</td><td>{s.stddev:.3g}</td><td>{s.ci95_low:.6g} .. "
        f"{s.ci95_high:.6g}</td><td>{s.min:.6g}</td><td>{s.max:.6g}</td>"
        f"<td style='color:#777'>{first.figure_provenance(name) if first else ''}</td></tr>"
        for name, s in self.stats.items())
    ok = "all succeeded" if self.ok else "SOME FAILED"
    proj = first.plan.threads_projection if first else None
    caption = "" if proj is None else (
        f"; one core of the device's {proj.threads} ran: wall_time_s and the cpu figures are "
        f"that core's, all_cores_* projected to all {proj.threads}")
    return (f"<table style='font-size:90%'><caption style='text-align:left'>edgeprof: "
            f"{len(self.runs)} runs (+{len(self.warmups)} warm-up), {ok}"
            f"{html.escape(caption)}</caption>{head}{rows}</table>")


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("plot() needs matplotlib, which edgeprof does not install: "
                          "pip install matplotlib") from e
    return plt


def _command_text(argv: "list[str]") -> str:
    """The command as text to show: an argument's bytes that are not UTF-8 (os.fsdecode's
    surrogate escapes, which no page or figure can encode) as \\xNN."""
    return " ".join(os.fsencode(a).decode("utf-8", "backslashreplace") for a in argv)


def _looks_like_path(word: str) -> bool:
    # "/usr/bin/python3", "models/a.onnx"; not "a = x / 3" (code given with -c) or "/data/"
    return (os.sep in word and not word.startswith("-") and not word.endswith(os.sep)
            and not any(c.isspace() for c in word))


def _short_command(argv: "list[str]", width: int = 70) -> str:
    """The command for a title: paths shortened to their last component, then truncated."""
    words = [os.path.basename(a) if _looks_like_path(a) else a for a in argv]
    text = _command_text(words)
    return text if len(text) <= width else text[:width - 3] + "..."


def _plain(text: str) -> str:
    """Text for matplotlib as written: a '$' would start its mathematics ("$HOME $PATH" in a
    command came out italic and without the signs; "$\\frac$" made drawing raise)."""
    return text.replace("$", r"\$")


# At most this many phases are labelled above a plot (marks made in a loop would bury it); the
# others are shaded alone, and the plot says how many.
_MAX_PHASE_LABELS = 20


def result_plot(self: "_core.Result", ax: Any = None) -> Any:
    """CPU use and memory over time, with the device's limits and the phases marked.

    Returns the matplotlib figure. ``ax``: two axes to draw into (CPU, memory) instead of a new
    figure.
    """
    import numpy as np  # here, not at import: `import edgeprof` (and the CLI) stays fast

    plt = _pyplot()
    series = self.series
    if len(series) < 2:
        raise _core.Error(f"this result has no time series to plot ({len(series)} sample(s); "
                          "it was run with interval=None): run it with a sampling interval "
                          "(the default, interval=0.01)")
    if ax is None:
        fig, (cpu_ax, mem_ax) = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
    else:
        try:
            cpu_ax, mem_ax = ax
        except (TypeError, ValueError):
            raise _core.Error("plot(ax=...) takes two axes, for CPU and for memory (plt.subplots"
                              "(2, 1)); a comparison's plot takes one") from None
        fig = cpu_ax.figure
    t = np.asarray(series.t_ns) / 1e9
    scheduled = np.asarray(series.scheduled, dtype=bool)
    if "cpu_usage_ns" in series.available:
        # Over the scheduled samples, in windows as long as the summary's (the kernel charges
        # CPU time at scheduler ticks: shorter windows show its quantisation, not the load).
        ts = t[scheduled]
        usage = np.asarray(series["cpu_usage_ns"], dtype=float)[scheduled]
        window = max(self.summary.cpu_window_s, self.summary.interval_s)
        span = float(ts[-1] - ts[0]) if len(ts) else 0.0
        if span < 10 * window:
            # A short run would get a point or two: narrower windows (at least two samples),
            # at the cost of the tick quantisation the label's window length tells about.
            window = max(2 * self.summary.interval_s, span / 10)
        edges = [0]
        for i in range(1, len(ts)):
            if ts[i] - ts[edges[-1]] >= window * 0.999:
                edges.append(i)
        if len(edges) >= 2:
            e = np.array(edges)
            cores = np.diff(usage[e]) / np.diff(ts[e]) / 1e9
            cpu_ax.step(ts[e][1:], cores, where="pre",
                        label=f"cpu (sampled, {window * 1e3:.3g} ms windows)")
        cpu_ax.axhline(self.plan.capacity_cores, color="red", linestyle="--",
                       label=f"slice CPU quota ({self.plan.capacity_cores:g} host cores)")
    cpu_ax.set_ylabel("host cores")
    cpu_ax.set_ylim(bottom=0)
    if "memory_current_bytes" in series.available:
        mib = np.asarray(series["memory_current_bytes"], dtype=float) / 2**20
        mem_ax.plot(t, mib, label="memory (sampled)")
        limit = self.plan.memory_max_bytes / 2**20
        if limit <= 4 * max(mib.max(), 1):
            mem_ax.axhline(limit, color="red", linestyle="--", label="device memory")
        else:  # a limit far above the curve would flatten it
            mem_ax.set_title(f"device memory {_size(self.plan.memory_max_bytes)} (off scale)",
                             fontsize=8, loc="right")
    mem_ax.set_ylabel("MiB")
    mem_ax.set_xlabel("seconds since exec")
    # Phase labels above the plot, a row higher where a label would run into the one before
    # (phases close together in time); long names shortened.
    x0, x1 = cpu_ax.get_xlim()
    per_char = (x1 - x0) / 110 if x1 > x0 else 0.0  # about a character of fontsize 8
    row_ends: list[float] = []
    for i, p in enumerate(self.phases):
        for a in (cpu_ax, mem_ax):
            a.axvspan(p.start_s, p.end_s, alpha=0.08, color=f"C{(i % 8) + 2}")
        if i >= _MAX_PHASE_LABELS:
            continue
        name = p.name if len(p.name) <= 24 else p.name[:23] + "\u2026"
        name = _plain(name)
        row = next((k for k, end in enumerate(row_ends) if p.start_s >= end), len(row_ends))
        if row == len(row_ends):
            row_ends.append(0.0)
        row_ends[row] = p.start_s + per_char * (len(name) + 1)
        cpu_ax.annotate(name, (p.start_s, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(0, 2 + 10 * row), textcoords="offset points", va="bottom",
                        fontsize=8)
    if len(row_ends) > 1 and ax is None:  # room for the rows under the title
        fig.subplots_adjust(top=max(0.6, 0.88 - 0.035 * len(row_ends)))
    for a in (cpu_ax, mem_ax):
        a.legend(loc="best", fontsize=8)
    many = (f" ({len(self.phases)} phases, the first {_MAX_PHASE_LABELS} labelled)"
            if len(self.phases) > _MAX_PHASE_LABELS else "")
    fig.suptitle(_plain(f"{_short_command(self.command)} on {self.device.name}{many}"),
                 fontsize=10)
    return fig


def _outcome(r: "_core.Result") -> str:
    return ("ok" if r.ok else "OOM-killed" if r.oom_killed else "timed out" if r.timed_out
            else f"signal {r.signal}" if r.signal is not None
            else f"exit code {r.exit_code}" if r.exit_code is not None else "exit status lost")


def result_repr(self: "_core.Result") -> str:
    """One line (a list of results, the IPython terminal): what ran where, and how it went."""
    return (f"<edgeprof.Result {_short_command(self.command, 40)!r} on {self.device.name}: "
            f"{_outcome(self)}, {self.wall_time_s:.4g} s wall, peak "
            f"{_size(self.peak_memory_bytes)}>")


def repeated_repr(self: "_core.RepeatedResult") -> str:
    first = self.runs[0] if len(self.runs) else None
    what = (f" of {_short_command(first.command, 40)!r} on {first.device.name}"
            if first is not None else "")
    wall = self.stats.get("wall_time_s")
    return (f"<edgeprof.RepeatedResult {len(self.runs)} runs (+{len(self.warmups)} warm-up)"
            f"{what}: {'all succeeded' if self.ok else 'SOME FAILED'}"
            + (f", median {wall.median:.4g} s wall" if wall is not None else "") + ">")


def device_repr(self: "_core.Device") -> str:
    """Not code to evaluate (a catalog device holds tables no constructor takes): its limits,
    each one set, so that two devices emulated differently print differently."""
    parts = [f"{self.cores} core{'s' if self.cores != 1 else ''}",
             f"core_speed {self.core_speed!r}", f"memory {self.memory_bytes} B"]
    parts += [f"{label} {value}{unit}" for label, value, unit in (
        ("swap", self.swap_bytes or None, " B"), ("io_read", self.io_read_bps, " B/s"),
        ("io_write", self.io_write_bps, " B/s"), ("pids_max", self.pids_max, ""),
        ("speed_kind", self.speed_kind or None, "")) if value is not None]
    if self.speed_schedule:
        parts.append("speed_schedule [" + ", ".join(f"{s.after_s!r} s x{s.factor!r}"
                                                    for s in self.speed_schedule) + "]")
    if self.power.idle_watts is not None or self.power.loaded_watts is not None:
        watts = [repr(w) if w is not None else "?"
                 for w in (self.power.idle_watts, self.power.loaded_watts)]
        parts.append(f"power {watts[0]}-{watts[1]} W")
    return f"<edgeprof.Device {self.name!r}: {', '.join(parts)}>"


def plan_text(self: "_core.EmulationPlan") -> str:
    """The plan as `edgeprof run` states it: cores and quota, memory, CPUs, then its notes."""
    lines = [f"core emulation {self.core_emulation}: {self.capacity_cores:g} cores of capacity, "
             f"quota {self.cpu_quota_us} us per {self.cpu_period_us} us on CPUs "
             f"{','.join(map(str, self.cpus))}; memory {_size(self.memory_max_bytes)}"]
    lines += [f"note: {n}" for n in self.notes]
    lines += [f"NOT APPLIED: {u}" for u in self.unapplied]
    return "\n".join(lines)


def plan_repr(self: "_core.EmulationPlan") -> str:
    return (f"<edgeprof.EmulationPlan {self.core_emulation}, {self.capacity_cores:g} cores, "
            f"quota {self.cpu_quota_us}/{self.cpu_period_us} us, CPUs "
            f"{','.join(map(str, self.cpus))}, memory {_size(self.memory_max_bytes)}, "
            f"{len(self.notes)} notes>")


def install() -> None:
    _core.Result.__repr__ = result_repr
    _core.RepeatedResult.__repr__ = repeated_repr
    _core.EmulationPlan.__repr__ = plan_repr
    _core.Device.__repr__ = device_repr
    _core.EmulationPlan.__str__ = plan_text
    _core.Result._repr_html_ = result_html
    _core.RepeatedResult._repr_html_ = repeated_html
    _core.Result.plot = result_plot
