//! Matérn kernels of any smoothness ν ∈ (0, 100] (Rasmussen & Williams 2006 §4.2.1,
//! Eq. 4.14): closed forms at ν ∈ {1/2, 3/2, 5/2}, the modified Bessel function K_ν otherwise.
//!
//! With z = √(2ν) r/ℓ the kernel is k = 2^{1−ν}/Γ(ν) z^ν K_ν(z). K_ν and Γ come from the
//! `puruspe` crate (Temme's series and Steed's continued fraction, as in Numerical Recipes).
//! Against 60-digit `mpmath`, the product of the three factors is within 2·10⁻¹⁵ relative for
//! ν < 10 and 1.2·10⁻¹⁴ up to ν = 100 (the error of `puruspe`'s K_ν grows with ν), for
//! 10⁻⁶ ≤ z < 700 wherever K_ν(z) is a normal double, and within 2·10⁻¹⁴ for smaller z (K_ν
//! carries e^{±ν ln(z/2)}, whose exponent is rounded). Elsewhere it is not used:
//!
//! - z < 10⁻³⁰⁰: the leading terms of the ascending series (DLMF 10.31.1),
//!   k = 1 − Γ(1−ν)/Γ(1+ν) (z/2)^{2ν} for ν < 1 (formed as −expm1 of the logarithm of the
//!   second term, which is close to 1 for tiny ν) and k = 1 in double precision for ν ≥ 1;
//!   `puruspe` takes ln(z/2), which is −∞ for subnormal z. For points so close that (r/ℓ)²
//!   underflows, r/ℓ is computed without squares.
//! - small z where a bound proves 1 − k < ε/4 (k = E e^{−z²/(4T)}, T ~ Gamma(ν, 1)): exactly 1,
//!   where K_ν's rounding error would exceed 1 − k. Elsewhere a product above 1 (by rounding)
//!   is returned as 1, since k ≤ 1.
//! - small z and larger ν, where K_ν(z) overflows (ν ≳ 35 with k still below 1): the
//!   three-term recurrence K_{ν+1} = K_{ν−1} + (2ν/z) K_ν (DLMF 10.29.1) written for the
//!   normalised k_ν, k_{ν+1}(z) = k_ν(z) + z²/(4ν(ν−1)) k_{ν−1}(z), a sum of positive terms
//!   run upwards from an order in (0, 1]; its result is clamped to 1 like the product's, as
//!   the starting values' rounding can otherwise lift it a few ulps above 1.
//! - z ≥ 700, where K_ν(z) ~ e^{−z} underflows while k is still a normal number (for ν = 20
//!   up to z ≈ 820): Hankel's expansion K_ν(z) = (π/(2z))^{1/2} e^{−z} Σ_k a_k(ν)/z^k
//!   (DLMF 10.40.2), truncated at a term k ≥ ν − 1/2 below the rounding error, which bounds
//!   the remainder (DLMF 10.40(ii)), with e^{−z} applied last in two halves; 0 where a bound
//!   on the logarithm is below −750.
//!
//! ν is limited to 100 because 2^{1−ν}/Γ(ν) and (z/2)^ν leave the range of a double soon
//! after (Γ(ν) overflows at ν ≈ 171.6); by ν = 100 the Matérn kernel is within 2.3·10⁻³ of the
//! RBF kernel with the same ℓ, its limit as ν → ∞.

use std::f64::consts::FRAC_PI_2;

use super::radial::{exp_neg, map_in_place, scaled_sq_dists};
use super::{Kernel, check_lengthscale, scaled_sq_dist};
use crate::error::{Error, Result};

const SQRT_3: f64 = 1.732_050_807_568_877_2;
const SQRT_5: f64 = 2.236_067_977_499_79;

/// The largest smoothness accepted (see the module documentation).
pub const MAX_NU: f64 = 100.0;

/// Below this z the kernel is its limit at 0 to double precision (module documentation).
const TINY_Z: f64 = 1e-300;
/// From this z on, K_ν(z) is close to the smallest normal double: Hankel's expansion.
const LARGE_Z: f64 = 700.0;
/// Below this z, k_ν(z) = 1 in double precision for every ν ≥ 1 (1 − k < 10⁻²⁷⁰).
const ONE_BELOW: f64 = 1e-140;

/// The smoothness: a closed form, or K_ν with 2/Γ(ν) computed once.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Smoothness {
    Half,
    ThreeHalves,
    FiveHalves,
    General { nu: f64, two_over_gamma: f64 },
}

