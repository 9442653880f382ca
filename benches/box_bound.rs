//! `decide::certify_box`: the proven bound on sup UCB over [0, 1]^d by branch and bound, at a
//! tolerance of 0.1, on the problem shape of Flynn & Reeb (2024 §7): f = Σⱼ cⱼ k(zⱼ, ·) with
//! 20 random centres scaled to ‖f‖_H = 5 ≤ B = 10, σ = 0.1, δ = 0.01, observed at t uniform
//! points; DMM-UCB (first and second order) and CMM-UCB (first order), Matérn 5/2 and RBF with
//! ℓ = 0.2. Before timing, each configuration prints its boxes and the tolerance reached.
//! Sizes: d = 1 … 6 at t = 100 (DMM, Matérn 5/2), and t = 100, 300, 1000 at d = 3.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::bound::AnyBound;
use kernel_bandits::continuous::BoxDomain;
use kernel_bandits::decide::{BoxCertifyOptions, certify_box};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

fn observed<K: Kernel + Copy>(bound: &mut AnyBound<K>, kernel: K, d: usize, t: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let centres: Vec<Vec<f64>> = (0..20)
        .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
        .collect();
    let mut c: Vec<f64> = (0..20).map(|_| rng.sample(StandardNormal)).collect();
    let norm_sq: f64 = (0..20)
        .map(|i| {
            (0..20)
                .map(|j| c[i] * c[j] * kernel.eval(&centres[i], &centres[j]))
                .sum::<f64>()
        })
        .sum();
    let scale = 5.0 / norm_sq.sqrt();
    for v in &mut c {
        *v *= scale;
    }
    for _ in 0..t {
        let x: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
        let f: f64 = centres
            .iter()
            .zip(&c)
            .map(|(z, cj)| cj * kernel.eval(z, &x))
            .sum();
        let noise: f64 = rng.sample(StandardNormal);
        bound.observe(&x, f + 0.1 * noise).unwrap();
    }
}

fn options() -> BoxCertifyOptions {
    BoxCertifyOptions {
        tolerance: 0.1,
        max_boxes: 1_000_000,
        max_time: Some(Duration::from_secs(20)),
        ..BoxCertifyOptions::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn run<K: Kernel + Copy>(
    c: &mut Criterion,
    group: &str,
    name: &str,
    make: impl Fn(K) -> AnyBound<K>,
    kernel: K,
    d: usize,
    t: usize,
    order: kernel_bandits::decide::BoxOrder,
) {
    let mut bound = make(kernel);
    observed(&mut bound, kernel, d, t);
    let domain = BoxDomain::unit(d).unwrap();
    let opts = BoxCertifyOptions { order, ..options() };
    let start = std::time::Instant::now();
    let cert = certify_box(&bound, &domain, &opts).unwrap();
    eprintln!(
        "{group}/{name} d={d} t={t} {order:?}: {:?}, boxes {}, tolerance reached {:.4}, \
         converged {}, gap {:.3}",
        start.elapsed(),
        cert.boxes,
        cert.tolerance,
        cert.converged,
        cert.gap
    );
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.bench_with_input(
        BenchmarkId::new(format!("{name}-{order:?}"), format!("d{d}-t{t}")),
        &d,
        |b, _| b.iter(|| black_box(certify_box(&bound, &domain, &opts).unwrap())),
    );
    g.finish();
}

fn params() -> BoundParams {
    BoundParams::new().sigma(0.1).norm_bound(10.0).delta(0.01)
}

fn by_dimension(c: &mut Criterion) {
    use kernel_bandits::decide::BoxOrder;
    let kernel = Matern::new(2.5, 0.2).unwrap();
    for d in 1..=6 {
        run(
            c,
            "box_by_dimension",
            "dmm",
            |k| AnyBound::Dmm(Dmm::new(k, params()).unwrap()),
            kernel,
            d,
            100,
            BoxOrder::Best,
        );
    }
}

fn by_observations(c: &mut Criterion) {
    use kernel_bandits::decide::BoxOrder;
    let matern = Matern::new(2.5, 0.2).unwrap();
    let rbf = Rbf::new(0.2).unwrap();
    for t in [100, 300, 1000] {
        run(
            c,
            "box_by_observations",
            "dmm-matern52",
            |k| AnyBound::Dmm(Dmm::new(k, params()).unwrap()),
            matern,
            3,
            t,
            BoxOrder::Best,
        );
        run(
            c,
            "box_by_observations",
            "dmm-matern52",
            |k| AnyBound::Dmm(Dmm::new(k, params()).unwrap()),
            matern,
            3,
            t,
            BoxOrder::First,
        );
        run(
            c,
            "box_by_observations",
            "dmm-rbf",
            |k| AnyBound::Dmm(Dmm::new(k, params()).unwrap()),
            rbf,
            3,
            t,
            BoxOrder::Best,
        );
        run(
            c,
            "box_by_observations",
            "cmm-matern52",
            |k| AnyBound::Cmm(Cmm::new(k, params()).unwrap()),
            matern,
            3,
            t,
            BoxOrder::Best,
        );
    }
}

criterion_group!(benches, by_dimension, by_observations);
criterion_main!(benches);
