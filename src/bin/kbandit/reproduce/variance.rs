//! `kbandit reproduce variance`: variance starvation (Calandriello et al. 2019 §3.1–3.2 and the
//! point of their Figure 1).
//!
//! On [0, 1] with an RBF kernel, every observation lies in [0, cover], so the dictionary of BKB
//! (drawn from the observed points, Alg. 1) cannot cover the rest of the domain. Over a grid of
//! [0, 1] the experiment compares, in the scale of the paper (σ² = ρ_λ²/λ):
//!
//! - the exact posterior variance σ²(x) = (k(x, x) − k_t(x)ᵀ(K_t + λI)⁻¹k_t(x))/λ (Eq. 2);
//! - BKB's DTC variance σ̃²(x) = (k(x, x) − z(x)ᵀZᵀZV⁻¹z(x))/λ (Eq. 4);
//! - the subset-of-regressors variance, the same with k(x, x) replaced by z(x)ᵀz(x), which is
//!   z(x)ᵀV⁻¹z(x) and tends to 0 far from the dictionary (variance starvation).
//!
//! Two dictionaries are drawn by BKB from the same data: one with Theorem 1's q̄ = 6α ln(4T/δ)/ε²
//! (under which σ²/α ≤ σ̃² ≤ ασ², α = (1+ε)/(1−ε), with probability 1 − δ), and a sparser
//! practical one. For each, the accuracy is also measured: the smallest α' with
//! A/α' ⪯ Ã ⪯ α'A, A = ΦΦᵀ + λI and Ã = PΦΦᵀP + λI (P the projection on the dictionary's span),
//! which by Lemma 6's argument gives σ²/α' ≤ σ̃² ≤ α'σ² at every x. It is computed on the span of
//! the data in the basis of the eigenvectors of the weighted Gram matrix, keeping the directions
//! whose eigenvalue is at least 10⁻¹⁰λ (about ten times the rounding noise of the eigenvalues
//! here; α' changes by less than 10⁻⁶ between the cut-offs 10⁻¹⁰λ and 10⁻¹²λ, while 10⁻⁶λ misses
//! directions that matter).

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use kernel_bandits::posterior::SketchedPosterior;
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, SymmetricEigen};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use serde::Serialize;
use std::result::Result;

use super::{create_dir, derive_seed, write_file, write_json};
use crate::plot::variance_plot;

