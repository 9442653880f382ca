//! The main demonstration: the synthetic kernel bandit of Flynn & Reeb (2024, §7) with d = 3, an RBF kernel
//! (ℓ = 0.5), 100 fresh arms per round, σ = 0.1, B = 10, δ = 0.01, played by CMM-UCB, DMM-UCB,
//! AMM-UCB, AY-GP-UCB, IGP-UCB and a random agent on the same function, arms and noise
//! (CMM-UCB takes most of the half minute at T = 1000).
//!
//! ```text
//! cargo run --release --example quickstart            # T = 1000, seed 1
//! cargo run --release --example quickstart -- 300 7   # T = 300, seed 7
//! ```

use std::time::Instant;

use kernel_bandits::Result;
use kernel_bandits::prelude::*;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let horizon: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);

    let kernel = Rbf::new(0.5)?;
    let config = SyntheticConfig::default();
    let problem = SyntheticProblem::new(kernel, config, seed)?;
    // The paper's settings: c = 1 for RBF (c = T^{-d/(2d+2ν)} for Matérn), λ = σ²/c, η = 2/T.
    let params = BoundParams::paper_defaults(&kernel, config.dim, horizon);

    let agents: Vec<Box<dyn BanditAgent>> = vec![
        Box::new(UcbAgent::new(Cmm::new(kernel, params)?)),
        Box::new(UcbAgent::new(Dmm::new(kernel, params)?)),
        Box::new(UcbAgent::new(Amm::new(kernel, params)?)),
        Box::new(UcbAgent::new(Ay::new(kernel, params)?)),
        Box::new(UcbAgent::new(Igp::new(kernel, params)?)),
        Box::new(RandomAgent::new(seed)),
    ];

    println!(
        "Synthetic kernel bandit (Flynn & Reeb 2024 §7): d = {}, RBF ℓ = 0.5, {} arms/round, T = {horizon}, seed {seed}\n",
        config.dim, config.arms
    );
    println!("| agent      | cumulative regret | regret, last 10% of rounds | wall time |");
    println!("|------------|------------------:|---------------------------:|----------:|");
    for mut agent in agents {
        let start = Instant::now();
        let trace = problem.run(&mut agent, horizon)?;
        let elapsed = start.elapsed();
        let tail: f64 = trace.regret[horizon - horizon / 10..].iter().sum();
        println!(
            "| {:<10} | {:>17.2} | {:>26.2} | {:>7.2} s |",
            agent.name(),
            trace.total(),
            tail,
            elapsed.as_secs_f64()
        );
    }
    Ok(())
}
