"""kernel_bandits.optuna: the sampler and the certified-gap terminator (skipped without Optuna)."""

import importlib.util
import itertools
import json
import math
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

import kernel_bandits as kb  # noqa: E402
from kernel_bandits.optuna import (  # noqa: E402
    CertifiedGapCallback,
    CertifiedGapEvaluator,
    KernelBanditSampler,
    encode_params,
)
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")


def quadratic(trial):
    x = trial.suggest_float("x", -2.0, 3.0)
    y = trial.suggest_float("y", -1.0, 1.0)
    return (x - 1.2) ** 2 + 2.0 * (y + 0.4) ** 2


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "python/examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the unit cube ---------------------------------------------------------------------------


def test_the_unit_cube_encodes_log_ints_and_steps_in_closed_form():
    space = {
        "lin": FloatDistribution(-2.0, 3.0),
        "log": FloatDistribution(1e-4, 1.0, log=True),
        "int": IntDistribution(0, 9),
        "logint": IntDistribution(1, 100, log=True),
        "step": FloatDistribution(0.0, 1.0, step=0.25),
    }
    u = encode_params(space, {"lin": 0.5, "log": 1e-2, "int": 3, "logint": 10, "step": 0.75})
    expected = [
        2.5 / 5.0,  # linear
        0.5,  # 1e-2 is the geometric middle of [1e-4, 1]
        3.5 / 10.0,  # the centre of cell 3 of 10
        (math.log(10) - math.log(0.5)) / (math.log(100.5) - math.log(0.5)),
        3.5 / 5.0,  # 0.75 is value 3 of 0, 0.25, ..., 1
    ]
    np.testing.assert_allclose(u, expected, rtol=0, atol=1e-15)


# -- the sampler -----------------------------------------------------------------------------


def test_the_sampler_finds_the_minimum_of_a_quadratic_better_than_random_search():
    study = optuna.create_study(sampler=KernelBanditSampler(seed=1, n_startup_trials=6))
    study.optimize(quadratic, n_trials=25)
    random = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    random.optimize(quadratic, n_trials=25)
    assert study.best_value < 0.05  # the minimum is 0 at (1.2, -0.4); values reach 14
    assert study.best_value < random.best_value / 5


def test_minimising_f_and_maximising_minus_f_sample_the_same_points():
    def minus(trial):
        return -quadratic(trial)

    lo = optuna.create_study(direction="minimize", sampler=KernelBanditSampler(seed=3, n_startup_trials=5))
    lo.optimize(quadratic, n_trials=15)
    hi = optuna.create_study(direction="maximize", sampler=KernelBanditSampler(seed=3, n_startup_trials=5))
    hi.optimize(minus, n_trials=15)
    assert [t.params for t in lo.trials] == [t.params for t in hi.trials]
    # and it is the minimum that is approached (the values reach 14 at the corners)
    startup = min(t.value for t in lo.trials[:5])
    assert lo.best_value < min(0.1, startup / 4), (lo.best_value, startup)


def test_the_same_seed_gives_the_same_trials_and_a_fresh_sampler_continues_the_study():
    def run(seed):
        study = optuna.create_study(sampler=KernelBanditSampler(seed=seed, n_startup_trials=4))
        study.optimize(quadratic, n_trials=8)
        return study

    a, b = run(5), run(5)
    assert [t.params for t in a.trials] == [t.params for t in b.trials]
    assert [t.params for t in a.trials] != [t.params for t in run(6).trials]
    # A restarted worker: a new sampler on the same storage proposes what the old one would.
    storage = a._storage
    restarted = optuna.load_study(study_name=a.study_name, storage=storage,
                                  sampler=KernelBanditSampler(seed=5, n_startup_trials=4))
    trial = restarted.ask()
    proposed = {"x": trial.suggest_float("x", -2.0, 3.0), "y": trial.suggest_float("y", -1.0, 1.0)}
    frozen = restarted._storage.get_trial(trial._trial_id)
    old = KernelBanditSampler(seed=5, n_startup_trials=4)
    space = old.infer_relative_search_space(restarted, frozen)
    again = old.sample_relative(restarted, frozen, space)
    assert again == proposed


