"""Kernels, bounds and their inputs, errors and snapshots, checked through the Python API."""

import copy
import pickle

import numpy as np
import pytest

import kernel_bandits as kb
from conftest import all_bounds

SQ3, SQ5 = np.sqrt(3.0), np.sqrt(5.0)


def distances(x, y):
    return np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))


# Kernels (Rasmussen & Williams 2006 §4.2), against closed forms written here -----------------

@pytest.mark.parametrize(
    "kernel, formula",
    [
        (kb.Rbf(0.3), lambda r: np.exp(-(r**2) / (2 * 0.3**2))),
        (kb.Matern(nu=0.5, lengthscale=0.4), lambda r: np.exp(-r / 0.4)),
        (kb.Matern(nu=1.5, lengthscale=0.4), lambda r: (1 + SQ3 * r / 0.4) * np.exp(-SQ3 * r / 0.4)),
        (
            kb.Matern(nu=2.5, lengthscale=0.4),
            lambda r: (1 + SQ5 * r / 0.4 + 5 * r**2 / (3 * 0.4**2)) * np.exp(-SQ5 * r / 0.4),
        ),
    ],
)
def test_radial_kernels_match_their_closed_forms(kernel, formula, rng):
    x, y = rng.random((7, 3)), rng.random((5, 3))
    np.testing.assert_allclose(kernel(x, y), formula(distances(x, y)), rtol=1e-13, atol=1e-15)
    gram = kernel(x)
    np.testing.assert_allclose(gram, formula(distances(x, x)), rtol=1e-13, atol=1e-15)
    assert np.array_equal(gram, gram.T)
    np.testing.assert_array_equal(kernel.diag(x), np.ones(7))


def matern_by_scipy(nu, lengthscale, r):
    """2^{1−ν}/Γ(ν) z^ν K_ν(z), z = √(2ν) r/ℓ (Rasmussen & Williams 2006 Eq. 4.14), through
    scipy's exponentially scaled K_ν (AMOS) and log-gamma, 1 at r = 0."""
    special = pytest.importorskip("scipy.special")
    z = np.sqrt(2 * nu) * np.asarray(r, dtype=float) / lengthscale
    with np.errstate(divide="ignore", invalid="ignore"):
        log_k = (1 - nu) * np.log(2) - special.gammaln(nu) + nu * np.log(z) + np.log(special.kve(nu, z)) - z
        k = np.exp(log_k)
    return np.where(z == 0, 1.0, k)


@pytest.mark.parametrize("nu", [0.3, 1.0, 2.0, 3.5, 7.5, 15.0])
def test_matern_of_any_smoothness_matches_scipy(nu, rng):
    x = np.vstack([rng.random((9, 3)), [[0.2, 0.2, 0.2], [0.2, 0.2, 0.2 + 1e-12]]])
    y = rng.random((6, 3)) * 4.0
    k = kb.Matern(nu=nu, lengthscale=0.3)
    assert k.nu == nu and k.lengthscale == 0.3
    # scipy's own error is a few 1e-14 here (AMOS and a log-space product); 1e-12 leaves room.
    np.testing.assert_allclose(k(x, y), matern_by_scipy(nu, 0.3, distances(x, y)), rtol=1e-12, atol=1e-300)
    gram = k(x)
    np.testing.assert_allclose(gram, matern_by_scipy(nu, 0.3, distances(x, x)), rtol=1e-12, atol=1e-300)
    assert np.array_equal(gram, gram.T)
    np.testing.assert_array_equal(np.diag(gram), np.ones(len(x)))
    np.testing.assert_array_equal(k.diag(x), np.ones(len(x)))
    assert np.linalg.eigvalsh(gram).min() > -len(x) * np.finfo(float).eps


