//! Kernels: RBF, Matérn and linear (Rasmussen & Williams 2006 §4.2), their output scale, sums,
//! products and coordinate slices, as one Python class hierarchy over one Rust enum.

use kernel_bandits::hyper::{FittedKernel as RsFitted, KernelFamily};
use kernel_bandits::kernel::{
    Kernel as KernelTrait, KernelExt, Linear as RsLinear, Matern as RsMatern, Product,
    Rbf as RsRbf, Scaled, Sliced, Sum,
};
use kernel_bandits::points::Points;
use kernel_bandits::snapshot::Snapshot;
use nalgebra::{DMatrix, DVector};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PySlice};
use serde::{Deserialize, Serialize};

use crate::arrays::{elements, matrix, rows, to_numpy, vector};
use crate::errors::{OrRaise, bad_shape};

/// Any kernel a Python program can build: a leaf or a combination of kernels.
///
/// Every method forwards to the kernel inside, including the vectorised `eval_rows` of the
/// stationary kernels, so a bound on `AnyKernel::Matern` runs the same code as on `Matern`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AnyKernel {
    /// Squared exponential.
    Rbf(RsRbf),
    /// Matérn.
    Matern(RsMatern),
    /// xᵀx′ + b.
    Linear(RsLinear),
    /// s² · k.
    Scaled(Box<Scaled<AnyKernel>>),
    /// k₁ + k₂.
    Sum(Box<Sum<AnyKernel, AnyKernel>>),
    /// k₁ · k₂.
    Product(Box<Product<AnyKernel, AnyKernel>>),
    /// k on a range of the coordinates.
    Sliced(Box<Sliced<AnyKernel>>),
    /// s² · RBF or s² · Matérn with a shared or per-coordinate length-scale (fitted by
    /// `fit_hyperparameters`, or built by `FittedKernel`).
    Fitted(RsFitted),
}

macro_rules! each {
    ($kernel:expr, $k:ident => $body:expr) => {
        match $kernel {
            AnyKernel::Rbf($k) => $body,
            AnyKernel::Matern($k) => $body,
            AnyKernel::Linear($k) => $body,
            AnyKernel::Scaled($k) => $body,
            AnyKernel::Sum($k) => $body,
            AnyKernel::Product($k) => $body,
            AnyKernel::Sliced($k) => $body,
            AnyKernel::Fitted($k) => $body,
        }
    };
}

impl KernelTrait for AnyKernel {
    #[inline]
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        each!(self, k => k.eval(x, y))
    }
    #[inline]
    fn eval_rows(&self, rows: &[f64], y: &[f64], out: &mut [f64]) {
        each!(self, k => k.eval_rows(rows, y, out))
    }
    #[inline]
    fn eval_diag(&self, x: &[f64]) -> f64 {
        each!(self, k => k.eval_diag(x))
    }
    fn check_dim(&self, dim: usize) -> kernel_bandits::Result<()> {
        each!(self, k => k.check_dim(dim))
    }
    fn smoothness(&self) -> Option<f64> {
        each!(self, k => k.smoothness())
    }
    fn regularity(&self) -> Option<kernel_bandits::kernel::KernelRegularity> {
        each!(self, k => k.regularity())
    }
    fn gram(&self, xs: &Points<'_>) -> kernel_bandits::Result<DMatrix<f64>> {
        each!(self, k => k.gram(xs))
    }
    fn cross(&self, xs: &Points<'_>, ys: &Points<'_>) -> kernel_bandits::Result<DMatrix<f64>> {
        each!(self, k => k.cross(xs, ys))
    }
    fn diag(&self, xs: &Points<'_>) -> kernel_bandits::Result<DVector<f64>> {
        each!(self, k => k.diag(xs))
    }
    fn gradient(&self, x: &[f64], y: &[f64], out: &mut [f64]) -> kernel_bandits::Result<()> {
        each!(self, k => k.gradient(x, y, out))
    }
    fn diag_gradient(&self, x: &[f64], out: &mut [f64]) -> kernel_bandits::Result<()> {
        each!(self, k => k.diag_gradient(x, out))
    }
}

