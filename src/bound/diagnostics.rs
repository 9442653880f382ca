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

    /// What an empty confidence set means, in one sentence for a warning, or `None` when the
    /// set is not known to be empty. See also [`CheckedBounds::describe`], which adds where the
    /// bounds cross.
    pub fn describe(&self) -> Option<String> {
        self.empty_set().then(|| {
            format!(
                "the confidence set is empty{} after {} observations; the data refute the \
                 assumptions (σ, B or the kernel), and the bound's values are not confidence \
                 bounds",
                self.radius_clause(),
                self.observations
            )
        })
    }

    /// " (R̃_a² = r < 0 at a = a)" for an empty set, else "".
    fn radius_clause(&self) -> String {
        match self.smallest_radius {
            Some((a, r)) if r.is_nan() || r < 0.0 => {
                format!(" (R̃_a² = {r:.6e} < 0 at a = {a:.6e})")
            }
            _ => String::new(),
        }
    }
}

/// Bounds at a batch of points with the diagnosis beside them
/// ([`super::ConfidenceBound::evaluate_checked`]): the values of
/// [`super::ConfidenceBound::evaluate`], the bound's [`Diagnostics`] and the points where they
/// cross.
///
/// Crossed bounds (LCB > UCB) and an empty confidence set have one cause: no function with
/// ‖f‖_H ≤ B explains the data within the noise radius of σ (Flynn & Reeb 2024 Lemma 4.2), so
/// the data refute σ, B or the kernel (or the event of probability δ happened). The values
/// are then not confidence bounds, crossed or not. [`CheckedBounds::misspecified`] says so;
/// [`CheckedBounds::describe`] says it in a sentence, for a warning.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// // B = 0.01 cannot explain targets of 1 with noise 0.01: CMM sees the empty set.
/// let params = BoundParams::new().sigma(0.01).norm_bound(0.01);
/// let mut cmm = Cmm::new(Rbf::new(0.3)?, params)?;
/// cmm.observe(&[0.5], 1.0)?;
/// let checked = cmm.bounds_checked(&[[0.5], [0.9]])?;
/// assert!(checked.misspecified() && checked.diagnostics.empty_set());
/// assert!(checked.describe().unwrap().contains("confidence set is empty"));
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CheckedBounds {
    /// Mean, LCB and UCB at each point, as [`super::ConfidenceBound::evaluate`] returns them.
    pub bounds: super::Bounds,
    /// The bound's diagnostics after its latest update.
    pub diagnostics: Diagnostics,
    /// The points where LCB > UCB or either is NaN ([`super::Bounds::crossed`]), in order.
    pub crossed: Vec<usize>,
}

impl CheckedBounds {
    /// The bounds with their diagnosis: `crossed` is computed from `bounds`.
    pub fn new(bounds: super::Bounds, diagnostics: Diagnostics) -> Self {
        let crossed = bounds.crossed();
        Self {
            bounds,
            diagnostics,
            crossed,
        }
    }

    /// Whether the data refute the assumptions: the confidence set is certainly empty
    /// ([`Diagnostics::empty_set`]) or LCB > UCB at some point (which DMM-UCB's grid can show
    /// where its diagnostics miss the empty set). The values are then not confidence bounds.
    pub fn misspecified(&self) -> bool {
        self.diagnostics.empty_set() || !self.crossed.is_empty()
    }

    /// What is wrong, in one sentence for a warning, or `None` when nothing is: where the
    /// bounds cross (k of n points), the radius that shows the set empty, and what that means.
    /// Front ends append the remedies in their own terms (a larger B or σ, another kernel, or
    /// [`super::AdaptiveNorm`], which doubles B whenever the data refute it).
    pub fn describe(&self) -> Option<String> {
        if !self.misspecified() {
            return None;
        }
        let n = self.bounds.len();
        let k = self.crossed.len();
        let radius = self.diagnostics.radius_clause();
        let what = match (k, self.diagnostics.empty_set()) {
            (0, _) => format!(
                "the confidence set is empty{radius}, although LCB ≤ UCB at the {n} points asked"
            ),
            (_, true) => {
                format!("LCB > UCB at {k} of {n} points: the confidence set is empty{radius}")
            }
            (_, false) => format!(
                "LCB > UCB at {k} of {n} points: the confidence set is empty (the regularisers \
                 checked did not show it)"
            ),
        };
        Some(format!(
            "{what}; the data refute the assumptions (σ, B or the kernel), and these values are \
             not confidence bounds"
        ))
    }
}
