//! CMM-UCB against an independent second-order cone solver, and its orderings and edge cases.
//!
//! Reference: the primal program of Flynn & Reeb 2024 Thm 4.4, max f(x) s.t. ‖f_t − y_t‖ ≤ R_t,
//! ‖f‖_H ≤ B, solved by `clarabel`. By the representer theorem f lies in the span of the
//! kernel functions at the t observed points and x; with K_{t+1} = V diag(λ) Vᵀ (nalgebra's
//! symmetric eigendecomposition, no jitter) and the feature map Φ = V diag(√λ) over the
//! positive eigenvalues, f's values at the t + 1 points are Φz and ‖f‖_H = ‖z‖, so the program
//! is max φ_xᵀz s.t. ‖Φ_t z − y‖ ≤ R_t, ‖z‖ ≤ B: a well-scaled SOCP in z. R_t is computed here
//! from a dense nalgebra Cholesky of K_t + a0 I. Nothing of the crate's CMM code is used.

use crate::common::socp::{radius_sq, socp};
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

struct Instance {
    xs: Vec<Vec<f64>>,
    y: Vec<f64>,
    queries: Vec<Vec<f64>>,
}

/// t observations of a random RKHS function with norm B/2 (so that the set is not empty), with
/// repeated points when `repeats`, and queries: fresh points, an observed point and (when
/// `repeats`) a repeated one.
fn instance(
    kernel: &impl Kernel,
    seed: u64,
    t: usize,
    dim: usize,
    sigma: f64,
    b: f64,
    repeats: bool,
) -> Instance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let centres: Vec<Vec<f64>> = (0..8)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect();
    let weights: Vec<f64> = (0..8).map(|_| rng.sample(StandardNormal)).collect();
    let gram = DMatrix::from_fn(8, 8, |i, j| kernel.eval(&centres[i], &centres[j]));
    let w = DVector::from_vec(weights);
    let scale = 0.5 * b / w.dot(&(&gram * &w)).sqrt();
    let f = |x: &[f64]| -> f64 {
        scale
            * (0..8)
                .map(|i| w[i] * kernel.eval(x, &centres[i]))
                .sum::<f64>()
    };
    let mut xs: Vec<Vec<f64>> = Vec::new();
    for i in 0..t {
        let x = if repeats && i > 0 && rng.random::<f64>() < 0.3 {
            xs[rng.random_range(0..i)].clone()
        } else {
            (0..dim).map(|_| rng.random::<f64>()).collect()
        };
        xs.push(x);
    }
    let y: Vec<f64> = xs
        .iter()
        .map(|x| f(x) + sigma * rng.sample::<f64, _>(StandardNormal))
        .collect();
    let mut queries: Vec<Vec<f64>> = (0..2)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect();
    if t > 0 {
        queries.push(xs[rng.random_range(0..t)].clone());
        // The most repeated observation.
        let most = (0..t)
            .max_by_key(|&i| xs.iter().filter(|x| **x == xs[i]).count())
            .unwrap();
        queries.push(xs[most].clone());
    }
    Instance { xs, y, queries }
}

/// Runs CMM and clarabel on one instance; returns the largest relative difference.
fn compare(
    kernel: impl Kernel + Clone,
    (seed, t, dim, repeats): (u64, usize, usize, bool),
    (sigma, b, c): (f64, f64, f64),
) -> f64 {
    let delta = 0.01;
    let data = instance(&kernel, seed, t, dim, sigma, b, repeats);
    let params = BoundParams::new()
        .sigma(sigma)
        .norm_bound(b)
        .delta(delta)
        .scale(c);
    let mut cmm = Cmm::new(kernel.clone(), params).unwrap();
    for (x, &y) in data.xs.iter().zip(&data.y) {
        cmm.observe(x, y).unwrap();
    }
    let gram = DMatrix::from_fn(t, t, |i, j| kernel.eval(&data.xs[i], &data.xs[j]));
    let radius = radius_sq(&gram, &DVector::from_vec(data.y.clone()), sigma, c, delta).sqrt();
    let got = cmm.bounds(&data.queries).unwrap();
    let mut worst: f64 = 0.0;
    for (j, x) in data.queries.iter().enumerate() {
        let upper = socp(&kernel, &data.xs, &data.y, x, radius, b, 1.0);
        let lower = socp(&kernel, &data.xs, &data.y, x, radius, b, -1.0);
        let scale = upper.abs().max(lower.abs()).max(1e-3 * b);
        let context = || format!("seed {seed}, t = {t}, query {j}: σ = {sigma}, B = {b}, c = {c}");
        // Valid: never below the exact optimum (beyond the solver's tolerance).
        assert!(
            got.ucb[j] >= upper - 1e-7 * scale,
            "{}: UCB {} below the optimum {upper}",
            context(),
            got.ucb[j]
        );
        assert!(
            got.lcb[j] <= lower + 1e-7 * scale,
            "{}: LCB {} above the optimum {lower}",
            context(),
            got.lcb[j]
        );
        let diff = ((got.ucb[j] - upper).abs()).max((got.lcb[j] - lower).abs()) / scale;
        assert!(
            diff <= 1e-5,
            "{}: UCB {} vs {upper}, LCB {} vs {lower}",
            context(),
            got.ucb[j],
            got.lcb[j]
        );
        worst = worst.max(diff);
    }
    worst
}

