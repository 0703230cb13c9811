"""The edgeprof command line, run as users run it (a subprocess)."""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import edgeprof as edgeprof_api
from conftest import cli as edgeprof
from conftest import HANG_S, captured_report_text, our_slices, requires_cgroups


def test_devices_lists_the_builtin_devices():
    p = edgeprof("devices")
    assert p.returncode == 0
    for name in ("raspberry-pi-3b", "raspberry-pi-4b-4gb", "jetson-nano"):
        assert name in p.stdout.split()
    data = json.loads(edgeprof("devices", "--json").stdout)
    by_name = {d["name"]: d for d in data}
    assert by_name.keys() >= {"raspberry-pi-4b-4gb", "jetson-nano"}
    assert "raspberry-pi-4" in by_name["raspberry-pi-4b-4gb"]["aliases"]
    one = edgeprof("devices", "jetson-nano")
    assert one.returncode == 0 and "estimated" in one.stdout


def test_a_cache_that_is_there_but_unusable_is_named_not_called_unmeasured(tmp_path):
    """A corrupt rating (a full disk's half-written file) was reported as "NOT measured" and
    "run it once", though it had been run: the file and its problem are said."""
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path)}
    p = edgeprof("devices", env_extra=env)
    assert p.returncode == 0, p.stderr
    assert "NOT measured: run `edgeprof calibrate-host --nn` once" in p.stdout  # as before
    (tmp_path / "host-nn.json").write_text("{")
    (tmp_path / "host-reference.json").write_text("[]")
    p = edgeprof("devices", env_extra=env)
    assert p.returncode == 0, p.stderr
    assert "host-nn.json is corrupt" in p.stdout and "(`edgeprof calibrate-host --nn`)" in p.stdout
    assert "host-reference.json" in p.stdout and "` once" not in p.stdout
    # The same reasons from the API.
    code = ("import edgeprof; print(edgeprof.nn.why_not_cached_nn_rating()); "
            "print(edgeprof.speed.why_not_cached_quota_share()); "
            "print(repr(edgeprof.nn.why_not_cached_nn_rating(runtime='pytorch')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **env}, check=True).stdout.splitlines()
    assert "host-nn.json is corrupt" in out[0]
    assert "is not measured yet" in out[1]
    assert "host-nn-pytorch.json" in out[2]


def test_import_leaves_numpy_pandas_and_matplotlib_for_later():
    # Every command-line call imports edgeprof; numpy alone took 150 ms of a 175 ms import here.
    # They load when a series is converted or plotted.
    import subprocess

    code = ("import sys, edgeprof; "
            "print(sorted(m for m in ('numpy', 'pandas', 'matplotlib') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[]"


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
    # The summary goes to stderr as without --json (it went nowhere, its warnings with it).
    assert "wall time" in p.stderr


@requires_cgroups
def test_run_keeps_throttled_cpus_warm_unless_told_not_to():
    args = ("run", "--cores", "1", "--speed", "0.5", "--memory", "128MiB")
    on = edgeprof(*args, "--", sys.executable, "-c", "pass")
    assert on.returncode == 0, on.stderr
    assert "keep-warm" in on.stderr and "thread clocks" in on.stderr
    off = edgeprof(*args, "--no-keep-warm", "--json", "--", sys.executable, "-c", "pass")
    assert off.returncode == 0, off.stderr
    data = json.loads(off.stdout)
    assert data["plan"]["keep_warm"] is False and data["keep_warm_cpu_s"] == 0


@requires_cgroups
def test_run_gives_the_workload_the_devices_width_unless_told_not_to():
    args = ("run", "--cores", "4", "--speed", "0.1", "--memory", "128MiB")
    show = "import os; print(os.environ.get('OMP_NUM_THREADS'), os.environ.get('OMP_WAIT_POLICY'))"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "KMP_"))}
    on = subprocess.run([sys.executable, "-m", "edgeprof", *args, "--json", "--", sys.executable,
                         "-c", show], capture_output=True, text=True, timeout=HANG_S, env=env)
    assert on.returncode == 0, on.stderr
    assert "4 PASSIVE" in on.stderr  # the workload's stdout goes to stderr with --json
    data = json.loads(on.stdout)
    assert data["thread_env"]["OMP_NUM_THREADS"] == "4"
    assert data["plan"]["thread_env"]["OMP_WAIT_POLICY"] == "PASSIVE"
    text = subprocess.run([sys.executable, "-m", "edgeprof", *args, "--", "true"],
                          capture_output=True, text=True, timeout=HANG_S, env=env)
    assert "environment" in text.stderr and "OMP_NUM_THREADS=4" in text.stderr
    off = subprocess.run([sys.executable, "-m", "edgeprof", *args, "--no-thread-env", "--", sys.executable,
                          "-c", show], capture_output=True, text=True, timeout=HANG_S, env=env)
    assert off.returncode == 0, off.stderr
    assert "None None" in off.stdout


@requires_cgroups
def test_concurrent_edgeprof_processes_take_distinct_cpus_or_say_they_shared():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    one = edgeprof_api.Device(name="one", cores=1, core_speed=1.0, memory="64MiB")
    args = ("run", "--cores", "1", "--speed", "1", "--memory", "64MiB", "--json", "--", "true")
    with edgeprof_api.Slice(one) as held:  # this process holds a CPU while the command runs
        p = edgeprof(*args)
        assert p.returncode == 0, p.stderr
        data = json.loads(p.stdout)
        assert data["plan"]["cpus"] != ",".join(map(str, held.plan.cpus))  # "1" against [0]
        assert not [w for w in data["warnings"] if "shared host CPUs" in w]
    width = len(os.sched_getaffinity(0))
    every = edgeprof_api.Device(name="every", cores=width, core_speed=1.0, memory="64MiB")
    with edgeprof_api.Slice(every):  # every CPU: the command must share, and says with whom
        p = edgeprof(*args)
        assert p.returncode == 0, p.stderr
        data = json.loads(p.stdout)
        assert [w for w in data["warnings"] if f"edgeprof process {os.getpid()}" in w], data["warnings"]


