"""A PyTorch model's memory intensity: the MB of activations its layers write per inference over
this host's one-thread time of it with a runtime, the figure a device's runtime speed with a
memory term takes (Device.for_runtime(runtime, memory_mb_per_ms=...), `edgeprof run
--runtime R --memory-mb-per-ms M`; docs/devices.md). Counted and timed the way this host's
rating of the runtime counts and times its models (edgeprof's PyTorch runner, the module
_torch_runner: a hook on every layer, or for ONNX Runtime the exported graph's nodes by its
profiler; one thread), in this process, which must have PyTorch (and onnx and onnxruntime for
ONNX Runtime)."""

from __future__ import annotations

import operator
import os
import resource
from dataclasses import dataclass
from typing import Any

from edgeprof._core import STEADY_MALLOC_ENV, Error, cached_nn_rating, nn_runtimes, statistics


def _runtimes() -> list[str]:
    """The runtimes whose ratings count activations (their memory term's): PyTorch's runner's
    --activations (or --activations=graph) in the runner arguments."""
    return sorted(r.id for r in nn_runtimes()
                  if any(a.partition("=")[0] == "--activations" for a in r.runner_args))


@dataclass(frozen=True)
class MemoryIntensity:
    """A model's activations per inference (counted) and this host's one-thread time of it with
    `runtime` (measured: the median of `loops` timed inferences after a warm-up). page_faults:
    the calling thread's page faults per timed inference (measured): more than a few mean
    this process's allocator handed memory back to the kernel between inferences, which the
    rating's runner (given STEADY_MALLOC_ENV) did not, and host_ms is slower than the rating's
    way (start Python with those variables set)."""

    runtime: str
    activation_mb: float
    host_ms: float
    loops: int
    page_faults: float = 0.0

    def __post_init__(self) -> None:
        if not (self.host_ms > 0 and self.activation_mb >= 0):  # NaN too
            raise Error(f"MemoryIntensity: host_ms {self.host_ms!r} and activation_mb "
                        f"{self.activation_mb!r}: give a positive time and MB >= 0")

    @property
    def mb_per_ms(self) -> float:
        """MB per ms: what Device.for_runtime(runtime, memory_mb_per_ms=...) takes."""
        return self.activation_mb / self.host_ms

    def __str__(self) -> str:
        text = (f"{self.mb_per_ms:.4g} MB/ms with {self.runtime}: {self.activation_mb:.4g} MB of "
                f"activations per inference (counted) in {self.host_ms:.4g} ms on one thread "
                f"of this host (measured, median of {self.loops})")
        if self.page_faults >= _FAULTS_NOTED:
            steady = " ".join(f"{k}={v}" for k, v in STEADY_MALLOC_ENV.items())
            text += (f"; {self.page_faults:.0f} page faults per inference: this process's "
                     f"allocator hands memory back to the kernel, which the rating's runner did "
                     f"not, so the time is slower than the rating's way; start Python with "
                     f"{steady}")
        return text


# Page faults per inference from which MemoryIntensity says its time is not the rating's way
# (eager PyTorch's MobileNet v2 took 2,300-6,400 without STEADY_MALLOC_ENV here, none with it).
_FAULTS_NOTED = 10


def _modules(runtime: str) -> tuple[Any, Any]:
    """(torch, edgeprof's PyTorch runner as a module)."""
    try:
        import torch
    except ImportError as e:
        raise Error(f"memory_intensity() counts a PyTorch model's activations and needs PyTorch "
                    f"in this interpreter ({e}): pip install torch") from None
    try:
        from edgeprof import _torch_runner as runner
    except ImportError as e:
        raise Error(f"this edgeprof has no PyTorch runner module ({e}): install it whole "
                    "(pip install edgeprof, or pip install . in its source tree)") from None
    if runtime == "pytorch-int8" and "qnnpack" not in torch.backends.quantized.supported_engines:
        raise Error(f"this PyTorch ({torch.__version__}) has no qnnpack engine for int8: "
                    "pip install torch (PyPI's x86-64 and aarch64 wheels have it)")
    return torch, runner


def _rated_cpu(runtime: str, allowed: set[int]) -> int:
    """The CPU this host's rating of `runtime` ran on where this thread may run there (CPUs
    of one host differ), else the last it may use."""
    try:
        rating = cached_nn_rating(runtime=runtime)
    except Error:  # a cache this edgeprof cannot read: as without one
        rating = None
    return rating.cpu if rating is not None and rating.cpu in allowed else max(allowed)


