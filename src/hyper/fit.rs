//! Fitting ℓ, σ and (optionally) s² by maximising the log marginal likelihood.

use crate::bound::{AnyBound, BoundConfig, BoundKind, BoundParams};
use crate::continuous::{BoxDomain, RefineOptions, maximise};
use crate::error::{Error, Result, positive};
use crate::points::AsPoints;

use super::likelihood::{Data, check_noise_sd};
use super::{FittedKernel, KernelFamily};

/// Whether the length-scale is shared by every coordinate or fitted per coordinate.
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FitOptions, LengthScales, fit_hyperparameters};
/// let xs = [[0.0, 0.0], [0.5, 0.1], [0.2, 0.9], [0.9, 0.6], [0.4, 0.4]];
/// let ys = [0.1, 0.5, -0.2, 0.3, 0.2];
/// let options = FitOptions::new().lengthscales(LengthScales::PerDimension);
/// assert_eq!(fit_hyperparameters(&options, &xs, &ys)?.lengthscales().len(), 2);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LengthScales {
    /// One ℓ for every coordinate (isotropic).
    #[default]
    Shared,
    /// One ℓᵢ per coordinate (automatic relevance determination, Rasmussen & Williams 2006
    /// §5.1).
    PerDimension,
}

/// The output variance s² = k(x, x): held fixed or fitted.
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FitOptions, Noise, OutputVariance, fit_hyperparameters};
/// let xs = [[0.0], [0.25], [0.5], [0.75], [1.0]];
/// let ys = [0.0, 2.0, 0.1, -1.9, 0.0];
/// let fixed = fit_hyperparameters(&FitOptions::new(), &xs, &ys)?;
/// assert_eq!(fixed.variance(), 1.0); // the default
/// let options = FitOptions::new().variance(OutputVariance::Fitted).noise(Noise::Fixed(0.1));
/// let fitted = fit_hyperparameters(&options, &xs, &ys)?;
/// assert!(fitted.variance() > 1.0 && fitted.noise_sd() == 0.1);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OutputVariance {
    /// Held at this value (default 1, which the confidence bounds assume).
    Fixed(f64),
    /// Fitted within [`FitOptions::variance_bounds`].
    Fitted,
}

impl Default for OutputVariance {
    fn default() -> Self {
        Self::Fixed(1.0)
    }
}

/// The noise standard deviation σ: held fixed or fitted (see [`OutputVariance`] for an
/// example).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Noise {
    /// Held at this value.
    Fixed(f64),
    /// Fitted within [`FitOptions::noise_bounds`] (the default).
    #[default]
    Fitted,
}

/// One hyperparameter, to name those that ended on an edge of their box ([`Fit::at_lower`],
/// [`Fit::at_upper`]).
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FitOptions, HyperParameter, Noise, fit_hyperparameters};
/// let xs = [[0.0], [0.25], [0.5], [0.75], [1.0]];
/// let ys = [0.0, 2.0, 0.1, -1.9, 0.0];
/// // ℓ held at 1 (lo = hi: fixed, never reported) cannot follow the oscillation, so the data
/// // need much more noise than the box allows: σ ends on its upper edge.
/// let options = FitOptions::new()
///     .lengthscale_bounds(1.0, 1.0)
///     .noise(Noise::Fitted)
///     .noise_bounds(1e-3, 2e-3);
/// let fit = fit_hyperparameters(&options, &xs, &ys)?;
/// assert_eq!(fit.at_upper(), [HyperParameter::NoiseSd]);
/// assert_eq!(fit.noise_sd(), 2e-3);
/// assert!(fit.at_lower().is_empty());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum HyperParameter {
    /// The length-scale of this coordinate (0 for a shared length-scale).
    Lengthscale(usize),
    /// The output variance s².
    OutputVariance,
    /// The noise standard deviation σ.
    NoiseSd,
}

