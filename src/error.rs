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
    /// A set of points whose points differ in length.
    #[error("point {index} has {got} coordinates, the first point has {expected}")]
    RaggedPoints {
        /// The index of the first point whose length differs.
        index: usize,
        /// The first point's length.
        expected: usize,
        /// That point's length.
        got: usize,
    },
    /// Two inputs that go together have different lengths (e.g. the targets of a batch of
    /// observations and its points).
    #[error("{what}: expected {expected}, got {got}")]
    LengthMismatch {
        /// What was counted, and against what (e.g. "targets, one per point").
        what: &'static str,
        /// The length the other input implies.
        expected: usize,
        /// The length that was given.
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
        "kernel matrix is not positive semidefinite (posterior variance {pivot} at row {row}): the kernel is not a valid kernel, or the regulariser is too small for its conditioning"
    )]
    NotPositiveDefinite {
        /// The offending row of the factorisation (or query point).
        row: usize,
        /// The (negative or non-finite) posterior variance that was found.
        pivot: f64,
    },
    /// An agent built for a fixed arm set was offered a different one.
    #[error("the arm set differs from the one the agent was built with: {what}")]
    ArmSetChanged {
        /// What differs.
        what: String,
    },
    /// An agent that plays pre-planned arms was updated with another arm (or before
    /// `select`).
    #[error("update does not match the planned arm: {what}")]
    UnplannedArm {
        /// What was expected.
        what: String,
    },
    /// A point to withdraw is not among the agent's pending evaluations.
    #[error("not a pending evaluation: {what}")]
    NotPending {
        /// The point, as text.
        what: String,
    },
    /// The operation is not available for this bound or agent.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What is not supported.
        what: String,
    },
    /// An agent chose an arm that is not in the offered set.
    #[error("arm index {index} is out of range for {arms} arms")]
    ArmOutOfRange {
        /// The index the agent returned.
        index: usize,
        /// The number of arms offered.
        arms: usize,
    },
    /// The data contradict the bound's assumptions (σ-sub-Gaussian noise, ‖f‖_H ≤ B, or the
    /// δ-probability event happened): the martingale-mixture confidence set is empty
    /// ([`crate::bound::Diagnostics`]). Returned by `select` under
    /// [`crate::agent::Misspecification::Refuse`].
    #[error(
        "the data contradict the bound's assumptions (sigma, B or delta): R~_a^2 = {radius_sq} < 0 at a = {regulariser}, so the confidence set is empty"
    )]
    Misspecified {
        /// The regulariser a where R̃_a² is smallest.
        regulariser: f64,
        /// R̃_a² there (negative or NaN).
        radius_sq: f64,
    },
    /// The data refute the assumptions a decision rests on (σ, B or the kernel): an empty
    /// confidence set, LCB > UCB somewhere, or (intersecting over time) a running lower bound
    /// above an upper bound. Nothing is certified; see [`crate::decide`].
    #[error("the data refute the bound's assumptions, so nothing is certified: {what}")]
    Refuted {
        /// What shows it.
        what: String,
    },
    /// A snapshot could not be restored (feature `serde`, module `kernel_bandits::snapshot`).
    #[error("cannot restore the snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
}

/// Why a snapshot was refused ([`Error::Snapshot`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, ThisError)]
pub enum SnapshotError {
    /// Not a snapshot of this crate, or not decodable (truncated, wrong field types, …).
    #[error("malformed: {0}")]
    Malformed(String),
    /// Written by a version of the format this crate does not read.
    #[error("format version {found}, this crate reads version {supported}")]
    Version {
        /// The snapshot's version.
        found: u32,
        /// The version this crate reads and writes.
        supported: u32,
    },
    /// A snapshot of another type (e.g. of an AMM agent restored as a DMM agent).
    #[error("a snapshot of `{found}`, expected `{expected}`")]
    Kind {
        /// The kind stored in the snapshot.
        found: String,
        /// The kind that was asked for.
        expected: String,
    },
    /// The state does not match its checksum: the snapshot was altered or damaged.
    #[error("checksum mismatch: the snapshot was altered or damaged")]
    Checksum,
    /// The state decodes but violates an invariant the crate maintains.
    #[error("inconsistent state: {0}")]
    Inconsistent(String),
}

/// `Result` with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Returns `Ok(value)` if `value` is finite and at least `f64::MIN_POSITIVE` (a subnormal σ or
/// regulariser overflows every ratio it divides), otherwise an [`Error::InvalidParameter`].
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value >= f64::MIN_POSITIVE && value.is_finite() {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            expected: "a finite number > 0 (not subnormal)",
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

/// Checks that a batch of observations has one target per point.
///
/// # Errors
/// [`Error::LengthMismatch`] naming both counts.
pub(crate) fn one_target_per_point(points: usize, targets: usize) -> Result<()> {
    if targets == points {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what: "targets, one per point",
            expected: points,
            got: targets,
        })
    }
}
