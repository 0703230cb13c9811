"""``edgeprof.profile``: run a Python function on an emulated device and get its value and
its report."""

from __future__ import annotations

import fcntl
import functools
import os
import pickle
import select
import struct
import sys
import tempfile
import threading
from typing import Any, BinaryIO, Callable, NamedTuple, Optional, Union

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

    def __reduce__(self) -> tuple:
        # With its report: pickled as its args alone, it could not be made again (report is
        # required), and a process pool whose task raised it broke. Its other attributes (and
        # __notes__) travel as its state.
        state = {k: v for k, v in self.__dict__.items() if k != "report"}
        return (type(self), (str(self), self.report), state or None)


# The caller's script while edgeprof's worker loads it to find a function of its __main__
# (None otherwise).
_loading_main: Optional[str] = None


class _UnguardedMain(BaseException):
    """profile() called while the worker loaded the caller's script. Not an Exception: the
    script's own `except Exception` around its profile() call caught it, and the rest of the
    script then ran in the slice, counted in every report."""


class _WorkerMismatch(Exception):
    """The worker's edgeprof is not the caller's: the call file may not read the same."""


def _main_source() -> Optional[tuple[str, str]]:
    """How the worker can load the caller's ``__main__``: ``("module", name)`` for ``python -m
    name`` (run as a module, so its relative imports work), ``("path", file)`` for a script,
    None for an interactive one (a notebook, the REPL, ``python -c``, a script piped to
    ``python -``, whose ``__file__`` is ``"<stdin>"``)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name and name != "__main__":  # ("__main__": a directory or zip file run, found by path)
        return ("module", name)
    path = getattr(main, "__file__", None)
    if isinstance(path, str) and os.path.isfile(path):
        return ("path", os.path.abspath(path))
    return None


def _pickled_call(fn: Callable, args: tuple, kwargs: dict) -> dict:
    # sys.argv too, as multiprocessing's spawn restores it: the worker's own (the call's and the
    # result's paths) broke a script that reads its arguments as it loads.
    # The caller's edgeprof version: a worker of another version (another environment's
    # interpreter) may read the file otherwise, and said only that the call could not be run.
    payload: dict[str, Any] = {"edgeprof": _core.__version__, "sys_path": list(sys.path),
                               "argv": list(sys.argv)}
    main = _main_source()
    if main is not None:
        # The worker loads it when the call names anything of __main__: the function, or an
        # argument (a partial of a function of the script, an instance of its class).
        payload["main"] = main
    # What an interactive __main__ defines pickles by reference without error, yet the worker
    # has no such module to find it in: it goes by value (cloudpickle) instead.
    interactive_fn = main is None and getattr(fn, "__module__", None) == "__main__"
    error: Optional[Exception] = None
    call: Optional[bytes] = None
    if not interactive_fn:
        try:
            call = pickle.dumps((fn, args, kwargs))
        except Exception as e:  # noqa: BLE001 - ValueError (ctypes), RecursionError, ...
            error = e
        else:
            # (A string "__main__" among the arguments also sends them by value: no harm.)
            if main is not None or b"__main__" not in call:
                payload["call"] = call
                return payload
    try:
        import cloudpickle  # lambdas, closures, functions defined in a notebook
    except ImportError:
        if call is not None:  # it pickled: "__main__" may be a string among the arguments
            payload["call"] = call
            return payload
        why = (f"{error}" if error else
               f"{getattr(fn, '__qualname__', fn)!r} or its arguments refer to what is defined "
               f"in an interactive session (a notebook, the REPL, python -c or a script piped "
               f"to python -), which the worker cannot import")
        raise TypeError(
            f"edgeprof.profile runs the function in a fresh process and needs to pickle it "
            f"and its arguments: {why}. Define the function in a module, or install "
            f"cloudpickle (pip install cloudpickle) for lambdas and notebook functions"
        ) from error
    # By value, the decorator's wrapper would bring its options too (a Device does not pickle):
    # the function it wraps is what the worker calls.
    try:
        payload["call"] = cloudpickle.dumps((getattr(fn, "__edgeprof_wrapped__", fn), args,
                                             kwargs))
    except Exception as e:  # noqa: BLE001 - a lock, a socket, an open file: cloudpickle's own
        if isinstance(e, RecursionError) or "recursion" in str(e):  # cloudpickle's own words
            hint = ("an argument is nested too deep to pickle (pass it flatter, or what the "
                    "function needs to build it)")
        elif isinstance(e, TypeError) and "pickle" in str(e):
            hint = ("pass what the function needs to build such objects itself (a path, not "
                    "an open file; no locks or sockets)")
        else:  # an object's own __reduce__ or __getstate__ raised it
            hint = "the object named in the traceback above could not be pickled"
        raise TypeError(
            f"edgeprof.profile runs the function in a fresh process and needs to pickle it "
            f"and its arguments: {type(e).__name__}: {e}. {hint[0].upper()}{hint[1:]}"
        ) from e
    return payload


class _Unpickler(pickle.Unpickler):
    """Unpickles what one side of a profile() call pickled on the other: the worker's copy of
    the caller's script is module ``__mp_main__`` there (as multiprocessing names it), the
    caller's ``__main__`` here. ``before_main`` loads the worker's copy when first named."""

    def __init__(self, file: BinaryIO, before_main: Optional[Callable[[], None]] = None) -> None:
        super().__init__(file)
        self._before_main = before_main

    def find_class(self, module: str, name: str) -> Any:
        if module in ("__main__", "__mp_main__"):
            if self._before_main is not None:
                self._before_main()
                self._before_main = None
            module = "__main__"
        return super().find_class(module, name)


class _Deframer:
    """The caller's side of _Records: the records in the bytes fed, a record dropped or cut
    short left out. A frame's data goes into its record as it comes (waiting for a whole frame
    of up to 1 GiB held it three times over)."""

    def __init__(self) -> None:
        self.records: list[bytearray] = []
        self._record = bytearray()
        self._header = bytearray()  # of the next frame, until its 4 bytes are in
        self._left = 0  # bytes of the current frame's data still to come

    def feed(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            if self._left:
                take = min(self._left, len(view))
                self._record += view[:take]
                self._left -= take
                view = view[take:]
                continue
            take = 4 - len(self._header)
            self._header += view[:take]
            view = view[take:]
            if len(self._header) < 4:
                return
            (length,) = struct.unpack("<I", self._header)
            self._header.clear()
            if length == _Records.END:
                self.records.append(self._record)
                self._record = bytearray()
            elif length == _Records.DROP:
                self._record = bytearray()
            else:
                self._left = length


class _PipeReader:
    """Reads a FIFO into `records` (_Deframer) on a thread while the worker writes it. It holds
    a write end of its own while the `with` block runs, so that the worker's open never waits;
    at the block's end (the worker reaped, its writes all in the pipe) it reads what is left
    and stops, whoever else may hold a write end (a fork of the caller's, a process that left
    the slice). An error of the reader is raised there; the pipe is drained meanwhile, so that
    the worker never blocks on it."""

    def __init__(self, path: str) -> None:
        self._frames = _Deframer()
        self.records = self._frames.records
        self._error: Optional[BaseException] = None
        # Non-blocking, the read end opens without a writer; then its own write end.
        self._read = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self._hold = self._wake_read = self._wake_write = -1
        try:
            self._hold = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
            try:  # fewer wake-ups of this thread (each takes the GIL): best effort
                fcntl.fcntl(self._read, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
            except OSError:
                pass
            self._thread = threading.Thread(target=self._drain, name="edgeprof-profile-result",
                                            daemon=True)
            self._thread.start()
        except BaseException:
            self._close()
            raise

    def _drain(self) -> None:
        poller = select.poll()
        poller.register(self._read, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        stopping = False
        while True:
            if not stopping:
                stopping = any(fd == self._wake_read for fd, _ in poller.poll())
            try:
                chunk = os.read(self._read, 1 << 20)
            except BlockingIOError:  # all read
                if stopping:
                    return
                continue
            except OSError as e:
                self._error = e
                return
            if not chunk:
                return
            if self._error is None:
                try:
                    self._frames.feed(chunk)
                except BaseException as e:  # noqa: BLE001 - raised by __exit__; read on
                    self._error = e
                    self._frames.records.clear()

    def __enter__(self) -> "_PipeReader":
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            os.write(self._wake_write, b"x")
            self._thread.join()
        finally:
            if not self._thread.is_alive():  # (a Ctrl-C in the join: left to the thread)
                self._close()
        if self._error is not None and exc[0] is None:
            raise _core.Error(f"edgeprof.profile could not read the worker's result: "
                              f"{type(self._error).__name__}: {self._error}") from self._error

    def _close(self) -> None:
        for fd in (self._read, self._hold, self._wake_read, self._wake_write):
            if fd >= 0:
                os.close(fd)
        self._read = self._hold = self._wake_read = self._wake_write = -1


class _ReadOnly:
    """A file over bytes already in memory, for the unpickler (io.BytesIO copies a bytearray:
    a large result twice in the caller's memory)."""

    def __init__(self, data: bytearray) -> None:
        self._view = memoryview(data)
        self._at = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._view) if n < 0 else min(len(self._view), self._at + n)
        out = bytes(self._view[self._at:end])
        self._at = end
        return out

    def readinto(self, buffer: Any) -> int:
        target = memoryview(buffer).cast("B")
        n = min(len(target), len(self._view) - self._at)
        target[:n] = self._view[self._at:self._at + n]
        self._at += n
        return n

    def readline(self) -> bytes:
        rest = self._view[self._at:]
        end = bytes(rest[:1 << 16]).find(b"\n")  # pickle's text lines (protocol 0) are short
        return self.read(end + 1 if end >= 0 else len(rest))


