"""How close does an emulated Raspberry Pi 4 land to the PyTorch tutorial's? (issues 29 and 34)

The PyTorch tutorial "Real Time Inference on Raspberry Pi 4" publishes the time per frame of
eleven torchvision models on a Raspberry Pi 4 Model B 4GB with PyTorch's default of four threads
(`../shared/datasets/pytorch-rpi4/`: most likely int8 models quantized for qnnpack; its README
says what the tutorial leaves unstated). This program runs the same architectures with
random weights under edgeprof's emulation of that board, as a user would:
`edgeprof.run([...], device="raspberry-pi-4b-4gb")` with the defaults: the run starts at the
device's nn speed (ncnn's) and follows the workload to the board's PyTorch speed when it sees
PyTorch loaded (where this host has its PyTorch rating: `edgeprof calibrate-host --nn --runtime
pytorch`), and auto core emulation projects the four cores from one. The tutorial's table is
not one the PyTorch speed was derived from (that is another source's fp32 times): a held-out
check. It compares the emulated times with the published ones, in fp32 and in int8
(torch.ao.quantization, qnnpack as the tutorial; on x86 also fbgemm, x86's own engine).

Each model is built and quantized once, unemulated (torch_rpi4_worker.py prepare), and saved
as TorchScript, as the tutorial runs it; the same files are then timed on this host, one thread
pinned to one CPU (a plain subprocess), and in the emulated device (edgeprof.run, one run per
precision). Inputs are batch 1, 3x224x224 (inception_v3: 3x299x299, the size torchvision's
Inception v3 requires); eval mode, torch.inference_mode; warm-up inferences, then the median of
the timed ones.

Needs root and edgeprof in this interpreter, torch and torchvision in --torch-python (exit 77,
"cannot run here", without them). Markdown on stdout (and in --markdown FILE), progress on
stderr.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from script_common import edgeprof_as_root

DEVICE = "raspberry-pi-4b-4gb"
THREADS = 4  # the table's: PyTorch's default on the Pi 4, one per core
WORKER = Path(__file__).with_name("torch_rpi4_worker.py")
PUBLISHED = Path(__file__).resolve().parents[2] / "shared/datasets/pytorch-rpi4/published.csv"
MODELS = ("mobilenet_v2", "mobilenet_v3_large", "resnet18", "resnet50", "resnext101_32x8d",
          "inception_v3", "googlenet", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
          "shufflenet_v2_x1_5", "shufflenet_v2_x2_0")
PRECISIONS = ("fp32", "int8", "int8-fbgemm")
# fbgemm is x86's engine: the one a user of this host would quantize for, not the Pi's.
DEFAULT_PRECISIONS = PRECISIONS if platform.machine() in ("x86_64", "AMD64") else PRECISIONS[:2]
QUICK_MODEL = "shufflenet_v2_x0_5"
RUN_TIMEOUT_S = 1800.0  # one emulated run (all models of a precision); a default one needs ~2 min


class Timing(NamedTuple):
    median_ms: float
    min_ms: float
    max_ms: float


class WorkerOutput(NamedTuple):
    times: dict[tuple[str, str], Timing]  # (model, precision) -> timing
    runtime: str


def read_published(path: Path) -> dict[str, float]:
    """The tutorial's table: ms per frame by model, 4 threads (not the two rows from its text)."""
    with open(path, newline="") as f:
        return {row["model"]: float(row["latency_ms"]) for row in csv.DictReader(f)
                if row["threads"] == str(THREADS) and row["metric"] == "Model Time (ms/frame)"}


def parse_times(text: str) -> WorkerOutput:
    times, runtime = {}, ""
    for line in text.splitlines():
        words = line.split()
        if line.startswith("runtime "):
            runtime = line[len("runtime "):]
        elif len(words) == 5 and words[0] in MODELS and words[1] in PRECISIONS:
            times[(words[0], words[1])] = Timing(*map(float, words[2:]))
    return WorkerOutput(times, runtime)


def worker_argv(python: str, action: str, directory: str, models: list[str],
                precisions: list[str], eager: bool) -> list[str]:
    argv = [python, str(WORKER), action, directory, "--models", ",".join(models),
            "--precisions", ",".join(precisions)]
    return argv + (["--eager"] if eager else [])


def run_plain(argv: list[str], env: dict[str, str], cpu: int = -1) -> str:
    """The worker as a plain subprocess; its stdout. Exits with the worker's stderr on failure."""
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu >= 0 else None
    p = subprocess.run(argv, env=env, capture_output=True, text=True, preexec_fn=pin)
    if p.returncode != 0:
        sys.exit(f"torch_rpi4.py: the worker failed ({shlex.join(argv)}):\n{p.stderr[-3000:]}")
    return p.stdout


