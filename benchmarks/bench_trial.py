#!/usr/bin/env python3
"""What edgeprof adds to one trial, seen from Python (issue 5). Results: docs/benchmarks.md.

A hyper-parameter search written in Python scores each trial with ``edgeprof.run`` (a command)
or ``edgeprof.profile`` (a function), each in a fresh slice. This program measures, per trial,
the wall time and this process's CPU that costs against doing the same without edgeprof:

- a command: ``subprocess.run(cmd)`` (the baseline) against ``edgeprof.run(cmd, device=...)``
  at the default interval and without sampling; commands: ``/bin/true`` and a ``/bin/sh`` loop
  of a fixed number of iterations calibrated at start to about 50 ms of CPU;
- a function: a fresh ``multiprocessing`` process of the spawn context that calls it and sends
  the value back through a pipe (the baseline) against ``edgeprof.profile(fn, arg,
  device=...)``, which runs it in a new interpreter in the slice; functions from the standard
  library, so neither side imports anything of this program's: ``abs(-1)`` and ``sum(range(N))``
  with N calibrated to about 50 ms of CPU in this process.

The variants take turns, the order rotating every repetition, after unrecorded warm-up rounds.
Tables give medians (and p90) of the repetitions and differences and ratios of the medians
against the baseline of the same run, as Markdown on stdout (progress goes to stderr).

Needs root (exit 77 otherwise, or when edgeprof cannot be imported). Every slice is made and
removed by edgeprof, also after Ctrl-C (exit 130). This module imports only the standard library
at the top: multiprocessing's spawn context re-imports it in every baseline child.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable, NamedTuple, Optional

from script_common import edgeprof_as_root

SH = "/bin/sh"
SPIN_S = 0.05


class Sample(NamedTuple):
    wall_ms: float
    self_cpu_ms: float  # this process, every thread (RUSAGE_SELF)
    workload_cpu_ms: float  # reaped children (RUSAGE_CHILDREN)
    report: Any  # the edgeprof Result, or None


class Variant(NamedTuple):
    name: str
    trial: Callable[[], Any]  # returns the edgeprof Result or None


def _cpu_ms(who: int) -> float:
    u = resource.getrusage(who)
    return (u.ru_utime + u.ru_stime) * 1e3


def measure(trial: Callable[[], Any]) -> Sample:
    s0, c0 = _cpu_ms(resource.RUSAGE_SELF), _cpu_ms(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    report = trial()
    t1 = time.perf_counter()
    s1, c1 = _cpu_ms(resource.RUSAGE_SELF), _cpu_ms(resource.RUSAGE_CHILDREN)
    return Sample((t1 - t0) * 1e3, s1 - s0, c1 - c0, report)


def interleave(variants: list[Variant], reps: int) -> list[list[Sample]]:
    out: list[list[Sample]] = [[] for _ in variants]
    for rep in range(reps):
        for k in range(len(variants)):
            i = (rep + k) % len(variants)
            out[i].append(measure(variants[i].trial))
    return out


# ------------------------------------------------------------------------------ the baselines

def run_command(argv: list[str]) -> None:
    subprocess.run(argv, check=True)


def _call_and_send(conn: Any, fn: Callable, args: tuple) -> None:
    conn.send(fn(*args))
    conn.close()


def _import_edgeprof_call_and_send(conn: Any, fn: Callable, args: tuple) -> None:
    import edgeprof  # noqa: F401 - what edgeprof.profile's worker loads before the call
    _call_and_send(conn, fn, args)


def call_in_spawned_process(fn: Callable, args: tuple, import_edgeprof: bool = False) -> Any:
    """fn(*args) in a fresh interpreter started by multiprocessing's spawn context."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    target = _import_edgeprof_call_and_send if import_edgeprof else _call_and_send
    process = ctx.Process(target=target, args=(send, fn, args))
    process.start()
    send.close()
    try:
        value = receive.recv()
    finally:
        receive.close()
        process.join()
    if process.exitcode != 0:
        raise RuntimeError(f"the spawned process exited with {process.exitcode}")
    return value


# ------------------------------------------------------------------------------ calibration

def _median_cpu(run: Callable[[], None], clock: Callable[[], float], times: int = 5) -> float:
    """The median CPU seconds of `times` runs after a warm-up one, on `clock`: CPU time, so that
    other processes on a shared host do not stretch it."""
    run()
    took = []
    for _ in range(times):
        t0 = clock()
        run()
        took.append(clock() - t0)
    return statistics.median(took)


def _children_cpu_s() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def sh_loop(n: int) -> list[str]:
    return [SH, "-c", f"i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"]


def calibrate_sh(seconds: float) -> int:
    probe = 20000
    took = _median_cpu(lambda: run_command(sh_loop(probe)), _children_cpu_s)
    return max(1, int(probe * seconds / took))


def calibrate_sum(seconds: float) -> int:
    probe = 1_000_000
    took = _median_cpu(lambda: sum(range(probe)), time.thread_time)
    return max(1, int(probe * seconds / took))


# ------------------------------------------------------------------------------ tables

