//! Continuous selection and batches (issue: continuous domains, batches, pending evaluations):
//! `select_in` on [0, 1]³ and [0, 1]⁶ and `select_batch` over 100 fresh arms, for AMM and DMM
//! at t ∈ {100, 1000} (Matérn 5/2 with ℓ = 0.5, the parameters of Flynn & Reeb 2024 §7), and
//! one UCB gradient (d = 3).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::bound::AnyBound;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const DIM: usize = 3;

fn bound(name: &str, d: usize) -> AnyBound<Matern> {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let params = BoundParams::paper_defaults(&kernel, d, 1000);
    match name {
        "amm" => AnyBound::Amm(Amm::new(kernel, params).unwrap()),
        "dmm" => AnyBound::Dmm(Dmm::new(kernel, params).unwrap()),
        _ => unreachable!("unknown bound {name}"),
    }
}

/// An agent after t observations of a smooth function at uniform points of [0, 1]³.
fn agent(name: &str, t: usize) -> UcbAgent<AnyBound<Matern>> {
    agent_in(name, t, DIM)
}

/// An agent after t observations of a smooth function at uniform points of [0, 1]^d (d ≥ 3).
fn agent_in(name: &str, t: usize, d: usize) -> UcbAgent<AnyBound<Matern>> {
    let mut rng = ChaCha8Rng::seed_from_u64(t as u64);
    let mut agent = UcbAgent::new(bound(name, d));
    for _ in 0..t {
        let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
        let y = (4.0 * x[0]).sin() + x[1] * x[2] + 0.1 * rng.random::<f64>();
        agent.update(&x, y).unwrap();
    }
    agent
}

fn continuous(c: &mut Criterion) {
    let mut group = c.benchmark_group("select_in");
    group.sample_size(10);
    for d in [3, 6] {
        let domain = BoxDomain::unit(d).unwrap();
        for t in [100, 1000] {
            for name in ["amm", "dmm"] {
                let mut agent = agent_in(name, t, d);
                // d = 3 keeps the names of the earlier runs.
                let id = if d == DIM {
                    name.to_string()
                } else {
                    format!("{name}/d{d}")
                };
                group.bench_with_input(BenchmarkId::new(id, t), &t, |b, _| {
                    b.iter(|| black_box(agent.select_in(&domain).unwrap()))
                });
            }
        }
    }
    group.finish();

    let mut group = c.benchmark_group("ucb_gradient");
    for t in [100, 1000] {
        for name in ["amm", "dmm"] {
            let agent = agent(name, t);
            group.bench_with_input(BenchmarkId::new(name, t), &t, |b, _| {
                b.iter(|| black_box(agent.bound().ucb_gradient(&[0.3, 0.6, 0.2]).unwrap()))
            });
        }
    }
    group.finish();
}

fn batches(c: &mut Criterion) {
    let mut group = c.benchmark_group("select_batch_100_arms");
    group.sample_size(10);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let arms: Vec<[f64; DIM]> = (0..100)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    for t in [100, 1000] {
        for name in ["amm", "dmm"] {
            for q in [1, 4, 16] {
                let agent = agent(name, t);
                group.bench_with_input(BenchmarkId::new(format!("{name}/q{q}"), t), &t, |b, _| {
                    b.iter_batched(
                        || agent.clone(),
                        |mut a| black_box(a.select_batch(&arms, q).unwrap()),
                        criterion::BatchSize::LargeInput,
                    )
                });
            }
        }
    }
    group.finish();

    let domain = BoxDomain::unit(DIM).unwrap();
    let mut group = c.benchmark_group("select_batch_in");
    group.sample_size(10);
    for name in ["amm", "dmm"] {
        let agent = agent(name, 100);
        group.bench_function(BenchmarkId::new(format!("{name}/q4"), 100), |b| {
            b.iter_batched(
                || agent.clone(),
                |mut a| black_box(a.select_batch_in(&domain, 4).unwrap()),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, continuous, batches);
criterion_main!(benches);