#[test]
fn agrees_with_an_independent_socp_solver() {
    let mut worst: f64 = 0.0;
    let mut cases = 0;
    let sizes = [1, 2, 5, 12, 30, 60, 100, 200];
    let settings = [
        (0.1, 10.0, 1.0),
        (0.05, 3.0, 0.3),
        (0.3, 1.0, 1.0),
        (0.1, 5.0, 0.15),
    ];
    for (k, &t) in sizes.iter().enumerate() {
        for (s, &(sigma, b, c)) in settings.iter().enumerate() {
            let seed = (k * 10 + s) as u64;
            let dim = 1 + (k + s) % 3;
            let repeats = (k + s) % 2 == 0;
            let case = (seed, t, dim, repeats);
            let diff = match (k + s) % 3 {
                0 => compare(Rbf::new(0.4).unwrap(), case, (sigma, b, c)),
                1 => compare(Matern::new(2.5, 0.3).unwrap(), case, (sigma, b, c)),
                _ => compare(Matern::new(1.5, 0.6).unwrap(), case, (sigma, b, c)),
            };
            worst = worst.max(diff);
            cases += 1;
        }
    }
    assert!(cases >= 30);
    eprintln!("{cases} instances, largest relative difference to clarabel {worst:.2e}");
}

#[test]
fn the_certificate_closes_the_duality_gap() {
    let kernel = Matern::new(2.5, 0.4).unwrap();
    for (seed, repeats) in [(1, false), (2, true), (3, true)] {
        let data = instance(&kernel, seed, 80, 2, 0.1, 5.0, repeats);
        let params = BoundParams::new().sigma(0.1).norm_bound(5.0).scale(0.5);
        let mut cmm = Cmm::new(kernel, params).unwrap();
        for (x, &y) in data.xs.iter().zip(&data.y) {
            cmm.observe(x, y).unwrap();
        }
        for x in &data.queries {
            let cert = cmm.certificate(x).unwrap();
            let primal = cert.primal.expect("a primal point in the set");
            assert!(cert.residual_norm.unwrap() <= cert.radius * (1.0 + 1e-9));
            assert!(cert.rkhs_norm.unwrap() <= cert.norm_bound * (1.0 + 1e-9));
            assert!(primal <= cert.upper + 1e-9 * cert.upper.abs());
            assert!(
                cert.gap().unwrap() <= 1e-6 * cert.upper.abs().max(1.0),
                "gap {:e} at {x:?} (a = {})",
                cert.gap().unwrap(),
                cert.regulariser
            );
            let ucb = cmm.bounds(std::slice::from_ref(x)).unwrap().ucb[0];
            assert_eq!(ucb, cert.upper);
        }
    }
}

#[test]
fn without_data_the_bound_is_the_prior_one() {
    let kernel = Rbf::new(0.3).unwrap().scaled(2.0).unwrap();
    let cmm = Cmm::new(kernel, BoundParams::new().norm_bound(4.0)).unwrap();
    let b = cmm.bounds(&[[0.2, 0.7]]).unwrap();
    let prior = 4.0 * 2.0f64.sqrt();
    assert!((b.ucb[0] - prior).abs() <= 1e-12 * prior);
    assert!((b.lcb[0] + prior).abs() <= 1e-12 * prior);
    assert_eq!(b.mean[0], 0.0);
    let cert = cmm.certificate(&[0.2, 0.7]).unwrap();
    assert_eq!(cert.regulariser, f64::INFINITY);
}