/// Settings of [`fit_hyperparameters`], with infallible chained setters and one
/// [`FitOptions::check`].
///
/// With D the largest coordinate range of the inputs (Dᵢ the range of coordinate i) and
/// s_y = (Σ yᵢ²/t)^{1/2} the root mean square of the targets (their scale under the model's
/// zero mean):
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `family` | Matérn ν = 5/2 | [`KernelFamily`] | the kernel family |
/// | `lengthscales` | [`LengthScales::Shared`] | shared / per dimension | one ℓ or one per coordinate |
/// | `variance` | [`OutputVariance::Fixed`]`(1)` | fixed s² > 0, or fitted | the output variance s² (see below) |
/// | `noise` | [`Noise::Fitted`] | fixed σ > 0, or fitted | the noise standard deviation σ |
/// | `lengthscale_bounds` | [10⁻²·D, 10·D] (per dimension [10⁻²·Dᵢ, 10·Dᵢ], D where Dᵢ = 0) | 0 < lo ≤ hi < ∞ | box for each ℓ |
/// | `noise_bounds` | [max(10⁻⁴·s_y, 10⁻⁵·s_max), max(3·s_y, lo)] | 0 < lo ≤ hi < ∞ | box for σ (fitted σ only); s_max² the largest s² allowed |
/// | `variance_bounds` | [10⁻²·s_y², 10²·s_y²] | 0 < lo ≤ hi < ∞ | box for s² (fitted s² only) |
/// | `starts` | 32 | ≥ 1 | Sobol starts in the log-parameter box, scored by the likelihood |
/// | `refinements` | 3 | ≥ 1 | the best starts refined by quasi-Newton (PANOC) |
/// | `seed` | 0 | any | scrambling seed of the Sobol starts (same seed, same result) |
/// | `refine` | tolerance 10⁻⁷, 100 iterations, memory 10 | [`RefineOptions::check`] | settings of each refinement |
///
/// **The output variance is fixed at 1 by default.** The confidence bounds assume
/// k(x, x) ≤ 1 and read B as a bound on the norm of f in the RKHS of the kernel *as given*;
/// since ‖f‖ in the RKHS of s²k is ‖f‖/s in that of k, fitting s² silently changes what a
/// given B means. Fit it ([`OutputVariance::Fitted`]) only to rescale B accordingly, or to
/// model the data rather than to build a bound.
///
/// **The noise floor is a box constraint, not jitter.** The lower bound on σ keeps
/// K + σ²I well conditioned (its condition number is at most 1 + t·s²/σ² ≤ 1 + 10¹⁰ t at the
/// default floor); no other value is ever added to the diagonal.
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FitOptions, KernelFamily, LengthScales, Noise};
/// let options = FitOptions::new()
///     .family(KernelFamily::Rbf)
///     .lengthscales(LengthScales::PerDimension)
///     .noise(Noise::Fitted)
///     .noise_bounds(0.01, 1.0)
///     .seed(7);
/// options.check()?;
/// assert!(FitOptions::new().starts(0).check().is_err());
/// assert!(FitOptions::new().lengthscale_bounds(1.0, 0.5).check().is_err());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    family: KernelFamily,
    lengthscales: LengthScales,
    variance: OutputVariance,
    noise: Noise,
    lengthscale_bounds: Option<(f64, f64)>,
    noise_bounds: Option<(f64, f64)>,
    variance_bounds: Option<(f64, f64)>,
    starts: usize,
    refinements: usize,
    seed: u64,
    refine: RefineOptions,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// `lo ≤ hi`, both finite and positive.
fn check_interval(name: &'static str, (lo, hi): (f64, f64)) -> Result<()> {
    positive(name, lo)?;
    positive(name, hi)?;
    // Both are finite and positive here, so the comparison is total.
    if lo > hi {
        return Err(Error::InvalidParameter {
            name,
            value: lo,
            expected: "a lower bound at most the upper bound",
        });
    }
    Ok(())
}

impl FitOptions {
    /// The defaults of the table above.
    pub fn new() -> Self {
        Self {
            family: KernelFamily::default(),
            lengthscales: LengthScales::Shared,
            variance: OutputVariance::default(),
            noise: Noise::Fitted,
            lengthscale_bounds: None,
            noise_bounds: None,
            variance_bounds: None,
            starts: 32,
            refinements: 3,
            seed: 0,
            refine: RefineOptions {
                tolerance: 1e-7,
                max_iterations: 100,
                memory: 10,
            },
        }
    }

