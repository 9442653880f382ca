#!/usr/bin/env python
"""Optuna samplers: ``KernelBanditSampler`` against Optuna's ``GPSampler`` and ``TPESampler``,
and the certified-gap stop against Optuna's ``RegretBoundEvaluator``.

Problems: the test functions, boxes, budgets and noise of ``bo_vs_botorch.py`` (the issue on
defaults): Optuna minimises g(x) + noise, noise standard deviation 10 % of g's range, the
i-th trial (by number) getting the i-th draw of ``numpy.random.default_rng([seed, 7])``. Every
sampler starts from the same 2d + 2 scrambled Sobol points (enqueued with
``study.enqueue_trial``) and has ``n_startup_trials = 2d + 2``; then each samples on its own up to
the same budget. One worker (sequential ``study.optimize``).

Samplers: ``kb`` = ``KernelBanditSampler(seed=seed)`` (its defaults: DMM-UCB, Matérn 5/2 fitted
on all trials every call, AdaptiveNorm from B₀ = 1 on standardised values); ``gp`` =
``optuna.samplers.GPSampler(seed=seed)``; ``tpe`` = ``optuna.samplers.TPESampler(seed=seed)``.

Metrics: best-so-far regret (g(x) − g*, noise-free, minimum over evaluated points), at the end
of the budget; seconds per trial of the sampler's own work (``before_trial`` +
``sample_relative`` + ``sample_independent``, timed by a wrapper; the objective excluded), with one thread
(``torch.set_num_threads(1)``, ``RAYON_NUM_THREADS=1``).

Stopping (``--stop``): along each ``kb`` run, every ``--stop-every`` trials from trial 20 (the
Terminator's default ``min_n_trials``) on, two stop rules are evaluated on the trials so far:

* ``certified``: ``CertifiedGapEvaluator`` (Matérn 5/2 with a length-scale fitted on 2d + 2
  *other* Sobol points — not part of the study — so that it is fixed before the study's data;
  σ = the true noise sd; B = 2·max|g| over the box, a guess: the true RKHS norm is unknown,
  and B ≥ max|g| is necessary). It stops when the certified gap ≤ ε.
* ``regret-bound``: Optuna's ``RegretBoundEvaluator()`` (Makarova et al. 2022; its default
  improvement evaluator) with ``StaticErrorEvaluator(ε)``: it stops when its bound < ε.

ε = the noise sd (10 % of the range), the statistical error of one evaluation. Reported: the
trials used at the stop (the budget if no stop) and the true regret then of each rule's
recommendation (certified: the trial of largest LCB; regret-bound: ``study.best_trial``).

Results are cached as JSON in ``python/bench/results/optuna-*.json``.

Usage (with Optuna, torch and BoTorch installed, e.g. /work/bench-venv):
    python bench/optuna_samplers.py --samplers kb gp tpe --seeds 0 1 2 3 4
    python bench/optuna_samplers.py --stop --seeds 0 1 2 3 4
    python bench/optuna_samplers.py --table
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bo_vs_botorch import DEFAULT_FUNCTIONS, FUNCTIONS, Problem, initial_points  # noqa: E402

import optuna  # noqa: E402
from optuna.samplers import BaseSampler  # noqa: E402

import kernel_bandits as kb  # noqa: E402
from kernel_bandits.optuna import CertifiedGapEvaluator, KernelBanditSampler  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
warnings.filterwarnings("ignore")
optuna.logging.set_verbosity(optuna.logging.ERROR)


class Timed(BaseSampler):
    """Delegates to a sampler and adds up the seconds of its sampling per trial."""

    def __init__(self, inner: BaseSampler):
        self.inner = inner
        self.seconds: dict[int, float] = {}

    def _time(self, trial, call, *args):
        start = time.perf_counter()
        out = call(*args)
        self.seconds[trial.number] = self.seconds.get(trial.number, 0.0) + time.perf_counter() - start
        return out

    def infer_relative_search_space(self, study, trial):
        return self._time(trial, self.inner.infer_relative_search_space, study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._time(trial, self.inner.sample_relative, study, trial, search_space)

    def sample_independent(self, study, trial, name, distribution):
        return self._time(trial, self.inner.sample_independent, study, trial, name, distribution)

    def before_trial(self, study, trial):  # KernelBanditSampler proposes here
        self._time(trial, self.inner.before_trial, study, trial)

    def after_trial(self, study, trial, state, values):
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self):
        self.inner.reseed_rng()


def make_sampler(name: str, seed: int, n0: int) -> BaseSampler:
    if name == "kb":
        return KernelBanditSampler(seed=seed, n_startup_trials=n0)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n0)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=n0)
    raise SystemExit(f"unknown sampler {name!r}")


def study_for(problem: Problem, seed: int, sampler: BaseSampler):
    """A study with the shared initial design enqueued, and its objective."""
    names = [f"x{i}" for i in range(problem.dim)]
    noise = np.random.default_rng([seed, 7]).normal(0.0, problem.noise_sd, problem.budget)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    for x in initial_points(problem, seed):
        study.enqueue_trial({n: float(v) for n, v in zip(names, x)})

    def objective(trial):
        x = np.array([trial.suggest_float(n, float(lo), float(hi)) for n, lo, hi in zip(names, problem.lo, problem.hi)])
        return float(problem.g(x)[0]) + float(noise[trial.number])

    return study, objective, names


def points(study, names):
    return np.array([[t.params[n] for n in names] for t in study.trials])


def run_sampler(problem: Problem, seed: int, name: str) -> dict:
    import torch

    torch.set_num_threads(1)
    n0 = 2 * problem.dim + 2
    timed = Timed(make_sampler(name, seed, n0))
    study, objective, names = study_for(problem, seed, timed)
    study.optimize(objective, n_trials=problem.budget)
    X = points(study, names)
    regrets = problem.regret(X)
    best = np.minimum.accumulate(regrets)
    times = [timed.seconds.get(t.number, 0.0) for t in study.trials[n0:]]
    return {
        "function": problem.name, "dim": problem.dim, "budget": problem.budget, "noise_sd": problem.noise_sd,
        "final_regret": float(best[-1]), "best_so_far": best.tolist(), "seconds": times,
        "seconds_per_trial_median": float(statistics.median(times)),
        "machine": platform.platform(), "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }


def certified_evaluator(problem: Problem, seed: int) -> CertifiedGapEvaluator:
    """Kernel fitted on 2d + 2 points that are not in the study; σ true; B = 2·max|g|."""
    from scipy.stats import qmc

    n = 2 * problem.dim + 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u = qmc.Sobol(problem.dim, scramble=True, seed=10_000 + seed).random(n)
    g = problem.g(problem.lo + u * (problem.hi - problem.lo))
    fit = kb.fit_hyperparameters(u, (g - g.mean()) / g.std(), noise=0.1, family="matern", nu=2.5)
    sample = problem.lo + np.random.default_rng(1).random((4096, problem.dim)) * (problem.hi - problem.lo)
    gmax = float(np.max(np.abs(np.concatenate([problem.g(sample), [problem.g_star]]))))
    return CertifiedGapEvaluator(kb.Matern(nu=2.5, lengthscale=float(fit.lengthscales[0])),
                                 sigma=problem.noise_sd, norm_bound=2.0 * gmax, max_seconds=2.0)


def run_stop(problem: Problem, seed: int, every: int) -> dict:
    import torch
    from optuna.terminator import RegretBoundEvaluator

    torch.set_num_threads(1)
    n0 = 2 * problem.dim + 2
    epsilon = problem.noise_sd
    study, objective, names = study_for(problem, seed, KernelBanditSampler(seed=seed, n_startup_trials=n0))
    certified = certified_evaluator(problem, seed)
    regret_bound = RegretBoundEvaluator(seed=seed)
    out = {"function": problem.name, "dim": problem.dim, "budget": problem.budget, "epsilon": epsilon,
           "certified": None, "regret-bound": None, "trace": []}
    while len(study.trials) < problem.budget:
        study.optimize(objective, n_trials=1)
        n = len(study.trials)
        if n < 20 or (n - 20) % every:
            continue
        row = {"n": n}
        start = time.perf_counter()
        gap = certified.evaluate(study.trials, study.direction)
        row["certified_gap"], row["certified_seconds"] = gap, time.perf_counter() - start
        rec = study.trials[certified.last_certificate["trial"]]
        row["certified_regret"] = float(problem.regret(np.array([[rec.params[k] for k in names]]))[0])
        start = time.perf_counter()
        bound = regret_bound.evaluate(study.trials, study.direction)
        row["regret_bound"], row["regret_bound_seconds"] = bound, time.perf_counter() - start
        best = study.best_trial
        row["best_trial_regret"] = float(problem.regret(np.array([[best.params[k] for k in names]]))[0])
        out["trace"].append(row)
        if out["certified"] is None and gap <= epsilon:
            out["certified"] = {"n": n, "regret": row["certified_regret"], "gap": gap}
        if out["regret-bound"] is None and bound < epsilon:
            out["regret-bound"] = {"n": n, "regret": row["best_trial_regret"], "bound": bound}
        if out["certified"] is not None and out["regret-bound"] is not None:
            break
    last = out["trace"][-1]
    for key, regret in (("certified", "certified_regret"), ("regret-bound", "best_trial_regret")):
        if out[key] is None:  # never stopped: the budget, and the regret then
            out[key] = {"n": None, "regret": last[regret]}
    out["date"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    return out


def path_for(kind: str, function: str, seed: int) -> Path:
    return RESULTS / f"optuna-{kind}-{function}-{seed}.json"


def cached(kind, function, seed, force, compute):
    path = path_for(kind, function, seed)
    if path.exists() and not force:
        return json.loads(path.read_text())
    result = compute()
    result["seed"] = seed
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result))
    return result


def mean_se(values):
    m = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return m, se


def table(samplers, functions, seeds) -> str:
    lines = ["| function (d, budget) | sampler | seeds | final best-so-far regret | s / trial (median) |",
             "|---|---|---|---|---|"]
    for function in functions:
        for name in samplers:
            rows = [json.loads(p.read_text()) for s in seeds if (p := path_for(name, function, s)).exists()]
            if not rows:
                continue
            m, se = mean_se([r["final_regret"] for r in rows])
            per = statistics.median(t for r in rows for t in r["seconds"])
            lines.append(f"| {function} ({rows[0]['dim']}, {rows[0]['budget']}) | {name} | {len(rows)} "
                         f"| {m:.3g} ± {se:.2g} | {per:.3g} |")
    lines += ["", "| function | rule | seeds | stopped (of seeds) | trials used (mean) | true regret at stop (mean ± se) "
              "| s / evaluation (median) |",
              "|---|---|---|---|---|---|---|"]
    for function in functions:
        rows = [json.loads(p.read_text()) for s in seeds if (p := path_for("stop", function, s)).exists()]
        if not rows:
            continue
        for rule in ("certified", "regret-bound"):
            stops = [r[rule] for r in rows]
            used = [s["n"] if s["n"] is not None else r["budget"] for s, r in zip(stops, rows)]
            m, se = mean_se([s["regret"] for s in stops])
            key = "certified_seconds" if rule == "certified" else "regret_bound_seconds"
            per = statistics.median(row[key] for r in rows for row in r["trace"])
            lines.append(f"| {function} | {rule} | {len(rows)} | {sum(s['n'] is not None for s in stops)} "
                         f"| {statistics.fmean(used):.1f} | {m:.3g} ± {se:.2g} | {per:.3g} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samplers", nargs="+", default=["kb", "gp", "tpe"])
    parser.add_argument("--functions", nargs="+", default=DEFAULT_FUNCTIONS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--stop", action="store_true", help="run the stopping comparison instead")
    parser.add_argument("--stop-every", type=int, default=5)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args(argv)
    for f in args.functions:
        if f not in FUNCTIONS:
            parser.error(f"unknown function {f!r}; one of {sorted(FUNCTIONS)}")
    if not args.table:
        for function in args.functions:
            problem = Problem(function)
            for seed in args.seeds:
                if args.stop:
                    start = time.perf_counter()
                    r = cached("stop", function, seed, args.force, lambda: run_stop(problem, seed, args.stop_every))
                    print(f"stop {function} seed {seed}: certified {r['certified']}, regret-bound {r['regret-bound']} "
                          f"({time.perf_counter() - start:.0f} s)", flush=True)
                    continue
                for name in args.samplers:
                    start = time.perf_counter()
                    r = cached(name, function, seed, args.force, lambda: run_sampler(problem, seed, name))
                    print(f"{name:4s} {function:10s} seed {seed}: regret {r['final_regret']:.4g}, "
                          f"{r['seconds_per_trial_median']:.3g} s/trial ({time.perf_counter() - start:.0f} s)", flush=True)
    print(table(args.samplers, args.functions, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
