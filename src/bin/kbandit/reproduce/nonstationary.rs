//! `kbandit reproduce nonstationary`: Iwazaki & Takeno 2025 §6 and Figure 2.
//!
//! The abrupt-change problem (30 × 30 grid on [0, 1]², three RKHS functions switching at T/5
//! and 2T/5, N(0, ρ²) noise) with random, R-GP-UCB, SW-GP-UCB and R-PERP — with Eq. 8's width
//! (`r_perp_theory`) and with a practical width β^{1/2} × 0.1 (`r_perp`) — for SE and Matérn
//! 5/2 kernels (ℓ = 0.5), GP noise λ = ρ², δ = 0.1, B the largest RKHS norm of the three
//! functions, H and W from the theory with the realised V_T. The GP-UCB baselines use the
//! width B + (ρ/√λ)√(2(γ + 1 + ln 1/δ)) on the posterior standard deviation (Chowdhury &
//! Gopalan 2017 Thm 2), with γ the greedy estimate of the maximum information gain over one
//! interval / window (Srinivas et al. 2010 §5.1, as the paper does).
//!
//! Beside them, the tighter exact bounds of Flynn & Reeb (2024) in the same wrappers: R-AMM and
//! R-DMM (restarted every H rounds) and SW-DMM (on the last W points, forgotten exactly by
//! Cholesky downdates), with c = 1 so that their regulariser a0 = σ²/c is the baselines' λ = ρ².
//! `--info-gain` chooses γ in the GP-UCB width: the greedy upper bound over H points, the
//! data-dependent γ_t = ½ ln det(I + K_t/λ) of the points in the model (Chowdhury & Gopalan
//! 2017 Thm 1), or both.

use crate::kernels::KernelName;
use clap::{Args, ValueEnum};
use kernel_bandits::bound::{GpUcb, InformationGain};
use kernel_bandits::env::DriftingProblem;
use kernel_bandits::nonstationary::{
    RPerp, RPerpParams, Restarting, SlidingWindow, gp_ucb_interval, greedy_information_gain,
    rperp_interval,
};
use kernel_bandits::prelude::*;
use serde::Serialize;

use super::{
    RunOptions, announce, create_dir, derive_seed, first_repeat, mean_std, run_jobs, write_json,
};
use crate::plot::{Curve, regret_plot};

/// Arguments of `kbandit reproduce nonstationary`.
#[derive(Debug, Args)]
pub struct NonstationaryArgs {
    /// Kernels (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [KernelName::Rbf, KernelName::Matern52])]
    kernels: Vec<KernelName>,
    /// Methods (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::Random, Method::RGpUcb, Method::SwGpUcb, Method::RAmm, Method::RDmm, Method::SwDmm, Method::RPerp, Method::RPerpTheory])]
    methods: Vec<Method>,
    /// The information gain γ in the GP-UCB width of r-gp-ucb and sw-gp-ucb: `greedy` (the
    /// greedy upper bound on the maximum over H or W points), `data` (½ ln det(I + K_t/λ) of the
    /// points in the model) or `both` (each method twice).
    #[arg(long, value_enum, default_value_t = InfoGain::Both)]
    info_gain: InfoGain,
    /// Repetitions (seeds).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Rounds T per run.
    #[arg(long, default_value_t = 5000)]
    horizon: usize,
    /// Noise standard deviation ρ (the GP noise is λ = ρ²).
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    noise: f64,
    /// Confidence level δ.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    delta: f64,
    /// `r_perp`'s factor on Eq. 8's β^{1/2}.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    practical_scale: f64,
    #[command(flatten)]
    run: RunOptions,
}

/// The agents of Iwazaki & Takeno 2025 Figure 2, with R-PERP twice, and the restarted and
/// windowed AMM / DMM bounds of Flynn & Reeb (2024).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Method {
    // Explicit discriminants: they seed the agents, and the methods of Iwazaki & Takeno keep
    // the seeds they had before R-AMM, R-DMM and SW-DMM joined.
    Random = 0,
    RGpUcb = 1,
    SwGpUcb = 2,
    RAmm = 5,
    RDmm = 6,
    SwDmm = 7,
    RPerp = 3,
    RPerpTheory = 4,
}

