//! Coverage of the confidence bounds along the UCB agent's own trajectory: does the unknown f
//! stay inside [LCB, UCB] with probability ≥ 1 − δ, as the bounds promise?
//!
//! Design. One repetition r is a fresh synthetic problem of Flynn & Reeb 2024 §7 (seed r, d = 2, 20
//! centres, 100 fresh arms per round, Gaussian noise N(0, σ²) with σ = 0.1, ‖f‖_H = B = 10),
//! Matérn 5/2 kernel with ℓ = 0.2 and the paper's covariance scale c = T^{−d/(2d+2ν)}. Each
//! bound gets the truth: `sigma` = the noise's σ, `norm_bound` = the problem's RKHS norm, and
//! δ = 0.1 (IGP: η = 2/T; BKB and EK-UCB: their theoretical widths β̃ from σ, B, δ, T and
//! ε = ½, with λ = σ²/c, AMM's regulariser a0). A [`UcbAgent`] on the bound plays T rounds on
//! the problem's arms, observing f(x) + noise, so the data are the bound's own adaptive
//! trajectory. After every observation the bound is evaluated on a fixed 10 × 10 grid over
//! [0, 1]² (corners included) and compared with the true f there. (Before the first
//! observation the exact bounds are trivially valid, |f(x)| ≤ B√k(x, x) ≤ their prior width,
//! so round 0 is not checked.) A repetition violates if f < LCB or f > UCB at any round and
//! any grid point: the event the anytime-valid bounds bound by δ.
//!
//! Criterion. With k violating repetitions out of R, the one-sided upper 99% Clopper–Pearson
//! limit of the violation rate (computed here by bisection on the exact binomial CDF, tested
//! against closed forms and textbook values) must be ≤ δ. With k = 0 that limit is
//! 1 − 0.01^{1/R}, so R ≥ 44 is needed; R = 50 gives 0.088. The bounds are conservative: every
//! bound has 0 violations, and f never gets beyond ~0.9 of the half-width from the interval's
//! midpoint (column `max |f−mid|/half-width`; the sketched bounds, whose β̃ carries extra
//! factors, ~0.4).
//!
//! Negative control. `Narrowed` is AMM with its half-widths divided by 10; the agent follows
//! the narrowed UCB (the provided `argmax_ucb`, checked every 10 rounds). It must be caught:
//! the lower 99% Clopper–Pearson limit of its violation rate must exceed δ (it violates in
//! every repetition, from the first observation on, at essentially every round).
//!
//! Sizes and times. T, R and the grid are chosen to fit the budgets: 100 grid points cost as
//! much as one round's 100 arms, and the exact bounds cost O(t²) per point, CMM-UCB an
//! eigendecomposition per round. Repetitions are spread over all cores (std threads, each
//! repetition inside `kernel_bandits::parallel::sequential`).
//! - `bounds_cover_f_along_the_agent_trajectory` (CI): T = 100, R = 50 for each of the seven
//!   bounds, R = 20 for the control: 27 s in the debug profile on 2 (shared) cores
//!   (`cargo test --all-features --test integration -- coverage::`).
//! - `bounds_cover_f_along_the_agent_trajectory_long` (`#[ignore]`): T = 200, R = 100
//!   (CMM-UCB: T = 150, R = 50; control R = 50): 78 s in release on 2 (shared) cores
//!   (`cargo test --release --all-features --test integration -- coverage:: --ignored --nocapture`).
//!
//! Run with `-- --nocapture` to see the table: bound | T | repetitions | violations | observed
//! rate | upper (and lower) 99% CP limit | max |f−mid|/half-width | grid | time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use kernel_bandits::Result;
use kernel_bandits::bound::paper_scale;
use kernel_bandits::parallel::sequential;
use kernel_bandits::prelude::*;

/// δ of every bound, and the largest violation rate the test accepts.
const DELTA: f64 = 0.1;
/// One-sided level of the Clopper–Pearson limits: 99%.
const ALPHA: f64 = 0.01;
/// The negative control divides AMM's half-width by this.
const NARROWING: f64 = 10.0;

