//! Estimates of the noise scale σ from the data, to see whether the σ passed to a bound is
//! plausible. They are diagnostics, not bound inputs: a bound given an estimated σ has no
//! guarantee unless the estimate happens to be at least the true sub-Gaussian scale, and an
//! estimate computed from the same observations the bound absorbs is not even independent of
//! them.
//!
//! Two estimates, from different parts of the data:
//!
//! - **Replicates** ([`replicate_noise`]): observations at exactly the same input differ only
//!   by their noise. The pooled within-group variance s² = Σ_g Σ_{i∈g} (y_i − ȳ_g)² / (n − G)
//!   (n observations in G groups) estimates the noise variance without any assumption on f or
//!   on the kernel. Under Gaussian noise (n − G)s²/σ² ~ χ²_{n−G}, which gives an exact
//!   confidence interval for the noise standard deviation (Cochran's theorem); for other noise it
//!   is an approximation.
//! - **Residuals** ([`residual_noise`]): the kernel ridge smoother ŷ = H y,
//!   H = K(K + aI)⁻¹, with its regulariser a chosen by leave-one-out cross-validation (Allen
//!   1974; Wahba 1990, *Spline Models for Observational Data*, §4.2: a minimises the mean
//!   squared error of predicting each observation from the others), and
//!   σ̂² = ‖(I − H)y‖² / tr(I − H) (Wahba 1990 Eq. 4.5.2). It needs no replicates, but depends
//!   on the kernel: where f is rougher than the kernel can fit (a length-scale too long), its
//!   misfit counts as noise and σ̂ is too large. (Generalised cross-validation, the rotation-
//!   invariant version, is not used: for smooth kernels, whose Gram matrices have eigenvalues
//!   far below σ², its score tends to t·(u₁ᵀy)² as a → 0, which undercuts the real minimum
//!   whenever the projection on the last eigenvector happens to be small — in about one data
//!   set in eight in the tests, with σ̂ then a tenth of the truth.)
//!
//! How to read them against a σ you pass to a bound: σ is a *sub-Gaussian scale*, which is at
//! least the noise's standard deviation. A σ below the replicate interval's lower end is
//! refuted (at that confidence, for Gaussian noise); a σ far above the estimates is valid but
//! loose, and costs regret (Flynn & Reeb 2024 App. F.3). [`ReplicateEstimate::assess`] says
//! which.

use nalgebra::{DMatrix, DVector, SymmetricEigen};

use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::points::{AsPoints, Points};

/// The noise standard deviation estimated from replicated inputs ([`replicate_noise`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicateEstimate {
    /// The pooled within-group standard deviation s.
    pub sigma: f64,
    /// Degrees of freedom n − G: observations in replicated groups minus the number of such
    /// groups.
    pub degrees_of_freedom: usize,
    /// The number of distinct inputs observed more than once.
    pub groups: usize,
    /// The confidence level of `interval`.
    pub confidence: f64,
    /// The two-sided confidence interval for the noise standard deviation,
    /// (√((n−G)s²/χ²_{1−α/2}), √((n−G)s²/χ²_{α/2})) with α = 1 − `confidence`: exact under
    /// Gaussian noise.
    pub interval: (f64, f64),
}

/// How a σ compares with the noise estimated from replicates ([`ReplicateEstimate::assess`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseVerdict {
    /// σ is below the interval for the noise standard deviation: a sub-Gaussian scale cannot be
    /// below the standard deviation, so the data refute it (at the interval's confidence).
    TooSmall,
    /// σ is within the interval.
    Plausible,
    /// σ is above the interval: valid if the noise is Gaussian-like, but loose.
    Loose,
}

