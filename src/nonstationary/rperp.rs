//! R-PERP, restarting phased elimination with random permutation (Iwazaki & Takeno 2025 Alg. 1).

use super::{GreedyVariance, rperp_interval};
use crate::agent::BanditAgent;
use crate::error::{Error, Result, non_negative, positive};
use crate::kernel::Kernel;
use crate::points::{AsPoints, Points};
use crate::rng::SeededRng;

/// Settings of [`RPerp`].
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `horizon` (T) | required | ≥ 2 | total rounds; intervals after T keep length H |
/// | `noise` (ρ) | 0.1 | (0, ∞) | the noise is ρ-sub-Gaussian |
/// | `lambda` (λ) | ρ² | (0, ∞) | GP noise of the batch posteriors |
/// | `norm_bound` (B) | 1 | [0, ∞) | ‖f_t‖_H ≤ B |
/// | `delta` (δ) | 0.1 | (0, 1) | failure probability of Eq. 8 |
/// | `constant` (C) | 1 | (0, ∞) | the absolute constant C of Eq. 8 |
/// | `width_scale` | 1 | (0, ∞) | multiplies β^{1/2}; 1 is Eq. 8, which eliminates nothing on the problem of Iwazaki & Takeno (2025, §6); 0.1 is a practical width |
/// | `width` | Eq. 8 | (0, ∞) | sets β^{1/2} directly (then `width_scale` still applies) |
/// | `variation` (V_T) | 1 (App. D) | (0, ∞) | total variation, for Thm 5's H |
/// | `interval` (H) | Thm 5 | [1, T] | restart interval; overrides Thm 5 |
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RPerpParams {
    horizon: usize,
    noise: f64,
    lambda: Option<f64>,
    norm_bound: f64,
    delta: f64,
    constant: f64,
    width_scale: f64,
    width: Option<f64>,
    variation: f64,
    interval: Option<usize>,
}

impl RPerpParams {
    /// The defaults of the table for horizon T.
    pub fn new(horizon: usize) -> Self {
        Self {
            horizon,
            noise: 0.1,
            lambda: None,
            norm_bound: 1.0,
            delta: 0.1,
            constant: 1.0,
            width_scale: 1.0,
            width: None,
            variation: 1.0,
            interval: None,
        }
    }

    /// Sets ρ.
    pub fn noise(mut self, noise: f64) -> Self {
        self.noise = noise;
        self
    }

    /// Sets λ.
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = Some(lambda);
        self
    }

    /// Sets B.
    pub fn norm_bound(mut self, norm_bound: f64) -> Self {
        self.norm_bound = norm_bound;
        self
    }

    /// Sets δ.
    pub fn delta(mut self, delta: f64) -> Self {
        self.delta = delta;
        self
    }

    /// Sets Eq. 8's constant C.
    pub fn constant(mut self, constant: f64) -> Self {
        self.constant = constant;
        self
    }

    /// Multiplies β^{1/2} by `scale`.
    pub fn width_scale(mut self, scale: f64) -> Self {
        self.width_scale = scale;
        self
    }

    /// Sets β^{1/2} directly.
    pub fn width(mut self, width: f64) -> Self {
        self.width = Some(width);
        self
    }

    /// Sets V_T (for Thm 5's H).
    pub fn variation(mut self, variation: f64) -> Self {
        self.variation = variation;
        self
    }

    /// Sets H directly.
    pub fn interval(mut self, interval: usize) -> Self {
        self.interval = Some(interval);
        self
    }

    /// λ: the one set, or ρ².
    fn effective_lambda(&self) -> f64 {
        self.lambda.unwrap_or(self.noise * self.noise)
    }

    /// Validates the settings (V_T is checked where Thm 5's H is derived from it).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if T < 2, ρ, λ, C, the width scale or a set width is not
    /// finite and positive, B is negative or not finite, δ ∉ (0, 1), or a set H ∉ [1, T].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::nonstationary::RPerpParams;
    /// assert!(RPerpParams::new(1000).noise(0.1).check().is_ok());
    /// assert!(RPerpParams::new(1000).interval(2000).check().is_err());
    /// ```
    pub fn check(&self) -> Result<()> {
        if self.horizon < 2 {
            return Err(Error::InvalidParameter {
                name: "horizon",
                value: self.horizon as f64,
                expected: "T ≥ 2",
            });
        }
        positive("noise", self.noise)?;
        positive("lambda", self.effective_lambda())?;
        non_negative("norm_bound", self.norm_bound)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(Error::InvalidParameter {
                name: "delta",
                value: self.delta,
                expected: "a number in (0, 1)",
            });
        }
        positive("constant", self.constant)?;
        positive("width_scale", self.width_scale)?;
        if let Some(width) = self.width {
            positive("width", width)?;
        }
        if let Some(h) = self.interval
            && !(1..=self.horizon).contains(&h)
        {
            return Err(Error::InvalidParameter {
                name: "interval",
                value: h as f64,
                expected: "an integer in [1, T]",
            });
        }
        Ok(())
    }
}

