//! Positive-definite kernels (Rasmussen & Williams 2006 §4.2).
//!
//! A [`Kernel`] has one required method, [`Kernel::eval`]; Gram matrices, cross-kernel
//! matrices and diagonals are provided. Kernels are immutable values, `Send + Sync`, and can be
//! used through `&K`, `Box<K>` and `Arc<K>` (including `Box<dyn Kernel>`).
//!
//! | kernel | formula (r = ‖x − x′‖) |
//! |---|---|
//! | [`Rbf`] | exp(−r² / (2ℓ²)) |
//! | [`Matern`] ν = 1/2 | exp(−r/ℓ) |
//! | [`Matern`] ν = 3/2 | (1 + √3 r/ℓ) exp(−√3 r/ℓ) |
//! | [`Matern`] ν = 5/2 | (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ) |
//! | [`Matern`] any ν ∈ (0, 100] | 2^{1−ν}/Γ(ν) z^ν K_ν(z), z = √(2ν) r/ℓ (R&W Eq. 4.14) |
//! | [`Linear`] | xᵀx′ + b |
//!
//! Every kernel has a gradient in its first argument, [`Kernel::gradient`] = ∂k(x, x′)/∂x, and
//! the gradient of its diagonal, [`Kernel::diag_gradient`] = ∇ₓ k(x, x):
//!
//! | kernel | ∂k(x, x′)/∂x | ∇ₓ k(x, x) |
//! |---|---|---|
//! | [`Rbf`] | −k (x − x′)/ℓ² | 0 |
//! | [`Matern`] ν > 1 | −ν/((ν−1)ℓ²) k_{ν−1}(z) (x − x′) | 0 |
//! | [`Matern`] ν ≤ 1 | −(√(2ν)/ℓ) s_ν(z) (x − x′)/r, s_ν = −dk/dz; 0 at x = x′ | 0 |
//! | [`Linear`] | x′ | 2x |
//! | [`Scaled`] | s² ∇k | s² ∇k(x, x) |
//! | [`Sum`] | ∇k₁ + ∇k₂ | ∇k₁(x, x) + ∇k₂(x, x) |
//! | [`Product`] | k₂ ∇k₁ + k₁ ∇k₂ | k₂(x, x) ∇k₁(x, x) + k₁(x, x) ∇k₂(x, x) |
//! | [`Sliced`] | ∇k on the range, 0 elsewhere | likewise |
//!
//! The Matérn rows follow from Eq. 4.14 of Rasmussen & Williams (2006) and
//! d/dz[z^ν K_ν(z)] = −z^ν K_{ν−1}(z) (DLMF 10.29.4), with k_{ν−1} the normalised Matérn
//! function of order ν − 1 at the same z = √(2ν) r/ℓ. For ν ≤ 1/2 the kernel is not
//! differentiable at x = x′ (a cusp at ν = 1/2, an infinite slope below); the method returns
//! the zero vector there by convention (see [`Matern`]).
//!
//! Combinators: [`Scaled`] (output scale s²), [`Sum`], [`Product`] and [`Sliced`] (a kernel on
//! a range of the coordinates, for joint context–action kernels), built with [`KernelExt`].

mod combinators;
mod linear;
mod matern;
mod radial;
mod rbf;

use std::sync::Arc;

use nalgebra::{DMatrix, DVector};

use crate::error::{Error, Result};
use crate::points::Points;

pub use combinators::{Product, Scaled, Sliced, Sum};
pub use linear::Linear;
pub use matern::Matern;
pub use rbf::Rbf;

