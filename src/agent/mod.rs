//! Bandit agents: the kernel UCB agent (paper 001 Alg. 1) and a uniformly random baseline.
//!
//! Every agent implements [`BanditAgent`]: [`BanditAgent::select`] picks an arm from the
//! round's arm set (which may change every round), [`BanditAgent::update`] absorbs the reward.

mod random;
mod ucb;

pub use random::RandomAgent;
pub use ucb::UcbAgent;

use crate::error::Result;
use crate::points::{AsPoints, Points};

/// A sequential decision maker over finite arm sets.
///
/// Object safe through [`BanditAgent::select_from`]; `Box<dyn BanditAgent>` implements the
/// trait too, so it also has the generic [`BanditAgent::select`].
pub trait BanditAgent {
    /// A short name such as `"ucb-dmm"`.
    fn name(&self) -> String;

    /// Index of the arm to play among `arms`.
    ///
    /// # Errors
    /// [`crate::Error::NoArms`] for an empty set; arms of the wrong dimension.
    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize>;

    /// Absorbs the reward `y` observed for the played arm `x`.
    ///
    /// # Errors
    /// Non-finite `x` or `y`, wrong dimension; the agent is unchanged on error.
    fn update(&mut self, x: &[f64], y: f64) -> Result<()>;

    /// Index of the arm to play among `arms`: `&[Vec<f64>]`, `&[[f64; D]]`, the rows of a
    /// `DMatrix<f64>`, or anything else that implements [`AsPoints`].
    ///
    /// # Errors
    /// As [`BanditAgent::select_from`], plus ragged or non-finite arms.
    fn select<A: AsPoints + ?Sized>(&mut self, arms: &A) -> Result<usize>
    where
        Self: Sized,
    {
        self.select_from(&arms.as_points()?)
    }
}

impl<A: BanditAgent + ?Sized> BanditAgent for Box<A> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        (**self).select_from(arms)
    }
    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        (**self).update(x, y)
    }
}

impl<A: BanditAgent + ?Sized> BanditAgent for &mut A {
    fn name(&self) -> String {
        (**self).name()
    }
    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        (**self).select_from(arms)
    }
    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        (**self).update(x, y)
    }
}
