//! The pruned arm selection (`ConfidenceBound::argmax_ucb`, `ExactPosterior::argmax_upper`)
//! picks the arm with the largest UCB.
//!
//! Reference: for every regulariser a the test builds K_t by calling `Kernel::eval` on every
//! pair of observed points, factors K_t + aI with nalgebra's dense `Cholesky` and evaluates
//! U(x) = min_a μ_a(x) + w_a ρ_a(x) with full solves, using the bound's published widths
//! (`width()` / `widths()`). The selected arm must be the reference argmax, or tie with it to
//! 1e-9 relative (two arms whose UCBs agree to rounding may be ordered either way).
//!
//! The selection runs along the agent's own trajectory, so every update after the first
//! reuses the solved column that the pruned selection left behind; the test then checks that
//! the resulting factors equal those of a bound that never queried.

use kernel_bandits::prelude::*;
use nalgebra::{Cholesky, DMatrix, DVector};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

/// Reference U(x) at every arm for a posterior with the given widths (one per regulariser).
fn reference_ucb<K: Kernel>(gp: &ExactPosterior<K>, widths: &[f64], arms: &[Vec<f64>]) -> Vec<f64> {
    let t = gp.len();
    let kernel = gp.kernel();
    let xs: Vec<&[f64]> = (0..t).map(|i| gp.input(i)).collect();
    let gram = DMatrix::from_fn(t, t, |i, j| kernel.eval(xs[i], xs[j]));
    let y = DVector::from_column_slice(gp.targets());
    let mut ucb = vec![f64::INFINITY; arms.len()];
    for (a, &w) in gp.regularisers().zip(widths) {
        let chol = (t > 0).then(|| {
            Cholesky::new(&gram + DMatrix::identity(t, t) * a).expect("K + aI is positive definite")
        });
        for (u, x) in ucb.iter_mut().zip(arms) {
            let k = DVector::from_fn(t, |i, _| kernel.eval(xs[i], x));
            let (mean, explained) = match &chol {
                Some(chol) => (k.dot(&chol.solve(&y)), k.dot(&chol.solve(&k))),
                None => (0.0, 0.0),
            };
            let variance = (kernel.eval(x, x) - explained).max(0.0);
            *u = u.min(mean + w * variance.sqrt());
        }
    }
    ucb
}

/// Asserts that `chosen` is the reference argmax or ties with it to 1e-9 relative.
fn assert_best(reference: &[f64], chosen: usize, context: &str) {
    let best = reference.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let scale = 1.0 + best.abs();
    assert!(
        reference[chosen] >= best - 1e-9 * scale,
        "{context}: chose arm {chosen} with UCB {} but the best is {best}",
        reference[chosen]
    );
}

/// A fresh arm set: `n` uniform points, two copies of observed inputs (if any) and a
/// duplicate of the first arm.
fn arms(rng: &mut ChaCha8Rng, n: usize, observed: &[Vec<f64>], dim: usize) -> Vec<Vec<f64>> {
    let mut arms: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect();
    for _ in 0..2 {
        if !observed.is_empty() {
            arms.push(observed[rng.random_range(0..observed.len())].clone());
        }
    }
    arms.push(arms[0].clone());
    arms
}

fn target(x: &[f64]) -> f64 {
    3.0 * (4.0 * x[0]).sin() + 2.0 * x[1] * (3.0 * x[2]).cos() - x[2]
}

