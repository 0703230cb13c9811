#!/usr/bin/env python3
"""Does the probe's vector score move with real CNN inference when the vector unit changes?
Results: docs/fidelity.md, "The probe's vector kernel".

A probed device's nn speed is its vector-kernel score / this host's, each on its best unit
(an Arm core's 128-bit NEON against this host's AVX-512, say). No device is at hand here, but
this host has three units of different width, and PyTorch can be held to each: ATen by
ATEN_CPU_CAPABILITY, its oneDNN convolutions by ONEDNN_MAX_CPU_ISA. So, per unit, this program
measures the vector score (edgeprof.speed.run_suite(vector_unit=...)) and PyTorch's one-thread
inference time of ResNet-18, MobileNet v2 and VGG-11 (torch_cnn.py), interleaved over
`--rounds`, and compares the speed the score predicts for each unit relative to the best one
with the speed PyTorch got.

Needs PyTorch in the interpreter given by --python (exit 77 without it). Markdown on stdout,
progress on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

# edgeprof's unit -> (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA) that holds PyTorch to it. SSE4.1
# is oneDNN's narrowest; like the kernel's sse2 build it has 128-bit vectors and no FMA.
TORCH_ISA = {"avx512f": ("avx512", "AVX512_CORE"), "avx2+fma": ("avx2", "AVX2"),
             "sse2": ("default", "SSE41")}
WORKER = Path(__file__).with_name("torch_cnn.py")


def torch_times(python: str, cpu: int, unit: str, loops: int, models: list[str]) -> dict[str, float]:
    aten, onednn = TORCH_ISA[unit]
    env = dict(os.environ, ATEN_CPU_CAPABILITY=aten, ONEDNN_MAX_CPU_ISA=onednn,
               OMP_NUM_THREADS="1")
    out = subprocess.run([python, str(WORKER), str(loops), *models], env=env, check=True,
                         capture_output=True, text=True,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu})).stdout
    times = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) == 4 and words[0] in models:
            times[words[0]] = float(words[1])
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    ap.add_argument("--loops", type=int, default=10, help="timed inferences per model and run")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="CPU to pin to")
    ap.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2", "vgg11"])
    args = ap.parse_args()
    try:
        import edgeprof
    except ImportError as e:
        print(f"vector_units.py: cannot run here: edgeprof is not importable ({e})", file=sys.stderr)
        return 77
    probe = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"vector_units.py: cannot run here: {args.python} has no torch "
              "(pip install torch, or --python)", file=sys.stderr)
        return 77
    units = [u for u in edgeprof.speed.vector_units() if u in TORCH_ISA]
    if len(units) < 2:
        print(f"vector_units.py: cannot run here: this CPU has one vector unit ({units})",
              file=sys.stderr)
        return 77

    scores: dict[str, list[float]] = {u: [] for u in units}
    ms: dict[str, dict[str, list[float]]] = {u: {m: [] for m in args.models} for u in units}
    for r in range(args.rounds):
        order = units[r % len(units):] + units[:r % len(units)]  # interleaved, rotated
        for u in order:
            s = edgeprof.speed.run_suite(per_kernel_s=0.2, repeats=3, cpu=args.cpu, vector_unit=u)
            scores[u].append(s.vector)
            t = torch_times(args.python, args.cpu, u, args.loops, args.models)
            for m in args.models:
                ms[u][m].append(t[m])
            print(f"round {r + 1}/{args.rounds} {u}: vector {s.vector:.1f} GFLOP/s; "
                  + ", ".join(f"{m} {t[m]:.1f} ms" for m in args.models), file=sys.stderr)

    best = units[0]
    score = {u: statistics.median(v) for u, v in scores.items()}
    time_ms = {u: {m: statistics.median(v) for m, v in ms[u].items()} for u in units}
    print(f"Measured {datetime.now(timezone.utc):%Y-%m-%d} on {platform.node()} "
          f"({edgeprof.speed.host_calibration().cpu_model}), CPU {args.cpu}, PyTorch "
          f"{probe.stdout.strip()} one thread, medians of {args.rounds} interleaved rounds. "
          f"Speed of each unit relative to {best}: the vector score's ratio (what a probed "
          "device's nn speed is made of) against PyTorch's time ratio per model.\n")
    print("| unit | vector GFLOP/s | score ratio | " +
          " | ".join(f"{m}: ms, speed ratio, error" for m in args.models) + " | geomean error |")
    print("|---|---|---|" + "---|" * len(args.models) + "---|")
    errors = []
    for u in units:
        predicted = score[u] / score[best]
        cells, logs = [], []
        for m in args.models:
            measured = time_ms[best][m] / time_ms[u][m]
            err = predicted / measured - 1
            logs.append(math.log(predicted / measured))
            cells.append(f"{time_ms[u][m]:.1f}, {measured:.2f}, {100 * err:+.0f}%")
        geo = math.exp(statistics.mean(logs)) - 1
        if u != best:
            errors.append(abs(geo))
        print(f"| {u} | {score[u]:.1f} | {predicted:.2f} | " + " | ".join(cells) +
              f" | {100 * geo:+.0f}% |")
    print(f"\nCommand: `python3 benchmarks/vector_units.py --python {args.python} "
          f"--rounds {args.rounds} --loops {args.loops}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
