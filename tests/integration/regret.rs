//! Regret on the synthetic problem of Flynn & Reeb 2024 §7: the UCB agents must learn.
//! The reference is the uniformly random agent on the same f, arm sets and noise.

use kernel_bandits::Result;
use kernel_bandits::prelude::*;

/// d = 3, RBF ℓ = 0.5, T = 300: DMM-UCB's cumulative regret is at least 10× below random's.
#[test]
fn dmm_beats_random_tenfold_on_the_paper_problem() -> Result<()> {
    let horizon = 300;
    let kernel = Rbf::new(0.5)?;
    let config = SyntheticConfig::default();
    let problem = SyntheticProblem::new(kernel, config, 11)?;
    let params = BoundParams::paper_defaults(&kernel, config.dim, horizon);
    let mut dmm = UcbAgent::new(Dmm::new(kernel, params)?);
    let mut random = RandomAgent::new(12);
    let dmm_regret = problem.run(&mut dmm, horizon)?.total();
    let random_regret = problem.run(&mut random, horizon)?.total();
    assert!(
        dmm_regret * 10.0 <= random_regret,
        "DMM {dmm_regret:.2} vs random {random_regret:.2}"
    );
    Ok(())
}

/// The problem is replayable: two runs of the same agent on the same problem see the same arms
/// and noise, so they make the same choices and suffer the same regret.
#[test]
fn runs_are_replayable() -> Result<()> {
    let kernel = Matern::new(2.5, 0.5)?;
    let problem = SyntheticProblem::new(kernel, SyntheticConfig::default(), 5)?;
    let params = BoundParams::paper_defaults(&kernel, 3, 50);
    let first = problem.run(&mut UcbAgent::new(Amm::new(kernel, params)?), 50)?;
    let second = problem.run(&mut UcbAgent::new(Amm::new(kernel, params)?), 50)?;
    assert_eq!(first, second);
    let round = problem.round(7);
    assert_eq!(round, problem.round(7));
    assert_ne!(round, problem.round(8));
    Ok(())
}

/// ‖f‖_H = B exactly, and regret is the gap to the round's best arm (never negative).
#[test]
fn synthetic_function_has_the_requested_norm() -> Result<()> {
    for (seed, dim) in [(1, 2), (2, 3), (3, 4)] {
        let config = SyntheticConfig {
            dim,
            ..SyntheticConfig::default()
        };
        let problem = SyntheticProblem::new(Matern::new(1.5, 0.2)?, config, seed)?;
        assert!((problem.rkhs_norm() - 10.0).abs() < 1e-9);
        let round = problem.round(0);
        assert_eq!(round.values.len(), 100);
        for i in 0..round.values.len() {
            assert_eq!(round.values[i], problem.value(round.arm(i))?);
        }
    }
    let trace = SyntheticProblem::new(Rbf::new(0.5)?, SyntheticConfig::default(), 9)?
        .run(&mut RandomAgent::new(1), 30)?;
    assert!(trace.regret.iter().all(|&r| r >= 0.0));
    Ok(())
}
