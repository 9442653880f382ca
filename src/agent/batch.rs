//! Batches, pending evaluations and continuous domains for the UCB agent: GP-BUCB (Desautels,
//! Krause & Burdick 2014) and GP-UCB-PE (Contal, Buffoni, Robicquet & Vayatis 2013, Alg. 1) on
//! the crate's confidence bounds, and the multi-start maximisation of the UCB over a box.
//!
//! # The rules
//! A batch of q points is one *UCB point*, the maximiser of the upper confidence bound U_t, and
//! q − 1 further points chosen with the first ones pending. Asynchronously, one point at a time:
//! the next point is a UCB point unless a UCB point is still pending, in which case it is a
//! further point. A UCB point is the best point that is not pending (when the maximiser of U_t
//! is already running as a further point, the next best), and further points are never pending
//! ones, so points in flight are distinct (in a box of more than one point; on a finite arm
//! set, while there are enough arms). Pending points need no targets: the posterior variance of
//! a Gaussian process given them is known before their rewards (the bounds use the variance
//! ρ² at the regulariser of their mean, a0 = σ²/c for AMM, DMM and CMM).
//!
//! - **GP-BUCB** ([`BatchRule::PendingUcb`], the default in a box): the further point maximises
//!   s_t(x) = μ_t(x) + (U_t(x) − μ_t(x))·ρ_{t,P}(x)/ρ_t(x), where ρ_{t,P} is the posterior
//!   standard deviation given the observations and the pending points P: the UCB with its width
//!   shrunk as the pending points will shrink it once their rewards arrive (Desautels, Krause &
//!   Burdick 2014, Eq. 5, with the bound's width in place of their √β_t σ_t). It is maximised
//!   like the UCB: the best starts by s are refined by quasi-Newton steps on s and its gradient
//!   ∇μ + (∇U − ∇μ)·r + (U − μ)·∇r, r = ρ_P/ρ.
//! - **GP-UCB-PE** ([`BatchRule::Exploration`]; always among finite arms): the further point
//!   maximises the posterior variance given the pending points over the *relevant region* of
//!   Contal et al. (2013, Alg. 1), R⁺_t = {x : U_t(x) + (U_t(x) − μ_t(x)) ≥ max_x′ L_t(x′)}:
//!   the upper bound with its width about the mean doubled (their μ + 2√β σ), which contains
//!   {U_t ≥ max L_t}.
//!
//! **Why GP-BUCB in a box.** With valid (wide) bounds the relevant region is most of the box,
//! and the largest variance in a box is on its faces and corners, far from the data: the
//! further points of GP-UCB-PE go there. In the Bayesian-optimisation benchmark
//! (`python/bench/bo_vs_botorch.py`, q = 4, 20 seeds; BENCHMARKS.md, *Batches of four in the
//! box*) GP-UCB-PE put 97 % of Levy-4's evaluations on the boundary and ended with twice the
//! regret of GP-BUCB on Levy-4 and Rosenbrock-4 (6.2 against 3.6, 2980 against 1520), with
//! GP-BUCB close to one point at a time on four of five functions. The crate's Optuna sampler
//! uses the same rule with running trials. Among finite arms GP-UCB-PE is kept: it was not
//! measured there, and a finite set has no faces to fill.
//!
//! # What holds
//! - Pending points never enter the mean, the width or the bounds: L_t and U_t are those of the
//!   observations only, so every bound the agent reports keeps its guarantee (with probability
//!   1 − δ, L_t(x) ≤ f(x) ≤ U_t(x) at every x and every round), whatever the batch size or rule.
//! - A GP-BUCB point's score lies between μ_t and U_t (ρ_{t,P} ≤ ρ_t): it is the UCB of a
//!   narrower, hallucinated bound, not a bound itself.
//! - GP-UCB-PE: on that event the maximiser x* of f lies in {U_t ≥ max L_t} ⊆ R⁺_t (U_t(x*) ≥
//!   f(x*) ≥ f(x′) ≥ L_t(x′) for every x′), so exploration never leaves out the optimum. The
//!   threshold is taken over the scored candidates, a lower bound on max L_t, so the region
//!   searched contains R⁺_t.
//! - Desautels et al. (2014, Thm. 2) and Contal et al. (2013, Thm. 2) bound the regret of their
//!   rules for GP-UCB widths √β_t σ_t; the crate runs the same rules with its own (narrower,
//!   still valid) widths and does not re-derive those theorems for them, so no rate is claimed
//!   here.

use super::{BanditAgent, UcbAgent};
use crate::bound::ConfidenceBound;
use crate::continuous::{BoxDomain, RefineOptions, refine};
use crate::error::{Error, Result};
use crate::points::{Points, check_point};

/// Which rule chose a point (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Rule {
    /// The maximiser of the upper confidence bound.
    Ucb,
    /// The maximiser of the variance given the pending points, within the relevant region
    /// (GP-UCB-PE, [`BatchRule::Exploration`]).
    Exploration,
    /// The maximiser of GP-BUCB's score μ + (U − μ)·ρ_P/ρ, the UCB with its width shrunk by the
    /// pending points ([`BatchRule::PendingUcb`]).
    PendingUcb,
    /// Drawn uniformly at random ([`super::RandomAgent`]); its `ucb` is +∞, the trivial bound.
    Random,
}

/// A point chosen in a continuous domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The point, inside the domain.
    pub point: Vec<f64>,
    /// Its upper confidence bound, as [`ConfidenceBound::evaluate`] computes it.
    pub ucb: f64,
    /// Which rule chose it.
    pub rule: Rule,
    /// Whether the point is the result of a refinement ([`crate::continuous::refine`], on the
    /// UCB for [`Rule::Ucb`], on the variance given the pending points for
    /// [`Rule::Exploration`]) that converged: its fixed-point residual fell below the tolerance,
    /// so the point is a local maximiser of that objective over the box to that tolerance.
    /// `false` for a start kept unrefined (it beat every refined point, or its refinement left
    /// the relevant region), a refinement that ran out of `max_iterations`, and
    /// [`Rule::Random`].
    pub converged: bool,
    /// The quasi-Newton iterations of the refinement that gave the point (0 for a start kept
    /// unrefined and for [`Rule::Random`]).
    pub iterations: usize,
}

