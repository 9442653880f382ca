//! Confidence bounds for sequential kernel regression (Flynn & Reeb 2024 §4–§5).
//!
//! | bound | type | reference | width factor on ρ(x) |
//! |---|---|---|---|
//! | AY-GP-UCB | [`Ay`] | Abbasi-Yadkori (2012) Thm 3.11; Flynn & Reeb 2024 App. C.2 | (σ√(ld_λ + 2 ln 1/δ) + √λ B)/√λ |
//! | IGP-UCB | [`Igp`] | Chowdhury & Gopalan (2017) Thm 2; Flynn & Reeb 2024 App. C.2 | σ√(ld_{1+η} + tη + 2 ln 1/δ) + B |
//! | AMM-UCB | [`Amm`] | Flynn & Reeb 2024 Cor. 4.6, Lemma C.2 | √((σ² ld_{a0} + a0 B² + 2σ² ln 1/δ)/a0) |
//! | DMM-UCB | [`Dmm`] | Flynn & Reeb 2024 §5.4, Cor. 4.3 | min / max over a grid of a of U_a / L_a |
//! | CMM-UCB | [`Cmm`] | Flynn & Reeb 2024 §4.3, Thm 4.5, Eq. 12 | min / max over all a > 0 (exact) |
//! | GP-UCB | [`GpUcb`] | Chowdhury & Gopalan (2017) Thm 2, as the baselines of Iwazaki & Takeno 2025 §6 use it | B + (σ/√λ)√(2(γ + 1 + ln 1/δ)), γ fixed or ½ ld_λ ([`InformationGain`]) |
//! | K-UCB | [`KUcb`] | Calandriello et al. (2019), Zenati et al. (2022) baseline | fixed β on σ = ρ_λ/√λ |
//! | BKB | [`Bkb`] | Calandriello et al. (2019) Alg. 1, Thm 2 | β̃ on the sketched σ̃, dictionary resampled each step (with [`SketchParams::batch_threshold`]: BBKB, Calandriello et al. (2020) Alg. 1, resampled once per batch) |
//! | EK-UCB | [`EkUcb`] | Zenati et al. (2022) Alg. 2, Prop. 4.2, Lemma 4.1 | β̃ on σ̃, dictionary grown by KORS |
//!
//! All of them implement [`ConfidenceBound`]: they absorb observations and return, for a batch
//! of points, the mean, the lower and the upper confidence bound. [`BoundKind`] names them, and
//! builds any of them from a [`BoundConfig`] as an [`AnyBound`].
//!
//! **An unknown B.** [`AdaptiveNorm`] wraps a DMM-UCB or CMM-UCB (any [`AdjustableNorm`]
//! bound) and learns B by refutation: it starts from a guess B₀ and doubles B, keeping the one δ
//! at every level, whenever the data show the confidence set of Flynn & Reeb 2024 Lemma 4.2 to
//! be empty (R̃_a² < 0, [`Diagnostics`]). On one event of probability ≥ 1 − δ (their Eq. 8,
//! which does not involve B) no level with B_k ≥ ‖f‖_H is ever refuted, so it stops below
//! 2‖f‖_H (if B₀ was too small), and its bounds contain f at every round whose B_k ≥ ‖f‖_H;
//! before that round they may be wrong. Data can refute a B, never confirm one.

mod adaptive;
mod amm;
mod ay;
mod bkb;
mod cmm;
mod diagnostics;
mod dmm;
mod eigen;
mod ek_ucb;
mod gp_ucb;
mod igp;
mod k_ucb;
mod kind;
mod mixture;
mod params;
mod search;
pub(crate) mod sketch;

pub use adaptive::{AdaptiveNorm, AdjustableNorm, DEFAULT_MAX_LEVEL, NormDoubling};
pub use amm::Amm;
pub use ay::Ay;
pub use bkb::Bkb;
pub use cmm::{Certificate, Cmm, SpectralHealth};
pub use diagnostics::{CheckedBounds, Diagnostics};
pub use dmm::{DMM_GRID, Dmm};
pub use ek_ucb::EkUcb;
pub use gp_ucb::{GpUcb, InformationGain};
pub use igp::Igp;
pub use k_ucb::KUcb;
pub use kind::{AnyBound, BoundConfig, BoundKind, UnknownBound};
pub use params::{BoundParams, CheckedParams, SCALE_GRID, paper_scale};
pub use sketch::{BatchFeedback, SketchParams};

pub use crate::posterior::ArmSetInfo;

use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::points::{AsPoints, Points};
use crate::posterior::ExactPosterior;

/// Means and confidence bounds at a batch of points, in the order of the points.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bounds {
    /// The bound's point estimate (the posterior mean at its regulariser).
    pub mean: Vec<f64>,
    /// Lower confidence bounds.
    pub lcb: Vec<f64>,
    /// Upper confidence bounds.
    pub ucb: Vec<f64>,
}

impl Bounds {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.ucb.len()
    }

    /// Whether there is no point.
    pub fn is_empty(&self) -> bool {
        self.ucb.is_empty()
    }

    /// The index of the largest UCB, the lowest index among ties.
    ///
    /// # Errors
    /// [`Error::NoArms`] for no point, [`Error::NonFinite`] for a NaN UCB.
    pub fn argmax_ucb(&self) -> Result<usize> {
        argmax_lowest(&self.ucb)
    }

    /// The points where LCB > UCB (or either is NaN): only possible when the confidence set is
    /// empty, i.e. the data contradict σ, B or δ (see [`Diagnostics`]).
    pub fn crossed(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&j| {
                matches!(
                    self.lcb[j].partial_cmp(&self.ucb[j]),
                    Some(std::cmp::Ordering::Greater) | None
                )
            })
            .collect()
    }
}

/// The mean and confidence bounds at one point together with their gradients with respect to
/// the point ([`ConfidenceBound::gradient`]).
///
/// Where a bound is a minimum (UCB) or maximum (LCB) over several regularisers (DMM-UCB's
/// grid, CMM-UCB's continuum), the gradient is that of the active term, the regulariser
/// attaining the extremum (the lowest index among exact ties): by the envelope theorem it is the
/// gradient of the bound wherever that regulariser is the unique minimiser, and one of its
/// one-sided derivatives where two tie.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoundGradient {
    /// The point estimate μ(x).
    pub mean: f64,
    /// The lower confidence bound L(x).
    pub lcb: f64,
    /// The upper confidence bound U(x).
    pub ucb: f64,
    /// ∇μ(x).
    pub mean_gradient: Vec<f64>,
    /// ∇L(x).
    pub lcb_gradient: Vec<f64>,
    /// ∇U(x).
    pub ucb_gradient: Vec<f64>,
}

