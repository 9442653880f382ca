//! Posteriors of kernel ridge regression / Gaussian processes.
//!
//! [`ExactPosterior`] keeps the exact posterior of Flynn & Reeb 2024 Eqs. 2–3 for several
//! regularisers over one store of observations, each regulariser with a [`CholeskyFactor`]
//! grown one row per observation. [`SketchedPosterior`] is the Nyström (DTC) approximation of
//! papers 002 and 003 that BKB and EK-UCB share: its cost per query does not grow with t.

mod cholesky;
mod exact;
mod fixed;
pub mod health;
mod select;
mod sketched;

pub use cholesky::CholeskyFactor;
pub use exact::{ExactPosterior, PosteriorBatch};
pub use health::Health;
pub use sketched::{ANCHOR_TOLERANCE, NystromState, SketchedBatch, SketchedPosterior};
