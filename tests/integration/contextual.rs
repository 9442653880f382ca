//! The contextual bandits of Zenati et al. 2022 §5 / App. F.2 and the contextual agent API:
//! closed-form reward values, reproducible rounds, zero regret for an oracle, and bad input
//! that is rejected without changing the agent.

use approx::assert_abs_diff_eq;
use kernel_bandits::Result;
use kernel_bandits::env::{ContextualConfig, ContextualEnv, ContextualProblem, ContextualRound};
use kernel_bandits::points::{ContextualArms, join};
use kernel_bandits::prelude::*;
use nalgebra::DMatrix;

fn problem(env: ContextualEnv, seed: u64) -> ContextualProblem {
    ContextualProblem::new(env, ContextualConfig::default(), seed).unwrap()
}

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(1.0)
        .delta(0.05)
        .scale(1.0)
}

/// The paper's kernel: Gaussian on the joint vector with ℓ = 0.1 (Zenati et al. 2022 §5).
fn ucb_agent() -> UcbAgent<Ay<Rbf>> {
    UcbAgent::new(Ay::new(Rbf::new(0.1).unwrap(), params()).unwrap())
}

/// Knows the true reward function and plays the best offered action (lowest index on ties).
struct Oracle<'a> {
    problem: &'a ContextualProblem,
}

impl BanditAgent for Oracle<'_> {
    fn name(&self) -> String {
        "oracle".into()
    }

    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        let p = self.problem.env().context_dim();
        let mut best = (0, f64::NEG_INFINITY);
        for i in 0..arms.len() {
            let s = arms.to_vec(i);
            let value = self.problem.value(&s[..p], &s[p..])?;
            if value > best.1 {
                best = (i, value);
            }
        }
        Ok(best.0)
    }

    fn update(&mut self, _x: &[f64], _y: f64) -> Result<()> {
        Ok(())
    }
}

/// Always plays the same index, whatever is offered.
struct Fixed(usize);

impl BanditAgent for Fixed {
    fn name(&self) -> String {
        "fixed".into()
    }
    fn select_from(&mut self, _arms: &Points<'_>) -> Result<usize> {
        Ok(self.0)
    }
    fn update(&mut self, _x: &[f64], _y: f64) -> Result<()> {
        Ok(())
    }
}

#[test]
fn environments_have_names_dimensions_and_parse() {
    let names: Vec<_> = ContextualEnv::ALL.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["bump", "chessboard", "step_diagonal"]);
    let dims: Vec<_> = ContextualEnv::ALL.iter().map(|e| e.context_dim()).collect();
    assert_eq!(dims, [5, 1, 1]);
    for env in ContextualEnv::ALL {
        assert_eq!(env.action_dim(), 1);
        assert_eq!(env.name().parse::<ContextualEnv>(), Ok(env));
        assert_eq!(env.to_string(), env.name());
    }
    assert_eq!("squares".parse(), Ok(ContextualEnv::Chessboard));
    assert_eq!("step_diag".parse(), Ok(ContextualEnv::StepDiagonal));
    let err = "Bump".parse::<ContextualEnv>().unwrap_err();
    assert!(err.to_string().contains("`Bump`"), "{err}");
    assert!("".parse::<ContextualEnv>().is_err());
}

/// Every quarter cell of the chessboard, at its centre (Zenati et al. 2022 §5).
#[test]
fn chessboard_has_the_value_of_every_cell() {
    let p = problem(ContextualEnv::Chessboard, 1);
    // expected[i][j]: context in quarter i, action in quarter j.
    let expected = [
        [0.0, 0.5, 0.0, 0.0],
        [1.0, 0.0, 1.0, 0.0],
        [0.0, 0.5, 0.0, 0.5],
        [0.0, 0.0, 1.0, 0.0],
    ];
    for (i, row) in expected.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let (x, a) = (0.125 + 0.25 * i as f64, 0.125 + 0.25 * j as f64);
            assert_eq!(p.value(&[x], &[a]).unwrap(), v, "x = {x}, a = {a}");
        }
    }
}

