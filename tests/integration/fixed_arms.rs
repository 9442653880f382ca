//! The fixed-arm fast path (`ExactPosterior::fix_arms`, `UcbAgent::with_arm_set`, automatic
//! detection) against the general path and against a posterior rebuilt from scratch.

use kernel_bandits::posterior::ExactPosterior;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn grid(n: usize, seed: u64) -> Vec<[f64; 2]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| [rng.random(), rng.random()]).collect()
}

fn reward(x: &[f64], noise: f64) -> f64 {
    (4.0 * x[0]).sin() * (3.0 * x[1]).cos() + noise
}

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(3.0)
        .delta(0.05)
        .scale(1.0)
        .horizon(300)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Plays `rounds` rounds with two copies of the same agent, one with the arm set declared and
/// one without any per-arm state, on the same rewards: the choices must agree and so must the
/// bounds at every arm, to rounding.
fn fixed_and_general_agree<B: ConfidenceBound + Clone>(bound: B, rounds: usize) {
    let arms = grid(80, 1);
    let mut fixed = UcbAgent::new(bound.clone()).with_arm_set(&arms).unwrap();
    let mut general = UcbAgent::new(bound).with_policy(ArmSetPolicy::Off);
    assert_eq!(fixed.bound().fixed_arms().map(|set| set.arms), Some(80));
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for round in 0..rounds {
        let i = fixed.select(&arms).unwrap();
        let j = general.select(&arms).unwrap();
        assert_eq!(i, j, "{}: round {round}", fixed.name());
        let y = reward(&arms[i], 0.1 * (rng.random::<f64>() - 0.5));
        fixed.update(&arms[i], y).unwrap();
        general.update(&arms[i], y).unwrap();
    }
    let a = fixed.bound().bounds(&arms).unwrap();
    let b = general.bound().bounds(&arms).unwrap();
    for k in 0..arms.len() {
        assert!(close(a.mean[k], b.mean[k], 1e-9), "{}", fixed.name());
        assert!(close(a.ucb[k], b.ucb[k], 1e-9), "{}", fixed.name());
        assert!(close(a.lcb[k], b.lcb[k], 1e-9), "{}", fixed.name());
    }
    assert_eq!(fixed.bound().fixed_arms().map(|set| set.arms), Some(80));
    assert_eq!(general.bound().fixed_arms().map(|set| set.arms), None);
}

#[test]
fn every_exact_bound_chooses_as_on_the_general_path() {
    // 300 rounds: past the 128 rows below which the general path evaluates every arm.
    let kernel = Matern::new(2.5, 0.3).unwrap();
    fixed_and_general_agree(Ay::new(kernel, params()).unwrap(), 300);
    fixed_and_general_agree(Igp::new(kernel, params()).unwrap(), 300);
    fixed_and_general_agree(Amm::new(kernel, params()).unwrap(), 300);
    fixed_and_general_agree(Dmm::new(kernel, params()).unwrap(), 300);
    fixed_and_general_agree(KUcb::new(Rbf::new(0.3).unwrap(), 1.0, 1.0).unwrap(), 300);
    // Boxed bounds forward the fast path.
    let boxed: Box<dyn ConfidenceBound> = Box::new(Amm::new(kernel, params()).unwrap());
    let arms = grid(10, 3);
    let agent = UcbAgent::new(boxed).with_arm_set(&arms).unwrap();
    assert_eq!(agent.bound().fixed_arms().map(|set| set.arms), Some(10));
}

