//! How much of a pruned argmax's work two upper bounds on the UCB could skip, even knowing the
//! maximum in advance: `cargo run --release --example pruning_floor [-- ℓ ν SEED]` (default
//! 0.5 2.5 1: Matérn 5/2 with ℓ = 0.5 in [0, 1]³, 100 fresh arms per round, Flynn & Reeb's
//! Table 1 problem and parameters, T = 1000).
//!
//! Along one run each of AMM-, AY- and IGP-UCB, at t = 300, 600 and 900, a dense reference
//! (nalgebra's Cholesky factor of K_t + aI, w = L⁻¹y, v(x) = L⁻¹k_t(x)) gives every arm's exact
//! U(x) = vᵀw + β √(k(x, x) − ‖v‖²) and their maximum U*. After the first r rows of v an arm
//! can be dropped once an upper bound on its U falls below U*; two such bounds, with
//! R_r = k(x, x) − ‖v_{≤r}‖²:
//!
//! - **exact mean** (what `ExactPosterior::argmax_upper` uses): μ(x) + β √R_r. The mean costs
//!   every kernel value k(x, x_i), i ≤ t, and α = L⁻ᵀw (one back substitution per query).
//! - **α-free**: v_{≤r}ᵀw_{≤r} + √(R_r (‖w_{>r}‖² + β²)). The unsolved part of the mean is at
//!   most ‖w_{>r}‖ ‖v_{>r}‖ (Cauchy–Schwarz), ‖v_{>r}‖² + ρ² = R_r, and maximising
//!   ‖w_{>r}‖ s + β √(R_r − s²) over s gives the square root. It needs only the first r kernel
//!   values of a dropped arm, and no α.
//!
//! Rows are checked at r = 32, 64, 96, 128 and then every 128, as the crate's pruning does.
//! Printed per bound: the arms still in play after r rows, the kernel evaluations, the
//! multiply-adds of the forward substitutions (r²/2 per arm dropped after r rows, t²/2 per arm
//! never dropped), and the cost of one kernel evaluation, in multiply-adds, above which the
//! α-free bound would do less work in all (counting the back substitution for α, t²/2, and
//! the means, t per arm, on the exact-mean side), with that cost measured on this machine (run
//! it with `RAYON_NUM_THREADS=1` for one core).
//!
//! Then two bounds from a q-dimensional projection of the data, which the crate does not use
//! yet. For any t × q matrix P the variance given Pᵀy, k(x, x) − kᵀP (Pᵀ(K + aI)P)⁻¹ Pᵀk (the
//! Gaussian model's posterior given Pᵀy; Rasmussen & Williams 2006, §2.2), is at least the
//! variance given y, since Pᵀy is a function of y; so μ(x) + β times its square root bounds
//! U(x). With Z q observations spread out by farthest-point sampling: **cells**, P the
//! indicators of Z's Voronoi cells (Pᵀy sums the targets of each cell; Pᵀk costs t additions
//! per arm, and Pᵀ(K + aI)P ⪰ a·diag(cell sizes) is well conditioned), and **Nyström**,
//! P = K_{X,Z} (t·q multiply-adds per arm; Pᵀ(K + aI)P can be singular in double precision,
//! shown as —). Printed: the arms each leaves in play.

use std::time::Instant;

use kernel_bandits::Result;
use kernel_bandits::prelude::*;
use nalgebra::DVector;

const HORIZON: usize = 1000;
const CHECKS: [usize; 3] = [300, 600, 900];
const SHOWN: [usize; 4] = [32, 128, 256, 512];

/// Rows after which the arms are tested: 32, 64, 96, 128, then every 128, and t.
fn row_checks(t: usize) -> Vec<usize> {
    let mut rows: Vec<usize> = [32, 64, 96].into_iter().filter(|&r| r < t).collect();
    rows.extend((128..t).step_by(128));
    rows.push(t);
    rows
}

/// Work of one bound over one query: arms alive after each checked row count, kernel
/// evaluations and forward-substitution multiply-adds.
#[derive(Default)]
struct Work {
    alive: Vec<usize>,
    kernel: f64,
    solves: f64,
}

