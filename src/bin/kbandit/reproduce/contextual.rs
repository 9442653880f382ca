//! `kbandit reproduce contextual`: Zenati et al. 2022 §5 and App. F.2.
//!
//! EK-UCB, BKB, exact K-UCB and a random agent on the 'Bump', 'Chessboard' and 'Step diagonal'
//! environments, with the paper's practical settings: a Gaussian kernel with ℓ = 0.1 on the
//! joint (context, action) vector, λ = μ = 10, a fixed exploration width β̃ = 0.1 for every
//! UCB method, KORS budget γ = 0.1λ and ε = 0.5. Every method of a repetition plays the same
//! contexts and noise. Wall times are per run, each run on one core.
//!
//! With `--sweep`, the regret–time comparison of the paper's Figures 1–5 and 7–12: every
//! method over λ ∈ {1, 10, 100} (μ = λ for EK-UCB, plus μ ∈ {1, 100} at λ = 10 on 'Bump', as
//! in Figure 1), CBBKB (BBKB of Calandriello et al. 2020 on the joint vector) over
//! C̃ ∈ {3, 10, 30}, one point per configuration in a scatter of final regret against running
//! time.

use std::time::Instant;

use clap::{Args, ValueEnum};
use kernel_bandits::bound::BatchFeedback;
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
    /// Methods (comma-separated) [default: ek-ucb,bkb,k-ucb,random; with --sweep:
    /// ek-ucb,bkb,bbkb,cbbkb,k-ucb].
    #[arg(long, value_enum, value_delimiter = ',')]
    methods: Vec<Method>,
    /// Repetitions per environment [default: 5; with --sweep: 2].
    #[arg(long)]
    reps: Option<usize>,
    /// Rounds T per run [default: 2000; with --sweep: 600].
    #[arg(long)]
    horizon: Option<usize>,
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
    /// BBKB's batch threshold C̃ (without --sweep).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    threshold: f64,
    /// Sweep λ, μ and C̃ and draw regret against running time (Zenati et al. 2022 Figs. 1–5,
    /// 7–12).
    #[arg(long)]
    sweep: bool,
    /// With --sweep: the regularisers λ (EK-UCB's μ = λ).
    #[arg(long, value_delimiter = ',', default_values_t = [1.0, 10.0, 100.0], allow_negative_numbers = true)]
    lambdas: Vec<f64>,
    /// With --sweep: BBKB's batch thresholds C̃.
    #[arg(long, value_delimiter = ',', default_values_t = [3.0, 10.0, 30.0], allow_negative_numbers = true)]
    thresholds: Vec<f64>,
    /// With --sweep: EK-UCB's further KORS μ at λ = 10 on 'Bump' (Figure 1); none with "".
    #[arg(long, value_delimiter = ',', default_values_t = [1.0, 100.0], allow_negative_numbers = true)]
    extra_mus: Vec<f64>,
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
    /// BBKB (Calandriello et al. 2020): the mean uses a batch's targets when it ends.
    Bbkb,
    /// Zenati et al.'s CBBKB: BBKB's dictionary schedule, every target used at once.
    Cbbkb,
    KUcb,
    Random,
}

