//! The eight confidence bounds as one base class, `Bound`, and a subclass per bound.

use kernel_bandits::bound::{
    AdaptiveNorm as RsAdaptive, Amm as RsAmm, AnyBound, ArmSetInfo, Ay as RsAy, Bkb as RsBkb,
    BoundConfig, BoundGradient as RsGradient, BoundKind, BoundParams, Bounds, CheckedBounds,
    Cmm as RsCmm, ConfidenceBound, DEFAULT_MAX_LEVEL, Diagnostics as RsDiagnostics, Dmm as RsDmm,
    EkUcb as RsEkUcb, Igp as RsIgp, KUcb as RsKUcb, NormDoubling as RsDoubling, PendingVariance,
    SketchParams,
};
use kernel_bandits::points::Points;
use kernel_bandits::snapshot::Snapshot;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde::{Deserialize, Serialize};

use crate::arrays::{elements, matrix, rows, target, targets, to_numpy, vector};
use crate::errors::{OrRaise, UnsupportedError};
use crate::kernels::{AnyKernel, Kernel};

/// A bound of one of the eight kinds, on any kernel.
pub type PlainBound = AnyBound<AnyKernel>;

/// The bound every Python bound holds: one of the eight, or a DMM-UCB or CMM-UCB whose norm
/// bound B doubles when the data refute it (`AdaptiveNorm`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PyAnyBound {
    /// One of the eight bounds.
    Plain(PlainBound),
    /// A DMM-UCB or CMM-UCB with an adaptive B.
    Adaptive(RsAdaptive<PlainBound>),
}

macro_rules! each_bound {
    ($bound:expr, $b:ident => $body:expr) => {
        match $bound {
            PyAnyBound::Plain($b) => $body,
            PyAnyBound::Adaptive($b) => $body,
        }
    };
}

impl PyAnyBound {
    /// The kind of the bound (of the bound inside, for an adaptive one).
    pub fn kind(&self) -> BoundKind {
        self.plain().kind()
    }

    /// The snapshot of the bound inside: a plain bound's bytes are those of its `AnyBound`
    /// (as before adaptive bounds existed), an adaptive one's those of its `AdaptiveNorm`.
    pub fn to_snapshot(&self) -> kernel_bandits::Result<Vec<u8>> {
        each_bound!(self, b => b.to_bytes())
    }

    /// A bound from `to_snapshot`: a plain bound, or else an adaptive one.
    pub fn from_snapshot(data: &[u8]) -> kernel_bandits::Result<Self> {
        match PlainBound::from_bytes(data) {
            Ok(b) => Ok(Self::Plain(b)),
            Err(kernel_bandits::Error::Snapshot(kernel_bandits::SnapshotError::Kind {
                ..
            })) => RsAdaptive::from_bytes(data).map(Self::Adaptive),
            Err(e) => Err(e),
        }
    }

    /// The bound of one of the eight kinds (inside, for an adaptive one).
    pub fn plain(&self) -> &PlainBound {
        match self {
            Self::Plain(b) => b,
            Self::Adaptive(a) => a.inner(),
        }
    }

    /// σ, B, δ, c of the mixture bounds as the bound uses them (an adaptive bound's B in
    /// force), `None` for K-UCB, BKB and EK-UCB.
    pub fn params(&self) -> Option<&kernel_bandits::bound::CheckedParams> {
        self.plain().params()
    }

    /// "sigma=…, norm_bound=…, delta=…, scale=…" for the mixture bounds, else "".
    pub fn params_repr(&self) -> String {
        self.params().map_or_else(String::new, |p| {
            format!(
                "sigma={:?}, norm_bound={:?}, delta={:?}, scale={:?}",
                p.sigma(),
                p.norm_bound(),
                p.delta(),
                p.scale()
            )
        })
    }
}

impl ConfidenceBound for PyAnyBound {
    fn name(&self) -> &'static str {
        each_bound!(self, b => b.name())
    }
    fn observe(&mut self, x: &[f64], y: f64) -> kernel_bandits::Result<()> {
        each_bound!(self, b => b.observe(x, y))
    }
    fn observe_many(&mut self, points: &Points<'_>, targets: &[f64]) -> kernel_bandits::Result<()> {
        match self {
            Self::Plain(b) => b.observe_many(points, targets),
            // On a numerical failure inside a batch the crate's wrapper puts the observations,
            // the level and the log back, but not every cache bit for bit (a truncated
            // posterior keeps its dimension and buffers); a copy restores it exactly, for
            // O(t²), the order of one observation's cost.
            Self::Adaptive(a) => {
                let saved = a.clone();
                let result = a.observe_many(points, targets);
                if result.is_err() {
                    *a = saved;
                }
                result
            }
        }
    }
    fn learns_norm(&self) -> bool {
        each_bound!(self, b => b.learns_norm())
    }
    fn diagnostics(&self) -> RsDiagnostics {
        each_bound!(self, b => b.diagnostics())
    }
    fn observations(&self) -> kernel_bandits::Result<kernel_bandits::bound::Observations> {
        each_bound!(self, b => b.observations())
    }
    fn evaluate(&self, points: &Points<'_>) -> kernel_bandits::Result<Bounds> {
        each_bound!(self, b => b.evaluate(points))
    }
    fn argmax_ucb(&self, points: &Points<'_>) -> kernel_bandits::Result<usize> {
        each_bound!(self, b => b.argmax_ucb(points))
    }
    fn top_ucb(&self, points: &Points<'_>, count: usize) -> kernel_bandits::Result<Vec<usize>> {
        each_bound!(self, b => b.top_ucb(points, count))
    }
    fn top_ucb_with_terms(
        &self,
        points: &Points<'_>,
        count: usize,
    ) -> kernel_bandits::Result<(Vec<usize>, Vec<Vec<f64>>)> {
        each_bound!(self, b => b.top_ucb_with_terms(points, count))
    }
    fn len(&self) -> usize {
        each_bound!(self, b => b.len())
    }
    fn dim(&self) -> Option<usize> {
        each_bound!(self, b => b.dim())
    }
    fn truncate(&mut self, len: usize) {
        each_bound!(self, b => b.truncate(len))
    }
    fn remove_oldest(&mut self) -> kernel_bandits::Result<()> {
        each_bound!(self, b => b.remove_oldest())
    }
    fn fix_arms(
        &mut self,
        arms: &Points<'_>,
        memory_limit: Option<usize>,
    ) -> kernel_bandits::Result<bool> {
        each_bound!(self, b => b.fix_arms(arms, memory_limit))
    }
    fn release_arms(&mut self) {
        each_bound!(self, b => b.release_arms())
    }
    fn fixed_arms(&self) -> Option<ArmSetInfo> {
        each_bound!(self, b => b.fixed_arms())
    }
    fn gradient(&self, x: &[f64]) -> kernel_bandits::Result<RsGradient> {
        each_bound!(self, b => b.gradient(x))
    }
    fn ucb_gradient(&self, x: &[f64]) -> kernel_bandits::Result<(f64, Vec<f64>)> {
        each_bound!(self, b => b.ucb_gradient(x))
    }
    fn ucb_terms(&self) -> usize {
        each_bound!(self, b => b.ucb_terms())
    }
    fn ucb_term_values(&self, x: &[f64]) -> kernel_bandits::Result<Vec<f64>> {
        each_bound!(self, b => b.ucb_term_values(x))
    }
    fn ucb_term_values_at(&self, points: &[&[f64]]) -> Vec<kernel_bandits::Result<Vec<f64>>> {
        each_bound!(self, b => b.ucb_term_values_at(points))
    }
    fn ucb_gradient_among(
        &self,
        x: &[f64],
        terms: &[usize],
    ) -> kernel_bandits::Result<(f64, Vec<f64>)> {
        each_bound!(self, b => b.ucb_gradient_among(x, terms))
    }
    fn ucb_regularity(&self) -> kernel_bandits::Result<kernel_bandits::bound::UcbRegularity<'_>> {
        each_bound!(self, b => b.ucb_regularity())
    }
    fn ucb_term_detail(
        &self,
        x: &[f64],
        term: usize,
    ) -> kernel_bandits::Result<kernel_bandits::bound::UcbTermDetail> {
        each_bound!(self, b => b.ucb_term_detail(x, term))
    }
    fn pending_variance<'a>(
        &'a self,
        pending: &Points<'_>,
    ) -> kernel_bandits::Result<Box<dyn PendingVariance + 'a>> {
        each_bound!(self, b => b.pending_variance(pending))
    }
}

