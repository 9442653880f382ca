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
    /// [`Error::ZeroDimension`] if the first point is empty, [`Error::DimensionMismatch`] if the
    /// vectors differ in length, [`Error::NonFinite`] if any coordinate is NaN or infinite.
    /// An empty slice gives an empty view of dimension 0 (it is rejected where arms are needed).
    pub fn from_rows(rows: &'a [Vec<f64>]) -> Result<Self> {
        let dim = rows.first().map_or(0, Vec::len);
        if !rows.is_empty() && dim == 0 {
            return Err(Error::ZeroDimension);
        }
        for (i, row) in rows.iter().enumerate() {
            if row.len() != dim {
                return Err(Error::DimensionMismatch {
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
            Err(Error::DimensionMismatch {
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
