//! The agents: `UcbAgent` over any bound, the seeded `RandomAgent`, and the non-stationary
//! `RPerp`, `Restarting` and `SlidingWindow` (Iwazaki & Takeno 2025).

use kernel_bandits::agent::{
    ArmSetPolicy, BanditAgent, BatchRule, ContinuousOptions, Misspecification,
    RandomAgent as RsRandom, UcbAgent as RsUcb,
};
use kernel_bandits::bound::ConfidenceBound;
use kernel_bandits::nonstationary::{
    RPerp as RsRPerp, RPerpParams, Restarting as RsRestarting, SlidingWindow as RsWindow,
};
use kernel_bandits::points::{ContextualArms, Points};
use kernel_bandits::snapshot::Snapshot;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::arrays::{elements, matrix, rows, target, vector};
use crate::bounds::{PyAnyBound, PyBound, evaluate, observed, warn_misspecified};
use crate::continuous::{self, PyChoice};
use crate::errors::{InvalidParameterError, OrRaise};
use crate::kernels::{AnyKernel, Kernel};

type Agent = dyn BanditAgent + Send;

fn select(py: Python<'_>, agent: &mut Agent, arms: &Bound<'_, PyAny>) -> PyResult<usize> {
    let aa = matrix(arms, "arms")?;
    let (data, dim) = rows(&aa);
    py.detach(|| agent.select_from(&Points::from_row_major(data, dim)?))
        .or_raise()
}

fn update(
    py: Python<'_>,
    agent: &mut Agent,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let y = target(y, "y")?;
    let xa = vector(x, "x")?;
    let xs = elements(&xa);
    let pending = agent.pending_len();
    py.detach(|| agent.update(xs, y)).or_raise()?;
    warn_unresolved(py, pending, agent.pending_len())
}

/// A `PendingWarning` when an update resolved none of the `before` pending evaluations (the
/// observation is absorbed all the same).
fn warn_unresolved(py: Python<'_>, before: usize, after: usize) -> PyResult<()> {
    if before == 0 || after < before {
        return Ok(());
    }
    let message = format!(
        "update resolved none of the {before} pending evaluation(s): the point is not one handed \
         out or registered with pending (bitwise, or within a relative 1e-5 in every \
         coordinate), so they stay pending and keep steering the next choices. The observation \
         is absorbed; pass the very point handed out, or withdraw the pending one (see \
         agent.pending_points)"
    );
    let category = py
        .import("kernel_bandits._values")?
        .getattr("PendingWarning")?;
    let message = std::ffi::CString::new(message).expect("no NUL byte");
    PyErr::warn(py, &category, &message, 1)
}

/// A `MisspecificationWarning` before a selection if `bound`'s confidence set is empty: the
/// agent goes on (`misspecification="report"`), but not silently.
fn warn_if_refuted(py: Python<'_>, bound: &(impl ConfidenceBound + ?Sized)) -> PyResult<()> {
    match py.detach(|| bound.diagnostics()).describe() {
        Some(what) => warn_misspecified(py, &what),
        None => Ok(()),
    }
}

fn select_contextual(
    py: Python<'_>,
    agent: &mut Agent,
    context: &Bound<'_, PyAny>,
    actions: &Bound<'_, PyAny>,
) -> PyResult<usize> {
    let ca = vector(context, "context")?;
    let cs = elements(&ca);
    let aa = matrix(actions, "actions")?;
    let (data, dim) = rows(&aa);
    py.detach(|| {
        let arms = ContextualArms::new(cs, &Points::from_row_major(data, dim)?)?;
        agent.select_from(&arms.points())
    })
    .or_raise()
}

fn update_contextual(
    py: Python<'_>,
    agent: &mut Agent,
    context: &Bound<'_, PyAny>,
    action: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let y = target(y, "y")?;
    let ca = vector(context, "context")?;
    let aa = vector(action, "action")?;
    let (cs, acts) = (elements(&ca), elements(&aa));
    let pending = agent.pending_len();
    py.detach(|| agent.update_contextual(cs, acts, y))
        .or_raise()?;
    warn_unresolved(py, pending, agent.pending_len())
}

fn select_in(py: Python<'_>, agent: &mut Agent, domain: &Bound<'_, PyAny>) -> PyResult<PyChoice> {
    let domain = continuous::domain(domain)?;
    let choice = py.detach(|| agent.select_in(&domain)).or_raise()?;
    Ok(PyChoice(choice))
}

