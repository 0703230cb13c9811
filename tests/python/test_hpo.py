"""A real Optuna study scored with edgeprof (examples/hpo): concurrent trials, OOM trials
pruned, both objective styles."""

import sys
from pathlib import Path

import pytest

from conftest import requires_cgroups

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
            assert 0 < latency < 1.0  # the inference phase, seconds
            assert 1 << 20 < memory < 256 << 20
    assert s.best_trials  # a Pareto front of trials


@requires_cgroups
def test_single_objective_with_a_latency_budget():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(direction="maximize")
    s.enqueue_trial({"hidden": 16, "epochs": 1, "allocate_mib": 0})
    s.enqueue_trial({"hidden": 16, "epochs": 1, "allocate_mib": 0})
    # A budget no run can meet: every trial is penalised by how far it is over.
    s.optimize(hpo.budget_objective(1e-7), n_trials=1)
    # A generous one: no penalty, the objective is the accuracy.
    s.optimize(hpo.budget_objective(10.0), n_trials=1)
    over, within = s.trials
    assert over.user_attrs["fits"] is False and over.value < 0
    assert within.user_attrs["fits"] is True and 0.1 < within.value <= 1.0
