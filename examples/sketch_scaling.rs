//! Time per round (mean over the rounds since the previous line) and dictionary size of BKB
//! and EK-UCB as t grows, on a fixed set of 1000
//! arms in [0, 1]³ (RBF ℓ = 0.5, λ = 1, fixed β̃ = 1): `cargo run --release --example
//! sketch_scaling [-- T]`.

use std::time::Instant;

use kernel_bandits::Result;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn main() -> Result<()> {
    let horizon: usize = std::env::args()
        .nth(1)
        .map_or(Ok(10_000), |s| s.parse())
        .expect("T is a positive integer");
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let arms: Vec<[f64; 3]> = (0..1000)
        .map(|_| [rng.random(), rng.random(), rng.random()])
        .collect();
    let f = |x: &[f64; 3]| (6.0 * x[0]).sin() * x[1] + x[2];
    let params = SketchParams::new()
        .lambda(1.0)
        .beta(1.0)
        .qbar(2.0)
        .gamma(1.0);
    let kernel = Rbf::new(0.5)?;
    let mut bkb = UcbAgent::new(Bkb::new(kernel, params, 1)?);
    let mut ek = UcbAgent::new(EkUcb::new(kernel, params, 1)?);
    println!("| t | BKB ms/round | BKB m | BKB arms played | EK-UCB ms/round | EK-UCB m |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let (mut bkb_time, mut ek_time) = (0.0, 0.0);
    let mut window = 0;
    for t in 1..=horizon {
        let start = Instant::now();
        let i = bkb.select(&arms)?;
        bkb.update(&arms[i], f(&arms[i]) + 0.1 * (rng.random::<f64>() - 0.5))?;
        bkb_time += start.elapsed().as_secs_f64();
        let start = Instant::now();
        let i = ek.select(&arms)?;
        ek.update(&arms[i], f(&arms[i]) + 0.1 * (rng.random::<f64>() - 0.5))?;
        ek_time += start.elapsed().as_secs_f64();
        window += 1;
        if t.is_power_of_two() || t % 1000 == 0 {
            println!(
                "| {t} | {:.3} | {} | {} | {:.3} | {} |",
                1e3 * bkb_time / window as f64,
                bkb.bound().dictionary_size(),
                bkb.bound().posterior().distinct(),
                1e3 * ek_time / window as f64,
                ek.bound().dictionary_size()
            );
            (bkb_time, ek_time, window) = (0.0, 0.0, 0);
        }
    }
    Ok(())
}