fn select_batch<'py>(
    py: Python<'py>,
    agent: &mut Agent,
    arms_or_domain: &Bound<'py, PyAny>,
    q: usize,
) -> PyResult<Bound<'py, PyList>> {
    if q == 0 {
        // Checked before the agent runs: the crate's `RandomAgent::select_batch_from` draws the
        // first arm before it checks q, which would advance its generator on a refused call.
        return Err(kernel_bandits::Error::InvalidParameter {
            name: "q",
            value: 0.0,
            expected: "a batch of at least one point",
        })
        .or_raise();
    }
    if arms_or_domain.cast::<PyList>().is_ok_and(|l| l.len() == 2) {
        // `[lo, hi]` meant as a box would otherwise be two arms, silently.
        return Err(InvalidParameterError::new_err(
            "select_batch: a list of two elements is ambiguous: for a box give BoxDomain(lo, hi) \
             or a tuple (lo, hi); for two arms give a 2-D array, numpy.asarray(arms)",
        ));
    }
    if continuous::is_domain(arms_or_domain, false) {
        let domain = continuous::domain(arms_or_domain)?;
        let choices = py.detach(|| agent.select_batch_in(&domain, q)).or_raise()?;
        PyList::new(py, choices.into_iter().map(PyChoice))
    } else {
        let aa = matrix(arms_or_domain, "arms")?;
        let (data, dim) = rows(&aa);
        let indices = py
            .detach(|| agent.select_batch_from(&Points::from_row_major(data, dim)?, q))
            .or_raise()?;
        PyList::new(py, indices)
    }
}

fn pending(py: Python<'_>, agent: &mut Agent, x: &Bound<'_, PyAny>) -> PyResult<()> {
    let xa = vector(x, "x")?;
    let xs = elements(&xa);
    py.detach(|| agent.pending(xs)).or_raise()
}

fn withdraw(py: Python<'_>, agent: &mut Agent, x: &Bound<'_, PyAny>) -> PyResult<()> {
    let xa = vector(x, "x")?;
    let xs = elements(&xa);
    py.detach(|| agent.withdraw(xs)).or_raise()
}

