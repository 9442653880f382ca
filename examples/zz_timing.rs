use kernel_bandits::prelude::*;
use std::time::Instant;
fn best<F: FnMut()>(mut f: F) -> String { let mut v = vec![]; for _ in 0..200 { let t = Instant::now(); f(); v.push(t.elapsed().as_secs_f64()*1e3); } v.sort_by(f64::total_cmp); format!("min {:.3} median {:.3} mean {:.3}", v[0], v[100], v.iter().sum::<f64>()/200.0) }
fn main() -> Result<()> {
    let k = Matern::new(2.5, 0.5)?;
    let mut amm = Amm::new(k, BoundParams::paper_defaults(&k, 3, 1000))?;
    let pts: Vec<[f64;3]> = (0..1100).map(|i| { let f = i as f64; [(f*0.618).fract(), (f*0.414).fract(), (f*0.732).fract()] }).collect();
    for p in &pts[..1000] { amm.observe(p, p[0].sin())?; }
    let arms = &pts[1000..1100];
    let view = arms.as_points()?;
    println!("evaluate: {} ms", best(|| { amm.evaluate(&view).unwrap(); }));
    println!("posterior evaluate: {} ms", best(|| { amm.posterior().evaluate(&view).unwrap(); }));
    println!("observe+truncate: {} ms", best(|| { amm.observe(&arms[0], 0.1).unwrap(); amm.truncate(1000); }));
    let mut out = vec![0.0; 1000 * 100];
    let rows: Vec<f64> = pts[..1000].iter().flatten().copied().collect();
    println!("kernel block: {} ms", best(|| for (j, a) in arms.iter().enumerate() { k.eval_rows(&rows, a, &mut out[j*1000..(j+1)*1000]); }));
    Ok(())
}
