"""σ, ℓ and B unknown: fitted kernels, the marginal likelihood, hyperparameter fits, the adaptive
norm bound and the noise estimates, against independent numpy/scipy references written here."""

import copy
import pickle

import numpy as np
import pytest

import kernel_bandits as kb

SQ3, SQ5 = np.sqrt(3.0), np.sqrt(5.0)


# Independent references ----------------------------------------------------------------------

def scaled_distances(x, y, lengthscales):
    """r̃ᵢⱼ = ‖(xᵢ − yⱼ)/ℓ‖ with ℓ one value or one per coordinate."""
    ls = np.broadcast_to(np.asarray(lengthscales, dtype=float), (x.shape[1],))
    d = (x[:, None, :] - y[None, :, :]) / ls
    return np.sqrt((d**2).sum(-1))


PROFILES = {
    ("rbf", None): lambda r: np.exp(-0.5 * r**2),
    ("matern", 0.5): lambda r: np.exp(-r),
    ("matern", 1.5): lambda r: (1 + SQ3 * r) * np.exp(-SQ3 * r),
    ("matern", 2.5): lambda r: (1 + SQ5 * r + 5 * r**2 / 3) * np.exp(-SQ5 * r),
}


def gram(x, y, family, nu, lengthscales, variance):
    """s² κ(r̃) (Rasmussen & Williams 2006 Eq. 4.9, 4.16–4.17) on inputs scaled by ℓ."""
    return variance * PROFILES[(family, nu)](scaled_distances(x, y, lengthscales))


def lml(x, y, family, nu, lengthscales, variance, noise_sd):
    """−½ yᵀK_y⁻¹y − ½ ln det K_y − (n/2) ln 2π, K_y = K + σ²I, by slogdet and solve."""
    k_y = gram(x, x, family, nu, lengthscales, variance) + noise_sd**2 * np.eye(len(y))
    sign, logdet = np.linalg.slogdet(k_y)
    assert sign > 0
    return float(-0.5 * y @ np.linalg.solve(k_y, y) - 0.5 * logdet - 0.5 * len(y) * np.log(2 * np.pi))


def gp_sample(rng, x, family, nu, lengthscale, noise_sd):
    """f ~ GP(0, k) at x by the Cholesky factor of the prior covariance, plus N(0, σ²) noise."""
    k = gram(x, x, family, nu, lengthscale, 1.0) + 1e-10 * np.eye(len(x))
    f = np.linalg.cholesky(k) @ rng.standard_normal(len(x))
    return f, f + noise_sd * rng.standard_normal(len(x))


@pytest.fixture
def data(rng):
    x = rng.random((25, 2))
    y = np.sin(3 * x[:, 0]) - x[:, 1] ** 2 + 0.1 * rng.standard_normal(25)
    return x, y


def refuting_data(rng, n=12):
    """Values far beyond what a small ‖f‖_H allows (a step of height ±3 on close inputs)."""
    x = rng.random((n, 2))
    return x, np.where(x[:, 0] > 0.5, 3.0, -3.0)


# FittedKernel ------------------------------------------------------------------------------