impl Snapshot for PyAnyBound {
    fn kind() -> String {
        format!(
            "python-bound<{}|{}>",
            <PlainBound as Snapshot>::kind(),
            <RsAdaptive<PlainBound> as Snapshot>::kind()
        )
    }
    fn restore(&mut self) -> kernel_bandits::Result<()> {
        each_bound!(self, b => b.restore())
    }
}

/// `kernel_bandits._values.NAME`: the classes kept in Python (`BoundValues`, a tuple subclass,
/// and the warnings).
fn values_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("kernel_bandits._values")?.getattr(name)
}

/// Warns with `kernel_bandits.MisspecificationWarning`, at the caller's line: `what` (from
/// `CheckedBounds::describe`) and the remedies in the package's terms.
pub(crate) fn warn_misspecified(py: Python<'_>, what: &str) -> PyResult<()> {
    let message = format!(
        "{what}. Try a larger norm_bound or sigma, another kernel or length-scale, or \
         AdaptiveNorm(bound), which doubles B whenever the data refute it (see \
         bound.diagnostics())"
    );
    let category = values_class(py, "MisspecificationWarning")?;
    let message =
        std::ffi::CString::new(message.replace('\0', " ")).expect("NUL bytes were replaced");
    PyErr::warn(py, &category, &message, 1)
}

/// A `BoundValues` (mean, lcb, ucb, with `crossed` and `empty_set`), after a
/// `MisspecificationWarning` if the data refute the assumptions.
pub(crate) fn bound_values(py: Python<'_>, checked: CheckedBounds) -> PyResult<Bound<'_, PyAny>> {
    if let Some(what) = checked.describe() {
        warn_misspecified(py, &what)?;
    }
    let empty_set = checked.diagnostics.empty_set();
    let Bounds { mean, lcb, ucb } = checked.bounds;
    values_class(py, "BoundValues")?.call1((
        to_numpy(py, mean),
        to_numpy(py, lcb),
        to_numpy(py, ucb),
        checked.crossed,
        empty_set,
    ))
}

/// `bound.evaluate_checked(x)` on a matrix argument, with the GIL released, as `BoundValues`.
pub(crate) fn evaluate<'py>(
    py: Python<'py>,
    bound: &(impl ConfidenceBound + ?Sized),
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let xa = matrix(x, "x")?;
    let (data, dim) = rows(&xa);
    let checked = py
        .detach(|| bound.evaluate_checked(&Points::from_row_major(data, dim)?))
        .or_raise()?;
    bound_values(py, checked)
}

/// Observed inputs as an (n, d) array and targets as an (n) array.
type Observed<'py> = (Bound<'py, numpy::PyArray2<f64>>, Bound<'py, PyArray1<f64>>);

/// The observed inputs (an (n, d) array) and targets (n) of `bound`, in order.
pub(crate) fn observed<'py>(
    py: Python<'py>,
    bound: &(impl ConfidenceBound + ?Sized),
) -> PyResult<Observed<'py>> {
    use numpy::PyArrayMethods;
    let o = py.detach(|| bound.observations()).or_raise()?;
    let (n, d) = (o.len(), o.dim);
    let x = PyArray1::from_vec(py, o.inputs).reshape([n, d])?;
    Ok((x, to_numpy(py, o.targets)))
}

/// A confidence bound on an unknown function f observed with noise: at any batch of points, the
/// posterior mean and lower and upper bounds on f that hold at every round at once with
/// probability 1 − δ, when the noise is σ-sub-Gaussian and ‖f‖_H ≤ B.
///
/// Build one with its class (`Dmm(kernel, sigma=0.1, norm_bound=10.0)`, …) or by name with
/// `make_bound`. Every method that does work on the data releases the GIL; a call that raises
/// leaves the bound exactly as it was. Bounds pickle (through the crate's binary snapshots) and
/// continue bit-identically.
#[pyclass(name = "Bound", subclass, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct PyBound {
    pub(crate) inner: PyAnyBound,
    /// The constructor call that built it, for `repr`.
    pub(crate) spec: String,
}

impl PyBound {
    /// The right Python class for a bound (`Ay`, …, `EkUcb`).
    pub(crate) fn into_py_object(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if matches!(self.inner, PyAnyBound::Adaptive(_)) {
            return Ok(Py::new(py, (AdaptiveNorm, self))?.into_any());
        }
        Ok(match self.inner.kind() {
            BoundKind::Ay => Py::new(py, (Ay, self))?.into_any(),
            BoundKind::Igp => Py::new(py, (Igp, self))?.into_any(),
            BoundKind::Amm => Py::new(py, (Amm, self))?.into_any(),
            BoundKind::Dmm => Py::new(py, (Dmm, self))?.into_any(),
            BoundKind::Cmm => Py::new(py, (Cmm, self))?.into_any(),
            BoundKind::KUcb => Py::new(py, (KUcb, self))?.into_any(),
            BoundKind::Bkb => Py::new(py, (Bkb, self))?.into_any(),
            BoundKind::EkUcb => Py::new(py, (EkUcb, self))?.into_any(),
            other => Err(UnsupportedError::new_err(format!(
                "the {other} bound has no Python class yet"
            )))?,
        })
    }
}

#[pymethods]
impl PyBound {
    /// Absorbs one observation y = f(x) + noise. `x` is a 1-D array of d coordinates, `y` a
    /// number (or an array holding one, e.g. of shape (1,) or (1, 1)).
    fn observe(
        &mut self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let y = target(y, "y")?;
        let xa = vector(x, "x")?;
        let xs = elements(&xa);
        let inner = &mut self.inner;
        py.detach(|| inner.observe(xs, y)).or_raise()
    }

