# edgeprof's PyTorch runner: times image classifiers in PyTorch (eager, fp32, inference mode),
# built here by their constructors with random weights (timm's, else torchvision's; nothing is
# downloaded), one thread unless told (--threads), on a fixed random 1x3x224x224 input: untimed
# warm-up, then timed inferences. Prints one line per model, "<name> <median ms> <min ms> <max
# ms>", the format of edgeprof's ncnn runner, after a line "runtime <what ran>".
# Usage: python3 torch_runner.py DIR WARMUP LOOPS [--threads=N] MODEL...
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


def main() -> int:
    warmup, loops = int(sys.argv[2]), int(sys.argv[3])
    rest = sys.argv[4:]
    threads = 1
    if rest and rest[0].startswith("--threads="):
        threads = int(rest.pop(0).split("=", 1)[1])
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"error: PyTorch is not installed ({e}); install it with: {sys.executable} -m pip "
              f"install torch torchvision timm", file=sys.stderr)
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
    print(f"runtime PyTorch {torch.__version__} fp32 eager ({versions}; Python "
          f"{sys.version.split()[0]})", flush=True)
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
        with torch.inference_mode():
            for _ in range(warmup):
                model(data)
            times = []
            for _ in range(loops):
                start = time.perf_counter()
                model(data)
                times.append((time.perf_counter() - start) * 1000)
        print(f"{name} {statistics.median(times):.4f} {min(times):.4f} {max(times):.4f}",
              flush=True)
        ran += 1
        del model
    return 0 if ran else 5


if __name__ == "__main__":
    sys.exit(main())