    /// Sets the kernel family.
    pub fn family(mut self, family: KernelFamily) -> Self {
        self.family = family;
        self
    }

    /// Sets whether ℓ is shared or per coordinate.
    pub fn lengthscales(mut self, lengthscales: LengthScales) -> Self {
        self.lengthscales = lengthscales;
        self
    }

    /// Sets whether s² is fixed (and at what) or fitted.
    pub fn variance(mut self, variance: OutputVariance) -> Self {
        self.variance = variance;
        self
    }

    /// Sets whether σ is fixed (and at what) or fitted.
    pub fn noise(mut self, noise: Noise) -> Self {
        self.noise = noise;
        self
    }

    /// Sets the box [lo, hi] of every length-scale.
    pub fn lengthscale_bounds(mut self, lo: f64, hi: f64) -> Self {
        self.lengthscale_bounds = Some((lo, hi));
        self
    }

    /// Sets the box [lo, hi] of a fitted σ.
    pub fn noise_bounds(mut self, lo: f64, hi: f64) -> Self {
        self.noise_bounds = Some((lo, hi));
        self
    }

    /// Sets the box [lo, hi] of a fitted s².
    pub fn variance_bounds(mut self, lo: f64, hi: f64) -> Self {
        self.variance_bounds = Some((lo, hi));
        self
    }

    /// Sets the number of Sobol starts.
    pub fn starts(mut self, starts: usize) -> Self {
        self.starts = starts;
        self
    }

    /// Sets how many of the best starts are refined.
    pub fn refinements(mut self, refinements: usize) -> Self {
        self.refinements = refinements;
        self
    }

    /// Sets the seed of the Sobol starts.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the settings of each quasi-Newton refinement.
    pub fn refine_options(mut self, refine: RefineOptions) -> Self {
        self.refine = refine;
        self
    }

    /// Validates the settings.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid ν, a fixed s² or σ that is not finite and
    /// positive, a box with a bound that is not finite and positive or with lo > hi, no start,
    /// no refinement, or invalid refinement settings ([`RefineOptions::check`]).
    pub fn check(&self) -> Result<()> {
        self.family.check()?;
        if let OutputVariance::Fixed(v) = self.variance {
            positive("variance", v)?;
        }
        if let Noise::Fixed(sigma) = self.noise {
            check_noise_sd(sigma)?;
        }
        for (name, bounds) in [
            ("lengthscale_bounds", self.lengthscale_bounds),
            ("noise_bounds", self.noise_bounds),
            ("variance_bounds", self.variance_bounds),
        ] {
            if let Some(bounds) = bounds {
                check_interval(name, bounds)?;
            }
        }
        if let Some((lo, hi)) = self.noise_bounds {
            check_noise_sd(lo)?;
            check_noise_sd(hi)?;
        }
        if self.starts == 0 {
            return Err(Error::InvalidParameter {
                name: "starts",
                value: 0.0,
                expected: "at least 1",
            });
        }
        if self.refinements == 0 {
            return Err(Error::InvalidParameter {
                name: "refinements",
                value: 0.0,
                expected: "at least 1",
            });
        }
        self.refine.check()
    }
}

