"""edgeprof.run and edgeprof.Slice on this machine's real cgroups."""

import errno
import json
import math
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import edgeprof
from conftest import (HANG_S, IN_VM, cpu_limit, idle_threads, our_slices, poll_until_changed,
                      requires_cgroups)

pytestmark = requires_cgroups

PY = sys.executable
SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {}: pass"
# The same, then on until the kernel has throttled its CPU cgroup (its own cpu.stat), at most
# 300 s: a fixed spin beside a busy build may never reach the quota (the scheduler gave it a
# third of the CPU, under its half), and the test that wanted throttling failed.
SPIN_UNTIL_THROTTLED = SPIN + """
def throttled():
    for line in open('/proc/self/cgroup'):
        _, ctl, path = line.rstrip('\\n').split(':', 2)
        d = ('/sys/fs/cgroup/' + ctl + path if 'cpu' in ctl.split(',') else
             '/sys/fs/cgroup' + path if ctl == '' else None)
        try:
            for kv in open(d + '/cpu.stat'):
                if kv.split()[0] == 'nr_throttled' and int(kv.split()[1]) > 0:
                    return True
        except (OSError, TypeError):
            pass
    return False
while not throttled() and time.monotonic() - t < 300:
    u = time.monotonic()
    while time.monotonic() - u < 0.01: pass
"""
# The same, first printing the cgroups it runs in (from its own /proc), so that a test sees
# where it ran without racing its exit.
WHERE_AND_SPIN = "print(open('/proc/self/cgroup').read(), flush=True)\n" + SPIN_UNTIL_THROTTLED


def test_cpu_bound_child_gets_half_a_core(half_core, tmp_path):
    with edgeprof.Slice(half_core) as s:
        # What the kernel was told: half of each period.
        assert cpu_limit(s) == (s.plan.cpu_quota_us, s.plan.cpu_period_us)
        assert s.plan.cpu_quota_us * 2 == s.plan.cpu_period_us
        name = os.path.basename(s.paths[0])
        r = s.spawn([PY, "-c", WHERE_AND_SPIN.format(1.0)], stdout=tmp_path / "out").wait()
    assert r.ok, str(r)
    assert name in (tmp_path / "out").read_text()  # the child ran in the slice
    assert r.throttled_periods > 0  # and the kernel held it to the quota
    assert r.device == half_core
    assert r.plan.cpu_quota_us * 2 == r.plan.cpu_period_us
    assert r.cgroup_mode in ("unified", "hybrid", "legacy")
    if not IN_VM:
        # CPU used under a kernel quota: the quota caps it at 0.5 whatever the load (25% above
        # for the kernel's accounting); no lower bound, since load beside the test takes CPU
        # from it. (In the VM, function only: its emulated CPUs run unevenly.)
        used = (r.cpu_user_s + r.cpu_system_s) / r.wall_time_s
        assert used <= 0.5 * 1.25, str(r)


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


def test_a_nul_byte_in_a_command_is_refused_not_cut(half_core):
    # "/bin/tr\0ue" would run /bin/tr, the kernel reading C strings.
    with pytest.raises(edgeprof.SpawnError, match="the program holds a NUL byte") as info:
        edgeprof.run(["/bin/tr\x00ue"], device=half_core)
    assert info.value.errno == errno.EINVAL
    with pytest.raises(edgeprof.SpawnError, match="argument 1 holds a NUL byte"):
        edgeprof.run(["/bin/echo", "a\x00b"], device=half_core)
    with pytest.raises(edgeprof.SpawnError, match="environment entry"):
        edgeprof.run(["/bin/true"], device=half_core, env={"X": "1\x002"})


def test_timeout_kills_the_workload(half_core):
    r = edgeprof.run(["sleep", "30"], device=half_core, timeout=0.3)
    assert r.timed_out and not r.ok
    # Killed: a sleep that ran its course would have exited 0.
    assert r.signal == signal.SIGKILL and r.exit_code is None
    # Not before the timeout: a lower bound the timeout imposes (load only adds time).
    assert r.wall_time_s >= 0.3


def test_timeout_must_be_positive(half_core):
    for bad in (0, -1, math.nan):
        with pytest.raises(edgeprof.Error, match="a timeout is a positive number of seconds"):
            edgeprof.run(["true"], device=half_core, timeout=bad)


