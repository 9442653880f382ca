//! `UcbAgent::refit` and `UcbAgent::recommend`.
//!
//! The references are independent of the refit: a bound built from scratch (`Dmm::new`,
//! `Cmm::new`, `Amm::new`) with the kernel and σ of a separate `fit_hyperparameters` call on
//! the same data, fed exactly the observations the refitted bound may use (all of them, or
//! only those after the refit); and, for `recommend`, a brute-force argmax of the LCBs.

use kernel_bandits::agent::{RefitMode, RefitOptions};
use kernel_bandits::bound::{AdaptiveNorm, AnyBound, BoundConfig, BoundKind};
use kernel_bandits::hyper::{FitOptions, FittedKernel, KernelFamily, fit_hyperparameters};
use kernel_bandits::prelude::*;

const SIGMA: f64 = 0.1;
const B: f64 = 2.0;
const DELTA: f64 = 0.05;
const C: f64 = 0.5;

fn f(x: &[f64]) -> f64 {
    (4.0 * x[0]).sin() + (3.0 * x[1]).cos() * x[0]
}

/// n deterministic points of [0, 1]² and noisy values (fixed pseudo-noise).
fn data(n: usize, offset: usize) -> Vec<(Vec<f64>, f64)> {
    (offset..offset + n)
        .map(|i| {
            let x = vec![
                (i as f64 * 0.618_033_988_7) % 1.0,
                (i as f64 * 0.414_213_562) % 1.0,
            ];
            let noise = 0.05 * ((i as f64 * 12.9898).sin() * 43_758.545).fract();
            let y = f(&x) + noise;
            (x, y)
        })
        .collect()
}

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(SIGMA)
        .norm_bound(B)
        .delta(DELTA)
        .scale(C)
}

fn start_kernel() -> FittedKernel {
    FittedKernel::shared(KernelFamily::Matern { nu: 2.5 }, 0.3, 1.0).unwrap()
}

fn agent(kind: BoundKind) -> UcbAgent<AnyBound<FittedKernel>> {
    let config = BoundConfig::new().params(params());
    UcbAgent::new(kind.build(start_kernel(), &config).unwrap())
}

fn fit_options() -> FitOptions {
    FitOptions::new().starts(8).seed(3)
}

fn queries() -> Vec<[f64; 2]> {
    (0..7)
        .map(|i| [i as f64 / 6.0, 1.0 - i as f64 / 9.0])
        .collect()
}

