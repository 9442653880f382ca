//! The noise estimates of `kernel_bandits::hyper` against independent references: a naive
//! per-group variance (replicates), the χ² interval's coverage under Gaussian noise, a dense
//! leave-one-out scan (residuals), and recovery of a known σ.

use std::collections::HashMap;

use kernel_bandits::Error;
use kernel_bandits::hyper::{NoiseVerdict, estimate_noise, replicate_noise, residual_noise};
use kernel_bandits::kernel::{Kernel, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use nalgebra::{DMatrix, DVector};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

/// The pooled within-group variance and its degrees of freedom, grouping by the bits of the
/// coordinates (after −0 → +0), the textbook way: Σ_g (n_g − 1) s_g² / Σ_g (n_g − 1).
fn naive_pooled(xs: &[Vec<f64>], ys: &[f64]) -> Option<(f64, usize, usize)> {
    let mut groups: HashMap<Vec<u64>, Vec<f64>> = HashMap::new();
    for (x, &y) in xs.iter().zip(ys) {
        let key = x.iter().map(|v| (v + 0.0).to_bits()).collect();
        groups.entry(key).or_default().push(y);
    }
    let (mut weighted, mut dof, mut count) = (0.0, 0, 0);
    for values in groups.values().filter(|v| v.len() > 1) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let s2 = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        weighted += (n - 1.0) * s2;
        dof += values.len() - 1;
        count += 1;
    }
    (dof > 0).then(|| (weighted / dof as f64, dof, count))
}

#[test]
fn replicates_match_a_naive_grouping_on_structured_inputs() {
    let tiny = f64::from_bits(1); // the smallest subnormal
    let one_ulp_above = f64::from_bits(0.3f64.to_bits() + 1);
    let xs = vec![
        vec![0.3, 0.0],
        vec![0.3, -0.0],          // the same input as the first: −0 = +0
        vec![one_ulp_above, 0.0], // a different input, one ulp away
        vec![0.7, 0.1],
        vec![0.7, 0.1],
        vec![0.7, 0.1],
        vec![tiny, 1.0],
        vec![0.0, 1.0], // differs from the previous one by a subnormal: not a replicate
        vec![0.7, 0.1],
        vec![0.3, 0.0],
        vec![5.0, 5.0], // observed once
        vec![-0.0, 5.0],
        vec![-0.0, 7.0], // sorts between its neighbours' −0 and +0
        vec![0.0, 5.0],  // the same input as [−0, 5]
    ];
    // Targets around 10⁸: a one-pass Σy² − n ȳ² would cancel to nothing.
    let ys: Vec<f64> = [
        0.11, -0.07, 0.5, 0.02, -0.03, 0.09, 0.4, -0.4, -0.06, 0.04, 1.0, 0.2, 0.3, -0.1,
    ]
    .iter()
    .map(|e| 1e8 + e)
    .collect();
    let estimate = replicate_noise(&xs, &ys, 0.95).unwrap().unwrap();
    let (variance, dof, groups) = naive_pooled(&xs, &ys).unwrap();
    assert_eq!(
        (estimate.degrees_of_freedom, estimate.groups),
        (dof, groups)
    );
    assert_eq!((dof, groups), (6, 3));
    assert!(
        (estimate.sigma.powi(2) - variance).abs() <= 1e-9 * variance,
        "{} vs {variance}",
        estimate.sigma.powi(2)
    );
    // The exact answer, without 10⁸: groups {0.11, −0.07, 0.04}, {0.02, −0.03, 0.09, −0.06}
    // and {0.2, −0.1}.
    let deviations = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|e| (e - m).powi(2)).sum::<f64>()
    };
    let exact = (deviations(&[0.11, -0.07, 0.04])
        + deviations(&[0.02, -0.03, 0.09, -0.06])
        + deviations(&[0.2, -0.1]))
        / 6.0;
    // Only the representation of 10⁸ + e (ulp 1.5·10⁻⁸) separates the two: a relative 2·10⁻⁶.
    assert!((estimate.sigma.powi(2) - exact).abs() <= 2e-6 * exact);
    let (lo, hi) = estimate.interval;
    assert!(lo < estimate.sigma && estimate.sigma < hi);
}

#[test]
fn no_replicates_no_estimate_and_identical_replicates_give_zero() {
    let xs = vec![vec![0.0], vec![1.0], vec![2.0]];
    assert_eq!(replicate_noise(&xs, &[1.0, 2.0, 3.0], 0.9).unwrap(), None);
    let xs = vec![vec![0.5], vec![0.5], vec![0.5]];
    let e = replicate_noise(&xs, &[2.0, 2.0, 2.0], 0.9)
        .unwrap()
        .unwrap();
    assert_eq!((e.sigma, e.interval), (0.0, (0.0, 0.0)));
    assert_eq!(e.assess(1e-300).unwrap(), NoiseVerdict::Loose);
}

