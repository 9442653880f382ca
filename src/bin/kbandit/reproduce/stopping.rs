//! `kbandit reproduce stopping`: how many evaluations each bound needs before it certifies that
//! its recommendation is ε-optimal (issue 38), on the problem of Flynn & Reeb (2024, §7), and
//! whether the certificates were right.
//!
//! # The protocol
//!
//! For every kernel and repetition, one f with ‖f‖_H = B = 10 is drawn as in `reproduce table1`
//! ([`SyntheticProblem`], d = 3, 20 centres), and one **fixed** set of `--arms` (1000) arms,
//! the arms of the problem's round 0, uniform on [0, 1]³. Every method plays on that set with
//! the same noise sequence (N(0, σ²), σ = 0.1, from a stream of the repetition's seed): it
//! evaluates the bounds over all the arms **once per round**, plays the arm of largest UCB, and
//! certifies with the same values ([`Certifier::update_checked`]): the recommendation is the
//! arm of largest lower bound, the gap G = max UCB − LCB(recommendation). A run stops when
//! G ≤ the smallest ε, or after `--budget` evaluations.
//!
//! The certificate is checked after every evaluation. That is valid: the bounds of AMM-, DMM-,
//! CMM-UCB, AY-GP-UCB and IGP-UCB hold on one event of probability ≥ 1 − δ at **every** round
//! at once (module docs of `kernel_bandits::decide`), so the first round with G ≤ ε — or any
//! subset of rounds, chosen in advance or from the data — keeps the guarantee; and on that
//! event the bounds intersected over the rounds are valid too, so the valid bounds use the
//! [`Certifier`]. Their parameters (σ, B, δ, the paper's c and IGP's η = 2/T with T = the
//! budget) are fixed before the data.
//!
//! Three heuristics for comparison, which carry **no** guarantee (their "certificates" are
//! reported round by round, not intersected: there is no event on which to intersect):
//! - K-UCB: U = μ_λ + β ρ_λ/√λ with a constant β (`--k-ucb-beta`, default 1), λ = σ²/c.
//! - GP-UCB β/5: U = μ_λ + √(β_t) ρ_λ with β_t = 2 ln(|D| t² π²/(6δ))/5, Srinivas et al.
//!   (2010, Thm 1) for a finite domain D divided by 5 as in their experiments; t the round
//!   (1-based), λ = σ²/c, |D| = the number of arms.
//! - The regret bound of Makarova et al. (2022), as Optuna's `RegretBoundEvaluator` computes it
//!   ([`makarova_bound`]), on the data of the GP-UCB β/5 run (the Bayesian-optimisation loop it
//!   was made for), checked from the 20th evaluation on (Optuna's `Terminator` default
//!   `min_n_trials = 20`).
//!
//! Validity: for every certificate the table counts those below the true regret of the
//! recommended arm, f(x*) − f(x̂) with x* the best of the arms, and reports the smallest margin
//! G − (f(x*) − f(x̂)) over every round of every run.

mod boxed;

use std::path::Path;
use std::time::Instant;

use clap::{Args, ValueEnum};
use kernel_bandits::bound::{BoundConfig, BoundKind, Bounds, CheckedBounds, Diagnostics};
use kernel_bandits::decide::{Certifier, RegretCertificate};
use kernel_bandits::posterior::ExactPosterior;
use kernel_bandits::prelude::*;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use super::{RunOptions, announce, create_dir, derive_seed, first_repeat, run_jobs, write_json};
use crate::kernels::KernelName;
use crate::plot::{Series, loglog_plot};

/// Arguments of `kbandit reproduce stopping`.
#[derive(Debug, Args)]
pub struct StoppingArgs {
    /// Kernels (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [KernelName::Rbf, KernelName::Matern52])]
    kernels: Vec<KernelName>,
    /// Length-scale ℓ of the kernels.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Methods (comma-separated): the bounds with a guarantee (cmm, dmm, amm, ay, igp) and the
    /// heuristics k-ucb and gp-ucb-5 (whose run also carries the Makarova et al. 2022 bound).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Method::ALL)]
    methods: Vec<Method>,
    /// The gaps ε to certify (comma-separated); a run stops at the smallest.
    #[arg(long, value_delimiter = ',', default_values_t = [2.0, 1.0, 0.5, 0.2], allow_negative_numbers = true)]
    epsilons: Vec<f64>,
    /// Size of the fixed arm set (uniform on [0, 1]³).
    #[arg(long, default_value_t = 1000)]
    arms: usize,
    /// Evaluations per run at most (also the horizon T of the paper's c and of IGP's η = 2/T).
    /// The default, the paper's T, takes about 16 CPU-minutes (8 minutes on two idle cores),
    /// 88 % of it CMM-UCB on Matérn (about 90 s per run of 1000 evaluations over 1000 arms).
    #[arg(long, default_value_t = 1000)]
    budget: usize,
    /// K-UCB's constant β (U = μ + β ρ/√λ).
    #[arg(
        long = "k-ucb-beta",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    k_ucb_beta: f64,
    /// Repetitions (one f and one arm set each) per kernel.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Domains (comma-separated): `arms`, the fixed arm set; `box`, the box [0, 1]³ (certified
    /// by branch and bound on a geometric schedule of rounds).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Domain::Arms, Domain::Box])]
    domains: Vec<Domain>,
    /// Evaluations per run on the box at most (also its T of the paper's c and IGP's η).
    #[arg(long = "box-budget", default_value_t = 200)]
    box_budget: usize,
    /// On the box, certify after round(5·r^k) evaluations, k = 0, 1, … (distinct), and at the
    /// budget: this r (> 1).
    #[arg(
        long = "box-ratio",
        default_value_t = 1.25,
        allow_negative_numbers = true
    )]
    box_ratio: f64,
    /// Sub-boxes per box certificate at most (the branch and bound's budget).
    #[arg(long = "box-boxes", default_value_t = 10_000)]
    box_boxes: usize,
    /// Tolerance of a box certificate: stop its search when the proven bound on sup UCB is
    /// within this of the best UCB found.
    #[arg(
        long = "box-tolerance",
        default_value_t = 0.05,
        allow_negative_numbers = true
    )]
    box_tolerance: f64,
    #[command(flatten)]
    run: RunOptions,
}