/// One elimination: which interval and batch, the batch size, and how many arms were
/// potential maximisers before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Elimination {
    /// Interval index i (0-based).
    pub interval: usize,
    /// Batch index j within the interval (0-based).
    pub batch: usize,
    /// N_j.
    pub batch_size: usize,
    /// |X_j|.
    pub before: usize,
    /// |X_{j+1}|.
    pub kept: usize,
}

/// R-PERP (Iwazaki & Takeno 2025 Alg. 1) on a fixed finite arm set.
///
/// Rounds are cut into intervals of length H; each interval restarts from all arms and runs
/// batches of sizes N_j = min(⌈√(T⁽ⁱ⁾N_{j−1})⌉, remaining), N₀ = 1 (line 5). A batch's points
/// are picked greedily by maximum posterior variance σ²(x; S) within the potential maximisers
/// X_j, given the points already picked (line 8; one rank-one update of every candidate's
/// variance per pick, see [`GreedyVariance`]), then played in a uniformly random order from
/// the seeded generator (line 11). After a batch that does not end the interval, the arms
/// with ucb_j(x) ≥ max lcb_j are kept (line 20), with μ and σ from this batch's data only
/// (GP noise λ) and width β^{1/2} of Eq. 8:
/// β^{1/2} = B(C/√λ·√ln(4|X|Q/δ) + 1) + (ρ/√λ)√(2 ln(4|X|Q/δ)), Q = ⌈T/H⌉(1 + log₂log₂H).
///
/// It has the [`BanditAgent`] surface: `select` returns the next planned arm (the same one
/// until `update` is called), `update` must report that arm; a different arm set or arm is
/// an error ([`Error::ArmSetChanged`], [`Error::UnplannedArm`]) and changes nothing.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RPerp<K> {
    gp: GreedyVariance<K>,
    params: RPerpParams,
    lambda: f64,
    interval_len: usize,
    width: f64,
    rng: SeededRng,
    /// Rounds played.
    rounds: usize,
    interval: usize,
    interval_start: usize,
    /// T⁽ⁱ⁾.
    this_interval: usize,
    played_in_interval: usize,
    batch_index: usize,
    previous_batch: usize,
    active: Vec<usize>,
    /// The batch in play order, and for each play its index in the greedy (chosen) order.
    plan: Vec<(usize, usize)>,
    position: usize,
    /// Targets of the batch, in chosen order.
    targets: Vec<f64>,
    eliminations: Vec<Elimination>,
    /// (interval, N_j) of every batch planned so far.
    batches: Vec<(usize, usize)>,
}

