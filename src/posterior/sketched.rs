//! The Nyström-sketched (DTC) posterior that BKB and EK-UCB share (Calandriello et al. 2019
//! Eq. 4; Zenati et al. 2022 Prop. 4.2).

use std::collections::HashMap;

use faer::linalg::cholesky::llt::update::rank_r_update_clobber;
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};
use nalgebra::{DMatrix, DVector};

use crate::error::{Error, Result, positive};
use crate::kernel::Kernel;
use crate::points::{Points, check_point};

/// A candidate anchor whose residual k(z, z) − k_Z(z)ᵀK_ZZ⁻¹k_Z(z) is below this fraction of
/// k(z, z) already lies in the span of the dictionary (to rounding): adding it would not change
/// the Nyström projection, only make K_ZZ singular, so it is not added.
pub const ANCHOR_TOLERANCE: f64 = 1e-9;

/// The Nyström-sketched posterior of Calandriello et al. 2019 Eq. 4 and Zenati et al. 2022
/// Prop. 4.2: kernel ridge regression with regulariser λ restricted to the
/// span of a dictionary Z = {z₁, …, z_m} of observed points, with the DTC variance.
///
/// With the Nyström embedding z(x) = L_Z⁻¹k_Z(x) (L_Z the Cholesky factor of K_ZZ, an
/// orthogonal rotation of Calandriello et al. 2019's (K_ZZ^{1/2})⁺k_Z(x)), the observations' embeddings Φ and
/// V = ΦᵀΦ + λI:
///
/// - mean μ̃(x) = z(x)ᵀV⁻¹Φᵀy,
/// - variance σ̃²(x) = (1/λ)(k(x, x) − z(x)ᵀz(x)) + z(x)ᵀV⁻¹z(x).
///
/// These are Calandriello et al. 2019's μ̃ and σ̃² (its z(x)ᵀΦᵀΦV⁻¹z(x) = z(x)ᵀz(x) −
/// λz(x)ᵀV⁻¹z(x)) and Zenati et al. 2022's Prop. 4.2 (its Λ = L_Z⁻ᵀV⁻¹L_Z⁻¹ and Γ = L_ZΦᵀy, see
/// [`SketchedPosterior::nystrom_state`]). Note the 1/λ scale both papers put into σ̃²: when
/// the dictionary holds every observed point, μ̃ = μ_λ and σ̃² = ρ_λ²/λ exactly (μ_λ and ρ_λ²
/// as in Flynn & Reeb 2024 Eqs. 2–3).
///
/// Kept state, for n distinct observed points and m anchors: the points with a count and a
/// sum of targets each (repeated plays of one arm cost nothing extra), the m × n embeddings,
/// and Cholesky factors of K_ZZ and V (rather than the explicit inverses of Zenati et al. 2022, for
/// stability). An observation is a rank-one update of V's factor, O(m²) — the Cholesky form
/// of Zenati et al. 2022's Sherman–Morrison step; a new anchor is a Schur-complement growth of both
/// factors and one new embedding coordinate for every stored point, O(nm + m²); a fresh
/// dictionary (BKB's resampling) is rebuilt in O(nm² + m³) with dense faer products.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// use kernel_bandits::posterior::SketchedPosterior;
/// let mut post = SketchedPosterior::new(Rbf::new(0.5)?, 0.1)?;
/// post.observe(&[0.2], 1.0)?;
/// post.observe(&[0.7], -1.0)?;
/// post.set_dictionary(&[0, 1])?; // every point: the exact posterior
/// let exact = {
///     let mut e = ExactPosterior::new(Rbf::new(0.5)?, &[0.1])?;
///     e.observe(&[0.2], 1.0)?;
///     e.observe(&[0.7], -1.0)?;
///     e.evaluate(&[[0.4]].as_points()?)?
/// };
/// let sketch = post.evaluate(&[[0.4]].as_points()?)?;
/// assert!((sketch.mean[0] - exact.mean(0)[0]).abs() < 1e-12);
/// assert!((sketch.variance[0] - exact.variance(0)[0] / 0.1).abs() < 1e-10);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SketchedPosterior<K> {
    kernel: K,
    lambda: f64,
    dim: Option<usize>,
    /// Distinct observed points, row-major, in order of first observation.
    points: Vec<f64>,
    /// k(xᵢ, xᵢ).
    prior: Vec<f64>,
    /// Number of observations at each distinct point.
    counts: Vec<f64>,
    /// Sum of the targets observed at each distinct point.
    sums: Vec<f64>,
    /// Bit pattern of a point → its index (rebuilt from `points` on restore).
    #[cfg_attr(feature = "serde", serde(skip))]
    index: HashMap<Vec<u64>, usize>,
    /// Every observation in order: (distinct index, target).
    log: Vec<(usize, f64)>,
    /// Indices of the anchors among the distinct points, in the order they joined.
    anchors: Vec<usize>,
    /// The anchors' coordinates, row-major.
    anchor_points: Vec<f64>,
    /// Cholesky factor of K_ZZ (m × m, lower).
    #[cfg_attr(feature = "serde", serde(with = "crate::snapshot::growing_mat"))]
    chol_zz: Mat<f64>,
    /// z(xᵢ) for every distinct point, one column each (m × n).
    #[cfg_attr(feature = "serde", serde(with = "crate::snapshot::growing_mat"))]
    embedding: Mat<f64>,
    /// Cholesky factor of V = Σᵢ cᵢ z(xᵢ)z(xᵢ)ᵀ + λI (m × m, lower).
    #[cfg_attr(feature = "serde", serde(with = "crate::snapshot::growing_mat"))]
    chol_v: Mat<f64>,
    /// Scratch space of the rank-one update of `chol_v` (its lower triangle is stale, its upper
    /// one zero): the update runs on a copy here, which is then swapped with `chol_v`, so that
    /// an observation allocates nothing once both have the capacity.
    #[cfg_attr(feature = "serde", serde(skip, default = "crate::snapshot::empty_mat"))]
    spare: Mat<f64>,
    /// Φᵀy = Σᵢ sᵢ z(xᵢ).
    projected: Vec<f64>,
    /// V⁻¹Φᵀy: μ̃(x) = z(x)ᵀ·weights.
    weights: Vec<f64>,
}

