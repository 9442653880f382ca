//! Certified recommendations and stopping rules (`kernel_bandits::decide`).
//!
//! References: the certificate is recomputed by hand from the values of one `bounds` call (the
//! arg-max with ties to the lowest index written out), the running intersection from every
//! round's values kept by the test, and validity against the true f of an RKHS function of
//! known norm.
//! Structured cases: exact ties (duplicated arms, a design mirrored about the centre), an
//! arm set of one arm, a lower bound that falls after an observation (the intersection must
//! keep the old one), and data that refute the assumptions.

use kernel_bandits::Error;
use kernel_bandits::decide::{Certifier, Stop, StoppingRule, certify};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

/// (mean, lcb, ucb) at each arm, from one `bounds` call (the values a user sees; a certificate
/// promises to be built from exactly these).
fn one_by_one<B: ConfidenceBound>(bound: &B, arms: &[[f64; 1]]) -> Vec<(f64, f64, f64)> {
    let b = bound.bounds(arms).unwrap();
    (0..arms.len())
        .map(|j| (b.mean[j], b.lcb[j], b.ucb[j]))
        .collect()
}

/// The lowest index of the largest value, written out with `>` on each pair.
fn first_max(values: &[f64]) -> usize {
    let mut best = 0;
    for j in 1..values.len() {
        if values[j] > values[best] {
            best = j;
        }
    }
    best
}

fn params() -> BoundParams {
    BoundParams::new().sigma(0.1).norm_bound(2.0).delta(0.01)
}

/// After every observation of a sequence with duplicates and a mirrored design, the certificate
/// of AMM, DMM and CMM equals the one built by hand from single-point evaluations, bit for bit,
/// and ties go to the lowest index.
#[test]
fn certificate_matches_the_values_after_every_observation() -> kernel_bandits::Result<()> {
    // Arms mirrored about 0.5, with 0.2 and 0.8 each listed twice.
    let arms: Vec<[f64; 1]> = [0.0, 0.2, 0.2, 0.35, 0.5, 0.65, 0.8, 0.8, 1.0]
        .iter()
        .map(|&x| [x])
        .collect();
    // Symmetric data: every observation at x is matched by one at 1 − x with the same value,
    // so the bounds at mirrored arms are equal up to rounding, and the duplicated arms tie
    // exactly.
    let data = [
        (0.2, 0.3),
        (0.8, 0.3),
        (0.5, 0.9),
        (0.35, 0.6),
        (0.65, 0.6),
        (0.5, 1.0),
        (0.2, 0.35),
        (0.8, 0.35),
        (0.0, -0.2),
        (1.0, -0.2),
    ];
    let kernel = Matern::new(2.5, 0.25)?;
    let mut amm = Amm::new(kernel, params())?;
    let mut dmm = Dmm::new(kernel, params())?;
    let mut cmm = Cmm::new(kernel, params())?;
    let mut ties_seen = 0;
    for (t, &(x, y)) in data.iter().enumerate() {
        amm.observe(&[x], y)?;
        dmm.observe(&[x], y)?;
        cmm.observe(&[x], y)?;
        for (name, by_hand, c) in [
            ("AMM", one_by_one(&amm, &arms), certify(&amm, &arms)?),
            ("DMM", one_by_one(&dmm, &arms), certify(&dmm, &arms)?),
            ("CMM", one_by_one(&cmm, &arms), certify(&cmm, &arms)?),
        ] {
            let lcb: Vec<f64> = by_hand.iter().map(|v| v.1).collect();
            let ucb: Vec<f64> = by_hand.iter().map(|v| v.2).collect();
            let (best, top) = (first_max(&lcb), first_max(&ucb));
            let context = format!("{name}, t = {}", t + 1);
            assert_eq!(c.recommendation.index, best, "{context}: recommendation");
            assert_eq!(c.recommendation.x, arms[best].to_vec(), "{context}");
            assert_eq!(c.recommendation.lcb, lcb[best], "{context}: its LCB");
            assert_eq!(
                c.recommendation.mean, by_hand[best].0,
                "{context}: its mean"
            );
            assert_eq!(c.recommendation.ucb, ucb[best], "{context}: its UCB");
            assert_eq!(
                (c.upper, c.upper_index),
                (ucb[top], top),
                "{context}: upper"
            );
            assert_eq!(c.gap, ucb[top] - lcb[best], "{context}: gap");
            assert!(c.gap >= 0.0, "{context}: negative gap {}", c.gap);
            assert_eq!(c.observations, t + 1, "{context}");
            // A duplicated arm never wins over its first copy.
            assert!(
                ![2, 7].contains(&best) && ![2, 7].contains(&top),
                "{context}"
            );
            if lcb[best + 1..].contains(&lcb[best]) || ucb[top + 1..].contains(&ucb[top]) {
                ties_seen += 1;
            }
        }
    }
    // The duplicates made exact ties at the top at least once (else the tie rule is untested).
    assert!(ties_seen > 0, "no exact tie at the top");
    Ok(())
}

