"""edgeprof's activation counter (src/nn/activation_counter.py), which a slice that counts
activations puts on a workload's PYTHONPATH as sitecustomize.py: it takes itself off the path,
runs the environment's own sitecustomize, and in a workload that imports PyTorch counts its
model's activations and CPU time per inference, reported on the phase channel. PyTorch is
optional and not installed for the tests: a stand-in `torch` runs modules and hooks as
PyTorch's Module.__call__ does; with EDGEPROF_TORCH_PYTHON set the real one is counted too."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fake_onnxruntime

SRC = Path(__file__).resolve().parents[2] / "src" / "nn"
if not (SRC / "activation_counter.py").is_file():  # the v2 VM gets tests/ without src/
    pytest.skip(f"no {SRC} here (the host's run of these tests has it)",
                allow_module_level=True)

# A stand-in for PyTorch: tensors of a size, modules whose calls run the global hooks and their
# own around forward() as PyTorch's Module._call_impl does: pre-hooks and forward hooks from a
# copy of their tables, and where the call raised, the always_call forward hooks that have not
# run yet from the live tables (so that a hook that removes one there fails as in PyTorch).
FAKE_TORCH = textwrap.dedent("""
    import itertools, types
    _ptrs = itertools.count(1)

    class Tensor:
        def __init__(self, n, quantized=False):
            self.n, self.ptr, self.shape = n, next(_ptrs), (n,)
            self.is_quantized = quantized
            self.dtype = "quint8" if quantized else "float32"
        def numel(self):
            return self.n
        def element_size(self):
            return 1 if self.is_quantized else 4
        def data_ptr(self):
            return self.ptr
        def untyped_storage(self):
            return types.SimpleNamespace(data_ptr=lambda: self.ptr)

    # Operators as PyTorch dispatches them: through the innermost dispatch mode entered
    # (torch.utils._python_dispatch.TorchDispatchMode, MODES), with a schema that says whether
    # it writes an input.
    MODES = []
    class _Op:
        def __init__(self, out, writes):
            self.out = out
            self._schema = types.SimpleNamespace(arguments=[types.SimpleNamespace(
                alias_info=types.SimpleNamespace(is_write=True) if writes else None)])
        def __call__(self, *args, **kwargs):
            return self.out
    def _dispatch(x, out, writes):
        op = _Op(out, writes)
        if not MODES:
            return op(x)
        mode = MODES.pop()  # the mode runs its operator outside itself, as PyTorch's
        try:
            return mode.__torch_dispatch__(op, (Tensor,), (x,), {})
        finally:
            MODES.append(mode)

    class _Handle:
        def __init__(self, table, key):
            self.table, self.key = table, key
        def remove(self):
            self.table.pop(self.key, None)

    _keys = itertools.count()
    ALWAYS = set()  # the keys of always_call forward hooks
    def _add(table, hook, always_call=False):
        key = next(_keys)
        table[key] = hook
        if always_call:
            ALWAYS.add(key)
        return _Handle(table, key)

    def _first(table, handle, prepend):
        if prepend:  # to the front, as PyTorch's move_to_end(last=False)
            hook = table.pop(handle.key)
            rest = dict(table)
            table.clear()
            table[handle.key] = hook
            table.update(rest)
        return handle

    PRE, POST = {}, {}
    GRAD = [True]  # autograd on, as in PyTorch

    def is_grad_enabled():
        return GRAD[-1]
    def set_grad_enabled(on):
        GRAD.append(on)

    class _Weight:
        def __init__(self, device):
            self.device = types.SimpleNamespace(type=device)
            self.requires_grad = True

    THREADS = [4]  # PyTorch's thread count, each set after the first
    FIXED = []  # a count set_num_threads cannot change (PyTorch's own pool, once it ran)

    def get_num_threads():
        return FIXED[0] if FIXED else THREADS[-1]
    def set_num_threads(n):
        THREADS.append(n)
    def register_module_forward_pre_hook(hook):
        return _add(PRE, hook)
    def register_module_forward_hook(hook, always_call=False):
        assert always_call  # the counter needs it (PyTorch 2.1 and later)
        return _add(POST, hook, always_call)

    nn = types.SimpleNamespace(modules=types.SimpleNamespace(module=types.SimpleNamespace(
        register_module_forward_pre_hook=register_module_forward_pre_hook,
        register_module_forward_hook=register_module_forward_hook)))

    class Module:
        def __init__(self, *children, out=0, inplace=False, weights=False, quantized=False,
                     view=False, fails=False):
            self._children, self.out, self.inplace = list(children), out, inplace
            self.quantized, self.view, self.fails = quantized, view, fails
            self.weights = [_Weight("cpu")] if weights else []
            self.pre, self.post = {}, {}
            self.training = True  # as PyTorch's modules start
        def train(self, mode=True):
            self.training = mode
            for c in self._children:
                c.train(mode)
            return self
        def eval(self):
            return self.train(False)
        def to(self, device):
            for w in self.parameters():
                w.device.type = device
            return self
        def children(self):
            return iter(self._children)
        def modules(self):
            yield self
            for c in self._children:
                yield from c.modules()
        def parameters(self):
            return itertools.chain(self.weights, *(c.parameters() for c in self._children))
        def register_forward_pre_hook(self, hook, prepend=False):
            return _first(self.pre, _add(self.pre, hook), prepend)
        def register_forward_hook(self, hook, prepend=False, always_call=False):
            return _first(self.post, _add(self.post, hook, always_call), prepend)
        def forward(self, x):
            if self._children:
                for c in self._children:
                    x = c(x)
                return x
            if self.fails:
                raise ValueError("the workload's own error")
            if self.view:  # a view of its input (reshape, flatten): its storage, no write
                return _dispatch(x, x, False)
            return _dispatch(x, x if self.inplace else Tensor(self.out, self.quantized),
                             self.inplace)
        def __call__(self, x):
            result, called = None, set()
            try:
                for h in (*PRE.values(), *self.pre.values()):
                    h(self, (x,))
                result = self.forward(x)
                for key, h in (*POST.items(), *self.post.items()):
                    if key in ALWAYS:
                        called.add(key)
                    replaced = h(self, (x,), result)
                    if replaced is not None:  # a hook's own output replaces the call's
                        result = replaced
                return result
            except Exception:
                for table in (POST, self.post):
                    for key, h in table.items():  # the live table, as PyTorch's
                        if key in ALWAYS and key not in called:
                            try:
                                h(self, (x,), result)
                            except Exception:
                                pass
                raise
    nn.Module = Module

    class ObserverBase(Module):  # what quantizing puts in a model to calibrate it
        pass

    class ScriptModule(Module):  # TorchScript; frozen, it has no children
        pass

    ao = types.SimpleNamespace(quantization=types.SimpleNamespace(ObserverBase=ObserverBase))
    jit = types.SimpleNamespace(ScriptModule=ScriptModule)