#[test]
fn repeated_points_give_valid_bounds_at_the_boundary_a_to_zero() {
    // Ten noisy copies of two points: K_t has rank 2. At an observed point the infimum over a
    // can sit at a → 0, which must be evaluated as a limit, not by a tiny a.
    let kernel = Matern::new(1.5, 0.5).unwrap();
    let (sigma, b, c) = (0.1, 2.0, 1.0);
    let params = BoundParams::new().sigma(sigma).norm_bound(b).scale(c);
    let mut cmm = Cmm::new(kernel, params).unwrap();
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for i in 0..20 {
        let x = if i % 2 == 0 { vec![0.3] } else { vec![0.6] };
        let y = if i % 2 == 0 { 0.5 } else { -0.2 } + sigma * rng.sample::<f64, _>(StandardNormal);
        cmm.observe(&x, y).unwrap();
        xs.push(x);
        ys.push(y);
    }
    let gram = DMatrix::from_fn(20, 20, |i, j| kernel.eval(&xs[i], &xs[j]));
    let radius = radius_sq(&gram, &DVector::from_vec(ys.clone()), sigma, c, 0.01).sqrt();
    let eigenvalues = gram.clone().symmetric_eigenvalues();
    let largest = eigenvalues.iter().copied().fold(0.0, f64::max);
    let floor = 20.0 * f64::EPSILON * largest;
    let theta = eigenvalues
        .iter()
        .filter(|&&l| l <= floor)
        .fold(floor, |m, &l| m.max(l.abs()));
    for (i, x) in [vec![0.3], vec![0.6], vec![0.45], vec![0.95]]
        .into_iter()
        .enumerate()
    {
        let got = cmm.bounds(std::slice::from_ref(&x)).unwrap();
        if i < 2 {
            // The case this test is about: the optimum is at the a → 0 end, the limit itself
            // or (when the null space's slack makes the limit a little looser, see `Cmm`'s
            // documentation) a tiny a in the whole-spectrum range, below 10⁻⁴·a0.
            let a = cmm.certificate(&x).unwrap().regulariser;
            assert!(a < 1e-4 * sigma * sigma / c, "{x:?}: a = {a}");
        }
        let upper = socp(&kernel, &xs, &ys, &x, radius, b, 1.0);
        let lower = socp(&kernel, &xs, &ys, &x, radius, b, -1.0);
        let scale = upper.abs().max(lower.abs());
        assert!(
            got.ucb[0] >= upper - 1e-7 * scale,
            "{x:?}: {} < {upper}",
            got.ucb[0]
        );
        assert!(
            got.lcb[0] <= lower + 1e-7 * scale,
            "{x:?}: {} > {lower}",
            got.lcb[0]
        );
        // Within 10⁻⁶ relative, plus at the observed inputs the null space's documented
        // share B√θ‖u_jN‖ ≤ B√θ (`Cmm`'s module documentation, "At an observed input"), θ
        // from nalgebra's eigenvalues: 18 of them are rounding-level here.
        let share = if i < 2 { b * theta.sqrt() } else { 0.0 };
        assert!(
            got.ucb[0] - upper <= 1e-6 * scale + share,
            "{x:?}: {} vs {upper}",
            got.ucb[0]
        );
        assert!(
            lower - got.lcb[0] <= 1e-6 * scale + share,
            "{x:?}: {} vs {lower}",
            got.lcb[0]
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: RngSeed::Fixed(0xc33),
        ..ProptestConfig::with_cases(24)
    })]

    /// CMM ≤ DMM ≤ AMM for the UCB and the reverse for the LCB, on the same data.
    #[test]
    fn cmm_is_the_tightest(seed in 0u64..1000, t in 0usize..40, lengthscale in 0.1f64..1.0) {
        let kernel = Matern::new(2.5, lengthscale).unwrap();
        let params = BoundParams::new().sigma(0.1).norm_bound(3.0).scale(0.5);
        let mut cmm = Cmm::new(kernel, params).unwrap();
        let mut dmm = Dmm::new(kernel, params).unwrap();
        let mut amm = Amm::new(kernel, params).unwrap();
        let data = instance(&kernel, seed, t, 2, 0.1, 3.0, seed % 2 == 0);
        for (x, &y) in data.xs.iter().zip(&data.y) {
            cmm.observe(x, y).unwrap();
            dmm.observe(x, y).unwrap();
            amm.observe(x, y).unwrap();
        }
        let (c, d, a) = (
            cmm.bounds(&data.queries).unwrap(),
            dmm.bounds(&data.queries).unwrap(),
            amm.bounds(&data.queries).unwrap(),
        );
        for j in 0..data.queries.len() {
            let tol = 1e-9 * (1.0 + a.ucb[j].abs());
            prop_assert!(c.ucb[j] <= d.ucb[j] + tol, "UCB: CMM {} > DMM {}", c.ucb[j], d.ucb[j]);
            prop_assert!(d.ucb[j] <= a.ucb[j] + tol);
            prop_assert!(c.lcb[j] >= d.lcb[j] - tol, "LCB: CMM {} < DMM {}", c.lcb[j], d.lcb[j]);
            prop_assert!(d.lcb[j] >= a.lcb[j] - tol);
        }
    }
}

