//! Orderings between the confidence bounds proven in Flynn & Reeb 2024 (§4–§6, App. C), on random data, and
//! the bounds' values in cases small enough to compute by hand.
//!
//! - Theorem 6.3: AMM with c = σ²/λ is strictly tighter than AY(λ), AMM with c = σ²/(1+η)
//!   strictly tighter than IGP(η), at every point with ρ > 0 (ρ from the posterior's variance).
//! - DMM ≤ AMM for the UCB, DMM ≥ AMM for the LCB (same parameters; a0 is on DMM's grid).
//! - LCB ≤ UCB for all four bounds, LCB ≤ mean ≤ UCB for AY, IGP and AMM, on data drawn from
//!   a function of RKHS norm B/2 plus N(0, σ²) noise (with arbitrary data the confidence set
//!   of DMM can be empty, see `mixture_width`).
//!
//! Independent references: with no data, the prior bounds of the four methods written out by
//! hand from the formulas of Flynn & Reeb 2024 App. C (μ = 0, ρ² = k(x,x), q = ld = 0); with one observation,
//! μ_a, ρ_a², q_a and ld_a written out with scalars (K = k(x₁, x₁) + a is 1 × 1) and the kernel
//! values from the closed form of the RBF kernel with the standard library's `exp`.

use std::sync::Arc;

use kernel_bandits::bound::DMM_GRID;
use kernel_bandits::kernel::{Kernel, KernelExt, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use kernel_bandits::prelude::{Amm, Ay, BoundParams, Bounds, ConfidenceBound, Dmm, Igp};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use proptest::test_runner::TestCaseError;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// One random problem: parameters of the bounds, a kernel and a data-generating seed.
#[derive(Debug, Clone)]
struct Scenario {
    dim: usize,
    len: usize,
    sigma: f64,
    norm_bound: f64,
    delta: f64,
    kernel_choice: usize,
    lengthscale: f64,
    variance: f64,
    seed: u64,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        1usize..=3,
        0usize..30,
        -2.0..0.0f64,          // log10 σ: σ ∈ [0.01, 1)
        -1.0..(20f64.log10()), // log10 B: B ∈ [0.1, 20)
        // log10 δ: δ ∈ [1e-4, 1). δ = 1 itself is excluded: with no data it makes AMM, AY and
        // IGP coincide (see `theorem_6_3_is_an_equality_without_data_at_delta_one`).
        -4.0..0.0f64,
        0usize..4,              // RBF, Matérn 1/2, 3/2, 5/2
        (0.05f64.log10())..0.3, // log10 ℓ: ℓ ∈ [0.05, 2)
        -0.3..0.3f64,           // log10 s²: s² ∈ [0.5, 2]
        any::<u64>(),
    )
        .prop_map(
            |(dim, len, log_sigma, log_b, log_delta, kernel_choice, log_l, log_s2, seed)| {
                Scenario {
                    dim,
                    len,
                    sigma: 10f64.powf(log_sigma),
                    norm_bound: 10f64.powf(log_b),
                    delta: 10f64.powf(log_delta),
                    kernel_choice,
                    lengthscale: 10f64.powf(log_l),
                    variance: 10f64.powf(log_s2),
                    seed,
                }
            },
        )
}

impl Scenario {
    fn kernel(&self) -> Arc<dyn Kernel> {
        let (l, s2) = (self.lengthscale, self.variance);
        match self.kernel_choice {
            0 => Arc::new(Rbf::new(l).unwrap().scaled(s2).unwrap()),
            1 => Arc::new(Matern::new(0.5, l).unwrap().scaled(s2).unwrap()),
            2 => Arc::new(Matern::new(1.5, l).unwrap().scaled(s2).unwrap()),
            _ => Arc::new(Matern::new(2.5, l).unwrap().scaled(s2).unwrap()),
        }
    }

    /// σ, B and δ; the caller sets c, λ, η.
    fn params(&self) -> BoundParams {
        BoundParams::new()
            .sigma(self.sigma)
            .norm_bound(self.norm_bound)
            .delta(self.delta)
    }

    fn random_point(&self, rng: &mut ChaCha8Rng, low: f64, high: f64) -> Vec<f64> {
        (0..self.dim).map(|_| rng.random_range(low..high)).collect()
    }