/// The domains of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Domain {
    /// The fixed arm set.
    Arms,
    /// The box [0, 1]³.
    Box,
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
    KUcb,
    #[value(name = "gp-ucb-5")]
    #[serde(rename = "gp-ucb-5")]
    GpUcb5,
}

impl Method {
    const ALL: [Self; 7] = [
        Self::Cmm,
        Self::Dmm,
        Self::Amm,
        Self::Ay,
        Self::Igp,
        Self::KUcb,
        Self::GpUcb5,
    ];

    fn tag(self) -> &'static str {
        match self {
            Self::Cmm => "cmm",
            Self::Dmm => "dmm",
            Self::Amm => "amm",
            Self::Ay => "ay",
            Self::Igp => "igp",
            Self::KUcb => "k-ucb",
            Self::GpUcb5 => "gp-ucb-5",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::Cmm => "CMM-UCB",
            Self::Dmm => "DMM-UCB",
            Self::Amm => "AMM-UCB",
            Self::Ay => "AY-GP-UCB",
            Self::Igp => "IGP-UCB",
            Self::KUcb => "K-UCB (heuristic)",
            Self::GpUcb5 => "GP-UCB β/5 (heuristic)",
        }
    }

    /// Whether the method's bounds hold on an event of probability ≥ 1 − δ.
    fn valid(self) -> bool {
        !matches!(self, Self::KUcb | Self::GpUcb5)
    }

    fn kind(self) -> Option<BoundKind> {
        match self {
            Self::Cmm => Some(BoundKind::Cmm),
            Self::Dmm => Some(BoundKind::Dmm),
            Self::Amm => Some(BoundKind::Amm),
            Self::Ay => Some(BoundKind::Ay),
            Self::Igp => Some(BoundKind::Igp),
            Self::KUcb | Self::GpUcb5 => None,
        }
    }

    /// Rough relative cost, to start the longest runs first.
    fn cost(self) -> u32 {
        match self {
            Self::Cmm => 100,
            Self::GpUcb5 => 10,
            Self::Dmm => 5,
            _ => 1,
        }
    }
}

/// The label of the noise stream of a repetition.
const NOISE_LABEL: u64 = 0x006e_6f69_7365; // "noise"
/// Optuna's `Terminator` considers stopping from this many completed trials on.
pub(super) const MAKAROVA_MIN_TRIALS: usize = 20;
/// δ of Optuna's `RegretBoundEvaluator` (`_compute_standardized_regret_bound`'s default).
pub(super) const MAKAROVA_DELTA: f64 = 0.1;

/// When a run first certified one ε.
#[derive(Debug, Clone, Serialize)]
struct Reached {
    epsilon: f64,
    /// Evaluations made when G ≤ ε first held (`None`: not within the budget).
    evaluations: Option<usize>,
    /// The certified gap then.
    gap: Option<f64>,
    /// f(x*) − f(x̂) for the recommendation then.
    regret: Option<f64>,
}

/// One run of one method (and, for gp-ucb-5, the Makarova et al. bound on its data).
#[derive(Debug, Clone, Serialize)]
struct RunJson {
    kernel: &'static str,
    method: Method,
    rep: usize,
    seed: u64,
    valid: bool,
    /// The certified gap after 0, 1, 2, … evaluations.
    gap: Vec<f64>,
    /// The true regret of the recommendation after 0, 1, 2, … evaluations.
    regret: Vec<f64>,
    reached: Vec<Reached>,
    /// Rounds where the gap was below the recommendation's true regret.
    violations: usize,
    /// min over rounds of gap − regret.
    smallest_margin: f64,
    /// The Makarova et al. bound after 20, 21, … evaluations (gp-ucb-5 only), its recommended
    /// arm's true regret, and when it first claimed each ε.
    #[serde(skip_serializing_if = "Option::is_none")]
    makarova: Option<MakarovaTrace>,
    wall_time_s: f64,
}

#[derive(Debug, Clone, Serialize)]
struct MakarovaTrace {
    /// Evaluations at the first entry of `bound`.
    first_evaluations: usize,
    bound: Vec<f64>,
    regret: Vec<f64>,
    reached: Vec<Reached>,
    violations: usize,
    smallest_margin: f64,
}

#[derive(Debug, Serialize)]
struct StoppingJson {
    dims: usize,
    lengthscale: f64,
    arms: usize,
    budget: usize,
    epsilons: Vec<f64>,
    reps: usize,
    seed: u64,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    k_ucb_beta: f64,
    makarova_delta: f64,
    runs: Vec<RunJson>,
}

