//! Kernel values against the closed forms of Rasmussen & Williams 2006 §4.2, computed by hand in this file with the
//! standard library's `exp` and `sqrt` (the crate uses its own vectorisable exponential,
//! accurate to about 2 ulp), combinators against the same hand computations, parameter
//! validation, the vectorised `eval_rows` against the scalar `eval` (bit for bit), and Gram
//! matrices against nalgebra's `SymmetricEigen` (symmetric and positive semidefinite).
//!
//! Tolerance of the closed-form comparisons: 1e-14 relative.

use kernel_bandits::Error;
use kernel_bandits::kernel::{Kernel, KernelExt, Linear, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use nalgebra::SymmetricEigen;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// Relative tolerance of the closed-form comparisons.
const TOL: f64 = 1e-14;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

#[track_caller]
fn assert_rel(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= TOL * want.abs(),
        "{what}: got {got:e}, want {want:e} (relative error {:e})",
        ((got - want) / want).abs()
    );
}

fn euclidean(x: &[f64], y: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt()
}

// Closed forms of Rasmussen & Williams 2006 §4.2 as functions of r/ℓ, by hand.
fn rbf_by_hand(u: f64) -> f64 {
    (-0.5 * u * u).exp()
}
fn matern12_by_hand(u: f64) -> f64 {
    (-u).exp()
}
fn matern32_by_hand(u: f64) -> f64 {
    let s = 3f64.sqrt() * u;
    (1.0 + s) * (-s).exp()
}
fn matern52_by_hand(u: f64) -> f64 {
    let s = 5f64.sqrt() * u;
    (1.0 + s + 5.0 * u * u / 3.0) * (-s).exp()
}

#[test]
fn closed_forms_at_one_lengthscale() {
    let sqrt3 = 3f64.sqrt();
    let sqrt5 = 5f64.sqrt();
    for l in [0.2, 1.0, 3.7] {
        let (x, y) = ([0.0], [l]);
        assert_rel(
            Rbf::new(l).unwrap().eval(&x, &y),
            (-0.5f64).exp(),
            "RBF, r = ℓ",
        );
        assert_rel(
            Matern::new(0.5, l).unwrap().eval(&x, &y),
            (-1f64).exp(),
            "Matérn 1/2, r = ℓ",
        );
        assert_rel(
            Matern::new(1.5, l).unwrap().eval(&x, &y),
            (1.0 + sqrt3) * (-sqrt3).exp(),
            "Matérn 3/2, r = ℓ",
        );
        assert_rel(
            Matern::new(2.5, l).unwrap().eval(&x, &y),
            (1.0 + sqrt5 + 5.0 / 3.0) * (-sqrt5).exp(),
            "Matérn 5/2, r = ℓ",
        );
    }
}

#[test]
fn closed_forms_at_two_lengthscales() {
    let sqrt3 = 3f64.sqrt();
    let sqrt5 = 5f64.sqrt();
    let l = 0.4;
    // r = 2ℓ, with the points in either order and off the origin.
    for (x, y) in [([0.1], [0.9]), ([0.9], [0.1]), ([-0.5], [0.3])] {
        assert_rel(
            Rbf::new(l).unwrap().eval(&x, &y),
            (-2f64).exp(),
            "RBF, r = 2ℓ",
        );
        assert_rel(
            Matern::new(0.5, l).unwrap().eval(&x, &y),
            (-2f64).exp(),
            "Matérn 1/2, r = 2ℓ",
        );
        assert_rel(
            Matern::new(1.5, l).unwrap().eval(&x, &y),
            (1.0 + 2.0 * sqrt3) * (-2.0 * sqrt3).exp(),
            "Matérn 3/2, r = 2ℓ",
        );
        assert_rel(
            Matern::new(2.5, l).unwrap().eval(&x, &y),
            (1.0 + 2.0 * sqrt5 + 20.0 / 3.0) * (-2.0 * sqrt5).exp(),
            "Matérn 5/2, r = 2ℓ",
        );
    }
}

