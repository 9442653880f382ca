//! Continuous domains: the box `BoxDomain` and the `Choice` an agent makes in one
//! (`select_in`, `select_batch` on a box).

use kernel_bandits::agent::{Choice as RsChoice, Rule};
use kernel_bandits::continuous::BoxDomain as RsBoxDomain;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::arrays::{elements, to_numpy, vector};
use crate::errors::{InvalidParameterError, OrRaise, bad_type};

/// An axis-aligned box [lo₁, hi₁] × … × [lo_d, hi_d] with finite corners and lo ≤ hi (a
/// coordinate with lo = hi is held fixed): the domain of `select_in` and of `select_batch` on a
/// box. Every method that takes a domain also accepts a pair `(lo, hi)` of array-likes.
#[pyclass(name = "BoxDomain", frozen, eq, module = "kernel_bandits")]
#[derive(Debug, Clone, PartialEq)]
pub struct PyBoxDomain {
    pub(crate) inner: RsBoxDomain,
}

#[pymethods]
impl PyBoxDomain {
    /// The box with lower corner `lo` and upper corner `hi` (1-D array-likes of d numbers).
    /// Raises `InvalidParameterError` for no coordinate, a NaN or infinite corner, or lo > hi in
    /// some coordinate, and `DimensionError` for corners of different lengths.
    #[new]
    fn new(lo: &Bound<'_, PyAny>, hi: &Bound<'_, PyAny>) -> PyResult<Self> {
        let la = vector(lo, "lo")?;
        let ha = vector(hi, "hi")?;
        let inner = RsBoxDomain::new(elements(&la), elements(&ha)).or_raise()?;
        Ok(Self { inner })
    }

    /// The unit cube [0, 1]^d.
    #[staticmethod]
    fn unit(d: usize) -> PyResult<Self> {
        Ok(Self {
            inner: RsBoxDomain::unit(d).or_raise()?,
        })
    }

    /// The number of coordinates d.
    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// The lower corner (a new float64 array).
    #[getter]
    fn lo<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.lo())
    }

    /// The upper corner (a new float64 array).
    #[getter]
    fn hi<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.hi())
    }

    /// Whether the point `x` (a 1-D array-like) has d coordinates, each within its bounds (NaN
    /// is not).
    fn contains(&self, x: &Bound<'_, PyAny>) -> PyResult<bool> {
        let xa = vector(x, "x")?;
        Ok(self.inner.contains(elements(&xa)))
    }

    fn __repr__(&self) -> String {
        format!(
            "BoxDomain({}, {})",
            py_list(self.inner.lo()),
            py_list(self.inner.hi())
        )
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Constructor<'py, (Vec<f64>, Vec<f64>)>> {
        Ok((
            py.get_type::<PyBoxDomain>().into_any(),
            (self.inner.lo().to_vec(), self.inner.hi().to_vec()),
        ))
    }
}

/// What `__reduce__` returns for pickle when the class's constructor restores the object: the
/// class and the constructor's arguments.
type Constructor<'py, A> = (Bound<'py, PyAny>, A);

