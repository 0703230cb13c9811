#!/usr/bin/env python3
"""How evenly do busy threads share a multi-core device's CPU quota? Results: docs/benchmarks.md,
"Thread shares".

cpu.max gives the slice one pool of quota per period; each CPU draws from it a bandwidth slice
at a time (/proc/sys/kernel/sched_cfs_bandwidth_slice_us, 5 ms by default). When a CPU's fair
share of the quota is under about two slices, one CPU can take more than its share, and the
threads on it run faster than a device core while the others run slower.

This program runs two busy processes (the same for threads: the kernel draws quota per CPU, not
per task) on a 2-core device at `--speed` for each `--periods` value, and reads each process's
run time from /proc/PID/schedstat every `--window` seconds. That is the kernel's own account of
the CPU it granted, which the host's speed does not change. It reports, per run, the median over
the windows of the slower and the faster process's share of a host core (the target: `--speed`
each) and their shares over the whole run.

Needs root (exit 77 otherwise, or when edgeprof cannot be imported). Markdown on stdout,
progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone

from script_common import edgeprof_as_root

SPIN = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass\n"


def run_time_s(pid: int) -> float:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def one_run(edgeprof, speed: float, period_us: int, seconds: float, window: float) -> dict:
    device = edgeprof.Device(name="two-core", cores=2, core_speed=speed, memory="256MiB")
    script = ("import subprocess, sys\n"
              f"ps = [subprocess.Popen([sys.executable, '-c', {SPIN!r}, '{seconds}']) "
              "for _ in range(2)]\n"
              "print(' '.join(str(p.pid) for p in ps), flush=True)\n"
              "for p in ps: p.wait()\n")
    read_end, write_end = os.pipe()
    with edgeprof.Slice(device, cpu_period_us=period_us) as s:
        run = s.spawn([sys.executable, "-c", script], stdout=write_end)
        os.close(write_end)
        with os.fdopen(read_end) as r:
            pids = [int(p) for p in r.readline().split()]
            time.sleep(0.3)  # both busy
            windows = []
            t0 = time.monotonic()
            before = [run_time_s(p) for p in pids]
            first, start = list(before), t0
            while time.monotonic() - start < seconds - 0.8:
                time.sleep(window)
                t1 = time.monotonic()
                now = [run_time_s(p) for p in pids]
                windows.append(sorted((n - b) / (t1 - t0) for n, b in zip(now, before)))
                before, t0 = now, t1
            whole = sorted((n - f) / (t0 - start) for n, f in zip(before, first))
        run.wait()
    return {"slow": statistics.median(w[0] for w in windows),
            "fast": statistics.median(w[1] for w in windows),
            "slow_min": min(w[0] for w in windows), "fast_max": max(w[1] for w in windows),
            "whole": whole, "windows": len(windows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speed", type=float, default=0.5, help="core speed of the 2-core device")
    ap.add_argument("--periods", default="5,10,20,40", help="CFS periods, ms")
    ap.add_argument("--reps", type=int, default=3, help="runs per period, interleaved")
    ap.add_argument("--seconds", type=float, default=3.0, help="length of a run")
    ap.add_argument("--window", type=float, default=0.1, help="sampling window, s")
    args = ap.parse_args()
    edgeprof = edgeprof_as_root("thread_shares.py")
    if edgeprof is None:
        return 77
    periods = [int(float(p) * 1000) for p in args.periods.split(",")]
    try:
        slice_us = int(open("/proc/sys/kernel/sched_cfs_bandwidth_slice_us").read())
    except OSError:
        slice_us = 5000
    results: dict[int, list[dict]] = {p: [] for p in periods}
    for rep in range(args.reps):
        order = periods[rep % len(periods):] + periods[:rep % len(periods)]
        for p in order:
            print(f"thread_shares: run {rep + 1}/{args.reps}, period {p / 1000:g} ms",
                  file=sys.stderr, flush=True)
            results[p].append(one_run(edgeprof, args.speed, p, args.seconds, args.window))

    print(f"- run: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} "
          f"CPUs, kernel {platform.release()}, cgroups {edgeprof.emulation.cgroup_mode()}")
    print(f"- command: `python3 benchmarks/thread_shares.py {' '.join(sys.argv[1:])}`")
    print(f"- 2 busy processes on 2 cores x {args.speed:g}; target {args.speed:g} of a host core "
          f"each; bandwidth slice {slice_us / 1000:g} ms; {args.seconds:g} s runs, "
          f"{args.window * 1000:g} ms windows")
    print()
    print("| period | quota per CPU | slower: median window share | faster: median window share "
          "| slower / faster, whole run | worst window (slower min, faster max) |")
    print("| ---: | ---: | --- | --- | --- | --- |")
    for p in periods:
        rs = results[p]
        per_cpu = p * args.speed / 1000
        slow = ", ".join(f"{r['slow']:.3f}" for r in rs)
        fast = ", ".join(f"{r['fast']:.3f}" for r in rs)
        whole = ", ".join(f"{r['whole'][0]:.2f} / {r['whole'][1]:.2f}" for r in rs)
        worst = f"{min(r['slow_min'] for r in rs):.2f}, {max(r['fast_max'] for r in rs):.2f}"
        print(f"| {p / 1000:g} ms | {per_cpu:g} ms = {per_cpu * 1000 / slice_us:g} slices "
              f"| {slow} | {fast} | {whole} | {worst} |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
