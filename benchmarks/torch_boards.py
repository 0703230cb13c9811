#!/usr/bin/env python3
"""How close the PyTorch (or ONNX Runtime) speed lands to the boards that published times with
it: the Raspberry Pi 4, the Raspberry Pi 5 and the Jetson Orin Nano CPU (the catalog's
`runtimes.pytorch` and `runtimes.onnxruntime`, fp32, all cores, from one public benchmark
repository; docs/devices.md), against this host's rating with the runtime (`edgeprof
calibrate-host --nn --runtime R`). With `--runtime pytorch-int8`, the PyTorch tutorial's
Raspberry Pi 4 table (`runtimes.pytorch-int8`, int8 qnnpack, all cores), the one board with
int8 times.

    sudo python3 benchmarks/torch_boards.py --torch-python /path/to/venv/bin/python \
        [--runtime pytorch|onnxruntime|pytorch-int8] [--emulate]

For each board and model, held out (the model's own published time left out of the speed):

- **speed only** (estimated): this host's one-thread time of the model / the speed derived
  from the board's other models, divided by the board's speed-up from one thread to all its
  cores (its ncnn tables): what the speed predicts, without running anything under emulation;
- **emulated** (`--emulate`, measured and projected): edgeprof's own runner under the
  device at its PyTorch speed with `core_emulation="projected"` (one device core; the library
  divides the times by the board's speed-up), one run per board with every model (--repeats N:
  N runs per board, interleaved over the boards, each model's time the median of its N, and
  each run's errors alone beside them), each model's time then rescaled from the full speed
  to the held-out one (time in proportion to 1 / speed).
  Each model's emulated time is the mean of its inferences over at least --min-time seconds
  (1 s): at the Pi 4's speed the quota's period is 23 ms (the kernel's 1 ms minimum quota), and
  the median of three inferences shorter than that is the host's time.
- **memory term** (estimated; where the rating counted each model's activations): the model's
  time from a fit of the board's other models' published times as a multiple of this host's
  one-thread time plus a cost per MB of activations (`edgeprof.nn.nn_memory_fit`, the fit
  `Device.for_runtime(runtime, memory_mb_per_ms=...)` makes), with the interval of that fit's
  own held-out errors (`edgeprof.nn.time_interval(fit)`);
- **emulated, rescaled to the memory term** (`--emulate`, measured and projected at the board's
  one speed): the emulated run's time of each model rescaled, as above, from the board's one
  speed to the speed the memory term gives the model (one core's: this host's one-thread time /
  the term's one-core time); not a run at each model's own speed, which a time in proportion to
  1 / speed stands in for;
- **emulated at each model's own speed** (`--own-speed`, measured and projected): each model
  run alone under the board without its published time at the runtime's speed with a memory
  term for the model's activation MB per host ms (`Device.for_runtime(runtime,
  memory_mb_per_ms=...)`, what a user gives for a model the board's table lacks), one slice run
  per model and board, its interval the memory term's. With `--counted` the run finds
  the model's MB per ms itself: the board without the model's time at the runtime's speed and no
  memory term given, with `count_activations=True`, so that the slice's activation
  counter counts the model's activations in its first inference and its CPU time per inference
  in the next five (under the slice; with ONNX Runtime the graph's nodes in a copy of the
  session at one thread before the first inference, then five inferences of another copy),
  and the slice sets the speed by them (docs/devices.md,
  "A workload's own speed"); the runner's warm-up is then at least eight inferences, so that its
  timed ones run at the speed set. Each model's counted MB per ms is printed beside the
  rating's (its activations over its one-thread host time). `--models M,...` runs only those
  models under the slices (at one speed and at their own; the estimated columns keep all): a
  board at the Pi 4's speed takes about 75 s a model at its own speed, most of it the import.

The emulated columns' coverage is of the interval an emulated run reports
(`edgeprof.nn.device_interval(speed, result.plan)`, `Result.device_interval`), held out: the
speed without the model (for the memory term, the board without its published time, as a user
whose model the table lacks gets it) with the run's emulation spread (e, from this host's own
share under a quota at the run's quota) and, where the run projects to other threads than the
board's table was timed at, the projection's (p). The estimated columns' is the speed's or the
fit's alone.

With --drift-check (and --emulate) a few of the rating's models, spread over its times, are
rated again the rating's way (one pinned thread outside any slice, not cached) before and after
each board's emulated run: per model the host's time over its rating's, beside its emulated
time over the speed's prediction (the emulation's own share and the host's drift together), so
that a host that slowed since its rating is not taken for a slice that buys too little.

With --emulate the slices' quota scale is this host's own share under a quota with the runtime
(`edgeprof.speed.measure_quota_share(runtime=...)`: three of its models, unthrottled and in
one-core slices at five quotas: about 13 min for PyTorch's, 3 for ONNX Runtime's, 15 for
int8's on the 2-vCPU EPYC of 2026-12-04), measured first unless cached (--remeasure
measures it again with the rating); the report names it.

It reports per board the median |error| against the published times and Kendall's tau between
the two rankings of the models, and per model the figures. The rating is measured first unless
this host has one cached (`--remeasure` measures it again). Needs root for the slices with
`--emulate`; the interpreter given needs torch, torchvision and timm, and onnx and onnxruntime
for ONNX Runtime (edgeprof does not).

With --runtime onnxruntime --emulate the models are exported to ONNX once, outside any slice
(the runner's --export), and the emulated runner reads them without importing PyTorch: exported
inside the slice, at the Pi 4's 0.08 of a CPU, the export alone took more than ten minutes.
With --runtime pytorch-int8 --emulate the models are quantized once outside, the same way, and
saved as TorchScript for the emulated runner.

With --workload-scaling it also measures this host's speed-up of each model from one thread to
two with the runtime (`edgeprof.nn.measure_host_scaling(runtime=...)`, interleaved rounds) and
reports both columns again with each model's own scaling (`edgeprof.nn.workload_scaling()`, the
factor `PlanOptions::workload_scaling` takes, to each power of --scaling-powers): a board's
published all-core time of a model is then its one-core time / (the board's speed-up x the
model's factor), in the speed's derivation from the other models as in the prediction. The
published tables are all-core times, so this is where a model's own scaling would show.

Not checked by it: the one-core factor. Both columns divide by the same ncnn speed-up that made
the published all-core times one core's, so it cancels; the boards publish these runtimes only
at their default thread count.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_common import edgeprof_as_root  # noqa: E402

BOARDS = ("raspberry-pi-4b-4gb", "raspberry-pi-5-8gb", "jetson-orin-nano-8gb")
# The runtimes torch_runner.py rates (what it is told for each: edgeprof's NnRuntime.runner_args).
RUNTIMES = ("onnxruntime", "pytorch", "pytorch-int8")
# The runtimes whose models are prepared outside the slice (--export).
EXPORTED = {"onnxruntime": "exported to ONNX", "pytorch-int8": "quantized to int8"}
RUNNER = Path(__file__).resolve().parents[1] / "src" / "nn" / "torch_runner.py"
RUN_TIMEOUT_S = 900.0


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def held_out_speeds(edgeprof: Any, device: Any, speed: Any, host_ms: dict[str, float],
                    runtime: str) -> dict:
    """Per model, the runtime's speed (an NnSpeed) from the board's other models (the library's
    nn_speed on the same one-core times runtime_speed made)."""
    times = device.runtime_ms[runtime].ms
    one_core = {m: ms * speed.one_core_factor for m, ms in times.items()}
    return {m: edgeprof.nn.nn_speed({k: v for k, v in one_core.items() if k != m}, host_ms,
                                    speed.precision)
               for m in times if m in host_ms}


def scaled_held_out(edgeprof: Any, device: Any, speed: Any, host_ms: dict[str, float],
                    runtime: str, scaling: Any, power: float) -> dict:
    """Per model m: (the speed from the board's other models' one-core times, each its published
    all-core time x the board's speed-up x its own factor, m's factor), every factor
    workload_scaling() of the model's host speed-up over the median of the models but m, to
    `power`."""
    times = device.runtime_ms[runtime].ms
    out = {}
    for m in times:
        if m not in host_ms or m not in scaling.one_ms:
            continue
        w = {k: edgeprof.nn.workload_scaling(scaling, scaling.speedup(k), without_graph=m) ** power
             for k in times if k in scaling.one_ms}
        one_core = {k: ms * speed.one_core_factor * w[k] for k, ms in times.items()
                    if k != m and k in w}
        out[m] = (edgeprof.nn.nn_speed(one_core, host_ms, speed.precision).core_speed, w[m])
    return out


def held_out_memory_fits(edgeprof: Any, published: dict[str, float], host_ms: dict[str, float],
                         activation_mb: dict[str, float]) -> dict:
    """Per model, the memory fit (edgeprof.nn.nn_memory_fit) of the board's other models: its
    nn_memory_predict of the model is the fit's held_out_ms, and its time_interval the model's
    held-out 90% interval."""
    fits = {}
    for m in published:
        if m in host_ms and m in activation_mb:
            try:
                fits[m] = edgeprof.nn.nn_memory_fit(
                    {k: v for k, v in published.items() if k != m}, host_ms, activation_mb)
            except edgeprof.Error:  # too few models left: no held-out figure for this one
                pass
    return fits


# Per coverage column, (inside, published times) summed over the boards.
POOLED: dict[str, list[int]] = {}


def coverage(edgeprof: Any, predicted: dict[str, float], published: dict[str, float],
             held: dict, spread: Any = None, column: str = "") -> str:
    """The share of models whose published time lies within the 90% interval around the
    held-out time: edgeprof.nn.time_interval of the speed, or of the memory fit, without the
    model; with `spread` (run_spread's (e, p) of an emulated run, or per model its own run's),
    with the spreads such a run's interval takes. Counted into POOLED[column]."""
    inside = n = 0
    for m, ms in predicted.items():
        if m not in published or m not in held:
            continue
        e, p = (spread.get(m, (0.0, 0.0)) if isinstance(spread, dict)
                else spread or (0.0, 0.0))
        interval = edgeprof.nn.time_interval(held[m], 0.9, e, p)
        if interval is None:
            continue
        n += 1
        inside += ms * interval.low <= published[m] <= ms * interval.high
    total = POOLED.setdefault(column, [0, 0])
    total[0] += inside
    total[1] += n
    return f"{100 * inside / n:.0f}% of {n}" if n else "-"


