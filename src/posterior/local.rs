//! Upper bounds on U(x) = min_r (μ_r(x) + w_r ρ_r(x)) from a few observations near x, for the
//! pruned argmax ([`super::select`]).
//!
//! Conditioning on more data never increases the posterior variance: for any subset S of the
//! observations, ρ_r²(x) ≤ ρ_{S,r}²(x) = k(x, x) − k_S(x)ᵀ(K_S + a_rI)⁻¹k_S(x) (the variance
//! of the same Gaussian model given only S; Rasmussen & Williams 2006, §2.2). With S the
//! [`NEIGHBOURS`] observations of largest k(xᵢ, x) this costs an 8 × 8 Cholesky factorisation
//! per point, and it is tight where the full forward substitution is least informative after a
//! few rows: at points near observations that came late (a UCB agent's data cluster where it
//! plays), which the first rows of L do not see.
//!
//! **Rounding.** The bound must hold for the computed values. μ_r is shared with the exact path,
//! so only the two quadratic forms differ. A Cholesky factor computed in floating point is the
//! exact factor of K + aI + E with ‖E‖₂ ≤ c·n·ε·‖|L||Lᵀ|‖₂ ≤ c·n²·ε·(k_max + a), where the rows
//! of L have squared norms K_ii + a ≤ k_max + a (Higham 2002, Thm 10.3 and 8.5, for the
//! factorisation and for the solve). A perturbation E changes kᵀ(K + aI)⁻¹k by at most
//! ‖E‖₂/a · kᵀ(K + aI)⁻¹k/(1 − ‖E‖₂/a) ≤ 2‖E‖₂/a · k(x, x). The bound therefore adds
//! 8(t² + s²)·ε·(k_max + a)/a · k(x, x) (c = 2 with a factor two to spare) to ρ_{S,r}², and is
//! not used (it is +∞) once that margin exceeds k(x, x)/4 or a factorisation fails. The
//! argument covers factors built by appends and refactorisations; after a sliding-window
//! downdate or a clamped pivot (`super::health`) the caller does not use these bounds.

/// Observations per point in S.
pub(crate) const NEIGHBOURS: usize = 8;

/// What the bounds need of the posterior and of the batch.
pub(crate) struct LocalProblem<'a, G: Fn(usize, usize) -> f64> {
    /// k(xᵢ, q_j), row-major t × m.
    pub cross: &'a [f64],
    /// Number of points m.
    pub len: usize,
    /// k(xₚ, x_q) between observations.
    pub gram: G,
    /// max_i k(xᵢ, xᵢ) over the observations.
    pub max_prior: f64,
    /// a_r, one per regulariser.
    pub regularisers: &'a [f64],
    /// k(q_j, q_j).
    pub prior_variance: &'a [f64],
    /// μ_r(q_j), regulariser-major.
    pub means: &'a [f64],
    /// w_r ≥ 0.
    pub widths: &'a [f64],
}

