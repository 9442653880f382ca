//! A Cholesky factor of K_t + aI that grows by one row per observation (Flynn & Reeb 2024
//! App. E.2).

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Llt;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::prelude::ReborrowMut;
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};
use std::sync::OnceLock;

use super::health::clamp_variance;
use crate::error::{Error, Result};
use crate::linalg::{dot, dot_simd};

/// The largest q_a (and a·q_a) an update may produce: targets whose quadratic form would pass
/// it (|y| ≳ 10¹⁵⁰) are refused with [`Error::NonFinite`].
pub(crate) const QUAD_FORM_LIMIT: f64 = 1e300;

/// Rows per storage block of a [`CholeskyFactor`].
pub(crate) const BLOCK_ROWS: usize = 128;

/// Row length of storage block `block`: its longest row, plus 8 so that the row stride is never
/// a multiple of a large power of two (which maps a column onto few cache sets).
fn block_width(block: usize) -> usize {
    (block + 1) * BLOCK_ROWS + 8
}

/// The lower Cholesky factor L of K_t + aI, together with w = L⁻¹y, q_a = ‖w‖² and
/// ld_a = ln det(I + K_t/a), all updated in O(t²) per appended observation.
///
/// L is stored in blocks of 128 rows; block b is a row-major array whose rows are
/// (b + 1)·128 + 8 wide, a little more than the longest row it holds. Memory is t²/2 + O(128·t),
/// appending never moves earlier rows, and the blocked solve is a sequence of GEMM updates and
/// small triangular solves; an append writes one contiguous row and never re-factorises. (A
/// single square array with a doubling stride, the first design, needed up to 8× the triangle:
/// 2.7 GB for DMM's five factors at t = 5000; it was also slower in the solve.)
#[derive(Debug, Clone)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(try_from = "snapshot::FactorState")
)]
pub(crate) struct CholeskyFactor {
    regulariser: f64,
    len: usize,
    /// Row `i` of L is `blocks[b][r * w..r * w + i + 1]` with b = i / BLOCK_ROWS,
    /// r = i % BLOCK_ROWS and w = block_width(b).
    blocks: Vec<Vec<f64>>,
    /// w = L⁻¹ y.
    whitened_targets: Vec<f64>,
    /// Prefix sums of ln(Lᵢᵢ² / a): entry i is ln det(I + K_{i+1}/a) (each term ≥ 0).
    log_det_prefix: Vec<f64>,
    /// Prefix sums of wᵢ²: entry i is q_a after i + 1 observations.
    quad_form_prefix: Vec<f64>,
    /// α = L⁻ᵀw, computed by the first [`CholeskyFactor::weights`] after a change and kept
    /// until the next one (every `&mut self` method empties it).
    weights: OnceLock<Vec<f64>>,
}

/// The rows that a block of n observations adds to a factor, computed against it but not yet
/// appended ([`CholeskyFactor::pending_block`]).
#[derive(Debug)]
pub(crate) struct PendingBlock {
    /// V = L⁻¹K_{t,new}, row-major t × n.
    solved: Vec<f64>,
    /// Rows t of the factor it was computed against.
    rows: usize,
    /// L₂₂, the Cholesky factor of the Schur complement K_new + aI − VᵀV.
    llt: Llt<f64>,
    /// w₂ = L₂₂⁻¹(y_new − Vᵀw).
    w2: Vec<f64>,
}

impl PendingBlock {
    /// V = L⁻¹K_{t,new}, row-major t × n.
    pub(crate) fn solved(&self) -> MatRef<'_, f64> {
        MatRef::from_row_major_slice(&self.solved, self.rows, self.w2.len())
    }

    /// L₂₂ (n × n, lower).
    pub(crate) fn l22(&self) -> MatRef<'_, f64> {
        self.llt.L()
    }

    /// w₂, the n new whitened targets.
    pub(crate) fn whitened_targets(&self) -> &[f64] {
        &self.w2
    }
}

