//! `kbandit reproduce batch`: batches of q evaluations with GP-UCB-PE (Contal, Buffoni,
//! Robicquet & Vayatis 2013, Alg. 1) on the synthetic problem of Flynn & Reeb 2024 §7.
//!
//! Each repetition draws one function f = b Σᵢ wᵢ k(·, zᵢ) with ‖f‖_H = B = 10 (d = 3,
//! N(0, σ²) noise, σ = 0.1, δ = 0.01, the paper's scale c for T evaluations), and every method
//! and every batch size q plays it in two settings:
//!
//! - `box`: the agent searches the box [0, 1]^d with `select_batch_in` (q points per round,
//!   all registered as pending, then all updated); the regret of an evaluation is
//!   f(x*) − f(x), against the true maximum of f over the box located by
//!   [`kernel_bandits::env::ContinuousProblem`] (dense space-filling search, then refinement of
//!   the best candidates with the gradient of f).
//! - `arms`: each round offers fresh arms (100 by default), one arm set shared by the q points
//!   of the round (`select_batch`); the regret of an evaluation is against that round's best
//!   arm. With q = 1 this is exactly the protocol of `reproduce table1`.
//!
//! Evaluation n (0-based, over the whole run) gets the noise of round n of the problem, so
//! every method and every q sees the same noise sequence, and round r's arm set is the same for
//! every method and q. Cumulative regret is reported against the number of evaluations (the
//! cost when evaluations are what is paid for) and against the number of rounds (the cost when
//! the q evaluations of a round run in parallel).

use std::path::Path;
use std::time::Instant;

use clap::{Args, ValueEnum};
use kernel_bandits::agent::{BatchRule, ContinuousOptions};
use kernel_bandits::bound::BoundConfig;
use kernel_bandits::continuous::BoxDomain;
use kernel_bandits::env::{ContinuousProblem, OptimumSearch};
use kernel_bandits::prelude::*;
use serde::Serialize;

use super::table1::{Method, RANDOM_AGENT_LABEL};
use super::{
    RepetitionRows, RunOptions, announce, create_dir, derive_seed, first_repeat, mean_std,
    run_jobs, write_json, write_repetitions_csv,
};
use crate::kernels::KernelName;
use crate::plot::{XyCurve, xy_plot};

/// Arguments of `kbandit reproduce batch`.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// Kernel of the function and of the bounds (one with gradients: rbf, matern52, matern32).
    #[arg(long, value_enum, default_value_t = KernelName::Rbf)]
    kernel: KernelName,
    /// Length-scale ℓ.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Input dimension d.
    #[arg(long, default_value_t = 3)]
    dims: usize,
    /// Batch sizes q (comma-separated); each must divide the number of evaluations.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 4, 16])]
    q: Vec<usize>,
    /// Methods (comma-separated): amm, dmm, ay, igp, random; cmm only where the library has
    /// CMM-UCB's gradients and pending variance.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::Amm, Method::Dmm])]
    methods: Vec<Method>,
    /// Settings (comma-separated): `box` (search [0, 1]^d) and `arms` (fresh arms per round).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [SettingName::Continuous, SettingName::Arms])]
    settings: Vec<SettingName>,
    /// Evaluations T per run (T/q rounds of q evaluations).
    #[arg(long, default_value_t = 512)]
    evaluations: usize,
    /// Repetitions (problems).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Arms per round in the `arms` setting.
    #[arg(long, default_value_t = 100)]
    arms: usize,
    /// Space-filling starts scored per point chosen in the box (the library's default is 1024).
    #[arg(long, default_value_t = 128)]
    starts: usize,
    /// Best starts refined per point chosen in the box (the library's default is 5; each
    /// refinement of DMM's UCB near a well-sampled maximum can take hundreds of evaluations).
    #[arg(long, default_value_t = 1)]
    refine: usize,
    /// The most quasi-Newton iterations of one refinement in the box.
    #[arg(long, default_value_t = ContinuousOptions::default().max_iterations)]
    max_iterations: usize,
    /// The rule for the further points of a round in the box: `exploration` (GP-UCB-PE, the
    /// rule this experiment reproduces; also what the arms use) or `pending-ucb` (GP-BUCB, the
    /// library's default for boxes).
    #[arg(long, value_enum, default_value_t = BatchRuleName::Exploration)]
    batch_rule: BatchRuleName,
    #[command(flatten)]
    run: RunOptions,
}

