"""Tight, fast confidence bounds for kernel bandits and sequential kernel regression.

A Python interface to the Rust crate ``kernel-bandits``. You observe a function f through noisy
evaluations; a bound (``Dmm``, ``Cmm``, ...) gives, at any batch of points, the posterior mean
and a lower and an upper bound on f that hold at every round at once with probability 1 − δ,
when the noise is σ-sub-Gaussian and ‖f‖_H ≤ B. A ``UcbAgent`` plays the arm with the largest
upper bound.

>>> import numpy as np
>>> import kernel_bandits as kb
>>> kernel = kb.Matern(nu=2.5, lengthscale=0.5)
>>> agent = kb.UcbAgent(kb.Dmm(kernel, sigma=0.1, norm_bound=10.0, delta=0.01))
>>> arms = np.array([[0.1, 0.2], [0.7, 0.4], [0.5, 0.9]])
>>> i = agent.select(arms)            # index of the arm with the largest UCB
>>> agent.update(arms[i], 0.8)        # the reward you observed
>>> mean, lcb, ucb = agent.bounds(arms)
>>> bool(np.all(lcb <= ucb))
True

Papers: Flynn & Reeb (2024), Tighter confidence bounds for sequential kernel regression;
Calandriello et al. (2019), Gaussian process optimization with adaptive sketching; Zenati et
al. (2022), Efficient kernel UCB for contextual bandits; Iwazaki & Takeno (2025), Near-optimal
algorithm for non-stationary kernelized bandits.
"""

from ._core import (
    AdaptiveNorm,
    Amm,
    ArmSetError,
    Ay,
    Bkb,
    Bound,
    BoundGradient,
    BoxDomain,
    Certificate,
    Choice,
    Cmm,
    ContextualProblem,
    Diagnostics,
    DimensionError,
    Dmm,
    DriftingProblem,
    EkUcb,
    Fit,
    FittedKernel,
    Igp,
    InvalidParameterError,
    Kernel,
    KernelBanditsError,
    KUcb,
    LikelihoodGradient,
    Linear,
    Matern,
    MisspecifiedError,
    NoArmsError,
    NoiseEstimate,
    NonFiniteError,
    NormDoubling,
    NotPendingError,
    NumericalError,
    OptimiseResult,
    RandomAgent,
    Rbf,
    Recommendation,
    RegretTrace,
    ReplicateEstimate,
    ResidualEstimate,
    Restarting,
    Round,
    RPerp,
    SlidingWindow,
    SnapshotError,
    SyntheticProblem,
    UcbAgent,
    UnsupportedError,
    __version__,
    bound_names,
    estimate_noise,
    fit_hyperparameters,
    log_marginal_likelihood,
    log_marginal_likelihood_gradient,
    make_bound,
    maximise,
    paper_defaults,
)
from ._values import BoundValues, MisspecificationWarning, PendingWarning

__all__ = [
    "AdaptiveNorm",
    "Amm",
    "ArmSetError",
    "Ay",
    "Bkb",
    "Bound",
    "BoundGradient",
    "BoundValues",
    "BoxDomain",
    "Certificate",
    "Choice",
    "Cmm",
    "ContextualProblem",
    "Diagnostics",
    "DimensionError",
    "Dmm",
    "DriftingProblem",
    "EkUcb",
    "Fit",
    "FittedKernel",
    "Igp",
    "InvalidParameterError",
    "Kernel",
    "KernelBanditsError",
    "KUcb",
    "LikelihoodGradient",
    "Linear",
    "Matern",
    "MisspecificationWarning",
    "MisspecifiedError",
    "NoArmsError",
    "NoiseEstimate",
    "NonFiniteError",
    "NormDoubling",
    "NotPendingError",
    "NumericalError",
    "PendingWarning",
    "OptimiseResult",
    "RandomAgent",
    "Rbf",
    "Recommendation",
    "RegretTrace",
    "ReplicateEstimate",
    "ResidualEstimate",
    "Restarting",
    "Round",
    "RPerp",
    "SlidingWindow",
    "SnapshotError",
    "SyntheticProblem",
    "UcbAgent",
    "UnsupportedError",
    "__version__",
    "bound_names",
    "estimate_noise",
    "fit_hyperparameters",
    "log_marginal_likelihood",
    "log_marginal_likelihood_gradient",
    "make_bound",
    "maximise",
    "paper_defaults",
]
