//! `kbandit reproduce timing`: Flynn & Reeb 2024 App. F.1 and Figure 4, the wall-clock time per
//! step of every bound's UCB agent over T rounds.
//!
//! The problem is the synthetic kernel bandit of §7 as in App. F.1: Matérn ν = 5/2, ℓ = 0.5,
//! d = 3, 100 fresh arms per round drawn uniformly from [0, 1]³, σ = 0.1, ‖f‖_H = 10. Every bound
//! of the crate runs with the paper's parameters for that T (`BoundConfig::paper_defaults`:
//! c = T^{−d/(2d+2ν)}, λ = σ²/c, η = 2/T, δ = 0.01; K-UCB, BKB and EK-UCB with the settings of
//! Zenati et al. 2022 §5, λ = μ = 10, β̃ = 0.1, γ = 0.1λ, q̄ = 2). A step is what the paper times:
//! one `select` on the round's arms and one `update` with the reward; drawing the arms and their
//! true values happens outside the clock. Runs go one after another on the calling thread, with
//! the library's parallel loops switched off (`kernel_bandits::parallel::sequential`), so no
//! two measurements share the cores; the repetitions are interleaved (repetition 1 of every
//! bound, then repetition 2, …) so that a change of machine load affects all bounds alike.
//! Repetition r of every bound plays the same function, arms and noise.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use kernel_bandits::bound::{BoundConfig, BoundKind};
use kernel_bandits::prelude::*;
use serde::Serialize;

use super::{
    create_dir, derive_seed, first_repeat, mean_std, progress_bar, write_file, write_json,
};
use crate::kernels::KernelName;
use crate::plot::{Series, YScale, time_lines_plot};

/// Arguments of `kbandit reproduce timing`.
#[derive(Debug, Args)]
pub struct TimingArgs {
    /// Bounds (comma-separated): ay, igp, amm, dmm, cmm, k-ucb, bkb, ek-ucb.
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_bound,
          default_values_t = BoundKind::ALL)]
    bounds: Vec<BoundKind>,
    /// Rounds T per run (also the T of the paper's parameters c and η).
    #[arg(long, default_value_t = 1000)]
    rounds: usize,
    /// Repetitions per bound (the paper's Figure 4 shows the mean over 10; CMM-UCB takes most
    /// of the time, about 25 s per 1000-round run, so 10 take some 4–5 minutes).
    #[arg(long, default_value_t = 2)]
    reps: usize,
    /// Kernel of the function and of the bounds.
    #[arg(long, value_enum, default_value_t = KernelName::Matern52)]
    kernel: KernelName,
    /// Length-scale ℓ.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Input dimension d.
    #[arg(long, default_value_t = 3)]
    dims: usize,
    /// Base seed of the problems.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory for timing.json, timing.csv and the plots.
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

/// Rounds summarised into one entry of the table: the time per round "at t" is the median over
/// rounds t − 9, …, t (of the mean over repetitions), which a single round slowed down by
/// another process does not move.
const TABLE_WINDOW: usize = 10;

/// Window of the centred moving median drawn in the plots and stored in the JSON. A median, not
/// a mean: on a shared machine one round in a hundred can take several times its usual time,
/// and a moving mean turns each such round into a plateau as wide as the window.
const PLOT_WINDOW: usize = 25;

