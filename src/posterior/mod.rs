//! Posteriors of kernel ridge regression / Gaussian processes.
//!
//! [`ExactPosterior`] keeps the exact posterior of SPEC §0 for several regularisers over one
//! store of observations, each regulariser with a [`CholeskyFactor`] grown one row per
//! observation.

mod cholesky;
mod exact;
mod select;

pub use cholesky::CholeskyFactor;
pub use exact::{ExactPosterior, PosteriorBatch};
