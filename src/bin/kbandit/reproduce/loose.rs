//! `kbandit reproduce loose`: Flynn & Reeb 2024 App. F.3 and Figure 7, the UCB agents run with
//! loose upper bounds on σ and B.
//!
//! The problem is the synthetic kernel bandit of §7 with its true values: a random function
//! with ‖f‖_H = B_true exactly (Matérn 5/2, ℓ = 0.5, d = 3 by default) and N(0, σ_true²) noise,
//! σ_true = 0.1, B_true = 10. Only the values the bounds *assume* change: every pair
//! (σ, B) ∈ `--assumed-sigma` × `--assumed-norm` (the paper's {0.1, 0.2} × {10, 20}). Each
//! repetition draws one function and one sequence of arm sets and noise, which every method and
//! every pair plays; the problem seed of repetition r is the one `reproduce table1` uses for the
//! same kernel and length-scale, so the pair (σ_true, B_true) reproduces that table's cell. The
//! other parameters are the paper's, computed from the assumed σ: c = T^{−d/(2d+2ν)} (c = 1 for
//! RBF), λ = σ²/c, AMM's a = σ²/c, DMM's grid {0.1, 0.3, 1, 3, 10}·σ²/c, η = 2/T, δ = 0.01.

use std::path::Path;

use clap::Args;
use kernel_bandits::bound::BoundConfig;
use kernel_bandits::prelude::*;
use serde::Serialize;

use super::table1::{Method, RANDOM_AGENT_LABEL, Setting};
use super::{
    RepetitionRows, RunOptions, announce, create_dir, derive_seed, first_repeat, mean_std,
    run_jobs, write_json, write_repetitions_csv,
};
use crate::kernels::KernelName;
use crate::plot::{BarGroup, grouped_bar_plot};

/// Arguments of `kbandit reproduce loose`.
#[derive(Debug, Args)]
pub struct LooseArgs {
    /// Kernel of the function and of the bounds.
    #[arg(long, value_enum, default_value_t = KernelName::Matern52)]
    kernel: KernelName,
    /// Length-scale ℓ.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Input dimension d.
    #[arg(long, default_value_t = 3)]
    dims: usize,
    /// True noise standard deviation σ: the rewards get N(0, σ²) noise.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    true_sigma: f64,
    /// True RKHS norm: the random function has ‖f‖_H equal to it exactly.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    true_norm: f64,
    /// The σ values the bounds assume (comma-separated), each an upper bound on the true σ.
    #[arg(long, value_delimiter = ',', default_values_t = [0.1, 0.2], allow_negative_numbers = true)]
    assumed_sigma: Vec<f64>,
    /// The B values the bounds assume (comma-separated), each an upper bound on ‖f‖_H.
    #[arg(long, value_delimiter = ',', default_values_t = [10.0, 20.0], allow_negative_numbers = true)]
    assumed_norm: Vec<f64>,
    /// δ of the bounds.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    delta: f64,
    /// Methods (comma-separated); add `cmm` for the exact CMM-UCB (25–40 s per 1000-round run
    /// with Matérn 5/2, so 4 pairs × 10 repetitions add 10–15 minutes on two cores).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::Dmm, Method::Amm, Method::Ay, Method::Igp, Method::Random])]
    methods: Vec<Method>,
    /// Repetitions (problems) per pair.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Rounds T per run.
    #[arg(long, default_value_t = 1000)]
    horizon: usize,
    #[command(flatten)]
    run: RunOptions,
}

/// One assumed pair (σ, B).
#[derive(Debug, Clone, Copy)]
struct Pair {
    sigma: f64,
    norm: f64,
}

impl Pair {
    fn title(self) -> String {
        format!("σ = {}, B = {}", self.sigma, self.norm)
    }
}