/// A point for a kernel's gradient: non-empty, finite, of a dimension the kernel accepts
/// (the crate's `Kernel::gradient` leaves these checks to its callers).
fn gradient_point(kernel: &AnyKernel, x: &[f64]) -> kernel_bandits::Result<()> {
    Points::from_row_major(x, x.len())?;
    kernel.check_dim(x.len())
}

impl Snapshot for AnyKernel {
    fn kind() -> String {
        "python-kernel".into()
    }
    fn restore(&mut self) -> kernel_bandits::Result<()> {
        each!(self, k => k.restore())
    }
}

/// A positive-semidefinite kernel k(x, x′). Build one with `Rbf`, `Matern` or `Linear`, and
/// combine them: `2.0 * k` (output scale s² = 2), `k1 + k2`, `k1 * k2`, `k.on(0, 2)` (the kernel
/// on coordinates 0 and 1 only, for joint context–action kernels).
///
/// Calling a kernel gives its matrix: `k(X)` the Gram matrix of the rows of X, `k(X, Y)` the
/// cross-kernel matrix.
#[pyclass(subclass, frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct Kernel {
    pub(crate) inner: AnyKernel,
    pub(crate) repr: String,
}

impl Kernel {
    pub(crate) fn new(inner: AnyKernel, repr: String) -> Self {
        Self { inner, repr }
    }

    /// The right Python class for a kernel: `Rbf`, `Matern`, `Linear` or the base `Kernel`.
    pub(crate) fn into_py_object(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match &self.inner {
            AnyKernel::Rbf(_) => Py::new(py, (Rbf, self))?.into_any(),
            AnyKernel::Matern(_) => Py::new(py, (Matern, self))?.into_any(),
            AnyKernel::Linear(_) => Py::new(py, (Linear, self))?.into_any(),
            AnyKernel::Fitted(_) => Py::new(py, (FittedKernel, self))?.into_any(),
            _ => Py::new(py, self)?.into_any(),
        })
    }
}

fn bracket(repr: &str) -> String {
    if repr.contains(" + ") || repr.contains(" * ") {
        format!("({repr})")
    } else {
        repr.to_string()
    }
}

