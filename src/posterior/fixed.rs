//! Per-arm state for a fixed arm set, kept up to date observation by observation (behind
//! [`super::ExactPosterior::fix_arms`]).
//!
//! For every regulariser r the set keeps V_r = L_r⁻¹K_{t,X} (t × A: the solved kernel columns
//! of the A arms), μ_r(x_j) = V_r[:, j]ᵀw_r and ‖V_r[:, j]‖² = k(x_j, x_j) − ρ_r²(x_j). When
//! (x, y) is appended, L_r gains the row [ℓᵀ, d] with ℓ = L_r⁻¹k_t(x), and V_r gains the row
//! (k(x, X) − ℓᵀV_r)/d: O(A·t) per regulariser, against O(A·t²) for solving the arms afresh.
//! When x is one of the arms, ℓ is its column of V_r, so the Cholesky append costs O(t) too.
//! The means and the squared norms are accumulated row by row, in the order a fresh solve
//! accumulates them.
//!
//! Forgetting the oldest observation (a sliding window) rotates V_r's rows with the Givens
//! rotations of the Cholesky downdate: with L = [[l₁₁, 0], [l₂₁, L₂₂]] and [L₂₂ l₂₁]G = [L′ 0],
//! K_{2:t,X} = [L₂₂ l₂₁][V₂; v₁] = [L′ 0]Gᵀ[V₂; v₁], so the new V is the first t − 1 rows of
//! Gᵀ[V₂; v₁]: O(A·t) again.
//!
//! A block of n observations (`observe_many`) adds n rows at once: with V = L_r⁻¹K_{t,new} and
//! L₂₂ the factor of the Schur complement ([`CholeskyFactor::pending_block`]), V_r gains
//! L₂₂⁻¹(K_{new,X} − VᵀV_r).
//!
//! Memory: 8·A bytes per observation and regulariser (AMM with 1000 arms: 8 kB per
//! observation, 8 MB at t = 1000; DMM's five regularisers five times that).

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, MatRef, Par};

use super::CholeskyFactor;
use super::cholesky::{PendingBlock, PendingRow};
use crate::kernel::Kernel;
use crate::points::Points;

/// Arms per chunk of the row update: 8 kB of accumulators, which stay in L1.
const ARM_CHUNK: usize = 1024;

/// The fixed arm set a posterior or a bound keeps (see
/// [`ExactPosterior::fix_arms`](super::ExactPosterior::fix_arms)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArmSetInfo {
    /// Number of arms.
    pub arms: usize,
    /// Bytes held for their per-arm state (the solved kernel columns).
    pub bytes: usize,
}

/// The solved kernel columns, means and explained variances of a fixed arm set.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct FixedArms {
    /// The arms, row-major A × d.
    points: Vec<f64>,
    /// Number of arms A.
    len: usize,
    /// k(x_j, x_j).
    prior_variance: Vec<f64>,
    /// Per regulariser, V_r row-major (t × A).
    solved: Vec<Vec<f64>>,
    /// μ_r(x_j), regulariser-major: `means[r * A + j]`.
    means: Vec<f64>,
    /// ‖V_r[:, j]‖², regulariser-major.
    explained: Vec<f64>,
    /// Rows t of every V_r.
    rows: usize,
    /// The set is dropped when an append would take it beyond this many bytes.
    memory_limit: Option<usize>,
}

impl FixedArms {
    /// Checks a restored set against the posterior that holds it: `dim` and `t` of its
    /// observations, `regularisers` factors.
    #[cfg(feature = "serde")]
    pub(crate) fn check(
        &self,
        dim: Option<usize>,
        t: usize,
        regularisers: usize,
    ) -> crate::error::Result<()> {
        use crate::snapshot::{ensure, ensure_finite};
        let a = self.len;
        let d = dim.unwrap_or(0);
        ensure(
            a > 0
                && d > 0
                && a.checked_mul(d) == Some(self.points.len())
                && self.prior_variance.len() == a
                && self.rows == t
                && self.solved.len() == regularisers
                && self
                    .solved
                    .iter()
                    .all(|v| t.checked_mul(a) == Some(v.len()))
                && self.means.len() == regularisers * a
                && self.explained.len() == regularisers * a,
            || format!("fixed arm set of {a} arms against {t} observations of dimension {d}"),
        )?;
        ensure_finite(&self.points, "fixed arms")?;
        ensure_finite(&self.prior_variance, "fixed arms' prior variances")?;
        ensure_finite(&self.means, "fixed arms' means")?;
        ensure_finite(&self.explained, "fixed arms' explained variances")?;
        for v in &self.solved {
            ensure_finite(v, "fixed arms' solved columns")?;
        }
        Ok(())
    }

