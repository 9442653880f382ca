use kernel_bandits::prelude::*;
use rand::{RngExt, SeedableRng};
use rand::rngs::ChaCha8Rng;
use std::time::Instant;
fn main() -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let kernel = Matern::new(2.5, 0.5)?;
    let params = BoundParams::paper_defaults(&kernel, 3, 1000);
    let mut cmm = Cmm::new(kernel, params)?;
    let mut dmm = Dmm::new(kernel, params)?;
    for t in 0..1001 {
        if [1, 10, 100, 200, 500, 1000].contains(&t) {
            let arms: Vec<[f64;3]> = (0..100).map(|_| [rng.random(), rng.random(), rng.random()]).collect();
            let s = Instant::now();
            let c = cmm.bounds(&arms)?;
            let tc = s.elapsed().as_secs_f64();
            let d = dmm.bounds(&arms)?;
            let mut worst_gap: f64 = 0.0; let mut over = 0.0f64;
            for j in 0..arms.len() { over = over.max(c.ucb[j] - d.ucb[j]); }
            for j in 0..10 { let cert = cmm.certificate(&arms[j])?; worst_gap = worst_gap.max(cert.gap().unwrap_or(f64::NAN) / cert.upper.abs()); }
            println!("t={t} eval {:.1} ms; cmm-dmm max {:e}; mean ucb cmm {:.4} dmm {:.4}; worst rel gap {:e}", tc*1e3, over, c.ucb.iter().sum::<f64>()/100.0, d.ucb.iter().sum::<f64>()/100.0, worst_gap);
        }
        let x = [rng.random::<f64>(), rng.random::<f64>(), rng.random::<f64>()];
        let y = (3.0*x[0]).sin() + x[1]*x[2] + 0.1*(rng.random::<f64>()-0.5);
        cmm.observe(&x, y)?; dmm.observe(&x, y)?;
    }
    Ok(())
}
