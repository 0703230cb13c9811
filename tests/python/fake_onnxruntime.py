# A stand-in for ONNX Runtime, installed by install() as a package named onnxruntime: sessions
# that keep their model's path or bytes as ONNX Runtime's InferenceSession does (run inherited
# from a base class, as ONNX Runtime's is), record how each was made (SESSIONS: provider,
# intra-op threads, the optimisation level of a profiled one, else False) and which ran (RUNS:
# each run's session, 1 the first made), and profile four events: a session's and a fence's,
# which are no kernel's output, and two kernels of 2 MB and 0.5 MB (2.5 MB counted, 9.5 MB were
# all counted). Where FAKE_ORT_LOG names a file, each session made and each profile is a line
# in it, and each run a line in that file + ".runs" ("run <model file> <input shape>"); where
# FAKE_ORT_DELAY is a number of seconds, get_providers() sleeps that long; where FAKE_ORT_SHAPE
# is a shape ("1x3x224x224"), a run fed another fails.
import json
import os
import shutil
import time
from pathlib import Path

__version__ = "0.0-test"

SESSIONS, RUNS = [], []


class ExecutionMode:
    ORT_SEQUENTIAL = "sequential"


class GraphOptimizationLevel:
    ORT_DISABLE_ALL = "disable_all"


class SessionOptions:
    def __init__(self):
        self.graph_optimization_level = "default"
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = None
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"


class _Input:
    def __init__(self, name):
        self.name = name


def _log(suffix, line):
    path = os.environ.get("FAKE_ORT_LOG")
    if path:
        with open(path + suffix, "a") as log:
            log.write(line + "\n")


class Session:
    def run(self, output_names, input_feed, run_options=None):
        expected = os.environ.get("FAKE_ORT_SHAPE")
        if expected:
            assert tuple(input_feed["input"].shape) == tuple(map(int, expected.split("x")))
        RUNS.append(self.index)
        _log(".runs", f"run {self.source} {tuple(input_feed['input'].shape)}")
        return [sum(range(20000))]  # some CPU time


class InferenceSession(Session):
    def __init__(self, source, sess_options=None, providers=None):
        self.index = len(SESSIONS) + 1
        self._model_path = source if isinstance(source, str) else None
        self._model_bytes = source if isinstance(source, bytes) else None
        self.source = os.path.basename(source) if isinstance(source, str) else "bytes"
        self.options = sess_options or SessionOptions()
        self.providers = list(providers or ["CPUExecutionProvider"])
        profiled = self.options.enable_profiling and self.options.graph_optimization_level
        SESSIONS.append((self.providers[0], self.options.intra_op_num_threads, profiled))
        _log("", f"{source} threads={self.options.intra_op_num_threads} {self.providers[0]}"
             + (f" profiled {profiled}" if profiled else ""))

    def get_providers(self):
        if os.environ.get("FAKE_ORT_DELAY"):  # a slow look: other threads run meanwhile
            time.sleep(float(os.environ["FAKE_ORT_DELAY"]))
        return self.providers

    def get_inputs(self):
        return [_Input("input")]

    def end_profiling(self):
        path = self.options.profile_file_prefix + "_2026.json"
        _log("", f"profile {path}")
        with open(path, "w") as f:
            json.dump([{"cat": "Session", "name": "model_run",
                        "args": {"output_size": "3000000"}},
                       {"cat": "Node", "name": "conv_fence_before",
                        "args": {"output_size": "4000000"}},
                       {"cat": "Node", "name": "conv_kernel_time",
                        "args": {"output_size": "2000000", "op_name": "Conv"}},
                       {"cat": "Node", "name": "relu_kernel_time",
                        "args": {"output_size": "500000", "op_name": "Relu"}}], f)
        return path


def install(directory: Path) -> Path:
    """This module as the package onnxruntime under `directory` (made): put `directory` on a
    process's path."""
    package = Path(directory) / "onnxruntime"
    package.mkdir(parents=True, exist_ok=True)
    shutil.copy(__file__, package / "__init__.py")
    return Path(directory)
