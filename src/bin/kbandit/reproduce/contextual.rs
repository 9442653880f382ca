//! `kbandit reproduce contextual`: Zenati et al. 2022 §5 and App. F.2.
//!
//! EK-UCB, BKB, exact K-UCB and a random agent on the 'Bump', 'Chessboard' and 'Step diagonal'
//! environments, with the paper's practical settings: a Gaussian kernel with ℓ = 0.1 on the
//! joint (context, action) vector, λ = μ = 10, a fixed exploration width β̃ = 0.1 for every
//! UCB method, KORS budget γ = 0.1λ and ε = 0.5. Every method of a repetition plays the same
//! contexts and noise. Wall times are per run, each run on one core.

use std::time::Instant;

use clap::{Args, ValueEnum};
use kernel_bandits::env::{ContextualConfig, ContextualEnv, ContextualProblem};
use kernel_bandits::prelude::*;
use serde::Serialize;

use super::{
    RunOptions, announce, create_dir, derive_seed, first_repeat, mean_std, run_jobs, write_json,
};
use crate::plot::{Curve, regret_plot, tradeoff_plot};

/// Arguments of `kbandit reproduce contextual`.
#[derive(Debug, Args)]
pub struct ContextualArgs {
    /// Environments (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [EnvChoice::Bump, EnvChoice::Chessboard, EnvChoice::StepDiagonal])]
    envs: Vec<EnvChoice>,
    /// Methods (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::EkUcb, Method::Bkb, Method::KUcb, Method::Random])]
    methods: Vec<Method>,
    /// Repetitions per environment.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Rounds T per run.
    #[arg(long, default_value_t = 2000)]
    horizon: usize,
    /// Regulariser λ (also KORS's μ).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    lambda: f64,
    /// Fixed exploration width β̃ of the UCB methods.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    beta: f64,
    /// Gaussian kernel length-scale ℓ on the joint vector.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    lengthscale: f64,
    /// EK-UCB's KORS budget γ as a multiple of λ (s in Zenati et al. 2022).
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    budget: f64,
    /// BKB's oversampling q̄ (inclusion probability min(1, q̄σ̃²)).
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    qbar: f64,
    #[command(flatten)]
    run: RunOptions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EnvChoice {
    Bump,
    Chessboard,
    StepDiagonal,
}

impl EnvChoice {
    fn env(self) -> ContextualEnv {
        match self {
            Self::Bump => ContextualEnv::Bump,
            Self::Chessboard => ContextualEnv::Chessboard,
            Self::StepDiagonal => ContextualEnv::StepDiagonal,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::Bump => "Bump",
            Self::Chessboard => "Chessboard",
            Self::StepDiagonal => "Step diagonal",
        }
    }
}

/// The agents compared by Zenati et al. (2022).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Method {
    EkUcb,
    Bkb,
    KUcb,
    Random,
}

impl Method {
    fn tag(self) -> &'static str {
        match self {
            Self::EkUcb => "ek_ucb",
            Self::Bkb => "bkb",
            Self::KUcb => "k_ucb",
            Self::Random => "random",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::EkUcb => "EK-UCB",
            Self::Bkb => "BKB",
            Self::KUcb => "K-UCB (exact)",
            Self::Random => "Random",
        }
    }

    /// Rough relative cost of a run, to start the longest first.
    fn cost(self) -> u32 {
        match self {
            Self::Bkb => 3,
            Self::KUcb => 2,
            Self::EkUcb => 1,
            Self::Random => 0,
        }
    }
}

/// One run's outcome.
struct Run {
    cumulative: Vec<f64>,
    /// Seconds since the start of the run after each round.
    elapsed: Vec<f64>,
    dictionary_size: Option<usize>,
}

/// Label of the random agent's and the sketches' streams, derived from the problem seed.
const AGENT_LABEL: u64 = 0x61_6765_6e74; // "agent"

