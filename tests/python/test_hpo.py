"""A real Optuna study scored with edgeprof (examples/hpo): concurrent trials, OOM trials
pruned, both objective styles."""

import json
import sys
from pathlib import Path

import pytest

import edgeprof
from conftest import HANG_S, captured_report_text, requires_cgroups

optuna = pytest.importorskip("optuna")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "hpo"))
import study as hpo  # noqa: E402


@requires_cgroups
def test_multi_objective_study_with_two_jobs():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(directions=["maximize", "minimize", "minimize"],
                            sampler=optuna.samplers.RandomSampler(seed=3))
    s.enqueue_trial({"hidden": 16, "epochs": 1, "allocate_mib": 0})
    s.enqueue_trial({"hidden": 128, "epochs": 2, "allocate_mib": 0})
    s.enqueue_trial({"hidden": 16, "epochs": 1, "allocate_mib": 400})  # > 256 MiB: OOM
    s.enqueue_trial({"hidden": 32, "epochs": 1, "allocate_mib": 0})
    s.optimize(hpo.multi_objective, n_trials=4, n_jobs=2, catch=(RuntimeError,))
    states = [t.state for t in s.trials]
    assert states.count(optuna.trial.TrialState.PRUNED) == 1
    assert states.count(optuna.trial.TrialState.COMPLETE) == 3
    for t in s.trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            accuracy, latency, memory = t.values
            assert 0.1 < accuracy <= 1.0
            # The inference phase, seconds: a part of the run (how long is the machine's).
            assert 0 < latency <= t.user_attrs["wall_time_s"]
            assert 1 << 20 < memory < 256 << 20  # the device's memory limit (kernel-enforced)
    assert s.best_trials  # a Pareto front of trials


@requires_cgroups
def test_single_objective_with_a_latency_budget():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(direction="maximize")
    s.enqueue_trial({"hidden": 16, "epochs": 1, "allocate_mib": 0})
    s.enqueue_trial({"hidden": 16, "epochs": 1, "allocate_mib": 0})
    # A budget no run can meet: every trial is penalised by how far it is over.
    s.optimize(hpo.budget_objective(1e-7), n_trials=1)
    # One no trial that completes can exceed (run_trial kills a run after 300 s, and the
    # inference phase is a part of the run): no penalty, the objective is the accuracy.
    s.optimize(hpo.budget_objective(301.0), n_trials=1)
    over, within = s.trials
    assert over.user_attrs["fits"] is False and over.value < 0
    assert within.user_attrs["fits"] is True and 0.1 < within.value <= 1.0


# The example's bad paths, each cheap: a stand-in for train_mlp.py (a few lines, not a training)
# or a captured report.

FIXED = {"hidden": 8, "epochs": 1, "allocate_mib": 0}


@pytest.fixture
def stand_in_trainer(tmp_path, monkeypatch):
    """Makes the example run `tmp_path/train_mlp.py`, written from the lines given."""
    monkeypatch.setattr(hpo, "HERE", str(tmp_path))

    def write(*lines: str) -> None:
        (tmp_path / "train_mlp.py").write_text("\n".join(lines) + "\n")
    return write


@requires_cgroups
def test_a_trial_takes_the_last_json_line_with_an_accuracy(stand_in_trainer):
    # A line after the result (a library's farewell) made json.loads(lines[-1]) raise a
    # ValueError, which ended the study.
    stand_in_trainer("print('training')", "print('{\"accuracy\": 0.5}')",
                     "print('{\"accuracy\": 0.75}')", "print('done')")
    accuracy, report = hpo.run_trial(optuna.trial.FixedTrial(FIXED))
    assert accuracy == 0.75 and report.ok


@requires_cgroups
def test_a_trial_without_a_json_line_with_an_accuracy_fails_alone(stand_in_trainer):
    # Not JSON, JSON but not an object, an object without "accuracy", an accuracy that is no
    # number: a RuntimeError, which catch=(RuntimeError,) fails alone (was a ValueError,
    # KeyError or TypeError that ended the study).
    stand_in_trainer("print('training')", "print('[1, 2]')", "print('{\"loss\": 0.1}')",
                     "print('{\"accuracy\": \"high\"}')")
    with pytest.raises(RuntimeError, match=r"printed no JSON line with its accuracy \(4 lines\)"):
        hpo.run_trial(optuna.trial.FixedTrial(FIXED))
    stand_in_trainer("pass")
    with pytest.raises(RuntimeError, match=r"\(0 lines\)"):
        hpo.run_trial(optuna.trial.FixedTrial(FIXED))


@requires_cgroups
def test_a_workload_without_an_inference_phase_fails_its_trial_and_the_study_goes_on(
        stand_in_trainer):
    # The inference phase is marked by the configurations of 16 hidden units only.
    stand_in_trainer("import json, sys", "import edgeprof",
                     "if sys.argv[sys.argv.index('--hidden') + 1] == '16':",
                     "    with edgeprof.phase('inference'):",
                     "        pass",
                     "print(json.dumps({'accuracy': 0.5}))")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(directions=["maximize", "minimize", "minimize"])
    s.enqueue_trial(dict(FIXED, hidden=8))
    s.enqueue_trial(dict(FIXED, hidden=16))
    # Was edgeprof.score's edgeprof.Error for the missing figure: the first trial ended the study.
    s.optimize(hpo.multi_objective, n_trials=2, catch=(RuntimeError,))
    assert [t.state for t in s.trials] == [optuna.trial.TrialState.FAIL,
                                           optuna.trial.TrialState.COMPLETE]
    assert s.trials[1].values[0] == 0.5


