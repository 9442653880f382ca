//! Safe exploration (`SafeAgent`, SafeOpt) and level-set estimation (`LevelSetAgent`) over a
//! finite candidate set, backed by the crate's `kernel_bandits::safe`.

use kernel_bandits::safe::{
    Level, LevelChoice as RsLevelChoice, LevelSetAgent as RsLevelSetAgent,
    SafeAgent as RsSafeAgent, SafeChoice as RsSafeChoice, SafeRole,
};
use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;

use crate::arrays::{matrix, rows, target, targets, to_numpy};
use crate::bounds::{PyAnyBound, PyBound};
use crate::errors::OrRaise;

/// The point `SafeAgent.next()` chose: `index` (into the candidates), `x`, `role`
/// (`"maximiser"`: a potential maximiser; `"expander"`: observing the constraints' optimistic
/// values there would make some unsafe candidate safe) and `width` (the largest u − ℓ over the
/// objective and the constraints).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct SafeChoice(RsSafeChoice);

#[pymethods]
impl SafeChoice {
    /// Index of the chosen candidate.
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }
    /// The chosen candidate, (d,).
    #[getter]
    fn x<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.x.clone())
    }
    /// `"maximiser"` or `"expander"`.
    #[getter]
    fn role(&self) -> &'static str {
        role(self.0.role)
    }
    /// Its width.
    #[getter]
    fn width(&self) -> f64 {
        self.0.width
    }
    fn __repr__(&self) -> String {
        format!(
            "SafeChoice(index={}, role={:?}, width={})",
            self.0.index,
            role(self.0.role),
            self.0.width
        )
    }
}

fn role(r: SafeRole) -> &'static str {
    match r {
        SafeRole::Maximiser => "maximiser",
        SafeRole::Expander => "expander",
        _ => "other",
    }
}

/// SafeOpt (Sui et al. 2015, Alg. 1) without a Lipschitz constant (Berkenkamp et al. 2016) over
/// a finite set of candidates, with any of the package's bounds: `objective` for f, one bound
/// per constraint g_i in `constraints` with g_i(x) ≥ `thresholds[i]` required, and `seed`
/// (indices of candidates known to be safe). The bounds are copied; the agent updates its own.
///
/// Guarantee: if the seed is safe and each constraint's bound has σ, B and the kernel fixed
/// before the data, then with probability ≥ 1 − Σδ_i every candidate of every safe set, and so
/// every point the agent chooses, is safe, at every round at once. `AdaptiveNorm` is refused for
/// the constraints (its bounds are not valid until its B is large enough, which the data never
/// confirm). When a bound's data refute its assumptions, `update` still absorbs the values and
/// `next()` / `recommend()` raise `MisspecifiedError`.
#[pyclass(module = "kernel_bandits")]
#[derive(Debug)]
pub struct SafeAgent(RsSafeAgent<PyAnyBound, PyAnyBound>);

#[pymethods]
impl SafeAgent {
    #[new]
    fn new(
        objective: PyRef<'_, PyBound>,
        constraints: Vec<PyRef<'_, PyBound>>,
        thresholds: &Bound<'_, PyAny>,
        candidates: &Bound<'_, PyAny>,
        seed: Vec<usize>,
    ) -> PyResult<Self> {
        let h = targets(thresholds, "thresholds")?;
        let h = h.as_slice()?.to_vec();
        let c = matrix(candidates, "candidates")?;
        let (data, dim) = rows(&c);
        let points = kernel_bandits::points::Points::from_row_major(data, dim).or_raise()?;
        let constraints: Vec<PyAnyBound> = constraints.iter().map(|b| b.inner.clone()).collect();
        Ok(Self(
            RsSafeAgent::new(objective.inner.clone(), constraints, &h, &points, &seed)
                .or_raise()?,
        ))
    }

    /// The next candidate to evaluate: the widest potential maximiser or expander.
    fn next(&self, py: Python<'_>) -> PyResult<SafeChoice> {
        let agent = &self.0;
        py.detach(|| agent.next()).map(SafeChoice).or_raise()
    }

