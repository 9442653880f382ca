//! AY-GP-UCB: the self-normalised bound of Abbasi-Yadkori (2012).

use super::{BoundParams, CheckedParams, ConfidenceBound, forward_posterior};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// AY-GP-UCB (Abbasi-Yadkori 2012 Thm 3.11, as restated in Flynn & Reeb 2024 App. C.2), regulariser λ:
///
/// U(x) = μ_λ(x) + ((σ√(ld_λ + 2 ln(1/δ)) + √λ B)/√λ) ρ_λ(x); the LCB is the mirror image.
///
/// λ defaults to σ²/c (the paper's pairing, under which AMM-UCB is strictly tighter,
/// Thm 6.3); set it with [`BoundParams::lambda`].
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let ay = Ay::new(Rbf::new(0.5)?, BoundParams::new().sigma(0.1).norm_bound(10.0))?;
/// let b = ay.bounds(&[[0.3]])?;
/// let prior = (0.1 * (2.0 * (1.0 / 0.01f64).ln()).sqrt() + 0.1 * 10.0) / 0.1;
/// assert!((b.ucb[0] - prior).abs() < 1e-12);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ay<K> {
    posterior: ExactPosterior<K>,
    params: CheckedParams,
}

impl<K: Kernel> Ay<K> {
    /// AY-GP-UCB for `kernel` with σ, B, δ and λ (default σ²/c).
    ///
    /// # Errors
    /// Invalid parameters (see [`BoundParams::check`]).
    pub fn new(kernel: K, params: BoundParams) -> Result<Self> {
        let params = params.check()?;
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &[params.lambda()])?,
            params,
        })
    }

    /// The validated parameters.
    pub fn params(&self) -> &CheckedParams {
        &self.params
    }

    /// The underlying exact posterior (regulariser λ).
    pub fn posterior(&self) -> &ExactPosterior<K> {
        &self.posterior
    }

    /// (σ√(ld_λ + 2 ln(1/δ)) + √λ B)/√λ, the current multiplier of ρ_λ(x).
    pub fn width(&self) -> f64 {
        let p = &self.params;
        let sqrt_lambda = p.lambda().sqrt();
        let ld = self.posterior.log_det(0);
        (p.sigma() * (ld + 2.0 * p.log_inv_delta()).sqrt() + sqrt_lambda * p.norm_bound())
            / sqrt_lambda
    }
}

impl<K: Kernel> ConfidenceBound for Ay<K> {
    fn name(&self) -> &'static str {
        "ay"
    }

    forward_posterior!(|b| widths: [b.width()], mean: 0);
}

#[cfg(feature = "serde")]
super::exact_snapshot!(Ay, "ay", |b| {
    b.params.restore()?;
    super::same_regularisers(&b.posterior, &[b.params.lambda()])
});