def run_emulated(edgeprof: Any, argv: list[str], env: dict[str, str],
                 core_emulation: str = "auto") -> tuple[Any, str]:
    """The worker under the emulated device, as a user runs it; the Result and its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        r = edgeprof.run(argv, device=DEVICE, env=env, stdout=out, stderr=err,
                         timeout=RUN_TIMEOUT_S, core_emulation=core_emulation)
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if not r.ok:
        why = ("timed out" if r.timed_out else "was killed for memory" if r.oom_killed
               else f"exit code {r.exit_code}, signal {r.signal}")
        sys.exit(f"torch_rpi4.py: the emulated worker failed ({why}; {shlex.join(argv)}):\n"
                 f"{errors[-3000:]}")
    return r, text


def projected(r: Any, out: WorkerOutput) -> WorkerOutput:
    """A projected run's times (one thread on one device core) as the library projects them to
    all the device's cores (Result.projected_s); a run without a projection, unchanged."""
    if r.plan.threads_projection is None:
        return out
    scale = lambda ms: r.projected_s(ms / 1000) * 1000  # noqa: E731
    return WorkerOutput({k: Timing(scale(t.median_ms), scale(t.min_ms), scale(t.max_ms))
                         for k, t in out.times.items()}, out.runtime)


def geomean(values: list[float]) -> float:
    return math.exp(statistics.mean(math.log(v) for v in values)) if values else math.nan


def pct(x: float) -> str:
    return f"{100 * x:+.0f}%"


def table(header: list[str], rows: list[list[str]]) -> str:
    out = "| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n"
    return out + "".join("| " + " | ".join(r) + " |\n" for r in rows)


