//! EK-UCB, efficient kernel UCB with an incrementally grown Nyström dictionary (Zenati et al. 2022).

use super::sketch::{sketched_bounds, sketched_gradient};
use super::{BoundGradient, Bounds, ConfidenceBound, PendingVariance, SketchParams};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::linalg::dot;
use crate::points::Points;
use crate::posterior::SketchedPosterior;
use crate::rng::SeededRng;
use faer::Mat;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;

/// EK-UCB (Zenati et al. 2022 Alg. 2, Prop. 4.2): the sketched UCB μ̃(x) + β̃σ̃(x) over a
/// dictionary that only grows, by Kernel Online Row Sampling (KORS, Zenati et al. 2022 App. E.3).
///
/// Each observation s is first offered to KORS: with S = diag(1/√p̃) over the anchors (p̃ the
/// probability each was added with) and s itself temporarily added with weight 1, the ridge
/// leverage estimate is
/// τ̃ = ((1 + ε)/μ)(k(s, s) − k_{Z*}(s)ᵀS(SᵀK_{Z*Z*}S + μI)⁻¹Sᵀk_{Z*}(s)) (Zenati et al. 2022 Eq. 41),
/// computed in O(m²) from a Cholesky factor of SK_ZZS + μI bordered by s; s joins the
/// dictionary with probability p̃ = min(1, γτ̃). The first observation always joins
/// (Alg. 2's initialisation Z = {s₀}).
///
/// The posterior is then updated in O(m²) when no anchor is added (a rank-one Cholesky update,
/// the stable form of the paper's Sherman–Morrison step), and grown by a Schur complement in
/// O(tm + m²) when one is (see [`SketchedPosterior`]); queries cost O(m²) per point.
///
/// Width: a fixed β̃ ([`SketchParams::beta`], the paper's practice), or Lemma 4.1's radius for
/// σ-sub-Gaussian noise, β̃ = (√λ + √μ)B + σ√(4 ln(1/δ) + 2 ln det(I + K_t/λ)), where μ stands
/// for μ_t and the log-determinant is bounded on the fly by Σ_s ln(1 + C σ̃²_{s−1}(s_s)) with
/// C = 1 + (r + √(r² + 4r))/2, r = μ/λ, which costs nothing extra. Why: Prop. 4.1 (KORS with
/// ε = ½ and γ = 12 ln(T/δ)) gives ‖(I − P_t)F_t^{1/2}‖² ≤ μ with probability 1 − δ, hence
/// Ṽ = PFP + λI ≼ C(F + λI) (split ‖F^{1/2}Pv‖ ≤ ‖F^{1/2}v‖ + √μ‖v‖ by Young's inequality), so
/// σ̃² ≥ ρ²/(Cλ) and ln(1 + ρ²_{s−1}/λ) ≤ ln(1 + Cσ̃²_{s−1}). With the default γ and ε = ½ the
/// theoretical width is valid with probability 1 − 2δ; with a smaller γ (the papers' practice)
/// μ_t ≤ μ is not guaranteed and the width is a heuristic. γ defaults to Prop. 4.1's
/// 12 ln(T/δ).
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let params = SketchParams::new().lambda(10.0).beta(0.1).gamma(1.0);
/// let mut ek = EkUcb::new(Rbf::new(0.1)?, params, 3)?;
/// for i in 0..50 {
///     let x = (i as f64 * 0.37).fract();
///     ek.observe(&[x, 0.5], (6.0 * x).sin())?;
/// }
/// assert!(ek.dictionary_size() >= 1 && ek.dictionary_size() < 50);
/// let b = ek.bounds(&[[0.2, 0.5], [0.8, 0.5]])?;
/// assert!(b.lcb[0] < b.ucb[0]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EkUcb<K> {
    posterior: SketchedPosterior<K>,
    params: SketchParams,
    mu: f64,
    gamma: f64,
    /// (σ, B) for Lemma 4.1's width; `None` for a fixed β̃.
    theory: Option<(f64, f64)>,
    rng: SeededRng,
    /// Cholesky factor of S K_ZZ S + μI (KORS's matrix, anchors in dictionary order).
    #[cfg_attr(feature = "serde", serde(with = "crate::snapshot::growing_mat"))]
    kors: Mat<f64>,
    /// 1/√p̃ for each anchor.
    kors_scale: Vec<f64>,
    /// The observation (0-based) at which each anchor joined.
    anchor_steps: Vec<usize>,
    /// Σ_{s ≤ t} ln(1 + C σ̃²_{s−1}(s_s)) after each observation t.
    log_det_bound: Vec<f64>,
}

