"""Dense numpy reference of four confidence bounds for sequential kernel regression.

Written independently of the Rust crate, from the papers:

* Flynn & Reeb (2024), "Tighter confidence bounds for sequential kernel regression":
  AMM-UCB (Cor. 4.6), DMM-UCB (Sec. 5.4), the martingale-mixture radius (Eq. 8, Cor. 4.3,
  Lemma C.2), and the restatements of the two older bounds in App. C.2;
* Abbasi-Yadkori (2012), Thm 3.11: AY-GP-UCB;
* Chowdhury & Gopalan (2017), Thm 2: IGP-UCB;
* Rasmussen & Williams (2006), Sec. 4.2: the RBF and Matern kernels.

Everything is recomputed from scratch from the full data set on every call (one dense Cholesky
factorisation of K + aI per regulariser a), with ``numpy.linalg`` only: no incremental updates,
no caching, no scipy. It is meant to be slow and obviously right.

Notation. After t observations x_1..x_t with targets y: K = [k(x_i, x_j)], k_t(x) = [k(x_i, x)].
For a regulariser a > 0:

    mu_a(x)   = k_t(x)^T (K + aI)^-1 y
    rho_a^2(x) = k(x, x) - k_t(x)^T (K + aI)^-1 k_t(x)          (clamped at >= 0)
    q_a       = y^T (K + aI)^-1 y
    ld_a      = ln det(I + K/a) = sum_i 2 ln L_ii - t ln a,  L = chol(K + aI)

With no data: mu = 0, rho^2 = k(x, x), q = 0, ld = 0.

Parameters sigma, B (norm bound), delta, c (scale); a0 = sigma^2 / c.

    R_t^2      = a0 q_a0 + sigma^2 ld_a0 + 2 sigma^2 ln(1/delta)
    Rtilde_a^2 = R_t^2 + a B^2 - a q_a   (for a != a0 enlarged by the crate's bound on its
                                         rounding, _rounded_radius_sq)
    U_a(x) = mu_a(x) + (Rtilde_a / sqrt(a)) rho_a(x),   L_a(x) = mu_a(x) - (Rtilde_a / sqrt(a)) rho_a(x)

At a = a0 the q terms cancel exactly (Lemma C.2): Rtilde_a0^2 = sigma^2 ld_a0 + 2 sigma^2 ln(1/delta)
+ a0 B^2; the reference uses that form there (subtracting a0 q_a0 from a sum containing it would
only add rounding error, catastrophic when q is large, e.g. for targets of size 1e6).

Convention for Rtilde_a^2 < 0 (possible for a != a0 when the data contradict sigma, B or delta:
the two-ellipsoid confidence set is then empty, so every value is vacuously a bound): the radius
is taken as 0 and U_a = L_a = mu_a. This is a convention, not a formula of the paper; it is the
one the Rust crate documents for the same case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

#: DMM-UCB's grid of regularisers, as multiples of a0 (Flynn & Reeb 2024, Sec. 5.4).
DMM_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)


# --------------------------------------------------------------------------------------------
# Kernels (Rasmussen & Williams 2006, Sec. 4.2), unit signal variance: k(x, x) = 1.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefKernel:
    """A stationary kernel: ``kind`` is "rbf" or "matern" (nu in {0.5, 1.5, 2.5})."""

    kind: str
    lengthscale: float
    nu: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("rbf", "matern"):
            raise ValueError(f"unknown kernel kind {self.kind!r}")
        if self.kind == "matern" and self.nu not in (0.5, 1.5, 2.5):
            raise ValueError(f"Matern nu must be 0.5, 1.5 or 2.5, got {self.nu!r}")
        if not (self.lengthscale > 0 and math.isfinite(self.lengthscale)):
            raise ValueError("lengthscale must be finite and positive")

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """The (n, m) matrix [k(X_i, Z_j)] for X of shape (n, d) and Z of shape (m, d)."""
        X = np.asarray(X, dtype=np.float64)
        Z = np.asarray(Z, dtype=np.float64)
        # Differences coordinate by coordinate (not |x|^2 + |z|^2 - 2 x.z, which loses all
        # relative accuracy for nearby points).
        diff = X[:, None, :] - Z[None, :, :]
        r = np.sqrt(np.sum(diff * diff, axis=-1))
        u = r / self.lengthscale
        if self.kind == "rbf":
            return np.exp(-0.5 * u * u)
        if self.nu == 0.5:
            return np.exp(-u)
        if self.nu == 1.5:
            s = math.sqrt(3.0) * u
            return (1.0 + s) * np.exp(-s)
        # nu = 2.5: (1 + sqrt5 r/l + 5 r^2/(3 l^2)) exp(-sqrt5 r/l)
        s = math.sqrt(5.0) * u
        return (1.0 + s + (5.0 / 3.0) * u * u) * np.exp(-s)

    def diag(self, X: np.ndarray) -> np.ndarray:
        """k(x, x) for each row of X: 1 for every kernel here."""
        return np.ones(np.asarray(X).shape[0])


# --------------------------------------------------------------------------------------------
# Posterior quantities at one regulariser.
# --------------------------------------------------------------------------------------------


@dataclass
class Posterior:
    """mu_a, rho_a^2 at the query points, and q_a, ld_a of the data, for one regulariser a."""

    a: float
    mu: np.ndarray
    rho2: np.ndarray
    q: float
    ld: float
    #: k(x_i, x_i) at the observed inputs and y^T y: what DMM's rounding allowance needs.
    kdiag: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ysq: float = 0.0


def _as_2d(X, d: int | None = None) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X.reshape(1, -1) if d is None else X.reshape(-1, d)
    return X


def posterior(kernel: RefKernel, X, y, a: float, Xq, clamp: bool = True) -> Posterior:
    """mu_a, rho_a^2 (clamped at 0 unless clamp=False), q_a and ld_a from scratch (dense
    Cholesky of K + aI)."""
    Xq = _as_2d(Xq)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    kqq = kernel.diag(Xq)
    t = y.shape[0]
    if t == 0:
        return Posterior(a=a, mu=np.zeros(Xq.shape[0]), rho2=kqq.copy(), q=0.0, ld=0.0)
    X = _as_2d(X, Xq.shape[1])
    assert X.shape[0] == t
    K = kernel(X, X)
    L = np.linalg.cholesky(K + a * np.eye(t))  # K + aI = L L^T, L lower triangular
    Kq = kernel(X, Xq)  # (t, m): column j is k_t(xq_j)
    # One solve with L against [y, k_t(xq_1), ..., k_t(xq_m)]:
    #   w = L^-1 y,  V = L^-1 Kq,   q = |w|^2,  mu = V^T w,  rho^2 = k(x,x) - colsum(V^2)
    sol = np.linalg.solve(L, np.column_stack([y, Kq]))
    w = sol[:, 0]
    V = sol[:, 1:]
    q = float(w @ w)
    mu = V.T @ w
    rho2 = kqq - np.sum(V * V, axis=0)
    if clamp:
        rho2 = np.maximum(rho2, 0.0)  # exact rho^2 >= 0; round-off can push it just below
    ld = float(2.0 * np.sum(np.log(np.diag(L))) - t * math.log(a))
    return Posterior(a=a, mu=mu, rho2=rho2, q=q, ld=ld, kdiag=np.diag(K).copy(), ysq=float(y @ y))


def posterior_eigh(kernel: RefKernel, X, y, a: float, Xq) -> Posterior:
    """The same quantities by a second, independent route (eigendecomposition K = U diag(l) U^T),
    used only to check the Cholesky route: mu = p^T diag(1/(l + a)) b, etc., p = U^T k_t(x),
    b = U^T y, ld = sum ln(1 + l_i/a)."""
    Xq = _as_2d(Xq)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    t = y.shape[0]
    if t == 0:
        return Posterior(a=a, mu=np.zeros(Xq.shape[0]), rho2=kernel.diag(Xq), q=0.0, ld=0.0)
    X = _as_2d(X, Xq.shape[1])
    K = kernel(X, X)
    lam, U = np.linalg.eigh(K)
    lam = np.maximum(lam, 0.0)  # K is PSD; round-off may leave tiny negative eigenvalues
    inv = 1.0 / (lam + a)
    P = U.T @ kernel(X, Xq)
    b = U.T @ y
    mu = P.T @ (inv * b)
    rho2 = np.maximum(kernel.diag(Xq) - np.sum(P * P * inv[:, None], axis=0), 0.0)
    q = float(np.sum(b * b * inv))
    ld = float(np.sum(np.log1p(lam / a)))
    return Posterior(a=a, mu=mu, rho2=rho2, q=q, ld=ld, kdiag=np.diag(K).copy(), ysq=float(y @ y))


# --------------------------------------------------------------------------------------------
# Bounds. Each returns (mean, lcb, ucb) as float64 arrays of shape (m,), plus a "scale" array
# (|mean| + |half-width|) that the tests use to state tolerances.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Params:
    sigma: float = 0.1
    norm_bound: float = 10.0
    delta: float = 0.01
    scale: float = 1.0

    @property
    def a0(self) -> float:
        """The mixture regulariser a0 = sigma^2 / c."""
        return self.sigma * self.sigma / self.scale

    @property
    def log_inv_delta(self) -> float:
        return -math.log(self.delta)


@dataclass
class Bounds:
    mean: np.ndarray
    lcb: np.ndarray
    ucb: np.ndarray
    #: |mean| + half-width of the reported interval, elementwise: the magnitude of the terms
    #: whose sum/difference gives lcb and ucb (used by the tests as the error scale).
    scale: np.ndarray


def _radius_sq(p: Params, post0: Posterior, post: Posterior) -> float:
    """Rtilde_a^2 (Flynn & Reeb 2024 Cor. 4.3 with R_t^2 of Eq. 8); post0 is at a0."""
    s2 = p.sigma * p.sigma
    B2 = p.norm_bound * p.norm_bound
    base = s2 * post0.ld + 2.0 * s2 * p.log_inv_delta
    if post.a == post0.a:
        # Lemma C.2: the a0 q_a0 in R_t^2 and the -a0 q_a0 cancel exactly.
        return base + post.a * B2
    if post0.kdiag.size == 0:
        return base + post.a * B2  # no data: nothing to cancel
    return _rounded_radius_sq(p, post0, post)


U = 2.0**-53  # the unit roundoff of binary64


def _gamma(n: float) -> float:
    return n * U / (1.0 - n * U)


def _rounded_radius_sq(p: Params, post0: Posterior, post: Posterior) -> float:
    """DMM's Rtilde_a^2 for a != a0 as the crate forms it: an upper bound on the exact value that
    allows for the rounding of a0 q_a0 - a q_a, a small difference of large terms on
    near-singular data. The bound and its proof are the crate's (``rounded_radius_sq`` in
    src/bound/mixture.rs: the factors' backward error (Higham 2002, Thm 8.5 and 10.3) and an
    assumed kernel accuracy of 128u give ||F|| <= eta_a = (128u + 8 gamma_{t+1}) (tr K + t a);
    q_a is then within e(1 + e) of the computed one, e = eta_a / sqrt(a (a - eta_a)), and
    0 <= a q_a <= y^T y always; ld_a0 moves by at most -t ln(1 - eta_a0/a0) and never exceeds
    sum ln(1 + k(x_i, x_i)/a0)); written out here from the reference's own q, ld and kernel
    values. That the bound is never below the exact value is checked in extended precision
    (test_cmm_exact.py)."""
    s2 = p.sigma * p.sigma
    t = float(post0.kdiag.size)
    kernel_rounding = 128.0 * U
    diagonal = post0.kdiag / (1.0 - kernel_rounding)
    trace = float(np.sum(diagonal)) * (1.0 + _gamma(t))
    ysq = post0.ysq * (1.0 + _gamma(t))

    def interval(a: float, q: float) -> tuple:
        eta = (kernel_rounding + 8.0 * _gamma(t + 1.0)) * (trace + t * a)
        if eta >= a:
            return 0.0, ysq
        e = eta / math.sqrt(a * (a - eta))
        rel = e * (1.0 + e)
        return (
            max(a * q * (1.0 - rel) / (1.0 + _gamma(t + 1.0)), 0.0),
            min(a * q * (1.0 + rel) / (1.0 - _gamma(t + 1.0)), ysq),
        )

    a0, a = post0.a, post.a
    quad0_hi = interval(a0, post0.q)[1]
    quad_lo = interval(a, post.q)[0]
    eta0 = (kernel_rounding + 8.0 * _gamma(t + 1.0)) * (trace + t * a0)
    hadamard = float(np.sum(np.log1p(diagonal / a0))) * (1.0 + _gamma(t + 3.0))
    if eta0 < a0:
        ld_hi = min(
            post0.ld * (1.0 + _gamma(t + 3.0)) + 2.0 * t * U - t * math.log1p(-eta0 / a0), hadamard
        )
    else:
        ld_hi = hadamard
    positive = s2 * ld_hi + 2.0 * s2 * p.log_inv_delta + quad0_hi + a * p.norm_bound**2
    return positive - quad_lo + _gamma(6.0) * (positive + quad_lo)


def _mixture_u_l(p: Params, post0: Posterior, post: Posterior):
    r2 = _radius_sq(p, post0, post)
    radius = math.sqrt(r2) if r2 > 0.0 else 0.0  # empty confidence set: radius 0 (see top)
    half = (radius / math.sqrt(post.a)) * np.sqrt(post.rho2)
    return post.mu - half, post.mu + half, half


def amm(kernel: RefKernel, X, y, Xq, p: Params = Params()) -> Bounds:
    """AMM-UCB (Flynn & Reeb 2024 Cor. 4.6): U_a, L_a at a = a0; mean mu_a0."""
    post0 = posterior(kernel, X, y, p.a0, Xq)
    lcb, ucb, half = _mixture_u_l(p, post0, post0)
    return Bounds(post0.mu, lcb, ucb, np.abs(post0.mu) + half)


def dmm(kernel: RefKernel, X, y, Xq, p: Params = Params(), grid: Sequence[float] = DMM_GRID) -> Bounds:
    """DMM-UCB (Flynn & Reeb 2024 Sec. 5.4): UCB = min over a in grid*a0 of U_a,
    LCB = max of L_a; mean mu_a0."""
    post0 = posterior(kernel, X, y, p.a0, Xq)
    lcbs, ucbs, scales = [], [], []
    for m in grid:
        a = p.a0 if m == 1.0 else m * p.a0
        post = post0 if a == p.a0 else posterior(kernel, X, y, a, Xq)
        lo, hi, half = _mixture_u_l(p, post0, post)
        lcbs.append(lo)
        ucbs.append(hi)
        scales.append(np.abs(post.mu) + half)
    return Bounds(
        post0.mu,
        np.max(lcbs, axis=0),
        np.min(ucbs, axis=0),
        np.maximum(np.abs(post0.mu), np.max(scales, axis=0)),
    )


def ay(kernel: RefKernel, X, y, Xq, p: Params = Params(), lam: float | None = None) -> Bounds:
    """AY-GP-UCB (Abbasi-Yadkori 2012 Thm 3.11, as in Flynn & Reeb 2024 App. C.2):
    mu_l +- ((sigma sqrt(ld_l + 2 ln(1/delta)) + sqrt(l) B) / sqrt(l)) rho_l; default l = sigma^2/c."""
    lam = p.a0 if lam is None else lam
    post = posterior(kernel, X, y, lam, Xq)
    beta = (p.sigma * math.sqrt(post.ld + 2.0 * p.log_inv_delta) + math.sqrt(lam) * p.norm_bound) / math.sqrt(lam)
    half = beta * np.sqrt(post.rho2)
    return Bounds(post.mu, post.mu - half, post.mu + half, np.abs(post.mu) + half)


def igp(
    kernel: RefKernel,
    X,
    y,
    Xq,
    p: Params = Params(),
    eta: float | None = None,
    horizon: int | None = None,
) -> Bounds:
    """IGP-UCB (Chowdhury & Gopalan 2017 Thm 2, as in Flynn & Reeb 2024 App. C.2), eta > 0:
    mu_{1+eta} +- (sigma sqrt(ld_{1+eta} + t eta + 2 ln(1/delta)) + B) rho_{1+eta};
    default eta = 2/T (T = horizon)."""
    if eta is None:
        if horizon is None:
            raise ValueError("IGP-UCB needs eta or a horizon")
        eta = 2.0 / horizon
    t = np.asarray(y).reshape(-1).shape[0]
    post = posterior(kernel, X, y, 1.0 + eta, Xq)
    beta = p.sigma * math.sqrt(post.ld + t * eta + 2.0 * p.log_inv_delta) + p.norm_bound
    half = beta * np.sqrt(post.rho2)
    return Bounds(post.mu, post.mu - half, post.mu + half, np.abs(post.mu) + half)


def paper_scale(nu: float | None, d: int, horizon: int) -> float:
    """The covariance scale of Flynn & Reeb 2024 Sec. 7: c = 1 for RBF (nu None),
    c = T^(-d/(2d + 2 nu)) for Matern."""
    if nu is None:
        return 1.0
    return float(horizon) ** (-d / (2.0 * d + 2.0 * nu))


# --------------------------------------------------------------------------------------------
# Self-check of the reference's internal identities: python reference.py
# --------------------------------------------------------------------------------------------


def _self_check() -> None:
    rng = np.random.default_rng(0)
    kernels = [RefKernel("rbf", 0.5)] + [RefKernel("matern", 0.5, nu) for nu in (0.5, 1.5, 2.5)]
    worst = {}

    def note(name, value):
        worst[name] = max(worst.get(name, 0.0), float(value))

    for kern in kernels:
        for d in (1, 2, 3, 4):
            X = rng.random((25, d))
            y = np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(25)
            Xq = np.vstack([rng.random((15, d)), X[:5]])
            # kernel: symmetric, unit diagonal, PSD, matches a scalar evaluation
            K = kern(X, X)
            assert np.array_equal(K, K.T) and np.all(np.diag(K) == 1.0)
            assert np.linalg.eigvalsh(K).min() > -1e-12
            r = np.linalg.norm(X[0] - X[1]) / kern.lengthscale
            scalar = {
                None: math.exp(-r * r / 2),
                0.5: math.exp(-r),
                1.5: (1 + math.sqrt(3) * r) * math.exp(-math.sqrt(3) * r),
                2.5: (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5) * r),
            }[kern.nu]
            note("kernel vs scalar formula", abs(K[0, 1] - scalar))
            for a in (1e-3, 1e-2, 1.0, 1.02):
                post = posterior(kern, X, y, a, Xq)
                # ld: Cholesky form equals slogdet(I + K/a)
                sign, logdet = np.linalg.slogdet(np.eye(25) + K / a)
                assert sign > 0
                note("ld: cholesky vs slogdet (rel)", abs(post.ld - logdet) / abs(logdet))
                # mu, q via a plain linear solve
                alpha = np.linalg.solve(K + a * np.eye(25), y)
                Kq = kern(X, Xq)
                note("mu: cholesky vs solve", np.max(np.abs(post.mu - Kq.T @ alpha)))
                note("q: cholesky vs solve (rel)", abs(post.q - y @ alpha) / post.q)
                # second route: eigendecomposition
                pe = posterior_eigh(kern, X, y, a, Xq)
                note("mu: cholesky vs eigh", np.max(np.abs(post.mu - pe.mu)))
                note("rho2: cholesky vs eigh", np.max(np.abs(post.rho2 - pe.rho2)))
                note("ld: cholesky vs eigh (rel)", abs(post.ld - pe.ld) / pe.ld)
                # rho2 in [0, 1]; at an observed point rho_a^2 = a [K (K + aI)^-1]_ii <= a
                assert np.all(post.rho2 >= 0) and np.all(post.rho2 <= 1)
                assert np.all(post.rho2[-5:] <= a * (1 + 1e-9))
            # no data: mu = 0, rho^2 = k(x,x) = 1, q = 0, ld = 0
            empty = posterior(kern, np.empty((0, d)), np.empty(0), 0.01, Xq)
            assert np.all(empty.mu == 0) and np.all(empty.rho2 == 1) and empty.q == 0 and empty.ld == 0
            # bounds with no data: AMM width = sqrt(2 sigma^2 ln(1/delta) + a0 B^2)/sqrt(a0)
            p = Params()
            b = amm(kern, np.empty((0, d)), np.empty(0), Xq, p)
            w = math.sqrt(2 * p.sigma**2 * p.log_inv_delta + p.a0 * p.norm_bound**2) / math.sqrt(p.a0)
            assert np.allclose(b.ucb, w, rtol=1e-15) and np.allclose(b.lcb, -w, rtol=1e-15)
            # AMM's radius via the literal R_t^2 + a0 B^2 - a0 q formula equals Lemma C.2's form
            post0 = posterior(kern, X, y, p.a0, Xq)
            literal = (p.a0 * post0.q + p.sigma**2 * post0.ld + 2 * p.sigma**2 * p.log_inv_delta) + p.a0 * p.norm_bound**2 - p.a0 * post0.q
            note("Lemma C.2 vs literal (rel)", abs(literal - _radius_sq(p, post0, post0)) / literal)
            # orderings: DMM inside AMM (its grid holds a0); Theorem 6.3 of Flynn & Reeb:
            # AMM(c = sigma^2/l) < AY(l) and AMM(c = sigma^2/(1+eta)) < IGP(eta) where rho > 0
            A = amm(kern, X, y, Xq, p)
            D = dmm(kern, X, y, Xq, p)
            assert np.all(D.ucb <= A.ucb) and np.all(D.lcb >= A.lcb) and np.all(D.lcb <= D.ucb)
            lam = 0.05
            A2 = amm(kern, X, y, Xq, Params(scale=p.sigma**2 / lam))
            Y = ay(kern, X, y, Xq, p, lam=lam)
            assert np.all(A2.ucb < Y.ucb) and np.all(A2.lcb > Y.lcb)
            eta = 2 / 1000
            A3 = amm(kern, X, y, Xq, Params(scale=p.sigma**2 / (1 + eta)))
            G = igp(kern, X, y, Xq, p, eta=eta)
            assert np.all(A3.ucb < G.ucb) and np.all(A3.lcb > G.lcb)
            # DMM with only a0 in its grid is AMM, bit for bit
            D1 = dmm(kern, X, y, Xq, p, grid=(1.0,))
            assert np.array_equal(D1.ucb, A.ucb) and np.array_equal(D1.lcb, A.lcb)
    for name, value in worst.items():
        print(f"{name:34s} worst {value:.2e}")
        assert value < 1e-10, name
    print("reference self-check passed")


if __name__ == "__main__":
    _self_check()