/// The rule for the further points of a round in the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum BatchRuleName {
    /// GP-UCB-PE (Contal et al. 2013, Alg. 1).
    Exploration,
    /// GP-BUCB (Desautels, Krause & Burdick 2014, Eq. 5).
    PendingUcb,
}

impl From<BatchRuleName> for BatchRule {
    fn from(rule: BatchRuleName) -> Self {
        match rule {
            BatchRuleName::Exploration => BatchRule::Exploration,
            BatchRuleName::PendingUcb => BatchRule::PendingUcb,
        }
    }
}

/// Where the agent chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum SettingName {
    /// The box [0, 1]^d.
    #[value(name = "box")]
    Continuous,
    /// Fresh finite arm sets.
    Arms,
}

impl SettingName {
    fn tag(self) -> &'static str {
        match self {
            Self::Continuous => "box",
            Self::Arms => "arms",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::Continuous => "box [0, 1]^d",
            Self::Arms => "fresh arms",
        }
    }
}

/// Label of the problem seeds of this experiment.
const BATCH_LABEL: u64 = 0x0062_6174_6368; // "batch"
/// Label of the seed of the agents' space-filling starts.
const STARTS_LABEL: u64 = 0x7374_6172_7473; // "starts"
/// The paper's noise σ, RKHS norm B (of f, and assumed by the bounds) and δ.
const SIGMA: f64 = 0.1;
const NORM: f64 = 10.0;
const DELTA: f64 = 0.01;
/// The problem seed of repetition `rep`.
fn problem_seed(args: &BatchArgs, rep: usize) -> u64 {
    derive_seed(
        args.run.seed,
        &[
            BATCH_LABEL,
            args.kernel as u64,
            args.lengthscale.to_bits(),
            args.dims as u64,
            rep as u64,
        ],
    )
}

/// The problem of `seed`: f with the paper's ‖f‖_H = 10, σ = 0.1 and `args.arms` arms per round.
fn problem<K: Kernel>(
    kernel: K,
    args: &BatchArgs,
    seed: u64,
) -> Result<SyntheticProblem<K>, Error> {
    let config = SyntheticConfig {
        dim: args.dims,
        arms: args.arms,
        norm_bound: NORM,
        noise_sd: SIGMA,
        ..SyntheticConfig::default()
    };
    SyntheticProblem::new(kernel, config, seed)
}

/// The maximum of f over the box and where it is, located by
/// [`kernel_bandits::env::ContinuousProblem`] (the default [`OptimumSearch`]: 2¹⁵ space-filling
/// points, the best 16 refined with the exact gradient of f).
fn box_optimum<K: Kernel>(problem: SyntheticProblem<K>) -> Result<(Vec<f64>, f64), Error> {
    let continuous = ContinuousProblem::from_synthetic(problem, &OptimumSearch::default())?;
    Ok((continuous.optimum().point.clone(), continuous.max_value()))
}

/// One run's outcome: the instantaneous regret of every evaluation.
struct Run {
    regret: Vec<f64>,
    wall_time_s: f64,
}

/// The agent of `method` with the paper's parameters for T evaluations.
fn agent<K: Kernel + Clone + 'static>(
    kernel: K,
    args: &BatchArgs,
    method: Method,
    seed: u64,
) -> Result<Box<dyn BanditAgent>, Error> {
    let params = BoundParams::paper_defaults(&kernel, args.dims, args.evaluations)
        .sigma(SIGMA)
        .norm_bound(NORM)
        .delta(DELTA);
    Ok(match method.bound() {
        Some(kind) => {
            let config = BoundConfig::new().params(params);
            let options = ContinuousOptions {
                starts: args.starts,
                refine: args.refine,
                seed: derive_seed(seed, &[STARTS_LABEL]),
                max_iterations: args.max_iterations,
                batch_rule: args.batch_rule.into(),
            };
            Box::new(UcbAgent::new(kind.build(kernel, &config)?).with_continuous(options)?)
        }
        None => Box::new(RandomAgent::new(derive_seed(seed, &[RANDOM_AGENT_LABEL]))),
    })
}

