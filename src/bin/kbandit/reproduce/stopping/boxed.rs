//! The box half of `kbandit reproduce stopping`: the same problems on the box [0, 1]³, where a
//! certificate needs a proven upper bound on sup UCB ([`certify_box`]).
//!
//! # The protocol
//!
//! For every kernel and repetition, the f of the finite half (the same seed, so the same
//! function; d = 3, 20 centres, ‖f‖_H = B = 10). Every method plays on the box with the same
//! noise stream (N(0, σ²), σ = 0.1): each round its [`UcbAgent`] picks the next point with
//! [`BanditAgent::select_in`] (a multistart quasi-Newton search of the UCB, a local maximum —
//! exploration only, no guarantee is drawn from it).
//!
//! **Certificates on a schedule.** [`certify_box`] costs seconds, so a run certifies only after
//! the evaluations of a geometric schedule fixed before the data: t_k = round(5·r^k) (r =
//! `--box-ratio`, default 1.25; distinct values, and the budget itself). That keeps the
//! guarantee: the bounds of AMM-, DMM-, CMM-UCB, AY-GP-UCB and IGP-UCB hold on one event E
//! of probability ≥ 1 − δ at every round at once (module docs of `kernel_bandits::decide`),
//! so any subset of rounds — and the first of them with gap ≤ ε — is covered by E. Each
//! certificate has a budget of `--box-boxes` sub-boxes (deterministic, unlike a time
//! budget) and tolerance `--box-tolerance`; when the budget ends first, its `upper` is still
//! a proven bound on sup UCB, only further from the best UCB found.
//!
//! **Intersection over the certified rounds** (valid bounds only; on E every round's bounds
//! hold at once): U*_k = min over certified rounds s ≤ t_k of `upper`_s ≥ sup f, and the
//! recommendation x̂ keeps a running lower bound L*(x̂) = max over certified rounds s of
//! LCB_s(x̂) ≤ f(x̂): at each certified round the previous x̂'s LCB is evaluated again, and
//! the new round's x̂ (the largest LCB [`certify_box`] found) replaces it only if its LCB is
//! larger. The certificate is G_k = U*_k − L*(x̂_k) ≥ f(x*) − f(x̂_k) on E. It is the proven
//! `upper`, never the best UCB found, that enters G. The heuristics' certificates (K-UCB,
//! GP-UCB β/5) are per round, not intersected.
//!
//! **True regret.** f(x*) is found by a 101³ grid (spacing 0.01, faces and corners included),
//! a compass search (pattern search, Kolda, Lewis & Torczon 2003, SIAM Review 45(3) §3) from
//! each of the 10 best grid points that are at least their 6 grid neighbours, down to a step
//! of 10⁻¹², and checked against 10⁶ uniform points (the largest must not exceed it). The
//! regret of x̂ is f(x*) − f(x̂) with that value.
//!
//! **Makarova et al. (2022) as Optuna computes it** ([`super::makarova_bound`]) on the data of
//! the GP-UCB β/5 run, after every evaluation from the 20th on, with its domain maximum over
//! the top trials and 2000 fresh uniform points of the box (Optuna draws 2048), in the
//! minimisation convention min over trials of UCB − min of LCB over trials and the points.

use std::time::Instant;

use kernel_bandits::continuous::BoxDomain;
use kernel_bandits::decide::{BoxCertifyOptions, certify_box};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use super::super::{announce, derive_seed, run_jobs, write_json};
use super::{
    CsvRun, MAKAROVA_DELTA, MAKAROVA_MIN_TRIALS, MakarovaTrace, Method, NOISE_LABEL, Reached,
    StoppingArgs, evaluations_cell, problem_seed, regret_cell, validity, write_records,
};
use crate::kernels::KernelName;
use crate::plot::{Series, loglog_plot};

/// The label of the stream of Makarova's uniform points.
const MAKAROVA_LABEL: u64 = 0x006d_616b_6172; // "makar"
/// The label of the stream of the uniform points that check f(x*).
const CHECK_LABEL: u64 = 0x0063_6865_636b; // "check"
/// Uniform points of the box per Makarova bound.
pub(super) const MAKAROVA_POINTS: usize = 2000;
/// Grid points per axis of the search for f(x*).
const GRID: usize = 101;
/// Uniform points that check f(x*).
const CHECK_POINTS: usize = 1_000_000;
/// Grid local maxima refined by compass search.
const STARTS: usize = 10;