def test_a_bad_interval_is_an_edgeprof_error_naming_it(half_core):
    # Once a ValueError (negative, NaN) and, past nanoseconds' range, "-9223372036854.775 ms".
    for bad, said in ((-1, "-1.0 s"), (math.nan, "nan s"), (1e10, "10000000000.0 s"),
                      (math.inf, "inf s"), (100, "1 ms to 60 s")):
        with pytest.raises(edgeprof.Error, match="out of range") as e:
            edgeprof.run(["true"], device=half_core, interval=bad)
        assert said in str(e.value), (bad, str(e.value))
        # 0 is no sampling, as None is: said, where it once went unsaid.
        assert "(or 0) for no sampling" in str(e.value) or "(0: no sampling)" in str(e.value)


def test_an_infinite_or_huge_timeout_waits_for_ever(half_core):
    # Once, inf and 1e300 s overflowed the clock to a deadline already past: killed at once.
    for forever in (math.inf, 1e300, 1e12):
        r = edgeprof.run([PY, "-c", "import time; time.sleep(0.3)"], device=half_core,
                         timeout=forever)
        assert r.exit_code == 0 and not r.timed_out, (forever, r)
    with edgeprof.Slice(half_core) as s:
        child = s.spawn([PY, "-c", "import time; time.sleep(0.3)"])
        with pytest.raises(edgeprof.Error, match="positive number"):
            child.wait(timeout=math.nan)  # refused; the workload goes on
        r = child.wait(timeout=math.inf)
        assert r.exit_code == 0 and not r.timed_out


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


def test_keep_warm_is_on_by_default_for_a_throttled_slice_and_can_be_turned_off(half_core):
    threads_before = len(os.listdir("/proc/self/task"))
    results, warm, names = {}, {}, {}
    for keep_warm in (True, False):
        with edgeprof.Slice(half_core, keep_warm=keep_warm) as s:
            names[keep_warm] = os.path.basename(s.paths[0])
            child = s.spawn([PY, "-c", SPIN_UNTIL_THROTTLED.format(0.5)])
            warm[keep_warm] = idle_threads()  # held from the spawn until the wait below
            results[keep_warm] = child.wait()
    on, off = results[True], results[False]
    assert on.ok and off.ok
    assert on.plan.keep_warm and not off.plan.keep_warm
    assert any("docs/keep-warm.md" in n for n in on.plan.notes)
    assert not any("keep-warm" in n for n in off.plan.notes)
    # While the workload ran: one idle-priority thread pinned to each of the slice's CPUs, in
    # this process's cgroup, not the slice; none without keep-warm.
    assert sorted(sorted(cpus) for cpus, _ in warm[True].values()) == sorted(
        [c] for c in on.plan.cpus), warm
    assert all(names[True] not in cgroup for _, cgroup in warm[True].values())
    assert warm[False] == {}
    assert not any("not kept warm" in w for w in on.warnings), on.warnings
    # How much CPU the threads got depends on what else wants the CPU (benchmarks/): here, that
    # it was counted apart from the workload's, and not at all without them.
    assert math.isfinite(on.keep_warm_cpu_s) and on.keep_warm_cpu_s >= 0
    assert off.keep_warm_cpu_s == 0
    assert on.throttled_periods > 0 and off.throttled_periods > 0
    if not IN_VM:
        # CPU used under a kernel quota (see test_cpu_bound_child_gets_half_a_core): the
        # threads' CPU, were it the workload's, would push it above the quota's cap.
        for r in (on, off):
            assert (r.cpu_user_s + r.cpu_system_s) / r.wall_time_s <= 0.5 * 1.25, str(r)
    assert "keep-warm" in str(on) and "keep-warm" not in str(off)
    data = json.loads(on.to_json())
    assert data["plan"]["keep_warm"] is True
    assert data["provenance"]["keep_warm_cpu_s"] == "measured"
    assert edgeprof.Result.from_json(on.to_json()).keep_warm_cpu_s == on.keep_warm_cpu_s
    # The threads stop with the run (a joined thread may still be listed while it exits).
    deadline = time.monotonic() + HANG_S
    while len(os.listdir("/proc/self/task")) > threads_before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(os.listdir("/proc/self/task")) == threads_before


