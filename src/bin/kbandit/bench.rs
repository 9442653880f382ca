//! `kbandit bench`: time UCB rounds (select + update) of one bound at a given t and number of
//! arms, and print one JSON line; with `--report`, run the whole grid and write BENCHMARKS.md
//! with scaling plots.
//!
//! A measurement builds the bound, warm-starts it with t observations at uniform random
//! points of [0, 1]^d (the exact bounds factorise them in one blocked step), then plays
//! rounds: with `--fixed-arms` on one set of A arms declared to the agent
//! (`UcbAgent::with_arm_set`; the declaration is timed apart, as `setup_s`), otherwise on A
//! fresh uniform arms per round (drawn outside the timed section). Each round's select +
//! update is timed on its own; the JSON line gives the median and the 10th and 90th
//! percentiles in milliseconds. Rewards are f(x) = sin(6x₁)·x₂ + x₃ (+ further coordinates)
//! plus uniform noise of width 0.1.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use kernel_bandits::bound::{AnyBound, BoundConfig, BoundKind};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::kernels::KernelName;
use crate::plot::{Series, loglog_plot};

/// Arguments of `kbandit bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The bound whose UCB agent is timed.
    /// ay, igp, amm, dmm, cmm, k-ucb, bkb or ek-ucb.
    #[arg(long, default_value = "amm", value_parser = crate::parse_bound)]
    bound: BoundKind,
    /// Observations t before the timed rounds.
    #[arg(long = "t", default_value_t = 1000)]
    t: usize,
    /// Arms A per round.
    #[arg(long, default_value_t = 100)]
    arms: usize,
    /// Input dimension d.
    #[arg(long, default_value_t = 3)]
    dims: usize,
    /// Kernel (ℓ = 0.5); `--report` times matern52 only.
    #[arg(long, value_enum, default_value_t = KernelName::Matern52)]
    kernel: KernelName,
    /// Matérn smoothness ν ∈ (0, 100] of `--kernel matern` (required there, refused with any
    /// other kernel).
    #[arg(long, allow_negative_numbers = true)]
    nu: Option<f64>,
    /// Offer the same arms every round, declared to the agent (the fixed-arm path).
    #[arg(long)]
    fixed_arms: bool,
    /// Time AMM, DMM and CMM with the adaptive covariance scale (the default of
    /// `BoundParams::new`) instead of the paper's c = T^{−d/(2d+2ν)}.
    #[arg(long)]
    adaptive_scale: bool,
    /// Time the scoring of every arm (`ConfidenceBound::evaluate`: mean, LCB and UCB) instead
    /// of a UCB round.
    #[arg(long)]
    score: bool,
    /// Worker threads for the parallel loops (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Timed rounds: at most this many.
    #[arg(long, default_value_t = 50)]
    rounds: usize,
    /// Timed rounds: stop after this many seconds (at least 3 rounds are always timed).
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    budget: f64,
    /// Seed of the warm-up data, the arms and the noise.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run the grid (every bound × t ∈ --report-t × A ∈ --report-arms × fixed/fresh) and
    /// write the report here (with `bench-plots/bench_*.{png,svg}` beside it).
    #[arg(long)]
    report: Option<PathBuf>,
    /// t values of the report.
    #[arg(long, value_delimiter = ',', default_values_t = [100, 1000, 5000])]
    report_t: Vec<usize>,
    /// Arm counts of the report.
    #[arg(long, value_delimiter = ',', default_values_t = [100, 1000, 10000])]
    report_arms: Vec<usize>,
}

