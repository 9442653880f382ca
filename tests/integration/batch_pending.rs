//! Batches and pending evaluations on finite arm sets (GP-UCB-PE, Contal et al. 2013): the
//! exploration arm against an independent dense computation of the variance given the pending
//! points and of the relevant region; bit-identity of pending-then-update and of withdrawal;
//! distinctness; errors that change nothing.

use crate::common::dense_variance;

use dense_variance::posterior_variance;
use kernel_bandits::prelude::*;

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(2.0)
        .delta(0.05)
        .scale(1.0)
}

fn f(x: &[f64]) -> f64 {
    (5.0 * x[0]).sin() * (1.0 - x[1]) + x[1]
}

/// A grid of 11 × 11 arms in [0, 1]², with an exact duplicate and a mirrored pair at the end.
fn arms() -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = (0..121)
        .map(|i| vec![(i % 11) as f64 / 10.0, (i / 11) as f64 / 10.0])
        .collect();
    out.push(vec![0.5, 0.5]);
    out.push(vec![0.25, 0.75]);
    out.push(vec![0.75, 0.25]);
    out
}

fn agent_after(n: usize) -> UcbAgent<Amm<Rbf>> {
    let mut agent = UcbAgent::new(Amm::new(Rbf::new(0.25).unwrap(), params()).unwrap());
    let arms = arms();
    for k in 0..n {
        let x = &arms[(k * 37) % arms.len()];
        agent.update(x, f(x)).unwrap();
    }
    agent
}

/// The first arm of a batch is the plain UCB arm; each further one maximises the dense
/// variance given the observed and pending inputs over the arms of the relevant region
/// {U ≥ max L}, among those not pending.
#[test]
fn batch_follows_gp_ucb_pe_against_a_dense_reference() {
    let arms = arms();
    let kernel = Rbf::new(0.25).unwrap();
    // Whether the region ever excluded an arm of larger variance than the one chosen, so that
    // the test sees the region at work.
    let mut region_mattered = false;
    for n in [0, 1, 5, 20, 60, 150] {
        let mut agent = agent_after(n);
        let plain = agent.clone().select(&arms).unwrap();
        let batch = agent.select_batch(&arms, 6).unwrap();
        assert_eq!(batch[0], plain, "the first point is the UCB arm");
        let observed: Vec<Vec<f64>> = (0..agent.bound().len())
            .map(|i| agent.bound().posterior().input(i).to_vec())
            .collect();
        let b = agent.bound().bounds(&arms).unwrap();
        // The relevant region of Contal et al. (2013): U + (U − μ) ≥ max L (each L capped by
        // its U).
        let threshold = (0..arms.len())
            .map(|j| b.lcb[j].min(b.ucb[j]))
            .fold(f64::NEG_INFINITY, f64::max);
        let in_region = |j: usize| b.ucb[j].max(2.0 * b.ucb[j] - b.mean[j]) >= threshold;
        for k in 1..batch.len() {
            let mut inputs = observed.clone();
            inputs.extend(batch[..k].iter().map(|&i| arms[i].clone()));
            let pending: Vec<&Vec<f64>> = batch[..k].iter().map(|&i| &arms[i]).collect();
            let variance: Vec<f64> = arms
                .iter()
                .map(|x| posterior_variance(&kernel, &inputs, 0.01, x))
                .collect();
            let best = (0..arms.len())
                .filter(|&j| in_region(j) && !pending.contains(&&arms[j]))
                .map(|j| variance[j])
                .fold(f64::NEG_INFINITY, f64::max);
            let chosen = batch[k];
            region_mattered |=
                (0..arms.len()).any(|j| b.ucb[j] < threshold && variance[j] > variance[chosen]);
            assert!(in_region(chosen), "point {k} outside the region");
            assert!(
                !pending.contains(&&arms[chosen]),
                "point {k} repeats a pending arm"
            );
            assert!(
                variance[chosen] >= best - 1e-12 * best.abs().max(1e-300),
                "n = {n}, point {k}: variance {} below the region's best {best}",
                variance[chosen]
            );
        }
        let mut sorted = batch.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            batch.len(),
            "batch points are distinct: {batch:?}"
        );
        assert_eq!(agent.pending_len(), 6);
    }
    assert!(
        region_mattered,
        "the relevant region never excluded a high-variance arm"
    );
}

