"""Certified recommendations and stopping rules: ``certify``, ``Certifier`` and
``UcbAgent.run_until``.

References: the values of one ``bounds`` call (arg-max of the LCBs with ties to the lowest index,
max of the UCBs, written out here), running extrema kept by the test, and the true values of an
RKHS function of known norm."""

import numpy as np
import pytest

import kernel_bandits as kb

KERNEL = kb.Matern(nu=2.5, lengthscale=0.25)


def rkhs_f(x):
    # 0.9·k(0.6, x): norm 0.9 in the kernel's RKHS.
    return 0.9 * float(KERNEL(np.array([[0.6]]), np.atleast_2d(x))[0, 0])


def first_max(values):
    best = 0
    for j in range(1, len(values)):
        if values[j] > values[best]:
            best = j
    return best


def test_certificate_is_the_bounds_arg_max_after_every_observation():
    # Mirrored arms with duplicates (0.2 and 0.8 twice), symmetric data.
    arms = np.array([[0.0], [0.2], [0.2], [0.35], [0.5], [0.65], [0.8], [0.8], [1.0]])
    data = [(0.2, 0.3), (0.8, 0.3), (0.5, 0.9), (0.35, 0.6), (0.65, 0.6), (0.5, 1.0)]
    for make in (kb.Amm, kb.Dmm, kb.Cmm):
        bound = make(KERNEL, sigma=0.1, norm_bound=2.0, delta=0.01)
        for t, (x, y) in enumerate(data, start=1):
            bound.observe([x], y)
            mean, lcb, ucb = bound.bounds(arms)
            c = kb.certify(bound, arms)
            best, top = first_max(lcb), first_max(ucb)
            r = c.recommendation
            assert (r.index, c.upper_index) == (best, top), (make, t)
            assert r.lcb == lcb[best] and r.ucb == ucb[best] and r.mean == mean[best]
            np.testing.assert_array_equal(r.x, arms[best])
            assert c.upper == ucb[top] and c.gap == ucb[top] - lcb[best] and c.gap >= 0
            assert c.observations == t
            assert best not in (2, 7) and top not in (2, 7)  # duplicates never beat the first copy


def test_certifier_keeps_the_running_extrema():
    arms = np.linspace(0, 1, 11)[:, None]
    bound = kb.Dmm(KERNEL, sigma=0.1, norm_bound=2.0, delta=0.01)
    certifier = kb.Certifier(arms)
    assert np.all(np.isneginf(certifier.lower))
    lower = np.full(11, -np.inf)
    upper = np.inf
    for x, y in [(0.5, 1.0), (0.5, 1.02), (0.4, 0.9), (0.5, 0.98), (0.6, 0.92), (0.5, 0.6)]:
        bound.observe([x], y)
        _, lcb, ucb = bound.bounds(arms)
        lower = np.maximum(lower, lcb)
        upper = min(upper, ucb.max())
        c = certifier.update(bound)
        np.testing.assert_array_equal(certifier.lower, lower)
        assert c.upper == upper and c.recommendation.index == first_max(lower)
        assert c.gap == upper - lower.max() and c.gap <= kb.certify(bound, arms).gap


def test_run_until_stops_on_a_certified_gap():
    arms = np.linspace(0, 1, 50)[:, None]
    agent = kb.UcbAgent(kb.Dmm(KERNEL, sigma=0.01, norm_bound=1.0, delta=0.01))
    run = agent.run_until(arms, rkhs_f, budget=200, gap=0.05)
    assert run.stopped_by == "gap" and run.certificate.gap <= 0.05
    n = len(run)
    assert run.arms.shape == run.y.shape == run.gaps.shape == run.recommended.shape == (n,)
    assert run.recommended_x.shape == (n, 1)
    np.testing.assert_array_equal(run.y, [rkhs_f(arms[i]) for i in run.arms])
    np.testing.assert_array_equal(agent.observed_y, run.y)
    values = np.array([rkhs_f(a) for a in arms])
    # The guarantee, after every evaluation (noise-free values, ‖f‖ ≤ B).
    assert np.all(values.max() - values[run.recommended] <= run.gaps)
    assert run.gaps[-1] <= 0.05 and np.all(run.gaps[:-1] > 0.05)


def test_run_until_rules_and_errors():
    arms = np.linspace(0, 1, 21)[:, None]

    def fresh():
        return kb.UcbAgent(kb.Cmm(KERNEL, sigma=0.05, norm_bound=1.0, delta=0.01))

    run = fresh().run_until(arms, rkhs_f, budget=0)
    assert (run.stopped_by, len(run)) == ("budget", 0) and run.recommended_x.shape == (0, 1)
    run = fresh().run_until(arms, rkhs_f, budget=500, gap=0.0125, noise_level=0.05)
    assert run.stopped_by == "noise_level" and run.certificate.gap <= 0.05
    run = fresh().run_until(arms, rkhs_f, budget=500, relative_gap=0.1)
    assert run.stopped_by == "relative_gap" and len(run) >= 2
    assert run.certificate.gap <= 0.1 * (run.y.max() - run.y.min())

    agent = fresh()
    agent.update([0.3], 0.2)
    for kwargs in ({"gap": 0.0}, {"gap": float("nan")}, {"relative_gap": -1.0},
                   {"noise_level": float("inf")}):
        with pytest.raises(kb.InvalidParameterError):
            agent.run_until(arms, rkhs_f, budget=10, **kwargs)
    with pytest.raises(kb.NoArmsError):
        agent.run_until(np.empty((0, 1)), rkhs_f, budget=10)
    with pytest.raises(kb.DimensionError):
        agent.run_until(np.zeros((3, 2)), rkhs_f, budget=10)
    assert len(agent.observed_y) == 1

    calls = []

    def nan_at_3(x):
        calls.append(1)
        return float("nan") if len(calls) == 3 else rkhs_f(x)

    agent = fresh()
    with pytest.raises(kb.NonFiniteError, match="evaluation 3"):
        agent.run_until(arms, nan_at_3, budget=10)
    assert len(agent.observed_y) == 2

    def raises(x):
        raise RuntimeError("the experiment failed")

    with pytest.raises(RuntimeError, match="the experiment failed"):
        fresh().run_until(arms, raises, budget=10)