impl ReplicateEstimate {
    /// Compares a sub-Gaussian scale σ with the interval for the noise standard deviation.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if σ is not finite and > 0.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::hyper::{NoiseVerdict, replicate_noise};
    /// // Four inputs, each observed three times.
    /// let xs: Vec<Vec<f64>> = (0..12).map(|i| vec![(i % 4) as f64]).collect();
    /// let noise = [0.1, -0.12, 0.03, 0.08, -0.05, 0.0, -0.1, 0.11, 0.02, 0.04, -0.09, 0.06];
    /// let ys: Vec<f64> = (0..12).map(|i| (i % 4) as f64 + noise[i]).collect();
    /// let estimate = replicate_noise(&xs, &ys, 0.95)?.expect("replicates");
    /// assert_eq!((estimate.groups, estimate.degrees_of_freedom), (4, 8));
    /// assert_eq!(estimate.assess(0.001)?, NoiseVerdict::TooSmall);
    /// assert_eq!(estimate.assess(10.0)?, NoiseVerdict::Loose);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn assess(&self, sigma: f64) -> Result<NoiseVerdict> {
        let sigma = crate::error::positive("sigma", sigma)?;
        Ok(if sigma < self.interval.0 {
            NoiseVerdict::TooSmall
        } else if sigma > self.interval.1 {
            NoiseVerdict::Loose
        } else {
            NoiseVerdict::Plausible
        })
    }
}

/// The noise standard deviation estimated from the residuals of a kernel smoother
/// ([`residual_noise`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResidualEstimate {
    /// σ̂ = √(‖(I − H)y‖² / tr(I − H)).
    pub sigma: f64,
    /// The regulariser a chosen by leave-one-out cross-validation.
    pub regulariser: f64,
    /// tr(H), the smoother's effective number of parameters (between 0 and t).
    pub effective_parameters: f64,
    /// Whether the chosen a is at an end of the range searched (10⁻¹⁰ to 10³ times the largest
    /// eigenvalue of K). At the lower end the smoother interpolates the data and σ̂ tends to 0:
    /// the kernel is rougher or shorter than the data need (cross-validation prefers fitting the
    /// noise), and σ̂ means nothing. At the upper end the smoother is 0 and σ̂ is the targets'
    /// root mean square.
    pub at_search_edge: bool,
}

/// Both estimates for one data set ([`estimate_noise`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseEstimate {
    /// Observations used.
    pub observations: usize,
    /// From replicated inputs, if there are any.
    pub replicates: Option<ReplicateEstimate>,
    /// From the residuals of a kernel smoother, if there are at least two observations.
    pub residual: Option<ResidualEstimate>,
}

/// Both noise estimates of this module for observations `targets` at `points`: from
/// replicates ([`replicate_noise`]) and from the residuals of a kernel smoother with `kernel`
/// ([`residual_noise`]).
///
/// # Errors
/// As [`replicate_noise`] and [`residual_noise`].
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::estimate_noise;
/// use kernel_bandits::kernel::Matern;
/// let xs: Vec<Vec<f64>> = (0..40).map(|i| vec![(i / 2) as f64 / 20.0]).collect();
/// let ys: Vec<f64> = (0..40)
///     .map(|i| (3.0 * xs[i][0]).sin() + if i % 2 == 0 { 0.1 } else { -0.1 })
///     .collect();
/// let estimate = estimate_noise(&Matern::new(2.5, 0.5)?, &xs, &ys, 0.95)?;
/// let replicates = estimate.replicates.expect("every input twice");
/// assert!((replicates.sigma - 0.1 * 2f64.sqrt()).abs() < 1e-12);
/// assert!(estimate.residual.is_some());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn estimate_noise<K: Kernel + ?Sized, P: AsPoints + ?Sized>(
    kernel: &K,
    points: &P,
    targets: &[f64],
    confidence: f64,
) -> Result<NoiseEstimate> {
    let points = points.as_points()?;
    let replicates = replicate_noise(&points, targets, confidence)?;
    let residual = if targets.len() >= 2 {
        Some(residual_noise(kernel, &points, targets)?)
    } else {
        None
    };
    Ok(NoiseEstimate {
        observations: targets.len(),
        replicates,
        residual,
    })
}