/// The regret bound of Makarova et al. (2022, §3, Eq. 5–6) as Optuna's
/// `RegretBoundEvaluator` (optuna/terminator/improvement/evaluator.py, v4) computes it,
/// translated to maximisation as Optuna does, on a finite domain:
///
/// 1. the top trials: the n' = min(max(⌊n/2⌋, 20), n) largest values among the n observations
///    (every value ≥ the n'-th largest, as `np.partition` and `values >= threshold` keep);
/// 2. their values standardised: ỹ = (y − mean)/s with s = max(10⁻¹⁰, population std);
/// 3. a GP on (x, ỹ) of the top trials, prior covariance `kernel` (here not fitted: the
///    problem's kernel with unit variance on the standardised scale) and noise variance
///    `noise_variance` (here σ²/s², the true noise on that scale) — Optuna fits these by MAP;
/// 4. β = 2 ln(d n'² π²/(6δ))/5 (Optuna's `_get_beta`, with δ = 0.1 and d the dimension — the
///    number of parameters, where Makarova et al. take |D|);
/// 5. bound = s · (max over the domain and the top trials of μ + √β·sd − max over the top
///    trials of μ − √β·sd), sd the posterior standard deviation of f (without noise).
///    Optuna takes the domain's maximum over 2048 uniform samples; on a finite domain the
///    maximum over every point is exact.
///
/// In Makarova et al.'s minimisation convention: min over trials of UCB minus min over the
/// domain of LCB. Returns (bound, index into `xs` of the top trial with the largest LCB — the
/// point the bound is about).
pub(super) fn makarova_bound<K: Kernel + Clone>(
    kernel: &K,
    xs: &[Vec<f64>],
    ys: &[f64],
    domain: &Points<'_>,
    sigma: f64,
    delta: f64,
) -> Result<(f64, usize), Error> {
    let n = ys.len();
    if n == 0 || xs.len() != n {
        return Err(Error::NoArms);
    }
    let top_n = (n / 2).max(MAKAROVA_MIN_TRIALS).min(n);
    let mut sorted = ys.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let threshold = sorted[top_n - 1];
    let top: Vec<usize> = (0..n).filter(|&i| ys[i] >= threshold).collect();
    let values: Vec<f64> = top.iter().map(|&i| ys[i]).collect();
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let std = (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / count)
        .sqrt()
        .max(1e-10);
    let noise_variance = (sigma / std).powi(2);
    let mut gp = ExactPosterior::new(kernel.clone(), &[noise_variance])?;
    let dim = domain.dim();
    let top_rows: Vec<f64> = top.iter().flat_map(|&i| xs[i].iter().copied()).collect();
    let top_points = Points::from_row_major(&top_rows, dim)?;
    let standardised: Vec<f64> = values.iter().map(|v| (v - mean) / std).collect();
    gp.observe_many(&top_points, &standardised)?;
    let beta =
        2.0 * (dim as f64 * count * count * std::f64::consts::PI.powi(2) / 6.0 / delta).ln() / 5.0;
    let root = beta.sqrt();
    let at_top = gp.evaluate(&top_points)?;
    let at_domain = gp.evaluate(domain)?;
    let upper = |batch: &kernel_bandits::posterior::PosteriorBatch| {
        batch
            .mean(0)
            .iter()
            .zip(batch.variance(0))
            .map(|(m, v)| m + root * v.max(0.0).sqrt())
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let ucb = upper(&at_top).max(upper(&at_domain));
    let (mut best, mut lcb) = (0, f64::NEG_INFINITY);
    for (j, (m, v)) in at_top.mean(0).iter().zip(at_top.variance(0)).enumerate() {
        let l = m - root * v.max(0.0).sqrt();
        if l > lcb {
            (best, lcb) = (j, l);
        }
    }
    Ok((std * (ucb - lcb), top[best]))
}

/// GP-UCB β/5's bounds over the arms: μ ± √β_t ρ with β_t = 2 ln(|D| t² π²/(6δ))/5 at round
/// t = observations + 1 (Srinivas et al. 2010, Thm 1 and §6).
fn gp_ucb_bounds<K: Kernel>(
    gp: &ExactPosterior<K>,
    arms: &Points<'_>,
    delta: f64,
) -> Result<Bounds, Error> {
    let t = (gp.len() + 1) as f64;
    let beta =
        2.0 * (arms.len() as f64 * t * t * std::f64::consts::PI.powi(2) / (6.0 * delta)).ln() / 5.0;
    let batch = gp.evaluate(arms)?;
    let mean = batch.mean(0).to_vec();
    let width: Vec<f64> = batch
        .variance(0)
        .iter()
        .map(|v| beta.sqrt() * v.max(0.0).sqrt())
        .collect();
    Ok(Bounds {
        lcb: mean.iter().zip(&width).map(|(m, w)| m - w).collect(),
        ucb: mean.iter().zip(&width).map(|(m, w)| m + w).collect(),
        mean,
    })
}

/// A method's model: a bound of the crate, or the GP of GP-UCB β/5.
enum Model<K> {
    Bound(Box<dyn ConfidenceBound>),
    GpUcb(Box<ExactPosterior<K>>),
}

/// One run.
fn run_one(
    kernel: KernelName,
    method: Method,
    rep: usize,
    args: &StoppingArgs,
) -> Result<RunJson, Error> {
    let l = args.lengthscale;
    match kernel.nu() {
        None if kernel == KernelName::Rbf => play(Rbf::new(l)?, kernel, method, rep, args),
        Some(nu) => play(Matern::new(nu, l)?, kernel, method, rep, args),
        None => Err(Error::Unsupported {
            what: format!("the {} kernel in `reproduce stopping`", kernel.tag()),
        }),
    }
}

/// The problem seed of repetition `rep` with `kernel`.
fn problem_seed(base: u64, kernel: KernelName, lengthscale: f64, rep: usize) -> u64 {
    derive_seed(base, &[kernel as u64, lengthscale.to_bits(), rep as u64])
}

fn play<K: Kernel + Clone + 'static>(
    kernel: K,
    name: KernelName,
    method: Method,
    rep: usize,
    args: &StoppingArgs,
) -> Result<RunJson, Error> {
    let start = Instant::now();
    let dim = 3;
    let seed = problem_seed(args.run.seed, name, args.lengthscale, rep);
    let config = SyntheticConfig {
        dim,
        arms: args.arms,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel.clone(), config, seed)?;
    let round = problem.round(0);
    let arms = round.arms();
    let values = &round.values;
    let best = round.best_value();
    let mut noise = ChaCha8Rng::seed_from_u64(derive_seed(seed, &[NOISE_LABEL]));
    let params = BoundParams::paper_defaults(&kernel, dim, args.budget);
    let checked_params = params.check()?;
    let (sigma, delta, lambda) = (
        checked_params.sigma(),
        checked_params.delta(),
        checked_params.lambda(),
    );
    let mut model = match method {
        Method::KUcb => Model::Bound(Box::new(KUcb::new(
            kernel.clone(),
            lambda,
            args.k_ucb_beta,
        )?)),
        Method::GpUcb5 => Model::GpUcb(Box::new(ExactPosterior::new(kernel.clone(), &[lambda])?)),
        _ => {
            let kind = method.kind().expect("a bound");
            let config = BoundConfig::new().params(params);
            Model::Bound(kind.build_boxed(kernel.clone(), &config)?)
        }
    };
    if let Model::Bound(bound) = &mut model {
        bound.fix_arms(&arms, None)?;
    }
    let mut certifier = Certifier::new(&arms)?;
    let mut epsilons = args.epsilons.clone();
    epsilons.sort_by(|a, b| b.total_cmp(a));
    let smallest = *epsilons.last().expect("checked");
    let mut reached: Vec<Reached> = epsilons
        .iter()
        .map(|&epsilon| Reached {
            epsilon,
            evaluations: None,
            gap: None,
            regret: None,
        })
        .collect();
    let (mut gaps, mut regrets) = (Vec::new(), Vec::new());
    let (mut xs, mut ys): (Vec<Vec<f64>>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut makarova = (method == Method::GpUcb5).then(|| MakarovaTrace {
        first_evaluations: MAKAROVA_MIN_TRIALS,
        bound: Vec::new(),
        regret: Vec::new(),
        reached: reached.clone(),
        violations: 0,
        smallest_margin: f64::INFINITY,
    });
    loop {
        let n = ys.len();
        let (bounds, certificate): (Bounds, RegretCertificate) = match &model {
            Model::Bound(bound) => {
                let checked = bound.evaluate_checked(&arms)?;
                let certificate = if method.valid() {
                    certifier.update_checked(&checked, n)?
                } else {
                    RegretCertificate::from_checked(&arms, &checked, n)?
                };
                (checked.bounds, certificate)
            }
            Model::GpUcb(gp) => {
                let bounds = gp_ucb_bounds(gp, &arms, delta)?;
                let checked = CheckedBounds::new(bounds, Diagnostics::unchecked(n));
                let certificate = RegretCertificate::from_checked(&arms, &checked, n)?;
                (checked.bounds, certificate)
            }
        };
        let regret = best - values[certificate.recommendation.index];
        gaps.push(certificate.gap);
        regrets.push(regret);
        for r in reached.iter_mut().filter(|r| r.evaluations.is_none()) {
            if certificate.gap <= r.epsilon {
                (r.evaluations, r.gap, r.regret) = (Some(n), Some(certificate.gap), Some(regret));
            }
        }
        if let Some(trace) = makarova.as_mut()
            && n >= MAKAROVA_MIN_TRIALS
        {
            let (bound, index) = makarova_bound(&kernel, &xs, &ys, &arms, sigma, MAKAROVA_DELTA)?;
            let regret = best - problem.value(&xs[index])?;
            trace.bound.push(bound);
            trace.regret.push(regret);
            for r in trace.reached.iter_mut().filter(|r| r.evaluations.is_none()) {
                if bound <= r.epsilon {
                    (r.evaluations, r.gap, r.regret) = (Some(n), Some(bound), Some(regret));
                }
            }
        }
        let makarova_done = makarova
            .as_ref()
            .is_none_or(|m| m.reached.iter().all(|r| r.evaluations.is_some()));
        if (certificate.gap <= smallest && makarova_done) || n >= args.budget {
            break;
        }
        let next = bounds.argmax_ucb()?;
        let x = arms.to_vec(next);
        let standard: f64 = StandardNormal.sample(&mut noise);
        let y = values[next] + sigma * standard;
        match &mut model {
            Model::Bound(bound) => bound.observe(&x, y)?,
            Model::GpUcb(gp) => gp.observe(&x, y)?,
        }
        xs.push(x);
        ys.push(y);
    }
    let (violations, smallest_margin) = validity(&gaps, &regrets);
    if let Some(trace) = makarova.as_mut() {
        (trace.violations, trace.smallest_margin) = validity(&trace.bound, &trace.regret);
    }
    Ok(RunJson {
        kernel: name.tag(),
        method,
        rep,
        seed,
        valid: method.valid(),
        gap: gaps,
        regret: regrets,
        reached,
        violations,
        smallest_margin,
        makarova,
        wall_time_s: start.elapsed().as_secs_f64(),
    })
}

/// (count of rounds with gap < regret, min of gap − regret).
fn validity(gaps: &[f64], regrets: &[f64]) -> (usize, f64) {
    let violations = gaps.iter().zip(regrets).filter(|(g, r)| g < r).count();
    let margin = gaps
        .iter()
        .zip(regrets)
        .map(|(g, r)| g - r)
        .fold(f64::INFINITY, f64::min);
    (violations, margin)
}

fn check_args(args: &StoppingArgs) -> Result<(), String> {
    let fail = |what: &str| Err(format!("invalid arguments: {what}"));
    if args.reps == 0 || args.budget == 0 {
        return fail("--reps and --budget must be at least 1");
    }
    if args.arms == 0 {
        return fail("--arms must be at least 1");
    }
    if args.kernels.is_empty() || args.methods.is_empty() || args.epsilons.is_empty() {
        return fail("--kernels, --methods and --epsilons need at least one value each");
    }
    if !(args.lengthscale.is_finite() && args.lengthscale > 0.0) {
        return fail(&format!(
            "--lengthscale {} is not finite and positive",
            args.lengthscale
        ));
    }
    if !(args.k_ucb_beta.is_finite() && args.k_ucb_beta > 0.0) {
        return fail(&format!(
            "--k-ucb-beta {} is not finite and positive",
            args.k_ucb_beta
        ));
    }
    if let Some(e) = args.epsilons.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
        return fail(&format!("ε = {e} is not finite and positive"));
    }
    if let Some(m) = first_repeat(&args.methods) {
        return fail(&format!("--methods lists {} twice", m.tag()));
    }
    if let Some(k) = first_repeat(&args.kernels) {
        return fail(&format!("--kernels lists {} twice", k.tag()));
    }
    if let Some(e) = first_repeat(&args.epsilons) {
        return fail(&format!("--epsilons lists {e} twice"));
    }
    if args.domains.is_empty() {
        return fail("--domains needs at least one value");
    }
    if let Some(d) = first_repeat(&args.domains) {
        return fail(&format!("--domains lists {d:?} twice"));
    }
    if args.domains.contains(&Domain::Box) {
        if args.box_budget == 0 || args.box_boxes == 0 {
            return fail("--box-budget and --box-boxes must be at least 1");
        }
        if !(args.box_ratio.is_finite() && args.box_ratio > 1.0) {
            return fail(&format!(
                "--box-ratio {} is not finite and above 1",
                args.box_ratio
            ));
        }
        if !(args.box_tolerance.is_finite() && args.box_tolerance >= 0.0) {
            return fail(&format!(
                "--box-tolerance {} is not finite and at least 0",
                args.box_tolerance
            ));
        }
    }
    KernelName::require_radial(&args.kernels, "reproduce stopping")?;
    args.run.check()
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &StoppingArgs) -> Result<(), String> {
    check_args(args)?;
    create_dir(&args.run.out)?;
    if args.domains.contains(&Domain::Arms) {
        run_arms(args)?;
    }
    if args.domains.contains(&Domain::Box) {
        boxed::run(args)?;
    }
    Ok(())
}