@requires_cgroups
def test_run_a_custom_device_given_relative_to_the_reference_core(tmp_path, monkeypatch):
    # This host's 7-Zip rating, from 7-Zip's output as captured on this project's host (3807
    # MIPS, 0.856 of the reference core's 4448), cached where the command will look.
    import edgeprof as api
    monkeypatch.setenv("EDGEPROF_CACHE_DIR", str(tmp_path))
    captured = Path(__file__).parent.parent / "fixtures" / "7zip" / "7zz-26.02-b-mmt1.txt"
    fake = tmp_path / "7zz"
    fake.write_text(f"#!/bin/sh\ncat '{captured}'\n")
    fake.chmod(0o755)
    api.speed.measure_reference_rating(program=str(fake))
    p = edgeprof("run", "--cores", "1", "--reference-speed", "0.4", "--memory", "128MiB",
                 "--json", "--", "true", env_extra={"EDGEPROF_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    device = json.loads(p.stdout)["device"]
    assert device["core_speed"] == pytest.approx(0.4 * 4448 / 3807)
    assert device["reference_speed"] == 0.4
    assert device["host_reference_speed"] == pytest.approx(3807 / 4448)


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
        (["run", "--cores", "1", "--speed", "1", "--reference-speed", "0.4", "--memory", "1GiB",
          "--", "true"], "not both"),
        (["run", "--cores", "1", "--reference-speed", "0", "--memory", "1GiB", "--", "true"],
         "reference_speed 0 is not a positive number"),
        (["run", "--cores", "1", "--speed", "1", "--memory", "12 parsecs", "--", "true"],
         "12 parsecs"),
        (["run"], "no command"),
        (["run", "--interval", "fast", "--", "true"], "invalid interval"),
        (["run", "--interval", "0.1ms", "--", "true"], "1 ms to 60 s"),
        (["run", "--repeat", "0", "--", "true"], "--repeat"),
        (["show", "/no/such/report.json"], "/no/such/report.json"),
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
    # The default device is the alias raspberry-pi-4; reports name the device it resolves to.
    assert all(r["device"]["name"] == "raspberry-pi-4b-4gb" for r in rows)


@requires_cgroups
def test_run_writes_json_and_csv_files_and_show_reads_them(tmp_path):
    report, series = tmp_path / "r.json", tmp_path / "r.csv"
    p = edgeprof("run", "--cores", "1", "--speed", "1", "--memory", "128MiB",
                 "--interval", "5ms", "--json", str(report), "--csv", str(series), "--",
                 "sleep", "0.2")
    assert p.returncode == 0, p.stderr
    assert "sampling" in p.stderr and "every 5 ms" in p.stderr
    data = json.loads(report.read_text())
    assert data["wall_time_s"] >= 0.2  # the sleep's lower bound (load only adds time)
    # The interval asked for; at least the first and the final sample (how many deadlines the
    # sampler kept depends on the load).
    assert data["summary"]["interval_s"] == 0.005 and data["summary"]["samples"] >= 2
    rows = series.read_text().splitlines()
    assert rows[0].startswith("# edgeprof.series schema_version=1 edgeprof_version=")
    rows = rows[1:]
    assert rows[0].startswith("t_s,scheduled,") and len(rows) == data["summary"]["samples"] + 1
    shown = edgeprof("show", str(report))
    assert shown.returncode == 0 and "wall time" in shown.stdout


@requires_cgroups
def test_run_repeat_prints_statistics_and_progress(tmp_path):
    report = tmp_path / "rr.json"
    p = edgeprof("run", "--cores", "1", "--speed", "1", "--memory", "128MiB", "--repeat", "3",
                 "--warmup", "1", "--json", str(report), "--csv", str(tmp_path / "rr.csv"),
                 "--", "sleep", "0.05")
    assert p.returncode == 0, p.stderr
    assert "[1/4] warm-up" in p.stderr and "[4/4] run 3/3" in p.stderr
    assert "95% CI of the mean" in p.stderr and "wall_time_s" in p.stderr
    data = json.loads(report.read_text())
    assert data["schema"] == "edgeprof.repeated" and data["repeat"] == 3
    assert data["stats"]["wall_time_s"]["n"] == 3
    csv_lines = (tmp_path / "rr.csv").read_text().splitlines()
    assert csv_lines[0].startswith("# edgeprof.repeated_series schema_version=1 ")
    csv_runs = {line.split(",")[0] for line in csv_lines[2:]}
    assert csv_runs == {"1", "2", "3"}
    shown = edgeprof("show", str(report))
    assert shown.returncode == 0 and "3 runs (+1 warm-up)" in shown.stdout

    # A run that lost a source: its rows keep the header's columns, the lost one empty (once
    # they were shorter, their figures under the wrong names).
    data["runs"][1]["series"]["available"].remove("memory_current_bytes")
    data["runs"][1]["series"]["complete"] = [
        m for m in data["runs"][1]["series"]["complete"] if m != "memory_current_bytes"]
    del data["runs"][1]["series"]["columns"]["memory_current_bytes"]
    data["runs"][1]["series"]["read_every"].pop("memory_current_bytes", None)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    out = tmp_path / "edited.csv"
    shown = edgeprof("show", str(edited), "--csv", str(out))
    assert shown.returncode == 0, shown.stderr
    rows = [line.split(",") for line in out.read_text().splitlines() if not line.startswith("#")]
    header = rows[0]
    assert header[:3] == ["run", "t_s", "scheduled"] and "memory_current_bytes" in header
    assert all(len(row) == len(header) for row in rows)
    at = header.index("memory_current_bytes")
    assert {row[at] for row in rows[1:] if row[0] == "2"} == {""}
    assert all(row[at] != "" for row in rows[1:] if row[0] == "1")


@requires_cgroups
def test_run_repeat_exit_code_is_the_first_failure():
    p = edgeprof("run", "--repeat", "2", "--", "sh", "-c", "exit 3")
    assert p.returncode == 3
    assert "SOME FAILED" in p.stderr


@requires_cgroups
def test_a_progress_line_that_cannot_be_written_does_not_lose_the_comparison(tmp_path):
    # stderr on a full disk: the first progress line's ENOSPC ended compare, its table lost.
    out = tmp_path / "out.json"
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "edgeprof", "compare", "-w", "a=true", "-w",
                            "b=sh -c true", "--repeat", "1", "--device", "raspberry-pi-4b-1gb",
                            "--speed-kind", "integer", "--json", str(out)],
                           stdout=subprocess.DEVNULL, stderr=full, timeout=HANG_S,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"})
    # 0, or 1 where what it says on stderr at the end could not be said either; the
    # comparison stands.
    assert p.returncode in (0, 1)
    rows = json.loads(out.read_text())["rows"]
    assert sorted(r["workload"] for r in rows) == ["a", "b"]
    # The same for run's repeats: its first progress line ended the runs, the report lost.
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "edgeprof", "run", "--repeat", "2",
                            "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                            "--json", str(tmp_path / "run.json"), "--", "true"],
                           stdout=subprocess.DEVNULL, stderr=full, timeout=HANG_S,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"})
    assert p.returncode == 1  # its text report goes to stderr: it could not be written
    assert len(json.loads((tmp_path / "run.json").read_text())["runs"]) == 2


@requires_cgroups
def test_compare_takes_the_emulation_options_and_ranks_projected_times(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    p = edgeprof("compare", "-w", "a=true", "-w", "b=sh -c true", "--repeat", "1",
                 "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                 "--core-emulation", "projected", "--quiet", "--json", "-", env=env)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert sorted(r["workload"] for r in rows) == ["a", "b"]
    for r in rows:
        run = r["result"]["runs"][0]
        speedup = run["plan"]["threads_projection"]["speedup"]
        # Each run was one core of the four, its time divided by the board's speed-up, and
        # ranked on that projected figure (the default metric: the device's all-core time).
        cpus = run["plan"]["cpus"]
        assert run["plan"]["threads_projection"]["threads"] == 4 and cpus.isdigit()
        assert r["value"] == pytest.approx(run["wall_time_s"] / speedup, rel=1e-9)
        assert (r["value_provenance"], r["memory_provenance"]) == ("projected", "measured")
    pooled = edgeprof("compare", "-w", "a=true", "--repeat", "1", "--device",
                      "raspberry-pi-4b-1gb", "--speed-kind", "integer", "--quiet", "--json", "-")
    assert pooled.returncode == 0, pooled.stderr
    row = json.loads(pooled.stdout)["rows"][0]
    run = row["result"]["runs"][0]
    assert run["plan"].get("threads_projection") is None
    # Pooled, all four cores ran: the all-core time is the measured one.
    assert row["value"] == run["wall_time_s"] and row["value_provenance"] == "measured"
    assert run["provenance"]["all_cores_wall_time_s"] == "measured"


@requires_cgroups
def test_compare_ranks_commands_and_projects(tmp_path):
    data = tmp_path / "cal.csv"
    data.write_text("wall_time_s,device_wall_time_s\n0.01,0.021\n0.02,0.039\n0.04,0.081\n"
                    "0.08,0.16\n")
    fit = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                   "--device", "raspberry-pi-4", "--model", "linear", "-o",
                   str(tmp_path / "cal.json"))
    assert fit.returncode == 0, fit.stderr
    assert "leave-one-out" in fit.stdout and "[linear]" in fit.stdout
    workloads = tmp_path / "workloads.txt"
    workloads.write_text("# name: command\nquick: sleep 0.01\nslower: sleep 0.06\n")
    p = edgeprof("compare", "--file", str(workloads), "--repeat", "3", "--metric", "wall_time_s",
                 "--calibrations",
                 str(tmp_path / "cal.json"), "--json", str(tmp_path / "cmp.json"))
    assert p.returncode == 0, p.stderr
    assert "6/6" in p.stderr  # progress: a tqdm bar, or one line per run without tqdm
    rows = json.loads((tmp_path / "cmp.json").read_text())["rows"]
    # Best median first, in whichever order the timed runs came out (that is the machine's).
    # Three runs each cannot be told apart at 0.05 (the smallest Mann-Whitney p is 0.1): a tie,
    # whatever the timings. (Separating ranks: test_projection's rank tests, on numbers.)
    assert sorted(r["workload"] for r in rows) == ["quick", "slower"]
    assert rows[0]["value"] <= rows[1]["value"]
    assert [(r["rank"], r["tied"]) for r in rows] == [(1, True), (1, True)]
    by_name = {r["workload"]: r for r in rows}
    # The sleeps' lower bounds (load only adds time).
    assert by_name["quick"]["value"] >= 0.01 and by_name["slower"]["value"] >= 0.06
    lines = [line for line in p.stdout.splitlines() if "quick" in line or "slower" in line]
    assert [line.split()[:2] for line in lines] == [
        [f"{r['rank']}{'=' if r['tied'] else ''}", r["workload"]] for r in rows]
    # The projection is the calibration applied to the median run (3 runs: the median itself).
    import edgeprof as api
    [cal] = api.analysis.load_calibrations(tmp_path / "cal.json")
    for r in rows:
        assert r["projected"]["provenance"] == "projected"
        assert r["projected"]["estimate"] == pytest.approx(
            cal.projection.predict(r["value"]).estimate, rel=1e-9)

    run = edgeprof("run", "--json", str(tmp_path / "r.json"), "--", "sleep", "0.02")
    assert run.returncode == 0
    proj = edgeprof("project", str(tmp_path / "r.json"), "--calibrations",
                    str(tmp_path / "cal.json"), "--json")
    assert proj.returncode == 0, proj.stderr
    out = json.loads(proj.stdout)[0]
    assert out["target"] == "device_wall_time_s" and out["low"] < out["estimate"] < out["high"]
    assert out["feature_provenance"] == {"wall_time_s": "measured"}

    # A calibration that records its runs' core emulation refuses a report emulated otherwise
    # (a projected run's wall_time_s is one core's time).
    pooled = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                      "--device", "raspberry-pi-4b-1gb", "--model", "linear",
                      "--core-emulation", "pooled", "-o", str(tmp_path / "pooled.json"))
    assert pooled.returncode == 0, pooled.stderr
    printed = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                       "--device", "raspberry-pi-4b-1gb", "--core-emulation", "pooled", "--json")
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["calibrations"][0]["core_emulation"] == "pooled"
    one_core = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                        "--core-emulation", "projected", "--json", str(tmp_path / "p.json"),
                        "--", "sleep", "0.02")
    assert one_core.returncode == 0, one_core.stderr
    refused = edgeprof("project", str(tmp_path / "p.json"), "--calibrations",
                       str(tmp_path / "pooled.json"))
    assert refused.returncode == 2
    assert "core emulation pooled" in refused.stderr and "projected" in refused.stderr
    # A fit under another core emulation is added beside it, not over it, and project takes
    # the one the report's runs were emulated under.
    both = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                    "--device", "raspberry-pi-4b-1gb", "--model", "origin",
                    "--core-emulation", "projected", "-o", str(tmp_path / "pooled.json"))
    assert both.returncode == 0, both.stderr
    saved = edgeprof_api.analysis.load_calibrations(str(tmp_path / "pooled.json"))
    assert sorted(c.core_emulation for c in saved) == ["pooled", "projected"]
    taken = edgeprof("project", str(tmp_path / "p.json"), "--calibrations",
                     str(tmp_path / "pooled.json"), "--json")
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout)[0]["model"] == "origin"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["compare", "-w", "nocommand"], "NAME=COMMAND"),
        (["compare"], "no workloads"),
        (["compare", "-w", 'a=python3 -c "unterminated'], "close its quotes"),
        (["fit", "/no/such.csv", "--x", "a", "--y", "b", "--device", "lg-g6"], "/no/such.csv"),
        # A misspelled figure is refused before any run (it ranked every workload last, n/a).
        (["compare", "-w", "a=true", "--repeat", "1", "--metric", "nope"],
         "compare's metric 'nope' is not a figure"),
        # A command that is not there, or a device larger than the host, is refused before
        # any run (once found at its first run, after every pair before it, the table lost).
        (["compare", "-w", "a=true", "-w", "b=edgeprof-no-such-program", "--repeat", "1"],
         "cannot execute 'edgeprof-no-such-program': not found in PATH"),
        (["calibrate-speed", "-w", "a=true", "-m", "a=1", "--figure", "wal_time_s"],
         "figure 'wal_time_s' is not a figure"),
        # An empty value is refused, not read as the option left out (`--json ''` wrote
        # nothing, `--device ''` ran on the default device).
        (["run", "--json", "", "--", "true"], "argument --json: an empty value"),
        (["run", "--device", "", "--", "true"], "argument --device: an empty value"),
        (["compare", "-w", "a=true", "--device", ""], "argument --device: an empty value"),
        (["show", ""], "argument file: an empty value"),
    ],
)
def test_compare_and_fit_errors(args, fragment):
    p = edgeprof(*args)
    assert p.returncode == 2 and fragment in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "name, content, args, fragment",
    [
        # A binary file, a truncated report, a ragged or binary CSV: exit 2 with a message that
        # names the file, not a traceback (issue 36, item 8).
        ("r.json", bytes(range(256)), ["show"], "is not UTF-8 text (byte 0x80 at offset 128"),
        ("r.json", b'{"schema": "edgeprof.result", "wall', ["show"], "not a complete JSON report"),
        ("r.json", b'{"schema": "edgeprof.repeated", "ru', ["project", "--calibrations", "c.json"],
         "not a complete JSON report"),
        ("d.csv", b"a,b\n1,2\n3\n", ["fit", "--x", "a", "--y", "b", "--device", "lg-g6"],
         "line 3: 1 values where the header names 2 columns"),
        ("d.csv", b"a,b\n1,2,3\n", ["fit", "--x", "a", "--y", "b", "--device", "lg-g6"],
         "line 2: 3 values"),
        ("d.csv", b"a,b\n1,\xff\n", ["fit", "--x", "a", "--y", "b", "--device", "lg-g6"],
         "is not UTF-8 text (byte 0xff"),
    ],
    ids=["binary", "truncated", "truncated-repeated", "short-row", "long-row", "binary-csv"],
)
def test_a_bad_file_exits_2_naming_it(tmp_path, name, content, args, fragment):
    path = tmp_path / name
    path.write_bytes(content)
    p = edgeprof(args[0], str(path), *args[1:])
    assert p.returncode == 2 and fragment in p.stderr and str(path) in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("args, fragment", [
    # Out of the library's range: the bindings' "incompatible function arguments" traceback.
    (["run", "--cpu-period-us=-1", "--", "true"], "invalid number '-1'"),
    (["run", "--repeat", "99999999999999999999", "--", "true"], "invalid number"),
    (["run", "--threads", "99999999999999999999", "--", "true"], "invalid number"),
    (["compare", "-w", "a=true", "--warmup=-5"], "invalid number"),
    # Not a finite positive time: a ValueError from the bindings.
    (["run", "--iteration-time", "nan", "--", "true"], "invalid iteration time 'nan'"),
    # 0 and off read as the option left out (the period then --cpu-period-us's), silently.
    (["run", "--iteration-time", "0", "--", "true"], "invalid iteration time '0'"),
    (["compare", "-w", "a=true", "--iteration-time", "off"], "invalid iteration time 'off'"),
    (["run", "--iteration-time=-5ms", "--", "true"], "invalid iteration time '-5ms'"),
    (["run", "--timeout", "nan", "--", "true"], "invalid timeout 'nan'"),
    (["run", "--interval", "inf", "--", "true"], "invalid interval 'inf'"),
    (["run", "--interval=-1s", "--", "true"], "invalid interval"),
    (["run", "--interval", "nan", "--", "true"], "invalid interval"),
    # 0 passed and was refused by the library under its field's name ("cores = 0").
    (["run", "--cores", "0", "--speed", "1", "--memory", "1GiB", "--", "true"],
     "argument --cores: invalid number '0': give a whole number of at least 1"),
    (["run", "--threads", "0", "--", "true"], "argument --threads: invalid number '0'"),
    (["compare", "-w", "a=true", "--repeat", "0"], "argument --repeat: invalid number '0'"),
    # A percentage for a fraction was refused as the library's "confidence" / "rank.alpha".
    (["project", "r.json", "--calibrations", "c.json", "--confidence", "95"],
     "argument --confidence: invalid fraction '95': give a number between 0 and 1, e.g. 0.95 "
     "(0.95, not 95?)"),
    (["compare", "-w", "a=true", "--alpha", "5%"], "invalid fraction '5%': give a number "
     "between 0 and 1, e.g. 0.95 (0.05, not 5%?)"),
    (["compare", "-w", "a=true", "--alpha", "2"], "argument --alpha: invalid fraction '2'"),
    (["fit", "d.csv", "--x", "a", "--y", "b", "--ridge=-1"], "argument --ridge: invalid number"),
    (["run", "--speed-kind", "fast", "--", "true"], "invalid speed kind 'fast': give automatic"),
    # compare takes a workload's own memory term as run does (it had no such option).
    (["compare", "-w", "a=true", "--memory-mb-per-ms", "5"],
     "--memory-mb-per-ms 5 chooses a workload's own speed with a runtime other than ncnn"),
])
def test_numbers_out_of_range_are_refused_by_name(args, fragment):
    p = edgeprof(*args)
    assert p.returncode == 2 and fragment in p.stderr and "Traceback" not in p.stderr, p.stderr


