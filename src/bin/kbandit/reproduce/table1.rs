//! `kbandit reproduce table1`: Flynn & Reeb 2024 §7 and Table 1.
//!
//! For every setting (kernel × length-scale) and repetition, one random RKHS function with
//! ‖f‖_H = B and one sequence of arm sets and noise are drawn; every method plays that same
//! problem (the paper's protocol). Runs are independent jobs spread over the cores by rayon;
//! each job's randomness is a function of (seed, kernel, length-scale, repetition) only, so the
//! results do not depend on the thread count or on which other settings are selected.

use std::path::Path;
use std::time::Instant;

use crate::kernels::KernelName;
use clap::{Args, ValueEnum};
use kernel_bandits::bound::{BoundConfig, BoundKind};
use kernel_bandits::prelude::*;
use serde::Serialize;

use super::{
    RepetitionRows, RunOptions, announce, create_dir, derive_seed, first_repeat, mean_std,
    run_jobs, write_json, write_repetitions_csv,
};
use crate::plot::{Curve, regret_plot};

/// Arguments of `kbandit reproduce table1`.
#[derive(Debug, Args)]
pub struct Table1Args {
    /// Input dimension d.
    #[arg(long, default_value_t = 3)]
    dims: usize,
    /// Kernels (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [KernelName::Rbf, KernelName::Matern52, KernelName::Matern32])]
    kernels: Vec<KernelName>,
    /// Length-scales (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [0.5, 0.2], allow_negative_numbers = true)]
    lengthscales: Vec<f64>,
    /// Methods (comma-separated); add `cmm` for the exact CMM-UCB (an eigendecomposition
    /// update per round: 7–11 s per 1000-round run with RBF, about 25 s with Matérn; all six
    /// methods at 10 repetitions took 12.5 minutes on two cores).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::Dmm, Method::Amm, Method::Ay, Method::Igp, Method::Random])]
    methods: Vec<Method>,
    /// Repetitions per setting.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Rounds T per run.
    #[arg(long, default_value_t = 1000)]
    horizon: usize,
    #[command(flatten)]
    run: RunOptions,
}

/// The agents compared in Flynn & Reeb 2024 Table 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Method {
    Cmm,
    Dmm,
    Amm,
    Ay,
    Igp,
    Random,
}

impl Method {
    pub(super) fn tag(self) -> &'static str {
        self.bound().map_or("random", BoundKind::name)
    }

    /// Rough relative cost of a run, to start the longest first.
    pub(super) fn cost(self) -> u32 {
        match self {
            Self::Cmm => 100,
            Self::Dmm => 5,
            Self::Random => 0,
            _ => 1,
        }
    }

    /// The bound of a UCB agent (`None` for the random agent).
    pub(super) fn bound(self) -> Option<BoundKind> {
        match self {
            Self::Cmm => Some(BoundKind::Cmm),
            Self::Dmm => Some(BoundKind::Dmm),
            Self::Amm => Some(BoundKind::Amm),
            Self::Ay => Some(BoundKind::Ay),
            Self::Igp => Some(BoundKind::Igp),
            Self::Random => None,
        }
    }

    pub(super) fn title(self) -> &'static str {
        match self {
            Self::Cmm => "Kernel CMM-UCB",
            Self::Dmm => "Kernel DMM-UCB",
            Self::Amm => "Kernel AMM-UCB",
            Self::Ay => "AY-GP-UCB",
            Self::Igp => "IGP-UCB",
            Self::Random => "Random",
        }
    }
}