/// Means and DTC variances of a [`SketchedPosterior`] at a batch of points.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SketchedBatch {
    /// μ̃(x) at each point.
    pub mean: Vec<f64>,
    /// σ̃²(x) at each point, in the papers' scale (ρ_λ²/λ in the exact limit).
    pub variance: Vec<f64>,
}

/// A [`SketchedPosterior`]'s mean weights and V factor at the start of a BBKB batch (see
/// [`SketchedPosterior::batch_start`]).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct BatchStart {
    /// V_fb⁻¹Φ_fbᵀy_fb: μ̃_fb(x) = z(x)ᵀ·weights.
    weights: Vec<f64>,
    /// Cholesky factor of V_fb.
    #[cfg_attr(feature = "serde", serde(with = "crate::snapshot::growing_mat"))]
    chol_v: Mat<f64>,
}

impl BatchStart {
    /// Whether this start fits a dictionary of `m` anchors, with finite entries and positive
    /// pivots (for snapshot checks).
    #[cfg(feature = "serde")]
    pub(crate) fn fits(&self, m: usize) -> bool {
        self.weights.len() == m
            && (self.chol_v.nrows(), self.chol_v.ncols()) == (m, m)
            && self.weights.iter().all(|v| v.is_finite())
            && (0..m).all(|j| {
                self.chol_v[(j, j)] > 0.0 && self.chol_v.col(j).iter().all(|v| v.is_finite())
            })
    }
}

/// The state of Zenati et al. (2022, Prop. 4.2), recomputed from the factors: see
/// [`SketchedPosterior::nystrom_state`].
#[derive(Debug, Clone, PartialEq)]
pub struct NystromState {
    /// Λ = (K_ZS K_SZ + λK_ZZ)⁻¹.
    pub lambda_inv: DMatrix<f64>,
    /// Γ = K_ZS Y.
    pub gamma: DVector<f64>,
    /// K_ZZ⁻¹.
    pub kzz_inv: DMatrix<f64>,
}

/// Grows `mat` to `rows × cols` (new entries zero), doubling its capacity when it runs out so
/// that repeated growth by one row or column is amortised O(1) per entry. (faer's `reserve`
/// reallocates only when the capacity is short, to at most twice the size in each dimension;
/// the storage is column-major, so a new column fills spare capacity in place and a new row
/// moves the columns only when the row capacity runs out.)
fn grow(mat: &mut Mat<f64>, rows: usize, cols: usize) {
    mat.reserve(rows.next_power_of_two(), cols.next_power_of_two());
    mat.resize_with(rows, cols, |_, _| 0.0);
}

/// Appends the row `[row, diagonal]` to the lower Cholesky factor `factor` (m × m → m+1).
fn append_factor_row(factor: &mut Mat<f64>, row: &[f64], diagonal: f64) {
    let m = factor.nrows();
    grow(factor, m + 1, m + 1);
    for (j, &v) in row.iter().enumerate() {
        factor[(m, j)] = v;
    }
    factor[(m, m)] = diagonal;
}

/// L⁻¹b for a lower-triangular `factor`.
fn forward(factor: MatRef<'_, f64>, b: &[f64]) -> Vec<f64> {
    let mut out = b.to_vec();
    if !out.is_empty() {
        solve_lower_triangular_in_place(
            factor,
            MatMut::from_column_major_slice_mut(&mut out, b.len(), 1),
            Par::Seq,
        );
    }
    out
}

/// (LLᵀ)⁻¹b for a lower-triangular `factor`, written to `out` (whose allocation is reused).
fn cholesky_solve_into(factor: MatRef<'_, f64>, b: &[f64], out: &mut Vec<f64>) {
    out.clear();
    out.extend_from_slice(b);
    if !out.is_empty() {
        let mut rhs = MatMut::from_column_major_slice_mut(out, b.len(), 1);
        solve_lower_triangular_in_place(factor, rhs.as_mut(), Par::Seq);
        solve_upper_triangular_in_place(factor.transpose(), rhs, Par::Seq);
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    crate::linalg::dot(a, b)
}

/// Key of a point for de-duplication: its bit pattern, with −0 folded into +0.
fn key(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| (v + 0.0).to_bits()).collect()
}

impl<K: Kernel> SketchedPosterior<K> {
    /// An empty sketched posterior with regulariser `lambda` and an empty dictionary.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless 0 < λ < ∞.
    pub fn new(kernel: K, lambda: f64) -> Result<Self> {
        Ok(Self {
            kernel,
            lambda: positive("lambda", lambda)?,
            dim: None,
            points: Vec::new(),
            prior: Vec::new(),
            counts: Vec::new(),
            sums: Vec::new(),
            index: HashMap::new(),
            log: Vec::new(),
            anchors: Vec::new(),
            anchor_points: Vec::new(),
            chol_zz: Mat::zeros(0, 0),
            embedding: Mat::zeros(0, 0),
            chol_v: Mat::zeros(0, 0),
            spare: Mat::zeros(0, 0),
            projected: Vec::new(),
            weights: Vec::new(),
        })
    }

    /// The kernel.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The regulariser λ.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// Number of observations absorbed.
    pub fn len(&self) -> usize {
        self.log.len()
    }

    /// Whether no observation has been absorbed.
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// Input dimension, fixed by the first observation.
    pub fn dim(&self) -> Option<usize> {
        self.dim
    }

    /// Every observation in the order absorbed: its point and its target.
    pub(crate) fn observations(&self) -> crate::bound::Observations {
        let d = self.dim.unwrap_or(0);
        let mut inputs = Vec::with_capacity(self.log.len() * d);
        let mut targets = Vec::with_capacity(self.log.len());
        for &(i, y) in &self.log {
            inputs.extend_from_slice(self.point(i));
            targets.push(y);
        }
        crate::bound::Observations {
            dim: d,
            inputs,
            targets,
        }
    }

    /// Number of distinct observed points.
    pub fn distinct(&self) -> usize {
        self.prior.len()
    }

    /// Distinct observed point `i` (in order of first observation).
    ///
    /// # Panics
    /// If `i >= self.distinct()`.
    pub fn point(&self, i: usize) -> &[f64] {
        let d = self.dim.unwrap_or(0);
        &self.points[i * d..(i + 1) * d]
    }

