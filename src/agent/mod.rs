//! Bandit agents: the kernel UCB agent (Flynn & Reeb 2024 Alg. 1) and a uniformly random baseline.
//!
//! Every agent implements [`BanditAgent`]: [`BanditAgent::select`] picks an arm from the
//! round's arm set (which may change every round), [`BanditAgent::update`] absorbs the reward.
//! In a contextual bandit (Zenati et al. 2022), [`BanditAgent::select_contextual`] and
//! [`BanditAgent::update_contextual`] do the same on joint [context ‖ action] points.

pub mod batch;
mod random;
mod refit;
mod ucb;

pub use batch::{BatchRule, Choice, ContinuousOptions, PENDING_TOLERANCE, Rule};
pub use random::RandomAgent;
pub use refit::{Observed, Recommendation, Refit, RefitMode, RefitOptions};
pub use ucb::{ArmSetPolicy, Misspecification, UcbAgent};

use crate::continuous::BoxDomain;
use crate::error::{Error, Result};
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

    /// The next point to evaluate in the box `domain` rather than in a list of arms. For
    /// [`UcbAgent`]: the maximiser of the UCB found by multi-start, box-constrained quasi-Newton
    /// search ([`ContinuousOptions`]), or, while a UCB point is pending, the point of the
    /// options' [`BatchRule`]: GP-BUCB's (the default) or GP-UCB-PE's exploration point (see
    /// [`batch`]). The point is not registered as pending (see
    /// [`BanditAgent::pending`]). Deterministic for given options, observations and pending
    /// points.
    ///
    /// What is certified depends on the rule ([`Choice::rule`]); in every case the point lies
    /// in the box, and "to rounding" means that a value at a point can differ in the last
    /// bits with the batch it is computed in:
    /// - a UCB point ([`Rule::Ucb`]) has a UCB (as
    ///   [`crate::bound::ConfidenceBound::evaluate`] computes it) at least that of every start
    ///   scored ([`UcbAgent::next_starts`]: space-filling points, the box's corners and face
    ///   centres) that is not pending, to rounding;
    /// - a GP-BUCB point ([`Rule::PendingUcb`]) is not pending and has a score
    ///   μ + (U − μ)·ρ_P/ρ (ρ_P the posterior standard deviation given the pending points, at
    ///   the regulariser of the mean) at least that of every start that is not pending, to
    ///   rounding. It lies between μ and U there; only in a box that is a single point is a
    ///   pending point repeated;
    /// - an exploration point ([`Rule::Exploration`]) is not
    ///   pending, lies in the relevant region {U + (U − μ) ≥ max L} with the threshold taken
    ///   over the starts, and has a variance given the pending points at least that of every
    ///   start that is admissible (in that region and not pending), to rounding. Its UCB is
    ///   *not* bounded below by the starts': it is the variance that is maximised, and its UCB
    ///   is typically below the best start's (the best UCB point is the one already pending).
    ///   Only in a box that is a single point, where every start is pending, is that point
    ///   repeated.
    ///
    /// The point is a local maximiser of the rule's objective refined from the best starts
    /// ([`Choice::converged`] says whether that refinement converged), not a certified global
    /// one; more starts make a miss less likely.
    ///
    /// # Errors
    /// A domain of another dimension than the observations ([`Error::DimensionMismatch`]);
    /// [`Error::Unsupported`] for agents, bounds or kernels without gradients (or, for
    /// exploration, without a pending variance); [`Error::Misspecified`] under
    /// [`Misspecification::Refuse`]; as [`crate::bound::ConfidenceBound::evaluate`]. The agent
    /// is unchanged on error.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::continuous::BoxDomain;
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().sigma(0.1).norm_bound(2.0).scale(1.0);
    /// let mut agent = UcbAgent::new(Amm::new(Rbf::new(0.2)?, params)?);
    /// let domain = BoxDomain::unit(2)?;
    /// for _ in 0..10 {
    ///     let choice = agent.select_in(&domain)?;
    ///     assert!(domain.contains(&choice.point));
    ///     let [a, b] = [choice.point[0], choice.point[1]];
    ///     agent.update(&choice.point, -(a - 0.3).powi(2) - (b - 0.6).powi(2))?;
    /// }
    /// assert_eq!(agent.bound().len(), 10);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    fn select_in(&mut self, domain: &BoxDomain) -> Result<Choice> {
        let _ = domain;
        Err(unsupported(self, "continuous domains"))
    }

    /// q arms to evaluate at once (see [`BanditAgent::select_batch`]); object safe.
    ///
    /// # Errors
    /// As [`BanditAgent::select_batch`].
    fn select_batch_from(&mut self, arms: &Points<'_>, q: usize) -> Result<Vec<usize>> {
        let _ = (arms, q);
        Err(unsupported(self, "batches"))
    }

    /// q arms to evaluate at once among `arms`, registered as pending. For [`UcbAgent`],
    /// GP-UCB-PE (see [`batch`]): one UCB arm (unless one is already pending; the best arm
    /// that is not) and arms of largest variance given the pending ones within the relevant
    /// region. The arms are
    /// distinct as long as that region holds q arms that are not pending; beyond that an arm
    /// of the region is repeated (a second noisy evaluation of a candidate maximiser) rather
    /// than one the bounds already rule out. [`BanditAgent::update`] resolves each, in any
    /// order; [`BanditAgent::withdraw`] forgets one.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for q = 0 or q > 65 536; arms of another dimension than
    /// the pending points; [`Error::Unsupported`] for q > 1 with a bound without a pending
    /// variance; as [`BanditAgent::select`]. The agent is unchanged on error (no arm of a
    /// failed batch stays pending).
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().sigma(0.1).norm_bound(2.0).scale(1.0);
    /// let mut agent = UcbAgent::new(Dmm::new(Rbf::new(0.2)?, params)?);
    /// let arms: Vec<[f64; 1]> = (0..50).map(|i| [i as f64 / 49.0]).collect();
    /// let batch = agent.select_batch(&arms, 4)?;
    /// assert_eq!(agent.pending_len(), 4);
    /// for &i in batch.iter().rev() {
    ///     agent.update(&arms[i], (6.0 * arms[i][0]).sin())?; // in any order
    /// }
    /// assert_eq!(agent.pending_len(), 0);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    fn select_batch<A: AsPoints + ?Sized>(&mut self, arms: &A, q: usize) -> Result<Vec<usize>>
    where
        Self: Sized,
    {
        self.select_batch_from(&arms.as_points()?, q)
    }

    /// q points to evaluate at once in the box `domain`, registered as pending: as
    /// [`BanditAgent::select_batch`] with [`BanditAgent::select_in`]'s search. The points are
    /// distinct from each other and from every pending point (in a box of more than one point).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for q = 0 or q > 65 536; as [`BanditAgent::select_in`]. The
    /// agent is unchanged on error.
    fn select_batch_in(&mut self, domain: &BoxDomain, q: usize) -> Result<Vec<Choice>> {
        let _ = (domain, q);
        Err(unsupported(self, "continuous domains"))
    }

    /// Registers `x` as a pending evaluation: handed to a worker, its reward still to come.
    /// Later selections take it into account (GP-UCB-PE, see [`batch`]);
    /// [`BanditAgent::update`] with the same point resolves it, in any order;
    /// [`BanditAgent::withdraw`] forgets it. "The same point" is bitwise equal or, failing
    /// that, the nearest pending point within the relative tolerance [`PENDING_TOLERANCE`]
    /// (10⁻⁵ in every coordinate), so that a point rounded on its way to a worker and back still
    /// resolves its pending evaluation. If `x` is the last UCB point the agent handed out,
    /// it counts as the pending UCB point. A point may be pending more than once.
    ///
    /// # Errors
    /// Empty, non-finite, or of another dimension than the observations or the other pending
    /// points; [`Error::Unsupported`] for agents without pending evaluations. The agent is
    /// unchanged on error.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().sigma(0.1).norm_bound(2.0).scale(1.0);
    /// let mut agent = UcbAgent::new(Amm::new(Rbf::new(0.2)?, params)?);
    /// let arms: Vec<[f64; 1]> = (0..20).map(|i| [i as f64 / 19.0]).collect();
    /// let first = agent.select(&arms)?; // worker 1 gets the UCB arm
    /// agent.pending(&arms[first])?;
    /// let second = agent.select(&arms)?; // worker 2: an exploration arm
    /// agent.pending(&arms[second])?;
    /// assert_ne!(first, second);
    /// agent.update(&arms[second], 0.3)?; // worker 2 finishes first
    /// agent.withdraw(&arms[first])?; // worker 1's experiment failed
    /// assert_eq!(agent.pending_len(), 0);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    fn pending(&mut self, x: &[f64]) -> Result<()> {
        let _ = x;
        Err(unsupported(self, "pending evaluations"))
    }

    /// Forgets the pending evaluation `x` (the first one bitwise equal, else the nearest within
    /// [`PENDING_TOLERANCE`], as [`BanditAgent::update`] resolves one), e.g. for a failed
    /// experiment: the agent is then bit for bit what it would be had `x` never been pending.
    ///
    /// # Errors
    /// [`Error::NotPending`] if `x` is not pending; the agent is unchanged.
    fn withdraw(&mut self, x: &[f64]) -> Result<()> {
        Err(Error::NotPending {
            what: format!("{x:?}"),
        })
    }

    /// Number of pending evaluations.
    fn pending_len(&self) -> usize {
        0
    }
}

