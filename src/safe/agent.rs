//! SafeOpt over a finite candidate set with the crate's bounds.

use super::intervals::{RunningIntervals, argmax_among, certainly_at_least};
use crate::bound::{CheckedBounds, ConfidenceBound};
use crate::error::{Error, Result};
use crate::points::{AsPoints, Points};
use std::sync::{Mutex, MutexGuard};

/// The most memory, in bytes, that [`SafeAgent::new`] lets each bound keep for the candidates
/// as its fixed arm set ([`ConfidenceBound::fix_arms`]): 512 MiB, about 8·|D|·t·(number of
/// regularisers) bytes, so 2 500 candidates stay fixed up to t ≈ 1 900 for DMM-UCB's 14
/// regularisers. Beyond it the bound is evaluated by per-point solves, with the same results.
pub const ARM_MEMORY_LIMIT: usize = 512 << 20;

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
/// empties, or whose bounds cross at one of those points (the value is then impossible under
/// the assumptions), expands nothing, and a point whose running upper end u_t^{g_i}(x') is
/// already below h_i is not counted (it is unsafe on the event, so only a contradiction of the
/// event could make it "safe"). The test is run only where it can change the choice: for the
/// points of S_t \ M_t wider than the widest maximiser, widest first, stopping at the first
/// expander.
///
/// **Cost.** [`SafeAgent::new`] declares the candidates as every bound's fixed arm set
/// ([`ConfidenceBound::fix_arms`], at most [`ARM_MEMORY_LIMIT`] bytes per bound), so that an
/// update costs O(|D|·t) per regulariser instead of O(|D|·t²). The agent keeps one copy of each
/// constraint's bound at the same observations; an expander test has that copy absorb the
/// optimistic value, reads its bounds at the candidates from the per-arm state (O(|D|·t) per
/// regulariser) and truncates it back, which is exact (a Cholesky factor's leading block is
/// the factor of the leading block; the quadratic forms and log-determinants are prefix sums).
/// One step at t = 200 over 2 500 candidates takes milliseconds with AMM-, DMM-, AY- and IGP-UCB
/// (see BENCHMARKS.md). CMM-UCB keeps no per-arm state (its eigenbasis changes with every
/// observation) and pays O(t²) per point and test.
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
#[derive(Debug)]
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
    /// Copies of the constraints' bounds at the same observations, for the expander test
    /// (see [`Scratch`]): kept between calls so that no test pays for a copy.
    scratch: Mutex<Vec<Option<G>>>,
}

impl<F: Clone, G: Clone> Clone for SafeAgent<F, G> {
    fn clone(&self) -> Self {
        Self {
            objective: self.objective.clone(),
            constraints: self.constraints.clone(),
            thresholds: self.thresholds.clone(),
            candidates: self.candidates.clone(),
            dim: self.dim,
            seed: self.seed.clone(),
            objective_intervals: self.objective_intervals.clone(),
            constraint_intervals: self.constraint_intervals.clone(),
            safe: self.safe.clone(),
            evaluations: self.evaluations,
            refuted: self.refuted.clone(),
            scratch: Mutex::new(lock(&self.scratch).clone()),
        }
    }
}

impl<F: ConfidenceBound + Clone, G: ConfidenceBound + Clone> SafeAgent<F, G> {
    /// SafeOpt on `candidates` (copied) for the objective's bound and the constraints' bounds
    /// (which may already hold observations), with g_i(x) ≥ `thresholds[i]` required, from the
    /// safe seed `seed` (indices into `candidates`, assumed safe: the guarantee rests on it).
    ///
    /// To constrain the objective itself (f(x) ≥ h, as in Sui et al. 2015), pass a second bound
    /// built like the objective's and give the same value to both in [`SafeAgent::update`].
    ///
    /// The candidates become every bound's fixed arm set ([`ConfidenceBound::fix_arms`], at
    /// most [`ARM_MEMORY_LIMIT`] bytes each), replacing a set declared before; the values are
    /// the same as without it, up to rounding in the last bits.
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
        mut objective: F,
        mut constraints: Vec<G>,
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
        objective
            .fix_arms(&points, Some(ARM_MEMORY_LIMIT))
            .map_err(|e| context(e, "the objective"))?;
        for g in &mut constraints {
            g.fix_arms(&points, Some(ARM_MEMORY_LIMIT))?;
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
            scratch: Mutex::new(Vec::new()),
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
        self.expander_test(j, &mut self.scratch())
    }