/// What [`crate::decide::certify_box`] needs to bound a UCB over a box
/// ([`ConfidenceBound::ucb_regularity`]): the kernel and the shape of the UCB.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UcbRegularity<'a> {
    /// The bound's kernel.
    pub kernel: &'a dyn Kernel,
    /// How the UCB is built from the kernel.
    pub shape: UcbShape,
}

/// How a UCB is built, for bounds on its supremum over a box ([`UcbRegularity`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum UcbShape {
    /// U(x) = min_r U_r(x) over the terms of [`ConfidenceBound::ucb_term_values`], with
    /// U_r(x) = μ_r(x) + w_r ρ_r(x), μ_r(x) = k_t(x)ᵀ(K_t + a_r I)⁻¹y_t and
    /// ρ_r²(x) = k(x, x) − k_t(x)ᵀ(K_t + a_r I)⁻¹k_t(x) (Flynn & Reeb 2024 Eqs. 2–3): AY, IGP,
    /// AMM, DMM, GP-UCB and K-UCB.
    Terms(Vec<UcbTerm>),
    /// U(x) ≥ max { g(x) : g in a confidence set of functions with ‖g‖_H ≤ `norm_bound` },
    /// every evaluated dual value an upper bound on that maximum (CMM-UCB, Flynn & Reeb 2024
    /// Thm 4.4–4.5).
    Primal {
        /// B.
        norm_bound: f64,
    },
}

/// One term U_r = μ_r + w_r ρ_r of a UCB ([`UcbShape::Terms`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct UcbTerm {
    /// The regulariser a_r.
    pub regulariser: f64,
    /// The width w_r ≥ 0 that multiplies ρ_r.
    pub width: f64,
    /// An upper bound on ‖θ_r‖_H, θ_r = Σᵢ αᵢ k(xᵢ, ·) the function whose values are μ_r,
    /// α = (K_t + a_r I)⁻¹y_t: ‖θ_r‖² = yᵀα − a_r‖α‖², computed, plus 10⁻⁹·yᵀα against the
    /// cancellation in the difference.
    pub mean_norm: f64,
}

/// One term of a UCB at one point, with its gradient ([`ConfidenceBound::ucb_term_detail`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UcbTermDetail {
    /// U_r(x) = μ_r(x) + w_r ρ_r(x), the bits of [`ConfidenceBound::ucb_term_values`].
    pub value: f64,
    /// μ_r(x).
    pub mean: f64,
    /// ρ_r(x).
    pub spread: f64,
    /// ∇U_r(x).
    pub gradient: Vec<f64>,
}

/// The observations a bound holds, in the order it absorbed them
/// ([`ConfidenceBound::observations`]): the inputs x_1, …, x_t row-major and the targets
/// y_1, …, y_t. After [`ConfidenceBound::truncate`] or [`ConfidenceBound::remove_oldest`] (a
/// sliding window) they are the ones the bound still uses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observations {
    /// The input dimension d (0 before the first observation).
    pub dim: usize,
    /// The inputs, row-major: t rows of d coordinates.
    pub inputs: Vec<f64>,
    /// The targets, one per input.
    pub targets: Vec<f64>,
}

impl Observations {
    /// The number of observations t.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Whether there is no observation.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Input `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn input(&self, i: usize) -> &[f64] {
        &self.inputs[i * self.dim..(i + 1) * self.dim]
    }

    /// The observations of an exact posterior.
    pub(crate) fn of_exact<K: Kernel>(posterior: &ExactPosterior<K>) -> Self {
        let t = posterior.len();
        let mut inputs = Vec::with_capacity(t * posterior.dim().unwrap_or(0));
        for i in 0..t {
            inputs.extend_from_slice(posterior.input(i));
        }
        Self {
            dim: posterior.dim().unwrap_or(0),
            inputs,
            targets: posterior.targets().to_vec(),
        }
    }
}

/// The posterior variance given the observations and further *pending* inputs whose targets
/// are not known yet ([`ConfidenceBound::pending_variance`]). The variance of a Gaussian
/// process does not depend on the targets, so pending evaluations already shrink it: what
/// GP-UCB-PE (Contal et al. 2013) maximises to spread a batch out. Each bound reports it in its
/// own scale: ρ_a² at its mean's regulariser for the exact bounds and CMM, the σ̃² that β̃
/// multiplies for BKB and EK-UCB; only its ranking of points matters to the agents.
pub trait PendingVariance: Send + Sync + std::fmt::Debug {
    /// ρ²(x) at every point, given the observed and the pending inputs.
    ///
    /// # Errors
    /// Points of the wrong dimension; non-finite kernel values.
    fn variance(&self, points: &Points<'_>) -> Result<Vec<f64>>;

    /// ρ²(x) and its gradient at one point.
    ///
    /// # Errors
    /// As [`PendingVariance::variance`]; [`Error::Unsupported`] if the kernel has no gradient.
    fn variance_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)>;
}

/// The `evaluate` of every exact bound: at each point, the UCB min_a (μ_a + w_a ρ_a) and the
/// LCB max_a (μ_a − w_a ρ_a) over the regularisers a of `posterior` with widths `widths` (one
/// for AY, IGP, AMM and K-UCB; DMM's grid), and the mean at the regulariser `mean_index`.
///
/// # Errors
/// As [`ExactPosterior::evaluate`](crate::posterior::ExactPosterior::evaluate), and as
/// [`check_width`] for any width.
pub(crate) fn exact_evaluate<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    mean_index: usize,
    points: &Points<'_>,
) -> Result<Bounds> {
    let batch = posterior.evaluate(points)?;
    let m = batch.len();
    let (mut ucb, mut lcb) = (Vec::with_capacity(m), Vec::with_capacity(m));
    for (r, &width) in widths.iter().enumerate() {
        let width = check_width(width)?;
        let (mean, variance) = (batch.mean(r), batch.variance(r));
        for j in 0..m {
            let spread = width * variance[j].sqrt();
            if r == 0 {
                // The first regulariser's bounds as they are: a NaN stays NaN (and is reported
                // by `Bounds::crossed`) rather than being folded into ±∞.
                ucb.push(mean[j] + spread);
                lcb.push(mean[j] - spread);
            } else {
                ucb[j] = ucb[j].min(mean[j] + spread);
                lcb[j] = lcb[j].max(mean[j] - spread);
            }
        }
    }
    Ok(Bounds {
        mean: batch.mean(mean_index).to_vec(),
        lcb,
        ucb,
    })
}

/// The `argmax_ucb` of every exact bound: the pruned search of
/// [`ExactPosterior::argmax_upper`](crate::posterior::ExactPosterior::argmax_upper) for the
/// UCB of [`exact_evaluate`].
///
/// # Errors
/// As [`check_width`] for any width, and as `argmax_upper`.
pub(crate) fn exact_argmax<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    points: &Points<'_>,
) -> Result<usize> {
    let widths = widths
        .iter()
        .map(|&w| check_width(w))
        .collect::<Result<Vec<_>>>()?;
    posterior.argmax_upper(points, &widths)
}