    /// Absorbs the observations y[i] at the rows x[i] of an (n, d) array, in order: the same
    /// bounds as n calls of `observe`, at once. `y` has n numbers, as a 1-D array or an (n, 1)
    /// column. All or nothing: on an error none is kept.
    fn observe_many(
        &mut self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let xa = matrix(x, "x")?;
        let (data, dim) = rows(&xa);
        let ya = targets(y, "y")?;
        let ys = elements(&ya);
        let inner = &mut self.inner;
        py.detach(|| inner.observe_many(&Points::from_row_major(data, dim)?, ys))
            .or_raise()
    }

    /// (mean, lcb, ucb) at the rows of the (n, d) array `x`, each a float64 array of length n,
    /// as a `BoundValues` tuple whose `crossed`, `empty_set` and `misspecified` say whether the
    /// data refute the assumptions (LCB > UCB somewhere, or an empty confidence set); it then
    /// also warns (`MisspecificationWarning`).
    fn bounds<'py>(&self, py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        evaluate(py, &self.inner, x)
    }

    /// The observed inputs, an (n, d) array in the order observed ((0, 0) before the first
    /// observation); after `truncate` or `remove_oldest`, those the bound still uses.
    #[getter]
    fn observed_x<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        Ok(observed(py, &self.inner)?.0)
    }

    /// The observed targets, a float64 array of length n, in the order observed.
    #[getter]
    fn observed_y<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(observed(py, &self.inner)?.1)
    }

    /// σ, the noise's assumed sub-Gaussian scale, as the bound uses it (`None` for K-UCB, BKB
    /// and EK-UCB, whose width is set by λ and β̃).
    #[getter]
    fn sigma(&self) -> Option<f64> {
        self.inner.params().map(|p| p.sigma())
    }

    /// B, the bound on ‖f‖_H in force (an `AdaptiveNorm`'s current level; `None` for K-UCB, BKB
    /// and EK-UCB).
    #[getter]
    fn norm_bound(&self) -> Option<f64> {
        self.inner.params().map(|p| p.norm_bound())
    }

    /// δ: the bounds hold at every round with probability ≥ 1 − δ (`None` for K-UCB, BKB and
    /// EK-UCB).
    #[getter]
    fn delta(&self) -> Option<f64> {
        self.inner.params().map(|p| p.delta())
    }

    /// c, the covariance scale of the martingale mixture in use (a0 = σ²/c), whether given or
    /// chosen by the bound (`None` for K-UCB, BKB and EK-UCB).
    #[getter]
    fn scale(&self) -> Option<f64> {
        self.inner.params().map(|p| p.scale())
    }

    /// The index of the row of `x` with the largest UCB (the lowest index among ties), found
    /// without necessarily scoring every row in full.
    fn argmax_ucb(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<usize> {
        let xa = matrix(x, "x")?;
        let (data, dim) = rows(&xa);
        let inner = &self.inner;
        py.detach(|| inner.argmax_ucb(&Points::from_row_major(data, dim)?))
            .or_raise()
    }

    /// Whether the data still agree with σ, B and δ (see `Diagnostics`).
    fn diagnostics(&self, py: Python<'_>) -> Diagnostics {
        // CMM's may need a fresh eigendecomposition.
        let inner = &self.inner;
        Diagnostics::from(py.detach(|| inner.diagnostics()))
    }

    /// CMM-UCB's dual and primal certificate at the point `x` (Flynn & Reeb 2024 Thm 4.5): the
    /// regulariser a at which the UCB U_a(x) is attained, the UCB, and a feasible function's
    /// value below it. Only `Cmm` has one; other bounds raise `UnsupportedError`.
    fn certificate(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Certificate> {
        let AnyBound::Cmm(cmm) = self.inner.plain() else {
            return Err(UnsupportedError::new_err(format!(
                "certificate: only CMM-UCB has one, not {}",
                self.inner.name()
            )));
        };
        let xa = vector(x, "x")?;
        let xs = elements(&xa);
        let c = py.detach(|| cmm.certificate(xs)).or_raise()?;
        Ok(Certificate(c))
    }

    /// The mean μ(x), lower and upper bounds L(x), U(x) at the 1-D point `x` and their
    /// gradients with respect to x (see `BoundGradient`): `Cmm` at its minimising regulariser,
    /// `Bkb` and `EkUcb` through their Nyström embedding. A bound or kernel without gradients
    /// raises `UnsupportedError`.
    fn gradient(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<BoundGradient> {
        let xa = vector(x, "x")?;
        let xs = elements(&xa);
        let inner = &self.inner;
        Ok(BoundGradient(py.detach(|| inner.gradient(xs)).or_raise()?))
    }

    /// (U(x), ∇U(x)): the upper bound at the 1-D point `x` and its gradient, what a continuous
    /// maximiser of the UCB needs (cheaper than `gradient`).
    fn ucb_gradient<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
        let xa = vector(x, "x")?;
        let xs = elements(&xa);
        let inner = &self.inner;
        let (u, g) = py.detach(|| inner.ucb_gradient(xs)).or_raise()?;
        Ok((u, to_numpy(py, g)))
    }

    /// The posterior variance ρ²(x) at the rows of the (n, d) array `x`, given the observations
    /// and the *pending* inputs, the rows of the (p, d) array `pending` whose targets are still
    /// to come (p may be 0). A Gaussian process's variance needs no targets, so pending inputs
    /// already shrink it: GP-UCB-PE (Contal et al. 2013) maximises it to spread a batch out. The
    /// exact bounds use the regulariser of their mean (`Cmm`: a0 = σ²/c), `Bkb` and `EkUcb`
    /// their Nyström features. The bound itself is unchanged.
    fn pending_variance<'py>(
        &self,
        py: Python<'py>,
        pending: &Bound<'py, PyAny>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let pa = matrix(pending, "pending")?;
        let (pd, pdim) = rows(&pa);
        let xa = matrix(x, "x")?;
        let (xd, xdim) = rows(&xa);
        let inner = &self.inner;
        let v = py
            .detach(|| {
                let pending = Points::from_row_major(pd, pdim)?;
                let points = Points::from_row_major(xd, xdim)?;
                inner.pending_variance(&pending)?.variance(&points)
            })
            .or_raise()?;
        Ok(to_numpy(py, v))
    }

    /// (ρ²(x), ∇ρ²(x)): the variance given the rows of `pending` (as `pending_variance`) at the
    /// 1-D point `x`, and its gradient with respect to x.
    fn pending_variance_gradient<'py>(
        &self,
        py: Python<'py>,
        pending: &Bound<'py, PyAny>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
        let pa = matrix(pending, "pending")?;
        let (pd, pdim) = rows(&pa);
        let xa = vector(x, "x")?;
        let xs = elements(&xa);
        let inner = &self.inner;
        let (v, g) = py
            .detach(|| {
                let pending = Points::from_row_major(pd, pdim)?;
                inner.pending_variance(&pending)?.variance_gradient(xs)
            })
            .or_raise()?;
        Ok((v, to_numpy(py, g)))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The number of observations absorbed.
    #[getter]
    fn observations(&self) -> usize {
        self.inner.len()
    }

    /// The dimension of the points observed so far, `None` before the first.
    #[getter]
    fn dim(&self) -> Option<usize> {
        self.inner.dim()
    }

    /// The bound's name as `make_bound` accepts it, e.g. "dmm" or "ek-ucb".
    #[getter]
    fn name(&self) -> &'static str {
        self.inner.kind().name()
    }

    /// Forgets every observation after the first `n` (no-op if `n >= len(bound)`).
    fn truncate(&mut self, n: usize) {
        self.inner.truncate(n);
    }

    /// Forgets the oldest observation (the exact bounds; sliding windows use it).
    fn remove_oldest(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| inner.remove_oldest()).or_raise()
    }

    /// Declares a fixed arm set (the rows of `arms`) whose kernel rows the bound keeps up to
    /// date, so that scoring those arms costs O(t) per arm instead of O(t²). Returns whether the
    /// bound keeps them (CMM-UCB and the sketched bounds do not; `memory_limit` in bytes caps
    /// the memory used).
    #[pyo3(signature = (arms, memory_limit = None))]
    fn fix_arms(
        &mut self,
        py: Python<'_>,
        arms: &Bound<'_, PyAny>,
        memory_limit: Option<usize>,
    ) -> PyResult<bool> {
        let aa = matrix(arms, "arms")?;
        let (data, dim) = rows(&aa);
        let inner = &mut self.inner;
        py.detach(|| inner.fix_arms(&Points::from_row_major(data, dim)?, memory_limit))
            .or_raise()
    }

    /// Drops a fixed arm set declared with `fix_arms`.
    fn release_arms(&mut self) {
        self.inner.release_arms();
    }

    /// The number of fixed arms the bound keeps, `None` without a fixed set.
    #[getter]
    fn fixed_arms(&self) -> Option<usize> {
        self.inner.fixed_arms().map(|info| info.arms)
    }

    /// An independent copy.
    fn copy(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        py.detach(|| self.clone()).into_py_object(py)
    }

    fn __copy__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.copy(py)
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.copy(py)
    }

    /// The bound as bytes (the crate's binary snapshot, with a checksum); `Bound.from_bytes`
    /// restores it, and the restored bound continues bit-identically.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        let bytes = py.detach(|| inner.to_snapshot()).or_raise()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A bound from `to_bytes`, as an instance of its own class.
    #[staticmethod]
    #[pyo3(signature = (data, spec = None))]
    fn from_bytes(py: Python<'_>, data: &[u8], spec: Option<String>) -> PyResult<Py<PyAny>> {
        let inner = py.detach(|| PyAnyBound::from_snapshot(data)).or_raise()?;
        let spec = spec.unwrap_or_else(|| inner.name().to_string());
        PyBound { inner, spec }.into_py_object(py)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<crate::Reduce<'py>> {
        let restore = py.get_type::<PyBound>().getattr("from_bytes")?;
        Ok((restore, (self.to_bytes(py)?, self.spec.clone())))
    }

    fn __repr__(&self) -> String {
        let params = self.inner.params_repr();
        if params.is_empty() {
            format!("<{} with {} observations>", self.spec, self.inner.len())
        } else {
            format!(
                "<{} with {} observations; in use: {params}>",
                self.spec,
                self.inner.len()
            )
        }
    }
}