/// Plays `method` on repetition `rep` of `env`.
fn run_one(
    env: EnvChoice,
    method: Method,
    rep: usize,
    args: &ContextualArgs,
) -> Result<Run, Error> {
    let seed = derive_seed(args.run.seed, &[env as u64, rep as u64]);
    let problem = ContextualProblem::new(env.env(), ContextualConfig::default(), seed)?;
    let kernel = Rbf::new(args.lengthscale)?;
    let agent_seed = derive_seed(seed, &[AGENT_LABEL, method as u64]);
    let sketch = SketchParams::new()
        .lambda(args.lambda)
        .mu(args.lambda)
        .beta(args.beta)
        .epsilon(0.5)
        .gamma(args.budget * args.lambda)
        .qbar(args.qbar);
    let (trace, dictionary_size) = match method {
        Method::EkUcb => {
            let mut agent = UcbAgent::new(EkUcb::new(kernel, sketch, agent_seed)?);
            let trace = play(&problem, &mut agent, args.horizon)?;
            (trace, Some(agent.bound().dictionary_size()))
        }
        Method::Bkb => {
            let mut agent = UcbAgent::new(Bkb::new(kernel, sketch, agent_seed)?);
            let trace = play(&problem, &mut agent, args.horizon)?;
            (trace, Some(agent.bound().dictionary_size()))
        }
        Method::KUcb => {
            let mut agent = UcbAgent::new(KUcb::new(kernel, args.lambda, args.beta)?);
            (play(&problem, &mut agent, args.horizon)?, None)
        }
        Method::Random => (
            play(&problem, &mut RandomAgent::new(agent_seed), args.horizon)?,
            None,
        ),
    };
    Ok(Run {
        cumulative: trace.0,
        elapsed: trace.1,
        dictionary_size,
    })
}

/// Plays `horizon` rounds; returns the cumulative regret and the seconds elapsed after each
/// round.
fn play<A: BanditAgent>(
    problem: &ContextualProblem,
    agent: &mut A,
    horizon: usize,
) -> Result<(Vec<f64>, Vec<f64>), Error> {
    let start = Instant::now();
    let mut elapsed = Vec::with_capacity(horizon);
    let trace = problem.run_with(agent, horizon, |_, _| {
        elapsed.push(start.elapsed().as_secs_f64());
    })?;
    Ok((trace.cumulative(), elapsed))
}