    /// Absorbs the evaluation of candidate `index`: `y` the objective's value, `g` the
    /// constraints' values (a number for one constraint, or a sequence with one per
    /// constraint). Raises on bad input and leaves the agent unchanged.
    fn update(
        &mut self,
        py: Python<'_>,
        index: usize,
        y: &Bound<'_, PyAny>,
        g: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let y = target(y, "y")?;
        // A number for one constraint, or one value per constraint.
        let g = match g.extract::<f64>() {
            Ok(v) => vec![v],
            Err(_) => targets(g, "g")?.as_slice()?.to_vec(),
        };
        let agent = &mut self.0;
        py.detach(|| agent.update(index, y, &g)).or_raise()
    }

    /// The safe set: indices of the candidates certified safe, increasing.
    #[getter]
    fn safe_set<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        indices(py, self.0.safe_set())
    }

    /// The potential maximisers, increasing.
    fn maximisers<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        indices(py, self.0.maximisers())
    }

    /// The expanders, increasing (one exact expander test per safe candidate).
    fn expanders<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let agent = &self.0;
        let e = py.detach(|| agent.expanders()).or_raise()?;
        Ok(indices(py, e))
    }

    /// The best certified-safe candidate: a dict with `index`, `x`, `lcb` (ℓ^f there), `upper`
    /// (the largest u^f over the safe set) and `gap` = `upper` − `lcb`, which bounds
    /// max over the safe set of f − f(x) on the objective's event.
    fn recommend<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let r = self.0.recommend().or_raise()?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("index", r.index)?;
        d.set_item("x", to_numpy(py, r.x))?;
        d.set_item("lcb", r.lcb)?;
        d.set_item("upper", r.upper)?;
        d.set_item("gap", r.gap)?;
        Ok(d)
    }

    /// The objective's running interval ends (ℓ^f, u^f) at the candidates, two (n,) arrays.
    #[getter]
    fn objective_intervals<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>) {
        let r = self.0.objective_intervals();
        (
            to_numpy(py, r.lower().to_vec()),
            to_numpy(py, r.upper().to_vec()),
        )
    }

    /// The constraints' running interval ends (ℓ^g, u^g), two (m, n) arrays.
    #[getter]
    fn constraint_intervals<'py>(&self, py: Python<'py>) -> PyResult<Pair<'py, PyArray2<f64>>> {
        let r = self.0.constraint_intervals();
        let lower: Vec<Vec<f64>> = r.iter().map(|c| c.lower().to_vec()).collect();
        let upper: Vec<Vec<f64>> = r.iter().map(|c| c.upper().to_vec()).collect();
        Ok((
            PyArray2::from_vec2(py, &lower)?,
            PyArray2::from_vec2(py, &upper)?,
        ))
    }

    /// The widths: the largest u − ℓ over the objective and the constraints, (n,).
    #[getter]
    fn widths<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.widths())
    }

    /// Evaluations absorbed.
    #[getter]
    fn evaluations(&self) -> usize {
        self.0.evaluations()
    }

    /// Why nothing is certified any more (a bound's data refuted its assumptions), or None.
    #[getter]
    fn refuted(&self) -> Option<String> {
        self.0.refuted().map(str::to_owned)
    }

    fn __repr__(&self) -> String {
        format!(
            "SafeAgent(candidates={}, constraints={}, thresholds={:?}, safe={}, evaluations={})",
            self.0.candidates().len(),
            self.0.constraints().len(),
            self.0.thresholds(),
            self.0.safe_set().len(),
            self.0.evaluations()
        )
    }
}

/// The candidate `LevelSetAgent.next()` chose: `index`, `x` and its `ambiguity`
/// min(u − h, h − ℓ).
#[pyclass(frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct LevelChoice(RsLevelChoice);

#[pymethods]
impl LevelChoice {
    /// Index of the chosen candidate.
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }
    /// The chosen candidate, (d,).
    #[getter]
    fn x<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.x.clone())
    }
    /// Its ambiguity.
    #[getter]
    fn ambiguity(&self) -> f64 {
        self.0.ambiguity
    }
    fn __repr__(&self) -> String {
        format!(
            "LevelChoice(index={}, ambiguity={})",
            self.0.index, self.0.ambiguity
        )
    }
}