/// How [`BanditAgent::select_in`] searches a box: `starts` space-filling points (a scrambled Sobol
/// sequence, [`BoxDomain::space_filling`]) are scored in one batch, and the best `refine` of them
/// are refined by a box-constrained quasi-Newton method ([`crate::continuous::refine`]) for at
/// most `max_iterations` iterations each. The starts are drawn afresh each round from `seed`,
/// the number of observations and the number of pending points, so a run is reproducible.
///
/// Cost, for the exact bounds at t observations: the starts are ranked by the pruned search
/// of [`ConfidenceBound::top_ucb`], which solves (O(t²) each) only the starts that can rank
/// among the best `refine` (most are dropped on bounds from their first rows or their
/// nearest observations); then each refinement costs O(t²) per step. A start where the UCB
/// increases only out of the box (often a corner) costs one evaluation. DMM's UCB is a minimum
/// over its grid of regularisers, refined on the few regularisers active along the way (one or
/// two forward substitutions per step rather than one per grid point); it has kinks near
/// well-sampled maxima, where the refinement can run to `max_iterations` (then the bulk of a
/// call's cost): lower it to trade a little of the last digits of the maximum for time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContinuousOptions {
    /// Space-filling starts scored per choice (at least 1).
    pub starts: usize,
    /// How many of the best starts are refined (at least 1).
    pub refine: usize,
    /// Seed of the starts.
    pub seed: u64,
    /// The most quasi-Newton iterations of one refinement (at least 1).
    pub max_iterations: usize,
    /// The rule for a point chosen while a UCB point is pending: the further points of a
    /// batch, and asynchronous choices (default [`BatchRule::PendingUcb`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub batch_rule: BatchRule,
}

/// How a box search chooses a point while a UCB point is pending (see the
/// [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum BatchRule {
    /// GP-BUCB (Desautels, Krause & Burdick 2014, Eq. 5): the largest μ_t + (U_t − μ_t)·ρ_P/ρ,
    /// where ρ and ρ_P are the posterior standard deviations without and with the pending
    /// points. The default.
    #[default]
    PendingUcb,
    /// GP-UCB-PE (Contal et al. 2013, Alg. 1): the largest variance given the pending points in
    /// the relevant region.
    Exploration,
}

impl Default for ContinuousOptions {
    /// 1024 starts, the best 5 refined for up to 200 iterations each, seed 0, GP-BUCB while a
    /// UCB point is pending.
    fn default() -> Self {
        Self {
            starts: 1024,
            refine: 5,
            seed: 0,
            max_iterations: 200,
            batch_rule: BatchRule::PendingUcb,
        }
    }
}

/// The most starts [`ContinuousOptions`] accepts: the length of the scrambled Sobol sequence.
pub const MAX_STARTS: usize = 1 << 16;

/// The largest batch `select_batch` and `select_batch_in` accept.
pub const MAX_BATCH: usize = 1 << 16;

impl ContinuousOptions {
    pub(crate) fn check(&self) -> Result<()> {
        for (name, value) in [
            ("starts", self.starts),
            ("refine", self.refine),
            ("max_iterations", self.max_iterations),
        ] {
            if value == 0 || value > MAX_STARTS {
                return Err(Error::InvalidParameter {
                    name,
                    value: value as f64,
                    expected: "between 1 and 65536",
                });
            }
        }
        Ok(())
    }
}

/// The pending evaluations of an agent: points handed out whose rewards have not arrived.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct PendingSet {
    /// Row-major points.
    points: Vec<f64>,
    dim: usize,
    /// Whether each was a UCB point.
    ucb: Vec<bool>,
    /// The last UCB point handed out: a `pending` call with it marks it as one.
    last_ucb_pick: Option<Vec<f64>>,
}

impl PendingSet {
    pub(crate) fn len(&self) -> usize {
        self.ucb.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ucb.is_empty()
    }

    pub(crate) fn point(&self, i: usize) -> &[f64] {
        &self.points[i * self.dim..(i + 1) * self.dim]
    }

    pub(crate) fn points(&self) -> Result<Points<'_>> {
        Points::from_row_major(&self.points, self.dim.max(1))
    }

    /// Whether a UCB point is pending: the next point is then an exploration point.
    pub(crate) fn explore_next(&self) -> bool {
        self.ucb.iter().any(|&u| u)
    }

    fn position(&self, x: &[f64]) -> Option<usize> {
        (0..self.len()).find(|&i| same_bits(self.point(i), x))
    }

    pub(crate) fn contains(&self, x: &[f64]) -> bool {
        self.position(x).is_some()
    }

    /// The pending point an observation or a withdrawal at `x` resolves: the first one bitwise
    /// equal, else the nearest one (largest relative coordinate difference, the oldest among
    /// ties) that agrees with `x` to [`PENDING_TOLERANCE`] in every coordinate.
    fn resolving(&self, x: &[f64]) -> Option<usize> {
        if let Some(i) = self.position(x) {
            return Some(i);
        }
        if x.len() != self.dim {
            return None;
        }
        let mut best: Option<(f64, usize)> = None;
        for i in 0..self.len() {
            let distance = relative_distance(self.point(i), x);
            if distance <= PENDING_TOLERANCE && best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Adds `x` (checked finite by the caller). It is the pending UCB point if it is the last
    /// UCB point handed out and no UCB point is pending yet (one is in flight at a time).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if other pending points have another dimension; nothing
    /// changes then.
    pub(crate) fn add(&mut self, x: &[f64]) -> Result<()> {
        if let Some(expected) = self.dim()
            && expected != x.len()
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: x.len(),
            });
        }
        let ucb = !self.explore_next()
            && self
                .last_ucb_pick
                .as_deref()
                .is_some_and(|last| same_bits(last, x));
        self.dim = x.len();
        self.points.extend_from_slice(x);
        self.ucb.push(ucb);
        Ok(())
    }

    /// Removes the pending point `x` resolves (bitwise equal, else the nearest within
    /// [`PENDING_TOLERANCE`]); whether there was one.
    pub(crate) fn remove(&mut self, x: &[f64]) -> bool {
        match self.resolving(x) {
            Some(i) => {
                self.points.drain(i * self.dim..(i + 1) * self.dim);
                self.ucb.remove(i);
                if self.ucb.is_empty() {
                    self.dim = 0;
                }
                true
            }
            None => false,
        }
    }

    pub(crate) fn handed_out(&mut self, x: &[f64], rule: Rule) {
        if rule == Rule::Ucb {
            let last = self.last_ucb_pick.get_or_insert_with(Vec::new);
            last.clear();
            last.extend_from_slice(x);
        }
    }

    pub(crate) fn dim(&self) -> Option<usize> {
        (!self.is_empty()).then_some(self.dim)
    }

    /// Whether a restored set is consistent: one flag per point, finite points of one
    /// dimension.
    #[cfg(feature = "serde")]
    pub(crate) fn check(&self) -> Result<()> {
        crate::snapshot::ensure(
            self.points.len() == self.ucb.len() * self.dim && (self.dim > 0 || self.ucb.is_empty()),
            || "pending points of inconsistent dimension".into(),
        )?;
        crate::snapshot::ensure_finite(&self.points, "pending points")?;
        if let Some(last) = &self.last_ucb_pick {
            crate::snapshot::ensure_finite(last, "last UCB point")?;
        }
        Ok(())
    }
}