/// `--info-gain`: which γ the GP-UCB baselines put in their width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InfoGain {
    Greedy,
    Data,
    Both,
}

/// One column of the experiment: a method, and for the GP-UCB baselines the γ in its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Variant {
    method: Method,
    /// `Some(true)` for the data-dependent γ_t, `Some(false)` for the greedy bound, `None` for
    /// the methods without a choice.
    data_gain: Option<bool>,
}

impl Variant {
    /// The variants of `methods` under `--info-gain`, in order.
    fn expand(methods: &[Method], info_gain: InfoGain) -> Vec<Self> {
        let gains: &[bool] = match info_gain {
            InfoGain::Greedy => &[false],
            InfoGain::Data => &[true],
            InfoGain::Both => &[false, true],
        };
        methods
            .iter()
            .flat_map(|&method| {
                let choices: Vec<Option<bool>> = match method {
                    Method::RGpUcb | Method::SwGpUcb => gains.iter().map(|&g| Some(g)).collect(),
                    _ => vec![None],
                };
                choices
                    .into_iter()
                    .map(move |data_gain| Self { method, data_gain })
            })
            .collect()
    }

    fn tag(self) -> &'static str {
        match (self.method, self.data_gain) {
            (Method::Random, _) => "random",
            (Method::RGpUcb, Some(true)) => "r_gp_ucb_data",
            (Method::RGpUcb, _) => "r_gp_ucb",
            (Method::SwGpUcb, Some(true)) => "sw_gp_ucb_data",
            (Method::SwGpUcb, _) => "sw_gp_ucb",
            (Method::RAmm, _) => "r_amm",
            (Method::RDmm, _) => "r_dmm",
            (Method::SwDmm, _) => "sw_dmm",
            (Method::RPerp, _) => "r_perp",
            (Method::RPerpTheory, _) => "r_perp_theory",
        }
    }

    fn title(self) -> &'static str {
        match (self.method, self.data_gain) {
            (Method::Random, _) => "Random",
            (Method::RGpUcb, Some(true)) => "R-GP-UCB(data)",
            (Method::RGpUcb, _) => "R-GP-UCB(greedy)",
            (Method::SwGpUcb, Some(true)) => "SW-GP-UCB(data)",
            (Method::SwGpUcb, _) => "SW-GP-UCB(greedy)",
            (Method::RAmm, _) => "R-AMM",
            (Method::RDmm, _) => "R-DMM",
            (Method::SwDmm, _) => "SW-DMM",
            (Method::RPerp, _) => "R-PERP, practical width (Eq. 8 × 0.1)",
            (Method::RPerpTheory, _) => "R-PERP, Eq. 8 width",
        }
    }

    /// An index that tells the variants apart, for the agents' seeds.
    fn index(self) -> u64 {
        self.method as u64 + if self.data_gain == Some(true) { 100 } else { 0 }
    }
}

/// A UCB agent (restarted or windowed) that records, after every update, the information gain
/// γ and the width on ρ its bound uses, for the means over the run.
struct Tracked<A, F> {
    agent: A,
    probe: F,
    gamma_sum: f64,
    width_sum: Option<f64>,
    updates: usize,
}

impl<A: BanditAgent, F: Fn(&A) -> (f64, Option<f64>)> Tracked<A, F> {
    fn new(agent: A, probe: F) -> Self {
        Self {
            agent,
            probe,
            gamma_sum: 0.0,
            width_sum: Some(0.0),
            updates: 0,
        }
    }

    /// The means of γ and of the width over the updates.
    fn means(&self) -> (f64, Option<f64>) {
        let n = self.updates.max(1) as f64;
        (self.gamma_sum / n, self.width_sum.map(|w| w / n))
    }
}