    /// Observed points in [0, 1]^d, about 15% of them repeating an earlier one.
    fn inputs(&self) -> Vec<Vec<f64>> {
        let mut rng = rng(self.seed);
        let mut xs: Vec<Vec<f64>> = Vec::with_capacity(self.len);
        for i in 0..self.len {
            let x = if i > 0 && rng.random::<f64>() < 0.15 {
                xs[rng.random_range(0..i)].clone()
            } else {
                self.random_point(&mut rng, 0.0, 1.0)
            };
            xs.push(x);
        }
        xs
    }

    /// Targets that need not come from any function of norm ≤ B.
    fn arbitrary_targets(&self) -> Vec<f64> {
        let mut rng = rng(self.seed ^ 0xA5A5);
        (0..self.len)
            .map(|_| 3.0 * self.norm_bound * rng.random_range(-1.0..1.0))
            .collect()
    }

    /// y = f(x) + N(0, σ²) with f = Σᵢ wᵢ k(·, zᵢ) scaled to RKHS norm ‖f‖² = wᵀK_z w = (B/2)².
    fn rkhs_targets(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        let kernel = self.kernel();
        let mut rng = rng(self.seed ^ 0x5A5A);
        let centres: Vec<Vec<f64>> = (0..5)
            .map(|_| self.random_point(&mut rng, 0.0, 1.0))
            .collect();
        let mut weights: Vec<f64> = (0..5).map(|_| rng.sample(StandardNormal)).collect();
        let norm_sq: f64 = (0..5)
            .flat_map(|i| (0..5).map(move |j| (i, j)))
            .map(|(i, j)| weights[i] * weights[j] * kernel.eval(&centres[i], &centres[j]))
            .sum();
        let factor = 0.5 * self.norm_bound / norm_sq.sqrt();
        weights.iter_mut().for_each(|w| *w *= factor);
        xs.iter()
            .map(|x| {
                let f: f64 = weights
                    .iter()
                    .zip(&centres)
                    .map(|(w, z)| w * kernel.eval(x, z))
                    .sum();
                let noise: f64 = rng.sample(StandardNormal);
                f + self.sigma * noise
            })
            .collect()
    }

    /// 15 fresh points (some slightly outside the unit cube) and every observed point.
    fn queries(&self, xs: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let mut rng = rng(self.seed ^ 0x0F0F);
        let mut queries: Vec<Vec<f64>> = (0..15)
            .map(|_| self.random_point(&mut rng, -0.2, 1.2))
            .collect();
        queries.extend_from_slice(xs);
        queries
    }
}

fn feed(bound: &mut impl ConfidenceBound, xs: &[Vec<f64>], ys: &[f64]) {
    for (x, &y) in xs.iter().zip(ys) {
        bound.observe(x, y).unwrap();
    }
}

/// Checks the strict inequality `tighter < looser` of Theorem 6.3 at one point.
///
/// In exact arithmetic the two bounds share μ and ρ and differ by `gap` = (w_looser −
/// w_tighter)·ρ > 0 (widths written out by hand). Rounding is monotone, so the computed values
/// always satisfy `tighter ≤ looser`; they are required to differ strictly whenever the exact
/// gap exceeds 8 ulp of the values compared (`magnitude` = |μ| + w_looser·ρ), i.e. whenever
/// floating point can resolve it at all. Returns whether the strict check applied.
fn check_strict(
    tighter: f64,
    looser: f64,
    gap: f64,
    magnitude: f64,
    what: &str,
) -> Result<bool, TestCaseError> {
    prop_assert!(tighter <= looser, "{}: {:e} > {:e}", what, tighter, looser);
    let resolvable = gap > 8.0 * f64::EPSILON * magnitude;
    if resolvable {
        prop_assert!(
            tighter < looser,
            "{}: {:e} is not strictly tighter than {:e} (exact gap {:e})",
            what,
            tighter,
            looser,
            gap
        );
    }
    Ok(resolvable)
}

