//! SafeOpt over a finite candidate set with the crate's bounds.

use super::intervals::{RunningIntervals, argmax_among, certainly_at_least};
use crate::bound::ConfidenceBound;
use crate::error::{Error, Result};
use crate::points::{AsPoints, Points};

/// Why [`SafeAgent::next`] chose its point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SafeRole {
    /// A potential maximiser: u^f(x) ≥ max over the safe set of ℓ^f.
    Maximiser,
    /// An expander: observing the constraints' optimistic values there would make some point
    /// outside the safe set safe.
    Expander,
}

/// The point [`SafeAgent::next`] chose.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SafeChoice {
    /// Its index among the candidates.
    pub index: usize,
    /// The point.
    pub x: Vec<f64>,
    /// Why it was chosen.
    pub role: SafeRole,
    /// Its width: the largest u − ℓ over the objective and the constraints.
    pub width: f64,
}

/// The best point of the safe set and how far it can be from the best safe point.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SafeRecommendation {
    /// x̂: the point of the safe set S_t with the largest ℓ^f (the lowest index among ties).
    pub index: usize,
    /// The point.
    pub x: Vec<f64>,
    /// ℓ^f(x̂): f(x̂) ≥ `lcb` on the objective's event.
    pub lcb: f64,
    /// max over S_t of u^f: an upper bound on max_{x ∈ S_t} f(x) on the objective's event.
    pub upper: f64,
    /// `upper − lcb` ≥ max_{x ∈ S_t} f(x) − f(x̂) on the objective's event.
    pub gap: f64,
}

