//! Bandit agents: the kernel UCB agent (Flynn & Reeb 2024 Alg. 1) and a uniformly random baseline.
//!
//! Every agent implements [`BanditAgent`]: [`BanditAgent::select`] picks an arm from the
//! round's arm set (which may change every round), [`BanditAgent::update`] absorbs the reward.
//! In a contextual bandit (Zenati et al. 2022), [`BanditAgent::select_contextual`] and
//! [`BanditAgent::update_contextual`] do the same on joint [context ‖ action] points.

mod random;
mod ucb;

pub use random::RandomAgent;
pub use ucb::{ArmSetPolicy, Misspecification, UcbAgent};

use crate::error::Result;
use crate::points::{AsPoints, ContextualArms, Points, join};

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

    /// Index into `actions` of the action to play in `context` (the contextual
    /// setting): the agent scores the joint points [context ‖ aᵢ] of a [`ContextualArms`]
    /// with [`BanditAgent::select_from`].
    ///
    /// The agent's kernel therefore acts on joint vectors: a kernel on the whole vector, such
    /// as `Rbf` (Zenati et al. 2022 §5 uses a Gaussian kernel on (x, a)), or a product of kernels on the
    /// context and action coordinates, e.g.
    /// `Rbf::new(0.5)?.on(0..p)?.times(Matern::new(2.5, 0.2)?.on(p..p + q)?)` (see
    /// [`crate::kernel::KernelExt::on`] and [`crate::kernel::KernelExt::times`]).
    ///
    /// # Errors
    /// As [`ContextualArms::new`] (empty or non-finite context, empty, ragged or non-finite
    /// actions), then as [`BanditAgent::select_from`] (e.g. a joint dimension different from
    /// earlier observations). The agent is unchanged on error.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.05).scale(1.0);
    /// let mut agent = UcbAgent::new(Ay::new(Rbf::new(0.1)?, params)?);
    /// let actions = [[0.1], [0.5], [0.9]];
    /// let context = [0.3];
    /// let i = agent.select_contextual(&context, &actions)?;
    /// agent.update_contextual(&context, &actions[i], 0.4)?;
    /// assert_eq!(agent.bound().dim(), Some(2)); // one context and one action coordinate
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    fn select_contextual<A: AsPoints + ?Sized>(
        &mut self,
        context: &[f64],
        actions: &A,
    ) -> Result<usize>
    where
        Self: Sized,
    {
        let arms = ContextualArms::new(context, actions)?;
        self.select_from(&arms.points())
    }

    /// Absorbs the reward `y` observed for `action` in `context`: [`BanditAgent::update`] on
    /// the joint point [context ‖ action] (see [`join`]).
    ///
    /// # Errors
    /// As [`join`] (empty or non-finite context or action), then as [`BanditAgent::update`];
    /// the agent is unchanged on error.
    fn update_contextual(&mut self, context: &[f64], action: &[f64], y: f64) -> Result<()> {
        self.update(&join(context, action)?, y)
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