/// CMM's certificate is never looser than DMM's, nor DMM's than AMM's (the bounds' ordering,
/// Flynn & Reeb 2024 §5), at every round of a noisy run.
#[test]
fn tighter_bounds_certify_smaller_gaps() -> kernel_bandits::Result<()> {
    let kernel = Rbf::new(0.2)?;
    let arms: Vec<[f64; 1]> = (0..41).map(|i| [i as f64 / 40.0]).collect();
    let f = |x: f64| 1.5 * kernel.eval(&[0.3], &[x]) - 0.5 * kernel.eval(&[0.75], &[x]);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let p = params().scale(1.0);
    let mut amm = Amm::new(kernel, p)?;
    let mut dmm = Dmm::new(kernel, p)?;
    let mut cmm = Cmm::new(kernel, p)?;
    for t in 1..=40 {
        let x = rng.random::<f64>();
        let y = f(x) + 0.1 * rng.sample::<f64, _>(StandardNormal);
        amm.observe(&[x], y)?;
        dmm.observe(&[x], y)?;
        cmm.observe(&[x], y)?;
        let (a, d, c) = (
            certify(&amm, &arms)?.gap,
            certify(&dmm, &arms)?.gap,
            certify(&cmm, &arms)?.gap,
        );
        let slack = 1e-9 * (1.0 + a);
        assert!(
            c <= d + slack && d <= a + slack,
            "t = {t}: gaps CMM {c} DMM {d} AMM {a}"
        );
    }
    Ok(())
}

/// The running intersection against every round's values kept by hand; on this sequence DMM's
/// lower bound at the observed arm falls after an outlying value, and the certifier must keep
/// the earlier, larger one (and so certify a smaller gap than the round alone).
#[test]
fn certifier_keeps_the_intersection_over_rounds() -> kernel_bandits::Result<()> {
    let kernel = Matern::new(2.5, 0.3)?;
    let arms: Vec<[f64; 1]> = (0..11).map(|i| [i as f64 / 10.0]).collect();
    let mut dmm = Dmm::new(kernel, params())?;
    let mut certifier = Certifier::new(&arms)?;
    let mut lower = vec![f64::NEG_INFINITY; arms.len()];
    let mut upper = f64::INFINITY;
    let mut strictly_tighter = 0;
    // Consistent values at 0.5, then one far below them (still within what ‖f‖ ≤ 2 and the
    // noise allow), which lowers the LCB there.
    let data = [
        (0.5, 1.0),
        (0.5, 1.02),
        (0.4, 0.9),
        (0.5, 0.98),
        (0.6, 0.92),
        (0.5, 0.6),
        (0.5, 0.62),
    ];
    for (t, &(x, y)) in data.iter().enumerate() {
        dmm.observe(&[x], y)?;
        let values = one_by_one(&dmm, &arms);
        for (l, v) in lower.iter_mut().zip(&values) {
            *l = l.max(v.1);
        }
        upper = upper.min(values.iter().map(|v| v.2).fold(f64::NEG_INFINITY, f64::max));
        let best = first_max(&lower);
        let running = certifier.update(&dmm)?;
        let single = certify(&dmm, &arms)?;
        let context = format!("t = {}", t + 1);
        assert_eq!(running.recommendation.index, best, "{context}");
        assert_eq!(running.recommendation.lcb, lower[best], "{context}");
        assert_eq!(running.upper, upper, "{context}");
        assert_eq!(running.gap, upper - lower[best], "{context}");
        assert_eq!(certifier.lower(), lower.as_slice(), "{context}");
        assert!(running.gap <= single.gap, "{context}");
        if running.gap < single.gap {
            strictly_tighter += 1;
        }
    }
    assert!(
        strictly_tighter > 0,
        "the sequence never made the intersection tighter than one round"
    );
    Ok(())
}