#[cfg(feature = "serde")]
#[test]
fn pending_then_update_equals_plain_update_and_withdrawal_is_invisible() {
    let arms = arms();
    let mut plain = agent_after(7);
    let mut with_pending = plain.clone();
    let i = plain.select(&arms).unwrap();
    assert_eq!(with_pending.select(&arms).unwrap(), i);
    // Withdrawal: pending then withdraw leaves the same bytes as never pending.
    let mut withdrawn = with_pending.clone();
    withdrawn.pending(&arms[i]).unwrap();
    withdrawn.pending(&arms[3]).unwrap();
    withdrawn.withdraw(&arms[i]).unwrap();
    withdrawn.withdraw(&arms[3]).unwrap();
    assert!(
        withdrawn.to_bytes().unwrap() == with_pending.to_bytes().unwrap(),
        "withdrawal left a trace"
    );
    // Pending, then resolved out of order, equals plain updates.
    with_pending.pending(&arms[i]).unwrap();
    with_pending.pending(&arms[3]).unwrap();
    with_pending.update(&arms[3], f(&arms[3])).unwrap();
    with_pending.update(&arms[i], f(&arms[i])).unwrap();
    plain.update(&arms[3], f(&arms[3])).unwrap();
    plain.update(&arms[i], f(&arms[i])).unwrap();
    assert_eq!(with_pending.pending_len(), 0);
    assert!(
        with_pending.to_bytes().unwrap() == plain.to_bytes().unwrap(),
        "pending then update differs from update"
    );
    assert_eq!(
        with_pending.bound().bounds(&arms).unwrap(),
        plain.bound().bounds(&arms).unwrap()
    );
}

/// The asynchronous rule: a UCB arm while none is pending, exploration arms while one is.
#[test]
fn asynchronous_workers_keep_one_ucb_point_in_flight() {
    let arms = arms();
    let mut agent = agent_after(10);
    let ucb = agent.select(&arms).unwrap();
    agent.pending(&arms[ucb]).unwrap();
    let mut reference = agent.clone();
    let explore = agent.select(&arms).unwrap();
    assert_ne!(explore, ucb);
    agent.pending(&arms[explore]).unwrap();
    // The exploration arm finishes first: the UCB arm is still pending, so explore again.
    agent.update(&arms[explore], f(&arms[explore])).unwrap();
    reference.update(&arms[explore], f(&arms[explore])).unwrap();
    let next = agent.select(&arms).unwrap();
    assert_ne!(next, ucb, "a UCB arm is pending: the next arm explores");
    // The UCB arm finishes: the next arm is the UCB arm of the data.
    agent.update(&arms[ucb], f(&arms[ucb])).unwrap();
    reference.update(&arms[ucb], f(&arms[ucb])).unwrap();
    assert_eq!(agent.pending_len(), 0);
    let fresh = UcbAgent::new(reference.bound().clone())
        .select(&arms)
        .unwrap();
    assert_eq!(agent.select(&arms).unwrap(), fresh);
}

#[test]
fn bad_batches_and_pending_points_change_nothing() {
    let arms = arms();
    let mut agent = agent_after(4);
    agent.pending(&arms[2]).unwrap();
    let before = format!("{agent:?}");
    assert!(matches!(
        agent.select_batch(&arms, 0),
        Err(Error::InvalidParameter { name: "q", .. })
    ));
    assert!(matches!(
        agent.pending(&[0.1]),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        agent.pending(&[0.1, f64::NAN]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        agent.withdraw(&[0.3, 0.3]),
        Err(Error::NotPending { .. })
    ));
    let empty: Vec<Vec<f64>> = Vec::new();
    assert!(matches!(agent.select_batch(&empty, 2), Err(Error::NoArms)));
    let wrong = vec![vec![0.1, 0.2, 0.3]];
    assert!(agent.select_batch(&wrong, 2).is_err());
    assert!(agent.update(&[0.1, f64::INFINITY], 1.0).is_err());
    assert_eq!(format!("{agent:?}"), before);
}

/// Fewer arms in the region than the batch: an arm of the region is repeated rather than one
/// outside it; with a single arm, every point of the batch is that arm.
#[test]
fn small_arm_sets_repeat_arms_of_the_region() {
    let mut agent = agent_after(3);
    let one = vec![vec![0.4, 0.4]];
    assert_eq!(agent.select_batch(&one, 3).unwrap(), vec![0, 0, 0]);
    assert_eq!(agent.pending_len(), 3);
    for _ in 0..3 {
        agent.update(&one[0], f(&one[0])).unwrap();
    }
    assert_eq!(agent.pending_len(), 0);
}

/// The random baseline: distinct arms while there are enough, registered as pending.
#[test]
fn random_batches_are_distinct_and_pending() {
    let arms = arms();
    let mut agent = RandomAgent::new(3);
    let batch = agent.select_batch(&arms, 20).unwrap();
    let mut sorted = batch.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 20);
    assert_eq!(agent.pending_len(), 20);
    agent.withdraw(&arms[batch[4]]).unwrap();
    assert_eq!(agent.pending_len(), 19);
    assert!(agent.select_batch(&arms, 0).is_err());
}