/// The arguments of `Choice(point, ucb, rule, converged, iterations)`.
type ChoiceParts = (Vec<f64>, f64, &'static str, bool, usize);

/// `[a, b, …]` with Python's float spelling.
fn py_list(values: &[f64]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", items.join(", "))
}

/// Whether `obj` is a domain rather than arms: a `BoxDomain`, or (when `lists_too`) a tuple or
/// list of exactly two elements; `select_batch` only takes a tuple as a pair, so that a list of
/// two arms stays a list of arms.
pub fn is_domain(obj: &Bound<'_, PyAny>, lists_too: bool) -> bool {
    obj.is_instance_of::<PyBoxDomain>()
        || obj.cast::<PyTuple>().is_ok_and(|t| t.len() == 2)
        || (lists_too && obj.cast::<PyList>().is_ok_and(|l| l.len() == 2))
}

/// A `BoxDomain` argument, or a pair `(lo, hi)` of array-likes turned into one.
pub fn domain(obj: &Bound<'_, PyAny>) -> PyResult<RsBoxDomain> {
    if let Ok(d) = obj.cast::<PyBoxDomain>() {
        return Ok(d.get().inner.clone());
    }
    if is_domain(obj, true) {
        let lo = obj.get_item(0)?;
        let hi = obj.get_item(1)?;
        return Ok(PyBoxDomain::new(&lo, &hi)?.inner);
    }
    Err(bad_type(format!(
        "domain: expected a BoxDomain or a pair (lo, hi) of arrays, got {}",
        obj.get_type().name()?
    )))
}

/// A point chosen in a continuous domain: `point` (a 1-D float64 array inside the domain), its
/// upper confidence bound `ucb` (as `bounds` computes it; +∞ for `RandomAgent`), the `rule`
/// that chose it: `"ucb"` (the maximiser of the UCB), `"pending-ucb"` (while a UCB point is
/// pending, by default: the largest μ + (UCB − μ)·σ_P/σ, GP-BUCB of Desautels, Krause & Burdick
/// 2014), `"exploration"` (while a UCB point is pending, with `batch_rule="exploration"`: the
/// largest variance given the pending points within the relevant region, GP-UCB-PE of Contal et
/// al. 2013) or `"random"`; `converged`, whether the point comes from a refinement that converged (a local
/// maximiser of the rule's objective to the tolerance; false for a start kept unrefined, a
/// refinement that ran out of iterations, and `"random"`), and that refinement's `iterations`.
#[pyclass(name = "Choice", frozen, module = "kernel_bandits")]
#[derive(Debug, Clone)]
pub struct PyChoice(pub(crate) RsChoice);

fn rule_name(rule: Rule) -> &'static str {
    match rule {
        Rule::Ucb => "ucb",
        Rule::Exploration => "exploration",
        Rule::PendingUcb => "pending-ucb",
        Rule::Random => "random",
    }
}

#[pymethods]
impl PyChoice {
    /// A choice from its parts (what pickling uses); `rule` is "ucb", "pending-ucb",
    /// "exploration" or "random".
    #[new]
    #[pyo3(signature = (point, ucb, rule, converged = false, iterations = 0))]
    fn new(
        point: &Bound<'_, PyAny>,
        ucb: f64,
        rule: &str,
        converged: bool,
        iterations: usize,
    ) -> PyResult<Self> {
        let pa = vector(point, "point")?;
        let rule = match rule {
            "ucb" => Rule::Ucb,
            "exploration" => Rule::Exploration,
            "pending-ucb" => Rule::PendingUcb,
            "random" => Rule::Random,
            other => {
                return Err(InvalidParameterError::new_err(format!(
                    "rule = {other:?}: expected \"ucb\", \"pending-ucb\", \"exploration\" or \"random\""
                )));
            }
        };
        Ok(Self(RsChoice {
            point: elements(&pa).to_vec(),
            ucb,
            rule,
            converged,
            iterations,
        }))
    }

    /// The point (a new 1-D float64 array).
    #[getter]
    fn point<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.0.point.clone())
    }

    /// Its upper confidence bound.
    #[getter]
    fn ucb(&self) -> f64 {
        self.0.ucb
    }

    /// "ucb", "pending-ucb", "exploration" or "random".
    #[getter]
    fn rule(&self) -> &'static str {
        rule_name(self.0.rule)
    }

    /// Whether the point comes from a refinement that converged.
    #[getter]
    fn converged(&self) -> bool {
        self.0.converged
    }

    /// The quasi-Newton iterations of the refinement that gave the point (0 if none did).
    #[getter]
    fn iterations(&self) -> usize {
        self.0.iterations
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyChoice>().is_ok_and(|o| o.get().0 == self.0)
    }

    fn __repr__(&self) -> String {
        format!(
            "Choice(point={}, ucb={:?}, rule='{}', converged={}, iterations={})",
            py_list(&self.0.point),
            self.0.ucb,
            rule_name(self.0.rule),
            if self.0.converged { "True" } else { "False" },
            self.0.iterations
        )
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Constructor<'py, ChoiceParts>> {
        Ok((
            py.get_type::<PyChoice>().into_any(),
            (
                self.0.point.clone(),
                self.0.ucb,
                rule_name(self.0.rule),
                self.0.converged,
                self.0.iterations,
            ),
        ))
    }
}

/// Adds `BoxDomain` and `Choice` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBoxDomain>()?;
    m.add_class::<PyChoice>()?;
    Ok(())
}
