//! Double-double arithmetic (about 32 significant digits) and, on it, an independent
//! extended-precision reference for CMM-UCB: the dual of Flynn & Reeb 2024 (Thm 4.5, Eq. 12),
//! UCB(x) = min over a > 0 of U_a(x) = μ_a(x) + (R̃_a/√a)·ρ_a(x), R̃_a² = R_t² + aB² − a·q_a,
//! evaluated at each a from a Cholesky factor of K_t + a·I computed in double-double, with the
//! kernel values and R_t (Eq. 8: R_t² = a0·q_{a0} + σ²·ln det(I + K_t/a0) + 2σ² ln(1/δ))
//! computed in double-double from the f64 inputs too. Nothing of the crate's CMM code (its
//! eigendecomposition, truncation, scan or Brent search) is used.
//!
//! Error-free transformations after Dekker (1971) and Knuth (TAOCP vol. 2), with the fused
//! multiply-add for the exact product; every operation is accurate to a few units of 2⁻¹⁰⁴.

#![allow(dead_code)]

use std::ops::{Add, Div, Mul, Neg, Sub};

/// hi + lo, |lo| ≤ ulp(hi)/2.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Dd {
    pub hi: f64,
    pub lo: f64,
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

fn quick_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

impl Dd {
    pub const ZERO: Dd = Dd { hi: 0.0, lo: 0.0 };
    pub const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };
    /// ln 2 to double-double precision.
    const LN2: Dd = Dd {
        hi: std::f64::consts::LN_2,
        lo: 2.319_046_813_846_299_6e-17,
    };

    pub fn from(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }

    pub fn to_f64(self) -> f64 {
        self.hi + self.lo
    }

    pub fn abs(self) -> Dd {
        if self.hi < 0.0 { -self } else { self }
    }

    pub fn square(self) -> Dd {
        self * self
    }

    /// √x by one Newton step from the f64 root (x ≥ 0).
    pub fn sqrt(self) -> Dd {
        if self.hi <= 0.0 {
            return Dd::ZERO;
        }
        let s = Dd::from(self.hi.sqrt());
        s + (self - s * s) / (s * 2.0)
    }

    /// eˣ: x = k·ln 2 + r, |r| ≤ ln 2/2, r scaled by 2⁻¹⁰, a Taylor series to 2⁻¹¹⁰, and ten
    /// squarings.
    pub fn exp(self) -> Dd {
        if self.hi < -745.0 {
            return Dd::ZERO;
        }
        let k = (self.hi / std::f64::consts::LN_2).round();
        let r = (self - Dd::LN2 * k) * (1.0 / 1024.0);
        // Σ r^n/n! for n ≥ 1 (|r| < 3.4·10⁻⁴: 12 terms reach 10⁻⁴⁵).
        let mut term = r;
        let mut sum = r;
        for n in 2..=12 {
            term = term * r / (n as f64);
            sum = sum + term;
        }
        // e^{2r} − 1 = (e^r − 1)(e^r − 1 + 2), without losing the small part.
        for _ in 0..10 {
            sum = sum * (sum + 2.0);
        }
        let e = sum + 1.0;
        let scale = 2f64.powi(k as i32);
        Dd {
            hi: e.hi * scale,
            lo: e.lo * scale,
        }
    }

    /// ln x (x > 0) by two Newton steps on eʸ = x.
    pub fn ln(self) -> Dd {
        let mut y = Dd::from(self.hi.ln());
        for _ in 0..2 {
            y = y + self * (-y).exp() - 1.0;
        }
        y
    }
}

impl Add for Dd {
    type Output = Dd;
    fn add(self, o: Dd) -> Dd {
        let (s, e) = two_sum(self.hi, o.hi);
        let (t, f) = two_sum(self.lo, o.lo);
        let (s, e) = quick_two_sum(s, e + t);
        let (hi, lo) = quick_two_sum(s, e + f);
        Dd { hi, lo }
    }
}

impl Add<f64> for Dd {
    type Output = Dd;
    fn add(self, o: f64) -> Dd {
        self + Dd::from(o)
    }
}

impl Neg for Dd {
    type Output = Dd;
    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
}

impl Sub for Dd {
    type Output = Dd;
    fn sub(self, o: Dd) -> Dd {
        self + (-o)
    }
}

impl Sub<f64> for Dd {
    type Output = Dd;
    fn sub(self, o: f64) -> Dd {
        self + Dd::from(-o)
    }
}

impl Mul for Dd {
    type Output = Dd;
    fn mul(self, o: Dd) -> Dd {
        let (p, e) = two_prod(self.hi, o.hi);
        let e = e + (self.hi * o.lo + self.lo * o.hi);
        let (hi, lo) = quick_two_sum(p, e);
        Dd { hi, lo }
    }
}

impl Mul<f64> for Dd {
    type Output = Dd;
    fn mul(self, o: f64) -> Dd {
        self * Dd::from(o)
    }
}

