"""edgeprof.nn.memory_intensity: a user's PyTorch model counted and timed in-process as the
PyTorch runner counts and times a rating's models. PyTorch is optional and not installed for the
tests: without it the refusals are checked; with EDGEPROF_TORCH_PYTHON (an interpreter with
torch, torchvision, onnx and onnxruntime) a real model is counted and timed there."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import edgeprof


def test_without_pytorch_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(edgeprof.Error, match="needs PyTorch.*pip install torch"):
        edgeprof.nn.memory_intensity(object(), None)


@pytest.mark.parametrize("kwargs, message", [
    ({"runtime": "ncnn"}, "runtime='ncnn'.*give one of onnxruntime, pytorch, pytorch-int8"),
    ({"runtime": "tflite"}, "runtime='tflite'"),
    ({"loops": 0}, "loops=0.*loops >= 1"),
    ({"warmup": -1}, "warmup=-1"),
    # Not whole: nan divided by zero after the count, inf hung, 2.5 and True were reported.
    ({"loops": float("nan")}, "loops=nan.*whole numbers"),
    ({"loops": float("inf")}, "loops=inf"),
    ({"loops": 2.5}, "loops=2.5"),
    ({"loops": True}, "loops=True"),
    ({"warmup": None}, "warmup=None"),
    ({"loops": "3"}, "loops='3'"),
])
def test_a_runtime_without_a_memory_term_or_no_loops_is_refused(kwargs, message):
    with pytest.raises(edgeprof.Error, match=message):
        edgeprof.nn.memory_intensity(object(), None, **kwargs)


def test_numpy_whole_numbers_are_counts(monkeypatch):
    import numpy as np
    monkeypatch.setitem(sys.modules, "torch", None)  # past the counts' check: PyTorch's
    with pytest.raises(edgeprof.Error, match="needs PyTorch"):
        edgeprof.nn.memory_intensity(object(), None, loops=np.int64(3), warmup=np.int32(1))


def test_a_memory_intensity_of_no_time_is_refused():
    with pytest.raises(edgeprof.Error, match="give a positive time"):
        edgeprof.nn.MemoryIntensity("pytorch", 1.0, 0.0, 10)  # mb_per_ms divided by zero


def test_the_runner_is_installed_as_a_module_of_the_package():
    # What memory_intensity counts and times with (python/CMakeLists.txt installs it).
    spec = importlib.util.find_spec("edgeprof._torch_runner")
    assert spec is not None and spec.origin.endswith("_torch_runner.py")
    assert "def activation_mb(" in Path(spec.origin).read_text()


def test_the_figure_is_the_count_over_the_time():
    m = edgeprof.nn.MemoryIntensity("pytorch", activation_mb=30.0, host_ms=60.0, loops=10)
    assert m.mb_per_ms == 0.5
    assert "0.5 MB/ms with pytorch" in str(m) and "median of 10" in str(m)
    assert "page faults" not in str(m)
    # A process whose allocator hands memory back: said, with the variables that stop it.
    faulty = edgeprof.nn.MemoryIntensity("pytorch", 30.0, 60.0, 10, page_faults=3500.0)
    assert "3500 page faults per inference" in str(faulty)
    assert "MALLOC_MMAP_THRESHOLD_=33554432" in str(faulty)
    assert edgeprof.emulation.STEADY_MALLOC_ENV == {"MALLOC_MMAP_THRESHOLD_": "33554432",
                                                    "MALLOC_TRIM_THRESHOLD_": "67108864"}


REAL = textwrap.dedent("""
    import os, torch, torchvision, edgeprof
    from edgeprof import nn
    model = torchvision.models.resnet18(weights=None).train()
    x = torch.randn(1, 3, 224, 224)
    threads, cpus = torch.get_num_threads(), os.sched_getaffinity(0)
    r = nn.memory_intensity(model, x, warmup=1, loops=2)
    assert model.training  # its mode put back
    # ResNet-18 at 224x224 in fp32: about 30 MB written by its layers (the runner counted
    # 29.9 MB of timm's on 2026-12-04).
    assert 20 < r.activation_mb < 40, r
    assert r.host_ms > 0 and r.mb_per_ms == r.activation_mb / r.host_ms, r
    assert torch.get_num_threads() == threads and os.sched_getaffinity(0) == cpus
    # Started with STEADY_MALLOC_ENV (as the test does): no inference hands memory back.
    v2 = nn.memory_intensity(torchvision.models.mobilenet_v2(weights=None), x, loops=3)
    assert v2.page_faults == 0, v2
    o = nn.memory_intensity(model, (x,), runtime="onnxruntime", warmup=1, loops=2)
    # By the ONNX Runtime rating's graph rule: its exported graph's nodes (torchvision's
    # ResNet-18 23 MB here, ONNX Runtime 1.32, 2026-12-05: its batch norms folded into the
    # convolutions by the export), not the PyTorch layers.
    assert o.runtime == "onnxruntime" and 15 < o.activation_mb < 30 and o.host_ms > 0, o
    assert o.activation_mb != r.activation_mb
    try:
        nn.memory_intensity(torch.jit.script(model), x)
    except edgeprof.Error as e:
        assert "TorchScript" in str(e), e
    else:
        raise SystemExit("a TorchScript model was not refused")
    # int8 counts its operators' outputs (the int8 rating's rule), TorchScript too: the eager
    # quantized model and its script alike.
    torch.backends.quantized.engine = "qnnpack"
    q = torchvision.models.quantization.shufflenet_v2_x0_5(weights=None, quantize=True).eval()
    eager = nn.memory_intensity(q, x, runtime="pytorch-int8", warmup=1, loops=2)
    scripted = nn.memory_intensity(torch.jit.script(q), x, runtime="pytorch-int8", warmup=1,
                                   loops=2)
    # ShuffleNet v2 x0.5 in int8: about 1.9 MB by its operators (1.93 on 2026-12-06), more than
    # its layers' 1.25 (the shuffles' copies and concatenations are operators, not layers).
    assert 1.5 < eager.activation_mb < 2.5, eager
    assert scripted.activation_mb == eager.activation_mb, (scripted, eager)
    class Boom(torch.nn.Module):  # counted, then fails while timed
        def __init__(self):
            super().__init__()
            self.conv, self.calls = torch.nn.Conv2d(3, 4, 3), 0
        def forward(self, x):
            self.calls += 1
            if self.calls > 1:
                raise RuntimeError("boom")
            return self.conv(x)
    boom = Boom()
    try:
        nn.memory_intensity(boom, x)
    except RuntimeError as e:
        assert "boom" in str(e), e
    else:
        raise SystemExit("the model's error was lost")
    assert boom.training and torch.get_num_threads() == threads
    assert os.sched_getaffinity(0) == cpus
    print("counted", r)
""")


@pytest.mark.skipif(not os.environ.get("EDGEPROF_TORCH_PYTHON"),
                    reason="set EDGEPROF_TORCH_PYTHON to an interpreter with torch, torchvision, "
                    "onnx and onnxruntime to count and time a real model")
def test_a_real_model_counted_and_timed_and_the_process_put_back(tmp_path):
    # This edgeprof, installed for this interpreter, on the other interpreter's path alone.
    (tmp_path / "edgeprof").symlink_to(Path(edgeprof.__file__).parent)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), **edgeprof.emulation.STEADY_MALLOC_ENV)
    done = subprocess.run([os.environ["EDGEPROF_TORCH_PYTHON"], "-c", REAL], capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MB/ms with pytorch" in done.stdout
