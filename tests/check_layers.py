#!/usr/bin/env python3
"""The library's layers include only downward (docs/architecture.md#layers-and-the-rule-of-imports).

Every private source is in a folder of src/ named for its layer; a file may include the
public headers (edgeprof/...), the generated ones, and private headers of its own layer or of
the layers LAYERS lets it use. Prints each include that runs upward (or into a folder no layer
owns) and exits 1; exits 0 when there is none.

usage: check_layers.py [SOURCE_DIR]   (default: the checkout this script is in)
"""

import posixpath
import re
import sys
from pathlib import Path

# Layer -> the layers below it that it may include (besides itself). Lower layers first.
LAYERS = {
    "sys": [],
    "cgroup": ["sys"],
    "suite": ["sys"],
    "nn": ["suite", "sys"],
    "sampler": ["nn", "cgroup", "sys"],
    "device": ["nn", "suite", "cgroup", "sys"],
    "analysis": ["sys"],
    "run": ["sampler", "analysis", "nn", "cgroup", "sys"],
    "report": ["device", "analysis", "nn", "suite", "sys"],
    "study": ["nn", "suite", "sys"],
    "probe": ["suite", "sys"],
}
# Headers the build generates (build/generated): anyone may include them.
GENERATED = {"catalog_data.hpp", "nn_runner.hpp"}
# Folders of data the build compiles in (the device catalog, for the device layer).
DATA = {"catalog"}
# Quoted includes, and bracketed ones (which -I src resolves too when they name a layer's folder).
INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<([^>]+)>)', re.M)


def problems(root: Path) -> list:
    src = root / "src"
    out = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".in") or not path.is_file():
            continue
        rel = path.relative_to(src)
        if len(rel.parts) < 2:
            out.append(f"src/{rel}: not in a layer's folder ({', '.join(LAYERS)})")
            continue
        layer = rel.parts[0]
        if layer in DATA:
            continue
        if layer not in LAYERS:
            out.append(f"src/{rel}: src/{layer}/ is no layer ({', '.join(LAYERS)})")
            continue
        allowed = {layer, *LAYERS[layer]}
        for quoted, bracketed in INCLUDE.findall(path.read_text()):
            included = posixpath.normpath(quoted or bracketed)
            if bracketed and not (src / included).is_file():
                continue  # a system or library header
            if included.startswith("edgeprof/") or included in GENERATED:
                continue
            if "/" not in included and (path.parent / included).is_file():
                target = layer  # a header beside it
            else:
                target = included.split("/")[0] if "/" in included else None
            if target not in allowed:
                out.append(f"src/{rel}: includes \"{included}\", of layer {target or 'none'}; "
                           f"{layer} may include {', '.join(sorted(allowed))}")
    return out


def self_test() -> None:
    """The check finds an upward include, a file outside the layers and an unknown folder, and
    passes a downward include and a header beside its source."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src/sys").mkdir(parents=True)
        (root / "src/run").mkdir()
        (root / "src/sys/fs.hpp").write_text("#pragma once\n")
        (root / "src/run/slice.cpp").write_text('#include "run/x.hpp"\n#include "sys/fs.hpp"\n'
                                                '#include "edgeprof/slice.hpp"\n')
        (root / "src/run/x.hpp").write_text('#include "x.hpp"\n')
        assert problems(root) == [], problems(root)
        (root / "src/sys/fs.cpp").write_text('#include "run/x.hpp"\n#include <run/x.hpp>\n'
                                             '#include "sys/../run/x.hpp"\n#include <vector>\n')
        (root / "src/flat.cpp").write_text("")
        (root / "src/misc").mkdir()
        (root / "src/misc/a.cpp").write_text("")
        found = problems(root)
        assert len(found) == 5, found
        assert any('src/sys/fs.cpp: includes "run/x.hpp", of layer run' in p for p in found)


def main() -> int:
    self_test()
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    found = problems(root)
    for p in found:
        print(p)
    if found:
        print(f"check_layers: {len(found)} include(s) against the layers "
              "(docs/architecture.md#layers-and-the-rule-of-imports)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
