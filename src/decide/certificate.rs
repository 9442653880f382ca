//! The recommendation x̂ = argmax LCB over a finite domain and its certified gap
//! max UCB − LCB(x̂) (see the [module documentation](super) for what it guarantees).

use crate::agent::Recommendation;
use crate::bound::{Bounds, CheckedBounds, ConfidenceBound};
use crate::error::{Error, Result};
use crate::points::{AsPoints, Points};

/// A recommendation and an upper bound on its simple regret over a finite domain D.
///
/// On the event E of the [module documentation](super) (probability ≥ 1 − δ, every round at
/// once): f(x*) − f(x̂) ≤ `gap` for every maximiser x* of f over D, where x̂ is
/// `recommendation.x`; and max_{x ∈ D} f(x) ≤ `upper`, f(x̂) ≥ `recommendation.lcb`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RegretCertificate {
    /// x̂: the point of D with the largest lower bound (the lowest index among ties); `index`
    /// is its position in D, `lcb` its lower bound (the running maximum of its lower bounds for
    /// a [`Certifier`]), `mean` and `ucb` the current round's values there.
    pub recommendation: Recommendation,
    /// An upper bound on max_{x ∈ D} f(x): the largest UCB over D (exact: D is finite), or for
    /// a [`Certifier`] the smallest such value over the rounds so far.
    pub upper: f64,
    /// The point of D where `upper` was attained, at the round it was attained.
    pub upper_index: usize,
    /// `upper − recommendation.lcb` ≥ f(x*) − f(x̂) on E; never negative (on E the largest UCB
    /// is at least every LCB, and a crossing is refused as [`Error::Refuted`]).
    pub gap: f64,
    /// Observations the bound had absorbed.
    pub observations: usize,
}

/// The certificate of `bound` over the finite domain `arms`: x̂ = the arm with the largest
/// LCB, `upper` = the largest UCB over the arms, `gap` = upper − LCB(x̂). One
/// [`ConfidenceBound::evaluate_checked`] over the arms, and O(n) more.
///
/// # Errors
/// [`Error::NoArms`] for an empty set, the bound's errors for arms of the wrong dimension or
/// non-finite arms, and [`Error::Refuted`] when the data refute the bound's assumptions (an
/// empty confidence set, or LCB > UCB at some arm): then nothing is certified.
///
/// # Examples
/// ```
/// use kernel_bandits::decide::certify;
/// use kernel_bandits::prelude::*;
/// let params = BoundParams::new().sigma(0.1).norm_bound(2.0).delta(0.01);
/// let mut cmm = Cmm::new(Rbf::new(0.2)?, params)?;
/// for (x, y) in [(0.1, 0.2), (0.5, 0.9), (0.5, 1.0), (0.9, 0.1)] {
///     cmm.observe(&[x], y)?;
/// }
/// let arms = [[0.1], [0.3], [0.5], [0.7], [0.9]];
/// let c = certify(&cmm, &arms)?;
/// assert_eq!(c.recommendation.index, 2); // the twice-observed arm
/// let b = cmm.bounds(&arms)?;
/// assert_eq!(c.upper, b.ucb.iter().cloned().fold(f64::MIN, f64::max));
/// assert_eq!(c.gap, c.upper - b.lcb[2]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn certify<B, A>(bound: &B, arms: &A) -> Result<RegretCertificate>
where
    B: ConfidenceBound + ?Sized,
    A: AsPoints + ?Sized,
{
    let arms = arms.as_points()?;
    if arms.is_empty() {
        return Err(Error::NoArms);
    }
    RegretCertificate::from_checked(&arms, &bound.evaluate_checked(&arms)?, bound.len())
}