/// The pooled within-group standard deviation of the targets observed at identical inputs
/// (coordinates equal as numbers, so −0 and +0 are the same input), with a `confidence`
/// interval from the χ² distribution (see the [module docs](self)). `None` if no input is
/// observed twice.
///
/// # Errors
/// [`Error::LengthMismatch`] if there is not one target per point; [`Error::NonFinite`] for a
/// non-finite target; [`Error::InvalidParameter`] unless 0 < `confidence` < 1.
///
/// # Examples
/// See [`ReplicateEstimate::assess`].
pub fn replicate_noise<P: AsPoints + ?Sized>(
    points: &P,
    targets: &[f64],
    confidence: f64,
) -> Result<Option<ReplicateEstimate>> {
    let points = points.as_points()?;
    check_targets(&points, targets)?;
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(Error::InvalidParameter {
            name: "confidence",
            value: confidence,
            expected: "in (0, 1)",
        });
    }
    let rows = normalised_rows(&points);
    let d = points.dim();
    let row = |i: usize| &rows[i * d..(i + 1) * d];
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by(|&i, &j| {
        row(i)
            .iter()
            .zip(row(j))
            .map(|(a, b)| a.total_cmp(b))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(i.cmp(&j))
    });
    let (mut sum_sq, mut dof, mut groups) = (0.0, 0usize, 0usize);
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && row(order[end]) == row(order[start]) {
            end += 1;
        }
        if end - start >= 2 {
            let group = &order[start..end];
            // Two passes (mean, then squared deviations): no cancellation when the targets are
            // large against their spread.
            let mean = group.iter().map(|&i| targets[i]).sum::<f64>() / group.len() as f64;
            sum_sq += group
                .iter()
                .map(|&i| (targets[i] - mean).powi(2))
                .sum::<f64>();
            dof += group.len() - 1;
            groups += 1;
        }
        start = end;
    }
    if dof == 0 {
        return Ok(None);
    }
    let variance = sum_sq / dof as f64;
    let alpha = 1.0 - confidence;
    let upper_quantile = chi_square_quantile(1.0 - alpha / 2.0, dof);
    let lower_quantile = chi_square_quantile(alpha / 2.0, dof);
    Ok(Some(ReplicateEstimate {
        sigma: variance.sqrt(),
        degrees_of_freedom: dof,
        groups,
        confidence,
        interval: (
            (sum_sq / upper_quantile).sqrt(),
            (sum_sq / lower_quantile).sqrt(),
        ),
    }))
}

/// The noise standard deviation from the residuals of the kernel ridge smoother with `kernel`
/// and a regulariser chosen by leave-one-out cross-validation (see the [module docs](self)):
/// one eigendecomposition of the Gram matrix (O(t³)), then O(t²) per regulariser tried (about
/// 300).
///
/// # Errors
/// [`Error::LengthMismatch`] if there is not one target per point; [`Error::NoArms`] for fewer
/// than two observations; [`Error::NonFinite`] for a non-finite target or kernel value; the
/// kernel's dimension check; [`Error::NotPositiveDefinite`] if the Gram matrix has an
/// eigenvalue more negative than rounding explains.
///
/// # Examples
/// ```
/// use kernel_bandits::hyper::residual_noise;
/// use kernel_bandits::kernel::Rbf;
/// // A smooth function on 60 points with alternating ±0.05 noise.
/// let xs: Vec<Vec<f64>> = (0..60).map(|i| vec![i as f64 / 60.0]).collect();
/// let ys: Vec<f64> = (0..60)
///     .map(|i| xs[i][0].powi(2) + if i % 2 == 0 { 0.05 } else { -0.05 })
///     .collect();
/// let estimate = residual_noise(&Rbf::new(0.3)?, &xs, &ys)?;
/// assert!((estimate.sigma - 0.05).abs() < 0.01);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn residual_noise<K: Kernel + ?Sized, P: AsPoints + ?Sized>(
    kernel: &K,
    points: &P,
    targets: &[f64],
) -> Result<ResidualEstimate> {
    let points = points.as_points()?;
    check_targets(&points, targets)?;
    let t = targets.len();
    if t < 2 {
        return Err(Error::NoArms);
    }
    let gram = kernel.gram(&points)?;
    if gram.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            what: "kernel value".into(),
        });
    }
    let eigen = SymmetricEigen::new(gram);
    let largest = eigen.eigenvalues.max().max(0.0);
    let mut eigenvalues = eigen.eigenvalues.as_slice().to_vec();
    // The Gram matrix is positive semidefinite: a negative eigenvalue is rounding, of order
    // t·ε·λ_max; anything beyond that is a kernel that is not positive semidefinite.
    let rounding = 64.0 * t as f64 * f64::EPSILON * largest.max(f64::MIN_POSITIVE);
    for (row, lambda) in eigenvalues.iter_mut().enumerate() {
        if *lambda < -rounding {
            return Err(Error::NotPositiveDefinite {
                row,
                pivot: *lambda,
            });
        }
        *lambda = lambda.max(0.0);
    }
    let projected = eigen.eigenvectors.transpose() * DVector::from_column_slice(targets);
    let spectral = Spectral {
        eigenvalues: &eigenvalues,
        rows: &eigen.eigenvectors.transpose(),
        projected: projected.as_slice(),
    };
    if largest == 0.0 {
        // K = 0: the smoother is 0 for every a, every residual is the target itself.
        let (rss, trace) = spectral.residual(1.0);
        return Ok(ResidualEstimate {
            sigma: (rss / trace).sqrt(),
            regulariser: f64::INFINITY,
            effective_parameters: 0.0,
            at_search_edge: true,
        });
    }
    let (lo, hi) = ((largest * 1e-10).ln(), (largest * 1e3).ln());
    let log_a = golden_minimum(lo, hi, 200, |log_a| spectral.leave_one_out(log_a.exp()));
    let a = log_a.exp();
    let (rss, trace) = spectral.residual(a);
    let edge = (log_a - lo).abs() < 1e-3 * (hi - lo) || (hi - log_a).abs() < 1e-3 * (hi - lo);
    Ok(ResidualEstimate {
        sigma: (rss / trace).sqrt(),
        regulariser: a,
        effective_parameters: t as f64 - trace,
        at_search_edge: edge,
    })
}

