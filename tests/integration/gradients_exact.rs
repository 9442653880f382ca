//! Gradients of the exact bounds (AY, IGP, AMM, DMM, K-UCB, GP-UCB) against central finite
//! differences of their own `evaluate`, and their pending variance against a dense
//! from-scratch posterior (nalgebra Cholesky of the Gram matrix with the pending points
//! appended), after every update of sequences with structured points.

use crate::common::dense_variance;

use std::sync::Arc;

use dense_variance::posterior_variance;
use kernel_bandits::bound::{BoundGradient, GpUcb, InformationGain};
use kernel_bandits::kernel::{Kernel, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use kernel_bandits::prelude::*;

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(2.0)
        .delta(0.05)
        .scale(1.0)
        .eta(0.01)
}

fn kernels() -> Vec<Arc<dyn Kernel>> {
    let mut out: Vec<Arc<dyn Kernel>> = vec![Arc::new(Rbf::new(0.3).unwrap())];
    let mut probe = [0.0; 2];
    let matern = Matern::new(2.5, 0.4).unwrap();
    if matern
        .gradient(&[0.1, 0.2], &[0.3, 0.5], &mut probe)
        .is_ok()
    {
        out.push(Arc::new(matern));
        out.push(Arc::new(Matern::new(1.5, 0.3).unwrap()));
    }
    out
}

fn bounds(kernel: Arc<dyn Kernel>) -> Vec<Box<dyn ConfidenceBound>> {
    vec![
        Box::new(Ay::new(kernel.clone(), params()).unwrap()),
        Box::new(Igp::new(kernel.clone(), params()).unwrap()),
        Box::new(Amm::new(kernel.clone(), params()).unwrap()),
        Box::new(Dmm::new(kernel.clone(), params()).unwrap()),
        Box::new(KUcb::new(kernel.clone(), 0.05, 1.7).unwrap()),
        Box::new(GpUcb::new(kernel, params(), InformationGain::Data).unwrap()),
    ]
}

/// The observed inputs of a structured sequence in [0, 1]²: a grid, an exact duplicate, a
/// point 3 ulps from another, a mirrored pair and a tight cluster.
fn structured_inputs() -> Vec<[f64; 2]> {
    let a = 0.37_f64;
    let ulps = f64::from_bits(a.to_bits() + 3);
    vec![
        [0.2, 0.2],
        [0.8, 0.8],
        [a, 0.5],
        [a, 0.5],
        [ulps, 0.5],
        [0.3, 0.7],
        [0.7, 0.3],
        [0.5, 0.5],
        [0.5 + 1e-7, 0.5],
        [0.5, 0.5 + 2e-7],
        [0.1, 0.9],
        [0.9, 0.1],
    ]
}

fn target(x: &[f64; 2]) -> f64 {
    (3.0 * x[0]).sin() + x[1] * x[1]
}

/// Query points: random-looking ones, an observed point, one a few ulps from it, and the mirror
/// images.
fn queries() -> Vec<Vec<f64>> {
    let a = 0.37_f64;
    vec![
        vec![0.13, 0.71],
        vec![0.62, 0.27],
        vec![0.45, 0.55],
        vec![a, 0.5],
        vec![f64::from_bits(a.to_bits() + 1), 0.5 + 1e-9],
        vec![0.3, 0.7],
        vec![0.7, 0.3],
        vec![0.99, 0.02],
    ]
}

/// Central differences of mean, LCB and UCB of `evaluate` at x, step h in each coordinate.
fn finite_differences(bound: &dyn ConfidenceBound, x: &[f64], h: f64) -> [Vec<f64>; 3] {
    let mut out = [vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; x.len()]];
    for i in 0..x.len() {
        let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
        plus[i] += h;
        minus[i] -= h;
        let b = bound
            .evaluate(&vec![plus, minus].as_points().unwrap())
            .unwrap();
        out[0][i] = (b.mean[0] - b.mean[1]) / (2.0 * h);
        out[1][i] = (b.lcb[0] - b.lcb[1]) / (2.0 * h);
        out[2][i] = (b.ucb[0] - b.ucb[1]) / (2.0 * h);
    }
    out
}

/// Whether two gradients agree to `rel` relative to the larger of them (with a floor for
/// gradients that vanish).
fn close(a: &[f64], b: &[f64], rel: f64, floor: f64) -> bool {
    let scale = a.iter().chain(b).fold(floor, |m: f64, v| m.max(v.abs()));
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= rel * scale)
}

