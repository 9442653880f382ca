//! Safe exploration and level sets (`kernel_bandits::safe`).
//!
//! References: a dense AMM-UCB written out with nalgebra (Flynn & Reeb 2024, Eq. 8 and
//! Cor. 4.6: R̃² = σ² ld + a0 B² + 2σ² ln(1/δ), U = μ ± (R̃/√a0)·ρ), rebuilt from scratch on all
//! the data at every round; the running intersections, the safe set, the maximisers, the
//! expanders (each from a dense bound rebuilt on the data plus the optimistic observation) and
//! the level-set classes computed from their definitions by the test; and validity against the
//! true values of RKHS functions of known norm.
//! Structured cases: a design mirrored about the seed (ties in width between mirror images),
//! duplicated candidates, two candidates one ulp apart, a constraint observed at the seed
//! repeatedly, data that refute the assumptions, and every kind of bad input.

use kernel_bandits::Error;
use kernel_bandits::bound::{AdaptiveNorm, BoundConfig, BoundKind};
use kernel_bandits::prelude::*;
use kernel_bandits::safe::{Level, LevelSetAgent, SafeAgent, SafeRole};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

const SIGMA: f64 = 0.05;
const NORM: f64 = 1.5;
const DELTA: f64 = 0.01;
const SCALE: f64 = 0.5;

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(SIGMA)
        .norm_bound(NORM)
        .delta(DELTA)
        .scale(SCALE)
}

/// AMM-UCB's (lcb, ucb) at `queries` from the data (xs, ys), written out densely.
fn dense_amm(kernel: &Rbf, xs: &[Vec<f64>], ys: &[f64], queries: &[Vec<f64>]) -> Vec<(f64, f64)> {
    let a0 = SIGMA * SIGMA / SCALE;
    let t = xs.len();
    let (ld, alpha, chol) = if t == 0 {
        (0.0, DVector::zeros(0), None)
    } else {
        let k = DMatrix::from_fn(t, t, |i, j| kernel.eval(&xs[i], &xs[j]));
        let shifted = &k + DMatrix::identity(t, t) * a0;
        let chol = shifted.cholesky().expect("K + a0 I is positive definite");
        let ld = (0..t).map(|i| 2.0 * chol.l()[(i, i)].ln()).sum::<f64>() - t as f64 * a0.ln();
        let alpha = chol.solve(&DVector::from_column_slice(ys));
        (ld, alpha, Some(chol))
    };
    let radius_sq =
        SIGMA * SIGMA * ld + a0 * NORM * NORM + 2.0 * SIGMA * SIGMA * (1.0 / DELTA).ln();
    let beta = (radius_sq / a0).sqrt();
    queries
        .iter()
        .map(|q| {
            let (mean, var) = match &chol {
                None => (0.0, kernel.eval(q, q)),
                Some(chol) => {
                    let kq = DVector::from_fn(t, |i, _| kernel.eval(&xs[i], q));
                    let mean = kq.dot(&alpha);
                    let var = kernel.eval(q, q) - kq.dot(&chol.solve(&kq));
                    (mean, var.max(0.0))
                }
            };
            let w = beta * var.sqrt();
            (mean - w, mean + w)
        })
        .collect()
}

/// g = Σ c_i k(z_i, ·), with ‖g‖_H² = cᵀKc.
struct RkhsFunction {
    kernel: Rbf,
    centres: Vec<Vec<f64>>,
    coefficients: Vec<f64>,
}

impl RkhsFunction {
    fn eval(&self, x: &[f64]) -> f64 {
        self.centres
            .iter()
            .zip(&self.coefficients)
            .map(|(z, c)| c * self.kernel.eval(z, x))
            .sum()
    }

    fn norm(&self) -> f64 {
        let mut s = 0.0;
        for (zi, ci) in self.centres.iter().zip(&self.coefficients) {
            for (zj, cj) in self.centres.iter().zip(&self.coefficients) {
                s += ci * cj * self.kernel.eval(zi, zj);
            }
        }
        s.sqrt()
    }
}