/// The `top_ucb` of every exact bound: the pruned search of
/// [`ExactPosterior::top_upper`](crate::posterior::ExactPosterior::top_upper).
///
/// # Errors
/// As [`exact_argmax`].
pub(crate) fn exact_top<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    points: &Points<'_>,
    count: usize,
) -> Result<Vec<usize>> {
    let widths = checked_widths(widths)?;
    posterior.top_upper(points, &widths, count)
}

/// The `top_ucb_with_terms` of every exact bound: the pruned search of [`exact_top`], with the
/// terms it solved the returned points for.
///
/// # Errors
/// As [`exact_top`].
pub(crate) fn exact_top_terms<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    points: &Points<'_>,
    count: usize,
) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
    let widths = checked_widths(widths)?;
    posterior.top_upper_terms(points, &widths, count)
}

/// The `gradient` of every exact bound of the form U = min_r (μ_r + w_r ρ_r),
/// L = max_r (μ_r − w_r ρ_r) (see [`exact_evaluate`]): each side's gradient is that of its
/// active regulariser (the lowest index among ties), and the mean's that of `mean_index`.
///
/// # Errors
/// As [`check_width`] for any width; wrong dimension or non-finite `x`;
/// [`Error::Unsupported`] for a kernel without gradient.
pub(crate) fn exact_gradient<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    mean_index: usize,
    x: &[f64],
) -> Result<BoundGradient> {
    let widths = checked_widths(widths)?;
    let solve = posterior.point_solve(x)?;
    let all: Vec<usize> = (0..widths.len()).collect();
    let (upper, up) = active(&solve, &widths, 1.0, &all);
    let (lower, low) = active(&solve, &widths, -1.0, &all);
    Ok(BoundGradient {
        mean: solve.means[mean_index],
        lcb: -lower,
        ucb: upper,
        mean_gradient: posterior.combination_gradient(&solve, mean_index, 0.0),
        lcb_gradient: posterior.combination_gradient(&solve, low, -widths[low]),
        ucb_gradient: posterior.combination_gradient(&solve, up, widths[up]),
    })
}

/// The `ucb_gradient` of every exact bound: as [`exact_gradient`], one back substitution.
///
/// # Errors
/// As [`exact_gradient`].
pub(crate) fn exact_ucb_gradient<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    x: &[f64],
) -> Result<(f64, Vec<f64>)> {
    let all: Vec<usize> = (0..widths.len()).collect();
    exact_ucb_gradient_among(posterior, widths, x, &all)
}

/// The `ucb_gradient_among` of every exact bound: min_{r ∈ terms} (μ_r + w_r ρ_r) and the
/// gradient of its active term (the lowest index among ties), from the forward substitutions
/// of those regularisers alone and one back substitution. With every term, the bits of
/// [`exact_ucb_gradient`].
///
/// # Errors
/// As [`exact_gradient`]; [`Error::InvalidParameter`] for no term or a term out of range.
pub(crate) fn exact_ucb_gradient_among<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    x: &[f64],
    terms: &[usize],
) -> Result<(f64, Vec<f64>)> {
    let widths = checked_widths(widths)?;
    let terms = checked_terms(terms, widths.len())?;
    let solve = posterior.point_solve_among(x, &terms)?;
    let (upper, up) = active(&solve, &widths, 1.0, &terms);
    Ok((
        upper,
        posterior.combination_gradient(&solve, up, widths[up]),
    ))
}

/// The `ucb_term_values` of every exact bound: μ_r + w_r ρ_r for every regulariser, the same
/// bits as the terms [`exact_ucb_gradient_among`] compares.
///
/// # Errors
/// As [`exact_gradient`].
pub(crate) fn exact_ucb_terms<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    x: &[f64],
) -> Result<Vec<f64>> {
    let widths = checked_widths(widths)?;
    let solve = posterior.point_solve(x)?;
    Ok((0..widths.len())
        .map(|r| term(&solve, &widths, 1.0, r))
        .collect())
}

/// The `ucb_term_values_at` of every exact bound: [`exact_ucb_terms`] at each point, the same
/// bits and errors, with each factor read once for all the points
/// ([`ExactPosterior::point_values_at`](crate::posterior::ExactPosterior)).
pub(crate) fn exact_ucb_terms_at<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    points: &[&[f64]],
) -> Vec<Result<Vec<f64>>> {
    let widths = match checked_widths(widths) {
        Ok(widths) => widths,
        Err(e) => return points.iter().map(|_| Err(e.clone())).collect(),
    };
    posterior
        .point_values_at(points)
        .into_iter()
        .map(|values| {
            let values = values?;
            Ok((0..widths.len())
                .map(|r| values.means[r] + widths[r] * values.variances[r].sqrt())
                .collect())
        })
        .collect()
}

/// The `ucb_regularity` of every exact bound: one [`UcbTerm`] per width.
///
/// # Errors
/// As [`check_width`] for any width.
pub(crate) fn exact_regularity<'a, K: Kernel>(
    posterior: &'a ExactPosterior<K>,
    widths: &[f64],
) -> Result<UcbRegularity<'a>> {
    let widths = checked_widths(widths)?;
    let terms = widths
        .iter()
        .enumerate()
        .map(|(r, &width)| {
            let factor = posterior.factor(r);
            let a = factor.regulariser();
            let q = factor.quad_form();
            let alpha_sq: f64 = if posterior.is_empty() {
                0.0
            } else {
                factor.weights().iter().map(|v| v * v).sum()
            };
            let theta_sq = (q - a * alpha_sq).max(0.0) + 1e-9 * q.abs();
            UcbTerm {
                regulariser: a,
                width: width.max(0.0),
                mean_norm: theta_sq.sqrt(),
            }
        })
        .collect();
    Ok(UcbRegularity {
        kernel: posterior.kernel(),
        shape: UcbShape::Terms(terms),
    })
}

/// The `ucb_term_detail` of every exact bound: one forward and one back substitution.
///
/// # Errors
/// As [`exact_gradient`]; [`Error::InvalidParameter`] for a term out of range.
pub(crate) fn exact_term_detail<K: Kernel>(
    posterior: &ExactPosterior<K>,
    widths: &[f64],
    x: &[f64],
    term: usize,
) -> Result<UcbTermDetail> {
    let widths = checked_widths(widths)?;
    let r = checked_terms(&[term], widths.len())?[0];
    let solve = posterior.point_solve_among(x, &[r])?;
    let spread = solve.variances[r].sqrt();
    Ok(UcbTermDetail {
        value: term_value(&solve, &widths, r),
        mean: solve.means[r],
        spread,
        gradient: posterior.combination_gradient(&solve, r, widths[r]),
    })
}