def test_matern_seven_halves_is_its_closed_form(rng):
    # Rasmussen & Williams 2006 Eq. 4.16 with p = 3: (1 + z + 2z²/5 + z³/15) e^{−z}, z = √7 r/ℓ.
    x, y = rng.random((8, 2)), rng.random((5, 2))
    z = np.sqrt(7.0) * distances(x, y) / 0.25
    closed = (1 + z + 0.4 * z**2 + z**3 / 15) * np.exp(-z)
    np.testing.assert_allclose(kb.Matern(nu=3.5, lengthscale=0.25)(x, y), closed, rtol=1e-13, atol=1e-300)
    assert repr(kb.Matern(nu=3.5, lengthscale=0.25)) == "Matern(nu=3.5, lengthscale=0.25)"


def test_kernel_combinators_are_the_algebra_they_name(rng):
    x, y = rng.random((6, 4)), rng.random((3, 4))
    r, m, lin = kb.Rbf(0.5), kb.Matern(nu=2.5, lengthscale=0.7), kb.Linear(bias=0.25)
    np.testing.assert_allclose((r + m)(x, y), r(x, y) + m(x, y), rtol=1e-14)
    np.testing.assert_allclose((r * m)(x, y), r(x, y) * m(x, y), rtol=1e-14)
    np.testing.assert_allclose((2.5 * r)(x, y), 2.5 * r(x, y), rtol=1e-14)
    np.testing.assert_allclose((r * 2.5)(x, y), r.scaled(2.5)(x, y), rtol=0)
    np.testing.assert_allclose(lin(x, y), x @ y.T + 0.25, rtol=1e-14)
    joint = r.on(0, 3) * m.on(slice(3, 4))
    np.testing.assert_allclose(joint(x, y), r(x[:, :3], y[:, :3]) * m(x[:, 3:], y[:, 3:]), rtol=1e-14)
    assert repr(joint) == "Rbf(lengthscale=0.5).on(0, 3) * Matern(nu=2.5, lengthscale=0.7).on(3, 4)"
    assert m.smoothness == 2.5 and r.smoothness is None
    assert isinstance(joint, kb.Kernel) and not isinstance(joint, kb.Rbf)


def test_kernels_pickle_to_the_same_kernel(rng):
    x = rng.random((5, 2))
    for k in [kb.Rbf(0.5), kb.Matern(nu=1.5, lengthscale=0.2), kb.Matern(nu=3.5, lengthscale=0.2), kb.Linear(1.0), 3.0 * kb.Rbf(0.1) + kb.Matern(nu=0.5, lengthscale=1.0).on(0, 1)]:
        back = pickle.loads(pickle.dumps(k))
        assert type(back) is type(k) and back == k and repr(back) == repr(k)
        assert np.array_equal(back(x), k(x))


@pytest.mark.parametrize(
    "build",
    [
        lambda: kb.Rbf(0.0),
        lambda: kb.Rbf(-1.0),
        lambda: kb.Rbf(float("nan")),
        lambda: kb.Rbf(float("inf")),
        lambda: kb.Matern(nu=0.0, lengthscale=0.5),
        lambda: kb.Matern(nu=-1.0, lengthscale=0.5),
        lambda: kb.Matern(nu=float("nan"), lengthscale=0.5),
        lambda: kb.Matern(nu=float("inf"), lengthscale=0.5),
        lambda: kb.Matern(nu=100.5, lengthscale=0.5),
        lambda: kb.Matern(nu=2.5, lengthscale=0.0),
        lambda: kb.Linear(bias=-1.0),
        lambda: kb.Rbf(0.5).scaled(0.0),
        lambda: kb.Rbf(0.5).on(2, 2),
    ],
)
def test_invalid_kernel_parameters_raise(build):
    with pytest.raises(kb.KernelBanditsError):
        build()


# Errors: typed, with the crate's message, and nothing changes ---------------------------------

def fed(bound, rng, n=12, d=2):
    x = rng.random((n, d))
    bound.observe_many(x, np.sin(6 * x).sum(1))
    return bound


