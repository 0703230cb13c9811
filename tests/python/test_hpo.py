"""A real Optuna study scored with edgeprof (examples/hpo): concurrent trials, OOM trials
pruned, both objective styles."""

import sys
from pathlib import Path

import pytest

from conftest import HANG_S, requires_cgroups

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


# A study spread over worker processes through a real PostgreSQL server on loopback (as several
# machines would share one): each worker scores its own trials with edgeprof.

import glob
import os
import shutil
import socket
import subprocess
import tempfile


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    port = _free_port()

    def as_postgres(*cmd):
        return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], capture_output=True,
                              text=True, timeout=HANG_S)

    started = False
    try:
        r = as_postgres(f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres")
        assert r.returncode == 0, r.stderr
        r = as_postgres(f"{bindir}/pg_ctl", "-D", data, "-w", "-l", os.path.join(home, "log"),
                        "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1", "start")
        assert r.returncode == 0, r.stderr
        started = True
        r = as_postgres(f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "hpo")
        assert r.returncode == 0, r.stderr
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/hpo"
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
