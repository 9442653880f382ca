//! The exact GP posterior for several regularisers over one store of observations.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::CholeskyFactor;
use super::fixed::{ArmSetInfo, FixedArms, accumulate_row};
use super::health::{CHECK_EVERY, Health, clamp_variance};
use super::select;
use super::workspace::{QueryWorkspace, SharedWorkspace, prefix};
use crate::error::{Error, Result, positive};
use crate::kernel::Kernel;
use crate::points::{Points, check_point};

/// Exact kernel-ridge / GP posterior after t observations, for one or more regularisers a > 0
/// (Flynn & Reeb 2024 Eqs. 2–3; q_a and ld_a as in Eq. 8 and Lemma C.1):
///
/// - μ_a(x) = k_t(x)ᵀ(K_t + aI)⁻¹y_t
/// - ρ_a²(x) = k(x, x) − k_t(x)ᵀ(K_t + aI)⁻¹k_t(x)
/// - q_a = y_tᵀ(K_t + aI)⁻¹y_t,  ld_a = ln det(I + K_t/a)
///
/// Every regulariser keeps its own Cholesky factor of K_t + aI, appended in O(t²) per
/// observation (Flynn & Reeb 2024 App. E.2); the points and targets are stored once, and the kernel
/// values of an update or a query are computed once for all regularisers.
/// A batch query of m points evaluates the t × m cross-kernel block once and solves it against
/// each factor.
///
/// # Examples
/// ```
/// use kernel_bandits::kernel::Rbf;
/// use kernel_bandits::points::AsPoints;
/// use kernel_bandits::posterior::ExactPosterior;
/// let mut gp = ExactPosterior::new(Rbf::new(0.5)?, &[0.01, 1.0])?;
/// gp.observe(&[0.2], 1.0)?;
/// let query = vec![vec![0.2]];
/// let batch = gp.evaluate(&query.as_points()?)?;
/// // one observation: μ_a = y k/(k + a) = 1/(1 + a), ρ_a² = 1 − 1/(1 + a)
/// assert!((batch.mean(0)[0] - 1.0 / 1.01).abs() < 1e-12);
/// assert!((batch.variance(1)[0] - 0.5).abs() < 1e-12);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ExactPosterior<K> {
    kernel: K,
    dim: Option<usize>,
    /// Observed inputs, row-major (t × d).
    inputs: Vec<f64>,
    targets: Vec<f64>,
    factors: Vec<CholeskyFactor>,
    /// Counts changes of the observations, so that a cached query knows whether it is current.
    generation: u64,
    /// The blocks of the last query ([`super::workspace`]).
    #[cfg_attr(feature = "serde", serde(skip))]
    workspace: SharedWorkspace,
    /// The solved columns of a fixed arm set, kept up to date by every update
    /// ([`ExactPosterior::fix_arms`]).
    fixed: Option<FixedArms>,
    /// The fixed arm chosen last by [`ExactPosterior::argmax_upper`], looked up first when the
    /// next observation arrives.
    last_pick: AtomicUsize,
    /// Residual checks, refactorisations and clamped pivots ([`super::health`]).
    health: Health,
    /// Whether a factor was downdated ([`ExactPosterior::remove_oldest`]) since it was last
    /// computed from scratch: the pruned argmax's local bounds assume appends only. Saved in
    /// snapshots (format version 4), so that a restored posterior continues as the original.
    downdated: bool,
}

impl<K: Clone> Clone for ExactPosterior<K> {
    fn clone(&self) -> Self {
        Self {
            kernel: self.kernel.clone(),
            dim: self.dim,
            inputs: self.inputs.clone(),
            targets: self.targets.clone(),
            factors: self.factors.clone(),
            generation: self.generation,
            workspace: SharedWorkspace::default(),
            fixed: self.fixed.clone(),
            last_pick: AtomicUsize::new(self.last_pick.load(Ordering::Relaxed)),
            health: self.health,
            downdated: self.downdated,
        }
    }
}

/// Posterior means and variances of a batch of points, for every regulariser.
#[derive(Debug, Clone, PartialEq)]
pub struct PosteriorBatch {
    len: usize,
    prior_variance: Vec<f64>,
    /// Regulariser-major: `means[r * len + j]`.
    means: Vec<f64>,
    variances: Vec<f64>,
}

impl PosteriorBatch {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no point.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// k(x, x) for each point.
    pub fn prior_variance(&self) -> &[f64] {
        &self.prior_variance
    }

    /// μ_a at each point, for the regulariser with index `r`.
    ///
    /// # Panics
    /// If `r` is not a regulariser index of the posterior that produced the batch.
    pub fn mean(&self, r: usize) -> &[f64] {
        &self.means[r * self.len..(r + 1) * self.len]
    }

    /// ρ_a² at each point, for the regulariser with index `r`.
    ///
    /// # Panics
    /// If `r` is not a regulariser index of the posterior that produced the batch.
    pub fn variance(&self, r: usize) -> &[f64] {
        &self.variances[r * self.len..(r + 1) * self.len]
    }
}

impl<K: Kernel> ExactPosterior<K> {
    /// An empty posterior for the given regularisers (at least one).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the list is empty or a regulariser is not finite and
    /// positive.
    pub fn new(kernel: K, regularisers: &[f64]) -> Result<Self> {
        if regularisers.is_empty() {
            return Err(Error::InvalidParameter {
                name: "regularisers",
                value: 0.0,
                expected: "at least one regulariser",
            });
        }
        let factors = regularisers
            .iter()
            .map(|&a| positive("regulariser", a).map(CholeskyFactor::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            kernel,
            dim: None,
            inputs: Vec::new(),
            targets: Vec::new(),
            factors,
            generation: 0,
            workspace: SharedWorkspace::default(),
            fixed: None,
            last_pick: AtomicUsize::new(0),
            health: Health::default(),
            downdated: false,
        })
    }

    /// The kernel.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// Number of observations t.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Whether no observation has been absorbed.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Input dimension, fixed by the first observation.
    pub fn dim(&self) -> Option<usize> {
        self.dim
    }

    /// The regularisers, in the order given at construction.
    pub fn regularisers(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.factors.iter().map(CholeskyFactor::regulariser)
    }

    /// The Cholesky factor of K_t + aI for the regulariser with index `r`.
    ///
    /// # Panics
    /// If `r` is out of range.
    pub(crate) fn factor(&self, r: usize) -> &CholeskyFactor {
        &self.factors[r]
    }

