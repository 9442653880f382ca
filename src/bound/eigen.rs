//! The symmetric eigendecomposition of a growing kernel matrix, updated in place of a full
//! recomputation when one row and column are appended (CMM-UCB's per-update cost).
//!
//! With K_t = U diag(λ) Uᵀ and the new column k, κ = k(x, x), the bordered matrix is
//! K_{t+1} = diag(U, 1) A diag(U, 1)ᵀ with the arrowhead A = [[diag(λ), z], [zᵀ, κ]], z = Uᵀk.
//! A's eigenvalues are the roots of the secular equation g(ω) = κ − ω − Σ zᵢ²/(λᵢ − ω) = 0,
//! one below λ₁, one between each pair of consecutive poles and one above the last. The update
//! follows Gu & Eisenstat (1995): deflation (an eigenpair is kept when |zᵢ| is at rounding
//! level, and two close poles are merged by a Givens rotation first), each root found relative
//! to its nearest pole (so that ω − λᵢ keeps full relative accuracy), then z recomputed from the
//! roots by Löwner's formula, so that the eigenvectors [ẑᵢ/(ω − λᵢ); 1] are orthogonal to
//! working accuracy. The new eigenvectors are diag(U, 1) times A's: one matrix product over the
//! non-deflated columns only.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::evd::{
    ComputeEigenvectors, SelfAdjointEvdParams, self_adjoint_evd, self_adjoint_evd_scratch,
};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par, Spec};

use crate::error::{Error, Result};

/// K = U diag(λ) Uᵀ, eigenvalues ascending.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Eigen {
    pub values: Vec<f64>,
    /// t × t, column i the eigenvector of `values[i]`.
    #[cfg_attr(feature = "serde", serde(with = "crate::snapshot::mat"))]
    pub vectors: Mat<f64>,
}