/// SafeOpt (Sui et al. 2015, Alg. 1) without a Lipschitz constant (Berkenkamp et al. 2016,
/// §3), over a finite candidate set D, with any of the crate's bounds for the objective f and
/// one bound per constraint g_i with threshold h_i.
///
/// # The algorithm
///
/// After every observation each bound is evaluated at every candidate and intersected with
/// its earlier rounds, C_t(x) = C_{t−1}(x) ∩ [LCB_t(x), UCB_t(x)] = [ℓ_t(x), u_t(x)]. Then
/// - the **safe set** S_t = S_0 ∪ {x ∈ D : ℓ_t^{g_i}(x) ≥ h_i for every i}, which contains
///   S_{t−1} because ℓ_t only rises;
/// - the **potential maximisers** M_t = {x ∈ S_t : u_t^f(x) ≥ max_{x' ∈ S_t} ℓ_t^f(x')};
/// - the **expanders** G_t = {x ∈ S_t : some x' ∈ D \ S_t would enter the safe set if each
///   constraint were observed at x with its optimistic value u_t^{g_i}(x)};
/// - the next point maximises the width w_t(x) = max over f and the g_i of u_t(x) − ℓ_t(x)
///   over M_t ∪ G_t (the lowest index among ties).
///
/// **The expander test for mixture bounds.** In a GP (Berkenkamp et al. 2016) a fictitious
/// observation moves only the mean, and the new lower bound at x' is a closed form in the
/// observed value. The martingale-mixture bounds (Flynn & Reeb 2024, Eq. 8 and Cor. 4.3) have a
/// radius R_t² = a0 q_{a0} + σ² ln det(I + K_t/a0) + 2σ² ln(1/δ) that depends on the targets
/// through q_{a0} = y_tᵀ(K_t + a0 I)⁻¹y_t, so the optimistic observation moves the radius too,
/// and in either direction. The test therefore computes it exactly: a copy of each constraint's
/// bound absorbs (x, u_t^{g_i}(x)) and is evaluated at the points outside S_t, whose new lower
/// ends are max(ℓ_t^{g_i}(x'), LCB'(x')). A copy whose confidence set the optimistic value
/// empties (the value is then impossible under the assumptions) expands nothing, and a point
/// whose running upper end u_t^{g_i}(x') is already below h_i is not counted (it is unsafe on
/// the event, so only a contradiction of the event could make it "safe"). The test is
/// run only where it can change the choice: for the points of S_t \ M_t wider than the widest
/// maximiser, widest first, stopping at the first expander.
///
/// # What is guaranteed
///
/// Let E_i be the event, of probability ≥ 1 − δ_i, on which constraint i's bound holds at every
/// candidate and every round at once (the bounds of Flynn & Reeb 2024, Abbasi-Yadkori 2012 and
/// Chowdhury & Gopalan 2017 with σ, B and δ fixed before the data). If every point of the seed
/// S_0 is safe, then on E_1 ∩ … ∩ E_m — probability ≥ 1 − Σ δ_i — **every point of every S_t
/// is safe, and so is every point the agent chooses, at every round at once**: ℓ_t^{g_i}(x) ≤
/// g_i(x), and the intersection over rounds is valid because all rounds' bounds hold on the
/// one event. The objective's bound (its own δ_f) enters only the choice among safe points and
/// [`SafeAgent::recommend`], whose gap bounds the regret within the current safe set S_t (not
/// within the largest region reachable from S_0, which no finite run can certify).
///
/// Not valid for safety: [`crate::bound::AdaptiveNorm`] (refused for the constraints: its
/// bounds are not valid until its B has reached ‖g‖_H, which the data never confirm), bounds
/// with a heuristic β (GP-UCB with a constant β, K-UCB, BKB, EK-UCB), and kernels, σ or B fitted
/// on the data the bound then uses. When a constraint's data refute its assumptions (an empty
/// confidence set, or two rounds' intervals disjoint), nothing is safe any more:
/// [`SafeAgent::update`] still absorbs the observation, and every later [`SafeAgent::next`] and
/// [`SafeAgent::recommend`] returns [`Error::Refuted`].
///
/// # Examples
/// ```
/// use kernel_bandits::safe::SafeAgent;
/// use kernel_bandits::prelude::*;
///
/// let kernel = Rbf::new(0.2)?;
/// // f = g = 0.9·k(0.5, ·) − 0.4·k(0.05, ·): ‖g‖_H ≤ 1.3.
/// let g = |x: f64| 0.9 * kernel.eval(&[0.5], &[x]) - 0.4 * kernel.eval(&[0.05], &[x]);
/// let params = BoundParams::new().sigma(0.01).norm_bound(1.3).delta(0.01);
/// let candidates: Vec<[f64; 1]> = (0..41).map(|i| [i as f64 / 40.0]).collect();
/// let objective = Dmm::new(kernel, params)?;
/// let constraint = Dmm::new(kernel, params)?;
/// // g ≥ 0 is the constraint; candidate 20 (x = 0.5) is known to be safe.
/// let mut agent = SafeAgent::new(objective, vec![constraint], &[0.0], &candidates, &[20])?;
/// for _ in 0..15 {
///     let choice = agent.next()?;
///     let v = g(choice.x[0]);
///     assert!(v >= 0.0); // every evaluation is safe
///     agent.update(choice.index, v, &[v])?;
/// }
/// assert!(agent.safe_set().len() > 1);
/// let best = agent.recommend()?;
/// assert!(best.gap >= 0.0);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SafeAgent<F, G> {
    objective: F,
    constraints: Vec<G>,
    thresholds: Vec<f64>,
    candidates: Vec<f64>,
    dim: usize,
    seed: Vec<bool>,
    objective_intervals: RunningIntervals,
    constraint_intervals: Vec<RunningIntervals>,
    safe: Vec<bool>,
    evaluations: usize,
    refuted: Option<String>,
}

