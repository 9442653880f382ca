//! Hyperparameters when σ and ℓ are unknown: fitting them by marginal likelihood
//! (`fit_hyperparameters`, `Fit`), the likelihood itself, and noise estimates to check a σ
//! (`estimate_noise`).

use kernel_bandits::bound::{BoundConfig, BoundKind};
use kernel_bandits::hyper::{
    Fit as RsFit, FitOptions, FittedKernel as RsFitted, HyperParameter, KernelFamily, LengthScales,
    Noise, NoiseEstimate as RsNoiseEstimate, NoiseVerdict, Objective, OutputVariance,
    ReplicateEstimate as RsReplicate, ResidualEstimate as RsResidual,
};
use kernel_bandits::points::Points;
use kernel_bandits::snapshot::Snapshot;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrays::{elements, matrix, rows, targets};
use crate::bounds::{PyAnyBound, PyBound, adaptive};
use crate::errors::{InvalidParameterError, OrRaise, UnsupportedError};
use crate::kernels::{AnyKernel, Kernel, family, fitted_repr};

/// The fitted kernel behind a Python kernel for the likelihood: a `FittedKernel`, or an `Rbf`
/// or `Matern` (as the shared-ℓ fitted kernel of variance 1, which it equals).
fn as_fitted(kernel: &Kernel) -> PyResult<RsFitted> {
    match &kernel.inner {
        AnyKernel::Fitted(k) => Ok(k.clone()),
        AnyKernel::Rbf(k) => RsFitted::shared(KernelFamily::Rbf, k.lengthscale(), 1.0).or_raise(),
        AnyKernel::Matern(k) => {
            RsFitted::shared(KernelFamily::Matern { nu: k.nu() }, k.lengthscale(), 1.0).or_raise()
        }
        _ => Err(UnsupportedError::new_err(format!(
            "the likelihood needs a FittedKernel, Rbf or Matern, not {} (an output scale: use \
             FittedKernel(..., variance=s2))",
            kernel.repr
        ))),
    }
}

/// (x, y) read as an (n, d) matrix and n targets, and `f` run on them with the GIL released.
fn with_data<T: Send>(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    f: impl FnOnce(&Points<'_>, &[f64]) -> kernel_bandits::Result<T> + Send,
) -> PyResult<T> {
    let xa = matrix(x, "x")?;
    let (data, dim) = rows(&xa);
    // Targets as the agents take them: a vector, or an (n, 1) column.
    let ya = targets(y, "y")?;
    let ys = elements(&ya);
    py.detach(|| f(&Points::from_row_major(data, dim)?, ys))
        .or_raise()
}

/// The log marginal likelihood ln p(y | X) of targets `y` at the rows of `x` under a zero-mean
/// GP with `kernel` and Gaussian noise of standard deviation `noise_sd` (Rasmussen & Williams
/// 2006 Eq. 2.30): −½ yᵀ(K + σ²I)⁻¹y − ½ ln det(K + σ²I) − (n/2) ln 2π. `kernel` is a
/// `FittedKernel`, `Rbf` or `Matern`. No jitter: σ² is the only regulariser, and a K + σ²I that
/// is not numerically positive definite raises `NumericalError`.
#[pyfunction]
pub fn log_marginal_likelihood(
    py: Python<'_>,
    kernel: PyRef<'_, Kernel>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    noise_sd: f64,
) -> PyResult<f64> {
    let k = as_fitted(&kernel)?;
    with_data(py, x, y, |points, ys| {
        kernel_bandits::hyper::log_marginal_likelihood(&k, noise_sd, points, ys)
    })
}

/// `log_marginal_likelihood` and its gradient in the log-parameters (Rasmussen & Williams 2006
/// Eq. 5.9): ∂/∂ ln ℓᵢ (one entry for a shared ℓ, one per coordinate otherwise), ∂/∂ ln s² and
/// ∂/∂ ln σ².
#[pyfunction]
pub fn log_marginal_likelihood_gradient(
    py: Python<'_>,
    kernel: PyRef<'_, Kernel>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    noise_sd: f64,
) -> PyResult<LikelihoodGradient> {
    let k = as_fitted(&kernel)?;
    let g = with_data(py, x, y, |points, ys| {
        kernel_bandits::hyper::log_marginal_likelihood_gradient(&k, noise_sd, points, ys)
    })?;
    Ok(LikelihoodGradient(g))
}

/// The log marginal likelihood and its gradient in the log-parameters, from
/// `log_marginal_likelihood_gradient`.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct LikelihoodGradient(kernel_bandits::hyper::LikelihoodGradient);

#[pymethods]
impl LikelihoodGradient {
    /// ln p(y | X).
    #[getter]
    fn value(&self) -> f64 {
        self.0.value
    }
    /// ∂ ln p/∂ ln ℓᵢ (a new array).
    #[getter]
    fn log_lengthscales<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.0.log_lengthscales)
    }
    /// ∂ ln p/∂ ln s².
    #[getter]
    fn log_variance(&self) -> f64 {
        self.0.log_variance
    }
    /// ∂ ln p/∂ ln σ².
    #[getter]
    fn log_noise_variance(&self) -> f64 {
        self.0.log_noise_variance
    }
    fn __repr__(&self) -> String {
        format!(
            "LikelihoodGradient(value={:?}, log_lengthscales={:?}, log_variance={:?}, \
             log_noise_variance={:?})",
            self.0.value, self.0.log_lengthscales, self.0.log_variance, self.0.log_noise_variance
        )
    }
}

