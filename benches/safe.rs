//! One SafeOpt step (`SafeAgent::next` + `update`) over 2 500 candidates (a 50 × 50 grid of
//! [0, 1]²) at t = 200, for each bound with a guarantee, after 200 SafeOpt steps on an RKHS
//! constraint of known norm (RBF ℓ = 0.2, σ = 0.05, B = 2, δ = 0.01); and one level-set
//! estimation step on the same candidates. Each sample clones the agent at t = 200 and takes
//! one step untimed (a clone's per-arm rows have no spare capacity, so its first update
//! reallocates them), then times its iterations as consecutive steps, as a user's loop runs
//! them: t runs from 201 to at most a few dozen more.

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::bound::{AnyBound, BoundConfig, BoundKind};
use kernel_bandits::prelude::*;
use kernel_bandits::safe::{LevelSetAgent, SafeAgent};

const SIDE: usize = 50;
const STEPS: usize = 200;

fn candidates() -> Vec<[f64; 2]> {
    let s = (SIDE - 1) as f64;
    (0..SIDE * SIDE)
        .map(|k| [(k / SIDE) as f64 / s, (k % SIDE) as f64 / s])
        .collect()
}

/// g = k(c, ·) + 0.6 k((0.2, 0.2), ·) − 0.8 k((0.1, 0.9), ·) with c = (0.5, 0.5); f = k((0.8, 0.8), ·).
fn g(kernel: &Rbf, x: &[f64]) -> f64 {
    kernel.eval(&[0.5, 0.5], x) + 0.6 * kernel.eval(&[0.2, 0.2], x)
        - 0.8 * kernel.eval(&[0.1, 0.9], x)
}

fn f(kernel: &Rbf, x: &[f64]) -> f64 {
    kernel.eval(&[0.8, 0.8], x)
}

/// Noise from a fixed sequence (a quasi-random ±σ), so that the bench needs no RNG state.
fn noise(step: usize) -> f64 {
    0.05 * ((step as f64 * 0.618_033_988_75).fract() * 2.0 - 1.0)
}

fn agent(kind: BoundKind) -> SafeAgent<AnyBound<Rbf>, AnyBound<Rbf>> {
    let kernel = Rbf::new(0.2).unwrap();
    let config = BoundConfig::new().params(
        BoundParams::new()
            .sigma(0.05)
            .norm_bound(2.0)
            .delta(0.01)
            .horizon(STEPS + 1),
    );
    let arms = candidates();
    let seed = (SIDE / 2) * SIDE + SIDE / 2;
    let mut agent = SafeAgent::new(
        kind.build(kernel, &config).unwrap(),
        vec![kind.build(kernel, &config).unwrap()],
        &[0.0],
        &arms,
        &[seed],
    )
    .unwrap();
    let start = Instant::now();
    for step in 0..STEPS {
        let c = agent.next().unwrap();
        let x = &arms[c.index];
        agent
            .update(
                c.index,
                f(&kernel, x) + noise(2 * step),
                &[g(&kernel, x) + noise(2 * step + 1)],
            )
            .unwrap();
    }
    eprintln!(
        "{kind:?}: {STEPS} steps in {:.2} s, {} of {} candidates certified safe",
        start.elapsed().as_secs_f64(),
        agent.safe_set().len(),
        arms.len()
    );
    agent
}

fn safeopt_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("safeopt_step_2500_candidates");
    group.sample_size(10);
    let kernel = Rbf::new(0.2).unwrap();
    for kind in BoundKind::VALID {
        let agent = agent(kind);
        let arms = candidates();
        let step = |a: &mut SafeAgent<AnyBound<Rbf>, AnyBound<Rbf>>, k: usize| {
            let c = a.next().unwrap();
            let x = &arms[c.index];
            a.update(
                c.index,
                f(&kernel, x) + noise(2 * k),
                &[g(&kernel, x) + noise(2 * k + 1)],
            )
            .unwrap();
        };
        group.bench_with_input(BenchmarkId::new(kind.to_string(), STEPS), &STEPS, |b, _| {
            b.iter_custom(|iters| {
                let mut a = agent.clone();
                step(&mut a, 2 * STEPS);
                let start = Instant::now();
                for k in 0..iters as usize {
                    step(&mut a, 2 * STEPS + 1 + k);
                }
                let elapsed = start.elapsed();
                black_box(a);
                elapsed
            })
        });
    }
    group.finish();
}

fn level_set_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("level_set_step_2500_candidates");
    group.sample_size(10);
    let kernel = Rbf::new(0.2).unwrap();
    let config =
        BoundConfig::new().params(BoundParams::new().sigma(0.05).norm_bound(2.0).delta(0.01));
    let arms = candidates();
    let mut agent = LevelSetAgent::new(
        BoundKind::Dmm.build(kernel, &config).unwrap(),
        &arms,
        0.3,
        0.05,
    )
    .unwrap();
    for step in 0..STEPS {
        let Some(c) = agent.next().unwrap() else {
            break;
        };
        agent
            .update(c.index, g(&kernel, &arms[c.index]) + noise(step))
            .unwrap();
    }
    let step = |a: &mut LevelSetAgent<AnyBound<Rbf>>, k: usize| {
        if let Some(c) = a.next().unwrap() {
            a.update(c.index, g(&kernel, &arms[c.index]) + noise(k))
                .unwrap();
        }
    };
    group.bench_function(BenchmarkId::new("dmm", agent.evaluations()), |b| {
        b.iter_custom(|iters| {
            let mut a = agent.clone();
            step(&mut a, STEPS);
            let start = Instant::now();
            for k in 0..iters as usize {
                step(&mut a, STEPS + 1 + k);
            }
            let elapsed = start.elapsed();
            black_box(a);
            elapsed
        })
    });
    group.finish();
}

criterion_group!(benches, safeopt_step, level_set_step);
criterion_main!(benches);
