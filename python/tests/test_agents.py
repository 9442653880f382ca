"""Agents and environments through the Python API: the same choices as the Rust library,
snapshots that continue bit-identically, refused calls that change nothing, and the GIL released
while the work is done."""

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kernel_bandits as kb

DATA = Path(__file__).parent / "data"


def play(agent, problem, horizon):
    """The bandit loop, written in Python: choices and total regret."""
    chosen, regret = [], 0.0
    for t in range(horizon):
        r = problem.round(t)
        i = agent.select(r.arms)
        agent.update(r.arms[i], r.reward(i))
        chosen.append(i)
        regret += r.best_value - r.values[i]
    return chosen, regret


def test_a_python_loop_makes_the_rust_quickstarts_choices():
    """`tests/python_quickstart_fixture.rs` computes these choices with the Rust library and
    keeps the fixture current; here a loop in Python replays them through the package."""
    fixture = json.loads((DATA / "quickstart_choices.json").read_text())
    horizon, seed = fixture["horizon"], fixture["seed"]
    kernel = kb.Rbf(0.5)
    problem = kb.SyntheticProblem(kernel, dims=3, seed=seed)
    params = kb.paper_defaults(kernel, 3, horizon)
    agents = {
        "dmm": kb.UcbAgent(kb.Dmm(kernel, **params)),
        "amm": kb.UcbAgent(kb.Amm(kernel, **params)),
        "ay": kb.UcbAgent(kb.Ay(kernel, **params)),
        "igp": kb.UcbAgent(kb.Igp(kernel, **params)),
        "random": kb.RandomAgent(seed),
    }
    assert set(agents) == set(fixture["agents"])
    for name, agent in agents.items():
        chosen, regret = play(agent, problem, horizon)
        expected = fixture["agents"][name]
        assert chosen == expected["chosen"], name
        assert regret == pytest.approx(expected["total_regret"], rel=1e-12), name


def test_run_in_rust_equals_the_python_loop():
    kernel = kb.Matern(2.5, 0.5)
    problem = kb.SyntheticProblem(kernel, dims=2, arms=50, seed=4)
    for make in (lambda: kb.UcbAgent(kb.Cmm(kernel)), lambda: kb.UcbAgent(kb.EkUcb(kernel, seed=2))):
        chosen, regret = play(make(), problem, 60)
        trace = problem.run(make(), 60)
        assert trace.chosen.tolist() == chosen
        assert trace.total == pytest.approx(regret, rel=1e-12)
        assert np.allclose(trace.cumulative(), np.cumsum(trace.regret))


def agents_to_test():
    kernel = kb.Matern(1.5, 0.3)
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 6), np.linspace(0, 1, 6)), -1).reshape(-1, 2)
    return grid, [
        kb.UcbAgent(kb.Dmm(kernel)),
        kb.UcbAgent(kb.Amm(kernel), arm_set=grid),
        kb.UcbAgent(kb.Cmm(kernel)),
        kb.UcbAgent(kb.Bkb(kernel, seed=1)),
        kb.RandomAgent(seed=5),
        kb.Restarting(kb.Dmm(kernel), 7),
        kb.SlidingWindow(kb.Amm(kernel), 9),
        kb.RPerp(kernel, grid, 60, seed=3),
    ]


def reward(x):
    return float(np.sin(5 * x[0]) + np.cos(3 * x[1]))


def step(agent, grid, rounds):
    """`rounds` rounds of select + update on the fixed arms `grid`; the choices."""
    choices = []
    for _ in range(rounds):
        i = agent.select(grid)
        agent.update(grid[i], reward(grid[i]))
        choices.append(i)
    return choices


@pytest.mark.parametrize("index", range(8))
def test_agents_pickle_mid_run_and_continue_bit_identically(index):
    grid, agents = agents_to_test()
    agent = agents[index]
    step(agent, grid, 20)
    restored = pickle.loads(pickle.dumps(agent))
    assert type(restored) is type(agent) and repr(restored) == repr(agent)
    copied = agent.copy()
    runs = [step(a, grid, 25) for a in (agent, restored, copied)]
    assert runs[0] == runs[1] == runs[2]
    assert restored.to_bytes() == agent.to_bytes()


@pytest.mark.parametrize("index", range(8))
def test_refused_agent_calls_change_nothing(index):
    grid, agents = agents_to_test()
    agent = agents[index]
    step(agent, grid, 5)
    i = agent.select(grid)  # a pending choice, which a refused call must not disturb
    before = agent.to_bytes()
    refused = [
        (lambda: agent.select(np.zeros((0, 2))), kb.NoArmsError),
        (lambda: agent.select(np.zeros((3, 3))), kb.KernelBanditsError),
        (lambda: agent.select(np.full((3, 2), np.nan)), kb.NonFiniteError),
        (lambda: agent.select(np.zeros(2)), kb.DimensionError),
        (lambda: agent.update(grid[i], np.nan), kb.NonFiniteError),
        (lambda: agent.update(np.zeros(3), 1.0), kb.KernelBanditsError),
        (lambda: agent.update(np.array([np.inf, 0.0]), 1.0), kb.KernelBanditsError),  # R-PERP: not the planned arm
    ]
    for call, error in refused:
        with pytest.raises(error):
            call()
        assert agent.to_bytes() == before
    agent.update(grid[i], reward(grid[i]))


