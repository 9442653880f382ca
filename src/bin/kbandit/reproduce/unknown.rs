//! `kbandit reproduce unknown`: the setting of Flynn & Reeb 2024 App. F.3 (Matérn 5/2, ℓ = 0.5,
//! d = 3, T = 1000, true σ = 0.1, ‖f‖_H = 10) when σ, B and ℓ are not given.
//!
//! Scenarios, each played by DMM-UCB and CMM-UCB on the same functions, arm sets and noise
//! (the problem seed of repetition r is the one `reproduce table1` and `reproduce loose` use):
//! - **true**: the bounds get the true σ and B;
//! - **loose**: they get (σ, B) = (0.2, 20), the paper's loose pair;
//! - **doubling B₀**: the true σ and kernel, B adapted by refutation from a guess B₀
//!   ([`AdaptiveNorm`]: doubled whenever the confidence set is empty, the one δ at every level);
//! - **fitted, doubling B₀**: the first `--warmup` rounds play a uniformly random arm (their
//!   regret counts); ℓ and σ are then fitted by marginal likelihood on those observations
//!   ([`fit_hyperparameters`], Matérn 5/2 family known, output scale 1), and a bound with the
//!   fitted kernel and σ starts *empty* (the warm-up data are not reused inside it) and adapts B
//!   from B₀.
//!
//! Coverage is measured as `tests/integration/coverage.rs` measures it: after every observation the bound is
//! evaluated on the next round's arms (100 fresh points) and compared with the true f there; a
//! repetition violates if f < LCB or f > UCB at any round and any of those points. For the
//! adaptive scenarios the count is split: violations at any round, and violations after the
//! last doubling (when the final B is ≥ ‖f‖_H these are the rounds whose validity the doubling
//! argument speaks for: on the event of Flynn & Reeb 2024 Eq. 8 the level never passes the
//! first with B_k ≥ ‖f‖_H, so the last doubling reached it). No violation is hidden: a
//! violation before the last doubling is reported as such.

use std::path::Path;

use clap::Args;
use kernel_bandits::bound::{AdaptiveNorm, BoundConfig, BoundKind, NormDoubling};
use kernel_bandits::hyper::{FitOptions, KernelFamily, fit_hyperparameters};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use super::table1::Setting;
use super::{
    RepetitionRows, RunOptions, announce, create_dir, derive_seed, mean_std, run_jobs, write_json,
    write_repetitions_csv,
};
use crate::kernels::KernelName;
use crate::plot::{Curve, regret_plot};

/// Arguments of `kbandit reproduce unknown`.
#[derive(Debug, Args)]
pub struct UnknownArgs {
    /// Length-scale ℓ of the function (Matérn 5/2).
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Input dimension d.
    #[arg(long, default_value_t = 3)]
    dims: usize,
    /// True noise standard deviation σ.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    true_sigma: f64,
    /// True RKHS norm ‖f‖_H.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    true_norm: f64,
    /// The loose scenario's assumed σ.
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    loose_sigma: f64,
    /// The loose scenario's assumed B.
    #[arg(long, default_value_t = 20.0, allow_negative_numbers = true)]
    loose_norm: f64,
    /// Initial guesses B₀ of the doubling scenarios (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [0.5, 2.0], allow_negative_numbers = true)]
    initial_norms: Vec<f64>,
    /// Warm-up rounds (uniformly random arms) of the fitted scenarios.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// δ of the bounds (the same at every doubling level in the adaptive scenarios).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    delta: f64,
    /// Bounds (comma-separated): dmm, cmm.
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("dmm"), String::from("cmm")])]
    methods: Vec<String>,
    /// Repetitions (problems).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Rounds T per run (the warm-up included).
    #[arg(long, default_value_t = 1000)]
    horizon: usize,
    #[command(flatten)]
    run: RunOptions,
}