impl Work {
    fn new(checks: usize) -> Self {
        Self {
            alive: vec![0; checks],
            ..Self::default()
        }
    }

    /// Records an arm first dropped after `dropped` rows (`None`: never), out of `checks`.
    fn record(&mut self, checks: &[usize], dropped: Option<usize>, kernel_evals: usize) {
        let t = *checks.last().expect("at least one check");
        for (alive, &r) in self.alive.iter_mut().zip(checks) {
            *alive += usize::from(dropped.is_none_or(|d| d > r));
        }
        let last = dropped.unwrap_or(t);
        self.kernel += kernel_evals as f64;
        self.solves += (last * last) as f64 / 2.0;
    }
}

/// The analysis of one query of `posterior` with multiplier `beta` over `arms`.
fn analyse<K: Kernel>(name: &str, posterior: &ExactPosterior<K>, beta: f64, arms: &Points<'_>) {
    let t = posterior.len();
    let a = posterior.regularisers().next().expect("one regulariser");
    let kernel = posterior.kernel();
    let mut gram = posterior.kernel_matrix();
    for i in 0..t {
        gram[(i, i)] += a;
    }
    let l = gram
        .clone()
        .cholesky()
        .expect("K + aI is positive definite")
        .l();
    let w = l
        .solve_lower_triangular(&DVector::from_column_slice(posterior.targets()))
        .expect("non-singular");
    // ‖w_{>r}‖² for every r.
    let mut tail = vec![0.0; t + 1];
    for i in (0..t).rev() {
        tail[i] = tail[i + 1] + w[i] * w[i];
    }
    let mut scratch = vec![0.0; arms.dim()];
    let cross: Vec<DVector<f64>> = (0..arms.len())
        .map(|j| {
            let x = arms.point(j, &mut scratch);
            DVector::from_fn(t, |i, _| kernel.eval(posterior.input(i), x))
        })
        .collect();
    let columns: Vec<(DVector<f64>, f64)> = cross
        .iter()
        .enumerate()
        .map(|(j, k)| {
            let v = l.solve_lower_triangular(k).expect("non-singular");
            (v, kernel.eval_diag(arms.point(j, &mut scratch)))
        })
        .collect();
    let means: Vec<f64> = columns.iter().map(|(v, _)| v.dot(&w)).collect();
    let priors: Vec<f64> = columns.iter().map(|(_, prior)| *prior).collect();
    let best = columns
        .iter()
        .zip(&means)
        .map(|((v, prior), mean)| mean + beta * (prior - v.norm_squared()).max(0.0).sqrt())
        .fold(f64::NEG_INFINITY, f64::max);
    let checks = row_checks(t);
    let mut exact = Work::new(checks.len());
    let mut alpha_free = Work::new(checks.len());
    for ((v, prior), &mean) in columns.iter().zip(&means) {
        let prior = *prior;
        let (mut explained, mut partial, mut row) = (0.0, 0.0, 0);
        let (mut dropped_exact, mut dropped_free) = (None, None);
        for &r in &checks[..checks.len() - 1] {
            while row < r {
                explained += v[row] * v[row];
                partial += v[row] * w[row];
                row += 1;
            }
            let left = (prior - explained).max(0.0);
            if dropped_exact.is_none() && mean + beta * left.sqrt() < best {
                dropped_exact = Some(r);
            }
            if dropped_free.is_none() && partial + (left * (tail[r] + beta * beta)).sqrt() < best {
                dropped_free = Some(r);
            }
        }
        exact.record(&checks, dropped_exact, t);
        alpha_free.record(&checks, dropped_free, dropped_free.unwrap_or(t));
    }
    let shown = |work: &Work| {
        checks
            .iter()
            .zip(&work.alive)
            .filter(|(r, _)| SHOWN.contains(r))
            .map(|(r, n)| format!("{n:>3} after {r:>3}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let m = arms.len() as f64;
    let saved = (t * t) as f64 / 2.0 + t as f64 * m;
    let break_even =
        (alpha_free.solves - exact.solves - saved) / (exact.kernel - alpha_free.kernel);
    println!(
        "{name:>3} t = {t}: a = {a:.3}, β = {beta:.2}, ‖w‖ = {:.2}, ‖w_(>128)‖ = {:.2}",
        tail[0].sqrt(),
        tail[128.min(t)].sqrt()
    );
    for (label, work) in [("exact mean", &exact), ("α-free", &alpha_free)] {
        println!(
            "    {label:<10}  in play: {}; kernel {:.2e}, solves {:.2e} multiply-adds",
            shown(work),
            work.kernel,
            work.solves
        );
    }
    println!(
        "    α-free pays if one kernel evaluation costs more than {break_even:.0} multiply-adds; \
         measured here: {:.0}",
        kernel_cost(posterior, arms)
    );
    let query = Query {
        gram: &gram,
        cross: &cross,
        means: &means,
        priors: &priors,
        beta,
        best,
    };
    for (label, nystrom) in [("cells", false), ("Nyström", true)] {
        let line: Vec<String> = SUBSPACES
            .iter()
            .filter(|&&q| q < t)
            .map(|&q| {
                let centres = farthest_points(posterior, q);
                let p = if nystrom {
                    nystrom_directions(posterior, &centres)
                } else {
                    cell_indicators(posterior, &centres)
                };
                query.in_play(&p).map_or_else(
                    || format!("  — with q = {q}"),
                    |n| format!("{n:>3} with q = {q}"),
                )
            })
            .collect();
        println!("    {label:<10}  in play: {}", line.join(", "));
    }
}

/// Sizes q of the subspaces tried.
const SUBSPACES: [usize; 3] = [64, 128, 256];

/// One query's exact quantities, for the subspace bounds.
struct Query<'a> {
    /// K_t + aI.
    gram: &'a nalgebra::DMatrix<f64>,
    /// k_t(x) per arm.
    cross: &'a [DVector<f64>],
    means: &'a [f64],
    priors: &'a [f64],
    beta: f64,
    /// max_x U(x).
    best: f64,
}

impl Query<'_> {
    /// The arms whose bound from the observations' projections Pᵀy stays ≥ max U: the variance
    /// given Pᵀy, k(x, x) − kᵀP (Pᵀ(K + aI)P)⁻¹ Pᵀk, is at least the variance given y (a
    /// linear function of the data carries no more information), for any t × q matrix P.
    /// `None` if Pᵀ(K + aI)P is not positive definite in double precision.
    fn in_play(&self, p: &nalgebra::DMatrix<f64>) -> Option<usize> {
        let projected = p.transpose() * self.gram * p;
        let factor = projected.cholesky()?.l();
        let count = (0..self.cross.len())
            .filter(|&j| {
                let s = factor
                    .solve_lower_triangular(&(p.transpose() * &self.cross[j]))
                    .expect("non-singular");
                let left = (self.priors[j] - s.norm_squared()).max(0.0);
                self.means[j] + self.beta * left.sqrt() >= self.best
            })
            .count();
        Some(count)
    }
}

/// q observations spread out by farthest-point sampling (from the first).
fn farthest_points<K: Kernel>(posterior: &ExactPosterior<K>, q: usize) -> Vec<usize> {
    let t = posterior.len();
    let distance = |i: usize, j: usize| squared_distance(posterior, i, j);
    let mut centres = vec![0];
    let mut nearest: Vec<f64> = (0..t).map(|i| distance(i, 0)).collect();
    while centres.len() < q.min(t) {
        let far = (0..t)
            .max_by(|&i, &j| nearest[i].total_cmp(&nearest[j]))
            .expect("t > 0");
        centres.push(far);
        for (i, d) in nearest.iter_mut().enumerate() {
            *d = d.min(distance(i, far));
        }
    }
    centres
}

/// ‖xᵢ − xⱼ‖² between two observations.
fn squared_distance<K: Kernel>(posterior: &ExactPosterior<K>, i: usize, j: usize) -> f64 {
    let (x, y) = (posterior.input(i), posterior.input(j));
    x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum()
}

/// P[i, c] = 1 if observation i is nearest to centre c (its Voronoi cell): Pᵀy sums the
/// targets of each cell, and Pᵀk costs t additions per arm.
fn cell_indicators<K: Kernel>(
    posterior: &ExactPosterior<K>,
    centres: &[usize],
) -> nalgebra::DMatrix<f64> {
    let t = posterior.len();
    let distance = |i: usize, c: usize| squared_distance(posterior, i, centres[c]);
    let cell: Vec<usize> = (0..t)
        .map(|i| {
            (0..centres.len())
                .min_by(|&u, &v| distance(i, u).total_cmp(&distance(i, v)))
                .expect("a centre")
        })
        .collect();
    nalgebra::DMatrix::from_fn(t, centres.len(), |i, c| f64::from(u8::from(cell[i] == c)))
}

/// P = K_{X,Z} for the centres Z (Nyström's directions): Pᵀk costs t·q per arm.
fn nystrom_directions<K: Kernel>(
    posterior: &ExactPosterior<K>,
    centres: &[usize],
) -> nalgebra::DMatrix<f64> {
    nalgebra::DMatrix::from_fn(posterior.len(), centres.len(), |i, c| {
        posterior
            .kernel()
            .eval(posterior.input(i), posterior.input(centres[c]))
    })
}

/// One kernel evaluation's time over one multiply-add's in the forward substitution of all
/// `arms` at once (`ExactPosterior::evaluate`: t·m kernel values, then t²m/2 multiply-adds),
/// the fastest of 20 repetitions of each.
fn kernel_cost<K: Kernel>(posterior: &ExactPosterior<K>, arms: &Points<'_>) -> f64 {
    let (t, m) = (posterior.len(), arms.len());
    let mut scratch = vec![0.0; arms.dim()];
    let flat: Vec<f64> = (0..m)
        .flat_map(|j| arms.point(j, &mut scratch).to_vec())
        .collect();
    let mut row = vec![0.0; m];
    let (mut kernel, mut evaluate) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..20 {
        let start = Instant::now();
        for i in 0..t {
            posterior
                .kernel()
                .eval_rows(&flat, posterior.input(i), &mut row);
            std::hint::black_box(&row);
        }
        kernel = kernel.min(start.elapsed().as_secs_f64());
        let start = Instant::now();
        std::hint::black_box(posterior.evaluate(arms).expect("a valid query"));
        evaluate = evaluate.min(start.elapsed().as_secs_f64());
    }
    let per_kernel = kernel / (t * m) as f64;
    let per_madd = (evaluate - kernel) / ((t * t) as f64 / 2.0 * m as f64);
    per_kernel / per_madd
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |default: f64| {
        args.next()
            .map_or(default, |s| s.parse().expect("a number"))
    };
    let (lengthscale, nu, seed) = (next(0.5), next(2.5), next(1.0) as u64);
    let kernel = Matern::new(nu, lengthscale)?;
    let config = SyntheticConfig {
        dim: 3,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, seed)?;
    let params = BoundParams::paper_defaults(&kernel, 3, HORIZON);
    println!(
        "Matérn ν = {nu}, ℓ = {lengthscale}, seed {seed}, {} arms per round",
        config.arms
    );
    macro_rules! run {
        ($name:expr, $bound:expr) => {{
            let mut agent = UcbAgent::new($bound);
            for t in 0..=*CHECKS.last().expect("checks") {
                let round = problem.round(t);
                if CHECKS.contains(&t) {
                    let bound = agent.bound();
                    analyse($name, bound.posterior(), bound.width(), &round.arms());
                }
                let i = agent.select(&round.arms())?;
                agent.update(round.arm(i), round.values()[i] + round.noise())?;
            }
        }};
    }
    run!("amm", Amm::new(kernel, params)?);
    run!("ay", Ay::new(kernel, params)?);
    run!("igp", Igp::new(kernel, params)?);
    Ok(())
}