/// The finite half: writes `stopping.json`, `stopping.csv` and its plots.
fn run_arms(args: &StoppingArgs) -> Result<(), String> {
    let mut jobs: Vec<(KernelName, Method, usize)> = args
        .kernels
        .iter()
        .flat_map(|&k| {
            args.methods
                .iter()
                .flat_map(move |&m| (0..args.reps).map(move |r| (k, m, r)))
        })
        .collect();
    jobs.sort_by_key(|&(_, m, _)| std::cmp::Reverse(m.cost()));
    let (mut runs, threads, elapsed) =
        run_jobs(&jobs, args.run.threads, "stopping", |&(k, m, r)| {
            run_one(k, m, r, args)
                .map_err(|e| format!("{} with {} (repetition {r}): {e}", k.title(), m.tag()))
        })?;
    // Table order: kernels, methods as given, repetitions.
    let order = |run: &RunJson| {
        let k = args.kernels.iter().position(|k| k.tag() == run.kernel);
        let m = args.methods.iter().position(|&m| m == run.method);
        (k, m, run.rep)
    };
    runs.sort_by_key(order);
    let mut epsilons = args.epsilons.clone();
    epsilons.sort_by(|a, b| b.total_cmp(a));
    let json = StoppingJson {
        dims: 3,
        lengthscale: args.lengthscale,
        arms: args.arms,
        budget: args.budget,
        epsilons,
        reps: args.reps,
        seed: args.run.seed,
        sigma: 0.1,
        norm_bound: 10.0,
        delta: 0.01,
        k_ucb_beta: args.k_ucb_beta,
        makarova_delta: MAKAROVA_DELTA,
        runs,
    };
    print!("{}", markdown(args, &json));
    let json_path = args.run.out.join("stopping.json");
    write_json(&json_path, &json)?;
    let csv_path = args.run.out.join("stopping.csv");
    write_csv(&csv_path, &json)?;
    let mut plots = Vec::new();
    for &kernel in &args.kernels {
        for (what, pick) in [("gap", true), ("regret", false)] {
            let stem = args
                .run
                .out
                .join(format!("stopping_{what}_{}", kernel.tag()));
            plot(&stem, &json, kernel, args, pick)?;
            plots.push(stem);
        }
    }
    announce(
        "stopping",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path, &csv_path],
        &plots,
    );
    Ok(())
}

