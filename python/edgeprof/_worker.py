"""The worker process of ``edgeprof.profile``: started inside the device's slice (from its first
instruction), it loads the pickled call, runs it inside the phase "function", and writes back
the value or the exception. Run as ``python -m edgeprof._worker CALL RESULT``."""

import os
import pickle
import sys
import traceback


def _load_main(kind, where):
    """Loads the caller's __main__ (a script's path, or the module run with -m) as __mp_main__,
    not running its `if __name__ == "__main__"` block, as multiprocessing's spawn does: what it
    defines pickles as __main__.name."""
    import runpy
    import types

    from edgeprof import _profile
    module = types.ModuleType("__mp_main__")
    # A profile() call the script makes outside `if __name__ == "__main__":` would run
    # again here, in the slice: it fails at once instead, saying so (issue 36, item 9).
    _profile._loading_main = where
    try:
        if kind == "module":  # its relative imports need its package
            content = runpy.run_module(where, run_name="__mp_main__", alter_sys=True)
        else:
            content = runpy.run_path(where, run_name="__mp_main__")
        module.__dict__.update(content)
    finally:
        _profile._loading_main = None
    sys.modules["__mp_main__"] = sys.modules["__main__"] = module


def _load(path):
    """The header (sys.path, argv, the caller's __main__), then the call, unpickled from the
    file as it is read (its bytes are never held whole beside the objects they make)."""
    from edgeprof import _core, _profile
    with open(path, "rb") as f:
        payload = pickle.load(f)
        theirs = payload.get("edgeprof") if isinstance(payload, dict) else None
        if theirs != _core.__version__:
            caller = (f"edgeprof {theirs}" if theirs else
                      "an older edgeprof (its call file names no version)")
            raise _profile._WorkerMismatch(
                f"the worker, started with the caller's Python, imported edgeprof "
                f"{_core.__version__}, but the caller runs {caller}: was edgeprof upgraded "
                f"since the caller imported it? Restart the notebook's kernel or the program")
        sys.path[:] = payload["sys_path"]
        sys.argv[:] = payload.get("argv", sys.argv)
        main = payload.get("main")
        return _profile._Unpickler(f, (lambda: _load_main(*main)) if main else None).load()


def main(call_path, result_path):
    from edgeprof import _profile
    try:
        fn, args, kwargs = _load(call_path)
        fn = getattr(fn, "__edgeprof_wrapped__", fn)  # the decorator form
    except BaseException as e:  # noqa: BLE001 - reported to the caller, whatever it is
        if type(e).__name__ in ("_UnguardedMain", "_WorkerMismatch"):  # says all it needs
            outcome = ("refused", str(e), "")
        else:
            outcome = ("load-error", f"{type(e).__name__}: {e}", traceback.format_exc())
    else:
        import edgeprof
        try:
            with edgeprof.phase("function"):
                value = fn(*args, **kwargs)
            outcome = ("ok", value, "")
        except BaseException as e:  # noqa: BLE001
            outcome = ("error", e, traceback.format_exc())
    # Into the caller's pipe: the value (or exception) as one record, then the kind and the
    # traceback's text as another. The caller takes the kind even when the value does not
    # unpickle there, and a result without it as none (a worker killed mid-write: its timeout,
    # the OOM killer).
    kind, value, text = outcome
    with open(result_path, "wb") as f:
        records = _profile._Records(f)
        try:
            _profile._dump(value, records)
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001
            what = "return value" if kind == "ok" else "exception"
            records.drop()
            kind = "unpicklable"
            pickle.dump(f"the {what} of the function cannot be pickled: {e}", records)
            records.end()
        pickle.dump((kind, text), records)
        records.end()
    # What the function printed: os._exit drops Python's buffers, and stdout to a file or a
    # pipe is block-buffered (`| tee log`, CI, capture_output lost it all).
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001 - a closed or full stream: nothing more to do
            pass
    try:  # and C's stdio (an extension's printf), which os._exit drops as well
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except Exception:  # noqa: BLE001 - no libc to load: nothing more to do
        pass
    os._exit(0)  # no interpreter teardown in the measurement


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
