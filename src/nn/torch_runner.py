# edgeprof's PyTorch runner: times image classifiers in PyTorch (eager, fp32, inference mode),
# built here by their constructors with random weights (timm's, else torchvision's; nothing is
# downloaded), one thread unless told (--threads), on a fixed random 1x3x224x224 input: untimed
# warm-up, then timed inferences. With --backend=onnxruntime the same models are exported to
# ONNX (PyTorch's TorchScript-based exporter, opset 17) and timed in ONNX Runtime instead (CPU
# provider, default graph optimisations, that many intra-op threads, sequential): read from
# DIR/<model>.onnx where DIR holds them, else exported in memory. --export writes them to DIR
# and times nothing, so that a run under a slow emulated device need not export (minutes at a
# tenth of a CPU) and, with every model's file there, need not import PyTorch at all.
# With --precision=int8 (PyTorch only) the models are torchvision's quantizable versions of the
# same architectures (torchvision.models.quantization), quantized for the qnnpack engine
# (fuse_model, qnnpack's default qconfig, calibration on random inputs, convert) and run as
# TorchScript, as the PyTorch tutorial for the Raspberry Pi 4 runs them; --export writes them
# to DIR/<model>.int8.pt, which a later run loads instead of quantizing again.
# Prints one line per model, "<name> <median ms> <min ms> <max ms>", and "cpu <name> <ms>",
# the process's CPU time per inference (the same median, or mean with --mean: the work without
# the time it waited for a CPU), the format of edgeprof's ncnn runner, after a line
# "runtime <what ran>"; with --export, "exported <name> <path>"; with
# --activations, for a model it builds (not one read from DIR), also "activations <name> <MB>"
# (its layers' outputs per inference: one more untimed inference); in int8, for every model
# (one read from DIR too), its operators' outputs instead (op_written_mb: the rule by which
# edgeprof's counter counts a TorchScript workload, whose layers run no hooks);
# --activations=graph (ONNX Runtime only, also for a model read from DIR) counts instead the
# outputs of the ONNX graph's nodes as exported, run once by ONNX Runtime without its graph
# optimisations (ort_written_mb: a rule a workload that has only the ONNX file can count by).
# Under a CPU quota one inference shorter than the quota's period runs at the host's speed or
# waits for the next period, so its median says little: --min-time=S times at least S seconds
# (and LOOPS inferences), and --mean prints the mean (the total over the count, exact under a
# quota over many periods) in the median's place.
# --rounds=R builds every model first and spreads each one's LOOPS timed inferences over
# min(R, LOOPS) passes through them all (WARMUP untimed inferences before a model's first, one
# before each later visit; --min-time split evenly between the passes): on a host whose speed
# wanders over tens of seconds, as a shared VM's does by a third or more, every model then
# sees the same spells, and their times keep their ratios (edgeprof's ratings of PyTorch and
# ONNX Runtime run with it). It holds every model in memory at once (about 0.8 GB for the
# thirteen fp32 classifiers, estimated from their weights) and prints each model's line only
# after the last pass.
# Usage: python3 torch_runner.py DIR WARMUP LOOPS [--threads=N] [--backend=pytorch|onnxruntime]
#        [--precision=fp32|int8] [--export] [--min-time=S] [--mean] [--rounds=R]
#        [--activations[=graph]] MODEL...
# (DIR "-": none; PyTorch's fp32 models are always built, not read; int8 ones are read from
# DIR/<model>.int8.pt where --export wrote them, else quantized here.)
import io
import math
import os
import statistics
import sys
import time
import warnings


def build(name, timm, torchvision):
    # timm first: the published PyTorch tables that edgeprof compares with name timm's models
    # (mnasnet_a1 is timm's, not torchvision's mnasnet1_0); torchvision for the ones timm lacks.
    if timm is not None and timm.is_model(name):
        return timm.create_model(name, pretrained=False)
    builder = getattr(torchvision.models, name, None)
    if builder is None:
        raise LookupError(f"neither timm nor torchvision has a model named {name}")
    return builder(weights=None)


# Calibration inputs for int8: enough for the observers to see a range; the time of a quantized
# model does not depend on its scales.
CALIBRATION = 2