/// f(x*) over the box, and how it was checked.
#[derive(Debug, Clone, Serialize)]
pub(super) struct TrueMax {
    kernel: &'static str,
    rep: usize,
    /// f(x*) after the compass search.
    value: f64,
    point: Vec<f64>,
    /// The largest value on the 101³ grid.
    grid_max: f64,
    /// The largest value at 10⁶ uniform points.
    uniform_max: f64,
}

/// One run of one method on the box.
#[derive(Debug, Clone, Serialize)]
struct BoxRunJson {
    kernel: &'static str,
    method: Method,
    rep: usize,
    seed: u64,
    valid: bool,
    /// Evaluations at each certificate.
    rounds: Vec<usize>,
    /// The certificate G (intersected for the valid bounds).
    gap: Vec<f64>,
    /// f(x*) − f(x̂) for the recommendation of each certificate.
    regret: Vec<f64>,
    /// The lower bound on f(x̂) in the certificate (L*(x̂) for the valid bounds, LCB(x̂) of
    /// the round for the heuristics): `gap` = U* − `lower`.
    lower: Vec<f64>,
    /// `upper` of [`certify_box`] at that round alone (a proven bound on sup UCB).
    upper: Vec<f64>,
    /// `upper − best_found` of that certificate (how close its search got).
    tolerance: Vec<f64>,
    /// Whether that certificate reached the tolerance.
    converged: Vec<bool>,
    /// Sub-boxes bounded.
    boxes: Vec<usize>,
    /// Seconds per certificate.
    certify_s: Vec<f64>,
    reached: Vec<Reached>,
    violations: usize,
    smallest_margin: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    makarova: Option<MakarovaTrace>,
    /// Seconds in `select_in`.
    select_s: f64,
    wall_time_s: f64,
}

#[derive(Debug, Serialize)]
struct BoxJson {
    dims: usize,
    lengthscale: f64,
    budget: usize,
    schedule: Vec<usize>,
    max_boxes: usize,
    tolerance: f64,
    epsilons: Vec<f64>,
    reps: usize,
    seed: u64,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    k_ucb_beta: f64,
    makarova_delta: f64,
    makarova_points: usize,
    true_max: Vec<TrueMax>,
    runs: Vec<BoxRunJson>,
}

/// The certification rounds: the distinct values of round(5·ratio^k) up to `budget`, and
/// `budget`.
pub(super) fn schedule(budget: usize, ratio: f64) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut t: f64 = 5.0;
    while t.round() < budget as f64 {
        let r = t.round() as usize;
        if out.last() != Some(&r) {
            out.push(r);
        }
        t *= ratio;
    }
    out.push(budget);
    out
}

/// Compass search (Kolda, Lewis & Torczon 2003, §3): from `x`, try ± `step` along each axis
/// (clamped to [0, 1]), move to the first improvement, halve the step when none improves;
/// stop below `min_step`.
fn compass_search(f: &dyn Fn(&[f64]) -> f64, x: &mut [f64], mut step: f64, min_step: f64) -> f64 {
    let mut value = f(x);
    let mut trial = x.to_vec();
    while step >= min_step {
        let mut moved = false;
        'axes: for i in 0..x.len() {
            for sign in [1.0, -1.0] {
                trial.copy_from_slice(x);
                trial[i] = (x[i] + sign * step).clamp(0.0, 1.0);
                if trial[i] == x[i] {
                    continue;
                }
                let v = f(&trial);
                if v > value {
                    x.copy_from_slice(&trial);
                    value = v;
                    moved = true;
                    break 'axes;
                }
            }
        }
        if !moved {
            step *= 0.5;
        }
    }
    value
}