    /// How many times distinct point `i` was observed.
    ///
    /// # Panics
    /// If `i >= self.distinct()`.
    pub fn count(&self, i: usize) -> usize {
        self.counts[i] as usize
    }

    /// The indices (among the distinct points) of the dictionary's anchors, in the order they
    /// joined it.
    pub fn dictionary(&self) -> &[usize] {
        &self.anchors
    }

    /// Number of anchors m.
    pub fn dictionary_size(&self) -> usize {
        self.anchors.len()
    }

    /// Anchor `j`'s coordinates.
    ///
    /// # Panics
    /// If `j >= self.dictionary_size()`.
    pub fn anchor(&self, j: usize) -> &[f64] {
        let d = self.dim.unwrap_or(0);
        &self.anchor_points[j * d..(j + 1) * d]
    }

    /// ln det(I + ΦᵀΦ/λ) = ln det(V/λ): the information gain of the sketch, which never exceeds
    /// the exact ln det(I + K_t/λ) (the projection only removes directions).
    pub fn log_det(&self) -> f64 {
        let m = self.anchors.len();
        (0..m).map(|j| 2.0 * self.chol_v[(j, j)].ln()).sum::<f64>() - m as f64 * self.lambda.ln()
    }

    /// Checks that points of dimension `dim` can be compared with the stored ones.
    fn check_dim(&self, dim: usize) -> Result<()> {
        crate::kernel::check_against_stored(&self.kernel, self.dim, dim)
    }

    /// Checks an observation (x, y) without absorbing it; returns k(x, x).
    ///
    /// # Errors
    /// As [`SketchedPosterior::observe`].
    pub(crate) fn check_observation(&self, x: &[f64], y: f64) -> Result<f64> {
        check_point(x, self.dim, "observed point")?;
        self.check_dim(x.len())?;
        if !y.is_finite() {
            return Err(Error::NonFinite {
                what: "observed target".into(),
            });
        }
        let prior = self.kernel.eval_diag(x);
        if prior.is_finite() && prior >= 0.0 {
            Ok(prior)
        } else {
            Err(Error::NonFinite {
                what: "kernel value at the observed point".into(),
            })
        }
    }

    /// k(xᵢ, xᵢ) for every distinct observed point.
    pub(crate) fn prior_variances(&self) -> &[f64] {
        &self.prior
    }

    /// k_Z(x): the kernel between `x` and every anchor.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite kernel value.
    pub(crate) fn dictionary_column(&self, x: &[f64]) -> Result<Vec<f64>> {
        let mut column = vec![0.0; self.anchors.len()];
        if !column.is_empty() {
            self.kernel.eval_rows(&self.anchor_points, x, &mut column);
        }
        if column.iter().all(|v| v.is_finite()) {
            Ok(column)
        } else {
            Err(Error::NonFinite {
                what: "kernel value against the dictionary".into(),
            })
        }
    }

    /// z(x) = L_Z⁻¹k_Z(x) from the kernel column k_Z(x).
    pub(crate) fn embed(&self, column: &[f64]) -> Vec<f64> {
        forward(self.chol_zz.as_ref(), column)
    }

    /// σ̃²(x) from k(x, x) and z(x).
    pub(crate) fn variance_from(&self, prior: f64, z: &[f64]) -> f64 {
        let whitened = forward(self.chol_v.as_ref(), z);
        (prior - dot(z, z)).max(0.0) / self.lambda + dot(&whitened, &whitened)
    }

    /// Absorbs y = f(x) + noise with the current dictionary: a rank-one update of V's factor,
    /// O(m²) (plus O(md) kernel evaluations for a point not seen before). Returns the index
    /// of x among the distinct points.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] / [`Error::ZeroDimension`] for a point of the wrong size,
    /// [`Error::NonFinite`] for a NaN or infinite coordinate, target or kernel value. On error
    /// nothing changes.
    pub fn observe(&mut self, x: &[f64], y: f64) -> Result<usize> {
        let prior = self.check_observation(x, y)?;
        let z = match self.index.get(&key(x)) {
            Some(_) => Vec::new(),
            None => self.embed(&self.dictionary_column(x)?),
        };
        self.observe_embedded(x, y, prior, z)
    }

    /// [`SketchedPosterior::observe`] for an (x, y) already checked by
    /// [`SketchedPosterior::check_observation`], with k(x, x) = `prior` and `z` = z(x) under the
    /// current dictionary (ignored, and may be empty, when x was observed before: its stored
    /// embedding is used). For callers that computed z(x) anyway.
    ///
    /// # Errors
    /// As [`SketchedPosterior::observe`].
    pub(crate) fn observe_embedded(
        &mut self,
        x: &[f64],
        y: f64,
        prior: f64,
        z: Vec<f64>,
    ) -> Result<usize> {
        let key = key(x);
        let (index, z) = match self.index.get(&key) {
            Some(&i) => (i, self.embedding.col(i).iter().copied().collect::<Vec<_>>()),
            None => (self.prior.len(), z),
        };
        let m = self.anchors.len();
        // Everything is computed before anything changes: a target so large that the running
        // sums or the weights overflow is refused and loses nothing.
        let sum = if index == self.prior.len() {
            y
        } else {
            self.sums[index] + y
        };
        let projected: Vec<f64> = self
            .projected
            .iter()
            .zip(&z)
            .map(|(b, v)| b + y * v)
            .collect();
        let overflow = || Error::NonFinite {
            what: "sketched posterior update (the target overflows the running sums)".into(),
        };
        if !sum.is_finite() || projected.iter().any(|v| !v.is_finite()) {
            return Err(overflow());
        }
        if m > 0 {
            // On a copy, so that a failure (only possible with non-finite values) changes
            // nothing. The copy lives in `spare`, which keeps its allocation: a fresh m × m
            // matrix every observation, long-lived once swapped in, fragments the allocator's
            // heap until the process holds O(m²) bytes per observation. Both factors keep zero
            // upper triangles (the update reads and writes only the lower one), so copying
            // the lower triangle is enough.
            grow(&mut self.spare, m, m);
            self.spare.copy_from_triangular_lower(&self.chol_v);
            let mut update = z.clone();
            let mut alpha = [1.0];
            rank_r_update_clobber(
                self.spare.as_mut(),
                MatMut::from_column_major_slice_mut(&mut update, m, 1),
                faer::ColMut::from_slice_mut(&mut alpha).as_diagonal_mut(),
            )
            .map_err(|_| Error::NotPositiveDefinite {
                row: index,
                pivot: f64::NAN,
            })?;
        }
        let mut weights = Vec::with_capacity(m);
        let factor = if m > 0 { &self.spare } else { &self.chol_v };
        cholesky_solve_into(factor.as_ref(), &projected, &mut weights);
        // yᵀΦV⁻¹Φᵀy, the sketch's q_λ: finite exactly when the exact bounds' q_a would be (up
        // to the projection), which keeps every mean z(x)ᵀV⁻¹Φᵀy finite too.
        let energy = dot(&weights, &projected);
        let limit = super::cholesky::QUAD_FORM_LIMIT;
        let bounded = energy <= limit && self.lambda * energy <= limit;
        if weights.iter().any(|v| !v.is_finite()) || !bounded {
            return Err(overflow());
        }
        if m > 0 {
            std::mem::swap(&mut self.chol_v, &mut self.spare);
        }
        if index == self.prior.len() {
            self.dim = Some(x.len());
            self.points.extend_from_slice(x);
            self.prior.push(prior);
            self.counts.push(0.0);
            self.sums.push(0.0);
            self.index.insert(key, index);
            let n = self.prior.len();
            grow(&mut self.embedding, m, n);
            for (i, &v) in z.iter().enumerate() {
                self.embedding[(i, index)] = v;
            }
        }
        self.counts[index] += 1.0;
        self.sums[index] = sum;
        self.projected = projected;
        self.weights = weights;
        self.log.push((index, y));
        Ok(index)
    }

