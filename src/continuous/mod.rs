//! Continuous domains: a box [lo, hi]^d, space-filling starts in it, and the multi-start,
//! box-constrained quasi-Newton maximisation that [`crate::agent::BanditAgent::select_in`] and the
//! continuous environments are built on.

mod domain;
pub(crate) mod maximise;

pub use domain::BoxDomain;
pub use maximise::{MAX_MEMORY, Maximum, RefineOptions, ValueGradient, maximise, refine};
