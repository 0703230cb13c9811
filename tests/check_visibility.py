#!/usr/bin/env python3
"""Checks what a built libedgeprof (the static archive or a shared library) exports.

Every function and object that the public headers declare (namespace edgeprof, not its detail)
must have default visibility; nothing else of the library's own, nor of what it compiles in
(fmt, nlohmann_json, toml++), may. See include/edgeprof/export.hpp.

usage: tests/check_visibility.py LIBRARY        (needs readelf and c++filt: binutils)
"""
import re
import shutil
import subprocess
import sys

# Special names that belong to another entity, whose encoding follows: a guard variable (GV), a
# reference temporary (GR), a vtable, VTT, typeinfo or its name (TV TT TI TS), a thread-local
# wrapper or initialiser (TW TH), a construction vtable (TC), call-offset thunks (Th, Tv, Tc).
_SPECIAL = re.compile(r"GV|GR|T[VTISWH]|TC|Th[n]?\d+_|Tv[n]?\d+_[n]?\d+_|Tc(?:[hv][n]?\d+_(?:[n]?\d+_)?){2}")
# A nested name: N, cv- and ref-qualifiers, then the first component.
_NESTED = re.compile(r"N[rVK]*[RO]?(St|\d+)")
_UNNESTED = re.compile(r"(St|\d+)")


def owner(mangled):
    """("public" | "private" | "other") for a mangled symbol name."""
    if not mangled.startswith("_Z"):
        return "other"  # not C++
    rest = mangled[2:]
    while True:
        m = _SPECIAL.match(rest)
        if not m:
            break
        rest = rest[m.end():]
    if rest.startswith("Z"):  # a local entity (a lambda, a local static): its function's
        rest = rest[1:]
    m = _NESTED.match(rest)
    nested = m is not None
    if not nested:
        m = _UNNESTED.match(rest)
        if not m:
            return "other"
    if m.group(1) == "St":
        return "other"  # the standard library's (its headers make it default)
    if not nested:
        return "private"  # a global-namespace name
    pos = m.end(1)
    length = int(m.group(1))
    first = rest[pos:pos + length]
    if first in ("__gnu_cxx", "__cxxabiv1", "__gnu_debug"):
        return "other"  # the C++ runtime's, as std
    if first != "edgeprof":
        return "private"  # fmt, nlohmann, toml, an anonymous namespace, ...
    after = rest[pos + length:]
    n = re.match(r"\d+", after)
    if n and after[len(n.group()):len(n.group()) + int(n.group())] in ("detail", "_GLOBAL__N_1"):
        return "private"
    return "public"


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    lib = argv[1]
    for tool in ("readelf", "c++filt"):
        if not shutil.which(tool):
            print(f"check_visibility: {tool} not found (install binutils)", file=sys.stderr)
            return 2
    try:
        out = subprocess.run(["readelf", "-sW", lib], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"check_visibility: cannot read {lib}: {getattr(e, 'stderr', e)}", file=sys.stderr)
        return 2
    hidden_public, exported_private, public = set(), set(), 0
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) < 8 or f[3] not in ("FUNC", "OBJECT") or f[6] == "UND":
            continue
        bind, vis, name = f[4], f[5], f[7]
        if bind not in ("GLOBAL", "WEAK", "UNIQUE"):
            continue
        kind = owner(name)
        # Weak public symbols too: inline code, and the typeinfo of a class whose members are all
        # inline (the exceptions'), which must be one across libraries for `catch` to work.
        if kind == "public":
            if vis == "DEFAULT":
                public += bind == "GLOBAL"
            else:
                hidden_public.add(name)
        elif kind == "private" and vis == "DEFAULT":
            exported_private.add(name)

    def show(names):
        text = subprocess.run(["c++filt"], input="\n".join(sorted(names)), capture_output=True,
                              text=True).stdout
        return "".join(f"  {n}\n" for n in text.splitlines()[:50])

    status = 0
    if hidden_public:
        print(f"check_visibility: {len(hidden_public)} public-namespace symbols of {lib} are not "
              "exported: declare them in a public header (between EDGEPROF_API_BEGIN and "
              "EDGEPROF_API_END), or move them into edgeprof::detail or an anonymous namespace:\n"
              + show(hidden_public), file=sys.stderr)
        status = 1
    if exported_private:
        print(f"check_visibility: {len(exported_private)} private symbols of {lib} are exported "
              "(is the library built with CXX_VISIBILITY_PRESET hidden?):\n"
              + show(exported_private), file=sys.stderr)
        status = 1
    if public == 0:
        print(f"check_visibility: {lib} exports nothing of the public API", file=sys.stderr)
        status = 1
    if status == 0:
        print(f"check_visibility: {lib} exports {public} public symbols and nothing private")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