def ask_point(study, names=("x", "y")):
    trial = study.ask()
    params = {"x": trial.suggest_float("x", -2.0, 3.0), "y": trial.suggest_float("y", -1.0, 1.0)}
    return trial, np.array([params[n] for n in names])


def test_running_trials_are_pending_so_concurrent_asks_get_distinct_points():
    study = optuna.create_study(sampler=KernelBanditSampler(seed=2, n_startup_trials=8))
    study.optimize(quadratic, n_trials=12)
    points = [ask_point(study)[1] for _ in range(4)]  # four workers asked, none has told yet
    unit = [(p - np.array([-2.0, -1.0])) / np.array([5.0, 2.0]) for p in points]
    closest = min(np.max(np.abs(a - b)) for a, b in itertools.combinations(unit, 2))
    assert closest > 0.02, f"two running trials nearly share a point: {closest}"


def test_failed_and_pruned_trials_are_neither_observations_nor_pending():
    def study_with(extra_states):
        study = optuna.create_study(sampler=KernelBanditSampler(seed=4, n_startup_trials=6))
        study.optimize(quadratic, n_trials=8)
        for state in extra_states:
            trial, _ = ask_point(study)
            study.tell(trial, state=state)
        return study

    plain, marked = study_with([]), study_with([TrialState.FAIL, TrialState.PRUNED])
    sampler = KernelBanditSampler(seed=4, n_startup_trials=6)

    def proposal(study):
        frozen = study._storage.get_trial(study.ask()._trial_id)
        space = sampler.infer_relative_search_space(study, frozen)
        # the same trial number for both, so that the seeds agree
        frozen.number = 99
        return sampler.sample_relative(study, frozen, space)

    assert proposal(plain) == proposal(marked)


def test_ints_logs_and_categoricals_are_valid_and_int_grids_stay_distinct():
    def objective(trial):
        lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
        depth = trial.suggest_int("depth", 1, 3)
        width = trial.suggest_int("width", 8, 24, step=8)  # 3 values
        kind = trial.suggest_categorical("kind", ["a", "b"])
        return (math.log10(lr) + 3) ** 2 + (depth - 2) ** 2 + (width - 16) ** 2 / 64 + (kind == "b")

    study = optuna.create_study(sampler=KernelBanditSampler(seed=7, n_startup_trials=5))
    study.optimize(objective, n_trials=15)
    for t in study.trials:
        assert 1e-5 <= t.params["lr"] <= 1e-1
        assert isinstance(t.params["depth"], int) and t.params["depth"] in (1, 2, 3)
        assert t.params["width"] in (8, 16, 24)
        assert t.params["kind"] in ("a", "b")
    # The log-scaled float is searched in log space: the best lr is near 1e-3 (log10 = -3).
    assert abs(math.log10(study.best_params["lr"]) + 3) < 0.5

    # A 5 × 2 int grid and 8 trials running at once: every one gets its own grid point (the
    # continuous choices would all round to one cell). Seed 2 draws its two startup trials at
    # the same grid point: the model waits for two distinct points before fitting.
    for seed in (0, 1, 2):
        grid = optuna.create_study(sampler=KernelBanditSampler(seed=seed, n_startup_trials=2))

        def ask_grid():
            trial = grid.ask()
            return trial, (trial.suggest_int("a", 0, 4), trial.suggest_int("b", 0, 1))

        for _ in range(2):
            trial, (a, b) = ask_grid()
            grid.tell(trial, (a - 2) ** 2 + b)
        points = [ask_grid()[1] for _ in range(8)]
        assert len(set(points)) == 8, f"seed {seed}: duplicate int points among running trials: {points}"


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown bound"):
        KernelBanditSampler(bound="nope")
    with pytest.raises(ValueError, match="needs sigma"):
        KernelBanditSampler(kernel=kb.Matern(nu=2.5, lengthscale=0.3))
    with pytest.raises(ValueError, match="delta"):
        KernelBanditSampler(delta=1.5)
    with pytest.raises(ValueError, match="norm_bound"):
        KernelBanditSampler(bound="amm")
    with pytest.raises(ValueError, match="n_startup_trials"):
        KernelBanditSampler(n_startup_trials=-1)
    with pytest.raises(TypeError, match="kernel"):
        KernelBanditSampler(kernel="matern", sigma=0.1)
    study = optuna.create_study(directions=["minimize", "minimize"],
                                sampler=KernelBanditSampler(seed=0, n_startup_trials=1))
    with pytest.raises(ValueError, match="single-objective"):
        study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=1, catch=())