@requires_cgroups
@pytest.mark.parametrize("repeat", [["--repeat", "1"], ["--repeat", "2"]], ids=["once", "twice"])
def test_an_argument_that_is_not_utf8_reaches_the_workload_as_given(tmp_path, repeat):
    # It was a TypeError ("incompatible function arguments"), and the run never started; the
    # report then could not be written (invalid UTF-8 in JSON).
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "edgeprof", "run", *repeat,
                        "--json", str(tmp_path / "r.json"), "--", "sh", "-c", 'printf %s "$1" > "$2"', "sh", b"a\xffb", str(out)],
                       capture_output=True, timeout=HANG_S)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    assert out.read_bytes() == b"a\xffb"
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["schema"] in ("edgeprof.result", "edgeprof.repeated")


@requires_cgroups
def test_a_result_gives_back_an_argument_that_is_not_utf8_as_os_fsdecode_does():
    device = edgeprof_api.Device(name="one-core", cores=1, core_speed=0.5, memory=1 << 30)
    r = edgeprof_api.run([b"/bin/true", b"a\xffb"], device=device, repeat=2, progress=False)
    assert r.runs[0].command[1] == os.fsdecode(b"a\xffb")  # a surrogate escape
    assert os.fsencode(r.runs[0].command[1]) == b"a\xffb"
    assert "a\\xFFb" in str(r)  # the text keeps it as an escape (as phase names have it)
    # A notebook's page too (its surrogate escape could not be encoded to send the page).
    page = r.runs[0]._repr_html_()
    assert "a\\xffb" in page and page.encode("utf-8")


PLAIN_DEVICE = ('{"edgeprof_device": 1, "name": "plain", "cores": 1, "core_speed": 0.5, '
                '"memory": "256MiB"}')


def _cli_bytes(*args, env=None):
    """The CLI with arguments given as bytes, its output as bytes (paths that are not UTF-8)."""
    return subprocess.run([sys.executable, "-m", "edgeprof", *args], capture_output=True,
                          timeout=HANG_S, env={**os.environ, **(env or {})})


def test_a_device_path_that_is_not_utf8_is_read(tmp_path):
    # A TypeError ("incompatible function arguments") before: find_device took UTF-8 only.
    directory = os.path.join(os.fsencode(tmp_path), b"dev\xffdir")
    os.mkdir(directory)
    path = os.path.join(directory, b"plain.json")
    with open(path, "w") as f:
        f.write(PLAIN_DEVICE)
    shown = _cli_bytes("devices", "show", path)
    assert shown.returncode == 0 and b"Traceback" not in shown.stderr, shown.stderr
    assert b"plain" in shown.stdout
    # The directory as EDGEPROF_DEVICE_PATH: listed with its origin (UnicodeDecodeError before),
    # printed as its own bytes.
    listed = _cli_bytes("devices", env={"EDGEPROF_DEVICE_PATH": directory})
    assert listed.returncode == 0 and b"Traceback" not in listed.stderr, listed.stderr
    assert b"plain" in listed.stdout
    found = edgeprof_api.find_device(os.fsdecode(path))
    assert found.name == "plain" and os.fsencode(found.origin) == path
    assert edgeprof_api.find_device(path.decode("utf-8", "surrogateescape")) == found


def test_a_cache_or_home_that_is_not_utf8_is_named_in_notes_not_raised(tmp_path):
    # The plan's notes and the device's sources name the cache file; their bytes raised
    # UnicodeDecodeError out of plan_emulation(), `devices show` and every run of a catalog
    # device. EDGEPROF_MEASURE_NN=0: nothing is measured.
    cache = os.path.join(os.fsencode(tmp_path), b"c\xffd")
    code = ("import edgeprof; d = edgeprof.find_device('raspberry-pi-4'); "
            "notes = edgeprof.plan_emulation(d).notes; "
            "print(len(notes), [s.source for s in d.sources.values()][:1])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=HANG_S,
                       env={**os.environ, "EDGEPROF_CACHE_DIR": cache, "EDGEPROF_MEASURE_NN": "0"})
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    shown = _cli_bytes("devices", "show", "raspberry-pi-4",
                       env={"EDGEPROF_CACHE_DIR": cache, "EDGEPROF_MEASURE_NN": "0"})
    assert shown.returncode == 0 and b"Traceback" not in shown.stderr, shown.stderr
    home = os.path.join(os.fsencode(tmp_path), b"h\xffome")
    env = {"HOME": home, "EDGEPROF_MEASURE_NN": "0"}
    listed = subprocess.run([sys.executable, "-m", "edgeprof", "devices"], capture_output=True,
                            timeout=HANG_S, env={k: v for k, v in {**os.environ, **env}.items()
                                              if k not in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                                           "EDGEPROF_CACHE_DIR",
                                                           "EDGEPROF_DEVICE_PATH")})
    assert listed.returncode == 0 and b"Traceback" not in listed.stderr, listed.stderr
    assert edgeprof_api.devices.device_search_path()  # a list of str, as ever


@requires_cgroups
def test_a_parent_cgroup_that_is_not_utf8_is_refused_by_name():
    # A RuntimeError ("Unable to cast Python instance of type str") before.
    p = _cli_bytes("run", "--cores", "1", "--speed", "1", "--memory", "256MiB",
                   "--parent", b"/edge\xffprof-no-such", "--", "true")
    assert p.returncode == 2 and b"Traceback" not in p.stderr, p.stderr
    assert b"edge\xffprof-no-such" in p.stderr or b"edge\\xffprof-no-such" in p.stderr


