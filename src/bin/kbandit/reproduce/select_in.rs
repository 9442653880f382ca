//! `kbandit reproduce select-in`: how close the point `select_in` returns comes to the best UCB
//! of a dense uniform sample of the box, and how long a call takes.
//!
//! For every dimension d, number of observations t, bound and repetition: the synthetic
//! function of Flynn & Reeb 2024 §7 in d dimensions (Matérn 5/2, ℓ = 0.5 by default;
//! ‖f‖_H = 10, σ = 0.1, δ = 0.01, the paper's scale c for t rounds) is observed at t uniform
//! points of [0, 1]^d with N(0, σ²) noise; the UCB agent then calls `select_in` on the unit box
//! (`--starts` space-filling starts, the best `--refine` refined; the library's defaults). Its
//! point's UCB is compared with the largest UCB among `--dense` independent uniform points,
//! scored with `ConfidenceBound::evaluate` in chunks. The gap is dense max − select_in's UCB
//! (negative: select_in found a higher UCB than the whole sample), also relative to the
//! half-width (U − L)/2 of the bounds at select_in's point. Each call is timed `--calls` times
//! on copies of the same agent (one thread per call: the library's loops stay on the job's
//! thread), and every returned point is checked to lie inside the box.

use std::path::Path;
use std::time::Instant;

use clap::Args;
use kernel_bandits::agent::ContinuousOptions;
use kernel_bandits::bound::BoundConfig;
use kernel_bandits::continuous::BoxDomain;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use super::table1::Method;
use super::{RunOptions, create_dir, derive_seed, first_repeat, mean_std, run_jobs, write_json};
use crate::kernels::KernelName;

/// Arguments of `kbandit reproduce select-in`.
#[derive(Debug, Args)]
pub struct SelectInArgs {
    /// Kernel of the function and of the bounds (one with gradients).
    #[arg(long, value_enum, default_value_t = KernelName::Matern52)]
    kernel: KernelName,
    /// Length-scale ℓ.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Input dimensions d (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 3, 4])]
    dims: Vec<usize>,
    /// Numbers of observations t (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [100, 1000])]
    observations: Vec<usize>,
    /// Bounds (comma-separated): amm, dmm, ay, igp; cmm only where the library has CMM-UCB's
    /// gradients.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::Amm, Method::Dmm])]
    methods: Vec<Method>,
    /// Uniform points in the dense sample.
    #[arg(long, default_value_t = 100_000)]
    dense: usize,
    /// Repetitions (functions and observation sets) per cell.
    #[arg(long, default_value_t = 2)]
    reps: usize,
    /// Timed `select_in` calls per repetition (the median is reported).
    #[arg(long, default_value_t = 3)]
    calls: usize,
    /// Space-filling starts of `select_in`.
    #[arg(long, default_value_t = ContinuousOptions::default().starts)]
    starts: usize,
    /// Best starts refined by `select_in`.
    #[arg(long, default_value_t = ContinuousOptions::default().refine)]
    refine: usize,
    /// The most quasi-Newton iterations of one refinement.
    #[arg(long, default_value_t = ContinuousOptions::default().max_iterations)]
    max_iterations: usize,
    #[command(flatten)]
    run: RunOptions,
}

/// The paper's noise σ, RKHS norm B (of f, and assumed by the bounds) and δ.
const SIGMA: f64 = 0.1;
const NORM: f64 = 10.0;
const DELTA: f64 = 0.01;
/// Label of this experiment's problem seeds.
const SELECT_IN_LABEL: u64 = 0x7365_6c65_6374; // "select"
/// Labels of the streams of the dense sample and of the starts.
const DENSE_LABEL: u64 = 0x0064_656e_7365; // "dense"
const STARTS_LABEL: u64 = 0x7374_6172_7473; // "starts"
/// Points scored per call of `evaluate` on the dense sample.
const CHUNK: usize = 8192;

