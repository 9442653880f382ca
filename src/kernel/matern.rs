//! Matérn kernels with half-integer smoothness, in closed form.

use super::{Kernel, check_lengthscale, scaled_sq_dist};
use crate::error::{Error, Result};

const SQRT_3: f64 = 1.732_050_807_568_877_2;
const SQRT_5: f64 = 2.236_067_977_499_79;

/// Smoothness values with a closed form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Smoothness {
    Half,
    ThreeHalves,
    FiveHalves,
}

/// Matérn kernel with smoothness ν ∈ {1/2, 3/2, 5/2} and length-scale ℓ (SPEC §1), k(x, x) = 1.
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

impl Kernel for Matern {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        // z = r/ℓ, computed from scaled coordinates so tiny ℓ gives +∞, never NaN.
        let z_sq = scaled_sq_dist(x, y, self.inv_lengthscale);
        let z = z_sq.sqrt();
        if z == f64::INFINITY {
            return 0.0;
        }
        match self.smoothness {
            Smoothness::Half => (-z).exp(),
            Smoothness::ThreeHalves => {
                let s = SQRT_3 * z;
                (1.0 + s) * (-s).exp()
            }
            Smoothness::FiveHalves => {
                let s = SQRT_5 * z;
                (1.0 + s + (5.0 / 3.0) * z_sq) * (-s).exp()
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
}
