//! `kbandit reproduce safe`: safe exploration (SafeOpt) and level-set estimation (LSE) with the
//! crate's valid bounds against `safeopt`'s heuristic rule (issue 39), on RKHS functions of
//! known norm as in Flynn & Reeb (2024, §7).
//!
//! # The problems
//!
//! For every dimension d ∈ {1, 2} and repetition, an objective f and a constraint g are drawn
//! independently as in `reproduce table1` ([`SyntheticProblem`]: 20 centres uniform on
//! [0, 1]^d, Gaussian weights, scaled to ‖f‖_H = ‖g‖_H = B = 10), and evaluated on a grid D:
//! 500 evenly spaced points of [0, 1] for d = 1, a 50 × 50 grid of [0, 1]² for d = 2. The
//! constraint is g(x) ≥ h with h = 0. The true safe set is {x ∈ D : g(x) ≥ h}; the **reachable
//! safe region** R is its connected component, in the grid graph (neighbours along each axis),
//! that holds the seed — the safe points a safe method can reach by steps between neighbouring
//! safe points. The draw is kept only if some component has at least `--min-reachable` (5 %) of
//! the grid and less than half of the true safe set; the largest such component is R and the
//! seed is its point of largest g. Otherwise the pair (f, g) is redrawn from the next seed of
//! the repetition's stream (the number of draws is recorded). So R is nontrivial, but a method
//! that certifies all of R has certified less than half of the safe set.
//!
//! # The methods
//!
//! Every method runs `--evaluations` (T = 200) noisy evaluations, y = f(x) + ε, z = g(x) + ε',
//! ε, ε' ~ N(0, σ²) with σ = 0.1, the same noise sequence for every method of a repetition.
//! - CMM, DMM, AMM, AY, IGP: [`SafeAgent`] (SafeOpt, Sui et al. 2015, Alg. 1, in the
//!   Lipschitz-free form of Berkenkamp et al. 2016) with the crate's bound for f and for g, with
//!   the settings of Flynn & Reeb (2024, §7; [`BoundParams::paper_defaults`]: σ = 0.1, B = 10,
//!   δ = 0.01, c from the kernel's smoothness, IGP's η = 2/T), from the seed S_0 = {seed}.
//!   On the event of probability ≥ 1 − δ on which g's bound holds at every round, every point
//!   of every S_t has g ≥ h and so every evaluation is safe.
//! - `safeopt`: the rule of the `safeopt` package (Berkenkamp, github.com/befelix/SafeOpt,
//!   `safeopt/gp_opt.py`, class `SafeOpt` with `lipschitz=None` and its defaults `beta=2`,
//!   `threshold=0`, `scaling='auto'`), implemented here ([`safeopt_run`]): a GP per function with
//!   the problem's kernel (prior variance k(x, x) = 1), zero prior mean and noise variance σ²,
//!   first given the seed's evaluation (the package needs safe initial data). At each step
//!   Q(x) = [μ(x) − β σ_GP(x), μ(x) + β σ_GP(x)] with σ_GP² the posterior variance of the
//!   function (GPy's `predict_noiseless`) and β = `--safeopt-beta` (the package default 2);
//!   the intervals are **recomputed, not intersected**, each step; S = {x : l_g(x) > h}
//!   (strict); M = {x ∈ S : u_f(x) ≥ max_S l_f}; expanders are tested only among S \ M wider
//!   than M's widest objective interval, widest first, stopping at the first: a copy of g's GP
//!   absorbs (x, u_g(x)) and x is an expander if some x ∉ S then has μ − β σ_GP ≥ h; the next
//!   point is the widest of M ∪ G (width max(u_f − l_f, u_g − l_g), scaling 1 = √k(x, x)); the
//!   recommendation is the point of S of largest l_f (`get_maximum`). β = 2 carries no
//!   guarantee. If S is empty the package raises, and the run stops there.
//!
//! # What is measured
//!
//! After every evaluation: the fraction of R certified safe |S_t ∩ R|/|R|; the points of S_t
//! outside R (safe points certified through the kernel's smoothness without a path, or, if
//! unsafe, false certificates); the number of certified points with g < h; the simple regret
//! max_R f − f(x̂) of the recommendation x̂ (negative if x̂ is a safe point outside R better
//! than R's best); and the evaluations with g(x) < h (unsafe evaluations).
//!
//! **LSE.** [`LevelSetAgent`] (Gotovos et al. 2013, Alg. 1) on g with threshold h and accuracy
//! ε = `--lse-accuracy`, per valid bound, on the same grids (no safety constraint: every point
//! may be evaluated): the fraction of the grid classified after each evaluation, up to T, and
//! the number of points misclassified by more than ε (above with g < h − ε, below with
//! g > h + ε).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use kernel_bandits::bound::{AnyBound, BoundConfig, BoundKind};
use kernel_bandits::posterior::ExactPosterior;
use kernel_bandits::prelude::*;
use kernel_bandits::safe::{Level, LevelSetAgent, SafeAgent};
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use super::{
    RunOptions, announce, create_dir, derive_seed, first_repeat, mean_std, run_jobs, write_json,
};
use crate::kernels::KernelName;
use crate::plot::{Band, XyCurve, bands_plot, xy_plot_described};

/// Arguments of `kbandit reproduce safe`.
#[derive(Debug, Args)]
pub struct SafeArgs {
    /// Kernel of f, g and every method.
    #[arg(long, value_enum, default_value_t = KernelName::Rbf)]
    kernel: KernelName,
    /// Length-scale ℓ of the kernel.
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Input dimensions (comma-separated; 1 and 2).
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2])]
    dims: Vec<usize>,
    /// Grid points for d = 1.
    #[arg(long = "grid-1d", default_value_t = 500)]
    grid_1d: usize,
    /// Grid points per axis for d = 2.
    #[arg(long = "grid-2d", default_value_t = 50)]
    grid_2d: usize,
    /// Methods (comma-separated): the valid bounds (cmm, dmm, amm, ay, igp) in SafeAgent and
    /// the heuristic rule of the `safeopt` package.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Method::ALL)]
    methods: Vec<Method>,
    /// Evaluations per run T (also the horizon of the paper's c and IGP's η = 2/T).
    #[arg(long, default_value_t = 200)]
    evaluations: usize,
    /// Repetitions (one (f, g) pair each) per dimension.
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Repetitions of CMM: the first ones of `--reps` (at most `--reps`) [default: all]. CMM's
    /// SafeOpt step costs about 30× DMM's at t = 200 over 2 500 points (it keeps no per-arm
    /// state, so each expander test re-solves its dual at every tested point).
    #[arg(long = "cmm-reps")]
    cmm_reps: Option<usize>,
    /// β of the `safeopt` rule μ ± β σ_GP (the package's default is 2).
    #[arg(
        long = "safeopt-beta",
        default_value_t = 2.0,
        allow_negative_numbers = true
    )]
    safeopt_beta: f64,
    /// The reachable region must hold at least this fraction of the grid.
    #[arg(
        long = "min-reachable",
        default_value_t = 0.05,
        allow_negative_numbers = true
    )]
    min_reachable: f64,
    /// The accuracy ε of level-set estimation.
    #[arg(
        long = "lse-accuracy",
        default_value_t = 0.5,
        allow_negative_numbers = true
    )]
    lse_accuracy: f64,
    /// Skip level-set estimation.
    #[arg(long = "no-lse")]
    no_lse: bool,
    #[command(flatten)]
    run: RunOptions,
}