/// Cells are [k/4, (k+1)/4), the last one closed at 1, in both coordinates (the authors'
/// `squares.py`); outside [0, 1]² the reward is 0.
#[test]
fn chessboard_cells_are_half_open_and_closed_at_one() {
    let p = problem(ContextualEnv::Chessboard, 1);
    let cases = [
        // (x, a, r)
        (0.25, 0.0, 1.0),         // x = 0.25 opens the second row
        (0.25 - 1e-12, 0.0, 0.0), // ... and is not in the first
        (0.5, 0.0, 0.0),          // x = 0.5 closes it
        (0.25, 0.25, 0.0),        // a = 0.25 leaves the first column
        (0.25, 0.5, 1.0),         // a = 0.5 opens the third column
        (0.25, 0.75, 0.0),        // a = 0.75 closes it
        (0.0, 0.25, 0.5),         // corner of the first 0.5 cell
        (0.0, 0.5, 0.0),          // ... whose action range is open at 0.5
        (0.5, 0.25, 0.5),         // x = 0.5 opens the third row
        (0.5, 0.75, 0.5),         // a = 0.75 opens the last column
        (0.5, 1.0, 0.5),          // ... which is closed at a = 1
        (0.75, 0.5, 1.0),         // x = 0.75 opens the last row
        (1.0, 0.5, 1.0),          // ... which is closed at x = 1
        (1.0, 0.75, 0.0),         // a = 0.75 leaves that cell
        (0.75, 0.75, 0.0),        // the (3, 3) cell is empty
        (0.3, -1e-12, 0.0),       // outside [0, 1]
        (0.6, 1.0 + 1e-12, 0.0),  // outside [0, 1]
        (1.0 + 1e-12, 0.6, 0.0),  // outside [0, 1]
    ];
    for (x, a, r) in cases {
        assert_eq!(p.value(&[x], &[a]).unwrap(), r, "x = {x}, a = {a}");
    }
}

/// 1 in the open band |x − (a + 0.15)| < 0.1, 0.5 in |x − (a − 0.15)| < 0.1, 0 elsewhere.
#[test]
fn step_diagonal_bands_and_their_boundaries() {
    let p = problem(ContextualEnv::StepDiagonal, 1);
    let value = |x: f64, a: f64| p.value(&[x], &[a]).unwrap();
    for a in [0.1, 0.4, 0.5, 0.85] {
        assert_eq!(value(a + 0.15, a), 1.0, "upper band centre, a = {a}");
        assert_eq!(value(a - 0.15, a), 0.5, "lower band centre, a = {a}");
        assert_eq!(value(a, a), 0.0, "diagonal, a = {a}");
        assert_eq!(value(a + 0.15 + 0.0999, a), 1.0);
        assert_eq!(value(a + 0.15 - 0.0999, a), 1.0);
        assert_eq!(value(a + 0.15 + 0.1001, a), 0.0);
        assert_eq!(value(a - 0.15 - 0.0999, a), 0.5);
        assert_eq!(value(a - 0.15 + 0.0999, a), 0.5);
        assert_eq!(value(a - 0.15 - 0.1001, a), 0.0);
    }
    // Points where |x − (a ± 0.15)| evaluates to exactly 0.1: the bands are open.
    assert_eq!((0.25f64 - (0.0 + 0.15)).abs(), 0.1);
    assert_eq!(value(0.25, 0.0), 0.0);
    assert_eq!((0.1f64 - (0.05 + 0.15)).abs(), 0.1);
    assert_eq!(value(0.1, 0.05), 0.0);
    assert_eq!((0.04f64 - (0.09 - 0.15)).abs(), 0.1);
    assert_eq!(value(0.04, 0.09), 0.0);
}

