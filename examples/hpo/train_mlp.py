"""A real (small) training workload for the HPO example: a one-hidden-layer MLP trained with
numpy on a fixed synthetic 10-class problem; prints the held-out accuracy as JSON on its last
line. Marks the phases "train" and "inference" when run under edgeprof (no-ops otherwise).

    python3 train_mlp.py --hidden 64 --epochs 5
"""

import argparse
import json
import time

import numpy as np

try:
    from edgeprof import phase
except ImportError:  # on a device without edgeprof
    from contextlib import nullcontext as phase  # type: ignore[assignment]


def data(rng, n):
    centers = np.random.default_rng(1234).standard_normal((10, 32)).astype(np.float32) * 1.5
    labels = rng.integers(0, 10, n)
    x = centers[labels] + rng.standard_normal((n, 32)).astype(np.float32) * 2.5
    return x, labels


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--allocate-mib", type=int, default=0, help="extra memory (to test OOM)")
    args = p.parse_args()
    ballast = bytearray(args.allocate_mib << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    rng = np.random.default_rng(0)
    x, y = data(rng, 4000)
    xt, yt = data(np.random.default_rng(1), 1000)
    w1 = rng.standard_normal((32, args.hidden)).astype(np.float32) / np.sqrt(32)
    w2 = rng.standard_normal((args.hidden, 10)).astype(np.float32) / np.sqrt(args.hidden)
    with phase("train"):
        for _ in range(args.epochs):
            for b in range(0, len(x), 100):
                xb, yb = x[b:b + 100], y[b:b + 100]
                h = np.maximum(xb @ w1, 0)
                logits = h @ w2
                p_ = np.exp(logits - logits.max(1, keepdims=True))
                p_ /= p_.sum(1, keepdims=True)
                p_[np.arange(len(yb)), yb] -= 1
                g2 = h.T @ p_ / len(yb)
                gh = (p_ @ w2.T) * (h > 0)
                w1 -= args.lr * (xb.T @ gh / len(yb))
                w2 -= args.lr * g2
    with phase("inference"):
        start = time.perf_counter()
        for row in xt[:200]:  # batch-1 inference, as on a device
            np.argmax(np.maximum(row @ w1, 0) @ w2)
        per_sample = (time.perf_counter() - start) / 200
    accuracy = float((np.argmax(np.maximum(xt @ w1, 0) @ w2, 1) == yt).mean())
    print(json.dumps({"accuracy": accuracy, "inference_s_per_sample": per_sample}))


if __name__ == "__main__":
    main()
