//! A norm bound B learnt by refutation: start from a guess B₀ and double B whenever the data
//! show the martingale-mixture confidence set to be empty (Flynn & Reeb 2024 §4; App. F.3 shows
//! how much a loose B costs in regret, which is why guessing high is not free either).
//!
//! See [`AdaptiveNorm`] for the scheme and its validity argument.

use super::{ArmSetInfo, BoundGradient, Bounds, ConfidenceBound, Diagnostics, PendingVariance};
use crate::error::{Error, Result};
use crate::points::Points;

/// A bound whose norm bound B and confidence level δ can be replaced in place: DMM-UCB and
/// CMM-UCB (Flynn & Reeb 2024 §4.3, §5.4), and an [`super::AnyBound`] holding one of them.
///
/// B and δ enter only the radii R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ) and
/// R̃_a² = R_t² + aB² − a q_a (Eq. 8, Cor. 4.3), never the posterior state, which depends on
/// σ and c alone (the regularisers a = m·σ²/c): replacing them costs O(1), and the bound then
/// equals one built with the new B and δ on the same data. Not implemented for AMM-UCB, whose
/// R̃² at a0 is never negative (Lemma C.2), so that its data can never refute B.
///
/// # Examples
/// ```
/// use kernel_bandits::bound::AdjustableNorm;
/// use kernel_bandits::prelude::*;
/// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.01);
/// let mut dmm = Dmm::new(Matern::new(2.5, 0.5)?, params)?;
/// dmm.observe(&[0.2, 0.4], 1.5)?;
/// dmm.set_norm_bound(4.0, 0.005)?;
/// assert_eq!((dmm.norm_bound(), dmm.delta()), (4.0, 0.005));
/// assert!(dmm.set_norm_bound(-1.0, 0.005).is_err());
/// assert_eq!(dmm.norm_bound(), 4.0);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub trait AdjustableNorm: ConfidenceBound {
    /// B, the bound on ‖f‖_H in force.
    fn norm_bound(&self) -> f64;

    /// δ, the failure probability in force.
    fn delta(&self) -> f64;

    /// Replaces B and δ, as [`super::CheckedParams::with_norm_bound`] validates them.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if B is not finite and positive or δ ∉ (0, 1];
    /// [`Error::Unsupported`] for an [`super::AnyBound`] of another kind than DMM or CMM. The
    /// bound is unchanged on error.
    fn set_norm_bound(&mut self, norm_bound: f64, delta: f64) -> Result<()>;
}

macro_rules! forward_adjustable {
    ($($wrapper:ty),*) => {$(
        impl<B: AdjustableNorm + ?Sized> AdjustableNorm for $wrapper {
            fn norm_bound(&self) -> f64 {
                (**self).norm_bound()
            }
            fn delta(&self) -> f64 {
                (**self).delta()
            }
            fn set_norm_bound(&mut self, norm_bound: f64, delta: f64) -> Result<()> {
                (**self).set_norm_bound(norm_bound, delta)
            }
        }
    )*};
}
forward_adjustable!(Box<B>, &mut B);

/// The default cap on the level of [`AdaptiveNorm`]: B may grow to 2³⁹B₀ ≈ 5.5·10¹¹B₀.
pub const DEFAULT_MAX_LEVEL: u32 = 40;

/// One move of [`AdaptiveNorm`] to the next level, after the data refuted the previous one.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NormDoubling {
    /// Observations absorbed when the refutation was found (the round t).
    pub observations: usize,
    /// The new level k (≥ 2).
    pub level: u32,
    /// B_{k−1}, refuted.
    pub old_norm: f64,
    /// B_k = 2B_{k−1}.
    pub new_norm: f64,
    /// The evidence: (a, R̃_a²) with R̃_a² < 0 at the old B (δ is the same at every level), as
    /// the inner bound's [`Diagnostics::smallest_radius`] reported it.
    pub refuted_by: (f64, f64),
}