    /// Adds distinct point `i` to the dictionary: Schur-complement growth of both Cholesky
    /// factors and a new embedding coordinate for every stored point, O(nm + m²) plus n kernel
    /// evaluations. Returns `false` (and changes nothing) if the point is an anchor already or
    /// lies in the dictionary's span to within [`ANCHOR_TOLERANCE`].
    ///
    /// # Errors
    /// [`Error::ArmOutOfRange`] if `i >= self.distinct()`, [`Error::NonFinite`] for a
    /// non-finite kernel value. On error nothing changes.
    pub fn add_anchor(&mut self, i: usize) -> Result<bool> {
        let n = self.distinct();
        if i >= n {
            return Err(Error::ArmOutOfRange { index: i, arms: n });
        }
        if self.anchors.contains(&i) {
            return Ok(false);
        }
        let x = self.point(i).to_vec();
        let c = self.embed(&self.dictionary_column(&x)?);
        let residual = self.prior[i] - dot(&c, &c);
        // Also false for a NaN residual.
        let independent = residual > ANCHOR_TOLERANCE * self.prior[i];
        if !independent {
            return Ok(false);
        }
        let d = residual.sqrt();
        let m = self.anchors.len();
        // The new embedding coordinate of every stored point: (k(z, xⱼ) − cᵀz(xⱼ))/d.
        let mut coordinate = vec![0.0; n];
        self.kernel.eval_rows(&self.points, &x, &mut coordinate);
        if coordinate.iter().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "kernel value of the new anchor".into(),
            });
        }
        let mut projection = vec![0.0; n];
        if m > 0 {
            matmul(
                MatMut::from_column_major_slice_mut(&mut projection, 1, n),
                Accum::Replace,
                MatRef::from_column_major_slice(&c, 1, m),
                self.embedding.as_ref(),
                1.0,
                Par::Seq,
            );
        }
        for (v, p) in coordinate.iter_mut().zip(&projection) {
            *v = (*v - p) / d;
        }
        // V's new row Σⱼ cⱼ z_new(xⱼ) z(xⱼ) and corner Σⱼ cⱼ z_new(xⱼ)² + λ.
        let weighted: Vec<f64> = coordinate
            .iter()
            .zip(&self.counts)
            .map(|(v, c)| v * c)
            .collect();
        let mut cross = vec![0.0; m];
        if m > 0 {
            matmul(
                MatMut::from_column_major_slice_mut(&mut cross, m, 1),
                Accum::Replace,
                self.embedding.as_ref(),
                MatRef::from_column_major_slice(&weighted, n, 1),
                1.0,
                Par::Seq,
            );
        }
        let corner = dot(&weighted, &coordinate) + self.lambda;
        let row = forward(self.chol_v.as_ref(), &cross);
        let pivot = corner - dot(&row, &row);
        let positive_pivot = pivot > 0.0 && pivot.is_finite();
        if !positive_pivot {
            return Err(Error::NotPositiveDefinite { row: m, pivot });
        }
        append_factor_row(&mut self.chol_zz, &c, d);
        append_factor_row(&mut self.chol_v, &row, pivot.sqrt());
        grow(&mut self.embedding, m + 1, n);
        for (j, &v) in coordinate.iter().enumerate() {
            self.embedding[(m, j)] = v;
        }
        self.projected.push(dot(&coordinate, &self.sums));
        self.anchors.push(i);
        self.anchor_points.extend_from_slice(&x);
        cholesky_solve_into(self.chol_v.as_ref(), &self.projected, &mut self.weights);
        Ok(true)
    }

    /// Replaces the dictionary by the distinct points `anchors` (in that order, skipping
    /// repeats and points in the span of the earlier ones, as [`SketchedPosterior::add_anchor`]
    /// does) and rebuilds everything from scratch: O(nm² + m³) with dense products.
    ///
    /// # Errors
    /// [`Error::ArmOutOfRange`] for an index beyond the distinct points,
    /// [`Error::NonFinite`] / [`Error::NotPositiveDefinite`] for non-finite kernel values. On
    /// error nothing changes.
    pub fn set_dictionary(&mut self, anchors: &[usize]) -> Result<()> {
        let n = self.distinct();
        if let Some(&i) = anchors.iter().find(|&&i| i >= n) {
            return Err(Error::ArmOutOfRange { index: i, arms: n });
        }
        let d = self.dim.unwrap_or(0);
        // K_ZZ's factor, one anchor at a time (O(m³) in all), skipping dependent anchors.
        let mut chosen: Vec<usize> = Vec::with_capacity(anchors.len());
        let mut chosen_points: Vec<f64> = Vec::with_capacity(anchors.len() * d);
        let mut chol_zz = Mat::<f64>::zeros(0, 0);
        let mut column = Vec::with_capacity(anchors.len());
        for &i in anchors {
            if chosen.contains(&i) {
                continue;
            }
            let x = self.point(i);
            column.resize(chosen.len(), 0.0);
            if !chosen.is_empty() {
                self.kernel.eval_rows(&chosen_points, x, &mut column);
            }
            if column.iter().any(|v| !v.is_finite()) {
                return Err(Error::NonFinite {
                    what: "kernel value between anchors".into(),
                });
            }
            let c = forward(chol_zz.as_ref(), &column);
            let residual = self.prior[i] - dot(&c, &c);
            if residual > ANCHOR_TOLERANCE * self.prior[i] {
                append_factor_row(&mut chol_zz, &c, residual.sqrt());
                chosen.push(i);
                chosen_points.extend_from_slice(x);
            }
        }
        let m = chosen.len();
        // Embeddings: L_Z⁻¹ K_ZS, one triangular solve with n right-hand sides.
        let mut embedding = Mat::<f64>::zeros(m, n);
        if m > 0 {
            let mut column = vec![0.0; m];
            for j in 0..n {
                self.kernel
                    .eval_rows(&chosen_points, self.point(j), &mut column);
                if column.iter().any(|v| !v.is_finite()) {
                    return Err(Error::NonFinite {
                        what: "kernel value against the dictionary".into(),
                    });
                }
                for (i, &v) in column.iter().enumerate() {
                    embedding[(i, j)] = v;
                }
            }
            solve_lower_triangular_in_place(chol_zz.as_ref(), embedding.as_mut(), Par::Seq);
        }
        // V = Φ diag(c) Φᵀ + λI and Φᵀy.
        let scaled = Mat::from_fn(m, n, |i, j| embedding[(i, j)] * self.counts[j].sqrt());
        let mut v = Mat::<f64>::identity(m, m) * faer::Scale(self.lambda);
        matmul(
            v.as_mut(),
            Accum::Add,
            scaled.as_ref(),
            scaled.transpose(),
            1.0,
            Par::Seq,
        );
        let chol_v = match v.llt(Side::Lower) {
            Ok(llt) => llt.L().to_owned(),
            Err(_) => {
                return Err(Error::NotPositiveDefinite {
                    row: 0,
                    pivot: f64::NAN,
                });
            }
        };
        let mut projected = vec![0.0; m];
        if m > 0 {
            matmul(
                MatMut::from_column_major_slice_mut(&mut projected, m, 1),
                Accum::Replace,
                embedding.as_ref(),
                MatRef::from_column_major_slice(&self.sums, n, 1),
                1.0,
                Par::Seq,
            );
        }
        cholesky_solve_into(chol_v.as_ref(), &projected, &mut self.weights);
        self.anchors = chosen;
        self.anchor_points = chosen_points;
        self.chol_zz = chol_zz;
        self.embedding = embedding;
        self.chol_v = chol_v;
        self.projected = projected;
        Ok(())
    }

    /// μ̃ and σ̃² at each point: O(m) kernel evaluations and O(m²) per point, in two dense
    /// triangular solves over the batch.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for points of the wrong dimension, [`Error::NonFinite`] for
    /// a non-finite kernel value.
    pub fn evaluate(&self, points: &Points<'_>) -> Result<SketchedBatch> {
        self.evaluate_with_weights(points, &self.weights)
    }

    /// [`SketchedPosterior::evaluate`] with the mean μ̃(x) = z(x)ᵀ`weights` (`weights` of the
    /// current dictionary's size) and the current variance.
    fn evaluate_with_weights(&self, points: &Points<'_>, weights: &[f64]) -> Result<SketchedBatch> {
        self.evaluate_with(points, weights, self.chol_v.as_ref())
    }

    /// μ̃(x) = z(x)ᵀ`weights` and σ̃²(x) with V's factor `factor` at each point.
    fn evaluate_with(
        &self,
        points: &Points<'_>,
        weights: &[f64],
        factor: MatRef<'_, f64>,
    ) -> Result<SketchedBatch> {
        let count = points.len();
        if count == 0 {
            return Ok(SketchedBatch::default());
        }
        let (prior, block) = self.embed_points(points)?;
        if self.anchors.is_empty() {
            return Ok(SketchedBatch {
                mean: vec![0.0; count],
                variance: prior.iter().map(|p| p.max(0.0) / self.lambda).collect(),
            });
        }
        let mean = (0..count)
            .map(|j| dot(block.col(j).try_as_col_major().unwrap().as_slice(), weights))
            .collect();
        let variance = self.variances(&prior, block, factor);
        Ok(SketchedBatch { mean, variance })
    }

    /// k(x, x) and the embeddings z(x) = L_Z⁻¹k_Z(x) (one column per point, m × count) of a
    /// non-empty batch of points.
    fn embed_points(&self, points: &Points<'_>) -> Result<(Vec<f64>, Mat<f64>)> {
        let count = points.len();
        self.check_dim(points.dim())?;
        let m = self.anchors.len();
        let mut prior = vec![0.0; count];
        let mut block = Mat::<f64>::zeros(m, count);
        let mut column = vec![0.0; m];
        let mut bad = false;
        points.for_each(|j, x| {
            prior[j] = self.kernel.eval_diag(x);
            if m > 0 {
                self.kernel.eval_rows(&self.anchor_points, x, &mut column);
                for (i, &v) in column.iter().enumerate() {
                    block[(i, j)] = v;
                }
            }
            bad |= !prior[j].is_finite() || column.iter().any(|v| !v.is_finite());
        });
        if bad {
            return Err(Error::NonFinite {
                what: "kernel value at a query point".into(),
            });
        }
        if m > 0 {
            solve_lower_triangular_in_place(self.chol_zz.as_ref(), block.as_mut(), Par::Seq);
        }
        Ok((prior, block))
    }

    /// σ̃² from k(x, x) and the embeddings (one column per point, consumed), with V's factor
    /// `factor`.
    fn variances(
        &self,
        prior: &[f64],
        mut embedded: Mat<f64>,
        factor: MatRef<'_, f64>,
    ) -> Vec<f64> {
        let norms: Vec<f64> = (0..prior.len())
            .map(|j| embedded.col(j).squared_norm_l2())
            .collect();
        solve_lower_triangular_in_place(factor, embedded.as_mut(), Par::Seq);
        prior
            .iter()
            .zip(norms)
            .enumerate()
            .map(|(j, (p, z2))| (p - z2).max(0.0) / self.lambda + embedded.col(j).squared_norm_l2())
            .collect()
    }

    /// σ̃² at every distinct observed point (from the stored embeddings: no kernel
    /// evaluation), O(nm²).
    pub fn stored_variances(&self) -> Vec<f64> {
        if self.anchors.is_empty() {
            return self
                .prior
                .iter()
                .map(|p| p.max(0.0) / self.lambda)
                .collect();
        }
        self.variances(&self.prior, self.embedding.clone(), self.chol_v.as_ref())
    }

    /// Keeps the first `len` observations and the anchors among the points they contain,
    /// forgets the rest, and rebuilds (O(len + nm² + m³)).
    pub fn truncate(&mut self, len: usize) {
        let anchors = self.anchors.clone();
        self.truncate_with_dictionary(len, &anchors);
    }

    /// Keeps the first `len` observations, then rebuilds with the dictionary `anchors`
    /// (restricted to the points that remain).
    pub(crate) fn truncate_with_dictionary(&mut self, len: usize, anchors: &[usize]) {
        if len >= self.log.len() {
            return;
        }
        self.log.truncate(len);
        // Distinct indices are assigned in order of first observation.
        let n = self.log.iter().map(|&(i, _)| i + 1).max().unwrap_or(0);
        let d = self.dim.unwrap_or(0);
        self.points.truncate(n * d);
        self.prior.truncate(n);
        self.counts = vec![0.0; n];
        self.sums = vec![0.0; n];
        for &(i, y) in &self.log {
            self.counts[i] += 1.0;
            self.sums[i] += y;
        }
        self.index.retain(|_, i| *i < n);
        if n == 0 {
            self.dim = None;
        }
        let kept: Vec<usize> = anchors.iter().copied().filter(|&i| i < n).collect();
        // The kept anchors were valid anchors of the larger state: the rebuild cannot fail
        // on them unless the kernel misbehaves, in which case the dictionary is dropped.
        if self.set_dictionary(&kept).is_err() {
            self.set_dictionary(&[])
                .expect("an empty dictionary needs no kernel value");
        }
    }

    /// The state at the start of a batch of BBKB (Calandriello et al. 2020 Alg. 1): the mean
    /// weights V⁻¹Φᵀy and V's factor, kept while later points of the batch enter V.
    pub(crate) fn batch_start(&self) -> BatchStart {
        BatchStart {
            weights: self.weights.clone(),
            chol_v: self.chol_v.clone(),
        }
    }

    /// μ̃_fb (the mean frozen at `start`) and the current σ̃² at each point: BBKB's UCB inputs
    /// inside a batch. `start` must come from [`SketchedPosterior::batch_start`] under the
    /// current dictionary.
    ///
    /// # Errors
    /// As [`SketchedPosterior::evaluate`].
    pub(crate) fn evaluate_from(
        &self,
        points: &Points<'_>,
        start: &BatchStart,
    ) -> Result<SketchedBatch> {
        self.evaluate_with_weights(points, &start.weights)
    }

    /// σ̃²_fb(x), the variance at the batch start, from k(x, x) and z(x).
    pub(crate) fn variance_at_start(&self, start: &BatchStart, prior: f64, z: &[f64]) -> f64 {
        let whitened = forward(start.chol_v.as_ref(), z);
        (prior - dot(z, z)).max(0.0) / self.lambda + dot(&whitened, &whitened)
    }

    /// Zenati et al. (2022, Prop. 4.2): Λ = (K_ZS K_SZ + λK_ZZ)⁻¹, Γ = K_ZS Y and K_ZZ⁻¹ (anchors in
    /// [`SketchedPosterior::dictionary`] order), recomputed from the Cholesky factors in
    /// O(m³): Λ = L_Z⁻ᵀV⁻¹L_Z⁻¹, Γ = L_Z Φᵀy. For inspection and tests; the bounds never form
    /// these inverses.
    pub fn nystrom_state(&self) -> NystromState {
        let m = self.anchors.len();
        let mut inv_l = Mat::<f64>::identity(m, m);
        solve_lower_triangular_in_place(self.chol_zz.as_ref(), inv_l.as_mut(), Par::Seq);
        let mut whitened = inv_l.clone();
        solve_lower_triangular_in_place(self.chol_v.as_ref(), whitened.as_mut(), Par::Seq);
        let lambda_inv = whitened.transpose() * &whitened;
        let kzz_inv = inv_l.transpose() * &inv_l;
        let gamma = &self.chol_zz * faer::ColRef::from_slice(&self.projected);
        NystromState {
            lambda_inv: DMatrix::from_fn(m, m, |i, j| lambda_inv[(i, j)]),
            gamma: DVector::from_fn(m, |i, _| gamma[i]),
            kzz_inv: DMatrix::from_fn(m, m, |i, j| kzz_inv[(i, j)]),
        }
    }

    /// The subset-of-regressors (SoR) variance z(x)ᵀV⁻¹z(x) at each point: the DTC σ̃²(x) of
    /// [`SketchedPosterior::evaluate`] with k(x, x) replaced by its Nyström value z(x)ᵀz(x)
    /// (Calandriello et al. 2019 §3.1). It tends to 0 far from the dictionary, where z(x) → 0,
    /// whatever the exact variance there: the *variance starvation* that the DTC form avoids.
    /// For comparison only; no bound of the crate uses it. O(m) kernel evaluations and O(m²)
    /// per point.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::prelude::*;
    /// use kernel_bandits::posterior::SketchedPosterior;
    /// let mut post = SketchedPosterior::new(Rbf::new(0.1)?, 0.01)?;
    /// post.observe(&[0.0], 1.0)?;
    /// post.set_dictionary(&[0])?;
    /// let far = [[3.0]].as_points()?;
    /// assert!(post.subset_of_regressors_variance(&far)?[0] < 1e-100); // starved
    /// assert!((post.evaluate(&far)?.variance[0] - 100.0).abs() < 1e-9); // DTC: k(x, x)/λ
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for points of the wrong dimension, [`Error::NonFinite`] for
    /// a non-finite kernel value.
    pub fn subset_of_regressors_variance(&self, points: &Points<'_>) -> Result<Vec<f64>> {
        let count = points.len();
        let m = self.anchors.len();
        if count == 0 {
            return Ok(Vec::new());
        }
        self.check_dim(points.dim())?;
        let mut block = Mat::<f64>::zeros(m, count);
        let mut column = vec![0.0; m];
        let mut bad = false;
        points.for_each(|j, x| {
            if m > 0 {
                self.kernel.eval_rows(&self.anchor_points, x, &mut column);
                for (i, &v) in column.iter().enumerate() {
                    block[(i, j)] = v;
                }
            }
            bad |= column.iter().any(|v| !v.is_finite());
        });
        if bad {
            return Err(Error::NonFinite {
                what: "kernel value at a query point".into(),
            });
        }
        if m == 0 {
            return Ok(vec![0.0; count]);
        }
        // z = L_Z⁻¹k_Z(x), then ‖L_V⁻¹z‖² = zᵀV⁻¹z.
        solve_lower_triangular_in_place(self.chol_zz.as_ref(), block.as_mut(), Par::Seq);
        solve_lower_triangular_in_place(self.chol_v.as_ref(), block.as_mut(), Par::Seq);
        Ok((0..count).map(|j| block.col(j).squared_norm_l2()).collect())
    }
}

