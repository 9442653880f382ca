"""Optuna integration: a sampler and a terminator built on the crate's confidence bounds.

Install with the optional extra, ``pip install "./python[optuna]"`` (the core package needs only
numpy). Two pieces:

* :class:`KernelBanditSampler`, an ``optuna.samplers.BaseSampler``: the UCB of a
  martingale-mixture confidence bound (Flynn & Reeb 2024; DMM-UCB by default) maximised over the
  study's float and int parameters, mapped to the unit cube (log-scaled parameters in log
  space), with the trials still RUNNING taken as pending evaluations (GP-BUCB, Desautels et
  al. 2014), so that parallel and distributed workers on one storage never receive the same
  point (what is guaranteed, and what a dead or stalled worker can do, is stated on the class).
  Categorical parameters are delegated to an independent sampler, as Optuna's own
  ``GPSampler`` does. The sampler keeps no state between calls: everything is rebuilt from
  ``study.get_trials()``, so a worker that starts late or restarts sees every trial.
* :class:`CertifiedGapEvaluator`, an improvement evaluator for ``optuna.terminator.Terminator``
  (the interface of Makarova et al. 2022, *Automatic termination for hyperparameter
  optimization*), and :class:`CertifiedGapCallback`: they return the crate's *certified* gap,
  a proven upper bound on sup UCB over the search space's box (``kernel_bandits.certify_box``)
  minus the largest LCB among the completed trials, instead of Optuna's heuristic GP regret
  bound.

What is guaranteed is stated on each class and in docs/optuna.md: the gap bounds the regret of
the recommended trial with probability ≥ 1 − δ only when the kernel, σ and B were fixed before
the study's data; fitted hyperparameters void it (docs/unknown.md).
"""

from __future__ import annotations

import json
import math
import threading
import time
import warnings
import zlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

