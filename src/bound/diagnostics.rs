//! What the data say about a bound's assumptions (Flynn & Reeb 2024 §4: σ-sub-Gaussian noise and
//! ‖f‖_H ≤ B).

/// The state of a bound's assumptions after its latest update ([`super::ConfidenceBound::diagnostics`]).
///
/// The martingale-mixture bounds rest on the set F = {f : ‖f_t − y_t‖ ≤ R_t, ‖f‖_H ≤ B}
/// (Flynn & Reeb 2024 Thm 4.4). By Lagrangian duality (the S-lemma: one quadratic constraint),
/// min_{‖f‖_H ≤ B} ‖f_t − y_t‖² = sup_{a > 0} a(q_a − B²), so F is empty exactly when
/// R̃_a² = R_t² + aB² − a q_a < 0 for some a > 0. An empty F means the data contradict σ, B
/// or δ — or the δ-probability event happened — and no bound computed from them means
/// anything: DMM's and CMM's LCB may then exceed their UCB.
///
/// Which regularisers are checked:
/// - **CMM-UCB**: all a > 0 (the minimum of the convex R̃_a² over a, from its
///   eigendecomposition), so [`Diagnostics::empty_set`] is exact.
/// - **DMM-UCB**: its grid of a; an empty F that the grid misses can still show as a crossed
///   pair LCB > UCB at some point ([`super::Bounds::crossed`]).
/// - **AMM-UCB**: a0 only, where R̃² ≥ 0 always (Lemma C.2): it cannot see misspecification.
/// - AY, IGP, K-UCB, BKB and EK-UCB have no mixture radius: `smallest_radius` is `None`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Diagnostics {
    /// Observations absorbed.
    pub observations: usize,
    /// (a, R̃_a²) with the smallest R̃_a² among the regularisers checked, or `None` for bounds
    /// without a martingale-mixture radius.
    pub smallest_radius: Option<(f64, f64)>,
}

impl Diagnostics {
    /// Diagnostics of a bound that has nothing to check.
    pub fn unchecked(observations: usize) -> Self {
        Self {
            observations,
            smallest_radius: None,
        }
    }

    /// Whether the confidence set is certainly empty: R̃_a² < 0 (or NaN) for a regulariser
    /// checked. The bound's values are then not confidence bounds.
    pub fn empty_set(&self) -> bool {
        self.smallest_radius
            .is_some_and(|(_, r)| r.is_nan() || r < 0.0)
    }
}