fn term_value(solve: &crate::posterior::PointSolve, widths: &[f64], r: usize) -> f64 {
    term(solve, widths, 1.0, r)
}

/// `terms` sorted and without repeats, if it is not empty and every term is below `count`.
fn checked_terms(terms: &[usize], count: usize) -> Result<Vec<usize>> {
    if let Some(&r) = terms.iter().find(|&&r| r >= count) {
        return Err(Error::InvalidParameter {
            name: "terms",
            value: r as f64,
            expected: "indices below the bound's number of UCB terms",
        });
    }
    if terms.is_empty() {
        return Err(Error::InvalidParameter {
            name: "terms",
            value: 0.0,
            expected: "at least one term",
        });
    }
    let mut terms = terms.to_vec();
    terms.sort_unstable();
    terms.dedup();
    Ok(terms)
}

/// The `pending_variance` of every exact bound: the variance at regulariser `mean_index`.
///
/// # Errors
/// As `ExactPosterior::conditioned`.
pub(crate) fn exact_pending_variance<'a, K: Kernel>(
    posterior: &'a ExactPosterior<K>,
    mean_index: usize,
    pending: &Points<'_>,
) -> Result<Box<dyn PendingVariance + 'a>> {
    Ok(Box::new(posterior.conditioned(mean_index, pending)?))
}

/// For `sign = 1`, min_r (μ_r + w_r ρ_r) and its regulariser; for `sign = −1`,
/// min_r (−μ_r + w_r ρ_r) = −max_r (μ_r − w_r ρ_r) and its regulariser; r over `terms`
/// (ascending, not empty). Lowest index among ties, as in [`exact_evaluate`].
fn active(
    solve: &crate::posterior::PointSolve,
    widths: &[f64],
    sign: f64,
    terms: &[usize],
) -> (f64, usize) {
    let mut best = (f64::INFINITY, terms[0]);
    for (i, &r) in terms.iter().enumerate() {
        let value = term(solve, widths, sign, r);
        if value < best.0 || i == 0 {
            best = (value, r);
        }
    }
    best
}

/// sign·μ_r + w_r ρ_r.
fn term(solve: &crate::posterior::PointSolve, widths: &[f64], sign: f64, r: usize) -> f64 {
    sign * solve.means[r] + widths[r] * solve.variances[r].sqrt()
}

fn checked_widths(widths: &[f64]) -> Result<Vec<f64>> {
    widths.iter().map(|&w| check_width(w)).collect()
}

/// Passes a finite width on.
///
/// # Errors
/// [`crate::Error::NonFinite`] for a NaN or infinite width: q_a or ld_a overflowed, which only
/// happens when the regulariser is tiny against the scale of the targets.
pub(crate) fn check_width(width: f64) -> Result<f64> {
    if width.is_finite() {
        Ok(width)
    } else {
        Err(crate::Error::NonFinite {
            what: "confidence width (the regulariser is too small for the scale of the data)"
                .into(),
        })
    }
}