/// One bound's timings.
#[derive(Debug, Serialize)]
struct BoundJson {
    bound: &'static str,
    /// Mean over repetitions of the time of round t (select + update), t = 1..T, in ms.
    time_mean_ms: Vec<f64>,
    /// Standard deviation over repetitions of the same (0 for one repetition).
    time_std_ms: Vec<f64>,
    /// Centred moving median of `time_mean_ms` over `moving_window` rounds (shorter at the
    /// ends).
    moving_median_ms: Vec<f64>,
    /// The 50th, 90th and 99th percentiles of all T × reps round times, in ms.
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    /// Seconds for all T rounds, per repetition.
    total_s: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct TimingJson {
    kernel: &'static str,
    lengthscale: f64,
    dims: usize,
    rounds: usize,
    reps: usize,
    seed: u64,
    arms_per_round: usize,
    /// Every run was timed alone on one thread.
    threads: usize,
    table_window: usize,
    moving_window: usize,
    results: Vec<BoundJson>,
}

fn check_args(args: &TimingArgs) -> Result<(), String> {
    let fail = |what: String| Err(format!("invalid arguments: {what}"));
    if args.rounds == 0 || args.reps == 0 || args.dims == 0 {
        return fail("--rounds, --reps and --dims must be at least 1".into());
    }
    if args.bounds.is_empty() {
        return fail("--bounds needs at least one bound".into());
    }
    if let Some(b) = first_repeat(&args.bounds) {
        return fail(format!("--bounds lists {b} twice"));
    }
    if !(args.lengthscale.is_finite() && args.lengthscale > 0.0) {
        return fail(format!(
            "--lengthscale {} is not finite and positive",
            args.lengthscale
        ));
    }
    KernelName::require_radial(&[args.kernel], "reproduce timing")
}

/// Times `rounds` steps of `kind`'s UCB agent on the problem with `seed`: the seconds of each.
fn time_run(args: &TimingArgs, kind: BoundKind, seed: u64) -> Result<Vec<f64>, Error> {
    let l = args.lengthscale;
    match args.kernel.nu() {
        None => time_steps(Rbf::new(l)?, args, kind, seed),
        Some(nu) => time_steps(Matern::new(nu, l)?, args, kind, seed),
    }
}

fn time_steps<K: Kernel + Clone>(
    kernel: K,
    args: &TimingArgs,
    kind: BoundKind,
    seed: u64,
) -> Result<Vec<f64>, Error> {
    let config = SyntheticConfig {
        dim: args.dims,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel.clone(), config, seed)?;
    let bound_config =
        BoundConfig::paper_defaults(&kernel, args.dims, args.rounds).seed(derive_seed(seed, &[1]));
    // Fresh arms every round: no per-arm state to detect or keep.
    let mut agent =
        UcbAgent::new(kind.build(kernel, &bound_config)?).with_policy(ArmSetPolicy::Off);
    let mut times = Vec::new();
    for t in 0..args.rounds {
        let round = problem.round(t);
        let values = round.values();
        let start = Instant::now();
        let i = agent.select_from(&round.arms())?;
        let Some(value) = values.get(i) else {
            return Err(Error::ArmOutOfRange {
                index: i,
                arms: values.len(),
            });
        };
        agent.update(round.arm(i), value + round.noise())?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok(times)
}

/// Centred moving median over `window` entries (rounds i − window/2 ..= i + window/2),
/// shortened at the ends.
fn moving_median(values: &[f64], window: usize) -> Vec<f64> {
    let half = window / 2;
    (0..values.len())
        .map(|i| {
            let lo = i.saturating_sub(half);
            let hi = (i + half + 1).min(values.len());
            median(&values[lo..hi])
        })
        .collect()
}

/// The median of a non-empty slice (the mean of the middle two for an even length).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile(&sorted, 0.5)
}

/// The `q`-quantile (0 ≤ q ≤ 1) of `sorted`, by linear interpolation.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    let next = sorted.get(i + 1).copied().unwrap_or(sorted[i]);
    sorted[i] + frac * (next - sorted[i])
}

