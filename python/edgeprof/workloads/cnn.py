"""Batch-1 inference of a small convolutional network on 64x64 RGB images (numpy, float32).

Convolutions are computed as im2col + matrix multiply, as mobile inference libraries do.
Weights are random with a fixed seed.
"""

import argparse
import time

import numpy as np

try:  # phases for edgeprof's report; the script runs anywhere without it
    from edgeprof import mark
except ImportError:  # pragma: no cover - on a device without edgeprof

    def mark(name: str) -> None:
        pass


def conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x: (C, H, W); w: (K, C, 3, 3); 'same' padding, stride 1, then ReLU."""
    c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
    cols = cols.transpose(1, 2, 0, 3, 4).reshape(h * wd, c * 9)
    out = cols @ w.reshape(w.shape[0], -1).T
    return np.maximum(out.T.reshape(w.shape[0], h, wd), 0.0)


def pool2x2(x: np.ndarray) -> np.ndarray:
    c, h, w = x.shape
    return x.reshape(c, h // 2, 2, w // 2, 2).max(axis=(2, 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()

    mark("load")
    rng = np.random.default_rng(0)
    k = args.channels
    w1 = rng.standard_normal((k, 3, 3, 3), dtype=np.float32) / np.sqrt(27)
    w2 = rng.standard_normal((2 * k, k, 3, 3), dtype=np.float32) / np.sqrt(9 * k)
    fc = rng.standard_normal((2 * k * 16 * 16, 10), dtype=np.float32) / np.sqrt(2 * k * 256)
    image = rng.standard_normal((3, 64, 64), dtype=np.float32)

    mark("inference")
    start = time.perf_counter()
    for _ in range(args.iterations):
        h = pool2x2(conv3x3(image, w1))
        h = pool2x2(conv3x3(h, w2))
        logits = h.reshape(-1) @ fc
        int(np.argmax(logits))
    elapsed = time.perf_counter() - start
    print(
        f"cnn {k}-{2 * k} channels: {args.iterations} inferences, "
        f"{elapsed / args.iterations * 1e3:.3f} ms each (workload's own clock)"
    )


if __name__ == "__main__":
    main()
