"""edgeprof.profile: a Python function on an emulated device, in a fresh worker process."""

import os
import pickle
import subprocess
import sys
import threading

import pytest

import edgeprof
import profiled_functions as funcs
from conftest import HANG_S, requires_cgroups


@pytest.fixture
def board():
    return edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="512MiB")


@requires_cgroups
def test_value_and_report(board):
    value, report = edgeprof.profile(funcs.allocate, 64, device=board)
    assert value == 64 << 20
    assert report.ok and report.device.name == "board"
    phases = {p.name: p for p in report.phases}
    # The call alone, without the interpreter's start-up, and the buffer inside it. (Both times
    # are of the monotonic clock, and the phase lies within the run: no load can reorder them.)
    assert 0 < phases["function"].wall_time_s < report.wall_time_s
    # The buffer was allocated in the slice: the kernel's high-water mark (load cannot lower
    # it). How much of it the phase's samples caught depends on when the sampler ran (the
    # buffer goes as the phase ends); their figures are the arithmetic of those samples.
    assert report.peak_memory_bytes >= 64 << 20
    allocate = phases["allocate"]
    assert allocate.memory_net_peak_bytes == (
        allocate.memory_peak_bytes - allocate.memory_start_bytes) >= 0


@requires_cgroups
def test_exceptions_come_back_as_the_original_type_with_the_traceback(board):
    with pytest.raises(KeyError, match="missing weights") as info:
        edgeprof.profile(funcs.fail, "missing weights", device=board)
    cause = info.value.__cause__
    assert isinstance(cause, edgeprof.profiling.RemoteTraceback)
    assert "profiled_functions.py" in cause.text and "in fail" in cause.text
    assert info.value.edgeprof_report.exit_code == 0
    with pytest.raises(edgeprof.Error, match="cannot be unpickled here") as odd:
        edgeprof.profile(funcs.fail_oddly, device=board)
    assert "in fail_oddly" in str(odd.value)


@requires_cgroups
def test_a_worker_killed_for_memory_is_reported_with_its_report():
    small = edgeprof.Device(name="small", cores=1, core_speed=1.0, memory="96MiB")
    with pytest.raises(edgeprof.WorkerDied, match="out-of-memory") as info:
        edgeprof.profile(funcs.exhaust, device=small)
    assert info.value.report.oom_killed


@requires_cgroups
def test_safe_with_threads_in_the_caller(board):
    stop = threading.Event()
    busy = threading.Thread(target=lambda: stop.wait(10))
    busy.start()
    try:
        assert edgeprof.profile(funcs.with_threads, device=board).value == sum(range(10**6))
    finally:
        stop.set()
        busy.join()


@requires_cgroups
def test_decorator_form():
    value, report = funcs.decorated(21)
    assert value == 42 and report.ok
    # The call's keywords are all the function's: its device went to profile() ("got multiple
    # values for keyword argument 'device'").
    assert funcs.decorated(21, device="cuda").value == "cuda"


def test_unpicklable_functions_say_what_to_do():
    try:
        import cloudpickle  # noqa: F401
        pytest.skip("cloudpickle is installed: lambdas pickle")
    except ImportError:
        pass
    with pytest.raises(TypeError, match="Define the function in a module"):
        edgeprof.profile(lambda: 1)