# -- many workers, one study ------------------------------------------------------------------


def overlapping_pairs(trials):
    for a, b in itertools.combinations(trials, 2):
        if a.datetime_start < b.datetime_complete and b.datetime_start < a.datetime_complete:
            yield a, b


QUADRATIC_SPACE = {"x": FloatDistribution(-2.0, 3.0), "y": FloatDistribution(-1.0, 1.0)}


def claim(trial):
    """The point a trial claimed (its relative sample) and the running trials it took as pending."""
    prefix = "kernel_bandits:relative_params:"
    chunks = {int(k[len(prefix):]): v for k, v in trial.system_attrs.items() if k.startswith(prefix)}
    text = "".join(chunks[i] for i in range(len(chunks)))
    return json.loads(text), set(trial.system_attrs["kernel_bandits:pending"])


def two_workers(claim_timeout_a, claim_timeout_b):
    """One study on one in-memory storage, 6 trials done, and two workers (Study objects with
    their own samplers) on it, as two processes would have."""
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, sampler=KernelBanditSampler(seed=3, n_startup_trials=4))
    first.optimize(quadratic, n_trials=6)

    def worker(timeout):
        sampler = KernelBanditSampler(seed=3, n_startup_trials=4, claim_timeout=timeout)
        return optuna.load_study(study_name=first.study_name, storage=storage, sampler=sampler)

    return worker(claim_timeout_a), worker(claim_timeout_b)


def race(study_a, study_b, hold):
    """Worker A asks; its proposal is held after it read the study (a slow fit) until worker B's
    ask has returned or ``hold`` seconds have passed; B asks while A is held. The two trials."""
    b_asked = threading.Event()
    sampler_a = study_a.sampler
    fit = sampler_a._agent

    def slow_fit(*args):
        b_asked.wait(hold)
        return fit(*args)

    sampler_a._agent = slow_fit
    asked = {}
    thread = threading.Thread(target=lambda: asked.setdefault("a", study_a.ask()))
    thread.start()
    deadline = time.monotonic() + 30
    while not any(t.state == TrialState.RUNNING for t in study_b.get_trials(deepcopy=False)):
        assert time.monotonic() < deadline and thread.is_alive(), "worker A created no trial"
        time.sleep(0.005)
    trial_b = study_b.ask()
    b_asked.set()
    thread.join()
    frozen = {t.number: t for t in study_b.get_trials(deepcopy=False)}
    return frozen[asked["a"].number], frozen[trial_b.number]


def test_a_slow_proposal_is_waited_for_however_long_it_takes():
    # The race CI met under load: worker A's proposal outlasts claim_timeout; B (the later trial)
    # must neither give up on A while A is alive nor propose A's point. A takes 3 claim_timeouts.
    study_a, study_b = two_workers(1.0, 1.0)
    a, b = race(study_a, study_b, hold=3.0)
    point_a, pending_a = claim(a)
    point_b, pending_b = claim(b)
    assert a.number < b.number
    gap = np.max(np.abs(encode_params(QUADRATIC_SPACE, point_a) - encode_params(QUADRATIC_SPACE, point_b)))
    assert a.number in pending_b, f"trial {b.number} went ahead without running trial {a.number} (pending {pending_b}, gap {gap:.1e})"
    assert gap > 1e-3, f"trials {a.number} and {b.number} ran at once at the same point (gap {gap:.1e})"