// ---------------------------------------------------------------------------------------------
// Exact binomial (Clopper–Pearson) limits.

/// P(X ≤ k) for X ~ Binomial(n, p), summed exactly term by term in log space.
fn binomial_cdf(k: usize, n: usize, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (ln_p, ln_q) = (p.ln(), (-p).ln_1p());
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut sum = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_choose + i as f64 * ln_p + (n - i) as f64 * ln_q).exp();
    }
    sum.min(1.0)
}

/// The p in [0, 1] where the decreasing function `g` crosses `level`, by bisection.
fn bisect_decreasing(g: impl Fn(f64) -> f64, level: f64) -> f64 {
    let (mut low, mut high) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if g(mid) > level {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// One-sided upper (1 − α) Clopper–Pearson limit for k successes in n trials: the p with
/// P(X ≤ k; n, p) = α (1 for k = n).
fn clopper_pearson_upper(k: usize, n: usize, alpha: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    bisect_decreasing(|p| binomial_cdf(k, n, p), alpha)
}

/// One-sided lower (1 − α) Clopper–Pearson limit: the p with P(X ≥ k; n, p) = α (0 for k = 0).
fn clopper_pearson_lower(k: usize, n: usize, alpha: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    // P(X ≥ k) = 1 − P(X ≤ k − 1) increases with p; 1 − that decreases.
    bisect_decreasing(|p| binomial_cdf(k - 1, n, p), 1.0 - alpha)
}

#[test]
fn clopper_pearson_matches_closed_forms_and_tables() {
    for n in [1usize, 10, 44, 100, 1000] {
        // k = 0: P(X ≤ 0) = (1 − p)^n = α.
        let closed = 1.0 - ALPHA.powf(1.0 / n as f64);
        let got = clopper_pearson_upper(0, n, ALPHA);
        assert!((got - closed).abs() < 1e-12, "n = {n}: {got} vs {closed}");
        // k = n − 1: P(X ≤ n − 1) = 1 − pⁿ = α.
        let closed = (1.0 - ALPHA).powf(1.0 / n as f64);
        let got = clopper_pearson_upper(n - 1, n, ALPHA);
        assert!((got - closed).abs() < 1e-12, "n = {n}: {got} vs {closed}");
        // Lower limits: k = n gives pⁿ = α, k = 1 gives 1 − (1 − p)ⁿ = α.
        let closed = ALPHA.powf(1.0 / n as f64);
        let got = clopper_pearson_lower(n, n, ALPHA);
        assert!((got - closed).abs() < 1e-12, "n = {n}: {got} vs {closed}");
        let closed = 1.0 - (1.0 - ALPHA).powf(1.0 / n as f64);
        let got = clopper_pearson_lower(1, n, ALPHA);
        assert!((got - closed).abs() < 1e-12, "n = {n}: {got} vs {closed}");
        assert_eq!(clopper_pearson_lower(0, n, ALPHA), 0.0);
        assert_eq!(clopper_pearson_upper(n, n, ALPHA), 1.0);
    }
    // With 0 violations, 44 repetitions are the fewest whose upper 99% limit is ≤ 0.1.
    assert!(clopper_pearson_upper(0, 44, ALPHA) <= 0.1);
    assert!(clopper_pearson_upper(0, 43, ALPHA) > 0.1);
    // Textbook two-sided 95% intervals (each side at α = 0.025): 1/10 → [0.0025, 0.4450],
    // 5/10 → [0.1871, 0.8129].
    for (k, n, low, high) in [(1, 10, 0.0025, 0.4450), (5, 10, 0.1871, 0.8129)] {
        let (l, h) = (
            clopper_pearson_lower(k, n, 0.025),
            clopper_pearson_upper(k, n, 0.025),
        );
        assert!((l - low).abs() < 5e-5, "{k}/{n}: lower {l}");
        assert!((h - high).abs() < 5e-5, "{k}/{n}: upper {h}");
    }
}

// ---------------------------------------------------------------------------------------------
// The negative control: AMM with a tenth of its width.

/// AMM with its half-widths (UCB − mean and mean − LCB) divided by `NARROWING`.
///
/// `argmax_ucb` deliberately takes the argmax of `self.evaluate(points).ucb`, i.e. of the
/// narrowed UCB, so the agent follows the narrowed bound's own trajectory. (Forwarding it to
/// `Amm::argmax_ucb` would pick arms by AMM's full width.) `fix_arms` is not overridden, so no
/// per-arm state is kept behind the wrapper's back.
#[derive(Debug, Clone)]
struct Narrowed<B>(B);

impl<B: ConfidenceBound> ConfidenceBound for Narrowed<B> {
    fn name(&self) -> &'static str {
        "amm/10"
    }

    fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.0.observe(x, y)
    }

    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
        let b = self.0.evaluate(points)?;
        let lcb = b
            .mean
            .iter()
            .zip(&b.lcb)
            .map(|(m, l)| m - (m - l) / NARROWING)
            .collect();
        let ucb = b
            .mean
            .iter()
            .zip(&b.ucb)
            .map(|(m, u)| m + (u - m) / NARROWING)
            .collect();
        Ok(Bounds {
            mean: b.mean,
            lcb,
            ucb,
        })
    }

    fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize> {
        self.evaluate(points)?.argmax_ucb()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn dim(&self) -> Option<usize> {
        self.0.dim()
    }

    fn truncate(&mut self, len: usize) {
        self.0.truncate(len)
    }
}

