//! The types most programs need: `use kernel_bandits::prelude::*;`.

pub use crate::agent::{
    ArmSetPolicy, BanditAgent, BatchRule, Choice, ContinuousOptions, Misspecification, RandomAgent,
    Rule, UcbAgent,
};
pub use crate::bound::{
    AdaptiveNorm, Amm, Ay, Bkb, BoundParams, Bounds, Cmm, ConfidenceBound, Dmm, EkUcb, Igp, KUcb,
    SketchParams,
};
pub use crate::continuous::BoxDomain;
pub use crate::env::{
    BanditRound, ContextualConfig, ContextualEnv, ContextualProblem, Environment, SyntheticConfig,
    SyntheticProblem,
};
pub use crate::error::Error;
pub use crate::hyper::{Fit, FitOptions, FittedKernel, KernelFamily, fit_hyperparameters};
pub use crate::kernel::{Kernel, KernelExt, Linear, Matern, Rbf};
pub use crate::points::{AsPoints, ContextualArms, Points};
pub use crate::posterior::ExactPosterior;
#[cfg(feature = "serde")]
pub use crate::snapshot::Snapshot;
