#!/usr/bin/env python
"""Time one AMM-UCB round (select over 100 fresh arms + update) from Python.

Three implementations of the same round, at t = 100 and t = 1000 warm-start observations
(d = 3, Matern 5/2 with lengthscale 0.5, sigma = 0.1, B = 10, delta = 0.01 and the paper's
c = T^(-d/(2d+2nu)) for the horizon T = t + rounds that the Rust CLI uses):

* package: ``kernel_bandits.UcbAgent(kernel_bandits.Amm(...))``: ``i = agent.select(arms);
  agent.update(arms[i], y)``;
* rust: the crate's own CLI, ``kbandit bench --bound amm --t T --arms 100 --dims 3``, run in the
  same invocation (it prints one JSON line, parsed here). c changes how many arms the pruned
  argmax can skip, so all three sides use the CLI's;
* numpy: a careful implementation (below, ``NumpyAmm``) with one BLAS thread.

Protocol (as the Rust CLI's): warm start with t observations at uniform random points of
[0, 1]^3, rewards f(x) = sin(6 x1) x2 + x3 plus uniform noise of width 0.1; the arm sets (100 x 3,
C-contiguous float64) and the noise are generated before the timed rounds; each round's select +
update is timed alone with time.perf_counter_ns; at most --rounds rounds, stopping early after
--budget seconds (at least 3 rounds). Every timed round adds one observation, so the rounds run at
t, t + 1, ...; medians are reported in milliseconds.

Usage:
    python bench/bench_amm.py                       # t = 100 and 1000
    python bench/bench_amm.py --t 100 500 --rounds 80 --json
    python bench/bench_amm.py --kbandit /path/to/kbandit --threads 1
"""

from __future__ import annotations

import os

# One BLAS thread for the numpy implementation, set before numpy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

try:
    import threadpoolctl  # noqa: E402

    _THREADPOOL = threadpoolctl.threadpool_limits(limits=1)
    THREADPOOL_NOTE = "threadpoolctl: BLAS limited to 1 thread"
except ImportError:
    THREADPOOL_NOTE = "threadpoolctl not installed: BLAS threads fixed by environment variables only"

try:
    from scipy.linalg import solve_triangular  # noqa: E402

    HAVE_SCIPY = True
except ImportError:
    HAVE_SCIPY = False

DIMS, ARMS = 3, 100
LENGTHSCALE, SIGMA, NORM_BOUND, DELTA, SCALE = 0.5, 0.1, 10.0, 0.01, 1.0
REPO = Path(__file__).resolve().parents[2]
DEFAULT_KBANDIT = REPO / "target" / "release" / "kbandit"


# --------------------------------------------------------------------------------------------
# Triangular solves. BLAS dtrsm called directly (through scipy's exported Cython BLAS table) on
# the leading t x t block of a preallocated Fortran-order buffer, with lda = capacity: no copy of
# the factor per call. Fallbacks: scipy.linalg.solve_triangular on the slice (copies it), then
# numpy.linalg.solve (an LU solve: O(t^3) per call, far slower; said so in the output).
# --------------------------------------------------------------------------------------------


def _load_dtrsm():
    try:
        from scipy.linalg import cython_blas

        capsule = cython_blas.__pyx_capi__["dtrsm"]
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
        get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        ptr = get_ptr(capsule, get_name(capsule))
        P = ctypes.POINTER
        c, i, d = ctypes.c_char, ctypes.c_int, ctypes.c_double
        proto = ctypes.CFUNCTYPE(None, P(c), P(c), P(c), P(c), P(i), P(i), P(d), P(d), P(i), P(d), P(i))
        return proto(ptr)
    except Exception:  # pragma: no cover - depends on the scipy build
        return None


_DTRSM = _load_dtrsm()
_P_DOUBLE = ctypes.POINTER(ctypes.c_double)


