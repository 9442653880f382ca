//! One 256 × 256 Gram block (d = 3, uniform points of [0, 1]³, ℓ = 0.5) of the Matérn kernel,
//! column by column through `Kernel::eval_rows` (the path the exact posteriors use): the closed
//! form at ν = 5/2 against the K_ν form at ν = 5/2 (forced with `Matern::with_bessel`) and at
//! ν = 7/2, which is evaluated through K_ν. Then the gradients ∂k(xᵢ, y)/∂xᵢ of one column
//! (256 points against one y, `Kernel::gradient`): RBF, the closed form at ν = 5/2, the K_ν
//! form at ν = 5/2, ν = 7/2 (through k_{5/2}'s K_ν) and ν = 3/4 (through k_{1/4}).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const N: usize = 256;
const DIM: usize = 3;

fn gram_block(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let rows: Vec<f64> = (0..N * DIM).map(|_| rng.random()).collect();
    let kernels = [
        ("closed_nu2.5", Matern::new(2.5, 0.5).unwrap()),
        ("bessel_nu2.5", Matern::with_bessel(2.5, 0.5).unwrap()),
        ("bessel_nu3.5", Matern::new(3.5, 0.5).unwrap()),
    ];
    let mut group = c.benchmark_group("matern_gram_256x256_d3");
    for (name, kernel) in kernels {
        group.bench_with_input(BenchmarkId::from_parameter(name), &kernel, |b, k| {
            let mut gram = vec![0.0; N * N];
            b.iter(|| {
                for (column, y) in gram.chunks_exact_mut(N).zip(rows.chunks_exact(DIM)) {
                    k.eval_rows(&rows, y, column);
                }
                black_box(&gram);
            })
        });
    }
    group.finish();
}

fn gradient_column(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let rows: Vec<f64> = (0..N * DIM).map(|_| rng.random()).collect();
    let y = [0.5; DIM];
    let kernels: [(&str, Box<dyn Kernel>); 5] = [
        ("rbf", Box::new(Rbf::new(0.5).unwrap())),
        ("closed_nu2.5", Box::new(Matern::new(2.5, 0.5).unwrap())),
        (
            "bessel_nu2.5",
            Box::new(Matern::with_bessel(2.5, 0.5).unwrap()),
        ),
        ("bessel_nu3.5", Box::new(Matern::new(3.5, 0.5).unwrap())),
        ("bessel_nu0.75", Box::new(Matern::new(0.75, 0.5).unwrap())),
    ];
    let mut group = c.benchmark_group("gradient_column_256_d3");
    for (name, kernel) in kernels {
        group.bench_with_input(BenchmarkId::from_parameter(name), &kernel, |b, k| {
            let mut grads = vec![0.0; N * DIM];
            b.iter(|| {
                for (g, x) in grads.chunks_exact_mut(DIM).zip(rows.chunks_exact(DIM)) {
                    k.gradient(x, &y, g).unwrap();
                }
                black_box(&grads);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, gram_block, gradient_column);
criterion_main!(benches);
