"""Batch-1 inference of a multi-layer perceptron on MNIST-shaped input (numpy, float32).

Weights are random with a fixed seed: the cost of inference does not depend on their values.
"""

import argparse
import time

import numpy as np

try:  # phases for edgeprof's report; the script runs anywhere without it
    from edgeprof import mark
except ImportError:  # pragma: no cover - on a device without edgeprof

    def mark(name: str) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()

    mark("load")
    rng = np.random.default_rng(0)
    sizes = [784] + [args.hidden] * args.layers + [10]
    weights = [
        rng.standard_normal((a, b), dtype=np.float32) / np.sqrt(a)
        for a, b in zip(sizes[:-1], sizes[1:])
    ]
    biases = [np.zeros(b, dtype=np.float32) for b in sizes[1:]]
    x = rng.standard_normal((1, 784), dtype=np.float32)

    mark("inference")
    start = time.perf_counter()
    predictions = np.zeros(10, dtype=np.int64)
    for _ in range(args.iterations):
        h = x
        for w, b in zip(weights[:-1], biases[:-1]):
            h = np.maximum(h @ w + b, 0.0)
        logits = h @ weights[-1] + biases[-1]
        predictions[int(np.argmax(logits))] += 1
    elapsed = time.perf_counter() - start
    print(
        f"mlp {sizes}: {args.iterations} inferences, "
        f"{elapsed / args.iterations * 1e3:.3f} ms each (workload's own clock)"
    )


if __name__ == "__main__":
    main()
