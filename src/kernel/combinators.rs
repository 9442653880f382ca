//! Kernels built from other kernels: output scale, sum, product and coordinate slices.

use std::ops::Range;

use super::Kernel;
use crate::error::{Error, Result, positive};

/// s² · k: a kernel times an output scale (signal variance) s² > 0.
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, KernelExt, Rbf};
/// let k = Rbf::new(1.0)?.scaled(4.0)?;
/// assert_eq!(k.eval_diag(&[0.3]), 4.0);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Scaled<K> {
    inner: K,
    variance: f64,
}

impl<K: Kernel> Scaled<K> {
    /// `variance · inner`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `variance` is finite and positive.
    pub fn new(inner: K, variance: f64) -> Result<Self> {
        Ok(Self {
            inner,
            variance: positive("variance", variance)?,
        })
    }

    /// The output scale s².
    pub fn variance(&self) -> f64 {
        self.variance
    }
}

impl<K: Kernel> Kernel for Scaled<K> {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.variance * self.inner.eval(x, y)
    }
    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        self.inner.eval_rows(rows, y, out);
        for v in out.iter_mut() {
            *v *= self.variance;
        }
    }
    #[inline]
    fn eval_diag(&self, x: &[f64]) -> f64 {
        self.variance * self.inner.eval_diag(x)
    }
    fn check_dim(&self, dim: usize) -> Result<()> {
        self.inner.check_dim(dim)
    }
    fn smoothness(&self) -> Option<f64> {
        self.inner.smoothness()
    }
    /// The inner kernel's, with s² times its variance.
    fn regularity(&self) -> Option<super::KernelRegularity> {
        self.inner.regularity().map(|r| r.scaled(self.variance))
    }
    /// s² ∇k.
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        self.inner.gradient(x, y, out)?;
        scale(out, self.variance);
        Ok(())
    }
    /// s² ∇k(x, x).
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        self.inner.diag_gradient(x, out)?;
        scale(out, self.variance);
        Ok(())
    }
}

/// Multiplies every entry of `values` by `factor`.
fn scale(values: &mut [f64], factor: f64) {
    for v in values.iter_mut() {
        *v *= factor;
    }
}

/// a · b, with 0 wherever either factor is 0: in the product rule a zero kernel value times an
/// overflowed gradient entry (a Matérn kernel with ν < 1/2 at points a few ulps apart) is 0,
/// not NaN.
#[inline]
fn times_or_zero(a: f64, b: f64) -> f64 {
    if a == 0.0 || b == 0.0 { 0.0 } else { a * b }
}

/// The rougher of two smoothness values (`None` = infinitely smooth).
fn rougher(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Both kernels' vectorised rows, combined elementwise with `op`.
fn combine_rows(
    first: &impl Kernel,
    second: &impl Kernel,
    rows: &[f64],
    y: &[f64],
    out: &mut [f64],
    op: impl Fn(f64, f64) -> f64,
) {
    first.eval_rows(rows, y, out);
    let mut other = vec![0.0; out.len()];
    second.eval_rows(rows, y, &mut other);
    for (o, b) in out.iter_mut().zip(&other) {
        *o = op(*o, *b);
    }
}

/// k₁ + k₂.
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::{Kernel, KernelExt, Linear, Rbf};
/// let k = Rbf::new(1.0)?.plus(Linear::new());
/// assert_eq!(k.eval(&[1.0], &[1.0]), 2.0);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sum<K1, K2> {
    first: K1,
    second: K2,
}

impl<K1: Kernel, K2: Kernel> Sum<K1, K2> {
    /// `first + second`.
    pub fn new(first: K1, second: K2) -> Self {
        Self { first, second }
    }
}