def test_a_stalled_proposal_takes_the_points_claimed_meanwhile_as_pending(caplog):
    # A stalls without a sign of life (its beats are claim_timeout/4 = 25 s apart) for longer
    # than B's claim_timeout: B goes on without A, with a warning; A, when it resumes, must take
    # B's point as pending before it claims its own.
    study_a, study_b = two_workers(100.0, 0.3)
    with caplog.at_level("WARNING"):
        a, b = race(study_a, study_b, hold=10.0)
    point_a, pending_a = claim(a)
    point_b, pending_b = claim(b)
    gap = np.max(np.abs(encode_params(QUADRATIC_SPACE, point_a) - encode_params(QUADRATIC_SPACE, point_b)))
    assert b.number in pending_a, f"trial {a.number} ignored trial {b.number}, claimed while it stalled (pending {pending_a}, gap {gap:.1e})"
    assert gap > 1e-3, f"trials {a.number} and {b.number} ran at once at the same point (gap {gap:.1e})"
    assert a.number not in pending_b
    assert any("no sign of life" in r.getMessage() for r in caplog.records)


def test_a_worker_that_died_blocks_each_sampler_once_for_claim_timeout():
    study = optuna.create_study(sampler=KernelBanditSampler(seed=0, n_startup_trials=4, claim_timeout=2.0))
    study.optimize(quadratic, n_trials=5)
    # Two workers died: one right after the storage created its trial, one mid-proposal (after
    # one sign of life). Neither ever claims a point.
    storage = study._storage
    dead = [storage.create_new_trial(study._study_id) for _ in range(2)]
    storage.set_trial_system_attr(dead[1], "kernel_bandits:alive", 12345.0)
    start = time.monotonic()
    trial, _ = ask_point(study)
    first = time.monotonic() - start
    start = time.monotonic()
    ask_point(study)
    second = time.monotonic() - start
    assert first >= 2.0, first  # waited for the dead ones
    assert second < 2.0, second  # and not again
    assert claim(storage.get_trial(trial._trial_id))[1] == set()  # they have no point to be pending


def test_a_half_written_claim_is_not_read_as_a_point():
    # A long claim is written in chunks, the rule last; a reader between the two must not parse
    # the first chunk alone (it is not JSON yet) nor take it as the trial's point.
    study = optuna.create_study(sampler=KernelBanditSampler(seed=0, n_startup_trials=4, claim_timeout=0))
    study.optimize(quadratic, n_trials=5)
    storage = study._storage
    writing = storage.create_new_trial(study._study_id)
    storage.set_trial_system_attr(writing, "kernel_bandits:relative_params:0", '{"x": 0.5, "y": ')
    trial, _ = ask_point(study)
    assert claim(storage.get_trial(trial._trial_id))[1] == set()


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_four_worker_processes_share_one_study_without_duplicate_points(kind, tmp_path):
    workers = load_example("optuna_workers")
    spec = f"journal:{tmp_path / 'journal.log'}" if kind == "journal" else f"sqlite:///{tmp_path / 'study.db'}"
    study = workers.run(spec, workers=4, trials_per_worker=10, seed=0, sleep=0.05)
    trials = study.trials
    assert len(trials) == 40 and all(t.state == TrialState.COMPLETE for t in trials)
    space = {"x": FloatDistribution(-5.0, 5.0), "y": FloatDistribution(1e-3, 1e2, log=True), "n": IntDistribution(1, 8)}
    # What holds whatever the load and the interleaving: each proposal took as pending every
    # earlier trial with a relative sample that was still running when it read the study (it
    # finished after the read's time stamp; all on one clock here), and its point is not any of
    # its pending points.
    modelled = [t for t in trials if t.system_attrs["kernel_bandits:rule"] != "independent"]
    concurrent = 0
    for b in modelled:
        pending = set(b.system_attrs["kernel_bandits:pending"])
        read_at = b.system_attrs["kernel_bandits:read_at"]
        for a in modelled:
            if a.number < b.number and a.datetime_complete.timestamp() > read_at:
                assert a.number in pending, f"trial {b.number} read the study while {a.number} ran but ignored it"
        for n in pending:
            gap = np.max(np.abs(encode_params(space, trials[n].params) - encode_params(space, b.params)))
            assert gap > 1e-3, f"trials {n} and {b.number} ran at once at nearly the same point"
            concurrent += 1
    assert concurrent > 0  # the workers did run side by side
    # With trials running the proposals use GP-BUCB's rule (the only rules a modelled trial has).
    rules = {t.system_attrs["kernel_bandits:rule"] for t in modelled}
    assert "pending-ucb" in rules and rules <= {"startup", "ucb", "pending-ucb"}, rules
    # The same kind of optimum as one worker's: the basin of the minimum (value 0 at x = 1,
    # y = 1, n = 3; 40 uniform trials reach 0.1 in a third of their runs). One worker ended
    # at most at 0.0085 over 8 seeds, 4 workers at most at 0.021 in 16 studies (docs/optuna.md).
    assert study.best_value < 0.1, study.best_value