/// An upper bound on U(q_j) for every point (+∞ where none is available).
pub(crate) fn upper_bounds<G: Fn(usize, usize) -> f64>(problem: &LocalProblem<'_, G>) -> Vec<f64> {
    let m = problem.len;
    let t = problem.cross.len() / m.max(1);
    let mut bounds = vec![f64::INFINITY; m];
    if t < 2 * NEIGHBOURS || m == 0 {
        return bounds;
    }
    let nearest = nearest(problem.cross, m);
    let mut shared = SharedGram::new(&nearest, t);
    let s = NEIGHBOURS;
    let mut gram = [[0.0; NEIGHBOURS]; NEIGHBOURS];
    let mut factor = [[0.0; NEIGHBOURS]; NEIGHBOURS];
    let mut z = [0.0; NEIGHBOURS];
    let tt = (t * t + s * s) as f64;
    let n_reg = problem.regularisers.len();
    let mut lanes = Lanes::default();
    let mut quads = vec![0.0; n_reg];
    let mut factored = vec![false; n_reg];
    for (j, bound) in bounds.iter_mut().enumerate() {
        let idx = &nearest[j * s..(j + 1) * s];
        for p in 0..s {
            for q in 0..=p {
                gram[p][q] = shared.get(idx[p], idx[q], &problem.gram);
            }
        }
        let mut k = [0.0; NEIGHBOURS];
        for (kp, &i) in k.iter_mut().zip(idx) {
            *kp = problem.cross[i * m + j];
        }
        let prior = problem.prior_variance[j];
        if n_reg == 1 {
            // One regulariser (AMM-UCB and the other single-term bounds): no lanes to fill.
            factored[0] = cholesky(&gram, problem.regularisers[0], &mut factor);
            if factored[0] {
                quads[0] = solved_norm_sq(&factor, &k, &mut z);
            }
        } else {
            // Several regularisers: the same 8 × 8 Gram matrix factorised for LANES shifts at
            // once, each lane the scalar factorisation's operations in the same order (the
            // same bits), so that the dependent divisions and square roots of one
            // factorisation overlap with the others'.
            for (group, a) in problem.regularisers.chunks(LANES).enumerate() {
                let mut shifts = [1.0; LANES];
                shifts[..a.len()].copy_from_slice(a);
                let ok = lanes.factorise(&gram, &shifts, &k);
                for (l, _) in a.iter().enumerate() {
                    factored[group * LANES + l] = ok[l];
                    quads[group * LANES + l] = lanes.quad[l];
                }
            }
        }
        for (r, (&a, &width)) in problem.regularisers.iter().zip(problem.widths).enumerate() {
            let margin = 8.0 * tt * f64::EPSILON * (problem.max_prior + a) / a * prior;
            let usable = margin <= 0.25 * prior;
            if !usable || !factored[r] {
                *bound = f64::INFINITY;
                break;
            }
            // quads[r] = ‖L_S⁻¹k_S(x)‖² = k_Sᵀ(K_S + aI)⁻¹k_S.
            let variance = (prior - quads[r]).max(0.0) + margin;
            let value = problem.means[r * m + j] + width * variance.sqrt();
            if value.is_nan() {
                // A NaN mean: no bound, so that the point reaches the final check.
                *bound = f64::INFINITY;
                break;
            }
            *bound = bound.min(value);
        }
    }
    bounds
}

/// ‖z‖² for z = L⁻¹k, by forward substitution with the lower factor `factor` (z in `z`).
fn solved_norm_sq(
    factor: &[[f64; NEIGHBOURS]; NEIGHBOURS],
    k: &[f64; NEIGHBOURS],
    z: &mut [f64; NEIGHBOURS],
) -> f64 {
    let mut quad = 0.0;
    for p in 0..NEIGHBOURS {
        let mut v = k[p];
        for q in 0..p {
            v -= factor[p][q] * z[q];
        }
        z[p] = v / factor[p][p];
        quad += z[p] * z[p];
    }
    quad
}

/// Regularisers factorised together by [`Lanes::factorise`].
const LANES: usize = 4;

/// [`cholesky`] and [`solved_norm_sq`] for [`LANES`] shifts of one Gram matrix at once, entry
/// by entry across the lanes: each lane performs the scalar routines' operations in their
/// order, so its results are theirs bit for bit (a lane whose factorisation fails goes on with
/// NaNs and is reported as failed).
#[derive(Default)]
struct Lanes {
    factor: [[[f64; LANES]; NEIGHBOURS]; NEIGHBOURS],
    z: [[f64; LANES]; NEIGHBOURS],
    /// ‖z‖² per lane.
    quad: [f64; LANES],
}

impl Lanes {
    /// Factorises `gram` + a_l I for every lane l and solves with `k`; whether each lane's
    /// pivots were all positive.
    fn factorise(
        &mut self,
        gram: &[[f64; NEIGHBOURS]; NEIGHBOURS],
        shifts: &[f64; LANES],
        k: &[f64; NEIGHBOURS],
    ) -> [bool; LANES] {
        let mut ok = [true; LANES];
        let f = &mut self.factor;
        for p in 0..NEIGHBOURS {
            for q in 0..=p {
                let mut v = [0.0; LANES];
                for l in 0..LANES {
                    v[l] = gram[p][q] + if p == q { shifts[l] } else { 0.0 };
                }
                for (x, y) in f[p][..q].iter().zip(&f[q][..q]) {
                    for l in 0..LANES {
                        v[l] -= x[l] * y[l];
                    }
                }
                if p == q {
                    for l in 0..LANES {
                        ok[l] &= v[l] > 0.0;
                        f[p][p][l] = v[l].sqrt();
                    }
                } else {
                    for l in 0..LANES {
                        f[p][q][l] = v[l] / f[q][q][l];
                    }
                }
            }
        }
        let z = &mut self.z;
        let mut quad = [0.0; LANES];
        for p in 0..NEIGHBOURS {
            let mut v = [k[p]; LANES];
            for q in 0..p {
                for l in 0..LANES {
                    v[l] -= f[p][q][l] * z[q][l];
                }
            }
            for l in 0..LANES {
                z[p][l] = v[l] / f[p][p][l];
                quad[l] += z[p][l] * z[p][l];
            }
        }
        self.quad = quad;
        ok
    }
}

