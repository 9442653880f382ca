#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![warn(missing_debug_implementations)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod bound;
pub mod env;
pub mod error;
pub mod kernel;
mod linalg;
pub mod nonstationary;
pub mod parallel;
pub mod points;
pub mod posterior;
pub mod prelude;
mod rng;
#[cfg(feature = "serde")]
pub mod snapshot;

pub use error::{Error, Result, SnapshotError};