impl Eigen {
    /// The decomposition of the symmetric `matrix` (only its lower triangle is read).
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the iteration does not converge or a value is not finite.
    pub fn full(matrix: MatRef<'_, f64>) -> Result<Self> {
        let t = matrix.nrows();
        if t == 0 {
            // (faer's scratch-size computation does not take n = 0.)
            return Ok(Self {
                values: Vec::new(),
                vectors: Mat::zeros(0, 0),
            });
        }
        let params: Spec<SelfAdjointEvdParams, f64> = Default::default();
        let mut values = faer::diag::Diag::<f64>::zeros(t);
        let mut vectors = Mat::<f64>::zeros(t, t);
        let mut scratch = MemBuffer::new(self_adjoint_evd_scratch::<f64>(
            t,
            ComputeEigenvectors::Yes,
            Par::Seq,
            params,
        ));
        self_adjoint_evd(
            matrix,
            values.as_mut(),
            Some(vectors.as_mut()),
            Par::Seq,
            MemStack::new(&mut scratch),
            params,
        )
        .map_err(|_| Error::NonFinite {
            what: "eigendecomposition of the kernel matrix (no convergence)".into(),
        })?;
        let values: Vec<f64> = values.column_vector().iter().copied().collect();
        if values.iter().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "eigenvalue of the kernel matrix".into(),
            });
        }
        Ok(Self { values, vectors })
    }

    /// The eigenvalues alone of the symmetric `matrix` (only its lower triangle is read), in
    /// ascending order; about a ninth of the cost of [`Eigen::full`].
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the iteration does not converge or a value is not finite.
    pub fn values_only(matrix: MatRef<'_, f64>) -> Result<Vec<f64>> {
        let t = matrix.nrows();
        if t == 0 {
            return Ok(Vec::new());
        }
        let params: Spec<SelfAdjointEvdParams, f64> = Default::default();
        let mut values = faer::diag::Diag::<f64>::zeros(t);
        let mut scratch = MemBuffer::new(self_adjoint_evd_scratch::<f64>(
            t,
            ComputeEigenvectors::No,
            Par::Seq,
            params,
        ));
        self_adjoint_evd(
            matrix,
            values.as_mut(),
            None,
            Par::Seq,
            MemStack::new(&mut scratch),
            params,
        )
        .map_err(|_| Error::NonFinite {
            what: "eigenvalues of the kernel matrix (no convergence)".into(),
        })?;
        let values: Vec<f64> = values.column_vector().iter().copied().collect();
        if values.iter().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "eigenvalue of the kernel matrix".into(),
            });
        }
        Ok(values)
    }

    /// The decomposition of [[K, k], [kᵀ, κ]], given this one of K.
    pub fn bordered(&self, k: &[f64], kappa: f64) -> Self {
        let t = self.values.len();
        debug_assert_eq!(k.len(), t);
        // U, copied only if a merge of two poles rotates two of its columns.
        let mut rotated_u: Option<Mat<f64>> = None;
        // z = Uᵀk.
        let mut z = vec![0.0; t];
        {
            let mut out = Mat::<f64>::zeros(t, 1);
            matmul(
                out.as_mut(),
                Accum::Replace,
                self.vectors.transpose(),
                MatRef::from_column_major_slice(k, t, 1),
                1.0,
                Par::Seq,
            );
            for (zi, v) in z.iter_mut().zip(out.col(0).iter()) {
                *zi = *v;
            }
        }
        let scale = self
            .values
            .iter()
            .map(|v| v.abs())
            .fold(kappa.abs(), f64::max)
            .max(z.iter().map(|v| v.abs()).fold(0.0, f64::max));
        let tol = 8.0 * f64::EPSILON * scale;

        // Merge two poles whose coupling after a rotation is below tol (Gu & Eisenstat 1995,
        // as in LAPACK's dlaed2): the Givens rotation G = [[c, −s], [s, c]] with
        // c = z_j/r, s = z_i/r moves all of z's weight onto column j. In the rotated basis the
        // diagonal block is [[c²d_j + s²d_i, cs(d_i − d_j)], [cs(d_i − d_j), s²d_j + c²d_i]]:
        // the new diagonal is written back and only the off-diagonal cs(d_i − d_j) is
        // neglected. Keeping d_j and d_i instead would neglect s·|d_i − d_j|, which for c ≪ 1
        // amounts to swapping the two eigenvalues. The kept value lies in [d_j, d_i], so the
        // active poles stay ascending.
        let mut d = self.values.clone();
        let mut deflated = vec![false; t];
        let mut last: Option<usize> = None;
        for i in 0..t {
            if z[i].abs() <= tol {
                deflated[i] = true;
                continue;
            }
            if let Some(j) = last {
                let r = z[i].hypot(z[j]);
                let (c, s) = (z[j] / r, z[i] / r);
                if ((d[i] - d[j]) * c * s).abs() <= tol {
                    let u = rotated_u.get_or_insert_with(|| self.vectors.clone());
                    for row in 0..t {
                        let (a, b) = (u[(row, j)], u[(row, i)]);
                        u[(row, j)] = c * a + s * b;
                        u[(row, i)] = -s * a + c * b;
                    }
                    let (dj, di) = (d[j], d[i]);
                    d[j] = c * c * dj + s * s * di;
                    d[i] = s * s * dj + c * c * di;
                    z[j] = r;
                    z[i] = 0.0;
                    deflated[i] = true;
                    continue;
                }
            }
            last = Some(i);
        }
        let d = &d;
        let active: Vec<usize> = (0..t).filter(|&i| !deflated[i]).collect();
        let n = active.len();
        let poles: Vec<f64> = active.iter().map(|&i| d[i]).collect();
        let weights: Vec<f64> = active.iter().map(|&i| z[i]).collect();
        let z_norm_sq: f64 = weights.iter().map(|w| w * w).sum();

        // The n + 1 roots, each as (origin pole index, offset): ω = poles[origin] + offset.
        let roots: Vec<(usize, f64)> = (0..=n)
            .map(|j| secular_root(&poles, &weights, kappa, j, z_norm_sq))
            .collect();
        // ω_j = base(j) + offset_j, with base(j) the root's origin pole (0 when there is none);
        // ω_j − poles[i] accurately as (base(j) − poles[i]) + offset_j.
        let base = |j: usize| -> f64 { if n == 0 { 0.0 } else { poles[roots[j].0] } };
        let gap = |j: usize, i: usize| -> f64 { (base(j) - poles[i]) + roots[j].1 };
        // Löwner: ẑ_i² = −Π_j (ω_j − d_i) / Π_{k≠i} (d_k − d_i), keeping z's signs.
        let mut z_hat = vec![0.0; n];
        for i in 0..n {
            // The unpaired factors −(ω_0 − d_i)(ω_{i+1} − d_i) > 0; each other ω_{k+1} is
            // paired with d_k, a positive ratio.
            let mut product = -gap(0, i) * gap(i + 1, i);
            for k in 0..n {
                if k != i {
                    product *= gap(k + 1, i) / (poles[k] - poles[i]);
                }
            }
            z_hat[i] = product.max(0.0).sqrt().copysign(weights[i]);
        }
        let u = rotated_u.as_ref().unwrap_or(&self.vectors);
        // A's eigenvectors (n + 1 of them), normalised: [ẑ_i/(ω_j − d_i); 1]/norm.
        let mut small = Mat::<f64>::zeros(n + 1, n + 1);
        let mut values = Vec::with_capacity(t + 1);
        for (j, &(_, offset)) in roots.iter().enumerate() {
            let column = small
                .col_mut(j)
                .try_as_col_major_mut()
                .expect("a column of an owned matrix is contiguous")
                .as_slice_mut();
            // ω_j − d_i as `gap` forms it, with the base taken out of the loop so that the
            // compiler vectorises it.
            let base = base(j);
            let mut norm_sq = 1.0;
            for ((entry, &z), &pole) in column.iter_mut().zip(&z_hat).zip(&poles) {
                let v = z / ((base - pole) + offset);
                *entry = v;
                norm_sq += v * v;
            }
            column[n] = 1.0;
            let inv = 1.0 / norm_sq.sqrt();
            column.iter_mut().for_each(|entry| *entry *= inv);
            values.push(base + offset);
        }
        // The new vectors are diag(U, 1) times `small` over the active columns: the rows of U
        // times the first n rows of `small`, and `small`'s last row below them. This matrix
        // product is the O(t³) step of the update: in blocks of columns, spread over the cores
        // with the `parallel` feature (the same bits on any number of threads).
        let work = 2 * t * n * (n + 1);
        let product = |out: faer::MatMut<'_, f64>, active_u: MatRef<'_, f64>| {
            crate::parallel::for_each_column_block(out, work, |first, block| {
                let width = block.ncols();
                matmul(
                    block,
                    Accum::Replace,
                    active_u,
                    small.as_ref().subrows(0, n).subcols(first, width),
                    1.0,
                    Par::Seq,
                );
            });
        };
        if n == t {
            // Nothing deflated: the roots interlace the poles, so the new columns are already
            // in ascending order and the product is written in place.
            let mut vectors = Mat::<f64>::zeros(t + 1, t + 1);
            product(vectors.as_mut().subrows_mut(0, t), u.as_ref());
            vectors.row_mut(t).copy_from(small.row(n));
            return Self { values, vectors };
        }
        let mut active_u = Mat::<f64>::zeros(t, n);
        for (c, &i) in active.iter().enumerate() {
            active_u.col_mut(c).copy_from(u.col(i));
        }
        let mut rotated = Mat::<f64>::zeros(t + 1, n + 1);
        product(rotated.as_mut().subrows_mut(0, t), active_u.as_ref());
        rotated.row_mut(t).copy_from(small.row(n));
        // Assemble and sort ascending.
        let mut columns: Vec<(f64, usize, bool)> = (0..=n).map(|j| (values[j], j, true)).collect();
        columns.extend((0..t).filter(|&i| deflated[i]).map(|i| (d[i], i, false)));
        columns.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut vectors = Mat::<f64>::zeros(t + 1, t + 1);
        for (c, &(_, source, new)) in columns.iter().enumerate() {
            if new {
                vectors.col_mut(c).copy_from(rotated.col(source));
            } else {
                vectors
                    .col_mut(c)
                    .subrows_mut(0, t)
                    .copy_from(u.col(source));
            }
        }
        Self {
            values: columns.iter().map(|c| c.0).collect(),
            vectors,
        }
    }
}

