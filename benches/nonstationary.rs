//! The non-stationary agents on Iwazaki & Takeno 2025 §6's 30 × 30 grid (SE, ℓ = 0.5): one SW-GP-UCB round
//! (select over the 900 arms, update, Cholesky downdate of the oldest point) with a full window
//! W ∈ {100, 200}, the downdate alone against a fresh factorisation of the window, and one
//! whole R-PERP interval of 1000 rounds (batch planning by incremental greedy variance,
//! elimination). Beside them, the tight exact bounds in the same wrappers: one SW-DMM round and
//! one SW-GP-UCB round with the data-dependent information gain (W = 173, the window of the
//! SE runs of `kbandit reproduce nonstationary`), and R-DMM over one restart interval H = 173.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::bound::{GpUcb, InformationGain};
use kernel_bandits::env::{DriftingProblem, unit_grid};
use kernel_bandits::nonstationary::{RPerp, RPerpParams, Restarting, SlidingWindow};
use kernel_bandits::prelude::*;

fn sliding_window(c: &mut Criterion) {
    let kernel = Rbf::new(0.5).unwrap();
    let arms = unit_grid(30);
    let problem = DriftingProblem::paper004(&kernel, 5000, 0.1, 1).unwrap();
    let mut group = c.benchmark_group("sliding_window_900_arms");
    for window in [100usize, 200] {
        let params = BoundParams::new().sigma(0.1).norm_bound(2.0).scale(1.0);
        let mut agent = SlidingWindow::new(Ay::new(kernel, params).unwrap(), window).unwrap();
        problem.run(&mut agent, window + 50).unwrap();
        let round = problem.round(window + 50);
        group.bench_with_input(
            BenchmarkId::new("select_update_downdate", window),
            &window,
            |b, _| {
                b.iter_batched_ref(
                    || agent.clone(),
                    |agent| {
                        let i = agent.select(&arms).unwrap();
                        agent.update(&arms[i], round.values[i]).unwrap();
                        black_box(i)
                    },
                    BatchSize::PerIteration,
                )
            },
        );
        let full = agent.agent().bound().posterior().clone();
        group.bench_with_input(BenchmarkId::new("downdate", window), &window, |b, _| {
            b.iter_batched_ref(
                || full.clone(),
                |posterior| posterior.remove_oldest(),
                BatchSize::PerIteration,
            )
        });
        group.bench_with_input(BenchmarkId::new("refactorise", window), &window, |b, _| {
            b.iter(|| {
                let mut fresh = ExactPosterior::new(kernel, &[0.01]).unwrap();
                for i in 1..full.len() {
                    fresh.observe(full.input(i), full.targets()[i]).unwrap();
                }
                black_box(fresh.len())
            })
        });
    }
    group.finish();
}

fn rperp_interval(c: &mut Criterion) {
    let kernel = Rbf::new(0.5).unwrap();
    let arms = unit_grid(30);
    let problem = DriftingProblem::paper004(&kernel, 5000, 0.1, 1).unwrap();
    let mut group = c.benchmark_group("r_perp_900_arms");
    group.sample_size(10);
    group.bench_function("interval_of_1000_rounds", |b| {
        b.iter(|| {
            let params = RPerpParams::new(1000)
                .norm_bound(2.0)
                .interval(1000)
                .width_scale(0.1);
            let mut agent = RPerp::new(kernel, &arms, params, 3).unwrap();
            black_box(problem.run(&mut agent, 1000).unwrap().total())
        })
    });
    group.finish();
}

fn tight_bounds(c: &mut Criterion) {
    let kernel = Rbf::new(0.5).unwrap();
    let arms = unit_grid(30);
    let problem = DriftingProblem::paper004(&kernel, 5000, 0.1, 1).unwrap();
    let window = 173;
    let params = BoundParams::new()
        .sigma(0.1)
        .norm_bound(2.0)
        .scale(1.0)
        .lambda(0.01);
    let mut group = c.benchmark_group("tight_bounds_900_arms");
    let round = problem.round(window + 50);
    let mut sw_dmm = SlidingWindow::new(Dmm::new(kernel, params).unwrap(), window).unwrap();
    problem.run(&mut sw_dmm, window + 50).unwrap();
    let gain = InformationGain::Data;
    let mut sw_data =
        SlidingWindow::new(GpUcb::new(kernel, params, gain).unwrap(), window).unwrap();
    problem.run(&mut sw_data, window + 50).unwrap();
    group.bench_function(BenchmarkId::new("sw_dmm_round", window), |b| {
        b.iter_batched_ref(
            || sw_dmm.clone(),
            |agent| {
                let i = agent.select(&arms).unwrap();
                agent.update(&arms[i], round.values[i]).unwrap();
                black_box(i)
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function(BenchmarkId::new("sw_gp_ucb_data_round", window), |b| {
        b.iter_batched_ref(
            || sw_data.clone(),
            |agent| {
                let i = agent.select(&arms).unwrap();
                agent.update(&arms[i], round.values[i]).unwrap();
                black_box(agent.agent().bound().information_gain())
            },
            BatchSize::PerIteration,
        )
    });
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("r_dmm_interval", window), |b| {
        b.iter(|| {
            let mut agent = Restarting::new(Dmm::new(kernel, params).unwrap(), window).unwrap();
            black_box(problem.run(&mut agent, window).unwrap().total())
        })
    });
    group.finish();
}

criterion_group!(benches, sliding_window, rperp_interval, tight_bounds);
criterion_main!(benches);
