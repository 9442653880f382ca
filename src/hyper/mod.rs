//! Fitting kernel hyperparameters by marginal likelihood, and using them without losing the
//! bounds' guarantees.
//!
//! Every confidence bound of the crate needs a kernel (its length-scale ℓ), the noise scale σ
//! and an RKHS norm bound B. This module gives a principled path to the first two:
//!
//! - **What can be fitted.** The length-scales ℓ (one shared, or one per coordinate), the noise
//!   standard deviation σ and, optionally, the output variance s² of a [`FittedKernel`]
//!   (s² · RBF or s² · Matérn of any ν), by maximising the log marginal likelihood of a
//!   zero-mean GP (Rasmussen & Williams 2006 Eq. 2.30, §5.4.1) with its analytic gradient
//!   (Eq. 5.9): [`log_marginal_likelihood`], [`log_marginal_likelihood_gradient`] and
//!   [`fit_hyperparameters`], a multi-start box-constrained quasi-Newton search over the
//!   log-parameters.
//! - **What stays valid.** A bound built with values fitted on a warm-up set D₀ keeps its
//!   guarantee for the observations *after* D₀: given D₀ the fitted values are fixed, which is
//!   all the theorems (Flynn & Reeb 2024 Thm 4.4 and the bounds built on it; Abbasi-Yadkori
//!   2012) ask of their kernel and σ — *provided* the fitted values satisfy the assumptions:
//!   σ at least the true sub-Gaussian scale (the fitted σ is an estimate and may fall below
//!   it; inflate it for a margin), and f in the RKHS of the fitted kernel with norm at most B.
//!   Reusing D₀ inside the bound breaks the conditioning; [`Fit::bound`] therefore starts the
//!   bound empty, with the fitted kernel and σ.
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
    Fit, FitOptions, HyperParameter, LengthScales, Noise, OutputVariance, fit_hyperparameters,
};
pub use kernel::{FittedKernel, KernelFamily};
pub use noise::{
    NoiseEstimate, NoiseVerdict, ReplicateEstimate, ResidualEstimate, estimate_noise,
    replicate_noise, residual_noise,
};
pub use likelihood::{
    LikelihoodGradient, log_marginal_likelihood, log_marginal_likelihood_gradient,
};