/// Arguments of `kbandit reproduce variance`.
#[derive(Debug, Args)]
pub struct VarianceArgs {
    /// Grid points on [0, 1] (the arms, and where the variances are compared).
    #[arg(long, default_value_t = 201)]
    grid: usize,
    /// Number of observations, at grid points drawn uniformly from [0, cover] (with repeats).
    #[arg(long, default_value_t = 300)]
    observations: usize,
    /// The observations lie in [0, cover]; the rest of [0, 1] is far from every anchor.
    #[arg(long, default_value_t = 0.3, allow_negative_numbers = true)]
    cover: f64,
    /// Length-scale ℓ of the RBF kernel.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    lengthscale: f64,
    /// Regulariser λ (the GP noise variance).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    lambda: f64,
    /// ε of Theorem 1 (α = (1+ε)/(1−ε)).
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    epsilon: f64,
    /// δ of Theorem 1.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    delta: f64,
    /// q̄ of the second, sparser dictionary.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    practical_qbar: f64,
    /// Seed of the observations and of BKB's sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory for variance.json, variance.csv and variance.png / .svg.
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

/// Eigenvalues of the weighted Gram matrix below this fraction of λ are left out of α' (the
/// eigenvalues' rounding noise is about ε‖G‖ ≈ 10⁻¹³ at the defaults).
const SPAN_TOLERANCE: f64 = 1e-10;

/// One dictionary's variances and accuracy.
#[derive(Debug, Serialize)]
struct DictionaryJson {
    /// "theorem" or "practical".
    name: &'static str,
    qbar: f64,
    /// Whether q̄ ≥ Theorem 1's 6α ln(4T/δ)/ε² (then the factor α is claimed w.p. 1 − δ).
    theorem_applies: bool,
    /// The anchors' coordinates.
    anchors: Vec<f64>,
    /// σ̃² (DTC) at each grid point.
    dtc: Vec<f64>,
    /// z(x)ᵀV⁻¹z(x) (SoR) at each grid point.
    sor: Vec<f64>,
    /// The measured accuracy α' (A/α' ⪯ Ã ⪯ α'A on the data's span).
    alpha_measured: f64,
    /// max over the grid of max(σ̃²/σ², σ²/σ̃²).
    worst_dtc_ratio: f64,
    /// The grid points farther than 3ℓ from every anchor, and the largest SoR/exact ratio
    /// among them (`None` if there are none).
    far_points: usize,
    far_sor_ratio_max: Option<f64>,
}

#[derive(Debug, Serialize)]
struct VarianceJson {
    grid: Vec<f64>,
    observations: Vec<f64>,
    targets: Vec<f64>,
    cover: f64,
    lengthscale: f64,
    lambda: f64,
    epsilon: f64,
    delta: f64,
    /// α = (1+ε)/(1−ε).
    alpha: f64,
    /// Theorem 1's q̄ = 6α ln(4T/δ)/ε².
    theorem_qbar: f64,
    seed: u64,
    /// σ² = ρ_λ²/λ at each grid point.
    exact: Vec<f64>,
    dictionaries: Vec<DictionaryJson>,
}

fn check_args(args: &VarianceArgs) -> Result<(), String> {
    let fail = |what: String| Err(format!("invalid arguments: {what}"));
    if args.grid < 2 || args.observations == 0 {
        return fail("--grid must be at least 2 and --observations at least 1".into());
    }
    if !(args.cover >= 0.0 && args.cover <= 1.0) {
        return fail(format!("--cover {} is not in [0, 1]", args.cover));
    }
    for (name, value) in [
        ("--lengthscale", args.lengthscale),
        ("--lambda", args.lambda),
        ("--practical-qbar", args.practical_qbar),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return fail(format!("{name} {value} is not finite and positive"));
        }
    }
    for (name, value) in [("--epsilon", args.epsilon), ("--delta", args.delta)] {
        if !(value > 0.0 && value < 1.0) {
            return fail(format!("{name} {value} is not in (0, 1)"));
        }
    }
    Ok(())
}

