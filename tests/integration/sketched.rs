//! The Nyström-sketched posterior, BKB and EK-UCB against independent references: the exact
//! GP posterior, Zenati et al. 2022 Prop. 4.2 recomputed from scratch with dense inverses, and Calandriello et al. 2019
//! Theorem 1's accuracy guarantee.

use kernel_bandits::posterior::SketchedPosterior;
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn uniform_points(rng: &mut ChaCha8Rng, n: usize, d: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
        .collect()
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

/// With every observed point in the dictionary, the sketch is the exact posterior:
/// μ̃ = μ_λ and σ̃² = ρ_λ²/λ, whether the dictionary was built in one go or anchor by anchor.
#[test]
fn full_dictionary_is_the_exact_posterior() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let kernel = Matern::new(2.5, 0.4).unwrap();
    let lambda = 0.05;
    let train = uniform_points(&mut rng, 40, 3);
    let test = uniform_points(&mut rng, 30, 3);
    let mut exact = ExactPosterior::new(kernel, &[lambda]).unwrap();
    let mut batch_built = SketchedPosterior::new(kernel, lambda).unwrap();
    let mut grown = SketchedPosterior::new(kernel, lambda).unwrap();
    for x in &train {
        let y = (3.0 * x[0]).sin() + x[1] * x[2] + 0.1 * rng.random::<f64>();
        exact.observe(x, y).unwrap();
        batch_built.observe(x, y).unwrap();
        let i = grown.observe(x, y).unwrap();
        assert!(grown.add_anchor(i).unwrap(), "point {i} is independent");
    }
    let all: Vec<usize> = (0..train.len()).collect();
    batch_built.set_dictionary(&all).unwrap();
    assert_eq!(batch_built.dictionary_size(), train.len());
    let queries: Vec<Vec<f64>> = train.iter().chain(&test).cloned().collect();
    let reference = exact.evaluate(&queries.as_points().unwrap()).unwrap();
    for sketch in [&batch_built, &grown] {
        let got = sketch.evaluate(&queries.as_points().unwrap()).unwrap();
        for j in 0..queries.len() {
            let mean = reference.mean(0)[j];
            let variance = reference.variance(0)[j] / lambda;
            assert!(
                (got.mean[j] - mean).abs() <= 1e-8 * mean.abs().max(1.0),
                "mean at {j}: {} vs {mean}",
                got.mean[j]
            );
            assert!(
                relative(got.variance[j], variance) <= 1e-8,
                "variance at {j}: {} vs {variance}",
                got.variance[j]
            );
        }
    }
}

/// EK-UCB with a budget so large that every observation becomes an anchor gives the same
/// bounds as exact K-UCB with the same λ and β.
#[test]
fn ek_ucb_with_every_anchor_matches_exact_k_ucb() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let kernel = Rbf::new(0.3).unwrap();
    let params = SketchParams::new().lambda(0.5).beta(2.0).gamma(1e12);
    let mut ek = EkUcb::new(kernel, params, 1).unwrap();
    let mut k_ucb = KUcb::new(kernel, 0.5, 2.0).unwrap();
    for x in uniform_points(&mut rng, 25, 2) {
        let y = x[0] - x[1];
        ek.observe(&x, y).unwrap();
        k_ucb.observe(&x, y).unwrap();
    }
    assert_eq!(ek.dictionary_size(), 25);
    let test = uniform_points(&mut rng, 20, 2);
    let (a, b) = (ek.bounds(&test).unwrap(), k_ucb.bounds(&test).unwrap());
    for j in 0..test.len() {
        assert!((a.ucb[j] - b.ucb[j]).abs() < 1e-9, "{j}");
        assert!((a.lcb[j] - b.lcb[j]).abs() < 1e-9, "{j}");
    }
}