def hostile_calls(d):
    good = np.full(d, 0.5)
    return [
        ("observe NaN x", lambda b: b.observe(np.array([np.nan] + [0.5] * (d - 1)), 1.0), kb.NonFiniteError),
        ("observe inf y", lambda b: b.observe(good, np.inf), kb.NonFiniteError),
        ("observe NaN y", lambda b: b.observe(good, np.nan), kb.NonFiniteError),
        ("observe wrong d", lambda b: b.observe(np.full(d + 1, 0.5), 1.0), kb.DimensionError),
        ("observe 2-D x", lambda b: b.observe(np.full((1, d), 0.5), 1.0), kb.DimensionError),
        ("observe_many short y", lambda b: b.observe_many(np.full((3, d), 0.5), np.ones(2)), kb.DimensionError),
        ("observe_many NaN in row 2", lambda b: b.observe_many(
            np.array([[0.1] * d, [0.2] * d, [np.nan] * d]), np.ones(3)), kb.NonFiniteError),
        ("observe_many inf y", lambda b: b.observe_many(np.full((2, d), 0.5), np.array([1.0, np.inf])), kb.NonFiniteError),
        ("bounds wrong d", lambda b: b.bounds(np.zeros((2, d + 1))), kb.DimensionError),
        ("bounds 1-D", lambda b: b.bounds(np.zeros(d)), kb.DimensionError),
        ("bounds 3-D", lambda b: b.bounds(np.zeros((1, 2, d))), kb.DimensionError),
        ("bounds zero columns", lambda b: b.bounds(np.zeros((2, 0))), kb.DimensionError),
        ("bounds complex", lambda b: b.bounds(np.zeros((2, d), dtype=complex)), kb.KernelBanditsError),
        ("bounds strings", lambda b: b.bounds([["a"] * d]), kb.KernelBanditsError),
        ("bounds ragged", lambda b: b.bounds([[0.5] * d, [0.5]]), kb.KernelBanditsError),
        ("argmax empty", lambda b: b.argmax_ucb(np.zeros((0, d))), kb.NoArmsError),
        ("fix_arms NaN", lambda b: b.fix_arms(np.full((2, d), np.nan)), kb.NonFiniteError),
    ]


@pytest.mark.parametrize("index", range(8))
def test_rejected_calls_raise_typed_errors_and_leave_the_bound_unchanged(index, rng):
    bound = fed(all_bounds(kb.Matern(nu=2.5, lengthscale=0.5))[index], rng)
    probe = rng.random((9, 2))
    values = bound.bounds(probe)
    # After a query: CMM computes its eigendecomposition lazily, on the first query after an
    # update, and its snapshot carries it.
    before = bound.to_bytes()
    for what, call, error in hostile_calls(2):
        with pytest.raises(error) as info:
            call(bound)
        assert isinstance(info.value, ValueError), what
        assert str(info.value), what
        assert bound.to_bytes() == before, f"{bound.name}: {what} changed the bound"
    after = bound.bounds(probe)
    for a, b in zip(values, after):
        assert np.array_equal(a, b)


def test_error_messages_come_from_the_crate():
    with pytest.raises(kb.InvalidParameterError, match="sigma"):
        kb.Dmm(kb.Rbf(0.5), sigma=-1.0)
    with pytest.raises(kb.InvalidParameterError, match="delta"):
        kb.Amm(kb.Rbf(0.5), delta=1.5)
    with pytest.raises(kb.InvalidParameterError, match="eta"):
        kb.Igp(kb.Rbf(0.5))
    with pytest.raises(kb.UnsupportedError, match="unknown bound"):
        kb.make_bound("gp-ucb", kb.Rbf(0.5))
    with pytest.raises(kb.InvalidParameterError):
        kb.KUcb(kb.Rbf(0.5), beta=-0.1)
    with pytest.raises(kb.InvalidParameterError):
        kb.Bkb(kb.Rbf(0.5), epsilon=1.0)
    with pytest.raises(kb.InvalidParameterError):
        kb.Restarting(kb.Dmm(kb.Rbf(0.5)), 0)
    with pytest.raises(kb.InvalidParameterError):
        kb.SlidingWindow(kb.Dmm(kb.Rbf(0.5)), 0)
    with pytest.raises(kb.InvalidParameterError):
        kb.UcbAgent(kb.Dmm(kb.Rbf(0.5)), arm_sets="sometimes")
    with pytest.raises(kb.UnsupportedError):
        kb.Dmm(kb.Rbf(0.5)).certificate(np.zeros(2))
    with pytest.raises(kb.InvalidParameterError):
        kb.make_bound("dmm", kb.Rbf(0.5), dims=3)