impl Eigen {
    /// A randomized check of the decomposition against the matrix it stands for, in O(t²):
    /// with a unit vector v drawn from `seed`, the reconstruction residual
    /// ‖(K − U diag(λ) Uᵀ)v‖ / ‖K‖, where `apply(v)` returns Kv and ‖K‖ is taken as the
    /// largest |λ| (at least the largest |(Kv)ᵢ|, so a wrong spectrum cannot hide the
    /// residual); and the orthogonality defect ‖Uᵀuⱼ − eⱼ‖ of one column j drawn from `seed`.
    ///
    /// A random v sees any error matrix E with E v of norm about ‖E‖_F/√t (Gaussian
    /// direction), so a misplaced eigenpair shows as a residual of its eigenvalue error over
    /// √t; a backward-stable update leaves a residual of a few t·ε.
    pub fn check(&self, apply: impl Fn(&[f64]) -> Vec<f64>, seed: u64) -> EigenCheck {
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let t = self.values.len();
        if t == 0 {
            return EigenCheck::default();
        }
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
        let mut v: Vec<f64> = (0..t).map(|_| StandardNormal.sample(&mut rng)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        let kv = apply(&v);
        let column = (rand::RngExt::random::<u64>(&mut rng) % t as u64) as usize;
        // w = diag(λ) Uᵀ v, then U w; and Uᵀ u_j.
        let u = self.vectors.as_ref();
        let mut projected = Mat::<f64>::zeros(t, 2);
        let mut rhs = Mat::<f64>::zeros(t, 2);
        for i in 0..t {
            rhs[(i, 0)] = v[i];
            rhs[(i, 1)] = u[(i, column)];
        }
        matmul(
            projected.as_mut(),
            Accum::Replace,
            u.transpose(),
            rhs.as_ref(),
            1.0,
            Par::Seq,
        );
        let mut scaled = Mat::<f64>::zeros(t, 1);
        for i in 0..t {
            scaled[(i, 0)] = self.values[i] * projected[(i, 0)];
        }
        let mut rebuilt = Mat::<f64>::zeros(t, 1);
        matmul(
            rebuilt.as_mut(),
            Accum::Replace,
            u,
            scaled.as_ref(),
            1.0,
            Par::Seq,
        );
        let scale = self
            .values
            .iter()
            .chain(kv.iter())
            .fold(f64::MIN_POSITIVE, |m, x| m.max(x.abs()));
        let residual = (0..t)
            .map(|i| (kv[i] - rebuilt[(i, 0)]).powi(2))
            .sum::<f64>()
            .sqrt()
            / scale;
        let orthogonality = (0..t)
            .map(|i| {
                let identity = if i == column { 1.0 } else { 0.0 };
                (projected[(i, 1)] - identity).powi(2)
            })
            .sum::<f64>()
            .sqrt();
        EigenCheck {
            residual: if residual.is_nan() {
                f64::INFINITY
            } else {
                residual
            },
            orthogonality: if orthogonality.is_nan() {
                f64::INFINITY
            } else {
                orthogonality
            },
        }
    }
}

/// The result of [`Eigen::check`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct EigenCheck {
    /// ‖(K − UΛUᵀ)v‖/‖K‖ for a random unit v.
    pub residual: f64,
    /// ‖Uᵀuⱼ − eⱼ‖ for a random column j.
    pub orthogonality: f64,
}

