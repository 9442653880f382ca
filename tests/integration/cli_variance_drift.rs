//! `kbandit reproduce variance` and the new methods of `kbandit reproduce nonstationary`, run as
//! processes on tiny configurations: the variances recomputed here from the observations and
//! anchors the JSON reports, with dense formulas; Theorem 1's factor (Calandriello et al.
//! 2019) and the measured accuracy checked on the output; the starved subset-of-regressors
//! variance; R-AMM / R-DMM / SW-DMM and the two information gains of GP-UCB (a cell recomputed
//! through the library); and the error paths.
#![cfg(feature = "cli")]

use crate::common::cli;

use cli::{assert_fails_cleanly, floats, kbandit, scratch_dir};

use crate::common::dense_variance;

use kernel_bandits::bound::{GpUcb, InformationGain};
use kernel_bandits::env::DriftingProblem;
use kernel_bandits::nonstationary::{
    Restarting, SlidingWindow, gp_ucb_interval, greedy_information_gain,
};
use kernel_bandits::prelude::*;
use serde_json::Value;

#[test]
fn variance_output_matches_dense_formulas_and_theorem_1() {
    let dir = scratch_dir("vd", "variance");
    // ℓ = 0.02 against a grid step of 0.0125 keeps K_SS well conditioned, so that the crate's
    // Cholesky embedding and the dense pseudo-inverse one agree to 1e-8 (at ℓ = 0.05 neighbours
    // are nearly collinear and the two differ in the fourth digit next to the data).
    let args = [
        "reproduce",
        "variance",
        "--grid",
        "81",
        "--observations",
        "60",
        "--cover",
        "0.25",
        "--lengthscale",
        "0.02",
        "--practical-qbar",
        "0.5",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("Dictionary \"theorem\""), "{stdout}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("variance.json")).unwrap()).unwrap();
    let grid = floats(&json["grid"]);
    let xs = floats(&json["observations"]);
    let lambda = json["lambda"].as_f64().unwrap();
    let ell = json["lengthscale"].as_f64().unwrap();
    let (epsilon, delta) = (json["epsilon"].as_f64().unwrap(), 0.1f64);
    assert_eq!((grid.len(), xs.len(), lambda), (81, 60, 0.01));
    assert!(
        xs.iter()
            .all(|&x| (0.0..=0.25).contains(&x) && grid.contains(&x))
    );
    // Theorem 1's constants, from the formulas.
    let alpha = (1.0 + epsilon) / (1.0 - epsilon);
    assert!((json["alpha"].as_f64().unwrap() - alpha).abs() < 1e-12);
    let qbar = 6.0 * alpha * (4.0 * 60.0 / delta).ln() / (epsilon * epsilon);
    assert!((json["theorem_qbar"].as_f64().unwrap() - qbar).abs() < 1e-9 * qbar);

    let kernel = Rbf::new(ell).unwrap();
    let exact = floats(&json["exact"]);
    let dense_exact = dense_variance::exact(&kernel, &xs, lambda, &grid);
    for j in 0..grid.len() {
        assert!((exact[j] - dense_exact[j]).abs() <= 1e-8 / lambda);
    }
    let dictionaries = json["dictionaries"].as_array().unwrap();
    assert_eq!(dictionaries.len(), 2);
    for d in dictionaries {
        let anchors = floats(&d["anchors"]);
        assert!(!anchors.is_empty());
        // The dictionary is drawn from the observed points only.
        assert!(anchors.iter().all(|a| xs.contains(a)));
        let (dtc, sor) = (floats(&d["dtc"]), floats(&d["sor"]));
        let (dense_dtc, dense_sor) =
            dense_variance::dtc_and_sor(&kernel, &xs, &anchors, lambda, &grid);
        let measured = d["alpha_measured"].as_f64().unwrap();
        let mut worst: f64 = 1.0;
        for j in 0..grid.len() {
            assert!(
                (dtc[j] - dense_dtc[j]).abs() <= 1e-8 / lambda,
                "DTC at {}",
                grid[j]
            );
            assert!(
                (sor[j] - dense_sor[j]).abs() <= 1e-8 / lambda,
                "SoR at {}",
                grid[j]
            );
            let ratio = dense_dtc[j] / dense_exact[j];
            worst = worst.max(ratio).max(1.0 / ratio);
            // Lemma 6's sandwich with the measured accuracy, at every grid point.
            assert!(
                ratio <= measured * (1.0 + 1e-6) && 1.0 / ratio <= measured * (1.0 + 1e-6),
                "ratio {ratio} outside [1/α', α'] = α' {measured} at {}",
                grid[j]
            );
        }
        assert!((d["worst_dtc_ratio"].as_f64().unwrap() - worst).abs() < 1e-6 * worst);
        if d["theorem_applies"].as_bool().unwrap() {
            // Theorem 1: σ²/α ≤ σ̃² ≤ ασ² (here the run's dictionary is far more accurate).
            assert!(
                worst <= alpha && measured <= alpha,
                "{worst} {measured} {alpha}"
            );
        }
        // Starvation: 8ℓ beyond the data, SoR has lost all but a vanishing fraction of the
        // exact variance, which is back at the prior k(x, x)/λ; DTC keeps it.
        for j in 0..grid.len() {
            if grid[j] >= 0.25 + 8.0 * ell {
                assert!(dense_sor[j] / dense_exact[j] < 1e-10, "{}", grid[j]);
                assert!((dense_exact[j] * lambda - 1.0).abs() < 1e-6);
                assert!((dense_dtc[j] / dense_exact[j] - 1.0).abs() < 1e-6);
            }
        }
        let far = d["far_sor_ratio_max"].as_f64().unwrap();
        assert!(far < 0.1, "{far}");
    }
    let csv = std::fs::read_to_string(dir.join("variance.csv")).unwrap();
    assert_eq!(
        csv.lines().next(),
        Some("x,exact,dtc_theorem,sor_theorem,dtc_practical,sor_practical")
    );
    assert_eq!(csv.lines().count(), 82);
    for ext in ["png", "svg"] {
        assert!(
            std::fs::metadata(dir.join(format!("variance.{ext}")))
                .unwrap()
                .len()
                > 1000
        );
    }
    for (flag, value) in [
        ("--epsilon", "1.5"),
        ("--cover", "2"),
        ("--lambda", "0"),
        ("--grid", "1"),
    ] {
        let bad = kbandit(&["reproduce", "variance", flag, value], &dir);
        assert_fails_cleanly(&bad, flag);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nonstationary_tight_methods_and_information_gains() {
    let dir = scratch_dir("vd", "drift");
    let args = [
        "reproduce",
        "nonstationary",
        "--kernels",
        "rbf",
        "--methods",
        "r-gp-ucb,sw-gp-ucb,r-amm,r-dmm,sw-dmm",
        "--info-gain",
        "both",
        "--reps",
        "1",
        "--horizon",
        "60",
        "--threads",
        "1",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    for title in [
        "R-GP-UCB(greedy)",
        "R-GP-UCB(data)",
        "SW-GP-UCB(data)",
        "SW-DMM",
    ] {
        assert!(stdout.contains(&format!("| rbf | {title} |")), "{stdout}");
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("nonstationary.json")).unwrap())
            .unwrap();
    assert_eq!(json["info_gain"].as_str(), Some("both"));
    let results = json["results"].as_array().unwrap();
    let tags: Vec<&str> = results
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        tags,
        [
            "r_gp_ucb",
            "r_gp_ucb_data",
            "sw_gp_ucb",
            "sw_gp_ucb_data",
            "r_amm",
            "r_dmm",
            "sw_dmm"
        ]
    );
    // The problem of the run, rebuilt from the seed the JSON reports.
    let seed = results[0]["seeds"][0].as_u64().unwrap();
    let kernel = Rbf::new(0.5).unwrap();
    let problem = DriftingProblem::paper004(&kernel, 60, 0.1, seed).unwrap();
    let arms = problem.arms();
    let h = gp_ucb_interval(None, 2, 60, problem.variation(60)).unwrap();
    let norm = problem
        .rkhs_norms()
        .unwrap()
        .iter()
        .copied()
        .fold(0.0, f64::max);
    let params = BoundParams::new()
        .sigma(0.1)
        .norm_bound(norm)
        .delta(0.1)
        .scale(1.0)
        .lambda(0.01);
    let greedy = greedy_information_gain(kernel, &arms, 0.01, h).unwrap();
    let cell = |tag: &str| results.iter().find(|c| c["method"] == tag).unwrap();
    for c in results {
        assert_eq!(c["interval"][0].as_u64(), Some(h as u64));
        assert!(c["gamma"][0].as_f64().unwrap() >= 0.0);
    }
    // Greedy: the fixed γ̃; data: the mean γ_t over the run, never above the greedy bound on
    // the maximum over H points.
    for tag in ["r_gp_ucb", "sw_gp_ucb"] {
        let gamma = cell(tag)["gamma"][0].as_f64().unwrap();
        assert!((gamma - greedy).abs() < 1e-9 * greedy);
        let data = cell(&format!("{tag}_data"))["gamma"][0].as_f64().unwrap();
        assert!(data > 0.0 && data <= greedy, "{data} {greedy}");
        let width_greedy = cell(tag)["width"][0].as_f64().unwrap();
        let width_data = cell(&format!("{tag}_data"))["width"][0].as_f64().unwrap();
        assert!(width_data < width_greedy);
    }
    // Cells recomputed through the library.
    let finals = |tag: &str| cell(tag)["final_regret"][0].as_f64().unwrap();
    let mut r_dmm = Restarting::new(Dmm::new(kernel, params).unwrap(), h).unwrap();
    let total = problem.run(&mut r_dmm, 60).unwrap().total();
    assert!((finals("r_dmm") - total).abs() < 1e-9 * total.max(1.0));
    let mut sw_data = SlidingWindow::new(
        GpUcb::new(kernel, params, InformationGain::Data).unwrap(),
        h,
    )
    .unwrap();
    let total = problem.run(&mut sw_data, 60).unwrap().total();
    assert!((finals("sw_gp_ucb_data") - total).abs() < 1e-9 * total.max(1.0));

    // One information gain at a time: the GP-UCB methods appear once.
    for (choice, tag, absent) in [
        ("greedy", "r_gp_ucb", "r_gp_ucb_data"),
        ("data", "r_gp_ucb_data", "r_gp_ucb"),
    ] {
        let args = [
            "reproduce",
            "nonstationary",
            "--kernels",
            "rbf",
            "--methods",
            "r-gp-ucb",
            "--info-gain",
            choice,
            "--reps",
            "1",
            "--horizon",
            "30",
        ];
        let output = kbandit(&args, &dir);
        assert!(output.status.success(), "{output:?}");
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("nonstationary.json")).unwrap())
                .unwrap();
        let tags: Vec<&str> = json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["method"].as_str().unwrap())
            .collect();
        assert_eq!(tags, [tag], "{absent} should not run");
    }
    let bad = kbandit(
        &["reproduce", "nonstationary", "--methods", "r-dmm,r-dmm"],
        &dir,
    );
    assert_fails_cleanly(&bad, "r_dmm twice");
    let bad = kbandit(&["reproduce", "nonstationary", "--info-gain", "max"], &dir);
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
