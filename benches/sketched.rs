//! One UCB round (select over a fixed set of 1000 arms, then update) for the sketched bounds
//! BKB and EK-UCB at t ∈ {1000, 10 000}: d = 3, RBF ℓ = 0.5, λ = 1, fixed β̃ = 1 (paper 002's
//! and 003's practice), BKB's q̄ = 2, EK-UCB's μ = λ and γ = 1. The claim to check: once the
//! dictionary has settled, the cost of a round does not grow with t.
//!
//! The state is built once per (bound, t) by t updates at uniformly random arms of the set;
//! the measured rounds then continue from there (sketched bounds cannot be truncated for
//! free), so t grows by the number of measured rounds, printed at the end of each case.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const DIM: usize = 3;
const ARMS: usize = 1000;

fn reward(x: &[f64; DIM], rng: &mut ChaCha8Rng) -> f64 {
    (6.0 * x[0]).sin() * x[1] + x[2] + 0.1 * (rng.random::<f64>() - 0.5)
}

fn make_bound(name: &str) -> Box<dyn ConfidenceBound> {
    let kernel = Rbf::new(0.5).unwrap();
    let params = SketchParams::new()
        .lambda(1.0)
        .beta(1.0)
        .qbar(2.0)
        .gamma(1.0);
    match name {
        "bkb" => Box::new(Bkb::new(kernel, params, 1).unwrap()),
        "ek_ucb" => Box::new(EkUcb::new(kernel, params, 1).unwrap()),
        _ => unreachable!("unknown bound {name}"),
    }
}

fn sketched_rounds(c: &mut Criterion) {
    let mut group = c.benchmark_group("sketched_select_update_1000_fixed_arms");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let arms: Vec<[f64; DIM]> = (0..ARMS)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    for t in [1000usize, 10_000] {
        for name in ["bkb", "ek_ucb"] {
            let mut agent = UcbAgent::new(make_bound(name));
            for _ in 0..t {
                let x = &arms[rng.random_range(0..ARMS)];
                agent.update(x, reward(x, &mut rng)).unwrap();
            }
            group.bench_with_input(BenchmarkId::new(name, t), &t, |b, _| {
                b.iter(|| {
                    let i = agent.select(&arms).unwrap();
                    agent.update(&arms[i], reward(&arms[i], &mut rng)).unwrap();
                    black_box(i)
                })
            });
            eprintln!(
                "{name}: t = {t} → {} after the measured rounds",
                agent.bound().len()
            );
        }
    }
    group.finish();
}

criterion_group!(benches, sketched_rounds);
criterion_main!(benches);