def _write_call(path: str, payload: dict) -> None:
    """The call's file for the worker: the header, then the call's own pickle as it is, which
    the worker unpickles from the file as it reads. Pickled inside the header, the worker held
    its bytes and the objects made from them at once, in the slice: twice the arguments' size
    counted in the peak, and a call that fitted was OOM-killed."""
    header = {k: v for k, v in payload.items() if k != "call"}
    with open(path, "wb") as f:
        pickle.dump(header, f)
        f.write(payload["call"])


class _Records:
    """The worker's side of the result pipe: records of length-framed bytes, each ended by
    end() or dropped by drop() (a value that did not pickle after all: a pipe cannot be
    truncated as the result file was). Frames hold at most 1 GiB each."""

    END, DROP = 0, 0xFFFFFFFF

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def write(self, data: Any) -> int:
        # A PickleBuffer (protocol 5's out-of-band data) in C or Fortran order alike.
        view = data.raw() if isinstance(data, pickle.PickleBuffer) else memoryview(data).cast("B")
        for at in range(0, len(view), 1 << 30):
            part = view[at:at + (1 << 30)]
            self._raw.write(struct.pack("<I", len(part)))
            self._raw.write(part)
        return len(view)

    def end(self) -> None:
        self._raw.write(struct.pack("<I", self.END))

    def drop(self) -> None:
        self._raw.write(struct.pack("<I", self.DROP))


