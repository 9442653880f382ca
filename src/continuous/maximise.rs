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
/// | `tolerance` | 10⁻¹⁰ | finite, > 0 | stop when PANOC's fixed-point residual ‖u − Π(u − γ∇(−f)(u))‖, in the box rescaled to [0, 1]^d, is below it |
/// | `max_iterations` | 200 | ≥ 1 | the most PANOC iterations of one refinement |
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
    /// PANOC iterations of the refinement that gave `point`.
    pub iterations: usize,
    /// Whether that refinement stopped because the fixed-point residual fell below the
    /// tolerance (or had nothing to do: every coordinate fixed, or a zero gradient at the
    /// start); `false` if it hit `max_iterations` or PANOC stopped on a non-finite internal
    /// quantity (the best point evaluated is still returned).
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
/// The refinement is local: a start where the gradient vanishes (a flat objective, or a
/// stationary point) is returned as it is. PANOC is a first-order method with quasi-Newton
/// acceleration: on a badly conditioned objective (after the box is rescaled to the unit cube,
/// curvatures many orders of magnitude apart between coordinates) it may stop at
/// `max_iterations` before reaching the maximiser ([`Maximum::converged`] is then `false`).
///
/// # How PANOC sees the objective
/// - PANOC minimises, so it is given −f.
/// - It works in the unit cube: each free coordinate is rescaled to [0, 1] (so tolerances do
///   not depend on the width of the box) and, if the start is in the upper half of that
///   coordinate, mirrored (so PANOC's finite-difference Lipschitz probe, which moves every
///   coordinate up by max(10⁻⁶u, 10⁻¹²), moves into the box and not out of it). Coordinates with
///   lo = hi are held at their value and hidden from PANOC.
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

/// One free (lo < hi) coordinate as PANOC sees it: u ∈ [0, 1] ↦ x = lo + u·(hi − lo), or
/// x = hi − u·(hi − lo) if mirrored.
#[derive(Debug, Clone, Copy)]
struct FreeCoordinate {
    index: usize,
    lo: f64,
    hi: f64,
    mirrored: bool,
    /// The start's unit coordinate, mapped back to the start's own coordinate exactly.
    start_unit: f64,
    start_x: f64,
}

impl FreeCoordinate {
    fn new(index: usize, lo: f64, hi: f64, x: f64) -> Self {
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
            start_unit: u.clamp(0.0, 1.0),
            start_x: x,
        }
    }

    /// The box coordinate of a unit coordinate `u ∈ [0, 1]`: the bounds exactly at 0 and 1,
    /// the start's coordinate exactly at its unit coordinate, clamped to [lo, hi] between.
    fn to_box(self, u: f64) -> f64 {
        if u == self.start_unit {
            return self.start_x;
        }
        let (near, far) = if self.mirrored {
            (self.hi, self.lo)
        } else {
            (self.lo, self.hi)
        };
        if u <= 0.0 {
            near
        } else if u >= 1.0 {
            far
        } else {
            (near + u * (far - near)).clamp(self.lo, self.hi)
        }
    }

    /// d x / d u.
    fn slope(self) -> f64 {
        if self.mirrored {
            self.lo - self.hi
        } else {
            self.hi - self.lo
        }
    }
}

/// The objective in PANOC's coordinates, with the one-point cache, the best point seen and
/// the first error.
struct Objective<'f> {
    f: &'f mut dyn FnMut(&[f64]) -> ValueGradient,
    free: Vec<FreeCoordinate>,
    dim: usize,
    /// The full point (fixed coordinates already in place).
    x: Vec<f64>,
    /// Cache: the last unit point evaluated (inside [0, 1]^n), f there and ∂f/∂u.
    cached_unit: Vec<f64>,
    cached_value: f64,
    cached_gradient: Vec<f64>,
    has_cache: bool,
    best_point: Vec<f64>,
    best_value: f64,
    /// The unit point of `best_point` and ∂f/∂u there.
    best_unit: Vec<f64>,
    best_gradient: Vec<f64>,
    evaluations: usize,
    error: Option<Error>,
}

