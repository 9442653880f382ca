//! One exception hierarchy for every error of the crate: `KernelBanditsError(ValueError)` and a
//! subclass per kind of error, each carrying the Rust error's message.

use kernel_bandits::Error;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    kernel_bandits,
    KernelBanditsError,
    PyValueError,
    "Base class of every error raised by kernel_bandits (a ValueError). A call that raises leaves \
     the object it was called on exactly as it was."
);
create_exception!(
    kernel_bandits,
    InvalidParameterError,
    KernelBanditsError,
    "A parameter is missing, out of range, NaN or infinite."
);
create_exception!(
    kernel_bandits,
    DimensionError,
    KernelBanditsError,
    "An array has the wrong shape: points of the wrong dimension, ragged or zero-dimensional \
     points, or a number of targets that differs from the number of points."
);
create_exception!(
    kernel_bandits,
    NonFiniteError,
    KernelBanditsError,
    "A point or an observation contains NaN or ±∞."
);
create_exception!(
    kernel_bandits,
    NoArmsError,
    KernelBanditsError,
    "An empty set of arms or points was given where at least one is needed."
);
create_exception!(
    kernel_bandits,
    ArmSetError,
    KernelBanditsError,
    "The arm set does not match what the agent expects (a fixed arm set changed, an arm index \
     out of range, or an arm R-PERP did not plan)."
);
create_exception!(
    kernel_bandits,
    NumericalError,
    KernelBanditsError,
    "A kernel matrix that must be positive definite is not, to working precision."
);
create_exception!(
    kernel_bandits,
    MisspecifiedError,
    KernelBanditsError,
    "The data contradict the assumed σ, B or δ (the confidence set is empty) and the agent was \
     told to refuse to continue."
);
create_exception!(
    kernel_bandits,
    UnsupportedError,
    KernelBanditsError,
    "The operation is not supported by this bound or agent (e.g. an unknown bound name)."
);
create_exception!(
    kernel_bandits,
    NotPendingError,
    KernelBanditsError,
    "`withdraw(x)` was given a point that is not among the agent's pending evaluations (the \
     match is bitwise, or within a relative 1e-5 in every coordinate: pass the very array that \
     was handed out or registered with `pending`)."
);
create_exception!(
    kernel_bandits,
    SnapshotError,
    KernelBanditsError,
    "A snapshot (pickle) could not be read: corrupted, truncated, of another type or version."
);

/// The Python exception for a crate error, with the crate's message.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::InvalidParameter { .. } | Error::MissingParameter { .. } => {
            InvalidParameterError::new_err(message)
        }
        Error::DimensionMismatch { .. }
        | Error::RaggedPoints { .. }
        | Error::LengthMismatch { .. }
        | Error::ZeroDimension => DimensionError::new_err(message),
        Error::NonFinite { .. } => NonFiniteError::new_err(message),
        Error::NoArms => NoArmsError::new_err(message),
        Error::ArmSetChanged { .. } | Error::UnplannedArm { .. } | Error::ArmOutOfRange { .. } => {
            ArmSetError::new_err(message)
        }
        Error::NotPositiveDefinite { .. } => NumericalError::new_err(message),
        Error::Misspecified { .. } => MisspecifiedError::new_err(message),
        Error::Unsupported { .. } => UnsupportedError::new_err(message),
        Error::Snapshot(_) => SnapshotError::new_err(message),
        Error::NotPending { .. } => NotPendingError::new_err(message),
        _ => KernelBanditsError::new_err(message),
    }
}

/// `Result<T, kernel_bandits::Error>` → `PyResult<T>`.
pub trait OrRaise<T> {
    /// The value, or the Python exception for the error.
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for kernel_bandits::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// A `DimensionError` about an array's shape that the crate never sees (e.g. 1-D arms).
pub fn bad_shape(message: impl Into<String>) -> PyErr {
    DimensionError::new_err(message.into())
}

/// A `KernelBanditsError` about an argument that is not an array of real numbers.
pub fn bad_type(message: impl Into<String>) -> PyErr {
    KernelBanditsError::new_err(message.into())
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KernelBanditsError", py.get_type::<KernelBanditsError>())?;
    m.add(
        "InvalidParameterError",
        py.get_type::<InvalidParameterError>(),
    )?;
    m.add("DimensionError", py.get_type::<DimensionError>())?;
    m.add("NonFiniteError", py.get_type::<NonFiniteError>())?;
    m.add("NoArmsError", py.get_type::<NoArmsError>())?;
    m.add("ArmSetError", py.get_type::<ArmSetError>())?;
    m.add("NumericalError", py.get_type::<NumericalError>())?;
    m.add("MisspecifiedError", py.get_type::<MisspecifiedError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("SnapshotError", py.get_type::<SnapshotError>())?;
    m.add("NotPendingError", py.get_type::<NotPendingError>())?;
    Ok(())
}