fn frobenius(m: &DMatrix<f64>) -> f64 {
    m.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Zenati et al. 2022 Prop. 4.2 from scratch: Λ = (K_ZS K_SZ + λK_ZZ)⁻¹ by LU inversion, Γ = K_ZS Y and
/// K_ZZ⁻¹, from the raw observations and the anchors alone.
fn prop_4_2(
    kernel: &impl Kernel,
    anchors: &[Vec<f64>],
    observations: &[(Vec<f64>, f64)],
    lambda: f64,
) -> (DMatrix<f64>, DVector<f64>, DMatrix<f64>) {
    let m = anchors.len();
    let kzz = DMatrix::from_fn(m, m, |i, j| kernel.eval(&anchors[i], &anchors[j]));
    let kzs = DMatrix::from_fn(m, observations.len(), |i, s| {
        kernel.eval(&anchors[i], &observations[s].0)
    });
    let y = DVector::from_iterator(observations.len(), observations.iter().map(|o| o.1));
    let lambda_inv = (&kzs * kzs.transpose() + lambda * &kzz)
        .try_inverse()
        .unwrap();
    (lambda_inv, &kzs * y, kzz.try_inverse().unwrap())
}

/// After 1000 incremental updates (rank-one and anchor growth), EK-UCB's state equals Prop. 4.2
/// recomputed from scratch, and so do its mean and variance.
#[test]
fn ek_ucb_incremental_state_matches_prop_4_2() {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    // the Zenati et al. (2022) practical setting on a 2-D problem: ℓ = 0.1, λ = μ = 10, γ = 0.1λ.
    let kernel = Rbf::new(0.1).unwrap();
    let lambda = 10.0;
    let params = SketchParams::new().lambda(lambda).beta(0.1).gamma(1.0);
    let mut ek = EkUcb::new(kernel, params, 9).unwrap();
    let mut observations = Vec::new();
    for _ in 0..1000 {
        let x: Vec<f64> = (0..2).map(|_| rng.random::<f64>()).collect();
        let y = (4.0 * x[0]).cos() * x[1] + 0.1 * (rng.random::<f64>() - 0.5);
        ek.observe(&x, y).unwrap();
        observations.push((x, y));
    }
    let steps = ek.anchor_steps();
    assert!(steps.len() >= 10, "{} anchors", steps.len());
    assert!(
        steps.iter().any(|&s| s > 500),
        "anchors keep joining late: {steps:?}"
    );
    let post = ek.posterior();
    let anchors: Vec<Vec<f64>> = (0..post.dictionary_size())
        .map(|j| post.anchor(j).to_vec())
        .collect();
    for (j, &s) in steps.iter().enumerate() {
        assert_eq!(
            anchors[j], observations[s].0,
            "anchor {j} is observation {s}"
        );
    }
    let (lambda_inv, gamma, kzz_inv) = prop_4_2(&kernel, &anchors, &observations, lambda);
    let state = post.nystrom_state();
    let close = |a: &DMatrix<f64>, b: &DMatrix<f64>| frobenius(&(a - b)) / frobenius(b);
    eprintln!(
        "m = {}, relative errors: Λ {:.1e}, K_ZZ⁻¹ {:.1e}, cond(K_ZZ) {:.1e}",
        anchors.len(),
        close(&state.lambda_inv, &lambda_inv),
        close(&state.kzz_inv, &kzz_inv),
        {
            let kzz = DMatrix::from_fn(anchors.len(), anchors.len(), |i, j| {
                kernel.eval(&anchors[i], &anchors[j])
            });
            kzz.singular_values().max() / kzz.singular_values().min()
        }
    );
    assert!(close(&state.lambda_inv, &lambda_inv) < 1e-8, "Λ");
    assert!(close(&state.kzz_inv, &kzz_inv) < 1e-8, "K_ZZ⁻¹");
    assert!((&state.gamma - &gamma).norm() / gamma.norm() < 1e-8, "Γ");
    // Mean and variance as Prop. 4.2 writes them.
    let test = uniform_points(&mut rng, 50, 2);
    let got = post.evaluate(&test.as_points().unwrap()).unwrap();
    for (j, x) in test.iter().enumerate() {
        let kz = DVector::from_iterator(anchors.len(), anchors.iter().map(|a| kernel.eval(a, x)));
        let mean = (kz.transpose() * &lambda_inv * &gamma)[0];
        let delta = (kz.transpose() * (&lambda_inv - &kzz_inv / lambda) * &kz)[0];
        let variance = kernel.eval(x, x) / lambda + delta;
        assert!(
            (got.mean[j] - mean).abs() < 1e-8 * mean.abs().max(1.0),
            "mean {j}"
        );
        assert!(relative(got.variance[j], variance) < 1e-6, "variance {j}");
    }
}

/// Calandriello et al. 2019 Theorem 1: with its q̄, σ²/α ≤ σ̃² ≤ ασ² on the played arms, checked every 25
/// steps of a seeded BKB run (σ² = ρ_λ²/λ from the exact posterior on the same data). The run
/// is long enough (T = 1500 on 100 arms) that q̄σ̃² < 1 for well-explored arms, so the
/// dictionary is a strict subset of the played arms.
#[test]
fn bkb_variances_are_alpha_accurate() {
    let kernel = Rbf::new(0.5).unwrap();
    let horizon = 1500;
    let lambda = 1.0;
    let params = SketchParams::new()
        .lambda(lambda)
        .beta(0.5)
        .epsilon(0.5)
        .delta(0.1)
        .horizon(horizon);
    let bkb = Bkb::new(kernel, params, 17).unwrap();
    let alpha = 3.0;
    let qbar = 6.0 * alpha * (4.0 * horizon as f64 / 0.1).ln() / 0.25;
    assert!((bkb.qbar() - qbar).abs() < 1e-9);
    let mut exact = ExactPosterior::new(kernel, &[lambda]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let arms: Vec<[f64; 1]> = (0..100).map(|i| [i as f64 / 99.0]).collect();
    let mut agent = UcbAgent::new(bkb);
    let (mut smallest, mut largest, mut strict_subsets) = (f64::INFINITY, 0.0f64, 0);
    for t in 0..horizon {
        let i = agent.select(&arms).unwrap();
        let y = (5.0 * arms[i][0]).sin() + 0.1 * (rng.random::<f64>() - 0.5);
        agent.update(&arms[i], y).unwrap();
        exact.observe(&arms[i], y).unwrap();
        if t % 25 == 24 {
            let post = agent.bound().posterior();
            let played: Vec<Vec<f64>> = (0..post.distinct())
                .map(|j| post.point(j).to_vec())
                .collect();
            let sketch = post.evaluate(&played.as_points().unwrap()).unwrap();
            let truth = exact.evaluate(&played.as_points().unwrap()).unwrap();
            for j in 0..played.len() {
                let sigma2 = truth.variance(0)[j] / lambda;
                let ratio = sketch.variance[j] / sigma2;
                smallest = smallest.min(ratio);
                largest = largest.max(ratio);
                assert!(
                    (1.0 / alpha..=alpha).contains(&ratio),
                    "t = {t}, arm {j}: σ̃² = {}, σ² = {sigma2}",
                    sketch.variance[j]
                );
            }
            strict_subsets += usize::from(post.dictionary_size() < post.distinct());
        }
    }
    let post = agent.bound().posterior();
    eprintln!(
        "σ̃²/σ² in [{smallest:.4}, {largest:.4}]; final m = {} of {} distinct arms; \
         strict subset at {strict_subsets} of 60 checks",
        post.dictionary_size(),
        post.distinct()
    );
    assert!(
        strict_subsets > 0,
        "the test must exercise a partial dictionary"
    );
}

/// The dictionary grows like the effective dimension, not like t: 1-D RBF, T = 5000.
#[test]
fn dictionary_size_stays_small() {
    let kernel = Rbf::new(0.2).unwrap();
    let config = SyntheticConfig {
        dim: 1,
        arms: 50,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, 4).unwrap();
    let params = SketchParams::new()
        .lambda(0.01)
        .mu(1.0)
        .beta(1.0)
        .horizon(5000);
    let mut agent = UcbAgent::new(EkUcb::new(kernel, params, 8).unwrap());
    let trace = problem.run(&mut agent, 5000).unwrap();
    let m = agent.bound().dictionary_size();
    assert!(m < 100, "m = {m}");
    assert!(m >= 3, "m = {m}");
    let late: f64 = trace.regret[4000..].iter().sum::<f64>() / 1000.0;
    let early: f64 = trace.regret[..1000].iter().sum::<f64>() / 1000.0;
    assert!(late < early, "regret per round {early} → {late}");
    eprintln!("EK-UCB 1-D RBF T = 5000: m = {m}, regret/round {early:.3} → {late:.3}");
}

/// BKB's resampled dictionary also stays small on the same 1-D problem (fresh arms every
/// round, so every played arm is distinct and the resampling pool grows to 5000).
#[test]
fn bkb_dictionary_size_stays_small() {
    let kernel = Rbf::new(0.2).unwrap();
    let config = SyntheticConfig {
        dim: 1,
        arms: 50,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, 4).unwrap();
    let params = SketchParams::new().lambda(0.01).beta(1.0).qbar(2.0);
    let mut agent = UcbAgent::new(Bkb::new(kernel, params, 8).unwrap());
    let mut largest = 0;
    for t in 0..5000 {
        let round = problem.round(t);
        let i = agent.select(&round).unwrap();
        agent
            .update(round.arm(i), round.values[i] + round.noise)
            .unwrap();
        largest = largest.max(agent.bound().dictionary_size());
    }
    let m = agent.bound().dictionary_size();
    assert_eq!(agent.bound().posterior().distinct(), 5000);
    assert!(m < 100 && largest < 100, "m = {m}, largest {largest}");
    eprintln!("BKB 1-D RBF T = 5000: m = {m}, largest {largest}");
}

/// Truncating EK-UCB restores the state it had (same bounds), anchors included.
#[test]
fn ek_ucb_truncate_restores_the_earlier_state() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let params = SketchParams::new().lambda(1.0).beta(1.0).gamma(3.0);
    let mut ek = EkUcb::new(Rbf::new(0.25).unwrap(), params, 2).unwrap();
    let test = uniform_points(&mut rng, 20, 2);
    let data = uniform_points(&mut rng, 300, 2);
    for x in &data[..150] {
        ek.observe(x, x[0] * x[1]).unwrap();
    }
    let (before, anchors) = (ek.bounds(&test).unwrap(), ek.dictionary_size());
    for x in &data[150..] {
        ek.observe(x, x[0] * x[1]).unwrap();
    }
    assert!(ek.dictionary_size() > anchors);
    ek.truncate(150);
    assert_eq!((ek.len(), ek.dictionary_size()), (150, anchors));
    let after = ek.bounds(&test).unwrap();
    for j in 0..test.len() {
        assert!((before.ucb[j] - after.ucb[j]).abs() < 1e-9);
        assert!((before.mean[j] - after.mean[j]).abs() < 1e-9);
    }
}

/// Repeated plays of one arm are counted, not stored again: the sketch of a run over a few
/// arms stays small and equals the exact posterior on a full dictionary.
#[test]
fn repeated_arms_are_counted() {
    let kernel = Rbf::new(0.5).unwrap();
    let mut post = SketchedPosterior::new(kernel, 0.1).unwrap();
    let mut exact = ExactPosterior::new(kernel, &[0.1]).unwrap();
    for t in 0..600 {
        let x = [(t % 3) as f64 * 0.4, -0.0];
        let y = x[0] + 0.01 * t as f64;
        post.observe(&x, y).unwrap();
        exact.observe(&x, y).unwrap();
    }
    // −0.0 and 0.0 are the same arm.
    post.observe(&[0.0, 0.0], 0.0).unwrap();
    exact.observe(&[0.0, 0.0], 0.0).unwrap();
    assert_eq!((post.len(), post.distinct()), (601, 3));
    assert_eq!(post.count(0), 201);
    post.set_dictionary(&[0, 1, 2]).unwrap();
    let q = [[0.2, 0.1], [0.8, 0.0]];
    let (a, b) = (
        post.evaluate(&q.as_points().unwrap()).unwrap(),
        exact.evaluate(&q.as_points().unwrap()).unwrap(),
    );
    for j in 0..2 {
        assert!((a.mean[j] - b.mean(0)[j]).abs() < 1e-8);
        assert!(relative(a.variance[j], b.variance(0)[j] / 0.1) < 1e-6);
    }
}

/// Duplicated anchors are skipped (K_ZZ would be singular) and near-duplicates never give
/// NaN; tiny and huge length-scales stay finite.
#[test]
fn degenerate_dictionaries_stay_finite() {
    for lengthscale in [1e-4, 1.0, 1e4] {
        let mut post = SketchedPosterior::new(Rbf::new(lengthscale).unwrap(), 1.0).unwrap();
        for i in 0..50 {
            post.observe(&[0.5 + 1e-12 * i as f64], 1.0).unwrap();
        }
        let all: Vec<usize> = (0..50).collect();
        post.set_dictionary(&all).unwrap();
        assert!(post.dictionary_size() >= 1);
        for i in 0..50 {
            post.add_anchor(i).unwrap();
        }
        let b = post.evaluate(&[[0.5], [0.9]].as_points().unwrap()).unwrap();
        assert!(
            b.mean.iter().chain(&b.variance).all(|v| v.is_finite()),
            "{b:?}"
        );
        assert!(b.variance.iter().all(|&v| v >= 0.0));
    }
}

/// Invalid parameters, points and targets are rejected with typed errors and change nothing.
#[test]
fn bad_input_is_rejected_and_changes_nothing() {
    let kernel = Rbf::new(0.5).unwrap();
    assert!(matches!(
        Bkb::new(kernel, SketchParams::new().beta(1.0), 0),
        Err(Error::MissingParameter { name: "qbar", .. })
    ));
    assert!(matches!(
        EkUcb::new(kernel, SketchParams::new().gamma(1.0), 0),
        Err(Error::MissingParameter { name: "sigma", .. })
    ));
    for bad in [
        SketchParams::new().lambda(0.0),
        SketchParams::new().epsilon(1.0),
        SketchParams::new().delta(f64::NAN),
        SketchParams::new().beta(-1.0),
    ] {
        assert!(
            matches!(
                EkUcb::new(
                    kernel,
                    bad.gamma(1.0).beta(1.0).sigma(1.0).norm_bound(1.0),
                    0
                ),
                Err(Error::InvalidParameter { .. })
            ) || matches!(
                EkUcb::new(kernel, bad.gamma(1.0), 0),
                Err(Error::InvalidParameter { .. })
            )
        );
    }
    let bounds: Vec<Box<dyn ConfidenceBound>> = vec![
        Box::new(Bkb::new(kernel, SketchParams::new().beta(1.0).qbar(5.0), 0).unwrap()),
        Box::new(EkUcb::new(kernel, SketchParams::new().beta(1.0).gamma(2.0), 0).unwrap()),
        Box::new(KUcb::new(kernel, 1.0, 1.0).unwrap()),
    ];
    let query = vec![vec![0.1, 0.2], vec![0.7, 0.3]];
    for mut bound in bounds {
        for (x, y) in [([0.1, 0.2], 1.0), ([0.5, 0.5], -1.0), ([0.9, 0.1], 0.5)] {
            bound.observe(&x, y).unwrap();
        }
        let before = bound.bounds(&query).unwrap();
        assert!(bound.observe(&[0.1, f64::NAN], 1.0).is_err());
        assert!(bound.observe(&[0.1, 0.2], f64::INFINITY).is_err());
        assert!(matches!(
            bound.observe(&[0.1], 1.0),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(bound.bounds(&vec![vec![0.1, 0.2, 0.3]]).is_err());
        assert!(matches!(
            bound.argmax_ucb(&Vec::<Vec<f64>>::new().as_points().unwrap()),
            Err(Error::NoArms)
        ));
        assert_eq!(bound.len(), 3, "{}", bound.name());
        assert_eq!(bound.bounds(&query).unwrap(), before, "{}", bound.name());
    }
}

/// A cloned sketched bound continues exactly like the original: same generator position, so
/// the same dictionaries and bounds.
#[test]
fn clones_continue_identically() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let kernel = Rbf::new(0.3).unwrap();
    let params = SketchParams::new()
        .lambda(0.5)
        .beta(1.0)
        .qbar(3.0)
        .gamma(2.0);
    let mut bkb = Bkb::new(kernel, params, 4).unwrap();
    let mut ek = EkUcb::new(kernel, params, 4).unwrap();
    let data = uniform_points(&mut rng, 200, 2);
    for x in &data[..100] {
        bkb.observe(x, x[0]).unwrap();
        ek.observe(x, x[0]).unwrap();
    }
    let (mut bkb2, mut ek2) = (bkb.clone(), ek.clone());
    let test = uniform_points(&mut rng, 10, 2);
    for x in &data[100..] {
        for b in [
            &mut bkb as &mut dyn ConfidenceBound,
            &mut bkb2,
            &mut ek,
            &mut ek2,
        ] {
            b.observe(x, x[1]).unwrap();
        }
        assert_eq!(bkb.posterior().dictionary(), bkb2.posterior().dictionary());
        assert_eq!(ek.anchor_steps(), ek2.anchor_steps());
    }
    assert_eq!(bkb.bounds(&test).unwrap(), bkb2.bounds(&test).unwrap());
    assert_eq!(ek.bounds(&test).unwrap(), ek2.bounds(&test).unwrap());
}

/// KORS's leverage estimate equals Zenati et al. 2022 Eq. 41 evaluated densely: the candidate added to
/// the dictionary with weight 1, the anchors weighted by 1/√p̃, one LU solve.
#[test]
fn kors_leverage_matches_equation_41() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let kernel = Rbf::new(0.2).unwrap();
    let (lambda, mu, epsilon) = (1.0, 0.5, 0.5);
    let params = SketchParams::new()
        .lambda(lambda)
        .mu(mu)
        .epsilon(epsilon)
        .beta(1.0)
        .gamma(3.0);
    let mut ek = EkUcb::new(kernel, params, 5).unwrap();
    for x in uniform_points(&mut rng, 300, 2) {
        ek.observe(&x, x[0]).unwrap();
    }
    let post = ek.posterior();
    let probabilities = ek.anchor_probabilities();
    assert!(probabilities.iter().any(|&p| p < 1.0), "{probabilities:?}");
    for candidate in uniform_points(&mut rng, 20, 2) {
        let mut points: Vec<Vec<f64>> = (0..post.dictionary_size())
            .map(|j| post.anchor(j).to_vec())
            .collect();
        points.push(candidate.clone());
        let mut weights: Vec<f64> = probabilities.iter().map(|p| 1.0 / p.sqrt()).collect();
        weights.push(1.0);
        let n = points.len();
        let scaled = DMatrix::from_fn(n, n, |i, j| {
            weights[i] * kernel.eval(&points[i], &points[j]) * weights[j]
        }) + mu * DMatrix::identity(n, n);
        let v = DVector::from_fn(n, |i, _| weights[i] * kernel.eval(&points[i], &candidate));
        let explained = (v.transpose() * scaled.try_inverse().unwrap() * &v)[0];
        let reference = (1.0 + epsilon) / mu * (kernel.eval(&candidate, &candidate) - explained);
        let got = ek.leverage_score(&candidate).unwrap();
        assert!(
            (got - reference).abs() <= 1e-9 * reference.abs().max(1e-6),
            "{got} vs {reference}"
        );
    }
}

/// With Prop. 4.1's γ (and μ = 2λ, so the variance factor C ≈ 3.73 exceeds α = 3), EK-UCB's
/// on-the-fly log-determinant bound stays above the exact ln det(I + K_t/λ) along the run.
#[test]
fn ek_ucb_log_det_bound_dominates_the_exact_one() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let kernel = Rbf::new(0.3).unwrap();
    let lambda = 0.5;
    let params = SketchParams::new()
        .lambda(lambda)
        .mu(2.0 * lambda)
        .sigma(0.1)
        .norm_bound(1.0)
        .delta(0.1)
        .horizon(400);
    let mut ek = EkUcb::new(kernel, params, 3).unwrap();
    assert!((ek.variance_factor() - (1.0 + 0.5 * (2.0 + 12f64.sqrt()))).abs() < 1e-12);
    let mut exact = ExactPosterior::new(kernel, &[lambda]).unwrap();
    let mut tightest = f64::INFINITY;
    for x in uniform_points(&mut rng, 400, 2) {
        ek.observe(&x, x[1]).unwrap();
        exact.observe(&x, x[1]).unwrap();
        let (bound, truth) = (ek.log_det_bound(), exact.log_det(0));
        assert!(bound >= truth, "t = {}: {bound} < {truth}", ek.len());
        tightest = tightest.min(bound / truth);
    }
    assert!(ek.dictionary_size() < 400);
    eprintln!(
        "log-det bound / exact ≥ {tightest:.3}, m = {} of 400",
        ek.dictionary_size()
    );
}
