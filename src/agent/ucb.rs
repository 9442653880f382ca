//! The kernel UCB agent.

use super::BanditAgent;
use crate::bound::ConfidenceBound;
use crate::error::{Error, Result};
use crate::points::Points;

/// Kernel UCB (paper 001 Alg. 1, SPEC §3): plays the arm with the largest upper confidence
/// bound under `B`; ties go to the lowest index.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let kernel = Matern::new(2.5, 0.5)?;
/// let params = BoundParams::new().sigma(0.1).norm_bound(10.0).delta(0.01).scale(1.0);
/// let mut agent = UcbAgent::new(Dmm::new(kernel, params)?);
/// let arms = vec![vec![0.1, 0.2], vec![0.8, 0.4]];
/// let i = agent.select(&arms)?;
/// agent.update(&arms[i], 0.7)?;
/// assert_eq!(agent.bound().len(), 1);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct UcbAgent<B> {
    bound: B,
}

impl<B: ConfidenceBound> UcbAgent<B> {
    /// The UCB agent on `bound`.
    pub fn new(bound: B) -> Self {
        Self { bound }
    }

    /// The confidence bound.
    pub fn bound(&self) -> &B {
        &self.bound
    }

    /// The confidence bound, mutably (e.g. to [`ConfidenceBound::truncate`] it).
    pub fn bound_mut(&mut self) -> &mut B {
        &mut self.bound
    }

    /// Consumes the agent, returning its bound.
    pub fn into_bound(self) -> B {
        self.bound
    }
}

impl<B: ConfidenceBound> BanditAgent for UcbAgent<B> {
    fn name(&self) -> String {
        format!("ucb-{}", self.bound.name())
    }

    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        if arms.is_empty() {
            return Err(Error::NoArms);
        }
        self.bound.argmax_ucb(arms)
    }

    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.bound.observe(x, y)
    }
}
