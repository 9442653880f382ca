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
    let a = posterior.factor(r).regulariser();
    let radius_sq = mixture_radius_sq(params, posterior, r, r0);
    if radius_sq > 0.0 {
        (radius_sq / a).sqrt()
    } else if radius_sq.is_nan() {
        f64::NAN
    } else {
        0.0
    }
}

/// R̃_a² for the regulariser with index `r` (see [`mixture_width`]).
pub(crate) fn mixture_radius_sq<K: Kernel>(
    params: &CheckedParams,
    posterior: &ExactPosterior<K>,
    r: usize,
    r0: usize,
) -> f64 {
    let a0 = posterior.factor(r0).regulariser();
    let a = posterior.factor(r).regulariser();
    let (log_det, confidence) = log_terms(params, posterior, r0);
    let radius_sq_without_quad = log_det + confidence;
    let quad = if r == r0 {
        0.0
    } else {
        a0 * posterior.quad_form(r0) - a * posterior.quad_form(r)
    };
    let norm_bound = params.norm_bound();
    radius_sq_without_quad + quad + a * norm_bound * norm_bound
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
    let smallest = rs
        .map(|r| {
            let radius_sq = mixture_radius_sq(params, posterior, r, r0);
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