/// The methods every agent class has, and the class's own `extra` methods, in one block.
macro_rules! agent_class {
    ($class:ident, $rs:ty, { $($extra:tt)* }) => {
        #[pymethods]
        impl $class {
            /// The index of the arm (row of the (n, d) array `arms`) the agent plays.
            fn select(&mut self, py: Python<'_>, arms: &Bound<'_, PyAny>) -> PyResult<usize> {
                self.warn_if_refuted(py)?;
                select(py, &mut self.inner, arms)
            }

            /// Tells the agent the reward `y` (a number, or an array holding one) observed at
            /// the arm `x` (a 1-D array). If `x` is pending it is resolved: bitwise equal, else
            /// the nearest pending point within a relative 1e-5 in every coordinate. An update
            /// that resolves none while evaluations are pending warns (`PendingWarning`).
            fn update(
                &mut self,
                py: Python<'_>,
                x: &Bound<'_, PyAny>,
                y: &Bound<'_, PyAny>,
            ) -> PyResult<()> {
                update(py, &mut self.inner, x, y)
            }

            /// Contextual bandits (Zenati et al. 2022 §2): the index of the action (row of
            /// `actions`) to play in `context`; the agent scores the joint points
            /// [context ‖ action].
            fn select_contextual(
                &mut self,
                py: Python<'_>,
                context: &Bound<'_, PyAny>,
                actions: &Bound<'_, PyAny>,
            ) -> PyResult<usize> {
                self.warn_if_refuted(py)?;
                select_contextual(py, &mut self.inner, context, actions)
            }

            /// Tells the agent the reward `y` of `action` in `context`.
            fn update_contextual(
                &mut self,
                py: Python<'_>,
                context: &Bound<'_, PyAny>,
                action: &Bound<'_, PyAny>,
                y: &Bound<'_, PyAny>,
            ) -> PyResult<()> {
                update_contextual(py, &mut self.inner, context, action, y)
            }

            /// The next point to evaluate in the box `domain` (a `BoxDomain` or a pair `(lo, hi)`),
            /// as a `Choice`. `UcbAgent`: the maximiser of the UCB found by multi-start,
            /// box-constrained quasi-Newton search (see its `starts`, `refine`, `seed`) or, while
            /// a UCB point is pending, a GP-BUCB point (Desautels, Krause & Burdick 2014; or, with
            /// `batch_rule="exploration"`, a GP-UCB-PE exploration point, Contal et al. 2013).
            /// `RandomAgent`: a uniform point. The point is not registered as pending (call
            /// `pending`). Other agents raise `UnsupportedError`.
            fn select_in(
                &mut self,
                py: Python<'_>,
                domain: &Bound<'_, PyAny>,
            ) -> PyResult<PyChoice> {
                self.warn_if_refuted(py)?;
                select_in(py, &mut self.inner, domain)
            }

            /// `q` points to evaluate at once, registered as pending: for an (n, d) array of
            /// arms, a list of `q` row indices; for a `BoxDomain` or a tuple `(lo, hi)`, a list
            /// of `q` `Choice`s. `UcbAgent`: one UCB point (unless one is already pending), then
            /// among arms the largest variance given the pending ones within the relevant region
            /// (GP-UCB-PE, Contal et al. 2013), in a box GP-BUCB points (Desautels, Krause &
            /// Burdick 2014; `batch_rule` of `with_continuous`). `update` resolves each, in any order;
            /// `withdraw` forgets one. Raises `InvalidParameterError` for `q = 0`; other agents
            /// than `UcbAgent` and `RandomAgent` raise `UnsupportedError`.
            fn select_batch<'py>(
                &mut self,
                py: Python<'py>,
                arms_or_domain: &Bound<'py, PyAny>,
                q: usize,
            ) -> PyResult<Bound<'py, PyList>> {
                self.warn_if_refuted(py)?;
                select_batch(py, &mut self.inner, arms_or_domain, q)
            }

            /// Registers the 1-D point `x` as a pending evaluation (handed to a worker, its
            /// reward still to come): later selections take it into account, `update` with the
            /// same point (bitwise, else the nearest pending point within a relative 1e-5 in
            /// every coordinate) resolves it, `withdraw` forgets it. If `x` is the last UCB
            /// point the agent handed out, it counts as the pending UCB point.
            fn pending(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
                pending(py, &mut self.inner, x)
            }

            /// Forgets the pending evaluation `x` (the first one bitwise equal, else the nearest
            /// within a relative 1e-5 in every coordinate), e.g. for a
            /// failed experiment: the agent is then exactly what it would be had `x` never been
            /// pending. Raises `NotPendingError` if `x` is not pending.
            fn withdraw(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
                withdraw(py, &mut self.inner, x)
            }

            /// The number of pending evaluations.
            #[getter]
            fn pending_len(&self) -> usize {
                self.inner.pending_len()
            }

            /// The agent's name, e.g. "UCB(DMM-UCB)".
            #[getter]
            fn name(&self) -> String {
                self.inner.name()
            }

            /// The agent as bytes (the crate's binary snapshot, with a checksum).
            fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
                let inner = &self.inner;
                let bytes = py.detach(|| inner.to_bytes()).or_raise()?;
                Ok(PyBytes::new(py, &bytes))
            }

            /// An agent from `to_bytes`; it continues bit-identically.
            #[staticmethod]
            #[pyo3(signature = (data, spec = None))]
            fn from_bytes(py: Python<'_>, data: &[u8], spec: Option<String>) -> PyResult<Self> {
                let inner = py.detach(|| <$rs>::from_bytes(data)).or_raise()?;
                let spec = spec.unwrap_or_else(|| inner.name());
                Ok(Self { inner, spec })
            }

            fn __reduce__<'py>(
                &self,
                py: Python<'py>,
            ) -> PyResult<crate::Reduce<'py>> {
                let restore = py.get_type::<$class>().getattr("from_bytes")?;
                Ok((restore, (self.to_bytes(py)?, self.spec.clone())))
            }

            /// An independent copy.
            fn copy(&self, py: Python<'_>) -> PyResult<Self> {
                let this = &self.inner;
                let inner = py
                    .detach(|| <$rs>::from_bytes(&this.to_bytes()?))
                    .or_raise()?;
                Ok(Self { inner, spec: self.spec.clone() })
            }

            fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
                self.copy(py)
            }

            fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
                self.copy(py)
            }

            fn __repr__(&self) -> String {
                self.spec.clone()
            }

            $($extra)*
        }
    };
}

