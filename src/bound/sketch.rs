//! Parameters shared by the Nyström-sketched bounds BKB and EK-UCB.

use super::Bounds;
use crate::error::{Error, Result, positive};
use crate::posterior::SketchedBatch;

/// Settings of the sketched bounds [`Bkb`](super::Bkb) and [`EkUcb`](super::EkUcb). Each bound
/// reads the fields it needs and rejects missing or invalid ones when it is built.
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `lambda` (λ) | 1 | (0, ∞) | ridge regulariser; σ̃² carries a 1/λ (Calandriello et al. 2019 Eq. 4; Zenati et al. 2022 Prop. 4.2) |
/// | `beta` (β̃) | theory | (0, ∞) | fixed exploration width: UCB = μ̃ + β̃σ̃ (papers' practice) |
/// | `sigma` (σ; ξ in Calandriello et al. 2019) | — | (0, ∞) | noise scale; needed by the theoretical β̃ |
/// | `norm_bound` (B; F in Calandriello et al. 2019) | — | (0, ∞) | ‖f‖_H ≤ B; needed by the theoretical β̃ |
/// | `delta` (δ) | 0.1 | (0, 1) | failure probability of the theory (β̃, q̄, γ) |
/// | `epsilon` (ε) | 0.5 | (0, 1) | sketch accuracy; α = (1 + ε)/(1 − ε) |
/// | `horizon` (T) | — | ≥ 1 | derives BKB's q̄ and EK-UCB's γ when they are not set |
/// | `qbar` (q̄, BKB) | 6α ln(4T/δ)/ε² | (0, ∞) | BKB inclusion: p = min(1, q̄σ̃²) (Calandriello et al. 2019 Thm 1) |
/// | `batch_threshold` (C̃, BKB) | none: one point per batch | [0, ∞) | BBKB: a batch ends once 1 + Σ σ̃²_fb(x_s) > C̃ (Calandriello et al. 2020 Alg. 1); C̃ < 1 is BKB |
/// | `batch_feedback` (BKB) | [`BatchFeedback::AtBatchEnd`] | — | BBKB: whether the mean uses a batch's targets only when it ends (Calandriello et al. 2020) or at once (Zenati et al. 2022's CBBKB) |
/// | `mu` (μ, EK-UCB) | λ | (0, ∞) | KORS regulariser (Zenati et al. 2022 App. E.3) |
/// | `gamma` (γ, EK-UCB) | 12 ln(T/δ) | (0, ∞) | KORS budget: p = min(1, γτ̃) (Zenati et al. 2022 Prop. 4.1) |
///
/// # Examples
/// ```
/// use kernel_bandits::bound::SketchParams;
/// // Zenati et al. (2022)'s practice: λ = 10, μ = λ, fixed β̃ = 0.1, γ = 0.1 λ.
/// let practice = SketchParams::new().lambda(10.0).beta(0.1).gamma(1.0);
/// // Calandriello et al. (2019)'s theory: q̄ and β̃ from ε, δ, T, ξ and F.
/// let theory = SketchParams::new().lambda(0.01).sigma(0.1).norm_bound(1.0).horizon(1000);
/// # let _ = (practice, theory);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SketchParams {
    pub(crate) lambda: f64,
    pub(crate) beta: Option<f64>,
    pub(crate) sigma: Option<f64>,
    pub(crate) norm_bound: Option<f64>,
    pub(crate) delta: f64,
    pub(crate) epsilon: f64,
    pub(crate) horizon: Option<usize>,
    pub(crate) qbar: Option<f64>,
    pub(crate) mu: Option<f64>,
    pub(crate) gamma: Option<f64>,
    #[cfg_attr(feature = "serde", serde(default))]
    pub(crate) batch_threshold: Option<f64>,
    #[cfg_attr(feature = "serde", serde(default))]
    pub(crate) batch_feedback: BatchFeedback,
}

/// When a batched BKB (BBKB, [`SketchParams::batch_threshold`]) lets its mean use the targets
/// of the current batch. The dictionary is resampled at batch ends either way, and the
/// variance always includes the batch's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum BatchFeedback {
    /// Calandriello et al. (2020) Alg. 1: inside a batch the mean stays μ̃_fb, the one at the
    /// batch start, as if the batch's feedback arrived together at its end.
    #[default]
    AtBatchEnd,
    /// Zenati et al. (2022)'s contextual CBBKB (their code): every target enters the mean at
    /// once, with the dictionary fixed until the batch ends.
    Immediate,
}

