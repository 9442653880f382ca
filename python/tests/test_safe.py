"""Safe exploration (``SafeAgent``) and level sets (``LevelSetAgent``).

References: the safe set, maximisers and level-set classes recomputed from the bounds' own
``bounds`` calls (running intersections kept by the test), and the true values of RKHS
functions of known norm."""

import numpy as np
import pytest

import kernel_bandits as kb

KERNEL = kb.Rbf(0.2)
CENTRES = np.array([[0.5], [0.15], [0.85]])
COEFS = np.array([1.0, -0.5, -0.5])  # norm 1.03 in the RBF(0.2) RKHS


def g(x):
    return float(COEFS @ KERNEL(CENTRES, np.atleast_2d(x))[:, 0])


def f(x):
    return 1.2 * float(KERNEL(np.array([[0.5]]), np.atleast_2d(x))[0, 0])


def bound():
    return kb.Dmm(KERNEL, sigma=0.05, norm_bound=1.5, delta=0.01)


CANDIDATES = np.linspace(0.2, 0.8, 25)[:, None]
SEED = 12  # x = 0.5


def test_safe_agent_is_safe_and_matches_its_definition_after_every_update():
    h = 0.2
    agent = kb.SafeAgent(bound(), [bound()], [h], CANDIDATES, [SEED])
    # Shadow copies of the bounds, updated by the test: the reference.
    fb, gb = bound(), bound()
    n = len(CANDIDATES)
    f_lo, f_hi = np.full(n, -np.inf), np.full(n, np.inf)
    g_lo, g_hi = np.full(n, -np.inf), np.full(n, np.inf)
    safe = np.zeros(n, dtype=bool)
    safe[SEED] = True
    rng = np.random.default_rng(39)
    roles = set()
    for t in range(30):
        _, fl, fu = fb.bounds(CANDIDATES)
        _, gl, gu = gb.bounds(CANDIDATES)
        f_lo, f_hi = np.maximum(f_lo, fl), np.minimum(f_hi, fu)
        g_lo, g_hi = np.maximum(g_lo, gl), np.minimum(g_hi, gu)
        safe |= g_lo >= h
        # The agent's bounds and the shadow ones agree to rounding (a few ulps): compare the
        # sets away from the thresholds.
        clear = np.abs(g_lo - h) > 1e-9
        got = np.zeros(n, dtype=bool)
        got[agent.safe_set] = True
        np.testing.assert_array_equal(got[clear], safe[clear], err_msg=f"round {t}")
        lo, hi = agent.objective_intervals
        np.testing.assert_allclose(lo, f_lo, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hi, f_hi, rtol=1e-12, atol=1e-12)
        best = f_lo[safe].max()
        clear &= np.abs(f_hi - best) > 1e-9
        got_m = np.zeros(n, dtype=bool)
        got_m[agent.maximisers()] = True
        np.testing.assert_array_equal(got_m[clear], (safe & (f_hi >= best))[clear])
        choice = agent.next()
        roles.add(choice.role)
        assert g(choice.x) >= h, f"round {t}: unsafe evaluation"
        assert choice.index in agent.safe_set
        y, gv = f(choice.x) + 0.01 * rng.standard_normal(), g(choice.x) + 0.01 * rng.standard_normal()
        agent.update(choice.index, y, gv)
        fb.observe(choice.x, y)
        gb.observe(choice.x, gv)
    assert len(agent.safe_set) > 5
    assert all(g(CANDIDATES[j]) >= h for j in agent.safe_set)
    r = agent.recommend()
    assert r["gap"] >= 0 and r["index"] in agent.safe_set
    assert "maximiser" in roles
    assert set(agent.expanders()) <= set(agent.safe_set)


