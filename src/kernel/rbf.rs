//! The squared-exponential (RBF, Gaussian) kernel.

use super::radial::{exp_neg, map_in_place, scaled_sq_dists};
use super::{Kernel, check_lengthscale, scaled_sq_dist};
use crate::error::Result;

/// Squared-exponential kernel k(x, x′) = exp(−‖x − x′‖² / (2ℓ²)) (Rasmussen & Williams 2006
/// §4.2.1), with k(x, x) = 1.
///
/// Use [`super::KernelExt::scaled`] for an output scale s² ≠ 1.
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, Rbf};
/// let k = Rbf::new(0.5)?;
/// assert!((k.eval(&[0.0, 0.0], &[0.5, 0.0]) - (-0.5f64).exp()).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Rbf {
    lengthscale: f64,
    inv_lengthscale: f64,
}

impl Rbf {
    /// RBF kernel with length-scale ℓ.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] unless ℓ is finite, positive, with a finite 1/ℓ.
    pub fn new(lengthscale: f64) -> Result<Self> {
        let inv_lengthscale = check_lengthscale(lengthscale)?;
        Ok(Self {
            lengthscale,
            inv_lengthscale,
        })
    }

    /// The length-scale ℓ.
    pub fn lengthscale(&self) -> f64 {
        self.lengthscale
    }
}

impl Kernel for Rbf {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        exp_neg(-0.5 * scaled_sq_dist(x, y, self.inv_lengthscale))
    }

    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        scaled_sq_dists(rows, y, self.inv_lengthscale, out);
        map_in_place(out, |z_sq| exp_neg(-0.5 * z_sq));
    }

    #[inline]
    fn eval_diag(&self, _x: &[f64]) -> f64 {
        1.0
    }

    /// κ2 = 1, κ4 = 3 (see [`super::KernelRegularity`]).
    fn regularity(&self) -> Option<super::KernelRegularity> {
        Some(super::KernelRegularity::of_family(
            None,
            vec![self.lengthscale],
        ))
    }

    /// ∂k/∂x = −k(x, y)(x − y)/ℓ².
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        let k = self.eval(x, y);
        if k == 0.0 {
            // Far apart (or a length-scale so small that (x − y)/ℓ² overflows): the gradient
            // underflows with k.
            out.fill(0.0);
            return Ok(());
        }
        for ((o, a), b) in out.iter_mut().zip(x).zip(y) {
            *o = -k * ((a - b) * self.inv_lengthscale) * self.inv_lengthscale;
        }
        Ok(())
    }

    fn diag_gradient(&self, _x: &[f64], out: &mut [f64]) -> Result<()> {
        out.fill(0.0);
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for Rbf {
    fn kind() -> String {
        "rbf".into()
    }
    fn restore(&mut self) -> Result<()> {
        *self =
            Self::new(self.lengthscale).map_err(crate::snapshot::rebuild_error("rbf kernel"))?;
        Ok(())
    }
}