/// RBF and the three Matérn kernels with length-scale `l` at x, y, whose distance is `u`·`l`,
/// against the closed forms written out by hand.
fn check_closed_forms(x: &[f64], y: &[f64], l: f64, u: f64, what: &str) {
    assert_rel(Rbf::new(l).unwrap().eval(x, y), rbf_by_hand(u), what);
    assert_rel(
        Matern::new(0.5, l).unwrap().eval(x, y),
        matern12_by_hand(u),
        what,
    );
    assert_rel(
        Matern::new(1.5, l).unwrap().eval(x, y),
        matern32_by_hand(u),
        what,
    );
    assert_rel(
        Matern::new(2.5, l).unwrap().eval(x, y),
        matern52_by_hand(u),
        what,
    );
}

#[test]
fn multi_dimensional_distance() {
    // r = ‖(0.3, 0.4)‖ = 0.5.
    let (x, y) = ([0.0, 0.0], [0.3, 0.4]);
    for l in [0.5, 0.25, 1.3] {
        let u = 0.5 / l;
        check_closed_forms(&x, &y, l, u, &format!("ℓ = {l}, r = 0.5"));
    }
    // Three dimensions: r = ‖(1, 2, 2)‖ = 3.
    let (x, y) = ([1.0, -1.0, 0.5], [2.0, 1.0, 2.5]);
    assert_rel(
        Rbf::new(3.0).unwrap().eval(&x, &y),
        (-0.5f64).exp(),
        "3-d RBF",
    );
    assert_rel(
        Matern::new(2.5, 1.5).unwrap().eval(&x, &y),
        matern52_by_hand(2.0),
        "3-d Matérn 5/2",
    );
}

#[test]
fn identical_points_and_diagonal() {
    let x = [0.3, -1.2, 7.0];
    for kernel in all_radial(0.7) {
        assert_eq!(kernel.eval(&x, &x), 1.0, "{kernel:?}");
        assert_eq!(kernel.eval_diag(&x), 1.0, "{kernel:?}");
    }
    let linear = Linear::with_bias(0.25).unwrap();
    assert_rel(linear.eval_diag(&x), 50.78, "linear with bias, k(x, x)");
}

#[test]
fn random_pairs_match_closed_forms() {
    // r/ℓ ≤ 5 keeps every value above e^{-12.5}: beyond, the few-ulp rounding of the distance,
    // amplified by the exponent s = √5 r/ℓ, alone would approach 1e-14.
    let mut rng = rng(21);
    for _ in 0..2_000 {
        let d = rng.random_range(1..=4);
        let l = 10f64.powf(rng.random_range(-1.0..1.0));
        let x: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0) * l).collect();
        let y: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0) * l).collect();
        let u = euclidean(&x, &y) / l;
        assert!(u <= 5.0);
        check_closed_forms(&x, &y, l, u, &format!("x = {x:?}, y = {y:?}, ℓ = {l}"));
    }
}

#[test]
fn linear_kernel() {
    let (x, y) = ([1.0, 2.0, 3.0], [4.0, -5.0, 6.0]);
    assert_eq!(Linear::new().eval(&x, &y), 12.0);
    assert_eq!(Linear::with_bias(0.5).unwrap().eval(&x, &y), 12.5);
    assert_eq!(Linear::with_bias(0.0).unwrap().eval(&x, &y), 12.0);
    assert_eq!(Linear::with_bias(2.0).unwrap().bias(), 2.0);
    assert_eq!(Linear::new().eval(&[0.0, 0.0], &[3.0, 4.0]), 0.0);
}