""")

# torch.utils._python_dispatch of the stand-in: a mode entered goes on torch.MODES.
FAKE_DISPATCH = textwrap.dedent("""
    import torch

    class TorchDispatchMode:
        def __enter__(self):
            torch.MODES.append(self)
            return self
        def __exit__(self, *exc):
            torch.MODES.remove(self)
""")

# A workload that infers (autograd off): transforms called alone (without weights: not the
# model), then a model of three layers (one in place) called eight times; prints what is left
# hooked and its PYTHONPATH.
WORKLOAD = textwrap.dedent("""
    import os, sys
    import torch
    torch.set_grad_enabled(False)
    normalize = torch.Module(torch.Module(out=10))  # a Sequential of transforms, say
    model = torch.Module(torch.Module(out=1000, weights=True), torch.Module(inplace=True),
                         torch.Module(torch.Module(out=250, weights=True)))
    for _ in range(8):
        model(normalize(torch.Tensor(10)))
    left = len(torch.PRE) + len(torch.POST) + len(model.pre) + len(model.post)
    print("hooks", left)
    print("path", os.environ.get("PYTHONPATH", "-"))
    print("counter", any(os.path.basename(p).startswith("counter") for p in sys.path))
""")


def _counter_dir(tmp_path: Path) -> Path:
    d = tmp_path / "counter"
    d.mkdir()
    shutil.copy(SRC / "activation_counter.py", d / "sitecustomize.py")
    shutil.copy(SRC / "torch_runner.py", d / "torch_runner.py")
    return d


def _run(python: str, tmp_path: Path, code: str, pythonpath: list[Path], channel: bool = True,
         runtimes: str | None = None):
    """Runs `code` in `tmp_path` with the counter first on PYTHONPATH and, with `channel`, a
    phase channel, the slice counting `runtimes` (EDGEPROF_COUNT_RUNTIMES; None: unset), no
    memory limit: (its stdout, what arrived on the channel)."""
    read, write = os.pipe()
    try:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "EDGEPROF_PHASE_FD", "EDGEPROF_COUNT_RUNTIMES",
                            "EDGEPROF_COUNT_MEMORY_BYTES", "EDGEPROF_COUNT_MEMORY_USAGE",
                            "EDGEPROF_COUNT_MEMORY_STAT")}
        if runtimes is not None:
            env["EDGEPROF_COUNT_RUNTIMES"] = runtimes
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
        if channel:
            env["EDGEPROF_PHASE_FD"] = f"{write}:{os.fstat(write).st_ino}"
        out = subprocess.run([python, "-c", code], env=env, pass_fds=(write,), text=True,
                             cwd=tmp_path,
                             capture_output=True, timeout=300, check=False)
        os.close(write)
        write = -1
        marks = b""
        while chunk := os.read(read, 4096):
            marks += chunk
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    assert out.returncode == 0, out.stderr
    return out.stdout, marks.decode()


def _fake_torch(tmp_path: Path) -> Path:
    d = tmp_path / "fake"
    (d / "torch").mkdir(parents=True)
    (d / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (d / "torch" / "utils").mkdir()
    (d / "torch" / "utils" / "__init__.py").write_text("")
    (d / "torch" / "utils" / "_python_dispatch.py").write_text(FAKE_DISPATCH)
    return d

def _run_fake(tmp_path: Path, code: str):
    """_run with the counter and the stand-in PyTorch on PYTHONPATH, and a phase channel."""
    return _run(sys.executable, tmp_path, code, [_counter_dir(tmp_path), _fake_torch(tmp_path)])


def test_the_model_is_counted_once_then_timed_and_the_hooks_go(tmp_path):
    counter = _counter_dir(tmp_path)
    out, marks = _run(sys.executable, tmp_path, WORKLOAD, [counter, _fake_torch(tmp_path)])
    # One count: the model's leaves wrote 1000 + 250 floats and the in-place one its input
    # (1000) over; the transform called alone is no model, and was not counted in.
    [line] = marks.splitlines()
    stamp, kind, mb, cpu_ms, calls = line.split()
    assert int(stamp) > 0 and kind == "A" and calls == "5"
    assert float(mb) == pytest.approx(2250 * 4 / 1e6)
    assert float(cpu_ms) > 0
    # Every hook removed, the counter's directory off sys.path and PYTHONPATH.
    assert "hooks 0" in out
    assert f"path {tmp_path / 'fake'}" in out
    assert "counter False" in out


def test_a_model_called_too_few_times_is_not_reported(tmp_path):
    few = WORKLOAD.replace("range(8)", "range(5)")
    _, marks = _run_fake(tmp_path, few)
    assert marks == ""


def test_without_a_model_the_hooks_go_after_a_while(tmp_path):
    # Only modules without weights: nothing to count, and the global hooks do not stay.
    code = WORKLOAD.replace("model(normalize(", "normalize(normalize(").replace(
        "range(8)", "range(40)")
    out, marks = _run_fake(tmp_path, code)
    assert marks == "" and "hooks 0" in out


def test_a_model_that_fails_is_not_counted_and_the_next_call_is(tmp_path):
    # The first call raises inside a layer (the hooks that close it and its model run anyway,
    # given None): nothing counted for it, and the depth is right for the next.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        class Boom(torch.Module):
            def forward(self, x):
                raise ValueError("boom")
        try:
            torch.Module(Boom(), weights=True)(torch.Tensor(10))
        except ValueError:
            pass
        for _ in range(8):""").strip("\n"))
    out, marks = _run_fake(tmp_path, code)
    [line] = marks.splitlines()
    assert float(line.split()[2]) == pytest.approx(2250 * 4 / 1e6)