// ---------------------------------------------------------------------------------------------
// The experiment.

/// The bounds under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Ay,
    Igp,
    Amm,
    Dmm,
    Cmm,
    Bkb,
    EkUcb,
    /// The negative control.
    NarrowAmm,
    /// AMM-UCB, DMM-UCB and CMM-UCB with the adaptive scale (no c given).
    AmmAdaptive,
    DmmAdaptive,
    CmmAdaptive,
}

impl Method {
    fn label(self) -> &'static str {
        match self {
            Method::Ay => "AY-GP-UCB",
            Method::Igp => "IGP-UCB",
            Method::Amm => "AMM-UCB",
            Method::Dmm => "DMM-UCB",
            Method::Cmm => "CMM-UCB",
            Method::Bkb => "BKB (theory β̃)",
            Method::EkUcb => "EK-UCB (theory β̃)",
            Method::NarrowAmm => "AMM width/10 (control)",
            Method::AmmAdaptive => "AMM-UCB, adaptive c",
            Method::DmmAdaptive => "DMM-UCB, adaptive c",
            Method::CmmAdaptive => "CMM-UCB, adaptive c",
        }
    }

    /// The bound with the true σ and B, δ = `DELTA`, the paper's covariance scale c for the
    /// kernel (η = 2/T for IGP); the sketched bounds regularise with λ = σ²/c = a0, AMM's.
    fn build<K: Kernel + Copy + 'static>(
        self,
        kernel: K,
        problem: &SyntheticProblem<K>,
        horizon: usize,
        seed: u64,
    ) -> Result<Box<dyn ConfidenceBound>> {
        let config = problem.config();
        let (sigma, norm_bound) = (config.noise_sd, problem.rkhs_norm());
        let scale = paper_scale(kernel.smoothness(), config.dim, horizon);
        let params = BoundParams::new()
            .sigma(sigma)
            .norm_bound(norm_bound)
            .delta(DELTA)
            .scale(scale)
            .horizon(horizon);
        let sketch = SketchParams::new()
            .lambda(sigma * sigma / scale)
            .sigma(sigma)
            .norm_bound(norm_bound)
            .delta(DELTA)
            .horizon(horizon);
        Ok(match self {
            Method::Ay => Box::new(Ay::new(kernel, params)?),
            Method::Igp => Box::new(Igp::new(kernel, params)?),
            Method::Amm => Box::new(Amm::new(kernel, params)?),
            Method::Dmm => Box::new(Dmm::new(kernel, params)?),
            Method::Cmm => Box::new(Cmm::new(kernel, params)?),
            Method::Bkb => Box::new(Bkb::new(kernel, sketch, seed)?),
            Method::EkUcb => Box::new(EkUcb::new(kernel, sketch, seed)?),
            Method::NarrowAmm => Box::new(Narrowed(Amm::new(kernel, params)?)),
            Method::AmmAdaptive => Box::new(Amm::new(kernel, params.adaptive_scale())?),
            Method::DmmAdaptive => Box::new(Dmm::new(kernel, params.adaptive_scale())?),
            Method::CmmAdaptive => Box::new(Cmm::new(kernel, params.adaptive_scale())?),
        })
    }
}