/// The rows of one (kernel, method): its runs.
fn runs_of(json: &StoppingJson, kernel: KernelName, method: Method) -> Vec<&RunJson> {
    json.runs
        .iter()
        .filter(|r| r.kernel == kernel.tag() && r.method == method)
        .collect()
}

/// "median [min–max] (k/n)" of the evaluations to certify, over the runs that did.
fn evaluations_cell(reached: &[&Reached], reps: usize) -> String {
    let mut done: Vec<usize> = reached.iter().filter_map(|r| r.evaluations).collect();
    if done.is_empty() {
        return format!("– (0/{reps})");
    }
    done.sort_unstable();
    let median = if done.len() % 2 == 1 {
        done[done.len() / 2] as f64
    } else {
        (done[done.len() / 2 - 1] + done[done.len() / 2]) as f64 / 2.0
    };
    let (lo, hi) = (done[0], done[done.len() - 1]);
    let count = if done.len() == reps {
        String::new()
    } else {
        format!(" ({}/{reps})", done.len())
    };
    format!("{median} [{lo}–{hi}]{count}")
}

/// Largest true regret of the recommendation when ε was certified, and how many exceeded ε.
fn regret_cell(reached: &[&Reached]) -> String {
    let regrets: Vec<f64> = reached.iter().filter_map(|r| r.regret).collect();
    if regrets.is_empty() {
        return "–".into();
    }
    let worst = regrets.iter().copied().fold(0.0, f64::max);
    let wrong = reached
        .iter()
        .filter(|r| r.regret.is_some_and(|g| g > r.epsilon))
        .count();
    format!("{worst:.3} ({wrong} > ε)")
}