def test_the_rest_of_pythonpath_is_left_as_it_was(tmp_path):
    counter = _counter_dir(tmp_path)
    code = "import os; print(repr(os.environ.get('PYTHONPATH')))"
    for given, left in ((f"{counter}", "None"), (f"{counter}:", "''"),
                        (f"{counter}::/a", "':/a'")):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = given
        out = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                             capture_output=True, check=True).stdout
        assert out.strip() == left, given


def test_outside_a_slice_nothing_is_watched_and_the_environments_own_sitecustomize_runs(
        tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.OWN_SITE = True\n")
    code = ("import sys, builtins; print(getattr(builtins, 'OWN_SITE', False), "
            "[type(f).__name__ for f in sys.meta_path])")
    counter = _counter_dir(tmp_path)
    out, marks = _run(sys.executable, tmp_path, code, [counter, own], channel=False)
    assert out.startswith("True") and "'_Watch'" not in out and marks == ""
    out, _ = _run(sys.executable, tmp_path, code, [counter, own])
    assert out.startswith("True") and out.count("'_Watch'") == 1  # PyTorch's alone
    out, _ = _run(sys.executable, tmp_path, code, [counter, own], runtimes="onnxruntime")
    assert out.count("'_Watch'") == 1
    out, _ = _run(sys.executable, tmp_path, code, [counter, own], runtimes="pytorch,onnxruntime")
    assert out.count("'_Watch'") == 2


@pytest.mark.skipif(not os.environ.get("EDGEPROF_TORCH_PYTHON"),
                    reason="set EDGEPROF_TORCH_PYTHON to a Python with torch and torchvision")
def test_a_real_model_counts_what_the_rating_counts(tmp_path):
    code = textwrap.dedent(f"""
        import importlib.util, torch, torchvision
        torch.manual_seed(0)
        model = torchvision.models.mobilenet_v2().eval()
        x = torch.rand(1, 3, 224, 224)
        with torch.inference_mode():
            for _ in range(8):
                model(x)
        spec = importlib.util.spec_from_file_location("runner", {str(SRC / 'torch_runner.py')!r})
        runner = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(runner)
        print(runner.activation_mb(model, x, torch))
    """)
    out, marks = _run(os.environ["EDGEPROF_TORCH_PYTHON"], tmp_path, code,
                      [_counter_dir(tmp_path)])
    [line] = marks.splitlines()
    _, kind, mb, cpu_ms, calls = line.split()
    assert kind == "A" and calls == "5" and float(cpu_ms) > 0
    assert float(mb) == pytest.approx(float(out.split()[-1]), rel=1e-5)  # printed to 6 digits


# An int8 workload: layers called alone (more than GIVE_UP), a transform in fp32, then a
# quantized model without weights of its own (as
# a quantized or TorchScript model shows none) called eight times.
INT8_WORKLOAD = textwrap.dedent("""
    import threading
    import torch
    torch.set_grad_enabled(False)
    observer = torch.Module(out=3)  # a layer called alone, as quantizing calls observers
    for _ in range(40):
        observer(torch.Tensor(3))
    normalize = torch.Module(torch.Module(out=10))
    model = torch.Module(torch.Module(out=1000, quantized=True), torch.Module(inplace=True),
                         torch.Module(view=True),
                         torch.Module(torch.Module(out=250, quantized=True)))
    for _ in range(CALLS):
        model(normalize(torch.Tensor(10)))
    print("wrapped", torch.nn.Module.__call__.__name__ != "__call__")
    print("modes", len(torch.MODES), "threads", torch.get_num_threads())
    print("set to one", 1 in torch.THREADS)
""")


def test_an_int8_model_is_counted_by_its_operators_then_timed_and_the_wrapper_goes(tmp_path):
    out, marks = _run(sys.executable, tmp_path, INT8_WORKLOAD.replace("CALLS", "8"),
                      [_counter_dir(tmp_path), _fake_torch(tmp_path)], runtimes="pytorch-int8")
    # The quantized layers wrote 1000 + 250 bytes and the in-place one its input (1000) over;
    # the view wrote nothing; the fp32 transform ran no quantized operator: not the model, not
    # counted in.
    [line] = marks.splitlines()
    stamp, kind, mb, cpu_ms, calls, runtime = line.split()
    assert int(stamp) > 0 and kind == "A" and calls == "5" and runtime == "pytorch-int8"
    assert float(mb) == pytest.approx(2250 / 1e6)
    assert float(cpu_ms) > 0
    # Module.__call__ put back, no mode left entered, the timed calls at one thread and the
    # workload's thread count back.
    assert "wrapped False" in out
    assert "modes 0 threads 4" in out and "set to one True" in out


def test_an_int8_model_called_too_few_times_is_not_reported_and_fp32_is_not_counted(tmp_path):
    path = [_counter_dir(tmp_path), _fake_torch(tmp_path)]
    _, marks = _run(sys.executable, tmp_path, INT8_WORKLOAD.replace("CALLS", "5"), path,
                    runtimes="pytorch-int8")
    assert marks == ""
    # A model of fp32 layers in a slice that counts int8: nothing, and the wrapper goes.
    fp32 = INT8_WORKLOAD.replace("CALLS", "40").replace("quantized=True", "weights=True")
    out, marks = _run(sys.executable, tmp_path, fp32, path, runtimes="pytorch-int8")
    assert marks == ""
    assert "wrapped False" in out and "modes 0" in out


def test_a_slice_that_counts_int8_does_not_hook_the_layers(tmp_path):
    # PyTorch's fp32 counter (its global hooks) is not set: the int8 count is by operators.
    code = INT8_WORKLOAD.replace("CALLS", "1") + "print('hooks', len(torch.PRE) + len(torch.POST))\n"
    out, _ = _run(sys.executable, tmp_path, code, [_counter_dir(tmp_path), _fake_torch(tmp_path)],
                  runtimes="pytorch-int8")
    assert "hooks 0" in out
    assert "wrapped True" in out  # not yet counted: the wrapper is still there


def _int8_count(tmp_path: Path, code: str) -> tuple[str, str]:
    """`code` (dedented) run with the stand-in PyTorch in a slice that counts int8: its stdout
    and the one count's MB as sent."""
    out, marks = _run(sys.executable, tmp_path, textwrap.dedent(code),
                      [_counter_dir(tmp_path), _fake_torch(tmp_path)], runtimes="pytorch-int8")
    [line] = marks.splitlines()
    assert line.split()[-1] == "pytorch-int8", line
    return out, line.split()[2]


def test_int8_calibration_a_frozen_model_and_an_error_do_not_stop_the_count(tmp_path):
    out, mb = _int8_count(tmp_path, """
        import torch
        torch.set_grad_enabled(False)
        # Calibrating: a model with an observer, called more than GIVE_UP times.
        calibrated = torch.Module(torch.Module(out=100, weights=True), torch.ObserverBase())
        for _ in range(40):
            calibrated(torch.Tensor(10))
        # A call that raised (the workload's error, kept), its mode left.
        try:
            torch.Module(torch.Module(fails=True))(torch.Tensor(10))
        except ValueError as e:
            print("kept", e)
        print("modes", len(torch.MODES))
        # A frozen TorchScript model (no children) that runs quantized operators.
        model = torch.ScriptModule(out=500, quantized=True)
        for _ in range(8):
            model(torch.Tensor(10))
    """)
    assert "kept the workload's own error" in out and "modes 0" in out
    assert mb == f"{500 / 1e6:.6g}"


def test_a_model_quantized_in_place_after_its_calibration_is_counted(tmp_path):
    # prepare() and convert(inplace=True) keep the model object: calibrated first (an observer
    # in it), then quantized, it is counted once it runs quantized operators.
    _, mb = _int8_count(tmp_path, """
        import torch
        torch.set_grad_enabled(False)
        model = torch.Module(torch.Module(out=100, weights=True), torch.ObserverBase())
        for _ in range(2):
            model(torch.Tensor(10))
        model._children[:] = [torch.Module(out=700, quantized=True)]
        for _ in range(8):
            model(torch.Tensor(10))
    """)
    assert mb == f"{700 / 1e6:.6g}"


@pytest.mark.skipif(not os.environ.get("EDGEPROF_TORCH_PYTHON"),
                    reason="set EDGEPROF_TORCH_PYTHON to a Python with torch and torchvision")
def test_a_real_int8_torchscript_model_counts_what_the_rating_counts(tmp_path):
    code = textwrap.dedent(f"""
        import importlib.util, warnings, torch, torchvision
        warnings.simplefilter("ignore")
        spec = importlib.util.spec_from_file_location("runner", {str(SRC / 'torch_runner.py')!r})
        runner = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(runner)
        torch.manual_seed(0)
        torch.backends.quantized.engine = "qnnpack"
        model = runner.build_int8("shufflenet_v2_x0_5", torch, torchvision)
        fresh = runner.build_int8("shufflenet_v2_x0_5", torch, torchvision)
        x = torch.rand(1, 3, 224, 224)
        with torch.inference_mode():
            for _ in range(8):
                model(x)
        print(type(model).__name__, runner.op_written_mb(fresh, x, torch))
    """)
    out, marks = _run(os.environ["EDGEPROF_TORCH_PYTHON"], tmp_path, code,
                      [_counter_dir(tmp_path)], runtimes="pytorch-int8")
    [line] = marks.splitlines()
    _, kind, mb, cpu_ms, calls, runtime = line.split()
    assert kind == "A" and calls == "5" and float(cpu_ms) > 0 and runtime == "pytorch-int8"
    kind, rated = out.split()[-2:]
    assert kind == "RecursiveScriptModule"  # TorchScript: its layers run no hooks
    assert float(mb) == pytest.approx(float(rated), rel=1e-5)  # printed to 6 digits


def test_a_look_up_of_torch_before_its_import_does_not_use_the_watch_up(tmp_path):
    # transformers, diffusers and lightning ask importlib whether torch is there first.
    code = "import importlib.util\nassert importlib.util.find_spec('torch')\n" + WORKLOAD
    _, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1


def test_a_forked_child_counts_nothing(tmp_path):
    # Forked while the hooks are on (after a transform's call, before the model's): the child
    # runs the model eight times too, and only the parent counts.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        normalize(torch.Tensor(10))
        child = os.fork()
        for _ in range(8):""").strip("\n")).replace(
        'print("hooks", left)', 'print("hooks", left)\nif child == 0: os._exit(0)\nos.waitpid(child, 0)')
    _, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1


def test_timed_calls_run_at_one_thread_and_the_workloads_count_comes_back(tmp_path):
    # The workload runs PyTorch at four threads; each of the five timed calls at one (the
    # rating's, timed by the calling thread's CPU time), its four back after each.
    code = WORKLOAD + 'print("threads", torch.THREADS)\n'
    out, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1
    assert f"threads {[4] + [1, 4] * 5}" in out


def test_calls_with_other_shapes_are_not_timed(tmp_path):
    # Counted at 10 values in; then called only at 20 (a batch of another size, say): no time
    # of the counted activations, so nothing reported, and the hooks go after a while.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        model(torch.Tensor(10))
        for _ in range(40):
            model(torch.Tensor(20))
        for _ in range(0):""").strip("\n"))
    out, marks = _run_fake(tmp_path, code)
    assert marks == "" and "hooks 0" in out