/// Theorem 6.3 at every query point: `tighter` (AMM) against `looser` (AY or IGP), which share
/// the regulariser, with the widths `w_tighter` < `w_looser` of the two bounds.
fn check_theorem_6_3(
    tighter: &Bounds,
    looser: &Bounds,
    variance: &[f64],
    (w_tighter, w_looser): (f64, f64),
    len: usize,
) -> Result<(), TestCaseError> {
    prop_assert!(w_tighter < w_looser, "widths {} ≥ {}", w_tighter, w_looser);
    for (j, &variance) in variance.iter().enumerate() {
        // Same posterior, same regulariser: the means are the same numbers.
        prop_assert_eq!(tighter.mean[j].to_bits(), looser.mean[j].to_bits());
        if variance == 0.0 {
            prop_assert_eq!(tighter.ucb[j], looser.ucb[j]);
            continue;
        }
        let rho = variance.sqrt();
        let gap = (w_looser - w_tighter) * rho;
        let magnitude = tighter.mean[j].abs() + w_looser * rho;
        let strict_ucb = check_strict(tighter.ucb[j], looser.ucb[j], gap, magnitude, "UCB")?;
        let strict_lcb = check_strict(-tighter.lcb[j], -looser.lcb[j], gap, magnitude, "LCB")?;
        if len == 0 {
            // Without data ρ² = k(x, x) ≥ 0.5: the gap is always resolvable.
            prop_assert!(strict_ucb && strict_lcb);
        }
    }
    Ok(())
}

/// Widths by hand (Flynn & Reeb 2024 App. C) from the posterior's ld at the shared regulariser.
fn amm_width(sigma: f64, b: f64, delta: f64, a0: f64, ld: f64) -> f64 {
    ((sigma * sigma * ld + a0 * b * b + 2.0 * sigma * sigma * (1.0 / delta).ln()) / a0).sqrt()
}

fn ay_width(sigma: f64, b: f64, delta: f64, lambda: f64, ld: f64) -> f64 {
    (sigma * (ld + 2.0 * (1.0 / delta).ln()).sqrt() + lambda.sqrt() * b) / lambda.sqrt()
}