/// σ, B, δ, c and the optional λ, η and horizon T of the mixture bounds.
#[allow(clippy::too_many_arguments)]
fn mixture_params(
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    scale: Option<f64>,
    lambda: Option<f64>,
    eta: Option<f64>,
    horizon: Option<usize>,
) -> BoundParams {
    let mut p = BoundParams::new()
        .sigma(sigma)
        .norm_bound(norm_bound)
        .delta(delta);
    if let Some(c) = scale {
        p = p.scale(c);
    }
    if let Some(l) = lambda {
        p = p.lambda(l);
    }
    if let Some(e) = eta {
        p = p.eta(e);
    }
    if let Some(h) = horizon {
        p = p.horizon(h);
    }
    p
}

fn mixture_spec(
    class: &str,
    kernel: &Kernel,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    scale: Option<f64>,
) -> String {
    let scale = scale.map_or_else(|| "None".to_string(), |c| format!("{c:?}"));
    format!(
        "{class}({}, sigma={sigma:?}, norm_bound={norm_bound:?}, delta={delta:?}, scale={scale})",
        kernel.repr
    )
}

macro_rules! mixture_bound {
    ($(#[$doc:meta])* $class:ident, $rs:ident, $variant:ident) => {
        $(#[$doc])*
        #[pyclass(extends = PyBound, module = "kernel_bandits")]
        #[derive(Debug)]
        pub struct $class;

        #[pymethods]
        impl $class {
            #[new]
            #[pyo3(signature = (kernel, *, sigma = 0.1, norm_bound = 10.0, delta = 0.01, scale = None, horizon = None))]
            fn new(
                kernel: PyRef<'_, Kernel>,
                sigma: f64,
                norm_bound: f64,
                delta: f64,
                scale: Option<f64>,
                horizon: Option<usize>,
            ) -> PyResult<(Self, PyBound)> {
                let params = mixture_params(sigma, norm_bound, delta, scale, None, None, horizon);
                let inner = PyAnyBound::Plain(AnyBound::$variant($rs::new(kernel.inner.clone(), params).or_raise()?));
                let spec = mixture_spec(stringify!($class), &kernel, sigma, norm_bound, delta, scale);
                Ok(($class, PyBound { inner, spec }))
            }
        }
    };
}

mixture_bound!(
    /// AMM-UCB (Flynn & Reeb 2024 Cor. 4.6): the martingale-mixture bound at the regulariser
    /// a0 = σ²/c, U(x) = μ_a0(x) + (R̃_a0/√a0) ρ_a0(x) with R̃² = σ² ld_a0 + σ²B²/c + 2σ² ln(1/δ).
    ///
    /// Parameters: σ (`sigma`, an upper bound on the noise's sub-Gaussian scale), B
    /// (`norm_bound`, ‖f‖_H ≤ B), δ (`delta`), c (`scale`, the mixture's covariance scale; the
    /// paper uses c = T^{−d/(2d+2ν)} for Matérn kernels, see `paper_defaults`). With
    /// `scale=None` (the default) c is adaptive: chosen from the grid 10^{−j/2}, j = 0…8, by a
    /// union bound that keeps the guarantee for the whole run (δ/9 per grid point); AMM takes
    /// the c of least leave-one-out width, re-chosen when t doubles, DMM and CMM the c of
    /// smallest radius R_t (the marginal likelihood's choice of output scale). `horizon` is
    /// accepted for symmetry with `Igp` and not used.
    Amm, RsAmm, Amm
);
mixture_bound!(
    /// DMM-UCB (Flynn & Reeb 2024 §5.4): the smallest of the martingale-mixture bounds U_a over
    /// the grid a ∈ {0.1, 0.3, 1, 3, 10}·σ²/c (and the largest lower bound): never looser than
    /// AMM-UCB. Parameters as `Amm`.
    Dmm, RsDmm, Dmm
);
mixture_bound!(
    /// CMM-UCB (Flynn & Reeb 2024 §4.3, Thm 4.5, Eq. 12): the exact upper bound
    /// max f(x) over the confidence set {‖f_t − y_t‖ ≤ R_t, ‖f‖_H ≤ B}, computed through its dual
    /// min over a > 0 of U_a(x) on an eigendecomposition of K_t. Never looser than DMM-UCB;
    /// `certificate(x)` gives the dual and a primal value at a point. Parameters as `Amm`.
    Cmm, RsCmm, Cmm
);

/// AY-GP-UCB (Abbasi-Yadkori 2012 Thm 3.11, as restated in Flynn & Reeb 2024 App. C.2):
/// U(x) = μ_λ(x) + ((σ√(ld_λ + 2 ln(1/δ)) + √λ B)/√λ) ρ_λ(x). `lambda_` (λ) defaults to the
/// paper's σ²/c; the other parameters are those of `Amm`.
#[pyclass(extends = PyBound, module = "kernel_bandits")]
#[derive(Debug)]
pub struct Ay;

#[pymethods]
impl Ay {
    #[new]
    #[pyo3(signature = (kernel, *, sigma = 0.1, norm_bound = 10.0, delta = 0.01, scale = 1.0, lambda_ = None, horizon = None))]
    fn new(
        kernel: PyRef<'_, Kernel>,
        sigma: f64,
        norm_bound: f64,
        delta: f64,
        scale: f64,
        lambda_: Option<f64>,
        horizon: Option<usize>,
    ) -> PyResult<(Self, PyBound)> {
        let params = mixture_params(
            sigma,
            norm_bound,
            delta,
            Some(scale),
            lambda_,
            None,
            horizon,
        );
        let inner = PyAnyBound::Plain(AnyBound::Ay(
            RsAy::new(kernel.inner.clone(), params).or_raise()?,
        ));
        let mut spec = mixture_spec("Ay", &kernel, sigma, norm_bound, delta, Some(scale));
        if let Some(l) = lambda_ {
            spec.insert_str(spec.len() - 1, &format!(", lambda_={l:?}"));
        }
        Ok((Ay, PyBound { inner, spec }))
    }
}

/// IGP-UCB (Chowdhury & Gopalan 2017 Thm 2, as restated in Flynn & Reeb 2024 App. C.2):
/// U(x) = μ_{1+η}(x) + (σ√(ld_{1+η} + tη + 2 ln(1/δ)) + B) ρ_{1+η}(x). Give `eta` (η > 0) or
/// `horizon` (T, for the paper's η = 2/T); the other parameters are those of `Amm`.
#[pyclass(extends = PyBound, module = "kernel_bandits")]
#[derive(Debug)]
pub struct Igp;

#[pymethods]
impl Igp {
    #[new]
    #[pyo3(signature = (kernel, *, sigma = 0.1, norm_bound = 10.0, delta = 0.01, scale = 1.0, eta = None, horizon = None))]
    fn new(
        kernel: PyRef<'_, Kernel>,
        sigma: f64,
        norm_bound: f64,
        delta: f64,
        scale: f64,
        eta: Option<f64>,
        horizon: Option<usize>,
    ) -> PyResult<(Self, PyBound)> {
        let params = mixture_params(sigma, norm_bound, delta, Some(scale), None, eta, horizon);
        let inner = PyAnyBound::Plain(AnyBound::Igp(
            RsIgp::new(kernel.inner.clone(), params).or_raise()?,
        ));
        let mut spec = mixture_spec("Igp", &kernel, sigma, norm_bound, delta, Some(scale));
        let extra = match (eta, horizon) {
            (Some(e), _) => format!(", eta={e:?}"),
            (None, Some(h)) => format!(", horizon={h}"),
            (None, None) => String::new(),
        };
        spec.insert_str(spec.len() - 1, &extra);
        Ok((Igp, PyBound { inner, spec }))
    }
}

/// K-UCB: the exact kernel-UCB baseline of Calandriello et al. (2019) and Zenati et al. (2022),
/// UCB = μ_λ(x) + β̃ σ_λ(x) with the ridge posterior at regulariser λ (`lambda_`) and a fixed
/// width β̃ (`beta`). The defaults are Zenati et al. (2022) §5's practice, λ = 10, β̃ = 0.1.
#[pyclass(extends = PyBound, module = "kernel_bandits")]
#[derive(Debug)]
pub struct KUcb;

#[pymethods]
impl KUcb {
    #[new]
    #[pyo3(signature = (kernel, *, lambda_ = 10.0, beta = 0.1))]
    fn new(kernel: PyRef<'_, Kernel>, lambda_: f64, beta: f64) -> PyResult<(Self, PyBound)> {
        let inner = PyAnyBound::Plain(AnyBound::KUcb(
            RsKUcb::new(kernel.inner.clone(), lambda_, beta).or_raise()?,
        ));
        let spec = format!("KUcb({}, lambda_={lambda_:?}, beta={beta:?})", kernel.repr);
        Ok((KUcb, PyBound { inner, spec }))
    }
}

/// The settings of the sketched bounds; `None` leaves the crate's default (the theory's value).
#[allow(clippy::too_many_arguments)]
fn sketch_params(
    lambda: f64,
    beta: Option<f64>,
    sigma: Option<f64>,
    norm_bound: Option<f64>,
    delta: f64,
    epsilon: f64,
    horizon: Option<usize>,
    qbar: Option<f64>,
    mu: Option<f64>,
    gamma: Option<f64>,
) -> SketchParams {
    let mut p = SketchParams::new()
        .lambda(lambda)
        .delta(delta)
        .epsilon(epsilon);
    if let Some(v) = beta {
        p = p.beta(v);
    }
    if let Some(v) = sigma {
        p = p.sigma(v);
    }
    if let Some(v) = norm_bound {
        p = p.norm_bound(v);
    }
    if let Some(v) = horizon {
        p = p.horizon(v);
    }
    if let Some(v) = qbar {
        p = p.qbar(v);
    }
    if let Some(v) = mu {
        p = p.mu(v);
    }
    if let Some(v) = gamma {
        p = p.gamma(v);
    }
    p
}

/// BKB, the budgeted kernel bandit (Calandriello et al. 2019 Alg. 1, Thm 2): GP-UCB on a
/// Nyström dictionary resampled every round with inclusion probabilities p = min(1, q̄ σ̃²).
///
/// The defaults are Zenati et al. (2022) §5's practice (λ = 10, fixed width β̃ = 0.1,
/// q̄ = 2). Pass `beta=None` for the theoretical width (it needs `sigma`, `norm_bound` and
/// `horizon`) and `qbar=None` for the theoretical q̄ = 6α ln(4T/δ)/ε² (it needs `horizon`).
/// `seed` draws the dictionaries.
#[pyclass(extends = PyBound, module = "kernel_bandits")]
#[derive(Debug)]
pub struct Bkb;

#[pymethods]
impl Bkb {
    #[new]
    #[pyo3(
        signature = (kernel, *, lambda_ = 10.0, beta = Some(0.1), qbar = Some(2.0), sigma = None, norm_bound = None, delta = 0.1, epsilon = 0.5, horizon = None, seed = 0),
        text_signature = "(kernel, *, lambda_=10.0, beta=0.1, qbar=2.0, sigma=None, norm_bound=None, delta=0.1, epsilon=0.5, horizon=None, seed=0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kernel: PyRef<'_, Kernel>,
        lambda_: f64,
        beta: Option<f64>,
        qbar: Option<f64>,
        sigma: Option<f64>,
        norm_bound: Option<f64>,
        delta: f64,
        epsilon: f64,
        horizon: Option<usize>,
        seed: u64,
    ) -> PyResult<(Self, PyBound)> {
        let params = sketch_params(
            lambda_, beta, sigma, norm_bound, delta, epsilon, horizon, qbar, None, None,
        );
        let inner = PyAnyBound::Plain(AnyBound::Bkb(
            RsBkb::new(kernel.inner.clone(), params, seed).or_raise()?,
        ));
        let spec = format!(
            "Bkb({}, lambda_={lambda_:?}, beta={beta:?}, qbar={qbar:?}, seed={seed})",
            kernel.repr
        );
        Ok((
            Bkb,
            PyBound {
                inner,
                spec: clean_options(spec),
            },
        ))
    }
}

/// EK-UCB, efficient kernel UCB (Zenati et al. 2022 Alg. 2, Prop. 4.2, Lemma 4.1): kernel UCB on
/// an incrementally grown Nyström dictionary (KORS, inclusion probability p = min(1, γ τ̃) with
/// regulariser μ).
///
/// The defaults are Zenati et al. (2022) §5's practice (λ = μ = 10, β̃ = 0.1, γ = 1). `mu=None`
/// uses μ = λ; `gamma=None` the theoretical γ = 12 ln(T/δ) (it needs `horizon`); `beta=None`
/// the theoretical width (it needs `sigma`, `norm_bound` and `horizon`). `seed` draws the
/// dictionary.
#[pyclass(extends = PyBound, module = "kernel_bandits")]
#[derive(Debug)]
pub struct EkUcb;

#[pymethods]
impl EkUcb {
    #[new]
    #[pyo3(
        signature = (kernel, *, lambda_ = 10.0, beta = Some(0.1), mu = None, gamma = Some(1.0), sigma = None, norm_bound = None, delta = 0.1, epsilon = 0.5, horizon = None, seed = 0),
        text_signature = "(kernel, *, lambda_=10.0, beta=0.1, mu=None, gamma=1.0, sigma=None, norm_bound=None, delta=0.1, epsilon=0.5, horizon=None, seed=0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kernel: PyRef<'_, Kernel>,
        lambda_: f64,
        beta: Option<f64>,
        mu: Option<f64>,
        gamma: Option<f64>,
        sigma: Option<f64>,
        norm_bound: Option<f64>,
        delta: f64,
        epsilon: f64,
        horizon: Option<usize>,
        seed: u64,
    ) -> PyResult<(Self, PyBound)> {
        let params = sketch_params(
            lambda_, beta, sigma, norm_bound, delta, epsilon, horizon, None, mu, gamma,
        );
        let inner = PyAnyBound::Plain(AnyBound::EkUcb(
            RsEkUcb::new(kernel.inner.clone(), params, seed).or_raise()?,
        ));
        let spec = format!(
            "EkUcb({}, lambda_={lambda_:?}, beta={beta:?}, mu={mu:?}, gamma={gamma:?}, seed={seed})",
            kernel.repr
        );
        Ok((
            EkUcb,
            PyBound {
                inner,
                spec: clean_options(spec),
            },
        ))
    }
}