/// The methods compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Method {
    Cmm,
    Dmm,
    Amm,
    Ay,
    Igp,
    Safeopt,
}

impl Method {
    const ALL: [Self; 6] = [
        Self::Cmm,
        Self::Dmm,
        Self::Amm,
        Self::Ay,
        Self::Igp,
        Self::Safeopt,
    ];

    fn tag(self) -> &'static str {
        match self {
            Self::Cmm => "cmm",
            Self::Dmm => "dmm",
            Self::Amm => "amm",
            Self::Ay => "ay",
            Self::Igp => "igp",
            Self::Safeopt => "safeopt",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::Cmm => "CMM",
            Self::Dmm => "DMM",
            Self::Amm => "AMM",
            Self::Ay => "AY",
            Self::Igp => "IGP",
            Self::Safeopt => "safeopt μ ± β·σ_GP (heuristic)",
        }
    }

    fn kind(self) -> Option<BoundKind> {
        match self {
            Self::Cmm => Some(BoundKind::Cmm),
            Self::Dmm => Some(BoundKind::Dmm),
            Self::Amm => Some(BoundKind::Amm),
            Self::Ay => Some(BoundKind::Ay),
            Self::Igp => Some(BoundKind::Igp),
            Self::Safeopt => None,
        }
    }

    /// Rough relative cost, to start the longest runs first.
    fn cost(self) -> u32 {
        match self {
            Self::Cmm => 100,
            Self::Dmm => 10,
            Self::Safeopt => 5,
            _ => 1,
        }
    }
}

/// Labels of the random streams of a repetition.
const OBJECTIVE_LABEL: u64 = 0x6f62_6a65_6374; // "object"
const CONSTRAINT_LABEL: u64 = 0x0063_6f6e_7374; // "const"
const NOISE_LABEL: u64 = 0x006e_6f69_7365; // "noise"
const LSE_NOISE_LABEL: u64 = 0x6c73_656e_6f69; // "lsenoi"
/// Draws tried per repetition before giving up.
const MAX_DRAWS: usize = 1000;
/// The constraint's threshold h.
const THRESHOLD: f64 = 0.0;

/// One repetition's problem on one grid.
#[derive(Debug, Clone)]
struct Problem {
    dim: usize,
    rep: usize,
    seed: u64,
    draws: usize,
    grid: Vec<f64>,
    f: Vec<f64>,
    g: Vec<f64>,
    start: usize,
    reachable: Vec<bool>,
    reachable_size: usize,
    safe_size: usize,
    best_reachable: f64,
}

#[derive(Debug, Serialize)]
struct ProblemJson {
    dim: usize,
    rep: usize,
    seed: u64,
    /// Draws of (f, g) until one qualified.
    draws: usize,
    grid_points: usize,
    start: usize,
    start_x: Vec<f64>,
    /// |R| and |{g ≥ h}|.
    reachable_size: usize,
    safe_size: usize,
    /// max over R of f.
    best_reachable: f64,
    /// f and g at the grid points; for d = 2, index i·n + j is the point (i, j)/(n − 1).
    f: Vec<f64>,
    g: Vec<f64>,
}

/// One SafeOpt run.
#[derive(Debug, Clone, Serialize)]
struct RunJson {
    dim: usize,
    method: Method,
    rep: usize,
    valid: bool,
    /// |S_t ∩ R|/|R| after 0, 1, …, T evaluations.
    reachable_fraction: Vec<f64>,
    /// |S_t \ R| after 0, 1, …, T evaluations.
    outside_reachable: Vec<usize>,
    /// max over t of the points of S_t with g < h.
    false_safe: usize,
    /// max_R f − f(x̂_t) after 0, 1, …, T evaluations.
    regret: Vec<f64>,
    /// Evaluations with g(x) < h.
    unsafe_evaluations: usize,
    /// Why the run stopped before T (refuted assumptions, an empty safe set).
    stopped: Option<String>,
    /// Evaluations made.
    evaluations: usize,
    /// The grid indices evaluated, in order.
    evaluated: Vec<usize>,
    /// S_T: the safe set at the end, as grid indices.
    final_safe: Vec<usize>,
    wall_time_s: f64,
    /// Seconds of each call that chose a point (SafeAgent::next, or the rule's step).
    #[serde(skip)]
    step_times: Vec<f64>,
    /// d = 1, repetition 0: the final intervals of g and the safe set, for the plot.
    #[serde(skip)]
    final_band: Option<FinalBand>,
}

#[derive(Debug, Clone)]
struct FinalBand {
    lower: Vec<f64>,
    upper: Vec<f64>,
    safe: Vec<bool>,
    observations: Vec<(f64, f64)>,
}

/// One LSE run.
#[derive(Debug, Clone, Serialize)]
struct LseJson {
    dim: usize,
    method: Method,
    rep: usize,
    /// Fraction of the grid classified after 0, 1, …, T evaluations.
    classified: Vec<f64>,
    /// Evaluations until every point was classified (`None`: not within T).
    finished_at: Option<usize>,
    /// Points classified wrong by more than ε at the end.
    misclassified: usize,
    stopped: Option<String>,
    wall_time_s: f64,
}