/// A row computed against the current factor but not yet appended.
#[derive(Debug, Clone)]
pub(crate) struct PendingRow {
    /// v = L⁻¹ k_t(x).
    row: Vec<f64>,
    /// L_{t+1,t+1} = √(a + ρ_a²(x)).
    diagonal: f64,
    /// ln(1 + ρ_a²(x)/a).
    log_det_increment: f64,
    /// (y − vᵀw) / L_{t+1,t+1}.
    whitened_target: f64,
    /// Whether rounding made ρ_a²(x) negative and it was raised to 0.
    clamped: bool,
}

impl CholeskyFactor {
    /// An empty factor for regulariser `a`, which must be finite and positive (checked by
    /// the caller).
    pub(crate) fn new(regulariser: f64) -> Self {
        Self {
            regulariser,
            len: 0,
            blocks: Vec::new(),
            whitened_targets: Vec::new(),
            log_det_prefix: Vec::new(),
            quad_form_prefix: Vec::new(),
            weights: OnceLock::new(),
        }
    }

    /// The regulariser a.
    pub(crate) fn regulariser(&self) -> f64 {
        self.regulariser
    }

    /// Number of observations t.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// q_a = yᵀ(K_t + aI)⁻¹y.
    pub(crate) fn quad_form(&self) -> f64 {
        self.quad_form_prefix.last().copied().unwrap_or(0.0)
    }

    /// ld_a = ln det(I + K_t/a).
    pub(crate) fn log_det(&self) -> f64 {
        self.log_det_prefix.last().copied().unwrap_or(0.0)
    }

    /// w = L⁻¹y, so that μ_a(x) = (L⁻¹k_t(x))ᵀw.
    pub(crate) fn whitened_targets(&self) -> &[f64] {
        &self.whitened_targets
    }