def test_a_model_compiled_by_torch_compile_is_not_counted(tmp_path):
    # torch.compile's OptimizedModule and Module.compile(): the global hooks go before the
    # first call runs, and no timing hooks are put on the model.
    for compiled in ("class OptimizedModule(torch.Module):\n    pass\n"
                     "OptimizedModule.__module__ = 'torch._dynamo.eval_frame'\n"
                     "model = OptimizedModule(model)",
                     "model._compiled_call_impl = object()"):
        code = WORKLOAD.replace("for _ in range(8):", compiled + textwrap.dedent("""
            model(torch.Tensor(10))
            print("after first", len(torch.PRE) + len(torch.POST) + len(model.pre) + len(model.post))
            for _ in range(8):""").rstrip("\n"))
        case = tmp_path / str(len(compiled))
        case.mkdir()
        out, marks = _run_fake(case, code)
        assert marks == "" and "after first 0" in out, compiled


def test_calls_with_other_shapes_between_are_passed_over(tmp_path):
    # Counted at 10 values in; then 20 and 10 by turns: the five at 10 are timed (the hooks go
    # at the call after).
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        model(torch.Tensor(10))
        for _ in range(6):
            model(torch.Tensor(20))
            model(torch.Tensor(10))
        for _ in range(0):""").strip("\n"))
    out, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1 and "hooks 0" in out


# A decoder whose first call (the prompt) makes 1000 values and the next ones (a token each) 10,
# on the same input, as the model.
DECODER = textwrap.dedent("""
    class Decoder(torch.Module):
        calls = 0
        def forward(self, x):
            Decoder.calls += 1
            return torch.Tensor(1000 if Decoder.calls == 1 else 10)
    model = torch.Module(Decoder(weights=True))
