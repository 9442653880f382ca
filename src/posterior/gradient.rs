//! Gradients of the exact posterior with respect to the query point, and its variance given
//! pending inputs.
//!
//! With J the t × d Jacobian of k_t(x) (row i is ∂k(x, xᵢ)/∂x) and L the Cholesky factor of
//! K_t + aI (Rasmussen & Williams 2006 Eqs. 2.25–2.26 differentiated in x):
//!
//! - ∇μ_a(x) = Jᵀ(K_t + aI)⁻¹y = Jᵀα
//! - ∇ρ_a²(x) = ∇k(x, x) − 2Jᵀ(K_t + aI)⁻¹k_t(x) = ∇k(x, x) − 2JᵀL⁻ᵀv, v = L⁻¹k_t(x)
//!
//! so the gradient of μ_a + c ρ_a, for any width c, is Jᵀ L⁻ᵀ(w − (c/ρ_a) v) + (c/(2ρ_a)) ∇k(x, x)
//! with w = L⁻¹y: one forward and one back substitution with the factor the posterior already
//! keeps, no new factorisation.

use faer::{Mat, MatRef};

use super::ExactPosterior;
use super::health::clamp_variance;
use crate::bound::PendingVariance;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::linalg::dot;
use crate::points::{Points, check_point};

/// The solves at one query point x that every gradient needs: k(x, x), the Jacobian J, ∇k(x, x),
/// and for every regulariser v_r = L_r⁻¹k_t(x), μ_r(x) and ρ_r²(x).
#[derive(Debug)]
pub(crate) struct PointSolve {
    /// J, row-major t × d: row i is ∂k(x, xᵢ)/∂x.
    jacobian: Vec<f64>,
    /// ∇k(x, x).
    diag_gradient: Vec<f64>,
    /// v_r for every regulariser.
    solved: Vec<Vec<f64>>,
    /// μ_r(x).
    pub(crate) means: Vec<f64>,
    /// ρ_r²(x), clamped at 0 against rounding.
    pub(crate) variances: Vec<f64>,
}

/// The kernel values and gradients at one query point x.
struct Column {
    /// k(x, x).
    prior: f64,
    /// k_t(x).
    column: Vec<f64>,
    /// J, row-major t × d.
    jacobian: Vec<f64>,
    /// ∇k(x, x).
    diag_gradient: Vec<f64>,
}

impl<K: Kernel> ExactPosterior<K> {
    /// The kernel column k_t(x), the Jacobian J (row-major t × d) and ∇k(x, x) at a checked
    /// point.
    fn jacobian(&self, x: &[f64]) -> Result<Column> {
        check_point(x, self.dim(), "query point")?;
        crate::kernel::check_against_stored(self.kernel(), self.dim(), x.len())?;
        let (t, d) = (self.len(), x.len());
        let prior = self.kernel().eval_diag(x);
        let mut column = vec![0.0; t];
        let mut jacobian = vec![0.0; t * d];
        let mut diag_gradient = vec![0.0; d];
        self.kernel().diag_gradient(x, &mut diag_gradient)?;
        for (i, (k, row)) in column
            .iter_mut()
            .zip(jacobian.chunks_exact_mut(d.max(1)))
            .enumerate()
        {
            let xi = self.input(i);
            *k = self.kernel().eval(x, xi);
            self.kernel().gradient(x, xi, row)?;
        }
        let finite = prior.is_finite()
            && prior >= 0.0
            && column.iter().all(|v| v.is_finite())
            && jacobian.iter().all(|v| v.is_finite())
            && diag_gradient.iter().all(|v| v.is_finite());
        if !finite {
            return Err(Error::NonFinite {
                what: "kernel value or gradient at a query point".into(),
            });
        }
        Ok(Column {
            prior,
            column,
            jacobian,
            diag_gradient,
        })
    }