    /// q_a = yᵀ(K_t + aI)⁻¹y for the regulariser with index `r`.
    ///
    /// # Panics
    /// If `r` is out of range.
    pub fn quad_form(&self, r: usize) -> f64 {
        self.factors[r].quad_form()
    }

    /// ld_a = ln det(I + K_t/a) for the regulariser with index `r`.
    ///
    /// # Panics
    /// If `r` is out of range.
    pub fn log_det(&self, r: usize) -> f64 {
        self.factors[r].log_det()
    }

    /// Observed input `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn input(&self, i: usize) -> &[f64] {
        assert!(
            i < self.len(),
            "input {i} out of range for {} observations",
            self.len()
        );
        let d = self.dim.unwrap_or(0);
        &self.inputs[i * d..(i + 1) * d]
    }

    /// The observed targets y_t.
    pub fn targets(&self) -> &[f64] {
        &self.targets
    }

    /// The kernel values of a query: k(q_j, q_j) for each point, and the cross block
    /// k(xᵢ, q_j) row-major (t × m).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for points of the wrong dimension, [`Error::NonFinite`]
    /// for a non-finite kernel value.
    pub(crate) fn query_block(&self, points: &Points<'_>) -> Result<(Vec<f64>, Vec<f64>)> {
        if points.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        self.check_dim(points.dim())?;
        let mut cross = vec![0.0; self.len() * points.len()];
        let prior = self.query_kernel(points, &mut Vec::new(), &mut cross)?;
        Ok((prior, cross))
    }

    /// The kernel matrix K_t (t × t), recomputed from the stored points (O(t²d); it is not
    /// kept, since the factors are all an update needs).
    pub fn kernel_matrix(&self) -> nalgebra::DMatrix<f64> {
        let t = self.len();
        let mut out = nalgebra::DMatrix::zeros(t, t);
        let mut row = vec![0.0; t];
        for i in 0..t {
            self.kernel.eval_rows(&self.inputs, self.input(i), &mut row);
            out.row_mut(i).copy_from_slice(&row);
        }
        out
    }

    /// Checks that points of dimension `dim` can be compared with the stored ones.
    fn check_dim(&self, dim: usize) -> Result<()> {
        crate::kernel::check_against_stored(&self.kernel, self.dim, dim)
    }

    /// Absorbs the observation (x, y): O(t d) kernel evaluations and one O(t²) Cholesky row
    /// append per regulariser.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] / [`Error::ZeroDimension`] for a point of the wrong size,
    /// [`Error::NonFinite`] for a NaN or infinite coordinate or target,
    /// [`Error::NotPositiveDefinite`] if a pivot is not finite. On error nothing changes.
    pub fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        check_point(x, self.dim, "observed point")?;
        self.check_dim(x.len())?;
        if !y.is_finite() {
            return Err(Error::NonFinite {
                what: "observed target".into(),
            });
        }
        let t = self.len();
        let prior_variance = self.kernel.eval_diag(x);
        let non_finite = || Error::NonFinite {
            what: "kernel value at the observed point".into(),
        };
        if !(prior_variance.is_finite() && prior_variance >= 0.0) {
            return Err(non_finite());
        }
        // Arm j of a fixed set has its solved columns at hand; so may the point of the last query.
        let mut fixed_row = None;
        let mut cached = None;
        if let Some(fixed) = &self.fixed
            && fixed.dim() != x.len()
        {
            return Err(Error::DimensionMismatch {
                expected: fixed.dim(),
                got: x.len(),
            });
        }
        // A set that would outgrow its memory limit is dropped by this update: skip its work.
        if let Some(fixed) = self.fixed.as_ref().filter(|f| f.fits(1)) {
            fixed_row = Some(fixed.kernel_row(&self.kernel, x).ok_or_else(non_finite)?);
            let hint = self.last_pick.load(Ordering::Relaxed);
            cached = fixed.position(x, hint).map(|j| fixed.solved_columns(j));
        }
        if cached.is_none() {
            cached = self.workspace.solved_columns(x, self.generation, t);
        }
        // Compute every factor's new row first, so that a failure leaves all of them untouched.
        let pending = match cached {
            // A fixed arm or the last query solved this point's column already (its kernel
            // values were checked then).
            Some(columns) => self
                .factors
                .iter()
                .zip(columns)
                .map(|(f, row)| f.pending_row_solved(row, prior_variance, y))
                .collect::<Result<Vec<_>>>()?,
            None => {
                let mut cross = vec![0.0; t];
                self.kernel.eval_rows(&self.inputs, x, &mut cross);
                if cross.iter().any(|v| !v.is_finite()) {
                    return Err(non_finite());
                }
                self.factors
                    .iter()
                    .map(|f| f.pending_row(&cross, prior_variance, y))
                    .collect::<Result<Vec<_>>>()?
            }
        };
        match (&mut self.fixed, fixed_row) {
            (Some(fixed), Some(kernel_row)) => fixed.append(&kernel_row, &pending),
            (Some(_), None) => self.fixed = None,
            (None, _) => {}
        }
        if pending.iter().any(CholeskyFactor::pending_clamped) {
            self.health.clamped_pivots += 1;
        }
        for (factor, row) in self.factors.iter_mut().zip(pending) {
            factor.commit(row);
        }
        self.dim = Some(x.len());
        self.inputs.extend_from_slice(x);
        self.targets.push(y);
        self.generation += 1;
        self.after_change();
        Ok(())
    }

    /// The numerical record: residual checks, refactorisations, clamped pivots (see
    /// [`super::health`] for the policy, and [`ExactPosterior::diagnostics`] for the residual
    /// of a given row).
    pub fn health(&self) -> Health {
        self.health
    }

    /// Counts a change and runs the residual check when one is due.
    fn after_change(&mut self) {
        self.health.changes_since_check += 1;
        if self.health.changes_since_check >= CHECK_EVERY {
            self.check_health();
        }
    }

    /// The largest relative residual of row `i` over the factors, against a from-scratch
    /// recomputation of K_{i, 0..=i} (O(t·i)).
    pub(crate) fn residual(&self, i: usize) -> f64 {
        let x = self.input(i);
        let mut kernel_row = vec![0.0; i + 1];
        let d = x.len();
        self.kernel
            .eval_rows(&self.inputs[..(i + 1) * d], x, &mut kernel_row);
        self.factors
            .iter()
            .map(|f| f.row_residual(i, &kernel_row, self.targets[i]))
            .fold(0.0, f64::max)
    }

    /// Checks one row (drawn from the update counter) and refactorises from scratch if its
    /// residual is beyond the tolerance; runs on its own every [`CHECK_EVERY`] changes.
    /// Returns the residual after any refactorisation.
    pub(crate) fn check_health(&mut self) -> f64 {
        self.health.changes_since_check = 0;
        let t = self.len();
        if t == 0 {
            return 0.0;
        }
        let i = (self.generation.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as usize % t;
        let mut residual = self.residual(i);
        self.health.checks += 1;
        self.health.largest_residual = self.health.largest_residual.max(residual);
        // `residual` is never NaN: a NaN residual is reported as ∞.
        if residual > self.health.tolerance() && self.refactorise().is_ok() {
            self.health.refactorisations += 1;
            residual = self.residual(i);
            self.health.floor = residual;
        }
        self.health.last_residual = residual;
        residual
    }

    /// Recomputes every factor from the stored observations by the blocked factorisation, and
    /// the fixed arm set's columns; on failure (a kernel that is not positive semidefinite)
    /// nothing changes.
    ///
    /// # Errors
    /// As [`ExactPosterior::observe_many`].
    pub(crate) fn refactorise(&mut self) -> Result<()> {
        let regularisers: Vec<f64> = self.regularisers().collect();
        self.refactorise_with(&regularisers)
    }

    /// Replaces the regularisers by `regularisers` (finite and positive, at least one) and
    /// computes their factors from the stored observations, with the fixed arm set's columns, as
    /// [`ExactPosterior::refactorise`] does; on failure nothing changes.
    ///
    /// # Errors
    /// As [`ExactPosterior::new`] and [`ExactPosterior::observe_many`].
    pub(crate) fn refactorise_with(&mut self, regularisers: &[f64]) -> Result<()> {
        if regularisers.is_empty() {
            return Err(Error::InvalidParameter {
                name: "regularisers",
                value: 0.0,
                expected: "at least one regulariser",
            });
        }
        let fresh = regularisers
            .iter()
            .map(|&a| positive("regulariser", a).map(CholeskyFactor::new))
            .collect::<Result<Vec<_>>>()?;
        let dim = self.dim.unwrap_or(0);
        if self.is_empty() {
            self.factors = fresh;
            if let Some(set) = self.fixed.take() {
                let arms = Points::from_row_major(set.points(), set.dim())?;
                self.fix_arms(&arms, set.memory_limit())?;
            }
            return Ok(());
        }
        let inputs = std::mem::take(&mut self.inputs);
        let targets = std::mem::take(&mut self.targets);
        let fixed = self.fixed.take();
        let old = std::mem::replace(&mut self.factors, fresh);
        let points = Points::from_row_major(&inputs, dim)?;
        let rebuilt = self.observe_many(&points, &targets);
        let refixed = match (&rebuilt, &fixed) {
            (Ok(()), Some(set)) => {
                let arms = Points::from_row_major(set.points(), set.dim())?;
                self.fix_arms(&arms, set.memory_limit()).map(|_| ())
            }
            _ => Ok(()),
        };
        if let Err(e) = rebuilt.and(refixed) {
            self.factors = old;
            self.inputs = inputs;
            self.targets = targets;
            self.fixed = fixed;
            self.dim = Some(dim);
            return Err(e);
        }
        self.downdated = false;
        Ok(())
    }

    /// Absorbs a batch of observations at once, as many calls to [`ExactPosterior::observe`]
    /// would (to rounding), but by one blocked factorisation: per regulariser, V = L⁻¹K_{t,new}
    /// (O(t²n)), the Schur complement K_new + aI − VᵀV (O(tn²)) and its Cholesky factor
    /// (O(n³/3)), all with faer. For warm-starting from a data set: n appends cost
    /// O((t + n)³/3) too, but one row at a time.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if the number of targets differs from the number of points;
    /// as [`ExactPosterior::observe`] for bad points, targets or kernel values;
    /// [`Error::NotPositiveDefinite`] if a Schur complement is not positive definite. On error
    /// nothing changes.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::kernel::Rbf;
    /// use kernel_bandits::points::AsPoints;
    /// use kernel_bandits::posterior::ExactPosterior;
    /// let xs: Vec<[f64; 1]> = (0..300).map(|i| [i as f64 / 300.0]).collect();
    /// let ys: Vec<f64> = xs.iter().map(|x| (5.0 * x[0]).sin()).collect();
    /// let mut batch = ExactPosterior::new(Rbf::new(0.1)?, &[0.1])?;
    /// batch.observe_many(&xs.as_points()?, &ys)?;
    /// let mut one_by_one = ExactPosterior::new(Rbf::new(0.1)?, &[0.1])?;
    /// for (x, &y) in xs.iter().zip(&ys) {
    ///     one_by_one.observe(x, y)?;
    /// }
    /// assert!((batch.log_det(0) - one_by_one.log_det(0)).abs() < 1e-9);
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn observe_many(&mut self, points: &Points<'_>, targets: &[f64]) -> Result<()> {
        let n = points.len();
        self.check_batch(points, targets)?;
        if n == 0 {
            return Ok(());
        }
        let d = points.dim();
        let mut new_points = Vec::with_capacity(n * d);
        points.for_each(|_, x| new_points.extend_from_slice(x));
        // Kernel values: K_{t,new} (t × n), K_new (n × n) and, for a fixed arm set that stays
        // within its limit, K_{new,X} (n × A), row-major.
        let (_, cross) = self.query_block(points)?;
        let gram = self.gram(&new_points, d)?;
        let kernel_rows = match self.fixed.as_ref().filter(|f| f.fits(n)) {
            Some(fixed) => Some(
                fixed
                    .kernel_rows(&self.kernel, &new_points, d)
                    .ok_or_else(non_finite_at_observation)?,
            ),
            None => None,
        };
        // Every factor's block first, so that a failure leaves all of them untouched.
        let blocks = self
            .factors
            .iter()
            .map(|factor| factor.pending_block(&cross, &gram, targets))
            .collect::<Result<Vec<_>>>()?;
        match (&mut self.fixed, kernel_rows) {
            (Some(fixed), Some(kernel_rows)) => fixed.append_block(&kernel_rows, &blocks),
            _ => self.fixed = None,
        }
        for (factor, block) in self.factors.iter_mut().zip(blocks) {
            factor.commit_block(block);
        }
        self.dim = Some(d);
        self.inputs.extend_from_slice(&new_points);
        self.targets.extend_from_slice(targets);
        self.generation += 1;
        Ok(())
    }

    /// The checks of [`ExactPosterior::observe_many`] on its arguments, before any kernel
    /// value is computed.
    fn check_batch(&self, points: &Points<'_>, targets: &[f64]) -> Result<()> {
        let n = points.len();
        crate::error::one_target_per_point(n, targets.len())?;
        if n == 0 {
            return Ok(());
        }
        check_point(&points.to_vec(0), self.dim, "observed point")?;
        self.check_dim(points.dim())?;
        if let Some(fixed) = &self.fixed
            && fixed.dim() != points.dim()
        {
            return Err(Error::DimensionMismatch {
                expected: fixed.dim(),
                got: points.dim(),
            });
        }
        if targets.iter().any(|y| !y.is_finite()) {
            return Err(Error::NonFinite {
                what: "observed target".into(),
            });
        }
        Ok(())
    }

    /// K_new (n × n, row-major) for n new points of dimension `d`, row-major in `new_points`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite kernel value.
    fn gram(&self, new_points: &[f64], d: usize) -> Result<Vec<f64>> {
        let n = new_points.len() / d;
        let mut gram = vec![0.0; n * n];
        crate::parallel::for_each_chunk(&mut gram, n, n * n * 20, |i, row| {
            self.kernel
                .eval_rows(new_points, &new_points[i * d..(i + 1) * d], row);
        });
        if gram.iter().all(|v| v.is_finite()) {
            Ok(gram)
        } else {
            Err(non_finite_at_observation())
        }
    }

    /// Declares a fixed arm set: from now on every update keeps the arms' solved kernel
    /// columns L_r⁻¹K_{t,X}, means and variances up to date, in O(A·t) per regulariser, so
    /// that [`ExactPosterior::argmax_upper`] and [`ExactPosterior::evaluate`] on exactly these
    /// points (same values, same order) cost O(A) instead of O(A·t²), and an update at one of
    /// them appends to the Cholesky factors in O(t) instead of O(t²). Other points still take
    /// the general path. Declaring costs one evaluation of the arms, O(A·t²).
    ///
    /// Memory: 8·A bytes per observation and regulariser, on top of the factors' 4·t² bytes
    /// each (1000 arms, t = 1000: 8 MB per regulariser; 100 000 arms: 800 MB). With
    /// `memory_limit` = `Some(bytes)` the set is not kept if it is already larger than that,
    /// and it is dropped (falling back to the general path) by the update that would take it
    /// beyond; [`ExactPosterior::fixed_arms`] tells whether it is still kept. `None` keeps it
    /// whatever its size.
    ///
    /// Returns whether the set is kept. Declaring the set already kept only updates the limit;
    /// declaring another replaces it. When `false` is returned no set is kept.
    ///
    /// # Errors
    /// [`Error::NoArms`] for no point, [`Error::DimensionMismatch`] for points of the wrong
    /// dimension, [`Error::NonFinite`] for a non-finite kernel value. On error nothing changes.
    ///
    /// # Examples
    /// ```
    /// use kernel_bandits::kernel::Rbf;
    /// use kernel_bandits::points::AsPoints;
    /// use kernel_bandits::posterior::ExactPosterior;
    /// let arms: Vec<[f64; 1]> = (0..50).map(|i| [i as f64 / 50.0]).collect();
    /// let arms = arms.as_points()?;
    /// let mut gp = ExactPosterior::new(Rbf::new(0.2)?, &[0.1])?;
    /// assert!(gp.fix_arms(&arms, None)?);
    /// for i in 0..200 {
    ///     let j = gp.argmax_upper(&arms, &[1.0])?; // O(A): no solve
    ///     let x = arms.to_vec(j);
    ///     gp.observe(&x, (6.0 * x[0]).sin())?; // O(A·t)
    /// }
    /// assert_eq!(gp.fixed_arms().map(|set| set.arms), Some(50));
    /// # Ok::<(), kernel_bandits::Error>(())
    /// ```
    pub fn fix_arms(&mut self, points: &Points<'_>, memory_limit: Option<usize>) -> Result<bool> {
        if points.is_empty() {
            return Err(Error::NoArms);
        }
        self.check_dim(points.dim())?;
        if let Some(fixed) = &mut self.fixed
            && fixed.matches(points)
        {
            fixed.set_memory_limit(memory_limit);
            let kept = fixed.fits(0);
            if !kept {
                self.fixed = None;
            }
            return Ok(kept);
        }
        let bytes =
            FixedArms::bytes_for(points.len(), points.dim(), self.len(), self.factors.len());
        if memory_limit.is_some_and(|limit| bytes > limit) {
            self.fixed = None;
            return Ok(false);
        }
        let (prior, cross) = self.query_block(points)?;
        self.fixed = Some(FixedArms::new(
            points,
            prior,
            cross,
            &self.factors,
            memory_limit,
        ));
        self.last_pick.store(0, Ordering::Relaxed);
        Ok(true)
    }

    /// Stops keeping the fixed arm set, if any, and frees its memory.
    pub fn release_arms(&mut self) {
        self.fixed = None;
    }

    /// The fixed arm set kept, if any: its size and the bytes its solved columns hold (see
    /// [`ExactPosterior::fix_arms`]).
    pub fn fixed_arms(&self) -> Option<ArmSetInfo> {
        self.fixed.as_ref().map(|fixed| ArmSetInfo {
            arms: fixed.len(),
            bytes: fixed.bytes(),
        })
    }

    /// Whether `points` are the fixed arm set kept (same values, same order); O(A·d).
    pub fn is_fixed(&self, points: &Points<'_>) -> bool {
        self.fixed.as_ref().is_some_and(|f| f.matches(points))
    }

    /// The posterior at the fixed arms, if `points` are the fixed set.
    ///
    /// # Errors
    /// [`Error::NotPositiveDefinite`] for a clearly negative posterior variance.
    fn fixed_batch(&self, points: &Points<'_>) -> Option<Result<PosteriorBatch>> {
        let fixed = self.fixed.as_ref().filter(|f| f.matches(points))?;
        let m = fixed.len();
        let prior_variance = fixed.prior_variance().to_vec();
        let mut means = Vec::with_capacity(self.factors.len() * m);
        let mut variances = Vec::with_capacity(self.factors.len() * m);
        for (r, factor) in self.factors.iter().enumerate() {
            means.extend_from_slice(fixed.means(r));
            let a = factor.regulariser();
            for (j, (prior, ex)) in prior_variance.iter().zip(fixed.explained(r)).enumerate() {
                match clamp_variance(prior - ex, prior.abs() + a, j) {
                    Ok(v) => variances.push(v),
                    Err(e) => return Some(Err(e)),
                }
            }
        }
        Some(Ok(PosteriorBatch {
            len: m,
            prior_variance,
            means,
            variances,
        }))
    }

    /// Keeps the first `len` observations and forgets the newer ones (exact, O(1) per factor
    /// beyond the truncation of the stored rows; a fixed arm set re-accumulates its means and
    /// variances from the kept rows, O(A·len) per regulariser).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        let d = self.dim.unwrap_or(0);
        self.inputs.truncate(len * d);
        self.targets.truncate(len);
        for factor in &mut self.factors {
            factor.truncate(len);
        }
        if let Some(fixed) = &mut self.fixed {
            fixed.truncate(len, &self.factors);
        }
        self.generation += 1;
    }

    /// Forgets the oldest observation (a sliding window's step): every factor is downdated in
    /// O(t²) (a rank-one Cholesky update, one Givens sweep), not refactorised. Does nothing without data.
    pub fn remove_oldest(&mut self) {
        if self.is_empty() {
            return;
        }
        let d = self.dim.unwrap_or(0);
        self.inputs.drain(..d);
        self.targets.remove(0);
        let rotations: Vec<_> = self
            .factors
            .iter_mut()
            .map(|factor| factor.remove_oldest(&self.targets))
            .collect();
        if let Some(fixed) = &mut self.fixed {
            fixed.remove_oldest(&rotations, &self.factors);
        }
        self.downdated = true;
        self.generation += 1;
        self.after_change();
    }

    /// Copies the query points into `query_points` (row-major m × d) and fills `cross`
    /// (row-major t × m) with k(xᵢ, q_j); returns k(q_j, q_j).
    ///
    /// # Errors
    /// [`Error::NonFinite`] if a kernel value is not finite (or a prior variance negative).
    fn query_kernel(
        &self,
        points: &Points<'_>,
        query_points: &mut Vec<f64>,
        cross: &mut [f64],
    ) -> Result<Vec<f64>> {
        let m = points.len();
        query_points.clear();
        let mut prior_variance = Vec::with_capacity(m);
        let mut scratch = vec![0.0; points.dim()];
        for j in 0..m {
            let x = points.point(j, &mut scratch);
            query_points.extend_from_slice(x);
            prior_variance.push(self.kernel.eval_diag(x));
        }
        let work = cross.len() * (4 * points.dim() + 16);
        let finite = std::sync::atomic::AtomicBool::new(true);
        crate::parallel::for_each_chunk(cross, m, work, |i, row| {
            self.kernel.eval_rows(query_points, self.input(i), row);
            if !crate::linalg::all_finite(row) {
                finite.store(false, Ordering::Relaxed);
            }
        });
        let all_finite =
            prior_variance.iter().all(|v| v.is_finite() && *v >= 0.0) && finite.into_inner();
        if all_finite {
            Ok(prior_variance)
        } else {
            Err(Error::NonFinite {
                what: "kernel value at a query point".into(),
            })
        }
    }

    /// The index of the point with the largest upper bound U(x) = min_r (μ_r(x) + w_r ρ_r(x))
    /// over the regularisers r, with `widths` w_r ≥ 0 (one per regulariser); the lowest index
    /// among ties. This is what a UCB agent plays, found without solving for every point.
    ///
    /// μ_r costs O(t) per point, through α_r = (K_t + a_rI)⁻¹y (one O(t²) back substitution
    /// per regulariser and call); ρ_r² = k(x, x) − ‖L_r⁻¹k_t(x)‖² is what costs O(t²) per
    /// point. The forward substitutions run in row chunks, and a point is dropped as soon as an
    /// upper bound on its U (from the rows solved so far) falls below a value the maximum is
    /// known to reach: max_x min_r μ_r(x), then the exact U of the four most promising points,
    /// solved first. From t = 256 on, an upper bound from the eight observations nearest to
    /// each point prunes first and picks eight such points. With one regulariser that bound
    /// is used only while the previous call without it left more than a quarter of the
    /// points after its probes, and it rests for 32 calls after a call where it left as many
    /// itself. The result is exact, not a heuristic, whichever path is taken: see the `select`
    /// module for why this holds in floating point too. Up to 128 observations (one storage
    /// block of the factors, where the pruning has nothing to skip) it simply evaluates every
    /// point. The chosen point's solved columns are kept, so that an update there costs O(t)
    /// per regulariser.
    ///
    /// μ_r here comes from α_r rather than from the solved column, so U may differ from the
    /// value [`ExactPosterior::evaluate`] implies in the last bits.
    ///
    /// # Errors
    /// [`Error::NoArms`] for no point; [`Error::InvalidParameter`] for a wrong number of widths
    /// or a negative or non-finite one; otherwise as [`ExactPosterior::evaluate`] (the checks on
    /// the posterior variance apply to the points that are solved to the end).
    pub fn argmax_upper(&self, points: &Points<'_>, widths: &[f64]) -> Result<usize> {
        Ok(self.top_upper(points, widths, 1)?[0])
    }

    /// The indices of the `count` points with the largest U (of
    /// [`ExactPosterior::argmax_upper`]), largest first, the lowest index among ties; all of
    /// them, so ordered, if there are fewer. The same pruned search, with the value the
    /// maximum is known to reach replaced by the `count`-th largest of the values known to be
    /// reached (`count` points attain at least it, so a point whose upper bound is below it is
    /// not among them): exact, not a heuristic, and as for the argmax, U comes from α_r and may
    /// differ from [`ExactPosterior::evaluate`]'s in the last bits. `count = 0` is taken as 1.
    ///
    /// # Errors
    /// As [`ExactPosterior::argmax_upper`].
    pub fn top_upper(
        &self,
        points: &Points<'_>,
        widths: &[f64],
        count: usize,
    ) -> Result<Vec<usize>> {
        Ok(self.top_upper_terms(points, widths, count)?.0)
    }

    /// [`ExactPosterior::top_upper`] and, for each point it returns, U_r = μ_r + w_r ρ_r for
    /// every regulariser r as the search computed them (the minimum over r is the U the point
    /// was ranked by): every returned point is solved to the end in every factor, so they cost
    /// nothing more.
    ///
    /// # Errors
    /// As [`ExactPosterior::argmax_upper`].
    pub(crate) fn top_upper_terms(
        &self,
        points: &Points<'_>,
        widths: &[f64],
        count: usize,
    ) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
        let n_reg = self.factors.len();
        if widths.len() != n_reg {
            return Err(Error::InvalidParameter {
                name: "widths",
                value: widths.len() as f64,
                expected: "one width per regulariser",
            });
        }
        if let Some(&w) = widths.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return Err(Error::InvalidParameter {
                name: "widths",
                value: w,
                expected: "finite and non-negative",
            });
        }
        let m = points.len();
        if m == 0 {
            return Err(Error::NoArms);
        }
        self.check_dim(points.dim())?;
        let t = self.len();
        if let Some(batch) = self.fixed_batch(points) {
            let batch = batch?;
            let top = crate::bound::largest_lowest(&upper_bounds(&batch, widths), count)?;
            self.last_pick.store(top[0], Ordering::Relaxed);
            let terms = top
                .iter()
                .map(|&j| upper_terms(&batch, widths, j).collect())
                .collect();
            return Ok((top, terms));
        }
        if t <= SMALL_POSTERIOR {
            // One storage block: the pruning has nothing to skip, so solve for every point.
            let batch = self.evaluate(points)?;
            let top = crate::bound::largest_lowest(&upper_bounds(&batch, widths), count)?;
            let terms = top
                .iter()
                .map(|&j| upper_terms(&batch, widths, j).collect())
                .collect();
            return Ok((top, terms));
        }
        self.workspace.with(n_reg, |workspace| {
            let QueryWorkspace {
                blocks,
                points: query_points,
                cross,
                plain_crowded,
                local_rest,
                ..
            } = workspace;
            let cross = prefix(cross, t * m);
            let prior_variance = self.query_kernel(points, query_points, cross)?;

            // μ_r at every point, regulariser-major.
            let alphas: Vec<&[f64]> = self.factors.iter().map(|f| f.weights()).collect();
            let means = query_means(cross, m, &alphas);
            // Bounds from a few nearby observations let most points drop before any row is
            // solved (see `local`), where the data are dense at the scale of the kernel. They
            // are not computed after a downdate or a clamped pivot, which their rounding
            // margin does not cover. With several regularisers they always pay: the probes
            // and the survivors then share one pass per factor. With one, they are used while
            // the plain path leaves many points after its probes and they leave few, and
            // after they leave many they rest for a while.
            let usable =
                t >= LOCAL_BOUNDS_FROM && !self.downdated && self.health.clamped_pivots == 0;
            let wanted = n_reg > 1 || (*plain_crowded && *local_rest == 0);
            let local = if usable && wanted {
                let regularisers: Vec<f64> = self.factors.iter().map(|f| f.regulariser()).collect();
                let max_prior = (0..t)
                    .map(|i| self.kernel.eval_diag(self.input(i)))
                    .fold(0.0, f64::max);
                super::local::upper_bounds(&super::local::LocalProblem {
                    cross,
                    len: m,
                    gram: |p, q| self.kernel.eval(self.input(p), self.input(q)),
                    max_prior,
                    regularisers: &regularisers,
                    prior_variance: &prior_variance,
                    means: &means,
                    widths,
                })
            } else {
                *local_rest = local_rest.saturating_sub(1);
                Vec::new()
            };
            let batch = select::Batch {
                factors: &self.factors,
                cross,
                len: m,
                prior_variance: &prior_variance,
                means: &means,
                widths,
                local: &local,
            };
            // The blocks end up holding the winner's solved columns: the agent's next update is
            // at this point.
            let choice = select::argmax(&batch, blocks, count)?;
            if local.is_empty() {
                *plain_crowded = choice.crowded(m);
            } else if choice.crowded(m) {
                *local_rest = LOCAL_BOUNDS_REST;
            }
            let best = choice.index;
            let d = points.dim();
            query_points.copy_within(best * d..(best + 1) * d, 0);
            workspace.validate(1, self.generation);
            Ok((choice.top, choice.top_terms))
        })
    }

    /// μ_a and ρ_a² at every point, for every regulariser.
    ///
    /// Cost: t·m kernel evaluations, then one triangular solve with m right-hand sides per
    /// regulariser (O(t²m)), done by faer's blocked solver.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the points' dimension differs from the observations';
    /// [`Error::NonFinite`] if the kernel returns a non-finite value.
    pub fn evaluate(&self, points: &Points<'_>) -> Result<PosteriorBatch> {
        let m = points.len();
        let n_reg = self.factors.len();
        if m > 0 {
            self.check_dim(points.dim())?;
            if let Some(batch) = self.fixed_batch(points) {
                return batch;
            }
        } else {
            return Ok(PosteriorBatch {
                len: 0,
                prior_variance: Vec::new(),
                means: Vec::new(),
                variances: Vec::new(),
            });
        }
        let t = self.len();
        self.workspace.with(n_reg, |workspace| {
            let QueryWorkspace {
                blocks,
                points: query_points,
                ..
            } = workspace;
            // Cross-kernel block, row-major t × m: row i holds k(xᵢ, q₁), …, k(xᵢ, q_m), so the
            // columns are k_t(q_j). faer's blocked solve is faster on this layout than on the
            // column-major one. The last regulariser solves it in place, the others copies.
            let (copies, last) = blocks.split_at_mut(n_reg - 1);
            let cross = prefix(&mut last[0], t * m);
            let prior_variance = self.query_kernel(points, query_points, cross)?;
            for copy in copies.iter_mut() {
                prefix(copy, t * m).copy_from_slice(cross);
            }
            let mut means = Vec::with_capacity(n_reg * m);
            let mut variances = Vec::with_capacity(n_reg * m);
            let mut explained = vec![0.0; m];
            for (factor, block) in self.factors.iter().zip(blocks.iter_mut()) {
                let block = &mut block[..t * m];
                if t > 0 {
                    factor.solve_block(block, m);
                }
                // μ_a(q_j) = vⱼᵀw and ‖vⱼ‖² for the columns vⱼ, accumulated row by row so that the
                // inner loop runs over contiguous memory.
                let start = means.len();
                means.resize(start + m, 0.0);
                explained.fill(0.0);
                for (row, &w) in block.chunks_exact(m).zip(factor.whitened_targets()) {
                    accumulate_row(&mut means[start..], &mut explained, row, w);
                }
                let a = factor.regulariser();
                for (j, (prior, ex)) in prior_variance.iter().zip(&explained).enumerate() {
                    variances.push(clamp_variance(prior - ex, prior.abs() + a, j)?);
                }
            }
            workspace.validate(m, self.generation);
            Ok(PosteriorBatch {
                len: m,
                prior_variance,
                means,
                variances,
            })
        })
    }
}