/// Root `j` (0 ≤ j ≤ n) of g(ω) = κ − ω − Σ wᵢ²/(dᵢ − ω), with ascending distinct poles d and
/// non-zero weights w: root 0 lies below d₀, root j in (d_{j−1}, d_j), root n above d_{n−1}.
/// Returned as (origin, offset) with ω = d_origin + offset and origin the nearer pole, so that
/// ω − dᵢ = (d_origin − dᵢ) + offset is accurate. With no pole (n = 0) the root is κ itself,
/// returned as (0, κ).
///
/// Each step solves a rational model of F = −g exactly instead of F's tangent (Bunch, Nielsen
/// & Sorensen 1978; the "fixed weight" iteration of LAPACK's dlaed4, Li 1993): the poles below
/// the root are modelled as one term B/(d_{j−1} − ω), those above as D/(d_j − ω), with B and D
/// matching the two sums' slopes at the iterate and a constant matching F's value, while the
/// linear term ω − κ is either folded into D (between two poles) or kept exactly (outside the
/// poles). Such a model has F's poles on both sides of the root, so the step does not overshoot
/// as Newton's tangent does near a pole; it converges in a few steps where Newton took about
/// fourteen. The step is safeguarded by the bracket F's sign keeps, with bisection when the
/// model's root falls outside it.
fn secular_root(d: &[f64], w: &[f64], kappa: f64, j: usize, w_norm_sq: f64) -> (usize, f64) {
    let n = d.len();
    if n == 0 {
        return (0, kappa);
    }
    // Bracket [lo, hi] for ω, then the origin pole and offsets relative to it.
    let spread = w_norm_sq.sqrt() + (kappa - d[0]).abs().max((kappa - d[n - 1]).abs());
    let (lo, hi) = match j {
        0 => (d[0] - spread - 1.0, d[0]),
        _ if j == n => (d[n - 1], d[n - 1] + spread + 1.0),
        _ => (d[j - 1], d[j]),
    };
    // F = ω − κ + Σ wᵢ²/(dᵢ − ω) at an offset from pole `o`, with every difference
    // dᵢ − ω = (dᵢ − d_o) − offset, and the slopes of the sums over the poles below the root
    // (i < j) and above it (i ≥ j).
    let f = |o: usize, offset: f64| -> (f64, f64, f64, f64) {
        let sums = |range: std::ops::Range<usize>| {
            pulp::Arch::new().dispatch(SecularSums {
                d: &d[range.clone()],
                w: &w[range],
                origin: d[o],
                offset,
            })
        };
        let (below, below_slope) = sums(0..j);
        let (above, above_slope) = sums(j..n);
        let linear = d[o] + offset - kappa;
        // The sums' terms have one sign each side of the root: Σ|terms| = |below| + |above|.
        let rounding = 8.0 * f64::EPSILON * ((above - below) + linear.abs() + kappa.abs());
        (linear + below + above, below_slope, above_slope, rounding)
    };
    // Choose the origin: the pole nearer the root, judged by F's sign at the midpoint (F is
    // increasing between poles). The midpoint is also the first iterate, so its F is kept.
    let mut at_start = None;
    let origin = if j == 0 {
        0
    } else if j == n {
        n - 1
    } else {
        let at_middle = f(j - 1, 0.5 * (d[j] - d[j - 1]));
        at_start = Some(at_middle);
        if at_middle.0 < 0.0 { j } else { j - 1 }
    };
    let (mut a, mut b) = (lo - d[origin], hi - d[origin]);
    // The neighbouring poles as offsets from the origin.
    let below = (j > 0).then(|| d[j - 1] - d[origin]);
    let above = (j < n).then(|| d[j] - d[origin]);
    let mut x = 0.5 * (a + b);
    for _ in 0..200 {
        // (Between two poles the first iterate is the midpoint, ±(d_j − d_{j−1})/2 exactly.)
        let (value, below_slope, above_slope, rounding) =
            at_start.take().unwrap_or_else(|| f(origin, x));
        if value.abs() <= rounding {
            break;
        }
        if value < 0.0 {
            a = x;
        } else {
            b = x;
        }
        // The model's root as the roots of a quadratic q₂τ² + q₁τ + q₀ = 0.
        let quadratic = match (below, above) {
            (Some(p), Some(q)) => {
                // c + B/(p − τ) + D/(q − τ), times (p − τ)(q − τ).
                let (dp, dq) = (p - x, q - x);
                let big_b = below_slope * dp * dp;
                let big_d = (above_slope + 1.0) * dq * dq;
                let c = value - big_b / dp - big_d / dq;
                [
                    c,
                    -(c * (p + q) + big_b + big_d),
                    c * p * q + big_b * q + big_d * p,
                ]
            }
            // Outside the poles, with the one pole at offset 0 and the linear term kept:
            // c + E/(−τ) + τ, times −τ.
            (Some(_), None) => {
                let big_b = below_slope * x * x;
                [1.0, value + big_b / x - x, -big_b]
            }
            (None, Some(_)) => {
                let big_d = above_slope * x * x;
                [1.0, value + big_d / x - x, -big_d]
            }
            (None, None) => unreachable!("n > 0 gives a pole on one side"),
        };
        let next = quadratic_roots(quadratic)
            .into_iter()
            .flatten()
            .find(|r| *r > a && *r < b)
            .unwrap_or(0.5 * (a + b));
        if (next - x).abs() <= 2.0 * f64::EPSILON * next.abs().max(f64::MIN_POSITIVE)
            || b - a <= 2.0 * f64::EPSILON * a.abs().max(b.abs())
        {
            x = next;
            break;
        }
        x = next;
    }
    (origin, x)
}