impl<K: Kernel> RPerp<K> {
    /// R-PERP on the fixed arm set `arms` with `params`; `seed` drives the play order.
    ///
    /// # Errors
    /// Invalid parameters or arms ([`Error::NoArms`], non-finite, dimension).
    pub fn new<A: AsPoints + ?Sized>(
        kernel: K,
        arms: &A,
        params: RPerpParams,
        seed: u64,
    ) -> Result<Self> {
        let arms = arms.as_points()?;
        params.check()?;
        let (noise, norm, constant) = (params.noise, params.norm_bound, params.constant);
        let lambda = params.effective_lambda();
        let interval_len = match params.interval {
            Some(h) => h,
            None => rperp_interval(
                kernel.smoothness(),
                arms.dim(),
                params.horizon,
                params.variation,
            )?,
        };
        let width = match params.width {
            Some(w) => w,
            None => {
                let (t, h) = (params.horizon as f64, interval_len as f64);
                let q = (t / h).ceil() * (1.0 + h.log2().max(1.0).log2());
                let log = (4.0 * arms.len() as f64 * q / params.delta).ln();
                norm * (constant / lambda.sqrt() * log.sqrt() + 1.0)
                    + noise / lambda.sqrt() * (2.0 * log).sqrt()
            }
        } * params.width_scale;
        let gp = GreedyVariance::new(kernel, &arms, lambda)?;
        let active = (0..gp.candidates()).collect();
        Ok(Self {
            gp,
            params,
            lambda,
            interval_len,
            width,
            rng: SeededRng::new(seed),
            rounds: 0,
            interval: 0,
            interval_start: 0,
            this_interval: interval_len.min(params.horizon),
            played_in_interval: 0,
            batch_index: 0,
            previous_batch: 1,
            active,
            plan: Vec::new(),
            position: 0,
            targets: Vec::new(),
            eliminations: Vec::new(),
            batches: Vec::new(),
        })
    }

    /// The restart interval H in use.
    pub fn interval_len(&self) -> usize {
        self.interval_len
    }

    /// β^{1/2} in use (after `width_scale`).
    pub fn width(&self) -> f64 {
        self.width
    }

    /// The GP noise λ.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// The parameters.
    pub fn params(&self) -> &RPerpParams {
        &self.params
    }

    /// The current potential maximisers X_j (arm indices).
    pub fn potential_maximisers(&self) -> &[usize] {
        &self.active
    }

    /// Every elimination so far, in order.
    pub fn eliminations(&self) -> &[Elimination] {
        &self.eliminations
    }

    /// (interval, batch size N_j) of every batch planned so far, in order.
    pub fn batches(&self) -> &[(usize, usize)] {
        &self.batches
    }

    /// The current batch's arms in play order (empty before the first `select`).
    pub fn batch(&self) -> Vec<usize> {
        self.plan.iter().map(|p| p.0).collect()
    }

    /// Checks that `arms` is the arm set the agent was built with, coordinate for coordinate.
    fn check_arms(&self, arms: &Points<'_>) -> Result<()> {
        let a = self.gp.candidates();
        if arms.len() != a {
            return Err(Error::ArmSetChanged {
                what: format!("{} arms offered, built with {a}", arms.len()),
            });
        }
        let mut mismatch = None;
        arms.for_each(|i, x| {
            if mismatch.is_none() && x != self.gp.candidate(i) {
                mismatch = Some(i);
            }
        });
        match mismatch {
            Some(i) => Err(Error::ArmSetChanged {
                what: format!("arm {i} differs"),
            }),
            None => Ok(()),
        }
    }

    /// Starts the next interval (line 1–3).
    fn next_interval(&mut self) {
        self.interval += 1;
        self.interval_start = self.rounds;
        let remaining = self.params.horizon.saturating_sub(self.rounds);
        self.this_interval = if remaining == 0 {
            self.interval_len
        } else {
            self.interval_len.min(remaining)
        };
        self.played_in_interval = 0;
        self.batch_index = 0;
        self.previous_batch = 1;
        self.active = (0..self.gp.candidates()).collect();
    }