/// The rounds the table reports: 100, 200, 500 and 1000 where they exist, and T.
fn checkpoints(rounds: usize) -> Vec<usize> {
    let mut at: Vec<usize> = [100, 200, 500, 1000]
        .into_iter()
        .filter(|&t| t <= rounds)
        .collect();
    if at.last() != Some(&rounds) {
        at.push(rounds);
    }
    at
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &TimingArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.out)?;
    let kernel_label = args.kernel as u64;
    let seeds: Vec<u64> = (0..args.reps)
        .map(|r| {
            derive_seed(
                args.seed,
                &[kernel_label, args.lengthscale.to_bits(), r as u64],
            )
        })
        .collect();
    let bar = progress_bar(
        (args.reps.saturating_mul(args.bounds.len())) as u64,
        "timing",
    );
    let start = Instant::now();
    // times[b][r][t], in seconds.
    let mut times = vec![Vec::new(); args.bounds.len()];
    for &seed in &seeds {
        for (b, &kind) in args.bounds.iter().enumerate() {
            bar.set_message(kind.name());
            let run = kernel_bandits::parallel::sequential(|| time_run(args, kind, seed))
                .map_err(|e| format!("{kind}: {e}"))?;
            times[b].push(run);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let elapsed = start.elapsed().as_secs_f64();

    let ms = 1e3;
    let results: Vec<BoundJson> = args
        .bounds
        .iter()
        .zip(&times)
        .map(|(kind, reps)| {
            let per_round: Vec<(f64, f64)> = (0..args.rounds)
                .map(|t| mean_std(reps.iter().map(|r| r[t] * ms)))
                .collect();
            let mean: Vec<f64> = per_round.iter().map(|p| p.0).collect();
            let mut all: Vec<f64> = reps.iter().flatten().map(|s| s * ms).collect();
            all.sort_by(f64::total_cmp);
            BoundJson {
                bound: kind.name(),
                moving_median_ms: moving_median(&mean, PLOT_WINDOW),
                time_mean_ms: mean,
                time_std_ms: per_round.iter().map(|p| p.1).collect(),
                p50_ms: quantile(&all, 0.5),
                p90_ms: quantile(&all, 0.9),
                p99_ms: quantile(&all, 0.99),
                total_s: reps.iter().map(|r| r.iter().sum()).collect(),
            }
        })
        .collect();

    print!("{}", markdown(args, &results));
    let json = TimingJson {
        kernel: args.kernel.tag(),
        lengthscale: args.lengthscale,
        dims: args.dims,
        rounds: args.rounds,
        reps: args.reps,
        seed: args.seed,
        arms_per_round: SyntheticConfig::default().arms,
        threads: 1,
        table_window: TABLE_WINDOW,
        moving_window: PLOT_WINDOW,
        results,
    };
    write_json(&args.out.join("timing.json"), &json)?;
    write_csv(&args.out.join("timing.csv"), &json)?;
    plots(args, &json)?;
    eprintln!(
        "timing: {} runs in {elapsed:.1} s, one at a time on one thread; wrote timing.json, \
         timing.csv and timing{{,_zoom,_log}}.{{png,svg}} in {}",
        args.reps.saturating_mul(args.bounds.len()),
        args.out.display()
    );
    Ok(())
}

/// The table: time per round at the checkpoints (mean over the repetitions, median over the
/// window ending there), the median round, and the total per run.
fn markdown(args: &TimingArgs, results: &[BoundJson]) -> String {
    let at = checkpoints(args.rounds);
    let mut out = format!(
        "Wall-clock time per round (select + update), ms: {} ℓ = {}, d = {}, {} fresh arms per \
         round, T = {}; mean over {} repetitions, median over the {TABLE_WINDOW} rounds up to \
         t; one thread (seed {})\n\n| bound |",
        args.kernel.title(),
        args.lengthscale,
        args.dims,
        SyntheticConfig::default().arms,
        args.rounds,
        args.reps,
        args.seed
    );
    for t in &at {
        let _ = write!(out, " t = {t} |");
    }
    out.push_str(" median | total per run (s) |\n|---|");
    out.push_str(&"---:|".repeat(at.len() + 2));
    out.push('\n');
    for r in results {
        let _ = write!(out, "| {} |", r.bound);
        for &t in &at {
            let window = &r.time_mean_ms[t.saturating_sub(TABLE_WINDOW)..t];
            let _ = write!(out, " {} |", significant(median(window)));
        }
        let (total, _) = mean_std(r.total_s.iter().copied());
        let _ = writeln!(out, " {} | {} |", significant(r.p50_ms), significant(total));
    }
    out
}

/// Three significant digits, without scientific notation for the usual range.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// `timing.csv`: one row per round t, the mean time per round of each bound in ms.
fn write_csv(path: &Path, json: &TimingJson) -> Result<(), String> {
    let mut csv = String::from("t");
    for r in &json.results {
        let _ = write!(csv, ",{}_ms", r.bound);
    }
    csv.push('\n');
    for t in 0..json.rounds {
        let _ = write!(csv, "{}", t + 1);
        for r in &json.results {
            let _ = write!(csv, ",{}", r.time_mean_ms[t]);
        }
        csv.push('\n');
    }
    write_file(path, &csv)
}

/// Figure 4's three panels as three files: linear y, zoomed linear y (up to the peak of the
/// slowest bound but one, so that the fast bounds separate; with one bound, its own peak), and
/// log y; moving medians of the mean over repetitions.
fn plots(args: &TimingArgs, json: &TimingJson) -> Result<(), String> {
    let series: Vec<Series> = json
        .results
        .iter()
        .map(|r| Series {
            label: r.bound.to_uppercase(),
            points: r
                .moving_median_ms
                .iter()
                .enumerate()
                .map(|(t, &v)| ((t + 1) as f64, v))
                .collect(),
        })
        .collect();
    let title = |what: &str| {
        format!(
            "Time per round{what}: {}, ℓ = {}, d = {}, mean of {} reps",
            args.kernel.title(),
            args.lengthscale,
            args.dims,
            args.reps,
        )
    };
    let moving = format!("time per round (ms, {PLOT_WINDOW}-round moving median)");
    let desc = ("round t", moving.as_str());
    let dir = &args.out;
    time_lines_plot(
        &dir.join("timing"),
        &title(""),
        desc,
        &series,
        YScale::Linear,
    )?;
    let mut peaks: Vec<f64> = json
        .results
        .iter()
        .map(|r| r.moving_median_ms.iter().copied().fold(0.0, f64::max))
        .collect();
    peaks.sort_by(f64::total_cmp);
    let top = peaks[peaks.len().saturating_sub(2)];
    let zoom = YScale::LinearUpTo(top * 1.05);
    time_lines_plot(
        &dir.join("timing_zoom"),
        &title(" (zoomed)"),
        desc,
        &series,
        zoom,
    )?;
    let moving = format!("time per round (ms, log scale, {PLOT_WINDOW}-round moving median)");
    let desc = ("round t", moving.as_str());
    time_lines_plot(
        &dir.join("timing_log"),
        &title(""),
        desc,
        &series,
        YScale::Log,
    )
}