/// The bandit agent of Flynn & Reeb (2024) Alg. 1: plays the arm with the largest upper
/// confidence bound of `bound` (the lowest index among ties), then absorbs the reward.
///
/// The agent starts from a copy of `bound` (with whatever it has observed); `agent.bound` is a
/// copy of the agent's bound now, and `agent.bounds(x)` scores points without copying.
///
/// Fixed arm sets: when the same arms come back every round, the exact bounds keep their kernel
/// rows and score them in O(t) per arm. `arm_sets="detect"` (default) notices a repeated set by
/// itself, within `memory_limit` bytes; `"declared"` only uses a set given to `with_arm_set`
/// (or `arm_set=`); `"off"` never keeps one. The choices are the same in every mode.
///
/// `misspecification="refuse"` makes `select` raise `MisspecifiedError` once the data refute
/// σ, B or δ (see `Bound.diagnostics`); the default `"report"` goes on.
///
/// Continuous domains (`select_in`, `select_batch` on a box): `starts` space-filling points (a
/// scrambled Sobol sequence, drawn afresh each round from `seed`, the number of observations and
/// of pending points) are scored at once and the best `refine` of them are refined by a
/// box-constrained quasi-Newton method; defaults 1024, 5 and 0 (`with_continuous` changes them).
/// The point returned lies in the box and its UCB is at least that of every start: a local
/// maximiser, not a certified global one. While a UCB point is pending (the further points of a
/// batch, asynchronous workers), `batch_rule="pending-ucb"` (default) maximises GP-BUCB's
/// μ + (UCB − μ)·σ_P/σ (Desautels, Krause & Burdick 2014) and `"exploration"` the variance
/// given the pending points in the relevant region (GP-UCB-PE, Contal et al. 2013).
#[pyclass(name = "UcbAgent", module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyUcbAgent {
    inner: RsUcb<PyAnyBound>,
    spec: String,
}

/// `base` with the options given replaced.
fn continuous_options(
    base: ContinuousOptions,
    starts: Option<usize>,
    refine: Option<usize>,
    seed: Option<u64>,
    max_iterations: Option<usize>,
    batch_rule: Option<&str>,
) -> PyResult<ContinuousOptions> {
    let mut o = base;
    if let Some(rule) = batch_rule {
        o.batch_rule = parse_batch_rule(rule)?;
    }
    if let Some(v) = max_iterations {
        o.max_iterations = v;
    }
    if let Some(v) = starts {
        o.starts = v;
    }
    if let Some(v) = refine {
        o.refine = v;
    }
    if let Some(v) = seed {
        o.seed = v;
    }
    Ok(o)
}

pub(crate) fn parse_batch_rule(rule: &str) -> PyResult<BatchRule> {
    Ok(match rule {
        "pending-ucb" => BatchRule::PendingUcb,
        "exploration" => BatchRule::Exploration,
        other => {
            return Err(InvalidParameterError::new_err(format!(
                "batch_rule = {other:?}: expected \"pending-ucb\" or \"exploration\""
            )));
        }
    })
}

fn batch_rule_name(rule: BatchRule) -> &'static str {
    match rule {
        BatchRule::PendingUcb => "pending-ucb",
        BatchRule::Exploration => "exploration",
    }
}

fn parse_policy(arm_sets: &str, memory_limit: Option<usize>) -> PyResult<ArmSetPolicy> {
    Ok(match arm_sets {
        "detect" => ArmSetPolicy::Detect {
            memory_limit: memory_limit.unwrap_or(ArmSetPolicy::DEFAULT_MEMORY_LIMIT),
        },
        "declared" => ArmSetPolicy::Declared,
        "off" => ArmSetPolicy::Off,
        other => {
            return Err(InvalidParameterError::new_err(format!(
                "arm_sets = {other:?}: expected \"detect\", \"declared\" or \"off\""
            )));
        }
    })
}