fn markdown(args: &StoppingArgs, json: &StoppingJson) -> String {
    let mut out = format!(
        "Evaluations until the certified gap is ≤ ε: median [min–max] over {} repetitions \
         ((k/n): certified in k of n within the budget of {}), d = 3, ℓ = {}, {} fixed arms, \
         σ = 0.1, B = 10, δ = 0.01 (seed {})\n",
        args.reps, args.budget, args.lengthscale, args.arms, args.run.seed
    );
    let header = |out: &mut String, first: &str| {
        out.push_str(&format!("\n| {first} |"));
        for e in &json.epsilons {
            out.push_str(&format!(" ε = {e} |"));
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(json.epsilons.len()));
        out.push('\n');
    };
    for &kernel in &args.kernels {
        out.push_str(&format!(
            "\n### {} ℓ = {}\n",
            kernel.title(),
            args.lengthscale
        ));
        header(&mut out, "method");
        let mut rows: Vec<(String, Vec<Vec<&Reached>>)> = Vec::new();
        for &method in &args.methods {
            let runs = runs_of(json, kernel, method);
            let per_eps = (0..json.epsilons.len())
                .map(|i| runs.iter().map(|r| &r.reached[i]).collect())
                .collect();
            rows.push((method.title().to_owned(), per_eps));
            if method == Method::GpUcb5 {
                let per_eps = (0..json.epsilons.len())
                    .map(|i| {
                        runs.iter()
                            .filter_map(|r| r.makarova.as_ref().map(|m| &m.reached[i]))
                            .collect()
                    })
                    .collect();
                rows.push((
                    "Makarova et al. 2022 / Optuna (heuristic)".to_owned(),
                    per_eps,
                ));
            }
        }
        for (title, per_eps) in &rows {
            out.push_str(&format!("| {title} |"));
            for reached in per_eps {
                out.push_str(&format!(" {} |", evaluations_cell(reached, args.reps)));
            }
            out.push('\n');
        }
        out.push_str(
            "\nTrue regret f(x*) − f(x̂) of the recommendation when ε was first certified: the \
             largest over the repetitions (how many exceeded ε)\n",
        );
        header(&mut out, "method");
        for (title, per_eps) in &rows {
            out.push_str(&format!("| {title} |"));
            for reached in per_eps {
                out.push_str(&format!(" {} |", regret_cell(reached)));
            }
            out.push('\n');
        }
        out.push_str(
            "\nValidity over every round of every repetition: rounds whose certificate is below \
             the true regret of its recommendation, and the smallest margin (certificate − \
             regret)\n\n| method | rounds | below the regret | smallest margin |\n|---|---:|---:|---:|\n",
        );
        for &method in &args.methods {
            let runs = runs_of(json, kernel, method);
            let rounds: usize = runs.iter().map(|r| r.gap.len()).sum();
            let below: usize = runs.iter().map(|r| r.violations).sum();
            let margin = runs
                .iter()
                .map(|r| r.smallest_margin)
                .fold(f64::INFINITY, f64::min);
            out.push_str(&format!(
                "| {} | {rounds} | {below} | {margin:.4} |\n",
                method.title()
            ));
            if method == Method::GpUcb5 {
                let traces: Vec<&MakarovaTrace> =
                    runs.iter().filter_map(|r| r.makarova.as_ref()).collect();
                let rounds: usize = traces.iter().map(|m| m.bound.len()).sum();
                let below: usize = traces.iter().map(|m| m.violations).sum();
                let margin = traces
                    .iter()
                    .map(|m| m.smallest_margin)
                    .fold(f64::INFINITY, f64::min);
                out.push_str(&format!(
                    "| Makarova et al. 2022 / Optuna (heuristic) | {rounds} | {below} | {margin:.4} |\n"
                ));
            }
        }
    }
    out
}

