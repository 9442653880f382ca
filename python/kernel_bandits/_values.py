"""What ``Bound.bounds`` returns, and the warnings of the package.

Kept in Python so that the values are a real tuple: ``mean, lcb, ucb = bound.bounds(x)``,
``bound.bounds(x)[2]`` and ``zip(*...)`` work as they did when ``bounds`` returned a plain
3-tuple, and the diagnosis rides along as attributes.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import numpy.typing as npt

__all__ = ["BoundValues", "MisspecificationWarning", "PendingWarning"]


class MisspecificationWarning(UserWarning):
    """The data refute the assumptions of a bound: LCB > UCB at some point, or its confidence set
    is empty (no function with ‖f‖_H ≤ B explains the data within the noise radius of σ, Flynn &
    Reeb 2024 Lemma 4.2). The values are then not confidence bounds. Emitted by ``bounds`` (of a
    bound or an agent) and by an agent's ``select``, ``select_in`` and ``select_batch``; the
    remedies are a larger ``norm_bound`` or ``sigma``, another kernel or length-scale, or
    ``AdaptiveNorm``, which doubles B whenever the data refute it. Turn it into an error with
    ``warnings.simplefilter("error", kb.MisspecificationWarning)``, or use
    ``UcbAgent(..., misspecification="refuse")``."""


class PendingWarning(UserWarning):
    """An agent's ``update`` resolved none of its pending evaluations although some are pending:
    the point is not one handed out (bitwise equal, or within the relative tolerance 1e-5 in
    every coordinate), so the pending one stays pending. Pass the very point handed out, or
    ``withdraw`` the pending one."""


FloatArray = npt.NDArray[np.float64]


class BoundValues(Tuple[FloatArray, FloatArray, FloatArray]):
    """The mean, the lower and the upper confidence bounds at the points asked, as the tuple
    ``(mean, lcb, ucb)`` of float64 arrays, with the diagnosis beside them.

    ``crossed`` holds the indices of the points where LCB > UCB (or either is NaN), ``empty_set``
    whether the bound's diagnostics show its confidence set empty (see ``Bound.diagnostics``),
    and ``misspecified`` whether either is the case: the data refute σ, B or the kernel, and the
    values are not confidence bounds (``bounds`` then also warns, ``MisspecificationWarning``).
    """

    _diagnosis: tuple[npt.NDArray[np.intp], bool]

    def __new__(
        cls,
        mean: FloatArray,
        lcb: FloatArray,
        ucb: FloatArray,
        crossed: Any = (),
        empty_set: bool = False,
    ) -> BoundValues:
        self = super().__new__(cls, (mean, lcb, ucb))
        self._diagnosis = (np.asarray(crossed, dtype=np.intp).reshape(-1), bool(empty_set))
        return self

    @property
    def mean(self) -> FloatArray:
        """The point estimate at each point."""
        return self[0]

    @property
    def lcb(self) -> FloatArray:
        """The lower confidence bound at each point."""
        return self[1]

    @property
    def ucb(self) -> FloatArray:
        """The upper confidence bound at each point."""
        return self[2]

    @property
    def crossed(self) -> npt.NDArray[np.intp]:
        """The indices of the points where LCB > UCB (or either is NaN), in order."""
        return self._diagnosis[0]

    @property
    def empty_set(self) -> bool:
        """Whether the bound's diagnostics show its confidence set empty (``Diagnostics``)."""
        return self._diagnosis[1]

    @property
    def misspecified(self) -> bool:
        """Whether the data refute the assumptions: crossed bounds or an empty confidence set."""
        return self.empty_set or self.crossed.size > 0

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self[0], self[1], self[2], self.crossed, self.empty_set)

    def __repr__(self) -> str:
        return (
            f"BoundValues(mean={self[0]!r}, lcb={self[1]!r}, ucb={self[2]!r}, "
            f"crossed={self.crossed.tolist()!r}, empty_set={self.empty_set!r})"
        )
