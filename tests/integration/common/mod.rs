//! Code shared by several test modules (`use crate::common;` in the module).

#[cfg(feature = "cli")]
pub mod cli;
pub mod dd;
pub mod dense_variance;
pub mod socp;
pub mod structured;
