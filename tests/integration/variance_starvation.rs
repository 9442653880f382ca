//! Variance starvation (Calandriello et al. 2019 §3.1): the sketched posterior's DTC variance
//! and its subset-of-regressors variance against dense from-scratch formulas, on structured
//! inputs (repeated observations, a dictionary on one side of the domain, anchors a few ulps
//! apart, queries on anchors and far away); and the exact posterior against the dense one.

use crate::common::dense_variance;

use kernel_bandits::posterior::SketchedPosterior;
use kernel_bandits::prelude::*;

const LAMBDA: f64 = 0.01;

fn close(got: f64, want: f64, scale: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-8 * scale,
        "{what}: {got} against the dense {want}"
    );
}

/// Observations on the left of [0, 1] only, with repeats and a pair a few ulps apart.
fn left_inputs() -> Vec<f64> {
    let near = 0.1f64;
    let ulps = f64::from_bits(near.to_bits() + 2);
    vec![
        0.0, 0.05, 0.05, 0.05, near, ulps, 0.2, 0.2, 0.25, 0.0, 0.3, 0.15, near, 0.3, 0.3,
    ]
}

/// Queries: on anchors, between them, at the edge, and far away.
fn queries() -> Vec<f64> {
    vec![0.0, 0.05, 0.1, 0.125, 0.3, 0.35, 0.5, 0.75, 1.0, 3.0, -2.0]
}

/// The sketched posterior on `xs` with the dictionary at the distinct points `anchor_values`.
fn sketched(kernel: Rbf, xs: &[f64], anchor_values: &[f64]) -> SketchedPosterior<Rbf> {
    let mut post = SketchedPosterior::new(kernel, LAMBDA).unwrap();
    let mut index = Vec::new();
    for &x in xs {
        let i = post.observe(&[x], x.sin()).unwrap();
        if anchor_values.contains(&x) && !index.contains(&i) {
            index.push(i);
        }
    }
    post.set_dictionary(&index).unwrap();
    post
}

fn check(kernel: Rbf, xs: &[f64], anchor_values: &[f64]) {
    let post = sketched(kernel, xs, anchor_values);
    let q = queries();
    let points: Vec<[f64; 1]> = q.iter().map(|&x| [x]).collect();
    let points = points.as_points().unwrap();
    let dtc = post.evaluate(&points).unwrap().variance;
    let sor = post.subset_of_regressors_variance(&points).unwrap();
    let (dense_dtc, dense_sor) =
        dense_variance::dtc_and_sor(&kernel, xs, anchor_values, LAMBDA, &q);
    // The scale of σ̃² is k(x, x)/λ = 1/λ.
    for j in 0..q.len() {
        close(
            dtc[j],
            dense_dtc[j],
            1.0 / LAMBDA,
            &format!("DTC at {}", q[j]),
        );
        close(
            sor[j],
            dense_sor[j],
            1.0 / LAMBDA,
            &format!("SoR at {}", q[j]),
        );
        // SoR never exceeds DTC: they differ by (k(x, x) − zᵀz)/λ ≥ 0.
        assert!(sor[j] <= dtc[j] * (1.0 + 1e-12));
    }
    let mut exact = ExactPosterior::new(kernel, &[LAMBDA]).unwrap();
    for &x in xs {
        exact.observe(&[x], x.sin()).unwrap();
    }
    let exact: Vec<f64> = exact
        .evaluate(&points)
        .unwrap()
        .variance(0)
        .iter()
        .map(|v| v / LAMBDA)
        .collect();
    let dense_exact = dense_variance::exact(&kernel, xs, LAMBDA, &q);
    for j in 0..q.len() {
        close(exact[j], dense_exact[j], 1.0 / LAMBDA, "exact variance");
    }
}

#[test]
fn dtc_and_sor_match_the_dense_formulas_on_structured_inputs() {
    let kernel = Rbf::new(0.1).unwrap();
    let xs = left_inputs();
    // Every distinct point an anchor, including both of the ulps-apart pair.
    let near = 0.1f64;
    let ulps = f64::from_bits(near.to_bits() + 2);
    check(kernel, &xs, &[0.0, 0.05, near, ulps, 0.2, 0.25, 0.3, 0.15]);
    // A dictionary on the far left only, and a single anchor.
    check(kernel, &xs, &[0.0, 0.05]);
    check(kernel, &xs, &[0.3]);
    // Anchors at the ulps-apart pair only: one direction.
    check(kernel, &xs, &[near, ulps]);
}

#[test]
fn sor_starves_far_from_the_dictionary_while_dtc_keeps_the_prior() {
    // Far from every anchor z(x) → 0: SoR → 0 while the exact variance and DTC return to the
    // prior k(x, x)/λ; on the anchors with every point in the dictionary all three agree.
    let kernel = Rbf::new(0.1).unwrap();
    let xs = left_inputs();
    let post = sketched(kernel, &xs, &[0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.15]);
    let far = [[3.0], [-2.0]].as_points().unwrap();
    let sor = post.subset_of_regressors_variance(&far).unwrap();
    let dtc = post.evaluate(&far).unwrap().variance;
    let exact = dense_variance::exact(&kernel, &xs, LAMBDA, &[3.0, -2.0]);
    for j in 0..2 {
        assert!(sor[j] < 1e-100, "SoR {}", sor[j]);
        assert!((dtc[j] - 1.0 / LAMBDA).abs() < 1e-9 / LAMBDA);
        assert!((exact[j] - 1.0 / LAMBDA).abs() < 1e-9 / LAMBDA);
    }
}

#[test]
fn sor_of_an_empty_dictionary_is_zero_and_bad_points_are_rejected() {
    let kernel = Rbf::new(0.1).unwrap();
    let mut post = SketchedPosterior::new(kernel, LAMBDA).unwrap();
    assert!(
        post.subset_of_regressors_variance(&[[0.5]].as_points().unwrap())
            .unwrap()
            .iter()
            .all(|&v| v == 0.0)
    );
    post.observe(&[0.2], 1.0).unwrap();
    post.set_dictionary(&[0]).unwrap();
    let err = post
        .subset_of_regressors_variance(&[[0.5, 0.5]].as_points().unwrap())
        .unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { .. }), "{err:?}");
    let none: Vec<[f64; 1]> = Vec::new();
    assert!(
        post.subset_of_regressors_variance(&none.as_points().unwrap())
            .unwrap()
            .is_empty()
    );
}
