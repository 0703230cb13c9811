"""edgeprof's PyTorch/ONNX Runtime runner (src/nn/torch_runner.py) reading models exported
earlier: run under a slow emulated device it must neither export nor import PyTorch. The
runtimes themselves are optional and not installed for the tests: stand-ins on PYTHONPATH record
what the runner asked of them, and a `torch` that refuses to import proves it was not needed."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fake_onnxruntime
from conftest import HANG_S

RUNNER = Path(__file__).resolve().parents[2] / "src" / "nn" / "torch_runner.py"
if not RUNNER.is_file():  # the cgroup v2 VM gets tests/ without src/: these need no cgroup
    pytest.skip(f"no {RUNNER} here (the host's run of these tests has it)",
                allow_module_level=True)

# The stand-in ONNX Runtime (fake_onnxruntime.py), as a module's source.
FAKE_ORT = Path(fake_onnxruntime.__file__).read_text()
IMAGE = (1, 3, 224, 224)  # the input the runner feeds every model


def run_with_modules(tmp_path, modules, *args, env_extra=None):
    """The runner with stand-in modules (file name -> source) first on its path; they log to
    tmp_path/ort.log and tmp_path/torch.log."""
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    for name, source in modules.items():
        (fake / name).write_text(source)
    env = dict(os.environ, PYTHONPATH=str(fake), FAKE_ORT_LOG=str(tmp_path / "ort.log"),
               FAKE_ORT_SHAPE="x".join(map(str, IMAGE)),
               FAKE_TORCH_LOG=str(tmp_path / "torch.log"), **(env_extra or {}))
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True,
                          env=env, timeout=HANG_S, check=False)


def run_runner(tmp_path, *args):
    return run_with_modules(tmp_path, {
        "onnxruntime.py": FAKE_ORT,
        "torch.py": "raise ImportError('torch must not be imported here')\n"}, *args)


def test_exported_models_are_timed_without_pytorch(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("resnet18", "mobilenetv2_100"):
        (models / f"{name}.onnx").write_bytes(b"onnx")
    done = run_runner(tmp_path, str(models), "1", "3", "--threads=2", "--backend=onnxruntime",
                      "resnet18", "mobilenetv2_100")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("runtime ONNX Runtime 0.0-test") and "exported earlier" in lines[0]
    assert [line.split()[0] for line in lines[1:] if not line.startswith("cpu ")] == \
        ["resnet18", "mobilenetv2_100"]
    assert all(len(line.split()) == (3 if line.startswith("cpu ") else 4) for line in lines[1:])
    log = (tmp_path / "ort.log").read_text().splitlines()
    assert log == [f"{models}/resnet18.onnx threads=2 CPUExecutionProvider",
                   f"{models}/mobilenetv2_100.onnx threads=2 CPUExecutionProvider"]


def test_graph_activations_are_the_kernels_outputs_of_a_profiled_run(tmp_path):
    # Models exported earlier: each counted by a profiled session at one thread (its profile
    # removed after), then timed at the threads asked for.
    models = tmp_path / "models"
    models.mkdir()
    (models / "resnet18.onnx").write_bytes(b"onnx")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = run_with_modules(tmp_path, {"onnxruntime.py": FAKE_ORT,
                                       "torch.py": "raise ImportError('not here')\n"},
                            str(models), "0", "1", "--threads=2", "--backend=onnxruntime",
                            "--activations=graph", "resnet18", env_extra={"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    assert "activations resnet18 2.5" in done.stdout.splitlines()
    log = (tmp_path / "ort.log").read_text().splitlines()
    assert log[0] == f"{models}/resnet18.onnx threads=1 CPUExecutionProvider profiled disable_all"
    assert log[2] == f"{models}/resnet18.onnx threads=2 CPUExecutionProvider"
    # Profiled into a directory of its own under TMPDIR, removed with the profile.
    profile = Path(log[1].split()[1])
    assert profile.parent.parent == tmp and profile.parent.name.startswith("edgeprof-ort-")
    assert list(tmp.iterdir()) == []


def test_a_graph_whose_run_fails_leaves_no_profile_and_one_with_other_inputs_is_refused(
        tmp_path):
    runner = load_runner()
    import types
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    class Session:
        def __init__(self, source, options, providers):
            self.prefix, self.inputs = options.profile_file_prefix, source
        def get_inputs(self):
            return [types.SimpleNamespace(name=n) for n in self.inputs]
        def run(self, outputs, feed):
            raise RuntimeError("bad input")
        def end_profiling(self):
            path = self.prefix + "_1.json"
            Path(path).write_text("[]")
            return path

    ort = types.SimpleNamespace(
        SessionOptions=lambda: types.SimpleNamespace(),
        ExecutionMode=types.SimpleNamespace(ORT_SEQUENTIAL="s"),
        GraphOptimizationLevel=types.SimpleNamespace(ORT_DISABLE_ALL="d"),
        InferenceSession=Session)
    import tempfile
    old = tempfile.tempdir
    tempfile.tempdir = str(tmp)
    try:
        with pytest.raises(RuntimeError, match="bad input"):
            runner.ort_written_mb(["input"], ("x",), ort)
        with pytest.raises(ValueError, match="2 inputs \\(input, mask\\) for 1 given"):
            runner.ort_written_mb(["input", "mask"], ("x",), ort)
    finally:
        tempfile.tempdir = old
    assert list(tmp.iterdir()) == []


def test_graph_activations_are_onnxruntimes(tmp_path):
    done = run_runner(tmp_path, "-", "0", "1", "--activations=graph", "resnet18")
    assert done.returncode == 2
    assert "--activations=graph counts ONNX Runtime's kernels" in done.stderr


def load_runner():
    spec = importlib.util.spec_from_file_location("torch_runner", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_min_time_keeps_timing_and_mean_takes_the_mean(monkeypatch):
    # A clock that moves 50 ms at every reading: LOOPS 1 and --min-time 0.2 s time exactly two
    # inferences (the second starts 0.15 s after the first began, the third would start at 0.3).
    runner = load_runner()
    ticks = iter(range(1000))
    monkeypatch.setattr(runner.time, "perf_counter", lambda: 0.05 * next(ticks))
    times = runner.time_runs(lambda: None, 0, 1, 0.2)
    assert times == pytest.approx([50.0, 50.0])
    ticks = iter(range(1000))
    assert len(runner.time_runs(lambda: None, 0, 3, 0.0)) == 3
    assert runner.seconds("1e-05") == 1e-05 and runner.seconds("0") == 0.0
    for bad in ("x", "-1", "inf", "nan", ""):
        assert runner.seconds(bad) is None


def test_rounds_spread_every_models_timed_calls_over_passes_through_them_all():
    runner = load_runner()
    calls = []
    infers = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    times = runner.time_rounds(infers, 2, 4, 2)
    # First pass: each model's two warm-ups, then its two timed calls; the second pass warms
    # each up once (the others ran in between) and times two more.
    assert calls == ["a"] * 4 + ["b"] * 4 + ["a"] * 3 + ["b"] * 3
    assert [len(times["a"]), len(times["b"])] == [4, 4]
    # LOOPS not a multiple of the rounds: exactly LOOPS timed calls, the earlier passes one
    # more (here 2 then 1, and the second pass's re-warm-up).
    calls.clear()
    times = runner.time_rounds(infers, 0, 3, 2)
    assert len(times["a"]) == 3 and calls == ["a"] * 2 + ["b"] * 2 + ["a"] * 2 + ["b"] * 2
    # Fewer LOOPS than rounds: one pass per timed call, never a pass that times none.
    calls.clear()
    times = runner.time_rounds(infers, 1, 2, 8)
    assert len(times["a"]) == 2 and calls == ["a"] * 2 + ["b"] * 2 + ["a"] * 2 + ["b"] * 2


def test_each_model_reports_its_cpu_time_per_inference(monkeypatch, capsys):
    # A CPU clock that moves 2 ms at every reading: each timed call (not the warm-ups) reads it
    # twice, 2 ms of CPU each.
    runner = load_runner()
    ticks = iter(range(1000))
    monkeypatch.setattr(runner.time, "process_time", lambda: 0.002 * next(ticks))
    cpu = []
    runner.time_runs(lambda: None, 2, 3, 0.0, cpu)
    assert cpu == pytest.approx([2.0, 2.0, 2.0])
    cpu = {}
    times = runner.time_rounds({"a": lambda: None, "b": lambda: None}, 1, 4, 2, 0.0, cpu)
    assert [len(cpu["a"]), len(cpu["b"])] == [len(times["a"]), len(times["b"])] == [4, 4]
    # The same centre as the model's time: the mean with --mean, else the median.
    runner.report("m", [1.0, 2.0, 6.0], True, [1.0, 1.0, 4.0])
    runner.report("m", [1.0, 2.0, 6.0], False, [1.0, 1.0, 4.0])
    # A clock too coarse to see a call, or none: no cpu line.
    runner.report("m", [1.0], False, [0.0])
    runner.report("m", [1.0])
    assert capsys.readouterr().out.splitlines() == [
        "m 3.0000 1.0000 6.0000", "cpu m 2.0000", "m 2.0000 1.0000 6.0000", "cpu m 1.0000",
        "m 1.0000 1.0000 1.0000", "m 1.0000 1.0000 1.0000"]


def test_rounds_split_min_time_between_the_passes(monkeypatch):
    # The ratings' way (--rounds=8 --min-time=2): each pass times a model for its part of
    # --min-time. A clock that moves 50 ms at every reading: 0.2 s a pass times two calls a pass
    # (0.4 s in one pass would time three).
    runner = load_runner()
    ticks = iter(range(1000))
    monkeypatch.setattr(runner.time, "perf_counter", lambda: 0.05 * next(ticks))
    calls = []
    infers = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    times = runner.time_rounds(infers, 0, 2, 2, 0.4)
    assert [len(times["a"]), len(times["b"])] == [4, 4]
    # The second pass warms each model up once before its timed calls.
    assert calls == ["a"] * 2 + ["b"] * 2 + ["a"] * 3 + ["b"] * 3


def test_rounds_on_the_command_line(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("resnet18", "mobilenetv2_100"):
        (models / f"{name}.onnx").write_bytes(b"onnx")
    done = run_runner(tmp_path, str(models), "1", "4", "--backend=onnxruntime", "--rounds=2",
                      "resnet18", "mobilenetv2_100")
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [w[0] for w in lines if w[0] != "cpu"] == ["resnet18", "mobilenetv2_100"]
    # Each model's CPU time per inference, where the clock saw any, after its own line.
    assert all(w[1] in ("resnet18", "mobilenetv2_100") and float(w[2]) > 0
               for w in lines if w[0] == "cpu")
    # Both sessions opened before any is timed; per model 1 warm-up, 2 x 2 timed, 1 re-warm,
    # each pass through both models in turn (each call runs its own model's session).
    assert len((tmp_path / "ort.log").read_text().splitlines()) == 2
    runs = (tmp_path / "ort.log.runs").read_text().splitlines()
    assert runs == ([f"run resnet18.onnx {IMAGE}"] * 3
                    + [f"run mobilenetv2_100.onnx {IMAGE}"] * 3) * 2
    for bad in ("0", "x", ""):
        done = run_runner(tmp_path, str(models), "0", "1", "--backend=onnxruntime",
                          f"--rounds={bad}", "resnet18")
        assert done.returncode == 2 and f"unknown option --rounds={bad}" in done.stderr
    # No timed inference: refused (statistics of nothing failed before).
    done = run_runner(tmp_path, str(models), "0", "0", "--backend=onnxruntime", "resnet18")
    assert done.returncode == 2 and "give WARMUP >= 0 and LOOPS >= 1" in done.stderr


def test_min_time_and_mean_on_the_command_line(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "resnet18.onnx").write_bytes(b"onnx")
    done = run_runner(tmp_path, str(models), "0", "3", "--backend=onnxruntime",
                      "--min-time=0.01", "--mean", "resnet18")
    assert done.returncode == 0, done.stderr
    name, centre, low, high = done.stdout.splitlines()[1].split()
    assert name == "resnet18" and float(low) <= float(centre) <= float(high)
    assert len((tmp_path / "ort.log.runs").read_text().splitlines()) >= 3
    done = run_runner(tmp_path, str(models), "0", "1", "--backend=onnxruntime", "--min-time=x",
                      "resnet18")
    assert done.returncode == 2 and "unknown option --min-time=x" in done.stderr


def test_a_missing_export_falls_back_to_pytorch(tmp_path):
    # One model's file is missing: the runner builds the models with PyTorch (refused here).
    models = tmp_path / "models"
    models.mkdir()
    (models / "resnet18.onnx").write_bytes(b"onnx")
    done = run_runner(tmp_path, str(models), "1", "3", "--backend=onnxruntime", "resnet18",
                      "vgg13")
    assert done.returncode == 3
    assert "has no exported vgg13 (--export)" in done.stderr
    assert "PyTorch is not installed" in done.stderr and "pip install torch" in done.stderr


def test_export_needs_onnxruntime_and_a_folder(tmp_path):
    for args in (["-", "0", "0", "--backend=onnxruntime", "--export", "resnet18"],
                 [str(tmp_path), "0", "0", "--export", "resnet18"]):
        done = run_runner(tmp_path, *args)
        assert done.returncode == 2
        assert "--export needs --backend=onnxruntime or --precision=int8, and a folder" \
            in done.stderr


FAKE_TORCH = textwrap.dedent("""
    import contextlib, os
    __version__ = "0.0-test"
    def _log(text):
        with open(os.environ["FAKE_TORCH_LOG"], "a") as log:
            log.write(text + "\\n")
    class _Quantized:
        supported_engines = ["none", "qnnpack"]
        def __setattr__(self, name, value):
            _log(f"engine={value}")
            object.__setattr__(self, name, value)
    class backends:
        quantized = _Quantized()
    class _Model:
        def __init__(self, path):
            self.path = path
        def eval(self):
            return self
        def __call__(self, x):
            _log(f"call {os.path.basename(self.path)}")
            return x
    class jit:
        @staticmethod
        def load(path):
            _log(f"load {path}")
            return _Model(path)
    def set_num_threads(n):
        _log(f"threads={n}")
    def set_num_interop_threads(n):
        pass
    def manual_seed(n):
        pass
    def randn(*shape):
        return shape
    def inference_mode():
        return contextlib.nullcontext()