/// f(x*) over [0, 1]^d for f given by `f` (see the module docs), with `seed` for the uniform
/// check.
pub(super) fn true_max_of(
    f: &dyn Fn(&[f64]) -> f64,
    d: usize,
    seed: u64,
) -> Result<(f64, Vec<f64>, f64, f64), Error> {
    let n = GRID.pow(d as u32);
    let h = 1.0 / (GRID - 1) as f64;
    let coords = |mut i: usize| -> Vec<usize> {
        let mut c = vec![0; d];
        for slot in c.iter_mut() {
            *slot = i % GRID;
            i /= GRID;
        }
        c
    };
    let mut x = vec![0.0; d];
    let values: Vec<f64> = (0..n)
        .map(|i| {
            for (xj, cj) in x.iter_mut().zip(coords(i)) {
                *xj = cj as f64 * h;
            }
            f(&x)
        })
        .collect();
    let grid_max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // Grid points at least their axis neighbours.
    let mut peaks: Vec<usize> = (0..n)
        .filter(|&i| {
            let c = coords(i);
            let mut stride = 1;
            for &cj in c.iter() {
                if cj > 0 && values[i - stride] > values[i] {
                    return false;
                }
                if cj + 1 < GRID && values[i + stride] > values[i] {
                    return false;
                }
                stride *= GRID;
            }
            true
        })
        .collect();
    peaks.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    peaks.truncate(STARTS);
    let (mut best, mut point) = (f64::NEG_INFINITY, vec![0.0; d]);
    for &i in &peaks {
        let mut x: Vec<f64> = coords(i).iter().map(|&c| c as f64 * h).collect();
        let v = compass_search(f, &mut x, 0.5 * h, 1e-12);
        if v > best {
            (best, point) = (v, x);
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut uniform_max = f64::NEG_INFINITY;
    for _ in 0..CHECK_POINTS {
        for xj in x.iter_mut() {
            *xj = rng.random::<f64>();
        }
        uniform_max = uniform_max.max(f(&x));
    }
    if !(best >= grid_max && best >= uniform_max) {
        return Err(Error::Unsupported {
            what: format!(
                "a maximum of f: the search found {best}, below a sampled value {}",
                grid_max.max(uniform_max)
            ),
        });
    }
    Ok((best, point, grid_max, uniform_max))
}

fn truth<K: Kernel + Clone>(
    kernel: K,
    name: KernelName,
    rep: usize,
    args: &StoppingArgs,
) -> Result<TrueMax, Error> {
    let seed = problem_seed(args.run.seed, name, args.lengthscale, rep);
    let problem = problem(kernel, seed, args)?;
    let f = |x: &[f64]| problem.value(x).unwrap_or(f64::NAN);
    let (value, point, grid_max, uniform_max) =
        true_max_of(&f, 3, derive_seed(seed, &[CHECK_LABEL]))?;
    Ok(TrueMax {
        kernel: name.tag(),
        rep,
        value,
        point,
        grid_max,
        uniform_max,
    })
}

/// The repetition's f: the same draw as the finite half's.
fn problem<K: Kernel + Clone>(
    kernel: K,
    seed: u64,
    args: &StoppingArgs,
) -> Result<SyntheticProblem<K>, Error> {
    let config = SyntheticConfig {
        dim: 3,
        arms: args.arms,
        ..SyntheticConfig::default()
    };
    SyntheticProblem::new(kernel, config, seed)
}

/// Runs `body` with the kernel named `name` (RBF or Matérn).
macro_rules! with_kernel {
    ($name:expr, $l:expr, |$k:ident| $body:expr) => {
        match $name.nu() {
            None if $name == KernelName::Rbf => {
                let $k = Rbf::new($l)?;
                $body
            }
            Some(nu) => {
                let $k = Matern::new(nu, $l)?;
                $body
            }
            None => Err(Error::Unsupported {
                what: format!("the {} kernel in `reproduce stopping`", $name.tag()),
            }),
        }
    };
}

/// Selection settings of the agents: 256 space-filling starts, the best 3 refined.
fn continuous(seed: u64) -> ContinuousOptions {
    ContinuousOptions {
        starts: 256,
        refine: 3,
        seed,
        max_iterations: 100,
        ..ContinuousOptions::default()
    }
}

/// GP-UCB β/5 on the box as a K-UCB agent on the data so far: U = μ_λ + √β_t ρ_λ with
/// β_t = 2 ln(d t² π²/(6δ))/5 (Srinivas et al. 2010, Thm 1's β with |D| replaced by the
/// dimension d, as Optuna's `_get_beta` does, divided by 5 as in their experiments); K-UCB's
/// multiplier of ρ_λ is β/√λ, so β = √(β_t λ).
fn gp_ucb_agent<K: Kernel + Clone + 'static>(
    kernel: &K,
    lambda: f64,
    delta: f64,
    xs: &[Vec<f64>],
    ys: &[f64],
    seed: u64,
) -> Result<UcbAgent<Box<dyn ConfidenceBound>>, Error> {
    let t = (ys.len() + 1) as f64;
    let beta = 2.0 * (3.0 * t * t * std::f64::consts::PI.powi(2) / (6.0 * delta)).ln() / 5.0;
    let mut bound = KUcb::new(kernel.clone(), lambda, (beta * lambda).sqrt())?;
    for (x, &y) in xs.iter().zip(ys) {
        bound.observe(x, y)?;
    }
    UcbAgent::new(Box::new(bound) as Box<dyn ConfidenceBound>).with_continuous(continuous(seed))
}

#[allow(clippy::too_many_lines)]
fn play<K: Kernel + Clone + 'static>(
    kernel: K,
    name: KernelName,
    method: Method,
    rep: usize,
    truth: &TrueMax,
    args: &StoppingArgs,
) -> Result<BoxRunJson, Error> {
    let start = Instant::now();
    let dim = 3;
    let seed = problem_seed(args.run.seed, name, args.lengthscale, rep);
    let problem = problem(kernel.clone(), seed, args)?;
    let f = |x: &[f64]| problem.value(x);
    let domain = BoxDomain::unit(dim)?;
    let mut noise = ChaCha8Rng::seed_from_u64(derive_seed(seed, &[NOISE_LABEL]));
    let mut uniform = ChaCha8Rng::seed_from_u64(derive_seed(seed, &[MAKAROVA_LABEL]));
    let budget = args.box_budget;
    let params = BoundParams::paper_defaults(&kernel, dim, budget);
    let checked = params.check()?;
    let (sigma, delta, lambda) = (checked.sigma(), checked.delta(), checked.lambda());
    let select_seed = derive_seed(seed, &[method as u64]);
    let mut agent: UcbAgent<Box<dyn ConfidenceBound>> = match method {
        Method::KUcb => {
            UcbAgent::new(Box::new(KUcb::new(kernel.clone(), lambda, args.k_ucb_beta)?) as Box<_>)
                .with_continuous(continuous(select_seed))?
        }
        Method::GpUcb5 => gp_ucb_agent(&kernel, lambda, delta, &[], &[], select_seed)?,
        _ => {
            let kind = method.kind().expect("a bound");
            let config = kernel_bandits::bound::BoundConfig::new().params(params);
            UcbAgent::new(kind.build_boxed(kernel.clone(), &config)?)
                .with_continuous(continuous(select_seed))?
        }
    };
    let options = BoxCertifyOptions {
        tolerance: args.box_tolerance,
        max_boxes: args.box_boxes,
        ..BoxCertifyOptions::default()
    };
    let rounds = schedule(budget, args.box_ratio);
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
    let mut run = BoxRunJson {
        kernel: name.tag(),
        method,
        rep,
        seed,
        valid: method.valid(),
        rounds: Vec::new(),
        gap: Vec::new(),
        regret: Vec::new(),
        lower: Vec::new(),
        upper: Vec::new(),
        tolerance: Vec::new(),
        converged: Vec::new(),
        boxes: Vec::new(),
        certify_s: Vec::new(),
        reached: Vec::new(),
        violations: 0,
        smallest_margin: f64::INFINITY,
        makarova: None,
        select_s: 0.0,
        wall_time_s: 0.0,
    };
    let mut makarova = (method == Method::GpUcb5).then(|| MakarovaTrace {
        first_evaluations: MAKAROVA_MIN_TRIALS,
        bound: Vec::new(),
        regret: Vec::new(),
        reached: reached.clone(),
        violations: 0,
        smallest_margin: f64::INFINITY,
    });
    // The intersected certificate: U* and (x̂, L*(x̂)).
    let mut upper_star = f64::INFINITY;
    let mut held: Option<(Vec<f64>, f64)> = None;
    let (mut xs, mut ys): (Vec<Vec<f64>>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut gap_now = f64::INFINITY;
    loop {
        let n = ys.len();
        if rounds.contains(&n) {
            let began = Instant::now();
            let bound = agent.bound();
            let certificate = certify_box(bound, &domain, &options)?;
            let candidate = (
                certificate.recommendation.x.clone(),
                certificate.recommendation.lcb,
            );
            let (x_hat, lower) = if method.valid() {
                upper_star = upper_star.min(certificate.upper);
                let kept = match held.take() {
                    Some((x, l)) => {
                        let now = bound.evaluate(&Points::from_row_major(&x, dim)?)?.lcb[0];
                        Some((x, l.max(now)))
                    }
                    None => None,
                };
                let next = match kept {
                    Some((x, l)) if l >= candidate.1 => (x, l),
                    _ => candidate,
                };
                held = Some(next.clone());
                next
            } else {
                upper_star = certificate.upper;
                candidate
            };
            gap_now = upper_star - lower;
            let regret = truth.value - f(&x_hat)?;
            run.rounds.push(n);
            run.gap.push(gap_now);
            run.regret.push(regret);
            run.lower.push(lower);
            run.upper.push(certificate.upper);
            run.tolerance.push(certificate.tolerance);
            run.converged.push(certificate.converged);
            run.boxes.push(certificate.boxes);
            run.certify_s.push(began.elapsed().as_secs_f64());
            for r in reached.iter_mut().filter(|r| r.evaluations.is_none()) {
                if gap_now <= r.epsilon {
                    (r.evaluations, r.gap, r.regret) = (Some(n), Some(gap_now), Some(regret));
                }
            }
        }
        if let Some(trace) = makarova.as_mut()
            && n >= MAKAROVA_MIN_TRIALS
        {
            let rows: Vec<f64> = (0..MAKAROVA_POINTS * dim)
                .map(|_| uniform.random::<f64>())
                .collect();
            let points = Points::from_row_major(&rows, dim)?;
            let (bound, index) =
                super::makarova_bound(&kernel, &xs, &ys, &points, sigma, MAKAROVA_DELTA)?;
            let regret = truth.value - f(&xs[index])?;
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
        if (gap_now <= smallest && makarova_done) || n >= budget {
            break;
        }
        let began = Instant::now();
        let choice = agent.select_in(&domain)?;
        run.select_s += began.elapsed().as_secs_f64();
        let x = choice.point;
        let standard: f64 = StandardNormal.sample(&mut noise);
        let y = f(&x)? + sigma * standard;
        xs.push(x.clone());
        ys.push(y);
        if method == Method::GpUcb5 {
            agent = gp_ucb_agent(&kernel, lambda, delta, &xs, &ys, select_seed)?;
        } else {
            agent.update(&x, y)?;
        }
    }
    (run.violations, run.smallest_margin) = validity(&run.gap, &run.regret);
    if let Some(trace) = makarova.as_mut() {
        (trace.violations, trace.smallest_margin) = validity(&trace.bound, &trace.regret);
    }
    run.reached = reached;
    run.makarova = makarova;
    run.wall_time_s = start.elapsed().as_secs_f64();
    Ok(run)
}

/// Runs the box half and writes `stopping_box.json`, `stopping_box.csv` and its plots.
pub(super) fn run(args: &StoppingArgs) -> Result<(), String> {
    let problems: Vec<(KernelName, usize)> = args
        .kernels
        .iter()
        .flat_map(|&k| (0..args.reps).map(move |r| (k, r)))
        .collect();
    let (truths, _, truth_s) = run_jobs(&problems, args.run.threads, "box maxima", |&(k, r)| {
        let l = args.lengthscale;
        let result =
            || -> Result<TrueMax, Error> { with_kernel!(k, l, |kernel| truth(kernel, k, r, args)) };
        result().map_err(|e| format!("the maximum of f, {} repetition {r}: {e}", k.title()))
    })?;
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
    let truth_of = |k: KernelName, r: usize| {
        truths
            .iter()
            .find(|t| t.kernel == k.tag() && t.rep == r)
            .expect("every problem")
    };
    let (mut runs, threads, elapsed) =
        run_jobs(&jobs, args.run.threads, "stopping box", |&(k, m, r)| {
            let l = args.lengthscale;
            let result = || -> Result<BoxRunJson, Error> {
                with_kernel!(k, l, |kernel| play(kernel, k, m, r, truth_of(k, r), args))
            };
            result().map_err(|e| {
                format!(
                    "{} with {} on the box (repetition {r}): {e}",
                    k.title(),
                    m.tag()
                )
            })
        })?;
    let order = |run: &BoxRunJson| {
        let k = args.kernels.iter().position(|k| k.tag() == run.kernel);
        let m = args.methods.iter().position(|&m| m == run.method);
        (k, m, run.rep)
    };
    runs.sort_by_key(order);
    let mut epsilons = args.epsilons.clone();
    epsilons.sort_by(|a, b| b.total_cmp(a));
    let json = BoxJson {
        dims: 3,
        lengthscale: args.lengthscale,
        budget: args.box_budget,
        schedule: schedule(args.box_budget, args.box_ratio),
        max_boxes: args.box_boxes,
        tolerance: args.box_tolerance,
        epsilons,
        reps: args.reps,
        seed: args.run.seed,
        sigma: 0.1,
        norm_bound: 10.0,
        delta: 0.01,
        k_ucb_beta: args.k_ucb_beta,
        makarova_delta: MAKAROVA_DELTA,
        makarova_points: MAKAROVA_POINTS,
        true_max: truths,
        runs,
    };
    print!("{}", markdown(args, &json, truth_s));
    let json_path = args.run.out.join("stopping_box.json");
    write_json(&json_path, &json)?;
    let csv_path = args.run.out.join("stopping_box.csv");
    write_csv(&csv_path, &json)?;
    let mut plots = Vec::new();
    for &kernel in &args.kernels {
        let stem = args.run.out.join(format!("stopping_box_{}", kernel.tag()));
        plot(&stem, &json, kernel, args)?;
        plots.push(stem);
    }
    announce(
        "stopping (box)",
        jobs.len(),
        elapsed + truth_s,
        threads,
        &[&json_path, &csv_path],
        &plots,
    );
    Ok(())
}

fn runs_of(json: &BoxJson, kernel: KernelName, method: Method) -> Vec<&BoxRunJson> {
    json.runs
        .iter()
        .filter(|r| r.kernel == kernel.tag() && r.method == method)
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    }
}

#[allow(clippy::too_many_lines)]
fn markdown(args: &StoppingArgs, json: &BoxJson, truth_s: f64) -> String {
    let mut out = format!(
        "\nOn the box [0, 1]³: evaluations until the certified gap is ≤ ε, median [min–max] over \
         {} repetitions ((k/n): certified in k of n within the budget of {}), certificates after \
         {:?} evaluations, each with at most {} sub-boxes and tolerance {}; ℓ = {}, σ = 0.1, \
         B = 10, δ = 0.01 (seed {})\n",
        args.reps,
        json.budget,
        json.schedule,
        json.max_boxes,
        json.tolerance,
        args.lengthscale,
        args.run.seed
    );
    let header = |out: &mut String| {
        out.push_str("\n| method |");
        for e in &json.epsilons {
            out.push_str(&format!(" ε = {e} |"));
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(json.epsilons.len()));
        out.push('\n');
    };
    const MAKAROVA: &str = "Makarova et al. 2022 / Optuna (heuristic)";
    for &kernel in &args.kernels {
        out.push_str(&format!(
            "\n### Box, {} ℓ = {}\n",
            kernel.title(),
            args.lengthscale
        ));
        header(&mut out);
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
                rows.push((MAKAROVA.to_owned(), per_eps));
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
        header(&mut out);
        for (title, per_eps) in &rows {
            out.push_str(&format!("| {title} |"));
            for reached in per_eps {
                out.push_str(&format!(" {} |", regret_cell(reached)));
            }
            out.push('\n');
        }
        out.push_str(
            "\nValidity over every certificate of every repetition (certificate − regret), and \
             the cost of a certificate\n\n| method | certificates | below the regret | \
             smallest margin | s per certificate, median [max] | sub-boxes, median | tolerance \
             reached (k/n) | select_in s per run, median |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for &method in &args.methods {
            let runs = runs_of(json, kernel, method);
            let count: usize = runs.iter().map(|r| r.gap.len()).sum();
            let below: usize = runs.iter().map(|r| r.violations).sum();
            let margin = runs
                .iter()
                .map(|r| r.smallest_margin)
                .fold(f64::INFINITY, f64::min);
            let mut times: Vec<f64> = runs.iter().flat_map(|r| r.certify_s.clone()).collect();
            let slowest = times.iter().copied().fold(0.0, f64::max);
            let mut boxes: Vec<f64> = runs
                .iter()
                .flat_map(|r| r.boxes.iter().map(|&b| b as f64))
                .collect();
            let converged: usize = runs
                .iter()
                .map(|r| r.converged.iter().filter(|&&c| c).count())
                .sum();
            let mut select: Vec<f64> = runs.iter().map(|r| r.select_s).collect();
            out.push_str(&format!(
                "| {} | {count} | {below} | {margin:.4} | {:.3} [{slowest:.2}] | {:.0} | \
                 {converged}/{count} | {:.1} |\n",
                method.title(),
                median(&mut times),
                median(&mut boxes),
                median(&mut select),
            ));
            if method == Method::GpUcb5 {
                let traces: Vec<&MakarovaTrace> =
                    runs.iter().filter_map(|r| r.makarova.as_ref()).collect();
                let count: usize = traces.iter().map(|m| m.bound.len()).sum();
                let below: usize = traces.iter().map(|m| m.violations).sum();
                let margin = traces
                    .iter()
                    .map(|m| m.smallest_margin)
                    .fold(f64::INFINITY, f64::min);
                out.push_str(&format!(
                    "| {MAKAROVA} (every evaluation from the 20th) | {count} | {below} | \
                     {margin:.4} | – | – | – | – |\n"
                ));
            }
        }
        out.push_str(
            "\nf(x*) by grid + compass search, against the best of the 101³ grid and of 10⁶ \
             uniform points\n\n| repetition | f(x*) | x* | f(x*) − grid max | f(x*) − uniform \
             max |\n|---:|---:|---|---:|---:|\n",
        );
        for t in json.true_max.iter().filter(|t| t.kernel == kernel.tag()) {
            out.push_str(&format!(
                "| {} | {:.6} | ({:.4}, {:.4}, {:.4}) | {:.2e} | {:.2e} |\n",
                t.rep,
                t.value,
                t.point[0],
                t.point[1],
                t.point[2],
                t.value - t.grid_max,
                t.value - t.uniform_max
            ));
        }
    }
    out.push_str(&format!(
        "\nf(x*) of the {} problems: {truth_s:.1} s\n",
        json.true_max.len()
    ));
    out
}

/// `stopping_box.csv`: one row per (kernel, method, repetition, ε), the Makarova bound as
/// method `makarova`, with the run's certificates and their seconds.
fn write_csv(path: &std::path::Path, json: &BoxJson) -> Result<(), String> {
    let records = json.runs.iter().flat_map(|run| {
        let certify: f64 = run.certify_s.iter().sum();
        CsvRun {
            kernel: run.kernel,
            method: run.method.tag(),
            valid: run.valid,
            rep: run.rep,
            seed: run.seed,
            reached: &run.reached,
            violations: run.violations,
            smallest_margin: run.smallest_margin,
            makarova: run.makarova.as_ref(),
        }
        .records(&[
            run.gap.len().to_string(),
            format!("{certify:.4}"),
            format!("{:.4}", run.wall_time_s),
        ])
    });
    write_records(path, &["certificates", "certify_s", "wall_time_s"], records)
}

/// Mean over the repetitions of the certified gap (solid) and of the true regret of the
/// recommendation (labelled "regret") against evaluations, per method, on log axes (a run
/// that stopped early keeps its last value).
fn plot(
    stem: &std::path::Path,
    json: &BoxJson,
    kernel: KernelName,
    args: &StoppingArgs,
) -> Result<(), String> {
    let mean_curve = |curves: &[(&[usize], &[f64])]| -> Vec<(f64, f64)> {
        let Some(longest) = curves.iter().map(|c| c.0).max_by_key(|r| r.len()) else {
            return Vec::new();
        };
        (0..longest.len())
            .map(|i| {
                let sum: f64 = curves.iter().map(|c| c.1[i.min(c.1.len() - 1)]).sum();
                (longest[i].max(1) as f64, sum / curves.len() as f64)
            })
            .collect()
    };
    let mut series = Vec::new();
    for &method in &args.methods {
        let runs = runs_of(json, kernel, method);
        let gaps: Vec<(&[usize], &[f64])> =
            runs.iter().map(|r| (&r.rounds[..], &r.gap[..])).collect();
        let regrets: Vec<(&[usize], &[f64])> = runs
            .iter()
            .map(|r| (&r.rounds[..], &r.regret[..]))
            .collect();
        series.push(Series {
            label: format!("{} gap", method.title()),
            points: mean_curve(&gaps),
        });
        series.push(Series {
            label: format!("{} regret", method.title()),
            points: mean_curve(&regrets),
        });
        if method == Method::GpUcb5 {
            let traces: Vec<&MakarovaTrace> = runs
                .iter()
                .filter_map(|r| r.makarova.as_ref())
                .filter(|m| !m.bound.is_empty())
                .collect();
            let steps: Vec<usize> = (MAKAROVA_MIN_TRIALS..=json.budget).collect();
            let bounds: Vec<(&[usize], &[f64])> =
                traces.iter().map(|m| (&steps[..], &m.bound[..])).collect();
            let regrets: Vec<(&[usize], &[f64])> =
                traces.iter().map(|m| (&steps[..], &m.regret[..])).collect();
            if !bounds.is_empty() {
                let trim = |mut p: Vec<(f64, f64)>| {
                    let len = traces.iter().map(|m| m.bound.len()).max().unwrap_or(0);
                    p.truncate(len);
                    p
                };
                series.push(Series {
                    label: "Makarova et al. / Optuna bound (heuristic)".to_owned(),
                    points: trim(mean_curve(&bounds)),
                });
                series.push(Series {
                    label: "Makarova et al. / Optuna regret".to_owned(),
                    points: trim(mean_curve(&regrets)),
                });
            }
        }
    }
    let title = format!(
        "box [0, 1]³, {} ℓ = {}: certified gap and true regret f(x*) − f(x̂), mean over {} \
         repetitions",
        kernel.title(),
        args.lengthscale,
        args.reps
    );
    loglog_plot(stem, &title, ("evaluations", "gap, regret"), &series)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule against its definition: distinct round(5·1.2^k) below the budget, then the
    /// budget.
    #[test]
    fn schedule_is_geometric_distinct_and_ends_at_the_budget() {
        assert_eq!(
            schedule(40, 1.2),
            [5, 6, 7, 9, 10, 12, 15, 18, 21, 26, 31, 37, 40]
        );
        assert_eq!(schedule(3, 1.2), [3]);
        assert_eq!(schedule(5, 2.0), [5]);
        assert_eq!(schedule(21, 2.0), [5, 10, 20, 21]);
    }

    /// f(x*) of a sum of two RBF bumps whose maximiser is known in closed form: one bump of
    /// height 2 at (0.3, 0.71, 0.5) and one of height 0.5 far away, ℓ = 0.05 (so the small bump
    /// adds < 10⁻³⁰ at the peak); the maximiser is off the grid. Also a bump centred outside
    /// the box, whose maximum over the box is on a face.
    #[test]
    fn true_max_finds_an_off_grid_peak_and_a_face_maximum() {
        let bump = |x: &[f64], c: [f64; 3], h: f64, l: f64| {
            let r2: f64 = x.iter().zip(c).map(|(a, b)| (a - b).powi(2)).sum();
            h * (-r2 / (2.0 * l * l)).exp()
        };
        let f =
            |x: &[f64]| bump(x, [0.3, 0.71, 0.5], 2.0, 0.05) + bump(x, [0.9, 0.1, 0.1], 0.5, 0.05);
        // Not on the grid of spacing 0.01: move the peak by 0.00437 along x.
        let g = |x: &[f64]| f(&[x[0] - 0.00437, x[1], x[2]]);
        let (value, point, grid_max, uniform_max) = true_max_of(&g, 3, 1).unwrap();
        assert!((value - 2.0).abs() < 1e-12, "{value}");
        assert!((point[0] - 0.30437).abs() < 1e-5, "{point:?}");
        assert!(
            grid_max < 2.0 - 1e-4,
            "the grid alone misses it: {grid_max}"
        );
        assert!(uniform_max <= value);
        // Centre at x₀ = −0.1: the maximum over the box is at x₀ = 0, value e^{−0.01/(2·0.04)}.
        let h = |x: &[f64]| bump(x, [-0.1, 0.4, 0.6], 1.0, 0.2);
        let (value, point, _, _) = true_max_of(&h, 3, 2).unwrap();
        let expected = (-0.01f64 / 0.08).exp();
        assert!((value - expected).abs() < 1e-12, "{value} vs {expected}");
        assert_eq!(point[0], 0.0);
    }
}