def median(v: list[float]) -> float:
    return statistics.median(v) if v else float("nan")


def p90(v: list[float]) -> float:
    if len(v) < 2:
        return v[0] if v else float("nan")
    # Linear interpolation between neighbours, as the C++ benchmarks' quantile().
    return statistics.quantiles(v, n=10, method="inclusive")[8]


def ms(x: Optional[float]) -> str:
    if x is None or x != x:
        return ""
    a = abs(x)
    return f"{x:.0f}" if a >= 100 else f"{x:.1f}" if a >= 10 else f"{x:.2f}" if a >= 1 else f"{x:.3f}"


def diff(x: float) -> str:
    return ("+" if x >= 0 else "") + ms(x)


def markdown(title: str, header: list[str], rows: list[list[str]], notes: list[str]) -> str:
    def cells(row: list[str]) -> str:
        return "|" + "".join(f" {c.replace('|', chr(92) + '|')} |" for c in row) + "\n"
    out = f"#### {title}\n\n" + cells(header)
    out += "|" + "".join(" --- |" if i == 0 else " ---: |" for i in range(len(header))) + "\n"
    out += "".join(cells(r) for r in rows)
    if notes:
        out += "\n" + "".join(f"- {n}\n" for n in notes)
    return out + "\n"


def function_phase(report: Any) -> Optional[Any]:
    for p in report.phases:
        if p.name == "function":
            return p
    return None


def trial_table(title: str, variants: list[Variant], samples: list[list[Sample]],
                profile: bool) -> str:
    header = ["variant", "n", "wall median ms", "wall p90 ms", "wall - baseline ms",
              "wall / baseline", "workload's own wall ms"]
    if profile:
        header += ["of which before the call ms", "the call ms"]
    header += ["throttled ms", "own CPU median ms", "own CPU p90 ms", "own CPU - baseline ms",
               "workload CPU ms"]
    base_wall = median([s.wall_ms for s in samples[0]])
    base_cpu = median([s.self_cpu_ms for s in samples[0]])
    rows = []
    for i, (v, ss) in enumerate(zip(variants, samples)):
        wall = [s.wall_ms for s in ss]
        cpu = [s.self_cpu_ms for s in ss]
        reports = [s.report for s in ss if s.report is not None]

        def of_reports(field: Callable[[Any], Optional[float]]) -> str:
            values = [x for x in (field(r) for r in reports) if x is not None]
            return ms(median(values)) if values else ""

        row = [v.name, str(len(ss)), ms(median(wall)), ms(p90(wall)),
               "" if i == 0 else diff(median(wall) - base_wall),
               "" if i == 0 else f"{median(wall) / base_wall:.2f}x",
               of_reports(lambda r: r.wall_time_s * 1e3)]
        if profile:
            row.append(of_reports(
                lambda r: function_phase(r).start_s * 1e3 if function_phase(r) else None))
            row.append(of_reports(
                lambda r: function_phase(r).wall_time_s * 1e3 if function_phase(r) else None))
        row += [of_reports(lambda r: r.throttled_s * 1e3), ms(median(cpu)), ms(p90(cpu)),
                "" if i == 0 else diff(median(cpu) - base_cpu),
                ms(median([s.workload_cpu_ms for s in ss]))]
        rows.append(row)
    notes = ["Medians; differences and ratios are of the medians. Workload's own wall: "
             "Result.wall_time_s (exec to exit); throttled: Result.throttled_s (the device's CPU "
             "quota at work). Own CPU: getrusage(RUSAGE_SELF) of this process (every thread, "
             "the sampler included); workload CPU: RUSAGE_CHILDREN (reaped children)."]
    if profile:
        notes.append("Before the call: the worker's start until its phase \"function\" begins "
                     "(interpreter start-up, unpickling the call, `import edgeprof`); the call: "
                     "that phase (what a trial is scored on).")
    return markdown(title, header, rows, notes)


# ------------------------------------------------------------------------------ main

