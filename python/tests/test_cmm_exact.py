"""CMM-UCB, DMM-UCB and AMM-UCB against the exact bound in extended precision, on
near-singular data.

The reference (``exact_cmm.py``, mpmath at 60 digits) computes min over a of the dual U_a(x)
from the exact kernel matrix: an upper bound on the exact maximum of f(x) over the confidence
set, equal to it when the set has an interior point (Flynn & Reeb 2024, Thm 4.5). A bound the
crate returns below it is invalid (DMM and AMM bound the same maximum by U_a at a few a).
The cases are where binary64 arithmetic is weakest: clusters of inputs 1e-9..1e-5 apart whose
targets disagree by far more than the noise, exact duplicates, and queries on, between and
next to the clustered inputs. The references are computed once per case and data length and
shared by the three bounds.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pytest

import kernel_bandits as kb

mpmath = pytest.importorskip("mpmath")

from exact_cmm import ExactCmm, matern52, rbf  # noqa: E402


def _disagreeing_pair(x: float, h: float, sigma: float) -> Dict[str, Any]:
    """Two inputs h apart with y = +-1 (RBF, l = 0.5, B = 10, delta = 0.1, c = 1)."""
    return dict(
        kernel="rbf",
        lengthscale=0.5,
        xs=[x, x + h],
        ys=[1.0, -1.0],
        sigma=sigma,
        norm_bound=10.0,
        delta=0.1,
        scale=1.0,
    )


def _cases() -> Iterator[Tuple[str, Dict[str, Any]]]:
    # The witness that found the defect: 1e-7 apart, sigma = 1e-4.
    yield "witness", _disagreeing_pair(0.5, 1e-7, 1e-4)
    # 1e-8 apart, sigma = 1e-5: the exact set is empty after both observations (the data
    # refute sigma), so only the first observation's queries and the emptiness report count.
    yield "nearly-empty", _disagreeing_pair(0.25, 1e-8, 1e-5)
    for kernel, lengthscale in (("rbf", 0.5), ("matern52", 0.3)):
        for h in (1e-9, 1e-7, 1e-5):
            for m in (2, 4):
                for spread, sigma in ((1.0, 1e-3), (1e-2, 1e-4), (3e-4, 1e-4)):
                    xs = [0.3 + k * h for k in range(m)]
                    # Alternating signs, so that the cluster's targets disagree; a far
                    # observation so that the cluster is not all of the data.
                    ys = [spread * (1.0 if k % 2 == 0 else -1.0) for k in range(m)]
                    yield f"{kernel}-h{h:g}-m{m}-s{spread:g}", dict(
                        kernel=kernel,
                        lengthscale=lengthscale,
                        xs=xs + [0.8],
                        ys=ys + [0.1],
                        sigma=sigma,
                        norm_bound=10.0,
                        delta=0.1,
                        scale=1.0,
                    )
    # Exact duplicates with disagreeing targets, and a duplicate next to a near-duplicate.
    yield "duplicates", dict(
        kernel="matern52",
        lengthscale=0.3,
        xs=[0.4, 0.4, 0.4, 0.7],
        ys=[0.5, -0.5, 0.2, 0.0],
        sigma=1e-3,
        norm_bound=5.0,
        delta=0.05,
        scale=2.0,
    )
    yield "duplicate-and-neighbour", dict(
        kernel="rbf",
        lengthscale=0.2,
        xs=[0.6, 0.6, 0.6 + 3e-8],
        ys=[0.3, -0.3, 0.9],
        sigma=1e-3,
        norm_bound=10.0,
        delta=0.01,
        scale=1.0,
    )


def _queries(xs: List[float]) -> List[float]:
    """On each clustered input, between the first two, next to the first at 1e-9..1e-3, and
    away from the data."""
    first = xs[0]
    out = sorted(set(xs))
    if len(xs) > 1 and xs[1] != xs[0]:
        out.append(0.5 * (xs[0] + xs[1]))
    out += [first - d for d in (1e-9, 1e-7, 1e-5, 1e-3)]
    out.append(0.05)
    return out


CASES = list(_cases())

# The cases where CMM-UCB, as it stands, returns a bound on the wrong side of the exact one:
# the known defect of `Cmm`'s module documentation ("Known defect"). Strict, so that a repair
# turns each into a failure until its mark is removed.
CMM_KNOWN_INVALID = {
    "witness",
    "duplicate-and-neighbour",
    *(f"rbf-h1e-09-m{m}-s{s}" for m in (2, 4) for s in ("1", "0.01")),
    *(
        f"rbf-h{h}-m{m}-s{s}"
        for h in ("1e-07", "1e-05")
        for m in (2, 4)
        for s in ("1", "0.01", "0.0003")
    ),
    *(f"matern52-h1e-09-m{m}-s{s}" for m in (2, 4) for s in ("1", "0.01")),
    *(f"matern52-h1e-07-m{m}-s{s}" for m in (2, 4) for s in ("1", "0.01", "0.0003")),
    "matern52-h1e-05-m2-s0.0003",
    *(f"matern52-h1e-05-m4-s{s}" for s in ("1", "0.01", "0.0003")),
}

# DMM-UCB failed three of the same cases (found by this test: its R~_a^2 = R_t^2 + aB^2 - a q_a,
# a small difference of Cholesky-based terms, fell below the exact one, by 15% of the width at
# the witness) until its R~_a^2 allowed for their rounding (`rounded_radius_sq` in
# src/bound/mixture.rs); it now passes all 40.
DMM_KNOWN_INVALID: set = set()

KINDS = ("cmm", "dmm", "amm")


def _kernels(name: str, lengthscale: float) -> Tuple[Any, Any]:
    if name == "rbf":
        return kb.Rbf(lengthscale), rbf(lengthscale)
    return kb.Matern(nu=2.5, lengthscale=lengthscale), matern52(lengthscale)


KNOWN_INVALID = {("cmm", n) for n in CMM_KNOWN_INVALID} | {("dmm", n) for n in DMM_KNOWN_INVALID}


def _params() -> List[Any]:
    out = []
    for kind in KINDS:
        for name, case in CASES:
            marks = []
            if (kind, name) in KNOWN_INVALID:
                marks.append(pytest.mark.xfail(strict=True, reason="a known defect (CHANGELOG)"))
            out.append(pytest.param(kind, name, case, marks=marks, id=f"{kind}-{name}"))
    return out


_REFERENCES: Dict[Tuple[str, int], Any] = {}


def _reference(
    name: str, case: Dict[str, Any], n: int
) -> Tuple[bool, Dict[float, Tuple[float, float]]]:
    """(whether the exact set is empty, {query: (exact UCB, exact LCB)}) after n observations."""
    key = (name, n)
    if key not in _REFERENCES:
        _, exact_kernel = _kernels(case["kernel"], case["lengthscale"])
        params = {k: case[k] for k in ("sigma", "norm_bound", "delta", "scale")}
        xs, ys = case["xs"][:n], case["ys"][:n]
        exact = ExactCmm(exact_kernel, [[x] for x in xs], ys, **params)
        empty = bool(exact.smallest_reduced_radius_sq() < 0)
        values: Dict[float, Tuple[float, float]] = {}
        if not empty:
            for q in _queries(xs):
                (u, _), (l, _) = exact.bounds([q])
                values[q] = (float(u), float(l))
        _REFERENCES[key] = (empty, values)
    return _REFERENCES[key]


def _bound(kind: str, kernel: Any, params: Dict[str, Any]) -> Any:
    return {"cmm": kb.Cmm, "dmm": kb.Dmm, "amm": kb.Amm}[kind](kernel, **params)


@pytest.mark.parametrize("kind,name,case", _params())
def test_never_inside_the_exact_bound(kind: str, name: str, case: Dict[str, Any]) -> None:
    """CMM-UCB, DMM-UCB and AMM-UCB each bound the maximum of f(x) over the same confidence set
    (DMM and AMM by dual values U_a at some a: weak duality), so none may be below the exact
    maximum, nor its LCB above the exact minimum."""
    crate_kernel, _ = _kernels(case["kernel"], case["lengthscale"])
    params = {k: case[k] for k in ("sigma", "norm_bound", "delta", "scale")}
    bound = _bound(kind, crate_kernel, params)
    xs, ys = case["xs"], case["ys"]
    # Queried after every observation, so that the bordered updates of the eigendecomposition
    # (CMM) and the factors' appended rows are checked as well as the first ones.
    for n in range(1, len(xs) + 1):
        bound.observe(np.array([xs[n - 1]]), ys[n - 1])
        empty, reference = _reference(name, case, n)
        # An empty set is reported only when the exact set is empty.
        if kind == "cmm" and bound.diagnostics().empty_set:
            assert empty, f"{kind}, {name}, n = {n}: reported empty, exact min R~^2 > 0"
        if empty:
            continue  # every value bounds an empty set
        queries = list(reference)
        bounds = bound.bounds(np.array(queries)[:, None])
        for q, ucb, lcb in zip(queries, bounds.ucb, bounds.lcb):
            u, l = reference[q]
            width = u - l
            # The reference can only be above the exact maximum (every U_a bounds it), so
            # this asks no more than validity; 1e-12 of the width covers the conversion of the
            # reference to binary64.
            slack = 1e-12 * max(width, abs(u), abs(l))
            assert ucb >= u - slack, (
                f"{kind}, {name}, n = {n}, x = {q!r}: UCB {ucb!r} below the exact {u!r} "
                f"by {(u - ucb) / width:.3g} of the width"
            )
            assert lcb <= l + slack, (
                f"{kind}, {name}, n = {n}, x = {q!r}: LCB {lcb!r} above the exact {l!r} "
                f"by {(lcb - l) / width:.3g} of the width"
            )
            assert math.isfinite(ucb) and math.isfinite(lcb)
