//! Misspecification is reported, not hidden: with B ten times too small on the Flynn & Reeb 2024 §7
//! problem, the martingale-mixture confidence set becomes empty, CMM-UCB's diagnostics say so
//! exactly (checked against a brute-force minimum of R̃_a² over a dense grid of a), DMM-UCB's
//! say so on its grid, any crossed LCB > UCB comes with an empty set, and an agent under
//! `Misspecification::Refuse` refuses to select without changing. With the true B nothing is
//! flagged.

use kernel_bandits::prelude::*;

const T: usize = 60;

fn problem(seed: u64) -> SyntheticProblem<Matern> {
    let config = SyntheticConfig {
        dim: 2,
        ..SyntheticConfig::default()
    };
    SyntheticProblem::new(Matern::new(2.5, 0.5).unwrap(), config, seed).unwrap()
}

fn params(norm_bound: f64) -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(norm_bound)
        .delta(0.1)
        .scale(1.0)
}

/// Plays T rounds with `agent` and returns the first round after which `flagged` held.
fn first_flag<B: ConfidenceBound>(
    problem: &SyntheticProblem<Matern>,
    agent: &mut UcbAgent<B>,
    flagged: impl Fn(&B) -> bool,
) -> Option<usize> {
    let mut first = None;
    for t in 0..T {
        let round = problem.round(t);
        let i = agent.select_from(&round.arms()).unwrap();
        agent
            .update(round.arm(i), round.values[i] + round.noise)
            .unwrap();
        if first.is_none() && flagged(agent.bound()) {
            first = Some(t);
        }
    }
    first
}