/// Runs the UCB agent on `bound` for `rounds` rounds, checking every selection at the rounds
/// in `checks` against the reference, then compares the factors with a bound fed the same
/// observations without queries.
fn run<B, K>(
    mut bound: B,
    fresh: B,
    widths: impl Fn(&B) -> Vec<f64>,
    posterior: impl Fn(&B) -> &ExactPosterior<K>,
    seed: u64,
    rounds: usize,
    name: &str,
) where
    B: ConfidenceBound,
    K: Kernel,
{
    const DIM: usize = 3;
    let checks = [
        0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 256, 257, 299,
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut plain = fresh;
    let mut observed: Vec<Vec<f64>> = Vec::new();
    for round in 0..rounds {
        let arms = arms(&mut rng, 40, &observed, DIM);
        let chosen = bound.argmax_ucb(&arms.as_points().unwrap()).unwrap();
        if checks.contains(&round) {
            let reference = reference_ucb(posterior(&bound), &widths(&bound), &arms);
            assert_best(&reference, chosen, &format!("{name}, t = {round}"));
        }
        let noise: f64 = rng.sample(StandardNormal);
        let y = target(&arms[chosen]) + 0.1 * noise;
        bound.observe(&arms[chosen], y).unwrap();
        plain.observe(&arms[chosen], y).unwrap();
        observed.push(arms[chosen].clone());
    }
    let (a, b) = (posterior(&bound), posterior(&plain));
    for r in 0..a.regularisers().len() {
        let (qa, qb) = (a.quad_form(r), b.quad_form(r));
        assert!(
            (qa - qb).abs() <= 1e-9 * (1.0 + qb),
            "{name}: q {qa} vs {qb}"
        );
        let (la, lb) = (a.log_det(r), b.log_det(r));
        assert!(
            (la - lb).abs() <= 1e-9 * (1.0 + lb),
            "{name}: ld {la} vs {lb}"
        );
    }
}

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(10.0)
        .delta(0.01)
        .scale(1.0)
        .eta(0.002)
}

macro_rules! check_bound {
    ($test:ident, $bound:ident, $widths:expr, $kernel:expr, $seed:expr) => {
        #[test]
        fn $test() {
            let kernel = $kernel;
            run(
                $bound::new(kernel.clone(), params()).unwrap(),
                $bound::new(kernel, params()).unwrap(),
                $widths,
                |b| b.posterior(),
                $seed,
                300,
                stringify!($test),
            );
        }
    };
}

check_bound!(
    dmm_rbf,
    Dmm,
    |b: &Dmm<_>| b.widths(),
    Rbf::new(0.5).unwrap(),
    1
);
check_bound!(
    dmm_matern32_short,
    Dmm,
    |b: &Dmm<_>| b.widths(),
    Matern::new(1.5, 0.1).unwrap(),
    2
);
check_bound!(
    amm_matern52,
    Amm,
    |b: &Amm<_>| vec![b.width()],
    Matern::new(2.5, 0.3).unwrap(),
    3
);
check_bound!(
    amm_rbf_long,
    Amm,
    |b: &Amm<_>| vec![b.width()],
    Rbf::new(5.0).unwrap(),
    4
);
check_bound!(
    ay_rbf,
    Ay,
    |b: &Ay<_>| vec![b.width()],
    Rbf::new(0.2).unwrap(),
    5
);
check_bound!(
    igp_matern52,
    Igp,
    |b: &Igp<_>| vec![b.width()],
    Matern::new(2.5, 0.5).unwrap(),
    6
);

#[test]
fn ties_go_to_the_lowest_index() {
    let mut amm = Amm::new(Rbf::new(0.5).unwrap(), params()).unwrap();
    let same = vec![vec![0.3, 0.3]; 5];
    assert_eq!(amm.argmax_ucb(&same.as_points().unwrap()).unwrap(), 0);
    amm.observe(&[0.3, 0.3], 1.0).unwrap();
    amm.observe(&[0.8, 0.1], -1.0).unwrap();
    let arms = vec![
        vec![0.8, 0.1],
        vec![0.5, 0.5],
        vec![0.1, 0.9],
        vec![0.5, 0.5],
    ];
    let ucb = amm.bounds(&arms).unwrap().ucb;
    let chosen = amm.argmax_ucb(&arms.as_points().unwrap()).unwrap();
    let first_best = (0..arms.len())
        .find(|&j| ucb.iter().all(|&u| ucb[j] >= u))
        .unwrap();
    assert_eq!(chosen, first_best);
}