def _dump(value: Any, records: _Records) -> None:
    """Pickles ``value`` into a record as it goes (a large value is not copied whole into
    memory first: in the worker that memory is the slice's); by value (cloudpickle) what pickle
    cannot find by name: a class of the caller's notebook that the call brought by value, whose
    instance the function returns or raises. cloudpickle gives the caller its own class back."""
    try:
        pickle.dump(value, records, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:  # the pipe's, not the value's
        raise
    except Exception as e:  # noqa: BLE001 - whatever pickle raises, cloudpickle may manage
        try:
            import cloudpickle
        except ImportError:
            raise e from None
        records.drop()
        cloudpickle.dump(value, records, protocol=pickle.HIGHEST_PROTOCOL)
    records.end()


def profile(fn: Callable, /, *args: Any, device: Union[str, "_core.Device"] = "raspberry-pi-4",
            timeout: Optional[float] = None, interval: Optional[float] = _core.DEFAULT_INTERVAL_S,
            isolate_network: bool = False, core_emulation: str = "auto",
            count_activations: Optional[bool] = None, **kwargs: Any) -> Profiled:
    """Runs ``fn(*args, **kwargs)`` in a fresh Python process inside a slice emulating
    ``device``, and returns ``Profiled(value, report)``.

    The process is a new interpreter (started by exec, never a fork of this one, so threads and
    libraries like PyTorch in the caller are safe); it is in the slice from its first
    instruction. ``fn`` and its arguments are pickled (module-level functions; with cloudpickle
    installed, also lambdas and notebook functions); what the caller's script, module or
    notebook defines is found by the worker, and a value of its classes comes back as those
    classes. The report's phase ``function`` covers the call alone, without the interpreter's
    start-up. An exception in ``fn`` is raised here as the original type, with the worker's
    traceback as its ``__cause__`` and the report as its ``edgeprof_report`` (also when the
    value cannot be sent back); a ``sys.exit()`` in ``fn`` is an ``edgeprof.Error`` carrying
    the report, not the caller's exit. If the worker dies (out of memory, timeout), ``WorkerDied``
    carries the report. ``core_emulation`` is ``run()``'s:
    ``"projected"`` runs ``fn`` on one of the device's cores and adds its all-core times to the
    report (``report.projected_s()``, docs/threads.md). ``count_activations`` is ``run()``'s too:
    on a device with published PyTorch (or ONNX Runtime) times a ``fn`` that runs a model of
    that runtime sets the device's speed by its own activations (None: on unless
    EDGEPROF_COUNT_ACTIVATIONS=0; docs/devices.md, "A workload's own speed"). Options of
    edgeprof (``device``, ``timeout``, ``interval``, ``isolate_network``, ``core_emulation``,
    ``count_activations``) cannot be passed to ``fn`` as keywords: use ``functools.partial``
    for those (``fn`` itself can: ``profile(apply, fn=step)``).
    """
    return _run(fn, args, kwargs, device=device, timeout=timeout, interval=interval,
                isolate_network=isolate_network, core_emulation=core_emulation,
                count_activations=count_activations)


def _run(fn: Callable, args: tuple, kwargs: dict, *, device: Union[str, "_core.Device"],
         timeout: Optional[float], interval: Optional[float], isolate_network: bool,
         core_emulation: str, count_activations: Optional[bool]) -> Profiled:
    if _loading_main is not None:
        raise _UnguardedMain(
            f"{_loading_main} calls edgeprof.profile when it is imported: the worker loads the "
            f"script to find its functions, so the call would run again inside the slice. Put "
            f"the script's calls under `if __name__ == \"__main__\":` (as multiprocessing "
            f"needs), or define the function in a module of its own")
    payload = _pickled_call(fn, args, kwargs)
    with tempfile.TemporaryDirectory(prefix="edgeprof-profile-") as tmp:
        call_path = os.path.join(tmp, "call.pickle")
        # The result comes back through a pipe: written to a file, its pages were the slice's
        # (a 64 MiB return value raised the report's peak by 64 MiB; on a tmpfs /tmp they
        # cannot be reclaimed, and a value that fitted was OOM-killed after the function
        # returned).
        result_path = os.path.join(tmp, "result.fifo")
        os.mkfifo(result_path, 0o600)
        _write_call(call_path, payload)
        with _PipeReader(result_path) as reader:
            report = _core.run([sys.executable, "-m", "edgeprof._worker", call_path,
                                result_path], device=device, timeout=timeout, interval=interval,
                               isolate_network=isolate_network, core_emulation=core_emulation,
                               count_activations=count_activations)
        name = getattr(fn, "__qualname__", repr(fn))
        what = ("was killed by the out-of-memory killer" if report.oom_killed else
                "timed out" if report.timed_out else
                f"ended by signal {report.signal}" if report.signal is not None else
                f"exited with code {report.exit_code} without a result")
        # The value's record, then the header's (kind, text): without the header, the worker
        # was cut short as it wrote (its timeout, the OOM killer), and there is no result.
        if len(reader.records) < 2:
            raise WorkerDied(f"the edgeprof worker running {name} {what} on {report.device.name}",
                             report)
        value_bytes, header = reader.records[0], reader.records[1]
        reader.records.clear()  # value_bytes alone holds the value's bytes
        try:
            kind, text = pickle.loads(header)
        except Exception as e:  # noqa: BLE001 - not what a worker of this edgeprof writes
            raise WorkerDied(f"the edgeprof worker running {name} on {report.device.name} left "
                             f"a result that cannot be read ({e})", report) from None
        try:
            value = _Unpickler(_ReadOnly(value_bytes)).load()
        except Exception as e:  # noqa: BLE001 - e.g. an exception class whose __init__ differs
            what = "return value" if kind == "ok" else "exception"
            raise _with_report(_core.Error(
                f"edgeprof.profile ran {name}, but its {what} cannot be unpickled here: {e}"
                + (f"\n{text}" if text else "")), report) from None
        del value_bytes
    if kind == "ok":
        return Profiled(value, report)
    if kind == "error" and isinstance(value, SystemExit):
        # The function called sys.exit() (a click command, an argparse main): re-raised here it
        # ended the caller (an Optuna study, whose catch= takes no BaseException) without a
        # word.
        raise _with_report(_core.Error(
            f"{name} called sys.exit({value.code!r}) in the edgeprof worker: profile a function "
            f"that returns (call the command's own function, not its entry point)"),
            report) from RemoteTraceback(text)
    if kind == "error":
        raise _with_report(value, report) from RemoteTraceback(text)
    if kind == "refused":
        raise _core.Error(value)
    if kind == "unpicklable":
        raise _with_report(_core.Error(f"edgeprof.profile ran {name}, but {value}"
                                       + (f"\n{text}" if text else "")), report)
    raise _core.Error(f"edgeprof.profile could not run {name}: {value}\n{text}")


def _with_report(error: BaseException, report: "_core.Result") -> BaseException:
    """The function ran: its report goes with the exception, as ``edgeprof_report``."""
    error.edgeprof_report = report  # type: ignore[attr-defined]
    return error


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
            # the worker calls the function it wraps. All the call's keywords are the
            # function's (a PyTorch `device="cpu"` too): the options were given above.
            return _run(call, args, kwargs, device=device, timeout=timeout, interval=interval,
                        isolate_network=False, core_emulation=core_emulation,
                        count_activations=count_activations)
        call.__edgeprof_wrapped__ = fn  # type: ignore[attr-defined]
        return call
    return wrap