/// The running intervals, safe set, maximisers and expanders of SafeOpt, from their
/// definitions, over the dense bound rebuilt at every round.
struct Reference {
    f_lo: Vec<f64>,
    f_hi: Vec<f64>,
    g_lo: Vec<f64>,
    g_hi: Vec<f64>,
    safe: Vec<bool>,
}

impl Reference {
    fn new(n: usize, seed: &[usize]) -> Self {
        let mut safe = vec![false; n];
        for &j in seed {
            safe[j] = true;
        }
        Self {
            f_lo: vec![f64::NEG_INFINITY; n],
            f_hi: vec![f64::INFINITY; n],
            g_lo: vec![f64::NEG_INFINITY; n],
            g_hi: vec![f64::INFINITY; n],
            safe,
        }
    }

    fn intersect(&mut self, f: &[(f64, f64)], g: &[(f64, f64)], h: f64) {
        for j in 0..self.safe.len() {
            self.f_lo[j] = self.f_lo[j].max(f[j].0);
            self.f_hi[j] = self.f_hi[j].min(f[j].1);
            self.g_lo[j] = self.g_lo[j].max(g[j].0);
            self.g_hi[j] = self.g_hi[j].min(g[j].1);
            if self.g_lo[j] >= h {
                self.safe[j] = true;
            }
        }
    }

    fn maximisers(&self) -> Vec<usize> {
        let best = (0..self.safe.len())
            .filter(|&j| self.safe[j])
            .map(|j| self.f_lo[j])
            .fold(f64::NEG_INFINITY, f64::max);
        (0..self.safe.len())
            .filter(|&j| self.safe[j] && self.f_hi[j] >= best)
            .collect()
    }

    /// Whether observing g(x_j) = u^g(x_j) would make some candidate outside the safe set, not
    /// already known to be unsafe, safe.
    fn is_expander(
        &self,
        j: usize,
        kernel: &Rbf,
        xs: &[Vec<f64>],
        gs: &[f64],
        candidates: &[Vec<f64>],
        h: f64,
    ) -> bool {
        let mut xs = xs.to_vec();
        let mut gs = gs.to_vec();
        xs.push(candidates[j].clone());
        gs.push(self.g_hi[j]);
        let after = dense_amm(kernel, &xs, &gs, candidates);
        // Candidates already known unsafe (u^g < h) are not counted, as documented.
        (0..candidates.len())
            .any(|k| !self.safe[k] && self.g_hi[k] >= h && self.g_lo[k].max(after[k].0) >= h)
    }

    fn widths(&self) -> Vec<f64> {
        (0..self.safe.len())
            .map(|j| (self.f_hi[j] - self.f_lo[j]).max(self.g_hi[j] - self.g_lo[j]))
            .collect()
    }
}

/// Indices whose value lies within `tol` of `level` (where rounding may decide a test).
fn near(values: &[f64], level: f64, tol: f64) -> Vec<usize> {
    (0..values.len())
        .filter(|&j| (values[j] - level).abs() <= tol)
        .collect()
}

/// Asserts that two index sets agree outside `excused`.
fn same_sets(what: &str, round: usize, got: &[usize], want: &[usize], excused: &[usize]) {
    let got: Vec<usize> = got
        .iter()
        .copied()
        .filter(|j| !excused.contains(j))
        .collect();
    let want: Vec<usize> = want
        .iter()
        .copied()
        .filter(|j| !excused.contains(j))
        .collect();
    assert_eq!(
        got, want,
        "round {round}: {what} differ (excused near ties: {excused:?})"
    );
}

/// A 1-D design mirrored about the seed x = 0.5, with a duplicated candidate and two
/// candidates one ulp apart; the constraint g is symmetric about 0.5 too, so that mirror
/// images tie in width.
fn mirrored_candidates() -> Vec<Vec<f64>> {
    let mut c: Vec<Vec<f64>> = (0..21).map(|i| vec![0.2 + 0.6 * i as f64 / 20.0]).collect();
    c.push(vec![0.5]); // a duplicate of the seed
    c.push(vec![0.35]);
    c.push(vec![f64::from_bits(0.35f64.to_bits() + 1)]);
    c
}

