#!/usr/bin/env python3
"""In what steps does the kernel enforce a CPU quota? Results: docs/benchmarks.md, "Quota
granularity".

Under cpu.max a busy workload runs until the slice's quota for the period is spent, then stalls
until the next period. If the kernel stopped it exactly when the quota ran out, every run would
last one quota; it notices only at its next accounting point (a scheduler tick, or another
scheduling event), so runs overshoot and the overshoot is paid back by stalling longer. How long
one iteration of a workload takes under emulation can then be off by about one such step,
however well the period is chosen: this bounds per-iteration fidelity, not the total.

This program spins one thread in a 1-core slice at each (speed, period) and records every
interruption of more than `--gap-us`: the lengths of the uninterrupted runs and of the stalls,
from the thread's own monotonic clock. Runs and stalls are the kernel's doing apart from how
fast the host is, so a host whose speed drifts measures the same. The spinner is a Python loop
reading time.monotonic_ns (well under a microsecond per turn, far below the gap threshold).

Needs root (exit 77 otherwise, or when edgeprof cannot be imported). Markdown on stdout,
progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from datetime import datetime, timezone

from script_common import edgeprof_as_root

SPINNER = r"""
import json, sys, time
seconds, gap_ns = float(sys.argv[1]), int(sys.argv[2])
runs, stalls = [], []
now = time.monotonic_ns
start = prev = now()
end = start + int(seconds * 1e9)
while prev < end:
    t = now()
    if t - prev > gap_ns:
        runs.append(prev - start)
        stalls.append(t - prev)
        start = t
    prev = t
print(json.dumps({"runs": runs[1:], "stalls": stalls[1:]}))
"""


def quantiles(values: list[float]) -> list[float]:
    if len(values) < 2:
        return [values[0]] * 3 if values else [float("nan")] * 3
    q = statistics.quantiles(values, n=20, method="inclusive")
    return [q[1], q[9], q[17]]  # p10, p50, p90


def one_run(edgeprof, speed: float, period_us: int, seconds: float, gap_us: int) -> dict:
    device = edgeprof.Device(name="one-core", cores=1, core_speed=speed, memory="256MiB")
    with tempfile.TemporaryFile(mode="w+") as out:
        result = edgeprof.run([sys.executable, "-c", SPINNER, str(seconds), str(gap_us * 1000)],
                              device=device, cpu_period_us=period_us, stdout=out, interval=None)
        if result.exit_code != 0:
            raise RuntimeError(f"the spinner failed (exit {result.exit_code}, signal "
                               f"{result.signal})")
        out.seek(0)
        data = json.load(out)
    return {"runs": [r / 1e6 for r in data["runs"]], "stalls": [s / 1e6 for s in data["stalls"]]}


def fmt(values: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speeds", default="0.2,0.5", help="core speeds of the 1-core device")
    ap.add_argument("--periods", default="5,10,20,50", help="CFS periods, ms")
    ap.add_argument("--reps", type=int, default=3, help="runs per setting, interleaved")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of a run")
    ap.add_argument("--gap-us", type=int, default=200,
                    help="an interruption longer than this ends a run (default 200 us)")
    args = ap.parse_args()
    edgeprof = edgeprof_as_root("quota_granularity.py")
    if edgeprof is None:
        return 77
    settings = [(float(s), int(float(p) * 1000)) for s in args.speeds.split(",")
                for p in args.periods.split(",")]
    results: dict[tuple[float, int], list[dict]] = {k: [] for k in settings}
    for rep in range(args.reps):
        order = settings[rep % len(settings):] + settings[:rep % len(settings)]
        for speed, period in order:
            print(f"quota_granularity: run {rep + 1}/{args.reps}, speed {speed:g}, period "
                  f"{period / 1000:g} ms", file=sys.stderr, flush=True)
            results[(speed, period)].append(
                one_run(edgeprof, speed, period, args.seconds, args.gap_us))

    print(f"- run: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} "
          f"CPUs, kernel {platform.release()}, cgroups {edgeprof.emulation.cgroup_mode()}")
    print(f"- command: `python3 benchmarks/quota_granularity.py {' '.join(sys.argv[1:])}`")
    print(f"- one busy thread in a 1-core slice; {args.reps} runs of {args.seconds:g} s per "
          f"setting, pooled; an interruption of more than {args.gap_us} us ends a run")
    print()
    print("| speed | period | quota | runs | run ms, p10 / p50 / p90 | stall ms, p10 / p50 / p90 "
          "| runs within ±0.5 ms of the quota | run time / (run + stall) |")
    print("| ---: | ---: | ---: | ---: | --- | --- | ---: | ---: |")
    for speed, period in settings:
        rs = results[(speed, period)]
        runs = [r for x in rs for r in x["runs"]]
        stalls = [s for x in rs for s in x["stalls"]]
        quota = speed * period / 1000
        near = sum(abs(r - quota) <= 0.5 for r in runs) / len(runs) if runs else float("nan")
        duty = sum(runs) / (sum(runs) + sum(stalls)) if runs else float("nan")
        print(f"| {speed:g} | {period / 1000:g} ms | {quota:g} ms | {len(runs)} "
              f"| {fmt(quantiles(runs))} | {fmt(quantiles(stalls))} | {100 * near:.0f}% "
              f"| {duty:.3f} |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