/// μ̃, σ̃² and their gradients at one point ([`SketchedPosterior::gradient_at`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SketchedGradient {
    /// μ̃(x), as [`SketchedPosterior::evaluate`] reports it.
    pub(crate) mean: f64,
    /// σ̃²(x), as [`SketchedPosterior::evaluate`] reports it.
    pub(crate) variance: f64,
    /// ∇μ̃(x).
    pub(crate) mean_gradient: Vec<f64>,
    /// ∇σ̃²(x).
    pub(crate) variance_gradient: Vec<f64>,
}

/// L⁻ᵀb for a lower-triangular `factor`.
fn backward(factor: MatRef<'_, f64>, b: &[f64]) -> Vec<f64> {
    let mut out = b.to_vec();
    if !out.is_empty() {
        solve_upper_triangular_in_place(
            factor.transpose(),
            MatMut::from_column_major_slice_mut(&mut out, b.len(), 1),
            Par::Seq,
        );
    }
    out
}

/// The sketched posterior conditioned on pending inputs whose targets are not known yet
/// ([`SketchedPosterior::pending`]): V is replaced by V_p = V + Σ_p z(x_p)z(x_p)ᵀ, the
/// dictionary is unchanged.
#[derive(Debug)]
pub(crate) struct SketchedPending<'a, K> {
    posterior: &'a SketchedPosterior<K>,
    /// Cholesky factor of V_p.
    chol: Mat<f64>,
}