#[derive(Debug, Serialize)]
struct SafeJson {
    kernel: &'static str,
    lengthscale: f64,
    threshold: f64,
    evaluations: usize,
    reps: usize,
    cmm_reps: usize,
    seed: u64,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    safeopt_beta: f64,
    min_reachable: f64,
    lse_accuracy: f64,
    problems: Vec<ProblemJson>,
    runs: Vec<RunJson>,
    lse: Vec<LseJson>,
}

/// The grid of dimension `dim`, row-major.
fn grid(dim: usize, args: &SafeArgs) -> Vec<f64> {
    let axis = |n: usize| -> Vec<f64> { (0..n).map(|i| i as f64 / (n - 1) as f64).collect() };
    match dim {
        1 => axis(args.grid_1d),
        _ => {
            let a = axis(args.grid_2d);
            a.iter()
                .flat_map(|&x| a.iter().flat_map(move |&y| [x, y]))
                .collect()
        }
    }
}

/// The grid neighbours of point `j` (along each axis).
fn neighbours(dim: usize, side: usize, j: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(4);
    match dim {
        1 => {
            if j > 0 {
                out.push(j - 1);
            }
            if j + 1 < side {
                out.push(j + 1);
            }
        }
        _ => {
            let (r, c) = (j / side, j % side);
            if r > 0 {
                out.push(j - side);
            }
            if r + 1 < side {
                out.push(j + side);
            }
            if c > 0 {
                out.push(j - 1);
            }
            if c + 1 < side {
                out.push(j + 1);
            }
        }
    }
    out
}

/// The connected components of `mask` in the grid graph: a label per point (`usize::MAX`
/// outside the mask) and the components' sizes.
fn components(dim: usize, side: usize, mask: &[bool]) -> (Vec<usize>, Vec<usize>) {
    let mut label = vec![usize::MAX; mask.len()];
    let mut sizes = Vec::new();
    for start in 0..mask.len() {
        if !mask[start] || label[start] != usize::MAX {
            continue;
        }
        let id = sizes.len();
        let mut stack = vec![start];
        label[start] = id;
        let mut size = 0;
        while let Some(j) = stack.pop() {
            size += 1;
            for k in neighbours(dim, side, j) {
                if mask[k] && label[k] == usize::MAX {
                    label[k] = id;
                    stack.push(k);
                }
            }
        }
        sizes.push(size);
    }
    (label, sizes)
}

/// Draws the problem of repetition `rep` in dimension `dim` (see the module docs).
fn draw_problem<K: Kernel + Clone>(
    kernel: &K,
    name: KernelName,
    dim: usize,
    rep: usize,
    args: &SafeArgs,
) -> Result<Problem, String> {
    let grid = grid(dim, args);
    let n = grid.len() / dim;
    let side = if dim == 1 { n } else { args.grid_2d };
    let config = SyntheticConfig {
        dim,
        arms: 1,
        ..SyntheticConfig::default()
    };
    let values = |p: &SyntheticProblem<K>| -> Result<Vec<f64>, String> {
        grid.chunks(dim)
            .map(|x| p.value(x).map_err(|e| e.to_string()))
            .collect()
    };
    for draw in 0..MAX_DRAWS {
        let seed = derive_seed(
            args.run.seed,
            &[
                name as u64,
                args.lengthscale.to_bits(),
                dim as u64,
                rep as u64,
                draw as u64,
            ],
        );
        let fp = SyntheticProblem::new(
            kernel.clone(),
            config,
            derive_seed(seed, &[OBJECTIVE_LABEL]),
        )
        .map_err(|e| e.to_string())?;
        let gp = SyntheticProblem::new(
            kernel.clone(),
            config,
            derive_seed(seed, &[CONSTRAINT_LABEL]),
        )
        .map_err(|e| e.to_string())?;
        let g = values(&gp)?;
        let mask: Vec<bool> = g.iter().map(|&v| v >= THRESHOLD).collect();
        let safe_size = mask.iter().filter(|&&s| s).count();
        let (label, sizes) = components(dim, side, &mask);
        let min = (args.min_reachable * n as f64).ceil() as usize;
        let chosen = (0..sizes.len())
            .filter(|&c| sizes[c] >= min.max(1) && 2 * sizes[c] < safe_size)
            .max_by_key(|&c| (sizes[c], std::cmp::Reverse(c)));
        let Some(c) = chosen else { continue };
        let reachable: Vec<bool> = label.iter().map(|&l| l == c).collect();
        let start = (0..n)
            .filter(|&j| reachable[j])
            .max_by(|&a, &b| g[a].total_cmp(&g[b]).then(b.cmp(&a)))
            .expect("the component is not empty");
        let f = values(&fp)?;
        let best_reachable = (0..n)
            .filter(|&j| reachable[j])
            .map(|j| f[j])
            .fold(f64::NEG_INFINITY, f64::max);
        return Ok(Problem {
            dim,
            rep,
            seed,
            draws: draw + 1,
            grid,
            f,
            g,
            start,
            reachable_size: sizes[c],
            reachable,
            safe_size,
            best_reachable,
        });
    }
    Err(format!(
        "no draw of {MAX_DRAWS} in d = {dim}, repetition {rep} had a safe component with at least \
         {} of the grid and under half of the safe set; lower --min-reachable or the length-scale",
        args.min_reachable
    ))
}

/// Bookkeeping shared by the SafeOpt runs.
struct Tracker<'a> {
    problem: &'a Problem,
    run: RunJson,
}

impl<'a> Tracker<'a> {
    fn new(problem: &'a Problem, method: Method) -> Self {
        Self {
            problem,
            run: RunJson {
                dim: problem.dim,
                method,
                rep: problem.rep,
                valid: method.kind().is_some(),
                reachable_fraction: Vec::new(),
                outside_reachable: Vec::new(),
                false_safe: 0,
                regret: Vec::new(),
                unsafe_evaluations: 0,
                stopped: None,
                evaluations: 0,
                evaluated: Vec::new(),
                final_safe: Vec::new(),
                wall_time_s: 0.0,
                step_times: Vec::new(),
                final_band: None,
            },
        }
    }

    /// Records the state after the current number of evaluations.
    fn record(&mut self, safe: &[bool], recommendation: usize) {
        let p = self.problem;
        let inside = (0..safe.len())
            .filter(|&j| safe[j] && p.reachable[j])
            .count();
        let outside = (0..safe.len())
            .filter(|&j| safe[j] && !p.reachable[j])
            .count();
        let false_safe = (0..safe.len())
            .filter(|&j| safe[j] && p.g[j] < THRESHOLD)
            .count();
        self.run
            .reachable_fraction
            .push(inside as f64 / p.reachable_size as f64);
        self.run.outside_reachable.push(outside);
        self.run.false_safe = self.run.false_safe.max(false_safe);
        self.run.regret.push(p.best_reachable - p.f[recommendation]);
    }

