//! The martingale-mixture radii R_t² and R̃_a², shared by AMM-UCB, DMM-UCB and CMM-UCB.

use super::CheckedParams;
use crate::kernel::Kernel;
use crate::posterior::ExactPosterior;

/// R̃_a/√a, the factor multiplying ρ_a(x) in U_a(x) = μ_a(x) + (R̃_a/√a)ρ_a(x)
/// (Flynn & Reeb 2024 Cor. 4.3 and Eq. 8), for the regulariser with index `r` of `posterior`, whose
/// regulariser with index `r0` is a0 = σ²/c (for an adaptive c, the c of the grid whose R_t is
/// used, with ln(m/δ): see [`super::BoundParams`]):
///
/// R̃_a² = R_t² + aB² − a q_a,  R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ).
///
/// At a = a0 the q terms cancel exactly (Lemma C.2) and are left out rather than subtracted,
/// so AMM's width is computed bit for bit as DMM's at a0.
///
/// R̃_a² < 0 means that the two-ellipsoid confidence set is empty: the data contradict σ, B or
/// δ. Every value is then vacuously a bound; the radius is taken as 0 (the bound collapses to
/// μ_a). A NaN R̃_a² (overflowed q_a or ld_a) is returned as NaN, for the bound to reject.
pub(crate) fn mixture_width<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    r: usize,
    r0: usize,
) -> f64 {
    let radius_sq = radius_sq_with(params, posterior, r, r0, &mut None);
    width(radius_sq, posterior.factor(r).regulariser())
}

/// R̃_a/√a from R̃_a²: 0 for an empty set (R̃_a² ≤ 0), NaN kept for the bound to reject.
fn width(radius_sq: f64, a: f64) -> f64 {
    if radius_sq > 0.0 {
        (radius_sq / a).sqrt()
    } else if radius_sq.is_nan() {
        f64::NAN
    } else {
        0.0
    }
}

/// [`mixture_width`] for every regulariser index in `rs`, with what the rounding allowance
/// needs of the data ([`DataScale`]) computed once.
pub(crate) fn mixture_widths<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    rs: impl Iterator<Item = usize>,
    r0: usize,
) -> Vec<f64> {
    let mut scale = None;
    rs.map(|r| {
        let radius_sq = radius_sq_with(params, posterior, r, r0, &mut scale);
        width(radius_sq, posterior.factor(r).regulariser())
    })
    .collect()
}

/// R̃_a² for the regulariser with index `r` (see [`mixture_width`]); for a ≠ a0, an upper
/// bound on its exact value that covers the rounding of the computed a0·q_{a0} − a·q_a
/// ([`rounded_radius_sq`]), with `scale` computed when it is first needed.
fn radius_sq_with<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    r: usize,
    r0: usize,
    scale: &mut Option<DataScale>,
) -> f64 {
    let a = posterior.factor(r).regulariser();
    let (log_det, confidence) = log_terms(params, posterior, r0);
    let norm_bound = params.norm_bound();
    if r == r0 || posterior.is_empty() {
        // a0 q_{a0} − a0 q_{a0} = 0 exactly (Lemma C.2): nothing of the targets is left, and
        // nothing cancels (nor without data: R̃_a² = 2σ² ln(1/δ) + aB²).
        return log_det + confidence + a * norm_bound * norm_bound;
    }
    let a0 = posterior.factor(r0).regulariser();
    let scale = scale.get_or_insert_with(|| DataScale::new(posterior, a0));
    rounded_radius_sq(params, posterior, r, r0, scale)
}

/// What [`rounded_radius_sq`] needs of the data beyond the factors, the same for every
/// regulariser: upper bounds on tr(K_t), ‖y‖² and Σ ln(1 + k(xᵢ, xᵢ)/a0) (O(t) kernel values).
#[derive(Clone, Copy)]
pub(crate) struct DataScale {
    trace: f64,
    targets_sq: f64,
    hadamard: f64,
}

impl DataScale {
    fn new<K: Kernel>(posterior: &ExactPosterior<K>, a0: f64) -> Self {
        let tf = posterior.len() as f64;
        let (mut trace, mut hadamard) = (0.0, 0.0);
        for i in 0..posterior.len() {
            let k = posterior.kernel().eval_diag(posterior.input(i)) / (1.0 - KERNEL_ROUNDING);
            trace += k;
            hadamard += (k / a0).ln_1p();
        }
        let targets_sq = posterior.targets().iter().map(|y| y * y).sum::<f64>();
        Self {
            trace: trace * (1.0 + gamma(tf)),
            targets_sq: targets_sq * (1.0 + gamma(tf)),
            hadamard: hadamard * (1.0 + gamma(tf + 3.0)),
        }
    }
}

