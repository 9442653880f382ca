//! Posteriors of kernel ridge regression / Gaussian processes.
//!
//! [`ExactPosterior`] keeps the exact posterior of Flynn & Reeb 2024 Eqs. 2–3 for several
//! regularisers over one store of observations, each regulariser with a Cholesky factor grown
//! one row per observation. [`SketchedPosterior`] is the Nyström (DTC) approximation of
//! Calandriello et al. 2019 and Zenati et al. 2022 that BKB and EK-UCB share: its cost per
//! query does not grow with t.

mod cholesky;
mod diagnostics;
mod exact;
mod fixed;
pub mod health;
mod select;
mod sketched;
mod workspace;

pub(crate) use cholesky::CholeskyFactor;
pub use diagnostics::PosteriorDiagnostics;
pub use exact::{ExactPosterior, PosteriorBatch};
pub use health::Health;
pub use sketched::{ANCHOR_TOLERANCE, NystromState, SketchedBatch, SketchedPosterior};
