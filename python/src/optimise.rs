//! Bayesian optimisation (`maximise`, backed by the crate's `kernel_bandits::optimise`), and
//! the agents' `refit` and `recommend`.

use std::sync::Mutex;

use kernel_bandits::agent::{
    Recommendation as RsRecommendation, Refit, RefitMode, RefitOptions, UcbAgent,
};
use kernel_bandits::bound::BoundKind;
use kernel_bandits::hyper::{Fit as RsFit, FitOptions, FittedKernel, KernelFamily, LengthScales};
use kernel_bandits::optimise::{Initial, Optimisation, OptimiseOptions, Refits};
use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{matrix, rows, to_numpy};
use crate::bounds::PyAnyBound;
use crate::errors::{InvalidParameterError, OrRaise};
use crate::kernels::AnyKernel;

impl From<FittedKernel> for AnyKernel {
    fn from(kernel: FittedKernel) -> Self {
        AnyKernel::Fitted(kernel)
    }
}

impl Refit for PyAnyBound {
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> kernel_bandits::Result<Self> {
        match self {
            PyAnyBound::Plain(b) => b.refitted(kernel, sigma).map(PyAnyBound::Plain),
            PyAnyBound::Adaptive(a) => a.refitted(kernel, sigma).map(PyAnyBound::Adaptive),
        }
    }
}

/// The fit options the Python calls accept.
fn fit_options(
    family: &str,
    nu: f64,
    per_dimension: bool,
    starts: usize,
    seed: u64,
) -> PyResult<FitOptions> {
    let family = match family {
        "matern" => KernelFamily::Matern { nu },
        "rbf" => KernelFamily::Rbf,
        other => {
            return Err(InvalidParameterError::new_err(format!(
                "family = {other:?}: expected \"matern\" or \"rbf\""
            )));
        }
    };
    let options = FitOptions::new()
        .family(family)
        .lengthscales(if per_dimension {
            LengthScales::PerDimension
        } else {
            LengthScales::Shared
        })
        .starts(starts)
        .seed(seed);
    options.check().or_raise()?;
    Ok(options)
}

fn refit_mode(mode: &str) -> PyResult<RefitMode> {
    match mode {
        "all" => Ok(RefitMode::AllData),
        "strict" => Ok(RefitMode::Strict),
        other => Err(InvalidParameterError::new_err(format!(
            "refit mode {other:?}: expected \"all\" (the bound uses every observation; no \
             guarantee) or \"strict\" (only later observations; guaranteed)"
        ))),
    }
}

/// `agent.refit(...)`: see the method's docstring in agents.rs.
#[allow(clippy::too_many_arguments)]
pub fn refit_agent(
    py: Python<'_>,
    agent: &mut UcbAgent<PyAnyBound>,
    mode: &str,
    family: &str,
    nu: f64,
    per_dimension: bool,
    starts: usize,
    seed: u64,
) -> PyResult<RsFit> {
    let options = RefitOptions::new(refit_mode(mode)?).fit(fit_options(
        family,
        nu,
        per_dimension,
        starts,
        seed,
    )?);
    py.detach(|| agent.refit(&options)).or_raise()
}

/// `agent.recommend()`.
pub fn recommend_agent(py: Python<'_>, agent: &UcbAgent<PyAnyBound>) -> PyResult<Recommendation> {
    Ok(Recommendation(py.detach(|| agent.recommend()).or_raise()?))
}

/// The point recommended as the maximiser: the observed point `x` (a 1-D array) with the
/// largest lower confidence bound, its `index` among the observations (in the order observed),
/// and its `lcb`, `mean` and `ucb`. Where the bound is valid, f(x) ≥ `lcb`.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct Recommendation(pub(crate) RsRecommendation);

#[pymethods]
impl Recommendation {
    /// The point (a new 1-D float64 array).
    #[getter]
    fn x<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.0.x)
    }
    /// Its index among the observations.
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }
    /// Its lower confidence bound.
    #[getter]
    fn lcb(&self) -> f64 {
        self.0.lcb
    }
    /// Its posterior mean.
    #[getter]
    fn mean(&self) -> f64 {
        self.0.mean
    }
    /// Its upper confidence bound.
    #[getter]
    fn ucb(&self) -> f64 {
        self.0.ucb
    }
    fn __repr__(&self) -> String {
        format!(
            "Recommendation(x={:?}, index={}, lcb={}, mean={}, ucb={})",
            self.0.x, self.0.index, self.0.lcb, self.0.mean, self.0.ucb
        )
    }
}

/// What `maximise` returns: the history of the run as numpy arrays, one row per evaluation.
///
/// - `x` (n × d), `y` (n): the points evaluated, in order, and the objective's values;
/// - `seconds` (n): the time the loop spent on each evaluation (refit and acquisition, then
///   absorbing and recommending; 0 for the initial design, the objective excluded);
/// - `recommended_index`, `recommended_lcb`, `recommended_mean`, `recommended_ucb` (n): after
///   each evaluation from the end of the initial design on, the recommendation (-1 / NaN before);
/// - `best_so_far` (n): the largest value observed so far (noisy values);
/// - `recommendation`: the final `Recommendation`; `fits`: one dict per fit (`evaluations`,
///   `lengthscales`, `noise_sd`, `log_likelihood`, `on_box_edge`), on the unit cube and the
///   standardised values; `norm_bound`: B at the end (standardised values);
///   `standardisation`: (mean, sd) of the initial values.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct OptimiseResult(Optimisation);

