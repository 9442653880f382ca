//! Certified recommendations and stopping rules over arm sets (`certify`, `Certifier`,
//! `UcbAgent.run_until`), backed by the crate's `kernel_bandits::decide`.

use std::sync::Mutex;

use kernel_bandits::agent::UcbAgent;
use kernel_bandits::decide::{
    BoxCertificate as RsBoxCertificate, BoxCertifyOptions, BoxOrder, CertifiedRun as RsRun,
    Certifier as RsCertifier, RegretCertificate as RsRegretCertificate, Stop, StoppingRule,
    certify as rs_certify, certify_box as rs_certify_box,
};
use kernel_bandits::points::Points;
use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;

use crate::arrays::{matrix, rows, to_numpy};
use crate::bounds::{PyAnyBound, PyBound};
use crate::errors::OrRaise;
use crate::optimise::Recommendation;

/// A recommendation and an upper bound on its simple regret over a finite set of arms.
///
/// `recommendation`: the arm with the largest lower bound (`index` into the arms, ties to the
/// lowest); `upper`: the largest upper bound over the arms (for a `Certifier`, the smallest such
/// value over the rounds), attained at arm `upper_index`; `gap` = `upper` −
/// `recommendation.lcb`. With probability ≥ 1 − δ, at every round at once (so also at a round
/// chosen by looking at the data), f(x*) − f(x̂) ≤ `gap` for the best arm x* — for a bound
/// whose σ, B and kernel were fixed before the data (not `AdaptiveNorm`, not fitted on the same
/// data).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct RegretCertificate(RsRegretCertificate);

#[pymethods]
impl RegretCertificate {
    /// The recommended arm (a `Recommendation`: `x`, `index`, `lcb`, `mean`, `ucb`).
    #[getter]
    fn recommendation(&self) -> Recommendation {
        Recommendation(self.0.recommendation.clone())
    }
    /// An upper bound on the largest value of f over the arms.
    #[getter]
    fn upper(&self) -> f64 {
        self.0.upper
    }
    /// The arm where `upper` was attained.
    #[getter]
    fn upper_index(&self) -> usize {
        self.0.upper_index
    }
    /// `upper − recommendation.lcb`: a bound on the recommendation's simple regret.
    #[getter]
    fn gap(&self) -> f64 {
        self.0.gap
    }
    /// Observations the bound had absorbed.
    #[getter]
    fn observations(&self) -> usize {
        self.0.observations
    }
    fn __repr__(&self) -> String {
        let c = &self.0;
        format!(
            "RegretCertificate(gap={}, upper={}, upper_index={}, recommendation=arm {} (lcb={}), observations={})",
            c.gap,
            c.upper,
            c.upper_index,
            c.recommendation.index,
            c.recommendation.lcb,
            c.observations
        )
    }
}

/// The certificate of `bound` over the arms (an (n, d) array): the arm with the largest LCB,
/// the largest UCB over the arms and the gap between them (see `RegretCertificate`). Raises
/// `MisspecifiedError` when the data refute the bound's assumptions (an empty confidence set,
/// or LCB > UCB at some arm): then nothing is certified. `NoArmsError`, `DimensionError`,
/// `NonFiniteError` for bad arms.
#[pyfunction]
fn certify(
    py: Python<'_>,
    bound: PyRef<'_, PyBound>,
    arms: &Bound<'_, PyAny>,
) -> PyResult<RegretCertificate> {
    let a = matrix(arms, "arms")?;
    let (data, dim) = rows(&a);
    let inner: &PyAnyBound = &bound.inner;
    py.detach(|| rs_certify(inner, &Points::from_row_major(data, dim)?))
        .map(RegretCertificate)
        .or_raise()
}

/// A recommendation over a box and a proven bound on its simple regret (`certify_box`).
///
/// `upper` ≥ the largest UCB anywhere in the box (proven, by branch and bound over sub-boxes);
/// `best_found` the largest UCB found at a point (`best_point`); `tolerance` = `upper` −
/// `best_found`, what the search reached (`converged` says whether it reached the requested
/// one); `boxes` the sub-boxes bounded; `recommendation` the point with the largest LCB found
/// (`index` its observation, or the number of observations for a point found by local search);
/// `gap` = `upper` − `recommendation.lcb` ≥ f(x*) − f(x̂) with probability ≥ 1 − δ, at every
/// round at once.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct BoxCertificate(RsBoxCertificate);