""").strip("\n")


def test_calls_with_other_outputs_are_not_timed(tmp_path):
    # The time of a token is not that of the prompt's activations.
    code = WORKLOAD.replace("for _ in range(8):", DECODER + "\nfor _ in range(8):")
    _, marks = _run_fake(tmp_path, code)
    assert marks == ""


def test_the_thread_count_comes_back_after_a_timed_call_that_raised(tmp_path):
    # The third call raises inside the model (its hooks run, given None): not timed, and the
    # workload's four threads come back; five more calls are timed.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        class Flaky(torch.Module):
            calls = 0
            def forward(self, x):
                Flaky.calls += 1
                if Flaky.calls == 3:
                    raise ValueError("flaky")
                return torch.Tensor(1000)
        model = torch.Module(Flaky(weights=True))
        for _ in range(8):
            try:
                model(torch.Tensor(10))
            except ValueError:
                print("threads then", torch.get_num_threads())
        for _ in range(0):""").strip("\n")) + 'print("threads", torch.THREADS)\n'
    out, marks = _run_fake(tmp_path, code)
    assert "threads then 4" in out
    assert len(marks.splitlines()) == 1
    assert f"threads {[4] + [1, 4] * 6}" in out  # five timed, and the one that raised


def test_a_workloads_hook_that_raises_keeps_its_error(tmp_path):
    # The workload's own forward hook on the model raises on the sixth call, after forward
    # returned: PyTorch then runs the counter's always_call hook from its live table, where the
    # fifth timed call must not remove hooks (a RuntimeError would replace the workload's).
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        calls = [0]
        def strict(module, args, output):
            calls[0] += 1
            if calls[0] == 6:
                raise ValueError("strict")
        model.register_forward_hook(strict)
        for i in range(8):
            try:
                model(normalize(torch.Tensor(10)))
            except ValueError:
                print("kept its error at", i)
        for _ in range(0):""").strip("\n"))
    out, marks = _run_fake(tmp_path, code)
    assert "kept its error at 5" in out
    assert len(marks.splitlines()) == 1 and "hooks 1" in out  # the workload's own


def test_where_one_thread_cannot_be_set_nothing_is_timed(tmp_path):
    # PyTorch's own pool keeps its count once it ran: set_num_threads(1) does not take, so the
    # calling thread's CPU time would be part of the work; nothing reported, the count kept.
    code = "import torch\ntorch.FIXED.append(4)\n" + WORKLOAD + 'print("threads", torch.THREADS)\n'
    out, marks = _run_fake(tmp_path, code)
    assert marks == "" and "hooks 0" in out
    assert "threads [4, 1, 4]" in out


def test_a_launcher_passes_the_counter_on_to_the_python_that_infers(tmp_path):
    # A Python that starts the one that imports PyTorch (poetry run, torchrun, a script): the
    # launcher leaves the counter on PYTHONPATH, the child counts, and takes it off for its own.
    code = textwrap.dedent(f"""
        import os, subprocess, sys
        fd = int(os.environ["EDGEPROF_PHASE_FD"].split(":")[0])
        subprocess.run([sys.executable, "-c", {WORKLOAD!r}], check=True, pass_fds=(fd,))
    """)
    out, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1
    assert "hooks 0" in out and f"path {tmp_path / 'fake'}" in out


def test_calls_with_other_outputs_end_the_timing_after_a_while(tmp_path):
    # Tokens after a prompt for good: each at one thread until the hooks give up, then the
    # workload's four threads for the rest.
    code = (WORKLOAD.replace("for _ in range(8):", DECODER + "\nfor _ in range(60):")
            + 'print("threads", torch.THREADS)\n')
    out, marks = _run_fake(tmp_path, code)
    assert marks == "" and "hooks 0" in out
    assert f"threads {[4] + [1, 4] * 3}" in out  # GIVE_UP_OUTPUTS in a row


def test_a_token_between_the_timed_calls_does_not_end_the_timing(tmp_path):
    # Other outputs twice, then the counted call's again: fewer than GIVE_UP_OUTPUTS in a row,
    # so the timing goes on and the five are reported.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        class Sometimes(torch.Module):
            calls = 0
            def forward(self, x):
                Sometimes.calls += 1
                return torch.Tensor(10 if Sometimes.calls in (3, 4, 6, 7) else 1000)
        model = torch.Module(Sometimes(weights=True))
        for _ in range(12):""").strip("\n"))
    _, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1