/// The bound on `kernel` (Matérn 5/2 with ℓ = 0.5 by default): the exact ones with the
/// parameters of Flynn & Reeb (2024 §7) for a horizon of `horizon`; the sketched ones and K-UCB
/// on the same kernel with λ = 1, β = 1 (BKB q̄ = 2, EK-UCB γ = 1, as in `benches/sketched.rs`).
fn build<K: Kernel>(
    kernel: K,
    kind: BoundKind,
    dims: usize,
    horizon: usize,
    seed: u64,
    adaptive: bool,
) -> Result<AnyBound<K>, Error> {
    let mut config = BoundConfig::paper_defaults(&kernel, dims, horizon.max(1));
    if adaptive {
        config.params = config.params.adaptive_scale();
    }
    let config = config
        .sketch(
            SketchParams::new()
                .lambda(1.0)
                .beta(1.0)
                .qbar(2.0)
                .gamma(1.0),
        )
        .seed(seed);
    kind.build(kernel, &config)
}

/// One measurement, as printed.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    bound: BoundKind,
    /// The kernel's command-line name, and Matérn's ν.
    kernel: &'static str,
    nu: Option<f64>,
    t: usize,
    arms: usize,
    dims: usize,
    fixed_arms: bool,
    /// "round" (select + update) or "score" (`evaluate` on every arm).
    mode: &'static str,
    threads: usize,
    rounds: usize,
    median_ms: f64,
    p10_ms: f64,
    p90_ms: f64,
    /// Seconds to warm-start the bound with t observations.
    warmup_s: f64,
    /// Seconds to declare the fixed arm set (0 on the fresh path).
    setup_s: f64,
    /// Bytes of per-arm state kept for the fixed set.
    fixed_bytes: usize,
}

fn uniform_points(rng: &mut ChaCha8Rng, n: usize, dims: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| (0..dims).map(|_| rng.random()).collect())
        .collect()
}

/// f(x) = sin(6x₁)·x₂ + x₃ + … (x₂ = 1 in one dimension).
fn value(x: &[f64]) -> f64 {
    (6.0 * x[0]).sin() * x.get(1).copied().unwrap_or(1.0) + x.iter().skip(2).sum::<f64>()
}

fn reward(x: &[f64], rng: &mut ChaCha8Rng) -> f64 {
    value(x) + 0.1 * (rng.random::<f64>() - 0.5)
}

/// A bound warm-started with `t` observations, and the seconds that took.
fn warm<K: Kernel>(
    kernel: K,
    choice: BoundKind,
    t: usize,
    dims: usize,
    horizon: usize,
    seed: u64,
    adaptive: bool,
) -> Result<(AnyBound<K>, f64), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut bound =
        build(kernel, choice, dims, horizon, seed, adaptive).map_err(|e| e.to_string())?;
    let data = uniform_points(&mut rng, t, dims);
    let targets: Vec<f64> = data.iter().map(|x| reward(x, &mut rng)).collect();
    let start = Instant::now();
    let points = data.as_points().map_err(|e| e.to_string())?;
    bound
        .observe_many(&points, &targets)
        .map_err(|e| e.to_string())?;
    Ok((bound, start.elapsed().as_secs_f64()))
}

