//! Hyperparameter fitting (`kernel_bandits::hyper`), d = 3, Matérn 5/2, uniform points of
//! [0, 1]³ with targets sin(3x₀) + x₁x₂ + 0.1ε: the log marginal likelihood with its gradient
//! (one Cholesky, K⁻¹ by triangular solves, t²/2 kernel gradients) at t = 50, 200, 500, and
//! one full `fit_hyperparameters` (shared ℓ and σ fitted, default options: MAP, 12 Sobol
//! starts besides the deterministic ones, 2 refinements, a 300-row screen) at t = 100, 300 and
//! 1000, and the same with plain maximum likelihood at t = 100 and 300.
//! `python/bench/fit_vs_botorch.py` compares the fit with BoTorch's.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::hyper::{
    FitOptions, FittedKernel, KernelFamily, Objective, fit_hyperparameters,
    log_marginal_likelihood_gradient,
};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

const DIM: usize = 3;

fn data(t: usize) -> (Vec<[f64; DIM]>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let xs: Vec<[f64; DIM]> = (0..t)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    let ys = xs
        .iter()
        .map(|x| {
            let e: f64 = rng.sample(StandardNormal);
            (3.0 * x[0]).sin() + x[1] * x[2] + 0.1 * e
        })
        .collect();
    (xs, ys)
}

fn likelihood_gradient(c: &mut Criterion) {
    let kernel = FittedKernel::shared(KernelFamily::Matern { nu: 2.5 }, 0.5, 1.0).unwrap();
    let mut group = c.benchmark_group("hyper_loglik_gradient_matern2.5_d3");
    for t in [50, 200, 500] {
        let (xs, ys) = data(t);
        group.bench_with_input(BenchmarkId::from_parameter(t), &t, |b, _| {
            b.iter(|| black_box(log_marginal_likelihood_gradient(&kernel, 0.1, &xs, &ys).unwrap()))
        });
    }
    group.finish();
}

fn fit(c: &mut Criterion) {
    let options = FitOptions::new().family(KernelFamily::Matern { nu: 2.5 });
    let mut group = c.benchmark_group("hyper_fit_matern2.5_d3");
    group.sample_size(10);
    for t in [100, 300, 1000] {
        let (xs, ys) = data(t);
        group.bench_with_input(BenchmarkId::new("map", t), &t, |b, _| {
            b.iter(|| black_box(fit_hyperparameters(&options, &xs, &ys).unwrap()))
        });
    }
    let ml = options.objective(Objective::MaximumLikelihood);
    for t in [100, 300] {
        let (xs, ys) = data(t);
        group.bench_with_input(BenchmarkId::new("ml", t), &t, |b, _| {
            b.iter(|| black_box(fit_hyperparameters(&ml, &xs, &ys).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, likelihood_gradient, fit);
criterion_main!(benches);
