//! The continuous §7 problem of Flynn & Reeb (2024) (`env::ContinuousProblem`): the optimum it
//! finds is checked against 10⁵ independent uniform points and against first-order optimality
//! by central finite differences of f (not the kernel gradient the search used); f and ∇f
//! against the finite-arm problem and finite differences; determinism; bad input.

#![allow(clippy::needless_range_loop)] // coordinates indexed alongside their gradients

use kernel_bandits::continuous::RefineOptions;
use kernel_bandits::env::{ContinuousProblem, OptimumSearch, SyntheticConfig, SyntheticProblem};
use kernel_bandits::kernel::{Kernel, Matern, Rbf};
use kernel_bandits::{Error, Result};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn problem(dim: usize, lengthscale: f64, seed: u64) -> ContinuousProblem<Rbf> {
    problem_with(dim, 20, lengthscale, seed)
}

fn problem_with(dim: usize, centres: usize, lengthscale: f64, seed: u64) -> ContinuousProblem<Rbf> {
    let config = SyntheticConfig {
        dim,
        centres,
        ..SyntheticConfig::default()
    };
    ContinuousProblem::new(Rbf::new(lengthscale).unwrap(), config, seed).unwrap()
}

/// ∂f/∂xᵢ by central differences of `value` (step h, shrunk at the boundary to stay inside).
fn finite_difference(p: &ContinuousProblem<Rbf>, x: &[f64], h: f64) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] = (x[i] + h).min(1.0);
            down[i] = (x[i] - h).max(0.0);
            (p.value(&up).unwrap() - p.value(&down).unwrap()) / (up[i] - down[i])
        })
        .collect()
}

#[test]
fn the_optimum_beats_a_hundred_thousand_random_points_and_is_stationary() {
    let mut on_boundary = 0;
    // The paper's 20 centres, and 200 narrow ones (many local maxima).
    for (dim, centres, lengthscale, seed) in [
        (1, 20, 0.1, 1),
        (1, 200, 0.01, 6),
        (2, 20, 0.2, 2),
        (2, 20, 0.15, 3),
        (2, 200, 0.03, 7),
        (3, 20, 0.3, 4),
        (3, 200, 0.1, 8),
        (4, 20, 0.4, 5),
    ] {
        let p = problem_with(dim, centres, lengthscale, seed);
        let best = p.optimum();
        assert!(p.domain().contains(&best.point));
        assert_eq!(best.value, p.value(&best.point).unwrap());
        // Independent check: uniform points from an unrelated generator.
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
        let mut x = vec![0.0; dim];
        let mut sampled_max = f64::NEG_INFINITY;
        for _ in 0..100_000 {
            for v in x.iter_mut() {
                *v = rng.random::<f64>();
            }
            sampled_max = sampled_max.max(p.value(&x).unwrap());
        }
        assert!(
            best.value >= sampled_max,
            "d = {dim}, seed {seed}: optimum {} < random {sampled_max}",
            best.value
        );
        // First-order optimality, by finite differences of f (scale: B = 10, ℓ ≥ 0.1, so
        // |∇f| is O(100) away from stationary points).
        let g = finite_difference(&p, &best.point, 1e-6);
        for i in 0..dim {
            let x = best.point[i];
            if x == 0.0 {
                assert!(
                    g[i] <= 1e-5,
                    "d = {dim}, seed {seed}: ∂{i}f = {} at 0",
                    g[i]
                );
                on_boundary += 1;
            } else if x == 1.0 {
                assert!(
                    g[i] >= -1e-5,
                    "d = {dim}, seed {seed}: ∂{i}f = {} at 1",
                    g[i]
                );
                on_boundary += 1;
            } else {
                assert!(
                    g[i].abs() < 1e-5,
                    "d = {dim}, seed {seed}: ∂{i}f = {}",
                    g[i]
                );
            }
        }
        for _ in 0..1000 {
            for v in x.iter_mut() {
                *v = rng.random::<f64>();
            }
            assert!(p.regret(&x).unwrap() >= 0.0);
        }
    }
    // Both cases occur among these problems (so both branches above were exercised).
    assert!(on_boundary > 0);
}

#[test]
fn same_seed_same_function_as_the_finite_arm_problem() {
    let config = SyntheticConfig {
        dim: 3,
        ..SyntheticConfig::default()
    };
    let kernel = Rbf::new(0.3).unwrap();
    let continuous = ContinuousProblem::new(kernel, config, 9).unwrap();
    let finite = SyntheticProblem::new(kernel, config, 9).unwrap();
    for t in 0..5 {
        let round = finite.round(t);
        for (i, &v) in round.values.iter().enumerate() {
            assert_eq!(continuous.value(round.arm(i)).unwrap(), v);
        }
        // The continuous optimum is at least every round's best arm.
        assert!(continuous.max_value() >= round.best_value());
    }
    assert_eq!(continuous.synthetic().rkhs_norm(), finite.rkhs_norm());
}

