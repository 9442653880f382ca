"""Bayesian optimisation over a box: ``maximise`` and what it returns.

The loop is the crate's ``kernel_bandits::optimise`` (Rust); see ``maximise`` for the steps, the
defaults and what is guaranteed. Also available as ``kernel_bandits.maximise``.
"""

from ._core import OptimiseResult, Recommendation, maximise

__all__ = ["OptimiseResult", "Recommendation", "maximise"]
