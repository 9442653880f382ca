//! Profiling select_in's parts (not a test): scoring by evaluate and by argmax_ucb, the
//! gradient, and objective calls per refinement of the 5 best starts.
use kernel_bandits::bound::AnyBound;
use kernel_bandits::continuous::{RefineOptions, refine};
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

fn main() {
    let t_obs: usize = std::env::args().nth(1).map_or(1000, |s| s.parse().unwrap());
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
            for _ in 0..t_obs {
                let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
                let y = (4.0 * x[0]).sin() + x[1] * x[2] + 0.1 * rng.random::<f64>();
                agent.update(&x, y).unwrap();
            }
            let domain = BoxDomain::unit(d).unwrap();
            let starts = agent.next_starts(&domain);
            let pts = Points::from_row_major(&starts, d).unwrap();
            let t0 = Instant::now();
            let values = agent.bound().evaluate(&pts).unwrap().ucb;
            let score = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            let am = agent.bound().argmax_ucb(&pts).unwrap();
            let argmax = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            let top = agent.bound().top_ucb(&pts, 5).unwrap();
            let top_t = t0.elapsed().as_secs_f64();
            let mut order: Vec<usize> = (0..values.len()).collect();
            order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
            let t0 = Instant::now();
            let mut calls = vec![];
            let mut gains = vec![];
            for &j in &order[..5] {
                let mut n = 0;
                let mut f = |x: &[f64]| {
                    n += 1;
                    agent.bound().ucb_gradient(x)
                };
                let m = refine(
                    &domain,
                    &starts[j * d..(j + 1) * d],
                    &mut f,
                    &RefineOptions::default(),
                )
                .unwrap();
                calls.push((n, m.iterations, m.converged));
                gains.push(m.value - values[j]);
            }
            let refine_t = t0.elapsed().as_secs_f64();
            let total_calls: usize = calls.iter().map(|c| c.0).sum();
            let t0 = Instant::now();
            for i in 0..50 {
                let _ = agent
                    .bound()
                    .ucb_gradient(&starts[i * d..(i + 1) * d])
                    .unwrap();
            }
            let grad = t0.elapsed().as_secs_f64() / 50.0;
            let mut tot = vec![];
            for _ in 0..3 {
                let t0 = Instant::now();
                let _ = agent.select_in(&domain).unwrap();
                tot.push((t0.elapsed().as_secs_f64() * 1e3) as i64);
            }
            println!(
                "t={t_obs} d={d} {name}: evaluate {:.1} ms, argmax_ucb {:.1} ms (argmax {am} = top {}), top_ucb {:.1} ms {top:?}, grad {:.2} ms, refine {:.1} ms in {total_calls} calls {calls:?}, gains {gains:?}, select_in {tot:?} ms",
                score * 1e3,
                argmax * 1e3,
                order[0],
                top_t * 1e3,
                grad * 1e3,
                refine_t * 1e3
            );
        }
    }
}
