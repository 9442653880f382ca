//! AMM-UCB: the analytic martingale-mixture bound.

use super::mixture::mixture_width;
use super::{BoundParams, CheckedParams, ConfidenceBound, SCALE_GRID, forward_posterior};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// AMM-UCB (Flynn & Reeb 2024 Cor. 4.6): U(x) = μ_{a0}(x) + (R̃_{a0}/√a0) ρ_{a0}(x) with a0 = σ²/c and
/// (Lemma C.2) R̃_{a0}² = σ² ld_{a0} + σ²B²/c + 2σ² ln(1/δ); the LCB is the mirror image.
///
/// With no data U(x) = √(B² + 2c ln(1/δ)) · √k(x, x).
///
/// With the adaptive scale (the default, [`BoundParams`]) c is one of [`SCALE_GRID`], with
/// ln(9/δ) for ln(1/δ): the one minimising the leave-one-out estimate of the squared width,
/// (B² + c(ld_{a0} + 2 ln(9/δ)))·(t/tr((K_t + a0·I)⁻¹) − a0), where t/tr(·) − a0 is the harmonic
/// mean over the observed points of their leave-one-out posterior variances' (ρ² + a0) less a0.
/// AMM's width does not depend on the targets (Lemma C.2), and neither does this choice. It
/// is made from the eigenvalues of K_t whenever t reaches 1, 2, 4, 8, … (O(t³), amortised
/// O(t²) per observation), and the factor of K_t + a0·I (and a fixed arm set's columns) is
/// recomputed only when the choice changes. Before any data c = 10⁻⁴, the grid's smallest,
/// which gives the narrowest prior bound.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let amm = Amm::new(Rbf::new(0.5)?, BoundParams::new().sigma(0.1).norm_bound(10.0).scale(1.0))?;
/// let b = amm.bounds(&[[0.3, 0.3]])?;
/// let prior = (100.0 + 2.0 * (1.0 / 0.01f64).ln()).sqrt();
/// assert!((b.ucb[0] - prior).abs() < 1e-12);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Amm<K> {
    posterior: ExactPosterior<K>,
    params: CheckedParams,
    /// With an adaptive c, its index in [`SCALE_GRID`] (0 for a fixed c).
    scale_index: usize,
    /// With an adaptive c, the number of observations when it was last chosen.
    chosen_at: usize,
}

impl<K: Kernel> Amm<K> {
    /// AMM-UCB for `kernel` with the parameters σ, B, δ, c.
    ///
    /// # Errors
    /// Invalid parameters (see [`BoundParams::check`]).
    pub fn new(kernel: K, params: BoundParams) -> Result<Self> {
        let params = params.check()?;
        let scale_index = if params.is_adaptive() {
            SCALE_GRID.len() - 1
        } else {
            0
        };
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &[params.mixture_regularisers()[scale_index]])?,
            params,
            scale_index,
            chosen_at: 0,
        })
    }

    /// The covariance scale c in use: the fixed c, or the grid point chosen last when c is
    /// adaptive (see the type's documentation).
    pub fn scale_in_use(&self) -> f64 {
        if self.params.is_adaptive() {
            SCALE_GRID[self.scale_index]
        } else {
            self.params.scale()
        }
    }

    /// With an adaptive c, chooses it again once t has doubled since the last choice (see the
    /// type's documentation). The choice is a function of the data and every grid point is
    /// valid (the union bound), so a failure (eigenvalues that do not converge, a factor that
    /// cannot be computed) keeps the c in use, which stays valid.
    fn rechoose(&mut self) {
        let t = self.posterior.len();
        if !self.params.is_adaptive() || t == 0 || t < 2 * self.chosen_at {
            return;
        }
        self.chosen_at = t;
        let Some(best) = self.best_scale_index() else {
            return;
        };
        if best != self.scale_index {
            let a = self.params.mixture_regularisers()[best];
            if self.posterior.refactorise_with(&[a]).is_ok() {
                self.scale_index = best;
            }
        }
    }

    /// The index in [`SCALE_GRID`] minimising (B² + c(ld_a + 2 ln(m/δ)))·(t/tr((K_t + aI)⁻¹) − a),
    /// a = σ²/c, from the eigenvalues of K_t; `None` if they cannot be computed.
    fn best_scale_index(&self) -> Option<usize> {
        let gram = self.posterior.kernel_matrix();
        let t = gram.nrows();
        let matrix = faer::Mat::<f64>::from_fn(t, t, |i, j| gram[(i, j)]);
        let values = super::eigen::Eigen::values_only(matrix.as_ref()).ok()?;
        Some(best_scale_index(&self.params, &values))
    }

    /// Forgets the choice's schedule past `len` observations (after a truncation).
    fn after_removal(&mut self) {
        self.chosen_at = self.chosen_at.min(self.posterior.len());
    }

    /// The validated parameters.
    pub fn params(&self) -> &CheckedParams {
        &self.params
    }

    /// The underlying exact posterior (regulariser a0).
    pub fn posterior(&self) -> &ExactPosterior<K> {
        &self.posterior
    }

    /// R̃_{a0}/√a0, the current multiplier of ρ_{a0}(x).
    pub fn width(&self) -> f64 {
        mixture_width(&self.params, &self.posterior, 0, 0)
    }
}

impl<K: Kernel> ConfidenceBound for Amm<K> {
    fn name(&self) -> &'static str {
        "amm"
    }

    /// R̃² at a0 only, which Lemma C.2 makes positive: AMM cannot see misspecification.
    fn diagnostics(&self) -> super::Diagnostics {
        super::mixture::mixture_diagnostics(&self.params, &self.posterior, 0..1, 0)
    }

    forward_posterior!(|b| widths: [b.width()], mean: 0, then: rechoose, after_removal);
}

/// The index in [`SCALE_GRID`] of AMM's adaptive choice for a kernel matrix with eigenvalues
/// `values` (see [`Amm`]); the first index among ties.
pub(crate) fn best_scale_index(params: &CheckedParams, values: &[f64]) -> usize {
    let t = values.len() as f64;
    let norm_sq = params.norm_bound() * params.norm_bound();
    let confidence = 2.0 * params.mixture_log_inv_delta();
    let proxy = |j: usize| {
        let c = SCALE_GRID[j];
        let a = params.mixture_regularisers()[j];
        let (ld, trace) = values
            .iter()
            .map(|l| l.max(0.0))
            .fold((0.0, 0.0), |(ld, tr), l| {
                (ld + (l / a).ln_1p(), tr + 1.0 / (l + a))
            });
        let variance = if values.is_empty() {
            1.0
        } else {
            (t / trace - a).max(0.0)
        };
        (norm_sq + c * (ld + confidence)) * variance
    };
    let mut best = 0;
    let mut best_value = proxy(0);
    for j in 1..SCALE_GRID.len() {
        let v = proxy(j);
        if v < best_value {
            (best, best_value) = (j, v);
        }
    }
    best
}

#[cfg(feature = "serde")]
super::exact_snapshot!(Amm, "amm", |b| {
    b.params.restore()?;
    let regularisers = b.params.mixture_regularisers();
    crate::snapshot::ensure(b.scale_index < regularisers.len(), || {
        "the covariance scale's index is beyond the grid".into()
    })?;
    super::same_regularisers(&b.posterior, &[regularisers[b.scale_index]])
});
