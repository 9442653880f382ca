//! Stopping rules on the certified gap, and the loop that plays until one holds.

use super::certificate::{Certifier, RegretCertificate};
use crate::agent::{BanditAgent, UcbAgent};
use crate::bound::ConfidenceBound;
use crate::error::{Error, Result};
use crate::points::AsPoints;

/// When [`UcbAgent::run_until`] stops: a budget of evaluations, and optionally one or more
/// conditions on the certified gap G (any one suffices). Every condition is checked before
/// each evaluation, so a run may stop before its first one.
///
/// On the event E of the [module documentation](super) (probability ≥ 1 − δ), stopping on
/// G ≤ ε leaves a recommendation x̂ with f(x*) − f(x̂) ≤ ε, whichever round the rule stops at;
/// the budget alone certifies nothing (the run's certificate says what it reached).
///
/// # Examples
/// ```
/// use kernel_bandits::decide::StoppingRule;
/// // Stop when the recommendation is certified within 0.1 of the best arm, or within 5 % of
/// // the observed range of values, or after 500 evaluations.
/// let rule = StoppingRule::budget(500).gap(0.1).relative_gap(0.05);
/// assert_eq!(rule.evaluations(), 500);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StoppingRule {
    budget: usize,
    gap: Option<f64>,
    relative_gap: Option<f64>,
    noise_level: Option<f64>,
}

/// Which condition of a [`StoppingRule`] stopped a run (the first that holds, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Stop {
    /// G ≤ ε ([`StoppingRule::gap`]).
    Gap,
    /// G ≤ ε·(max y − min y) over the run's values ([`StoppingRule::relative_gap`]).
    RelativeGap,
    /// G ≤ σ ([`StoppingRule::noise_level`]).
    NoiseLevel,
    /// The budget of evaluations is spent.
    Budget,
}

impl StoppingRule {
    /// At most `evaluations` evaluations of the objective (0: certify the current state only).
    pub fn budget(evaluations: usize) -> Self {
        Self {
            budget: evaluations,
            gap: None,
            relative_gap: None,
            noise_level: None,
        }
    }

    /// Also stop when the certified gap is at most `epsilon` (in f's units): then, on E, the
    /// recommendation is ε-optimal over the arms. Checked by [`UcbAgent::run_until`]: ε must be
    /// positive and finite.
    pub fn gap(mut self, epsilon: f64) -> Self {
        self.gap = Some(epsilon);
        self
    }

    /// Also stop when the certified gap is at most `fraction` × (max y − min y), the range of
    /// the values observed during the run (needs two distinct values): an ε without units.
    /// The range is data-dependent, so the ε it yields is too; the certificate still holds for
    /// the gap reached, which the run reports. `fraction` must be positive and finite.
    pub fn relative_gap(mut self, fraction: f64) -> Self {
        self.relative_gap = Some(fraction);
        self
    }

    /// Also stop when the certified gap is at most `sigma`, the noise level: one more
    /// evaluation could not tell the recommendation from the optimum by more than one noise
    /// standard deviation — the criterion of Makarova et al. (2022, §3), who compare their
    /// (heuristic) regret bound with the noise of the objective. `sigma` must be positive and
    /// finite.
    pub fn noise_level(mut self, sigma: f64) -> Self {
        self.noise_level = Some(sigma);
        self
    }

    /// The budget of evaluations.
    pub fn evaluations(&self) -> usize {
        self.budget
    }

    fn check(&self) -> Result<()> {
        for (name, value) in [
            ("gap", self.gap),
            ("relative_gap", self.relative_gap),
            ("noise_level", self.noise_level),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0)
            {
                return Err(Error::InvalidParameter {
                    name,
                    value: v,
                    expected: "a positive finite number",
                });
            }
        }
        Ok(())
    }

    /// The first condition that holds for `gap` after `evaluations` with values in `range`.
    fn holds(&self, gap: f64, range: Option<f64>, evaluations: usize) -> Option<Stop> {
        if self.gap.is_some_and(|e| gap <= e) {
            Some(Stop::Gap)
        } else if let (Some(fraction), Some(range)) = (self.relative_gap, range)
            && range > 0.0
            && gap <= fraction * range
        {
            Some(Stop::RelativeGap)
        } else if self.noise_level.is_some_and(|s| gap <= s) {
            Some(Stop::NoiseLevel)
        } else if evaluations >= self.budget {
            Some(Stop::Budget)
        } else {
            None
        }
    }
}