#[test]
fn scaled_plus_times() {
    let (x, y) = ([0.1, 0.2], [0.4, 0.6]); // r = 0.5
    let rbf = Rbf::new(0.5).unwrap();
    let matern = Matern::new(1.5, 0.25).unwrap();
    let linear = Linear::with_bias(1.0).unwrap();
    let rbf_value = (-0.5f64).exp();
    let matern_value = matern32_by_hand(2.0);
    let linear_value = 0.1 * 0.4 + 0.2 * 0.6 + 1.0;

    let scaled = rbf.scaled(2.5).unwrap();
    assert_eq!(scaled.variance(), 2.5);
    assert_rel(scaled.eval(&x, &y), 2.5 * rbf_value, "2.5 · RBF");
    assert_eq!(scaled.eval_diag(&x), 2.5);

    let sum = rbf.plus(linear);
    assert_rel(sum.eval(&x, &y), rbf_value + linear_value, "RBF + linear");
    assert_rel(
        sum.eval_diag(&x),
        1.0 + 0.05 + 1.0,
        "diagonal of RBF + linear",
    );

    let product = rbf.times(matern);
    assert_rel(
        product.eval(&x, &y),
        rbf_value * matern_value,
        "RBF · Matérn",
    );
    assert_eq!(product.eval_diag(&x), 1.0);

    // Nested: 3 · (RBF · Matérn) + linear.
    let nested = rbf.times(matern).scaled(3.0).unwrap().plus(linear);
    assert_rel(
        nested.eval(&x, &y),
        3.0 * rbf_value * matern_value + linear_value,
        "3 · (RBF · Matérn) + linear",
    );

    // Smoothness of combinations: the rougher part wins, None = infinitely smooth.
    assert_eq!(rbf.smoothness(), None);
    assert_eq!(matern.smoothness(), Some(1.5));
    assert_eq!(sum.smoothness(), None);
    assert_eq!(product.smoothness(), Some(1.5));
    assert_eq!(
        Matern::new(0.5, 1.0)
            .unwrap()
            .plus(Matern::new(2.5, 1.0).unwrap())
            .smoothness(),
        Some(0.5)
    );
}

#[test]
fn sliced_kernels() {
    // Points in R⁴: context = coordinates 0..2, action = coordinates 2..4.
    let x = [0.1, 0.2, 0.3, 0.4];
    let y = [0.4, 0.6, -0.2, 0.4];
    let context_kernel = Rbf::new(0.5).unwrap();
    let action_kernel = Matern::new(2.5, 0.25).unwrap();
    // By hand: the context distance is 0.5 (r = ℓ), the action distance 0.5 (r = 2ℓ).
    let context_value = (-0.5f64).exp();
    let action_value = matern52_by_hand(2.0);

    let on_context = context_kernel.on(0..2).unwrap();
    assert_eq!(on_context.range(), 0..2);
    assert_rel(on_context.eval(&x, &y), context_value, "RBF on 0..2");
    assert_rel(
        action_kernel.on(2..4).unwrap().eval(&x, &y),
        action_value,
        "Matérn on 2..4",
    );

    let joint = context_kernel
        .on(0..2)
        .unwrap()
        .times(action_kernel.on(2..4).unwrap());
    assert_rel(
        joint.eval(&x, &y),
        context_value * action_value,
        "sliced product",
    );
    // Equal to the product of the sub-kernels on the slices, for many random pairs.
    let mut rng = rng(31);
    for _ in 0..500 {
        let x: Vec<f64> = (0..4).map(|_| rng.random::<f64>()).collect();
        let y: Vec<f64> = (0..4).map(|_| rng.random::<f64>()).collect();
        let want = context_kernel.eval(&x[..2], &y[..2]) * action_kernel.eval(&x[2..], &y[2..]);
        assert_rel(joint.eval(&x, &y), want, "random sliced product");
        // And the product of slices is not the kernel on the whole vector.
        let whole = context_kernel.eval(&x, &y) * action_kernel.eval(&x, &y);
        assert!(x[..2] == y[..2] || x[2..] == y[2..] || joint.eval(&x, &y) != whole);
    }

    // A one-coordinate slice in the middle, and a sum of slices.
    let middle = Linear::new().on(1..2).unwrap();
    assert_eq!(middle.eval(&x, &y), 0.2 * 0.6);
    let sum = Linear::new()
        .on(0..1)
        .unwrap()
        .plus(Linear::new().on(3..4).unwrap());
    assert_eq!(sum.eval(&x, &y), 0.1 * 0.4 + 0.4 * 0.4);

    // Inputs too short for the slice are rejected where dimensions are checked.
    let short = vec![vec![0.0, 1.0, 2.0]];
    assert!(matches!(
        joint.gram(&short.as_points().unwrap()),
        Err(Error::DimensionMismatch {
            expected: 4,
            got: 3
        })
    ));
    assert!(joint.check_dim(4).is_ok() && joint.check_dim(7).is_ok());
}

