//! The exact argmax of an upper confidence bound over a batch of points, with pruning
//! (behind [`super::ExactPosterior::argmax_upper`]).
//!
//! U(x) = min_r (μ_r(x) + w_r ρ_r(x)) with ρ_r²(x) = k(x, x) − ‖L_r⁻¹k_t(x)‖². The means cost
//! O(t) per point; the forward substitutions, O(t²) per point, are what pruning saves. They run
//! in row chunks over a set of points at once, and after each chunk the partial ‖·‖², which only
//! grows, bounds ρ_r and hence U from above. A point whose upper bound falls below a floor
//! (a value that the maximum of U is known to reach) cannot win and is dropped.
//!
//! Two floors: max_x min_r μ_r(x), free, since w_r ρ_r ≥ 0; and, once the first 128 rows are
//! solved for every point, the exact U of the few points with the largest upper bounds, which
//! are solved to the end first. The second matters when exploration bonuses dominate the
//! spread of the means (rough kernels, short length-scales), where the first prunes nothing.
//!
//! From 256 observations on, each point also gets an upper bound from the eight observations
//! nearest to it ([`super::local`]: conditioning on fewer data never lowers the posterior
//! variance). Where the data are dense at the scale of the kernel it drops most points before
//! any row is solved, and ranks the rest so well that eight probes, solved first, usually
//! include every point that survives: each factor is then read in one pass rather than two.
//! (At t = 1000 with 100 arms, the points alive after the probes fell from about 50 to a
//! median of 0, and the DMM round by about a quarter.) Where eight neighbours explain too
//! little of the variance (long length-scales) a single factor does better with the first
//! rows' ranking, and [`Choice::crowded`] tells the caller which of the two paths to take.
//! These bounds lie above the computed U by a rounding margin, argued in [`super::local`].
//!
//! With several regularisers, any one U_r bounds U = min_r U_r from above.
//! Until the probes are taken every regulariser is solved in lockstep; after that each
//! remaining point goes on with the regulariser whose bound on U_r is the smallest at that
//! moment (usually the same one for all), and its other factors wait until that one is solved
//! to the end. Most points are dropped on that one factor, so the others are read only for
//! the few that survive: the probes are the bulk of the forward-substitution work that is
//! left. (Which regulariser goes first changes the work, never the result.)
//!
//! Floating point: the partial sums are accumulated row by row in the same order as the final
//! ones, so the upper bounds are ≥ the final values bit for bit, and a dropped point's U is
//! strictly below a value that some point attains. The selected index is therefore the exact
//! argmax of U as computed here (the lowest index among ties).

use faer::MatMut;

use super::CholeskyFactor;
use super::cholesky::BLOCK_ROWS;
use super::health::clamp_variance;
use crate::error::{Error, Result};

/// Points solved to the end early, to give the second floor.
const PROBES: usize = 4;
/// Points solved to the end first when the batch has local bounds ([`Batch::local`]): ranked by
/// those, they include nearly every point that survives them, so that each factor is read in
/// one pass for the probes and the survivors together.
const LOCAL_PROBES: usize = 8;
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
    /// μ_r(q_j), regulariser-major: `means[r * m + j]`.
    pub means: &'a [f64],
    /// w_r ≥ 0.
    pub widths: &'a [f64],
    /// Upper bounds on U from a few observations near each point ([`super::local`]), one per
    /// point, or empty.
    pub local: &'a [f64],
}

