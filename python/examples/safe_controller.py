"""Tune a controller without ever overshooting: SafeOpt with valid bounds (`kb.SafeAgent`).

A motor positions a load: J θ'' = −b θ' + u, with a PD controller u = Kp (r − θ) − Kd θ'
saturated at |u| ≤ u_max, and a unit step r = 1. Each experiment runs one pair of gains and
measures, with noise,

- the objective f = −ln ISE, ISE = ∫₀⁶ (r − θ)² dt (larger is better: fast, accurate
  tracking), simulated with the saturation;
- the constraint g = ln ζ, ζ = (b + Kd) / (2 √(J Kp)) the damping ratio of the loop (as a
  step test identifies it): safe means ζ ≥ 1, no oscillation.

Aggressive gains track best, so the best safe controller sits on the constraint's edge, far
from the conservative gains one starts from (Kp ≤ 2, Kd ≥ 10: slow and heavily damped).
`kb.SafeAgent` (SafeOpt: Sui et al. 2015, Alg. 1, without a Lipschitz constant as in
Berkenkamp et al. 2016) evaluates only gains whose constraint lower bound is ≥ 0 and, among
them, the widest potential maximiser or expander. Gains are searched on a log scale, a grid of
40 × 40 in normalised coordinates; f and g have their own Matérn 5/2 kernels (ℓ = 0.15 and 0.3).

What is guaranteed: if ‖g‖_H ≤ B_g for g's kernel and the measurement noise is σ-sub-Gaussian,
then with probability ≥ 1 − δ **no experiment is unsafe, at any round** — the bounds (DMM by
default, Flynn & Reeb 2024, Cor. 4.3) hold at every round at once, so the safe set may grow
from the data without losing the guarantee. The recommendation's gap bounds its regret within
the certified safe set on the objective's event (when ‖f‖_H ≤ B_f). B_f and B_g are
assumptions: here each is about 1.5× the RKHS norm of the minimum-norm interpolant of its
function on the 40 × 40 grid (3.3 for f, 5.6 for g), a check a real plant does not allow; on a
real plant take them from prior knowledge. If the data refute them, `next()` raises
`MisspecifiedError` instead of exploring as if safe.

    python python/examples/safe_controller.py [--evaluations 100] [--bound dmm] [--grid 40]
        [--plot safe_controller.png]

prints the safe set's growth, the number of unsafe experiments (expect 0), and the
recommended gains beside the best safe gains found by brute force on the grid.
"""

import argparse
import time

import numpy as np

import kernel_bandits as kb

SIGMA, DELTA = 0.01, 0.01
NORM_F, NORM_G = 5.0, 8.0
LENGTHSCALE_F, LENGTHSCALE_G = 0.15, 0.3
BOUNDS = {"cmm": kb.Cmm, "dmm": kb.Dmm, "amm": kb.Amm, "ay": kb.Ay, "igp": kb.Igp}


def gains(x):
    """Gains from normalised coordinates in [0, 1]²: Kp ∈ [1, 100], Kd ∈ [0.1, 20], log-spaced."""
    x = np.atleast_2d(x)
    return 10.0 ** (2.0 * x[:, 0]), 10.0 ** (-1.0 + np.log10(200.0) * x[:, 1])


def step_response(kp, kd, inertia=1.0, friction=0.5, u_max=8.0, dt=0.005, horizon=6.0):
    """ISE and peak position of the saturated PD loop's step response (explicit Euler, all
    gains at once)."""
    theta, omega = np.zeros_like(kp), np.zeros_like(kp)
    ise, peak = np.zeros_like(kp), np.zeros_like(kp)
    for _ in range(int(round(horizon / dt))):
        u = np.clip(kp * (1.0 - theta) - kd * omega, -u_max, u_max)
        omega = omega + dt * (-friction * omega + u) / inertia
        theta = theta + dt * omega
        ise += dt * (1.0 - theta) ** 2
        peak = np.maximum(peak, theta)
    return ise, peak


def objective_and_constraint(x, inertia=1.0, friction=0.5):
    """The noise-free f = −ln ISE and g = ln ζ at the normalised gains x (rows)."""
    kp, kd = gains(x)
    ise, _ = step_response(kp, kd, inertia, friction)
    zeta = (friction + kd) / (2.0 * np.sqrt(inertia * kp))
    return -np.log(ise), np.log(zeta)


