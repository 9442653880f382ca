//! The theory constants of the non-stationary agents (Iwazaki & Takeno 2025 Thm 5 and §6).

use super::GreedyVariance;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::points::AsPoints;

fn check(horizon: usize, dim: usize, variation: f64) -> Result<(f64, f64)> {
    if horizon < 2 || dim == 0 {
        return Err(Error::InvalidParameter {
            name: "horizon",
            value: horizon as f64,
            expected: "T ≥ 2 and a dimension d ≥ 1",
        });
    }
    if !(variation > 0.0 && variation.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "variation",
            value: variation,
            expected: "a finite V_T > 0",
        });
    }
    Ok((horizon as f64, dim as f64))
}

/// R-PERP's restart interval H of Iwazaki & Takeno 2025 Thm 5, clamped to [1, T]:
/// SE (`smoothness` = `None`): ⌈T^{2/3} V_T^{−2/3} ln^{(d+2)/3} T⌉;
/// Matérn ν: ⌈(T/V_T)^{(2ν+d)/(3ν+d)} ln^{(4ν+d)/(6ν+2d)} T⌉.
/// With V_T unknown, App. D uses the same formula with V_T = 1.
///
/// # Errors
/// [`Error::InvalidParameter`] for T < 2, d = 0 or V_T not finite and positive.
pub fn rperp_interval(
    smoothness: Option<f64>,
    dim: usize,
    horizon: usize,
    variation: f64,
) -> Result<usize> {
    let (t, d) = check(horizon, dim, variation)?;
    let h = match smoothness {
        None => t.powf(2.0 / 3.0) * variation.powf(-2.0 / 3.0) * t.ln().powf((d + 2.0) / 3.0),
        Some(nu) => {
            (t / variation).powf((2.0 * nu + d) / (3.0 * nu + d))
                * t.ln().powf((4.0 * nu + d) / (6.0 * nu + 2.0 * d))
        }
    };
    Ok((h.ceil() as usize).clamp(1, horizon))
}

/// γ̃_T of Iwazaki & Takeno 2025 §6: ln^{d+1} T for SE (`smoothness` = `None`),
/// T^{d/(2ν+d)} ln^{2ν/(2ν+d)} T for Matérn ν.
pub fn gamma_proxy(smoothness: Option<f64>, dim: usize, horizon: usize) -> f64 {
    let (t, d) = (horizon as f64, dim as f64);
    match smoothness {
        None => t.ln().powf(d + 1.0),
        Some(nu) => t.powf(d / (2.0 * nu + d)) * t.ln().powf(2.0 * nu / (2.0 * nu + d)),
    }
}

/// The restart interval H of R-GP-UCB and the window W of SW-GP-UCB used in Iwazaki & Takeno 2025 §6
/// (after Zhou & Shroff 2021): γ̃_T^{1/4}(T/V_T)^{1/2}, rounded up and clamped to [1, T].
///
/// # Errors
/// As [`rperp_interval`].
pub fn gp_ucb_interval(
    smoothness: Option<f64>,
    dim: usize,
    horizon: usize,
    variation: f64,
) -> Result<usize> {
    let (t, _) = check(horizon, dim, variation)?;
    let h = gamma_proxy(smoothness, dim, horizon).powf(0.25) * (t / variation).sqrt();
    Ok((h.ceil() as usize).clamp(1, horizon))
}

/// The greedy estimate of the maximum information gain over `arms` after `rounds` rounds
/// (Srinivas et al. 2010 §5.1, as Iwazaki & Takeno 2025 §6 uses it): repeatedly add the arm of largest
/// posterior variance (noise λ) and sum ½ ln(1 + σ²/λ). By submodularity the true γ_T lies
/// between this value and (1 − 1/e)⁻¹ times it; the return value is that upper bound.
/// Costs O(A·rounds²) through [`GreedyVariance`].
///
/// # Errors
/// As [`GreedyVariance::new`].
pub fn greedy_information_gain<K: Kernel, A: AsPoints + ?Sized>(
    kernel: K,
    arms: &A,
    lambda: f64,
    rounds: usize,
) -> Result<f64> {
    let mut gp = GreedyVariance::new(kernel, arms, lambda)?;
    let all: Vec<usize> = (0..gp.candidates()).collect();
    for _ in 0..rounds {
        let j = gp.argmax_variance(&all).expect("there is at least one arm");
        gp.choose(j);
    }
    Ok(gp.information_gain() / (1.0 - (-1.0f64).exp()))
}