/// `Some(x)` → `x` and `None` stays `None`, so that a spec reads as Python.
fn clean_options(spec: String) -> String {
    let mut out = String::with_capacity(spec.len());
    let mut rest = spec.as_str();
    while let Some(i) = rest.find("Some(") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 5..];
        let close = after.find(')').unwrap_or(after.len());
        out.push_str(&after[..close]);
        rest = after.get(close + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// Any bound by name (`"dmm"`, `"DMM-UCB"`, `"ek-ucb"`, …; see `bound_names`), with the crate's
/// defaults: σ = 0.1, B = 10, δ = 0.01, c = 1 for the mixture bounds and Zenati et al. (2022)
/// §5's practice for K-UCB, BKB and EK-UCB. With `dims` and `horizon` the mixture bounds take
/// Flynn & Reeb (2024) §7's choices instead: c = T^{−d/(2d+2ν)} for Matérn kernels and IGP's
/// η = 2/T. `sigma`, `norm_bound` and `delta` override σ, B, δ of the mixture bounds.
#[pyfunction]
#[pyo3(signature = (name, kernel, *, dims = None, horizon = None, sigma = None, norm_bound = None, delta = None, seed = 0))]
#[allow(clippy::too_many_arguments)]
pub fn make_bound(
    py: Python<'_>,
    name: &str,
    kernel: PyRef<'_, Kernel>,
    dims: Option<usize>,
    horizon: Option<usize>,
    sigma: Option<f64>,
    norm_bound: Option<f64>,
    delta: Option<f64>,
    seed: u64,
) -> PyResult<Py<PyAny>> {
    let kind: BoundKind = name
        .parse()
        .map_err(kernel_bandits::Error::from)
        .or_raise()?;
    let mut config = match (dims, horizon) {
        (Some(d), Some(t)) => BoundConfig::paper_defaults(&kernel.inner, d, t),
        (None, None) => BoundConfig::new(),
        _ => {
            return Err(crate::errors::InvalidParameterError::new_err(
                "make_bound: give both dims and horizon (for the paper's defaults) or neither",
            ));
        }
    };
    let mut params = config.params;
    if let Some(s) = sigma {
        params = params.sigma(s);
    }
    if let Some(b) = norm_bound {
        params = params.norm_bound(b);
    }
    if let Some(d) = delta {
        params = params.delta(d);
    }
    config = config.params(params).seed(seed);
    let inner = PyAnyBound::Plain(kind.build(kernel.inner.clone(), &config).or_raise()?);
    let spec = format!("make_bound({:?}, {})", kind.name(), kernel.repr);
    PyBound { inner, spec }.into_py_object(py)
}

/// The names `make_bound` accepts, one per bound: ay, igp, amm, dmm, cmm, k-ucb, bkb, ek-ucb.
#[pyfunction]
pub fn bound_names() -> Vec<&'static str> {
    BoundKind::ALL.iter().map(|k| k.name()).collect()
}