/// One cell: every repetition of one method on one environment.
#[derive(Debug, Serialize)]
struct CellJson {
    env: &'static str,
    method: &'static str,
    final_regret: Vec<f64>,
    wall_time_s: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dictionary_size: Option<Vec<usize>>,
    /// Problem seed of each repetition.
    seeds: Vec<u64>,
    curve_mean: Vec<f64>,
    curve_std: Vec<f64>,
    /// Mean seconds since the start of the run after each round.
    time_mean: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct ContextualJson {
    horizon: usize,
    reps: usize,
    seed: u64,
    lambda: f64,
    beta: f64,
    lengthscale: f64,
    kors_gamma: f64,
    bkb_qbar: f64,
    results: Vec<CellJson>,
}

fn check_args(args: &ContextualArgs) -> Result<(), String> {
    let fail = |what: &str| Err(format!("invalid arguments: {what}"));
    if args.reps == 0 || args.horizon == 0 {
        return fail("--reps and --horizon must be at least 1");
    }
    if args.envs.is_empty() || args.methods.is_empty() {
        return fail("--envs and --methods need at least one value each");
    }
    for (name, v) in [
        ("--lambda", args.lambda),
        ("--beta", args.beta),
        ("--lengthscale", args.lengthscale),
        ("--budget", args.budget),
        ("--qbar", args.qbar),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return fail(&format!("{name} {v} is not finite and positive"));
        }
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(&format!("--methods lists {} twice", m.tag()));
    }
    if let Some(e) = first_repeat(&args.envs) {
        return fail(&format!("--envs lists {} twice", e.env().name()));
    }
    args.run.check()?;
    Ok(())
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &ContextualArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.run.out)?;
    let mut jobs: Vec<(EnvChoice, Method, usize)> = args
        .envs
        .iter()
        .flat_map(|&e| {
            args.methods
                .iter()
                .flat_map(move |&m| (0..args.reps).map(move |r| (e, m, r)))
        })
        .collect();
    jobs.sort_by_key(|&(_, m, _)| std::cmp::Reverse(m.cost()));
    let (runs, threads, elapsed) = run_jobs(
        &jobs,
        args.run.threads,
        "contextual",
        |&(env, method, rep)| {
            run_one(env, method, rep, args).map_err(|e| {
                format!(
                    "{} with {} (repetition {rep}): {e}",
                    env.title(),
                    method.tag()
                )
            })
        },
    )?;

    let mut cells = Vec::new();
    for &env in &args.envs {
        for &method in &args.methods {
            let reps: Vec<&Run> = jobs
                .iter()
                .zip(&runs)
                .filter(|((e, m, _), _)| *e == env && *m == method)
                .map(|(_, run)| run)
                .collect();
            let curve: Vec<(f64, f64)> = (0..args.horizon)
                .map(|t| mean_std(reps.iter().map(|r| r.cumulative[t])))
                .collect();
            let time_mean = (0..args.horizon)
                .map(|t| reps.iter().map(|r| r.elapsed[t]).sum::<f64>() / reps.len() as f64)
                .collect();
            cells.push(CellJson {
                env: env.env().name(),
                method: method.tag(),
                final_regret: reps
                    .iter()
                    .map(|r| r.cumulative[args.horizon - 1])
                    .collect(),
                wall_time_s: reps.iter().map(|r| r.elapsed[args.horizon - 1]).collect(),
                dictionary_size: reps.iter().map(|r| r.dictionary_size).collect(),
                seeds: (0..args.reps)
                    .map(|r| derive_seed(args.run.seed, &[env as u64, r as u64]))
                    .collect(),
                curve_mean: curve.iter().map(|c| c.0).collect(),
                curve_std: curve.iter().map(|c| c.1).collect(),
                time_mean,
            });
        }
    }
    print!("{}", markdown(args, &cells));
    let json = ContextualJson {
        horizon: args.horizon,
        reps: args.reps,
        seed: args.run.seed,
        lambda: args.lambda,
        beta: args.beta,
        lengthscale: args.lengthscale,
        kors_gamma: args.budget * args.lambda,
        bkb_qbar: args.qbar,
        results: cells,
    };
    let json_path = args.run.out.join("contextual.json");
    write_json(&json_path, &json)?;
    let mut plots = Vec::new();
    for (env, cells) in args
        .envs
        .iter()
        .zip(json.results.chunks(args.methods.len()))
    {
        let curves: Vec<Curve<'_>> = args
            .methods
            .iter()
            .zip(cells)
            .map(|(m, c)| Curve {
                label: m.title(),
                mean: &c.curve_mean,
                std: &c.curve_std,
            })
            .collect();
        let name = env.env().name();
        let stem = args.run.out.join(format!("contextual_{name}_regret"));
        let title = format!(
            "{}: cumulative regret, mean ± 1 std over {} repetitions",
            env.title(),
            args.reps
        );
        regret_plot(&stem, &title, &curves)?;
        plots.push(stem);
        let times: Vec<&[f64]> = cells.iter().map(|c| c.time_mean.as_slice()).collect();
        let stem = args.run.out.join(format!("contextual_{name}_time"));
        let title = format!(
            "{}: cumulative regret vs running time (mean over {} repetitions)",
            env.title(),
            args.reps
        );
        tradeoff_plot(&stem, &title, &curves, &times)?;
        plots.push(stem);
    }
    announce(
        "contextual",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path],
        &plots,
    );
    Ok(())
}

/// Final regret, wall time and dictionary size per environment and method.
fn markdown(args: &ContextualArgs, cells: &[CellJson]) -> String {
    let mut out = format!(
        "Contextual bandits (Zenati et al. 2022 §5), T = {}, λ = μ = {}, β̃ = {}, ℓ = {}: mean ± std over \
         {} repetitions (seed {})\n\n| environment | method | final regret | wall time (s) | \
         dictionary size |\n|---|---|---:|---:|---:|\n",
        args.horizon, args.lambda, args.beta, args.lengthscale, args.reps, args.run.seed
    );
    for cell in cells {
        let (regret, regret_std) = mean_std(cell.final_regret.iter().copied());
        let (time, time_std) = mean_std(cell.wall_time_s.iter().copied());
        let dictionary = cell.dictionary_size.as_ref().map_or("–".to_string(), |d| {
            let (mean, std) = mean_std(d.iter().map(|&m| m as f64));
            format!("{mean:.0} ± {std:.0}")
        });
        let method = args
            .methods
            .iter()
            .find(|m| m.tag() == cell.method)
            .map_or(cell.method, |m| m.title());
        out.push_str(&format!(
            "| {} | {method} | {regret:.1} ± {regret_std:.1} | {time:.2} ± {time_std:.2} | \
             {dictionary} |\n",
            cell.env
        ));
    }
    out
}
