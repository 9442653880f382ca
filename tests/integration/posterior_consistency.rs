//! The incrementally updated `ExactPosterior` equals a from-scratch fit (Rasmussen & Williams 2006 §2.2).
//!
//! Reference: for every regulariser a the test builds K_t itself by calling `Kernel::eval` on
//! every pair of observed points, factors K_t + aI with nalgebra's dense `Cholesky`, and
//! evaluates μ_a(x) = k_t(x)ᵀ(K_t + aI)⁻¹y, ρ_a²(x) = k(x,x) − k_t(x)ᵀ(K_t + aI)⁻¹k_t(x),
//! q_a = yᵀ(K_t + aI)⁻¹y and ld_a = Σ 2 ln L_ii − t ln a from that factor, with full solves
//! (not the crate's whitened form ‖L⁻¹k‖²). Nothing of the crate's posterior is used.
//!
//! Tolerances (relative 1e-9, never loosened):
//! - μ, q, ld: |got − want| ≤ 1e-9 · max(1, |want|). The absolute floor of 1e-9 is for values
//!   near 0 (μ between observations, ld for a large regulariser), where a relative test would
//!   demand more than the conditioning of K_t + aI allows.
//! - ρ²: |got − want| ≤ 1e-9 · k(x, x). ρ² is a difference of two numbers of size k(x, x) and
//!   is often tiny at observed points, so the error is measured against the prior variance,
//!   its natural scale (the crate clamps ρ² ≥ 0, the reference does not).