impl<F: ConfidenceBound + Clone, G: ConfidenceBound + Clone> SafeAgent<F, G> {
    /// SafeOpt on `candidates` (copied) for the objective's bound and the constraints' bounds
    /// (which may already hold observations), with g_i(x) ≥ `thresholds[i]` required, from the
    /// safe seed `seed` (indices into `candidates`, assumed safe: the guarantee rests on it).
    ///
    /// To constrain the objective itself (f(x) ≥ h, as in Sui et al. 2015), pass a second bound
    /// built like the objective's and give the same value to both in [`SafeAgent::update`].
    ///
    /// # Errors
    /// [`Error::NoArms`] for no candidates; ragged or non-finite candidates;
    /// [`Error::InvalidParameter`] for no constraint, a non-finite threshold, an empty seed or a
    /// seed index out of range ([`Error::ArmOutOfRange`]); [`Error::LengthMismatch`] if the
    /// thresholds do not match the constraints; [`Error::Unsupported`] for a constraint whose
    /// B is learnt from the data ([`ConfidenceBound::learns_norm`]); the bounds' errors for
    /// candidates of the wrong dimension; [`Error::Refuted`] if a bound's data already refute
    /// its assumptions.
    pub fn new<A: AsPoints + ?Sized>(
        objective: F,
        constraints: Vec<G>,
        thresholds: &[f64],
        candidates: &A,
        seed: &[usize],
    ) -> Result<Self> {
        let points = candidates.as_points()?;
        if points.is_empty() {
            return Err(Error::NoArms);
        }
        if constraints.is_empty() {
            return Err(Error::InvalidParameter {
                name: "constraints",
                value: 0.0,
                expected: "at least one constraint's bound",
            });
        }
        if thresholds.len() != constraints.len() {
            return Err(Error::LengthMismatch {
                what: "thresholds (one per constraint)",
                expected: constraints.len(),
                got: thresholds.len(),
            });
        }
        if let Some(&h) = thresholds.iter().find(|h| !h.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "threshold",
                value: h,
                expected: "a finite value",
            });
        }
        if seed.is_empty() {
            return Err(Error::InvalidParameter {
                name: "seed",
                value: 0.0,
                expected: "at least one candidate known to be safe",
            });
        }
        if let Some(&j) = seed.iter().find(|&&j| j >= points.len()) {
            return Err(Error::ArmOutOfRange {
                index: j,
                arms: points.len(),
            });
        }
        if let Some(i) = constraints.iter().position(|g| g.learns_norm()) {
            return Err(Error::Unsupported {
                what: format!(
                    "constraint {i} learns its norm bound B from the data (AdaptiveNorm): its \
                     bounds are not valid until B has grown to the constraint's RKHS norm, \
                     which the data never confirm, so they cannot certify safety; give B"
                ),
            });
        }
        let objective_intervals = RunningIntervals::from_checked(
            &objective
                .evaluate_checked(&points)
                .map_err(|e| context(e, "the objective"))?,
        )?;
        let mut constraint_intervals = Vec::with_capacity(constraints.len());
        for (i, g) in constraints.iter().enumerate() {
            constraint_intervals.push(
                RunningIntervals::from_checked(&g.evaluate_checked(&points)?)
                    .map_err(|e| context(e, &format!("constraint {i}")))?,
            );
        }
        let mut is_seed = vec![false; points.len()];
        for &j in seed {
            is_seed[j] = true;
        }
        let mut candidates_rows = Vec::with_capacity(points.len() * points.dim());
        points.for_each(|_, x| candidates_rows.extend_from_slice(x));
        let mut agent = Self {
            objective,
            constraints,
            thresholds: thresholds.to_vec(),
            candidates: candidates_rows,
            dim: points.dim(),
            seed: is_seed,
            objective_intervals,
            constraint_intervals,
            safe: Vec::new(),
            evaluations: 0,
            refuted: None,
        };
        agent.safe = agent.safe_from(&agent.constraint_intervals);
        Ok(agent)
    }
}