impl<A: BanditAgent, F: Fn(&A) -> (f64, Option<f64>)> BanditAgent for Tracked<A, F> {
    fn name(&self) -> String {
        self.agent.name()
    }

    fn select_from(&mut self, arms: &kernel_bandits::points::Points<'_>) -> Result<usize, Error> {
        self.agent.select_from(arms)
    }

    fn update(&mut self, x: &[f64], y: f64) -> Result<(), Error> {
        self.agent.update(x, y)?;
        let (gamma, width) = (self.probe)(&self.agent);
        self.gamma_sum += gamma;
        self.width_sum = self.width_sum.zip(width).map(|(s, w)| s + w);
        self.updates += 1;
        Ok(())
    }
}

/// One run's outcome.
struct Run {
    cumulative: Vec<f64>,
    /// For R-PERP: (batches, batches that eliminated an arm, mean fraction of arms kept).
    eliminations: Option<(usize, usize, f64)>,
    /// H or W, and the width multiplying σ (GP-UCB) or β^{1/2} (R-PERP).
    interval: Option<usize>,
    width: Option<f64>,
    /// The information gain in the width, mean over the rounds (GP-UCB, AMM, DMM).
    gamma: Option<f64>,
}

/// The kernel's name in tables and plots; Iwazaki & Takeno (2025) call RBF "SE".
fn se_title(kernel: KernelName) -> &'static str {
    match kernel {
        KernelName::Rbf => "SE",
        _ => kernel.title(),
    }
}

/// Label of the agents' streams, derived from the problem seed.
const AGENT_LABEL: u64 = 0x61_6765_6e74; // "agent"

fn run_one(
    kernel: KernelName,
    method: Variant,
    rep: usize,
    args: &NonstationaryArgs,
) -> Result<Run, Error> {
    match (kernel, kernel.nu()) {
        (KernelName::Rbf, _) => play(Rbf::new(0.5)?, kernel, method, rep, args),
        (_, Some(nu)) => play(Matern::new(nu, 0.5)?, kernel, method, rep, args),
        (_, None) => Err(Error::Unsupported {
            what: "the linear kernel in `reproduce nonstationary`".into(),
        }),
    }
}

