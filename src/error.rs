//! The crate's error type.

use thiserror::Error as ThisError;

/// Everything that can go wrong in `kernel_bandits`.
///
/// Every fallible call returns this type; a call that returns an error leaves the value it was
/// called on exactly as it was before the call.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, ThisError)]
pub enum Error {
    /// A parameter is outside its valid range (this includes NaN).
    #[error("invalid parameter `{name}` = {value}: expected {expected}")]
    InvalidParameter {
        /// The parameter's name, as in the builder that sets it.
        name: &'static str,
        /// The rejected value.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
    /// A parameter that has no default was not set.
    #[error("missing parameter `{name}`: {hint}")]
    MissingParameter {
        /// The parameter's name.
        name: &'static str,
        /// How to set it.
        hint: &'static str,
    },
    /// A point has a different number of coordinates than expected.
    #[error("dimension mismatch: expected {expected} coordinates, got {got}")]
    DimensionMismatch {
        /// The dimension fixed by the kernel or by earlier observations.
        expected: usize,
        /// The dimension that was given.
        got: usize,
    },
    /// A NaN or infinite value where a finite number is required.
    #[error("non-finite value in {what}")]
    NonFinite {
        /// Which input held it (e.g. "arm 3", "reward").
        what: String,
    },
    /// An empty arm set was offered.
    #[error("the arm set is empty")]
    NoArms,
    /// A point with zero coordinates was given.
    #[error("points must have at least one coordinate")]
    ZeroDimension,
    /// A matrix that must be positive definite was not, numerically.
    #[error(
        "matrix is not positive definite (pivot {pivot} at row {row}); the regulariser may be too small for the kernel's conditioning"
    )]
    NotPositiveDefinite {
        /// The offending row of the factorisation.
        row: usize,
        /// The (non-positive or non-finite) squared pivot that was found.
        pivot: f64,
    },
}

/// `Result` with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Returns `Ok(value)` if `value > 0` and finite, otherwise an [`Error::InvalidParameter`].
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            expected: "a finite number > 0",
        })
    }
}

/// Returns `Ok(value)` if `value >= 0` and finite, otherwise an [`Error::InvalidParameter`].
pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<f64> {
    if value >= 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            expected: "a finite number >= 0",
        })
    }
}