impl<K: Kernel> SketchedPending<'_, K> {
    /// σ̃²_p at each point: the DTC variance of [`SketchedPosterior::evaluate`] with V_p for V.
    ///
    /// # Errors
    /// As [`SketchedPosterior::evaluate`].
    pub(crate) fn variance(&self, points: &Points<'_>) -> Result<Vec<f64>> {
        let post = self.posterior;
        Ok(post
            .evaluate_with(points, &post.weights, self.chol.as_ref())?
            .variance)
    }

    /// σ̃²_p(x) and its gradient.
    ///
    /// # Errors
    /// As [`SketchedPosterior::gradient_at`].
    pub(crate) fn variance_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        let post = self.posterior;
        let g = post.gradient_with(x, &post.weights, self.chol.as_ref())?;
        Ok((g.variance, g.variance_gradient))
    }
}

impl<K: Kernel> SketchedPosterior<K> {
    /// μ̃(x), σ̃²(x) and their gradients, differentiating through the Nyström embedding: with J
    /// the m × d matrix of rows ∂k(x, z_i)/∂x, ∇z(x) = L_Z⁻¹J, so
    ///
    /// - ∇μ̃(x) = Jᵀ L_Z⁻ᵀ V⁻¹Φᵀy,
    /// - ∇σ̃²(x) = ∇k(x, x)/λ + 2 Jᵀ L_Z⁻ᵀ (V⁻¹z(x) − z(x)/λ)
    ///
    /// (Calandriello et al. 2019 Eq. 4's μ̃ and DTC σ̃²). Where the residual k(x, x) − ‖z(x)‖²
    /// is not positive as computed (rounding, at an anchor) `evaluate` clamps it to 0, and its
    /// gradient is taken as 0 (the residual is minimal there). With `start` (BBKB inside a
    /// batch), the mean is the one frozen at the batch start. The values are the ones
    /// `evaluate` computes (the same code path). O(md) kernel gradients and O(m²).
    ///
    /// # Errors
    /// Invalid or wrong-dimension x; non-finite kernel values; [`Error::Unsupported`] for a
    /// kernel without gradients.
    pub(crate) fn gradient_at(
        &self,
        x: &[f64],
        start: Option<&BatchStart>,
    ) -> Result<SketchedGradient> {
        let weights = start.map_or(&self.weights, |s| &s.weights);
        self.gradient_with(x, weights, self.chol_v.as_ref())
    }