def test_four_threads_of_one_process_share_one_sampler_without_duplicate_points():
    def objective(trial):
        x, y = trial.suggest_float("x", 0.0, 1.0), trial.suggest_float("y", 0.0, 1.0)
        time.sleep(0.03)
        return (x - 0.3) ** 2 + (y - 0.6) ** 2

    study = optuna.create_study(sampler=KernelBanditSampler(seed=0, n_startup_trials=5))
    study.optimize(objective, n_trials=30, n_jobs=4)
    assert len(study.trials) == 30 and all(t.state == TrialState.COMPLETE for t in study.trials)
    pairs = list(overlapping_pairs(study.trials))
    assert len(pairs) >= 30
    for a, b in pairs:
        gap = max(abs(a.params["x"] - b.params["x"]), abs(a.params["y"] - b.params["y"]))
        assert gap > 1e-3, f"trials {a.number} and {b.number} ran at once at nearly the same point"


# -- the terminator --------------------------------------------------------------------------

KERNEL = kb.Matern(nu=2.5, lengthscale=0.3)
CENTRES = np.array([[0.2, 0.3], [0.7, 0.8], [0.55, 0.25]])
COEFS = np.array([1.0, 0.6, -0.5])
SIGMA = 0.02


def f(u):
    """A function of RKHS norm sqrt(cᵀKc) (≤ 1.2 here) on the unit square."""
    return float(COEFS @ KERNEL(CENTRES, np.atleast_2d(u))[:, 0])


def rkhs_norm():
    return float(math.sqrt(COEFS @ KERNEL(CENTRES) @ COEFS))


def test_the_rkhs_test_function_has_the_norm_the_evaluator_is_told():
    assert rkhs_norm() <= 1.2


def test_the_certified_gap_stops_the_study_and_bounds_the_true_regret():
    rng = np.random.default_rng(0)

    def objective(trial):
        u = np.array([trial.suggest_float("a", 0.0, 1.0), trial.suggest_float("b", 0.0, 1.0)])
        return f(u) + SIGMA * rng.standard_normal()

    evaluator = CertifiedGapEvaluator(KERNEL, sigma=SIGMA, norm_bound=1.2, delta=0.01, tolerance=0.005)
    callback = CertifiedGapCallback(evaluator, gap=0.25, min_n_trials=5)
    sampler = KernelBanditSampler(kernel=KERNEL, sigma=SIGMA, norm_bound=1.2, seed=0, n_startup_trials=5)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=150, callbacks=[callback])
    assert len(study.trials) < 150, "the certified gap never fell below 0.25"
    c = callback.last_certificate
    assert c["gap"] <= 0.25 and study.user_attrs["kernel_bandits:gap"] == c["gap"]
    # The true maximum, by brute force on a fine grid (an independent reference).
    g = np.linspace(0.0, 1.0, 201)
    grid = np.array(list(itertools.product(g, g)))
    true_max = float(np.max(COEFS @ KERNEL(CENTRES, grid)))
    rec = study.trials[c["trial"]].params
    regret = true_max - f(np.array([rec["a"], rec["b"]]))
    assert 0.0 <= regret <= c["gap"]
    # U is an upper bound on the UCB everywhere: brute force on the grid.
    bound = kb.Dmm(KERNEL, sigma=SIGMA, norm_bound=1.2, delta=0.01)
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    bound.observe_many([[t.params["a"], t.params["b"]] for t in done], [t.value for t in done])
    assert float(np.max(bound.bounds(grid).ucb)) <= c["upper"] + 1e-12
    # ... and inside Optuna's own Terminator, with a static error of 0.25.
    from optuna.terminator import StaticErrorEvaluator, Terminator

    terminator = Terminator(evaluator, StaticErrorEvaluator(0.25 + 1e-12), min_n_trials=5)
    assert terminator.should_terminate(study)
    strict = Terminator(evaluator, StaticErrorEvaluator(0.01), min_n_trials=5)
    assert not strict.should_terminate(study)