impl Div for Dd {
    type Output = Dd;
    /// Long division: two correction steps.
    fn div(self, o: Dd) -> Dd {
        let q1 = self.hi / o.hi;
        let r = self - o * q1;
        let q2 = r.hi / o.hi;
        let r = r - o * q2;
        let q3 = r.hi / o.hi;
        let (hi, lo) = quick_two_sum(q1, q2);
        Dd { hi, lo } + q3
    }
}

impl Div<f64> for Dd {
    type Output = Dd;
    fn div(self, o: f64) -> Dd {
        self / Dd::from(o)
    }
}

/// The kernels the reference evaluates in double-double, from f64 inputs and length-scale.
#[derive(Debug, Clone, Copy)]
pub enum DdKernel {
    /// exp(−‖x − x′‖²/(2ℓ²)).
    Rbf(f64),
    /// Matérn ν = 5/2: (1 + √5 r/ℓ + 5r²/(3ℓ²))·exp(−√5 r/ℓ).
    Matern52(f64),
}

impl DdKernel {
    pub fn eval(&self, x: &[f64], y: &[f64]) -> Dd {
        let sq = x.iter().zip(y).fold(Dd::ZERO, |s, (a, b)| {
            s + (Dd::from(*a) - Dd::from(*b)).square()
        });
        match *self {
            DdKernel::Rbf(l) => (-(sq / Dd::from(l).square()) * 0.5).exp(),
            DdKernel::Matern52(l) => {
                let z_sq = sq / Dd::from(l).square();
                let s = (z_sq * 5.0).sqrt();
                (Dd::ONE + s + z_sq * (5.0 / 3.0)).mul_exp_neg(s)
            }
        }
    }
}

impl Dd {
    fn mul_exp_neg(self, s: Dd) -> Dd {
        self * (-s).exp()
    }
}

/// The lower Cholesky factor of K + a·I (row-major rows), or `None` if a pivot is not positive.
fn cholesky(gram: &[Vec<Dd>], a: f64) -> Option<Vec<Vec<Dd>>> {
    let t = gram.len();
    let mut l = vec![vec![Dd::ZERO; t]; t];
    for j in 0..t {
        let d = l[j][..j].iter().fold(gram[j][j] + a, |d, v| d - v.square());
        if d.hi <= 0.0 {
            return None;
        }
        let d = d.sqrt();
        l[j][j] = d;
        for i in j + 1..t {
            let s = l[i][..j]
                .iter()
                .zip(&l[j][..j])
                .fold(gram[i][j], |s, (u, v)| s - *u * *v);
            l[i][j] = s / d;
        }
    }
    Some(l)
}

/// L⁻¹v.
fn forward(l: &[Vec<Dd>], v: &[Dd]) -> Vec<Dd> {
    let mut z = v.to_vec();
    for i in 0..z.len() {
        let mut s = z[i];
        for k in 0..i {
            s = s - l[i][k] * z[k];
        }
        z[i] = s / l[i][i];
    }
    z
}

fn dot(a: &[Dd], b: &[Dd]) -> Dd {
    a.iter().zip(b).fold(Dd::ZERO, |s, (x, y)| s + *x * *y)
}

/// The data of one CMM-UCB in double-double.
pub struct DualReference {
    kernel: DdKernel,
    xs: Vec<Vec<f64>>,
    gram: Vec<Vec<Dd>>,
    y: Vec<Dd>,
    /// R_t².
    pub radius_sq: Dd,
    norm_sq: Dd,
    /// a0 = σ²/c, the centre of the scan over a.
    a0: f64,
}

/// The reference's value at one point: the minimum of U_a (or maximum of L_a) found, the a
/// where it was found, and a bound on how far above the true minimum (below the maximum) the
/// value can be: the larger difference to the final bracket's ends.
#[derive(Debug, Clone, Copy)]
pub struct Extremum {
    pub value: f64,
    pub a: f64,
    pub error: f64,
}

/// One point's dual data at one a: (μ_a, ρ_a², q_a).
fn dual_terms(l: &[Vec<Dd>], yz: &[Dd], q: Dd, cross: &[Dd], prior: Dd) -> (Dd, Dd, Dd) {
    let z = forward(l, cross);
    (dot(&z, yz), prior - dot(&z, &z), q)
}

