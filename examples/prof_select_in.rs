use kernel_bandits::bound::AnyBound;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

fn main() {
    for d in [3usize, 6] {
        for name in ["amm", "dmm"] {
            let kernel = Matern::new(2.5, 0.5).unwrap();
            let params = BoundParams::paper_defaults(&kernel, d, 1000);
            let b = match name {
                "amm" => AnyBound::Amm(Amm::new(kernel, params).unwrap()),
                _ => AnyBound::Dmm(Dmm::new(kernel, params).unwrap()),
            };
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut agent = UcbAgent::new(b);
            for _ in 0..1000 {
                let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
                let y = (4.0 * x[0]).sin() + x[1] * x[2] + 0.1 * rng.random::<f64>();
                agent.update(&x, y).unwrap();
            }
            let domain = BoxDomain::unit(d).unwrap();
            let starts = agent.next_starts(&domain);
            let pts = Points::from_row_major(&starts, d).unwrap();
            let t0 = Instant::now();
            let _ = agent.bound().evaluate(&pts).unwrap();
            let score = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            let mut g = 0;
            for i in 0..50 {
                let _ = agent
                    .bound()
                    .ucb_gradient(&starts[i * d..(i + 1) * d])
                    .unwrap();
                g += 1;
            }
            let grad = t0.elapsed().as_secs_f64() / g as f64;
            let mut tot = vec![];
            let mut its = vec![];
            for _ in 0..3 {
                let t0 = Instant::now();
                let c = agent.select_in(&domain).unwrap();
                tot.push(t0.elapsed().as_secs_f64());
                its.push(c.iterations);
            }
            println!(
                "d={d} {name}: score {} starts {:.1} ms, grad {:.2} ms, select_in {:?} ms, its {:?}",
                starts.len() / d,
                score * 1e3,
                grad * 1e3,
                tot.iter().map(|t| (t * 1e3) as i64).collect::<Vec<_>>(),
                its
            );
        }
    }
}