    /// [`SketchedPosterior::gradient_at`] with mean weights `weights` and V's factor `factor`.
    fn gradient_with(
        &self,
        x: &[f64],
        weights: &[f64],
        factor: MatRef<'_, f64>,
    ) -> Result<SketchedGradient> {
        check_point(x, self.dim, "query point")?;
        let d = x.len();
        let points = Points::from_row_major(x, d)?;
        let values = self.evaluate_with(&points, weights, factor)?;
        let mut diag_gradient = vec![0.0; d];
        self.kernel.diag_gradient(x, &mut diag_gradient)?;
        let (prior, block) = self.embed_points(&points)?;
        let m = self.anchors.len();
        let z: Vec<f64> = block.col(0).iter().copied().collect();
        // The residual's gradient, ∇k(x, x) − 2∇z(x)ᵀz(x), only where `evaluate` does not
        // clamp it.
        let unclamped = m == 0 || prior[0] - block.col(0).squared_norm_l2() > 0.0;
        let mut variance_gradient: Vec<f64> = if unclamped {
            diag_gradient.iter().map(|g| g / self.lambda).collect()
        } else {
            vec![0.0; d]
        };
        let mut mean_gradient = vec![0.0; d];
        if m > 0 {
            let mut solved = Vec::with_capacity(m);
            cholesky_solve_into(factor, &z, &mut solved);
            let coefficients: Vec<f64> = solved
                .iter()
                .zip(&z)
                .map(|(s, z)| {
                    if unclamped {
                        2.0 * (s - z / self.lambda)
                    } else {
                        2.0 * s
                    }
                })
                .collect();
            let variance_weights = backward(self.chol_zz.as_ref(), &coefficients);
            let mean_weights = backward(self.chol_zz.as_ref(), weights);
            let mut row = vec![0.0; d];
            for j in 0..m {
                self.kernel.gradient(x, self.anchor(j), &mut row)?;
                for k in 0..d {
                    mean_gradient[k] += mean_weights[j] * row[k];
                    variance_gradient[k] += variance_weights[j] * row[k];
                }
            }
        }
        if mean_gradient
            .iter()
            .chain(&variance_gradient)
            .any(|v| !v.is_finite())
        {
            return Err(Error::NonFinite {
                what: "gradient of the sketched posterior".into(),
            });
        }
        Ok(SketchedGradient {
            mean: values.mean[0],
            variance: values.variance[0],
            mean_gradient,
            variance_gradient,
        })
    }

