//! The diagnosis travels with the bounds (`ConfidenceBound::evaluate_checked`): on data that
//! certainly refute B (an independent certificate: every f with ‖f‖_H ≤ B has |f| ≤ B, so its
//! residual exceeds the data radius R_t computed here by a dense Cholesky), DMM-UCB and CMM-UCB
//! report the set empty and every crossed point, through every wrapper; on well-specified data
//! nothing is flagged. And every bound reads back the observations it holds
//! (`ConfidenceBound::observations`) exactly.

use kernel_bandits::bound::{AnyBound, BoundConfig, BoundKind, CheckedBounds, Observations};
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector};

const SIGMA: f64 = 0.01;
const DELTA: f64 = 0.01;
const LENGTHSCALE: f64 = 0.5;

fn inputs() -> Vec<[f64; 2]> {
    vec![[0.1, 0.2], [0.6, 0.6], [0.9, 0.3], [0.3, 0.9], [0.5, 0.1]]
}

fn queries() -> Vec<[f64; 2]> {
    (0..25)
        .map(|i| [(i % 5) as f64 / 4.0, (i / 5) as f64 / 4.0])
        .collect()
}

fn params(norm_bound: f64) -> BoundParams {
    BoundParams::new()
        .sigma(SIGMA)
        .norm_bound(norm_bound)
        .delta(DELTA)
        .scale(1.0)
}

fn rbf(x: &[f64; 2], y: &[f64; 2]) -> f64 {
    let r2 = (x[0] - y[0]).powi(2) + (x[1] - y[1]).powi(2);
    (-r2 / (2.0 * LENGTHSCALE * LENGTHSCALE)).exp()
}

/// R_t² = a0 q_{a0} + σ² ld_{a0} + 2σ² ln(1/δ) (Flynn & Reeb 2024 Eq. 8, a0 = σ²/c, c = 1), by a
/// dense nalgebra Cholesky of K + a0 I.
fn data_radius_sq(x: &[[f64; 2]], y: &[f64]) -> f64 {
    let t = x.len();
    let a0 = SIGMA * SIGMA;
    let k = DMatrix::from_fn(t, t, |i, j| rbf(&x[i], &x[j])) + DMatrix::identity(t, t) * a0;
    let chol = k.cholesky().unwrap();
    let y = DVector::from_column_slice(y);
    let q = y.dot(&chol.solve(&y));
    let log_det: f64 = chol
        .l()
        .diagonal()
        .iter()
        .map(|l| 2.0 * l.ln())
        .sum::<f64>()
        - t as f64 * a0.ln();
    a0 * q + SIGMA * SIGMA * log_det + 2.0 * SIGMA * SIGMA * (1.0 / DELTA).ln()
}

/// The points where LCB > UCB or either is NaN, from the values alone.
fn crossed_by_hand(b: &Bounds) -> Vec<usize> {
    (0..b.len())
        .filter(|&j| b.lcb[j] > b.ucb[j] || b.lcb[j].is_nan() || b.ucb[j].is_nan())
        .collect()
}

fn check_refuted(checked: &CheckedBounds, plain: &Bounds, what: &str) {
    assert_eq!(&checked.bounds, plain, "{what}: the values are evaluate's");
    assert_eq!(checked.crossed, crossed_by_hand(plain), "{what}");
    assert!(checked.misspecified(), "{what}: not flagged");
    let text = checked.describe().expect("a description");
    assert!(
        text.contains("the data refute the assumptions"),
        "{what}: {text}"
    );
    if checked.crossed.is_empty() {
        assert!(
            text.contains("although LCB ≤ UCB at the 25 points"),
            "{what}: {text}"
        );
    } else {
        let counted = format!("LCB > UCB at {} of 25 points", checked.crossed.len());
        assert!(text.contains(&counted), "{what}: {text}");
    }
}

