//! numpy in and out. A C-contiguous float64 array is read in place; anything else that numpy
//! can turn into an array of real numbers (lists, float32, integers, strided views, Fortran
//! order) is converted once, as a whole, and other inputs are refused with a clear error.

use std::sync::atomic::{AtomicU64, Ordering};

use numpy::ndarray::Dimension;
use numpy::{
    PyArray, PyArray1, PyArrayMethods, PyReadonlyArray, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::errors::{bad_shape, bad_type};

/// How many inputs were converted (copied) rather than read in place; see `_conversions`.
static CONVERSIONS: AtomicU64 = AtomicU64::new(0);

/// The number of array arguments converted (copied) since the module was loaded. Inputs that are
/// already C-contiguous float64 arrays are read in place and do not count; tests use this to
/// check that no copy is made.
#[pyfunction]
pub fn _conversions() -> u64 {
    CONVERSIONS.load(Ordering::Relaxed)
}

/// `numpy.asarray(obj)`, refused unless its dtype holds real numbers (bool, integers, floats)
/// and it has `ndim` dimensions (when given), then `numpy.require(…, float64, "CA")`: one
/// C-contiguous, aligned float64 copy.
fn convert<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    ndim: Option<usize>,
    shape: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let numpy = py.import("numpy")?;
    let array = numpy.call_method1("asarray", (obj,)).map_err(|e| {
        bad_type(format!(
            "{what}: not convertible to an array of numbers ({e})"
        ))
    })?;
    let dtype = array.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "b" | "i" | "u" | "f") {
        return Err(bad_type(format!(
            "{what}: expected real numbers, got an array of dtype {}",
            dtype.str()?
        )));
    }
    if let Some(ndim) = ndim
        && array.getattr("ndim")?.extract::<usize>()? != ndim
    {
        return Err(bad_shape(format!(
            "{what}: expected {shape}, got shape {}",
            shape_of(&array)
        )));
    }
    CONVERSIONS.fetch_add(1, Ordering::Relaxed);
    numpy.call_method1("require", (array, numpy.getattr("float64")?, "CA"))
}

fn shape_of(obj: &Bound<'_, PyAny>) -> String {
    obj.getattr("shape")
        .and_then(|s| s.str().map(|s| s.to_string()))
        .unwrap_or_else(|_| "?".into())
}

/// An array of `D` dimensions, read in place when it is C-contiguous, aligned float64, else
/// converted once; `shape` names the expected shape in the error for another number of
/// dimensions.
fn array<'py, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    shape: &str,
) -> PyResult<PyReadonlyArray<'py, f64, D>> {
    let borrow = |array: &Bound<'py, PyArray<f64, D>>| {
        array
            .try_readonly()
            .map_err(|e| bad_type(format!("{what}: {e}")))
    };
    if let Ok(array) = obj.cast::<PyArray<f64, D>>()
        && array.is_c_contiguous()
        && (array.data() as usize).is_multiple_of(std::mem::align_of::<f64>())
    {
        return borrow(array);
    }
    let converted = convert(obj, what, D::NDIM, shape)?;
    match converted.cast::<PyArray<f64, D>>() {
        Ok(array) => borrow(array),
        Err(_) => Err(bad_shape(format!(
            "{what}: expected {shape}, got shape {}",
            shape_of(&converted)
        ))),
    }
}

/// A 2-D array of points (one per row), read in place when it is C-contiguous float64.
pub fn matrix<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<PyReadonlyArray2<'py, f64>> {
    array(obj, what, "a 2-D array (one point per row)")
}

/// A 1-D array (a point, or one target per point), read in place when it is C-contiguous
/// float64.
pub fn vector<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<PyReadonlyArray1<'py, f64>> {
    array(obj, what, "a 1-D array")
}

/// The row-major data and the number of columns of a matrix read by [`matrix`].
pub fn rows<'a>(array: &'a PyReadonlyArray2<'_, f64>) -> (&'a [f64], usize) {
    let columns = array.shape()[1];
    // `matrix` only returns C-contiguous arrays.
    let data = array.as_slice().expect("C-contiguous by construction");
    (data, columns)
}

/// The elements of a vector read by [`vector`].
pub fn elements<'a>(array: &'a PyReadonlyArray1<'_, f64>) -> &'a [f64] {
    array.as_slice().expect("C-contiguous by construction")
}

/// A new float64 array that takes over `values` without copying.
pub fn to_numpy<'py>(py: Python<'py>, values: Vec<f64>) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_vec(py, values)
}

/// The targets of n observations: a 1-D array of n numbers, or an (n, 1) column (what
/// scikit-learn users often hold, `y.reshape(-1, 1)`), read as the same n numbers; a
/// C-contiguous float64 column is read in place.
pub fn targets<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<PyReadonlyArray1<'py, f64>> {
    let py = obj.py();
    let array = if obj.is_instance_of::<PyUntypedArray>() {
        obj.clone()
    } else {
        // A list of lists: one conversion here (a ragged or non-numeric one is left to `vector`,
        // whose error names the problem).
        match py.import("numpy")?.call_method1("asarray", (obj,)) {
            Ok(array) => array,
            Err(_) => return vector(obj, what),
        }
    };
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    if let [_, 1] = shape[..] {
        return vector(&array.call_method1("reshape", (-1,))?, what);
    }
    vector(&array, what)
}

/// One target: a number, or an array (or sequence) holding exactly one number, e.g. the
/// `model(x)` of a vectorised objective, whose shape is (1,) or (1, 1).
pub fn target(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if !obj.is_instance_of::<PyUntypedArray>()
        && let Ok(value) = obj.extract::<f64>()
    {
        return Ok(value);
    }
    let array = convert(obj, what, None, "one number")?;
    let size: usize = array.getattr("size")?.extract()?;
    if size != 1 {
        return Err(bad_shape(format!(
            "{what}: expected one number (or an array holding one), got shape {}",
            shape_of(&array)
        )));
    }
    array.call_method0("item")?.extract::<f64>()
}