/// Kernel values between observations, each computed once per call: the points' neighbour sets
/// overlap where the observations cluster (a UCB agent's do), so that many of the 28 values of
/// an 8 × 8 Gram matrix were computed for an earlier point. (In a 1000-round AMM run of
/// `kbandit reproduce table1`, Matérn 5/2 with ℓ = 0.5, a quarter fewer kernel evaluations.)
struct SharedGram {
    /// The position of observation i among the distinct neighbours, or `u32::MAX`.
    position: Vec<u32>,
    /// Distinct neighbours u; the values, u × u lower triangle row-major, NaN until computed.
    /// Empty when u exceeds [`SharedGram::MAX`], and then every value is computed afresh.
    values: Vec<f64>,
}

impl SharedGram {
    /// Most distinct neighbours for which the values are kept (a 256 × 256 triangle, 256 KB).
    const MAX: usize = 256;

    fn new(nearest: &[usize], t: usize) -> Self {
        let mut position = vec![u32::MAX; t];
        let mut distinct = 0;
        for &i in nearest {
            if position[i] == u32::MAX {
                position[i] = distinct as u32;
                distinct += 1;
            }
        }
        let values = if distinct <= Self::MAX {
            vec![f64::NAN; distinct * (distinct + 1) / 2]
        } else {
            Vec::new()
        };
        Self { position, values }
    }

    /// k(x_p, x_q), from `gram` the first time.
    fn get(&mut self, p: usize, q: usize, gram: &impl Fn(usize, usize) -> f64) -> f64 {
        if self.values.is_empty() {
            return gram(p, q);
        }
        let (a, b) = (self.position[p] as usize, self.position[q] as usize);
        let (row, column) = (a.max(b), a.min(b));
        let slot = &mut self.values[row * (row + 1) / 2 + column];
        if slot.is_nan() {
            // A NaN kernel value is computed again each time; it fails the factorisation anyway.
            *slot = if row == a { gram(p, q) } else { gram(q, p) };
        }
        *slot
    }
}

/// Lower Cholesky factor of `gram` + aI (its lower triangle) into `factor`; false if a pivot is
/// not positive.
fn cholesky(
    gram: &[[f64; NEIGHBOURS]; NEIGHBOURS],
    a: f64,
    factor: &mut [[f64; NEIGHBOURS]; NEIGHBOURS],
) -> bool {
    for p in 0..NEIGHBOURS {
        for q in 0..=p {
            let mut v = gram[p][q] + if p == q { a } else { 0.0 };
            for (x, y) in factor[p][..q].iter().zip(&factor[q][..q]) {
                v -= x * y;
            }
            if p == q {
                if v.is_nan() || v <= 0.0 {
                    return false;
                }
                factor[p][p] = v.sqrt();
            } else {
                factor[p][q] = v / factor[q][q];
            }
        }
    }
    true
}