/// Matérn kernel with smoothness ν ∈ (0, 100] and length-scale ℓ (Rasmussen & Williams 2006
/// §4.2.1, Eq. 4.14), k(x, x) = 1.
///
/// With r = ‖x − x′‖ and z = √(2ν) r/ℓ, k = 2^{1−ν}/Γ(ν) z^ν K_ν(z), K_ν the modified Bessel
/// function of the second kind. At ν = 1/2, 3/2 and 5/2 it has the closed forms used here:
/// - ν = 1/2: exp(−r/ℓ)
/// - ν = 3/2: (1 + √3 r/ℓ) exp(−√3 r/ℓ)
/// - ν = 5/2: (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ)
///
/// # Gradient
/// [`Kernel::gradient`] differentiates in the first argument. With d/dz[z^ν K_ν(z)] =
/// −z^ν K_{ν−1}(z) (DLMF 10.29.4) and z = √(2ν) r/ℓ:
/// - ν > 1: ∇k = −ν/((ν−1)ℓ²) · k_{ν−1}(z) · (x − x′), where k_{ν−1} is the normalised Matérn
///   function of order ν − 1 (2^{2−ν}/Γ(ν−1) z^{ν−1} K_{ν−1}(z), 1 at z = 0) at the same z,
///   evaluated like the kernel itself. At ν = 3/2 this is −3 e^{−√3 r/ℓ}(x − x′)/ℓ², at
///   ν = 5/2 −(5/3)(1 + √5 r/ℓ) e^{−√5 r/ℓ}(x − x′)/ℓ² (the closed forms used there).
/// - 1/2 < ν < 1: ∇k = −(√(2ν)/ℓ) · s(z) · (x − x′)/r with the slope
///   s = −dk/dz = 2^{1−2ν} Γ(1−ν)/Γ(ν) z^{2ν−1} k_{1−ν}(z) (K_{ν−1} = K_{1−ν}), which tends
///   to 0 with z: the kernel is differentiable at x = x′ with gradient 0. At ν = 1,
///   s = z K₀(z), also → 0.
/// - ν = 1/2: k = e^{−r/ℓ}, ∇k = −e^{−r/ℓ}(x − x′)/(ℓ r) for x ≠ x′. At x = x′ the kernel
///   has a cusp: its one-sided slope is −1/ℓ in every direction, and it has no gradient.
/// - ν < 1/2: the same form with s → ∞ as z → 0: an infinite slope at x = x′, and no
///   gradient there; for points a few ulps apart the entries can overflow to ±∞ (only where
///   the slope exceeds the largest double).
///
/// **At x = x′ the method returns the zero vector for every ν.** For ν > 1/2 that is the
/// gradient (x′ maximises k(·, x′)). For ν ≤ 1/2 it is not a gradient, since none exists; it
/// is the value a maximiser should read at its maximum, 0 being in the subdifferential of the
/// concave cusp. For far-apart points or tiny ℓ the gradient underflows to exactly 0 (no NaN
/// from 0 · ∞). [`Kernel::diag_gradient`] is 0 (k(x, x) = 1).
///
/// ```
/// use kernel_bandits::kernel::{Kernel, Matern};
/// let k = Matern::new(1.5, 0.5)?;
/// let (x, y) = ([0.3, 0.1], [0.0, 0.5]); // x − y = (0.3, −0.4), r = 0.5 = ℓ
/// let mut g = [0.0; 2];
/// k.gradient(&x, &y, &mut g)?;
/// let factor = -3.0 * (-(3f64.sqrt())).exp() / 0.25; // −3 e^{−√3 r/ℓ}/ℓ²
/// assert!((g[0] - factor * 0.3).abs() < 1e-15 && (g[1] + factor * 0.4).abs() < 1e-15);
/// k.gradient(&y, &y, &mut g)?;
/// assert_eq!(g, [0.0, 0.0]); // x = x′
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
///
/// Any other ν costs one evaluation of K_ν per entry, some 50 times the closed form's cost
/// (`benches/kernels.rs`); see the module documentation for the numerics. As ν → ∞ the kernel tends to the RBF kernel
/// exp(−r²/(2ℓ²)).
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, Matern};
/// let k = Matern::new(2.5, 0.5)?;
/// let z = 5f64.sqrt(); // r = ℓ
/// let expected = (1.0 + z + 5.0 / 3.0) * (-z).exp();
/// assert!((k.eval(&[0.0], &[0.5]) - expected).abs() < 1e-15);
///
/// // ν = 7/2: (1 + z + 2z²/5 + z³/15) e^{−z}, z = √7 r/ℓ (Rasmussen & Williams 2006 Eq. 4.16).
/// let k = Matern::new(3.5, 0.5)?;
/// let z = 7f64.sqrt();
/// let expected = (1.0 + z + 0.4 * z * z + z * z * z / 15.0) * (-z).exp();
/// assert!((k.eval(&[0.0], &[0.5]) - expected).abs() < 1e-14);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Matern {
    smoothness: Smoothness,
    lengthscale: f64,
    inv_lengthscale: f64,
}

