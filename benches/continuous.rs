//! Continuous maximisation: one PANOC refinement (`continuous::refine`) and a multi-start
//! `continuous::maximise` (256 space-filling starts, the best 8 refined) on a smooth test
//! function in d = 2 and 4 (a sum of four Gaussian bumps); and the search for the true optimum
//! of the continuous §7 problem of Flynn & Reeb (2024) (`env::ContinuousProblem`: 2¹⁵
//! space-filling points scored, the best 16 refined; RBF, ℓ = 0.2, 20 centres) in d = 2 and 4.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::Result;
use kernel_bandits::continuous::{BoxDomain, RefineOptions, maximise, refine};
use kernel_bandits::env::{ContinuousProblem, SyntheticConfig};
use kernel_bandits::kernel::Rbf;

/// f(x) = Σⱼ aⱼ exp(−‖x − cⱼ‖² / (2 · 0.04)) with four fixed centres, and its gradient.
fn bumps(x: &[f64]) -> Result<(f64, Vec<f64>)> {
    let d = x.len();
    let mut value = 0.0;
    let mut gradient = vec![0.0; d];
    for j in 0..4 {
        let height = 1.0 + 0.1 * j as f64;
        let centre = |i: usize| ((j * 7 + i * 3) % 10) as f64 / 10.0 + 0.05;
        let sq: f64 = (0..d).map(|i| (x[i] - centre(i)).powi(2)).sum();
        let e = height * (-sq / 0.08).exp();
        value += e;
        for (i, g) in gradient.iter_mut().enumerate() {
            *g -= e * (x[i] - centre(i)) / 0.04;
        }
    }
    Ok((value, gradient))
}

fn refinement(c: &mut Criterion) {
    let options = RefineOptions::default();
    let mut group = c.benchmark_group("continuous_refine");
    for d in [2, 4] {
        let domain = BoxDomain::unit(d).unwrap();
        let start = vec![0.5; d];
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, _| {
            b.iter(|| black_box(refine(&domain, &start, &mut bumps, &options).unwrap()))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("continuous_maximise_256_starts_8_refined");
    for d in [2, 4] {
        let domain = BoxDomain::unit(d).unwrap();
        let starts = domain.space_filling(256, 1);
        let values: Vec<f64> = starts.chunks(d).map(|x| bumps(x).unwrap().0).collect();
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, _| {
            b.iter(|| {
                black_box(maximise(&domain, &starts, &values, 8, &mut bumps, &options).unwrap())
            })
        });
    }
    group.finish();
}

fn optimum_search(c: &mut Criterion) {
    let mut group = c.benchmark_group("continuous_problem_optimum_search");
    group.sample_size(10);
    for d in [2, 4] {
        let config = SyntheticConfig {
            dim: d,
            ..SyntheticConfig::default()
        };
        let kernel = Rbf::new(0.2).unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, _| {
            b.iter(|| black_box(ContinuousProblem::new(kernel, config, 3).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, refinement, optimum_search);
criterion_main!(benches);
