//! Snapshots (feature `serde`): every agent and bound saved to JSON and to bytes, restored,
//! and run on for 200 more rounds next to the original. The restored agents must choose the
//! same arms and report the same bounds, bit for bit, every round — which covers the random
//! generators (RandomAgent, BKB's resampling, EK-UCB's KORS, R-PERP's play order), the cached
//! decompositions (CMM's bordered eigen-updates) and the fixed-arm columns. Damaged, truncated,
//! mismatched and version-bumped snapshots must be refused with a typed error.
#![cfg(feature = "serde")]

use kernel_bandits::SnapshotError;
use kernel_bandits::nonstationary::{RPerp, RPerpParams, Restarting, SlidingWindow};
use kernel_bandits::prelude::*;
use kernel_bandits::snapshot::FORMAT_VERSION;

/// Rounds before the snapshot, and after it.
const BEFORE: usize = 40;
const AFTER: usize = 200;

const PROBES: [[f64; 2]; 3] = [[0.1, 0.9], [0.5, 0.5], [0.77, 0.2]];

/// A reproducible stream of numbers in [0, 1) (SplitMix64).
fn uniform(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// The arms of round `t`: the same 5 × 5 grid every round (`fixed`, so that the agents keep
/// per-arm state), or 12 fresh points.
fn arms(t: usize, fixed: bool) -> Vec<[f64; 2]> {
    if fixed {
        (0..25)
            .map(|i| [(i % 5) as f64 / 4.0, (i / 5) as f64 / 4.0])
            .collect()
    } else {
        (0..12)
            .map(|i| {
                let s = (t * 100 + i) as u64 * 2;
                [uniform(s), uniform(s + 1)]
            })
            .collect()
    }
}

fn reward(x: &[f64], t: usize) -> f64 {
    (3.0 * x[0]).sin() + (2.0 * x[1]).cos() + 0.1 * (uniform(1_000_000 + t as u64) - 0.5)
}

/// One round: the chosen arm (or the error's text) and whatever `probe` reports afterwards.
fn play<A: BanditAgent>(
    agent: &mut A,
    t: usize,
    fixed: bool,
    probe: &impl Fn(&A) -> Vec<u64>,
) -> (usize, Vec<u64>) {
    let arms = arms(t, fixed);
    let i = agent.select(&arms).unwrap();
    agent.update(&arms[i], reward(&arms[i], t)).unwrap();
    (i, probe(agent))
}

/// Runs `agent` for BEFORE rounds, restores it from JSON and from bytes, and checks that all
/// three then play AFTER identical rounds. Returns the sizes of the two snapshots.
fn continues_identically<A: BanditAgent + Snapshot>(
    mut agent: A,
    fixed: bool,
    probe: impl Fn(&A) -> Vec<u64>,
) -> (usize, usize) {
    for t in 0..BEFORE {
        play(&mut agent, t, fixed, &probe);
    }
    let json = agent.to_json().unwrap();
    let bytes = agent.to_bytes().unwrap();
    let mut from_json = A::from_json(&json).unwrap();
    let mut from_bytes = A::from_bytes(&bytes).unwrap();
    // A restored value saves to the same snapshot.
    assert_eq!(from_json.to_bytes().unwrap(), bytes, "{}", A::kind());
    assert_eq!(from_bytes.to_json().unwrap(), json, "{}", A::kind());
    for t in BEFORE..BEFORE + AFTER {
        let original = play(&mut agent, t, fixed, &probe);
        assert_eq!(
            play(&mut from_json, t, fixed, &probe),
            original,
            "{} (JSON) diverged at round {t}",
            A::kind()
        );
        assert_eq!(
            play(&mut from_bytes, t, fixed, &probe),
            original,
            "{} (bytes) diverged at round {t}",
            A::kind()
        );
    }
    (json.len(), bytes.len())
}

/// The bits of mean, LCB and UCB at the probe points.
fn bound_bits<B: ConfidenceBound>(agent: &UcbAgent<B>) -> Vec<u64> {
    let b = agent.bound().bounds(&PROBES).unwrap();
    let mut bits: Vec<u64> = b
        .mean
        .iter()
        .chain(&b.lcb)
        .chain(&b.ucb)
        .map(|v| v.to_bits())
        .collect();
    bits.push(agent.bound().len() as u64);
    bits
}

fn kernel() -> Matern {
    Matern::new(2.5, 0.3).unwrap()
}

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(2.0)
        .delta(0.1)
        .scale(1.0)
        .horizon(BEFORE + AFTER)
}

fn sketch() -> SketchParams {
    SketchParams::new()
        .lambda(0.5)
        .sigma(0.1)
        .norm_bound(2.0)
        .horizon(BEFORE + AFTER)
}

fn check_ucb<B: ConfidenceBound + Snapshot>(make: impl Fn() -> B) {
    for fixed in [false, true] {
        let (json, bytes) = continues_identically(UcbAgent::new(make()), fixed, bound_bits);
        println!(
            "{:<28} fixed arms: {fixed:<5} JSON {json:>8} B, binary {bytes:>8} B",
            UcbAgent::<B>::kind()
        );
    }
}

#[test]
fn every_exact_bound_continues_bit_identically() {
    check_ucb(|| Ay::new(kernel(), params()).unwrap());
    check_ucb(|| Igp::new(kernel(), params()).unwrap());
    check_ucb(|| Amm::new(kernel(), params()).unwrap());
    check_ucb(|| Dmm::new(kernel(), params()).unwrap());
    check_ucb(|| KUcb::new(kernel(), 0.01, 2.0).unwrap());
}

#[test]
fn cmm_continues_bit_identically_with_its_cached_eigendecompositions() {
    check_ucb(|| Cmm::new(kernel(), params()).unwrap());
}