/// The bounds of `bound` and `reference` at the queries agree to 1e-12 (relative).
fn assert_same(bound: &dyn ConfidenceBound, reference: &dyn ConfidenceBound) {
    let q: Vec<f64> = queries().concat();
    let points = kernel_bandits::points::Points::from_row_major(&q, 2).unwrap();
    let (a, b) = (
        bound.evaluate(&points).unwrap(),
        reference.evaluate(&points).unwrap(),
    );
    for (u, v) in [(&a.lcb, &b.lcb), (&a.ucb, &b.ucb), (&a.mean, &b.mean)] {
        for (x, y) in u.iter().zip(v) {
            assert!(
                (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                "refitted {x} vs reference {y}"
            );
        }
    }
}

/// A bound of `kind` from scratch with the fit's kernel and σ, on `observations`.
fn reference(
    kind: BoundKind,
    fit: &kernel_bandits::hyper::Fit,
    observations: &[(Vec<f64>, f64)],
) -> Box<dyn ConfidenceBound> {
    let p = params().sigma(fit.noise_sd());
    let k = fit.kernel().clone();
    let mut bound: Box<dyn ConfidenceBound> = match kind {
        BoundKind::Dmm => Box::new(Dmm::new(k, p).unwrap()),
        BoundKind::Cmm => Box::new(Cmm::new(k, p).unwrap()),
        BoundKind::Amm => Box::new(Amm::new(k, p).unwrap()),
        _ => unreachable!(),
    };
    for (x, y) in observations {
        bound.observe(x, *y).unwrap();
    }
    bound
}

#[test]
fn all_data_refit_equals_a_bound_built_from_scratch_on_every_observation() {
    for kind in [BoundKind::Dmm, BoundKind::Cmm, BoundKind::Amm] {
        let mut agent = agent(kind);
        let d = data(15, 0);
        for (x, y) in &d {
            agent.update(x, *y).unwrap();
        }
        let options = RefitOptions::new(RefitMode::AllData).fit(fit_options());
        let fit = agent.refit(&options).unwrap();
        // An independent fit on the same data gives the same hyperparameters (deterministic).
        let xs: Vec<Vec<f64>> = d.iter().map(|(x, _)| x.clone()).collect();
        let ys: Vec<f64> = d.iter().map(|(_, y)| *y).collect();
        let separate = fit_hyperparameters(&fit_options(), &xs, &ys).unwrap();
        assert_eq!(fit, separate);
        assert_ne!(fit.lengthscales()[0], 0.3, "the fit moved the length-scale");
        assert_eq!(agent.bound().len(), 15);
        assert_same(agent.bound(), &*reference(kind, &separate, &d));
    }
}

#[test]
fn strict_refit_conditions_only_on_later_observations() {
    for kind in [BoundKind::Dmm, BoundKind::Cmm] {
        let mut agent = agent(kind);
        let before = data(12, 0);
        for (x, y) in &before {
            agent.update(x, *y).unwrap();
        }
        let fit = agent
            .refit(&RefitOptions::new(RefitMode::Strict).fit(fit_options()))
            .unwrap();
        assert_eq!(agent.bound().len(), 0);
        let after = data(6, 12);
        for (x, y) in &after {
            agent.update(x, *y).unwrap();
        }
        assert_eq!(agent.bound().len(), 6);
        assert_eq!(agent.observed().len(), 18);
        assert_same(agent.bound(), &*reference(kind, &fit, &after));
    }
}

#[test]
fn adaptive_norm_keeps_its_level_and_history_through_a_refit() {
    let config = BoundConfig::new().params(params().norm_bound(0.01));
    let inner = BoundKind::Dmm.build(start_kernel(), &config).unwrap();
    let mut agent = UcbAgent::new(AdaptiveNorm::new(inner).unwrap());
    let d = data(12, 0);
    for (x, y) in &d {
        agent.update(x, 5.0 * y).unwrap();
    }
    let (level, doublings) = (agent.bound().level(), agent.bound().doublings().to_vec());
    assert!(level > 1, "B = 0.01 must be refuted by values of size 5");
    let fit = agent
        .refit(&RefitOptions::new(RefitMode::Strict).fit(fit_options()))
        .unwrap();
    assert_eq!(agent.bound().level(), level);
    assert_eq!(agent.bound().doublings(), doublings.as_slice());
    assert_eq!(
        agent.bound().norm_bound(),
        0.01 * 2f64.powi(level as i32 - 1)
    );
    // The rebuilt wrapper is a plain DMM at B_k with the fitted kernel and σ (nothing observed).
    let plain = Dmm::new(
        fit.kernel().clone(),
        params()
            .sigma(fit.noise_sd())
            .norm_bound(agent.bound().norm_bound()),
    )
    .unwrap();
    assert_same(agent.bound(), &plain);
    // An all-data refit keeps at least the level (it only goes up).
    agent
        .refit(&RefitOptions::new(RefitMode::AllData).fit(fit_options()))
        .unwrap();
    assert!(agent.bound().level() >= level);
}

#[test]
fn a_rejected_refit_leaves_the_agent_unchanged() {
    let q = queries();
    // One observation: the fit needs two.
    let mut one = agent(BoundKind::Dmm);
    one.update(&[0.2, 0.3], 1.0).unwrap();
    let before = one.bound().bounds(&q).unwrap();
    assert!(matches!(
        one.refit(&RefitOptions::new(RefitMode::AllData)),
        Err(Error::InvalidParameter { .. })
    ));
    assert_eq!(one.bound().bounds(&q).unwrap(), before);
    assert_eq!((one.bound().len(), one.observed().len()), (1, 1));

    let mut agent = agent(BoundKind::Dmm);
    for (x, y) in data(10, 0) {
        agent.update(&x, y).unwrap();
    }
    agent.pending(&[0.5, 0.5]).unwrap();
    let before = agent.bound().bounds(&q).unwrap();
    // Invalid fit options.
    let bad = RefitOptions::new(RefitMode::AllData).fit(FitOptions::new().starts(0));
    assert!(agent.refit(&bad).is_err());
    assert_eq!(agent.bound().bounds(&q).unwrap(), before);
    assert_eq!(agent.pending_len(), 1);
    // A kind that cannot be rebuilt.
    let config = BoundConfig::new().params(params());
    let mut ay = UcbAgent::new(BoundKind::Ay.build(start_kernel(), &config).unwrap());
    for (x, y) in data(10, 0) {
        ay.update(&x, y).unwrap();
    }
    let ay_before = ay.bound().bounds(&q).unwrap();
    assert!(matches!(
        ay.refit(&RefitOptions::new(RefitMode::AllData)),
        Err(Error::Unsupported { .. })
    ));
    assert_eq!(ay.bound().bounds(&q).unwrap(), ay_before);
    // A successful refit keeps the pending evaluation.
    agent
        .refit(&RefitOptions::new(RefitMode::AllData).fit(fit_options()))
        .unwrap();
    assert_eq!(agent.pending_len(), 1);
    agent.update(&[0.5, 0.5], 0.1).unwrap();
    assert_eq!(agent.pending_len(), 0);
}

#[test]
fn recommend_is_the_observation_of_largest_lcb() {
    let mut agent = agent(BoundKind::Dmm);
    assert!(matches!(agent.recommend(), Err(Error::NoArms)));
    let d = data(20, 0);
    for (x, y) in &d {
        agent.update(x, *y).unwrap();
    }
    let xs: Vec<Vec<f64>> = d.iter().map(|(x, _)| x.clone()).collect();
    let b = agent.bound().bounds(&xs).unwrap();
    // Brute force: the first index of the maximum.
    let mut best = 0;
    for i in 0..xs.len() {
        if b.lcb[i] > b.lcb[best] {
            best = i;
        }
    }
    let r = agent.recommend().unwrap();
    assert_eq!(r.index, best);
    assert_eq!(r.x, xs[best]);
    assert_eq!(
        (r.lcb, r.mean, r.ucb),
        (b.lcb[best], b.mean[best], b.ucb[best])
    );
}
