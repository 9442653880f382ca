//! Box-constrained quasi-Newton refinement and multi-start maximisation.
//!
//! [`refine`] climbs from one start to a local maximum of a smooth objective over a
//! [`BoxDomain`] with PANOC, the proximal averaged Newton-type method for optimal control of
//! Stella, Themelis, Sopasakis & Patrinos (2017), "A simple and efficient algorithm for
//! nonlinear model predictive control" (CDC 2017, Alg. 1 and 2), as implemented by the
//! `optimization_engine` crate: projected gradient (forward-backward) steps on the box,
//! accelerated by L-BFGS directions and globalised by a line search on the forward-backward
//! envelope. [`maximise`] runs [`refine`] from the best few of many candidate starts (e.g. a
//! space-filling design from [`BoxDomain::space_filling`]) and keeps the best result.
//!
//! How PANOC sees the objective is described on [`refine`].

use std::cell::RefCell;

use optimization_engine::{
    FunctionCallResult, Problem, SolverError,
    constraints::Rectangle,
    core::ExitStatus,
    panoc::{PANOCCache, PANOCOptimizer},
};

use super::BoxDomain;
use crate::error::{Error, Result};

/// What an objective returns at a point: its value and its gradient (d coordinates).
pub type ValueGradient = Result<(f64, Vec<f64>)>;

/// The largest L-BFGS memory [`RefineOptions`] accepts (a larger one only costs memory:
/// quasi-Newton pairs older than a few dozen iterations carry no useful curvature).
pub const MAX_MEMORY: usize = 1024;

/// Settings of [`refine`] and [`maximise`].
///
/// | name | default | range | meaning |
/// |---|---|---|---|
/// | `tolerance` | 10⁻¹⁰ | finite, > 0 | PANOC stops when its fixed-point residual ‖v − Π(v − γ∇(−f)(v))‖, in the preconditioned coordinates vᵢ = sᵢuᵢ of the box rescaled to [0, 1]^d (sᵢ ∈ (0, 1], see [`refine`]), is below it; the Newton steps when a step is at most it in every unit coordinate or predicts a gain of at most it times \|f\| |
/// | `max_iterations` | 200 | ≥ 1 | the most PANOC iterations (all its runs together, at most half, rounded up) and Newton steps (the rest) of one refinement |
/// | `memory` | 10 | 1 ..= [`MAX_MEMORY`] | L-BFGS memory (pairs kept) |
///
/// # Examples
/// ```
/// use kernel_bandits::continuous::RefineOptions;
/// let options = RefineOptions { tolerance: 1e-8, ..RefineOptions::default() };
/// assert_eq!(options.max_iterations, 200);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefineOptions {
    /// Stop when the projected-gradient (fixed-point) residual falls below this.
    pub tolerance: f64,
    /// The most iterations of one refinement.
    pub max_iterations: usize,
    /// L-BFGS memory.
    pub memory: usize,
}

impl Default for RefineOptions {
    fn default() -> Self {
        Self {
            tolerance: 1e-10,
            max_iterations: 200,
            memory: 10,
        }
    }
}

impl RefineOptions {
    /// Checks the settings (PANOC panics on a tolerance ≤ 0, no iteration or no memory; this
    /// check turns those into errors before PANOC sees them).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a tolerance that is not finite and > 0 (or subnormal),
    /// `max_iterations = 0`, or `memory` outside 1 ..= [`MAX_MEMORY`].
    pub fn check(&self) -> Result<()> {
        crate::error::positive("tolerance", self.tolerance)?;
        if self.max_iterations == 0 {
            return Err(Error::InvalidParameter {
                name: "max_iterations",
                value: 0.0,
                expected: "at least 1",
            });
        }
        if !(1..=MAX_MEMORY).contains(&self.memory) {
            return Err(Error::InvalidParameter {
                name: "memory",
                value: self.memory as f64,
                expected: "1 to 1024",
            });
        }
        Ok(())
    }
}

/// The result of [`refine`] or [`maximise`].
#[derive(Debug, Clone, PartialEq)]
pub struct Maximum {
    /// The maximiser found, inside the box.
    pub point: Vec<f64>,
    /// The objective there.
    pub value: f64,
    /// The index of the start it was refined from (0 for [`refine`]).
    pub start: usize,
    /// The objective at that start.
    pub start_value: f64,
    /// Objective evaluations spent (by all refinements, for [`maximise`]).
    pub evaluations: usize,
    /// PANOC iterations and Newton steps of the refinement that gave `point` (see [`refine`]).
    pub iterations: usize,
    /// Whether that refinement converged to the tolerance: its last Newton step was at most
    /// `tolerance` in every unit coordinate, or the gain its quadratic model predicted was at
    /// most `tolerance`·|f| (with `max_iterations = 1`, which leaves no Newton step, PANOC's
    /// fixed-point residual fell below `tolerance`); or it had nothing to do (every coordinate
    /// fixed, or a zero projected gradient at the start: every free coordinate's derivative
    /// is zero, or points out of the box at a bound the start is on, as at a corner where f
    /// increases outwards; the start is then a first-order (KKT) point of the box, returned
    /// after that one evaluation). `false` if it ran out of `max_iterations`, no
    /// step increased f, or PANOC stopped on a non-finite internal quantity (the best point
    /// evaluated is still returned).
    pub converged: bool,
}