def test_level_sets_are_correct_when_every_candidate_is_classified():
    h, eps = 0.2, 0.1
    agent = kb.LevelSetAgent(bound(), CANDIDATES, h, eps)
    rng = np.random.default_rng(2013)
    while (choice := agent.next()) is not None:
        assert choice.index in agent.unclassified
        agent.update(choice.index, g(choice.x) + 0.01 * rng.standard_normal())
        assert agent.evaluations < 300
    values = np.array([g(x) for x in CANDIDATES])
    assert np.all(values[agent.above] >= h - eps)
    assert np.all(values[agent.below] <= h + eps)
    assert len(agent.above) + len(agent.below) == len(CANDIDATES)
    levels = agent.levels
    assert set(np.flatnonzero(levels == 1)) == set(agent.above)
    assert set(np.flatnonzero(levels == -1)) == set(agent.below)


def test_adaptive_norm_is_refused_for_constraints():
    adaptive = kb.AdaptiveNorm(kb.Dmm(KERNEL, sigma=0.05, norm_bound=1.0))
    with pytest.raises(kb.UnsupportedError, match="AdaptiveNorm"):
        kb.SafeAgent(bound(), [adaptive], [0.0], CANDIDATES, [SEED])
    kb.SafeAgent(adaptive, [bound()], [0.0], CANDIDATES, [SEED])  # the objective may learn B


def test_bad_input_raises_and_changes_nothing():
    with pytest.raises(kb.NoArmsError):
        kb.SafeAgent(bound(), [bound()], [0.0], np.zeros((0, 1)), [0])
    with pytest.raises(kb.InvalidParameterError):
        kb.SafeAgent(bound(), [bound()], [0.0], CANDIDATES, [])
    with pytest.raises(kb.KernelBanditsError):
        kb.SafeAgent(bound(), [bound()], [0.0, 1.0], CANDIDATES, [SEED])
    with pytest.raises(kb.ArmSetError):
        kb.SafeAgent(bound(), [bound()], [0.0], CANDIDATES, [99])
    with pytest.raises(kb.NonFiniteError):
        kb.SafeAgent(bound(), [bound()], [0.0], np.array([[0.1], [np.nan]]), [0])
    agent = kb.SafeAgent(bound(), [bound()], [0.0], CANDIDATES, [SEED])
    agent.update(SEED, 0.5, [0.7])
    before = (agent.safe_set.copy(), agent.objective_intervals, agent.evaluations)
    for args in [(99, 0.0, 0.0), (0, np.nan, 0.0), (0, 0.0, [np.inf]), (0, 0.0, [0.0, 0.0])]:
        with pytest.raises(kb.KernelBanditsError):
            agent.update(*args)
    np.testing.assert_array_equal(agent.safe_set, before[0])
    np.testing.assert_array_equal(agent.objective_intervals[0], before[1][0])
    assert agent.evaluations == before[2]
    with pytest.raises(kb.InvalidParameterError):
        kb.LevelSetAgent(bound(), CANDIDATES, 0.0, -1.0)


def test_refuted_assumptions_raise_misspecified_error():
    tight = kb.Dmm(KERNEL, sigma=0.001, norm_bound=0.01, delta=0.01)
    agent = kb.SafeAgent(tight, [tight], [-1.0], CANDIDATES, [SEED])
    agent.update(SEED, 0.0, 5.0)
    agent.update(SEED, 0.0, -5.0)
    assert agent.refuted is not None
    with pytest.raises(kb.MisspecifiedError, match="constraint 0"):
        agent.next()


def test_the_controller_example_never_evaluates_unsafe_gains():
    """python/examples/safe_controller.py, shortened: every experiment is safe, everything
    certified safe is safe, the safe set grows from the seed, and the gap bounds the regret
    within the certified set."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "safe_controller.py"
    spec = importlib.util.spec_from_file_location("safe_controller", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(evaluations=30, grid=20)
    assert out["unsafe"] == 0
    assert out["certified_safe_true"]
    assert out["certified"] == sorted(out["certified"])
    assert out["certified"][-1] > 2 * out["certified"][0]
    assert 0.0 <= out["regret_in_certified"] <= out["gap"]