    /// Plans the next batch (lines 5–11).
    fn plan_batch(&mut self) {
        if self.played_in_interval == self.this_interval {
            self.next_interval();
        }
        let remaining = self.this_interval - self.played_in_interval;
        let size = (((self.this_interval * self.previous_batch) as f64)
            .sqrt()
            .ceil() as usize)
            .clamp(1, remaining);
        self.batches.push((self.interval, size));
        self.gp.reset();
        for _ in 0..size {
            let j = self
                .gp
                .argmax_variance(&self.active)
                .expect("the potential maximisers are never empty");
            self.gp.choose(j);
        }
        let mut plan: Vec<(usize, usize)> = self
            .gp
            .chosen()
            .iter()
            .enumerate()
            .map(|(m, &j)| (j, m))
            .collect();
        self.rng.shuffle(&mut plan);
        self.plan = plan;
        self.position = 0;
        self.targets = vec![0.0; size];
    }

    /// After a batch: eliminate (lines 15–20).
    fn finish_batch(&mut self) {
        let size = self.plan.len();
        self.previous_batch = size;
        if self.played_in_interval < self.this_interval {
            // A mean that overflows (targets ≈ 10³⁰⁸ against a tiny λ) eliminates nothing.
            let mean = self
                .gp
                .mean(&self.targets)
                .unwrap_or_else(|_| vec![f64::NAN; self.gp.candidates()]);
            let spread: Vec<f64> = self
                .gp
                .variances()
                .iter()
                .map(|v| self.width * v.sqrt())
                .collect();
            let best_lcb = self
                .active
                .iter()
                .map(|&c| mean[c] - spread[c])
                .fold(f64::NEG_INFINITY, f64::max);
            let before = self.active.len();
            // Targets so large that the batch's mean overflows (≈ 10³⁰⁸) leave nothing to
            // compare: keep every arm rather than eliminate on NaN.
            let finite = self
                .active
                .iter()
                .all(|&c| (mean[c] - spread[c]).is_finite() && (mean[c] + spread[c]).is_finite());
            if finite {
                self.active.retain(|&c| mean[c] + spread[c] >= best_lcb);
            }
            self.eliminations.push(Elimination {
                interval: self.interval,
                batch: self.batch_index,
                batch_size: size,
                before,
                kept: self.active.len(),
            });
        }
        self.batch_index += 1;
        self.plan.clear();
        self.position = 0;
    }
}

impl<K: Kernel> BanditAgent for RPerp<K> {
    fn name(&self) -> String {
        "r-perp".into()
    }

    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        if arms.is_empty() {
            return Err(Error::NoArms);
        }
        self.check_arms(arms)?;
        if self.position == self.plan.len() {
            self.plan_batch();
        }
        Ok(self.plan[self.position].0)
    }

    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        let Some(&(arm, slot)) = self.plan.get(self.position) else {
            return Err(Error::UnplannedArm {
                what: "no arm is planned: call select first".into(),
            });
        };
        if x != self.gp.candidate(arm) {
            return Err(Error::UnplannedArm {
                what: format!("arm {arm} was planned"),
            });
        }
        if !y.is_finite() {
            return Err(Error::NonFinite {
                what: "observed target".into(),
            });
        }
        self.targets[slot] = y;
        self.position += 1;
        self.rounds += 1;
        self.played_in_interval += 1;
        if self.position == self.plan.len() {
            self.finish_batch();
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for RPerp<K> {
    fn kind() -> String {
        format!("r-perp<{}>", K::kind())
    }

    /// Checks the greedy state and every index into the arms, the plan and the batch.
    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::ensure;
        self.gp.restore()?;
        self.params
            .check()
            .map_err(crate::snapshot::rebuild_error("R-PERP parameters"))?;
        let arms = self.gp.candidates();
        ensure(
            self.interval_len > 0
                && self.width.is_finite()
                && self.width > 0.0
                && self.lambda.is_finite()
                && self.lambda > 0.0
                && self.active.iter().all(|&i| i < arms)
                && self
                    .plan
                    .iter()
                    .all(|&(arm, slot)| arm < arms && slot < self.targets.len())
                && self.position <= self.plan.len()
                && self.plan.len() == self.targets.len()
                && self.targets.iter().all(|y| y.is_finite()),
            || "R-PERP indices outside the arms, the plan or the batch".into(),
        )
    }
}
