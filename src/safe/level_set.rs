//! Level-set estimation (Gotovos et al. 2013) over a finite candidate set.

use super::intervals::{RunningIntervals, argmax_among, certainly_at_least, certainly_at_most};
use crate::bound::ConfidenceBound;
use crate::error::{Error, Result};
use crate::points::{AsPoints, Points};

/// The class of a candidate in level-set estimation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Level {
    /// Classified above: ℓ_t(x) ≥ h − ε, so f(x) ≥ h − ε on the event E.
    Above,
    /// Classified below: u_t(x) ≤ h + ε, so f(x) ≤ h + ε on the event E.
    Below,
    /// Not yet classified.
    Unclassified,
}

/// The candidate [`LevelSetAgent::next`] chose.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LevelChoice {
    /// Its index among the candidates.
    pub index: usize,
    /// The point.
    pub x: Vec<f64>,
    /// Its ambiguity min(u_t(x) − h, h − ℓ_t(x)).
    pub ambiguity: f64,
}

/// Level-set estimation, LSE (Gotovos et al. 2013, Alg. 1), with any of the crate's bounds
/// over a finite candidate set D: which points have f(x) above a threshold h and which below,
/// to an accuracy ε.
///
/// After every observation the bound is evaluated at every candidate and intersected with its
/// earlier rounds, [ℓ_t(x), u_t(x)] = [ℓ_{t−1}(x), u_{t−1}(x)] ∩ [LCB_t(x), UCB_t(x)]. An
/// unclassified candidate is classified **above** when ℓ_t(x) ≥ h − ε, else **below** when
/// u_t(x) ≤ h + ε (the test that puts a point in [`super::SafeAgent`]'s safe set, with h − ε
/// for h); a class, once given, is kept (the intervals only shrink). The next point is the
/// unclassified candidate of largest ambiguity a_t(x) = min(u_t(x) − h, h − ℓ_t(x)) (the
/// lowest index among ties), and the run is over when none is left
/// ([`LevelSetAgent::next`] returns `None`). Gotovos et al. state the classes with strict
/// inequalities; the non-strict ones here give the same guarantee with ≤ in place of <.
///
/// **Guaranteed**, when the bound's σ, B and δ are fixed before the data (see
/// [`super::SafeAgent`] for the bounds that qualify): on the event of probability ≥ 1 − δ on
/// which the bound holds at every point and every round at once, **every point classified
/// above has f(x) ≥ h − ε and every point classified below has f(x) ≤ h + ε, at every round at
/// once** — so a run stopped at any round, chosen by looking at the data or not, keeps it.
/// When the data refute the bound's assumptions, [`LevelSetAgent::update`] absorbs the
/// observation and [`LevelSetAgent::next`] returns [`Error::Refuted`]; the classes given so
/// far are kept but no longer certified.
///
/// # Examples
/// ```
/// use kernel_bandits::safe::{Level, LevelSetAgent};
/// use kernel_bandits::prelude::*;
///
/// let kernel = Rbf::new(0.2)?;
/// let f = |x: f64| 0.9 * kernel.eval(&[0.3], &[x]) - 0.6 * kernel.eval(&[0.8], &[x]);
/// let params = BoundParams::new().sigma(0.01).norm_bound(1.5).delta(0.01);
/// let candidates: Vec<[f64; 1]> = (0..31).map(|i| [i as f64 / 30.0]).collect();
/// let mut agent = LevelSetAgent::new(Dmm::new(kernel, params)?, &candidates, 0.2, 0.05)?;
/// while let Some(choice) = agent.next()? {
///     agent.update(choice.index, f(choice.x[0]))?;
/// }
/// for (j, x) in candidates.iter().enumerate() {
///     match agent.levels()[j] {
///         Level::Above => assert!(f(x[0]) >= 0.2 - 0.05),
///         Level::Below => assert!(f(x[0]) <= 0.2 + 0.05),
///         Level::Unclassified => unreachable!(),
///     }
/// }
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LevelSetAgent<B> {
    bound: B,
    candidates: Vec<f64>,
    dim: usize,
    threshold: f64,
    accuracy: f64,
    intervals: RunningIntervals,
    levels: Vec<Level>,
    evaluations: usize,
    refuted: Option<String>,
}