def test_a_wrong_device_type_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="device: expected a Device"):
        edgeprof_api.plan_emulation(5)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
@pytest.mark.parametrize("before, after", [(["show"], []),
                                           (["fit"], ["--x", "a", "--y", "b", "--device",
                                                      "lg-g6"]),
                                           (["devices", "show"], [])],
                         ids=["show", "fit", "devices-show"])
def test_a_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind, before, after):
    # A FIFO blocked the open for ever (until Ctrl-C, which then printed a traceback), and
    # /dev/zero grew until bad_alloc or the OOM killer.
    if kind == "fifo":
        path = tmp_path / "r.json"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path
    else:
        path = "/dev/zero"
    p = edgeprof(*before, str(path), *after)
    # A directory is called one (test_a_directory_given_as_an_input_file_is_called_one); a
    # device file's reader, in the library, says "not a regular file (a directory, ...)".
    said = ("is a directory" if kind == "directory" and before != ["devices", "show"]
            else "not a regular file")
    assert p.returncode != 0 and said in p.stderr, p.stderr
    assert str(path) in p.stderr and "Traceback" not in p.stderr


def test_a_directory_given_as_an_input_file_is_called_one(tmp_path):
    # "not a regular file (a directory, FIFO or device); give the file edgeprof wrote", of a
    # workload list the user wrote.
    for args, fragment in [
        (["compare", "--file", str(tmp_path)], f"--file {tmp_path} is a directory: give a file "
         "of workloads"),
        (["calibrate-speed", "--file", str(tmp_path), "-m", "a=1"],
         f"--file {tmp_path} is a directory"),
        (["compare", "-w", "a=true", "--calibrations", str(tmp_path)],
         f"--calibrations {tmp_path} is a directory: give the calibration file"),
        (["project", str(tmp_path), "--calibrations", "c.json"],
         f"{tmp_path} is a directory: give a JSON report's file"),
        (["fit", str(tmp_path), "--x", "a", "--y", "b", "--device", "lg-g6"],
         f"{tmp_path} is a directory: give the CSV file"),
    ]:
        p = edgeprof(*args)
        assert p.returncode == 2 and fragment in p.stderr, (args, p.stderr)
        assert "edgeprof wrote" not in p.stderr or "fit -o" in p.stderr


@requires_cgroups
def test_a_first_run_on_an_unmeasured_host_measures_its_nn_rating_and_says_so(tmp_path):
    # A stand-in for ncnn's runner (the real one takes about a minute): 10 ms per graph.
    import edgeprof as api
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\n" + "".join(
        f"echo '{g.name} 10 9 12'\n" for g in api.nn.reference_graphs()))
    fake.chmod(0o755)
    env = {"EDGEPROF_CACHE_DIR": str(tmp_path / "cache"), "EDGEPROF_MEASURE_NN": "1",
           "EDGEPROF_PYTHON": str(fake)}
    p = edgeprof("run", "--device", "raspberry-pi-zero-2w", "--threads", "1", "--", "true",
                 env_extra=env)
    assert p.returncode == 0, p.stderr
    assert "not measured yet: measuring it now" in p.stderr
    assert "nn speed" in p.stdout + p.stderr
    assert (tmp_path / "cache" / "host-nn.json").exists()
    # Once: the next run uses the cache.
    again = edgeprof("run", "--device", "raspberry-pi-zero-2w", "--threads", "1", "--", "true",
                     env_extra=env)
    assert again.returncode == 0 and "measuring it now" not in again.stderr
    # Without ncnn: the run fails and says what to do; nothing is cached.
    env_no = {**env, "EDGEPROF_CACHE_DIR": str(tmp_path / "none"),
              "EDGEPROF_PYTHON": str(tmp_path / "no-such-python")}
    bad = edgeprof("run", "--device", "raspberry-pi-zero-2w", "--threads", "1", "--", "true",
                   env_extra=env_no)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "pip install ncnn" in bad.stderr and "--speed-kind integer" in bad.stderr
    assert not (tmp_path / "none" / "host-nn.json").exists()


@requires_cgroups
def test_quota_scale_reaches_the_plan_and_bad_values_are_refused():
    p = edgeprof("run", "--device", "raspberry-pi-zero-2w", "--threads", "1", "--speed-kind",
                 "integer", "--quota-scale", "1.25", "--json", "--", "true")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)["plan"]
    assert plan["quota_scale"] == pytest.approx(1.25, rel=0.01)
    assert any("quota scale 1.25" in n for n in plan["notes"])
    for bad in ("9", "fast"):
        refused = edgeprof("run", "--device", "raspberry-pi-zero-2w", "--quota-scale", bad, "--",
                           "true")
        assert refused.returncode == 2 and "--quota-scale" in refused.stderr
        assert "Traceback" not in refused.stderr
    pi = edgeprof_api.find_device("raspberry-pi-zero-2w").for_threads(1)
    plan = edgeprof_api.plan_emulation(pi, speed_kind="integer", quota_scale=1.25)
    assert plan.quota_scale == pytest.approx(1.25, rel=0.01)
    with pytest.raises(edgeprof_api.Error, match="0.5 to 4"):
        edgeprof_api.plan_emulation(pi, quota_scale=5.0)


@requires_cgroups
def test_projected_core_emulation_runs_one_thread_and_projects_the_wall_time(tmp_path):
    out = tmp_path / "env.txt"
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    p = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                 "--core-emulation", "projected", "--json", "--", "sh", "-c",
                 f'echo "$OMP_NUM_THREADS" > {out}', env=env)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    projection = report["plan"]["threads_projection"]
    assert projection["threads"] == 4 and projection["speedup"] > 1
    assert report["projected_wall_time_s"] == pytest.approx(
        report["wall_time_s"] / projection["speedup"], rel=1e-9)
    assert report["provenance"]["projected_wall_time_s"] == "projected"
    assert report["all_cores_wall_time_s"] == report["projected_wall_time_s"]
    assert report["provenance"]["all_cores_wall_time_s"] == "projected"
    # One core ran, under the device's own name (a calibration is found by it).
    assert (report["device"]["name"], report["device"]["cores"]) == ("raspberry-pi-4b-1gb", 1)
    assert out.read_text().strip() == "1"
    plan = edgeprof_api.plan_emulation(edgeprof_api.find_device("raspberry-pi-4b-1gb"),
                                       speed_kind="integer", core_emulation="projected")
    assert len(plan.cpus) == 1 and plan.threads_projection.threads == 4
    assert plan.core_emulation == "projected"
    plain = edgeprof_api.Device(name="plain", cores=4, core_speed=0.25, memory="256MiB")
    with pytest.raises(edgeprof_api.Error, match="cannot be projected"):
        edgeprof_api.plan_emulation(plain, core_emulation="projected")


def test_a_workload_s_own_scaling_moves_the_projection_from_python_and_the_cli(tmp_path):
    # Issue 33: PlanOptions::workload_scaling could be set from C++ only.
    pi = edgeprof_api.find_device("raspberry-pi-4b-1gb")
    kw = dict(speed_kind="integer", core_emulation="projected")
    base = edgeprof_api.plan_emulation(pi, **kw)
    scaled = edgeprof_api.plan_emulation(pi, workload_scaling=1.5, **kw)
    assert base.threads_projection.workload_factor == 1.0
    assert scaled.threads_projection.workload_factor == 1.5
    assert scaled.threads_projection.speedup == pytest.approx(base.threads_projection.speedup * 1.5)
    assert any("follows the workload's own scaling" in n for n in scaled.notes)
    with pytest.raises(edgeprof_api.Error, match="workload_scaling = 3 is out of range"):
        edgeprof_api.plan_emulation(pi, workload_scaling=3, **kw)
    pooled = edgeprof_api.plan_emulation(pi, speed_kind="integer", core_emulation="pooled",
                                         workload_scaling=1.5)
    assert any(n.startswith("workload_scaling 1.5 not applied") for n in pooled.notes)
    # The factor from a host's scaling: a stand-in runner whose graphs run twice as fast with
    # two threads, so a workload that sped up 3x scales 1.5x as well as they do.
    fake = tmp_path / "python"
    lines = "".join(f'echo "{g.name} $ms $ms $ms"\n' for g in edgeprof_api.nn.reference_graphs())
    fake.write_text("#!/bin/sh\nms=10\ncase \"$*\" in *--threads=2*) ms=5;; esac\n"
                    "echo 'runtime ncnn 1.0.test (stand-in)'\n" + lines)
    fake.chmod(0o755)
    host = edgeprof_api.nn.measure_host_scaling(python=str(fake), rounds=1, warmup=0, loops=1)
    # The stand-in's figures arrive as reported: the binding converts, the C++ computes.
    assert host.threads == 2 and set(host.one_ms) == set(host.many_ms) and host.one_ms
    assert set(host.one_ms.values()) == {10.0} and set(host.many_ms.values()) == {5.0}
    m = host.median_speedup()
    assert edgeprof_api.nn.workload_scaling(host, 1.5 * m) == pytest.approx(1.5)
    assert edgeprof_api.nn.workload_scaling(host, 100.0 * m) == 2.0  # clamped
    with pytest.raises(edgeprof_api.Error):
        edgeprof_api.nn.workload_scaling(host, -1.0)
    # Another runtime's models, named by runtime=; two threads slower than one is refused.
    torch = tmp_path / "torch-python"
    torch.write_text("#!/bin/sh\nms=10\ncase \"$*\" in *--threads=2*) ms=12;; esac\n"
                     "echo 'runtime PyTorch 2.test (stand-in)'\n"
                     "for m in resnet18 vgg13; do echo \"$m $ms $ms $ms\"; done\n")
    torch.chmod(0o755)
    with pytest.raises(edgeprof_api.Error, match="ran slower than with one"):
        edgeprof_api.nn.measure_host_scaling(python=str(torch), runtime="pytorch",
                                             graphs=["resnet18", "vgg13"], rounds=1, warmup=0,
                                             loops=1)


@requires_cgroups
def test_the_command_line_takes_a_workload_s_own_scaling():
    p = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                 "--core-emulation", "projected", "--workload-scaling", "1.5", "--json", "--",
                 "true")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["plan"]["threads_projection"]["workload_factor"] == 1.5
    bad = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                   "--core-emulation", "projected", "--workload-scaling", "nan", "--", "true")
    assert bad.returncode == 2 and "workload_scaling" in bad.stderr, bad.stderr