def test_a_training_step_is_not_counted_and_an_inference_after_it_is(tmp_path):
    # A model in training mode with autograd on (a training step's forward, of a model with
    # other activations) is passed over, as is one on a GPU; then a model in eval mode
    # (autograd still on) is counted.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        torch.set_grad_enabled(True)
        trainer = torch.Module(torch.Module(out=4000, weights=True))
        for _ in range(8):
            trainer(torch.Tensor(10))
        model.eval().to("cuda")
        for _ in range(8):
            model(torch.Tensor(10))
        model.to("cpu")
        for _ in range(8):""").strip("\n"))
    out, marks = _run_fake(tmp_path, code)
    [line] = marks.splitlines()
    assert float(line.split()[2]) == pytest.approx(2250 * 4 / 1e6)


def test_a_frozen_model_in_training_mode_is_counted(tmp_path):
    # Training mode and autograd on, but no weight asks for gradients (a frozen backbone):
    # no graph is kept, so it infers.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        torch.set_grad_enabled(True)
        for w in model.parameters():
            w.requires_grad = False
        for _ in range(8):""").strip("\n"))
    _, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1


def test_calls_that_do_not_infer_after_the_count_are_not_timed(tmp_path):
    # Counted in eval mode; then trained (training mode, autograd on), then moved to a GPU:
    # none of those calls is timed, and nothing is reported.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        model.eval()
        model(torch.Tensor(10))
        model.train()
        torch.set_grad_enabled(True)
        for _ in range(8):
            model(torch.Tensor(10))
        torch.set_grad_enabled(False)
        model.eval().to("cuda")
        for _ in range(8):""").strip("\n"))
    _, marks = _run_fake(tmp_path, code)
    assert marks == ""


def test_a_model_on_a_gpu_or_in_training_is_not_counted(tmp_path):
    for case, setup in (("training", "torch.set_grad_enabled(True)\n"),
                        ("gpu", "model.to('cuda')\n")):
        # (Forty calls outside any other: the hooks give up at GIVE_UP.)
        code = WORKLOAD.replace("for _ in range(8):", setup + "for _ in range(20):")
        (tmp_path / case).mkdir()
        out, marks = _run_fake(tmp_path / case, code)
        assert marks == "" and "hooks 0" in out, case


def test_a_workloads_hook_that_rewrites_the_output_does_not_stop_the_timing(tmp_path):
    # The workload's own forward hook replaces the model's output: the counter's hooks run
    # first, on the output as forward made it (as its count saw it).
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        model.register_forward_hook(lambda module, args, output: torch.Tensor(3))
        for _ in range(8):""").strip("\n"))
    out, marks = _run_fake(tmp_path, code)
    assert len(marks.splitlines()) == 1


def test_a_call_whose_end_was_lost_does_not_stop_the_count(tmp_path):
    # A KeyboardInterrupt in the model's forward runs no forward hook (PyTorch's exception
    # branch catches Exception only); the workload goes on, and its next calls are counted.
    code = WORKLOAD.replace("for _ in range(8):", textwrap.dedent("""
        class Stop(torch.Module):
            stopped = False
            def forward(self, x):
                if not Stop.stopped:
                    Stop.stopped = True
                    raise KeyboardInterrupt
                return torch.Tensor(1000)
        model = torch.Module(Stop(weights=True), torch.Module(torch.Module(out=250, weights=True)))
        try:
            model(torch.Tensor(10))
        except KeyboardInterrupt:
            pass
        for _ in range(8):""").strip("\n"))
    _, marks = _run_fake(tmp_path, code)
    [line] = marks.splitlines()
    assert float(line.split()[2]) == pytest.approx(1250 * 4 / 1e6)


def test_entries_the_workload_put_in_front_stay_when_the_counter_goes(tmp_path):
    counter = _counter_dir(tmp_path)
    code = ("import os\nos.environ['PYTHONPATH'] = '/mine' + os.pathsep + os.environ['PYTHONPATH']"
            "\n" + WORKLOAD)
    out, _ = _run(sys.executable, tmp_path, code, [counter, _fake_torch(tmp_path)])
    assert f"path /mine:{tmp_path / 'fake'}" in out



