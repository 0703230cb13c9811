"""Phase marks for Python workloads: ``with edgeprof.phase("inference"): ...``.

The marks go through the C++ core's header-only channel (``edgeprof/phase.hpp``); outside
edgeprof they are cheap no-ops.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable

from edgeprof import _core


def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise TypeError(f"a phase's name is a str, not {type(name).__name__}")
    if not name:
        raise ValueError("a phase needs a non-empty name")


def _wire(name: str) -> "str | bytes":
    """``name`` as the core takes it: bytes where it holds surrogates, which UTF-8 cannot
    encode: bytes that are not UTF-8, as ``os.fsdecode`` hands them over, go as those bytes
    (the report writes them ``\\xNN``)."""
    try:
        name.encode()
        return name
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate of another kind
            return name.encode("utf-8", "surrogatepass")


class phase(contextlib.ContextDecorator):
    """Marks the enclosed block (or decorated function) as phase ``name`` of the workload.

    The report of a run under edgeprof then gives the phase its own wall time (measured by the
    workload's clock), CPU time and memory (sampled), and the memory net of what was in use
    when it began. Phases may nest and repeat; outside edgeprof this does nothing::

        with edgeprof.phase("load"):
            model = load_model()
        with edgeprof.phase("inference"):
            model(x)
    """

    def __init__(self, name: str) -> None:
        _check_name(name)
        self.name = name
        self._wire = _wire(name)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        # A generator's or coroutine's body runs after the call returns: the decorator's phase
        # ended before any of it ran (a phase of no time, at the generator's creation).
        kind = ("a generator function" if inspect.isgeneratorfunction(fn) else
                "an async generator function" if inspect.isasyncgenfunction(fn) else
                "a coroutine function" if inspect.iscoroutinefunction(fn) else None)
        if kind:
            raise TypeError(
                f"edgeprof.phase({self.name!r}) cannot decorate {kind} "
                f"({getattr(fn, '__qualname__', fn)!r}): its body runs after the call returns, "
                f"so the phase would end before it began; put `with "
                f"edgeprof.phase({self.name!r}):` inside it, around the work to time")
        return super().__call__(fn)

    def __enter__(self) -> "phase":
        _core.phase_begin(self._wire)
        return self

    def __exit__(self, *exc: object) -> bool:
        _core.phase_end(self._wire)
        return False


def mark(name: str) -> None:
    """Starts phase ``name``; the phase started by the previous ``mark`` ends here (the last one
    at exit). The simplest way to split a script into consecutive phases."""
    if not isinstance(name, str) or not name:  # inline: marks may be made in a loop
        _check_name(name)
    try:
        _core.mark(name)
    except TypeError:  # surrogates, which pybind11 cannot encode (as phase's)
        _core.mark(_wire(name))


def profiled() -> bool:
    """True when this process runs under edgeprof (its phase marks are recorded)."""
    return _core.profiled()