    /// Fills the curves up to T with the last state, for a run that stopped early.
    fn pad(&mut self, evaluations: usize) {
        let r = &mut self.run;
        while r.reachable_fraction.len() < evaluations + 1 {
            let last = r.reachable_fraction.len() - 1;
            r.reachable_fraction.push(r.reachable_fraction[last]);
            r.outside_reachable.push(r.outside_reachable[last]);
            r.regret.push(r.regret[last]);
        }
    }

    /// Counts an evaluation at `j`.
    fn evaluated(&mut self, j: usize) {
        self.run.evaluations += 1;
        self.run.evaluated.push(j);
        if self.problem.g[j] < THRESHOLD {
            self.run.unsafe_evaluations += 1;
        }
    }
}

/// The noise of evaluation `k` (0-based): (ε_f, ε_g).
fn noise_sequence(seed: u64, label: u64, len: usize, sigma: f64) -> Vec<(f64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, &[label]));
    (0..len)
        .map(|_| {
            let a: f64 = StandardNormal.sample(&mut rng);
            let b: f64 = StandardNormal.sample(&mut rng);
            (sigma * a, sigma * b)
        })
        .collect()
}

fn bound<K: Kernel + Clone>(
    kernel: &K,
    kind: BoundKind,
    dim: usize,
    args: &SafeArgs,
    grid: &Points<'_>,
) -> Result<AnyBound<K>, Error> {
    let config =
        BoundConfig::new().params(BoundParams::paper_defaults(kernel, dim, args.evaluations));
    let mut b = kind.build(kernel.clone(), &config)?;
    b.fix_arms(grid, None)?;
    Ok(b)
}

