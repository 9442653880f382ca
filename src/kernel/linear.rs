//! The linear (dot-product) kernel.

use super::Kernel;
use crate::error::{Result, non_negative};

/// Linear kernel k(x, x′) = xᵀx′ + b with bias b ≥ 0 (Rasmussen & Williams 2006 §4.2.2).
///
/// Its RKHS holds the affine functions; k(x, x) is not bounded by 1, so scale the inputs if the
/// theory's κ = 1 matters to you.
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, Linear};
/// let k = Linear::with_bias(0.5)?;
/// assert_eq!(k.eval(&[1.0, 2.0], &[3.0, -1.0]), 1.5);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Linear {
    bias: f64,
}

impl Linear {
    /// Linear kernel without bias: k(x, x′) = xᵀx′.
    pub fn new() -> Self {
        Self { bias: 0.0 }
    }

    /// Linear kernel with bias b: k(x, x′) = xᵀx′ + b.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] unless b is finite and ≥ 0.
    pub fn with_bias(bias: f64) -> Result<Self> {
        Ok(Self {
            bias: non_negative("bias", bias)?,
        })
    }

    /// The bias b.
    pub fn bias(&self) -> f64 {
        self.bias
    }
}

impl Kernel for Linear {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>() + self.bias
    }

    /// ∂(xᵀy + b)/∂x = y.
    fn gradient(&self, _x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        for (o, b) in out.iter_mut().zip(y) {
            *o = *b;
        }
        Ok(())
    }

    /// ∇(xᵀx + b) = 2x.
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        for (o, a) in out.iter_mut().zip(x) {
            *o = 2.0 * a;
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for Linear {
    fn kind() -> String {
        "linear".into()
    }
    fn restore(&mut self) -> crate::error::Result<()> {
        *self =
            Self::with_bias(self.bias).map_err(crate::snapshot::rebuild_error("linear kernel"))?;
        Ok(())
    }
}