agent_class!(PyUcbAgent, RsUcb<PyAnyBound>, {
    #[new]
    #[pyo3(signature = (bound, *, arm_set = None, arm_sets = "detect", memory_limit = None, misspecification = "report", starts = None, refine = None, seed = None, max_iterations = None, batch_rule = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        bound: PyRef<'_, PyBound>,
        arm_set: Option<&Bound<'_, PyAny>>,
        arm_sets: &str,
        memory_limit: Option<usize>,
        misspecification: &str,
        starts: Option<usize>,
        refine: Option<usize>,
        seed: Option<u64>,
        max_iterations: Option<usize>,
        batch_rule: Option<&str>,
    ) -> PyResult<Self> {
        let options = continuous_options(
            ContinuousOptions::default(),
            starts,
            refine,
            seed,
            max_iterations,
            batch_rule,
        )?;
        let policy = parse_policy(arm_sets, memory_limit)?;
        if memory_limit.is_some() && !matches!(policy, ArmSetPolicy::Detect { .. }) {
            return Err(InvalidParameterError::new_err(
                "memory_limit applies to arm_sets=\"detect\" only",
            ));
        }
        if arm_set.is_some() && policy == ArmSetPolicy::Off {
            return Err(InvalidParameterError::new_err(
                "arm_set is given but arm_sets=\"off\" keeps no arm set",
            ));
        }
        let misspecification = match misspecification {
            "report" => Misspecification::Report,
            "refuse" => Misspecification::Refuse,
            other => {
                return Err(InvalidParameterError::new_err(format!(
                    "misspecification = {other:?}: expected \"report\" or \"refuse\""
                )));
            }
        };
        let start = &bound.inner;
        let mut inner = RsUcb::new(py.detach(|| start.clone()))
            .with_policy(policy)
            .with_misspecification(misspecification)
            .with_continuous(options)
            .or_raise()?;
        if let Some(arms) = arm_set {
            let aa = matrix(arms, "arm_set")?;
            let (data, dim) = rows(&aa);
            inner = py
                .detach(|| inner.with_arm_set(&Points::from_row_major(data, dim)?))
                .or_raise()?;
        }
        Ok(Self {
            inner,
            spec: format!("UcbAgent({})", bound.spec),
        })
    }

    /// Refits the kernel's hyperparameters and σ on every observation the agent absorbed
    /// (`fit_hyperparameters` with `family`, `nu`, `per_dimension`, `starts`, `seed`) and
    /// rebuilds the bound in place: same kind, same B, δ and c (an `AdaptiveNorm` bound keeps
    /// its current level and doubling history), with the fitted kernel and σ. Returns the `Fit`.
    ///
    /// `mode="all"` (default): the bound then conditions on every observation; **no guarantee
    /// is claimed**, since the kernel was chosen from the same data (what Bayesian optimisation
    /// usually does). `mode="strict"`: the bound starts empty and conditions only on later
    /// observations; given the past, the fitted kernel and σ are fixed, so Flynn & Reeb
    /// (2024)'s guarantee holds for the later data at every round at once. Pending evaluations
    /// are kept. Only AMM, DMM and CMM bounds can be refitted; a refit that raises leaves the
    /// agent as it was.
    #[pyo3(signature = (mode = "all", *, family = "matern", nu = 2.5, per_dimension = false, starts = 32, seed = 0))]
    #[allow(clippy::too_many_arguments)]
    fn refit(
        &mut self,
        py: Python<'_>,
        mode: &str,
        family: &str,
        nu: f64,
        per_dimension: bool,
        starts: usize,
        seed: u64,
    ) -> PyResult<crate::hyper::Fit> {
        crate::optimise::refit_agent(
            py,
            &mut self.inner,
            mode,
            family,
            nu,
            per_dimension,
            starts,
            seed,
        )
        .map(crate::hyper::Fit::from_rust)
    }

    /// The observed point with the largest lower confidence bound, as a `Recommendation` (`x`,
    /// `index` among the observations, `lcb`, `mean`, `ucb`). Raises `NoArmsError` before the
    /// first observation.
    fn recommend(&self, py: Python<'_>) -> PyResult<crate::optimise::Recommendation> {
        crate::optimise::recommend_agent(py, &self.inner)
    }

    /// Plays the arm of largest UCB among `arms` (an (n, d) array), calls `objective` (a 1-D
    /// float64 array → a number) there and absorbs the value, until a rule holds: `gap` (the
    /// certified gap ≤ ε), `relative_gap` (≤ the fraction × the range of the values observed
    /// in the run), `noise_level` (≤ σ, as Makarova et al. 2022) or the `budget` of
    /// evaluations; every rule is checked before each evaluation. Returns a `CertifiedRun`:
    /// the final `Certificate` (the bounds intersected over the run's rounds), the rule that
    /// stopped and the history. With probability ≥ 1 − δ, f(x*) − f(x̂) ≤ `certificate.gap` at
    /// whichever round it stops, for a bound whose σ, B and kernel were fixed before the data
    /// (not `AdaptiveNorm`). Raises `InvalidParameterError` for a rule that is not positive and
    /// finite (before any evaluation), `NonFiniteError` for a NaN or infinite value (not
    /// absorbed), `MisspecifiedError` when the data refute the bound; an exception raised by
    /// `objective` propagates. Values absorbed before an error stay absorbed.
    #[pyo3(signature = (arms, objective, *, budget, gap = None, relative_gap = None, noise_level = None))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of the Python method
    fn run_until(
        &mut self,
        py: Python<'_>,
        arms: &Bound<'_, PyAny>,
        objective: Py<PyAny>,
        budget: usize,
        gap: Option<f64>,
        relative_gap: Option<f64>,
        noise_level: Option<f64>,
    ) -> PyResult<crate::decide::CertifiedRun> {
        let rule = crate::decide::stopping_rule(budget, gap, relative_gap, noise_level);
        crate::decide::run_until(py, &mut self.inner, arms, objective, &rule)
    }

    /// Sets how `select_in` searches a box: `starts` space-filling starts scored, the best
    /// `refine` refined for at most `max_iterations` quasi-Newton iterations each, `seed` of the
    /// starts (each at least 1 but the seed), and `batch_rule` while a UCB point is pending
    /// (`"pending-ucb"`, GP-BUCB, or `"exploration"`, GP-UCB-PE). `None` keeps the current
    /// value. Returns the agent.
    #[pyo3(signature = (*, starts = None, refine = None, seed = None, max_iterations = None, batch_rule = None))]
    fn with_continuous<'py>(
        mut slf: PyRefMut<'py, Self>,
        starts: Option<usize>,
        refine: Option<usize>,
        seed: Option<u64>,
        max_iterations: Option<usize>,
        batch_rule: Option<&str>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let options = continuous_options(
            slf.inner.continuous(),
            starts,
            refine,
            seed,
            max_iterations,
            batch_rule,
        )?;
        let agent = slf.inner.clone();
        slf.inner = agent.with_continuous(options).or_raise()?;
        Ok(slf)
    }

    /// How `select_in` searches a box: a dict with `starts`, `refine`, `seed`,
    /// `max_iterations` and `batch_rule`.
    #[getter]
    fn continuous<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.inner.continuous();
        let d = PyDict::new(py);
        d.set_item("starts", o.starts)?;
        d.set_item("refine", o.refine)?;
        d.set_item("seed", o.seed)?;
        d.set_item("max_iterations", o.max_iterations)?;
        d.set_item("batch_rule", batch_rule_name(o.batch_rule))?;
        Ok(d)
    }

    /// The starts the next `select_in(domain)` (or the next point of `select_batch` on the box)
    /// scores, as an (n, d) array: `starts` space-filling points, followed for a UCB point by
    /// the last UCB point if it is in the box. The point chosen has a UCB at least that of each.
    fn next_starts<'py>(
        &self,
        py: Python<'py>,
        domain: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let domain = continuous::domain(domain)?;
        let d = domain.dim();
        let inner = &self.inner;
        let starts = py.detach(|| inner.next_starts(&domain));
        let n = starts.len() / d;
        PyArray1::from_vec(py, starts).reshape([n, d])
    }

    /// The pending evaluations, oldest first, as a (p, d) array (shape (0, 0) when there are
    /// none and the dimension is not known yet).
    #[getter]
    fn pending_points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let points = self.inner.pending_points();
        let d = points
            .first()
            .map_or_else(|| self.inner.bound().dim().unwrap_or(0), Vec::len);
        let flat: Vec<f64> = points.concat();
        PyArray1::from_vec(py, flat).reshape([points.len(), d])
    }

    /// Declares the arm set the agent will be offered every round (the rows of `arms`): the
    /// exact bounds then keep its kernel rows. Returns the agent.
    fn with_arm_set<'py>(
        mut slf: PyRefMut<'py, Self>,
        arms: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = slf.py();
        let aa = matrix(arms, "arms")?;
        let (data, dim) = rows(&aa);
        let agent = &slf.inner;
        let declared = py
            .detach(|| {
                agent
                    .clone()
                    .with_arm_set(&Points::from_row_major(data, dim)?)
            })
            .or_raise()?;
        slf.inner = declared;
        Ok(slf)
    }

    /// (mean, lcb, ucb) of the agent's bound at the rows of `x`, as `Bound.bounds` returns
    /// them (a `BoundValues`; a `MisspecificationWarning` if the data refute the assumptions).
    fn bounds<'py>(&self, py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        evaluate(py, self.inner.bound(), x)
    }

    /// The inputs the agent has observed, an (n, d) array in the order observed.
    #[getter]
    fn observed_x<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        Ok(observed(py, self.inner.bound())?.0)
    }

    /// The rewards the agent has observed, a float64 array of length n, in the order observed.
    #[getter]
    fn observed_y<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(observed(py, self.inner.bound())?.1)
    }

    /// The diagnostics of the agent's bound.
    fn diagnostics(&self, py: Python<'_>) -> crate::bounds::Diagnostics {
        let bound = self.inner.bound();
        py.detach(|| bound.diagnostics()).into()
    }

    /// A copy of the agent's bound as it is now.
    #[getter]
    fn bound(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let bound = self.inner.bound();
        PyBound {
            inner: py.detach(|| bound.clone()),
            spec: self
                .spec
                .strip_prefix("UcbAgent(")
                .and_then(|s| s.strip_suffix(')'))
                .unwrap_or(&self.spec)
                .to_string(),
        }
        .into_py_object(py)
    }

    /// The number of observations the agent has absorbed.
    fn __len__(&self) -> usize {
        self.inner.bound().len()
    }
});