    /// The expander test of candidate `j`, with constraint i's lower bounds after the
    /// optimistic observation from the kept copies (see [`Scratch::lower_after`]).
    fn expander_test(&self, j: usize, scratch: &mut Scratch<'_, G>) -> Result<bool> {
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
        for (i, h) in self.thresholds.iter().copied().enumerate() {
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
            let (lower, misspecified) =
                scratch.lower_after(i, &x, running.upper()[j], &points, &needs)?;
            // A copy whose set the optimistic value empties, or whose bounds cross at one of
            // these points (a value impossible under the assumptions), expands nothing.
            for (&k, &l) in needs.iter().zip(&lower) {
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
        let mut scratch = self.scratch();
        let mut out = Vec::new();
        for j in self.safe_set() {
            if self.expander_test(j, &mut scratch)? {
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
        let mut scratch = self.scratch();
        for j in others {
            if self.expander_test(j, &mut scratch)? {
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
        // Absorb in place; on an error every bound is truncated back to its observations
        // (exact: see `Scratch`), so that the agent is as it was. No copy of the bounds: with
        // a fixed arm set a copy would cost as much as the update itself.
        let (f_checked, g_checked) = self.absorb(&x, objective_value, constraint_values)?;
        {
            let mut copies = lock(&self.scratch);
            for (copy, &v) in copies.iter_mut().zip(constraint_values) {
                if copy.as_mut().is_some_and(|c| c.observe(&x, v).is_err()) {
                    *copy = None;
                }
            }
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
        let mut constraint_intervals = Vec::with_capacity(self.constraints.len());
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
        self.objective_intervals = objective_intervals;
        if refuted.is_none() {
            self.safe = self.safe_from(&constraint_intervals);
        }
        self.constraint_intervals = constraint_intervals;
        self.refuted = refuted;
        self.evaluations += 1;
        Ok(())
    }

    /// Every bound absorbs its value at x and is evaluated at the candidates; on an error,
    /// every bound is truncated back to the observations it had.
    fn absorb(
        &mut self,
        x: &[f64],
        objective_value: f64,
        constraint_values: &[f64],
    ) -> Result<(CheckedBounds, Vec<CheckedBounds>)> {
        let before_f = self.objective.len();
        let before_g: Vec<usize> = self.constraints.iter().map(|g| g.len()).collect();
        let result = (|| {
            self.objective.observe(x, objective_value)?;
            for (g, &v) in self.constraints.iter_mut().zip(constraint_values) {
                g.observe(x, v)?;
            }
            let points = Points::from_row_major(&self.candidates, self.dim)?;
            let f_checked = self.objective.evaluate_checked(&points)?;
            let g_checked = self
                .constraints
                .iter()
                .map(|g| g.evaluate_checked(&points))
                .collect::<Result<Vec<_>>>()?;
            Ok((f_checked, g_checked))
        })();
        if result.is_err() {
            self.objective.truncate(before_f);
            for (g, &len) in self.constraints.iter_mut().zip(&before_g) {
                g.truncate(len);
            }
        }
        result
    }

    /// The copies of the constraints' bounds for the expander test.
    fn scratch(&self) -> Scratch<'_, G> {
        Scratch {
            bounds: &self.constraints,
            copies: lock(&self.scratch),
        }
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

/// The constraints' bounds after one optimistic observation, for the expander test: a copy of
/// each bound, kept by the agent at the same observations as the bound, absorbs (x, u), is
/// evaluated, and is truncated back to its observations, which is exact (the leading block of a
/// Cholesky factor is the factor of the leading block, and the quadratic forms and
/// log-determinants are prefix sums; a fixed arm set keeps its solved rows and re-sums them in
/// the same order). With the candidates as the copy's fixed arm set
/// ([`ConfidenceBound::fix_arms`], which [`SafeAgent::new`] declares) the observation costs
/// O(|D|·t) per regulariser and the evaluation O(|D|), instead of the O(|D|·t²) of per-point
/// solves and the copy of the whole bound that a fresh copy would cost at every test.
pub(crate) struct Scratch<'a, G> {
    bounds: &'a [G],
    copies: MutexGuard<'a, Vec<Option<G>>>,
}

impl<'a, G: ConfidenceBound + Clone> Scratch<'a, G> {
    /// Bound `i`'s lower bounds at the candidates `needs` after also observing (x, y), and
    /// whether those values refute its assumptions (an empty confidence set, or LCB > UCB or a
    /// NaN at one of `needs`). A copy with the candidates as its fixed arm set is evaluated
    /// at all of them (O(|D|) from its per-arm state); one without, at `needs` alone.
    ///
    /// # Errors
    /// The bound's errors while absorbing or evaluating; the copy is then dropped.
    pub(crate) fn lower_after(
        &mut self,
        i: usize,
        x: &[f64],
        y: f64,
        candidates: &Points<'_>,
        needs: &[usize],
    ) -> Result<(Vec<f64>, bool)> {
        if self.copies.len() != self.bounds.len() {
            *self.copies = (0..self.bounds.len()).map(|_| None).collect();
        }
        let copy = self.copies[i].get_or_insert_with(|| self.bounds[i].clone());
        let before = copy.len();
        let result = copy.observe(x, y).and_then(|()| {
            if copy.fixed_arms().is_some() {
                let checked = copy.evaluate_checked(candidates)?;
                let pick = |v: &[f64]| needs.iter().map(|&k| v[k]).collect::<Vec<f64>>();
                Ok((
                    pick(&checked.bounds.lcb),
                    pick(&checked.bounds.ucb),
                    checked.diagnostics,
                ))
            } else {
                let rows: Vec<f64> = needs.iter().flat_map(|&k| candidates.to_vec(k)).collect();
                let checked =
                    copy.evaluate_checked(&Points::from_row_major(&rows, candidates.dim())?)?;
                Ok((checked.bounds.lcb, checked.bounds.ucb, checked.diagnostics))
            }
        });
        match result {
            Ok((lower, upper, diagnostics)) => {
                copy.truncate(before);
                let crossed = lower.iter().zip(&upper).any(|(l, u)| {
                    matches!(l.partial_cmp(u), Some(std::cmp::Ordering::Greater) | None)
                });
                Ok((lower, diagnostics.empty_set() || crossed))
            }
            Err(e) => {
                self.copies[i] = None;
                Err(e)
            }
        }
    }
}

/// The scratch copies; after a panic while they were held (a copy may then hold an extra
/// observation) they are dropped, to be copied afresh.
fn lock<G>(mutex: &Mutex<Vec<Option<G>>>) -> MutexGuard<'_, Vec<Option<G>>> {
    mutex.lock().unwrap_or_else(|poisoned| {
        let mut copies = poisoned.into_inner();
        copies.clear();
        mutex.clear_poison();
        copies
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::{AnyBound, BoundConfig, BoundKind, BoundParams};
    use crate::kernel::{Kernel, Rbf};

    /// Constraint i's lower bounds at every candidate after observing (x, y), from a fresh copy
    /// of the bound with its fixed arm set released (per-point solves, no truncation).
    fn lower_by_copy<G: ConfidenceBound + Clone>(
        g: &G,
        x: &[f64],
        y: f64,
        candidates: &Points<'_>,
        needs: &[usize],
    ) -> (Vec<f64>, bool) {
        let mut copy = g.clone();
        copy.release_arms();
        assert!(copy.fixed_arms().is_none());
        copy.observe(x, y).unwrap();
        let rows: Vec<f64> = needs.iter().flat_map(|&k| candidates.to_vec(k)).collect();
        let checked = copy
            .evaluate_checked(&Points::from_row_major(&rows, candidates.dim()).unwrap())
            .unwrap();
        let misspecified = checked.misspecified();
        (checked.bounds.lcb, misspecified)
    }

    /// A 1-D design mirrored about the seed x = 0.5, with a duplicate of the seed and two
    /// candidates one ulp apart, and the 2-D grid of its mirrored coordinates 7 × 7.
    fn designs() -> Vec<(Vec<f64>, usize, usize)> {
        let mut line: Vec<f64> = (0..21).map(|i| 0.2 + 0.6 * i as f64 / 20.0).collect();
        line.extend([0.5, 0.35, f64::from_bits(0.35f64.to_bits() + 1)]);
        let side: Vec<f64> = (0..7).map(|i| 0.2 + 0.1 * i as f64).collect();
        let grid: Vec<f64> = side
            .iter()
            .flat_map(|&a| side.iter().flat_map(move |&b| [a, b]))
            .collect();
        vec![(line, 1, 10), (grid, 2, 24)]
    }

    /// The scratch copies (fixed arms, absorbed and truncated back at every test, kept in step
    /// with the bounds by every update) give every constraint's lower bounds and every expander
    /// decision that a fresh copy of the bound with per-point solves gives, after every update,
    /// for every exact bound, on mirrored designs with a duplicate and points one ulp apart.
    #[test]
    fn the_scratch_expander_test_matches_a_fresh_copy_after_every_update() {
        let kernel = Rbf::new(0.2).unwrap();
        let h = 0.2;
        let mut expanders_by_kind = std::collections::BTreeMap::new();
        for (rows, dim, seed) in designs() {
            let centre = vec![0.5; dim];
            let lo = vec![0.15; dim];
            let hi = vec![0.85; dim];
            let g = |x: &[f64]| {
                kernel.eval(&centre, x) - 0.5 * kernel.eval(&lo, x) - 0.5 * kernel.eval(&hi, x)
            };
            let f = |x: &[f64]| 1.2 * kernel.eval(&centre, x);
            for kind in BoundKind::VALID {
                let config = BoundConfig::new().params(
                    BoundParams::new()
                        .sigma(0.01)
                        .norm_bound(1.2)
                        .delta(0.01)
                        .scale(0.5)
                        .horizon(30),
                );
                let build = || -> AnyBound<Rbf> { kind.build(kernel, &config).unwrap() };
                let design = Points::from_row_major(&rows, dim).unwrap();
                let mut agent =
                    SafeAgent::new(build(), vec![build()], &[h], &design, &[seed]).unwrap();
                let n = rows.len() / dim;
                let (mut compared, mut expanders) = (0, 0);
                let mut worst = 0.0f64;
                // The exact bounds read the copy's per-arm state, summed in another order than per-point
                // solves (2·10⁻¹² relative seen where the variance nearly cancels). CMM-UCB's
                // minimisation over a stops at Brent's tolerance and its spectrum follows another
                // path of bordered updates in the copy (10⁻⁹ seen).
                let tol = if kind == BoundKind::Cmm { 1e-8 } else { 1e-10 };
                for round in 0..30 {
                    let points = agent.candidates();
                    let everyone: Vec<usize> = (0..n).collect();
                    let bound = &agent.constraints()[0];
                    for j in agent.safe_set() {
                        let x = points.to_vec(j);
                        let u = agent.constraint_intervals()[0].upper()[j];
                        let (want, want_bad) = lower_by_copy(bound, &x, u, &points, &everyone);
                        let (got, got_bad) = agent
                            .scratch()
                            .lower_after(0, &x, u, &points, &everyone)
                            .unwrap();
                        assert_eq!(got_bad, want_bad, "{kind:?} d={dim} round {round} j={j}");
                        for k in 0..n {
                            worst = worst.max((got[k] - want[k]).abs() / (1.0 + want[k].abs()));
                            assert!(
                                (got[k] - want[k]).abs() <= tol * (1.0 + want[k].abs()),
                                "{kind:?} d={dim} round {round}: after observing at {j}, LCB at \
                                 {k} is {} by the scratch copy, {} by a fresh copy",
                                got[k],
                                want[k]
                            );
                        }
                        // The decision, from the fresh copy's values with the same rule.
                        let running = &agent.constraint_intervals()[0];
                        let open: Vec<usize> = (0..n)
                            .filter(|&k| !agent.is_safe(k) && running.upper()[k] >= h)
                            .collect();
                        let near_tie = open
                            .iter()
                            .any(|&k| (running.lower()[k].max(want[k]) - h).abs() <= 1e-9);
                        let want_expander =
                            !want_bad && open.iter().any(|&k| running.lower()[k].max(want[k]) >= h);
                        if !near_tie {
                            assert_eq!(
                                agent.is_expander(j).unwrap(),
                                want_expander,
                                "{kind:?} d={dim} round {round}: expander test at {j}"
                            );
                            compared += 1;
                            expanders += usize::from(want_expander);
                        }
                    }
                    // The copies stay at the bounds' observations.
                    let copies = lock(&agent.scratch);
                    if let Some(Some(copy)) = copies.first() {
                        assert_eq!(copy.len(), agent.constraints()[0].len());
                    }
                    drop(copies);
                    let choice = agent.next().unwrap();
                    let x = choice.x.clone();
                    let wobble = 0.005 * (round as f64 * 0.618_033_988_75).fract();
                    agent
                        .update(choice.index, f(&x) + wobble, &[g(&x) - wobble])
                        .unwrap();
                }
                eprintln!(
                    "{kind:?} d={dim}: {compared} decisions, {expanders} expanders, worst {worst:e}"
                );
                assert!(
                    compared >= 20,
                    "{kind:?} d={dim}: {compared} decisions compared"
                );
                *expanders_by_kind.entry(kind.name()).or_insert(0) += expanders;
            }
        }
        assert!(
            expanders_by_kind.len() == 5 && expanders_by_kind.values().all(|&e| e > 0),
            "every bound must meet expanders: {expanders_by_kind:?}"
        );
    }
}