    /// The state for `points` (whose dimension the caller has checked) given their kernel
    /// values: `prior_variance` = k(x_j, x_j) and `cross` = K_{t,X} row-major; O(A·t²) per
    /// regulariser, the cost of one fresh evaluation.
    pub(crate) fn new(
        points: &Points<'_>,
        prior_variance: Vec<f64>,
        mut cross: Vec<f64>,
        factors: &[CholeskyFactor],
        memory_limit: Option<usize>,
    ) -> Self {
        let len = points.len();
        let mut flat = Vec::with_capacity(len * points.dim());
        points.for_each(|_, x| flat.extend_from_slice(x));
        let t = factors[0].len();
        let mut solved = Vec::with_capacity(factors.len());
        for (r, factor) in factors.iter().enumerate() {
            let mut block = if r + 1 == factors.len() {
                std::mem::take(&mut cross)
            } else {
                cross.clone()
            };
            factor.solve_block(&mut block, len);
            debug_assert_eq!(block.len(), t * len);
            solved.push(block);
        }
        let mut out = Self {
            points: flat,
            len,
            prior_variance,
            solved,
            means: Vec::new(),
            explained: Vec::new(),
            rows: t,
            memory_limit,
        };
        out.accumulate(factors);
        out
    }

    /// Number of arms A.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held for `arms` arms of dimension `dim` after `rows` observations with
    /// `regularisers` factors: the points, k(x, x), and per regulariser the solved columns
    /// (8·A·t, which dominate), means and squared norms.
    pub(crate) fn bytes_for(arms: usize, dim: usize, rows: usize, regularisers: usize) -> usize {
        8 * arms * (dim + 1 + regularisers * (rows + 2))
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        Self::bytes_for(self.len, self.dim(), self.rows, self.solved.len())
    }

    /// Whether `points` are exactly these arms, in this order; O(A·d).
    pub(crate) fn matches(&self, points: &Points<'_>) -> bool {
        points.equals_row_major(&self.points, self.len)
    }

    /// The arms, row-major.
    pub(crate) fn points(&self) -> &[f64] {
        &self.points
    }

    /// The arms' dimension.
    pub(crate) fn memory_limit(&self) -> Option<usize> {
        self.memory_limit
    }

    pub(crate) fn dim(&self) -> usize {
        self.points.len() / self.len.max(1)
    }

    /// The index of arm `x`, trying `hint` first.
    pub(crate) fn position(&self, x: &[f64], hint: usize) -> Option<usize> {
        let d = x.len();
        if d == 0 || self.points.len() != self.len * d {
            return None;
        }
        let arm = |j: usize| &self.points[j * d..(j + 1) * d];
        if hint < self.len && arm(hint) == x {
            return Some(hint);
        }
        (0..self.len).find(|&j| arm(j) == x)
    }

    /// k(x_j, x_j) for every arm.
    pub(crate) fn prior_variance(&self) -> &[f64] {
        &self.prior_variance
    }

    /// μ_r at every arm.
    pub(crate) fn means(&self, r: usize) -> &[f64] {
        &self.means[r * self.len..(r + 1) * self.len]
    }

    /// ‖V_r[:, j]‖² = k(x_j, x_j) − ρ_r²(x_j) at every arm.
    pub(crate) fn explained(&self, r: usize) -> &[f64] {
        &self.explained[r * self.len..(r + 1) * self.len]
    }

    /// Arm j's solved column L_r⁻¹k_t(x_j), one per regulariser; O(t) each.
    pub(crate) fn solved_columns(&self, j: usize) -> Vec<Vec<f64>> {
        self.solved
            .iter()
            .map(|v| v.iter().skip(j).step_by(self.len).copied().collect())
            .collect()
    }