/// Timing for comparison (not a check): one clarabel SOCP (the paper's approach, one per arm)
/// against one CMM-UCB evaluation of 100 arms, at several t. Run with
/// `cargo test --release --test integration -- cmm:: --ignored --nocapture`.
#[test]
#[ignore]
fn socp_timing() {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    for t in [100, 200, 500, 1000] {
        let data = instance(&kernel, 7, t, 3, 0.1, 10.0, false);
        let params = BoundParams::new().sigma(0.1).norm_bound(10.0).scale(0.15);
        let mut cmm = Cmm::new(kernel, params).unwrap();
        for (x, &y) in data.xs.iter().zip(&data.y) {
            cmm.observe(x, y).unwrap();
        }
        let gram = DMatrix::from_fn(t, t, |i, j| kernel.eval(&data.xs[i], &data.xs[j]));
        let radius = radius_sq(&gram, &DVector::from_vec(data.y.clone()), 0.1, 0.15, 0.01).sqrt();
        let start = std::time::Instant::now();
        let reference = socp(
            &kernel,
            &data.xs,
            &data.y,
            &data.queries[0],
            radius,
            10.0,
            1.0,
        );
        let socp_time = start.elapsed().as_secs_f64();
        let mut rng = ChaCha8Rng::seed_from_u64(t as u64);
        let arms: Vec<[f64; 3]> = (0..100)
            .map(|_| [rng.random(), rng.random(), rng.random()])
            .collect();
        let start = std::time::Instant::now();
        let _ = cmm.bounds(&arms).unwrap();
        let cmm_time = start.elapsed().as_secs_f64();
        let ucb = cmm
            .bounds(std::slice::from_ref(&data.queries[0]))
            .unwrap()
            .ucb[0];
        eprintln!(
            "t = {t}: clarabel {:.3} s per arm; CMM (eigendecomposition + UCB and LCB of 100 arms) {:.1} ms; UCB {ucb:.9} vs {reference:.9}",
            socp_time,
            cmm_time * 1e3
        );
    }
}

/// Queried after every observation, CMM updates its eigendecomposition by bordered rank-one
/// steps; its bounds must match those of a CMM that decomposes the final K_t from scratch,
/// including after truncations and on data with repeated points. The tolerance is the issue's
/// accuracy requirement, 1e-6 relative: the two decompositions differ in rounding, and with
/// K_t numerically singular the bounds depend on eigenpairs at rounding level (through p²/λ);
/// seen here: up to 9e-8.
#[test]
fn updated_decompositions_match_fresh_ones() {
    for (kernel, seed) in [
        (Matern::new(2.5, 0.3).unwrap(), 4),
        (Matern::new(1.5, 0.8).unwrap(), 5),
    ] {
        let params = BoundParams::new().sigma(0.1).norm_bound(5.0).scale(0.3);
        let data = instance(&kernel, seed, 250, 2, 0.1, 5.0, true);
        let mut running = Cmm::new(kernel, params).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for (i, (x, &y)) in data.xs.iter().zip(&data.y).enumerate() {
            let arms: Vec<[f64; 2]> = (0..5).map(|_| [rng.random(), rng.random()]).collect();
            running.argmax_ucb(&arms.as_points().unwrap()).unwrap();
            running.observe(x, y).unwrap();
            if i == 120 {
                running.truncate(100);
                for (x, &y) in data.xs[100..=120].iter().zip(&data.y[100..=120]) {
                    running.bounds(&[[0.5, 0.5]]).unwrap();
                    running.observe(x, y).unwrap();
                }
            }
            if i % 50 == 49 {
                let mut fresh = Cmm::new(kernel, params).unwrap();
                for (x, &y) in data.xs[..=i].iter().zip(&data.y[..=i]) {
                    fresh.observe(x, y).unwrap();
                }
                let (a, b) = (
                    running.bounds(&data.queries).unwrap(),
                    fresh.bounds(&data.queries).unwrap(),
                );
                for j in 0..data.queries.len() {
                    let scale = 1.0 + b.ucb[j].abs();
                    assert!(
                        (a.ucb[j] - b.ucb[j]).abs() <= 1e-6 * scale,
                        "t = {}: {} vs {}",
                        i + 1,
                        a.ucb[j],
                        b.ucb[j]
                    );
                    assert!(
                        (a.lcb[j] - b.lcb[j]).abs() <= 1e-6 * scale,
                        "t = {}: {} vs {}",
                        i + 1,
                        a.lcb[j],
                        b.lcb[j]
                    );
                }
            }
        }
    }
}

