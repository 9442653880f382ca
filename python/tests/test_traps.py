"""Issue 37: crossed bounds are never silent, the API traps are closed, and the state is readable.

Each test here failed before its fix (see the commit messages): a crossed `bounds()` returned
plain arrays without a word, `select_batch([lo, hi], q)` returned arm indices, an update 1e-9
away from a pending point left it pending, `Matern(0.5, 2.5)` meant ν = 0.5, (n, 1) targets
were refused, and σ, B, δ, c and the observations could not be read back.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

import kernel_bandits as kb

SIGMA, DELTA, LENGTHSCALE = 0.01, 0.01, 0.5
X = np.array([[0.1, 0.2], [0.6, 0.6], [0.9, 0.3], [0.3, 0.9], [0.5, 0.1]])
Q = np.array([[i / 4, j / 4] for j in range(5) for i in range(5)])


def rbf(a, b):
    return np.exp(-np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1) / (2 * LENGTHSCALE**2))


def data_radius_sq(x, y):
    """R_t² = a0 q + σ² ld + 2σ² ln(1/δ) (Flynn & Reeb 2024 Eq. 8, a0 = σ², c = 1), by numpy."""
    a0 = SIGMA**2
    k = rbf(x, x) + a0 * np.eye(len(x))
    q = y @ np.linalg.solve(k, y)
    ld = np.linalg.slogdet(k)[1] - len(x) * np.log(a0)
    return a0 * q + SIGMA**2 * ld + 2 * SIGMA**2 * np.log(1 / DELTA)


Y_REFUTED = 5.0 * np.array([1.0, -1.0, 1.0, -1.0, 1.0])


def refuted(cls=kb.Cmm):
    """A bound whose data certainly refute B = 0.01: every f with ‖f‖_H ≤ B has |f| ≤ B (RBF,
    k(x, x) = 1), so its residual at targets ±5 is ≥ Σ (5 − B)², far above R_t²."""
    y = Y_REFUTED
    assert np.sum((np.abs(y) - 0.01) ** 2) > 100 * data_radius_sq(X, y)
    bound = cls(kb.Rbf(LENGTHSCALE), sigma=SIGMA, norm_bound=0.01, delta=DELTA)
    bound.observe_many(X, y)
    return bound


def well_specified(cls=kb.Cmm):
    """f = 0.5 k(·, z), ‖f‖_H = 0.5 ≤ B = 2, observed without noise."""
    bound = cls(kb.Rbf(LENGTHSCALE), sigma=SIGMA, norm_bound=2.0, delta=DELTA)
    bound.observe_many(X, 0.5 * rbf(X, np.array([[0.4, 0.5]]))[:, 0])
    return bound


# Crossed bounds are never silent -------------------------------------------------------------


@pytest.mark.parametrize("cls", [kb.Dmm, kb.Cmm])
def test_refuted_bounds_warn_and_say_so(cls):
    bound = refuted(cls)
    with pytest.warns(kb.MisspecificationWarning, match="the data refute the assumptions") as record:
        values = bound.bounds(Q)
    message = str(record[0].message)
    assert "norm_bound" in message and "AdaptiveNorm" in message
    mean, lcb, ucb = values
    assert isinstance(values, tuple) and len(values) == 3
    assert values.mean is mean and values.lcb is lcb and values.ucb is ucb
    np.testing.assert_array_equal(values.crossed, np.flatnonzero(~(lcb <= ucb)))
    assert values.misspecified
    assert values.empty_set and bound.diagnostics().empty_set
    assert values.crossed.size == len(Q), "both cross everywhere on these data"
    assert f"LCB > UCB at {len(Q)} of {len(Q)} points" in message


def test_well_specified_bounds_are_quiet():
    for cls in (kb.Amm, kb.Dmm, kb.Cmm):
        bound = well_specified(cls)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            values = bound.bounds(Q)
        assert not values.misspecified and values.crossed.size == 0 and not values.empty_set
        assert np.all(values.lcb <= values.ucb)


def test_bound_values_keep_the_tuple_protocol():
    values = well_specified().bounds(Q)
    for restored in (pickle.loads(pickle.dumps(values)), copy.copy(values), copy.deepcopy(values)):
        assert type(restored) is kb.BoundValues
        for a, b in zip(restored, values):
            np.testing.assert_array_equal(a, b)
        assert restored.empty_set == values.empty_set
        np.testing.assert_array_equal(restored.crossed, values.crossed)
    assert np.asarray(values).shape == (3, len(Q))
    assert "BoundValues(mean=" in repr(values) and "crossed=[]" in repr(values)


def test_agents_warn_while_the_data_refute_the_bound():
    agent = kb.UcbAgent(refuted())
    with pytest.warns(kb.MisspecificationWarning):
        agent.bounds(Q)
    with pytest.warns(kb.MisspecificationWarning, match="confidence set is empty"):
        agent.select(Q)
    with pytest.warns(kb.MisspecificationWarning):
        agent.select_in(kb.BoxDomain.unit(2))
    # As an error: the agent is unchanged, and "refuse" still raises its own error.
    before = agent.to_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error", kb.MisspecificationWarning)
        with pytest.raises(kb.MisspecificationWarning):
            agent.select(Q)
    assert agent.to_bytes() == before
    with pytest.raises(kb.MisspecifiedError), warnings.catch_warnings():
        warnings.simplefilter("ignore", kb.MisspecificationWarning)
        kb.UcbAgent(refuted(), misspecification="refuse").select(Q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kb.UcbAgent(well_specified()).select(Q)


def test_the_warning_is_a_user_warning_exported_by_the_package():
    assert issubclass(kb.MisspecificationWarning, UserWarning)
    assert issubclass(kb.PendingWarning, UserWarning)
    assert "MisspecificationWarning" in kb.__all__ and "BoundValues" in kb.__all__


# The traps -----------------------------------------------------------------------------------


def fed_agent():
    agent = kb.UcbAgent(kb.Dmm(kb.Rbf(0.3), sigma=0.1, norm_bound=2.0))
    for x in X:
        agent.update(x, float(np.sin(3 * x[0]) + x[1]))
    return agent


def test_a_list_pair_is_not_silently_two_arms():
    agent = fed_agent()
    lo, hi = [0.0, 0.0], [1.0, 1.0]
    before = agent.to_bytes()
    with pytest.raises(kb.InvalidParameterError, match="ambiguous.*BoxDomain"):
        agent.select_batch([lo, hi], 4)
    assert agent.to_bytes() == before and agent.pending_len == 0
    choices = agent.select_batch((lo, hi), 4)
    assert all(isinstance(c, kb.Choice) for c in choices)
    # A 2-D array of two rows still means two arms.
    two_arms = agent.copy()
    for c in choices:
        two_arms.withdraw(c.point)
    assert two_arms.select_batch(np.array([lo, hi]), 2) in ([0, 1], [1, 0])


def test_updates_resolve_pending_points_within_the_tolerance():
    agent = fed_agent()
    p = np.array([0.123456789, 0.987654321])
    for x in (p + 1e-9, p.astype(np.float32), np.array([0.123457, 0.987654])):
        agent.pending(p)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            agent.update(x, 0.3)
        assert agent.pending_len == 0, x
    # Beyond it: the point stays pending, and the update says so.
    agent.pending(p)
    with pytest.warns(kb.PendingWarning, match="resolved none of the 1 pending"):
        agent.update(p * (1 + 1e-4), 0.3)
    assert agent.pending_len == 1
    agent.withdraw(p)
    # No warning without pending points.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.update(p * (1 + 1e-4), 0.3)


def test_matern_arguments_are_keyword_only():
    with pytest.raises(TypeError, match=r"keyword arguments only.*Matern\(0.5, 2.5\).*scikit-learn"):
        kb.Matern(0.5, 2.5)
    with pytest.raises(TypeError, match="keyword"):
        kb.Matern(2.5, lengthscale=0.5)
    with pytest.raises(TypeError, match="missing keyword argument.*lengthscale"):
        kb.Matern(nu=2.5)
    k = kb.Matern(lengthscale=0.5, nu=2.5)
    assert (k.nu, k.lengthscale) == (2.5, 0.5)
    assert repr(k) == "Matern(nu=2.5, lengthscale=0.5)"


def test_column_and_one_element_targets_are_accepted():
    y = np.sin(3 * X[:, 0])
    flat = kb.Dmm(kb.Rbf(0.3))
    flat.observe_many(X, y)
    for column in (y.reshape(-1, 1), y.reshape(-1, 1).tolist(), np.asfortranarray(y.reshape(-1, 1))):
        b = kb.Dmm(kb.Rbf(0.3))
        b.observe_many(X, column)
        for u, v in zip(b.bounds(Q), flat.bounds(Q)):
            np.testing.assert_array_equal(u, v)
    one = kb.Dmm(kb.Rbf(0.3))
    agent = kb.UcbAgent(kb.Dmm(kb.Rbf(0.3)))
    for x, target in zip(X, y):
        for shaped in (np.array([target]), np.array([[target]]), np.array(target), [target], np.float32(target)):
            b = one.copy()
            b.observe(x, shaped)
            assert b.observed_y[-1] == float(np.asarray(shaped).item())
        one.observe(x, np.array([target]))
        agent.update(x, np.array([[target]]))
    np.testing.assert_array_equal(one.observed_y, y)
    np.testing.assert_array_equal(agent.observed_y, y)
    with pytest.raises(kb.DimensionError, match="one number"):
        one.observe(X[0], np.array([1.0, 2.0]))
    with pytest.raises(kb.DimensionError):
        one.observe_many(X, np.ones((len(X), 2)))
    with pytest.raises(kb.KernelBanditsError):
        one.observe(X[0], "a")
    assert len(one) == len(X)


# Readable state ------------------------------------------------------------------------------


def test_parameters_in_use_are_readable_and_shown():
    b = kb.Dmm(kb.Rbf(0.3), sigma=0.05, norm_bound=4.0, delta=0.1, scale=0.5)
    assert (b.sigma, b.norm_bound, b.delta, b.scale) == (0.05, 4.0, 0.1, 0.5)
    assert "in use: sigma=0.05, norm_bound=4.0, delta=0.1, scale=0.5" in repr(b)
    named = kb.make_bound("cmm", kb.Rbf(0.3), sigma=0.2)
    assert named.sigma == 0.2 and "in use: sigma=0.2, norm_bound=10.0" in repr(named)
    for sketched in (kb.KUcb(kb.Rbf(0.3)), kb.Bkb(kb.Rbf(0.3))):
        assert (sketched.sigma, sketched.norm_bound, sketched.delta, sketched.scale) == (None,) * 4
        assert "in use" not in repr(sketched)
    # An adaptive bound shows the B in force, after it doubled.
    adaptive = kb.AdaptiveNorm(kb.Cmm(kb.Rbf(LENGTHSCALE), sigma=SIGMA, norm_bound=0.01, delta=DELTA))
    adaptive.observe_many(X, Y_REFUTED)
    assert adaptive.level > 1
    assert kb.Bound.norm_bound.__get__(adaptive) == adaptive.norm_bound == 0.01 * 2 ** (adaptive.level - 1)
    assert f"norm_bound={adaptive.norm_bound!r}" in repr(adaptive)


def test_observations_are_readable_from_bounds_and_agents():
    y = np.cos(2 * X[:, 1])
    for bound in (kb.Dmm(kb.Rbf(0.3)), kb.Cmm(kb.Rbf(0.3)), kb.Bkb(kb.Rbf(0.3)), kb.KUcb(kb.Rbf(0.3))):
        assert bound.observed_x.shape == (0, 0) and bound.observed_y.shape == (0,)
        bound.observe_many(X[:3], y[:3])
        bound.observe(X[3], y[3])
        bound.observe(X[0], y[4])  # a repeated input
        np.testing.assert_array_equal(bound.observed_x, np.vstack([X[:4], X[:1]]))
        np.testing.assert_array_equal(bound.observed_y, np.append(y[:4], y[4]))
        bound.truncate(2)
        np.testing.assert_array_equal(bound.observed_x, X[:2])
        np.testing.assert_array_equal(bound.observed_y, y[:2])
    agent = kb.UcbAgent(kb.Dmm(kb.Rbf(0.3)))
    for x, t in zip(X, y):
        agent.update(x, t)
    np.testing.assert_array_equal(agent.observed_x, X)
    np.testing.assert_array_equal(agent.observed_y, y)
    np.testing.assert_array_equal(agent.bound.observed_x, X)