def test_per_core_emulation_spreads_a_pythons_threads_over_the_devices_cores(tmp_path):
    quad = edgeprof.Device(name="quad", cores=4, core_speed=0.25, memory="256MiB")
    plan = edgeprof.plan_emulation(quad, core_emulation="per-core")
    assert plan.core_groups == 4 and plan.core_quota_us * 4 == plan.cpu_quota_us
    assert edgeprof.plan_emulation(quad).core_groups == 0
    with pytest.raises(edgeprof.Error, match="per-core"):
        edgeprof.plan_emulation(quad, core_emulation="per core")
    # Two threads that spin until told to stop: each ends in a core group of its own.
    code = textwrap.dedent("""
        import os, sys, threading
        stop = sys.argv[1]
        def spin():
            while not os.path.exists(stop):
                sum(range(1000))
        ts = [threading.Thread(target=spin) for _ in range(2)]
        for t in ts: t.start()
        for t in ts: t.join()
    """)
    stop = str(tmp_path / "stop")  # not /tmp's shared namespace, where another pid may match
    try:
        with edgeprof.Slice(quad, core_emulation="per-core") as s:
            child = s.spawn([PY, "-c", code, stop])
            deadline = time.monotonic() + HANG_S
            groups: set[str] = set()
            while time.monotonic() < deadline and len(groups) < 3:
                groups = set()
                for tid in os.listdir(f"/proc/{child.pid}/task"):
                    try:
                        with open(f"/proc/{child.pid}/task/{tid}/cgroup") as f:
                            # v1's cpu hierarchy, else v2's one ("0::/path")
                            lines = [line.split(":", 2) for line in f]
                        v1 = [p for _, c, p in lines if "cpu" in c.split(",")]
                        groups |= {(v1 or [p for n, _, p in lines if n == "0"])[0].strip()}
                    except FileNotFoundError:
                        pass
                time.sleep(0.01)
            open(stop, "w").close()
            r = child.wait(timeout=HANG_S)
    finally:
        if os.path.exists(stop):
            os.remove(stop)
    assert r.ok, str(r)
    # The main thread and the two spinners: three groups, each a core's.
    assert len(groups) >= 3 and all("/core" in g for g in groups), groups
    assert r.thread_moves >= 2
    assert "per-core" in str(r)
    assert json.loads(r.to_json())["plan"]["core_groups"] == 4


def test_keep_warm_is_off_where_the_quota_never_throttles():
    whole = edgeprof.Device(name="whole-cpu", cores=1, core_speed=1.0, memory="256MiB")
    plan = edgeprof.plan_emulation(whole)
    assert not plan.keep_warm
    half = edgeprof.Device(name="half", cores=1, core_speed=0.5, memory="256MiB")
    assert edgeprof.plan_emulation(half).keep_warm
    assert not edgeprof.plan_emulation(half, keep_warm=False).keep_warm


def test_runtimes_seen_names_the_inference_runtime_the_workload_loaded(half_core, tmp_path):
    pytest.importorskip("ncnn")  # PyPI's ncnn, in this interpreter
    imported = tmp_path / "imported"
    code = "import sys, time, ncnn\nopen(sys.argv[1], 'w').close()\ntime.sleep(600)\n"
    with edgeprof.Slice(half_core) as s:
        child = s.spawn([PY, "-c", code, str(imported)])
        poll_until_changed(imported.exists, False)  # ncnn is imported: it is in the maps
        r = child.wait(timeout=0.001)  # passed: the maps are read, then the workload killed
    assert r.timed_out
    assert list(r.runtimes_seen) == ["ncnn"]
    assert r.runtimes_seen["ncnn"].startswith("ncnn.cpython-")  # the module's file name
    assert "runtimes" in str(r)
    assert edgeprof.Result.from_json(r.to_json()).runtimes_seen == r.runtimes_seen


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


