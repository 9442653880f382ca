//! `kbandit reproduce`: the experiments of the papers, with progress, tables and plots.

mod bands;
mod contextual;
mod nonstationary;
mod table1;
// Flynn & Reeb 2024 App. F.1 and F.3.
mod loose;
mod timing;
mod variance;
// Issue 19: batches (GP-UCB-PE) and continuous selection.
mod batch;
mod select_in;
mod unknown;
// Issue 38: stopping rules that certify.
mod stopping;
// Issue 39: safe exploration and level sets with valid bounds.
mod safe;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::Path;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

/// The experiments `kbandit reproduce` runs.
#[derive(Debug, Subcommand)]
pub enum Experiment {
    /// Flynn & Reeb 2024 §7 / Table 1: cumulative regret of the UCB agents on random RKHS functions.
    Table1(table1::Table1Args),
    /// Flynn & Reeb 2024 Figure 1: the confidence bands of CMM, DMM, AMM, AY and IGP on a 1-D function.
    Bands(bands::BandsArgs),
    /// Zenati et al. 2022 §5: EK-UCB, BKB, exact K-UCB and random on three contextual environments.
    Contextual(contextual::ContextualArgs),
    /// Iwazaki & Takeno 2025 §6 / Figure 2: R-PERP, R-GP-UCB, SW-GP-UCB and random under abrupt changes.
    Nonstationary(nonstationary::NonstationaryArgs),
    /// Flynn & Reeb 2024 App. F.3 / Figure 7: regret when the bounds assume a loose σ or B.
    Loose(loose::LooseArgs),
    /// Flynn & Reeb 2024 App. F.1 / Figure 4: wall-clock time per round of every bound.
    Timing(timing::TimingArgs),
    /// Calandriello et al. 2019 §3: variance starvation; exact, DTC (BKB) and subset-of-regressors variances far from the dictionary.
    Variance(variance::VarianceArgs),
    /// Contal et al. 2013 GP-UCB-PE on Flynn & Reeb 2024 §7: regret against evaluations and rounds for batches of q, in the box and on fresh arms.
    Batch(batch::BatchArgs),
    /// How close `select_in`'s UCB comes to the best of a dense uniform sample, and its time per call.
    SelectIn(select_in::SelectInArgs),
    /// Flynn & Reeb 2024 App. F.3 with σ, B and ℓ unknown: loose values, B doubled by
    /// refutation, ℓ and σ fitted on a warm-up; regret and coverage.
    Unknown(unknown::UnknownArgs),
    /// Flynn & Reeb 2024 §7 on 1000 fixed arms: evaluations until each bound certifies an
    /// ε-optimal recommendation, the true regret then, and Makarova et al. 2022's heuristic.
    Stopping(stopping::StoppingArgs),
    /// SafeOpt (Sui et al. 2015) and LSE (Gotovos et al. 2013) with CMM, DMM, AMM, AY and IGP on
    /// Flynn & Reeb 2024 §7 functions, against the `safeopt` package's μ ± β·σ_GP rule.
    Safe(safe::SafeArgs),
}

/// Runs one experiment.
pub fn run(experiment: &Experiment) -> Result<(), String> {
    match experiment {
        Experiment::Table1(args) => table1::run(args),
        Experiment::Bands(args) => bands::run(args),
        Experiment::Contextual(args) => contextual::run(args),
        Experiment::Nonstationary(args) => nonstationary::run(args),
        Experiment::Loose(args) => loose::run(args),
        Experiment::Timing(args) => timing::run(args),
        Experiment::Variance(args) => variance::run(args),
        Experiment::Batch(args) => batch::run(args),
        Experiment::SelectIn(args) => select_in::run(args),
        Experiment::Unknown(args) => unknown::run(args),
        Experiment::Stopping(args) => stopping::run(args),
        Experiment::Safe(args) => safe::run(args),
    }
}

/// The options every regret experiment shares: its seed, where it writes, and its threads.
#[derive(Debug, Args)]
pub struct RunOptions {
    /// Base seed; every run derives its own from it.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory for the JSON (and CSV) results and the plots.
    #[arg(long, default_value = "results")]
    out: std::path::PathBuf,
    /// Worker threads [default: one per core].
    #[arg(long)]
    threads: Option<usize>,
}

impl RunOptions {
    /// Checks the thread count.
    fn check(&self) -> Result<(), String> {
        if self.threads == Some(0) {
            return Err("invalid arguments: --threads must be at least 1".into());
        }
        Ok(())
    }
}

/// Arguments of `kbandit demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output directory for the tables' JSON/CSV files and the plots.
    #[arg(long, default_value = "results/demo")]
    out: std::path::PathBuf,
}

/// Parses `args` as the arguments of one experiment (the defaults of its subcommand apply).
fn parse_experiment<A: Args>(args: &[OsString]) -> A {
    #[derive(Parser)]
    struct Wrapper<A: Args> {
        #[command(flatten)]
        args: A,
    }
    let argv = std::iter::once(OsString::from("kbandit")).chain(args.iter().cloned());
    Wrapper::<A>::parse_from(argv).args
}

