//! Dense from-scratch variances, written from the formulas with nalgebra and nothing of the
//! crate but the kernel: for the variance-starvation tests (Calandriello et al. 2019 Eqs. 2
//! and 4, §3.1) the exact GP variance, the DTC variance and the subset-of-regressors variance
//! for a given dictionary, in the papers' scale (divided by λ); and, for the pending-evaluation
//! tests, the GP posterior variance at any dimension.
#![allow(dead_code)] // each test file uses some of these

use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// ρ_a²(x) = k(x, x) − k(x)ᵀ(K + aI)⁻¹k(x) given `inputs` (observed and pending alike: the
/// variance needs no targets), by a dense Cholesky of the Gram matrix plus aI.
pub fn posterior_variance<K: Kernel + ?Sized>(
    kernel: &K,
    inputs: &[Vec<f64>],
    a: f64,
    x: &[f64],
) -> f64 {
    let n = inputs.len();
    if n == 0 {
        return kernel.eval(x, x);
    }
    let gram = DMatrix::from_fn(n, n, |i, j| {
        kernel.eval(&inputs[i], &inputs[j]) + if i == j { a } else { 0.0 }
    });
    let k = DVector::from_fn(n, |i, _| kernel.eval(&inputs[i], x));
    let chol = gram.cholesky().expect("K + aI is positive definite");
    kernel.eval(x, x) - k.dot(&chol.solve(&k))
}

/// σ²(x) = (k(x, x) − k_t(x)ᵀ(K_t + λI)⁻¹k_t(x))/λ at each query (Eq. 2 over λ).
pub fn exact(kernel: &impl Kernel, xs: &[f64], lambda: f64, queries: &[f64]) -> Vec<f64> {
    let n = xs.len();
    let gram = DMatrix::from_fn(n, n, |i, j| kernel.eval(&[xs[i]], &[xs[j]]))
        + lambda * DMatrix::identity(n, n);
    let chol = gram.cholesky().expect("K + λI is positive definite");
    queries
        .iter()
        .map(|&q| {
            let k = DVector::from_fn(n, |i, _| kernel.eval(&[xs[i]], &[q]));
            (kernel.eval(&[q], &[q]) - k.dot(&chol.solve(&k))) / lambda
        })
        .collect()
}

/// (DTC σ̃², SoR zᵀV⁻¹z) at each query for the dictionary `anchors`, with the Nyström
/// embedding z(x) = (K_S^{1/2})⁺k_S(x) of the paper: the pseudo-inverse square root from an
/// eigendecomposition of K_S, dropping eigenvalues below 10⁻⁹ of the largest (anchors a few
/// ulps apart span one direction). Z has one row z(xᵢ) per observation, repeats included;
/// V = ZᵀZ + λI; σ̃² = (k(x, x) − zᵀZᵀZV⁻¹z)/λ and SoR = zᵀV⁻¹z.
pub fn dtc_and_sor(
    kernel: &impl Kernel,
    xs: &[f64],
    anchors: &[f64],
    lambda: f64,
    queries: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let m = anchors.len();
    let kss = DMatrix::from_fn(m, m, |a, b| kernel.eval(&[anchors[a]], &[anchors[b]]));
    let eigen = SymmetricEigen::new(kss);
    let largest = eigen.eigenvalues.iter().copied().fold(0.0, f64::max);
    let inv_sqrt = DMatrix::<f64>::from_fn(m, m, |a, b| {
        (0..m)
            .filter(|&k| eigen.eigenvalues[k] > 1e-9 * largest)
            .map(|k| {
                eigen.eigenvectors[(a, k)] * eigen.eigenvectors[(b, k)]
                    / eigen.eigenvalues[k].sqrt()
            })
            .sum::<f64>()
    });
    let embed = |x: f64| -> DVector<f64> {
        &inv_sqrt * DVector::from_fn(m, |a, _| kernel.eval(&[anchors[a]], &[x]))
    };
    let mut ztz = DMatrix::<f64>::zeros(m, m);
    for &x in xs {
        let z = embed(x);
        ztz += &z * z.transpose();
    }
    let v = &ztz + lambda * DMatrix::identity(m, m);
    let chol = v.cholesky().expect("ZᵀZ + λI is positive definite");
    let (mut dtc, mut sor) = (Vec::new(), Vec::new());
    for &q in queries {
        let z = embed(q);
        let solved = chol.solve(&z);
        dtc.push((kernel.eval(&[q], &[q]) - (&ztz * &z).dot(&solved)) / lambda);
        sor.push(z.dot(&solved));
    }
    (dtc, sor)
}
