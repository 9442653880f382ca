//! The exact argmax of an upper confidence bound over a batch of points, with pruning
//! (behind [`super::ExactPosterior::argmax_upper`]).
//!
//! U(x) = min_r (μ_r(x) + w_r ρ_r(x)) with ρ_r²(x) = k(x, x) − ‖v‖², v = L_r⁻¹k_t(x). The
//! forward substitutions, O(t²) per point, are what pruning saves. They run in row chunks over
//! a set of points at once; after each chunk an upper bound on U from the rows solved so far
//! is compared with a floor (a value that the maximum of U is known to reach: the exact U of
//! the four points with the largest upper bounds, solved to the end first once the first 128
//! rows are solved for every point), and a point whose upper bound falls below it cannot win
//! and is dropped.
//!
//! **The mean without a pass over the factor.** With w = L⁻¹y (kept by the factor), μ(x) =
//! vᵀw = Σᵢ vᵢwᵢ, and the first s terms are μ_s(x) = k_s(x)ᵀα_s with α_s = (K_s + aI)⁻¹y_s, the
//! weights of the first s observations (the rows of L, v and w up to s do not change when
//! observations are appended). α_s costs one back substitution, a full read of the factor; it
//! is kept between queries and recomputed only when it has grown stale (see
//! [`super::ExactPosterior::argmax_upper`]), so a query reads the factor once, for the points
//! that survive, instead of twice. The mean of a point is μ_s(x) + Σ_{i>s} vᵢwᵢ, accumulated
//! row by row as the rows are solved. After r rows (with W² = Σᵢ wᵢ² over the rows not yet
//! accounted for, i > max(r, s), and A² = k(x, x) − Σ_{i≤r} vᵢ²), Cauchy–Schwarz bounds the
//! missing part of the mean by u·W with u² = Σ_{i>r} vᵢ², and ρ² = A² − u² ≥ 0 leaves
//! ρ ≤ √(A² − u²); so
//!
//!   μ + w_r ρ ≤ (known part of μ) + max_u (u W + w_r √(A² − u²)) = (known part) + A √(W² + w_r²),
//!
//! only a little above the bound A·w_r that an exact mean would give while W ≪ w_r. (Where
//! rounding makes ρ² slightly negative and it is clamped to 0, u may exceed A by the clamping
//! tolerance: the bound takes the larger of the two expressions.)
//!
//! **Two observations ahead.** Most of a point's remaining variance is usually explained by
//! the observations nearest to it, wherever they sit among the rows. Conditioning on more data
//! never increases a posterior variance, so ρ_t²(x) ≤ the variance given the first r
//! observations and the two observations i₁, i₂ > r with the largest k(x, xᵢ):
//! ρ_t² ≤ A² − g, g = cᵀC⁻¹c, where cₖ = k(x, x_{iₖ}) − vᵀL[iₖ, ..r] are the posterior
//! covariances given the first r (row iₖ of L begins with L_r⁻¹k_r(x_{iₖ})), and C, the
//! posterior covariance of the two plus aI, is read off the rows' unsolved parts:
//! C_kl = Σ_{j≥r} L[iₖ, j] L[i_l, j]. That is two dot products of length r per point and
//! regulariser, and the mean's bound becomes max over u ∈ [√g, A]. g is used only where the
//! 2 × 2 system is well conditioned, and reduced by the rounding allowance of the clamping
//! (10⁻⁶(k(x, x) + a)), the same allowance the forward substitution's rounding is granted
//! everywhere else. This halves the rows solved for the points that survive the first block.
//!
//! Floating point: the partial sums are accumulated row by row in the same order as the final
//! ones, the stale mean enters both identically, and the upper bounds carry a margin of
//! 2(t + 8)ε times the magnitudes involved, more than the rounding of any sum of at most t
//! terms; the look-ahead g gives up twice the clamping allowance. So the upper bounds are ≥
//! the final values as computed, and a dropped point's U is strictly below a value that some
//! point attains. The selected index is therefore the argmax of U as computed here (the
//! lowest index among ties).