    /// Row `i` of L (its first `i + 1` entries).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub(crate) fn row(&self, i: usize) -> &[f64] {
        assert!(
            i < self.len,
            "row {i} out of range for a factor of {} rows",
            self.len
        );
        let (block, r) = (i / BLOCK_ROWS, i % BLOCK_ROWS);
        let width = block_width(block);
        &self.blocks[block][r * width..r * width + i + 1]
    }

    /// K_t·v = L(Lᵀv) − a·v, in O(t²) without a kernel evaluation (CMM-UCB's check of its
    /// eigendecomposition).
    pub(crate) fn kernel_times(&self, v: &[f64]) -> Vec<f64> {
        debug_assert_eq!(v.len(), self.len);
        let mut u = vec![0.0; self.len];
        for (i, &vi) in v.iter().enumerate() {
            for (uj, l) in u.iter_mut().zip(self.row(i)) {
                *uj += l * vi;
            }
        }
        (0..self.len)
            .map(|i| {
                let lu: f64 = self.row(i).iter().zip(&u).map(|(l, u)| l * u).sum();
                lu - self.regulariser() * v[i]
            })
            .collect()
    }

    /// Forward substitution v = L⁻¹b for one right-hand side, in place.
    pub(crate) fn forward_solve(&self, mut b: &mut [f64]) {
        debug_assert_eq!(b.len(), self.len);
        pulp::Arch::new().dispatch(ForwardSubstitution {
            factor: self,
            columns: std::slice::from_mut(&mut b),
        });
    }

    /// L⁻¹bⱼ in place for every column bⱼ of `columns`, each the same bits as
    /// [`CholeskyFactor::forward_solve`] of it alone (the same dot products in the same order),
    /// but row by row across the columns, so that the factor is read once for all of them:
    /// at t = 1000 a pass over one of DMM-UCB's nine factors costs about as much for five
    /// columns as for one.
    pub(crate) fn forward_solve_columns(&self, columns: &mut [Vec<f64>]) {
        debug_assert!(columns.iter().all(|b| b.len() == self.len));
        pulp::Arch::new().dispatch(ForwardSubstitution {
            factor: self,
            columns,
        });
    }

    /// V = L⁻¹B in place, for B given row-major (t × m) in `rhs`: in blocks of columns (spread
    /// over the cores with the `parallel` feature; the same bits on any number of threads),
    /// each storage block of rows by a GEMM update with the rows already solved, then a
    /// triangular solve with the diagonal block.
    pub(crate) fn solve_block(&self, rhs: &mut [f64], m: usize) {
        let t = self.len;
        debug_assert_eq!(rhs.len(), t * m);
        if t == 0 || m == 0 {
            return;
        }
        let matrix = MatMut::from_row_major_slice_mut(rhs, t, m);
        crate::parallel::for_each_column_block(matrix, t * t * m, |_, mut columns| {
            let mut start = 0;
            while start < t {
                let end = ((start / BLOCK_ROWS + 1) * BLOCK_ROWS).min(t);
                self.solve_rows(start, end, columns.rb_mut().subrows_mut(0, end));
                start = end;
            }
        });
    }

    /// Rows `start..end` of V = L⁻¹B in place, given the rows before `start` already solved:
    /// `rhs` has `end` rows, rows `..start` solved and rows `start..end` holding B's.
    /// The rows must lie in one storage block (`(end − 1) / 128 == start / 128`), so that the
    /// factor rows are one strided matrix.
    pub(crate) fn solve_rows(&self, start: usize, end: usize, rhs: MatMut<'_, f64>) {
        debug_assert!(start < end && end <= self.len);
        debug_assert_eq!((end - 1) / BLOCK_ROWS, start / BLOCK_ROWS);
        debug_assert_eq!(rhs.nrows(), end);
        let block = start / BLOCK_ROWS;
        let (width, first) = (block_width(block), start % BLOCK_ROWS);
        let rows = end - start;
        let storage = &self.blocks[block][first * width..];
        let factor = MatRef::from_row_major_slice_with_stride(
            &storage[..(rows - 1) * width + end],
            rows,
            end,
            width,
        );
        let (solved, mut current) = rhs.split_at_row_mut(start);
        if start > 0 {
            matmul(
                current.rb_mut(),
                Accum::Add,
                factor.subcols(0, start),
                solved.as_ref(),
                -1.0,
                Par::Seq,
            );
        }
        solve_lower_triangular_in_place(factor.submatrix(0, start, rows, rows), current, Par::Seq);
    }

    /// α = L⁻ᵀL⁻¹y = (K_t + aI)⁻¹y, so that μ_a(x) = k_t(x)ᵀα: one back substitution,
    /// O(t²), reading each row of L once, four rows at a time.
    ///
    /// A single pass over L is memory-bound, so the loop is written for that: each group of
    /// four rows first resolves its own four entries, then updates all earlier entries with
    /// four products and one load and store of α (a row-at-a-time axpy loads and stores α four
    /// times as often). It runs in `pulp`'s SIMD dispatch so that LLVM vectorises
    /// it for the CPU at hand; a single pass reads L once, where faer's blocked triangular
    /// solve plus a transposed matrix–vector product reads it twice.
    ///
    /// Computed once per state of the factor: DMM-UCB's `select_in` asked for its nine α's on
    /// every call (about 3 ms of a 30 ms call at t = 1000).
    pub(crate) fn weights(&self) -> &[f64] {
        self.weights
            .get_or_init(|| self.back_solve(self.whitened_targets.clone()))
    }

    /// L⁻ᵀb for one right-hand side `b` (t entries), by the back substitution of
    /// [`CholeskyFactor::weights`].
    pub(crate) fn back_solve(&self, mut b: Vec<f64>) -> Vec<f64> {
        debug_assert_eq!(b.len(), self.len);
        pulp::Arch::new().dispatch(BackSubstitution {
            factor: self,
            alpha: &mut b,
        });
        b
    }

    /// Computes the row that appending (x, y) would add, given `cross = k_t(x)` and
    /// `prior_variance = k(x, x)`; changes nothing. O(t²): one forward substitution.
    ///
    /// # Errors
    /// As [`CholeskyFactor::pending_row_solved`].
    pub(crate) fn pending_row(
        &self,
        cross: &[f64],
        prior_variance: f64,
        y: f64,
    ) -> Result<PendingRow> {
        let mut row = cross.to_vec();
        self.forward_solve(&mut row);
        self.pending_row_solved(row, prior_variance, y)
    }

    /// As [`CholeskyFactor::pending_row`], given the already solved `row = L⁻¹k_t(x)` (e.g.
    /// from the block solved when x was queried); O(t).
    ///
    /// The Schur complement ρ_a²(x) + a is at least a in exact arithmetic; a slightly negative
    /// ρ_a²(x) from rounding is raised to 0.
    ///
    /// # Errors
    /// [`Error::NotPositiveDefinite`] if ρ_a²(x) is NaN or clearly negative (the kernel is not
    /// positive semidefinite); [`Error::NonFinite`] if q_a or ld_a would overflow.
    pub(crate) fn pending_row_solved(
        &self,
        row: Vec<f64>,
        prior_variance: f64,
        y: f64,
    ) -> Result<PendingRow> {
        debug_assert_eq!(row.len(), self.len);
        let explained = dot(&row, &row);
        let clamped = prior_variance - explained < 0.0;
        let posterior_variance = clamp_variance(
            prior_variance - explained,
            prior_variance.abs() + self.regulariser,
            self.len,
        )?;
        let diagonal = (posterior_variance + self.regulariser).sqrt();
        let prediction = dot(&row, &self.whitened_targets);
        let whitened_target = (y - prediction) / diagonal;
        let log_det_increment = (posterior_variance / self.regulariser).ln_1p();
        let quad_form = self.quad_form() + whitened_target * whitened_target;
        // q_a and a·q_a stay below 10³⁰⁰, so that every radius built from them (a few such
        // terms, divided by a regulariser of the same grid) is finite.
        let bounded = |v: f64| v <= QUAD_FORM_LIMIT;
        if !(bounded(quad_form)
            && bounded(self.regulariser * quad_form)
            && (self.log_det() + log_det_increment).is_finite())
        {
            return Err(Error::NonFinite {
                what: "posterior update (q_a or ld_a overflows: the regulariser is too small \
                       for the scale of the data)"
                    .into(),
            });
        }
        Ok(PendingRow {
            row,
            diagonal,
            log_det_increment,
            whitened_target,
            clamped,
        })
    }

    /// The rows that appending a block of n observations adds, computed against the current
    /// factor but not yet appended; changes nothing. Given `cross` = K_{t,new} (row-major
    /// t × n), `gram` = K_new (row-major n × n) and the n new targets: V = L⁻¹K_{t,new}
    /// (O(t²n)), the Schur complement K_new + aI − VᵀV (O(tn²)), its Cholesky factor L₂₂
    /// (O(n³/3)) and w₂ = L₂₂⁻¹(y_new − Vᵀw), all with sequential faer (so that the result does
    /// not depend on the number of threads). [`CholeskyFactor::commit_block`] then extends the
    /// factor exactly as n single appends would, to rounding.
    ///
    /// # Errors
    /// [`Error::NotPositiveDefinite`] if the Schur complement is not positive definite;
    /// [`Error::NonFinite`] if w₂ is not finite or q_a would pass [`QUAD_FORM_LIMIT`].
    pub(crate) fn pending_block(
        &self,
        cross: &[f64],
        gram: &[f64],
        targets: &[f64],
    ) -> Result<PendingBlock> {
        let (t, n) = (self.len, targets.len());
        let par = Par::Seq;
        let mut v = cross.to_vec();
        self.solve_block(&mut v, n);
        let v_ref = MatRef::from_row_major_slice(&v, t, n);
        // S = K_new + aI − VᵀV.
        let mut schur = Mat::from_fn(n, n, |i, j| gram[i * n + j]);
        for i in 0..n {
            schur[(i, i)] += self.regulariser;
        }
        if t > 0 {
            matmul(
                schur.as_mut(),
                Accum::Add,
                v_ref.transpose(),
                v_ref,
                -1.0,
                par,
            );
        }
        let llt = schur
            .llt(Side::Lower)
            .map_err(|_| Error::NotPositiveDefinite {
                row: t,
                pivot: f64::NAN,
            })?;
        let l22 = llt.L();
        // w₂ = L₂₂⁻¹(y_new − Vᵀw).
        let mut w2 = Mat::from_fn(n, 1, |i, _| targets[i]);
        if t > 0 {
            let w = MatRef::from_column_major_slice(&self.whitened_targets, t, 1);
            matmul(w2.as_mut(), Accum::Add, v_ref.transpose(), w, -1.0, par);
        }
        solve_lower_triangular_in_place(l22, w2.as_mut(), par);
        let w2: Vec<f64> = (0..n).map(|i| w2[(i, 0)]).collect();
        let quad_form = self.quad_form() + w2.iter().map(|v| v * v).sum::<f64>();
        if w2.iter().any(|v| !v.is_finite())
            || !(quad_form <= QUAD_FORM_LIMIT && self.regulariser * quad_form <= QUAD_FORM_LIMIT)
        {
            return Err(Error::NonFinite {
                what: "whitened target (the regulariser is too small for the data)".into(),
            });
        }
        Ok(PendingBlock {
            solved: v,
            rows: t,
            llt,
            w2,
        })
    }

    /// Appends a block computed by [`CholeskyFactor::pending_block`] against the current state,
    /// row by row as n single appends would.
    pub(crate) fn commit_block(&mut self, block: PendingBlock) {
        let (t, n) = (block.rows, block.w2.len());
        debug_assert_eq!(t, self.len);
        let l22 = block.llt.L();
        for i in 0..n {
            let mut row: Vec<f64> = (0..t).map(|k| block.solved[k * n + i]).collect();
            row.extend((0..i).map(|j| l22[(i, j)]));
            let diagonal = l22[(i, i)];
            self.commit(PendingRow {
                row,
                diagonal,
                log_det_increment: (diagonal * diagonal / self.regulariser).ln(),
                whitened_target: block.w2[i],
                clamped: false,
            });
        }
    }

    /// Scales every diagonal entry by `1 + relative`: a stand-in for drift, for tests.
    #[cfg(test)]
    pub(crate) fn perturb_diagonal(&mut self, relative: f64) {
        self.weights.take();
        for i in 0..self.len {
            let (block, r) = (i / BLOCK_ROWS, i % BLOCK_ROWS);
            let width = block_width(block);
            self.blocks[block][r * width + i] *= 1.0 + relative;
        }
    }

    /// Whether a pending row's pivot was clamped to √a.
    pub(crate) fn pending_clamped(pending: &PendingRow) -> bool {
        pending.clamped
    }

    /// Relative residuals of row `i` against a from-scratch recomputation, given
    /// `kernel_row` = K_{i, 0..=i} and y_i: max_j |(LLᵀ)_ij − K_ij − aδ_ij| / (K_ii + a), and
    /// |(Lw)_i − y_i| / (|y_i| + √(K_ii + a)·‖w‖). O(i²).
    pub(crate) fn row_residual(&self, i: usize, kernel_row: &[f64], y: f64) -> f64 {
        debug_assert_eq!(kernel_row.len(), i + 1);
        let li = self.row(i);
        let scale = kernel_row[i] + self.regulariser;
        let mut worst: f64 = 0.0;
        for (j, &k) in kernel_row.iter().enumerate() {
            let lj = self.row(j);
            let product = dot(&li[..=j], lj);
            let expected = k + if i == j { self.regulariser } else { 0.0 };
            worst = worst.max((product - expected).abs() / scale);
        }
        let w = &self.whitened_targets;
        let norm = dot(w, w).sqrt();
        let target = (dot(li, &w[..=i]) - y).abs() / (y.abs() + scale.sqrt() * norm);
        if worst.is_nan() || target.is_nan() {
            f64::INFINITY
        } else {
            worst.max(target)
        }
    }

    /// L⁻¹k_t(x) of a pending row.
    pub(crate) fn pending_solved(pending: &PendingRow) -> &[f64] {
        &pending.row
    }

    /// The new diagonal entry and whitened target of a pending row.
    pub(crate) fn pending_tail(pending: &PendingRow) -> (f64, f64) {
        (pending.diagonal, pending.whitened_target)
    }

    /// Appends a row computed by [`CholeskyFactor::pending_row`] against the current state.
    pub(crate) fn commit(&mut self, pending: PendingRow) {
        debug_assert_eq!(pending.row.len(), self.len);
        self.weights.take();
        let (block, r) = (self.len / BLOCK_ROWS, self.len % BLOCK_ROWS);
        let width = block_width(block);
        if block == self.blocks.len() {
            self.blocks.push(vec![0.0; BLOCK_ROWS * width]);
        }
        let row = &mut self.blocks[block][r * width..r * width + self.len + 1];
        row[..self.len].copy_from_slice(&pending.row);
        row[self.len] = pending.diagonal;
        self.whitened_targets.push(pending.whitened_target);
        self.quad_form_prefix
            .push(self.quad_form() + pending.whitened_target * pending.whitened_target);
        self.log_det_prefix
            .push(self.log_det() + pending.log_det_increment);
        self.len += 1;
    }

    /// Keeps the first `len` observations and forgets the rest, in O(1). Exact: the leading
    /// block of a Cholesky factor is the factor of the leading block, and q_a, ld_a are kept
    /// as prefix sums.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        self.weights.take();
        self.len = len;
        self.whitened_targets.truncate(len);
        self.log_det_prefix.truncate(len);
        self.quad_form_prefix.truncate(len);
    }
}