/// Refines `start` (inside `domain`) towards a local maximum of `f`, which returns the value
/// and gradient at a point, with PANOC (Stella, Themelis, Sopasakis & Patrinos 2017,
/// "A simple and efficient algorithm for nonlinear model predictive control", Alg. 2) on −f.
///
/// Guarantees:
/// - the point returned is inside the box (every coordinate within [lo, hi]; a bound is
///   returned exactly when the maximiser is on it, unless rounding makes f there lower than
///   at the point returned: a last step moves every coordinate along which f still
///   increases onto its bound, and keeps the move if f increases);
/// - its value is ≥ f(start): the result is the best point `f` was evaluated at, and `start`
///   is the first;
/// - `f` is only called at points of the box (see below);
/// - deterministic: the same inputs give the same bits (no time limit, no randomness).
///
/// The refinement is local: a start where the projected gradient vanishes (a flat
/// objective, a stationary point, or a point on the boundary where f increases only out of
/// the box, such as a corner) is returned as it is, after one evaluation. PANOC is a first-order method with quasi-Newton
/// acceleration, whose steps and stopping test are only as good as the scaling of the
/// coordinates: on the unit cube alone, curvatures 10⁴ apart between coordinates (an ARD kernel
/// whose length-scales, relative to the box, differ a hundredfold) made it stall, converged or
/// not, at points that were not local maximisers. So it is preconditioned by a diagonal
/// scaling, and restarted:
/// - at the point a run starts from, the curvature cᵢ = |∂²f/∂uᵢ²| of each free coordinate in
///   unit coordinates is estimated by a forward difference of the gradient over a step of
///   10⁻⁶ taken into the box (one evaluation per free coordinate), and PANOC runs in
///   vᵢ = sᵢuᵢ with sᵢ = √(max(cᵢ / maxⱼ cⱼ, 10⁻¹⁰)), where every curvature is maxⱼ cⱼ (the
///   Jacobi, or diagonal, preconditioner; Nocedal & Wright 2006, *Numerical Optimization*,
///   2nd ed., §2.2 "Scaling" and §5.1 "Preconditioning");
/// - a run that converges, or that stops short without improving f at all, ends this phase;
///   otherwise PANOC is run again from the best point with the scaling estimated there, at
///   most 4 runs, each but the last with at most half the iterations left, all within half of
///   `max_iterations` (rounded up);
/// - the rest of `max_iterations` goes to projected Newton steps from the best point, which
///   also resolve the coupling between coordinates that a diagonal scaling leaves (a curved
///   ridge): the Hessian of the coordinates not held at a bound is estimated by forward
///   differences of the gradient (one evaluation per coordinate), the step solves the
///   Newton system with Levenberg–Marquardt damping (Levenberg 1944, "A method for the
///   solution of certain non-linear problems in least squares"; Marquardt 1963, "An algorithm
///   for least-squares estimation of nonlinear parameters"), raised tenfold until the step,
///   projected onto the box, increases f beyond every point evaluated so far, and a step that
///   does is extended (doubled) while f keeps increasing. [`Maximum::converged`] says whether
///   the last step was below the tolerance (see there).
///
/// # How PANOC sees the objective
/// - PANOC minimises, so it is given −f.
/// - It works in a scaled unit cube: each free coordinate is rescaled to [0, 1] (so tolerances
///   do not depend on the width of the box), then to [0, sᵢ] by the preconditioner and, if the
///   run's start is in the upper half of that coordinate, mirrored (so PANOC's finite-difference
///   Lipschitz probe, which moves every coordinate up by max(10⁻⁶v, 10⁻¹²), moves into the box
///   and not out of it). Coordinates with lo = hi are held at their value and hidden from
///   PANOC.
/// - PANOC's iterates may leave the box (only its half-steps are projected); `f` is never called
///   there. At an outside point u the objective is extended linearly from the nearest point c
///   of the box: f(c) + ∇f(c)·(u − c), with gradient ∇f(c). So `f` is only ever called at
///   points of the box, and may be undefined outside it.
/// - PANOC asks for the cost and the gradient through two calls at the same point; the last
///   (point, value, gradient) is cached so that one call of `f` serves both.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `start` or a gradient returned by `f` does not have
/// `domain.dim()` coordinates; [`Error::NonFinite`] for a non-finite start, or a non-finite
/// value or gradient from `f`; [`Error::InvalidParameter`] for a start outside the box or
/// invalid `options` ([`RefineOptions::check`]); the first error `f` returns, as it is.
///
/// # Examples
/// ```
/// use kernel_bandits::continuous::{BoxDomain, RefineOptions, refine};
/// // f(x) = −(x₀ − 0.3)² − (x₁ − 2)², whose maximiser over [0, 1]² is (0.3, 1).
/// let mut f = |x: &[f64]| {
///     let v = -(x[0] - 0.3).powi(2) - (x[1] - 2.0).powi(2);
///     Ok((v, vec![-2.0 * (x[0] - 0.3), -2.0 * (x[1] - 2.0)]))
/// };
/// let domain = BoxDomain::unit(2)?;
/// let best = refine(&domain, &[0.9, 0.1], &mut f, &RefineOptions::default())?;
/// assert!((best.point[0] - 0.3).abs() < 1e-8);
/// assert_eq!(best.point[1], 1.0);
/// assert!(best.value >= best.start_value);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn refine(
    domain: &BoxDomain,
    start: &[f64],
    f: &mut dyn FnMut(&[f64]) -> ValueGradient,
    options: &RefineOptions,
) -> Result<Maximum> {
    options.check()?;
    check_start(domain, start, "start")?;
    refine_checked(domain, start, f, options)
}