/// Flynn & Reeb 2024 Table 1 (d = 3, T = 1000, 10 repetitions): (kernel, ℓ, method, mean, std). The
/// paper ran CMM-UCB for 200 rounds only, so it has no column here.
const PAPER_TABLE1: [(KernelName, f64, Method, f64, f64); 30] = {
    use KernelName::*;
    use Method::*;
    [
        (Rbf, 0.5, Dmm, 32.2, 20.9),
        (Rbf, 0.2, Dmm, 491.4, 117.1),
        (Matern52, 0.5, Dmm, 129.5, 45.6),
        (Matern52, 0.2, Dmm, 795.1, 206.0),
        (Matern32, 0.5, Dmm, 195.6, 78.0),
        (Matern32, 0.2, Dmm, 814.1, 344.4),
        (Rbf, 0.5, Amm, 88.8, 6.1),
        (Rbf, 0.2, Amm, 1206.2, 20.8),
        (Matern52, 0.5, Amm, 197.0, 24.4),
        (Matern52, 0.2, Amm, 1661.5, 90.1),
        (Matern32, 0.5, Amm, 316.1, 51.1),
        (Matern32, 0.2, Amm, 1741.2, 351.2),
        (Rbf, 0.5, Ay, 136.9, 12.7),
        (Rbf, 0.2, Ay, 1518.4, 38.9),
        (Matern52, 0.5, Ay, 331.7, 45.2),
        (Matern52, 0.2, Ay, 2382.4, 135.4),
        (Matern32, 0.5, Ay, 546.0, 70.0),
        (Matern32, 0.2, Ay, 2421.3, 568.5),
        (Rbf, 0.5, Igp, 314.1, 110.5),
        (Rbf, 0.2, Igp, 1433.0, 122.8),
        (Matern52, 0.5, Igp, 553.3, 67.5),
        (Matern52, 0.2, Igp, 1853.1, 105.7),
        (Matern32, 0.5, Igp, 655.6, 67.4),
        (Matern32, 0.2, Igp, 1707.5, 375.5),
        (Rbf, 0.5, Random, 4282.4, 1015.4),
        (Rbf, 0.2, Random, 3872.4, 783.7),
        (Matern52, 0.5, Random, 4264.7, 778.0),
        (Matern52, 0.2, Random, 3677.5, 559.2),
        (Matern32, 0.5, Random, 4175.1, 681.0),
        (Matern32, 0.2, Random, 3442.0, 1080.4),
    ]
};

/// The paper's (mean, std) for a cell, when the run has the paper's d and T.
fn paper_cell(kernel: KernelName, lengthscale: f64, method: Method) -> Option<(f64, f64)> {
    PAPER_TABLE1
        .iter()
        .find(|(k, l, m, _, _)| *k == kernel && *l == lengthscale && *m == method)
        .map(|&(_, _, _, mean, std)| (mean, std))
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Setting {
    pub(super) kernel: KernelName,
    pub(super) lengthscale: f64,
}

impl Setting {
    pub(super) fn title(&self) -> String {
        format!("{} ℓ={}", self.kernel.title(), self.lengthscale)
    }

    /// The problem seed of repetition `rep`.
    pub(super) fn seed(&self, base: u64, rep: usize) -> u64 {
        let kernel = self.kernel as u64;
        derive_seed(base, &[kernel, self.lengthscale.to_bits(), rep as u64])
    }
}

/// One run's outcome.
struct Run {
    cumulative: Vec<f64>,
    wall_time_s: f64,
}

/// One run of `method` on repetition `rep` of `setting`.
fn run_one(setting: Setting, method: Method, rep: usize, args: &Table1Args) -> Result<Run, Error> {
    let seed = setting.seed(args.run.seed, rep);
    let l = setting.lengthscale;
    let start = Instant::now();
    let cumulative = match (setting.kernel, setting.kernel.nu()) {
        (KernelName::Rbf, _) => play(Rbf::new(l)?, method, seed, args)?,
        (_, Some(nu)) => play(Matern::new(nu, l)?, method, seed, args)?,
        (_, None) => {
            return Err(Error::Unsupported {
                what: "the linear kernel in `reproduce table1`".into(),
            });
        }
    };
    Ok(Run {
        cumulative,
        wall_time_s: start.elapsed().as_secs_f64(),
    })
}

/// Label of the random agent's stream, derived from the problem seed.
pub(super) const RANDOM_AGENT_LABEL: u64 = 0x7261_6e64_6f6d; // "random"

/// Plays `method` on the problem with `seed`, with the paper's parameters (σ = 0.1, B = 10,
/// δ = 0.01, c from [`kernel_bandits::bound::paper_scale`], λ = σ²/c, η = 2/T); returns the
/// cumulative regret.
fn play<K: Kernel + Clone + 'static>(
    kernel: K,
    method: Method,
    seed: u64,
    args: &Table1Args,
) -> Result<Vec<f64>, Error> {
    let config = SyntheticConfig {
        dim: args.dims,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel.clone(), config, seed)?;
    let params = BoundParams::paper_defaults(&kernel, args.dims, args.horizon);
    let mut agent: Box<dyn BanditAgent> = match method.bound() {
        Some(kind) => {
            let config = BoundConfig::new().params(params);
            Box::new(UcbAgent::new(kind.build(kernel, &config)?))
        }
        None => Box::new(RandomAgent::new(derive_seed(seed, &[RANDOM_AGENT_LABEL]))),
    };
    Ok(problem.run(agent.as_mut(), args.horizon)?.cumulative())
}