#[pymethods]
impl Kernel {
    /// The Gram matrix [k(xᵢ, xⱼ)] of the rows of `x`, or the cross-kernel matrix [k(xᵢ, yⱼ)].
    #[pyo3(signature = (x, y = None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let xa = matrix(x, "x")?;
        let (xd, xdim) = rows(&xa);
        let result = match y {
            None => py.detach(|| {
                let xs = Points::from_row_major(xd, xdim)?;
                self.inner.gram(&xs)
            }),
            Some(y) => {
                let ya = matrix(y, "y")?;
                let (yd, ydim) = rows(&ya);
                py.detach(|| {
                    let xs = Points::from_row_major(xd, xdim)?;
                    let ys = Points::from_row_major(yd, ydim)?;
                    self.inner.cross(&xs, &ys)
                })
            }
        }
        .or_raise()?;
        // nalgebra is column-major: its transpose's storage is the row-major matrix.
        let (n, m) = result.shape();
        let row_major = result.transpose();
        let flat = PyArray1::from_slice(py, row_major.as_slice());
        flat.reshape([n, m])
    }

    /// The diagonal [k(xᵢ, xᵢ)] of the rows of `x`.
    fn diag<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let xa = matrix(x, "x")?;
        let (xd, xdim) = rows(&xa);
        let d = py
            .detach(|| {
                let xs = Points::from_row_major(xd, xdim)?;
                self.inner.diag(&xs)
            })
            .or_raise()?;
        Ok(PyArray1::from_vec(py, d.as_slice().to_vec()))
    }

    /// The gradient ∂k(x, y)/∂x of the kernel with respect to its first argument, at the 1-D
    /// points `x` and `y` (a new float64 array of length d). Raises `UnsupportedError` for a
    /// kernel without a gradient.
    fn gradient<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let xa = vector(x, "x")?;
        let ya = vector(y, "y")?;
        let (xs, ys) = (elements(&xa), elements(&ya));
        let inner = &self.inner;
        let out = py
            .detach(|| {
                gradient_point(inner, xs)?;
                gradient_point(inner, ys)?;
                if ys.len() != xs.len() {
                    return Err(kernel_bandits::Error::DimensionMismatch {
                        expected: xs.len(),
                        got: ys.len(),
                    });
                }
                let mut out = vec![0.0; xs.len()];
                inner.gradient(xs, ys, &mut out)?;
                Ok(out)
            })
            .or_raise()?;
        Ok(to_numpy(py, out))
    }

    /// The gradient of x ↦ k(x, x) at the 1-D point `x`: zero for stationary kernels, 2x for
    /// the linear kernel. Raises `UnsupportedError` for a kernel without a gradient.
    fn diag_gradient<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let xa = vector(x, "x")?;
        let xs = elements(&xa);
        let inner = &self.inner;
        let out = py
            .detach(|| {
                gradient_point(inner, xs)?;
                let mut out = vec![0.0; xs.len()];
                inner.diag_gradient(xs, &mut out)?;
                Ok(out)
            })
            .or_raise()?;
        Ok(to_numpy(py, out))
    }

    /// The kernel times an output scale (signal variance) s² = `variance` > 0.
    fn scaled(&self, py: Python<'_>, variance: f64) -> PyResult<Py<PyAny>> {
        let scaled = self.inner.clone().scaled(variance).or_raise()?;
        let repr = format!("{variance:?} * {}", bracket(&self.repr));
        Kernel::new(AnyKernel::Scaled(Box::new(scaled)), repr).into_py_object(py)
    }

    /// The kernel applied to the coordinates `start .. stop` of its inputs (a joint
    /// context–action kernel is e.g. `Rbf(0.5).on(0, 5) * Rbf(0.5).on(5, 6)`). `start` may also
    /// be a Python `slice` with unit step.
    #[pyo3(signature = (start, stop = None))]
    fn on(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: Option<i64>,
    ) -> PyResult<Py<PyAny>> {
        let (start, stop) = if let Ok(slice) = start.cast::<PySlice>() {
            let get = |name: &str| -> PyResult<Option<i64>> { slice.getattr(name)?.extract() };
            let step = get("step")?;
            if !matches!(step, None | Some(1)) || stop.is_some() {
                return Err(bad_shape(
                    "on(slice): only start:stop with unit step is supported",
                ));
            }
            let (Some(start), Some(stop)) = (get("start")?.or(Some(0)), get("stop")?) else {
                return Err(bad_shape("on(slice): the slice needs a stop"));
            };
            (start, stop)
        } else {
            let start: i64 = start
                .extract()
                .map_err(|_| bad_shape("on(start, stop): start must be an integer or a slice"))?;
            let Some(stop) = stop else {
                return Err(bad_shape("on(start, stop): stop is required"));
            };
            (start, stop)
        };
        let (Ok(start), Ok(stop)) = (usize::try_from(start), usize::try_from(stop)) else {
            return Err(bad_shape(format!(
                "on({start}, {stop}): coordinates are counted from 0"
            )));
        };
        if stop < start {
            return Err(bad_shape(format!(
                "on({start}, {stop}): stop is before start"
            )));
        }
        let sliced = self.inner.clone().on(start..stop).or_raise()?;
        let repr = format!("{}.on({start}, {stop})", bracket(&self.repr));
        Kernel::new(AnyKernel::Sliced(Box::new(sliced)), repr).into_py_object(py)
    }

    fn __add__(&self, py: Python<'_>, other: PyRef<'_, Kernel>) -> PyResult<Py<PyAny>> {
        let repr = format!("{} + {}", self.repr, other.repr);
        let sum = self.inner.clone().plus(other.inner.clone());
        Kernel::new(AnyKernel::Sum(Box::new(sum)), repr).into_py_object(py)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok(other) = other.cast::<Kernel>() {
            let other = other.get();
            let repr = format!("{} * {}", bracket(&self.repr), bracket(&other.repr));
            let product = self.inner.clone().times(other.inner.clone());
            return Kernel::new(AnyKernel::Product(Box::new(product)), repr).into_py_object(py);
        }
        match other.extract::<f64>() {
            Ok(variance) => self.scaled(py, variance),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.extract::<f64>() {
            Ok(variance) => self.scaled(py, variance),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    /// The Matérn smoothness ν for kernels of finite smoothness, `None` for RBF and linear.
    #[getter]
    fn smoothness(&self) -> Option<f64> {
        self.inner.smoothness()
    }

    fn __repr__(&self) -> String {
        self.repr.clone()
    }

    /// Equal kernels have the same snapshot, bit for bit (so `Linear(0.0) != Linear(-0.0)`).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        match other.cast::<Kernel>() {
            Ok(o) => Ok(o.get().inner.to_bytes().or_raise()? == self.inner.to_bytes().or_raise()?),
            Err(_) => Ok(false),
        }
    }

    fn __hash__(&self) -> PyResult<u64> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.inner.to_bytes().or_raise()?.hash(&mut h);
        Ok(h.finish())
    }

    /// The kernel as bytes (the crate's binary snapshot); `Kernel.from_bytes` reads it back.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.inner.to_bytes().or_raise()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A kernel from `to_bytes`.
    #[staticmethod]
    #[pyo3(signature = (data, repr = None))]
    fn from_bytes(py: Python<'_>, data: &[u8], repr: Option<String>) -> PyResult<Py<PyAny>> {
        let inner = AnyKernel::from_bytes(data).or_raise()?;
        let repr = repr.unwrap_or_else(|| format!("{inner:?}"));
        Kernel::new(inner, repr).into_py_object(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<crate::Reduce<'py>> {
        let py = slf.py();
        let restore = py.get_type::<Kernel>().getattr("from_bytes")?;
        let this = slf.get();
        Ok((restore, (this.to_bytes(py)?, this.repr.clone())))
    }
}