/// Regressions from review: a pending set cannot mix dimensions; huge batches and start counts
/// are refused; the UCB arm is never one already running; crossed bounds (misspecification)
/// cannot empty the region; the random agent's generator is untouched by a refused batch.
#[test]
fn review_regressions() {
    let arms = arms();
    // Dimensions.
    let mut agent = UcbAgent::new(Amm::new(Rbf::new(0.25).unwrap(), params()).unwrap());
    agent.pending(&[0.1, 0.2]).unwrap();
    let three = vec![vec![0.1, 0.2, 0.3]];
    assert!(matches!(
        agent.select_batch(&three, 1),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        agent.select(&three),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        agent.update(&[0.1, 0.2, 0.3], 1.0),
        Err(Error::DimensionMismatch { .. })
    ));
    assert_eq!(agent.pending_points(), vec![vec![0.1, 0.2]]);
    agent.withdraw(&[0.1, 0.2]).unwrap();
    // Sizes.
    assert!(matches!(
        agent.select_batch(&arms, usize::MAX),
        Err(Error::InvalidParameter { name: "q", .. })
    ));
    assert!(
        agent
            .clone()
            .with_continuous(ContinuousOptions {
                starts: 1 << 63,
                refine: 1,
                seed: 0,
                ..ContinuousOptions::default()
            })
            .is_err()
    );
    // The UCB arm is not one already running.
    let mut agent = agent_after(12);
    let ucb = agent.clone().select(&arms).unwrap();
    agent.pending(&arms[ucb]).unwrap(); // not handed out by this agent: an ordinary pending arm
    let next = agent.select(&arms).unwrap();
    assert_ne!(next, ucb, "the UCB arm is already pending");
    // Crossed bounds: B far too small for the rewards, so DMM's set is empty and the bounds
    // cross; a batch still comes out.
    let tight = BoundParams::new()
        .sigma(0.01)
        .norm_bound(0.01)
        .delta(0.05)
        .scale(1.0);
    let mut wrong = UcbAgent::new(Dmm::new(Rbf::new(0.25).unwrap(), tight).unwrap());
    for x in arms.iter().step_by(7) {
        wrong.update(x, 10.0 * f(x)).unwrap();
    }
    assert!(!wrong.bound().bounds(&arms).unwrap().crossed().is_empty());
    assert_eq!(wrong.select_batch(&arms, 3).unwrap().len(), 3);
    // The random agent: a refused batch leaves its generator where it was.
    let mut a = RandomAgent::new(5);
    let mut b = RandomAgent::new(5);
    assert!(a.select_batch(&arms, 0).is_err());
    assert_eq!(a.select(&arms).unwrap(), b.select(&arms).unwrap());
}