impl Objective<'_> {
    /// Evaluates f at the box point of the unit point `c ∈ [0, 1]^n` (cached).
    fn evaluate(&mut self, c: &[f64]) -> Result<()> {
        if self.has_cache && self.cached_unit == c {
            return Ok(());
        }
        for (coordinate, &u) in self.free.iter().zip(c) {
            self.x[coordinate.index] = coordinate.to_box(u);
        }
        let (value, gradient) = (self.f)(&self.x)?;
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
        for (g, coordinate) in self.cached_gradient.iter_mut().zip(&self.free) {
            *g = gradient[coordinate.index] * coordinate.slope();
        }
        self.cached_unit.copy_from_slice(c);
        self.cached_value = value;
        self.has_cache = true;
        // Strictly greater: the earliest of equal values (the start first) is kept.
        if value > self.best_value || self.best_point.is_empty() {
            self.best_value = value;
            self.best_point.clone_from(&self.x);
            self.best_unit.clone_from(&self.cached_unit);
            self.best_gradient.clone_from(&self.cached_gradient);
        }
        Ok(())
    }

    /// After PANOC: moves the coordinates of the best point along which f still increases
    /// outwards onto that bound, all at once and, if that is no better, one at a time, until
    /// no such move increases f (at most `n + 1` rounds); a move is kept only if f increases.
    /// A first-order method stops once its steps fall below the tolerance, which on a box much
    /// narrower in one coordinate than in another leaves that coordinate short of a bound the
    /// maximiser is on.
    fn snap_to_bounds(&mut self) -> Result<()> {
        for _ in 0..=self.best_unit.len() {
            let moves: Vec<(usize, f64)> = self
                .best_unit
                .iter()
                .zip(&self.best_gradient)
                .enumerate()
                .filter_map(|(i, (&u, &g))| {
                    if g > 0.0 && u < 1.0 {
                        Some((i, 1.0))
                    } else if g < 0.0 && u > 0.0 {
                        Some((i, 0.0))
                    } else {
                        None
                    }
                })
                .collect();
            if moves.is_empty() {
                return Ok(());
            }
            let before = self.best_value;
            let mut all = self.best_unit.clone();
            for &(i, bound) in &moves {
                all[i] = bound;
            }
            self.evaluate(&all)?;
            if self.best_value > before {
                continue;
            }
            if moves.len() > 1 {
                for &(i, bound) in &moves {
                    // From the best point so far, so that a kept move is built on.
                    let mut one = self.best_unit.clone();
                    one[i] = bound;
                    self.evaluate(&one)?;
                }
            }
            if self.best_value == before {
                return Ok(());
            }
        }
        Ok(())
    }

    /// −f at the unit point `u` (possibly outside [0, 1]^n: linear extension from the nearest
    /// point of the cube) and its gradient, into `gradient` if given.
    fn cost(&mut self, u: &[f64], gradient: Option<&mut [f64]>) -> std::result::Result<f64, ()> {
        if self.error.is_some() {
            return Err(());
        }
        if u.iter().any(|v| !v.is_finite()) {
            // PANOC's own iterate went non-finite: not the objective's fault.
            return Err(());
        }
        let c: Vec<f64> = u.iter().map(|v| v.clamp(0.0, 1.0)).collect();
        if let Err(e) = self.evaluate(&c) {
            self.error = Some(e);
            return Err(());
        }
        let extension: f64 = self
            .cached_gradient
            .iter()
            .zip(u.iter().zip(&c))
            .map(|(g, (u, c))| g * (u - c))
            .sum();
        if let Some(out) = gradient {
            for (o, g) in out.iter_mut().zip(&self.cached_gradient) {
                *o = -g;
            }
        }
        Ok(-(self.cached_value + extension))
    }
}

/// [`refine`] after its inputs are checked.
fn refine_checked(
    domain: &BoxDomain,
    start: &[f64],
    f: &mut dyn FnMut(&[f64]) -> ValueGradient,
    options: &RefineOptions,
) -> Result<Maximum> {
    let free: Vec<FreeCoordinate> = (0..domain.dim())
        .filter(|&i| domain.lo()[i] < domain.hi()[i])
        .map(|i| FreeCoordinate::new(i, domain.lo()[i], domain.hi()[i], start[i]))
        .collect();
    let n = free.len();
    let start_unit: Vec<f64> = free.iter().map(|c| c.start_unit).collect();
    let objective = RefCell::new(Objective {
        f,
        free,
        dim: domain.dim(),
        x: start.to_vec(),
        cached_unit: vec![0.0; n],
        cached_value: 0.0,
        cached_gradient: vec![0.0; n],
        has_cache: false,
        best_point: Vec::new(),
        best_value: f64::NEG_INFINITY,
        best_unit: Vec::new(),
        best_gradient: Vec::new(),
        evaluations: 0,
        error: None,
    });
    // The start first: it is the point to beat, and its value is `start_value`.
    objective.borrow_mut().evaluate(&start_unit)?;
    let start_value = objective.borrow().cached_value;
    let zero_gradient = objective.borrow().cached_gradient.iter().all(|&g| g == 0.0);

    let (iterations, converged) = if n == 0 || zero_gradient {
        (0, true)
    } else {
        let zeros = vec![0.0; n];
        let ones = vec![1.0; n];
        let cube = Rectangle::new(Some(&zeros), Some(&ones));
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
            .with_max_iter(options.max_iterations);
        let mut u = start_unit;
        match solver.solve(&mut u) {
            Ok(status) => (
                status.iterations(),
                status.exit_status() == ExitStatus::Converged,
            ),
            Err(_) => {
                if let Some(e) = objective.borrow_mut().error.take() {
                    return Err(e);
                }
                (0, false)
            }
        }
    };
    let mut objective = objective.into_inner();
    if n > 0 && !zero_gradient {
        objective.snap_to_bounds()?;
    }
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