#[test]
fn sketched_bounds_continue_bit_identically_with_their_generators() {
    check_ucb(|| Bkb::new(kernel(), sketch(), 7).unwrap());
    check_ucb(|| EkUcb::new(kernel(), sketch(), 7).unwrap());
    // BBKB (snapshots taken mid-batch: the frozen mean must survive).
    check_ucb(|| Bkb::new(kernel(), sketch().beta(1.0).batch_threshold(3.0), 7).unwrap());
}

#[test]
fn bounds_chosen_by_name_continue_bit_identically() {
    use kernel_bandits::bound::{AnyBound, BoundConfig, BoundKind};
    let config = BoundConfig::new()
        .params(params())
        .sketch(sketch().beta(1.0))
        .seed(7);
    for kind in BoundKind::ALL {
        check_ucb(|| kind.build(kernel(), &config).unwrap());
    }
    // The kind tag is the wrapper's; the state names the bound inside, so a snapshot of one
    // bound does not restore as a concrete bound of another type.
    let saved = BoundKind::Dmm
        .build(kernel(), &config)
        .unwrap()
        .to_json()
        .unwrap();
    assert!(saved.contains(r#""kind":"bound<matern>""#));
    let restored = AnyBound::<Matern>::from_json(&saved).unwrap();
    assert_eq!(restored.kind(), BoundKind::Dmm);
    assert!(matches!(
        Dmm::<Matern>::from_json(&saved),
        Err(Error::Snapshot(SnapshotError::Kind { .. }))
    ));
}

#[test]
fn other_agents_continue_bit_identically() {
    let (json, _) = continues_identically(RandomAgent::new(3), false, |_| Vec::new());
    assert!(json > 0);
    let grid = arms(0, true);
    let rperp = RPerp::new(
        kernel(),
        &grid,
        RPerpParams::new(BEFORE + AFTER)
            .noise(0.1)
            .norm_bound(2.0)
            .width_scale(0.1),
        5,
    )
    .unwrap();
    continues_identically(rperp, true, |a: &RPerp<Matern>| {
        a.eliminations().iter().map(|e| e.kept as u64).collect()
    });
    let restarting = Restarting::new(Amm::new(kernel(), params()).unwrap(), 30).unwrap();
    continues_identically(restarting, false, |a: &Restarting<Amm<Matern>>| {
        bound_bits(a.agent())
    });
    for fixed in [false, true] {
        let window = SlidingWindow::new(Dmm::new(kernel(), params()).unwrap(), 25).unwrap();
        continues_identically(window, fixed, |a: &SlidingWindow<Dmm<Matern>>| {
            bound_bits(a.agent())
        });
    }
}

/// An AMM agent with some history, and its snapshots.
fn saved() -> (Vec<u8>, String) {
    let mut agent = UcbAgent::new(Amm::new(kernel(), params()).unwrap());
    for t in 0..10 {
        play(&mut agent, t, false, &|_: &UcbAgent<Amm<Matern>>| {
            Vec::new()
        });
    }
    (agent.to_bytes().unwrap(), agent.to_json().unwrap())
}

type Agent = UcbAgent<Amm<Matern>>;

#[test]
fn every_single_byte_change_of_a_binary_snapshot_is_refused() {
    let (bytes, _) = saved();
    assert!(Agent::from_bytes(&bytes).is_ok());
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[i] ^= flip;
            assert!(
                matches!(Agent::from_bytes(&damaged), Err(Error::Snapshot(_))),
                "byte {i} ^ {flip:#x} accepted"
            );
        }
    }
    for len in (0..bytes.len()).step_by(7) {
        assert!(matches!(
            Agent::from_bytes(&bytes[..len]),
            Err(Error::Snapshot(_))
        ));
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        Agent::from_bytes(&longer),
        Err(Error::Snapshot(SnapshotError::Checksum))
    ));
}

#[test]
fn damaged_or_mismatched_json_is_refused_with_the_reason() {
    let (_, json) = saved();
    // A changed digit in the state: the checksum catches it.
    let at = json.find("\"targets\":[").unwrap() + 12;
    let digit = json[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
    let mut damaged = json.clone().into_bytes();
    damaged[digit] = if damaged[digit] == b'7' { b'8' } else { b'7' };
    let damaged = String::from_utf8(damaged).unwrap();
    assert_eq!(
        Agent::from_json(&damaged).unwrap_err(),
        Error::Snapshot(SnapshotError::Checksum)
    );
    // Another kind of agent.
    assert!(matches!(
        UcbAgent::<Dmm<Matern>>::from_json(&json),
        Err(Error::Snapshot(SnapshotError::Kind { .. }))
    ));
    assert!(matches!(
        UcbAgent::<Amm<Rbf>>::from_json(&json),
        Err(Error::Snapshot(SnapshotError::Kind { .. }))
    ));
    // Another format version.
    let current = format!("\"version\":{FORMAT_VERSION}");
    let bumped = json.replacen(&current, &format!("\"version\":{}", FORMAT_VERSION + 1), 1);
    assert_eq!(
        Agent::from_json(&bumped).unwrap_err(),
        Error::Snapshot(SnapshotError::Version {
            found: FORMAT_VERSION + 1,
            supported: FORMAT_VERSION
        })
    );
    // Not a snapshot at all, or cut short.
    for text in ["", "{}", "[1, 2]", "null", &json[..json.len() / 2]] {
        assert!(matches!(
            Agent::from_json(text),
            Err(Error::Snapshot(SnapshotError::Malformed(_)))
        ));
    }
    // JSON where bytes are expected and vice versa.
    assert!(Agent::from_bytes(json.as_bytes()).is_err());
}