/// The real roots of q₂τ² + q₁τ + q₀ = 0, each formed without cancellation (the larger in
/// magnitude from q₁ and the discriminant, the other from the product of the roots); `None`
/// where there is none (a negative discriminant, or a degenerate coefficient).
fn quadratic_roots([q2, q1, q0]: [f64; 3]) -> [Option<f64>; 2] {
    let discriminant = q1 * q1 - 4.0 * q2 * q0;
    // (A NaN discriminant fails the test as a negative one does.)
    if discriminant.is_nan() || discriminant < 0.0 {
        return [None, None];
    }
    let half = -0.5 * (q1 + discriminant.sqrt().copysign(q1));
    let finite = |r: f64| r.is_finite().then_some(r);
    if half == 0.0 {
        return [None, None];
    }
    [finite(half / q2), finite(q0 / half)]
}

/// Σ wᵢ²/(dᵢ − ω) and Σ wᵢ²/(dᵢ − ω)² at ω = origin + offset, with dᵢ − ω formed as
/// (dᵢ − origin) − offset; eight partial sums, in `pulp`'s SIMD dispatch (the root finder's
/// inner loop).
struct SecularSums<'a> {
    d: &'a [f64],
    w: &'a [f64],
    origin: f64,
    offset: f64,
}

impl pulp::WithSimd for SecularSums<'_> {
    type Output = (f64, f64);

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        const LANES: usize = 8;
        // The ratios of a block first, in a loop of its own (it vectorises as a plain division
        // loop), then the two sums over them. Computed in one loop, the ratios and both sums
        // were packed into 128-bit pairs and took twice as long (1.55 against 0.80 µs for
        // 1000 poles). Each lane still sums the same terms in the same order.
        const BLOCK: usize = 32 * LANES;
        let mut sum = [0.0; LANES];
        let mut slope = [0.0; LANES];
        let mut ratios = [0.0; BLOCK];
        let full = self.d.len() - self.d.len() % LANES;
        for (d, w) in self.d[..full]
            .chunks(BLOCK)
            .zip(self.w[..full].chunks(BLOCK))
        {
            let ratios = &mut ratios[..d.len()];
            for ((r, &d), &w) in ratios.iter_mut().zip(d).zip(w) {
                *r = w / ((d - self.origin) - self.offset);
            }
            let (r_chunks, _) = ratios.as_chunks::<LANES>();
            let (w_chunks, _) = w.as_chunks::<LANES>();
            for (r, w) in r_chunks.iter().zip(w_chunks) {
                for k in 0..LANES {
                    sum[k] += w[k] * r[k];
                    slope[k] += r[k] * r[k];
                }
            }
        }
        for i in full..self.d.len() {
            let ratio = self.w[i] / ((self.d[i] - self.origin) - self.offset);
            sum[0] += self.w[i] * ratio;
            slope[0] += ratio * ratio;
        }
        let total =
            |v: [f64; LANES]| ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
        (total(sum), total(slope))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gram(points: &[f64]) -> Mat<f64> {
        let t = points.len();
        Mat::from_fn(t, t, |i, j| {
            let r = points[i] - points[j];
            (-r * r / 0.1).exp()
        })
    }

    /// The merge of two poles writes the rotated diagonal back (Gu & Eisenstat; LAPACK's
    /// dlaed2): diag(0.01, 0.02) bordered with k = (1e-14, 0.1), κ = 1 merges the poles, and
    /// keeping the old diagonal gave {0, 0.02, 1.01} instead of {0.0099…, 0.01, 1.0101…}.
    #[test]
    fn merged_poles_keep_their_rotated_values() {
        assert_arrowhead_matches_dense("merged poles", &[0.01, 0.02], &[1e-14, 0.1], 1.0);
    }

    /// The randomized check sees a misplaced eigenvalue.
    #[test]
    fn the_check_sees_a_wrong_eigenvalue() {
        let points = [0.1, 0.35, 0.5, 0.8, 0.95];
        let k = gram(&points);
        let mut eigen = Eigen::full(k.as_ref()).unwrap();
        let apply = |v: &[f64]| -> Vec<f64> {
            (0..points.len())
                .map(|i| (0..points.len()).map(|j| k[(i, j)] * v[j]).sum())
                .collect()
        };
        let good = eigen.check(apply, 7);
        assert!(good.residual < 1e-14, "{good:?}");
        eigen.values.swap(1, 3);
        let bad = eigen.check(apply, 7);
        assert!(bad.residual > 1e-3, "{bad:?}");
    }

    /// Appending one point at a time, the updated decomposition reconstructs the matrix and
    /// its eigenvalues match a full decomposition, including repeated points (a singular K).
    #[test]
    fn bordered_updates_match_full_decompositions() {
        let mut points: Vec<f64> = Vec::new();
        let mut eigen = Eigen::full(gram(&[]).as_ref()).unwrap();
        for i in 0..120 {
            let x = if i % 7 == 3 {
                points[i / 2]
            } else {
                (i as f64 * 0.618).fract()
            };
            let k: Vec<f64> = points
                .iter()
                .map(|p| (-(p - x) * (p - x) / 0.1).exp())
                .collect();
            eigen = eigen.bordered(&k, 1.0);
            points.push(x);
            let t = points.len();
            let full = Eigen::full(gram(&points).as_ref()).unwrap();
            let scale = full.values[t - 1].abs();
            for (a, b) in eigen.values.iter().zip(&full.values) {
                assert!((a - b).abs() <= 1e-11 * scale, "t = {t}: {a} vs {b}");
            }
            // U diag(λ) Uᵀ = K and UᵀU = I.
            let u = &eigen.vectors;
            let lambda =
                faer::Mat::from_fn(t, t, |i, j| if i == j { eigen.values[i] } else { 0.0 });
            let rebuilt = u * &lambda * u.transpose();
            let k = gram(&points);
            let ortho = u.transpose() * u;
            for r in 0..t {
                for c in 0..t {
                    assert!(
                        (rebuilt[(r, c)] - k[(r, c)]).abs() <= 1e-10 * scale,
                        "t = {t}"
                    );
                    let identity = if r == c { 1.0 } else { 0.0 };
                    assert!((ortho[(r, c)] - identity).abs() <= 1e-10, "t = {t}");
                }
            }
        }
    }

    /// The arrowhead [[diag(d), w], [wᵀ, κ]] through `bordered` (U = I), against nalgebra's
    /// dense eigensolver: eigenvalues to 10⁻¹³‖A‖, and U diag(λ) Uᵀ = A, UᵀU = I to 10⁻¹³.
    fn assert_arrowhead_matches_dense(name: &str, d: &[f64], w: &[f64], kappa: f64) {
        let n = d.len();
        let eigen = Eigen {
            values: d.to_vec(),
            vectors: Mat::identity(n, n),
        };
        let updated = eigen.bordered(w, kappa);
        let dense = nalgebra::DMatrix::from_fn(n + 1, n + 1, |i, j| match (i == n, j == n) {
            (true, true) => kappa,
            (true, false) => w[j],
            (false, true) => w[i],
            (false, false) if i == j => d[i],
            _ => 0.0,
        });
        let scale = dense.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        let mut reference: Vec<f64> = nalgebra::SymmetricEigen::new(dense.clone())
            .eigenvalues
            .iter()
            .copied()
            .collect();
        reference.sort_by(f64::total_cmp);
        for (i, (a, b)) in updated.values.iter().zip(&reference).enumerate() {
            assert!(
                (a - b).abs() <= 1e-13 * scale,
                "{name}: eigenvalue {i}: {a:e} vs {b:e}"
            );
        }
        let u = nalgebra::DMatrix::from_fn(n + 1, n + 1, |i, j| updated.vectors[(i, j)]);
        let lambda = nalgebra::DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(
            &updated.values,
        ));
        let rebuilt = &u * lambda * u.transpose();
        let ortho = u.transpose() * &u;
        for r in 0..=n {
            for c in 0..=n {
                assert!(
                    (rebuilt[(r, c)] - dense[(r, c)]).abs() <= 1e-13 * scale,
                    "{name}: reconstruction at ({r}, {c})"
                );
                let identity = if r == c { 1.0 } else { 0.0 };
                assert!(
                    (ortho[(r, c)] - identity).abs() <= 1e-13,
                    "{name}: orthogonality at ({r}, {c}): {:e}",
                    ortho[(r, c)] - identity
                );
            }
        }
    }

    /// The secular roots on the configurations that strain a root finder: poles a few ulps
    /// apart and in tight clusters, poles graded over 17 decades, a mirror-symmetric spectrum,
    /// a root pressed against its pole by a weight just above the deflation level, and the
    /// outer roots far from every pole.
    #[test]
    fn secular_roots_on_structured_arrowheads() {
        // Two clusters, one 10⁻¹² wide and one of poles 27 ulps apart, between spread poles.
        let mut d: Vec<f64> = (0..10).map(|i| 0.5 + i as f64 * 1e-12).collect();
        d.extend((0..10).map(|i| 0.7 + i as f64 * 3e-15));
        d.extend((0..20).map(|i| 1.0 + i as f64 / 20.0));
        let w: Vec<f64> = (0..d.len()).map(|i| [1e-3, 1.0, 1e-7][i % 3]).collect();
        assert_arrowhead_matches_dense("clusters", &d, &w, 0.8);

        // Graded: 10⁻¹⁵ to about 10², weights on the scale of √dᵢ (a kernel matrix's z).
        let d: Vec<f64> = (0..24)
            .map(|i| 10f64.powf(-15.0 + 0.75 * i as f64))
            .collect();
        let w: Vec<f64> = d
            .iter()
            .enumerate()
            .map(|(i, v)| v.sqrt() * (1 + i % 3) as f64)
            .collect();
        assert_arrowhead_matches_dense("graded", &d, &w, 1.0);

        // Mirror-symmetric poles ±i/10 with equal weights and κ = 0.
        let mut d: Vec<f64> = (1..=15).map(|i| -(i as f64) / 10.0).collect();
        d.reverse();
        d.extend((1..=15).map(|i| i as f64 / 10.0));
        assert_arrowhead_matches_dense("mirrored", &d, &[0.3; 30], 0.0);

        // A weight of 10⁻¹³ (the deflation level is about 10⁻¹⁴ here): the root sits about
        // 10⁻²⁶ from its pole.
        let d: Vec<f64> = (0..12).map(|i| i as f64 / 4.0).collect();
        let mut w = vec![0.5; 12];
        w[5] = 1e-13;
        w[6] = -2e-13;
        assert_arrowhead_matches_dense("pressed", &d, &w, 1.3);

        // κ far above and far below the poles.
        let d: Vec<f64> = (0..16).map(|i| (i as f64 * 0.618).fract()).collect();
        let mut sorted = d.clone();
        sorted.sort_by(f64::total_cmp);
        assert_arrowhead_matches_dense("far above", &sorted, &[1e-3; 16], 1e6);
        assert_arrowhead_matches_dense("far below", &sorted, &[1e-3; 16], -1e6);
    }
}