/// A confidence bound on an unknown function, updated one observation at a time.
///
/// Object safe: a `Box<dyn ConfidenceBound>` is itself a `ConfidenceBound`, so a bound of your
/// own works everywhere a concrete one does. For one of the crate's bounds chosen at run time
/// (e.g. from a configuration file), [`BoundKind::build`] returns an [`AnyBound`], which can
/// also be cloned and snapshotted.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let kernel = Matern::new(2.5, 0.5)?;
/// let params = BoundParams::new().sigma(0.1).norm_bound(10.0).delta(0.01).scale(1.0);
/// let mut bound: Box<dyn ConfidenceBound> = Box::new(Dmm::new(kernel, params)?);
/// bound.observe(&[0.2, 0.4], 1.5)?;
/// let b = bound.bounds(&vec![vec![0.2, 0.4], vec![0.9, 0.1]])?;
/// assert!(b.lcb[0] <= b.ucb[0] && b.lcb[1] <= b.ucb[1]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub trait ConfidenceBound: Send + Sync + std::fmt::Debug {
    /// A short name such as `"dmm"`.
    fn name(&self) -> &'static str;

    /// Absorbs the observation y = f(x) + noise.
    ///
    /// # Errors
    /// Wrong dimension, non-finite x or y, or a numerically singular update; the bound is
    /// unchanged on error.
    fn observe(&mut self, x: &[f64], y: f64) -> Result<()>;

    /// Absorbs a batch of observations, as that many calls to [`ConfidenceBound::observe`]
    /// would (to rounding). The exact bounds factorise the batch in one blocked step
    /// ([`ExactPosterior::observe_many`]), much faster than one row at a time when warm-
    /// starting from a data set.
    ///
    /// # Errors
    /// [`crate::Error::LengthMismatch`] if the number of targets differs from the number of
    /// points; as [`ConfidenceBound::observe`]. On error the exact bounds are unchanged. The
    /// provided method (used by CMM-UCB and the sketched bounds) refuses a wrong number of
    /// targets, points of the wrong dimension and non-finite targets before anything changes
    /// (the points are finite by construction), so bad input loses nothing; it then observes
    /// one point at a time and [`ConfidenceBound::truncate`]s back on a numerical failure,
    /// which restores the observations but, for the sketched bounds, neither rewinds their
    /// random generator nor BKB's resampled dictionary.
    ///
    /// [`ExactPosterior::observe_many`]: crate::posterior::ExactPosterior::observe_many
    fn observe_many(&mut self, points: &Points<'_>, targets: &[f64]) -> Result<()> {
        crate::error::one_target_per_point(points.len(), targets.len())?;
        if let Some(expected) = self.dim()
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
        let before = self.len();
        let mut scratch = vec![0.0; points.dim()];
        for (j, &y) in targets.iter().enumerate() {
            if let Err(e) = self.observe(points.point(j, &mut scratch), y) {
                self.truncate(before);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Whether the data contradict the bound's assumptions, after the latest update (see
    /// [`Diagnostics`]). The provided method checks nothing.
    fn diagnostics(&self) -> Diagnostics {
        Diagnostics::unchecked(self.len())
    }

    /// [`ConfidenceBound::evaluate`] with the diagnosis beside the values (see
    /// [`CheckedBounds`]): the points where LCB > UCB and [`ConfidenceBound::diagnostics`], so
    /// that a caller cannot take crossed bounds, or bounds from an empty confidence set, for
    /// confidence bounds. Costs one `diagnostics` more than `evaluate` (O(|grid|) for DMM-UCB,
    /// O(t) for CMM-UCB on the eigendecomposition its `evaluate` needs anyway) and one pass
    /// over the values.
    ///
    /// # Errors
    /// As [`ConfidenceBound::evaluate`].
    fn evaluate_checked(&self, points: &Points<'_>) -> Result<CheckedBounds> {
        let bounds = self.evaluate(points)?;
        Ok(CheckedBounds::new(bounds, self.diagnostics()))
    }

    /// The observations the bound holds, in order (see [`Observations`]): what it was given,
    /// so that a caller need not keep a copy of its own.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a bound that does not keep them (the provided method; every
    /// bound of the crate does).
    fn observations(&self) -> Result<Observations> {
        Err(Error::Unsupported {
            what: format!("reading back the observations of the {} bound", self.name()),
        })
    }

    /// Whether B is learnt from the data ([`AdaptiveNorm`]): such a bound is not valid until B
    /// has grown to ‖f‖_H, which the data never confirm, so it must not certify safety
    /// ([`crate::safe`] refuses it for constraints). `false` for every bound whose B is given.
    fn learns_norm(&self) -> bool {
        false
    }

    /// Mean, LCB and UCB at each point.
    ///
    /// # Errors
    /// Points of the wrong dimension, or non-finite kernel values.
    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds>;

    /// Number of observations absorbed.
    fn len(&self) -> usize;

    /// Whether no observation has been absorbed.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Input dimension, fixed by the first observation.
    fn dim(&self) -> Option<usize>;

    /// Keeps the first `len` observations and forgets the newer ones (exactly).
    fn truncate(&mut self, len: usize);

    /// Forgets the oldest observation, for a sliding window (SW-GP-UCB): the exact bounds
    /// downdate their Cholesky factors in O(t²).
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] for bounds that cannot (the sketched ones); the bound is
    /// unchanged.
    fn remove_oldest(&mut self) -> Result<()> {
        Err(Error::Unsupported {
            what: format!(
                "the {} bound cannot forget its oldest observation",
                self.name()
            ),
        })
    }

    /// Declares a fixed arm set, offered round after round: a bound with per-arm state keeps
    /// it up to date with every observation, so that [`ConfidenceBound::argmax_ucb`] and
    /// [`ConfidenceBound::evaluate`] on exactly these points (same values, same order) skip
    /// the per-point solves. The exact bounds AY, IGP, AMM, DMM and K-UCB do (O(A·t) per
    /// update and 8·A bytes per observation and regulariser, see
    /// [`ExactPosterior::fix_arms`]); CMM-UCB, whose eigenbasis changes with every
    /// observation, and the sketched bounds, whose queries do not grow with t, ignore it.
    /// `memory_limit` caps the bytes kept (the set is dropped beyond it); `None` keeps it
    /// whatever its size.
    ///
    /// This and the next two methods are one capability: [`ConfidenceBound::fixed_arms`]
    /// reports what is kept, [`ConfidenceBound::release_arms`] drops it. Returns whether the
    /// set is kept. Results are the same as without it, up to rounding in the last bits.
    ///
    /// # Errors
    /// [`crate::Error::NoArms`], wrong dimension or non-finite kernel values; the bound is
    /// unchanged on error.
    ///
    /// [`ExactPosterior::fix_arms`]: crate::posterior::ExactPosterior::fix_arms
    fn fix_arms(&mut self, arms: &Points<'_>, memory_limit: Option<usize>) -> Result<bool> {
        let _ = (arms, memory_limit);
        Ok(false)
    }

    /// Stops keeping a fixed arm set (see [`ConfidenceBound::fix_arms`]).
    fn release_arms(&mut self) {}

    /// The fixed arm set kept, if any: its size and the bytes its per-arm state holds (see
    /// [`ConfidenceBound::fix_arms`]).
    fn fixed_arms(&self) -> Option<ArmSetInfo> {
        None
    }

    /// The index of the point with the largest UCB, the lowest index among ties: the arm a UCB
    /// agent plays. The exact bounds skip most of the O(t²) work per point that
    /// [`ConfidenceBound::evaluate`] does (see [`ExactPosterior::argmax_upper`]). A bound
    /// without a faster path implements it as `self.evaluate(points)?.argmax_ucb()`
    /// ([`Bounds::argmax_ucb`]). It has no provided body so that a wrapper (a `Box`, a
    /// reference, [`AnyBound`]) cannot silently fall back to the slow path by forgetting to
    /// forward it.
    ///
    /// What is promised: the returned point's UCB, as this method computes it, is the largest
    /// (ties to the lowest index), and it is never more than rounding below the largest UCB of
    /// [`ConfidenceBound::evaluate`]. The two computations use the same formulas but may sum in
    /// a different order (the pruned path solves in row blocks and forms the mean from its own
    /// solves), so their values can differ in the last few bits; where two points' UCBs are
    /// that close (a near-tie within about 10⁻¹¹ relative; up to 3.6·10⁻¹² seen on mirrored arms
    /// in `tests/integration/structured_exact.rs`), the two methods may pick different
    /// ones among them. Points whose kernel values are bitwise equal (duplicates) get bitwise
    /// equal UCBs from either method, so their tie goes to the lowest index in both.
    ///
    /// # Errors
    /// [`crate::Error::NoArms`] for no point, [`crate::Error::NonFinite`] for a NaN UCB, and
    /// as [`ConfidenceBound::evaluate`].
    ///
    /// [`ExactPosterior::argmax_upper`]: crate::posterior::ExactPosterior::argmax_upper
    fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize>;

    /// The indices of the `count` points with the largest UCB, largest first, the lowest index
    /// among ties (all of them, so ordered, if there are fewer; `count = 0` is taken as 1):
    /// what [`BanditAgent::select_in`](crate::agent::BanditAgent::select_in) refines.
    ///
    /// The provided method ranks [`ConfidenceBound::evaluate`]'s UCB. The exact bounds (AY,
    /// IGP, AMM, DMM, GP-UCB, K-UCB) override it with the pruned search of
    /// [`ConfidenceBound::argmax_ucb`] ([`ExactPosterior::top_upper`]), whose floor is the
    /// `count`-th largest UCB known to be reached: the same promise as there, for each of the
    /// `count` places (exact as computed there, within rounding of `evaluate`'s values). With
    /// `count = 1` it is `argmax_ucb`. Wrappers must forward it.
    ///
    /// # Errors
    /// As [`ConfidenceBound::argmax_ucb`].
    ///
    /// [`ExactPosterior::top_upper`]: crate::posterior::ExactPosterior::top_upper
    fn top_ucb(&self, points: &Points<'_>, count: usize) -> Result<Vec<usize>> {
        largest_lowest(&self.evaluate(points)?.ucb, count)
    }

    /// [`ConfidenceBound::top_ucb`] and, at each point it returns, the terms U_r of
    /// [`ConfidenceBound::ucb_term_values`]: where
    /// [`BanditAgent::select_in`](crate::agent::BanditAgent::select_in) starts its refinements
    /// from (it asks for them when [`ConfidenceBound::ucb_terms`] is more than one).
    ///
    /// The provided method calls `top_ucb`, then [`ConfidenceBound::ucb_term_values_at`] at
    /// the points. The exact bounds return the terms their pruned search computed, at no
    /// further cost (each returned point was solved to the end in every factor; for DMM-UCB's
    /// default grid at t = 1000 this saves nine passes over 4 MB factors per call): μ_r from
    /// α_r and ρ_r from the blocked forward substitution, whose minimum is the U the points
    /// were ranked by. They may differ from `ucb_term_values`' in the last bits, as `top_ucb`'s
    /// U may from `evaluate`'s. Wrappers must forward it.
    ///
    /// # Errors
    /// As [`ConfidenceBound::top_ucb`] and [`ConfidenceBound::ucb_term_values`] (the first
    /// point's error, in the order returned).
    fn top_ucb_with_terms(
        &self,
        points: &Points<'_>,
        count: usize,
    ) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
        let top = self.top_ucb(points, count)?;
        let rows: Vec<Vec<f64>> = top.iter().map(|&j| points.to_vec(j)).collect();
        let refs: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
        let terms = self
            .ucb_term_values_at(&refs)
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        Ok((top, terms))
    }

    /// The mean, LCB and UCB at `x` and their gradients with respect to `x` (see
    /// [`BoundGradient`]): what continuous maximisation of the UCB
    /// ([`crate::agent::BanditAgent::select_in`]) is built on.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a bound or kernel without gradients (the provided method);
    /// wrong dimension or non-finite `x`; as [`ConfidenceBound::evaluate`].
    fn gradient(&self, x: &[f64]) -> Result<BoundGradient> {
        let _ = x;
        Err(Error::Unsupported {
            what: format!("gradients of the {} bound", self.name()),
        })
    }

    /// U(x) and ∇U(x) alone: the provided method takes them from
    /// [`ConfidenceBound::gradient`]; the exact bounds override it with a path that skips the
    /// mean's and the LCB's solves.
    ///
    /// # Errors
    /// As [`ConfidenceBound::gradient`].
    fn ucb_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        let g = self.gradient(x)?;
        Ok((g.ucb, g.ucb_gradient))
    }

    /// How many smooth terms the UCB is the minimum of, U(x) = min_r U_r(x): DMM-UCB's is
    /// one per regulariser of its grid (Flynn & Reeb 2024 §5.4); every other bound's is one
    /// term (the provided method). [`BanditAgent::select_in`](crate::agent::BanditAgent::select_in)
    /// refines on the terms active near its path only ([`ConfidenceBound::ucb_gradient_among`]).
    /// Wrappers must forward it.
    fn ucb_terms(&self) -> usize {
        1
    }

    /// U_r(x) for every term r of [`ConfidenceBound::ucb_terms`]: their minimum is U(x) as
    /// [`ConfidenceBound::ucb_gradient`] computes it. The provided method returns that value as
    /// the one term. Wrappers must forward it.
    ///
    /// # Errors
    /// As [`ConfidenceBound::ucb_gradient`].
    fn ucb_term_values(&self, x: &[f64]) -> Result<Vec<f64>> {
        Ok(vec![self.ucb_gradient(x)?.0])
    }

    /// [`ConfidenceBound::ucb_term_values`] at each of `points`, one result per point, each
    /// the same (bits and error) as the call at that point alone. The provided method makes
    /// those calls; the exact bounds read each factor once for all the points (DMM-UCB's
    /// refinements of [`BanditAgent::select_in`](crate::agent::BanditAgent::select_in) check
    /// the terms at the points they reach together: up to five points and nine factors).
    /// Wrappers must forward it.
    fn ucb_term_values_at(&self, points: &[&[f64]]) -> Vec<Result<Vec<f64>>> {
        points.iter().map(|x| self.ucb_term_values(x)).collect()
    }

    /// min_{r ∈ terms} U_r(x), an upper bound on U(x) equal to it wherever a term of `terms`
    /// attains the minimum, and its gradient (the active term's, the lowest index among ties,
    /// as for [`BoundGradient`]); only those terms are computed (for DMM-UCB, one forward
    /// substitution per term instead of one per regulariser of the grid). With every term, the
    /// value and gradient of [`ConfidenceBound::ucb_gradient`], bit for bit. The provided
    /// method is `ucb_gradient` (one term). Wrappers must forward it.
    ///
    /// # Errors
    /// As [`ConfidenceBound::ucb_gradient`]; [`Error::InvalidParameter`] for no term or a term
    /// not below [`ConfidenceBound::ucb_terms`].
    fn ucb_gradient_among(&self, x: &[f64], terms: &[usize]) -> Result<(f64, Vec<f64>)> {
        if terms.is_empty() || terms.iter().any(|&r| r >= self.ucb_terms()) {
            return Err(Error::InvalidParameter {
                name: "terms",
                value: terms.len() as f64,
                expected: "indices below the bound's number of UCB terms, at least one",
            });
        }
        self.ucb_gradient(x)
    }

    /// The kernel and the shape of the UCB, for a proven bound on its supremum over a box
    /// ([`crate::decide::certify_box`]). Wrappers must forward it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a bound whose UCB has no such description (the provided
    /// method: BKB, EK-UCB and bounds of your own); a non-finite width.
    fn ucb_regularity(&self) -> Result<UcbRegularity<'_>> {
        Err(Error::Unsupported {
            what: format!("a proven bound over a box for the {} bound", self.name()),
        })
    }

    /// U_r(x), μ_r(x), ρ_r(x) and ∇U_r(x) for the term `term` of a [`UcbShape::Terms`] UCB.
    /// Wrappers must forward it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for bounds without terms (the provided method); as
    /// [`ConfidenceBound::ucb_gradient`]; [`Error::InvalidParameter`] for a term out of range.
    fn ucb_term_detail(&self, x: &[f64], term: usize) -> Result<UcbTermDetail> {
        let _ = (x, term);
        Err(Error::Unsupported {
            what: format!("UCB terms of the {} bound", self.name()),
        })
    }

    /// The posterior variance given the observations and the `pending` inputs, whose targets
    /// are still to come (see [`PendingVariance`]); the bound itself is unchanged. The exact
    /// bounds use the regulariser of their mean and cost O(p·t²) for p pending points (one
    /// forward substitution each, as an append would, but nothing is appended), then O(t²)
    /// per queried point.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for bounds without it (the provided method); pending points of
    /// the wrong dimension or non-finite kernel values.
    fn pending_variance<'a>(
        &'a self,
        pending: &Points<'_>,
    ) -> Result<Box<dyn PendingVariance + 'a>> {
        let _ = pending;
        Err(Error::Unsupported {
            what: format!("pending evaluations with the {} bound", self.name()),
        })
    }

    /// [`ConfidenceBound::evaluate`] on anything that can be viewed as points. Available on
    /// concrete bounds and on `Box<dyn ConfidenceBound>`; through a `&dyn ConfidenceBound`, call
    /// `evaluate(&points.as_points()?)`.
    ///
    /// # Errors
    /// As [`ConfidenceBound::evaluate`], plus invalid points.
    fn bounds<P: AsPoints + ?Sized>(&self, points: &P) -> Result<Bounds>
    where
        Self: Sized,
    {
        self.evaluate(&points.as_points()?)
    }

    /// [`ConfidenceBound::evaluate_checked`] on anything that can be viewed as points.
    ///
    /// # Errors
    /// As [`ConfidenceBound::evaluate`], plus invalid points.
    fn bounds_checked<P: AsPoints + ?Sized>(&self, points: &P) -> Result<CheckedBounds>
    where
        Self: Sized,
    {
        self.evaluate_checked(&points.as_points()?)
    }
}

