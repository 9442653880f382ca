//! IGP-UCB: the improved GP-UCB bound of Chowdhury & Gopalan (2017).

use super::{BoundParams, CheckedParams, ConfidenceBound, forward_posterior};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// IGP-UCB (Chowdhury & Gopalan 2017 Thm 2, as restated in Flynn & Reeb 2024 App. C.2), η > 0:
///
/// U(x) = μ_{1+η}(x) + (σ√(ld_{1+η} + tη + 2 ln(1/δ)) + B) ρ_{1+η}(x); the LCB is the mirror
/// image. The paper's default is η = 2/T ([`BoundParams::horizon`]).
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let params = BoundParams::new().sigma(0.1).norm_bound(10.0).horizon(1000);
/// let igp = Igp::new(Rbf::new(0.5)?, params)?;
/// let b = igp.bounds(&[[0.3]])?;
/// let prior = 0.1 * (2.0 * (1.0 / 0.01f64).ln()).sqrt() + 10.0;
/// assert!((b.ucb[0] - prior).abs() < 1e-12);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Igp<K> {
    posterior: ExactPosterior<K>,
    params: CheckedParams,
    eta: f64,
}

impl<K: Kernel> Igp<K> {
    /// IGP-UCB for `kernel` with σ, B, δ and η (set directly or as 2/T from the horizon).
    ///
    /// # Errors
    /// Invalid parameters (see [`BoundParams::check`]); [`crate::Error::MissingParameter`] if
    /// neither η nor the horizon is set.
    pub fn new(kernel: K, params: BoundParams) -> Result<Self> {
        let params = params.check()?;
        let eta = params.eta()?;
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &[1.0 + eta])?,
            params,
            eta,
        })
    }

    /// The validated parameters.
    pub fn params(&self) -> &CheckedParams {
        &self.params
    }

    /// The underlying exact posterior (regulariser 1 + η).
    pub fn posterior(&self) -> &ExactPosterior<K> {
        &self.posterior
    }

    /// σ√(ld_{1+η} + tη + 2 ln(1/δ)) + B, the current multiplier of ρ_{1+η}(x).
    pub fn width(&self) -> f64 {
        let p = &self.params;
        let t = self.posterior.len() as f64;
        let ld = self.posterior.log_det(0);
        p.sigma() * (ld + t * self.eta + 2.0 * p.log_inv_delta()).sqrt() + p.norm_bound()
    }
}

impl<K: Kernel> ConfidenceBound for Igp<K> {
    fn name(&self) -> &'static str {
        "igp"
    }

    forward_posterior!(|b| widths: [b.width()], mean: 0);
}

#[cfg(feature = "serde")]
super::exact_snapshot!(Igp, "igp", |b| {
    b.params.restore()?;
    crate::snapshot::ensure(b.params.eta().ok() == Some(b.eta), || {
        "η differs from the parameters'".into()
    })?;
    super::same_regularisers(&b.posterior, &[1.0 + b.eta])
});