/// A symmetric positive-semidefinite kernel k(x, x′) on ℝ^d.
///
/// Implementors provide [`Kernel::eval`]; they may override [`Kernel::eval_diag`] (e.g. with
/// a constant for stationary kernels), [`Kernel::check_dim`] (for kernels that only accept some
/// input dimensions) and [`Kernel::smoothness`].
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, Matern};
/// let k = Matern::new(1.5, 0.5)?;
/// let r: f64 = 0.5; // one length-scale apart
/// let expected = (1.0 + 3f64.sqrt()) * (-(3f64.sqrt())).exp();
/// assert!((k.eval(&[0.0], &[r]) - expected).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub trait Kernel: Send + Sync + std::fmt::Debug {
    /// k(x, y). Both points have the same, accepted dimension (callers check with
    /// [`Kernel::check_dim`] first).
    fn eval(&self, x: &[f64], y: &[f64]) -> f64;

    /// Writes k(xᵢ, y) into `out[i]` for every row xᵢ of `rows`, a row-major matrix with
    /// `y.len()` columns and `out.len()` rows. The hot loop of every exact posterior; stationary
    /// kernels override it with a vectorised version.
    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        for (o, x) in out.iter_mut().zip(rows.chunks_exact(y.len())) {
            *o = self.eval(x, y);
        }
    }

    /// k(x, x).
    fn eval_diag(&self, x: &[f64]) -> f64 {
        self.eval(x, x)
    }

    /// Whether points of `dim` coordinates are valid inputs.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] when they are not (e.g. a [`Sliced`] kernel whose range does
    /// not fit).
    fn check_dim(&self, dim: usize) -> Result<()> {
        let _ = dim;
        Ok(())
    }

    /// The Matérn smoothness ν if the kernel's RKHS is a Sobolev space of finite smoothness,
    /// `None` for infinitely smooth kernels (RBF, linear). Used for the default
    /// covariance scale c = T^{−d/(2d+2ν)} of Flynn & Reeb (2024) §7.
    fn smoothness(&self) -> Option<f64> {
        None
    }

    /// What a proven bound over a box needs to know about the kernel
    /// ([`crate::decide::certify_box`]): `Some` only if k(x, y) = s² κ(‖(x − y)/ℓ‖) for a unit
    /// profile κ that is nonincreasing on [0, ∞) (so that, over a box centred at c, k(c, ·) is
    /// smallest at its corners), with the constants of [`KernelRegularity`]. `None` (the
    /// provided method) for every other kernel: the box bound then refuses it.
    fn regularity(&self) -> Option<KernelRegularity> {
        None
    }

    /// The gradient ∂k(x, y)/∂x with respect to the first argument, written into `out`
    /// (`x.len()` entries). The confidence bounds' gradients and the continuous maximisation
    /// of [`crate::agent::BanditAgent::select_in`] are built on it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a kernel without a gradient (the provided method; every
    /// kernel of this crate has one).
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        let _ = (x, y, out);
        Err(Error::Unsupported {
            what: format!("the gradient of the kernel {self:?}"),
        })
    }

    /// The gradient of x ↦ k(x, x), written into `out`: zero for stationary kernels
    /// (k(x, x) is constant), 2x for the linear kernel.
    ///
    /// # Errors
    /// As [`Kernel::gradient`].
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        let _ = (x, out);
        Err(Error::Unsupported {
            what: format!("the gradient of the kernel {self:?}"),
        })
    }

    /// The Gram matrix [k(xᵢ, xⱼ)].
    ///
    /// # Errors
    /// As [`Kernel::check_dim`].
    fn gram(&self, xs: &Points<'_>) -> Result<DMatrix<f64>> {
        self.check_dim(xs.dim())?;
        let n = xs.len();
        let mut out = DMatrix::zeros(n, n);
        let (mut si, mut sj) = (vec![0.0; xs.dim()], vec![0.0; xs.dim()]);
        for i in 0..n {
            let xi = xs.point(i, &mut si);
            for j in 0..=i {
                let v = self.eval(xi, xs.point(j, &mut sj));
                out[(i, j)] = v;
                out[(j, i)] = v;
            }
        }
        Ok(out)
    }

    /// The cross-kernel matrix [k(xᵢ, yⱼ)].
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the two sets differ in dimension; as
    /// [`Kernel::check_dim`].
    fn cross(&self, xs: &Points<'_>, ys: &Points<'_>) -> Result<DMatrix<f64>> {
        if !xs.is_empty() && !ys.is_empty() && xs.dim() != ys.dim() {
            return Err(Error::DimensionMismatch {
                expected: xs.dim(),
                got: ys.dim(),
            });
        }
        self.check_dim(xs.dim().max(ys.dim()))?;
        let mut out = DMatrix::zeros(xs.len(), ys.len());
        let (mut si, mut sj) = (vec![0.0; xs.dim()], vec![0.0; ys.dim()]);
        for i in 0..xs.len() {
            let xi = xs.point(i, &mut si);
            for j in 0..ys.len() {
                out[(i, j)] = self.eval(xi, ys.point(j, &mut sj));
            }
        }
        Ok(out)
    }

    /// The diagonal [k(xᵢ, xᵢ)].
    ///
    /// # Errors
    /// As [`Kernel::check_dim`].
    fn diag(&self, xs: &Points<'_>) -> Result<DVector<f64>> {
        self.check_dim(xs.dim())?;
        let mut scratch = vec![0.0; xs.dim()];
        Ok(DVector::from_iterator(
            xs.len(),
            (0..xs.len()).map(|i| self.eval_diag(xs.point(i, &mut scratch))),
        ))
    }
}