@pytest.mark.parametrize("family, nu", [("rbf", None), ("matern", 0.5), ("matern", 1.5), ("matern", 2.5)])
def test_fitted_kernel_gram_is_the_formula_on_scaled_inputs(family, nu, rng):
    x, y = rng.random((8, 3)), rng.random((5, 3)) * 2
    kw = {"family": family} if nu is None else {"family": family, "nu": nu}
    per = kb.FittedKernel([0.3, 1.1, 4.0], variance=1.7, **kw)
    np.testing.assert_allclose(per(x, y), gram(x, y, family, nu, [0.3, 1.1, 4.0], 1.7), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(per(x), gram(x, x, family, nu, [0.3, 1.1, 4.0], 1.7), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(per.diag(x), np.full(8, 1.7))
    shared = kb.FittedKernel(0.4, variance=0.5, **kw)
    np.testing.assert_allclose(shared(x, y), gram(x, y, family, nu, 0.4, 0.5), rtol=1e-12, atol=1e-15)
    # A shared ℓ is the family kernel times s², bit for bit.
    plain = kb.Rbf(0.4) if family == "rbf" else kb.Matern(nu=nu, lengthscale=0.4)
    assert np.array_equal(shared(x, y), (0.5 * plain)(x, y))
    assert per.family == family and per.per_dimension and not shared.per_dimension
    assert per.variance == 1.7 and per.smoothness == nu
    np.testing.assert_array_equal(per.lengthscales, [0.3, 1.1, 4.0])
    np.testing.assert_array_equal(shared.lengthscales, [0.4])


def test_fitted_kernels_pickle_and_work_in_bounds_and_agents(rng):
    k = kb.FittedKernel([0.3, 0.8], family="matern", nu=1.5, variance=1.0)
    for restored in (pickle.loads(pickle.dumps(k)), copy.deepcopy(k), eval("kb." + repr(k))):
        assert type(restored) is kb.FittedKernel and restored == k and repr(restored) == repr(k)
    assert isinstance(k, kb.Kernel)
    agent = kb.UcbAgent(kb.Dmm(k, sigma=0.1, norm_bound=2.0))
    arms = rng.random((20, 2))
    for _ in range(10):
        i = agent.select(arms)
        agent.update(arms[i], float(np.sin(3 * arms[i]).sum()))
    assert len(agent) == 10
    assert "FittedKernel" in repr(agent.bound)
    restored = pickle.loads(pickle.dumps(agent))
    assert restored.select(arms) == agent.select(arms)
    combined = 0.5 * k + kb.Linear()
    assert combined(arms).shape == (20, 20)


def test_per_dimension_kernels_refuse_other_dimensions():
    k = kb.FittedKernel([0.3, 0.8])
    with pytest.raises(kb.DimensionError):
        k(np.zeros((2, 3)))
    with pytest.raises(kb.DimensionError):
        kb.Dmm(k).observe(np.zeros(3), 0.0)


# The log marginal likelihood and its gradient ------------------------------------------------

@pytest.mark.parametrize(
    "kernel, family, nu, ls, s2",
    [
        (kb.FittedKernel([0.4, 0.9], nu=2.5, variance=1.3), "matern", 2.5, [0.4, 0.9], 1.3),
        (kb.FittedKernel(0.5, family="rbf", variance=0.7), "rbf", None, 0.5, 0.7),
        (kb.Matern(nu=1.5, lengthscale=0.3), "matern", 1.5, 0.3, 1.0),
        (kb.Rbf(0.6), "rbf", None, 0.6, 1.0),
    ],
)
def test_log_marginal_likelihood_is_the_dense_formula(kernel, family, nu, ls, s2, data):
    x, y = data
    for sigma in (0.05, 0.3, 2.0):
        expected = lml(x, y, family, nu, ls, s2, sigma)
        assert kb.log_marginal_likelihood(kernel, x, y, sigma) == pytest.approx(expected, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("per_dimension", [False, True])
@pytest.mark.parametrize("family, nu", [("rbf", None), ("matern", 1.5), ("matern", 2.5)])
def test_likelihood_gradient_is_the_finite_difference_of_the_formula(family, nu, per_dimension, data):
    x, y = data
    ls = np.array([0.4, 0.7]) if per_dimension else np.array([0.5])
    s2, sigma = 1.2, 0.2
    kw = {"family": family} if nu is None else {"family": family, "nu": nu}
    kernel = kb.FittedKernel(list(ls) if per_dimension else float(ls[0]), variance=s2, **kw)
    g = kb.log_marginal_likelihood_gradient(kernel, x, y, sigma)
    assert g.value == pytest.approx(lml(x, y, family, nu, ls, s2, sigma), rel=1e-10)
    h = 1e-5

    def central(f):
        return (f(h) - f(-h)) / (2 * h)

    for i in range(len(ls)):
        def at(e, i=i):
            moved = ls.copy()
            moved[i] *= np.exp(e)
            return lml(x, y, family, nu, moved, s2, sigma)

        assert g.log_lengthscales[i] == pytest.approx(central(at), rel=1e-6, abs=1e-6)
    assert g.log_variance == pytest.approx(central(lambda e: lml(x, y, family, nu, ls, s2 * np.exp(e), sigma)), rel=1e-6, abs=1e-6)
    # θ = ln σ², so σ moves by exp(e/2).
    assert g.log_noise_variance == pytest.approx(
        central(lambda e: lml(x, y, family, nu, ls, s2, sigma * np.exp(e / 2))), rel=1e-6, abs=1e-6
    )
    assert g.log_lengthscales.shape == (len(ls),) and g.log_lengthscales.dtype == np.float64


# Fitting -------------------------------------------------------------------------------------

@pytest.mark.parametrize("family, nu", [("matern", 2.5), ("rbf", None)])
def test_fit_recovers_the_lengthscale_and_noise_of_a_gp_sample(family, nu):
    # 200 points of one draw of a GP prior with ℓ = 0.3 and σ = 0.1 (fixed seed). With this much
    # data the maximum-likelihood ℓ is within 25% and σ within 15% of the truth.
    rng = np.random.default_rng(7)
    x = rng.random((200, 2))
    _, y = gp_sample(rng, x, family, nu, 0.3, 0.1)
    kw = {"family": family} if nu is None else {"family": family, "nu": nu}
    kw["objective"] = "ml"
    fit = kb.fit_hyperparameters(x, y, **kw)
    assert fit.lengthscales[0] == pytest.approx(0.3, rel=0.25)
    assert fit.noise_sd == pytest.approx(0.1, rel=0.15)
    assert fit.variance == 1.0 and fit.observations == 200 and fit.evaluations >= 12
    assert fit.mean == 0.0 and fit.log_posterior is None
    assert not fit.on_box_edge and fit.at_lower == [] and fit.at_upper == []
    # The reported likelihood is the formula's at the fitted values, and a local maximum.
    best = lml(x, y, family, nu, fit.lengthscales[0], 1.0, fit.noise_sd)
    assert fit.log_likelihood == pytest.approx(best, rel=1e-9)
    for factor in (0.9, 1.1):
        assert lml(x, y, family, nu, fit.lengthscales[0] * factor, 1.0, fit.noise_sd) < best
        assert lml(x, y, family, nu, fit.lengthscales[0], 1.0, fit.noise_sd * factor) < best
    assert isinstance(fit.kernel, kb.FittedKernel) and fit.kernel.family == family
    assert kb.fit_hyperparameters(x, y, **kw).log_likelihood == fit.log_likelihood  # deterministic


def test_map_fit_on_few_points_stays_off_the_edges_and_bound_takes_sigma():
    # 8 points of a 3-D GP sample (σ = 0.1), with an offset and a scale: the default MAP fit
    # keeps σ off its floor, reports the mean it subtracted and the likelihood of y − mean.
    rng = np.random.default_rng(11)
    x = rng.random((8, 3))
    _, y = gp_sample(rng, x, "matern", 2.5, 0.4, 0.1)
    y = 5.0 + 2.0 * y
    fit = kb.fit_hyperparameters(x, y)
    assert not fit.on_box_edge and fit.edge_report is None
    assert fit.mean == pytest.approx(y.mean(), rel=1e-12)
    best = lml(x, y - fit.mean, "matern", 2.5, fit.lengthscales[0], 1.0, fit.noise_sd)
    assert fit.log_likelihood == pytest.approx(best, rel=1e-9)
    assert fit.log_posterior is not None
    ml = kb.fit_hyperparameters(x, y - y.mean(), objective="ml")
    assert ml.log_posterior is None
    with pytest.raises(kb.InvalidParameterError):
        kb.fit_hyperparameters(x, y, objective="bayes")
    # Fit.bound takes σ (it raised TypeError): the same as the bound built by hand with it.
    sigma = 1.5 * fit.noise_sd
    bound = fit.bound("dmm", norm_bound=2.0, sigma=sigma)
    reference = kb.Dmm(fit.kernel, sigma=sigma, norm_bound=2.0)
    later, probe = rng.random((6, 3)), rng.random((5, 3))
    bound.observe_many(later, later[:, 0])
    reference.observe_many(later, later[:, 0])
    for a, b in zip(bound.bounds(probe), reference.bounds(probe)):
        assert np.array_equal(a, b)
    with pytest.raises(kb.InvalidParameterError, match="sigma"):
        fit.bound("dmm", sigma=-1.0)
    # A refit starts from the previous values.
    again = kb.fit_hyperparameters(x, y, previous=fit)
    assert again.log_posterior == pytest.approx(fit.log_posterior, rel=1e-9)


def test_fit_and_likelihood_take_column_targets_and_one_element_arrays_raise_typed_errors(rng):
    # y as an (n, 1) column, as the agents take it: the same fit and likelihood as the vector.
    x = rng.random((12, 2))
    _, y = gp_sample(rng, x, "matern", 2.5, 0.3, 0.1)
    column = y.reshape(-1, 1)
    by_column, by_vector = kb.fit_hyperparameters(x, column), kb.fit_hyperparameters(x, y)
    assert np.array_equal(by_column.lengthscales, by_vector.lengthscales)
    assert by_column.noise_sd == by_vector.noise_sd
    assert by_column.log_posterior == by_vector.log_posterior
    kernel = kb.FittedKernel(0.3, family="matern", nu=2.5)
    assert kb.log_marginal_likelihood(kernel, x, column, 0.1) == kb.log_marginal_likelihood(
        kernel, x, y, 0.1
    )
    # One observation, as a 1-element array, a (1, 1) column or a list: the package's error
    # (a fit needs two observations), not numpy's.
    for one in (np.array([0.5]), np.array([[0.5]]), [0.5]):
        with pytest.raises(kb.InvalidParameterError, match="at least 2 observations"):
            kb.fit_hyperparameters(x[:1], one)
    # Other shapes are a DimensionError.
    with pytest.raises(kb.DimensionError):
        kb.fit_hyperparameters(x, np.stack([y, y], axis=1))


def test_fit_options(rng):
    x = rng.random((60, 2))
    _, y = gp_sample(rng, x, "matern", 2.5, 0.3, 0.1)
    ard = kb.fit_hyperparameters(x, y, per_dimension=True, fit_variance=True, seed=3)
    assert ard.lengthscales.shape == (2,) and ard.kernel.per_dimension
    fixed = kb.fit_hyperparameters(x, y, noise=0.25, variance=2.0)
    assert fixed.noise_sd == 0.25 and fixed.variance == 2.0
    # A box that excludes the truth: the fit ends on its edge and says which.
    edge = kb.fit_hyperparameters(x, y, lengthscale_bounds=(2.0, 5.0), noise_bounds=(0.01, 0.02))
    assert edge.on_box_edge and edge.at_lower == ["lengthscale"] and edge.at_upper == ["noise_sd"]
    assert "lengthscale[0] = 2 is on the lower edge" in edge.edge_report
    assert "noise_sd (σ) = 0.02 is on the upper edge" in edge.edge_report
    assert edge.lengthscales[0] == pytest.approx(2.0) and edge.noise_sd == pytest.approx(0.02)
    edge_ard = kb.fit_hyperparameters(x, y, per_dimension=True, lengthscale_bounds=(2.0, 5.0))
    assert set(edge_ard.at_lower) >= {"lengthscale[0]", "lengthscale[1]"}
    assert "Fit(kernel=FittedKernel(" in repr(edge)


@pytest.mark.parametrize("name", ["dmm", "cmm", "amm", "ay", "k-ucb", "bkb"])
def test_fit_bound_starts_empty_with_the_fitted_kernel_and_sigma(name, rng, data):
    x, y = data
    fit = kb.fit_hyperparameters(x, y)
    bound = fit.bound(name, norm_bound=2.0, delta=0.05)
    assert len(bound) == 0 and bound.name == name
    if name in ("dmm", "cmm", "amm", "ay"):
        cls = {"dmm": kb.Dmm, "cmm": kb.Cmm, "amm": kb.Amm, "ay": kb.Ay}[name]
        reference = cls(fit.kernel, sigma=fit.noise_sd, norm_bound=2.0, delta=0.05)
        later = rng.random((15, 2))
        targets = np.sin(3 * later[:, 0])
        bound.observe_many(later, targets)
        reference.observe_many(later, targets)
        probe = rng.random((20, 2))
        for a, b in zip(bound.bounds(probe), reference.bounds(probe)):
            assert np.array_equal(a, b)


def test_fits_pickle_copy_and_give_the_same_bounds(rng, data):
    x, y = data
    for fit in (kb.fit_hyperparameters(x, y),
                kb.fit_hyperparameters(x, y, per_dimension=True, lengthscale_bounds=(2.0, 5.0))):
        for restored in (pickle.loads(pickle.dumps(fit)), copy.deepcopy(fit),
                         kb.Fit.from_bytes(fit.to_bytes())):
            assert type(restored) is kb.Fit and repr(restored) == repr(fit)
            assert restored.to_bytes() == fit.to_bytes()
            for name in ("noise_sd", "variance", "log_likelihood", "evaluations", "converged",
                         "observations", "on_box_edge", "at_lower", "at_upper"):
                assert getattr(restored, name) == getattr(fit, name), name
            np.testing.assert_array_equal(restored.lengthscales, fit.lengthscales)
            assert restored.kernel == fit.kernel
            # The same bound, bit for bit, after the same observations.
            later, probe = rng.random((12, 2)), rng.random((9, 2))
            bounds = []
            for f in (fit, restored):
                bound = f.bound("dmm", norm_bound=2.0)
                bound.observe_many(later, np.cos(3 * later[:, 1]))
                bounds.append(bound.bounds(probe))
            for a, b in zip(*bounds):
                assert np.array_equal(a, b)
    # Bytes that are not a fit's snapshot: a kernel's, a damaged one, a truncated one.
    data = bytearray(fit.to_bytes())
    data[len(data) // 2] ^= 0x10
    for bad in (fit.kernel.to_bytes(), bytes(data), fit.to_bytes()[:20], b""):
        with pytest.raises(kb.SnapshotError):
            kb.Fit.from_bytes(bad)


def test_fit_bound_adaptive_and_paper_defaults(data):
    x, y = data
    fit = kb.fit_hyperparameters(x, y)
    b = fit.bound("dmm", norm_bound=0.5, adaptive=True, max_level=10)
    assert isinstance(b, kb.AdaptiveNorm) and len(b) == 0
    assert b.initial_norm == 0.5 and b.max_level == 10
    paper = fit.bound("cmm", dims=2, horizon=100)
    assert len(paper) == 0
    with pytest.raises(kb.UnsupportedError):
        fit.bound("amm", adaptive=True)
    with pytest.raises(kb.KernelBanditsError):
        fit.bound("no-such-bound")
    with pytest.raises(kb.InvalidParameterError):
        fit.bound("dmm", dims=2)
    with pytest.raises(kb.InvalidParameterError):
        fit.bound("dmm", norm_bound=-1.0)


# AdaptiveNorm --------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [kb.Dmm, kb.Cmm])
def test_adaptive_norm_equals_a_fresh_bound_at_its_final_level(cls, rng):
    kernel = kb.Matern(nu=2.5, lengthscale=0.3)
    x, y = refuting_data(rng)
    bound = kb.AdaptiveNorm(cls(kernel, sigma=0.1, norm_bound=0.05, delta=0.01))
    # One δ serves every level (Flynn & Reeb 2024 Eq. 8 does not involve B): no share per level.
    assert (bound.level, bound.norm_bound, bound.initial_norm, bound.delta) == (1, 0.05, 0.05, 0.01)
    assert not hasattr(bound, "total_delta")
    for xi, yi in zip(x, y):
        bound.observe(xi, float(yi))
    assert bound.level > 1 and bound.exhausted is None
    assert bound.norm_bound == 0.05 * 2 ** (bound.level - 1)
    assert bound.delta == 0.01
    fresh = cls(kernel, sigma=0.1, norm_bound=0.05 * 2 ** (bound.level - 1), delta=0.01)
    for xi, yi in zip(x, y):  # as the wrapper, one at a time (a batch factorises in blocks)
        fresh.observe(xi, float(yi))
    probe = rng.random((30, 2))
    for a, b in zip(bound.bounds(probe), fresh.bounds(probe)):
        if cls is kb.Dmm:
            assert np.array_equal(a, b)
        else:
            # CMM's eigendecomposition is refreshed at every check of the wrapper and once for
            # the fresh bound: equal up to rounding.
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert not bound.diagnostics().empty_set
    # The log: consecutive levels, each doubling B (δ stays as it was).
    steps = bound.doublings
    assert [s.level for s in steps] == list(range(2, bound.level + 1))
    for s in steps:
        assert s.new_norm == 2 * s.old_norm == 0.05 * 2 ** (s.level - 1)
        assert not hasattr(s, "delta") and not hasattr(s, "old_delta")
        assert 1 <= s.observations <= len(x) and s.refuted_by[1] < 0
    assert [s.observations for s in steps] == sorted(s.observations for s in steps)
    assert "NormDoubling(observations=" in repr(steps[0])
    # A batch gives the same bound and log as one observation at a time.
    batch = kb.AdaptiveNorm(cls(kernel, sigma=0.1, norm_bound=0.05, delta=0.01))
    batch.observe_many(x, y)
    assert batch.to_bytes() == bound.to_bytes()


@pytest.mark.parametrize("cls", [kb.Dmm, kb.Cmm])
@pytest.mark.parametrize("before", [0, 3])
def test_a_numerical_failure_in_a_batch_leaves_the_adaptive_bound_as_it_was(cls, before, rng):
    bound = kb.AdaptiveNorm(cls(kb.FittedKernel([0.3, 2.0]), sigma=0.1, norm_bound=0.01), max_level=8)
    bound.observe_many(rng.random((before, 2)), rng.random(before))
    bound.bounds(np.zeros((1, 2)))
    snapshot = bound.to_bytes()
    with pytest.raises(kb.NonFiniteError):
        bound.observe_many(np.array([[0.2, 0.2], [0.0, 0.0]]), np.array([0.0, 1e300]))
    assert bound.to_bytes() == snapshot


@pytest.mark.parametrize("cls", [kb.Dmm, kb.Cmm])
def test_adaptive_norm_never_doubles_when_b0_is_far_above_the_truth(cls, rng):
    # f = 0.5 k(·, x0) has ‖f‖_H = 0.5; B0 = 20, Gaussian noise of the σ assumed.
    kernel = kb.Matern(nu=2.5, lengthscale=0.3)
    x0 = np.array([[0.4, 0.6]])
    x = rng.random((80, 2))
    y = 0.5 * kernel(x, x0)[:, 0] + 0.1 * rng.standard_normal(80)
    bound = kb.AdaptiveNorm(cls(kernel, sigma=0.1, norm_bound=20.0, delta=0.01))
    bound.observe_many(x, y)
    assert bound.doublings == [] and bound.level == 1 and bound.norm_bound == 20.0


def test_adaptive_norm_in_an_agent_pickles_and_continues(rng):
    kernel = kb.Matern(nu=2.5, lengthscale=0.3)
    arms = rng.random((30, 2))
    agent = kb.UcbAgent(kb.AdaptiveNorm(kb.Dmm(kernel, sigma=0.1, norm_bound=0.05)))
    for _ in range(15):
        i = agent.select(arms)
        agent.update(arms[i], 3.0 if arms[i, 0] > 0.5 else -3.0)
    inside = agent.bound
    assert isinstance(inside, kb.AdaptiveNorm) and inside.level > 1
    restored = pickle.loads(pickle.dumps(agent))
    assert restored.to_bytes() == agent.to_bytes()
    for a in (agent, restored):
        for _ in range(5):
            i = a.select(arms)
            a.update(arms[i], float(np.sin(arms[i]).sum()))
    assert restored.to_bytes() == agent.to_bytes()
    # The bound itself pickles and copies as an AdaptiveNorm.
    for b in (pickle.loads(pickle.dumps(inside)), copy.deepcopy(inside), inside.copy(),
              kb.Bound.from_bytes(inside.to_bytes())):
        assert type(b) is kb.AdaptiveNorm and b.to_bytes() == inside.to_bytes()
        assert b.level == inside.level and len(b.doublings) == len(inside.doublings)
    assert repr(pickle.loads(pickle.dumps(inside))) == repr(inside)
    assert repr(inside).startswith("<AdaptiveNorm(Dmm(")
    # Restarting and sliding-window agents take it too.
    kb.Restarting(inside, 10)
    kb.SlidingWindow(inside, 10)


def test_plain_bound_snapshots_keep_their_kind_and_adaptive_ones_have_their_own():
    plain = kb.Dmm(kb.Rbf(0.5)).to_bytes()
    adaptive = kb.AdaptiveNorm(kb.Dmm(kb.Rbf(0.5))).to_bytes()
    # A plain bound's snapshot is that of the crate's AnyBound, as before AdaptiveNorm existed.
    assert b"bound<python-kernel>" in plain and b"adaptive-norm" not in plain
    assert b"adaptive-norm<bound<python-kernel>>" in adaptive
    assert type(kb.Bound.from_bytes(plain)) is kb.Dmm
    assert type(kb.Bound.from_bytes(adaptive)) is kb.AdaptiveNorm
    for data in (plain, adaptive):
        with pytest.raises(kb.SnapshotError):
            kb.UcbAgent.from_bytes(data)
    corrupted = bytearray(adaptive)
    corrupted[len(corrupted) // 2] ^= 0x10
    with pytest.raises(kb.SnapshotError):
        kb.Bound.from_bytes(bytes(corrupted))


def test_adaptive_norm_refuses_what_it_cannot_adapt_and_caps_the_level(rng):
    kernel = kb.Rbf(0.3)
    for other in (kb.Amm(kernel), kb.Ay(kernel), kb.KUcb(kernel), kb.Bkb(kernel)):
        with pytest.raises(kb.UnsupportedError):
            kb.AdaptiveNorm(other)
    inner = kb.AdaptiveNorm(kb.Dmm(kernel))
    with pytest.raises(kb.UnsupportedError):
        kb.AdaptiveNorm(inner)
    with pytest.raises(kb.InvalidParameterError):
        kb.AdaptiveNorm(kb.Dmm(kernel), max_level=0)
    with pytest.raises(kb.InvalidParameterError):
        kb.AdaptiveNorm(kb.Dmm(kernel, norm_bound=1e300), max_level=40)
    x, y = refuting_data(rng)
    capped = kb.AdaptiveNorm(kb.Cmm(kernel, sigma=0.1, norm_bound=0.01), max_level=2)
    capped.observe_many(x, y)
    assert capped.level == 2 and capped.exhausted is not None
    assert capped.diagnostics().empty_set
    # Wrapping a bound that already holds data checks it at once; the original is untouched.
    fed = kb.Cmm(kernel, sigma=0.1, norm_bound=0.01)
    fed.observe_many(x, y)
    before = fed.to_bytes()
    wrapped = kb.AdaptiveNorm(fed)
    assert wrapped.level > 1 and fed.to_bytes() == before


def test_rejected_calls_leave_the_adaptive_bound_unchanged(rng):
    x, y = refuting_data(rng)
    bound = kb.AdaptiveNorm(kb.Cmm(kb.Matern(nu=2.5, lengthscale=0.3), sigma=0.1, norm_bound=0.05))
    bound.observe_many(x[:6], y[:6])
    before, level = bound.to_bytes(), bound.level
    bad_batch_y = y[6:].copy()
    bad_batch_y[-1] = np.nan
    calls = [
        (lambda: bound.observe([0.1, np.nan], 1.0), kb.NonFiniteError),
        (lambda: bound.observe([0.1, 0.2, 0.3], 1.0), kb.DimensionError),
        (lambda: bound.observe([0.1, 0.2], float("inf")), kb.NonFiniteError),
        (lambda: bound.observe_many(x[6:], bad_batch_y), kb.NonFiniteError),
        (lambda: bound.observe_many(x[6:], y[6:-1]), kb.DimensionError),
        # Finite targets that overflow the posterior: a numerical failure in mid-batch.
        (lambda: bound.observe_many(np.array([[0.2, 0.2], [0.0, 0.0]]), np.array([0.0, 1e300])), kb.NonFiniteError),
        (lambda: bound.bounds(np.zeros((2, 3))), kb.DimensionError),
        (lambda: kb.AdaptiveNorm.from_bytes(before[:30]), kb.SnapshotError),
    ]
    for call, error in calls:
        with pytest.raises(error):
            call()
        assert bound.to_bytes() == before and bound.level == level


# Noise estimates -----------------------------------------------------------------------------

def test_replicate_estimate_is_the_pooled_variance_with_a_chi2_interval(rng):
    chi2 = pytest.importorskip("scipy.stats").chi2
    # 6 inputs seen 2–5 times, 4 seen once.
    counts = [2, 3, 5, 4, 2, 3, 1, 1, 1, 1]
    sites = rng.random((len(counts), 2))
    x = np.repeat(sites, counts, axis=0)
    y = np.sin(4 * x[:, 0]) + 0.2 * rng.standard_normal(len(x))
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    est = kb.estimate_noise(kb.Matern(nu=2.5, lengthscale=0.3), x, y, confidence=0.9)
    rep = est.replicates
    groups = [y[np.all(x == s, axis=1)] for s, c in zip(sites, counts) if c > 1]
    df = sum(len(g) - 1 for g in groups)
    s2 = sum(((g - g.mean()) ** 2).sum() for g in groups) / df
    assert (rep.groups, rep.degrees_of_freedom, est.observations) == (6, df, len(x))
    assert rep.sigma == pytest.approx(np.sqrt(s2), rel=1e-12)
    lo = np.sqrt(df * s2 / chi2.ppf(0.95, df))
    hi = np.sqrt(df * s2 / chi2.ppf(0.05, df))
    assert rep.interval == pytest.approx((lo, hi), rel=1e-9)
    assert rep.confidence == 0.9
    assert rep.assess(lo * 0.99) == "too_small"
    assert rep.assess(np.sqrt(lo * hi)) == "plausible"
    assert rep.assess(hi * 1.01) == "loose"
    with pytest.raises(kb.InvalidParameterError):
        rep.assess(-1.0)
    assert "ReplicateEstimate(sigma=" in repr(rep) and "NoiseEstimate(" in repr(est)


def test_residual_estimate_without_replicates(rng):
    x = rng.random((120, 1))
    y = np.sin(3 * x[:, 0]) + 0.1 * rng.standard_normal(120)
    est = kb.estimate_noise(kb.Rbf(0.3), x, y)
    assert est.replicates is None
    res = est.residual
    # A smooth f well inside the kernel's reach: σ̂ within 25% of σ = 0.1.
    assert res.sigma == pytest.approx(0.1, rel=0.25)
    assert 0 < res.effective_parameters < 120 and res.regulariser > 0 and not res.at_search_edge
    one = kb.estimate_noise(kb.Rbf(0.3), x[:1], y[:1])
    assert one.residual is None and one.replicates is None and one.observations == 1


# Hostile inputs ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "call, error",
    [
        (lambda x, y: kb.fit_hyperparameters(np.where(np.eye(10, 2) > 0, np.nan, x), y), kb.NonFiniteError),
        (lambda x, y: kb.fit_hyperparameters(x, np.where(np.arange(10) == 3, np.inf, y)), kb.NonFiniteError),
        (lambda x, y: kb.fit_hyperparameters(x, y[:-1]), kb.DimensionError),
        (lambda x, y: kb.fit_hyperparameters(x[:, 0], y), kb.DimensionError),
        (lambda x, y: kb.fit_hyperparameters(x[:1], y[:1]), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x[:0], y[:0]), kb.KernelBanditsError),
        (lambda x, y: kb.fit_hyperparameters(x, y, family="linear"), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, nu=-1.0), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, starts=0), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, refinements=0), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, noise=-0.1), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, noise=float("nan")), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, variance=0.0), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, lengthscale_bounds=(1.0, 0.5)), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, noise_bounds=(0.0, 1.0)), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, y, variance_bounds=(1.0, np.inf)), kb.InvalidParameterError),
        (lambda x, y: kb.fit_hyperparameters(x, np.array(["a"] * 10)), kb.KernelBanditsError),
        (lambda x, y: kb.log_marginal_likelihood(kb.Linear(), x, y, 0.1), kb.UnsupportedError),
        (lambda x, y: kb.log_marginal_likelihood(2.0 * kb.Rbf(0.3), x, y, 0.1), kb.UnsupportedError),
        (lambda x, y: kb.log_marginal_likelihood(kb.Rbf(0.3), x, y, 0.0), kb.InvalidParameterError),
        (lambda x, y: kb.log_marginal_likelihood(kb.Rbf(0.3), x, y[:3], 0.1), kb.DimensionError),
        (lambda x, y: kb.log_marginal_likelihood(kb.FittedKernel([0.1, 0.2, 0.3]), x, y, 0.1), kb.DimensionError),
        (lambda x, y: kb.log_marginal_likelihood_gradient(kb.Rbf(0.3), x, y * np.nan, 0.1), kb.NonFiniteError),
        (lambda x, y: kb.log_marginal_likelihood(kb.Rbf(0.3), np.vstack([x, x]), np.r_[y, y + 1], 1e-9), kb.NumericalError),
        (lambda x, y: kb.estimate_noise(kb.Rbf(0.3), x, y, confidence=1.0), kb.InvalidParameterError),
        (lambda x, y: kb.estimate_noise(kb.Rbf(0.3), x, y[:4]), kb.DimensionError),
        (lambda x, y: kb.estimate_noise(kb.Rbf(0.3), x * np.nan, y), kb.NonFiniteError),
        (lambda x, y: kb.FittedKernel([]), kb.InvalidParameterError),
        (lambda x, y: kb.FittedKernel(-1.0), kb.InvalidParameterError),
        (lambda x, y: kb.FittedKernel([0.1, np.nan]), kb.InvalidParameterError),
        (lambda x, y: kb.FittedKernel(0.3, variance=-1.0), kb.InvalidParameterError),
        (lambda x, y: kb.FittedKernel(0.3, family="matern", nu=0.0), kb.InvalidParameterError),
        (lambda x, y: kb.FittedKernel(0.3, family="cosine"), kb.InvalidParameterError),
    ],
)
def test_hostile_inputs_raise_the_packages_errors(call, error, rng):
    x = rng.random((10, 2))
    y = np.sin(3 * x[:, 0])
    x0, y0 = x.copy(), y.copy()
    with pytest.raises(error) as info:
        call(x, y)
    assert isinstance(info.value, kb.KernelBanditsError) and str(info.value)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)


