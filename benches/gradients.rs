//! Gradients of CMM-UCB and of the sketched bounds BKB and EK-UCB at one point, next to one
//! `evaluate` of the same point (what a gradient costs beyond the value), and the sketched
//! bounds' pending variance (building it for 10 pending points, then one query with its
//! gradient). d = 3, RBF ℓ = 0.5, uniform points; CMM at t ∈ {100, 500} (its cached
//! eigendecomposition built before timing), the sketched bounds at t ∈ {1000, 5000} with
//! λ = 1, β̃ = 1, q̄ = 2, γ = 1.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const DIM: usize = 3;

fn point(rng: &mut ChaCha8Rng) -> [f64; DIM] {
    [rng.random(), rng.random(), rng.random()]
}

fn reward(x: &[f64; DIM]) -> f64 {
    (6.0 * x[0]).sin() * x[1] + x[2]
}

fn fill<B: ConfidenceBound>(bound: &mut B, t: usize, rng: &mut ChaCha8Rng) {
    for _ in 0..t {
        let x = point(rng);
        bound.observe(&x, reward(&x)).unwrap();
    }
}

fn bench_one<B: ConfidenceBound>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    bound: &B,
    t: usize,
    x: [f64; DIM],
) {
    // Builds any cached state (CMM's eigendecomposition) before timing.
    bound.gradient(&x).unwrap();
    group.bench_with_input(
        BenchmarkId::new(format!("{name}/evaluate"), t),
        &t,
        |b, _| b.iter(|| black_box(bound.bounds(&[x]).unwrap())),
    );
    group.bench_with_input(
        BenchmarkId::new(format!("{name}/gradient"), t),
        &t,
        |b, _| b.iter(|| black_box(bound.gradient(&x).unwrap())),
    );
    group.bench_with_input(
        BenchmarkId::new(format!("{name}/ucb_gradient"), t),
        &t,
        |b, _| b.iter(|| black_box(bound.ucb_gradient(&x).unwrap())),
    );
}

fn bench_pending<B: ConfidenceBound>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    bound: &B,
    t: usize,
    rng: &mut ChaCha8Rng,
) {
    let pending: Vec<[f64; DIM]> = (0..10).map(|_| point(rng)).collect();
    let x = point(rng);
    group.bench_with_input(
        BenchmarkId::new(format!("{name}/pending_10"), t),
        &t,
        |b, _| {
            b.iter(|| {
                black_box(
                    bound
                        .pending_variance(&pending.as_points().unwrap())
                        .unwrap(),
                )
            })
        },
    );
    let variance = bound
        .pending_variance(&pending.as_points().unwrap())
        .unwrap();
    group.bench_with_input(
        BenchmarkId::new(format!("{name}/pending_variance_gradient"), t),
        &t,
        |b, _| b.iter(|| black_box(variance.variance_gradient(&x).unwrap())),
    );
}

fn gradients(c: &mut Criterion) {
    let mut group = c.benchmark_group("gradients");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let kernel = Rbf::new(0.5).unwrap();
    for t in [100usize, 500] {
        let params = BoundParams::new()
            .sigma(0.1)
            .norm_bound(3.0)
            .delta(0.01)
            .scale(1.0);
        let mut cmm = Cmm::new(kernel, params).unwrap();
        fill(&mut cmm, t, &mut rng);
        let x = point(&mut rng);
        bench_one(&mut group, "cmm", &cmm, t, x);
    }
    let sketch = SketchParams::new()
        .lambda(1.0)
        .beta(1.0)
        .qbar(2.0)
        .gamma(1.0);
    for t in [1000usize, 5000] {
        let mut bkb = Bkb::new(kernel, sketch, 1).unwrap();
        fill(&mut bkb, t, &mut rng);
        let x = point(&mut rng);
        bench_one(&mut group, "bkb", &bkb, t, x);
        bench_pending(&mut group, "bkb", &bkb, t, &mut rng);
        let mut ek = EkUcb::new(kernel, sketch, 1).unwrap();
        fill(&mut ek, t, &mut rng);
        bench_one(&mut group, "ek-ucb", &ek, t, x);
        bench_pending(&mut group, "ek-ucb", &ek, t, &mut rng);
    }
    group.finish();
}

criterion_group!(benches, gradients);
criterion_main!(benches);
