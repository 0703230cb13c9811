"""Arguments of the wrong name or type named, instead of pybind11's dump of the whole signature.

pybind11 answers a misspelled keyword (``run(cmd, device=d, repaet=3)``) or a value it cannot
convert (``repeat=2**64``, ``interval="fast"``) with "incompatible function arguments", the
signature of 30 arguments and the call. ``install()`` wraps the extension's functions,
constructors and methods so that such a TypeError says which argument is wrong and what it must be (a
misspelled keyword with the names it most likely meant); where it cannot tell, pybind11's
message stands.
"""

from __future__ import annotations

import difflib
import functools
import types
from dataclasses import dataclass
from typing import Any, Callable, Optional

# pybind11's words for a function's and a constructor's call it could not match.
_INCOMPATIBLE = ("incompatible function arguments", "incompatible constructor arguments")


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: str
    required: bool
    keyword_only: bool


@functools.lru_cache(maxsize=256)
def _split_top(text: str, sep: str) -> tuple[str, ...]:
    """`text` split at `sep` outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return tuple(p.strip() for p in parts)


def _signature(doc: Optional[str]) -> Optional[tuple[str, list[_Param]]]:
    """The name and parameters of pybind11's first docstring line, `name(a: T, *, b: U = 1) ->
    R`; None for an overloaded function or a line of another form."""
    line = (doc or "").split("\n", 1)[0]
    open_at = line.find("(")
    close_at = line.rfind(") ->")
    if open_at <= 0 or close_at < open_at:
        return None
    params, keyword_only = [], False
    for part in _split_top(line[open_at + 1:close_at], ","):
        if part in ("*", "/") or not part:
            keyword_only = keyword_only or part == "*"
            continue
        head, _, default = part.partition("=")
        name, _, annotation = head.partition(":")
        name = name.strip()
        if name.startswith("*"):
            return None  # *args, **kwargs: anything goes
        if name != "self":
            params.append(_Param(name, annotation.strip(), not default.strip(), keyword_only))
    return line[:open_at], params


def _number_like(value: Any) -> bool:
    return any(hasattr(type(value), m) for m in ("__index__", "__int__", "__float__"))


# Items of a sequence looked at: enough to find a wrong one, few enough for an array of
# millions to be refused at once.
_ITEMS_CHECKED = 1000


def _items(value: Any) -> Optional[list]:
    """The first items of a list, tuple or numpy array, which pybind11 takes as a sequence; None
    for a str, bytes or number. Another iterable (a set, a generator, a dict's values) pybind11
    may convert too: not judged here (_CannotTell)."""
    if isinstance(value, (str, bytes)) or _number_like(value) and not hasattr(value, "__len__"):
        return None
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
        return list(value[:_ITEMS_CHECKED])
    if not hasattr(type(value), "__iter__"):
        return None
    raise _CannotTell


def _fits_one(alt: str, value: Any) -> bool:
    if alt == "None":
        return value is None
    if alt == "object":  # pybind11 takes anything; the function converts it itself
        return True
    if alt == "bool":  # with conversion, whatever has a truth value of its own, and None
        return value is None or hasattr(type(value), "__bool__")
    if alt == "str":
        return isinstance(value, (str, bytes, bytearray))
    if alt in ("typing.SupportsInt", "typing.SupportsIndex", "int"):
        if isinstance(value, float) or not _number_like(value):
            return False
        if isinstance(value, int):
            return -2**63 <= value < 2**64
        return True
    if alt in ("typing.SupportsFloat", "float"):
        return _number_like(value)
    if alt.startswith(("collections.abc.Sequence[", "list[")):
        items = _items(value)
        inner = alt[alt.index("[") + 1:-1]
        return items is not None and all(_fits_strict(inner, v) for v in items)
    if alt.startswith("collections.abc.Callable"):
        return callable(value)
    raise _CannotTell  # a class, a mapping, a type pybind11 names otherwise


class _CannotTell(Exception):
    pass


def _fits_strict(annotation: str, value: Any) -> bool:
    """_fits, raising _CannotTell (or what a value's iteration raised) where it cannot tell."""
    return any(_fits_one(alt, value) for alt in _split_top(annotation, "|"))


def _fits(annotation: str, value: Any) -> bool:
    """Whether pybind11 could convert `value` to `annotation` (as it writes it): False only
    where it surely could not; True where it cannot be told here."""
    try:
        return _fits_strict(annotation, value)
    except Exception:  # _CannotTell, or a value whose __len__ or iteration raised
        return True


def _judged(annotation: str, value: Any) -> bool:
    """Whether _fits could tell (not a class, a mapping, a list of them, a value whose
    iteration raised)."""
    try:
        _fits_strict(annotation, value)
    except Exception:
        return False
    return True


def _says(annotation: str) -> str:
    words = {"None": "None", "bool": "True or False", "str": "a str",
             "typing.SupportsInt": "an int", "typing.SupportsFloat": "a number",
             "typing.SupportsIndex": "", "object": "anything"}
    out = []
    for alt in _split_top(annotation, "|"):
        said = words.get(alt, alt)
        if alt.startswith("collections.abc.Sequence["):
            said = f"a list whose items are each {_says(alt[alt.index('[') + 1:-1])}"
        if said and said not in out:
            out.append(said)
    return " or ".join(out)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _diagnosis(params: list[_Param], args: tuple, kwargs: dict) -> list[str]:
    """What is wrong with this call, one line per argument; [] when nothing can be told."""
    problems = []
    names = [p.name for p in params]
    positional = [p for p in params if not p.keyword_only]
    if len(args) > len(positional):
        problems.append(f"{len(args)} positional arguments given, {len(positional)} taken "
                        f"({', '.join(p.name for p in positional) or 'none'}): pass the others "
                        f"by name")
    given = dict(zip((p.name for p in positional), args))
    suggested = set()
    for key, value in kwargs.items():
        if key in names:
            if key in given:
                problems.append(f"{key} given twice, by position and by name")
            given[key] = value
            continue
        close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
        suggested.update(close)
        problems.append(f"no argument named {key!r}"
                        + (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close
                           else f" (it takes {', '.join(names)})"))
    missing = [p.name for p in params
               if p.required and p.name not in given and p.name not in suggested]
    if missing and len(args) <= len(positional):  # else perhaps given, by position
        problems.append(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    for p in params:
        if p.name not in given:
            continue
        if not _fits(p.annotation, given[p.name]):
            value = given[p.name]
            if (isinstance(value, int) and not isinstance(value, bool)
                    and p.annotation.startswith("typing.SupportsInt")):
                problems.append(f"{p.name}={_shown(value)} is out of range")
            else:
                problems.append(f"{p.name}={_shown(value)} ({type(value).__name__}) is not "
                                f"{_says(p.annotation)}")
    if not problems and all(_judged(p.annotation, given[p.name]) for p in params
                            if p.name in given):
        # pybind11 writes every C++ integer as "int": one past a C++ int (repeat=2**40) or a
        # negative one (an unsigned period or size) is the likely culprit when every other
        # argument surely converts, but only perhaps (an int64_t holds the one, a signed int
        # the other).
        for p in params:
            value = given.get(p.name)
            if (isinstance(value, int) and not isinstance(value, bool)
                    and p.annotation.startswith("typing.SupportsInt")):
                if value < 0:
                    problems.append(f"{p.name}={_shown(value)} is perhaps out of range (where "
                                    f"an unsigned number is taken: 0 or more)")
                elif value >= 2**31:
                    problems.append(f"{p.name}={_shown(value)} is perhaps out of range (where "
                                    f"a C++ int is taken: -2147483648 to 2147483647)")
    return problems


def _explained(fn: Callable, label: str, params: list[_Param], method: bool,
               module: str, qualname: str) -> Callable:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            # Only pybind11's own refusal of this call: raised by the function itself, with no
            # Python frame below this one (a callback's refusal of another call has frames).
            if e.__traceback__ is None or e.__traceback__.tb_next is not None \
                    or not any(words in str(e) for words in _INCOMPATIBLE):
                raise
            try:
                # A constructor's self is not one of its parameters.
                problems = _diagnosis(params, args[1:] if method else args, kwargs)
            except Exception:
                problems = []
            if not problems:
                raise
            raise TypeError(f"{label}: {'; '.join(problems)}") from None
    # Found again by pickle (a process pool's, functools.partial's) where it was taken from.
    call.__module__ = module
    call.__qualname__ = qualname
    return call


# Called inside a workload's loops, where a Python frame more is a cost to measure.
_UNWRAPPED = frozenset({"mark", "phase_begin", "phase_end"})
# Private functions of the core that a Python function passes its caller's arguments to: named
# by that function's name (compare()'s wrong-typed argument was pybind11's "incompatible
# function arguments" with every positional value of the call).
_PRIVATE_AS = {"_compare": "compare()"}


def install(module: types.ModuleType) -> None:
    """Wraps `module`'s functions and its classes' constructors and methods (pybind11's, not
    overloaded)."""
    for attr, value in list(vars(module).items()):
        if attr.startswith("_") and attr not in _PRIVATE_AS or attr in _UNWRAPPED:
            continue
        if isinstance(value, types.BuiltinFunctionType):
            sig = _signature(value.__doc__)
            if sig and sig[1]:  # one without parameters has no argument to name
                label = _PRIVATE_AS.get(attr, f"{attr}()")
                setattr(module, attr, _explained(value, label, sig[1], False, module.__name__,
                                                 attr))
        elif isinstance(value, type):
            _install_class(value, attr, module.__name__)


def _install_class(cls: type, attr: str, module: str) -> None:
    """Wraps a class's constructor, methods and static methods (pybind11's, not overloaded)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue  # operators and Python's protocol: not called with arguments to name
        static = isinstance(member, staticmethod)
        fn = member.__func__ if static else member
        sig = _signature(getattr(fn, "__doc__", None))
        if not sig or sig[0] != name or not sig[1]:
            continue  # one without parameters has no argument to name
        if static and isinstance(fn, types.BuiltinFunctionType):
            setattr(cls, name, staticmethod(_explained(fn, f"{attr}.{name}()", sig[1], False,
                                                       module, f"{attr}.{name}")))
        elif type(fn).__name__ == "instancemethod":
            label = f"{attr}()" if name == "__init__" else f"{attr}.{name}()"
            setattr(cls, name, _explained(fn, label, sig[1], True, module, f"{attr}.{name}"))
