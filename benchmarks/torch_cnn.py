#!/usr/bin/env python3
"""Times CNN inference with PyTorch on the CPU, one thread: the worker of vector_units.py.

    torch_cnn.py LOOPS MODEL...

MODEL is one of resnet18, mobilenet_v2, vgg11 (the architectures as published, written here
with torch.nn; random weights, which do not change the time), batch 1, 3x224x224, eval mode,
no autograd. Prints one line per model, `<name> <median ms> <min ms> <max ms>`, then
`runtime <versions and the vector unit PyTorch chose>`. Which unit PyTorch and its oneDNN
convolutions may use is set from outside, by the environment: ATEN_CPU_CAPABILITY (default,
avx2, avx512) and ONEDNN_MAX_CPU_ISA (SSE41, AVX2, AVX512_CORE).
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
from torch import nn


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6(inplace=True) if groups > 1 or k == 1 else nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Basic(nn.Module):
    """ResNet's basic block: two 3x3 convolutions and a shortcut."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, act=False))
        self.short = (nn.Identity() if stride == 1 and cin == cout
                      else conv_bn(cin, cout, 1, stride, act=False))

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


def resnet18() -> nn.Module:
    layers = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


class Inverted(nn.Module):
    """MobileNet v2's inverted residual: expand 1x1, depthwise 3x3, project 1x1."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        mid = cin * expand
        layers = [conv_bn(cin, mid, 1)] if expand != 1 else []
        layers += [conv_bn(mid, mid, 3, stride, groups=mid), conv_bn(mid, cout, 1, act=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def mobilenet_v2() -> nn.Module:
    layers = [conv_bn(3, 32, 3, 2)]
    cin = 32
    # (expansion, channels, repeats, first stride): the published table of MobileNet v2.
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            layers.append(Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [conv_bn(cin, 1280, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


def vgg11() -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(cin, v, 3, 1, 1), nn.ReLU(inplace=True)]
            cin = v
    layers += [nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True),
               nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Linear(4096, 1000)]
    return nn.Sequential(*layers)


MODELS = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "vgg11": vgg11}


def main() -> int:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or any(m not in MODELS for m in sys.argv[2:]):
        print(f"usage: torch_cnn.py LOOPS MODEL... (models: {', '.join(MODELS)})", file=sys.stderr)
        return 2
    loops = int(sys.argv[1])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.rand(1, 3, 224, 224)
    with torch.inference_mode():
        for name in sys.argv[2:]:
            model = MODELS[name]().eval()
            for _ in range(3):
                model(x)
            times = []
            for _ in range(loops):
                start = time.perf_counter()
                model(x)
                times.append((time.perf_counter() - start) * 1000)
            print(f"{name} {statistics.median(times):.3f} {min(times):.3f} {max(times):.3f}",
                  flush=True)
    print(f"runtime torch {torch.__version__}, ATen {torch.backends.cpu.get_cpu_capability()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