@requires_cgroups
def test_projected_run_counts_the_threads_that_ran_at_once():
    # Three busy processes where one thread was meant to run (as a workload that sets its
    # thread count in code would start them): they share the one core, and the report says so.
    p = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                 "--core-emulation", "projected", "--json", "--", "sh", "-c",
                 "for i in 1 2 3; do timeout 1 sh -c 'while :; do :; done' & done; wait")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["threads_at_once"] >= 1.5
    assert report["provenance"]["threads_at_once"] == "sampled"
    assert any("threads were runnable at once" in w for w in report["warnings"]), report["warnings"]
    # A pooled run has no census.
    pooled = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                      "--core-emulation", "pooled", "--json", "--", "true")
    assert pooled.returncode == 0, pooled.stderr
    assert json.loads(pooled.stdout)["threads_at_once"] is None


def test_core_emulation_auto_says_which_it_chose():
    pi = edgeprof_api.find_device("raspberry-pi-4b-1gb")
    # At the integer speed its tables (CNN inference) do not apply: pooled, and said.
    plan = edgeprof_api.plan_emulation(pi, speed_kind="integer", core_emulation="auto")
    assert plan.threads_projection is None and plan.core_emulation == "pooled"
    assert any(n.startswith("core emulation auto: pooled (the device is not emulated at its nn")
               for n in plan.notes), plan.notes
    # auto is the default.
    assert edgeprof_api.plan_emulation(pi, speed_kind="integer").notes == plan.notes
    # (Where it is projected: the plan tests of tests/cpp/test_projected.cpp, on a device at
    # its nn speed whatever this host has rated.)
    refused = edgeprof("run", "--device", "raspberry-pi-4b-1gb", "--core-emulation", "spread",
                       "--", "true")
    assert refused.returncode == 2 and "auto" in refused.stderr


@requires_cgroups
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_kill_the_workload_remove_the_slice_and_exit_128_plus(tmp_path,
                                                                                 signum):
    """SIGTERM (systemd, Kubernetes, Slurm, timeout(1)) and SIGHUP (a closed terminal or ssh
    session) are handled as Ctrl-C is: once the CLI died with -15 (-1) and left its slice for a
    later run to sweep."""
    pidfile = tmp_path / "pid"
    workload = (f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                "print('started', flush=True); time.sleep(600)")
    # The signal's default action, as a terminal's session has it (under nohup, as CI may run,
    # SIGHUP is ignored, and the CLI leaves it so).
    proc = subprocess.Popen([sys.executable, "-m", "edgeprof", "run", "--cores", "1", "--speed",
                             "0.5", "--memory", "256MiB", "--", sys.executable, "-c", workload],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
    assert ready and proc.stdout.readline() == "started\n", "the workload never started"
    child = int(pidfile.read_text())
    assert our_slices(proc.pid)  # the slice exists while the workload runs
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 128 + signum, err
    assert f"terminated ({signal.Signals(signum).name})" in err
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert our_slices(proc.pid) == []


@requires_cgroups
def test_a_hangup_leaves_a_callers_sigterm_handler_and_exits_129_without_a_terminal(tmp_path):
    """The handler of one ending signal ignored both, and main() gave back only the ones it
    had taken over: a caller's SIGTERM handler was left ignored after a SIGHUP. And after a
    real hangup the last message's print raised (EIO; EPIPE here), exit 1 instead of 129."""
    workload = "import time; print('started', flush=True); time.sleep(600)"
    script = (
        "import signal, sys\n"
        "from edgeprof import cli\n"
        "def mine(signum, frame): pass\n"
        "signal.signal(signal.SIGTERM, mine)\n"
        "signal.signal(signal.SIGHUP, signal.SIG_DFL)\n"
        "code = cli.main(['run', '--cores', '1', '--speed', '0.5', '--memory', '256MiB', '--',"
        f" sys.executable, '-c', {workload!r}])\n"
        "kept = signal.getsignal(signal.SIGTERM) is mine\n"
        f"open({str(tmp_path / 'out')!r}, 'w').write(f'{{code}} {{kept}}')\n"
        "sys.exit(code)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
    assert ready and proc.stdout.readline() == "started\n", "the workload never started"
    proc.stderr.close()  # the terminal is gone
    proc.send_signal(signal.SIGHUP)
    code = proc.wait(timeout=HANG_S)
    proc.stdout.close()
    assert code == 129
    assert (tmp_path / "out").read_text() == "129 True"
    assert our_slices(proc.pid) == []


def test_a_write_failing_after_a_hangup_still_exits_with_the_signals_code(tmp_path):
    """A progress bar's last write (compare's `finally`) to a pipe or terminal that had gone
    away replaced the SIGHUP being handled: exit 141 (or 120 at the flush) instead of 129."""
    script = (
        "import errno, signal, sys\n"
        "from edgeprof import cli\n"
        "def ended(args):\n"
        "    try:\n"
        "        raise cli._Terminated(signal.SIGHUP)\n"
        "    finally:\n"
        "        raise BrokenPipeError(errno.EPIPE, 'Broken pipe')\n"
        "def io_error(args):\n"
        "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "def eio(args):\n"
        "    raise OSError(errno.EIO, 'Input/output error', '/mnt/nfs/cal.json')\n"
        "cli._runtime_and_speed_kind = lambda args: None\n"
        "parser = cli.build_parser()\n"
        "args = parser.parse_args(['devices'])\n"
        "args.func = {'ended': ended, 'eio': eio}.get(sys.argv[1], io_error)\n"
        "cli.build_parser = lambda: type('P', (), {'parse_args': lambda self, argv: args})()\n"
        f"open({str(tmp_path / 'out')!r}, 'w').write(str(cli.main([])))\n")
    done = subprocess.run([sys.executable, "-c", script, "ended"], capture_output=True,
                          text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out").read_text() == "129"
    # A full disk (`> /dev/full`) is said, exit 1: no traceback.
    other = subprocess.run([sys.executable, "-c", script, "other"], capture_output=True,
                           text=True, timeout=HANG_S)
    assert other.returncode == 0 and (tmp_path / "out").read_text() == "1"
    assert "cannot write the output: No space left on device" in other.stderr
    assert "Traceback" not in other.stderr
    # And a real one: what stdout holds is written before exit, where it can be handled (at
    # exit it was "Exception ignored", exit 120).
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "edgeprof", "devices"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=HANG_S)
    assert done.returncode == 1, done.stderr
    assert "cannot write the output: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    # stderr full, stdout not: stdout's report is kept (not pointed at /dev/null with it).
    report = tmp_path / "r.json"
    report.write_text(captured_report_text())
    with open("/dev/full", "w") as full, open(tmp_path / "out.csv", "w") as out:
        done = subprocess.run([sys.executable, "-m", "edgeprof", "show", str(report), "--csv",
                               "-"], stdout=out, stderr=full, timeout=HANG_S,
                              env={k: v for k, v in os.environ.items()
                                   if k != "PYTHONUNBUFFERED"})
    assert done.returncode == 1
    assert (tmp_path / "out.csv").read_text().startswith("# edgeprof.series")
    # EIO of a file (a disk, NFS) is said, not taken for a terminal gone (it was silent).
    eio = subprocess.run([sys.executable, "-c", script, "eio"], capture_output=True, text=True,
                         timeout=HANG_S)
    assert eio.returncode == 0, eio.stderr
    assert (tmp_path / "out").read_text() == "1"
    assert "Input/output error: '/mnt/nfs/cal.json'" in eio.stderr


@pytest.mark.parametrize("args, fragment", [
    # A figure or a name given twice: the first was dropped without a word.
    (["-w", "a=true", "-m", "a=0.8", "-m", "a=0.9"], "--measured 'a' given twice (0.8 and 0.9)"),
    (["-w", "a=true", "-w", "a=false", "-m", "a=0.8"], "two workloads are named 'a'"),
    # Periods that are none: inf and 1e300 raised OverflowError and pybind11's dump, -5 the
    # dump, 0.0001 rounded to 0 and ran at the plan's period.
    (["-w", "a=true", "-m", "a=1", "--periods-ms", "inf"], "'inf' is not a CFS period"),
    (["-w", "a=true", "-m", "a=1", "--periods-ms", "1e300"], "'1e300' is not a CFS period"),
    (["-w", "a=true", "-m", "a=1", "--periods-ms=-5"], "'-5' is not a CFS period"),
    (["-w", "a=true", "-m", "a=1", "--periods-ms", "10,0.0001"], "'0.0001' is not a CFS period"),
    (["-w", "a=true", "-m", "a=inf"], "--measured 'a=inf'"),
], ids=["measured-twice", "name-twice", "inf", "huge", "negative", "rounds-to-0", "inf-figure"])
def test_calibrate_speed_refuses_before_any_run(args, fragment):
    p = edgeprof("calibrate-speed", "--device", "raspberry-pi-4b-1gb", "--repeat", "1", *args)
    assert p.returncode == 2 and fragment in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "[1/" not in p.stderr  # no run began


def test_fit_refuses_a_header_naming_a_column_twice_and_writes_only_files(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("wall_time_s,y,wall_time_s\n1,2,10\n2,4,30\n3,6,20\n4,8,50\n")
    p = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "y", "--device", "lg-g6")
    assert p.returncode == 2 and "names 'wall_time_s' more than once" in p.stderr, p.stderr
    data.write_text("wall_time_s,y,,\n1,2,,\n2,4,,\n3,6,,\n")  # columns it does not use may repeat
    assert edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "y", "--device", "lg-g6").returncode == 0
    data.write_text("\ufeffwall_time_s,y\n1,2\n2,4\n3,6\n", encoding="utf-8")  # Excel's "CSV UTF-8"
    p = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "y", "--device", "lg-g6", "--json")
    assert p.returncode == 0, p.stderr  # was: "has no column x; its columns: \ufeffx, y"
    p = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "y", "--device", "lg-g6", "-o", "-")
    assert p.returncode == 2 and "--json prints" in p.stderr and not (Path.cwd() / "-").exists()
    p = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "y", "--device", "lg-g6",
                 "-o", str(tmp_path / "no" / "cal.json"))
    assert p.returncode == 2 and "does not exist" in p.stderr, p.stderr  # before the fit
    assert "Traceback" not in p.stderr
    # The library's own: an edgeprof.Error naming the file (was FileNotFoundError).
    fit = edgeprof_api.analysis.Projection.fit([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])
    calibration = edgeprof_api.analysis.Calibration("d", fit)
    with pytest.raises(edgeprof_api.Error, match="cannot write calibrations to .*errno 2"):
        edgeprof_api.analysis.save_calibrations(tmp_path / "no" / "cal.json", [calibration])