def run_spread(edgeprof: Any, speed: Any, plan: Any) -> tuple[float, float]:
    """The spreads the interval of a run at `speed` under `plan` takes
    (edgeprof.nn.device_interval): the emulation's, e, and the projection's, p (0 where the
    board's speed-up that made the speed's tables one core's cancels)."""
    interval = edgeprof.nn.device_interval(speed, plan)
    return ((interval.emulation_log_sd, interval.projection_log_sd) if interval is not None
            else (plan.emulation_log_sd, 0.0))


def parse_runner(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) == 4 and w[0] != "runtime":
            out[w[0]] = float(w[1])
    return out


def export_models(args: argparse.Namespace, models: list[str], folder: str) -> None:
    """Each model exported to folder/<model>.onnx (or quantized to folder/<model>.int8.pt) by
    the runner, outside any slice."""
    started = time.time()
    done = subprocess.run([args.torch_python, str(RUNNER), folder, "0", "0",
                           *args.runner_args, "--export", *models],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"torch_boards.py: the models could not be {EXPORTED[args.runtime]} (exit "
                 f"{done.returncode}):\n{done.stderr[-3000:]}")
    print(f"torch_boards.py: {len(models)} models {EXPORTED[args.runtime]} in "
          f"{time.time() - started:.0f} s", file=sys.stderr, flush=True)


