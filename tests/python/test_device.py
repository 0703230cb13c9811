import os

import pytest

import edgeprof


def test_device_from_keywords():
    d = edgeprof.Device(name="my-board", cores=2, core_speed=0.5, memory="512MiB")
    assert (d.name, d.cores, d.core_speed, d.memory_bytes, d.swap_bytes) == (
        "my-board", 2, 0.5, 512 << 20, 0)
    assert d == edgeprof.Device(name="my-board", cores=2, core_speed=0.5, memory=512 << 20)
    assert "my-board" in repr(d)


def test_a_devices_repr_tells_devices_that_emulate_differently_apart():
    """It showed name, cores, speed and a rounded memory only, as code it was not."""
    plain = edgeprof.Device(name="b'x", cores=2, core_speed=0.5, memory="512MiB")
    slower_io = edgeprof.Device(name="b'x", cores=2, core_speed=0.5, memory="512MiB",
                                swap="1GiB", io_read_bps=1000, pids_max=64)
    assert repr(plain) == ('<edgeprof.Device "b\'x": 2 cores, core_speed 0.5, memory 536870912 '
                           'B>')
    assert repr(slower_io) == ('<edgeprof.Device "b\'x": 2 cores, core_speed 0.5, memory '
                               "536870912 B, swap 1073741824 B, io_read 1000 B/s, pids_max 64>")
    pi = edgeprof.find_device("raspberry-pi-4b-4gb")
    assert "power 1.6-5.0 W" in repr(pi) and repr(pi) != repr(pi.for_threads(1))


def test_sizes_are_read_in_any_case_where_they_mean_one_thing():
    assert edgeprof.devices.parse_size("512mib") == 512 << 20
    with pytest.raises(edgeprof.DeviceError, match="'mb' may mean MiB or MB"):
        edgeprof.devices.parse_size("512mb")
    assert edgeprof.devices.format_signed_size(-1536 * 2**20) == "-1.50 GiB"


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(cores=0, core_speed=0.5, memory="512MiB"), "cores = 0"),
        (dict(cores=-1, core_speed=0.5, memory="512MiB"), "cores = -1"),
        (dict(cores=1, core_speed=0.0, memory="512MiB"), "core_speed = 0"),
        (dict(cores=1, core_speed=-2.0, memory="512MiB"), "core_speed = -2"),
        (dict(cores=1, core_speed=0.5, memory="12 parsecs"), "'12 parsecs'"),
        (dict(cores=1, core_speed=0.5, memory="1KiB"), "floor"),
        (dict(cores=1, core_speed=0.5, memory=-5), "negative"),
        (dict(cores=1, core_speed=0.5, memory="512MiB", pids_max=0), "pids_max = 0"),
        # Past C++'s types: named, not a TypeError, IndexError or RuntimeError (issue 36).
        (dict(cores=10**10, core_speed=0.5, memory="512MiB"), "cores = 10000000000"),
        (dict(cores=1, core_speed=0.5, memory="9" * 400), "too large"),
        (dict(cores=1, core_speed=0.5, memory=10**30), "too large"),
        (dict(cores=1, core_speed=0.5, memory=-10**30), "negative"),
    ],
)
def test_invalid_devices_name_the_field_and_value(kwargs, fragment):
    with pytest.raises(edgeprof.DeviceError, match=fragment) as info:
        edgeprof.Device(name="bad", **kwargs)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, edgeprof.Error)


def test_numpy_integers_are_core_counts():
    np = __import__("numpy")
    assert edgeprof.Device(name="n", cores=np.int64(4), core_speed=0.5, memory="1GiB").cores == 4
    with pytest.raises(edgeprof.DeviceError, match="whole number, got float"):
        edgeprof.Device(name="n", cores=4.0, core_speed=0.5, memory="1GiB")
    with pytest.raises(edgeprof.DeviceError, match="whole number, got bool"):
        edgeprof.Device(name="n", cores=True, core_speed=0.5, memory="1GiB")


def test_sizes():
    assert edgeprof.devices.parse_size("1.5GiB") == 3 << 29
    assert edgeprof.devices.parse_size("500MB") == 500_000_000
    assert edgeprof.devices.format_size(512 << 20) == "512 MiB"
    # Averages and projections are floats: they format too, and nonsense is refused.
    assert edgeprof.devices.format_size(float(512 << 20)) == "512 MiB"
    with pytest.raises(edgeprof.Error, match="got -1.0"):
        edgeprof.devices.format_size(-1.0)
    with pytest.raises(edgeprof.DeviceError, match="parsecs"):
        edgeprof.devices.parse_size("12 parsecs")


def test_builtin_devices(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))  # this host's 7-Zip rating unknown
    names = [d.name for d in edgeprof.devices.builtin_devices()]
    for name in ("raspberry-pi-3b", "raspberry-pi-4b-4gb", "jetson-nano"):
        assert name in names
        # every figure sourced
        assert edgeprof.devices.builtin_device(name).sources["core_speed"].source
    # The catalog's speeds (docs/devices.md), relative to the reference core and, with this
    # host's rating unknown, used as they are; the old name is an alias of the 4 GiB board.
    pi4 = edgeprof.devices.builtin_device("raspberry-pi-4")
    assert (pi4.name, pi4.cores, pi4.core_speed) == ("raspberry-pi-4b-4gb", 4, 0.373)
    assert pi4.reference_speed == 0.373 and pi4.host_reference_speed is None
    assert pi4.reference_uncorrected
    assert any("calibrate-host --reference" in n for n in edgeprof.plan_emulation(pi4).notes)
    assert edgeprof.plan_emulation(pi4).capacity_cores == pytest.approx(4 * 0.373)
    assert edgeprof.devices.builtin_device("raspberry-pi-3b").core_speed == 0.220
    assert edgeprof.devices.builtin_device("jetson-nano").core_speed == 0.355
    with pytest.raises(edgeprof.DeviceError, match="raspberry-pi-4"):
        edgeprof.devices.builtin_device("raspberry-pi-9")


def test_plan_is_pure_and_refuses_what_the_host_cannot_do():
    plan = edgeprof.plan_emulation(
        edgeprof.Device(name="d", cores=1, core_speed=0.5, memory="256MiB"), cpu_period_us=20000)
    assert plan.cpu_quota_us == 10000
    assert plan.capacity_cores == pytest.approx(0.5)
    # Too many cores for this host: as many as fit, and the note says so.
    big = edgeprof.plan_emulation(
        edgeprof.Device(name="big", cores=512, core_speed=1.0, memory="256MiB"))
    assert big.capacity_cores <= os.cpu_count()
    assert any("of the device's 512 cores are emulated" in n for n in big.notes)
    # A core faster than a host CPU cannot be emulated.
    with pytest.raises(edgeprof.UnsupportedError, match="faster than a host CPU"):
        edgeprof.plan_emulation(
            edgeprof.Device(name="fast", cores=1, core_speed=1.5, memory="256MiB"))


def test_exception_hierarchy():
    assert issubclass(edgeprof.PermissionDenied, PermissionError)
    assert issubclass(edgeprof.PermissionDenied, edgeprof.Error)
    assert issubclass(edgeprof.SpawnError, OSError)
    assert issubclass(edgeprof.DeviceError, ValueError)
    assert edgeprof.Error.__module__ == "edgeprof"