#[pymethods]
impl OptimiseResult {
    /// The evaluated points, (n, d).
    #[getter]
    fn x<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let h = &self.0.history;
        let rows: Vec<Vec<f64>> = (0..h.len()).map(|i| h.point(i).to_vec()).collect();
        Ok(PyArray2::from_vec2(py, &rows)?)
    }
    /// The objective's values, (n,).
    #[getter]
    fn y<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.history.y.clone())
    }
    /// Seconds per evaluation, (n,).
    #[getter]
    fn seconds<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.history.seconds.clone())
    }
    /// Seconds of the fit on the initial design.
    #[getter]
    fn initial_fit_seconds(&self) -> f64 {
        self.0.history.initial_fit_seconds
    }
    /// The largest value observed so far, (n,).
    #[getter]
    fn best_so_far<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.history.best_so_far())
    }
    /// The recommended observation's index after each evaluation (-1 before the end of the
    /// initial design), (n,).
    #[getter]
    fn recommended_index<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .0
            .history
            .recommendations
            .iter()
            .map(|r| r.as_ref().map_or(-1, |r| r.index as i64))
            .collect();
        PyArray1::from_vec(py, v)
    }
    /// The recommendation's LCB after each evaluation (NaN before), (n,).
    #[getter]
    fn recommended_lcb<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.per_evaluation(py, |r| r.lcb)
    }
    /// The recommendation's mean after each evaluation (NaN before), (n,).
    #[getter]
    fn recommended_mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.per_evaluation(py, |r| r.mean)
    }
    /// The recommendation's UCB after each evaluation (NaN before), (n,).
    #[getter]
    fn recommended_ucb<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.per_evaluation(py, |r| r.ucb)
    }
    /// The final recommendation.
    #[getter]
    fn recommendation(&self) -> Recommendation {
        Recommendation(self.0.recommendation.clone())
    }
    /// One dict per fit.
    #[getter]
    fn fits<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.0
            .fits
            .iter()
            .map(|f| {
                let d = PyDict::new(py);
                d.set_item("evaluations", f.evaluations)?;
                d.set_item("lengthscales", f.fit.lengthscales().to_vec())?;
                d.set_item("noise_sd", f.fit.noise_sd())?;
                d.set_item("log_likelihood", f.fit.log_likelihood())?;
                d.set_item("on_box_edge", f.fit.on_box_edge())?;
                Ok(d)
            })
            .collect()
    }
    /// B at the end (for the standardised values).
    #[getter]
    fn norm_bound(&self) -> f64 {
        self.0.norm_bound
    }
    /// (mean, sd) of the initial values.
    #[getter]
    fn standardisation(&self) -> (f64, f64) {
        self.0.standardisation
    }
    fn __len__(&self) -> usize {
        self.0.history.len()
    }
    fn __repr__(&self) -> String {
        let r = &self.0.recommendation;
        format!(
            "OptimiseResult(evaluations={}, best_y={}, recommendation=Recommendation(x={:?}, lcb={}, ucb={}))",
            self.0.history.len(),
            self.0
                .history
                .best_so_far()
                .last()
                .copied()
                .unwrap_or(f64::NAN),
            r.x,
            r.lcb,
            r.ucb
        )
    }
}

impl OptimiseResult {
    fn per_evaluation<'py>(
        &self,
        py: Python<'py>,
        f: impl Fn(&RsRecommendation) -> f64,
    ) -> Bound<'py, PyArray1<f64>> {
        let v = self
            .0
            .history
            .recommendations
            .iter()
            .map(|r| r.as_ref().map_or(f64::NAN, &f))
            .collect();
        to_numpy(py, v)
    }
}