/// A DMM-UCB or CMM-UCB whose norm bound B is doubled whenever the data refute it: level k uses
/// B_k = 2^{k−1}B₀ and the same δ as every other level, where B₀ and δ are the inner bound's
/// when the wrapper is built (Flynn & Reeb 2024 Lemma 4.2; why one δ serves every level is
/// under *Validity*).
///
/// # What the data can say about B
///
/// The confidence set of Flynn & Reeb 2024 Lemma 4.2 is F_t = {f : ‖f_t − y_t‖ ≤ R_t,
/// ‖f‖_H ≤ B}, R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ) (Eq. 8). It is empty exactly when
/// R̃_a² = R_t² + aB² − a q_a < 0 for some a > 0 (Cor. 4.3; see [`super::Diagnostics`]). An
/// empty F_t *refutes* (σ, B, δ): on the event of probability ≥ 1 − δ where Eq. 8 holds, the
/// true f lies in F_t if ‖f‖_H ≤ B. The data can refute a B that is too small; they can never
/// confirm one — a nonempty F_t is also what a too-small B usually gives.
///
/// # The doubling scheme
///
/// [`AdaptiveNorm`] runs level k = 1, 2, … with B_k = 2^{k−1}B₀, all with the one δ. After every
/// absorbed observation, while the inner bound's diagnostics report R̃_a² < 0, it moves to the
/// next level and logs a [`NormDoubling`]. At level k the wrapper is exactly a plain DMM-UCB /
/// CMM-UCB built with B_k and δ on the same data.
///
/// **Validity.** Let E_δ be the event that ‖f_t − y_t‖² ≤ R_t² for every t ≥ 1 at once, where
/// f_t = (f(x_1), …, f(x_t)) are the true function's values: Eq. 8 of Flynn & Reeb 2024, which
/// Ville's inequality for the martingale mixture with P_t = N(0, cK_t) gives with probability
/// ≥ 1 − δ (their Thm 4.1, Eq. 6–8). E_δ is a statement about σ, c, δ, the inputs and the
/// noise; B is not in it — Lemma 4.2 adds B only through the deterministic constraint
/// ‖f‖_H ≤ B. The levels change B alone (σ, c and a0 = σ²/c stay bit for bit,
/// [`super::CheckedParams::with_norm_bound`]), so they all share the one event E_δ, and on E_δ
/// the true f lies in F_t(B) for every t and every B ≥ ‖f‖_H at once, and so in the ellipsoid
/// F̃_t(a) ⊇ F_t(B) of every a > 0 (Cor. 4.3) that DMM-UCB's grid and CMM-UCB's minimum over a
/// (Thm 4.5) use. No union bound over the levels is needed; splitting δ over them would only
/// widen every bound. Hence, with probability ≥ 1 − δ, on the one event E_δ:
/// - no level with B_k ≥ ‖f‖_H is ever refuted, whatever data-dependent order the levels are
///   visited in; so the level never passes k* = min{k : B_k ≥ ‖f‖_H}, and if B₀ < ‖f‖_H the
///   final B is below 2‖f‖_H;
/// - at every round whose level has B_k ≥ ‖f‖_H — every round if B₀ ≥ ‖f‖_H, otherwise every
///   round from the first one at level k* on, if k* is ever reached — the bounds contain f
///   everywhere: LCB_t(x) ≤ f(x) ≤ UCB_t(x) for every x, all such rounds at once.
///
/// Before level k* is reached the bounds are those of a B below ‖f‖_H and may be wrong, and
/// nothing forces a too-small level to be refuted: the wrapper may stay below k* for ever. As
/// the data never confirm a B, they never tell when k* has been reached either. Do not base a
/// safety decision on an [`AdaptiveNorm`]'s bounds unless its current B_k is known, by an
/// argument outside the data, to be at least ‖f‖_H; it is a device for regret (B stays below
/// 2‖f‖_H, so the bounds are never much wider than with the true norm), not a certificate.
///
/// **Why earlier times never need re-checking.** Going from level k to k + 1 raises B and
/// leaves R_t² as it was, so R̃_a² = R_t² + aB² − a q_a grows for every a and every t: a set
/// nonempty at level k at some time is nonempty at level k + 1 at that time. A check after the
/// latest observation is therefore all a doubling needs, and a batch
/// ([`ConfidenceBound::observe_many`]) is checked after every prefix: a set that was empty at
/// an intermediate time refutes that level even if it is nonempty at the end.
///
/// **Termination.** The ridge estimate μ_{a0} satisfies ‖μ_t − y_t‖² + a0‖μ‖²_H = a0 q_{a0}
/// ≤ R_t², so it lies in F_t as soon as B² ≥ q_{a0} = y_tᵀ(K_t + a0 I)⁻¹y_t: every level with
/// B_k² ≥ q_{a0} is nonempty, whatever the data (even duplicate inputs with wildly different
/// targets: R_t² contains their disagreement ‖P_N y‖² through a0 q_{a0}). So the data cannot
/// refute σ or δ alone, and doubling stops after finitely many levels — but B may have to grow
/// to about √q_{a0} ≤ ‖y‖/√a0, absurd for targets far larger than σ. A cap on the level
/// ([`AdaptiveNorm::with_max_level`], default [`DEFAULT_MAX_LEVEL`]) bounds the work; at the
/// cap the set is left empty, the diagnostics still say so, and [`AdaptiveNorm::exhausted`]
/// records when.
///
/// **The price.** Nothing in δ: a level's bound is that of the plain bound with its B_k and δ.
/// The cost is in B: B_k may be up to twice ‖f‖_H (wider bounds), and below k* the bounds are
/// not valid (above). And the scheme trusts σ: if σ is too small, the set may be emptied by
/// σ's fault, and doubling B hides it (up to the cap) instead of reporting it.
///
/// **Which refutations are seen.** CMM-UCB's diagnostics minimise R̃_a² over all a > 0, so
/// every refutation is seen; DMM-UCB's look at its grid of a only and may miss one (then the
/// level stays lower than CMM's would). AMM-UCB cannot be used: its R̃² at a0 is never
/// negative (Lemma C.2), so its data never refute B.
///
/// # Behaviour
///
/// After every absorbed observation (in [`ConfidenceBound::observe`], after every prefix of
/// [`ConfidenceBound::observe_many`], and after [`ConfidenceBound::remove_oldest`]), while the
/// inner bound's [`Diagnostics::smallest_radius`] is negative, it moves to the next level and
/// logs a [`NormDoubling`] ([`AdaptiveNorm::doublings`]). A NaN radius (q_a or ld_a overflowed)
/// is a numerical failure, not a refutation: it changes nothing and stays visible in
/// [`ConfidenceBound::diagnostics`]. Levels never go back: a refutation is a fact about data
/// seen, so [`ConfidenceBound::truncate`] keeps the level (the truncated wrapper equals a fresh
/// bound at the current B_k and δ on the remaining data). Every other method forwards to the
/// inner bound, at the current level. The check costs one [`ConfidenceBound::diagnostics`] per
/// observation: O(|grid|) for DMM-UCB; for CMM-UCB the eigendecomposition of K_t, which its next
/// query would compute anyway.
///
/// # Examples
/// ```
/// use kernel_bandits::bound::AdaptiveNorm;
/// use kernel_bandits::prelude::*;
/// let params = BoundParams::new().sigma(0.1).norm_bound(0.01).delta(0.01);
/// let mut bound = AdaptiveNorm::new(Cmm::new(Matern::new(2.5, 0.5)?, params)?)?;
/// // Values far beyond what ‖f‖_H ≤ 0.01 allows.
/// bound.observe(&[0.2, 0.4], 3.0)?;
/// bound.observe(&[0.6, 0.1], -2.0)?;
/// assert!(bound.level() > 1 && !bound.doublings().is_empty());
/// assert!(!bound.diagnostics().empty_set());
/// let step = bound.doublings()[0];
/// assert_eq!(step.new_norm, 2.0 * step.old_norm);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AdaptiveNorm<B> {
    inner: B,
    /// B₀.
    initial_norm: f64,
    /// δ, the same at every level.
    delta: f64,
    /// k ≥ 1.
    level: u32,
    max_level: u32,
    doublings: Vec<NormDoubling>,
    /// Observations absorbed when the set was first found empty at the cap.
    exhausted: Option<usize>,
}

