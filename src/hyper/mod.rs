//! When σ, B and the length-scale are not known (placeholder; the fitting lands from its branch).

mod noise;

pub use noise::{
    NoiseEstimate, NoiseVerdict, ReplicateEstimate, ResidualEstimate, estimate_noise,
    replicate_noise, residual_noise,
};