/// Plays `method` with batches of `q` in `setting` on the problem of `seed`; `optimum` is the
/// maximum of f over the box (used in the `box` setting).
fn play<K: Kernel + Clone + 'static>(
    kernel: K,
    args: &BatchArgs,
    setting: SettingName,
    method: Method,
    q: usize,
    seed: u64,
    optimum: f64,
) -> Result<Vec<f64>, Error> {
    let problem = problem(kernel.clone(), args, seed)?;
    let mut agent = agent(kernel, args, method, seed)?;
    let rounds = args.evaluations / q;
    let mut regret = Vec::with_capacity(args.evaluations);
    match setting {
        SettingName::Continuous => {
            let domain = BoxDomain::unit(args.dims)?;
            for r in 0..rounds {
                let batch = agent.select_batch_in(&domain, q)?;
                let mut rewards = Vec::with_capacity(q);
                for (j, choice) in batch.iter().enumerate() {
                    if !domain.contains(&choice.point) {
                        return Err(Error::NonFinite {
                            what: format!("a point outside the box: {:?}", choice.point),
                        });
                    }
                    let value = problem.value(&choice.point)?;
                    regret.push(optimum - value);
                    rewards.push(value + problem.round(r * q + j).noise);
                }
                for (choice, y) in batch.iter().zip(rewards) {
                    agent.update(&choice.point, y)?;
                }
            }
        }
        SettingName::Arms => {
            for r in 0..rounds {
                let round = problem.round(r);
                let batch = agent.select_batch(&round, q)?;
                let best = round.best_value();
                let mut rewards = Vec::with_capacity(q);
                for (j, &i) in batch.iter().enumerate() {
                    let n = r * q + j;
                    let noise = if n == r {
                        round.noise
                    } else {
                        problem.round(n).noise
                    };
                    regret.push(best - round.values[i]);
                    rewards.push(round.values[i] + noise);
                }
                for (&i, y) in batch.iter().zip(rewards) {
                    agent.update(round.arm(i), y)?;
                }
            }
        }
    }
    Ok(regret)
}

/// Runs `body` with the kernel of `args` (RBF or a Matérn of fixed ν).
macro_rules! on_kernel {
    ($args:expr, |$k:ident| $body:expr) => {{
        let l = $args.lengthscale;
        match $args.kernel.nu() {
            None => Rbf::new(l).and_then(|$k| $body),
            Some(nu) => Matern::new(nu, l).and_then(|$k| $body),
        }
    }};
}

