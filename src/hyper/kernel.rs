//! The kernel whose hyperparameters are fitted: a stationary family (RBF or Matérn) with an
//! output variance s² and one shared length-scale or one per input dimension.

use crate::error::{Error, Result, positive};
use crate::kernel::{Kernel, Matern, Rbf, check_lengthscale};

/// The family of a [`FittedKernel`]: its profile κ(r̃) as a function of the scaled distance
/// r̃ (Rasmussen & Williams 2006 §4.2.1).
///
/// | family | κ(r̃) |
/// |---|---|
/// | `Rbf` | exp(−r̃²/2) |
/// | `Matern { nu }` | 2^{1−ν}/Γ(ν) z^ν K_ν(z), z = √(2ν) r̃ (R&W Eq. 4.14); closed forms at ν = 1/2, 3/2, 5/2 |
///
/// ν is any value [`Matern::new`] accepts (finite, in (0, 100]).
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::KernelFamily;
/// assert_eq!(KernelFamily::default(), KernelFamily::Matern { nu: 2.5 });
/// assert_eq!(KernelFamily::Rbf.smoothness(), None);
/// assert!(KernelFamily::Matern { nu: 0.0 }.check().is_err());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KernelFamily {
    /// The squared-exponential kernel ([`Rbf`]).
    Rbf,
    /// The Matérn kernel of smoothness ν ([`Matern`]).
    Matern {
        /// The smoothness ν ∈ (0, 100].
        nu: f64,
    },
}

impl Default for KernelFamily {
    /// Matérn ν = 5/2, the usual default of Bayesian optimisation (twice differentiable
    /// sample paths without the RBF kernel's infinite smoothness).
    fn default() -> Self {
        Self::Matern { nu: 2.5 }
    }
}

impl KernelFamily {
    /// Checks ν.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a Matérn ν that is not a finite number in (0, 100].
    pub fn check(&self) -> Result<()> {
        self.profile(1.0).map(|_| ())
    }

    /// The Matérn smoothness ν, `None` for the RBF kernel (as [`Kernel::smoothness`]).
    pub fn smoothness(&self) -> Option<f64> {
        match *self {
            Self::Rbf => None,
            Self::Matern { nu } => Some(nu),
        }
    }

    /// The family kernel with length-scale `lengthscale` and k(x, x) = 1.
    fn profile(&self, lengthscale: f64) -> Result<Profile> {
        Ok(match *self {
            Self::Rbf => Profile::Rbf(Rbf::new(lengthscale)?),
            Self::Matern { nu } => Profile::Matern(Matern::new(nu, lengthscale)?),
        })
    }
}

/// A family kernel of the crate, unit variance.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Profile {
    Rbf(Rbf),
    Matern(Matern),
}

impl Profile {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        match self {
            Self::Rbf(k) => k.eval(x, y),
            Self::Matern(k) => k.eval(x, y),
        }
    }
    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        match self {
            Self::Rbf(k) => k.eval_rows(rows, y, out),
            Self::Matern(k) => k.eval_rows(rows, y, out),
        }
    }
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        match self {
            Self::Rbf(k) => k.gradient(x, y, out),
            Self::Matern(k) => k.gradient(x, y, out),
        }
    }
}