fn igp_width(sigma: f64, b: f64, delta: f64, eta: f64, t: usize, ld: f64) -> f64 {
    sigma * (ld + t as f64 * eta + 2.0 * (1.0 / delta).ln()).sqrt() + b
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: RngSeed::Fixed(0x9a9),
        ..ProptestConfig::with_cases(96)
    })]

    /// Theorem 6.3, first half: AMM with c = σ²/λ (a0 = λ) is strictly tighter than AY(λ).
    #[test]
    fn amm_strictly_tighter_than_ay(s in scenario(), log10_lambda in -3.0..1.0f64) {
        let kernel = s.kernel();
        let c = s.sigma * s.sigma / 10f64.powf(log10_lambda);
        let mut amm = Amm::new(kernel.clone(), s.params().scale(c)).unwrap();
        // λ is taken as AMM's a0 = σ²/c exactly, so that both bounds factor the same matrix.
        let lambda = amm.params().mixture_regulariser();
        let mut ay = Ay::new(kernel, s.params().scale(c).lambda(lambda)).unwrap();
        prop_assert!(ay.posterior().regularisers().eq([lambda]));
        prop_assert!(amm.posterior().regularisers().eq([lambda]));

        let xs = s.inputs();
        let ys = s.arbitrary_targets();
        feed(&mut amm, &xs, &ys);
        feed(&mut ay, &xs, &ys);
        let queries = s.queries(&xs);
        let (ba, by) = (amm.bounds(&queries).unwrap(), ay.bounds(&queries).unwrap());
        let batch = amm.posterior().evaluate(&queries.as_points().unwrap()).unwrap();
        let ld = amm.posterior().log_det(0);
        let widths = (
            amm_width(s.sigma, s.norm_bound, s.delta, lambda, ld),
            ay_width(s.sigma, s.norm_bound, s.delta, lambda, ld),
        );
        check_theorem_6_3(&ba, &by, batch.variance(0), widths, s.len)?;
    }

    /// Theorem 6.3, second half: AMM with c = σ²/(1+η) (a0 = 1+η) is strictly tighter than
    /// IGP(η).
    #[test]
    fn amm_strictly_tighter_than_igp(s in scenario(), log10_eta in -3.0..0.0f64) {
        let kernel = s.kernel();
        let c = s.sigma * s.sigma / (1.0 + 10f64.powf(log10_eta));
        let mut amm = Amm::new(kernel.clone(), s.params().scale(c)).unwrap();
        // η is taken as a0 − 1, exact for a0 ∈ (1, 2] (Sterbenz), so that 1 + η = a0 exactly
        // and both bounds factor the same matrix.
        let a0 = amm.params().mixture_regulariser();
        let eta = a0 - 1.0;
        prop_assert!(eta > 0.0 && 1.0 + eta == a0);
        let mut igp = Igp::new(kernel, s.params().scale(c).eta(eta)).unwrap();
        prop_assert!(igp.posterior().regularisers().eq([a0]));

        let xs = s.inputs();
        let ys = s.arbitrary_targets();
        feed(&mut amm, &xs, &ys);
        feed(&mut igp, &xs, &ys);
        let queries = s.queries(&xs);
        let (ba, bi) = (amm.bounds(&queries).unwrap(), igp.bounds(&queries).unwrap());
        let batch = amm.posterior().evaluate(&queries.as_points().unwrap()).unwrap();
        let ld = amm.posterior().log_det(0);
        let widths = (
            amm_width(s.sigma, s.norm_bound, s.delta, a0, ld),
            igp_width(s.sigma, s.norm_bound, s.delta, eta, s.len, ld),
        );
        check_theorem_6_3(&ba, &bi, batch.variance(0), widths, s.len)?;
    }

    /// DMM ≤ AMM for the UCB and DMM ≥ AMM for the LCB, with the same parameters and data
    /// (a0 is on DMM's grid, computed bit for bit as AMM's), and DMM's mean is μ_{a0}.
    #[test]
    fn dmm_at_least_as_tight_as_amm(s in scenario(), log10_c in -2.0..2.0f64, rkhs in any::<bool>()) {
        let params = s.params().scale(10f64.powf(log10_c));
        let mut amm = Amm::new(s.kernel(), params).unwrap();
        let mut dmm = Dmm::new(s.kernel(), params).unwrap();
        let xs = s.inputs();
        let ys = if rkhs { s.rkhs_targets(&xs) } else { s.arbitrary_targets() };
        feed(&mut amm, &xs, &ys);
        feed(&mut dmm, &xs, &ys);
        let queries = s.queries(&xs);
        let (ba, bd) = (amm.bounds(&queries).unwrap(), dmm.bounds(&queries).unwrap());
        for j in 0..queries.len() {
            prop_assert!(bd.ucb[j] <= ba.ucb[j], "UCB at {}: DMM {:e} > AMM {:e}", j, bd.ucb[j], ba.ucb[j]);
            prop_assert!(bd.lcb[j] >= ba.lcb[j], "LCB at {}: DMM {:e} < AMM {:e}", j, bd.lcb[j], ba.lcb[j]);
            prop_assert_eq!(bd.mean[j].to_bits(), ba.mean[j].to_bits());
        }
    }

    /// LCB ≤ UCB for all four bounds, and LCB ≤ mean ≤ UCB for AY, IGP and AMM, on data from
    /// a function of RKHS norm B/2 with N(0, σ²) noise.
    #[test]
    fn lower_below_upper_on_rkhs_data(
        s in scenario(),
        log10_c in -2.0..2.0f64,
        log10_lambda in -3.0..1.0f64,
        log10_eta in -3.0..0.0f64,
    ) {
        let params = s
            .params()
            .scale(10f64.powf(log10_c))
            .lambda(10f64.powf(log10_lambda))
            .eta(10f64.powf(log10_eta));
        let mut ay = Ay::new(s.kernel(), params).unwrap();
        let mut igp = Igp::new(s.kernel(), params).unwrap();
        let mut amm = Amm::new(s.kernel(), params).unwrap();
        let mut dmm = Dmm::new(s.kernel(), params).unwrap();
        let xs = s.inputs();
        let ys = s.rkhs_targets(&xs);
        feed(&mut ay, &xs, &ys);
        feed(&mut igp, &xs, &ys);
        feed(&mut amm, &xs, &ys);
        feed(&mut dmm, &xs, &ys);
        let queries = s.queries(&xs);
        for (name, b) in [
            ("AY", ay.bounds(&queries).unwrap()),
            ("IGP", igp.bounds(&queries).unwrap()),
            ("AMM", amm.bounds(&queries).unwrap()),
        ] {
            for j in 0..queries.len() {
                prop_assert!(
                    b.lcb[j] <= b.mean[j] && b.mean[j] <= b.ucb[j],
                    "{} at {}: lcb {:e}, mean {:e}, ucb {:e}", name, j, b.lcb[j], b.mean[j], b.ucb[j]
                );
            }
        }
        let b = dmm.bounds(&queries).unwrap();
        for j in 0..queries.len() {
            prop_assert!(b.lcb[j] <= b.ucb[j], "DMM at {}: lcb {:e} > ucb {:e}", j, b.lcb[j], b.ucb[j]);
        }
    }

    /// With no data every bound is its prior value, written out by hand: mean 0, UCB = −LCB =
    /// width · √k(x, x), on a scaled kernel so that k(x, x) ≠ 1.
    #[test]
    fn prior_bounds_by_hand(
        s in scenario(),
        log10_c in -2.0..2.0f64,
        log10_lambda in -3.0..1.0f64,
        log10_eta in -3.0..0.0f64,
    ) {
        let (sigma, b, delta) = (s.sigma, s.norm_bound, s.delta);
        let (c, lambda, eta) = (10f64.powf(log10_c), 10f64.powf(log10_lambda), 10f64.powf(log10_eta));
        let params = s.params().scale(c).lambda(lambda).eta(eta);
        let kernel = s.kernel();
        let prior_sd = s.variance.sqrt(); // √k(x, x) for the scaled stationary kernel
        let log_inv_delta = (1.0 / delta).ln();
        let a0 = sigma * sigma / c;

        let amm_ucb = (b * b + 2.0 * c * log_inv_delta).sqrt() * prior_sd;
        let ay_ucb = (sigma * (2.0 * log_inv_delta).sqrt() + lambda.sqrt() * b) / lambda.sqrt() * prior_sd;
        let igp_ucb = (sigma * (2.0 * log_inv_delta).sqrt() + b) * prior_sd;
        let dmm_ucb = [0.1, 0.3, 1.0, 3.0, 10.0]
            .iter()
            .map(|m| {
                let a = m * a0;
                ((a0 * 0.0 + 2.0 * sigma * sigma * log_inv_delta + a * b * b) / a).sqrt() * prior_sd
            })
            .fold(f64::INFINITY, f64::min);
        prop_assert_eq!(DMM_GRID, [0.1, 0.3, 1.0, 3.0, 10.0]);

        let queries = s.queries(&[]);
        let bounds = [
            ("AMM", Amm::new(kernel.clone(), params).unwrap().bounds(&queries).unwrap(), amm_ucb),
            ("AY", Ay::new(kernel.clone(), params).unwrap().bounds(&queries).unwrap(), ay_ucb),
            ("IGP", Igp::new(kernel.clone(), params).unwrap().bounds(&queries).unwrap(), igp_ucb),
            ("DMM", Dmm::new(kernel, params).unwrap().bounds(&queries).unwrap(), dmm_ucb),
        ];
        for (name, got, want) in bounds {
            prop_assert_eq!(got.len(), queries.len());
            for j in 0..queries.len() {
                prop_assert_eq!(got.mean[j], 0.0, "{} mean", name);
                prop_assert!(close(got.ucb[j], want), "{} UCB: got {:e}, want {:e}", name, got.ucb[j], want);
                prop_assert!(close(got.lcb[j], -want), "{} LCB: got {:e}, want {:e}", name, got.lcb[j], -want);
            }
        }
    }
}

