//! Bad input gets a typed error and changes nothing: NaN/∞ values, wrong dimensions, empty arm
//! sets and invalid parameters, for every bound and agent. "Unchanged" is checked by
//! comparing the bounds at probe points, bit for bit, before and after the rejected call.

use kernel_bandits::bound::{BoundConfig, BoundKind};
use kernel_bandits::prelude::*;
use nalgebra::DMatrix;

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(5.0)
        .delta(0.05)
        .scale(1.0)
        .horizon(100)
}

fn all_bounds() -> Vec<Box<dyn ConfidenceBound>> {
    let k = Matern::new(1.5, 0.4).unwrap();
    vec![
        Box::new(Ay::new(k, params()).unwrap()),
        Box::new(Igp::new(k, params()).unwrap()),
        Box::new(Amm::new(k, params()).unwrap()),
        Box::new(Dmm::new(k, params()).unwrap()),
        Box::new(Cmm::new(k, params()).unwrap()),
    ]
}

const PROBES: [[f64; 2]; 4] = [[0.0, 0.0], [0.3, 0.7], [0.31, 0.69], [1.0, 0.2]];

fn snapshot(bound: &dyn ConfidenceBound) -> (usize, Vec<u64>) {
    let b = bound.evaluate(&PROBES.as_points().unwrap()).unwrap();
    let bits = b
        .mean
        .iter()
        .chain(&b.lcb)
        .chain(&b.ucb)
        .map(|v| v.to_bits())
        .collect();
    (bound.len(), bits)
}

#[test]
fn rejected_observations_leave_every_bound_unchanged() {
    for mut bound in all_bounds() {
        for (x, y) in [([0.1, 0.2], 0.5), ([0.6, 0.6], -0.1), ([0.1, 0.2], 0.4)] {
            bound.observe(&x, y).unwrap();
        }
        let before = snapshot(bound.as_ref());
        let name = bound.name();
        let cases: Vec<(Vec<f64>, f64)> = vec![
            (vec![0.5, f64::NAN], 1.0),
            (vec![f64::INFINITY, 0.5], 1.0),
            (vec![0.5, 0.5], f64::NAN),
            (vec![0.5, 0.5], f64::NEG_INFINITY),
            (vec![0.5], 1.0),
            (vec![0.5, 0.5, 0.5], 1.0),
            (vec![], 1.0),
        ];
        for (x, y) in cases {
            let err = bound.observe(&x, y).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::NonFinite { .. }
                        | Error::DimensionMismatch { .. }
                        | Error::ZeroDimension
                ),
                "{name}: unexpected error {err:?} for x = {x:?}, y = {y}"
            );
            assert_eq!(
                snapshot(bound.as_ref()),
                before,
                "{name} changed after {x:?}, {y}"
            );
        }
        // A batch with a target too few names both counts, and changes nothing.
        let batch = [[0.2, 0.2], [0.4, 0.9], [0.8, 0.1]];
        let err = bound
            .observe_many(&batch.as_points().unwrap(), &[1.0, 2.0])
            .unwrap_err();
        assert_eq!(
            err,
            Error::LengthMismatch {
                what: "targets, one per point",
                expected: 3,
                got: 2
            },
            "{name}"
        );
        assert_eq!(err.to_string(), "targets, one per point: expected 3, got 2");
        assert_eq!(snapshot(bound.as_ref()), before, "{name}");
    }
}

#[test]
fn queries_with_bad_points_are_errors() {
    for mut bound in all_bounds() {
        bound.observe(&[0.1, 0.2], 0.5).unwrap();
        let wrong_dim = vec![vec![0.1, 0.2, 0.3]];
        assert!(matches!(
            bound.evaluate(&wrong_dim.as_points().unwrap()),
            Err(Error::DimensionMismatch {
                expected: 2,
                got: 3
            })
        ));
    }
}