/// The error for a non-finite kernel value at a point of [`ExactPosterior::observe_many`].
fn non_finite_at_observation() -> Error {
    Error::NonFinite {
        what: "kernel value at an observed point".into(),
    }
}

/// Points per chunk of the mean accumulation in [`ExactPosterior::argmax_upper`]: every
/// regulariser's means of a chunk (nine × 2 kB for DMM-UCB's default) stay in the L1 cache
/// while the cross block's rows stream past once.
const MEAN_CHUNK: usize = 256;

/// μ_r(x_j) = Σᵢ k(xᵢ, x_j) α_{r,i} for every regulariser r (weights `alphas[r]`, t entries)
/// and every point j of the row-major t × m cross block `cross`, regulariser-major
/// (`means[r * m + j]`), each summed over i in order (`μ += k·α`, from 0): one pass over the
/// block for all the regularisers, in chunks of [`MEAN_CHUNK`] points (spread over the cores
/// with the `parallel` feature; the same bits either way). One pass per regulariser read the
/// 8.7 MB block nine times for DMM-UCB's default grid at t = 1000 with 1089 starts.
fn query_means(cross: &[f64], m: usize, alphas: &[&[f64]]) -> Vec<f64> {
    let n_reg = alphas.len();
    let t = cross.len().checked_div(m).unwrap_or(0);
    let mut means = vec![0.0; n_reg * m];
    if t == 0 || n_reg == 0 {
        return means;
    }
    // Chunk-major: chunk c holds the means of its points, regulariser-major within it.
    let mut chunked = vec![0.0; n_reg * m];
    let work = 2 * t * m * n_reg;
    crate::parallel::for_each_chunk(&mut chunked, n_reg * MEAN_CHUNK, work, |c, out| {
        pulp::Arch::new().dispatch(MeanChunk {
            cross,
            m,
            first: c * MEAN_CHUNK,
            alphas,
            out,
        });
    });
    for (c, chunk) in chunked.chunks(n_reg * MEAN_CHUNK).enumerate() {
        let first = c * MEAN_CHUNK;
        let width = chunk.len() / n_reg;
        for (r, mean) in chunk.chunks_exact(width).enumerate() {
            means[r * m + first..r * m + first + width].copy_from_slice(mean);
        }
    }
    means
}