#[test]
fn the_replicate_interval_covers_at_its_level_under_gaussian_noise() {
    // 5 inputs × 3 replicates (10 degrees of freedom), σ = 0.3, 4000 data sets: the 90 %
    // interval must cover σ in 90 % ± 4 standard errors (±1.9 %) of them, and its two tails
    // must each miss about 5 %.
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let xs: Vec<Vec<f64>> = (0..15).map(|i| vec![(i % 5) as f64, 1.0]).collect();
    let sigma = 0.3;
    let (mut below, mut above, runs) = (0, 0, 4000);
    for _ in 0..runs {
        let ys: Vec<f64> = (0..15)
            .map(|i| (i % 5) as f64 * 2.0 + sigma * rng.sample::<f64, _>(StandardNormal))
            .collect();
        let e = replicate_noise(&xs, &ys, 0.9).unwrap().unwrap();
        assert_eq!(e.degrees_of_freedom, 10);
        match e.assess(sigma).unwrap() {
            NoiseVerdict::TooSmall => below += 1,
            NoiseVerdict::Loose => above += 1,
            NoiseVerdict::Plausible => {}
        }
    }
    let coverage = 1.0 - (below + above) as f64 / runs as f64;
    let tail = |n: usize| n as f64 / runs as f64;
    assert!((coverage - 0.9).abs() < 0.019, "coverage {coverage}");
    assert!(
        (tail(below) - 0.05).abs() < 0.014,
        "lower tail {}",
        tail(below)
    );
    assert!(
        (tail(above) - 0.05).abs() < 0.014,
        "upper tail {}",
        tail(above)
    );
}

/// The mean squared leave-one-out error of the kernel ridge smoother with regulariser a, by
/// refitting without each point (dense inverses), and ‖(I − H)y‖²/tr(I − H) with
/// I − H = a(K + aI)⁻¹ formed densely.
fn dense_scores(gram: &DMatrix<f64>, ys: &[f64], a: f64) -> (f64, f64) {
    let t = ys.len();
    let mut loo = 0.0;
    for i in 0..t {
        let keep: Vec<usize> = (0..t).filter(|&j| j != i).collect();
        let sub = DMatrix::from_fn(t - 1, t - 1, |r, c| gram[(keep[r], keep[c])])
            + DMatrix::identity(t - 1, t - 1) * a;
        let rhs = DVector::from_iterator(t - 1, keep.iter().map(|&j| ys[j]));
        let weights = sub.cholesky().unwrap().solve(&rhs);
        let prediction: f64 = keep
            .iter()
            .zip(weights.iter())
            .map(|(&j, w)| gram[(i, j)] * w)
            .sum();
        loo += (ys[i] - prediction).powi(2);
    }
    let residual_maker = (gram + DMatrix::identity(t, t) * a).try_inverse().unwrap() * a;
    let r = &residual_maker * DVector::from_column_slice(ys);
    (loo / t as f64, r.norm_squared() / residual_maker.trace())
}

fn smooth_data(seed: u64, n: usize, sigma: f64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let xs: Vec<Vec<f64>> = (0..n)
        .map(|_| vec![rng.random::<f64>(), rng.random::<f64>()])
        .collect();
    let ys = xs
        .iter()
        .map(|x| {
            (4.0 * x[0]).sin()
                + (3.0 * x[1]).cos() * x[0]
                + sigma * rng.sample::<f64, _>(StandardNormal)
        })
        .collect();
    (xs, ys)
}

#[test]
fn the_cross_validated_regulariser_minimises_a_dense_scan() {
    for (seed, kernel) in [
        (
            1,
            Box::new(Matern::new(2.5, 0.5).unwrap()) as Box<dyn Kernel>,
        ),
        (2, Box::new(Rbf::new(0.3).unwrap())),
        (3, Box::new(Matern::new(1.5, 0.5).unwrap())),
    ] {
        let (xs, ys) = smooth_data(seed, 60, 0.1);
        let estimate = residual_noise(&kernel, &xs, &ys).unwrap();
        let gram = kernel.gram(&xs.as_points().unwrap()).unwrap();
        let (at_chosen, sigma_sq) = dense_scores(&gram, &ys, estimate.regulariser);
        assert!(
            (estimate.sigma.powi(2) - sigma_sq).abs() <= 1e-7 * sigma_sq,
            "seed {seed}: {} vs {sigma_sq} at a = {}",
            estimate.sigma.powi(2),
            estimate.regulariser
        );
        // The scan stays above 10⁻⁶, where the dense refits are accurate.
        let scan = (0..=200)
            .map(|i| 10f64.powf(-6.0 + 9.0 * i as f64 / 200.0))
            .map(|a| dense_scores(&gram, &ys, a).0)
            .fold(f64::INFINITY, f64::min);
        assert!(
            at_chosen <= scan * (1.0 + 1e-9),
            "seed {seed}: leave-one-out {at_chosen} at the chosen a, {scan} on the scan"
        );
        assert!(
            !estimate.at_search_edge,
            "seed {seed}: a = {}",
            estimate.regulariser
        );
        assert!(estimate.effective_parameters > 1.0 && estimate.effective_parameters < 60.0);
    }
}