/// The variance given pending points at a regulariser far below k(x, x)·ε (σ = 10⁻⁸ and
/// 10⁻⁹ with c = 1: a = σ²), where pending points duplicate observations, observations
/// duplicate each other and pending points duplicate each other. Reference: n copies of an
/// input, each with regulariser a, carry the same information about f as one copy with a/n,
/// so the variance equals that of the distinct inputs with the diagonal regulariser a/nᵢ —
/// a dense Cholesky (nalgebra) of a well-conditioned 6 × 6 matrix, to rounding. The
/// variance is a difference of numbers of size k(x, x) = 1, so both carry an absolute error
/// of a few ε, plus, in the crate's factor, about ε²/a per duplicated row (see below). Before the pending block's pivots were clamped as the append clamps them, half
/// of these cases failed with "posterior variance NaN"; `select_batch` on arms observed twice
/// then failed too.
#[test]
fn pending_variance_with_duplicates_at_tiny_noise() {
    use nalgebra::{DMatrix, DVector};
    let kernel = Rbf::new(0.3).unwrap();
    let base: Vec<Vec<f64>> = vec![
        vec![0.0, 0.0],
        vec![1.0, 0.0],
        vec![0.0, 1.0],
        vec![1.0, 1.0],
        vec![0.5, 0.5],
        vec![0.5, 1.0],
    ];
    let observed_counts: [usize; 6] = [1, 2, 1, 3, 1, 0];
    let pending_sets: [&[usize]; 5] = [&[0], &[1, 1], &[5, 5], &[0, 5, 5, 3, 1], &[4, 0, 4]];
    // Queries: every base point, points a few ulps off two of them, and points in between.
    let mut queries = base.clone();
    queries.push(vec![0.5 + 2.0 * f64::EPSILON, 0.5]);
    queries.push(vec![1.0 - f64::EPSILON, 1.0]);
    queries.push(vec![0.25, 0.75]);
    queries.push(vec![0.7, 0.2]);
    let reference = |counts: &[usize], a: f64, x: &[f64]| -> f64 {
        let used: Vec<usize> = (0..base.len()).filter(|&i| counts[i] > 0).collect();
        let n = used.len();
        let gram = DMatrix::from_fn(n, n, |i, j| {
            let k = kernel.eval(&base[used[i]], &base[used[j]]);
            if i == j {
                k + a / counts[used[i]] as f64
            } else {
                k
            }
        });
        let k = DVector::from_fn(n, |i, _| kernel.eval(&base[used[i]], x));
        let chol = gram.cholesky().expect("a well-separated Gram matrix");
        kernel.eval(x, x) - k.dot(&chol.solve(&k))
    };
    let mut worst: f64 = 0.0;
    for sigma in [1e-8, 1e-9] {
        let params = BoundParams::new().sigma(sigma).norm_bound(2.0).scale(1.0);
        let bounds: Vec<Box<dyn ConfidenceBound>> = vec![
            Box::new(Amm::new(kernel, params).unwrap()),
            Box::new(Dmm::new(kernel, params).unwrap()),
            Box::new(Cmm::new(kernel, params).unwrap()),
        ];
        for mut bound in bounds {
            let a = sigma * sigma;
            for (i, &count) in observed_counts.iter().enumerate() {
                for _ in 0..count {
                    bound.observe(&base[i], f(&base[i])).unwrap();
                }
            }
            for set in pending_sets {
                let pending: Vec<Vec<f64>> = set.iter().map(|&i| base[i].clone()).collect();
                let mut counts = observed_counts;
                for &i in set {
                    counts[i] += 1;
                }
                let conditioned = bound
                    .pending_variance(&pending.as_points().unwrap())
                    .unwrap_or_else(|e| {
                        panic!("{} σ = {sigma:e}, pending {set:?}: {e}", bound.name())
                    });
                let got = conditioned.variance(&queries.as_points().unwrap()).unwrap();
                // At σ = 10⁻⁸ (a = 10⁻¹⁶ ≈ ε/2) the factor's rounding is at the level of
                // the subtraction itself: each row duplicating an earlier one has the pivot √a
                // and an entry of L⁻¹k_t(x) of about ε/√a, adding about ε²/a to ρ² per
                // duplicate. At σ = 10⁻⁹ (a = 10⁻¹⁸) the rounding of a duplicate's variance,
                // about ε, is a hundred times a, and enters the factor's later rows divided by
                // √a: κ(K + aI) ≈ t/a ≈ 10¹⁹ is beyond 1/ε (see `posterior::health`), for the
                // append as for the pending block, and only 10⁻⁹ is asserted (6.1·10⁻¹⁰
                // measured); what matters there is that the variance is computed at all.
                let duplicates: usize = counts.iter().map(|&c| c.saturating_sub(1)).sum();
                let eps = f64::EPSILON;
                let tolerance = if sigma >= 1e-8 {
                    1e-13 + 8.0 * duplicates as f64 * eps * eps / a
                } else {
                    1e-9
                };
                for (x, &v) in queries.iter().zip(&got) {
                    let want = reference(&counts, a, x);
                    worst = worst.max((v - want).abs());
                    assert!(
                        (v - want).abs() <= tolerance,
                        "{} σ = {sigma:e}, pending {set:?}, x = {x:?}: {v:e} against {want:e}",
                        bound.name()
                    );
                    let (g, gradient) = conditioned.variance_gradient(x).unwrap();
                    assert!(g >= 0.0 && gradient.iter().all(|d| d.is_finite()));
                }
            }
        }
    }
    eprintln!("largest absolute difference from the reference: {worst:e}");
    // A batch on an arm set whose arms were observed twice.
    let params = BoundParams::new().sigma(1e-8).norm_bound(2.0).scale(1.0);
    let mut agent = UcbAgent::new(Dmm::new(kernel, params).unwrap());
    for x in base.iter().chain(&base) {
        agent.update(x, f(x)).unwrap();
    }
    let batch = agent.select_batch(&base, 4).unwrap();
    assert_eq!(batch.len(), 4);
}

