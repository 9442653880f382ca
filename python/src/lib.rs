//! Python bindings of kernel-bandits (module `kernel_bandits._core`, re-exported by the
//! `kernel_bandits` package): kernels, the eight confidence bounds, the agents and the papers'
//! environments, with numpy arrays in and out.
//!
//! Every call that works on the data releases the GIL; C-contiguous float64 arrays are read in
//! place. Every error of the crate becomes a `KernelBanditsError` (a `ValueError`) subclass, and
//! a call that raises leaves its object as it was.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod agents;
mod arrays;
mod bounds;
mod continuous;
mod decide;
mod envs;
mod errors;
mod hyper;
mod kernels;
mod optimise;
mod safe;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// What `__reduce__` returns for pickle: the function that restores an object and its
/// arguments (the snapshot's bytes and the `repr` of the constructor call).
pub(crate) type Reduce<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, String));

/// The native module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    kernels::register(m)?;
    bounds::register(m)?;
    hyper::register(m)?;
    continuous::register(m)?;
    agents::register(m)?;
    envs::register(m)?;
    optimise::register(m)?;
    decide::register(m)?;
    safe::register(m)?;
    m.add_function(wrap_pyfunction!(arrays::_conversions, m)?)?;
    Ok(())
}