/// SafeOpt with a valid bound ([`SafeAgent`]).
fn safe_agent_run<K: Kernel + Clone>(
    kernel: &K,
    kind: BoundKind,
    method: Method,
    problem: &Problem,
    args: &SafeArgs,
) -> Result<RunJson, Error> {
    let start = Instant::now();
    let dim = problem.dim;
    let grid = Points::from_row_major(&problem.grid, dim)?;
    let sigma = BoundParams::paper_defaults(kernel, dim, args.evaluations)
        .check()?
        .sigma();
    let noise = noise_sequence(problem.seed, NOISE_LABEL, args.evaluations, sigma);
    let objective = bound(kernel, kind, dim, args, &grid)?;
    let constraint = bound(kernel, kind, dim, args, &grid)?;
    let mut agent = SafeAgent::new(
        objective,
        vec![constraint],
        &[THRESHOLD],
        &grid,
        &[problem.start],
    )?;
    let mut tracker = Tracker::new(problem, method);
    let safe_mask = |agent: &SafeAgent<AnyBound<K>, AnyBound<K>>| -> Vec<bool> {
        (0..grid.len()).map(|j| agent.is_safe(j)).collect()
    };
    tracker.record(&safe_mask(&agent), agent.recommend()?.index);
    let mut observations = Vec::new();
    for &(ef, eg) in &noise {
        let step = Instant::now();
        let choice = match agent.next() {
            Ok(c) => c,
            Err(Error::Refuted { what }) => {
                tracker.run.stopped = Some(what);
                break;
            }
            Err(e) => return Err(e),
        };
        tracker.run.step_times.push(step.elapsed().as_secs_f64());
        let j = choice.index;
        tracker.evaluated(j);
        let z = problem.g[j] + eg;
        observations.push((problem.grid[j * dim], z));
        agent.update(j, problem.f[j] + ef, &[z])?;
        match agent.recommend() {
            Ok(r) => tracker.record(&safe_mask(&agent), r.index),
            Err(Error::Refuted { what }) => {
                tracker.run.stopped = Some(what);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    tracker.pad(args.evaluations);
    tracker.run.final_safe = agent.safe_set();
    if dim == 1 && problem.rep == 0 {
        let c = &agent.constraint_intervals()[0];
        tracker.run.final_band = Some(FinalBand {
            lower: c.lower().to_vec(),
            upper: c.upper().to_vec(),
            safe: safe_mask(&agent),
            observations,
        });
    }
    tracker.run.wall_time_s = start.elapsed().as_secs_f64();
    Ok(tracker.run)
}

/// μ ± β σ_GP at every point of `grid`.
fn gp_intervals<K: Kernel>(
    gp: &ExactPosterior<K>,
    grid: &Points<'_>,
    beta: f64,
) -> Result<(Vec<f64>, Vec<f64>), Error> {
    let batch = gp.evaluate(grid)?;
    let (mean, var) = (batch.mean(0), batch.variance(0));
    let lower = mean
        .iter()
        .zip(var)
        .map(|(m, v)| m - beta * v.max(0.0).sqrt())
        .collect();
    let upper = mean
        .iter()
        .zip(var)
        .map(|(m, v)| m + beta * v.max(0.0).sqrt())
        .collect();
    Ok((lower, upper))
}

/// The first index of the largest value of `values` over `among` (numpy's `argmax`).
fn argmax_first(values: &[f64], among: impl Iterator<Item = usize>) -> Option<usize> {
    among.fold(None, |best: Option<usize>, j| match best {
        Some(b) if values[b] >= values[j] => Some(b),
        _ => Some(j),
    })
}

/// The `safeopt` package's SafeOpt without a Lipschitz constant (see the module docs).
fn safeopt_run<K: Kernel + Clone>(
    kernel: &K,
    problem: &Problem,
    args: &SafeArgs,
) -> Result<RunJson, Error> {
    let start = Instant::now();
    let dim = problem.dim;
    let grid = Points::from_row_major(&problem.grid, dim)?;
    let n = grid.len();
    let sigma = BoundParams::paper_defaults(kernel, dim, args.evaluations)
        .check()?
        .sigma();
    let beta = args.safeopt_beta;
    let noise = noise_sequence(problem.seed, NOISE_LABEL, args.evaluations, sigma);
    let mut gp_f = ExactPosterior::new(kernel.clone(), &[sigma * sigma])?;
    let mut gp_g = ExactPosterior::new(kernel.clone(), &[sigma * sigma])?;
    // The grid as a fixed arm set: O(n·t) per observation and O(n) per evaluation. The
    // expander test runs on a copy of g's GP kept at the same observations, which absorbs
    // (x, u_g(x)) and is truncated back (exact), as in `SafeAgent`.
    gp_f.fix_arms(&grid, None)?;
    gp_g.fix_arms(&grid, None)?;
    let mut scratch_g = gp_g.clone();
    let mut tracker = Tracker::new(problem, Method::Safeopt);
    let mut seed_mask = vec![false; n];
    seed_mask[problem.start] = true;
    tracker.record(&seed_mask, problem.start);
    let mut observations = Vec::new();
    let mut next = problem.start;
    let mut last = None;
    for (k, &(ef, eg)) in noise.iter().enumerate() {
        // Evaluation k + 1 at `next`: the seed first (safeopt's initial data).
        let j = next;
        tracker.evaluated(j);
        let x = grid.to_vec(j);
        let z = problem.g[j] + eg;
        observations.push((x[0], z));
        gp_f.observe(&x, problem.f[j] + ef)?;
        gp_g.observe(&x, z)?;
        scratch_g.observe(&x, z)?;
        let step = Instant::now();
        let (lf, uf) = gp_intervals(&gp_f, &grid, beta)?;
        let (lg, ug) = gp_intervals(&gp_g, &grid, beta)?;
        let safe: Vec<bool> = lg.iter().map(|&l| l > THRESHOLD).collect();
        if !safe.contains(&true) {
            tracker.run.stopped = Some(format!(
                "the safe set is empty after {} evaluations (safeopt raises)",
                k + 1
            ));
            last = Some((lg, ug, safe));
            break;
        }
        let recommendation = argmax_first(&lf, (0..n).filter(|&i| safe[i])).expect("S ≠ ∅");
        tracker.record(&safe, recommendation);
        if k + 1 == noise.len() {
            last = Some((lg, ug, safe));
            break;
        }
        let best_lower = (0..n)
            .filter(|&i| safe[i])
            .map(|i| lf[i])
            .fold(f64::NEG_INFINITY, f64::max);
        let maximiser: Vec<bool> = (0..n).map(|i| safe[i] && uf[i] >= best_lower).collect();
        let width = |i: usize| (uf[i] - lf[i]).max(ug[i] - lg[i]);
        // `max_var`: the widest objective interval in M (the package takes Q[:, :2], f only).
        let max_var = (0..n)
            .filter(|&i| maximiser[i])
            .map(|i| uf[i] - lf[i])
            .fold(f64::NEG_INFINITY, f64::max);
        // threshold = 0: every positive width passes `u − l > threshold·β`.
        let mut candidates: Vec<usize> = (0..n)
            .filter(|&i| safe[i] && !maximiser[i] && width(i) > max_var && width(i) > 0.0)
            .collect();
        candidates.sort_by(|&a, &b| width(b).total_cmp(&width(a)).then(b.cmp(&a)));
        let outside: Vec<usize> = (0..n).filter(|&i| !safe[i]).collect();
        let mut expander = None;
        if !outside.is_empty() {
            let len = scratch_g.len();
            for &i in &candidates {
                scratch_g.observe(&grid.to_vec(i), ug[i])?;
                let intervals = gp_intervals(&scratch_g, &grid, beta);
                scratch_g.truncate(len);
                let (l2, _) = intervals?;
                if outside.iter().any(|&o| l2[o] >= THRESHOLD) {
                    expander = Some(i);
                    break;
                }
            }
        }
        let widths: Vec<f64> = (0..n).map(width).collect();
        next = argmax_first(
            &widths,
            (0..n).filter(|&i| maximiser[i] || Some(i) == expander),
        )
        .expect("M holds the best safe lower bound");
        tracker.run.step_times.push(step.elapsed().as_secs_f64());
    }
    tracker.pad(args.evaluations);
    if let Some((_, _, safe)) = &last {
        tracker.run.final_safe = (0..n).filter(|&i| safe[i]).collect();
    }
    if dim == 1
        && problem.rep == 0
        && let Some((lower, upper, safe)) = last
    {
        tracker.run.final_band = Some(FinalBand {
            lower,
            upper,
            safe,
            observations,
        });
    }
    tracker.run.wall_time_s = start.elapsed().as_secs_f64();
    Ok(tracker.run)
}

/// LSE with a valid bound on the constraint g.
fn lse_run<K: Kernel + Clone>(
    kernel: &K,
    kind: BoundKind,
    method: Method,
    problem: &Problem,
    args: &SafeArgs,
) -> Result<LseJson, Error> {
    let start = Instant::now();
    let dim = problem.dim;
    let grid = Points::from_row_major(&problem.grid, dim)?;
    let n = grid.len();
    let sigma = BoundParams::paper_defaults(kernel, dim, args.evaluations)
        .check()?
        .sigma();
    let noise = noise_sequence(problem.seed, LSE_NOISE_LABEL, args.evaluations, sigma);
    let b = bound(kernel, kind, dim, args, &grid)?;
    let mut agent = LevelSetAgent::new(b, &grid, THRESHOLD, args.lse_accuracy)?;
    let classified = |agent: &LevelSetAgent<AnyBound<K>>| {
        agent
            .levels()
            .iter()
            .filter(|&&l| l != Level::Unclassified)
            .count() as f64
            / n as f64
    };
    let mut curve = vec![classified(&agent)];
    let (mut finished_at, mut stopped) = (None, None);
    for (k, &(_, eg)) in noise.iter().enumerate() {
        let choice = match agent.next() {
            Ok(Some(c)) => c,
            Ok(None) => {
                finished_at = Some(k);
                break;
            }
            Err(Error::Refuted { what }) => {
                stopped = Some(what);
                break;
            }
            Err(e) => return Err(e),
        };
        agent.update(choice.index, problem.g[choice.index] + eg)?;
        curve.push(classified(&agent));
    }
    if finished_at.is_none() && stopped.is_none() && matches!(agent.next(), Ok(None)) {
        finished_at = Some(args.evaluations);
    }
    while curve.len() < args.evaluations + 1 {
        curve.push(*curve.last().expect("not empty"));
    }
    let eps = args.lse_accuracy;
    let misclassified = agent
        .levels()
        .iter()
        .zip(&problem.g)
        .filter(|&(l, &g)| match l {
            Level::Above => g < THRESHOLD - eps,
            Level::Below => g > THRESHOLD + eps,
            _ => false,
        })
        .count();
    Ok(LseJson {
        dim,
        method,
        rep: problem.rep,
        classified: curve,
        finished_at,
        misclassified,
        stopped,
        wall_time_s: start.elapsed().as_secs_f64(),
    })
}

enum Job {
    Safe(usize, Method),
    Lse(usize, Method),
}

enum Output {
    Safe(Box<RunJson>),
    Lse(LseJson),
}

fn check(args: &SafeArgs) -> Result<(), String> {
    args.run.check()?;
    let fail = |what: &str| Err(format!("invalid arguments: {what}"));
    if args.dims.is_empty() || args.dims.iter().any(|&d| d != 1 && d != 2) {
        return fail("--dims takes 1 and/or 2");
    }
    if let Some(d) = first_repeat(&args.dims) {
        return fail(&format!("--dims lists {d} twice"));
    }
    if args.methods.is_empty() {
        return fail("--methods is empty");
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(&format!("--methods lists {} twice", m.tag()));
    }
    if args.grid_1d < 3 || args.grid_2d < 3 {
        return fail("--grid-1d and --grid-2d must be at least 3");
    }
    if args.evaluations == 0 || args.reps == 0 {
        return fail("--evaluations and --reps must be at least 1");
    }
    if args.cmm_reps == Some(0) {
        return fail("--cmm-reps must be at least 1");
    }
    if !(args.lengthscale.is_finite() && args.lengthscale > 0.0) {
        return fail("--lengthscale must be positive and finite");
    }
    if !(args.safeopt_beta.is_finite() && args.safeopt_beta > 0.0) {
        return fail("--safeopt-beta must be positive and finite");
    }
    if !(args.min_reachable > 0.0 && args.min_reachable < 0.5) {
        return fail("--min-reachable must be in (0, 0.5)");
    }
    if !(args.lse_accuracy.is_finite() && args.lse_accuracy >= 0.0) {
        return fail("--lse-accuracy must be finite and ≥ 0");
    }
    Ok(())
}

/// `kbandit reproduce safe`.
pub fn run(args: &SafeArgs) -> Result<(), String> {
    check(args)?;
    let l = args.lengthscale;
    match args.kernel.nu() {
        None if args.kernel == KernelName::Rbf => {
            run_with(&Rbf::new(l).map_err(|e| e.to_string())?, args)
        }
        Some(nu) => run_with(&Matern::new(nu, l).map_err(|e| e.to_string())?, args),
        None => Err(format!(
            "invalid arguments: the {} kernel is not supported by `reproduce safe`",
            args.kernel.tag()
        )),
    }
}

fn run_with<K: Kernel + Clone + Send + Sync>(kernel: &K, args: &SafeArgs) -> Result<(), String> {
    create_dir(&args.run.out)?;
    let cmm_reps = args.cmm_reps.unwrap_or(args.reps).min(args.reps);
    let mut problems = Vec::new();
    for &dim in &args.dims {
        for rep in 0..args.reps {
            problems.push(draw_problem(kernel, args.kernel, dim, rep, args)?);
        }
    }
    let mut jobs = Vec::new();
    for (p, problem) in problems.iter().enumerate() {
        for &m in &args.methods {
            if m == Method::Cmm && problem.rep >= cmm_reps {
                continue;
            }
            jobs.push((m.cost(), Job::Safe(p, m)));
            if !args.no_lse && m.kind().is_some() {
                jobs.push((m.cost(), Job::Lse(p, m)));
            }
        }
    }
    jobs.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
    let jobs: Vec<Job> = jobs.into_iter().map(|(_, j)| j).collect();
    let (outputs, threads, elapsed) =
        run_jobs(&jobs, args.run.threads, "reproduce safe", |job| match job {
            Job::Safe(p, m) => {
                let problem = &problems[*p];
                let out = match m.kind() {
                    Some(kind) => safe_agent_run(kernel, kind, *m, problem, args),
                    None => safeopt_run(kernel, problem, args),
                };
                out.map(|r| Output::Safe(Box::new(r))).map_err(|e| {
                    format!("{} d = {} rep {}: {e}", m.title(), problem.dim, problem.rep)
                })
            }
            Job::Lse(p, m) => {
                let problem = &problems[*p];
                let kind = m.kind().expect("a valid bound");
                lse_run(kernel, kind, *m, problem, args)
                    .map(Output::Lse)
                    .map_err(|e| {
                        format!(
                            "LSE {} d = {} rep {}: {e}",
                            m.title(),
                            problem.dim,
                            problem.rep
                        )
                    })
            }
        })?;
    let mut runs = Vec::new();
    let mut lse = Vec::new();
    for o in outputs {
        match o {
            Output::Safe(r) => runs.push(*r),
            Output::Lse(r) => lse.push(r),
        }
    }
    let order = |m: Method| args.methods.iter().position(|&x| x == m).unwrap_or(0);
    runs.sort_by_key(|r| (r.dim, order(r.method), r.rep));
    lse.sort_by_key(|r| (r.dim, order(r.method), r.rep));
    let out = &args.run.out;
    let mut plots = Vec::new();
    for &dim in &args.dims {
        print_tables(dim, &problems, &runs, &lse, args);
        plots.extend(growth_plots(dim, &runs, &lse, args, out)?);
        if dim == 1
            && let Some(stem) = bands_figure(&problems, &runs, args, out)?
        {
            plots.push(stem);
        }
    }
    let json_path = out.join("safe.json");
    let csv_path = out.join("safe.csv");
    let lse_csv_path = out.join("safe_lse.csv");
    let params = BoundParams::paper_defaults(kernel, 1, args.evaluations)
        .check()
        .map_err(|e| e.to_string())?;
    let json = SafeJson {
        kernel: args.kernel.tag(),
        lengthscale: args.lengthscale,
        threshold: THRESHOLD,
        evaluations: args.evaluations,
        reps: args.reps,
        cmm_reps,
        seed: args.run.seed,
        sigma: params.sigma(),
        norm_bound: params.norm_bound(),
        delta: params.delta(),
        safeopt_beta: args.safeopt_beta,
        min_reachable: args.min_reachable,
        lse_accuracy: args.lse_accuracy,
        problems: problems
            .iter()
            .map(|p| ProblemJson {
                dim: p.dim,
                rep: p.rep,
                seed: p.seed,
                draws: p.draws,
                grid_points: p.f.len(),
                start: p.start,
                start_x: p.grid[p.start * p.dim..(p.start + 1) * p.dim].to_vec(),
                reachable_size: p.reachable_size,
                safe_size: p.safe_size,
                best_reachable: p.best_reachable,
                f: p.f.clone(),
                g: p.g.clone(),
            })
            .collect(),
        runs,
        lse,
    };
    write_json(&json_path, &json)?;
    write_csvs(&csv_path, &lse_csv_path, &json, args)?;
    announce(
        "reproduce safe",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path, &csv_path, &lse_csv_path],
        &plots,
    );
    Ok(())
}

/// The value of a per-evaluation curve after `k` evaluations (the last one if shorter).
fn at(curve: &[f64], k: usize) -> f64 {
    curve[k.min(curve.len() - 1)]
}

fn fmt_ms((m, s): (f64, f64)) -> String {
    format!("{m:.3} ± {s:.3}")
}

fn print_tables(
    dim: usize,
    problems: &[Problem],
    runs: &[RunJson],
    lse: &[LseJson],
    args: &SafeArgs,
) {
    let ps: Vec<&Problem> = problems.iter().filter(|p| p.dim == dim).collect();
    let n = ps[0].f.len();
    let share = |p: &&Problem| p.reachable_size as f64 / p.safe_size as f64;
    let t = args.evaluations;
    let early = 50.min(t);
    println!(
        "\n### d = {dim}: {n} grid points, {} repetitions; |R|/|D| = {}, |R|/|safe set| = {}, draws per problem {}\n",
        ps.len(),
        fmt_ms(mean_std(
            ps.iter().map(|p| p.reachable_size as f64 / n as f64)
        )),
        fmt_ms(mean_std(ps.iter().map(share))),
        fmt_ms(mean_std(ps.iter().map(|p| p.draws as f64))),
    );
    println!(
        "| method | reps | certified fraction of R after {early} | after {t} | simple regret in R after {t} | unsafe evaluations (all reps) | certified points with g < h (max) | certified outside R after {t} | s per step (median) | s per run |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &m in &args.methods {
        let rs: Vec<&RunJson> = runs
            .iter()
            .filter(|r| r.dim == dim && r.method == m)
            .collect();
        if rs.is_empty() {
            continue;
        }
        let mut steps: Vec<f64> = rs
            .iter()
            .flat_map(|r| r.step_times.iter().copied())
            .collect();
        steps.sort_by(f64::total_cmp);
        let median = steps.get(steps.len() / 2).copied().unwrap_or(f64::NAN);
        let stopped = rs.iter().filter(|r| r.stopped.is_some()).count();
        let stop_note = if stopped > 0 {
            format!(" ({stopped} stopped early)")
        } else {
            String::new()
        };
        println!(
            "| {}{stop_note} | {} | {} | {} | {} | {} | {} | {} | {median:.4} | {:.1} |",
            m.title(),
            rs.len(),
            fmt_ms(mean_std(
                rs.iter().map(|r| at(&r.reachable_fraction, early))
            )),
            fmt_ms(mean_std(rs.iter().map(|r| at(&r.reachable_fraction, t)))),
            fmt_ms(mean_std(rs.iter().map(|r| at(&r.regret, t)))),
            rs.iter().map(|r| r.unsafe_evaluations).sum::<usize>(),
            rs.iter().map(|r| r.false_safe).max().unwrap_or(0),
            fmt_ms(mean_std(rs.iter().map(
                |r| *r.outside_reachable.last().expect("T + 1 values") as f64
            ))),
            mean_std(rs.iter().map(|r| r.wall_time_s)).0,
        );
    }
    if args.no_lse {
        return;
    }
    println!(
        "\nLSE (Gotovos et al. 2013) on g, h = {THRESHOLD}, ε = {}, d = {dim}:\n",
        args.lse_accuracy
    );
    println!(
        "| bound | reps | fraction classified after {early} | after {t} | runs done within {t} | misclassified by > ε (all reps) | s per run |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &m in &args.methods {
        let rs: Vec<&LseJson> = lse
            .iter()
            .filter(|r| r.dim == dim && r.method == m)
            .collect();
        if rs.is_empty() {
            continue;
        }
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.1} |",
            m.title(),
            rs.len(),
            fmt_ms(mean_std(rs.iter().map(|r| at(&r.classified, early)))),
            fmt_ms(mean_std(rs.iter().map(|r| at(&r.classified, t)))),
            rs.iter().filter(|r| r.finished_at.is_some()).count(),
            rs.iter().map(|r| r.misclassified).sum::<usize>(),
            mean_std(rs.iter().map(|r| r.wall_time_s)).0,
        );
    }
}