/// An observation or a withdrawal at a point rounded on its way back (1e-9 away, a float32 round
/// trip, 6 significant digits) resolves the pending point it came from, as
/// `PENDING_TOLERANCE` documents: every coordinate within a relative 1e-5, the nearest one when
/// several are, and nothing beyond. The observation is absorbed at the point as given.
#[test]
fn updates_resolve_pending_points_within_the_documented_tolerance() {
    use kernel_bandits::agent::PENDING_TOLERANCE;
    assert_eq!(PENDING_TOLERANCE, 1e-5);
    let p = [0.123456789, 0.987654321];
    let rounded: [[f64; 2]; 3] = [
        [p[0] + 1e-9, p[1] - 1e-9],
        [p[0] as f32 as f64, p[1] as f32 as f64],
        [0.123457, 0.987654],
    ];
    for x in rounded {
        for agent in [
            &mut agent_after(5) as &mut dyn BanditAgent,
            &mut RandomAgent::new(3),
        ] {
            agent.pending(&p).unwrap();
            agent.update(&x, 0.5).unwrap();
            assert_eq!(agent.pending_len(), 0, "{x:?} did not resolve {p:?}");
        }
        let mut agent = agent_after(5);
        agent.pending(&p).unwrap();
        agent.withdraw(&x).unwrap();
        assert_eq!(agent.pending_len(), 0, "{x:?} did not withdraw {p:?}");
    }
    // The observation is stored at the point as given, not snapped to the pending one.
    let mut agent = agent_after(5);
    agent.pending(&p).unwrap();
    agent.update(&rounded[0], 0.5).unwrap();
    let stored = agent.bound().observations().unwrap();
    assert_eq!(stored.input(stored.len() - 1), &rounded[0][..]);
    // Beyond the tolerance in one coordinate (2e-5 relative): still pending, and withdraw
    // refuses; a zero coordinate must be ±0 in the other.
    for x in [[p[0] * (1.0 + 2e-5), p[1]], [p[0], p[1] * (1.0 - 2e-5)]] {
        let mut agent = agent_after(5);
        agent.pending(&p).unwrap();
        agent.update(&x, 0.5).unwrap();
        assert_eq!(agent.pending_len(), 1, "{x:?} resolved {p:?}");
        assert!(matches!(agent.withdraw(&x), Err(Error::NotPending { .. })));
    }
    // A NaN coordinate resolves nothing (a NaN would vanish from a max over coordinates).
    let mut agent = agent_after(5);
    agent.pending(&p).unwrap();
    for x in [[f64::NAN, p[1]], [p[0], f64::INFINITY]] {
        assert!(matches!(agent.withdraw(&x), Err(Error::NotPending { .. })));
    }
    assert_eq!(agent.pending_len(), 1);
    let mut agent = agent_after(5);
    agent.pending(&[0.0, 0.5]).unwrap();
    agent.update(&[-0.0, 0.5], 0.5).unwrap();
    assert_eq!(agent.pending_len(), 0, "-0 resolves 0");
    agent.pending(&[0.0, 0.5]).unwrap();
    agent.update(&[1e-300, 0.5], 0.5).unwrap();
    assert_eq!(agent.pending_len(), 1, "1e-300 is not 0 relatively");
    // Two pending points within the tolerance of x: the nearer one is resolved, whatever the
    // order; a bitwise match comes first.
    let near = [p[0] * (1.0 + 1e-7), p[1]];
    let far = [p[0] * (1.0 + 5e-6), p[1]];
    for order in [[far, near], [near, far]] {
        let mut agent = agent_after(5);
        agent.pending(&order[0]).unwrap();
        agent.pending(&order[1]).unwrap();
        agent.update(&p, 0.5).unwrap();
        assert_eq!(agent.pending_points(), vec![far.to_vec()]);
        agent.pending(&p).unwrap();
        agent.update(&far, 0.5).unwrap();
        assert_eq!(agent.pending_points(), vec![p.to_vec()]);
    }
}