/// One evaluation of a [`UcbAgent::run_until`] run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Step {
    /// The arm played (an index into the arms).
    pub arm: usize,
    /// The objective's value there.
    pub y: f64,
    /// The certificate after absorbing it.
    pub certificate: RegretCertificate,
}

/// What [`UcbAgent::run_until`] returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CertifiedRun {
    /// The final certificate (of the bounds intersected over the run's rounds).
    pub certificate: RegretCertificate,
    /// The condition that stopped the run.
    pub stopped_by: Stop,
    /// The certificate before the first evaluation (from the agent's state at the start).
    pub initial: RegretCertificate,
    /// Every evaluation, in order, with the certificate after it.
    pub history: Vec<Step>,
}

impl CertifiedRun {
    /// The number of evaluations made.
    pub fn evaluations(&self) -> usize {
        self.history.len()
    }
}

impl<B: ConfidenceBound> UcbAgent<B> {
    /// Plays the arm of largest UCB among `arms`, evaluates `objective` there and absorbs the
    /// value, until `rule` holds; returns the certified recommendation (the arm with the
    /// largest lower bound, intersected over the run's rounds: [`Certifier`]), the condition
    /// that stopped and the history.
    ///
    /// What it guarantees is in the [module documentation](super): on the event of probability
    /// ≥ 1 − δ on which the bound holds at every round, f(x*) − f(x̂) ≤ `certificate.gap` for
    /// the best arm x*, at whichever round the rule stops — for a bound with a guarantee and
    /// parameters fixed before the data (not `AdaptiveNorm`, not a heuristic β).
    ///
    /// # Errors
    /// Before any evaluation (the agent unchanged): [`Error::InvalidParameter`] for a rule's ε,
    /// fraction or σ that is not positive and finite; [`Error::NoArms`], ragged or non-finite
    /// arms, arms of the wrong dimension. During the run: [`Error::NonFinite`] for a
    /// non-finite objective value (naming the evaluation and the arm; the value is not
    /// absorbed), [`Error::Refuted`] when the data refute the bound's assumptions; the agent
    /// keeps the values absorbed before the error (read them with
    /// [`UcbAgent::observed`]), and a new run starts certifying afresh.
    pub fn run_until<A, F>(
        &mut self,
        arms: &A,
        mut objective: F,
        rule: &StoppingRule,
    ) -> Result<CertifiedRun>
    where
        A: AsPoints + ?Sized,
        F: FnMut(&[f64]) -> f64,
    {
        rule.check()?;
        let points = arms.as_points()?;
        let mut certifier = Certifier::new(&points)?;
        let initial = certifier.update(self.bound())?;
        let mut certificate = initial.clone();
        let mut history: Vec<Step> = Vec::new();
        let (mut lowest, mut highest) = (f64::INFINITY, f64::NEG_INFINITY);
        loop {
            let range = (history.len() >= 2).then_some(highest - lowest);
            if let Some(stop) = rule.holds(certificate.gap, range, history.len()) {
                return Ok(CertifiedRun {
                    certificate,
                    stopped_by: stop,
                    initial,
                    history,
                });
            }
            let arm = self.select_from(&points)?;
            let x = points.to_vec(arm);
            let y = objective(&x);
            if !y.is_finite() {
                return Err(Error::NonFinite {
                    what: format!(
                        "the objective's value {y} at evaluation {} (arm {arm}, x = {x:?})",
                        history.len() + 1
                    ),
                });
            }
            self.update(&x, y)?;
            lowest = lowest.min(y);
            highest = highest.max(y);
            certificate = certifier.update(self.bound())?;
            history.push(Step {
                arm,
                y,
                certificate: certificate.clone(),
            });
        }
    }
}
