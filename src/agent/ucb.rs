//! The kernel UCB agent.

use super::BanditAgent;
use super::batch::{Choice, ContinuousOptions, PendingSet, Rule, exploration_arm};
use crate::bound::ConfidenceBound;
use crate::continuous::BoxDomain;
use crate::error::{Error, Result};
use crate::points::{AsPoints, Points};

/// How a [`UcbAgent`] uses the fixed-arm fast path of its bound
/// ([`ConfidenceBound::fix_arms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ArmSetPolicy {
    /// Detect a fixed arm set: when `select` is offered the same arms (same values, same
    /// order) twice in a row, declare them to the bound, as long as its per-arm state stays
    /// within `memory_limit` bytes; release them when other arms are offered. Detection costs
    /// one O(A·d) comparison and copy per round. The default, with a limit of
    /// [`ArmSetPolicy::DEFAULT_MEMORY_LIMIT`].
    Detect {
        /// The largest per-arm state kept, in bytes.
        memory_limit: usize,
    },
    /// The arm set declared by [`UcbAgent::with_arm_set`], kept whatever its size.
    Declared,
    /// Never keep per-arm state.
    Off,
}

impl ArmSetPolicy {
    /// 1 GiB: e.g. 1000 arms with DMM's five regularisers up to t ≈ 27 000.
    pub const DEFAULT_MEMORY_LIMIT: usize = 1 << 30;
}

impl Default for ArmSetPolicy {
    fn default() -> Self {
        Self::Detect {
            memory_limit: Self::DEFAULT_MEMORY_LIMIT,
        }
    }
}

/// What [`UcbAgent::select`](super::BanditAgent::select) does when the data contradict the
/// bound's assumptions, i.e. [`ConfidenceBound::diagnostics`] reports an empty confidence set
/// (see [`crate::bound::Diagnostics`] for which bounds can tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Misspecification {
    /// Select as usual (the UCB is still finite), and leave it to the caller to read
    /// `agent.bound().diagnostics()` after each update. No cost. The default.
    #[default]
    Report,
    /// Return [`Error::Misspecified`] from `select` (the agent is unchanged) while the set is
    /// empty, so that the caller must react: raise σ or B, or restart. Costs one
    /// [`ConfidenceBound::diagnostics`] per round (O(|grid|) for DMM, O(t) after the
    /// eigendecomposition CMM needs anyway).
    Refuse,
}

/// Kernel UCB (Flynn & Reeb 2024 Alg. 1, §5.2): plays the arm with the largest upper
/// confidence bound under `B`; ties go to the lowest index.
///
/// When the same arms are offered round after round, the agent keeps their solved kernel
/// columns in the bound (see [`ArmSetPolicy`]), which makes a round O(A·t) instead of
/// O(A·t²) for the exact bounds; the choices are those of the general path up to rounding in
/// the last bits.
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UcbAgent<B> {
    bound: B,
    policy: ArmSetPolicy,
    misspecification: Misspecification,
    /// The arms of the last `select` while detecting, or of the declared set; row-major.
    previous: Vec<f64>,
    previous_len: usize,
    /// Pending evaluations ([`BanditAgent::pending`]).
    pub(super) pending_set: PendingSet,
    /// How [`BanditAgent::select_in`] searches a box.
    pub(super) continuous: ContinuousOptions,
    /// Every observation absorbed by [`BanditAgent::update`], for [`UcbAgent::refit`] and
    /// [`UcbAgent::recommend`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub(super) observed: super::refit::Observed,
}

impl<B: ConfidenceBound> UcbAgent<B> {
    /// The UCB agent on `bound`, detecting fixed arm sets ([`ArmSetPolicy::default`]).
    pub fn new(bound: B) -> Self {
        Self {
            bound,
            policy: ArmSetPolicy::default(),
            misspecification: Misspecification::default(),
            previous: Vec::new(),
            previous_len: 0,
            pending_set: PendingSet::default(),
            continuous: ContinuousOptions::default(),
            observed: super::refit::Observed::default(),
        }
    }

