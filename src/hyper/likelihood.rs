//! The log marginal likelihood of a zero-mean GP and its gradient in the log-parameters
//! (Rasmussen & Williams 2006 Eq. 2.30, Eq. 5.9 and Alg. 2.1).

use faer::linalg::matmul::triangular::BlockStructure;
use faer::linalg::solvers::{Llt, Solve};
use faer::{Mat, Side};

use crate::error::{Error, Result, one_target_per_point, positive};
use crate::kernel::Kernel;
use crate::points::{AsPoints, Points};

use super::FittedKernel;

/// ln 2π.
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// The log marginal likelihood and its gradient in the log-parameters, from
/// [`log_marginal_likelihood_gradient`].
///
/// With K_y = K + σ²I, α = K_y⁻¹y and ∂K_y/∂θ (Rasmussen & Williams 2006 Eq. 5.9):
/// ∂ ln p(y)/∂θ = ½ tr((ααᵀ − K_y⁻¹) ∂K_y/∂θ), for θ = ln ℓᵢ, ln s² and ln σ².
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FittedKernel, KernelFamily, log_marginal_likelihood_gradient};
/// // One point: ln p = −½ y²/v − ½ ln v − ½ ln 2π with v = s² + σ², so
/// // ∂/∂ ln σ² = ½ σ² (y²/v² − 1/v), and ℓ has no effect.
/// let kernel = FittedKernel::shared(KernelFamily::Rbf, 0.5, 1.0)?;
/// let g = log_marginal_likelihood_gradient(&kernel, 0.5, &[[0.3]], &[2.0])?;
/// let v: f64 = 1.25;
/// assert!((g.log_noise_variance - 0.5 * 0.25 * (4.0 / (v * v) - 1.0 / v)).abs() < 1e-15);
/// assert_eq!(g.log_lengthscales, [0.0]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LikelihoodGradient {
    /// ln p(y | X, θ).
    pub value: f64,
    /// ∂ ln p/∂ ln ℓᵢ: one entry for a shared ℓ, one per coordinate otherwise
    /// (as [`FittedKernel::lengthscales`]).
    pub log_lengthscales: Vec<f64>,
    /// ∂ ln p/∂ ln s² (s² the output variance).
    pub log_variance: f64,
    /// ∂ ln p/∂ ln σ² (σ the noise standard deviation).
    pub log_noise_variance: f64,
}

/// The log marginal likelihood of targets y at `points` under a zero-mean GP with kernel
/// `kernel` and Gaussian noise of standard deviation σ = `noise_sd` (Rasmussen & Williams 2006
/// Eq. 2.30, computed by their Alg. 2.1):
///
/// ln p(y | X) = −½ yᵀ(K + σ²I)⁻¹y − ½ ln det(K + σ²I) − (t/2) ln 2π
///             = −½ ‖L⁻¹y‖² − Σᵢ ln Lᵢᵢ − (t/2) ln 2π,  L = chol(K + σ²I).
///
/// One Cholesky factorisation, O(t³/3). The targets are used as given: the model has mean
/// zero (as the confidence bounds, which assume f in the RKHS with no mean term). No jitter
/// is added: σ² is the only regulariser. No observations give ln p = 0.
///
/// # Errors
/// As the [`Points`] constructors (ragged rows, zero dimension, non-finite coordinates);
/// [`Error::LengthMismatch`] unless there is one target per point; [`Error::NonFinite`] for a
/// non-finite target or a non-finite result (targets so large that yᵀK⁻¹y overflows);
/// [`Error::InvalidParameter`] unless σ is finite and positive with a normal, finite σ²;
/// [`Error::DimensionMismatch`] if the kernel does not accept the points' dimension;
/// [`Error::NotPositiveDefinite`] if K + σ²I is not numerically positive definite (σ too
/// small for the conditioning of K, e.g. with duplicate inputs).
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FittedKernel, KernelFamily, log_marginal_likelihood};
/// // One point: y ~ N(0, s² + σ²).
/// let kernel = FittedKernel::shared(KernelFamily::Rbf, 0.5, 1.0)?;
/// let value = log_marginal_likelihood(&kernel, 0.5, &[[0.3]], &[0.7])?;
/// let variance: f64 = 1.0 + 0.25;
/// let expected = -0.5 * 0.49 / variance - 0.5 * variance.ln()
///     - 0.5 * (2.0 * std::f64::consts::PI).ln();
/// assert!((value - expected).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn log_marginal_likelihood<P: AsPoints + ?Sized>(
    kernel: &FittedKernel,
    noise_sd: f64,
    points: &P,
    targets: &[f64],
) -> Result<f64> {
    let data = Data::new(kernel, noise_sd, points, targets)?;
    if data.len() == 0 {
        return Ok(0.0);
    }
    Ok(data.factor(kernel, noise_sd)?.value)
}

