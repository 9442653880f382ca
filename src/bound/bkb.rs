//! BKB, the budgeted kernel bandit's bound (Calandriello et al. 2019), and its batched form
//! BBKB (Calandriello et al. 2020).

use super::sketch::{sketched_bounds, sketched_gradient};
use super::{BatchFeedback, BoundGradient, Bounds, ConfidenceBound, PendingVariance, SketchParams};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::points::Points;
use crate::posterior::{BatchStart, SketchedPosterior};
use crate::rng::SeededRng;

/// BKB (Calandriello et al. 2019 Alg. 1, Eq. 4): the Nyström-sketched UCB ũ(x) = μ̃(x) + β̃σ̃(x),
/// with a dictionary resampled after every update from the arms played so far.
///
/// After each observation the dictionary is redrawn: Alg. 1 draws every *pull* independently
/// with probability p = min(1, q̄σ̃²(xᵢ)); with arms stored as counts, a distinct arm pulled cᵢ
/// times joins with the probability that at least one of its pulls is drawn, 1 − (1 − p)^{cᵢ}
/// (one draw per distinct arm, the same distribution of dictionaries; drawing each distinct
/// arm with probability p would undersample the arms played most). The first dictionary is
/// {x₁} (Alg. 1 line 2). The variances are the DTC variances under the current dictionary
/// with the new observation included (the paper uses those computed before it, which ignore
/// the last arm).
/// Arms are stored as counts per distinct arm, so a step costs O(min(t, A)m² + m³) and a
/// query O(m²) per arm (see [`SketchedPosterior`]).
///
/// Width: a fixed β̃ ([`SketchParams::beta`], the common practice), or Theorem 2's
/// β̃_t = 2ξ√(α ln(κ²t) Σ_s σ̃_t²(x_s) + ln(1/δ)) + (1 + 1/√(1 − ε))√λ F, with κ² the
/// largest k(x, x) seen and ln(κ²t) floored at 0. q̄ defaults to Theorem 1's
/// 6α ln(4T/δ)/ε² (which needs the horizon T), under which σ²/α ≤ σ̃² ≤ ασ² for all arms
/// with probability 1 − δ.
///
/// The dictionary is random, drawn from a ChaCha8 generator seeded by the user.
///
/// # Batches: BBKB
///
/// With [`SketchParams::batch_threshold`] C̃ this is BBKB, Calandriello et al. (2020) Alg. 1
/// with the global adaptive-batching rule of their Lemma 1 (the contextual CBBKB of Zenati et
/// al. 2022 §5 when the points are (context, action) pairs). A batch starts at a
/// resampling, at observation fb, with the posterior then (mean μ̃_fb, variance σ̃²_fb).
/// Inside the batch:
///
/// - every new point x_s enters V with the dictionary fixed (an O(m²) rank-one update), so the
///   variance σ̃_t is the one with the batch's points included — it needs no feedback;
/// - the mean stays μ̃_fb: the batch's targets are stored but used only when it ends, as if
///   the batch's feedback arrived together (Alg. 1 selects with μ̃_fb + β̃σ̃_t);
/// - the batch ends with the observation at which 1 + Σ_{s in batch} σ̃²_fb(x_s) > C̃ (strictly;
///   σ̃²_fb the variance at the batch start, Lemma 1's bound on σ̃²_fb/σ̃²_t). Then the
///   dictionary is resampled from every observation, as BKB's (inclusion with the current
///   variances, the whole batch included), the mean absorbs the batch's targets, and the next
///   batch starts.
///
/// Only then is the dictionary rebuilt (O(min(t, A)m² + m³)), about once per unit of
/// accumulated variance instead of every step. The first observation forms a batch of its own
/// (the dictionary {x₁}). C̃ < 1 ends every batch at once: exactly BKB (the same draws). A
/// batched BKB needs a fixed β̃: Calandriello et al. (2020)'s theoretical width inflates BKB's
/// by the batch ratio and is not implemented.
///
/// [`BatchFeedback::Immediate`] lets every target enter the mean at once instead (the
/// dictionary still changes only at batch ends): Zenati et al. (2022)'s CBBKB, which their
/// §5 compares in a sequential contextual bandit where feedback comes every round.
///
/// Two public implementations differ from the paper; we follow the paper. The authors'
/// `batch-bkb` (Carratino) resamples with the variances of the batch start rather than the
/// current ones (and its inclusion probability is q̄σ̃²·count, not 1 − (1 − q̄σ̃²)^count).
/// Zenati et al.'s CBBKB (criteo-research `Efficient-Kernel-UCB`) feeds every target back at
/// once (our [`BatchFeedback::Immediate`]), accumulates the current variance σ̃²_{t−1}(x_t)
/// rather than σ̃²_fb(x_t) (we keep σ̃²_fb in both modes), and ties its oversampling to the
/// threshold (q̄ = 10C̃).
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let params = SketchParams::new().lambda(0.01).beta(1.0).qbar(10.0);
/// let mut bkb = Bkb::new(Rbf::new(0.5)?, params, 7)?;
/// for x in [0.1, 0.5, 0.9, 0.5] {
///     bkb.observe(&[x], x.sin())?;
/// }
/// assert!(bkb.dictionary_size() <= 3); // three distinct arms
/// let b = bkb.bounds(&[[0.5], [0.3]])?;
/// assert!(b.lcb[0] < b.ucb[0]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bkb<K> {
    posterior: SketchedPosterior<K>,
    params: SketchParams,
    qbar: f64,
    /// (ξ, F) for Theorem 2's width; `None` for a fixed β̃.
    theory: Option<(f64, f64)>,
    rng: SeededRng,
    /// Σ_s σ̃_t²(x_s) over all observations, under the current dictionary.
    played_variance: f64,
    /// BBKB: the posterior's state at the start of the current batch (`None` without
    /// batches, or before the first observation).
    #[cfg_attr(feature = "serde", serde(default))]
    batch_start: Option<BatchStart>,
    /// BBKB: Σ σ̃²_fb(x_s) over the current batch's observations.
    #[cfg_attr(feature = "serde", serde(default))]
    batch_variance: f64,
    /// BBKB: number of observations in the current batch (0 right after a resampling).
    #[cfg_attr(feature = "serde", serde(default))]
    batch_len: usize,
    /// Number of dictionary resamplings so far.
    #[cfg_attr(feature = "serde", serde(default))]
    resamplings: usize,
}