#[test]
fn safeopt_matches_a_dense_reference_after_every_update() {
    let kernel = Rbf::new(0.2).unwrap();
    // Safe (g ≥ 0.2) on about [0.3, 0.7], unsafe towards both ends.
    let g = RkhsFunction {
        kernel,
        centres: vec![vec![0.5], vec![0.15], vec![0.85]],
        coefficients: vec![1.0, -0.5, -0.5],
    };
    let f = RkhsFunction {
        kernel,
        centres: vec![vec![0.5]],
        coefficients: vec![1.2],
    };
    assert!(g.norm() <= NORM && f.norm() <= NORM);
    let h = 0.2;
    let candidates = mirrored_candidates();
    let seed = [10]; // x = 0.5
    assert!(g.eval(&candidates[10]) >= h);
    // The objective's bound comes with data: f observed three times at every tenth of
    // [0.2, 0.8], so that its maximisers narrow down early and expanders get chosen.
    let mut objective = Amm::new(kernel, params()).unwrap();
    let (mut f_xs, mut fs) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for i in 0..7 {
            let x = vec![0.2 + 0.1 * i as f64];
            objective.observe(&x, f.eval(&x)).unwrap();
            fs.push(f.eval(&x));
            f_xs.push(x);
        }
    }
    let constraint = Amm::new(kernel, params()).unwrap();
    let mut agent = SafeAgent::new(objective, vec![constraint], &[h], &candidates, &seed).unwrap();
    let mut reference = Reference::new(candidates.len(), &seed);
    let (mut xs, mut gs) = (Vec::new(), Vec::new());
    let mut rng = ChaCha8Rng::seed_from_u64(39);
    let mut expanders_seen = 0;
    let mut chose_expander = 0;
    let mut grew = false;
    for round in 0..25 {
        let f_now = dense_amm(&kernel, &f_xs, &fs, &candidates);
        let g_now = dense_amm(&kernel, &xs, &gs, &candidates);
        reference.intersect(&f_now, &g_now, h);
        let tol = 1e-9;
        // Running intervals.
        let got_g = &agent.constraint_intervals()[0];
        for j in 0..candidates.len() {
            for (got, want, what) in [
                (got_g.lower()[j], reference.g_lo[j], "ℓ^g"),
                (got_g.upper()[j], reference.g_hi[j], "u^g"),
                (
                    agent.objective_intervals().lower()[j],
                    reference.f_lo[j],
                    "ℓ^f",
                ),
                (
                    agent.objective_intervals().upper()[j],
                    reference.f_hi[j],
                    "u^f",
                ),
            ] {
                assert!(
                    (got - want).abs() <= tol * (1.0 + want.abs()),
                    "round {round}, candidate {j}: {what} {got} against the dense {want}"
                );
            }
        }
        // The safe set, the maximisers and the expanders.
        let excused_safe = near(&reference.g_lo, h, tol);
        let want_safe: Vec<usize> = (0..candidates.len())
            .filter(|&j| reference.safe[j])
            .collect();
        same_sets(
            "safe sets",
            round,
            &agent.safe_set(),
            &want_safe,
            &excused_safe,
        );
        let best = want_safe
            .iter()
            .map(|&j| reference.f_lo[j])
            .fold(f64::NEG_INFINITY, f64::max);
        let mut excused = excused_safe.clone();
        excused.extend(near(&reference.f_hi, best, tol));
        same_sets(
            "maximisers",
            round,
            &agent.maximisers(),
            &reference.maximisers(),
            &excused,
        );
        let want_expanders: Vec<usize> = want_safe
            .iter()
            .copied()
            .filter(|&j| reference.is_expander(j, &kernel, &xs, &gs, &candidates, h))
            .collect();
        let got_expanders = agent.expanders().unwrap();
        same_sets(
            "expanders",
            round,
            &got_expanders,
            &want_expanders,
            &excused_safe,
        );
        expanders_seen += want_expanders.len();
        // The choice: the widest of M ∪ G (mirror images tie to rounding: compare widths).
        let choice = agent.next().unwrap();
        let widths = reference.widths();
        let pool: Vec<usize> = reference
            .maximisers()
            .into_iter()
            .chain(want_expanders.iter().copied())
            .collect();
        let widest = pool.iter().map(|&j| widths[j]).fold(f64::MIN, f64::max);
        assert!(
            (widths[choice.index] - widest).abs() <= tol * (1.0 + widest),
            "round {round}: chose {} of width {}, the widest of M ∪ G is {widest}",
            choice.index,
            widths[choice.index]
        );
        assert!(
            pool.contains(&choice.index),
            "round {round}: {choice:?} is not in M ∪ G"
        );
        if choice.role == SafeRole::Expander {
            assert!(want_expanders.contains(&choice.index));
            chose_expander += 1;
        }
        // Every evaluation is safe.
        let x = &candidates[choice.index];
        assert!(g.eval(x) >= h, "round {round}: unsafe evaluation at {x:?}");
        let noise = |rng: &mut ChaCha8Rng| {
            let z: f64 = StandardNormal.sample(rng);
            0.3 * SIGMA * z
        };
        let (fy, gy) = (f.eval(x) + noise(&mut rng), g.eval(x) + noise(&mut rng));
        agent.update(choice.index, fy, &[gy]).unwrap();
        xs.push(x.clone());
        f_xs.push(x.clone());
        fs.push(fy);
        gs.push(gy);
        grew |= agent.safe_set().len() > 2;
    }
    eprintln!(
        "safe set {} of {} candidates after 25 rounds; {expanders_seen} expanders met, {chose_expander} chosen",
        agent.safe_set().len(),
        candidates.len()
    );
    assert!(chose_expander > 0, "the run never chose an expander");
    assert!(
        grew,
        "the safe set never grew beyond the seed and its duplicate"
    );
    // Every candidate certified safe is truly safe.
    for j in agent.safe_set() {
        assert!(
            g.eval(&candidates[j]) >= h,
            "candidate {j} certified but unsafe"
        );
    }
}