/// K = U diag(λ) Uᵀ and the projections b = Uᵀy of the targets.
struct Spectral<'a> {
    eigenvalues: &'a [f64],
    /// Uᵀ, so that row i of U is a contiguous column.
    rows: &'a DMatrix<f64>,
    projected: &'a [f64],
}

impl Spectral<'_> {
    /// ‖(I − H)y‖² = Σ (a/(λ_i + a))² b_i² and tr(I − H) = Σ a/(λ_i + a), H = K(K + aI)⁻¹.
    fn residual(&self, a: f64) -> (f64, f64) {
        let (mut rss, mut trace) = (0.0, 0.0);
        for (&lambda, &b) in self.eigenvalues.iter().zip(self.projected) {
            let shrink = a / (lambda + a);
            rss += shrink * shrink * b * b;
            trace += shrink;
        }
        (rss, trace)
    }

    /// The mean squared leave-one-out residual (1/t) Σ_i (α_i / [(K + aI)⁻¹]_ii)²,
    /// α = (K + aI)⁻¹y: observation i predicted by the smoother fitted without it (Allen 1974;
    /// Wahba 1990 Eq. 4.2.4), O(t²) from the eigendecomposition.
    fn leave_one_out(&self, a: f64) -> f64 {
        let t = self.eigenvalues.len();
        let inverse: Vec<f64> = self.eigenvalues.iter().map(|l| 1.0 / (l + a)).collect();
        let weighted: Vec<f64> = inverse
            .iter()
            .zip(self.projected)
            .map(|(d, b)| d * b)
            .collect();
        let mut score = 0.0;
        for i in 0..t {
            let (mut alpha, mut diagonal) = (0.0, 0.0);
            for (j, &u) in self.rows.column(i).iter().enumerate() {
                alpha += u * weighted[j];
                diagonal += u * u * inverse[j];
            }
            score += (alpha / diagonal).powi(2);
        }
        score / t as f64
    }
}