fn play<K: Kernel + Copy + 'static>(
    kernel: K,
    choice: KernelName,
    variant: Variant,
    rep: usize,
    args: &NonstationaryArgs,
) -> Result<Run, Error> {
    let seed = derive_seed(args.run.seed, &[choice as u64, rep as u64]);
    let problem = DriftingProblem::paper004(&kernel, args.horizon, args.noise, seed)?;
    let arms = problem.arms();
    let variation = problem.variation(args.horizon);
    let norm = problem
        .rkhs_norms()
        .map_or(1.0, |n| n.iter().copied().fold(0.0, f64::max));
    let lambda = args.noise * args.noise;
    let agent_seed = derive_seed(seed, &[AGENT_LABEL, variant.index()]);
    let smoothness = kernel.smoothness();
    let mut run = Run {
        cumulative: Vec::new(),
        eliminations: None,
        interval: None,
        width: None,
        gamma: None,
    };
    // σ, B, δ of every exact bound; c = 1 makes AMM's and DMM's a0 = σ²/c the GP noise λ = ρ².
    let params = BoundParams::new()
        .sigma(args.noise)
        .norm_bound(norm)
        .delta(args.delta)
        .scale(1.0)
        .lambda(lambda);
    // GP-UCB's width on ρ_λ with γ the greedy bound over `rounds` rounds, or the data's.
    let gp_ucb = |rounds: usize, data: bool| -> Result<GpUcb<K>, Error> {
        let gain = if data {
            InformationGain::Data
        } else {
            InformationGain::Fixed(greedy_information_gain(kernel, &arms, lambda, rounds)?)
        };
        GpUcb::new(kernel, params, gain)
    };
    let h = gp_ucb_interval(smoothness, 2, args.horizon, variation)?;
    let method = variant.method;
    run.cumulative = match method {
        Method::Random => problem
            .run(&mut RandomAgent::new(agent_seed), args.horizon)?
            .cumulative(),
        Method::RGpUcb | Method::SwGpUcb => {
            let bound = gp_ucb(h, variant.data_gain == Some(true))?;
            let probe = |b: &GpUcb<K>| (b.information_gain(), Some(b.width()));
            run.interval = Some(h);
            let (cumulative, (gamma, width)) = if method == Method::RGpUcb {
                let mut agent = Tracked::new(Restarting::new(bound, h)?, |a: &Restarting<_>| {
                    probe(a.agent().bound())
                });
                (problem.run(&mut agent, args.horizon)?, agent.means())
            } else {
                let mut agent =
                    Tracked::new(SlidingWindow::new(bound, h)?, |a: &SlidingWindow<_>| {
                        probe(a.agent().bound())
                    });
                (problem.run(&mut agent, args.horizon)?, agent.means())
            };
            run.gamma = Some(gamma);
            run.width = width;
            cumulative.cumulative()
        }
        Method::RAmm => {
            let mut agent = Tracked::new(
                Restarting::new(Amm::new(kernel, params)?, h)?,
                |a: &Restarting<Amm<K>>| {
                    let b = a.agent().bound();
                    (0.5 * b.posterior().log_det(0), Some(b.width()))
                },
            );
            let trace = problem.run(&mut agent, args.horizon)?;
            let (gamma, width) = agent.means();
            (run.interval, run.gamma, run.width) = (Some(h), Some(gamma), width);
            trace.cumulative()
        }
        Method::RDmm | Method::SwDmm => {
            // DMM_GRID[2] = 1: the regulariser a0 itself, whose ½ ld is γ_t. DMM's UCB is a
            // minimum over five widths, so no single width is reported.
            let probe = |b: &Dmm<K>| (0.5 * b.posterior().log_det(2), None);
            let bound = Dmm::new(kernel, params)?;
            let (trace, (gamma, _)) = if method == Method::RDmm {
                let mut agent = Tracked::new(Restarting::new(bound, h)?, |a: &Restarting<_>| {
                    probe(a.agent().bound())
                });
                (problem.run(&mut agent, args.horizon)?, agent.means())
            } else {
                let mut agent =
                    Tracked::new(SlidingWindow::new(bound, h)?, |a: &SlidingWindow<_>| {
                        probe(a.agent().bound())
                    });
                (problem.run(&mut agent, args.horizon)?, agent.means())
            };
            (run.interval, run.gamma) = (Some(h), Some(gamma));
            trace.cumulative()
        }
        Method::RPerp | Method::RPerpTheory => {
            let scale = if method == Method::RPerp {
                args.practical_scale
            } else {
                1.0
            };
            let h = rperp_interval(smoothness, 2, args.horizon, variation)?;
            let params = RPerpParams::new(args.horizon)
                .noise(args.noise)
                .lambda(lambda)
                .norm_bound(norm)
                .delta(args.delta)
                .interval(h)
                .width_scale(scale);
            let mut agent = RPerp::new(kernel, &arms, params, agent_seed)?;
            let cumulative = problem.run(&mut agent, args.horizon)?.cumulative();
            let cuts = agent.eliminations();
            let kept = cuts
                .iter()
                .map(|e| e.kept as f64 / e.before as f64)
                .sum::<f64>()
                / cuts.len().max(1) as f64;
            run.eliminations = Some((
                cuts.len(),
                cuts.iter().filter(|e| e.kept < e.before).count(),
                kept,
            ));
            run.interval = Some(h);
            run.width = Some(agent.width());
            cumulative
        }
    };
    Ok(run)
}

