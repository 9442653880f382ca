//! Exact GP posterior over a fixed candidate set, grown one chosen point at a time.

use crate::error::{Error, Result, positive};
use crate::kernel::Kernel;
use crate::points::AsPoints;

/// The GP posterior (noise λ, Iwazaki & Takeno 2025 Eqs. 4–5) of a fixed set of candidate
/// points given a growing sequence of chosen candidates, kept for every candidate at once.
///
/// For the chosen points S = (s₁, …, s_n) with Cholesky factor L of K_SS + λI, every candidate
/// c keeps its column w_c = L⁻¹k_S(c), so that σ²(c; S) = k(c, c) − ‖w_c‖². Choosing one more
/// point is one rank-one step for all candidates: the new factor row is w_{s} with pivot
/// √(σ²(s; S) + λ), and each candidate gains the entry (k(c, s) − w_c·w_s)/pivot, by which
/// its variance drops. That is O(A n) for A candidates — the incremental maximum-variance
/// selection of Iwazaki & Takeno 2025 Alg. 1 line 8 (no fresh solve per candidate per pick), and the
/// greedy information-gain estimate of Srinivas et al. (2010) §5.1.
///
/// With targets y for the chosen points, the posterior mean is μ(c) = w_c·L⁻¹y (O(A n)).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GreedyVariance<K> {
    kernel: K,
    lambda: f64,
    dim: usize,
    /// Candidates, row-major.
    candidates: Vec<f64>,
    /// k(c, c).
    prior: Vec<f64>,
    /// σ²(c; S).
    variance: Vec<f64>,
    /// Entry r of every candidate's column: `columns[r * A + c]` = (L⁻¹k_S(c))_r.
    columns: Vec<f64>,
    /// The chosen candidates, in order.
    chosen: Vec<usize>,
    /// L's diagonal.
    pivots: Vec<f64>,
}

impl<K: Kernel> GreedyVariance<K> {
    /// The prior over `candidates` (nothing chosen), with GP noise `lambda`.
    ///
    /// # Errors
    /// Invalid points, [`Error::NoArms`] for no candidate, [`Error::InvalidParameter`] for λ ≤ 0, the kernel's
    /// dimension check, [`Error::NonFinite`] for a non-finite k(c, c).
    pub fn new<A: AsPoints + ?Sized>(kernel: K, candidates: &A, lambda: f64) -> Result<Self> {
        let candidates = candidates.as_points()?;
        if candidates.is_empty() {
            return Err(Error::NoArms);
        }
        kernel.check_dim(candidates.dim())?;
        let mut flat = Vec::with_capacity(candidates.len() * candidates.dim());
        candidates.for_each(|_, x| flat.extend_from_slice(x));
        let prior: Vec<f64> = flat
            .chunks_exact(candidates.dim())
            .map(|x| kernel.eval_diag(x))
            .collect();
        if prior.iter().any(|p| !p.is_finite()) {
            return Err(Error::NonFinite {
                what: "kernel value k(x, x) of a candidate".into(),
            });
        }
        Ok(Self {
            lambda: positive("lambda", lambda)?,
            dim: candidates.dim(),
            variance: prior.clone(),
            prior,
            candidates: flat,
            kernel,
            columns: Vec::new(),
            chosen: Vec::new(),
            pivots: Vec::new(),
        })
    }

    /// Number of candidates A.
    pub fn candidates(&self) -> usize {
        self.prior.len()
    }

    /// Candidate `c`'s coordinates.
    ///
    /// # Panics
    /// If `c >= self.candidates()`.
    pub fn candidate(&self, c: usize) -> &[f64] {
        &self.candidates[c * self.dim..(c + 1) * self.dim]
    }

    /// The chosen candidates, in the order chosen.
    pub fn chosen(&self) -> &[usize] {
        &self.chosen
    }

    /// σ²(c; S) for every candidate (clamped at 0 against rounding).
    pub fn variances(&self) -> &[f64] {
        &self.variance
    }

    /// Forgets every chosen point (back to the prior), keeping the allocations.
    pub fn reset(&mut self) {
        self.variance.clone_from(&self.prior);
        self.columns.clear();
        self.chosen.clear();
        self.pivots.clear();
    }

    /// The candidate of largest variance among `among` (the lowest index among ties), or
    /// `None` if `among` is empty.
    pub fn argmax_variance(&self, among: &[usize]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &c in among {
            if best.is_none_or(|b| self.variance[c] > self.variance[b]) {
                best = Some(c);
            }
        }
        best
    }