/// Issue 15's reproduction: a mirrored pair at 0.1 and 0.9, then their midpoint a few ulps off
/// (0.5 + 1e-15), queried at 0, 0.05, …, 1 after every observation so that the third query runs
/// the bordered update. The bordered decomposition once merged two far-apart poles and kept
/// their old eigenvalues (in effect swapping them): the UCB at 0.05 came out 1.718 where the
/// optimum is 2.101, at 0.1 0.7627 against 0.7807. Checked against a from-scratch CMM (one
/// full decomposition) and against clarabel on the primal.
#[test]
fn issue_15_mirrored_pair_then_midpoint_a_few_ulps_off() {
    let kernel = Rbf::new(0.3).unwrap();
    let (sigma, b, delta, c) = (0.1, 10.0, 0.01, 1.0);
    let params = BoundParams::new()
        .sigma(sigma)
        .norm_bound(b)
        .delta(delta)
        .scale(c);
    let data = [(0.1, 0.3), (0.9, -0.2), (0.5 + 1e-15, 0.5)];
    let queries: Vec<[f64; 1]> = (0..=20).map(|i| [f64::from(i) * 0.05]).collect();
    let mut incremental = Cmm::new(kernel, params).unwrap();
    for (t, &(x, y)) in data.iter().enumerate() {
        incremental.observe(&[x], y).unwrap();
        let got = incremental.bounds(&queries).unwrap();
        let mut fresh = Cmm::new(kernel, params).unwrap();
        for &(x, y) in &data[..=t] {
            fresh.observe(&[x], y).unwrap();
        }
        let want = fresh.bounds(&queries).unwrap();
        let xs: Vec<Vec<f64>> = data[..=t].iter().map(|&(x, _)| vec![x]).collect();
        let ys: Vec<f64> = data[..=t].iter().map(|&(_, y)| y).collect();
        let gram = DMatrix::from_fn(t + 1, t + 1, |i, j| kernel.eval(&xs[i], &xs[j]));
        let radius = radius_sq(&gram, &DVector::from_vec(ys.clone()), sigma, c, delta).sqrt();
        for (j, q) in queries.iter().enumerate() {
            let scale = want.ucb[j].abs().max(want.lcb[j].abs());
            assert!(
                (got.ucb[j] - want.ucb[j]).abs() <= 1e-6 * scale
                    && (got.lcb[j] - want.lcb[j]).abs() <= 1e-6 * scale,
                "t = {}, x = {}: incremental [{}, {}], from scratch [{}, {}]",
                t + 1,
                q[0],
                got.lcb[j],
                got.ucb[j],
                want.lcb[j],
                want.ucb[j]
            );
            let upper = socp(&kernel, &xs, &ys, q, radius, b, 1.0);
            let lower = socp(&kernel, &xs, &ys, q, radius, b, -1.0);
            assert!(
                got.ucb[j] >= upper - 1e-8 * scale && got.lcb[j] <= lower + 1e-8 * scale,
                "t = {}, x = {}: CMM [{}, {}] inside the optimum [{lower}, {upper}]",
                t + 1,
                q[0],
                got.lcb[j],
                got.ucb[j]
            );
            assert!(
                (got.ucb[j] - upper).abs() <= 1e-6 * scale
                    && (got.lcb[j] - lower).abs() <= 1e-6 * scale,
                "t = {}, x = {}: CMM [{}, {}] against the optimum [{lower}, {upper}]",
                t + 1,
                q[0],
                got.lcb[j],
                got.ucb[j]
            );
        }
    }
    assert_eq!(incremental.health().failed_checks, 0);
    assert_eq!(incremental.health().bordered_updates, 2);
}

/// The lazy `argmax_ucb` (minimising over a only for points whose upper bound from DMM's grid
/// can still beat the best UCB found) returns exactly the argmax of `evaluate`'s UCBs, the
/// lowest index among ties, after every observation of a trajectory: on arm sets with exact
/// duplicates (ties to the last bit), observed points (the a → 0 limit), mirrored pairs and
/// points a few ulps apart, across a truncation and on data whose σ and B make R̃_a² negative
/// for some a.
#[test]
fn lazy_argmax_is_the_argmax_of_evaluate() {
    for (kernel, params, seed) in [
        (
            Matern::new(2.5, 0.3).unwrap(),
            BoundParams::new().sigma(0.1).norm_bound(5.0).scale(0.3),
            7,
        ),
        (
            Matern::new(1.5, 0.15).unwrap(),
            BoundParams::new().sigma(0.01).norm_bound(0.5).scale(1.0),
            8,
        ),
    ] {
        let data = instance(&kernel, seed, 160, 2, 0.1, 5.0, true);
        let mut cmm = Cmm::new(kernel, params).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut evaluated = 0;
        for (i, (x, &y)) in data.xs.iter().zip(&data.y).enumerate() {
            let mut arms: Vec<[f64; 2]> = (0..12).map(|_| [rng.random(), rng.random()]).collect();
            let mirrored: Vec<[f64; 2]> = arms.iter().map(|a| [1.0 - a[0], 1.0 - a[1]]).collect();
            arms.extend(mirrored);
            if i > 0 {
                let seen = &data.xs[rng.random_range(0..i)];
                let seen = [seen[0], seen[1]];
                arms.push(seen);
                arms.push([f64::from_bits(seen[0].to_bits() + 2), seen[1]]);
                arms.push(seen);
            }
            arms.push(arms[3]);
            let points = arms.as_points().unwrap();
            let ucb = cmm.evaluate(&points).unwrap().ucb;
            let best = ucb.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let expected = ucb.iter().position(|&u| u == best).unwrap();
            assert_eq!(
                cmm.argmax_ucb(&points).unwrap(),
                expected,
                "t = {i}: UCBs {ucb:?}"
            );
            evaluated += 1;
            cmm.observe(x, y).unwrap();
            if i == 100 {
                cmm.truncate(80);
            }
        }
        assert!(evaluated > 150);
    }
}