/// r(x, a) = max(0, 1 − |a − a*| − ⟨x − x*, w*⟩): 1 at (x*, a*), linear around it, clipped at 0.
#[test]
fn bump_peaks_at_one_and_clips_at_zero() {
    for seed in [1, 2, 3] {
        let p = problem(ContextualEnv::Bump, seed);
        let bump = *p.bump().unwrap();
        assert!(p.anchors().to_vec(0).len() == 1);
        let anchors: Vec<f64> = (0..10).map(|i| p.anchors().to_vec(i)[0]).collect();
        assert!(anchors.contains(&bump.a_star), "a* must be an anchor");
        assert!(bump.x_star.iter().all(|v| (0.0..1.0).contains(v)));
        assert!(bump.w_star.iter().all(|v| (-1.0..1.0).contains(v)));

        let (x_star, a_star) = (bump.x_star, bump.a_star);
        assert_eq!(p.value(&x_star, &[a_star]).unwrap(), 1.0);
        assert_abs_diff_eq!(
            p.value(&x_star, &[a_star + 0.3]).unwrap(),
            0.7,
            epsilon = 1e-12
        );
        assert_abs_diff_eq!(
            p.value(&x_star, &[a_star - 0.2]).unwrap(),
            0.8,
            epsilon = 1e-12
        );
        // Along w*: ⟨x − x*, w*⟩ = s‖w*‖².
        let w_sq: f64 = bump.w_star.iter().map(|w| w * w).sum();
        let along = |s: f64| -> Vec<f64> {
            x_star
                .iter()
                .zip(&bump.w_star)
                .map(|(x, w)| x + s * w)
                .collect()
        };
        assert_abs_diff_eq!(
            p.value(&along(0.5 / w_sq), &[a_star]).unwrap(),
            0.5,
            epsilon = 1e-12
        );
        assert_abs_diff_eq!(
            p.value(&along(-0.5 / w_sq), &[a_star]).unwrap(),
            1.5,
            epsilon = 1e-12
        );
        // Clipping: the linear part goes negative, the reward stays 0.
        assert_eq!(p.value(&along(2.0 / w_sq), &[a_star]).unwrap(), 0.0);
        assert_eq!(p.value(&x_star, &[a_star + 1.5]).unwrap(), 0.0);
        assert_eq!(p.value(&along(0.5 / w_sq), &[a_star + 0.7]).unwrap(), 0.0);
    }
    assert!(problem(ContextualEnv::Chessboard, 1).bump().is_none());
    assert!(problem(ContextualEnv::StepDiagonal, 1).bump().is_none());
}