/// Flynn & Reeb (2024) §7's parameters for a horizon of T rounds in d dimensions, as keyword
/// arguments of `Ay`, `Igp`, `Amm`, `Dmm` and `Cmm`: σ = 0.1, B = 10, δ = 0.01, c = 1 for RBF
/// and c = T^{−d/(2d+2ν)} for Matérn kernels, and the horizon (IGP's η = 2/T).
/// `Dmm(kernel, **paper_defaults(kernel, 3, 1000))`.
#[pyfunction]
pub fn paper_defaults<'py>(
    py: Python<'py>,
    kernel: PyRef<'_, Kernel>,
    dims: usize,
    horizon: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let p = BoundParams::paper_defaults(&kernel.inner, dims, horizon)
        .check()
        .or_raise()?;
    let d = PyDict::new(py);
    d.set_item("sigma", p.sigma())?;
    d.set_item("norm_bound", p.norm_bound())?;
    d.set_item("delta", p.delta())?;
    d.set_item("scale", p.scale())?;
    d.set_item("horizon", horizon)?;
    Ok(d)
}

// The signatures of `AdaptiveNorm` and `Fit.bound` spell the crate's default cap as 40.
const _: () = assert!(DEFAULT_MAX_LEVEL == 40);

/// `bound` (a DMM-UCB or CMM-UCB) wrapped so that its B doubles whenever the data refute it.
pub(crate) fn adaptive(bound: PlainBound, max_level: u32) -> kernel_bandits::Result<PyAnyBound> {
    Ok(PyAnyBound::Adaptive(RsAdaptive::with_max_level(
        bound, max_level,
    )?))
}