/// Runs the experiment and writes its outputs.
pub fn run(args: &VarianceArgs) -> Result<(), String> {
    check_args(args)?;
    let fail = |e: Error| format!("invalid arguments: {e}");
    let kernel = Rbf::new(args.lengthscale).map_err(fail)?;
    let step = 1.0 / (args.grid - 1) as f64;
    let grid: Vec<f64> = (0..args.grid).map(|j| j as f64 * step).collect();
    let covered: Vec<f64> = grid.iter().copied().filter(|&x| x <= args.cover).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(args.seed, &[0x006f_6273]));
    let mut observations = Vec::with_capacity(args.observations);
    let mut targets = Vec::with_capacity(args.observations);
    for _ in 0..args.observations {
        let x = covered[rng.random_range(0..covered.len())];
        let noise: f64 = rng.sample(StandardNormal);
        observations.push(x);
        targets.push((2.0 * std::f64::consts::PI * x).sin() + 0.1 * noise);
    }
    let points: Vec<[f64; 1]> = grid.iter().map(|&x| [x]).collect();
    let points = points.as_points().map_err(fail)?;

    let mut exact = ExactPosterior::new(kernel, &[args.lambda]).map_err(fail)?;
    for (&x, &y) in observations.iter().zip(&targets) {
        exact.observe(&[x], y).map_err(fail)?;
    }
    let exact: Vec<f64> = exact
        .evaluate(&points)
        .map_err(fail)?
        .variance(0)
        .iter()
        .map(|v| v / args.lambda)
        .collect();

    let alpha = (1.0 + args.epsilon) / (1.0 - args.epsilon);
    let theorem_qbar = 6.0 * alpha * (4.0 * args.observations as f64 / args.delta).ln()
        / (args.epsilon * args.epsilon);
    let mut dictionaries = Vec::new();
    for (index, (name, qbar)) in [
        ("theorem", theorem_qbar),
        ("practical", args.practical_qbar),
    ]
    .into_iter()
    .enumerate()
    {
        let params = SketchParams::new()
            .lambda(args.lambda)
            .epsilon(args.epsilon)
            .delta(args.delta)
            .qbar(qbar)
            .beta(1.0);
        let seed = derive_seed(args.seed, &[0x0062_6b62, index as u64]);
        let mut bkb = Bkb::new(kernel, params, seed).map_err(fail)?;
        for (&x, &y) in observations.iter().zip(&targets) {
            bkb.observe(&[x], y).map_err(fail)?;
        }
        let post = bkb.posterior();
        let dtc = post.evaluate(&points).map_err(fail)?.variance;
        let sor = post.subset_of_regressors_variance(&points).map_err(fail)?;
        let anchors: Vec<f64> = (0..post.dictionary_size())
            .map(|j| post.anchor(j)[0])
            .collect();
        let alpha_measured = measured_alpha(post, &kernel, args.lambda)?;
        let worst_dtc_ratio = dtc
            .iter()
            .zip(&exact)
            .map(|(d, e)| (d / e).max(e / d))
            .fold(1.0, f64::max);
        let far: Vec<usize> = (0..grid.len())
            .filter(|&j| {
                anchors
                    .iter()
                    .all(|a| (a - grid[j]).abs() > 3.0 * args.lengthscale)
            })
            .collect();
        let far_sor_ratio_max = far.iter().map(|&j| sor[j] / exact[j]).reduce(f64::max);
        dictionaries.push(DictionaryJson {
            name,
            qbar,
            theorem_applies: qbar >= theorem_qbar,
            anchors,
            dtc,
            sor,
            alpha_measured,
            worst_dtc_ratio,
            far_points: far.len(),
            far_sor_ratio_max,
        });
    }
    let json = VarianceJson {
        grid,
        observations,
        targets,
        cover: args.cover,
        lengthscale: args.lengthscale,
        lambda: args.lambda,
        epsilon: args.epsilon,
        delta: args.delta,
        alpha,
        theorem_qbar,
        seed: args.seed,
        exact,
        dictionaries,
    };
    print!("{}", markdown(&json));
    create_dir(&args.out)?;
    let json_path = args.out.join("variance.json");
    write_json(&json_path, &json)?;
    let csv_path = args.out.join("variance.csv");
    write_file(&csv_path, &csv(&json))?;
    let stem = args.out.join("variance");
    let practical = &json.dictionaries[1];
    let theorem = &json.dictionaries[0];
    let title = format!(
        "Variance starvation: {} observations in [0, {}], RBF ℓ = {}, λ = {}",
        json.observations.len(),
        args.cover,
        args.lengthscale,
        args.lambda
    );
    let dtc_theorem = format!("DTC σ̃², Thm 1 qbar (m = {})", theorem.anchors.len());
    let sor_theorem = format!("SoR zᵀV⁻¹z, Thm 1 qbar (m = {})", theorem.anchors.len());
    let dtc_practical = format!(
        "DTC σ̃², qbar = {} (m = {})",
        practical.qbar,
        practical.anchors.len()
    );
    let sor_practical = format!(
        "SoR zᵀV⁻¹z, qbar = {} (m = {})",
        practical.qbar,
        practical.anchors.len()
    );
    let series: [(&str, &[f64]); 4] = [
        (&dtc_theorem, &theorem.dtc),
        (&sor_theorem, &theorem.sor),
        (&dtc_practical, &practical.dtc),
        (&sor_practical, &practical.sor),
    ];
    let anchors_theorem = format!("anchors, Thm 1 qbar ({})", theorem.anchors.len());
    let anchors_practical = format!(
        "anchors, qbar = {} ({})",
        practical.qbar,
        practical.anchors.len()
    );
    let anchors: [(&str, usize, &[f64]); 2] = [
        (&anchors_theorem, 0, &theorem.anchors),
        (&anchors_practical, 2, &practical.anchors),
    ];
    variance_plot(
        &stem,
        &title,
        &json.grid,
        ("exact σ² = ρ²/λ", &json.exact),
        &series,
        &anchors,
    )?;
    eprintln!(
        "variance: wrote {}, {} and the plots {}.{{png,svg}}",
        json_path.display(),
        csv_path.display(),
        stem.display()
    );
    Ok(())
}