@requires_cgroups
def test_functions_of_an_interactive_session_are_sent_by_value():
    # A notebook's or the REPL's functions live in a __main__ without a file: pickle accepts
    # them by reference, and a worker could not find them. `python -c` has the same __main__.
    pytest.importorskip("cloudpickle")
    code = ("import edgeprof\n"
            "def double(x):\n"
            "    return 2 * x\n"
            "value, report = edgeprof.profile(double, 21, device='raspberry-pi-4')\n"
            "print(value, report.ok)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["42", "True"]


@requires_cgroups
def test_a_script_without_the_main_guard_is_told_what_to_do(tmp_path):
    # Its worker loads the script to find the function, which ran the unguarded profile() call
    # again inside the slice and failed with "No module named '__mp_main__'" (issue 36, item 9).
    script = tmp_path / "unguarded.py"
    script.write_text("import edgeprof\n"
                      "def double(x):\n"
                      "    return 2 * x\n"
                      "value, report = edgeprof.profile(double, 21, device='raspberry-pi-4')\n"
                      "print(value)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 1
    assert "edgeprof.Error" in out.stderr and "__mp_main__" not in out.stderr, out.stderr
    assert 'if __name__ == "__main__":' in out.stderr and str(script) in out.stderr
    # Guarded, the same script runs.
    script.write_text(script.read_text().replace(
        "value, report", "if __name__ == '__main__':\n    value, report").replace(
        "print(value)", "    print(value)"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["42"]


@requires_cgroups
def test_a_script_catching_exception_around_an_unguarded_call_is_still_refused(tmp_path):
    # The refusal was an Exception: the script's own `except Exception` caught it in the
    # worker, and the rest of the script ran in the slice.
    script = tmp_path / "unguarded.py"
    script.write_text("import edgeprof\n"
                      "def double(x):\n"
                      "    return 2 * x\n"
                      "try:\n"
                      "    value, report = edgeprof.profile(double, 21, device='raspberry-pi-4')\n"
                      "    print(value)\n"
                      "except Exception as e:\n"
                      "    print('caught', type(e).__name__)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.stdout.split() == ["caught", "Error"], (out.stdout, out.stderr)


@requires_cgroups
def test_a_function_that_calls_sys_exit_is_an_error_not_the_callers_exit(board):
    # SystemExit came back as it was raised and ended the caller (an HPO study) unsaid.
    with pytest.raises(edgeprof.Error, match=r"called sys.exit\(2\)") as caught:
        edgeprof.profile(sys.exit, 2, device=board)
    assert caught.value.edgeprof_report.ok


@requires_cgroups
def test_a_script_keeps_its_arguments_and_its_printed_lines(tmp_path):
    # The worker loaded the script with its own arguments (the call's and result's paths), so
    # `float(sys.argv[1])` at load failed; and what the function printed to a pipe was lost
    # (os._exit dropped the buffer).
    script = tmp_path / "args.py"
    script.write_text("import sys, edgeprof\n"
                      "SCALE = float(sys.argv[1])\n"
                      "def scaled(x):\n"
                      "    print('from-fn', x * SCALE)\n"
                      "    import ctypes\n"  # C's stdio too (an extension's printf)
                      "    ctypes.CDLL(None).printf(b'from-c\\n')\n"
                      "    return x * SCALE\n"
                      "if __name__ == '__main__':\n"
                      "    value, report = edgeprof.profile(scaled, 2, device='raspberry-pi-4')\n"
                      "    print('value', value)\n")
    out = subprocess.run([sys.executable, str(script), "2.5"], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert "from-fn 5.0" in out.stdout.splitlines(), out.stdout
    assert "from-c" in out.stdout.splitlines(), out.stdout
    assert "value 5.0" in out.stdout.splitlines(), out.stdout


@requires_cgroups
def test_projected_core_emulation_runs_the_function_on_one_core(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    pi = edgeprof.find_device("raspberry-pi-4b-1gb")
    value, report = edgeprof.profile(funcs.omp_threads, device=pi, core_emulation="projected")
    projection = report.plan.threads_projection
    # One of the four cores ran, told to start one thread; its times are divided by the
    # board's published speed-up (the arithmetic, not a timing).
    assert value == "1" and report.ok
    assert len(report.plan.cpus) == 1 and projection.threads == 4 and projection.speedup > 1
    assert report.projected_s(report.wall_time_s) == pytest.approx(
        report.wall_time_s / projection.speedup, rel=1e-9)
    with pytest.raises(edgeprof.Error, match="emulate cores"):
        edgeprof.profile(funcs.omp_threads, device=pi, core_emulation="spread")


def _records(path) -> list:
    """The records a worker wrote to `path` (a regular file here, the caller's pipe in use)."""
    frames = edgeprof._profile._Deframer()
    with open(path, "rb") as f:
        frames.feed(f.read())
    return frames.records


def test_a_worker_cut_short_while_writing_its_result_leaves_none(monkeypatch):
    """The result is whole or not at all: a worker stopped mid-write (its timeout, the OOM
    killer) left a truncated pickle that the caller unpickled into an UnpicklingError instead of
    WorkerDied with the report. Here the value's record is whole and the header's cut short."""
    from conftest import captured_report_text
    report = edgeprof.Result.from_json(captured_report_text())

    def run(argv, **kwargs):  # the worker's run, cut short after the value
        with open(os.fsdecode(argv[-1]), "wb") as f:
            records = edgeprof._profile._Records(f)
            edgeprof._profile._dump(b"x" * 100_000, records)
            pickle.dump(("ok", ""), records)  # no end(): cut short
        return report

    monkeypatch.setattr(edgeprof._profile._core, "run", run)
    with pytest.raises(edgeprof.WorkerDied, match="without a result") as info:
        edgeprof.profile(funcs.allocate, 1, device=report.device)
    assert info.value.report is report


def test_a_dropped_record_is_left_out_and_frames_are_read_across_chunks():
    """A value that did not pickle after all is dropped (a pipe cannot be truncated as the
    result file was), whatever the chunks the pipe gives the reader."""
    import io

    out = io.BytesIO()
    records = edgeprof._profile._Records(out)
    records.write(b"partial value")
    records.drop()
    pickle.dump("the value", records)
    records.end()
    pickle.dump(("ok", ""), records)
    records.end()
    records.write(b"cut short")
    data = out.getvalue()
    import random
    rng = random.Random(7)
    for size in (1, 3, 4, 5, len(data), None, None, None):
        frames = edgeprof._profile._Deframer()
        at = 0
        while at < len(data):
            step = size or rng.randint(1, 40)
            frames.feed(data[at:at + step])
            at += step
        assert [pickle.loads(r) for r in frames.records] == ["the value", ("ok", "")]


def test_a_reader_that_fails_drains_the_pipe_and_says_so(monkeypatch):
    """The reader thread's error was lost (threading's excepthook) and the pipe no longer read:
    the worker blocked on it for ever (no timeout by default)."""
    from conftest import captured_report_text
    report = edgeprof.Result.from_json(captured_report_text())
    fed = []

    def feed(self, chunk):
        fed.append(len(chunk))
        raise MemoryError("no room for the result")

    def run(argv, **kwargs):  # the worker's run: 8 MiB, far more than the pipe holds
        with open(os.fsdecode(argv[-1]), "wb") as f:
            records = edgeprof._profile._Records(f)
            edgeprof._profile._dump(b"x" * (8 << 20), records)
            pickle.dump(("ok", ""), records)
            records.end()
        return report

    monkeypatch.setattr(edgeprof._profile._Deframer, "feed", feed)
    monkeypatch.setattr(edgeprof._profile._core, "run", run)
    done = []
    thread = threading.Thread(target=lambda: done.append(_outcome(funcs.allocate)), daemon=True)
    thread.start()
    thread.join(HANG_S)
    assert done, "the write blocked: the pipe was not drained"
    assert isinstance(done[0], edgeprof.Error)
    assert "could not read the worker's result: MemoryError: no room" in str(done[0])
    assert len(fed) == 1


def _outcome(fn):
    try:
        return edgeprof.profile(fn, 1, device="raspberry-pi-4")
    except Exception as e:  # noqa: BLE001 - what the test looks at
        return e


@requires_cgroups
def test_a_returned_value_is_not_counted_in_the_workers_memory_twice():
    """Written to a result file, the value's pickle was page cache charged to the slice: a 64
    MiB return value raised the report's peak by 64 MiB (141 MiB against 75 MiB on an Intel
    Xeon host, 2026-12-07), and on a tmpfs /tmp it could not be reclaimed."""
    board = edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="512MiB")
    kept = edgeprof.profile(funcs.touched_bytes, 64, False, device=board)
    returned = edgeprof.profile(funcs.touched_bytes, 64, True, device=board)
    assert kept.value == 64 << 20 and len(returned.value) == 64 << 20
    if kept.report.peak_memory_bytes is None:
        pytest.skip("the kernel keeps no peak (cgroup v2 before Linux 5.19)")
    assert returned.report.peak_memory_bytes < kept.report.peak_memory_bytes + (24 << 20), (
        returned.report.peak_memory_bytes >> 20, kept.report.peak_memory_bytes >> 20)


def test_a_worker_of_another_edgeprof_version_says_so(tmp_path):
    """The call file names the caller's edgeprof: a worker of another version (another
    environment's interpreter) said only that the call could not be run, or misread it."""
    import pickle

    payload = edgeprof._profile._pickled_call(funcs.allocate, (1,), {})
    assert payload["edgeprof"] == edgeprof.__version__
    payload["edgeprof"] = "0.0.1"
    call, result = tmp_path / "call.pickle", tmp_path / "result.pickle"
    edgeprof._profile._write_call(str(call), payload)
    done = subprocess.run([sys.executable, "-m", "edgeprof._worker", str(call), str(result)],
                          capture_output=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    message, header = (pickle.loads(r) for r in _records(result))
    kind, _ = header
    assert kind == "refused"
    assert f"imported edgeprof {edgeprof.__version__}, but the caller runs edgeprof 0.0.1" \
        in message and "Restart" in message


class _Unreducible:
    def __reduce__(self):
        raise ValueError("holds a device handle")


def test_what_cannot_be_pickled_gets_the_hint_for_its_cause():
    """cloudpickle's failure was always blamed on locks or sockets (its TypeError), also for an
    object whose own __reduce__ raised or an argument nested too deep."""
    pytest.importorskip("cloudpickle")
    import threading

    with pytest.raises(TypeError, match="no locks or sockets"):
        edgeprof._profile._pickled_call(funcs.allocate, (threading.Lock(),), {})
    with pytest.raises(TypeError, match="holds a device handle. The object named") as info:
        edgeprof._profile._pickled_call(funcs.allocate, (_Unreducible(),), {})
    assert "sockets" not in str(info.value)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(TypeError, match="nested too deep") as info:
        edgeprof._profile._pickled_call(funcs.allocate, (deep,), {})
    assert "sockets" not in str(info.value)


def test_an_unreadable_result_is_worker_died_with_the_report(monkeypatch):
    import os

    from conftest import captured_report_text
    report = edgeprof.Result.from_json(captured_report_text())

    def run(argv, **kwargs):  # the worker's run, its header not a pickle
        with open(os.fsdecode(argv[-1]), "wb") as f:
            records = edgeprof._profile._Records(f)
            edgeprof._profile._dump(1, records)
            records.write(b"\x80\x04\x95")
            records.end()
        return report

    monkeypatch.setattr(edgeprof._profile._core, "run", run)
    with pytest.raises(edgeprof.WorkerDied, match="left a result that cannot be read") as info:
        edgeprof.profile(funcs.allocate, 1, device=report.device)
    assert info.value.report is report


def _raise_worker_died(report_text: str) -> None:
    raise edgeprof.WorkerDied("the worker was killed (timeout)",
                              edgeprof.Result.from_json(report_text))


def test_worker_died_pickles_with_its_report_and_crosses_a_process_pool():
    """It could not be unpickled (its report is required, and only its message was pickled): a
    process pool whose task raised it broke (BrokenProcessPool) and lost every other task."""
    import concurrent.futures
    import multiprocessing
    import pickle

    from conftest import captured_report_text
    died = edgeprof.WorkerDied("the worker was killed (timeout)",
                               edgeprof.Result.from_json(captured_report_text()))
    died.add_note("trial 7")
    back = pickle.loads(pickle.dumps(died))
    assert type(back) is edgeprof.WorkerDied and str(back) == str(died)
    assert back.__notes__ == ["trial 7"]
    assert back.report.wall_time_s == died.report.wall_time_s
    with concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        with pytest.raises(edgeprof.WorkerDied, match="killed") as info:
            pool.submit(_raise_worker_died, captured_report_text()).result(timeout=HANG_S)
        assert info.value.report.wall_time_s == died.report.wall_time_s
        assert pool.submit(int, "7").result(timeout=HANG_S) == 7  # the pool still works


# A script's own classes and functions, as an HPO script or a notebook has them: the function's
# value and exception are of the caller's classes, and an argument refers to the caller's
# function (a partial of it).
_CALLERS_MAIN = """\
import dataclasses
import functools
import edgeprof
{scale}

@dataclasses.dataclass
class Metrics:
    accuracy: float

class Diverged(Exception):
    pass

def train(lr):
    if lr > 1:
        raise Diverged(lr)
    return Metrics(scale(lr))

board = edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="256MiB")

@edgeprof.profiled_function(device=board)
def evaluate(lr):
    return train(lr)

if __name__ == "__main__":
    assert evaluate(1.0).value == Metrics(0.5)
    value, report = edgeprof.profile(functools.partial(train, 0.5), device=board)
    assert type(value) is Metrics and value.accuracy == 0.25 and report.ok, value
    try:
        edgeprof.profile(train, 2.0, device=board)
        raise AssertionError("no exception")
    except Diverged as e:
        assert e.args == (2.0,) and e.edgeprof_report.ok
    print("done")
"""


@requires_cgroups
@pytest.mark.parametrize("how", ["script", "-m", "stdin", "-c"])
def test_the_callers_main_reaches_the_worker_and_comes_back(tmp_path, how):
    """The caller's __main__ is found however Python ran it: a partial of its function (the
    worker did not look for a __main__ the function itself was not of), a value or exception of
    its classes (No module named '__mp_main__'; in a notebook, cannot be pickled), a module run
    with -m and relative imports, a script piped to `python3 -` (No such file '<stdin>'), a
    notebook's function decorated for a Device (the options went along: cannot pickle
    Device)."""
    if how in ("stdin", "-c"):
        pytest.importorskip("cloudpickle")
    own = "def scale(x):\n    return x / 2\n"
    code = _CALLERS_MAIN.format(scale=own)
    if how == "script":
        (tmp_path / "tune.py").write_text(code)
        argv, stdin = [sys.executable, str(tmp_path / "tune.py")], None
    elif how == "-m":
        (tmp_path / "hpo").mkdir()
        (tmp_path / "hpo" / "__init__.py").write_text("")
        (tmp_path / "hpo" / "scaling.py").write_text(own)
        (tmp_path / "hpo" / "tune.py").write_text(
            _CALLERS_MAIN.format(scale="from .scaling import scale"))
        argv, stdin = [sys.executable, "-m", "hpo.tune"], None
    elif how == "stdin":
        argv, stdin = [sys.executable, "-"], code
    else:
        argv, stdin = [sys.executable, "-c", code], None
    out = subprocess.run(argv, input=stdin, cwd=tmp_path, capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["done"]


@requires_cgroups
def test_a_value_that_does_not_pickle_says_the_function_ran_and_keeps_the_report(board):
    # It said "could not run lock", and the run's report was lost.
    with pytest.raises(edgeprof.Error, match="ran lock, but the return value") as info:
        edgeprof.profile(funcs.lock, device=board)
    assert not str(info.value).endswith("\n")
    assert info.value.edgeprof_report.ok


def _undecodable(text: bytes) -> str:
    import os
    return os.fsdecode(text)  # a file name that is not UTF-8, as Python hands it over


def test_phase_names_holding_bytes_that_are_not_utf8_do_nothing_outside_edgeprof():
    # They raised pybind11's "incompatible function arguments" TypeError.
    name = _undecodable(b"model-\xff.onnx")
    with edgeprof.phase(name):
        edgeprof.mark(name)
    edgeprof.mark("\ud800")  # a lone surrogate, not one of a decoded byte


@requires_cgroups
def test_phase_names_holding_bytes_that_are_not_utf8_are_escaped(board):
    value, report = edgeprof.profile(funcs.mark_phases, [_undecodable(b"model-\xff.onnx")],
                                     device=board)
    assert [p.name for p in report.phases] == ["function", "model-\\xFF.onnx"]


@requires_cgroups
def test_a_function_with_a_parameter_named_fn_takes_it_as_a_keyword(board):
    # profile() took fn=... as its own function: "got multiple values for argument 'fn'".
    assert edgeprof.profile(funcs.apply, fn=abs, x=-3, device=board).value == 3


@requires_cgroups
def test_large_arguments_are_not_held_twice_in_the_slice():
    # The worker read the call's pickle whole and made the arguments from it while it still
    # held it: 128 MiB of arguments on a 256 MiB device, which fit, were OOM-killed.
    device = edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="256MiB")
    value, report = edgeprof.profile(len, b"\x01" * (128 << 20), device=device)
    assert report.ok and not report.oom_killed
    assert value == 128 << 20


@requires_cgroups
def test_a_large_value_is_not_copied_whole_to_be_sent_back():
    # The worker held the value, its pickle and the pickle of that (three copies in the
    # slice's memory): a function that returned 96 MiB on a 256 MiB device, which fits, was
    # killed by the OOM killer after it returned. Now the value is pickled into the file as it
    # goes (what is written is page cache, which the kernel reclaims at the limit).
    device = edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="256MiB")
    value, report = edgeprof.profile(funcs.touched_value, 96, device=device)
    assert report.ok and not report.oom_killed
    assert len(value) == 96 << 20 and value.count(b"\x01") == len(value)