def test_fit_objects_are_frozen(data):
    fit = kb.fit_hyperparameters(*data)
    with pytest.raises(AttributeError):
        fit.noise_sd = 1.0  # type: ignore[misc]
    k = fit.kernel
    with pytest.raises(AttributeError):
        k.variance = 2.0  # type: ignore[misc]
    # A bound built from the fit and then refused leaves the fit as it was.
    before = repr(fit)
    with pytest.raises(kb.InvalidParameterError):
        fit.bound("dmm", delta=2.0)
    assert repr(fit) == before


# Hostile input, generated: a result or the package's error, never a panic ---------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_hostile import arrays, call, values  # noqa: E402


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    warm=arrays(),
    targets=st.lists(values, max_size=6),
    sigma=values,
    per_dimension=st.booleans(),
    kernel=st.sampled_from([kb.FittedKernel([0.3, 2.0]), kb.FittedKernel(1e-3, family="rbf"), kb.Matern(nu=2.5, lengthscale=1e3)]),
)
def test_unknown_hyperparameter_calls_answer_or_raise_their_own_errors(warm, targets, sigma, per_dimension, kernel):
    y = np.array(targets, dtype=np.float64)
    fit = call(lambda: kb.fit_hyperparameters(warm, y, per_dimension=per_dimension, starts=4, refinements=1))
    if fit is not None:
        assert np.isfinite(fit.noise_sd) and np.all(np.isfinite(fit.lengthscales))
        assert len(fit.bound("dmm")) == 0
    value = call(kb.log_marginal_likelihood, kernel, warm, y, sigma)
    assert value is None or isinstance(value, float)
    gradient = call(kb.log_marginal_likelihood_gradient, kernel, warm, y, sigma)
    assert gradient is None or np.all(np.isfinite(gradient.log_lengthscales))
    call(kb.estimate_noise, kernel, warm, y, 0.95)
    bound = kb.AdaptiveNorm(kb.Dmm(kernel, sigma=0.1, norm_bound=0.01), max_level=8)
    before = bound.to_bytes()
    try:
        bound.observe_many(warm, y)
    except kb.KernelBanditsError as e:
        assert str(e) and bound.to_bytes() == before  # all or nothing
    call(bound.bounds, warm)
    call(REPLICATES.assess, sigma)


REPLICATES = kb.estimate_noise(kb.Rbf(0.5), np.zeros((4, 1)), np.array([0.0, 0.1, -0.1, 0.05])).replicates
