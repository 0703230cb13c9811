#!/usr/bin/env python3
"""Builds and times torchvision's classification models with PyTorch on the CPU: the worker of
torch_rpi4.py. Needs torch and torchvision (not edgeprof).

    torch_rpi4_worker.py prepare DIR --models A,B --precisions fp32,int8 [--eager]
    torch_rpi4_worker.py time DIR --models A,B --precisions fp32,int8 --threads N
                         --warmup W --loops L [--eager]

`prepare` builds each model with random weights (torchvision's architecture, weights=None;
random weights do not change the time) and saves it in DIR, TorchScript by default as the
PyTorch tutorial runs it (torch.jit.script), or the eager module pickled with --eager. Precisions:

- fp32: torchvision.models.<name>, as is.
- int8: torchvision.models.quantization.<name> (the quantizable version of the same
  architecture), quantized for the qnnpack engine, as the tutorial's models are: fuse_model(),
  torch.ao.quantization.get_default_qconfig("qnnpack") (histogram observer on activations,
  per-tensor weights), prepare, calibration on CALIBRATION random inputs, convert.
- int8-fbgemm: the same with the fbgemm engine (x86's; per-channel weights).

It prints `prepared <model> <precision> <seconds>`, or `failed <model> <precision> <why>` and goes
on with the next one.

`time` loads each prepared model, sets torch.set_num_threads(N), and runs batch 1, 3x224x224
(inception_v3: 3x299x299, the size torchvision's Inception v3 requires), eval mode, under
torch.inference_mode: W warm-up inferences, then L timed ones. It prints one line per model,
`<model> <precision> <median ms> <min ms> <max ms>`, then `runtime <versions, threads, ...>`.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
import torchvision
from torchvision.models import quantization as quantizable

MODELS = ("mobilenet_v2", "mobilenet_v3_large", "resnet18", "resnet50", "resnext101_32x8d",
          "inception_v3", "googlenet", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
          "shufflenet_v2_x1_5", "shufflenet_v2_x2_0")
ENGINE = {"fp32": None, "int8": "qnnpack", "int8-fbgemm": "fbgemm"}
CALIBRATION = 4

# TorchScript and torch.ao.quantization, which the tutorial uses, are deprecated in this PyTorch
# (for torch.export and torchao) and still work. The three others are harmless here: an unused
# FloatFunctional (mobilenet_v2's blocks without a residual), the eval-mode output that is the
# logits alone, and fbgemm's default observer.
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message="must run observer before calling calculate_qparams")
warnings.filterwarnings("ignore", message="Scripted .* always returns")
warnings.filterwarnings("ignore", message="Please use quant_min and quant_max")


def input_size(model: str) -> int:
    return 299 if model == "inception_v3" else 224


def build(model: str, precision: str) -> torch.nn.Module:
    # GoogLeNet and Inception v3 as torchvision deploys them with weights: no auxiliary heads
    # (unused in eval mode anyway); default initialisation instead of their slow truncated normal.
    extra = ({"aux_logits": False, "init_weights": False}
             if model in ("googlenet", "inception_v3") else {})
    engine = ENGINE[precision]
    if engine is None:
        return getattr(torchvision.models, model)(weights=None, **extra).eval()
    torch.backends.quantized.engine = engine
    net = getattr(quantizable, model)(weights=None, quantize=False, **extra).eval()
    net.fuse_model()
    net.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    torch.ao.quantization.prepare(net, inplace=True)
    size = input_size(model)
    with torch.inference_mode():
        for _ in range(CALIBRATION):
            net(torch.rand(1, 3, size, size))
    torch.ao.quantization.convert(net, inplace=True)
    return net


def saved(directory: Path, model: str, precision: str) -> Path:
    return directory / f"{model}.{precision}.pt"


def prepare(directory: Path, models: list[str], precisions: list[str], eager: bool) -> int:
    torch.manual_seed(0)
    for precision in precisions:
        for model in models:
            start = time.perf_counter()
            try:
                net = build(model, precision)
                path = saved(directory, model, precision)
                if eager:
                    torch.save(net, path)
                else:
                    torch.jit.save(torch.jit.script(net), str(path))
            except Exception as e:  # noqa: BLE001 - reported, and the next model goes on
                why = " ".join(f"{type(e).__name__}: {e}".split())[:300]
                print(f"failed {model} {precision} {why}", flush=True)
                continue
            print(f"prepared {model} {precision} {time.perf_counter() - start:.1f}", flush=True)
            del net
            gc.collect()
    return 0


def load(path: Path, eager: bool) -> torch.nn.Module:
    if eager:
        return torch.load(path, weights_only=False).eval()
    return torch.jit.load(str(path)).eval()


def time_models(directory: Path, models: list[str], precisions: list[str], threads: int,
                warmup: int, loops: int, eager: bool) -> int:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    for precision in precisions:
        engine = ENGINE[precision]
        if engine is not None:
            # Before loading: quantized weights are packed for the engine in force when loaded.
            torch.backends.quantized.engine = engine
        for model in models:
            path = saved(directory, model, precision)
            if not path.exists():
                continue  # prepare said why
            net = load(path, eager)
            size = input_size(model)
            x = torch.rand(1, 3, size, size)
            with torch.inference_mode():
                for _ in range(warmup):
                    net(x)
                times = []
                for _ in range(loops):
                    start = time.perf_counter()
                    net(x)
                    times.append((time.perf_counter() - start) * 1000)
            print(f"{model} {precision} {statistics.median(times):.3f} {min(times):.3f} "
                  f"{max(times):.3f}", flush=True)
            del net
            gc.collect()
    print(f"runtime torch {torch.__version__}, torchvision {torchvision.__version__}, ATen "
          f"{torch.backends.cpu.get_cpu_capability()}, threads {torch.get_num_threads()}, "
          f"{'eager' if eager else 'TorchScript'}", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("prepare", "time"))
    ap.add_argument("directory", type=Path)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--precisions", default="fp32,int8")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--loops", type=int, default=3)
    ap.add_argument("--eager", action="store_true", help="no TorchScript")
    args = ap.parse_args()
    models = args.models.split(",")
    precisions = args.precisions.split(",")
    unknown = [m for m in models if m not in MODELS] + [p for p in precisions if p not in ENGINE]
    if unknown:
        ap.error(f"unknown: {', '.join(unknown)}")
    missing = {ENGINE[p] for p in precisions} - {None, *torch.backends.quantized.supported_engines}
    if missing:
        ap.error(f"this PyTorch has no quantized engine {', '.join(sorted(missing))}")
    if args.action == "prepare":
        return prepare(args.directory, models, precisions, args.eager)
    if args.threads < 1 or args.loops < 1 or args.warmup < 0:
        ap.error("--threads and --loops must be at least 1, --warmup at least 0")
    return time_models(args.directory, models, precisions, args.threads, args.warmup, args.loops,
                       args.eager)


if __name__ == "__main__":
    sys.exit(main())