/// The forward substitutions of [`CholeskyFactor::forward_solve`] and
/// [`CholeskyFactor::forward_solve_columns`], as a `pulp` kernel (see [`BackSubstitution`]):
/// the dot products run on the CPU's widest vectors ([`dot_simd`], AVX2 or AVX-512) instead of
/// baseline SSE2, with the same bits as [`dot`].
struct ForwardSubstitution<'a, B> {
    factor: &'a CholeskyFactor,
    columns: &'a mut [B],
}

impl<B: AsMut<[f64]>> pulp::WithSimd for ForwardSubstitution<'_, B> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let Self { factor, columns } = self;
        for i in 0..factor.len {
            let row = factor.row(i);
            for b in columns.iter_mut() {
                let b = b.as_mut();
                b[i] = (b[i] - dot_simd(simd, &row[..i], &b[..i])) / row[i];
            }
        }
    }
}

/// The back substitution of [`CholeskyFactor::weights`], as a `pulp` kernel: implementing
/// `WithSimd` (rather than passing a closure, which LLVM compiled for baseline SSE2 only)
/// makes the loops inline into the dispatched function and vectorise for the CPU at hand.
struct BackSubstitution<'a> {
    factor: &'a CholeskyFactor,
    alpha: &'a mut [f64],
}

