//! The cost of learning B by refutation: one DMM-UCB select + update round (100 fresh arms,
//! d = 3, Matérn 5/2 with ℓ = 0.5) at t ∈ {200, 1000}, plain and wrapped in `AdaptiveNorm`,
//! whose only extra work is one `diagnostics()` (five R̃_a² from cached q_a and ld_a) per
//! observation.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const DIM: usize = 3;
const ARMS: usize = 100;

fn uniform_points(rng: &mut ChaCha8Rng, n: usize) -> Vec<[f64; DIM]> {
    (0..n)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect()
}

fn make_bound(wrapped: bool) -> Box<dyn ConfidenceBound> {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let params = BoundParams::paper_defaults(&kernel, DIM, 1000);
    let dmm = Dmm::new(kernel, params).unwrap();
    if wrapped {
        Box::new(AdaptiveNorm::new(dmm).unwrap())
    } else {
        Box::new(dmm)
    }
}

fn select_and_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("adaptive_dmm_select_update_100_arms");
    for t in [200, 1000] {
        for (name, wrapped) in [("dmm", false), ("adaptive-dmm", true)] {
            let mut rng = ChaCha8Rng::seed_from_u64(t as u64);
            let mut agent = UcbAgent::new(make_bound(wrapped));
            for x in uniform_points(&mut rng, t) {
                let y = (x[0] * 6.0).sin() + 0.1 * rng.random::<f64>();
                agent.update(&x, y).unwrap();
            }
            let arm_sets: Vec<Vec<[f64; DIM]>> =
                (0..16).map(|_| uniform_points(&mut rng, ARMS)).collect();
            let mut round = 0;
            group.bench_with_input(BenchmarkId::new(name, t), &t, |b, &t| {
                b.iter(|| {
                    let arms = &arm_sets[round % arm_sets.len()];
                    round += 1;
                    let i = agent.select(arms).unwrap();
                    agent.update(&arms[i], 0.5).unwrap();
                    // Forget the new point so every iteration runs at the same t.
                    agent.bound_mut().truncate(t);
                    black_box(i)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, select_and_update);
criterion_main!(benches);