    /// Declares the arm set every round will offer, so that the exact bounds keep per-arm
    /// state from the first round on, whatever its size (8·A bytes per observation and
    /// regulariser; [`ConfidenceBound::fix_arms`]), and the policy becomes
    /// [`ArmSetPolicy::Declared`]. Bounds without per-arm state (CMM-UCB, the sketched ones)
    /// ignore it and keep the current policy. Other arm sets still work, by the general path.
    ///
    /// # Errors
    /// [`Error::NoArms`], ragged, non-finite or wrongly sized arms.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().sigma(0.1).norm_bound(2.0);
    /// let arms: Vec<[f64; 2]> = (0..400).map(|i| [(i % 20) as f64 / 20.0, (i / 20) as f64 / 20.0]).collect();
    /// let mut agent = UcbAgent::new(Amm::new(Rbf::new(0.3)?, params)?).with_arm_set(&arms)?;
    /// for _ in 0..50 {
    ///     let i = agent.select(&arms)?; // O(A): the arms' posterior is kept up to date
    ///     let [a, b] = arms[i];
    ///     agent.update(&arms[i], (3.0 * a).sin() * b)?; // O(A·t)
    /// }
    /// assert_eq!(agent.bound().fixed_arms().map(|set| set.arms), Some(400));
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn with_arm_set<A: AsPoints + ?Sized>(mut self, arms: &A) -> Result<Self> {
        let arms = arms.as_points()?;
        if self.bound.fix_arms(&arms, None)? {
            self.policy = ArmSetPolicy::Declared;
            // Remembered, so that a later switch to `Detect` knows the set the bound keeps.
            self.remember(&arms);
        }
        Ok(self)
    }

    /// Sets how fixed arm sets are used (see [`ArmSetPolicy`]); `Off` also releases a set
    /// the bound keeps.
    pub fn with_policy(mut self, policy: ArmSetPolicy) -> Self {
        if policy == ArmSetPolicy::Off {
            self.bound.release_arms();
        }
        self.policy = policy;
        // The arms remembered are those of the set the bound keeps, if any (declared or
        // detected): detection goes on from them.
        if self.bound.fixed_arms().is_none() {
            self.previous = Vec::new();
            self.previous_len = 0;
        }
        self
    }

    /// Sets what `select` does when the data contradict the bound's assumptions (see
    /// [`Misspecification`]).
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// // B = 0.01 is far too small for rewards of 1: CMM (which checks every a) sees that the
    /// // confidence set is empty after the first update.
    /// let params = BoundParams::new().sigma(0.01).norm_bound(0.01);
    /// let mut agent = UcbAgent::new(Cmm::new(Rbf::new(0.3)?, params)?)
    ///     .with_misspecification(Misspecification::Refuse);
    /// let arms = [[0.0], [0.5], [1.0]];
    /// for _ in 0..3 {
    ///     match agent.select(&arms) {
    ///         Ok(i) => agent.update(&arms[i], 1.0)?,
    ///         Err(Error::Misspecified { .. }) => break,
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert!(agent.bound().diagnostics().empty_set());
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn with_misspecification(mut self, policy: Misspecification) -> Self {
        self.misspecification = policy;
        self
    }