def test_refuted_assumptions_certify_nothing():
    arms = np.array([[0.0], [0.5], [1.0]])
    cmm = kb.Cmm(kb.Rbf(0.3), sigma=0.01, norm_bound=0.01, delta=0.01)
    certifier = kb.Certifier(arms)
    certifier.update(cmm)
    cmm.observe([0.5], 1.0)
    with pytest.raises(kb.MisspecifiedError, match="nothing is certified"):
        kb.certify(cmm, arms)
    with pytest.raises(kb.MisspecifiedError):
        certifier.update(cmm)
    assert np.all(certifier.lower > -np.inf)  # the first update's values, kept
    with pytest.raises(kb.NoArmsError):
        kb.Certifier(np.empty((0, 1)))


def test_certify_box_is_never_below_a_dense_grid():
    # Reference: the largest UCB of one `bounds` call over a 201 × 201 grid of the box.
    rng = np.random.default_rng(5)
    xs = rng.uniform(0, 1, size=(12, 2))
    g = np.linspace(0, 1, 201)
    grid = np.array([[a, b] for a in g for b in g])
    for make in (kb.Dmm, kb.Amm, kb.Cmm):
        bound = make(KERNEL, sigma=0.1, norm_bound=2.0, delta=0.01)
        for x in xs:
            bound.observe(x, rkhs_f(x[:1]) + 0.1 * rng.standard_normal())
        c = kb.certify_box(bound, ([0.0, 0.0], [1.0, 1.0]), tolerance=0.02)
        top = float(np.max(bound.bounds(grid)[2]))
        assert c.upper >= top, (make, c.upper, top)
        assert c.best_found <= c.upper and c.tolerance == c.upper - c.best_found
        assert c.gap == c.upper - c.recommendation.lcb
        assert c.converged and c.tolerance <= 0.02 and c.boxes >= 1
        assert np.all((c.best_point >= 0) & (c.best_point <= 1))
        assert c.observations == 12
        box = kb.BoxDomain([0.0, 0.0], [1.0, 1.0])
        assert kb.certify_box(bound, box, tolerance=0.02).upper == c.upper
        assert "BoxCertificate(" in repr(c)


def test_certify_box_errors_change_nothing():
    bound = kb.Dmm(KERNEL, sigma=0.1, norm_bound=2.0, delta=0.01)
    with pytest.raises(kb.InvalidParameterError):
        kb.certify_box(bound, ([0.0], [1.0]))  # no observation yet
    bound.observe([0.3], 0.2)
    before = bound.bounds(np.array([[0.1], [0.7]]))
    with pytest.raises(kb.DimensionError):
        kb.certify_box(bound, ([0.0, 0.0], [1.0, 1.0]))
    with pytest.raises(kb.InvalidParameterError):
        kb.certify_box(bound, ([1.0], [0.0]))  # inverted
    with pytest.raises(kb.InvalidParameterError):
        kb.certify_box(bound, ([0.0], [float("nan")]))
    with pytest.raises(kb.InvalidParameterError):
        kb.certify_box(bound, ([0.0], [1.0]), tolerance=float("nan"))
    with pytest.raises(kb.InvalidParameterError):
        kb.certify_box(bound, ([0.0], [1.0]), max_seconds=-1.0)
    after = bound.bounds(np.array([[0.1], [0.7]]))
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    summed = kb.Dmm(KERNEL + KERNEL, sigma=0.1, norm_bound=2.0, delta=0.01)
    summed.observe([0.3], 0.2)
    with pytest.raises(kb.UnsupportedError):
        kb.certify_box(summed, ([0.0], [1.0]))


def test_the_stopping_examples_box_half_certifies_validly():
    """python/examples/stopping.py --box, shortened: a certificate at every round of the
    schedule, none below the true regret, and the compass search finds a known maximum."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "stopping.py"
    spec = importlib.util.spec_from_file_location("stopping_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.schedule(30) == [5, 6, 8, 10, 12, 15, 19, 24, 30]
    # A smooth bump whose maximum 1.0 sits off the grid, at (0.313, 0.777, 0.5).
    centre = np.array([0.313, 0.777, 0.5])
    x, best = module.box_maximum(lambda p: np.exp(-np.sum((np.asarray(p) - centre) ** 2, axis=-1)))
    assert abs(best - 1.0) < 1e-12 and np.allclose(x, centre, atol=1e-5)
    reached, below, certified = module.one_box_run(kb.Rbf(0.5), "dmm", 1, 30, dense=5000)
    assert certified == len(module.schedule(30))
    assert below == 0
    for eps, (evaluations, regret) in reached.items():
        assert evaluations is None or (regret is not None and regret <= eps)
