#!/usr/bin/env python
"""Time the crate's hyperparameter fit against BoTorch's ``fit_gpytorch_mll`` on the same data.

Data (one seed per n): n points uniform in [0, 1]^3, rescaled so that each coordinate spans
exactly [0, 1] (the crate scales its length-scale prior by the data's extent, BoTorch by the unit
cube: with this rescaling the two priors are the same), targets a GP sample (Matern 5/2,
lengthscale 0.5, output variance 1) plus N(0, 0.1^2) noise, for n = 100, 300, 1000.

Both sides fit the same model, the maximum a posteriori values of one shared length-scale and
the noise variance of a Matern 5/2 GP on the standardised targets (y - mean)/sd (sd with 1/(n-1))
under BoTorch's priors: lengthscale ~ LogNormal(sqrt(2) + ln(3)/2, sqrt(3)) (Hvarfner et al.
2024), noise variance ~ LogNormal(-4, 1), output variance 1 in standardised units (BoTorch's
SingleTaskGP without a ScaleKernel; the crate with variance=sd(y)^2, i.e. 1 after standardising).

* botorch: ``SingleTaskGP(X, Y, covar_module=MaternKernel(nu=2.5, lengthscale_prior=...),
  mean_module=ZeroMean(), outcome_transform=Standardize(m=1))`` (zero mean on the standardised
  targets, as the crate; the default ConstantMean is one more parameter), ``fit_gpytorch_mll(ExactMarginalLogLikelihood(...))``,
  one torch thread, float64;
* crate: ``kernel_bandits.fit_hyperparameters(X, y, variance=sd(y)**2)`` (MAP is the default).

Each side's log posterior is evaluated at its own optimum: BoTorch's as
``ExactMarginalLogLikelihood(...) * n`` in train mode (log likelihood of the standardised
targets plus the log prior densities), the crate's as ``Fit.log_posterior`` (the same sum).
Times are medians of --reps runs, the two sides interleaved.

Usage (the crate's Python package importable, e.g. PYTHONPATH at an unpacked wheel):
    python python/bench/fit_vs_botorch.py [--n 100 300 1000] [--reps 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np


def data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    x = (x - x.min(0)) / (x.max(0) - x.min(0))
    r = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)) / 0.5
    s = math.sqrt(5.0) * r
    k = (1.0 + s + s * s / 3.0) * np.exp(-s) + 1e-10 * np.eye(n)
    f = np.linalg.cholesky(k) @ rng.standard_normal(n)
    y = f + 0.1 * rng.standard_normal(n)
    return x, y


def fit_botorch(x, y):
    import torch
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.kernels import MaternKernel
    from gpytorch.means import ZeroMean
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from gpytorch.priors import LogNormalPrior

    X = torch.tensor(x, dtype=torch.float64)
    Y = torch.tensor(y, dtype=torch.float64).unsqueeze(-1)
    d = X.shape[-1]
    covar = MaternKernel(
        nu=2.5,
        lengthscale_prior=LogNormalPrior(math.sqrt(2) + math.log(d) / 2, math.sqrt(3)),
    )
    start = time.perf_counter()
    # A zero mean on the standardised targets, as the crate's model (SingleTaskGP's default
    # learns a constant mean, one more parameter, and reaches a higher likelihood by it).
    model = SingleTaskGP(
        X, Y, covar_module=covar, mean_module=ZeroMean(), outcome_transform=Standardize(m=1)
    )
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll)
    elapsed = time.perf_counter() - start
    model.train()
    with torch.no_grad():
        out = model(*model.train_inputs)
        value = mll(out, model.train_targets).item() * len(y)
        # The log marginal likelihood alone (no prior) of the standardised targets.
        lml = model.likelihood(out).log_prob(model.train_targets).item()
    ls = model.covar_module.lengthscale.item()
    sd = float(np.std(y, ddof=1))
    sigma = math.sqrt(model.likelihood.noise.item()) * sd
    return elapsed, value, ls, sigma, lml


def fit_crate(x, y):
    import kernel_bandits as kb

    sd = float(np.std(y, ddof=1))
    start = time.perf_counter()
    fit = kb.fit_hyperparameters(x, y, variance=sd * sd)
    elapsed = time.perf_counter() - start
    # Fit.log_likelihood is that of y - mean in the user's units; that of the standardised
    # targets (y - mean)/sd differs by the Jacobian n ln sd.
    lml = fit.log_likelihood + len(y) * math.log(sd)
    return elapsed, fit.log_posterior, float(fit.lengthscales[0]), fit.noise_sd, fit.evaluations, lml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    print(
        "| n | crate s | BoTorch s | ratio | crate log posterior | BoTorch log posterior "
        "| crate log lik. | BoTorch log lik. | crate ℓ, σ | BoTorch ℓ, σ | crate evaluations |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        x, y = data(n, seed=n)
        ours, theirs = [], []
        for _ in range(args.reps):
            a = fit_crate(x, y)
            b = fit_botorch(x, y)
            ours.append(a)
            theirs.append(b)
        t_a = statistics.median(r[0] for r in ours)
        t_b = statistics.median(r[0] for r in theirs)
        a, b = ours[-1], theirs[-1]
        print(
            f"| {n} | {t_a:.3f} | {t_b:.3f} | {t_a / t_b:.2f} | {a[1]:.6f} | {b[1]:.6f} "
            f"| {a[5]:.6f} | {b[4]:.6f} "
            f"| {a[2]:.4f}, {a[3]:.4f} | {b[2]:.4f}, {b[3]:.4f} | {a[4]} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
