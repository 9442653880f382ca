//! Borrowed views of point sets (arms, observed inputs) in the layouts users already have.
//!
//! A [`Points`] view does not copy the coordinates: it borrows a contiguous row-major buffer
//! (`&[[f64; D]]`), a slice of vectors (`&[Vec<f64>]`) or a column-major matrix whose rows
//! are the points (nalgebra's `DMatrix<f64>`). Building a view checks once that every point
//! has the same, non-zero number of coordinates and that every coordinate is finite.

use nalgebra::DMatrix;

use crate::error::{Error, Result};

/// A validated, borrowed set of points of one dimension.
///
/// # Examples
/// ```
/// use kernel_bandits::points::{AsPoints, Points};
/// let arms = vec![vec![0.0, 1.0], vec![0.5, 0.5]];
/// let view: Points<'_> = arms.as_points()?;
/// assert_eq!((view.len(), view.dim()), (2, 2));
/// let mut scratch = [0.0; 2];
/// assert_eq!(view.point(1, &mut scratch), &[0.5, 0.5]);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Points<'a> {
    layout: Layout<'a>,
    len: usize,
    dim: usize,
}

#[derive(Debug, Clone, Copy)]
enum Layout<'a> {
    /// Point `i` is `data[i * dim..(i + 1) * dim]`.
    RowMajor(&'a [f64]),
    /// Point `i` is `rows[i]`.
    Rows(&'a [Vec<f64>]),
    /// Point `i` is row `i` of a column-major `len × dim` matrix.
    ColumnMajor(&'a [f64]),
}

fn check_finite(values: &[f64], point: usize) -> Result<()> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(Error::NonFinite {
            what: format!("point {point}"),
        })
    }
}

impl<'a> Points<'a> {
    /// Views `data` as row-major points of `dim` coordinates each.
    ///
    /// # Errors
    /// [`Error::ZeroDimension`] if `dim == 0`, [`Error::DimensionMismatch`] if `data.len()` is not
    /// a multiple of `dim`, [`Error::NonFinite`] if any coordinate is NaN or infinite.
    pub fn from_row_major(data: &'a [f64], dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::ZeroDimension);
        }
        if !data.len().is_multiple_of(dim) {
            return Err(Error::DimensionMismatch {
                expected: dim,
                got: data.len() % dim,
            });
        }
        for (i, row) in data.chunks_exact(dim).enumerate() {
            check_finite(row, i)?;
        }
        Ok(Self {
            layout: Layout::RowMajor(data),
            len: data.len() / dim,
            dim,
        })
    }

    /// Views each vector as one point.
    ///
    /// # Errors
    /// [`Error::ZeroDimension`] if the first point is empty, [`Error::RaggedPoints`] (naming the
    /// first point that differs) if the vectors differ in length, [`Error::NonFinite`] if any coordinate is NaN or infinite.
    /// An empty slice gives an empty view of dimension 0 (it is rejected where arms are needed).
    pub fn from_rows(rows: &'a [Vec<f64>]) -> Result<Self> {
        let dim = rows.first().map_or(0, Vec::len);
        if !rows.is_empty() && dim == 0 {
            return Err(Error::ZeroDimension);
        }
        for (i, row) in rows.iter().enumerate() {
            if row.len() != dim {
                return Err(Error::RaggedPoints {
                    index: i,
                    expected: dim,
                    got: row.len(),
                });
            }
            check_finite(row, i)?;
        }
        Ok(Self {
            layout: Layout::Rows(rows),
            len: rows.len(),
            dim,
        })
    }

    /// Views the rows of a column-major matrix as points.
    ///
    /// # Errors
    /// As [`Points::from_rows`].
    pub fn from_matrix_rows(matrix: &'a DMatrix<f64>) -> Result<Self> {
        let (len, dim) = matrix.shape();
        if len > 0 && dim == 0 {
            return Err(Error::ZeroDimension);
        }
        let data = matrix.as_slice();
        for i in 0..len {
            if (0..dim).any(|j| !data[i + j * len].is_finite()) {
                return Err(Error::NonFinite {
                    what: format!("point {i}"),
                });
            }
        }
        Ok(Self {
            layout: Layout::ColumnMajor(data),
            len,
            dim,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no point.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of coordinates of each point.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The coordinates of point `i`: borrowed where the layout stores them contiguously,
    /// otherwise copied into `scratch` (which must hold at least [`Points::dim`] values).
    ///
    /// # Panics
    /// If `i >= self.len()`, or if `scratch` is too short for a column-major view.
    pub fn point<'b>(&'b self, i: usize, scratch: &'b mut [f64]) -> &'b [f64] {
        assert!(i < self.len, "point index {i} out of range {}", self.len);
        match self.layout {
            Layout::RowMajor(data) => &data[i * self.dim..(i + 1) * self.dim],
            Layout::Rows(rows) => &rows[i],
            Layout::ColumnMajor(data) => {
                let out = &mut scratch[..self.dim];
                for (j, v) in out.iter_mut().enumerate() {
                    *v = data[i + j * self.len];
                }
                out
            }
        }
    }

    /// Copies point `i` into a new vector.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn to_vec(&self, i: usize) -> Vec<f64> {
        let mut scratch = vec![0.0; self.dim];
        self.point(i, &mut scratch).to_vec()
    }

    /// Whether these are exactly the `len` points stored row-major in `data` (same values,
    /// same order); O(len·d).
    pub(crate) fn equals_row_major(&self, data: &[f64], len: usize) -> bool {
        if self.len() != len || self.len() * self.dim() != data.len() {
            return false;
        }
        let d = self.dim();
        let mut same = true;
        self.for_each(|j, x| same &= x == &data[j * d..(j + 1) * d]);
        same
    }

    /// Calls `f(i, point_i)` for every point, in order, reusing one scratch buffer.
    pub fn for_each(&self, mut f: impl FnMut(usize, &[f64])) {
        let mut scratch = vec![0.0; self.dim];
        for i in 0..self.len {
            f(i, self.point(i, &mut scratch));
        }
    }
}

/// Types that can be viewed as a set of points without copying them.
///
/// Implemented for `[Vec<f64>]`, `Vec<Vec<f64>>`, `[[f64; D]]`, `Vec<[f64; D]>`, `[[f64; D]; N]`,
/// nalgebra's `DMatrix<f64>` (its rows are the points), [`Points`] itself, and references to
/// any of these.
pub trait AsPoints {
    /// Returns the validated view.
    ///
    /// # Errors
    /// As the [`Points`] constructors: ragged rows, zero dimension or non-finite coordinates.
    fn as_points(&self) -> Result<Points<'_>>;
}

impl<T: AsPoints + ?Sized> AsPoints for &T {
    fn as_points(&self) -> Result<Points<'_>> {
        (**self).as_points()
    }
}