/// Maximises `objective` (a callable taking a 1-D float64 array of d coordinates and returning
/// a number) over the box `bounds` (a `BoxDomain` or a pair `(lo, hi)`) with `budget`
/// evaluations, the initial design included. To minimise g, maximise `lambda x: -g(x)`.
///
/// The loop (the crate's `kernel_bandits::optimise`): the box is mapped to the unit cube; the
/// initial design (`initial`, an (n, d) array in the box, or `n_initial` scrambled Sobol points,
/// 2d + 2 by default) is evaluated; the values are standardised with the initial design's mean
/// and sd; a Matérn-`nu` kernel (one length-scale, or one per coordinate with
/// `per_dimension=True`) and σ are fitted by maximum likelihood; then every iteration refits
/// (every `refit_every` iterations; 0: never), maximises the UCB of the `bound` (default
/// `"dmm"`) over the box (`batch` > 1: GP-BUCB batches, or GP-UCB-PE with
/// `batch_rule="exploration"`), evaluates, and recommends the observed point of largest LCB. Without `norm_bound`, B (of the standardised f) starts at 1
/// and doubles when the data refute it (`AdaptiveNorm`; DMM and CMM only).
///
/// Guarantee: with `refit="strict"` and `refit_every=0` (fit once on the initial design; the
/// bound uses only later observations) the bounds on the later data hold at every round at once
/// with probability ≥ 1 − `delta`, if f (standardised) is in the fitted kernel's RKHS with norm
/// ≤ the B in force and the noise is σ-sub-Gaussian (Flynn & Reeb 2024). With the default
/// `refit="all"` no guarantee is claimed (the kernel was chosen from the data the bound uses),
/// as for a GP with refitted hyperparameters.
///
/// Errors: a budget smaller than the initial design, an initial design outside the box or of
/// fewer than 2 points (`InvalidParameterError`); a NaN or infinite objective value
/// (`NonFiniteError`, naming the evaluation); an exception raised by `objective` propagates.
///
/// >>> import numpy as np
/// >>> import kernel_bandits as kb
/// >>> f = lambda x: -float(np.sum((x - 0.3) ** 2))
/// >>> result = kb.maximise(f, ([0.0, 0.0], [1.0, 1.0]), 20, seed=1)
/// >>> result.x.shape, result.y.shape
/// ((20, 2), (20,))
/// >>> bool(f(result.recommendation.x) > -0.05)
/// True
#[pyfunction]
#[pyo3(signature = (objective, bounds, budget, *, initial = None, n_initial = None, bound = "dmm", norm_bound = None, delta = 0.01, scale = None, refit = "all", refit_every = 1, batch = 1, seed = 0, family = "matern", nu = 2.5, per_dimension = false, fit_starts = 32, starts = None, batch_rule = "pending-ucb"))]
#[allow(clippy::too_many_arguments)]
pub fn maximise(
    py: Python<'_>,
    objective: Py<PyAny>,
    bounds: &Bound<'_, PyAny>,
    budget: usize,
    initial: Option<&Bound<'_, PyAny>>,
    n_initial: Option<usize>,
    bound: &str,
    norm_bound: Option<f64>,
    delta: f64,
    scale: Option<f64>,
    refit: &str,
    refit_every: usize,
    batch: usize,
    seed: u64,
    family: &str,
    nu: f64,
    per_dimension: bool,
    fit_starts: usize,
    starts: Option<usize>,
    batch_rule: &str,
) -> PyResult<OptimiseResult> {
    let domain = crate::continuous::domain(bounds)?;
    let mut options = OptimiseOptions::default();
    options.initial = match (initial, n_initial) {
        (Some(_), Some(_)) => {
            return Err(InvalidParameterError::new_err(
                "give initial (the points) or n_initial (how many Sobol points), not both",
            ));
        }
        (Some(points), None) => {
            let a = matrix(points, "initial")?;
            let (data, dim) = rows(&a);
            if dim != domain.dim() {
                return Err(crate::errors::bad_shape(format!(
                    "initial: points of {dim} coordinates in a box of {}",
                    domain.dim()
                )));
            }
            Initial::Points(data.to_vec())
        }
        (None, n) => Initial::Sobol(n),
    };
    options.bound = bound
        .parse::<BoundKind>()
        .map_err(kernel_bandits::Error::from)
        .or_raise()?;
    options.norm_bound = norm_bound;
    options.delta = delta;
    options.scale = scale;
    options.refits = Refits {
        every: refit_every,
        mode: refit_mode(refit)?,
    };
    options.batch = batch;
    options.seed = seed;
    options.fit = fit_options(family, nu, per_dimension, fit_starts, seed)?;
    if let Some(s) = starts {
        options.continuous.starts = s;
    }
    options.continuous.batch_rule = crate::agents::parse_batch_rule(batch_rule)?;
    // The objective's exception, if any: the loop sees NaN and stops; it is raised instead of
    // the NonFinite error.
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let result = py.detach(|| {
        kernel_bandits::optimise::maximise(
            python_objective(&objective, &raised),
            &domain,
            budget,
            &options,
        )
    });
    if let Some(e) = raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(OptimiseResult(result.or_raise()?))
}

/// `objective` (a Python callable taking a 1-D float64 array) as the Rust loops' objective,
/// called with the GIL. Its exception, if any, is kept in `raised` and the loop sees NaN, so
/// that it stops; the caller raises the exception instead of the loop's `NonFiniteError`.
pub fn python_objective<'a>(
    objective: &'a Py<PyAny>,
    raised: &'a Mutex<Option<PyErr>>,
) -> impl FnMut(&[f64]) -> f64 + 'a {
    move |x: &[f64]| {
        Python::attach(|py| {
            let call = || -> PyResult<f64> {
                let arg = PyArray1::from_slice(py, x);
                objective.bind(py).call1((arg,))?.extract::<f64>()
            };
            call().unwrap_or_else(|e| {
                *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                f64::NAN
            })
        })
    }
}

/// Adds `maximise` and its classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Recommendation>()?;
    m.add_class::<OptimiseResult>()?;
    m.add_function(wrap_pyfunction!(maximise, m)?)?;
    Ok(())
}