def test_spawn_refuses_arguments_of_the_wrong_type_without_crashing():
    """spawn("true") (a str for the list), a list holding an int, or a str interval crashed
    the interpreter (SIGSEGV: pybind11 ran the Child's keep-alive of its Slice on a call whose
    arguments did not convert), so a notebook's kernel died; run() raised TypeError."""
    code = textwrap.dedent("""\
        import edgeprof
        s = edgeprof.Slice(edgeprof.Device(name="d", cores=1, core_speed=0.5, memory="256MiB"))
        for args, kwargs in [(("true",), {}), ((["true", 3],), {}),
                             ((["true"],), {"interval": "5ms"})]:
            try:
                s.spawn(*args, **kwargs)
            except TypeError as e:
                print("TypeError:", e)
        print("ok", s.spawn(["true"]).wait().ok)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=HANG_S)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stdout.count("TypeError: Slice.spawn()") == 3, p.stdout
    assert p.stdout.rstrip().endswith("ok True")


def test_a_child_keeps_its_slice_and_threads_waiting_on_it_share_one_result(half_core):
    # The temporary slice was collected at once, killing the workload (signal 9 in 2 ms).
    r = edgeprof.emulation.Slice(half_core).spawn(["sleep", "0.2"]).wait()
    assert r.ok and r.exit_code == 0 and r.signal is None, (r.exit_code, r.signal)
    # Two or three threads waiting on one Child both finished it: a segfault, about one run
    # in two, or a signal 9 for one and exit 0 for another.
    import threading
    with edgeprof.emulation.Slice(half_core) as s:
        child = s.spawn(["sleep", "0.2"])
        results = []
        waiters = [threading.Thread(target=lambda: results.append(child.wait(timeout=30)))
                   for _ in range(3)]
        for t in waiters:
            t.start()
        for t in waiters:
            t.join()
    assert [(r.exit_code, r.signal) for r in results] == [(0, None)] * 3
    # A closed slice is not entered (its spawn failed, "this slice is closed").
    with pytest.raises(edgeprof.Error, match="this slice is closed"):
        with s:
            pass


def test_the_gil_is_released_while_waiting(half_core):
    # The workload says it has started, then waits for an answer only another Python thread of
    # this process gives. Were the GIL held while run() waits, that thread could not answer and
    # the run would end at the timeout (a hang guard) instead.
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    heard = []

    def answer():
        heard.append(os.read(ready_r, 64))
        os.write(go_w, b"go\n")

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        r = edgeprof.run(["sh", "-c", 'echo ready; read line; [ "$line" = go ]'],
                         device=half_core, stdin=go_r, stdout=ready_w, timeout=HANG_S)
    finally:
        os.close(ready_w)  # the thread's read ends even if the workload never wrote
        os.close(go_r)
        t.join()
        os.close(ready_r)
        os.close(go_w)
    assert heard == [b"ready\n"]
    assert r.ok and not r.timed_out, str(r)


def test_ctrl_c_kills_the_workload_and_removes_the_slice(tmp_path):
    pidfile = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import edgeprof, os, sys, time
        try:
            edgeprof.run(["sh", "-c", "echo $$ > {pidfile}; echo started; exec sleep 30"],
                         device=edgeprof.Device(name="d", cores=1, core_speed=0.5,
                                                memory="128MiB"))
        except KeyboardInterrupt:
            # The slice was throttled (speed 0.5): its keep-warm threads must be gone with it.
            def idle():
                found = []
                for t in os.listdir("/proc/self/task"):
                    try:
                        if os.sched_getscheduler(int(t)) == os.SCHED_IDLE:
                            found.append(t)
                    except ProcessLookupError:
                        pass  # a thread that ended meanwhile
                return found
            # A joined thread may still be listed for a moment while it exits.
            deadline = time.monotonic() + {HANG_S}
            while idle() and time.monotonic() < deadline:
                time.sleep(0.01)
            print("interrupted", len(idle()))
            sys.exit(0)
        sys.exit(1)
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    # The workload prints "started" (to the script's stdout, which it inherits) once its pid is
    # in the file: an event to wait for, however long starting takes.
    ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
    assert ready and proc.stdout.readline() == "started\n", "the workload never started"
    workload = int(pidfile.read_text())
    # Keep-warm threads run in the profiler while the throttled workload runs (started before
    # its release).
    assert [t for t in os.listdir(f"/proc/{proc.pid}/task")
            if os.sched_getscheduler(int(t)) == os.SCHED_IDLE]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 0 and out.strip() == "interrupted 0"  # no keep-warm thread left
    with pytest.raises(ProcessLookupError):
        os.kill(workload, 0)
    assert our_slices(proc.pid) == []


@requires_cgroups
@pytest.mark.parametrize("handler_set_again", [False, True])
def test_ctrl_c_stops_a_run_in_another_thread_too(tmp_path, handler_set_again):
    """Python runs signal handlers on the main thread only: a run in a worker thread (Optuna's
    n_jobs=2) went on to its end after the main thread's KeyboardInterrupt. And when the
    program sets Python's handler again during the run (asyncio.run() and notebook kernels do),
    the run puts its counting handler back in front of it."""
    pidfile = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import concurrent.futures, ctypes, edgeprof, os, signal, sys, time
        libc = ctypes.CDLL(None, use_errno=True)
        def c_handler():  # SIGINT's handler as the kernel has it (struct sigaction's first field)
            action = ctypes.create_string_buffer(256)
            assert libc.sigaction(signal.SIGINT, None, action) == 0
            return action.raw[:ctypes.sizeof(ctypes.c_void_p)]
        def trial():
            return edgeprof.run(
                ["sh", "-c", "echo $$ > {pidfile}.new; mv {pidfile}.new {pidfile}; "
                 "exec sleep 3600"],
                device=edgeprof.Device(name="d", cores=1, core_speed=0.5, memory="128MiB"))
        pool = concurrent.futures.ThreadPoolExecutor(1)
        future = pool.submit(trial)
        while not os.path.exists("{pidfile}"):
            time.sleep(0.01)
        if {handler_set_again}:
            counting = c_handler()
            signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's C handler again
            python = c_handler()
            assert python != counting
            deadline = time.monotonic() + {HANG_S / 10}  # it is put back within a second
            while c_handler() == python:  # until the run's check puts the counting one back
                if time.monotonic() > deadline:
                    os._exit(2)
                time.sleep(0.01)
        try:
            # Inside the try: Ctrl-C may come as soon as the line is out (in the VM it came
            # before the try was entered, and went uncaught).
            print("ready", flush=True)
            future.result()
        except KeyboardInterrupt:
            error = future.exception(timeout={HANG_S})
            print("interrupted", type(error).__name__)
            sys.exit(0)
        sys.exit(1)
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
    assert ready and proc.stdout.readline() == "ready\n", "the workload never started"
    workload = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=2 * HANG_S)
    assert proc.returncode == 0 and out.strip() == "interrupted KeyboardInterrupt"
    with pytest.raises(ProcessLookupError):
        os.kill(workload, 0)
    assert our_slices(proc.pid) == []


@requires_cgroups
def test_a_callers_sigterm_handler_unwinds_a_run_as_ctrl_c_does(tmp_path):
    """docs/getting-started.md: a handler that raises (sys.exit) kills the workload and removes
    the slice on the way out, as Ctrl-C does."""
    pidfile = tmp_path / "pid"
    workload = (f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                "print('started', flush=True); time.sleep(600)")
    script = textwrap.dedent(f"""
        import signal, sys
        import edgeprof
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        edgeprof.run([sys.executable, "-c", {workload!r}],
                     device=edgeprof.Device(name="d", cores=1, core_speed=0.5, memory="128MiB"))
        sys.exit(1)
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
    assert ready and proc.stdout.readline() == "started\n", "the workload never started"
    child = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=HANG_S)
    assert proc.returncode == 143
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert our_slices(proc.pid) == []