/// One chunk of [`query_means`]: the points `first..first + width` (`out` holds their means,
/// regulariser-major, `width` per regulariser). Four rows of the cross block at a time, each
/// mean loaded and stored once per four rows and the four products added to it in row order
/// (separate multiplies and adds, so the bits of the row-at-a-time sum), in `pulp`'s dispatch
/// so that LLVM vectorises the loop over the points for the CPU at hand (baseline SSE2 took
/// about 4 ms of DMM-UCB's `select_in` at t = 1000, d = 6).
struct MeanChunk<'a> {
    cross: &'a [f64],
    m: usize,
    first: usize,
    alphas: &'a [&'a [f64]],
    out: &'a mut [f64],
}

impl pulp::WithSimd for MeanChunk<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Self {
            cross,
            m,
            first,
            alphas,
            out,
        } = self;
        let width = out.len() / alphas.len();
        let t = cross.len() / m;
        let row = |i: usize| &cross[i * m + first..i * m + first + width];
        let mut i = 0;
        while i + 4 <= t {
            let (k0, k1, k2, k3) = (row(i), row(i + 1), row(i + 2), row(i + 3));
            for (mean, alpha) in out.chunks_exact_mut(width).zip(alphas) {
                let (a0, a1, a2, a3) = (alpha[i], alpha[i + 1], alpha[i + 2], alpha[i + 3]);
                for ((((mu, &v0), &v1), &v2), &v3) in
                    mean.iter_mut().zip(k0).zip(k1).zip(k2).zip(k3)
                {
                    let mut sum = *mu;
                    sum += v0 * a0;
                    sum += v1 * a1;
                    sum += v2 * a2;
                    sum += v3 * a3;
                    *mu = sum;
                }
            }
            i += 4;
        }
        for i in i..t {
            let k = row(i);
            for (mean, alpha) in out.chunks_exact_mut(width).zip(alphas) {
                let a = alpha[i];
                for (mu, &v) in mean.iter_mut().zip(k) {
                    *mu += v * a;
                }
            }
        }
    }
}