/// One cell: every repetition of one method with one kernel.
#[derive(Debug, Serialize)]
struct CellJson {
    kernel: &'static str,
    method: &'static str,
    final_regret: Vec<f64>,
    curve_mean: Vec<f64>,
    curve_se: Vec<f64>,
    /// Problem seed of each repetition.
    seeds: Vec<u64>,
    /// H (R-GP-UCB, R-PERP) or W (SW-GP-UCB) per repetition.
    #[serde(skip_serializing_if = "Option::is_none")]
    interval: Option<Vec<usize>>,
    /// The width on σ (GP-UCB and AMM: mean over the rounds), or R-PERP's β^{1/2}, per
    /// repetition.
    #[serde(skip_serializing_if = "Option::is_none")]
    width: Option<Vec<f64>>,
    /// The information gain γ in the width (GP-UCB: greedy bound or data; AMM, DMM: ½ ld_{a0}
    /// of the data), mean over the rounds, per repetition.
    #[serde(skip_serializing_if = "Option::is_none")]
    gamma: Option<Vec<f64>>,
    /// R-PERP: batches, batches that eliminated an arm, mean fraction of arms kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    eliminations: Option<Vec<(usize, usize, f64)>>,
}

#[derive(Debug, Serialize)]
struct NonstationaryJson {
    horizon: usize,
    reps: usize,
    seed: u64,
    noise: f64,
    delta: f64,
    practical_scale: f64,
    info_gain: &'static str,
    results: Vec<CellJson>,
}

fn check_args(args: &NonstationaryArgs) -> Result<(), String> {
    let fail = |what: &str| Err(format!("invalid arguments: {what}"));
    if args.reps == 0 || args.horizon < 10 {
        return fail("--reps must be at least 1 and --horizon at least 10");
    }
    if args.kernels.is_empty() || args.methods.is_empty() {
        return fail("--kernels and --methods need at least one value each");
    }
    if !(args.noise.is_finite() && args.noise > 0.0) {
        return fail(&format!(
            "--noise {} is not finite and positive",
            args.noise
        ));
    }
    if !(args.delta > 0.0 && args.delta < 1.0) {
        return fail(&format!("--delta {} is not in (0, 1)", args.delta));
    }
    if !(args.practical_scale.is_finite() && args.practical_scale > 0.0) {
        return fail("--practical-scale must be finite and positive");
    }
    if let Some(m) = first_repeat(&args.methods) {
        let tag = Variant {
            method: m,
            data_gain: None,
        }
        .tag();
        return fail(&format!("--methods lists {tag} twice"));
    }
    if let Some(k) = first_repeat(&args.kernels) {
        return fail(&format!("--kernels lists {} twice", k.tag()));
    }
    KernelName::require_radial(&args.kernels, "reproduce nonstationary")?;
    args.run.check()?;
    Ok(())
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &NonstationaryArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.run.out)?;
    let variants = Variant::expand(&args.methods, args.info_gain);
    let jobs: Vec<(KernelName, Variant, usize)> = args
        .kernels
        .iter()
        .flat_map(|&k| {
            variants
                .iter()
                .flat_map(move |&m| (0..args.reps).map(move |r| (k, m, r)))
        })
        .collect();
    let (runs, threads, elapsed) = run_jobs(
        &jobs,
        args.run.threads,
        "nonstationary",
        |&(kernel, method, rep)| {
            run_one(kernel, method, rep, args).map_err(|e| {
                format!(
                    "{} with {} (repetition {rep}): {e}",
                    se_title(kernel),
                    method.tag()
                )
            })
        },
    )?;
    let mut cells = Vec::new();
    for &kernel in &args.kernels {
        for &method in &variants {
            let reps: Vec<&Run> = jobs
                .iter()
                .zip(&runs)
                .filter(|((k, m, _), _)| *k == kernel && *m == method)
                .map(|(_, run)| run)
                .collect();
            let n = reps.len() as f64;
            let curve: Vec<(f64, f64)> = (0..args.horizon)
                .map(|t| {
                    let (mean, std) = mean_std(reps.iter().map(|r| r.cumulative[t]));
                    (mean, std / n.sqrt())
                })
                .collect();
            cells.push(CellJson {
                kernel: kernel.tag(),
                method: method.tag(),
                final_regret: reps
                    .iter()
                    .map(|r| r.cumulative[args.horizon - 1])
                    .collect(),
                curve_mean: curve.iter().map(|c| c.0).collect(),
                curve_se: curve.iter().map(|c| c.1).collect(),
                seeds: (0..args.reps)
                    .map(|r| derive_seed(args.run.seed, &[kernel as u64, r as u64]))
                    .collect(),
                interval: reps.iter().map(|r| r.interval).collect(),
                width: reps.iter().map(|r| r.width).collect(),
                gamma: reps.iter().map(|r| r.gamma).collect(),
                eliminations: reps.iter().map(|r| r.eliminations).collect(),
            });
        }
    }
    print!("{}", markdown(args, &variants, &cells));
    let json = NonstationaryJson {
        horizon: args.horizon,
        reps: args.reps,
        seed: args.run.seed,
        noise: args.noise,
        delta: args.delta,
        practical_scale: args.practical_scale,
        info_gain: match args.info_gain {
            InfoGain::Greedy => "greedy",
            InfoGain::Data => "data",
            InfoGain::Both => "both",
        },
        results: cells,
    };
    let json_path = args.run.out.join("nonstationary.json");
    write_json(&json_path, &json)?;
    let mut plots = Vec::new();
    for (kernel, cells) in args.kernels.iter().zip(json.results.chunks(variants.len())) {
        let curves: Vec<Curve<'_>> = variants
            .iter()
            .zip(cells)
            .map(|(m, c)| Curve {
                label: m.title(),
                mean: &c.curve_mean,
                std: &c.curve_se,
            })
            .collect();
        let stem = args.run.out.join(format!("nonstationary_{}", kernel.tag()));
        let title = format!(
            "{} kernel, changes at T/5 and 2T/5: cumulative regret, mean ± 1 s.e. over {} seeds",
            se_title(*kernel),
            args.reps
        );
        regret_plot(&stem, &title, &curves)?;
        plots.push(stem);
    }
    announce(
        "nonstationary",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path],
        &plots,
    );
    Ok(())
}

