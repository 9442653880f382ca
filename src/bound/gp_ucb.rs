//! GP-UCB with the width of Chowdhury & Gopalan (2017), on a chosen information gain.

use super::{BoundParams, CheckedParams, ConfidenceBound, forward_posterior};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// The information gain γ that enters [`GpUcb`]'s width.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum InformationGain {
    /// A fixed γ, meant as an upper bound on the maximum information gain over the points the
    /// model will ever hold, such as
    /// [`greedy_information_gain`](crate::nonstationary::greedy_information_gain) (Srinivas
    /// et al. 2010 §5.1).
    Fixed(f64),
    /// The data-dependent γ_t = ½ ln det(I + K_t/λ) of the points currently in the model
    /// (Chowdhury & Gopalan 2017 Thm 1, before they bound it by the maximum), read from the
    /// posterior's Cholesky factor (ln det = Σᵢ ln(Lᵢᵢ²/λ)) after every update, restart or
    /// eviction.
    Data,
}

/// GP-UCB with the width of Chowdhury & Gopalan (2017, Thm 2) as the non-stationary baselines
/// use it (Zhou & Shroff 2021; Iwazaki & Takeno 2025 §6), on the posterior with noise λ:
///
/// U(x) = μ_λ(x) + (B + (σ/√λ)√(2(γ + 1 + ln(1/δ)))) ρ_λ(x); the LCB is the mirror image.
///
/// With γ = [`InformationGain::Data`] the width is never below the width of AY-GP-UCB,
/// B + (σ/√λ)√(ld_λ + 2 ln(1/δ)) (Abbasi-Yadkori 2012 Thm 3.11; Flynn & Reeb 2024 App. C.2),
/// for the same data, so it is a valid bound wherever AY-GP-UCB is: ‖f‖_H ≤ B, σ-sub-Gaussian
/// noise, and the data a prefix of one adapted sequence (from the start or from the last
/// restart). With a fixed γ it is valid as long as γ ≥ ½ ld_λ of the data in the model, which
/// a true upper bound on the maximum information gain over that many points guarantees.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// use kernel_bandits::bound::{GpUcb, InformationGain};
/// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.1).lambda(0.01);
/// let mut gp_ucb = GpUcb::new(Rbf::new(0.5)?, params, InformationGain::Data)?;
/// // No data: γ = 0, width B + (σ/√λ)√(2(1 + ln 10)).
/// let empty = 1.0 + (2.0 * (1.0 + 10f64.ln())).sqrt();
/// assert!((gp_ucb.width() - empty).abs() < 1e-12);
/// gp_ucb.observe(&[0.3], 0.5)?;
/// assert!((gp_ucb.information_gain() - 0.5 * (1.0 + 1.0 / 0.01f64).ln()).abs() < 1e-12);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GpUcb<K> {
    posterior: ExactPosterior<K>,
    params: CheckedParams,
    gain: InformationGain,
}

impl<K: Kernel> GpUcb<K> {
    /// GP-UCB for `kernel` with σ, B, δ and the GP noise λ ([`BoundParams::lambda`]; σ²/c when
    /// unset), on the information gain `gain`.
    ///
    /// # Errors
    /// Invalid parameters (see [`BoundParams::check`]); [`Error::InvalidParameter`] for a
    /// fixed γ that is negative or not finite.
    pub fn new(kernel: K, params: BoundParams, gain: InformationGain) -> Result<Self> {
        let params = params.check()?;
        check_gain(gain)?;
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &[params.lambda()])?,
            params,
            gain,
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

    /// Which information gain the width uses.
    pub fn gain(&self) -> InformationGain {
        self.gain
    }

    /// The γ in the width now: the fixed value, or ½ ln det(I + K_t/λ) of the data in the
    /// model (0 without data).
    pub fn information_gain(&self) -> f64 {
        match self.gain {
            InformationGain::Fixed(gamma) => gamma,
            InformationGain::Data => 0.5 * self.posterior.log_det(0),
        }
    }

    /// B + (σ/√λ)√(2(γ + 1 + ln(1/δ))), the current multiplier of ρ_λ(x).
    pub fn width(&self) -> f64 {
        let p = &self.params;
        let gamma = self.information_gain();
        p.norm_bound()
            + p.sigma() / p.lambda().sqrt() * (2.0 * (gamma + 1.0 + (1.0 / p.delta()).ln())).sqrt()
    }
}

/// Accepts [`InformationGain::Data`] and a finite fixed γ ≥ 0.
fn check_gain(gain: InformationGain) -> Result<()> {
    match gain {
        InformationGain::Fixed(gamma) if !(gamma >= 0.0 && gamma.is_finite()) => {
            Err(Error::InvalidParameter {
                name: "information_gain",
                value: gamma,
                expected: "a finite γ ≥ 0",
            })
        }
        _ => Ok(()),
    }
}

impl<K: Kernel> ConfidenceBound for GpUcb<K> {
    fn name(&self) -> &'static str {
        match self.gain {
            InformationGain::Fixed(_) => "gp-ucb",
            InformationGain::Data => "gp-ucb-data",
        }
    }

    forward_posterior!(|b| widths: [b.width()], mean: 0);
}

#[cfg(feature = "serde")]
super::exact_snapshot!(GpUcb, "gp-ucb", |b| {
    b.params.restore()?;
    check_gain(b.gain).map_err(crate::snapshot::rebuild_error("gp-ucb"))?;
    super::same_regularisers(&b.posterior, &[b.params.lambda()])
});
