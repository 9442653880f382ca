//! Gradients of CMM-UCB (Flynn & Reeb 2024 §4.3, Thm 4.5, Eq. 12) and of the sketched bounds
//! BKB (Calandriello et al. 2019), BBKB (Calandriello et al. 2020) and EK-UCB (Zenati et al.
//! 2022), and the sketched bounds' pending variance.
//!
//! References, none of them the code under test:
//! - central differences (a fourth-order, Richardson-extrapolated stencil) of each bound's own
//!   `evaluate`, after every one of 30 observations, at random points, at observed inputs, a
//!   few ulps and 10⁻⁷ away from them, at the sketches' anchors and with repeated points in
//!   the data;
//! - for CMM, the dual objective U_a(x) = μ_a(x) + √(R̃_a²/a)·ρ_a(x) formed with dense nalgebra
//!   Cholesky solves of K_t + aI and R_t from `common::socp::radius_sq`, minimised over ln a on
//!   a fine grid refined by golden sections, with its gradient by the hand-written RBF
//!   derivative;
//! - for the pending variance, the DTC variance recomputed densely from the dictionary, and the
//!   sketched posterior that actually observes the pending points with its dictionary fixed.
//!
//! The tolerances are relative to the scale of the gradient: ‖g − g_ref‖_∞ ≤ tol·S with
//! S = ‖g_ref‖_∞ + max(|mean|, |ucb|, |lcb|)/ℓ (the bound's size over the length-scale ℓ, so
//! that a gradient near a stationary point is not held to a relative accuracy its neighbours'
//! values cannot give).

use kernel_bandits::posterior::SketchedPosterior;
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

const DIM: usize = 2;
const LENGTHSCALE: f64 = 0.3;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn target(x: &[f64]) -> f64 {
    0.5 * (3.0 * x[0]).sin() * (2.0 * x[1]).cos() + 0.3 * x[1]
}

/// 30 observations in [0, 1]²: fresh random points, with points 10 and 20 repeating earlier
/// ones (duplicates in the data).
fn observations(seed: u64, noise: f64) -> Vec<(Vec<f64>, f64)> {
    let mut r = rng(seed);
    let mut out: Vec<(Vec<f64>, f64)> = Vec::new();
    for t in 0..30 {
        let x = if t == 10 || t == 20 {
            out[t / 3].0.clone()
        } else {
            vec![r.random::<f64>(), r.random::<f64>()]
        };
        let e: f64 = r.sample(StandardNormal);
        let y = target(&x) + noise * e;
        out.push((x, y));
    }
    out
}

/// (mean, lcb, ucb) at x from `evaluate`.
fn values<B: ConfidenceBound>(bound: &B, x: &[f64]) -> [f64; 3] {
    let b = bound.bounds(&vec![x.to_vec()]).unwrap();
    [b.mean[0], b.lcb[0], b.ucb[0]]
}

/// How a query point is checked.
#[derive(Clone, Copy)]
enum Step {
    /// Fourth-order central differences with this step (the bound is smooth around x).
    Smooth(f64),
    /// Values and finiteness only (see [`queries`]).
    Unchecked,
}

/// Fourth-order central differences of (mean, lcb, ucb) at x with step h.
fn differences<B: ConfidenceBound>(bound: &B, x: &[f64], h: f64) -> [Vec<f64>; 3] {
    let mut out = [vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; x.len()]];
    for k in 0..x.len() {
        let at = |s: f64| {
            let mut y = x.to_vec();
            y[k] += s;
            values(bound, &y)
        };
        let (p1, m1, p2, m2) = (at(h), at(-h), at(2.0 * h), at(-2.0 * h));
        for c in 0..3 {
            out[c][k] = (8.0 * (p1[c] - m1[c]) - (p2[c] - m2[c])) / (12.0 * h);
        }
    }
    out
}

