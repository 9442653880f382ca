//! BKB, the budgeted kernel bandit's bound (Calandriello et al. 2019).

use super::sketch::sketched_bounds;
use super::{Bounds, ConfidenceBound, SketchParams};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::points::Points;
use crate::posterior::SketchedPosterior;
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
}

impl<K: Kernel> Bkb<K> {
    /// BKB for `kernel` with `params` (see [`SketchParams`]); `seed` drives the dictionary
    /// sampling.
    ///
    /// # Errors
    /// Invalid parameters; [`crate::Error::MissingParameter`] without a fixed β̃ and without σ and B,
    /// or without q̄ and without the horizon to derive it.
    pub fn new(kernel: K, params: SketchParams, seed: u64) -> Result<Self> {
        params.check()?;
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
        })
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

    /// Absorbs (x, y) and resamples the dictionary.
    ///
    /// # Errors
    /// As [`SketchedPosterior::observe`]; the bound is unchanged on error (except for the
    /// generator's state when the rebuild fails).
    fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        let before = self.posterior.len();
        self.posterior.observe(x, y)?;
        if let Err(error) = self.resample() {
            self.truncate(before);
            return Err(error);
        }
        Ok(())
    }

    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
        sketched_bounds(self.posterior.evaluate(points)?, self.width())
    }

    /// The sketched queries cost O(m²) per point whatever t is: no pruning to gain.
    fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize> {
        self.evaluate(points)?.argmax_ucb()
    }

    fn len(&self) -> usize {
        self.posterior.len()
    }

    fn dim(&self) -> Option<usize> {
        self.posterior.dim()
    }

    /// Forgets the observations after the first `len` exactly. BKB's dictionary is random and
    /// not a function of the data, so the one in use is kept, restricted to the arms that
    /// remain; the next update resamples it as usual.
    fn truncate(&mut self, len: usize) {
        self.posterior.truncate(len);
        self.refresh_played_variance();
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
        )
    }
}
