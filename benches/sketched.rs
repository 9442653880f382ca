//! UCB rounds (select over a fixed set of 1000 arms, then update) for the sketched bounds
//! BKB, BBKB (Calandriello et al. 2020, batch threshold C̃ = 10) and EK-UCB at
//! t ∈ {1000, 10 000}: d = 3, RBF ℓ = 0.5, λ = 1, fixed β̃ = 1 (the Calandriello et al. (2019)
//! and 003's practice), BKB's q̄ = 2, EK-UCB's μ = λ and γ = 1. The claim to check: once the
//! dictionary has settled, the cost of a round does not grow with t.
//!
//! The state is built once per (bound, t) by t rounds of the UCB agent itself (its own
//! trajectory, as in use). One measured iteration is a block of 100 consecutive rounds from a
//! fresh clone of that state (cloning is not timed): BKB's dictionary is redrawn every round
//! and its size fluctuates (e.g. 4 to 30 anchors), so a single round from one state would
//! measure one draw; the block averages over them while staying within [t, t + 100].
//! Divide the reported time by 100 for the time per round.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const DIM: usize = 3;
const ARMS: usize = 1000;
/// Rounds per measured iteration.
const ROUNDS: usize = 100;

fn reward(x: &[f64; DIM], rng: &mut ChaCha8Rng) -> f64 {
    (6.0 * x[0]).sin() * x[1] + x[2] + 0.1 * (rng.random::<f64>() - 0.5)
}

fn params() -> SketchParams {
    SketchParams::new()
        .lambda(1.0)
        .beta(1.0)
        .qbar(2.0)
        .gamma(1.0)
}

/// Times one select + update of `bound`'s UCB agent after `t` rounds of its own play.
fn bench_bound<B: ConfidenceBound + Clone>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    bound: B,
    t: usize,
    arms: &[[f64; DIM]],
    rng: &mut ChaCha8Rng,
) -> B {
    let mut agent = UcbAgent::new(bound);
    for _ in 0..t {
        let i = agent.select(arms).unwrap();
        agent.update(&arms[i], reward(&arms[i], rng)).unwrap();
    }
    let noise: Vec<f64> = (0..ROUNDS)
        .map(|_| 0.1 * (rng.random::<f64>() - 0.5))
        .collect();
    group.bench_with_input(BenchmarkId::new(name, t), &t, |b, _| {
        b.iter_batched_ref(
            || agent.clone(),
            |agent| {
                for e in &noise {
                    let i = agent.select(arms).unwrap();
                    let x = &arms[i];
                    agent
                        .update(x, (6.0 * x[0]).sin() * x[1] + x[2] + e)
                        .unwrap();
                }
                black_box(agent.bound().len())
            },
            BatchSize::PerIteration,
        )
    });
    agent.into_bound()
}

fn sketched_rounds(c: &mut Criterion) {
    let mut group = c.benchmark_group("sketched_100_rounds_1000_fixed_arms");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let arms: Vec<[f64; DIM]> = (0..ARMS)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    for t in [1000usize, 10_000] {
        let kernel = Rbf::new(0.5).unwrap();
        let bkb = Bkb::new(kernel, params(), 1).unwrap();
        let bkb = bench_bound(&mut group, "bkb", bkb, t, &arms, &mut rng);
        let bbkb = Bkb::new(kernel, params().batch_threshold(10.0), 1).unwrap();
        let bbkb = bench_bound(&mut group, "bbkb_c10", bbkb, t, &arms, &mut rng);
        let ek = EkUcb::new(kernel, params(), 1).unwrap();
        let ek = bench_bound(&mut group, "ek_ucb", ek, t, &arms, &mut rng);
        eprintln!(
            "t = {t}: dictionary sizes BKB {} (of {} distinct arms played), BBKB {} \
             ({} resamplings), EK-UCB {}",
            bkb.dictionary_size(),
            bkb.posterior().distinct(),
            bbkb.dictionary_size(),
            bbkb.resamplings(),
            ek.dictionary_size()
        );
    }
    group.finish();
}

criterion_group!(benches, sketched_rounds);
criterion_main!(benches);