/// B_k = 2^{k−1}B₀ (exact: a power of two times B₀).
fn level_norm(initial_norm: f64, level: u32) -> f64 {
    initial_norm * 2f64.powi(level as i32 - 1)
}

impl<B: AdjustableNorm> AdaptiveNorm<B> {
    /// Wraps `inner` with the default cap [`DEFAULT_MAX_LEVEL`]; see
    /// [`AdaptiveNorm::with_max_level`].
    ///
    /// # Errors
    /// As [`AdaptiveNorm::with_max_level`].
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::bound::AdaptiveNorm;
    /// use kernel_bandits::prelude::*;
    /// let params = BoundParams::new().norm_bound(2.0).delta(0.1);
    /// let bound = AdaptiveNorm::new(Dmm::new(Rbf::new(0.5)?, params)?)?;
    /// assert_eq!((bound.norm_bound(), bound.level(), bound.delta()), (2.0, 1, 0.1));
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn new(inner: B) -> Result<Self> {
        Self::with_max_level(inner, DEFAULT_MAX_LEVEL)
    }

    /// Wraps `inner`, whose B is B₀ and whose δ is the failure probability of every level (see
    /// *Validity* on [`AdaptiveNorm`]); level 1 is `inner` as it is. At most `max_level` levels
    /// are used, B up to 2^{max_level−1}B₀. If `inner` already holds observations they are
    /// checked at once, as data observed through the wrapper would be (a refutation is then
    /// logged at their count).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for an [`super::AnyBound`] of a kind other than DMM or CMM;
    /// [`Error::InvalidParameter`] if `max_level` is 0 or if B at the cap is not finite.
    /// `inner` is dropped on error.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::bound::{AdaptiveNorm, BoundConfig, BoundKind};
    /// use kernel_bandits::prelude::*;
    /// let config = BoundConfig::new().params(BoundParams::new().norm_bound(1.0));
    /// let dmm = BoundKind::Dmm.build(Rbf::new(0.5)?, &config)?;
    /// let bound = AdaptiveNorm::with_max_level(dmm, 10)?;
    /// assert_eq!(bound.max_level(), 10);
    /// let amm = BoundKind::Amm.build(Rbf::new(0.5)?, &config)?;
    /// assert!(matches!(AdaptiveNorm::new(amm), Err(Error::Unsupported { .. })));
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn with_max_level(mut inner: B, max_level: u32) -> Result<Self> {
        let (initial_norm, delta) = (inner.norm_bound(), inner.delta());
        // Probing the kind first: Unsupported is the error for a bound without B.
        inner.set_norm_bound(initial_norm, delta)?;
        if max_level == 0 || max_level > i32::MAX as u32 {
            return Err(Error::InvalidParameter {
                name: "max_level",
                value: f64::from(max_level),
                expected: "at least 1 (and at most 2^31 - 1)",
            });
        }
        // B_k grows with k: if the cap's B is finite, every level's is.
        if !level_norm(initial_norm, max_level).is_finite() {
            return Err(Error::InvalidParameter {
                name: "max_level",
                value: f64::from(max_level),
                expected: "a cap at which B = 2^(max_level-1)·B0 is finite",
            });
        }
        let mut wrapper = Self {
            inner,
            initial_norm,
            delta,
            level: 1,
            max_level,
            doublings: Vec::new(),
            exhausted: None,
        };
        wrapper.refute();
        Ok(wrapper)
    }