def solver_note() -> str:
    if _DTRSM is not None:
        return "triangular solves: BLAS dtrsm (scipy's cython_blas) in place on the factor buffer"
    if HAVE_SCIPY:
        return "triangular solves: scipy.linalg.solve_triangular (copies the factor block per call)"
    return "triangular solves: numpy.linalg.solve fallback (scipy missing; LU, O(t^3) per solve, slow)"


def trsm_inplace(Lbuf: np.ndarray, t: int, B: np.ndarray, transpose: bool = False) -> np.ndarray:
    """Solves L X = B (or L^T X = B) for the lower-triangular L = Lbuf[:t, :t]; B is (t, m)
    Fortran-ordered or (t,) and is overwritten with X when dtrsm is available."""
    m = 1 if B.ndim == 1 else B.shape[1]
    if t == 0:
        return B
    if _DTRSM is not None:
        assert Lbuf.flags.f_contiguous and (B.ndim == 1 or B.flags.f_contiguous) and B.shape[0] == t
        br = ctypes.byref
        _DTRSM(
            br(ctypes.c_char(b"L")), br(ctypes.c_char(b"L")),
            br(ctypes.c_char(b"T" if transpose else b"N")), br(ctypes.c_char(b"N")),
            br(ctypes.c_int(t)), br(ctypes.c_int(m)), br(ctypes.c_double(1.0)),
            Lbuf.ctypes.data_as(_P_DOUBLE), br(ctypes.c_int(Lbuf.shape[0])),
            B.ctypes.data_as(_P_DOUBLE), br(ctypes.c_int(t)),
        )  # fmt: skip
        return B
    L = Lbuf[:t, :t]
    if HAVE_SCIPY:
        return solve_triangular(L, B, lower=True, trans="T" if transpose else "N", check_finite=False)
    return np.linalg.solve(L.T if transpose else L, B)


# --------------------------------------------------------------------------------------------
# The numpy AMM-UCB.
# --------------------------------------------------------------------------------------------


def matern52_cross(Z: np.ndarray, sqZ: np.ndarray, X: np.ndarray, sqX: np.ndarray) -> np.ndarray:
    """[k(z_i, x_j)] (m x t, C order) for Matern 5/2, via |z|^2 + |x|^2 - 2 z.x (one GEMM;
    the lost accuracy at r ~ 0 is harmless for Matern 5/2, whose k is flat there)."""
    r2 = Z @ X.T
    r2 *= -2.0
    r2 += sqZ[:, None]
    r2 += sqX[None, :]
    np.maximum(r2, 0.0, out=r2)
    s = np.sqrt(r2, out=r2)
    s *= math.sqrt(5.0) / LENGTHSCALE
    e = np.exp(-s)
    # (1 + s + s^2/3) e^-s, in place in s
    poly = s * (1.0 / 3.0)
    poly += 1.0
    poly *= s
    poly += 1.0
    poly *= e
    return poly