#[test]
fn tiny_lengthscale() {
    for kernel in all_radial(1e-300) {
        for (x, y) in [
            ([0.0, 0.0], [0.5, 0.0]),
            ([1.0, 1.0], [1.0, 1.0 + 1e-15]),
            ([-1e300, 1e300], [1e300, -1e300]),
        ] {
            let value = kernel.eval(&x, &y);
            assert_eq!(value, 0.0, "{kernel:?} at distinct points {x:?}, {y:?}");
            let mut out = [f64::NAN; 2];
            kernel.eval_rows(&[x[0], x[1], y[0], y[1]], &y, &mut out);
            assert_eq!(out, [0.0, 1.0], "{kernel:?} eval_rows");
        }
        for x in [[0.0, 0.0], [0.5, -3.0], [1e300, 1e-300]] {
            assert_eq!(kernel.eval(&x, &x), 1.0, "{kernel:?} at identical points");
        }
        let points = vec![vec![0.0], vec![0.1], vec![0.1], vec![1e-200]];
        let gram = kernel.gram(&points.as_points().unwrap()).unwrap();
        assert!(gram.iter().all(|v| !v.is_nan()), "{kernel:?}: {gram}");
        assert_eq!(gram[(1, 2)], 1.0);
        assert_eq!(gram[(0, 3)], 0.0);
        assert_eq!(gram[(0, 1)], 0.0);
    }
}

#[test]
fn huge_lengthscale() {
    for kernel in all_radial(1e300) {
        for (x, y) in [([0.0, 0.0], [0.5, 0.0]), ([-7.0, 3.0], [100.0, -40.0])] {
            let value = kernel.eval(&x, &y);
            assert!((value - 1.0).abs() <= 1e-15, "{kernel:?}: {value}");
        }
    }
    // Distances of the order of ℓ are still resolved: r = ℓ = 1e300.
    let (x, y) = ([0.0], [1e300]);
    assert_rel(
        Rbf::new(1e300).unwrap().eval(&x, &y),
        (-0.5f64).exp(),
        "RBF, r = ℓ = 1e300",
    );
    assert_rel(
        Matern::new(2.5, 1e300).unwrap().eval(&x, &y),
        matern52_by_hand(1.0),
        "Matérn 5/2, r = ℓ = 1e300",
    );
}

/// A kernel and its profile by hand as a function of r/ℓ.
type KernelAndProfile = (Box<dyn Kernel>, fn(f64) -> f64);

#[test]
fn far_apart_points_underflow_to_zero_without_nan() {
    // Profile arguments up to and beyond the underflow thresholds (e^{-708}, s = 745). Here
    // the exponent s reaches ~1700, and a few-ulp rounding of the distance becomes an error of
    // s·ulp in e^{-s}: the tail is compared to 1e-12 relative (745·4 ulp ≈ 7e-13), and values
    // below 1e-300, where the crate flushes to 0, only to ±1e-300 absolute.
    let profiles: [KernelAndProfile; 4] = [
        (Box::new(Rbf::new(1.0).unwrap()), rbf_by_hand),
        (Box::new(Matern::new(0.5, 1.0).unwrap()), matern12_by_hand),
        (Box::new(Matern::new(1.5, 1.0).unwrap()), matern32_by_hand),
        (Box::new(Matern::new(2.5, 1.0).unwrap()), matern52_by_hand),
    ];
    for u in [
        30.0, 37.0, 38.0, 300.0, 333.3, 700.0, 708.5, 744.0, 746.0, 1e10, 1e200,
    ] {
        for (kernel, by_hand) in &profiles {
            // The hand formulas overflow to ∞·0 for u ≥ ~1e154; the true value is 0 there.
            let want = if u < 1e3 { by_hand(u) } else { 0.0 };
            let got = kernel.eval(&[0.0], &[u]);
            assert!(
                got >= 0.0 && got.is_finite(),
                "{kernel:?} at r = {u}: {got}"
            );
            assert!(
                (got - want).abs() <= 1e-12 * want + 1e-300,
                "{kernel:?} at r = {u}: got {got:e}, want {want:e}"
            );
        }
    }
}

