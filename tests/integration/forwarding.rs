//! A bound used through a wrapper must behave as the bound itself. `&mut B`,
//! `Box<dyn ConfidenceBound>`, a bare `dyn ConfidenceBound` and [`AnyBound`] forward every
//! method of [`ConfidenceBound`] by hand. `argmax_ucb` has no provided body, so forgetting it
//! does not compile; any other method left out would still compile and silently take the
//! trait's provided body ("unchecked" diagnostics, an ignored fixed arm set, one-at-a-time
//! batches, no `remove_oldest`). This script calls every method, on the success and the error
//! paths, and requires the same record, bit for bit, from every way of holding each of the
//! eight bounds.

use kernel_bandits::bound::{AnyBound, BoundConfig, BoundKind};
use kernel_bandits::prelude::*;

fn kernel() -> Matern {
    Matern::new(2.5, 0.4).unwrap()
}

fn config() -> BoundConfig {
    BoundConfig::paper_defaults(&kernel(), 2, 200)
        .sketch(
            SketchParams::new()
                .lambda(0.5)
                .sigma(0.1)
                .norm_bound(10.0)
                .horizon(200)
                .beta(1.5),
        )
        .seed(11)
}

fn point(i: usize) -> [f64; 2] {
    let u = (i as f64 * 0.618_033_988_749_895).fract();
    let v = (i as f64 * 0.414_213_562_373_095).fract();
    [u, v]
}

fn reward(x: &[f64]) -> f64 {
    (5.0 * x[0]).sin() * x[1] + 0.3 * x[0]
}

/// The bits of every number in a bound's answer, or the error.
fn bits(result: Result<Bounds, Error>) -> String {
    match result {
        Ok(b) => {
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            format!("{:?} {:?} {:?}", bits(&b.mean), bits(&b.lcb), bits(&b.ucb))
        }
        Err(e) => format!("error {e:?}"),
    }
}

/// Calls every method of the trait in turn and records what each returned.
fn script<B: ConfidenceBound + ?Sized>(bound: &mut B) -> Vec<String> {
    let arms: Vec<[f64; 2]> = (100..130).map(point).collect();
    let arms = arms.as_points().unwrap();
    let probes: Vec<[f64; 2]> = (200..207).map(point).collect();
    let probes = probes.as_points().unwrap();
    let mut log = Vec::new();
    let mut record = |what: &str, value: String| log.push(format!("{what}: {value}"));
    let state = |b: &B| {
        format!(
            "name {} len {} empty {} dim {:?} fixed {:?} diagnostics {:?}",
            b.name(),
            b.len(),
            b.is_empty(),
            b.dim(),
            b.fixed_arms(),
            b.diagnostics()
        )
    };
    record("fresh", state(bound));
    record("prior", bits(bound.evaluate(&probes)));
    for i in 0..5 {
        let x = point(i);
        record("observe", format!("{:?}", bound.observe(&x, reward(&x))));
    }
    let batch: Vec<[f64; 2]> = (5..12).map(point).collect();
    let targets: Vec<f64> = batch.iter().map(|x| reward(x)).collect();
    let batch = batch.as_points().unwrap();
    record(
        "observe_many",
        format!("{:?}", bound.observe_many(&batch, &targets)),
    );
    record(
        "observe_many, one target short",
        format!("{:?}", bound.observe_many(&batch, &targets[1..])),
    );
    record(
        "observe, wrong dimension",
        format!("{:?}", bound.observe(&[0.5], 1.0)),
    );
    record(
        "observe, NaN",
        format!("{:?}", bound.observe(&[0.5, 0.5], f64::NAN)),
    );
    record("after observing", state(bound));
    record("evaluate", bits(bound.evaluate(&probes)));
    record("argmax", format!("{:?}", bound.argmax_ucb(&arms)));
    record("top 4", format!("{:?}", bound.top_ucb(&arms, 4)));
    record(
        "fix_arms",
        format!(
            "{:?}",
            bound.fix_arms(&arms, None).map_err(|e| e.to_string())
        ),
    );
    record("with a fixed set", state(bound));
    for round in 0..4 {
        record("argmax, fixed", format!("{:?}", bound.argmax_ucb(&arms)));
        record("top 3, fixed", format!("{:?}", bound.top_ucb(&arms, 3)));
        record("evaluate, fixed", bits(bound.evaluate(&arms)));
        let x = point(100 + 7 * round);
        record(
            "observe, fixed",
            format!("{:?}", bound.observe(&x, reward(&x))),
        );
    }
    bound.release_arms();
    record("released", state(bound));
    bound.truncate(bound.len() - 3);
    record("truncated", state(bound));
    record("evaluate, truncated", bits(bound.evaluate(&probes)));
    record(
        "remove_oldest",
        format!("{:?}", bound.remove_oldest().map_err(|e| e.to_string())),
    );
    record("after remove_oldest", state(bound));
    record("evaluate at the end", bits(bound.evaluate(&probes)));
    record(
        "argmax, no arms",
        format!(
            "{:?}",
            bound.argmax_ucb(&Points::from_row_major(&[], 2).unwrap())
        ),
    );
    log
}

