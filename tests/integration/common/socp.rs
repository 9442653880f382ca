//! The independent reference for CMM-UCB: the primal program of Flynn & Reeb 2024 Thm 4.4,
//! max f(x) s.t. ‖f_t − y_t‖ ≤ R_t, ‖f‖_H ≤ B, solved by `clarabel`.
//!
//! By the representer theorem f lies in the span of the kernel functions at the t observed
//! points and x; with K_{t+1} = V diag(λ) Vᵀ (nalgebra's symmetric eigendecomposition, no
//! jitter) and the feature map Φ = V diag(√λ) over every positive eigenvalue, f's values at the
//! t + 1 points are Φz and ‖f‖_H = ‖z‖, so the program is max φ_xᵀz s.t. ‖Φ_t z − y‖ ≤ R_t,
//! ‖z‖ ≤ B: a well-scaled SOCP in z. Points the kernel cannot tell apart share one feature
//! vector, and eigenvalues below m·ε·λ_max are left out unless asked for (see `Directions`).
//! R_t is computed from a dense nalgebra Cholesky of K_t + a0 I. Nothing of the crate's CMM
//! code is used.

#![allow(dead_code)]

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};
use kernel_bandits::kernel::Kernel;
use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// Solver tolerance (absolute and relative duality gap, feasibility).
pub const SOLVER_TOL: f64 = 1e-10;

/// R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ), from a dense Cholesky of K_t + a0 I.
pub fn radius_sq(gram: &DMatrix<f64>, y: &DVector<f64>, sigma: f64, c: f64, delta: f64) -> f64 {
    let t = y.len();
    let a0 = sigma * sigma / c;
    if t == 0 {
        return 2.0 * sigma * sigma * (1.0 / delta).ln();
    }
    let chol = (gram + DMatrix::identity(t, t) * a0).cholesky().unwrap();
    let q = y.dot(&chol.solve(y));
    let ld = super::log_det_ratio(&chol, a0);
    a0 * q + sigma * sigma * ld + 2.0 * sigma * sigma * (1.0 / delta).ln()
}

/// max (sign = 1) or min (sign = −1) of f(x) over the confidence set, by clarabel; panics
/// if the set is empty.
pub fn socp(
    kernel: &(impl Kernel + ?Sized),
    xs: &[Vec<f64>],
    y: &[f64],
    x: &[f64],
    radius: f64,
    b: f64,
    sign: f64,
) -> f64 {
    socp_or_empty(kernel, xs, y, x, radius, b, sign).expect("clarabel: the confidence set is empty")
}

/// As [`socp`], `None` when clarabel finds the confidence set empty (primal infeasible).
pub fn socp_or_empty(
    kernel: &(impl Kernel + ?Sized),
    xs: &[Vec<f64>],
    y: &[f64],
    x: &[f64],
    radius: f64,
    b: f64,
    sign: f64,
) -> Option<f64> {
    match primal(kernel, xs, y, x, radius, b, sign, Directions::Resolved) {
        Primal::Optimum(v) => Some(v),
        Primal::Empty => None,
        Primal::Unsolved(why) => panic!("{why}"),
    }
}

/// What clarabel says of the primal program.
#[derive(Debug, Clone, PartialEq)]
pub enum Primal {
    /// Solved to the tolerances: the optimum.
    Optimum(f64),
    /// The confidence set is empty (primal infeasible).
    Empty,
    /// Neither: clarabel stopped short (the message says how far).
    Unsolved(String),
}

/// Which eigen-directions of the Gram matrix the reference keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directions {
    /// Eigenvalues above m·ε·λ_max: those the double-precision kernel values resolve.
    Resolved,
    /// Every positive eigenvalue, rounding-level ones included: the exact optimum for the
    /// computed Gram matrix with its negative eigenvalues set to 0, a matrix as close to the
    /// kernel's as the rounded kernel values themselves. Its optimum is at least the
    /// [`Directions::Resolved`] one (the set only grows); between the two lie the readings
    /// of the problem that double precision cannot tell apart.
    Positive,
}

