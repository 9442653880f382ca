"""Hostile input from Python: whatever arrays and numbers come in, the package answers with a
result or a KernelBanditsError, never a panic (PyO3 would raise PanicException, a
BaseException that `except Exception` does not catch) and never a silently wrong shape."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernel_bandits as kb

SPECIAL = [0.0, -0.0, 1.0, 1e-300, 5e-324, 1e300, -1e300, 1e154, np.nan, np.inf, -np.inf]
values = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True))
KERNELS = [kb.Rbf(0.5), kb.Matern(nu=0.5, lengthscale=1e-3), kb.Matern(nu=2.5, lengthscale=1e3), kb.Linear(bias=1.0), kb.Rbf(0.2).on(0, 1)]
BOUNDS = ["ay", "igp", "amm", "dmm", "cmm", "k-ucb", "bkb", "ek-ucb"]


@st.composite
def arrays(draw, max_rows=6):
    rows = draw(st.integers(0, max_rows))
    cols = draw(st.integers(0, 3))
    data = draw(st.lists(values, min_size=rows * cols, max_size=rows * cols))
    a = np.array(data, dtype=np.float64).reshape(rows, cols)
    layout = draw(st.sampled_from(["c", "f", "float32", "list", "1-d", "3-d"]))
    if layout == "f":
        return np.asfortranarray(a)
    if layout == "float32":
        with np.errstate(over="ignore"):
            return a.astype(np.float32)
    if layout == "list":
        return a.tolist()
    if layout == "1-d":
        return a.ravel()
    if layout == "3-d":
        return a[None]
    return a


def call(f, *args):
    try:
        return f(*args)
    except kb.KernelBanditsError as e:
        assert str(e)
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kernel=st.sampled_from(range(len(KERNELS))),
    name=st.sampled_from(BOUNDS),
    warm=arrays(),
    targets=st.lists(values, max_size=6),
    query=arrays(),
    y=values,
)
def test_bounds_answer_or_raise_their_own_errors(kernel, name, warm, targets, query, y):
    bound = kb.make_bound(name, KERNELS[kernel], dims=2, horizon=50)
    call(bound.observe_many, warm, np.array(targets, dtype=np.float64))
    for row in np.atleast_2d(np.asarray(warm, dtype=np.float64))[:2]:
        call(bound.observe, row, y)
    result = call(bound.bounds, query)
    if result is not None:
        n = np.asarray(query).shape[0]
        assert all(a.shape == (n,) and a.dtype == np.float64 for a in result)
    call(bound.argmax_ucb, query)
    call(bound.fix_arms, query)
    call(bound.diagnostics)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(BOUNDS), arms=arrays(), y=values)
def test_agents_answer_or_raise_their_own_errors(name, arms, y):
    agent = kb.UcbAgent(kb.make_bound(name, kb.Matern(nu=1.5, lengthscale=0.5), dims=2, horizon=50))
    i = call(agent.select, arms)
    if i is not None:
        assert 0 <= i < len(arms)
        call(agent.update, np.asarray(arms, dtype=np.float64)[i], y)
    call(agent.select_contextual, np.asarray(arms, dtype=np.float64).ravel()[:1], arms)


@pytest.mark.parametrize("name", BOUNDS)
def test_extreme_but_finite_values_stay_errors_or_numbers(name):
    bound = kb.make_bound(name, kb.Linear(bias=1.0), dims=2, horizon=50)
    for x, y in [([1e300, 1e300], 1.0), ([1e154, 1e154], 1e300), ([5e-324, 0.0], -1e300)]:
        call(bound.observe, np.array(x), y)
    result = call(bound.bounds, np.array([[1e300, -1e300], [0.0, 0.0]]))
    if result is not None:
        assert all(a.shape == (2,) for a in result)