/// What the bound is told.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scenario {
    /// Fixed σ and B.
    Fixed {
        label: &'static str,
        sigma: f64,
        norm: f64,
    },
    /// The true σ and kernel, B doubled from `initial`.
    Doubling { initial: f64 },
    /// ℓ and σ fitted on a warm-up, B doubled from `initial`.
    Fitted { initial: f64 },
}

impl Scenario {
    fn title(self) -> String {
        match self {
            Self::Fixed { label, sigma, norm } => format!("{label} (σ = {sigma}, B = {norm})"),
            Self::Doubling { initial } => format!("doubling from B₀ = {initial}"),
            Self::Fitted { initial } => format!("fitted ℓ, σ; doubling from B₀ = {initial}"),
        }
    }

    fn tag(self) -> String {
        match self {
            Self::Fixed { label, .. } => label.to_owned(),
            Self::Doubling { initial } => format!("doubling-{initial}"),
            Self::Fitted { initial } => format!("fitted-doubling-{initial}"),
        }
    }
}

/// One run's outcome.
#[derive(Debug, Clone, Serialize)]
struct RunOutcome {
    cumulative: Vec<f64>,
    wall_time_s: f64,
    /// (round, old B, new B) of every doubling; the round counts every observation the bound
    /// absorbed (so it excludes the warm-up).
    doublings: Vec<(usize, f64, f64)>,
    final_norm: f64,
    /// Fitted (ℓ, σ, log marginal likelihood), for the fitted scenarios.
    fitted: Option<(f64, f64, f64)>,
    /// Rounds (0-based, of the whole run) at which f left [LCB, UCB] at some arm.
    violation_rounds: Vec<usize>,
    /// The first round of the run whose bounds come after the last doubling.
    settled_from: usize,
}

#[derive(Debug, Serialize)]
struct CellJson {
    method: String,
    scenario: String,
    final_regret: Vec<f64>,
    curve_mean: Vec<f64>,
    curve_std: Vec<f64>,
    seeds: Vec<u64>,
    wall_time_s: Vec<f64>,
    final_norm: Vec<f64>,
    doublings: Vec<Vec<(usize, f64, f64)>>,
    fitted_lengthscale: Vec<f64>,
    fitted_sigma: Vec<f64>,
    /// Repetitions with f outside [LCB, UCB] at any checked round.
    violating_reps: usize,
    /// Repetitions with a violation after their last doubling.
    violating_reps_after_last_doubling: usize,
    /// For the doubling scenarios with the true kernel: repetitions whose final B is at least
    /// ‖f‖_H (the only ones whose later bounds the doubling argument covers), and how many of
    /// them violate after their last doubling.
    settled_valid_reps: Option<(usize, usize)>,
    /// Per repetition, the rounds with a violation.
    violation_rounds: Vec<Vec<usize>>,
}

#[derive(Debug, Serialize)]
struct UnknownJson {
    kernel: &'static str,
    lengthscale: f64,
    dims: usize,
    horizon: usize,
    reps: usize,
    seed: u64,
    true_sigma: f64,
    true_norm: f64,
    delta: f64,
    warmup: usize,
    arms_per_round: usize,
    results: Vec<CellJson>,
}

fn parse_methods(names: &[String]) -> Result<Vec<BoundKind>, String> {
    let mut kinds = Vec::new();
    for name in names {
        let kind: BoundKind = name
            .parse()
            .map_err(|e| format!("invalid arguments: --methods: {e}"))?;
        if !matches!(kind, BoundKind::Dmm | BoundKind::Cmm) {
            return Err(format!(
                "invalid arguments: --methods {name}: only dmm and cmm can detect an empty confidence set"
            ));
        }
        if kinds.contains(&kind) {
            return Err(format!("invalid arguments: --methods lists {name} twice"));
        }
        kinds.push(kind);
    }
    if kinds.is_empty() {
        return Err("invalid arguments: --methods needs at least one bound".into());
    }
    Ok(kinds)
}