impl Default for SketchParams {
    fn default() -> Self {
        Self::new()
    }
}

impl SketchParams {
    /// The defaults of the table above.
    pub fn new() -> Self {
        Self {
            lambda: 1.0,
            beta: None,
            sigma: None,
            norm_bound: None,
            delta: 0.1,
            epsilon: 0.5,
            horizon: None,
            qbar: None,
            mu: None,
            gamma: None,
            batch_threshold: None,
            batch_feedback: BatchFeedback::AtBatchEnd,
        }
    }

    /// Sets the regulariser λ.
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = lambda;
        self
    }

    /// Fixes the exploration width β̃ (instead of the theoretical one).
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = Some(beta);
        self
    }

    /// Sets the noise scale σ (ξ in Calandriello et al. 2019).
    pub fn sigma(mut self, sigma: f64) -> Self {
        self.sigma = Some(sigma);
        self
    }

    /// Sets the RKHS norm bound B (F in Calandriello et al. 2019).
    pub fn norm_bound(mut self, norm_bound: f64) -> Self {
        self.norm_bound = Some(norm_bound);
        self
    }

    /// Sets δ.
    pub fn delta(mut self, delta: f64) -> Self {
        self.delta = delta;
        self
    }

    /// Sets the accuracy ε.
    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.epsilon = epsilon;
        self
    }

    /// Sets the horizon T.
    pub fn horizon(mut self, horizon: usize) -> Self {
        self.horizon = Some(horizon);
        self
    }

    /// Sets BKB's oversampling q̄.
    pub fn qbar(mut self, qbar: f64) -> Self {
        self.qbar = Some(qbar);
        self
    }

    /// Sets EK-UCB's KORS regulariser μ.
    pub fn mu(mut self, mu: f64) -> Self {
        self.mu = Some(mu);
        self
    }

    /// Sets EK-UCB's KORS budget γ.
    pub fn gamma(mut self, gamma: f64) -> Self {
        self.gamma = Some(gamma);
        self
    }

    /// Turns BKB into BBKB (Calandriello et al. 2020 Alg. 1) with batch threshold C̃: the
    /// dictionary is resampled only when the variance accumulated since the last resampling,
    /// 1 + Σ σ̃²_fb(x_s), exceeds C̃ (see [`super::Bkb`]). C̃ < 1 resamples after every
    /// observation, which is BKB.
    pub fn batch_threshold(mut self, threshold: f64) -> Self {
        self.batch_threshold = Some(threshold);
        self
    }

    /// Sets when a batched BKB's mean uses the batch's targets (see [`BatchFeedback`]).
    pub fn batch_feedback(mut self, feedback: BatchFeedback) -> Self {
        self.batch_feedback = feedback;
        self
    }

    /// α = (1 + ε)/(1 − ε).
    pub(crate) fn alpha(&self) -> f64 {
        (1.0 + self.epsilon) / (1.0 - self.epsilon)
    }

    /// Validates every field that is set (each bound then derives what is missing, or
    /// reports it missing: see [`super::Bkb::new`] and [`super::EkUcb::new`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if λ, β̃, σ, B, q̄, μ or γ is not finite and positive, if δ
    /// or ε ∉ (0, 1), if the horizon is 0, or if the batch threshold C̃ is negative or not
    /// finite.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::bound::SketchParams;
    /// assert!(SketchParams::new().beta(0.1).check().is_ok());
    /// assert!(SketchParams::new().epsilon(1.0).check().is_err());
    /// ```
    pub fn check(&self) -> Result<()> {
        positive("lambda", self.lambda)?;
        open_unit("delta", self.delta)?;
        open_unit("epsilon", self.epsilon)?;
        let optional = [
            ("beta", self.beta),
            ("sigma", self.sigma),
            ("norm_bound", self.norm_bound),
            ("qbar", self.qbar),
            ("mu", self.mu),
            ("gamma", self.gamma),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                positive(name, value)?;
            }
        }
        if let Some(threshold) = self.batch_threshold
            && !(threshold.is_finite() && threshold >= 0.0)
        {
            return Err(Error::InvalidParameter {
                name: "batch_threshold",
                value: threshold,
                expected: "a finite number >= 0",
            });
        }
        if self.horizon == Some(0) {
            return Err(Error::InvalidParameter {
                name: "horizon",
                value: 0.0,
                expected: "an integer >= 1",
            });
        }
        Ok(())
    }

    /// The theoretical width needs σ and B unless β̃ is fixed.
    pub(crate) fn theory_inputs(&self) -> Result<Option<(f64, f64)>> {
        if self.beta.is_some() {
            return Ok(None);
        }
        let sigma = self.sigma.ok_or(Error::MissingParameter {
            name: "sigma",
            hint: "set SketchParams::sigma, or fix the width with SketchParams::beta",
        })?;
        let norm_bound = self.norm_bound.ok_or(Error::MissingParameter {
            name: "norm_bound",
            hint: "set SketchParams::norm_bound, or fix the width with SketchParams::beta",
        })?;
        Ok(Some((sigma, norm_bound)))
    }

    /// The horizon, required to derive `what`.
    pub(crate) fn required_horizon(&self, what: &'static str, hint: &'static str) -> Result<f64> {
        self.horizon
            .map(|t| t as f64)
            .ok_or(Error::MissingParameter { name: what, hint })
    }
}