/// Implements [`crate::snapshot::Snapshot`] for an exact bound `$ty<K>` with a `posterior`
/// field: the kind is `$name<kernel>`, and a restored value must pass `$check` (a
/// `Result<()>` over `$b: &Self`).
#[cfg(feature = "serde")]
macro_rules! exact_snapshot {
    ($ty:ident, $name:literal, |$b:ident| $check:expr) => {
        impl<K: crate::kernel::Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot
            for $ty<K>
        {
            fn kind() -> String {
                format!("{}<{}>", $name, K::kind())
            }
            fn restore(&mut self) -> crate::error::Result<()> {
                self.posterior.restore()?;
                let $b = &*self;
                $check
            }
        }
    };
}
#[cfg(feature = "serde")]
pub(crate) use exact_snapshot;

/// Checks that a restored posterior has exactly the regularisers its bound builds.
#[cfg(feature = "serde")]
pub(crate) fn same_regularisers<K: crate::kernel::Kernel>(
    posterior: &crate::posterior::ExactPosterior<K>,
    expected: &[f64],
) -> Result<()> {
    crate::snapshot::ensure(
        posterior.regularisers().eq(expected.iter().copied()),
        || {
            format!(
                "regularisers {:?}, the parameters give {expected:?}",
                posterior.regularisers().collect::<Vec<_>>()
            )
        },
    )
}