    /// The posterior conditioned on `pending` inputs whose targets are still to come: each
    /// enters V = ΦᵀΦ + λI as an observation would, V_p = V + Σ_p z(x_p)z(x_p)ᵀ (one rank-p
    /// Cholesky update, O(pm² + pmd)), with the dictionary unchanged and the mean untouched.
    /// This is how BBKB's variance treats the points of a batch whose feedback has not
    /// arrived (Calandriello et al. 2020 Alg. 1: σ̃_t includes the batch's points, the
    /// dictionary is fixed within the batch). The DTC variance does not depend on the
    /// targets, so this is exactly the variance the sketch would have after observing the
    /// pending points, were its dictionary not to change.
    ///
    /// # Errors
    /// Pending points of the wrong dimension; non-finite kernel values.
    pub(crate) fn pending(&self, pending: &Points<'_>) -> Result<SketchedPending<'_, K>> {
        let m = self.anchors.len();
        let mut chol = self.chol_v.clone();
        if !pending.is_empty() {
            let (_, mut block) = self.embed_points(pending)?;
            if m > 0 {
                let mut alpha = vec![1.0; pending.len()];
                rank_r_update_clobber(
                    chol.as_mut(),
                    block.as_mut(),
                    faer::ColMut::from_slice_mut(&mut alpha).as_diagonal_mut(),
                )
                .map_err(|_| Error::NotPositiveDefinite {
                    row: 0,
                    pivot: f64::NAN,
                })?;
            }
        }
        Ok(SketchedPending {
            posterior: self,
            chol,
        })
    }
}

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for SketchedPosterior<K> {
    fn kind() -> String {
        format!("sketched-posterior<{}>", K::kind())
    }

    /// Checks that the distinct points, the observation log, the dictionary and the factors
    /// agree in size, then rebuilds the point index.
    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::{ensure, ensure_finite};
        self.kernel.restore()?;
        positive("lambda", self.lambda).map_err(crate::snapshot::rebuild_error("sketch"))?;
        let n = self.prior.len();
        let m = self.anchors.len();
        let d = self.dim.unwrap_or(0);
        if let Some(d) = self.dim {
            self.kernel
                .check_dim(d)
                .map_err(crate::snapshot::rebuild_error("kernel and inputs"))?;
        }
        ensure(
            (d > 0 || n == 0)
                && n.checked_mul(d) == Some(self.points.len())
                && self.counts.len() == n
                && self.sums.len() == n
                && m.checked_mul(d) == Some(self.anchor_points.len())
                && (self.chol_zz.nrows(), self.chol_zz.ncols()) == (m, m)
                && (self.chol_v.nrows(), self.chol_v.ncols()) == (m, m)
                && (self.embedding.nrows(), self.embedding.ncols()) == (m, n)
                && self.projected.len() == m
                && self.weights.len() == m,
            || format!("sketch of {n} distinct points and {m} anchors in dimension {d}"),
        )?;
        ensure(self.log.iter().all(|&(i, _)| i < n), || {
            "an observation of an unknown point".into()
        })?;
        let mut seen = vec![false; n];
        ensure(
            self.anchors
                .iter()
                .all(|&i| i < n && !std::mem::replace(&mut seen[i], true)),
            || "an anchor that is not a distinct point".into(),
        )?;
        ensure(
            (0..m).all(|j| self.chol_zz[(j, j)] > 0.0 && self.chol_v[(j, j)] > 0.0),
            || "a non-positive pivot in the sketch's factors".into(),
        )?;
        ensure_finite(&self.points, "sketch points")?;
        ensure_finite(&self.prior, "sketch prior variances")?;
        ensure_finite(&self.sums, "sketch sums")?;
        ensure_finite(&self.projected, "sketch projection")?;
        ensure_finite(&self.weights, "sketch weights")?;
        ensure(self.log.iter().all(|&(_, y)| y.is_finite()), || {
            "non-finite target".into()
        })?;
        for matrix in [&self.chol_zz, &self.chol_v, &self.embedding] {
            ensure(
                (0..matrix.ncols()).all(|j| matrix.col(j).iter().all(|v| v.is_finite())),
                || "non-finite entry in the sketch's factors".into(),
            )?;
        }
        self.index = (0..n).map(|i| (key(self.point(i)), i)).collect();
        ensure(self.index.len() == n, || "repeated distinct point".into())
    }
}