/// Where a sequence is queried near its observations.
struct NearData {
    kernel: crate::common::dd::DdKernel,
    xs: Vec<Vec<f64>>,
    y: Vec<f64>,
    /// σ, B, δ, c.
    params: (f64, f64, f64, f64),
    /// Observations (indices into `xs`) to query around once observed, besides the latest.
    around: Vec<usize>,
    /// (below, above, step) of the reference's scan over ln a around ln a0.
    scan: (f64, f64, f64),
}

/// The worst margins found: min over queries of (UCB − exact)/scale and (exact LCB − LCB)/scale,
/// each for points off the data and bitwise on it.
#[derive(Debug, Default)]
struct Margins {
    queries: usize,
    off_upper: f64,
    off_lower: f64,
    on_upper: f64,
    on_lower: f64,
    /// The largest (UCB − exact)/scale or (exact LCB − LCB)/scale: the price of the allowance.
    excess: f64,
}

/// Observes `case.xs` one by one with CMM-UCB built from `kernel` and, after EVERY observation
/// (so that every bordered update, and the full decomposition every 100 updates, is queried),
/// compares the bounds at the latest observation and at `case.around`, bitwise and at
/// x₀ + h·v for h = 10⁻¹², …, 10⁻⁶ and v = (1, −1), (1, 1), (1, 0) (d = 2) or ±1 (d = 1),
/// with the extended-precision dual (`common::dd`): the UCB never below min over a of U_a,
/// the LCB never above max over a of L_a, beyond the reference's own error bound plus
/// 10⁻¹² relative (the rounding of μ_0 and of the a → 0 limit at points on the data), and
/// the certificate's a positive at every point not on the data. The bounds' excess over the
/// exact dual, the price of the rounding allowance, is returned for the caller to bound.
fn check_near_data(kernel: impl Kernel + Clone, case: &NearData, every: usize) -> Margins {
    use crate::common::dd::DualReference;
    let (sigma, b, delta, c) = case.params;
    let params = BoundParams::new()
        .sigma(sigma)
        .norm_bound(b)
        .delta(delta)
        .scale(c);
    let mut cmm = Cmm::new(kernel, params).unwrap();
    let dim = case.xs[0].len();
    let directions: Vec<Vec<f64>> = if dim == 2 {
        vec![vec![1.0, -1.0], vec![1.0, 1.0], vec![1.0, 0.0]]
    } else {
        vec![vec![1.0], vec![-1.0]]
    };
    let mut margins = Margins {
        off_upper: f64::INFINITY,
        off_lower: f64::INFINITY,
        on_upper: f64::INFINITY,
        on_lower: f64::INFINITY,
        ..Margins::default()
    };
    for t in 1..=case.xs.len() {
        cmm.observe(&case.xs[t - 1], case.y[t - 1]).unwrap();
        if t % every != 0 && t != case.xs.len() {
            continue;
        }
        let reference = DualReference::new(case.kernel, &case.xs[..t], &case.y[..t], case.params);
        let mut centres: Vec<usize> = case.around.iter().copied().filter(|&i| i < t).collect();
        centres.push(t - 1);
        for &i in &centres {
            let x0 = &case.xs[i];
            let mut queries = vec![(x0.clone(), true)];
            for v in &directions {
                for e in -12..=-6 {
                    let h = 10f64.powi(e);
                    let x: Vec<f64> = x0.iter().zip(v).map(|(x, v)| x + h * v).collect();
                    let on = case.xs[..t].contains(&x);
                    queries.push((x, on));
                }
            }
            for (x, on) in queries {
                let got = cmm.bounds(std::slice::from_ref(&x)).unwrap();
                let (upper, lower) = reference.bounds(&x, case.scan);
                let scale = upper.value.abs().max(lower.value.abs());
                let context = || {
                    format!(
                        "t = {t}, x = {x:?} (observation {i} {x0:?}): UCB {} vs exact {} \
                         (a = {:e}), LCB {} vs exact {} (a = {:e})",
                        got.ucb[0], upper.value, upper.a, got.lcb[0], lower.value, lower.a
                    )
                };
                let up = (got.ucb[0] - upper.value) / scale;
                let down = (lower.value - got.lcb[0]) / scale;
                assert!(
                    got.ucb[0] >= upper.value - upper.error - 1e-12 * scale,
                    "UCB below the exact dual by {:.2e} relative: {}",
                    -up,
                    context()
                );
                assert!(
                    got.lcb[0] <= lower.value + lower.error + 1e-12 * scale,
                    "LCB above the exact dual by {:.2e} relative: {}",
                    -down,
                    context()
                );
                if on {
                    margins.on_upper = margins.on_upper.min(up);
                    margins.on_lower = margins.on_lower.min(down);
                } else {
                    let a = cmm.certificate(&x).unwrap().regulariser;
                    assert!(a > 0.0, "a = {a} at a point not on the data: {}", context());
                    margins.off_upper = margins.off_upper.min(up);
                    margins.off_lower = margins.off_lower.min(down);
                }
                margins.excess = margins.excess.max(up).max(down);
                margins.queries += 1;
            }
        }
    }
    margins
}