impl<K1: Kernel, K2: Kernel> Kernel for Sum<K1, K2> {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.first.eval(x, y) + self.second.eval(x, y)
    }
    #[inline]
    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        combine_rows(&self.first, &self.second, rows, y, out, |a, b| a + b);
    }
    #[inline]
    fn eval_diag(&self, x: &[f64]) -> f64 {
        self.first.eval_diag(x) + self.second.eval_diag(x)
    }
    fn check_dim(&self, dim: usize) -> Result<()> {
        self.first.check_dim(dim)?;
        self.second.check_dim(dim)
    }
    fn smoothness(&self) -> Option<f64> {
        rougher(self.first.smoothness(), self.second.smoothness())
    }
    /// ∇k₁ + ∇k₂.
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        let mut other = vec![0.0; out.len()];
        self.second.gradient(x, y, &mut other)?;
        self.first.gradient(x, y, out)?;
        add(out, &other);
        Ok(())
    }
    /// ∇k₁(x, x) + ∇k₂(x, x).
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        let mut other = vec![0.0; out.len()];
        self.second.diag_gradient(x, &mut other)?;
        self.first.diag_gradient(x, out)?;
        add(out, &other);
        Ok(())
    }
}

/// `out += other`, entry by entry.
fn add(out: &mut [f64], other: &[f64]) {
    for (o, b) in out.iter_mut().zip(other) {
        *o += b;
    }
}

/// `out ← out · k_other + k_out · other`: the product rule, given the gradients (`out` of the
/// kernel with value `k_out`, `other` of the kernel with value `k_other`).
fn product_rule(out: &mut [f64], k_out: f64, other: &[f64], k_other: f64) {
    for (o, b) in out.iter_mut().zip(other) {
        *o = times_or_zero(*o, k_other) + times_or_zero(k_out, *b);
    }
}

/// k₁ · k₂ (positive semidefinite by the Schur product theorem).
///
/// # Examples
/// A joint context–action kernel k((c, a), (c′, a′)) = k_c(c, c′) · k_a(a, a′) on points whose
/// first two coordinates are the context and whose last is the action:
/// ```
/// use kernel_bandits::kernel::{Kernel, KernelExt, Matern, Rbf};
/// let joint = Rbf::new(0.5)?.on(0..2)?.times(Matern::new(2.5, 0.2)?.on(2..3)?);
/// let (s, t) = ([0.1, 0.2, 0.3], [0.1, 0.2, 0.5]);
/// let expected = Matern::new(2.5, 0.2)?.eval(&[0.3], &[0.5]);
/// assert!((joint.eval(&s, &t) - expected).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Product<K1, K2> {
    first: K1,
    second: K2,
}

impl<K1: Kernel, K2: Kernel> Product<K1, K2> {
    /// `first · second`.
    pub fn new(first: K1, second: K2) -> Self {
        Self { first, second }
    }
}

impl<K1: Kernel, K2: Kernel> Kernel for Product<K1, K2> {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.first.eval(x, y) * self.second.eval(x, y)
    }
    #[inline]
    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        combine_rows(&self.first, &self.second, rows, y, out, |a, b| a * b);
    }
    #[inline]
    fn eval_diag(&self, x: &[f64]) -> f64 {
        self.first.eval_diag(x) * self.second.eval_diag(x)
    }
    fn check_dim(&self, dim: usize) -> Result<()> {
        self.first.check_dim(dim)?;
        self.second.check_dim(dim)
    }
    fn smoothness(&self) -> Option<f64> {
        rougher(self.first.smoothness(), self.second.smoothness())
    }
    /// k₂ ∇k₁ + k₁ ∇k₂ (the product rule).
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        let mut other = vec![0.0; out.len()];
        self.second.gradient(x, y, &mut other)?;
        self.first.gradient(x, y, out)?;
        let (k1, k2) = (self.first.eval(x, y), self.second.eval(x, y));
        product_rule(out, k1, &other, k2);
        Ok(())
    }
    /// k₂(x, x) ∇k₁(x, x) + k₁(x, x) ∇k₂(x, x).
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        let mut other = vec![0.0; out.len()];
        self.second.diag_gradient(x, &mut other)?;
        self.first.diag_gradient(x, out)?;
        let (k1, k2) = (self.first.eval_diag(x), self.second.eval_diag(x));
        product_rule(out, k1, &other, k2);
        Ok(())
    }
}