#[test]
fn level_sets_match_a_dense_reference_and_are_correct() {
    let kernel = Rbf::new(0.2).unwrap();
    let f = RkhsFunction {
        kernel,
        centres: vec![vec![0.5], vec![0.15], vec![0.85]],
        coefficients: vec![1.0, -0.5, -0.5],
    };
    assert!(f.norm() <= NORM);
    let (h, eps) = (0.2, 0.1);
    let candidates = mirrored_candidates();
    let mut agent =
        LevelSetAgent::new(Amm::new(kernel, params()).unwrap(), &candidates, h, eps).unwrap();
    let n = candidates.len();
    let (mut lo, mut hi) = (vec![f64::NEG_INFINITY; n], vec![f64::INFINITY; n]);
    let mut want = vec![Level::Unclassified; n];
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut rng = ChaCha8Rng::seed_from_u64(2013);
    let tol = 1e-9;
    for round in 0..200 {
        let now = dense_amm(&kernel, &xs, &ys, &candidates);
        for j in 0..n {
            lo[j] = lo[j].max(now[j].0);
            hi[j] = hi[j].min(now[j].1);
            if want[j] == Level::Unclassified {
                if lo[j] >= h - eps {
                    want[j] = Level::Above;
                } else if hi[j] <= h + eps {
                    want[j] = Level::Below;
                }
            }
        }
        let mut excused = near(&lo, h - eps, tol);
        excused.extend(near(&hi, h + eps, tol));
        for level in [Level::Above, Level::Below, Level::Unclassified] {
            let w: Vec<usize> = (0..n).filter(|&j| want[j] == level).collect();
            same_sets(
                &format!("{level:?} classes"),
                round,
                &agent.indices(level),
                &w,
                &excused,
            );
        }
        let Some(choice) = agent.next().unwrap() else {
            break;
        };
        // The most ambiguous unclassified candidate (mirror images tie: compare values).
        let ambiguity = |j: usize| (hi[j] - h).min(h - lo[j]);
        let top = (0..n)
            .filter(|&j| want[j] == Level::Unclassified)
            .map(ambiguity)
            .fold(f64::MIN, f64::max);
        assert!(
            (ambiguity(choice.index) - top).abs() <= tol * (1.0 + top.abs()),
            "round {round}: ambiguity {} chosen, {top} the largest",
            ambiguity(choice.index)
        );
        let z: f64 = StandardNormal.sample(&mut rng);
        let y = f.eval(&candidates[choice.index]) + 0.3 * SIGMA * z;
        agent.update(choice.index, y).unwrap();
        xs.push(candidates[choice.index].clone());
        ys.push(y);
    }
    assert!(
        agent.next().unwrap().is_none(),
        "not every candidate classified in 200 rounds"
    );
    let (mut above, mut below) = (0, 0);
    for (j, x) in candidates.iter().enumerate() {
        match agent.levels()[j] {
            Level::Above => {
                above += 1;
                assert!(
                    f.eval(x) >= h - eps,
                    "candidate {j} above but f = {}",
                    f.eval(x)
                )
            }
            Level::Below => {
                below += 1;
                assert!(
                    f.eval(x) <= h + eps,
                    "candidate {j} below but f = {}",
                    f.eval(x)
                )
            }
            Level::Unclassified => unreachable!(),
        }
    }
    eprintln!(
        "{above} above, {below} below after {} evaluations",
        agent.evaluations()
    );
    assert!(above > 0 && below > 0);
}