fn invalid_parameter<T: std::fmt::Debug>(result: Result<T, Error>, expected_name: &str) {
    match result {
        Err(Error::InvalidParameter { name, .. }) => {
            assert_eq!(name, expected_name, "wrong parameter named in the error");
        }
        other => panic!("expected InvalidParameter({expected_name}), got {other:?}"),
    }
}

#[test]
fn invalid_parameters_are_rejected() {
    let bad_lengthscales = [
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        // Positive and finite, but 1/ℓ overflows.
        1e-320,
    ];
    for l in bad_lengthscales {
        invalid_parameter(Rbf::new(l), "lengthscale");
        for nu in [0.5, 1.5, 2.5] {
            invalid_parameter(Matern::new(nu, l), "lengthscale");
        }
    }
    // Any ν in (0, 100] is a Matérn kernel (tests/integration/matern_general.rs); these are not.
    for nu in [
        0.0,
        -0.0,
        -0.5,
        -1e-300,
        100.000_000_000_001,
        1e3,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        invalid_parameter(Matern::new(nu, 1.0), "nu");
    }
    for bias in [-1e-300, -1.0, f64::NAN, f64::INFINITY] {
        invalid_parameter(Linear::with_bias(bias), "bias");
    }
    let rbf = Rbf::new(1.0).unwrap();
    for variance in [0.0, -0.0, -2.0, f64::NAN, f64::INFINITY] {
        invalid_parameter(rbf.scaled(variance), "variance");
    }
    #[allow(clippy::reversed_empty_ranges)]
    for range in [0..0, 2..2, 3..1] {
        invalid_parameter(rbf.on(range), "range");
    }
    // The valid values just around the invalid ones are accepted.
    assert!(Rbf::new(f64::MIN_POSITIVE).is_ok() && Rbf::new(f64::MAX).is_ok());
    assert!(Linear::with_bias(0.0).is_ok() && rbf.scaled(1e-300).is_ok());
    let matern = Matern::new(1.5, 0.3).unwrap();
    assert_eq!((matern.nu(), matern.lengthscale()), (1.5, 0.3));
    assert_eq!(Rbf::new(0.7).unwrap().lengthscale(), 0.7);
}

fn all_radial(l: f64) -> Vec<Box<dyn Kernel>> {
    vec![
        Box::new(Rbf::new(l).unwrap()),
        Box::new(Matern::new(0.5, l).unwrap()),
        Box::new(Matern::new(1.5, l).unwrap()),
        Box::new(Matern::new(2.5, l).unwrap()),
    ]
}

#[test]
fn eval_rows_equals_eval_bit_for_bit() {
    let mut rng = rng(41);
    let mut kernels = Vec::new();
    for l in [1e-3, 0.05, 0.3, 1.0, 7.0, 1e4] {
        kernels.extend(all_radial(l));
        kernels.push(Box::new(Rbf::new(l).unwrap().scaled(1.7).unwrap()) as Box<dyn Kernel>);
    }
    // Lengths that are not multiples of any SIMD width, and 1 and 0.
    for n in [0, 1, 3, 8, 17, 1_003] {
        for d in [1, 2, 3, 5] {
            // Spread the points so that the profile is evaluated from 1 down to underflow.
            let spread = 10f64.powf(rng.random_range(-2.0..2.0));
            let rows: Vec<f64> = (0..n * d)
                .map(|_| spread * rng.random_range(-1.0..1.0))
                .collect();
            let y: Vec<f64> = (0..d)
                .map(|_| spread * rng.random_range(-1.0..1.0))
                .collect();
            for kernel in &kernels {
                let mut out = vec![f64::NAN; n];
                kernel.eval_rows(&rows, &y, &mut out);
                for (i, x) in rows.chunks_exact(d).enumerate() {
                    let want = kernel.eval(x, &y);
                    assert_eq!(
                        out[i].to_bits(),
                        want.to_bits(),
                        "{kernel:?}: eval_rows {} vs eval {want} at row {i} of {n} (d = {d})",
                        out[i]
                    );
                }
            }
        }
    }
}

