#!/usr/bin/env python
"""Four worker processes on one Optuna study, sampled by ``KernelBanditSampler``.

The study lives in an Optuna storage; every worker is a separate process that loads it and runs
``study.optimize``. The sampler registers the other workers' RUNNING trials as pending
evaluations, so no two workers evaluate the same point at the same time.

    python examples/optuna_workers.py                                  # a journal file (default)
    python examples/optuna_workers.py --storage sqlite:///study.db     # SQLite, one machine
    python examples/optuna_workers.py --storage postgresql://user:pw@host/db   # many machines

With a database URL the same command can be started on several machines (``--workers 1`` on
each, ``--no-create`` on all but the first, or just the same ``--study`` name: it is created
if missing). Needs ``pip install "./python[optuna]"`` (and a PostgreSQL driver such as psycopg2
for PostgreSQL).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

import optuna

from kernel_bandits.optuna import KernelBanditSampler

# The optimum: x = 1, y = 1 (log-scaled), n = 3, value 0.
OPTIMUM = {"x": 1.0, "y": 1.0, "n": 3}


def objective(trial: optuna.Trial, sleep: float = 0.05) -> float:
    """A smooth function of a float, a log-scaled float and an int (minimised at OPTIMUM)."""
    x = trial.suggest_float("x", -5.0, 5.0)
    y = trial.suggest_float("y", 1e-3, 1e2, log=True)
    n = trial.suggest_int("n", 1, 8)
    time.sleep(sleep)  # the "experiment": long enough for the workers' trials to overlap
    return (x - 1.0) ** 2 / 10.0 + math.log10(y) ** 2 / 4.0 + (n - 3) ** 2 / 20.0


def storage(spec: str) -> optuna.storages.BaseStorage:
    """``journal:PATH`` (a journal file, nothing to install) or a database URL."""
    if spec.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend

        return optuna.storages.JournalStorage(JournalFileBackend(spec[len("journal:") :]))
    return optuna.storages.RDBStorage(spec, engine_kwargs={"connect_args": {"timeout": 60}} if spec.startswith("sqlite") else {})


def worker(spec: str, study_name: str, trials: int, seed: int, sleep: float) -> None:
    """One worker: load the study and run ``trials`` trials in it."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = KernelBanditSampler(seed=seed, n_startup_trials=8)
    study = optuna.load_study(study_name=study_name, storage=storage(spec), sampler=sampler)
    study.optimize(lambda t: objective(t, sleep), n_trials=trials)


def run(spec: str, study_name: str = "kb-workers", workers: int = 4, trials_per_worker: int = 10,
        seed: int = 0, sleep: float = 0.05) -> optuna.Study:
    """Create the study, start ``workers`` processes on it, wait for them, return the study."""
    study = optuna.create_study(study_name=study_name, storage=storage(spec), direction="minimize",
                                load_if_exists=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--storage", spec,
               "--study", study_name, "--trials", str(trials_per_worker), "--sleep", str(sleep)]
    processes = [subprocess.Popen(command + ["--seed", str(seed)]) for _ in range(workers)]
    codes = [p.wait() for p in processes]
    if any(codes):
        raise RuntimeError(f"a worker failed: exit codes {codes}")
    return optuna.load_study(study_name=study_name, storage=storage(spec))


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", default="journal:optuna_workers.log",
                        help="journal:PATH or a database URL (sqlite:///..., postgresql://...)")
    parser.add_argument("--study", default="kb-workers")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--trials", type=int, default=10, help="trials per worker")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.storage, args.study, args.trials, args.seed, args.sleep)
        return
    start = time.perf_counter()
    study = run(args.storage, args.study, args.workers, args.trials, args.seed, args.sleep)
    states = [t.state.name for t in study.trials]
    print(f"{len(study.trials)} trials in {time.perf_counter() - start:.1f} s: "
          f"{states.count('COMPLETE')} complete; best value {study.best_value:.4f} at {study.best_params}")


if __name__ == "__main__":
    main()