use std::cmp::Ordering;

use faer::MatMut;

use super::CholeskyFactor;
use super::cholesky::BLOCK_ROWS;
use super::health::{clamp_variance, rounding_tolerance};
use crate::error::{Error, Result};
use crate::linalg::dot;

/// Points solved to the end early, to give the floor (two did as well as four or eight in
/// measurements at t = 1000: each costs a full pass over the factor).
const PROBES: usize = 2;
/// Rows solved for every point before the probes are chosen.
const PROBE_AFTER: usize = BLOCK_ROWS;

/// A query batch: everything that does not depend on which points are still in play.
pub(crate) struct Batch<'a> {
    /// One factor per regulariser, all with t rows.
    pub factors: &'a [CholeskyFactor],
    /// k(xᵢ, q_j), row-major t × m.
    pub cross: &'a [f64],
    /// Number of points m.
    pub len: usize,
    /// k(q_j, q_j).
    pub prior_variance: &'a [f64],
    /// μ_r at q_j from the first `stale[r]` observations only (k_s(q_j)ᵀα_s),
    /// regulariser-major: `means[r * m + j]`.
    pub means: &'a [f64],
    /// s_r, the observations the stale means cover (≤ t).
    pub stale: &'a [usize],
    /// w_r ≥ 0.
    pub widths: &'a [f64],
    /// Per regulariser, Σ_{k≥i} w_k² for i = 0..=t (t + 1 entries each, regulariser-major).
    pub tails: &'a [f64],
    /// Per point, the two observations with the largest k(xᵢ, q_j) ([`nearest_observations`]).
    pub nearest: &'a [[usize; 2]],
}

/// Per point q_j of a cross block k(xᵢ, q_j) (row-major t × m), the indices of the two
/// observations with the largest kernel values, the larger first (the first index among ties;
/// both 0 when t = 1).
pub(crate) fn nearest_observations(cross: &[f64], t: usize, m: usize) -> Vec<[usize; 2]> {
    let mut nearest = vec![[0, 0]; m];
    if t < 2 {
        return nearest;
    }
    // The two largest values so far per point; row by row, so that the block is read in order.
    let mut top: Vec<[f64; 2]> = Vec::with_capacity(m);
    for (j, pair) in nearest.iter_mut().enumerate() {
        let (a, b) = (cross[j], cross[m + j]);
        if b > a {
            *pair = [1, 0];
            top.push([b, a]);
        } else {
            *pair = [0, 1];
            top.push([a, b]);
        }
    }
    for i in 2..t {
        let row = &cross[i * m..(i + 1) * m];
        for ((&v, pair), best) in row.iter().zip(&mut nearest).zip(&mut top) {
            if v > best[0] {
                *pair = [i, pair[0]];
                *best = [v, best[0]];
            } else if v > best[1] {
                pair[1] = i;
                best[1] = v;
            }
        }
    }
    nearest
}

