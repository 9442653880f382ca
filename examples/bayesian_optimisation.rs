//! Bayesian optimisation of your own black-box function with a UCB agent.
//!
//! The "black box" here is the Branin function rescaled to [0, 1]², a standard test problem
//! whose minimum 0.397887 is known; we maximise −Branin from noisy evaluations. Replace
//! `black_box` with your own function (and the settings below with your own scales).
//!
//! ```text
//! cargo run --release --example bayesian_optimisation
//! ```

use std::f64::consts::PI;

use kernel_bandits::Result;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};

/// −Branin on [0, 1]² (x₁ = 15u₁ − 5, x₂ = 15u₂); its maximum is −0.397887.
fn black_box(u: &[f64]) -> f64 {
    let (x1, x2) = (15.0 * u[0] - 5.0, 15.0 * u[1]);
    let (b, c, t) = (5.1 / (4.0 * PI * PI), 5.0 / PI, 1.0 / (8.0 * PI));
    -((x2 - b * x1 * x1 + c * x1 - 6.0).powi(2) + 10.0 * (1.0 - t) * x1.cos() + 10.0)
}

const OPTIMUM: f64 = -0.397887;
const ROUNDS: usize = 100;
const CANDIDATES: usize = 1000;
/// A rough size of the function's values: the agent sees the rewards divided by it, so that a
/// unit-variance kernel and a norm bound of a few units fit them.
const REWARD_SCALE: f64 = 100.0;

/// The agent: σ and B are upper bounds on the (scaled) noise and the function's RKHS norm,
/// the two numbers a user must choose. DMM-UCB is the tightest of the fast exact bounds.
fn new_agent() -> Result<UcbAgent<Dmm<Matern>>> {
    let params = BoundParams::new()
        .sigma(1.0 / REWARD_SCALE)
        .norm_bound(5.0)
        .delta(0.05);
    Ok(UcbAgent::new(Dmm::new(Matern::new(2.5, 0.3)?, params)?))
}

fn main() -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let noise = Normal::new(0.0, 1.0).expect("a valid standard deviation"); // σ = 1 on Branin's scale

    // 1. Fresh random candidates each round: the agent picks the one with the largest UCB.
    let mut agent = new_agent()?;
    let mut evaluated: Vec<Vec<f64>> = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let candidates: Vec<[f64; 2]> = (0..CANDIDATES)
            .map(|_| [rng.random::<f64>(), rng.random::<f64>()])
            .collect();
        let i = agent.select(&candidates)?;
        let y = black_box(&candidates[i]) + noise.sample(&mut rng); // one noisy evaluation
        agent.update(&candidates[i], y / REWARD_SCALE)?;
        evaluated.push(candidates[i].to_vec());
    }
    report(
        &agent,
        &evaluated,
        &format!("{CANDIDATES} random candidates per round"),
    )?;

    // 2. The whole box [0, 1]²: the agent maximises its UCB by multi-start quasi-Newton.
    let mut agent = new_agent()?;
    let domain = BoxDomain::unit(2)?;
    let mut evaluated: Vec<Vec<f64>> = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let choice = agent.select_in(&domain)?;
        let y = black_box(&choice.point) + noise.sample(&mut rng);
        agent.update(&choice.point, y / REWARD_SCALE)?;
        evaluated.push(choice.point);
    }
    report(&agent, &evaluated, "select_in over the box")
}

/// Recommends the evaluated point with the largest posterior mean (robust to the noise).
fn report(agent: &UcbAgent<Dmm<Matern>>, evaluated: &[Vec<f64>], how: &str) -> Result<()> {
    let means = agent.bound().bounds(evaluated)?.mean;
    let best = (0..evaluated.len())
        .max_by(|&a, &b| means[a].total_cmp(&means[b]))
        .expect("at least one round");
    let (u1, u2) = (evaluated[best][0], evaluated[best][1]);
    println!("{ROUNDS} noisy evaluations, {how}");
    println!("recommended point:  ({u1:.4}, {u2:.4})");
    println!("its true value:     {:.6}", black_box(&evaluated[best]));
    println!("known optimum:      {OPTIMUM:.6}");
    println!(
        "best true value among all evaluations: {:.6}",
        evaluated
            .iter()
            .map(|u| black_box(u))
            .fold(f64::NEG_INFINITY, f64::max)
    );
    println!();
    Ok(())
}