/// One cell: every repetition of one method with one q in one setting.
#[derive(Debug, Serialize)]
struct CellJson {
    setting: &'static str,
    method: &'static str,
    q: usize,
    final_regret: Vec<f64>,
    /// Mean and standard deviation of the cumulative regret after each evaluation.
    curve_mean: Vec<f64>,
    curve_std: Vec<f64>,
    /// Problem seed of each repetition (the same for every method, q and setting).
    seeds: Vec<u64>,
    wall_time_s: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct BatchJson {
    kernel: &'static str,
    lengthscale: f64,
    dims: usize,
    evaluations: usize,
    reps: usize,
    seed: u64,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    arms_per_round: usize,
    starts: usize,
    refine: usize,
    /// The rule for the further points of a round in the box: "exploration" (GP-UCB-PE) or
    /// "pending-ucb" (GP-BUCB).
    batch_rule: &'static str,
    /// max f over the box in each repetition (empty without the `box` setting).
    optimum: Vec<f64>,
    /// Where it is attained.
    optimum_point: Vec<Vec<f64>>,
    /// Seed of the UCB agents' space-filling starts in each repetition
    /// (`ContinuousOptions::seed`).
    starts_seeds: Vec<u64>,
    /// Total wall time of the runs, in seconds, and the threads they ran on.
    elapsed_s: f64,
    threads: usize,
    results: Vec<CellJson>,
}

fn check_args(args: &BatchArgs) -> Result<(), String> {
    let fail = |what: String| Err(format!("invalid arguments: {what}"));
    if args.dims == 0 {
        return fail("--dims must be at least 1".into());
    }
    if args.reps == 0 || args.evaluations == 0 || args.arms == 0 {
        return fail("--reps, --evaluations and --arms must be at least 1".into());
    }
    if args.starts == 0 || args.refine == 0 {
        return fail("--starts and --refine must be at least 1".into());
    }
    if args.q.is_empty() || args.methods.is_empty() || args.settings.is_empty() {
        return fail("--q, --methods and --settings need at least one value each".into());
    }
    if !(args.lengthscale.is_finite() && args.lengthscale > 0.0) {
        return fail(format!(
            "--lengthscale {} is not finite and positive",
            args.lengthscale
        ));
    }
    if let Some(q) = args
        .q
        .iter()
        .find(|&&q| q == 0 || !args.evaluations.is_multiple_of(q))
    {
        return fail(format!(
            "--q value {q} does not divide --evaluations {} into whole rounds",
            args.evaluations
        ));
    }
    if let Some(q) = first_repeat(&args.q) {
        return fail(format!("--q lists {q} twice"));
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(format!("--methods lists {} twice", m.tag()));
    }
    if let Some(s) = first_repeat(&args.settings) {
        return fail(format!("--settings lists {} twice", s.tag()));
    }
    KernelName::require_radial(&[args.kernel], "reproduce batch")?;
    args.run.check()
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &BatchArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.run.out)?;

    // The true maximum of f over the box, once per repetition.
    let reps: Vec<usize> = (0..args.reps).collect();
    let needs_optimum = args.settings.contains(&SettingName::Continuous);
    let (optima, _, optimum_time) = if needs_optimum {
        run_jobs(&reps, args.run.threads, "batch: max f", |&rep| {
            let seed = problem_seed(args, rep);
            let found: Result<_, Error> =
                on_kernel!(args, |k| { problem(k, args, seed).and_then(box_optimum) });
            found.map_err(|e| format!("maximum of f (repetition {rep}): {e}"))
        })?
    } else {
        (Vec::new(), 0, 0.0)
    };

    // The costliest first: the box runs, the UCB methods, then by q (the first point of a
    // batch costs as much as a whole round of q = 1).
    let mut jobs: Vec<(SettingName, Method, usize, usize)> = Vec::new();
    for &s in &args.settings {
        for &m in &args.methods {
            for &q in &args.q {
                jobs.extend(reps.iter().map(|&r| (s, m, q, r)));
            }
        }
    }
    let order = |&(s, m, _, _): &(SettingName, Method, usize, usize)| {
        std::cmp::Reverse((s == SettingName::Continuous, m.cost()))
    };
    jobs.sort_by_key(order);
    let (runs, threads, elapsed) = run_jobs(&jobs, args.run.threads, "batch", |&(s, m, q, r)| {
        let seed = problem_seed(args, r);
        let optimum = optima.get(r).map_or(f64::NAN, |o: &(Vec<f64>, f64)| o.1);
        let start = Instant::now();
        let regret: Result<Vec<f64>, Error> =
            on_kernel!(args, |k| play(k, args, s, m, q, seed, optimum));
        let regret = regret.map_err(|e| {
            format!(
                "{} with {}, q = {q} (repetition {r}): {e}",
                s.tag(),
                m.tag()
            )
        })?;
        Ok(Run {
            regret,
            wall_time_s: start.elapsed().as_secs_f64(),
        })
    })?;

