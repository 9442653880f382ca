//! SW-GP-UCB: a UCB agent on the last W observations.

use crate::agent::{BanditAgent, UcbAgent};
use crate::bound::ConfidenceBound;
use crate::error::{Error, Result};
use crate::points::Points;

/// SW-GP-UCB (Zhou & Shroff 2021, the baseline of Iwazaki & Takeno 2025 §6): the UCB agent over any exact
/// [`ConfidenceBound`] `B`, kept on the last W observations. Once the window is full, each
/// update removes the oldest point by an O(W²) Cholesky downdate
/// ([`ConfidenceBound::remove_oldest`]), not a refactorisation.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// use kernel_bandits::nonstationary::SlidingWindow;
/// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).scale(1.0);
/// let mut agent = SlidingWindow::new(Ay::new(Rbf::new(0.5)?, params)?, 3)?;
/// let arms = vec![vec![0.1], vec![0.9]];
/// for _ in 0..5 {
///     let i = agent.select(&arms)?;
///     agent.update(&arms[i], 1.0)?;
/// }
/// assert_eq!(agent.agent().bound().len(), 3);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SlidingWindow<B> {
    agent: UcbAgent<B>,
    window: usize,
}

impl<B: ConfidenceBound> SlidingWindow<B> {
    /// The UCB agent on `bound`, keeping the last `window` observations.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a window of 0; [`Error::Unsupported`] if the bound
    /// cannot forget its oldest observation (the sketched bounds; checked when `bound` is
    /// empty).
    pub fn new(mut bound: B, window: usize) -> Result<Self> {
        if window == 0 {
            return Err(Error::InvalidParameter {
                name: "window",
                value: 0.0,
                expected: "an integer ≥ 1",
            });
        }
        if bound.is_empty() {
            // Probe support without changing anything: removing from an empty bound is a no-op
            // for the bounds that support it.
            bound.remove_oldest()?;
        }
        Ok(Self {
            agent: UcbAgent::new(bound),
            window,
        })
    }

    /// The wrapped UCB agent.
    pub fn agent(&self) -> &UcbAgent<B> {
        &self.agent
    }

    /// The window W.
    pub fn window(&self) -> usize {
        self.window
    }
}

impl<B: ConfidenceBound> BanditAgent for SlidingWindow<B> {
    fn name(&self) -> String {
        format!("sw-{}", self.agent.name())
    }

    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        self.agent.select_from(arms)
    }

    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.agent.update(x, y)?;
        while self.agent.bound().len() > self.window {
            self.agent.bound_mut().remove_oldest()?;
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl<B: ConfidenceBound + crate::snapshot::Snapshot> crate::snapshot::Snapshot
    for SlidingWindow<B>
{
    fn kind() -> String {
        format!("sliding-window<{}>", B::kind())
    }

    fn restore(&mut self) -> Result<()> {
        self.agent.restore()?;
        crate::snapshot::ensure(
            self.window > 0 && self.agent.bound().len() <= self.window,
            || {
                format!(
                    "{} observations in a window of {}",
                    self.agent.bound().len(),
                    self.window
                )
            },
        )
    }
}