class NumpyAmm:
    """AMM-UCB (Flynn & Reeb 2024 Cor. 4.6) with an incrementally grown Cholesky factor of
    K + a0 I (a0 = sigma^2/c): per update one triangular solve for the new row, ld_a0 grown by
    ln(L_tt^2 / a0), w = L^-1 y grown by one entry and alpha = (K + a0 I)^-1 y = L^-T w by one
    back solve; per selection the m x t cross-kernel, V = L^-1 Kx^T (one triangular solve with m
    right-hand sides), mu = Kx alpha, rho^2 = 1 - colsum(V^2), and
    UCB = mu + sqrt(sigma^2 ld_a0 + 2 sigma^2 ln(1/delta) + a0 B^2) / sqrt(a0) * rho
    (R-tilde at a0 by Lemma C.2: the q terms cancel)."""

    def __init__(self, dims, sigma=SIGMA, norm_bound=NORM_BOUND, delta=DELTA, scale=SCALE, capacity=256):
        self.a = sigma * sigma / scale
        self.s2 = sigma * sigma
        self.const = 2.0 * self.s2 * math.log(1.0 / delta) + self.a * norm_bound * norm_bound
        self.t = 0
        self.ld = 0.0
        self.dims = dims
        self._alloc(capacity)

    def _alloc(self, cap):
        old = getattr(self, "L", None)
        t = self.t
        L = np.zeros((cap, cap), order="F")
        X = np.empty((cap, self.dims))
        sq = np.empty(cap)
        w = np.empty(cap)
        if old is not None:
            L[:t, :t] = old[:t, :t]
            X[:t], sq[:t], w[:t] = self.X[:t], self.sq[:t], self.w[:t]
        self.L, self.X, self.sq, self.w = L, X, sq, w
        self.alpha = np.empty(0) if old is None else self.alpha

    def warm(self, X: np.ndarray, y: np.ndarray):
        """t observations at once: one dense Cholesky factorisation."""
        assert self.t == 0
        t = X.shape[0]
        if t > self.L.shape[0]:
            self._alloc(max(2 * t, 256))
        self.X[:t] = X
        self.sq[:t] = np.einsum("ij,ij->i", X, X)
        K = matern52_cross(X, self.sq[:t], X, self.sq[:t])
        K[np.diag_indices(t)] = 1.0 + self.a
        self.L[:t, :t] = np.linalg.cholesky(K)
        self.t = t
        self.ld = float(2.0 * np.sum(np.log(np.diag(self.L[:t, :t]))) - t * math.log(self.a))
        self.w[:t] = trsm_inplace(self.L, t, np.array(y, dtype=np.float64))
        self.alpha = trsm_inplace(self.L, t, self.w[:t].copy(), transpose=True)

    def ucb(self, arms: np.ndarray) -> np.ndarray:
        t = self.t
        radius = math.sqrt(self.s2 * self.ld + self.const) / math.sqrt(self.a)
        if t == 0:
            return np.full(arms.shape[0], radius)
        sqZ = np.einsum("ij,ij->i", arms, arms)
        Kx = matern52_cross(arms, sqZ, self.X[:t], self.sq[:t])  # (m, t), C order
        mu = Kx @ self.alpha
        # Kx.T is (t, m) in Fortran order: dtrsm overwrites it with V = L^-1 Kx^T (the fallback
        # solvers return a new array instead).
        Vt = trsm_inplace(self.L, t, Kx.T).T  # (m, t)
        rho2 = 1.0 - np.einsum("ij,ij->i", Vt, Vt)
        np.maximum(rho2, 0.0, out=rho2)
        return mu + radius * np.sqrt(rho2)

    def select(self, arms: np.ndarray) -> int:
        return int(np.argmax(self.ucb(arms)))  # first maximum: ties go to the lowest index

    def update(self, x: np.ndarray, y: float):
        t = self.t
        if t + 1 > self.L.shape[0]:
            self._alloc(2 * self.L.shape[0])
        x = np.asarray(x, dtype=np.float64)
        sqx = float(x @ x)
        if t > 0:
            k = matern52_cross(x[None, :], np.array([sqx]), self.X[:t], self.sq[:t])[0]
            v = trsm_inplace(self.L, t, k)
            self.L[t, :t] = v
            diag2 = 1.0 + self.a - float(v @ v)
            wv = float(v @ self.w[:t])
        else:
            diag2, wv = 1.0 + self.a, 0.0
        diag = math.sqrt(max(diag2, self.a * 1e-300))
        self.L[t, t] = diag
        self.X[t], self.sq[t] = x, sqx
        self.w[t] = (y - wv) / diag
        self.ld += math.log(diag2 / self.a)
        self.t = t + 1
        self.alpha = trsm_inplace(self.L, t + 1, self.w[: t + 1].copy(), transpose=True)


# --------------------------------------------------------------------------------------------
# Workload, as the Rust CLI's.
# --------------------------------------------------------------------------------------------


def value(x: np.ndarray) -> float:
    return math.sin(6.0 * x[0]) * x[1] + float(np.sum(x[2:]))


