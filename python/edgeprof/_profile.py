"""``edgeprof.profile``: run a Python function on an emulated device and get its value and
its report."""

from __future__ import annotations

import functools
import os
import pickle
import sys
import tempfile
from typing import Any, Callable, NamedTuple, Optional, Union

from edgeprof import _core


class Profiled(NamedTuple):
    """What ``profile`` returns: the function's return value and the run's report."""
    value: Any
    report: "_core.Result"


class RemoteTraceback(Exception):
    """The traceback of an exception raised in the worker (the ``__cause__`` of the re-raised
    exception)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"\n\nthe function raised in the edgeprof worker:\n{self.text}"


class WorkerDied(_core.Error):
    """The worker process ended without a result (out-of-memory kill, timeout, signal)."""

    def __init__(self, message: str, report: "_core.Result") -> None:
        super().__init__(message)
        self.report = report


# The caller's script while edgeprof's worker loads it to find a function of its __main__
# (None otherwise).
_loading_main: Optional[str] = None


class _UnguardedMain(_core.Error):
    """profile() called while the worker loaded the caller's script."""


def _pickled_call(fn: Callable, args: tuple, kwargs: dict) -> dict:
    payload: dict[str, Any] = {"sys_path": list(sys.path)}
    main = sys.modules.get("__main__")
    # A function of an interactive __main__ (a notebook, the REPL, python -c) pickles by
    # reference without error, yet the worker has no such module to find it in: send it by
    # value (cloudpickle) instead.
    interactive = (getattr(fn, "__module__", None) == "__main__"
                   and not getattr(main, "__file__", None))
    if getattr(fn, "__module__", None) == "__main__" and not interactive:
        payload["main_path"] = os.path.abspath(main.__file__)  # type: ignore[union-attr]
    error: Optional[Exception] = None
    if not interactive:
        try:
            payload["call"] = pickle.dumps((fn, args, kwargs))
            return payload
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            error = e
    try:
        import cloudpickle  # lambdas, closures, functions defined in a notebook
    except ImportError:
        why = (f"{error}" if error else
               f"{getattr(fn, '__qualname__', fn)!r} is defined in an interactive session "
               f"(a notebook or the REPL), which the worker cannot import")
        raise TypeError(
            f"edgeprof.profile runs the function in a fresh process and needs to pickle it "
            f"and its arguments: {why}. Define the function in a module, or install "
            f"cloudpickle (pip install cloudpickle) for lambdas and notebook functions"
        ) from error
    payload["call"] = cloudpickle.dumps((fn, args, kwargs))
    payload["cloudpickle"] = True
    return payload


def profile(fn: Callable, *args: Any, device: Union[str, "_core.Device"] = "raspberry-pi-4",
            timeout: Optional[float] = None, interval: Optional[float] = _core.DEFAULT_INTERVAL_S,
            isolate_network: bool = False, core_emulation: str = "auto",
            count_activations: Optional[bool] = None, **kwargs: Any) -> Profiled:
    """Runs ``fn(*args, **kwargs)`` in a fresh Python process inside a slice emulating
    ``device``, and returns ``Profiled(value, report)``.

    The process is a new interpreter (started by exec, never a fork of this one, so threads and
    libraries like PyTorch in the caller are safe); it is in the slice from its first
    instruction. ``fn`` and its arguments are pickled (module-level functions; with cloudpickle
    installed, also lambdas and notebook functions). The report's phase ``function`` covers the
    call alone, without the interpreter's start-up. An exception in ``fn`` is raised here as the
    original type, with the worker's traceback as its ``__cause__``. If the worker dies (out of
    memory, timeout), ``WorkerDied`` carries the report. ``core_emulation`` is ``run()``'s:
    ``"projected"`` runs ``fn`` on one of the device's cores and adds its all-core times to the
    report (``report.projected_s()``, docs/threads.md). ``count_activations`` is ``run()``'s too:
    on a device with published PyTorch (or ONNX Runtime) times a ``fn`` that runs a model of
    that runtime sets the device's speed by its own activations (None: on unless
    EDGEPROF_COUNT_ACTIVATIONS=0; docs/devices.md, "A workload's own speed"). Options of
    edgeprof (``device``, ``timeout``, ``interval``, ``isolate_network``, ``core_emulation``,
    ``count_activations``) cannot be passed to ``fn`` as keywords: use ``functools.partial``
    for those.
    """
    if _loading_main is not None:
        raise _UnguardedMain(
            f"{_loading_main} calls edgeprof.profile when it is imported: the worker loads the "
            f"script to find its functions, so the call would run again inside the slice. Put "
            f"the script's calls under `if __name__ == \"__main__\":` (as multiprocessing "
            f"needs), or define the function in a module of its own")
    payload = _pickled_call(fn, args, kwargs)
    with tempfile.TemporaryDirectory(prefix="edgeprof-profile-") as tmp:
        call_path = os.path.join(tmp, "call.pickle")
        result_path = os.path.join(tmp, "result.pickle")
        with open(call_path, "wb") as f:
            pickle.dump(payload, f)
        report = _core.run([sys.executable, "-m", "edgeprof._worker", call_path, result_path],
                           device=device, timeout=timeout, interval=interval,
                           isolate_network=isolate_network, core_emulation=core_emulation,
                           count_activations=count_activations)
        name = getattr(fn, "__qualname__", repr(fn))
        what = ("was killed by the out-of-memory killer" if report.oom_killed else
                "timed out" if report.timed_out else
                f"ended by signal {report.signal}" if report.signal is not None else
                f"exited with code {report.exit_code} without a result")
        if not os.path.exists(result_path):
            raise WorkerDied(f"the edgeprof worker running {name} {what} on {report.device.name}",
                             report)
        try:
            with open(result_path, "rb") as f:
                kind, inner, text = pickle.load(f)
        except Exception as e:  # noqa: BLE001 - a result the worker did not finish writing
            raise WorkerDied(f"the edgeprof worker running {name} on {report.device.name} left "
                             f"a result that cannot be read ({e})"
                             + ("" if report.ok else f"; it {what}"), report) from None
    try:
        value = pickle.loads(inner)
    except Exception as e:  # noqa: BLE001 - e.g. an exception class whose __init__ differs
        what = "return value" if kind == "ok" else "exception"
        raise _core.Error(f"edgeprof.profile ran {name}, but its {what} cannot be unpickled "
                          f"here: {e}" + (f"\n{text}" if text else "")) from None
    if kind == "ok":
        return Profiled(value, report)
    if kind == "error":
        value.edgeprof_report = report
        raise value from RemoteTraceback(text)
    if kind == "refused":
        raise _core.Error(value)
    raise _core.Error(f"edgeprof.profile could not run {name}: {value}\n{text}")


def profiled_function(*, device: Union[str, "_core.Device"] = "raspberry-pi-4",
                      timeout: Optional[float] = None,
                      interval: Optional[float] = _core.DEFAULT_INTERVAL_S,
                      core_emulation: str = "auto",
                      count_activations: Optional[bool] = None) -> Callable:
    """Decorator form: each call of the decorated function runs under ``profile`` and returns
    ``Profiled(value, report)``::

        @edgeprof.profiled_function(device="jetson-nano")
        def infer(batch): ...

        value, report = infer(8)
    """
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Profiled:
            # The module's name for the function is now this wrapper: it is what pickles, and
            # the worker calls the function it wraps.
            return profile(call, *args, device=device, timeout=timeout, interval=interval,
                           core_emulation=core_emulation, count_activations=count_activations,
                           **kwargs)
        call.__edgeprof_wrapped__ = fn  # type: ignore[attr-defined]
        return call
    return wrap
