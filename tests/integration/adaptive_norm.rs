//! `AdaptiveNorm`: a norm bound learnt by refutation (Flynn & Reeb 2024 Lemma 4.2 with
//! B_k = 2^{k−1}B₀ and the one δ at every level: the event of their Eq. 8 does not involve B).
//!
//! The references are independent of the wrapper: a fresh DMM-UCB / CMM-UCB built with the
//! final B and the same δ on the same data (and, along a whole sequence, one plain bound per
//! level); a plain sequence of `observe` calls; and a dense check written here with nalgebra
//! (Cholesky of K_t + a0·I for R_t², eigendecomposition of K_t for a q_a = Σ b_i² a/(λ_i + a),
//! R̃_a² minimised over a fine log grid of a refined by golden section — R̃_a² is convex in a) of
//! whether the confidence set was empty at each level.

use kernel_bandits::bound::{
    AdjustableNorm, AnyBound, BoundConfig, BoundKind, DEFAULT_MAX_LEVEL, Diagnostics, NormDoubling,
};
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector, SymmetricEigen};

const SIGMA: f64 = 0.1;
const DELTA: f64 = 0.01;
const T: usize = 50;

type Data = Vec<(Vec<f64>, f64)>;

fn kernel() -> Matern {
    Matern::new(2.5, 0.5).unwrap()
}

/// The §7 problem: Matérn 5/2, ℓ = 0.5, d = 3, ‖f‖_H = 10, σ = 0.1.
fn problem(seed: u64) -> SyntheticProblem<Matern> {
    SyntheticProblem::new(kernel(), SyntheticConfig::default(), seed).unwrap()
}

fn params(norm_bound: f64) -> BoundParams {
    BoundParams::new()
        .sigma(SIGMA)
        .norm_bound(norm_bound)
        .delta(DELTA)
        .scale(1.0)
}

fn dmm(norm_bound: f64) -> Dmm<Matern> {
    Dmm::new(kernel(), params(norm_bound)).unwrap()
}

fn cmm(norm_bound: f64) -> Cmm<Matern> {
    Cmm::new(kernel(), params(norm_bound)).unwrap()
}

/// Plays T rounds of the problem with the wrapper's own argmax (as a UCB agent would), and
/// returns the data it observed.
fn play<B: AdjustableNorm>(
    bound: &mut AdaptiveNorm<B>,
    problem: &SyntheticProblem<Matern>,
) -> Data {
    let mut data = Vec::new();
    for t in 0..T {
        let round = problem.round(t);
        let i = bound.argmax_ucb(&round.arms()).unwrap();
        let (x, y) = (round.arm(i).to_vec(), round.values[i] + round.noise);
        bound.observe(&x, y).unwrap();
        data.push((x, y));
    }
    data
}

/// A fixed sequence with structure: exploration, an exact duplicate, points a few ulps apart,
/// a tight cluster, targets f + noise from the §7 problem.
fn structured(problem: &SyntheticProblem<Matern>) -> Data {
    let mut xs: Vec<Vec<f64>> = (0..8).map(|t| problem.round(t).arm(0).to_vec()).collect();
    let centre = vec![0.4, 0.6, 0.5];
    xs.push(centre.clone());
    xs.push(centre.clone());
    xs.push(centre.iter().map(|v| v.next_up()).collect());
    xs.push(centre.iter().map(|v| v.next_up().next_up()).collect());
    for k in 0..10 {
        let off = 1e-6 * (k as f64 - 4.5);
        xs.push(vec![0.8 + off, 0.2 - off, 0.3 + 0.5 * off]);
    }
    for t in 8..20 {
        xs.push(problem.round(t).arm(1).to_vec());
    }
    xs.into_iter()
        .enumerate()
        .map(|(t, x)| {
            let y = problem.value(&x).unwrap() + problem.round(100 + t).noise;
            (x, y)
        })
        .collect()
}

fn queries(problem: &SyntheticProblem<Matern>, data: &[(Vec<f64>, f64)]) -> Vec<Vec<f64>> {
    let mut q: Vec<Vec<f64>> = (0..4)
        .flat_map(|t| {
            let round = problem.round(500 + t);
            (0..50)
                .map(move |i| round.arm(i).to_vec())
                .collect::<Vec<_>>()
        })
        .collect();
    q.extend(data.iter().step_by(3).map(|(x, _)| x.clone()));
    q.push(data[0].0.clone());
    q
}

fn same_bits(a: &Bounds, b: &Bounds) -> bool {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    bits(&a.mean) == bits(&b.mean) && bits(&a.lcb) == bits(&b.lcb) && bits(&a.ucb) == bits(&b.ucb)
}

// ---------------------------------------------------------------------------------------------
// The independent dense reference.

/// R̃_a² = R_t² + aB² − a q_a as a function of a, from nalgebra: R_t² from the Cholesky factor
/// of K + a0·I, a q_a from the eigendecomposition of K.
struct DenseRadius {
    radius_sq: f64,
    values: Vec<f64>,
    targets: Vec<f64>,
    norm_sq: f64,
    a0: f64,
}

