//! Numerical health of the exact posterior: scheduled residual checks of the incremental
//! Cholesky factors, refactorisation on drift, and the pivot policy.
//!
//! # Policy
//! - **Regulariser, not jitter.** Every factor is of K_t + aI with a > 0 the bound's own
//!   regulariser, so its pivots are at least √a in exact arithmetic; nothing is added to K.
//! - **Pivots.** When rounding makes an appended row's posterior variance ρ_a²(x) slightly
//!   negative (by at most 10⁻⁶·(k(x, x) + a): a point duplicating the data under a tiny a),
//!   it is raised to 0, so the pivot is √a — the smallest jitter that makes the factor valid,
//!   applied to that pivot only. Every such clamp is counted in [`Health::clamped_pivots`].
//! - **No escalating jitter.** Beyond that tolerance the update is refused with
//!   [`crate::Error::NotPositiveDefinite`] and the posterior is left unchanged. Either the kernel
//!   is not positive semidefinite, or κ(K_t + aI) ≈ t·k/a exceeds 1/ε (e.g. a = 10⁻¹³ with
//!   thousands of points within 10⁻⁷, `tests/integration/numerical_health.rs`). GPyTorch's
//!   `psd_safe_cholesky` would retry with escalating jitter; here a is the bound's regulariser,
//!   which sets its confidence width, so raising it behind the caller's back would change the
//!   guarantee. The remedy is a larger a (a smaller scale c, or a larger σ).
//! - **Residual checks.** Every [`Health::CHECK_EVERY`] changes (appends or sliding-window
//!   downdates) one row i of every factor is checked against a from-scratch recomputation:
//!   max_j |(LLᵀ)_ij − K_ij − aδ_ij| / (K_ii + a) and |(Lw)_i − y_i| / (|y_i| + √(K_ii + a)·‖w‖)
//!   in O(t·i), about 1/256 of an append. The row is drawn from the update counter, so the
//!   schedule is reproducible. Row-by-row Cholesky appends are backward stable (residual
//!   ≈ t·ε); downdates (SW-GP-UCB) can drift.
//! - **Refactorisation.** When the residual exceeds [`Health::REFACTOR_TOLERANCE`] (or 10× the
//!   residual right after the last refactorisation, if conditioning keeps it higher), every
//!   factor is recomputed from the stored observations by the blocked factorisation of
//!   [`super::ExactPosterior::observe_many`] (O(t³/3)), and a fixed arm set is solved again.
//!   Counted in [`Health::refactorisations`].
//!
//! The module also holds the clamping of rounded posterior variances, which the single-row
//! append, the queries and the pruned argmax share. The thresholds are [`Health`]'s associated
//! constants; the residual of a given row is [`super::PosteriorDiagnostics::residual`].

use crate::error::{Error, Result};

/// Changes (appends and downdates) between two residual checks.
pub(crate) const CHECK_EVERY: u32 = 256;

/// Relative residual beyond which the factors are recomputed from scratch: 10⁴ times the
/// backward error of a Cholesky factorisation of 10⁴ rows (≈ t·ε).
pub(crate) const REFACTOR_TOLERANCE: f64 = 1e-8;

/// The numerical record of an [`super::ExactPosterior`] ([`super::ExactPosterior::health`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Health {
    /// Residual checks run.
    pub checks: u64,
    /// The largest relative residual any check found.
    pub largest_residual: f64,
    /// The relative residual of the latest check (after any refactorisation it caused).
    pub last_residual: f64,
    /// Refactorisations from scratch triggered by a residual beyond the tolerance.
    pub refactorisations: u64,
    /// Appended pivots whose rounded posterior variance was raised to 0 (see the module's
    /// policy).
    pub clamped_pivots: u64,
    /// Changes since the last check.
    pub(crate) changes_since_check: u32,
    /// The residual right after the last refactorisation: drift is measured against it.
    pub(crate) floor: f64,
}

impl Health {
    /// Changes (single appends and sliding-window downdates) between two scheduled residual
    /// checks: after t calls of [`super::ExactPosterior::observe`] and no other change,
    /// [`Health::checks`] is ⌊t / 256⌋.
    pub const CHECK_EVERY: u32 = CHECK_EVERY;

    /// Relative residual beyond which a check recomputes the factors from scratch (counted in
    /// [`Health::refactorisations`]).
    pub const REFACTOR_TOLERANCE: f64 = REFACTOR_TOLERANCE;

    /// The tolerance the next check applies.
    pub(crate) fn tolerance(&self) -> f64 {
        REFACTOR_TOLERANCE.max(10.0 * self.floor)
    }
}

/// Relative size, against k(x, x) + a, below which a negative posterior variance is taken for
/// rounding and clamped to 0. The forward-substitution error grows like t·ε·√cond(K + aI); this
/// leaves two orders of magnitude of room at t = 1000 even for a = 10⁻¹⁰.
const ROUNDING_TOLERANCE: f64 = 1e-6;

/// Clamps a posterior variance that rounding made slightly negative to 0.
///
/// # Errors
/// [`Error::NotPositiveDefinite`] for a variance below −10⁻⁶·`scale` (the kernel is not positive
/// semidefinite) or a NaN one.
pub(crate) fn clamp_variance(variance: f64, scale: f64, row: usize) -> Result<f64> {
    if variance >= 0.0 {
        Ok(variance)
    } else if variance >= -ROUNDING_TOLERANCE * scale {
        Ok(0.0)
    } else {
        Err(Error::NotPositiveDefinite {
            row,
            pivot: variance,
        })
    }
}