/// s² · κ(r̃) with r̃² = Σᵢ ((xᵢ − x′ᵢ)/ℓᵢ)²: the stationary kernel that
/// [`super::fit_hyperparameters`] fits, with a family [`KernelFamily`], an output variance s²
/// and either one length-scale shared by every coordinate or one per coordinate (automatic
/// relevance determination, Rasmussen & Williams 2006 §5.1, Eq. 5.2).
///
/// - **Shared ℓ** ([`FittedKernel::shared`]): any input dimension; evaluated by the family
///   kernel built with that ℓ ([`Rbf`] or [`Matern`]) times s², so values, vectorised columns
///   and gradients are those of `Matern::new(ν, ℓ)?.scaled(s²)?` bit for bit (and of
///   `Matern::new(ν, ℓ)?` itself when s² = 1).
/// - **One ℓ per coordinate** ([`FittedKernel::per_dimension`]): inputs must have exactly as
///   many coordinates as there are length-scales ([`Kernel::check_dim`]). r̃ is formed first
///   (without underflow for points a few ulps apart) and κ is the family kernel with ℓ = 1
///   evaluated at the one-dimensional points r̃ and 0.
///
/// The gradient in the first argument is ∂k/∂xᵢ = s² κ′(r̃) (dᵢ/r̃)/ℓᵢ with dᵢ = (xᵢ − x′ᵢ)/ℓᵢ
/// (the zero vector at x = x′, with the conventions of [`Matern`] for ν ≤ 1/2), and
/// k(x, x) = s².
///
/// **Output variance and B.** The confidence bounds assume k(x, x) ≤ 1 and read B as a bound
/// on ‖f‖ in the RKHS of the kernel *as given*. Scaling the kernel scales that norm:
/// ‖f‖_{H(s²k)} = ‖f‖_{H(k)}/s (Aronszajn 1950), so the same B is a different assumption for
/// every s². [`super::FitOptions`] keeps s² = 1 unless told otherwise.
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FittedKernel, KernelFamily};
/// use kernel_bandits::kernel::{Kernel, KernelExt, Matern};
/// let shared = FittedKernel::shared(KernelFamily::Matern { nu: 2.5 }, 0.5, 2.0)?;
/// let reference = Matern::new(2.5, 0.5)?.scaled(2.0)?;
/// let (x, y) = ([0.1, 0.2], [0.4, -0.3]);
/// assert_eq!(shared.eval(&x, &y), reference.eval(&x, &y));
///
/// // ARD: a length-scale per coordinate; the second coordinate barely matters.
/// let ard = FittedKernel::per_dimension(KernelFamily::Rbf, &[0.5, 100.0], 1.0)?;
/// let r_sq: f64 = (0.3f64 / 0.5).powi(2) + (0.5f64 / 100.0).powi(2);
/// assert!((ard.eval(&x, &y) - (-0.5 * r_sq).exp()).abs() < 1e-15);
/// assert!(ard.check_dim(3).is_err());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FittedKernel {
    family: KernelFamily,
    /// One value (shared) or one per coordinate.
    lengthscales: Vec<f64>,
    per_dimension: bool,
    variance: f64,
    /// 1/ℓᵢ (per dimension only; empty when shared).
    inv_lengthscales: Vec<f64>,
    /// The family kernel: with the shared ℓ, or with ℓ = 1 per dimension.
    profile: Profile,
}

impl FittedKernel {
    /// s² · k_family with one length-scale ℓ for every coordinate.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid ν ([`KernelFamily::check`]), an ℓ that is not
    /// finite and positive with a finite 1/ℓ, or an s² that is not finite and positive.
    pub fn shared(family: KernelFamily, lengthscale: f64, variance: f64) -> Result<Self> {
        let profile = family.profile(lengthscale)?;
        Ok(Self {
            family,
            lengthscales: vec![lengthscale],
            per_dimension: false,
            variance: positive("variance", variance)?,
            inv_lengthscales: Vec::new(),
            profile,
        })
    }

    /// s² · κ(r̃) with one length-scale per coordinate: inputs then have `lengthscales.len()`
    /// coordinates.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no length-scale, an invalid ν, an ℓᵢ that is not finite
    /// and positive with a finite 1/ℓᵢ, or an s² that is not finite and positive.
    pub fn per_dimension(
        family: KernelFamily,
        lengthscales: &[f64],
        variance: f64,
    ) -> Result<Self> {
        if lengthscales.is_empty() {
            return Err(Error::InvalidParameter {
                name: "lengthscales",
                value: 0.0,
                expected: "at least one length-scale",
            });
        }
        let inv_lengthscales = lengthscales
            .iter()
            .map(|&l| check_lengthscale(l))
            .collect::<Result<Vec<f64>>>()?;
        Ok(Self {
            family,
            lengthscales: lengthscales.to_vec(),
            per_dimension: true,
            variance: positive("variance", variance)?,
            inv_lengthscales,
            profile: family.profile(1.0)?,
        })
    }

    /// The family.
    pub fn family(&self) -> KernelFamily {
        self.family
    }

    /// The length-scales: one value if shared, one per coordinate otherwise.
    pub fn lengthscales(&self) -> &[f64] {
        &self.lengthscales
    }

    /// Whether there is one length-scale per coordinate.
    pub fn is_per_dimension(&self) -> bool {
        self.per_dimension
    }

    /// The output variance s² = k(x, x).
    pub fn variance(&self) -> f64 {
        self.variance
    }