/// `t` points in [0, 1]^d from a fixed seed, with observation 2 repeated at t − 3 (two
/// copies) and observation 5 at t − 2 and t − 1 (three copies); y = a smooth function plus
/// N(0, σ²) noise.
fn near_data_case(seed: u64, t: usize, dim: usize, sigma: f64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut xs: Vec<Vec<f64>> = (0..t - 3)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect();
    xs.push(xs[2].clone());
    xs.push(xs[5].clone());
    xs.push(xs[5].clone());
    let y = xs
        .iter()
        .map(|x| {
            (6.0 * x[0]).sin()
                + (4.0 * x[dim - 1]).cos()
                + sigma * rng.sample::<f64, _>(StandardNormal)
        })
        .collect();
    (xs, y)
}

/// Issue 36, finding 1: next to (not on) an observation, ρ_0² is within rounding of 0; it
/// was formed without a rounding allowance and the a → 0 limit taken whenever it rounded to
/// 0, so the UCB came out up to 4.8·10⁻⁷ relative below the exact dual (and the certificate
/// reported a = 0 off the data). RBF ℓ = 0.15, σ = 0.1, B = 20, 15 points in [0, 1]² (two of
/// them duplicates), queried after every observation.
#[test]
fn near_observations_the_bounds_contain_the_extended_precision_dual_rbf() {
    let sigma = 0.1;
    let (xs, y) = near_data_case(36, 15, 2, sigma);
    let case = NearData {
        kernel: crate::common::dd::DdKernel::Rbf(0.15),
        xs,
        y,
        params: (sigma, 20.0, 0.01, 1.0),
        around: vec![0, 2, 5],
        scan: (
            16.0 * std::f64::consts::LN_10,
            12.0 * std::f64::consts::LN_10,
            0.2,
        ),
    };
    let margins = check_near_data(Rbf::new(0.15).unwrap(), &case, 1);
    eprintln!("{margins:?}");
    // The documented price of the allowance: up to about 4·10⁻⁵ relative next to the data.
    assert!(margins.excess <= 1e-4, "{margins:?}");
}

/// As above for Matérn 5/2 (ℓ = 0.3, c = 2, d = 1, 12 points, one observed three times).
#[test]
fn near_observations_the_bounds_contain_the_extended_precision_dual_matern() {
    let sigma = 0.1;
    let (xs, y) = near_data_case(7, 12, 1, sigma);
    let case = NearData {
        kernel: crate::common::dd::DdKernel::Matern52(0.3),
        xs,
        y,
        params: (sigma, 5.0, 0.01, 2.0),
        around: vec![0, 2, 5],
        scan: (
            16.0 * std::f64::consts::LN_10,
            12.0 * std::f64::consts::LN_10,
            0.2,
        ),
    };
    let margins = check_near_data(Matern::new(2.5, 0.3).unwrap(), &case, 1);
    eprintln!("{margins:?}");
    assert!(margins.excess <= 1e-4, "{margins:?}");
}

/// The same across t = 100 (the full decomposition every 100 bordered updates): 105 points,
/// queried after every observation around the latest one (and so around both copies of the
/// duplicated inputs at the end). Slow in debug (the reference's O(t³) Cholesky per trial
/// a in double-double): run with
/// `cargo test --release --all-features --test cmm -- --ignored near_observations_across`.
#[test]
#[ignore = "slow: the reference is O(t³) per trial a in double-double; not yet run to completion (over 18 min in release)"]
fn near_observations_across_the_refresh() {
    let sigma = 0.1;
    let (xs, y) = near_data_case(11, 105, 2, sigma);
    let case = NearData {
        kernel: crate::common::dd::DdKernel::Rbf(0.15),
        xs,
        y,
        params: (sigma, 20.0, 0.01, 1.0),
        around: vec![],
        scan: (
            16.0 * std::f64::consts::LN_10,
            12.0 * std::f64::consts::LN_10,
            0.5,
        ),
    };
    let margins = check_near_data(Rbf::new(0.15).unwrap(), &case, 1);
    eprintln!("{margins:?}");
    // The documented price of the allowance: up to about 4·10⁻⁵ relative next to the data.
    assert!(margins.excess <= 1e-4, "{margins:?}");
}

