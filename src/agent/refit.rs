//! Refitting a [`UcbAgent`]'s kernel and noise level during a run, and its recommendation.
//!
//! # What a refit may claim
//!
//! The bounds of Flynn & Reeb (2024, Thm 4.1 and Eq. 8) need the kernel k and the noise level
//! σ fixed *before* the observations they condition on: the martingale mixture is built from k
//! and σ, and Ville's inequality holds for a mixture chosen in advance. A kernel fitted on the
//! data by maximum likelihood is not fixed in advance. [`UcbAgent::refit`] therefore offers two
//! modes ([`RefitMode`]):
//!
//! - [`RefitMode::Strict`]: the rebuilt bound conditions only on observations made *after* the
//!   refit. The fitted k and σ are functions of the earlier data alone, so given those data they
//!   are fixed, and the theorems apply to the later data as they stand: with probability
//!   ≥ 1 − δ (conditionally on the past, hence also unconditionally), the bound is valid at every
//!   later round at once (for [`crate::bound::AdaptiveNorm`], with its own caveat on B). The
//!   earlier data still inform the fit, but not the bound.
//! - [`RefitMode::AllData`]: the rebuilt bound conditions on every observation, those the kernel
//!   was fitted on included. **No guarantee is claimed**: k and σ were chosen from the same data,
//!   and the bound is then a heuristic, as a Gaussian-process posterior with fitted
//!   hyperparameters is (BoTorch refits on all data every iteration). It is what Bayesian
//!   optimisation usually wants.
//!
//! Either way the refit keeps the bound's kind, B (for [`crate::bound::AdaptiveNorm`]: its
//! current level, B₀, δ, cap and doubling history), δ and c; only k and σ change, so the
//! regularisers a = m·σ²/c follow the new σ. Pending evaluations are kept.

use super::UcbAgent;
use crate::bound::{AdaptiveNorm, AdjustableNorm, AnyBound, BoundParams, CheckedParams, Dmm};
use crate::bound::{Amm, Cmm, ConfidenceBound};
use crate::error::{Error, Result};
use crate::hyper::{Fit, FitOptions, FittedKernel, fit_hyperparameters};
use crate::kernel::Kernel;
use crate::points::Points;

/// Which observations a refitted bound conditions on (see the module documentation of
/// [`UcbAgent::refit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RefitMode {
    /// Only those made after the refit: the bounds on those are valid at every later round at
    /// once with probability ≥ 1 − δ (Flynn & Reeb 2024 Thm 4.1 with k and σ fixed given the
    /// past). The bound starts empty.
    Strict,
    /// All of them, those the fit used included: no guarantee is claimed (k and σ were chosen
    /// from the same data). What Bayesian optimisation usually does. The default.
    #[default]
    AllData,
}

/// Options of [`UcbAgent::refit`]: how to fit ([`FitOptions`]) and which data the rebuilt bound
/// uses ([`RefitMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RefitOptions {
    /// The maximum-likelihood fit ([`fit_hyperparameters`]), on every observation the agent
    /// absorbed.
    pub fit: FitOptions,
    /// Which observations the rebuilt bound conditions on.
    pub mode: RefitMode,
}

impl RefitOptions {
    /// The default fit, in `mode`.
    pub fn new(mode: RefitMode) -> Self {
        Self {
            fit: FitOptions::new(),
            mode,
        }
    }

    /// Replaces the fit options.
    pub fn fit(mut self, fit: FitOptions) -> Self {
        self.fit = fit;
        self
    }
}

/// Every observation an agent absorbed through [`super::BanditAgent::update`], in order: the
/// inputs row-major and the targets.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Observed {
    points: Vec<f64>,
    targets: Vec<f64>,
}

impl Observed {
    pub(super) fn push(&mut self, x: &[f64], y: f64) {
        self.points.extend_from_slice(x);
        self.targets.push(y);
    }

    /// The number of observations.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Their dimension (`None` before the first).
    pub fn dim(&self) -> Option<usize> {
        (!self.is_empty()).then(|| self.points.len() / self.targets.len())
    }

    /// The inputs, row-major (len × dim).
    pub fn points(&self) -> &[f64] {
        &self.points
    }

    /// The input of observation `i`.
    ///
    /// # Panics
    /// If `i ≥ len`.
    pub fn point(&self, i: usize) -> &[f64] {
        let d = self.dim().unwrap_or(0);
        &self.points[i * d..(i + 1) * d]
    }

    /// The targets.
    pub fn targets(&self) -> &[f64] {
        &self.targets
    }

    /// The inputs as [`Points`].
    fn as_points(&self) -> Result<Points<'_>> {
        Points::from_row_major(&self.points, self.dim().unwrap_or(1))
    }

    #[cfg(feature = "serde")]
    pub(super) fn check(&self) -> Result<()> {
        crate::snapshot::ensure(
            self.targets.is_empty() && self.points.is_empty()
                || (!self.targets.is_empty()
                    && !self.points.is_empty()
                    && self.points.len().is_multiple_of(self.targets.len())),
            || "observed inputs and targets of inconsistent lengths".into(),
        )?;
        crate::snapshot::ensure_finite(&self.points, "observed inputs")?;
        crate::snapshot::ensure_finite(&self.targets, "observed targets")
    }
}