""")


def run_runner_with_torch(tmp_path, *args):
    return run_with_modules(tmp_path, {
        "torch.py": FAKE_TORCH, "torchvision.py": "__version__ = '0.0-test'\n",
        "timm.py": "raise ImportError('no timm')\n"}, *args)


def test_int8_models_quantized_earlier_are_loaded_with_qnnpack_set_first(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("resnet18", "shufflenet_v2_x0_5"):
        (models / f"{name}.int8.pt").write_bytes(b"torchscript")
    done = run_runner_with_torch(tmp_path, str(models), "1", "2", "--threads=1",
                                 "--precision=int8", "resnet18", "shufflenet_v2_x0_5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("runtime PyTorch 0.0-test int8 qnnpack TorchScript")
    assert [line.split()[0] for line in lines[1:] if not line.startswith("cpu ")] == \
        ["resnet18", "shufflenet_v2_x0_5"]
    log = (tmp_path / "torch.log").read_text().splitlines()
    # The engine before any model is loaded (weights are packed for the engine in force).
    # Without --rounds each model is loaded and timed (1 warm-up, 2 timed) before the next.
    assert log == ["threads=1", "engine=qnnpack", f"load {models}/resnet18.int8.pt",
                   *["call resnet18.int8.pt"] * 3, f"load {models}/shufflenet_v2_x0_5.int8.pt",
                   *["call shufflenet_v2_x0_5.int8.pt"] * 3]


def test_int8_models_in_rounds_are_all_loaded_then_timed_in_turn(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("resnet18", "shufflenet_v2_x0_5"):
        (models / f"{name}.int8.pt").write_bytes(b"torchscript")
    done = run_runner_with_torch(tmp_path, str(models), "1", "2", "--precision=int8",
                                 "--rounds=2", "resnet18", "shufflenet_v2_x0_5")
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[1:]
            if not line.startswith("cpu ")] == ["resnet18", "shufflenet_v2_x0_5"]
    log = (tmp_path / "torch.log").read_text().splitlines()
    loads = [f"load {models}/resnet18.int8.pt", f"load {models}/shufflenet_v2_x0_5.int8.pt"]
    assert log[:4] == ["threads=1", "engine=qnnpack", *loads]
    # Two passes of one timed call each; each model's calls are its own.
    one = ["call resnet18.int8.pt"] * 2 + ["call shufflenet_v2_x0_5.int8.pt"] * 2
    assert log[4:] == one * 2


def test_an_unknown_int8_model_is_refused_naming_the_quantizable_ones(tmp_path):
    package = tmp_path / "fake" / "torchvision" / "models"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("__version__ = '0.0-test'\n")
    (package / "__init__.py").write_text("")
    (package / "quantization.py").write_text(
        "def resnet18(**kw): pass\ndef shufflenet_v2_x0_5(**kw): pass\n"
        "class QuantizableResNet: pass\n")
    done = run_with_modules(tmp_path, {"torch.py": FAKE_TORCH,
                                       "timm.py": "raise ImportError('no timm')\n"},
                            "-", "0", "1", "--precision=int8", "vgg16")
    assert done.returncode == 4, done.stderr
    assert ("torchvision.models.quantization has no model named vgg16; it has resnet18, "
            "shufflenet_v2_x0_5 (torchvision 0.0-test)") in done.stderr
    assert "newer torchvision" not in done.stderr


def test_int8_is_pytorchs_and_export_needs_a_folder(tmp_path):
    done = run_runner(tmp_path, "-", "0", "1", "--precision=int8", "--backend=onnxruntime",
                      "resnet18")
    assert done.returncode == 2 and "--precision=int8 is PyTorch's" in done.stderr
    done = run_runner(tmp_path, "-", "0", "0", "--precision=int8", "--export", "resnet18")
    assert done.returncode == 2 and "and a folder (DIR)" in done.stderr
    done = run_runner(tmp_path, "-", "0", "1", "--precision=fp16", "resnet18")
    assert done.returncode == 2 and "unknown option --precision=fp16" in done.stderr


@pytest.mark.skipif(not os.environ.get("EDGEPROF_TORCH_PYTHON"),
                    reason="set EDGEPROF_TORCH_PYTHON to an interpreter with torch and "
                    "torchvision to quantize a real model")
def test_a_real_model_quantized_exported_and_loaded(tmp_path):
    python = os.environ["EDGEPROF_TORCH_PYTHON"]
    export = subprocess.run([python, str(RUNNER), str(tmp_path), "0", "0", "--precision=int8",
                             "--export", "shufflenet_v2_x0_5"], capture_output=True, text=True,
                            timeout=300, check=False)
    assert export.returncode == 0, export.stderr
    saved = tmp_path / "shufflenet_v2_x0_5.int8.pt"
    assert saved.is_file() and f"exported shufflenet_v2_x0_5 {saved}" in export.stdout
    timed = subprocess.run([python, str(RUNNER), str(tmp_path), "1", "2", "--precision=int8",
                            "shufflenet_v2_x0_5"], capture_output=True, text=True, timeout=300,
                           check=False)
    assert timed.returncode == 0, timed.stderr
    name, centre, low, high = timed.stdout.splitlines()[1].split()
    assert name == "shufflenet_v2_x0_5" and 0 < float(low) <= float(centre) <= float(high)


@pytest.mark.skipif(not os.environ.get("EDGEPROF_TORCH_PYTHON"),
                    reason="set EDGEPROF_TORCH_PYTHON to an interpreter with torch, torchvision "
                    "and timm to build a real model")
def test_a_real_fp32_model_reports_its_activations(tmp_path):
    python = os.environ["EDGEPROF_TORCH_PYTHON"]
    done = subprocess.run([python, str(RUNNER), "-", "0", "1", "--activations", "resnet18"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    words = next(line for line in done.stdout.splitlines()
                 if line.startswith("activations ")).split()
    # ResNet-18 at 224x224 in fp32: 29.9 MB here (2026-12-04); its placeholder layers (timm's
    # drop_block, aa: Identity) write nothing (counted, they made it 35.9).
    assert words[1] == "resnet18" and 20 < float(words[2]) < 40
    assert any(line.startswith("resnet18 ") for line in done.stdout.splitlines())
    # By the graph rule, the exported graph's nodes: 35.5 MB here (ONNX Runtime 1.32,
    # 2026-12-05), not the layers' 29.9 (the export folds the batch norms into the
    # convolutions; the residual additions, functional in PyTorch, are nodes).
    graph = subprocess.run([python, str(RUNNER), "-", "0", "1", "--backend=onnxruntime",
                            "--activations=graph", "resnet18"],
                           capture_output=True, text=True, timeout=300, check=False)
    assert graph.returncode == 0, graph.stderr
    graph_words = next(line for line in graph.stdout.splitlines()
                       if line.startswith("activations ")).split()
    assert graph_words[1] == "resnet18" and 30 < float(graph_words[2]) < 45
    # Without --activations, no count (and no inference more).
    done = subprocess.run([python, str(RUNNER), "-", "0", "1", "resnet18"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0 and "activations" not in done.stdout
