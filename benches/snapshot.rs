//! Saving and restoring (feature `serde`), and the numerical-health check: a DMM-UCB agent
//! (five Cholesky factors) after t = 1000 observations in d = 3, Matérn 5/2 ℓ = 0.5.
//! `cargo bench --features serde --bench snapshot`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn agent(t: usize) -> UcbAgent<Dmm<Matern>> {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let params = BoundParams::paper_defaults(&kernel, 3, t);
    let mut agent = UcbAgent::new(Dmm::new(kernel, params).unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let xs: Vec<[f64; 3]> = (0..t)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    let ys: Vec<f64> = xs
        .iter()
        .map(|x| (3.0 * x[0]).sin() + x[1] * x[2])
        .collect();
    agent
        .bound_mut()
        .observe_many(&xs.as_points().unwrap(), &ys)
        .unwrap();
    agent
}

fn snapshots(c: &mut Criterion) {
    let agent = agent(1000);
    let bytes = agent.to_bytes().unwrap();
    let json = agent.to_json().unwrap();
    eprintln!(
        "snapshot of DMM at t = 1000: {} bytes binary, {} bytes JSON",
        bytes.len(),
        json.len()
    );
    let mut group = c.benchmark_group("snapshot_dmm_t1000");
    group.sample_size(20);
    group.bench_function("to_bytes", |b| {
        b.iter(|| black_box(agent.to_bytes().unwrap()))
    });
    group.bench_function("from_bytes", |b| {
        b.iter(|| black_box(UcbAgent::<Dmm<Matern>>::from_bytes(&bytes).unwrap()))
    });
    group.bench_function("to_json", |b| {
        b.iter(|| black_box(agent.to_json().unwrap()))
    });
    group.bench_function("from_json", |b| {
        b.iter(|| black_box(UcbAgent::<Dmm<Matern>>::from_json(&json).unwrap()))
    });
    group.finish();
}

/// One residual check (run every 256 changes), of the last row (the costliest a scheduled check
/// can draw), against one append, on the same posterior.
fn health(c: &mut Criterion) {
    let agent = agent(1000);
    let mut group = c.benchmark_group("health_dmm_t1000");
    group.sample_size(20);
    group.bench_function("check_health", |b| {
        b.iter_batched_ref(
            || agent.bound().posterior().clone(),
            |posterior| black_box(posterior.diagnostics().residual(posterior.len() - 1)),
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function("observe", |b| {
        b.iter_batched_ref(
            || agent.bound().posterior().clone(),
            |posterior| posterior.observe(&[0.3, 0.6, 0.1], 0.2).unwrap(),
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, snapshots, health);
criterion_main!(benches);