/// The squared-exponential (RBF) kernel k(x, x′) = exp(−‖x − x′‖² / (2ℓ²))
/// (Rasmussen & Williams 2006 Eq. 4.9).
#[pyclass(extends = Kernel, frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct Rbf;

#[pymethods]
impl Rbf {
    #[new]
    #[pyo3(signature = (lengthscale))]
    fn new(lengthscale: f64) -> PyResult<(Self, Kernel)> {
        let k = RsRbf::new(lengthscale).or_raise()?;
        Ok((
            Rbf,
            Kernel::new(
                AnyKernel::Rbf(k),
                format!("Rbf(lengthscale={lengthscale:?})"),
            ),
        ))
    }

    /// The length-scale ℓ.
    #[getter]
    fn lengthscale(slf: PyRef<'_, Self>) -> f64 {
        match &slf.as_super().inner {
            AnyKernel::Rbf(k) => k.lengthscale(),
            _ => unreachable!("an Rbf holds an RBF kernel"),
        }
    }
}

/// The Matérn kernel of smoothness ν ∈ (0, 100] and length-scale ℓ
/// (Rasmussen & Williams 2006 Eq. 4.14): with r = ‖x − x′‖ and z = √(2ν) r/ℓ,
/// k = 2^{1−ν}/Γ(ν) z^ν K_ν(z), K_ν the modified Bessel function of the second kind.
/// ν = 1/2, 3/2 and 5/2 use the closed forms (Eq. 4.16–4.17): exp(−r/ℓ),
/// (1 + √3 r/ℓ) exp(−√3 r/ℓ) and (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ); any other ν costs one
/// Bessel evaluation per entry. Raises `InvalidParameterError` unless ν is a finite number in
/// (0, 100].
///
/// Both arguments are keyword-only, `Matern(nu=2.5, lengthscale=0.5)`: scikit-learn writes the
/// length-scale first (`Matern(length_scale, nu)`), so a positional `Matern(0.5, 2.5)` would
/// silently mean ν = 0.5 to one reader and ℓ = 0.5 to another; it raises `TypeError`.
#[pyclass(extends = Kernel, frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct Matern;