impl Method {
    fn tag(self) -> &'static str {
        match self {
            Self::EkUcb => "ek_ucb",
            Self::Bkb => "bkb",
            Self::Bbkb => "bbkb",
            Self::Cbbkb => "cbbkb",
            Self::KUcb => "k_ucb",
            Self::Random => "random",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::EkUcb => "EK-UCB",
            Self::Bkb => "BKB",
            Self::Bbkb => "BBKB",
            Self::Cbbkb => "CBBKB",
            Self::KUcb => "K-UCB (exact)",
            Self::Random => "Random",
        }
    }

    /// Rough relative cost of a run, to start the longest first.
    fn cost(self) -> u32 {
        match self {
            Self::Bkb => 3,
            Self::KUcb | Self::Bbkb | Self::Cbbkb => 2,
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

impl ContextualArgs {
    fn reps(&self) -> usize {
        self.reps.unwrap_or(if self.sweep { 2 } else { 5 })
    }

    fn horizon(&self) -> usize {
        self.horizon.unwrap_or(if self.sweep { 600 } else { 2000 })
    }

    fn methods(&self) -> Vec<Method> {
        match (self.methods.is_empty(), self.sweep) {
            (false, _) => self.methods.clone(),
            (true, false) => vec![Method::EkUcb, Method::Bkb, Method::KUcb, Method::Random],
            (true, true) => vec![
                Method::EkUcb,
                Method::Bkb,
                Method::Bbkb,
                Method::Cbbkb,
                Method::KUcb,
            ],
        }
    }
}

/// One method with its parameters: λ, EK-UCB's μ and BBKB's C̃ (each method reads those it
/// uses).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Config {
    method: Method,
    lambda: f64,
    mu: f64,
    threshold: f64,
}

impl Config {
    /// The single-λ configuration of `method` (without --sweep).
    fn single(method: Method, args: &ContextualArgs) -> Self {
        Self {
            method,
            lambda: args.lambda,
            mu: args.lambda,
            threshold: args.threshold,
        }
    }
}

/// Plays `config` on repetition `rep` of `env`.
fn run_one(
    env: EnvChoice,
    config: Config,
    rep: usize,
    args: &ContextualArgs,
) -> Result<Run, Error> {
    let seed = derive_seed(args.run.seed, &[env as u64, rep as u64]);
    let problem = ContextualProblem::new(env.env(), ContextualConfig::default(), seed)?;
    let kernel = Rbf::new(args.lengthscale)?;
    let method = config.method;
    let agent_seed = derive_seed(seed, &[AGENT_LABEL, method as u64]);
    let sketch = SketchParams::new()
        .lambda(config.lambda)
        .mu(config.mu)
        .beta(args.beta)
        .epsilon(0.5)
        .gamma(args.budget * config.lambda)
        .qbar(args.qbar);
    let horizon = args.horizon();
    let (trace, dictionary_size) = match method {
        Method::EkUcb => {
            let mut agent = UcbAgent::new(EkUcb::new(kernel, sketch, agent_seed)?);
            let trace = play(&problem, &mut agent, horizon)?;
            (trace, Some(agent.bound().dictionary_size()))
        }
        Method::Bkb | Method::Bbkb | Method::Cbbkb => {
            let sketch = match method {
                Method::Bbkb => sketch.batch_threshold(config.threshold),
                Method::Cbbkb => sketch
                    .batch_threshold(config.threshold)
                    .batch_feedback(BatchFeedback::Immediate),
                _ => sketch,
            };
            let mut agent = UcbAgent::new(Bkb::new(kernel, sketch, agent_seed)?);
            let trace = play(&problem, &mut agent, horizon)?;
            (trace, Some(agent.bound().dictionary_size()))
        }
        Method::KUcb => {
            let mut agent = UcbAgent::new(KUcb::new(kernel, config.lambda, args.beta)?);
            (play(&problem, &mut agent, horizon)?, None)
        }
        Method::Random => (
            play(&problem, &mut RandomAgent::new(agent_seed), horizon)?,
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
    bbkb_threshold: f64,
    results: Vec<CellJson>,
}

fn check_args(args: &ContextualArgs) -> Result<(), String> {
    let fail = |what: &str| Err(format!("invalid arguments: {what}"));
    if args.reps() == 0 || args.horizon() == 0 {
        return fail("--reps and --horizon must be at least 1");
    }
    if args.envs.is_empty() {
        return fail("--envs needs at least one value");
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
    let lists = [
        ("--lambdas", &args.lambdas),
        ("--extra-mus", &args.extra_mus),
    ];
    for (name, values) in lists {
        if let Some(v) = values.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
            return fail(&format!("{name} {v} is not finite and positive"));
        }
    }
    let thresholds = args.thresholds.iter().chain([&args.threshold]);
    if let Some(v) = thresholds
        .into_iter()
        .find(|v| !(v.is_finite() && **v >= 0.0))
    {
        return fail(&format!("threshold {v} is not finite and non-negative"));
    }
    if args.sweep && (args.lambdas.is_empty() || args.thresholds.is_empty()) {
        return fail("--lambdas and --thresholds need at least one value each");
    }
    if let Some(v) = first_repeat(&args.lambdas) {
        return fail(&format!("--lambdas lists {v} twice"));
    }
    if let Some(v) = first_repeat(&args.thresholds) {
        return fail(&format!("--thresholds lists {v} twice"));
    }
    if let Some(m) = first_repeat(&args.methods()) {
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
    if args.sweep {
        return sweep::run(args);
    }
    let (reps, horizon, methods) = (args.reps(), args.horizon(), args.methods());
    let mut jobs: Vec<(EnvChoice, Method, usize)> = args
        .envs
        .iter()
        .flat_map(|&e| {
            methods
                .iter()
                .flat_map(move |&m| (0..reps).map(move |r| (e, m, r)))
        })
        .collect();
    jobs.sort_by_key(|&(_, m, _)| std::cmp::Reverse(m.cost()));
    let (runs, threads, elapsed) = run_jobs(
        &jobs,
        args.run.threads,
        "contextual",
        |&(env, method, rep)| {
            run_one(env, Config::single(method, args), rep, args).map_err(|e| {
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
        for &method in &methods {
            let reps: Vec<&Run> = jobs
                .iter()
                .zip(&runs)
                .filter(|((e, m, _), _)| *e == env && *m == method)
                .map(|(_, run)| run)
                .collect();
            let curve: Vec<(f64, f64)> = (0..horizon)
                .map(|t| mean_std(reps.iter().map(|r| r.cumulative[t])))
                .collect();
            let time_mean = (0..horizon)
                .map(|t| reps.iter().map(|r| r.elapsed[t]).sum::<f64>() / reps.len() as f64)
                .collect();
            cells.push(CellJson {
                env: env.env().name(),
                method: method.tag(),
                final_regret: reps.iter().map(|r| r.cumulative[horizon - 1]).collect(),
                wall_time_s: reps.iter().map(|r| r.elapsed[horizon - 1]).collect(),
                dictionary_size: reps.iter().map(|r| r.dictionary_size).collect(),
                seeds: (0..args.reps())
                    .map(|r| derive_seed(args.run.seed, &[env as u64, r as u64]))
                    .collect(),
                curve_mean: curve.iter().map(|c| c.0).collect(),
                curve_std: curve.iter().map(|c| c.1).collect(),
                time_mean,
            });
        }
    }
    print!("{}", markdown(args, &methods, &cells));
    let json = ContextualJson {
        horizon,
        reps,
        seed: args.run.seed,
        lambda: args.lambda,
        beta: args.beta,
        lengthscale: args.lengthscale,
        kors_gamma: args.budget * args.lambda,
        bkb_qbar: args.qbar,
        bbkb_threshold: args.threshold,
        results: cells,
    };
    let json_path = args.run.out.join("contextual.json");
    write_json(&json_path, &json)?;
    let mut plots = Vec::new();
    for (env, cells) in args.envs.iter().zip(json.results.chunks(methods.len())) {
        let curves: Vec<Curve<'_>> = methods
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
            reps
        );
        regret_plot(&stem, &title, &curves)?;
        plots.push(stem);
        let times: Vec<&[f64]> = cells.iter().map(|c| c.time_mean.as_slice()).collect();
        let stem = args.run.out.join(format!("contextual_{name}_time"));
        let title = format!(
            "{}: cumulative regret vs running time (mean over {} repetitions)",
            env.title(),
            reps
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
fn markdown(args: &ContextualArgs, methods: &[Method], cells: &[CellJson]) -> String {
    let mut out = format!(
        "Contextual bandits (Zenati et al. 2022 §5), T = {}, λ = μ = {}, β̃ = {}, ℓ = {}: mean ± std over \
         {} repetitions (seed {})\n\n| environment | method | final regret | wall time (s) | \
         dictionary size |\n|---|---|---:|---:|---:|\n",
        args.horizon(),
        args.lambda,
        args.beta,
        args.lengthscale,
        args.reps(),
        args.run.seed
    );
    for cell in cells {
        let (regret, regret_std) = mean_std(cell.final_regret.iter().copied());
        let (time, time_std) = mean_std(cell.wall_time_s.iter().copied());
        let dictionary = cell.dictionary_size.as_ref().map_or("–".to_string(), |d| {
            let (mean, std) = mean_std(d.iter().map(|&m| m as f64));
            format!("{mean:.0} ± {std:.0}")
        });
        let method = methods
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

/// `--sweep`: the regret–time comparisons of Zenati et al. (2022) Figures 1–5 and 7–12.
mod sweep {
    use super::{
        AGENT_LABEL, Config, ContextualArgs, EnvChoice, Method, Run, announce, derive_seed,
        mean_std, run_jobs, run_one, write_json,
    };
    use crate::plot::{Scatter, scatter_plot};
    use serde::Serialize;

    /// The configurations run on `env`: each method over --lambdas (μ = λ), BBKB also over
    /// --thresholds, EK-UCB also over --extra-mus at λ = 10 on 'Bump' (Figure 1), random once.
    fn configs(env: EnvChoice, args: &ContextualArgs) -> Vec<Config> {
        let mut out = Vec::new();
        let at = |method, lambda: f64| Config {
            method,
            lambda,
            mu: lambda,
            threshold: args.threshold,
        };
        for method in args.methods() {
            match method {
                Method::Random => out.push(at(method, args.lambda)),
                Method::Bbkb | Method::Cbbkb => {
                    for &lambda in &args.lambdas {
                        for &threshold in &args.thresholds {
                            out.push(Config {
                                threshold,
                                ..at(method, lambda)
                            });
                        }
                    }
                }
                _ => out.extend(args.lambdas.iter().map(|&lambda| at(method, lambda))),
            }
            if method == Method::EkUcb && env == EnvChoice::Bump && args.lambdas.contains(&10.0) {
                for &mu in args.extra_mus.iter().filter(|&&mu| mu != 10.0) {
                    out.push(Config {
                        mu,
                        ..at(method, 10.0)
                    });
                }
            }
        }
        out
    }

    /// The legend group of a configuration: one colour per method, per C̃ for BBKB, and
    /// EK-UCB's μ ≠ λ points apart.
    fn group(config: &Config) -> String {
        match config.method {
            Method::Bbkb | Method::Cbbkb => {
                format!("{} C = {}", config.method.title(), config.threshold)
            }
            Method::EkUcb if config.mu != config.lambda => "EK-UCB, μ ≠ λ".to_string(),
            Method::EkUcb => "EK-UCB, μ = λ".to_string(),
            m => m.title().to_string(),
        }
    }

    /// The note beside a configuration's dot.
    fn note(config: &Config) -> String {
        match config.method {
            Method::Random => String::new(),
            Method::EkUcb if config.mu != config.lambda => {
                format!("λ={} μ={}", config.lambda, config.mu)
            }
            _ => format!("λ={}", config.lambda),
        }
    }

    /// One configuration on one environment, every repetition.
    #[derive(Debug, Serialize)]
    struct PointJson {
        env: &'static str,
        method: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        lambda: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mu: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        threshold: Option<f64>,
        final_regret: Vec<f64>,
        wall_time_s: Vec<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        dictionary_size: Option<Vec<usize>>,
        seeds: Vec<u64>,
        /// Seed of the sketched methods' generators, per repetition.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent_seeds: Option<Vec<u64>>,
    }

    #[derive(Debug, Serialize)]
    struct SweepJson {
        horizon: usize,
        reps: usize,
        seed: u64,
        beta: f64,
        lengthscale: f64,
        kors_budget: f64,
        bkb_qbar: f64,
        results: Vec<PointJson>,
    }

    /// Runs the sweep and writes its outputs.
    pub(super) fn run(args: &ContextualArgs) -> Result<(), String> {
        let (reps, horizon) = (args.reps(), args.horizon());
        let per_env: Vec<(EnvChoice, Vec<Config>)> =
            args.envs.iter().map(|&e| (e, configs(e, args))).collect();
        let mut jobs: Vec<(EnvChoice, Config, usize)> = per_env
            .iter()
            .flat_map(|(e, configs)| {
                configs
                    .iter()
                    .flat_map(move |&c| (0..reps).map(move |r| (*e, c, r)))
            })
            .collect();
        // Longest first: small λ keeps the most anchors.
        jobs.sort_by(|a, b| {
            let cost = |c: &Config| f64::from(c.method.cost()) / c.lambda.max(1.0).sqrt();
            cost(&b.1).total_cmp(&cost(&a.1))
        });
        let (runs, threads, elapsed) = run_jobs(
            &jobs,
            args.run.threads,
            "contextual sweep",
            |&(env, config, rep)| {
                run_one(env, config, rep, args).map_err(|e| {
                    format!(
                        "{} with {} at λ = {} (repetition {rep}): {e}",
                        env.title(),
                        config.method.tag(),
                        config.lambda
                    )
                })
            },
        )?;
        let mut results = Vec::new();
        let mut plots = Vec::new();
        let mut table = format!(
            "Contextual regret–time sweep (Zenati et al. 2022 Figs. 1–5, 7–12), T = {horizon}, \
             β̃ = {}, ℓ = {}, γ = {}λ, q̄ = {}: mean ± std over {reps} repetitions (seed {})\n\n\
             | environment | method | λ | μ | C̃ | final regret | wall time (s) | dictionary \
             size |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
            args.beta, args.lengthscale, args.budget, args.qbar, args.run.seed
        );
        for (env, configs) in &per_env {
            let mut series: Vec<Scatter> = Vec::new();
            for config in configs {
                let runs: Vec<&Run> = jobs
                    .iter()
                    .zip(&runs)
                    .filter(|((e, c, _), _)| e == env && c == config)
                    .map(|(_, run)| run)
                    .collect();
                let regret: Vec<f64> = runs.iter().map(|r| r.cumulative[horizon - 1]).collect();
                let time: Vec<f64> = runs.iter().map(|r| r.elapsed[horizon - 1]).collect();
                let dictionary: Option<Vec<usize>> =
                    runs.iter().map(|r| r.dictionary_size).collect();
                let (regret_mean, regret_std) = mean_std(regret.iter().copied());
                let (time_mean, time_std) = mean_std(time.iter().copied());
                let method = config.method;
                let seeds: Vec<u64> = (0..reps)
                    .map(|r| derive_seed(args.run.seed, &[*env as u64, r as u64]))
                    .collect();
                let lambda = (method != Method::Random).then_some(config.lambda);
                let mu = (method == Method::EkUcb).then_some(config.mu);
                let batched = matches!(method, Method::Bbkb | Method::Cbbkb);
                let threshold = batched.then_some(config.threshold);
                let show = |v: Option<f64>| v.map_or("–".to_string(), |v| v.to_string());
                let dictionary_cell = dictionary.as_ref().map_or("–".to_string(), |d| {
                    let (mean, std) = mean_std(d.iter().map(|&m| m as f64));
                    format!("{mean:.0} ± {std:.0}")
                });
                table.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {regret_mean:.1} ± {regret_std:.1} | \
                     {time_mean:.3} ± {time_std:.3} | {dictionary_cell} |\n",
                    env.env().name(),
                    method.title(),
                    show(lambda),
                    show(mu),
                    show(threshold),
                ));
                let label = group(config);
                let point = (time_mean, regret_mean, note(config));
                match series.iter_mut().find(|s| s.label == label) {
                    Some(s) => s.points.push(point),
                    None => series.push(Scatter {
                        label,
                        points: vec![point],
                    }),
                }
                results.push(PointJson {
                    env: env.env().name(),
                    method: method.tag(),
                    lambda,
                    mu,
                    threshold,
                    final_regret: regret,
                    wall_time_s: time,
                    dictionary_size: dictionary,
                    seeds: seeds.clone(),
                    agent_seeds: (method != Method::KUcb).then(|| {
                        let label = [AGENT_LABEL, method as u64];
                        seeds.iter().map(|&s| derive_seed(s, &label)).collect()
                    }),
                });
            }
            let stem = args
                .run
                .out
                .join(format!("contextual_sweep_{}", env.env().name()));
            let title = format!(
                "{}: final regret vs running time, T = {horizon}, mean over {reps} repetitions",
                env.title()
            );
            let desc = (
                "running time per run (s, log scale)",
                "cumulative regret at T",
            );
            scatter_plot(&stem, &title, desc, &series)?;
            plots.push(stem);
        }
        print!("{table}");
        let json = SweepJson {
            horizon,
            reps,
            seed: args.run.seed,
            beta: args.beta,
            lengthscale: args.lengthscale,
            kors_budget: args.budget,
            bkb_qbar: args.qbar,
            results,
        };
        let json_path = args.run.out.join("contextual_sweep.json");
        write_json(&json_path, &json)?;
        announce(
            "contextual sweep",
            jobs.len(),
            elapsed,
            threads,
            &[&json_path],
            &plots,
        );
        Ok(())
    }
}
