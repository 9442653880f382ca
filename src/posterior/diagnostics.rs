//! Read-only diagnostics of an [`ExactPosterior`]'s factors, for tests, benchmarks and
//! numerical investigations.
//!
//! The Cholesky factors, the residual check and the refactorisation are internals of the
//! posterior (their layout and schedule may change); what a user may want to look at — the rows
//! of L and the residual of a row against a from-scratch recomputation — is reached through the
//! small borrowed view [`PosteriorDiagnostics`], apart from the cumulative [`super::Health`]
//! report. It lives in its own module so that `exact.rs` does not depend on it.

use super::ExactPosterior;
use crate::kernel::Kernel;

/// A borrowed view of an [`ExactPosterior`]'s Cholesky factors
/// ([`ExactPosterior::diagnostics`]).
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::Rbf;
/// use kernel_bandits::posterior::ExactPosterior;
/// let mut gp = ExactPosterior::new(Rbf::new(0.5)?, &[0.25])?;
/// gp.observe(&[0.2], 1.0)?;
/// let diagnostics = gp.diagnostics();
/// // one observation: L = [√(k(x, x) + a)] = [√1.25]
/// assert!((diagnostics.cholesky_row(0, 0)[0] - 1.25f64.sqrt()).abs() < 1e-15);
/// assert!(diagnostics.residual(0) < 1e-15);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug)]
pub struct PosteriorDiagnostics<'a, K> {
    posterior: &'a ExactPosterior<K>,
}

impl<K: Kernel> ExactPosterior<K> {
    /// Read-only diagnostics of the factors: their rows and the residual of a row.
    pub fn diagnostics(&self) -> PosteriorDiagnostics<'_, K> {
        PosteriorDiagnostics { posterior: self }
    }
}

impl<'a, K: Kernel> PosteriorDiagnostics<'a, K> {
    /// Row `i` of the lower Cholesky factor L of K_t + aI (its first `i + 1` entries), for the
    /// regulariser with index `r`.
    ///
    /// # Panics
    /// If `r` is not a regulariser index or `i >= t`.
    pub fn cholesky_row(&self, r: usize, i: usize) -> &'a [f64] {
        self.posterior.factor(r).row(i)
    }

    /// The largest relative residual of row `i` over the factors, against a from-scratch
    /// recomputation of K_{i, 0..=i}: max_j |(LLᵀ)_ij − K_ij − aδ_ij| / (K_ii + a) and
    /// |(Lw)_i − y_i| / (|y_i| + √(K_ii + a)·‖w‖); O(t·i). This is what a scheduled check
    /// computes (see [`super::health`]); it changes nothing.
    ///
    /// # Panics
    /// If `i >= t`.
    pub fn residual(&self, i: usize) -> f64 {
        self.posterior.residual(i)
    }
}
