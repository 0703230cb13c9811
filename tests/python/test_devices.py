"""Devices as users meet them: the catalog and its sources, device files (TOML and JSON) and their
errors, device directories, the `devices` and `calibrate-host` commands, energy estimates, speed
schedules, the CFS period chosen from an iteration time, and the host's calibration."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import edgeprof
from conftest import HANG_S, cli, cpu_limit, poll_until_changed, requires_cgroups

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "devices"
STATUSES = {"specified", "measured", "estimated"}

BOARD_TOML = """\
edgeprof_device = 1
name = "test-board"
aliases = ["tb"]
description = "A board described by a test"
cores = 2
core_speed = 0.4
memory = "512MiB"
swap = "128MiB"
pids_max = 256

[cpu]
model = "Cortex-A55"
soc = "RK3566"
clock_mhz = 1800
architecture = "aarch64"
layout = "2x Cortex-A55 @ 1800 MHz"

[storage]
kind = "eMMC"
read_bps = "150MB"
write_bps = 50_000_000

[power]
idle_w = 1.2
loaded_w = 4.8

[[speed_schedule]]
after_s = 30
factor = 0.7

[sources.core_speed]
status = "measured"
source = "our lab"
"""

BOARD_JSON = {
    "edgeprof_device": 1, "name": "test-board", "aliases": ["tb"],
    "description": "A board described by a test", "cores": 2, "core_speed": 0.4,
    "memory": "512MiB", "swap": "128MiB", "pids_max": 256,
    "cpu": {"model": "Cortex-A55", "soc": "RK3566", "clock_mhz": 1800,
            "architecture": "aarch64", "layout": "2x Cortex-A55 @ 1800 MHz"},
    "storage": {"kind": "eMMC", "read_bps": "150MB", "write_bps": 50_000_000},
    "power": {"idle_w": 1.2, "loaded_w": 4.8},
    "speed_schedule": [{"after_s": 30, "factor": 0.7}],
    "sources": {"core_speed": {"status": "measured", "source": "our lab"}},
}

# The smallest valid file, to which the error cases add one mistake each.
MINIMAL_TOML = 'edgeprof_device = 1\nname = "b"\ncores = 2\ncore_speed = 0.5\nmemory = "1GiB"\n'


def write(directory: Path, name: str, text: str | bytes) -> Path:
    path = directory / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def watts_device(**kwargs) -> edgeprof.Device:
    return edgeprof.Device(name="watts", cores=1, core_speed=0.5, memory="256MiB",
                           idle_watts=1.0, loaded_watts=5.0, **kwargs)


# The catalog


def test_the_catalog_has_a_dozen_devices_each_figure_with_its_source():
    devices = edgeprof.devices.catalog_devices()
    assert len(devices) >= 12
    for d in devices:
        assert d.origin == "catalog", d.name
        assert d.cores >= 1 and d.core_speed > 0 and d.memory_bytes > 0, d.name
        assert d.cpu.model, d.name
        assert 0 < d.power.idle_watts <= d.power.loaded_watts, d.name
        assert {"cores", "core_speed", "memory", "cpu", "power"} <= d.sources.keys(), d.name
        for figure, src in d.sources.items():
            assert src.status in STATUSES, (d.name, figure, src.status)
            assert src.source, (d.name, figure)
        # No probe results ship with the catalog: every speed is derived from a proxy benchmark.
        assert d.sources["core_speed"].status == "estimated", d.name


def test_catalog_names_and_aliases_are_unique_and_every_alias_resolves():
    devices = edgeprof.devices.catalog_devices()
    names = [n for d in devices for n in (d.name, *d.aliases)]
    assert len(names) == len(set(names))
    for d in devices:
        for alias in d.aliases:
            assert edgeprof.find_device(alias) == d
            assert edgeprof.devices.builtin_device(alias).name == d.name


def test_raspberry_pi_4_is_an_alias_of_the_4gb_board():
    assert edgeprof.find_device("raspberry-pi-4").name == "raspberry-pi-4b-4gb"
    assert edgeprof.devices.builtin_device("raspberry-pi-4").name == "raspberry-pi-4b-4gb"
    assert "raspberry-pi-4" in edgeprof.find_device("raspberry-pi-4b-4gb").aliases


def test_an_unknown_device_name_lists_the_known_ones():
    with pytest.raises(edgeprof.DeviceError, match="no device named 'no-such-device'") as e:
        edgeprof.find_device("no-such-device")
    assert "jetson-nano" in str(e.value)


# Device files


@pytest.mark.parametrize("suffix", [".toml", ".json"])
@pytest.mark.parametrize("as_path", [False, True], ids=["str", "Path"])
def test_a_device_file_loads_with_every_field(tmp_path, suffix, as_path):
    text = BOARD_TOML if suffix == ".toml" else json.dumps(BOARD_JSON)
    path = write(tmp_path, "test-board" + suffix, text)
    d = edgeprof.devices.load_device_file(path if as_path else str(path))
    assert (d.name, d.aliases, d.description) == (
        "test-board", ["tb"], "A board described by a test")
    assert (d.cores, d.core_speed, d.memory_bytes, d.swap_bytes, d.pids_max) == (
        2, 0.4, 512 << 20, 128 << 20, 256)
    assert (d.cpu.model, d.cpu.soc, d.cpu.clock_mhz, d.cpu.architecture, d.cpu.layout) == (
        "Cortex-A55", "RK3566", 1800.0, "aarch64", "2x Cortex-A55 @ 1800 MHz")
    assert (d.storage, d.io_read_bps, d.io_write_bps) == ("eMMC", 150_000_000, 50_000_000)
    assert (d.power.idle_watts, d.power.loaded_watts) == (1.2, 4.8)
    assert [(s.after_s, s.factor) for s in d.speed_schedule] == [(30.0, 0.7)]
    speed = d.sources["core_speed"]
    assert (speed.status, speed.source) == ("measured", "our lab")
    assert d.origin == str(path)


def test_the_documented_example_files_describe_one_device():
    toml = edgeprof.devices.load_device_file(FIXTURES / "my-board.toml")
    assert toml == edgeprof.devices.load_device_file(FIXTURES / "my-board.json")
    assert (toml.name, toml.cores, toml.core_speed, toml.memory_bytes) == (
        "my-board", 4, 0.3, 2 << 30)


@pytest.mark.parametrize("make", [
    lambda tmp: edgeprof.devices.load_device_file(write(tmp, "b.toml", BOARD_TOML)),
    lambda tmp: edgeprof.find_device("raspberry-pi-4"),
    lambda tmp: watts_device(speed_schedule=[edgeprof.devices.SpeedStep(0.2, 0.5)]),
], ids=["file", "catalog", "code"])
def test_to_json_is_a_device_file_that_loads_as_the_same_device(tmp_path, make):
    d = make(tmp_path)
    back = edgeprof.devices.load_device_file(write(tmp_path, "copy.json", d.to_json()))
    assert back == d
    assert {k: (s.status, s.source) for k, s in back.sources.items()} == {
        k: (s.status, s.source) for k, s in d.sources.items()}
    assert [(s.after_s, s.factor) for s in back.speed_schedule] == [
        (s.after_s, s.factor) for s in d.speed_schedule]
    assert (back.power.idle_watts, back.power.loaded_watts) == (
        d.power.idle_watts, d.power.loaded_watts)


def test_a_device_pickles_as_itself(tmp_path):
    """A Device goes to a process pool's workers (Optuna, joblib, concurrent.futures): it was
    "cannot pickle 'edgeprof._core.Device' object"."""
    import pickle
    made = [edgeprof.devices.load_device_file(write(tmp_path, "b.toml", BOARD_TOML)),
            watts_device(speed_schedule=[edgeprof.devices.SpeedStep(0.2, 0.5)])]
    for d in edgeprof.devices.catalog_devices():
        made += [d, d.for_threads(1)]
        if d.nn is not None:
            made.append(d.for_speed_kind("nn"))  # speed_kind "nn", which its file leaves out
    def nn(d):
        n = d.nn
        return None if n is None else (n.core_speed, n.basis, n.precision, n.threads,
                                       n.loo_log_sd, dict(n.ratios))

    for d in made:
        back = pickle.loads(pickle.dumps(d))
        assert back == d, d.name
        assert (back.origin, back.speed_kind, back.core_speed, back.speed_text, nn(back),
                back.nn_missing) == (d.origin, d.speed_kind, d.core_speed, d.speed_text, nn(d),
                                     d.nn_missing), d.name
    # Unpickled where this host's nn rating is not cached, the nn speed is the sender's (it
    # was worked out again there: none, or another runtime's).
    with_nn = [d for d in made if d.nn is not None]
    if with_nn:
        sent = tmp_path / "devices.pickle"
        sent.write_bytes(pickle.dumps(with_nn))
        read = subprocess.run(
            [sys.executable, "-c", "import pickle, sys; print([(d.nn.core_speed, d.nn.basis) "
             "for d in pickle.load(open(sys.argv[1], 'rb'))])", str(sent)],
            capture_output=True, text=True, timeout=HANG_S,
            env={**os.environ, "EDGEPROF_CACHE_DIR": str(tmp_path / "empty"),
                 "EDGEPROF_MEASURE_NN": "0"})
        assert read.returncode == 0, read.stderr
        assert read.stdout.strip() == str([(d.nn.core_speed, d.nn.basis) for d in with_nn])
    good = made[0].__getstate__()
    for bad in [(2, *good[1:]), ("1", *good[1:]), good[:2], (*good[:1], "{}", *good[2:]),
                (*good[:3], "integer", *good[4:]), (*good[:1], b'{"coers": 4}', *good[2:]),
                (*good[:4], (1.0,) * 13, *good[5:]), (*good[:2], None, *good[3:])]:
        with pytest.raises(edgeprof.Error, match=r"cannot unpickle this Device \(.*\): it was "
                                                 "pickled by another edgeprof release"):
            edgeprof.Device.__new__(edgeprof.Device).__setstate__(bad)
    # Texts that are not UTF-8 (a cache path in nn_missing) pickle as they are.
    odd = made[0].to_json().replace('"name": "', '"name": "caf\\u00e9-', 1)
    assert pickle.loads(pickle.dumps(edgeprof.devices.load_device_file(
        write(tmp_path, "odd.json", odd)))).name.startswith("café-")


@pytest.mark.parametrize("name, text, fragments", [
    ("typo.toml", MINIMAL_TOML + "coers = 4\n", ["field 'coers'", "unknown field"]),
    ("typo.json", json.dumps({**BOARD_JSON, "coers": 4}), ["field 'coers'", "unknown field"]),
    ("nested.toml", MINIMAL_TOML + '[cpu]\nmodle = "x"\n', ["field 'cpu.modle'", "unknown field"]),
    ("type.toml", MINIMAL_TOML + '[cpu]\nclock_mhz = "fast"\n',
     ["field 'cpu.clock_mhz'", "expected a number", '"fast"']),
    ("type.json", json.dumps({**BOARD_JSON, "cores": "two"}), ["field 'cores'", "whole number"]),
    ("status.toml", MINIMAL_TOML + '[sources.cores]\nstatus = "guessed"\nsource = "x"\n',
     ["field 'sources.cores.status'", "'guessed'", "specified, measured, estimated"]),
    ("noname.toml", MINIMAL_TOML.replace('name = "b"\n', ""), ["field 'name'", "required"]),
    ("bad.toml", 'edgeprof_device = 1\nname = "b"\ncores = = 2\n', [":3:9:", "not valid TOML"]),
    ("bad.json", '{"edgeprof_device": 1, "name": ', ["not valid JSON"]),
    # Not UTF-8: an edgeprof error quoting the byte, not a UnicodeDecodeError (issue 36).
    ("latin1.json", b'{"edgeprof_device": 1, "name": "b\xe9"}', ["not valid JSON", "\\x"]),
    ("huge.json", json.dumps({**BOARD_JSON, "cores": 2**64 - 1}),
     ["field 'cores'", "18446744073709551615 is out of range"]),
    ("newer.toml", MINIMAL_TOML.replace("edgeprof_device = 1", "edgeprof_device = 2"),
     ["field 'edgeprof_device'", "schema version 2 is newer", "upgrade edgeprof"]),
    ("newer.json", json.dumps({**BOARD_JSON, "edgeprof_device": 2}),
     ["schema version 2 is newer", "upgrade edgeprof"]),
])
def test_a_bad_device_file_is_refused_naming_the_file_and_the_problem(tmp_path, name, text,
                                                                      fragments):
    path = write(tmp_path, name, text)
    with pytest.raises(edgeprof.DeviceError) as e:
        edgeprof.devices.load_device_file(path)
    message = str(e.value)
    assert message.startswith(str(path)), message
    for fragment in fragments:
        assert fragment in message


def test_a_missing_device_file_names_its_path(tmp_path):
    with pytest.raises(edgeprof.DeviceError, match="no-such.toml"):
        edgeprof.devices.load_device_file(tmp_path / "no-such.toml")


def test_find_device_takes_a_path(tmp_path):
    path = write(tmp_path, "test-board.toml", BOARD_TOML)
    assert edgeprof.find_device(str(path)) == edgeprof.devices.load_device_file(path)


@pytest.fixture
def device_dir(tmp_path, monkeypatch):
    """A device directory on EDGEPROF_DEVICE_PATH with a good file and a broken one."""
    directory = tmp_path / "devices"
    directory.mkdir()
    write(directory, "test-board.toml", BOARD_TOML)
    write(directory, "broken.toml", MINIMAL_TOML + "coers = 4\n")
    monkeypatch.setenv("EDGEPROF_DEVICE_PATH", str(directory))
    return directory


def test_devices_in_the_device_directory_are_found_by_name_and_alias(device_dir):
    assert edgeprof.devices.device_search_path() == [str(device_dir)]
    d = edgeprof.find_device("test-board")
    assert d.origin == str(device_dir / "test-board.toml") and d.core_speed == 0.4
    assert edgeprof.find_device("tb") == d


def test_a_broken_file_is_a_problem_that_hides_no_other_device(device_dir):
    found = edgeprof.devices.user_devices()
    assert [d.name for d in found.devices] == ["test-board"]
    assert len(found.problems) == 1
    assert found.problems[0].startswith(str(device_dir / "broken.toml"))
    assert "field 'coers'" in found.problems[0]


def test_every_directory_of_the_device_path_is_read(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write(first, "test-board.toml", BOARD_TOML)
    write(second, "other.json", json.dumps({**BOARD_JSON, "name": "other", "aliases": []}))
    monkeypatch.setenv("EDGEPROF_DEVICE_PATH", f"{first}:{second}")
    assert (sorted(d.name for d in edgeprof.devices.user_devices().devices)
            == ["other", "test-board"])
    assert edgeprof.find_device("other").origin == str(second / "other.json")


# The command line


def test_cli_devices_lists_the_catalog_and_your_devices_and_reports_broken_files(device_dir):
    p = cli("devices", env_extra={"EDGEPROF_DEVICE_PATH": str(device_dir)})
    assert p.returncode == 0, p.stderr
    listed = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    for d in edgeprof.devices.catalog_devices():
        assert d.name in listed
    assert "test-board" in listed and "[user]" in p.stdout
    assert str(device_dir / "broken.toml") in p.stderr and "coers" in p.stderr


def test_cli_devices_json_is_every_device_as_a_device_file(device_dir):
    p = cli("devices", "--json", env_extra={"EDGEPROF_DEVICE_PATH": str(device_dir)})
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    names = [d["name"] for d in data]
    assert names == [d.name for d in edgeprof.devices.catalog_devices()] + ["test-board"]
    assert all(d["edgeprof_device"] == 1 for d in data)
    # The broken file is reported here too, on stderr, where it does not spoil the JSON.
    assert str(device_dir / "broken.toml") in p.stderr


def test_cli_devices_show_prints_every_figure_with_its_source():
    p = cli("devices", "show", "raspberry-pi-4")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("raspberry-pi-4b-4gb (also: raspberry-pi-4)")
    assert "estimated" in p.stdout and "sbc-bench" in p.stdout
    assert "measured" in p.stdout and "specified" in p.stdout


def test_cli_devices_show_a_device_file_as_json(tmp_path):
    path = write(tmp_path, "test-board.toml", BOARD_TOML)
    p = cli("devices", "show", str(path), "--json")
    assert p.returncode == 0, p.stderr
    shown = edgeprof.devices.load_device_file(write(tmp_path, "shown.json", p.stdout))
    assert shown == edgeprof.devices.load_device_file(path)


def test_cli_devices_show_an_unknown_device_fails_with_a_message():
    p = cli("devices", "show", "no-such-device")
    assert p.returncode == 2
    assert "no device named 'no-such-device'" in p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""


@requires_cgroups
def test_cli_runs_on_a_device_file(tmp_path):
    path = write(tmp_path, "test-board.toml", BOARD_TOML)
    report = tmp_path / "r.json"
    p = cli("run", "--device", str(path), "--json", str(report), "--", "true")
    assert p.returncode == 0, p.stderr
    device = json.loads(report.read_text())["device"]
    assert (device["name"], device["cores"], device["core_speed"]) == ("test-board", 2, 0.4)


def test_for_threads_emulates_as_many_cores_as_the_workload_has_busy_threads():
    pi = edgeprof.find_device("raspberry-pi-4")
    one = pi.for_threads(1)
    assert (one.name, one.cores, one.core_speed, one.memory_bytes) == (
        "raspberry-pi-4b-4gb-1-thread", 1, pi.core_speed, pi.memory_bytes)
    assert "1 of the device's 4 cores" in one.sources["cores"].source
    assert pi.for_threads(4) == pi
    with pytest.raises(edgeprof.DeviceError, match="threads = 0"):
        pi.for_threads(0)


@requires_cgroups
def test_cli_threads_cuts_the_device_to_the_workloads_threads(tmp_path):
    report = tmp_path / "r.json"
    p = cli("run", "--device", "raspberry-pi-4", "--threads", "1", "--json", str(report), "--",
            "true")
    assert p.returncode == 0, p.stderr
    device = json.loads(report.read_text())["device"]
    assert (device["name"], device["cores"]) == ("raspberry-pi-4b-4gb-1-thread", 1)
    bad = cli("run", "--device", "raspberry-pi-4", "--threads", "0", "--", "true")
    assert bad.returncode == 2 and "argument --threads: invalid number '0'" in bad.stderr


# Energy and speed schedules


@pytest.mark.parametrize("wall_s, cpu_s, capacity, joules", [
    (2.0, 0.5, 0.5, 1.0 * 2.0 + 4.0 * 1.0),  # fully loaded for cpu / capacity = 1 s
    (2.0, 0.1, 0.5, 1.0 * 2.0 + 4.0 * 0.2),
    (2.0, 0.0, 0.5, 1.0 * 2.0),  # idle: idle power the whole time
    (2.0, 3.0, 0.5, 1.0 * 2.0 + 4.0 * 2.0),  # load time is capped at the wall time
    (10.0, 10.0, 4.0, 1.0 * 10.0 + 4.0 * 2.5),  # one busy thread on four cores for 10 s
])
def test_energy_is_idle_power_plus_the_extra_for_the_time_fully_loaded(wall_s, cpu_s, capacity,
                                                                       joules):
    power = watts_device().power
    assert (power.idle_watts, power.loaded_watts) == (1.0, 5.0)
    assert (edgeprof.results.estimate_energy_j(power, wall_s, cpu_s, capacity)
            == pytest.approx(joules))


def test_no_energy_estimate_without_both_power_figures(half_core):
    assert edgeprof.results.estimate_energy_j(half_core.power, 2.0, 0.5, 0.5) is None
    idle_only = edgeprof.Device(name="idle", cores=1, core_speed=0.5, memory="256MiB",
                                idle_watts=1.0)
    assert edgeprof.results.estimate_energy_j(idle_only.power, 2.0, 0.5, 0.5) is None


def test_a_speed_schedule_is_kept_in_order():
    d = watts_device(speed_schedule=[edgeprof.devices.SpeedStep(0.2, 0.5),
                                     edgeprof.devices.SpeedStep(1.0, 0.25)])
    assert [(s.after_s, s.factor) for s in d.speed_schedule] == [(0.2, 0.5), (1.0, 0.25)]


@pytest.mark.parametrize("steps, fragment", [
    ([(0.2, 0.0)], "factor = 0 "),
    ([(0.2, 1.5)], "factor = 1.5 "),
    ([(0.5, 0.5), (0.2, 0.7)], "increasing order"),
    ([(-1.0, 0.5)], "after_s = -1"),
])
def test_an_invalid_speed_schedule_is_refused(steps, fragment):
    with pytest.raises(edgeprof.DeviceError, match="speed_schedule") as e:
        watts_device(speed_schedule=[edgeprof.devices.SpeedStep(t, f) for t, f in steps])
    assert fragment in str(e.value)


def test_loaded_power_below_idle_is_refused():
    with pytest.raises(edgeprof.DeviceError, match="below idle"):
        edgeprof.Device(name="d", cores=1, core_speed=0.5, memory="256MiB", idle_watts=5.0,
                        loaded_watts=1.0)


@requires_cgroups
def test_a_run_follows_the_speed_schedule_and_estimates_its_energy():
    device = watts_device(speed_schedule=[edgeprof.devices.SpeedStep(0.2, 0.5)])
    go_r, go_w = os.pipe()
    with edgeprof.Slice(device) as s:
        full = cpu_limit(s)
        assert full == (s.plan.cpu_quota_us, s.plan.cpu_period_us)
        # The workload runs until the test has read the quota the change wrote, however late
        # the change comes.
        try:
            child = s.spawn(["sh", "-c", 'read line; [ "$line" = go ]'], stdin=go_r)
            changed = poll_until_changed(lambda: cpu_limit(s), full)
            os.write(go_w, b"go\n")
        finally:
            os.close(go_r)
            os.close(go_w)
        r = child.wait(timeout=HANG_S)
        restored = cpu_limit(s)  # what the next workload in the slice starts with
    assert r.ok, r
    [change] = r.speed_changes
    assert change.t_s >= 0.2  # a timer: never early (how late is the scheduler's)
    assert change.factor == 0.5 and change.error == ""
    assert change.cpu_quota_us * 2 == r.plan.cpu_quota_us
    assert change.cpu_period_us == r.plan.cpu_period_us
    # The kernel held half the quota after the change, and the full one again after the run.
    assert changed == (change.cpu_quota_us, change.cpu_period_us)
    assert restored == full

    assert r.energy_j is not None and r.energy_j >= 1.0 * r.wall_time_s
    assert r.energy_j == pytest.approx(edgeprof.results.estimate_energy_j(
        device.power, r.wall_time_s, r.cpu_user_s + r.cpu_system_s, r.plan.capacity_cores))

    text = r.to_json()
    data = json.loads(text)
    assert data["energy_j"] == pytest.approx(r.energy_j)
    [saved] = data["speed_changes"]
    assert (saved["t_s"], saved["factor"]) == (pytest.approx(change.t_s), 0.5)
    back = edgeprof.Result.from_json(text)
    assert back.energy_j == pytest.approx(r.energy_j)
    [loaded] = back.speed_changes
    assert loaded.t_s == pytest.approx(change.t_s)
    assert (loaded.factor, loaded.cpu_quota_us, loaded.cpu_period_us, loaded.error) == (
        change.factor, change.cpu_quota_us, change.cpu_period_us, change.error)
    # Shown with what the change was: a schedule's step by its factor; a count's by its
    # runtime and memory term; a failed one with its error.
    assert repr(loaded) == f"SpeedChange(t_s={loaded.t_s!r}, factor=0.5)"
    saved.update(runtime="pytorch", memory_mb_per_ms=6.0, error="no bandwidth")
    [counted] = edgeprof.Result.from_json(json.dumps(data)).speed_changes
    assert repr(counted) == (f"SpeedChange(t_s={counted.t_s!r}, factor=0.5, runtime='pytorch', "
                             "memory_mb_per_ms=6.0, error='no bandwidth')")
    assert back.device == device


@requires_cgroups
def test_a_run_without_power_figures_has_no_energy(half_core):
    r = edgeprof.run(["true"], device=half_core)
    assert r.energy_j is None and r.speed_changes == []
    assert json.loads(r.to_json())["energy_j"] is None


# The CFS period


@pytest.mark.parametrize("iteration_us, period_us", [
    (80_000, 8_000),  # a tenth of the iteration
    (200_000, 20_000),
    (40_000, 5_000),  # at least 5 ms
    (1, 5_000),
    (2_000_000, 100_000),  # at most 100 ms
    (0, 10_000),  # no iteration time: the default period
])
def test_the_period_is_a_tenth_of_the_iteration_within_5_to_100_ms(iteration_us, period_us):
    assert edgeprof.emulation.choose_cpu_period_us(iteration_us) == period_us


def test_the_default_period_is_used_without_an_iteration_time():
    assert edgeprof.emulation.choose_cpu_period_us(0) == edgeprof.emulation.DEFAULT_CPU_PERIOD_US


def test_a_plan_takes_its_period_from_the_iteration_time(half_core):
    plan = edgeprof.plan_emulation(half_core, iteration_time=0.1)
    assert plan.cpu_period_us == 10_000 and plan.cpu_quota_us == 5_000
    assert any("100 ms" in note for note in plan.notes)


def test_a_plan_refuses_both_a_period_and_an_iteration_time(half_core):
    with pytest.raises(edgeprof.Error, match="not both"):
        edgeprof.plan_emulation(half_core, iteration_time=0.02, cpu_period_us=5000)


def test_a_plan_refuses_an_iteration_time_that_is_not_positive(half_core):
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(edgeprof.Error, match="iteration_time"):
            edgeprof.plan_emulation(half_core, iteration_time=bad)


# The host's calibration


@pytest.fixture(scope="module")
def quick_scores():
    return edgeprof.speed.run_suite(per_kernel_s=0.02, repeats=1)


def test_the_suite_scores_this_host(quick_scores):
    s = quick_scores
    assert s.suite == edgeprof.speed.SUITE_VERSION
    assert s.integer > 0 and s.floating > 0 and s.memory > 0


def test_speed_is_the_ratio_of_scores_within_one_suite(quick_scores):
    s = quick_scores
    assert edgeprof.speed.speed_from_scores(s, s) == pytest.approx(1.0)
    twice = edgeprof.speed.CoreScores(integer=2 * s.integer, floating=2 * s.floating,
                                      memory=2 * s.memory, suite=s.suite)
    assert edgeprof.speed.speed_from_scores(s, twice) == pytest.approx(0.5)
    other = edgeprof.speed.CoreScores(integer=s.integer, floating=s.floating, memory=s.memory,
                                      suite="another-suite")
    with pytest.raises(edgeprof.DeviceError, match="another-suite"):
        edgeprof.speed.speed_from_scores(other, s)


def test_run_suite_refuses_a_kernel_time_out_of_range():
    with pytest.raises(ValueError, match="per_kernel_s"):
        edgeprof.speed.run_suite(per_kernel_s=0)


def test_the_vector_kernel_runs_on_the_unit_asked_for(quick_scores):
    units = edgeprof.speed.vector_units()
    assert quick_scores.vector > 0 and quick_scores.vector_unit == units[0]
    assert quick_scores.vector_kernel == edgeprof.speed.VECTOR_KERNEL_VERSION
    s = edgeprof.speed.run_suite(per_kernel_s=0.02, repeats=1, vector_unit=units[-1])
    assert s.vector > 0 and s.vector_unit == units[-1]
    # One timed run per kernel: no spread recorded (not a measured 0).
    assert s.spread == {}
    with pytest.raises(edgeprof.Error, match="vector unit 'avx9000'.*" + units[-1]):
        edgeprof.speed.run_suite(per_kernel_s=0.02, repeats=1, vector_unit="avx9000")


def test_the_host_is_measured_once_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    first = edgeprof.speed.host_calibration()  # measures: about 4 s
    assert not first.from_cache and first.note
    assert Path(first.cache_file) == tmp_path / "host-calibration.json"
    assert first.scores.suite == edgeprof.speed.SUITE_VERSION and first.scores.integer > 0
    assert set(first.scores.spread) == {"integer", "floating", "memory", "vector"}
    assert all(v >= 0 for v in first.scores.spread.values())

    again = edgeprof.speed.host_calibration()
    assert again.from_cache and again.scores == first.scores
    assert again.measured_at == first.measured_at

    # The command reads the same cache.
    p = cli("calibrate-host", "--json", env_extra={"EDGEPROF_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    shown = json.loads(p.stdout)
    assert shown["from_cache"] is True and shown["cache_file"] == first.cache_file
    assert (shown["suite"], shown["integer"], shown["floating"], shown["memory"]) == (
        first.scores.suite, first.scores.integer, first.scores.floating, first.scores.memory)

    # A probed device file has scores instead of a speed: its speed is computed against the host.
    half = {k: getattr(first.scores, k) / 2 for k in ("integer", "floating", "memory")}
    probed = write(tmp_path, "probed.json", json.dumps({
        "edgeprof_device": 1, "name": "probed", "cores": 1, "memory": "256MiB",
        "scores": {"suite": edgeprof.speed.SUITE_VERSION, **half}}))
    d = edgeprof.devices.load_device_file(probed)
    assert d.core_speed == pytest.approx(0.5)
    assert d.scores == edgeprof.speed.CoreScores(suite=edgeprof.speed.SUITE_VERSION, **half)
    assert d.nn is None and "older edgeprof-probe" in d.nn_missing

    # With the probe's vector score it has an nn speed too, which a run uses by default.
    assert first.scores.vector > 0 and first.scores.vector_unit == edgeprof.speed.vector_units()[0]
    assert shown["vector"] == first.scores.vector
    vec = write(tmp_path, "vec.json", json.dumps({
        "edgeprof_device": 1, "name": "vec", "cores": 1, "memory": "256MiB",
        "scores": {"suite": edgeprof.speed.SUITE_VERSION, **half, "vector": first.scores.vector / 8,
                   "vector_unit": "neon", "vector_kernel": edgeprof.speed.VECTOR_KERNEL_VERSION}}))
    v = edgeprof.devices.load_device_file(vec)
    assert v.core_speed == pytest.approx(0.5)
    assert v.nn.basis == "vector" and v.nn.core_speed == pytest.approx(0.125)
    assert v.nn.vector_units == f"neon on the device, {first.scores.vector_unit} here"
    assert v.for_speed_kind("automatic").core_speed == pytest.approx(0.125)
    assert (edgeprof.nn.nn_speed_from_scores(v.scores, first.scores).core_speed
            == pytest.approx(0.125))
    old = write(tmp_path, "old.json",
                probed.read_text().replace(edgeprof.speed.SUITE_VERSION, "old"))
    with pytest.raises(edgeprof.DeviceError, match="edgeprof-probe"):
        edgeprof.devices.load_device_file(old)


def test_catalog_speeds_follow_this_hosts_7zip_rating(tmp_path, monkeypatch):
    """Catalog speeds are relative to the reference core; once this host's 7-Zip rating is
    measured (here: 7-Zip's output as captured on this project's host, 3807 MIPS), the catalog
    and the commands give them relative to this host."""
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    assert edgeprof.speed.cached_reference_rating() is None
    mine = edgeprof.Device(name="mine", cores=1, reference_speed=0.5, memory="64MiB")
    assert mine.core_speed == 0.5 and mine.reference_uncorrected
    assert "calibrate-host --reference" in mine.sources["core_speed"].source
    p = cli("devices", env_extra=env)
    assert p.returncode == 0 and "UNCORRECTED for this host" in p.stdout, p.stdout
    p = cli("calibrate-host", "--json", env_extra=env)
    assert p.returncode == 0 and json.loads(p.stdout)["reference"] is None, p.stderr
    # A device file saved before this host's rating is known (uncorrected then).
    saved = tmp_path / "pi4.json"
    p = cli("devices", "show", "raspberry-pi-4", "--json", env_extra=env)
    assert p.returncode == 0, p.stderr
    saved.write_text(p.stdout)

    captured = Path(__file__).parent.parent / "fixtures" / "7zip" / "7zz-26.02-b-mmt1.txt"
    fake = write(tmp_path, "7zz", f"#!/bin/sh\ncat '{captured}'\n")
    fake.chmod(0o755)
    lines: list[str] = []
    rating = edgeprof.speed.measure_reference_rating(program=str(fake), progress=lines.append)
    assert rating.host_mips == 3807 and rating.speed == pytest.approx(3807 / 4448)
    assert rating.cache_file == str(tmp_path / "host-reference.json") and not rating.note
    assert "3807 MIPS" in str(rating) and any("3807 MIPS" in line for line in lines)
    assert edgeprof.speed.cached_reference_rating().host_mips == 3807

    mine = edgeprof.Device(name="mine", cores=1, reference_speed=0.5, memory="64MiB")
    assert mine.core_speed == pytest.approx(0.5 * 4448 / 3807)
    assert mine.host_reference_speed == pytest.approx(3807 / 4448)
    assert not mine.reference_uncorrected
    given = edgeprof.Device(name="mine", cores=1, reference_speed=0.5, host_reference_speed=0.8,
                            memory="64MiB")
    assert given.core_speed == pytest.approx(0.625)

    pi4 = edgeprof.find_device("raspberry-pi-4")
    assert pi4.core_speed == pytest.approx(0.373 * 4448 / 3807)
    assert pi4.host_reference_speed == pytest.approx(3807 / 4448)
    assert not pi4.reference_uncorrected
    p = cli("devices", "show", "raspberry-pi-4", env_extra=env)
    assert p.returncode == 0, p.stderr
    assert ("0.4358 of a host core (0.373 of the reference core / this host's 0.856)"
            in p.stdout and "reference speed" in p.stdout), p.stdout
    # Read again now: corrected as the catalog's device is (it stayed uncorrected).
    again = edgeprof.devices.load_device_file(str(saved))
    assert again.core_speed == pytest.approx(0.373 * 4448 / 3807)
    assert not again.reference_uncorrected
    p = cli("calibrate-host", "--json", env_extra=env)
    shown = json.loads(p.stdout)["reference"]
    assert shown["host_mips"] == 3807 and shown["reference_mips"] == 4448

    with pytest.raises(edgeprof.Error, match="install 7-Zip"):
        edgeprof.speed.measure_reference_rating(program=str(tmp_path / "no-such-7z"))


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(core_speed=0.5, reference_speed=0.5), "not both or neither"),
        (dict(), "not both or neither"),
        (dict(reference_speed=-1.0), "reference_speed -1 is not a positive number"),
        (dict(reference_speed=0.5, host_reference_speed=-1.0), "host_reference_speed -1 is not a speed"),
        (dict(core_speed=0.5, host_reference_speed=0.8), "needs reference_speed"),
    ],
)
def test_a_device_needs_one_speed(kwargs, fragment):
    with pytest.raises(edgeprof.DeviceError, match=fragment):
        edgeprof.Device(name="mine", cores=1, memory="64MiB", **kwargs)


def test_a_reader_that_goes_away_is_not_an_error():
    """`edgeprof devices show NAME | head -2` ends quietly, without a traceback."""
    import subprocess
    import sys
    p = subprocess.run(f"'{sys.executable}' -m edgeprof devices show raspberry-pi-4 | head -c 10",
                       shell=True, capture_output=True, text=True, timeout=HANG_S)
    assert p.stdout == "raspberry-"
    assert "Traceback" not in p.stderr, p.stderr
