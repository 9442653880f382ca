//! Synthetic bandit problems that know the true reward function (agents never see it).

mod synthetic;

pub use synthetic::{RegretTrace, Round, SyntheticConfig, SyntheticProblem};