/// Size of one coverage experiment.
#[derive(Debug, Clone, Copy)]
struct Setting {
    /// Rounds T per repetition.
    horizon: usize,
    /// Repetitions R (seeds 0..R).
    repetitions: usize,
    /// The test points are a `grid` × `grid` grid over [0, 1]² (corners included).
    grid: usize,
}

/// What one repetition saw.
#[derive(Debug, Clone, Copy, Default)]
struct Repetition {
    /// Rounds (1-based: after that many observations) at which f left [LCB, UCB] at some grid
    /// point.
    violating_rounds: usize,
    /// The first such round.
    first_violation: Option<usize>,
    /// max over rounds and grid points of |f − mid|/half-width (mid, half-width of
    /// [LCB, UCB]); > 1 exactly at a violation.
    worst_ratio: f64,
}

fn grid_points(side: usize) -> Vec<[f64; 2]> {
    let coordinate = |i: usize| i as f64 / (side - 1) as f64;
    (0..side * side)
        .map(|j| [coordinate(j % side), coordinate(j / side)])
        .collect()
}

/// Checks the bound against the true values at the grid; updates `rep` for round `t`.
fn check(
    bound: &dyn ConfidenceBound,
    grid: &Points<'_>,
    truth: &[f64],
    t: usize,
    rep: &mut Repetition,
) -> Result<()> {
    let b = bound.evaluate(grid)?;
    let mut violated = false;
    for (j, &f) in truth.iter().enumerate() {
        let (l, u) = (b.lcb[j], b.ucb[j]);
        assert!(
            l.is_finite() && u.is_finite(),
            "non-finite bound at t = {t}"
        );
        violated |= f < l || f > u;
        let (mid, half) = (0.5 * (u + l), 0.5 * (u - l));
        let ratio = if half > 0.0 {
            (f - mid).abs() / half
        } else if f == mid {
            0.0
        } else {
            f64::INFINITY
        };
        rep.worst_ratio = rep.worst_ratio.max(ratio);
    }
    if violated {
        rep.violating_rounds += 1;
        rep.first_violation.get_or_insert(t);
    }
    Ok(())
}

/// One repetition: a fresh problem (seed `seed`, d = 2), the agent on `method` plays T
/// rounds on the problem's fresh arms; after each observation the bound is checked on the
/// grid.
fn repetition<K: Kernel + Copy + 'static>(
    method: Method,
    kernel: K,
    setting: Setting,
    seed: u64,
) -> Result<Repetition> {
    let config = SyntheticConfig {
        dim: 2,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, seed)?;
    let grid = grid_points(setting.grid);
    let truth = grid
        .iter()
        .map(|x| problem.value(x))
        .collect::<Result<Vec<f64>>>()?;
    let grid = grid.as_points()?;
    let bound = method.build(kernel, &problem, setting.horizon, seed)?;
    let mut agent = UcbAgent::new(bound);
    let mut rep = Repetition::default();
    for t in 0..setting.horizon {
        let round = problem.round(t);
        let i = agent.select(&round)?;
        if method == Method::NarrowAmm && t % 10 == 0 {
            // The agent plays the argmax of the narrowed UCB (lowest index among ties).
            let ucb = agent.bound().evaluate(&round.arms())?.ucb;
            let best = ucb.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(Some(i), ucb.iter().position(|&u| u == best));
        }
        agent.update(round.arm(i), round.values[i] + round.noise)?;
        check(agent.bound(), &grid, &truth, t + 1, &mut rep)?;
    }
    Ok(rep)
}

