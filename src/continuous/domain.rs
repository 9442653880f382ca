//! The box domain [lo, hi]^d.

use crate::error::{Error, Result};

/// An axis-aligned box [lo₁, hi₁] × … × [lo_d, hi_d] with finite bounds, lo ≤ hi (a coordinate
/// with lo = hi is held fixed).
///
/// # Examples
/// ```
/// use kernel_bandits::continuous::BoxDomain;
/// let domain = BoxDomain::new(&[0.0, -1.0], &[1.0, 1.0])?;
/// assert!(domain.contains(&[0.5, 0.0]) && !domain.contains(&[0.5, 1.5]));
/// assert_eq!(BoxDomain::unit(3)?.dim(), 3);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BoxDomain {
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl BoxDomain {
    /// The box with lower corner `lo` and upper corner `hi`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no coordinate, a non-finite bound, or lo > hi in some
    /// coordinate (or a width hi − lo that overflows); [`Error::DimensionMismatch`] if the
    /// corners differ in length.
    pub fn new(lo: &[f64], hi: &[f64]) -> Result<Self> {
        if lo.len() != hi.len() {
            return Err(Error::DimensionMismatch {
                expected: lo.len(),
                got: hi.len(),
            });
        }
        if lo.is_empty() {
            return Err(Error::InvalidParameter {
                name: "domain",
                value: 0.0,
                expected: "at least one coordinate",
            });
        }
        for (&l, &h) in lo.iter().zip(hi) {
            for v in [l, h] {
                if !v.is_finite() {
                    return Err(Error::InvalidParameter {
                        name: "domain bound",
                        value: v,
                        expected: "finite",
                    });
                }
            }
            if !(l <= h && (h - l).is_finite()) {
                return Err(Error::InvalidParameter {
                    name: "domain lower bound",
                    value: l,
                    expected: "at most the upper bound, with a finite width",
                });
            }
        }
        Ok(Self {
            lo: lo.to_vec(),
            hi: hi.to_vec(),
        })
    }

    /// The unit cube [0, 1]^d.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `d = 0`.
    pub fn unit(d: usize) -> Result<Self> {
        Self::new(&vec![0.0; d], &vec![1.0; d])
    }

    /// Number of coordinates d.
    pub fn dim(&self) -> usize {
        self.lo.len()
    }

    /// The lower corner.
    pub fn lo(&self) -> &[f64] {
        &self.lo
    }

    /// The upper corner.
    pub fn hi(&self) -> &[f64] {
        &self.hi
    }

    /// Whether `x` has d coordinates, each within its bounds (NaN is not).
    pub fn contains(&self, x: &[f64]) -> bool {
        x.len() == self.dim()
            && x.iter()
                .zip(self.lo.iter().zip(&self.hi))
                .all(|(v, (l, h))| *l <= *v && *v <= *h)
    }

    /// Moves `x` onto the box: each coordinate clamped to [lo, hi].
    pub fn clamp(&self, x: &mut [f64]) {
        for (v, (l, h)) in x.iter_mut().zip(self.lo.iter().zip(&self.hi)) {
            *v = v.clamp(*l, *h);
        }
    }

    /// The point lo + u·(hi − lo) for u ∈ [0, 1]^d, clamped so that rounding never leaves the
    /// box.
    pub fn from_unit(&self, u: &[f64], out: &mut [f64]) {
        for (((o, &u), l), h) in out.iter_mut().zip(u).zip(&self.lo).zip(&self.hi) {
            *o = (l + u * (h - l)).clamp(*l, *h);
        }
    }

    /// `n` space-filling points in the box, row-major (n × d): an Owen-scrambled Sobol
    /// sequence (Burley 2020, the `sobol_burley` crate) for d ≤ 256 and n ≤ 2¹⁶, seeded by
    /// `seed`; independent uniform points from a generator seeded by `seed` otherwise.
    /// Deterministic for a given seed.
    pub fn space_filling(&self, n: usize, seed: u64) -> Vec<f64> {
        let d = self.dim();
        let mut out = vec![0.0; n * d];
        let mut u = vec![0.0; d];
        if d <= sobol_burley::NUM_DIMENSIONS as usize && n <= 1 << 16 {
            // The crate takes a 32-bit seed: fold the 64.
            let seed32 = (seed ^ (seed >> 32)) as u32;
            for (i, row) in out.chunks_exact_mut(d).enumerate() {
                for (k, v) in u.iter_mut().enumerate() {
                    *v = f64::from(sobol_burley::sample(i as u32, k as u32, seed32));
                }
                self.from_unit(&u, row);
            }
        } else {
            let mut rng = crate::rng::SeededRng::new(seed);
            for row in out.chunks_exact_mut(d) {
                for v in u.iter_mut() {
                    *v = rng.uniform();
                }
                self.from_unit(&u, row);
            }
        }
        out
    }
}
