"""Pythonic entry points to the C++ ranking and projection code: they turn results, mappings
and numbers into the core's inputs, and nothing more."""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from edgeprof import _core, _files

_Measured = Union["_core.Result", "_core.RepeatedResult", float, Sequence[float]]


def _samples(value: Any, metric: Optional[str], name: str) -> list[float]:
    if isinstance(value, (_core.RepeatedResult, _core.Result)):
        try:
            return _core.figure_samples(value, metric or "all_cores_wall_time_s")
        except _core.Error as e:  # a failed run, a missing figure: which item's
            raise _core.Error(f"{name!r}: {e}") from None
    def refused(what: Any) -> TypeError:
        return TypeError(f"{name!r}: expected a Result, a RepeatedResult, a number or a "
                         f"sequence of numbers, got {what}")

    if isinstance(value, (str, bytes, bytearray, Mapping)) or getattr(value, "ndim", 1) > 1:
        # Iterable, and "12" would be ranked as the samples 1 and 2, a DataFrame by its labels.
        raise refused(type(value).__name__)
    if getattr(value, "ndim", None) == 0 or isinstance(value, (int, float)) or (
            not hasattr(value, "__iter__") and hasattr(value, "__float__")):
        try:  # numpy scalars and 0-d arrays too (a DataFrame column's max())
            return [float(value)]
        except (TypeError, ValueError):
            raise refused(type(value).__name__) from None
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        raise refused(f"{type(value).__name__} {_shown(value)}") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _pairs(items: Union[Mapping[str, Any], Iterable[tuple[str, Any]]]) -> list[tuple[str, Any]]:
    return list(items.items()) if isinstance(items, Mapping) else list(items)


def rank(items: Union[Mapping[str, _Measured], Iterable[tuple[str, _Measured]]],
         metric: Optional[str] = None, *, higher_is_better: bool = False,
         test: str = "mann-whitney", alpha: float = 0.05) -> list["_core.RankedItem"]:
    """Ranks items best first by the median of ``metric`` (default ``all_cores_wall_time_s``: the
    device's time with all its cores, projected or measured; ``Result.all_cores_s``).

    ``items`` maps names to a ``Result`` (one measurement), a ``RepeatedResult`` (its runs), a
    number, or a sequence of numbers. Two items share a rank (``tied``) when the test
    (``"mann-whitney"``, two-sided, or ``"welch"``) does not find them different at ``alpha``:
    each item's rank is 1 + the number of items significantly better, never above an item with
    a better median. Mann-Whitney needs 4 or more runs per item to separate anything at 0.05.
    The input is not modified.
    """
    pairs = _pairs(items)
    names = [str(n) for n, _ in pairs]
    samples = [_samples(v, metric, n) for n, v in pairs]
    return _core._rank(names, samples, higher_is_better, test, alpha)


def pareto(items: Union[Mapping[str, Mapping[str, float]], Iterable[tuple[str, Mapping[str, float]]]],
           objectives: Mapping[str, str]) -> list[str]:
    """The names of the items on the Pareto front.

    ``items`` maps names to their figures (``{"mobilenet": {"time": 0.02, "memory": 12e6,
    "accuracy": 0.71}}``); ``objectives`` says which to use and how: ``{"time": "min",
    "memory": "min", "accuracy": "max"}``.
    """
    pairs = _pairs(items)
    for key, direction in objectives.items():
        if direction not in ("min", "max"):
            raise ValueError(f"objective {key!r}: direction must be 'min' or 'max', not "
                             f"{direction!r}")
    try:
        metrics = [[float(figs[key]) for _, figs in pairs] for key in objectives]
    except KeyError as e:
        raise KeyError(f"an item has no figure {e.args[0]!r}") from None
    flags = _core.pareto_front(metrics, [d == "max" for d in objectives.values()])
    return [name for (name, _), on in zip(pairs, flags) if on]


def save_calibrations(path: Union[str, os.PathLike], calibrations: Sequence["_core.Calibration"]) -> None:
    """Writes calibrations (with their points) to a JSON file. One that cannot be written (a
    core_emulation that is not projected, pooled or per-core) raises before the file is opened."""
    text = _core.calibrations_to_json(list(calibrations))
    _files.write_text(path, text, "calibrations to")  # whole or not at all


def load_calibrations(path: Union[str, os.PathLike]) -> list["_core.Calibration"]:
    """Reads calibrations back (each is refitted from its points and checked)."""
    text = _files.read_text(path, "calibrations from")
    try:
        return _core.calibrations_from_json(text)
    except _core.Error as e:
        raise _core.Error(f"{os.fsdecode(os.fspath(path))}: {e}") from None
