"""Stopping rules that certify, from Python: the finite-arm experiment of
`kbandit reproduce stopping` (docs/stopping.md) through `UcbAgent.run_until`.

The problem is Flynn & Reeb (2024) §7's: d = 3, f = b Σᵢ wᵢ k(·, zᵢ) with 20 centres and
‖f‖_H = B = 10 exactly, noise N(0, σ²) with σ = 0.1, δ = 0.01, the paper's c and η for a horizon
T = the budget. One fixed set of 1000 arms per repetition (the problem's round 0). Each bound
plays the arm of largest UCB until its certified gap — max UCB − LCB(recommendation), the
bounds intersected over the rounds — is at most the smallest ε, or the budget is spent. With
probability ≥ 1 − δ the bound holds at every round at once, so every gap below is ≥ the true
regret of its recommendation, at whichever round one stops; the script counts the rounds where
it is not (expect 0).

    python python/examples/stopping.py [--reps 3] [--budget 300] [--kernels rbf,matern52]
        [--bounds cmm,dmm,amm,ay,igp] [--out OUT_DIR]

prints, per kernel, the median number of evaluations until each ε ∈ {2, 1, 0.5, 0.2} was
certified (k/n: certified in k of n repetitions) and the validity count, and with --out writes
OUT_DIR/stopping_python.csv. Same protocol as the command line, its own random draws (the
noise comes from numpy). The heuristics of the command line (K-UCB, GP-UCB β/5 and the regret
bound of Makarova et al. 2022 that Optuna's Terminator uses) are not repeated here.
"""

import argparse
import csv
import time
from pathlib import Path

import numpy as np

import kernel_bandits as kb

SIGMA, NORM, DELTA, DIMS = 0.1, 10.0, 0.01, 3
EPSILONS = (2.0, 1.0, 0.5, 0.2)
BOUNDS = {"cmm": kb.Cmm, "dmm": kb.Dmm, "amm": kb.Amm, "ay": kb.Ay, "igp": kb.Igp}


def make_kernel(name, lengthscale=0.5):
    if name == "rbf":
        return kb.Rbf(lengthscale)
    if name == "matern52":
        return kb.Matern(nu=2.5, lengthscale=lengthscale)
    raise ValueError(f"unknown kernel {name!r}: rbf or matern52")


def one_run(kernel, bound_name, seed, budget, arms=1000, epsilons=EPSILONS):
    """Plays one bound on one problem; returns the evaluations until each ε was certified
    (None: not within the budget), the true regret of the recommendation then, and the number
    of rounds whose gap was below the true regret of its recommendation."""
    problem = kb.SyntheticProblem(
        kernel, dims=DIMS, arms=arms, norm_bound=NORM, noise_sd=SIGMA, seed=seed
    )
    first = problem.round(0)
    points, values = first.arms, first.values
    best = values.max()
    params = dict(
        kb.paper_defaults(kernel, DIMS, budget), sigma=SIGMA, norm_bound=NORM, delta=DELTA
    )
    agent = kb.UcbAgent(BOUNDS[bound_name](kernel, **params))
    noise = np.random.default_rng(seed)

    def objective(x):
        index = int(np.flatnonzero((points == x).all(axis=1))[0])
        return float(values[index]) + SIGMA * noise.standard_normal()

    run = agent.run_until(points, objective, budget=budget, gap=min(epsilons))
    # The certificate before the first evaluation, then after each.
    gaps = np.concatenate([[run.initial.gap], run.gaps])
    recommended = np.concatenate([[run.initial.recommendation.index], run.recommended])
    regrets = best - values[recommended]
    reached = {}
    for eps in epsilons:
        hit = np.flatnonzero(gaps <= eps)
        reached[eps] = (int(hit[0]), float(regrets[hit[0]])) if hit.size else (None, None)
    return reached, int((gaps < regrets).sum()), len(gaps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--arms", type=int, default=1000)
    parser.add_argument("--kernels", default="rbf,matern52")
    parser.add_argument("--bounds", default="cmm,dmm,amm,ay,igp")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    for kernel_name in args.kernels.split(","):
        kernel = make_kernel(kernel_name)
        print(f"\n{kernel_name}, budget {args.budget}, {args.reps} repetitions")
        print("| bound | " + " | ".join(f"ε = {e}" for e in EPSILONS) + " | below the regret |")
        print("|---|" + "---:|" * (len(EPSILONS) + 1))
        for bound_name in args.bounds.split(","):
            counts = {e: [] for e in EPSILONS}
            below = rounds = 0
            for rep in range(args.reps):
                start = time.perf_counter()
                reached, violations, n = one_run(
                    kernel, bound_name, 1000 * rep + 1, args.budget, args.arms
                )
                elapsed = time.perf_counter() - start
                below += violations
                rounds += n
                for eps, (evaluations, regret) in reached.items():
                    if evaluations is not None:
                        counts[eps].append(evaluations)
                    rows.append(
                        dict(
                            kernel=kernel_name,
                            bound=bound_name,
                            rep=rep,
                            epsilon=eps,
                            evaluations=evaluations,
                            regret=regret,
                            violations=violations,
                            wall_time_s=round(elapsed, 4),
                        )
                    )
            cells = [
                f"{np.median(c):g} ({len(c)}/{args.reps})" if c else f"– (0/{args.reps})"
                for c in counts.values()
            ]
            print(f"| {bound_name} | " + " | ".join(cells) + f" | {below} of {rounds} |")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with open(args.out / "stopping_python.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