    /// The solves at `x` for every regulariser (see [`PointSolve`]): O(td) kernel values and
    /// gradients, then one O(t²) forward substitution per regulariser.
    ///
    /// # Errors
    /// Wrong dimension or non-finite `x`; [`Error::Unsupported`] for a kernel without gradient;
    /// [`Error::NonFinite`] for non-finite kernel values; [`Error::NotPositiveDefinite`] if
    /// rounding made a variance clearly negative.
    pub(crate) fn point_solve(&self, x: &[f64]) -> Result<PointSolve> {
        let all: Vec<usize> = (0..self.regularisers().len()).collect();
        self.point_solve_among(x, &all)
    }

    /// [`ExactPosterior::point_solve`] for the regularisers `among` only (indices in range):
    /// the others' entries are left empty (their μ_r and ρ_r² NaN), and their factors are not
    /// read. Each solved regulariser's entries are the same bits as `point_solve`'s.
    ///
    /// # Errors
    /// As [`ExactPosterior::point_solve`].
    pub(crate) fn point_solve_among(&self, x: &[f64], among: &[usize]) -> Result<PointSolve> {
        let Column {
            prior,
            column,
            jacobian,
            diag_gradient,
        } = self.jacobian(x)?;
        let n_reg = self.regularisers().len();
        let mut solved = vec![Vec::new(); n_reg];
        let mut means = vec![f64::NAN; n_reg];
        let mut variances = vec![f64::NAN; n_reg];
        for &r in among {
            let factor = self.factor(r);
            let mut v = column.clone();
            factor.forward_solve(&mut v);
            means[r] = dot(&v, factor.whitened_targets());
            let variance = prior - dot(&v, &v);
            variances[r] = clamp_variance(variance, prior.abs() + factor.regulariser(), 0)?;
            solved[r] = v;
        }
        Ok(PointSolve {
            jacobian,
            diag_gradient,
            solved,
            means,
            variances,
        })
    }

    /// ∇(μ_r + c·ρ_r)(x) from a [`PointSolve`] at x: Jᵀ L_r⁻ᵀ(w − (c/ρ_r) v_r) + (c/(2ρ_r))∇k(x, x),
    /// one back substitution. Where ρ_r = 0 (x is, to rounding, fully determined by the data)
    /// ρ_r is not differentiable; its term is left out there.
    pub(crate) fn combination_gradient(&self, solve: &PointSolve, r: usize, c: f64) -> Vec<f64> {
        let factor = self.factor(r);
        let d = solve.diag_gradient.len();
        let rho = solve.variances[r].sqrt();
        let ratio = if c != 0.0 && rho > 0.0 { c / rho } else { 0.0 };
        let rhs: Vec<f64> = factor
            .whitened_targets()
            .iter()
            .zip(&solve.solved[r])
            .map(|(w, v)| w - ratio * v)
            .collect();
        let z = if rhs.is_empty() {
            rhs
        } else {
            factor.back_solve(rhs)
        };
        let mut out: Vec<f64> = solve
            .diag_gradient
            .iter()
            .map(|g| 0.5 * ratio * g)
            .collect();
        for (row, zi) in solve.jacobian.chunks_exact(d.max(1)).zip(&z) {
            for (o, j) in out.iter_mut().zip(row) {
                *o += zi * j;
            }
        }
        out
    }