#[pymethods]
impl Matern {
    #[new]
    #[pyo3(
        signature = (*args, nu = None, lengthscale = None),
        text_signature = "(*, nu, lengthscale)"
    )]
    fn new(
        args: &Bound<'_, pyo3::types::PyTuple>,
        nu: Option<f64>,
        lengthscale: Option<f64>,
    ) -> PyResult<(Self, Kernel)> {
        if !args.is_empty() {
            let given: Vec<String> = args
                .iter()
                .map(|a| a.repr().map_or_else(|_| "?".into(), |r| r.to_string()))
                .collect();
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "Matern takes keyword arguments only: Matern(nu=..., lengthscale=...), got \
                 Matern({}). ν comes first here but the length-scale first in scikit-learn's \
                 Matern(length_scale, nu), so positional arguments are refused",
                given.join(", ")
            )));
        }
        let (Some(nu), Some(lengthscale)) = (nu, lengthscale) else {
            let missing: Vec<&str> = [("nu", nu.is_none()), ("lengthscale", lengthscale.is_none())]
                .into_iter()
                .filter_map(|(name, absent)| absent.then_some(name))
                .collect();
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "Matern() missing keyword argument(s): {} (Matern(nu=2.5, lengthscale=0.5))",
                missing.join(", ")
            )));
        };
        let k = RsMatern::new(nu, lengthscale).or_raise()?;
        let repr = format!("Matern(nu={nu:?}, lengthscale={lengthscale:?})");
        Ok((Matern, Kernel::new(AnyKernel::Matern(k), repr)))
    }

    /// The smoothness ν.
    #[getter]
    fn nu(slf: PyRef<'_, Self>) -> f64 {
        match &slf.as_super().inner {
            AnyKernel::Matern(k) => k.nu(),
            _ => unreachable!("a Matern holds a Matérn kernel"),
        }
    }

    /// The length-scale ℓ.
    #[getter]
    fn lengthscale(slf: PyRef<'_, Self>) -> f64 {
        match &slf.as_super().inner {
            AnyKernel::Matern(k) => k.lengthscale(),
            _ => unreachable!("a Matern holds a Matérn kernel"),
        }
    }
}

/// The linear kernel k(x, x′) = xᵀx′ + b with bias b ≥ 0 (Rasmussen & Williams 2006 §4.2.2).
#[pyclass(extends = Kernel, frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct Linear;

#[pymethods]
impl Linear {
    #[new]
    #[pyo3(signature = (bias = 0.0))]
    fn new(bias: f64) -> PyResult<(Self, Kernel)> {
        let k = RsLinear::with_bias(bias).or_raise()?;
        Ok((
            Linear,
            Kernel::new(AnyKernel::Linear(k), format!("Linear(bias={bias:?})")),
        ))
    }

    /// The bias b.
    #[getter]
    fn bias(slf: PyRef<'_, Self>) -> f64 {
        match &slf.as_super().inner {
            AnyKernel::Linear(k) => k.bias(),
            _ => unreachable!("a Linear holds a linear kernel"),
        }
    }
}

/// A kernel family by name: "rbf" or "matern" (with ν = `nu`).
pub(crate) fn family(name: &str, nu: f64) -> PyResult<KernelFamily> {
    let family = match name.to_ascii_lowercase().as_str() {
        "rbf" => KernelFamily::Rbf,
        "matern" => KernelFamily::Matern { nu },
        other => {
            return Err(crate::errors::InvalidParameterError::new_err(format!(
                "family = {other:?}: expected \"rbf\" or \"matern\""
            )));
        }
    };
    family.check().or_raise()?;
    Ok(family)
}

