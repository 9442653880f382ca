//! Exact kernel UCB with a fixed exploration width (the papers' K-UCB baseline).

use super::{ConfidenceBound, forward_posterior};
use crate::error::{Result, positive};
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// K-UCB with a fixed width, the exact baseline of Calandriello et al. (2019) and Zenati et al. (2022): U(x) = μ_λ(x) + βσ(x)
/// with σ²(x) = ρ_λ²(x)/λ, the same 1/λ scale as the sketched σ̃² of [`super::Bkb`] and
/// [`super::EkUcb`], so one β compares the exact and the sketched bounds like for like (and
/// with every anchor in the dictionary they coincide). Not a valid confidence bound for any
/// particular δ: β is a tuning knob.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let k_ucb = KUcb::new(Rbf::new(0.5)?, 10.0, 0.1)?;
/// let b = k_ucb.bounds(&[[0.3]])?;
/// assert!((b.ucb[0] - 0.1 / 10f64.sqrt()).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KUcb<K> {
    posterior: ExactPosterior<K>,
    lambda: f64,
    beta: f64,
}

impl<K: Kernel> KUcb<K> {
    /// K-UCB with regulariser `lambda` and width `beta`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] unless both are finite and > 0.
    pub fn new(kernel: K, lambda: f64, beta: f64) -> Result<Self> {
        let lambda = positive("lambda", lambda)?;
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &[lambda])?,
            lambda,
            beta: positive("beta", beta)?,
        })
    }

    /// The underlying exact posterior (regulariser λ).
    pub fn posterior(&self) -> &ExactPosterior<K> {
        &self.posterior
    }

    /// β/√λ, the multiplier of ρ_λ(x).
    pub fn width(&self) -> f64 {
        self.beta / self.lambda.sqrt()
    }
}

impl<K: Kernel> ConfidenceBound for KUcb<K> {
    fn name(&self) -> &'static str {
        "k-ucb"
    }

    forward_posterior!(|b| widths: [b.width()], mean: 0);
}

#[cfg(feature = "serde")]
super::exact_snapshot!(KUcb, "k-ucb", |b| {
    crate::error::positive("beta", b.beta).map_err(crate::snapshot::rebuild_error("k-ucb"))?;
    super::same_regularisers(&b.posterior, &[b.lambda])
});