/// A DMM-UCB or CMM-UCB whose norm bound B is learnt by refutation (Flynn & Reeb 2024 §4):
/// built from a copy of `bound`, whose B is the first guess B₀ and whose δ serves every level,
/// it runs level k = 1, 2, … with B_k = 2^{k−1}B₀, and moves to the next level whenever, after
/// an observation, the confidence set is empty (some R̃_a² < 0: no f with ‖f‖_H ≤ B_k explains
/// the data within the noise radius). Every move is logged in `doublings`.
///
/// Guarantee: the event of Flynn & Reeb 2024 Eq. 8 (probability ≥ 1 − δ, Thm 4.1) concerns the
/// noise only; B enters Lemma 4.2 only through the constraint ‖f‖_H ≤ B. So on that one event no
/// level with B_k ≥ ‖f‖_H is ever refuted (if B₀ is below ‖f‖_H the final B is below 2‖f‖_H),
/// and at every round whose B_k ≥ ‖f‖_H the bounds contain f. Before that level is reached the
/// bounds are those of a too-small B and may be wrong; as the data can refute a B but never
/// confirm one, they never say when it has been reached: do not use the bounds for safety
/// decisions unless B_k ≥ ‖f‖_H is known otherwise. It also trusts σ: if σ is too small,
/// doubling B hides it (up to `max_level` levels, after which `exhausted` records the
/// observation count).
///
/// At every moment the bound equals a fresh `Dmm`/`Cmm` built with `norm_bound` (the current
/// level's) and `delta` on the same data. It is a `Bound` like the others: it works in `UcbAgent`,
/// copies and pickles. AMM-UCB and the other bounds raise `UnsupportedError` (their data never
/// refute B).
#[pyclass(extends = PyBound, module = "kernel_bandits")]
#[derive(Debug)]
pub struct AdaptiveNorm;

impl AdaptiveNorm {
    fn get<'a>(slf: &'a PyRef<'_, Self>) -> &'a RsAdaptive<PlainBound> {
        match &slf.as_super().inner {
            PyAnyBound::Adaptive(a) => a,
            PyAnyBound::Plain(_) => unreachable!("an AdaptiveNorm holds an adaptive bound"),
        }
    }
}

#[pymethods]
impl AdaptiveNorm {
    #[new]
    #[pyo3(signature = (bound, *, max_level = 40))]
    fn new(py: Python<'_>, bound: PyRef<'_, PyBound>, max_level: u32) -> PyResult<(Self, PyBound)> {
        let PyAnyBound::Plain(plain) = &bound.inner else {
            return Err(UnsupportedError::new_err(
                "AdaptiveNorm: the bound already has an adaptive norm bound",
            ));
        };
        let inner = py
            .detach(|| adaptive(plain.clone(), max_level))
            .or_raise()?;
        let spec = format!("AdaptiveNorm({}, max_level={max_level})", bound.spec);
        Ok((AdaptiveNorm, PyBound { inner, spec }))
    }

    /// B_k = 2^{k−1}B₀, the norm bound in force.
    #[getter]
    fn norm_bound(slf: PyRef<'_, Self>) -> f64 {
        Self::get(&slf).norm_bound()
    }

    /// δ, the failure probability: the same at every level (one event for all of them).
    #[getter]
    fn delta(slf: PyRef<'_, Self>) -> f64 {
        Self::get(&slf).delta()
    }

    /// The level k ≥ 1.
    #[getter]
    fn level(slf: PyRef<'_, Self>) -> u32 {
        Self::get(&slf).level()
    }

    /// The cap on the level.
    #[getter]
    fn max_level(slf: PyRef<'_, Self>) -> u32 {
        Self::get(&slf).max_level()
    }

    /// B₀, the first guess.
    #[getter]
    fn initial_norm(slf: PyRef<'_, Self>) -> f64 {
        Self::get(&slf).initial_norm()
    }

    /// The number of observations at which the set was first found empty at the cap, or `None`.
    #[getter]
    fn exhausted(slf: PyRef<'_, Self>) -> Option<usize> {
        Self::get(&slf).exhausted()
    }

    /// Every move to a higher level, in order (a list of `NormDoubling`).
    #[getter]
    fn doublings(slf: PyRef<'_, Self>) -> Vec<NormDoubling> {
        Self::get(&slf)
            .doublings()
            .iter()
            .map(|d| NormDoubling(*d))
            .collect()
    }
}

/// One move of an `AdaptiveNorm` bound to the next level, after the data refuted the previous
/// one: at `observations` observations, level `level` (≥ 2) with `new_norm` = 2·`old_norm`;
/// `refuted_by` is the evidence (a, R̃_a²) with R̃_a² < 0 at the old B (δ is the same at every
/// level).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone, Copy)]
pub struct NormDoubling(RsDoubling);

#[pymethods]
impl NormDoubling {
    /// Observations absorbed when the refutation was found.
    #[getter]
    fn observations(&self) -> usize {
        self.0.observations
    }
    /// The new level k.
    #[getter]
    fn level(&self) -> u32 {
        self.0.level
    }
    /// B_{k−1}, refuted.
    #[getter]
    fn old_norm(&self) -> f64 {
        self.0.old_norm
    }
    /// B_k = 2B_{k−1}.
    #[getter]
    fn new_norm(&self) -> f64 {
        self.0.new_norm
    }
    /// (a, R̃_a²): the regulariser and the negative radius that refuted the old level.
    #[getter]
    fn refuted_by(&self) -> (f64, f64) {
        self.0.refuted_by
    }
    fn __repr__(&self) -> String {
        format!(
            "NormDoubling(observations={}, level={}, old_norm={:?}, new_norm={:?}, \
             refuted_by={:?})",
            self.0.observations, self.0.level, self.0.old_norm, self.0.new_norm, self.0.refuted_by
        )
    }
}