/// The regularity of a stationary kernel k(x, y) = s² κ(‖(x − y)/ℓ‖) with a nonincreasing
/// unit profile κ (κ(0) = 1), one length-scale ℓᵢ per coordinate or one for all
/// ([`Kernel::regularity`]).
///
/// With r the scaled distance, the profile's derivatives at 0 (Rasmussen & Williams 2006
/// §4.2; checked symbolically and, for general ν, against a series fit of Eq. 4.14):
///
/// | kernel | κ2 = −κ″(0) | κ4 = κ⁗(0) |
/// |---|---|---|
/// | RBF | 1 | 3 |
/// | Matérn ν > 2 | ν/(ν − 1) | 3ν²/((ν − 1)(ν − 2)) (25 at ν = 5/2) |
/// | Matérn 1 < ν ≤ 2 | ν/(ν − 1) | none (κ is not four times differentiable at 0) |
/// | Matérn ν ≤ 1 | none | none (κ(r) = 1 − O(r^{2ν}), or 1 − √3 r… at ν = 3/2 is covered above) |
///
/// In the feature space, along any unit direction u, ‖∂ᵤφ(x)‖² ≤ s²κ2/ℓ_min² and
/// ‖∂ᵤ²φ(x)‖² ≤ s²κ4/ℓ_min⁴ ([`KernelRegularity::curvature`], [`KernelRegularity::fourth`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KernelRegularity {
    /// s² = k(x, x).
    pub variance: f64,
    /// ℓ: one per coordinate, or one value shared by all.
    pub lengthscales: Vec<f64>,
    /// κ2 = −κ″(0) of the unit profile, if κ is twice differentiable at 0.
    pub profile_curvature: Option<f64>,
    /// κ4 = κ⁗(0) of the unit profile, if κ is four times differentiable at 0.
    pub profile_fourth: Option<f64>,
}

impl KernelRegularity {
    /// A regularity description (see the type's documentation).
    pub fn new(
        variance: f64,
        lengthscales: Vec<f64>,
        profile_curvature: Option<f64>,
        profile_fourth: Option<f64>,
    ) -> Self {
        Self {
            variance,
            lengthscales,
            profile_curvature,
            profile_fourth,
        }
    }

    /// The Matérn profile of smoothness ν (or the RBF profile for `None`) at length-scale ℓ.
    pub(crate) fn of_family(nu: Option<f64>, lengthscales: Vec<f64>) -> Self {
        let (k2, k4) = match nu {
            None => (Some(1.0), Some(3.0)),
            Some(nu) => (
                (nu > 1.0).then(|| nu / (nu - 1.0)),
                (nu > 2.0).then(|| 3.0 * nu * nu / ((nu - 1.0) * (nu - 2.0))),
            ),
        };
        Self::new(1.0, lengthscales, k2, k4)
    }

    /// The shortest length-scale.
    pub fn shortest_lengthscale(&self) -> f64 {
        self.lengthscales
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    }

    /// k2 ≥ ‖∂ᵤφ(x)‖² = −∂²ₛ k(x, x + su)|ₛ₌₀ for every unit u: s²κ2/ℓ_min².
    pub fn curvature(&self) -> Option<f64> {
        let l = self.shortest_lengthscale();
        self.profile_curvature
            .map(|k2| self.variance * k2 / (l * l))
    }

    /// k4 ≥ ‖∂ᵤ²φ(x)‖² = ∂⁴ₛ k(x, x + su)|ₛ₌₀ for every unit u: s²κ4/ℓ_min⁴.
    pub fn fourth(&self) -> Option<f64> {
        let l = self.shortest_lengthscale();
        self.profile_fourth
            .map(|k4| self.variance * k4 / (l * l * l * l))
    }

    /// The same kernel multiplied by an output scale.
    pub(crate) fn scaled(mut self, variance: f64) -> Self {
        self.variance *= variance;
        self
    }
}