#[test]
fn every_wrapper_forwards_every_method() {
    for kind in BoundKind::ALL {
        let build = || kind.build(kernel(), &config()).unwrap();
        let reference = match build() {
            // The concrete type, through its own impl.
            AnyBound::Ay(mut b) => script(&mut b),
            AnyBound::Igp(mut b) => script(&mut b),
            AnyBound::Amm(mut b) => script(&mut b),
            AnyBound::Dmm(mut b) => script(&mut b),
            AnyBound::Cmm(mut b) => script(&mut b),
            AnyBound::KUcb(mut b) => script(&mut b),
            AnyBound::Bkb(mut b) => script(&mut b),
            AnyBound::EkUcb(mut b) => script(&mut b),
            _ => unreachable!("a new bound kind needs a line here"),
        };
        let any = script(&mut build());
        let mut inner = build();
        let by_mut_ref = script(&mut &mut inner);
        let mut boxed: Box<dyn ConfidenceBound> = Box::new(build());
        let by_box = script(&mut boxed);
        let by_dyn = script(&mut *boxed_concrete(kind));
        for (how, log) in [
            ("AnyBound", &any),
            ("&mut AnyBound", &by_mut_ref),
            ("Box<dyn ConfidenceBound>", &by_box),
            ("dyn ConfidenceBound", &by_dyn),
        ] {
            assert_eq!(log.len(), reference.len(), "{kind} through {how}");
            for (got, expected) in log.iter().zip(&reference) {
                assert_eq!(got, expected, "{kind} through {how}");
            }
        }
        // The record holds what tells the bounds apart, so that a provided body would differ.
        let text = reference.join("\n");
        if kind.keeps_arm_state() {
            assert!(
                text.contains("fixed Some(ArmSetInfo { arms: 30"),
                "{kind}: {text}"
            );
        }
        if matches!(kind, BoundKind::Amm | BoundKind::Dmm | BoundKind::Cmm) {
            assert!(text.contains("smallest_radius: Some"), "{kind}");
        }
        assert_eq!(
            text.contains("remove_oldest: Ok(())"),
            kind.is_exact(),
            "{kind}"
        );
        assert!(text.contains("LengthMismatch"), "{kind}");
        println!("{kind}: {} calls agree through 5 wrappers", reference.len());
    }
}

/// The concrete bound (not the enum) behind a `Box<dyn ConfidenceBound>`.
fn boxed_concrete(kind: BoundKind) -> Box<dyn ConfidenceBound> {
    match kind.build(kernel(), &config()).unwrap() {
        AnyBound::Ay(b) => Box::new(b),
        AnyBound::Igp(b) => Box::new(b),
        AnyBound::Amm(b) => Box::new(b),
        AnyBound::Dmm(b) => Box::new(b),
        AnyBound::Cmm(b) => Box::new(b),
        AnyBound::KUcb(b) => Box::new(b),
        AnyBound::Bkb(b) => Box::new(b),
        AnyBound::EkUcb(b) => Box::new(b),
        _ => unreachable!("a new bound kind needs a line here"),
    }
}

#[test]
fn bound_kinds_parse_display_and_build() {
    for kind in BoundKind::ALL {
        assert_eq!(kind.to_string().parse::<BoundKind>().unwrap(), kind);
        let upper = format!("{}-UCB", kind.name().to_uppercase().replace("-UCB", ""));
        assert_eq!(upper.parse::<BoundKind>().unwrap(), kind, "{upper}");
        let bound = kind.build(kernel(), &config()).unwrap();
        assert_eq!(bound.name(), kind.name());
        assert_eq!(bound.kind(), kind);
    }
    assert_eq!("AY-GP-UCB".parse::<BoundKind>().unwrap(), BoundKind::Ay);
    assert_eq!("k_ucb".parse::<BoundKind>().unwrap(), BoundKind::KUcb);
    for bad in ["", "ucb", "gp-ucb", "k", "dmm2", "cmm ucb"] {
        let err = bad.parse::<BoundKind>().unwrap_err();
        assert!(err.to_string().contains("ek-ucb"), "{err}");
    }
    // Paper defaults fill in what each bound needs; the bare defaults lack IGP's η.
    let bare = BoundConfig::new();
    for kind in BoundKind::ALL {
        let built = kind.build(kernel(), &bare);
        assert_eq!(built.is_err(), kind == BoundKind::Igp, "{kind}");
        assert!(
            kind.build(kernel(), &BoundConfig::paper_defaults(&kernel(), 3, 1000))
                .is_ok()
        );
    }
}
