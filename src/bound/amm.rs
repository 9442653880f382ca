//! AMM-UCB: the analytic martingale-mixture bound.

use super::mixture::mixture_width;
use super::{BoundParams, CheckedParams, ConfidenceBound, forward_posterior};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// AMM-UCB (Flynn & Reeb 2024 Cor. 4.6): U(x) = μ_{a0}(x) + (R̃_{a0}/√a0) ρ_{a0}(x) with a0 = σ²/c and
/// (Lemma C.2) R̃_{a0}² = σ² ld_{a0} + σ²B²/c + 2σ² ln(1/δ); the LCB is the mirror image.
///
/// With no data U(x) = √(B² + 2c ln(1/δ)) · √k(x, x).
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let amm = Amm::new(Rbf::new(0.5)?, BoundParams::new().sigma(0.1).norm_bound(10.0))?;
/// let b = amm.bounds(&[[0.3, 0.3]])?;
/// let prior = (100.0 + 2.0 * (1.0 / 0.01f64).ln()).sqrt();
/// assert!((b.ucb[0] - prior).abs() < 1e-12);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Amm<K> {
    posterior: ExactPosterior<K>,
    params: CheckedParams,
}

impl<K: Kernel> Amm<K> {
    /// AMM-UCB for `kernel` with the parameters σ, B, δ, c.
    ///
    /// # Errors
    /// Invalid parameters (see [`BoundParams::check`]).
    pub fn new(kernel: K, params: BoundParams) -> Result<Self> {
        let params = params.check()?;
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &[params.mixture_regulariser()])?,
            params,
        })
    }

    /// The validated parameters.
    pub fn params(&self) -> &CheckedParams {
        &self.params
    }

    /// The underlying exact posterior (regulariser a0).
    pub fn posterior(&self) -> &ExactPosterior<K> {
        &self.posterior
    }

    /// R̃_{a0}/√a0, the current multiplier of ρ_{a0}(x).
    pub fn width(&self) -> f64 {
        mixture_width(&self.params, &self.posterior, 0, 0)
    }
}

impl<K: Kernel> ConfidenceBound for Amm<K> {
    fn name(&self) -> &'static str {
        "amm"
    }

    /// R̃² at a0 only, which Lemma C.2 makes positive: AMM cannot see misspecification.
    fn diagnostics(&self) -> super::Diagnostics {
        super::mixture::mixture_diagnostics(&self.params, &self.posterior, 0..1, 0)
    }

    forward_posterior!(|b| widths: [b.width()], mean: 0);
}

#[cfg(feature = "serde")]
super::exact_snapshot!(Amm, "amm", |b| {
    b.params.restore()?;
    super::same_regularisers(&b.posterior, &[b.params.mixture_regulariser()])
});