    let lowest = jobs
        .iter()
        .zip(&runs)
        .filter(|((s, ..), _)| *s == SettingName::Continuous)
        .flat_map(|(_, run)| run.regret.iter().copied())
        .fold(f64::INFINITY, f64::min);
    if lowest < -1e-9 {
        eprintln!(
            "warning: an evaluation beat the maximum of f found by dense search by {:.3e}",
            -lowest
        );
    }

    // Cells in table order: settings, methods, then q.
    let mut cells = Vec::new();
    for &setting in &args.settings {
        for &method in &args.methods {
            for &q in &args.q {
                let reps: Vec<(Vec<f64>, f64)> = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((s, m, jq, _), _)| *s == setting && *m == method && *jq == q)
                    .map(|(_, run)| (cumulative(&run.regret), run.wall_time_s))
                    .collect();
                let curve: Vec<(f64, f64)> = (0..args.evaluations)
                    .map(|n| mean_std(reps.iter().map(|r| r.0[n])))
                    .collect();
                cells.push(CellJson {
                    setting: setting.tag(),
                    method: method.tag(),
                    q,
                    final_regret: reps.iter().map(|r| r.0[args.evaluations - 1]).collect(),
                    curve_mean: curve.iter().map(|c| c.0).collect(),
                    curve_std: curve.iter().map(|c| c.1).collect(),
                    seeds: (0..args.reps).map(|r| problem_seed(args, r)).collect(),
                    wall_time_s: reps.iter().map(|r| r.1).collect(),
                });
            }
        }
    }
    let elapsed = elapsed + optimum_time;
    print!("{}", markdown(args, &cells, elapsed, threads));
    let json = BatchJson {
        kernel: args.kernel.tag(),
        lengthscale: args.lengthscale,
        dims: args.dims,
        evaluations: args.evaluations,
        reps: args.reps,
        seed: args.run.seed,
        sigma: SIGMA,
        norm_bound: NORM,
        delta: DELTA,
        arms_per_round: args.arms,
        starts: args.starts,
        refine: args.refine,
        batch_rule: match args.batch_rule {
            BatchRuleName::Exploration => "exploration",
            BatchRuleName::PendingUcb => "pending-ucb",
        },
        optimum: optima.iter().map(|o| o.1).collect(),
        optimum_point: optima.iter().map(|o| o.0.clone()).collect(),
        starts_seeds: (0..args.reps)
            .map(|r| derive_seed(problem_seed(args, r), &[STARTS_LABEL]))
            .collect(),
        elapsed_s: elapsed,
        threads,
        results: cells,
    };
    let json_path = args.run.out.join("batch.json");
    write_json(&json_path, &json)?;
    let csv_path = args.run.out.join("batch.csv");
    write_csv(&csv_path, &json)?;
    let plots = write_plots(args, &json)?;
    announce(
        "batch",
        jobs.len() + optima.len(),
        elapsed,
        threads,
        &[&json_path, &csv_path],
        &plots,
    );
    Ok(())
}

/// Running sums.
fn cumulative(regret: &[f64]) -> Vec<f64> {
    regret
        .iter()
        .scan(0.0, |acc, r| {
            *acc += r;
            Some(*acc)
        })
        .collect()
}

/// Mean and standard error of the mean.
fn mean_se(values: &[f64]) -> (f64, f64) {
    let (mean, std) = mean_std(values.iter().copied());
    (mean, std / (values.len() as f64).sqrt())
}