fn check_args(args: &UnknownArgs) -> Result<Vec<BoundKind>, String> {
    let fail = |what: String| Err(format!("invalid arguments: {what}"));
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if args.dims == 0 || args.reps == 0 || args.horizon == 0 {
        return fail("--dims, --reps and --horizon must be at least 1".into());
    }
    for (name, value) in [
        ("--lengthscale", args.lengthscale),
        ("--true-norm", args.true_norm),
        ("--loose-sigma", args.loose_sigma),
        ("--loose-norm", args.loose_norm),
    ] {
        if !positive(value) {
            return fail(format!("{name} {value} is not finite and positive"));
        }
    }
    if !positive(args.true_sigma) {
        // The fitted scenarios need noise to fit, and σ = 0 is no sub-Gaussian scale.
        return fail(format!(
            "--true-sigma {} is not finite and positive",
            args.true_sigma
        ));
    }
    if let Some(b) = args.initial_norms.iter().find(|b| !positive(**b)) {
        return fail(format!(
            "--initial-norms value {b} is not finite and positive"
        ));
    }
    if let Some(b) = super::first_repeat(&args.initial_norms) {
        return fail(format!("--initial-norms lists {b} twice"));
    }
    if !(args.delta > 0.0 && args.delta <= 1.0) {
        return fail(format!("--delta {} is not in (0, 1]", args.delta));
    }
    if args.warmup < 2 || args.warmup >= args.horizon {
        return fail(format!(
            "--warmup {} must be at least 2 and below --horizon {}",
            args.warmup, args.horizon
        ));
    }
    args.run.check()?;
    parse_methods(&args.methods)
}

const WARMUP_LABEL: u64 = 0x5741_524d; // "WARM"

/// The data the fitted scenario's warm-up produced, and its regret.
struct Warmup {
    points: Vec<Vec<f64>>,
    targets: Vec<f64>,
    regret: Vec<f64>,
}

/// Plays `rounds` uniformly random arms.
fn warmup(problem: &SyntheticProblem<Matern>, seed: u64, rounds: usize) -> Warmup {
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, &[WARMUP_LABEL]));
    let mut out = Warmup {
        points: Vec::with_capacity(rounds),
        targets: Vec::with_capacity(rounds),
        regret: Vec::with_capacity(rounds),
    };
    for t in 0..rounds {
        let round = problem.round(t);
        let i = rng.random_range(0..round.values.len());
        out.points.push(round.arm(i).to_vec());
        out.targets.push(round.values[i] + round.noise);
        out.regret.push(round.best_value() - round.values[i]);
    }
    out
}

/// Plays the bound's UCB from round `first` to the horizon; each round the bound is evaluated
/// on the round's arms (the arm played is the largest UCB, lowest index among ties) and f is
/// compared with [LCB, UCB] there. Appends the regret and returns the rounds with a violation.
fn play(
    bound: &mut dyn ConfidenceBound,
    problem: &SyntheticProblem<Matern>,
    first: usize,
    horizon: usize,
    regret: &mut Vec<f64>,
) -> Result<Vec<usize>, Error> {
    let mut violations = Vec::new();
    for t in first..horizon {
        let round = problem.round(t);
        let bounds = bound.evaluate(&round.arms())?;
        // Round `first` has an empty bound: its prior width covers |f| ≤ B√k(x,x) by
        // construction, as tests/integration/coverage.rs notes, and it is checked all the same.
        let violated = round
            .values
            .iter()
            .zip(bounds.lcb.iter().zip(&bounds.ucb))
            .any(|(f, (l, u))| f < l || f > u);
        if violated {
            violations.push(t);
        }
        let i = bounds.argmax_ucb()?;
        bound.observe(round.arm(i), round.values[i] + round.noise)?;
        regret.push(round.best_value() - round.values[i]);
    }
    Ok(violations)
}