#[test]
fn value_rejects_bad_input() {
    let bump = problem(ContextualEnv::Bump, 1);
    assert!(matches!(
        bump.value(&[0.5], &[0.5]),
        Err(Error::DimensionMismatch {
            expected: 5,
            got: 1
        })
    ));
    assert!(matches!(
        bump.value(&[0.5; 5], &[0.5, 0.5]),
        Err(Error::DimensionMismatch {
            expected: 1,
            got: 2
        })
    ));
    assert!(matches!(
        bump.value(&[0.5; 5], &[]),
        Err(Error::ZeroDimension)
    ));
    let board = problem(ContextualEnv::Chessboard, 1);
    assert!(matches!(
        board.value(&[f64::NAN], &[0.5]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        board.value(&[0.5], &[f64::INFINITY]),
        Err(Error::NonFinite { .. })
    ));
}

#[test]
fn anchors_are_distinct_points_of_the_grid() {
    for env in ContextualEnv::ALL {
        for seed in 0..20 {
            let p = problem(env, seed);
            let anchors = p.anchors();
            assert_eq!((anchors.len(), anchors.dim()), (10, 1));
            let mut grid: Vec<usize> = (0..anchors.len())
                .map(|i| {
                    let a = anchors.to_vec(i)[0];
                    let k = (a * 100.0).round();
                    assert!((0.0..=99.0).contains(&k), "{a} is off the grid");
                    assert_eq!(a, k / 100.0, "{a} is not exactly k/100");
                    k as usize
                })
                .collect();
            grid.sort_unstable();
            grid.dedup();
            assert_eq!(grid.len(), 10, "anchors repeat for seed {seed}");
        }
    }
    // All 100 anchors: the whole grid.
    let config = ContextualConfig {
        anchors: 100,
        ..ContextualConfig::default()
    };
    let full = ContextualProblem::new(ContextualEnv::StepDiagonal, config, 4).unwrap();
    let mut grid: Vec<f64> = (0..100).map(|i| full.anchors().to_vec(i)[0]).collect();
    grid.sort_by(f64::total_cmp);
    let expected: Vec<f64> = (0..100).map(|k| k as f64 / 100.0).collect();
    assert_eq!(grid, expected);
    // Different seeds draw different anchors.
    let anchor_set = |seed| {
        let round = problem(ContextualEnv::Chessboard, seed).round(0);
        (0..10).map(|i| round.action(i)[0]).collect::<Vec<_>>()
    };
    assert_ne!(anchor_set(1), anchor_set(2));
}

#[test]
fn config_is_validated() {
    for anchors in [0, 101] {
        let config = ContextualConfig {
            anchors,
            ..ContextualConfig::default()
        };
        assert!(matches!(
            ContextualProblem::new(ContextualEnv::Bump, config, 1),
            Err(Error::InvalidParameter {
                name: "anchors",
                ..
            })
        ));
    }
    for noise_sd in [-0.1, f64::NAN, f64::INFINITY] {
        let config = ContextualConfig {
            noise_sd,
            ..ContextualConfig::default()
        };
        assert!(matches!(
            ContextualProblem::new(ContextualEnv::Bump, config, 1),
            Err(Error::InvalidParameter {
                name: "noise_sd",
                ..
            })
        ));
    }
    let defaults = ContextualConfig::default();
    assert_eq!((defaults.anchors, defaults.noise_sd), (10, 0.1));
}

/// A round is a pure function of (seed, t): the same seed replays it in any order, another
/// seed or round differs. Its arms are [context ‖ anchor] and its values the true means.
#[test]
fn rounds_are_reproducible_and_consistent() {
    for env in ContextualEnv::ALL {
        let p = problem(env, 7);
        let q = problem(env, 7);
        let later: Vec<ContextualRound> = (0..5).rev().map(|t| q.round(t)).collect();
        for t in 0..5 {
            assert_eq!(p.round(t), later[4 - t]);
        }
        assert_ne!(p.round(0), p.round(1));
        assert_ne!(p.round(0), problem(env, 8).round(0));

        let round = p.round(3);
        let ctx_dim = env.context_dim();
        assert_eq!(round.context.len(), ctx_dim);
        assert!(round.context.iter().all(|v| (0.0..1.0).contains(v)));
        assert_eq!(round.arms().len(), 10);
        assert_eq!(round.arms().dim(), ctx_dim + 1);
        assert_eq!(round.as_points().unwrap().len(), 10);
        for i in 0..10 {
            let action = p.anchors().to_vec(i);
            assert_eq!(round.actions().to_vec(i), action);
            assert_eq!(round.action(i), action.as_slice());
            assert_eq!(round.arm(i), join(&round.context, &action).unwrap());
            assert_eq!(round.arms().to_vec(i), round.arm(i));
            assert_eq!(round.values[i], p.value(&round.context, &action).unwrap());
        }
        let best = round.values.iter().copied().fold(f64::MIN, f64::max);
        assert_eq!(round.best_value(), best);
    }
    let silent = ContextualConfig {
        noise_sd: 0.0,
        ..ContextualConfig::default()
    };
    let p = ContextualProblem::new(ContextualEnv::Bump, silent, 1).unwrap();
    assert_eq!(p.round(0).noise, 0.0);
}

#[test]
fn oracle_has_zero_regret() {
    for env in ContextualEnv::ALL {
        let p = problem(env, 21);
        let trace = p.run(&mut Oracle { problem: &p }, 200).unwrap();
        assert_eq!(trace.total(), 0.0, "{env}");
        for (t, (&i, &reward)) in trace.chosen.iter().zip(&trace.rewards).enumerate() {
            let round = p.round(t);
            assert_eq!(round.values[i], round.best_value());
            assert_eq!(reward, round.values[i] + round.noise);
        }
    }
}

#[test]
fn random_agent_runs() {
    for env in ContextualEnv::ALL {
        let p = problem(env, 5);
        let trace = p.run(&mut RandomAgent::new(3), 100).unwrap();
        assert_eq!(trace.chosen.len(), 100);
        assert!(trace.chosen.iter().all(|&i| i < 10));
        assert!(trace.regret.iter().all(|&r| r >= 0.0));
        assert_eq!(trace.cumulative().last().copied(), Some(trace.total()));
    }
}

#[test]
fn run_rejects_an_index_outside_the_arms() {
    let p = problem(ContextualEnv::Chessboard, 1);
    assert!(matches!(
        p.run(&mut Fixed(10), 3),
        Err(Error::ArmOutOfRange {
            index: 10,
            arms: 10
        })
    ));
}

/// `select_contextual`/`update_contextual` on the round's context and anchors make the same
/// choices as `run` on the joint points, for a concrete agent and a boxed one.
#[test]
fn ucb_agent_through_the_contextual_api_matches_run() {
    let horizon = 40;
    for env in ContextualEnv::ALL {
        let p = problem(env, 9);
        let reference = p.run(&mut ucb_agent(), horizon).unwrap();

        let mut agent = ucb_agent();
        let mut boxed: Box<dyn BanditAgent> = Box::new(ucb_agent());
        let mut chosen = Vec::new();
        for t in 0..horizon {
            let round = p.round(t);
            let anchors = round.actions();
            let i = agent.select_contextual(&round.context, &anchors).unwrap();
            let j = boxed.select_contextual(&round.context, &anchors).unwrap();
            assert_eq!(i, j);
            let reward = round.values[i] + round.noise;
            agent
                .update_contextual(&round.context, round.action(i), reward)
                .unwrap();
            boxed
                .update_contextual(&round.context, round.action(i), reward)
                .unwrap();
            chosen.push(i);
        }
        assert_eq!(chosen, reference.chosen, "{env}");
        assert_eq!(agent.bound().len(), horizon);
        assert_eq!(agent.bound().dim(), Some(env.context_dim() + 1));
    }
}

/// Joint points do not depend on the layout the actions come in.
#[test]
fn contextual_arms_join_any_layout() {
    let context = [0.2, 0.4];
    let rows = vec![vec![0.1, 0.9], vec![0.5, 0.5], vec![0.7, 0.3]];
    let arrays = [[0.1, 0.9], [0.5, 0.5], [0.7, 0.3]];
    let matrix = DMatrix::from_row_slice(3, 2, &[0.1, 0.9, 0.5, 0.5, 0.7, 0.3]);
    let expected = ContextualArms::new(&context, &rows).unwrap();
    assert_eq!(ContextualArms::new(&context, &arrays).unwrap(), expected);
    assert_eq!(ContextualArms::new(&context, &matrix).unwrap(), expected);
    assert_eq!(
        ContextualArms::new(&context, &rows.as_points().unwrap()).unwrap(),
        expected
    );
    assert_eq!(
        (
            expected.len(),
            expected.is_empty(),
            expected.dim(),
            expected.context_dim(),
            expected.action_dim()
        ),
        (3, false, 4, 2, 2)
    );
    assert_eq!(expected.context(), &context);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(expected.joint(i), join(&context, row).unwrap());
        assert_eq!(expected.action(i), row.as_slice());
        assert_eq!(expected.as_points().unwrap().to_vec(i), expected.joint(i));
    }

    assert!(matches!(
        ContextualArms::new(&[], &rows),
        Err(Error::ZeroDimension)
    ));
    assert!(matches!(
        ContextualArms::new(&[0.1, f64::NAN], &rows),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        ContextualArms::new(&context, &Vec::<Vec<f64>>::new()),
        Err(Error::NoArms)
    ));
    assert!(matches!(
        ContextualArms::new(&context, &Vec::<[f64; 1]>::new()),
        Err(Error::NoArms)
    ));
    assert!(matches!(
        ContextualArms::new(&context, &vec![vec![0.1], vec![0.2, 0.3]]),
        Err(Error::RaggedPoints {
            index: 1,
            expected: 1,
            got: 2
        })
    ));
    assert!(matches!(
        ContextualArms::new(&context, &[[0.1], [f64::INFINITY]]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(join(&[], &[0.1]), Err(Error::ZeroDimension)));
    assert!(matches!(join(&[0.1], &[]), Err(Error::ZeroDimension)));
    assert!(matches!(
        join(&[0.1], &[f64::NEG_INFINITY]),
        Err(Error::NonFinite { .. })
    ));
}

/// Bit-exact state of the agent's bound: its size and its bounds at probe joint points.
fn snapshot(agent: &UcbAgent<Ay<Rbf>>) -> (usize, Vec<u64>) {
    let probes = [[0.1, 0.2], [0.5, 0.5], [0.9, 0.3]];
    let b = agent.bound().bounds(&probes).unwrap();
    let bits = b
        .mean
        .iter()
        .chain(&b.lcb)
        .chain(&b.ucb)
        .map(|v| v.to_bits())
        .collect();
    (agent.bound().len(), bits)
}

#[test]
fn bad_contextual_input_is_rejected_and_leaves_the_agent_unchanged() {
    let p = problem(ContextualEnv::StepDiagonal, 2);
    let mut agent = ucb_agent();
    p.run(&mut agent, 5).unwrap();
    let before = snapshot(&agent);
    assert_eq!(before.0, 5);
    let actions = [[0.1], [0.5], [0.9]];

    let select_errors = [
        agent.select_contextual(&[f64::NAN], &actions).unwrap_err(),
        agent.select_contextual(&[], &actions).unwrap_err(),
        agent
            .select_contextual(&[0.5], &[[0.1, 0.2], [0.3, 0.4]])
            .unwrap_err(),
        agent.select_contextual(&[0.5, 0.5], &actions).unwrap_err(),
        agent
            .select_contextual(&[0.5], &Vec::<Vec<f64>>::new())
            .unwrap_err(),
        agent
            .select_contextual(&[0.5], &Vec::<[f64; 1]>::new())
            .unwrap_err(),
        agent
            .select_contextual(&[0.5], &[[0.1], [f64::NAN]])
            .unwrap_err(),
    ];
    assert!(matches!(select_errors[0], Error::NonFinite { .. }));
    assert!(matches!(select_errors[1], Error::ZeroDimension));
    assert!(matches!(
        select_errors[2],
        Error::DimensionMismatch {
            expected: 2,
            got: 3
        }
    ));
    assert!(matches!(
        select_errors[3],
        Error::DimensionMismatch {
            expected: 2,
            got: 3
        }
    ));
    assert!(matches!(select_errors[4], Error::NoArms));
    assert!(matches!(select_errors[5], Error::NoArms));
    assert!(matches!(select_errors[6], Error::NonFinite { .. }));
    assert_eq!(snapshot(&agent), before);

    let update_errors = [
        agent
            .update_contextual(&[f64::NAN], &[0.5], 1.0)
            .unwrap_err(),
        agent
            .update_contextual(&[0.5], &[0.5, 0.1], 1.0)
            .unwrap_err(),
        agent.update_contextual(&[0.5], &[], 1.0).unwrap_err(),
        agent.update_contextual(&[], &[0.5], 1.0).unwrap_err(),
        agent
            .update_contextual(&[0.5], &[0.5], f64::NAN)
            .unwrap_err(),
    ];
    assert!(matches!(update_errors[0], Error::NonFinite { .. }));
    assert!(matches!(
        update_errors[1],
        Error::DimensionMismatch {
            expected: 2,
            got: 3
        }
    ));
    assert!(matches!(update_errors[2], Error::ZeroDimension));
    assert!(matches!(update_errors[3], Error::ZeroDimension));
    assert!(matches!(update_errors[4], Error::NonFinite { .. }));
    assert_eq!(snapshot(&agent), before);

    // Still usable: a good call goes through.
    let i = agent.select_contextual(&[0.5], &actions).unwrap();
    agent.update_contextual(&[0.5], &actions[i], 0.3).unwrap();
    assert_eq!(agent.bound().len(), 6);
}

/// The paper's setting learns on the 2-D environments: kernel UCB (AY bound, Gaussian kernel
/// ℓ = 0.1 on (x, a)) suffers less than half the regret of random play over T = 500 rounds.
/// (On Bump, with its 6-D joint space, ℓ = 0.1 is too local to learn much in 500 rounds.)
#[test]
fn ucb_learns_the_two_dimensional_environments() {
    for env in [ContextualEnv::Chessboard, ContextualEnv::StepDiagonal] {
        let p = problem(env, 31);
        let ucb = p.run(&mut ucb_agent(), 500).unwrap().total();
        let random = p.run(&mut RandomAgent::new(4), 500).unwrap().total();
        assert!(
            ucb * 1.5 < random,
            "{env}: ucb {ucb:.1}, random {random:.1}"
        );
    }
}

/// On Bump a smoother joint kernel learns: a product of a context kernel (ℓ = 2, the reward is
/// linear in x) and an action kernel (ℓ = 0.5) over T = 500 rounds.
#[test]
fn product_kernel_learns_bump() {
    let p = problem(ContextualEnv::Bump, 31);
    let kernel = Rbf::new(2.0)
        .unwrap()
        .on(0..5)
        .unwrap()
        .times(Rbf::new(0.5).unwrap().on(5..6).unwrap());
    let mut agent = UcbAgent::new(Ay::new(kernel, params()).unwrap());
    let ucb = p.run(&mut agent, 500).unwrap().total();
    let random = p.run(&mut RandomAgent::new(4), 500).unwrap().total();
    assert!(ucb * 2.0 < random, "bump: ucb {ucb:.1}, random {random:.1}");
}