    /// Replaces the memory limit.
    pub(crate) fn set_memory_limit(&mut self, limit: Option<usize>) {
        self.memory_limit = limit;
    }

    /// k(x, x_j) for every arm, for an observation at `x`; `None` if a value is not finite.
    pub(crate) fn kernel_row<K: Kernel>(&self, kernel: &K, x: &[f64]) -> Option<Vec<f64>> {
        let mut row = vec![0.0; self.len];
        kernel.eval_rows(&self.points, x, &mut row);
        row.iter().all(|v| v.is_finite()).then_some(row)
    }

    /// K_{new,X} row-major (n × A) for n new points of dimension `dim`, row-major in
    /// `new_points`; `None` if a value is not finite.
    pub(crate) fn kernel_rows<K: Kernel>(
        &self,
        kernel: &K,
        new_points: &[f64],
        dim: usize,
    ) -> Option<Vec<f64>> {
        let (a, n) = (self.len, new_points.len() / dim);
        let mut rows = vec![0.0; n * a];
        crate::parallel::for_each_chunk(&mut rows, a, n * a * 20, |i, row| {
            kernel.eval_rows(&self.points, &new_points[i * dim..(i + 1) * dim], row);
        });
        rows.iter().all(|v| v.is_finite()).then_some(rows)
    }

    /// Appends the row that the observation with kernel values `kernel_row` = k(x, X) adds to
    /// every V_r, given each factor's pending row (ℓ_r = L_r⁻¹k_t(x), the new diagonal entry
    /// and whitened target). O(A·t) per regulariser, spread over the cores.
    pub(crate) fn append(&mut self, kernel_row: &[f64], pending: &[PendingRow]) {
        let rows: Vec<&[f64]> = pending.iter().map(CholeskyFactor::pending_solved).collect();
        let (diagonals, whitened_targets): (Vec<f64>, Vec<f64>) =
            pending.iter().map(CholeskyFactor::pending_tail).unzip();
        let (t, a) = (self.rows, self.len);
        for (r, solved) in self.solved.iter_mut().enumerate() {
            let (ell, d) = (rows[r], diagonals[r]);
            debug_assert_eq!(ell.len(), t);
            let mut new_row = kernel_row.to_vec();
            let existing: &[f64] = solved;
            crate::parallel::for_each_chunk(&mut new_row, ARM_CHUNK, 2 * t * a, |c, out| {
                let first = c * ARM_CHUNK;
                for (i, &l) in ell.iter().enumerate() {
                    let row = &existing[i * a + first..i * a + first + out.len()];
                    for (o, &v) in out.iter_mut().zip(row) {
                        *o -= l * v;
                    }
                }
                for o in out.iter_mut() {
                    *o /= d;
                }
            });
            let (means, explained) = (&mut self.means[r * a..], &mut self.explained[r * a..]);
            accumulate_row(
                &mut means[..a],
                &mut explained[..a],
                &new_row,
                whitened_targets[r],
            );
            solved.extend_from_slice(&new_row);
        }
        self.rows += 1;
    }

    /// Appends the n rows that a block of observations with kernel values `kernel_rows` =
    /// K_{new,X} (row-major n × A) adds to every V_r, given each factor's pending block:
    /// L₂₂⁻¹(K_{new,X} − VᵀV_r) with V and L₂₂ of factor r. O(A·(tn + n²)) per regulariser,
    /// with sequential faer.
    pub(crate) fn append_block(&mut self, kernel_rows: &[f64], blocks: &[PendingBlock]) {
        for (r, block) in blocks.iter().enumerate() {
            let rows = self.block_rows(r, kernel_rows, block);
            self.push_rows(r, &rows, block.whitened_targets());
        }
        self.rows += blocks.first().map_or(0, |b| b.whitened_targets().len());
    }