impl Batch<'_> {
    fn rows(&self) -> usize {
        self.factors[0].len()
    }

    /// An upper bound on U at point j after `rows` solved rows, given per regulariser the sum
    /// of their squares (`explained(r)`) and the mean's accumulated part beyond the stale
    /// rows (`partial(r)`); the value itself (up to the clamping of rounding) once all rows are
    /// solved. See the module documentation.
    fn upper(
        &self,
        j: usize,
        rows: usize,
        explained: impl Fn(usize) -> f64,
        partial: impl Fn(usize) -> f64,
        ahead: impl Fn(usize) -> f64,
    ) -> f64 {
        let (m, t) = (self.len, self.rows());
        let prior = self.prior_variance[j];
        (0..self.factors.len())
            .map(|r| {
                let mean = self.means[r * m + j] + partial(r);
                let width = self.widths[r];
                let variance = (prior - explained(r)).max(0.0);
                if rows == t {
                    return mean + width * variance.sqrt();
                }
                let missing = self.tails[r * (t + 1) + rows.max(self.stale[r])];
                let slack = rounding_tolerance(prior.abs() + self.factors[r].regulariser());
                // max over u ∈ [√g, A] of u W + w √(A² − u²): at u = A W/√(W² + w²) if that
                // is allowed, else at u = √g.
                let gain = ahead(r).min(variance);
                let spread = missing + width * width;
                let main = if spread > 0.0 && variance * missing < gain * spread {
                    (gain * missing).sqrt() + width * (variance - gain).sqrt()
                } else {
                    (variance * spread).sqrt()
                };
                let bonus = main.max(((variance + slack) * missing).sqrt());
                let scale = self.means[r * m + j].abs()
                    + partial(r).abs()
                    + 2.0 * (prior.abs() + slack).sqrt() * (missing.sqrt() + width);
                mean + bonus + 2.0 * (t + 8) as f64 * f64::EPSILON * scale
            })
            .fold(f64::INFINITY, f64::min)
    }
}

/// End of the row chunk starting at `start`: quarter blocks over the first storage block,
/// where most points drop out, then whole blocks (a chunk never straddles two).
fn chunk_end(start: usize, t: usize) -> usize {
    let step = if start < BLOCK_ROWS {
        BLOCK_ROWS / 4
    } else {
        BLOCK_ROWS
    };
    (start + step).min(t)
}

/// Points solved in lockstep: for each regulariser, the solved rows of their columns.
struct Columns {
    /// Their indices in the batch, ascending.
    points: Vec<usize>,
    /// Per regulariser, row-major `rows × points.len()`.
    solved: Vec<Vec<f64>>,
    /// ‖solved rows‖², regulariser-major: `explained[r * points.len() + c]`.
    explained: Vec<f64>,
    /// Σ vᵢwᵢ over the solved rows i ≥ s_r (the part of the mean the stale means lack),
    /// regulariser-major like `explained`.
    partial: Vec<f64>,
    /// vᵀL[iₖ, ..rows] for the two nearest observations iₖ of each point (the part of the
    /// look-ahead covariance cₖ accumulated so far): `dots[(2r + k) * points.len() + c]`.
    dots: Vec<f64>,
    /// Rows solved so far.
    rows: usize,
}

impl Columns {
    /// Every point of the batch, solving into `storage` (one buffer per regulariser, whose
    /// allocations are reused).
    fn all(batch: &Batch<'_>, storage: Vec<Vec<f64>>) -> Self {
        let n_reg = batch.factors.len();
        debug_assert_eq!(storage.len(), n_reg);
        Self {
            points: (0..batch.len).collect(),
            solved: storage,
            explained: vec![0.0; n_reg * batch.len],
            partial: vec![0.0; n_reg * batch.len],
            dots: vec![0.0; 2 * n_reg * batch.len],
            rows: 0,
        }
    }

    fn len(&self) -> usize {
        self.points.len()
    }

    /// The upper bound on U at column c, with the look-ahead of the two nearest observations
    /// if `ahead` (O(t) more per regulariser), else without (O(1)); never larger with it.
    fn upper(&self, batch: &Batch<'_>, c: usize, ahead: bool) -> f64 {
        let n = self.len();
        batch.upper(
            self.points[c],
            self.rows,
            |r| self.explained[r * n + c],
            |r| self.partial[r * n + c],
            |r| if ahead { self.ahead(batch, c, r) } else { 0.0 },
        )
    }

    /// Whether column c may still hold the maximum: its upper bound is not below `floor`
    /// (NaN is kept, for the final check to report). The look-ahead is computed only for the
    /// points that survive the bound without it.
    fn may_win(&self, batch: &Batch<'_>, c: usize, floor: f64) -> bool {
        if floor == f64::NEG_INFINITY {
            return true;
        }
        let below = |ahead| self.upper(batch, c, ahead).partial_cmp(&floor) == Some(Ordering::Less);
        !below(false) && !below(true)
    }