/// Multi-start maximisation: of the candidate `starts` (row-major, d columns) with known
/// objective values `values`, refines the best `count` (highest value first, lowest index among
/// ties) with [`refine`] and returns the best result (highest value; among equal values, the
/// one refined from the lowest start index).
///
/// `values` only rank the starts; each refinement evaluates its start again (its gradient is
/// needed), and [`Maximum::start_value`] is that evaluation. A `count` larger than the number
/// of starts refines them all. Every input is checked before `f` is first called. The
/// guarantees of [`refine`] hold; the value returned is ≥ f at each refined start.
///
/// # Errors
/// [`Error::NoArms`] for no start; [`Error::LengthMismatch`] if `starts` is not a whole number
/// of rows of d coordinates or `values` does not have one value per start;
/// [`Error::InvalidParameter`] for `count = 0`, a start outside the box or invalid `options`;
/// [`Error::NonFinite`] for a non-finite start coordinate or value; and the errors of
/// [`refine`] (the first error `f` returns stops the search and is returned).
///
/// # Examples
/// ```
/// use kernel_bandits::continuous::{BoxDomain, RefineOptions, maximise};
/// // Two bumps; the higher one is at 0.8.
/// let bump = |x: f64, c: f64, h: f64| h * (-(x - c).powi(2) / 0.02).exp();
/// let mut f = |x: &[f64]| {
///     let (a, b) = (bump(x[0], 0.2, 1.0), bump(x[0], 0.8, 2.0));
///     Ok((a + b, vec![-(x[0] - 0.2) / 0.01 * a - (x[0] - 0.8) / 0.01 * b]))
/// };
/// let domain = BoxDomain::unit(1)?;
/// let starts = domain.space_filling(16, 7);
/// let values: Vec<f64> = starts.iter().map(|&x| f(&[x]).unwrap().0).collect();
/// let best = maximise(&domain, &starts, &values, 3, &mut f, &RefineOptions::default())?;
/// assert!((best.point[0] - 0.8).abs() < 1e-6);
/// assert!(best.value >= values[best.start]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn maximise(
    domain: &BoxDomain,
    starts: &[f64],
    values: &[f64],
    count: usize,
    f: &mut dyn FnMut(&[f64]) -> ValueGradient,
    options: &RefineOptions,
) -> Result<Maximum> {
    options.check()?;
    let d = domain.dim();
    if starts.is_empty() {
        return Err(Error::NoArms);
    }
    if !starts.len().is_multiple_of(d) {
        return Err(Error::LengthMismatch {
            what: "start coordinates, d per start",
            expected: starts.len().div_ceil(d) * d,
            got: starts.len(),
        });
    }
    let n = starts.len() / d;
    if values.len() != n {
        return Err(Error::LengthMismatch {
            what: "start values, one per start",
            expected: n,
            got: values.len(),
        });
    }
    if count == 0 {
        return Err(Error::InvalidParameter {
            name: "count",
            value: 0.0,
            expected: "at least 1",
        });
    }
    for (i, &v) in values.iter().enumerate() {
        if !v.is_finite() {
            return Err(Error::NonFinite {
                what: format!("value of start {i}"),
            });
        }
    }
    for row in starts.chunks_exact(d) {
        check_start(domain, row, "start")?;
    }
    let mut order: Vec<usize> = (0..n).collect();
    // Highest value first, lowest index among ties (the values are finite, so `partial_cmp`
    // is total here, and −0 ties with +0).
    order.sort_by(|&a, &b| {
        values[b]
            .partial_cmp(&values[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    let mut best: Option<Maximum> = None;
    let mut evaluations = 0;
    for &i in order.iter().take(count.min(n)) {
        let mut found = refine_checked(domain, &starts[i * d..(i + 1) * d], f, options)?;
        evaluations += found.evaluations;
        found.start = i;
        let better = match &best {
            None => true,
            Some(b) => found.value > b.value || (found.value == b.value && i < b.start),
        };
        if better {
            best = Some(found);
        }
    }
    // `count ≥ 1` and `n ≥ 1`, so at least one refinement ran.
    let mut best = best.ok_or(Error::NoArms)?;
    best.evaluations = evaluations;
    Ok(best)
}

/// Checks that `x` is a finite point of `domain`.
fn check_start(domain: &BoxDomain, x: &[f64], what: &'static str) -> Result<()> {
    if x.len() != domain.dim() {
        return Err(Error::DimensionMismatch {
            expected: domain.dim(),
            got: x.len(),
        });
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            what: format!("{what} coordinate {i}"),
        });
    }
    if let Some((&v, _)) = x
        .iter()
        .zip(domain.lo().iter().zip(domain.hi()))
        .find(|&(&v, (&l, &h))| !(l <= v && v <= h))
    {
        return Err(Error::InvalidParameter {
            name: what,
            value: v,
            expected: "a point inside the domain",
        });
    }
    Ok(())
}

/// One free (lo < hi) coordinate as PANOC sees it: v ∈ [0, s] ↦ u = v/s ∈ [0, 1] ↦
/// x = lo + u·(hi − lo), or x = hi − u·(hi − lo) if mirrored, where s ∈ (0, 1] is the
/// coordinate's preconditioning scale.
#[derive(Debug, Clone, Copy)]
struct FreeCoordinate {
    index: usize,
    lo: f64,
    hi: f64,
    mirrored: bool,
    /// The preconditioning scale s: PANOC's box for this coordinate is [0, s].
    scale: f64,
    /// The start's scaled coordinate, mapped back to the start's own coordinate exactly.
    start_v: f64,
    start_x: f64,
}

impl FreeCoordinate {
    fn new(index: usize, lo: f64, hi: f64, x: f64, scale: f64) -> Self {
        let width = hi - lo;
        let mirrored = x - lo > hi - x;
        let u = if mirrored {
            (hi - x) / width
        } else {
            (x - lo) / width
        };
        Self {
            index,
            lo,
            hi,
            mirrored,
            scale,
            start_v: (u.clamp(0.0, 1.0) * scale).clamp(0.0, scale),
            start_x: x,
        }
    }

    /// The box coordinate of a scaled coordinate `v ∈ [0, s]`: the bounds exactly at 0 and s,
    /// the start's coordinate exactly at its scaled coordinate, clamped to [lo, hi] between.
    fn to_box(self, v: f64) -> f64 {
        if v == self.start_v {
            return self.start_x;
        }
        let (near, far) = if self.mirrored {
            (self.hi, self.lo)
        } else {
            (self.lo, self.hi)
        };
        if v <= 0.0 {
            near
        } else if v >= self.scale {
            far
        } else {
            (near + (v / self.scale) * (far - near)).clamp(self.lo, self.hi)
        }
    }

    /// d x / d v.
    fn slope(self) -> f64 {
        let width = if self.mirrored {
            self.lo - self.hi
        } else {
            self.hi - self.lo
        };
        width / self.scale
    }
}

/// The objective in PANOC's coordinates, with the one-point cache, the best point seen and
/// the first error.
struct Objective<'f> {
    f: &'f mut dyn FnMut(&[f64]) -> ValueGradient,
    /// The free coordinates of the current round.
    free: Vec<FreeCoordinate>,
    dim: usize,
    /// The full point (fixed coordinates already in place).
    x: Vec<f64>,
    /// Cache: the last scaled point evaluated (inside PANOC's box), f there and ∂f/∂v.
    cached_unit: Vec<f64>,
    cached_value: f64,
    cached_gradient: Vec<f64>,
    has_cache: bool,
    /// The best point evaluated, f there and ∇f there (box coordinates, all d of them).
    best_point: Vec<f64>,
    best_value: f64,
    best_gradient: Vec<f64>,
    evaluations: usize,
    error: Option<Error>,
    /// The last point f was called at, with its value and gradient: a second call in a row
    /// at the same point is served from here.
    last: Option<(Vec<f64>, f64, Vec<f64>)>,
}

impl Objective<'_> {
    /// f and ∇f at the box point `x` (checked), keeping the best point.
    fn evaluate_box(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        if let Some((last, value, gradient)) = &self.last
            && same_point(last, x)
        {
            return Ok((*value, gradient.clone()));
        }
        let (value, gradient) = (self.f)(x)?;
        self.evaluations += 1;
        if gradient.len() != self.dim {
            return Err(Error::DimensionMismatch {
                expected: self.dim,
                got: gradient.len(),
            });
        }
        if !value.is_finite() {
            return Err(Error::NonFinite {
                what: "objective value".into(),
            });
        }
        if let Some(i) = gradient.iter().position(|g| !g.is_finite()) {
            return Err(Error::NonFinite {
                what: format!("objective gradient coordinate {i}"),
            });
        }
        self.last = Some((x.to_vec(), value, gradient.clone()));
        // Strictly greater: the earliest of equal values (the start first) is kept.
        if value > self.best_value || self.best_point.is_empty() {
            self.best_value = value;
            self.best_point.clear();
            self.best_point.extend_from_slice(x);
            self.best_gradient.clone_from(&gradient);
        }
        Ok((value, gradient))
    }

    /// Evaluates f at the box point of the scaled point `c` (inside PANOC's box; cached).
    fn evaluate(&mut self, c: &[f64]) -> Result<()> {
        if self.has_cache && self.cached_unit == c {
            return Ok(());
        }
        for (coordinate, &v) in self.free.iter().zip(c) {
            self.x[coordinate.index] = coordinate.to_box(v);
        }
        let x = std::mem::take(&mut self.x);
        let result = self.evaluate_box(&x);
        self.x = x;
        let (value, gradient) = result?;
        self.cached_gradient.resize(self.free.len(), 0.0);
        for (g, coordinate) in self.cached_gradient.iter_mut().zip(&self.free) {
            *g = gradient[coordinate.index] * coordinate.slope();
        }
        self.cached_unit.clear();
        self.cached_unit.extend_from_slice(c);
        self.cached_value = value;
        self.has_cache = true;
        Ok(())
    }

    /// Starts a round of PANOC from the best point so far, with the free coordinates `free`
    /// (mirrored and scaled about that point): its scaled coordinates, and the cache primed
    /// with f and ∇f there, so that PANOC's first call costs no evaluation.
    fn begin_round(&mut self, free: Vec<FreeCoordinate>) -> Vec<f64> {
        self.free = free;
        self.x.clone_from(&self.best_point);
        let start: Vec<f64> = self.free.iter().map(|c| c.start_v).collect();
        self.cached_gradient = self
            .free
            .iter()
            .map(|c| self.best_gradient[c.index] * c.slope())
            .collect();
        self.cached_unit.clone_from(&start);
        self.cached_value = self.best_value;
        self.has_cache = true;
        start
    }

    /// |∂²f/∂uᵢ²| in unit coordinates (uᵢ = (xᵢ − loᵢ)/(hiᵢ − loᵢ)) at the best point, for each
    /// free coordinate, by a forward difference of the gradient over a step of
    /// [`CURVATURE_STEP`] in unit coordinates taken into the box (one evaluation each).
    fn curvatures(&mut self, free: &[usize], domain: &BoxDomain) -> Result<Vec<f64>> {
        let centre = self.best_point.clone();
        let g0 = self.best_gradient.clone();
        let mut out = Vec::with_capacity(free.len());
        for &i in free {
            let (lo, hi) = (domain.lo()[i], domain.hi()[i]);
            let width = hi - lo;
            let up = (centre[i] + CURVATURE_STEP * width).min(hi);
            let down = (centre[i] - CURVATURE_STEP * width).max(lo);
            let to = if up - centre[i] >= centre[i] - down {
                up
            } else {
                down
            };
            let step = to - centre[i];
            if step == 0.0 {
                out.push(0.0);
                continue;
            }
            let mut y = centre.clone();
            y[i] = to;
            let (_, g) = self.evaluate_box(&y)?;
            out.push(((g[i] - g0[i]) * width * width / step).abs());
        }
        Ok(out)
    }

    /// Projected Newton steps from the best point, in unit coordinates: the coordinates on a
    /// bound with the gradient pointing out are held; on the others, the Hessian is estimated
    /// by forward differences of the gradient (one evaluation per coordinate, steps of
    /// [`CURVATURE_STEP`] into the box), and the step p solves (−H + μI)p = ∇f with the
    /// Levenberg–Marquardt damping μ (Levenberg 1944; Marquardt 1963; Nocedal & Wright 2006,
    /// §10.3): x + p, projected onto the box, is tried with μ raised tenfold (from 0 to
    /// 10⁻¹²‖H‖, then ×10; at most 40 tries) until −H + μI is positive definite and f at
    /// x + p exceeds every value evaluated so far (the Hessian's probes included); x + 2p,
    /// x + 4p, … are then tried while f keeps increasing (a flat or convex direction, along
    /// which the damping keeps p short), and the next step starts from a tenth of the μ that
    /// succeeded, at the best point evaluated. Stops, converged, when ‖p‖∞ ≤ `tolerance` (in unit
    /// coordinates), or the gain the quadratic model predicts, ∇f·p, is at most
    /// `tolerance`·|f|, or no coordinate is free; or, not converged, when no step
    /// increases f or after `max_steps` steps. Returns (steps, converged).
    fn newton(
        &mut self,
        free: &[usize],
        domain: &BoxDomain,
        max_steps: usize,
        tolerance: f64,
    ) -> Result<(usize, bool)> {
        let mut damping = 0.0;
        for step in 0..max_steps {
            let x = self.best_point.clone();
            let value = self.best_value;
            let g0 = self.best_gradient.clone();
            let width = |i: usize| domain.hi()[i] - domain.lo()[i];
            let active: Vec<usize> = free
                .iter()
                .copied()
                .filter(|&i| {
                    let g = g0[i];
                    !((x[i] <= domain.lo()[i] && g <= 0.0) || (x[i] >= domain.hi()[i] && g >= 0.0))
                })
                .collect();
            let m = active.len();
            if m == 0 {
                return Ok((step, true));
            }
            // −H on the active coordinates, column by column.
            let mut a = vec![0.0; m * m];
            for (col, &j) in active.iter().enumerate() {
                let (lo, hi) = (domain.lo()[j], domain.hi()[j]);
                let up = (x[j] + CURVATURE_STEP * width(j)).min(hi);
                let down = (x[j] - CURVATURE_STEP * width(j)).max(lo);
                let to = if up - x[j] >= x[j] - down { up } else { down };
                let du = (to - x[j]) / width(j);
                if du == 0.0 {
                    return Ok((step, false));
                }
                let mut y = x.clone();
                y[j] = to;
                let (_, g) = self.evaluate_box(&y)?;
                for (row, &i) in active.iter().enumerate() {
                    a[row * m + col] = -(g[i] - g0[i]) * width(i) / du;
                }
            }
            for r in 0..m {
                for c in 0..r {
                    let mean = 0.5 * (a[r * m + c] + a[c * m + r]);
                    a[r * m + c] = mean;
                    a[c * m + r] = mean;
                }
            }
            let rhs: Vec<f64> = active.iter().map(|&i| g0[i] * width(i)).collect();
            let norm = a.iter().fold(0.0f64, |n, v| n.max(v.abs()));
            let smallest = 1e-12 * norm.max(f64::MIN_POSITIVE);
            let raise = |mu: f64| if mu < smallest { smallest } else { 10.0 * mu };
            let mut mu = damping;
            let mut p = loop {
                if let Some(p) = damped_solve(&a, m, mu, &rhs) {
                    break p;
                }
                mu = raise(mu);
                if !mu.is_finite() {
                    return Ok((step, false));
                }
            };
            let gain: f64 = p.iter().zip(&rhs).map(|(p, g)| p * g).sum();
            let largest = p.iter().fold(0.0f64, |n, v| n.max(v.abs()));
            if largest <= tolerance || gain <= tolerance * value.abs() {
                return Ok((step, true));
            }
            let mut improved = false;
            for _ in 0..40 {
                let mut y = x.clone();
                for (&i, &pi) in active.iter().zip(&p) {
                    y[i] = (x[i] + pi * width(i)).clamp(domain.lo()[i], domain.hi()[i]);
                }
                if same_point(&y, &x) {
                    break;
                }
                // The step's own value against the best so far (a probe of the Hessian may
                // already have improved on f(x): a step must beat that too, or the probes
                // alone would creep along).
                let target = self.best_value;
                let fy = self.evaluate_box(&y)?.0;
                if fy > target {
                    improved = true;
                    damping = if mu <= smallest { 0.0 } else { 0.1 * mu };
                    // Where the model underestimates the gain (a flat or convex direction,
                    // along which the damping keeps the step short), go on along p, doubling,
                    // while f increases.
                    let mut last = fy;
                    let mut factor = 2.0;
                    for _ in 0..30 {
                        let mut z = x.clone();
                        for (&i, &pi) in active.iter().zip(&p) {
                            z[i] = (x[i] + factor * pi * width(i))
                                .clamp(domain.lo()[i], domain.hi()[i]);
                        }
                        if same_point(&z, &y) {
                            break;
                        }
                        let fz = self.evaluate_box(&z)?.0;
                        if fz <= last {
                            break;
                        }
                        last = fz;
                        y = z;
                        factor *= 2.0;
                    }
                    break;
                }
                mu = raise(mu);
                match damped_solve(&a, m, mu, &rhs) {
                    Some(q) => p = q,
                    None => break,
                }
            }
            if !improved {
                return Ok((step + 1, false));
            }
        }
        Ok((max_steps, false))
    }

    /// After PANOC: moves the coordinates of the best point along which f still increases
    /// outwards onto that bound, all at once and, if that is no better, one at a time, until
    /// no such move increases f (at most `n + 1` rounds); a move is kept only if f increases.
    /// A first-order method stops once its steps fall below the tolerance, which on a box much
    /// narrower in one coordinate than in another leaves that coordinate short of a bound the
    /// maximiser is on.
    fn snap_to_bounds(&mut self, free: &[usize], domain: &BoxDomain) -> Result<()> {
        for _ in 0..=free.len() {
            let moves: Vec<(usize, f64)> = free
                .iter()
                .filter_map(|&i| {
                    let (x, g) = (self.best_point[i], self.best_gradient[i]);
                    let (lo, hi) = (domain.lo()[i], domain.hi()[i]);
                    if g > 0.0 && x < hi {
                        Some((i, hi))
                    } else if g < 0.0 && x > lo {
                        Some((i, lo))
                    } else {
                        None
                    }
                })
                .collect();
            if moves.is_empty() {
                return Ok(());
            }
            let before = self.best_value;
            let mut all = self.best_point.clone();
            for &(i, bound) in &moves {
                all[i] = bound;
            }
            self.evaluate_box(&all)?;
            if self.best_value > before {
                continue;
            }
            if moves.len() > 1 {
                for &(i, bound) in &moves {
                    // From the best point so far, so that a kept move is built on.
                    let mut one = self.best_point.clone();
                    one[i] = bound;
                    self.evaluate_box(&one)?;
                }
            }
            if self.best_value == before {
                return Ok(());
            }
        }
        Ok(())
    }

    /// −f at the scaled point `v` (possibly outside PANOC's box: linear extension from the
    /// nearest point of the box) and its gradient, into `gradient` if given.
    fn cost(&mut self, v: &[f64], gradient: Option<&mut [f64]>) -> std::result::Result<f64, ()> {
        if self.error.is_some() {
            return Err(());
        }
        if v.iter().any(|v| !v.is_finite()) {
            // PANOC's own iterate went non-finite: not the objective's fault.
            return Err(());
        }
        let c: Vec<f64> = v
            .iter()
            .zip(&self.free)
            .map(|(v, coordinate)| v.clamp(0.0, coordinate.scale))
            .collect();
        if let Err(e) = self.evaluate(&c) {
            self.error = Some(e);
            return Err(());
        }
        let extension: f64 = self
            .cached_gradient
            .iter()
            .zip(v.iter().zip(&c))
            .map(|(g, (v, c))| g * (v - c))
            .sum();
        if let Some(out) = gradient {
            for (o, g) in out.iter_mut().zip(&self.cached_gradient) {
                *o = -g;
            }
        }
        Ok(-(self.cached_value + extension))
    }
}