/// ν a normal double in (0, [`MAX_NU`]]: a subnormal ν (below 2.2·10⁻³⁰⁸) is refused, as Γ(ν) ≈
/// 1/ν overflows below about 5.6·10⁻³⁰⁹ and the gradient's 0 · ∞ is then NaN.
fn check_nu(nu: f64) -> Result<f64> {
    if (f64::MIN_POSITIVE..=MAX_NU).contains(&nu) {
        Ok(nu)
    } else {
        Err(Error::InvalidParameter {
            name: "nu",
            value: nu,
            expected: "a finite number in (0, 100], not subnormal (at least 2.2e-308)",
        })
    }
}

impl Matern {
    /// Matérn kernel with smoothness ν and length-scale ℓ; the closed form when ν is 0.5, 1.5
    /// or 2.5.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if ν is not a finite number in (0, 100] (NaN included) or is
    /// subnormal (below 2.2·10⁻³⁰⁸, where Γ(ν) overflows), or ℓ is not finite and positive with
    /// a finite 1/ℓ.
    pub fn new(nu: f64, lengthscale: f64) -> Result<Self> {
        let smoothness = if nu == 0.5 {
            Smoothness::Half
        } else if nu == 1.5 {
            Smoothness::ThreeHalves
        } else if nu == 2.5 {
            Smoothness::FiveHalves
        } else {
            general(check_nu(nu)?)
        };
        let inv_lengthscale = check_lengthscale(lengthscale)?;
        Ok(Self {
            smoothness,
            lengthscale,
            inv_lengthscale,
        })
    }

    /// The same kernel as [`Matern::new`], always evaluated through K_ν, even at ν = 1/2, 3/2
    /// and 5/2 where [`Matern::new`] uses the closed forms: slower, and meant for checking one
    /// against the other.
    ///
    /// # Errors
    /// As [`Matern::new`].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::kernel::{Kernel, Matern};
    /// let (x, y) = ([0.1, 0.2], [0.4, -0.3]);
    /// let closed = Matern::new(1.5, 0.5)?.eval(&x, &y);
    /// let bessel = Matern::with_bessel(1.5, 0.5)?.eval(&x, &y);
    /// assert!((closed - bessel).abs() < 1e-14 * closed);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn with_bessel(nu: f64, lengthscale: f64) -> Result<Self> {
        let smoothness = general(check_nu(nu)?);
        let inv_lengthscale = check_lengthscale(lengthscale)?;
        Ok(Self {
            smoothness,
            lengthscale,
            inv_lengthscale,
        })
    }

    /// The smoothness ν.
    pub fn nu(&self) -> f64 {
        match self.smoothness {
            Smoothness::Half => 0.5,
            Smoothness::ThreeHalves => 1.5,
            Smoothness::FiveHalves => 2.5,
            Smoothness::General { nu, .. } => nu,
        }
    }

    /// The length-scale ℓ.
    pub fn lengthscale(&self) -> f64 {
        self.lengthscale
    }
}

/// The K_ν form for a checked ν.
fn general(nu: f64) -> Smoothness {
    Smoothness::General {
        nu,
        two_over_gamma: 2.0 / puruspe::gamma(nu),
    }
}

/// The Matérn profiles as functions of z² = r²/ℓ², branch-free apart from the final select
/// (so that they vectorise). Beyond s = 745 the exponential underflows and the value is 0;
/// the select also maps z² = +∞ (possible for tiny ℓ) to 0 instead of ∞·0 = NaN.
///
/// The products for ν = 3/2 and 5/2 are clamped to 1, as the K_ν path is: for tiny s the
/// rounded factors (1 + s + …) and e^{−s} can multiply to 1 + ε (ν = 5/2 first at
/// r/ℓ ≈ 8.2·10⁻⁹), which would give the Gram matrix of two such points an eigenvalue
/// 1 − k = −ε < 0. e^{−z} alone (ν = 1/2) never exceeds 1.
#[inline(always)]
fn matern_half(z_sq: f64) -> f64 {
    let z = z_sq.sqrt();
    let value = exp_neg(-z);
    if z < 745.0 { value } else { 0.0 }
}

#[inline(always)]
fn matern_three_halves(z_sq: f64) -> f64 {
    let s = SQRT_3 * z_sq.sqrt();
    let value = ((1.0 + s) * exp_neg(-s)).min(1.0);
    if s < 745.0 { value } else { 0.0 }
}