/// Fits the length-scale(s) ℓ, the noise standard deviation σ and optionally the output
/// variance s² of an RBF or Matérn kernel to a warm-up set (the rows of `x`, targets `y`).
/// `objective="map"` (the default): the maximum a posteriori values on the standardised
/// targets (y − mean)/sd under BoTorch's priors (ℓ/D ~ LogNormal(√2 + ½ ln d, √3), Hvarfner et
/// al. 2024; the noise-to-signal ratio σ²/s² ~ LogNormal(−4, 1), on σ²/sd² when s² is fitted),
/// returned in the units of `y`; targets `y` a vector or an (n, 1) column; `objective="ml"`: the
/// maximum of the log marginal likelihood of `y` as given (zero mean, no prior). The search:
/// deterministic starts (the priors' modes, data-informed values, `previous`'s values), then
/// `starts` Sobol starts, the best `refinements` refined by quasi-Newton; above `screen_size`
/// rows a spread subsample is searched first (deterministic for a `seed`). Returns a `Fit`.
/// `previous`: a `Fit` whose values start the search (a refit during a run).
///
/// `family` "matern" (with `nu`) or "rbf"; `per_dimension` one ℓ per coordinate; `noise` `None`
/// fits σ, a number holds it fixed; `fit_variance` fits s² (otherwise s² = `variance`, 1 by
/// default, which the bounds assume); `*_bounds` are (lo, hi) boxes (defaults from the data's
/// ranges and scale). Needs at least 2 observations.
///
/// Use the fit only for observations *after* the warm-up: `Fit.bound` starts empty. The fitted
/// σ is an estimate and may fall below the truth; B is not fitted (see `AdaptiveNorm`).
#[pyfunction]
#[pyo3(signature = (x, y, *, family = "matern", nu = 2.5, per_dimension = false, fit_variance = false, variance = 1.0, noise = None, lengthscale_bounds = None, noise_bounds = None, variance_bounds = None, starts = 12, refinements = 2, seed = 0, objective = "map", screen_size = 150, previous = None))]
#[allow(clippy::too_many_arguments)]
pub fn fit_hyperparameters(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    family: &str,
    nu: f64,
    per_dimension: bool,
    fit_variance: bool,
    variance: f64,
    noise: Option<f64>,
    lengthscale_bounds: Option<(f64, f64)>,
    noise_bounds: Option<(f64, f64)>,
    variance_bounds: Option<(f64, f64)>,
    starts: usize,
    refinements: usize,
    seed: u64,
    objective: &str,
    screen_size: usize,
    previous: Option<Fit>,
) -> PyResult<Fit> {
    let objective = match objective {
        "map" => Objective::Map,
        "ml" => Objective::MaximumLikelihood,
        other => {
            return Err(InvalidParameterError::new_err(format!(
                "objective: expected \"map\" or \"ml\", got {other:?}"
            )));
        }
    };
    let mut options = FitOptions::new()
        .family(self::family(family, nu)?)
        .lengthscales(if per_dimension {
            LengthScales::PerDimension
        } else {
            LengthScales::Shared
        })
        .variance(if fit_variance {
            OutputVariance::Fitted
        } else {
            OutputVariance::Fixed(variance)
        })
        .noise(noise.map_or(Noise::Fitted, Noise::Fixed))
        .starts(starts)
        .refinements(refinements)
        .seed(seed)
        .objective(objective)
        .screen_size(screen_size);
    if let Some((lo, hi)) = lengthscale_bounds {
        options = options.lengthscale_bounds(lo, hi);
    }
    if let Some((lo, hi)) = noise_bounds {
        options = options.noise_bounds(lo, hi);
    }
    if let Some((lo, hi)) = variance_bounds {
        options = options.variance_bounds(lo, hi);
    }
    options.check().or_raise()?;
    let fit = with_data(py, x, y, |points, ys| match &previous {
        Some(previous) => previous.0.refit(&options, points, ys),
        None => kernel_bandits::hyper::fit_hyperparameters(&options, points, ys),
    })?;
    Ok(Fit(fit))
}