/// One run of `kind` under `scenario` on repetition `rep`.
fn run_one(
    args: &UnknownArgs,
    setting: Setting,
    kind: BoundKind,
    scenario: Scenario,
    rep: usize,
) -> Result<RunOutcome, Error> {
    let seed = setting.seed(args.run.seed, rep);
    let start = std::time::Instant::now();
    let kernel = Matern::new(2.5, args.lengthscale)?;
    let config = SyntheticConfig {
        dim: args.dims,
        norm_bound: args.true_norm,
        noise_sd: args.true_sigma,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, seed)?;
    // c depends on ν, d and T only (Flynn & Reeb 2024 §7), so every scenario shares it.
    let params = BoundParams::paper_defaults(&kernel, args.dims, args.horizon).delta(args.delta);
    let mut regret = Vec::with_capacity(args.horizon);
    let outcome = |regret: Vec<f64>,
                   violation_rounds,
                   doublings: Vec<(usize, f64, f64)>,
                   final_norm,
                   fitted,
                   first: usize| {
        let settled_from = first + doublings.last().map_or(0, |d| d.0);
        RunOutcome {
            cumulative: regret
                .iter()
                .scan(0.0, |acc, r| {
                    *acc += r;
                    Some(*acc)
                })
                .collect(),
            wall_time_s: start.elapsed().as_secs_f64(),
            doublings,
            final_norm,
            fitted,
            violation_rounds,
            settled_from,
        }
    };
    Ok(match scenario {
        Scenario::Fixed { sigma, norm, .. } => {
            let config = BoundConfig::new().params(params.sigma(sigma).norm_bound(norm));
            let mut bound = kind.build(kernel, &config)?;
            let violations = play(&mut bound, &problem, 0, args.horizon, &mut regret)?;
            outcome(regret, violations, Vec::new(), norm, None, 0)
        }
        Scenario::Doubling { initial } => {
            let config =
                BoundConfig::new().params(params.sigma(args.true_sigma).norm_bound(initial));
            let mut bound = AdaptiveNorm::new(kind.build(kernel, &config)?)?;
            let violations = play(&mut bound, &problem, 0, args.horizon, &mut regret)?;
            let doublings = doubling_log(bound.doublings());
            outcome(regret, violations, doublings, bound.norm_bound(), None, 0)
        }
        Scenario::Fitted { initial } => {
            let warm = warmup(&problem, seed, args.warmup);
            regret.extend(&warm.regret);
            let options = FitOptions::new()
                .family(KernelFamily::Matern { nu: 2.5 })
                .seed(seed);
            let fit = fit_hyperparameters(&options, &warm.points, &warm.targets)?;
            // The bound starts empty: the warm-up data chose ℓ and σ and are not reused in it.
            let config = BoundConfig::new().params(params.norm_bound(initial));
            let mut bound = AdaptiveNorm::new(fit.bound(kind, &config)?)?;
            let violations = play(&mut bound, &problem, args.warmup, args.horizon, &mut regret)?;
            let doublings = doubling_log(bound.doublings());
            let fitted = Some((fit.lengthscales()[0], fit.noise_sd(), fit.log_likelihood()));
            outcome(
                regret,
                violations,
                doublings,
                bound.norm_bound(),
                fitted,
                args.warmup,
            )
        }
    })
}

