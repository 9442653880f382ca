//! Parameters shared by the confidence bounds, validated once at construction.

use crate::error::{Error, Result, positive};
use crate::kernel::Kernel;

/// Parameters of the confidence bounds of Flynn & Reeb 2024 (§2, §4.1), set with infallible
/// chained setters and validated when a bound is constructed.
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `sigma` (σ) | 0.1 | (0, ∞) | noise is conditionally σ-sub-Gaussian (an upper bound) |
/// | `norm_bound` (B) | 10 | (0, ∞) | ‖f‖_H ≤ B |
/// | `delta` (δ) | 0.01 | (0, 1] | the bounds hold for all t with probability ≥ 1 − δ |
/// | `scale` (c) | adaptive | (0, ∞) | covariance scale of the mixture N(0, cK_t); a0 = σ²/c |
/// | `lambda` (λ) | σ²/c (σ² when c is adaptive) | (0, ∞) | AY-GP-UCB regulariser |
/// | `eta` (η) | 2/T if a horizon is set | (0, ∞) | IGP-UCB regulariser is 1 + η |
/// | `horizon` (T) | none | ≥ 1 | only used for the default η |
///
/// [`BoundParams::paper_defaults`] gives the settings of Flynn & Reeb 2024 §7.
///
/// # The adaptive scale (the default)
///
/// Without [`BoundParams::scale`], AMM-UCB, DMM-UCB and CMM-UCB choose c themselves from the
/// fixed grid [`SCALE_GRID`] = {10⁰, 10^−½, …, 10⁻⁴} (m = 9 values, fixed before any data).
/// For one c, Flynn & Reeb 2024 Eq. 8 (Lemma 4.2) holds at every round at once with probability
/// ≥ 1 − δ, with R_t(c)² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ), a0 = σ²/c. Spending δ/m on each
/// c of the grid, a union bound makes all m hold at every round at once with probability
/// ≥ 1 − δ, so at every round the data constraint ‖f_t − y_t‖ ≤ R_t(c) may use any c of the
/// grid, chosen from the data, with ln(m/δ) in place of ln(1/δ): the price is
/// 2σ² ln m = 4.4σ² in R_t².
///
/// R_t(c)²/σ² = y_tᵀ(cK_t + σ²I)⁻¹y_t + ln det(I + cK_t/σ²) + 2 ln(m/δ) is, up to constants,
/// minus twice the GP log marginal likelihood of y_t with output scale c and noise σ²:
/// the tightest data constraint is the likelihood's choice of output scale. The data
/// constraint fixed, the regulariser a of U_a is free (weak duality, Thm 4.5), so
/// - CMM-UCB uses R* = min over the grid of R_t(c) and minimises over a as before;
/// - DMM-UCB keeps one Cholesky factor per grid point, a = σ²/c for c in the grid, uses R*
///   there and takes U = min over these 9 regularisers (the paper's grid {0.1, 0.3, 1, 3, 10}·a0
///   is about half of it);
/// - AMM-UCB (Cor. 4.6) is U_a at a = a0 = σ²/c, whose width does not depend on the targets
///   (Lemma C.2): it takes the c of the grid minimising the leave-one-out width estimate
///   (B² + c(ld_a + 2 ln(m/δ)))·(t/tr((K_t + aI)⁻¹) − a), re-chosen from an eigendecomposition
///   whenever t reaches a power of 2 (its factor is recomputed only when the choice changes),
///   with R_t(c) at that c.
///
/// Each of these is valid at every round with probability ≥ 1 − δ for the whole run: the grid
/// is fixed in advance, and the union bound covers every data-dependent choice among its
/// points. AY-GP-UCB and IGP-UCB are other papers' bounds with their own regularisers; they
/// keep c = 1 (λ = σ²) when the scale is adaptive, as before.
///
/// # Examples
/// ```
/// use kernel_bandits::bound::BoundParams;
/// let params = BoundParams::new().sigma(0.1).norm_bound(10.0).delta(0.01).scale(1.0);
/// let checked = params.check()?;
/// assert!((checked.mixture_regulariser() - 0.01).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundParams {
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    /// `None`: adaptive (see the type's documentation).
    scale: Option<f64>,
    lambda: Option<f64>,
    eta: Option<f64>,
    horizon: Option<usize>,
}

/// The covariance scales the adaptive default chooses among (see [`BoundParams`]):
/// c = 10^{−j/2}, j = 0, …, 8, from 1 down to 10⁻⁴, in that order.
pub const SCALE_GRID: [f64; 9] = [
    1.0,
    0.316_227_766_016_837_94,
    0.1,
    0.031_622_776_601_683_79,
    0.01,
    0.003_162_277_660_168_379,
    0.001,
    0.000_316_227_766_016_837_94,
    0.0001,
];

impl Default for BoundParams {
    fn default() -> Self {
        Self::new()
    }
}