    /// g = cᵀC⁻¹c, the variance that the two observations nearest to column c's point explain
    /// beyond the solved rows, for regulariser r, less twice the clamping allowance; 0 where
    /// not both are unsolved or C is not clearly positive definite (then the nearer alone).
    fn ahead(&self, batch: &Batch<'_>, c: usize, r: usize) -> f64 {
        let (rows, n, m) = (self.rows, self.len(), batch.len);
        let j = self.points[c];
        let [first, second] = batch.nearest[j];
        if rows == 0 || first < rows {
            return 0.0;
        }
        let factor = &batch.factors[r];
        // c_k = k(x, x_i) − vᵀL[i, ..r], the dot accumulated by `advance`.
        let covariance =
            |k: usize, i: usize| batch.cross[i * m + j] - self.dots[(2 * r + k) * n + c];
        // C_kl = Σ_{j≥r} L[k, j] L[l, j].
        let unsolved = |k: usize, l: usize| -> f64 {
            let end = k.min(l) + 1;
            dot(&factor.row(k)[rows..end], &factor.row(l)[rows..end])
        };
        let allowance =
            2.0 * rounding_tolerance(batch.prior_variance[j].abs() + factor.regulariser());
        let c1 = covariance(0, first);
        let d1 = unsolved(first, first);
        let mut gain = c1 * c1 / d1;
        if second >= rows && second != first {
            let c2 = covariance(1, second);
            let (d2, d12) = (unsolved(second, second), unsolved(first, second));
            let det = d1 * d2 - d12 * d12;
            if det > 1e-3 * d1 * d2 {
                let joint = (c1 * c1 * d2 - 2.0 * c1 * c2 * d12 + c2 * c2 * d1) / det;
                gain = gain.max(joint);
            }
        }
        if gain.is_finite() {
            (gain - allowance).max(0.0)
        } else {
            0.0
        }
    }

    /// Solves the next chunk of rows for every point.
    fn advance(&mut self, batch: &Batch<'_>) {
        let (start, n, m) = (self.rows, self.len(), batch.len);
        let end = chunk_end(start, batch.rows());
        for (r, factor) in batch.factors.iter().enumerate() {
            let solved = &mut self.solved[r];
            solved.resize(end * n, 0.0);
            let points = &self.points;
            let rows = &mut solved[start * n..end * n];
            crate::parallel::for_each_chunk(rows, n, rows.len(), |i, row| {
                let source = &batch.cross[(start + i) * m..(start + i + 1) * m];
                for (v, &j) in row.iter_mut().zip(points) {
                    *v = source[j];
                }
            });
            let matrix = MatMut::from_row_major_slice_mut(&mut solved[..end * n], end, n);
            let work = (end - start) * end * n;
            crate::parallel::for_each_column_block(matrix, work, |_, columns| {
                factor.solve_rows(start, end, columns);
            });
            let explained = &mut self.explained[r * n..(r + 1) * n];
            let partial = &mut self.partial[r * n..(r + 1) * n];
            let whitened = factor.whitened_targets();
            for (i, row) in (start..end).zip(solved[start * n..].chunks_exact(n)) {
                for (ex, &v) in explained.iter_mut().zip(row) {
                    *ex += v * v;
                }
                if i >= batch.stale[r] {
                    for (p, &v) in partial.iter_mut().zip(row) {
                        *p += v * whitened[i];
                    }
                }
            }
            // vᵀL[iₖ, start..end] for the nearest observations not solved yet (the others'
            // look-ahead is 0, and their dots are never read).
            for k in 0..2 {
                let dots = &mut self.dots[(2 * r + k) * n..(2 * r + k + 1) * n];
                for (c, dot) in dots.iter_mut().enumerate() {
                    let near = batch.nearest[self.points[c]][k];
                    if near < end {
                        continue;
                    }
                    let l = &factor.row(near)[start..end];
                    *dot += l
                        .iter()
                        .enumerate()
                        .map(|(i, l)| solved[(start + i) * n + c] * l)
                        .sum::<f64>();
                }
            }
        }
        self.rows = end;
    }

