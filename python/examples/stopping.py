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
        [--bounds cmm,dmm,amm,ay,igp] [--out OUT_DIR] [--box]

prints, per kernel, the median number of evaluations until each ε ∈ {2, 1, 0.5, 0.2} was
certified (k/n: certified in k of n repetitions) and the validity count, and with --out writes
OUT_DIR/stopping_python.csv. Same protocol as the command line, its own random draws (the
noise comes from numpy). The heuristics of the command line (K-UCB, GP-UCB β/5 and the regret
bound of Makarova et al. 2022 that Optuna's Terminator uses) are not repeated here.

With --box, the same problems on the box [0, 1]³ (the box half of `kbandit reproduce
stopping`): each bound's agent chooses points by `select_in`, and after round(5·1.25^k)
evaluations (and at the budget) `kb.certify_box` proves an upper bound U_s on the largest UCB
over the box (2 s per certificate at most; an unconverged bound is still a bound, only
looser). The certificate intersects the certified rounds: U* = min_s U_s, and the
recommendation is the best point by LCB over those rounds, so gap = U* − its largest LCB bounds
f(x*) − f(x̂) at every certified round at once, with probability ≥ 1 − δ. Certifying only on a
schedule loses nothing of the guarantee, since the bounds hold at every round. f(x*) comes from
a 41³ grid refined by compass search from its 10 best points (numpy only), checked against
10⁵ uniform points; the default budget is then 150.
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


def box_maximum(value, dims=DIMS, grid=41, starts=10, seed=0):
    """max f over [0, 1]^dims: the best of a grid, refined by compass search (Kolda, Lewis &
    Torczon 2003, §3) from the `starts` best grid points, checked against uniform points."""
    axis = np.linspace(0.0, 1.0, grid)
    points = np.stack(np.meshgrid(*[axis] * dims, indexing="ij"), axis=-1).reshape(-1, dims)
    values = np.asarray(value(points))
    best_x, best = None, -np.inf
    for x in points[np.argsort(values)[-starts:]]:
        fx, step = float(value(x)), 0.5 / (grid - 1)
        while step > 1e-10:
            moved = False
            for direction in np.vstack([np.eye(dims), -np.eye(dims)]):
                y = np.clip(x + step * direction, 0.0, 1.0)
                fy = float(value(y))
                if fy > fx:
                    x, fx, moved = y, fy, True
                    break
            if not moved:
                step /= 2.0
        if fx > best:
            best_x, best = x, fx
    sample = np.random.default_rng(seed).random((100_000, dims))
    assert np.max(value(sample)) <= best, "a uniform point beats the maximum found"
    return best_x, best


def schedule(budget, ratio=1.25, first=5):
    rounds, k = [], 0
    while True:
        t = int(round(first * ratio**k))
        if t >= budget:
            return rounds + [budget]
        if not rounds or t > rounds[-1]:
            rounds.append(t)
        k += 1


def one_box_run(kernel, bound_name, seed, budget, epsilons=EPSILONS, seconds=2.0, dense=0):
    """As `one_run`, on the box [0, 1]³ with certificates on a geometric schedule. With
    `dense` > 0, each proven upper bound is checked against the UCB at that many uniform
    points (a test's independent check)."""
    problem = kb.SyntheticProblem(
        kernel, dims=DIMS, arms=1, norm_bound=NORM, noise_sd=SIGMA, seed=seed
    )
    _, best = box_maximum(problem.value, seed=seed)
    params = dict(
        kb.paper_defaults(kernel, DIMS, budget), sigma=SIGMA, norm_bound=NORM, delta=DELTA
    )
    agent = kb.UcbAgent(BOUNDS[bound_name](kernel, **params), starts=256, refine=3, seed=seed)
    domain = kb.BoxDomain.unit(DIMS)
    noise = np.random.default_rng(seed)
    upper, x_hat, lcb_hat = np.inf, None, -np.inf
    reached, below, certified = {}, 0, 0
    due = schedule(budget)
    for t in range(1, budget + 1):
        x = agent.select_in(domain).point
        agent.update(x, float(problem.value(x)) + SIGMA * noise.standard_normal())
        if t not in due:
            continue
        cert = kb.certify_box(agent.bound, domain, tolerance=0.05, max_seconds=seconds)
        if dense:
            sample = np.random.default_rng(t).random((dense, DIMS))
            assert cert.upper >= agent.bounds(sample).ucb.max(), "U below a sampled UCB"
        upper = min(upper, cert.upper)  # a proven bound on sup UCB_t, never best_found
        if x_hat is not None:  # the kept recommendation's LCB at this round
            lcb_hat = max(lcb_hat, float(agent.bounds(x_hat[None, :]).lcb[0]))
        if cert.recommendation.lcb > lcb_hat:
            x_hat, lcb_hat = np.array(cert.recommendation.x), cert.recommendation.lcb
        gap, regret = upper - lcb_hat, best - float(problem.value(x_hat))
        certified += 1
        below += int(gap < regret)
        for eps in epsilons:
            if eps not in reached and gap <= eps:
                reached[eps] = (t, regret)
    return {e: reached.get(e, (None, None)) for e in epsilons}, below, certified


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--arms", type=int, default=1000)
    parser.add_argument("--kernels", default="rbf,matern52")
    parser.add_argument("--bounds", default="cmm,dmm,amm,ay,igp")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--box", action="store_true", help="the box [0, 1]³ instead of the arms")
    args = parser.parse_args()
    if args.box and args.budget == parser.get_default("budget"):
        args.budget = 150
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
                if args.box:
                    reached, violations, n = one_box_run(
                        kernel, bound_name, 1000 * rep + 1, args.budget
                    )
                else:
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
        name = "stopping_box_python.csv" if args.box else "stopping_python.csv"
        with open(args.out / name, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