/// Index of the largest value, the lowest index among ties.
///
/// # Errors
/// [`Error::NoArms`] if `values` is empty, [`Error::NonFinite`] if any value is NaN.
pub(crate) fn argmax_lowest(values: &[f64]) -> Result<usize> {
    if values.is_empty() {
        return Err(Error::NoArms);
    }
    if let Some(j) = values.iter().position(|v| v.is_nan()) {
        return Err(Error::NonFinite {
            what: format!("upper confidence bound of arm {j}"),
        });
    }
    let mut best = 0;
    for (j, &v) in values.iter().enumerate().skip(1) {
        if v > values[best] {
            best = j;
        }
    }
    Ok(best)
}

/// The indices of the `count` largest values, largest first, the lowest index among ties
/// (all of them if there are fewer; `count = 0` is taken as 1).
///
/// # Errors
/// [`Error::NoArms`] if `values` is empty, [`Error::NonFinite`] if any value is NaN.
pub(crate) fn largest_lowest(values: &[f64], count: usize) -> Result<Vec<usize>> {
    argmax_lowest(values)?;
    let mut order: Vec<usize> = (0..values.len()).collect();
    // No NaN is left, so `partial_cmp` is total (and −0 ties with +0, as in argmax_lowest).
    order.sort_by(|&a, &b| {
        values[b]
            .partial_cmp(&values[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    order.truncate(count.max(1));
    Ok(order)
}

macro_rules! forward_bound {
    ($($wrapper:ty),*) => {$(
        impl<B: ConfidenceBound + ?Sized> ConfidenceBound for $wrapper {
            fn name(&self) -> &'static str {
                (**self).name()
            }
            fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
                (**self).observe(x, y)
            }
            fn observe_many(&mut self, points: &Points<'_>, targets: &[f64]) -> Result<()> {
                (**self).observe_many(points, targets)
            }
            fn learns_norm(&self) -> bool {
                (**self).learns_norm()
            }
            fn diagnostics(&self) -> Diagnostics {
                (**self).diagnostics()
            }
            fn evaluate_checked(&self, points: &Points<'_>) -> Result<CheckedBounds> {
                (**self).evaluate_checked(points)
            }
            fn observations(&self) -> Result<Observations> {
                (**self).observations()
            }
            fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
                (**self).evaluate(points)
            }
            fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize> {
                (**self).argmax_ucb(points)
            }
            fn top_ucb(&self, points: &Points<'_>, count: usize) -> Result<Vec<usize>> {
                (**self).top_ucb(points, count)
            }
            fn top_ucb_with_terms(
                &self,
                points: &Points<'_>,
                count: usize,
            ) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
                (**self).top_ucb_with_terms(points, count)
            }
            fn len(&self) -> usize {
                (**self).len()
            }
            fn dim(&self) -> Option<usize> {
                (**self).dim()
            }
            fn truncate(&mut self, len: usize) {
                (**self).truncate(len)
            }
            fn remove_oldest(&mut self) -> Result<()> {
                (**self).remove_oldest()
            }
            fn fix_arms(&mut self, arms: &Points<'_>, memory_limit: Option<usize>) -> Result<bool> {
                (**self).fix_arms(arms, memory_limit)
            }
            fn release_arms(&mut self) {
                (**self).release_arms()
            }
            fn fixed_arms(&self) -> Option<ArmSetInfo> {
                (**self).fixed_arms()
            }
            fn gradient(&self, x: &[f64]) -> Result<BoundGradient> {
                (**self).gradient(x)
            }
            fn ucb_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
                (**self).ucb_gradient(x)
            }
            fn ucb_terms(&self) -> usize {
                (**self).ucb_terms()
            }
            fn ucb_term_values(&self, x: &[f64]) -> Result<Vec<f64>> {
                (**self).ucb_term_values(x)
            }
            fn ucb_term_values_at(&self, points: &[&[f64]]) -> Vec<Result<Vec<f64>>> {
                (**self).ucb_term_values_at(points)
            }
            fn ucb_gradient_among(&self, x: &[f64], terms: &[usize]) -> Result<(f64, Vec<f64>)> {
                (**self).ucb_gradient_among(x, terms)
            }
            fn ucb_regularity(&self) -> Result<UcbRegularity<'_>> {
                (**self).ucb_regularity()
            }
            fn ucb_term_detail(&self, x: &[f64], term: usize) -> Result<UcbTermDetail> {
                (**self).ucb_term_detail(x, term)
            }
            fn pending_variance<'a>(
                &'a self,
                pending: &Points<'_>,
            ) -> Result<Box<dyn PendingVariance + 'a>> {
                (**self).pending_variance(pending)
            }
        }
    )*};
}
forward_bound!(Box<B>, &mut B);