impl pulp::WithSimd for BackSubstitution<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Self { factor, alpha } = self;
        let mut end = factor.len;
        while end > 0 {
            let start = end.saturating_sub(4);
            for i in (start..end).rev() {
                let row = factor.row(i);
                let value = alpha[i] / row[i];
                alpha[i] = value;
                for (a, &l) in alpha[start..i].iter_mut().zip(&row[start..i]) {
                    *a -= l * value;
                }
            }
            let (head, rest) = alpha.split_at_mut(start);
            if let &[a0, a1, a2, a3] = &rest[..end - start] {
                let r0 = &factor.row(start)[..start];
                let r1 = &factor.row(start + 1)[..start];
                let r2 = &factor.row(start + 2)[..start];
                let r3 = &factor.row(start + 3)[..start];
                for ((((h, &l0), &l1), &l2), &l3) in head.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3)
                {
                    *h -= (l0 * a0 + l1 * a1) + (l2 * a2 + l3 * a3);
                }
            } else {
                // Fewer than four rows: only at the very top, where `head` is empty.
                debug_assert!(head.is_empty());
            }
            end = start;
        }
    }
}

impl CholeskyFactor {
    /// Forgets the oldest observation: the factor of the remaining t − 1 observations, by an
    /// O(t²) Cholesky downdate rather than a refactorisation. With L = [[l₁₁, 0], [l₂₁, L₂₂]],
    /// the remaining matrix is L₂₂L₂₂ᵀ + l₂₁l₂₁ᵀ, whose factor is a rank-one update of L₂₂
    /// (one Givens-style sweep over its columns). `targets` are the remaining targets, for
    /// w = L⁻¹y; q_a and ld_a are recomputed from the new factor, so truncation stays exact.
    ///
    /// Returns the rotations (cos θ_k, sin θ_k) of the sweep: [L₂₂ l₂₁]G = [L′ 0], where G
    /// applies them in order to column k and the column that starts as l₂₁.
    pub(crate) fn remove_oldest(&mut self, targets: &[f64]) -> Vec<(f64, f64)> {
        let n = self.len.saturating_sub(1);
        debug_assert_eq!(targets.len(), n);
        // The trailing block, row-major (row i holds i + 1 entries), and the update vector.
        let mut rows: Vec<Vec<f64>> = (0..n).map(|i| self.row(i + 1)[1..].to_vec()).collect();
        let mut x: Vec<f64> = (0..n).map(|i| self.row(i + 1)[0]).collect();
        let mut rotations = Vec::with_capacity(n);
        for k in 0..n {
            let lkk = rows[k][k];
            let r = lkk.hypot(x[k]);
            rotations.push((lkk / r, x[k] / r));
            let (c, s) = (r / lkk, x[k] / lkk);
            rows[k][k] = r;
            for i in k + 1..n {
                let lik = (rows[i][k] + s * x[i]) / c;
                x[i] = c * x[i] - s * lik;
                rows[i][k] = lik;
            }
        }
        let regulariser = self.regulariser;
        *self = Self::new(regulariser);
        for (i, row) in rows.iter().enumerate() {
            let (block, r) = (i / BLOCK_ROWS, i % BLOCK_ROWS);
            let width = block_width(block);
            if block == self.blocks.len() {
                self.blocks.push(vec![0.0; BLOCK_ROWS * width]);
            }
            self.blocks[block][r * width..r * width + i + 1].copy_from_slice(row);
            self.len = i + 1;
        }
        let mut w = targets.to_vec();
        self.forward_solve(&mut w);
        let (mut q, mut ld) = (0.0, 0.0);
        for (i, wi) in w.iter().enumerate() {
            q += wi * wi;
            ld += (rows[i][i] * rows[i][i] / regulariser).ln();
            self.quad_form_prefix.push(q);
            self.log_det_prefix.push(ld);
        }
        self.whitened_targets = w;
        rotations
    }
}