try:
    import optuna
    from optuna.distributions import (
        BaseDistribution,
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.search_space import IntersectionSearchSpace, intersection_search_space
    from optuna.study import Study, StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as error:  # pragma: no cover - exercised only without optuna
    raise ImportError(
        "kernel_bandits.optuna needs Optuna: pip install 'kernel-bandits[optuna]' "
        "(from a checkout: pip install './python[optuna]')"
    ) from error

try:  # optuna.terminator is deprecated since Optuna 4.9 and due to be removed in 6.0
    from optuna.terminator import BaseImprovementEvaluator as _ImprovementBase
except ImportError:  # pragma: no cover - a future Optuna without the terminator module
    _ImprovementBase = object  # type: ignore[misc,assignment]

from . import _core as _kb
from ._values import MisspecificationWarning

__all__ = [
    "CertifiedGapCallback",
    "CertifiedGapEvaluator",
    "KernelBanditSampler",
    "encode_params",
]

# The system attribute under which a trial's relative sample is shared with the other workers
# (JSON of {name: value}), before the objective calls suggest_*.
_CLAIM_KEY = "kernel_bandits:relative_params"
# ... and how it was chosen: "ucb" (no trial pending), "pending-ucb" (GP-BUCB's UCB with the
# running trials pending), "startup", "random" (a grid exhausted by pending points) or
# "independent" (no relative search space).
_RULE_KEY = "kernel_bandits:rule"
# ... and the numbers of the running trials it took as pending (a record for diagnostics).
_PENDING_KEY = "kernel_bandits:pending"
# ... and the wall-clock time (``time.time()``) just after it read the study: every trial with a
# smaller number that had claimed its point and was RUNNING then is among the pending ones
# (unless it was silent).
_READ_AT_KEY = "kernel_bandits:read_at"
# ... and how many completed trials it modelled (a record for diagnostics).
_OBSERVED_KEY = "kernel_bandits:observed"
# With trials running, a proposal keeps at least this distance (largest coordinate difference in
# the unit cube) from every pending point.
_DISTINCT = 1e-3
# A trial's sign of life while its proposal is under way: a time stamp rewritten every
# claim_timeout / 4 seconds until the rule is written. Waiters only compare it with the value
# they saw before (on their own clock), so clocks of different machines need not agree.
_ALIVE_KEY = "kernel_bandits:alive"
# Reads after the proposal that look for points claimed meanwhile (see _propose).
_RECHECKS = 8
# RDB storages cap a system attribute's length; long samples are stored in chunks.
_CHUNK = 2000
_BOUNDS_WITHOUT_B = ("dmm", "cmm")


# ---------------------------------------------------------------------------------------------
# The search space as a unit cube
# ---------------------------------------------------------------------------------------------


def _numeric(name: str, distribution: BaseDistribution) -> bool:
    if isinstance(distribution, (FloatDistribution, IntDistribution)):
        return True
    if isinstance(distribution, CategoricalDistribution):
        return False
    raise TypeError(f"parameter {name!r}: unsupported distribution {distribution!r}")


def _cells(distribution: BaseDistribution) -> Optional[int]:
    """The number of grid values of an int or stepped float distribution (None: continuous)."""
    if isinstance(distribution, IntDistribution):
        return (distribution.high - distribution.low) // distribution.step + 1
    if isinstance(distribution, FloatDistribution) and distribution.step is not None:
        return int(round((distribution.high - distribution.low) / distribution.step)) + 1
    return None


def _log_edges(distribution: BaseDistribution) -> Tuple[float, float]:
    """The log-space interval of a log-scaled distribution (ints widened by half a unit)."""
    if isinstance(distribution, IntDistribution):
        return math.log(distribution.low - 0.5), math.log(distribution.high + 0.5)
    return math.log(distribution.low), math.log(distribution.high)


def _encode(distribution: BaseDistribution, value: float) -> float:
    """A parameter value as a coordinate in [0, 1]."""
    lo, hi = distribution.low, distribution.high  # type: ignore[attr-defined]
    if lo == hi:
        return 0.5
    if distribution.log:  # type: ignore[attr-defined]
        a, b = _log_edges(distribution)
        return min(1.0, max(0.0, (math.log(value) - a) / (b - a)))
    cells = _cells(distribution)
    if cells is not None:  # the centre of the value's cell
        k = int(round((value - lo) / distribution.step))  # type: ignore[attr-defined]
        return (min(max(k, 0), cells - 1) + 0.5) / cells
    return min(1.0, max(0.0, (value - lo) / (hi - lo)))


def _decode(distribution: BaseDistribution, u: float) -> Any:
    """A coordinate in [0, 1] as a value of the distribution (ints rounded, steps snapped)."""
    u = min(1.0, max(0.0, float(u)))
    lo, hi = distribution.low, distribution.high  # type: ignore[attr-defined]
    if distribution.log:  # type: ignore[attr-defined]
        a, b = _log_edges(distribution)
        x = math.exp(a + u * (b - a))
        if isinstance(distribution, IntDistribution):
            return int(min(hi, max(lo, round(x))))
        return float(min(hi, max(lo, x)))
    cells = _cells(distribution)
    if cells is not None:
        k = min(cells - 1, int(math.floor(u * cells)))
        x = lo + k * distribution.step  # type: ignore[attr-defined]
        if isinstance(distribution, IntDistribution):
            return int(x)
        return float(min(hi, x))
    return float(lo + u * (hi - lo))


def encode_params(search_space: Dict[str, BaseDistribution], params: Dict[str, Any]) -> np.ndarray:
    """The unit-cube coordinates the sampler uses for ``params`` (its float and int entries).

    A float parameter maps linearly to [0, 1], a log-scaled one linearly in log space; an int
    (or a float with a step) with n values to the centre of its cell, (k + ½)/n, of n equal
    cells (log-scaled ints: the interval [ln(low − ½), ln(high + ½)]). Decoding a point of the
    cube rounds to the cell it lies in, so every point of the cube decodes to a valid value.
    """
    names = [n for n, d in search_space.items() if _numeric(n, d)]
    return np.array([_encode(search_space[n], params[n]) for n in names], dtype=float)


def _trial_params(trial: FrozenTrial) -> Dict[str, Any]:
    """A trial's parameters: its own, and for an unfinished trial the relative sample it claimed.

    A claim counts only once its rule, written last, is there: a claim half written (its chunks
    read before the rest) is not yet the trial's point.
    """
    if trial.state.is_finished() or _RULE_KEY not in trial.system_attrs:
        return dict(trial.params)
    chunks = []
    i = 0
    while True:
        chunk = trial.system_attrs.get(f"{_CLAIM_KEY}:{i}")
        if chunk is None:
            break
        chunks.append(chunk)
        i += 1
    params: Dict[str, Any] = json.loads("".join(chunks)) if chunks else {}
    params.update(trial.params)
    return params


def _derive_seed(*parts: int) -> int:
    """A 32-bit seed from nonnegative integer parts (numpy's SeedSequence hashing)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, np.uint32)[0])


def _name_hash(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------


class KernelBanditSampler(BaseSampler):
    """UCB of a martingale-mixture confidence bound, as an Optuna sampler.

    Every call rebuilds the model from ``study.get_trials()``: the float and int parameters of
    the study's intersection search space (``IntersectionSearchSpace``, single-valued
    distributions dropped) map to the unit cube (see :func:`encode_params`); the COMPLETE
    trials' values, negated if the study minimises, are the observations; the RUNNING trials'
    points (their parameters, or the relative sample a worker has claimed for them, shared
    through a trial system attribute) are pending evaluations. With none running, the next point
    is the agent's ``select_in`` on the unit cube, the point of largest UCB (rule ``"ucb"``).
    With trials running, it is GP-BUCB's (Desautels, Krause & Burdick 2014, Eq. 5; rule
    ``"pending-ucb"``): the largest μ_t(x) + w_t(x)·σ_{t,P}(x)/σ_t(x), where μ_t and the width
    w_t = UCB_t − μ_t are the bound's on the completed trials and σ²_{t,P} is the posterior
    variance given the pending points as well, over the agent's start points and its refined
    UCB point, less those within 10⁻³ of a running point in every coordinate of the cube. The
    width shrinks where a running trial will inform, so workers spread out around the
    promising region instead of repeating a point. (GP-UCB-PE, which the crate's
    agents use for batches among arms, spends the points after the first on the largest variance in
    {UCB ≥ max LCB}: with 4 workers on the example of ``examples/optuna_workers.py`` that sent
    half the trials to corners of the box, and 3 of 8 studies ended with the int parameter
    off its optimum, against 0 of 16 with GP-BUCB; docs/optuna.md.) Int and stepped parameters are rounded to
    their grid; a rounded point equal to a pending one is made pending and the selection
    repeated, so no two running trials share a point (unless the grid has fewer points than
    there are workers).

    The point is proposed in ``before_trial``, as soon as the storage has created the trial:
    the sampler first waits until every RUNNING trial with a smaller number has shared its
    point, then proposes with all of them pending and writes the point to the trial (system
    attributes, the rule last) before the objective runs. While a proposal is under way (its
    own wait included) a thread rewrites a time stamp on its trial every ``claim_timeout``/4
    seconds. A waiter waits for an earlier trial as long as that trial shows a sign of life: it
    gives up on it only after ``claim_timeout`` seconds, on its own clock, in which the trial's
    stamp did not change (or, for a trial that never wrote one, since it first saw it). There
    is no limit on the wait as a whole: proposals are serialised across workers (each costs one
    fit and one acquisition search), and under load, or with many workers, the last in line
    waits for all before it.

    **What is guaranteed.** The storage numbers trials one at a time, so of two trials of this
    sampler that run at the same time the later-numbered one takes the earlier one's point as
    pending and so does not propose it again (int grids permitting, see above) — whatever the
    load, the number of workers or machines, and however long proposals take, as long as the
    earlier proposal does not fall silent for ``claim_timeout`` seconds. A trial is also pending
    for every trial that reads the study after its claim. The record on each trial:
    ``kernel_bandits:pending`` (the running trials it took as pending) and
    ``kernel_bandits:read_at`` (``time.time()`` just after it read the study; every trial with
    a smaller number that had claimed a point and finished after that instant is in its
    pending list, silent ones excepted).

    **What is not.** A worker that dies while proposing falls silent; the others wait
    ``claim_timeout`` seconds for it once (each sampler remembers a silent trial and waits again
    only if it shows a sign of life), log a warning, and go on without it, so a dead worker
    never blocks the study. A worker that is alive but stalls for longer than that (a suspended
    process, a storage that accepted none of its writes) is treated the same way: later trials
    may then go ahead without its point. When it resumes it reads the study again after its
    proposal and takes as pending every point claimed in the meantime, re-selecting without a
    new fit, so of two such trials at least one takes the other into account — unless a claim
    lands between that last read and its own write, the one case left unprotected. A trial of
    another sampler is pending once its parameters are set (it is not waited for when it
    already has some, and for at most ``claim_timeout`` when it has none); a claim written
    only in part is not a point yet. Choose ``claim_timeout`` well above the longest stall you
    expect of a live worker and its storage; a larger value only delays the others when a
    worker really dies.

    FAILED and PRUNED trials are neither observations nor pending (as Optuna's ``GPSampler``
    does); WAITING trials are ignored. Multi-objective studies are refused.

    **The model.** By default (``kernel=None``), each call standardises the values (mean and
    standard deviation of the completed trials) and fits the length-scale and σ by marginal
    likelihood on all of them (``kernel_bandits.fit_hyperparameters``, Matérn ν = 2.5 unless
    ``family``/``nu`` say otherwise), as ``kernel_bandits.maximise`` and Optuna's ``GPSampler``
    do; B starts at ``norm_bound`` (default 1 for the standardised values) and, for DMM and
    CMM, ``AdaptiveNorm`` doubles it whenever the data refute it. **No guarantee is claimed
    for these bounds**: the kernel and σ were chosen from the data the bound uses
    (docs/unknown.md). With ``kernel`` and ``sigma`` given, the values are used in the
    objective's own units (no standardisation) and the bounds are those of Flynn & Reeb (2024,
    Thm 4.1 and Eq. 8) for that kernel, σ and B, valid on their event of probability ≥ 1 − δ
    if the assumptions hold — see :class:`CertifiedGapEvaluator` for what can be certified.

    Args:
        bound: the confidence bound, by name (``kernel_bandits.bound_names()``; default
            ``"dmm"``, the crate's default).
        kernel: a fixed kernel on the unit cube (``kb.Matern(...)``, ``kb.Rbf(...)``, ...);
            ``None``: fitted at every call.
        sigma: the noise's sub-Gaussian scale, in the objective's units; required with
            ``kernel``.
        norm_bound: B. ``None``: ``AdaptiveNorm`` from B₀ = 1 (DMM and CMM only).
        delta: δ (default 0.01).
        family, nu, per_dimension, fit_starts: the fit's kernel family (``"matern"`` or
            ``"rbf"``), smoothness, one length-scale per parameter, and its number of starts.
        n_startup_trials: COMPLETE trials before the model is used (default 10); until then
            points are drawn uniformly in the cube, from a stream seeded by ``seed`` and the
            trial's number (distinct across workers, reproducible).
        independent_sampler: the sampler for categorical parameters and for parameters outside
            the intersection search space; ``None``: uniform draws seeded by ``seed``, the
            trial's number and the parameter's name (an Optuna ``RandomSampler`` per draw), so
            workers sharing a seed still draw different values.
        seed: makes the sampler reproducible; ``None``: drawn from the operating system.
        starts: space-filling starts of the acquisition's search (the agent's default: 1024).
        warn_independent_sampling: log when a parameter falls back to the independent sampler
            after the startup trials.
        prior_mean: with ``kernel`` given, a constant m fixed in advance: the bound is on the
            values (negated when minimising) minus m, as in :class:`CertifiedGapEvaluator`.
        claim_timeout: how long, in seconds, a proposal waits for an earlier running trial that
            shows no sign of life before it goes on without that trial's point (a trial of a
            worker that died, or of another sampler, never shares one); default 30. A proposal
            that is alive is waited for however long it takes. 0: never wait.

    Raises:
        ValueError: bad arguments (unknown bound, kernel without sigma, nonpositive δ or B,
            negative ``n_startup_trials``).
    """

    def __init__(
        self,
        *,
        bound: str = "dmm",
        kernel: Optional[_kb.Kernel] = None,
        sigma: Optional[float] = None,
        norm_bound: Optional[float] = None,
        delta: float = 0.01,
        family: str = "matern",
        nu: float = 2.5,
        per_dimension: bool = False,
        fit_starts: int = 12,
        n_startup_trials: int = 10,
        independent_sampler: Optional[BaseSampler] = None,
        seed: Optional[int] = None,
        starts: Optional[int] = None,
        warn_independent_sampling: bool = True,
        claim_timeout: float = 30.0,
        prior_mean: float = 0.0,
    ) -> None:
        if not math.isfinite(prior_mean):
            raise ValueError(f"prior_mean must be finite, got {prior_mean!r}")
        if not (claim_timeout >= 0 and math.isfinite(claim_timeout)):
            raise ValueError(f"claim_timeout must be a nonnegative number of seconds, got {claim_timeout!r}")
        if bound not in _kb.bound_names():
            raise ValueError(f"unknown bound {bound!r}; expected one of {_kb.bound_names()}")
        if kernel is not None and not isinstance(kernel, _kb.Kernel):
            raise TypeError(f"kernel must be a kernel_bandits kernel, not {type(kernel).__name__}")
        if kernel is not None and sigma is None:
            raise ValueError("a fixed kernel needs sigma (the noise scale in the objective's units)")
        if sigma is not None and not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be positive and finite, got {sigma!r}")
        if norm_bound is not None and not (math.isfinite(norm_bound) and norm_bound > 0):
            raise ValueError(f"norm_bound must be positive and finite, got {norm_bound!r}")
        if norm_bound is None and bound not in _BOUNDS_WITHOUT_B:
            raise ValueError(f"the {bound!r} bound needs norm_bound (only DMM and CMM can learn B)")
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        if family not in ("matern", "rbf"):
            raise ValueError(f"family must be 'matern' or 'rbf', got {family!r}")
        if int(n_startup_trials) != n_startup_trials or n_startup_trials < 0:
            raise ValueError(f"n_startup_trials must be a nonnegative integer, got {n_startup_trials!r}")
        if fit_starts < 1:
            raise ValueError(f"fit_starts must be at least 1, got {fit_starts!r}")
        if seed is not None and (int(seed) != seed or seed < 0):
            raise ValueError(f"seed must be a nonnegative integer, got {seed!r}")
        self._bound = bound
        self._kernel = kernel
        self._sigma = sigma
        self._norm_bound = norm_bound
        self._delta = float(delta)
        self._family = family
        self._nu = float(nu)
        self._per_dimension = bool(per_dimension)
        self._fit_starts = int(fit_starts)
        self._n_startup_trials = int(n_startup_trials)
        self._independent_sampler = independent_sampler
        self._seed = int(seed) if seed is not None else int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
        self._starts = starts
        self._warn_independent_sampling = warn_independent_sampling
        self._search_space = IntersectionSearchSpace()
        self._claim_timeout = float(claim_timeout)
        self._prior_mean = float(prior_mean)
        self._proposals: Dict[int, Dict[str, Any]] = {}
        # For _wait_for_earlier: trial id -> (the sign of life last seen, when it was first seen,
        # on this process's monotonic clock); the trials already reported as silent.
        self._heard: Dict[int, Tuple[Any, float]] = {}
        self._silent: set = set()
        self._lock = threading.Lock()
        #: Seconds spent proposing the last trial's point (the model's own work, in ``before_trial``).
        self.last_seconds = 0.0

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- BaseSampler ---------------------------------------------------------------------------

    def reseed_rng(self) -> None:
        """Draw a new seed (Optuna calls this in each process of ``optimize(n_jobs=...)``)."""
        self._seed = int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
        if self._independent_sampler is not None:
            self._independent_sampler.reseed_rng()

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> Dict[str, BaseDistribution]:
        """The float and int parameters of the intersection search space, without single values."""
        space = {}
        for name, distribution in self._search_space.calculate(study).items():
            if distribution.single() or not _numeric(name, distribution):
                continue
            space[name] = distribution
        return space

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]
    ) -> Dict[str, Any]:
        """The point proposed for ``trial`` in ``before_trial``, restricted to ``search_space``."""
        if not search_space:
            return {}
        params = self._proposals.pop(trial._trial_id, None)
        if params is None:  # a trial this sampler did not see created: propose and claim now
            params = self._propose_and_claim(study, trial, self.infer_relative_search_space(study, trial))
        out = {}
        for name, distribution in search_space.items():
            if name in params and distribution._contains(distribution.to_internal_repr(params[name])):
                out[name] = params[name]
        return out

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        """Categorical parameters and those outside the intersection search space."""
        if self._independent_sampler is not None:
            if self._warn_independent_sampling and not isinstance(param_distribution, CategoricalDistribution):
                completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if len(completed) >= self._n_startup_trials:
                    optuna.logging.get_logger(__name__).warning(
                        f"trial {trial.number}: parameter {param_name!r} sampled by "
                        f"{type(self._independent_sampler).__name__} (not in the intersection search space)"
                    )
            return self._independent_sampler.sample_independent(study, trial, param_name, param_distribution)
        draw = RandomSampler(seed=_derive_seed(self._seed, trial.number, _name_hash(param_name)))
        return draw.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        """Proposes the trial's point as soon as the trial exists, and shares it.

        The proposal waits until every RUNNING trial with a smaller number has shared its own
        (a trial silent for ``claim_timeout`` seconds excepted), then takes all of them as
        pending, and writes its point to the trial (system attributes) before the objective
        runs; meanwhile it shows a sign of life on the trial. See the class for what this
        guarantees.
        """
        if self._independent_sampler is not None:
            self._independent_sampler.before_trial(study, trial)
        if study._is_multi_objective():
            raise ValueError("KernelBanditSampler supports single-objective studies only")
        start = time.perf_counter()
        space = self.infer_relative_search_space(study, trial)
        self._proposals[trial._trial_id] = self._propose_and_claim(study, trial, space)
        self.last_seconds = time.perf_counter() - start

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Optional[Sequence[float]]
    ) -> None:
        self._proposals.pop(trial._trial_id, None)
        if self._independent_sampler is not None:
            self._independent_sampler.after_trial(study, trial, state, values)

    # -- the work ------------------------------------------------------------------------------

    def _propose_and_claim(
        self, study: Study, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]
    ) -> Dict[str, Any]:
        """Proposes ``trial``'s point and writes it to the trial, showing signs of life meanwhile."""
        with _Heartbeat(study, trial, self._claim_timeout / 4):
            params, rule, pending, read_at, observed = self._propose(study, trial, search_space)
            self._claim(study, trial, params, rule, pending, read_at, observed)
        return params

    def _read(
        self, study: Study, trial: FrozenTrial, search_space: Dict[str, BaseDistribution], names: List[str]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[int, Tuple[Dict[str, Any], Optional[str]]], float]:
        """Completed points and values (to maximise), the other RUNNING trials' points, and the
        wall-clock time just after the read."""
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
        read_at = time.time()
        sign = -1.0 if study.direction == StudyDirection.MINIMIZE else 1.0
        xs, ys = [], []
        running: Dict[int, Tuple[Dict[str, Any], Optional[str]]] = {}
        for t in trials:
            if t.number == trial.number:
                continue
            params = _trial_params(t)
            if not all(n in params for n in names):
                continue
            if any(not search_space[n]._contains(search_space[n].to_internal_repr(params[n])) for n in names):
                continue  # outside the box (another search space): not a point of this model
            if t.state == TrialState.COMPLETE:
                value = t.value
                if value is None or not math.isfinite(value):
                    continue
                xs.append([_encode(search_space[n], params[n]) for n in names])
                ys.append(sign * value)
            else:
                running[t.number] = ({n: params[n] for n in names}, t.system_attrs.get(_RULE_KEY))
        d = len(names)
        return np.array(xs, dtype=float).reshape(-1, d), np.array(ys, dtype=float), running, read_at

    def _propose(
        self, study: Study, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]
    ) -> Tuple[Dict[str, Any], str, List[int], Optional[float], Optional[int]]:
        """The proposal for ``trial``: its point, the rule that chose it, the pending trials,
        when it read the study, and how many observations its model had (None before the
        model)."""
        if not search_space:
            return {}, "independent", [], None, None
        names = list(search_space)
        self._wait_for_earlier(study, trial)
        x, y, running, read_at = self._read(study, trial, search_space, names)
        # The model needs the startup trials, and two distinct points to fit a length-scale on.
        distinct = len(y) > 0 and len(np.unique(x, axis=0)) >= 2
        agent = self._agent(x, y, trial) if len(y) >= self._n_startup_trials and distinct else None
        params, rule = self._choose(agent, search_space, names, running, trial)
        observed = len(y) if agent is not None else None
        # Points claimed since the read: by later trials that went ahead while this proposal was
        # silent for claim_timeout (it stalled), or by earlier ones it went ahead without. Take
        # them as pending and select again (the model is unchanged), until a read finds none.
        for _ in range(_RECHECKS):
            claimed = self._read(study, trial, search_space, names)[2]
            new = {k: v for k, v in claimed.items() if k not in running}
            if not new:
                break
            running.update(new)
            params, rule = self._choose(agent, search_space, names, running, trial)
        return params, rule, sorted(running), read_at, observed

    def _wait_for_earlier(self, study: Study, trial: FrozenTrial) -> None:
        """Waits until every RUNNING trial numbered before ``trial`` has shared its point, or has
        shown no sign of life for ``claim_timeout`` seconds (see the class)."""
        if self._claim_timeout == 0:
            return  # never wait (and so never warn)
        pause = 0.002
        while True:
            running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            now = time.monotonic()
            waiting = False
            with self._lock:
                alive_ids = {t._trial_id for t in running}
                for trial_id in [i for i in self._heard if i not in alive_ids]:
                    del self._heard[trial_id]  # finished: forget it
                self._silent &= alive_ids
                for t in running:
                    if t.number >= trial.number or _RULE_KEY in t.system_attrs:
                        continue
                    beat = t.system_attrs.get(_ALIVE_KEY)
                    if beat is None and t.params:
                        continue  # another sampler's trial (or fixed parameters): no claim coming
                    heard = self._heard.get(t._trial_id)
                    if heard is None or heard[0] != beat:
                        heard = self._heard[t._trial_id] = (beat, now)
                    if now - heard[1] < self._claim_timeout:
                        waiting = True
                    elif t._trial_id not in self._silent:
                        self._silent.add(t._trial_id)
                        optuna.logging.get_logger(__name__).warning(
                            f"trial {trial.number}: running trial {t.number} has shown no sign of life "
                            f"for {self._claim_timeout:g} s (claim_timeout) and shared no point: "
                            "proposing without it"
                        )
            if not waiting:
                return
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    def _agent(self, x: np.ndarray, y: np.ndarray, trial: FrozenTrial) -> _kb.UcbAgent:
        d = x.shape[1]
        if self._kernel is None:
            sd = float(np.std(y))
            ys = (y - float(np.mean(y))) / (sd if sd > 0 else 1.0)
            fit = _kb.fit_hyperparameters(
                x,
                ys,
                family=self._family,
                nu=self._nu,
                per_dimension=self._per_dimension,
                starts=self._fit_starts,
                seed=self._seed,
            )
            norm_bound = self._norm_bound if self._norm_bound is not None else 1.0
            bound = fit.bound(
                self._bound,
                norm_bound=norm_bound,
                delta=self._delta,
                adaptive=self._norm_bound is None,
            )
        else:
            ys = y - self._prior_mean
            norm_bound = self._norm_bound if self._norm_bound is not None else 1.0
            bound = _kb.make_bound(
                self._bound, self._kernel, sigma=self._sigma, norm_bound=norm_bound, delta=self._delta
            )
            if self._norm_bound is None:
                bound = _kb.AdaptiveNorm(bound)
        if len(ys):
            bound.observe_many(x, ys)
        seed = _derive_seed(self._seed, trial.number)
        return _kb.UcbAgent(bound, starts=self._starts, seed=seed)

    def _choose(
        self,
        agent: Optional[_kb.UcbAgent],
        search_space: Dict[str, BaseDistribution],
        names: List[str],
        running: Dict[int, Tuple[Dict[str, Any], Optional[str]]],
        trial: FrozenTrial,
    ) -> Tuple[Dict[str, Any], str]:
        """The next point and its rule, with the running trials' points pending."""
        d = len(names)
        taken = {self._key(search_space, names, p) for p, _ in running.values()}
        rng = np.random.default_rng([self._seed, trial.number, 17])
        unit = _kb.BoxDomain.unit(d)
        pending = [[_encode(search_space[n], p[n]) for n in names] for p, _ in running.values()]

        def snap(u: np.ndarray) -> List[float]:
            """The point of the cube that ``u``'s parameters encode (ints and steps rounded)."""
            return [_encode(search_space[n], _decode(search_space[n], u[i])) for i, n in enumerate(names)]
        params: Dict[str, Any] = {}
        # Up to d + 8 selections: a rounded point equal to a pending one becomes pending itself.
        for _ in range(d + 8):
            if agent is None:
                u, rule = rng.random(d), "startup"
            elif pending:
                u, rule = self._pending_ucb(agent, unit, pending, snap), "pending-ucb"
            else:
                u, rule = agent.copy().select_in(unit).point, "ucb"
            params = {n: _decode(search_space[n], u[i]) for i, n in enumerate(names)}
            if self._key(search_space, names, params) not in taken:
                return params, rule
            pending.append([_encode(search_space[n], params[n]) for n in names])
        # The grid is (nearly) exhausted by pending points: a random free grid point, if any.
        for _ in range(256):
            u = rng.random(d)
            params = {n: _decode(search_space[n], u[i]) for i, n in enumerate(names)}
            if self._key(search_space, names, params) not in taken:
                break
        return params, "random"

    @staticmethod
    def _pending_ucb(
        agent: _kb.UcbAgent,
        unit: _kb.BoxDomain,
        pending: List[List[float]],
        snap: Callable[[np.ndarray], List[float]],
    ) -> np.ndarray:
        """GP-BUCB's choice with pending points (Desautels, Krause & Burdick 2014, Eq. 5): the
        largest μ_t(x) + w_t(x)·σ_{t,P}(x)/σ_t(x), where μ_t and w_t = UCB_t − μ_t are the
        bound's mean and width on the completed trials and σ²_{t,P} the posterior variance
        given the pending points P as well (their targets still to come). The width shrinks
        where a pending point will inform, so the next point neither repeats a running one nor
        leaves the promising region for a corner the way pure exploration would. Maximised
        over the agent's start points in the cube and its own refined UCB point (the choice
        when the pending points inform nothing there), less those whose parameters (ints and steps
        rounded, ``snap``) are within 10⁻³ of a pending point (largest coordinate difference): with noise that dominates the posterior variance a
        pending point leaves most of it, and the score can peak right next to it."""
        candidates = np.vstack([agent.next_starts(unit), np.atleast_2d(agent.copy().select_in(unit).point)])
        values = agent.bounds(candidates)
        mean, ucb = np.asarray(values.mean), np.asarray(values.ucb)
        bound = agent.bound
        prior = np.asarray(bound.pending_variance(np.empty((0, candidates.shape[1])), candidates))
        given = np.asarray(bound.pending_variance(np.asarray(pending, dtype=float), candidates))
        ratio = np.sqrt(np.clip(given / np.where(prior > 0, prior, 1.0), 0.0, 1.0))
        ratio[prior <= 0] = 0.0
        score = mean + (ucb - mean) * ratio
        # Where the noise dominates the posterior variance a pending point leaves most of it,
        # and the score may peak next to it (the refined UCB point, say, when no trial has
        # completed since a running one chose it): such candidates are not distinct points.
        snapped = np.array([snap(u) for u in candidates], dtype=float)
        gap = np.abs(snapped[:, None, :] - np.asarray(pending, dtype=float)[None, :, :]).max(axis=2).min(axis=1)
        distinct = gap > _DISTINCT
        best = int(np.argmax(np.where(distinct, score, -np.inf))) if distinct.any() else int(np.argmax(gap))
        return np.asarray(candidates[best], dtype=float)

    @staticmethod
    def _key(search_space: Dict[str, BaseDistribution], names: List[str], params: Dict[str, Any]) -> tuple:
        return tuple(search_space[n].to_internal_repr(params[n]) for n in names)

    @staticmethod
    def _claim(
        study: Study,
        trial: FrozenTrial,
        params: Dict[str, Any],
        rule: str,
        pending: List[int],
        read_at: Optional[float],
        observed: Optional[int],
    ) -> None:
        """Writes the proposal to the trial; the rule last, as the mark that the point is there."""
        text = json.dumps(params)
        storage = study._storage
        for i in range(0, max(len(text), 1), _CHUNK):
            storage.set_trial_system_attr(trial._trial_id, f"{_CLAIM_KEY}:{i // _CHUNK}", text[i : i + _CHUNK])
        storage.set_trial_system_attr(trial._trial_id, _PENDING_KEY, pending)
        if read_at is not None:
            storage.set_trial_system_attr(trial._trial_id, _READ_AT_KEY, read_at)
        if observed is not None:
            storage.set_trial_system_attr(trial._trial_id, _OBSERVED_KEY, observed)
        storage.set_trial_system_attr(trial._trial_id, _RULE_KEY, rule)