#[pymethods]
impl BoxCertificate {
    /// The recommended point (a `Recommendation`).
    #[getter]
    fn recommendation(&self) -> Recommendation {
        Recommendation(self.0.recommendation.clone())
    }
    /// A proven upper bound on the largest UCB in the box.
    #[getter]
    fn upper(&self) -> f64 {
        self.0.upper
    }
    /// The largest UCB found at a point of the box.
    #[getter]
    fn best_found(&self) -> f64 {
        self.0.best_found
    }
    /// Where `best_found` was found.
    #[getter]
    fn best_point<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.0.best_point)
    }
    /// `upper − recommendation.lcb`.
    #[getter]
    fn gap(&self) -> f64 {
        self.0.gap
    }
    /// `upper − best_found`, the tolerance reached.
    #[getter]
    fn tolerance(&self) -> f64 {
        self.0.tolerance
    }
    /// Whether the requested tolerance was reached.
    #[getter]
    fn converged(&self) -> bool {
        self.0.converged
    }
    /// Sub-boxes bounded.
    #[getter]
    fn boxes(&self) -> usize {
        self.0.boxes
    }
    /// Whether the second-order sub-box bound was available.
    #[getter]
    fn second_order(&self) -> bool {
        self.0.second_order
    }
    /// Observations the bound had absorbed.
    #[getter]
    fn observations(&self) -> usize {
        self.0.observations
    }
    fn __repr__(&self) -> String {
        let c = &self.0;
        format!(
            "BoxCertificate(gap={}, upper={}, best_found={}, tolerance={}, converged={}, boxes={}, observations={})",
            c.gap, c.upper, c.best_found, c.tolerance, c.converged, c.boxes, c.observations
        )
    }
}

/// The certificate of `bound` over the box `domain` (a `BoxDomain` or a pair `(lo, hi)`): a
/// proven upper bound on the largest UCB in the box by branch and bound, refined until it is
/// within `tolerance` of the best UCB found or `max_boxes` sub-boxes (or `max_seconds`) are
/// spent; `first_order_only` skips the second-order sub-box bound. Raises
/// `UnsupportedError` for bounds or kernels the derivation does not cover (BKB, EK-UCB; sums,
/// products, slices, linear kernels), `MisspecifiedError` when the data refute the bound,
/// `InvalidParameterError` / `DimensionError` for bad input or a bound without observations.
#[pyfunction]
#[pyo3(signature = (bound, domain, tolerance = 0.05, max_boxes = 200_000, max_seconds = None, first_order_only = false, refinements = 8))]
#[allow(clippy::too_many_arguments)]
fn certify_box(
    py: Python<'_>,
    bound: PyRef<'_, PyBound>,
    domain: &Bound<'_, PyAny>,
    tolerance: f64,
    max_boxes: usize,
    max_seconds: Option<f64>,
    first_order_only: bool,
    refinements: usize,
) -> PyResult<BoxCertificate> {
    let domain = crate::continuous::domain(domain)?;
    let max_time = match max_seconds {
        None => None,
        Some(s) if s.is_finite() && s >= 0.0 => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(kernel_bandits::Error::InvalidParameter {
                name: "max_seconds",
                value: s,
                expected: "finite and at least 0",
            })
            .or_raise();
        }
    };
    let options = BoxCertifyOptions {
        tolerance,
        max_boxes,
        max_time,
        order: if first_order_only {
            BoxOrder::First
        } else {
            BoxOrder::Best
        },
        refinements,
    };
    let inner: &PyAnyBound = &bound.inner;
    py.detach(|| rs_certify_box(inner, &domain, &options))
        .map(BoxCertificate)
        .or_raise()
}

/// The certificate of a bound's values intersected over rounds, on a fixed set of arms:
/// `update(bound)` after each observation keeps, per arm, the largest lower bound so far and,
/// over the arms, the smallest largest upper bound so far, and returns the `RegretCertificate` of
/// those — never looser than `certify`, and valid on the same event, provided every call
/// passes the same bound, updated, with unchanged parameters. An update that the data refute
/// raises `MisspecifiedError` and changes nothing.
#[pyclass(module = "kernel_bandits")]
#[derive(Debug)]
pub struct Certifier(RsCertifier);

#[pymethods]
impl Certifier {
    #[new]
    fn new(arms: &Bound<'_, PyAny>) -> PyResult<Self> {
        let a = matrix(arms, "arms")?;
        let (data, dim) = rows(&a);
        Ok(Self(
            RsCertifier::new(&Points::from_row_major(data, dim).or_raise()?).or_raise()?,
        ))
    }
    /// Intersects with `bound`'s current values and returns the certificate.
    fn update(&mut self, py: Python<'_>, bound: PyRef<'_, PyBound>) -> PyResult<RegretCertificate> {
        let inner: &PyAnyBound = &bound.inner;
        let certifier = &mut self.0;
        py.detach(|| certifier.update(inner))
            .map(RegretCertificate)
            .or_raise()
    }
    /// The running lower bound of every arm (-inf before the first update).
    #[getter]
    fn lower<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.lower().to_vec())
    }
    fn __repr__(&self) -> String {
        format!("Certifier(arms={})", self.0.arms().len())
    }
}