/// The one case where Theorem 6.3 is not strict although ρ > 0: with δ = 1 and no data,
/// ln(1/δ) = ld = 0, and AMM, AY and IGP all reduce to B·√k(x,x). One observation (ld > 0)
/// makes AMM strictly tighter again.
#[test]
fn theorem_6_3_is_an_equality_without_data_at_delta_one() {
    let kernel = Rbf::new(0.4).unwrap().scaled(2.0).unwrap();
    let (sigma, b, lambda) = (0.3, 5.0, 0.2);
    let params = BoundParams::new()
        .sigma(sigma)
        .norm_bound(b)
        .delta(1.0)
        .scale(sigma * sigma / lambda)
        .lambda(lambda)
        .eta(lambda);
    let mut amm = Amm::new(kernel, params).unwrap();
    let mut ay = Ay::new(kernel, params).unwrap();
    let mut igp = Igp::new(kernel, params).unwrap();
    let queries = [[0.1, 0.9], [0.5, 0.5]];
    let want = b * 2f64.sqrt();
    for bounds in [&amm, &ay as &dyn ConfidenceBound, &igp]
        .map(|bound| bound.evaluate(&queries.as_points().unwrap()).unwrap())
    {
        for ucb in bounds.ucb {
            assert!(close(ucb, want), "prior UCB {ucb} ≠ B·√k(x,x) = {want}");
        }
    }
    amm.observe(&[0.3, 0.3], 1.0).unwrap();
    ay.observe(&[0.3, 0.3], 1.0).unwrap();
    igp.observe(&[0.3, 0.3], 1.0).unwrap();
    let (ba, by) = (amm.bounds(&queries).unwrap(), ay.bounds(&queries).unwrap());
    for j in 0..queries.len() {
        assert!(ba.ucb[j] < by.ucb[j] && ba.lcb[j] > by.lcb[j]);
    }
}