macro_rules! forward_kernel {
    ($($wrapper:ty),*) => {$(
        impl<K: Kernel + ?Sized> Kernel for $wrapper {
            #[inline]
            fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
                (**self).eval(x, y)
            }
            #[inline]
            fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
                (**self).eval_rows(rows, y, out)
            }
            #[inline]
            fn eval_diag(&self, x: &[f64]) -> f64 {
                (**self).eval_diag(x)
            }
            fn check_dim(&self, dim: usize) -> Result<()> {
                (**self).check_dim(dim)
            }
            fn smoothness(&self) -> Option<f64> {
                (**self).smoothness()
            }
            fn regularity(&self) -> Option<KernelRegularity> {
                (**self).regularity()
            }
            #[inline]
            fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
                (**self).gradient(x, y, out)
            }
            #[inline]
            fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
                (**self).diag_gradient(x, out)
            }
        }
    )*};
}
forward_kernel!(&K, Box<K>, Arc<K>);

/// Combinator methods available on every sized [`Kernel`].
pub trait KernelExt: Kernel + Sized {
    /// s² · k: multiplies the kernel by an output scale (signal variance) `variance > 0`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `variance` is not finite and positive.
    fn scaled(self, variance: f64) -> Result<Scaled<Self>> {
        Scaled::new(self, variance)
    }

    /// k + other.
    fn plus<K2: Kernel>(self, other: K2) -> Sum<Self, K2> {
        Sum::new(self, other)
    }

    /// k · other (e.g. a context kernel times an action kernel).
    fn times<K2: Kernel>(self, other: K2) -> Product<Self, K2> {
        Product::new(self, other)
    }

    /// The kernel applied to the coordinates `range` of its inputs.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the range is empty; [`Error::DimensionMismatch`] if the
    /// kernel does not accept inputs of `range.len()` coordinates.
    fn on(self, range: std::ops::Range<usize>) -> Result<Sliced<Self>> {
        Sliced::new(self, range)
    }
}

impl<K: Kernel + Sized> KernelExt for K {}

/// Checks that points of dimension `dim` can be compared with stored points of dimension
/// `stored` (or, with nothing stored yet, that `kernel` accepts them).
pub(crate) fn check_against_stored<K: Kernel + ?Sized>(
    kernel: &K,
    stored: Option<usize>,
    dim: usize,
) -> Result<()> {
    match stored {
        Some(expected) if expected != dim => Err(Error::DimensionMismatch { expected, got: dim }),
        Some(_) => Ok(()),
        None => kernel.check_dim(dim),
    }
}

/// Squared Euclidean distance between `x` and `y`, each coordinate multiplied by `inv_scale`
/// first (so that tiny length-scales overflow to +∞ rather than producing 0·∞ = NaN).
#[inline]
pub(crate) fn scaled_sq_dist(x: &[f64], y: &[f64], inv_scale: f64) -> f64 {
    x.iter()
        .zip(y)
        .map(|(a, b)| {
            let d = (a - b) * inv_scale;
            d * d
        })
        .sum()
}

/// Validates a length-scale: finite, positive, with a finite reciprocal.
pub(crate) fn check_lengthscale(lengthscale: f64) -> Result<f64> {
    let inv = 1.0 / lengthscale;
    if lengthscale > 0.0 && lengthscale.is_finite() && inv.is_finite() {
        Ok(inv)
    } else {
        Err(Error::InvalidParameter {
            name: "lengthscale",
            value: lengthscale,
            expected: "a finite number > 0 with a finite reciprocal",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::AsPoints;

    #[test]
    fn trait_objects_and_wrappers() {
        let boxed: Box<dyn Kernel> = Box::new(Rbf::new(0.5).unwrap());
        let shared = Arc::new(Matern::new(2.5, 0.5).unwrap());
        let by_ref = &*shared;
        let x = [0.1, 0.2];
        let y = [0.3, -0.1];
        assert_eq!(boxed.eval(&x, &y), Rbf::new(0.5).unwrap().eval(&x, &y));
        assert_eq!(shared.eval(&x, &y), by_ref.eval(&x, &y));
        assert_eq!(Box::new(by_ref).smoothness(), Some(2.5));
    }

    #[test]
    fn cross_rejects_mixed_dimensions() {
        let a = vec![vec![0.0, 1.0]];
        let b = vec![vec![0.0]];
        let k = Rbf::new(1.0).unwrap();
        assert!(matches!(
            k.cross(&a.as_points().unwrap(), &b.as_points().unwrap()),
            Err(Error::DimensionMismatch { .. })
        ));
    }
}
