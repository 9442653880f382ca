//! Fitting ℓ, σ and (optionally) s² by maximising the log marginal likelihood.

use crate::bound::{AnyBound, BoundConfig, BoundKind, BoundParams};
use crate::continuous::{BoxDomain, RefineOptions, maximise};
use crate::error::{Error, Result, positive};
use crate::points::AsPoints;
use std::fmt;

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

impl fmt::Display for HyperParameter {
    /// The parameter's name as the options and the Python binding spell it: `lengthscale`
    /// (shared) or `lengthscale[i]`, `variance`, `noise_sd`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Lengthscale(i) => write!(f, "lengthscale[{i}]"),
            Self::OutputVariance => write!(f, "variance (s²)"),
            Self::NoiseSd => write!(f, "noise_sd (σ)"),
        }
    }
}

/// What [`fit_hyperparameters`] maximises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Objective {
    /// The log posterior ln p(z | θ) + ln p(θ) of the standardised targets
    /// z = (y − mean)/sd under the priors of [`FitOptions`] (the default; see the
    /// [module documentation](super)).
    #[default]
    Map,
    /// The log marginal likelihood ln p(y | θ) of the targets as given, under a zero mean and
    /// no prior (type-II maximum likelihood, Rasmussen & Williams 2006 §5.4.1; the crate's fit
    /// before the priors). On a few points it can end with σ on its floor and ℓ on an edge.
    MaximumLikelihood,
}

/// A log-normal prior on a positive parameter v: ln v ~ N(μ, τ²), with the log density **of
/// v** (as GPyTorch's `LogNormalPrior`, so that the log posteriors compare with BoTorch's):
///
/// ln p(v) = −(ln v − μ)²/(2τ²) − ln v − ln(τ√(2π)),  mode exp(μ − τ²), median exp(μ).
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::LogNormal;
/// let prior = LogNormal::new(-4.0, 1.0)?;
/// assert!((prior.mode() - (-5f64).exp()).abs() < 1e-15);
/// let v: f64 = 0.02;
/// let by_hand = -(v.ln() + 4.0).powi(2) / 2.0 - v.ln() - (2.0 * std::f64::consts::PI).sqrt().ln();
/// assert!((prior.log_density(v) - by_hand).abs() < 1e-13);
/// assert!(LogNormal::new(0.0, 0.0).is_err());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogNormal {
    /// μ, the mean of ln v.
    pub loc: f64,
    /// τ > 0, the standard deviation of ln v.
    pub scale: f64,
}

impl LogNormal {
    /// ln v ~ N(`loc`, `scale`²).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `loc` is finite and `scale` finite and positive.
    pub fn new(loc: f64, scale: f64) -> Result<Self> {
        let prior = Self { loc, scale };
        prior.check()?;
        Ok(prior)
    }

    /// The length-scale prior of Hvarfner, Hellsten & Nardi (2024), "Vanilla Bayesian
    /// Optimization Performs Great in High Dimensions" (ICML 2024, §4), BoTorch's default
    /// since 0.12: ℓ ~ LN(√2 + ½ ln d, √3) for inputs in the unit cube of dimension d.
    pub fn dimension_scaled(d: usize) -> Self {
        Self {
            loc: std::f64::consts::SQRT_2 + 0.5 * (d.max(1) as f64).ln(),
            scale: 3f64.sqrt(),
        }
    }

    /// Checks μ and τ.
    ///
    /// # Errors
    /// As [`LogNormal::new`].
    pub fn check(&self) -> Result<()> {
        if !self.loc.is_finite() {
            return Err(Error::InvalidParameter {
                name: "prior loc",
                value: self.loc,
                expected: "a finite number",
            });
        }
        positive("prior scale", self.scale)?;
        Ok(())
    }

    /// exp(μ − τ²), where the density of v peaks.
    pub fn mode(&self) -> f64 {
        (self.loc - self.scale * self.scale).exp()
    }

    /// ln p(v) (−∞ for v ≤ 0).
    pub fn log_density(&self, v: f64) -> f64 {
        if v > 0.0 {
            self.log_density_of_log(v.ln())
        } else {
            f64::NEG_INFINITY
        }
    }

    /// ln p(v) as a function of u = ln v.
    pub(crate) fn log_density_of_log(&self, u: f64) -> f64 {
        const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;
        let z = (u - self.loc) / self.scale;
        -0.5 * z * z - u - self.scale.ln() - HALF_LN_2PI
    }

    /// d ln p(v)/d ln v.
    pub(crate) fn log_density_of_log_slope(&self, u: f64) -> f64 {
        -(u - self.loc) / (self.scale * self.scale) - 1.0
    }
}