/// A kernel applied to the coordinates `range` of its inputs: k(x_range, x′_range), where x_range is the slice `&x[range]`.
///
/// Inputs must have at least `range.end` coordinates.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sliced<K> {
    inner: K,
    range: Range<usize>,
}

impl<K: Kernel> Sliced<K> {
    /// `inner` on the coordinates `range`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the range is empty; [`Error::DimensionMismatch`] if
    /// `inner` does not accept inputs of `range.len()` coordinates.
    pub fn new(inner: K, range: Range<usize>) -> Result<Self> {
        if range.is_empty() {
            return Err(Error::InvalidParameter {
                name: "range",
                value: range.start as f64,
                expected: "a non-empty coordinate range (start < end)",
            });
        }
        inner.check_dim(range.len())?;
        Ok(Self { inner, range })
    }

    /// The coordinates the kernel reads.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }
}

impl<K: Kernel> Kernel for Sliced<K> {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.inner
            .eval(&x[self.range.clone()], &y[self.range.clone()])
    }
    #[inline]
    fn eval_diag(&self, x: &[f64]) -> f64 {
        self.inner.eval_diag(&x[self.range.clone()])
    }
    fn check_dim(&self, dim: usize) -> Result<()> {
        if dim < self.range.end {
            return Err(Error::DimensionMismatch {
                expected: self.range.end,
                got: dim,
            });
        }
        Ok(())
    }
    fn smoothness(&self) -> Option<f64> {
        self.inner.smoothness()
    }
    /// The inner kernel's gradient on the coordinates `range`, zero on the others.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the points have fewer than `range.end` coordinates;
    /// as the inner kernel's.
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> Result<()> {
        self.check_dim(x.len().min(y.len()).min(out.len()))?;
        out.fill(0.0);
        let r = self.range.clone();
        self.inner
            .gradient(&x[r.clone()], &y[r.clone()], &mut out[r])
    }
    /// The inner kernel's diagonal gradient on the coordinates `range`, zero on the others.
    ///
    /// # Errors
    /// As [`Sliced::gradient`](Kernel::gradient).
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        self.check_dim(x.len().min(out.len()))?;
        out.fill(0.0);
        let r = self.range.clone();
        self.inner.diag_gradient(&x[r.clone()], &mut out[r])
    }
}

#[cfg(feature = "serde")]
mod snapshots {
    use super::{Product, Scaled, Sliced, Sum};
    use crate::error::Result;
    use crate::kernel::Kernel;
    use crate::snapshot::{Snapshot, rebuild_error};

    impl<K: Kernel + Snapshot> Snapshot for Scaled<K> {
        fn kind() -> String {
            format!("scaled<{}>", K::kind())
        }
        fn restore(&mut self) -> Result<()> {
            self.inner.restore()?;
            crate::error::positive("variance", self.variance)
                .map_err(rebuild_error("scaled kernel"))?;
            Ok(())
        }
    }

    impl<K1: Kernel + Snapshot, K2: Kernel + Snapshot> Snapshot for Sum<K1, K2> {
        fn kind() -> String {
            format!("sum<{},{}>", K1::kind(), K2::kind())
        }
        fn restore(&mut self) -> Result<()> {
            self.first.restore()?;
            self.second.restore()
        }
    }

    impl<K1: Kernel + Snapshot, K2: Kernel + Snapshot> Snapshot for Product<K1, K2> {
        fn kind() -> String {
            format!("product<{},{}>", K1::kind(), K2::kind())
        }
        fn restore(&mut self) -> Result<()> {
            self.first.restore()?;
            self.second.restore()
        }
    }

    impl<K: Kernel + Snapshot> Snapshot for Sliced<K> {
        fn kind() -> String {
            format!("sliced<{}>", K::kind())
        }
        fn restore(&mut self) -> Result<()> {
            self.inner.restore()?;
            crate::snapshot::ensure(!self.range.is_empty(), || {
                "sliced kernel: empty range".into()
            })?;
            self.inner
                .check_dim(self.range.len())
                .map_err(rebuild_error("sliced kernel"))
        }
    }
}