/// Mean and standard deviation across runs of a curve, at each evaluation.
fn curve_stats<'a>(
    curves: impl Iterator<Item = &'a [f64]> + Clone,
    len: usize,
) -> (Vec<f64>, Vec<f64>) {
    (0..len)
        .map(|k| {
            let values: Vec<f64> = curves.clone().map(|c| at(c, k)).collect();
            mean_std(values.into_iter())
        })
        .unzip()
}

fn growth_plots(
    dim: usize,
    runs: &[RunJson],
    lse: &[LseJson],
    args: &SafeArgs,
    out: &Path,
) -> Result<Vec<PathBuf>, String> {
    let growth = runs
        .iter()
        .filter(|r| r.dim == dim)
        .map(|r| (r.method, r.reachable_fraction.as_slice()));
    let stem = out.join(format!("safe_growth_d{dim}"));
    method_plot(
        &stem,
        &format!("SafeOpt, d = {dim}: the reachable safe region certified safe"),
        "fraction of R certified safe",
        growth,
        args,
    )?;
    let mut plots = vec![stem];
    if !args.no_lse {
        let classified = lse
            .iter()
            .filter(|r| r.dim == dim)
            .map(|r| (r.method, r.classified.as_slice()));
        let stem = out.join(format!("safe_lse_d{dim}"));
        method_plot(
            &stem,
            &format!(
                "LSE, d = {dim}: the grid classified (h = 0, ε = {})",
                args.lse_accuracy
            ),
            "fraction of the grid classified",
            classified,
            args,
        )?;
        plots.push(stem);
    }
    Ok(plots)
}