/// The first columns of both stopping CSVs (`stopping.csv`, `stopping_box.csv`).
const CSV_HEAD: [&str; 11] = [
    "kernel",
    "method",
    "valid",
    "rep",
    "seed",
    "epsilon",
    "evaluations",
    "gap",
    "regret",
    "violations",
    "smallest_margin",
];

/// What a stopping CSV reports of one run: its method's reach and validity, and the
/// Makarova bound's (as method `makarova`) when it was computed on the run's data.
struct CsvRun<'a> {
    kernel: &'a str,
    method: &'a str,
    valid: bool,
    rep: usize,
    seed: u64,
    reached: &'a [Reached],
    violations: usize,
    smallest_margin: f64,
    makarova: Option<&'a MakarovaTrace>,
}

impl CsvRun<'_> {
    /// One row per ε for the method, then per ε for the Makarova bound: the [`CSV_HEAD`]
    /// columns followed by `tail`.
    fn records(&self, tail: &[String]) -> Vec<Vec<String>> {
        let opt = |v: Option<String>| v.unwrap_or_default();
        let mut rows = vec![(
            self.method,
            self.valid,
            self.reached,
            self.violations,
            self.smallest_margin,
        )];
        if let Some(m) = self.makarova {
            rows.push((
                "makarova",
                false,
                &m.reached,
                m.violations,
                m.smallest_margin,
            ));
        }
        let mut records = Vec::new();
        for (method, valid, reached, violations, margin) in rows {
            for r in reached {
                let mut record = vec![
                    self.kernel.to_owned(),
                    method.to_owned(),
                    valid.to_string(),
                    self.rep.to_string(),
                    self.seed.to_string(),
                    r.epsilon.to_string(),
                    opt(r.evaluations.map(|e| e.to_string())),
                    opt(r.gap.map(|g| g.to_string())),
                    opt(r.regret.map(|g| g.to_string())),
                    violations.to_string(),
                    margin.to_string(),
                ];
                record.extend_from_slice(tail);
                records.push(record);
            }
        }
        records
    }
}

/// Writes a stopping CSV: the [`CSV_HEAD`] columns and `tail_head`, then every record.
fn write_records(
    path: &Path,
    tail_head: &[&str],
    records: impl Iterator<Item = Vec<String>>,
) -> Result<(), String> {
    let fail = |e: csv::Error| format!("cannot write {}: {e}", path.display());
    let mut writer = csv::Writer::from_path(path).map_err(fail)?;
    writer
        .write_record(CSV_HEAD.iter().chain(tail_head))
        .map_err(fail)?;
    for record in records {
        writer.write_record(&record).map_err(fail)?;
    }
    writer
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `stopping.csv`: one row per (kernel, method, repetition, ε), the Makarova bound as method
/// `makarova`.
fn write_csv(path: &Path, json: &StoppingJson) -> Result<(), String> {
    let records = json.runs.iter().flat_map(|run| {
        CsvRun {
            kernel: run.kernel,
            method: run.method_tag(),
            valid: run.valid,
            rep: run.rep,
            seed: run.seed,
            reached: &run.reached,
            violations: run.violations,
            smallest_margin: run.smallest_margin,
            makarova: run.makarova.as_ref(),
        }
        .records(&[format!("{:.4}", run.wall_time_s)])
    });
    write_records(path, &["wall_time_s"], records)
}

impl RunJson {
    fn method_tag(&self) -> &'static str {
        self.method.tag()
    }
}