def layer_activations(args: argparse.Namespace, models: list[str]) -> dict[str, float]:
    """Each model's activation MB by its PyTorch layers (the runner's --activations, which
    ONNX Runtime's rating counted by before 2026-12-05), counted by the runner outside any
    slice (each model built, counted, exported and timed once)."""
    done = subprocess.run([args.torch_python, str(RUNNER), "-", "0", "1",
                           "--backend=onnxruntime", "--activations", *models],
                          capture_output=True, text=True, check=False)
    mb = {w[1]: float(w[2]) for w in (line.split() for line in done.stdout.splitlines())
          if len(w) == 3 and w[0] == "activations"}
    if done.returncode != 0 or set(mb) != set(models):
        sys.exit(f"torch_boards.py: --layer-activations: the runner counted "
                 f"{', '.join(sorted(mb)) or 'nothing'} (exit {done.returncode}):\n"
                 f"{done.stderr[-3000:]}")
    return mb


def drift_models(args: argparse.Namespace, rating: Any) -> list[str]:
    """--drift-models of the rating's models spread over its times (the fastest, the slowest
    and evenly between)."""
    by_time = sorted(rating.host_ms, key=rating.host_ms.get)
    n = min(args.drift_models, len(by_time))
    return sorted({by_time[round(i * (len(by_time) - 1) / max(1, n - 1))] for i in range(n)})


def host_drift(edgeprof: Any, args: argparse.Namespace, rating: Any,
               models: list[str]) -> dict[str, float] | None:
    """Per model, this host's one-thread time now over its rating's (1 where the host runs as
    when rated; measured): `models` rated again the rating's way (edgeprof.nn.measure_nn_rating
    of a subset, not cached), on the rating's CPU where this process may use it. None (said
    on stderr) where that fails."""
    started = time.time()
    cpu = rating.cpu if rating.cpu in os.sched_getaffinity(0) else -1
    try:
        now = edgeprof.nn.measure_nn_rating(runtime=args.runtime, python=args.torch_python,
                                            graphs=models, cpu=cpu)
    except edgeprof.Error as e:
        print(f"torch_boards.py: the host's drift could not be measured: {e}", file=sys.stderr)
        return None
    missing = [m for m in models if m not in now.host_ms]
    if missing:
        print(f"torch_boards.py: the host's drift has no time of {', '.join(missing)}",
              file=sys.stderr)
        return None
    print(f"torch_boards.py: the host's drift measured in {time.time() - started:.0f} s",
          file=sys.stderr, flush=True)
    return {m: now.host_ms[m] / rating.host_ms[m] for m in models}


def emulated_args(args: argparse.Namespace) -> list[str]:
    """The rating's runner arguments with --emulated-rounds passes and --min-time instead of its
    own, and no count of activations (an untimed inference more under the slice)."""
    kept = [a for a in args.runner_args
            if not a.startswith(("--rounds=", "--min-time=")) and a != "--mean"
            and a.partition("=")[0] != "--activations"]
    return kept + ([f"--rounds={args.emulated_rounds}"] if args.emulated_rounds > 1 else [])


def emulate(edgeprof: Any, args: argparse.Namespace, device: Any, models: list[str],
            folder: str, warmup: int | None = None,
            count: bool = False) -> tuple[dict[str, float], Any]:
    """The runner under the device at the runtime's speed, projected from one core: per model the
    projected ms (Result.projected_s), and the Result. folder: the models prepared outside
    (export_models: ONNX files or int8 TorchScript; "-": none). count: the run counts the
    workload's activations (count_activations, on by default for users; off here unless asked,
    so that a run of several models stays at the speed given)."""
    argv = [args.torch_python, str(RUNNER), folder,
            str(args.warmup if warmup is None else warmup), str(args.loops),
            *emulated_args(args), f"--min-time={args.min_time}", "--mean", *models]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        r = edgeprof.run(argv, device=device, stdout=out, stderr=err, timeout=RUN_TIMEOUT_S,
                         core_emulation="projected", drift_check=args.correct_drift,
                         count_activations=count)
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if not r.ok:
        sys.exit(f"torch_boards.py: the emulated runner failed on {device.name} (exit "
                 f"{r.exit_code}, signal {r.signal}, timed out {r.timed_out}):\n{errors[-3000:]}")
    return {m: r.projected_s(ms / 1000) * 1000 for m, ms in parse_runner(text).items()}, r


def without_model(edgeprof: Any, name: str, runtime: str, model: str, folder: str) -> Any:
    """The board without `model`'s published time with the runtime: its device file with that
    time removed, written to folder and loaded (a board whose table lacks the user's model)."""
    board = json.loads(edgeprof.find_device(name).to_json())
    del board["runtimes"][runtime]["ms"][model]
    path = Path(folder) / f"{name}-without-{model}.json"
    path.write_text(json.dumps(board))
    return edgeprof.devices.load_device_file(str(path))


