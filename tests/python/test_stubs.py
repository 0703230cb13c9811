"""The type stubs (python/edgeprof/_core.pyi) describe the compiled module as it is: every public
function, class, attribute and method of edgeprof._core has a stub, and no stub names something
the module lacks. Editors and type checkers see only the stubs."""

import ast
import inspect
from pathlib import Path

import edgeprof
from edgeprof import _core

STUBS = Path(edgeprof.__file__).with_name("_core.pyi")


def _stub_names():
    tree = ast.parse(STUBS.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        elif isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            members[node.name] = names
    return top, members


def _public(obj):
    return {n for n in vars(obj) if not n.startswith("_")}


def test_every_public_name_of_the_module_has_a_stub_and_no_stub_is_stale():
    top, _ = _stub_names()
    module = {n for n in dir(_core) if not n.startswith("__")}
    assert sorted(module - top) == [], "missing from _core.pyi"
    # Names of the stubs' own (type aliases such as _Stream) start with an underscore.
    stale = {n for n in top - set(dir(_core)) if not n.startswith("_")}
    assert sorted(stale) == [], "in _core.pyi but not in edgeprof._core"


def test_every_class_member_has_a_stub():
    _, members = _stub_names()
    problems = []
    for name, cls in inspect.getmembers(_core, inspect.isclass):
        if issubclass(cls, BaseException) or name not in members:
            continue
        real = _public(cls)
        stub = {n for n in members[name] if not n.startswith("_")}
        if real - stub:
            problems.append(f"{name}: no stub for {sorted(real - stub)}")
        if stub - real:
            problems.append(f"{name}: stubs for missing {sorted(stub - real)}")
    assert problems == []