/// Times rounds of `bound`'s UCB agent (see the module documentation).
#[allow(clippy::too_many_arguments)]
fn time_rounds<K: Kernel>(
    choice: BoundKind,
    bound: AnyBound<K>,
    (kernel, nu): (KernelName, Option<f64>),
    t: usize,
    arms: usize,
    dims: usize,
    fixed: bool,
    score: bool,
    rounds: usize,
    budget: f64,
    seed: u64,
    warmup_s: f64,
) -> Result<Measurement, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let fixed_set = uniform_points(&mut rng, arms, dims);
    let start = Instant::now();
    let mut agent = if fixed {
        UcbAgent::new(bound)
            .with_arm_set(&fixed_set)
            .map_err(|e| e.to_string())?
    } else {
        UcbAgent::new(bound).with_policy(ArmSetPolicy::Off)
    };
    let setup_s = if fixed {
        start.elapsed().as_secs_f64()
    } else {
        0.0
    };
    let fixed_bytes = agent.bound().fixed_arms().map_or(0, |set| set.bytes);
    let mut times = Vec::with_capacity(rounds);
    let clock = Instant::now();
    while times.len() < rounds.max(1) && (times.len() < 3 || clock.elapsed().as_secs_f64() < budget)
    {
        let fresh;
        let set = if fixed {
            &fixed_set
        } else {
            fresh = uniform_points(&mut rng, arms, dims);
            &fresh
        };
        let noise = 0.1 * (rng.random::<f64>() - 0.5);
        let round = Instant::now();
        if score {
            let points = set.as_points().map_err(|e| e.to_string())?;
            let bounds = agent.bound().evaluate(&points).map_err(|e| e.to_string())?;
            std::hint::black_box(bounds);
        } else {
            let i = agent.select(set).map_err(|e| e.to_string())?;
            let x = &set[i];
            agent
                .update(x, value(x) + noise)
                .map_err(|e| e.to_string())?;
        }
        times.push(round.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let quantile = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok(Measurement {
        bound: choice,
        kernel: kernel.tag(),
        nu,
        t,
        arms,
        dims,
        fixed_arms: fixed,
        mode: if score { "score" } else { "round" },
        threads: rayon::current_num_threads(),
        rounds: times.len(),
        median_ms: quantile(0.5),
        p10_ms: quantile(0.1),
        p90_ms: quantile(0.9),
        warmup_s,
        setup_s,
        fixed_bytes,
    })
}

/// Runs `f` on a pool of `threads` workers, or on the global pool.
fn with_threads<R: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> Result<R, String> {
    match threads {
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| e.to_string())?;
            Ok(pool.install(f))
        }
        None => Ok(f()),
    }
}

pub fn run(args: &BenchArgs) -> Result<(), String> {
    if args.dims == 0 || args.arms == 0 {
        return Err("--dims and --arms must be at least 1".into());
    }
    if !(args.budget.is_finite() && args.budget >= 0.0) {
        return Err(format!(
            "--budget must be a non-negative number of seconds, got {}",
            args.budget
        ));
    }
    if args.threads == Some(0) {
        return Err("--threads must be at least 1".into());
    }
    let nu = args.kernel.smoothness(args.nu)?;
    if let Some(path) = &args.report {
        if args.kernel != KernelName::Matern52 {
            return Err("--report times matern52 only: leave out --kernel and --nu".into());
        }
        return with_threads(args.threads, || report(args, path))?;
    }
    let invalid = |e: Error| e.to_string();
    match (args.kernel, nu) {
        (KernelName::Linear, _) => measure(args, Linear::new(), None),
        (_, Some(nu)) => measure(args, Matern::new(nu, 0.5).map_err(invalid)?, Some(nu)),
        (_, None) => measure(args, Rbf::new(0.5).map_err(invalid)?, None),
    }
}

/// One measurement of `kernel` (Matérn's `nu`), printed as a JSON line.
fn measure<K: Kernel>(args: &BenchArgs, kernel: K, nu: Option<f64>) -> Result<(), String> {
    let m = with_threads(args.threads, || -> Result<Measurement, String> {
        let (bound, warmup_s) = warm(
            kernel,
            args.bound,
            args.t,
            args.dims,
            args.t + args.rounds,
            args.seed,
            args.adaptive_scale,
        )?;
        time_rounds(
            args.bound,
            bound,
            (args.kernel, nu),
            args.t,
            args.arms,
            args.dims,
            args.fixed_arms,
            args.score,
            args.rounds,
            args.budget,
            args.seed,
            warmup_s,
        )
    })??;
    println!("{}", serde_json::to_string(&m).map_err(|e| e.to_string())?);
    Ok(())
}

/// The machine, for the report's header.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .map_or_else(
            || "unknown memory".into(),
            |kb| format!("{:.0} GB RAM", kb / 1024.0 / 1024.0),
        );
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(
            || "rustc (unknown version)".into(),
            |s| s.trim().to_string(),
        );
    format!(
        "{cpu}, {} threads, {memory}; {rustc}, release profile, {} OS",
        rayon::current_num_threads(),
        std::env::consts::OS
    )
}