impl AsPoints for Points<'_> {
    fn as_points(&self) -> Result<Points<'_>> {
        Ok(*self)
    }
}

impl AsPoints for [Vec<f64>] {
    fn as_points(&self) -> Result<Points<'_>> {
        Points::from_rows(self)
    }
}

impl AsPoints for Vec<Vec<f64>> {
    fn as_points(&self) -> Result<Points<'_>> {
        Points::from_rows(self)
    }
}

impl<const N: usize> AsPoints for [Vec<f64>; N] {
    fn as_points(&self) -> Result<Points<'_>> {
        Points::from_rows(self)
    }
}

impl<const D: usize> AsPoints for [[f64; D]] {
    fn as_points(&self) -> Result<Points<'_>> {
        let points = Points::from_row_major(self.as_flattened(), D)?;
        // An empty slice has no rows to infer from, but its dimension is still D.
        Ok(points)
    }
}

impl<const D: usize> AsPoints for Vec<[f64; D]> {
    fn as_points(&self) -> Result<Points<'_>> {
        self.as_slice().as_points()
    }
}

impl<const D: usize, const N: usize> AsPoints for [[f64; D]; N] {
    fn as_points(&self) -> Result<Points<'_>> {
        self.as_slice().as_points()
    }
}

impl AsPoints for DMatrix<f64> {
    fn as_points(&self) -> Result<Points<'_>> {
        Points::from_matrix_rows(self)
    }
}

/// The joint point s = [context ‖ action] on which a contextual agent's kernel acts
/// (Zenati et al. 2022 §2: a kernel on context–action pairs).
///
/// # Errors
/// [`Error::ZeroDimension`] if `context` or `action` is empty, [`Error::NonFinite`] if any
/// coordinate is NaN or infinite.
///
/// # Examples
/// ```
/// use kernel_bandits::points::join;
/// assert_eq!(join(&[0.2, 0.4], &[0.9])?, vec![0.2, 0.4, 0.9]);
/// assert!(join(&[f64::NAN], &[0.9]).is_err());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn join(context: &[f64], action: &[f64]) -> Result<Vec<f64>> {
    check_point(context, None, "context")?;
    check_point(action, None, "action")?;
    let mut joint = Vec::with_capacity(context.len() + action.len());
    joint.extend_from_slice(context);
    joint.extend_from_slice(action);
    Ok(joint)
}