fn inf_norm(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// ‖g − reference‖_∞ / S (see the module documentation).
fn relative_error(g: &[f64], reference: &[f64], values: [f64; 3]) -> f64 {
    let size = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let scale = inf_norm(reference) + size / LENGTHSCALE;
    let diff: Vec<f64> = g.iter().zip(reference).map(|(a, b)| a - b).collect();
    inf_norm(&diff) / scale
}

/// Checks the bound's gradient at x against central differences of its `evaluate`, and that
/// its values are `evaluate`'s to the bit; returns the largest relative error.
fn check_against_differences<B: ConfidenceBound>(
    bound: &B,
    x: &[f64],
    step: Step,
    what: &str,
) -> f64 {
    let g = bound.gradient(x).unwrap();
    let v = values(bound, x);
    assert_eq!(
        [g.mean, g.lcb, g.ucb],
        v,
        "{what}: the gradient's values are not evaluate's at {x:?}"
    );
    let (u, ug) = bound.ucb_gradient(x).unwrap();
    assert_eq!(u, g.ucb, "{what}: ucb_gradient's value");
    assert_eq!(ug, g.ucb_gradient, "{what}: ucb_gradient's gradient");
    assert!(
        g.mean_gradient
            .iter()
            .chain(&g.lcb_gradient)
            .chain(&g.ucb_gradient)
            .all(|v| v.is_finite()),
        "{what}: non-finite gradient at {x:?}"
    );
    let (fd, tolerance) = match step {
        Step::Smooth(h) => (differences(bound, x, h), 1e-6),
        Step::Unchecked => return 0.0,
    };
    let errors = [
        relative_error(&g.mean_gradient, &fd[0], v),
        relative_error(&g.lcb_gradient, &fd[1], v),
        relative_error(&g.ucb_gradient, &fd[2], v),
    ];
    for (e, name) in errors.iter().zip(["mean", "lcb", "ucb"]) {
        assert!(
            *e <= tolerance,
            "{what}: {name} gradient off by {e:.2e} at {x:?}: {:?} vs differences {:?}",
            match name {
                "mean" => &g.mean_gradient,
                "lcb" => &g.lcb_gradient,
                _ => &g.ucb_gradient,
            },
            fd[["mean", "lcb", "ucb"]
                .iter()
                .position(|n| *n == name)
                .unwrap()]
        );
    }
    errors.into_iter().fold(0.0, f64::max)
}

/// The finite-difference step away from the data: 10⁻³ℓ.
const STEP: f64 = 1e-3 * LENGTHSCALE;

/// The query points after an update, each with the finite-difference step to check it with:
/// random ones, observed inputs, and points 10⁻²ℓ, 10⁻⁷ and a few ulps from the latest input.
/// `cusp` is for CMM-UCB: where the a → 0 limit is its minimum at an observed input, the bound
/// has a cusp there (nearby, ρ_0² > 0 adds a term growing like the distance d), smooth only
/// on the scale d; at d = 10⁻²ℓ a step of d/10 resolves it (at 10⁻³ℓ, a step small enough
/// for the curvature meets the noise of the minimisation over a), while at 10⁻⁷ and a few ulps
/// the bound's own ρ_0² = k(x, x) − Σp²/λ has a relative rounding error of 10⁻³ and more, so
/// no difference quotient is accurate there: only finiteness and the values are checked. At
/// the observed inputs themselves the gradient returned is the smooth part's; central
/// differences converge to it only like h (the cusp's expansion has terms such as h|h| and
/// non-polynomial ones; 10⁻³ relative seen at h = 10⁻⁴ℓ), so CMM-UCB's gradient there is
/// checked against the dense a → 0 limit in `cmm_gradient_matches_the_dense_dual` instead.
fn queries(
    r: &mut ChaCha8Rng,
    observed: &[Vec<f64>],
    cusp: bool,
) -> Vec<(Vec<f64>, Step, &'static str)> {
    let mut out: Vec<(Vec<f64>, Step, &'static str)> = (0..3)
        .map(|_| {
            let x = vec![r.random::<f64>(), r.random::<f64>()];
            (x, Step::Smooth(STEP), "random")
        })
        .collect();
    let on_data = if cusp {
        Step::Unchecked
    } else {
        Step::Smooth(STEP)
    };
    if let Some(last) = observed.last() {
        out.push((last.clone(), on_data, "latest observed input"));
        let close = if cusp { STEP / 10.0 } else { STEP };
        out.push((
            last.iter().map(|v| v + 1e-2 * LENGTHSCALE).collect(),
            Step::Smooth(close),
            "1e-2 ℓ from the latest input",
        ));
        let tiny = if cusp {
            Step::Unchecked
        } else {
            Step::Smooth(STEP)
        };
        let ulps: Vec<f64> = last
            .iter()
            .map(|v| f64::from_bits(v.to_bits() + 3))
            .collect();
        out.push((ulps, tiny, "a few ulps from the latest input"));
        out.push((
            last.iter().map(|v| v + 1e-7).collect(),
            tiny,
            "1e-7 from the latest input",
        ));
    }
    if observed.len() > 3 {
        out.push((
            observed[observed.len() / 3].clone(),
            on_data,
            "earlier observed input",
        ));
    }
    out
}

fn cmm(sigma: f64) -> Cmm<Rbf> {
    let params = BoundParams::new()
        .sigma(sigma)
        .norm_bound(3.0)
        .delta(0.01)
        .scale(1.0);
    Cmm::new(Rbf::new(LENGTHSCALE).unwrap(), params).unwrap()
}

/// CMM-UCB's gradients against central differences after each of 30 observations (bordered
/// updates, a truncation that forces a full decomposition, duplicates).
#[test]
fn cmm_gradient_matches_differences_along_a_sequence() {
    let mut bound = cmm(0.1);
    let data = observations(1, 0.1);
    let mut r = rng(2);
    let mut worst: f64 = 0.0;
    let mut observed = Vec::new();
    assert!(
        check_against_differences(&bound, &[0.3, 0.6], Step::Smooth(STEP), "cmm, no data") <= 1e-6
    );
    for (t, (x, y)) in data.iter().enumerate() {
        bound.observe(x, *y).unwrap();
        observed.push(x.clone());
        if t == 15 {
            // Forget the latest two and observe them again: no cached decomposition is left
            // to update, so the next query decomposes in full.
            bound.truncate(t - 1);
            bound.observe(&data[t - 1].0, data[t - 1].1).unwrap();
            bound.observe(x, *y).unwrap();
        }
        for (q, step, what) in queries(&mut r, &observed, true) {
            let e =
                check_against_differences(&bound, &q, step, &format!("cmm t = {}, {what}", t + 1));
            worst = worst.max(e);
        }
    }
    let health = bound.health();
    assert!(health.bordered_updates > 0 && health.full_decompositions >= 2);
    println!("cmm: largest relative error {worst:.2e}, health {health:?}");
}

/// A Gram matrix by the RBF formula, written out here.
fn rbf(x: &[f64], y: &[f64]) -> f64 {
    let d2: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
    (-0.5 * d2 / (LENGTHSCALE * LENGTHSCALE)).exp()
}

/// ∂k(x, y)/∂x for the RBF kernel, written out here.
fn rbf_gradient(x: &[f64], y: &[f64]) -> Vec<f64> {
    let k = rbf(x, y);
    x.iter()
        .zip(y)
        .map(|(a, b)| -k * (a - b) / (LENGTHSCALE * LENGTHSCALE))
        .collect()
}

/// The dual objective of Flynn & Reeb 2024 Eq. 12 at one a, densely: (U_a(x) or −L_a(x),
/// its gradient in x) for sign ±1.
struct DenseDual {
    xs: Vec<Vec<f64>>,
    y: DVector<f64>,
    gram: DMatrix<f64>,
    radius_sq: f64,
    norm_sq: f64,
}

impl DenseDual {
    fn new(xs: &[Vec<f64>], y: &[f64], sigma: f64, b: f64, delta: f64) -> Self {
        let t = xs.len();
        let gram = DMatrix::from_fn(t, t, |i, j| rbf(&xs[i], &xs[j]));
        let y = DVector::from_column_slice(y);
        let radius_sq = crate::common::socp::radius_sq(&gram, &y, sigma, 1.0, delta);
        Self {
            xs: xs.to_vec(),
            y,
            gram,
            radius_sq,
            norm_sq: b * b,
        }
    }

    /// At an observed input x = x_j, ρ_a²/a = e_jᵀK(K + aI)⁻¹e_j and
    /// ∇(ρ_a²/a) = 2Jᵀ(K + aI)⁻¹e_j (as K − K(K + aI)⁻¹K = aK(K + aI)⁻¹ and row j of J is 0),
    /// which stay accurate as a → 0; elsewhere ρ_a² = k(x, x) − k_tᵀ(K + aI)⁻¹k_t and
    /// ∇ρ_a² = −2Jᵀ(K + aI)⁻¹k_t.
    fn objective(&self, x: &[f64], a: f64, sign: f64) -> (f64, Vec<f64>) {
        let t = self.xs.len();
        let chol = (&self.gram + DMatrix::identity(t, t) * a)
            .cholesky()
            .unwrap();
        let kx = DVector::from_fn(t, |i, _| rbf(x, &self.xs[i]));
        let alpha = chol.solve(&self.y);
        let mu = kx.dot(&alpha);
        let radius = self.radius_sq + a * self.norm_sq - a * self.y.dot(&alpha);
        // (ρ_a²/a, the coefficients c with ∇(ρ_a²/a) = Jᵀc).
        let (scaled_variance, coefficients) = match self.xs.iter().position(|xi| xi == x) {
            Some(j) => {
                let e = DVector::from_fn(t, |i, _| if i == j { 1.0 } else { 0.0 });
                let solved = chol.solve(&e);
                ((&self.gram * &solved)[j], solved * 2.0)
            }
            None => {
                let beta = chol.solve(&kx);
                ((1.0 - kx.dot(&beta)) / a, beta * (-2.0 / a))
            }
        };
        let spread = (radius * scaled_variance).sqrt();
        let value = sign * mu + spread;
        let mut gradient = vec![0.0; x.len()];
        for i in 0..t {
            let g = rbf_gradient(x, &self.xs[i]);
            for k in 0..x.len() {
                // ∇μ = Jᵀα (k(x, x) = 1 is constant).
                gradient[k] +=
                    sign * alpha[i] * g[k] + radius * coefficients[i] * g[k] / (2.0 * spread);
            }
        }
        (value, gradient)
    }

    /// min over ln a of the objective: a grid of 4001 points over ln a0 ± 30, then golden
    /// sections around the lowest.
    fn minimise(&self, x: &[f64], a0: f64, sign: f64) -> (f64, f64) {
        let f = |s: f64| self.objective(x, s.exp(), sign).0;
        let (lo, hi) = (a0.ln() - 30.0, a0.ln() + 30.0);
        let n = 4000;
        let step = (hi - lo) / n as f64;
        let best = (0..=n)
            .map(|k| lo + k as f64 * step)
            .min_by(|a, b| f(*a).total_cmp(&f(*b)))
            .unwrap();
        let (mut a, mut b) = (best - step, best + step);
        let g = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..200 {
            let (c, d) = (b - g * (b - a), a + g * (b - a));
            if f(c) < f(d) {
                b = d;
            } else {
                a = c;
            }
        }
        let s = 0.5 * (a + b);
        (s.exp(), f(s))
    }
}

/// CMM-UCB's gradient against the dense dual: its UCB and LCB match a fine minimisation over
/// a, and its gradients match the dense ∇U_a at the reported a and at the dense minimiser.
#[test]
fn cmm_gradient_matches_the_dense_dual() {
    let (sigma, b, delta) = (0.1, 3.0, 0.01);
    let mut r = rng(7);
    // Well-separated points (no eigenvalue near rounding, so no slack in the bound).
    let xs: Vec<Vec<f64>> = (0..12)
        .map(|i| vec![(i % 4) as f64 / 3.0, (i / 4) as f64 / 2.0])
        .collect();
    let y: Vec<f64> = xs
        .iter()
        .map(|x| target(x) + sigma * r.sample::<f64, _>(StandardNormal))
        .collect();
    let mut bound = cmm(sigma);
    for (x, y) in xs.iter().zip(&y) {
        bound.observe(x, *y).unwrap();
    }
    let (values, _) = bound.eigendecomposition().unwrap();
    let largest = values.iter().copied().fold(0.0, f64::max);
    assert!(values[0] > 1e3 * xs.len() as f64 * f64::EPSILON * largest);
    let dense = DenseDual::new(&xs, &y, sigma, b, delta);
    let a0 = sigma * sigma;
    let mut compared = 0;
    let mut limits = 0;
    for q in 0..32 {
        // Random points, points near observed inputs, and the observed inputs themselves
        // (where the minimum may be the a → 0 limit, which the dense grid's lowest a,
        // e⁻³⁰·a0, approximates to O(a)).
        let x = match q {
            0..15 => vec![r.random::<f64>(), r.random::<f64>()],
            15..20 => vec![xs[q - 10][0] + 0.05, xs[q - 10][1] - 0.03],
            _ => xs[q - 20].clone(),
        };
        let g = bound.gradient(&x).unwrap();
        let certificate = bound.certificate(&x).unwrap();
        let a = certificate.regulariser;
        assert!(a.is_finite(), "query {q}: a = {a}");
        // The minimum over a, densely.
        let (a_dense, u_dense) = dense.minimise(&x, a0, 1.0);
        if a == 0.0 {
            limits += 1;
        } else {
            let (at_reported, _) = dense.objective(&x, a, 1.0);
            assert!(
                (g.ucb - at_reported).abs() <= 1e-10 * g.ucb.abs(),
                "query {q}: ucb {} vs dense U_a {at_reported}",
                g.ucb
            );
        }
        assert!(
            (g.ucb - u_dense).abs() <= 1e-9 * g.ucb.abs(),
            "query {q}: ucb {} vs dense min {u_dense}",
            g.ucb
        );
        let v = [g.mean, g.lcb, g.ucb];
        let (_, gradient_at_dense) = dense.objective(&x, a_dense, 1.0);
        let e = relative_error(&g.ucb_gradient, &gradient_at_dense, v);
        println!("query {q}: a {a:.6e} dense {a_dense:.6e}, ∇U vs dense {e:.1e}");
        assert!(
            e <= 1e-7,
            "query {q}: ∇U at the dense minimiser a = {a_dense} (reported {a}) off by {e:.2e}"
        );
        // The LCB: max over a of L_a, i.e. min of −L_a.
        let (a_lower, minus_l) = dense.minimise(&x, a0, -1.0);
        assert!((g.lcb + minus_l).abs() <= 1e-9 * g.lcb.abs().max(g.ucb.abs()));
        let (_, minus_gradient) = dense.objective(&x, a_lower, -1.0);
        let l_gradient: Vec<f64> = minus_gradient.iter().map(|v| -v).collect();
        let e = relative_error(&g.lcb_gradient, &l_gradient, v);
        println!("query {q}: ∇L vs dense {e:.1e}");
        assert!(e <= 1e-7, "query {q}: ∇L off by {e:.2e}");
        // The mean: μ_{a0}.
        let chol = (&dense.gram + DMatrix::identity(xs.len(), xs.len()) * a0)
            .cholesky()
            .unwrap();
        let alpha = chol.solve(&dense.y);
        let mut mean_gradient = vec![0.0; DIM];
        for (i, xi) in xs.iter().enumerate() {
            for (k, gk) in rbf_gradient(&x, xi).iter().enumerate() {
                mean_gradient[k] += alpha[i] * gk;
            }
        }
        let e = relative_error(&g.mean_gradient, &mean_gradient, v);
        assert!(e <= 1e-10, "query {q}: ∇μ off by {e:.2e}");
        compared += 1;
    }
    assert_eq!(compared, 32);
    // The a → 0 limit was the minimum at some observed inputs (and its gradient was checked).
    assert!(limits > 0, "no query exercised the a → 0 limit");
}

fn sketch_params() -> SketchParams {
    SketchParams::new()
        .lambda(0.1)
        .beta(1.0)
        .qbar(2.0)
        .gamma(1.0)
}

/// Queries for a sketched bound: the common ones plus every anchor and points 10⁻⁷ away.
fn sketch_queries<K: Kernel>(
    r: &mut ChaCha8Rng,
    observed: &[Vec<f64>],
    post: &SketchedPosterior<K>,
) -> Vec<(Vec<f64>, Step, &'static str)> {
    let mut out = queries(r, observed, false);
    for j in 0..post.dictionary_size() {
        let anchor = post.anchor(j).to_vec();
        out.push((
            anchor.iter().map(|v| v - 1e-7).collect(),
            Step::Smooth(STEP),
            "1e-7 from an anchor",
        ));
        out.push((anchor, Step::Smooth(STEP), "anchor"));
    }
    out
}

fn sketched_sequence<B: ConfidenceBound>(
    mut bound: B,
    posterior: impl Fn(&B) -> &SketchedPosterior<Rbf>,
    name: &str,
) {
    let data = observations(3, 0.1);
    let mut r = rng(4);
    let mut observed = Vec::new();
    let mut worst: f64 = 0.0;
    let empty = check_against_differences(&bound, &[0.3, 0.6], Step::Smooth(STEP), name);
    assert!(empty <= 1e-6);
    for (t, (x, y)) in data.iter().enumerate() {
        bound.observe(x, *y).unwrap();
        observed.push(x.clone());
        for (q, step, what) in sketch_queries(&mut r, &observed, posterior(&bound)) {
            let e = check_against_differences(
                &bound,
                &q,
                step,
                &format!("{name} t = {}, {what}", t + 1),
            );
            worst = worst.max(e);
        }
    }
    println!(
        "{name}: largest relative error {worst:.2e}, {} anchors",
        posterior(&bound).dictionary_size()
    );
}

#[test]
fn bkb_gradient_matches_differences_along_a_sequence() {
    let bound = Bkb::new(Rbf::new(LENGTHSCALE).unwrap(), sketch_params(), 11).unwrap();
    sketched_sequence(bound, Bkb::posterior, "bkb");
}

/// BBKB inside a batch: the mean frozen at the batch start, the variance with the batch's
/// points.
#[test]
fn bbkb_gradient_matches_differences_along_a_sequence() {
    let params = sketch_params().batch_threshold(3.0);
    let bound = Bkb::new(Rbf::new(LENGTHSCALE).unwrap(), params, 12).unwrap();
    sketched_sequence(bound, Bkb::posterior, "bbkb");
}

#[test]
fn ek_ucb_gradient_matches_differences_along_a_sequence() {
    let bound = EkUcb::new(Rbf::new(LENGTHSCALE).unwrap(), sketch_params(), 13).unwrap();
    sketched_sequence(bound, EkUcb::posterior, "ek-ucb");
}

/// The DTC variance given pending points, densely from the dictionary: K_ZZ, z(x) = L⁻¹k_Z(x)
/// with nalgebra's Cholesky, V_p = Σ cᵢz(xᵢ)z(xᵢ)ᵀ + Σ_p z(x_p)z(x_p)ᵀ + λI,
/// σ̃²(x) = (k(x, x) − ‖z(x)‖²)/λ + z(x)ᵀV_p⁻¹z(x).
fn dense_pending_variance<K: Kernel>(
    post: &SketchedPosterior<K>,
    pending: &[Vec<f64>],
    x: &[f64],
) -> f64 {
    let m = post.dictionary_size();
    let lambda = post.lambda();
    if m == 0 {
        return rbf(x, x) / lambda;
    }
    let anchors: Vec<&[f64]> = (0..m).map(|j| post.anchor(j)).collect();
    let kzz = DMatrix::from_fn(m, m, |i, j| rbf(anchors[i], anchors[j]));
    let l = kzz.cholesky().unwrap().l();
    let embed = |p: &[f64]| {
        let k = DVector::from_fn(m, |i, _| rbf(p, anchors[i]));
        l.solve_lower_triangular(&k).unwrap()
    };
    let mut v = DMatrix::identity(m, m) * lambda;
    for i in 0..post.distinct() {
        let z = embed(post.point(i));
        v += z.clone() * z.transpose() * post.count(i) as f64;
    }
    for p in pending {
        let z = embed(p);
        v += z.clone() * z.transpose();
    }
    let z = embed(x);
    let residual = (rbf(x, x) - z.dot(&z)).max(0.0);
    residual / lambda + z.dot(&v.cholesky().unwrap().solve(&z))
}

fn check_pending<B: ConfidenceBound>(bound: &B, post: &SketchedPosterior<Rbf>, what: &str) {
    let mut r = rng(21);
    let width = {
        let v = values(bound, &[0.5, 0.5]);
        let (m, u) = (v[0], v[2]);
        (u - m)
            / post
                .evaluate(&[[0.5, 0.5]].as_points().unwrap())
                .unwrap()
                .variance[0]
                .sqrt()
    };
    let anchor = post.anchor(0).to_vec();
    let fresh = vec![r.random::<f64>(), r.random::<f64>()];
    let sets: Vec<Vec<Vec<f64>>> = vec![
        vec![],
        vec![fresh.clone()],
        vec![fresh.clone(), fresh.clone(), vec![0.9, 0.1]],
        vec![anchor.clone(), post.point(0).to_vec()],
    ];
    for pending in &sets {
        let p = bound
            .pending_variance(&pending.as_points().unwrap())
            .unwrap();
        // The sketched posterior that observes the pending points, dictionary fixed.
        let mut observed = post.clone();
        for x in pending {
            observed.observe(x, 0.0).unwrap();
        }
        let mut queries: Vec<Vec<f64>> = (0..5)
            .map(|_| vec![r.random::<f64>(), r.random::<f64>()])
            .collect();
        queries.extend(pending.iter().cloned());
        queries.push(anchor.clone());
        let variance = p.variance(&queries.as_points().unwrap()).unwrap();
        let after = observed
            .evaluate(&queries.as_points().unwrap())
            .unwrap()
            .variance;
        for (j, x) in queries.iter().enumerate() {
            let dense = dense_pending_variance(post, pending, x);
            assert!(
                (variance[j] - dense).abs() <= 1e-10 * dense,
                "{what}: pending variance {} vs dense {dense} at {x:?} ({} pending)",
                variance[j],
                pending.len()
            );
            assert!(
                (variance[j] - after[j]).abs() <= 1e-10 * after[j],
                "{what}: pending variance {} vs observed {}",
                variance[j],
                after[j]
            );
            if pending.is_empty() {
                let v = values(bound, x);
                let from_bounds = ((v[2] - v[0]) / width).powi(2);
                assert!((variance[j] - from_bounds).abs() <= 1e-10 * from_bounds);
            }
            // Its gradient, by central differences of `variance`.
            let (value, gradient) = p.variance_gradient(x).unwrap();
            assert!(
                // One point alone or among others: the triangular solves may round differently.
                (value - variance[j]).abs() <= 1e-13 * value,
                "{what}: {value} vs {}",
                variance[j]
            );
            let h = 1e-3 * LENGTHSCALE;
            let mut fd = vec![0.0; DIM];
            for k in 0..DIM {
                let at = |s: f64| {
                    let mut y = x.clone();
                    y[k] += s;
                    p.variance(&vec![y].as_points().unwrap()).unwrap()[0]
                };
                fd[k] = (8.0 * (at(h) - at(-h)) - (at(2.0 * h) - at(-2.0 * h))) / (12.0 * h);
            }
            let scale = inf_norm(&fd) + value / LENGTHSCALE;
            let diff: Vec<f64> = gradient.iter().zip(&fd).map(|(a, b)| a - b).collect();
            assert!(
                inf_norm(&diff) <= 1e-6 * scale,
                "{what}: pending variance gradient {gradient:?} vs {fd:?} at {x:?}"
            );
        }
    }
}

#[test]
fn sketched_pending_variance_matches_dense_and_observed() {
    let data = observations(5, 0.1);
    let mut bkb = Bkb::new(Rbf::new(LENGTHSCALE).unwrap(), sketch_params(), 31).unwrap();
    let mut ek = EkUcb::new(Rbf::new(LENGTHSCALE).unwrap(), sketch_params(), 32).unwrap();
    let params = sketch_params().batch_threshold(3.0);
    let mut bbkb = Bkb::new(Rbf::new(LENGTHSCALE).unwrap(), params, 33).unwrap();
    for (t, (x, y)) in data.iter().enumerate() {
        bkb.observe(x, *y).unwrap();
        ek.observe(x, *y).unwrap();
        bbkb.observe(x, *y).unwrap();
        if t % 7 == 3 || t == data.len() - 1 {
            check_pending(&bkb, bkb.posterior(), &format!("bkb t = {}", t + 1));
            check_pending(&ek, ek.posterior(), &format!("ek-ucb t = {}", t + 1));
            check_pending(&bbkb, bbkb.posterior(), &format!("bbkb t = {}", t + 1));
        }
    }
}

/// Bad input is refused with a typed error.
#[test]
fn bad_input_is_refused() {
    let mut c = cmm(0.1);
    let mut bkb = Bkb::new(Rbf::new(LENGTHSCALE).unwrap(), sketch_params(), 1).unwrap();
    let mut ek = EkUcb::new(Rbf::new(LENGTHSCALE).unwrap(), sketch_params(), 1).unwrap();
    c.observe(&[0.1, 0.2], 0.3).unwrap();
    bkb.observe(&[0.1, 0.2], 0.3).unwrap();
    ek.observe(&[0.1, 0.2], 0.3).unwrap();
    let bounds: [&dyn ConfidenceBound; 3] = [&c, &bkb, &ek];
    for b in bounds {
        assert!(matches!(
            b.gradient(&[0.1]),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(matches!(
            b.gradient(&[0.1, f64::NAN]),
            Err(Error::NonFinite { .. })
        ));
        assert!(matches!(b.gradient(&[]), Err(Error::ZeroDimension)));
    }
    for b in [&bkb as &dyn ConfidenceBound, &ek] {
        assert!(matches!(
            b.pending_variance(&[[0.1]].as_points().unwrap()),
            Err(Error::DimensionMismatch { .. })
        ));
    }
}

/// Where CMM-UCB's minimiser jumps between two basins of the dual objective (not quasiconvex
/// in a, Flynn & Reeb 2024 §4.3) the UCB has a kink: the gradient returned is the one of the
/// basin reported, and must match the one-sided derivative on the side of that basin. With
/// σ = 0.01 (observations noisier than assumed) the minimiser jumps between a ≈ 5·10⁻⁴ and
/// a ≈ 2·10⁻² along lines in the plane; the switch is located by bisection on the reported a.
#[test]
fn cmm_gradient_at_a_switch_of_the_minimiser_is_one_sided() {
    let mut r = rng(1);
    let mut bound = cmm(0.01);
    for _ in 0..30 {
        let x = vec![r.random::<f64>(), r.random::<f64>()];
        let e: f64 = r.sample(StandardNormal);
        bound.observe(&x, target(&x) + 0.1 * e).unwrap();
    }
    let a_at = |x0: f64, y: f64| bound.certificate(&[x0, y]).unwrap().regulariser;
    let ucb_at = |x0: f64, y: f64| values(&bound, &[x0, y])[2];
    let mut switches = 0;
    for line in 0..20 {
        let y = line as f64 / 19.0 * 1.4 - 0.2;
        let grid: Vec<f64> = (0..400).map(|k| k as f64 / 399.0 * 1.4 - 0.2).collect();
        for w in grid.windows(2) {
            let (a_left, a_right) = (a_at(w[0], y), a_at(w[1], y));
            let ratio = a_right / a_left;
            if ratio < 3.0 && ratio > 1.0 / 3.0 {
                continue;
            }
            // Bisect to the switch.
            let (mut lo, mut hi) = (w[0], w[1]);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                let a = a_at(mid, y);
                if (a / a_left).ln().abs() < (a / a_right).ln().abs() {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let xs = lo;
            let g = bound.gradient(&[xs, y]).unwrap();
            let a = a_at(xs, y);
            let left_basin = (a / a_left).ln().abs() < (a / a_right).ln().abs();
            // Second-order one-sided differences along the line.
            let h = 1e-4 * LENGTHSCALE;
            let u0 = ucb_at(xs, y);
            let forward =
                (-3.0 * u0 + 4.0 * ucb_at(xs + h, y) - ucb_at(xs + 2.0 * h, y)) / (2.0 * h);
            let backward =
                (3.0 * u0 - 4.0 * ucb_at(xs - h, y) + ucb_at(xs - 2.0 * h, y)) / (2.0 * h);
            let scale = forward.abs().max(backward.abs()) + u0.abs() / LENGTHSCALE;
            let (expected, other) = if left_basin {
                (backward, forward)
            } else {
                (forward, backward)
            };
            // A kink: the two sides differ far beyond the tolerance.
            assert!(
                (forward - backward).abs() > 1e-3 * scale,
                "no kink at {xs}, {y}"
            );
            assert!(
                (g.ucb_gradient[0] - expected).abs() <= 1e-5 * scale,
                "switch at ({xs}, {y}), a = {a:.3e} ({a_left:.3e} | {a_right:.3e}): ∂U/∂x₀ {} vs \
                 one-sided {expected} (other side {other})",
                g.ucb_gradient[0]
            );
            switches += 1;
            if switches == 6 {
                return;
            }
        }
    }
    panic!("only {switches} switches of the minimiser found");
}
