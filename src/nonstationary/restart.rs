//! R-GP-UCB: a stationary UCB agent restarted every H rounds.

use crate::agent::{BanditAgent, UcbAgent};
use crate::bound::ConfidenceBound;
use crate::error::{Error, Result};
use crate::points::Points;

/// R-GP-UCB (Zhou & Shroff 2021, the baseline of Iwazaki & Takeno 2025 §6): the UCB agent over any
/// [`ConfidenceBound`] `B`, whose bound forgets all data (`truncate(0)`) after every H
/// updates, so that stale observations from before a change stop steering it.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// use kernel_bandits::nonstationary::Restarting;
/// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).scale(1.0);
/// let mut agent = Restarting::new(Ay::new(Rbf::new(0.5)?, params)?, 3)?;
/// let arms = vec![vec![0.1], vec![0.9]];
/// for _ in 0..4 {
///     let i = agent.select(&arms)?;
///     agent.update(&arms[i], 1.0)?;
/// }
/// assert_eq!(agent.agent().bound().len(), 1); // restarted after 3 updates
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Restarting<B> {
    agent: UcbAgent<B>,
    interval: usize,
    since_restart: usize,
}

impl<B: ConfidenceBound> Restarting<B> {
    /// The UCB agent on `bound`, restarted every `interval` updates.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an interval of 0.
    pub fn new(bound: B, interval: usize) -> Result<Self> {
        if interval == 0 {
            return Err(Error::InvalidParameter {
                name: "interval",
                value: 0.0,
                expected: "an integer ≥ 1",
            });
        }
        Ok(Self {
            agent: UcbAgent::new(bound),
            interval,
            since_restart: 0,
        })
    }

    /// The wrapped UCB agent.
    pub fn agent(&self) -> &UcbAgent<B> {
        &self.agent
    }

    /// The restart interval H.
    pub fn interval(&self) -> usize {
        self.interval
    }
}

impl<B: ConfidenceBound> BanditAgent for Restarting<B> {
    fn name(&self) -> String {
        format!("r-{}", self.agent.name())
    }

    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        self.agent.select_from(arms)
    }

    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.agent.update(x, y)?;
        self.since_restart += 1;
        if self.since_restart == self.interval {
            self.agent.bound_mut().truncate(0);
            self.since_restart = 0;
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl<B: ConfidenceBound + crate::snapshot::Snapshot> crate::snapshot::Snapshot for Restarting<B> {
    fn kind() -> String {
        format!("restarting<{}>", B::kind())
    }

    fn restore(&mut self) -> Result<()> {
        self.agent.restore()?;
        crate::snapshot::ensure(
            self.interval > 0 && self.since_restart < self.interval,
            || {
                format!(
                    "{} updates into a restart interval of {}",
                    self.since_restart, self.interval
                )
            },
        )
    }
}