/// The point an agent recommends as the maximiser of f ([`UcbAgent::recommend`]).
///
/// Today: the observed input with the largest lower confidence bound (ties to the earliest),
/// the pessimistic choice of Flynn & Reeb (2024 §5) — where the bound is valid, f there is at
/// least `lcb`, and max f is at most the largest UCB anywhere, so `lcb` certifies a value, not
/// the gap. `index` is the position among the candidates (here: the observations, in order).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Recommendation {
    /// The recommended point.
    pub x: Vec<f64>,
    /// Its index among the candidates (the observations, in the order absorbed).
    pub index: usize,
    /// Its lower confidence bound.
    pub lcb: f64,
    /// Its posterior mean.
    pub mean: f64,
    /// Its upper confidence bound.
    pub ucb: f64,
}

/// A bound that can be rebuilt, empty, on a refitted kernel and noise level, keeping its kind
/// and every other setting (B, δ, c; DMM's grid multipliers; [`AdaptiveNorm`]'s level and
/// history). Implemented for AMM, DMM and CMM (and [`AnyBound`], [`AdaptiveNorm`] over them)
/// on any kernel type a [`FittedKernel`] converts into (e.g. [`FittedKernel`] itself).
pub trait Refit: ConfidenceBound + Sized {
    /// The bound of the same kind and settings on `kernel` with noise level `sigma`, holding no
    /// observations.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for kinds other than AMM, DMM and CMM (and [`AdaptiveNorm`] over
    /// those); [`Error::InvalidParameter`] for a σ the bound refuses.
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> Result<Self>;
}

/// `params` with σ replaced; B, δ and c kept (a0 = σ²/c follows σ).
fn with_sigma(params: &CheckedParams, sigma: f64) -> BoundParams {
    BoundParams::new()
        .sigma(sigma)
        .norm_bound(params.norm_bound())
        .delta(params.delta())
        .scale(params.scale())
}

impl<K: Kernel + From<FittedKernel>> Refit for Amm<K> {
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> Result<Self> {
        Amm::new(kernel.into(), with_sigma(self.params(), sigma))
    }
}

impl<K: Kernel + From<FittedKernel>> Refit for Dmm<K> {
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> Result<Self> {
        // The grid is multipliers·σ²/c: keep the multipliers.
        let a0 = self.params().mixture_regulariser();
        let multipliers: Vec<f64> = self
            .posterior()
            .regularisers()
            .map(|a| {
                let m = a / a0;
                if (m - 1.0).abs() <= 1e-12 { 1.0 } else { m }
            })
            .collect();
        Dmm::with_grid(
            kernel.into(),
            with_sigma(self.params(), sigma),
            &multipliers,
        )
    }
}

impl<K: Kernel + From<FittedKernel>> Refit for Cmm<K> {
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> Result<Self> {
        Cmm::new(kernel.into(), with_sigma(self.params(), sigma))
    }
}

impl<K: Kernel + From<FittedKernel>> Refit for AnyBound<K> {
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> Result<Self> {
        match self {
            AnyBound::Amm(b) => b.refitted(kernel, sigma).map(AnyBound::Amm),
            AnyBound::Dmm(b) => b.refitted(kernel, sigma).map(AnyBound::Dmm),
            AnyBound::Cmm(b) => b.refitted(kernel, sigma).map(AnyBound::Cmm),
            other => Err(Error::Unsupported {
                what: format!(
                    "refitting the {} bound (only AMM, DMM and CMM can be rebuilt on a refitted \
                     kernel)",
                    other.kind()
                ),
            }),
        }
    }
}

impl<B: Refit + AdjustableNorm> Refit for AdaptiveNorm<B> {
    /// The inner bound refitted, at this wrapper's current level, with B₀, δ, the cap and the
    /// doubling history kept (a refutation is a fact about data seen: levels never go back).
    fn refitted(&self, kernel: FittedKernel, sigma: f64) -> Result<Self> {
        self.with_inner(self.inner().refitted(kernel, sigma)?)
    }
}