fn open_unit(name: &'static str, value: f64) -> Result<f64> {
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            expected: "a number in (0, 1)",
        })
    }
}

/// μ̃ ∓ β̃σ̃ at every point of a sketched batch.
///
/// # Errors
/// As [`super::check_width`].
pub(crate) fn sketched_bounds(batch: SketchedBatch, width: f64) -> Result<Bounds> {
    let width = super::check_width(width)?;
    let spread: Vec<f64> = batch.variance.iter().map(|v| width * v.sqrt()).collect();
    let bounds = Bounds {
        lcb: batch.mean.iter().zip(&spread).map(|(m, s)| m - s).collect(),
        ucb: batch.mean.iter().zip(&spread).map(|(m, s)| m + s).collect(),
        mean: batch.mean,
    };
    if bounds.lcb.iter().chain(&bounds.ucb).all(|v| v.is_finite()) {
        Ok(bounds)
    } else {
        Err(crate::Error::NonFinite {
            what: "sketched bound (the targets are too large for the regulariser)".into(),
        })
    }
}

/// The [`BoundGradient`](super::BoundGradient) of μ̃ ± β̃σ̃ from the sketched posterior's
/// values and gradients: ∇(β̃σ̃) = β̃∇σ̃²/(2σ̃). Where σ̃ = 0 (a point with no prior variance
/// left, possible only for a degenerate kernel) σ̃ has no gradient and the bounds get the
/// mean's.
///
/// # Errors
/// As [`sketched_bounds`].
pub(crate) fn sketched_gradient(
    g: crate::posterior::SketchedGradient,
    width: f64,
) -> Result<super::BoundGradient> {
    let width = super::check_width(width)?;
    let deviation = g.variance.sqrt();
    let spread = width * deviation;
    let spread_gradient: Vec<f64> = if deviation > 0.0 {
        g.variance_gradient
            .iter()
            .map(|v| width * v / (2.0 * deviation))
            .collect()
    } else {
        vec![0.0; g.mean_gradient.len()]
    };
    let combine = |sign: f64| -> Vec<f64> {
        g.mean_gradient
            .iter()
            .zip(&spread_gradient)
            .map(|(m, s)| m + sign * s)
            .collect()
    };
    let out = super::BoundGradient {
        mean: g.mean,
        lcb: g.mean - spread,
        ucb: g.mean + spread,
        lcb_gradient: combine(-1.0),
        ucb_gradient: combine(1.0),
        mean_gradient: g.mean_gradient,
    };
    let finite = [out.lcb, out.ucb]
        .iter()
        .chain(&out.lcb_gradient)
        .chain(&out.ucb_gradient)
        .all(|v| v.is_finite());
    if finite {
        Ok(out)
    } else {
        Err(Error::NonFinite {
            what: "sketched bound (the targets are too large for the regulariser)".into(),
        })
    }
}

/// The pending variance of BKB and EK-UCB: σ̃² in the papers' scale (the one their width β̃
/// multiplies, ρ_λ²/λ in the exact limit), given the pending inputs (see
/// [`SketchedPosterior::pending`](crate::posterior::SketchedPosterior)).
impl<K: crate::kernel::Kernel> super::PendingVariance for crate::posterior::SketchedPending<'_, K> {
    fn variance(&self, points: &crate::points::Points<'_>) -> Result<Vec<f64>> {
        crate::posterior::SketchedPending::variance(self, points)
    }

    fn variance_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        crate::posterior::SketchedPending::variance_gradient(self, x)
    }
}