def workload(t: int, rounds: int, seed: int):
    rng = np.random.default_rng(seed)
    X0 = rng.random((t, DIMS))
    y0 = np.array([value(x) for x in X0]) + 0.1 * (rng.random(t) - 0.5)
    arm_sets = [np.ascontiguousarray(rng.random((ARMS, DIMS))) for _ in range(rounds)]
    noise = 0.1 * (rng.random(rounds) - 0.5)
    return X0, y0, arm_sets, noise


def time_rounds(select, update, arm_sets, noise, rounds, budget):
    """Times select + update per round (perf_counter_ns); returns (times in ms, chosen arms)."""
    times, chosen = [], []
    start = time.perf_counter()
    for r in range(rounds):
        if len(times) >= 3 and time.perf_counter() - start >= budget:
            break
        arms = arm_sets[r]
        eps = noise[r]
        t0 = time.perf_counter_ns()
        i = select(arms)
        t1 = time.perf_counter_ns()
        x = arms[i]
        y = value(x) + eps  # the reward, computed in Python (~9 us): outside the timed calls
        t2 = time.perf_counter_ns()
        update(x, y)
        t3 = time.perf_counter_ns()
        times.append((t1 - t0 + t3 - t2) / 1e6)
        chosen.append(i)
    return times, chosen


def summarise(times):
    s = sorted(times)

    def q(p):
        return s[int(round((len(s) - 1) * p))]

    return {"median_ms": statistics.median(s), "p10_ms": q(0.1), "p90_ms": q(0.9), "rounds": len(s)}


# --------------------------------------------------------------------------------------------
# The three sides.
# --------------------------------------------------------------------------------------------


def import_package():
    try:
        import kernel_bandits as kb

        if not hasattr(kb, "UcbAgent"):
            return None, "kernel_bandits has no UcbAgent (not the built package?)"
        return kb, None
    except ImportError as e:
        return None, f"kernel_bandits not importable ({e}); build and install the Python package"


def paper_scale(horizon):
    """c = T^(-d/(2d+2nu)) of Flynn & Reeb (2024) §7 for Matern 5/2 in d = 3, with T the horizon
    the Rust CLI uses (t + rounds): the same bound, hence the same pruning work, on all sides."""
    return horizon ** (-DIMS / (2 * DIMS + 2 * 2.5))


def package_amm(kb, scale=SCALE):
    kernel = kb.Matern(nu=2.5, lengthscale=LENGTHSCALE)
    return kb.Amm(kernel, sigma=SIGMA, norm_bound=NORM_BOUND, delta=DELTA, scale=scale)


def bench_package(kb, t, rounds, budget, seed, arm_sets_mode="detect"):
    X0, y0, arm_sets, noise = workload(t, rounds, seed)
    bound = package_amm(kb, paper_scale(t + rounds))
    w0 = time.perf_counter()
    if t:
        bound.observe_many(X0, y0)
    warm = time.perf_counter() - w0
    agent = kb.UcbAgent(bound, arm_sets=arm_sets_mode)
    times, chosen = time_rounds(agent.select, agent.update, arm_sets, noise, rounds, budget)
    return {**summarise(times), "warmup_s": warm}, chosen


def bench_numpy(t, rounds, budget, seed):
    X0, y0, arm_sets, noise = workload(t, rounds, seed)
    amm = NumpyAmm(DIMS, scale=paper_scale(t + rounds))
    w0 = time.perf_counter()
    if t:
        amm.warm(X0, y0)
    warm = time.perf_counter() - w0
    times, chosen = time_rounds(amm.select, amm.update, arm_sets, noise, rounds, budget)
    return {**summarise(times), "warmup_s": warm}, chosen


