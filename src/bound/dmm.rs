//! DMM-UCB: the martingale-mixture bound minimised over a grid of regularisers.

use super::mixture::mixture_widths;
use super::{BoundParams, CheckedParams, ConfidenceBound, forward_posterior};
use crate::error::{Error, Result, positive};
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// The paper's grid of regularisers, as multiples of a0 = σ²/c (Flynn & Reeb 2024 §7).
pub const DMM_GRID: [f64; 5] = [0.1, 0.3, 1.0, 3.0, 10.0];

/// DMM-UCB (Flynn & Reeb 2024 §5.4): UCB(x) = min_{a ∈ A} U_a(x), LCB(x) = max_{a ∈ A} L_a(x) with
/// U_a, L_a = μ_a ± (R̃_a/√a) ρ_a (Cor. 4.3) and A = {0.1, 0.3, 1, 3, 10}·σ²/c by default.
///
/// Every a gives a valid bound (weak duality of Thm 4.5), so the grid minimum is one too, and
/// it is never looser than AMM-UCB (a0 = σ²/c is always in the grid). The reported mean is
/// μ_{a0}.
///
/// With the adaptive scale (the default, [`BoundParams`]), the regularisers are σ²/c for the
/// nine c of [`super::SCALE_GRID`] (σ²·{1, 10^½, …, 10⁴}), R_t is the smallest R_t(c) over them
/// (each with ln(9/δ)), a0 is the regulariser of that c, and the reported mean μ_{a0}. The regularisers share one store of points; a query evaluates the kernel block
/// once and solves it against each factor.
///
/// **Rounding.** At a ≠ a0, R̃_a² = R_t² + aB² − a·q_a is a difference of two terms of the
/// order of ‖y‖², computed from the Cholesky factors of K_t + a0·I and K_t + aI; on
/// near-singular data (inputs closer than the kernel can tell apart, with targets that
/// disagree by far more than σ) it is a small fraction of either, and its rounding error is
/// not. The width therefore uses an upper bound on the exact R̃_a² from the factors' backward
/// error and the kernel values' accuracy (the bound and its proof: `rounded_radius_sq` in
/// `src/bound/mixture.rs`). Without it, DMM-UCB's LCB was found above the exact bound by 15%
/// of the width (two observations 10⁻⁷ apart with y = ±1, σ = 10⁻⁴; RBF, ℓ = 0.5, B = 10,
/// δ = 0.1, c = 1, at 10⁻³ from them). On ordinary data the allowance widens the bound by
/// 10⁻¹¹ … 10⁻⁶ relative (more with more data and smaller σ: 2.5·10⁻⁶ at t = 1000 with
/// σ = 0.01, Matérn 5/2, d = 3); on such near-singular data it can take away the advantage of the
/// smaller regularisers, so that DMM-UCB falls back towards U_{a0}, which has no such
/// difference (R̃_{a0}² = σ²·ld_{a0} + a0B² + 2σ² ln(1/δ), Lemma C.2) and is AMM-UCB's to the
/// bit. An extended-precision check (`python/tests/test_cmm_exact.py`: mpmath at 60 digits,
/// 40 cases of clusters 10⁻⁹–10⁻⁵ wide, exact duplicates and their neighbours, queried after
/// every observation) finds no DMM-UCB value on the wrong side of the exact bound. μ_a(x) and
/// ρ_a(x) carry their own, much smaller, rounding, for which nothing is added: in a binary64
/// replica of those 40 cases it moved U_a(x) by at most 9·10⁻⁷ of the width.
/// The allowance assumes the backward error of a Cholesky factorisation, which holds after
/// observations, refactorisations and `truncate`, but is not proven after `remove_oldest`
/// (sliding windows), whose rotations add to it between the runtime residual checks.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let kernel = Matern::new(2.5, 0.5)?;
/// let params = BoundParams::new().sigma(0.1).norm_bound(10.0).delta(0.01).scale(1.0);
/// let mut dmm = Dmm::new(kernel, params)?;
/// let mut amm = Amm::new(kernel, params)?;
/// for (x, y) in [([0.1, 0.2], 0.3), ([0.5, 0.5], -0.2), ([0.9, 0.1], 0.8)] {
///     dmm.observe(&x, y)?;
///     amm.observe(&x, y)?;
/// }
/// let query = [[0.3, 0.3], [0.7, 0.9]];
/// let (d, a) = (dmm.bounds(&query)?, amm.bounds(&query)?);
/// assert!(d.ucb[0] <= a.ucb[0] && d.ucb[1] <= a.ucb[1]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Dmm<K> {
    posterior: ExactPosterior<K>,
    params: CheckedParams,
    /// Index of a0 among the posterior's regularisers (fixed c); with an adaptive c, the grid's
    /// regularisers come first and a0 is the one with the smallest R_t, found at each query.
    mixture_index: usize,
}