impl<K: Kernel> Bkb<K> {
    /// BKB for `kernel` with `params` (see [`SketchParams`]); `seed` drives the dictionary
    /// sampling.
    ///
    /// # Errors
    /// Invalid parameters; [`crate::Error::MissingParameter`] without a fixed β̃ and without σ and B,
    /// without q̄ and without the horizon to derive it, or with a batch threshold C̃ ≥ 1 and
    /// no fixed β̃.
    pub fn new(kernel: K, params: SketchParams, seed: u64) -> Result<Self> {
        params.check()?;
        if params.batch_threshold.is_some_and(|c| c >= 1.0) && params.beta.is_none() {
            return Err(crate::Error::MissingParameter {
                name: "beta",
                hint: "batched BKB (BBKB) has no theoretical width here: set SketchParams::beta",
            });
        }
        let qbar = match params.qbar {
            Some(qbar) => qbar,
            None => {
                let horizon = params.required_horizon(
                    "qbar",
                    "set SketchParams::qbar, or SketchParams::horizon to derive Theorem 1's",
                )?;
                6.0 * params.alpha() * (4.0 * horizon / params.delta).ln()
                    / (params.epsilon * params.epsilon)
            }
        };
        Ok(Self {
            posterior: SketchedPosterior::new(kernel, params.lambda)?,
            theory: params.theory_inputs()?,
            params,
            qbar,
            rng: SeededRng::new(seed),
            played_variance: 0.0,
            batch_start: None,
            batch_variance: 0.0,
            batch_len: 0,
            resamplings: 0,
        })
    }

    /// BBKB's batch threshold C̃, if batched.
    pub fn batch_threshold(&self) -> Option<f64> {
        self.params.batch_threshold
    }

    /// BBKB: the observations in the current batch (whose targets the mean does not use yet)
    /// and their accumulated variance Σ σ̃²_fb(x_s). `(0, 0.0)` right after a resampling and
    /// always without batches.
    pub fn batch(&self) -> (usize, f64) {
        (self.batch_len, self.batch_variance)
    }