def bench_rust(kbandit: Path, t, rounds, budget, seed, threads):
    if not kbandit.is_file():
        return None, (
            f"Rust CLI not found at {kbandit}: it must be built with "
            "`cargo build --release --features cli` (this script does not build it)"
        )
    cmd = [str(kbandit), "bench", "--bound", "amm", "--t", str(t), "--arms", str(ARMS), "--dims", str(DIMS),
           "--rounds", str(rounds), "--budget", str(budget), "--seed", str(seed)]  # fmt: skip
    if threads is not None:
        cmd += ["--threads", str(threads)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        err = getattr(e, "stderr", "") or ""
        return None, f"`{' '.join(cmd)}` failed: {e} {err.strip()}"
    lines = [ln for ln in out.stdout.splitlines() if ln.strip().startswith("{")]
    if not lines:
        return None, f"no JSON line in the output of `{' '.join(cmd)}`: {out.stdout!r}"
    m = json.loads(lines[-1])
    m["command"] = " ".join(cmd)
    return m, None


def sanity_check(kb, t=100, rounds=25, seed=12345):
    """The numpy AMM and the package pick the same arms over a short run from the same data,
    and their UCBs agree on a fresh arm set."""
    X0, y0, arm_sets, noise = workload(t, rounds + 1, seed)
    bound = package_amm(kb)
    bound.observe_many(X0, y0)
    agent = kb.UcbAgent(bound)
    amm = NumpyAmm(DIMS)
    amm.warm(X0, y0)
    same, worst = 0, 0.0
    for r in range(rounds):
        arms = arm_sets[r]
        _, _, ucb_pkg = agent.bounds(arms)
        ucb_np = amm.ucb(arms)
        worst = max(worst, float(np.max(np.abs(ucb_pkg - ucb_np) / np.maximum(np.abs(ucb_pkg), 1.0))))
        i_pkg, i_np = agent.select(arms), amm.select(arms)
        same += i_pkg == i_np
        x = arms[i_pkg]  # both continue with the package's choice, so the data stay equal
        yv = value(x) + noise[r]
        agent.update(x, yv)
        amm.update(x, yv)
    return same, rounds, worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--t", type=int, nargs="+", default=[100, 1000], help="warm-start sizes (default 100 1000)")
    ap.add_argument("--rounds", type=int, default=50, help="timed rounds at most (default 50)")
    ap.add_argument("--budget", type=float, default=3.0, help="stop timing after this many seconds (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3,
                    help="passes over the three sides (different seeds); medians of the pass medians (default 3)")  # fmt: skip
    ap.add_argument("--kbandit", type=Path, default=DEFAULT_KBANDIT, help=f"Rust CLI (default {DEFAULT_KBANDIT})")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for the package (RAYON_NUM_THREADS) and the Rust CLI (--threads); "
                         "default: theirs (one per core). numpy always uses one BLAS thread.")  # fmt: skip
    ap.add_argument("--arm-sets", choices=["detect", "declared", "off"], default="detect",
                    help="the package agent's arm_sets mode (default: its default, 'detect'; the Rust "
                         "CLI's fresh-arm path uses 'off')")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print the results as one JSON document")
    ap.add_argument("--no-sanity", action="store_true", help="skip the numpy-vs-package arm check")
    args = ap.parse_args(argv)
    if args.rounds < 3:
        ap.error("--rounds must be at least 3")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.threads is not None:
        os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # before the package starts its pool

    kb, kb_note = import_package()
    notes = ["each timed round adds one observation: the rounds run at t, t + 1, ... (as in the Rust CLI)",
             solver_note(), THREADPOOL_NOTE,
             "all three use c = T^(-d/(2d+2nu)) with T = t + rounds, as the Rust CLI (the sanity check uses c = 1)"]  # fmt: skip
    if kb_note:
        notes.append(kb_note)
    else:
        notes.append(f"package agent: kb.UcbAgent(kb.Amm(...), arm_sets={args.arm_sets!r})")
    if args.kbandit.is_file():
        notes.append(f"rust CLI: {args.kbandit} (built {time.ctime(args.kbandit.stat().st_mtime)})")
    sanity = None
    if kb is not None and not args.no_sanity:
        same, total, worst = sanity_check(kb)
        sanity = {"same_arms": same, "rounds": total, "max_rel_ucb_diff": worst}
        if not args.json:
            print(f"sanity: numpy and package picked the same arm in {same}/{total} rounds; "
                  f"max |ucb diff| / max(|ucb|, 1) = {worst:.2e}")  # fmt: skip

    results = []
    for t in args.t:
        row = {"t": t, "arms": ARMS, "dims": DIMS}
        runs = {"package": [], "rust": [], "numpy": []}
        # --repeat passes over the three sides, in turn, so that slow phases of a shared machine
        # hit all three; each side reports the median of its per-pass medians.
        for rep in range(args.repeat):
            seed = args.seed + rep
            if kb is not None:
                runs["package"].append(bench_package(kb, t, args.rounds, args.budget, seed, args.arm_sets)[0])
            rust, err = bench_rust(args.kbandit, t, args.rounds, args.budget, seed, args.threads)
            if rust:
                runs["rust"].append(rust)
            if err and err not in notes:
                notes.append(err)
            runs["numpy"].append(bench_numpy(t, args.rounds, args.budget, seed)[0])
        for side, ms in runs.items():
            if ms:
                row[side] = {**ms[-1], "median_ms": statistics.median(m["median_ms"] for m in ms),
                             "pass_medians_ms": [m["median_ms"] for m in ms],
                             "rounds": sum(m["rounds"] for m in ms)}  # fmt: skip
            else:
                row[side] = None
        pkg_ms = row["package"]["median_ms"] if row["package"] else None
        rust_ms = row["rust"]["median_ms"] if row["rust"] else None
        row["ratio_package_rust"] = pkg_ms / rust_ms if pkg_ms and rust_ms else None
        row["ratio_numpy_package"] = row["numpy"]["median_ms"] / pkg_ms if pkg_ms else None
        # Pair by pair: the three sides of one pass run within seconds of each other, so their
        # ratios are less exposed to a shared machine's slow phases than the pooled medians.
        if runs["package"] and len(runs["rust"]) == len(runs["package"]):
            row["paired_package_rust"] = statistics.median(
                p["median_ms"] / r["median_ms"] for p, r in zip(runs["package"], runs["rust"]))
        if runs["package"]:
            row["paired_numpy_package"] = statistics.median(
                n["median_ms"] / p["median_ms"] for n, p in zip(runs["numpy"], runs["package"]))
        results.append(row)

    if args.json:
        print(json.dumps({"results": results, "sanity": sanity, "notes": notes}, indent=2))
        return 0

    def fmt(v, spec=".3f"):
        return "n/a" if v is None else format(v, spec)

    print()
    print(f"AMM-UCB round (select + update), {ARMS} fresh arms, d = {DIMS}, Matern 5/2 (l = {LENGTHSCALE}); medians in ms")
    head = (f"{'t':>6} {'package ms':>11} {'rust ms':>9} {'numpy ms':>9} {'pkg/rust':>9} {'numpy/pkg':>10} "
            f"{'paired pkg/rust':>16} {'paired numpy/pkg':>17}  timed rounds (pkg/rust/numpy)")
    print(head)
    print("-" * len(head))
    for row in results:
        pkg = row["package"]
        rust = row["rust"]
        print(
            f"{row['t']:>6} {fmt(pkg and pkg['median_ms']):>11} {fmt(rust and rust['median_ms']):>9} "
            f"{fmt(row['numpy']['median_ms']):>9} {fmt(row['ratio_package_rust'], '.2f'):>9} "
            f"{fmt(row['ratio_numpy_package'], '.2f'):>10} "
            f"{fmt(row.get('paired_package_rust'), '.2f'):>16} {fmt(row.get('paired_numpy_package'), '.2f'):>17}  "
            f"{pkg['rounds'] if pkg else '-'}/{rust['rounds'] if rust else '-'}/{row['numpy']['rounds']}"
        )
    print(f"(median over {args.repeat} pass(es) of the per-pass median; each pass times up to {args.rounds} rounds)")
    if results and results[0]["rust"]:
        print(f"rust threads: {results[0]['rust'].get('threads')}")
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