/// Level-set estimation, LSE (Gotovos et al. 2013): which candidates have f(x) above
/// `threshold` h and which below, to the accuracy ε = `accuracy`, with any of the package's
/// bounds (copied). A candidate is classified above once ℓ(x) ≥ h − ε, below once u(x) ≤ h + ε
/// (intervals intersected over rounds); `next()` returns the most ambiguous unclassified
/// candidate, or None when every candidate is classified.
///
/// Guarantee (σ, B and the kernel fixed before the data): with probability ≥ 1 − δ, at every
/// round at once, every candidate classified above has f ≥ h − ε and every one classified below
/// has f ≤ h + ε.
#[pyclass(module = "kernel_bandits")]
#[derive(Debug)]
pub struct LevelSetAgent(RsLevelSetAgent<PyAnyBound>);

#[pymethods]
impl LevelSetAgent {
    #[new]
    #[pyo3(signature = (bound, candidates, threshold, accuracy = 0.0))]
    fn new(
        bound: PyRef<'_, PyBound>,
        candidates: &Bound<'_, PyAny>,
        threshold: f64,
        accuracy: f64,
    ) -> PyResult<Self> {
        let c = matrix(candidates, "candidates")?;
        let (data, dim) = rows(&c);
        let points = kernel_bandits::points::Points::from_row_major(data, dim).or_raise()?;
        Ok(Self(
            RsLevelSetAgent::new(bound.inner.clone(), &points, threshold, accuracy).or_raise()?,
        ))
    }

    /// The most ambiguous unclassified candidate, or None when all are classified.
    fn next(&self) -> PyResult<Option<LevelChoice>> {
        Ok(self.0.next().or_raise()?.map(LevelChoice))
    }

    /// Absorbs the value `y` observed at candidate `index`.
    fn update(&mut self, py: Python<'_>, index: usize, y: &Bound<'_, PyAny>) -> PyResult<()> {
        let y = target(y, "y")?;
        let agent = &mut self.0;
        py.detach(|| agent.update(index, y)).or_raise()
    }

    /// Per candidate: 1 above, −1 below, 0 unclassified, (n,).
    #[getter]
    fn levels<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .0
            .levels()
            .iter()
            .map(|l| match l {
                Level::Above => 1,
                Level::Below => -1,
                Level::Unclassified => 0,
            })
            .collect();
        PyArray1::from_vec(py, v)
    }

    /// Indices classified above, increasing.
    #[getter]
    fn above<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        indices(py, self.0.indices(Level::Above))
    }

    /// Indices classified below, increasing.
    #[getter]
    fn below<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        indices(py, self.0.indices(Level::Below))
    }

    /// Indices not yet classified, increasing.
    #[getter]
    fn unclassified<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        indices(py, self.0.indices(Level::Unclassified))
    }

    /// The running interval ends (ℓ, u) at the candidates, two (n,) arrays.
    #[getter]
    fn intervals<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>) {
        let r = self.0.intervals();
        (
            to_numpy(py, r.lower().to_vec()),
            to_numpy(py, r.upper().to_vec()),
        )
    }

    /// Evaluations absorbed.
    #[getter]
    fn evaluations(&self) -> usize {
        self.0.evaluations()
    }

    /// Why nothing is certified any more, or None.
    #[getter]
    fn refuted(&self) -> Option<String> {
        self.0.refuted().map(str::to_owned)
    }

    fn __repr__(&self) -> String {
        format!(
            "LevelSetAgent(candidates={}, above={}, below={}, unclassified={}, evaluations={})",
            self.0.candidates().len(),
            self.0.indices(Level::Above).len(),
            self.0.indices(Level::Below).len(),
            self.0.indices(Level::Unclassified).len(),
            self.0.evaluations()
        )
    }
}

/// Two arrays: the lower and the upper ends.
type Pair<'py, T> = (Bound<'py, T>, Bound<'py, T>);

fn indices(py: Python<'_>, v: Vec<usize>) -> Bound<'_, PyArray1<i64>> {
    PyArray1::from_vec(py, v.into_iter().map(|j| j as i64).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SafeAgent>()?;
    m.add_class::<SafeChoice>()?;
    m.add_class::<LevelSetAgent>()?;
    m.add_class::<LevelChoice>()?;
    Ok(())
}