#[test]
fn refuted_assumptions_travel_with_the_bounds() {
    let x = inputs();
    let y: Vec<f64> = (0..x.len())
        .map(|i| if i % 2 == 0 { 5.0 } else { -5.0 })
        .collect();
    let norm_bound = 0.01;
    // Certificate: |f(x)| ≤ ‖f‖_H √k(x, x) = B for every f in the ball, so ‖f_t − y_t‖² ≥
    // Σ (|y_i| − B)², which exceeds R_t²: the confidence set is empty.
    let residual_floor: f64 = y.iter().map(|v| (v.abs() - norm_bound).powi(2)).sum();
    let radius_sq = data_radius_sq(&x, &y);
    assert!(
        residual_floor > 100.0 * radius_sq,
        "{residual_floor} vs {radius_sq}"
    );
    let kernel = Rbf::new(LENGTHSCALE).unwrap();
    let q = queries();
    let config = BoundConfig::new().params(params(norm_bound));
    for kind in [BoundKind::Dmm, BoundKind::Cmm] {
        let mut bound = kind.build(kernel, &config).unwrap();
        bound.observe_many(&x.as_points().unwrap(), &y).unwrap();
        let plain = bound.bounds(&q).unwrap();
        let checked = bound.bounds_checked(&q).unwrap();
        check_refuted(&checked, &plain, kind.name());
        // Both diagnostics see the set empty here (CMM over every a > 0, DMM on its grid), and
        // both bounds cross at every point.
        assert!(checked.diagnostics.empty_set(), "{kind}");
        assert_eq!(checked.crossed, (0..25).collect::<Vec<_>>(), "{kind}");
        let boxed: Box<dyn ConfidenceBound> = Box::new(bound.clone());
        let through_box = boxed.evaluate_checked(&q.as_points().unwrap()).unwrap();
        assert_eq!(through_box, checked, "{kind} through a Box");
    }
    // AMM-UCB cannot see it (R̃² at a0 is never negative, Flynn & Reeb 2024 Lemma C.2), and
    // its LCB ≤ UCB always: documented, not flagged.
    let mut amm = Amm::new(kernel, params(norm_bound)).unwrap();
    amm.observe_many(&x.as_points().unwrap(), &y).unwrap();
    assert!(!amm.bounds_checked(&q).unwrap().misspecified());
}

#[test]
fn well_specified_data_are_not_flagged() {
    // f = 0.5 k(·, z) has ‖f‖_H = 0.5 ≤ B = 2; the targets carry no noise.
    let z = [0.4, 0.5];
    let x = inputs();
    let y: Vec<f64> = x.iter().map(|p| 0.5 * rbf(p, &z)).collect();
    let kernel = Rbf::new(LENGTHSCALE).unwrap();
    let q = queries();
    for kind in [BoundKind::Amm, BoundKind::Dmm, BoundKind::Cmm] {
        let config = BoundConfig::new().params(params(2.0));
        let mut bound = kind.build(kernel, &config).unwrap();
        bound.observe_many(&x.as_points().unwrap(), &y).unwrap();
        let checked = bound.bounds_checked(&q).unwrap();
        assert!(!checked.misspecified(), "{kind}: {:?}", checked.describe());
        assert!(checked.crossed.is_empty() && checked.describe().is_none());
        assert_eq!(checked.bounds, bound.bounds(&q).unwrap());
    }
}

fn expected(x: &[[f64; 2]], y: &[f64]) -> Observations {
    Observations {
        dim: 2,
        inputs: x.iter().flatten().copied().collect(),
        targets: y.to_vec(),
    }
}

#[test]
fn every_bound_reads_back_its_observations() {
    // A duplicated input, which the sketched bounds store once with a count.
    let mut x = inputs();
    x.push(x[1]);
    let y: Vec<f64> = (0..x.len()).map(|i| 0.1 * i as f64 - 0.2).collect();
    let kernel = Rbf::new(LENGTHSCALE).unwrap();
    let config = BoundConfig::new().params(params(2.0).horizon(100));
    let mut bounds: Vec<(String, Box<dyn ConfidenceBound>)> = BoundKind::ALL
        .iter()
        .map(|kind| {
            let b: Box<dyn ConfidenceBound> = Box::new(kind.build(kernel, &config).unwrap());
            (kind.name().to_string(), b)
        })
        .collect();
    let dmm: AnyBound<Rbf> = BoundKind::Dmm.build(kernel, &config).unwrap();
    bounds.push(("adaptive".into(), Box::new(AdaptiveNorm::new(dmm).unwrap())));
    for (name, bound) in &mut bounds {
        assert_eq!(
            bound.observations().unwrap(),
            Observations::default(),
            "{name}"
        );
        bound
            .observe_many(&x[..4].as_points().unwrap(), &y[..4])
            .unwrap();
        for i in 4..x.len() {
            bound.observe(&x[i], y[i]).unwrap();
        }
        let read = bound.observations().unwrap();
        assert_eq!(read, expected(&x, &y), "{name}");
        assert_eq!(read.input(5), &x[1][..], "{name}");
        bound.truncate(3);
        assert_eq!(
            bound.observations().unwrap(),
            expected(&x[..3], &y[..3]),
            "{name}"
        );
        if bound.remove_oldest().is_ok() {
            assert_eq!(
                bound.observations().unwrap(),
                expected(&x[1..3], &y[1..3]),
                "{name}"
            );
        }
    }
}