/// Largest t at which a bound is measured in the report: CMM-UCB eigendecomposes K_t after
/// every update (O(t³): tens of seconds per round at t = 5000).
fn max_t(choice: BoundKind) -> usize {
    match choice {
        BoundKind::Cmm => 1000,
        _ => usize::MAX,
    }
}

/// The heading from which the report file is written by hand: `--report` rewrites what comes
/// before it and keeps it and what follows.
const HAND_WRITTEN: &str = "\n## How the speed is obtained";

fn report(args: &BenchArgs, path: &Path) -> Result<(), String> {
    let started = Instant::now();
    let mut results: Vec<Measurement> = Vec::new();
    for choice in BoundKind::ALL {
        for &t in &args.report_t {
            if t > max_t(choice) {
                continue;
            }
            let horizon = t + args.rounds;
            for &arms in &args.report_arms {
                for fixed in [false, true] {
                    // The sketched bounds keep no per-arm state: one path.
                    if fixed && !choice.keeps_arm_state() {
                        continue;
                    }
                    // Warmed afresh for every cell (deterministic given the seed).
                    let kernel = Matern::new(2.5, 0.5).map_err(|e| e.to_string())?;
                    let (bound, warmup_s) =
                        warm(kernel, choice, t, args.dims, horizon, args.seed, false)?;
                    let m = time_rounds(
                        choice,
                        bound,
                        (KernelName::Matern52, Some(2.5)),
                        t,
                        arms,
                        args.dims,
                        fixed,
                        false,
                        args.rounds,
                        args.budget,
                        args.seed,
                        warmup_s,
                    )?;
                    eprintln!("{}", serde_json::to_string(&m).map_err(|e| e.to_string())?);
                    results.push(m);
                }
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    write_report(args, path, &results, elapsed)
}

fn write_report(
    args: &BenchArgs,
    path: &Path,
    results: &[Measurement],
    elapsed: f64,
) -> Result<(), String> {
    let mut md = String::new();
    let command = format!(
        "cargo run --release --features cli -- bench --report {} --report-t {} --report-arms {} --rounds {} --budget {}",
        path.display(),
        join(&args.report_t),
        join(&args.report_arms),
        args.rounds,
        args.budget
    );
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(md, "Generated by\n\n```sh\n{command}\n```\n");
    let _ = writeln!(
        md,
        "Machine: {}. The whole run took {:.0} s.\n",
        machine(),
        elapsed
    );
    let _ = writeln!(
        md,
        "Each cell is the median time of one UCB round (select + update) in milliseconds, over \
         up to {} timed rounds or {} s (at least 3), after warm-starting the bound with t \
         observations at uniform random points of [0, 1]^{}; Matérn 5/2 with ℓ = 0.5. \
         *Fresh*: A new uniform arms every round. *Fixed*: the same A arms every round, \
         declared with `UcbAgent::with_arm_set` (the declaration, one O(A·t²) evaluation, is \
         not in the round time). CMM-UCB and the sketched bounds keep no per-arm state, so \
         they have one path (fresh arms). CMM-UCB is measured up to t = 1000 (an O(t³) eigendecomposition per round). \
         `kbandit bench --bound amm --t 1000 --arms 100 --dims 3 [--fixed-arms]` \
         reruns one cell and prints it as a JSON line.\n",
        args.rounds, args.budget, args.dims
    );
    for &arms in &args.report_arms {
        let _ = writeln!(md, "## A = {arms} arms\n");
        let _ = write!(md, "| bound | path |");
        for &t in &args.report_t {
            let _ = write!(md, " t = {t} |");
        }
        let _ = writeln!(md);
        let _ = writeln!(md, "|---|---|{}", "---:|".repeat(args.report_t.len()));
        for choice in BoundKind::ALL {
            for fixed in [false, true] {
                if fixed && !choice.keeps_arm_state() {
                    continue;
                }
                let path_name = if !choice.keeps_arm_state() {
                    "—"
                } else if fixed {
                    "fixed"
                } else {
                    "fresh"
                };
                let _ = write!(md, "| {} | {path_name} |", choice.name());
                for &t in &args.report_t {
                    let cell = results.iter().find(|m| {
                        m.bound == choice && m.t == t && m.arms == arms && m.fixed_arms == fixed
                    });
                    let _ = match cell {
                        Some(m) => write!(md, " {} |", format_ms(m.median_ms)),
                        None => write!(md, " – |"),
                    };
                }
                let _ = writeln!(md);
            }
        }
        let _ = writeln!(md);
        // Speed-ups of the fixed path.
        let mut speedups = Vec::new();
        for choice in BoundKind::ALL.iter().filter(|c| c.keeps_arm_state()) {
            let ratios: Vec<String> = args
                .report_t
                .iter()
                .filter_map(|&t| {
                    let get = |fixed: bool| {
                        results
                            .iter()
                            .find(|m| {
                                m.bound == *choice
                                    && m.t == t
                                    && m.arms == arms
                                    && m.fixed_arms == fixed
                            })
                            .map(|m| m.median_ms)
                    };
                    Some(format!("{:.0}× at t = {t}", get(false)? / get(true)?))
                })
                .collect();
            if !ratios.is_empty() {
                speedups.push(format!("{} {}", choice.name(), ratios.join(", ")));
            }
        }
        let _ = writeln!(
            md,
            "Fixed-path speed-up (fresh median / fixed median): {}.\n",
            speedups.join("; ")
        );
    }
    let _ = writeln!(md, "## Set-up costs and memory\n");
    let _ = writeln!(
        md,
        "| bound | t | A | warm-up (s) | declaring the fixed set (s) | fixed-set memory (MB) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
    for m in results.iter().filter(|m| m.fixed_arms) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.2} | {:.2} | {:.1} |",
            m.bound.name(),
            m.t,
            m.arms,
            m.warmup_s,
            m.setup_s,
            m.fixed_bytes as f64 / 1e6
        );
    }
    let _ = writeln!(md);
    // Plots: time per round against t, log–log, per arm count and path.
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = parent.join(PLOT_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _ = writeln!(md, "## Scaling\n");
    for &arms in &args.report_arms {
        for fixed in [false, true] {
            let mut series = Vec::new();
            for choice in BoundKind::ALL {
                if fixed && !choice.keeps_arm_state() {
                    continue;
                }
                let points: Vec<(f64, f64)> = results
                    .iter()
                    .filter(|m| {
                        m.bound == choice
                            && m.arms == arms
                            && (m.fixed_arms == fixed || !choice.keeps_arm_state())
                    })
                    .map(|m| (m.t as f64, m.median_ms))
                    .collect();
                if !points.is_empty() {
                    series.push(Series {
                        label: choice.name().to_string(),
                        points,
                    });
                }
            }
            let kind = if fixed { "fixed" } else { "fresh" };
            let stem = dir.join(format!("bench_{kind}_{arms}"));
            let title = format!("Time per round, {arms} {kind} arms (d = {})", args.dims);
            loglog_plot(
                &stem,
                &title,
                ("observations t", "median time per round (ms)"),
                &series,
            )?;
            let file = stem
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = writeln!(md, "![{title}]({PLOT_DIR}/{file}.svg)\n");
        }
    }
    // The measurements written by hand below the generated tables stay.
    if let Ok(old) = std::fs::read_to_string(path)
        && let Some(start) = old.find(HAND_WRITTEN)
    {
        md = format!("{}\n{}", md.trim_end(), &old[start..]);
    }
    std::fs::write(path, md).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!(
        "bench: {} measurements in {elapsed:.0} s; wrote {}",
        results.len(),
        path.display()
    );
    Ok(())
}

/// Where the report's plots go, beside the report.
const PLOT_DIR: &str = "bench-plots";

fn format_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

fn join(values: &[usize]) -> String {
    values
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