    /// Adds candidate `j` to the chosen points and updates every candidate's variance: O(A n).
    ///
    /// # Panics
    /// If `j >= self.candidates()`.
    pub fn choose(&mut self, j: usize) {
        let a = self.candidates();
        let n = self.chosen.len();
        let pivot = (self.variance[j] + self.lambda).sqrt();
        // k(c, s) for every candidate c, then subtract Σ_r w_c,r w_s,r.
        let mut entry = vec![0.0; a];
        let point = self.candidate(j).to_vec();
        self.kernel.eval_rows(&self.candidates, &point, &mut entry);
        for r in 0..n {
            let row = &self.columns[r * a..(r + 1) * a];
            let ws = row[j];
            for (e, &w) in entry.iter_mut().zip(row) {
                *e -= w * ws;
            }
        }
        for ((e, v), p) in entry.iter_mut().zip(&mut self.variance).zip(&self.prior) {
            *e /= pivot;
            *v = (*v - *e * *e).max(0.0).min(*p);
        }
        self.columns.extend_from_slice(&entry);
        self.chosen.push(j);
        self.pivots.push(pivot);
    }

    /// The posterior mean μ(c; S, y) at every candidate, for targets `y` of the chosen points
    /// in the order chosen: O(n² + A n).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `y.len()` differs from the number of chosen points;
    /// [`Error::NonFinite`] for a non-finite target, or a mean that overflows (targets far
    /// beyond the scale of a tiny λ).
    pub fn mean(&self, y: &[f64]) -> Result<Vec<f64>> {
        let a = self.candidates();
        let n = self.chosen.len();
        crate::error::one_target_per_point(n, y.len())?;
        if y.iter().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "target".into(),
            });
        }
        // z = L⁻¹y, with L's row s = (w_{j_s}, pivot_s).
        let mut z = y.to_vec();
        for s in 0..n {
            let js = self.chosen[s];
            let mut acc = z[s];
            for (r, zr) in z[..s].iter().enumerate() {
                acc -= self.columns[r * a + js] * zr;
            }
            z[s] = acc / self.pivots[s];
        }
        let mut mean = vec![0.0; a];
        for (r, &zr) in z.iter().enumerate() {
            for (m, &w) in mean.iter_mut().zip(&self.columns[r * a..(r + 1) * a]) {
                *m += w * zr;
            }
        }
        if mean.iter().all(|m| m.is_finite()) {
            Ok(mean)
        } else {
            Err(Error::NonFinite {
                what: "posterior mean (the targets are too large for λ)".into(),
            })
        }
    }

    /// The information gain ½ Σ_s ln(1 + σ²_{s−1}(x_s)/λ) = ½ ln det(I + K_SS/λ) of the chosen
    /// points.
    pub fn information_gain(&self) -> f64 {
        self.pivots
            .iter()
            .map(|p| (p * p / self.lambda).ln())
            .sum::<f64>()
            / 2.0
    }
}

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for GreedyVariance<K> {
    fn kind() -> String {
        format!("greedy-variance<{}>", K::kind())
    }

    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::{ensure, ensure_finite};
        self.kernel.restore()?;
        crate::error::positive("lambda", self.lambda)
            .map_err(crate::snapshot::rebuild_error("greedy variance"))?;
        let a = self.prior.len();
        let n = self.chosen.len();
        ensure(
            a > 0
                && self.dim > 0
                && a.checked_mul(self.dim) == Some(self.candidates.len())
                && self.variance.len() == a
                && n.checked_mul(a) == Some(self.columns.len())
                && self.pivots.len() == n
                && self.chosen.iter().all(|&c| c < a),
            || format!("greedy state of {n} picks among {a} candidates"),
        )?;
        self.kernel
            .check_dim(self.dim)
            .map_err(crate::snapshot::rebuild_error("kernel and candidates"))?;
        ensure(self.pivots.iter().all(|&p| p > 0.0), || {
            "non-positive pivot".into()
        })?;
        ensure_finite(&self.candidates, "candidates")?;
        ensure_finite(&self.prior, "prior variances")?;
        ensure_finite(&self.variance, "variances")?;
        ensure_finite(&self.columns, "solved columns")?;
        ensure_finite(&self.pivots, "pivots")
    }
}