    /// The new rows of V_r for a block: L₂₂⁻¹(K_{new,X} − VᵀV_r), row-major (n × A).
    fn block_rows(&self, r: usize, kernel_rows: &[f64], block: &PendingBlock) -> Vec<f64> {
        let (t, a) = (self.rows, self.len);
        let n = block.whitened_targets().len();
        let par = Par::Seq;
        let mut rows = Mat::from_fn(n, a, |i, j| kernel_rows[i * a + j]);
        if t > 0 {
            let solved = MatRef::from_row_major_slice(&self.solved[r], t, a);
            matmul(
                rows.as_mut(),
                Accum::Add,
                block.solved().transpose(),
                solved,
                -1.0,
                par,
            );
        }
        solve_lower_triangular_in_place(block.l22(), rows.as_mut(), par);
        (0..n * a).map(|k| rows[(k / a, k % a)]).collect()
    }

    /// Appends n rows (row-major n × A) to V_r, given the n new whitened targets of factor r.
    fn push_rows(&mut self, r: usize, rows: &[f64], whitened_targets: &[f64]) {
        let a = self.len;
        let means = &mut self.means[r * a..(r + 1) * a];
        let explained = &mut self.explained[r * a..(r + 1) * a];
        for (row, &w) in rows.chunks_exact(a).zip(whitened_targets) {
            accumulate_row(means, explained, row, w);
        }
        self.solved[r].extend_from_slice(rows);
    }

    /// Whether the set stays within its memory limit after `n` more observations.
    pub(crate) fn fits(&self, n: usize) -> bool {
        self.memory_limit.is_none_or(|limit| {
            Self::bytes_for(self.len, self.dim(), self.rows + n, self.solved.len()) <= limit
        })
    }

    /// Keeps the first `len` rows (after the factors were truncated to `len`).
    pub(crate) fn truncate(&mut self, len: usize, factors: &[CholeskyFactor]) {
        if len >= self.rows {
            return;
        }
        for solved in &mut self.solved {
            solved.truncate(len * self.len);
        }
        self.rows = len;
        self.accumulate(factors);
    }

    /// Forgets the oldest row, given each factor's downdate rotations (cos θ_k, sin θ_k)
    /// (see the module documentation); O(A·t) per regulariser.
    pub(crate) fn remove_oldest(
        &mut self,
        rotations: &[Vec<(f64, f64)>],
        factors: &[CholeskyFactor],
    ) {
        if self.rows == 0 {
            return;
        }
        let (t, a) = (self.rows, self.len);
        for (solved, rotations) in self.solved.iter_mut().zip(rotations) {
            debug_assert_eq!(rotations.len(), t - 1);
            let mut extra = solved[..a].to_vec();
            for (k, &(cos, sin)) in rotations.iter().enumerate() {
                let (head, tail) = solved.split_at_mut((k + 1) * a);
                let target = &mut head[k * a..];
                for ((out, &v), e) in target.iter_mut().zip(&tail[..a]).zip(extra.iter_mut()) {
                    *out = cos * v + sin * *e;
                    *e = cos * *e - sin * v;
                }
            }
            solved.truncate((t - 1) * a);
        }
        self.rows = t - 1;
        self.accumulate(factors);
    }

    /// Recomputes the means and squared norms from V_r and the factors' whitened targets, row
    /// by row (the order of [`FixedArms::append`] and of a fresh evaluation).
    fn accumulate(&mut self, factors: &[CholeskyFactor]) {
        let a = self.len;
        self.means = vec![0.0; a * factors.len()];
        self.explained = vec![0.0; a * factors.len()];
        for (r, factor) in factors.iter().enumerate() {
            let means = &mut self.means[r * a..(r + 1) * a];
            let explained = &mut self.explained[r * a..(r + 1) * a];
            let w = factor.whitened_targets();
            for (row, &wi) in self.solved[r].chunks_exact(a.max(1)).zip(w) {
                accumulate_row(means, explained, row, wi);
            }
        }
    }
}

/// Adds one solved row v (one entry per point) to the means (+ v·w) and to the squared norms
/// (+ v²): the order in which every path accumulates them, row by row.
#[inline]
pub(crate) fn accumulate_row(means: &mut [f64], explained: &mut [f64], row: &[f64], w: f64) {
    for ((mean, ex), &v) in means.iter_mut().zip(explained.iter_mut()).zip(row) {
        *mean += v * w;
        *ex += v * v;
    }
}