/// For every point j, the indices of [`NEIGHBOURS`] observations with the largest k(xᵢ, q_j)
/// (ties and NaNs in any order), point-major.
fn nearest(cross: &[f64], m: usize) -> Vec<usize> {
    let mut kept = Kept {
        values: vec![f64::NEG_INFINITY; m * NEIGHBOURS],
        indices: vec![0; m * NEIGHBOURS],
        threshold: vec![f64::NEG_INFINITY; m],
        slot: vec![0; m],
    };
    // The most recent rows first: a UCB agent's latest observations are the likeliest
    // neighbours of the points that matter, so the thresholds rise early and the group test
    // skips most of the older rows.
    let t = cross.len() / m;
    let recent = t.saturating_sub(64);
    let whole = m / 8 * 8;
    for i in (recent..t).chain(0..recent) {
        let row = &cross[i * m..(i + 1) * m];
        // Most groups of eight points beat no threshold: a branch-free test of the group
        // first (a few vector comparisons), the points one by one only after a hit.
        for g in (0..whole).step_by(8) {
            let values: &[f64; 8] = row[g..g + 8].try_into().expect("eight values");
            let lows: &[f64; 8] = kept.threshold[g..g + 8].try_into().expect("eight values");
            let mut hit = false;
            for (&k, &low) in values.iter().zip(lows) {
                hit |= k > low;
            }
            if hit {
                for (o, &k) in values.iter().enumerate() {
                    kept.offer(g + o, k, i);
                }
            }
        }
        for (j, &k) in row.iter().enumerate().skip(whole) {
            kept.offer(j, k, i);
        }
    }
    kept.indices
}

/// The [`NEIGHBOURS`] largest values seen so far for every point, point-major.
struct Kept {
    values: Vec<f64>,
    /// Their observations.
    indices: Vec<usize>,
    /// The smallest kept value of each point, and its position.
    threshold: Vec<f64>,
    slot: Vec<usize>,
}

