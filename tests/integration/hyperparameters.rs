//! Hyperparameter fitting (`kernel_bandits::hyper`) against independent references: the log
//! marginal likelihood against a dense LU formula written here, its gradient against central
//! differences of that formula, recovery of known ℓ and σ from GP draws, the optimiser against
//! a dense grid search, hostile inputs, the fitted kernel against the crate's kernels, and the
//! warm-up helper.

use kernel_bandits::Error;
use kernel_bandits::bound::{BoundConfig, BoundKind, BoundParams, ConfidenceBound};
use kernel_bandits::hyper::{
    FitOptions, FittedKernel, HyperParameter, KernelFamily, LengthScales, Noise, Objective,
    OutputVariance, fit_hyperparameters, log_marginal_likelihood, log_marginal_likelihood_gradient,
};
use kernel_bandits::kernel::{Kernel, KernelExt, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use nalgebra::{DMatrix, DVector};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

// ---------------------------------------------------------------------------------------------
// The independent reference: closed-form profiles (puruspe's K_ν for general ν), a dense
// matrix, nalgebra's LU for the inverse and the determinant ("numpy style").
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Fam {
    Rbf,
    Half,
    ThreeHalves,
    FiveHalves,
    General(f64),
}

const FAMILIES: [Fam; 5] = [
    Fam::Rbf,
    Fam::Half,
    Fam::ThreeHalves,
    Fam::FiveHalves,
    Fam::General(2.0),
];

impl Fam {
    fn family(self) -> KernelFamily {
        match self {
            Fam::Rbf => KernelFamily::Rbf,
            Fam::Half => KernelFamily::Matern { nu: 0.5 },
            Fam::ThreeHalves => KernelFamily::Matern { nu: 1.5 },
            Fam::FiveHalves => KernelFamily::Matern { nu: 2.5 },
            Fam::General(nu) => KernelFamily::Matern { nu },
        }
    }

    /// κ(r̃), written out (R&W 2006 Eq. 4.14, 4.16, 4.19).
    fn profile(self, r: f64) -> f64 {
        match self {
            Fam::Rbf => (-0.5 * r * r).exp(),
            Fam::Half => (-r).exp(),
            Fam::ThreeHalves => {
                let s = 3f64.sqrt() * r;
                (1.0 + s) * (-s).exp()
            }
            Fam::FiveHalves => {
                let s = 5f64.sqrt() * r;
                (1.0 + s + s * s / 3.0) * (-s).exp()
            }
            Fam::General(nu) => {
                if r == 0.0 {
                    return 1.0;
                }
                let z = (2.0 * nu).sqrt() * r;
                2f64.powf(1.0 - nu) / puruspe::gamma(nu) * z.powf(nu) * puruspe::besselik(nu, z).1
            }
        }
    }
}

/// ℓ (one shared value or one per coordinate), s², σ.
#[derive(Debug, Clone)]
struct Hyper {
    lengthscales: Vec<f64>,
    per_dimension: bool,
    variance: f64,
    sigma: f64,
}

impl Hyper {
    fn kernel(&self, fam: Fam) -> FittedKernel {
        if self.per_dimension {
            FittedKernel::per_dimension(fam.family(), &self.lengthscales, self.variance).unwrap()
        } else {
            FittedKernel::shared(fam.family(), self.lengthscales[0], self.variance).unwrap()
        }
    }

    /// θ = (ln ℓᵢ, ln s², ln σ²).
    fn theta(&self) -> Vec<f64> {
        let mut theta: Vec<f64> = self.lengthscales.iter().map(|l| l.ln()).collect();
        theta.push(self.variance.ln());
        theta.push(2.0 * self.sigma.ln());
        theta
    }

    fn at_theta(&self, theta: &[f64]) -> Self {
        let m = self.lengthscales.len();
        Self {
            lengthscales: theta[..m].iter().map(|v| v.exp()).collect(),
            per_dimension: self.per_dimension,
            variance: theta[m].exp(),
            sigma: (0.5 * theta[m + 1]).exp(),
        }
    }
}

fn reference_kernel(fam: Fam, h: &Hyper, x: &[f64], y: &[f64]) -> f64 {
    let r_sq: f64 = x
        .iter()
        .zip(y)
        .enumerate()
        .map(|(i, (a, b))| {
            let l = if h.per_dimension {
                h.lengthscales[i]
            } else {
                h.lengthscales[0]
            };
            ((a - b) / l).powi(2)
        })
        .sum();
    h.variance * fam.profile(r_sq.sqrt())
}

/// −½ yᵀ(K + σ²I)⁻¹y − ½ ln |det(K + σ²I)| − (t/2) ln 2π by LU (inverse and determinant).
fn reference_loglik(fam: Fam, h: &Hyper, xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let t = xs.len();
    let a = DMatrix::from_fn(t, t, |i, j| {
        reference_kernel(fam, h, &xs[i], &xs[j]) + if i == j { h.sigma * h.sigma } else { 0.0 }
    });
    let lu = a.lu();
    let inverse = lu.try_inverse().expect("invertible");
    let log_det: f64 = lu.u().diagonal().iter().map(|u| u.abs().ln()).sum();
    let y = DVector::from_column_slice(ys);
    let quad = (y.transpose() * &inverse * &y)[(0, 0)];
    -0.5 * quad - 0.5 * log_det - 0.5 * t as f64 * LN_2PI
}

/// Central differences of the reference in θ = (ln ℓᵢ, ln s², ln σ²).
fn reference_gradient(fam: Fam, h: &Hyper, xs: &[Vec<f64>], ys: &[f64], step: f64) -> Vec<f64> {
    let theta = h.theta();
    (0..theta.len())
        .map(|k| {
            let (mut up, mut down) = (theta.clone(), theta.clone());
            up[k] += step;
            down[k] -= step;
            let fu = reference_loglik(fam, &h.at_theta(&up), xs, ys);
            let fd = reference_loglik(fam, &h.at_theta(&down), xs, ys);
            (fu - fd) / (2.0 * step)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Data sets: random and structured.
// ---------------------------------------------------------------------------------------------

struct Case {
    name: &'static str,
    xs: Vec<Vec<f64>>,
    ys: Vec<f64>,
    hyper: Hyper,
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn uniform_points(rng: &mut ChaCha8Rng, n: usize, d: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
        .collect()
}

fn normals(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.sample(StandardNormal)).collect()
}

fn shared(l: f64, variance: f64, sigma: f64) -> Hyper {
    Hyper {
        lengthscales: vec![l],
        per_dimension: false,
        variance,
        sigma,
    }
}

fn ard(ls: &[f64], variance: f64, sigma: f64) -> Hyper {
    Hyper {
        lengthscales: ls.to_vec(),
        per_dimension: true,
        variance,
        sigma,
    }
}

fn cases() -> Vec<Case> {
    let mut r = rng(11);
    let mut out = Vec::new();
    let xs = uniform_points(&mut r, 25, 3);
    let ys = normals(&mut r, 25);
    out.push(Case {
        name: "random shared",
        xs: xs.clone(),
        ys: ys.clone(),
        hyper: shared(0.4, 1.3, 0.2),
    });
    out.push(Case {
        name: "random per dimension",
        xs,
        ys,
        hyper: ard(&[0.3, 0.9, 2.0], 0.8, 0.15),
    });

    // Exact duplicates: 6 distinct points, each three times, with different targets.
    let base = uniform_points(&mut r, 6, 2);
    let xs: Vec<Vec<f64>> = (0..18).map(|i| base[i % 6].clone()).collect();
    out.push(Case {
        name: "exact duplicates",
        ys: normals(&mut r, 18),
        xs,
        hyper: ard(&[0.5, 0.25], 1.0, 0.1),
    });

    // Pairs 3 ulps apart in every coordinate.
    let base = uniform_points(&mut r, 8, 2);
    let mut xs = Vec::new();
    for x in &base {
        xs.push(x.clone());
        xs.push(
            x.iter()
                .map(|v| f64::from_bits(v.to_bits() + 3))
                .collect::<Vec<f64>>(),
        );
    }
    out.push(Case {
        name: "3 ulps apart",
        ys: normals(&mut r, 16),
        xs,
        hyper: shared(0.3, 1.0, 0.1),
    });

    // A cluster of width 10⁻⁷ around (0.5, 0.5) and spread points.
    let mut xs = uniform_points(&mut r, 8, 2);
    for _ in 0..10 {
        xs.push(vec![
            0.5 + 1e-7 * r.random::<f64>(),
            0.5 + 1e-7 * r.random::<f64>(),
        ]);
    }
    out.push(Case {
        name: "1e-7 cluster",
        ys: normals(&mut r, 18),
        xs,
        hyper: ard(&[0.2, 0.6], 1.0, 0.05),
    });

    // Per-dimension length-scales six orders of magnitude apart, inputs on those scales.
    let xs: Vec<Vec<f64>> = uniform_points(&mut r, 20, 3)
        .into_iter()
        .map(|x| vec![1e-2 * x[0], x[1], 1e4 * x[2]])
        .collect();
    out.push(Case {
        name: "scales 1e-2 … 1e4",
        ys: normals(&mut r, 20),
        xs,
        hyper: ard(&[5e-3, 0.7, 3e3], 1.0, 0.1),
    });

    // Targets of scale 10⁻⁶ and 10⁶ (with σ and s² on the targets' scale, and on the unit
    // scale, which makes the quadratic form dominate or vanish).
    let xs = uniform_points(&mut r, 20, 2);
    let ys = normals(&mut r, 20);
    for (name, scale) in [("y·1e-6", 1e-6), ("y·1e6", 1e6)] {
        let scaled: Vec<f64> = ys.iter().map(|y| y * scale).collect();
        out.push(Case {
            name,
            xs: xs.clone(),
            ys: scaled.clone(),
            hyper: shared(0.35, scale * scale, 0.1 * scale),
        });
        out.push(Case {
            name,
            xs: xs.clone(),
            ys: scaled,
            hyper: shared(0.35, 1.0, 0.1),
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// (a) value and (b) gradient.
// ---------------------------------------------------------------------------------------------

#[test]
fn log_likelihood_matches_dense_lu_reference() {
    for case in cases() {
        for fam in FAMILIES {
            let kernel = case.hyper.kernel(fam);
            let value = log_marginal_likelihood(&kernel, case.hyper.sigma, &case.xs, &case.ys)
                .unwrap_or_else(|e| panic!("{} {fam:?}: {e}", case.name));
            let reference = reference_loglik(fam, &case.hyper, &case.xs, &case.ys);
            // LU and Cholesky agree to the conditioning of K + σ²I times ε (≤ 10⁵ here).
            let tol = 1e-10 * reference.abs().max(1.0);
            assert!(
                (value - reference).abs() <= tol,
                "{} {fam:?}: {value} vs reference {reference}",
                case.name
            );
            let with_gradient =
                log_marginal_likelihood_gradient(&kernel, case.hyper.sigma, &case.xs, &case.ys)
                    .unwrap();
            assert_eq!(with_gradient.value, value);
        }
    }
}

#[test]
fn gradient_matches_central_differences_of_the_reference() {
    for case in cases() {
        for fam in FAMILIES {
            let kernel = case.hyper.kernel(fam);
            let g = log_marginal_likelihood_gradient(&kernel, case.hyper.sigma, &case.xs, &case.ys)
                .unwrap();
            let mut analytic = g.log_lengthscales.clone();
            analytic.push(g.log_variance);
            analytic.push(g.log_noise_variance);
            let step = 1e-4;
            let numeric = reference_gradient(fam, &case.hyper, &case.xs, &case.ys, step);
            // Central differences: truncation O(step²) of the third derivative, rounding
            // O(ε |ln p| / step).
            for (k, (a, n)) in analytic.iter().zip(&numeric).enumerate() {
                let tol = 1e-6 * (1.0 + a.abs()) + 1e-15 * g.value.abs() / step;
                assert!(
                    (a - n).abs() <= tol,
                    "{} {fam:?} parameter {k}: analytic {a} vs numeric {n}",
                    case.name
                );
            }
        }
    }
}

/// The gradient of a shared ℓ is the sum of the per-dimension gradients at equal ℓᵢ.
#[test]
fn shared_gradient_is_the_sum_of_per_dimension_gradients() {
    let mut r = rng(5);
    let xs = uniform_points(&mut r, 30, 3);
    let ys = normals(&mut r, 30);
    for fam in FAMILIES {
        let s = log_marginal_likelihood_gradient(
            &FittedKernel::shared(fam.family(), 0.4, 1.0).unwrap(),
            0.1,
            &xs,
            &ys,
        )
        .unwrap();
        let p = log_marginal_likelihood_gradient(
            &FittedKernel::per_dimension(fam.family(), &[0.4; 3], 1.0).unwrap(),
            0.1,
            &xs,
            &ys,
        )
        .unwrap();
        let sum: f64 = p.log_lengthscales.iter().sum();
        assert!((s.log_lengthscales[0] - sum).abs() <= 1e-10 * sum.abs().max(1.0));
        assert!((s.value - p.value).abs() <= 1e-12 * s.value.abs());
    }
}

// ---------------------------------------------------------------------------------------------
// (c) recovery of known hyperparameters from GP draws.
// ---------------------------------------------------------------------------------------------

/// n points uniform in [0, 1]^d and y = f + σε with f drawn from the GP prior of `truth`
/// (s² = 1) by a Cholesky factor of the prior covariance at the points. The 10⁻¹⁰ added to the
/// diagonal is the test's sampling device (it changes f by ~10⁻⁵ in RMS), not the code's.
fn gp_draw(fam: Fam, truth: &Hyper, n: usize, d: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut r = rng(seed);
    let xs = uniform_points(&mut r, n, d);
    let prior = DMatrix::from_fn(n, n, |i, j| {
        reference_kernel(fam, truth, &xs[i], &xs[j]) + if i == j { 1e-10 } else { 0.0 }
    });
    let l = prior.cholesky().expect("prior covariance").l();
    let f = l * DVector::from_vec(normals(&mut r, n));
    let noise = normals(&mut r, n);
    let ys = f
        .iter()
        .zip(&noise)
        .map(|(f, e)| f + truth.sigma * e)
        .collect();
    (xs, ys)
}

fn relative_error(estimate: f64, truth: f64) -> f64 {
    (estimate / truth - 1.0).abs()
}

/// Shared ℓ and σ, s² fixed at the true 1.
///
/// Tolerances: σ within 12 %, ℓ within 25 %. At n = 300–400 the maximum-likelihood σ has a
/// relative standard error of about 1/√(2n) ≈ 4 %, inflated a little by the confounding with
/// f, so 12 % is about 3 standard errors; the relative spread of ℓ (fixed s², a few
/// length-scales across the unit cube) is of order 5–8 %, and 25 % is 3 or more of those.
/// Observed over these nine draws: ℓ within 7.7 %, σ within 6.6 %. Three seeds each.
#[test]
fn recovers_shared_lengthscale_and_noise_from_gp_draws() {
    let configs = [
        (Fam::FiveHalves, 0.5, 2, 300),
        (Fam::Rbf, 0.3, 2, 300),
        (Fam::FiveHalves, 0.5, 3, 400),
    ];
    for (fam, l, d, n) in configs {
        for seed in [1, 2, 3] {
            let truth = shared(l, 1.0, 0.1);
            let (xs, ys) = gp_draw(fam, &truth, n, d, seed);
            let options = FitOptions::new()
                .objective(Objective::MaximumLikelihood)
                .family(fam.family())
                .seed(seed);
            let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
            let (l_hat, sigma_hat) = (fit.lengthscales()[0], fit.noise_sd());
            assert!(
                relative_error(l_hat, l) <= 0.25 && relative_error(sigma_hat, 0.1) <= 0.12,
                "{fam:?} d = {d} seed {seed}: ℓ̂ = {l_hat} (ℓ = {l}), σ̂ = {sigma_hat} (σ = 0.1)"
            );
            assert_eq!(fit.variance(), 1.0);
            assert_eq!(fit.observations(), n);
            assert!(!fit.on_box_edge(), "{:?}", (fit.at_lower(), fit.at_upper()));
            // The reported likelihood is the function's value at the fitted parameters.
            let value = log_marginal_likelihood(fit.kernel(), fit.noise_sd(), &xs, &ys).unwrap();
            assert_eq!(value, fit.log_likelihood());
            // ... and at least that at the truth (the truth is in the box).
            let at_truth = log_marginal_likelihood(&truth.kernel(fam), 0.1, &xs, &ys).unwrap();
            assert!(fit.log_likelihood() >= at_truth - 1e-6);
        }
    }
}

/// One length-scale per coordinate on an anisotropic draw (ℓ = (0.15, 0.6), Matérn 5/2,
/// n = 400): each within 25 % (the longer one is 1.7 length-scales across the cube, the least
/// determined quantity here; observed 3.7 % and 8.6 %), σ within 12 % (observed 1.7 %).
#[test]
fn recovers_per_dimension_lengthscales_from_an_anisotropic_draw() {
    for seed in [4, 5] {
        let truth = ard(&[0.15, 0.6], 1.0, 0.1);
        let (xs, ys) = gp_draw(Fam::FiveHalves, &truth, 400, 2, seed);
        let options = FitOptions::new()
            .lengthscales(LengthScales::PerDimension)
            .seed(seed);
        let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
        let ls = fit.lengthscales();
        assert_eq!(ls.len(), 2);
        assert!(
            relative_error(ls[0], 0.15) <= 0.25
                && relative_error(ls[1], 0.6) <= 0.25
                && relative_error(fit.noise_sd(), 0.1) <= 0.12,
            "seed {seed}: ℓ̂ = {ls:?}, σ̂ = {}",
            fit.noise_sd()
        );
        assert!(fit.kernel().is_per_dimension());
    }
}

// ---------------------------------------------------------------------------------------------
// (d) the optimiser finds the optimum: against a dense grid of the reference.
// ---------------------------------------------------------------------------------------------

fn log_grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (lo.ln() + (hi / lo).ln() * i as f64 / (n - 1) as f64).exp())
        .collect()
}

#[test]
fn fit_is_at_least_a_dense_grid_search_over_lengthscale() {
    let mut r = rng(21);
    for (fam, d) in [(Fam::FiveHalves, 1), (Fam::Rbf, 2), (Fam::Half, 2)] {
        let xs = uniform_points(&mut r, 30, d);
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| (5.0 * x[0]).sin() + 0.1 * r.sample::<f64, _>(StandardNormal))
            .collect();
        let (lo, hi) = (0.02, 5.0);
        let options = FitOptions::new()
            .objective(Objective::MaximumLikelihood)
            .family(fam.family())
            .noise(Noise::Fixed(0.1))
            .lengthscale_bounds(lo, hi);
        let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
        let grid_best = log_grid(lo, hi, 2000)
            .into_iter()
            .map(|l| reference_loglik(fam, &shared(l, 1.0, 0.1), &xs, &ys))
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(
            fit.log_likelihood() >= grid_best - 1e-9 * grid_best.abs(),
            "{fam:?}: fit {} < grid {grid_best}",
            fit.log_likelihood()
        );
        assert_eq!(fit.noise_sd(), 0.1);
    }
}

#[test]
fn fit_is_at_least_a_dense_grid_search_over_lengthscale_and_noise() {
    let mut r = rng(22);
    for (fam, d) in [(Fam::ThreeHalves, 1), (Fam::General(2.0), 2), (Fam::Rbf, 2)] {
        let xs = uniform_points(&mut r, 25, d);
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| (4.0 * x[0]).cos() * 0.8 + 0.2 * r.sample::<f64, _>(StandardNormal))
            .collect();
        let options = FitOptions::new()
            .objective(Objective::MaximumLikelihood)
            .family(fam.family())
            .lengthscale_bounds(0.03, 3.0)
            .noise_bounds(0.01, 1.0);
        let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
        let mut grid_best = f64::NEG_INFINITY;
        for l in log_grid(0.03, 3.0, 150) {
            for sigma in log_grid(0.01, 1.0, 150) {
                grid_best = grid_best.max(reference_loglik(fam, &shared(l, 1.0, sigma), &xs, &ys));
            }
        }
        assert!(
            fit.log_likelihood() >= grid_best - 1e-9 * grid_best.abs(),
            "{fam:?}: fit {} < grid {grid_best}",
            fit.log_likelihood()
        );
    }
}

/// Fitting s² too: at the optimum its gradient vanishes, i.e. (for fixed ℓ, σ → 0) … here we
/// check the optimum against the grid in (ℓ, s²) with σ fixed, and that the edge report names
/// a parameter pushed onto its box.
#[test]
fn fitted_variance_and_box_edges() {
    let mut r = rng(23);
    let xs = uniform_points(&mut r, 25, 1);
    let ys: Vec<f64> = xs.iter().map(|x| 3.0 * (6.0 * x[0]).sin()).collect();
    let options = FitOptions::new()
        .objective(Objective::MaximumLikelihood)
        .variance(OutputVariance::Fitted)
        .noise(Noise::Fixed(0.05))
        .lengthscale_bounds(0.05, 2.0)
        .variance_bounds(0.1, 100.0);
    let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
    let mut grid_best = f64::NEG_INFINITY;
    for l in log_grid(0.05, 2.0, 150) {
        for s2 in log_grid(0.1, 100.0, 150) {
            grid_best = grid_best.max(reference_loglik(
                Fam::FiveHalves,
                &shared(l, s2, 0.05),
                &xs,
                &ys,
            ));
        }
    }
    assert!(fit.log_likelihood() >= grid_best - 1e-9 * grid_best.abs());
    assert!(
        fit.variance() > 1.0,
        "targets of amplitude 3: s² = {}",
        fit.variance()
    );

    // A box for s² far below the targets' scale: s² ends on its upper edge.
    let capped = options.variance_bounds(0.01, 0.02);
    let fit = fit_hyperparameters(&capped, &xs, &ys).unwrap();
    assert_eq!(fit.at_upper(), &[HyperParameter::OutputVariance]);
    assert!(fit.on_box_edge());
}

#[test]
fn same_seed_same_fit_and_default_noise_floor() {
    let mut r = rng(24);
    let xs = uniform_points(&mut r, 20, 2);
    // Noise-free smooth targets: σ runs to its floor 10⁻⁴·s_y, reported as a box edge.
    let ys: Vec<f64> = xs
        .iter()
        .map(|x| (2.0 * x[0]).sin() + x[1] * x[1])
        .collect();
    let options = FitOptions::new()
        .objective(Objective::MaximumLikelihood)
        .family(KernelFamily::Rbf)
        .seed(9);
    let a = fit_hyperparameters(&options, &xs, &ys).unwrap();
    let b = fit_hyperparameters(&options, &xs, &ys).unwrap();
    assert_eq!(a, b);
    let rms = (ys.iter().map(|y| y * y).sum::<f64>() / 20.0).sqrt();
    assert!(a.noise_sd() >= 1e-4 * rms * (1.0 - 1e-12));
    if a.noise_sd() < 2e-4 * rms {
        assert!(a.at_lower().contains(&HyperParameter::NoiseSd));
    }
    assert!(a.evaluations() > 12);
}

// ---------------------------------------------------------------------------------------------
// (e) hostile inputs.
// ---------------------------------------------------------------------------------------------

#[test]
fn hostile_inputs_give_typed_errors() {
    let options = FitOptions::new();
    let xs = vec![vec![0.1, 0.2], vec![0.5, 0.9], vec![0.7, 0.3]];
    let ys = vec![0.1, -0.3, 0.2];
    let kernel = FittedKernel::shared(KernelFamily::Rbf, 0.5, 1.0).unwrap();

    let mut nan = xs.clone();
    nan[1][0] = f64::NAN;
    assert!(matches!(
        fit_hyperparameters(&options, &nan, &ys),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        log_marginal_likelihood(&kernel, 0.1, &nan, &ys),
        Err(Error::NonFinite { .. })
    ));
    let mut inf = ys.clone();
    inf[2] = f64::INFINITY;
    assert!(matches!(
        fit_hyperparameters(&options, &xs, &inf),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        log_marginal_likelihood_gradient(&kernel, 0.1, &xs, &inf),
        Err(Error::NonFinite { .. })
    ));
    let empty: Vec<[f64; 2]> = Vec::new();
    assert!(matches!(
        fit_hyperparameters(&options, &empty, &[]),
        Err(Error::InvalidParameter {
            name: "observations",
            ..
        })
    ));
    assert_eq!(log_marginal_likelihood(&kernel, 0.1, &empty, &[]), Ok(0.0));
    assert!(matches!(
        fit_hyperparameters(&options, &xs[..1], &ys[..1]),
        Err(Error::InvalidParameter {
            name: "observations",
            ..
        })
    ));
    assert!(matches!(
        fit_hyperparameters(&options, &xs, &ys[..2]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        log_marginal_likelihood(&kernel, 0.1, &xs, &[0.0; 4]),
        Err(Error::LengthMismatch { .. })
    ));
    let ragged = vec![vec![0.1, 0.2], vec![0.5]];
    assert!(matches!(
        fit_hyperparameters(&options, &ragged, &ys[..2]),
        Err(Error::RaggedPoints { .. })
    ));
    let ard = FittedKernel::per_dimension(KernelFamily::Rbf, &[0.5; 3], 1.0).unwrap();
    assert!(matches!(
        log_marginal_likelihood(&ard, 0.1, &xs, &ys),
        Err(Error::DimensionMismatch {
            expected: 3,
            got: 2
        })
    ));
    for sigma in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-160] {
        assert!(
            matches!(
                log_marginal_likelihood(&kernel, sigma, &xs, &ys),
                Err(Error::InvalidParameter { .. })
            ),
            "σ = {sigma}"
        );
    }
    // Huge targets: the quadratic form overflows.
    assert!(matches!(
        log_marginal_likelihood(&kernel, 0.1, &xs, &[1e200, -1e200, 1e200]),
        Err(Error::NonFinite { .. })
    ));
    // Exact duplicates and a σ far below the conditioning: not positive definite, not jitter.
    let dup = vec![vec![0.3], vec![0.3], vec![0.3]];
    assert!(matches!(
        log_marginal_likelihood(&kernel, 1e-150, &dup, &ys),
        Err(Error::NotPositiveDefinite { .. })
    ));
    // Identical inputs: no default box for ℓ.
    assert!(matches!(
        fit_hyperparameters(&options, &dup, &ys),
        Err(Error::InvalidParameter {
            name: "lengthscale_bounds",
            ..
        })
    ));
    assert!(fit_hyperparameters(&options.lengthscale_bounds(0.1, 1.0), &dup, &ys).is_ok());
    // All-zero targets with a fitted s² and no box for it: under maximum likelihood the default
    // box [10⁻² s_y², 10² s_y²] is empty. Under MAP (the default) targets that are all equal
    // are standardised by 1 (as BoTorch's `Standardize`), centred on their value, and fitted.
    let ml = options.objective(Objective::MaximumLikelihood);
    assert!(matches!(
        fit_hyperparameters(&ml.variance(OutputVariance::Fitted), &xs, &[0.0; 3]),
        Err(Error::InvalidParameter {
            name: "variance_bounds",
            ..
        })
    ));
    for fitted in [OutputVariance::Fixed(1.0), OutputVariance::Fitted] {
        let fit = fit_hyperparameters(&options.variance(fitted), &xs, &[2.5; 3]).unwrap();
        assert_eq!(fit.mean(), 2.5);
        assert!(fit.noise_sd().is_finite() && fit.log_likelihood().is_finite());
    }

    let invalid = [
        options.starts(0),
        options.refinements(0),
        options.family(KernelFamily::Matern { nu: f64::NAN }),
        options.family(KernelFamily::Matern { nu: 101.0 }),
        options.noise(Noise::Fixed(-0.1)),
        options.noise(Noise::Fixed(1e-170)),
        options.variance(OutputVariance::Fixed(0.0)),
        options.lengthscale_bounds(2.0, 1.0),
        options.lengthscale_bounds(f64::NAN, 1.0),
        options.noise_bounds(0.0, 1.0),
        options.variance_bounds(1.0, f64::INFINITY),
        options.refine_options(kernel_bandits::continuous::RefineOptions {
            tolerance: 0.0,
            ..Default::default()
        }),
    ];
    for bad in invalid {
        assert!(
            matches!(bad.check(), Err(Error::InvalidParameter { .. })),
            "{bad:?}"
        );
        assert!(
            matches!(
                fit_hyperparameters(&bad, &xs, &ys),
                Err(Error::InvalidParameter { .. })
            ),
            "{bad:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// (f) the fitted kernel.
// ---------------------------------------------------------------------------------------------

#[test]
fn fitted_kernel_matches_the_crates_kernels() {
    let mut r = rng(31);
    let mut xs = uniform_points(&mut r, 12, 3);
    xs.push(xs[0].clone());
    xs.push(
        xs[1]
            .iter()
            .map(|v| f64::from_bits(v.to_bits() + 3))
            .collect(),
    );
    let points = xs.as_points().unwrap();
    for nu in [0.5, 1.5, 2.5, 2.0, 0.7] {
        let fitted = FittedKernel::shared(KernelFamily::Matern { nu }, 0.4, 2.5).unwrap();
        let scaled = Matern::new(nu, 0.4).unwrap().scaled(2.5).unwrap();
        assert_eq!(fitted.gram(&points).unwrap(), scaled.gram(&points).unwrap());
        assert_eq!(fitted.smoothness(), Some(nu));
        // Per dimension with equal ℓᵢ: the same kernel up to rounding of r̃.
        let ard = FittedKernel::per_dimension(KernelFamily::Matern { nu }, &[0.4; 3], 2.5).unwrap();
        let (a, b) = (ard.gram(&points).unwrap(), scaled.gram(&points).unwrap());
        assert!((a - b).amax() <= 1e-14, "ν = {nu}");
    }
    let fitted = FittedKernel::shared(KernelFamily::Rbf, 0.3, 1.0).unwrap();
    let plain = Rbf::new(0.3).unwrap();
    assert_eq!(fitted.gram(&points).unwrap(), plain.gram(&points).unwrap());
    assert_eq!(fitted.smoothness(), None);
    assert_eq!(fitted.eval_diag(&xs[0]), 1.0);

    // Per dimension: against the written-out reference, with very different ℓᵢ.
    let h = ard(&[0.05, 1.0, 30.0], 1.7, 0.1);
    for fam in FAMILIES {
        let k = h.kernel(fam);
        for x in &xs {
            for y in &xs {
                let reference = reference_kernel(fam, &h, x, y);
                assert!((k.eval(x, y) - reference).abs() <= 1e-13, "{fam:?}");
            }
        }
    }
}

#[test]
fn fitted_kernel_gradient_matches_finite_differences() {
    let mut r = rng(32);
    let xs = uniform_points(&mut r, 6, 3);
    for fam in FAMILIES {
        for h in [shared(0.6, 1.3, 0.1), ard(&[0.3, 1.5, 0.8], 0.7, 0.1)] {
            let k = h.kernel(fam);
            for x in &xs {
                for y in &xs {
                    if x == y {
                        let mut g = [1.0; 3];
                        k.gradient(x, y, &mut g).unwrap();
                        assert_eq!(g, [0.0; 3]);
                        continue;
                    }
                    let mut g = [0.0; 3];
                    k.gradient(x, y, &mut g).unwrap();
                    for i in 0..3 {
                        let step = 1e-6;
                        let (mut up, mut down) = (x.clone(), x.clone());
                        up[i] += step;
                        down[i] -= step;
                        let numeric = (reference_kernel(fam, &h, &up, y)
                            - reference_kernel(fam, &h, &down, y))
                            / (2.0 * step);
                        assert!(
                            (g[i] - numeric).abs() <= 1e-6 * (1.0 + numeric.abs()),
                            "{fam:?} {h:?} coordinate {i}: {} vs {numeric}",
                            g[i]
                        );
                    }
                }
            }
            let mut diag = [1.0; 3];
            k.diag_gradient(&xs[0], &mut diag).unwrap();
            assert_eq!(diag, [0.0; 3]);
        }
    }
}

#[cfg(feature = "serde")]
#[test]
fn fitted_kernel_snapshot_round_trip_and_validation() {
    use kernel_bandits::snapshot::Snapshot;
    for kernel in [
        FittedKernel::shared(KernelFamily::Matern { nu: 2.0 }, 0.4, 1.5).unwrap(),
        FittedKernel::per_dimension(KernelFamily::Rbf, &[0.1, 2.0], 1.0).unwrap(),
    ] {
        let json = kernel.to_json().unwrap();
        assert_eq!(FittedKernel::from_json(&json).unwrap(), kernel);
        let bytes = kernel.to_bytes().unwrap();
        assert_eq!(FittedKernel::from_bytes(&bytes).unwrap(), kernel);
    }
    // A state with a negative length-scale (checksum recomputed) is refused on restore.
    let kernel = FittedKernel::per_dimension(KernelFamily::Rbf, &[0.1, 2.0], 1.0).unwrap();
    assert!(matches!(
        edited(&kernel, &["lengthscales"], serde_json::json!([0.1, -2.0])),
        Err(Error::Snapshot(_))
    ));
}

/// `value` saved as JSON with the field at `path` of its state replaced by `new`, re-saved with
/// a valid checksum (so that only `restore` can refuse it), and restored.
#[cfg(feature = "serde")]
fn edited<T: kernel_bandits::snapshot::Snapshot>(
    value: &T,
    path: &[&str],
    new: serde_json::Value,
) -> Result<T, Error> {
    let mut json: serde_json::Value = serde_json::from_str(&value.to_json().unwrap()).unwrap();
    let mut slot = &mut json["state"];
    for key in path {
        slot = &mut slot[*key];
    }
    *slot = new;
    let state: T = serde_json::from_value(json["state"].clone()).unwrap();
    T::from_json(&state.to_json().unwrap())
}

/// A fit's snapshot restores it exactly, and the bound it gives observes and answers as the
/// original's does; states a fit could not have (checksum recomputed) are refused.
#[cfg(feature = "serde")]
#[test]
fn fit_snapshot_round_trip_and_validation() {
    use kernel_bandits::SnapshotError;
    use kernel_bandits::hyper::Fit;
    use kernel_bandits::snapshot::Snapshot;
    let mut r = rng(31);
    let xs = uniform_points(&mut r, 30, 2);
    let ys: Vec<f64> = xs.iter().map(|x| (4.0 * x[0]).sin() + x[1]).collect();
    let shared = fit_hyperparameters(&FitOptions::new(), &xs, &ys).unwrap();
    // Per dimension, in a box that excludes the likelihood's maximum: both edge lists in use.
    let edged = fit_hyperparameters(
        &FitOptions::new()
            .lengthscales(LengthScales::PerDimension)
            .lengthscale_bounds(2.0, 5.0)
            .noise_bounds(0.3, 0.5),
        &xs,
        &ys,
    )
    .unwrap();
    assert!(!edged.at_lower().is_empty(), "{edged:?}");
    for fit in [&shared, &edged] {
        let from_json = Fit::from_json(&fit.to_json().unwrap()).unwrap();
        let from_bytes = Fit::from_bytes(&fit.to_bytes().unwrap()).unwrap();
        assert_eq!(&from_json, fit);
        assert_eq!(&from_bytes, fit);
        // The same bound, bit for bit, after the same observations.
        let config = BoundConfig::new().params(BoundParams::new().norm_bound(2.0));
        let mut a = fit.bound(BoundKind::Dmm, &config).unwrap();
        let mut b = from_bytes.bound(BoundKind::Dmm, &config).unwrap();
        let later = uniform_points(&mut r, 12, 2);
        let targets: Vec<f64> = later.iter().map(|x| x[0] - x[1]).collect();
        let later_points = later.as_points().unwrap();
        a.observe_many(&later_points, &targets).unwrap();
        b.observe_many(&later_points, &targets).unwrap();
        let probe = uniform_points(&mut r, 7, 2);
        let (ua, ub) = (a.bounds(&probe).unwrap(), b.bounds(&probe).unwrap());
        assert_eq!(format!("{ua:?}"), format!("{ub:?}"));
    }
    // Edited states, each written with a valid checksum, so that only `restore` can refuse them.
    let edit = edited::<Fit>;
    let refused = |result: Result<Fit, Error>| {
        assert!(
            matches!(result, Err(Error::Snapshot(SnapshotError::Inconsistent(_)))),
            "{result:?}"
        );
    };
    refused(edit(&shared, &["noise_sd"], serde_json::json!(-0.1)));
    refused(edit(&shared, &["noise_sd"], serde_json::json!(0.0)));
    refused(edit(&shared, &["observations"], serde_json::json!(1)));
    refused(edit(&shared, &["evaluations"], serde_json::json!(0)));
    refused(edit(
        &shared,
        &["kernel", "lengthscales"],
        serde_json::json!([-0.5]),
    ));
    // A shared kernel has one length-scale, index 0.
    refused(edit(
        &shared,
        &["at_lower"],
        serde_json::json!([{"Lengthscale": 1}]),
    ));
    refused(edit(
        &shared,
        &["at_upper"],
        serde_json::json!(["NoiseSd", "NoiseSd"]),
    ));
    // On both edges at once.
    refused(
        edit(
            &shared,
            &["at_lower"],
            serde_json::json!([{"Lengthscale": 0}]),
        )
        .and_then(|f| edit(&f, &["at_upper"], serde_json::json!([{"Lengthscale": 0}]))),
    );
    // The checks accept what a fit can produce.
    let accepted = edit(
        &shared,
        &["at_lower"],
        serde_json::json!([{"Lengthscale": 0}]),
    );
    assert_eq!(
        accepted.unwrap().at_lower(),
        [HyperParameter::Lengthscale(0)]
    );
}

// ---------------------------------------------------------------------------------------------
// (g) the warm-up helper.
// ---------------------------------------------------------------------------------------------

#[test]
fn warm_up_helper_returns_an_empty_bound_with_the_fitted_sigma() {
    let truth = shared(0.3, 1.0, 0.2);
    let (xs, ys) = gp_draw(Fam::FiveHalves, &truth, 60, 2, 41);
    let fit = fit_hyperparameters(&FitOptions::new(), &xs, &ys).unwrap();
    let sigma = fit.noise_sd();
    assert!(sigma != 0.1);
    let params = BoundParams::new().sigma(0.1).norm_bound(2.0);
    assert_eq!(fit.bound_params(params), params.sigma(sigma));
    let config = BoundConfig::paper_defaults(fit.kernel(), 2, 200).params(
        BoundParams::paper_defaults(fit.kernel(), 2, 200)
            .sigma(0.1)
            .norm_bound(2.0),
    );
    let later = [[0.2, 0.4], [0.7, 0.1], [0.5, 0.5]];
    let queries = [[0.3, 0.3], [0.9, 0.8]];
    for kind in [
        BoundKind::Ay,
        BoundKind::Amm,
        BoundKind::Dmm,
        BoundKind::Igp,
    ] {
        let mut bound = fit.bound(kind, &config).unwrap();
        assert_eq!(bound.len(), 0, "{kind}");
        assert_eq!(bound.name(), kind.name());
        // The same bound built by hand with the fitted σ and kernel gives the same bits; with
        // the configured σ = 0.1 it differs.
        let by_hand = kind.build(
            fit.kernel().clone(),
            &config.params(fit.bound_params(config.params)),
        );
        let mut by_hand = by_hand.unwrap();
        let mut unfitted = kind.build(fit.kernel().clone(), &config).unwrap();
        for (x, y) in later.iter().zip([0.1, -0.2, 0.3]) {
            bound.observe(x, y).unwrap();
            by_hand.observe(x, y).unwrap();
            unfitted.observe(x, y).unwrap();
        }
        let q = queries.as_points().unwrap();
        let (a, b, c) = (
            bound.evaluate(&q).unwrap(),
            by_hand.evaluate(&q).unwrap(),
            unfitted.evaluate(&q).unwrap(),
        );
        assert_eq!(a, b, "{kind}");
        assert_ne!(a.ucb, c.ucb, "{kind}");
    }
}

/// Structured warm-up data (exact duplicates, a 10⁻⁷ cluster, spread points) rescaled: the
/// default boxes are relative to the data (D and s_y), so fitting c_y·y at c_x·x must give
/// c_x·ℓ, c_y·σ and c_y²·s² — up to the refinement's tolerance, as PANOC works in the unit
/// cube of the box and sees the same problem up to rounding and an additive constant.
#[test]
fn fit_is_equivariant_under_rescaling_of_inputs_and_targets() {
    let mut r = rng(51);
    let mut xs = uniform_points(&mut r, 25, 2);
    for i in 0..5 {
        xs.push(xs[i].clone());
    }
    for _ in 0..6 {
        xs.push(vec![
            0.3 + 1e-7 * r.random::<f64>(),
            0.7 + 1e-7 * r.random::<f64>(),
        ]);
    }
    let ys: Vec<f64> = xs
        .iter()
        .map(|x| (3.0 * x[0]).sin() * x[1] + 0.1 * r.sample::<f64, _>(StandardNormal))
        .collect();
    let options = FitOptions::new()
        .family(KernelFamily::Matern { nu: 1.5 })
        .lengthscales(LengthScales::PerDimension)
        .variance(OutputVariance::Fitted);
    let base = fit_hyperparameters(&options, &xs, &ys).unwrap();
    for (cx, cy) in [(1.0, 1e-6), (1.0, 1e6), (1e-3, 1.0), (1e3, 1e4)] {
        let sx: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| x.iter().map(|v| v * cx).collect())
            .collect();
        let sy: Vec<f64> = ys.iter().map(|y| y * cy).collect();
        let fit = fit_hyperparameters(&options, &sx, &sy).unwrap();
        let close = |a: f64, b: f64| (a / b - 1.0).abs() <= 1e-3;
        for (l, l0) in fit.lengthscales().iter().zip(base.lengthscales()) {
            assert!(close(*l, cx * l0), "c = ({cx}, {cy}): ℓ {l} vs {}", cx * l0);
        }
        assert!(
            close(fit.noise_sd(), cy * base.noise_sd()),
            "c = ({cx}, {cy}): σ"
        );
        assert!(
            close(fit.variance(), cy * cy * base.variance()),
            "c = ({cx}, {cy}): s²"
        );
        // ln p shifts by −t ln c_y − 0 (the x scale cancels).
        let shift = -(xs.len() as f64) * cy.ln();
        assert!(
            (fit.log_likelihood() - base.log_likelihood() - shift).abs()
                <= 1e-6 * (1.0 + shift.abs()),
            "c = ({cx}, {cy}): ln p"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// (h) MAP (the default): priors on standardised targets, small data, multimodal likelihoods.
// ---------------------------------------------------------------------------------------------

/// ln p(v) of ln v ~ N(μ, τ²), the density of v, written out.
fn ln_lognormal(v: f64, mu: f64, tau: f64) -> f64 {
    let u = v.ln();
    -0.5 * ((u - mu) / tau).powi(2) - u - tau.ln() - 0.5 * LN_2PI
}

/// Mean and standard deviation (1/(t − 1)) of the targets.
fn mean_sd(ys: &[f64]) -> (f64, f64) {
    let t = ys.len() as f64;
    let m = ys.iter().sum::<f64>() / t;
    let v = ys.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (t - 1.0);
    (m, v.sqrt())
}

fn largest_range(xs: &[Vec<f64>]) -> f64 {
    (0..xs[0].len())
        .map(|k| {
            let lo = xs.iter().map(|x| x[k]).fold(f64::INFINITY, f64::min);
            let hi = xs.iter().map(|x| x[k]).fold(f64::NEG_INFINITY, f64::max);
            hi - lo
        })
        .fold(0.0, f64::max)
}

/// The default MAP objective written out (shared ℓ, s² = 1 in the user's units, σ fitted):
/// z = (y − m)/s, the dense-LU likelihood of z with s_z² = 1/s² and σ_z = σ/s, plus the
/// log-normal densities of ℓ/D ~ LN(√2 + ½ ln d, √3) (Hvarfner et al. 2024) and of the
/// noise-to-signal ratio σ²/s² = σ² ~ LN(−4, 1).
fn reference_log_posterior(fam: Fam, xs: &[Vec<f64>], ys: &[f64], l: f64, sigma: f64) -> f64 {
    let (m, s) = mean_sd(ys);
    let z: Vec<f64> = ys.iter().map(|y| (y - m) / s).collect();
    let d = xs[0].len() as f64;
    let big_d = largest_range(xs);
    reference_loglik(fam, &shared(l, 1.0 / (s * s), sigma / s), xs, &z)
        + ln_lognormal(l / big_d, 2f64.sqrt() + 0.5 * d.ln(), 3f64.sqrt())
        + ln_lognormal(sigma * sigma, -4.0, 1.0)
}

/// The fit's log posterior and likelihood are the written-out reference's at the fitted values;
/// the fit is a stationary point of the reference (central differences in ln ℓ and ln σ², so a
/// wrong prior slope would show) and at least the best of a dense grid.
#[test]
fn map_fit_is_the_maximum_of_the_written_out_log_posterior() {
    for (seed, d, n, fam) in [
        (61, 1, 15, Fam::FiveHalves),
        (62, 2, 30, Fam::Rbf),
        (63, 3, 8, Fam::FiveHalves),
    ] {
        let truth = shared(0.4, 1.0, 0.1);
        let (xs, mut ys) = gp_draw(fam, &truth, n, d, seed);
        ys.iter_mut().for_each(|y| *y = 3.0 * *y + 2.0); // an offset and a scale to undo
        let options = FitOptions::new().family(fam.family());
        let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
        let (l, sigma) = (fit.lengthscales()[0], fit.noise_sd());
        let reference = reference_log_posterior(fam, &xs, &ys, l, sigma);
        let got = fit.log_posterior().expect("MAP");
        assert!(
            (got - reference).abs() <= 1e-9 * reference.abs().max(1.0),
            "seed {seed}: log posterior {got} vs reference {reference}"
        );
        let (m, _) = mean_sd(&ys);
        assert_eq!(fit.mean(), m);
        let centred: Vec<f64> = ys.iter().map(|y| y - m).collect();
        let lik = reference_loglik(fam, &shared(l, 1.0, sigma), &xs, &centred);
        assert!((fit.log_likelihood() - lik).abs() <= 1e-9 * lik.abs().max(1.0));
        let h = 1e-5;
        let at = |dl: f64, ds: f64| {
            reference_log_posterior(fam, &xs, &ys, l * dl.exp(), sigma * (0.5 * ds).exp())
        };
        let g_l = (at(h, 0.0) - at(-h, 0.0)) / (2.0 * h);
        let g_s = (at(0.0, h) - at(0.0, -h)) / (2.0 * h);
        assert!(
            g_l.abs() <= 1e-3 && g_s.abs() <= 1e-3,
            "seed {seed}: reference gradient at the fit ({g_l}, {g_s}); ℓ = {l}, σ = {sigma}"
        );
        let (_, s) = mean_sd(&ys);
        let big_d = largest_range(&xs);
        let mut grid_best = (f64::NEG_INFINITY, 0.0, 0.0);
        for l in log_grid(0.01 * big_d, 10.0 * big_d, 80) {
            for sz in log_grid(1e-3, 3.0, 80) {
                let v = reference_log_posterior(fam, &xs, &ys, l, sz * s);
                if v > grid_best.0 {
                    grid_best = (v, l, sz * s);
                }
            }
        }
        assert!(
            got >= grid_best.0 - 1e-9 * grid_best.0.abs(),
            "seed {seed}: fit {got} at ℓ = {l}, σ = {sigma} < grid (value, ℓ, σ) {grid_best:?}"
        );
        assert!(!fit.on_box_edge(), "seed {seed}: {:?}", fit.edge_report());
    }
}

/// The acceptance of issue 37: warm-ups of 2d + 2 points (uniform in [0, 1]^d) of GP samples
/// (Matérn 5/2, ℓ = 0.2·√d, s² = 1, σ = 0.1), d = 2…6, 15 seeds each: no fitted parameter on
/// an edge of its box, and σ̂ within a factor 3 of σ. Prints the worst ratio per d.
#[test]
fn warm_ups_of_2d_plus_2_points_stay_off_the_edges() {
    let sigma = 0.1;
    let mut edges = 0;
    let mut report = Vec::new();
    for d in 2..=6 {
        let truth = shared(0.2 * (d as f64).sqrt(), 1.0, sigma);
        let mut worst: f64 = 1.0;
        for seed in 0..15 {
            let (xs, ys) = gp_draw(
                Fam::FiveHalves,
                &truth,
                2 * d + 2,
                d,
                700 + 100 * d as u64 + seed,
            );
            let fit = fit_hyperparameters(&FitOptions::new(), &xs, &ys).unwrap();
            if fit.on_box_edge() {
                edges += 1;
                eprintln!("d = {d} seed {seed}: {}", fit.edge_report().unwrap());
            }
            let ratio = fit.noise_sd() / sigma;
            if ratio.max(1.0 / ratio) > 3.0 {
                eprintln!(
                    "d = {d} seed {seed}: σ̂ = {}, ℓ̂ = {}, sd(y) = {}",
                    fit.noise_sd(),
                    fit.lengthscales()[0],
                    mean_sd(&ys).1
                );
            }
            worst = worst.max(ratio.max(1.0 / ratio));
        }
        report.push((d, worst));
    }
    eprintln!("worst σ̂/σ ratio (either way) per d: {report:?}; fits on an edge: {edges}");
    assert_eq!(edges, 0);
    for (d, worst) in report {
        assert!(worst <= 3.0, "d = {d}: σ̂ off by a factor {worst}");
    }
}

/// 200 rows with σ = 0.05 (Matérn 5/2, ℓ = 0.4, d = 3, five seeds): σ̂ within a factor 3
/// (the maximum-likelihood fit of issue 37 returned σ ≈ 8·10⁻⁵ on such data).
#[test]
fn two_hundred_rows_recover_a_small_noise() {
    let truth = shared(0.4, 1.0, 0.05);
    let mut worst: f64 = 1.0;
    for seed in 1..=5 {
        let (xs, ys) = gp_draw(Fam::FiveHalves, &truth, 200, 3, 800 + seed);
        let fit = fit_hyperparameters(&FitOptions::new(), &xs, &ys).unwrap();
        assert!(!fit.on_box_edge(), "{:?}", fit.edge_report());
        let ratio = fit.noise_sd() / 0.05;
        worst = worst.max(ratio.max(1.0 / ratio));
    }
    eprintln!("200 rows, σ = 0.05: worst σ̂/σ ratio {worst}");
    assert!(worst <= 3.0, "σ̂ off by a factor {worst}");
}

/// The local maxima of `values` on an n × n grid (strictly above every neighbour).
fn grid_local_maxima(values: &[Vec<f64>]) -> Vec<(usize, usize)> {
    let n = values.len();
    let mut out = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let v = values[i][j];
            let mut top = v.is_finite();
            for (a, row) in values
                .iter()
                .enumerate()
                .take((i + 2).min(n))
                .skip(i.saturating_sub(1))
            {
                for (b, &w) in row
                    .iter()
                    .enumerate()
                    .take((j + 2).min(n))
                    .skip(j.saturating_sub(1))
                {
                    if (a, b) != (i, j) && w >= v {
                        top = false;
                    }
                }
            }
            if top {
                out.push((i, j));
            }
        }
    }
    out
}

// Two 4-D data sets built to have a spurious small-ℓ mode: a few points of a GP sample
// (Matérn 5/2, ℓ = 0.5) of which some come in pairs 0.03 apart, with noise that a small ℓ can
// interpolate. Generated once (numpy, seeds 2 and 16) and written out here.
//
// ML_*: 12 points, σ = 0.8. Its (centred) likelihood has a mode at ℓ ≈ 0.077 with σ on the
// floor 10⁻⁴ and the global one at ℓ ≈ 0.42, σ ≈ 0.51 — the situation of issue 37.
// MAP_*: 16 points, σ = 0.2. Its default log posterior has a mode at ℓ ≈ 0.17, σ ≈ 0.096
// (log posterior −16.24) and the global one at ℓ ≈ 0.80, σ ≈ 0.18 (−14.80). A start-then-refine
// search whose best-scored starts lie in the small-ℓ basin ends in the former (the defaults did
// before the small-ℓ starts were refined apart).
const ML_X: [[f64; 4]; 12] = [
    [
        0.2616121342493164,
        0.2984911434141233,
        0.8142257405942803,
        0.0919159421350969,
    ],
    [
        0.600100525965654,
        0.7285605268117946,
        0.18790107336660344,
        0.05514662733306819,
    ],
    [
        0.2749693679060381,
        0.6574330148755926,
        0.562265662780428,
        0.15006226330533612,
    ],
    [
        0.43263079080478717,
        0.6692972985745202,
        0.4227846732701278,
        0.6331843992741164,
    ],
    [
        0.9674359524936766,
        0.6830648223096253,
        0.39162483308002616,
        0.18725256972009807,
    ],
    [
        0.3459606655717331,
        0.5110659735695771,
        0.8912094095005791,
        0.7755639424726894,
    ],
    [
        0.31814660061537436,
        0.9242168965068241,
        0.4709098854157575,
        0.69375884220223,
    ],
    [
        0.10720730845358806,
        0.1045435584329415,
        0.20190744752945033,
        0.8844496736882935,
    ],
    [
        0.2939624074714953,
        0.32016406958334825,
        0.8205428949655388,
        0.10043708649260803,
    ],
    [
        0.5950077110339599,
        0.75461433314814,
        0.1540095945131808,
        0.0424908625477187,
    ],
    [
        0.2822575334990002,
        0.7114756406290725,
        0.5393317393088161,
        0.11769044953122784,
    ],
    [
        0.415732174849666,
        0.6983754646086652,
        0.41573450806337303,
        0.6729148098512251,
    ],
];
const ML_Y: [f64; 12] = [
    -1.3540778364640622,
    0.51939971111954,
    -0.0821839159559172,
    -1.1118652734021628,
    0.7481430870199047,
    -0.7825213486789653,
    -1.812897947954611,
    -1.4127017564051239,
    -0.6289542888620808,
    0.7832732851272232,
    1.4217144221463809,
    -1.1188332571342277,
];
const MAP_X: [[f64; 4]; 16] = [
    [
        0.5669168388793651,
        0.4307441454901856,
        0.09407382546152454,
        0.3480795504359955,
    ],
    [
        0.6215090383806794,
        0.02165500318271052,
        0.8746323779455377,
        0.8540495315269422,
    ],
    [
        0.044304215788284806,
        0.8024209628659041,
        0.1847951614868486,
        0.6956239148985941,
    ],
    [
        0.1550002548656667,
        0.6916197559832665,
        0.9586338310644203,
        0.9849849877499477,
    ],
    [
        0.6632952669932003,
        0.16358816232223694,
        0.3949106472756698,
        0.27799521264490146,
    ],
    [
        0.9556696952798586,
        0.299345063499738,
        0.5610769947263297,
        0.40736529519943776,
    ],
    [
        0.1387275508007576,
        0.38474151186552197,
        0.7694150538287144,
        0.4135993574643705,
    ],
    [
        0.6793145872581862,
        0.5818538764962524,
        0.07652217911652281,
        0.729884858046672,
    ],
    [
        0.6739760533764612,
        0.8019327450049117,
        0.14893145498491134,
        0.9744991206740011,
    ],
    [
        0.867653547587387,
        0.9030698517124004,
        0.9619450802438108,
        0.6211690082494582,
    ],
    [
        0.6076651947315909,
        0.4489285173543476,
        0.10949790653273053,
        0.35126968935185077,
    ],
    [
        0.6294760095137771,
        0.023784426207753423,
        0.9043866776740935,
        0.8588295466672081,
    ],
    [
        0.06437037523237796,
        0.8509051248134492,
        0.21990070146839596,
        0.6853001692197818,
    ],
    [
        0.15189745709721464,
        0.7136644665799758,
        0.93936472604928,
        0.9300574294156896,
    ],
    [
        0.6329522317510375,
        0.17974786394061845,
        0.3885788300659339,
        0.26728779863380964,
    ],
    [
        0.9780817589460702,
        0.26779413821965237,
        0.6290121424951549,
        0.40805642189389374,
    ],
];
const MAP_Y: [f64; 16] = [
    -0.24258014797058214,
    1.7800514190804526,
    -1.1530116014195695,
    -0.3128830898520373,
    -0.09601348162044299,
    -0.027341640213488727,
    0.007641538022364225,
    0.06395935364608336,
    -0.0513359952251419,
    0.13880406723040256,
    -0.08351092419574391,
    2.3387632652516235,
    -0.8708342868179288,
    -0.1296287872412047,
    0.24836458407892675,
    0.2973199196826678,
];

/// A dense 150 × 150 log grid of `objective(ℓ, σ)`: its local maxima and the best value.
fn dense_grid(
    objective: &dyn Fn(f64, f64) -> f64,
    ls: &[f64],
    sigmas: &[f64],
) -> (Vec<(f64, f64, f64)>, f64) {
    let values: Vec<Vec<f64>> = ls
        .iter()
        .map(|&l| sigmas.iter().map(|&s| objective(l, s)).collect())
        .collect();
    let mut maxima: Vec<(f64, f64, f64)> = grid_local_maxima(&values)
        .into_iter()
        .map(|(i, j)| (values[i][j], ls[i], sigmas[j]))
        .collect();
    maxima.sort_by(|a, b| b.0.total_cmp(&a.0));
    let best = maxima.first().map_or(f64::NEG_INFINITY, |m| m.0);
    (maxima, best)
}

/// The defaults find the better of two modes, under MAP (the default) and under maximum
/// likelihood, on data built to have a spurious small-ℓ mode; the reference is a dense grid of
/// the written-out objective, which also shows both modes exist.
#[test]
fn the_defaults_find_the_better_mode() {
    let rows = |x: &[[f64; 4]]| x.iter().map(|r| r.to_vec()).collect::<Vec<_>>();

    // Maximum likelihood on the centred targets, with the default starts.
    let xs = rows(&ML_X);
    let (m, _) = mean_sd(&ML_Y);
    let ys: Vec<f64> = ML_Y.iter().map(|y| y - m).collect();
    let rms = (ys.iter().map(|y| y * y).sum::<f64>() / ys.len() as f64).sqrt();
    let big_d = largest_range(&xs);
    let ls = log_grid(0.01 * big_d, 10.0 * big_d, 150);
    let sigmas = log_grid(1e-4 * rms, 3.0 * rms, 150);
    let objective =
        |l: f64, s: f64| reference_loglik(Fam::FiveHalves, &shared(l, 1.0, s), &xs, &ys);
    let (maxima, best) = dense_grid(&objective, &ls, &sigmas);
    assert!(maxima.len() >= 2, "{maxima:?}");
    let spurious = maxima.iter().find(|m| m.1 < 0.15).expect("a small-ℓ mode");
    assert!(maxima[0].1 > 0.3 && spurious.0 < maxima[0].0, "{maxima:?}");
    let ml = FitOptions::new().objective(Objective::MaximumLikelihood);
    let fit = fit_hyperparameters(&ml, &xs, &ys).unwrap();
    assert!(
        fit.log_likelihood() >= best - 1e-9 * best.abs(),
        "ML: fit {} at ℓ = {}, σ = {} < grid {best} (modes {maxima:?})",
        fit.log_likelihood(),
        fit.lengthscales()[0],
        fit.noise_sd()
    );
    eprintln!(
        "ML modes (value, ℓ, σ) {:?}; fit {} at ℓ = {}, σ = {}",
        &maxima[..2],
        fit.log_likelihood(),
        fit.lengthscales()[0],
        fit.noise_sd()
    );

    // MAP, every option at its default.
    let xs = rows(&MAP_X);
    let (_, s) = mean_sd(&MAP_Y);
    let big_d = largest_range(&xs);
    let ls = log_grid(0.01 * big_d, 10.0 * big_d, 150);
    let sigmas = log_grid(1e-3 * s, 3.0 * s, 150);
    let objective = |l: f64, sg: f64| reference_log_posterior(Fam::FiveHalves, &xs, &MAP_Y, l, sg);
    let (maxima, best) = dense_grid(&objective, &ls, &sigmas);
    let spurious = maxima.iter().find(|m| m.1 < 0.3).expect("a small-ℓ mode");
    assert!(maxima[0].1 > 0.5 && spurious.0 < maxima[0].0, "{maxima:?}");
    let fit = fit_hyperparameters(&FitOptions::new(), &xs, &MAP_Y).unwrap();
    let got = fit.log_posterior().unwrap();
    assert!(
        got >= best - 1e-9 * best.abs(),
        "MAP: fit {got} at ℓ = {}, σ = {} < grid {best} (modes {maxima:?})",
        fit.lengthscales()[0],
        fit.noise_sd()
    );
    eprintln!(
        "MAP modes (value, ℓ, σ) {:?}; fit {got} at ℓ = {}, σ = {}",
        &maxima[..2],
        fit.lengthscales()[0],
        fit.noise_sd()
    );
}

/// Every edge message names the parameter, the edge and the value.
#[test]
fn edge_reports_name_the_parameter_and_the_edge() {
    let xs = [[0.0], [0.25], [0.5], [0.75], [1.0]];
    let ys = [0.0, 2.0, 0.1, -1.9, 0.0];
    let options = FitOptions::new()
        .lengthscale_bounds(1.0, 1.0)
        .noise_bounds(1e-3, 2e-3);
    let fit = fit_hyperparameters(&options, &xs, &ys).unwrap();
    assert_eq!(fit.at_upper(), [HyperParameter::NoiseSd]);
    assert_eq!(
        fit.edge_report().unwrap(),
        "noise_sd (σ) = 0.002 is on the upper edge of its search box (the data wanted a value \
         beyond it: widen the box with FitOptions or distrust the fit)"
    );
    let options = FitOptions::new()
        .lengthscales(LengthScales::PerDimension)
        .lengthscale_bounds(2.0, 5.0);
    let xs2 = [[0.0, 0.0], [0.5, 0.1], [0.2, 0.9], [0.9, 0.6], [0.4, 0.4]];
    let fit = fit_hyperparameters(&options, &xs2, &[0.1, 0.5, -0.2, 0.3, 0.2]).unwrap();
    let report = fit.edge_report().unwrap();
    assert!(
        report.contains("lengthscale[0] = 2 is on the lower edge"),
        "{report}"
    );
    assert_eq!(HyperParameter::Lengthscale(3).to_string(), "lengthscale[3]");
    assert_eq!(HyperParameter::OutputVariance.to_string(), "variance (s²)");
    let quiet = fit_hyperparameters(&FitOptions::new(), &xs, &ys).unwrap();
    assert_eq!(quiet.edge_report(), None);
}

/// `bound_with_sigma` is the bound built by hand with the fitted kernel and the given σ.
#[test]
fn bound_with_an_inflated_sigma() {
    let truth = shared(0.3, 1.0, 0.2);
    let (xs, ys) = gp_draw(Fam::FiveHalves, &truth, 30, 2, 42);
    let fit = fit_hyperparameters(&FitOptions::new(), &xs, &ys).unwrap();
    let config = BoundConfig::new().params(BoundParams::new().norm_bound(2.0));
    let sigma = 1.5 * fit.noise_sd();
    let mut a = fit
        .bound_with_sigma(BoundKind::Dmm, &config, sigma)
        .unwrap();
    let mut b = BoundKind::Dmm
        .build(
            fit.kernel().clone(),
            &config.params(config.params.sigma(sigma)),
        )
        .unwrap();
    for (x, y) in [([0.2, 0.4], 0.1), ([0.7, 0.1], -0.3)] {
        a.observe(&x, y).unwrap();
        b.observe(&x, y).unwrap();
    }
    let q = [[0.3, 0.3]].as_points().unwrap();
    assert_eq!(a.evaluate(&q).unwrap(), b.evaluate(&q).unwrap());
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            fit.bound_with_sigma(BoundKind::Dmm, &config, bad),
            Err(Error::InvalidParameter { name: "sigma", .. })
        ));
    }
}