#[inline(always)]
fn matern_five_halves(z_sq: f64) -> f64 {
    let s = SQRT_5 * z_sq.sqrt();
    let value = ((1.0 + s + (5.0 / 3.0) * z_sq) * exp_neg(-s)).min(1.0);
    if s < 745.0 { value } else { 0.0 }
}

/// k_ν(z) = 2^{1−ν}/Γ(ν) z^ν K_ν(z) at z = √(2ν) u for u = r/ℓ ≥ 0 (NaN for NaN), given
/// 2/Γ(ν).
fn matern_general(nu: f64, two_over_gamma: f64, u: f64) -> f64 {
    normalised(nu, two_over_gamma, nu, u)
}

/// The normalised Matérn function of order `order`, k_order(z) = 2^{1−order}/Γ(order)
/// z^order K_order(z) (k_order(0) = 1), given 2/Γ(order), at z = √(2ν) u: the kernel itself
/// when `order` = ν, and the factor of its gradient when `order` = |ν − 1|.
fn normalised(order: f64, two_over_gamma: f64, nu: f64, u: f64) -> f64 {
    let z = (2.0 * nu).sqrt() * u;
    if z.is_nan() {
        return f64::NAN;
    }
    if z < TINY_Z {
        return near_zero(order, nu, u);
    }
    if z >= LARGE_Z {
        return hankel(order, two_over_gamma, z);
    }
    if z < 1e-3 && rounds_to_one(order, z) {
        return 1.0;
    }
    product(order, two_over_gamma, z).unwrap_or_else(|| by_recurrence(order, z))
}

/// Whether 1 − k_ν(z) < ε/4, so that k is 1 in double precision, by a bound rather than by
/// K_ν, whose rounding error near z = 0 (a few 10⁻¹⁴ relative) exceeds 1 − k there.
///
/// k = E e^{−a/T} with a = z²/4 and T ~ Gamma(ν, 1) (DLMF 10.32.10), so
/// 1 − k ≤ E min(1, a/T), which is at most a/(ν − 1) for ν > 1, a^ν/(Γ(ν+1)(1 − ν)) for
/// ν < 1 (split at T = a), and a(1 + ln(1 + 1/a)) for ν = 1.
fn rounds_to_one(nu: f64, z: f64) -> bool {
    // a underflows for z < 10⁻¹⁵⁴, where a^ν with ν < 1 may still be far from 0: logs.
    let log_a = 2.0 * (0.5 * z).ln();
    let a = log_a.exp();
    let bound = if nu > 1.0 {
        a / (nu - 1.0)
    } else if nu < 1.0 {
        (nu * log_a).exp() / (puruspe::gamma(1.0 + nu) * (1.0 - nu))
    } else if a > 0.0 {
        a * (1.0 + (1.0 / a).ln_1p())
    } else {
        0.0
    };
    bound < 0.25 * f64::EPSILON
}

/// 2/Γ(ν) (z/2)^ν K_ν(z) for TINY_Z ≤ z < LARGE_Z, or `None` where K_ν(z) overflows or
/// (z/2)^ν is not a normal double (only for ν > 1 and small z: for ν ≤ 1 and z ≥ 10⁻³⁰⁰,
/// K_ν(z) < 10³⁰¹ and (z/2)^ν > 10⁻³⁰¹).
fn product(nu: f64, two_over_gamma: f64, z: f64) -> Option<f64> {
    let bessel_k = puruspe::besselik(nu, z).1;
    let half_power = (0.5 * z).powf(nu);
    // (z/2)^ν K_ν(z) = Γ(ν) k/2 ≤ Γ(ν)/2 < 10¹⁵⁶: the first product cannot overflow.
    let value = half_power * bessel_k * two_over_gamma;
    // k ≤ 1 (k = E exp(−z²/(4T)), T ~ Gamma(ν, 1)); near z = 0 the three rounded factors can
    // exceed it by a few 10⁻¹⁵ (puruspe's K_ν(z) carries e^{±ν ln(z/2)}), which would let a
    // 2 × 2 Gram matrix [[1, k], [k, 1]] turn indefinite. The comparison keeps NaN.
    let value = if value > 1.0 { 1.0 } else { value };
    (bessel_k.is_finite() && half_power >= f64::MIN_POSITIVE).then_some(value)
}