    /// How fixed arm sets are used.
    pub fn policy(&self) -> ArmSetPolicy {
        self.policy
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

    /// Under [`Misspecification::Refuse`], the error for an empty confidence set.
    pub(super) fn check_specified(&self) -> Result<()> {
        if self.misspecification == Misspecification::Refuse {
            let diagnostics = self.bound.diagnostics();
            if diagnostics.empty_set() {
                let (regulariser, radius_sq) = diagnostics.smallest_radius.unwrap_or_default();
                return Err(Error::Misspecified {
                    regulariser,
                    radius_sq,
                });
            }
        }
        Ok(())
    }

    /// The arms remembered by the fixed-arm detection, to restore after a failed batch.
    pub(super) fn remembered(&self) -> (Vec<f64>, usize) {
        (self.previous.clone(), self.previous_len)
    }

    /// Restores what [`UcbAgent::remembered`] returned.
    pub(super) fn restore_remembered(&mut self, (previous, len): (Vec<f64>, usize)) {
        self.previous = previous;
        self.previous_len = len;
    }

    /// Whether `arms` are the arms remembered: those of the last `select`, which are the set
    /// the bound keeps whenever it keeps one.
    fn same_as_previous(&self, arms: &Points<'_>) -> bool {
        arms.equals_row_major(&self.previous, self.previous_len)
    }

    /// Remembers `arms`.
    fn remember(&mut self, arms: &Points<'_>) {
        self.previous.clear();
        arms.for_each(|_, x| self.previous.extend_from_slice(x));
        self.previous_len = arms.len();
    }

    /// `select` under [`ArmSetPolicy::Detect`]. A rejected call changes nothing: the arms are
    /// remembered only once they have been scored.
    fn select_detecting(&mut self, arms: &Points<'_>, memory_limit: usize) -> Result<usize> {
        let repeated = self.same_as_previous(arms);
        if repeated && self.bound.fixed_arms().is_some() {
            // The bound keeps these arms (it was given them when they repeated): fast path.
            return self.bound.argmax_ucb(arms);
        }
        if repeated {
            // Offered twice in a row: declare them (one O(A·t²) evaluation), then score them
            // on the fast path.
            let fixed = self.bound.fix_arms(arms, Some(memory_limit))?;
            let best = self.bound.argmax_ucb(arms);
            if best.is_err() && fixed {
                self.bound.release_arms();
            }
            return best;
        }
        let best = self.bound.argmax_ucb(arms)?;
        self.bound.release_arms();
        self.remember(arms);
        Ok(best)
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
        self.check_specified()?;
        if let Some(expected) = self.pending_set.dim()
            && expected != arms.dim()
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: arms.dim(),
            });
        }
        if self.pending_set.explore_next() {
            return exploration_arm(&self.bound, arms, &self.pending_set);
        }
        let mut best = match self.policy {
            ArmSetPolicy::Detect { memory_limit } => self.select_detecting(arms, memory_limit),
            ArmSetPolicy::Declared | ArmSetPolicy::Off => self.bound.argmax_ucb(arms),
        }?;
        let mut scratch = vec![0.0; arms.dim()];
        if self.pending_set.contains(arms.point(best, &mut scratch)) {
            // The UCB arm is already running (as an exploration arm): the best arm that is not,
            // if there is one.
            let ucb = self.bound.evaluate(arms)?.ucb;
            let mut order: Vec<usize> = (0..arms.len()).collect();
            order.sort_by(|&a, &b| ucb[b].total_cmp(&ucb[a]).then(a.cmp(&b)));
            let mut other = vec![0.0; arms.dim()];
            if let Some(j) = order
                .into_iter()
                .find(|&j| !self.pending_set.contains(arms.point(j, &mut other)))
            {
                best = j;
            }
        }
        self.pending_set
            .handed_out(arms.point(best, &mut scratch), Rule::Ucb);
        Ok(best)
    }

    /// Absorbs the reward at `x` as given; if `x` is pending (bitwise, else within the relative
    /// [`super::PENDING_TOLERANCE`] of the nearest pending point), that pending point is
    /// resolved.
    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        if let Some(expected) = self.pending_set.dim()
            && self.bound.dim().is_none()
            && expected != x.len()
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: x.len(),
            });
        }
        self.bound.observe(x, y)?;
        self.observed.push(x, y);
        self.pending_set.remove(x);
        Ok(())
    }

    fn select_in(&mut self, domain: &BoxDomain) -> Result<Choice> {
        self.select_in_inner(domain)
    }

    fn select_batch_from(&mut self, arms: &Points<'_>, q: usize) -> Result<Vec<usize>> {
        self.select_batch_inner(arms, q)
    }

    fn select_batch_in(&mut self, domain: &BoxDomain, q: usize) -> Result<Vec<Choice>> {
        self.select_batch_in_inner(domain, q)
    }

    fn pending(&mut self, x: &[f64]) -> Result<()> {
        self.pending_inner(x)
    }

    fn withdraw(&mut self, x: &[f64]) -> Result<()> {
        self.withdraw_inner(x)
    }

    fn pending_len(&self) -> usize {
        self.pending_set.len()
    }
}

#[cfg(feature = "serde")]
impl<B: ConfidenceBound + crate::snapshot::Snapshot> crate::snapshot::Snapshot for UcbAgent<B> {
    fn kind() -> String {
        format!("ucb-agent<{}>", B::kind())
    }

    fn restore(&mut self) -> Result<()> {
        self.bound.restore()?;
        let dim = self.bound.dim().unwrap_or(0);
        crate::snapshot::ensure(
            self.previous.is_empty()
                || (self.previous_len > 0 && self.previous.len().is_multiple_of(self.previous_len)),
            || "remembered arms of ragged dimension".into(),
        )?;
        crate::snapshot::ensure(
            dim == 0 || self.previous.is_empty() || self.previous.len() == self.previous_len * dim,
            || "remembered arms of another dimension".into(),
        )?;
        crate::snapshot::ensure_finite(&self.previous, "remembered arms")?;
        self.pending_set.check()?;
        self.observed.check()?;
        crate::snapshot::ensure(
            self.pending_set.dim().is_none_or(|d| dim == 0 || d == dim),
            || "pending points of another dimension".into(),
        )?;
        self.continuous
            .check()
            .map_err(crate::snapshot::rebuild_error("continuous options"))
    }
}
