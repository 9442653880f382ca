//! Vectorised evaluation of radial (stationary) kernels k(x, y) = φ(‖x − y‖²/ℓ²).
//!
//! A cross-kernel column k_t(y) is computed in two passes over a contiguous buffer: scaled
//! squared distances, then the radial profile φ. The second pass is the hot spot of every
//! exact bound (t·m evaluations per query); it runs inside `pulp`'s runtime CPU dispatch so
//! that LLVM can vectorise it with AVX2/FMA where the CPU has them, and uses [`exp_neg`], a
//! branch-free exponential that vectorises (the C library's `exp` is an opaque scalar call).
//! The speed-up is recorded in the repository's BENCHMARKS.md.

/// Writes ‖(xᵢ − y)·inv_scale‖² for every row xᵢ of the row-major `rows` into `out`, summed
/// over the coordinates in order from 0.0, so that every value equals
/// [`super::scaled_sq_dist`]`(xᵢ, y, inv_scale)` bit for bit.
///
/// For d ≤ 8 the dimension is a compile-time constant, so that the loop over the rows
/// vectorises (interleaved loads) inside `pulp`'s dispatch; larger d take the generic loop.
#[inline]
pub(crate) fn scaled_sq_dists(rows: &[f64], y: &[f64], inv_scale: f64, out: &mut [f64]) {
    let d = y.len();
    debug_assert_eq!(rows.len(), out.len() * d);
    match d {
        1 => fixed_dim::<1>(rows, y, inv_scale, out),
        2 => fixed_dim::<2>(rows, y, inv_scale, out),
        3 => fixed_dim::<3>(rows, y, inv_scale, out),
        4 => fixed_dim::<4>(rows, y, inv_scale, out),
        5 => fixed_dim::<5>(rows, y, inv_scale, out),
        6 => fixed_dim::<6>(rows, y, inv_scale, out),
        7 => fixed_dim::<7>(rows, y, inv_scale, out),
        8 => fixed_dim::<8>(rows, y, inv_scale, out),
        _ => {
            for (o, x) in out.iter_mut().zip(rows.chunks_exact(d)) {
                *o = super::scaled_sq_dist(x, y, inv_scale);
            }
        }
    }
}

/// [`scaled_sq_dists`] for a dimension `D` known at compile time.
#[inline(always)]
fn fixed_dim<const D: usize>(rows: &[f64], y: &[f64], inv_scale: f64, out: &mut [f64]) {
    let (rows, _) = rows.as_chunks::<D>();
    let y: &[f64; D] = y.try_into().expect("y has D coordinates");
    pulp::Arch::new().dispatch(
        #[inline(always)]
        || {
            for (o, x) in out.iter_mut().zip(rows) {
                let mut sum = 0.0;
                for k in 0..D {
                    let d = (x[k] - y[k]) * inv_scale;
                    sum += d * d;
                }
                *o = sum;
            }
        },
    );
}

/// Applies `profile` to every value of `values`, in a context compiled for the best SIMD
/// instruction set the CPU supports.
#[inline]
pub(crate) fn map_in_place(values: &mut [f64], profile: impl Fn(f64) -> f64) {
    pulp::Arch::new().dispatch(
        #[inline(always)]
        || {
            for v in values.iter_mut() {
                *v = profile(*v);
            }
        },
    );
}

/// e^x for x ≤ 0, to within 2 ulp, branch-free so that loops over it vectorise; returns 0 for
/// x < −708 (where e^x < 3.3·10⁻³⁰⁸ would be subnormal) and for x = −∞.
///
/// Cody–Waite reduction x = n ln 2 + r with |r| ≤ ln 2 / 2, a degree-13 Taylor polynomial for
/// e^r (evaluated by Estrin's scheme) (truncation error < 2·10⁻¹⁷ relative), and 2ⁿ assembled from its exponent bits.
#[inline(always)]
pub(crate) fn exp_neg(x: f64) -> f64 {
    const LOG2_E: f64 = std::f64::consts::LOG2_E;
    // ln 2 split so that n·LN2_HI is exact for |n| < 2¹¹.
    const LN2_HI: f64 = 0.693_147_180_369_123_8;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    // 1.5·2⁵²: adding it rounds to an integer held in the low mantissa bits.
    const ROUNDER: f64 = 6_755_399_441_055_744.0;
    let clamped = if x < -708.0 { -708.0 } else { x };
    let shifted = clamped * LOG2_E + ROUNDER;
    let n = shifted - ROUNDER;
    let r = (clamped - n * LN2_HI) - n * LN2_LO;
    // Σ_{k=0}^{13} r^k/k! by Estrin's scheme: a shallow dependency tree, so the vectorised
    // loop is not latency-bound as Horner's 13-deep chain is.
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let pair = |c0: f64, c1: f64| c0 + c1 * r;
    let p01 = pair(1.0, 1.0);
    let p23 = pair(1.0 / 2.0, 1.0 / 6.0);
    let p45 = pair(1.0 / 24.0, 1.0 / 120.0);
    let p67 = pair(1.0 / 720.0, 1.0 / 5_040.0);
    let p89 = pair(1.0 / 40_320.0, 1.0 / 362_880.0);
    let p1011 = pair(1.0 / 3_628_800.0, 1.0 / 39_916_800.0);
    let p1213 = pair(1.0 / 479_001_600.0, 1.0 / 6_227_020_800.0);
    let low = (p01 + p23 * r2) + (p45 + p67 * r2) * r4;
    let high = (p89 + p1011 * r2) + p1213 * r4;
    let p = low + high * r8;
    // 2ⁿ: the integer n sits in the low bits of `shifted`; move it into the exponent field.
    let n_bits = shifted.to_bits().wrapping_sub(ROUNDER.to_bits());
    let two_to_n = f64::from_bits(n_bits.wrapping_add(1023) << 52);
    let value = p * two_to_n;
    if x < -708.0 { 0.0 } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_neg_matches_std_to_two_ulp() {
        let mut worst: f64 = 0.0;
        for i in 0..=2_000_000 {
            let x = -708.0 * (i as f64 / 2_000_000.0).powi(2);
            let reference = x.exp();
            let rel = ((exp_neg(x) - reference) / reference).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 2.0 * f64::EPSILON, "worst relative error {worst:e}");
        assert_eq!(exp_neg(0.0), 1.0);
        assert_eq!(exp_neg(-709.0), 0.0);
        assert_eq!(exp_neg(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn vectorised_map_equals_scalar() {
        let mut values: Vec<f64> = (0..1003).map(|i| -(i as f64) * 0.37).collect();
        let expected: Vec<f64> = values.iter().map(|&x| exp_neg(x)).collect();
        map_in_place(&mut values, exp_neg);
        for (a, b) in values.iter().zip(&expected) {
            assert_eq!(a.to_bits(), b.to_bits(), "{a} vs {b}");
        }
    }
}