/// What `UcbAgent.run_until` returns: `certificate` (the final `RegretCertificate`), `initial` (the
/// one before the first evaluation), `stopped_by` (`"gap"`, `"relative_gap"`, `"noise_level"`
/// or `"budget"`), and per evaluation, in order: `arms` (the indices played), `y` (the values),
/// `gaps`, `uppers` and `recommended` (the certificate after each evaluation).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct CertifiedRun(RsRun);

#[pymethods]
impl CertifiedRun {
    /// The final certificate.
    #[getter]
    fn certificate(&self) -> RegretCertificate {
        RegretCertificate(self.0.certificate.clone())
    }
    /// The certificate before the first evaluation.
    #[getter]
    fn initial(&self) -> RegretCertificate {
        RegretCertificate(self.0.initial.clone())
    }
    /// The condition that stopped the run.
    #[getter]
    fn stopped_by(&self) -> &'static str {
        match self.0.stopped_by {
            Stop::Gap => "gap",
            Stop::RelativeGap => "relative_gap",
            Stop::NoiseLevel => "noise_level",
            Stop::Budget => "budget",
            _ => "other",
        }
    }
    /// The arm played at each evaluation, (n,).
    #[getter]
    fn arms<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self.0.history.iter().map(|s| s.arm as i64).collect();
        PyArray1::from_vec(py, v)
    }
    /// The objective's values, (n,).
    #[getter]
    fn y<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.history.iter().map(|s| s.y).collect())
    }
    /// The certified gap after each evaluation, (n,).
    #[getter]
    fn gaps<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(
            py,
            self.0.history.iter().map(|s| s.certificate.gap).collect(),
        )
    }
    /// The upper bound on max f after each evaluation, (n,).
    #[getter]
    fn uppers<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(
            py,
            self.0.history.iter().map(|s| s.certificate.upper).collect(),
        )
    }
    /// The recommended arm after each evaluation, (n,).
    #[getter]
    fn recommended<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .0
            .history
            .iter()
            .map(|s| s.certificate.recommendation.index as i64)
            .collect();
        PyArray1::from_vec(py, v)
    }
    /// The recommended arm's coordinates after each evaluation, (n, d).
    #[getter]
    fn recommended_x<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let rows: Vec<Vec<f64>> = self
            .0
            .history
            .iter()
            .map(|s| s.certificate.recommendation.x.clone())
            .collect();
        if rows.is_empty() {
            let d = self.0.certificate.recommendation.x.len();
            return Ok(PyArray2::zeros(py, [0, d], false));
        }
        Ok(PyArray2::from_vec2(py, &rows)?)
    }
    fn __len__(&self) -> usize {
        self.0.history.len()
    }
    fn __repr__(&self) -> String {
        format!(
            "CertifiedRun(evaluations={}, stopped_by={:?}, gap={})",
            self.0.history.len(),
            self.stopped_by(),
            self.0.certificate.gap
        )
    }
}

/// The stopping rule of `UcbAgent.run_until`'s keyword arguments.
pub fn stopping_rule(
    budget: usize,
    gap: Option<f64>,
    relative_gap: Option<f64>,
    noise_level: Option<f64>,
) -> StoppingRule {
    let mut rule = StoppingRule::budget(budget);
    if let Some(e) = gap {
        rule = rule.gap(e);
    }
    if let Some(r) = relative_gap {
        rule = rule.relative_gap(r);
    }
    if let Some(s) = noise_level {
        rule = rule.noise_level(s);
    }
    rule
}

/// `UcbAgent.run_until`: the objective called with the GIL, its exception (if any) raised
/// instead of the loop's `NonFiniteError`.
pub fn run_until(
    py: Python<'_>,
    agent: &mut UcbAgent<PyAnyBound>,
    arms: &Bound<'_, PyAny>,
    objective: Py<PyAny>,
    rule: &StoppingRule,
) -> PyResult<CertifiedRun> {
    let a = matrix(arms, "arms")?;
    let (data, dim) = rows(&a);
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let result = py.detach(|| {
        let points = Points::from_row_major(data, dim)?;
        agent.run_until(
            &points,
            crate::optimise::python_objective(&objective, &raised),
            rule,
        )
    });
    if let Some(e) = raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(CertifiedRun(result.or_raise()?))
}

/// Adds `certify` and its classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RegretCertificate>()?;
    m.add_class::<Certifier>()?;
    m.add_class::<CertifiedRun>()?;
    m.add_function(wrap_pyfunction!(certify, m)?)?;
    m.add_class::<BoxCertificate>()?;
    m.add_function(wrap_pyfunction!(certify_box, m)?)?;
    Ok(())
}