impl RegretCertificate {
    /// The certificate of [`certify`] from values already computed:
    /// `checked` = [`ConfidenceBound::evaluate_checked`] at `arms` of a bound that had absorbed
    /// `observations` values (so that a caller who needs the bounds too evaluates them once).
    ///
    /// # Errors
    /// [`Error::NoArms`] for no arms, [`Error::LengthMismatch`] if `checked` does not hold one
    /// value per arm, [`Error::Refuted`] as [`certify`].
    pub fn from_checked(
        arms: &Points<'_>,
        checked: &CheckedBounds,
        observations: usize,
    ) -> Result<Self> {
        if arms.is_empty() {
            return Err(Error::NoArms);
        }
        if checked.bounds.len() != arms.len() {
            return Err(Error::LengthMismatch {
                what: "bounds per arm",
                expected: arms.len(),
                got: checked.bounds.len(),
            });
        }
        let bounds = refuse_refuted(checked)?;
        let best = argmax(&bounds.lcb);
        let top = argmax(&bounds.ucb);
        Ok(certificate(
            arms,
            bounds,
            best,
            bounds.lcb[best],
            (bounds.ucb[top], top),
            observations,
        ))
    }
}

/// The certificate of the bounds intersected over time on a fixed finite domain: after each
/// update of the bound, U*_t = min_{s ≤ t} max_x UCB_s(x) and L*_t(x) = max_{s ≤ t} LCB_s(x),
/// x̂_t = argmax L*_t, gap = U*_t − L*_t(x̂_t). Valid on the same event as one round's
/// certificate (see the [module documentation](super)) and never looser, as long as every
/// call passes the same bound, updated, with unchanged parameters.
///
/// # Examples
/// ```
/// use kernel_bandits::decide::{Certifier, certify};
/// use kernel_bandits::prelude::*;
/// let arms = [[0.0], [0.5], [1.0]];
/// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.01);
/// let mut bound = Dmm::new(Rbf::new(0.3)?, params)?;
/// let mut certifier = Certifier::new(&arms)?;
/// for (x, y) in [(0.5, 0.4), (0.0, -0.1), (0.5, 0.5)] {
///     bound.observe(&[x], y)?;
///     let running = certifier.update(&bound)?;
///     assert!(running.gap <= certify(&bound, &arms)?.gap);
/// }
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Certifier {
    /// The domain, row-major.
    arms: Vec<f64>,
    dim: usize,
    /// L*(x) for each arm (−∞ before the first update).
    lower: Vec<f64>,
    /// (U*, the arm where it was attained); (∞, 0) before the first update.
    upper: (f64, usize),
}

impl Certifier {
    /// A certifier over the finite domain `arms` (copied), with no round seen yet.
    ///
    /// # Errors
    /// [`Error::NoArms`] for an empty set; ragged or non-finite arms.
    pub fn new<A: AsPoints + ?Sized>(arms: &A) -> Result<Self> {
        let points = arms.as_points()?;
        if points.is_empty() {
            return Err(Error::NoArms);
        }
        let mut rows = Vec::with_capacity(points.len() * points.dim());
        points.for_each(|_, x| rows.extend_from_slice(x));
        Ok(Self {
            arms: rows,
            dim: points.dim(),
            lower: vec![f64::NEG_INFINITY; points.len()],
            upper: (f64::INFINITY, 0),
        })
    }