#[test]
fn invalid_queries_are_errors_and_change_nothing() {
    let mut dmm = Dmm::new(Matern::new(2.5, 0.5).unwrap(), params()).unwrap();
    for i in 0..40 {
        let x = [i as f64 / 40.0, 0.5];
        dmm.observe(&x, target(&[x[0], x[1], 0.0])).unwrap();
    }
    let probe = vec![vec![0.25, 0.75], vec![0.6, 0.1]];
    let before = dmm.bounds(&probe).unwrap();
    let empty: Vec<Vec<f64>> = Vec::new();
    assert!(matches!(
        dmm.argmax_ucb(&empty.as_points().unwrap()),
        Err(Error::NoArms)
    ));
    let wrong = vec![vec![0.1, 0.2, 0.3]];
    assert!(matches!(
        dmm.argmax_ucb(&wrong.as_points().unwrap()),
        Err(Error::DimensionMismatch { .. })
    ));
    let gp = dmm.posterior();
    let arms = probe.as_points().unwrap();
    assert!(matches!(
        gp.argmax_upper(&arms, &[1.0]),
        Err(Error::InvalidParameter { name: "widths", .. })
    ));
    assert!(matches!(
        gp.argmax_upper(&arms, &[1.0, 1.0, f64::NAN, 1.0, 1.0]),
        Err(Error::InvalidParameter { name: "widths", .. })
    ));
    assert!(matches!(
        gp.argmax_upper(&arms, &[1.0, 1.0, -1.0, 1.0, 1.0]),
        Err(Error::InvalidParameter { name: "widths", .. })
    ));
    assert_eq!(dmm.len(), 40);
    assert_eq!(dmm.bounds(&probe).unwrap(), before);
}

/// `n` uniform points of [0, 1]³ followed by their mirror images 1 − x.
fn mirrored_pairs(rng: &mut ChaCha8Rng, n: usize) -> Vec<Vec<f64>> {
    let mut arms: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..3).map(|_| rng.random::<f64>()).collect())
        .collect();
    let mirrored: Vec<Vec<f64>> = arms
        .iter()
        .map(|x| x.iter().map(|v| 1.0 - v).collect())
        .collect();
    arms.extend(mirrored);
    arms
}

/// A structured arm set around the data: uniform points, their mirror images 1 − x, observed
/// points, exact duplicates (of an arm and of an observed point), a cluster of points a few
/// ulps apart and one within 10⁻⁹.
fn structured_arms(rng: &mut ChaCha8Rng, observed: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut arms = mirrored_pairs(rng, 12);
    let recent = &observed[observed.len().saturating_sub(5)..];
    arms.extend(recent.iter().cloned());
    let centre = recent.last().cloned().unwrap_or_else(|| vec![0.5; 3]);
    for k in 1..=4u32 {
        arms.push(
            centre
                .iter()
                .map(|&v| f64::from_bits(v.to_bits() + u64::from(k)))
                .collect(),
        );
    }
    arms.push(centre.iter().map(|&v| v + 1e-9).collect());
    arms.push(arms[3].clone());
    arms.push(centre);
    arms
}

/// One round of `argmax_follows_truncations_windows_and_scales`: a structured arm set, the
/// pruned choice checked against the dense reference, and an observation (`sign`·`scale` times
/// the target, plus noise) at the choice.
fn play(
    gp: &mut ExactPosterior<Matern>,
    observed: &mut Vec<Vec<f64>>,
    rng: &mut ChaCha8Rng,
    round: usize,
    sign: f64,
    scale: f64,
    widths: &[f64],
) {
    let arms = structured_arms(rng, observed);
    choose_and_observe(gp, observed, rng, &arms, round, widths, |x, noise| {
        scale * (sign * target(x) + 0.1 * noise)
    });
}

/// Checks the pruned choice among `arms` against the dense reference (and that it is never a
/// later copy of an exact duplicate), then observes `y(x, ξ)` at it with ξ ~ N(0, 1).
fn choose_and_observe(
    gp: &mut ExactPosterior<Matern>,
    observed: &mut Vec<Vec<f64>>,
    rng: &mut ChaCha8Rng,
    arms: &[Vec<f64>],
    round: usize,
    widths: &[f64],
    y: impl Fn(&[f64], f64) -> f64,
) {
    let chosen = gp.argmax_upper(&arms.as_points().unwrap(), widths).unwrap();
    let reference = reference_ucb(gp, widths, arms);
    assert_best(
        &reference,
        chosen,
        &format!("round {round}, t = {}", gp.len()),
    );
    assert!(
        arms[..chosen].iter().all(|a| a != &arms[chosen]),
        "round {round}: chose arm {chosen}, a later copy of an exact duplicate"
    );
    let noise: f64 = rng.sample(StandardNormal);
    gp.observe(&arms[chosen], y(&arms[chosen], noise)).unwrap();
    observed.push(arms[chosen].clone());
}

