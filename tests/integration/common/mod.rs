//! Code shared by several test modules (`use crate::common;` in the module).

#[cfg(feature = "cli")]
pub mod cli;
pub mod dd;
pub mod dense_variance;
pub mod socp;
pub mod structured;

/// ln det(I + K/a) = ln det(K + aI) − t ln a from the Cholesky factor of K + aI (t × t).
pub fn log_det_ratio(chol: &nalgebra::Cholesky<f64, nalgebra::Dyn>, a: f64) -> f64 {
    let l = chol.l();
    l.diagonal().iter().map(|d| 2.0 * d.ln()).sum::<f64>() - l.nrows() as f64 * a.ln()
}