/// U(x_j) = min_r (μ_r(x_j) + w_r ρ_r(x_j)) at every point of a batch.
fn upper_bounds(batch: &PosteriorBatch, widths: &[f64]) -> Vec<f64> {
    (0..batch.len())
        .map(|j| upper_terms(batch, widths, j).fold(f64::INFINITY, f64::min))
        .collect()
}

/// U_r(x_j) = μ_r(x_j) + w_r ρ_r(x_j) for every regulariser r: the terms of
/// [`upper_bounds`] at point j (an iterator, so that ranking every arm allocates nothing).
fn upper_terms<'a>(
    batch: &'a PosteriorBatch,
    widths: &'a [f64],
    j: usize,
) -> impl Iterator<Item = f64> + 'a {
    widths
        .iter()
        .enumerate()
        .map(move |(r, w)| batch.mean(r)[j] + w * batch.variance(r)[j].sqrt())
}

/// Up to this many observations, [`ExactPosterior::argmax_upper`] solves for every point: the
/// factors have one storage block, so pruning by row chunks has little to skip.
const SMALL_POSTERIOR: usize = super::cholesky::BLOCK_ROWS;

/// Observations from which the pruned argmax uses local bounds ([`super::local`]): they cost
/// O(t·m) plus a few hundred µs per 100 points and save one pass over each factor, which pays
/// only for long factors. DMM, 100 arms: ×0.72 per round at t = 1000; over a 1000-round run
/// ×1.07 when used from the start, neutral from t = 256.
const LOCAL_BOUNDS_FROM: usize = 256;