/// Settings of [`fit_hyperparameters`], with infallible chained setters and one
/// [`FitOptions::check`].
///
/// With D the largest coordinate range of the inputs (Dᵢ the range of coordinate i), d the
/// input dimension, m and sd(y) the mean and standard deviation of the targets (MAP
/// fits z = (y − m)/sd(y); σ_z = σ/sd(y), s_z² = s²/sd(y)²) and s_y = (Σ yᵢ²/t)^{1/2} their root mean square (maximum likelihood
/// fits y as given). Boxes and fixed values are given in the user's units:
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `objective` | [`Objective::Map`] | MAP / maximum likelihood | what is maximised |
/// | `family` | Matérn ν = 5/2 | [`KernelFamily`] | the kernel family |
/// | `lengthscales` | [`LengthScales::Shared`] | shared / per dimension | one ℓ or one per coordinate |
/// | `variance` | [`OutputVariance::Fixed`]`(1)` | fixed s² > 0, or fitted | the output variance s² (see below) |
/// | `noise` | [`Noise::Fitted`] | fixed σ > 0, or fitted | the noise standard deviation σ |
/// | `lengthscale_prior` | ℓᵢ/Dᵢ ~ [`LogNormal::dimension_scaled`]`(d)` = LN(√2 + ½ ln d, √3) | [`LogNormal`] | MAP only |
/// | `noise_prior` | σ²/s² ~ LN(−4, 1) (fixed s²); σ_z² ~ LN(−4, 1) (fitted s²) | [`LogNormal`] | MAP only |
/// | `variance_prior` | s_z² ~ LN(0, 1) | [`LogNormal`] | MAP only, fitted s² only |
/// | `lengthscale_bounds` | MAP: [10⁻³·D, 10³·D]; ML: [10⁻²·D, 10·D] (per dimension Dᵢ, D where Dᵢ = 0) | 0 < lo ≤ hi < ∞ | box for each ℓ |
/// | `noise_bounds` | MAP: σ_z ∈ [max(10⁻⁴, 10⁻⁵·s_z,max), 10]; ML: [max(10⁻⁴·s_y, 10⁻⁵·s_max), max(3·s_y, lo)] | 0 < lo ≤ hi < ∞ | box for σ (fitted σ only); s_max² the largest s² allowed |
/// | `variance_bounds` | MAP: s_z² ∈ [10⁻³, 10³]; ML: [10⁻²·s_y², 10²·s_y²] | 0 < lo ≤ hi < ∞ | box for s² (fitted s² only) |
/// | `starts` | 12 | ≥ 1 | Sobol starts (besides the deterministic ones), scored by the objective |
/// | `refinements` | 2 | ≥ 1 | the best starts refined by quasi-Newton (PANOC) |
/// | `screen_size` | 150 | ≥ 2 | above this many rows, search a spread subsample of this size first |
/// | `seed` | 0 | any | scrambling seed of the Sobol starts (same seed, same result) |
/// | `refine` | tolerance 10⁻⁷, 100 iterations, memory 10 | [`RefineOptions::check`] | settings of each refinement |
///
/// **The output variance is fixed at 1 by default** (in the user's units: s_z² = 1/sd(y)²). The
/// confidence bounds assume k(x, x) ≤ 1 and read B as a bound on the norm of f in the RKHS of
/// the kernel *as given*; since ‖f‖ in the RKHS of s²k is ‖f‖/s in that of k, fitting s²
/// silently changes what a given B means. Fit it ([`OutputVariance::Fitted`]: s_z²·sd(y)² is
/// returned in the user's units) only to rescale B accordingly, or to model the data rather
/// than to build a bound.
///
/// **The noise floor is a prior (MAP), the box only guards the conditioning.** The lower edge
/// of σ keeps K + σ²I well conditioned (its condition number is at most 1 + t·s²/σ² ≤
/// 1 + 10¹⁰ t at the default edge), 14 prior standard deviations below the noise prior's
/// centre; no other value is ever added to the diagonal. Under maximum likelihood nothing but
/// that edge stops σ → 0, and a fit on few points often ends there ([`Fit::at_lower`]).
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
    objective: Objective,
    lengthscale_prior: Option<LogNormal>,
    noise_prior: LogNormal,
    variance_prior: LogNormal,
    screen_size: usize,
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
            starts: 12,
            refinements: 2,
            seed: 0,
            refine: RefineOptions {
                tolerance: 1e-7,
                max_iterations: 100,
                memory: 10,
            },
            objective: Objective::Map,
            lengthscale_prior: None,
            noise_prior: LogNormal {
                loc: -4.0,
                scale: 1.0,
            },
            variance_prior: LogNormal {
                loc: 0.0,
                scale: 1.0,
            },
            screen_size: 150,
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

    /// Sets what is maximised: the log posterior (MAP, the default) or the log marginal
    /// likelihood.
    pub fn objective(mut self, objective: Objective) -> Self {
        self.objective = objective;
        self
    }

    /// Sets the prior of every ℓᵢ/Dᵢ (MAP only; default [`LogNormal::dimension_scaled`]).
    pub fn lengthscale_prior(mut self, prior: LogNormal) -> Self {
        self.lengthscale_prior = Some(prior);
        self
    }

    /// Sets the prior of the noise-to-signal ratio σ²/s² with s² fixed (default 1), or of
    /// σ_z² = σ²/sd(y)² with s² fitted (MAP only; default LN(−4, 1); see the
    /// [module documentation](super) for why).
    pub fn noise_prior(mut self, prior: LogNormal) -> Self {
        self.noise_prior = prior;
        self
    }

    /// Sets the prior of a fitted s_z² = s²/sd(y)² (MAP only; default LN(0, 1)).
    pub fn variance_prior(mut self, prior: LogNormal) -> Self {
        self.variance_prior = prior;
        self
    }

    /// Sets the number of rows above which the starts are screened and refined on a spread
    /// subsample of that many rows first (default 150, at least 2).
    pub fn screen_size(mut self, rows: usize) -> Self {
        self.screen_size = rows;
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
        if let Some(prior) = self.lengthscale_prior {
            prior.check()?;
        }
        self.noise_prior.check()?;
        self.variance_prior.check()?;
        if self.screen_size < 2 {
            return Err(Error::InvalidParameter {
                name: "screen_size",
                value: self.screen_size as f64,
                expected: "at least 2 rows",
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
    /// The targets' mean under MAP (0 under maximum likelihood).
    #[cfg_attr(feature = "serde", serde(default))]
    offset: f64,
    /// The log posterior in standardised units (MAP only).
    #[cfg_attr(feature = "serde", serde(default))]
    log_posterior: Option<f64>,
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

    /// The log marginal likelihood at the fitted values of the targets as modelled, y − m with
    /// m = [`Fit::mean`], as [`super::log_marginal_likelihood`] computes it in the user's units.
    pub fn log_likelihood(&self) -> f64 {
        self.log_likelihood
    }

    /// The offset m the fit subtracted from the targets: their mean under MAP, 0 under maximum
    /// likelihood. The confidence bounds model f with no mean term; the fitted ℓ and σ do not
    /// depend on m, but B must cover the targets as the bound sees them (subtract m from later
    /// targets before observing them if you want B to bound the centred function).
    pub fn mean(&self) -> f64 {
        self.offset
    }

    /// The log posterior ln p(z | θ) + ln p(θ) at the fitted values, in the standardised units
    /// the search works in (z = (y − mean)/sd; ln p(θ) the priors' log densities, of ℓᵢ/Dᵢ,
    /// σ²/s² (σ_z² with s² fitted) and a fitted s_z²): comparable with BoTorch's
    /// `ExactMarginalLogLikelihood` × t on the same standardised data and priors. `None` under
    /// maximum likelihood.
    pub fn log_posterior(&self) -> Option<f64> {
        self.log_posterior
    }

    /// Fits again on `points` and `targets` (e.g. D₀ and the data since) with `options`, the
    /// values of this fit as the first start: a refit during a run costs a few evaluations
    /// when the mode has not moved, and still finds a better one if it has.
    ///
    /// # Errors
    /// As [`fit_hyperparameters`].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::hyper::{FitOptions, fit_hyperparameters};
    /// let xs: Vec<[f64; 1]> = (0..40).map(|i| [i as f64 / 39.0]).collect();
    /// let ys: Vec<f64> = xs.iter().map(|x| (5.0 * x[0]).sin()).collect();
    /// let options = FitOptions::new();
    /// let first = fit_hyperparameters(&options, &xs[..20], &ys[..20])?;
    /// let again = first.refit(&options, &xs, &ys)?;
    /// assert_eq!(again.observations(), 40);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn refit<P: AsPoints + ?Sized>(
        &self,
        options: &FitOptions,
        points: &P,
        targets: &[f64],
    ) -> Result<Fit> {
        fit_from(options, points, targets, Some(self))
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

    /// A sentence naming each fitted parameter on an edge of its search box, which edge and its
    /// value (e.g. "noise_sd (σ) = 0.0001 is on the lower edge of its search box"), or `None`.
    pub fn edge_report(&self) -> Option<String> {
        if !self.on_box_edge() {
            return None;
        }
        let value = |p: &HyperParameter| match *p {
            HyperParameter::Lengthscale(i) => self.kernel.lengthscales()[i],
            HyperParameter::OutputVariance => self.kernel.variance(),
            HyperParameter::NoiseSd => self.noise_sd,
        };
        let parts: Vec<String> = self
            .at_lower
            .iter()
            .map(|p| (p, "lower"))
            .chain(self.at_upper.iter().map(|p| (p, "upper")))
            .map(|(p, edge)| format!("{p} = {} is on the {edge} edge of its search box", value(p)))
            .collect();
        Some(format!(
            "{} (the data wanted a value beyond it: widen the box with FitOptions or distrust \
             the fit)",
            parts.join("; ")
        ))
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
        self.bound_with_sigma(kind, config, self.noise_sd)
    }

    /// [`Fit::bound`] with σ = `sigma` instead of the fitted σ: to keep a margin over an
    /// estimate that may fall below the true noise scale, pass an inflated one, e.g.
    /// `1.5 * fit.noise_sd()`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `sigma` is finite and positive; as [`BoundKind::build`].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::bound::{BoundConfig, BoundKind, BoundParams, ConfidenceBound};
    /// use kernel_bandits::hyper::{FitOptions, fit_hyperparameters};
    /// let xs: Vec<[f64; 1]> = (0..12).map(|i| [i as f64 / 11.0]).collect();
    /// let ys: Vec<f64> = xs.iter().map(|x| (4.0 * x[0]).sin()).collect();
    /// let fit = fit_hyperparameters(&FitOptions::new(), &xs, &ys)?;
    /// let config = BoundConfig::new().params(BoundParams::new().norm_bound(2.0));
    /// let bound = fit.bound_with_sigma(BoundKind::Dmm, &config, 1.5 * fit.noise_sd())?;
    /// assert_eq!(bound.len(), 0);
    /// assert!(fit.bound_with_sigma(BoundKind::Dmm, &config, -1.0).is_err());
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn bound_with_sigma(
        &self,
        kind: BoundKind,
        config: &BoundConfig,
        sigma: f64,
    ) -> Result<AnyBound<FittedKernel>> {
        positive("sigma", sigma)?;
        let mut config = *config;
        config.params = config.params.sigma(sigma);
        config.sketch = config.sketch.sigma(sigma);
        kind.build(self.kernel.clone(), &config)
    }
}

/// The log-parameter box and the map from it to kernel parameters, in the units the search
/// works in: the standardised targets z = (y − m)/s (MAP) or the targets as given (m = 0,
/// s = 1: maximum likelihood).
#[derive(Debug)]
struct Parameterisation {
    family: KernelFamily,
    per_dimension: bool,
    /// Boxes of ln ℓᵢ (m of them), then ln s_z², then ln σ_z² (lo = hi where fixed).
    domain: BoxDomain,
    /// The original boxes (for clamping after exp), as (lo, hi) of ℓᵢ, s_z², σ_z.
    original: Vec<(f64, f64)>,
    /// Which coordinates are free (lo < hi).
    free: Vec<bool>,
    fixed_variance: Option<f64>,
    fixed_noise: Option<f64>,
    /// The fixed s² and σ in the user's units, exactly as given, and their boxes if given.
    given_variance: Option<f64>,
    given_noise: Option<f64>,
    given_variance_bounds: Option<(f64, f64)>,
    given_noise_bounds: Option<(f64, f64)>,
    /// The log-normal priors of each coordinate (MAP only), each on the value exp(θᵢ)/`unitᵢ`
    /// (ℓᵢ/Dᵢ, s_z², σ_z²).
    priors: Option<Vec<(LogNormal, f64)>>,
    /// The targets' scale s (1 for maximum likelihood).
    scale: f64,
    /// The extent Dᵢ of each length-scale's coordinates, the input dimension d and the
    /// targets' mean square (in the search's units), for the starts.
    spans: Vec<f64>,
    dim: usize,
    mean_square: f64,
    /// The median distance between two inputs (for a data-informed start of a shared ℓ).
    median_distance: Vec<f64>,
}

impl Parameterisation {
    fn lengthscale_count(&self) -> usize {
        self.original.len() - 2
    }

    /// The kernel and σ at log-parameters θ, in the search's units.
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

    /// The kernel and σ in the user's units: ℓ unchanged, s² = s_z²·s², σ = σ_z·s.
    fn user(&self, theta: &[f64]) -> Result<(FittedKernel, f64)> {
        let (kernel, noise_sd) = self.at(theta)?;
        if self.scale == 1.0 {
            return Ok((kernel, noise_sd));
        }
        let m = self.lengthscale_count();
        // A parameter on the edge of a box the user gave is that edge exactly.
        let edge = |i: usize, given: Option<(f64, f64)>| {
            let (lo, hi) = given?;
            if theta[i] <= self.domain.lo()[i] {
                Some(lo)
            } else if theta[i] >= self.domain.hi()[i] {
                Some(hi)
            } else {
                None
            }
        };
        let variance = self
            .given_variance
            .or_else(|| edge(m, self.given_variance_bounds))
            .unwrap_or(kernel.variance() * self.scale * self.scale);
        let kernel = if self.per_dimension {
            FittedKernel::per_dimension(self.family, kernel.lengthscales(), variance)?
        } else {
            FittedKernel::shared(self.family, kernel.lengthscales()[0], variance)?
        };
        let noise_sd = self
            .given_noise
            .or_else(|| edge(m + 1, self.given_noise_bounds))
            .unwrap_or(noise_sd * self.scale);
        Ok((kernel, noise_sd))
    }

    /// The log prior density at θ and its gradient in θ (zero without priors): for each free
    /// coordinate with prior LN(μ, τ) on v = exp(θ)/u, ln p(v) = −(ln v − μ)²/(2τ²) − ln v
    /// − ln(τ√(2π)).
    fn log_prior(&self, theta: &[f64], gradient: &mut [f64]) -> f64 {
        let Some(priors) = &self.priors else {
            return 0.0;
        };
        let mut total = 0.0;
        for (i, (prior, unit)) in priors.iter().enumerate() {
            if !self.free[i] {
                continue;
            }
            let ln_v = theta[i] - unit.ln();
            total += prior.log_density_of_log(ln_v);
            gradient[i] += prior.log_density_of_log_slope(ln_v);
        }
        total
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

    /// The deterministic starts (the previous fit's values first, then the priors' modes and
    /// data-informed values), each clamped into the box.
    fn deterministic_starts(&self, previous: Option<&[f64]>) -> Vec<Vec<f64>> {
        let n = self.domain.dim();
        let m = self.lengthscale_count();
        let clamp = |theta: &mut Vec<f64>| {
            for (i, v) in theta.iter_mut().enumerate() {
                *v = v.clamp(self.domain.lo()[i], self.domain.hi()[i]);
            }
        };
        let mut out = Vec::new();
        if let Some(previous) = previous {
            let mut theta = previous.to_vec();
            clamp(&mut theta);
            out.push(theta);
        }
        // The prior's mode in each coordinate (MAP); under maximum likelihood the default
        // priors' modes with ℓ over the extent and s², σ² over the targets' mean square.
        let mode: Vec<f64> = match &self.priors {
            Some(priors) => priors
                .iter()
                .map(|(p, unit)| p.mode().ln() + unit.ln())
                .collect(),
            None => {
                let mut mode: Vec<f64> = self.spans[..m]
                    .iter()
                    .map(|span| LogNormal::dimension_scaled(self.dim).mode().ln() + span.ln())
                    .collect();
                mode.push(self.mean_square.ln());
                mode.push(-5.0 + self.mean_square.ln());
                mode
            }
        };
        // ℓ candidates: the prior mode and the median distance between inputs; σ_z²
        // candidates: the prior mode (little noise), a quarter of the targets' mean square (a
        // noisy data set) and, with s² fixed below the targets' mean square, the excess (the
        // variance the signal cannot explain: targets on a larger scale than s²).
        let ell_median: Vec<f64> = self.median_distance.iter().map(|v| v.ln()).collect();
        let mut noises = vec![mode[m + 1], (0.25 * self.mean_square).ln()];
        if let Some(v) = self.fixed_variance
            && self.mean_square - v > 0.25 * self.mean_square
        {
            noises.push((self.mean_square - v).ln());
        }
        for ells in [&mode[..m], &ell_median[..]] {
            for &noise in &noises {
                let mut theta = Vec::with_capacity(n);
                theta.extend_from_slice(ells);
                theta.push(mode[m]);
                theta.push(noise);
                clamp(&mut theta);
                if !out.contains(&theta) {
                    out.push(theta);
                }
            }
        }
        out
    }

    /// Whether a length-scale of `theta` lies below its prior's central region, ln ℓᵢ/Dᵢ <
    /// μ − 2τ (MAP only; never under maximum likelihood).
    fn below_centre(&self, theta: &[f64]) -> bool {
        let Some(priors) = &self.priors else {
            return false;
        };
        (0..self.lengthscale_count()).any(|i| {
            let (prior, unit) = priors[i];
            self.free[i] && theta[i] - unit.ln() < prior.loc - 2.0 * prior.scale
        })
    }

    /// The box the space-filling starts cover under MAP: the prior's central region in ln v,
    /// from 2τ below the mode of v's density, μ − τ², to 2τ above its median, μ (the log
    /// posterior carries the density of v, whose −ln v term moves its mass below μ: for ℓ in
    /// d = 3, ℓ/D from 0.011 to 227), within the search box and widened for σ_z² up to the
    /// targets' mean square (all their variance noise); the whole box under maximum likelihood.
    fn start_box(&self) -> Result<BoxDomain> {
        let Some(priors) = &self.priors else {
            return Ok(self.domain.clone());
        };
        let n = self.domain.dim();
        let (mut lo, mut hi) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (i, (p, unit)) in priors.iter().enumerate() {
            let (a, b) = (self.domain.lo()[i], self.domain.hi()[i]);
            let c = p.loc + unit.ln();
            let mut top = c + 2.0 * p.scale;
            if i == n - 1 {
                top = top.max(self.mean_square.ln());
            }
            let bottom = c - p.scale * p.scale - 2.0 * p.scale;
            let (l, h) = (bottom.max(a), top.min(b));
            if l <= h {
                lo.push(l);
                hi.push(h);
            } else {
                lo.push(a);
                hi.push(b);
            }
        }
        BoxDomain::new(&lo, &hi)
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

/// Fits the hyperparameters of a [`FittedKernel`] and the noise σ to a warm-up data set D₀:
/// by default the **maximum a posteriori** (MAP) values under the priors of [`FitOptions`] on
/// standardised targets, optionally ([`Objective::MaximumLikelihood`]) by maximising the log
/// marginal likelihood of the targets as given (type-II maximum likelihood, Rasmussen &
/// Williams 2006 §5.4.1, Eq. 5.8–5.9). The search runs over the log-parameters ln ℓᵢ, ln s²,
/// ln σ² in the box of [`FitOptions`]; see the [module documentation](super) for the priors
/// and why.
///
/// The search ([`FitOptions`] has the counts):
/// 1. **Starts**, scored by the objective alone (one Cholesky each): the previous fit's values
///    ([`Fit::refit`]), the priors' modes and data-informed values (ℓ at the median distance
///    between inputs; σ_z at the prior's mode and at ½), then `starts` Sobol points of the
///    prior's central region (from μ − τ² − 2τ to μ + 2τ in each ln-parameter, seeded).
/// 2. **Refinement** of the best `refinements` starts by [`maximise`] (PANOC, box-constrained
///    quasi-Newton) with the analytic gradient ([`super::log_marginal_likelihood_gradient`]
///    plus the prior's), the best result kept. Under MAP the starts with a length-scale below
///    the prior's central region (μ − 2τ in ln ℓᵢ/Dᵢ), where the narrow interpolating
///    small-ℓ modes lie, are scored and refined apart (one refinement): they neither take
///    every refinement from the smooth modes (one such start scoring better in a worse basin
///    did) nor go unsearched (the posterior's maximum can lie there).
/// 3. **Large data sets** (t > `screen_size`): steps 1–2 run on `screen_size` inputs spread over
///    the data (every ⌈t/screen_size⌉-th row, in the order given); their optimum and the
///    deterministic starts are then scored on all the data and the best one refined there.
///
/// Deterministic for a given seed.
///
/// Cost: each score costs one Cholesky factor (t³/3 flops); each refinement step also K⁻¹
/// from the factor and t²/2 kernel gradients. See `benches/hyper.rs` and
/// `python/bench/fit_vs_botorch.py` for times.
///
/// Read [`Fit`] before using the result in a bound: only observations after D₀ keep the
/// guarantee.
///
/// # Errors
/// [`FitOptions::check`]; as the [`crate::points::Points`] constructors; [`Error::LengthMismatch`]
/// unless there is one target per point; [`Error::NonFinite`] for a non-finite target;
/// [`Error::InvalidParameter`] for fewer than 2 observations or a default box that is empty
/// (inputs that span no range, for ℓ; all-zero targets, for a fitted s² under maximum
/// likelihood) — set the box then (targets that are all equal are standardised by 1 under MAP,
/// as BoTorch's `Standardize` does); [`Error::NotPositiveDefinite`] if K + σ²I is not numerically positive definite at a
/// parameter value the search visits (only possible with a fixed or user-set σ too small for
/// duplicated inputs); [`Error::NonFinite`] if the objective overflows at every start (targets
/// near the largest doubles).
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
/// assert!(!fit.on_box_edge()); // the noise floor is a prior, not a box edge
/// let again = fit_hyperparameters(&options, &xs, &ys)?;
/// assert_eq!(fit, again); // deterministic
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn fit_hyperparameters<P: AsPoints + ?Sized>(
    options: &FitOptions,
    points: &P,
    targets: &[f64],
) -> Result<Fit> {
    fit_from(options, points, targets, None)
}

/// [`fit_hyperparameters`], with `previous` (log-parameters in the search's units) as the first
/// start.
fn fit_from<P: AsPoints + ?Sized>(
    options: &FitOptions,
    points: &P,
    targets: &[f64],
    previous: Option<&Fit>,
) -> Result<Fit> {
    options.check()?;
    let points = points.as_points()?;
    let raw = Data::from_points(&points, targets)?;
    let t = raw.len();
    if t < 2 {
        return Err(Error::InvalidParameter {
            name: "observations",
            value: t as f64,
            expected: "at least 2 observations",
        });
    }
    let (offset, scale) = match options.objective {
        Objective::MaximumLikelihood => (0.0, 1.0),
        Objective::Map => standardisation(targets)?,
    };
    let standardised: Vec<f64> = targets.iter().map(|y| (y - offset) / scale).collect();
    let data = Data::from_points(&points, &standardised)?;
    let p = parameterise(options, &data, scale)?;
    let n = p.domain.dim();
    let m = p.lengthscale_count();
    let previous_theta = previous.map(|fit| {
        let mut theta: Vec<f64> = fit.lengthscales().iter().map(|l| l.ln()).collect();
        theta.push((fit.variance() / (scale * scale)).ln());
        theta.push(2.0 * (fit.noise_sd() / scale).ln());
        theta
    });
    let fixed: Vec<f64> = (0..n).map(|i| p.domain.lo()[i]).collect();
    let deterministic: Vec<Vec<f64>> = p
        .deterministic_starts(previous_theta.as_deref())
        .into_iter()
        .map(|mut theta| {
            // Fixed coordinates at their value exactly.
            for i in 0..n {
                if !p.free[i] {
                    theta[i] = fixed[i];
                }
            }
            theta
        })
        .collect();
    let space_filling = p.start_box()?.space_filling(options.starts, options.seed);
    let mut evaluations = 0;

    let screen = options.screen_size.max(2);
    let mut candidates: Vec<Vec<f64>> = deterministic.clone();
    let (best_point, converged) = if t > screen {
        // Steps 1–2 on a spread subsample, then its optimum and the deterministic starts on
        // all the data.
        let stride = t.div_ceil(screen);
        let rows: Vec<usize> = (0..t).step_by(stride).collect();
        let sub_x: Vec<f64> = rows
            .iter()
            .flat_map(|&i| data.rows()[i * data.dim()..(i + 1) * data.dim()].to_vec())
            .collect();
        let sub_y: Vec<f64> = rows.iter().map(|&i| standardised[i]).collect();
        let sub_points = crate::points::Points::from_row_major(&sub_x, data.dim())?;
        let sub = Data::from_points(&sub_points, &sub_y)?;
        let mut starts: Vec<Vec<f64>> = deterministic.clone();
        starts.extend(space_filling.chunks_exact(n).map(<[f64]>::to_vec));
        let found = search_regions(&p, &sub, &starts, options.refinements, &options.refine)?;
        evaluations += found.1;
        candidates.insert(0, found.0.point);
        let best = search(&p, &data, &candidates, 1, &options.refine)?;
        evaluations += best.1;
        (best.0.point, best.0.converged)
    } else {
        candidates.extend(space_filling.chunks_exact(n).map(<[f64]>::to_vec));
        let best = search_regions(&p, &data, &candidates, options.refinements, &options.refine)?;
        evaluations += best.1;
        (best.0.point, best.0.converged)
    };
    debug_assert_eq!(best_point.len(), m + 2);

    // The values in the user's units, and the likelihood of the targets as modelled (centred
    // by the offset) there.
    let (kernel, noise_sd) = p.user(&best_point)?;
    let centred: Vec<f64> = targets.iter().map(|y| y - offset).collect();
    let user_data = Data::from_points(&points, &centred)?;
    let log_likelihood = user_data.factor(&kernel, noise_sd)?.value;
    let log_posterior = match options.objective {
        Objective::MaximumLikelihood => None,
        Objective::Map => {
            let (k, s) = p.at(&best_point)?;
            let mut g = vec![0.0; n];
            Some(data.factor(&k, s)?.value + p.log_prior(&best_point, &mut g))
        }
    };
    let (mut at_lower, mut at_upper) = (Vec::new(), Vec::new());
    for (i, &theta) in best_point.iter().enumerate() {
        if !p.free[i] {
            continue;
        }
        let (lo, hi) = (p.domain.lo()[i], p.domain.hi()[i]);
        let slack = 1e-6 * (hi - lo);
        if theta - lo <= slack {
            at_lower.push(p.name(i));
        } else if hi - theta <= slack {
            at_upper.push(p.name(i));
        }
    }
    Ok(Fit {
        kernel,
        noise_sd,
        log_likelihood,
        evaluations,
        converged,
        observations: t,
        at_lower,
        at_upper,
        offset,
        log_posterior,
    })
}

/// The offset m = mean(y) and scale s = sd(y) (with the 1/(t − 1) of an unbiased variance, as
/// BoTorch's `Standardize`); s = 1 for targets that are all equal (BoTorch's `Standardize`
/// also divides by 1 there).
fn standardisation(targets: &[f64]) -> Result<(f64, f64)> {
    let t = targets.len() as f64;
    let mean = targets.iter().sum::<f64>() / t;
    let variance = targets.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (t - 1.0);
    let sd = variance.sqrt();
    if !(sd.is_finite() && mean.is_finite()) {
        return Err(Error::NonFinite {
            what: "the targets' mean or standard deviation (they overflow)".into(),
        });
    }
    Ok((mean, if sd >= f64::MIN_POSITIVE { sd } else { 1.0 }))
}

/// [`search`] on the starts in the priors' central region (`count` refinements) and, apart, on
/// those below it (one refinement: see [`Parameterisation::below_centre`]); the better result,
/// with the evaluations of both.
fn search_regions(
    p: &Parameterisation,
    data: &Data<'_>,
    starts: &[Vec<f64>],
    count: usize,
    refine: &RefineOptions,
) -> Result<(crate::continuous::Maximum, usize)> {
    let (below, central): (Vec<Vec<f64>>, Vec<Vec<f64>>) = starts
        .iter()
        .cloned()
        .partition(|theta| p.below_centre(theta));
    if below.is_empty() || central.is_empty() {
        return search(p, data, starts, count, refine);
    }
    let mut best = search(p, data, &central, count, refine)?;
    // The starts below may all fail to score (e.g. K + σ²I not positive definite there): the
    // central search's result stands then.
    if let Ok(other) = search(p, data, &below, 1, refine) {
        best.1 += other.1;
        if other.0.value > best.0.value {
            best.0 = other.0;
        }
    }
    Ok(best)
}

/// Scores `starts` on `data` by the objective (one Cholesky each), refines the best `count`,
/// and returns the best result with the evaluations spent.
fn search(
    p: &Parameterisation,
    data: &Data<'_>,
    starts: &[Vec<f64>],
    count: usize,
    refine: &RefineOptions,
) -> Result<(crate::continuous::Maximum, usize)> {
    let n = p.domain.dim();
    let per_observation = 1.0 / data.len() as f64;
    let mut flat = Vec::with_capacity(starts.len() * n);
    let mut values = Vec::with_capacity(starts.len());
    let mut first_error = None;
    let mut scratch = vec![0.0; n];
    for theta in starts {
        let scored = p
            .at(theta)
            .and_then(|(kernel, noise_sd)| data.factor(&kernel, noise_sd));
        match scored {
            Ok(factored) => {
                let value = factored.value + p.log_prior(theta, &mut scratch);
                if value.is_finite() {
                    flat.extend_from_slice(theta);
                    values.push(value * per_observation);
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if values.is_empty() {
        return Err(first_error.unwrap_or(Error::NoArms));
    }
    let scored = values.len();
    let mut objective = |theta: &[f64]| -> Result<(f64, Vec<f64>)> {
        let (kernel, noise_sd) = p.at(theta)?;
        let factored = data.factor(&kernel, noise_sd)?;
        let g = data.gradient(&kernel, noise_sd, &factored)?;
        let mut gradient = Vec::with_capacity(n);
        gradient.extend_from_slice(&g.log_lengthscales);
        gradient.push(g.log_variance);
        gradient.push(g.log_noise_variance);
        let value = g.value + p.log_prior(theta, &mut gradient);
        gradient.iter_mut().for_each(|v| *v *= per_observation);
        Ok((value * per_observation, gradient))
    };
    let best = maximise(&p.domain, &flat, &values, count, &mut objective, refine)?;
    let evaluations = scored + best.evaluations;
    Ok((best, evaluations))
}

/// A fit is saved whole, so that a fit made once (on a warm-up set that may be gone) can be
/// stored or sent to other processes and give the same bounds.
#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for Fit {
    fn kind() -> String {
        "fit".into()
    }
    /// The kernel is rebuilt by its checked constructors (see [`FittedKernel`]'s snapshot); σ
    /// must be one that [`fit_hyperparameters`] accepts, the log likelihood (and the log
    /// posterior, if any) and the offset finite, with at least one evaluation and two
    /// observations, and each parameter reported on an edge of its box must exist in the kernel
    /// and be reported once.
    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::{ensure, rebuild_error};
        self.kernel.restore()?;
        check_noise_sd(self.noise_sd).map_err(rebuild_error("fit"))?;
        ensure(
            self.log_likelihood.is_finite()
                && self.offset.is_finite()
                && self.log_posterior.is_none_or(f64::is_finite)
                && self.evaluations >= 1
                && self.observations >= 2,
            || {
                format!(
                    "fit: log likelihood {}, log posterior {:?}, offset {}, {} evaluations, {} \
                     observations",
                    self.log_likelihood,
                    self.log_posterior,
                    self.offset,
                    self.evaluations,
                    self.observations
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

/// The median of the pairwise distances of (up to 200 spread) rows in coordinate `axis`
/// (`None`: the Euclidean distance), or `fallback` if it is zero.
fn median_distance(rows: &[f64], d: usize, axis: Option<usize>, fallback: f64) -> f64 {
    let t = rows.len() / d;
    let stride = t.div_ceil(200).max(1);
    let picked: Vec<&[f64]> = rows.chunks_exact(d).step_by(stride).collect();
    let mut distances = Vec::with_capacity(picked.len() * picked.len() / 2);
    for (i, a) in picked.iter().enumerate() {
        for b in &picked[..i] {
            let r = match axis {
                Some(k) => (a[k] - b[k]).abs(),
                None => a
                    .iter()
                    .zip(b.iter())
                    .map(|(u, v)| (u - v) * (u - v))
                    .sum::<f64>()
                    .sqrt(),
            };
            distances.push(r);
        }
    }
    if distances.is_empty() {
        return fallback;
    }
    let mid = distances.len() / 2;
    let (_, median, _) = distances.select_nth_unstable_by(mid, f64::total_cmp);
    if *median > 0.0 && median.is_finite() {
        *median
    } else {
        fallback
    }
}

/// The log box from the options and the data's scales (`data` holds the targets in the
/// search's units: standardised under MAP).
fn parameterise(options: &FitOptions, data: &Data<'_>, scale: f64) -> Result<Parameterisation> {
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
    let map = options.objective == Objective::Map;
    // Under MAP the targets are standardised: their RMS is √((t − 1)/t); under maximum
    // likelihood the RMS of the targets as given.
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
    let median: Vec<f64> = if per_dimension {
        (0..d)
            .map(|k| median_distance(rows, d, Some(k), spans[k].max(f64::MIN_POSITIVE)))
            .collect()
    } else {
        vec![median_distance(
            rows,
            d,
            None,
            largest.max(f64::MIN_POSITIVE),
        )]
    };
    // Length-scales: [10⁻³ D, 10³ D] under MAP (the prior keeps the MAP inside), the old
    // [10⁻² D, 10 D] under maximum likelihood.
    let (ell_lo, ell_hi) = if map { (1e-3, 1e3) } else { (1e-2, 10.0) };
    let mut original = Vec::with_capacity(spans.len() + 2);
    for &span in &spans {
        original.push(bounds_or(
            options.lengthscale_bounds,
            (ell_lo * span, ell_hi * span),
            "lengthscale_bounds",
            "explicit length-scale bounds: the inputs span no range (or an overflowing one)",
        )?);
    }
    // Given boxes and fixed values are in the user's units; the search's are divided by s.
    let (s, s2) = (scale, scale * scale);
    let variance = match options.variance {
        OutputVariance::Fixed(v) => (v / s2, v / s2),
        OutputVariance::Fitted => {
            let default = if map {
                (1e-3, 1e3)
            } else {
                (1e-2 * rms * rms, 1e2 * rms * rms)
            };
            let (lo, hi) = bounds_or(
                options.variance_bounds.map(|(a, b)| (a / s2, b / s2)),
                default,
                "variance_bounds",
                "explicit output-variance bounds: the targets are all zero (or overflow)",
            )?;
            (lo, hi)
        }
    };
    original.push(variance);
    let noise = match options.noise {
        Noise::Fixed(sigma) => (sigma / s, sigma / s),
        Noise::Fitted => {
            // The floor keeps K + σ²I well conditioned (condition number at most
            // 1 + t·s_max²/σ² ≤ 1 + 10¹⁰ t): a box edge for conditioning, far below the
            // prior's mass under MAP.
            let (floor, top) = if map {
                let floor = 1e-4f64.max(1e-5 * variance.1.sqrt());
                (floor, 10f64.max(floor))
            } else {
                let floor = (1e-4 * rms).max(1e-5 * variance.1.sqrt());
                (floor, (3.0 * rms).max(floor))
            };
            bounds_or(
                options.noise_bounds.map(|(a, b)| (a / s, b / s)),
                (floor, top),
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
    // Each ℓᵢ's unit: its extent Dᵢ (the geometric centre of its box for inputs with no extent
    // and a box given).
    let units: Vec<f64> = spans
        .iter()
        .zip(&original)
        .map(|(&span, &(lo, hi))| if span > 0.0 { span } else { (lo * hi).sqrt() })
        .collect();
    let priors = map.then(|| {
        let ell = options
            .lengthscale_prior
            .unwrap_or_else(|| LogNormal::dimension_scaled(d));
        let mut priors: Vec<(LogNormal, f64)> = units.iter().map(|&u| (ell, u)).collect();
        priors.push((options.variance_prior, 1.0));
        // The noise prior is on the noise-to-signal ratio σ²/s², as BoTorch's is (its signal
        // variance is 1 on its standardised scale): with s² fixed, v = σ_z²/s_z²; with s²
        // fitted, on σ_z² (the signal variance then has its own prior, centred on sd(y)²).
        let noise_unit = match options.variance {
            OutputVariance::Fixed(v) => v / s2,
            OutputVariance::Fitted => 1.0,
        };
        priors.push((options.noise_prior, noise_unit));
        priors
    });
    Ok(Parameterisation {
        family: options.family,
        per_dimension,
        domain: BoxDomain::new(&lo, &hi)?,
        original,
        free,
        fixed_variance: match options.variance {
            OutputVariance::Fixed(v) => Some(v / s2),
            OutputVariance::Fitted => None,
        },
        fixed_noise: match options.noise {
            Noise::Fixed(sigma) => Some(sigma / s),
            Noise::Fitted => None,
        },
        given_variance: match options.variance {
            OutputVariance::Fixed(v) => Some(v),
            OutputVariance::Fitted => None,
        },
        given_noise: match options.noise {
            Noise::Fixed(sigma) => Some(sigma),
            Noise::Fitted => None,
        },
        given_variance_bounds: options.variance_bounds,
        given_noise_bounds: options.noise_bounds,
        priors,
        scale,
        spans: units,
        dim: d,
        mean_square: (rms * rms).max(f64::MIN_POSITIVE),
        median_distance: median,
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

        let ml = FitOptions::new().objective(Objective::MaximumLikelihood);
        let p = parameterise(&ml, &data, 1.0).unwrap();
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
        let options = ml
            .lengthscales(LengthScales::PerDimension)
            .variance(OutputVariance::Fitted)
            .noise(Noise::Fixed(0.3));
        let p = parameterise(&options, &data, 1.0).unwrap();
        assert_eq!(p.original[..2], [(0.02, 20.0), (0.02, 20.0)]);
        let (v_lo, v_hi) = p.original[2];
        assert!((v_lo - 0.125).abs() < 1e-15 && (v_hi - 1250.0).abs() < 1e-12);
        assert_eq!(p.original[3], (0.3, 0.3));
        assert_eq!(p.free, [true, true, true, false]);
        let (kernel, sigma) = p.at(p.domain.lo()).unwrap();
        assert_eq!(sigma, 0.3); // the fixed value exactly, not exp(ln 0.3)
        assert_eq!(kernel.lengthscales(), [0.02, 0.02]);

        let options = ml.noise(Noise::Fitted).variance(OutputVariance::Fitted);
        let p = parameterise(&options, &data, 1.0).unwrap();
        assert_eq!(p.original[2].0, (1e-4 * rms).max(1e-5 * 1250f64.sqrt()));
    }
}