/// The accuracy α' of the dictionary of `post`: the extreme generalised eigenvalues of
/// Ã = PΦΦᵀP + λI against A = ΦΦᵀ + λI on the span of the data, α' = max(λ_max, 1/λ_min).
///
/// With the distinct points u, their counts c and the weighted Gram matrix G = C^{1/2}K_uuC^{1/2}
/// = UΛUᵀ, the vectors eᵢ = Φ'uᵢ/√Λᵢ (Φ' = ΦC^{1/2}) are an orthonormal basis of the span in
/// which A = Λ + λI. The Nyström factor F = C^{1/2}K_uS L_S⁻ᵀ (L_S = chol K_SS) has
/// FFᵀ = Φ'ᵀPΦ', so Ã = Wᵀ(FᵀF)W + λI with W = FᵀUΛ^{−1/2}, whose columns have norm ≤ 1
/// (FFᵀ ⪯ G). Directions with Λᵢ < 10⁻¹⁰λ are left out: their eigenvalues are rounding noise.
fn measured_alpha(post: &SketchedPosterior<Rbf>, kernel: &Rbf, lambda: f64) -> Result<f64, String> {
    let n = post.distinct();
    let anchors = post.dictionary();
    let m = anchors.len();
    let weight: Vec<f64> = (0..n).map(|i| (post.count(i) as f64).sqrt()).collect();
    let gram = DMatrix::from_fn(n, n, |i, j| {
        weight[i] * weight[j] * kernel.eval(post.point(i), post.point(j))
    });
    let kss = DMatrix::from_fn(m, m, |a, b| {
        kernel.eval(post.point(anchors[a]), post.point(anchors[b]))
    });
    let chol = kss.cholesky().ok_or_else(|| {
        "the dictionary's kernel matrix is not positive definite in floating point".to_string()
    })?;
    // F = C^{1/2} K_uS L_S⁻ᵀ, i.e. Fᵀ = L_S⁻¹ K_Su C^{1/2}.
    let ksu = DMatrix::from_fn(m, n, |a, i| {
        weight[i] * kernel.eval(post.point(anchors[a]), post.point(i))
    });
    let ft = chol
        .l()
        .solve_lower_triangular(&ksu)
        .ok_or_else(|| "singular dictionary factor".to_string())?;
    let eigen = SymmetricEigen::new(gram);
    let kept: Vec<usize> = (0..n)
        .filter(|&i| eigen.eigenvalues[i] >= SPAN_TOLERANCE * lambda)
        .collect();
    let r = kept.len();
    if r == 0 {
        return Ok(1.0);
    }
    let u = DMatrix::from_fn(n, r, |i, k| {
        eigen.eigenvectors[(i, kept[k])] / eigen.eigenvalues[kept[k]].sqrt()
    });
    let w = &ft * u;
    let ftf = &ft * ft.transpose();
    let mut pencil = w.transpose() * ftf * &w;
    for a in 0..r {
        pencil[(a, a)] += lambda;
    }
    let scale: Vec<f64> = kept
        .iter()
        .map(|&i| 1.0 / (eigen.eigenvalues[i] + lambda).sqrt())
        .collect();
    let scaled = DMatrix::from_fn(r, r, |a, b| scale[a] * pencil[(a, b)] * scale[b]);
    let ratios = SymmetricEigen::new(scaled).eigenvalues;
    let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    });
    Ok(hi.max(1.0 / lo))
}