/// The paper's covariance scale for a kernel of smoothness ν (`None`: infinitely smooth) in
/// dimension d with horizon T: c = 1 for RBF, c = T^{−d/(2d+2ν)} for Matérn of any ν > 0
/// (Flynn & Reeb 2024 §7).
///
/// # Examples
/// ```
/// use kernel_bandits::bound::paper_scale;
/// use kernel_bandits::kernel::{Kernel, Matern};
/// assert_eq!(paper_scale(None, 3, 1000), 1.0);
/// assert!((paper_scale(Some(2.5), 3, 1000) - 1000f64.powf(-3.0 / 11.0)).abs() < 1e-15);
/// let smoothness = Matern::new(3.5, 0.5)?.smoothness();
/// assert!((paper_scale(smoothness, 3, 1000) - 1000f64.powf(-3.0 / 13.0)).abs() < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn paper_scale(smoothness: Option<f64>, dim: usize, horizon: usize) -> f64 {
    match smoothness {
        None => 1.0,
        Some(nu) => {
            let d = dim as f64;
            (horizon as f64).powf(-d / (2.0 * d + 2.0 * nu))
        }
    }
}

impl BoundParams {
    /// σ = 0.1, B = 10, δ = 0.01, c adaptive (see the type's documentation), λ = σ², no η.
    pub fn new() -> Self {
        Self {
            sigma: 0.1,
            norm_bound: 10.0,
            delta: 0.01,
            scale: None,
            lambda: None,
            eta: None,
            horizon: None,
        }
    }

    /// The settings of Flynn & Reeb 2024 §7 for `kernel` on inputs of dimension `dim` over `horizon`
    /// rounds: σ = 0.1, B = 10, δ = 0.01, c from [`paper_scale`], λ = σ²/c, η = 2/T.
    pub fn paper_defaults(kernel: &(impl Kernel + ?Sized), dim: usize, horizon: usize) -> Self {
        Self::new()
            .scale(paper_scale(kernel.smoothness(), dim, horizon))
            .horizon(horizon)
    }

    /// Sets σ, the sub-Gaussian noise scale.
    pub fn sigma(mut self, sigma: f64) -> Self {
        self.sigma = sigma;
        self
    }

    /// Sets B, the bound on ‖f‖_H.
    pub fn norm_bound(mut self, norm_bound: f64) -> Self {
        self.norm_bound = norm_bound;
        self
    }

    /// Sets δ, the failure probability.
    pub fn delta(mut self, delta: f64) -> Self {
        self.delta = delta;
        self
    }

    /// Sets c, the mixture covariance scale, fixing it (the default is adaptive: see the type's
    /// documentation).
    pub fn scale(mut self, scale: f64) -> Self {
        self.scale = Some(scale);
        self
    }

    /// Makes c adaptive again (the default): AMM-UCB, DMM-UCB and CMM-UCB choose it from
    /// [`SCALE_GRID`] paying a union bound (see the type's documentation).
    pub fn adaptive_scale(mut self) -> Self {
        self.scale = None;
        self
    }

    /// Sets λ, the AY-GP-UCB regulariser (default σ²/c).
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = Some(lambda);
        self
    }

    /// Sets η; IGP-UCB regularises with 1 + η (default 2/T when a horizon is set).
    pub fn eta(mut self, eta: f64) -> Self {
        self.eta = Some(eta);
        self
    }

    /// Sets the horizon T, used for the default η = 2/T.
    pub fn horizon(mut self, horizon: usize) -> Self {
        self.horizon = Some(horizon);
        self
    }

    /// Validates the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if σ, B, c, λ or η is not finite and positive, if
    /// δ ∉ (0, 1], or if the horizon is 0.
    pub fn check(&self) -> Result<CheckedParams> {
        let sigma = positive("sigma", self.sigma)?;
        let norm_bound = positive("norm_bound", self.norm_bound)?;
        let delta = checked_delta(self.delta)?;
        let adaptive = self.scale.is_none();
        let scale = positive("scale", self.scale.unwrap_or(1.0))?;
        let mixture_regulariser = positive("sigma^2/scale", sigma * sigma / scale)?;
        let lambda = positive("lambda", self.lambda.unwrap_or(mixture_regulariser))?;
        if self.horizon == Some(0) {
            return Err(Error::InvalidParameter {
                name: "horizon",
                value: 0.0,
                expected: "at least 1",
            });
        }
        let eta = match (self.eta, self.horizon) {
            (Some(eta), _) => Some(positive("eta", eta)?),
            (None, Some(horizon)) => Some(2.0 / horizon as f64),
            (None, None) => None,
        };
        Ok(CheckedParams {
            sigma,
            norm_bound,
            delta,
            scale,
            mixture_regulariser,
            lambda,
            eta,
            adaptive,
        })
    }
}

/// Passes a δ in (0, 1] on (NaN fails).
fn checked_delta(delta: f64) -> Result<f64> {
    if delta > 0.0 && delta <= 1.0 {
        Ok(delta)
    } else {
        Err(Error::InvalidParameter {
            name: "delta",
            value: delta,
            expected: "a number in (0, 1]",
        })
    }
}