impl DenseRadius {
    fn new(data: &[(Vec<f64>, f64)], norm_bound: f64, delta: f64) -> Self {
        let k = kernel();
        let n = data.len();
        let a0 = SIGMA * SIGMA;
        let gram = DMatrix::from_fn(n, n, |i, j| k.eval(&data[i].0, &data[j].0));
        let y = DVector::from_iterator(n, data.iter().map(|d| d.1));
        let chol = (&gram + a0 * DMatrix::identity(n, n)).cholesky().unwrap();
        let q = y.dot(&chol.solve(&y));
        let l = chol.l();
        let ld: f64 = (0..n).map(|i| 2.0 * l[(i, i)].ln()).sum::<f64>() - n as f64 * a0.ln();
        let radius_sq = a0 * q + SIGMA * SIGMA * ld + 2.0 * SIGMA * SIGMA * (1.0 / delta).ln();
        let eigen = SymmetricEigen::new(gram);
        let targets = eigen.eigenvectors.transpose() * &y;
        Self {
            radius_sq,
            values: eigen.eigenvalues.iter().map(|v| v.max(0.0)).collect(),
            targets: targets.iter().copied().collect(),
            norm_sq: norm_bound * norm_bound,
            a0,
        }
    }

    fn at(&self, a: f64) -> f64 {
        let aq: f64 = self
            .values
            .iter()
            .zip(&self.targets)
            .map(|(l, b)| b * b * a / (l + a))
            .sum();
        self.radius_sq + a * self.norm_sq - aq
    }

    /// min over a > 0: a grid of 2801 values over 28 decades around a0, then golden section on
    /// the best grid cell (R̃_a² is convex in a, so unimodal in ln a).
    fn minimum(&self) -> f64 {
        let s = |k: usize| self.a0.ln() + (k as f64 * 0.01 - 14.0) * std::f64::consts::LN_10;
        let (best, mut value) = (0..=2800)
            .map(|k| (k, self.at(s(k).exp())))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let (mut lo, mut hi) = (s(best.saturating_sub(1)), s((best + 1).min(2800)));
        let g = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..100 {
            let (m1, m2) = (hi - g * (hi - lo), lo + g * (hi - lo));
            let (v1, v2) = (self.at(m1.exp()), self.at(m2.exp()));
            value = value.min(v1).min(v2);
            if v1 < v2 {
                hi = m2;
            } else {
                lo = m1;
            }
        }
        value
    }

    /// The tolerance of "nonempty": rounding of R_t² (and CMM's slack B√θ for near-singular K).
    fn tolerance(&self) -> f64 {
        1e-9 * self.radius_sq.abs().max(1.0)
    }
}

// ---------------------------------------------------------------------------------------------
// (a) the wrapper equals a fresh bound at the final B and the same δ.

/// A fresh DMM at (B, δ) fed `data` one observation at a time.
fn fresh_dmm(data: &Data, norm_bound: f64, delta: f64) -> Dmm<Matern> {
    let mut d = Dmm::new(kernel(), params(norm_bound).delta(delta)).unwrap();
    for (x, y) in data {
        d.observe(x, *y).unwrap();
    }
    d
}

/// A fresh CMM at (B, δ), queried after every step as the wrapper is (its cached
/// eigendecomposition is updated along the same path, bordered update by bordered update).
fn fresh_cmm(data: &Data, norm_bound: f64, delta: f64, query_each_step: bool) -> Cmm<Matern> {
    let mut c = Cmm::new(kernel(), params(norm_bound).delta(delta)).unwrap();
    if query_each_step {
        c.diagnostics();
    }
    for (x, y) in data {
        c.observe(x, *y).unwrap();
        if query_each_step {
            c.diagnostics();
        }
    }
    c
}

fn assert_doublings_happened(log: &[NormDoubling], b0: f64) {
    assert!(log.len() >= 2, "B0 = {b0}: only {} doublings", log.len());
}

#[test]
fn dmm_after_several_doublings_equals_a_fresh_bound_at_the_final_level() {
    for seed in 0..2 {
        let problem = problem(seed);
        for b0 in [0.5, 2.0] {
            // The data of a UCB run (whose queries let appends reuse solved columns, which
            // moves the last bits), then replayed by plain appends into the wrapper under test
            // and into the reference alike.
            let mut played = AdaptiveNorm::new(dmm(b0)).unwrap();
            let mut data = play(&mut played, &problem);
            data.extend(structured(&problem));
            for (x, y) in &data[T..] {
                played.observe(x, *y).unwrap();
            }
            let mut wrapped = AdaptiveNorm::new(dmm(b0)).unwrap();
            for (x, y) in &data {
                wrapped.observe(x, *y).unwrap();
            }
            assert_doublings_happened(wrapped.doublings(), b0);
            let level = wrapped.level();
            let (b, delta) = (wrapped.norm_bound(), wrapped.delta());
            assert_eq!((b, delta), (b0 * 2f64.powi(level as i32 - 1), DELTA));
            assert!(b < 2.0 * problem.rkhs_norm(), "B = {b} for ‖f‖ = 10");
            let fresh = fresh_dmm(&data, b, delta);
            let q = queries(&problem, &data);
            assert!(same_bits(
                &wrapped.bounds(&q).unwrap(),
                &fresh.bounds(&q).unwrap()
            ));
            assert_eq!(wrapped.diagnostics(), fresh.diagnostics());
            let points = q.as_points().unwrap();
            assert_eq!(
                wrapped.argmax_ucb(&points).unwrap(),
                fresh.argmax_ucb(&points).unwrap()
            );
            assert_eq!(wrapped.inner().widths(), fresh.widths());
            assert_eq!(wrapped.len(), data.len());
            // The run that made the data, queries and all, agrees to rounding.
            if played.level() == wrapped.level() {
                let (p, f) = (played.bounds(&q).unwrap(), fresh.bounds(&q).unwrap());
                for j in 0..q.len() {
                    assert!((p.ucb[j] - f.ucb[j]).abs() <= 1e-8 * (1.0 + f.ucb[j].abs()));
                }
            }
        }
    }
}