/// One cell of the table: every repetition of one method in one setting.
#[derive(Debug, Serialize)]
struct CellJson {
    kernel: &'static str,
    lengthscale: f64,
    method: &'static str,
    final_regret: Vec<f64>,
    curve_mean: Vec<f64>,
    curve_std: Vec<f64>,
    /// Problem seed of each repetition.
    seeds: Vec<u64>,
    wall_time_s: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paper_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paper_std: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Table1Json {
    horizon: usize,
    dims: usize,
    reps: usize,
    seed: u64,
    arms_per_round: usize,
    results: Vec<CellJson>,
}

fn check_args(args: &Table1Args) -> Result<(), String> {
    let fail = |what: &str| Err(format!("invalid arguments: {what}"));
    if args.dims == 0 {
        return fail("--dims must be at least 1");
    }
    if args.reps == 0 || args.horizon == 0 {
        return fail("--reps and --horizon must be at least 1");
    }
    if args.kernels.is_empty() || args.lengthscales.is_empty() || args.methods.is_empty() {
        return fail("--kernels, --lengthscales and --methods need at least one value each");
    }
    if let Some(l) = args
        .lengthscales
        .iter()
        .find(|l| !(l.is_finite() && **l > 0.0))
    {
        return fail(&format!("length-scale {l} is not finite and positive"));
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(&format!("--methods lists {} twice", m.tag()));
    }
    if let Some(k) = first_repeat(&args.kernels) {
        return fail(&format!("--kernels lists {} twice", k.tag()));
    }
    if let Some(l) = first_repeat(&args.lengthscales) {
        return fail(&format!("--lengthscales lists {l} twice"));
    }
    KernelName::require_radial(&args.kernels, "reproduce table1")?;
    args.run.check()?;
    Ok(())
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &Table1Args) -> Result<(), String> {
    check_args(args)?;
    // Before the runs, so that an unwritable directory costs nothing.
    create_dir(&args.run.out)?;
    let settings: Vec<Setting> = args
        .kernels
        .iter()
        .flat_map(|&kernel| {
            args.lengthscales.iter().map(move |&lengthscale| Setting {
                kernel,
                lengthscale,
            })
        })
        .collect();
    // The costliest method first, so that no long run starts last.
    let mut jobs: Vec<(usize, Method, usize)> = args
        .methods
        .iter()
        .flat_map(|&m| {
            (0..settings.len()).flat_map(move |s| (0..args.reps).map(move |r| (s, m, r)))
        })
        .collect();
    jobs.sort_by_key(|&(_, m, _)| std::cmp::Reverse(m.cost()));
    let (runs, threads, elapsed) =
        run_jobs(&jobs, args.run.threads, "table1", |&(s, method, rep)| {
            run_one(settings[s], method, rep, args).map_err(|e| {
                format!(
                    "{} with {} (repetition {rep}): {e}",
                    settings[s].title(),
                    method.tag()
                )
            })
        })?;

    // Gather the cells in table order: settings, then methods in the order given.
    let mut cells = Vec::new();
    for (s, setting) in settings.iter().enumerate() {
        for &method in &args.methods {
            let reps: Vec<&Run> = jobs
                .iter()
                .zip(&runs)
                .filter(|((js, jm, _), _)| *js == s && *jm == method)
                .map(|(_, run)| run)
                .collect();
            let curve: Vec<(f64, f64)> = (0..args.horizon)
                .map(|t| mean_std(reps.iter().map(|r| r.cumulative[t])))
                .collect();
            let paper = (args.dims == 3 && args.horizon == 1000)
                .then(|| paper_cell(setting.kernel, setting.lengthscale, method))
                .flatten();
            cells.push(CellJson {
                kernel: setting.kernel.tag(),
                lengthscale: setting.lengthscale,
                method: method.tag(),
                final_regret: reps
                    .iter()
                    .map(|r| r.cumulative[args.horizon - 1])
                    .collect(),
                curve_mean: curve.iter().map(|c| c.0).collect(),
                curve_std: curve.iter().map(|c| c.1).collect(),
                seeds: (0..args.reps)
                    .map(|r| setting.seed(args.run.seed, r))
                    .collect(),
                wall_time_s: reps.iter().map(|r| r.wall_time_s).collect(),
                paper_mean: paper.map(|p| p.0),
                paper_std: paper.map(|p| p.1),
            });
        }
    }

    print!("{}", markdown(args, &settings, &cells));
    let json = Table1Json {
        horizon: args.horizon,
        dims: args.dims,
        reps: args.reps,
        seed: args.run.seed,
        arms_per_round: SyntheticConfig::default().arms,
        results: cells,
    };
    let json_path = args.run.out.join("table1.json");
    write_json(&json_path, &json)?;
    write_csv(&args.run.out.join("table1.csv"), &json)?;
    let mut plots = Vec::new();
    for (setting, cells) in settings.iter().zip(json.results.chunks(args.methods.len())) {
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
        let stem = args.run.out.join(format!(
            "regret_{}_{}",
            setting.kernel.tag(),
            setting.lengthscale
        ));
        let title = format!(
            "{}, d = {}: cumulative regret, mean ± 1 std over {} repetitions",
            setting.title(),
            args.dims,
            args.reps
        );
        regret_plot(&stem, &title, &curves)?;
        plots.push(stem);
    }
    let csv_path = args.run.out.join("table1.csv");
    announce(
        "table1",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path, &csv_path],
        &plots,
    );
    Ok(())
}