    /// r̃ = ‖((xᵢ − x′ᵢ)/ℓᵢ)ᵢ‖ (per dimension), without underflow for points a few ulps apart:
    /// where the sum of squares is not a normal double, m ‖d/m‖ with m the largest |dᵢ|.
    #[inline]
    fn scaled_distance(&self, x: &[f64], y: &[f64]) -> f64 {
        let scaled = x
            .iter()
            .zip(y)
            .zip(&self.inv_lengthscales)
            .map(|((a, b), inv)| (a - b) * inv);
        let sum_sq: f64 = scaled.clone().map(|d| d * d).sum();
        if sum_sq >= f64::MIN_POSITIVE || sum_sq.is_nan() {
            return sum_sq.sqrt();
        }
        // `f64::max` skips NaN, and a NaN sum was returned above: largest is a number ≥ 0.
        let largest = scaled.clone().map(f64::abs).fold(0.0, f64::max);
        if largest == 0.0 {
            return largest;
        }
        let ratio_sq: f64 = scaled.map(|d| (d / largest) * (d / largest)).sum();
        largest * ratio_sq.sqrt()
    }
}

impl Kernel for FittedKernel {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let unit = if self.per_dimension {
            self.profile.eval(&[self.scaled_distance(x, y)], &[0.0])
        } else {
            self.profile.eval(x, y)
        };
        self.variance * unit
    }

    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        if self.per_dimension {
            // The scaled distances, then the family's vectorised column on them as
            // one-dimensional points against 0.
            let distances: Vec<f64> = rows
                .chunks_exact(y.len())
                .map(|x| self.scaled_distance(x, y))
                .collect();
            self.profile.eval_rows(&distances, &[0.0], out);
        } else {
            self.profile.eval_rows(rows, y, out);
        }
        for v in out.iter_mut() {
            *v *= self.variance;
        }
    }

    #[inline]
    fn eval_diag(&self, _x: &[f64]) -> f64 {
        self.variance
    }

    /// Per dimension: inputs must have one coordinate per length-scale.
    fn check_dim(&self, dim: usize) -> Result<()> {
        if self.per_dimension && dim != self.lengthscales.len() {
            return Err(Error::DimensionMismatch {
                expected: self.lengthscales.len(),
                got: dim,
            });
        }
        Ok(())
    }

    fn smoothness(&self) -> Option<f64> {
        self.family.smoothness()
    }

    /// The family's profile, the fitted variance and length-scales.
    fn regularity(&self) -> Option<crate::kernel::KernelRegularity> {
        Some(
            crate::kernel::KernelRegularity::of_family(
                self.family.smoothness(),
                self.lengthscales.clone(),
            )
            .scaled(self.variance),
        )
    }

    /// ∂k/∂xᵢ = s² κ′(r̃) (dᵢ/r̃)/ℓᵢ, dᵢ = (xᵢ − x′ᵢ)/ℓᵢ; zero at x = x′.
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        if self.per_dimension {
            let r = self.scaled_distance(x, y);
            let mut slope = [0.0];
            // κ′(r̃): the unit kernel's derivative at the one-dimensional point r̃ ≥ 0.
            self.profile.gradient(&[r], &[0.0], &mut slope)?;
            let slope = slope[0];
            if slope == 0.0 || r == 0.0 {
                out.fill(0.0);
                return Ok(());
            }
            for (((o, a), b), inv) in out.iter_mut().zip(x).zip(y).zip(&self.inv_lengthscales) {
                let d = (a - b) * inv;
                // A coordinate where x and y agree has no slope (no ∞ · 0 for ν < 1/2).
                *o = if d == 0.0 {
                    0.0
                } else {
                    self.variance * (slope * (d / r)) * inv
                };
            }
        } else {
            self.profile.gradient(x, y, out)?;
            for v in out.iter_mut() {
                *v *= self.variance;
            }
        }
        Ok(())
    }

    /// Zero: k(x, x) = s² for every x.
    fn diag_gradient(&self, _x: &[f64], out: &mut [f64]) -> Result<()> {
        out.fill(0.0);
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl crate::snapshot::Snapshot for FittedKernel {
    fn kind() -> String {
        "fitted-kernel".into()
    }
    /// Rebuilt from the family, the length-scales and s² by the checked constructors; the
    /// saved reciprocals and family kernel are not trusted.
    fn restore(&mut self) -> Result<()> {
        let rebuilt = if self.per_dimension {
            Self::per_dimension(self.family, &self.lengthscales, self.variance)
        } else {
            crate::snapshot::ensure(self.lengthscales.len() == 1, || {
                format!(
                    "fitted kernel: {} shared length-scales",
                    self.lengthscales.len()
                )
            })?;
            Self::shared(self.family, self.lengthscales[0], self.variance)
        };
        *self = rebuilt.map_err(crate::snapshot::rebuild_error("fitted kernel"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelExt;

    #[test]
    fn shared_is_the_scaled_family_kernel_bit_for_bit() {
        let xs = [[0.1, 0.2, -0.3], [0.4, -0.3, 0.0], [0.1, 0.2, -0.3 + 1e-15]];
        for nu in [0.5, 1.5, 2.5, 2.0, 0.3] {
            let fitted = FittedKernel::shared(KernelFamily::Matern { nu }, 0.7, 1.7).unwrap();
            let reference = Matern::new(nu, 0.7).unwrap().scaled(1.7).unwrap();
            let unit = FittedKernel::shared(KernelFamily::Matern { nu }, 0.7, 1.0).unwrap();
            let plain = Matern::new(nu, 0.7).unwrap();
            for x in &xs {
                for y in &xs {
                    assert_eq!(fitted.eval(x, y), reference.eval(x, y));
                    assert_eq!(unit.eval(x, y), plain.eval(x, y));
                    let (mut g, mut h) = ([0.0; 3], [0.0; 3]);
                    fitted.gradient(x, y, &mut g).unwrap();
                    reference.gradient(x, y, &mut h).unwrap();
                    assert_eq!(g, h);
                }
            }
            let rows: Vec<f64> = xs.iter().flatten().copied().collect();
            let (mut a, mut b) = ([0.0; 3], [0.0; 3]);
            fitted.eval_rows(&rows, &xs[1], &mut a);
            reference.eval_rows(&rows, &xs[1], &mut b);
            assert_eq!(a, b);
        }
        let rbf = FittedKernel::shared(KernelFamily::Rbf, 0.3, 1.0).unwrap();
        let plain = Rbf::new(0.3).unwrap();
        assert_eq!(rbf.eval(&xs[0], &xs[1]), plain.eval(&xs[0], &xs[1]));
    }

    #[test]
    fn per_dimension_rows_match_scalar_and_tiny_distances() {
        for family in [
            KernelFamily::Rbf,
            KernelFamily::Matern { nu: 0.5 },
            KernelFamily::Matern { nu: 2.5 },
            KernelFamily::Matern { nu: 0.3 },
        ] {
            let k = FittedKernel::per_dimension(family, &[0.3, 1e-3, 20.0], 1.3).unwrap();
            let y = [0.2, 0.5, -1.0];
            let rows = [
                0.2,
                0.5,
                -1.0,
                0.2 + 1e-300,
                0.5,
                -1.0,
                0.0,
                0.5 + 4e-4,
                3.0,
                f64::from_bits(0.2f64.to_bits() + 3),
                0.5,
                -1.0,
            ];
            let mut out = [0.0; 4];
            k.eval_rows(&rows, &y, &mut out);
            for (o, x) in out.iter().zip(rows.chunks_exact(3)) {
                let scalar = k.eval(x, &y);
                assert!((o - scalar).abs() <= 1e-15 * scalar.abs(), "{family:?}");
                assert!(o.is_finite() && *o <= 1.3 && *o >= 0.0);
            }
            assert_eq!(out[0], 1.3);
            // The tiny distance 10⁻³⁰⁰/0.3 is kept, not lost to underflow of its square.
            let r = k.scaled_distance(&[1e-300, 0.5, -1.0], &[0.0, 0.5, -1.0]);
            assert!((r - 1e-300 / 0.3).abs() <= 1e-15 * r);
        }
    }

    #[test]
    fn constructors_reject_bad_parameters() {
        let family = KernelFamily::Matern { nu: 2.5 };
        assert!(FittedKernel::shared(family, f64::NAN, 1.0).is_err());
        assert!(FittedKernel::shared(family, 1.0, 0.0).is_err());
        assert!(FittedKernel::shared(KernelFamily::Matern { nu: f64::NAN }, 1.0, 1.0).is_err());
        assert!(FittedKernel::per_dimension(family, &[], 1.0).is_err());
        assert!(FittedKernel::per_dimension(family, &[1.0, -1.0], 1.0).is_err());
        assert!(FittedKernel::per_dimension(family, &[1.0, 1.0], f64::INFINITY).is_err());
    }
}