    /// The posterior variance of regulariser `r` given the observations and the `pending`
    /// inputs, whose targets are not known: the variance after appending them, computed without
    /// appending (see [`ConditionedVariance`]). O(p·t²) for p pending points.
    ///
    /// The factor of the pending block follows the pivot policy of the single-row append
    /// (`super::health`): pending point i's pivot is √(ρ² + a), with ρ² its posterior variance
    /// given the observations and the pending points before it, formed without a (so that a
    /// regulariser below ε·k(x, x), e.g. σ = 10⁻⁸, is not lost to rounding) and raised to 0
    /// where rounding made it slightly negative: a pending point that duplicates an observation
    /// or another pending point has ρ² = 0 up to rounding, and its pivot is then √a, as it
    /// would be if it were appended.
    ///
    /// # Errors
    /// Pending points of the wrong dimension; non-finite kernel values;
    /// [`Error::NotPositiveDefinite`] if a pending point's ρ² is clearly negative or NaN (the
    /// kernel is not positive semidefinite), naming the row it would take (t + i) and that
    /// value.
    ///
    /// # Panics
    /// If `r` is out of range.
    pub(crate) fn conditioned(
        &self,
        r: usize,
        pending: &Points<'_>,
    ) -> Result<ConditionedVariance<'_, K>> {
        let p = pending.len();
        let factor = self.factor(r);
        let a = factor.regulariser();
        let mut points = Vec::with_capacity(p * pending.dim());
        let (prior, mut solved) = if p == 0 {
            (Vec::new(), Vec::new())
        } else {
            let (prior, cross) = self.query_block(pending)?;
            pending.for_each(|_, x| points.extend_from_slice(x));
            (prior, cross)
        };
        let t = self.len();
        if t > 0 && p > 0 {
            factor.solve_block(&mut solved, p);
        }
        // The Cholesky factor of S = K_PP + aI − V_PᵀV_P, the Schur complement the append
        // would factorise, one row at a time; its off-diagonal entries need no a.
        let mut l_s = Mat::<f64>::zeros(p, p);
        let mut scratch = vec![0.0; pending.dim()];
        let mut other = vec![0.0; pending.dim()];
        for i in 0..p {
            let xi = pending.point(i, &mut scratch);
            for j in 0..i {
                let kij = self.kernel().eval(xi, pending.point(j, &mut other));
                let vv: f64 = (0..t).map(|l| solved[l * p + i] * solved[l * p + j]).sum();
                let earlier: f64 = (0..j).map(|k| l_s[(i, k)] * l_s[(j, k)]).sum();
                l_s[(i, j)] = (kij - vv - earlier) / l_s[(j, j)];
            }
            let explained: f64 = (0..t).map(|l| solved[l * p + i].powi(2)).sum::<f64>()
                + (0..i).map(|k| l_s[(i, k)].powi(2)).sum::<f64>();
            let variance = prior[i] - explained;
            if !variance.is_finite() || l_s.row(i).iter().any(|v| !v.is_finite()) {
                return Err(Error::NonFinite {
                    what: "kernel value at a pending point".into(),
                });
            }
            let variance = clamp_variance(variance, prior[i].abs() + a, t + i)?;
            l_s[(i, i)] = (variance + a).sqrt();
        }
        Ok(ConditionedVariance {
            posterior: self,
            r,
            dim: if p == 0 { 0 } else { pending.dim() },
            pending: points,
            solved,
            l_s,
        })
    }
}

/// The posterior variance of one regulariser of an [`ExactPosterior`] given further pending
/// inputs P (p of them) without targets.
///
/// Appending P would extend the factor L of K_t + aI to [[L, 0], [V_Pᵀ, L_S]] with
/// V_P = L⁻¹k_t(P) and L_S the Cholesky factor of S = K_PP + aI − V_PᵀV_P. The variance at x is
/// then ρ_a²(x) − ‖L_S⁻¹c(x)‖² with c(x) = k_P(x) − V_Pᵀv(x), v(x) = L⁻¹k_t(x): exactly the
/// variance of the appended posterior, computed with the existing factor and the small p × p
/// one, so nothing is appended and nothing needs truncating.
#[derive(Debug)]
pub(crate) struct ConditionedVariance<'a, K> {
    posterior: &'a ExactPosterior<K>,
    r: usize,
    /// The pending inputs' dimension (0 with none).
    dim: usize,
    /// The pending inputs, row-major p × d.
    pending: Vec<f64>,
    /// V_P, row-major t × p.
    solved: Vec<f64>,
    /// L_S, the lower-triangular factor of S (p × p; empty with no pending point).
    l_s: Mat<f64>,
}