def build_int8(name, torch, torchvision):
    """torchvision's quantizable `name`, random weights, quantized for qnnpack, as TorchScript."""
    from torchvision.models import quantization

    builder = getattr(quantization, name, None)
    if builder is None:
        known = sorted(n for n in dir(quantization) if n.islower() and not n.startswith("_")
                       and callable(getattr(quantization, n)))
        raise LookupError(f"torchvision.models.quantization has no model named {name}; it has "
                          f"{', '.join(known) or 'none'} (torchvision {torchvision.__version__})")
    # GoogLeNet and Inception v3 as deployed: no auxiliary heads (unused in eval mode), the
    # default initialisation instead of their slow truncated normal.
    extra = ({"aux_logits": False, "init_weights": False}
             if name in ("googlenet", "inception_v3") else {})
    model = builder(weights=None, quantize=False, **extra).eval()
    model.fuse_model()
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for _ in range(CALIBRATION):
            model(torch.rand(1, 3, 224, 224))
    torch.ao.quantization.convert(model, inplace=True)
    return torch.jit.script(model)


def written_bytes(module, inputs, output, torch):
    """Bytes one call of a layer (a module without children) wrote as its outputs, by the rule
    activation_mb counts with (and edgeprof's activation counter, activation_counter.py, in a
    workload): an output that is one of its inputs or a view of one (Identity, Dropout in eval
    mode, Flatten, the placeholders fusion leaves) wrote nothing; one that works in place
    (ReLU(inplace=True)) wrote its input over."""
    def storage(t):
        try:
            return t.data_ptr()
        except RuntimeError:  # a tensor without storage of its own
            return None

    given = {storage(t) for t in inputs if isinstance(t, torch.Tensor)}
    in_place = getattr(module, "inplace", False)
    written = 0
    for t in output if isinstance(output, (tuple, list)) else (output,):
        if isinstance(t, torch.Tensor) and (in_place or storage(t) not in given):
            written += t.numel() * t.element_size()
    return written


def activation_mb(model, data, torch):
    """MB that one inference on `data` (a tensor or a tuple of them) writes as its layers'
    outputs (every module without children, hooked for one untimed inference; written_bytes):
    the memory traffic edgeprof's memory term (nn_memory_fit) weighs. Functional operations
    between modules are not counted."""
    written = [0]

    def hook(module, inputs, output):
        written[0] += written_bytes(module, inputs, output, torch)

    hooks = [m.register_forward_hook(hook) for m in model.modules()
             if next(m.children(), None) is None]
    try:
        with torch.inference_mode():
            model(*data) if isinstance(data, tuple) else model(data)
    finally:
        for h in hooks:
            h.remove()
    return written[0] / 1e6