def _captured(phase_names: dict[str, str]) -> edgeprof.Result:
    doc = json.loads(captured_report_text())  # phases "load" and "infer"
    for p in doc["phases"]:
        p["name"] = phase_names.get(p["name"], p["name"])
    return edgeprof.Result.from_json(json.dumps(doc))


def test_scored_fails_the_trial_for_no_inference_phase_and_ends_the_study_for_a_bad_limit():
    with pytest.raises(RuntimeError, match="marked no 'inference' phase"):
        hpo.scored(_captured({}))
    report = _captured({"infer": "inference"})
    s = hpo.scored(report, latency=1e9)
    assert s.fits
    assert s.latency == edgeprof.results.figure(report, "phase.inference.all_cores_wall_time_s")
    # A bad limit is the study's mistake, not the trial's: an edgeprof.Error, which
    # catch=(RuntimeError,) lets through (it was made a RuntimeError, and every trial failed).
    with pytest.raises(edgeprof.Error, match="latency limit") as e:
        hpo.scored(report, latency=0.0)
    assert not isinstance(e.value, RuntimeError)


@pytest.mark.parametrize("budget", ["0", "-1", "nan", "inf", "soon"])
def test_a_budget_that_is_not_a_positive_time_is_refused_before_any_study(budget, monkeypatch,
                                                                           capsys):
    # 0 was taken: every trial ran to be scored against it, and failed.
    def no_study(*args, **kwargs):
        raise AssertionError("a study was created")
    monkeypatch.setattr(hpo.optuna, "create_study", no_study)
    with pytest.raises(SystemExit) as e:
        hpo.main(["--budget-ms", budget, "--trials", "1"])
    assert e.value.code == 2  # argparse's usage error
    assert "--budget-ms" in capsys.readouterr().err


# A study spread over worker processes through a real PostgreSQL server on loopback (as several
# machines would share one): each worker scores its own trials with edgeprof.

import glob
import os
import shutil
import subprocess
import tempfile


@pytest.fixture
def postgres():
    initdb = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not initdb or shutil.which("runuser") is None or os.geteuid() != 0:
        pytest.skip("needs root, runuser and Debian's postgresql package "
                    "(apt-get install postgresql)")
    pytest.importorskip("psycopg2")
    bindir = os.path.dirname(initdb[-1])
    home = tempfile.mkdtemp(prefix="edgeprof-pg-")
    data, sock = os.path.join(home, "data"), os.path.join(home, "sock")
    os.makedirs(sock)
    shutil.chown(home, "postgres")
    shutil.chown(sock, "postgres")
    # A Unix socket in a directory of its own, no TCP port: a free port found and closed could
    # be taken by another process before the server bound it, failing the fixture.
    port = 5432

    def as_postgres(*cmd):
        return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], capture_output=True,
                              text=True, timeout=HANG_S)

    started = False
    try:
        r = as_postgres(f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres")
        assert r.returncode == 0, r.stderr
        r = as_postgres(f"{bindir}/pg_ctl", "-D", data, "-w", "-l", os.path.join(home, "log"),
                        "-o", f"-p {port} -k {sock} -c listen_addresses=''", "start")
        assert r.returncode == 0, r.stderr
        started = True
        r = as_postgres(f"{bindir}/createdb", "-h", sock, "-p", str(port), "hpo")
        assert r.returncode == 0, r.stderr
        yield f"postgresql+psycopg2://postgres@/hpo?host={sock}&port={port}"
    finally:
        if started:
            as_postgres(f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)


@requires_cgroups
def test_two_workers_share_a_study_through_postgresql(postgres):
    script = Path(__file__).resolve().parents[2] / "examples" / "hpo" / "study.py"
    # The study (and the storage's tables) once, before the workers: two workers creating the
    # schema at the same moment collide.
    optuna.create_study(study_name="shared", storage=postgres,
                        directions=["maximize", "minimize", "minimize"])
    workers = [subprocess.Popen([sys.executable, str(script), "--storage", postgres,
                                 "--trials", "3", "--jobs", "1", "--study", "shared"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    for w in workers:
        # A hang guard: each of a worker's 3 trials is killed after 300 s (study.run_trial).
        out, err = w.communicate(timeout=3 * 300 + HANG_S)
        assert w.returncode == 0, err
    s = optuna.load_study(study_name="shared", storage=postgres)
    assert len(s.trials) == 6  # 3 from each worker, in one study
    finished = [t for t in s.trials if t.state in (optuna.trial.TrialState.COMPLETE,
                                                   optuna.trial.TrialState.PRUNED)]
    assert len(finished) == 6
    assert all("wall_time_s" in t.user_attrs for t in s.trials)