/// Validated [`BoundParams`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CheckedParams {
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    scale: f64,
    mixture_regulariser: f64,
    lambda: f64,
    eta: Option<f64>,
    /// Whether c is chosen from [`SCALE_GRID`] (then `scale` is 1 and `mixture_regulariser`
    /// σ², the values AY-GP-UCB and IGP-UCB keep).
    adaptive: bool,
}

impl CheckedParams {
    /// σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }
    /// B.
    pub fn norm_bound(&self) -> f64 {
        self.norm_bound
    }
    /// δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }
    /// c when it is fixed; 1 when it is adaptive (the bounds report the c they use, e.g.
    /// [`super::Amm::scale_in_use`]).
    pub fn scale(&self) -> f64 {
        self.scale
    }
    /// Whether c is adaptive: chosen by AMM-UCB, DMM-UCB and CMM-UCB from [`SCALE_GRID`]
    /// with δ/m each (see [`BoundParams`]).
    pub fn is_adaptive(&self) -> bool {
        self.adaptive
    }
    /// The covariance scales the mixture bounds may use: [`SCALE_GRID`] if adaptive, else
    /// the one c.
    pub fn scales(&self) -> Vec<f64> {
        if self.adaptive {
            SCALE_GRID.to_vec()
        } else {
            vec![self.scale]
        }
    }
    /// a0 = σ²/c for each c of [`CheckedParams::scales`], in that order.
    pub fn mixture_regularisers(&self) -> Vec<f64> {
        if self.adaptive {
            SCALE_GRID
                .iter()
                .map(|c| self.sigma * self.sigma / c)
                .collect()
        } else {
            vec![self.mixture_regulariser]
        }
    }
    /// a0 = σ²/c, the regulariser at which the mixture radius is evaluated (σ² when c is
    /// adaptive).
    pub fn mixture_regulariser(&self) -> f64 {
        self.mixture_regulariser
    }
    /// λ for AY-GP-UCB.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
    /// η for IGP-UCB.
    ///
    /// # Errors
    /// [`Error::MissingParameter`] if neither η nor a horizon was set.
    pub fn eta(&self) -> Result<f64> {
        self.eta.ok_or(Error::MissingParameter {
            name: "eta",
            hint: "set BoundParams::eta, or BoundParams::horizon for the paper's eta = 2/T",
        })
    }
    /// The same parameters with B and δ replaced, validated as [`BoundParams::check`] validates
    /// them; σ, c, a0 = σ²/c, λ and η are kept bit for bit. B and δ enter only the radii
    /// R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ) and R̃_a² = R_t² + aB² − a q_a (Flynn & Reeb
    /// 2024 Eq. 8, Cor. 4.3), never a regulariser, so a bound can take them over without
    /// refactorising ([`super::AdjustableNorm`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if B is not finite and positive or δ ∉ (0, 1].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::bound::BoundParams;
    /// let params = BoundParams::new().norm_bound(1.0).delta(0.1).check()?;
    /// let wider = params.with_norm_bound(2.0, 0.05)?;
    /// assert_eq!((wider.norm_bound(), wider.delta()), (2.0, 0.05));
    /// assert_eq!(wider.mixture_regulariser(), params.mixture_regulariser());
    /// assert!(params.with_norm_bound(f64::NAN, 0.05).is_err());
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn with_norm_bound(&self, norm_bound: f64, delta: f64) -> Result<Self> {
        let norm_bound = positive("norm_bound", norm_bound)?;
        let delta = checked_delta(delta)?;
        Ok(Self {
            norm_bound,
            delta,
            ..*self
        })
    }

    /// ln(1/δ).
    pub(crate) fn log_inv_delta(&self) -> f64 {
        -self.delta.ln()
    }

    /// The ln(1/δ) of the mixture radius R_t: ln(m/δ) with m = 9 when c is adaptive (the union
    /// bound over [`SCALE_GRID`]), else ln(1/δ).
    pub(crate) fn mixture_log_inv_delta(&self) -> f64 {
        if self.adaptive {
            (SCALE_GRID.len() as f64 / self.delta).ln()
        } else {
            self.log_inv_delta()
        }
    }
}

#[cfg(feature = "serde")]
impl CheckedParams {
    /// Checks restored parameters by validating them again: they must be what
    /// [`BoundParams::check`] makes of them.
    pub(crate) fn restore(&self) -> Result<()> {
        let again = BoundParams {
            sigma: self.sigma,
            norm_bound: self.norm_bound,
            delta: self.delta,
            scale: (!self.adaptive).then_some(self.scale),
            lambda: Some(self.lambda),
            eta: self.eta,
            horizon: None,
        }
        .check()
        .map_err(crate::snapshot::rebuild_error("bound parameters"))?;
        crate::snapshot::ensure(again == *self, || {
            "bound parameters that disagree with each other".into()
        })
    }
}