/// What one repetition measured.
#[derive(Debug, Clone, Serialize)]
struct Measurement {
    seed: u64,
    /// select_in's point and its UCB.
    point: Vec<f64>,
    select_ucb: f64,
    /// (U − L)/2 at that point.
    half_width: f64,
    /// The largest UCB of the dense sample and where.
    dense_max: f64,
    dense_point: Vec<f64>,
    /// dense_max − select_ucb, and that over half_width.
    gap: f64,
    relative_gap: f64,
    /// Seconds of each timed select_in call, and of scoring the dense sample.
    call_s: Vec<f64>,
    dense_s: f64,
}

/// The seed of repetition `rep` of (d, t).
fn problem_seed(args: &SelectInArgs, d: usize, t: usize, rep: usize) -> u64 {
    derive_seed(
        args.run.seed,
        &[
            SELECT_IN_LABEL,
            args.kernel as u64,
            args.lengthscale.to_bits(),
            d as u64,
            t as u64,
            rep as u64,
        ],
    )
}

/// Runs one repetition with the kernel `kernel`.
fn measure<K: Kernel + Clone + 'static>(
    kernel: K,
    args: &SelectInArgs,
    method: Method,
    d: usize,
    t: usize,
    seed: u64,
) -> Result<Measurement, Error> {
    // One uniform arm per round: round n gives the n-th observation point, f there and its noise.
    let config = SyntheticConfig {
        dim: d,
        arms: 1,
        norm_bound: NORM,
        noise_sd: SIGMA,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel.clone(), config, seed)?;
    let params = BoundParams::paper_defaults(&kernel, d, t)
        .sigma(SIGMA)
        .norm_bound(NORM)
        .delta(DELTA);
    let Some(kind) = method.bound() else {
        return Err(Error::Unsupported {
            what: "the random agent in `reproduce select-in` (it has no UCB)".into(),
        });
    };
    let bound = kind.build(kernel, &BoundConfig::new().params(params))?;
    let options = ContinuousOptions {
        starts: args.starts,
        refine: args.refine,
        seed: derive_seed(seed, &[STARTS_LABEL]),
        max_iterations: args.max_iterations,
        ..ContinuousOptions::default()
    };
    let mut agent = UcbAgent::new(bound).with_continuous(options)?;
    for n in 0..t {
        let round = problem.round(n);
        agent.update(round.arm(0), round.values[0] + round.noise)?;
    }
    let domain = BoxDomain::unit(d)?;

    let mut call_s = Vec::with_capacity(args.calls);
    let mut first: Option<Choice> = None;
    for _ in 0..args.calls {
        let mut copy = agent.clone();
        let start = Instant::now();
        let choice = copy.select_in(&domain)?;
        call_s.push(start.elapsed().as_secs_f64());
        if !domain.contains(&choice.point) {
            return Err(Error::InvalidParameter {
                name: "select_in point",
                value: choice.point.iter().copied().fold(f64::NAN, f64::max),
                expected: "a point inside the box",
            });
        }
        match &first {
            None => first = Some(choice),
            Some(f) if *f != choice => {
                return Err(Error::Unsupported {
                    what: "a select_in that differs between identical agents".into(),
                });
            }
            Some(_) => {}
        }
    }
    let choice = first.expect("at least one call");
    let at = agent
        .bound()
        .evaluate(&Points::from_row_major(&choice.point, d)?)?;
    let half_width = (at.ucb[0] - at.lcb[0]) / 2.0;

    let start = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, &[DENSE_LABEL]));
    let mut dense_max = f64::NEG_INFINITY;
    let mut dense_point = vec![0.0; d];
    let mut chunk = Vec::with_capacity(CHUNK * d);
    let mut left = args.dense;
    while left > 0 {
        let n = left.min(CHUNK);
        chunk.clear();
        chunk.extend((0..n * d).map(|_| rng.random::<f64>()));
        let ucb = agent
            .bound()
            .evaluate(&Points::from_row_major(&chunk, d)?)?
            .ucb;
        for (j, &u) in ucb.iter().enumerate() {
            if u > dense_max {
                dense_max = u;
                dense_point.copy_from_slice(&chunk[j * d..(j + 1) * d]);
            }
        }
        left -= n;
    }
    let dense_s = start.elapsed().as_secs_f64();
    let gap = dense_max - choice.ucb;
    Ok(Measurement {
        seed,
        point: choice.point,
        select_ucb: choice.ucb,
        half_width,
        dense_max,
        dense_point,
        gap,
        relative_gap: gap / half_width,
        call_s,
        dense_s,
    })
}