def own_speed_runs(edgeprof: Any, args: argparse.Namespace, name: str, rating: Any,
                   models: list[str], folder: str, files: str,
                   counted: dict[str, float] | None = None) -> dict[str, tuple]:
    """Per model, the runner under the board at the model's own speed, held out: the board
    without the model's published time (without_model) at the runtime's speed with a memory
    term for the model's activation MB per host ms (Device.for_runtime(runtime,
    memory_mb_per_ms=...), what a user gives for a model the table lacks), the model alone,
    projected from one core: (projected ms, the speed in host cores, the run's plan).
    With `counted` (--counted), the speed is the one the run sets from its own count of the
    model's activations (the board at the runtime's one speed, count_activations=True),
    and `counted` gets each model's counted MB per ms."""
    out = {}
    for i, m in enumerate(models):
        mb_per_ms = rating.activation_mb[m] / rating.host_ms[m]
        board = without_model(edgeprof, name, args.runtime, m, files)
        device = board.for_runtime(args.runtime,
                                   memory_mb_per_ms=0.0 if counted is not None else mb_per_ms)
        started = time.time()
        # Counted: the counter counts the first inference and times the next five, so the
        # timed ones come after six (and two more while the slice sets the speed). Only these
        # runs count: the runs at one speed do not.
        full, result = emulate(edgeprof, args, device, [m], folder,
                               max(args.warmup, 8) if counted is not None else None,
                               count=counted is not None)
        core_speed = device.nn.core_speed
        if counted is not None:
            changes = [c for c in result.speed_changes if c.memory_mb_per_ms > 0]
            if not changes or changes[-1].error or not result.device.nn:
                sys.exit(f"torch_boards.py: {name}: {m}'s run set no speed from a count "
                         f"({changes[-1].error if changes else 'no count arrived'}); its "
                         f"warnings: {result.warnings}")
            counted[m] = changes[-1].memory_mb_per_ms
            core_speed = result.device.nn.core_speed
            how = (f"{counted[m]:.2f} MB per ms counted, the rating's {mb_per_ms:.2f}, set "
                   f"after {changes[-1].t_s:.1f} s")
        else:
            how = f"{mb_per_ms:.2f} MB per host ms"
        print(f"torch_boards.py: {name}: [{i + 1}/{len(models)}] {m} at its own "
              f"{core_speed:.4f} of a host core ({how}): {full[m]:.1f} ms projected "
              f"({time.time() - started:.0f} s)",
              file=sys.stderr, flush=True)
        out[m] = (full[m], core_speed, result.plan)
    return out


def counted_lines(rating: Any, counted: dict[str, dict[str, float]]) -> list[str]:
    """--counted: per board, each model's MB per ms as the run counted it (MB counted, CPU time
    measured under the slice divided by this host's own share at the slice's quota and host
    drift) over the rating's (its activations over its one-thread host time, unthrottled)."""
    out = []
    for name, by_model in counted.items():
        if not by_model:
            continue
        ratios = {m: v / (rating.activation_mb[m] / rating.host_ms[m]) for m, v in by_model.items()}
        out.append(f"\n{name}: counted MB per ms (CPU time under the slice / the own share at "
                   "its quota and drift) over the rating's, per model (measured): "
                   + ", ".join(f"{m} {r:.2f}" for m, r in sorted(ratios.items()))
                   + f"; median {statistics.median(ratios.values()):.2f}")
    return out


