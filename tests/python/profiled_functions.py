"""Functions for test_profile.py: module-level, so they pickle by reference."""

import threading
import time

import edgeprof


def allocate(mib):
    with edgeprof.phase("allocate"):
        buf = bytearray(mib << 20)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        time.sleep(0.03)  # in use for a few samples, as a loaded model would be
    return len(buf)


def fail(message):
    raise KeyError(message)


class Unpicklable(Exception):
    def __init__(self, a, b):  # pickling calls __init__(a) only: unpickling fails
        super().__init__(a)
        self.b = b


def fail_oddly():
    raise Unpicklable("x", "y")


def exhaust():
    chunks = []
    while True:
        chunks.append(bytearray(16 << 20))


def with_threads():
    out = []
    t = threading.Thread(target=lambda: out.append(sum(range(10**6))))
    t.start()
    t.join()
    return out[0]


@edgeprof.profiled_function(device=edgeprof.Device(name="d", cores=1, core_speed=1.0,
                                                   memory="512MiB"))
def decorated(x, device="cpu"):
    """A parameter named as one of profile's options (PyTorch's device)."""
    return x * 2 if device == "cpu" else device


def omp_threads():
    """The thread count the worker's environment gives OpenMP (None when unset)."""
    import os
    return os.environ.get("OMP_NUM_THREADS")


def touched_bytes(mib, give_back):
    """MIB of bytes in memory (every page written); returned, or only their count."""
    data = b"\x01" * (mib << 20)
    return data if give_back else len(data)


def lock():
    """A value that does not pickle."""
    return threading.Lock()


def mark_phases(names):
    for name in names:
        with edgeprof.phase(name):
            pass


def apply(fn, x):
    """A function with a parameter named fn, as profile's own first one is."""
    return fn(x)


def touched_value(mib):
    """A value whose pages are all in use (bytes(n) leaves them to the zero page)."""
    return b"\x01" * (mib << 20)