/// A 2-D constraint of known norm, safe on a band through the middle of [0, 1]².
fn band() -> RkhsFunction {
    let kernel = Rbf::new(0.25).unwrap();
    RkhsFunction {
        kernel,
        centres: vec![
            vec![0.5, 0.5],
            vec![0.2, 0.2],
            vec![0.8, 0.8],
            vec![0.1, 0.9],
        ],
        coefficients: vec![1.0, 0.6, 0.6, -0.8],
    }
}

fn grid(side: usize) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for i in 0..side {
        for j in 0..side {
            let s = (side - 1) as f64;
            out.push(vec![i as f64 / s, j as f64 / s]);
        }
    }
    out
}

#[test]
fn every_evaluation_is_safe_and_the_safe_set_grows_with_every_valid_bound() {
    let g = band();
    let f = RkhsFunction {
        kernel: g.kernel,
        centres: vec![vec![0.8, 0.8], vec![0.3, 0.6]],
        coefficients: vec![1.0, 0.5],
    };
    assert!(
        g.norm() <= 2.0 && f.norm() <= 2.0,
        "{} {}",
        g.norm(),
        f.norm()
    );
    let h = 0.0;
    let candidates = grid(20);
    let truly_safe: Vec<bool> = candidates.iter().map(|x| g.eval(x) >= h).collect();
    // The seed: the safe candidate nearest (0.5, 0.5).
    let seed = (0..candidates.len())
        .min_by(|&a, &b| {
            let d = |x: &[f64]| (x[0] - 0.5).powi(2) + (x[1] - 0.5).powi(2);
            d(&candidates[a]).total_cmp(&d(&candidates[b]))
        })
        .unwrap();
    assert!(truly_safe[seed]);
    let config = BoundConfig::new().params(
        BoundParams::new()
            .sigma(0.02)
            .norm_bound(2.0)
            .delta(0.01)
            .horizon(40),
    );
    for kind in BoundKind::VALID {
        let objective = kind.build(g.kernel, &config).unwrap();
        let constraint = kind.build(g.kernel, &config).unwrap();
        let mut agent =
            SafeAgent::new(objective, vec![constraint], &[h], &candidates, &[seed]).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        for round in 0..40 {
            let choice = agent.next().unwrap();
            let x = &candidates[choice.index];
            assert!(
                truly_safe[choice.index],
                "{kind:?}, round {round}: unsafe evaluation at {x:?}"
            );
            let z: [f64; 2] = [
                StandardNormal.sample(&mut rng),
                StandardNormal.sample(&mut rng),
            ];
            agent
                .update(
                    choice.index,
                    f.eval(x) + 0.02 * z[0],
                    &[g.eval(x) + 0.02 * z[1]],
                )
                .unwrap();
            for j in agent.safe_set() {
                assert!(
                    truly_safe[j],
                    "{kind:?}, round {round}: candidate {j} certified, unsafe"
                );
            }
        }
        let certified = agent.safe_set().len();
        let total = truly_safe.iter().filter(|&&s| s).count();
        eprintln!(
            "{kind:?}: {certified} of {total} safe candidates certified after 40 evaluations"
        );
        // AY-GP-UCB's and IGP-UCB's wider bounds may not leave the seed in 40 evaluations.
        if matches!(kind, BoundKind::Amm | BoundKind::Dmm | BoundKind::Cmm) {
            assert!(certified > 100, "{kind:?}: the safe set hardly grew");
        }
        let best = agent.recommend().unwrap();
        let best_safe = agent
            .safe_set()
            .into_iter()
            .map(|j| f.eval(&candidates[j]))
            .fold(f64::MIN, f64::max);
        assert!(
            best_safe - f.eval(&best.x) <= best.gap,
            "{kind:?}: the gap does not hold"
        );
    }
}