/// Plays a uniformly random arm each round, from a seeded generator (the baseline of Flynn &
/// Reeb 2024 §7).
#[pyclass(name = "RandomAgent", module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyRandomAgent {
    inner: RsRandom,
    spec: String,
}

agent_class!(PyRandomAgent, RsRandom, {
    #[new]
    #[pyo3(signature = (seed = 0))]
    fn new(seed: u64) -> Self {
        Self {
            inner: RsRandom::new(seed),
            spec: format!("RandomAgent(seed={seed})"),
        }
    }
});

/// GP-UCB that forgets everything every `interval` rounds (R-GP-UCB, a baseline of Iwazaki &
/// Takeno 2025 §6), over a copy of any bound.
#[pyclass(name = "Restarting", module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyRestarting {
    inner: RsRestarting<PyAnyBound>,
    spec: String,
}

agent_class!(PyRestarting, RsRestarting<PyAnyBound>, {
    #[new]
    fn new(py: Python<'_>, bound: PyRef<'_, PyBound>, interval: usize) -> PyResult<Self> {
        let start = &bound.inner;
        let inner = py
            .detach(|| RsRestarting::new(start.clone(), interval))
            .or_raise()?;
        Ok(Self {
            inner,
            spec: format!("Restarting({}, interval={interval})", bound.spec),
        })
    }

    /// The restart interval.
    #[getter]
    fn interval(&self) -> usize {
        self.inner.interval()
    }
});