impl<B: ConfidenceBound + Clone> LevelSetAgent<B> {
    /// Level-set estimation of {x : f(x) ≥ `threshold`} on `candidates` (copied) to the
    /// accuracy ε = `accuracy` ≥ 0, with `bound` (which may already hold observations).
    ///
    /// The candidates become the bound's fixed arm set ([`ConfidenceBound::fix_arms`], at most
    /// [`super::ARM_MEMORY_LIMIT`] bytes), replacing a set declared before, so that an update
    /// costs O(|D|·t) per regulariser for the exact bounds.
    ///
    /// # Errors
    /// [`Error::NoArms`]; ragged or non-finite candidates; [`Error::InvalidParameter`] for a
    /// non-finite threshold or an accuracy that is negative or not finite; the bound's errors
    /// for candidates of the wrong dimension; [`Error::Refuted`] if its data already refute its
    /// assumptions.
    pub fn new<A: AsPoints + ?Sized>(
        mut bound: B,
        candidates: &A,
        threshold: f64,
        accuracy: f64,
    ) -> Result<Self> {
        let points = candidates.as_points()?;
        if points.is_empty() {
            return Err(Error::NoArms);
        }
        if !threshold.is_finite() {
            return Err(Error::InvalidParameter {
                name: "threshold",
                value: threshold,
                expected: "a finite value",
            });
        }
        if !(accuracy >= 0.0 && accuracy.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "accuracy",
                value: accuracy,
                expected: "a finite ε ≥ 0",
            });
        }
        bound.fix_arms(&points, Some(super::ARM_MEMORY_LIMIT))?;
        let intervals = RunningIntervals::from_checked(&bound.evaluate_checked(&points)?)?;
        let mut rows = Vec::with_capacity(points.len() * points.dim());
        points.for_each(|_, x| rows.extend_from_slice(x));
        let mut agent = Self {
            bound,
            candidates: rows,
            dim: points.dim(),
            threshold,
            accuracy,
            intervals,
            levels: vec![Level::Unclassified; points.len()],
            evaluations: 0,
            refuted: None,
        };
        agent.classify();
        Ok(agent)
    }

    /// The candidates.
    pub fn candidates(&self) -> Points<'_> {
        Points::from_row_major(&self.candidates, self.dim).expect("checked in LevelSetAgent::new")
    }

    /// The bound.
    pub fn bound(&self) -> &B {
        &self.bound
    }

    /// The running intervals [ℓ_t, u_t] at the candidates.
    pub fn intervals(&self) -> &RunningIntervals {
        &self.intervals
    }

    /// The class of every candidate.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Candidates classified in `level`, in increasing order.
    pub fn indices(&self, level: Level) -> Vec<usize> {
        (0..self.levels.len())
            .filter(|&j| self.levels[j] == level)
            .collect()
    }

    /// Observations absorbed through [`LevelSetAgent::update`].
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// Why nothing is certified any more, if the data refuted the bound's assumptions.
    pub fn refuted(&self) -> Option<&str> {
        self.refuted.as_deref()
    }

    /// The unclassified candidate of largest ambiguity, or `None` when every candidate is
    /// classified.
    ///
    /// # Errors
    /// [`Error::Refuted`] once the data have refuted the bound's assumptions.
    pub fn next(&self) -> Result<Option<LevelChoice>> {
        if let Some(what) = &self.refuted {
            return Err(Error::Refuted { what: what.clone() });
        }
        let h = self.threshold;
        let ambiguity: Vec<f64> = self
            .intervals
            .lower()
            .iter()
            .zip(self.intervals.upper())
            .map(|(l, u)| (u - h).min(h - l))
            .collect();
        Ok(
            argmax_among(&ambiguity, self.indices(Level::Unclassified)).map(|j| LevelChoice {
                index: j,
                x: self.candidates().to_vec(j),
                ambiguity: ambiguity[j],
            }),
        )
    }

    /// Absorbs the value `y` observed at candidate `index`, intersects the intervals and
    /// classifies. If the data refute the bound's assumptions the observation is kept and the
    /// classes are frozen ([`LevelSetAgent::refuted`]).
    ///
    /// # Errors
    /// [`Error::ArmOutOfRange`], [`Error::NonFinite`]; the bound's numerical errors. The agent is
    /// unchanged on error.
    pub fn update(&mut self, index: usize, y: f64) -> Result<()> {
        if index >= self.levels.len() {
            return Err(Error::ArmOutOfRange {
                index,
                arms: self.levels.len(),
            });
        }
        if !y.is_finite() {
            return Err(Error::NonFinite {
                what: "the observed value".into(),
            });
        }
        let x = self.candidates().to_vec(index);
        // In place, truncated back on an error (exact: the bounds' factors and sums are
        // prefixes); a copy of a bound with a fixed arm set would cost more than the update.
        let before = self.bound.len();
        self.bound.observe(&x, y)?;
        let points = Points::from_row_major(&self.candidates, self.dim)?;
        let checked = match self.bound.evaluate_checked(&points) {
            Ok(checked) => checked,
            Err(e) => {
                self.bound.truncate(before);
                return Err(e);
            }
        };
        self.evaluations += 1;
        if self.refuted.is_some() {
            return Ok(());
        }
        match self.intervals.intersected(&checked, "the bound") {
            Ok(intervals) => {
                self.intervals = intervals;
                self.classify();
            }
            Err(e) => {
                self.refuted = Some(format!(
                    "{e} (evaluation {}); the classes are no longer certified",
                    self.evaluations
                ));
            }
        }
        Ok(())
    }

    fn classify(&mut self) {
        let (h, eps) = (self.threshold, self.accuracy);
        for j in 0..self.levels.len() {
            if self.levels[j] != Level::Unclassified {
                continue;
            }
            if certainly_at_least(self.intervals.lower()[j], h - eps) {
                self.levels[j] = Level::Above;
            } else if certainly_at_most(self.intervals.upper()[j], h + eps) {
                self.levels[j] = Level::Below;
            }
        }
    }
}