    /// How many times the dictionary has been resampled (once per observation without
    /// batches; once per batch with them).
    pub fn resamplings(&self) -> usize {
        self.resamplings
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// The oversampling q̄ in use.
    pub fn qbar(&self) -> f64 {
        self.qbar
    }

    /// The sketched posterior (dictionary, counts, embeddings).
    pub fn posterior(&self) -> &SketchedPosterior<K> {
        &self.posterior
    }

    /// Number of anchors in the dictionary.
    pub fn dictionary_size(&self) -> usize {
        self.posterior.dictionary_size()
    }

    /// The current β̃: fixed, or Theorem 2's.
    pub fn width(&self) -> f64 {
        match (self.params.beta, self.theory) {
            (Some(beta), _) => beta,
            (None, Some((xi, norm))) => {
                let p = &self.params;
                let t = self.posterior.len().max(1) as f64;
                // κ²: the largest k(x, x) over the observed points.
                let kappa_sq = self
                    .posterior
                    .prior_variances()
                    .iter()
                    .copied()
                    .fold(0.0, f64::max);
                let log_factor = (kappa_sq * t).ln().max(0.0);
                2.0 * xi * (p.alpha() * log_factor * self.played_variance - p.delta.ln()).sqrt()
                    + (1.0 + 1.0 / (1.0 - p.epsilon).sqrt()) * p.lambda.sqrt() * norm
            }
            (None, None) => unreachable!("checked in Bkb::new"),
        }
    }

    /// Draws the next dictionary (Alg. 1 lines 6–10) and rebuilds the sketch.
    fn resample(&mut self) -> Result<()> {
        let variances = self.posterior.stored_variances();
        let mut chosen = Vec::new();
        for (i, v) in variances.iter().enumerate() {
            let p = (self.qbar * v).min(1.0);
            let count = i32::try_from(self.posterior.count(i)).unwrap_or(i32::MAX);
            let p = 1.0 - (1.0 - p).powi(count);
            if self.rng.uniform() < p {
                chosen.push(i);
            }
        }
        if self.posterior.len() == 1 && chosen.is_empty() {
            chosen.push(0);
        }
        self.posterior.set_dictionary(&chosen)?;
        self.refresh_played_variance();
        self.resamplings += 1;
        Ok(())
    }

    /// BBKB's observation (see [`Bkb`]): x enters V; the batch ends, with a resampling, once
    /// 1 + Σ σ̃²_fb(x_s) > C̃.
    fn observe_batched(&mut self, x: &[f64], y: f64, threshold: f64) -> Result<()> {
        let before = self.posterior.len();
        let saved = (
            self.batch_start.clone(),
            self.batch_variance,
            self.batch_len,
        );
        let score = match &self.batch_start {
            Some(start) => {
                let prior = self.posterior.check_observation(x, y)?;
                let column = self.posterior.dictionary_column(x)?;
                let z = self.posterior.embed(&column);
                let score = self.posterior.variance_at_start(start, prior, &z);
                self.posterior.observe_embedded(x, y, prior, z)?;
                Some(score)
            }
            None => {
                self.posterior.observe(x, y)?;
                None
            }
        };
        self.batch_len += 1;
        let ends = match score {
            Some(score) => {
                self.batch_variance += score;
                1.0 + self.batch_variance > threshold
            }
            // The first observation is a batch of its own (the dictionary {x₁}).
            None => true,
        };
        if ends {
            if let Err(error) = self.resample() {
                self.posterior.truncate(before);
                (self.batch_start, self.batch_variance, self.batch_len) = saved;
                self.refresh_played_variance();
                return Err(error);
            }
            self.batch_start = Some(self.posterior.batch_start());
            self.batch_variance = 0.0;
            self.batch_len = 0;
        }
        Ok(())
    }

    /// Σ_s σ̃_t²(x_s) for Theorem 2 (only needed for the theoretical width).
    fn refresh_played_variance(&mut self) {
        if self.params.beta.is_none() {
            self.played_variance = self
                .posterior
                .stored_variances()
                .iter()
                .enumerate()
                .map(|(i, v)| self.posterior.count(i) as f64 * v)
                .sum();
        }
    }
}

impl<K: Kernel> ConfidenceBound for Bkb<K> {
    fn name(&self) -> &'static str {
        "bkb"
    }