def test_a_failed_save_leaves_the_calibration_file_whole(tmp_path):
    """Written in place, a full disk (here: a file size limit) mid-write left the file of
    every earlier calibration truncated."""
    path = tmp_path / "cal.json"
    code = textwrap.dedent(f"""
        import resource, signal, edgeprof
        api = edgeprof.analysis
        fit = api.Projection.fit([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])
        api.save_calibrations({str(path)!r}, [api.Calibration("old", fit)])
        before = open({str(path)!r}).read()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
        try:
            api.save_calibrations({str(path)!r}, [api.Calibration(f"d{{i}}", fit)
                                                  for i in range(50)])
            print("saved")
        except edgeprof.Error as e:
            print("refused", "errno 27" in str(e))
        print("same", open({str(path)!r}).read() == before)
        print([c.device for c in api.load_calibrations({str(path)!r})])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["refused True", "same True", "['old']"], out.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]  # no part file left
    with pytest.raises(edgeprof_api.Error, match="a directory"):
        edgeprof_api.analysis.save_calibrations(tmp_path, [])


def test_save_calibrations_writes_what_the_user_may_write(tmp_path):
    """Written beside and renamed, a read-only file was replaced, a writable file in a folder
    the user may not create files in was refused, /dev/stdout was refused (then, as a file,
    renamed over: what the program printed before went with the old file), a FIFO was refused
    and a long name failed (its part file's name passed NAME_MAX)."""
    import threading

    api = edgeprof_api.analysis
    fit = api.Projection.fit([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])
    long = tmp_path / ("c" * 250 + ".json")
    api.save_calibrations(os.fsencode(long), [api.Calibration("d", fit)])  # bytes too
    assert [c.device for c in api.load_calibrations(long)] == ["d"]
    long.chmod(0o640)
    api.save_calibrations(long, [api.Calibration("e", fit)])
    assert long.stat().st_mode & 0o777 == 0o640  # its mode kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [long.name]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    api.save_calibrations(fifo, [api.Calibration("through-a-pipe", fit)])
    reader.join(HANG_S)
    assert '"through-a-pipe"' in got[0]
    fifo.unlink()
    code = textwrap.dedent("""
        import edgeprof
        api = edgeprof.analysis
        fit = api.Projection.fit([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])
        print("before", flush=True)
        api.save_calibrations("/dev/stdout", [api.Calibration("on-stdout", fit)])
        print("after")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_S)
    assert out.returncode == 0 and '"on-stdout"' in out.stdout, out.stderr
    log = tmp_path / "log"
    log.write_text("earlier\n")
    with open(log, "a") as appended:
        out = subprocess.run([sys.executable, "-c", code], stdout=appended, stderr=subprocess.PIPE,
                             text=True, timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    lines = log.read_text().splitlines()
    assert lines[:2] == ["earlier", "before"] and lines[-1] == "after", lines
    assert any('"on-stdout"' in line for line in lines)
    log.unlink()

    read_only = tmp_path / "read-only.json"
    read_only.write_text("[]\n")
    read_only.chmod(0o444)
    folder = tmp_path / "locked"
    folder.mkdir()
    in_locked = folder / "cal.json"
    in_locked.write_text("[]\n")
    folder.chmod(0o555)
    code = textwrap.dedent(f"""
        import edgeprof
        caps = int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16)
        assert not caps & 2, "CAP_DAC_OVERRIDE kept: this user may write anything"
        api = edgeprof.analysis
        fit = api.Projection.fit([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])
        try:
            api.save_calibrations({str(read_only)!r}, [api.Calibration("d", fit)])
            print("replaced")
        except edgeprof.Error as e:
            print("refused", "errno 13" in str(e))
        api.save_calibrations({str(in_locked)!r}, [api.Calibration("in-place", fit)])
        print([c.device for c in api.load_calibrations({str(in_locked)!r})])
    """)
    # As a user who may not write them: root without CAP_DAC_OVERRIDE (it may write anything).
    drop = ["setpriv", "--inh-caps", "-dac_override,-dac_read_search", "--bounding-set",
            "-dac_override,-dac_read_search"]
    try:
        if os.geteuid() != 0:
            drop = []
        elif not shutil.which("setpriv") or subprocess.run(
                drop + ["true"], capture_output=True, timeout=HANG_S).returncode != 0:
            pytest.skip("as root, needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
        out = subprocess.run(drop + [sys.executable, "-c", code], capture_output=True,
                             text=True, timeout=HANG_S)
    finally:
        folder.chmod(0o755)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["refused True", "['in-place']"], out.stdout
    assert read_only.read_text() == "[]\n"


@requires_cgroups
def test_compare_json_has_null_for_a_failed_row(tmp_path):
    """A failed row's figures are NaN in the core: written as the bare NaN that strict JSON
    parsers refuse."""
    p = edgeprof("compare", "-w", "good=true", "-w", "bad=false", "--repeat", "1", "--quiet",
                 "--device", "raspberry-pi-4b-1gb", "--speed-kind", "integer",
                 "--json", str(tmp_path / "c.json"))
    assert p.returncode == 1, p.stderr

    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the JSON")

    rows = json.loads((tmp_path / "c.json").read_text(), parse_constant=refuse)["rows"]
    by_name = {r["workload"]: r for r in rows}
    assert by_name["bad"]["value"] is None and by_name["bad"]["memory"] is None
    assert by_name["good"]["value"] > 0
    # Not ranked: no rank (it was last, and 1 where nothing on the device succeeded).
    assert by_name["bad"]["rank"] is None and by_name["good"]["rank"] == 1


def test_outputs_are_checked_before_any_run(tmp_path):
    """A report that could not be written was lost after the run (the summary and the
    workload's exit code with it); two outputs on stdout mixed; an output over the file read
    destroyed it."""
    report = tmp_path / "r.json"
    report.write_text(captured_report_text())
    for args, fragment in [
        (["run", "--json", str(tmp_path / "no" / "r.json"), "--", "true"],
         f"the directory {tmp_path / 'no'} does not exist"),
        (["run", "--json", str(tmp_path), "--", "true"], "is a directory"),
        (["run", "--json", "-", "--csv", "-", "--", "true"], "--json and --csv both write to stdout"),
        (["run", "--json", "/dev/stdout", "--csv", "-", "--", "true"],
         "--json and --csv both write to stdout"),  # mixed on stdout
        (["run", "--json", str(tmp_path / "x"), "--csv", str(tmp_path / "x"), "--", "true"],
         "is the same file as --json"),
        (["show", str(report), "--csv", str(report)], f"is the same file as input {report}"),
        (["compare", "-w", "a=true", "--json", str(tmp_path / "no" / "c.json")],
         "does not exist"),
        (["calibrate-speed", "--device", "raspberry-pi-4b-1gb", "-w", "a=true", "-m", "a=1",
          "--save", "-", "--json", "-"], "both write to stdout"),
        # Inputs given by an option were not checked: the output replaced them.
        (["compare", "-w", "a=true", "--calibrations", str(report), "--json", str(report)],
         f"--json {report} is the same file as --calibrations {report}"),
        (["compare", "--file", str(report), "--json", str(report)],
         f"--json {report} is the same file as --file {report}"),
        (["calibrate-speed", "--device", "raspberry-pi-4b-1gb", "--file", str(report),
          "-m", "a=1", "--save", str(report)], f"--save {report} is the same file as --file"),
    ]:
        p = edgeprof(*args)
        assert p.returncode == 2 and fragment in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr
    # A file that is not regular (/dev/null twice) is no clash.
    from edgeprof import cli
    cli._check_outputs({"--json": "/dev/null", "--csv": "/dev/null"})
    assert json.loads(report.read_text())["schema"] == "edgeprof.result"  # not overwritten


def test_options_that_would_be_ignored_are_refused(tmp_path):
    for args, fragment in [
        # --swap without a custom device: the named device ran without it, silently.
        (["run", "--swap", "1GiB", "--", "true"], "--swap is part of a custom device"),
        (["calibrate-host", "--python", "/nonexistent/python"], "--python names the interpreter"),
        (["fit", "-", "--x", "cpu_time_s", "--y", "b", "--device", "lg-g6", "--model", "linear",
          "--ridge", "5"], "applies to model 'multi' only"),
        # A feature project() could never read from a run.
        (["fit", "-", "--x", "cpu_seconds", "--y", "b", "--device", "lg-g6"],
         "--x 'cpu_seconds' is not a figure edgeprof measures"),
    ]:
        if args[0] == "fit":
            data = tmp_path / "d.csv"
            data.write_text("cpu_time_s,cpu_seconds,b\n1,1,2\n2,2,4\n3,3,6.5\n4,4,8\n")
            args[1] = str(data)
        p = edgeprof(*args)
        assert p.returncode == 2 and fragment in p.stderr, (args, p.stderr)


def test_a_workload_option_splits_at_its_first_equals_sign_only(tmp_path, monkeypatch):
    """-w mobilenet:v2=CMD was split at the ':' (name 'mobilenet', command 'v2=CMD'); a --file
    line still takes either separator."""
    from edgeprof import cli
    listed = tmp_path / "w.txt"
    listed.write_text("b: sleep 0\n# only this\n")
    args = cli.build_parser().parse_args(["compare", "-w", "mobilenet:v2=true --x",
                                          "--file", str(listed)])
    assert cli._workloads(args) == [("mobilenet:v2", "true --x"), ("b", "sleep 0")]
    listed.write_text("# nothing\n")
    p = edgeprof("compare", "--file", str(listed))
    assert p.returncode == 2 and f"no workloads in {listed}" in p.stderr


def test_a_report_that_cannot_be_read_is_named(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("   \n")
    calibrations = tmp_path / "cal.json"
    calibrations.write_text('{"schema": "edgeprof.calibrations"}')
    report = tmp_path / "r.json"
    report.write_text(captured_report_text())
    p = edgeprof("show", str(empty))
    assert p.returncode == 2 and f"{empty}: " in p.stderr, p.stderr
    p = edgeprof("project", str(report), "--calibrations", str(calibrations))
    assert p.returncode == 2 and f"{calibrations}: " in p.stderr, p.stderr


def test_project_takes_the_targets_that_apply_and_fit_replaces_an_alias_entry(tmp_path):
    """A target calibrated for one family only made `project` without --target fail for every
    target; a calibration saved under an alias was neither found by project's target list nor
    replaced by a new fit (which project and compare then never used)."""
    api = edgeprof_api.analysis
    report = tmp_path / "r.json"
    report.write_text(captured_report_text())  # a run on the device "custom"
    wall = api.Projection.fit([0.01, 0.02, 0.04, 0.08], [0.021, 0.039, 0.081, 0.16],
                              model="linear", features=["wall_time_s"],
                              target="device_wall_time_s")
    memory = api.Projection.fit([1e8, 2e8, 4e8], [1.1e8, 2.3e8, 4.2e8], model="linear",
                                features=["peak_memory_bytes"],
                                target="device_peak_memory_bytes")
    cal = tmp_path / "cal.json"
    api.save_calibrations(cal, [api.Calibration("custom", wall),
                                api.Calibration("custom", memory, family="mobilenet")])
    p = edgeprof("project", str(report), "--calibrations", str(cal), "--json")
    assert p.returncode == 0, p.stderr
    assert {o["target"] for o in json.loads(p.stdout)} == {"device_wall_time_s"}
    p = edgeprof("project", str(report), "--calibrations", str(cal), "--family", "mobilenet",
                 "--json")
    assert p.returncode == 0, p.stderr
    assert {o["target"] for o in json.loads(p.stdout)} == {"device_wall_time_s",
                                                           "device_peak_memory_bytes"}
    p = edgeprof("project", str(report), "--calibrations", str(cal), "--target",
                 "device_peak_memory_bytes")
    assert p.returncode == 2
    assert ("has no calibration of 'device_peak_memory_bytes' for device 'custom'; it has: "
            "device_peak_memory_bytes for custom (family mobilenet); device_wall_time_s for "
            "custom (a family's is used with --family FAMILY)") in p.stderr, p.stderr

    # An entry saved under an alias is the device's: a new fit replaces it.
    aliased = tmp_path / "aliased.json"
    api.save_calibrations(aliased, [api.Calibration("raspberry-pi-4", wall)])
    data = tmp_path / "cal.csv"
    data.write_text("wall_time_s,device_wall_time_s\n0.01,0.03\n0.02,0.06\n0.04,0.12\n")
    fit = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                   "--device", "raspberry-pi-4", "--model", "origin", "-o", str(aliased))
    assert fit.returncode == 0, fit.stderr
    [kept] = api.load_calibrations(aliased)
    assert kept.device == "raspberry-pi-4b-4gb" and kept.projection.model == "origin"


def test_figures_writes_reports_as_the_csv_fit_reads(tmp_path):
    """Saved reports became fit's CSV by hand: `figures` writes a row per report, a repeated
    report's medians, and a typo or a failed run is refused naming it."""
    run = json.loads(captured_report_text())
    one = tmp_path / "one.json"
    one.write_text(captured_report_text())
    slower = {**run, "wall_time_s": run["wall_time_s"] * 3}
    repeated = tmp_path / "rep.json"
    repeated.write_text(json.dumps({"schema": "edgeprof.repeated",
                                    "schema_version": run["schema_version"],
                                    "runs": [run, slower, slower], "warmups": [], "stats": {}}))
    two = tmp_path / "two.json"
    two.write_text(json.dumps({**run, "wall_time_s": run["wall_time_s"] * 2}))
    p = edgeprof("figures", str(one), str(repeated), str(two), "--figure", "wall_time_s",
                 "--figure", "phase.infer.wall_time_s")
    assert p.returncode == 0, p.stderr
    import csv
    rows = list(csv.DictReader(p.stdout.splitlines()))
    assert [r["report"] for r in rows] == [str(one), str(repeated), str(two)]
    assert [r["runs"] for r in rows] == ["1", "3", "1"]
    assert {r["core_emulation"] for r in rows} == {"pooled"} and "warning" not in p.stderr
    assert rows[0]["device"] == run["device"]["name"]
    assert float(rows[0]["wall_time_s"]) == run["wall_time_s"]
    assert float(rows[1]["wall_time_s"]) == pytest.approx(3 * run["wall_time_s"])  # the median
    assert float(rows[1]["phase.infer.wall_time_s"]) == pytest.approx(
        float(rows[0]["phase.infer.wall_time_s"]))
    # Its output is fit's input once the device's column is added.
    lines = p.stdout.splitlines()
    data = tmp_path / "cal.csv"
    data.write_text("\n".join([lines[0] + ",device_wall_time_s"] + [
        f"{line},{float(r['wall_time_s']) * 2.1}" for line, r in zip(lines[1:], rows)]) + "\n")
    fit = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                   "--device", "custom", "--model", "origin", "-o", str(tmp_path / "cal.json"))
    assert fit.returncode == 0, fit.stderr
    [cal] = edgeprof_api.analysis.load_calibrations(tmp_path / "cal.json")
    assert cal.projection.coefficients == pytest.approx([2.1])
    # The CSV's core emulation is the fit's (it recorded none, and project applied it to runs
    # of any core emulation); rows of two, or a column the option contradicts, are refused.
    assert cal.core_emulation == "pooled"
    text = data.read_text().splitlines()
    mixed_rows = tmp_path / "mixed.csv"
    mixed_rows.write_text("\n".join(text[:3] + [text[3].replace(",pooled,", ",projected,")])
                          + "\n")
    fit_args = ["--x", "wall_time_s", "--y", "device_wall_time_s", "--device", "custom",
                "--model", "origin"]
    two = edgeprof("fit", str(mixed_rows), *fit_args, "--json")
    assert two.returncode == 2 and "core emulations pooled, projected" in two.stderr, two.stderr
    other = edgeprof("fit", str(data), *fit_args, "--core-emulation", "projected", "--json")
    assert other.returncode == 2 and "core_emulation column says pooled" in other.stderr
    # Refitted, a file's calibration that recorded no core emulation (the same CSV fitted
    # before) is replaced: find_calibration took it before the new one for projected runs.
    table = list(csv.reader(data.read_text().splitlines()))
    at = table[0].index("core_emulation")
    bare = tmp_path / "bare.csv"
    with bare.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(r[:at] + r[at + 1:] for r in table)
    both = tmp_path / "both.json"
    assert edgeprof("fit", str(bare), *fit_args, "-o", str(both)).returncode == 0
    assert [c.core_emulation for c in edgeprof_api.analysis.load_calibrations(both)] == [""]
    refit = edgeprof("fit", str(data), *fit_args, "-o", str(both))
    assert refit.returncode == 0 and "recorded no core emulation" in refit.stderr, refit.stderr
    assert [c.core_emulation for c in edgeprof_api.analysis.load_calibrations(both)] == ["pooled"]
    default = edgeprof("figures", str(one), "--csv", str(tmp_path / "f.csv"))
    assert default.returncode == 0, default.stderr
    assert (tmp_path / "f.csv").read_text().splitlines()[0] == (
        "report,device,core_emulation,runs,wall_time_s,all_cores_wall_time_s,cpu_user_s,"
        "peak_memory_bytes")
    # Reports of two devices: a warning (one fit per device and core emulation).
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**run, "device": {**run["device"], "name": "other-board"}}))
    mixed = edgeprof("figures", str(one), str(other))
    assert mixed.returncode == 0, mixed.stderr
    assert "warning: the reports are of several devices" in mixed.stderr
    assert "other-board (pooled)" in mixed.stderr
    # A default figure a report lacks is an empty cell (fit reads only its --x columns); one
    # asked for is refused, as is one that is not finite.
    no_peak = tmp_path / "no-peak.json"
    no_peak.write_text(json.dumps({**run, "peak_memory_bytes": None}))
    empty = edgeprof("figures", str(no_peak))
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.splitlines()[1].endswith(",")
    asked = edgeprof("figures", str(no_peak), "--figure", "peak_memory_bytes")
    assert asked.returncode == 2 and f"{no_peak}: " in asked.stderr
    # A repeated report one of whose runs lacks it: said so, with what to do.
    partly = tmp_path / "partly.json"
    partly.write_text(json.dumps({"schema": "edgeprof.repeated",
                                  "schema_version": run["schema_version"],
                                  "runs": [run, {**run, "peak_memory_bytes": None}],
                                  "warmups": [], "stats": {}}))
    lacking = edgeprof("figures", str(partly), "--figure", "peak_memory_bytes")
    assert lacking.returncode == 2
    assert (f"{partly}: no figure peak_memory_bytes in every one of its runs" in lacking.stderr
            and "wall_time_s" in lacking.stderr and "leave --figure peak_memory_bytes out"
            in lacking.stderr), lacking.stderr
    typo = edgeprof("figures", str(one), "--figure", "wal_time_s")
    assert typo.returncode == 2 and "'wal_time_s' is not a figure" in typo.stderr
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({**run, "exit_code": 1, "ok": False}))
    bad = edgeprof("figures", str(one), str(failed))
    assert bad.returncode == 2 and f"{failed}: 1 of its 1 run(s) failed" in bad.stderr
    assert "Traceback" not in typo.stderr + bad.stderr + lacking.stderr