/// The kept columns after appends, truncations and sliding-window downdates, against a
/// posterior rebuilt from the remaining observations (no fixed set, fresh solves).
#[test]
fn kept_state_matches_a_posterior_rebuilt_from_scratch() {
    let kernel = Rbf::new(0.25).unwrap();
    let regularisers = [0.01, 0.1, 1.0];
    let arms = grid(150, 4);
    let points = arms.as_points().unwrap();
    let mut gp = ExactPosterior::new(kernel, &regularisers).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    // Some observations before the arms are declared, including points outside the set.
    for _ in 0..40 {
        let x = [rng.random::<f64>(), rng.random::<f64>()];
        gp.observe(&x, reward(&x, 0.0)).unwrap();
    }
    assert!(gp.fix_arms(&points, None).unwrap());
    for step in 0..400 {
        match step % 50 {
            // A sliding-window step: the columns are rotated, not re-solved.
            10..=14 => gp.remove_oldest(),
            30 => gp.truncate(gp.len() - 7),
            _ => {
                let x = if step % 3 == 0 {
                    [rng.random::<f64>(), rng.random::<f64>()]
                } else {
                    arms[gp.argmax_upper(&points, &[0.5, 1.0, 2.0]).unwrap()]
                };
                let y = reward(&x, 0.05 * rng.random::<f64>());
                gp.observe(&x, y).unwrap();
            }
        }
    }
    assert_eq!(gp.fixed_arms().map(|set| set.arms), Some(150));
    let mut fresh = ExactPosterior::new(kernel, &regularisers).unwrap();
    for i in 0..gp.len() {
        fresh.observe(gp.input(i), gp.targets()[i]).unwrap();
    }
    let a = gp.evaluate(&points).unwrap();
    let b = fresh.evaluate(&points).unwrap();
    for r in 0..regularisers.len() {
        for j in 0..arms.len() {
            assert!(close(a.mean(r)[j], b.mean(r)[j], 1e-9), "mean r={r} j={j}");
            assert!(
                (a.variance(r)[j] - b.variance(r)[j]).abs() < 1e-9,
                "variance r={r} j={j}: {} vs {}",
                a.variance(r)[j],
                b.variance(r)[j]
            );
        }
        assert!(close(gp.quad_form(r), fresh.quad_form(r), 1e-9));
        assert!(close(gp.log_det(r), fresh.log_det(r), 1e-9));
    }
}

#[test]
fn a_declared_set_stays_when_the_policy_turns_to_detection() {
    let kernel = Rbf::new(0.3).unwrap();
    let arms = grid(30, 6);
    let mut agent = UcbAgent::new(Amm::new(kernel, params()).unwrap())
        .with_arm_set(&arms)
        .unwrap()
        .with_policy(ArmSetPolicy::default());
    for round in 0..3 {
        let i = agent.select(&arms).unwrap();
        agent.update(&arms[i], 0.1 * round as f64).unwrap();
        assert_eq!(
            agent.bound().fixed_arms().map(|set| set.arms),
            Some(30),
            "round {round}: the declared set is the one offered, so it is kept"
        );
    }
    // Other arms release it, as under detection.
    agent.select(&grid(30, 7)).unwrap();
    assert_eq!(agent.bound().fixed_arms(), None);
}

#[test]
fn detection_declares_a_repeated_set_and_releases_it() {
    let kernel = Rbf::new(0.3).unwrap();
    let mut agent = UcbAgent::new(Amm::new(kernel, params()).unwrap());
    let arms = grid(30, 6);
    let other = grid(30, 7);
    let i = agent.select(&arms).unwrap();
    agent.update(&arms[i], 0.3).unwrap();
    assert_eq!(
        agent.bound().fixed_arms().map(|set| set.arms),
        None,
        "seen once"
    );
    let i = agent.select(&arms).unwrap();
    agent.update(&arms[i], 0.1).unwrap();
    assert_eq!(
        agent.bound().fixed_arms().map(|set| set.arms),
        Some(30),
        "seen twice in a row"
    );
    agent.select(&other).unwrap();
    assert_eq!(
        agent.bound().fixed_arms().map(|set| set.arms),
        None,
        "other arms release the set"
    );
    // A limit smaller than one observation's state: never kept.
    let mut small =
        UcbAgent::new(Amm::new(kernel, params()).unwrap()).with_policy(ArmSetPolicy::Detect {
            memory_limit: 8 * 30,
        });
    for _ in 0..3 {
        let i = small.select(&arms).unwrap();
        small.update(&arms[i], 0.2).unwrap();
    }
    assert_eq!(small.bound().fixed_arms().map(|set| set.arms), None);
}