/// The unit roundoff u = 2⁻⁵³ of binary64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// γ_n = n·u/(1 − n·u), the factor of Higham (2002, §3.1) in rounding-error bounds of n
/// operations.
fn gamma(n: f64) -> f64 {
    n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)
}

/// The assumed accuracy of kernel values, u_k = 128u: |k̂(x, x′) − k(x, x′)| ≤
/// u_k·√(k(x, x)·k(x′, x′)). The crate's kernels are well within it (the Matérn kernel of
/// general ν, computed through `puruspe`'s K_ν, is the least accurate: 1.2·10⁻¹⁴ relative
/// at ν = 100, 54u; the closed forms are within a few u).
const KERNEL_ROUNDING: f64 = 128.0 * UNIT_ROUNDOFF;

/// An upper bound on the exact R̃_a² = R_t² + aB² − a·q_a for a ≠ a0, allowing for the
/// rounding of the computed q_a, q_{a0} and ld_{a0}.
///
/// Why it is needed: R̃_a² is a difference of a0·q_{a0} and a·q_a, each of the order of ‖y‖²,
/// and on near-singular data (inputs closer than the kernel can tell apart, with targets that
/// disagree by far more than σ) the difference is a small fraction of either; computed from
/// the Cholesky factors of K_t + aI, whose relative error grows with their condition number,
/// it can then fall below the exact value, and U_a(x) with it (in the case that showed it,
/// two inputs 10⁻⁷ apart with y = ±1 and σ = 10⁻⁴, by 15% of the bound's width).
///
/// The bound. The computed factor L̂ of K̂ + aI (K̂ the kernel values as computed) satisfies
/// L̂L̂ᵀ = K̂ + aI + E with |E| ≤ γ_{t+1}|L̂||L̂ᵀ| (Higham 2002, Thm 10.3), and the whitened
/// targets ŵ solve (L̂ + ΔL)ŵ = y with |ΔL| ≤ γ_t|L̂| (Thm 8.5), so that the computed
/// q̂_a = ‖ŵ‖²(1 + θ), |θ| ≤ γ_t, is yᵀM⁻¹y for M = (L̂ + ΔL)(L̂ + ΔL)ᵀ = K_t + aI + F. Since
/// ‖|L̂||L̂ᵀ|‖_F ≤ ‖L̂‖_F² = tr(L̂L̂ᵀ) and ‖K̂ − K_t‖_F ≤ u_k·tr(K_t) ([`KERNEL_ROUNDING`]),
///
///   ‖F‖ ≤ η_a = (u_k + 8γ_{t+1})·(tr(K̂)/(1 − u_k) + t·a),
///
/// where 8γ_{t+1} is twice the 3γ_{t+1} + O(γ²) of E, ΔL·L̂ᵀ and L̂·ΔLᵀ, for the blocked
/// factorisation and the rows appended one at a time. (That is the backward error of factors
/// built by appending rows, by a refactorisation, or cut back by `truncate`, whose leading
/// rows are untouched. After `remove_oldest`, which updates the factor by rotations, each
/// removal adds a backward error of the same order and the runtime check refactorises only
/// beyond a relative residual of 10⁻⁸: there the bound is not proven.)
///
/// With A = K_t + aI (λ_min(A) ≥ a) and e_a = η_a/√(a(a − η_a)),
/// |yᵀA⁻¹y − yᵀM⁻¹y| ≤ η_a‖A⁻¹y‖‖M⁻¹y‖ gives |q_a − yᵀM⁻¹y| ≤ e_a(1 + e_a)·yᵀM⁻¹y when
/// η_a < a; in any case 0 ≤ a·q_a ≤ ‖y‖². The
/// log-determinant ld_{a0} = Σ ln(1 + ρ²/a0) moves by at most −t·ln(1 − η_{a0}/a0) under a
/// perturbation of norm η_{a0} < a0, and its sum of t non-negative terms, each with a relative
/// error of a few u, by γ_{t+3}·ld_{a0} + 2t·u; whatever the rounding, ld_{a0} ≤
/// Σ ln(1 + k(xᵢ, xᵢ)/a0) (Hadamard's inequality), and the smaller bound is used. The four
/// sums of R̃_a² add γ_6 times the sum of the magnitudes of their terms.
///
/// On ordinary data it widens the bound by 10⁻¹¹ … 10⁻⁶ relative (Matérn 5/2, d = 3, c = 1:
/// 5·10⁻¹² at t = 10; 1.6·10⁻⁷ at t = 1000 with σ = 0.1, 2.5·10⁻⁶ with σ = 0.01); on
/// near-singular data it can remove
/// the advantage of the smaller regularisers over a0, whose U_{a0} (AMM-UCB's) has no such
/// difference and is left as it is.
fn rounded_radius_sq<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    r: usize,
    r0: usize,
    scale: &DataScale,
) -> f64 {
    let tf = posterior.len() as f64;
    let (a0, a) = (
        posterior.factor(r0).regulariser(),
        posterior.factor(r).regulariser(),
    );
    let DataScale {
        trace,
        targets_sq,
        hadamard,
    } = *scale;
    let backward = |reg: f64| (KERNEL_ROUNDING + 8.0 * gamma(tf + 1.0)) * (trace + tf * reg);
    // The interval [lo, hi] that holds the exact reg·q_reg.
    let scaled_quad = |index: usize, reg: f64| -> (f64, f64) {
        let computed = reg * posterior.quad_form(index);
        let eta = backward(reg);
        if eta >= reg {
            return (0.0, targets_sq);
        }
        let e = eta / (reg * (reg - eta)).sqrt();
        let relative = e * (1.0 + e);
        let (lo, hi) = (
            computed * (1.0 - relative) / (1.0 + gamma(tf + 1.0)),
            computed * (1.0 + relative) / (1.0 - gamma(tf + 1.0)),
        );
        (lo.max(0.0), hi.min(targets_sq))
    };
    let (_, quad0_hi) = scaled_quad(r0, a0);
    let (quad_lo, _) = scaled_quad(r, a);
    let sigma_sq = params.sigma() * params.sigma();
    let log_det = posterior.log_det(r0);
    let eta0 = backward(a0);
    // Hadamard's inequality, ld_{a0} ≤ Σ ln(1 + k(xᵢ, xᵢ)/a0), holds whatever the rounding.
    let log_det_hi = if eta0 < a0 {
        let perturbation = -tf * (-eta0 / a0).ln_1p();
        (log_det * (1.0 + gamma(tf + 3.0)) + 2.0 * tf * UNIT_ROUNDOFF + perturbation).min(hadamard)
    } else {
        hadamard
    };
    let confidence = 2.0 * sigma_sq * params.mixture_log_inv_delta();
    let norm_term = a * params.norm_bound() * params.norm_bound();
    let positive = sigma_sq * log_det_hi + confidence + quad0_hi + norm_term;
    positive - quad_lo + gamma(6.0) * (positive + quad_lo)
}