#[test]
fn cmm_after_several_doublings_equals_a_fresh_bound_at_the_final_level() {
    for seed in 0..2 {
        let problem = problem(seed);
        for b0 in [0.5, 2.0] {
            // The data of a UCB run (whose queries let appends reuse solved columns, which
            // moves the last bits), then replayed by plain appends into the wrapper under test
            // and into the reference alike.
            let mut played = AdaptiveNorm::new(cmm(b0)).unwrap();
            let mut data = play(&mut played, &problem);
            data.extend(structured(&problem));
            let mut wrapped = AdaptiveNorm::new(cmm(b0)).unwrap();
            for (x, y) in &data {
                wrapped.observe(x, *y).unwrap();
            }
            assert_doublings_happened(wrapped.doublings(), b0);
            let (b, delta) = (wrapped.norm_bound(), wrapped.delta());
            assert_eq!(delta, DELTA);
            let q = queries(&problem, &data);
            let points = q.as_points().unwrap();
            let got = wrapped.bounds(&q).unwrap();
            // Bit for bit against a fresh CMM whose decompositions followed the same path.
            let fresh = fresh_cmm(&data, b, delta, true);
            assert!(same_bits(&got, &fresh.bounds(&q).unwrap()));
            assert_eq!(wrapped.diagnostics(), fresh.diagnostics());
            assert_eq!(
                wrapped.argmax_ucb(&points).unwrap(),
                fresh.argmax_ucb(&points).unwrap()
            );
            assert_eq!(wrapped.inner().radius_sq(), fresh.radius_sq());
            // And to rounding against one decomposed from scratch at the end.
            let cold = fresh_cmm(&data, b, delta, false).bounds(&q).unwrap();
            for j in 0..q.len() {
                for (u, v) in [(got.ucb[j], cold.ucb[j]), (got.lcb[j], cold.lcb[j])] {
                    assert!((u - v).abs() <= 1e-7 * (1.0 + v.abs()), "{u} vs {v} at {j}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) nothing is lost; bad input changes nothing; observe_many = a sequence of observe.

fn snapshot_of<B: AdjustableNorm>(
    bound: &AdaptiveNorm<B>,
    q: &[Vec<f64>],
) -> (
    Bounds,
    u32,
    Vec<NormDoubling>,
    usize,
    Diagnostics,
    Option<usize>,
) {
    (
        bound.bounds(q).unwrap(),
        bound.level(),
        bound.doublings().to_vec(),
        bound.len(),
        bound.diagnostics(),
        bound.exhausted(),
    )
}

fn assert_unchanged<B: AdjustableNorm>(
    bound: &AdaptiveNorm<B>,
    q: &[Vec<f64>],
    before: &(
        Bounds,
        u32,
        Vec<NormDoubling>,
        usize,
        Diagnostics,
        Option<usize>,
    ),
) {
    let now = snapshot_of(bound, q);
    assert!(same_bits(&now.0, &before.0));
    assert_eq!(
        (now.1, &now.2, now.3, now.5),
        (before.1, &before.2, before.3, before.5)
    );
    assert_eq!(now.4, before.4);
}

fn rejected_inputs_change_nothing<B: AdjustableNorm>(mut bound: AdaptiveNorm<B>, q: &[Vec<f64>]) {
    let before = snapshot_of(&bound, q);
    assert!(bound.observe(&[0.1, 0.2, 0.3], f64::NAN).is_err());
    assert!(bound.observe(&[0.1, 0.2, 0.3], f64::INFINITY).is_err());
    assert!(bound.observe(&[0.1, 0.2], 1.0).is_err());
    assert!(bound.observe(&[0.1, f64::NAN, 0.3], 1.0).is_err());
    let rows = vec![vec![0.1, 0.2, 0.3], vec![0.4, 0.5, 0.6]];
    let points = rows.as_points().unwrap();
    assert!(bound.observe_many(&points, &[1.0]).is_err());
    assert!(bound.observe_many(&points, &[1e6, f64::NAN]).is_err());
    let flat = vec![vec![0.1, 0.2], vec![0.4, 0.5]];
    assert!(
        bound
            .observe_many(&flat.as_points().unwrap(), &[1.0, 2.0])
            .is_err()
    );
    assert_unchanged(&bound, q, &before);
}

#[test]
fn rejected_observations_leave_the_wrapper_bitwise_unchanged() {
    let problem = problem(3);
    let mut d = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let mut c = AdaptiveNorm::new(cmm(0.5)).unwrap();
    let data = play(&mut d, &problem);
    for (x, y) in &data {
        c.observe(x, *y).unwrap();
    }
    let q = queries(&problem, &data);
    rejected_inputs_change_nothing(d, &q);
    rejected_inputs_change_nothing(c, &q);
}

/// Feeds `data` in chunks of the given sizes through `observe_many`, and one at a time through
/// `observe`; the two must agree on everything, and hold exactly the data given.
fn batches_equal_single_steps<B: AdjustableNorm + Clone>(
    start: AdaptiveNorm<B>,
    data: &Data,
    chunks: &[usize],
    q: &[Vec<f64>],
) {
    let (mut one, mut many) = (start.clone(), start);
    for (x, y) in data {
        one.observe(x, *y).unwrap();
    }
    let mut at = 0;
    for &size in chunks.iter().cycle() {
        if at >= data.len() {
            break;
        }
        let end = (at + size).min(data.len());
        let rows: Vec<Vec<f64>> = data[at..end].iter().map(|d| d.0.clone()).collect();
        let ys: Vec<f64> = data[at..end].iter().map(|d| d.1).collect();
        many.observe_many(&rows.as_points().unwrap(), &ys).unwrap();
        at = end;
    }
    assert!(!one.doublings().is_empty());
    assert_eq!(one.doublings(), many.doublings());
    assert_eq!((one.level(), one.len()), (many.level(), many.len()));
    assert_eq!(one.len(), data.len());
    assert!(same_bits(&one.bounds(q).unwrap(), &many.bounds(q).unwrap()));
    assert_eq!(one.diagnostics(), many.diagnostics());
}

#[test]
fn observe_many_equals_a_sequence_of_observe_and_loses_nothing() {
    let problem = problem(4);
    let mut probe = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let mut data = play(&mut probe, &problem);
    data.extend(structured(&problem));
    let q = queries(&problem, &data);
    for chunks in [vec![7], vec![1, 13, 2], vec![data.len()]] {
        batches_equal_single_steps(AdaptiveNorm::new(dmm(0.5)).unwrap(), &data, &chunks, &q);
        batches_equal_single_steps(AdaptiveNorm::new(cmm(0.5)).unwrap(), &data, &chunks, &q);
    }
    // The inner posterior holds exactly the data, in order.
    let mut d = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let rows: Vec<Vec<f64>> = data.iter().map(|d| d.0.clone()).collect();
    let ys: Vec<f64> = data.iter().map(|d| d.1).collect();
    d.observe_many(&rows.as_points().unwrap(), &ys).unwrap();
    let post = d.inner().posterior();
    assert_eq!(post.targets(), &ys[..]);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(post.input(i), &row[..]);
    }
}

#[test]
fn truncate_keeps_the_level_and_equals_a_fresh_bound_at_it() {
    let problem = problem(5);
    let mut probe = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let data = play(&mut probe, &problem);
    let mut d = AdaptiveNorm::new(dmm(0.5)).unwrap();
    for (x, y) in &data {
        d.observe(x, *y).unwrap();
    }
    let (level, logged) = (d.level(), d.doublings().len());
    // Back to before the last doubling: its refutation stays on record.
    let keep = d.doublings()[logged - 1].observations - 1;
    assert!(keep > 0);
    d.truncate(keep);
    assert_eq!(
        (d.level(), d.doublings().len(), d.len()),
        (level, logged, keep)
    );
    // The fresh bound at the level's B and δ; the posterior's truncation keeps the first rows
    // of a factor that may have been refreshed since (numerical health), so to rounding.
    let fresh = fresh_dmm(&data[..keep].to_vec(), d.norm_bound(), d.delta());
    let q = queries(&problem, &data);
    let (got, want) = (d.bounds(&q).unwrap(), fresh.bounds(&q).unwrap());
    let worst = (0..q.len())
        .map(|j| {
            (got.ucb[j] - want.ucb[j])
                .abs()
                .max((got.lcb[j] - want.lcb[j]).abs())
        })
        .fold(0.0, f64::max);
    assert!(worst <= 1e-10, "{worst}");
    // At the level before, the bounds would be tighter: the level was kept, not reset.
    let lower = fresh_dmm(&data[..keep].to_vec(), d.norm_bound() / 2.0, d.delta());
    assert!(lower.bounds(&q).unwrap().ucb[0] < want.ucb[0]);
}

// ---------------------------------------------------------------------------------------------
// (c) the log, checked against the dense reference.

fn check_log_against_dense<B: AdjustableNorm>(
    wrapped_new: impl Fn() -> AdaptiveNorm<B>,
    data: &Data,
    exact: bool,
) -> usize {
    let mut bound = wrapped_new();
    let b0 = bound.initial_norm();
    let mut multi = 0;
    for (t, (x, y)) in data.iter().enumerate() {
        let before = bound.doublings().len();
        bound.observe(x, *y).unwrap();
        let new = &bound.doublings()[before..];
        let prefix = &data[..=t];
        if new.len() >= 2 {
            multi += 1;
        }
        for step in new {
            assert_eq!(step.observations, t + 1);
            let k = step.level;
            assert_eq!(step.old_norm, b0 * 2f64.powi(k as i32 - 2));
            assert_eq!(step.new_norm, 2.0 * step.old_norm);
            // The old level's set was empty (at the one δ): at the reported a, and at the dense
            // minimum.
            let old = DenseRadius::new(prefix, step.old_norm, DELTA);
            let (a, reported) = step.refuted_by;
            assert!(reported < 0.0);
            assert!(old.at(a) < 0.0, "t = {t}: R̃² at a = {a} is {}", old.at(a));
            assert!(old.minimum() < 0.0);
        }
        // After the check, the level in force is not refuted: exactly for CMM (over all a),
        // on its grid for DMM.
        let current = DenseRadius::new(prefix, bound.norm_bound(), bound.delta());
        if exact {
            assert!(
                current.minimum() >= -current.tolerance(),
                "t = {t}: the set at level {} is empty: {}",
                bound.level(),
                current.minimum()
            );
        } else {
            for m in [0.1, 0.3, 1.0, 3.0, 10.0] {
                assert!(current.at(m * current.a0) >= -current.tolerance());
            }
        }
    }
    let rounds: Vec<usize> = bound.doublings().iter().map(|s| s.observations).collect();
    assert!(rounds.windows(2).all(|w| w[0] <= w[1]));
    let levels: Vec<u32> = bound.doublings().iter().map(|s| s.level).collect();
    assert_eq!(levels, (2..2 + levels.len() as u32).collect::<Vec<_>>());
    multi
}

#[test]
fn every_doubling_is_a_refutation_and_cmm_is_never_left_empty() {
    let mut multi = 0;
    for seed in 0..2 {
        let problem = problem(seed);
        let mut probe = AdaptiveNorm::new(cmm(0.5)).unwrap();
        let mut data = play(&mut probe, &problem);
        data.extend(structured(&problem));
        for b0 in [0.5, 2.0] {
            multi += check_log_against_dense(|| AdaptiveNorm::new(cmm(b0)).unwrap(), &data, true);
            multi += check_log_against_dense(|| AdaptiveNorm::new(dmm(b0)).unwrap(), &data, false);
        }
    }
    // Some rounds needed more than one doubling: a check that stops after one would show.
    assert!(multi > 0);
}

// ---------------------------------------------------------------------------------------------
// (d) a comfortable B₀ is never doubled.

#[test]
fn no_doubling_when_the_initial_norm_is_comfortably_large() {
    for seed in 0..3 {
        let problem = problem(seed);
        let b0 = 4.0 * problem.rkhs_norm();
        let mut d = AdaptiveNorm::new(dmm(b0)).unwrap();
        let data = play(&mut d, &problem);
        let mut c = AdaptiveNorm::new(cmm(b0)).unwrap();
        for (x, y) in data.iter().chain(&structured(&problem)) {
            c.observe(x, *y).unwrap();
        }
        for (doublings, level, b, delta) in [
            (d.doublings().len(), d.level(), d.norm_bound(), d.delta()),
            (c.doublings().len(), c.level(), c.norm_bound(), c.delta()),
        ] {
            assert_eq!((doublings, level, b, delta), (0, 1, b0, DELTA));
        }
        assert_eq!((d.exhausted(), c.exhausted()), (None, None));
    }
}

// ---------------------------------------------------------------------------------------------
// (e) the cap.

/// Two observations of one input with targets 10⁶ apart: only B ≳ 5·10⁵ explains them.
fn duplicates() -> Data {
    let x = vec![0.3, 0.3, 0.3];
    vec![(x.clone(), 0.0), (x, 1e6)]
}

#[test]
fn the_cap_stops_the_doubling_and_says_so() {
    for kind in [BoundKind::Dmm, BoundKind::Cmm] {
        let config = BoundConfig::new().params(params(1.0));
        let inner = kind.build(kernel(), &config).unwrap();
        let mut bound = AdaptiveNorm::with_max_level(inner, 4).unwrap();
        let data = duplicates();
        for (x, y) in &data {
            bound.observe(x, *y).unwrap();
        }
        assert_eq!(bound.level(), 4, "{kind}");
        assert_eq!(bound.exhausted(), Some(2));
        assert_eq!(bound.doublings().len(), 3);
        assert!(bound.doublings().iter().all(|s| s.observations == 2));
        assert!(bound.diagnostics().empty_set());
        assert!(DenseRadius::new(&data, 8.0, DELTA).minimum() < 0.0);
        // More data neither loops nor rewrites the record.
        bound.observe(&[0.9, 0.1, 0.5], 2.0).unwrap();
        assert_eq!((bound.level(), bound.exhausted()), (4, Some(2)));

        // With the default cap the doubling stops where it must: the first level with
        // B_k² ≥ q_{a0} is never refuted (μ_{a0} lies in the set), so B < 2√q_{a0}.
        let inner = kind.build(kernel(), &config).unwrap();
        let mut bound = AdaptiveNorm::new(inner).unwrap();
        for (x, y) in &data {
            bound.observe(x, *y).unwrap();
        }
        assert_eq!(bound.exhausted(), None);
        assert!(bound.level() < DEFAULT_MAX_LEVEL);
        let k = kernel();
        let kxx = k.eval(&data[0].0, &data[0].0);
        let a0 = SIGMA * SIGMA;
        // q_{a0} for K = kxx·[[1, 1], [1, 1]]: y = (0, 10⁶) has components ±10⁶/√2 on
        // (1, 1)/√2 (eigenvalue 2kxx) and (1, −1)/√2 (eigenvalue 0).
        let q = 0.5e12 / (2.0 * kxx + a0) + 0.5e12 / a0;
        assert!(bound.norm_bound() < 2.0 * q.sqrt());
        let last = DenseRadius::new(&data, bound.norm_bound(), bound.delta());
        let previous = DenseRadius::new(&data, bound.norm_bound() / 2.0, DELTA);
        assert!(previous.minimum() < 0.0);
        if kind == BoundKind::Cmm {
            assert!(last.minimum() >= -last.tolerance(), "{}", last.minimum());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (f) run-time choice and trait objects.

#[test]
fn any_bound_and_trait_objects_work_and_other_kinds_are_refused() {
    let problem = problem(6);
    let config = BoundConfig::new().params(params(0.5));
    // AnyBound and Box<dyn AdjustableNorm> give what the concrete type gives.
    let mut probe = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let data = play(&mut probe, &problem);
    let mut concrete = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let mut any = AdaptiveNorm::new(BoundKind::Dmm.build(kernel(), &config).unwrap()).unwrap();
    let boxed: Box<dyn AdjustableNorm> = Box::new(dmm(0.5));
    let mut dynamic = AdaptiveNorm::new(boxed).unwrap();
    for (x, y) in &data {
        concrete.observe(x, *y).unwrap();
        any.observe(x, *y).unwrap();
        dynamic.observe(x, *y).unwrap();
    }
    let q = queries(&problem, &data);
    let reference = concrete.bounds(&q).unwrap();
    assert!(same_bits(&any.bounds(&q).unwrap(), &reference));
    assert!(same_bits(&dynamic.bounds(&q).unwrap(), &reference));
    assert_eq!(any.doublings(), concrete.doublings());
    assert_eq!(any.inner().kind(), BoundKind::Dmm);

    // As a Box<dyn ConfidenceBound> in a UCB agent.
    let wrapped = AdaptiveNorm::new(BoundKind::Cmm.build(kernel(), &config).unwrap()).unwrap();
    let mut agent = UcbAgent::new(Box::new(wrapped) as Box<dyn ConfidenceBound>);
    for t in 0..10 {
        let round = problem.round(t);
        let i = agent.select_from(&round.arms()).unwrap();
        agent
            .update(round.arm(i), round.values[i] + round.noise)
            .unwrap();
    }
    assert_eq!(agent.bound().len(), 10);
    assert!(!agent.bound().diagnostics().empty_set());

    // Every other kind is refused, and left as it was.
    let config = BoundConfig::paper_defaults(&kernel(), 3, 100)
        .sketch(SketchParams::new().beta(1.0).horizon(100));
    for kind in BoundKind::ALL {
        let mut bound: AnyBound<Matern> = kind.build(kernel(), &config).unwrap();
        let supported = matches!(kind, BoundKind::Dmm | BoundKind::Cmm);
        let result = bound.set_norm_bound(3.0, 0.05);
        assert_eq!(result.is_ok(), supported, "{kind}");
        if !supported {
            assert!(matches!(result, Err(Error::Unsupported { .. })), "{kind}");
            assert!(matches!(
                AdaptiveNorm::new(bound),
                Err(Error::Unsupported { .. })
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (g) hostile values.

#[test]
fn hostile_norms_and_levels_are_refused_without_change() {
    for b0 in [
        f64::NAN,
        0.0,
        -0.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e-310,
    ] {
        assert!(Dmm::new(kernel(), params(b0)).is_err(), "{b0}");
        assert!(Cmm::new(kernel(), params(b0)).is_err(), "{b0}");
    }
    let problem = problem(7);
    let mut d = dmm(1.0);
    let mut c = cmm(1.0);
    for t in 0..10 {
        let round = problem.round(t);
        d.observe(round.arm(0), round.values[0]).unwrap();
        c.observe(round.arm(0), round.values[0]).unwrap();
    }
    let q = queries(&problem, &[(problem.round(0).arm(0).to_vec(), 0.0)]);
    let (d_before, c_before) = (d.bounds(&q).unwrap(), c.bounds(&q).unwrap());
    for (b, delta) in [
        (f64::NAN, 0.1),
        (0.0, 0.1),
        (-2.0, 0.1),
        (f64::INFINITY, 0.1),
        (1e-310, 0.1),
        (2.0, f64::NAN),
        (2.0, 0.0),
        (2.0, -0.1),
        (2.0, 1.5),
        (2.0, f64::INFINITY),
    ] {
        for result in [d.set_norm_bound(b, delta), c.set_norm_bound(b, delta)] {
            assert!(
                matches!(result, Err(Error::InvalidParameter { .. })),
                "{b}, {delta}"
            );
        }
    }
    assert_eq!(
        (d.norm_bound(), d.delta(), c.norm_bound(), c.delta()),
        (1.0, DELTA, 1.0, DELTA)
    );
    assert!(same_bits(&d.bounds(&q).unwrap(), &d_before));
    assert!(same_bits(&c.bounds(&q).unwrap(), &c_before));

    // Caps: 0 levels; a cap at which B overflows. δ is the same at every level, so any δ the
    // inner bound accepts serves every level, the smallest positive one included.
    assert!(AdaptiveNorm::with_max_level(dmm(1.0), 0).is_err());
    assert!(AdaptiveNorm::with_max_level(dmm(1.0), u32::MAX).is_err());
    assert!(AdaptiveNorm::new(dmm(1e300)).is_err());
    assert!(AdaptiveNorm::with_max_level(dmm(1e300), 1).is_ok());
    let tiny_delta = Dmm::new(kernel(), params(1.0).delta(5e-324)).unwrap();
    let tiny = AdaptiveNorm::new(tiny_delta).unwrap();
    assert_eq!((tiny.delta(), tiny.inner().delta()), (5e-324, 5e-324));
}

#[test]
fn a_bound_with_data_is_checked_when_wrapped() {
    let mut c = cmm(0.01);
    for (x, y) in duplicates()
        .iter()
        .take(1)
        .chain(&[(vec![0.7, 0.2, 0.1], -3.0)])
    {
        c.observe(x, *y).unwrap();
    }
    assert!(c.diagnostics().empty_set());
    let wrapped = AdaptiveNorm::new(c).unwrap();
    assert!(!wrapped.doublings().is_empty());
    assert!(wrapped.doublings().iter().all(|s| s.observations == 2));
    assert!(!wrapped.diagnostics().empty_set());
}

// ---------------------------------------------------------------------------------------------
// (h) One δ for every level. The event of Flynn & Reeb 2024 Eq. 8 (Thm 4.1) does not involve B,
// so every level shares it: at level k the wrapper is a plain bound built with B_k and the same
// δ, and on data from a function of known norm the level never passes k* = min{k : B_k ≥ ‖f‖}.

/// Matérn 5/2 with ℓ = 0.5 in closed form (Rasmussen & Williams 2006 Eq. 4.17), written here
/// independently of the crate's kernel.
fn matern52(x: &[f64], z: &[f64]) -> f64 {
    let r = x
        .iter()
        .zip(z)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let s = 5f64.sqrt() * r / 0.5;
    (1.0 + s + s * s / 3.0) * (-s).exp()
}

/// f = Σ_i α_i k(z_i, ·), a finite kernel expansion, whose RKHS norm is known in closed form:
/// ‖f‖²_H = αᵀK_Zα (the reproducing property).
struct Expansion {
    centres: Vec<[f64; 2]>,
    weights: Vec<f64>,
    norm: f64,
}

impl Expansion {
    /// Five centres with weights of both signs, scaled to ‖f‖_H ≈ `norm`; `self.norm` is the
    /// norm of the scaled weights, recomputed.
    fn new(norm: f64) -> Self {
        let centres = vec![
            [0.2, 0.3],
            [0.75, 0.25],
            [0.5, 0.7],
            [0.15, 0.85],
            [0.85, 0.8],
        ];
        let raw = [1.0, -0.8, 0.6, -1.2, 0.9];
        let norm_of = |w: &[f64]| {
            let mut sq = 0.0;
            for (i, zi) in centres.iter().enumerate() {
                for (j, zj) in centres.iter().enumerate() {
                    sq += w[i] * w[j] * matern52(zi, zj);
                }
            }
            sq.sqrt()
        };
        let scale = norm / norm_of(&raw);
        let weights: Vec<f64> = raw.iter().map(|w| w * scale).collect();
        let norm = norm_of(&weights);
        Self {
            centres,
            weights,
            norm,
        }
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.centres
            .iter()
            .zip(&self.weights)
            .map(|(z, w)| w * matern52(x, z))
            .sum()
    }
}

/// A 6×6 lattice in order of increasing |f| (so that the levels are refuted a few at a time,
/// not all by the first observation), then every centre twice (exact duplicates), then a
/// cluster 10⁻⁶ wide at the first centre; targets f + N(0, σ²) noise.
fn expansion_data(f: &Expansion, seed: u64) -> Data {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};
    use rand_distr::StandardNormal;
    let mut xs: Vec<Vec<f64>> = (0..6)
        .flat_map(|i| (0..6).map(move |j| vec![f64::from(i) / 5.0, f64::from(j) / 5.0]))
        .collect();
    xs.sort_by(|a, b| f.value(a).abs().total_cmp(&f.value(b).abs()));
    for z in &f.centres {
        xs.push(z.to_vec());
        xs.push(z.to_vec());
    }
    for k in 0..6 {
        let off = 1e-6 * (f64::from(k) - 2.5);
        xs.push(vec![f.centres[0][0] + off, f.centres[0][1] - off]);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    xs.into_iter()
        .map(|x| {
            let noise: f64 = rng.sample(StandardNormal);
            let y = f.value(&x) + SIGMA * noise;
            (x, y)
        })
        .collect()
}

/// Runs the wrapper over the data, and beside it one plain bound per level k = 1, …, k* + 1,
/// each built directly with B_k = 2^{k−1}B₀ and the same δ, fed the same observations and asked
/// the same queries (diagnostics after every observation, as the wrapper's check; then the
/// bounds on `q`). After every observation: the level is at most k*, and the wrapper's bounds
/// and diagnostics are, bit for bit, those of the plain bound of its level. Returns the levels
/// reached after each observation.
fn levels_against_plain_bounds<B: AdjustableNorm>(
    make: impl Fn(f64) -> B,
    f: &Expansion,
    data: &Data,
    b0: f64,
    q: &[Vec<f64>],
) -> Vec<u32> {
    // k* = min{k : B_k ≥ ‖f‖}, from B_k = b0·2^{k−1} written out.
    let level_norm = |k: u32| b0 * (1u64 << (k - 1)) as f64;
    let k_star = (1..).find(|&k| level_norm(k) >= f.norm).unwrap();
    let mut wrapper = AdaptiveNorm::new(make(b0)).unwrap();
    let mut plain: Vec<B> = (1..=k_star + 1).map(|k| make(level_norm(k))).collect();
    for p in &plain {
        assert_eq!(p.delta(), DELTA);
        p.diagnostics();
    }
    let truth: Vec<f64> = q.iter().map(|x| f.value(x)).collect();
    let mut levels = Vec::new();
    for (t, (x, y)) in data.iter().enumerate() {
        wrapper.observe(x, *y).unwrap();
        let got = wrapper.bounds(q).unwrap();
        let want: Vec<Bounds> = plain
            .iter_mut()
            .map(|p| {
                p.observe(x, *y).unwrap();
                p.diagnostics();
                p.bounds(q).unwrap()
            })
            .collect();
        let level = wrapper.level();
        assert!(
            level <= k_star,
            "t = {t}: level {level} passed k* = {k_star} (‖f‖ = {}, B = {})",
            f.norm,
            wrapper.norm_bound()
        );
        let k = level as usize - 1;
        assert!(
            same_bits(&got, &want[k]),
            "t = {t}, level {level}: the wrapper's bounds are not those of a plain bound with \
             B = {} and δ = {DELTA}; largest UCB gap {:e}",
            level_norm(level),
            (0..q.len())
                .map(|j| (got.ucb[j] - want[k].ucb[j]).abs())
                .fold(0.0, f64::max)
        );
        assert_eq!(wrapper.diagnostics(), plain[k].diagnostics(), "t = {t}");
        assert_eq!(
            (
                wrapper.norm_bound(),
                wrapper.delta(),
                wrapper.inner().delta()
            ),
            (level_norm(level), DELTA, DELTA)
        );
        // Levels with B_k ≥ ‖f‖ on this sample: never empty, and their bounds contain f (so the
        // wrapper's do from the first round at k* on).
        for (i, p) in plain.iter().enumerate().skip(k_star as usize - 1) {
            assert!(!p.diagnostics().empty_set(), "t = {t}: level {}", i + 1);
            for (j, v) in truth.iter().enumerate() {
                assert!(
                    want[i].lcb[j] <= *v && *v <= want[i].ucb[j],
                    "t = {t}, level {}: f = {v} outside [{}, {}]",
                    i + 1,
                    want[i].lcb[j],
                    want[i].ucb[j]
                );
            }
        }
        levels.push(level);
    }
    levels
}

#[test]
fn every_level_is_the_plain_bound_with_the_same_delta_and_never_passes_k_star() {
    // ‖f‖ = 8 and B₀ = ‖f‖/48: B_k/‖f‖ = 2^{k−1}/48, so k* = 7 (B_6 = 2‖f‖/3, B_7 = 4‖f‖/3).
    let f = Expansion::new(8.0);
    assert!((f.norm - 8.0).abs() < 1e-12, "{}", f.norm);
    // The crate's kernel is the one written out above.
    for (x, z) in [([0.1, 0.9], [0.3, 0.2]), ([0.5, 0.5], [0.5, 0.5 + 1e-7])] {
        assert!((kernel().eval(&x, &z) - matern52(&x, &z)).abs() < 1e-15);
    }
    let b0 = f.norm / 48.0;
    let q: Vec<Vec<f64>> = (0..7)
        .flat_map(|i| {
            (0..7).map(move |j| vec![(f64::from(i) + 0.5) / 7.0, (f64::from(j) + 0.3) / 7.0])
        })
        .chain(f.centres.iter().map(|z| z.to_vec()))
        .collect();
    for seed in [11, 12] {
        let data = expansion_data(&f, seed);
        for (name, levels) in [
            ("dmm", levels_against_plain_bounds(dmm, &f, &data, b0, &q)),
            ("cmm", levels_against_plain_bounds(cmm, &f, &data, b0, &q)),
        ] {
            // Several refutations, most levels compared with their plain bound, and k* reached.
            let distinct: std::collections::BTreeSet<u32> = levels.iter().copied().collect();
            assert!(
                distinct.len() >= 5,
                "{name}, seed {seed}: levels {levels:?}"
            );
            assert_eq!(
                levels.last(),
                Some(&7),
                "{name}, seed {seed}: levels {levels:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Snapshots.

#[cfg(feature = "serde")]
#[test]
fn a_snapshot_restores_the_level_the_log_and_the_bound_bit_for_bit() {
    use kernel_bandits::snapshot::Snapshot;
    let problem = problem(8);
    let mut d = AdaptiveNorm::new(dmm(0.5)).unwrap();
    let data = play(&mut d, &problem);
    assert!(!d.doublings().is_empty());
    let mut restored = AdaptiveNorm::<Dmm<Matern>>::from_json(&d.to_json().unwrap()).unwrap();
    let q = queries(&problem, &data);
    assert!(same_bits(
        &d.bounds(&q).unwrap(),
        &restored.bounds(&q).unwrap()
    ));
    assert_eq!(
        (d.level(), d.doublings()),
        (restored.level(), restored.doublings())
    );
    for (x, y) in structured(&problem) {
        d.observe(&x, y).unwrap();
        restored.observe(&x, y).unwrap();
    }
    assert!(same_bits(
        &d.bounds(&q).unwrap(),
        &restored.bounds(&q).unwrap()
    ));
    assert_eq!(d.doublings(), restored.doublings());
}

#[cfg(feature = "serde")]
#[test]
fn snapshots_of_the_split_delta_are_refused() {
    use kernel_bandits::SnapshotError;
    use kernel_bandits::snapshot::{FORMAT_VERSION, Snapshot};
    let mut d = AdaptiveNorm::new(dmm(0.01)).unwrap();
    for (x, y) in duplicates() {
        d.observe(&x, y * 1e-4).unwrap();
    }
    assert!(d.level() >= 2, "{}", d.level());
    let json = d.to_json().unwrap();
    assert!(AdaptiveNorm::<Dmm<Matern>>::from_json(&json).is_ok());
    // Version 4 split δ over the levels (the inner bound at δ_k = 6δ/(π²k²)): refused by its
    // version before its state is read.
    let v4 = json.replacen(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":4", 1);
    assert_eq!(
        AdaptiveNorm::<Dmm<Matern>>::from_json(&v4).err(),
        Some(Error::Snapshot(SnapshotError::Version {
            found: 4,
            supported: FORMAT_VERSION
        }))
    );
    // A state with the inner bound at the split's δ_k, re-saved with a valid checksum: refused
    // by the check of the state.
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let k = f64::from(d.level());
    let split = 6.0 * DELTA / (std::f64::consts::PI.powi(2) * k * k);
    value["state"]["inner"]["params"]["delta"] = serde_json::json!(split);
    let state: AdaptiveNorm<Dmm<Matern>> = serde_json::from_value(value["state"].clone()).unwrap();
    assert_eq!(state.inner().delta(), split);
    match AdaptiveNorm::<Dmm<Matern>>::from_json(&state.to_json().unwrap()) {
        Err(Error::Snapshot(SnapshotError::Inconsistent(why))) => {
            assert!(why.contains("delta"), "{why}")
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a state at the split's delta was restored"),
    }
}