#[test]
fn a_set_that_outgrows_its_memory_limit_is_dropped_and_results_stay_exact() {
    let kernel = Matern::new(1.5, 0.3).unwrap();
    let arms = grid(50, 8);
    let points = arms.as_points().unwrap();
    let mut gp = ExactPosterior::new(kernel, &[0.1]).unwrap();
    // Room for 20 observations of 50 arms (8 bytes each) plus the small per-arm vectors.
    assert!(gp.fix_arms(&points, Some(8 * 50 * 24)).unwrap());
    let mut plain = ExactPosterior::new(kernel, &[0.1]).unwrap();
    for step in 0..60 {
        let x = arms[(step * 7) % 50];
        gp.observe(&x, reward(&x, 0.0)).unwrap();
        plain.observe(&x, reward(&x, 0.0)).unwrap();
        if step < 15 {
            assert_eq!(gp.fixed_arms().map(|set| set.arms), Some(50), "step {step}");
        }
    }
    assert_eq!(gp.fixed_arms().map(|set| set.arms), None);
    assert_eq!(gp.fixed_arms().map_or(0, |set| set.bytes), 0);
    // Declaring a set already over the limit keeps nothing, also in place of a kept set.
    assert!(gp.fix_arms(&points, None).unwrap());
    assert!(!gp.fix_arms(&points, Some(8 * 50 * 24)).unwrap());
    assert_eq!(gp.fixed_arms().map(|set| set.arms), None);
    assert!(gp.fix_arms(&points, None).unwrap());
    let other = grid(10, 13);
    assert!(!gp.fix_arms(&other.as_points().unwrap(), Some(1)).unwrap());
    assert_eq!(gp.fixed_arms().map(|set| set.arms), None);
    let (a, b) = (
        gp.evaluate(&points).unwrap(),
        plain.evaluate(&points).unwrap(),
    );
    for j in 0..arms.len() {
        assert!(close(a.mean(0)[j], b.mean(0)[j], 1e-9));
        assert!((a.variance(0)[j] - b.variance(0)[j]).abs() < 1e-10);
    }
}