/// R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ), the radius of the data constraint
/// ‖f_t − y_t‖ ≤ R_t (Flynn & Reeb 2024 Eq. 8 for the mixture N(0, cK_t), Lemma 4.2); `r0`
/// indexes a0.
pub(crate) fn data_radius_sq<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    r0: usize,
) -> f64 {
    let (log_det, confidence) = log_terms(params, posterior, r0);
    posterior.factor(r0).regulariser() * posterior.quad_form(r0) + log_det + confidence
}

/// The index among `rs` whose R_t² ([`data_radius_sq`]) is smallest, and that R_t²: for an
/// adaptive c, R*² = min over the grid of R_t(c)², each with ln(m/δ) (the union bound of
/// [`super::BoundParams`]). The first index wins ties; a NaN radius is chosen (to be reported).
pub(crate) fn best_data_radius<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    rs: impl Iterator<Item = usize>,
) -> (usize, f64) {
    rs.map(|r| (r, data_radius_sq(params, posterior, r)))
        .fold(None, |best: Option<(usize, f64)>, (r, v)| match best {
            Some((_, b)) if nan_first(b) <= nan_first(v) => best,
            _ => Some((r, v)),
        })
        .unwrap_or((0, f64::NAN))
}

/// σ² ld_{a0} and 2σ² ln(1/δ), the parts of R_t² that do not depend on the targets (apart, so
/// that each caller keeps its order of summation, to the bit).
fn log_terms<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    r0: usize,
) -> (f64, f64) {
    let sigma_sq = params.sigma() * params.sigma();
    (
        sigma_sq * posterior.log_det(r0),
        2.0 * sigma_sq * params.mixture_log_inv_delta(),
    )
}

/// Diagnostics over the regularisers `rs` of a mixture bound: the smallest R̃_a².
pub(crate) fn mixture_diagnostics<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    rs: impl Iterator<Item = usize>,
    r0: usize,
) -> super::Diagnostics {
    let mut scale = None;
    let smallest = rs
        .map(|r| {
            let radius_sq = radius_sq_with(params, posterior, r, r0, &mut scale);
            (posterior.factor(r).regulariser(), radius_sq)
        })
        .min_by(|a, b| nan_first(a.1).total_cmp(&nan_first(b.1)));
    super::Diagnostics {
        observations: posterior.len(),
        smallest_radius: smallest,
    }
}

/// Orders NaN before every number, so that a NaN radius is the one reported.
pub(crate) fn nan_first(v: f64) -> f64 {
    if v.is_nan() { f64::NEG_INFINITY } else { v }
}