#[test]
fn adaptive_norm_is_refused_for_constraints_but_not_for_the_objective() {
    let kernel = Rbf::new(0.3).unwrap();
    let dmm = || Dmm::new(kernel, params()).unwrap();
    let candidates = [[0.0], [0.5], [1.0]];
    let adaptive = AdaptiveNorm::new(dmm()).unwrap();
    let err = SafeAgent::new(dmm(), vec![adaptive.clone()], &[0.0], &candidates, &[1]).unwrap_err();
    assert!(
        matches!(&err, Error::Unsupported { what } if what.contains("AdaptiveNorm") && what.contains("constraint 0")),
        "{err}"
    );
    // Boxed, too.
    let boxed: Box<dyn ConfidenceBound> = Box::new(adaptive.clone());
    assert!(boxed.learns_norm());
    SafeAgent::new(adaptive, vec![dmm()], &[0.0], &candidates, &[1]).unwrap();
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let kernel = Rbf::new(0.3).unwrap();
    let amm = || Amm::new(kernel, params()).unwrap();
    let c = [[0.0], [0.5], [1.0]];
    let none: [[f64; 1]; 0] = [];
    assert!(matches!(
        SafeAgent::new(amm(), vec![amm()], &[0.0], &none, &[0]),
        Err(Error::NoArms)
    ));
    assert!(matches!(
        SafeAgent::new(amm(), Vec::<Amm<Rbf>>::new(), &[], &c, &[0]),
        Err(Error::InvalidParameter {
            name: "constraints",
            ..
        })
    ));
    assert!(matches!(
        SafeAgent::new(amm(), vec![amm()], &[0.0, 1.0], &c, &[0]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        SafeAgent::new(amm(), vec![amm()], &[f64::NAN], &c, &[0]),
        Err(Error::InvalidParameter {
            name: "threshold",
            ..
        })
    ));
    assert!(matches!(
        SafeAgent::new(amm(), vec![amm()], &[0.0], &c, &[]),
        Err(Error::InvalidParameter { name: "seed", .. })
    ));
    assert!(matches!(
        SafeAgent::new(amm(), vec![amm()], &[0.0], &c, &[3]),
        Err(Error::ArmOutOfRange { index: 3, arms: 3 })
    ));
    assert!(SafeAgent::new(amm(), vec![amm()], &[0.0], &[[0.0], [f64::NAN]], &[0]).is_err());
    // A constraint that already holds 2-D data, with 1-D candidates.
    let mut two_d = amm();
    two_d.observe(&[0.1, 0.2], 0.3).unwrap();
    assert!(matches!(
        SafeAgent::new(amm(), vec![two_d], &[0.0], &c, &[0]),
        Err(Error::DimensionMismatch { .. })
    ));

    let mut agent = SafeAgent::new(amm(), vec![amm()], &[0.0], &c, &[1]).unwrap();
    agent.update(1, 0.4, &[0.5]).unwrap();
    let before = format!("{agent:?}");
    for (index, y, g) in [
        (3, 0.0, vec![0.0]),
        (0, f64::NAN, vec![0.0]),
        (0, 0.0, vec![f64::INFINITY]),
        (0, 0.0, vec![]),
        (0, 0.0, vec![0.0, 0.0]),
    ] {
        assert!(
            agent.update(index, y, &g).is_err(),
            "update({index}, {y}, {g:?}) accepted"
        );
        assert_eq!(
            format!("{agent:?}"),
            before,
            "update({index}, {y}, {g:?}) changed the agent"
        );
    }

    assert!(LevelSetAgent::new(amm(), &none, 0.0, 0.1).is_err());
    assert!(LevelSetAgent::new(amm(), &c, f64::INFINITY, 0.1).is_err());
    assert!(LevelSetAgent::new(amm(), &c, 0.0, -0.1).is_err());
    assert!(LevelSetAgent::new(amm(), &c, 0.0, f64::NAN).is_err());
    let mut lse = LevelSetAgent::new(amm(), &c, 0.0, 0.1).unwrap();
    let before = format!("{lse:?}");
    assert!(lse.update(5, 0.0).is_err() && lse.update(0, f64::NAN).is_err());
    assert_eq!(format!("{lse:?}"), before);
}

#[test]
fn refuted_assumptions_stop_the_agents_and_say_so() {
    let kernel = Rbf::new(0.3).unwrap();
    let tight = BoundParams::new().sigma(0.001).norm_bound(0.01).delta(0.01);
    let dmm = || Dmm::new(kernel, tight).unwrap();
    let c = [[0.0], [0.5], [1.0]];
    let mut agent = SafeAgent::new(dmm(), vec![dmm()], &[-1.0], &c, &[1]).unwrap();
    let safe_before = agent.safe_set();
    // Values ±5 at one point: impossible for ‖g‖ ≤ 0.01 with σ = 0.001.
    agent.update(1, 0.0, &[5.0]).unwrap();
    agent.update(1, 0.0, &[-5.0]).unwrap();
    assert!(agent.refuted().is_some());
    let err = agent.next().unwrap_err();
    assert!(
        matches!(&err, Error::Refuted { what } if what.contains("constraint 0")),
        "{err}"
    );
    assert!(matches!(agent.recommend(), Err(Error::Refuted { .. })));
    assert_eq!(agent.evaluations(), 2, "the observations are kept");
    assert!(agent.safe_set().len() >= safe_before.len());

    let mut lse = LevelSetAgent::new(dmm(), &c, 0.0, 0.1).unwrap();
    lse.update(1, 5.0).unwrap();
    lse.update(1, -5.0).unwrap();
    assert!(matches!(lse.next(), Err(Error::Refuted { .. })));
}

#[test]
fn a_threshold_above_every_value_keeps_the_seed_alone() {
    let kernel = Rbf::new(0.3).unwrap();
    let amm = || Amm::new(kernel, params()).unwrap();
    let c: Vec<[f64; 1]> = (0..11).map(|i| [i as f64 / 10.0]).collect();
    // g ≡ 0.1·k(0.5, ·) ≤ 0.1 < h = 10: nothing beyond the seed may become safe.
    let mut agent = SafeAgent::new(amm(), vec![amm()], &[10.0], &c, &[5]).unwrap();
    for _ in 0..10 {
        let choice = agent.next().unwrap();
        assert_eq!(choice.index, 5);
        let v = 0.1 * kernel.eval(&[0.5], &c[choice.index]);
        agent.update(choice.index, v, &[v]).unwrap();
    }
    assert_eq!(agent.safe_set(), vec![5]);
    assert!(agent.expanders().unwrap().is_empty());
}