#[test]
fn gradient_matches_finite_differences() {
    let p = problem(3, 0.25, 7);
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    for _ in 0..200 {
        let x: Vec<f64> = (0..3).map(|_| 0.01 + 0.98 * rng.random::<f64>()).collect();
        let (v, g) = p.value_gradient(&x).unwrap();
        assert_eq!(v, p.value(&x).unwrap());
        let fd = finite_difference(&p, &x, 1e-5);
        for i in 0..3 {
            // Central differences: error O(h² f‴) ≈ 1e-10 · 10 / ℓ³.
            assert!(
                (g[i] - fd[i]).abs() < 1e-6 * (1.0 + g[i].abs()),
                "{g:?} vs {fd:?}"
            );
        }
    }
}

#[test]
fn construction_and_noise_are_deterministic() {
    let (a, b) = (problem(2, 0.2, 11), problem(2, 0.2, 11));
    assert_eq!(a.optimum(), b.optimum());
    assert_eq!(a.max_value().to_bits(), b.max_value().to_bits());
    let noise: Vec<f64> = (0..50).map(|t| a.noise(t)).collect();
    assert_eq!(noise, (0..50).map(|t| b.noise(t)).collect::<Vec<_>>());
    // Noise differs between rounds, and its scale is σ = 0.1.
    let mean = noise.iter().sum::<f64>() / 50.0;
    let sd = (noise.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / 49.0).sqrt();
    assert!((0.05..0.2).contains(&sd), "{sd}");
    let x = [0.25, 0.5];
    assert_eq!(a.observe(&x, 3).unwrap(), a.value(&x).unwrap() + a.noise(3));
    // A different seed, a different function.
    assert_ne!(problem(2, 0.2, 12).max_value(), a.max_value());
}

#[test]
fn more_search_never_finds_less() {
    // The default search against a denser one: the same optimum (to the refinement tolerance).
    let config = SyntheticConfig {
        dim: 2,
        ..SyntheticConfig::default()
    };
    let kernel = Rbf::new(0.15).unwrap();
    let synthetic = SyntheticProblem::new(kernel, config, 3).unwrap();
    let default =
        ContinuousProblem::from_synthetic(synthetic.clone(), &OptimumSearch::default()).unwrap();
    let dense = OptimumSearch {
        samples: 1 << 16,
        refine: 64,
        options: RefineOptions::default(),
    };
    let dense = ContinuousProblem::from_synthetic(synthetic, &dense).unwrap();
    assert!((default.max_value() - dense.max_value()).abs() < 1e-10);
}

/// A kernel without a gradient (the provided method).
#[derive(Debug, Clone, Copy)]
struct NoGradient;

impl Kernel for NoGradient {
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        (-x.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum::<f64>()).exp()
    }
}

#[test]
fn bad_input_is_refused() {
    let p = problem(2, 0.2, 1);
    assert_eq!(
        p.value(&[0.5]),
        Err(Error::DimensionMismatch {
            expected: 2,
            got: 1
        })
    );
    assert!(matches!(
        p.value(&[0.5, f64::NAN]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        p.value_gradient(&[f64::INFINITY, 0.5]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        p.regret(&[0.5, 1.0 + 1e-12]),
        Err(Error::InvalidParameter { name: "x", .. })
    ));
    assert!(matches!(
        p.observe(&[-1e-300, 0.5], 0),
        Err(Error::InvalidParameter { name: "x", .. })
    ));
    // The bounds themselves are points of the domain.
    assert!(p.value(&[0.0, 1.0]).is_ok());

    let config = SyntheticConfig::default();
    let synthetic = SyntheticProblem::new(Rbf::new(0.2).unwrap(), config, 1).unwrap();
    let invalid = |search: OptimumSearch, name: &str| {
        let r = ContinuousProblem::from_synthetic(synthetic.clone(), &search).map(|_| ());
        assert!(
            matches!(&r, Err(Error::InvalidParameter { name: n, .. }) if *n == name),
            "{r:?}"
        );
    };
    let ok = OptimumSearch::default();
    invalid(OptimumSearch { samples: 0, ..ok }, "samples");
    invalid(
        OptimumSearch {
            samples: (1 << 24) + 1,
            ..ok
        },
        "samples",
    );
    invalid(OptimumSearch { refine: 0, ..ok }, "refine");
    let options = RefineOptions {
        tolerance: f64::NAN,
        ..RefineOptions::default()
    };
    invalid(OptimumSearch { options, ..ok }, "tolerance");
    let r: Result<_> = ContinuousProblem::new(NoGradient, config, 1);
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    // A kernel with a gradient other than the RBF works the same way, when it has one.
    if let Ok(m) = Matern::new(2.5, 0.3) {
        match ContinuousProblem::new(m, config, 1) {
            Ok(p) => assert!(p.domain().contains(&p.optimum().point)),
            Err(e) => assert!(matches!(e, Error::Unsupported { .. }), "{e:?}"),
        }
    }
}