def test_the_evaluator_minimises_when_the_study_does():
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(lambda t: -f(np.array([t.suggest_float("a", 0, 1), t.suggest_float("b", 0, 1)])), n_trials=30)
    hi = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    hi.optimize(lambda t: f(np.array([t.suggest_float("a", 0, 1), t.suggest_float("b", 0, 1)])), n_trials=30)
    evaluator = CertifiedGapEvaluator(KERNEL, sigma=SIGMA, norm_bound=1.2)
    lo_gap = evaluator.evaluate(study.trials, study.direction)
    hi_gap = evaluator.evaluate(hi.trials, hi.direction)
    assert lo_gap == pytest.approx(hi_gap, rel=1e-9)
    assert evaluator.last_certificate["trial"] == hi.best_trial.number or hi_gap > 0


def test_the_evaluator_refuses_categoricals_and_empty_studies():
    evaluator = CertifiedGapEvaluator(KERNEL, sigma=SIGMA, norm_bound=1.2)
    study = optuna.create_study()
    with pytest.raises(ValueError, match="no trial has completed"):
        evaluator.evaluate(study.trials, study.direction)
    study.optimize(lambda t: t.suggest_float("a", 0, 1) + (t.suggest_categorical("c", ["p", "q"]) == "p"), n_trials=3)
    with pytest.raises(ValueError, match="categorical"):
        evaluator.evaluate(study.trials, study.direction)
    with pytest.raises(ValueError, match="sigma"):
        CertifiedGapEvaluator(KERNEL, sigma=-1.0, norm_bound=1.0)
    with pytest.raises(ValueError, match="gap"):
        CertifiedGapCallback(evaluator, gap=0.0)


def test_a_prior_mean_shifts_the_data_and_refuted_assumptions_certify_nothing():
    def study_of(offset):
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
        study.optimize(lambda t: offset + f(np.array([t.suggest_float("a", 0, 1), t.suggest_float("b", 0, 1)])),
                       n_trials=25)
        return study

    plain, shifted = study_of(0.0), study_of(5.0)
    gap = CertifiedGapEvaluator(KERNEL, sigma=SIGMA, norm_bound=1.2).evaluate(plain.trials, plain.direction)
    evaluator = CertifiedGapEvaluator(KERNEL, sigma=SIGMA, norm_bound=1.2, prior_mean=5.0)
    assert evaluator.evaluate(shifted.trials, shifted.direction) == pytest.approx(gap, rel=1e-9, abs=1e-12)
    assert evaluator.last_certificate["lcb"] > 5.0 - 1.0  # reported in the objective's units
    # f + 5 has RKHS norm far above 1.2 without the shift: the data refute B, nothing certified.
    unshifted = CertifiedGapEvaluator(KERNEL, sigma=SIGMA, norm_bound=1.2)
    with pytest.raises(kb.MisspecifiedError):
        unshifted.evaluate(shifted.trials, shifted.direction)
    callback = CertifiedGapCallback(unshifted, gap=10.0)
    with pytest.warns(kb.MisspecificationWarning, match="nothing certified"):
        callback(shifted, shifted.trials[-1])
    assert "kernel_bandits:gap" not in shifted.user_attrs and callback.last_certificate is None


def test_the_optuna_pages_python_examples_run(tmp_path, monkeypatch):
    import re

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs/optuna.md").read_text(), flags=re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        if "postgresql://" in block:  # needs a database server: only compiled
            compile(block, "docs/optuna.md", "exec")
            continue
        exec(compile(block, "docs/optuna.md", "exec"), {"__name__": "__example__"})


def test_the_scikit_learn_example_stops_on_its_certified_gap():
    pytest.importorskip("sklearn")
    study = load_example("optuna_sklearn").main(max_trials=100, gap=0.3, seed=0)
    assert study.user_attrs["kernel_bandits:gap"] <= 0.3