#[test]
fn agents_reject_bad_arm_sets_and_rewards_without_changing() {
    let k = Rbf::new(0.5).unwrap();
    let mut agent = UcbAgent::new(Dmm::new(k, params()).unwrap());
    let arms = vec![vec![0.1, 0.9], vec![0.5, 0.5], vec![0.9, 0.1]];
    for _ in 0..3 {
        let i = agent.select(&arms).unwrap();
        agent.update(&arms[i], 0.3).unwrap();
    }
    let before = snapshot(agent.bound());

    let empty: Vec<Vec<f64>> = Vec::new();
    assert!(matches!(agent.select(&empty), Err(Error::NoArms)));
    let empty_arrays: [[f64; 2]; 0] = [];
    assert!(matches!(agent.select(&empty_arrays), Err(Error::NoArms)));
    let ragged = vec![vec![0.1, 0.2], vec![0.2, 0.1], vec![0.3]];
    let err = agent.select(&ragged).unwrap_err();
    assert_eq!(
        err,
        Error::RaggedPoints {
            index: 2,
            expected: 2,
            got: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "point 2 has 1 coordinates, the first point has 2"
    );
    let ragged = vec![vec![0.1, 0.2], vec![0.3]];
    assert!(matches!(
        agent.select(&ragged),
        Err(Error::RaggedPoints { index: 1, .. })
    ));
    let nan_arm = vec![vec![0.1, 0.2], vec![f64::NAN, 0.3]];
    assert!(matches!(
        agent.select(&nan_arm),
        Err(Error::NonFinite { .. })
    ));
    let inf_matrix = DMatrix::from_row_slice(2, 2, &[0.1, 0.2, 0.3, f64::INFINITY]);
    assert!(matches!(
        agent.select(&inf_matrix),
        Err(Error::NonFinite { .. })
    ));
    let wrong_dim = [[0.1, 0.2, 0.3]];
    assert!(matches!(
        agent.select(&wrong_dim),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(agent.update(&[0.5, 0.5], f64::NAN).is_err());
    assert!(agent.update(&[0.5, f64::NAN], 1.0).is_err());
    assert!(agent.update(&[0.5], 1.0).is_err());
    assert_eq!(snapshot(agent.bound()), before);

    let mut random = RandomAgent::new(3);
    assert!(matches!(random.select(&empty), Err(Error::NoArms)));
    random.update(&[0.1, 0.2], 1.0).unwrap();
    assert!(matches!(
        random.update(&[0.1], 1.0),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        random.update(&[0.1, 0.2], f64::INFINITY),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        random.select(&wrong_dim),
        Err(Error::DimensionMismatch { .. })
    ));
}

#[test]
fn invalid_parameters_are_rejected_by_name() {
    let k = Rbf::new(0.5).unwrap();
    let cases: Vec<(BoundParams, &str)> = vec![
        (params().sigma(0.0), "sigma"),
        (params().sigma(-1.0), "sigma"),
        (params().sigma(f64::NAN), "sigma"),
        (params().norm_bound(0.0), "norm_bound"),
        (params().norm_bound(f64::INFINITY), "norm_bound"),
        (params().delta(0.0), "delta"),
        (params().delta(1.5), "delta"),
        (params().delta(f64::NAN), "delta"),
        (params().scale(0.0), "scale"),
        (params().scale(f64::NAN), "scale"),
        (params().lambda(-0.1), "lambda"),
        (params().lambda(f64::NAN), "lambda"),
        (params().eta(0.0), "eta"),
        (params().eta(f64::NAN), "eta"),
        (params().horizon(0), "horizon"),
    ];
    for (p, expected) in cases {
        let errors = [
            Ay::new(k, p).map(|_| ()),
            Igp::new(k, p).map(|_| ()),
            Amm::new(k, p).map(|_| ()),
            Dmm::new(k, p).map(|_| ()),
            Cmm::new(k, p).map(|_| ()),
        ];
        for err in errors {
            match err {
                Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, expected),
                other => panic!("{expected}: expected InvalidParameter, got {other:?}"),
            }
        }
    }
    // δ = 1 is allowed (the interval is (0, 1]).
    assert!(Amm::new(k, params().delta(1.0)).is_ok());
    // IGP needs η or a horizon.
    assert!(matches!(
        Igp::new(k, BoundParams::new()),
        Err(Error::MissingParameter { name: "eta", .. })
    ));
    // A DMM grid with a non-positive multiplier.
    assert!(matches!(
        Dmm::with_grid(k, params(), &[0.5, -1.0]),
        Err(Error::InvalidParameter {
            name: "multiplier",
            ..
        })
    ));
    assert!(ExactPosterior::new(k, &[]).is_err());
    assert!(ExactPosterior::new(k, &[1.0, f64::NAN]).is_err());
}

#[test]
fn kernels_with_slices_check_the_input_dimension() {
    let joint = Rbf::new(0.5)
        .unwrap()
        .on(0..2)
        .unwrap()
        .times(Matern::new(2.5, 0.3).unwrap().on(2..4).unwrap());
    let mut amm = Amm::new(joint, params()).unwrap();
    assert!(matches!(
        amm.observe(&[0.1, 0.2, 0.3], 1.0),
        Err(Error::DimensionMismatch {
            expected: 4,
            got: 3
        })
    ));
    assert!(amm.is_empty());
    amm.observe(&[0.1, 0.2, 0.3, 0.4], 1.0).unwrap();
    assert_eq!(amm.len(), 1);
}

/// A kernel that is not positive semidefinite: k(x, y) = 1 − 2·[x ≠ y].
#[derive(Debug)]
struct NotAKernel;

impl Kernel for NotAKernel {
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        if x == y { 1.0 } else { -1.0 }
    }
}

#[test]
fn a_kernel_that_is_not_psd_is_reported_not_hidden() {
    let mut amm = Amm::new(NotAKernel, params()).unwrap();
    amm.observe(&[0.0], 1.0).unwrap();
    amm.observe(&[1.0], 1.0).unwrap();
    // With any third point the Gram matrix [[1, -1, -1], [-1, 1, -1], [-1, -1, 1]] has the
    // eigenvalue -1: queries at new points and the update are rejected ...
    assert!(matches!(
        amm.evaluate(&[[0.5]].as_points().unwrap()),
        Err(Error::NotPositiveDefinite { row: 0, .. })
    ));
    // ... while a query at an observed point is still a valid one.
    let before = amm.evaluate(&[[0.0]].as_points().unwrap()).unwrap();
    assert!(matches!(
        amm.observe(&[2.0], 1.0),
        Err(Error::NotPositiveDefinite { row: 2, .. })
    ));
    assert_eq!(amm.len(), 2);
    assert_eq!(amm.evaluate(&[[0.0]].as_points().unwrap()).unwrap(), before);
}

#[test]
fn subnormal_parameters_and_overflowing_updates_are_errors() {
    let k = Rbf::new(0.5).unwrap();
    // σ²/c = 10⁻³¹⁰ is subnormal: every ratio with it would overflow.
    assert!(matches!(
        Amm::new(k, params().sigma(1e-150).scale(1e10)),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Amm::new(k, params().sigma(1e-310)),
        Err(Error::InvalidParameter { name: "sigma", .. })
    ));
    // a0 = 10⁻³⁰⁰ is valid, but a target of 10²⁰⁰ makes q_a overflow: an error, not ∞ bounds.
    for mut bound in [
        Box::new(Amm::new(k, params().sigma(1e-150)).unwrap()) as Box<dyn ConfidenceBound>,
        Box::new(Dmm::new(k, params().sigma(1e-150)).unwrap()),
        Box::new(Cmm::new(k, params().sigma(1e-150)).unwrap()),
    ] {
        bound.observe(&[0.1, 0.1], 1.0).unwrap();
        let before = snapshot(bound.as_ref());
        assert!(matches!(
            bound.observe(&[0.9, 0.9], 1e200),
            Err(Error::NonFinite { .. })
        ));
        assert_eq!(snapshot(bound.as_ref()), before);
    }
}

/// An agent that returns an index outside the arm set.
struct OffByOne;

impl BanditAgent for OffByOne {
    fn name(&self) -> String {
        "off-by-one".into()
    }
    fn select_from(&mut self, arms: &Points<'_>) -> kernel_bandits::Result<usize> {
        Ok(arms.len())
    }
    fn update(&mut self, _x: &[f64], _y: f64) -> kernel_bandits::Result<()> {
        Ok(())
    }
}

#[test]
fn environments_reject_out_of_range_choices() {
    let problem =
        SyntheticProblem::new(Rbf::new(0.5).unwrap(), SyntheticConfig::default(), 1).unwrap();
    assert!(matches!(
        problem.run(&mut OffByOne, 3),
        Err(Error::ArmOutOfRange {
            index: 100,
            arms: 100
        })
    ));
}

#[test]
fn bounds_work_through_references_and_trait_objects() {
    let k = Rbf::new(0.5).unwrap();
    let mut dmm = Dmm::new(k, params()).unwrap();
    {
        let mut agent = UcbAgent::new(&mut dmm);
        let arms = [[0.1, 0.2], [0.8, 0.3]];
        let i = agent.select(&arms).unwrap();
        agent.update(&arms[i], 0.4).unwrap();
    }
    assert_eq!(dmm.len(), 1);
    let object: &dyn ConfidenceBound = &dmm;
    let b = object.evaluate(&[[0.1, 0.2]].as_points().unwrap()).unwrap();
    assert!(b.lcb[0] <= b.ucb[0]);
    let boxed: Box<dyn ConfidenceBound> = Box::new(dmm);
    assert_eq!(boxed.bounds(&[[0.1, 0.2]]).unwrap(), b);
}

/// A batch refused part-way (a bad target after good ones, or points of the wrong dimension)
/// must leave every bound as it was, the sketched ones included: their random generators and
/// dictionaries must not move, so the bound continues exactly as a twin that never saw the
/// call. (Found by the Python package's tests: BKB and EK-UCB used to diverge.)
#[test]
fn refused_batches_leave_every_bound_on_its_course() {
    let kernel = Matern::new(1.5, 0.4).unwrap();
    let config = BoundConfig::new().params(params()).seed(7);
    let point = |i: usize| [(i as f64 * 0.37).fract(), (i as f64 * 0.61).fract()];
    for kind in BoundKind::ALL {
        let mut hit = kind.build(kernel, &config).unwrap();
        let mut twin = kind.build(kernel, &config).unwrap();
        for i in 0..10 {
            let y = (3.0 * point(i)[0]).sin();
            hit.observe(&point(i), y).unwrap();
            twin.observe(&point(i), y).unwrap();
        }
        let good = [point(20), point(21), point(22)];
        let wrong_dim = [[0.5, 0.5, 0.5], [0.1, 0.2, 0.3]];
        let refused: [(&dyn AsPoints, &[f64]); 4] = [
            (&good, &[1.0, f64::INFINITY, 0.0]),
            (&good, &[1.0, 2.0, f64::NAN]),
            (&good, &[1.0, 2.0]),
            (&wrong_dim, &[1.0, 2.0]),
        ];
        for (points, targets) in refused {
            let points = points.as_points().unwrap();
            assert!(hit.observe_many(&points, targets).is_err(), "{kind}");
        }
        for i in 30..50 {
            let y = (2.0 * point(i)[1]).cos();
            hit.observe(&point(i), y).unwrap();
            twin.observe(&point(i), y).unwrap();
        }
        assert_eq!(
            snapshot(&hit),
            snapshot(&twin),
            "{kind}: a refused batch changed the bound"
        );
    }
}