/// (round, old B, new B) of each doubling.
fn doubling_log(doublings: &[NormDoubling]) -> Vec<(usize, f64, f64)> {
    doublings
        .iter()
        .map(|d| (d.observations, d.old_norm, d.new_norm))
        .collect()
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &UnknownArgs) -> Result<(), String> {
    let kinds = check_args(args)?;
    create_dir(&args.run.out)?;
    let setting = Setting {
        kernel: KernelName::Matern52,
        lengthscale: args.lengthscale,
    };
    let mut scenarios = vec![
        Scenario::Fixed {
            label: "true",
            sigma: args.true_sigma,
            norm: args.true_norm,
        },
        Scenario::Fixed {
            label: "loose",
            sigma: args.loose_sigma,
            norm: args.loose_norm,
        },
    ];
    scenarios.extend(
        args.initial_norms
            .iter()
            .map(|&initial| Scenario::Doubling { initial }),
    );
    scenarios.extend(
        args.initial_norms
            .iter()
            .map(|&initial| Scenario::Fitted { initial }),
    );

    let mut jobs: Vec<(usize, usize, usize)> = (0..kinds.len())
        .flat_map(|k| {
            (0..scenarios.len()).flat_map(move |s| (0..args.reps).map(move |r| (k, s, r)))
        })
        .collect();
    jobs.sort_by_key(|&(k, _, _)| std::cmp::Reverse(kinds[k] == BoundKind::Cmm));
    let (runs, threads, elapsed) = run_jobs(&jobs, args.run.threads, "unknown", |&(k, s, r)| {
        run_one(args, setting, kinds[k], scenarios[s], r).map_err(|e| {
            format!(
                "{} under '{}' (repetition {r}): {e}",
                kinds[k],
                scenarios[s].title()
            )
        })
    })?;

    let mut cells = Vec::new();
    for (k, kind) in kinds.iter().enumerate() {
        for (s, scenario) in scenarios.iter().enumerate() {
            let reps: Vec<&RunOutcome> = jobs
                .iter()
                .zip(&runs)
                .filter(|((jk, js, _), _)| *jk == k && *js == s)
                .map(|(_, run)| run)
                .collect();
            let curve: Vec<(f64, f64)> = (0..args.horizon)
                .map(|t| mean_std(reps.iter().map(|r| r.cumulative[t])))
                .collect();
            cells.push(CellJson {
                method: kind.name().to_owned(),
                scenario: scenario.tag(),
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
                final_norm: reps.iter().map(|r| r.final_norm).collect(),
                doublings: reps.iter().map(|r| r.doublings.clone()).collect(),
                fitted_lengthscale: reps.iter().filter_map(|r| r.fitted.map(|f| f.0)).collect(),
                fitted_sigma: reps.iter().filter_map(|r| r.fitted.map(|f| f.1)).collect(),
                violating_reps: reps
                    .iter()
                    .filter(|r| !r.violation_rounds.is_empty())
                    .count(),
                violating_reps_after_last_doubling: reps
                    .iter()
                    .filter(|r| r.violation_rounds.iter().any(|&t| t >= r.settled_from))
                    .count(),
                violation_rounds: reps.iter().map(|r| r.violation_rounds.clone()).collect(),
                settled_valid_reps: matches!(scenario, Scenario::Doubling { .. }).then(|| {
                    let covered: Vec<&&RunOutcome> = reps
                        .iter()
                        .filter(|r| r.final_norm >= args.true_norm)
                        .collect();
                    let violating = covered
                        .iter()
                        .filter(|r| r.violation_rounds.iter().any(|&t| t >= r.settled_from))
                        .count();
                    (covered.len(), violating)
                }),
            });
        }
    }

    print!("{}", markdown(args, &kinds, &scenarios, &cells));
    let json = UnknownJson {
        kernel: KernelName::Matern52.tag(),
        lengthscale: args.lengthscale,
        dims: args.dims,
        horizon: args.horizon,
        reps: args.reps,
        seed: args.run.seed,
        true_sigma: args.true_sigma,
        true_norm: args.true_norm,
        delta: args.delta,
        warmup: args.warmup,
        arms_per_round: SyntheticConfig::default().arms,
        results: cells,
    };
    let json_path = args.run.out.join("unknown.json");
    write_json(&json_path, &json)?;
    let csv_path = args.run.out.join("unknown.csv");
    write_csv(&csv_path, &json)?;

    // One plot per bound: six scenarios each, one colour apiece.
    let mut stems = Vec::new();
    for kind in &kinds {
        let cells: Vec<&CellJson> = json
            .results
            .iter()
            .filter(|c| c.method == kind.name())
            .collect();
        let labels: Vec<String> = cells.iter().map(|c| c.scenario.clone()).collect();
        let curves: Vec<Curve<'_>> = cells
            .iter()
            .zip(&labels)
            .map(|(c, label)| Curve {
                label,
                mean: &c.curve_mean,
                std: &c.curve_std,
            })
            .collect();
        let stem = args.run.out.join(format!("unknown_{}", kind.name()));
        let title = format!(
            "{}, Matérn 5/2 ℓ = {}, d = {}, σ = {}, ‖f‖ = {}: unknown σ, B, ℓ ({} reps)",
            kind.name().to_uppercase(),
            args.lengthscale,
            args.dims,
            args.true_sigma,
            args.true_norm,
            args.reps
        );
        regret_plot(&stem, &title, &curves)?;
        stems.push(stem);
    }
    announce(
        "unknown",
        jobs.len(),
        elapsed,
        threads,
        &[&json_path, &csv_path],
        &stems,
    );
    Ok(())
}