/// Hyperparameters fitted by [`fit_hyperparameters`] on a warm-up data set D₀.
///
/// **Use them only for observations after D₀.** The fitted values are a function of D₀; given
/// D₀ they are fixed, which is all the confidence bounds' theorems need of their kernel and σ
/// (Flynn & Reeb 2024 Thm 4.4 and the bounds built on it; Abbasi-Yadkori 2012): their
/// martingale arguments then run over the later observations, conditionally on D₀. Feeding
/// D₀ into the bound as well breaks that conditioning: the kernel would have been chosen with
/// the very noise it is meant to cover. [`Fit::bound`] therefore returns an *empty* bound;
/// start observing after the warm-up.
///
/// The guarantee still needs the fitted values to satisfy the assumptions: σ at least the true
/// sub-Gaussian scale of the noise, and f in the RKHS of the fitted kernel with norm at most B.
/// **The fitted σ is an estimate**, and can fall below the truth (by chance, or because the
/// model attributes part of the noise to f); to keep a margin, inflate it, e.g.
/// `fit.bound_params(params).sigma(1.5 * fit.noise_sd())`. B is not fitted (an RKHS norm bound
/// is not identified by the likelihood); an adaptive doubling of B (`bound::AdaptiveNorm`)
/// addresses it separately.
///
/// With the `serde` feature a fit is a `kernel_bandits::snapshot::Snapshot`: saved whole and
/// restored exactly, so that a fit made once, on a warm-up set that may be gone, gives the same
/// bounds elsewhere.
///
/// # Examples
/// ```
/// use kernel_bandits::bound::{BoundConfig, BoundKind, BoundParams, ConfidenceBound};
/// use kernel_bandits::hyper::{FitOptions, fit_hyperparameters};
/// // A warm-up of 20 observations of sin(6x) with a little noise.
/// let xs: Vec<[f64; 1]> = (0..20).map(|i| [i as f64 / 19.0]).collect();
/// let ys: Vec<f64> = xs
///     .iter()
///     .enumerate()
///     .map(|(i, x)| (6.0 * x[0]).sin() + 0.05 * ((i * 7 % 5) as f64 - 2.0))
///     .collect();
/// let fit = fit_hyperparameters(&FitOptions::new(), &xs, &ys)?;
/// assert_eq!(fit.observations(), 20);
/// let config = BoundConfig::new().params(BoundParams::new().norm_bound(2.0));
/// let bound = fit.bound(BoundKind::Amm, &config)?;
/// assert_eq!(bound.len(), 0); // empty: D₀ is not reused
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Fit {
    kernel: FittedKernel,
    noise_sd: f64,
    log_likelihood: f64,
    evaluations: usize,
    converged: bool,
    observations: usize,
    at_lower: Vec<HyperParameter>,
    at_upper: Vec<HyperParameter>,
}

impl Fit {
    /// The fitted kernel s² · k_family with the fitted ℓ.
    pub fn kernel(&self) -> &FittedKernel {
        &self.kernel
    }

    /// The fitted kernel, by value.
    pub fn into_kernel(self) -> FittedKernel {
        self.kernel
    }

    /// The fitted (or fixed) noise standard deviation σ: an estimate, see [`Fit`].
    pub fn noise_sd(&self) -> f64 {
        self.noise_sd
    }

    /// The length-scales: one if shared, one per coordinate otherwise.
    pub fn lengthscales(&self) -> &[f64] {
        self.kernel.lengthscales()
    }

    /// The output variance s² (1 unless it was fitted or fixed otherwise).
    pub fn variance(&self) -> f64 {
        self.kernel.variance()
    }

    /// The log marginal likelihood at the fitted values, as [`super::log_marginal_likelihood`]
    /// computes it.
    pub fn log_likelihood(&self) -> f64 {
        self.log_likelihood
    }

    /// Likelihood evaluations spent: one per start, plus those of the refinements.
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// Whether the refinement that gave the result converged (see
    /// [`crate::continuous::Maximum::converged`]).
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// The number of warm-up observations |D₀| the fit used; the bound must not see them.
    pub fn observations(&self) -> usize {
        self.observations
    }

    /// The fitted parameters at (within 10⁻⁶ of the log-width of their box from) the lower
    /// edge of their box: the likelihood wanted a smaller value; widen the box or distrust it.
    pub fn at_lower(&self) -> &[HyperParameter] {
        &self.at_lower
    }

    /// The fitted parameters at the upper edge of their box.
    pub fn at_upper(&self) -> &[HyperParameter] {
        &self.at_upper
    }

    /// Whether any fitted parameter ended on an edge of its box.
    pub fn on_box_edge(&self) -> bool {
        !self.at_lower.is_empty() || !self.at_upper.is_empty()
    }

    /// `params` with σ replaced by the fitted σ.
    pub fn bound_params(&self, params: BoundParams) -> BoundParams {
        params.sigma(self.noise_sd)
    }

