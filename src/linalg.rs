//! Small dense helpers used on hot paths.

/// xᵀy with eight independent partial sums, so that LLVM vectorises it (a plain
/// `zip().map().sum()` is a serial chain of dependent additions under IEEE semantics).
#[inline]
pub(crate) fn dot(x: &[f64], y: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    let mut partial = [0.0; 8];
    let mut xs = x.chunks_exact(8);
    let mut ys = y.chunks_exact(8);
    for (a, b) in (&mut xs).zip(&mut ys) {
        for k in 0..8 {
            partial[k] += a[k] * b[k];
        }
    }
    let tail: f64 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(a, b)| a * b)
        .sum();
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