/// The values agree with `evaluate`, and the gradients with central differences, at every
/// query after every update. Where the difference quotient straddles a kink (DMM's active
/// regulariser switching, or ρ's cusp at an observed point of a nearly noise-free posterior),
/// the two one-sided quotients differ; there the gradient must agree with one of them.
#[test]
fn exact_bound_gradients_match_finite_differences_after_every_update() {
    let h = 1e-6;
    let mut checked = 0;
    for kernel in kernels() {
        for mut bound in bounds(kernel.clone()) {
            for x in structured_inputs() {
                bound.observe(&x, target(&x)).unwrap();
                for q in queries() {
                    let g: BoundGradient = bound.gradient(&q).unwrap();
                    let b = bound
                        .evaluate(&vec![q.clone()].as_points().unwrap())
                        .unwrap();
                    for (got, want) in [(g.mean, b.mean[0]), (g.lcb, b.lcb[0]), (g.ucb, b.ucb[0])] {
                        assert!(
                            (got - want).abs() <= 1e-9 * (1.0 + want.abs()),
                            "{} value {got} vs evaluate {want} at {q:?}",
                            bound.name()
                        );
                    }
                    let (u, ug) = bound.ucb_gradient(&q).unwrap();
                    assert_eq!(u.to_bits(), g.ucb.to_bits());
                    assert_eq!(ug, g.ucb_gradient);
                    let fd = finite_differences(&*bound, &q, h);
                    for (what, got, want) in [
                        ("mean", &g.mean_gradient, &fd[0]),
                        ("lcb", &g.lcb_gradient, &fd[1]),
                        ("ucb", &g.ucb_gradient, &fd[2]),
                    ] {
                        if close(got, want, 1e-6, 1e-3) {
                            checked += 1;
                            continue;
                        }
                        // A kink inside [x − h, x + h]: compare with one-sided quotients.
                        let one_sided = one_sided_agree(&*bound, &q, what, got, 1e-7);
                        assert!(
                            one_sided,
                            "{} {what} gradient {got:?} vs central differences {want:?} at {q:?} \
                             after {} observations ({kernel:?})",
                            bound.name(),
                            bound.len()
                        );
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} smooth comparisons");
}

fn one_sided_agree(
    bound: &dyn ConfidenceBound,
    x: &[f64],
    what: &str,
    got: &[f64],
    h: f64,
) -> bool {
    let pick = |b: &Bounds, j: usize| match what {
        "mean" => b.mean[j],
        "lcb" => b.lcb[j],
        _ => b.ucb[j],
    };
    (0..x.len()).all(|i| {
        let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
        plus[i] += h;
        minus[i] -= h;
        let b = bound
            .evaluate(&vec![plus, minus, x.to_vec()].as_points().unwrap())
            .unwrap();
        let forward = (pick(&b, 0) - pick(&b, 2)) / h;
        let backward = (pick(&b, 2) - pick(&b, 1)) / h;
        let tol = 1e-4 * (1.0 + got[i].abs());
        (got[i] - forward).abs() <= tol || (got[i] - backward).abs() <= tol
    })
}

/// Pending variance = the dense posterior variance with the pending inputs appended (their
/// targets do not matter), for pending sets that duplicate observed points, duplicate each other,
/// sit a few ulps apart, or mirror each other; and its gradient against central differences.
#[test]
fn pending_variance_matches_a_dense_posterior_with_the_points_appended() {
    let kernel: Arc<dyn Kernel> = Arc::new(Rbf::new(0.3).unwrap());
    let a = 0.1 * 0.1; // AMM's a0 = σ²/c with σ = 0.1, c = 1
    // AMM and CMM both keep the factor of K_t + a0 I (a0 = σ²/c).
    for mut bound in [
        Box::new(Amm::new(kernel.clone(), params()).unwrap()) as Box<dyn ConfidenceBound>,
        Box::new(Cmm::new(kernel.clone(), params()).unwrap()),
    ] {
        let a37 = 0.37_f64;
        let pending_sets: Vec<Vec<Vec<f64>>> = vec![
            vec![],
            vec![vec![0.6, 0.4]],
            vec![vec![a37, 0.5], vec![a37, 0.5]],
            vec![vec![0.2, 0.2], vec![f64::from_bits(a37.to_bits() + 2), 0.5]],
            vec![
                vec![0.3, 0.7],
                vec![0.7, 0.3],
                vec![0.5, 0.5],
                vec![0.05, 0.95],
            ],
        ];
        let mut observed: Vec<Vec<f64>> = Vec::new();
        let mut inputs = structured_inputs().into_iter();
        loop {
            for pending in &pending_sets {
                let pv = bound
                    .pending_variance(&pending.as_points().unwrap_or_else(|_| {
                        kernel_bandits::points::Points::from_row_major(&[], 2).unwrap()
                    }))
                    .unwrap();
                let all: Vec<Vec<f64>> = observed.iter().chain(pending).cloned().collect();
                let qs = queries();
                let got = pv.variance(&qs.as_points().unwrap()).unwrap();
                for (q, v) in qs.iter().zip(&got) {
                    let want = posterior_variance(&*kernel, &all, a, q);
                    assert!(
                        (v - want).abs() <= 1e-10 * (1.0 + want.abs()),
                        "pending variance {v} vs dense {want} at {q:?} with {} observed, pending {pending:?}",
                        observed.len()
                    );
                    let (v1, grad) = pv.variance_gradient(q).unwrap();
                    assert!((v1 - v).abs() <= 1e-12, "{v1} vs {v}");
                    let h = 1e-6;
                    for i in 0..2 {
                        let (mut plus, mut minus) = (q.clone(), q.clone());
                        plus[i] += h;
                        minus[i] -= h;
                        let fd = (posterior_variance(&*kernel, &all, a, &plus)
                            - posterior_variance(&*kernel, &all, a, &minus))
                            / (2.0 * h);
                        let scale = grad.iter().fold(1e-4_f64, |m, g| m.max(g.abs()));
                        assert!(
                            (grad[i] - fd).abs() <= 1e-5 * scale,
                            "pending variance gradient {grad:?} vs dense differences {fd} (coordinate {i}) at {q:?}"
                        );
                    }
                }
            }
            match inputs.next() {
                Some(x) => {
                    bound.observe(&x, target(&x)).unwrap();
                    observed.push(x.to_vec());
                }
                None => break,
            }
        }
    }
}

#[test]
fn gradients_refuse_bad_points_and_change_nothing() {
    let mut bound = Dmm::new(Rbf::new(0.3).unwrap(), params()).unwrap();
    bound.observe(&[0.1, 0.2], 0.5).unwrap();
    let before = bound
        .evaluate(&vec![vec![0.4, 0.4]].as_points().unwrap())
        .unwrap();
    assert!(matches!(
        bound.gradient(&[0.1]),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        bound.gradient(&[f64::NAN, 0.1]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(bound.ucb_gradient(&[]), Err(Error::ZeroDimension)));
    let pv = bound
        .pending_variance(&vec![vec![0.3, 0.3]].as_points().unwrap())
        .unwrap();
    assert!(matches!(
        pv.variance_gradient(&[0.3]),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        bound.pending_variance(&vec![vec![0.3]].as_points().unwrap()),
        Err(Error::DimensionMismatch { .. })
    ));
    let after = bound
        .evaluate(&vec![vec![0.4, 0.4]].as_points().unwrap())
        .unwrap();
    assert_eq!(before, after);
    assert_eq!(bound.len(), 1);
}

/// With no observation the UCB is B·√k(x, x)-like and flat for a stationary kernel: zero
/// gradient, and the mean's gradient is zero.
#[test]
fn empty_posterior_has_zero_gradient_for_stationary_kernels() {
    let bound = Amm::new(Rbf::new(0.3).unwrap(), params()).unwrap();
    let g = bound.gradient(&[0.3, 0.6]).unwrap();
    assert_eq!(g.mean_gradient, vec![0.0, 0.0]);
    assert_eq!(g.ucb_gradient, vec![0.0, 0.0]);
    assert_eq!(g.lcb_gradient, vec![0.0, 0.0]);
}

/// Past one storage block of the factors (128 rows): 300 observations, including a run of
/// duplicates across the block boundary, then the gradients of AMM and DMM against central
/// differences.
#[test]
fn gradients_cross_the_factor_storage_blocks() {
    let kernel: Arc<dyn Kernel> = Arc::new(Rbf::new(0.2).unwrap());
    let mut amm = Amm::new(kernel.clone(), params()).unwrap();
    let mut dmm = Dmm::new(kernel, params()).unwrap();
    for i in 0..300 {
        let x = if (120..136).contains(&i) {
            [0.5, 0.5]
        } else {
            let u = (i as f64 * 0.618_033_988_749_895).fract();
            let v = (i as f64 * 0.414_213_562_373_095).fract();
            [u, v]
        };
        amm.observe(&x, target(&x)).unwrap();
        dmm.observe(&x, target(&x)).unwrap();
    }
    for bound in [&amm as &dyn ConfidenceBound, &dmm] {
        for q in queries() {
            let g = bound.gradient(&q).unwrap();
            let fd = finite_differences(bound, &q, 1e-6);
            assert!(
                close(&g.ucb_gradient, &fd[2], 1e-6, 1e-3)
                    || one_sided_agree(bound, &q, "ucb", &g.ucb_gradient, 1e-7),
                "{} ucb gradient {:?} vs {:?} at {q:?}",
                bound.name(),
                g.ucb_gradient,
                fd[2]
            );
            assert!(close(&g.mean_gradient, &fd[0], 1e-6, 1e-3));
        }
    }
}

/// DMM-UCB's terms U_r = μ_r + w_r ρ_r, one per regulariser of its grid, against the
/// posterior's batch evaluation at each regulariser (`ExactPosterior::evaluate`, a blocked
/// solve, with `Dmm::widths`); `ucb_gradient_among` on a subset of terms against the minimum
/// of those references and central finite differences of it; with every term, the bits of
/// `ucb_gradient`. AMM is one term. Bad term lists are errors.
#[test]
fn ucb_terms_match_the_posterior_at_each_regulariser() {
    let kernel = Matern::new(2.5, 0.4).unwrap();
    let mut dmm = Dmm::new(kernel, params()).unwrap();
    let mut amm = Amm::new(kernel, params()).unwrap();
    for x in structured_inputs() {
        dmm.observe(&x, target(&x)).unwrap();
        amm.observe(&x, target(&x)).unwrap();
    }
    assert_eq!(amm.ucb_terms(), 1);
    assert_eq!(dmm.ucb_terms(), 5);
    let widths = dmm.widths();
    let reference = |x: &[f64]| -> Vec<f64> {
        let batch = dmm
            .posterior()
            .evaluate(&Points::from_row_major(x, 2).unwrap())
            .unwrap();
        (0..5)
            .map(|r| batch.mean(r)[0] + widths[r] * batch.variance(r)[0].sqrt())
            .collect()
    };
    let subsets: [&[usize]; 4] = [&[0], &[4], &[1, 3], &[2, 0]];
    for x in queries() {
        let terms = dmm.ucb_term_values(&x).unwrap();
        let want = reference(&x);
        for r in 0..5 {
            assert!(
                (terms[r] - want[r]).abs() <= 1e-10 * want[r].abs().max(1.0),
                "term {r} at {x:?}: {} vs {}",
                terms[r],
                want[r]
            );
        }
        let full = dmm.ucb_gradient(&x).unwrap();
        let all = dmm.ucb_gradient_among(&x, &[0, 1, 2, 3, 4]).unwrap();
        assert_eq!(
            (
                full.0.to_bits(),
                full.1.iter().map(|g| g.to_bits()).collect::<Vec<_>>()
            ),
            (
                all.0.to_bits(),
                all.1.iter().map(|g| g.to_bits()).collect::<Vec<_>>()
            )
        );
        for subset in subsets {
            let (value, gradient) = dmm.ucb_gradient_among(&x, subset).unwrap();
            let min_of = |x: &[f64]| {
                let w = reference(x);
                subset.iter().map(|&r| w[r]).fold(f64::INFINITY, f64::min)
            };
            let want = min_of(&x);
            assert!(
                (value - want).abs() <= 1e-10 * want.abs().max(1.0),
                "{subset:?} at {x:?}: {value} vs {want}"
            );
            // Central differences, where the active term of the subset is clear of the others.
            let w = reference(&x);
            let mut sorted: Vec<f64> = subset.iter().map(|&r| w[r]).collect();
            sorted.sort_by(f64::total_cmp);
            if sorted.len() > 1 && sorted[1] - sorted[0] < 1e-3 {
                continue;
            }
            let h = 1e-6;
            for i in 0..2 {
                let (mut up, mut down) = (x.clone(), x.clone());
                up[i] += h;
                down[i] -= h;
                let fd = (min_of(&up) - min_of(&down)) / (2.0 * h);
                assert!(
                    (gradient[i] - fd).abs() <= 1e-5 * fd.abs().max(1.0),
                    "{subset:?} at {x:?}, coordinate {i}: {} vs {fd}",
                    gradient[i]
                );
            }
        }
    }
    let x = [0.3, 0.4];
    assert!(matches!(
        dmm.ucb_gradient_among(&x, &[]),
        Err(Error::InvalidParameter { name: "terms", .. })
    ));
    assert!(matches!(
        dmm.ucb_gradient_among(&x, &[5]),
        Err(Error::InvalidParameter { name: "terms", .. })
    ));
    assert!(matches!(
        amm.ucb_gradient_among(&x, &[1]),
        Err(Error::InvalidParameter { name: "terms", .. })
    ));
}