/// GP-UCB on the last `window` observations only (SW-GP-UCB, a baseline of Iwazaki & Takeno
/// 2025 §6), over a copy of a bound that can forget its oldest observation (the exact bounds).
#[pyclass(name = "SlidingWindow", module = "kernel_bandits")]
#[derive(Debug)]
pub struct PySlidingWindow {
    inner: RsWindow<PyAnyBound>,
    spec: String,
}

agent_class!(PySlidingWindow, RsWindow<PyAnyBound>, {
    #[new]
    fn new(py: Python<'_>, bound: PyRef<'_, PyBound>, window: usize) -> PyResult<Self> {
        if !bound.inner.kind().is_exact() {
            // Checked here too: the crate checks it only on an empty bound.
            return Err(crate::errors::UnsupportedError::new_err(format!(
                "a sliding window needs a bound that can forget its oldest observation (an exact \
                 one): the {} bound cannot",
                bound.inner.kind()
            )));
        }
        let start = &bound.inner;
        let inner = py
            .detach(|| RsWindow::new(start.clone(), window))
            .or_raise()?;
        Ok(Self {
            inner,
            spec: format!("SlidingWindow({}, window={window})", bound.spec),
        })
    }

    /// The window length.
    #[getter]
    fn window(&self) -> usize {
        self.inner.window()
    }
});

/// R-PERP, restarting phased elimination with random permutation (Iwazaki & Takeno 2025
/// Alg. 1), for a fixed arm set `arms` over `horizon` rounds: within each interval of H rounds
/// it plays batches of maximum-variance arms in random order and eliminates arms whose UCB falls
/// below the best LCB, then restarts.
///
/// Parameters (the crate's defaults when `None`): `noise` σ (0.1), `lambda_` λ (σ²), `norm_bound`
/// B (1), `delta` δ (0.1), `constant` C of the width (1), `width_scale` (1; the paper's
/// experiments scale the theoretical width), `width` (a fixed width instead of the theory's),
/// `variation` V_T (1), `interval` H (the theory's from V_T). `seed` draws the permutations.
#[pyclass(name = "RPerp", module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyRPerp {
    inner: RsRPerp<AnyKernel>,
    spec: String,
}