/// The `repr` of a fitted kernel, as the `FittedKernel` constructor call that rebuilds it.
pub(crate) fn fitted_repr(k: &RsFitted) -> String {
    let lengthscales = if k.is_per_dimension() {
        let each: Vec<String> = k.lengthscales().iter().map(|l| format!("{l:?}")).collect();
        format!("[{}]", each.join(", "))
    } else {
        format!("{:?}", k.lengthscales()[0])
    };
    let family = match k.family() {
        KernelFamily::Rbf => "family='rbf'".to_string(),
        KernelFamily::Matern { nu } => format!("family='matern', nu={nu:?}"),
    };
    format!(
        "FittedKernel({lengthscales}, {family}, variance={:?})",
        k.variance()
    )
}

/// s² · κ(r̃), r̃² = Σᵢ ((xᵢ − x′ᵢ)/ℓᵢ)²: an RBF or Matérn kernel with an output variance s² and
/// one length-scale shared by every coordinate (`lengthscale` a number) or one per coordinate
/// (`lengthscale` a sequence: automatic relevance determination, Rasmussen & Williams 2006
/// §5.1; inputs must then have exactly that many coordinates). `fit_hyperparameters` returns
/// one; it works wherever a kernel does. With a shared ℓ its values are those of
/// `variance * Matern(nu, ℓ)` (or `Rbf(ℓ)`) bit for bit.
///
/// The bounds assume k(x, x) ≤ 1 and read B in the RKHS of the kernel as given: a variance s²
/// changes what a B means (‖f‖ in the RKHS of s²k is ‖f‖/s).
#[pyclass(extends = Kernel, frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct FittedKernel;

impl FittedKernel {
    fn get<'a>(slf: &'a PyRef<'_, Self>) -> &'a RsFitted {
        match &slf.as_super().inner {
            AnyKernel::Fitted(k) => k,
            _ => unreachable!("a FittedKernel holds a fitted kernel"),
        }
    }
}

#[pymethods]
impl FittedKernel {
    #[new]
    #[pyo3(signature = (lengthscale, *, family = "matern", nu = 2.5, variance = 1.0))]
    fn new(
        lengthscale: &Bound<'_, PyAny>,
        family: &str,
        nu: f64,
        variance: f64,
    ) -> PyResult<(Self, Kernel)> {
        let family = self::family(family, nu)?;
        let k = if let Ok(l) = lengthscale.extract::<f64>() {
            RsFitted::shared(family, l, variance).or_raise()?
        } else {
            let ls = vector(lengthscale, "lengthscale")?;
            RsFitted::per_dimension(family, elements(&ls), variance).or_raise()?
        };
        let repr = fitted_repr(&k);
        Ok((FittedKernel, Kernel::new(AnyKernel::Fitted(k), repr)))
    }

    /// The family: "rbf" or "matern" (ν is `smoothness`).
    #[getter]
    fn family(slf: PyRef<'_, Self>) -> &'static str {
        match Self::get(&slf).family() {
            KernelFamily::Rbf => "rbf",
            KernelFamily::Matern { .. } => "matern",
        }
    }

    /// The length-scales (a new array): one value if shared, one per coordinate otherwise.
    #[getter]
    fn lengthscales<'py>(slf: PyRef<'py, Self>) -> Bound<'py, PyArray1<f64>> {
        let py = slf.py();
        PyArray1::from_slice(py, Self::get(&slf).lengthscales())
    }

    /// Whether there is one length-scale per coordinate.
    #[getter]
    fn per_dimension(slf: PyRef<'_, Self>) -> bool {
        Self::get(&slf).is_per_dimension()
    }

    /// The output variance s² = k(x, x).
    #[getter]
    fn variance(slf: PyRef<'_, Self>) -> f64 {
        Self::get(&slf).variance()
    }
}

/// Adds the kernel classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Kernel>()?;
    m.add_class::<Rbf>()?;
    m.add_class::<Matern>()?;
    m.add_class::<Linear>()?;
    m.add_class::<FittedKernel>()?;
    Ok(())
}