impl<K: Kernel> Dmm<K> {
    /// DMM-UCB on the paper's grid [`DMM_GRID`]·σ²/c.
    ///
    /// # Errors
    /// Invalid parameters (see [`BoundParams::check`]).
    pub fn new(kernel: K, params: BoundParams) -> Result<Self> {
        Self::with_grid(kernel, params, &DMM_GRID)
    }

    /// DMM-UCB on the grid `multipliers`·σ²/c; a0 = σ²/c itself is added if absent, since the
    /// radius R_t is evaluated there. With the adaptive scale the regularisers are σ²/c for c
    /// in [`super::SCALE_GRID`], followed by `multipliers`·σ².
    ///
    /// # Errors
    /// Invalid parameters, or a multiplier that is not finite and positive.
    pub fn with_grid(kernel: K, params: BoundParams, multipliers: &[f64]) -> Result<Self> {
        let params = params.check()?;
        if multipliers.is_empty() {
            return Err(Error::InvalidParameter {
                name: "multipliers",
                value: 0.0,
                expected: "at least one grid point",
            });
        }
        let a0 = params.mixture_regulariser();
        let mut regularisers = multipliers
            .iter()
            .map(|&m| positive("multiplier", m).map(|m| m * a0))
            .collect::<Result<Vec<_>>>()?;
        if params.is_adaptive() {
            let mut all = params.mixture_regularisers();
            if multipliers != DMM_GRID {
                all.extend(regularisers);
            }
            return Ok(Self {
                posterior: ExactPosterior::new(kernel, &all)?,
                params,
                mixture_index: 0,
            });
        }
        let mixture_index = match multipliers.iter().position(|&m| m == 1.0) {
            Some(i) => {
                regularisers[i] = a0;
                i
            }
            None => {
                regularisers.push(a0);
                regularisers.len() - 1
            }
        };
        Ok(Self {
            posterior: ExactPosterior::new(kernel, &regularisers)?,
            params,
            mixture_index,
        })
    }

    /// The validated parameters.
    pub fn params(&self) -> &CheckedParams {
        &self.params
    }

    /// The index of a0, whose R_t the widths use (with an adaptive c: the grid point with the
    /// smallest R_t(c), Flynn & Reeb 2024 Eq. 8, each with ln(9/δ)).
    fn mixture_index(&self) -> usize {
        if self.params.is_adaptive() {
            super::mixture::best_data_radius(
                &self.params,
                &self.posterior,
                0..super::SCALE_GRID.len(),
            )
            .0
        } else {
            self.mixture_index
        }
    }

    /// The covariance scale c whose R_t the bound uses now: the fixed c, or the grid point
    /// with the smallest R_t(c) when c is adaptive.
    pub fn scale_in_use(&self) -> f64 {
        if self.params.is_adaptive() {
            super::SCALE_GRID[self.mixture_index()]
        } else {
            self.params.scale()
        }
    }

    /// The underlying exact posterior (one factor per grid regulariser).
    pub fn posterior(&self) -> &ExactPosterior<K> {
        &self.posterior
    }

    /// R̃_a/√a for every regulariser, in grid order, followed by a0's if a0 was not in the
    /// grid.
    pub fn widths(&self) -> Vec<f64> {
        let r0 = self.mixture_index();
        mixture_widths(
            &self.params,
            &self.posterior,
            0..self.posterior.regularisers().len(),
            r0,
        )
    }
}

impl<K: Kernel> ConfidenceBound for Dmm<K> {
    fn name(&self) -> &'static str {
        "dmm"
    }

    /// R̃_a² at every regulariser of the grid.
    fn diagnostics(&self) -> super::Diagnostics {
        super::mixture::mixture_diagnostics(
            &self.params,
            &self.posterior,
            0..self.posterior.regularisers().len(),
            self.mixture_index(),
        )
    }

    forward_posterior!(|b| widths: b.widths(), mean: b.mixture_index());
}

/// B and δ enter only DMM-UCB's widths R̃_a/√a, computed at every query from the cached
/// factors of K_t + aI, which depend on σ, c and the grid alone: the change is O(1).
impl<K: Kernel> super::AdjustableNorm for Dmm<K> {
    fn norm_bound(&self) -> f64 {
        self.params.norm_bound()
    }
    fn delta(&self) -> f64 {
        self.params.delta()
    }
    fn set_norm_bound(&mut self, norm_bound: f64, delta: f64) -> Result<()> {
        self.params = self.params.with_norm_bound(norm_bound, delta)?;
        Ok(())
    }
}

#[cfg(feature = "serde")]
super::exact_snapshot!(Dmm, "dmm", |b| {
    b.params.restore()?;
    if b.params.is_adaptive() {
        let grid = b.params.mixture_regularisers();
        return crate::snapshot::ensure(
            b.posterior.regularisers().take(grid.len()).eq(grid),
            || "the adaptive scale's regularisers are not the grid's".into(),
        );
    }
    let a0 = b.params.mixture_regulariser();
    crate::snapshot::ensure(
        b.posterior.regularisers().nth(b.mixture_index) == Some(a0),
        || "the mixture regulariser a0 is not in the grid".into(),
    )
});
