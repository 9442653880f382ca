//! Long runs: an exact bound to t = 20 000 observations, and EK-UCB to 10⁶ rounds.
//!
//! ```sh
//! cargo run --release --example long_run -- exact [ROUNDS=20000] [ARMS=100]
//! cargo run --release --example long_run -- ek-ucb [ROUNDS=1000000] [ENV=bump|chessboard|step-diagonal]
//! ```
//!
//! `exact`: AMM-UCB (Matérn 5/2, ℓ = 0.5, d = 3, the parameters of Flynn & Reeb 2024 §7) on a fixed set of
//! uniform arms declared with `UcbAgent::with_arm_set`, so that a round costs O(A·t) plus an
//! O(t) Cholesky append. Prints, every tenth of the run, the time per round over the last
//! stretch and the memory: the process's resident set, and what one more observation adds
//! (8·(t + 1) bytes for the Cholesky row, 8·A for the arms' solved columns).
//!
//! `ek-ucb`: EK-UCB on one of the environments of Zenati et al. (2022), 'Bump' by default (the
//! `kbandit reproduce contextual` settings:
//! Gaussian ℓ = 0.1, λ = μ = 10, β̃ = 0.1, γ = 0.1λ, ε = ½), printing the dictionary size m,
//! the time per round and the resident set as it goes.

use std::time::Instant;

use kernel_bandits::env::{BanditRound, ContextualConfig, ContextualEnv, ContextualProblem};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// The process's resident set size in MB (Linux), if known.
fn resident_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn exact(rounds: usize, arms: usize) -> Result<(), Box<dyn std::error::Error>> {
    let dims = 3;
    let kernel = Matern::new(2.5, 0.5)?;
    let params = BoundParams::paper_defaults(&kernel, dims, rounds);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let set: Vec<[f64; 3]> = (0..arms)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    let mut agent = UcbAgent::new(Amm::new(kernel, params)?).with_arm_set(&set)?;
    println!("AMM-UCB, {arms} fixed arms, d = {dims}, {rounds} rounds");
    println!(
        "{:>8} {:>10} {:>14} {:>12} {:>16}",
        "t", "elapsed s", "ms per round", "RSS MB", "bytes per obs."
    );
    let start = Instant::now();
    let mut last = (0, 0.0);
    let step = (rounds / 10).max(1);
    for t in 1..=rounds {
        let i = agent.select(&set)?;
        let [a, b, c] = set[i];
        let y = (6.0 * a).sin() * b + c + 0.1 * (rng.random::<f64>() - 0.5);
        agent.update(&set[i], y)?;
        if t % step == 0 || t == rounds {
            let elapsed = start.elapsed().as_secs_f64();
            let per_round = (elapsed - last.1) / (t - last.0) as f64 * 1e3;
            let per_observation = 8 * (t + 1) + 8 * arms + 8 * dims;
            let rss = resident_mb().map_or("?".into(), |mb| format!("{mb:.0}"));
            println!("{t:>8} {elapsed:>10.1} {per_round:>14.3} {rss:>12} {per_observation:>16}");
            last = (t, elapsed);
        }
    }
    let factor_mb = 8.0 * (rounds * (rounds + 1) / 2) as f64 / 1e6;
    println!(
        "Cholesky factor: {factor_mb:.0} MB of entries (t(t+1)/2 doubles, stored in 128-row blocks); fixed-arm columns: {:.0} MB",
        8.0 * (arms * rounds) as f64 / 1e6
    );
    Ok(())
}

fn ek_ucb(rounds: usize, env: ContextualEnv) -> Result<(), Box<dyn std::error::Error>> {
    let problem = ContextualProblem::new(env, ContextualConfig::default(), 0)?;
    let lambda = 10.0;
    let sketch = SketchParams::new()
        .lambda(lambda)
        .mu(lambda)
        .beta(0.1)
        .epsilon(0.5)
        .gamma(0.1 * lambda);
    let kernel = Rbf::new(0.1)?;
    let mut agent = UcbAgent::new(EkUcb::new(kernel, sketch, 7)?);
    println!("EK-UCB on {}, {rounds} rounds", env.name());
    println!(
        "{:>9} {:>10} {:>14} {:>6} {:>10} {:>14}",
        "t", "elapsed s", "ms per round", "m", "RSS MB", "mean regret"
    );
    let start = Instant::now();
    let step = (rounds / 20).max(1);
    let mut last = (0, 0.0);
    let mut regret = 0.0;
    for t in 1..=rounds {
        let round = problem.round(t - 1);
        let i = agent.select_from(&round.arms())?;
        agent.update(round.arm(i), round.values()[i] + round.noise())?;
        regret += round.best_value() - round.values()[i];
        if t % step == 0 || t == rounds {
            let elapsed = start.elapsed().as_secs_f64();
            let per_round = (elapsed - last.1) / (t - last.0) as f64 * 1e3;
            let m = agent.bound().dictionary_size();
            let rss = resident_mb().map_or("?".into(), |mb| format!("{mb:.0}"));
            println!(
                "{t:>9} {elapsed:>10.1} {per_round:>14.4} {m:>6} {rss:>10} {:>14.4}",
                regret / t as f64
            );
            last = (t, elapsed);
        }
    }
    println!("total {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(args
            .get(i)
            .map(|s| s.parse())
            .transpose()?
            .unwrap_or(default))
    };
    match args.first().map(String::as_str) {
        Some("exact") => exact(number(1, 20_000)?, number(2, 100)?),
        Some("ek-ucb") => {
            let env = match args.get(2).map(String::as_str) {
                None | Some("bump") => ContextualEnv::Bump,
                Some("chessboard") => ContextualEnv::Chessboard,
                Some("step-diagonal") => ContextualEnv::StepDiagonal,
                Some(other) => return Err(format!("unknown environment {other}").into()),
            };
            ek_ucb(number(1, 1_000_000)?, env)
        }
        _ => Err("usage: long_run exact [ROUNDS] [ARMS] | long_run ek-ucb [ROUNDS] [ENV]".into()),
    }
}
