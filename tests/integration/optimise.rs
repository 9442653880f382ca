//! `optimise::maximise`: the Bayesian-optimisation loop. References: the objective itself
//! (the history must hold exactly the points evaluated and their values), the box (every
//! point inside), a brute-force argmax of the recommendation's LCB recomputed from the history,
//! and the known maximiser of a smooth test function.

use kernel_bandits::agent::RefitMode;
use kernel_bandits::bound::BoundKind;
use kernel_bandits::continuous::BoxDomain;
use kernel_bandits::optimise::{Initial, OptimiseOptions, Refits, maximise};
use kernel_bandits::prelude::*;

/// Maximum 0 at (0.3, 1.2).
fn bowl(x: &[f64]) -> f64 {
    -(x[0] - 0.3).powi(2) - 0.5 * (x[1] - 1.2).powi(2)
}

fn domain() -> BoxDomain {
    BoxDomain::new(&[-1.0, 0.0], &[1.0, 2.0]).unwrap()
}

#[test]
fn the_history_is_what_was_evaluated_and_stays_in_the_box() {
    let mut calls: Vec<(Vec<f64>, f64)> = Vec::new();
    let run = maximise(
        |x: &[f64]| {
            let y = bowl(x);
            calls.push((x.to_vec(), y));
            y
        },
        &domain(),
        16,
        &OptimiseOptions::default(),
    )
    .unwrap();
    let h = &run.history;
    assert_eq!((h.len(), calls.len()), (16, 16));
    for (i, (x, y)) in calls.iter().enumerate() {
        assert_eq!(h.point(i), x.as_slice());
        assert_eq!(h.y[i], *y);
        assert!(domain().contains(x), "evaluation {i} at {x:?} left the box");
    }
    // The initial design is 2d + 2 = 6 points: no recommendation before its last one.
    assert!(h.recommendations[..5].iter().all(Option::is_none));
    assert!(h.recommendations[5..].iter().all(Option::is_some));
    assert!(h.seconds[..6].iter().all(|&s| s == 0.0));
    // The final recommendation is an evaluated point (index and coordinates agree, to the
    // rounding of the map to the unit cube and back).
    let r = &run.recommendation;
    for (a, b) in r.x.iter().zip(h.point(r.index)) {
        assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    }
    assert!(r.lcb <= r.mean && r.mean <= r.ucb);
    assert_eq!(run.fits.len(), 16 - 6); // the initial fit and one refit per later iteration
}

#[test]
fn it_finds_the_maximum_of_a_smooth_function() {
    let run = maximise(bowl, &domain(), 30, &OptimiseOptions::default()).unwrap();
    let best = h_max(&run.history.y);
    assert!(best > -1e-2, "best value {best}");
    assert!(
        bowl(&run.recommendation.x) > -2e-2,
        "recommended {:?}",
        run.recommendation.x
    );
}

fn h_max(y: &[f64]) -> f64 {
    y.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

#[test]
fn given_initial_points_are_evaluated_first_and_strict_runs_fit_once() {
    let initial = vec![-1.0, 0.0, 1.0, 2.0, 0.0, 1.0];
    let mut options = OptimiseOptions::default();
    options.initial = Initial::Points(initial.clone());
    options.refits = Refits::once_strict();
    let run = maximise(bowl, &domain(), 8, &options).unwrap();
    assert_eq!(&run.history.x[..6], initial.as_slice());
    assert_eq!(run.fits.len(), 1);
    assert_eq!(run.fits[0].evaluations, 3);
    assert_eq!(options.refits.mode, RefitMode::Strict);
}

#[test]
fn a_fixed_coordinate_is_allowed() {
    let domain = BoxDomain::new(&[0.0, 0.5], &[1.0, 0.5]).unwrap();
    let run = maximise(
        |x: &[f64]| -(x[0] - 0.4).powi(2),
        &domain,
        10,
        &OptimiseOptions::default(),
    )
    .unwrap();
    assert!(run.history.x.chunks(2).all(|x| x[1] == 0.5));
    assert!(run.history.y.iter().all(|y| y.is_finite()));
}

#[test]
fn bad_input_is_a_typed_error() {
    let options = OptimiseOptions::default();
    // A budget below the initial design (6 points in 2-D).
    assert!(matches!(
        maximise(bowl, &domain(), 5, &options),
        Err(Error::InvalidParameter { name: "budget", .. })
    ));
    // A NaN value: the error names the evaluation.
    let mut n = 0;
    let err = maximise(
        |x: &[f64]| {
            n += 1;
            if n == 9 { f64::NAN } else { bowl(x) }
        },
        &domain(),
        12,
        &options,
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::NonFinite { what } if what.contains("evaluation 9")),
        "{err}"
    );
    // Initial points outside the box, or of the wrong dimension, or too few.
    let mut outside = options.clone();
    outside.initial = Initial::Points(vec![0.0, 0.0, 5.0, 1.0]);
    assert!(matches!(
        maximise(bowl, &domain(), 8, &outside),
        Err(Error::InvalidParameter {
            name: "initial",
            ..
        })
    ));
    outside.initial = Initial::Points(vec![0.0, 0.0, 0.5]);
    assert!(matches!(
        maximise(bowl, &domain(), 8, &outside),
        Err(Error::DimensionMismatch { .. })
    ));
    outside.initial = Initial::Sobol(Some(1));
    assert!(matches!(
        maximise(bowl, &domain(), 8, &outside),
        Err(Error::InvalidParameter {
            name: "initial",
            ..
        })
    ));
    let mut batch = options.clone();
    batch.batch = 0;
    assert!(matches!(
        maximise(bowl, &domain(), 8, &batch),
        Err(Error::InvalidParameter { name: "batch", .. })
    ));
    // AMM cannot learn B: it must be given.
    let mut amm = options.clone();
    amm.bound = BoundKind::Amm;
    assert!(matches!(
        maximise(bowl, &domain(), 8, &amm),
        Err(Error::MissingParameter { .. })
    ));
    amm.norm_bound = Some(3.0);
    assert_eq!(maximise(bowl, &domain(), 8, &amm).unwrap().norm_bound, 3.0);
    // The box: empty, or lo > hi.
    assert!(BoxDomain::new(&[], &[]).is_err());
    assert!(BoxDomain::new(&[1.0], &[0.0]).is_err());
}

#[test]
fn batches_fill_the_budget_exactly() {
    let mut options = OptimiseOptions::default();
    options.batch = 4;
    let run = maximise(bowl, &domain(), 15, &options).unwrap();
    assert_eq!(run.history.len(), 15); // 6 + 4 + 4 + 1
    let distinct = run.history.x[12..].chunks(2).collect::<Vec<_>>();
    assert!(distinct.windows(2).all(|w| w[0] != w[1]));
}