use kernel_bandits::kernel::{Kernel, KernelExt, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use kernel_bandits::posterior::ExactPosterior;
use nalgebra::{Cholesky, DMatrix, DVector};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

/// Relative tolerance of every comparison (see the module documentation for the scales).
const TOL: f64 = 1e-9;
/// Regularisers of the main tests: badly, moderately and well conditioned.
const REGULARISERS: [f64; 3] = [0.001, 0.01, 1.0];
/// Observations in the main tests.
const N_OBS: usize = 500;
/// Dimension of the main tests.
const DIM: usize = 3;
/// A from-scratch comparison every this many updates.
const CHECK_EVERY: usize = 50;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A smooth test function on [0, 1]³.
fn smooth_target(x: &[f64]) -> f64 {
    (3.0 * x[0]).sin() + x[1] * (2.0 * x[2]).cos() + 0.5 * x[2] * x[2]
}

/// Observations in [0, 1]^DIM, about 10% of which repeat an earlier point exactly (with fresh
/// noise), and targets smooth_target + N(0, 0.1²).
fn observations(seed: u64, n: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = rng(seed);
    let mut xs: Vec<Vec<f64>> = Vec::with_capacity(n);
    let mut ys = Vec::with_capacity(n);
    for i in 0..n {
        let x = if i > 0 && rng.random::<f64>() < 0.1 {
            xs[rng.random_range(0..i)].clone()
        } else {
            (0..DIM).map(|_| rng.random::<f64>()).collect()
        };
        let noise: f64 = rng.sample(StandardNormal);
        ys.push(smooth_target(&x) + 0.1 * noise);
        xs.push(x);
    }
    (xs, ys)
}

/// Number of observations that exactly repeat an earlier one.
fn count_repeats(xs: &[Vec<f64>]) -> usize {
    (1..xs.len()).filter(|&i| xs[..i].contains(&xs[i])).count()
}

/// Fresh random query points in [0, 1]^dim.
fn random_points(seed: u64, n: usize, dim: usize) -> Vec<Vec<f64>> {
    let mut rng = rng(seed);
    (0..n)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect()
}

/// K = [k(xᵢ, xⱼ)], built pair by pair with `Kernel::eval`.
fn gram_by_hand<K: Kernel>(kernel: &K, xs: &[Vec<f64>]) -> DMatrix<f64> {
    DMatrix::from_fn(xs.len(), xs.len(), |i, j| kernel.eval(&xs[i], &xs[j]))
}

/// The from-scratch posterior of one regulariser at a set of query points.
struct Reference {
    prior_variance: Vec<f64>,
    mean: Vec<f64>,
    variance: Vec<f64>,
    quad_form: f64,
    log_det: f64,
}

fn reference<K: Kernel>(
    kernel: &K,
    xs: &[Vec<f64>],
    ys: &[f64],
    a: f64,
    queries: &[Vec<f64>],
) -> Reference {
    let t = xs.len();
    let regularised = gram_by_hand(kernel, xs) + DMatrix::identity(t, t) * a;
    let chol = Cholesky::new(regularised).expect("K + aI must be positive definite");
    let y = DVector::from_column_slice(ys);
    let alpha = chol.solve(&y);
    let quad_form = y.dot(&alpha);
    let l = chol.l();
    let log_det = (0..t).map(|i| 2.0 * l[(i, i)].ln()).sum::<f64>() - t as f64 * a.ln();
    let cross = DMatrix::from_fn(t, queries.len(), |i, j| kernel.eval(&xs[i], &queries[j]));
    let solved = chol.solve(&cross);
    let prior_variance: Vec<f64> = queries.iter().map(|q| kernel.eval(q, q)).collect();
    let mean = (0..queries.len())
        .map(|j| cross.column(j).dot(&alpha))
        .collect();
    let variance = (0..queries.len())
        .map(|j| prior_variance[j] - cross.column(j).dot(&solved.column(j)))
        .collect();
    Reference {
        prior_variance,
        mean,
        variance,
        quad_form,
        log_det,
    }
}

/// |got − want| ≤ TOL · scale, with a message naming the quantity.
#[track_caller]
fn assert_close(got: f64, want: f64, scale: f64, what: impl Fn() -> String) {
    assert!(
        got.is_finite() && (got - want).abs() <= TOL * scale,
        "{}: got {got:e}, want {want:e} (difference {:e}, allowed {:e})",
        what(),
        (got - want).abs(),
        TOL * scale,
    );
}

/// Compares every quantity of `posterior` (which has absorbed exactly `xs`, `ys`) with the
/// from-scratch reference, for every regulariser, at `queries`.
fn check_against_reference<K: Kernel>(
    posterior: &ExactPosterior<K>,
    xs: &[Vec<f64>],
    ys: &[f64],
    queries: &[Vec<f64>],
    context: &str,
) {
    assert_eq!(
        posterior.len(),
        xs.len(),
        "{context}: number of observations"
    );
    assert_eq!(posterior.targets(), ys, "{context}: stored targets");
    let batch = posterior
        .evaluate(&queries.as_points().unwrap())
        .expect("evaluate");
    assert_eq!(batch.len(), queries.len());
    for (r, a) in posterior.regularisers().enumerate() {
        let want = reference(posterior.kernel(), xs, ys, a, queries);
        let ctx = |what: &str| format!("{context}, t = {}, a = {a}: {what}", xs.len());
        assert_close(
            posterior.quad_form(r),
            want.quad_form,
            want.quad_form.abs().max(1.0),
            || ctx("q_a"),
        );
        assert_close(
            posterior.log_det(r),
            want.log_det,
            want.log_det.abs().max(1.0),
            || ctx("ld_a"),
        );
        for (j, query) in queries.iter().enumerate() {
            let prior = want.prior_variance[j];
            assert_close(batch.prior_variance()[j], prior, prior, || {
                ctx(&format!("k(x, x) at query {j}"))
            });
            assert_close(
                batch.mean(r)[j],
                want.mean[j],
                want.mean[j].abs().max(1.0),
                || ctx(&format!("μ at query {j} {query:?}")),
            );
            assert!(batch.variance(r)[j] >= 0.0, "{}", ctx("ρ² < 0"));
            assert_close(batch.variance(r)[j], want.variance[j], prior, || {
                ctx(&format!("ρ² at query {j} {query:?}"))
            });
        }
    }
}

/// 40 fresh points plus 10 of the first `n` observed points (always including the newest).
fn queries_with_observed(fresh: &[Vec<f64>], xs: &[Vec<f64>], n: usize) -> Vec<Vec<f64>> {
    let mut queries = fresh.to_vec();
    if n > 0 {
        queries.extend((0..10).map(|k| xs[(n - 1 + k * 7_919) % n].clone()));
    }
    queries
}

/// Feeds the 500 observations one by one and compares with a from-scratch fit before the
/// first update and after every 50.
fn incremental_equals_from_scratch<K: Kernel + Clone>(kernel: K, seed: u64, name: &str) {
    let (xs, ys) = observations(seed, N_OBS);
    let repeats = count_repeats(&xs);
    assert!(
        (25..=80).contains(&repeats),
        "expected about 10% repeated points, got {repeats}"
    );
    let fresh = random_points(seed + 1, 40, DIM);
    let mut posterior = ExactPosterior::new(kernel.clone(), &REGULARISERS).unwrap();
    assert!(posterior.regularisers().eq(REGULARISERS));
    check_against_reference(&posterior, &[], &[], &fresh, name);
    for (i, (x, &y)) in xs.iter().zip(&ys).enumerate() {
        posterior.observe(x, y).unwrap();
        let n = i + 1;
        if n % CHECK_EVERY == 0 {
            let queries = queries_with_observed(&fresh, &xs, n);
            check_against_reference(&posterior, &xs[..n], &ys[..n], &queries, name);
        }
    }
    assert_eq!(
        posterior.kernel_matrix(),
        gram_by_hand(&kernel, &xs),
        "{name}: kernel_matrix() differs from the Gram matrix built with eval"
    );
}

#[test]
fn rbf_short_lengthscale() {
    incremental_equals_from_scratch(Rbf::new(0.05).unwrap(), 1, "RBF ℓ = 0.05");
}

#[test]
fn rbf_long_lengthscale() {
    incremental_equals_from_scratch(Rbf::new(5.0).unwrap(), 2, "RBF ℓ = 5");
}

#[test]
fn matern52_short_lengthscale() {
    incremental_equals_from_scratch(Matern::new(2.5, 0.05).unwrap(), 3, "Matérn 5/2 ℓ = 0.05");
}

#[test]
fn matern52_long_lengthscale() {
    incremental_equals_from_scratch(Matern::new(2.5, 5.0).unwrap(), 4, "Matérn 5/2 ℓ = 5");
}

#[test]
fn rougher_maternes_and_a_scaled_kernel() {
    incremental_equals_from_scratch(Matern::new(0.5, 0.3).unwrap(), 5, "Matérn 1/2 ℓ = 0.3");
    incremental_equals_from_scratch(Matern::new(1.5, 1.0).unwrap(), 6, "Matérn 3/2 ℓ = 1");
    incremental_equals_from_scratch(
        Rbf::new(0.4).unwrap().scaled(3.0).unwrap(),
        7,
        "3 · RBF ℓ = 0.4",
    );
}

/// Truncating to n equals a from-scratch fit of the first n observations, for several n,
/// and the truncated posterior keeps growing correctly with new observations.
#[test]
fn truncate_equals_fit_of_prefix() {
    let kernel = Matern::new(2.5, 0.3).unwrap();
    let (xs, ys) = observations(11, N_OBS);
    let fresh = random_points(12, 40, DIM);
    let mut full = ExactPosterior::new(kernel, &REGULARISERS).unwrap();
    for (x, &y) in xs.iter().zip(&ys) {
        full.observe(x, y).unwrap();
    }
    for n in [N_OBS + 10, N_OBS, 499, 300, 137, 50, 1, 0] {
        let mut truncated = full.clone();
        truncated.truncate(n);
        let n = n.min(N_OBS);
        let queries = queries_with_observed(&fresh, &xs, n);
        let context = format!("truncated to {n}");
        check_against_reference(&truncated, &xs[..n], &ys[..n], &queries, &context);
        assert_eq!(
            truncated.kernel_matrix(),
            gram_by_hand(&kernel, &xs[..n]),
            "{context}: kernel_matrix()"
        );
    }

    // Truncate, then grow again with different observations: nothing of the forgotten
    // observations may leak into the new rows.
    let (new_xs, new_ys) = observations(13, 200);
    let mut regrown = full.clone();
    regrown.truncate(120);
    let mut xs_now = xs[..120].to_vec();
    let mut ys_now = ys[..120].to_vec();
    for (x, &y) in new_xs.iter().zip(&new_ys) {
        regrown.observe(x, y).unwrap();
        xs_now.push(x.clone());
        ys_now.push(y);
    }
    let queries = queries_with_observed(&fresh, &xs_now, xs_now.len());
    check_against_reference(
        &regrown,
        &xs_now,
        &ys_now,
        &queries,
        "truncated and regrown",
    );
    assert_eq!(regrown.kernel_matrix(), gram_by_hand(&kernel, &xs_now));
}

/// The pattern of a UCB agent: query a set of candidate arms, then observe one of them (the
/// posterior may reuse what the query computed), with occasional truncations and repeated
/// arms; compared with a from-scratch fit every 25 rounds.
#[test]
fn query_then_observe_one_of_the_queried_points() {
    let kernel = Matern::new(2.5, 0.2).unwrap();
    let mut rng = rng(17);
    let mut posterior = ExactPosterior::new(kernel, &REGULARISERS).unwrap();
    let (mut xs, mut ys): (Vec<Vec<f64>>, Vec<f64>) = (Vec::new(), Vec::new());
    for round in 0..300 {
        let mut arms = random_points(1_000 + round, 20, DIM);
        if !xs.is_empty() && round % 3 == 0 {
            // An already observed point among the arms.
            arms[round as usize % 20] = xs[rng.random_range(0..xs.len())].clone();
        }
        let batch = posterior.evaluate(&arms.as_points().unwrap()).unwrap();
        // Play the arm of largest μ + ρ for the smallest regulariser (ties: lowest index).
        let score = |j: usize| batch.mean(0)[j] + batch.variance(0)[j].sqrt();
        let chosen =
            (1..arms.len()).fold(0, |best, j| if score(j) > score(best) { j } else { best });
        if round % 40 == 39 {
            // Forget a few observations after the query: the query must not be reused.
            let keep = xs.len() - 3;
            posterior.truncate(keep);
            xs.truncate(keep);
            ys.truncate(keep);
        }
        let x = arms[chosen].clone();
        let noise: f64 = rng.sample(StandardNormal);
        let y = smooth_target(&x) + 0.1 * noise;
        posterior.observe(&x, y).unwrap();
        xs.push(x);
        ys.push(y);
        if round % 25 == 24 {
            let queries = queries_with_observed(&arms, &xs, xs.len());
            check_against_reference(&posterior, &xs, &ys, &queries, "query then observe");
        }
    }
    let queries = queries_with_observed(&random_points(18, 40, DIM), &xs, xs.len());
    check_against_reference(&posterior, &xs, &ys, &queries, "query then observe, end");
    assert_eq!(posterior.kernel_matrix(), gram_by_hand(&kernel, &xs));
}

/// Queries through `&self` from several threads at once give the same numbers as one thread,
/// and the posterior stays consistent when it next absorbs one of the queried points.
#[test]
fn concurrent_queries() {
    let kernel = Rbf::new(0.3).unwrap();
    let (xs, ys) = observations(19, 150);
    let mut posterior = ExactPosterior::new(kernel, &REGULARISERS).unwrap();
    for (x, &y) in xs.iter().zip(&ys) {
        posterior.observe(x, y).unwrap();
    }
    let query_sets: Vec<Vec<Vec<f64>>> = (0..8).map(|i| random_points(100 + i, 30, DIM)).collect();
    let sequential: Vec<_> = query_sets
        .iter()
        .map(|q| posterior.evaluate(&q.as_points().unwrap()).unwrap())
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = query_sets
            .iter()
            .map(|q| {
                let posterior = &posterior;
                scope.spawn(move || {
                    (0..20)
                        .map(|_| posterior.evaluate(&q.as_points().unwrap()).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (handle, want) in handles.into_iter().zip(&sequential) {
            for got in handle.join().unwrap() {
                assert_eq!(
                    &got, want,
                    "a concurrent query differs from the sequential one"
                );
            }
        }
    });
    // Absorb a point of one of the concurrent queries, then compare with a fresh fit.
    let (mut xs, mut ys) = (xs, ys);
    for (i, set) in query_sets.iter().enumerate() {
        let x = set[i].clone();
        posterior.observe(&x, 0.5).unwrap();
        xs.push(x);
        ys.push(0.5);
    }
    let queries = queries_with_observed(&query_sets[0], &xs, xs.len());
    check_against_reference(&posterior, &xs, &ys, &queries, "after concurrent queries");
}

/// A small random data set: dimension, observed points (some repeated), targets, queries.
type SmallData = (usize, Vec<Vec<f64>>, Vec<f64>, Vec<Vec<f64>>);

fn small_data() -> impl Strategy<Value = SmallData> {
    (1usize..=3, 0usize..=20)
        .prop_flat_map(|(d, t)| {
            (
                Just(d),
                prop::collection::vec(prop::collection::vec(0.0..1.0f64, d), t),
                prop::collection::vec(-3.0..3.0f64, t),
                // A draw below 0.15 turns observation i into a repeat of an earlier one.
                prop::collection::vec((0.0..1.0f64, any::<prop::sample::Index>()), t),
                prop::collection::vec(prop::collection::vec(-0.5..1.5f64, d), 1..8),
            )
        })
        .prop_map(|(d, mut xs, ys, repeats, queries)| {
            for i in 1..xs.len() {
                let (draw, index) = repeats[i];
                if draw < 0.15 {
                    xs[i] = xs[index.index(i)].clone();
                }
            }
            (d, xs, ys, queries)
        })
}

fn boxed_kernel(choice: usize, lengthscale: f64) -> Box<dyn Kernel> {
    match choice {
        0 => Box::new(Rbf::new(lengthscale).unwrap()),
        1 => Box::new(Matern::new(0.5, lengthscale).unwrap()),
        2 => Box::new(Matern::new(1.5, lengthscale).unwrap()),
        _ => Box::new(Matern::new(2.5, lengthscale).unwrap()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: RngSeed::Fixed(0x90c),
        ..ProptestConfig::with_cases(32)
    })]

    /// For random small data sets, incremental == from scratch after every update.
    #[test]
    fn small_random_data_sets(
        (_d, xs, ys, fresh) in small_data(),
        choice in 0usize..4,
        log10_lengthscale in -1.5..1.0f64,
        log10_regulariser in -3.0..1.0f64,
    ) {
        let kernel = boxed_kernel(choice, 10f64.powf(log10_lengthscale));
        let a = 10f64.powf(log10_regulariser);
        let mut posterior = ExactPosterior::new(kernel, &[a, 1.0]).unwrap();
        check_against_reference(&posterior, &[], &[], &fresh, "no data");
        for (i, (x, &y)) in xs.iter().zip(&ys).enumerate() {
            posterior.observe(x, y).unwrap();
            let n = i + 1;
            let mut queries = fresh.clone();
            queries.extend_from_slice(&xs[..n]);
            check_against_reference(&posterior, &xs[..n], &ys[..n], &queries, "proptest");
        }
        prop_assert_eq!(posterior.kernel_matrix(), gram_by_hand(posterior.kernel(), &xs));
    }
}