impl<K: Kernel> ConditionedVariance<'_, K> {
    fn p(&self) -> usize {
        self.l_s.nrows()
    }

    fn l_s(&self) -> Option<MatRef<'_, f64>> {
        (self.p() > 0).then(|| self.l_s.as_ref())
    }

    /// Checks that points of dimension `dim` match the pending ones.
    fn check_dim(&self, dim: usize) -> Result<()> {
        if self.p() > 0 && dim != self.dim {
            return Err(Error::DimensionMismatch {
                expected: self.dim,
                got: dim,
            });
        }
        Ok(())
    }

    /// c = k_P(x) − V_Pᵀv solved by L_S: e = L_S⁻¹c.
    fn pending_part(&self, x: &[f64], v: &[f64]) -> Vec<f64> {
        let p = self.p();
        let d = x.len();
        let mut c: Vec<f64> = (0..p)
            .map(|j| {
                let kj = self
                    .posterior
                    .kernel()
                    .eval(x, &self.pending[j * d..(j + 1) * d]);
                let vv: f64 = v
                    .iter()
                    .enumerate()
                    .map(|(l, vl)| vl * self.solved[l * p + j])
                    .sum();
                kj - vv
            })
            .collect();
        if let Some(l) = self.l_s() {
            for i in 0..p {
                let mut s = c[i];
                for k in 0..i {
                    s -= l[(i, k)] * c[k];
                }
                c[i] = s / l[(i, i)];
            }
        }
        c
    }
}

impl<K: Kernel> PendingVariance for ConditionedVariance<'_, K> {
    fn variance(&self, points: &Points<'_>) -> Result<Vec<f64>> {
        if !points.is_empty() {
            self.check_dim(points.dim())?;
        }
        let mut scratch = vec![0.0; points.dim()];
        let factor = self.posterior.factor(self.r);
        let (prior, mut cross) = self.posterior.query_block(points)?;
        let (t, m) = (self.posterior.len(), points.len());
        if t > 0 && m > 0 {
            factor.solve_block(&mut cross, m);
        }
        let mut out = Vec::with_capacity(m);
        let mut v = vec![0.0; t];
        for j in 0..m {
            for (l, vl) in v.iter_mut().enumerate() {
                *vl = cross[l * m + j];
            }
            let x = points.point(j, &mut scratch);
            let e = self.pending_part(x, &v);
            let variance = prior[j] - dot(&v, &v) - dot(&e, &e);
            out.push(clamp_variance(
                variance,
                prior[j].abs() + factor.regulariser(),
                j,
            )?);
        }
        Ok(out)
    }

    fn variance_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        self.check_dim(x.len())?;
        let Column {
            prior,
            column,
            jacobian,
            diag_gradient: mut gradient,
        } = self.posterior.jacobian(x)?;
        let factor = self.posterior.factor(self.r);
        let (t, p, d) = (self.posterior.len(), self.p(), x.len());
        let mut v = column;
        factor.forward_solve(&mut v);
        let e = self.pending_part(x, &v);
        let variance = clamp_variance(
            prior - dot(&v, &v) - dot(&e, &e),
            prior.abs() + factor.regulariser(),
            0,
        )?;
        // u = L_ext⁻ᵀ[v; e] with L_extᵀ = [[Lᵀ, V_P], [0, L_Sᵀ]]: u₂ = L_S⁻ᵀe, then
        // u₁ = L⁻ᵀ(v − V_P u₂). ∇ρ² = ∇k(x, x) − 2(Jᵀu₁ + J_Pᵀu₂).
        let mut u2 = e;
        if let Some(l) = self.l_s() {
            for i in (0..p).rev() {
                let mut s = u2[i];
                for k in i + 1..p {
                    s -= l[(k, i)] * u2[k];
                }
                u2[i] = s / l[(i, i)];
            }
        }
        let rhs: Vec<f64> = (0..t)
            .map(|l| v[l] - dot(&self.solved[l * p..(l + 1) * p], &u2))
            .collect();
        let u1 = if t > 0 { factor.back_solve(rhs) } else { rhs };
        let mut row = vec![0.0; d];
        for (i, ui) in u1.iter().enumerate() {
            for (g, j) in gradient.iter_mut().zip(&jacobian[i * d..(i + 1) * d]) {
                *g -= 2.0 * ui * j;
            }
        }
        for (j, uj) in u2.iter().enumerate() {
            self.posterior
                .kernel()
                .gradient(x, &self.pending[j * d..(j + 1) * d], &mut row)?;
            for (g, r) in gradient.iter_mut().zip(&row) {
                *g -= 2.0 * uj * r;
            }
        }
        Ok((variance, gradient))
    }
}
