"""Flynn & Reeb (2024) Figure 1 from Python: the confidence bands of every martingale-mixture
bound and the two classical ones, over [0, 1], for a function in the RKHS of a Matérn 3/2 kernel.

The function is drawn as in the paper's §7 with d = 1: f = b Σᵢ wᵢ k(·, zᵢ) with 20 centres and
‖f‖_H = B = 10 exactly; 30 noisy observations at uniform random points, noise N(0, σ²) with
σ = 0.1. The bounds use the true σ and B, δ = 0.01 and the paper's choices for a horizon
T = 1000 (c = T^{−d/(2d+2ν)}, λ = σ²/c, η = 2/T). Expect CMM ≤ DMM ≤ AMM ≤ AY, IGP in width.

    python python/examples/figure1_bands.py [OUT_DIR]

prints the width table and writes OUT_DIR/figure1_bands.csv and, when matplotlib is installed
(`pip install matplotlib`; it is not a dependency of the package), OUT_DIR/figure1_bands.png.
"""

import sys
from pathlib import Path

import numpy as np

import kernel_bandits as kb

SIGMA, NORM, DELTA, HORIZON, OBSERVATIONS = 0.1, 10.0, 0.01, 1000, 30


def bands(seed=0, grid_points=201):
    kernel = kb.Matern(nu=1.5, lengthscale=0.5)
    problem = kb.SyntheticProblem(kernel, dims=1, norm_bound=NORM, noise_sd=SIGMA, seed=seed)
    params = dict(kb.paper_defaults(kernel, 1, HORIZON), sigma=SIGMA, norm_bound=NORM, delta=DELTA)
    bounds = {
        "CMM-UCB": kb.Cmm(kernel, **params),
        "DMM-UCB": kb.Dmm(kernel, **params),
        "AMM-UCB": kb.Amm(kernel, **params),
        "AY-GP-UCB": kb.Ay(kernel, **params),
        "IGP-UCB": kb.Igp(kernel, **params),
    }
    rng = np.random.default_rng(seed)
    x_obs = rng.random((OBSERVATIONS, 1))
    y_obs = problem.value(x_obs) + SIGMA * rng.standard_normal(OBSERVATIONS)
    for bound in bounds.values():
        bound.observe_many(x_obs, y_obs)
    grid = np.linspace(0.0, 1.0, grid_points)[:, None]
    truth = problem.value(grid)
    return grid[:, 0], truth, x_obs[:, 0], y_obs, {name: b.bounds(grid) for name, b in bounds.items()}


def main(out_dir="results/python-figure1"):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    x, truth, x_obs, y_obs, results = bands()
    print(f"Confidence bands on [0, 1]: Matérn 3/2, ℓ = 0.5, ‖f‖ = B = {NORM}, σ = {SIGMA}, "
          f"δ = {DELTA}, {OBSERVATIONS} observations\n")
    print("| bound | mean width | max width | f inside on the grid |\n|---|---:|---:|---|")
    for name, (_, lcb, ucb) in results.items():
        width = ucb - lcb
        inside = bool(np.all((lcb <= truth) & (truth <= ucb)))
        print(f"| {name} | {width.mean():.3f} | {width.max():.3f} | {'yes' if inside else 'no'} |")

    columns = [x, truth] + [v for (_, lcb, ucb) in results.values() for v in (lcb, ucb)]
    header = "x,f," + ",".join(f"{n.split('-')[0].lower()}_lcb,{n.split('-')[0].lower()}_ucb" for n in results)
    np.savetxt(out / "figure1_bands.csv", np.column_stack(columns), delimiter=",", header=header, comments="")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: wrote the CSV only")
        return results
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = ["tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple"]
    for (name, (_, lcb, ucb)), colour in zip(results.items(), colours):
        ax.fill_between(x, lcb, ucb, color=colour, alpha=0.12)
        ax.plot(x, ucb, color=colour, lw=1.2, label=name)
        ax.plot(x, lcb, color=colour, lw=1.2)
    ax.plot(x, truth, color="black", lw=1.5, label="f")
    ax.scatter(x_obs, y_obs, color="black", s=12, zorder=3, label="observations")
    lo, hi = truth.min(), truth.max()
    ax.set_ylim(lo - 1.5 * (hi - lo), hi + 1.5 * (hi - lo))
    ax.set_xlabel("x")
    ax.set_title("Confidence bands (Flynn & Reeb 2024, Figure 1): Matérn 3/2, ℓ = 0.5")
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "figure1_bands.png", dpi=120)
    print(f"\nwrote {out / 'figure1_bands.png'} and {out / 'figure1_bands.csv'}")
    return results


if __name__ == "__main__":
    main(*sys.argv[1:2])