/// The minimiser of `f` over [lo, hi]: the best of `grid` + 1 evenly spaced points, then golden-
/// section search on the bracket around it (cross-validation scores can have several local
/// minima, so the grid comes first).
fn golden_minimum(lo: f64, hi: f64, grid: usize, f: impl Fn(f64) -> f64) -> f64 {
    let step = (hi - lo) / grid as f64;
    let nan_last = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
    let best = (0..=grid)
        .map(|i| (i, nan_last(f(lo + step * i as f64))))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(0, |(i, _)| i);
    let (mut a, mut b) = (
        lo + step * best.saturating_sub(1) as f64,
        lo + step * (best + 1).min(grid) as f64,
    );
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - ratio * (b - a), a + ratio * (b - a));
    let (mut fc, mut fd) = (nan_last(f(c)), nan_last(f(d)));
    for _ in 0..100 {
        if (b - a).abs() < 1e-10 * (1.0 + a.abs()) {
            break;
        }
        if fc < fd {
            (b, d, fd) = (d, c, fc);
            c = b - ratio * (b - a);
            fc = nan_last(f(c));
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + ratio * (b - a);
            fd = nan_last(f(d));
        }
    }
    let centre = lo + step * best as f64;
    let candidate = if fc < fd { c } else { d };
    if nan_last(f(candidate)) <= nan_last(f(centre)) {
        candidate
    } else {
        centre
    }
}