/// The regret and coverage table: one row per (bound, scenario).
fn markdown(
    args: &UnknownArgs,
    kinds: &[BoundKind],
    scenarios: &[Scenario],
    cells: &[CellJson],
) -> String {
    let mut out = format!(
        "Unknown σ, B and ℓ: Matérn 5/2 ℓ = {}, d = {}, true σ = {}, ‖f‖ = {}, T = {}, δ = {}, \
         {} repetitions (seed {}); regret mean ± std, final B median [min, max], fitted values \
         median [min, max]; a repetition violates if f leaves [LCB, UCB] at some checked round \
         (any round; only the rounds after the last doubling; and those among the repetitions \
         whose final B ≥ ‖f‖, the case the doubling argument covers; with a fitted kernel ‖f‖ \
         in its RKHS is not known)\n\n",
        args.lengthscale,
        args.dims,
        args.true_sigma,
        args.true_norm,
        args.horizon,
        args.delta,
        args.reps,
        args.run.seed
    );
    out.push_str(
        "| bound | scenario | regret | doublings | final B | fitted ℓ | fitted σ | violating reps: any round | after the last doubling | of those with final B ≥ ‖f‖ |\n",
    );
    out.push_str("|---|---|---:|---:|---|---|---|---:|---:|---:|\n");
    let spread = |values: &[f64]| -> String {
        if values.is_empty() {
            return "—".into();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        format!("{:.3} [{:.3}, {:.3}]", v[v.len() / 2], v[0], v[v.len() - 1])
    };
    for (k, kind) in kinds.iter().enumerate() {
        for (s, scenario) in scenarios.iter().enumerate() {
            let cell = &cells[k * scenarios.len() + s];
            let (mean, std) = mean_std(cell.final_regret.iter().copied());
            let doublings: Vec<f64> = cell.doublings.iter().map(|d| d.len() as f64).collect();
            let adaptive = !matches!(scenario, Scenario::Fixed { .. });
            out.push_str(&format!(
                "| {} | {} | {mean:.1} ± {std:.1} | {} | {} | {} | {} | {}/{} | {} | {} |\n",
                kind.name().to_uppercase(),
                scenario.title(),
                if adaptive {
                    format!("{:.1}", mean_std(doublings.iter().copied()).0)
                } else {
                    "—".into()
                },
                if adaptive {
                    spread(&cell.final_norm)
                } else {
                    "—".into()
                },
                spread(&cell.fitted_lengthscale),
                spread(&cell.fitted_sigma),
                cell.violating_reps,
                args.reps,
                if adaptive {
                    format!("{}/{}", cell.violating_reps_after_last_doubling, args.reps)
                } else {
                    "—".into()
                },
                cell.settled_valid_reps
                    .map_or("—".into(), |(covered, violating)| format!(
                        "{violating}/{covered}"
                    )),
            ));
        }
    }
    out
}

/// `unknown.csv`, long format: one row per (bound, scenario, repetition).
fn write_csv(path: &Path, json: &UnknownJson) -> Result<(), String> {
    let cells = json.results.iter().map(|cell| RepetitionRows {
        key: vec![cell.method.clone(), cell.scenario.clone()],
        final_regret: &cell.final_regret,
        seeds: &cell.seeds,
        wall_time_s: &cell.wall_time_s,
    });
    write_repetitions_csv(path, &["method", "scenario"], cells)
}