/// Final regret (mean ± s.e.) per kernel and method, with H/W, γ, widths and eliminations.
fn markdown(args: &NonstationaryArgs, variants: &[Variant], cells: &[CellJson]) -> String {
    let mut out = format!(
        "Non-stationary bandit (Iwazaki & Takeno 2025 §6), T = {}, ρ = {}, δ = {}: final cumulative regret, \
         mean ± s.e. over {} seeds (seed {})\n\n| kernel | method | final regret | H or W | \
         γ | width | eliminations |\n|---|---|---:|---:|---:|---:|---|\n",
        args.horizon, args.noise, args.delta, args.reps, args.run.seed
    );
    for cell in cells {
        let n = cell.final_regret.len() as f64;
        let (mean, std) = mean_std(cell.final_regret.iter().copied());
        let interval = cell.interval.as_ref().map_or("–".into(), |h| {
            let (m, _) = mean_std(h.iter().map(|&v| v as f64));
            format!("{m:.0}")
        });
        let width = cell.width.as_ref().map_or("–".into(), |w| {
            let (m, _) = mean_std(w.iter().copied());
            format!("{m:.2}")
        });
        let gamma = cell.gamma.as_ref().map_or("–".into(), |g| {
            let (m, _) = mean_std(g.iter().copied());
            format!("{m:.1}")
        });
        let eliminations = cell.eliminations.as_ref().map_or("–".into(), |e| {
            let batches: usize = e.iter().map(|x| x.0).sum();
            let cutting: usize = e.iter().map(|x| x.1).sum();
            let (kept, _) = mean_std(e.iter().map(|x| x.2));
            format!(
                "{cutting} of {batches} batches eliminated arms; {:.0}% kept on average",
                100.0 * kept
            )
        });
        let method = variants
            .iter()
            .find(|m| m.tag() == cell.method)
            .map_or(cell.method, |m| m.title());
        out.push_str(&format!(
            "| {} | {method} | {mean:.1} ± {:.1} | {interval} | {gamma} | {width} | {eliminations} |\n",
            cell.kernel,
            std / n.sqrt()
        ));
    }
    out
}