/// Appends `[row, diagonal]` to a lower Cholesky factor (capacity doubled when it runs out).
fn append(factor: &mut Mat<f64>, row: &[f64], diagonal: f64) {
    let m = factor.nrows();
    factor.reserve((m + 1).next_power_of_two(), (m + 1).next_power_of_two());
    factor.resize_with(m + 1, m + 1, |_, _| 0.0);
    for (j, &v) in row.iter().enumerate() {
        factor[(m, j)] = v;
    }
    factor[(m, m)] = diagonal;
}

fn forward(factor: &Mat<f64>, b: &[f64]) -> Vec<f64> {
    let mut out = b.to_vec();
    if !out.is_empty() {
        solve_lower_triangular_in_place(
            factor.as_ref(),
            faer::MatMut::from_column_major_slice_mut(&mut out, b.len(), 1),
            faer::Par::Seq,
        );
    }
    out
}

impl<K: Kernel> EkUcb<K> {
    /// EK-UCB for `kernel` with `params` (see [`SketchParams`]); `seed` drives KORS.
    ///
    /// # Errors
    /// Invalid parameters; [`crate::Error::MissingParameter`] without a fixed β̃ and without σ
    /// and B, or without γ and without the horizon to derive it.
    pub fn new(kernel: K, params: SketchParams, seed: u64) -> Result<Self> {
        params.check()?;
        let mu = params.mu.unwrap_or(params.lambda);
        let gamma = match params.gamma {
            Some(gamma) => gamma,
            None => {
                let horizon = params.required_horizon(
                    "gamma",
                    "set SketchParams::gamma, or SketchParams::horizon to derive Prop. 4.1's",
                )?;
                12.0 * (horizon / params.delta).ln()
            }
        };
        Ok(Self {
            posterior: SketchedPosterior::new(kernel, params.lambda)?,
            theory: params.theory_inputs()?,
            params,
            mu,
            gamma,
            rng: SeededRng::new(seed),
            kors: Mat::zeros(0, 0),
            kors_scale: Vec::new(),
            anchor_steps: Vec::new(),
            log_det_bound: Vec::new(),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// KORS's regulariser μ and budget γ in use.
    pub fn kors(&self) -> (f64, f64) {
        (self.mu, self.gamma)
    }

    /// The sketched posterior (dictionary, embeddings, Prop. 4.2's state).
    pub fn posterior(&self) -> &SketchedPosterior<K> {
        &self.posterior
    }

    /// Number of anchors in the dictionary.
    pub fn dictionary_size(&self) -> usize {
        self.posterior.dictionary_size()
    }

    /// The observation (0-based) at which each anchor joined, in dictionary order.
    pub fn anchor_steps(&self) -> &[usize] {
        &self.anchor_steps
    }

    /// The on-the-fly bound Σ_s ln(1 + C σ̃²_{s−1}(s_s)) on ln det(I + K_t/λ) (see
    /// [`EkUcb`]).
    pub fn log_det_bound(&self) -> f64 {
        self.log_det_bound.last().copied().unwrap_or(0.0)
    }

    /// C = 1 + (r + √(r² + 4r))/2 with r = μ/λ: Ṽ ≼ C(F + λI) when μ_t ≤ μ.
    pub fn variance_factor(&self) -> f64 {
        let r = self.mu / self.params.lambda;
        1.0 + 0.5 * (r + (r * r + 4.0 * r).sqrt())
    }

    /// The probability p̃ with which each anchor joined the dictionary (dictionary order).
    pub fn anchor_probabilities(&self) -> Vec<f64> {
        self.kors_scale.iter().map(|s| 1.0 / (s * s)).collect()
    }

    /// KORS's leverage estimate τ̃ (Zenati et al. 2022 Eq. 41) for a candidate x against the current
    /// dictionary: the probability of joining would be min(1, γτ̃).
    ///
    /// # Errors
    /// Invalid or wrong-dimension x, or non-finite kernel values.
    pub fn leverage_score(&self, x: &[f64]) -> Result<f64> {
        let prior = self.posterior.check_observation(x, 0.0)?;
        let column = self.posterior.dictionary_column(x)?;
        Ok(self.leverage(prior, &column).0)
    }

    /// The current β̃: fixed, or Lemma 4.1's.
    pub fn width(&self) -> f64 {
        match (self.params.beta, self.theory) {
            (Some(beta), _) => beta,
            (None, Some((sigma, norm))) => {
                (self.params.lambda.sqrt() + self.mu.sqrt()) * norm
                    + sigma * (-4.0 * self.params.delta.ln() + 2.0 * self.log_det_bound()).sqrt()
            }
            (None, None) => unreachable!("checked in EkUcb::new"),
        }
    }

    /// KORS's leverage estimate τ̃ for a candidate with k(s, s) = `prior` and kernel column
    /// k_Z(s) = `column`, and the whitened column L_W⁻¹Sk_Z(s) it used.
    fn leverage(&self, prior: f64, column: &[f64]) -> (f64, Vec<f64>) {
        let scaled: Vec<f64> = column
            .iter()
            .zip(&self.kors_scale)
            .map(|(k, s)| k * s)
            .collect();
        let c = forward(&self.kors, &scaled);
        // With r = k(s, s) − cᵀc, Eq. 41's k(s, s) − v*ᵀW*⁻¹v* = r − r²/(r + μ) = rμ/(r + μ):
        // this form has no cancellation.
        let residual = (prior - dot(&c, &c)).max(0.0);
        let tau = (1.0 + self.params.epsilon) * residual / (residual + self.mu);
        (tau, c)
    }

    /// Keeps KORS's anchors in step with the posterior's dictionary after a rebuild (which
    /// drops anchors only if the kernel misbehaves), then rebuilds KORS's factor.
    fn sync_kors(&mut self) {
        let m = self.posterior.dictionary_size();
        if m < self.kors_scale.len() {
            self.kors_scale.truncate(m);
            self.anchor_steps.truncate(m);
        }
        self.rebuild_kors();
    }

    /// Rebuilds KORS's factor from the anchors' probabilities.
    fn rebuild_kors(&mut self) {
        self.kors = Mat::zeros(0, 0);
        let scales = std::mem::take(&mut self.kors_scale);
        for (j, &scale) in scales.iter().enumerate() {
            let anchor = self.posterior.anchor(j).to_vec();
            let prior = self.posterior.kernel().eval_diag(&anchor);
            let mut column = vec![0.0; j];
            for (i, v) in column.iter_mut().enumerate() {
                *v = self
                    .posterior
                    .kernel()
                    .eval(self.posterior.anchor(i), &anchor)
                    * self.kors_scale[i];
            }
            let row: Vec<f64> = forward(&self.kors, &column)
                .iter()
                .map(|v| v * scale)
                .collect();
            let pivot = prior * scale * scale + self.mu - dot(&row, &row);
            append(&mut self.kors, &row, pivot.max(self.mu).sqrt());
            self.kors_scale.push(scale);
        }
    }
}

impl<K: Kernel> ConfidenceBound for EkUcb<K> {
    fn name(&self) -> &'static str {
        "ek-ucb"
    }

    /// Absorbs (x, y), offering x to KORS.
    ///
    /// # Errors
    /// As [`SketchedPosterior::observe`]; the bound is unchanged on error (except for the
    /// generator's state).
    fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        let prior = self.posterior.check_observation(x, y)?;
        let column = self.posterior.dictionary_column(x)?;
        let z = self.posterior.embed(&column);
        let variance = self.posterior.variance_from(prior, &z);
        let (tau, whitened) = self.leverage(prior, &column);
        let step = self.posterior.len();
        let p = if step == 0 {
            1.0
        } else {
            (self.gamma * tau).min(1.0)
        };
        // A rejected observation leaves the generator where it was.
        let saved = self.rng.clone();
        let draw = self.rng.uniform() < p;
        let index = match self.posterior.observe_embedded(x, y, prior, z) {
            Ok(index) => index,
            Err(error) => {
                self.rng = saved;
                return Err(error);
            }
        };
        if draw {
            match self.posterior.add_anchor(index) {
                Ok(true) => {
                    // W's new row: k(s, zⱼ)sⱼ/√p̃, corner k(s, s)/p̃ + μ.
                    let scale = 1.0 / p.sqrt();
                    let row: Vec<f64> = whitened.iter().map(|v| v * scale).collect();
                    let pivot = prior / p + self.mu - dot(&row, &row);
                    append(&mut self.kors, &row, pivot.max(self.mu).sqrt());
                    self.kors_scale.push(scale);
                    self.anchor_steps.push(step);
                }
                Ok(false) => {}
                Err(error) => {
                    let anchors = self.posterior.dictionary().to_vec();
                    self.posterior.truncate_with_dictionary(step, &anchors);
                    self.sync_kors();
                    self.rng = saved;
                    return Err(error);
                }
            }
        }
        let factor = self.variance_factor();
        let previous = self.log_det_bound();
        self.log_det_bound
            .push(previous + (factor * variance).ln_1p());
        Ok(())
    }

    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
        sketched_bounds(self.posterior.evaluate(points)?, self.width())
    }