impl Kept {
    /// Keeps k = k(xᵢ, q_j) among point j's values if it beats the smallest of them.
    fn offer(&mut self, j: usize, k: f64, i: usize) {
        if k > self.threshold[j] {
            let s = NEIGHBOURS;
            let values = &mut self.values[j * s..(j + 1) * s];
            values[self.slot[j]] = k;
            self.indices[j * s + self.slot[j]] = i;
            let (at, low) =
                values
                    .iter()
                    .enumerate()
                    .fold(
                        (0, f64::INFINITY),
                        |(at, low), (p, &v)| if v < low { (p, v) } else { (at, low) },
                    );
            self.slot[j] = at;
            self.threshold[j] = low;
        }
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use super::*;

    fn rbf(x: &[f64], y: &[f64], lengthscale: f64) -> f64 {
        let d2: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
        (-d2 / (2.0 * lengthscale * lengthscale)).exp()
    }

    /// Observation sets where the bounds are most likely to break: exact duplicates, clusters
    /// 10⁻⁸ wide, mirrored pairs, points an ulp apart, and a plain spread; 2-D.
    fn observation_sets() -> Vec<(&'static str, Vec<[f64; 2]>)> {
        let spread: Vec<[f64; 2]> = (0..40)
            .map(|i| {
                [
                    (i as f64 * 0.618_034).fract(),
                    (i as f64 * 0.414_214).fract(),
                ]
            })
            .collect();
        let duplicates: Vec<[f64; 2]> = (0..40).map(|i| spread[i % 7]).collect();
        let clusters: Vec<[f64; 2]> = (0..40)
            .map(|i| {
                let c = spread[i % 3];
                [c[0] + (i as f64) * 1e-8 / 40.0, c[1]]
            })
            .collect();
        let mirrored: Vec<[f64; 2]> = (0..40)
            .map(|i| {
                let p = spread[i / 2];
                if i % 2 == 0 {
                    p
                } else {
                    [1.0 - p[0], 1.0 - p[1]]
                }
            })
            .collect();
        let ulps: Vec<[f64; 2]> = (0..40)
            .map(|i| {
                let p = spread[i % 10];
                let mut x = p[0];
                for _ in 0..i / 10 {
                    x = x.next_up();
                }
                [x, p[1]]
            })
            .collect();
        vec![
            ("spread", spread),
            ("duplicates", duplicates),
            ("clusters", clusters),
            ("mirrored", mirrored),
            ("ulps apart", ulps),
        ]
    }

    /// U_S ≥ U, with U from nalgebra's dense Cholesky of K_t + aI, at points on the data, next to
    /// it, between it and far from it, for several length-scales and regularisers; and the
    /// bound is finite and not far above U where the data pin x down.
    #[test]
    fn local_bounds_are_upper_bounds_on_structured_data() {
        let regularisers = [1e-6, 1e-2, 1.0];
        let widths = [2.0, 1.0, 0.5];
        let mut finite = 0;
        for (name, data) in observation_sets() {
            for lengthscale in [0.05, 0.3, 10.0] {
                let t = data.len();
                let mut queries: Vec<[f64; 2]> = data.iter().take(10).copied().collect();
                queries.push([data[0][0].next_up(), data[0][1]]);
                queries.push([0.5, 0.5]);
                queries.push([3.0, -2.0]);
                queries.push([
                    (data[0][0] + data[1][0]) / 2.0,
                    (data[0][1] + data[1][1]) / 2.0,
                ]);
                let m = queries.len();
                let cross: Vec<f64> = (0..t)
                    .flat_map(|i| queries.iter().map(move |q| (i, *q)))
                    .map(|(i, q)| rbf(&data[i], &q, lengthscale))
                    .collect();
                let prior = vec![1.0; m];
                // Means differing by point and regulariser, as μ_r would.
                let means: Vec<f64> = (0..regularisers.len() * m)
                    .map(|k| ((k * 37 % 11) as f64 - 5.0) * 0.1)
                    .collect();
                let bounds = upper_bounds(&LocalProblem {
                    cross: &cross,
                    len: m,
                    gram: |p, q| rbf(&data[p], &data[q], lengthscale),
                    max_prior: 1.0,
                    regularisers: &regularisers,
                    prior_variance: &prior,
                    means: &means,
                    widths: &widths,
                });
                for j in 0..m {
                    let mut u = f64::INFINITY;
                    for (r, &a) in regularisers.iter().enumerate() {
                        let gram = DMatrix::from_fn(t, t, |p, q| {
                            rbf(&data[p], &data[q], lengthscale) + if p == q { a } else { 0.0 }
                        });
                        let k = DVector::from_fn(t, |i, _| cross[i * m + j]);
                        let solved = gram
                            .cholesky()
                            .expect("K + aI is positive definite")
                            .solve(&k);
                        let variance = (1.0 - k.dot(&solved)).max(0.0);
                        u = u.min(means[r * m + j] + widths[r] * variance.sqrt());
                    }
                    assert!(
                        bounds[j] >= u,
                        "{name}, ℓ = {lengthscale}, point {j} {:?}: bound {} below U {u}",
                        queries[j],
                        bounds[j]
                    );
                    if bounds[j].is_finite() {
                        finite += 1;
                    }
                }
            }
        }
        // Not vacuous: with a = 1 in the mix the margin is small, so most bounds are finite.
        assert!(finite > 150, "only {finite} finite bounds");
    }

    /// The neighbours are the observations of largest kernel value, whatever the row order:
    /// with fewer than eight points (no whole group), a whole number of groups, and groups plus
    /// a remainder; with distinct values and with many ties.
    #[test]
    fn nearest_finds_the_largest_kernel_values() {
        let t = 100;
        for m in [3, 8, 21] {
            for modulus in [1009, 7] {
                let cross: Vec<f64> = (0..t * m).map(|k| ((k * 7919) % modulus) as f64).collect();
                let nearest = nearest(&cross, m);
                for j in 0..m {
                    let mut want: Vec<f64> = (0..t).map(|i| cross[i * m + j]).collect();
                    want.sort_by(|a, b| b.total_cmp(a));
                    let chosen = &nearest[j * NEIGHBOURS..(j + 1) * NEIGHBOURS];
                    let mut distinct = chosen.to_vec();
                    distinct.sort_unstable();
                    distinct.dedup();
                    assert_eq!(distinct.len(), NEIGHBOURS, "m = {m}, point {j}: {chosen:?}");
                    let mut got: Vec<f64> = chosen.iter().map(|&i| cross[i * m + j]).collect();
                    got.sort_by(|a, b| b.total_cmp(a));
                    assert_eq!(
                        got,
                        want[..NEIGHBOURS],
                        "m = {m}, modulus {modulus}, point {j}"
                    );
                }
            }
        }
    }

    /// The shared Gram values are the kernel's, in either order of the pair, whether they are
    /// kept (few distinct neighbours) or computed afresh (more than `SharedGram::MAX`).
    #[test]
    fn shared_gram_values_are_the_kernels() {
        let gram = |p: usize, q: usize| ((p * 31 + q * 17) % 101) as f64 + (p.min(q) as f64);
        let symmetric = |p: usize, q: usize| gram(p.max(q), p.min(q));
        let t = 1000;
        // Neighbour lists cycling through `distinct` observations, on both sides of the limit.
        for distinct in [40, SharedGram::MAX, SharedGram::MAX + 1, 400] {
            let nearest: Vec<usize> = (0..8 * 125).map(|k| (k % distinct) * 2).collect();
            let mut shared = SharedGram::new(&nearest, t);
            assert_eq!(shared.values.is_empty(), distinct > SharedGram::MAX);
            for pass in 0..2 {
                for (k, &p) in nearest.iter().enumerate() {
                    let q = nearest[(k * 7 + pass) % nearest.len()];
                    assert_eq!(shared.get(p, q, &symmetric), symmetric(p, q));
                    assert_eq!(shared.get(q, p, &symmetric), symmetric(p, q));
                }
            }
        }
    }

    /// The lanes factorise and solve with the scalar routines' bits, lane by lane: 8 × 8 Gram
    /// matrices of the structured observation sets (exact duplicates make them singular,
    /// clusters and ulp-apart points nearly so), an indefinite one and one with a NaN, each with
    /// shifts from 10⁻³⁰⁰ to 10³ side by side, so that lanes whose pivots fail sit next to lanes
    /// that succeed. (Fails if a lane sums in another order: with the factorisation's
    /// subtractions run over the earlier columns in reverse, it did.)
    #[test]
    fn lanes_have_the_scalar_bits_in_every_lane() {
        let mut grams: Vec<(String, [[f64; NEIGHBOURS]; NEIGHBOURS], [f64; NEIGHBOURS])> = vec![];
        for (name, data) in observation_sets() {
            for lengthscale in [0.05, 0.3, 10.0] {
                for offset in [0, 5, 30] {
                    let mut gram = [[0.0; NEIGHBOURS]; NEIGHBOURS];
                    let mut k = [0.0; NEIGHBOURS];
                    let x = [0.4, 0.6];
                    for p in 0..NEIGHBOURS {
                        for q in 0..NEIGHBOURS {
                            gram[p][q] = rbf(&data[offset + p], &data[offset + q], lengthscale);
                        }
                        k[p] = rbf(&data[offset + p], &x, lengthscale);
                    }
                    grams.push((format!("{name}, ℓ = {lengthscale}, from {offset}"), gram, k));
                }
            }
        }
        let mut indefinite = [[0.0; NEIGHBOURS]; NEIGHBOURS];
        for (p, row) in indefinite.iter_mut().enumerate() {
            for (q, v) in row.iter_mut().enumerate() {
                *v = if p == q { 1.0 } else { 0.9 } - if p + q == 9 { 0.3 } else { 0.0 };
            }
            row[p] -= if p == 5 { 1.5 } else { 0.0 };
        }
        grams.push(("indefinite".into(), indefinite, [0.5; NEIGHBOURS]));
        let mut nan = indefinite;
        nan[6][3] = f64::NAN;
        grams.push(("NaN entry".into(), nan, [0.5; NEIGHBOURS]));
        let shifts = [
            [1e-300, 1e-12, 1e-6, 1.0],
            [1e-3, 0.5, 2.0, 1e3],
            [1e-16, 1e-300, 1e3, 1e-9],
        ];
        let (mut failed, mut solved) = (0, 0);
        for (name, gram, k) in &grams {
            for group in &shifts {
                let mut lanes = Lanes::default();
                let ok = lanes.factorise(gram, group, k);
                for (l, &a) in group.iter().enumerate() {
                    let mut factor = [[0.0; NEIGHBOURS]; NEIGHBOURS];
                    let mut z = [0.0; NEIGHBOURS];
                    let scalar = cholesky(gram, a, &mut factor);
                    assert_eq!(ok[l], scalar, "{name}, a = {a}: pivots");
                    if scalar {
                        let quad = solved_norm_sq(&factor, k, &mut z);
                        assert_eq!(
                            lanes.quad[l].to_bits(),
                            quad.to_bits(),
                            "{name}, a = {a}: ‖z‖² {} in the lane, {quad} alone",
                            lanes.quad[l]
                        );
                        solved += 1;
                    } else {
                        failed += 1;
                    }
                }
            }
        }
        // Both kinds of lane occur, next to each other.
        assert!(
            failed >= 10 && solved >= 100,
            "{failed} failed, {solved} solved"
        );
    }
}
