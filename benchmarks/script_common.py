"""What the Python benchmark scripts in this directory share."""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Optional


def edgeprof_as_root(program: str) -> Optional[ModuleType]:
    """The edgeprof package, when this process can create slices; else None, after saying on
    stderr why `program` cannot run here (its caller then exits 77, "skipped")."""
    if os.geteuid() != 0:
        print(f"{program}: cannot run here: needs root (edgeprof creates slices beneath this "
              "process's own cgroups)", file=sys.stderr)
        return None
    try:
        import edgeprof
    except ImportError as e:
        print(f"{program}: cannot run here: edgeprof is not importable ({e}); install it with "
              "pip install . (README's first command)", file=sys.stderr)
        return None
    return edgeprof