def test_a_profiler_killed_with_sigkill_takes_the_workloads_children_with_it(tmp_path):
    """The slice's guard: a profiler killed by SIGKILL runs no code of its own, yet the
    workload's grandchild dies and the slice is removed (they lived until a later run swept
    the slice; issue 36 item 4)."""
    pidfile = tmp_path / "pid"
    # The workload starts a grandchild and waits for it, as `sh -c 'python3 x.py & wait'` does.
    grandchild = (f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                  "time.sleep(600)")
    workload = ("import subprocess, sys; "
                f"p = subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
                "print('started', flush=True); p.wait()")
    script = textwrap.dedent(f"""
        import sys
        import edgeprof
        edgeprof.run([sys.executable, "-c", {workload!r}],
                     device=edgeprof.Device(name="d", cores=1, core_speed=0.5, memory="128MiB"))
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
    assert ready and proc.stdout.readline() == "started\n", "the workload never started"
    deadline = time.monotonic() + HANG_S
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the grandchild never started"
        time.sleep(0.01)
    grand = int(pidfile.read_text())
    slices = our_slices(proc.pid)
    assert slices
    proc.kill()
    proc.communicate(timeout=HANG_S)
    while True:
        try:  # a zombie (left to a reaper that does not reap) is dead too
            with open(f"/proc/{grand}/stat") as f:
                alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            # Gone before the open, or between the open and the read (ESRCH).
            alive = False
        if not alive and not any(os.path.exists(p) for p in slices):
            break
        assert time.monotonic() < deadline, f"grandchild {grand} alive or {slices} left"
        time.sleep(0.01)


def test_a_workload_outlives_the_pool_thread_that_spawned_it(half_core):
    """PR_SET_PDEATHSIG fires when the spawning *thread* ends: a workload spawned in a
    thread pool's task and waited for elsewhere was killed at once (issue 36 item 5)."""
    from concurrent.futures import ThreadPoolExecutor
    with edgeprof.Slice(half_core) as s:
        with ThreadPoolExecutor(max_workers=1) as pool:
            child = pool.submit(s.spawn, [PY, "-c", "import time; time.sleep(0.3)"]).result()
        # The pool's thread has ended here.
        r = child.wait()
    assert r.exit_code == 0, f"signal {r.signal}"