/// The grid point nearest to `x`.
fn nearest(grid: &[f64], x: f64) -> usize {
    (0..grid.len())
        .min_by(|&a, &b| (grid[a] - x).abs().total_cmp(&(grid[b] - x).abs()))
        .unwrap_or(0)
}

/// A table per dictionary at a few x, then the summary lines.
fn markdown(json: &VarianceJson) -> String {
    let t = json.observations.len();
    let mut out = format!(
        "Variance starvation (Calandriello et al. 2019 §3): {t} observations at grid points in \
         [0, {}], RBF ℓ = {}, λ = {}; ε = {}, δ = {}, α = (1+ε)/(1−ε) = {:.3}, Theorem 1's q̄ = \
         6α ln(4T/δ)/ε² = {:.1}. Variances in the papers' scale σ² = ρ_λ²/λ.\n",
        json.cover,
        json.lengthscale,
        json.lambda,
        json.epsilon,
        json.delta,
        json.alpha,
        json.theorem_qbar
    );
    let ell = json.lengthscale;
    let probes = [
        0.0,
        json.cover / 2.0,
        json.cover,
        json.cover + ell,
        json.cover + 3.0 * ell,
        0.5 * (json.cover + 1.0),
        1.0,
    ];
    let mut rows: Vec<usize> = probes.iter().map(|&x| nearest(&json.grid, x)).collect();
    rows.dedup();
    for d in &json.dictionaries {
        let _ = write!(
            out,
            "\nDictionary \"{}\": q̄ = {:.2}{}, m = {} anchors\n\n| x | distance to nearest \
             anchor | exact σ² | DTC σ̃² | DTC / exact | SoR zᵀV⁻¹z | SoR / exact |\n\
             |---:|---:|---:|---:|---:|---:|---:|\n",
            d.name,
            d.qbar,
            if d.theorem_applies {
                " (Theorem 1's)"
            } else {
                " (below Theorem 1's: no factor is claimed)"
            },
            d.anchors.len()
        );
        for &j in &rows {
            let x = json.grid[j];
            let distance = d
                .anchors
                .iter()
                .map(|a| (a - x).abs())
                .fold(f64::INFINITY, f64::min);
            let _ = writeln!(
                out,
                "| {x:.3} | {distance:.3} | {:.4e} | {:.4e} | {:.4} | {:.4e} | {:.3e} |",
                json.exact[j],
                d.dtc[j],
                d.dtc[j] / json.exact[j],
                d.sor[j],
                d.sor[j] / json.exact[j]
            );
        }
        let _ = write!(
            out,
            "\nworst max(DTC/exact, exact/DTC) over the {} grid points: {:.6}; measured accuracy \
             α' = {:.6}; Theorem 1's α = {:.3}{}.\n",
            json.grid.len(),
            d.worst_dtc_ratio,
            d.alpha_measured,
            json.alpha,
            if d.worst_dtc_ratio <= json.alpha {
                " (within α)"
            } else {
                " (NOT within α)"
            }
        );
        match d.far_sor_ratio_max {
            Some(r) => {
                let _ = writeln!(
                    out,
                    "SoR / exact at the {} grid points farther than 3ℓ from every anchor: at most \
                     {r:.3e}.",
                    d.far_points
                );
            }
            None => out.push_str("No grid point is farther than 3ℓ from every anchor.\n"),
        }
    }
    out
}

/// x, exact, then DTC and SoR per dictionary.
fn csv(json: &VarianceJson) -> String {
    let mut out = String::from("x,exact");
    for d in &json.dictionaries {
        let _ = write!(out, ",dtc_{0},sor_{0}", d.name);
    }
    out.push('\n');
    for (j, x) in json.grid.iter().enumerate() {
        let _ = write!(out, "{x},{}", json.exact[j]);
        for d in &json.dictionaries {
            let _ = write!(out, ",{},{}", d.dtc[j], d.sor[j]);
        }
        out.push('\n');
    }
    out
}