ORT_WORKLOAD = textwrap.dedent("""
    import os, numpy
    with open("model.onnx", "wb") as f:  # in the working directory (the test's)
        f.write(b"onnx")
    import onnxruntime as ort
    gpu = ort.InferenceSession("model.onnx", providers=["CUDAExecutionProvider"])
    gpu.run(None, {"input": numpy.zeros((1, 3), numpy.float32)})
    session = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    for _ in range(3):
        session.run(None, {"input": numpy.zeros((1, 3), numpy.float32)})
    print("sessions", ort.SESSIONS)
    print("restored", "run" not in ort.InferenceSession.__dict__)
    print("runs", ort.RUNS)
    print("path", os.environ.get("PYTHONPATH", "-"))
""")


def _fake_ort(tmp_path: Path) -> Path:
    """The stand-in ONNX Runtime (fake_onnxruntime.py) in a directory to put on the path."""
    return fake_onnxruntime.install(tmp_path / "fake-ort")


def test_an_onnx_runtime_session_is_counted_by_its_graph_then_timed_at_one_thread(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = f"import os\nos.environ['TMPDIR'] = {str(tmp)!r}\n" + ORT_WORKLOAD
    out, marks = _run(sys.executable, tmp_path, code, [_counter_dir(tmp_path), _fake_ort(tmp_path)],
                      runtimes="pytorch,onnxruntime")
    # One count, of the CPU session (the GPU's passed over): 2.5 MB by the profile of a copy
    # at one thread without optimisations, then five inferences of a copy at one thread.
    [line] = marks.splitlines()
    _, kind, mb, cpu_ms, calls, runtime = line.split()
    assert (kind, float(mb), calls, runtime) == ("A", 2.5, "5", "onnxruntime")
    assert float(cpu_ms) > 0
    assert ("sessions [('CUDAExecutionProvider', 0, False), ('CPUExecutionProvider', 0, False), "
            "('CPUExecutionProvider', 1, 'disable_all'), ('CPUExecutionProvider', 1, False)]"
            in out)
    # Before the workload's first run: the profiled copy's run (session 3), the timed copy's
    # warm-up and five (session 4), then the workload's three (session 2), the GPU's first.
    assert f"runs {[1, 3] + [4] * 6 + [2] * 3}" in out
    # The method put back (inherited again), the counter off PYTHONPATH, the profile gone.
    assert "restored True" in out and f"path {tmp_path / 'fake-ort'}" in out
    assert list(tmp.iterdir()) == []


def test_onnx_runtime_sessions_that_cannot_be_counted_are_given_up_on(tmp_path):
    # Sessions on another provider only: each passed over, and after GIVE_UP of them the
    # method is put back; nothing reported.
    code = ORT_WORKLOAD.replace('providers=["CPUExecutionProvider"]',
                                'providers=["CUDAExecutionProvider"]').replace(
        "for _ in range(3):\n    session.run", "for _ in range(40):\n    ort.InferenceSession("
        "'m.onnx', providers=['CUDAExecutionProvider']).run")
    out, marks = _run(sys.executable, tmp_path, code, [_counter_dir(tmp_path), _fake_ort(tmp_path)],
                      runtimes="onnxruntime")
    assert marks == "" and "restored True" in out


# A session made from a model file of 4 MB in the working directory, run three times, by
# keyword: how many sessions were made (the workload's and the counter's copies).
SIZED_WORKLOAD = textwrap.dedent("""
    import os, numpy
    os.chdir(os.environ["WORKDIR"])
    with open("model.onnx", "wb") as f:
        f.write(bytes(4 << 20))
    import onnxruntime as ort
    session = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    for _ in range(3):
        session.run(None, input_feed={"input": numpy.zeros((1, 3), numpy.float32)})
    print("sessions", len(ort.SESSIONS))
    print("restored", "run" not in ort.InferenceSession.__dict__)
    print("init restored",
          ort.InferenceSession.__dict__["__init__"].__qualname__ == "InferenceSession.__init__")
""")


USED = 1 << 30  # what the slice's usage file says it uses: more than the test's resident memory
MODEL = 5 * (4 << 20)  # five times the 4 MB model: the room a copy takes


@pytest.mark.parametrize("room, sessions", [
    ("", 3), ("0", 3), (str(USED + MODEL + (3 << 20)), 3),  # the workload's and two copies
    (str(USED + MODEL - (1 << 20)), 1),   # no room for a copy of the model: none made
    (str(USED + MODEL + (1 << 20)), 2),   # room for the profiled copy, not for its 2.5 MB
    ("256M", 1)])                         # a limit not understood: nothing made
# (The input, 1x3 float32, 12 bytes: 8 x 12 before the first copy, 12 with the activations
# before the second.)
def test_an_onnx_runtime_count_is_made_where_its_copies_fit_under_the_slices_memory(
        tmp_path, room, sessions):
    # A session fed by keyword, in a slice that uses USED bytes: its usage file says 64 MB
    # more, its inactive file cache (v1's hierarchical figure, not its own), which the kernel
    # would take back.
    work = tmp_path / "work"
    work.mkdir()
    usage = tmp_path / "memory.usage_in_bytes"
    usage.write_text(f"{USED + (64 << 20)}\n")
    stat = tmp_path / "memory.stat"
    stat.write_text(f"cache 5\ninactive_file 1\ntotal_inactive_file {64 << 20}\n")
    code = (f"import os\nos.environ['WORKDIR'] = {str(work)!r}\n"
            f"os.environ['EDGEPROF_COUNT_MEMORY_USAGE'] = {str(usage)!r}\n"
            f"os.environ['EDGEPROF_COUNT_MEMORY_STAT'] = {str(stat)!r}\n"
            f"os.environ['EDGEPROF_COUNT_MEMORY_BYTES'] = {room!r}\n" + SIZED_WORKLOAD)
    out, marks = _run(sys.executable, tmp_path, code, [_counter_dir(tmp_path), _fake_ort(tmp_path)],
                      runtimes="onnxruntime")
    assert "restored True" in out and f"sessions {sessions}\n" in out
    [line] = marks.splitlines()
    if sessions == 3:
        assert line.split()[1::4] == ["A", "onnxruntime"]
    else:
        # The slice is told why: what it used, what a copy needed, its limit (bytes).
        _, kind, skip, runtime, why, used, need, limit = line.split()
        assert (kind, skip, runtime, why) == ("A", "skip", "onnxruntime", "memory")
        if room == "256M":
            assert (used, need, limit) == ("0", "0", "0")
        else:
            assert (int(used), int(limit)) == (USED, int(room))
            assert int(need) == MODEL + (8 * 12 if sessions == 1 else 12 + 2_500_000)


def test_a_relative_model_path_is_counted_from_where_the_session_was_made(tmp_path):
    # The session was made from "model.onnx" in one directory, run from another that holds
    # another "model.onnx" (of 1 MB, not 4): the one the session was made from is counted; the
    # constructor is put back with the run.
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "model.onnx").write_bytes(bytes(1 << 20))
    usage = tmp_path / "memory.current"
    usage.write_text(f"{USED}\n")
    code = (f"import os\nos.environ['WORKDIR'] = {str(work)!r}\n"
            f"os.environ['EDGEPROF_COUNT_MEMORY_USAGE'] = {str(usage)!r}\n"
            f"os.environ['EDGEPROF_COUNT_MEMORY_BYTES'] = '1'\n"  # too little: a skip says
            + SIZED_WORKLOAD.replace("for _ in range(3):", f"os.chdir({str(tmp_path)!r})\n"
                                     "for _ in range(3):"))
    path = [_counter_dir(tmp_path), _fake_ort(tmp_path)]
    out, marks = _run(sys.executable, tmp_path, code, path, runtimes="onnxruntime")
    # The skip's figures say which file was sized: five times 4 MB, not 1 MB.
    [line] = marks.splitlines()
    assert line.split()[2] == "skip" and int(line.split()[6]) == MODEL + 8 * 12
    assert "restored True" in out and "init restored True" in out
    # Counted where the limit allows it.
    out, marks = _run(sys.executable, tmp_path, code.replace("= '1'", "= '0'"), path,
                      runtimes="onnxruntime")
    assert marks.split()[1::4] == ["A", "onnxruntime"] and "sessions 3\n" in out