/// [`log_marginal_likelihood`] and its gradient in the log-parameters ln ℓᵢ, ln s² and ln σ²
/// (Rasmussen & Williams 2006 Eq. 5.9 and Alg. 5.1):
///
/// ∂ ln p/∂θ = ½ tr((ααᵀ − K_y⁻¹) ∂K_y/∂θ),  α = K_y⁻¹y,  K_y = K + σ²I,
///
/// with the derivatives of the kernel matrix
/// - ∂K/∂ ln ℓᵢ: entries −(xᵢ − x′ᵢ) ∂k(x, x′)/∂xᵢ (for a radial kernel in the scaled
///   coordinates uᵢ = xᵢ/ℓᵢ, ∂k/∂ ln ℓᵢ = −(uᵢ − u′ᵢ) ∂k/∂uᵢ), summed over i for a shared ℓ;
///   zero on the diagonal;
/// - ∂K/∂ ln s² = K (k is proportional to s²);
/// - ∂K_y/∂ ln σ² = σ²I.
///
/// K_y⁻¹ = WᵀW with W = L⁻¹ is formed from the Cholesky factor L alone (R&W Alg. 5.1; the
/// trace needs every entry of it): W by triangular inversion, the lower triangle of WᵀW by a
/// triangular product, no general inverse. The cost is t³/3 flops for the factor and 2t³/3
/// for K_y⁻¹, plus t²/2 kernel gradients; K_y⁻¹ is symmetric, so the trace is summed over its
/// lower triangle.
///
/// # Errors
/// As [`log_marginal_likelihood`]; [`Error::NonFinite`] for a non-finite gradient.
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::{FittedKernel, KernelFamily, log_marginal_likelihood_gradient};
/// let points = [[0.0, 0.1], [0.3, 0.5], [0.9, 0.2]];
/// let targets = [0.2, -0.1, 0.4];
/// let kernel = FittedKernel::per_dimension(KernelFamily::Matern { nu: 1.5 }, &[0.4, 0.8], 1.0)?;
/// let g = log_marginal_likelihood_gradient(&kernel, 0.1, &points, &targets)?;
/// assert_eq!(g.log_lengthscales.len(), 2);
/// // ∂/∂ ln s² against a central difference.
/// let h: f64 = 1e-6;
/// let at = |s2: f64| -> kernel_bandits::Result<f64> {
///     let k = FittedKernel::per_dimension(KernelFamily::Matern { nu: 1.5 }, &[0.4, 0.8], s2)?;
///     kernel_bandits::hyper::log_marginal_likelihood(&k, 0.1, &points, &targets)
/// };
/// let numeric = (at(h.exp())? - at((-h).exp())?) / (2.0 * h);
/// assert!((g.log_variance - numeric).abs() < 1e-7);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn log_marginal_likelihood_gradient<P: AsPoints + ?Sized>(
    kernel: &FittedKernel,
    noise_sd: f64,
    points: &P,
    targets: &[f64],
) -> Result<LikelihoodGradient> {
    let data = Data::new(kernel, noise_sd, points, targets)?;
    let m = kernel.lengthscales().len();
    if data.len() == 0 {
        return Ok(LikelihoodGradient {
            value: 0.0,
            log_lengthscales: vec![0.0; m],
            log_variance: 0.0,
            log_noise_variance: 0.0,
        });
    }
    let factored = data.factor(kernel, noise_sd)?;
    data.gradient(kernel, noise_sd, &factored)
}

