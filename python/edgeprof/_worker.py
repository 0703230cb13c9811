"""The worker process of ``edgeprof.profile``: started inside the device's slice (from its first
instruction), it loads the pickled call, runs it inside the phase "function", and writes back
the value or the exception. Run as ``python -m edgeprof._worker CALL RESULT``."""

import os
import pickle
import sys
import traceback


def _load(path):
    with open(path, "rb") as f:
        payload = pickle.load(f)
    sys.path[:] = payload["sys_path"]
    main_path = payload.get("main_path")
    if main_path:
        # Functions defined in the caller's script pickle as __main__.name: load that script as
        # __mp_main__ (not running its `if __name__ == "__main__"` block), as multiprocessing's
        # spawn does.
        import runpy
        import types

        from edgeprof import _profile
        module = types.ModuleType("__mp_main__")
        # A profile() call the script makes outside `if __name__ == "__main__":` would run
        # again here, in the slice: it fails at once instead, saying so (issue 36, item 9).
        _profile._loading_main = main_path
        try:
            module.__dict__.update(runpy.run_path(main_path, run_name="__mp_main__"))
        finally:
            _profile._loading_main = None
        sys.modules["__mp_main__"] = sys.modules["__main__"] = module
    loads = pickle.loads
    if payload.get("cloudpickle"):
        import cloudpickle
        loads = cloudpickle.loads
    return loads(payload["call"])


def main(call_path, result_path):
    try:
        fn, args, kwargs = _load(call_path)
        fn = getattr(fn, "__edgeprof_wrapped__", fn)  # the decorator form
    except BaseException as e:  # noqa: BLE001 - reported to the caller, whatever it is
        if type(e).__name__ == "_UnguardedMain":  # says all the caller needs
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
    # The value (or exception) pickled on its own, so that the caller still gets the kind and
    # the traceback text when it does not unpickle there.
    kind, value, text = outcome
    try:
        inner = pickle.dumps(value)
    except Exception as e:  # noqa: BLE001
        what = "return value" if kind == "ok" else "exception"
        kind, inner = "unpicklable", pickle.dumps(f"the {what} of the function cannot be "
                                                  f"pickled: {e}")
    data = pickle.dumps((kind, inner, text))
    # Whole or not at all: a worker killed mid-write (its timeout, the OOM killer: the value is
    # several copies in the slice's memory here) leaves no result, not a truncated one.
    with open(result_path + ".part", "wb") as f:
        f.write(data)
    os.replace(result_path + ".part", result_path)
    os._exit(0)  # no interpreter teardown in the measurement


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