    /// Keeps the columns at the ascending positions `kept`, in place.
    fn retain(&mut self, kept: &[usize]) {
        let n = self.len();
        if kept.len() == n {
            return;
        }
        for solved in &mut self.solved {
            let rows = self.rows;
            if rows * kept.len() >= 1 << 16 {
                // Out of place, so that the rows can be copied in parallel.
                let mut packed = vec![0.0; rows * kept.len()];
                let work = 4 * packed.len();
                let source: &[f64] = solved;
                crate::parallel::for_each_chunk(&mut packed, kept.len(), work, |i, row| {
                    for (v, &k) in row.iter_mut().zip(kept) {
                        *v = source[i * n + k];
                    }
                });
                *solved = packed;
            } else {
                compact_columns(&mut solved[..rows * n], n, kept);
            }
        }
        compact_columns(&mut self.explained, n, kept);
        self.explained.truncate(self.solved.len() * kept.len());
        compact_columns(&mut self.partial, n, kept);
        self.partial.truncate(self.solved.len() * kept.len());
        compact_columns(&mut self.dots, n, kept);
        self.dots.truncate(2 * self.solved.len() * kept.len());
        self.points = kept.iter().map(|&c| self.points[c]).collect();
    }

    /// Moves the columns at the ascending positions `taken` into a new set.
    fn take(&mut self, taken: &[usize]) -> Self {
        let n = self.len();
        let gather = |matrix: &[f64]| -> Vec<f64> {
            matrix
                .chunks_exact(n)
                .flat_map(|row| taken.iter().map(move |&c| row[c]))
                .collect()
        };
        let out = Self {
            points: taken.iter().map(|&c| self.points[c]).collect(),
            solved: self
                .solved
                .iter()
                .map(|s| gather(&s[..self.rows * n]))
                .collect(),
            explained: gather(&self.explained),
            partial: gather(&self.partial),
            dots: gather(&self.dots),
            rows: self.rows,
        };
        let kept: Vec<usize> = (0..n).filter(|c| !taken.contains(c)).collect();
        self.retain(&kept);
        out
    }

    /// U of every point, once all rows are solved.
    ///
    /// # Errors
    /// [`Error::NotPositiveDefinite`] for a clearly negative posterior variance.
    fn values(&self, batch: &Batch<'_>) -> Result<Vec<f64>> {
        let n = self.len();
        let m = batch.len;
        let mut values = vec![f64::INFINITY; n];
        for (r, &width) in batch.widths.iter().enumerate() {
            let a = batch.factors[r].regulariser();
            for (c, value) in values.iter_mut().enumerate() {
                let j = self.points[c];
                let prior = batch.prior_variance[j];
                let ex = self.explained[r * n + c];
                let variance = clamp_variance(prior - ex, prior.abs() + a, j)?;
                let mean = batch.means[r * m + j] + self.partial[r * n + c];
                *value = value.min(mean + width * variance.sqrt());
            }
        }
        Ok(values)
    }
}

/// Keeps, in every row of the row-major `matrix` (rows of `width` entries), the entries at
/// the ascending column indices `kept`, packed to the front: the result is row-major with
/// `kept.len()` columns. In place; moves never overwrite an entry still to be read.
fn compact_columns(matrix: &mut [f64], width: usize, kept: &[usize]) {
    let rows = matrix.len() / width;
    for i in 0..rows {
        for (c, &k) in kept.iter().enumerate() {
            matrix[i * kept.len() + c] = matrix[i * width + k];
        }
    }
}