#[test]
fn an_interpolating_smoother_is_flagged() {
    // A rough kernel with a short length-scale on smooth data: cross-validation prefers to
    // interpolate (a at the bottom of the range), where ‖(I − H)y‖²/tr(I − H) → 0. The estimate
    // is then meaningless, and says so.
    let (xs, ys) = smooth_data(3, 60, 0.1);
    let estimate = residual_noise(&Matern::new(0.5, 0.2).unwrap(), &xs, &ys).unwrap();
    assert!(estimate.at_search_edge, "{estimate:?}");
    assert!(estimate.sigma < 0.01, "{estimate:?}");
}

#[test]
fn residuals_recover_a_known_noise_level() {
    // A smooth function on 300 random points of [0, 1]², Gaussian noise of σ = 0.1: the GCV
    // estimate is consistent; with 300 points its relative standard error is about
    // 1/√(2·(t − tr H)) ≈ 4.5 %, so 15 % is over three standard errors.
    for seed in [11, 12, 13] {
        let (xs, ys) = smooth_data(seed, 300, 0.1);
        let estimate = residual_noise(&Matern::new(2.5, 0.5).unwrap(), &xs, &ys).unwrap();
        assert!(
            (estimate.sigma - 0.1).abs() < 0.015,
            "seed {seed}: σ̂ = {}",
            estimate.sigma
        );
    }
}

#[test]
fn the_two_estimates_agree_on_replicated_data() {
    // 100 inputs, each observed 3 times, σ = 0.2.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let inputs: Vec<Vec<f64>> = (0..100)
        .map(|_| vec![rng.random::<f64>(), rng.random::<f64>()])
        .collect();
    let xs: Vec<Vec<f64>> = inputs
        .iter()
        .flat_map(|x| [x.clone(), x.clone(), x.clone()])
        .collect();
    let ys: Vec<f64> = xs
        .iter()
        .map(|x| x[0] * x[1] + 0.2 * rng.sample::<f64, _>(StandardNormal))
        .collect();
    let e = estimate_noise(&Rbf::new(0.5).unwrap(), &xs, &ys, 0.99).unwrap();
    assert_eq!(e.observations, 300);
    let replicates = e.replicates.unwrap();
    let residual = e.residual.unwrap();
    assert_eq!(replicates.degrees_of_freedom, 200);
    for sigma in [replicates.sigma, residual.sigma] {
        assert!((sigma - 0.2).abs() < 0.03, "{sigma}");
    }
    assert_eq!(replicates.assess(0.2).unwrap(), NoiseVerdict::Plausible);
    assert_eq!(replicates.assess(0.1).unwrap(), NoiseVerdict::TooSmall);
    assert_eq!(replicates.assess(0.4).unwrap(), NoiseVerdict::Loose);
}

#[test]
fn bad_input_is_refused() {
    let xs = vec![vec![0.0], vec![0.0]];
    assert!(matches!(
        replicate_noise(&xs, &[1.0], 0.9),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        replicate_noise(&xs, &[1.0, f64::NAN], 0.9),
        Err(Error::NonFinite { .. })
    ));
    for confidence in [0.0, 1.0, f64::NAN, -0.5] {
        assert!(matches!(
            replicate_noise(&xs, &[1.0, 2.0], confidence),
            Err(Error::InvalidParameter { .. })
        ));
    }
    let kernel = Rbf::new(0.5).unwrap();
    assert!(matches!(
        residual_noise(&kernel, &[vec![0.0]], &[1.0]),
        Err(Error::NoArms)
    ));
    assert!(matches!(
        residual_noise(&kernel, &xs, &[1.0, f64::INFINITY]),
        Err(Error::NonFinite { .. })
    ));
    let e = replicate_noise(&xs, &[1.0, 2.0], 0.9).unwrap().unwrap();
    assert!(matches!(e.assess(0.0), Err(Error::InvalidParameter { .. })));
    assert!(matches!(
        e.assess(f64::NAN),
        Err(Error::InvalidParameter { .. })
    ));
}
