//! Confidence intervals intersected over rounds at a fixed finite set of points, and the one
//! classification rule the safe set and the level sets share.

use crate::bound::CheckedBounds;
use crate::error::{Error, Result};

/// The running intervals C_t(x) = C_{t−1}(x) ∩ [LCB_t(x), UCB_t(x)] at each point of a fixed
/// finite set (Sui et al. 2015, §3; Gotovos et al. 2013, §3): `lower` only rises and `upper`
/// only falls. On the event on which the bound holds at every round at once, f(x) ∈ C_t(x)
/// for every x and t, so the intersection is as valid as one round's interval and never wider.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RunningIntervals {
    lower: Vec<f64>,
    upper: Vec<f64>,
}

impl RunningIntervals {
    /// The intervals of one round's values: [LCB(x), UCB(x)].
    ///
    /// # Errors
    /// [`Error::Refuted`] when the values refute the bound's assumptions (an empty confidence
    /// set, or LCB > UCB somewhere).
    pub(crate) fn from_checked(checked: &CheckedBounds) -> Result<Self> {
        refuse(checked)?;
        Ok(Self {
            lower: checked.bounds.lcb.clone(),
            upper: checked.bounds.ucb.clone(),
        })
    }

    /// These intervals intersected with one more round's values (`self` is unchanged).
    ///
    /// # Errors
    /// [`Error::Refuted`] as [`RunningIntervals::from_checked`], and when a running lower end
    /// exceeds the new upper end (or a running upper end falls below the new lower end), which
    /// is impossible on the event on which every round's bound holds.
    pub(crate) fn intersected(&self, checked: &CheckedBounds, what: &str) -> Result<Self> {
        refuse(checked)?;
        let b = &checked.bounds;
        let lower: Vec<f64> = self
            .lower
            .iter()
            .zip(&b.lcb)
            .map(|(a, b)| a.max(*b))
            .collect();
        let upper: Vec<f64> = self
            .upper
            .iter()
            .zip(&b.ucb)
            .map(|(a, b)| a.min(*b))
            .collect();
        if let Some(j) = (0..lower.len()).find(|&j| lower[j] > upper[j]) {
            return Err(Error::Refuted {
                what: format!(
                    "{what}: at candidate {j} the intervals of two rounds are disjoint (the \
                     largest lower bound so far {:.6e} exceeds the smallest upper bound so far \
                     {:.6e})",
                    lower[j], upper[j]
                ),
            });
        }
        Ok(Self { lower, upper })
    }

    /// The lower ends ℓ_t(x), one per point.
    pub fn lower(&self) -> &[f64] {
        &self.lower
    }

    /// The upper ends u_t(x), one per point.
    pub fn upper(&self) -> &[f64] {
        &self.upper
    }

    /// The widths u_t(x) − ℓ_t(x).
    pub fn widths(&self) -> Vec<f64> {
        self.lower
            .iter()
            .zip(&self.upper)
            .map(|(l, u)| u - l)
            .collect()
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.lower.len()
    }

    /// Whether there is no point.
    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }
}

/// Whether a value whose lower confidence end is `lower` is certainly at least `level`: the
/// test that puts a point in the safe set (ℓ^g(x) ≥ h) and in the level set above h − ε.
pub(crate) fn certainly_at_least(lower: f64, level: f64) -> bool {
    lower >= level
}

/// Whether a value whose upper confidence end is `upper` is certainly at most `level`: the test
/// that puts a point in the level set below h + ε.
pub(crate) fn certainly_at_most(upper: f64, level: f64) -> bool {
    upper <= level
}

fn refuse(checked: &CheckedBounds) -> Result<()> {
    match checked.describe() {
        Some(what) => Err(Error::Refuted { what }),
        None => Ok(()),
    }
}

/// The lowest index of the largest value among `indices` (None if `indices` is empty).
pub(crate) fn argmax_among(
    values: &[f64],
    indices: impl IntoIterator<Item = usize>,
) -> Option<usize> {
    let mut best: Option<usize> = None;
    for j in indices {
        match best {
            Some(b) if values[j] <= values[b] => {}
            _ => best = Some(j),
        }
    }
    best
}