impl Batch<'_> {
    fn rows(&self) -> usize {
        self.factors[0].len()
    }

    /// U of point j given ‖solved rows‖² per regulariser (`explained(r)`); an upper bound
    /// while rows remain, the value itself (up to the clamping of rounding) once all are solved.
    fn upper(&self, j: usize, explained: impl Fn(usize) -> f64) -> f64 {
        let local = self.local.get(j).copied().unwrap_or(f64::INFINITY);
        (0..self.factors.len())
            .map(|r| self.upper_r(j, r, explained(r)))
            .fold(local, f64::min)
    }

    /// U_r of point j given ‖solved rows‖² = `explained` for regulariser r (an upper bound
    /// while rows remain).
    fn upper_r(&self, j: usize, r: usize, explained: f64) -> f64 {
        let variance = (self.prior_variance[j] - explained).max(0.0);
        self.means[r * self.len + j] + self.widths[r] * variance.sqrt()
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
    /// Per regulariser, row-major `rows[r] × points.len()`.
    solved: Vec<Vec<f64>>,
    /// ‖solved rows‖², regulariser-major: `explained[r * points.len() + c]`.
    explained: Vec<f64>,
    /// Rows solved so far, per regulariser.
    rows: Vec<usize>,
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
            rows: vec![0; n_reg],
        }
    }

    fn len(&self) -> usize {
        self.points.len()
    }

    fn upper(&self, batch: &Batch<'_>, c: usize) -> f64 {
        let n = self.len();
        batch.upper(self.points[c], |r| self.explained[r * n + c])
    }

    /// Whether every regulariser's rows are all solved.
    fn done(&self, t: usize) -> bool {
        self.rows.iter().all(|&rows| rows == t)
    }

    /// The fewest rows solved for any regulariser.
    fn min_rows(&self) -> usize {
        self.rows.iter().copied().min().unwrap_or(0)
    }

    /// Solves the next chunk of rows for every point, for every regulariser with rows left.
    fn advance(&mut self, batch: &Batch<'_>) {
        for r in 0..batch.factors.len() {
            self.advance_factor(batch, r);
        }
    }

    /// Solves the next chunk of rows of regulariser `r` for every point (nothing once all its
    /// rows are solved).
    fn advance_factor(&mut self, batch: &Batch<'_>, r: usize) {
        let (start, n, m) = (self.rows[r], self.len(), batch.len);
        if start == batch.rows() {
            return;
        }
        let end = chunk_end(start, batch.rows());
        let factor = &batch.factors[r];
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
        for row in solved[start * n..].chunks_exact(n) {
            for (ex, &v) in explained.iter_mut().zip(row) {
                *ex += v * v;
            }
        }
        self.rows[r] = end;
    }

    /// Keeps the columns at the ascending positions `kept`, in place.
    fn retain(&mut self, kept: &[usize]) {
        let n = self.len();
        if kept.len() == n {
            return;
        }
        for (solved, &rows) in self.solved.iter_mut().zip(&self.rows) {
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
                .zip(&self.rows)
                .map(|(s, &rows)| gather(&s[..rows * n]))
                .collect(),
            explained: gather(&self.explained),
            rows: self.rows.clone(),
        };
        let kept: Vec<usize> = (0..n).filter(|c| !taken.contains(c)).collect();
        self.retain(&kept);
        out
    }

    /// Drops the points whose upper bound is below `floor`. NaN (from a NaN mean) is kept,
    /// for the final check to report.
    fn prune(&mut self, batch: &Batch<'_>, floor: f64) {
        let kept: Vec<usize> = (0..self.len())
            .filter(|&c| self.upper(batch, c).partial_cmp(&floor) != Some(std::cmp::Ordering::Less))
            .collect();
        self.retain(&kept);
    }

    /// Splits the points by the regulariser whose upper bound on U_r is the smallest now (the
    /// lowest index among ties), each set with that regulariser; the largest set keeps these
    /// buffers.
    fn split_by_binding(mut self, batch: &Batch<'_>) -> Vec<(Self, usize)> {
        let (n, m, n_reg) = (self.len(), batch.len, batch.factors.len());
        // The binding regulariser of batch point j, at `binding[j]`.
        let mut binding = vec![0; m];
        let mut counts = vec![0; n_reg];
        for c in 0..n {
            let j = self.points[c];
            let bound = |r: usize| batch.upper_r(j, r, self.explained[r * n + c]);
            binding[j] =
                (1..n_reg).fold(0, |best, r| if bound(r) < bound(best) { r } else { best });
            counts[binding[j]] += 1;
        }
        let largest = (0..n_reg)
            .max_by_key(|&r| (counts[r], n_reg - r))
            .unwrap_or(0);
        let mut groups = Vec::new();
        for r in (0..n_reg).filter(|&r| r != largest && counts[r] > 0) {
            let members: Vec<usize> = (0..self.len())
                .filter(|&c| binding[self.points[c]] == r)
                .collect();
            groups.push((self.take(&members), r));
        }
        groups.push((self, largest));
        groups
    }

    /// U_r of the point at position `c` for every regulariser r, once all rows are solved:
    /// their minimum is that point's entry of [`Columns::values`], bit for bit (the same
    /// expression per term; the minimum is exact).
    ///
    /// # Errors
    /// As [`Columns::values`].
    fn terms(&self, batch: &Batch<'_>, c: usize) -> Result<Vec<f64>> {
        let (n, m, j) = (self.len(), batch.len, self.points[c]);
        let prior = batch.prior_variance[j];
        batch
            .widths
            .iter()
            .enumerate()
            .map(|(r, &width)| {
                let a = batch.factors[r].regulariser();
                let variance =
                    clamp_variance(prior - self.explained[r * n + c], prior.abs() + a, j)?;
                Ok(batch.means[r * m + j] + width * variance.sqrt())
            })
            .collect()
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
                *value = value.min(batch.means[r * m + j] + width * variance.sqrt());
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

/// The outcome of [`argmax`].
pub(crate) struct Choice {
    /// The point with the largest U (lowest index among ties).
    pub index: usize,
    /// The `count` points with the largest U, largest first (lowest index among ties); all of
    /// them if there are fewer.
    pub top: Vec<usize>,
    /// U_r of every point of `top`, for every regulariser r (their minimum is the U they were
    /// ranked by).
    pub top_terms: Vec<Vec<f64>>,
    /// The points still in play right after the probes were solved, if probes were taken.
    pub alive_after_probes: Option<usize>,
}

impl Choice {
    /// Whether more than a quarter of the `len` points were still in play after the probes.
    /// Without local bounds, that is where they pay for themselves; with them, it is where
    /// they do not (smooth kernels with long length-scales, where eight neighbours explain too
    /// little of the variance and the first rows rank the probes better).
    pub fn crowded(&self, len: usize) -> bool {
        self.alive_after_probes.is_some_and(|alive| 4 * alive > len)
    }
}

/// The `count` largest of `lower` (NaN ignored): at least `count` points have a U of at
/// least this value, when each `lower[j]` is a lower bound on point j's U. −∞ if fewer than
/// `count` values are not NaN.
fn kth_largest(lower: &[f64], count: usize, scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend(lower.iter().copied().filter(|v| !v.is_nan()));
    if count == 0 || scratch.len() < count {
        return f64::NEG_INFINITY;
    }
    let (_, kth, _) = scratch.select_nth_unstable_by(count - 1, |a, b| b.total_cmp(a));
    *kth
}

/// The indices of the `count` points with the largest U (largest first, lowest index among
/// ties), found as the single argmax is (see the module documentation) with the floor raised
/// to the `count`-th largest of the values known to be reached: a point whose upper bound is
/// below it has at least `count` points above it. With `count = 1`, the floor is the largest
/// of them, as for the argmax alone. `storage` holds one buffer per regulariser, used as
/// scratch (its allocations are reused from call to call); on success each holds the best
/// point's solved column L_r⁻¹k_t(x).
///
/// # Errors
/// [`Error::NonFinite`] for a NaN U; [`Error::NotPositiveDefinite`] for a clearly negative
/// posterior variance at a point that is solved to the end.
pub(crate) fn argmax(
    batch: &Batch<'_>,
    storage: &mut Vec<Vec<f64>>,
    count: usize,
) -> Result<Choice> {
    let (t, m, n_reg) = (batch.rows(), batch.len, batch.factors.len());
    let count = count.clamp(1, m.max(1));
    // A lower bound on each point's U: min_r μ_r (w_r ρ_r ≥ 0), then its U once solved.
    let mut lower: Vec<f64> = (0..m)
        .map(|j| {
            (0..n_reg)
                .map(|r| batch.means[r * m + j])
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let mut scratch = Vec::with_capacity(m);
    let mut floor = kth_largest(&lower, count, &mut scratch);
    // With local bounds the probes are ranked by them before any row is solved; without,
    // after the first block.
    let (probes_wanted, probe_after) = if batch.local.is_empty() {
        (PROBES.max(count), PROBE_AFTER)
    } else {
        (LOCAL_PROBES.max(count), 0)
    };
    let mut rest = Columns::all(batch, std::mem::take(storage));
    let mut finished = Vec::new();
    let mut alive_after_probes = None;
    // Every regulariser in lockstep until the probes are taken.
    loop {
        rest.prune(batch, floor);
        if rest.done(t) || rest.len() == 0 {
            break;
        }
        if finished.is_empty() && rest.min_rows() >= probe_after && rest.len() > probes_wanted {
            let uppers: Vec<f64> = (0..rest.len()).map(|c| rest.upper(batch, c)).collect();
            let mut order: Vec<usize> = (0..rest.len()).collect();
            order.sort_by(|&a, &b| uppers[b].total_cmp(&uppers[a]));
            let mut top = order[..probes_wanted].to_vec();
            top.sort_unstable();
            let mut probes = rest.take(&top);
            while !probes.done(t) {
                probes.advance(batch);
            }
            let values = probes.values(batch)?;
            for (&j, &v) in probes.points.iter().zip(&values) {
                lower[j] = lower[j].max(v);
            }
            floor = kth_largest(&lower, count, &mut scratch);
            finished.push((probes, values));
            rest.prune(batch, floor);
            alive_after_probes = Some(rest.len());
            break;
        }
        rest.advance(batch);
    }
    // Then each point goes on with the regulariser that bounds its U most tightly, the others
    // waiting until that one is solved to the end: a point is dropped as soon as one U_r
    // falls below the floor, so the other factors are read only for the few that survive.
    let groups = if n_reg > 1 && !rest.done(t) {
        rest.split_by_binding(batch)
    } else {
        vec![(rest, 0)]
    };
    for (mut group, binding) in groups {
        loop {
            group.prune(batch, floor);
            if group.done(t) || group.len() == 0 {
                break;
            }
            if group.rows[binding] < t {
                group.advance_factor(batch, binding);
            } else {
                group.advance(batch);
            }
        }
        let values = group.values(batch)?;
        for (&j, &v) in group.points.iter().zip(&values) {
            lower[j] = lower[j].max(v);
        }
        floor = kth_largest(&lower, count, &mut scratch);
        finished.push((group, values));
    }

    // (U, point, set, column) of every point solved to the end and not dropped.
    let mut solved: Vec<(f64, usize, usize, usize)> = Vec::new();
    for (s, (set, values)) in finished.iter().enumerate() {
        for (c, &v) in values.iter().enumerate() {
            let j = set.points[c];
            if v.is_nan() {
                return Err(Error::NonFinite {
                    what: format!("upper confidence bound of arm {j}"),
                });
            }
            solved.push((v, j, s, c));
        }
    }
    // No NaN is left, so `partial_cmp` is total (and −0 ties with +0).
    solved.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    solved.truncate(count);
    let top: Vec<usize> = solved.iter().map(|&(_, j, _, _)| j).collect();
    let top_terms = solved
        .iter()
        .map(|&(_, _, s, c)| finished[s].0.terms(batch, c))
        .collect::<Result<Vec<_>>>()?;
    let &(_, j, s, c) = solved.first().ok_or(Error::NoArms)?;
    let columns: Vec<Vec<f64>> = {
        let set = &finished[s].0;
        let n = set.len();
        set.solved
            .iter()
            .map(|solved| (0..t).map(|i| solved[i * n + c]).collect())
            .collect()
    };
    let last = finished
        .pop()
        .expect("the remaining points are always pushed")
        .0;
    *storage = last.solved;
    for (buffer, column) in storage.iter_mut().zip(columns) {
        buffer.clear();
        buffer.extend_from_slice(&column);
    }
    Ok(Choice {
        index: j,
        top,
        top_terms,
        alive_after_probes,
    })
}