/// Data that refute B: CMM sees the empty set, `certify` and `Certifier::update` refuse with
/// `Error::Refuted`, and the certifier is unchanged. AMM cannot see an empty set (its radius is
/// never negative), but the intersection can: a running lower bound above the current upper
/// bound.
#[test]
fn refuted_assumptions_certify_nothing() -> kernel_bandits::Result<()> {
    let arms = [[0.0], [0.5], [1.0]];
    let small = BoundParams::new().sigma(0.01).norm_bound(0.01).delta(0.01);
    let mut cmm = Cmm::new(Rbf::new(0.3)?, small)?;
    let mut certifier = Certifier::new(&arms)?;
    certifier.update(&cmm)?;
    let before = certifier.clone();
    cmm.observe(&[0.5], 1.0)?;
    assert!(matches!(certify(&cmm, &arms), Err(Error::Refuted { .. })));
    assert!(matches!(certifier.update(&cmm), Err(Error::Refuted { .. })));
    assert_eq!(certifier, before, "a refused update changed the certifier");

    // AMM: many values near 1 at 0.5, then many near −1 there.
    let p = BoundParams::new()
        .sigma(0.05)
        .norm_bound(3.0)
        .delta(0.01)
        .scale(1.0);
    let mut amm = Amm::new(Rbf::new(0.3)?, p)?;
    let mut certifier = Certifier::new(&arms)?;
    let mut refuted_at = None;
    for t in 0..400 {
        let y = if t < 200 { 1.0 } else { -1.0 };
        amm.observe(&[0.5], y)?;
        assert!(!amm.diagnostics().empty_set(), "AMM saw the empty set");
        let before = certifier.clone();
        match certifier.update(&amm) {
            Ok(_) => {}
            Err(Error::Refuted { what }) => {
                assert_eq!(certifier, before, "a refused update changed the certifier");
                assert!(what.contains("largest lower bound so far"), "{what}");
                refuted_at = Some(t + 1);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let t = refuted_at.expect("the intersection never refuted the contradictory values");
    assert!(
        t > 200,
        "refuted at t = {t}, before the contradictory values"
    );
    Ok(())
}

/// Bad input: empty arm sets, arms of the wrong dimension, non-finite arms.
#[test]
fn certificates_refuse_bad_input() -> kernel_bandits::Result<()> {
    let mut dmm = Dmm::new(Rbf::new(0.3)?, params())?;
    dmm.observe(&[0.1, 0.2], 0.5)?;
    let empty: Vec<[f64; 2]> = Vec::new();
    assert_eq!(certify(&dmm, &empty), Err(Error::NoArms));
    assert_eq!(Certifier::new(&empty).unwrap_err(), Error::NoArms);
    assert!(matches!(
        certify(&dmm, &[[0.1]]),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(certify(&dmm, &[[0.1, f64::NAN]]).is_err());
    assert!(Certifier::new(&[[f64::INFINITY, 0.0]]).is_err());
    // A certifier over 1-D arms given a 2-D bound: refused, unchanged.
    let mut certifier = Certifier::new(&[[0.1]])?;
    let before = certifier.clone();
    assert!(certifier.update(&dmm).is_err());
    assert_eq!(certifier, before);
    Ok(())
}

/// The synthetic problem of Flynn & Reeb (2024) §7 in 1-D with 60 fixed arms, σ = 0.1 and
/// the true ‖f‖_H as B: over 20 seeded repetitions, `run_until` with ε = 0.3 stops on the gap
/// and, at every round of every run, the certificate is at least the true regret of the
/// recommended arm (the guarantee holds with probability ≥ 0.99 per run, and these seeds meet
/// it). The smallest margin is reported.
#[test]
fn run_until_certifies_the_true_regret_at_every_round() -> kernel_bandits::Result<()> {
    let kernel = Matern::new(2.5, 0.2)?;
    let arms: Vec<[f64; 1]> = (0..60).map(|i| [i as f64 / 59.0]).collect();
    let mut smallest_margin = f64::INFINITY;
    let mut evaluations = Vec::new();
    for seed in 0..20u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let centres: Vec<f64> = (0..6).map(|_| rng.random::<f64>()).collect();
        let weights: Vec<f64> = (0..6).map(|_| rng.sample(StandardNormal)).collect();
        let raw = |x: f64| -> f64 {
            centres
                .iter()
                .zip(&weights)
                .map(|(z, w)| w * kernel.eval(&[*z], &[x]))
                .sum()
        };
        let norm = centres
            .iter()
            .zip(&weights)
            .map(|(z, w)| w * raw(*z))
            .sum::<f64>()
            .sqrt();
        let f = |x: f64| raw(x) / norm; // ‖f‖_H = 1
        let values: Vec<f64> = arms.iter().map(|x| f(x[0])).collect();
        let best = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let p = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.01);
        let mut agent = UcbAgent::new(Dmm::new(kernel, p)?);
        let rule = StoppingRule::budget(400).gap(0.3);
        let run = agent.run_until(
            &arms,
            |x: &[f64]| f(x[0]) + 0.1 * rng.sample::<f64, _>(StandardNormal),
            &rule,
        )?;
        assert_eq!(run.stopped_by, Stop::Gap, "seed {seed}");
        assert!(run.certificate.gap <= 0.3, "seed {seed}");
        for step in std::iter::once(&run.initial).chain(run.history.iter().map(|s| &s.certificate))
        {
            let regret = best - values[step.recommendation.index];
            smallest_margin = smallest_margin.min(step.gap - regret);
            assert!(
                step.gap >= regret,
                "seed {seed}, t = {}: gap {} below the true regret {regret}",
                step.observations,
                step.gap
            );
        }
        evaluations.push(run.evaluations());
    }
    println!(
        "evaluations to certify ε = 0.3: {evaluations:?}; smallest margin {smallest_margin:.4}"
    );
    Ok(())
}

/// The rules: which one stops when several hold, a budget of 0, a relative gap that needs
/// two distinct values, and invalid parameters refused before any evaluation.
#[test]
fn stopping_rules_stop_where_they_say() -> kernel_bandits::Result<()> {
    let kernel = Rbf::new(0.25)?;
    let arms: Vec<[f64; 1]> = (0..21).map(|i| [i as f64 / 20.0]).collect();
    let f = |x: &[f64]| 0.9 * kernel.eval(&[0.7], x);
    let p = BoundParams::new().sigma(0.05).norm_bound(1.0).delta(0.01);
    let fresh = || UcbAgent::new(Cmm::new(kernel, p).unwrap());

    // Budget 0: the prior certificate only.
    let mut agent = fresh();
    let run = agent.run_until(&arms, f, &StoppingRule::budget(0))?;
    assert_eq!((run.stopped_by, run.evaluations()), (Stop::Budget, 0));
    assert_eq!(run.certificate, run.initial);
    assert_eq!(agent.bound().len(), 0);

    // A gap rule that holds at once wins over the budget, before any evaluation.
    let huge = run.initial.gap * 2.0;
    let run = fresh().run_until(&arms, f, &StoppingRule::budget(0).gap(huge))?;
    assert_eq!((run.stopped_by, run.evaluations()), (Stop::Gap, 0));

    // Gap and noise level: the gap rule is reported first when both hold; with the gap's ε
    // below σ, the noise level stops first, and exactly at the first round with gap ≤ σ.
    let sigma = 0.05;
    let run = fresh().run_until(
        &arms,
        f,
        &StoppingRule::budget(500)
            .gap(sigma / 4.0)
            .noise_level(sigma),
    )?;
    assert_eq!(run.stopped_by, Stop::NoiseLevel);
    assert!(run.certificate.gap <= sigma);
    let gaps: Vec<f64> = run.history.iter().map(|s| s.certificate.gap).collect();
    let first = gaps.iter().position(|&g| g <= sigma).unwrap();
    assert_eq!(
        first + 1,
        run.evaluations(),
        "did not stop at the first gap ≤ σ"
    );

    // Relative gap: needs two values; stops at the first round with gap ≤ 0.1·range.
    let run = fresh().run_until(&arms, f, &StoppingRule::budget(500).relative_gap(0.1))?;
    assert_eq!(run.stopped_by, Stop::RelativeGap);
    let ys: Vec<f64> = run.history.iter().map(|s| s.y).collect();
    let range = ys.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
        - ys.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(run.certificate.gap <= 0.1 * range && run.evaluations() >= 2);

    // Invalid rules and arms: refused, the agent untouched.
    let mut agent = fresh();
    agent.update(&[0.3], 0.2)?;
    let before = agent.bound().bounds(&arms)?;
    for rule in [
        StoppingRule::budget(10).gap(0.0),
        StoppingRule::budget(10).gap(f64::NAN),
        StoppingRule::budget(10).relative_gap(-1.0),
        StoppingRule::budget(10).noise_level(f64::INFINITY),
    ] {
        let e = agent.run_until(&arms, f, &rule).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
    }
    let empty: Vec<[f64; 1]> = Vec::new();
    assert_eq!(
        agent.run_until(&empty, f, &StoppingRule::budget(10)),
        Err(Error::NoArms)
    );
    assert!(
        agent
            .run_until(&[[0.1, 0.2]], f, &StoppingRule::budget(10))
            .is_err()
    );
    assert_eq!(agent.bound().len(), 1);
    assert_eq!(agent.bound().bounds(&arms)?, before);

    // A non-finite value at the third evaluation: an error naming it; two values absorbed.
    let mut agent = fresh();
    let mut calls = 0;
    let e = agent
        .run_until(
            &arms,
            |x: &[f64]| {
                calls += 1;
                if calls == 3 { f64::NAN } else { f(x) }
            },
            &StoppingRule::budget(10),
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::NonFinite { what } if what.contains("evaluation 3")),
        "{e}"
    );
    assert_eq!(agent.bound().len(), 2);
    Ok(())
}