/// σ finite and positive with a normal σ² (a σ whose square underflows would leave K + σ²I
/// unregularised).
pub(crate) fn check_noise_sd(noise_sd: f64) -> Result<f64> {
    positive("noise_sd", noise_sd)?;
    if !(noise_sd * noise_sd >= f64::MIN_POSITIVE && (noise_sd * noise_sd).is_finite()) {
        return Err(Error::InvalidParameter {
            name: "noise_sd",
            value: noise_sd,
            expected: "a finite number > 0 whose square is a normal double (≳ 1.5e-154)",
        });
    }
    Ok(noise_sd)
}

/// Validated observations, copied row-major.
#[derive(Debug)]
pub(crate) struct Data<'t> {
    /// t × d, row-major.
    rows: Vec<f64>,
    dim: usize,
    targets: &'t [f64],
}

/// The factorisation at one parameter value.
#[derive(Debug)]
pub(crate) struct Factored {
    /// The signal kernel matrix K (both triangles).
    gram: Mat<f64>,
    llt: Llt<f64>,
    /// ln p(y).
    pub(crate) value: f64,
}

impl<'t> Data<'t> {
    /// Checks the points, the targets, σ and the kernel's dimension.
    pub(crate) fn new<P: AsPoints + ?Sized>(
        kernel: &FittedKernel,
        noise_sd: f64,
        points: &P,
        targets: &'t [f64],
    ) -> Result<Self> {
        let points = points.as_points()?;
        let data = Self::from_points(&points, targets)?;
        check_noise_sd(noise_sd)?;
        if data.len() > 0 {
            kernel.check_dim(data.dim)?;
        }
        Ok(data)
    }

    /// The points copied row-major, and the targets checked.
    pub(crate) fn from_points(points: &Points<'_>, targets: &'t [f64]) -> Result<Self> {
        one_target_per_point(points.len(), targets.len())?;
        if let Some(i) = targets.iter().position(|y| !y.is_finite()) {
            return Err(Error::NonFinite {
                what: format!("target {i}"),
            });
        }
        let dim = points.dim();
        let mut rows = Vec::with_capacity(points.len() * dim);
        points.for_each(|_, x| rows.extend_from_slice(x));
        Ok(Self { rows, dim, targets })
    }

    /// The number of observations t.
    pub(crate) fn len(&self) -> usize {
        self.targets.len()
    }

    /// The number of coordinates d.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// Row-major coordinates.
    pub(crate) fn rows(&self) -> &[f64] {
        &self.rows
    }

    /// The targets.
    pub(crate) fn targets(&self) -> &[f64] {
        self.targets
    }

    fn point(&self, i: usize) -> &[f64] {
        &self.rows[i * self.dim..(i + 1) * self.dim]
    }