/// One row of the coverage table.
#[derive(Debug, Clone)]
struct Row {
    method: Method,
    setting: Setting,
    repetitions: Vec<Repetition>,
    seconds: f64,
}

impl Row {
    fn violations(&self) -> usize {
        self.repetitions
            .iter()
            .filter(|r| r.first_violation.is_some())
            .count()
    }

    fn rate(&self) -> f64 {
        self.violations() as f64 / self.repetitions.len() as f64
    }

    fn upper(&self) -> f64 {
        clopper_pearson_upper(self.violations(), self.repetitions.len(), ALPHA)
    }

    fn lower(&self) -> f64 {
        clopper_pearson_lower(self.violations(), self.repetitions.len(), ALPHA)
    }

    fn worst_ratio(&self) -> f64 {
        self.repetitions
            .iter()
            .map(|r| r.worst_ratio)
            .fold(0.0, f64::max)
    }
}

/// Runs the repetitions of `method` over all cores (one repetition per task, each kept on
/// its thread by `sequential`).
fn run<K: Kernel + Copy + Send + Sync + 'static>(
    method: Method,
    kernel: K,
    setting: Setting,
) -> Row {
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(setting.repetitions);
    let mut results: Vec<(usize, Repetition)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    sequential(|| {
                        let mut done = Vec::new();
                        loop {
                            let r = next.fetch_add(1, Ordering::Relaxed);
                            if r >= setting.repetitions {
                                break done;
                            }
                            let rep = repetition(method, kernel, setting, r as u64)
                                .unwrap_or_else(|e| panic!("{method:?}, seed {r}: {e}"));
                            done.push((r, rep));
                        }
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a repetition panicked"))
            .collect()
    });
    results.sort_by_key(|(r, _)| *r);
    Row {
        method,
        setting,
        repetitions: results.into_iter().map(|(_, rep)| rep).collect(),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The table, printed in one piece (visible with `-- --nocapture`).
fn print_table(title: &str, rows: &[Row]) {
    let mut out = format!(
        "\n{title}\nδ = {DELTA}; a repetition violates if f < LCB or f > UCB at any round and grid point\n\
         | bound | T | repetitions | violations | observed rate | upper 99% CP limit | \
         lower 99% CP limit | max |f−mid|/half-width | grid | time (s) |\n\
         |---|---|---|---|---|---|---|---|---|---|\n"
    );
    for row in rows {
        out += &format!(
            "| {} | {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.3} | {}×{} | {:.1} |\n",
            row.method.label(),
            row.setting.horizon,
            row.repetitions.len(),
            row.violations(),
            row.rate(),
            row.upper(),
            row.lower(),
            row.worst_ratio(),
            row.setting.grid,
            row.setting.grid,
            row.seconds,
        );
    }
    for row in rows.iter().filter(|r| r.method == Method::NarrowAmm) {
        let latest_first = row
            .repetitions
            .iter()
            .filter_map(|r| r.first_violation)
            .max()
            .unwrap_or(0);
        let violating = row
            .repetitions
            .iter()
            .filter(|r| r.violating_rounds > 0)
            .count();
        let mean_rounds = row
            .repetitions
            .iter()
            .map(|r| r.violating_rounds as f64)
            .sum::<f64>()
            / row.repetitions.len() as f64;
        out += &format!(
            "control: {violating} repetitions violating, each first at round ≤ {latest_first}; \
             on average {mean_rounds:.1} of {} rounds violating\n",
            row.setting.horizon
        );
    }
    println!("{out}");
}

/// Asserts the coverage criterion for the real bounds and that the control is caught.
fn assert_rows(rows: &[Row]) {
    for row in rows {
        if row.method == Method::NarrowAmm {
            assert!(
                row.lower() > DELTA,
                "the narrowed control was not caught: {} of {} violating, lower 99% limit {:.4}",
                row.violations(),
                row.repetitions.len(),
                row.lower()
            );
        } else {
            assert!(
                row.upper() <= DELTA,
                "{}: {} of {} repetitions violating, upper 99% limit {:.4} > δ = {DELTA}",
                row.method.label(),
                row.violations(),
                row.repetitions.len(),
                row.upper()
            );
        }
    }
}

fn experiment<K: Kernel + Copy + Send + Sync + 'static>(
    title: &str,
    kernel: K,
    cases: &[(Method, Setting)],
) {
    let rows: Vec<Row> = cases
        .iter()
        .map(|&(method, setting)| run(method, kernel, setting))
        .collect();
    print_table(title, &rows);
    assert_rows(&rows);
}

/// The kernel: Matérn 5/2 with ℓ = 0.2, one of Flynn & Reeb 2024 §7's settings (c = T^{−d/(2d+2ν)}).
fn kernel() -> Result<Matern> {
    Matern::new(2.5, 0.2)
}

/// Every bound at `setting`, the control at `control`.
fn all_bounds(setting: Setting, control: Setting) -> Vec<(Method, Setting)> {
    let mut cases: Vec<(Method, Setting)> = [
        Method::Ay,
        Method::Igp,
        Method::Amm,
        Method::Dmm,
        Method::Cmm,
        Method::Bkb,
        Method::EkUcb,
    ]
    .into_iter()
    .map(|m| (m, setting))
    .collect();
    cases.push((Method::NarrowAmm, control));
    cases
}

/// CI size: T = 100, R = 50 for every bound (0 violations give an upper limit of 0.088),
/// R = 20 for the control.
#[test]
fn bounds_cover_f_along_the_agent_trajectory() -> Result<()> {
    let setting = Setting {
        horizon: 100,
        repetitions: 50,
        grid: 10,
    };
    let control = Setting {
        repetitions: 20,
        ..setting
    };
    experiment(
        "coverage, CI size (Matérn 5/2, ℓ = 0.2, d = 2, B = 10, σ = 0.1)",
        kernel()?,
        &all_bounds(setting, control),
    );
    Ok(())
}

/// The long version: T = 200, R = 100 (CMM-UCB: R = 50, T = 150).
#[test]
#[ignore = "slow: run with cargo test --release --all-features --test integration -- coverage:: --ignored"]
fn bounds_cover_f_along_the_agent_trajectory_long() -> Result<()> {
    let setting = Setting {
        horizon: 200,
        repetitions: 100,
        grid: 10,
    };
    let mut cases = all_bounds(
        setting,
        Setting {
            repetitions: 50,
            ..setting
        },
    );
    for (method, s) in &mut cases {
        if *method == Method::Cmm {
            *s = Setting {
                horizon: 150,
                repetitions: 50,
                grid: 10,
            };
        }
    }
    experiment(
        "coverage, long (Matérn 5/2, ℓ = 0.2, d = 2, B = 10, σ = 0.1)",
        kernel()?,
        &cases,
    );
    Ok(())
}

/// The adaptive scale (no c given: AMM-UCB, DMM-UCB and CMM-UCB choose c from the grid
/// 10^{−j/2}, j = 0…8, paying a union bound): T = 200, R = 50 each (CMM-UCB: T = 150).
#[test]
#[ignore = "slow: run with cargo test --release --all-features --test integration -- coverage::adaptive --ignored"]
fn adaptive_scale_bounds_cover_f_along_the_agent_trajectory() -> Result<()> {
    let setting = Setting {
        horizon: 200,
        repetitions: 50,
        grid: 10,
    };
    let cmm = Setting {
        horizon: 150,
        ..setting
    };
    experiment(
        "coverage, adaptive c (Matérn 5/2, ℓ = 0.2, d = 2, B = 10, σ = 0.1)",
        kernel()?,
        &[
            (Method::AmmAdaptive, setting),
            (Method::DmmAdaptive, setting),
            (Method::CmmAdaptive, cmm),
        ],
    );
    Ok(())
}