/// Relative tolerance of the hand-computed cases: a few ulp of the handful of scalar
/// operations by which the hand formulas and the crate's differ.
const HAND_TOL: f64 = 1e-13;

/// |got − want| ≤ HAND_TOL · max(1, |want|).
fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= HAND_TOL * want.abs().max(1.0)
}

/// A bound μ ± w ρ against its hand value. ρ² = k(x,x) − (…) is a difference of numbers of
/// size k(x,x), so both the crate and the hand formula know it only to HAND_TOL · k(x,x) in
/// absolute terms (as in tests/integration/posterior_consistency.rs); propagated through ρ = √ρ² and the
/// width w this allows w · HAND_TOL · k(x,x)/ρ (twice the first-order error, k/(2ρ)), which
/// matters only where ρ² ≪ k(x,x), e.g. at the observed point with a small regulariser.
/// `spread_scale` is w · k(x,x)/ρ (for DMM the largest over its grid).
fn bound_close(got: f64, want: f64, spread_scale: f64) -> bool {
    (got - want).abs() <= HAND_TOL * (want.abs().max(1.0) + spread_scale)
}

/// RBF with output scale, by hand with the standard library's `exp`.
fn scaled_rbf_by_hand(s2: f64, l: f64, x: &[f64], y: &[f64]) -> f64 {
    let r_sq: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
    s2 * (-r_sq / (2.0 * l * l)).exp()
}

/// μ_a(x), ρ_a²(x), q_a, ld_a after the single observation (x₁, y₁), by hand with scalars.
struct OneObservation {
    mean: f64,
    variance: f64,
    quad_form: f64,
    log_det: f64,
}

fn one_observation(k11: f64, k1x: f64, kxx: f64, y1: f64, a: f64) -> OneObservation {
    OneObservation {
        mean: k1x * y1 / (k11 + a),
        variance: kxx - k1x * k1x / (k11 + a),
        quad_form: y1 * y1 / (k11 + a),
        log_det: (1.0 + k11 / a).ln(),
    }
}

/// Compares the (mean, LCB, UCB) of one bound at one point with the hand values.
#[track_caller]
fn assert_bounds_at(
    got: &Bounds,
    j: usize,
    (mean, lcb, ucb): (f64, f64, f64),
    spread_scale: f64,
    what: &str,
) {
    assert!(
        close(got.mean[j], mean)
            && bound_close(got.lcb[j], lcb, spread_scale)
            && bound_close(got.ucb[j], ucb, spread_scale),
        "{what}, query {j}: got {:?}, want {:?} (spread scale {spread_scale:e})",
        (got.mean[j], got.lcb[j], got.ucb[j]),
        (mean, lcb, ucb),
    );
}

/// μ ∓ w ρ, and the spread scale w · k(x,x)/ρ of `bound_close`.
fn symmetric(p: &OneObservation, width: f64, kxx: f64) -> ((f64, f64, f64), f64) {
    let rho = p.variance.sqrt();
    (
        (p.mean, p.mean - width * rho, p.mean + width * rho),
        width * kxx / rho,
    )
}