/// Small z where K_ν(z) overflows (ν > 1): k_{m+1} = k_m + z²/(4m(m−1)) k_{m−1} upwards from
/// the orders μ ∈ (0, 1] and μ + 1, ν = μ + n.
fn by_recurrence(nu: f64, z: f64) -> f64 {
    // k_ν(z) = E exp(−z²/(4T)) with T ~ Gamma(ν, 1) grows with ν at fixed z, and already
    // k_μ(z) for μ ∈ (1, 2] is 1 to within 10⁻²⁷⁰ below ONE_BELOW.
    if z < ONE_BELOW {
        return 1.0;
    }
    let steps = nu.ceil() - 1.0;
    // Exact (Sterbenz): steps ≤ ν < 2·steps once ν > 2; ν − 1 for ν ∈ (1, 2].
    let base = nu - steps;
    let at = |order: f64| product(order, 2.0 / puruspe::gamma(order), z);
    // Both orders are at most 2 and z ≥ ONE_BELOW: K stays below 10²⁸¹ and (z/2)^2 above
    // 10⁻²⁸¹, so `product` answers.
    let (Some(mut previous), Some(mut current)) = (at(base), at(base + 1.0)) else {
        return 1.0;
    };
    let quarter_z_sq = 0.25 * z * z;
    let mut order = base + 1.0;
    for _ in 1..(steps as usize) {
        let next = current + quarter_z_sq / (order * (order - 1.0)) * previous;
        previous = current;
        current = next;
        order += 1.0;
    }
    // The recurrence only adds positive terms, but its starting values carry the rounding of
    // `product` (a few 10⁻¹⁵ near z = 0), which can lift the sum above 1 where the true
    // 1 − k is below it: the same clamp as in `product`, for the same PSD reason. NaN stays.
    if current > 1.0 { 1.0 } else { current }
}

/// z = √(2ν_z) u < 10⁻³⁰⁰ (ν_z = `nu_z`): k_ν = 1 − Γ(1−ν)/Γ(1+ν) (z/2)^{2ν} for ν < 1 (the
/// neglected terms are O((z/2)²/(1−ν)) relative, below 10⁻⁵⁸⁰), and 1 for ν ≥ 1
/// (1 − k = O(z² ln(1/z))).
fn near_zero(nu: f64, nu_z: f64, u: f64) -> f64 {
    if nu >= 1.0 {
        return 1.0;
    }
    // (z/2)^{2ν} = (ν_z/2)^ν u^{2ν}: z and z/2 would lose bits where they are subnormal. For
    // tiny ν the deficit is close to 1 and 1 − deficit cancels, so it is formed as
    // −expm1(ln deficit), with ln(Γ(1−ν)/Γ(1+ν)) from its odd series where ν is small.
    let log_ratio = if nu < 1e-3 {
        // ln Γ(1+x) = −γx + Σ_{k≥2} (−1)^k ζ(k) x^k / k (DLMF 5.7.3); the even terms cancel in
        // the difference, and the first neglected one, 2ζ(7)ν⁷/7, is below 10⁻¹⁸ of 2γν.
        const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
        const ZETA_3: f64 = 1.202_056_903_159_594_3;
        const ZETA_5: f64 = 1.036_927_755_143_37;
        let nu_sq = nu * nu;
        nu * (2.0 * EULER_GAMMA + nu_sq * (2.0 / 3.0 * ZETA_3 + nu_sq * 0.4 * ZETA_5))
    } else {
        (puruspe::gamma(1.0 - nu) / puruspe::gamma(1.0 + nu)).ln()
    };
    let log_deficit = log_ratio + nu * (0.5 * nu_z).ln() + 2.0 * nu * u.ln();
    -log_deficit.exp_m1()
}

/// z ≥ 700: Hankel's expansion of K_ν, the factor e^{−z} applied last.
fn hankel(nu: f64, two_over_gamma: f64, z: f64) -> f64 {
    if z == f64::INFINITY {
        return 0.0;
    }
    // Σ a_k/z^k ≤ exp(ν²/(2z)) and (π/(2z))^{1/2} < 1: below e^{−750} the value is 0, and
    // (z/2)^ν, which would overflow for far larger z, is never formed.
    let log_bound = two_over_gamma.ln() + nu * (0.5 * z).ln() + nu * nu / (2.0 * z) - z;
    if log_bound < -750.0 {
        return 0.0;
    }
    let sum = hankel_sum(nu, z);
    let scale = two_over_gamma * (0.5 * z).powf(nu) * (FRAC_PI_2 / z).sqrt() * sum;
    // e^{−z} underflows from z ≈ 745 on, e^{−z/2} only past 1490.
    let half = (-0.5 * z).exp();
    scale * half * half
}