def test_contextual_agents_choose_among_joint_points():
    problem = kb.ContextualProblem("step_diagonal", anchors=8, seed=2)
    kernel = kb.Rbf(0.3).on(0, problem.context_dim) * kb.Rbf(0.3).on(problem.context_dim, problem.context_dim + 1)
    agent = kb.UcbAgent(kb.KUcb(kernel))
    twin = kb.UcbAgent(kb.KUcb(kernel))
    for t in range(30):
        r = problem.round(t)
        j = agent.select_contextual(r.context, r.actions)
        assert j == twin.select(r.arms)  # [context ‖ action] rows
        np.testing.assert_array_equal(r.arms[j], np.concatenate([r.context, r.actions[j]]))
        agent.update_contextual(r.context, r.actions[j], r.reward(j))
        twin.update(r.arms[j], r.reward(j))
    trace = problem.run(kb.UcbAgent(kb.KUcb(kernel)), 30)
    assert len(trace) == 30


def test_declared_arm_sets_give_the_same_choices(rng):
    kernel = kb.Matern(2.5, 0.5)
    arms = rng.random((40, 3))
    plain = kb.UcbAgent(kb.Dmm(kernel), arm_sets="off")
    declared = kb.UcbAgent(kb.Dmm(kernel)).with_arm_set(arms)
    assert declared.bound.fixed_arms == 40 and plain.bound.fixed_arms is None
    for _ in range(30):
        i, j = plain.select(arms), declared.select(arms)
        assert i == j
        y = float(np.sin(arms[i]).sum())
        plain.update(arms[i], y)
        declared.update(arms[j], y)
    for a, b in zip(plain.bounds(arms), declared.bounds(arms)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_the_drifting_problem_replays_paper004():
    problem = kb.DriftingProblem.paper004(kb.Rbf(0.2), 100, seed=1)
    assert problem.arms.shape == (900, 2) and len(problem.rkhs_norms) == 3
    assert not np.array_equal(problem.values(0), problem.values(50))  # switched at T/5
    agent = kb.RPerp(kb.Rbf(0.2), problem.arms, 100, seed=1)
    trace = problem.run(agent, 100)
    assert trace.regret.shape == (100,) and np.all(trace.regret >= 0)


THREADS = textwrap.dedent(
    """
    import sys, threading, time
    import numpy as np
    import kernel_bandits as kb

    def work(agent, arms):
        for a in arms:
            i = agent.select(a)
            agent.update(a[i], 0.1)

    def make():
        rng = np.random.default_rng(0)
        bound = kb.Dmm(kb.Matern(2.5, 0.5))
        bound.observe_many(rng.random((300, 3)), rng.random(300))
        return kb.UcbAgent(bound, arm_sets="off"), [rng.random((100, 3)) for _ in range(100)]

    jobs = [make(), make()]
    start = time.perf_counter(); work(*jobs[0]); one = time.perf_counter() - start
    jobs = [make(), make()]
    threads = [threading.Thread(target=work, args=job) for job in jobs]
    start = time.perf_counter()
    for t in threads: t.start()
    for t in threads: t.join()
    two = time.perf_counter() - start
    print(one, two)
    """
)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores")
def test_two_threads_run_in_parallel():
    """Each thread scores its own agent; with the GIL released they overlap on two cores. One
    rayon thread per call (RAYON_NUM_THREADS=1), so that a single call cannot already use both
    cores: the test is about the GIL."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    best = None
    for _ in range(3):  # the best of three, against a busy machine
        out = subprocess.run([sys.executable, "-c", THREADS], env=env, capture_output=True, text=True, check=True)
        one, two = map(float, out.stdout.split())
        best = min(best or 9.0, two / one)
        if best < 1.7:
            break
    # Threads that hold the GIL run one after the other: 2.05× and 2.15× one thread's time
    # measured with a build whose select and update kept the GIL. Released, they overlap:
    # 1.25× measured, 1.77× once with a third process busy on the second core; the best of three
    # tries is compared.
    assert best < 1.7, f"two threads took {best:.2f}× one thread's time"


def test_a_run_that_raises_leaves_the_agent_as_it_was():
    kernel = kb.Rbf(0.5)
    agent = kb.UcbAgent(kb.Cmm(kernel, sigma=0.01, norm_bound=0.01), misspecification="refuse")
    before = agent.to_bytes()
    with pytest.raises(kb.MisspecifiedError):
        kb.SyntheticProblem(kernel, dims=2, seed=1).run(agent, 50)
    assert agent.to_bytes() == before and len(agent) == 0


def test_sliding_windows_refuse_bounds_that_cannot_forget():
    bound = kb.Bkb(kb.Rbf(0.5))
    bound.observe(np.array([0.1, 0.2]), 1.0)
    with pytest.raises(kb.UnsupportedError):
        kb.SlidingWindow(bound, 1)


def test_arm_set_options_that_contradict_each_other_are_refused(rng):
    arms = rng.random((5, 2))
    with pytest.raises(kb.InvalidParameterError):
        kb.UcbAgent(kb.Dmm(kb.Rbf(0.5)), arm_set=arms, arm_sets="off")
    with pytest.raises(kb.InvalidParameterError):
        kb.UcbAgent(kb.Dmm(kb.Rbf(0.5)), arm_sets="declared", memory_limit=1000)