    /// μ̃ ± β̃σ̃ and their gradients, through the Nyström embedding (see
    /// [`SketchedPosterior`]'s formulas): ∇μ̃ = Jᵀ L_Z⁻ᵀ V⁻¹Φᵀy and
    /// ∇σ̃² = ∇k(x, x)/λ + 2Jᵀ L_Z⁻ᵀ(V⁻¹z(x) − z(x)/λ), J the rows ∂k(x, zᵢ)/∂x over the
    /// anchors (Zenati et al. 2022 Prop. 4.2's μ̃ and σ̃²). β̃ does not depend on x. O(md)
    /// kernel gradients and O(m²).
    ///
    /// # Errors
    /// Invalid or wrong-dimension x; [`crate::Error::Unsupported`] for a kernel without
    /// gradients; as [`ConfidenceBound::evaluate`].
    fn gradient(&self, x: &[f64]) -> Result<BoundGradient> {
        sketched_gradient(self.posterior.gradient_at(x, None)?, self.width())
    }

    /// The DTC variance σ̃² (in the scale β̃ multiplies) given the pending inputs: they enter
    /// V = ΦᵀΦ + λI as observations would (Zenati et al. 2022 Alg. 2's update), with the
    /// dictionary fixed. KORS may add a pending point to the dictionary when it is observed,
    /// a random draw that this does not anticipate. O(p(m² + md)) for p pending points, then
    /// O(m²) per query.
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