/// Σ_k a_k(ν)/z^k of Hankel's expansion K_ν(z) = (π/(2z))^{1/2} e^{−z} Σ_k a_k(ν)/z^k
/// (DLMF 10.40.2) for z ≥ 700 and 0 ≤ ν ≤ 100, truncated below the rounding error.
fn hankel_sum(nu: f64, z: f64) -> f64 {
    let four_nu_sq = 4.0 * nu * nu;
    let mut term = 1.0;
    let mut sum = 1.0;
    // With ν ≤ 100 and z ≥ 700 the terms fall below the rounding error well before k = 400.
    for k in 1..400_u32 {
        let odd = f64::from(2 * k - 1);
        term *= (four_nu_sq - odd * odd) / (8.0 * f64::from(k) * z);
        // DLMF 10.40(ii): once k ≥ ν − 1/2, the remainder after the terms before k is at most
        // |a_k/z^k|, so a term below the rounding error of the sum ends the series.
        if f64::from(k) >= nu - 0.5 && term.abs() <= 0.5 * f64::EPSILON * sum {
            break;
        }
        sum += term;
    }
    sum
}

/// z K₀(z) ≥ 0 for z = √2 u, u = r/ℓ > 0: −dk/dz of the Matérn kernel at ν = 1, whose
/// gradient cannot be written with a normalised Matérn function (the order would be 0).
/// The leading term z(ln(2/z) − γ) of the ascending series (DLMF 10.31.2) below 10⁻³⁰⁰ (its
/// neglected terms are O(z² ln z) relative), `puruspe`'s K₀ up to 700, Hankel's expansion
/// with e^{−z} applied last beyond (K₀ would underflow there while z K₀(z) is a normal double).
fn z_bessel_k0(u: f64) -> f64 {
    const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
    let z = std::f64::consts::SQRT_2 * u;
    if z < TINY_Z {
        // ln(2/z) = −ln u + ln 2/2, without forming z/2 (subnormal for subnormal u).
        return z * (0.5 * std::f64::consts::LN_2 - u.ln() - EULER_GAMMA);
    }
    if z >= LARGE_Z {
        if z == f64::INFINITY {
            return 0.0;
        }
        let half = (-0.5 * z).exp();
        return (FRAC_PI_2 * z).sqrt() * hankel_sum(0.0, z) * half * half;
    }
    z * puruspe::besselik(0.0, z).1
}

/// Below this (r/ℓ)², the square root of the sum of squares has lost bits to underflow.
const TINY_Z_SQ: f64 = 1e-290;

/// r/ℓ for points so close that (r/ℓ)² is not a normal double (r/ℓ < 10⁻¹⁴⁵): m ‖d/m‖ with
/// d = (x − y)/ℓ and m its largest |dᵢ|, which does not underflow. The closed forms are 1 there
/// anyway, but for small ν, 1 − k ≈ Γ(1−ν)/Γ(1+ν) (z/2)^{2ν} is still visible at z = 10⁻³⁰⁰.
fn tiny_scaled_distance(x: &[f64], y: &[f64], inv_scale: f64) -> f64 {
    let largest = x
        .iter()
        .zip(y)
        .map(|(a, b)| ((a - b) * inv_scale).abs())
        .fold(0.0, f64::max);
    if !(largest > 0.0 && largest.is_finite()) {
        return largest;
    }
    let sum_sq: f64 = x
        .iter()
        .zip(y)
        .map(|(a, b)| {
            let d = (a - b) * inv_scale / largest;
            d * d
        })
        .sum();
    largest * sum_sq.sqrt()
}

impl Matern {
    /// r/ℓ from (r/ℓ)², or recomputed without squares where those underflow.
    #[inline]
    fn scaled_distance(&self, x: &[f64], y: &[f64], z_sq: f64) -> f64 {
        if z_sq < TINY_Z_SQ {
            tiny_scaled_distance(x, y, self.inv_lengthscale)
        } else {
            z_sq.sqrt()
        }
    }
}