    /// An **empty** bound of kind `kind` on the fitted kernel, built from `config` with σ
    /// replaced by the fitted σ (in [`BoundConfig::params`] and in the sketch settings). It
    /// must only observe data gathered after the warm-up (see [`Fit`]).
    ///
    /// # Errors
    /// As [`BoundKind::build`].
    pub fn bound(&self, kind: BoundKind, config: &BoundConfig) -> Result<AnyBound<FittedKernel>> {
        let mut config = *config;
        config.params = self.bound_params(config.params);
        config.sketch = config.sketch.sigma(self.noise_sd);
        kind.build(self.kernel.clone(), &config)
    }
}

/// The log-parameter box and the map from it to kernel parameters.
#[derive(Debug)]
struct Parameterisation {
    family: KernelFamily,
    per_dimension: bool,
    /// Boxes of ln ℓᵢ (m of them), then ln s², then ln σ² (lo = hi where fixed).
    domain: BoxDomain,
    /// The original boxes (for clamping after exp), as (lo, hi) of ℓᵢ, s², σ.
    original: Vec<(f64, f64)>,
    /// Which coordinates are free (lo < hi).
    free: Vec<bool>,
    fixed_variance: Option<f64>,
    fixed_noise: Option<f64>,
}

impl Parameterisation {
    fn lengthscale_count(&self) -> usize {
        self.original.len() - 2
    }

    /// The kernel and σ at log-parameters θ.
    fn at(&self, theta: &[f64]) -> Result<(FittedKernel, f64)> {
        let m = self.lengthscale_count();
        // exp(θ/power), the box's own bounds exactly where θ is on an edge of the log box.
        let value = |i: usize, power: f64| {
            let (lo, hi) = self.original[i];
            if theta[i] <= self.domain.lo()[i] {
                lo
            } else if theta[i] >= self.domain.hi()[i] {
                hi
            } else {
                (theta[i] / power).exp().clamp(lo, hi)
            }
        };
        let lengthscales: Vec<f64> = (0..m).map(|i| value(i, 1.0)).collect();
        let variance = self.fixed_variance.unwrap_or_else(|| value(m, 1.0));
        let noise_sd = self.fixed_noise.unwrap_or_else(|| value(m + 1, 2.0));
        let kernel = if self.per_dimension {
            FittedKernel::per_dimension(self.family, &lengthscales, variance)?
        } else {
            FittedKernel::shared(self.family, lengthscales[0], variance)?
        };
        Ok((kernel, noise_sd))
    }

    fn name(&self, i: usize) -> HyperParameter {
        let m = self.lengthscale_count();
        if i < m {
            HyperParameter::Lengthscale(i)
        } else if i == m {
            HyperParameter::OutputVariance
        } else {
            HyperParameter::NoiseSd
        }
    }
}

/// The box of one parameter, given or by default; an error for an empty default.
fn bounds_or(
    given: Option<(f64, f64)>,
    default: (f64, f64),
    name: &'static str,
    why: &'static str,
) -> Result<(f64, f64)> {
    if let Some(b) = given {
        return Ok(b);
    }
    let (lo, hi) = default;
    if !(lo >= f64::MIN_POSITIVE && hi.is_finite() && lo <= hi) {
        return Err(Error::InvalidParameter {
            name,
            value: lo,
            expected: why,
        });
    }
    Ok(default)
}