def memory_intensity(model: Any, example_input: Any, *, runtime: str = "pytorch",
                     warmup: int = 3, loops: int = 10) -> MemoryIntensity:
    """`model` (a torch.nn.Module, not TorchScript: the count hooks its layers; for
    "pytorch-int8" TorchScript too, counted by its operators' outputs as that rating counts) on
    `example_input` (a tensor, or a tuple of them): the MB its layers write per inference and
    its one-thread time here with `runtime`, as this host's rating of the runtime counts and
    times its models: "pytorch" (eager), "onnxruntime" (exported to ONNX in memory, its
    activations the outputs of the exported graph's nodes, as that rating counts them),
    "pytorch-int8" (a model already quantized for qnnpack, timed as TorchScript). The calling
    thread runs on the rating's CPU (else one of its own) with one PyTorch thread meanwhile;
    the model's mode, the thread count, the CPUs and the quantized engine are put back after,
    also on an error. Raises edgeprof.Error for another runtime, a missing library, counts
    < 1, or a model whose layers wrote nothing that was counted."""
    runtimes = _runtimes()
    if runtime not in runtimes:
        raise Error(f"memory_intensity(runtime={runtime!r}): give one of {', '.join(runtimes)} "
                    "(the runtimes whose ratings count activations for a memory term)")
    def whole(v: Any) -> bool:  # 3 or numpy's 3, not 2.5, True, nan, inf or "3"
        if isinstance(v, bool):
            return False
        try:
            operator.index(v)
        except TypeError:
            return False
        return True

    if not (whole(loops) and whole(warmup) and loops >= 1 and warmup >= 0):
        raise Error(f"memory_intensity(warmup={warmup!r}, loops={loops!r}): give whole numbers, "
                    "warmup >= 0 and loops >= 1")
    torch, runner = _modules(runtime)
    if not isinstance(model, torch.nn.Module):
        raise Error(f"memory_intensity(): the model is a {type(model).__name__}; give a "
                    "torch.nn.Module (TorchScript for pytorch-int8 too), which it runs and counts")
    ort = _ort() if runtime == "onnxruntime" else None  # missing: said before any export
    if isinstance(model, torch.jit.ScriptModule) and runtime != "pytorch-int8":
        raise Error("memory_intensity() counts activations with a hook on each layer, which a "
                    "TorchScript model does not run: give the eager torch.nn.Module (int8's "
                    "count, by operators, takes TorchScript too)")
    inputs = example_input if isinstance(example_input, tuple) else (example_input,)
    training, threads = model.training, torch.get_num_threads()
    engine = torch.backends.quantized.engine
    had = os.sched_getaffinity(0)
    try:
        # This thread alone (pid 0): the process's other threads keep their CPUs.
        os.sched_setaffinity(0, {_rated_cpu(runtime, had)})
    except OSError as e:
        raise Error(f"memory_intensity(): could not pin this thread to one CPU ({e}); it runs "
                    "on one CPU as this host's rating did") from None
    try:
        model.eval()
        torch.set_num_threads(1)
        if runtime == "pytorch-int8":
            torch.backends.quantized.engine = "qnnpack"
        mb = (_graph_mb(model, inputs, torch, runner, ort) if ort is not None
              else runner.op_written_mb(model, inputs, torch) if runtime == "pytorch-int8"
              else runner.activation_mb(model, inputs, torch))
        if not mb > 0:
            raise Error(f"memory_intensity(): {type(model).__name__}'s "
                        + ("operators wrote no outputs the count sees (a dispatch mode "
                           "around one inference): give a model that runs PyTorch operators"
                           if runtime == "pytorch-int8" else
                           "layers wrote no outputs the count sees (a hook on every module "
                           "without children): give a model built of torch.nn layers"))
        infer = _call(model, inputs, runtime, torch, runner)
        with torch.inference_mode():
            runner.time_runs(infer, warmup, 0)  # the warm-up alone: its first touches
            faults = _thread_faults()
            times = runner.time_runs(infer, 0, loops)
            faults = (_thread_faults() - faults) / len(times)
    finally:
        model.train(training)
        torch.set_num_threads(threads)
        torch.backends.quantized.engine = engine
        os.sched_setaffinity(0, had)
    return MemoryIntensity(runtime, mb, statistics(times).median, loops, faults)


def _thread_faults() -> int:
    """The calling thread's page faults so far (minor and major)."""
    used = resource.getrusage(resource.RUSAGE_THREAD)
    return used.ru_minflt + used.ru_majflt


def _ort() -> Any:
    try:
        import onnx  # noqa: F401 (the exporter needs it)
        import onnxruntime as ort
    except ImportError as e:
        raise Error(f"memory_intensity(runtime='onnxruntime') needs onnx and onnxruntime "
                    f"in this interpreter ({e}): pip install onnx onnxruntime") from None
    return ort


def _graph_mb(model: Any, inputs: tuple, torch: Any, runner: Any, ort: Any) -> float:
    """The model's activations by ONNX Runtime's rating's rule: exported to ONNX in memory, the
    outputs of its graph's nodes in one inference (the runner's ort_written_mb)."""
    import io
    if not all(isinstance(t, torch.Tensor) for t in inputs):
        raise Error("memory_intensity(runtime='onnxruntime') exports the model with its "
                    "example input: give a tensor, or a tuple of tensors")
    buffer = io.BytesIO()
    runner.export_onnx(model, inputs, torch, buffer)
    try:
        return runner.ort_written_mb(buffer.getvalue(),
                                     tuple(t.detach().cpu().numpy() for t in inputs), ort)
    except ValueError as e:  # inputs the export dropped
        raise Error(f"memory_intensity(runtime='onnxruntime'): {e}") from None


def _call(model: Any, inputs: tuple, runtime: str, torch: Any, runner: Any) -> Any:
    """One inference of the model as the rating runs the runtime's."""
    if runtime == "onnxruntime":
        return runner.onnx_call(model, inputs, 1, torch, _ort())
    if runtime == "pytorch-int8":
        try:
            scripted = torch.jit.script(model)
        except Exception as e:  # TorchScript refuses many a Python construct
            raise Error(f"memory_intensity(runtime='pytorch-int8') times the quantized model "
                        f"as TorchScript, as the rating does, and torch.jit.script refused it "
                        f"({type(e).__name__}: {str(e)[:300]})") from None
        return lambda: scripted(*inputs)
    return lambda: model(*inputs)