/// The arms of one contextual round: the joint points [context ‖ aᵢ] for every offered
/// action aᵢ, in the order of the actions, stored row-major in one owned buffer.
///
/// A contextual agent scores these joint points with a kernel on the whole vector (Zenati et al.
/// 2022 §5 uses a Gaussian kernel on (x, a)), so the index of the best joint point is the index of
/// the action to play.
///
/// # Examples
/// ```
/// use kernel_bandits::points::{AsPoints, ContextualArms};
/// let actions = [[0.1], [0.5], [0.9]];
/// let arms = ContextualArms::new(&[0.3, 0.7], &actions)?;
/// assert_eq!((arms.len(), arms.dim(), arms.context_dim()), (3, 3, 2));
/// assert_eq!(arms.joint(1), &[0.3, 0.7, 0.5]);
/// assert_eq!(arms.as_points()?.len(), 3);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ContextualArms {
    /// Joint point `i` is `joint[i * dim..(i + 1) * dim]`.
    joint: Vec<f64>,
    len: usize,
    dim: usize,
    context_dim: usize,
}

impl ContextualArms {
    /// Joins `context` with every action in `actions` (any [`AsPoints`] layout).
    ///
    /// # Errors
    /// [`Error::ZeroDimension`] for an empty context, [`Error::NonFinite`] for a NaN or
    /// infinite context coordinate, [`Error::NoArms`] for an empty action set, and the
    /// [`AsPoints`] errors of `actions` (ragged, zero-dimensional or non-finite actions).
    pub fn new<A: AsPoints + ?Sized>(context: &[f64], actions: &A) -> Result<Self> {
        check_point(context, None, "context")?;
        let actions = actions.as_points()?;
        if actions.is_empty() {
            return Err(Error::NoArms);
        }
        let dim = context.len() + actions.dim();
        let mut joint = Vec::with_capacity(actions.len() * dim);
        actions.for_each(|_, action| {
            joint.extend_from_slice(context);
            joint.extend_from_slice(action);
        });
        Ok(Self {
            joint,
            len: actions.len(),
            dim,
            context_dim: context.len(),
        })
    }

    /// Number of joint points (offered actions).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no action is offered (never true for a value built by [`ContextualArms::new`],
    /// which rejects an empty action set).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Coordinates of each joint point: context dimension plus action dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Coordinates of the context, the leading part of every joint point.
    pub fn context_dim(&self) -> usize {
        self.context_dim
    }

    /// Coordinates of each action, the trailing part of every joint point.
    pub fn action_dim(&self) -> usize {
        self.dim - self.context_dim
    }

    /// The context shared by all joint points.
    pub fn context(&self) -> &[f64] {
        &self.joint[..self.context_dim]
    }

    /// Joint point `i`: [context ‖ actionᵢ].
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn joint(&self, i: usize) -> &[f64] {
        assert!(
            i < self.len,
            "joint point index {i} out of range {}",
            self.len
        );
        &self.joint[i * self.dim..(i + 1) * self.dim]
    }

    /// Action `i`, the trailing part of joint point `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn action(&self, i: usize) -> &[f64] {
        &self.joint(i)[self.context_dim..]
    }

    /// The joint points as a borrowed view.
    pub fn points(&self) -> Points<'_> {
        Points {
            layout: Layout::RowMajor(&self.joint),
            len: self.len,
            dim: self.dim,
        }
    }
}

impl AsPoints for ContextualArms {
    fn as_points(&self) -> Result<Points<'_>> {
        // Validated once at construction; no need to scan the buffer again.
        Ok(self.points())
    }
}

/// Checks that a single point is non-empty, of dimension `expected` (if known) and finite.
pub(crate) fn check_point(x: &[f64], expected: Option<usize>, what: &str) -> Result<()> {
    if x.is_empty() {
        return Err(Error::ZeroDimension);
    }
    if let Some(expected) = expected
        && x.len() != expected
    {
        return Err(Error::DimensionMismatch {
            expected,
            got: x.len(),
        });
    }
    if x.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(Error::NonFinite {
            what: what.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_agree() {
        let vecs = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]];
        let arrays = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let matrix = DMatrix::from_row_slice(3, 2, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let views = [
            vecs.as_points().unwrap(),
            arrays.as_points().unwrap(),
            matrix.as_points().unwrap(),
        ];
        for view in views {
            assert_eq!((view.len(), view.dim()), (3, 2));
            for (i, expected) in vecs.iter().enumerate() {
                assert_eq!(&view.to_vec(i), expected);
            }
        }
    }

    #[test]
    fn rejects_bad_points() {
        let ragged = vec![vec![1.0, 2.0], vec![3.0]];
        assert!(matches!(
            ragged.as_points(),
            Err(Error::RaggedPoints {
                index: 1,
                expected: 2,
                got: 1
            })
        ));
        let nan = vec![vec![1.0, f64::NAN]];
        assert!(matches!(nan.as_points(), Err(Error::NonFinite { .. })));
        let inf = DMatrix::from_row_slice(1, 2, &[f64::INFINITY, 0.0]);
        assert!(matches!(inf.as_points(), Err(Error::NonFinite { .. })));
        let empty_point = vec![Vec::<f64>::new()];
        assert!(matches!(empty_point.as_points(), Err(Error::ZeroDimension)));
    }
}