/// The kernels of the PSD property test.
fn psd_kernels(l: f64) -> Vec<Box<dyn Kernel>> {
    let mut kernels = all_radial(l);
    kernels.push(Box::new(Linear::new()));
    kernels.push(Box::new(Linear::with_bias(0.5).unwrap()));
    kernels.push(Box::new(
        Rbf::new(l)
            .unwrap()
            .plus(Linear::with_bias(0.1).unwrap().scaled(0.3).unwrap()),
    ));
    kernels.push(Box::new(
        Matern::new(1.5, l)
            .unwrap()
            .times(Linear::with_bias(1.0).unwrap()),
    ));
    kernels
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: RngSeed::Fixed(0x4e1),
        ..ProptestConfig::with_cases(64)
    })]

    /// Gram matrices are symmetric (k(x, y) = k(y, x) exactly) and positive semidefinite: the
    /// smallest eigenvalue (nalgebra's SymmetricEigen) is at least −1e-10·n.
    #[test]
    fn gram_matrices_are_symmetric_psd(
        points in (1usize..=3).prop_flat_map(|d| {
            prop::collection::vec(prop::collection::vec(-2.0..2.0f64, d), 1..30)
        }),
        log10_lengthscale in -1.5..1.0f64,
    ) {
        let n = points.len();
        let view = points.as_points().unwrap();
        for kernel in psd_kernels(10f64.powf(log10_lengthscale)) {
            let gram = kernel.gram(&view).unwrap();
            prop_assert_eq!(gram.shape(), (n, n));
            for i in 0..n {
                for j in 0..n {
                    let (kij, kji) = (kernel.eval(&points[i], &points[j]), kernel.eval(&points[j], &points[i]));
                    prop_assert_eq!(kij.to_bits(), kji.to_bits(), "{:?}: k(x, y) ≠ k(y, x)", kernel);
                    prop_assert_eq!(gram[(i, j)].to_bits(), kij.to_bits());
                }
                prop_assert_eq!(gram[(i, i)], kernel.eval_diag(&points[i]));
            }
            let smallest = SymmetricEigen::new(gram).eigenvalues.min();
            prop_assert!(
                smallest >= -1e-10 * n as f64,
                "{:?}: smallest eigenvalue {:e}", kernel, smallest
            );
        }
    }
}

/// Sums and products evaluate rows through both parts' vectorised paths; the result must be
/// the pointwise combination of `eval`.
#[test]
fn combinator_rows_match_pointwise_evaluation() {
    let sum = Rbf::new(0.4).unwrap().plus(Matern::new(1.5, 0.9).unwrap());
    let product = Matern::new(2.5, 0.3)
        .unwrap()
        .times(Linear::with_bias(0.5).unwrap());
    let mut rng = rng(77);
    let rows: Vec<f64> = (0..3 * 257).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y = [0.1, -0.4, 0.7];
    let mut out = vec![0.0; 257];
    sum.eval_rows(&rows, &y, &mut out);
    for (o, x) in out.iter().zip(rows.chunks_exact(3)) {
        assert_rel(*o, sum.eval(x, &y), "sum rows");
    }
    product.eval_rows(&rows, &y, &mut out);
    for (o, x) in out.iter().zip(rows.chunks_exact(3)) {
        assert_rel(*o, product.eval(x, &y), "product rows");
    }
}