def test_sliding_window_needs_a_bound_that_forgets():
    # BKB cannot forget its oldest observation.
    with pytest.raises(kb.UnsupportedError, match="forget"):
        kb.SlidingWindow(kb.Bkb(kb.Rbf(0.5)), 5)


def test_all_errors_are_one_hierarchy():
    names = [
        "InvalidParameterError", "DimensionError", "NonFiniteError", "NoArmsError", "ArmSetError",
        "NumericalError", "MisspecifiedError", "UnsupportedError", "SnapshotError",
    ]
    for name in names:
        cls = getattr(kb, name)
        assert issubclass(cls, kb.KernelBanditsError) and issubclass(cls, ValueError)


# Inputs: layouts and dtypes -------------------------------------------------------------------

def test_every_layout_and_real_dtype_gives_the_same_bounds(rng):
    bound = fed(kb.Dmm(kb.Matern(nu=2.5, lengthscale=0.5)), rng, d=3)
    x = rng.random((20, 3))
    reference = bound.bounds(x)
    fortran = np.asfortranarray(x)
    strided = np.repeat(x, 2, axis=0)[::2]
    padded = np.zeros((20, 5))
    padded[:, 1:4] = x
    variants = {
        "fortran": fortran,
        "strided rows": strided,
        "column slice": padded[:, 1:4],
        "list": x.tolist(),
        "read-only": np.frombuffer(x.tobytes(), dtype=np.float64).reshape(20, 3),
        "big-endian": x.astype(">f8"),
    }
    for what, variant in variants.items():
        for a, b in zip(bound.bounds(variant), reference):
            assert np.array_equal(a, b), what
    # float32 and integers are converted once, exactly as numpy converts them.
    x32 = x.astype(np.float32)
    for a, b in zip(bound.bounds(x32), bound.bounds(x32.astype(np.float64))):
        assert np.array_equal(a, b)
    xi = (x * 3).astype(np.int64)
    for a, b in zip(bound.bounds(xi), bound.bounds(xi.astype(np.float64))):
        assert np.array_equal(a, b)


def test_c_contiguous_float64_inputs_are_read_in_place(rng):
    bound = kb.Dmm(kb.Matern(nu=2.5, lengthscale=0.5))
    agent = kb.UcbAgent(kb.Amm(kb.Rbf(0.5)))
    x, y = rng.random((50, 3)), rng.random(50)
    start = kb._core._conversions()
    bound.observe_many(x, y)
    bound.observe(x[3], 0.5)  # a row of a C-contiguous matrix is a contiguous vector
    bound.bounds(x)
    bound.argmax_ucb(x)
    for t in range(5):
        i = agent.select(x)
        agent.update(x[i], float(y[i]))
    agent.bounds(x)
    assert kb._core._conversions() == start
    bound.bounds(np.asfortranarray(x))
    assert kb._core._conversions() == start + 1


def test_outputs_are_float64_arrays(rng):
    bound = fed(kb.Amm(kb.Rbf(0.5)), rng)
    for a in bound.bounds(rng.random((4, 2))):
        assert a.dtype == np.float64 and a.shape == (4,) and a.flags.c_contiguous
    empty = bound.bounds(np.zeros((0, 2)))
    assert all(a.shape == (0,) for a in empty)


# Snapshots: pickle round trips continue bit-identically ---------------------------------------