/// The p-quantile of the χ² distribution with `dof` degrees of freedom: the x with
/// P(dof/2, x/2) = p, P the regularised lower incomplete gamma function, by bisection.
fn chi_square_quantile(p: f64, dof: usize) -> f64 {
    let a = dof as f64 / 2.0;
    let cdf = |x: f64| regularised_lower_gamma(a, x / 2.0);
    let (mut lo, mut hi) = (0.0, (2.0 * dof as f64).max(1.0));
    while cdf(hi) < p {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(a, x) = γ(a, x)/Γ(a). `puruspe::gammp` returns NaN for a ≥ 100 and x < a (its
/// quadrature branch; seen with puruspe 0.4.4), so there and wherever x ≤ a + 1 the series
/// P(a, x) = x^a e^{−x}/Γ(a + 1) · Σ_{n≥0} xⁿ/((a + 1)⋯(a + n)) (DLMF 8.7.1) is summed here; it
/// converges for every x, in O(x − a + √a) terms near the median.
fn regularised_lower_gamma(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x > a + 1.0 && a < 100.0 {
        return puruspe::gammp(a, x);
    }
    let (mut term, mut sum, mut n) = (1.0, 1.0, 0.0);
    while term > sum * 1e-17 && n < 1e6 {
        n += 1.0;
        term *= x / (a + n);
        sum += term;
    }
    let log_prefactor = a * x.ln() - x - puruspe::ln_gamma(a + 1.0);
    (log_prefactor + sum.ln()).exp().min(1.0)
}

fn check_targets(points: &Points<'_>, targets: &[f64]) -> Result<()> {
    crate::error::one_target_per_point(points.len(), targets.len())?;
    if let Some(i) = targets.iter().position(|y| !y.is_finite()) {
        return Err(Error::NonFinite {
            what: format!("target {i}"),
        });
    }
    Ok(())
}

/// The points row-major, with −0 turned into +0 so that equal inputs compare equal bitwise.
fn normalised_rows(points: &Points<'_>) -> Vec<f64> {
    let d = points.dim();
    let mut rows = Vec::with_capacity(points.len() * d);
    let mut scratch = vec![0.0; d];
    for i in 0..points.len() {
        rows.extend(points.point(i, &mut scratch).iter().map(|&v| v + 0.0));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chi_square_quantiles_match_tables() {
        // Abramowitz & Stegun Table 26.8 (and any χ² table).
        for (p, dof, expected) in [
            (0.025, 10, 3.24697),
            (0.975, 10, 20.4832),
            (0.05, 1, 0.00393214),
            (0.95, 1, 3.84146),
            (0.5, 2, 1.386294),
            (0.995, 100, 140.169),
            (0.975, 200, 241.058),
            (0.025, 200, 162.728),
        ] {
            let q = chi_square_quantile(p, dof);
            assert!(
                (q - expected).abs() <= 2e-5 * expected.max(1.0),
                "χ²({dof}) {p}: {q} vs {expected}"
            );
        }
    }

    #[test]
    fn the_lower_gamma_series_matches_puruspe_where_that_is_sound() {
        for a in [0.5, 1.0, 5.0, 40.0, 99.0] {
            for x in [0.01, 0.5, 2.0, 10.0, 50.0, 98.0] {
                let (ours, theirs) = (regularised_lower_gamma(a, x), puruspe::gammp(a, x));
                // Both sides carry ln Γ and series rounding of a few 10⁻¹²; the χ² quantiles
                // need 10⁻⁶.
                assert!(
                    (ours - theirs).abs() < 1e-10,
                    "P({a}, {x}): {ours} vs {theirs}"
                );
            }
        }
        // Closed forms: P(1, x) = 1 − e^{−x}, P(½, x) = erf(√x); P(100, 100) ≈ 0.5133.
        assert!((regularised_lower_gamma(0.5, 0.5) - 0.682_689_492_137_086).abs() < 1e-10);
        assert!((regularised_lower_gamma(1.0, 3.0) - (1.0 - (-3.0f64).exp())).abs() < 1e-12);
        assert!((regularised_lower_gamma(100.0, 100.0) - 0.513_298_798_3).abs() < 1e-9);
    }

    #[test]
    fn golden_minimum_finds_the_lower_of_two_basins() {
        let f = |x: f64| ((x - 1.0).powi(2)).min((x + 2.0).powi(2) - 0.5);
        let x = golden_minimum(-5.0, 5.0, 200, f);
        assert!((x + 2.0).abs() < 1e-7, "{x}");
    }

    #[test]
    fn residuals_of_a_zero_kernel_are_the_targets() {
        // Linear kernel at the origin: K = 0.
        let xs = vec![vec![0.0], vec![0.0], vec![0.0]];
        let ys = [1.0, -1.0, 2.0];
        let e = residual_noise(&crate::kernel::Linear::new(), &xs, &ys).unwrap();
        assert!((e.sigma - (6.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!(e.effective_parameters, 0.0);
    }

    #[test]
    fn residual_and_leave_one_out_match_a_dense_hat_matrix() {
        let xs: Vec<Vec<f64>> = (0..15).map(|i| vec![(i as f64 * 0.37).sin()]).collect();
        let ys: Vec<f64> = (0..15).map(|i| (i as f64 * 1.3).cos()).collect();
        let kernel = crate::kernel::Rbf::new(0.4).unwrap();
        let points = xs.as_points().unwrap();
        let gram = kernel.gram(&points).unwrap();
        let eigen = SymmetricEigen::new(gram.clone());
        let projected = eigen.eigenvectors.transpose() * DVector::from_column_slice(&ys);
        let rows = eigen.eigenvectors.transpose();
        let spectral = Spectral {
            eigenvalues: eigen.eigenvalues.as_slice(),
            rows: &rows,
            projected: projected.as_slice(),
        };
        for a in [1e-4, 1e-3, 0.1, 10.0] {
            let inverse = (gram.clone() + DMatrix::identity(15, 15) * a)
                .try_inverse()
                .unwrap();
            let alpha = &inverse * DVector::from_column_slice(&ys);
            let residual_maker = &inverse * a; // I − H = a(K + aI)⁻¹
            let r = &residual_maker * DVector::from_column_slice(&ys);
            let (rss, trace) = spectral.residual(a);
            assert!(
                (rss - r.norm_squared()).abs() < 1e-9 * (1.0 + rss),
                "a = {a}"
            );
            assert!((trace - residual_maker.trace()).abs() < 1e-9 * (1.0 + trace));
            // Leave-one-out by refitting without each point, densely.
            let mut loo = 0.0;
            for i in 0..15 {
                let keep: Vec<usize> = (0..15).filter(|&j| j != i).collect();
                let sub = DMatrix::from_fn(14, 14, |r, c| gram[(keep[r], keep[c])])
                    + DMatrix::identity(14, 14) * a;
                let rhs = DVector::from_iterator(14, keep.iter().map(|&j| ys[j]));
                let weights = sub.try_inverse().unwrap() * rhs;
                let prediction: f64 = keep
                    .iter()
                    .zip(weights.iter())
                    .map(|(&j, w)| gram[(i, j)] * w)
                    .sum();
                loo += (ys[i] - prediction).powi(2);
            }
            loo /= 15.0;
            let fast = spectral.leave_one_out(a);
            assert!((fast - loo).abs() < 1e-7 * loo, "a = {a}: {fast} vs {loo}");
            let _ = alpha;
        }
    }
}
