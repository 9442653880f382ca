"""The exact CMM-UCB in extended precision, independent of the Rust crate.

Flynn & Reeb (2024), Thm 4.4 and 4.5 (Eq. 12): the largest f(x) over the confidence set
{f : ||f_t - y_t|| <= R_t, ||f||_H <= B} equals min over a > 0 of

    U_a(x) = mu_a(x) + sqrt(Rtilde_a^2 * rho_a^2(x) / a),   Rtilde_a^2 = R_t^2 + a B^2 - a q_a,

when the set has an interior point, and every U_a bounds it from above (weak duality). The
radius is the martingale mixture's (Eq. 8): R_t^2 = a0 q_a0 + sigma^2 ln det(I + K/a0)
+ 2 sigma^2 ln(1/delta), a0 = sigma^2 / c.

Everything here is computed with mpmath at 60 significant digits from the inputs as given
(binary64 numbers are exact in mpmath), through the eigendecomposition of the kernel matrix
(``mpmath.eigsy``), so that each a costs O(t). The kernel matrix is exact to that precision,
which is what makes this a reference on near-singular data, where binary64 kernel values
already move the answer (two inputs 1e-7 apart have an eigenvalue of 4e-14 that a binary64
kernel value gets to about 1%). The minimum over a is found on a grid of ln a over [-120, 60]
(a from 8e-53 to 1e26) with step 1, its two lowest local minima refined by golden-section
search between their grid neighbours; the limit a -> infinity (B sqrt(k(x, x))) is included.
Because every U_a is an upper bound, the value returned can only be above the exact maximum,
never below it: a binary64 bound below it is wrong.

It is meant for small data (a few observations).
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

import mpmath
from mpmath import mp, mpf

DIGITS = 60
LN_A_GRID = (-120.0, 60.0, 1.0)


def rbf(lengthscale: float) -> Callable[[Sequence[mpf], Sequence[mpf]], mpf]:
    """exp(-|x - x'|^2 / (2 l^2)) (Rasmussen & Williams 2006, Eq. 4.9)."""
    ell = mpf(lengthscale)

    def k(x: Sequence[mpf], z: Sequence[mpf]) -> mpf:
        r2 = sum((a - b) ** 2 for a, b in zip(x, z))
        return mpmath.exp(-r2 / (2 * ell * ell))

    return k


def matern52(lengthscale: float) -> Callable[[Sequence[mpf], Sequence[mpf]], mpf]:
    """(1 + sqrt5 r/l + 5 r^2/(3 l^2)) exp(-sqrt5 r/l) (Rasmussen & Williams 2006, Eq. 4.17)."""
    ell = mpf(lengthscale)

    def k(x: Sequence[mpf], z: Sequence[mpf]) -> mpf:
        r = mpmath.sqrt(sum((a - b) ** 2 for a, b in zip(x, z)))
        s = mpmath.sqrt(5) * r / ell
        return (1 + s + s * s / 3) * mpmath.exp(-s)

    return k


class ExactCmm:
    """The exact dual of the CMM confidence set for fixed data, in extended precision."""

    def __init__(
        self,
        kernel: Callable[[Sequence[mpf], Sequence[mpf]], mpf],
        xs: Sequence[Sequence[float]],
        ys: Sequence[float],
        *,
        sigma: float,
        norm_bound: float,
        delta: float,
        scale: float,
    ) -> None:
        mp.dps = DIGITS
        self.kernel = kernel
        self.xs = [[mpf(v) for v in x] for x in xs]
        self.y = mpmath.matrix([mpf(v) for v in ys])
        self.t = len(self.xs)
        self.gram = mpmath.matrix(self.t, self.t)
        for i in range(self.t):
            for j in range(self.t):
                self.gram[i, j] = kernel(self.xs[i], self.xs[j])
        self.norm_sq = mpf(norm_bound) ** 2
        sigma_sq = mpf(sigma) ** 2
        a0 = sigma_sq / mpf(scale)
        self._eigen()
        q0 = sum(b * b / (lam + a0) for lam, b in zip(self.values, self.b))
        logdet = sum(mpmath.log(1 + lam / a0) for lam in self.values)
        self.radius_sq = a0 * q0 + sigma_sq * logdet + 2 * sigma_sq * mpmath.log(1 / mpf(delta))

    def _eigen(self) -> None:
        values, vectors = mpmath.eigsy(self.gram)
        self.values = [values[i] for i in range(self.t)]
        self.vectors = vectors
        self.b = [
            sum(vectors[k, i] * self.y[k] for k in range(self.t)) for i in range(self.t)
        ]

    def reduced_radius_sq(self, a: mpf) -> mpf:
        """Rtilde_a^2 = R_t^2 + a B^2 - a q_a."""
        q = sum(b * b / (lam + a) for lam, b in zip(self.values, self.b))
        return self.radius_sq + a * self.norm_sq - a * q

    def smallest_reduced_radius_sq(self) -> mpf:
        """min over a of Rtilde_a^2 (grid and golden refinement): negative only when the
        confidence set is empty (the set is empty iff some Rtilde_a^2 < 0)."""
        return self._minimise(self.reduced_radius_sq)[0]

    def _point(self, x: Sequence[float]) -> Tuple[list, mpf]:
        xm = [mpf(v) for v in x]
        kx = [self.kernel(xi, xm) for xi in self.xs]
        p = [sum(self.vectors[k, i] * kx[k] for k in range(self.t)) for i in range(self.t)]
        return p, self.kernel(xm, xm)

    def dual(self, x: Sequence[float], a: mpf, sign: int = 1) -> mpf:
        """U_a(x) (sign = 1) or -L_a(x) (sign = -1); Rtilde_a^2 < 0 counts as 0."""
        p, prior = self._point(x)
        return self._dual(p, prior, a, sign)

    def ucb(self, x: Sequence[float]) -> Tuple[mpf, mpf]:
        """(min over a of U_a(x), the minimising a; +inf for the limit a -> infinity)."""
        return self.bounds(x)[0]

    def lcb(self, x: Sequence[float]) -> Tuple[mpf, mpf]:
        """(max over a of L_a(x), the maximising a)."""
        return self.bounds(x)[1]

    def bounds(self, x: Sequence[float]) -> Tuple[Tuple[mpf, mpf], Tuple[mpf, mpf]]:
        """((UCB, its a), (LCB, its a)), sharing the grid's sums between the two sides."""
        p, prior = self._point(x)
        lo, hi, step = LN_A_GRID
        logs = [mpf(lo) + k * mpf(step) for k in range(int(round((hi - lo) / step)) + 1)]
        parts = [self._parts(p, prior, mpmath.exp(s)) for s in logs]
        upper = self._refine(
            lambda a: self._dual(p, prior, a, 1), logs, [m + r for m, r in parts], prior
        )
        lower = self._refine(
            lambda a: self._dual(p, prior, a, -1), logs, [r - m for m, r in parts], prior
        )
        return upper, (-lower[0], lower[1])

    def _parts(self, p: list, prior: mpf, a: mpf) -> Tuple[mpf, mpf]:
        """(mu_a(x), sqrt(Rtilde_a^2 rho_a^2 / a)), Rtilde_a^2 < 0 counting as 0."""
        mean = sum(pi * b / (lam + a) for pi, b, lam in zip(p, self.b, self.values))
        variance = prior - sum(pi * pi / (lam + a) for pi, lam in zip(p, self.values))
        radius = self.reduced_radius_sq(a)
        return mean, mpmath.sqrt(max(radius, 0) * max(variance, 0) / a)

    def _dual(self, p: list, prior: mpf, a: mpf, sign: int) -> mpf:
        mean, spread = self._parts(p, prior, a)
        return sign * mean + spread

    def _minimise(self, f: Callable[[mpf], mpf]) -> Tuple[mpf, mpf]:
        lo, hi, step = LN_A_GRID
        logs = [mpf(lo) + k * mpf(step) for k in range(int(round((hi - lo) / step)) + 1)]
        return self._refine(f, logs, [f(mpmath.exp(s)) for s in logs], None)

    def _refine(
        self,
        f: Callable[[mpf], mpf],
        logs: List[mpf],
        values: List[mpf],
        prior: Optional[mpf],
    ) -> Tuple[mpf, mpf]:
        """The lowest of the grid's values, its two lowest local minima refined by
        golden-section search between their grid neighbours (80 steps shrink a bracket by
        4e-17: the value, flat at a minimum, is then exact far below binary64's resolution),
        and the limit a -> infinity, B sqrt(k(x, x)), when `prior` is given."""
        n = len(values)
        minima = [
            k
            for k in range(n)
            if (k == 0 or values[k] <= values[k - 1]) and (k == n - 1 or values[k] <= values[k + 1])
        ]
        minima.sort(key=lambda k: values[k])
        best, where = min((values[k], mpmath.exp(logs[k])) for k in range(n))
        g = (mpmath.sqrt(5) - 1) / 2
        for k in minima[:2]:
            left, right = logs[max(k - 1, 0)], logs[min(k + 1, n - 1)]
            c, d = right - g * (right - left), left + g * (right - left)
            fc, fd = f(mpmath.exp(c)), f(mpmath.exp(d))
            for _ in range(80):
                if fc < fd:
                    right, d, fd = d, c, fc
                    c = right - g * (right - left)
                    fc = f(mpmath.exp(c))
                else:
                    left, c, fc = c, d, fd
                    d = left + g * (right - left)
                    fd = f(mpmath.exp(d))
            for value, s in ((fc, c), (fd, d)):
                if value < best:
                    best, where = value, mpmath.exp(s)
        if prior is not None:
            limit = mpmath.sqrt(self.norm_sq * prior)
            if limit < best:
                best, where = limit, mpf("inf")
        return best, where