/// `kbandit demo`: Flynn & Reeb 2024 Table 1's first column (RBF, ℓ = 0.5, d = 3, T = 1000) with
/// three repetitions of the paper's five bounds (CMM-UCB included, for all 1000 rounds where the
/// paper ran it for 200) and random, then the confidence bands of Figure 1; about half a
/// minute on two cores, most of it CMM-UCB.
pub fn demo(args: &DemoArgs) -> Result<(), String> {
    let out = args.out.clone().into_os_string();
    let table1: table1::Table1Args = parse_experiment(&[
        "--kernels".into(),
        "rbf".into(),
        "--lengthscales".into(),
        "0.5".into(),
        "--methods".into(),
        "cmm,dmm,amm,ay,igp,random".into(),
        "--reps".into(),
        "3".into(),
        "--out".into(),
        out.clone(),
    ]);
    table1::run(&table1)?;
    println!();
    let bands: bands::BandsArgs = parse_experiment(&["--out".into(), out]);
    bands::run(&bands)
}

/// A progress bar on stderr for `len` steps, hidden when stderr is not a terminal (a pipe, a
/// log file, CI).
fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg} (eta {eta})",
    )
    .expect("the template is valid");
    bar.set_style(style);
    bar.set_prefix(what.to_owned());
    bar
}

/// Creates the output directory (and its parents).
fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))
}

/// Writes `contents` to `path`.
fn write_file(path: &Path, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The repetitions of one cell of a regret table: the columns that name the cell, then one
/// value per repetition.
struct RepetitionRows<'a> {
    key: Vec<String>,
    final_regret: &'a [f64],
    seeds: &'a [u64],
    wall_time_s: &'a [f64],
}

/// Writes a long-format CSV of final regrets: the `key_columns`, then `rep`, `seed`,
/// `final_regret` and `wall_time_s`, one row per repetition of every cell.
fn write_repetitions_csv<'a>(
    path: &Path,
    key_columns: &[&str],
    cells: impl IntoIterator<Item = RepetitionRows<'a>>,
) -> Result<(), String> {
    let fail = |e: csv::Error| format!("cannot write {}: {e}", path.display());
    let mut writer = csv::Writer::from_path(path).map_err(fail)?;
    let header = ["rep", "seed", "final_regret", "wall_time_s"];
    writer
        .write_record(key_columns.iter().chain(&header))
        .map_err(fail)?;
    for cell in cells {
        let rows = cell
            .final_regret
            .iter()
            .zip(cell.seeds)
            .zip(cell.wall_time_s);
        for (rep, ((regret, seed), time)) in rows.enumerate() {
            let values = [
                rep.to_string(),
                seed.to_string(),
                regret.to_string(),
                format!("{time:.4}"),
            ];
            writer
                .write_record(cell.key.iter().chain(&values))
                .map_err(fail)?;
        }
    }
    writer
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// SplitMix64 finaliser: a well-mixed 64-bit function of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d4_9bb1_3311_49eb);
    z ^ (z >> 31)
}

/// A seed derived from a base seed and a path of labels, the same whatever else runs: each
/// repetition of each setting gets its own stream, independent of thread count and of which
/// other settings are selected.
fn derive_seed(seed: u64, labels: &[u64]) -> u64 {
    labels.iter().fold(mix(seed), |acc, &l| mix(acc ^ mix(l)))
}

/// Runs `jobs` on a rayon pool of `threads` workers (one per core by default) behind a
/// progress bar labelled `what`. Returns the results in job order, the number of threads and
/// the elapsed seconds; the first error stops the run.
fn run_jobs<J: Sync, R: Send>(
    jobs: &[J],
    threads: Option<usize>,
    what: &str,
    run: impl Fn(&J) -> Result<R, String> + Sync,
) -> Result<(Vec<R>, usize, f64), String> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    let pool = pool
        .build()
        .map_err(|e| format!("cannot start worker threads: {e}"))?;
    let bar = progress_bar(jobs.len() as u64, what);
    let start = std::time::Instant::now();
    let results = pool.install(|| {
        // One task per job: rayon's default splitting hands each thread a contiguous range to
        // run in order, and the callers sort the jobs by cost, so one thread got every CMM run.
        jobs.par_iter()
            .with_max_len(1)
            .map(|job| {
                // The jobs already fill the cores: the library's loops stay on the job's
                // thread (see `kernel_bandits::parallel::sequential`).
                let result = kernel_bandits::parallel::sequential(|| run(job));
                bar.inc(1);
                result
            })
            .collect::<Result<Vec<R>, String>>()
    })?;
    bar.finish_and_clear();
    Ok((
        results,
        pool.current_num_threads(),
        start.elapsed().as_secs_f64(),
    ))
}

/// Sample mean and standard deviation (n − 1 in the denominator; 0 for one value).
fn mean_std(values: impl ExactSizeIterator<Item = f64> + Clone) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.clone().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = values.map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

/// Writes `value` as JSON to `path`.
fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), String> {
    let text = serde_json::to_string(value).map_err(|e| format!("cannot encode JSON: {e}"))?;
    write_file(path, &text)
}

/// The closing line on stderr: how many runs, in how long, and the files written.
fn announce(
    what: &str,
    runs: usize,
    elapsed: f64,
    threads: usize,
    files: &[&Path],
    plots: &[std::path::PathBuf],
) {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let plots: Vec<String> = plots
        .iter()
        .map(|p| format!("{}.{{png,svg}}", p.display()))
        .collect();
    eprintln!(
        "{what}: {runs} runs in {elapsed:.1} s on {threads} threads; wrote {} and the plots {}",
        files.join(", "),
        plots.join(", ")
    );
}

/// The first value that appears twice.
fn first_repeat<T: PartialEq + Copy>(values: &[T]) -> Option<T> {
    values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
        .map(|(_, v)| *v)
}