impl DualReference {
    /// `xs`, `y`: the observations; σ, B, δ, c as in `BoundParams`.
    pub fn new(
        kernel: DdKernel,
        xs: &[Vec<f64>],
        y: &[f64],
        (sigma, b, delta, c): (f64, f64, f64, f64),
    ) -> Self {
        let t = xs.len();
        let gram: Vec<Vec<Dd>> = (0..t)
            .map(|i| (0..t).map(|j| kernel.eval(&xs[i], &xs[j])).collect())
            .collect();
        let y: Vec<Dd> = y.iter().map(|&v| Dd::from(v)).collect();
        let sigma_sq = Dd::from(sigma).square();
        let a0 = sigma_sq / c;
        // R_t² = a0·q + σ²·(Σ 2 ln L_ii − t ln a0) + 2σ² ln(1/δ), L = chol(K + a0 I), with a0
        // in double-double: the Cholesky takes a0 as f64 plus its low part on the diagonal.
        let mut shifted = gram.clone();
        for (i, row) in shifted.iter_mut().enumerate() {
            row[i] = row[i] + a0.lo;
        }
        let l = cholesky(&shifted, a0.hi).expect("K + a0 I is positive definite");
        let w = forward(&l, &y);
        let q = dot(&w, &w);
        let ld = (0..t).fold(Dd::ZERO, |s, i| s + l[i][i].ln() * 2.0) - a0.ln() * (t as f64);
        let radius_sq = a0 * q + sigma_sq * ld + sigma_sq * (Dd::ONE / delta).ln() * 2.0;
        Self {
            kernel,
            xs: xs.to_vec(),
            gram,
            y,
            radius_sq,
            norm_sq: Dd::from(b).square(),
            a0: a0.to_f64(),
        }
    }

    fn point_data(&self, x: &[f64]) -> (Vec<Dd>, Dd) {
        let cross = self.xs.iter().map(|xi| self.kernel.eval(xi, x)).collect();
        (cross, self.kernel.eval(x, x))
    }

    /// U_a (sign +1) or −L_a (sign −1) at x, in double-double.
    fn objective(&self, a: f64, cross: &[Dd], prior: Dd, sign: f64) -> Dd {
        let l = cholesky(&self.gram, a).expect("K + aI is positive definite for a > 0");
        let yz = forward(&l, &self.y);
        let q = dot(&yz, &yz);
        let (mu, rho_sq, q) = dual_terms(&l, &yz, q, cross, prior);
        let radius = self.radius_sq + self.norm_sq * a - q * a;
        let spread = if radius.hi > 0.0 && rho_sq.hi > 0.0 {
            (radius * rho_sq / a).sqrt()
        } else {
            Dd::ZERO
        };
        mu * sign + spread
    }

    /// (min over a of U_a, max over a of L_a) at x: a scan over ln a from ln a0 − `below` to
    /// ln a0 + `above` in steps of `step`, then golden-section refinement of the two lowest
    /// local minima of the scan until ln a is known to 10⁻¹⁰.
    pub fn bounds(&self, x: &[f64], (below, above, step): (f64, f64, f64)) -> (Extremum, Extremum) {
        let (cross, prior) = self.point_data(x);
        let upper = self.extremum(&cross, prior, 1.0, (below, above, step));
        let mut lower = self.extremum(&cross, prior, -1.0, (below, above, step));
        lower.value = -lower.value;
        (upper, lower)
    }

    fn extremum(
        &self,
        cross: &[Dd],
        prior: Dd,
        sign: f64,
        (below, above, step): (f64, f64, f64),
    ) -> Extremum {
        let centre = self.a0.ln();
        let n = ((below + above) / step).ceil() as usize;
        let logs: Vec<f64> = (0..=n).map(|k| centre - below + k as f64 * step).collect();
        let f = |s: f64| self.objective(s.exp(), cross, prior, sign).to_f64();
        let values: Vec<f64> = logs.iter().map(|&s| f(s)).collect();
        let mut minima: Vec<usize> = (0..logs.len())
            .filter(|&k| {
                (k == 0 || values[k] <= values[k - 1])
                    && (k + 1 == logs.len() || values[k] <= values[k + 1])
            })
            .collect();
        minima.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
        let mut best = Extremum {
            value: f64::INFINITY,
            a: f64::NAN,
            error: f64::INFINITY,
        };
        for &k in minima.iter().take(2) {
            let mut lo = logs[k.saturating_sub(1)];
            let mut hi = logs[(k + 1).min(logs.len() - 1)];
            let g = 0.5 * (5f64.sqrt() - 1.0);
            let (mut c, mut d) = (hi - g * (hi - lo), lo + g * (hi - lo));
            let (mut fc, mut fd) = (f(c), f(d));
            while hi - lo > 1e-10 {
                if fc <= fd {
                    hi = d;
                    (d, fd) = (c, fc);
                    c = hi - g * (hi - lo);
                    fc = f(c);
                } else {
                    lo = c;
                    (c, fc) = (d, fd);
                    d = lo + g * (hi - lo);
                    fd = f(d);
                }
            }
            let (s, v) = if fc <= fd { (c, fc) } else { (d, fd) };
            let v = v.min(values[k]);
            let error = (f(lo) - v).abs().max((f(hi) - v).abs());
            if v < best.value {
                best = Extremum {
                    value: v,
                    a: s.exp(),
                    error,
                };
            }
        }
        best
    }
}