    /// The domain.
    pub fn arms(&self) -> Points<'_> {
        Points::from_row_major(&self.arms, self.dim).expect("checked in Certifier::new")
    }

    /// The running lower bounds L*(x), one per arm (−∞ before the first update).
    pub fn lower(&self) -> &[f64] {
        &self.lower
    }

    /// Intersects the running bounds with `bound`'s current ones and returns the certificate.
    ///
    /// # Errors
    /// As [`certify`]; also [`Error::Refuted`] when a running lower bound exceeds the current
    /// UCB at some arm (impossible on the event E). The certifier is unchanged on error.
    pub fn update<B: ConfidenceBound + ?Sized>(&mut self, bound: &B) -> Result<RegretCertificate> {
        let arms = Points::from_row_major(&self.arms, self.dim)?;
        let checked = bound.evaluate_checked(&arms)?;
        self.update_checked(&checked, bound.len())
    }

    /// [`Certifier::update`] from values already computed: `checked` =
    /// [`ConfidenceBound::evaluate_checked`] at [`Certifier::arms`] of the bound after it had
    /// absorbed `observations` values — so that a loop that also needs the bounds to choose
    /// its next arm (the largest UCB) evaluates them once per round. Valid under the same
    /// condition as [`Certifier::update`]: every call passes the values of the same bound,
    /// updated, with unchanged parameters.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `checked` does not hold one value per arm; otherwise as
    /// [`Certifier::update`]. The certifier is unchanged on error.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::decide::Certifier;
    /// use kernel_bandits::prelude::*;
    /// let arms = [[0.0], [0.5], [1.0]];
    /// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.01);
    /// let mut bound = Dmm::new(Rbf::new(0.3)?, params)?;
    /// let (mut once, mut twice) = (Certifier::new(&arms)?, Certifier::new(&arms)?);
    /// for (x, y) in [(0.5, 0.4), (0.0, -0.1)] {
    ///     bound.observe(&[x], y)?;
    ///     let checked = bound.evaluate_checked(&once.arms())?;
    ///     let next = checked.bounds.argmax_ucb()?; // the arm a UCB agent plays next
    ///     assert!(next < 3);
    ///     assert_eq!(once.update_checked(&checked, bound.len())?, twice.update(&bound)?);
    /// }
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn update_checked(
        &mut self,
        checked: &CheckedBounds,
        observations: usize,
    ) -> Result<RegretCertificate> {
        let arms = Points::from_row_major(&self.arms, self.dim)?;
        if checked.bounds.len() != arms.len() {
            return Err(Error::LengthMismatch {
                what: "bounds per arm",
                expected: arms.len(),
                got: checked.bounds.len(),
            });
        }
        let bounds = refuse_refuted(checked)?;
        if let Some(j) = (0..arms.len()).find(|&j| self.lower[j] > bounds.ucb[j]) {
            return Err(Error::Refuted {
                what: format!(
                    "at arm {j} the largest lower bound so far, {:.6e}, exceeds the current \
                     upper bound {:.6e} after {} observations",
                    self.lower[j], bounds.ucb[j], observations
                ),
            });
        }
        let top = argmax(&bounds.ucb);
        let upper = if bounds.ucb[top] < self.upper.0 {
            (bounds.ucb[top], top)
        } else {
            self.upper
        };
        // On E, U* ≥ max f ≥ f(x) ≥ L*(x) for every arm.
        if let Some(j) = (0..arms.len()).find(|&j| bounds.lcb[j].max(self.lower[j]) > upper.0) {
            return Err(Error::Refuted {
                what: format!(
                    "at arm {j} the lower bound {:.6e} exceeds the smallest upper bound on the \
                     maximum so far, {:.6e}, after {} observations",
                    bounds.lcb[j].max(self.lower[j]),
                    upper.0,
                    observations
                ),
            });
        }
        for (l, &now) in self.lower.iter_mut().zip(&bounds.lcb) {
            *l = l.max(now);
        }
        self.upper = upper;
        let best = argmax(&self.lower);
        Ok(certificate(
            &arms,
            bounds,
            best,
            self.lower[best],
            upper,
            observations,
        ))
    }
}

/// The values, or [`Error::Refuted`] if they refute the bound's assumptions.
pub(super) fn refuse_refuted(checked: &CheckedBounds) -> Result<&Bounds> {
    match checked.describe() {
        Some(what) => Err(Error::Refuted { what }),
        None => Ok(&checked.bounds),
    }
}

/// The lowest index of the largest value (the values are finite: [`checked`] refuses NaN).
fn argmax(values: &[f64]) -> usize {
    let mut best = 0;
    for (j, &v) in values.iter().enumerate().skip(1) {
        if v > values[best] {
            best = j;
        }
    }
    best
}

fn certificate(
    arms: &Points<'_>,
    bounds: &Bounds,
    best: usize,
    lcb: f64,
    (upper, upper_index): (f64, usize),
    observations: usize,
) -> RegretCertificate {
    RegretCertificate {
        recommendation: Recommendation {
            x: arms.to_vec(best),
            index: best,
            lcb,
            mean: bounds.mean[best],
            ucb: bounds.ucb[best],
        },
        upper,
        upper_index,
        gap: upper - lcb,
        observations,
    }
}