/// One cell: every repetition of one method under one assumed pair.
#[derive(Debug, Serialize)]
struct CellJson {
    method: &'static str,
    assumed_sigma: f64,
    assumed_norm: f64,
    final_regret: Vec<f64>,
    curve_mean: Vec<f64>,
    curve_std: Vec<f64>,
    /// Problem seed of each repetition (the same for every pair and method).
    seeds: Vec<u64>,
    wall_time_s: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct LooseJson {
    kernel: &'static str,
    lengthscale: f64,
    dims: usize,
    horizon: usize,
    reps: usize,
    seed: u64,
    true_sigma: f64,
    true_norm: f64,
    delta: f64,
    arms_per_round: usize,
    results: Vec<CellJson>,
}

fn check_args(args: &LooseArgs) -> Result<(), String> {
    let fail = |what: String| Err(format!("invalid arguments: {what}"));
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if args.dims == 0 {
        return fail("--dims must be at least 1".into());
    }
    if args.reps == 0 || args.horizon == 0 {
        return fail("--reps and --horizon must be at least 1".into());
    }
    if args.assumed_sigma.is_empty() || args.assumed_norm.is_empty() || args.methods.is_empty() {
        return fail(
            "--assumed-sigma, --assumed-norm and --methods need at least one value each".into(),
        );
    }
    for (name, values) in [
        ("--lengthscale", &[args.lengthscale][..]),
        ("--true-norm", &[args.true_norm][..]),
        ("--assumed-sigma", &args.assumed_sigma),
        ("--assumed-norm", &args.assumed_norm),
    ] {
        if let Some(v) = values.iter().find(|v| !positive(**v)) {
            return fail(format!("{name} value {v} is not finite and positive"));
        }
    }
    // σ_true = 0 (noiseless rewards) is a valid problem; a negative or NaN σ is not.
    if !(args.true_sigma.is_finite() && args.true_sigma >= 0.0) {
        return fail(format!(
            "--true-sigma {} is not finite and non-negative",
            args.true_sigma
        ));
    }
    if !(args.delta > 0.0 && args.delta <= 1.0) {
        return fail(format!("--delta {} is not in (0, 1]", args.delta));
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(format!("--methods lists {} twice", m.tag()));
    }
    if let Some(s) = first_repeat(&args.assumed_sigma) {
        return fail(format!("--assumed-sigma lists {s} twice"));
    }
    if let Some(b) = first_repeat(&args.assumed_norm) {
        return fail(format!("--assumed-norm lists {b} twice"));
    }
    KernelName::require_radial(&[args.kernel], "reproduce loose")?;
    args.run.check()
}

/// One run of `method` with the assumed `pair` on repetition `rep`: the cumulative regret and
/// the wall time.
fn run_one(
    args: &LooseArgs,
    setting: Setting,
    method: Method,
    pair: Pair,
    rep: usize,
) -> Result<(Vec<f64>, f64), Error> {
    let seed = setting.seed(args.run.seed, rep);
    let l = setting.lengthscale;
    let start = std::time::Instant::now();
    let cumulative = match args.kernel.nu() {
        None => play(Rbf::new(l)?, args, method, pair, seed)?,
        Some(nu) => play(Matern::new(nu, l)?, args, method, pair, seed)?,
    };
    Ok((cumulative, start.elapsed().as_secs_f64()))
}

/// Plays `method` on the problem with `seed` (true σ and ‖f‖) with bounds that assume `pair`.
fn play<K: Kernel + Clone + 'static>(
    kernel: K,
    args: &LooseArgs,
    method: Method,
    pair: Pair,
    seed: u64,
) -> Result<Vec<f64>, Error> {
    let config = SyntheticConfig {
        dim: args.dims,
        norm_bound: args.true_norm,
        noise_sd: args.true_sigma,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel.clone(), config, seed)?;
    // c depends on the kernel, d and T only; λ, AMM's a and DMM's grid follow the assumed σ.
    let params = BoundParams::paper_defaults(&kernel, args.dims, args.horizon)
        .sigma(pair.sigma)
        .norm_bound(pair.norm)
        .delta(args.delta);
    let mut agent: Box<dyn BanditAgent> = match method.bound() {
        Some(kind) => {
            let config = BoundConfig::new().params(params);
            Box::new(UcbAgent::new(kind.build(kernel, &config)?))
        }
        None => Box::new(RandomAgent::new(derive_seed(seed, &[RANDOM_AGENT_LABEL]))),
    };
    Ok(problem.run(agent.as_mut(), args.horizon)?.cumulative())
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &LooseArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.run.out)?;
    let setting = Setting {
        kernel: args.kernel,
        lengthscale: args.lengthscale,
    };
    let pairs: Vec<Pair> = args
        .assumed_sigma
        .iter()
        .flat_map(|&sigma| {
            args.assumed_norm
                .iter()
                .map(move |&norm| Pair { sigma, norm })
        })
        .collect();
    let mut jobs: Vec<(usize, Method, usize)> = args
        .methods
        .iter()
        .flat_map(|&m| (0..pairs.len()).flat_map(move |p| (0..args.reps).map(move |r| (p, m, r))))
        .collect();
    jobs.sort_by_key(|&(_, m, _)| std::cmp::Reverse(m.cost()));
    let (runs, threads, elapsed) = run_jobs(&jobs, args.run.threads, "loose", |&(p, m, r)| {
        run_one(args, setting, m, pairs[p], r).map_err(|e| {
            format!(
                "{} with {} assuming {} (repetition {r}): {e}",
                setting.title(),
                m.tag(),
                pairs[p].title()
            )
        })
    })?;

    // Cells in table order: methods in the order given, then pairs.
    let mut cells = Vec::new();
    for &method in &args.methods {
        for (p, pair) in pairs.iter().enumerate() {
            let reps: Vec<&(Vec<f64>, f64)> = jobs
                .iter()
                .zip(&runs)
                .filter(|((jp, jm, _), _)| *jp == p && *jm == method)
                .map(|(_, run)| run)
                .collect();
            let curve: Vec<(f64, f64)> = (0..args.horizon)
                .map(|t| mean_std(reps.iter().map(|r| r.0[t])))
                .collect();
            cells.push(CellJson {
                method: method.tag(),
                assumed_sigma: pair.sigma,
                assumed_norm: pair.norm,
                final_regret: reps.iter().map(|r| r.0[args.horizon - 1]).collect(),
                curve_mean: curve.iter().map(|c| c.0).collect(),
                curve_std: curve.iter().map(|c| c.1).collect(),
                seeds: (0..args.reps)
                    .map(|r| setting.seed(args.run.seed, r))
                    .collect(),
                wall_time_s: reps.iter().map(|r| r.1).collect(),
            });
        }
    }

    print!("{}", markdown(args, &pairs, &cells));
    let json = LooseJson {
        kernel: args.kernel.tag(),
        lengthscale: args.lengthscale,
        dims: args.dims,
        horizon: args.horizon,
        reps: args.reps,
        seed: args.run.seed,
        true_sigma: args.true_sigma,
        true_norm: args.true_norm,
        delta: args.delta,
        arms_per_round: SyntheticConfig::default().arms,
        results: cells,
    };
    let json_path = args.run.out.join("loose.json");
    write_json(&json_path, &json)?;
    let csv_path = args.run.out.join("loose.csv");
    write_csv(&csv_path, &json)?;

    let titles: Vec<String> = pairs.iter().map(|p| p.title()).collect();
    let finals: Vec<Vec<(f64, f64)>> = (0..pairs.len())
        .map(|p| {
            (0..args.methods.len())
                .map(|m| {
                    mean_std(
                        json.results[m * pairs.len() + p]
                            .final_regret
                            .iter()
                            .copied(),
                    )
                })
                .collect()
        })
        .collect();
    let means: Vec<Vec<f64>> = finals
        .iter()
        .map(|g| g.iter().map(|c| c.0).collect())
        .collect();
    let stds: Vec<Vec<f64>> = finals
        .iter()
        .map(|g| g.iter().map(|c| c.1).collect())
        .collect();
    let groups: Vec<BarGroup<'_>> = (0..pairs.len())
        .map(|p| BarGroup {
            label: &titles[p],
            mean: &means[p],
            std: &stds[p],
        })
        .collect();
    let categories: Vec<&str> = args.methods.iter().map(|m| m.title()).collect();
    let stem = args.run.out.join("loose");
    let title = format!(
        "{}, d = {}, true σ = {}, ‖f‖ = {}: regret after T = {}, mean ± 1 std over {} reps",
        setting.title(),
        args.dims,
        args.true_sigma,
        args.true_norm,
        args.horizon,
        args.reps
    );
    grouped_bar_plot(&stem, &title, "cumulative regret", &categories, &groups)?;
    announce(
        "loose",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path, &csv_path],
        &[stem],
    );
    Ok(())
}

