//! Matérn kernels with half-integer smoothness, in closed form.

use super::radial::{exp_neg, map_in_place, scaled_sq_dists};
use super::{Kernel, check_lengthscale, scaled_sq_dist};
use crate::error::{Error, Result};

const SQRT_3: f64 = 1.732_050_807_568_877_2;
const SQRT_5: f64 = 2.236_067_977_499_79;

/// Smoothness values with a closed form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Smoothness {
    Half,
    ThreeHalves,
    FiveHalves,
}

/// Matérn kernel with smoothness ν ∈ {1/2, 3/2, 5/2} and length-scale ℓ (Rasmussen & Williams
/// 2006 §4.2.1), k(x, x) = 1.
///
/// With r = ‖x − x′‖:
/// - ν = 1/2: exp(−r/ℓ)
/// - ν = 3/2: (1 + √3 r/ℓ) exp(−√3 r/ℓ)
/// - ν = 5/2: (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ)
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, Matern};
/// let k = Matern::new(2.5, 0.5)?;
/// let z = 5f64.sqrt(); // r = ℓ
/// let expected = (1.0 + z + 5.0 / 3.0) * (-z).exp();
/// assert!((k.eval(&[0.0], &[0.5]) - expected).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Matern {
    smoothness: Smoothness,
    lengthscale: f64,
    inv_lengthscale: f64,
}

impl Matern {
    /// Matérn kernel with smoothness `nu` (0.5, 1.5 or 2.5) and length-scale ℓ.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `nu` is not one of the closed-form values, or ℓ is not
    /// finite and positive with a finite 1/ℓ.
    pub fn new(nu: f64, lengthscale: f64) -> Result<Self> {
        let smoothness = if nu == 0.5 {
            Smoothness::Half
        } else if nu == 1.5 {
            Smoothness::ThreeHalves
        } else if nu == 2.5 {
            Smoothness::FiveHalves
        } else {
            return Err(Error::InvalidParameter {
                name: "nu",
                value: nu,
                expected: "0.5, 1.5 or 2.5 (the closed forms)",
            });
        };
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
        }
    }

    /// The length-scale ℓ.
    pub fn lengthscale(&self) -> f64 {
        self.lengthscale
    }
}

/// The Matérn profiles as functions of z² = r²/ℓ², branch-free apart from the final select
/// (so that they vectorise). Beyond s = 745 the exponential underflows and the value is 0;
/// the select also maps z² = +∞ (possible for tiny ℓ) to 0 instead of ∞·0 = NaN.
#[inline(always)]
fn matern_half(z_sq: f64) -> f64 {
    let z = z_sq.sqrt();
    let value = exp_neg(-z);
    if z < 745.0 { value } else { 0.0 }
}

#[inline(always)]
fn matern_three_halves(z_sq: f64) -> f64 {
    let s = SQRT_3 * z_sq.sqrt();
    let value = (1.0 + s) * exp_neg(-s);
    if s < 745.0 { value } else { 0.0 }
}

#[inline(always)]
fn matern_five_halves(z_sq: f64) -> f64 {
    let s = SQRT_5 * z_sq.sqrt();
    let value = (1.0 + s + (5.0 / 3.0) * z_sq) * exp_neg(-s);
    if s < 745.0 { value } else { 0.0 }
}

impl Kernel for Matern {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let z_sq = scaled_sq_dist(x, y, self.inv_lengthscale);
        match self.smoothness {
            Smoothness::Half => matern_half(z_sq),
            Smoothness::ThreeHalves => matern_three_halves(z_sq),
            Smoothness::FiveHalves => matern_five_halves(z_sq),
        }
    }

    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        scaled_sq_dists(rows, y, self.inv_lengthscale, out);
        match self.smoothness {
            Smoothness::Half => map_in_place(out, matern_half),
            Smoothness::ThreeHalves => map_in_place(out, matern_three_halves),
            Smoothness::FiveHalves => map_in_place(out, matern_five_halves),
        }
    }

    #[inline]
    fn eval_diag(&self, _x: &[f64]) -> f64 {
        1.0
    }

    fn smoothness(&self) -> Option<f64> {
        Some(self.nu())
    }
}

#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for Matern {
    fn kind() -> String {
        "matern".into()
    }
    fn restore(&mut self) -> Result<()> {
        *self = Self::new(self.nu(), self.lengthscale)
            .map_err(crate::snapshot::rebuild_error("matern kernel"))?;
        Ok(())
    }
}
