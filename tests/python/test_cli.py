"""The edgeprof command line, run as users run it (a subprocess)."""

import json
import subprocess
import sys

import pytest

from conftest import requires_cgroups


def edgeprof(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "edgeprof", *args], capture_output=True,
                          text=True, timeout=600, **kwargs)


def test_devices_lists_the_builtin_devices():
    p = edgeprof("devices")
    assert p.returncode == 0
    for name in ("raspberry-pi-3b", "raspberry-pi-4", "jetson-nano"):
        assert name in p.stdout
    data = json.loads(edgeprof("devices", "--json").stdout)
    assert {d["name"] for d in data} >= {"raspberry-pi-4", "jetson-nano"}
    one = edgeprof("devices", "jetson-nano")
    assert one.returncode == 0 and "estimated" in one.stdout


def test_help_has_examples():
    p = edgeprof("run", "--help")
    assert p.returncode == 0 and "examples:" in p.stdout


@requires_cgroups
def test_run_prints_a_summary_and_passes_the_exit_code_through():
    p = edgeprof("run", "--device", "raspberry-pi-4", "--", sys.executable, "-c",
                 "print('from the workload'); raise SystemExit(5)")
    assert p.returncode == 5
    assert "from the workload" in p.stdout
    assert "wall time" in p.stderr and "measured" in p.stderr


@requires_cgroups
def test_run_json_keeps_stdout_for_the_json():
    p = edgeprof("run", "--cores", "1", "--speed", "0.5", "--memory", "128MiB", "--json", "--",
                 sys.executable, "-c", "print('noise')")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["exit_code"] == 0 and data["device"]["cores"] == 1
    assert "noise" in p.stderr


@requires_cgroups
def test_run_exit_codes_for_oom_and_timeout():
    oom = edgeprof("run", "--cores", "1", "--speed", "1", "--memory", "64MiB", "--",
                   sys.executable, "-c", "x = bytearray(256 << 20)")
    assert oom.returncode == 137 and "out-of-memory" in oom.stderr
    slow = edgeprof("run", "--timeout", "0.2", "--", "sleep", "10")
    assert slow.returncode == 124 and "timeout" in slow.stderr


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run", "--device", "no-such-device", "--", "true"], "no-such-device"),
        (["run", "--", "/no/such/program"], "/no/such/program"),
        (["run", "--cores", "2", "--", "true"], "--memory"),
        (["run", "--cores", "1", "--speed", "1", "--memory", "12 parsecs", "--", "true"],
         "12 parsecs"),
        (["run"], "no command"),
    ],
)
def test_errors_exit_2_with_a_message(args, fragment):
    p = edgeprof(*args)
    assert p.returncode == 2
    assert fragment in p.stderr
    assert "Traceback" not in p.stderr


@requires_cgroups
def test_demo_ranks_the_bundled_workloads():
    p = edgeprof("demo", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert {r["workload"] for r in rows} == {"mlp-small", "mlp-large", "cnn-tiny"}
    walls = [r["wall_time_s"] for r in rows]
    assert walls == sorted(walls)
    assert all(r["device"]["name"] == "raspberry-pi-4" for r in rows)
