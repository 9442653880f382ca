//! `kbandit reproduce bands`: Flynn & Reeb 2024 Figure 1, the confidence bands of the paper's
//! five bounds over [0, 1] for a function in the RKHS of a Matérn 3/2 kernel with ℓ = 0.5.
//!
//! The function is drawn as in Flynn & Reeb 2024 §7 (d = 1): f = b Σᵢ wᵢ k(·, zᵢ) with 20
//! centres and ‖f‖_H = B exactly. The observations are at uniform random points with N(0, σ²)
//! noise. The bounds use the paper's parameters for the given horizon: c = T^{−d/(2d+2ν)},
//! λ = σ²/c, η = 2/T, and the true σ and B. The bounds are CMM-UCB (the exact bound, Thm 4.5),
//! DMM-UCB, AMM-UCB, AY-GP-UCB and IGP-UCB, tightest first; the paper's nesting CMM ⊆ DMM ⊆ AMM
//! holds at every grid point.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use std::result::Result;

use super::{create_dir, derive_seed, write_file};
use crate::Assumptions;
use crate::plot::{Band, bands_plot};

/// Arguments of `kbandit reproduce bands`.
#[derive(Debug, Args)]
pub struct BandsArgs {
    /// Number of noisy observations.
    #[arg(long, default_value_t = 30)]
    observations: usize,
    /// Length-scale ℓ of the Matérn 3/2 kernel.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    lengthscale: f64,
    /// σ, B, δ of the bounds; the function has ‖f‖_H = B exactly and the noise is N(0, σ²).
    #[command(flatten)]
    assumptions: Assumptions,
    /// T used for the paper's parameter choices c = T^{−d/(2d+2ν)} and η = 2/T.
    #[arg(long, default_value_t = 1000)]
    horizon: usize,
    /// Grid points on [0, 1].
    #[arg(long, default_value_t = 201)]
    grid: usize,
    /// Seed of the function and of the observations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory for bands.csv, bands_observations.csv and bands.png / .svg.
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &BandsArgs) -> Result<(), String> {
    if args.grid < 2 || args.horizon == 0 {
        return Err("invalid arguments: --grid must be at least 2 and --horizon at least 1".into());
    }
    let fail = |e: Error| format!("invalid arguments: {e}");
    let kernel = Matern::new(1.5, args.lengthscale).map_err(fail)?;
    let config = SyntheticConfig {
        dim: 1,
        norm_bound: args.assumptions.norm_bound,
        noise_sd: args.assumptions.sigma,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, args.seed).map_err(fail)?;
    let params = args
        .assumptions
        .apply(BoundParams::paper_defaults(&kernel, 1, args.horizon));
    // Tightest first, as in Flynn & Reeb 2024 Figure 1: the CMM set lies inside DMM's, which
    // lies inside AMM's (§5.4–5.5: DMM's grid contains AMM's a = σ²/c, and CMM optimises over
    // every a > 0).
    let mut bounds: Vec<(&str, Box<dyn ConfidenceBound>)> = vec![
        ("CMM-UCB", Box::new(Cmm::new(kernel, params).map_err(fail)?)),
        ("DMM-UCB", Box::new(Dmm::new(kernel, params).map_err(fail)?)),
        ("AMM-UCB", Box::new(Amm::new(kernel, params).map_err(fail)?)),
        (
            "AY-GP-UCB",
            Box::new(Ay::new(kernel, params).map_err(fail)?),
        ),
        ("IGP-UCB", Box::new(Igp::new(kernel, params).map_err(fail)?)),
    ];

    create_dir(&args.out)?;

    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(args.seed, &[1]));
    let mut observations = Vec::with_capacity(args.observations);
    for _ in 0..args.observations {
        let x: f64 = rng.random();
        let noise: f64 = rng.sample(StandardNormal);
        let y = problem.value(&[x]).map_err(fail)? + args.assumptions.sigma * noise;
        for (_, bound) in &mut bounds {
            bound.observe(&[x], y).map_err(fail)?;
        }
        observations.push((x, y));
    }

    let xs: Vec<f64> = (0..args.grid)
        .map(|i| i as f64 / (args.grid - 1) as f64)
        .collect();
    let grid: Vec<[f64; 1]> = xs.iter().map(|&x| [x]).collect();
    let truth = grid
        .iter()
        .map(|x| problem.value(x))
        .collect::<Result<Vec<f64>, Error>>()
        .map_err(fail)?;
    let results = bounds
        .iter()
        .map(|(name, bound)| Ok((*name, bound.bounds(&grid)?)))
        .collect::<Result<Vec<_>, Error>>()
        .map_err(|e| format!("cannot evaluate the bounds: {e}"))?;

    let mut table = format!(
        "Confidence bands on [0, 1]: Matérn 3/2, ℓ = {}, ‖f‖ = B = {}, σ = {}, δ = {}, {} observations (seed {})\n\n\
         | bound | mean width | max width | f inside on the grid |\n|---|---:|---:|---|\n",
        args.lengthscale,
        args.assumptions.norm_bound,
        args.assumptions.sigma,
        args.assumptions.delta,
        args.observations,
        args.seed
    );
    for (name, b) in &results {
        let widths: Vec<f64> = b.ucb.iter().zip(&b.lcb).map(|(u, l)| u - l).collect();
        let mean = widths.iter().sum::<f64>() / widths.len() as f64;
        let max = widths.iter().copied().fold(0.0, f64::max);
        let inside = truth
            .iter()
            .enumerate()
            .all(|(i, f)| b.lcb[i] <= *f && *f <= b.ucb[i]);
        let _ = writeln!(
            table,
            "| {name} | {mean:.3} | {max:.3} | {} |",
            if inside { "yes" } else { "no" }
        );
    }
    print!("{table}");

    let mut csv = String::from("x,f");
    for (name, _) in &results {
        let tag = name.split('-').next().unwrap_or(name).to_lowercase();
        let _ = write!(csv, ",{tag}_lcb,{tag}_ucb");
    }
    csv.push('\n');
    for (i, x) in xs.iter().enumerate() {
        let _ = write!(csv, "{x},{}", truth[i]);
        for (_, b) in &results {
            let _ = write!(csv, ",{},{}", b.lcb[i], b.ucb[i]);
        }
        csv.push('\n');
    }
    write_file(&args.out.join("bands.csv"), &csv)?;
    let mut obs = String::from("x,y\n");
    for (x, y) in &observations {
        let _ = writeln!(obs, "{x},{y}");
    }
    write_file(&args.out.join("bands_observations.csv"), &obs)?;
    let bands: Vec<Band<'_>> = results
        .iter()
        .map(|(name, b)| Band {
            label: name,
            lcb: &b.lcb,
            ucb: &b.ucb,
        })
        .collect();
    let title = format!(
        "Matérn 3/2, ℓ = {}: confidence bands after {} observations",
        args.lengthscale, args.observations
    );
    bands_plot(
        &args.out.join("bands"),
        &title,
        &xs,
        &truth,
        &observations,
        &bands,
    )?;
    eprintln!(
        "bands: wrote bands.csv, bands_observations.csv, bands.png and bands.svg in {}",
        args.out.display()
    );
    Ok(())
}