/// max (sign = 1) or min (sign = −1) of f(x) over the confidence set, on `directions`, as
/// clarabel finds it.
#[allow(clippy::too_many_arguments)]
pub fn primal(
    kernel: &(impl Kernel + ?Sized),
    xs: &[Vec<f64>],
    y: &[f64],
    x: &[f64],
    radius: f64,
    b: f64,
    sign: f64,
    directions: Directions,
) -> Primal {
    let t = xs.len();
    let mut all: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    all.push(x);
    let n = t + 1;
    // Points that are the same for the kernel (equal, or with k(xᵢ, xⱼ) = k(xᵢ, xᵢ) = k(xⱼ, xⱼ)
    // in double precision, as for points 10⁻¹⁵ apart) share one feature vector: duplicates make
    // the Gram matrix exactly singular, and an eigensolver would turn that null space into
    // rounding-level eigenvalues, spurious directions in which f could move.
    let mut representative: Vec<usize> = Vec::with_capacity(n);
    let mut unique: Vec<usize> = Vec::new();
    for i in 0..n {
        let same = unique.iter().position(|&j| {
            all[i] == all[j] || {
                let kij = kernel.eval(all[i], all[j]);
                kij == kernel.eval(all[i], all[i]) && kij == kernel.eval(all[j], all[j])
            }
        });
        representative.push(same.unwrap_or_else(|| {
            unique.push(i);
            unique.len() - 1
        }));
    }
    let m = unique.len();
    let gram = DMatrix::from_fn(m, m, |i, j| kernel.eval(all[unique[i]], all[unique[j]]));
    let eigen = SymmetricEigen::new(gram);
    // Eigenvalues at rounding level (≤ m·ε·λ_max) are not resolved by double-precision kernel
    // values; `Resolved` leaves their directions out, `Positive` keeps the positive ones.
    let largest = eigen.eigenvalues.max();
    let cutoff = match directions {
        Directions::Resolved => m as f64 * f64::EPSILON * largest,
        Directions::Positive => 0.0,
    };
    let keep: Vec<usize> = (0..m).filter(|&i| eigen.eigenvalues[i] > cutoff).collect();
    let r = keep.len();
    // Φ (n × r): rows are the points' features.
    let phi = DMatrix::from_fn(n, r, |i, k| {
        eigen.eigenvectors[(representative[i], keep[k])] * eigen.eigenvalues[keep[k]].sqrt()
    });
    // Variables z ∈ R^r; minimise −sign·φ_xᵀz.
    let q: Vec<f64> = (0..r).map(|k| -sign * phi[(t, k)]).collect();
    let p = CscMatrix::zeros((r, r));
    // Rows: [0; Φ_t] for the data cone (b = [R; y]), [0; −I] for the norm cone (b = [B; 0]).
    let rows = (1 + t) + (1 + r);
    let dense = DMatrix::from_fn(rows, r, |i, k| {
        if i >= 1 && i <= t {
            phi[(i - 1, k)]
        } else if i >= t + 2 {
            if i - (t + 2) == k { -1.0 } else { 0.0 }
        } else {
            0.0
        }
    });
    let (mut colptr, mut rowval, mut nzval) = (vec![0], Vec::new(), Vec::new());
    for k in 0..r {
        for i in 0..rows {
            if dense[(i, k)] != 0.0 {
                rowval.push(i);
                nzval.push(dense[(i, k)]);
            }
        }
        colptr.push(rowval.len());
    }
    let a = CscMatrix::new(rows, r, colptr, rowval, nzval);
    let mut rhs = vec![radius];
    rhs.extend_from_slice(y);
    rhs.push(b);
    rhs.extend(std::iter::repeat_n(0.0, r));
    let cones = [
        SupportedConeT::SecondOrderConeT(1 + t),
        SupportedConeT::SecondOrderConeT(1 + r),
    ];
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(SOLVER_TOL)
        .tol_gap_rel(SOLVER_TOL)
        .tol_feas(SOLVER_TOL)
        .max_iter(500)
        .build()
        .unwrap();
    let mut solver = DefaultSolver::new(&p, &q, &a, &rhs, &cones, settings.clone()).unwrap();
    solver.solve();
    if matches!(
        solver.solution.status,
        SolverStatus::InsufficientProgress | SolverStatus::NumericalError
    ) {
        // Stalled with a primal residual about 10⁻⁴ (seen on near-duplicate data, where the
        // KKT system is nearly singular): the default static regularisation of 10⁻⁸ limits
        // the accuracy of its solves. Once more with iterative refinement run to the last
        // bit, which removes the regularisation's error.
        let refined = DefaultSettings {
            iterative_refinement_max_iter: 50,
            iterative_refinement_reltol: 1e-16,
            iterative_refinement_abstol: 1e-16,
            ..settings
        };
        solver = DefaultSolver::new(&p, &q, &a, &rhs, &cones, refined).unwrap();
        solver.solve();
    }
    let solution = &solver.solution;
    // Short of its 10⁻¹⁰ targets clarabel may stop for lack of progress; its last iterate is
    // taken when the duality gap and both residuals are within 10⁻⁹ all the same.
    let close = |v: f64| v.abs() <= 1e-9 * (1.0 + solution.obj_val.abs());
    match solution.status {
        SolverStatus::Solved | SolverStatus::AlmostSolved => {
            Primal::Optimum(-sign * solution.obj_val)
        }
        SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible => Primal::Empty,
        SolverStatus::InsufficientProgress
            if close(solution.obj_val - solution.obj_val_dual)
                && close(solution.r_prim)
                && close(solution.r_dual) =>
        {
            Primal::Optimum(-sign * solution.obj_val)
        }
        status => Primal::Unsolved(format!(
            "clarabel: {status:?} (t = {t}, radius {radius:e}, B = {b}, |y| ≤ {:e}; gap {:e}, \
             residuals {:e}, {:e})",
            y.iter().fold(0.0_f64, |m, v| m.max(v.abs())),
            solution.obj_val - solution.obj_val_dual,
            solution.r_prim,
            solution.r_dual
        )),
    }
}
