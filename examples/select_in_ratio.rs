//! DMM-UCB's `select_in` against AMM-UCB's, both with the default parameters
//! (`BoundParams::new()`: the adaptive covariance scale), Matérn 5/2 (ℓ = 0.5), over the unit
//! box after t uniform observations, d = 3 and 6: AMM and DMM rounds alternate (A/B pairs) and
//! the medians and the median of the per-pair ratios DMM/AMM are printed. Not a test: run with
//! `RAYON_NUM_THREADS=1 cargo run --release --example select_in_ratio -- [t] [pairs] [seed]`
//! (the data's seed, 1 by default; `benches/batch.rs` uses t).
use kernel_bandits::bound::AnyBound;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

fn agent(name: &str, d: usize, t: usize, seed: u64) -> UcbAgent<AnyBound<Matern>> {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let params = BoundParams::new();
    let bound = match name {
        "amm" => AnyBound::Amm(Amm::new(kernel, params).unwrap()),
        _ => AnyBound::Dmm(Dmm::new(kernel, params).unwrap()),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut agent = UcbAgent::new(bound);
    for _ in 0..t {
        let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
        let y = (4.0 * x[0]).sin() + x[1] * x[2] + 0.1 * rng.random::<f64>();
        agent.update(&x, y).unwrap();
    }
    agent
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let t: usize = args.next().map_or(1000, |s| s.parse().unwrap());
    let pairs: usize = args.next().map_or(9, |s| s.parse().unwrap());
    let seed: u64 = args.next().map_or(1, |s| s.parse().unwrap());
    for d in [3usize, 6] {
        let domain = BoxDomain::unit(d).unwrap();
        let mut amm = agent("amm", d, t, seed);
        let mut dmm = agent("dmm", d, t, seed);
        // One round each first: the second round on has the last UCB point among its starts.
        let a0 = amm.select_in(&domain).unwrap();
        let d0 = dmm.select_in(&domain).unwrap();
        let (mut ta, mut td, mut ratio) = (vec![], vec![], vec![]);
        for _ in 0..pairs {
            let start = Instant::now();
            let a = amm.select_in(&domain).unwrap();
            let a_ms = start.elapsed().as_secs_f64() * 1e3;
            let start = Instant::now();
            let b = dmm.select_in(&domain).unwrap();
            let d_ms = start.elapsed().as_secs_f64() * 1e3;
            assert_eq!(a.point, a0.point);
            assert_eq!(b.point, d0.point);
            ta.push(a_ms);
            td.push(d_ms);
            ratio.push(d_ms / a_ms);
        }
        println!(
            "t={t} seed={seed} d={d}: amm {:.1} ms, dmm {:.1} ms, dmm/amm {:.2} [{:.2}, {:.2}] ({pairs} pairs); dmm ucb {:.6} at {:?}, scale {}",
            median(&ta),
            median(&td),
            median(&ratio),
            ratio.iter().copied().fold(f64::INFINITY, f64::min),
            ratio.iter().copied().fold(0.0, f64::max),
            d0.ucb,
            d0.point,
            match dmm.bound() {
                AnyBound::Dmm(b) => b.scale_in_use(),
                _ => f64::NAN,
            }
        );
    }
}