/// Snapshots store the factor's rows packed (t(t + 1)/2 numbers, not the padded blocks) and
/// rebuild the blocks on restore, checking every length and pivot.
#[cfg(feature = "serde")]
mod snapshot {
    use serde::ser::SerializeStruct;
    use serde::{Deserialize, Serialize, Serializer};

    use super::{BLOCK_ROWS, CholeskyFactor, block_width};

    /// The fields of a factor as they are stored.
    #[derive(Deserialize)]
    pub(super) struct FactorState {
        regulariser: f64,
        len: usize,
        rows: Vec<f64>,
        whitened_targets: Vec<f64>,
        log_det_prefix: Vec<f64>,
        quad_form_prefix: Vec<f64>,
    }

    /// The rows of L, in order, without copying them.
    struct Rows<'a>(&'a CholeskyFactor);

    impl Serialize for Rows<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let t = self.0.len;
            let rows = (0..t).flat_map(|i| self.0.row(i).iter());
            crate::snapshot::serialize_values(s, t * (t + 1) / 2, rows)
        }
    }

    impl Serialize for CholeskyFactor {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut state = s.serialize_struct("FactorState", 6)?;
            state.serialize_field("regulariser", &self.regulariser)?;
            state.serialize_field("len", &self.len)?;
            state.serialize_field("rows", &Rows(self))?;
            state.serialize_field("whitened_targets", &self.whitened_targets)?;
            state.serialize_field("log_det_prefix", &self.log_det_prefix)?;
            state.serialize_field("quad_form_prefix", &self.quad_form_prefix)?;
            state.end()
        }
    }

    impl TryFrom<FactorState> for CholeskyFactor {
        type Error = String;

        fn try_from(state: FactorState) -> Result<Self, String> {
            let t = state.len;
            if !(state.regulariser.is_finite() && state.regulariser > 0.0) {
                return Err(format!("regulariser {}", state.regulariser));
            }
            if t.checked_mul(t + 1).map(|n| n / 2) != Some(state.rows.len())
                || [
                    &state.whitened_targets,
                    &state.log_det_prefix,
                    &state.quad_form_prefix,
                ]
                .iter()
                .any(|v| v.len() != t)
            {
                return Err(format!("lengths of a factor of {t} rows"));
            }
            let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
            if !(finite(&state.rows)
                && finite(&state.whitened_targets)
                && finite(&state.log_det_prefix)
                && finite(&state.quad_form_prefix))
            {
                return Err("non-finite entry in a Cholesky factor".into());
            }
            let mut blocks: Vec<Vec<f64>> = (0..t.div_ceil(BLOCK_ROWS))
                .map(|b| vec![0.0; BLOCK_ROWS * block_width(b)])
                .collect();
            let mut start = 0;
            for i in 0..t {
                let row = &state.rows[start..start + i + 1];
                if row[i] <= 0.0 {
                    return Err(format!("pivot {} at row {i}", row[i]));
                }
                let (b, r) = (i / BLOCK_ROWS, i % BLOCK_ROWS);
                let width = block_width(b);
                blocks[b][r * width..r * width + i + 1].copy_from_slice(row);
                start += i + 1;
            }
            Ok(Self {
                regulariser: state.regulariser,
                len: t,
                blocks,
                whitened_targets: state.whitened_targets,
                log_det_prefix: state.log_det_prefix,
                quad_form_prefix: state.quad_form_prefix,
                weights: std::sync::OnceLock::new(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use super::*;

    /// α = (K + aI)⁻¹y against nalgebra's dense Cholesky, for sizes on both sides of the
    /// four-row groups and of a storage block.
    #[test]
    fn weights_solve_the_regularised_system() {
        for t in [1, 2, 3, 4, 5, 7, 8, 9, 127, 128, 129, 131] {
            let points: Vec<f64> = (0..t).map(|i| (i as f64 * 0.618).fract()).collect();
            let kernel = |x: f64, y: f64| (-(x - y) * (x - y) / 0.08).exp();
            let y: Vec<f64> = points.iter().map(|&x| (7.0 * x).sin()).collect();
            let a = 0.01;
            let mut factor = CholeskyFactor::new(a);
            for i in 0..t {
                let cross: Vec<f64> = (0..i).map(|j| kernel(points[j], points[i])).collect();
                let row = factor.pending_row(&cross, 1.0, y[i]).unwrap();
                factor.commit(row);
            }
            let gram = DMatrix::from_fn(t, t, |i, j| kernel(points[i], points[j]))
                + DMatrix::identity(t, t) * a;
            let want = gram
                .cholesky()
                .unwrap()
                .solve(&DVector::from_vec(y.clone()));
            let got = factor.weights();
            let scale = want.amax();
            for i in 0..t {
                assert!(
                    (got[i] - want[i]).abs() <= 1e-9 * scale,
                    "t = {t}, i = {i}: {} vs {}",
                    got[i],
                    want[i]
                );
            }
        }
    }
}
