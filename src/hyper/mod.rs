//! Fitting kernel hyperparameters by marginal likelihood, and using them without losing the
//! bounds' guarantees.
//!
//! Every confidence bound of the crate needs a kernel (its length-scale ℓ), the noise scale σ
//! and an RKHS norm bound B. This module gives a principled path to the first two:
//!
//! - **What can be fitted.** The length-scales ℓ (one shared, or one per coordinate), the noise
//!   standard deviation σ and, optionally, the output variance s² of a [`FittedKernel`]
//!   (s² · RBF or s² · Matérn of any ν), by [`fit_hyperparameters`]: a multi-start
//!   box-constrained quasi-Newton search over the log-parameters with the analytic gradient of
//!   the log marginal likelihood of a GP (Rasmussen & Williams 2006 Eq. 2.30, Eq. 5.9:
//!   [`log_marginal_likelihood`], [`log_marginal_likelihood_gradient`]).
//! - **What is maximised: the posterior, by default.** Type-II maximum likelihood on a few
//!   points is ill-posed: on 2d + 2 warm-up points it put σ on the floor of its box in 13 of 15
//!   runs, and the likelihood of Bayesian-optimisation data is multimodal (a small-ℓ mode that
//!   interpolates the noise with σ → 0). The default ([`Objective::Map`]) is the maximum a
//!   posteriori value, as BoTorch's `SingleTaskGP` with `fit_gpytorch_mll` computes it:
//!   1. the targets are **standardised**, z = (y − m)/s_y with m their mean and s_y their standard
//!      deviation (BoTorch's `Standardize`; s_y = 1 if they are all equal, as there), so that
//!      the search's boxes and a fitted s²'s prior mean the same thing whatever the units of y;
//!   2. **priors** (log-normal, with the density of the parameter itself, as GPyTorch's
//!      `LogNormalPrior`; see [`LogNormal`]):
//!      - ℓᵢ/Dᵢ ~ LN(√2 + ½ ln d, √3), the dimension-scaled prior of Hvarfner, Hellsten &
//!        Nardi (2024, "Vanilla Bayesian Optimization Performs Great in High Dimensions",
//!        ICML, §4), BoTorch's default since 0.12. BoTorch normalises the inputs to the unit
//!        cube of the search box; this crate takes raw inputs and does not know the box, so
//!        the prior is on ℓᵢ over the **extent Dᵢ of the data** in coordinate i (the largest
//!        extent for a shared ℓ): a fit is equivariant under rescaling the inputs, and for
//!        inputs spread over the unit cube it is BoTorch's prior. The prior's mode is
//!        exp(√2 + ½ ln d − 3)·D ≈ 0.24·√d·D, its median 4.1·√d·D; it keeps ℓ off the
//!        interpolating small-ℓ mode unless the data insist.
//!      - the noise-to-signal ratio σ²/s² ~ LN(−4, 1), BoTorch's noise prior since 0.12
//!        (`get_gaussian_likelihood_with_lognormal_prior`; mode σ/s ≈ 0.08, median 0.14, 95 %
//!        of its mass for σ/s in [0.05, 0.36]): **the noise floor is this prior**, which pulls
//!        σ away from 0 smoothly, not a box edge. BoTorch puts it on the noise variance of the
//!        standardised targets, whose signal variance is 1 (its `SingleTaskGP` has no output
//!        scale): a prior on σ²/s². Here s² is fixed (1 by default, in the user's units, which
//!        the bounds assume), so the prior is stated on σ²/s² with that s², **not** on
//!        σ²/sd(y)². The sample standard deviation of 2d + 2 correlated points is a poor
//!        estimate of the signal's scale (0.26–0.39 on three draws with s = 1 of the acceptance
//!        test), and a prior scaled by it followed it: σ̂ came out 4–5 times too small on
//!        those draws (within a factor 1.7 with the prior on σ²/s²). With s² fitted, the
//!        signal has its own prior (below) and the noise prior is on σ_z² = σ²/sd(y)², as
//!        BoTorch's with an output scale. The older BoTorch priors
//!        (ℓ ~ Gamma(3, 6), σ² ~ Gamma(1.1, 0.05)) are not used: Gamma(1.1, 0.05) barely
//!        penalises σ → 0 (0.1·ln σ² nats), the collapse this replaces, and Gamma(3, 6) is not
//!        dimension-aware. Data much noisier than σ/s ≈ 0.4 need more points to overrule the
//!        prior; set [`FitOptions::noise_prior`] if the noise is known to be large.
//!      - a fitted output variance: s_z² = s²/s_y² ~ LN(0, 1) (median 1: the data's variance).
//!   3. the values are returned in the **user's units**: ℓ unchanged, σ = σ_z·s_y, a fitted
//!      s² = s_z²·s_y²; a fixed s² (default 1, which the bounds assume) and a fixed σ are held at
//!      the value given, in the user's units (s_z² = 1/s_y² in the search).
//!
//!   The boxes are wide (ℓ ∈ [10⁻³, 10³]·D, σ_z ∈ [10⁻⁴, 10]) so that the posterior's maximum
//!   lies inside; the lower edge of σ only guards the conditioning of K + σ²I. A fit that still
//!   ends on an edge says which parameter and which edge ([`Fit::at_lower`], [`Fit::at_upper`],
//!   [`Fit::edge_report`]). The search scores deterministic starts (the priors' modes, the
//!   median distance between inputs, a noisy start, a previous fit's values: [`Fit::refit`])
//!   and Sobol starts in the priors' central region, then refines the best
//!   ([`fit_hyperparameters`]). [`Objective::MaximumLikelihood`] keeps the plain
//!   maximum-likelihood fit of the targets as given (zero mean, no prior, the old boxes).
//! - **What stays valid.** A bound built with values fitted on a warm-up set D₀ keeps its
//!   guarantee for the observations *after* D₀: given D₀ the fitted values (and the mean and
//!   scale the fit standardised by, and the priors, which do not look at later data) are fixed,
//!   which is all the theorems (Flynn & Reeb 2024 Thm 4.4 and the bounds built on it; Abbasi-Yadkori
//!   2012) ask of their kernel and σ — *provided* the fitted values satisfy the assumptions:
//!   σ at least the true sub-Gaussian scale (the fitted σ is an estimate and may fall below
//!   it; inflate it for a margin: [`Fit::bound_with_sigma`]), and f in the RKHS of the fitted kernel with norm at most B.
//!   Reusing D₀ inside the bound breaks the conditioning; [`Fit::bound`] therefore starts the
//!   bound empty, with the fitted kernel and σ. A refit ([`Fit::refit`]) on D₀ ∪ D₁ gives
//!   values that depend on D₁ too: a bound built from it may only use the observations after
//!   D₁.
//! - **What cannot be fitted: B.** The likelihood says nothing about a bound on ‖f‖_H that
//!   holds with certainty; [`crate::bound::AdaptiveNorm`] starts from a guess and doubles B
//!   whenever the data refute it. For the same reason s² is held at 1 by default: the bounds assume
//!   k(x, x) ≤ 1, and fitting s² changes what a given B means ([`FitOptions`]).
//! - **Is a given σ plausible?** [`estimate_noise`] estimates the noise from replicated inputs
//!   (with an exact χ² interval under Gaussian noise) and from the residuals of a kernel
//!   smoother, as diagnostics (see [`noise`]).
//!
//! # Examples
//! ```
//! use kernel_bandits::bound::{BoundConfig, BoundKind, BoundParams, ConfidenceBound};
//! use kernel_bandits::hyper::{FitOptions, KernelFamily, fit_hyperparameters};
//! // Warm-up: 40 noisy observations of an unknown function on [0, 1]².
//! let xs: Vec<[f64; 2]> = (0..40)
//!     .map(|i| [((i * 7) % 40) as f64 / 39.0, ((i * 13) % 40) as f64 / 39.0])
//!     .collect();
//! let ys: Vec<f64> = xs
//!     .iter()
//!     .enumerate()
//!     .map(|(i, x)| (4.0 * x[0]).sin() - x[1] + 0.1 * (((i * 37) % 11) as f64 / 5.0 - 1.0))
//!     .collect();
//! let fit = fit_hyperparameters(&FitOptions::new().family(KernelFamily::Rbf), &xs, &ys)?;
//! // The bound starts empty: only later observations keep the guarantee.
//! let config = BoundConfig::new().params(BoundParams::new().norm_bound(3.0));
//! let mut bound = fit.bound(BoundKind::Dmm, &config)?;
//! assert_eq!(bound.len(), 0);
//! bound.observe(&[0.5, 0.5], 0.4)?; // a new observation
//! # Ok::<(), kernel_bandits::Error>(())
//! ```

mod fit;
mod kernel;
mod likelihood;
pub mod noise;

pub use fit::{
    Fit, FitOptions, HyperParameter, LengthScales, LogNormal, Noise, Objective, OutputVariance,
    fit_hyperparameters,
};
pub use kernel::{FittedKernel, KernelFamily};
pub use likelihood::{
    LikelihoodGradient, log_marginal_likelihood, log_marginal_likelihood_gradient,
};
pub use noise::{
    NoiseEstimate, NoiseVerdict, ReplicateEstimate, ResidualEstimate, estimate_noise,
    replicate_noise, residual_noise,
};