/// One cell: every repetition of one bound at one (d, t).
#[derive(Debug, Serialize)]
struct CellJson {
    dims: usize,
    observations: usize,
    method: &'static str,
    /// Median seconds per select_in call over all calls of all repetitions.
    median_call_s: f64,
    repetitions: Vec<Measurement>,
}

#[derive(Debug, Serialize)]
struct SelectInJson {
    kernel: &'static str,
    lengthscale: f64,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    dense: usize,
    reps: usize,
    calls: usize,
    starts: usize,
    refine: usize,
    seed: u64,
    elapsed_s: f64,
    threads: usize,
    results: Vec<CellJson>,
}

fn check_args(args: &SelectInArgs) -> Result<(), String> {
    let fail = |what: String| Err(format!("invalid arguments: {what}"));
    if args.dims.is_empty() || args.observations.is_empty() || args.methods.is_empty() {
        return fail("--dims, --observations and --methods need at least one value each".into());
    }
    if args.dims.contains(&0) || args.observations.contains(&0) {
        return fail("--dims and --observations must be at least 1".into());
    }
    if args.dense == 0 || args.reps == 0 || args.calls == 0 {
        return fail("--dense, --reps and --calls must be at least 1".into());
    }
    if args.starts == 0 || args.refine == 0 {
        return fail("--starts and --refine must be at least 1".into());
    }
    if !(args.lengthscale.is_finite() && args.lengthscale > 0.0) {
        return fail(format!(
            "--lengthscale {} is not finite and positive",
            args.lengthscale
        ));
    }
    if args.methods.contains(&Method::Random) {
        return fail("--methods: random has no UCB to maximise".into());
    }
    if let Some(d) = first_repeat(&args.dims) {
        return fail(format!("--dims lists {d} twice"));
    }
    if let Some(t) = first_repeat(&args.observations) {
        return fail(format!("--observations lists {t} twice"));
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(format!("--methods lists {} twice", m.tag()));
    }
    KernelName::require_radial(&[args.kernel], "reproduce select-in")?;
    args.run.check()
}

/// Median of `values` (the mean of the middle two for an even count).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &SelectInArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.run.out)?;
    let mut jobs: Vec<(usize, usize, Method, usize)> = Vec::new();
    for &d in &args.dims {
        for &t in &args.observations {
            for &m in &args.methods {
                jobs.extend((0..args.reps).map(|r| (d, t, m, r)));
            }
        }
    }
    // The largest t and the costliest bounds first.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((jobs[i].1, jobs[i].2.cost())));
    let (runs, threads, elapsed) = run_jobs(&order, args.run.threads, "select-in", |&i| {
        let (d, t, m, r) = jobs[i];
        let seed = problem_seed(args, d, t, r);
        let l = args.lengthscale;
        let result = match args.kernel.nu() {
            None => Rbf::new(l).and_then(|k| measure(k, args, m, d, t, seed)),
            Some(nu) => Matern::new(nu, l).and_then(|k| measure(k, args, m, d, t, seed)),
        };
        result.map_err(|e| format!("d = {d}, t = {t}, {} (repetition {r}): {e}", m.tag()))
    })?;
    // Back in job order.
    let mut measured: Vec<Option<Measurement>> = vec![None; jobs.len()];
    for (&i, m) in order.iter().zip(runs) {
        measured[i] = Some(m);
    }

    let mut cells = Vec::new();
    for (cell, group) in jobs.chunks(args.reps).zip(measured.chunks(args.reps)) {
        let (d, t, m, _) = cell[0];
        let repetitions: Vec<Measurement> = group.iter().flatten().cloned().collect();
        let mut calls: Vec<f64> = repetitions
            .iter()
            .flat_map(|r| r.call_s.iter().copied())
            .collect();
        cells.push(CellJson {
            dims: d,
            observations: t,
            method: m.tag(),
            median_call_s: median(&mut calls),
            repetitions,
        });
    }
    print!("{}", markdown(args, &cells, elapsed, threads));
    let json = SelectInJson {
        kernel: args.kernel.tag(),
        lengthscale: args.lengthscale,
        sigma: SIGMA,
        norm_bound: NORM,
        delta: DELTA,
        dense: args.dense,
        reps: args.reps,
        calls: args.calls,
        starts: args.starts,
        refine: args.refine,
        seed: args.run.seed,
        elapsed_s: elapsed,
        threads,
        results: cells,
    };
    let json_path = args.run.out.join("select_in.json");
    write_json(&json_path, &json)?;
    let csv_path = args.run.out.join("select_in.csv");
    write_csv(&csv_path, &json)?;
    eprintln!(
        "select-in: {} runs in {elapsed:.1} s on {threads} threads; wrote {}, {}",
        jobs.len(),
        json_path.display(),
        csv_path.display()
    );
    Ok(())
}

