//! Small dense helpers used on hot paths.

/// xᵀy with eight independent partial sums, so that LLVM vectorises it (a plain
/// `zip().map().sum()` is a serial chain of dependent additions under IEEE semantics).
#[inline(always)]
pub(crate) fn dot(x: &[f64], y: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    let n = x.len().min(y.len());
    let (xs, x_tail) = x[..n].as_chunks::<8>();
    let (ys, y_tail) = y[..n].as_chunks::<8>();
    let mut partial = [0.0; 8];
    for (a, b) in xs.iter().zip(ys) {
        for k in 0..8 {
            partial[k] += a[k] * b[k];
        }
    }
    let tail: f64 = x_tail.iter().zip(y_tail).map(|(a, b)| a * b).sum();
    let (lo, hi) = partial.split_at(4);
    (lo[0] + hi[0]) + (lo[1] + hi[1]) + ((lo[2] + hi[2]) + (lo[3] + hi[3])) + tail
}

/// [`dot`] with explicit vectors of `S` (inside a `pulp` kernel, so that the CPU's widest
/// vectors are used): the same eight partial sums — lane k of the eight adds the products of
/// the indices ≡ k (mod 8) in order, by separate multiplies and adds, never fused — combined
/// in the same order, so **the same bits as [`dot`]** on any instruction set. (LLVM vectorises
/// [`dot`]'s loop across chunks instead, with a shuffle per load.)
#[inline(always)]
pub(crate) fn dot_simd<S: pulp::Simd>(simd: S, x: &[f64], y: &[f64]) -> f64 {
    use pulp::bytemuck;
    let lanes = S::F64_LANES;
    if lanes == 0 || lanes > 8 || 8 % lanes != 0 {
        return dot(x, y);
    }
    debug_assert_eq!(x.len(), y.len());
    let n = x.len().min(y.len());
    let (xs, x_tail) = x[..n].as_chunks::<8>();
    let (ys, y_tail) = y[..n].as_chunks::<8>();
    let groups = 8 / lanes;
    let load = |values: &[f64]| -> S::f64s {
        bytemuck::pod_read_unaligned(bytemuck::cast_slice::<f64, u8>(values))
    };
    let zero = simd.splat_f64s(0.0);
    let mut acc = [zero; 8];
    for (a, b) in xs.iter().zip(ys) {
        for (g, sum) in acc.iter_mut().enumerate().take(groups) {
            let range = g * lanes..(g + 1) * lanes;
            let product = simd.mul_f64s(load(&a[range.clone()]), load(&b[range]));
            *sum = simd.add_f64s(*sum, product);
        }
    }
    let mut partial = [0.0; 8];
    for (g, sum) in acc.iter().enumerate().take(groups) {
        partial[g * lanes..(g + 1) * lanes]
            .copy_from_slice(bytemuck::cast_slice(std::slice::from_ref(sum)));
    }
    let tail: f64 = x_tail.iter().zip(y_tail).map(|(a, b)| a * b).sum();
    let (lo, hi) = partial.split_at(4);
    (lo[0] + hi[0]) + (lo[1] + hi[1]) + ((lo[2] + hi[2]) + (lo[3] + hi[3])) + tail
}

/// Whether every value is finite, in one pass without an early exit: the lanes' checks are
/// combined by `&`, so the loop vectorises where `iter().all(..)`, which stops at the first
/// failure, compares and branches one value at a time.
#[inline]
pub(crate) fn all_finite(values: &[f64]) -> bool {
    values.iter().fold(true, |ok, v| ok & v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_finite_sees_every_non_finite_value_anywhere() {
        for n in [0, 1, 7, 8, 9, 33, 1000] {
            let values: Vec<f64> = (0..n).map(|i| i as f64 - 3.5).collect();
            assert!(all_finite(&values), "n = {n}");
            for i in 0..n {
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    let mut changed = values.clone();
                    changed[i] = bad;
                    assert!(!all_finite(&changed), "n = {n}, {bad} at {i}");
                }
            }
        }
        assert!(all_finite(&[
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -0.0,
            5e-324
        ]));
    }

    /// `dot_simd` inside a dispatched kernel, as the forward substitutions call it.
    struct Dot<'a>(&'a [f64], &'a [f64]);

    impl pulp::WithSimd for Dot<'_> {
        type Output = f64;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) -> f64 {
            dot_simd(simd, self.0, self.1)
        }
    }

    /// The vector kernel gives `dot`'s bits for every vector width (1, 2, 4 lanes emulated,
    /// and the CPU's own through `pulp`'s dispatch), on lengths around the 8-wide chunks and
    /// values spread over twelve orders of magnitude with both signs, where any change in the
    /// order of the additions (or a fused multiply-add) changes the last bits.
    #[test]
    fn dot_simd_has_the_bits_of_dot_on_every_vector_width() {
        let spread = |i: usize| {
            let x = (0.37 * i as f64).sin() * 10f64.powi((i % 13) as i32 - 6);
            let y = (1.0 + 0.11 * i as f64).cos() * 10f64.powi(6 - (i % 11) as i32) / 3.0;
            (x, y)
        };
        let level = |i: usize| {
            let x = (0.37 * i as f64 + 0.1).sin() * (1 + i % 3) as f64;
            (x, (1.1 * i as f64).cos() / 3.0)
        };
        for (n, values) in [
            0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 127, 999, 1000,
        ]
        .into_iter()
        .flat_map(|n| [(n, &spread as &dyn Fn(usize) -> (f64, f64)), (n, &level)])
        {
            let (x, y): (Vec<f64>, Vec<f64>) = (0..n).map(values).unzip();
            let want = dot(&x, &y).to_bits();
            let got = [
                dot_simd(pulp::Scalar, &x, &y),
                dot_simd(pulp::Scalar128b, &x, &y),
                dot_simd(pulp::Scalar256b, &x, &y),
                pulp::Arch::new().dispatch(Dot(&x, &y)),
            ];
            for (width, g) in got.iter().enumerate() {
                assert_eq!(
                    g.to_bits(),
                    want,
                    "n = {n}, kernel {width}: {g:e} against {:e}",
                    dot(&x, &y)
                );
            }
        }
    }

    #[test]
    fn dot_matches_naive_sum() {
        for n in [0, 1, 7, 8, 9, 31, 1000] {
            let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let y: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
            let naive: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
            assert!(
                (dot(&x, &y) - naive).abs() <= 1e-12 * (1.0 + naive.abs()),
                "n = {n}"
            );
        }
    }
}
