//! The abrupt-change problem of Iwazaki & Takeno (2025, §6) (30 × 30 grid, three functions switching at T/5 and
//! 2T/5, SE kernel ℓ = 0.5, N(0, 0.1²) noise): final cumulative regret and wall time of random,
//! R-PERP with Eq. 8's width and with a practical width (β^{1/2} × 0.1), and R-GP-UCB (AY-GP-UCB
//! restarted every H = γ̃^{1/4}(T/V_T)^{1/2} rounds). `cargo run --release --example
//! nonstationary [-- SEEDS]`.

use std::time::Instant;

use kernel_bandits::Result;
use kernel_bandits::env::DriftingProblem;
use kernel_bandits::nonstationary::{RPerp, RPerpParams, Restarting, gp_ucb_interval};
use kernel_bandits::prelude::*;

fn main() -> Result<()> {
    let seeds: u64 = std::env::args()
        .nth(1)
        .map_or(Ok(3), |s| s.parse())
        .expect("SEEDS is a positive integer");
    let (horizon, rho) = (5000, 0.1);
    let kernel = Rbf::new(0.5)?;
    println!("| seed | V_T | method | final regret | seconds | notes |");
    println!("|---:|---:|---|---:|---:|---|");
    for seed in 0..seeds {
        let problem = DriftingProblem::paper004(&kernel, horizon, rho, seed)?;
        let arms = problem.arms();
        let v = problem.variation(horizon);
        let report = |name: &str, agent: &mut dyn BanditAgent, notes: String| -> Result<()> {
            let start = Instant::now();
            let regret = problem.run(agent, horizon)?.total();
            let secs = start.elapsed().as_secs_f64();
            println!("| {seed} | {v:.2} | {name} | {regret:.1} | {secs:.2} | {notes} |");
            Ok(())
        };
        report("random", &mut RandomAgent::new(seed), String::new())?;
        for (name, scale) in [("r_perp_theory", 1.0), ("r_perp", 0.1)] {
            let params = RPerpParams::new(horizon)
                .noise(rho)
                .norm_bound(1.0)
                .variation(v)
                .width_scale(scale);
            let mut agent = RPerp::new(kernel, &arms, params, seed)?;
            let (h, w) = (agent.interval_len(), agent.width());
            let start = Instant::now();
            let regret = problem.run(&mut agent, horizon)?.total();
            let secs = start.elapsed().as_secs_f64();
            let cuts = agent
                .eliminations()
                .iter()
                .filter(|e| e.kept < e.before)
                .count();
            println!(
                "| {seed} | {v:.2} | {name} | {regret:.1} | {secs:.2} | H = {h}, β^½ = {w:.1}, {cuts} of {} batches eliminated arms |",
                agent.eliminations().len()
            );
        }
        let h = gp_ucb_interval(None, 2, horizon, v)?;
        let params = BoundParams::new()
            .sigma(rho)
            .norm_bound(1.0)
            .delta(0.1)
            .scale(1.0);
        let mut agent = Restarting::new(Ay::new(kernel, params)?, h)?;
        report("r_gp_ucb (AY)", &mut agent, format!("H = {h}"))?;
    }
    Ok(())
}