def test_compare_target_needs_calibrations_that_have_it(tmp_path):
    """--target without --calibrations was dropped, and a target no calibration has gave n/a
    in every row: both after every run."""
    data = tmp_path / "cal.csv"
    data.write_text("wall_time_s,device_wall_time_s\n0.01,0.021\n0.02,0.039\n0.04,0.081\n")
    cal = tmp_path / "cal.json"
    fit = edgeprof("fit", str(data), "--x", "wall_time_s", "--y", "device_wall_time_s",
                   "--device", "raspberry-pi-4b-1gb", "--model", "linear", "-o", str(cal))
    assert fit.returncode == 0, fit.stderr
    empty = tmp_path / "empty.json"
    empty.write_text(edgeprof_api.analysis.calibrations_to_json([]))
    for args, fragment in [
        (["--target", "device_wall_time_s"],
         "--target device_wall_time_s is the calibrated figure to project: add --calibrations"),
        (["--calibrations", str(cal), "--target", "devce_wall_time_s"],
         f"--calibrations {cal} has no calibration of --target devce_wall_time_s; its targets: "
         "device_wall_time_s: give one of them with --target"),
        (["--calibrations", str(empty)], "of the default --target, device_wall_time_s; its "
         "targets: none"),
    ]:
        p = edgeprof("compare", "-w", "a=true", "--repeat", "1", *args)
        assert p.returncode == 2 and fragment in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr and "1/1" not in p.stderr  # no run began