    /// While the inner bound's confidence set is empty (a negative R̃_a²), moves to the next
    /// level; at the cap, records the exhaustion once.
    fn refute(&mut self) {
        loop {
            let Some((a, radius_sq)) = self.inner.diagnostics().smallest_radius else {
                return;
            };
            // A NaN radius is a numerical failure, not a refutation.
            if radius_sq >= 0.0 || radius_sq.is_nan() {
                return;
            }
            let next = self.level + 1;
            let norm = level_norm(self.initial_norm, next);
            // Valid by the construction's check of the cap; a failure is treated as the cap.
            if next > self.max_level || self.inner.set_norm_bound(norm, self.delta).is_err() {
                self.exhausted.get_or_insert(self.inner.len());
                return;
            }
            self.doublings.push(NormDoubling {
                observations: self.inner.len(),
                level: next,
                old_norm: level_norm(self.initial_norm, self.level),
                new_norm: norm,
                refuted_by: (a, radius_sq),
            });
            self.level = next;
        }
    }

    /// `inner` (e.g. the inner bound rebuilt on a refitted kernel) in this wrapper's place:
    /// B₀, δ, the cap, the current level (B_k is set on `inner`), the doubling history and the
    /// exhaustion record are kept, and `inner`'s observations, if any, are checked at once
    /// (levels only go up). Used by [`crate::agent::UcbAgent::refit`].
    ///
    /// # Errors
    /// As [`AdjustableNorm::set_norm_bound`] on `inner` (a kind without B); `inner` is dropped.
    pub(crate) fn with_inner(&self, mut inner: B) -> Result<Self> {
        inner.set_norm_bound(self.norm_bound(), self.delta)?;
        let mut wrapper = Self {
            inner,
            initial_norm: self.initial_norm,
            delta: self.delta,
            level: self.level,
            max_level: self.max_level,
            doublings: self.doublings.clone(),
            exhausted: self.exhausted,
        };
        wrapper.refute();
        Ok(wrapper)
    }