class _Heartbeat:
    """While in a ``with`` block, rewrites ``_ALIVE_KEY`` on the trial every ``interval`` seconds
    (from a thread: the fit and the acquisition search release the GIL). Nothing for
    ``interval == 0``. A failed write ends the beats (the storage will tell the worker anyway)."""

    def __init__(self, study: Study, trial: FrozenTrial, interval: float) -> None:
        self._storage = study._storage
        self._trial_id = trial._trial_id
        self._interval = interval
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._storage.set_trial_system_attr(self._trial_id, _ALIVE_KEY, time.time())
            except Exception:  # noqa: BLE001 - a heartbeat must not kill the worker
                return

    def __enter__(self) -> "_Heartbeat":
        if self._interval > 0:
            self._thread = threading.Thread(target=self._run, name="kernel_bandits-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


# ---------------------------------------------------------------------------------------------
# The terminator
# ---------------------------------------------------------------------------------------------


class CertifiedGapEvaluator(_ImprovementBase):  # type: ignore[misc,valid-type]
    """The certified gap of the best trial, as an Optuna improvement evaluator.

    ``evaluate(trials, study_direction)`` returns

        gap = U − max_i LCB(x_i),

    where the x_i are the COMPLETE trials' points in the unit cube of the search space (see
    :func:`encode_params`), the bound is built with the given kernel, σ, B and δ on all their
    values (negated if the study minimises), and U is a *proven* upper bound on sup UCB over the
    whole cube, by branch and bound (``kernel_bandits.certify_box``; the search stops at
    ``tolerance`` or ``max_boxes``, and U is an upper bound either way). The trial of largest
    LCB is the recommendation (``last_certificate``).

    **The guarantee.** If the noise is σ-sub-Gaussian and the objective, as a function on the
    unit cube, lies in the RKHS of ``kernel`` with norm at most B, then with probability
    ≥ 1 − δ, at every evaluation at once — so also at a stop chosen by looking at the data —
    the best value in the search space is at most ``gap`` better than the recommended trial's
    true value (Flynn & Reeb 2024, Thm 4.1 and Lemma 4.2: the confidence sequence holds
    uniformly in time by Ville's inequality). For int and stepped parameters U bounds the
    continuous relaxation, so the gap is conservative. This needs σ, B and the kernel fixed
    **before** the study's data: hyperparameters fitted on the same trials, a B grown by
    ``AdaptiveNorm``, or a kernel chosen after looking void it (docs/unknown.md). It also needs
    the set of completed trials not to depend on their noise: a pruner that stops trials from
    their intermediate values breaks it. Optuna's default ``RegretBoundEvaluator`` (Makarova et
    al. 2022) fits the GP on the same data and scales β heuristically, and claims none of this.

    Categorical parameters are refused (``ValueError``): a box certificate covers floats and
    ints only.

    Args:
        kernel: the kernel on the unit cube (``kb.Matern``, ``kb.Rbf``, or a ``FittedKernel``
            fitted on *other* data); sums, products and linear kernels are not supported by
            ``certify_box``.
        sigma: the noise scale, in the objective's units.
        norm_bound: B, in the objective's units.
        delta: δ (default 0.01).
        bound: the bound by name (``"dmm"``; ``certify_box`` covers the exact bounds).
        tolerance: the branch and bound's target for U − (best UCB found); default σ/10.
        max_boxes, max_seconds: limits of the branch and bound.
        search_space: the distributions to certify over; ``None``: the intersection search
            space of the trials.
        prior_mean: m, fixed in advance: the bound is on f − m (f the value, negated for a
            minimised study), whose RKHS norm B must bound; the gap is in the objective's
            units. A constant costs RKHS norm, so an f near a large constant needs it.

    Raises:
        ValueError: bad arguments; no completed trial; a categorical parameter.
        kernel_bandits.MisspecifiedError: the data refute σ, B or the kernel (the confidence set
            is empty): nothing is certified.
    """

    def __init__(
        self,
        kernel: _kb.Kernel,
        *,
        sigma: float,
        norm_bound: float,
        delta: float = 0.01,
        bound: str = "dmm",
        tolerance: Optional[float] = None,
        max_boxes: int = 200_000,
        max_seconds: Optional[float] = None,
        search_space: Optional[Dict[str, BaseDistribution]] = None,
        prior_mean: float = 0.0,
    ) -> None:
        if not math.isfinite(prior_mean):
            raise ValueError(f"prior_mean must be finite, got {prior_mean!r}")
        if not isinstance(kernel, _kb.Kernel):
            raise TypeError(f"kernel must be a kernel_bandits kernel, not {type(kernel).__name__}")
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be positive and finite, got {sigma!r}")
        if not (math.isfinite(norm_bound) and norm_bound > 0):
            raise ValueError(f"norm_bound must be positive and finite, got {norm_bound!r}")
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        if bound not in _kb.bound_names():
            raise ValueError(f"unknown bound {bound!r}; expected one of {_kb.bound_names()}")
        if tolerance is not None and not (math.isfinite(tolerance) and tolerance > 0):
            raise ValueError(f"tolerance must be positive and finite, got {tolerance!r}")
        if search_space is not None:
            for name, distribution in search_space.items():
                if not _numeric(name, distribution):
                    raise ValueError(f"parameter {name!r} is categorical: the certified gap covers floats and ints only")
        self._kernel = kernel
        self._sigma = float(sigma)
        self._norm_bound = float(norm_bound)
        self._delta = float(delta)
        self._bound = bound
        self._tolerance = float(tolerance) if tolerance is not None else self._sigma / 10.0
        self._max_boxes = int(max_boxes)
        self._max_seconds = max_seconds
        self._search_space = search_space
        self._prior_mean = float(prior_mean)
        #: The last evaluation: ``gap``, ``upper`` (the proven bound on the best value: sup UCB,
        #: or inf LCB for a minimised study), ``lcb`` (the recommended trial's bound on its own
        #: value, the other side when minimising), both in the objective's units, ``trial``
        #: (number of the recommended trial), ``params`` and the ``BoxCertificate`` (in the
        #: maximised, shifted units); None before the first.
        self.last_certificate: Optional[Dict[str, Any]] = None

    def evaluate(self, trials: List[FrozenTrial], study_direction: StudyDirection) -> float:
        """The certified gap (objective's units) after the COMPLETE trials among ``trials``."""
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        if not complete:
            raise ValueError("no trial has completed yet: nothing to certify")
        space = self._search_space if self._search_space is not None else intersection_search_space(complete)
        names = []
        for name, distribution in space.items():
            if not _numeric(name, distribution):
                raise ValueError(f"parameter {name!r} is categorical: the certified gap covers floats and ints only")
            names.append(name)
        if not names:
            raise ValueError("the search space has no float or int parameter to certify over")
        use = [t for t in complete if all(n in t.params for n in names) and math.isfinite(t.value)]
        if not use:
            raise ValueError("no completed trial has every parameter of the search space")
        sign = -1.0 if study_direction == StudyDirection.MINIMIZE else 1.0
        x = np.array([[_encode(space[n], t.params[n]) for n in names] for t in use], dtype=float)
        y = sign * np.array([t.value for t in use], dtype=float) - self._prior_mean
        bound = _kb.make_bound(
            self._bound, self._kernel, sigma=self._sigma, norm_bound=self._norm_bound, delta=self._delta
        )
        bound.observe_many(x, y)
        certificate = _kb.certify_box(
            bound,
            _kb.BoxDomain.unit(len(names)),
            tolerance=self._tolerance,
            max_boxes=self._max_boxes,
            max_seconds=self._max_seconds,
        )
        lcb = np.asarray(bound.bounds(x).lcb)
        best = int(np.argmax(lcb))
        gap = float(certificate.upper - lcb[best])
        shift = self._prior_mean
        self.last_certificate = {
            "gap": gap,
            "upper": sign * (float(certificate.upper) + shift),
            "lcb": sign * (float(lcb[best]) + shift),
            "trial": use[best].number,
            "params": dict(use[best].params),
            "certificate": certificate,
        }
        return gap


class CertifiedGapCallback:
    """Stops a study once the certified gap is at most ``gap`` (``study.optimize(callbacks=[...])``).

    After every finished trial (from ``min_n_trials`` COMPLETE trials on) it evaluates
    ``evaluator`` (a :class:`CertifiedGapEvaluator`) and calls ``study.stop()`` when its gap is
    ≤ ``gap``. Stopping this way keeps the evaluator's guarantee (it holds at every evaluation at
    once): with probability ≥ 1 − δ the best value is at most ``gap`` better than the
    recommended trial's, which the callback stores in the study's user attributes
    ``kernel_bandits:gap`` and ``kernel_bandits:recommended_trial`` (and ``last_certificate``).

    When the data refute the evaluator's σ, B or kernel (``MisspecifiedError``) nothing is
    certified: the callback warns (``kernel_bandits.MisspecificationWarning``) and never stops
    on it.

    Equivalent to ``optuna.terminator.TerminatorCallback(Terminator(evaluator,
    StaticErrorEvaluator(gap), min_n_trials))`` up to the ≤ (Terminator stops on a strict <).
    """

    def __init__(self, evaluator: CertifiedGapEvaluator, gap: float, *, min_n_trials: int = 1) -> None:
        if not isinstance(evaluator, CertifiedGapEvaluator):
            raise TypeError("evaluator must be a CertifiedGapEvaluator")
        if not (math.isfinite(gap) and gap > 0):
            raise ValueError(f"gap must be positive and finite, got {gap!r}")
        if int(min_n_trials) != min_n_trials or min_n_trials < 1:
            raise ValueError(f"min_n_trials must be a positive integer, got {min_n_trials!r}")
        self._evaluator = evaluator
        self._gap = float(gap)
        self._min_n_trials = int(min_n_trials)
        self.last_certificate: Optional[Dict[str, Any]] = None

    def __call__(self, study: Study, trial: FrozenTrial) -> None:
        trials = study.get_trials(deepcopy=False)
        if sum(t.state == TrialState.COMPLETE for t in trials) < self._min_n_trials:
            return
        try:
            gap = self._evaluator.evaluate(trials, study.direction)
        except _kb.MisspecifiedError as error:
            warnings.warn(f"trial {trial.number}: nothing certified, the study goes on: {error}", MisspecificationWarning)
            return
        self.last_certificate = self._evaluator.last_certificate
        if gap <= self._gap:
            assert self.last_certificate is not None
            study.set_user_attr("kernel_bandits:gap", gap)
            study.set_user_attr("kernel_bandits:recommended_trial", self.last_certificate["trial"])
            study.stop()