/// One curve per method of `--methods` that has runs: the mean ± sd across its runs of the
/// per-evaluation values `curves` gives as (method, curve).
fn method_plot<'a>(
    stem: &Path,
    title: &str,
    y_label: &str,
    curves: impl Iterator<Item = (Method, &'a [f64])> + Clone,
    args: &SafeArgs,
) -> Result<(), String> {
    let len = args.evaluations + 1;
    let xs: Vec<f64> = (0..len).map(|k| k as f64).collect();
    let methods: Vec<Method> = args
        .methods
        .iter()
        .copied()
        .filter(|&m| curves.clone().any(|(method, _)| method == m))
        .collect();
    let stats: Vec<(Vec<f64>, Vec<f64>)> = methods
        .iter()
        .map(|&m| {
            let of_m = curves
                .clone()
                .filter(move |(method, _)| *method == m)
                .map(|(_, c)| c);
            curve_stats(of_m, len)
        })
        .collect();
    let curves: Vec<XyCurve<'_>> = methods
        .iter()
        .zip(&stats)
        .map(|(m, (mean, std))| XyCurve {
            label: m.title(),
            x: &xs,
            mean,
            std,
        })
        .collect();
    xy_plot_described(stem, title, "evaluations", y_label, false, &curves)
}

/// d = 1, repetition 0: g, the final intervals of g of DMM (or the first valid method run)
/// and of the `safeopt` rule, and each one's safe set as a strip just above h.
fn bands_figure(
    problems: &[Problem],
    runs: &[RunJson],
    args: &SafeArgs,
    out: &Path,
) -> Result<Option<PathBuf>, String> {
    let Some(problem) = problems.iter().find(|p| p.dim == 1 && p.rep == 0) else {
        return Ok(None);
    };
    let with_band = |m: Method| {
        runs.iter()
            .find(|r| r.dim == 1 && r.rep == 0 && r.method == m && r.final_band.is_some())
    };
    let valid = [
        Method::Dmm,
        Method::Cmm,
        Method::Amm,
        Method::Ay,
        Method::Igp,
    ]
    .into_iter()
    .find_map(with_band);
    let chosen: Vec<&RunJson> = valid
        .into_iter()
        .chain(with_band(Method::Safeopt))
        .collect();
    if chosen.is_empty() {
        return Ok(None);
    }
    let span = problem
        .g
        .iter()
        .fold(f64::NEG_INFINITY, |a, &b| a.max(b.abs()));
    let labels: Vec<(String, String)> = chosen
        .iter()
        .map(|r| {
            (
                format!("{}: [ℓ, u] of g", r.method.title()),
                format!("{}: safe set (strip above h)", r.method.title()),
            )
        })
        .collect();
    let threshold = vec![THRESHOLD; problem.g.len()];
    let strips: Vec<Vec<f64>> = chosen
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let band = r.final_band.as_ref().expect("chosen with a band");
            let height = span * 0.04 * (i + 1) as f64;
            band.safe
                .iter()
                .map(|&s| if s { THRESHOLD + height } else { THRESHOLD })
                .collect()
        })
        .collect();
    let mut bands = Vec::new();
    for (i, r) in chosen.iter().enumerate() {
        let band = r.final_band.as_ref().expect("chosen with a band");
        bands.push(Band {
            label: &labels[i].0,
            lcb: &band.lower,
            ucb: &band.upper,
        });
        bands.push(Band {
            label: &labels[i].1,
            lcb: &threshold,
            ucb: &strips[i],
        });
    }
    let observations = chosen[0]
        .final_band
        .as_ref()
        .expect("chosen with a band")
        .observations
        .clone();
    let stem = out.join("safe_bands_d1");
    bands_plot(
        &stem,
        &format!(
            "SafeOpt, d = 1, repetition 0, after {} evaluations: g, h = 0 and the bands (dots: {}'s evaluations)",
            args.evaluations,
            chosen[0].method.title()
        ),
        &problem.grid,
        &problem.g,
        &observations,
        &bands,
    )?;
    Ok(Some(stem))
}