/// The regret table (methods × assumed pairs), then each cell relative to the pair of the true
/// values when that pair was run.
fn markdown(args: &LooseArgs, pairs: &[Pair], cells: &[CellJson]) -> String {
    let cell = |m: usize, p: usize| &cells[m * pairs.len() + p];
    let header = |out: &mut String| {
        out.push_str("| method |");
        for p in pairs {
            out.push_str(&format!(" {} |", p.title()));
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(pairs.len()));
        out.push('\n');
    };
    let mut out = format!(
        "Cumulative regret after T = {} rounds with assumed (σ, B): {} ℓ = {}, d = {}, true σ = {}, \
         ‖f‖ = {}; mean ± std over {} repetitions (seed {})\n\n",
        args.horizon,
        args.kernel.title(),
        args.lengthscale,
        args.dims,
        args.true_sigma,
        args.true_norm,
        args.reps,
        args.run.seed
    );
    header(&mut out);
    for (m, method) in args.methods.iter().enumerate() {
        out.push_str(&format!("| {} |", method.title()));
        for p in 0..pairs.len() {
            let (mean, std) = mean_std(cell(m, p).final_regret.iter().copied());
            out.push_str(&format!(" {mean:.1} ± {std:.1} |"));
        }
        out.push('\n');
    }
    let truth = pairs
        .iter()
        .position(|p| p.sigma == args.true_sigma && p.norm == args.true_norm);
    if let Some(t) = truth {
        out.push_str(&format!(
            "\nMean regret relative to the true values ({}):\n\n",
            pairs[t].title()
        ));
        header(&mut out);
        for (m, method) in args.methods.iter().enumerate() {
            out.push_str(&format!("| {} |", method.title()));
            let base = mean_std(cell(m, t).final_regret.iter().copied()).0;
            for p in 0..pairs.len() {
                let mean = mean_std(cell(m, p).final_regret.iter().copied()).0;
                out.push_str(&format!(" {:.2}× |", mean / base));
            }
            out.push('\n');
        }
    }
    out
}

/// `loose.csv`, long format: one row per (method, assumed σ, assumed B, repetition).
fn write_csv(path: &Path, json: &LooseJson) -> Result<(), String> {
    let cells = json.results.iter().map(|cell| RepetitionRows {
        key: vec![
            cell.method.to_owned(),
            cell.assumed_sigma.to_string(),
            cell.assumed_norm.to_string(),
        ],
        final_regret: &cell.final_regret,
        seeds: &cell.seeds,
        wall_time_s: &cell.wall_time_s,
    });
    write_repetitions_csv(path, &["method", "assumed_sigma", "assumed_norm"], cells)
}