fn unsupported<A: BanditAgent + ?Sized>(agent: &A, what: &str) -> Error {
    Error::Unsupported {
        what: format!("{what} with the {} agent", agent.name()),
    }
}

macro_rules! forward_agent {
    ($($wrapper:ty),*) => {$(
        impl<A: BanditAgent + ?Sized> BanditAgent for $wrapper {
            fn name(&self) -> String {
                (**self).name()
            }
            fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
                (**self).select_from(arms)
            }
            fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
                (**self).update(x, y)
            }
            fn select_in(&mut self, domain: &BoxDomain) -> Result<Choice> {
                (**self).select_in(domain)
            }
            fn select_batch_from(&mut self, arms: &Points<'_>, q: usize) -> Result<Vec<usize>> {
                (**self).select_batch_from(arms, q)
            }
            fn select_batch_in(&mut self, domain: &BoxDomain, q: usize) -> Result<Vec<Choice>> {
                (**self).select_batch_in(domain, q)
            }
            fn pending(&mut self, x: &[f64]) -> Result<()> {
                (**self).pending(x)
            }
            fn withdraw(&mut self, x: &[f64]) -> Result<()> {
                (**self).withdraw(x)
            }
            fn pending_len(&self) -> usize {
                (**self).pending_len()
            }
        }
    )*};
}
forward_agent!(Box<A>, &mut A);
