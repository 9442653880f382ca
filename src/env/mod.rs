//! Bandit problems that know the true reward function (agents never see it): the synthetic
//! RKHS bandit of Flynn & Reeb (2024) §7, the contextual bandits of Zenati et al. (2022) §5
//! and the drifting rewards of Iwazaki & Takeno (2025) §6; the §7 function of Flynn & Reeb (2024)
//! on the continuous domain [0, 1]^d ([`ContinuousProblem`]).

mod contextual;
mod continuous;
mod drifting;
mod synthetic;

pub use contextual::{
    BumpParams, ContextualConfig, ContextualEnv, ContextualProblem, ContextualRound,
    ParseContextualEnvError,
};
pub use continuous::{ContinuousProblem, OptimumSearch};
pub use drifting::{DriftingProblem, Piece, unit_grid};
pub use synthetic::{RegretTrace, Round, SyntheticConfig, SyntheticProblem};

use crate::agent::BanditAgent;
use crate::error::{Error, Result};
use crate::points::Points;

/// One round of an [`Environment`]: the arms offered, the true value of each (which the agent
/// never sees) and the noise added to whichever arm is played.
pub trait BanditRound {
    /// The arms offered.
    fn arms(&self) -> Points<'_>;
    /// Arm `i`'s coordinates (what the agent is updated with).
    fn arm(&self, i: usize) -> &[f64];
    /// The true mean reward of each arm.
    fn values(&self) -> &[f64];
    /// The noise of this round.
    fn noise(&self) -> f64;
}

/// A bandit problem whose rounds are a pure function of the round number, so that several
/// agents can replay the same arms and noise; [`Environment::run`] plays an agent on it.
///
/// Implement [`Environment::round`] for a custom problem and the run loop comes for free.
pub trait Environment {
    /// The round type.
    type Round: BanditRound;

    /// Round `t` (0-based); the same for every call.
    fn round(&self, t: usize) -> Self::Round;

    /// Runs `agent` for `horizon` rounds and records its choices, rewards and regret against
    /// the best arm of each round.
    ///
    /// # Errors
    /// Any error of the agent, returned as soon as it happens; [`Error::ArmOutOfRange`] if
    /// the agent picks an index outside the arm set.
    fn run<A: BanditAgent + ?Sized>(&self, agent: &mut A, horizon: usize) -> Result<RegretTrace>
    where
        Self: Sized,
    {
        self.run_with(agent, horizon, |_, _| {})
    }

    /// [`Environment::run`], calling `on_round(t, &trace)` after each round (for progress,
    /// logging or timing).
    ///
    /// # Errors
    /// As [`Environment::run`].
    fn run_with<A: BanditAgent + ?Sized>(
        &self,
        agent: &mut A,
        horizon: usize,
        mut on_round: impl FnMut(usize, &RegretTrace),
    ) -> Result<RegretTrace>
    where
        Self: Sized,
    {
        let mut trace = RegretTrace::default();
        for t in 0..horizon {
            let round = self.round(t);
            let values = round.values();
            let i = agent.select_from(&round.arms())?;
            if i >= values.len() {
                return Err(Error::ArmOutOfRange {
                    index: i,
                    arms: values.len(),
                });
            }
            let reward = values[i] + round.noise();
            agent.update(round.arm(i), reward)?;
            let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            trace.chosen.push(i);
            trace.rewards.push(reward);
            trace.regret.push(best - values[i]);
            on_round(t, &trace);
        }
        Ok(trace)
    }
}