/// The table: one row per (d, t, bound).
fn markdown(args: &SelectInArgs, cells: &[CellJson], elapsed: f64, threads: usize) -> String {
    let mut out = format!(
        "select_in ({} starts, {} refined) against the best of {} uniform points: {} ℓ = {}, \
         ‖f‖ = 10, σ = 0.1; {} repetitions (seed {}). gap = dense max − select_in UCB \
         (negative: select_in higher); relative to (U − L)/2 at select_in's point.\n\n\
         | d | t | bound | mean gap | max gap | mean gap/width | max gap/width | select_in \
         higher | median time/call (ms) | dense scoring (s) |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
        args.starts,
        args.refine,
        args.dense,
        args.kernel.title(),
        args.lengthscale,
        args.reps,
        args.run.seed
    );
    for c in cells {
        let gaps = c.repetitions.iter().map(|r| r.gap);
        let relative = c.repetitions.iter().map(|r| r.relative_gap);
        let higher = c.repetitions.iter().filter(|r| r.gap <= 0.0).count();
        let dense_s = mean_std(c.repetitions.iter().map(|r| r.dense_s)).0;
        out.push_str(&format!(
            "| {} | {} | {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {higher}/{} | {:.1} | {dense_s:.1} |\n",
            c.dims,
            c.observations,
            c.method,
            mean_std(gaps.clone()).0,
            gaps.fold(f64::NEG_INFINITY, f64::max),
            mean_std(relative.clone()).0,
            relative.fold(f64::NEG_INFINITY, f64::max),
            c.repetitions.len(),
            c.median_call_s * 1e3,
        ));
    }
    out.push_str(&format!(
        "\nWall time {elapsed:.1} s on {threads} threads; every point returned lies in the box\n"
    ));
    out
}

/// `select_in.csv`, long format: one row per (d, t, bound, repetition).
fn write_csv(path: &Path, json: &SelectInJson) -> Result<(), String> {
    let fail = |e: csv::Error| format!("cannot write {}: {e}", path.display());
    let mut writer = csv::Writer::from_path(path).map_err(fail)?;
    writer
        .write_record([
            "dims",
            "observations",
            "method",
            "rep",
            "seed",
            "select_ucb",
            "dense_max",
            "gap",
            "half_width",
            "relative_gap",
            "median_call_s",
            "dense_s",
        ])
        .map_err(fail)?;
    for cell in &json.results {
        for (rep, r) in cell.repetitions.iter().enumerate() {
            let mut calls = r.call_s.clone();
            writer
                .write_record([
                    cell.dims.to_string(),
                    cell.observations.to_string(),
                    cell.method.to_owned(),
                    rep.to_string(),
                    r.seed.to_string(),
                    r.select_ucb.to_string(),
                    r.dense_max.to_string(),
                    r.gap.to_string(),
                    r.half_width.to_string(),
                    r.relative_gap.to_string(),
                    median(&mut calls).to_string(),
                    format!("{:.4}", r.dense_s),
                ])
                .map_err(fail)?;
        }
    }
    writer
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
