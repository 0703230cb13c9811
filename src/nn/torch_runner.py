# edgeprof's PyTorch runner: times image classifiers in PyTorch (eager, fp32, inference mode),
# built here by their constructors with random weights (timm's, else torchvision's; nothing is
# downloaded), one thread unless told (--threads), on a fixed random 1x3x224x224 input: untimed
# warm-up, then timed inferences. With --backend=onnxruntime the same models are exported to
# ONNX in memory (PyTorch's TorchScript-based exporter, opset 17) and timed in ONNX Runtime
# instead (CPU provider, default graph optimisations, that many intra-op threads, sequential).
# Prints one line per model, "<name> <median ms> <min ms> <max ms>", the format of edgeprof's
# ncnn runner, after a line "runtime <what ran>".
# Usage: python3 torch_runner.py DIR WARMUP LOOPS [--threads=N] [--backend=pytorch|onnxruntime]
#        MODEL...
# (DIR is unused: the models are built, not read.)
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


def onnx_session(model, data, threads, torch, ort):
    """The model exported to ONNX in memory, in an ONNX Runtime session; and its input name."""
    import io
    buffer = io.BytesIO()
    torch.onnx.export(model, (data,), buffer, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])


def main() -> int:
    warmup, loops = int(sys.argv[2]), int(sys.argv[3])
    rest = sys.argv[4:]
    threads, backend = 1, "pytorch"
    while rest and rest[0].startswith("--"):
        flag, _, value = rest.pop(0).partition("=")
        if flag == "--threads":
            threads = int(value)
        elif flag == "--backend" and value in ("pytorch", "onnxruntime"):
            backend = value
        else:
            print(f"error: unknown option {flag}={value}", file=sys.stderr)
            return 2
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
            print(f"error: ONNX Runtime is not installed ({e}); install it with: "
                  f"{sys.executable} -m pip install onnx onnxruntime torch torchvision timm",
                  file=sys.stderr)
            return 3
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
    if ort is None:
        print(f"runtime PyTorch {torch.__version__} fp32 eager ({versions}; Python "
              f"{sys.version.split()[0]})", flush=True)
    else:
        print(f"runtime ONNX Runtime {ort.__version__} fp32 CPU provider (exported with "
              f"{versions}; Python {sys.version.split()[0]})", flush=True)
    data = torch.randn(1, 3, 224, 224)
    ran = 0
    for name in rest:
        try:
            model = build(name, timm, torchvision)
        except LookupError as e:
            hint = "" if timm is not None else " (timm is not installed: pip install timm)"
            print(f"error: {e}{hint}", file=sys.stderr)
            return 4
        model.eval()
        if ort is not None:
            session = onnx_session(model, data, threads, torch, ort)
            feed = {session.get_inputs()[0].name: data.numpy()}
            infer = lambda: session.run(None, feed)  # noqa: E731
        else:
            infer = lambda: model(data)  # noqa: E731
        with torch.inference_mode():
            for _ in range(warmup):
                infer()
            times = []
            for _ in range(loops):
                start = time.perf_counter()
                infer()
                times.append((time.perf_counter() - start) * 1000)
        print(f"{name} {statistics.median(times):.4f} {min(times):.4f} {max(times):.4f}",
              flush=True)
        ran += 1
        del model, infer
    return 0 if ran else 5


if __name__ == "__main__":
    sys.exit(main())