def report(args: argparse.Namespace, edgeprof: Any, published: dict[str, float],
           prepared: str, host: WorkerOutput, emulated: dict[str, tuple[Any, WorkerOutput]],
           started: datetime, seconds: float, cpu: int) -> str:
    first = next(iter(emulated.values()))[0]
    device, plan = first.device, first.plan
    speed = device.core_speed
    proj = plan.threads_projection
    # Projected: the one core that ran, divided by the board's speed-up.
    capacity = device.cores * speed * (proj.speedup if proj is not None else 1)
    rows, summary = [], []
    for precision in args.precisions:
        r, out = emulated[precision]
        ratios, device_ratios = [], []
        for model in args.models:
            h, e = host.times.get((model, precision)), out.times.get((model, precision))
            p = published.get(model)
            if h is None or e is None:
                rows.append([model, precision, "not prepared (below)", "", "", "", "", ""])
                continue
            row = [model, precision, f"{h.median_ms:.1f}", f"{h.median_ms / capacity:.0f}",
                   f"{e.median_ms:.0f} ({e.min_ms:.0f}-{e.max_ms:.0f})"]
            if p is None:
                rows.append(row + ["", "", ""])
                continue
            ratios.append(e.median_ms / p)
            device_ratios.append(p / h.median_ms)
            rows.append(row + [f"{p:g}", pct(e.median_ms / p - 1), f"{p / h.median_ms:.2f}"])
        if ratios:
            g = geomean(ratios)
            rows.append([f"**geometric mean** ({len(ratios)})", precision, "", "", "", "",
                         f"**{pct(g - 1)}**", f"{geomean(device_ratios):.2f}"])
            summary.append(
                f"{precision}: emulated / published {g:.2f} (geometric mean over {len(ratios)}), "
                f"median |error| {100 * statistics.median(abs(x - 1) for x in ratios):.0f}%, "
                f"worst {pct(max(ratios, key=lambda x: abs(x - 1)) - 1)}; a per-core speed of "
                f"{speed * g:.4f} of a host core instead of {speed:.4f} would have put the "
                f"geometric mean on the published times (taking time as proportional to "
                f"1 / speed)")
    host_model = edgeprof.emulation.host_info()
    lines = [
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {platform.node()} ({host_model.cpu_model}, "
        f"{host_model.cpus} CPUs, kernel {platform.release()}, cgroups {first.cgroup_mode}), "
        f"edgeprof {edgeprof.__version__}; total {seconds / 60:.1f} min.",
        "",
        f"Device: `{device.name}` as the catalog has it, {device.cores} cores at "
        f"{speed:.4f} of a host core each (speed kind `{device.speed_kind or 'integer'}`: "
        f"{device.speed_text}), CPU quota {plan.cpu_quota_us} us per {plan.cpu_period_us} us "
        f"on host CPUs {','.join(map(str, plan.cpus))}, keep-warm "
        f"{'on' if plan.keep_warm else 'off'}; "
        + (f"{THREADS} threads (torch.set_num_threads)" if proj is None else
           f"core emulation projected: one thread on one device core, its times divided by "
           f"{proj.speedup:.3f}, the board's median speed-up from 1 to {proj.threads} threads "
           f"in ncnn's published tables ({proj.graphs} graphs)")
        + ", one edgeprof.run per precision.",
        f"Host: one thread (torch.set_num_threads(1), OMP_NUM_THREADS=1) pinned to CPU {cpu}, "
        "a plain subprocess.",
        f"Runtime: host {host.runtime}; emulated "
        f"{'; '.join(sorted({o.runtime for _, o in emulated.values()}))}.",
        f"Models: torchvision's architectures with random weights, saved as "
        f"{'eager modules' if args.eager else 'TorchScript (torch.jit.script, as the tutorial)'}; "
        "batch 1, 3x224x224 (inception_v3: 3x299x299, as torchvision requires), eval, "
        f"inference_mode; {args.warmup} warm-up and {args.loops} timed inferences (median; "
        "emulated min-max in brackets). int8: torchvision.models.quantization's version, "
        "fuse_model, get_default_qconfig(engine), prepare, calibration on random inputs, convert; "
        "engine qnnpack (int8) or fbgemm (int8-fbgemm).",
        "Published: the PyTorch tutorial's Raspberry Pi 4 table (Pi 4 Model B 4GB, 4 threads; "
        "precision not stated, most likely int8 qnnpack: "
        "../shared/datasets/pytorch-rpi4/README.md), the same figure for both precisions.",
        "",
        table(["model", "precision", "host ms (1 thread)",
               f"host ms / ({device.cores} x {speed:.4f}"
               + (f" x {proj.speedup:.3f})" if proj is not None else ")"),
               f"emulated ms ({THREADS} threads)" if proj is None else
               f"projected ms ({proj.threads} cores from 1)",
               "published ms", "emulated / published - 1", "published / host"], rows),
        "`host ms / (cores x speed)`: what the emulation would give if the quota bought "
        f"{THREADS} threads the same work per CPU-second as one thread unthrottled. "
        "`published / host`: the Pi 4's time on 4 threads over this host's on one (the ratio a "
        "PyTorch rating of the device would be made of).",
        "",
        *[f"- {s}" for s in summary],
        "",
        "Emulated runs:",
        "",
    ]
    for precision in args.precisions:
        r, _ = emulated[precision]
        peak = r.peak_memory_bytes
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(r.runtimes_seen.items())) or "none"
        lines.append(
            f"- {precision}: wall {r.wall_time_s:.1f} s (imports, loading, warm-up and timed "
            f"inferences), CPU {r.cpu_user_s + r.cpu_system_s:.1f} s, throttled "
            f"{r.throttled_s:.1f} s in {r.throttled_periods} of {r.periods} periods, peak memory "
            f"{edgeprof.devices.format_size(peak) if peak is not None else 'unknown'}, "
            f"keep-warm CPU "
            f"{r.keep_warm_cpu_s:.1f} s; runtimes seen: {seen}")
        lines += [f"  - warning: {w}" for w in r.warnings]
    lines += ["", "Plan notes:", ""] + [f"- {n}" for n in plan.notes]
    failed = [line for line in prepared.splitlines() if line.startswith("failed ")]
    if failed:
        lines += ["", "Not prepared:", ""] + [f"- {line[len('failed '):]}" for line in failed]
    lines += ["", f"Command: `python3 benchmarks/torch_rpi4.py {shlex.join(sys.argv[1:])}`"]
    return "\n".join(lines) + "\n"