def test_a_session_run_from_two_threads_at_once_is_counted_once(tmp_path):
    # Both threads' first runs come before the count, both inside the counter's look at the
    # session at once (the stand-in's get_providers sleeps): one of them counts, the other runs
    # on; every run of the workload's is made.
    code = textwrap.dedent("""
        import os, threading, numpy
        os.environ["FAKE_ORT_DELAY"] = "0.1"
        with open("model.onnx", "wb") as f:
            f.write(b"onnx")
        import onnxruntime as ort
        session = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
        start = threading.Barrier(2)
        def infer():
            start.wait()
            for _ in range(3):
                session.run(None, {"input": numpy.zeros((1, 3), numpy.float32)})
        threads = [threading.Thread(target=infer) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("workload runs", ort.RUNS.count(1))
        print("restored", "run" not in ort.InferenceSession.__dict__)
    """)
    out, marks = _run(sys.executable, tmp_path, code, [_counter_dir(tmp_path), _fake_ort(tmp_path)],
                      runtimes="onnxruntime")
    assert len(marks.splitlines()) == 1 and marks.split()[-1] == "onnxruntime"
    assert "workload runs 6" in out and "restored True" in out


@pytest.mark.skipif(not os.environ.get("EDGEPROF_TORCH_PYTHON"),
                    reason="set EDGEPROF_TORCH_PYTHON to a Python with torch, torchvision, onnx "
                    "and onnxruntime")
def test_a_real_onnx_runtime_session_counts_what_the_rating_counts(tmp_path):
    python = os.environ["EDGEPROF_TORCH_PYTHON"]
    model = tmp_path / "mobilenet_v2.onnx"
    subprocess.run([python, "-c", textwrap.dedent(f"""
        import importlib.util, torch, torchvision
        spec = importlib.util.spec_from_file_location("runner", {str(SRC / 'torch_runner.py')!r})
        runner = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(runner)
        runner.export_onnx(torchvision.models.mobilenet_v2().eval(), torch.rand(1, 3, 224, 224),
                           torch, {str(model)!r})
    """)], check=True, capture_output=True, timeout=300)
    code = textwrap.dedent(f"""
        import importlib.util, numpy, onnxruntime as ort
        x = numpy.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(numpy.float32)
        session = ort.InferenceSession({str(model)!r}, providers=["CPUExecutionProvider"])
        for _ in range(3):
            session.run(None, {{"input": x}})
        spec = importlib.util.spec_from_file_location("runner", {str(SRC / 'torch_runner.py')!r})
        runner = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(runner)
        print(runner.ort_written_mb({str(model)!r}, (x,), ort))
    """)
    out, marks = _run(python, tmp_path, code, [_counter_dir(tmp_path)], runtimes="onnxruntime")
    [line] = marks.splitlines()
    _, kind, mb, cpu_ms, calls, runtime = line.split()
    assert (kind, calls, runtime) == ("A", "5", "onnxruntime") and float(cpu_ms) > 0
    assert float(mb) == pytest.approx(float(out.split()[-1]), rel=1e-5)


def test_onnx_runtime_is_not_watched_where_the_slice_does_not_count_it(tmp_path):
    # The slice counts PyTorch alone (no EDGEPROF_COUNT_RUNTIMES: PyTorch's): the session runs
    # as it was, one copy made by nobody.
    out, marks = _run(sys.executable, tmp_path, ORT_WORKLOAD,
                      [_counter_dir(tmp_path), _fake_ort(tmp_path)])
    assert marks == "" and "runs [1, 2, 2, 2]" in out