def test_fit_refuses_what_no_calibration_could_use_and_names_a_bad_cells_line(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("wall_time_s,device_wall_time_s\n0.01,0.021\n0.02,0.039\n0.04,0.081\n")
    fit = ("fit", str(data), "--x", "wall_time_s")
    for args, fragment in [
        # Fitted as y = 1 * y + 0.
        (["--y", "wall_time_s", "--device", "lg-g6"], "--y wall_time_s is also an --x"),
        (["--x", "wall_time_s", "--y", "device_wall_time_s", "--device", "lg-g6"],
         "--x wall_time_s given more than once"),
    ]:
        p = edgeprof(*fit, *args)
        assert p.returncode == 2 and fragment in p.stderr, (args, p.stderr)
    # The fit's own message counted points from 0 ("device figure 1 is nan"), and a blank cell
    # was "could not convert string to float: ''": lines of the file, its header line 1, a
    # blank line counted.
    for rows, fragment in [
        ("0.01,0.021\n0.02,nan\n0.04,0.081\n",
         "line 3, column device_wall_time_s: nan is not a finite number"),
        ("0.01,0.021\n\n0.02,\n0.04,0.081\n", "line 4, column device_wall_time_s is empty"),
        ("0.01,0.021\n0.02,abc\n0.04,0.081\n", "line 3, column device_wall_time_s: 'abc' is not"),
        ("inf,0.021\n0.02,0.039\n0.04,0.081\n", "line 2, column wall_time_s: inf is not"),
        ("0.01,0.021\n0.02,0\n0.04,0.081\n", "line 3, column device_wall_time_s is 0: a device "
         "figure (--y), a time or a size, is positive"),
        ("0.01,0.021\n-0.02,0.039\n0.04,0.081\n", "line 3, column wall_time_s is -0.02"),
    ]:
        data.write_text("wall_time_s,device_wall_time_s\n" + rows)
        p = edgeprof(*fit, "--y", "device_wall_time_s", "--device", "lg-g6")
        assert p.returncode == 2 and f"{data}, {fragment}" in p.stderr, (rows, p.stderr)
        assert "Traceback" not in p.stderr


def test_a_timeout_takes_a_unit_as_the_interval_does():
    # `--timeout 60s` was refused ("invalid timeout"), though --interval 0.5s is taken.
    from edgeprof import cli
    parser = cli.build_parser()
    for text, seconds in [("60", 60.0), ("60s", 60.0), ("500ms", 0.5), ("inf", float("inf"))]:
        args = parser.parse_args(["run", "--timeout", text, "--", "true"])
        assert args.timeout == seconds, text
    assert parser.parse_args(["run", "--speed-kind", "auto", "--", "true"]).speed_kind \
        == "automatic"


def test_every_command_says_what_it_does_and_shows_its_own_examples():
    # `edgeprof run --help` never said what run does, and printed every command's examples
    # (show, demo and calibrate-host none); a continued example lost its backslash.
    for command in ("run", "show", "demo", "compare", "fit", "calibrate-host", "devices"):
        p = edgeprof(command, "--help")
        assert p.returncode == 0, p.stderr
        head, _, examples = p.stdout.partition("examples:\n")
        assert head.split("\n\n")[1].strip(), (command, head)  # the description
        lines = [line.strip() for line in examples.splitlines() if line.strip()]
        assert lines, command
        starts = [line for line in lines if line.startswith("edgeprof ")]
        assert starts and all((line + " ").startswith(f"edgeprof {command} ") for line in starts), lines
    compare = edgeprof("compare", "--help").stdout
    assert '--model big" \\\n      --device' in compare


def test_run_asks_whether_the_json_option_took_the_command():
    # `run --json python3 infer.py` took python3 for the report's file and ran infer.py.
    # (sh: on PATH in the cgroup v2 VM too.)
    p = edgeprof("run", "--json", "sh", "infer.sh")
    assert p.returncode == 2 and "--json sh: is sh the command?" in p.stderr, p.stderr
    assert "`--json -- sh ...`" in p.stderr


def test_a_report_is_not_written_over_the_device_file_it_runs(tmp_path):
    # `run --device board.json --json board.json` overwrote the device file with a report.
    board = tmp_path / "board.json"
    board.write_text(json.dumps({"name": "b", "cores": 1, "core_speed": 0.5,
                                 "memory": "256MiB"}))
    before = board.read_text()
    for args in (["run", "--device", str(board), "--json", str(board), "--", "true"],
                 ["compare", "-w", "a=true", "--device", "jetson-nano", "--device", str(board),
                  "--json", str(board)],
                 ["calibrate-speed", "--device", str(board), "-w", "a=true", "-m", "a=1",
                  "--json", str(board)]):
        p = edgeprof(*args)
        assert p.returncode == 2 and "is the same file as --device" in p.stderr, (args, p.stderr)
        assert board.read_text() == before


def test_calibrate_speed_asks_a_custom_device_for_no_speed():
    # It asked for "--speed (or --reference-speed)", the figure the calibration finds.
    p = edgeprof("calibrate-speed", "--cores", "4", "-w", "a=true", "-m", "a=1")
    assert p.returncode == 2, p.stderr
    assert "a custom device needs --cores and --memory (its speed is what" in p.stderr


def test_fit_takes_the_device_from_the_csv_and_refuses_another(tmp_path):
    # --device was required and taken as given: a typo or another board was saved without a
    # word, and project never found the calibration, or applied another board's fit.
    data = tmp_path / "d.csv"
    rows = "".join(f"r{i}.json,jetson-nano,pooled,1,{x},{2 * x}\n" for i, x in
                   enumerate([0.01, 0.02, 0.04, 0.08]))
    data.write_text("report,device,core_emulation,runs,wall_time_s,y\n" + rows)
    fit = ["fit", str(data), "--x", "wall_time_s", "--y", "y", "--json"]
    p = edgeprof(*fit)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["calibrations"][0]["device"] == "jetson-nano"
    assert edgeprof(*fit, "--device", "jetson-nano").returncode == 0
    # A hand-written alias in the column is the device's name, as --device's is.
    alias = tmp_path / "alias.csv"
    alias.write_text(data.read_text().replace("jetson-nano", "raspberry-pi-4"))
    p = edgeprof("fit", str(alias), "--x", "wall_time_s", "--y", "y", "--json", "--device",
                 "raspberry-pi-4")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["calibrations"][0]["device"] == "raspberry-pi-4b-4gb"
    other = edgeprof(*fit, "--device", "raspberry-pi-4")
    assert other.returncode == 2, other.stderr
    assert ("--device raspberry-pi-4 is raspberry-pi-4b-4gb, but " in other.stderr
            and "device column says jetson-nano" in other.stderr)
    data.write_text("report,device,core_emulation,runs,wall_time_s,y\n" + rows
                    + "r9.json,lg-g6,pooled,1,0.16,0.32\n")
    two = edgeprof(*fit)
    assert two.returncode == 2 and "of the devices jetson-nano, lg-g6" in two.stderr, two.stderr
    bare = tmp_path / "bare.csv"
    bare.write_text("wall_time_s,y\n0.01,0.02\n0.02,0.04\n0.04,0.08\n")
    none = edgeprof("fit", str(bare), "--x", "wall_time_s", "--y", "y")
    assert none.returncode == 2 and "has no device column: give --device" in none.stderr
    typo = edgeprof("fit", str(bare), "--x", "wall_time_s", "--y", "y", "--device",
                    "raspbery-pi-4", "--json")
    assert typo.returncode == 0, typo.stderr
    assert "warning: --device raspbery-pi-4 is not a device edgeprof knows" in typo.stderr


def test_demo_checks_its_emulation_options_before_it_prints_anything():
    # A period the plan refuses was refused by the first run, after the header and the first
    # workload's line.
    p = edgeprof("demo", "--cpu-period-us", "500")
    assert p.returncode == 2 and "cpu_period_us" in p.stderr, p.stderr
    assert "example workloads" not in p.stderr and "[1/" not in p.stderr


def test_demo_checks_its_timeout_before_it_prints_anything():
    # Its header and first workload's line came before the run that refused the timeout.
    p = edgeprof("demo", "--timeout=-5")
    assert p.returncode == 2 and "argument --timeout: invalid timeout '-5'" in p.stderr, p.stderr
    assert "example workloads" not in p.stderr and "[1/" not in p.stderr


def test_more_threads_than_the_devices_cores_are_said_to_share_them(capsys):
    # --threads 9 on a 4-core device changed nothing, without a word.
    from edgeprof import cli
    pi = edgeprof_api.find_device("raspberry-pi-4b-1gb")
    assert cli._for_threads(pi, 9) == pi
    err = capsys.readouterr().err
    assert "--threads 9 is more than raspberry-pi-4b-1gb's 4 cores" in err
    assert "the 9 threads share its 4 cores" in err
    assert cli._for_threads(pi, 2).cores == 2 and cli._for_threads(pi, 4) == pi
    assert capsys.readouterr().err == ""


@requires_cgroups
def test_an_ignored_sigchld_from_the_parent_does_not_lose_the_workloads_exit_code():
    # SIG_IGN survives exec: the workload's status was lost (exit code 0 for `exit 3`), and the
    # library now refuses to start one then; the command resets it for itself.
    p = subprocess.run([sys.executable, "-m", "edgeprof", "run", "--cores", "1", "--speed", "1",
                        "--memory", "256MiB", "--interval", "off", "--", "sh", "-c", "exit 3"],
                       capture_output=True, text=True, timeout=HANG_S,
                       preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert p.returncode == 3, p.stderr