impl<B: Refit> UcbAgent<B> {
    /// Refits the kernel's hyperparameters and σ on every observation the agent absorbed
    /// ([`fit_hyperparameters`] with `options.fit`) and rebuilds the bound in place: same kind,
    /// same B, δ and c (for [`AdaptiveNorm`]: its current level and doubling history), on the
    /// new kernel and σ; in [`RefitMode::Strict`] empty (only later observations enter it, and
    /// its guarantee holds for them), in [`RefitMode::AllData`] on every observation (no
    /// guarantee). Pending evaluations are kept; a declared arm set
    /// ([`UcbAgent::with_arm_set`]) is fixed again on the new bound, a detected one is
    /// forgotten (the next repeat detects it again). Returns the fit.
    ///
    /// # Which data the bound may use
    ///
    /// Flynn & Reeb (2024, Thm 4.1, Eq. 8) need k and σ fixed before the observations the
    /// bound conditions on. After a strict refit they are (they are functions of the earlier
    /// data), so with probability ≥ 1 − δ the rebuilt bound is valid at every later round at
    /// once (for [`AdaptiveNorm`], with the caveat on levels below ‖f‖_H). After an all-data
    /// refit the kernel was chosen from the data the bound uses and **no guarantee is
    /// claimed**: the bounds are then a heuristic, as a GP posterior with fitted
    /// hyperparameters is.
    ///
    /// # Errors
    /// As [`fit_hyperparameters`] (fewer than 2 observations, invalid options, a failed fit),
    /// as [`Refit::refitted`] (a kind that cannot be rebuilt), and as
    /// [`ConfidenceBound::observe_many`]. The agent is unchanged on error.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::agent::{RefitMode, RefitOptions};
    /// use kernel_bandits::bound::{AdaptiveNorm, BoundConfig, BoundKind};
    /// use kernel_bandits::hyper::FittedKernel;
    /// use kernel_bandits::hyper::KernelFamily;
    /// use kernel_bandits::prelude::*;
    /// let kernel = FittedKernel::shared(KernelFamily::Matern { nu: 2.5 }, 0.3, 1.0)?;
    /// let config = BoundConfig::new().params(BoundParams::new().sigma(0.1).norm_bound(1.0));
    /// let bound = AdaptiveNorm::new(BoundKind::Dmm.build(kernel, &config)?)?;
    /// let mut agent = UcbAgent::new(bound);
    /// for i in 0..12 {
    ///     let x = [i as f64 / 11.0];
    ///     agent.update(&x, (5.0 * x[0]).sin())?;
    /// }
    /// let fit = agent.refit(&RefitOptions::new(RefitMode::AllData))?;
    /// assert_eq!(agent.bound().len(), 12); // every observation
    /// assert_eq!(fit.observations(), 12);
    /// agent.refit(&RefitOptions::new(RefitMode::Strict))?;
    /// assert_eq!(agent.bound().len(), 0); // only later ones
    /// assert_eq!(agent.observed().len(), 12);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn refit(&mut self, options: &RefitOptions) -> Result<Fit> {
        let points = self.observed.as_points()?;
        let fit = fit_hyperparameters(&options.fit, &points, self.observed.targets())?;
        let mut bound = self
            .bound()
            .refitted(fit.kernel().clone(), fit.noise_sd())?;
        if options.mode == RefitMode::AllData {
            bound.observe_many(&points, self.observed.targets())?;
        }
        let (remembered, len) = self.remembered();
        if self.policy() == super::ArmSetPolicy::Declared && len > 0 {
            // The declared set is kept, on the new bound.
            let arms = Points::from_row_major(&remembered, remembered.len() / len)?;
            bound.fix_arms(&arms, None)?;
        } else {
            // Detection starts afresh: the new bound keeps no arms.
            self.restore_remembered((Vec::new(), 0));
        }
        *self.bound_mut() = bound;
        Ok(fit)
    }
}

impl<B: ConfidenceBound> UcbAgent<B> {
    /// Every observation the agent absorbed through [`super::BanditAgent::update`], in order
    /// (including those a strict refit keeps out of the bound, and those removed from the
    /// bound through [`UcbAgent::bound_mut`]).
    pub fn observed(&self) -> &Observed {
        &self.observed
    }

    /// Records an observation in [`UcbAgent::observed`] without the bound seeing it: the
    /// initial design of a strict run ([`crate::optimise`]).
    pub(crate) fn record_unbound(&mut self, x: &[f64], y: f64) {
        self.observed.push(x, y);
    }

    /// The observed input with the largest lower confidence bound under the current bound
    /// (ties to the earliest), with its bounds: see [`Recommendation`].
    ///
    /// # Errors
    /// [`Error::NoArms`] before the first observation; as [`ConfidenceBound::evaluate`].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().sigma(0.1).norm_bound(2.0);
    /// let mut agent = UcbAgent::new(Dmm::new(Rbf::new(0.3)?, params)?);
    /// for x in [0.1, 0.5, 0.9] {
    ///     agent.update(&[x], 1.0 - (x - 0.5f64).powi(2))?;
    /// }
    /// let best = agent.recommend()?;
    /// assert_eq!((best.x.as_slice(), best.index), ([0.5].as_slice(), 1));
    /// assert!(best.lcb <= best.mean && best.mean <= best.ucb);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn recommend(&self) -> Result<Recommendation> {
        if self.observed.is_empty() {
            return Err(Error::NoArms);
        }
        let bounds = self.bound().evaluate(&self.observed.as_points()?)?;
        let mut best = 0;
        for (i, &l) in bounds.lcb.iter().enumerate() {
            if l > bounds.lcb[best] || bounds.lcb[best].is_nan() && !l.is_nan() {
                best = i;
            }
        }
        Ok(Recommendation {
            x: self.observed.point(best).to_vec(),
            index: best,
            lcb: bounds.lcb[best],
            mean: bounds.mean[best],
            ucb: bounds.ucb[best],
        })
    }
}