/// The pruned argmax (`ExactPosterior::argmax_upper`) queried after every update along a path
/// that changes the factors in every way a later query must see: appends past a storage
/// block, a truncation followed by appends without a query (with the opposite sign, so that
/// anything kept from before the truncation would be badly wrong, then points whose targets
/// equal the posterior mean), a sliding window's downdates followed likewise, and targets
/// 10⁴ times larger with one width 0. Every choice must be the argmax of the dense nalgebra
/// reference U (`reference_ucb`, to 10⁻⁹ relative) and never a later copy of an exact
/// duplicate, on arm sets with mirrored pairs, observed points, points a few ulps apart and a
/// point within 10⁻⁹.
#[test]
fn argmax_follows_truncations_windows_and_scales() {
    let kernel = Matern::new(2.5, 0.3).unwrap();
    let mut gp = ExactPosterior::new(kernel, &[0.001, 0.01, 0.1, 1.0]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let mut observed: Vec<Vec<f64>> = Vec::new();
    let widths = [3.0, 2.0, 1.5, 1.0];
    // Warm up past one storage block (below it every point is solved), querying every round.
    for round in 0..240 {
        play(&mut gp, &mut observed, &mut rng, round, 1.0, 1.0, &widths);
    }
    // Truncate, then append past the old length without a query: with the opposite sign, then
    // two points whose targets equal the posterior mean at regulariser 1. The large widths of
    // the others make U follow regulariser 1.
    let steer = [1e3, 1e3, 1e3, 1.0];
    let zero = [0.0; 4];
    play(&mut gp, &mut observed, &mut rng, 239, 1.0, 1.0, &zero);
    gp.truncate(150);
    observed.truncate(150);
    let append = |gp: &mut ExactPosterior<Matern>,
                  observed: &mut Vec<Vec<f64>>,
                  rng: &mut ChaCha8Rng,
                  sign: f64| {
        let x: Vec<f64> = (0..3).map(|_| rng.random::<f64>()).collect();
        let y = if sign == 0.0 {
            gp.evaluate(&[x.clone()].as_points().unwrap())
                .unwrap()
                .mean(3)[0]
        } else {
            sign * target(&x)
        };
        gp.observe(&x, y).unwrap();
        observed.push(x);
    };
    while gp.len() < 240 {
        append(&mut gp, &mut observed, &mut rng, -1.0);
    }
    for _ in 0..2 {
        append(&mut gp, &mut observed, &mut rng, 0.0);
    }
    for round in 240..260 {
        play(&mut gp, &mut observed, &mut rng, round, -1.0, 1.0, &steer);
    }
    // A sliding window: a query, the oldest dropped (every row of the factors changes), two
    // explained points appended, then a query; repeatedly.
    for round in 260..280 {
        play(&mut gp, &mut observed, &mut rng, round, -1.0, 1.0, &zero);
        gp.remove_oldest();
        observed.remove(0);
        for _ in 0..2 {
            append(&mut gp, &mut observed, &mut rng, 0.0);
        }
        play(&mut gp, &mut observed, &mut rng, round, -1.0, 1.0, &steer);
    }
    // Targets 10⁴ times larger (the whitened targets dwarf the widths) and one width 0.
    let wide = [0.0, 2.0, 1.5, 1.0];
    for round in 280..320 {
        play(&mut gp, &mut observed, &mut rng, round, 1.0, 1e4, &wide);
    }
}

/// Arms that bind on different regularisers: with a = 10⁻³ and a = 1 and the larger width on
/// the smaller a, U follows a = 10⁻³ near the data (ρ is small there) and a = 1 far from it.
/// The data fill one corner of the box, and every arm set has uniform points, their mirror
/// images 1 − x (a point near the data paired with one far from it), observed points and
/// exact duplicates, so that after the probes the remaining points split by regulariser and
/// each set is solved on its own. Queried after every observation from t = 140 on (past one
/// storage block, where the probes are taken), with widths that move the winner between the
/// two sides; every choice must be the argmax of the dense reference. Targets are small
/// against the widths, so that many points outlive the first block; in some rounds the points
/// split into two sets and the winner is in the second (processing only the first set fails
/// here, and nowhere else).
#[test]
fn arms_binding_on_different_regularisers_are_pruned_on_their_own() {
    let kernel = Matern::new(2.5, 0.3).unwrap();
    let mut gp = ExactPosterior::new(kernel, &[1e-3, 1.0]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    let mut observed: Vec<Vec<f64>> = Vec::new();
    while observed.len() < 140 {
        let x: Vec<f64> = (0..3).map(|_| 0.45 * rng.random::<f64>()).collect();
        gp.observe(&x, 0.05 * target(&x)).unwrap();
        observed.push(x);
    }
    let width_sets = [
        [1.0, 0.25],
        [1.0, 0.6],
        [3.0, 0.25],
        [0.5, 0.1],
        [0.5, 0.05],
        [2.0, 0.05],
    ];
    for round in 0..120 {
        let widths = width_sets[round % width_sets.len()];
        let mut arms = mirrored_pairs(&mut rng, 40);
        arms.extend(observed[observed.len() - 3..].iter().cloned());
        arms.push(arms[7].clone());
        arms.push(arms[47].clone());
        choose_and_observe(
            &mut gp,
            &mut observed,
            &mut rng,
            &arms,
            round,
            &widths,
            |x, noise| 0.05 * target(x) + 0.01 * noise,
        );
    }
}

/// Past 256 observations the pruned argmax first bounds every point by the posterior variance
/// given only its eight nearest observations: always with several regularisers; with one, while
/// the plain path leaves many points after its probes, resting for 32 queries whenever the
/// local bounds leave many too. Queried after every update from t = 240 to 330 (across that
/// switch and the residual check at 256 changes), every choice must be the argmax of the dense
/// nalgebra reference and never a later copy of a duplicate. The cases cover every path, as a
/// temporary count showed: five regularisers with tiny, wide and zero widths on structured arm
/// sets (mirrored pairs, observed points, exact duplicates, points a few ulps apart and one
/// within 10⁻⁹) and on spread ones (local bounds in all 74 queries past 256); one regulariser
/// on structured sets and at ℓ = 0.5 (none: the plain path is never crowded); ℓ = 0.2 (local
/// bounds in all 74, and in 73 after a plain query at 256); ℓ = 0.3 with a wide width (22 of
/// 74, in turns with rests).
#[test]
fn local_bounds_keep_the_argmax_exact_past_256_observations() {
    // (length-scale, regularisers, widths, arms spread over the cube rather than around the
    // data).
    let cases: [(f64, &[f64], &[f64], bool); 8] = [
        (
            0.3,
            &[0.001, 0.003, 0.01, 0.03, 0.1],
            &[0.05, 3.0, 1.0, 0.0, 0.4],
            false,
        ),
        (0.3, &[0.001], &[3.0], false),
        (0.3, &[1.0], &[0.05], false),
        (0.5, &[0.001], &[20.0], true),
        (0.2, &[0.001], &[10.0], true),
        (0.2, &[0.1], &[10.0], true),
        (0.3, &[0.001], &[30.0], true),
        (0.5, &[0.001, 0.01, 0.1], &[20.0, 20.0, 20.0], true),
    ];
    for (lengthscale, regularisers, widths, spread) in cases {
        let kernel = Matern::new(2.5, lengthscale).unwrap();
        let mut gp = ExactPosterior::new(kernel, regularisers).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let mut observed: Vec<Vec<f64>> = Vec::new();
        let arms_for = |rng: &mut ChaCha8Rng, observed: &[Vec<f64>]| {
            if spread {
                mirrored_pairs(rng, 50)
            } else {
                structured_arms(rng, observed)
            }
        };
        for _ in 0..240 {
            let arms = arms_for(&mut rng, &observed);
            let chosen = gp.argmax_upper(&arms.as_points().unwrap(), widths).unwrap();
            let noise: f64 = rng.sample(StandardNormal);
            gp.observe(&arms[chosen], target(&arms[chosen]) + 0.1 * noise)
                .unwrap();
            observed.push(arms[chosen].clone());
        }
        for round in 240..330 {
            let arms = arms_for(&mut rng, &observed);
            choose_and_observe(
                &mut gp,
                &mut observed,
                &mut rng,
                &arms,
                round,
                widths,
                |x, noise| target(x) + 0.1 * noise,
            );
        }
    }
}