agent_class!(PyRPerp, RsRPerp<AnyKernel>, {
    #[new]
    #[pyo3(signature = (kernel, arms, horizon, *, noise = None, lambda_ = None, norm_bound = None, delta = None, constant = None, width_scale = None, width = None, variation = None, interval = None, seed = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        kernel: PyRef<'_, Kernel>,
        arms: &Bound<'_, PyAny>,
        horizon: usize,
        noise: Option<f64>,
        lambda_: Option<f64>,
        norm_bound: Option<f64>,
        delta: Option<f64>,
        constant: Option<f64>,
        width_scale: Option<f64>,
        width: Option<f64>,
        variation: Option<f64>,
        interval: Option<usize>,
        seed: u64,
    ) -> PyResult<Self> {
        let mut p = RPerpParams::new(horizon);
        if let Some(v) = noise {
            p = p.noise(v);
        }
        if let Some(v) = lambda_ {
            p = p.lambda(v);
        }
        if let Some(v) = norm_bound {
            p = p.norm_bound(v);
        }
        if let Some(v) = delta {
            p = p.delta(v);
        }
        if let Some(v) = constant {
            p = p.constant(v);
        }
        if let Some(v) = width_scale {
            p = p.width_scale(v);
        }
        if let Some(v) = width {
            p = p.width(v);
        }
        if let Some(v) = variation {
            p = p.variation(v);
        }
        if let Some(v) = interval {
            p = p.interval(v);
        }
        let aa = matrix(arms, "arms")?;
        let (data, dim) = rows(&aa);
        let k = kernel.inner.clone();
        let inner = py
            .detach(|| RsRPerp::new(k, &Points::from_row_major(data, dim)?, p, seed))
            .or_raise()?;
        let spec = format!(
            "RPerp({}, <{} arms>, horizon={horizon}, seed={seed})",
            kernel.repr,
            aa.shape()[0]
        );
        Ok(Self { inner, spec })
    }

    /// The interval length H.
    #[getter]
    fn interval(&self) -> usize {
        self.inner.interval_len()
    }

    /// The confidence width used for elimination.
    #[getter]
    fn width(&self) -> f64 {
        self.inner.width()
    }

    /// The indices of the arms still potential maximisers in this interval.
    #[getter]
    fn potential_maximisers(&self) -> Vec<usize> {
        self.inner.potential_maximisers().to_vec()
    }
});

impl PyUcbAgent {
    fn warn_if_refuted(&self, py: Python<'_>) -> PyResult<()> {
        warn_if_refuted(py, self.inner.bound())
    }
}

impl PyRestarting {
    fn warn_if_refuted(&self, py: Python<'_>) -> PyResult<()> {
        warn_if_refuted(py, self.inner.agent().bound())
    }
}

impl PySlidingWindow {
    fn warn_if_refuted(&self, py: Python<'_>) -> PyResult<()> {
        warn_if_refuted(py, self.inner.agent().bound())
    }
}

/// Agents without a confidence bound of the crate's have nothing to warn about.
macro_rules! never_refuted {
    ($($class:ty),*) => {$(
        impl $class {
            fn warn_if_refuted(&self, _py: Python<'_>) -> PyResult<()> {
                Ok(())
            }
        }
    )*};
}
never_refuted!(PyRandomAgent, PyRPerp);

/// `f(agent)` on a copy of the agent inside any of the agent classes, which replaces the agent
/// only if `f` succeeds: a call that raises leaves the agent as it was.
pub fn with_agent<R>(
    obj: &Bound<'_, PyAny>,
    f: impl FnOnce(&mut Agent) -> PyResult<R>,
) -> PyResult<R> {
    macro_rules! try_class {
        ($($class:ty),*) => {$(
            if let Ok(cell) = obj.cast::<$class>() {
                let mut this = cell.try_borrow_mut()?;
                let mut working = this.copy(obj.py())?;
                let result = f(&mut working.inner)?;
                *this = working;
                return Ok(result);
            }
        )*};
    }
    try_class!(
        PyUcbAgent,
        PyRandomAgent,
        PyRestarting,
        PySlidingWindow,
        PyRPerp
    );
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected an agent of kernel_bandits (UcbAgent, RandomAgent, Restarting, SlidingWindow, RPerp), got {}",
        obj.get_type().name()?
    )))
}

/// Adds the agent classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyUcbAgent>()?;
    m.add_class::<PyRandomAgent>()?;
    m.add_class::<PyRestarting>()?;
    m.add_class::<PySlidingWindow>()?;
    m.add_class::<PyRPerp>()?;
    Ok(())
}