def main() -> int:
    started_at = time.monotonic()
    started = datetime.now(timezone.utc)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: all 11)")
    ap.add_argument("--precisions", default=",".join(DEFAULT_PRECISIONS),
                    help=f"comma-separated, of {', '.join(PRECISIONS)} (default "
                         f"{','.join(DEFAULT_PRECISIONS)})")
    ap.add_argument("--loops", type=int, default=6,
                    help="timed inferences per model (default 6: the whole run in about 6 min)")
    ap.add_argument("--warmup", type=int, default=2,
                    help="untimed inferences first (default 2: TorchScript optimises on the "
                         "second call)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK_MODEL} only, one loop")
    ap.add_argument("--torch-python", default="python3",
                    help="interpreter with torch and torchvision (default python3)")
    ap.add_argument("--eager", action="store_true",
                    help="time eager modules instead of TorchScript")
    ap.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                    help="set in the worker's environment, host and emulated (e.g. "
                         "OMP_WAIT_POLICY=PASSIVE); repeatable")
    ap.add_argument("--published", type=Path, default=PUBLISHED, help="the tutorial's table")
    ap.add_argument("--core-emulation", choices=["auto", "pooled", "projected"], default="auto",
                    help="auto (default: what a user gets, projected for this board), pooled "
                    "(four threads in one quota of four device cores) or projected (one thread "
                    "on one device core, divided by the board's published speed-up; "
                    "docs/threads.md)")
    ap.add_argument("--markdown", type=Path, metavar="FILE", help="also write the report here")
    args = ap.parse_args()
    args.models = args.models.split(",")
    args.precisions = args.precisions.split(",")
    if args.quick:
        args.models, args.loops = [QUICK_MODEL], 1
    unknown = ([m for m in args.models if m not in MODELS] +
               [p for p in args.precisions if p not in PRECISIONS])
    if unknown:
        ap.error(f"unknown: {', '.join(unknown)} (models: {', '.join(MODELS)})")
    if args.loops < 1 or args.warmup < 0:
        ap.error("--loops must be at least 1 and --warmup at least 0")
    if any("=" not in kv for kv in args.worker_env):
        ap.error("--worker-env takes KEY=VALUE")

    edgeprof = edgeprof_as_root("torch_rpi4.py")
    if edgeprof is None:
        return 77
    try:
        probe = subprocess.run([args.torch_python, "-c", "import torch, torchvision"],
                               capture_output=True, text=True)
        last = (probe.stderr.strip().splitlines() or [""])[-1]
    except OSError as e:
        probe, last = None, str(e)
    if probe is None or probe.returncode != 0:
        print(f"torch_rpi4.py: cannot run here: {args.torch_python} cannot import torch and "
              f"torchvision ({last}); give an interpreter that can with --torch-python "
              "(PyPI's torchvision needs its own torch: in a venv, pip install torch==2.14.1 "
              "torchvision==0.29.1)",
              file=sys.stderr)
        return 77
    if not args.published.is_file():
        print(f"torch_rpi4.py: cannot run here: no published table at {args.published}",
              file=sys.stderr)
        return 77
    published = read_published(args.published)

    env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.worker_env))
    # The host's baseline allocates as the emulated run's workload does by default.
    host_env = dict(env, OMP_NUM_THREADS="1", **{k: v for k, v in
                                                 edgeprof.emulation.STEADY_MALLOC_ENV.items()
                                                 if k not in env})
    cpu = max(os.sched_getaffinity(0))
    timing = ["--warmup", str(args.warmup), "--loops", str(args.loops)]
    with tempfile.TemporaryDirectory(prefix="torch_rpi4.") as directory:
        print(f"preparing {len(args.models)} models x {', '.join(args.precisions)} in "
              f"{directory} (unemulated)", file=sys.stderr)
        prepared = run_plain(worker_argv(args.torch_python, "prepare", directory, args.models,
                                         args.precisions, args.eager), env)
        print(prepared, end="", file=sys.stderr)
        print(f"timing on this host, one thread on CPU {cpu}", file=sys.stderr)
        host = parse_times(run_plain(
            worker_argv(args.torch_python, "time", directory, args.models, args.precisions,
                        args.eager) + timing + ["--threads", "1"], host_env, cpu))
        emulated = {}
        # What auto makes of the board: one thread on one core where it projects.
        planned = edgeprof.emulation.plan_emulation(DEVICE, core_emulation=args.core_emulation)
        for precision in args.precisions:
            threads = 1 if planned.threads_projection is not None else THREADS
            print(f"timing {precision} in the emulated {DEVICE}, {threads} thread(s), core "
                  f"emulation {args.core_emulation}", file=sys.stderr)
            r, text = run_emulated(edgeprof, worker_argv(
                args.torch_python, "time", directory, args.models, [precision], args.eager)
                + timing + ["--threads", str(threads)], env, args.core_emulation)
            print(text, end="", file=sys.stderr)
            emulated[precision] = (r, projected(r, parse_times(text)))
    text = report(args, edgeprof, published, prepared, host, emulated, started,
                  time.monotonic() - started_at, cpu)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