/// Whether the data still agree with the assumptions σ, B, δ. For the mixture bounds,
/// `radius_sq` is the smallest R̃_a² among the regularisers checked (CMM-UCB: exactly, over
/// every a > 0; DMM-UCB: on its grid; AMM-UCB: at a0 only) and `regulariser` its a;
/// `empty_set` is true when R̃_a² < 0, i.e. no function with ‖f‖_H ≤ B explains the data
/// within the noise radius: the bound's values are then not confidence bounds. Bounds without a
/// mixture radius (AY, IGP, K-UCB, BKB, EK-UCB) report `None` and `empty_set = False`.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone, Copy)]
pub struct Diagnostics {
    /// Observations absorbed.
    #[pyo3(get)]
    observations: usize,
    /// The regulariser a of the smallest R̃_a², or `None`.
    #[pyo3(get)]
    regulariser: Option<f64>,
    /// The smallest R̃_a², or `None`.
    #[pyo3(get)]
    radius_sq: Option<f64>,
    /// Whether the confidence set is certainly empty.
    #[pyo3(get)]
    empty_set: bool,
}

impl From<kernel_bandits::bound::Diagnostics> for Diagnostics {
    fn from(d: kernel_bandits::bound::Diagnostics) -> Self {
        Self {
            observations: d.observations,
            regulariser: d.smallest_radius.map(|r| r.0),
            radius_sq: d.smallest_radius.map(|r| r.1),
            empty_set: d.empty_set(),
        }
    }
}

#[pymethods]
impl Diagnostics {
    fn __repr__(&self) -> String {
        format!(
            "Diagnostics(observations={}, regulariser={}, radius_sq={}, empty_set={})",
            self.observations,
            py_option(self.regulariser),
            py_option(self.radius_sq),
            if self.empty_set { "True" } else { "False" }
        )
    }
}

fn py_option(v: Option<f64>) -> String {
    v.map_or_else(|| "None".into(), |v| format!("{v:?}"))
}

/// CMM-UCB's certificate at one point (Flynn & Reeb 2024 Thm 4.5): `upper` = U_a(x) at
/// `regulariser` a (0 for the limit a → 0, `inf` for a → ∞) is an upper bound on f(x) over the
/// confidence set; `primal` is f(x) for a function in the set (a lower bound on the exact UCB),
/// so `gap = upper − primal` bounds how loose the UCB can be.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct Certificate(kernel_bandits::bound::Certificate);

#[pymethods]
impl Certificate {
    /// The a at which the UCB is attained.
    #[getter]
    fn regulariser(&self) -> f64 {
        self.0.regulariser
    }
    /// The UCB U_a(x).
    #[getter]
    fn upper(&self) -> f64 {
        self.0.upper
    }
    /// f(x) for a feasible f, or `None`.
    #[getter]
    fn primal(&self) -> Option<f64> {
        self.0.primal
    }
    /// ‖f_t − y_t‖ for that f.
    #[getter]
    fn residual_norm(&self) -> Option<f64> {
        self.0.residual_norm
    }
    /// ‖f‖_H for that f.
    #[getter]
    fn rkhs_norm(&self) -> Option<f64> {
        self.0.rkhs_norm
    }
    /// The radius R_t of the data constraint.
    #[getter]
    fn radius(&self) -> f64 {
        self.0.radius
    }
    /// B.
    #[getter]
    fn norm_bound(&self) -> f64 {
        self.0.norm_bound
    }
    /// `upper − primal`, or `None`.
    #[getter]
    fn gap(&self) -> Option<f64> {
        self.0.gap()
    }
    fn __repr__(&self) -> String {
        format!(
            "Certificate(regulariser={:?}, upper={:?}, primal={}, gap={})",
            self.0.regulariser,
            self.0.upper,
            py_option(self.0.primal),
            py_option(self.0.gap())
        )
    }
}

/// The mean and confidence bounds at one point with their gradients with respect to the point
/// (`Bound.gradient`): `mean`, `lcb`, `ucb` (floats) and `mean_gradient`, `lcb_gradient`,
/// `ucb_gradient` (float64 arrays of length d).
///
/// Where a bound is a minimum (UCB) or maximum (LCB) over several regularisers (DMM-UCB's grid),
/// the gradient is that of the active term (the lowest index among exact ties): by the envelope
/// theorem the gradient of the bound wherever that regulariser is the unique extremum, and one of
/// its one-sided derivatives where two tie.
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct BoundGradient(kernel_bandits::bound::BoundGradient);

#[pymethods]
impl BoundGradient {
    /// μ(x).
    #[getter]
    fn mean(&self) -> f64 {
        self.0.mean
    }
    /// L(x).
    #[getter]
    fn lcb(&self) -> f64 {
        self.0.lcb
    }
    /// U(x).
    #[getter]
    fn ucb(&self) -> f64 {
        self.0.ucb
    }
    /// ∇μ(x) (a new array).
    #[getter]
    fn mean_gradient<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.0.mean_gradient)
    }
    /// ∇L(x) (a new array).
    #[getter]
    fn lcb_gradient<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.0.lcb_gradient)
    }
    /// ∇U(x) (a new array).
    #[getter]
    fn ucb_gradient<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.0.ucb_gradient)
    }
    fn __repr__(&self) -> String {
        format!(
            "BoundGradient(mean={:?}, lcb={:?}, ucb={:?}, mean_gradient={:?}, lcb_gradient={:?}, \
             ucb_gradient={:?})",
            self.0.mean,
            self.0.lcb,
            self.0.ucb,
            self.0.mean_gradient,
            self.0.lcb_gradient,
            self.0.ucb_gradient
        )
    }
}

/// Adds the bound classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBound>()?;
    m.add_class::<Ay>()?;
    m.add_class::<Igp>()?;
    m.add_class::<Amm>()?;
    m.add_class::<Dmm>()?;
    m.add_class::<Cmm>()?;
    m.add_class::<KUcb>()?;
    m.add_class::<Bkb>()?;
    m.add_class::<EkUcb>()?;
    m.add_class::<AdaptiveNorm>()?;
    m.add_class::<NormDoubling>()?;
    m.add_class::<Diagnostics>()?;
    m.add_class::<Certificate>()?;
    m.add_class::<BoundGradient>()?;
    m.add_function(wrap_pyfunction!(make_bound, m)?)?;
    m.add_function(wrap_pyfunction!(bound_names, m)?)?;
    m.add_function(wrap_pyfunction!(paper_defaults, m)?)?;
    Ok(())
}
