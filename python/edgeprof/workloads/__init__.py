"""Example inference workloads bundled with edgeprof (numpy models with fixed random weights).

Each module is a script: edgeprof runs it as ``python3 <file> [options]`` inside a slice. They
are the default workloads of ``edgeprof demo``; the ``WORKLOADS`` table names them.
"""

from pathlib import Path

_HERE = Path(__file__).resolve().parent

# name -> (script, arguments, description)
WORKLOADS = {
    "mlp-small": (
        _HERE / "mlp.py",
        ["--hidden", "256", "--layers", "2", "--iterations", "3000"],
        "MLP 784-256-256-10, 3000 batch-1 inferences",
    ),
    "mlp-large": (
        _HERE / "mlp.py",
        ["--hidden", "1024", "--layers", "4", "--iterations", "500"],
        "MLP 784-4x1024-10, 500 batch-1 inferences",
    ),
    "cnn-tiny": (
        _HERE / "cnn.py",
        ["--channels", "16", "--iterations", "100"],
        "CNN 16-32 channels on 64x64 RGB, 100 batch-1 inferences",
    ),
}
