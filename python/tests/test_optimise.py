"""``kernel_bandits.maximise`` and the agents' ``refit`` and ``recommend``.

References: the objective itself (the history holds exactly the points evaluated and their
values), the box, a brute-force argmax of the LCBs, and a bound built from scratch with the
kernel and σ of a separate ``fit_hyperparameters`` call on the data a refit may use."""

import numpy as np
import pytest

import kernel_bandits as kb


def bowl(x):
    return -float((x[0] - 0.3) ** 2 + 0.5 * (x[1] - 1.2) ** 2)


BOX = ([-1.0, 0.0], [1.0, 2.0])


def test_the_history_is_what_was_evaluated():
    calls = []

    def f(x):
        calls.append(np.array(x))
        return bowl(x)

    result = kb.maximise(f, BOX, 14, seed=2)
    assert len(result) == 14 and result.x.shape == (14, 2) and result.y.shape == (14,)
    np.testing.assert_array_equal(result.x, np.array(calls))
    np.testing.assert_array_equal(result.y, [bowl(x) for x in calls])
    assert np.all(result.x >= [-1.0, 0.0]) and np.all(result.x <= [1.0, 2.0])
    # No recommendation before the end of the 6-point initial design, one after every later one.
    assert list(result.recommended_index[:5]) == [-1] * 5 and np.all(result.recommended_index[5:] >= 0)
    assert np.all(np.isnan(result.recommended_lcb[:5]))
    assert np.all(result.recommended_lcb[5:] <= result.recommended_ucb[5:])
    np.testing.assert_array_equal(result.best_so_far, np.maximum.accumulate(result.y))
    r = result.recommendation
    np.testing.assert_allclose(r.x, result.x[r.index], atol=1e-12)
    assert len(result.fits) == 14 - 6


def test_given_initial_points_and_minimising_by_negation():
    initial = np.array([[-1.0, 0.0], [1.0, 2.0], [0.0, 1.0]])
    result = kb.maximise(lambda x: -(-bowl(x)), kb.BoxDomain(*BOX), 8, initial=initial,
                         refit="strict", refit_every=0)
    np.testing.assert_array_equal(result.x[:3], initial)
    assert len(result.fits) == 1


def test_errors():
    with pytest.raises(kb.InvalidParameterError, match="budget"):
        kb.maximise(bowl, BOX, 5)
    calls = []

    def nan_at_9(x):
        calls.append(1)
        return float("nan") if len(calls) == 9 else bowl(x)

    with pytest.raises(kb.NonFiniteError, match="evaluation 9"):
        kb.maximise(nan_at_9, BOX, 12)

    def raises(x):
        raise RuntimeError("the experiment failed")

    with pytest.raises(RuntimeError, match="the experiment failed"):
        kb.maximise(raises, BOX, 10)
    with pytest.raises(kb.InvalidParameterError):
        kb.maximise(bowl, ([0.0], [-1.0]), 10)
    with pytest.raises(kb.InvalidParameterError, match="refit mode"):
        kb.maximise(bowl, BOX, 10, refit="sometimes")
    with pytest.raises(kb.InvalidParameterError, match="initial"):
        kb.maximise(bowl, BOX, 10, initial=[[5.0, 0.0], [0.0, 0.0]])
    with pytest.raises(kb.DimensionError):
        kb.maximise(bowl, BOX, 10, initial=[[0.0], [0.5]])
    with pytest.raises(kb.InvalidParameterError, match="batch_rule"):
        kb.maximise(bowl, BOX, 10, batch=2, batch_rule="bucb")