impl Kernel for Matern {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let z_sq = scaled_sq_dist(x, y, self.inv_lengthscale);
        match self.smoothness {
            Smoothness::Half => matern_half(z_sq),
            Smoothness::ThreeHalves => matern_three_halves(z_sq),
            Smoothness::FiveHalves => matern_five_halves(z_sq),
            Smoothness::General { nu, two_over_gamma } => {
                matern_general(nu, two_over_gamma, self.scaled_distance(x, y, z_sq))
            }
        }
    }

    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        scaled_sq_dists(rows, y, self.inv_lengthscale, out);
        match self.smoothness {
            Smoothness::Half => map_in_place(out, matern_half),
            Smoothness::ThreeHalves => map_in_place(out, matern_three_halves),
            Smoothness::FiveHalves => map_in_place(out, matern_five_halves),
            Smoothness::General { nu, two_over_gamma } => {
                for (v, x) in out.iter_mut().zip(rows.chunks_exact(y.len())) {
                    *v = matern_general(nu, two_over_gamma, self.scaled_distance(x, y, *v));
                }
            }
        }
    }

    #[inline]
    fn eval_diag(&self, _x: &[f64]) -> f64 {
        1.0
    }

    fn smoothness(&self) -> Option<f64> {
        Some(self.nu())
    }

    /// κ2 = ν/(ν − 1) for ν > 1, κ4 = 3ν²/((ν − 1)(ν − 2)) for ν > 2 (see
    /// [`super::KernelRegularity`]).
    fn regularity(&self) -> Option<super::KernelRegularity> {
        Some(super::KernelRegularity::of_family(
            Some(self.nu()),
            vec![self.lengthscale],
        ))
    }

    /// ∂k(x, y)/∂x; the zero vector at x = y for every ν (see [`Matern`] for the formulas and
    /// for what that zero means when ν ≤ 1/2).
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        let inv = self.inv_lengthscale;
        let z_sq = scaled_sq_dist(x, y, inv);
        // ∇k = coef · (x − y)/ℓ², formed as (coef · dᵢ) · (1/ℓ) with dᵢ = (xᵢ − yᵢ)/ℓ so that
        // only the last product can overflow, and only where the gradient itself does.
        let coef = match self.smoothness {
            Smoothness::Half => {
                let u = self.scaled_distance(x, y, z_sq);
                return unit_form(x, y, inv, u, 1.0, out, exp_minus);
            }
            Smoothness::ThreeHalves => {
                let s = SQRT_3 * z_sq.sqrt();
                if s.is_nan() || s >= 750.0 {
                    return zero(out);
                }
                -3.0 * exp_minus(s)
            }
            Smoothness::FiveHalves => {
                let s = SQRT_5 * z_sq.sqrt();
                if s.is_nan() || s >= 750.0 {
                    return zero(out);
                }
                let half = exp_minus(0.5 * s);
                -(5.0 / 3.0) * (1.0 + s) * half * half
            }
            Smoothness::General { nu, two_over_gamma } => {
                let u = self.scaled_distance(x, y, z_sq);
                if nu <= 1.0 {
                    return unit_form(x, y, inv, u, (2.0 * nu).sqrt(), out, |u| {
                        general_slope(nu, two_over_gamma, u)
                    });
                }
                if u.is_nan() {
                    out.fill(f64::NAN);
                    return Ok(());
                }
                // 2/Γ(ν − 1) = (ν − 1) · 2/Γ(ν).
                let order = nu - 1.0;
                let m = normalised(order, order * two_over_gamma, nu, u);
                -(nu / order) * m
            }
        };
        if coef == 0.0 {
            // Far apart: the gradient underflows with k (and (x − y)/ℓ² may overflow).
            return zero(out);
        }
        for ((o, a), b) in out.iter_mut().zip(x).zip(y) {
            *o = coef * ((a - b) * inv) * inv;
        }
        Ok(())
    }

    /// Zero: k(x, x) = 1 for every x.
    fn diag_gradient(&self, _x: &[f64], out: &mut [f64]) -> Result<()> {
        zero(out)
    }
}

/// e^{−s} for s ≥ 0 as the square of e^{−s/2}: the scalar gradients keep their subnormal
/// values (where [`exp_neg`], built for vectorised kernel columns, returns 0) and, for
/// ν = 5/2, (1 + s) e^{−s} stays a normal double up to s ≈ 715.
#[inline]
fn exp_minus(s: f64) -> f64 {
    let half = (-0.5 * s).exp();
    half * half
}

/// Fills `out` with zeros.
fn zero(out: &mut [f64]) -> Result<()> {
    out.fill(0.0);
    Ok(())
}

