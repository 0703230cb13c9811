"""Hyper-parameter search scored against a device with edgeprof and Optuna.

Each trial trains the MLP of train_mlp.py under an emulated device; the objective combines the
held-out accuracy with the device latency and memory edgeprof measured (or projected, given a
calibration). Trials that fail or run out of the device's memory are reported to Optuna as
failed or pruned; the study goes on. Concurrent trials (n_jobs=2) get slices and CPUs of their
own.

    python3 study.py --trials 8 --jobs 2                      # multi-objective
    python3 study.py --trials 8 --jobs 2 --budget-ms 0.5      # one objective, latency budget
    python3 study.py --storage postgresql://user@127.0.0.1/db # workers on several machines
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import optuna

import edgeprof

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE = edgeprof.Device(name="hpo-board", cores=1, core_speed=0.5, memory="256MiB")


def run_trial(trial: optuna.Trial, device=DEVICE) -> tuple[float, edgeprof.Result]:
    """Trains one configuration under the device; returns (accuracy, report)."""
    hidden = trial.suggest_int("hidden", 8, 256, log=True)
    epochs = trial.suggest_int("epochs", 1, 6)
    # A knob that makes some configurations too big for the device: they must be pruned.
    ballast = trial.suggest_categorical("allocate_mib", [0, 0, 400])
    with tempfile.NamedTemporaryFile("w+", suffix=".json") as out:
        report = edgeprof.run(
            [sys.executable, os.path.join(HERE, "train_mlp.py"), "--hidden", str(hidden),
             "--epochs", str(epochs), "--allocate-mib", str(ballast)],
            device=device, stdout=out.name, timeout=300)
        out.seek(0)
        lines = out.read().splitlines()
    trial.set_user_attr("wall_time_s", report.wall_time_s)
    trial.set_user_attr("cpus", list(report.plan.cpus))
    trial.set_user_attr("peak_memory_bytes", report.peak_memory_bytes)
    if report.oom_killed:
        raise optuna.TrialPruned(f"out of memory on {device.name} "
                                 f"({edgeprof.devices.format_size(device.memory_bytes)})")
    if not report.ok:
        raise RuntimeError(f"trial failed on {device.name}: {report.exit_code=}, "
                           f"{report.signal=}")
    # The script's last line is its JSON result; a run that printed none failed this trial only.
    for line in reversed(lines):
        try:
            return float(json.loads(line)["accuracy"]), report
        except (ValueError, KeyError, TypeError):
            continue
    raise RuntimeError(f"trial printed no JSON line with its accuracy ({len(lines)} lines)")


def scored(report: edgeprof.Result, **budget) -> edgeprof.analysis.Score:
    """The trial's score; a report without an inference phase (the workload marked none) fails
    this trial alone, while a misspelled figure or a bad limit ends the study."""
    if not any(p.name == "inference" for p in report.phases):
        raise RuntimeError("trial not scored: its workload marked no 'inference' phase")
    return edgeprof.score(report, latency_figure="phase.inference.all_cores_wall_time_s",
                          **budget)


def multi_objective(trial: optuna.Trial) -> tuple[float, float, float]:
    accuracy, report = run_trial(trial)
    s = scored(report)
    return accuracy, s.latency, s.memory


def budget_objective(budget_s: float):
    def objective(trial: optuna.Trial) -> float:
        accuracy, report = run_trial(trial)
        s = scored(report, latency=budget_s)
        trial.set_user_attr("fits", s.fits)
        return accuracy - s.penalty  # over budget by 30%: minus 0.3
    return objective


def positive_ms(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of milliseconds")
    return value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--budget-ms", type=positive_ms,
                   help="inference-phase budget: one objective")
    p.add_argument("--storage", help="an Optuna RDB URL, shared by several workers")
    p.add_argument("--study", default="edgeprof-hpo")
    args = p.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if args.budget_ms is not None:
        study = optuna.create_study(study_name=args.study, storage=args.storage,
                                    direction="maximize", load_if_exists=True)
        objective = budget_objective(args.budget_ms / 1e3)
    else:
        study = optuna.create_study(study_name=args.study, storage=args.storage,
                                    directions=["maximize", "minimize", "minimize"],
                                    load_if_exists=True)
        objective = multi_objective
    # A trial that failed (RuntimeError) fails alone; the study goes on. Other errors of
    # edgeprof (no cgroups here, a bad device) end the study at once.
    study.optimize(objective, n_trials=args.trials, n_jobs=args.jobs, catch=(RuntimeError,))
    for t in study.trials:
        print(t.number, t.state.name, t.params, t.values)
    return 0


if __name__ == "__main__":
    sys.exit(main())