    /// Puts the inner bound back to `level` (a level it has been at: valid).
    fn restore_level(&mut self, level: u32) {
        self.level = level;
        let restored = self
            .inner
            .set_norm_bound(level_norm(self.initial_norm, level), self.delta);
        debug_assert!(restored.is_ok(), "a level already used is valid");
    }
}

impl<B> AdaptiveNorm<B> {
    /// B_k = 2^{k−1}B₀, the norm bound in force.
    pub fn norm_bound(&self) -> f64 {
        level_norm(self.initial_norm, self.level)
    }

    /// δ, the failure probability: the same at every level, and that of the guarantee over all
    /// levels together (one event, Flynn & Reeb 2024 Eq. 8; see *Validity* on [`AdaptiveNorm`]).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// B₀, the initial guess.
    pub fn initial_norm(&self) -> f64 {
        self.initial_norm
    }

    /// The level k ≥ 1.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// The cap on the level.
    pub fn max_level(&self) -> u32 {
        self.max_level
    }

    /// Every move to a higher level, in order.
    pub fn doublings(&self) -> &[NormDoubling] {
        &self.doublings
    }

    /// The number of observations at which the confidence set was first found empty at the
    /// cap, if ever: from then on the bounds may be vacuous (see [`Diagnostics::empty_set`]).
    pub fn exhausted(&self) -> Option<usize> {
        self.exhausted
    }

    /// The inner bound, at B_k and δ.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The inner bound, at B_k and δ.
    pub fn into_inner(self) -> B {
        self.inner
    }
}