/// The step, in unit coordinates, of the finite differences that estimate the curvature of
/// each coordinate for the preconditioner of [`refine`].
const CURVATURE_STEP: f64 = 1e-6;

/// The smallest ratio of a coordinate's curvature to the largest that the preconditioner
/// resolves: flatter coordinates are scaled as if their curvature were this fraction of the
/// largest (a scale of at least 10⁻⁵ of the stiffest coordinate's).
const CURVATURE_FLOOR: f64 = 1e-10;

/// The most rounds of PANOC of one refinement, each from the best point of the last with the
/// scaling estimated afresh there.
const MAX_ROUNDS: usize = 4;

/// The solution of (A + μI)p = b for the symmetric m × m matrix `a` (row-major) by Cholesky's
/// method, or `None` if A + μI is not (numerically) positive definite.
fn damped_solve(a: &[f64], m: usize, mu: f64, b: &[f64]) -> Option<Vec<f64>> {
    let mut l = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            let mut sum = a[i * m + j] + if i == j { mu } else { 0.0 };
            for k in 0..j {
                sum -= l[i * m + k] * l[j * m + k];
            }
            if i == j {
                if sum.is_nan() || sum <= 0.0 || !sum.is_finite() {
                    return None;
                }
                l[i * m + i] = sum.sqrt();
            } else {
                l[i * m + j] = sum / l[j * m + j];
            }
        }
    }
    let mut y = b.to_vec();
    for i in 0..m {
        for k in 0..i {
            y[i] -= l[i * m + k] * y[k];
        }
        y[i] /= l[i * m + i];
    }
    for i in (0..m).rev() {
        for k in i + 1..m {
            y[i] -= l[k * m + i] * y[k];
        }
        y[i] /= l[i * m + i];
    }
    y.iter().all(|v| v.is_finite()).then_some(y)
}