/// The relative tolerance within which [`BanditAgent::update`] and [`BanditAgent::withdraw`]
/// resolve a pending point that is not bitwise equal to the one given: every coordinate must
/// agree to |xᵢ − pᵢ| ≤ 10⁻⁵·max(|xᵢ|, |pᵢ|). That absorbs what a point suffers on its way to
/// a worker and back (a float32 round trip, 2⁻²⁴ ≈ 6·10⁻⁸; printing with 6 significant
/// digits, at most 5·10⁻⁶), while two points a search hands out are far further apart (the
/// exploration rule maximises the variance given the pending points). Per coordinate and
/// relative, so it does not depend on units; a coordinate that is 0 in one must be ±0 in the
/// other. The bitwise-equal match is tried first, then the nearest one.
pub const PENDING_TOLERANCE: f64 = 1e-5;

/// max over coordinates of |aᵢ − bᵢ| / max(|aᵢ|, |bᵢ|) (0 where both are ±0); +∞ if a
/// coordinate is NaN or infinite, so that such a point resolves nothing (`f64::max` would drop a
/// NaN).
fn relative_distance(a: &[f64], b: &[f64]) -> f64 {
    let mut largest = 0.0_f64;
    for (p, x) in a.iter().zip(b) {
        if !(p.is_finite() && x.is_finite()) {
            return f64::INFINITY;
        }
        let scale = p.abs().max(x.abs());
        if scale > 0.0 {
            largest = largest.max((p - x).abs() / scale);
        }
    }
    largest
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The exploration arm among `arms`: the largest variance given the pending points within the
/// relevant region {U ≥ max L}, preferring arms not already pending (lowest index among ties).
/// When every arm of the region is pending, a pending arm is repeated (its variance, shrunk by
/// the pending evaluation, still ranks it), rather than leaving the region.
pub(crate) fn exploration_arm<B: ConfidenceBound + ?Sized>(
    bound: &B,
    arms: &Points<'_>,
    pending: &PendingSet,
) -> Result<usize> {
    let bounds = bound.evaluate(arms)?;
    let threshold = region_threshold(&bounds)?;
    let variance = bound.pending_variance(&pending.points()?)?.variance(arms)?;
    let mut scratch = vec![0.0; arms.dim()];
    let in_region: Vec<usize> = (0..arms.len())
        .filter(|&j| widened(bounds.ucb[j], bounds.mean[j]) >= threshold)
        .collect();
    let fresh: Vec<usize> = in_region
        .iter()
        .copied()
        .filter(|&j| !pending.contains(arms.point(j, &mut scratch)))
        .collect();
    let candidates = if fresh.is_empty() { &in_region } else { &fresh };
    let mut best: Option<usize> = None;
    for &j in candidates {
        if best.is_none_or(|b| variance[j] > variance[b]) {
            best = Some(j);
        }
    }
    // The arm with the largest LCB is always in the region, so it is never empty.
    best.ok_or(Error::NoArms)
}

/// The largest value; `what` names them in the error for a NaN.
fn max_finite(values: &[f64], what: &str) -> Result<f64> {
    if values.iter().any(|v| v.is_nan()) {
        return Err(Error::NonFinite { what: what.into() });
    }
    Ok(values.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

/// The threshold of the relevant region: the largest LCB over the candidates, where a
/// candidate's LCB is capped by its UCB. Capping changes nothing while the bounds are ordered;
/// where the data contradict σ or B and the bounds cross at some point, it keeps that point's
/// own UCB above the threshold, so the region is never empty.
fn region_threshold(bounds: &crate::bound::Bounds) -> Result<f64> {
    let capped: Vec<f64> = bounds
        .lcb
        .iter()
        .zip(&bounds.ucb)
        .map(|(l, u)| l.min(*u))
        .collect();
    max_finite(&capped, "confidence bound")
}

/// The doubled-width upper bound U⁺ = U + (U − μ) of the relevant region of Contal et al.
/// (2013, Alg. 1), never below U.
fn widened(ucb: f64, mean: f64) -> f64 {
    ucb.max(2.0 * ucb - mean)
}

/// The seed of the starts of one choice: the options' seed mixed with the number of
/// observations and of pending points (SplitMix64's finaliser).
fn round_seed(seed: u64, observations: usize, pending: usize) -> u64 {
    let mut z = seed
        ^ (observations as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (pending as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The most corners of a box among the starts of one choice (all of them up to d = 6 free
/// coordinates).
pub const MAX_CORNERS: usize = 64;

/// Appends the boundary starts of `domain` to `starts`: its corners (all 2^m of its m free
/// coordinates, lo < hi, when 2^m ≤ [`MAX_CORNERS`]; else [`MAX_CORNERS`] corners drawn from
/// `seed`), then, for m ≥ 2, the centres of its 2m faces. A UCB or a variance that grows towards the
/// boundary, away from the data, often peaks on a face or at a corner, which space-filling
/// points only approach (about one in 2^d of them lies within a quarter of the width of a
/// given corner in every coordinate).
fn boundary_starts(domain: &BoxDomain, seed: u64, starts: &mut Vec<f64>) {
    let (lo, hi) = (domain.lo(), domain.hi());
    let free: Vec<usize> = (0..domain.dim()).filter(|&i| lo[i] < hi[i]).collect();
    let m = free.len();
    if m == 0 {
        return;
    }
    let all = m < usize::BITS as usize && (1usize << m) <= MAX_CORNERS;
    let corners = if all { 1usize << m } else { MAX_CORNERS };
    for k in 0..corners {
        let mut x = lo.to_vec();
        for (j, &i) in free.iter().enumerate() {
            let upper = if all {
                (k >> j) & 1 == 1
            } else {
                round_seed(seed, k, j) & 1 == 1
            };
            if upper {
                x[i] = hi[i];
            }
        }
        starts.extend_from_slice(&x);
    }
    if m == 1 {
        // The two faces of a segment are its corners.
        return;
    }
    let centre: Vec<f64> = lo
        .iter()
        .zip(hi)
        .map(|(&l, &h)| (l + 0.5 * (h - l)).clamp(l, h))
        .collect();
    for &i in &free {
        for bound in [lo[i], hi[i]] {
            let mut x = centre.clone();
            x[i] = bound;
            starts.extend_from_slice(&x);
        }
    }
}

/// Indices of the `count` largest values, largest first, lowest index among ties.
fn best_indices(values: &[f64], count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    order.truncate(count);
    order
}

/// Refines the starts `chosen` (indices into the row-major `starts`) by `refine_one`, spread
/// over the cores with the `parallel` feature for posteriors of `observations` large enough to
/// pay for it (each refinement is sequential and deterministic, so the results are the same
/// bits either way); the first error in the order of `chosen`.
fn refine_all(
    domain: &BoxDomain,
    starts: &[f64],
    chosen: &[usize],
    observations: usize,
    refine_one: impl Fn(usize, &[f64]) -> Result<crate::continuous::Maximum> + Sync,
) -> Result<Vec<crate::continuous::Maximum>> {
    refine_each(domain, starts, chosen, observations, refine_one)
        .into_iter()
        .collect()
}

/// [`refine_all`] with every refinement's own result, in the order of `chosen`.
fn refine_each(
    domain: &BoxDomain,
    starts: &[f64],
    chosen: &[usize],
    observations: usize,
    refine_one: impl Fn(usize, &[f64]) -> Result<crate::continuous::Maximum> + Sync,
) -> Vec<Result<crate::continuous::Maximum>> {
    let d = domain.dim();
    let mut slots: Vec<Option<Result<crate::continuous::Maximum>>> = vec![None; chosen.len()];
    // About 50 objective calls of O(t²) each per refinement.
    let work = 50 * observations * observations;
    crate::parallel::for_each_chunk(&mut slots, 1, work, |i, slot| {
        let j = chosen[i];
        slot[0] = Some(refine_one(i, &starts[j * d..(j + 1) * d]));
    });
    slots
        .into_iter()
        .map(|s| s.expect("every slot is filled"))
        .collect()
}

/// Refines `start` on `objective` with [`refine`] for at most `max_iterations` iterations.
fn refine_on(
    domain: &BoxDomain,
    start: &[f64],
    max_iterations: usize,
    objective: &(impl Fn(&[f64]) -> Result<(f64, Vec<f64>)> + ?Sized),
) -> Result<crate::continuous::Maximum> {
    let mut f = |x: &[f64]| objective(x);
    refine(
        domain,
        start,
        &mut f,
        &RefineOptions {
            max_iterations,
            ..RefineOptions::default()
        },
    )
}

/// The term of `among` with the smallest value, the first among ties (a NaN never replaces
/// the first); `None` if `among` is empty.
fn lowest_term(values: &[f64], among: impl Iterator<Item = usize>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for r in among {
        if best.is_none_or(|b| values[r] < values[b]) {
            best = Some(r);
        }
    }
    best
}

/// Refines the starts `chosen` (indices of row-major `starts`) on the UCB
/// U = min_r U_r ([`ConfidenceBound::ucb_terms`] > 1) by active sets of terms: each start's
/// [`refine`] runs on min_{r ∈ S} U_r, with S first the term attaining U at the start; at the
/// point reached, every term is evaluated, and if one outside S is at or below min_S there, it
/// joins S and that refinement goes on from that point (at most once per term, within
/// `max_iterations` in all). When one ends, min_S = U at the point returned and every term
/// outside S is strictly above it, hence above min_S in a neighbourhood: a local maximiser of
/// min_S there is one of U. Each step computes the terms of S only (one forward substitution
/// each for DMM-UCB) rather than all of them.
///
/// The refinements run in rounds, and the terms at the points of a round's refinements that
/// moved are computed together ([`ConfidenceBound::ucb_term_values_at`]: each of DMM-UCB's
/// factors read once for them all, the bits of [`ConfidenceBound::ucb_term_values`] at each),
/// so every refinement follows the path it would alone. `at_starts[i]` holds the terms at
/// start `chosen[i]` as [`ConfidenceBound::top_ucb_with_terms`] ranked it; the terms at a
/// point a refinement returns unmoved (bitwise) are those already known there, not computed
/// again.
///
/// One result per start, in order: [`Maximum::value`](crate::continuous::Maximum::value) is U
/// at the point (the minimum of every term),
/// [`Maximum::converged`](crate::continuous::Maximum::converged) whether the last refinement
/// converged with S complete there; an error stops that start's refinement only.
fn refine_ucb_terms<B: ConfidenceBound + ?Sized>(
    bound: &B,
    domain: &BoxDomain,
    starts: &[f64],
    chosen: &[usize],
    at_starts: Vec<Vec<f64>>,
    max_iterations: usize,
) -> Vec<Result<crate::continuous::Maximum>> {
    let (d, count) = (domain.dim(), bound.ucb_terms());
    let mut paths: Vec<TermPath> = at_starts
        .into_iter()
        .map(|at_start| TermPath::new(at_start, count, max_iterations))
        .collect();
    let mut from: Vec<Vec<f64>> = chosen
        .iter()
        .map(|&j| starts[j * d..(j + 1) * d].to_vec())
        .collect();
    let mut results: Vec<Option<Result<crate::continuous::Maximum>>> = vec![None; chosen.len()];
    loop {
        let active: Vec<usize> = (0..chosen.len())
            .filter(|&i| results[i].is_none())
            .collect();
        if active.is_empty() {
            break;
        }
        let points: Vec<f64> = active
            .iter()
            .flat_map(|&i| from[i].iter().copied())
            .collect();
        let order: Vec<usize> = (0..active.len()).collect();
        let found = refine_each(domain, &points, &order, bound.len(), |k, x| {
            let path = &paths[active[k]];
            refine_on(
                domain,
                x,
                max_iterations - path.iterations,
                &|y: &[f64]| bound.ucb_gradient_among(y, &path.terms),
            )
        });
        // The terms at the points that moved, all at once.
        let (moved, at_moved): (Vec<usize>, _) = {
            let points: Vec<(usize, &[f64])> = found
                .iter()
                .enumerate()
                .filter_map(|(k, f)| match f {
                    Ok(m) if m.point != from[active[k]] => Some((k, m.point.as_slice())),
                    _ => None,
                })
                .collect();
            let refs: Vec<&[f64]> = points.iter().map(|&(_, x)| x).collect();
            let values = bound.ucb_term_values_at(&refs);
            (points.into_iter().map(|(k, _)| k).collect(), values)
        };
        let expected = moved.len();
        let got = at_moved.len();
        let mut at_moved = at_moved.into_iter();
        for (k, found) in found.into_iter().enumerate() {
            let i = active[k];
            let found = match found {
                Ok(found) => found,
                Err(e) => {
                    results[i] = Some(Err(e));
                    continue;
                }
            };
            let values = if moved.contains(&k) {
                match at_moved.next() {
                    Some(Ok(values)) => Some(values),
                    Some(Err(e)) => {
                        results[i] = Some(Err(e));
                        continue;
                    }
                    // A bound whose `ucb_term_values_at` broke its contract.
                    None => {
                        results[i] = Some(Err(Error::LengthMismatch {
                            what: "UCB term values, one result per point",
                            expected,
                            got,
                        }));
                        continue;
                    }
                }
            } else {
                None
            };
            match paths[i].absorb(found, values) {
                Ok(done) => results[i] = Some(Ok(done)),
                Err(point) => from[i] = point,
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.expect("every refinement ends"))
        .collect()
}

/// One start's refinement by active sets of terms ([`refine_ucb_terms`]).
struct TermPath {
    /// The number of terms.
    count: usize,
    /// The refinements' iterations allowed in all.
    max_iterations: usize,
    /// The first term of S, the one attaining U at the start.
    first: usize,
    /// S, ascending.
    terms: Vec<usize>,
    /// U at the start.
    start_value: f64,
    /// The terms at the point the next refinement starts from.
    known: Vec<f64>,
    iterations: usize,
    evaluations: usize,
}

impl TermPath {
    fn new(at_start: Vec<f64>, count: usize, max_iterations: usize) -> Self {
        let first = lowest_term(&at_start, 0..count).unwrap_or(0);
        Self {
            count,
            max_iterations,
            first,
            terms: vec![first],
            start_value: at_start.iter().copied().fold(f64::INFINITY, f64::min),
            known: at_start,
            iterations: 0,
            evaluations: 1,
        }
    }

    /// Takes the point a refinement on min_S reached and the terms there (`None`: it did not
    /// move, and they are the known ones): the result if the path ends there, else the point
    /// to go on from, with S grown.
    fn absorb(
        &mut self,
        found: crate::continuous::Maximum,
        values: Option<Vec<f64>>,
    ) -> std::result::Result<crate::continuous::Maximum, Vec<f64>> {
        self.iterations += found.iterations;
        self.evaluations += found.evaluations;
        let values = match values {
            Some(values) => {
                self.evaluations += 1;
                values
            }
            None => std::mem::take(&mut self.known),
        };
        let inside = lowest_term(&values, self.terms.iter().copied()).unwrap_or(self.first);
        let missing: Vec<usize> = (0..self.count)
            .filter(|r| {
                !self.terms.contains(r)
                    && values[*r].partial_cmp(&values[inside]) != Some(std::cmp::Ordering::Greater)
            })
            .collect();
        if missing.is_empty() || self.iterations >= self.max_iterations {
            return Ok(crate::continuous::Maximum {
                point: found.point,
                value: values.iter().copied().fold(f64::INFINITY, f64::min),
                start: 0,
                start_value: self.start_value,
                evaluations: self.evaluations,
                iterations: self.iterations,
                converged: found.converged && missing.is_empty(),
            });
        }
        self.terms.extend(missing);
        self.terms.sort_unstable();
        self.known = values;
        Err(found.point)
    }
}

/// The UCB point in `domain`: the best starts refined on U by its gradient; of the refined
/// points and the best starts, the one whose U (by `evaluate`) is largest and that is not
/// pending, so the value returned is never below that of a start that is not pending (to
/// rounding).
///
/// The starts are ranked by [`ConfidenceBound::top_ucb`], which for the exact bounds solves
/// only the starts that can rank among the best (the pruned search of `argmax_ucb`): the
/// `refine` best, and as many more as there are pending starts, so that the best start that
/// is not pending is always among them. Every other start has a U below all of theirs. For a
/// UCB of several terms (DMM-UCB's), [`ConfidenceBound::top_ucb_with_terms`] also gives the
/// terms at those starts, which the refinements begin from, and the refinements' term checks
/// are batched ([`refine_ucb_terms`]); the finalists are scored by one `evaluate` of the
/// distinct ones.
pub(crate) fn ucb_in<B: ConfidenceBound + ?Sized>(
    bound: &B,
    domain: &BoxDomain,
    options: &ContinuousOptions,
    starts: &[f64],
    pending: &PendingSet,
) -> Result<Choice> {
    let d = domain.dim();
    let points = Points::from_row_major(starts, d)?;
    let pending_starts = starts
        .chunks_exact(d)
        .filter(|x| pending.contains(x))
        .count();
    let wanted = options.refine + pending_starts;
    // For a UCB of several terms, the terms at the best starts come with the ranking (the
    // exact bounds solved those starts in every factor to rank them).
    let (top, at_starts) = if bound.ucb_terms() > 1 {
        let (top, mut terms) = bound.top_ucb_with_terms(&points, wanted)?;
        terms.truncate(options.refine);
        (top, Some(terms))
    } else {
        (bound.top_ucb(&points, wanted)?, None)
    };
    let chosen = &top[..options.refine.min(top.len())];
    let refined: Vec<crate::continuous::Maximum> = match at_starts {
        Some(at_starts) => refine_ucb_terms(
            bound,
            domain,
            starts,
            chosen,
            at_starts,
            options.max_iterations,
        )
        .into_iter()
        .collect::<Result<_>>()?,
        None => refine_all(domain, starts, chosen, bound.len(), |_, start| {
            refine_on(domain, start, options.max_iterations, &|x: &[f64]| {
                bound.ucb_gradient(x)
            })
        })?,
    };
    // The refined points and the best starts, scored together: the best that is not pending
    // (a pending point at the maximiser, say a corner the refinements converge onto, gives way
    // to the next best); in a box that is a single point, that point.
    let mut finalists = Vec::with_capacity((refined.len() + top.len()) * d);
    for refined in &refined {
        finalists.extend_from_slice(&refined.point);
    }
    for &j in &top {
        finalists.extend_from_slice(&starts[j * d..(j + 1) * d]);
    }
    let scores = ucb_of_distinct(bound, &finalists, d)?;
    max_finite(&scores, "upper confidence bound")?;
    let order = best_indices(&scores, scores.len());
    let best = order
        .iter()
        .copied()
        .find(|&j| !pending.contains(&finalists[j * d..(j + 1) * d]))
        .unwrap_or(order[0]);
    let (converged, iterations) = refined
        .get(best)
        .map_or((false, 0), |m| (m.converged, m.iterations));
    Ok(Choice {
        point: finalists[best * d..(best + 1) * d].to_vec(),
        ucb: scores[best],
        rule: Rule::Ucb,
        converged,
        iterations,
    })
}

/// [`ConfidenceBound::evaluate`]'s UCB at each of the row-major `points`, evaluating each
/// distinct point (bitwise) once: a refinement that returns its start unmoved (a corner, in
/// higher dimensions most of them) makes it a finalist twice, and DMM-UCB's evaluation of ten
/// points costs about twice that of five (4.7 ms at t = 1000). Each point's UCB does not
/// depend on the other points of the batch, so the values are those of one call on all.
fn ucb_of_distinct<B: ConfidenceBound + ?Sized>(
    bound: &B,
    points: &[f64],
    d: usize,
) -> Result<Vec<f64>> {
    use crate::continuous::maximise::same_point;
    let mut distinct: Vec<f64> = Vec::with_capacity(points.len());
    let mut slot = Vec::with_capacity(points.len() / d.max(1));
    for x in points.chunks_exact(d) {
        let found = distinct.chunks_exact(d).position(|y| same_point(x, y));
        slot.push(found.unwrap_or_else(|| {
            distinct.extend_from_slice(x);
            distinct.len() / d - 1
        }));
    }
    let ucb = bound.evaluate(&Points::from_row_major(&distinct, d)?)?.ucb;
    Ok(slot.into_iter().map(|k| ucb[k]).collect())
}

/// The further point of a batch rule: the best `options.refine` starts by `ranked` (−∞: not
/// admissible) are refined on `objective` (value and gradient); a refined point replaces its
/// start only if `keep` accepts it and its value is at least the start's. The best of those
/// (point, converged, iterations), the lowest start among ties; `None` if no start is
/// admissible.
fn best_refined<O, K>(
    domain: &BoxDomain,
    options: &ContinuousOptions,
    starts: &[f64],
    ranked: &[f64],
    observations: usize,
    objective: &O,
    keep: K,
) -> Result<Option<(Vec<f64>, bool, usize)>>
where
    O: Fn(&[f64]) -> Result<(f64, Vec<f64>)> + Sync + ?Sized,
    K: Fn(&[f64]) -> Result<bool>,
{
    let d = domain.dim();
    let chosen: Vec<usize> = best_indices(ranked, options.refine)
        .into_iter()
        .filter(|&j| ranked[j] > f64::NEG_INFINITY)
        .collect();
    let all_refined = refine_all(domain, starts, &chosen, observations, |_, start| {
        refine_on(domain, start, options.max_iterations, objective)
    })?;
    // (point, value, converged, iterations)
    let mut best: Option<(Vec<f64>, f64, bool, usize)> = None;
    for (&j, refined) in chosen.iter().zip(all_refined) {
        let candidate = if keep(&refined.point)? && refined.value >= ranked[j] {
            (
                refined.point,
                refined.value,
                refined.converged,
                refined.iterations,
            )
        } else {
            (starts[j * d..(j + 1) * d].to_vec(), ranked[j], false, 0)
        };
        if best.as_ref().is_none_or(|b| candidate.1 > b.1) {
            best = Some(candidate);
        }
    }
    Ok(best.map(|(point, _, converged, iterations)| (point, converged, iterations)))
}

/// The exploration point in `domain`: of the starts in the relevant region (not pending), the
/// best by variance given the pending points are refined on that variance; a refined point is
/// kept only if it is still in the region and not pending, else its start.
pub(crate) fn exploration_in<B: ConfidenceBound + ?Sized>(
    bound: &B,
    domain: &BoxDomain,
    options: &ContinuousOptions,
    starts: &[f64],
    pending: &PendingSet,
) -> Result<Choice> {
    let d = domain.dim();
    let points = Points::from_row_major(starts, d)?;
    let bounds = bound.evaluate(&points)?;
    let threshold = region_threshold(&bounds)?;
    let conditioned = bound.pending_variance(&pending.points()?)?;
    let variance = conditioned.variance(&points)?;
    let in_region = |ucb: f64, mean: f64| widened(ucb, mean) >= threshold;
    let admissible = |x: &[f64], ucb: f64, mean: f64| in_region(ucb, mean) && !pending.contains(x);
    let ranked: Vec<f64> = (0..starts.len() / d)
        .map(|j| {
            if admissible(&starts[j * d..(j + 1) * d], bounds.ucb[j], bounds.mean[j]) {
                variance[j]
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    let best = best_refined(
        domain,
        options,
        starts,
        &ranked,
        bound.len() + pending.len(),
        &|x: &[f64]| conditioned.variance_gradient(x),
        |x: &[f64]| {
            let at = bound.evaluate(&Points::from_row_major(x, d)?)?;
            Ok(admissible(x, at.ucb[0], at.mean[0]))
        },
    )?;
    // The start with the largest (capped) LCB is in the region, so `best` can only be missing
    // if every start of the region is pending: in a box that is a single point. That point,
    // then.
    let (point, converged, iterations) = match best {
        Some(best) => best,
        None => {
            let j = (0..variance.len())
                .filter(|&j| in_region(bounds.ucb[j], bounds.mean[j]))
                .max_by(|&a, &b| variance[a].total_cmp(&variance[b]).then(b.cmp(&a)))
                .unwrap_or(0);
            (starts[j * d..(j + 1) * d].to_vec(), false, 0)
        }
    };
    let ucb = bound.evaluate(&Points::from_row_major(&point, d)?)?.ucb[0];
    Ok(Choice {
        point,
        ucb,
        rule: Rule::Exploration,
        converged,
        iterations,
    })
}

/// r = ρ_P/ρ ∈ [0, 1] from the variances without (`alone`) and with (`given`) the pending points,
/// and its gradient from theirs: 1 where ρ² is not positive (nothing to shrink), clamped into
/// [0, 1] against rounding (ρ_P² ≤ ρ² exactly), with a zero gradient where clamped.
fn shrink_ratio(alone: (f64, &[f64]), given: (f64, &[f64])) -> (f64, Vec<f64>) {
    let ((v, grad_v), (vp, grad_vp)) = (alone, given);
    let zero = || vec![0.0; grad_v.len()];
    // A NaN or non-positive ρ², or ρ_P² ≥ ρ²: nothing to shrink.
    if v.is_nan() || v <= 0.0 || vp >= v {
        return (1.0, zero());
    }
    if vp <= 0.0 {
        return (0.0, zero());
    }
    let r = (vp / v).sqrt();
    // ∇√(vp/v) = (∇vp/v − vp∇v/v²)/(2r).
    let gradient = grad_vp
        .iter()
        .zip(grad_v)
        .map(|(gp, g)| (gp / v - vp * g / (v * v)) / (2.0 * r))
        .collect();
    (r, gradient)
}

/// GP-BUCB's score s = μ + (U − μ)·r at one point, from its bounds and the ratio r of
/// [`shrink_ratio`].
fn pending_score(ucb: f64, mean: f64, ratio: f64) -> f64 {
    mean + (ucb - mean) * ratio
}

/// GP-BUCB's score at `x` and its gradient: ∇s = ∇μ + (∇U − ∇μ)·r + (U − μ)·∇r, with r and
/// ∇r from [`shrink_ratio`] on the variances without (`alone`) and with (`given`) the pending
/// points.
///
/// # Errors
/// As [`ConfidenceBound::gradient`] and [`crate::bound::PendingVariance::variance_gradient`].
fn pending_score_gradient<B: ConfidenceBound + ?Sized>(
    bound: &B,
    alone: &dyn crate::bound::PendingVariance,
    given: &dyn crate::bound::PendingVariance,
    x: &[f64],
) -> Result<(f64, Vec<f64>)> {
    let at = bound.gradient(x)?;
    let (v, grad_v) = alone.variance_gradient(x)?;
    let (vp, grad_vp) = given.variance_gradient(x)?;
    let (ratio, grad_ratio) = shrink_ratio((v, &grad_v), (vp, &grad_vp));
    let width = at.ucb - at.mean;
    let gradient = (0..x.len())
        .map(|i| {
            at.mean_gradient[i]
                + (at.ucb_gradient[i] - at.mean_gradient[i]) * ratio
                + width * grad_ratio[i]
        })
        .collect();
    Ok((pending_score(at.ucb, at.mean, ratio), gradient))
}

/// The GP-BUCB point in `domain` (Desautels, Krause & Burdick 2014, Eq. 5; see the module
/// documentation): of the starts that are not pending, the best by the score
/// s = μ + (U − μ)·ρ_P/ρ are refined on s by its gradient; a refined point is kept only if it
/// is not pending and scores at least its start, else its start. In a box that is a single
/// (pending) point, that point.
pub(crate) fn pending_ucb_in<B: ConfidenceBound + ?Sized>(
    bound: &B,
    domain: &BoxDomain,
    options: &ContinuousOptions,
    starts: &[f64],
    pending: &PendingSet,
) -> Result<Choice> {
    let d = domain.dim();
    let points = Points::from_row_major(starts, d)?;
    let bounds = bound.evaluate(&points)?;
    let given = bound.pending_variance(&pending.points()?)?;
    let alone = bound.pending_variance(&Points::from_row_major(&[], d)?)?;
    let (variance_given, variance_alone) = (given.variance(&points)?, alone.variance(&points)?);
    let ranked: Vec<f64> = (0..starts.len() / d)
        .map(|j| {
            if pending.contains(&starts[j * d..(j + 1) * d]) {
                f64::NEG_INFINITY
            } else {
                let (ratio, _) = shrink_ratio((variance_alone[j], &[]), (variance_given[j], &[]));
                pending_score(bounds.ucb[j], bounds.mean[j], ratio)
            }
        })
        .collect();
    max_finite(&ranked, "GP-BUCB score")?;
    let best = best_refined(
        domain,
        options,
        starts,
        &ranked,
        bound.len() + pending.len(),
        &|x: &[f64]| pending_score_gradient(bound, &*alone, &*given, x),
        |x: &[f64]| Ok(!pending.contains(x)),
    )?;
    // Only when every start is pending: in a box that is a single point. That point, then.
    let (point, converged, iterations) = best.unwrap_or((starts[..d].to_vec(), false, 0));
    let ucb = bound.evaluate(&Points::from_row_major(&point, d)?)?.ucb[0];
    Ok(Choice {
        point,
        ucb,
        rule: Rule::PendingUcb,
        converged,
        iterations,
    })
}

impl<B: ConfidenceBound> UcbAgent<B> {
    /// Sets how [`BanditAgent::select_in`] searches a box (see [`ContinuousOptions`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for zero starts or zero refinements.
    pub fn with_continuous(mut self, options: ContinuousOptions) -> Result<Self> {
        options.check()?;
        self.continuous = options;
        Ok(self)
    }

    /// How [`BanditAgent::select_in`] searches a box.
    pub fn continuous(&self) -> ContinuousOptions {
        self.continuous
    }

    pub(super) fn select_in_inner(&mut self, domain: &BoxDomain) -> Result<Choice> {
        self.check_domain(domain)?;
        self.check_specified()?;
        let choice = self.choose_in(domain)?;
        self.pending_set.handed_out(&choice.point, choice.rule);
        Ok(choice)
    }

    pub(super) fn select_batch_in_inner(
        &mut self,
        domain: &BoxDomain,
        q: usize,
    ) -> Result<Vec<Choice>> {
        check_batch(q)?;
        self.check_domain(domain)?;
        self.check_specified()?;
        if q > 1 {
            self.check_pending_support(domain.dim())?;
        }
        let saved = self.pending_set.clone();
        let mut out = Vec::new();
        for _ in 0..q {
            let added = self.choose_in(domain).and_then(|choice| {
                self.pending_set.handed_out(&choice.point, choice.rule);
                self.pending_set.add(&choice.point)?;
                Ok(choice)
            });
            match added {
                Ok(choice) => out.push(choice),
                Err(e) => {
                    self.pending_set = saved;
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    pub(super) fn select_batch_inner(&mut self, arms: &Points<'_>, q: usize) -> Result<Vec<usize>> {
        check_batch(q)?;
        if arms.is_empty() {
            return Err(Error::NoArms);
        }
        if let Some(expected) = self.pending_set.dim()
            && expected != arms.dim()
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: arms.dim(),
            });
        }
        if q > 1 {
            self.check_pending_support(arms.dim())?;
        }
        let saved = (self.pending_set.clone(), self.remembered());
        let mut out = Vec::new();
        let mut scratch = vec![0.0; arms.dim()];
        for _ in 0..q {
            let added = self.select_from(arms).and_then(|i| {
                self.pending_set.add(arms.point(i, &mut scratch))?;
                Ok(i)
            });
            match added {
                Ok(i) => out.push(i),
                Err(e) => {
                    self.pending_set = saved.0;
                    self.restore_remembered(saved.1);
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// [`Error::Unsupported`] if the bound has no variance given pending points (a bound of the
    /// user's own, say), before anything changes.
    fn check_pending_support(&self, dim: usize) -> Result<()> {
        self.bound()
            .pending_variance(&Points::from_row_major(&[], dim.max(1))?)
            .map(|_| ())
    }

    pub(super) fn pending_inner(&mut self, x: &[f64]) -> Result<()> {
        let expected = self.bound().dim().or(self.pending_set.dim());
        check_point(x, expected, "pending point")?;
        self.check_pending_support(x.len())?;
        self.pending_set.add(x)
    }

    pub(super) fn withdraw_inner(&mut self, x: &[f64]) -> Result<()> {
        if self.pending_set.remove(x) {
            Ok(())
        } else {
            Err(Error::NotPending {
                what: format!("{x:?}"),
            })
        }
    }

    /// The pending evaluations, oldest first.
    pub fn pending_points(&self) -> Vec<Vec<f64>> {
        (0..self.pending_set.len())
            .map(|i| self.pending_set.point(i).to_vec())
            .collect()
    }

    fn check_domain(&self, domain: &BoxDomain) -> Result<()> {
        let expected = self.bound().dim().or(self.pending_set.dim());
        if let Some(expected) = expected
            && expected != domain.dim()
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: domain.dim(),
            });
        }
        Ok(())
    }

    /// The starts the next [`BanditAgent::select_in`] (or the next point of
    /// [`BanditAgent::select_batch_in`]) scores, row-major: [`ContinuousOptions::starts`]
    /// points of [`BoxDomain::space_filling`] with a seed mixed from
    /// [`ContinuousOptions::seed`], the number of observations and the number of pending points;
    /// then the box's corners (all 2^m of its m coordinates with lo < hi when m ≤ 6, else
    /// [`MAX_CORNERS`] drawn from that seed) and, for m ≥ 2, the centres of its 2m faces; then,
    /// for a UCB
    /// point, the last UCB point if it is in the box.
    ///
    /// A UCB point has a UCB at least that of each of them that is not pending; an exploration
    /// point has a variance given the pending points at least that of each of them that is
    /// admissible (in the relevant region and not pending), both to rounding (see
    /// [`BanditAgent::select_in`]).
    pub fn next_starts(&self, domain: &BoxDomain) -> Vec<f64> {
        let seed = round_seed(
            self.continuous.seed,
            self.bound().len(),
            self.pending_set.len(),
        );
        let mut starts = domain.space_filling(self.continuous.starts, seed);
        boundary_starts(domain, seed, &mut starts);
        if !self.pending_set.explore_next()
            && let Some(w) = self
                .pending_set
                .last_ucb_pick
                .as_deref()
                .filter(|w| domain.contains(w))
        {
            starts.extend_from_slice(w);
        }
        starts
    }

    fn choose_in(&self, domain: &BoxDomain) -> Result<Choice> {
        let starts = self.next_starts(domain);
        if !self.pending_set.explore_next() {
            return ucb_in(
                self.bound(),
                domain,
                &self.continuous,
                &starts,
                &self.pending_set,
            );
        }
        match self.continuous.batch_rule {
            BatchRule::PendingUcb => pending_ucb_in(
                self.bound(),
                domain,
                &self.continuous,
                &starts,
                &self.pending_set,
            ),
            BatchRule::Exploration => exploration_in(
                self.bound(),
                domain,
                &self.continuous,
                &starts,
                &self.pending_set,
            ),
        }
    }
}

pub(crate) fn check_batch(q: usize) -> Result<()> {
    if q == 0 || q > MAX_BATCH {
        Err(Error::InvalidParameter {
            name: "q",
            value: q as f64,
            expected: "a batch of 1 to 65536 points",
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::{BoundParams, Dmm};
    use crate::kernel::Matern;

    /// The gradient of GP-BUCB's score against central differences of its value, next to a
    /// pending point (where the ratio ρ_P/ρ moves fastest) and away from it, on DMM-UCB (a
    /// minimum over regularisers: points where the active one changes are avoided by the
    /// differences' agreement check on both sides).
    #[test]
    fn pending_score_gradient_matches_central_differences() {
        let params = BoundParams::new()
            .sigma(0.1)
            .norm_bound(2.0)
            .delta(0.05)
            .scale(1.0);
        let mut bound = Dmm::new(Matern::new(2.5, 0.4).unwrap(), params).unwrap();
        for x in [[0.1, 0.2], [0.7, 0.4], [0.3, 0.9], [0.55, 0.6]] {
            bound.observe(&x, x[0] - x[1]).unwrap();
        }
        let pending = [0.42, 0.37];
        let given = bound
            .pending_variance(&Points::from_row_major(&pending, 2).unwrap())
            .unwrap();
        let alone = bound
            .pending_variance(&Points::from_row_major(&[], 2).unwrap())
            .unwrap();
        let value = |x: &[f64]| {
            pending_score_gradient(&bound, &*alone, &*given, x)
                .unwrap()
                .0
        };
        let mut checked = 0;
        for x in [
            [0.43, 0.36],
            [0.45, 0.40],
            [0.40, 0.30],
            [0.9, 0.1],
            [0.2, 0.6],
        ] {
            let (_, gradient) = pending_score_gradient(&bound, &*alone, &*given, &x).unwrap();
            for i in 0..2 {
                let h = 1e-6;
                let (mut up, mut down) = (x, x);
                up[i] += h;
                down[i] -= h;
                let central = (value(&up) - value(&down)) / (2.0 * h);
                let forward = (value(&up) - value(&x)) / h;
                let backward = (value(&x) - value(&down)) / h;
                // A kink of the minimum over regularisers between the two sides: skip.
                if (forward - backward).abs() > 1e-3 * (1.0 + central.abs()) {
                    continue;
                }
                checked += 1;
                assert!(
                    (gradient[i] - central).abs() <= 1e-5 * (1.0 + central.abs()),
                    "at {x:?}, coordinate {i}: gradient {} against {central}",
                    gradient[i]
                );
            }
        }
        assert!(checked >= 8, "only {checked} coordinates checked");
    }
}
