//! Bandit problems that know the true reward function (agents never see it): the synthetic
//! RKHS bandit of paper 001 §7 and the contextual bandits of paper 003 §5.

mod contextual;
mod synthetic;

pub use contextual::{
    BumpParams, ContextualConfig, ContextualEnv, ContextualProblem, ContextualRound,
    ParseContextualEnvError,
};
pub use synthetic::{RegretTrace, Round, SyntheticConfig, SyntheticProblem};