#[test]
fn one_observation_by_hand() {
    let (s2, l) = (2.0, 0.3);
    let kernel = Rbf::new(l).unwrap().scaled(s2).unwrap();
    let x1 = [0.2, 0.5];
    let queries = [[0.2, 0.5], [0.3, 0.4], [0.6, 0.1], [1.5, -1.0]];
    let k11 = scaled_rbf_by_hand(s2, l, &x1, &x1);
    let (lambda, eta): (f64, f64) = (0.07, 0.25);
    for (sigma, b, delta, c, y1) in [
        (0.1, 10.0, 0.01, 1.0, 1.3),
        (0.5, 2.0, 0.2, 0.05, -0.7),
        (1.0, 0.5, 1e-4, 20.0, 4.0),
        (0.03, 1.0, 0.9, 1.0, 0.0),
    ] {
        let params = BoundParams::new()
            .sigma(sigma)
            .norm_bound(b)
            .delta(delta)
            .scale(c)
            .lambda(lambda)
            .eta(eta);
        let log_inv_delta = (1.0 / delta).ln();
        let sigma_sq = sigma * sigma;
        let a0 = sigma_sq / c;
        let mut amm = Amm::new(kernel, params).unwrap();
        let mut dmm = Dmm::new(kernel, params).unwrap();
        let mut ay = Ay::new(kernel, params).unwrap();
        let mut igp = Igp::new(kernel, params).unwrap();
        amm.observe(&x1, y1).unwrap();
        dmm.observe(&x1, y1).unwrap();
        ay.observe(&x1, y1).unwrap();
        igp.observe(&x1, y1).unwrap();
        let (ba, bd) = (amm.bounds(&queries).unwrap(), dmm.bounds(&queries).unwrap());
        let (by, bi) = (ay.bounds(&queries).unwrap(), igp.bounds(&queries).unwrap());
        let case = format!("σ = {sigma}, B = {b}, δ = {delta}, c = {c}, y₁ = {y1}");

        for (j, x) in queries.iter().enumerate() {
            let k1x = scaled_rbf_by_hand(s2, l, &x1, x);
            let kxx = s2;
            let at = |a: f64| one_observation(k11, k1x, kxx, y1, a);

            // AMM: width = √((σ² ld + a0 B² + 2σ² ln(1/δ))/a0).
            let p = at(a0);
            let width =
                ((sigma_sq * p.log_det + a0 * b * b + 2.0 * sigma_sq * log_inv_delta) / a0).sqrt();
            let (want, scale) = symmetric(&p, width, kxx);
            assert_bounds_at(&ba, j, want, scale, &format!("AMM, {case}"));

            // DMM: min / max over the grid of μ_a ± (R̃_a/√a) ρ_a with
            // R̃_a² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ) + a B² − a q_a; the mean is μ_{a0}.
            let radius_sq =
                a0 * p.quad_form + sigma_sq * p.log_det + 2.0 * sigma_sq * log_inv_delta;
            let (mut ucb, mut lcb, mut scale) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
            for m in [0.1, 0.3, 1.0, 3.0, 10.0] {
                let a = m * a0;
                let pa = at(a);
                let r_sq = radius_sq + a * b * b - a * pa.quad_form;
                assert!(r_sq > 0.0, "{case}: the confidence set is not empty here");
                let ((_, lo, hi), s) = symmetric(&pa, (r_sq / a).sqrt(), kxx);
                ucb = ucb.min(hi);
                lcb = lcb.max(lo);
                scale = scale.max(s);
            }
            assert_bounds_at(&bd, j, (p.mean, lcb, ucb), scale, &format!("DMM, {case}"));

            // AY(λ): width = (σ√(ld_λ + 2 ln(1/δ)) + √λ B)/√λ.
            let p = at(lambda);
            let width = (sigma * (p.log_det + 2.0 * log_inv_delta).sqrt() + lambda.sqrt() * b)
                / lambda.sqrt();
            let (want, scale) = symmetric(&p, width, kxx);
            assert_bounds_at(&by, j, want, scale, &format!("AY, {case}"));

            // IGP(η): width = σ√(ld_{1+η} + tη + 2 ln(1/δ)) + B with t = 1.
            let p = at(1.0 + eta);
            let width = sigma * (p.log_det + eta + 2.0 * log_inv_delta).sqrt() + b;
            let (want, scale) = symmetric(&p, width, kxx);
            assert_bounds_at(&bi, j, want, scale, &format!("IGP, {case}"));
        }
        // The same observation seen through the posterior accessors.
        let p = one_observation(k11, k11, s2, y1, a0);
        assert!(
            close(amm.posterior().quad_form(0), p.quad_form),
            "{case}: q_a0"
        );
        assert!(
            close(amm.posterior().log_det(0), p.log_det),
            "{case}: ld_a0"
        );
    }
}