/// The mean over the repetitions of the certified gap (`gap`) or of the true regret of the
/// recommendation against evaluations, per method, on log axes (a run that stopped early
/// keeps its last value).
fn plot(
    stem: &Path,
    json: &StoppingJson,
    kernel: KernelName,
    args: &StoppingArgs,
    gap: bool,
) -> Result<(), String> {
    let mut series = Vec::new();
    let mean_curve = |curves: Vec<&[f64]>, offset: usize| -> Vec<(f64, f64)> {
        let len = curves.iter().map(|c| c.len()).max().unwrap_or(0);
        (0..len)
            .map(|i| {
                let sum: f64 = curves.iter().map(|c| c[i.min(c.len() - 1)]).sum();
                ((i + offset).max(1) as f64, sum / curves.len() as f64)
            })
            .collect()
    };
    for &method in &args.methods {
        let runs = runs_of(json, kernel, method);
        let curves: Vec<&[f64]> = runs
            .iter()
            .map(|r| if gap { &r.gap[..] } else { &r.regret[..] })
            .collect();
        series.push(Series {
            label: method.title().to_owned(),
            points: mean_curve(curves, 0),
        });
        if method == Method::GpUcb5 {
            let curves: Vec<&[f64]> = runs
                .iter()
                .filter_map(|r| r.makarova.as_ref())
                .filter(|m| !m.bound.is_empty())
                .map(|m| if gap { &m.bound[..] } else { &m.regret[..] })
                .collect();
            if !curves.is_empty() {
                series.push(Series {
                    label: "Makarova et al. / Optuna (heuristic)".to_owned(),
                    points: mean_curve(curves, MAKAROVA_MIN_TRIALS),
                });
            }
        }
    }
    let what = if gap {
        "certified gap max UCB − LCB(x̂)"
    } else {
        "true regret f(x*) − f(x̂)"
    };
    let title = format!(
        "{} ℓ = {}, d = 3, {} arms: {what}, mean over {} repetitions",
        kernel.title(),
        args.lengthscale,
        args.arms,
        args.reps
    );
    loglog_plot(stem, &title, ("evaluations", what), &series)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{DMatrix, DVector};

    /// The Makarova et al. / Optuna bound against a direct computation with nalgebra (explicit
    /// inverse of the Gram matrix plus noise, the formulas of `optuna._gp.gp.GPRegressor
    /// .posterior`) on 25 observations: the top n' = 20 of them by value enter the GP.
    #[test]
    fn makarova_bound_matches_a_direct_gp_computation() {
        let kernel = Rbf::new(0.4).unwrap();
        let xs: Vec<Vec<f64>> = (0..25)
            .map(|i| {
                let a = i as f64;
                vec![(a * 0.37).fract(), (a * 0.61 + 0.1).fract()]
            })
            .collect();
        let f = |x: &[f64]| (3.0 * x[0]).sin() + x[1] * x[1];
        let ys: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| f(x) + 0.05 * ((i * 7 % 5) as f64 - 2.0))
            .collect();
        let domain_rows: Vec<f64> = (0..30)
            .flat_map(|i| {
                let a = i as f64;
                [(a * 0.113 + 0.05).fract(), (a * 0.271 + 0.3).fract()]
            })
            .collect();
        let domain = Points::from_row_major(&domain_rows, 2).unwrap();
        let sigma = 0.05;
        let (bound, index) = makarova_bound(&kernel, &xs, &ys, &domain, sigma, 0.1).unwrap();

        // Independent: the 20 largest values (no ties here).
        let mut order: Vec<usize> = (0..25).collect();
        order.sort_by(|&a, &b| ys[b].total_cmp(&ys[a]));
        let top: Vec<usize> = order[..20].to_vec();
        let vals: Vec<f64> = top.iter().map(|&i| ys[i]).collect();
        let mean = vals.iter().sum::<f64>() / 20.0;
        let std = (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 20.0).sqrt();
        let y = DVector::from_iterator(20, vals.iter().map(|v| (v - mean) / std));
        let k = |a: &[f64], b: &[f64]| {
            let r2: f64 = a.iter().zip(b).map(|(p, q)| (p - q).powi(2)).sum();
            (-r2 / (2.0 * 0.4 * 0.4)).exp()
        };
        let noise = (sigma / std).powi(2);
        let gram = DMatrix::from_fn(20, 20, |i, j| {
            k(&xs[top[i]], &xs[top[j]]) + if i == j { noise } else { 0.0 }
        });
        let inv = gram.try_inverse().unwrap();
        let beta = 2.0 * (2.0 * 400.0 * std::f64::consts::PI.powi(2) / 6.0 / 0.1).ln() / 5.0;
        let post = |x: &[f64]| {
            let kx = DVector::from_iterator(20, top.iter().map(|&i| k(x, &xs[i])));
            let m = (kx.transpose() * &inv * &y)[(0, 0)];
            let v = 1.0 - (kx.transpose() * &inv * &kx)[(0, 0)];
            (m, v.max(0.0).sqrt())
        };
        let mut ucb = f64::NEG_INFINITY;
        let mut points: Vec<Vec<f64>> = top.iter().map(|&i| xs[i].clone()).collect();
        points.extend(domain_rows.chunks(2).map(|c| c.to_vec()));
        for x in &points {
            let (m, s) = post(x);
            ucb = ucb.max(m + beta.sqrt() * s);
        }
        let (mut lcb, mut best) = (f64::NEG_INFINITY, 0);
        for &i in &top {
            let (m, s) = post(&xs[i]);
            if m - beta.sqrt() * s > lcb {
                (lcb, best) = (m - beta.sqrt() * s, i);
            }
        }
        let expected = std * (ucb - lcb);
        assert!(
            (bound - expected).abs() <= 1e-9 * expected.abs(),
            "{bound} vs {expected}"
        );
        assert_eq!(index, best);
    }

    /// Fewer than 20 observations: every one of them is a top trial (Optuna's
    /// `np.clip(int(n * 0.5), 20, n)` is n).
    #[test]
    fn makarova_bound_uses_every_trial_below_twenty() {
        let kernel = Rbf::new(0.3).unwrap();
        let xs = vec![vec![0.1], vec![0.5], vec![0.9]];
        let ys = [0.2, 1.0, -0.4];
        let domain = Points::from_row_major(&[0.0, 0.3, 0.7, 1.0], 1).unwrap();
        let (_, index) = makarova_bound(&kernel, &xs, &ys, &domain, 0.1, 0.1).unwrap();
        assert_eq!(index, 1);
    }
}