/// At an input equal bitwise to an observation, with eigenvalues dropped as rounding-level
/// (the null space N), the functions of the confidence set still move along N: their values
/// there are √λᵢcᵢuⱼᵢ with λᵢ ≤ θ, which the bound on the range alone does not see. A witness
/// built in closed form, independent of the crate: RBF (ℓ = 1) observed at 0.5 − h, 0.5, 0.5 + h
/// (mirrored, h = 9.3·10⁻⁸, so that the antisymmetric eigenvalue 1 − e^{−2h²} ≈ 1.7·10⁻¹⁴ lies
/// just below θ₀ = tελ_max ≈ 2·10⁻¹⁴) and at 27 far points, all with y = 0, σ = 10⁻⁶, B = 1.
/// f = α k(·, 0.5) + β ∂k(·, 0.5), with ‖f‖²_H = α² + β² and f(x) = k(x, 0.5)(α + β(x − 0.5)),
/// is in the set when Σ f(x_i)² ≤ R_t² (R_t from a dense Cholesky) and α² + β² ≤ 1; its value at
/// 0.5 + h is about R_t/√3 + h, which exceeds a range-only bound R_t/√3 + √(θ/3) there.
#[test]
fn cmm_covers_the_null_space_at_an_observed_input() {
    let h = 9.3e-8;
    let centre = 0.5;
    let mut xs: Vec<f64> = vec![centre - h, centre, centre + h];
    xs.extend((0..27).map(|i| 20.0 + 20.0 * f64::from(i)));
    let (sigma, b, delta, c) = (1e-6, 1.0, 0.05, 1.0);
    let kernel = Rbf::new(1.0).unwrap();
    let params = BoundParams::new()
        .sigma(sigma)
        .norm_bound(b)
        .delta(delta)
        .scale(c);
    let mut bound = Cmm::new(kernel, params).unwrap();
    for &x in &xs {
        bound.observe(&[x], 0.0).unwrap();
    }
    let t = xs.len();
    // The case only tests something if the antisymmetric direction (eigenvalue ≈ 2h²) is
    // dropped (at or below θ₀ = tελ_max) and the witness's gain h exceeds the range-only
    // slack √(θ₀/3): 2θ₀/3 < 2h² ≤ θ₀.
    let (values, _) = bound.eigendecomposition().unwrap();
    let largest = values.iter().copied().fold(0.0, f64::max);
    let theta0 = t as f64 * f64::EPSILON * largest;
    let antisymmetric: Vec<f64> = values
        .iter()
        .copied()
        .filter(|&l| (l - 2.0 * h * h).abs() < 0.2 * 2.0 * h * h)
        .collect();
    assert!(
        antisymmetric.len() == 1
            && antisymmetric[0] <= theta0
            && antisymmetric[0] > 2.0 * theta0 / 3.0,
        "the antisymmetric eigenvalue {antisymmetric:?} is not in (2θ₀/3, θ₀], θ₀ = {theta0:e}"
    );
    let gram = DMatrix::from_fn(t, t, |i, j| kernel.eval(&[xs[i]], &[xs[j]]));
    let y = DVector::zeros(t);
    let radius = radius_sq(&gram, &y, sigma, c, delta).sqrt();
    let value = |alpha: f64, beta: f64, x: f64| {
        let u = x - centre;
        (-0.5 * u * u).exp() * (alpha + beta * u)
    };
    // α from the data constraint 3α² + 2β²h² ≈ R², shrunk so that it holds with room.
    let beta = 1.0 - 1e-9;
    let alpha = ((radius * radius - 2.0 * h * h) / 3.0).sqrt() * (1.0 - 1e-6);
    assert!(alpha * alpha + beta * beta <= b * b);
    for sign in [1.0, -1.0] {
        let residual: f64 = xs
            .iter()
            .map(|&x| value(sign * alpha, sign * beta, x).powi(2))
            .sum();
        assert!(
            residual <= radius * radius,
            "the witness is outside the set"
        );
        let witness = value(sign * alpha, sign * beta, centre + h);
        let bounds = bound.bounds(&[vec![centre + h]]).unwrap();
        let (lcb, ucb) = (bounds.lcb[0], bounds.ucb[0]);
        if sign > 0.0 {
            assert!(
                witness <= ucb,
                "a function of the set reaches {witness:e} at an observed input, above the UCB \
                 {ucb:e} (R_t/√3 = {:e})",
                radius / 3f64.sqrt()
            );
        } else {
            assert!(
                witness >= lcb,
                "a function of the set reaches {witness:e} at an observed input, below the LCB \
                 {lcb:e}"
            );
        }
    }
}
