#!/usr/bin/env python3
"""Do edgeprof's reference graphs time like the graphs ncnn's published device times come from?

edgeprof writes its own ncnn graphs of the architectures ncnn's `benchncnn` times
(`edgeprof.nn.reference_graphs()`); the devices' published times are of ncnn's graphs. A graph
that takes longer or shorter on this host than ncnn's graph of the same architecture puts its
difference into every device's error for that graph. This benchmark times both, graph by graph,
on this host, with edgeprof's own runner (the one the host's rating uses: ncnn from PyPI, one
thread pinned to one CPU, zero weights, warm-up, then the median of timed inferences), in
rounds in which each graph's two versions run in random order, and reports per graph the median
over rounds of edgeprof's time / ncnn's time, against the goal of within 10% (issue 34).

    python3 benchmarks/ncnn_graphs.py --ncnn-models /path/to/ncnn/benchmark/models \
        [--rounds 7] [--graphs resnet18,vgg16] [--markdown out.md]

ncnn's graphs are read from a checkout of https://github.com/Tencent/ncnn (its
`benchmark/models/*.param`), given by the user; none of them is part of edgeprof. Needs the
Python package ncnn (`pip install ncnn`); no root. About 4 minutes with 7 rounds here.

`--no-hints` also times edgeprof's graphs without their shape hints (the `-23330=` arrays ncnn
reads at load time), to show what they change.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import edgeprof
from edgeprof import _core  # nn_runner_source: the runner the rating uses, not public API

HINTS = re.compile(r" -23330=[0-9,-]+")


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.machine()


def output_blob(param: str) -> str:
    """The last layer's first output: the graph's output, as benchncnn extracts it."""
    last = param.strip().splitlines()[-1].split()
    return last[4 + int(last[2])]


def write_dir(path: str, graphs: dict[str, tuple[str, int, int, str, str]]) -> None:
    """Writes each graph's param and the runner's graphs.txt into `path`."""
    os.makedirs(path)
    with open(os.path.join(path, "graphs.txt"), "w") as index:
        for name, (param, w, h, blob_in, blob_out) in graphs.items():
            with open(os.path.join(path, f"{name}.param"), "w") as f:
                f.write(param)
            index.write(f"{name} {w} {h} 3 {blob_in} {blob_out}\n")


def time_graph(runner: str, directory: str, name: str, cpu: int, warmup: int,
               loops: int) -> float:
    """The runner's median ms for one graph, pinned to `cpu`."""
    out = subprocess.run(
        ["taskset", "-c", str(cpu), sys.executable, runner, directory, str(warmup), str(loops),
         name],
        check=False, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"ncnn_graphs: the runner failed on {directory}/{name}.param "
                         f"(exit {out.returncode}): {out.stderr.strip()[-400:]}")
    for line in out.stdout.splitlines():
        fields = line.split()
        if fields and fields[0] == name:
            return float(fields[1])
    raise SystemExit(f"ncnn_graphs: no time for {name} in the runner's output: {out.stdout!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ncnn-models", required=True,
                    help="ncnn's benchmark/models directory (a checkout of Tencent/ncnn)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--loops", type=int, default=8)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                    help="the CPU to pin the runs to (default: the last this process may use)")
    ap.add_argument("--graphs", default="", help="comma-separated names (default: all)")
    ap.add_argument("--no-hints", action="store_true",
                    help="also time edgeprof's graphs with their shape hints removed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--markdown", default="", help="also write the table to this file")
    args = ap.parse_args()

    try:
        import ncnn  # noqa: F401  (the runner imports it; fail early with the command)
    except ImportError:
        print(f"ncnn_graphs: cannot run here: the Python package ncnn is not installed; "
              f"install it with: {sys.executable} -m pip install ncnn", file=sys.stderr)
        return 77
    if not shutil.which("taskset"):
        print("ncnn_graphs: cannot run here: taskset (util-linux) is not installed",
              file=sys.stderr)
        return 77

    wanted = [g for g in args.graphs.split(",") if g]
    ours, theirs, bare = {}, {}, {}
    missing = []
    for g in edgeprof.nn.reference_graphs():
        if wanted and g.name not in wanted:
            continue
        path = os.path.join(args.ncnn_models, f"{g.name}.param")
        if not os.path.exists(path):
            missing.append(g.name)
            continue
        with open(path) as f:
            param = f.read()
        ours[g.name] = (g.param, g.width, g.height, g.input, g.output)
        theirs[g.name] = (param, g.width, g.height, "data", output_blob(param))
        bare[g.name] = (HINTS.sub("", g.param), g.width, g.height, g.input, g.output)
    if missing:
        print(f"ncnn_graphs: not in {args.ncnn_models}: {', '.join(missing)} (skipped)",
              file=sys.stderr)
    if not ours:
        print(f"ncnn_graphs: no graph to compare: is {args.ncnn_models} ncnn's "
              "benchmark/models directory?", file=sys.stderr)
        return 2

    variants = {"edgeprof": ours, "ncnn": theirs}
    if args.no_hints:
        variants["edgeprof, no hints"] = bare
    times: dict[tuple[str, str], list[float]] = {}
    started = time.time()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="edgeprof-ncnn-graphs-") as tmp:
        runner = os.path.join(tmp, "runner.py")
        with open(runner, "w") as f:
            f.write(_core.nn_runner_source())
        dirs = {}
        for i, (variant, graphs) in enumerate(variants.items()):
            dirs[variant] = os.path.join(tmp, f"v{i}")
            write_dir(dirs[variant], graphs)
        for r in range(args.rounds):
            for name in ours:
                order = list(variants)
                rng.shuffle(order)
                for variant in order:
                    ms = time_graph(runner, dirs[variant], name, args.cpu, args.warmup,
                                    args.loops)
                    times.setdefault((name, variant), []).append(ms)
            print(f"round {r + 1}/{args.rounds} done ({time.time() - started:.0f} s)",
                  file=sys.stderr, flush=True)

    extra = [v for v in variants if v not in ("edgeprof", "ncnn")]
    lines = [
        f"Host: {cpu_model()}, CPU {args.cpu}; ncnn {ncnn_version()}; edgeprof "
        f"{edgeprof.__version__}; {args.rounds} rounds, each graph's versions in random order, "
        f"warm-up {args.warmup} and the median of {args.loops} timed inferences per run; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
        f"{(time.time() - started) / 60:.1f} min. All figures measured.",
        "",
        "| graph | edgeprof ms | ncnn's graph ms | edgeprof / ncnn (p10-p90 over rounds) | within 10% |"
        + "".join(f" {v} / ncnn |" for v in extra),
        "|---|---|---|---|---|" + "---|" * len(extra),
    ]
    within = 0
    for name in ours:
        a, b = times[(name, "edgeprof")], times[(name, "ncnn")]
        ratios = sorted(x / y for x, y in zip(a, b))
        ratio = statistics.median(ratios)
        lo, hi = quantile(ratios, 0.1), quantile(ratios, 0.9)
        ok = abs(ratio - 1) <= 0.10
        within += ok
        row = (f"| {name} | {statistics.median(a):.2f} | {statistics.median(b):.2f} | "
               f"{ratio:.3f} ({lo:.2f}-{hi:.2f}) | {'yes' if ok else '**no**'} |")
        for v in extra:
            row += f" {statistics.median(x / y for x, y in zip(times[(name, v)], b)):.3f} |"
        lines.append(row)
    lines += ["", f"Within 10% of ncnn's graph: {within} of {len(ours)} graphs."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


def quantile(sorted_values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation."""
    pos = q * (len(sorted_values) - 1)
    i = int(pos)
    j = min(i + 1, len(sorted_values) - 1)
    return sorted_values[i] + (sorted_values[j] - sorted_values[i]) * (pos - i)


def ncnn_version() -> str:
    import ncnn
    return getattr(ncnn, "__version__", "?")


if __name__ == "__main__":
    sys.exit(main())