/// A round that converges and improves f by at most this fraction of |f| ends the refinement.
const ROUND_GAIN: f64 = 1e-12;

/// The preconditioning scales sᵢ = √(max(cᵢ / max c, [`CURVATURE_FLOOR`])) of the free
/// coordinates from their curvatures cᵢ = |∂²f/∂uᵢ²|: in the coordinates vᵢ = sᵢuᵢ every
/// curvature is max c (or less, for one below the floor), so PANOC's steps, its fixed-point
/// residual and its L-BFGS directions see a problem whose diagonal is balanced. All 1 when no
/// curvature is positive and finite.
fn scales(curvatures: &[f64]) -> Vec<f64> {
    let largest = curvatures
        .iter()
        .copied()
        .filter(|c| c.is_finite())
        .fold(0.0, f64::max);
    curvatures
        .iter()
        .map(|&c| {
            if largest > 0.0 && c.is_finite() {
                (c / largest).max(CURVATURE_FLOOR).sqrt()
            } else {
                1.0
            }
        })
        .collect()
}

/// [`refine`] after its inputs are checked.
fn refine_checked(
    domain: &BoxDomain,
    start: &[f64],
    f: &mut dyn FnMut(&[f64]) -> ValueGradient,
    options: &RefineOptions,
) -> Result<Maximum> {
    let free: Vec<usize> = (0..domain.dim())
        .filter(|&i| domain.lo()[i] < domain.hi()[i])
        .collect();
    let n = free.len();
    let mut objective = Objective {
        f,
        free: Vec::new(),
        dim: domain.dim(),
        x: start.to_vec(),
        cached_unit: Vec::new(),
        cached_value: 0.0,
        cached_gradient: Vec::new(),
        has_cache: false,
        best_point: Vec::new(),
        best_value: f64::NEG_INFINITY,
        best_gradient: Vec::new(),
        evaluations: 0,
        error: None,
        last: None,
    };
    // The start first: it is the point to beat, and its value is `start_value`.
    let (start_value, start_gradient) = objective.evaluate_box(start)?;
    // The projected gradient: zero where a coordinate cannot move uphill, at its upper bound
    // with ∂f > 0 or at its lower bound with ∂f < 0 (f is maximised).
    let stationary = free.iter().all(|&i| {
        let g = start_gradient[i];
        g == 0.0
            || (g > 0.0 && start[i] == domain.hi()[i])
            || (g < 0.0 && start[i] == domain.lo()[i])
    });
    if n == 0 || stationary {
        let mut point = objective.best_point;
        domain.clamp(&mut point);
        return Ok(Maximum {
            point,
            value: start_value,
            start: 0,
            start_value,
            evaluations: objective.evaluations,
            iterations: 0,
            converged: true,
        });
    }

    let mut iterations = 0;
    let mut converged = false;
    let newton_steps = options.max_iterations / 2;
    let panoc_iterations = options.max_iterations - newton_steps;
    let mut objective = RefCell::new(objective);
    for round in 0..MAX_ROUNDS {
        let remaining = panoc_iterations - iterations;
        if remaining == 0 {
            break;
        }
        // Each round but the last may spend half of what is left, so that a run that stalls
        // on a badly estimated scaling leaves room for one from its result.
        let budget = if round + 1 == MAX_ROUNDS {
            remaining
        } else {
            remaining.div_ceil(2)
        };
        let curvatures = objective.get_mut().curvatures(&free, domain)?;
        let scale = scales(&curvatures);
        let (from, from_value) = {
            let o = objective.get_mut();
            (o.best_point.clone(), o.best_value)
        };
        let coordinates: Vec<FreeCoordinate> = free
            .iter()
            .zip(&scale)
            .map(|(&i, &s)| FreeCoordinate::new(i, domain.lo()[i], domain.hi()[i], from[i], s))
            .collect();
        let mut v = objective.get_mut().begin_round(coordinates);
        let zeros = vec![0.0; n];
        let cube = Rectangle::new(Some(&zeros), Some(&scale));
        let cost = |u: &[f64], c: &mut f64| -> FunctionCallResult {
            *c = objective
                .borrow_mut()
                .cost(u, None)
                .map_err(|()| SolverError::Cost("objective failed"))?;
            Ok(())
        };
        let gradient = |u: &[f64], g: &mut [f64]| -> FunctionCallResult {
            objective
                .borrow_mut()
                .cost(u, Some(g))
                .map_err(|()| SolverError::Cost("objective failed"))?;
            Ok(())
        };
        let problem = Problem::new(&cube, gradient, cost);
        let mut cache = PANOCCache::new(n, options.tolerance, options.memory);
        let mut solver = PANOCOptimizer::new(problem, &mut cache)
            .with_tolerance(options.tolerance)
            .with_max_iter(budget);
        let outcome = solver.solve(&mut v);
        match outcome {
            Ok(status) => {
                iterations += status.iterations();
                converged = status.exit_status() == ExitStatus::Converged;
            }
            Err(_) => {
                if let Some(e) = objective.get_mut().error.take() {
                    return Err(e);
                }
                converged = false;
                break;
            }
        }
        let o = objective.get_mut();
        // A run that stopped short without improving anything will not do better from the
        // same point: the Newton steps below take over.
        if !converged && o.best_value <= from_value {
            break;
        }
        // Done when a round converges: the Newton steps below check the point (without them,
        // only once a round converges without improving the point beyond rounding, so that
        // PANOC's residual is small in the scaling estimated at the point returned).
        if converged
            && (newton_steps > 0
                || o.best_value - from_value <= ROUND_GAIN * from_value.abs()
                || same_point(&o.best_point, &from))
        {
            break;
        }
    }
    let mut objective = objective.into_inner();
    if newton_steps > 0 {
        let (steps, done) = objective.newton(&free, domain, newton_steps, options.tolerance)?;
        iterations += steps;
        converged = done;
    }
    objective.snap_to_bounds(&free, domain)?;
    let mut point = objective.best_point;
    // Defensive: `to_box` already clamps every coordinate.
    domain.clamp(&mut point);
    Ok(Maximum {
        point,
        value: objective.best_value,
        start: 0,
        start_value,
        evaluations: objective.evaluations,
        iterations,
        converged,
    })
}

/// Whether the two points are the same bits, coordinate by coordinate.
pub(crate) fn same_point(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}