/// Implements the [`ConfidenceBound`] methods that only forward to the `posterior` field;
/// `forward_posterior!(without truncate)` leaves `truncate`, `remove_oldest` and the fixed arm
/// set to the bound (for cached state). `forward_posterior!(|b| widths: W, mean: M)` also
/// implements `evaluate` and `argmax_ucb` as every exact bound of the form min_a (μ_a + w_a ρ_a)
/// does ([`exact_evaluate`], [`exact_argmax`]), with the widths `W` of the posterior's
/// regularisers and the mean of regulariser `M` (`b` is the bound).
macro_rules! forward_posterior {
    (|$b:ident| widths: $widths:expr, mean: $mean:expr, then: $then:ident, $removed:ident) => {
        forward_posterior!(|$b| widths: $widths, mean: $mean; queries);
        fn observe(&mut self, x: &[f64], y: f64) -> $crate::error::Result<()> {
            self.posterior.observe(x, y)?;
            self.$then();
            Ok(())
        }
        forward_posterior!(reads);
        fn observe_many(
            &mut self,
            points: &$crate::points::Points<'_>,
            targets: &[f64],
        ) -> $crate::error::Result<()> {
            self.posterior.observe_many(points, targets)?;
            self.$then();
            Ok(())
        }
        forward_posterior!(arms);
        fn truncate(&mut self, len: usize) {
            self.posterior.truncate(len);
            self.$removed();
        }
        fn remove_oldest(&mut self) -> $crate::error::Result<()> {
            self.posterior.remove_oldest();
            self.$removed();
            Ok(())
        }
    };
    (|$b:ident| widths: $widths:expr, mean: $mean:expr) => {
        forward_posterior!(|$b| widths: $widths, mean: $mean; queries);
        forward_posterior!();
    };
    (|$b:ident| widths: $widths:expr, mean: $mean:expr; queries) => {
        fn evaluate(
            &self,
            points: &$crate::points::Points<'_>,
        ) -> $crate::error::Result<$crate::bound::Bounds> {
            let $b = self;
            $crate::bound::exact_evaluate(&self.posterior, &$widths, $mean, points)
        }
        fn argmax_ucb(&self, points: &$crate::points::Points<'_>) -> $crate::error::Result<usize> {
            let $b = self;
            $crate::bound::exact_argmax(&self.posterior, &$widths, points)
        }
        fn top_ucb(
            &self,
            points: &$crate::points::Points<'_>,
            count: usize,
        ) -> $crate::error::Result<Vec<usize>> {
            let $b = self;
            $crate::bound::exact_top(&self.posterior, &$widths, points, count)
        }
        fn top_ucb_with_terms(
            &self,
            points: &$crate::points::Points<'_>,
            count: usize,
        ) -> $crate::error::Result<(Vec<usize>, Vec<Vec<f64>>)> {
            let $b = self;
            $crate::bound::exact_top_terms(&self.posterior, &$widths, points, count)
        }
        fn gradient(&self, x: &[f64]) -> $crate::error::Result<$crate::bound::BoundGradient> {
            let $b = self;
            $crate::bound::exact_gradient(&self.posterior, &$widths, $mean, x)
        }
        fn ucb_gradient(&self, x: &[f64]) -> $crate::error::Result<(f64, Vec<f64>)> {
            let $b = self;
            $crate::bound::exact_ucb_gradient(&self.posterior, &$widths, x)
        }
        fn ucb_terms(&self) -> usize {
            self.posterior.regularisers().len()
        }
        fn ucb_term_values(&self, x: &[f64]) -> $crate::error::Result<Vec<f64>> {
            let $b = self;
            $crate::bound::exact_ucb_terms(&self.posterior, &$widths, x)
        }
        fn ucb_term_values_at(
            &self,
            points: &[&[f64]],
        ) -> Vec<$crate::error::Result<Vec<f64>>> {
            let $b = self;
            $crate::bound::exact_ucb_terms_at(&self.posterior, &$widths, points)
        }
        fn ucb_gradient_among(
            &self,
            x: &[f64],
            terms: &[usize],
        ) -> $crate::error::Result<(f64, Vec<f64>)> {
            let $b = self;
            $crate::bound::exact_ucb_gradient_among(&self.posterior, &$widths, x, terms)
        }
        fn ucb_regularity(
            &self,
        ) -> $crate::error::Result<$crate::bound::UcbRegularity<'_>> {
            let $b = self;
            $crate::bound::exact_regularity(&self.posterior, &$widths)
        }
        fn ucb_term_detail(
            &self,
            x: &[f64],
            term: usize,
        ) -> $crate::error::Result<$crate::bound::UcbTermDetail> {
            let $b = self;
            $crate::bound::exact_term_detail(&self.posterior, &$widths, x, term)
        }
        fn pending_variance<'a>(
            &'a self,
            pending: &$crate::points::Points<'_>,
        ) -> $crate::error::Result<Box<dyn $crate::bound::PendingVariance + 'a>> {
            #[allow(unused_variables)] // `$mean` is a constant for most bounds
            let $b = self;
            $crate::bound::exact_pending_variance(&self.posterior, $mean, pending)
        }
    };
    () => {
        forward_posterior!(without truncate);
        fn observe_many(
            &mut self,
            points: &$crate::points::Points<'_>,
            targets: &[f64],
        ) -> $crate::error::Result<()> {
            self.posterior.observe_many(points, targets)
        }
        forward_posterior!(arms);
        fn truncate(&mut self, len: usize) {
            self.posterior.truncate(len)
        }
        fn remove_oldest(&mut self) -> $crate::error::Result<()> {
            self.posterior.remove_oldest();
            Ok(())
        }
    };
    (without truncate) => {
        fn observe(&mut self, x: &[f64], y: f64) -> $crate::error::Result<()> {
            self.posterior.observe(x, y)
        }
        forward_posterior!(reads);
    };
    (reads) => {
        fn len(&self) -> usize {
            self.posterior.len()
        }
        fn dim(&self) -> Option<usize> {
            self.posterior.dim()
        }
        fn observations(&self) -> $crate::error::Result<$crate::bound::Observations> {
            Ok($crate::bound::Observations::of_exact(&self.posterior))
        }
    };
    (arms) => {
        fn fix_arms(
            &mut self,
            arms: &$crate::points::Points<'_>,
            memory_limit: Option<usize>,
        ) -> $crate::error::Result<bool> {
            self.posterior.fix_arms(arms, memory_limit)
        }
        fn release_arms(&mut self) {
            self.posterior.release_arms()
        }
        fn fixed_arms(&self) -> Option<$crate::bound::ArmSetInfo> {
            self.posterior.fixed_arms()
        }
    };
}
use forward_posterior;