def test_batches_of_four_with_either_rule_are_distinct_and_fill_the_budget():
    for rule in ("pending-ucb", "exploration"):
        result = kb.maximise(bowl, BOX, 15, batch=4, batch_rule=rule, starts=128)
        x = np.asarray(result.x)
        assert x.shape == (15, 2)  # 6 initial + 4 + 4 + 1
        later = x[6:]
        assert len({row.tobytes() for row in later}) == len(later)
    # The two rules choose differently after the first point of a batch (same first point).
    a = np.asarray(kb.maximise(bowl, BOX, 10, batch=4, starts=128).x)
    b = np.asarray(kb.maximise(bowl, BOX, 10, batch=4, batch_rule="exploration", starts=128).x)
    np.testing.assert_array_equal(a[:7], b[:7])
    assert not np.array_equal(a[7:], b[7:])


def data(n, offset=0):
    i = np.arange(offset, offset + n)
    x = np.stack([(i * 0.6180339887) % 1.0, (i * 0.414213562) % 1.0], axis=1)
    y = np.sin(4 * x[:, 0]) + np.cos(3 * x[:, 1]) * x[:, 0] + 0.05 * np.sin(i * 12.9898)
    return x, y


def test_refit_all_data_and_strict_against_bounds_built_from_scratch():
    fit0 = kb.fit_hyperparameters(*data(5), starts=4, seed=1)
    start = fit0.bound("dmm", norm_bound=2.0, delta=0.05, scale=0.5)
    agent = kb.UcbAgent(start)
    x, y = data(15)
    for xi, yi in zip(x, y):
        agent.update(xi, yi)
    fit = agent.refit("all", starts=8, seed=3)
    separate = kb.fit_hyperparameters(x, y, starts=8, seed=3)
    assert fit.noise_sd == separate.noise_sd and list(fit.lengthscales) == list(separate.lengthscales)
    reference = kb.Dmm(separate.kernel, sigma=separate.noise_sd, norm_bound=2.0, delta=0.05, scale=0.5)
    for xi, yi in zip(x, y):
        reference.observe(xi, yi)
    q = np.array([[0.1, 0.9], [0.5, 0.5], [0.9, 0.2]])
    for a, b in zip(agent.bounds(q), reference.bounds(q)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)

    fit = agent.refit("strict", starts=8, seed=3)
    assert len(agent.bound) == 0
    later_x, later_y = data(4, offset=15)
    for xi, yi in zip(later_x, later_y):
        agent.update(xi, yi)
    reference = kb.Dmm(fit.kernel, sigma=fit.noise_sd, norm_bound=2.0, delta=0.05, scale=0.5)
    for xi, yi in zip(later_x, later_y):
        reference.observe(xi, yi)
    for a, b in zip(agent.bounds(q), reference.bounds(q)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_rejected_refit_changes_nothing_and_recommend_is_the_largest_lcb():
    agent = kb.UcbAgent(kb.Dmm(kb.Matern(nu=2.5, lengthscale=0.3), sigma=0.1, norm_bound=2.0))
    with pytest.raises(kb.NoArmsError):
        agent.recommend()
    agent.update([0.2, 0.3], 1.0)
    before = agent.bounds([[0.5, 0.5]])
    with pytest.raises(kb.InvalidParameterError):  # the fit needs 2 observations
        agent.refit()
    np.testing.assert_array_equal(agent.bounds([[0.5, 0.5]]), before)
    x, y = data(12)
    for xi, yi in zip(x, y):
        agent.update(xi, yi)
    with pytest.raises(kb.InvalidParameterError):
        agent.refit("sometimes")
    ay = kb.UcbAgent(kb.Ay(kb.Matern(nu=2.5, lengthscale=0.3)))
    for xi, yi in zip(x, y):
        ay.update(xi, yi)
    ay_before = ay.bounds([[0.5, 0.5]])
    with pytest.raises(kb.UnsupportedError):
        ay.refit()
    np.testing.assert_array_equal(ay.bounds([[0.5, 0.5]]), ay_before)
    observed = np.vstack([[0.2, 0.3], x])
    _, lcb, _ = agent.bounds(observed)
    r = agent.recommend()
    assert r.index == int(np.argmax(lcb)) and r.lcb == lcb[r.index]
    np.testing.assert_array_equal(r.x, observed[r.index])
