"""edgeprof.run and edgeprof.Slice on this machine's real cgroups."""

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import edgeprof
from conftest import our_slices, requires_cgroups

pytestmark = requires_cgroups

PY = sys.executable
SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {}: pass"


def test_cpu_bound_child_gets_half_a_core(half_core):
    r = edgeprof.run([PY, "-c", SPIN.format(1.5)], device=half_core)
    assert r.ok, str(r)
    used = (r.cpu_user_s + r.cpu_system_s) / r.wall_time_s
    assert used == pytest.approx(0.5, abs=0.1), str(r)
    assert r.throttled_periods > 0
    assert r.device == half_core
    assert r.plan.cpu_quota_us * 2 == r.plan.cpu_period_us
    assert r.cgroup_mode in ("unified", "hybrid", "legacy")


def test_result_fields_and_json(half_core, tmp_path):
    r = edgeprof.run([PY, "-c", "import sys; sys.exit(3)"], device="raspberry-pi-4")
    assert r.exit_code == 3 and r.signal is None and not r.ok
    assert r.wall_time_s > 0
    assert r.peak_memory_bytes and r.peak_memory_bytes > 1 << 20
    data = json.loads(r.to_json())
    assert data["exit_code"] == 3
    assert data["device"]["name"] == "raspberry-pi-4b-4gb"  # the alias resolves to it
    assert "raspberry-pi-4" in data["device"]["aliases"]
    assert data["provenance"]["wall_time_s"] == "measured"
    assert "measured" in str(r)


def test_memory_hog_is_oom_killed_and_the_parent_survives():
    small = edgeprof.Device(name="small", cores=1, core_speed=1.0, memory="64MiB")
    r = edgeprof.run([PY, "-c", "x = bytearray(256 << 20)"], device=small)
    assert r.oom_killed and r.oom_kills >= 1
    assert r.signal == signal.SIGKILL
    assert r.exit_code is None
    assert r.peak_memory_bytes <= 64 << 20


def test_exec_failure_is_an_error_with_errno_and_path(half_core):
    with pytest.raises(edgeprof.SpawnError) as info:
        edgeprof.run(["/no/such/program"], device=half_core)
    assert info.value.errno == errno.ENOENT
    assert info.value.path == "/no/such/program"
    assert "/no/such/program" in str(info.value)
    with pytest.raises(edgeprof.SpawnError, match="PATH"):
        edgeprof.run(["edgeprof-no-such-command"], device=half_core)


def test_timeout_kills_the_workload(half_core):
    start = time.monotonic()
    r = edgeprof.run(["sleep", "30"], device=half_core, timeout=0.3)
    assert r.timed_out and not r.ok
    assert r.signal == signal.SIGKILL
    assert time.monotonic() - start < 5


def test_timeout_must_be_positive(half_core):
    with pytest.raises(ValueError, match="timeout"):
        edgeprof.run(["true"], device=half_core, timeout=0)


def test_env_cwd_and_stdio(half_core, tmp_path):
    out = tmp_path / "out.txt"
    r = edgeprof.run(
        [PY, "-c", "import os; print(os.environ['GREETING'], os.getcwd())"],
        device=half_core, env={"GREETING": "hello", "PATH": os.environ["PATH"]}, cwd=tmp_path,
        stdout=out)
    assert r.ok
    assert out.read_text() == f"hello {tmp_path}\n"
    r = edgeprof.run([PY, "-c", "print('x' * 1000)"], device=half_core,
                     stdout=subprocess.DEVNULL)
    assert r.ok
    with pytest.raises(TypeError, match="stdout"):
        edgeprof.run(["true"], device=half_core, stdout=3.5)


def test_stdio_takes_descriptors_and_file_objects(half_core, tmp_path):
    with open(tmp_path / "by-fd", "w") as f:
        assert edgeprof.run(["echo", "by fd"], device=half_core, stdout=f.fileno()).ok
    with open(tmp_path / "by-object", "w") as f:
        assert edgeprof.run(["echo", "by object"], device=half_core, stdout=f).ok
    assert (tmp_path / "by-fd").read_text() == "by fd\n"
    assert (tmp_path / "by-object").read_text() == "by object\n"
    with pytest.raises(edgeprof.SpawnError, match="descriptor 987"):
        edgeprof.run(["true"], device=half_core, stdout=987)


def test_slice_context_manager_runs_several_children(half_core):
    with edgeprof.Slice(half_core) as s:
        assert s.mode in ("unified", "hybrid", "legacy")
        assert s.paths and all(os.path.isdir(p) for p in s.paths)
        results = [s.spawn(["true"]).wait() for _ in range(3)]
        assert all(r.ok for r in results)
        paths = s.paths
    assert s.closed
    assert not any(os.path.exists(p) for p in paths)
    with pytest.raises(edgeprof.Error, match="closed"):
        s.spawn(["true"])


def test_the_gil_is_released_while_waiting(half_core):
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=count)
    t.start()
    try:
        edgeprof.run(["sleep", "0.5"], device=half_core)
    finally:
        stop.set()
        t.join()
    assert len(ticks) >= 20


def test_ctrl_c_kills_the_workload_and_removes_the_slice(tmp_path):
    pidfile = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import edgeprof, sys
        try:
            edgeprof.run(["sh", "-c", "echo $$ > {pidfile}; exec sleep 30"],
                         device=edgeprof.Device(name="d", cores=1, core_speed=0.5,
                                                memory="128MiB"))
        except KeyboardInterrupt:
            print("interrupted")
            sys.exit(0)
        sys.exit(1)
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the workload never started"
        time.sleep(0.05)
    workload = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0 and out.strip() == "interrupted"
    with pytest.raises(ProcessLookupError):
        os.kill(workload, 0)
    assert our_slices(proc.pid) == []