def main(evaluations=100, bound="dmm", grid=40, plot=None, seed=0):
    s = np.linspace(0.0, 1.0, grid)
    candidates = np.array([[a, b] for a in s for b in s])
    f_true, g_true = objective_and_constraint(candidates)
    # The seed: conservative gains known to be safe, Kp ≤ 2 and Kd ≥ 10 (slow, well damped).
    kp_all, kd_all = gains(candidates)
    seed_set = np.flatnonzero((kp_all <= 2.0) & (kd_all >= 10.0))
    assert (g_true[seed_set] >= 0.0).all(), "the seed must be safe"
    safe_true = g_true >= 0.0

    make = BOUNDS[bound]
    extra = {"eta": 2.0 / evaluations} if bound == "igp" else {}  # IGP-UCB's η = 2/T
    agent = kb.SafeAgent(
        make(kb.Matern(nu=2.5, lengthscale=LENGTHSCALE_F), sigma=SIGMA, norm_bound=NORM_F, delta=DELTA, **extra),
        [make(kb.Matern(nu=2.5, lengthscale=LENGTHSCALE_G), sigma=SIGMA, norm_bound=NORM_G, delta=DELTA, **extra)],
        [0.0],
        candidates,
        seed=seed_set.tolist(),
    )
    noise = np.random.default_rng(seed)
    unsafe, history, began = 0, [], time.perf_counter()
    for t in range(1, evaluations + 1):
        choice = agent.next()
        j = choice.index
        unsafe += int(not safe_true[j])
        agent.update(
            j,
            f_true[j] + SIGMA * noise.standard_normal(),
            g_true[j] + SIGMA * noise.standard_normal(),
        )
        certified = len(agent.safe_set)
        history.append(certified)
        if t in (1, 10, 20, 40) or t == evaluations:
            print(
                f"after {t:3d} experiments: {certified:4d} of {safe_true.sum()} safe gain pairs "
                f"certified ({choice.role} chosen, width {choice.width:.3f})"
            )
    seconds = time.perf_counter() - began

    rec = agent.recommend()
    kp, kd = gains(rec["x"])
    best = int(np.flatnonzero(safe_true)[np.argmax(f_true[safe_true])])
    kp_best, kd_best = gains(candidates[best])
    print(f"unsafe experiments: {unsafe} of {evaluations}")
    print(
        f"recommended Kp = {kp[0]:.1f}, Kd = {kd[0]:.2f}: ISE {np.exp(-f_true[rec['index']]):.4f}, "
        f"certified gap {rec['gap']:.3f} in −ln ISE"
    )
    print(
        f"best safe on the grid (brute force): Kp = {kp_best[0]:.1f}, Kd = {kd_best[0]:.2f}: "
        f"ISE {np.exp(-f_true[best]):.4f}"
    )
    print(f"{bound}: {1e3 * seconds / evaluations:.1f} ms per experiment for the agent")
    if plot:
        draw(plot, candidates, grid, safe_true, agent, rec, best)
    return {
        "unsafe": unsafe,
        "certified": history,
        "certified_safe_true": bool(safe_true[agent.safe_set].all()),
        "regret": float(f_true[best] - f_true[rec["index"]]),
        # What the gap bounds: the regret within the certified safe set.
        "regret_in_certified": float(f_true[agent.safe_set].max() - f_true[rec["index"]]),
        "gap": float(rec["gap"]),
    }


def draw(path, candidates, grid, safe_true, agent, rec, best):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    certified = np.zeros(len(candidates), dtype=bool)
    certified[agent.safe_set] = True
    shade = safe_true.astype(float) + certified.astype(float)
    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.imshow(
        shade.reshape(grid, grid).T, origin="lower", extent=(0, 1, 0, 1), cmap="Greens", vmin=0, vmax=2
    )
    ax.plot(*candidates[rec["index"]], "r*", markersize=12, label="recommended")
    ax.plot(*candidates[best], "kx", markersize=9, label="best safe (brute force)")
    ax.set_xlabel("log10 Kp / 2")
    ax.set_ylabel("(log10 Kd + 1) / log10 200")
    ax.set_title("safe (light) and certified safe (dark)")
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--evaluations", type=int, default=100)
    parser.add_argument("--bound", choices=sorted(BOUNDS), default="dmm")
    parser.add_argument("--grid", type=int, default=40)
    parser.add_argument("--plot")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.evaluations, args.bound, args.grid, args.plot, args.seed)