/// min over a dense grid of a of R̃_a² = R_t² + aB² − a q_a, from an independent posterior with
/// every grid value as a regulariser.
fn brute_force_smallest_radius(
    bound: &Cmm<Matern>,
    norm_bound: f64,
    inputs: &[Vec<f64>],
    targets: &[f64],
) -> f64 {
    let a0 = bound.params().mixture_regulariser();
    let grid: Vec<f64> = (0..=240)
        .map(|k| a0 * 10f64.powf(-6.0 + k as f64 / 20.0))
        .collect();
    let mut post = ExactPosterior::new(*bound.posterior().kernel(), &grid).unwrap();
    for (x, &y) in inputs.iter().zip(targets) {
        post.observe(x, y).unwrap();
    }
    let r_sq = bound.radius_sq();
    (0..grid.len())
        .map(|r| r_sq + grid[r] * norm_bound * norm_bound - grid[r] * post.quad_form(r))
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn a_norm_bound_ten_times_too_small_is_flagged_and_the_true_one_is_not() {
    let mut flagged_rounds = Vec::new();
    for seed in 0..3 {
        let problem = problem(seed);
        let truth = problem.rkhs_norm();
        for (b, expect_flag) in [(truth, false), (truth / 10.0, true)] {
            let mut cmm = UcbAgent::new(Cmm::new(*problem.kernel(), params(b)).unwrap());
            let cmm_first = first_flag(&problem, &mut cmm, |c| c.diagnostics().empty_set());
            let mut dmm = UcbAgent::new(Dmm::new(*problem.kernel(), params(b)).unwrap());
            let dmm_first = first_flag(&problem, &mut dmm, |d| d.diagnostics().empty_set());
            let mut amm = UcbAgent::new(Amm::new(*problem.kernel(), params(b)).unwrap());
            let amm_first = first_flag(&problem, &mut amm, |a| a.diagnostics().empty_set());
            println!(
                "seed {seed} B = {b:.3}: first flagged round CMM {cmm_first:?}, DMM {dmm_first:?}, AMM {amm_first:?}"
            );
            assert_eq!(
                cmm_first.is_some(),
                expect_flag,
                "CMM, seed {seed}, B = {b}"
            );
            assert_eq!(
                dmm_first.is_some(),
                expect_flag,
                "DMM, seed {seed}, B = {b}"
            );
            // AMM checks a0 only, where R̃² > 0 always (Lemma C.2): it cannot tell.
            assert_eq!(amm_first, None);
            let (_, amm_radius) = amm.bound().diagnostics().smallest_radius.unwrap();
            assert!(amm_radius > 0.0);
            if expect_flag {
                // The exact check over all a sees it no later than DMM's grid does.
                assert!(cmm_first.unwrap() <= dmm_first.unwrap());
                flagged_rounds.push((cmm_first.unwrap(), dmm_first.unwrap()));
            }
        }
    }
    println!("first flagged rounds (CMM, DMM) with B/10: {flagged_rounds:?}");
}

#[test]
fn cmm_finds_the_smallest_radius_over_all_regularisers() {
    let problem = problem(4);
    for b in [problem.rkhs_norm(), problem.rkhs_norm() / 10.0] {
        let mut cmm = Cmm::new(*problem.kernel(), params(b)).unwrap();
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        for t in 0..40 {
            let round = problem.round(t);
            let x = round.arm(t % 7).to_vec();
            let y = round.values[t % 7] + round.noise;
            cmm.observe(&x, y).unwrap();
            inputs.push(x);
            targets.push(y);
        }
        let (a, exact) = cmm.diagnostics().smallest_radius.unwrap();
        let grid = brute_force_smallest_radius(&cmm, b, &inputs, &targets);
        println!("B = {b:.3}: min R̃² = {exact:.6e} at a = {a:.3e}; dense grid {grid:.6e}");
        // No grid value is below the exact minimum, and the grid comes close to it.
        assert!(exact <= grid + 1e-9 * grid.abs().max(1.0));
        assert!(grid - exact <= 1e-3 * grid.abs().max(1e-3));
        assert_eq!(exact < 0.0, b < problem.rkhs_norm());
    }
}

#[test]
fn crossed_bounds_come_with_an_empty_set() {
    let problem = problem(5);
    let b = problem.rkhs_norm() / 10.0;
    let mut dmm = UcbAgent::new(Dmm::new(*problem.kernel(), params(b)).unwrap());
    let mut cmm = Cmm::new(*problem.kernel(), params(b)).unwrap();
    let grid: Vec<[f64; 2]> = (0..100)
        .map(|i| [(i % 10) as f64 / 9.0, (i / 10) as f64 / 9.0])
        .collect();
    let mut crossed_rounds = 0;
    for t in 0..T {
        let round = problem.round(t);
        let i = dmm.select_from(&round.arms()).unwrap();
        let y = round.values[i] + round.noise;
        dmm.update(round.arm(i), y).unwrap();
        cmm.observe(round.arm(i), y).unwrap();
        let bounds = dmm.bound().bounds(&grid).unwrap();
        if !bounds.crossed().is_empty() {
            crossed_rounds += 1;
            // LCB > UCB is impossible when the set is not empty; the exact check must agree.
            assert!(cmm.diagnostics().empty_set(), "round {t}");
        }
        let exact = cmm.bounds(&grid).unwrap();
        if !exact.crossed().is_empty() {
            assert!(cmm.diagnostics().empty_set(), "round {t}");
        }
    }
    println!("DMM crossed on the grid in {crossed_rounds} of {T} rounds");
    assert!(crossed_rounds > 0, "B/10 should produce crossed bounds");
}

#[test]
fn refusing_agents_refuse_without_changing() {
    let problem = problem(6);
    let b = problem.rkhs_norm() / 10.0;
    let mut agent = UcbAgent::new(Cmm::new(*problem.kernel(), params(b)).unwrap())
        .with_misspecification(Misspecification::Refuse);
    let probes = [[0.2, 0.3], [0.8, 0.9]];
    for t in 0..T {
        let round = problem.round(t);
        match agent.select_from(&round.arms()) {
            Ok(i) => agent
                .update(round.arm(i), round.values[i] + round.noise)
                .unwrap(),
            Err(Error::Misspecified {
                regulariser,
                radius_sq,
            }) => {
                assert!(radius_sq < 0.0 && regulariser >= 0.0);
                assert_eq!(agent.bound().len(), t);
                let before = agent.bound().bounds(&probes).unwrap();
                assert!(agent.select_from(&round.arms()).is_err());
                assert_eq!(agent.bound().bounds(&probes).unwrap(), before);
                println!("refused at round {t}: R̃² = {radius_sq:.3e} at a = {regulariser:.3e}");
                return;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    panic!("never refused with B ten times too small");
}