fn write_csvs(
    path: &Path,
    lse_path: &Path,
    json: &SafeJson,
    args: &SafeArgs,
) -> Result<(), String> {
    fn fail(p: &Path) -> impl Fn(csv::Error) -> String + '_ {
        move |e| format!("cannot write {}: {e}", p.display())
    }
    let t = args.evaluations;
    let early = 50.min(t);
    let mut w = csv::Writer::from_path(path).map_err(fail(path))?;
    w.write_record([
        "dim",
        "method",
        "rep",
        "seed",
        "valid",
        "reachable_size",
        "safe_size",
        "fraction_at_50",
        "fraction_at_t",
        "regret_at_t",
        "unsafe_evaluations",
        "false_safe",
        "outside_reachable_at_t",
        "evaluations",
        "stopped",
        "wall_time_s",
    ])
    .map_err(fail(path))?;
    for r in &json.runs {
        let p = json
            .problems
            .iter()
            .find(|p| p.dim == r.dim && p.rep == r.rep)
            .expect("every run has its problem");
        w.write_record([
            r.dim.to_string(),
            r.method.tag().to_owned(),
            r.rep.to_string(),
            p.seed.to_string(),
            r.valid.to_string(),
            p.reachable_size.to_string(),
            p.safe_size.to_string(),
            at(&r.reachable_fraction, early).to_string(),
            at(&r.reachable_fraction, t).to_string(),
            at(&r.regret, t).to_string(),
            r.unsafe_evaluations.to_string(),
            r.false_safe.to_string(),
            r.outside_reachable.last().copied().unwrap_or(0).to_string(),
            r.evaluations.to_string(),
            r.stopped.clone().unwrap_or_default(),
            format!("{:.4}", r.wall_time_s),
        ])
        .map_err(fail(path))?;
    }
    w.flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut w = csv::Writer::from_path(lse_path).map_err(fail(lse_path))?;
    w.write_record([
        "dim",
        "method",
        "rep",
        "classified_at_50",
        "classified_at_t",
        "finished_at",
        "misclassified",
        "stopped",
        "wall_time_s",
    ])
    .map_err(fail(lse_path))?;
    for r in &json.lse {
        w.write_record([
            r.dim.to_string(),
            r.method.tag().to_owned(),
            r.rep.to_string(),
            at(&r.classified, early).to_string(),
            at(&r.classified, t).to_string(),
            r.finished_at.map(|k| k.to_string()).unwrap_or_default(),
            r.misclassified.to_string(),
            r.stopped.clone().unwrap_or_default(),
            format!("{:.4}", r.wall_time_s),
        ])
        .map_err(fail(lse_path))?;
    }
    w.flush()
        .map_err(|e| format!("cannot write {}: {e}", lse_path.display()))
}
