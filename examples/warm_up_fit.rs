//! Fitting ℓ and σ on a warm-up set, then running a UCB agent whose bound starts empty.
//!
//! The warm-up rule (`kernel_bandits::hyper`): hyperparameters fitted on the warm-up data D₀
//! are a function of D₀ only, so a bound built with them keeps its guarantee for the
//! observations *after* D₀ — provided σ is at least the true noise scale and f lies in the
//! RKHS of the fitted kernel with ‖f‖ ≤ B. `Fit::bound` therefore returns an empty bound; the
//! warm-up observations are not fed to it.
//!
//! ```text
//! cargo run --release --example warm_up_fit
//! ```

use kernel_bandits::Result;
use kernel_bandits::agent::{BanditAgent, UcbAgent};
use kernel_bandits::bound::{BoundConfig, BoundKind, BoundParams};
use kernel_bandits::hyper::{FitOptions, KernelFamily, fit_hyperparameters};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};

/// The unknown function on [0, 1]²: length-scale about 0.3, values within ±1.
fn black_box(x: &[f64]) -> f64 {
    (5.0 * x[0]).sin() * (3.0 * x[1]).cos()
}

const NOISE_SD: f64 = 0.1;
const WARM_UP: usize = 60;
const ROUNDS: usize = 60;

fn main() -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let noise = Normal::new(0.0, NOISE_SD).expect("a valid standard deviation");

    // 1. Warm-up: uniform random evaluations, D₀.
    let warm_up: Vec<[f64; 2]> = (0..WARM_UP)
        .map(|_| [rng.random::<f64>(), rng.random::<f64>()])
        .collect();
    let targets: Vec<f64> = warm_up
        .iter()
        .map(|x| black_box(x) + noise.sample(&mut rng))
        .collect();

    // 2. Fit ℓ and σ on D₀ (s² stays 1, so B keeps its meaning).
    let options = FitOptions::new().family(KernelFamily::Matern { nu: 2.5 });
    let fit = fit_hyperparameters(&options, &warm_up, &targets)?;
    println!(
        "fitted on {} points: ℓ = {:.3}, σ = {:.4} (true {NOISE_SD}), ln p = {:.2}{}",
        fit.observations(),
        fit.lengthscales()[0],
        fit.noise_sd(),
        fit.log_likelihood(),
        if fit.on_box_edge() {
            ", on a box edge"
        } else {
            ""
        }
    );

    // 3. An empty DMM-UCB bound with the fitted kernel and σ (inflated by 20 % for a margin:
    //    the fitted σ is an estimate), and a UCB agent on it.
    let params = fit.bound_params(BoundParams::new().norm_bound(3.0));
    let params = params.sigma(1.2 * fit.noise_sd());
    let config = BoundConfig::new().params(params);
    let mut agent = UcbAgent::new(fit.bound(BoundKind::Dmm, &config)?);

    // 4. Rounds after the warm-up: only these observations go into the bound.
    let mut best = f64::NEG_INFINITY;
    for _ in 0..ROUNDS {
        let arms: Vec<[f64; 2]> = (0..500)
            .map(|_| [rng.random::<f64>(), rng.random::<f64>()])
            .collect();
        let i = agent.select(&arms)?;
        let value = black_box(&arms[i]);
        best = best.max(value);
        agent.update(&arms[i], value + noise.sample(&mut rng))?;
    }
    println!("best value found in {ROUNDS} rounds: {best:.4} (maximum 1)");
    Ok(())
}