def summary(edgeprof: Any, predicted: dict[str, float], published: dict[str, float]) -> str:
    models = sorted(m for m in predicted if m in published)
    if len(models) < 2:
        return "-"
    errors = [abs(predicted[m] / published[m] - 1) for m in models]
    text = f"{100 * statistics.median(errors):.0f}% (worst {100 * max(errors):.0f}%)"
    if len(models) < 3:  # (Kendall's tau needs three)
        return text
    tau = edgeprof.analysis.kendall([predicted[m] for m in models], [published[m] for m in models])
    return f"{text}, tau {tau.coefficient:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-python", required=True,
                    help="the interpreter with torch, torchvision and timm (and onnx and "
                    "onnxruntime for --runtime onnxruntime)")
    ap.add_argument("--runtime", choices=RUNTIMES, default="pytorch")
    ap.add_argument("--emulate", action="store_true",
                    help="also run the models under each board, projected from one core (root)")
    ap.add_argument("--remeasure", action="store_true",
                    help="measure the rating (and, with --emulate, the own share) again")
    ap.add_argument("--boards", help="default: those of " + ", ".join(BOARDS) + " with "
                    "published times with the runtime")
    ap.add_argument("--warmup", type=int,
                    help="untimed inferences per model under the device (default 1; 3 for "
                    "pytorch-int8, whose TorchScript optimises itself over its first calls)")
    ap.add_argument("--loops", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="emulated: time each model at least this long (s) and take the mean "
                    "(default 1: under a quota, one inference shorter than the period runs at "
                    "the host's speed or waits a period, and only the mean over many is the "
                    "device's)")
    ap.add_argument("--emulated-rounds", type=int, default=1,
                    help="passes through the models under the device (default 1: each model "
                    "timed in one go; the rating's eight passes, each with its warm-up "
                    "inference, took an estimated 3-4 times as long at a Pi 4's 0.05 of a CPU "
                    "on this project's EPYC host); --min-time is split between the passes")
    ap.add_argument("--repeats", type=int, default=1,
                    help="with --emulate: emulated runs per board, interleaved (every board "
                    "once, then again), each model's time the median of its runs (default 1; "
                    "one run of the 13 PyTorch models moved a board's median error by about 5 "
                    "points between runs on this project's EPYC host)")
    ap.add_argument("--own-speed", action="store_true",
                    help="with --emulate, and a rating with activations: also run each model "
                    "alone under each board at the speed the memory term gives it, held out "
                    "(the board without the model's time, Device.for_runtime(runtime, "
                    "memory_mb_per_ms=the model's)): one slice run per model and board, after "
                    "the runs at one speed, once whatever --repeats, without --drift-check's "
                    "checks")
    ap.add_argument("--counted", action="store_true",
                    help="with --own-speed and --runtime pytorch, onnxruntime or pytorch-int8: "
                    "each model's "
                    "own speed from the run's count of its activations "
                    "(count_activations=True), not from the rating's figures")
    ap.add_argument("--models",
                    help="with --emulate: run only these models (comma-separated) under the "
                    "slices, at one speed and at their own; the estimated columns keep every "
                    "model, the emulated ones are of these (a board at a slow speed takes about "
                    "75 s a model at its own speed, most of it PyTorch's import)")
    ap.add_argument("--drift-check", action="store_true",
                    help="with --emulate: rate a few of the rating's models again, the "
                    "rating's way, before and after each board's emulated run, and report the "
                    "host's time over its rating's beside the emulation's over the speed's for "
                    "the same models (the host's drift, which an emulated run takes for the "
                    "emulation's own)")
    ap.add_argument("--correct-drift", action="store_true",
                    help="with --emulate: every emulated run probes this host's drift since "
                    "the runtime's rating and corrects the board's speed by it (the library's "
                    "drift_check: three of the runtime's models, tens of seconds a run)")
    ap.add_argument("--drift-models", type=int, default=3,
                    help="with --drift-check: how many models, spread over the rating's times")
    ap.add_argument("--workload-scaling", action="store_true",
                    help="also measure each model's speed-up from one thread to two here and "
                    "report the figures with each model's own scaling (in as many passes as "
                    "--scaling-loops: about five minutes, estimated: six ratings of at least "
                    "half a minute each since ratings time each model for at least 2 s)")
    ap.add_argument("--scaling-warmup", type=int, default=3,
                    help="with --workload-scaling: untimed inferences per model and run")
    ap.add_argument("--scaling-loops", type=int, default=7,
                    help="with --workload-scaling: timed inferences per model and run")
    ap.add_argument("--scaling-powers", default="1",
                    help="with --workload-scaling: the powers of the factor (default 1, the "
                    "option's)")
    ap.add_argument("--layer-activations", action="store_true",
                    help="ONNX Runtime: the memory-term columns (estimated) count each model's "
                         "activations by its PyTorch layers (as its rating did before "
                         "2026-12-05) instead of the rating's graph rule (the ONNX graph's "
                         "nodes); not with --emulate")
    ap.add_argument("--markdown", type=Path, help="also write the report here")
    args = ap.parse_args()
    # What set each model's own speed: the rating's figures, or the run's count.
    args.own_label = "memory term counted by the run" if args.counted else "memory term"
    if args.warmup is None:
        args.warmup = 3 if args.runtime == "pytorch-int8" else 1
    if args.emulated_rounds < 1:
        ap.error("--emulated-rounds must be at least 1")
    if args.scaling_powers != "1" and not args.workload_scaling:
        ap.error("--scaling-powers needs --workload-scaling")
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    if args.repeats > 1 and not args.emulate:
        ap.error("--repeats needs --emulate")
    if args.own_speed and not args.emulate:
        ap.error("--own-speed needs --emulate")
    if args.models:
        if not args.emulate:
            ap.error("--models needs --emulate")
        args.models = set(args.models.split(","))
    if args.counted and not (args.own_speed and
                             args.runtime in ("pytorch", "onnxruntime", "pytorch-int8")):
        ap.error("--counted needs --own-speed and --runtime pytorch, onnxruntime or pytorch-int8")
    if args.drift_check and not args.emulate:
        ap.error("--drift-check needs --emulate")
    if args.drift_models < 1:
        ap.error("--drift-models must be at least 1")
    if args.layer_activations and (args.runtime != "onnxruntime" or args.emulate):
        ap.error("--layer-activations needs --runtime onnxruntime, and not --emulate (the "
                 "emulated runs' speeds use the rating's activations)")
    if args.emulate:
        edgeprof = edgeprof_as_root("torch_boards.py")
        if edgeprof is None:
            return 77
    else:
        import edgeprof
    args.runner_args = list(
        next(r for r in edgeprof.nn.nn_runtimes() if r.id == args.runtime).runner_args)
    started = time.time()
    rating = None if args.remeasure else edgeprof.nn.cached_nn_rating(runtime=args.runtime)
    if rating is None:
        rating = edgeprof.nn.measure_nn_rating(
            runtime=args.runtime, python=args.torch_python,
            progress=lambda line: print(f"torch_boards.py: {line}", file=sys.stderr))
    host_ms = rating.host_ms
    # The activations the memory-term columns fit with: the rating's, or for ONNX Runtime its
    # models' PyTorch layers' (--layer-activations).
    activations = dict(rating.activation_mb)
    if args.layer_activations and activations:
        activations = layer_activations(args, sorted(m for m in host_ms if m in activations))
        print("torch_boards.py: activations by the PyTorch layers over the rating's: "
              + " ".join(f"{m} {activations[m]:.1f}/{rating.activation_mb[m]:.1f}"
                         for m in sorted(activations)), file=sys.stderr, flush=True)
    # The emulation's quota scale at the runtime's speed comes from this host's own share
    # under a quota with the runtime (edgeprof.speed.measure_quota_share(runtime=...)):
    # measured first with this interpreter unless cached (--remeasure: again): no run measures
    # it on the way, and a plan without it takes ncnn's share (its note says so).
    share = None
    if args.emulate:
        share = None if args.remeasure else edgeprof.speed.cached_quota_share(
            runtime=args.runtime)
        if share is None:
            try:
                share = edgeprof.speed.measure_quota_share(
                    runtime=args.runtime, python=args.torch_python,
                    progress=lambda line: print(f"torch_boards.py: {line}", file=sys.stderr))
            except edgeprof.Error as e:
                sys.exit(f"torch_boards.py: {e}")
    scaling = None
    powers = [float(p) for p in args.scaling_powers.split(",")] if args.workload_scaling else []
    if args.workload_scaling:
        try:
            scaling = edgeprof.nn.measure_host_scaling(
                python=args.torch_python, runtime=args.runtime, graphs=sorted(host_ms),
                warmup=args.scaling_warmup, loops=args.scaling_loops, rounds=3,
                progress=lambda line: print(f"torch_boards.py: {line}", file=sys.stderr))
        except edgeprof.Error as e:
            sys.exit(f"torch_boards.py: {e}")
        print("torch_boards.py: this host's speed-up from 1 to 2 threads: "
              + " ".join(f"{m} {scaling.speedup(m):.2f}" for m in sorted(scaling.one_ms))
              + f" (median {scaling.median_speedup():.2f}, {scaling.seconds:.0f} s)",
              file=sys.stderr, flush=True)
    lines = [f"# {args.runtime} speed against published boards\n",
             f"Host: {cpu_model()}, {os.cpu_count()} CPUs, kernel {platform.release()}; "
             f"rating: {rating}\n",
             *([f"The emulation's quota scale from this host's {share} (its cache: "
                f"{share.cache_file or 'not written'}).\n"] if share is not None else []),
             "Held out: each model's own published time left out of the speed (and out of "
             "its 90% interval, edgeprof.nn.time_interval; coverage: the share of published "
             "times inside; for the emulated columns the interval such a run reports, "
             "edgeprof.nn.device_interval of the held-out speed under the run's plan, with the "
             "emulation's spread e and, where it applies, the projection's p; the rescaled "
             "column takes the one-speed run's e). "
             "`speed only`: estimated (no emulation); `emulated`: measured one device core, "
             "projected to all cores by the library; `memory term`: each model from a fit "
             "of the board's other models' published times as a multiple of this host's "
             "one-thread time plus a cost per MB of activations (edgeprof.nn.nn_memory_fit), "
             "estimated, and its interval from that fit's held-out errors; `emulated, rescaled "
             "to the memory term`: the emulated run's time of each model (at the board's one "
             "speed) rescaled to the speed the memory term gives it (measured and projected "
             "at one speed, rescaled: not a run at each model's speed).\n"]
    rows = ["| board | models | speed (of a host core) | one-core factor | speed only: median "
            "\\|err\\|, tau | speed only: 90% interval coverage | emulated: median \\|err\\|, "
            "tau | emulated: 90% interval coverage | emulated / speed only, median (range) "
            "| host over its rating, before-after each run (the emulated over the speed "
            "only of that model) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    memory = bool(activations)
    if args.layer_activations:
        lines.append("Activations by each model's PyTorch layers (--layer-activations, as "
                     "ONNX Runtime's rating counted before 2026-12-05), not the rating's graph "
                     "rule.\n")
    if memory:
        rows[0] += (" speed + memory term: median \\|err\\|, tau | memory term: 90% interval "
                    "coverage | emulated, rescaled to the memory term: median \\|err\\|, tau | "
                    "emulated, rescaled to the memory term: 90% interval coverage | ms per "
                    "host ms, ms per MB (all models) |")
        rows[1] += "---|---|---|---|---|"
        if args.own_speed:
            rows[0] += (f" emulated at each model's own speed ({args.own_label}, held out): median "
                        "\\|err\\|, tau | its 90% interval coverage |")
            rows[1] += "---|---|"
    else:
        lines.append("No memory-term columns: this rating has no activation sizes (measure it "
                     "again with this edgeprof: --remeasure).\n")
    if scaling is not None:
        lines.append("This host's speed-up from one thread to two (measured, "
                     f"{scaling.rounds} rounds, warm-up {args.scaling_warmup} and "
                     f"{args.scaling_loops} timed inferences): "
                     + ", ".join(f"{m} {scaling.speedup(m):.2f}" for m in sorted(scaling.one_ms))
                     + f"; median {scaling.median_speedup():.2f}.\n")
        for p in powers:
            label = "own scaling" if p == 1 else f"own scaling^{p:g}"
            rows[0] += f" speed only, {label}: median \\|err\\|, tau | emulated, {label} |"
            rows[1] += "---|---|"
    detail = []
    exported = tempfile.TemporaryDirectory(prefix="edgeprof-models-")
    folder = "-"
    if args.emulate and args.runtime in EXPORTED:
        folder = exported.name
        export_models(args, sorted(host_ms), folder)
    if args.models and args.models - set(host_ms):
        sys.exit(f"torch_boards.py: --models: {', '.join(sorted(args.models - set(host_ms)))} "
                 f"not among the rating's models: {', '.join(sorted(host_ms))}")
    boards = (args.boards.split(",") if args.boards else
              [b for b in BOARDS if args.runtime in edgeprof.find_device(b).runtime_ms])
    # The emulated runs, interleaved over the boards (--repeats): per board each run's projected
    # ms per model, and the host's drift around each run.
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in boards}
    plans: dict[str, Any] = {}  # per board the last emulated run's plan
    drifts: dict[str, list[tuple[Any, Any]]] = {name: [] for name in boards}
    probe = drift_models(args, rating) if args.emulate and args.drift_check else []
    for r in range(args.repeats if args.emulate else 0):
        for name in boards:
            device = edgeprof.find_device(name).for_runtime(args.runtime)
            models = sorted(m for m in device.runtime_ms[args.runtime].ms
                            if m in host_ms and (not args.models or m in args.models))
            print(f"torch_boards.py: {name}: {len(models)} models at "
                  f"{device.nn.core_speed:.3f} of a host core, projected from one core"
                  + (f" (run {r + 1} of {args.repeats})" if args.repeats > 1 else "") + " ...",
                  file=sys.stderr, flush=True)
            before = host_drift(edgeprof, args, rating, probe) if probe else None
            full, result = emulate(edgeprof, args, device, models, folder)
            plans[name] = result.plan
            after = host_drift(edgeprof, args, rating, probe) if probe else None
            runs[name].append(full)
            drifts[name].append((before, after))
    # Each model alone at its own speed (--own-speed), after the runs at one speed.
    own_speed: dict[str, dict[str, tuple]] = {name: {} for name in boards}
    counted: dict[str, dict[str, float]] = {name: {} for name in boards}
    device_files = tempfile.TemporaryDirectory(prefix="edgeprof-boards-")
    if args.own_speed:
        if not rating.activation_mb:
            sys.exit("torch_boards.py: --own-speed needs a rating with activations: measure it "
                     "again with this edgeprof (--remeasure)")
        for name in boards:
            device = edgeprof.find_device(name)
            models = sorted(m for m in device.runtime_ms[args.runtime].ms
                            if m in host_ms and m in rating.activation_mb
                            and (not args.models or m in args.models))
            own_speed[name] = own_speed_runs(edgeprof, args, name, rating, models, folder,
                                             device_files.name,
                                             counted[name] if args.counted else None)
    for name in boards:
        device = edgeprof.find_device(name).for_runtime(args.runtime)
        speed = device.nn
        published = dict(edgeprof.find_device(name).runtime_ms[args.runtime].ms)
        threads = device.runtime_ms[args.runtime].threads
        held_speeds = held_out_speeds(edgeprof, device, speed, host_ms, args.runtime)
        held = {m: s.core_speed for m, s in held_speeds.items()}
        predicted = {m: host_ms[m] / held[m] / speed.one_core_factor for m in held}
        # Each model's projected ms: the median of its runs.
        full = {m: statistics.median(run[m] for run in runs[name] if m in run)
                for m in held if any(m in run for run in runs[name])}
        emulated = {m: ms * speed.core_speed / held[m] for m, ms in full.items() if m in held}
        drift = "not checked"
        own = "-"
        if probe and drifts[name]:
            # Per model: the host before and after each run ("before-after", runs separated by
            # "/"), and the emulation over the speed (of the model's median time).
            drift = "; ".join(
                f"{m} " + " / ".join(f"{b[m]:.2f}-{a[m]:.2f}" if b and a else "failed"
                                     for b, a in drifts[name])
                + (f" (emulated {emulated[m] / predicted[m]:.2f})" if m in emulated else "")
                for m in probe)
            print(f"torch_boards.py: {name}: host over its rating before, after: {drift}",
                  file=sys.stderr, flush=True)
        spread = run_spread(edgeprof, speed, plans[name]) if emulated else None
        if args.correct_drift and name in plans and plans[name].drift_probed > 0:
            # The run's own probe (the library's drift check) and the factor its plan applied.
            drift += (f"; the run's own probe {plans[name].drift_probed:.2f}, applied "
                      f"{plans[name].host_drift:.2f}")
        if emulated:
            # The emulation against the speed's own prediction: 1 where the slice delivers the
            # rated host's work at the speed (the host's drift included).
            ratios = sorted(emulated[m] / predicted[m] for m in emulated)
            if ratios:
                own = (f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-"
                       f"{ratios[-1]:.2f})")
        row = (f"| {name} | {len(held)} | {speed.core_speed:.4f} | "
               f"{speed.one_core_factor:.3f} | {summary(edgeprof, predicted, published)} | "
               f"{coverage(edgeprof, predicted, published, held_speeds, None, 'speed only')} | "
               f"{summary(edgeprof, emulated, published) if emulated else 'not run'} | "
               + (coverage(edgeprof, emulated, published, held_speeds, spread, "emulated")
                  + f" (e {spread[0]:.2f}, p {spread[1]:.2f}) | " if emulated else "- | ")
               + f"{own} | {drift} |")
        by_memory: dict[str, float] = {}
        emulated_memory: dict[str, float] = {}
        if memory:
            fit = edgeprof.nn.nn_memory_fit(published, host_ms, activations)
            fits = held_out_memory_fits(edgeprof, published, host_ms, activations)
            by_memory = {m: edgeprof.nn.nn_memory_predict(f, host_ms[m], activations[m])
                         for m, f in fits.items()}
            # The run's one-core time at the board's speed, rescaled to the model's own: one
            # core's speed by the memory term is host ms / (its all-core time x the factor).
            emulated_memory = {m: full[m] * speed.core_speed * by_memory[m]
                               * speed.one_core_factor / host_ms[m]
                               for m in by_memory if m in full}
            row += (f" {summary(edgeprof, by_memory, published)} | "
                    f"{coverage(edgeprof, by_memory, published, fits, None, 'memory term')} | "
                    + (f"{summary(edgeprof, emulated_memory, published)} | "
                       + coverage(edgeprof, emulated_memory, published, fits, spread,
                                  "emulated, rescaled to the memory term") + " |"
                       if emulated_memory else "not run | - |")
                    + f" {fit.per_host_ms:.2f}, {fit.ms_per_mb:.2f} |")
            if args.own_speed:
                own_ms = {m: ms for m, (ms, _, _) in own_speed[name].items() if m in published}
                for m, (_, core_speed, _) in (own_speed[name].items() if not args.counted
                                              else ()):
                    # The library's held-out speed against this script's own held-out fit: the
                    # same fit, so the same speed.
                    mine = host_ms[m] / (by_memory[m] * speed.one_core_factor) if m in by_memory \
                        else float("nan")
                    if not abs(core_speed / mine - 1) < 0.01:
                        print(f"torch_boards.py: {name}: {m}'s own speed {core_speed:.4f} from "
                              f"Device.for_runtime, {mine:.4f} from this script's fit",
                              file=sys.stderr)
                # Each run's e at its own quota; p as a run at the board's speed takes it
                # (the same tables and projection).
                own_spread = {m: (v[2].emulation_log_sd, run_spread(edgeprof, speed, v[2])[1])
                              for m, v in own_speed[name].items()}
                row += (f" {summary(edgeprof, own_ms, published)} | "
                        + coverage(edgeprof, own_ms, published, fits, own_spread,
                                   f"emulated at its own speed ({args.own_label})") + " |"
                        if own_ms
                        else " not run | - |")
        for p in powers:
            sh = scaled_held_out(edgeprof, device, speed, host_ms, args.runtime, scaling, p)
            scaled = {m: host_ms[m] / v / speed.one_core_factor / w for m, (v, w) in sh.items()}
            # The emulated run's projected times at the full speed, rescaled to the held-out
            # one and divided by the model's factor (a projection divides by both).
            scaled_emulated = {m: full[m] * speed.core_speed / sh[m][0] / sh[m][1]
                               for m in sh if m in full} if emulated else {}
            row += (f" {summary(edgeprof, scaled, published)} | "
                    f"{summary(edgeprof, scaled_emulated, published) if emulated else 'not run'} |")
        rows.append(row)
        detail.append(f"\n## {name} ({threads} threads published)\n")
        if len(runs[name]) > 1:
            # Each run alone, as the median above is of them: how far one run moves.
            per_run = []
            for run in runs[name]:
                alone = {m: ms * speed.core_speed / held[m] for m, ms in run.items() if m in held}
                text = f"emulated {summary(edgeprof, alone, published)}"
                if by_memory:
                    rescaled = {m: run[m] * speed.core_speed * by_memory[m]
                                * speed.one_core_factor / host_ms[m] for m in by_memory if m in run}
                    text += (", rescaled to the memory term "
                             f"{summary(edgeprof, rescaled, published)}")
                per_run.append(text)
            detail.append(f"Each of the {len(runs[name])} emulated runs alone (median \\|err\\|, "
                          "tau; the table's times are each model's median over them): "
                          + "; ".join(f"run {i + 1}: {t}" for i, t in enumerate(per_run)) + ".\n")
        detail.append("| model | published ms | host 1-thread ms | speed only ms | err | "
                      "emulated ms | err |"
                      + (" activation MB | memory term ms | err | emulated, rescaled ms | "
                         "err |" if memory else "")
                      + (" emulated at its own speed ms | err |" if own_speed[name] else ""))
        detail.append("|---|---|---|---|---|---|---|" + ("---|---|---|---|---|" if memory else "")
                      + ("---|---|" if own_speed[name] else ""))

        def cells(ms: float | None, m: str) -> str:
            return f"{ms:.1f} | {100 * (ms / published[m] - 1):+.0f}% |" if ms else "- | - |"

        for m in sorted(held):
            detail.append(
                f"| {m} | {published[m]:.1f} | {host_ms[m]:.1f} | {cells(predicted[m], m)} "
                f"{cells(emulated.get(m), m)}"
                + (f" {activations.get(m, 0):.1f} | {cells(by_memory.get(m), m)} "
                   f"{cells(emulated_memory.get(m), m)}" if memory else "")
                + (f" {cells(own_speed[name][m][0] if m in own_speed[name] else None, m)}"
                   if own_speed[name] else ""))
    def lower_tail(inside: int, n: int) -> float:
        return sum(math.comb(n, k) * 0.9 ** k * 0.1 ** (n - k) for k in range(inside + 1))

    pooled = "; ".join(f"{column}: {inside} of {n} ({100 * inside / n:.0f}%; "
                       f"P(<= {inside}) {lower_tail(inside, n):.2f})"
                       for column, (inside, n) in POOLED.items() if n)
    n = max((len(edgeprof.find_device(b).runtime_ms[args.runtime].ms) for b in boards),
            default=0)
    need = math.ceil(0.85 * n)
    chance = sum(math.comb(n, k) * 0.9 ** k * 0.1 ** (n - k) for k in range(need, n + 1))
    lines += ["\n".join(rows),
              f"\nInside the 90% interval, all boards together: {pooled}. P(<= k): how "
              "likely that few or fewer inside if the interval were right, each time inside "
              "with probability 0.9 independently (binomial; approximate: the held-out "
              "speeds share models, and a run's emulation and the host's drift are shared, "
              f"so misses correlate). So a board of {n} times holds {need} or more (issue "
              f"34's 85%) with probability {chance:.2f} even where the interval is right.\n",
              *detail,
              *counted_lines(rating, counted),
              f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
              f"{(time.time() - started) / 60:.1f} min"]
    exported.cleanup()
    device_files.cleanup()
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