/// Queries of the pruned argmax with one regulariser that go without local bounds after a
/// query where they left many points ([`select::Choice::crowded`]), before they are tried
/// again.
const LOCAL_BOUNDS_REST: u32 = 32;

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for ExactPosterior<K> {
    fn kind() -> String {
        format!("exact-posterior<{}>", K::kind())
    }

    /// Checks that the observations, the factors (one row per observation each) and the fixed
    /// arm set agree in length and dimension, and that the inputs and targets are finite.
    fn restore(&mut self) -> Result<()> {
        use crate::snapshot::{ensure, ensure_finite};
        self.kernel.restore()?;
        let t = self.targets.len();
        ensure(!self.factors.is_empty(), || "no regulariser".into())?;
        match self.dim {
            Some(d) => {
                self.kernel
                    .check_dim(d)
                    .map_err(crate::snapshot::rebuild_error("kernel and inputs"))?;
                ensure(d > 0 && t.checked_mul(d) == Some(self.inputs.len()), || {
                    format!(
                        "{} input coordinates for {t} points of dimension {d}",
                        self.inputs.len()
                    )
                })?;
            }
            None => ensure(t == 0 && self.inputs.is_empty(), || {
                "observations without a dimension".into()
            })?,
        }
        ensure_finite(&self.inputs, "inputs")?;
        ensure_finite(&self.targets, "targets")?;
        ensure(self.factors.iter().all(|f| f.len() == t), || {
            format!("a factor whose length differs from the {t} observations")
        })?;
        if let Some(fixed) = &self.fixed {
            fixed.check(self.dim, t, self.factors.len())?;
            ensure(self.last_pick.load(Ordering::Relaxed) < fixed.len(), || {
                "last pick outside the fixed arm set".into()
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::kernel::Matern;
    use crate::points::AsPoints;

    /// The one-pass means of every regulariser equal, bit for bit, the sum over the
    /// observations in order for each (regulariser, point) taken one at a time: 1 and 9
    /// regularisers, point counts around the chunk of 256 (1, 255, 256, 257, 1089), t = 1, 3
    /// and 130, entries spanning six orders of magnitude so that the order of summation shows.
    #[test]
    fn query_means_sum_each_point_in_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n_reg in [1, 9] {
            for m in [1, 255, 256, 257, 1089] {
                for t in [1, 3, 130] {
                    let scale = |v: f64| (v - 0.5) * 10f64.powi((6.0 * v) as i32);
                    let cross: Vec<f64> = (0..t * m).map(|_| scale(rng.random())).collect();
                    let alphas: Vec<Vec<f64>> = (0..n_reg)
                        .map(|_| (0..t).map(|_| scale(rng.random())).collect())
                        .collect();
                    let refs: Vec<&[f64]> = alphas.iter().map(Vec::as_slice).collect();
                    let means = query_means(&cross, m, &refs);
                    for (r, alpha) in alphas.iter().enumerate() {
                        for j in 0..m {
                            let mut mu = 0.0;
                            for (i, &a) in alpha.iter().enumerate() {
                                mu += cross[i * m + j] * a;
                            }
                            assert_eq!(
                                means[r * m + j].to_bits(),
                                mu.to_bits(),
                                "n_reg = {n_reg}, m = {m}, t = {t}: μ_{r}(x_{j}) = {}, the \
                                 in-order sum {mu}",
                                means[r * m + j]
                            );
                        }
                    }
                }
            }
        }
    }

    /// A drifted factor (every pivot off by 10⁻⁶, far beyond rounding) is caught by the next
    /// scheduled check and recomputed from scratch: the bounds then equal a fresh posterior's.
    #[test]
    fn drift_is_caught_and_refactorised() {
        let kernel = Matern::new(1.5, 0.3).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let xs: Vec<[f64; 2]> = (0..300).map(|_| [rng.random(), rng.random()]).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (4.0 * x[0]).sin() + x[1]).collect();
        let mut gp = ExactPosterior::new(kernel, &[0.01, 1.0]).unwrap();
        for (x, &y) in xs.iter().zip(&ys).take(299) {
            gp.observe(x, y).unwrap();
        }
        assert_eq!(gp.health().checks, 1); // at the 256th change
        assert!(gp.health().largest_residual < 1e-13, "{:?}", gp.health());
        assert_eq!(gp.health().refactorisations, 0);
        let probes = [[0.2, 0.2], [0.7, 0.4]];
        let healthy = gp.evaluate(&probes.as_points().unwrap()).unwrap();
        for f in &mut gp.factors {
            f.perturb_diagonal(1e-6);
        }
        assert!(gp.evaluate(&probes.as_points().unwrap()).unwrap() != healthy);
        let residual = gp.check_health();
        assert_eq!(gp.health().refactorisations, 1);
        assert!(gp.health().largest_residual > 1e-7);
        assert!(residual < 1e-13, "{residual}");
        let repaired = gp.evaluate(&probes.as_points().unwrap()).unwrap();
        for r in 0..2 {
            for j in 0..2 {
                let (a, b) = (repaired.mean(r)[j], healthy.mean(r)[j]);
                assert!((a - b).abs() < 1e-10, "{a} {b}");
                let (a, b) = (repaired.variance(r)[j], healthy.variance(r)[j]);
                assert!((a - b).abs() < 1e-10, "{a} {b}");
            }
        }
        // The next observation keeps the repaired factor and the schedule.
        gp.observe(&xs[299], ys[299]).unwrap();
        assert!(gp.residual(299) < 1e-13);
    }

    /// Observing a point that the last query contained reuses its solved column; the result
    /// must agree with the plain O(t²) append, and a query made before a truncation must not be
    /// reused after it.
    #[test]
    fn appends_from_cached_queries_match_plain_appends() {
        let kernel = Matern::new(2.5, 0.3).unwrap();
        let regularisers = [0.001, 0.01, 0.1];
        let mut cached = ExactPosterior::new(kernel, &regularisers).unwrap();
        let mut plain = ExactPosterior::new(kernel, &regularisers).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for round in 0..120 {
            let arms: Vec<[f64; 2]> = (0..7).map(|_| [rng.random(), rng.random()]).collect();
            cached.evaluate(&arms.as_points().unwrap()).unwrap();
            let x = arms[round % arms.len()];
            let y = (x[0] * 5.0).sin() + x[1];
            if round % 10 == 9 {
                // A truncation invalidates the query; re-observing the same point must not
                // pick up the stale column.
                cached.truncate(cached.len() - 1);
                plain.truncate(plain.len() - 1);
            }
            cached.observe(&x, y).unwrap();
            plain.observe(&x, y).unwrap();
        }
        let probes: Vec<[f64; 2]> = (0..20).map(|_| [rng.random(), rng.random()]).collect();
        let a = cached.evaluate(&probes.as_points().unwrap()).unwrap();
        let b = plain.evaluate(&probes.as_points().unwrap()).unwrap();
        for r in 0..regularisers.len() {
            let scale = 1.0 + cached.quad_form(r);
            assert!((cached.quad_form(r) - plain.quad_form(r)).abs() < 1e-10 * scale);
            assert!(
                (cached.log_det(r) - plain.log_det(r)).abs() < 1e-10 * (1.0 + plain.log_det(r))
            );
            for j in 0..probes.len() {
                assert!((a.mean(r)[j] - b.mean(r)[j]).abs() < 1e-10 * (1.0 + b.mean(r)[j].abs()));
                assert!((a.variance(r)[j] - b.variance(r)[j]).abs() < 1e-12);
            }
        }
    }
}
