//! Box-constrained quasi-Newton refinement and multi-start maximisation.
//! (Signatures fixed; the body is written in the helper's branch.)

use super::BoxDomain;
use crate::error::Result;

/// Settings of [`refine`].
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
    /// Objective evaluations spent.
    pub evaluations: usize,
}

/// Refines `start` (inside `domain`) towards a local maximum of `f`, which returns the value
/// and gradient at a point. Never returns a value below `f(start)` or a point outside the box.
pub fn refine(
    domain: &BoxDomain,
    start: &[f64],
    f: &mut dyn FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
    options: &RefineOptions,
) -> Result<Maximum> {
    let _ = (domain, start, f, options);
    todo!("helper")
}

/// Multi-start maximisation: of the candidate `starts` (row-major, d columns) with known
/// objective values `values`, refines the best `count` (highest value first, lowest index among
/// ties) and returns the best result.
pub fn maximise(
    domain: &BoxDomain,
    starts: &[f64],
    values: &[f64],
    count: usize,
    f: &mut dyn FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
    options: &RefineOptions,
) -> Result<Maximum> {
    let _ = (domain, starts, values, count, f, options);
    todo!("helper")
}