/// The index of the point with the largest U (lowest index among ties). `storage` holds one
/// buffer per regulariser, used as scratch (its allocations are reused from call to call);
/// on success each holds the chosen point's solved column L_r⁻¹k_t(x).
///
/// # Errors
/// [`Error::NonFinite`] for a NaN U; [`Error::NotPositiveDefinite`] for a clearly negative
/// posterior variance at a point that is solved to the end.
pub(crate) fn argmax(batch: &Batch<'_>, storage: &mut Vec<Vec<f64>>) -> Result<usize> {
    let t = batch.rows();
    let mut floor = f64::NEG_INFINITY;
    let mut rest = Columns::all(batch, std::mem::take(storage));
    let mut finished = Vec::new();
    loop {
        // NaN (from a NaN mean) is kept, for the final check to report.
        let kept: Vec<usize> = (0..rest.len())
            .filter(|&c| rest.may_win(batch, c, floor))
            .collect();
        rest.retain(&kept);
        if rest.rows == t || rest.len() == 0 {
            break;
        }
        if finished.is_empty() && rest.rows >= PROBE_AFTER && rest.len() > PROBES {
            let uppers: Vec<f64> = (0..rest.len())
                .map(|c| rest.upper(batch, c, true))
                .collect();
            let mut order: Vec<usize> = (0..rest.len()).collect();
            order.sort_by(|&a, &b| uppers[b].total_cmp(&uppers[a]));
            let mut top = order[..PROBES].to_vec();
            top.sort_unstable();
            let mut probes = rest.take(&top);
            while probes.rows < t {
                probes.advance(batch);
            }
            let values = probes.values(batch)?;
            floor = values.iter().copied().fold(floor, f64::max);
            finished.push((probes, values));
            continue;
        }
        rest.advance(batch);
    }
    let values = rest.values(batch)?;
    finished.push((rest, values));

    let mut best: Option<(f64, usize, usize, usize)> = None;
    for (s, (set, values)) in finished.iter().enumerate() {
        for (c, &v) in values.iter().enumerate() {
            let j = set.points[c];
            if v.is_nan() {
                return Err(Error::NonFinite {
                    what: format!("upper confidence bound of arm {j}"),
                });
            }
            let better = match best {
                None => true,
                Some((bv, bj, _, _)) => v > bv || (v == bv && j < bj),
            };
            if better {
                best = Some((v, j, s, c));
            }
        }
    }
    let (_, j, s, c) = best.ok_or(Error::NoArms)?;
    let columns: Vec<Vec<f64>> = {
        let set = &finished[s].0;
        let n = set.len();
        set.solved
            .iter()
            .map(|solved| (0..t).map(|i| solved[i * n + c]).collect())
            .collect()
    };
    let rest = finished
        .pop()
        .expect("the remaining points are always last")
        .0;
    *storage = rest.solved;
    for (buffer, column) in storage.iter_mut().zip(columns) {
        buffer.clear();
        buffer.extend_from_slice(&column);
    }
    Ok(j)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Matern;
    use crate::points::AsPoints;
    use crate::posterior::ExactPosterior;
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    /// The two largest entries of every column, the first index among ties, against a sort.
    #[test]
    fn nearest_observations_match_a_sort() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let (t, m) = (57, 11);
        // Few distinct values, so that ties are common.
        let cross: Vec<f64> = (0..t * m)
            .map(|_| f64::from(rng.random_range(0..6u8)))
            .collect();
        let nearest = nearest_observations(&cross, t, m);
        for (j, pair) in nearest.iter().enumerate() {
            let mut order: Vec<usize> = (0..t).collect();
            order.sort_by(|&a, &b| {
                cross[b * m + j]
                    .total_cmp(&cross[a * m + j])
                    .then(a.cmp(&b))
            });
            assert_eq!(*pair, [order[0], order[1]], "column {j}");
        }
        assert_eq!(nearest_observations(&[1.0, 2.0], 1, 2), vec![[0, 0]; 2]);
    }

    /// The upper bound after every row chunk is ≥ the final U of every point, for stale
    /// weights covering none, some or all of the rows, for regularisers whose whitened targets
    /// are small and large against the widths, and on arms that include observed points (ρ
    /// clamped near 0) and exact duplicates. This is what makes pruning exact; it is checked
    /// here directly, on every point rather than only on the ones a floor would drop.
    #[test]
    fn upper_bounds_hold_after_every_chunk() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut gp =
            ExactPosterior::new(Matern::new(2.5, 0.3).unwrap(), &[1e-4, 0.01, 1.0]).unwrap();
        let xs: Vec<Vec<f64>> = (0..300)
            .map(|_| (0..3).map(|_| rng.random::<f64>()).collect())
            .collect();
        for x in &xs {
            let y = 5.0 * (4.0 * x[0]).sin() + x[1] + 0.1 * rng.random::<f64>();
            gp.observe(x, y).unwrap();
        }
        let t = gp.len();
        let mut arms: Vec<Vec<f64>> = (0..30)
            .map(|_| (0..3).map(|_| rng.random::<f64>()).collect())
            .collect();
        arms.extend(xs[290..].iter().cloned());
        arms.push(arms[0].clone());
        let m = arms.len();
        let (prior, cross) = gp.query_block(&arms.as_points().unwrap()).unwrap();
        let factors: Vec<CholeskyFactor> = (0..3).map(|r| gp.factor(r).clone()).collect();
        let mut tails = vec![0.0; 3 * (t + 1)];
        for (factor, tail) in factors.iter().zip(tails.chunks_exact_mut(t + 1)) {
            for (i, w) in factor.whitened_targets().iter().enumerate().rev() {
                tail[i] = tail[i + 1] + w * w;
            }
        }
        for stale_rows in [0, 100, 250, 299, 300] {
            let mut means = vec![0.0; 3 * m];
            for (r, factor) in factors.iter().enumerate() {
                let alpha = if stale_rows == 0 {
                    Vec::new()
                } else {
                    let mut sub = CholeskyFactor::new(factor.regulariser());
                    for i in 0..stale_rows {
                        sub.commit(
                            sub.pending_row(
                                &gp.kernel_matrix()
                                    .row(i)
                                    .columns(0, i)
                                    .iter()
                                    .copied()
                                    .collect::<Vec<_>>(),
                                1.0,
                                gp.targets()[i],
                            )
                            .unwrap(),
                        );
                    }
                    sub.weights()
                };
                for j in 0..m {
                    means[r * m + j] = (0..stale_rows).map(|i| cross[i * m + j] * alpha[i]).sum();
                }
            }
            let stale = [stale_rows; 3];
            let nearest = nearest_observations(&cross, t, m);
            for widths in [[0.5, 0.5, 0.5], [30.0, 3.0, 0.1], [0.0, 0.0, 0.0]] {
                let batch = Batch {
                    factors: &factors,
                    cross: &cross,
                    len: m,
                    prior_variance: &prior,
                    means: &means,
                    stale: &stale,
                    widths: &widths,
                    tails: &tails,
                    nearest: &nearest,
                };
                let mut columns = Columns::all(&batch, vec![Vec::new(); 3]);
                let mut uppers = Vec::new();
                while columns.rows < t {
                    columns.advance(&batch);
                    uppers.push((
                        columns.rows,
                        (0..m)
                            .map(|c| columns.upper(&batch, c, true))
                            .collect::<Vec<_>>(),
                    ));
                }
                let values = columns.values(&batch).unwrap();
                for (rows, upper) in &uppers {
                    for j in 0..m {
                        assert!(
                            upper[j] >= values[j],
                            "s = {stale_rows}, widths {widths:?}, {rows} rows: point {j}'s bound {} < its U {}",
                            upper[j],
                            values[j]
                        );
                    }
                }
                assert_eq!(values[0], values[m - 1], "exact duplicates");
            }
        }
    }
}