def op_writes(torch):
    """A TorchDispatchMode class that counts the bytes every operator run under it writes as
    its outputs (.bytes) and whether one of them was quantized (.quantized), in the thread that
    entered it, TorchScript's operators too (they dispatch as eager ones do): an output that
    shares storage with an input of an operator that writes none of its inputs (a view,
    reshape, flatten, detach) wrote nothing; one that writes an input (relu_, add_, out=) wrote
    its output. The rule of op_written_mb and of edgeprof's counter for int8 workloads."""
    from torch.utils._python_dispatch import TorchDispatchMode

    def storage(t):
        try:
            return t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # a tensor without storage of its own
            return None

    def tensors(values):
        for v in values:
            if isinstance(v, torch.Tensor):
                yield v
            elif isinstance(v, (list, tuple)):
                yield from (t for t in v if isinstance(t, torch.Tensor))

    class OpWrites(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes, self.quantized, self.failed = 0, False, False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            try:
                self.count(func, args, kwargs, out)
            except Exception:  # the counter's own: the count is void, the inference goes on
                self.failed = True
            return out

        def count(self, func, args, kwargs, out):
            writes = any(a.alias_info is not None and a.alias_info.is_write
                         for a in func._schema.arguments)
            given = set() if writes else {storage(t) for t in
                                          tensors(list(args) + list(kwargs.values()))}
            for t in tensors(out if isinstance(out, (list, tuple)) else (out,)):
                if writes or storage(t) not in given:
                    self.bytes += t.numel() * t.element_size()
                    self.quantized = self.quantized or t.is_quantized

    return OpWrites


def op_written_mb(model, data, torch):
    """MB that one inference on `data` writes as its operators' outputs (op_writes), for a
    TorchScript model too: the activation rule of PyTorch's int8 rating."""
    counter = op_writes(torch)()
    with torch.inference_mode(), counter:
        model(*data) if isinstance(data, tuple) else model(data)
    if counter.failed:
        raise RuntimeError("counting the operators' outputs failed")
    return counter.bytes / 1e6


def export_onnx(model, data, torch, target):
    """The model exported to ONNX, into `target` (a path or a binary file object); `data` a
    tensor or a tuple of them."""
    torch.onnx.export(model, data if isinstance(data, tuple) else (data,), target,
                      dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"])


def onnx_call(model, data, threads, torch, ort):
    """The model exported to ONNX in memory and a call that runs it once in ONNX Runtime on
    `data` (a tensor or a tuple of them)."""
    buffer = io.BytesIO()
    export_onnx(model, data, torch, buffer)
    session = onnx_session(buffer.getvalue(), threads, ort)
    inputs = data if isinstance(data, tuple) else (data,)
    feed = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    return lambda: session.run(None, feed)


def onnx_session(source, threads, ort, profile_prefix=None):
    """An ONNX Runtime session of `source` (a path, or the model's bytes); with
    `profile_prefix`, profiled into files of that prefix (ONNX Runtime's profiler) and without
    graph optimisations (the graph's nodes as exported)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: nothing on a workload's output
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def profile_written_bytes(events):
    """Bytes the kernels of one profiled run wrote as their outputs: the "output_size" of each
    node's kernel event in ONNX Runtime's profile (a list of Chrome trace events)."""
    return sum(int(e.get("args", {}).get("output_size", 0)) for e in events
               if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time"))


def ort_written_mb(source, arrays, ort):
    """MB the nodes of the ONNX graph `source` (a path, or the model's bytes) write as their
    outputs in one inference on `arrays` (its inputs in order): run by ONNX Runtime at one thread
    without its graph optimisations (its fusions would write less: a convolution and its
    activation one output; that count fitted the boards' published times worse, measured in
    docs/fidelity.md), profiled into a temporary directory of its own (removed after, also on
    an error). The graph rule of --activations=graph. ValueError when the graph has another
    number of inputs (the export dropped one it did not use)."""
    import json
    import tempfile
    with tempfile.TemporaryDirectory(prefix="edgeprof-ort-") as folder:
        session = onnx_session(source, 1, ort, os.path.join(folder, "profile"))
        names = [i.name for i in session.get_inputs()]
        if len(names) != len(arrays):
            raise ValueError(f"the ONNX graph has {len(names)} inputs ({', '.join(names)}) for "
                             f"{len(arrays)} given")
        try:
            session.run(None, dict(zip(names, arrays)))
        finally:
            path = session.end_profiling()
        with open(path) as f:
            return profile_written_bytes(json.load(f)) / 1e6


def time_runs(infer, warmup, loops, min_time=0.0, cpu=None):
    """Untimed warm-up, then timed calls, at least `loops` of them and `min_time` seconds in
    all: their times in ms. `cpu`, a list, gets each call's process CPU time in ms."""
    for _ in range(warmup):
        infer()
    times = []
    began = time.perf_counter()
    while len(times) < loops or time.perf_counter() - began < min_time:
        start, cpu_start = time.perf_counter(), time.process_time()
        infer()
        if cpu is not None:
            cpu.append((time.process_time() - cpu_start) * 1000)
        times.append((time.perf_counter() - start) * 1000)
    return times


def time_rounds(infers, warmup, loops, rounds, min_time=0.0, cpu=None):
    """Every model's timed calls spread over passes through them all (`infers`: name -> call),
    so that each sees the same spells of a host whose speed wanders (on a shared VM, by a third
    or more over tens of seconds, and with it one model's median against another's): the
    first pass warms each model up `warmup` times, later ones once (its caches, after the
    others ran). min(rounds, loops) passes time `loops` calls of each model in all, as evenly as
    they go (earlier passes one more), and min_time / passes seconds each. Name -> the times in
    ms; `cpu`, a dict, gets name -> each call's process CPU time in ms."""
    passes = max(1, min(rounds, loops))
    times = {name: [] for name in infers}
    for r in range(passes):
        calls = loops // passes + (1 if r < loops % passes else 0)
        for name, infer in infers.items():
            times[name] += time_runs(infer, warmup if r == 0 else 1, calls, min_time / passes,
                                     None if cpu is None else cpu.setdefault(name, []))
    return times


def report(name, times, mean=False, cpu=None):
    """The model's line, and its "cpu" line from `cpu` (the calls' CPU times) where a CPU clock
    fine enough to time a call gave one: the same centre, mean or median."""
    centre = statistics.fmean if mean else statistics.median
    print(f"{name} {centre(times):.4f} {min(times):.4f} {max(times):.4f}", flush=True)
    if cpu and centre(cpu) > 0:
        print(f"cpu {name} {centre(cpu):.4f}", flush=True)


def ort_missing(error) -> int:
    """Says what to install for ONNX Runtime; the runner's exit status for a missing runtime."""
    print(f"error: ONNX Runtime is not installed ({error}); install it with: "
          f"{sys.executable} -m pip install onnx onnxruntime torch torchvision timm",
          file=sys.stderr)
    return 3


def run_exported(paths, warmup, loops, threads, min_time, mean, rounds, graph=False) -> int:
    """ONNX Runtime on models exported earlier (--export): PyTorch is not imported. `graph`:
    each model's activations by the graph rule first (--activations=graph)."""
    try:
        import numpy
        import onnxruntime as ort
    except ImportError as e:
        return ort_missing(e)
    print(f"runtime ONNX Runtime {ort.__version__} fp32 CPU provider (models exported "
          f"earlier; Python {sys.version.split()[0]})", flush=True)
    data = numpy.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(numpy.float32)
    if graph:
        for name, path in paths.items():
            mb = ort_written_mb(path, (data,), ort)
            print(f"activations {name} {mb:.6g}", flush=True)
    if rounds > 1:
        infers = {}
        for name, path in paths.items():
            session = onnx_session(path, threads, ort)
            feed = {session.get_inputs()[0].name: data}
            infers[name] = lambda s=session, f=feed: s.run(None, f)
        cpu = {}
        for name, times in time_rounds(infers, warmup, loops, rounds, min_time, cpu).items():
            report(name, times, mean, cpu[name])
        return 0
    for name, path in paths.items():
        session = onnx_session(path, threads, ort)
        feed = {session.get_inputs()[0].name: data}
        cpu = []
        infer = lambda s=session, f=feed: s.run(None, f)  # noqa: E731
        report(name, time_runs(infer, warmup, loops, min_time, cpu), mean, cpu)
        del session, infer
    return 0


def seconds(text):
    """A finite, non-negative number of seconds, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def main() -> int:
    warmup, loops = int(sys.argv[2]), int(sys.argv[3])
    folder, rest = sys.argv[1], sys.argv[4:]
    threads, backend, precision, export, min_time, mean = 1, "pytorch", "fp32", False, 0.0, False
    rounds, activations = 1, False
    while rest and rest[0].startswith("--"):
        flag, _, value = rest.pop(0).partition("=")
        if flag == "--threads":
            threads = int(value)
        elif flag == "--backend" and value in ("pytorch", "onnxruntime"):
            backend = value
        elif flag == "--precision" and value in ("fp32", "int8"):
            precision = value
        elif flag == "--export" and not value:
            export = True
        elif flag == "--min-time" and seconds(value) is not None:
            min_time = seconds(value)
        elif flag == "--mean" and not value:
            mean = True
        elif flag == "--rounds" and value.isdecimal() and int(value) >= 1:
            rounds = int(value)
        elif flag == "--activations" and value in ("", "graph"):
            activations = value or True
        else:
            print(f"error: unknown option {flag}={value}", file=sys.stderr)
            return 2
    if not export and (loops < 1 or warmup < 0):
        print(f"error: WARMUP {warmup} and LOOPS {loops}: give WARMUP >= 0 and LOOPS >= 1 "
              "(0 and 0 with --export, which times nothing)", file=sys.stderr)
        return 2
    int8 = precision == "int8"
    if int8 and backend != "pytorch":
        print("error: --precision=int8 is PyTorch's (--backend=pytorch)", file=sys.stderr)
        return 2
    if activations == "graph" and backend != "onnxruntime":
        print("error: --activations=graph counts ONNX Runtime's kernels (--backend=onnxruntime)",
              file=sys.stderr)
        return 2
    if export and (not (backend == "onnxruntime" or int8) or folder == "-"):
        print("error: --export needs --backend=onnxruntime or --precision=int8, and a folder "
              "(DIR) to write to", file=sys.stderr)
        return 2
    paths = {}
    if backend == "onnxruntime" and folder != "-" and not export:
        paths = {name: os.path.join(folder, name + ".onnx") for name in rest}
        missing = [name for name, p in paths.items() if not os.path.isfile(p)]
        if rest and not missing:
            return run_exported(paths, warmup, loops, threads, min_time, mean, rounds,
                                activations == "graph")
        print(f"note: {folder} has no exported {', '.join(missing)} (--export): every model is "
              "exported here instead, at this process's speed", file=sys.stderr, flush=True)
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"error: PyTorch is not installed ({e}); install it with: {sys.executable} -m pip "
              f"install torch torchvision timm" + (" onnx onnxruntime" if backend != "pytorch"
                                                   else ""), file=sys.stderr)
        return 3
    ort = None
    if backend == "onnxruntime":
        try:
            import onnx  # noqa: F401 (the exporter needs it)
            import onnxruntime as ort
        except ImportError as e:
            return ort_missing(e)
    try:
        import timm
    except ImportError:
        timm = None
    warnings.filterwarnings("ignore")  # timm's renamed models, torchvision's deprecations
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass
    torch.manual_seed(0)
    versions = f"torch {torch.__version__}, torchvision {torchvision.__version__}"
    if timm is not None:
        versions += f", timm {timm.__version__}"
    if int8:
        # Before any model is built or loaded: weights are packed for the engine in force.
        if "qnnpack" not in torch.backends.quantized.supported_engines:
            print(f"error: this PyTorch ({torch.__version__}) has no qnnpack engine for int8; "
                  f"install a build that has one (PyPI's x86-64 and aarch64 wheels do): "
                  f"{sys.executable} -m pip install torch torchvision", file=sys.stderr)
            return 3
        torch.backends.quantized.engine = "qnnpack"
        unsaved = [n for n in rest if folder != "-" and not export and
                   not os.path.isfile(os.path.join(folder, n + ".int8.pt"))]
        if unsaved:
            print(f"note: {folder} has no quantized {', '.join(unsaved)} (--export): they are "
                  "quantized here instead, at this process's speed", file=sys.stderr,
                  flush=True)
        print(f"runtime PyTorch {torch.__version__} int8 qnnpack TorchScript ({versions}; "
              f"Python {sys.version.split()[0]})", flush=True)
    elif ort is None:
        print(f"runtime PyTorch {torch.__version__} fp32 eager ({versions}; Python "
              f"{sys.version.split()[0]})", flush=True)
    else:
        print(f"runtime ONNX Runtime {ort.__version__} fp32 CPU provider (exported with "
              f"{versions}; Python {sys.version.split()[0]})", flush=True)
    data = torch.randn(1, 3, 224, 224)
    ran = 0
    infers = {}  # with --rounds: every model built first, then timed in passes through them
    for name in rest:
        saved = os.path.join(folder, name + ".int8.pt") if int8 and folder != "-" else ""
        try:
            if saved and not export and os.path.isfile(saved):
                model = torch.jit.load(saved)
            elif int8:
                model = build_int8(name, torch, torchvision)
            else:
                model = build(name, timm, torchvision)
        except LookupError as e:
            hint = ("" if int8 or timm is not None else
                    " (timm is not installed: pip install timm)")
            print(f"error: {e}{hint}", file=sys.stderr)
            return 4
        model.eval()
        if activations == "graph" and not export:
            buffer = io.BytesIO()
            export_onnx(model, data, torch, buffer)
            mb = ort_written_mb(buffer.getvalue(), (data.numpy(),), ort)
            print(f"activations {name} {mb:.6g}", flush=True)
        elif activations and not export:
            mb = op_written_mb(model, data, torch) if int8 else activation_mb(model, data, torch)
            print(f"activations {name} {mb:.6g}", flush=True)
        if export:
            # Written whole or not at all: a killed export leaves no file a later run would
            # take for a model.
            path = saved or os.path.join(folder, name + ".onnx")
            if int8:
                torch.jit.save(model, path + ".part")
            else:
                export_onnx(model, data, torch, path + ".part")
            os.replace(path + ".part", path)
            print(f"exported {name} {path}", flush=True)
            ran += 1
            continue
        if ort is not None:
            infer = onnx_call(model, data, threads, torch, ort)
        else:
            infer = lambda m=model: m(data)  # noqa: E731
        ran += 1
        if rounds > 1:
            infers[name] = infer
            continue
        cpu = []
        with torch.inference_mode():
            report(name, time_runs(infer, warmup, loops, min_time, cpu), mean, cpu)
        del model, infer
    if infers:
        cpu = {}
        with torch.inference_mode():
            for name, times in time_rounds(infers, warmup, loops, rounds, min_time,
                                           cpu).items():
                report(name, times, mean, cpu[name])
    return 0 if ran else 5


if __name__ == "__main__":
    sys.exit(main())