    /// Forgets the observations after the first `len` and the anchors that joined with them:
    /// the state equals the one the bound had after `len` observations (the generator is not
    /// rewound).
    fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        let keep = self.anchor_steps.iter().take_while(|&&s| s < len).count();
        let anchors: Vec<usize> = self.posterior.dictionary()[..keep].to_vec();
        self.posterior.truncate_with_dictionary(len, &anchors);
        self.anchor_steps.truncate(keep);
        self.kors_scale.truncate(keep);
        self.sync_kors();
        self.log_det_bound.truncate(len);
    }
}

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for EkUcb<K> {
    fn kind() -> String {
        format!("ek-ucb<{}>", K::kind())
    }

    /// Checks the posterior, the KORS factor (one row per anchor, positive pivots) and the
    /// per-observation log-determinant bound.
    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::{ensure, ensure_finite};
        self.posterior.restore()?;
        self.params
            .check()
            .map_err(crate::snapshot::rebuild_error("EK-UCB parameters"))?;
        let m = self.posterior.dictionary_size();
        let theory_ok = self
            .theory
            .is_none_or(|(s, b)| s.is_finite() && s > 0.0 && b.is_finite() && b > 0.0);
        ensure(
            theory_ok
                && self.mu.is_finite()
                && self.mu > 0.0
                && self.gamma.is_finite()
                && self.gamma > 0.0
                && (self.kors.nrows(), self.kors.ncols()) == (m, m)
                && self.kors_scale.len() == m
                && self.anchor_steps.len() == m
                && self.log_det_bound.len() == self.posterior.len()
                && (0..m).all(|j| self.kors[(j, j)] > 0.0),
            || format!("EK-UCB state of {m} anchors"),
        )?;
        ensure_finite(&self.kors_scale, "KORS scales")?;
        ensure_finite(&self.log_det_bound, "log-determinant bound")?;
        ensure(
            (0..m).all(|j| self.kors.col(j).iter().all(|v| v.is_finite())),
            || "non-finite entry in the KORS factor".into(),
        )
    }
}