impl<F: ConfidenceBound + Clone, G: ConfidenceBound + Clone> SafeAgent<F, G> {
    /// The candidates.
    pub fn candidates(&self) -> Points<'_> {
        Points::from_row_major(&self.candidates, self.dim).expect("checked in SafeAgent::new")
    }

    /// The thresholds h_i.
    pub fn thresholds(&self) -> &[f64] {
        &self.thresholds
    }

    /// The objective's bound.
    pub fn objective(&self) -> &F {
        &self.objective
    }

    /// The constraints' bounds.
    pub fn constraints(&self) -> &[G] {
        &self.constraints
    }

    /// The objective's running intervals [ℓ^f, u^f] at the candidates.
    pub fn objective_intervals(&self) -> &RunningIntervals {
        &self.objective_intervals
    }

    /// Constraint i's running intervals [ℓ^{g_i}, u^{g_i}] at the candidates.
    pub fn constraint_intervals(&self) -> &[RunningIntervals] {
        &self.constraint_intervals
    }

    /// Observations absorbed through [`SafeAgent::update`].
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// Why nothing is certified any more, if a bound's data refuted its assumptions.
    pub fn refuted(&self) -> Option<&str> {
        self.refuted.as_deref()
    }

    /// Whether candidate `j` is in the safe set S_t.
    pub fn is_safe(&self, j: usize) -> bool {
        self.safe.get(j).copied().unwrap_or(false)
    }

    /// The safe set S_t, as candidate indices in increasing order.
    pub fn safe_set(&self) -> Vec<usize> {
        (0..self.safe.len()).filter(|&j| self.safe[j]).collect()
    }

    /// The widths w_t(x) = max over the objective and the constraints of u_t(x) − ℓ_t(x).
    pub fn widths(&self) -> Vec<f64> {
        let mut w = self.objective_intervals.widths();
        for c in &self.constraint_intervals {
            for (w, cw) in w.iter_mut().zip(c.widths()) {
                *w = w.max(cw);
            }
        }
        w
    }

    /// The potential maximisers M_t, as candidate indices in increasing order.
    pub fn maximisers(&self) -> Vec<usize> {
        let f = &self.objective_intervals;
        let best = self
            .safe_set()
            .into_iter()
            .map(|j| f.lower()[j])
            .fold(f64::NEG_INFINITY, f64::max);
        (0..self.safe.len())
            .filter(|&j| self.safe[j] && f.upper()[j] >= best)
            .collect()
    }

    /// Whether the safe candidate `j` is an expander (see *The expander test* on
    /// [`SafeAgent`]); `false` for a candidate outside S_t.
    ///
    /// # Errors
    /// [`Error::ArmOutOfRange`]; a bound's numerical errors while absorbing the optimistic
    /// value.
    pub fn is_expander(&self, j: usize) -> Result<bool> {
        if j >= self.safe.len() {
            return Err(Error::ArmOutOfRange {
                index: j,
                arms: self.safe.len(),
            });
        }
        if !self.safe[j] {
            return Ok(false);
        }
        let points = self.candidates();
        let x = points.to_vec(j);
        // The points outside S_t that could still enter it.
        let mut open: Vec<bool> = self.safe.iter().map(|&s| !s).collect();
        for (i, g) in self.constraints.iter().enumerate() {
            let h = self.thresholds[i];
            let running = &self.constraint_intervals[i];
            let mut needs = Vec::new();
            for (k, still) in open.iter_mut().enumerate() {
                // Points already safe for constraint i need nothing from it. A point whose
                // running upper end is below h_i is unsafe on the event: it could only "enter"
                // the safe set through a lower bound above its own upper bound, which the event
                // excludes, so it is left out.
                if !*still || certainly_at_least(running.lower()[k], h) {
                    continue;
                }
                if running.upper()[k] < h {
                    *still = false;
                } else {
                    needs.push(k);
                }
            }
            if needs.is_empty() {
                if !open.contains(&true) {
                    return Ok(false);
                }
                continue;
            }
            let mut copy = g.clone();
            copy.observe(&x, running.upper()[j])?;
            let rows: Vec<f64> = needs.iter().flat_map(|&k| points.to_vec(k)).collect();
            let checked = copy.evaluate_checked(&Points::from_row_major(&rows, self.dim)?)?;
            // A copy whose set the optimistic value empties (a value impossible under the
            // assumptions) expands nothing.
            let misspecified = checked.misspecified();
            for (&k, &l) in needs.iter().zip(&checked.bounds.lcb) {
                if misspecified || !certainly_at_least(running.lower()[k].max(l), h) {
                    open[k] = false;
                }
            }
            if !open.contains(&true) {
                return Ok(false);
            }
        }
        Ok(open.contains(&true))
    }

    /// The expanders G_t, as candidate indices in increasing order (one expander test per
    /// point of S_t: see [`SafeAgent::is_expander`]).
    ///
    /// # Errors
    /// As [`SafeAgent::is_expander`].
    pub fn expanders(&self) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for j in self.safe_set() {
            if self.is_expander(j)? {
                out.push(j);
            }
        }
        Ok(out)
    }

    /// The next point: the widest point of M_t ∪ G_t (the lowest index among ties).
    ///
    /// # Errors
    /// [`Error::Refuted`] once a bound's data have refuted its assumptions; the errors of
    /// [`SafeAgent::is_expander`].
    pub fn next(&self) -> Result<SafeChoice> {
        self.check_not_refuted()?;
        let widths = self.widths();
        let maximisers = self.maximisers();
        let m = argmax_among(&widths, maximisers.iter().copied())
            .expect("M_t holds the safe point of largest lower bound");
        let mut others: Vec<usize> = self
            .safe_set()
            .into_iter()
            .filter(|j| maximisers.binary_search(j).is_err())
            .filter(|&j| widths[j] > widths[m] || (widths[j] == widths[m] && j < m))
            .collect();
        others.sort_by(|&a, &b| widths[b].total_cmp(&widths[a]).then(a.cmp(&b)));
        for j in others {
            if self.is_expander(j)? {
                return Ok(self.choice(j, SafeRole::Expander, widths[j]));
            }
        }
        Ok(self.choice(m, SafeRole::Maximiser, widths[m]))
    }

    /// The recommendation: the point of S_t with the largest ℓ^f, and the gap
    /// max_{S_t} u^f − ℓ^f(x̂), which bounds max_{x ∈ S_t} f(x) − f(x̂) on the objective's
    /// event.
    ///
    /// # Errors
    /// [`Error::Refuted`] once a bound's data have refuted its assumptions.
    pub fn recommend(&self) -> Result<SafeRecommendation> {
        self.check_not_refuted()?;
        let f = &self.objective_intervals;
        let safe = self.safe_set();
        let best = argmax_among(f.lower(), safe.iter().copied()).expect("S_t holds the seed");
        let top = argmax_among(f.upper(), safe.iter().copied()).expect("S_t holds the seed");
        Ok(SafeRecommendation {
            index: best,
            x: self.candidates().to_vec(best),
            lcb: f.lower()[best],
            upper: f.upper()[top],
            gap: f.upper()[top] - f.lower()[best],
        })
    }

    /// Absorbs the evaluation of candidate `index`: the objective's value and one value per
    /// constraint. Every bound absorbs its value, and the running intervals and the safe set
    /// are updated. If the data refute a bound's assumptions, the observation is kept and the
    /// agent stops certifying ([`SafeAgent::refuted`]; [`SafeAgent::next`] and
    /// [`SafeAgent::recommend`] return [`Error::Refuted`]).
    ///
    /// # Errors
    /// [`Error::ArmOutOfRange`], [`Error::LengthMismatch`] (one value per constraint),
    /// [`Error::NonFinite`] values; a bound's numerical error while absorbing. The agent is
    /// unchanged on error.
    pub fn update(
        &mut self,
        index: usize,
        objective_value: f64,
        constraint_values: &[f64],
    ) -> Result<()> {
        if index >= self.safe.len() {
            return Err(Error::ArmOutOfRange {
                index,
                arms: self.safe.len(),
            });
        }
        if constraint_values.len() != self.constraints.len() {
            return Err(Error::LengthMismatch {
                what: "constraint values (one per constraint)",
                expected: self.constraints.len(),
                got: constraint_values.len(),
            });
        }
        if !objective_value.is_finite() {
            return Err(Error::NonFinite {
                what: "the objective's value".into(),
            });
        }
        if let Some(i) = constraint_values.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: format!("the value of constraint {i}"),
            });
        }
        let x = self.candidates().to_vec(index);
        // Absorb in copies, so that an error leaves the agent as it was.
        let mut objective = self.objective.clone();
        objective.observe(&x, objective_value)?;
        let mut constraints = self.constraints.clone();
        for (g, &v) in constraints.iter_mut().zip(constraint_values) {
            g.observe(&x, v)?;
        }
        let points = self.candidates();
        let f_checked = objective.evaluate_checked(&points)?;
        let mut g_checked = Vec::with_capacity(constraints.len());
        for g in &constraints {
            g_checked.push(g.evaluate_checked(&points)?);
        }
        // From here on nothing fails: the observation is absorbed.
        let mut refuted = self.refuted.clone();
        let objective_intervals = match self
            .objective_intervals
            .intersected(&f_checked, "the objective")
        {
            Ok(r) => r,
            Err(e) => {
                refuted.get_or_insert_with(|| refutation(e, "the objective", self.evaluations + 1));
                self.objective_intervals.clone()
            }
        };
        let mut constraint_intervals = Vec::with_capacity(constraints.len());
        for (i, (running, checked)) in self.constraint_intervals.iter().zip(&g_checked).enumerate()
        {
            let what = format!("constraint {i}");
            match running.intersected(checked, &what) {
                Ok(r) => constraint_intervals.push(r),
                Err(e) => {
                    refuted.get_or_insert_with(|| refutation(e, &what, self.evaluations + 1));
                    constraint_intervals.push(running.clone());
                }
            }
        }
        self.objective = objective;
        self.constraints = constraints;
        self.objective_intervals = objective_intervals;
        if refuted.is_none() {
            self.safe = self.safe_from(&constraint_intervals);
        }
        self.constraint_intervals = constraint_intervals;
        self.refuted = refuted;
        self.evaluations += 1;
        Ok(())
    }

    fn safe_from(&self, intervals: &[RunningIntervals]) -> Vec<bool> {
        (0..self.seed.len())
            .map(|j| {
                self.seed[j]
                    || self.safe.get(j).copied().unwrap_or(false)
                    || intervals
                        .iter()
                        .zip(&self.thresholds)
                        .all(|(c, &h)| certainly_at_least(c.lower()[j], h))
            })
            .collect()
    }

    fn choice(&self, index: usize, role: SafeRole, width: f64) -> SafeChoice {
        SafeChoice {
            index,
            x: self.candidates().to_vec(index),
            role,
            width,
        }
    }

    fn check_not_refuted(&self) -> Result<()> {
        match &self.refuted {
            Some(what) => Err(Error::Refuted { what: what.clone() }),
            None => Ok(()),
        }
    }
}

fn context(error: Error, what: &str) -> Error {
    match error {
        Error::Refuted { what: why } => Error::Refuted {
            what: format!("{what}: {why}"),
        },
        other => other,
    }
}

fn refutation(error: Error, what: &str, evaluation: usize) -> String {
    match error {
        Error::Refuted { what: why } if why.starts_with(what) => {
            format!("{why} (evaluation {evaluation}); nothing is certified safe any more")
        }
        Error::Refuted { what: why } => {
            format!("{what}: {why} (evaluation {evaluation}); nothing is certified safe any more")
        }
        other => format!("{what}: {other}"),
    }
}