/// The regret table (methods × settings), and the paper's beside it when d and T match.
fn markdown(args: &Table1Args, settings: &[Setting], cells: &[CellJson]) -> String {
    let cell = |s: usize, m: usize| &cells[s * args.methods.len() + m];
    let header = |out: &mut String| {
        out.push_str("| method |");
        for s in settings {
            out.push_str(&format!(" {} |", s.title()));
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(settings.len()));
        out.push('\n');
    };
    let mut out = format!(
        "Cumulative regret after T = {} rounds, d = {}: mean ± std over {} repetitions (seed {})\n\n",
        args.horizon, args.dims, args.reps, args.run.seed
    );
    header(&mut out);
    for (m, method) in args.methods.iter().enumerate() {
        out.push_str(&format!("| {} |", method.title()));
        for s in 0..settings.len() {
            let c = cell(s, m);
            let (mean, std) = mean_std(c.final_regret.iter().copied());
            out.push_str(&format!(" {mean:.1} ± {std:.1} |"));
        }
        out.push('\n');
    }
    if cells.iter().any(|c| c.paper_mean.is_some()) {
        out.push_str("\nFlynn & Reeb (2024), Table 1 (same settings, its own random draws):\n\n");
        header(&mut out);
        for (m, method) in args.methods.iter().enumerate() {
            out.push_str(&format!("| {} |", method.title()));
            for s in 0..settings.len() {
                match (cell(s, m).paper_mean, cell(s, m).paper_std) {
                    (Some(mean), Some(std)) => out.push_str(&format!(" {mean:.1} ± {std:.1} |")),
                    _ => out.push_str(" – |"),
                }
            }
            out.push('\n');
        }
    }
    out
}

/// `table1.csv`, long format: one row per (kernel, length-scale, method, repetition).
fn write_csv(path: &Path, json: &Table1Json) -> Result<(), String> {
    let cells = json.results.iter().map(|cell| RepetitionRows {
        key: vec![
            cell.kernel.to_owned(),
            cell.lengthscale.to_string(),
            cell.method.to_owned(),
        ],
        final_regret: &cell.final_regret,
        seeds: &cell.seeds,
        wall_time_s: &cell.wall_time_s,
    });
    write_repetitions_csv(path, &["kernel", "lengthscale", "method"], cells)
}