/// The name of a hyperparameter on an edge of its box.
fn parameter_name(p: HyperParameter, per_dimension: bool) -> String {
    match p {
        HyperParameter::Lengthscale(i) if per_dimension => format!("lengthscale[{i}]"),
        HyperParameter::Lengthscale(_) => "lengthscale".into(),
        HyperParameter::OutputVariance => "variance".into(),
        HyperParameter::NoiseSd => "noise_sd".into(),
    }
}

/// Hyperparameters fitted by `fit_hyperparameters` on a warm-up set D₀.
///
/// **Use them only for observations after D₀**: given D₀ the fitted values are fixed, which is
/// all the bounds' theorems ask of their kernel and σ; feeding D₀ to the bound as well breaks
/// that. `bound(...)` therefore returns an *empty* bound with the fitted kernel and σ. The
/// fitted σ is an estimate (inflate it for a margin: `fit.bound("dmm", sigma=1.5 * fit.noise_sd)`),
/// and B is not fitted (`adaptive=True` doubles it when the data refute it).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct Fit(RsFit);

#[pymethods]
impl Fit {
    /// The fitted kernel, a `FittedKernel`.
    #[getter]
    fn kernel(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let k = self.0.kernel().clone();
        let repr = fitted_repr(&k);
        Kernel::new(AnyKernel::Fitted(k), repr).into_py_object(py)
    }
    /// The fitted (or fixed) noise standard deviation σ.
    #[getter]
    fn noise_sd(&self) -> f64 {
        self.0.noise_sd()
    }
    /// The length-scales (a new array): one if shared, one per coordinate otherwise.
    #[getter]
    fn lengthscales<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.0.lengthscales())
    }
    /// The output variance s².
    #[getter]
    fn variance(&self) -> f64 {
        self.0.variance()
    }
    /// The log marginal likelihood at the fitted values, of the targets less `mean`.
    #[getter]
    fn log_likelihood(&self) -> f64 {
        self.0.log_likelihood()
    }
    /// The mean subtracted from the targets (MAP; 0.0 for `objective="ml"`).
    #[getter]
    fn mean(&self) -> f64 {
        self.0.mean()
    }
    /// The log posterior in the standardised units of the search (MAP; `None` for
    /// `objective="ml"`): comparable with BoTorch's `ExactMarginalLogLikelihood` × n.
    #[getter]
    fn log_posterior(&self) -> Option<f64> {
        self.0.log_posterior()
    }
    /// A sentence naming each parameter on an edge of its search box, the edge and the value,
    /// or `None`.
    #[getter]
    fn edge_report(&self) -> Option<String> {
        self.0.edge_report()
    }
    /// Likelihood evaluations spent.
    #[getter]
    fn evaluations(&self) -> usize {
        self.0.evaluations()
    }
    /// Whether the refinement that gave the result converged.
    #[getter]
    fn converged(&self) -> bool {
        self.0.converged()
    }
    /// The number of warm-up observations the fit used (the bound must not see them).
    #[getter]
    fn observations(&self) -> usize {
        self.0.observations()
    }
    /// Whether any fitted parameter ended on an edge of its box (then widen the box or
    /// distrust the value).
    #[getter]
    fn on_box_edge(&self) -> bool {
        self.0.on_box_edge()
    }
    /// The parameters at the lower edge of their box: "lengthscale" (or "lengthscale[i]"),
    /// "variance", "noise_sd".
    #[getter]
    fn at_lower(&self) -> Vec<String> {
        let per = self.0.kernel().is_per_dimension();
        self.0
            .at_lower()
            .iter()
            .map(|&p| parameter_name(p, per))
            .collect()
    }
    /// The parameters at the upper edge of their box.
    #[getter]
    fn at_upper(&self) -> Vec<String> {
        let per = self.0.kernel().is_per_dimension();
        self.0
            .at_upper()
            .iter()
            .map(|&p| parameter_name(p, per))
            .collect()
    }

    /// An **empty** bound of kind `name` (as `make_bound` accepts it) on the fitted kernel with
    /// the fitted σ, and B = `norm_bound`, δ = `delta`, c = `scale` (the crate's defaults when
    /// `None`; with `dims` and `horizon`, Flynn & Reeb 2024 §7's choices as in `make_bound`).
    /// With `adaptive=True` (DMM or CMM only) it is an `AdaptiveNorm` bound whose first guess is
    /// `norm_bound`. Observe only data gathered after the warm-up. `sigma` replaces the fitted
    /// σ (e.g. `sigma=1.5 * fit.noise_sd` for a margin over the estimate, which may fall below
    /// the true noise scale).
    #[pyo3(signature = (name, *, norm_bound = None, delta = None, scale = None, dims = None, horizon = None, seed = 0, adaptive = false, max_level = 40, sigma = None))]
    #[allow(clippy::too_many_arguments)]
    fn bound(
        &self,
        py: Python<'_>,
        name: &str,
        norm_bound: Option<f64>,
        delta: Option<f64>,
        scale: Option<f64>,
        dims: Option<usize>,
        horizon: Option<usize>,
        seed: u64,
        adaptive: bool,
        max_level: u32,
        sigma: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let sigma = match sigma {
            Some(s) if !(s.is_finite() && s > 0.0) => {
                return Err(InvalidParameterError::new_err(format!(
                    "Fit.bound: sigma = {s} is not a finite number > 0"
                )));
            }
            Some(s) => s,
            None => self.0.noise_sd(),
        };
        let kind: BoundKind = name
            .parse()
            .map_err(kernel_bandits::Error::from)
            .or_raise()?;
        let kernel = AnyKernel::Fitted(self.0.kernel().clone());
        let mut config = match (dims, horizon) {
            (Some(d), Some(t)) => BoundConfig::paper_defaults(&kernel, d, t),
            (None, None) => BoundConfig::new(),
            _ => {
                return Err(InvalidParameterError::new_err(
                    "Fit.bound: give both dims and horizon (for the paper's defaults) or neither",
                ));
            }
        };
        let mut params = config.params.sigma(sigma);
        if let Some(b) = norm_bound {
            params = params.norm_bound(b);
        }
        if let Some(d) = delta {
            params = params.delta(d);
        }
        if let Some(c) = scale {
            params = params.scale(c);
        }
        config = config.params(params).seed(seed);
        config.sketch = config.sketch.sigma(sigma);
        let plain = kind.build(kernel, &config).or_raise()?;
        let mut spec = format!("Fit.bound({:?}", kind.name());
        for (key, value) in [
            ("sigma", (sigma != self.0.noise_sd()).then_some(sigma)),
            ("norm_bound", norm_bound),
            ("delta", delta),
            ("scale", scale),
        ] {
            if let Some(v) = value {
                spec.push_str(&format!(", {key}={v:?}"));
            }
        }
        spec.push(')');
        let inner = if adaptive {
            spec = format!("AdaptiveNorm({spec}, max_level={max_level})");
            self::adaptive(plain, max_level).or_raise()?
        } else {
            PyAnyBound::Plain(plain)
        };
        PyBound { inner, spec }.into_py_object(py)
    }

    /// The fit as bytes (the crate's binary snapshot), for `Fit.from_bytes`; fits also pickle
    /// and copy, so that a fit made once can be stored or sent to other processes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.0.to_bytes().or_raise()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A fit from `to_bytes`, exactly as it was saved (`SnapshotError` for bytes that are not
    /// a fit's snapshot of this version, or a state no fit could have).
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(Self(RsFit::from_bytes(data).or_raise()?))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let restore = py.get_type::<Fit>().getattr("from_bytes")?;
        Ok((restore, (slf.get().to_bytes(py)?,)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Fit(kernel={}, noise_sd={:?}, log_likelihood={:?}, observations={}, on_box_edge={})",
            fitted_repr(self.0.kernel()),
            self.0.noise_sd(),
            self.0.log_likelihood(),
            self.0.observations(),
            if self.0.on_box_edge() {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// The noise standard deviation estimated from replicated inputs: the pooled within-group
/// standard deviation `sigma` with `degrees_of_freedom` n − G (n observations in the `groups`
/// G inputs seen more than once), and a `confidence` interval for it from the χ² distribution
/// (exact under Gaussian noise).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone, Copy)]
pub struct ReplicateEstimate(RsReplicate);

#[pymethods]
impl ReplicateEstimate {
    /// The pooled within-group standard deviation s.
    #[getter]
    fn sigma(&self) -> f64 {
        self.0.sigma
    }
    /// n − G.
    #[getter]
    fn degrees_of_freedom(&self) -> usize {
        self.0.degrees_of_freedom
    }
    /// The number of distinct inputs observed more than once.
    #[getter]
    fn groups(&self) -> usize {
        self.0.groups
    }
    /// The confidence level of `interval`.
    #[getter]
    fn confidence(&self) -> f64 {
        self.0.confidence
    }
    /// (√((n−G)s²/χ²_{1−α/2}), √((n−G)s²/χ²_{α/2})), α = 1 − confidence.
    #[getter]
    fn interval(&self) -> (f64, f64) {
        self.0.interval
    }
    /// How a sub-Gaussian scale σ compares with the interval: "too_small" (below it: refuted at
    /// that confidence, for Gaussian noise), "plausible" (within) or "loose" (above).
    fn assess(&self, sigma: f64) -> PyResult<&'static str> {
        Ok(match self.0.assess(sigma).or_raise()? {
            NoiseVerdict::TooSmall => "too_small",
            NoiseVerdict::Plausible => "plausible",
            NoiseVerdict::Loose => "loose",
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "ReplicateEstimate(sigma={:?}, degrees_of_freedom={}, groups={}, confidence={:?}, \
             interval={:?})",
            self.0.sigma,
            self.0.degrees_of_freedom,
            self.0.groups,
            self.0.confidence,
            self.0.interval
        )
    }
}

/// The noise standard deviation estimated from the residuals of a kernel ridge smoother whose
/// regulariser a is chosen by leave-one-out cross-validation: σ̂² = ‖(I − H)y‖²/tr(I − H).
/// Where f is rougher than the kernel can fit, its misfit counts as noise (σ̂ too large); at
/// `at_search_edge` the estimate means little.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone, Copy)]
pub struct ResidualEstimate(RsResidual);

#[pymethods]
impl ResidualEstimate {
    /// σ̂.
    #[getter]
    fn sigma(&self) -> f64 {
        self.0.sigma
    }
    /// The regulariser a chosen by leave-one-out cross-validation.
    #[getter]
    fn regulariser(&self) -> f64 {
        self.0.regulariser
    }
    /// tr(H), the smoother's effective number of parameters.
    #[getter]
    fn effective_parameters(&self) -> f64 {
        self.0.effective_parameters
    }
    /// Whether a is at an end of the range searched.
    #[getter]
    fn at_search_edge(&self) -> bool {
        self.0.at_search_edge
    }
    fn __repr__(&self) -> String {
        format!(
            "ResidualEstimate(sigma={:?}, regulariser={:?}, effective_parameters={:?}, \
             at_search_edge={})",
            self.0.sigma,
            self.0.regulariser,
            self.0.effective_parameters,
            if self.0.at_search_edge {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// Both noise estimates of `estimate_noise`: `replicates` (`None` without a repeated input) and
/// `residual` (`None` with fewer than 2 observations).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone, Copy)]
pub struct NoiseEstimate(RsNoiseEstimate);

#[pymethods]
impl NoiseEstimate {
    /// Observations used.
    #[getter]
    fn observations(&self) -> usize {
        self.0.observations
    }
    /// The estimate from replicated inputs, or `None`.
    #[getter]
    fn replicates(&self) -> Option<ReplicateEstimate> {
        self.0.replicates.map(ReplicateEstimate)
    }
    /// The estimate from a kernel smoother's residuals, or `None`.
    #[getter]
    fn residual(&self) -> Option<ResidualEstimate> {
        self.0.residual.map(ResidualEstimate)
    }
    fn __repr__(&self) -> String {
        format!(
            "NoiseEstimate(observations={}, replicates={}, residual={})",
            self.0.observations,
            self.0
                .replicates
                .map_or_else(|| "None".into(), |r| ReplicateEstimate(r).__repr__()),
            self.0
                .residual
                .map_or_else(|| "None".into(), |r| ResidualEstimate(r).__repr__()),
        )
    }
}

/// Estimates of the noise standard deviation of observations `y` at the rows of `x`, to check
/// the σ given to a bound: from replicated inputs (no assumption on f; a χ² interval at
/// `confidence`) and from the residuals of a kernel smoother with `kernel`. Diagnostics, not
/// bound inputs: an estimate is not a sub-Gaussian scale that holds with certainty.
#[pyfunction]
#[pyo3(signature = (kernel, x, y, confidence = 0.95))]
pub fn estimate_noise(
    py: Python<'_>,
    kernel: PyRef<'_, Kernel>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    confidence: f64,
) -> PyResult<NoiseEstimate> {
    let k = &kernel.inner;
    let estimate = with_data(py, x, y, |points, ys| {
        kernel_bandits::hyper::estimate_noise(k, points, ys, confidence)
    })?;
    Ok(NoiseEstimate(estimate))
}

/// Adds the classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Fit>()?;
    m.add_class::<LikelihoodGradient>()?;
    m.add_class::<NoiseEstimate>()?;
    m.add_class::<ReplicateEstimate>()?;
    m.add_class::<ResidualEstimate>()?;
    m.add_function(wrap_pyfunction!(fit_hyperparameters, m)?)?;
    m.add_function(wrap_pyfunction!(log_marginal_likelihood, m)?)?;
    m.add_function(wrap_pyfunction!(log_marginal_likelihood_gradient, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_noise, m)?)?;
    Ok(())
}

impl Fit {
    /// The Python `Fit` of a crate fit (for `UcbAgent.refit`).
    pub(crate) fn from_rust(fit: RsFit) -> Self {
        Self(fit)
    }
}