/// ∇k = −φ(u) · scale · ((x − y)/(ℓu)) / ℓ for a radial kernel whose derivative in z = scale·u
/// is −φ(u) (u = r/ℓ): the form for ν ≤ 1, where the slope φ stays bounded (ν ≥ 1/2) while a
/// factor 1/u would not. The unit vector (x − y)/r has entries of at most 1, so nothing
/// overflows but the last product, and only where the gradient itself does. Zero at u = 0
/// (x = y) and where φ underflows; NaN for NaN.
fn unit_form(
    x: &[f64],
    y: &[f64],
    inv: f64,
    u: f64,
    scale: f64,
    out: &mut [f64],
    slope: impl Fn(f64) -> f64,
) -> Result<()> {
    if u.is_nan() {
        out.fill(f64::NAN);
        return Ok(());
    }
    if u == 0.0 || u == f64::INFINITY {
        return zero(out);
    }
    let phi = slope(u);
    if phi == 0.0 {
        return zero(out);
    }
    let coef = -phi * scale;
    for ((o, a), b) in out.iter_mut().zip(x).zip(y) {
        let d = (a - b) * inv;
        // A coordinate where x and y agree has a zero partial derivative, also where the
        // slope has overflowed (ν < 1/2 at points a few ulps apart): no ∞ · 0.
        *o = if d == 0.0 { 0.0 } else { coef * (d / u) * inv };
    }
    Ok(())
}

/// −dk/dz ≥ 0 of the Matérn kernel with ν ≤ 1 at z = √(2ν) u, u > 0, by
/// d/dz[z^ν K_ν(z)] = −z^ν K_{ν−1}(z) (DLMF 10.29.4) and K_{ν−1} = K_{1−ν}:
/// 2^{1−ν}/Γ(ν) z^ν K_{1−ν}(z) = 2^{1−2ν} Γ(1−ν)/Γ(ν) · z^{2ν−1} · k_{1−ν}(z) for ν < 1, with
/// k_{1−ν} the normalised Matérn function of order 1 − ν ∈ (0, 1) evaluated robustly; z K₀(z)
/// at ν = 1. It tends to 0 as z → 0 for 1/2 < ν ≤ 1, to 1 at ν = 1/2 and to ∞ below.
fn general_slope(nu: f64, two_over_gamma: f64, u: f64) -> f64 {
    if nu == 1.0 {
        return z_bessel_k0(u);
    }
    let order = 1.0 - nu;
    let gamma_order = puruspe::gamma(order);
    let m = normalised(order, 2.0 / gamma_order, nu, u);
    if m == 0.0 {
        return 0.0;
    }
    // z^{2ν−1} from ln z = ln √(2ν) + ln u (z itself may be subnormal).
    let log_z = 0.5 * (2.0 * nu).ln() + u.ln();
    let power = ((2.0 * nu - 1.0) * log_z).exp();
    // 2^{1−2ν} Γ(1−ν)/Γ(ν) = 2^{−2ν} Γ(1−ν) · (2/Γ(ν)).
    let constant = (-2.0 * nu).exp2() * gamma_order * two_over_gamma;
    constant * m * power
}

#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for Matern {
    fn kind() -> String {
        "matern".into()
    }
    fn restore(&mut self) -> Result<()> {
        // The saved 2/Γ(ν) is recomputed, not trusted; the form (closed or K_ν) is kept.
        let rebuilt = match self.smoothness {
            Smoothness::General { nu, .. } => Self::with_bessel(nu, self.lengthscale),
            _ => Self::new(self.nu(), self.lengthscale),
        };
        *self = rebuilt.map_err(crate::snapshot::rebuild_error("matern kernel"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every branch of `matern_general` against the closed forms, which share no code with it.
    #[test]
    fn bessel_form_matches_closed_forms() {
        type Closed = fn(f64) -> f64;
        let cases: [(f64, Closed); 3] = [
            (0.5, matern_half),
            (1.5, matern_three_halves),
            (2.5, matern_five_halves),
        ];
        for (nu, closed) in cases {
            let two_over_gamma = 2.0 / puruspe::gamma(nu);
            let mut worst: f64 = 0.0;
            for i in 0..=4000 {
                // z from 1e-12 to 707 on a log scale, plus 0 (the closed forms are 0 from z ≈ 708).
                let z = if i == 0 {
                    0.0
                } else {
                    1e-12 * (707e12_f64).powf(f64::from(i) / 4000.0)
                };
                let u = z / (2.0 * nu).sqrt();
                let reference = closed(u * u);
                let value = matern_general(nu, two_over_gamma, u);
                worst = worst.max(((value - reference) / reference).abs());
            }
            assert!(worst < 1e-12, "ν = {nu}: worst relative error {worst:e}");
        }
    }

    #[test]
    fn limits_and_non_numbers() {
        for nu in [0.01, 0.3, 1.0, 2.0, 3.5, 7.5, 15.0, 100.0] {
            let c = 2.0 / puruspe::gamma(nu);
            assert_eq!(matern_general(nu, c, 0.0), 1.0);
            assert_eq!(matern_general(nu, c, f64::INFINITY), 0.0);
            assert_eq!(matern_general(nu, c, 1e6), 0.0);
            assert!(matern_general(nu, c, f64::NAN).is_nan());
        }
    }
}
