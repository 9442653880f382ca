//! The `parallel` feature spreads scoring and fixed-arm updates over rayon's threads; the
//! results must be the same bits on one thread and on several.
#![cfg(feature = "parallel")]

use kernel_bandits::posterior::ExactPosterior;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn points(n: usize, seed: u64) -> Vec<[f64; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect()
}

fn reward(x: &[f64; 3]) -> f64 {
    (6.0 * x[0]).sin() * x[1] + x[2]
}

/// Everything a run produces that could depend on the thread count.
#[derive(Debug, PartialEq)]
struct Outcome {
    evaluated: Vec<Vec<u64>>,
    choices: Vec<usize>,
    fixed_bounds: Vec<u64>,
    log_det: Vec<u64>,
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn run() -> Outcome {
    let kernel = Matern::new(2.5, 0.4).unwrap();
    let regularisers = [0.01, 0.1, 1.0];
    let mut gp = ExactPosterior::new(kernel, &regularisers).unwrap();
    let data = points(400, 1);
    for x in &data {
        gp.observe(x, reward(x)).unwrap();
    }
    // A fresh batch large enough to be split over the threads.
    let fresh = points(3000, 2);
    let batch = gp.evaluate(&fresh.as_points().unwrap()).unwrap();
    let mut evaluated = Vec::new();
    for r in 0..regularisers.len() {
        evaluated.push(bits(batch.mean(r)));
        evaluated.push(bits(batch.variance(r)));
    }
    // Pruned argmax over fresh arms, then fixed arms kept up to date.
    let mut choices = Vec::new();
    for round in 0..5 {
        let arms = points(3000, 10 + round);
        let j = gp
            .argmax_upper(&arms.as_points().unwrap(), &[1.0, 2.0, 3.0])
            .unwrap();
        gp.observe(&arms[j], reward(&arms[j])).unwrap();
        choices.push(j);
    }
    let set = points(5000, 3);
    let set_points = set.as_points().unwrap();
    gp.fix_arms(&set_points, None).unwrap();
    for _ in 0..30 {
        let j = gp.argmax_upper(&set_points, &[1.0, 2.0, 3.0]).unwrap();
        gp.observe(&set[j], reward(&set[j])).unwrap();
        choices.push(j);
    }
    let kept = gp.evaluate(&set_points).unwrap();
    let mut fixed_bounds = bits(kept.mean(0));
    fixed_bounds.extend(bits(kept.variance(2)));
    // A UCB agent over many fresh arms, with AMM.
    let mut agent = UcbAgent::new(Amm::new(kernel, BoundParams::new().sigma(0.1)).unwrap());
    agent
        .bound_mut()
        .observe_many(
            &data.as_points().unwrap(),
            &data.iter().map(reward).collect::<Vec<_>>(),
        )
        .unwrap();
    for round in 0..5 {
        let arms = points(4000, 100 + round);
        let j = agent.select(&arms).unwrap();
        agent.update(&arms[j], reward(&arms[j])).unwrap();
        choices.push(j);
    }
    Outcome {
        evaluated,
        choices,
        fixed_bounds,
        log_det: (0..regularisers.len())
            .map(|r| gp.log_det(r).to_bits())
            .collect(),
    }
}

fn on_threads(n: usize) -> Outcome {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(run)
}

#[test]
fn results_are_bit_identical_on_one_and_on_several_threads() {
    let one = on_threads(1);
    let two = on_threads(2);
    let four = on_threads(4);
    assert_eq!(one, two);
    assert_eq!(one, four);
}

/// CMM-UCB's bordered eigendecomposition update multiplies the eigenvectors in blocks of
/// columns spread over the threads: its bounds after several updates past 256 observations
/// (more than one block) must be the same bits on one thread and on two.
#[test]
fn cmm_updates_are_bit_identical_on_one_and_on_several_threads() {
    let cmm_run = || {
        let params = BoundParams::new().sigma(0.1).norm_bound(5.0).scale(1.0);
        let mut cmm = Cmm::new(Matern::new(2.5, 0.4).unwrap(), params).unwrap();
        let data = points(300, 4);
        for x in &data[..290] {
            cmm.observe(x, reward(x)).unwrap();
        }
        let queries = points(20, 5);
        let mut seen = Vec::new();
        for x in &data[290..] {
            // Each query after one observation runs a bordered update of the last spectrum.
            let bounds = cmm.bounds(&queries).unwrap();
            seen.push((bits(&bounds.ucb), bits(&bounds.lcb)));
            cmm.observe(x, reward(x)).unwrap();
        }
        assert_eq!(cmm.health().full_decompositions, 1, "{:?}", cmm.health());
        seen
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(cmm_run);
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
        .install(cmm_run);
    assert_eq!(one, two);
}