/// No radial kernel exceeds k(x, x) = 1 at points a tiny distance apart, through `eval`,
/// the vectorised `eval_rows` and `gram`: a value 1 + ε gives the Gram matrix of the two
/// points [[1, k], [k, 1]] the eigenvalue 1 − k < 0. The reference is k ≤ 1 itself (a
/// correlation), and 1 − k for the closed forms' series at small s: at r/ℓ ≤ 10⁻⁸ every
/// Matérn closed form is 1 to double precision. 40 001 values of r/ℓ, log-spaced over
/// [10⁻¹⁷, 0.1] (Matérn 5/2's unclamped product first exceeded 1 at r = 8.18·10⁻⁹ with ℓ = 1,
/// 32 times in all), at ℓ = 1 and ℓ = 0.3, in one and three dimensions.
#[test]
fn close_points_never_exceed_the_diagonal() {
    let n = 40_001;
    let offsets: Vec<f64> = (0..n)
        .map(|i| 1e-17 * (1e16_f64).powf(i as f64 / (n - 1) as f64))
        .collect();
    for l in [1.0, 0.3] {
        for kernel in all_radial(l) {
            let mut above = Vec::new();
            // One dimension: y = r.
            let rows: Vec<f64> = offsets.iter().map(|&r| r * l).collect();
            let mut out = vec![0.0; n];
            kernel.eval_rows(&rows, &[0.0], &mut out);
            for (i, (&r, &k)) in rows.iter().zip(&out).enumerate() {
                let scalar = kernel.eval(&[0.0], &[r]);
                if k > 1.0 || scalar > 1.0 {
                    above.push((r, k, scalar));
                }
                if offsets[i] <= 1e-8 {
                    // 1 − k is below 10⁻¹⁵ here for every closed form (Matérn 1/2's e^{−r/ℓ}
                    // is the slowest: 1 − k ≈ r/ℓ).
                    assert!(
                        1.0 - k <= 1.1 * offsets[i] + 1e-15,
                        "{kernel:?}: k({r:e}) = {k}"
                    );
                }
            }
            // Three dimensions, the offset along (1, −1, 1)/√3, through a 2 × 2 Gram matrix,
            // whose eigenvalues are 1 ± k.
            for &r in offsets.iter().step_by(97) {
                let h = r * l / 3f64.sqrt();
                let (x, y) = ([0.25, 0.5, 0.75], [0.25 + h, 0.5 - h, 0.75 + h]);
                let gram = kernel
                    .gram(&[x.to_vec(), y.to_vec()].as_points().unwrap())
                    .unwrap();
                // The eigenvalues of [[1, k], [k, 1]] are exactly 1 ± k.
                assert!(
                    gram[(0, 0)] == 1.0 && gram[(1, 1)] == 1.0 && gram[(0, 1)] <= 1.0,
                    "{kernel:?} at r = {r:e}: Gram matrix {gram}, eigenvalue 1 − k = {:e}",
                    1.0 - gram[(0, 1)]
                );
            }
            assert!(
                above.is_empty(),
                "{kernel:?}: {} values above 1, the first (r, eval_rows, eval) = {:?}",
                above.len(),
                above[0]
            );
        }
    }
}

/// Tiny smoothness: every ν that `Matern::new` accepts gives values in [0, 1] and gradients
/// that are never NaN, at distances from 10⁻³⁰⁰ to 10⁶ (for ν < 1/2 the slope grows without
/// bound as r → 0, and overflows to ∞ at the smallest distances, as documented). A subnormal ν
/// is refused: below ν ≈ 5.6·10⁻³⁰⁹, Γ(ν) ≈ 1/ν overflows, and such a ν gave a NaN gradient.
#[test]
fn tiny_smoothness_is_finite_or_refused() {
    let subnormal = f64::MIN_POSITIVE / 4.0;
    for nu in [subnormal, 1e-310, 5e-309, 5.6e-309, 2e-308] {
        invalid_parameter(Matern::new(nu, 0.5), "nu");
        invalid_parameter(Matern::with_bessel(nu, 0.5), "nu");
    }
    for nu in [
        f64::MIN_POSITIVE,
        3e-308,
        1e-300,
        1e-200,
        1e-100,
        1e-20,
        1e-10,
        1e-3,
    ] {
        let kernel = Matern::new(nu, 0.5).unwrap();
        let distances = std::iter::once(0.0)
            .chain((0..=1200).map(|i| 10f64.powf(-300.0 + f64::from(i) * 0.255)));
        for r in distances {
            // From the origin, so that the offset is not lost to the points' own rounding.
            let (x, y) = ([0.0, 0.0], [r * 0.6, -r * 0.8]);
            let k = kernel.eval(&x, &y);
            let mut gradient = [0.0; 2];
            kernel.gradient(&x, &y, &mut gradient).unwrap();
            assert!(
                (0.0..=1.0).contains(&k) && gradient.iter().all(|g| !g.is_nan()),
                "ν = {nu:e}, r = {r:e}: k = {k:e}, ∇k = {gradient:?}"
            );
        }
    }
}