    /// Absorbs (x, y) and resamples the dictionary (with a batch threshold: only when the
    /// batch ends, see [`Bkb`]).
    ///
    /// # Errors
    /// As [`SketchedPosterior::observe`]; the bound is unchanged on error (except for the
    /// generator's state when the rebuild fails).
    fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        if let Some(threshold) = self.params.batch_threshold {
            return self.observe_batched(x, y, threshold);
        }
        let before = self.posterior.len();
        self.posterior.observe(x, y)?;
        if let Err(error) = self.resample() {
            self.truncate(before);
            return Err(error);
        }
        Ok(())
    }

    /// μ̃ ± β̃σ̃; inside a BBKB batch the mean is the one at the batch start.
    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
        let batch = match (&self.batch_start, self.params.batch_feedback) {
            (Some(start), BatchFeedback::AtBatchEnd) => {
                self.posterior.evaluate_from(points, start)?
            }
            _ => self.posterior.evaluate(points)?,
        };
        sketched_bounds(batch, self.width())
    }

    /// μ̃ ± β̃σ̃ and their gradients, through the Nyström embedding (see
    /// [`SketchedPosterior`]'s formulas): ∇μ̃ = Jᵀ L_Z⁻ᵀ V⁻¹Φᵀy and
    /// ∇σ̃² = ∇k(x, x)/λ + 2Jᵀ L_Z⁻ᵀ(V⁻¹z(x) − z(x)/λ), J the rows ∂k(x, zᵢ)/∂x over the
    /// anchors; inside a BBKB batch the mean is the one at the batch start, as in
    /// [`ConfidenceBound::evaluate`]. β̃ does not depend on x. O(md) kernel gradients and
    /// O(m²).
    ///
    /// # Errors
    /// Invalid or wrong-dimension x; [`crate::Error::Unsupported`] for a kernel without
    /// gradients; as [`ConfidenceBound::evaluate`].
    fn gradient(&self, x: &[f64]) -> Result<BoundGradient> {
        let start = match (&self.batch_start, self.params.batch_feedback) {
            (Some(start), BatchFeedback::AtBatchEnd) => Some(start),
            _ => None,
        };
        sketched_gradient(self.posterior.gradient_at(x, start)?, self.width())
    }

    /// The DTC variance σ̃² (in the scale β̃ multiplies) given the pending inputs: they enter
    /// V = ΦᵀΦ + λI as observations would, with the dictionary fixed and the mean untouched —
    /// how BBKB treats a batch's points before their feedback (Calandriello et al. 2020
    /// Alg. 1). The dictionary BKB would resample after observing them is random and is not
    /// anticipated. O(p(m² + md)) for p pending points, then O(m²) per query.
    ///
    /// # Errors
    /// Pending points of the wrong dimension; non-finite kernel values.
    fn pending_variance<'a>(
        &'a self,
        pending: &Points<'_>,
    ) -> Result<Box<dyn PendingVariance + 'a>> {
        Ok(Box::new(self.posterior.pending(pending)?))
    }

    /// The sketched queries cost O(m²) per point whatever t is: no pruning to gain.
    fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize> {
        self.evaluate(points)?.argmax_ucb()
    }

    fn observations(&self) -> Result<super::Observations> {
        Ok(self.posterior.observations())
    }
    fn len(&self) -> usize {
        self.posterior.len()
    }

    fn dim(&self) -> Option<usize> {
        self.posterior.dim()
    }

    /// Forgets the observations after the first `len` exactly. BKB's dictionary is random and
    /// not a function of the data, so the one in use is kept, restricted to the arms that
    /// remain; the next update resamples it as usual. With batches, a truncation closes the
    /// current batch without resampling: the mean then uses every remaining target and a new
    /// batch starts.
    fn truncate(&mut self, len: usize) {
        if len >= self.posterior.len() {
            return;
        }
        self.posterior.truncate(len);
        self.refresh_played_variance();
        if self.params.batch_threshold.is_some() {
            self.batch_start = (!self.posterior.is_empty()).then(|| self.posterior.batch_start());
            self.batch_variance = 0.0;
            self.batch_len = 0;
        }
    }
}

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for Bkb<K> {
    fn kind() -> String {
        format!("bkb<{}>", K::kind())
    }

    fn restore(&mut self) -> Result<()> {
        self.posterior.restore()?;
        self.params
            .check()
            .map_err(crate::snapshot::rebuild_error("BKB parameters"))?;
        let theory_ok = self
            .theory
            .is_none_or(|(xi, f)| xi.is_finite() && xi > 0.0 && f.is_finite() && f > 0.0);
        crate::snapshot::ensure(
            self.qbar.is_finite()
                && self.qbar > 0.0
                && theory_ok
                && self.played_variance.is_finite(),
            || "BKB parameters out of range".into(),
        )?;
        let m = self.posterior.dictionary_size();
        let batched = self.params.batch_threshold.is_some();
        crate::snapshot::ensure(
            self.batch_variance.is_finite()
                && self.batch_variance >= 0.0
                && self.batch_len <= self.posterior.len()
                && match &self.batch_start {
                    Some(start) => batched && start.fits(m),
                    None => !batched || self.posterior.is_empty(),
                },
            || format!("BBKB batch state for {m} anchors"),
        )
    }
}
