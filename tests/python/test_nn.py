"""The nn kind of speed from Python and the command line: this host's rating measured (by a
stand-in for the Python that has ncnn, and for real in short form), the catalog's devices
emulated at their nn speed by default, said in the report, and the other kind on request."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import edgeprof
from conftest import cli as edgeprof_cli
from conftest import HANG_S, requires_cgroups


def _fake_python(tmp_path, ms=10.0, cpu_ms=None):
    lines = ["#!/bin/sh", "echo 'runtime ncnn 1.0.test (stand-in)'"]
    for g in edgeprof.nn.reference_graphs():
        lines.append(f"echo '{g.name} {ms} {ms} {ms}'")
        if cpu_ms is not None:
            lines.append(f"echo 'cpu {g.name} {cpu_ms}'")
    fake = tmp_path / "python"
    fake.write_text("\n".join(lines) + "\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("measure", [
    edgeprof.speed.measure_reference_rating, edgeprof.nn.measure_nn_rating,
    edgeprof.nn.measure_host_scaling, edgeprof.speed.measure_quota_share])
def test_a_measurement_refuses_a_timeout_under_a_second_before_it_starts(measure):
    # measure_reference_rating raised a ValueError, the others edgeprof.Error.
    with pytest.raises(edgeprof.Error, match=f"{measure.__name__}: timeout_s must be at least 1, "
                                             "got 0.5"):
        measure(timeout_s=0.5)
    with pytest.raises(edgeprof.Error, match="got nan"):
        measure(timeout_s=float("nan"))


def test_nn_speed_from_published_and_host_times():
    s = edgeprof.nn.nn_speed({"a": 10.0, "b": 40.0}, {"a": 5.0, "b": 10.0})
    assert s.core_speed == pytest.approx(8 ** -0.5)
    assert s.ratios == pytest.approx({"a": 2.0, "b": 4.0})
    assert s.loo_median_error == pytest.approx(0.75)
    assert "2 ncnn graphs" in str(s)
    with pytest.raises(edgeprof.Error, match="no model has both"):
        edgeprof.nn.nn_speed({"a": 1.0}, {"b": 1.0})


def test_a_memory_term_from_published_host_times_and_activations():
    host = {"a": 10.0, "b": 20.0, "c": 5.0, "d": 40.0, "e": 8.0}
    mb = {"a": 50.0, "b": 10.0, "c": 30.0, "d": 20.0, "e": 90.0}
    device = {m: 2 * h + 3 * mb[m] for m, h in host.items()}
    fit = edgeprof.nn.nn_memory_fit(device, host, mb)
    assert (fit.per_host_ms, fit.ms_per_mb) == (pytest.approx(2), pytest.approx(3))
    assert fit.held_out_ms == pytest.approx(device)
    assert edgeprof.nn.nn_memory_predict(fit, 100, 10) == pytest.approx(230)
    assert "models=5" in repr(fit)
    interval = edgeprof.nn.time_interval(fit)  # exact fit: held-out errors all 0
    assert interval is not None and interval.models == 5
    assert (interval.low, interval.high) == (pytest.approx(1), pytest.approx(1))
    with pytest.raises(edgeprof.Error, match="at least 4"):
        edgeprof.nn.nn_memory_fit({"a": 1.0}, host, mb)


def test_catalog_devices_carry_their_published_times_with_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    pi = edgeprof.find_device("raspberry-pi-4b-8gb")
    assert pi.nn_precision == "fp32" and len(pi.nn_ms) == len(edgeprof.nn.reference_graphs())
    assert pi.nn is None and "not measured" in pi.nn_missing
    assert pi.sources["nn"].status == "measured" and "Tencent/ncnn" in pi.sources["nn"].source
    assert edgeprof.find_device("jetson-orin-nano").nn_precision == "fp16"
    with pytest.raises(edgeprof.DeviceError, match="calibrate-host --nn"):
        pi.for_speed_kind("nn")
    shown = edgeprof_cli("devices", "show", "raspberry-pi-4b-8gb",
                         env_extra={"EDGEPROF_CACHE_DIR": str(tmp_path)})
    assert shown.returncode == 0, shown.stderr
    assert "nn speed" in shown.stdout and "calibrate-host --nn" in shown.stdout


def test_calibrate_host_nn_caches_the_rating_and_the_catalog_follows(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    p = edgeprof_cli("calibrate-host", "--nn", "--python", str(_fake_python(tmp_path)), "--json",
                     env_extra=env)
    assert p.returncode == 0, p.stderr
    nn = json.loads(p.stdout)["nn"]
    assert nn["runtime"] == "ncnn 1.0.test (stand-in)"
    assert nn["cache_file"] == str(tmp_path / "host-nn.json")
    rating = edgeprof.nn.cached_nn_rating()
    assert rating is not None and rating.host_ms["mobilenet"] == 10.0
    pi = edgeprof.find_device("raspberry-pi-4b-8gb")
    assert pi.nn is not None
    import math
    mean_log = sum(math.log(ms / 10.0) for ms in pi.nn_ms.values()) / len(pi.nn_ms)
    assert pi.nn.core_speed == pytest.approx(math.exp(-mean_log))
    assert pi.for_speed_kind("automatic").core_speed == pytest.approx(pi.nn.core_speed)
    assert pi.for_speed_kind("integer").core_speed == pi.core_speed
    shown = edgeprof_cli("devices", env_extra=env)
    assert f"{pi.nn.core_speed:.3f}" in shown.stdout

    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'error: the Python package ncnn is not installed'\nexit 3\n")
    broken.chmod(0o755)
    failed = edgeprof_cli("calibrate-host", "--nn", "--python", str(broken), env_extra=env)
    assert failed.returncode != 0 and "ncnn is missing" in failed.stderr
    assert "Traceback" not in failed.stderr


@requires_cgroups
def test_a_catalog_run_uses_the_nn_speed_by_default_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    edgeprof.nn.measure_nn_rating(python=str(_fake_python(tmp_path)))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    # The Pi Zero 2 W: its 512 MiB fit the cgroup v2 VM too.
    args = ("run", "--device", "raspberry-pi-zero-2w", "--threads", "1")
    p = edgeprof_cli(*args, "--json", "--", "true", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    pi = edgeprof.find_device("raspberry-pi-zero-2w")
    assert data["device"]["speed_kind"] == "nn"
    assert data["device"]["core_speed"] == pytest.approx(pi.nn.core_speed)
    assert any("nn speed" in n for n in data["plan"]["notes"])
    text = edgeprof_cli(*args, "--", "true", env_extra=env)
    assert "nn speed" in text.stderr

    integer = edgeprof_cli(*args, "--speed-kind", "integer", "--json", "--", "true", env_extra=env)
    assert integer.returncode == 0, integer.stderr
    assert json.loads(integer.stdout)["device"]["core_speed"] == pytest.approx(pi.core_speed)

    r = edgeprof.run(["true"], device=pi.for_threads(1), speed_kind="integer")
    assert r.device.core_speed == pytest.approx(pi.core_speed)
    with pytest.raises(edgeprof.Error, match="not a kind of speed"):
        edgeprof.run(["true"], device=pi, speed_kind="fast")


def _fake_python_named(tmp_path, name, ms, cpu_ms=None):
    folder = tmp_path / name
    folder.mkdir()
    return _fake_python(folder, ms, cpu_ms)


def test_the_drift_probe_reads_cpu_time_and_a_shared_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    rated = edgeprof.nn.measure_nn_rating(python=str(_fake_python_named(tmp_path, "r", 10.0, 10.0)))
    assert rated.cpu_ms["squeezenet"] == pytest.approx(10.0) and rated.cache_file
    # Twice the wall time for the same work: another process had half the CPU.
    shared = str(_fake_python_named(tmp_path, "s", 20.0, 10.0))
    drift = edgeprof.speed.measure_host_drift(rated, python=shared,
                                              cpu=min(os.sched_getaffinity(0)))
    assert drift.cpu_time and drift.factor == pytest.approx(1.0)
    assert drift.wall_factor == pytest.approx(2.0) and drift.waiting == pytest.approx(2.0)
    assert "its CPU was shared" in str(drift)
    # A rating measured so is its CPU times, not cached.
    busy = edgeprof.nn.measure_nn_rating(python=shared)
    assert busy.host_ms["squeezenet"] == pytest.approx(10.0)
    assert not busy.cache_file and "was shared" in busy.note


def test_a_plan_with_drift_check_corrects_the_nn_speed_by_the_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EDGEPROF_DRIFT_CHECK", raising=False)
    rated = edgeprof.nn.measure_nn_rating(python=str(_fake_python_named(tmp_path, "rated", 10.0)))
    now = str(_fake_python_named(tmp_path, "now", 12.0))
    cpu = min(os.sched_getaffinity(0))
    drift = edgeprof.speed.measure_host_drift(rated, python=now, cpu=cpu)
    assert drift.factor == pytest.approx(1.2) and drift.cpu == cpu
    assert "1.20x slower" in str(drift)
    monkeypatch.setenv("EDGEPROF_PYTHON", now)
    pi = edgeprof.find_device("raspberry-pi-zero-2w").for_threads(1)
    plain = edgeprof.plan_emulation(pi, quota_scale=1.0)
    checked = edgeprof.plan_emulation(pi, quota_scale=1.0, drift_check=True)
    assert plain.host_drift == 1.0 and plain.drift_probed == 0
    assert checked.host_drift == pytest.approx(1.2) and checked.drift_probed == pytest.approx(1.2)
    assert checked.capacity_cores == pytest.approx(1.2 * plain.capacity_cores, rel=0.01)
    assert any("host drift corrected" in n for n in checked.notes)
    monkeypatch.setenv("EDGEPROF_PYTHON", str(tmp_path / "no-such-python"))
    failed = edgeprof.plan_emulation(pi, quota_scale=1.0, drift_check=True)
    assert failed.host_drift == 1.0
    assert any("host drift not corrected: the probe failed" in n for n in failed.notes)


@requires_cgroups
def test_run_drift_check_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EDGEPROF_DRIFT_CHECK", raising=False)
    edgeprof.nn.measure_nn_rating(python=str(_fake_python_named(tmp_path, "rated", 10.0)))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path),
           "EDGEPROF_PYTHON": str(_fake_python_named(tmp_path, "now", 12.5))}
    args = ("run", "--device", "raspberry-pi-zero-2w", "--threads", "1", "--quota-scale", "1")
    p = edgeprof_cli(*args, "--drift-check", "--json", "--", "true", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["plan"]["host_drift"] == pytest.approx(1.25)
    assert any("1.25x slower than at its nn rating" in w for w in data["warnings"])
    off = edgeprof_cli(*args, "--json", "--", "true", env_extra=env)
    assert off.returncode == 0, off.stderr
    assert json.loads(off.stdout)["plan"]["host_drift"] == 1.0
    # EDGEPROF_DRIFT_CHECK=1 turns it on by default.
    on = edgeprof_cli(*args, "--json", "--", "true", env_extra={**env, "EDGEPROF_DRIFT_CHECK": "1"})
    assert on.returncode == 0, on.stderr
    assert json.loads(on.stdout)["plan"]["host_drift"] == pytest.approx(1.25)
    # --no-drift-check overrides it.
    no = edgeprof_cli(*args, "--no-drift-check", "--json", "--", "true",
                      env_extra={**env, "EDGEPROF_DRIFT_CHECK": "1"})
    assert no.returncode == 0, no.stderr
    assert json.loads(no.stdout)["plan"]["drift_probed"] == 0


@requires_cgroups
def test_drift_check_checks_the_own_share_at_the_plans_quota(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EDGEPROF_DRIFT_CHECK", raising=False)
    fake = str(_fake_python_named(tmp_path, "stand-in", 10.0))
    edgeprof.nn.measure_nn_rating(python=fake)
    # The stand-in takes 10 ms throttled or not, so its share at any quota is that quota
    # (0.375 at 0.25 and 0.5 once made non-increasing): cached, then checked at the plan's
    # quota (about 0.22 of a CPU for a Raspberry Pi 5's core rated so; a slower board's would
    # stop at the kernel's 1 ms minimum; the 4 GB board fits the 5 GiB VM), where it reads far
    # less than the cache says.
    share = edgeprof.speed.measure_quota_share(python=fake, graphs=["squeezenet"],
                                               speeds=[0.25, 0.5], rounds=1)
    assert share.cache_file
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path), "EDGEPROF_PYTHON": fake}
    args = ("run", "--device", "raspberry-pi-5-4gb", "--threads", "1")
    p = edgeprof_cli(*args, "--drift-check", "--json", "--", "true", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert 0 < data["plan"]["own_share_check"] < 1 / 1.5
    assert any(w.startswith("own share moved: checked just before the run")
               for w in data["warnings"]), data["warnings"]
    off = edgeprof_cli(*args, "--json", "--", "true", env_extra=env)
    assert off.returncode == 0, off.stderr
    assert json.loads(off.stdout)["plan"]["own_share_check"] == 0


@requires_cgroups
def test_without_the_host_rating_a_catalog_run_says_how_to_get_it(tmp_path):
    p = edgeprof_cli("run", "--device", "raspberry-pi-zero-2w", "--threads", "1", "--json", "--",
                     "true", env_extra={"EDGEPROF_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["device"]["speed_kind"] == "integer"
    assert any("calibrate-host --nn" in n for n in data["plan"]["notes"])


def test_the_real_nn_rating_with_ncnn_short_form(tmp_path, monkeypatch):
    pytest.importorskip("ncnn")
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    lines = []
    r = edgeprof.nn.measure_nn_rating(python=sys.executable, warmup=1, loops=1,
                                      progress=lines.append)
    assert set(r.host_ms) == {g.name for g in edgeprof.nn.reference_graphs()}
    assert "ncnn" in r.runtime and any("[1/" in line for line in lines)
    if not r.cache_file:  # its CPU was shared by another busy process: said, not cached
        assert "was shared" in r.note
        pytest.skip(r.note)
    assert edgeprof.nn.cached_nn_rating() is not None
    assert edgeprof.find_device("galaxy-s8").nn is not None


@requires_cgroups
def test_calibrate_host_nn_measures_the_own_share_that_nn_plans_apply(tmp_path, monkeypatch):
    # The stand-in reports 10 ms per graph however throttled: its own share is the speed.
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    p = edgeprof_cli("calibrate-host", "--nn", "--python", str(_fake_python(tmp_path)), "--json",
                     env_extra={"EDGEPROF_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    q = json.loads(p.stdout)["quota_share"]
    assert [pt["speed"] for pt in q["points"]] == [0.05, 0.1, 0.2, 0.4, 0.7]
    assert [pt["measured"] for pt in q["points"]] == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.7])
    # rising with the speed: pooled into one non-increasing share, their mean
    assert [pt["share"] for pt in q["points"]] == pytest.approx([0.29] * 5)
    # a keep-warm share, though the 0.7 slice ran without it (as plans above 0.55 do)
    assert q["keep_warm"] is True
    assert q["cache_file"] == str(tmp_path / "host-quota-share.json")
    share = edgeprof.speed.cached_quota_share()
    assert share is not None and share.scale_at(0.2) == pytest.approx(0.5)  # clamped
    # A device at its nn speed gets it as its quota scale, and the plan says so.
    # (a board of 1 GiB: the VM that runs these tests has less memory than an 8 GiB Pi 4)
    plan = edgeprof.plan_emulation(edgeprof.find_device("raspberry-pi-3b-plus").for_threads(1))
    # (scaled down to half, but no lower than the kernel's 1 ms minimum quota)
    assert plan.quota_scale < 1 or plan.cpu_quota_us == 1000
    assert any("own share under the scaled quota" in n for n in plan.notes)


@requires_cgroups
def test_the_real_own_share_with_ncnn_short_form(tmp_path, monkeypatch):
    pytest.importorskip("ncnn")
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    lines = []
    try:
        q = edgeprof.speed.measure_quota_share(python=sys.executable, graphs=["squeezenet"],
                                               speeds=[0.5], rounds=1, warmup=0, loops=1,
                                               progress=lines.append)
    except edgeprof.Error as e:
        # A CPU shared with another busy process (a parallel build beside the VM) is refused,
        # not measured low and cached: the other outcome this test accepts.
        assert "was shared" in str(e) and "not cached" in str(e)
        assert edgeprof.speed.cached_quota_share() is None
    else:
        assert [p.speed for p in q.points] == [0.5] and q.points[0].share > 0
        assert "ncnn" in q.runtime and any("[1/1] speed 0.5" in line for line in lines)
        assert edgeprof.speed.cached_quota_share() is not None
    with pytest.raises(edgeprof.Error, match="outside"):
        edgeprof.speed.measure_quota_share(speeds=[1.5])


def _fake_torch_python(tmp_path, ms=20.0, activations=False):
    """A stand-in for the Python that has PyTorch: times every model it is told (after DIR
    WARMUP LOOPS), as the PyTorch runner prints them; with `activations`, each model's
    activation MB too (as many as its name has letters)."""
    fake = tmp_path / "torch-python"
    count = 'echo "activations $m ${#m}"; ' if activations else ""
    fake.write_text("#!/bin/sh\necho 'runtime PyTorch 2.0.test fp32 eager (stand-in)'\n"
                    "shift 4\nfor m in \"$@\"; do case $m in --*) continue;; esac; "
                    f"{count}echo \"$m {ms} {ms} {ms}\"; done\n")
    fake.chmod(0o755)
    return fake


def test_a_rating_allocates_as_the_workloads_do(tmp_path, monkeypatch):
    """The runner's environment gets glibc's malloc thresholds settled, as a workload's does by
    default: the stand-in prints the mmap threshold it was given as its time and the trim
    threshold as its activations. A value of the caller's own is replaced, so that the cached
    rating is what its digest says."""
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    fake = tmp_path / "torch-python"
    fake.write_text("#!/bin/sh\necho 'runtime PyTorch 2.0.test fp32 eager (stand-in)'\n"
                    "shift 4\nfor m in \"$@\"; do case $m in --*) continue;; esac; "
                    "echo \"activations $m ${MALLOC_TRIM_THRESHOLD_:-1}\"; "
                    "echo \"$m ${MALLOC_MMAP_THRESHOLD_:-1} 1 1\"; done\n")
    fake.chmod(0o755)
    rated = edgeprof.nn.measure_nn_rating(runtime="pytorch", python=str(fake))
    assert set(rated.host_ms.values()) == {33554432.0}
    assert set(rated.activation_mb.values()) == {67108864.0}
    assert edgeprof.nn.cached_nn_rating(runtime="pytorch").host_ms == rated.host_ms
    steady = edgeprof.emulation.STEADY_MALLOC_ENV
    assert steady == {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "67108864"}
    pi = edgeprof.find_device("raspberry-pi-4b-4gb")
    plan = edgeprof.plan_emulation(pi, speed_kind="integer")
    assert {k: plan.thread_env[k] for k in steady} == steady
    # EDGEPROF_STEADY_MALLOC=0: glibc's own thresholds for the workload, the threads' kept.
    monkeypatch.setenv("EDGEPROF_STEADY_MALLOC", "0")
    dynamic = edgeprof.plan_emulation(pi, speed_kind="integer")
    assert not set(steady) & set(dynamic.thread_env)
    assert dynamic.thread_env["OMP_NUM_THREADS"] == plan.thread_env["OMP_NUM_THREADS"]


def test_calibrate_host_measures_a_pytorch_rating_beside_ncnns(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    torch = next(r for r in edgeprof.nn.nn_runtimes() if r.id == "pytorch")
    assert torch.precision == "fp32" and "resnet18" in torch.models
    # Without --nn, every cached rating is shown, with how to measure the missing ones.
    shown = edgeprof_cli("calibrate-host", env_extra=env)
    assert shown.returncode == 0, shown.stderr
    assert "--nn --runtime pytorch" in shown.stdout and torch.install in shown.stdout
    refused = edgeprof_cli("calibrate-host", "--runtime", "pytorch", env_extra=env)
    assert refused.returncode != 0 and "add --nn" in refused.stderr
    p = edgeprof_cli("calibrate-host", "--nn", "--runtime", "pytorch", "--python",
                     str(_fake_torch_python(tmp_path)), "--json", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    rated = data["runtimes"]["pytorch"]
    assert rated["runtime_id"] == "pytorch" and rated["precision"] == "fp32"
    assert rated["host_ms"] == {m: 20.0 for m in torch.models}
    assert rated["cache_file"] == str(tmp_path / "host-nn-pytorch.json")
    assert data["nn"] is None  # ncnn's rating is not measured by it
    cached = edgeprof.nn.cached_nn_rating(runtime="pytorch")
    assert cached is not None and cached.host_ms["vgg13"] == 20.0
    assert edgeprof.nn.cached_nn_rating() is None
    with pytest.raises(edgeprof.Error, match="nn runtime: no runtime is named 'tflite'"):
        edgeprof.nn.cached_nn_rating(runtime="tflite")
    text = edgeprof_cli("calibrate-host", env_extra=env)
    assert "13 models with PyTorch 2.0.test" in text.stdout


@requires_cgroups
def test_calibrate_host_measures_pytorchs_own_share_that_its_plans_take(tmp_path, monkeypatch):
    # The stand-in reports 20 ms per model however throttled: its own share is the speed.
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    p = edgeprof_cli("calibrate-host", "--nn", "--runtime", "pytorch", "--python",
                     str(_fake_torch_python(tmp_path)), "--json", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    q = data["runtime_quota_shares"]["pytorch"]
    assert q["runtime_id"] == "pytorch" and q["graphs"] == ["mixnet_s", "mobilenetv2_100",
                                                            "resnet18"]
    assert [pt["measured"] for pt in q["points"]] == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.7])
    assert q["cache_file"] == str(tmp_path / "host-quota-share-pytorch.json")
    assert data["quota_share"] is None  # ncnn's is not measured by it
    share = edgeprof.speed.cached_quota_share(runtime="pytorch")
    assert share is not None and share.runtime_id == "pytorch"
    assert edgeprof.speed.cached_quota_share() is None
    # A device at its PyTorch speed takes PyTorch's share; at another runtime's without one,
    # ncnn's, and the plan says so and how to measure that runtime's own.
    pi = edgeprof.find_device("raspberry-pi-4b-1gb")
    plan = edgeprof.plan_emulation(pi.for_runtime("pytorch").for_threads(1))
    assert any("with 3 PyTorch models" in n for n in plan.notes), plan.notes
    ncnn_share = edgeprof.speed.measure_quota_share(python=str(_fake_python(tmp_path)),
                                                    graphs=["squeezenet"], speeds=[0.5],
                                                    rounds=1)
    assert ncnn_share.runtime_id == "ncnn" and ncnn_share.cache_file
    edgeprof.nn.measure_nn_rating(runtime="onnxruntime", python=str(_fake_torch_python(tmp_path)))
    ort = edgeprof.plan_emulation(pi.for_runtime("onnxruntime").for_threads(1))
    assert any("with 1 ncnn graph" in n for n in ort.notes), ort.notes
    assert any("ONNX Runtime's own share under a quota is not taken (this host's own share under a quota is not measured yet" in n
               and "--runtime onnxruntime" in n for n in ort.notes), ort.notes
    text = edgeprof_cli("calibrate-host", env_extra=env).stdout
    assert "3 PyTorch models" in text
    assert "--nn --runtime onnxruntime` measures it with the rating" in text


def test_a_device_at_its_pytorch_speed_from_python(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    pi = edgeprof.find_device("raspberry-pi-4b-1gb")
    table = pi.runtime_ms["pytorch"]
    assert isinstance(table, edgeprof.devices.RuntimeTimes)
    assert table.threads == 4 and table.precision == "fp32" and "vgg13" in table.ms
    with pytest.raises(edgeprof.DeviceError, match="calibrate-host --nn --runtime pytorch"):
        pi.for_runtime("pytorch")
    with pytest.raises(edgeprof.DeviceError, match="no published PyTorch times"):
        edgeprof.find_device("beaglebone-black").for_runtime("pytorch")
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    before = edgeprof_cli("devices", "show", "raspberry-pi-4b-1gb", env_extra=env)
    assert "pytorch speed" in before.stdout and "calibrate-host --nn --runtime" in before.stdout
    edgeprof.nn.measure_nn_rating(runtime="pytorch", python=str(_fake_torch_python(tmp_path)))
    shown = edgeprof_cli("devices", "show", "raspberry-pi-4b-1gb", env_extra=env)
    assert shown.returncode == 0, shown.stderr
    assert "PyTorch speed" in shown.stdout and "ispcojp" in shown.stdout
    at = pi.for_runtime("pytorch")
    assert at.speed_kind == "nn" and at.nn.basis == "pytorch"
    assert at.core_speed == pytest.approx(at.nn.core_speed)
    assert at.nn.threads == 4 and at.nn.one_core_factor > 1
    assert "PyTorch speed" in at.speed_text and "PyTorch speed" in str(at.nn)


def test_a_device_at_its_pytorch_speed_pickles_at_that_speed(tmp_path, monkeypatch):
    """A pickled Device keeps its nn speed: unpickled, it was parsed again from its file, and a
    Pi 4 at its PyTorch speed came back at its ncnn one (3.3x faster)."""
    import copy
    import pickle
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    edgeprof.nn.measure_nn_rating(python=str(_fake_python(tmp_path, ms=2.0)))
    edgeprof.nn.measure_nn_rating(runtime="pytorch", python=str(_fake_torch_python(tmp_path)))
    pi = edgeprof.find_device("raspberry-pi-4b-1gb")
    at = pi.for_runtime("pytorch")
    assert at.nn.basis == "pytorch" and pi.nn.basis != "pytorch"
    assert at.core_speed != pytest.approx(pi.core_speed)
    for d in (at, at.for_threads(1)):
        plan = edgeprof.plan_emulation(d).cpu_quota_us
        for back in (pickle.loads(pickle.dumps(d)), copy.copy(d), copy.deepcopy(d)):
            assert (back.nn.basis, back.core_speed, back.speed_kind) == (
                "pytorch", d.core_speed, "nn")
            assert edgeprof.plan_emulation(back).cpu_quota_us == plan
    # Where no rating is cached (a fresh worker), it is still the PyTorch speed.
    sent = tmp_path / "device.pickle"
    sent.write_bytes(pickle.dumps(at))
    read = subprocess.run(
        [sys.executable, "-c", "import pickle, sys; d = pickle.load(open(sys.argv[1], 'rb')); "
         "print(d.nn.basis, repr(d.core_speed), d.nn.threads)", str(sent)],
        capture_output=True, text=True, timeout=HANG_S,
        env={**os.environ, "EDGEPROF_CACHE_DIR": str(tmp_path / "empty"),
             "EDGEPROF_MEASURE_NN": "0"})
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == ["pytorch", repr(at.core_speed), str(at.nn.threads)]


@requires_cgroups
def test_run_with_runtime_pytorch_emulates_the_pytorch_speed(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    edgeprof.nn.measure_nn_rating(runtime="pytorch", python=str(_fake_torch_python(tmp_path)))
    # The 1 GiB Pi 4: it fits the cgroup v2 VM too.
    args = ("run", "--device", "raspberry-pi-4b-1gb", "--threads", "1", "--runtime", "pytorch")
    p = edgeprof_cli(*args, "--json", "--", "true", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    speed = edgeprof.find_device("raspberry-pi-4b-1gb").for_runtime("pytorch").core_speed
    assert data["device"]["core_speed"] == pytest.approx(speed)
    assert data["device"]["speed_runtime"]["runtime"] == "pytorch"
    assert any("PyTorch speed" in n for n in data["plan"]["notes"])
    refused = edgeprof_cli(*args, "--speed-kind", "integer", "--", "true", env_extra=env)
    assert refused.returncode == 2 and "give one" in refused.stderr
    assert "Traceback" not in refused.stderr


@requires_cgroups
def test_run_with_a_memory_intensity_emulates_the_workloads_own_speed(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    rating = edgeprof.nn.measure_nn_rating(
        runtime="pytorch", python=str(_fake_torch_python(tmp_path, activations=True)))
    assert rating.activation_mb["resnet18"] == 8  # len("resnet18")
    args = ("run", "--device", "raspberry-pi-4b-1gb", "--threads", "1", "--runtime", "pytorch",
            "--memory-mb-per-ms", "0.5")
    p = edgeprof_cli(*args, "--json", "--", "true", env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    pi = edgeprof.find_device("raspberry-pi-4b-1gb")
    own = pi.for_runtime("pytorch", memory_mb_per_ms=0.5).nn
    assert data["device"]["core_speed"] == pytest.approx(own.core_speed)
    assert own.core_speed == pytest.approx(1 / (own.per_host_ms + 0.5 * own.ms_per_mb))
    assert own.core_speed != pytest.approx(pi.for_runtime("pytorch").core_speed)
    assert data["device"]["speed_runtime"]["memory_mb_per_ms"] == 0.5


@pytest.mark.parametrize("extra, message", [
    ((), "add --runtime pytorch"),
    (("--runtime", "ncnn"), "add --runtime pytorch"),
    (("--runtime", "pytorch", "--memory-mb-per-ms", "0"), "a positive number"),
    (("--runtime", "pytorch", "--memory-mb-per-ms", "nan"), "a positive number"),
])
def test_a_memory_intensity_without_a_runtime_with_a_memory_term_or_positive_is_refused(
        extra, message):
    memory = () if "--memory-mb-per-ms" in extra else ("--memory-mb-per-ms", "0.5")
    p = edgeprof_cli("run", "--device", "raspberry-pi-4b-1gb", *extra, *memory, "--", "true")
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_compare_with_a_runtime_needs_its_rating_and_says_so(tmp_path):
    # compare takes --runtime without --memory-mb-per-ms: its devices are made all the same.
    p = edgeprof_cli("compare", "-w", "a=true", "--device", "raspberry-pi-4b-1gb", "--runtime",
                     "pytorch", env_extra={"EDGEPROF_CACHE_DIR": str(tmp_path)})
    assert p.returncode != 0 and "calibrate-host --nn --runtime pytorch" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_onnx_runtime_is_one_more_entry_with_its_own_rating_and_speed(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    ids = [r.id for r in edgeprof.nn.nn_runtimes()]
    assert ids[:1] == ["ncnn"] and {"pytorch", "onnxruntime"} <= set(ids)
    orin = edgeprof.find_device("jetson-orin-nano-8gb")
    assert orin.runtime_ms["onnxruntime"].threads == 6
    with pytest.raises(edgeprof.DeviceError, match="--runtime onnxruntime"):
        orin.for_runtime("onnxruntime")
    rated = edgeprof.nn.measure_nn_rating(runtime="onnxruntime",
                                          python=str(_fake_torch_python(tmp_path, ms=5.0)))
    assert rated.runtime_id == "onnxruntime"
    assert rated.cache_file == str(tmp_path / "host-nn-onnxruntime.json")
    at = orin.for_runtime("onnxruntime")
    assert at.nn.basis == "onnxruntime" and "ONNX Runtime speed" in at.speed_text
    assert at.nn.memory_mb_per_ms == 0
    # A workload's own speed by a memory term needs the models' activations, which this
    # stand-in's rating did not count: refused with the command that counts them.
    with pytest.raises(edgeprof.DeviceError, match="--runtime onnxruntime --remeasure"):
        orin.for_runtime("onnxruntime", memory_mb_per_ms=2.0)
    # Not PyTorch's: that rating was not measured.
    with pytest.raises(edgeprof.DeviceError, match="--runtime pytorch"):
        orin.for_runtime("pytorch")


def test_pytorch_int8_is_a_rating_of_its_own_named_not_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    int8 = next(r for r in edgeprof.nn.nn_runtimes() if r.id == "pytorch-int8")
    assert int8.precision == "int8" and int8.precision_of == "pytorch"
    # What torch_boards.py tells the runner, as the rating does.
    assert int8.runner_args == ["--precision=int8", "--rounds=8", "--min-time=2", "--mean",
                                "--activations"]
    assert "shufflenet_v2_x0_5" in int8.models and int8.cache_name == "host-nn-pytorch-int8.json"
    pi = edgeprof.find_device("raspberry-pi-4b-4gb")
    assert pi.runtime_ms["pytorch-int8"].precision == "int8"
    assert pi.runtime_ms["pytorch-int8"].ms["mobilenet_v2"] == pytest.approx(26.4)
    with pytest.raises(edgeprof.DeviceError, match="--runtime pytorch-int8"):
        pi.for_runtime("pytorch-int8")  # not rated here yet
    rated = edgeprof.nn.measure_nn_rating(runtime="pytorch-int8",
                                          python=str(_fake_torch_python(tmp_path, ms=20.0)))
    assert rated.runtime_id == "pytorch-int8" and rated.precision == "int8"
    at = pi.for_runtime("pytorch-int8")
    assert at.nn.basis == "pytorch-int8" and at.nn.precision == "int8"
    # fp32's rating is another's: not measured, so PyTorch fp32 is still refused.
    with pytest.raises(edgeprof.DeviceError, match=r"--runtime pytorch(?![\w-])"):
        pi.for_runtime("pytorch")
    # A board without int8 times is refused, naming the ones that have them.
    with pytest.raises(edgeprof.DeviceError, match="raspberry-pi-4b-4gb"):
        edgeprof.find_device("raspberry-pi-5-8gb").for_runtime("pytorch-int8")


@requires_cgroups
def test_run_follows_the_runtime_its_workload_loads(tmp_path, monkeypatch):
    """Without --runtime, a device with PyTorch times switches to its PyTorch speed when the
    workload maps PyTorch's library, and the report says when."""
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    edgeprof.nn.measure_nn_rating(runtime="pytorch", python=str(_fake_torch_python(tmp_path)))
    # A file under PyTorch's library name, mapped as an import would map the library.
    library = tmp_path / "libtorch_cpu.so"
    library.write_bytes(b"\0" * 4096)
    code = ("import mmap, sys, time\nf = open(sys.argv[1], 'rb')\n"
            "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\ntime.sleep(6)\n")
    p = edgeprof_cli("run", "--device", "raspberry-pi-4b-1gb", "--threads", "1", "--json", "--",
                     sys.executable, "-c", code, str(library), env_extra=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["runtimes_seen"] == {"pytorch": "libtorch_cpu.so"}
    assert [c["runtime"] for c in data["speed_changes"]] == ["pytorch"]
    speed = edgeprof.find_device("raspberry-pi-4b-1gb").for_runtime("pytorch").core_speed
    assert data["device"]["core_speed"] == pytest.approx(speed)
    assert data["device"]["speed_runtime"]["runtime"] == "pytorch"
    assert data["device_interval"]["models"] == 13  # the PyTorch speed's interval
    assert data["provenance"]["device_interval"] == "estimated"
    assert any("the workload loaded PyTorch (libtorch_cpu.so): the device ran at" in w
               for w in data["warnings"])
    # Named, the speed is kept whatever the workload loads.
    kept = edgeprof_cli("run", "--device", "raspberry-pi-4b-1gb", "--threads", "1",
                        "--speed-kind", "integer", "--json", "--", sys.executable, "-c", code,
                        str(library), env_extra=env)
    assert kept.returncode == 0, kept.stderr
    kept_data = json.loads(kept.stdout)
    assert kept_data["runtimes_seen"] == {"pytorch": "libtorch_cpu.so"}  # seen, not followed
    assert kept_data["speed_changes"] == []


def test_time_interval_from_the_speeds_held_out_errors():
    s = edgeprof.nn.nn_speed({"a": 1, "b": 2, "c": 4}, {"a": 1, "b": 1, "c": 1})
    assert s.loo_log_sd > 0
    i = edgeprof.nn.time_interval(s)
    assert isinstance(i, edgeprof.nn.TimeInterval)
    assert i.models == 3 and i.level == 0.9 and i.low < 1 < i.high
    assert i.low == pytest.approx(1 / i.high)
    assert edgeprof.nn.time_interval(s, level=0.5).high < i.high
    assert "90% interval" in str(s)
    assert edgeprof.nn.time_interval(
        edgeprof.nn.nn_speed({"a": 1, "b": 2}, {"a": 1, "b": 1})) is None
    with pytest.raises(edgeprof.Error, match="between 0 and 1"):
        edgeprof.nn.time_interval(s, level=90)
    assert i.emulation_log_sd == 0
    wider = edgeprof.nn.time_interval(s, emulation_log_sd=0.2)
    assert wider.emulation_log_sd == 0.2 and wider.high > i.high
    with pytest.raises(edgeprof.Error, match="emulation spread"):
        edgeprof.nn.time_interval(s, emulation_log_sd=-1)
    assert wider.projection_log_sd == 0
    projected = edgeprof.nn.time_interval(s, emulation_log_sd=0.2, projection_log_sd=0.3)
    assert projected.projection_log_sd == 0.3 and projected.high > wider.high
    assert "projection_log_sd=0.3" in repr(projected)
    with pytest.raises(edgeprof.Error, match="projection spread"):
        edgeprof.nn.time_interval(s, projection_log_sd=float("nan"))
    # What a run under a plan reports: a projected Raspberry Pi 4's plan adds its board's
    # speed-up's spread to a one-thread speed's interval.
    plan = edgeprof.plan_emulation(edgeprof.find_device("raspberry-pi-4b-1gb"),
                                   speed_kind="integer", core_emulation="projected")
    run = edgeprof.nn.device_interval(s, plan)
    assert run.projection_log_sd == pytest.approx(plan.threads_projection.loo_log_sd)
    assert run.projection_log_sd > 0 and run.high > i.high
    assert edgeprof.nn.device_interval(s, plan, level=0.5).level == 0.5


def test_the_graph_benchmark_runs_edgeprofs_graphs_against_a_models_directory(tmp_path):
    """benchmarks/ncnn_graphs.py: reads ncnn's benchmark/models (here a stand-in holding
    edgeprof's own graph without its shape hints), times both with the rating's runner, and
    reports the ratio per graph; a directory without the graphs is refused by name."""
    pytest.importorskip("ncnn")
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "ncnn_graphs.py"
    graph = next(g for g in edgeprof.nn.reference_graphs() if g.name == "shufflenet")
    assert " -23330=" in graph.param
    models = tmp_path / "models"
    models.mkdir()
    (models / "shufflenet.param").write_text(re.sub(r" -23330=[0-9,-]+", "", graph.param))
    table = tmp_path / "out.md"
    done = subprocess.run([sys.executable, str(script), "--ncnn-models", str(models), "--rounds",
                           "1", "--loops", "2", "--warmup", "1", "--markdown", str(table)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode == 77:  # it says why it cannot run here (taskset missing)
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stderr
    row = next(line for line in table.read_text().splitlines() if line.startswith("| shufflenet"))
    assert float(row.split("|")[4].split()[0]) > 0
    assert "of 1 graphs" in table.read_text() and "not in" in done.stderr  # the 13 others
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = subprocess.run([sys.executable, str(script), "--ncnn-models", str(empty)],
                             capture_output=True, text=True, timeout=HANG_S)
    assert refused.returncode == 2 and "no graph to compare" in refused.stderr


def test_ctrl_c_stops_a_rating_measured_without_a_progress_callback(tmp_path):
    """A measurement runs with the GIL released: without a Python progress callback nothing
    let Ctrl-C through until it ended (minutes; here, its timeout)."""
    started = tmp_path / "started"
    fake = tmp_path / "python"
    # One graph's line, then a hang: a runner that would take until the rating's timeout.
    fake.write_text("#!/bin/sh\n"
                    "echo 'runtime ncnn 1.0.test (stand-in)'\n"
                    "echo 'mobilenet 10 10 10'\n"
                    f"echo $$ > {started}\n"
                    "exec sleep 600\n")
    fake.chmod(0o755)
    # Ctrl-C as at a terminal, though this test may run where SIGINT is ignored (started in
    # the background by a shell without job control, which Python then keeps).
    script = textwrap.dedent(f"""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import edgeprof
        edgeprof.nn.measure_nn_rating(python={str(fake)!r}, timeout_s=120)
    """)
    env = {**os.environ, "EDGEPROF_CACHE_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 600
    while not started.exists() or not started.read_text().strip():
        assert time.monotonic() < deadline and proc.poll() is None, "the runner never started"
        time.sleep(0.01)
    runner = int(started.read_text())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    # Interrupted, not timed out (that took 120 s and said "timed out").
    assert "KeyboardInterrupt" in err, err
    assert not (tmp_path / "host-nn.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(runner, 0)


@requires_cgroups
def test_ctrl_c_during_a_first_runs_own_share_measurement_stops_the_run(tmp_path, monkeypatch):
    """A first run at an nn speed measures this host's own share (about 80 s): Ctrl-C stops it
    there (an earlier mend let the interrupt through, and the measurement swallowed it as a
    failure: the run went on, the interrupt lost)."""
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    edgeprof.nn.measure_nn_rating(python=str(_fake_python(tmp_path)))
    started = tmp_path / "started"
    slow = tmp_path / "slow-python"
    lines = ["#!/bin/sh", f"touch {started}", "sleep 1", "echo 'runtime ncnn 1.0.test (stand-in)'"]
    lines += [f"echo '{g.name} 10 10 10'" for g in edgeprof.nn.reference_graphs()]
    slow.write_text("\n".join(lines) + "\n")
    slow.chmod(0o755)
    script = textwrap.dedent("""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as at a terminal
        import edgeprof
        edgeprof.run(["true"], device=edgeprof.find_device("raspberry-pi-zero-2w").for_threads(1))
        print("the run went on")
    """)
    env = {**os.environ, "EDGEPROF_CACHE_DIR": str(tmp_path), "EDGEPROF_PYTHON": str(slow),
           "EDGEPROF_MEASURE_NN": "1"}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert "KeyboardInterrupt" in err, err
    assert "the run went on" not in out
    assert not (tmp_path / "host-quota-share.json").exists()


@requires_cgroups
def test_a_run_counts_a_pytorch_workloads_activations_by_default_and_the_switch_turns_it_off(
        tmp_path, monkeypatch):
    # On a device at its PyTorch speed with this host's PyTorch rating (with activations) the
    # slice counts by default, said in the plan's notes; --no-count-activations, the keyword and
    # the environment turn it off.
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EDGEPROF_COUNT_ACTIVATIONS", raising=False)
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    edgeprof.nn.measure_nn_rating(
        runtime="pytorch", python=str(_fake_torch_python(tmp_path, activations=True)))
    args = ("run", "--device", "raspberry-pi-4b-1gb", "--threads", "1", "--runtime", "pytorch",
            "--json")
    counting = "activations: a workload's PyTorch model is counted"

    def notes(*extra, env_extra=env):
        p = edgeprof_cli(*args, *extra, "--", "true", env_extra=env_extra)
        assert p.returncode == 0, p.stderr
        return " ".join(json.loads(p.stdout)["plan"]["notes"])

    assert counting in notes()
    assert counting not in notes("--no-count-activations")
    assert counting not in notes(env_extra={**env, "EDGEPROF_COUNT_ACTIVATIONS": "0"})
    assert counting in notes("--count-activations",
                             env_extra={**env, "EDGEPROF_COUNT_ACTIVATIONS": "0"})
    # From Python: the note, and the counter's directory first on the workload's PYTHONPATH.
    pi = edgeprof.find_device("raspberry-pi-4b-1gb").for_runtime("pytorch")
    for count, said in ((None, True), (False, False), (True, True)):
        with open(tmp_path / "path", "w+") as out:
            r = edgeprof.run(["/bin/sh", "-c", 'echo "$PYTHONPATH"'], device=pi,
                             count_activations=count, stdout=out)
            out.seek(0)
            path = out.read()
        assert r.ok and (counting in " ".join(r.plan.notes)) == said, count
        assert ("edgeprof-count-" in path) == said, (count, path)


def test_demo_says_the_speed_its_runs_emulate_where_the_rating_is_measured_first(
        tmp_path, monkeypatch, capsys):
    """Without this host's nn rating the demo's header said the Pi 4's integer speed, and its
    first run then measured the rating and every run emulated the nn speed."""
    from edgeprof import cli
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("EDGEPROF_PYTHON", str(_fake_python(tmp_path)))
    monkeypatch.setenv("EDGEPROF_MEASURE_NN", "1")
    assert edgeprof.find_device("raspberry-pi-4").nn is None  # no rating cached here yet

    class Stop(Exception):
        pass

    def first_run(*args, **kwargs):  # the header is printed: no workload needs to run
        raise Stop

    monkeypatch.setattr(edgeprof, "run", first_run)
    with pytest.raises(Stop):
        cli.main(["demo"])
    header = capsys.readouterr().err
    pi = edgeprof.find_device("raspberry-pi-4")
    assert pi.nn is not None  # measured (by the stand-in) before the header
    assert f"speed {pi.for_speed_kind('automatic').speed_text}" in header, header
    assert "nn speed" in header


def test_ncnn_is_rated_in_this_interpreter_where_none_is_named(tmp_path, monkeypatch):
    """The rating ran python3 from PATH, which may not be the interpreter with edgeprof and
    ncnn (a venv's edgeprof run without activating it, a notebook kernel, cron): it failed
    with "pip install ncnn" though ncnn was installed."""
    pytest.importorskip("ncnn")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text("#!/bin/sh\necho 'error: not this one' >&2\nexit 3\n")
    (shim / "python3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    monkeypatch.delenv("EDGEPROF_PYTHON", raising=False)
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    rating = edgeprof.nn.measure_nn_rating(graphs=["squeezenet"], warmup=0, loops=1)
    assert rating.command == sys.executable and "squeezenet" in rating.host_ms
    # The library's default, set on import: a first run's rating takes it too (it took python3
    # from PATH, the shim here).
    assert edgeprof.nn.default_ncnn_python() == sys.executable
    # Named, the interpreter is used as it is (the shim's failure says so).
    with pytest.raises(edgeprof.Error, match="not this one"):
        edgeprof.nn.measure_nn_rating(python=str(shim / "python3"), graphs=["squeezenet"],
                                      warmup=0, loops=1)