    /// K, chol(K + σ²I) and ln p(y) (t ≥ 1; the kernel accepts the dimension).
    pub(crate) fn factor(&self, kernel: &FittedKernel, noise_sd: f64) -> Result<Factored> {
        let t = self.len();
        let d = self.dim;
        let noise_variance = noise_sd * noise_sd;
        let mut gram = Mat::<f64>::zeros(t, t);
        let mut column = vec![0.0; t];
        for j in 0..t {
            // The lower part of column j by the kernel's vectorised path, mirrored.
            let below = &mut column[j..];
            kernel.eval_rows(&self.rows[j * d..], self.point(j), below);
            for (offset, &v) in below.iter().enumerate() {
                gram[(j + offset, j)] = v;
                gram[(j, j + offset)] = v;
            }
        }
        let mut regularised = gram.clone();
        for i in 0..t {
            regularised[(i, i)] += noise_variance;
        }
        let llt = Llt::new(regularised.as_ref(), Side::Lower).map_err(|e| {
            let faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index } = e;
            Error::NotPositiveDefinite {
                row: index,
                pivot: f64::NAN,
            }
        })?;
        let l = llt.L();
        // w = L⁻¹y by forward substitution: yᵀK_y⁻¹y = ‖w‖².
        let mut whitened = Mat::<f64>::from_fn(t, 1, |i, _| self.targets[i]);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(
            l,
            whitened.as_mut(),
            faer::Par::Seq,
        );
        let quad_form: f64 = (0..t).map(|i| whitened[(i, 0)] * whitened[(i, 0)]).sum();
        let half_log_det: f64 = (0..t).map(|i| l[(i, i)].ln()).sum();
        let value = -0.5 * quad_form - half_log_det - 0.5 * t as f64 * LN_2PI;
        if !value.is_finite() {
            return Err(Error::NonFinite {
                what: "log marginal likelihood (targets too large for the kernel scale?)".into(),
            });
        }
        Ok(Factored { gram, llt, value })
    }

    /// The gradient of ln p(y) at the factored parameter value (R&W Eq. 5.9).
    pub(crate) fn gradient(
        &self,
        kernel: &FittedKernel,
        noise_sd: f64,
        factored: &Factored,
    ) -> Result<LikelihoodGradient> {
        let t = self.len();
        let d = self.dim;
        let noise_variance = noise_sd * noise_sd;
        let mut alpha = Mat::<f64>::from_fn(t, 1, |i, _| self.targets[i]);
        factored.llt.solve_in_place(alpha.as_mut());
        // K_y⁻¹ = WᵀW with W = L⁻¹ (R&W Alg. 5.1), from the Cholesky factor alone: W by
        // triangular inversion (t³/3 flops), then the lower triangle of WᵀW by a triangular
        // product (t³/3 flops); no general inverse, and the upper triangle is never formed.
        let mut w = Mat::<f64>::zeros(t, t);
        faer::linalg::triangular_inverse::invert_lower_triangular(
            w.as_mut(),
            factored.llt.L(),
            faer::Par::Seq,
        );
        let mut inverse = Mat::<f64>::zeros(t, t);
        faer::linalg::matmul::triangular::matmul(
            inverse.as_mut(),
            BlockStructure::TriangularLower,
            faer::Accum::Replace,
            w.transpose(),
            BlockStructure::TriangularUpper,
            w.as_ref(),
            BlockStructure::TriangularLower,
            1.0,
            faer::Par::Seq,
        );
        // Q = ααᵀ − K_y⁻¹; only the lower triangle and the diagonal are read.
        let q = |i: usize, j: usize| alpha[(i, 0)] * alpha[(j, 0)] - inverse[(i, j)];

        let per_dimension = kernel.is_per_dimension();
        let m = kernel.lengthscales().len();
        let mut log_lengthscales = vec![0.0; m];
        let mut slope = vec![0.0; d];
        // ½ Σ_ab Q_ab ∂K_ab: off-diagonal pairs twice, so Σ_{a>b} Q_ab ∂K_ab; the diagonal
        // of ∂K/∂ ln ℓ is 0 and that of ∂K/∂ ln s² is K_aa.
        let mut log_variance = 0.0;
        let mut trace_q = 0.0;
        for b in 0..t {
            let qbb = q(b, b);
            trace_q += qbb;
            log_variance += 0.5 * qbb * factored.gram[(b, b)];
            let xb = self.point(b);
            for a in (b + 1)..t {
                let qab = q(a, b);
                log_variance += qab * factored.gram[(a, b)];
                let xa = self.point(a);
                kernel.gradient(xa, xb, &mut slope)?;
                if per_dimension {
                    for (((g, s), u), v) in log_lengthscales.iter_mut().zip(&slope).zip(xa).zip(xb)
                    {
                        let diff = u - v;
                        if diff != 0.0 {
                            *g -= qab * diff * s;
                        }
                    }
                } else {
                    let mut radial = 0.0;
                    for ((s, u), v) in slope.iter().zip(xa).zip(xb) {
                        let diff = u - v;
                        if diff != 0.0 {
                            radial -= diff * s;
                        }
                    }
                    log_lengthscales[0] += qab * radial;
                }
            }
        }
        let log_noise_variance = 0.5 * noise_variance * trace_q;
        let gradient = LikelihoodGradient {
            value: factored.value,
            log_lengthscales,
            log_variance,
            log_noise_variance,
        };
        let finite = gradient.log_variance.is_finite()
            && gradient.log_noise_variance.is_finite()
            && gradient.log_lengthscales.iter().all(|g| g.is_finite());
        if !finite {
            return Err(Error::NonFinite {
                what: "log marginal likelihood gradient".into(),
            });
        }
        Ok(gradient)
    }
}
