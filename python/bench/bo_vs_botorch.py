#!/usr/bin/env python
"""Bayesian optimisation: the crate's loop (``kernel_bandits.maximise``) against BoTorch.

Both sides maximise f = -g for a standard test function g (BoTorch's definitions in
``botorch.test_functions``), observed with Gaussian noise of standard deviation 10 % of g's
range on the box (range = max - min of g, the max estimated on 2^16 scrambled Sobol points,
the min the known optimum). Both sides start from the same 2d + 2 scrambled Sobol points
(``scipy.stats.qmc.Sobol(d, scramble=True, seed=seed)``) and draw the same noise sequence
(the i-th evaluation gets the i-th draw of ``numpy.random.default_rng([seed, 7])``), and both
spend the same budget of evaluations (the initial points included).

Methods:

* ``logei``: BoTorch's tutorial loop: ``SingleTaskGP`` on inputs scaled to the unit cube with
  ``Standardize`` outcomes, fitted every iteration with ``fit_gpytorch_mll``;
  ``LogExpectedImprovement`` with best_f = max observed y; ``optimize_acqf`` with 10 restarts
  and 512 raw samples. Recommendation: the observed point of largest posterior mean (final fit).
* ``ucb``: as ``logei`` with ``UpperConfidenceBound(beta=2)`` (optional; not in the default set).
* ``kb``: ``kernel_bandits.maximise`` with its defaults, only the initial points given.
  Recommendation: ``result.recommendation`` (the observed point of largest LCB).
  ``kb-strict``: fit once on the initial design, bound on later data only (the guaranteed
  mode); ``kb-every5``: all-data refits every 5 iterations; ``kb-q4``: batches of 4 with the
  default rule in a box (GP-BUCB); ``kb-q4-pe``: batches of 4 with GP-UCB-PE.

Metric: regret of the best true (noise-free) value found, f* - max_i f(x_i) over all evaluated
points (the issue's "best true value found"), and the regret of the recommended point; mean and
standard error over seeds. Seconds per iteration: fit + acquisition (the objective excluded),
with ``torch.set_num_threads(1)`` and ``RAYON_NUM_THREADS=1``.

Every (method, function, seed) result is cached as JSON in ``python/bench/results/``; a cached
result is reused unless ``--force`` is given (so BoTorch runs once and the crate's side can be
re-run after changes with ``--methods kb --force``).

Usage (with BoTorch installed, e.g. /work/bench-venv):
    python bench/bo_vs_botorch.py --methods logei kb --functions branin ackley5 --seeds 0 1 2 3 4
    python bench/bo_vs_botorch.py --table            # print the table of cached results only
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
from scipy.stats import qmc  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

# name: (botorch class name, kwargs, budget)
FUNCTIONS = {
    "branin": ("Branin", {}, 60),
    "ackley5": ("Ackley", {"dim": 5}, 100),
    "hartmann6": ("Hartmann", {"dim": 6}, 100),
    "levy4": ("Levy", {"dim": 4}, 80),
    "rosenbrock4": ("Rosenbrock", {"dim": 4}, 80),
}
DEFAULT_FUNCTIONS = ["branin", "ackley5", "hartmann6", "levy4"]
NOISE_FRACTION = 0.1


class Problem:
    """g, its box, its optimum and the noise level; evaluates g in numpy (float64)."""

    def __init__(self, name: str):
        import torch
        from botorch import test_functions

        cls, kwargs, budget = FUNCTIONS[name]
        self.name = name
        self.budget = budget
        self.fn = getattr(test_functions, cls)(**kwargs).to(torch.float64)
        self.dim = self.fn.dim
        bounds = self.fn.bounds.numpy()
        self.lo = bounds[0].copy()
        self.hi = bounds[1].copy()
        self.g_star = float(self.fn.optimal_value)
        sample = qmc.Sobol(self.dim, scramble=True, seed=12345).random(1 << 16)
        g_max = float(np.max(self.g(self.lo + sample * (self.hi - self.lo))))
        self.range = g_max - self.g_star
        self.noise_sd = NOISE_FRACTION * self.range

    def g(self, x: np.ndarray) -> np.ndarray:
        """The noise-free g at the rows of x (the box's coordinates)."""
        import torch

        with torch.no_grad():
            return self.fn.evaluate_true(torch.as_tensor(np.atleast_2d(x))).numpy().astype(float)

    def regret(self, x: np.ndarray) -> np.ndarray:
        """f* - f(x) = g(x) - g* for each row."""
        return self.g(x) - self.g_star


class NoisyObjective:
    """f(x) = -g(x) + noise, the i-th call getting the i-th draw of the seed's stream."""

    def __init__(self, problem: Problem, seed: int):
        self.problem = problem
        self.noise = np.random.default_rng([seed, 7]).normal(0.0, problem.noise_sd, problem.budget)
        self.calls = 0
        self.xs: list[np.ndarray] = []

    def __call__(self, x) -> float:
        x = np.asarray(x, dtype=float)
        value = -float(self.problem.g(x)[0]) + float(self.noise[self.calls])
        self.calls += 1
        self.xs.append(x.copy())
        return value


def initial_points(problem: Problem, seed: int) -> np.ndarray:
    """2d + 2 scrambled Sobol points in the box (the same for every method)."""
    n = 2 * problem.dim + 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "balance properties" for n not a power of 2
        u = qmc.Sobol(problem.dim, scramble=True, seed=seed).random(n)
    return problem.lo + u * (problem.hi - problem.lo)


def run_botorch(problem: Problem, seed: int, acquisition: str) -> dict:
    import torch
    from botorch.acquisition import LogExpectedImprovement, UpperConfidenceBound
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    objective = NoisyObjective(problem, seed)
    lo, hi = problem.lo, problem.hi
    X = initial_points(problem, seed)
    y = np.array([objective(x) for x in X])
    unit = torch.tensor([[0.0] * problem.dim, [1.0] * problem.dim], dtype=torch.float64)

    def fit(X, y):
        train_x = torch.as_tensor((X - lo) / (hi - lo))
        train_y = torch.as_tensor(y).unsqueeze(-1)
        model = SingleTaskGP(train_x, train_y, outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    times = []
    while len(y) < problem.budget:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit(X, y)
            if acquisition == "logei":
                acqf = LogExpectedImprovement(model, best_f=float(np.max(y)))
            else:
                acqf = UpperConfidenceBound(model, beta=2.0)
            candidate, _ = optimize_acqf(acqf, bounds=unit, q=1, num_restarts=10, raw_samples=512)
        times.append(time.perf_counter() - start)
        x = lo + candidate.detach().numpy()[0] * (hi - lo)
        X = np.vstack([X, x])
        y = np.append(y, objective(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(X, y)
        with torch.no_grad():
            mean = model.posterior(torch.as_tensor((X - lo) / (hi - lo))).mean.numpy()[:, 0]
    return finish(problem, X, y, int(np.argmax(mean)), times)


# The crate's variants: keyword arguments of kernel_bandits.maximise (no per-function tuning).
KB_VARIANTS = {
    "kb": {},  # the defaults
    "kb-strict": {"refit": "strict", "refit_every": 0},  # fit once, keep the guarantee
    "kb-every5": {"refit_every": 5},
    "kb-q4": {"batch": 4},  # GP-BUCB batches of 4 (the default rule in a box)
    "kb-q4-pe": {"batch": 4, "batch_rule": "exploration"},  # GP-UCB-PE batches of 4
}


def run_kb(problem: Problem, seed: int, variant: str = "kb") -> dict:
    import kernel_bandits as kb

    objective = NoisyObjective(problem, seed)
    start = time.perf_counter()
    result = kb.maximise(
        objective,
        (problem.lo, problem.hi),
        problem.budget,
        initial=initial_points(problem, seed),
        seed=seed,
        **KB_VARIANTS[variant],
    )
    total = time.perf_counter() - start
    X = np.asarray(result.x)
    y = np.asarray(result.y)
    assert np.array_equal(X, np.array(objective.xs)), "the history is not what was evaluated"
    times = list(np.asarray(result.seconds)[len(initial_points(problem, seed)) :])
    out = finish(problem, X, y, int(result.recommendation.index), times)
    out["wall_seconds"] = total
    out["recommendation_lcb"] = float(result.recommendation.lcb)
    out["recommendation_ucb"] = float(result.recommendation.ucb)
    return out


def finish(problem: Problem, X: np.ndarray, y: np.ndarray, recommended: int, times) -> dict:
    regrets = problem.regret(X)
    best_so_far = np.minimum.accumulate(regrets)
    return {
        "function": problem.name,
        "dim": problem.dim,
        "budget": problem.budget,
        "noise_sd": problem.noise_sd,
        "range": problem.range,
        "final_regret": float(best_so_far[-1]),
        "recommended_regret": float(regrets[recommended]),
        "best_so_far": best_so_far.tolist(),
        "seconds_per_iteration_median": float(statistics.median(times)) if times else 0.0,
        "seconds_per_iteration_mean": float(statistics.fmean(times)) if times else 0.0,
        "seconds": [float(t) for t in times],
        "x": X.tolist(),
        "y": y.tolist(),
        "machine": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }


def path_for(method: str, function: str, seed: int) -> Path:
    return RESULTS / f"{method}-{function}-{seed}.json"


def run(method: str, function: str, seed: int, force: bool) -> dict:
    path = path_for(method, function, seed)
    if path.exists() and not force:
        return json.loads(path.read_text())
    problem = Problem(function)
    if method in ("logei", "ucb"):
        result = run_botorch(problem, seed, method)
    elif method in KB_VARIANTS:
        result = run_kb(problem, seed, method)
    else:
        raise SystemExit(f"unknown method {method!r}")
    result["method"] = method
    result["seed"] = seed
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result))
    return result


def mean_se(values):
    m = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return m, se


def table(methods, functions, seeds) -> str:
    lines = [
        "| function (d, budget, noise sd) | method | seeds | final regret (best true value found) "
        "| regret of the recommendation | s / iteration (median) |",
        "|---|---|---|---|---|---|",
    ]
    for function in functions:
        for method in methods:
            rows = [
                json.loads(path_for(method, function, s).read_text())
                for s in seeds
                if path_for(method, function, s).exists()
            ]
            if not rows:
                continue
            final = mean_se([r["final_regret"] for r in rows])
            rec = mean_se([r["recommended_regret"] for r in rows])
            per_it = statistics.median(t for r in rows for t in r["seconds"])
            head = f"{function} ({rows[0]['dim']}, {rows[0]['budget']}, {rows[0]['noise_sd']:.3g})"
            lines.append(
                f"| {head} | {method} | {len(rows)} | {final[0]:.3g} ± {final[1]:.2g} "
                f"| {rec[0]:.3g} ± {rec[1]:.2g} | {per_it:.4g} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", default=["logei", "kb"])
    parser.add_argument("--functions", nargs="+", default=DEFAULT_FUNCTIONS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--force", action="store_true", help="recompute cached results")
    parser.add_argument("--table", action="store_true", help="only print the cached table")
    args = parser.parse_args(argv)
    for f in args.functions:
        if f not in FUNCTIONS:
            parser.error(f"unknown function {f!r}; one of {sorted(FUNCTIONS)}")
    if not args.table:
        for function in args.functions:
            for seed in args.seeds:
                for method in args.methods:
                    start = time.perf_counter()
                    r = run(method, function, seed, args.force)
                    print(
                        f"{method:6s} {function:12s} seed {seed}: regret {r['final_regret']:.4g}, "
                        f"recommended {r['recommended_regret']:.4g}, "
                        f"{r['seconds_per_iteration_median']:.3g} s/it "
                        f"({time.perf_counter() - start:.1f} s)",
                        flush=True,
                    )
    print(table(args.methods, args.functions, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