@pytest.mark.parametrize("index", range(8))
def test_bounds_pickle_and_continue_bit_identically(index, rng):
    bound = fed(all_bounds(kb.Matern(nu=1.5, lengthscale=0.4))[index], rng, n=15)
    restored = pickle.loads(pickle.dumps(bound))
    assert type(restored) is type(bound) and repr(restored) == repr(bound)
    clone = copy.deepcopy(bound)
    more = rng.random((10, 2))
    probe = rng.random((30, 2))
    for b in (bound, restored, clone):
        for x in more:
            b.observe(x, float(np.cos(5 * x).sum()))
    expected = bound.bounds(probe)
    for other in (restored, clone):
        for a, b in zip(other.bounds(probe), expected):
            assert np.array_equal(a, b)
    assert restored.to_bytes() == bound.to_bytes()


def test_a_corrupted_snapshot_is_refused(rng):
    data = bytearray(fed(kb.Dmm(kb.Rbf(0.5)), rng).to_bytes())
    data[len(data) // 2] ^= 0x10
    with pytest.raises(kb.SnapshotError):
        kb.Bound.from_bytes(bytes(data))
    with pytest.raises(kb.SnapshotError):
        kb.Bound.from_bytes(bytes(data[:20]))
    with pytest.raises(kb.SnapshotError):
        kb.UcbAgent.from_bytes(kb.Dmm(kb.Rbf(0.5)).to_bytes())


def test_bound_introspection(rng):
    b = kb.Dmm(kb.Rbf(0.5))
    assert len(b) == 0 and b.dim is None and b.name == "dmm"
    fed(b, rng, n=5)
    assert len(b) == 5 and b.dim == 2 and b.observations == 5
    b.truncate(3)
    assert len(b) == 3
    b.remove_oldest()
    assert len(b) == 2
    assert b.fix_arms(rng.random((7, 2))) is True and b.fixed_arms == 7
    b.release_arms()
    assert b.fixed_arms is None
    assert not kb.Cmm(kb.Rbf(0.5)).fix_arms(rng.random((7, 2)))
    assert kb.bound_names() == ["ay", "igp", "amm", "dmm", "cmm", "k-ucb", "bkb", "ek-ucb"]
    for name in kb.bound_names() + ["DMM-UCB", "AY-GP-UCB", "k_ucb"]:
        assert isinstance(kb.make_bound(name, kb.Rbf(0.5), dims=2, horizon=100), kb.Bound)
    assert type(kb.make_bound("cmm", kb.Rbf(0.5))) is kb.Cmm


def test_paper_defaults_are_the_papers(rng):
    d = kb.paper_defaults(kb.Matern(nu=2.5, lengthscale=0.5), 3, 1000)
    assert d["sigma"] == 0.1 and d["norm_bound"] == 10.0 and d["delta"] == 0.01
    assert d["scale"] == pytest.approx(1000 ** (-3 / (2 * 3 + 2 * 2.5)), rel=1e-15)
    assert kb.paper_defaults(kb.Rbf(0.5), 3, 1000)["scale"] == 1.0
    # The same bound by class and by name.
    x = rng.random((10, 3))
    by_class = kb.Dmm(kb.Matern(nu=2.5, lengthscale=0.5), **d)
    by_name = kb.make_bound("dmm", kb.Matern(nu=2.5, lengthscale=0.5), dims=3, horizon=1000)
    for b in (by_class, by_name):
        b.observe_many(x, np.arange(10.0))
    for a, b in zip(by_class.bounds(x), by_name.bounds(x)):
        assert np.array_equal(a, b)


def test_diagnostics_and_certificate(rng):
    cmm = fed(kb.Cmm(kb.Rbf(0.5), sigma=0.1, norm_bound=10.0), rng)
    diag = cmm.diagnostics()
    assert diag.observations == 12 and not diag.empty_set and diag.radius_sq > 0
    x = rng.random(2)
    cert = cmm.certificate(x)
    _, _, ucb = cmm.bounds(x[None, :])
    assert cert.upper == pytest.approx(ucb[0], rel=1e-12)
    if cert.primal is not None:
        assert cert.primal <= cert.upper + 1e-9 and cert.gap >= -1e-9
    # Values no function of norm ≤ B = 0.1 can come near (|f| ≤ B here) empty the set.
    bad = kb.Cmm(kb.Rbf(0.5), sigma=0.01, norm_bound=0.1)
    bad.observe_many(np.array([[0.2, 0.2], [0.8, 0.8]]), np.array([50.0, 50.0]))
    assert bad.diagnostics().empty_set
    assert kb.Ay(kb.Rbf(0.5)).diagnostics().radius_sq is None


# Found by review --------------------------------------------------------------------------------

def test_unaligned_float64_arrays_are_copied_not_read_in_place(rng):
    x = rng.random((4, 2))
    raw = np.zeros(x.nbytes + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64).reshape(4, 2)
    unaligned[:] = x
    assert unaligned.flags.c_contiguous and not unaligned.flags.aligned
    bound = fed(kb.Dmm(kb.Rbf(0.5)), rng)
    start = kb._core._conversions()
    for a, b in zip(bound.bounds(unaligned), bound.bounds(x)):
        assert np.array_equal(a, b)
    assert kb._core._conversions() == start + 1


def test_a_scalar_is_not_a_point():
    with pytest.raises(kb.DimensionError):
        kb.Dmm(kb.Rbf(0.5)).observe(0.3, 1.0)
    with pytest.raises(kb.DimensionError):
        kb.Dmm(kb.Rbf(0.5)).bounds(0.3)


def test_equal_kernels_hash_equal():
    pairs = [(kb.Rbf(0.5), kb.Rbf(0.5)), (kb.Linear(0.0), kb.Linear(-0.0)),
             (kb.Rbf(0.5) + kb.Linear(), kb.Rbf(0.5) + kb.Linear())]
    for a, b in pairs + [(k, kb.Kernel.from_bytes(k.to_bytes())) for k, _ in pairs]:
        assert (a == b) <= (hash(a) == hash(b))
    assert kb.Rbf(0.5) == kb.Kernel.from_bytes(kb.Rbf(0.5).to_bytes())
    assert len({kb.Rbf(0.5), kb.Rbf(0.5), kb.Rbf(0.25)}) == 2


def test_slices_count_from_zero():
    for call in (lambda: kb.Rbf(0.5).on(-1, 2), lambda: kb.Rbf(0.5).on(slice(None, -1)),
                 lambda: kb.Rbf(0.5).on(slice(2, 0, -1)), lambda: kb.Rbf(0.5).on("a", 2)):
        with pytest.raises(kb.KernelBanditsError):
            call()


def test_problem_sizes_that_cannot_fit_are_parameter_errors():
    with pytest.raises(kb.InvalidParameterError):
        kb.SyntheticProblem(kb.Rbf(0.5), dims=2**62, centres=2)
    with pytest.raises(kb.InvalidParameterError):
        kb.SyntheticProblem(kb.Rbf(0.5), dims=3, arms=2**62)


def test_problem_values_at_points_and_rows(rng):
    problem = kb.SyntheticProblem(kb.Matern(nu=2.5, lengthscale=0.5), dims=2, seed=3)
    x = rng.random((5, 2))
    start = kb._core._conversions()
    values = problem.value(x)
    assert kb._core._conversions() == start
    assert values.shape == (5,) and values[2] == problem.value(x[2])
    with pytest.raises(kb.NonFiniteError):
        problem.value(np.array([np.nan, 0.5]))
    r = problem.round(0)
    assert not r.arms.flags.writeable and not r.values.flags.writeable


# The core package needs numpy only; kernel_bandits.optuna says what to install ---------------


def test_the_package_imports_without_optuna_and_the_extra_says_what_to_install():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['optuna'] = None  # as if Optuna were not installed\n"
        "import kernel_bandits as kb\n"
        "kb.UcbAgent(kb.Dmm(kb.Rbf(0.5))).select([[0.1], [0.9]])\n"
        "assert 'optuna' not in [m.split('.')[0] for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    import kernel_bandits.optuna\n"
        "except ImportError as e:\n"
        "    print(e)\n"
        "else:\n"
        "    raise SystemExit('imported without optuna')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "pip install" in out.stdout and "[optuna]" in out.stdout