#[test]
fn bad_input_on_the_fast_path_is_rejected_and_changes_nothing() {
    let kernel = Rbf::new(0.3).unwrap();
    let arms = grid(20, 9);
    let mut agent = UcbAgent::new(Dmm::new(kernel, params()).unwrap())
        .with_arm_set(&arms)
        .unwrap();
    for _ in 0..5 {
        let i = agent.select(&arms).unwrap();
        agent.update(&arms[i], 0.5).unwrap();
    }
    let before = agent.bound().bounds(&arms).unwrap();
    assert!(matches!(
        agent.update(&[0.1, 0.2, 0.3], 1.0),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        agent.update(&arms[0], f64::NAN),
        Err(Error::NonFinite { .. })
    ));
    assert!(agent.select(&[[0.1, 0.2, 0.3]]).is_err());
    let empty: Vec<[f64; 2]> = Vec::new();
    assert!(matches!(agent.select(&empty), Err(Error::NoArms)));
    assert!(matches!(
        agent
            .bound_mut()
            .fix_arms(&[[0.5]].as_points().unwrap(), None),
        Err(Error::DimensionMismatch { .. })
    ));
    assert_eq!(agent.bound().len(), 5);
    assert_eq!(agent.bound().fixed_arms().map(|set| set.arms), Some(20));
    assert_eq!(agent.bound().bounds(&arms).unwrap(), before);
    // Declared before any observation: the set fixes the dimension of later updates.
    let mut gp = ExactPosterior::new(kernel, &[0.1]).unwrap();
    gp.fix_arms(&arms.as_points().unwrap(), None).unwrap();
    assert!(matches!(
        gp.observe(&[0.1], 1.0),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(gp.is_empty());
}

/// The same arm thousands of times, and duplicated arms in the set: the kept variances stay
/// finite, non-negative and equal to the fresh ones.
#[test]
fn duplicates_and_repeats_stay_consistent() {
    let kernel = Rbf::new(0.5).unwrap();
    let mut arms = grid(10, 10);
    arms.extend_from_within(..5);
    let points = arms.as_points().unwrap();
    let mut gp = ExactPosterior::new(kernel, &[0.01]).unwrap();
    gp.fix_arms(&points, None).unwrap();
    for step in 0..2000 {
        let x = arms[if step % 10 == 0 { 3 } else { 0 }];
        gp.observe(&x, reward(&x, 0.0)).unwrap();
    }
    let mut fresh = ExactPosterior::new(kernel, &[0.01]).unwrap();
    for i in 0..gp.len() {
        fresh.observe(gp.input(i), gp.targets()[i]).unwrap();
    }
    let (a, b) = (
        gp.evaluate(&points).unwrap(),
        fresh.evaluate(&points).unwrap(),
    );
    for j in 0..arms.len() {
        assert!(a.variance(0)[j] >= 0.0 && a.variance(0)[j].is_finite());
        assert!((a.variance(0)[j] - b.variance(0)[j]).abs() < 1e-10);
        assert!(close(a.mean(0)[j], b.mean(0)[j], 1e-8));
    }
    assert_eq!(
        a.mean(0)[0],
        a.mean(0)[10],
        "a duplicated arm has one posterior"
    );
}

/// A blocked batch append equals one-by-one appends, with and without a fixed set (whose
/// columns the batch extends by one triangular solve).
#[test]
fn observe_many_matches_one_by_one_appends() {
    let kernel = Matern::new(2.5, 0.4).unwrap();
    let regularisers = [0.05, 0.5];
    let arms = grid(60, 11);
    let points = arms.as_points().unwrap();
    let data = grid(300, 12);
    let targets: Vec<f64> = data.iter().map(|x| reward(x, 0.0)).collect();
    for declare in [false, true] {
        let mut batch = ExactPosterior::new(kernel, &regularisers).unwrap();
        let mut single = ExactPosterior::new(kernel, &regularisers).unwrap();
        // Two batches: the second appends to an existing factor.
        batch
            .observe_many(&data[..120].as_points().unwrap(), &targets[..120])
            .unwrap();
        if declare {
            batch.fix_arms(&points, None).unwrap();
        }
        batch
            .observe_many(&data[120..].as_points().unwrap(), &targets[120..])
            .unwrap();
        for (x, &y) in data.iter().zip(&targets) {
            single.observe(x, y).unwrap();
        }
        assert_eq!(
            batch.fixed_arms().map(|set| set.arms),
            declare.then_some(60)
        );
        let (a, b) = (
            batch.evaluate(&points).unwrap(),
            single.evaluate(&points).unwrap(),
        );
        for r in 0..regularisers.len() {
            assert!(close(batch.quad_form(r), single.quad_form(r), 1e-9));
            assert!(close(batch.log_det(r), single.log_det(r), 1e-9));
            for j in 0..arms.len() {
                assert!(close(a.mean(r)[j], b.mean(r)[j], 1e-8), "declare {declare}");
                assert!((a.variance(r)[j] - b.variance(r)[j]).abs() < 1e-9);
            }
        }
    }
    let mut gp = ExactPosterior::new(kernel, &regularisers).unwrap();
    assert!(matches!(
        gp.observe_many(&data.as_points().unwrap(), &targets[1..]),
        Err(Error::LengthMismatch {
            expected: 300,
            got: 299,
            ..
        })
    ));
    let mut bad = targets.clone();
    bad[77] = f64::INFINITY;
    assert!(gp.observe_many(&data.as_points().unwrap(), &bad).is_err());
    assert!(gp.is_empty());
}
