//! The variances of `kbandit reproduce variance` (Calandriello et al. 2019 §3): BKB's DTC
//! variance and the subset-of-regressors variance at 1000 query points, for a dictionary of
//! m ∈ {16, 64} anchors on 1-D data.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::posterior::SketchedPosterior;
use kernel_bandits::prelude::*;

fn variances(c: &mut Criterion) {
    let kernel = Rbf::new(0.05).unwrap();
    let queries: Vec<[f64; 1]> = (0..1000).map(|j| [j as f64 / 999.0]).collect();
    let queries = queries.as_points().unwrap();
    let mut group = c.benchmark_group("variance_1000_queries");
    for m in [16usize, 64] {
        let mut post = SketchedPosterior::new(kernel, 0.01).unwrap();
        for i in 0..4 * m {
            let x = 0.3 * (i % m) as f64 / m as f64;
            post.observe(&[x], x.sin()).unwrap();
        }
        let anchors: Vec<usize> = (0..m).collect();
        post.set_dictionary(&anchors).unwrap();
        group.bench_with_input(BenchmarkId::new("dtc", m), &m, |b, _| {
            b.iter(|| black_box(post.evaluate(&queries).unwrap().variance[0]))
        });
        group.bench_with_input(BenchmarkId::new("subset_of_regressors", m), &m, |b, _| {
            b.iter(|| black_box(post.subset_of_regressors_variance(&queries).unwrap()[0]))
        });
    }
    group.finish();
}

criterion_group!(benches, variances);
criterion_main!(benches);
