//! Posteriors of kernel ridge regression / Gaussian processes.
//!
//! [`ExactPosterior`] keeps the exact posterior of Flynn & Reeb 2024 Eqs. 2–3 for several
//! regularisers over one store of observations, each regulariser with a Cholesky factor grown
//! one row per observation. [`SketchedPosterior`] is the Nyström (DTC) approximation of
//! Calandriello et al. 2019 and Zenati et al. 2022 that BKB and EK-UCB share: its cost per
//! query does not grow with t.
//!
//! Layout of the exact posterior: `exact.rs` holds the observation store and coordinates the
//! updates and queries; `cholesky.rs` the factor with its single-row and block appends and
//! the sliding-window downdate; `fixed.rs` the solved columns of a fixed arm set and their
//! rows; `workspace.rs` the reusable query workspace; `select.rs` the pruned argmax;
//! [`health`] the residual checks and the pivot policy; `diagnostics.rs` the read-only view
//! [`PosteriorDiagnostics`].

mod cholesky;
mod diagnostics;
mod exact;
mod fixed;
mod gradient;
pub mod health;
mod local;
mod select;
mod sketched;
mod workspace;

pub(crate) use cholesky::CholeskyFactor;
pub use diagnostics::PosteriorDiagnostics;
pub use exact::{ExactPosterior, PosteriorBatch};
pub use fixed::ArmSetInfo;
pub(crate) use gradient::PointSolve;
pub use health::Health;
pub use sketched::{ANCHOR_TOLERANCE, NystromState, SketchedBatch, SketchedPosterior};
pub(crate) use sketched::{BatchStart, SketchedGradient, SketchedPending};