/// Fits the hyperparameters of a [`FittedKernel`] and the noise σ to a warm-up data set D₀ by
/// maximising the log marginal likelihood (type-II maximum likelihood, Rasmussen & Williams
/// 2006 §5.4.1, Eq. 5.8–5.9) over the log-parameters ln ℓᵢ, ln s², ln σ² in the box of
/// [`FitOptions`].
///
/// The search: `starts` Sobol points of the log box ([`BoxDomain::space_filling`], seeded)
/// are scored by the likelihood alone (one Cholesky each); the best `refinements` are refined
/// with [`maximise`] (PANOC, box-constrained quasi-Newton) on the mean log-likelihood per
/// observation with its analytic gradient ([`super::log_marginal_likelihood_gradient`]); the
/// best result is returned. Deterministic for a given seed.
///
/// Cost: each start costs one Cholesky factor (t³/3 flops), each refinement step also K⁻¹ and
/// t²/2 kernel gradients. Measured (`benches/hyper.rs`, d = 3, Matérn 5/2, default options, one
/// core of an AMD EPYC): 9 ms at t = 50 and 0.12 s at t = 200; the likelihood with its
/// gradient alone takes 0.08 ms, 2.2 ms and 19 ms at t = 50, 200 and 500.
///
/// The targets are fitted as given, under a **zero prior mean**: the confidence bounds assume
/// f in the RKHS of the kernel with no mean term, so centring y here would fit a model the
/// bound does not use. Subtract a known offset from the targets before both fitting and
/// bounding if needed.
///
/// Read [`Fit`] before using the result in a bound: only observations after D₀ keep the
/// guarantee.
///
/// # Errors
/// [`FitOptions::check`]; as the [`crate::points::Points`] constructors; [`Error::LengthMismatch`]
/// unless there is one target per point; [`Error::NonFinite`] for a non-finite target;
/// [`Error::InvalidParameter`] for fewer than 2 observations, or a default box that is empty
/// (inputs that span no range, for ℓ; all-zero targets, for a fitted s²) — set the box then;
/// [`Error::DimensionMismatch`] never for valid points (the kernel accepts any dimension it is
/// built for); [`Error::NotPositiveDefinite`] if K + σ²I is not numerically positive definite
/// at a parameter value the search visits (only possible with a fixed or user-set σ too small
/// for duplicated inputs); [`Error::NonFinite`] if the likelihood overflows at every start
/// (targets near the largest doubles).
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FitOptions, KernelFamily, fit_hyperparameters};
/// let xs: Vec<[f64; 2]> = (0..30)
///     .map(|i| [(i % 6) as f64 / 5.0, (i / 6) as f64 / 4.0])
///     .collect();
/// let ys: Vec<f64> = xs.iter().map(|x| (3.0 * x[0]).sin() * (2.0 * x[1]).cos()).collect();
/// let options = FitOptions::new().family(KernelFamily::Matern { nu: 2.5 }).seed(1);
/// let fit = fit_hyperparameters(&options, &xs, &ys)?;
/// assert!(fit.lengthscales()[0] > 0.01 && fit.lengthscales()[0] < 10.0);
/// assert_eq!(fit.variance(), 1.0); // fixed by default
/// let again = fit_hyperparameters(&options, &xs, &ys)?;
/// assert_eq!(fit, again); // deterministic
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn fit_hyperparameters<P: AsPoints + ?Sized>(
    options: &FitOptions,
    points: &P,
    targets: &[f64],
) -> Result<Fit> {
    options.check()?;
    let points = points.as_points()?;
    let data = Data::from_points(&points, targets)?;
    let t = data.len();
    if t < 2 {
        return Err(Error::InvalidParameter {
            name: "observations",
            value: t as f64,
            expected: "at least 2 observations",
        });
    }
    let parameterisation = parameterise(options, &data)?;
    let domain = &parameterisation.domain;
    let n = domain.dim();
    let per_observation = 1.0 / t as f64;

    // Score the Sobol starts by the likelihood alone; a start where K + σ²I is not positive
    // definite (or the likelihood overflows) is dropped, and its error kept.
    let candidates = domain.space_filling(options.starts, options.seed);
    let mut starts = Vec::with_capacity(candidates.len());
    let mut values = Vec::with_capacity(options.starts);
    let mut first_error = None;
    for theta in candidates.chunks_exact(n) {
        let scored = parameterisation
            .at(theta)
            .and_then(|(kernel, noise_sd)| data.factor(&kernel, noise_sd));
        match scored {
            Ok(factored) => {
                starts.extend_from_slice(theta);
                values.push(factored.value * per_observation);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if values.is_empty() {
        return Err(first_error.unwrap_or(Error::NoArms));
    }

    let m = parameterisation.lengthscale_count();
    let mut objective = |theta: &[f64]| -> Result<(f64, Vec<f64>)> {
        let (kernel, noise_sd) = parameterisation.at(theta)?;
        let factored = data.factor(&kernel, noise_sd)?;
        let g = data.gradient(&kernel, noise_sd, &factored)?;
        let mut gradient = Vec::with_capacity(n);
        gradient.extend(g.log_lengthscales.iter().map(|v| v * per_observation));
        gradient.push(g.log_variance * per_observation);
        gradient.push(g.log_noise_variance * per_observation);
        Ok((g.value * per_observation, gradient))
    };
    let best = maximise(
        domain,
        &starts,
        &values,
        options.refinements,
        &mut objective,
        &options.refine,
    )?;
    debug_assert_eq!(best.point.len(), m + 2);

    let (kernel, noise_sd) = parameterisation.at(&best.point)?;
    let log_likelihood = data.factor(&kernel, noise_sd)?.value;
    let (mut at_lower, mut at_upper) = (Vec::new(), Vec::new());
    for (i, &theta) in best.point.iter().enumerate() {
        if !parameterisation.free[i] {
            continue;
        }
        let (lo, hi) = (domain.lo()[i], domain.hi()[i]);
        let slack = 1e-6 * (hi - lo);
        if theta - lo <= slack {
            at_lower.push(parameterisation.name(i));
        } else if hi - theta <= slack {
            at_upper.push(parameterisation.name(i));
        }
    }
    Ok(Fit {
        kernel,
        noise_sd,
        log_likelihood,
        evaluations: values.len() + best.evaluations,
        converged: best.converged,
        observations: t,
        at_lower,
        at_upper,
    })
}

/// A fit is saved whole, so that a fit made once (on a warm-up set that may be gone) can be
/// stored or sent to other processes and give the same bounds.
#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for Fit {
    fn kind() -> String {
        "fit".into()
    }
    /// The kernel is rebuilt by its checked constructors (see [`FittedKernel`]'s snapshot); σ
    /// must be one that [`fit_hyperparameters`] accepts, the log likelihood finite, with at
    /// least one evaluation and two observations, and each parameter reported on an edge of
    /// its box must exist in the kernel and be reported once.
    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::{ensure, rebuild_error};
        self.kernel.restore()?;
        check_noise_sd(self.noise_sd).map_err(rebuild_error("fit"))?;
        ensure(
            self.log_likelihood.is_finite() && self.evaluations >= 1 && self.observations >= 2,
            || {
                format!(
                    "fit: log likelihood {}, {} evaluations, {} observations",
                    self.log_likelihood, self.evaluations, self.observations
                )
            },
        )?;
        let lengthscales = self.kernel.lengthscales().len();
        let mut seen: Vec<HyperParameter> = Vec::new();
        for &p in self.at_lower.iter().chain(&self.at_upper) {
            let exists = match p {
                HyperParameter::Lengthscale(i) => i < lengthscales,
                HyperParameter::OutputVariance | HyperParameter::NoiseSd => true,
            };
            ensure(exists && !seen.contains(&p), || {
                format!("fit: {p:?} reported on the edge of its box (twice, or not a parameter)")
            })?;
            seen.push(p);
        }
        Ok(())
    }
}

/// The log box from the options and the data's scales.
fn parameterise(options: &FitOptions, data: &Data<'_>) -> Result<Parameterisation> {
    let d = data.dim();
    let t = data.len();
    let rows = data.rows();
    let ranges: Vec<f64> = (0..d)
        .map(|i| {
            let column = rows.iter().skip(i).step_by(d);
            let lo = column.clone().fold(f64::INFINITY, |a, &b| a.min(b));
            let hi = column.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            hi - lo
        })
        .collect();
    let largest = ranges.iter().copied().fold(0.0, f64::max);
    let rms = (data.targets().iter().map(|y| y * y).sum::<f64>() / t as f64).sqrt();

    let per_dimension = options.lengthscales == LengthScales::PerDimension;
    let spans: Vec<f64> = if per_dimension {
        ranges
            .iter()
            .map(|&r| if r > 0.0 { r } else { largest })
            .collect()
    } else {
        vec![largest]
    };
    let mut original = Vec::with_capacity(spans.len() + 2);
    for span in spans {
        original.push(bounds_or(
            options.lengthscale_bounds,
            (1e-2 * span, 10.0 * span),
            "lengthscale_bounds",
            "explicit length-scale bounds: the inputs span no range (or an overflowing one)",
        )?);
    }
    let variance = match options.variance {
        OutputVariance::Fixed(v) => (v, v),
        OutputVariance::Fitted => bounds_or(
            options.variance_bounds,
            (1e-2 * rms * rms, 1e2 * rms * rms),
            "variance_bounds",
            "explicit output-variance bounds: the targets are all zero (or overflow)",
        )?,
    };
    original.push(variance);
    let noise = match options.noise {
        Noise::Fixed(sigma) => (sigma, sigma),
        Noise::Fitted => {
            let floor = (1e-4 * rms).max(1e-5 * variance.1.sqrt());
            bounds_or(
                options.noise_bounds,
                (floor, (3.0 * rms).max(floor)),
                "noise_bounds",
                "explicit noise bounds: the targets overflow",
            )?
        }
    };
    original.push(noise);

    let m = original.len() - 2;
    let mut lo = Vec::with_capacity(m + 2);
    let mut hi = Vec::with_capacity(m + 2);
    for (i, &(a, b)) in original.iter().enumerate() {
        // σ is searched as ln σ² (the parameter of Eq. 5.9); the others as their logarithm.
        let power = if i == m + 1 { 2.0 } else { 1.0 };
        lo.push(power * a.ln());
        hi.push(power * b.ln());
    }
    let free = lo.iter().zip(&hi).map(|(a, b)| a < b).collect();
    Ok(Parameterisation {
        family: options.family,
        per_dimension,
        domain: BoxDomain::new(&lo, &hi)?,
        original,
        free,
        fixed_variance: match options.variance {
            OutputVariance::Fixed(v) => Some(v),
            OutputVariance::Fitted => None,
        },
        fixed_noise: match options.noise {
            Noise::Fixed(sigma) => Some(sigma),
            Noise::Fitted => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::AsPoints;

    /// The default boxes of the documentation table, from the data's ranges and RMS.
    #[test]
    fn default_boxes_follow_the_data() {
        // Ranges D₀ = 2, D₁ = 0 (a constant coordinate); s_y = √((9 + 16)/2) = √12.5.
        let xs = [[1.0, 5.0], [3.0, 5.0]];
        let ys = [3.0, -4.0];
        let points = xs.as_points().unwrap();
        let data = Data::from_points(&points, &ys).unwrap();
        let rms = 12.5f64.sqrt();

        let p = parameterise(&FitOptions::new(), &data).unwrap();
        assert_eq!(p.original[0], (0.02, 20.0));
        assert_eq!(p.original[1], (1.0, 1.0));
        let floor = (1e-4 * rms).max(1e-5);
        assert_eq!(p.original[2], (floor, 3.0 * rms));
        assert_eq!(p.free, [true, false, true]);
        let (lo, hi) = (p.domain.lo(), p.domain.hi());
        assert_eq!((lo[0], hi[0]), (0.02f64.ln(), 20f64.ln()));
        assert_eq!((lo[2], hi[2]), (2.0 * floor.ln(), 2.0 * (3.0 * rms).ln()));

        // Per dimension, the constant coordinate borrows the largest range; a fitted s² gets
        // [10⁻² s_y², 10² s_y²], and the σ floor follows its upper end.
        let options = FitOptions::new()
            .lengthscales(LengthScales::PerDimension)
            .variance(OutputVariance::Fitted)
            .noise(Noise::Fixed(0.3));
        let p = parameterise(&options, &data).unwrap();
        assert_eq!(p.original[..2], [(0.02, 20.0), (0.02, 20.0)]);
        let (v_lo, v_hi) = p.original[2];
        assert!((v_lo - 0.125).abs() < 1e-15 && (v_hi - 1250.0).abs() < 1e-12);
        assert_eq!(p.original[3], (0.3, 0.3));
        assert_eq!(p.free, [true, true, true, false]);
        let (kernel, sigma) = p.at(p.domain.lo()).unwrap();
        assert_eq!(sigma, 0.3); // the fixed value exactly, not exp(ln 0.3)
        assert_eq!(kernel.lengthscales(), [0.02, 0.02]);

        let options = FitOptions::new()
            .noise(Noise::Fitted)
            .variance(OutputVariance::Fitted);
        let p = parameterise(&options, &data).unwrap();
        assert_eq!(p.original[2].0, (1e-4 * rms).max(1e-5 * 1250f64.sqrt()));
    }
}