/// The table: one row per method and q, one column per setting; final cumulative regret
/// (mean ± standard error) and the mean wall time of a run.
fn markdown(args: &BatchArgs, cells: &[CellJson], elapsed: f64, threads: usize) -> String {
    let mut out = format!(
        "Cumulative regret after T = {} evaluations in rounds of q, {} ℓ = {}, d = {}, ‖f‖ = 10, \
         σ = 0.1; mean ± standard error over {} repetitions (seed {}); box search: {} starts, \
         {} refined\n\n| method | q |",
        args.evaluations,
        args.kernel.title(),
        args.lengthscale,
        args.dims,
        args.reps,
        args.run.seed,
        args.starts,
        args.refine
    );
    for s in &args.settings {
        out.push_str(&format!(" {} | time/run (s) |", s.title()));
    }
    out.push_str("\n|---|---:|");
    out.push_str(&"---:|---:|".repeat(args.settings.len()));
    out.push('\n');
    let per_setting = args.methods.len() * args.q.len();
    for (m, method) in args.methods.iter().enumerate() {
        for (j, q) in args.q.iter().enumerate() {
            out.push_str(&format!("| {} | {q} |", method.title()));
            for s in 0..args.settings.len() {
                let cell = &cells[s * per_setting + m * args.q.len() + j];
                let (mean, se) = mean_se(&cell.final_regret);
                let time = mean_std(cell.wall_time_s.iter().copied()).0;
                out.push_str(&format!(" {mean:.1} ± {se:.1} | {time:.2} |"));
            }
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "\nWall time {elapsed:.1} s on {threads} threads (including the search for max f)\n"
    ));
    out
}

/// `batch.csv`, long format: one row per (setting, method, q, repetition).
fn write_csv(path: &Path, json: &BatchJson) -> Result<(), String> {
    let cells = json.results.iter().map(|cell| RepetitionRows {
        key: vec![
            cell.setting.to_owned(),
            cell.method.to_owned(),
            cell.q.to_string(),
        ],
        final_regret: &cell.final_regret,
        seeds: &cell.seeds,
        wall_time_s: &cell.wall_time_s,
    });
    write_repetitions_csv(path, &["setting", "method", "q"], cells)
}

/// Per setting, the mean cumulative regret against evaluations and against rounds.
fn write_plots(args: &BatchArgs, json: &BatchJson) -> Result<Vec<std::path::PathBuf>, String> {
    let mut stems = Vec::new();
    for setting in &args.settings {
        let cells: Vec<&CellJson> = json
            .results
            .iter()
            .filter(|c| c.setting == setting.tag())
            .collect();
        let labels: Vec<String> = cells
            .iter()
            .map(|c| format!("{} q = {}", c.method.to_uppercase(), c.q))
            .collect();
        let evaluations: Vec<f64> = (1..=args.evaluations).map(|n| n as f64).collect();
        let mut per_round = Vec::new();
        for c in &cells {
            let ends = (c.q - 1..args.evaluations).step_by(c.q);
            let mean: Vec<f64> = ends.clone().map(|n| c.curve_mean[n]).collect();
            let std: Vec<f64> = ends.map(|n| c.curve_std[n]).collect();
            let x: Vec<f64> = (1..=mean.len()).map(|r| r as f64).collect();
            per_round.push((x, mean, std));
        }
        let description = format!(
            "{}, {} ℓ = {}, d = {}: cumulative regret, mean ± 1 std over {} repetitions",
            setting.title(),
            args.kernel.title(),
            args.lengthscale,
            args.dims,
            args.reps
        );
        let by_evaluation: Vec<XyCurve<'_>> = cells
            .iter()
            .zip(&labels)
            .map(|(c, label)| XyCurve {
                label,
                x: &evaluations,
                mean: &c.curve_mean,
                std: &c.curve_std,
            })
            .collect();
        let stem = args
            .run
            .out
            .join(format!("batch_{}_evaluations", setting.tag()));
        xy_plot(&stem, &description, "evaluations", false, &by_evaluation)?;
        stems.push(stem);
        let by_round: Vec<XyCurve<'_>> = per_round
            .iter()
            .zip(&labels)
            .map(|((x, mean, std), label)| XyCurve {
                label,
                x,
                mean,
                std,
            })
            .collect();
        let stem = args.run.out.join(format!("batch_{}_rounds", setting.tag()));
        xy_plot(
            &stem,
            &description,
            "rounds of q evaluations (log scale)",
            true,
            &by_round,
        )?;
        stems.push(stem);
    }
    Ok(stems)
}