def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return f.read().strip()


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(
        description="What edgeprof adds to one trial, from Python: edgeprof.run against "
                    "subprocess.run, edgeprof.profile against a multiprocessing spawn process "
                    "(docs/benchmarks.md). Needs root. Markdown on stdout.")
    parser.add_argument("--reps-command", type=int, default=60,
                        help="repetitions per command variant (default 60)")
    parser.add_argument("--reps-function", type=int, default=30,
                        help="repetitions per function variant (default 30)")
    parser.add_argument("--device", default="raspberry-pi-4",
                        help="the built-in device (default raspberry-pi-4)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 3 and 2 repetitions, one warm-up round")
    args = parser.parse_args()
    if args.quick:
        args.reps_command, args.reps_function = 3, 2
    if args.reps_command < 1 or args.reps_function < 1:
        parser.error("repetitions must be at least 1")

    edgeprof = edgeprof_as_root("bench_trial.py")
    if edgeprof is None:
        return 77

    device = edgeprof.devices.builtin_device(args.device)
    plan = edgeprof.plan_emulation(device)
    # A device as large as this host: no emulated slowdown, so what is left is edgeprof's own.
    host_cpus = len(os.sched_getaffinity(0))
    host_sized = edgeprof.Device(name="host-sized", cores=host_cpus, core_speed=1.0,
                                 memory="1GiB")
    sh_n = calibrate_sh(SPIN_S)
    sum_n = calibrate_sum(SPIN_S)
    sum_ms = _median_cpu(lambda: sum(range(sum_n)), time.perf_counter) * 1e3
    command = " ".join(["python3"] + [a for a in sys.argv])

    preamble = [
        f"run: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"machine: {os.cpu_count()} CPUs ({cpu_model()}), kernel {platform.release()}, cgroups "
        f"{edgeprof.emulation.cgroup_mode()}",
        f"command: `{command}`",
        f"Python {platform.python_version()}, edgeprof {edgeprof.__version__} "
        f"({os.path.dirname(edgeprof.__file__)})",
        f"device: {device.name} ({device.cores} cores x {device.core_speed} speed, "
        f"{edgeprof.devices.format_size(device.memory_bytes)}): core emulation "
        f"{plan.core_emulation}, quota {plan.cpu_quota_us}/{plan.cpu_period_us} us on "
        f"{len(plan.cpus)} CPU(s); {host_sized.name}: {host_cpus} cores x "
        f"1.0 speed, 1 GiB (no emulated slowdown)",
        f"workloads: `/bin/true` and `{' '.join(sh_loop(sh_n)[:2])} '...'` (a loop of {sh_n} "
        f"iterations, about {SPIN_S * 1e3:.0f} ms of CPU here), {args.reps_command} "
        f"repetitions; `abs(-1)` and `sum(range({sum_n}))` (about {SPIN_S * 1e3:.0f} ms of CPU; "
        f"{sum_ms:.1f} ms wall in this process), {args.reps_function} repetitions",
        f"load average at the start: {loadavg()}",
    ]

    def command_variants(argv: list[str]) -> list[Variant]:
        return [
            Variant("subprocess.run(cmd) (baseline)", lambda: run_command(argv)),
            Variant("edgeprof.run(cmd, device=...) (sampling every 10 ms)",
                    lambda: edgeprof.run(argv, device=device)),
            Variant("edgeprof.run(cmd, device=..., interval=None) (no sampling)",
                    lambda: edgeprof.run(argv, device=device, interval=None)),
            Variant(f"edgeprof.run(cmd, device={host_sized.name}) (sampling every 10 ms)",
                    lambda: edgeprof.run(argv, device=host_sized)),
        ]

    def function_variants(fn: Callable, arg: Any) -> list[Variant]:
        def spawned(import_edgeprof: bool) -> None:
            call_in_spawned_process(fn, (arg,), import_edgeprof)

        def profiled(on: Any, interval: Optional[float]) -> Any:
            return edgeprof.profile(fn, arg, device=on, interval=interval).report

        return [
            Variant("multiprocessing spawn process calls fn, sends the value back (baseline)",
                    lambda: spawned(False)),
            Variant("the same, importing edgeprof first (as the worker does; no slice)",
                    lambda: spawned(True)),
            Variant("edgeprof.profile(fn, arg, device=...) (sampling every 10 ms)",
                    lambda: profiled(device, edgeprof.emulation.DEFAULT_INTERVAL_S)),
            Variant("edgeprof.profile(fn, arg, device=..., interval=None) (no sampling)",
                    lambda: profiled(device, None)),
            Variant(f"edgeprof.profile(fn, arg, device={host_sized.name}) (sampling every 10 ms)",
                    lambda: profiled(host_sized, edgeprof.emulation.DEFAULT_INTERVAL_S)),
        ]

    groups = [
        ("`/bin/true`", command_variants(["/bin/true"]), args.reps_command, False),
        (f"`/bin/sh` loop, about {SPIN_S * 1e3:.0f} ms of CPU", command_variants(sh_loop(sh_n)),
         args.reps_command, False),
        ("`abs(-1)`", function_variants(abs, -1), args.reps_function, True),
        (f"`sum(range({sum_n}))`, about {SPIN_S * 1e3:.0f} ms of CPU",
         function_variants(sum, range(sum_n)),
         args.reps_function, True),
    ]
    tables = []
    try:
        for k, (label, variants, reps, profile) in enumerate(groups, 1):
            print(f"[{k}/{len(groups)}] {label}: {reps} repetitions of {len(variants)} variants "
                  f"(interleaved)...", file=sys.stderr, flush=True)
            interleave(variants, 1 if args.quick else 2)  # warm-up, not recorded
            samples = interleave(variants, reps)
            tables.append(trial_table(f"Per trial: {label} on {device.name}", variants, samples,
                                      profile))
    except KeyboardInterrupt:
        print("bench_trial.py: interrupted (edgeprof removed its slices)", file=sys.stderr)
        return 130
    preamble.append(f"load average at the end: {loadavg()}")

    out = "<!-- written by benchmarks/bench_trial.py -->\n\n"
    out += "".join(f"- {p}\n" for p in preamble) + "\n" + "".join(tables)
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