impl<B: AdjustableNorm> ConfidenceBound for AdaptiveNorm<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn learns_norm(&self) -> bool {
        true
    }

    /// Absorbs the observation, then moves up while the data refute the level.
    fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.inner.observe(x, y)?;
        self.refute();
        Ok(())
    }

    /// One observation at a time, each followed by the check of [`ConfidenceBound::observe`],
    /// so that the result — doublings included — is that of the same sequence of `observe`
    /// calls, bit for bit (an empty set at an intermediate time refutes its level). This gives
    /// up DMM-UCB's blocked factorisation of a batch. The whole batch is checked first (lengths,
    /// dimension, finite targets); on a numerical failure the observations, the level and the
    /// log are put back as they were. The inner bound is put back by
    /// [`ConfidenceBound::truncate`], as the provided `observe_many` does: its observations are
    /// restored, but a bound that was empty keeps the input dimension the batch fixed, and its
    /// cached solves may differ in their last bits (the Python package copies the bound before
    /// a batch for a bit-identical rollback).
    fn observe_many(&mut self, points: &Points<'_>, targets: &[f64]) -> Result<()> {
        crate::error::one_target_per_point(points.len(), targets.len())?;
        if let Some(expected) = self.inner.dim()
            && !points.is_empty()
            && points.dim() != expected
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: points.dim(),
            });
        }
        if targets.iter().any(|y| !y.is_finite()) {
            return Err(Error::NonFinite {
                what: "observed target".into(),
            });
        }
        let (len, level, logged, exhausted) = (
            self.inner.len(),
            self.level,
            self.doublings.len(),
            self.exhausted,
        );
        let mut scratch = vec![0.0; points.dim()];
        for (j, &y) in targets.iter().enumerate() {
            if let Err(e) = self.observe(points.point(j, &mut scratch), y) {
                self.inner.truncate(len);
                self.restore_level(level);
                self.doublings.truncate(logged);
                self.exhausted = exhausted;
                return Err(e);
            }
        }
        Ok(())
    }

    fn diagnostics(&self) -> Diagnostics {
        self.inner.diagnostics()
    }
    fn observations(&self) -> Result<super::Observations> {
        self.inner.observations()
    }
    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
        self.inner.evaluate(points)
    }
    fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize> {
        self.inner.argmax_ucb(points)
    }
    fn top_ucb(&self, points: &Points<'_>, count: usize) -> Result<Vec<usize>> {
        self.inner.top_ucb(points, count)
    }
    fn top_ucb_with_terms(
        &self,
        points: &Points<'_>,
        count: usize,
    ) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
        self.inner.top_ucb_with_terms(points, count)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn dim(&self) -> Option<usize> {
        self.inner.dim()
    }

    /// Forgets the newer observations; the level stays (a refutation is a fact about data that
    /// were seen), so the result is a bound at B_k and δ on the first `len` observations.
    fn truncate(&mut self, len: usize) {
        self.inner.truncate(len)
    }

    /// Forgets the oldest observation, then checks the remaining window as
    /// [`ConfidenceBound::observe`] does (a window is not a prefix, so it may refute a level its
    /// prefixes did not; sliding windows are outside Lemma 4.2's guarantee anyway). The level
    /// never goes back.
    fn remove_oldest(&mut self) -> Result<()> {
        self.inner.remove_oldest()?;
        self.refute();
        Ok(())
    }
    fn fix_arms(&mut self, arms: &Points<'_>, memory_limit: Option<usize>) -> Result<bool> {
        self.inner.fix_arms(arms, memory_limit)
    }
    fn release_arms(&mut self) {
        self.inner.release_arms()
    }
    fn fixed_arms(&self) -> Option<ArmSetInfo> {
        self.inner.fixed_arms()
    }
    fn gradient(&self, x: &[f64]) -> Result<BoundGradient> {
        self.inner.gradient(x)
    }
    fn ucb_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        self.inner.ucb_gradient(x)
    }
    fn ucb_terms(&self) -> usize {
        self.inner.ucb_terms()
    }
    fn ucb_term_values(&self, x: &[f64]) -> Result<Vec<f64>> {
        self.inner.ucb_term_values(x)
    }
    fn ucb_term_values_at(&self, points: &[&[f64]]) -> Vec<Result<Vec<f64>>> {
        self.inner.ucb_term_values_at(points)
    }
    fn ucb_gradient_among(&self, x: &[f64], terms: &[usize]) -> Result<(f64, Vec<f64>)> {
        self.inner.ucb_gradient_among(x, terms)
    }
    fn ucb_regularity(&self) -> Result<super::UcbRegularity<'_>> {
        self.inner.ucb_regularity()
    }
    fn ucb_term_detail(&self, x: &[f64], term: usize) -> Result<super::UcbTermDetail> {
        self.inner.ucb_term_detail(x, term)
    }
    fn pending_variance<'a>(
        &'a self,
        pending: &Points<'_>,
    ) -> Result<Box<dyn PendingVariance + 'a>> {
        self.inner.pending_variance(pending)
    }
}

/// `adaptive-norm<inner>`. A restored wrapper must be at a level within its cap, with the
/// inner bound at exactly that level's B_k and the wrapper's δ, and a log of consecutive levels.
#[cfg(feature = "serde")]
impl<B: AdjustableNorm + crate::snapshot::Snapshot> crate::snapshot::Snapshot for AdaptiveNorm<B> {
    fn kind() -> String {
        format!("adaptive-norm<{}>", B::kind())
    }

    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::ensure;
        self.inner.restore()?;
        ensure(
            self.initial_norm > 0.0 && self.initial_norm.is_finite(),
            || format!("initial norm bound {}", self.initial_norm),
        )?;
        ensure(self.delta > 0.0 && self.delta <= 1.0, || {
            format!("delta {}", self.delta)
        })?;
        ensure(
            (1..=self.max_level).contains(&self.level) && self.max_level <= i32::MAX as u32,
            || format!("level {} with cap {}", self.level, self.max_level),
        )?;
        ensure(self.inner.norm_bound() == self.norm_bound(), || {
            "the inner bound's B is not that of the level".into()
        })?;
        ensure(self.inner.delta() == self.delta, || {
            "the inner bound's delta is not the wrapper's (one delta serves every level)".into()
        })?;
        let levels_consecutive = self
            .doublings
            .iter()
            .enumerate()
            .all(|(i, step)| step.level == i as u32 + 2)
            && self.doublings.len() + 1 == self.level as usize;
        ensure(levels_consecutive, || {
            "the log of doublings does not lead to the level".into()
        })
    }
}
