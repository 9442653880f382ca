//! `kbandit bounds --fit / --warmup / --adaptive-norm / --check-noise` and `kbandit reproduce
//! unknown`, run as processes: their output against the library driven here (whose fitting,
//! doubling and noise estimates have their own tests against independent references), the
//! warm-up rows kept out of the bound, and every error path (one line, exit status 2).
#![cfg(feature = "cli")]

use crate::common::cli;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cli::read_json;
use kernel_bandits::bound::{AdaptiveNorm, BoundConfig, BoundKind};
use kernel_bandits::hyper::{FitOptions, KernelFamily, fit_hyperparameters};
use kernel_bandits::prelude::*;

fn scratch_dir(tag: &str, name: &str) -> PathBuf {
    let dir = cli::scratch_dir(tag, name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

fn bounds(data: &Path, query: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .arg("bounds")
        .arg("--data")
        .arg(data)
        .arg("--query")
        .arg(query)
        .args(args)
        .output()
        .expect("the kbandit binary runs")
}

fn parse_output(out: &Output) -> Vec<[f64; 3]> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("mean,lcb,ucb"));
    lines
        .map(|line| {
            let v: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

/// 60 observations of a smooth function of two inputs with deterministic pseudo-noise of
/// scale ≈ 0.1; every fourth input repeats the one before (replicates for `--check-noise`).
fn data() -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut xs: Vec<Vec<f64>> = Vec::new();
    for i in 0..60usize {
        if i % 4 == 3 {
            let previous = xs[i - 1].clone();
            xs.push(previous);
        } else {
            xs.push(vec![
                ((i * 37) % 61) as f64 / 60.0,
                ((i * 17) % 59) as f64 / 58.0,
            ]);
        }
    }
    let ys = xs
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let noise = 0.1 * ((((i * 7919) % 1000) as f64 / 1000.0) * 2.0 - 1.0) * 1.7;
            (3.0 * x[0]).sin() + x[1] * x[1] + noise
        })
        .collect();
    (xs, ys)
}

fn csv(xs: &[Vec<f64>], ys: Option<&[f64]>) -> String {
    let mut text = String::from(if ys.is_some() { "x1,x2,y\n" } else { "x1,x2\n" });
    for (i, x) in xs.iter().enumerate() {
        match ys {
            Some(ys) => text.push_str(&format!("{},{},{}\n", x[0], x[1], ys[i])),
            None => text.push_str(&format!("{},{}\n", x[0], x[1])),
        }
    }
    text
}

fn queries() -> Vec<Vec<f64>> {
    vec![
        vec![0.5, 0.5],
        vec![0.05, 0.95],
        vec![1.0, 0.0],
        vec![0.3, 0.7],
    ]
}

fn assert_close(got: &[[f64; 3]], want: &Bounds, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (j, row) in got.iter().enumerate() {
        for (g, w) in row.iter().zip([want.mean[j], want.lcb[j], want.ucb[j]]) {
            // The CLI prints the shortest representation that reads back as the same f64.
            assert_eq!(*g, w, "{what}: row {j}: {row:?} vs {want:?}");
        }
    }
}

#[test]
fn fit_with_a_warmup_bounds_with_the_later_rows_only() {
    let dir = scratch_dir("unknown", "warmup");
    let (xs, ys) = data();
    let data_path = write(&dir, "obs.csv", &csv(&xs, Some(&ys)));
    let query_path = write(&dir, "q.csv", &csv(&queries(), None));
    let out = bounds(
        &data_path,
        &query_path,
        &[
            "--kernel",
            "matern",
            "--nu",
            "2.5",
            "--bound",
            "dmm",
            "--fit",
            "--warmup",
            "25",
            "--norm-bound",
            "4",
        ],
    );
    let got = parse_output(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("fitted on 25 observations"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // The library: fit on rows 0..25, an empty DMM with the fitted kernel and σ, rows 25.. only.
    let options = FitOptions::new().family(KernelFamily::Matern { nu: 2.5 });
    let fit = fit_hyperparameters(&options, &xs[..25], &ys[..25]).unwrap();
    assert!(stderr.contains(&format!("lengthscale = {}", fit.lengthscales()[0])));
    assert!(stderr.contains(&format!("sigma = {}", fit.noise_sd())));
    let config = BoundConfig::new().params(BoundParams::new().norm_bound(4.0));
    let mut bound = fit.bound(BoundKind::Dmm, &config).unwrap();
    for i in 25..60 {
        bound.observe(&xs[i], ys[i]).unwrap();
    }
    assert_close(&got, &bound.bounds(&queries()).unwrap(), "--warmup 25");

    // Feeding the warm-up rows too gives different bounds: the test would see them leak in.
    let mut leaky = fit.bound(BoundKind::Dmm, &config).unwrap();
    for i in 0..60 {
        leaky.observe(&xs[i], ys[i]).unwrap();
    }
    assert_ne!(leaky.bounds(&queries()).unwrap().ucb[0], got[0][2]);
}

#[test]
fn fit_without_a_warmup_warns_that_the_data_are_reused() {
    let dir = scratch_dir("unknown", "reuse");
    let (xs, ys) = data();
    let data_path = write(&dir, "obs.csv", &csv(&xs, Some(&ys)));
    let query_path = write(&dir, "q.csv", &csv(&queries(), None));
    let out = bounds(
        &data_path,
        &query_path,
        &["--kernel", "rbf", "--bound", "cmm", "--fit"],
    );
    let got = parse_output(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("fitted on 60 observations"), "{stderr}");
    assert!(stderr.contains("warning: the bound reuses"), "{stderr}");
    let fit = fit_hyperparameters(&FitOptions::new().family(KernelFamily::Rbf), &xs, &ys).unwrap();
    let config = BoundConfig::new().params(BoundParams::new());
    let mut bound = fit.bound(BoundKind::Cmm, &config).unwrap();
    for (x, &y) in xs.iter().zip(&ys) {
        bound.observe(x, y).unwrap();
    }
    assert_close(&got, &bound.bounds(&queries()).unwrap(), "--fit, all rows");
}

#[test]
fn adaptive_norm_doubles_as_the_library_and_prints_each_doubling() {
    let dir = scratch_dir("unknown", "adaptive");
    let (xs, ys) = data();
    let data_path = write(&dir, "obs.csv", &csv(&xs, Some(&ys)));
    let query_path = write(&dir, "q.csv", &csv(&queries(), None));
    for kind in [BoundKind::Dmm, BoundKind::Cmm] {
        let out = bounds(
            &data_path,
            &query_path,
            &[
                "--kernel",
                "matern52",
                "--lengthscale",
                "0.4",
                "--bound",
                kind.name(),
                "--adaptive-norm",
                "0.05",
                "--sigma",
                "0.1",
                // a0 = σ²/c = 1: DMM's grid {0.1, …, 10}·a0 reaches the regularisers that refute
                // B here (with c = 1 only CMM, which looks at every a, would see it).
                "--scale",
                "0.01",
            ],
        );
        let got = parse_output(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let params = BoundParams::new().sigma(0.1).norm_bound(0.05).scale(0.01);
        let inner = kind
            .build(
                Matern::new(2.5, 0.4).unwrap(),
                &BoundConfig::new().params(params),
            )
            .unwrap();
        let mut bound = AdaptiveNorm::new(inner).unwrap();
        for (x, &y) in xs.iter().zip(&ys) {
            bound.observe(x, y).unwrap();
        }
        assert!(
            bound.doublings().len() >= 2,
            "{kind}: the test needs doublings, got {:?}",
            bound.doublings()
        );
        let printed = stderr
            .lines()
            .filter(|l| l.starts_with("B refuted"))
            .count();
        assert_eq!(printed, bound.doublings().len(), "{kind}: {stderr}");
        for d in bound.doublings() {
            assert!(
                stderr.contains(&format!(
                    "after {} observations in the bound: {} -> {}",
                    d.observations, d.old_norm, d.new_norm
                )),
                "{kind}: {stderr}"
            );
        }
        assert!(stderr.contains(&format!(
            "B = {} (level {}",
            bound.norm_bound(),
            bound.level()
        )));
        assert_close(&got, &bound.bounds(&queries()).unwrap(), kind.name());
    }
}

#[test]
fn check_noise_reports_both_estimates_and_a_verdict() {
    let dir = scratch_dir("unknown", "noise");
    let (xs, ys) = data();
    let data_path = write(&dir, "obs.csv", &csv(&xs, Some(&ys)));
    let query_path = write(&dir, "q.csv", &csv(&queries(), None));
    let run = |sigma: &str| {
        let out = bounds(
            &data_path,
            &query_path,
            &[
                "--kernel",
                "rbf",
                "--lengthscale",
                "0.5",
                "--bound",
                "amm",
                "--check-noise",
                "--sigma",
                sigma,
            ],
        );
        parse_output(&out);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let estimate =
        kernel_bandits::hyper::estimate_noise(&Rbf::new(0.5).unwrap(), &xs, &ys, 0.95).unwrap();
    let replicates = estimate.replicates.unwrap();
    assert_eq!(replicates.groups, 15);
    let low = run("0.001");
    assert!(
        low.contains("15 replicated inputs (15 degrees of freedom)"),
        "{low}"
    );
    assert!(
        low.contains(&format!("σ̂ = {:.6}", replicates.sigma)),
        "{low}"
    );
    assert!(low.contains("refuted"), "{low}");
    assert!(low.contains("smoother residuals"), "{low}");
    assert!(run("100").contains("loose"));
}

#[test]
fn bad_combinations_fail_with_one_line_and_status_2() {
    let dir = scratch_dir("unknown", "errors");
    let (xs, ys) = data();
    let data_path = write(&dir, "obs.csv", &csv(&xs, Some(&ys)));
    let query_path = write(&dir, "q.csv", &csv(&queries(), None));
    let cases: [(&[&str], &str); 8] = [
        (
            &[
                "--kernel",
                "rbf",
                "--lengthscale",
                "0.5",
                "--bound",
                "amm",
                "--adaptive-norm",
                "1",
            ],
            "needs dmm or cmm",
        ),
        (
            &[
                "--kernel",
                "rbf",
                "--lengthscale",
                "0.5",
                "--bound",
                "dmm",
                "--adaptive-norm",
                "-1",
            ],
            "--adaptive-norm -1",
        ),
        (
            &[
                "--kernel",
                "rbf",
                "--lengthscale",
                "0.5",
                "--bound",
                "dmm",
                "--adaptive-norm",
                "NaN",
            ],
            "--adaptive-norm NaN",
        ),
        (
            &[
                "--kernel",
                "rbf",
                "--lengthscale",
                "0.5",
                "--bound",
                "dmm",
                "--fit",
            ],
            "conflicts with --fit",
        ),
        (
            &["--kernel", "linear", "--bound", "dmm", "--fit"],
            "radial kernel",
        ),
        (
            &[
                "--kernel", "rbf", "--bound", "dmm", "--fit", "--warmup", "1",
            ],
            "--warmup 1",
        ),
        (
            &[
                "--kernel", "rbf", "--bound", "dmm", "--fit", "--warmup", "61",
            ],
            "--warmup 61",
        ),
        (
            &["--kernel", "rbf", "--bound", "dmm", "--warmup", "10"],
            "--fit",
        ),
    ];
    for (args, needle) in cases {
        let out = bounds(&data_path, &query_path, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // --norm-bound and --adaptive-norm are two answers to one question.
    let out = bounds(
        &data_path,
        &query_path,
        &[
            "--kernel",
            "rbf",
            "--lengthscale",
            "0.5",
            "--bound",
            "dmm",
            "--norm-bound",
            "3",
            "--adaptive-norm",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn reproduce_unknown_writes_its_table_and_counts_its_violations() {
    let out_dir = scratch_dir("unknown", "reproduce");
    let out = Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args([
            "reproduce",
            "unknown",
            "--reps",
            "2",
            "--horizon",
            "40",
            "--warmup",
            "12",
            "--dims",
            "2",
            "--initial-norms",
            "0.5",
            "--methods",
            "dmm",
            "--threads",
            "2",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    for scenario in [
        "true (σ = 0.1, B = 10)",
        "loose",
        "doubling from B₀ = 0.5",
        "fitted ℓ, σ",
    ] {
        assert!(stdout.contains(scenario), "{stdout}");
    }
    let json = read_json(&out_dir.join("unknown.json"));
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for cell in results {
        let rounds = cell["violation_rounds"].as_array().unwrap();
        let any = rounds
            .iter()
            .filter(|r| !r.as_array().unwrap().is_empty())
            .count();
        assert_eq!(cell["violating_reps"].as_u64().unwrap() as usize, any);
        for (rep, doublings) in cell["doublings"].as_array().unwrap().iter().enumerate() {
            // B doubles each time, from the scenario's start.
            let mut norm = 0.5;
            for d in doublings.as_array().unwrap() {
                let d = d.as_array().unwrap();
                assert_eq!(d[1].as_f64().unwrap(), norm, "rep {rep}");
                norm *= 2.0;
                assert_eq!(d[2].as_f64().unwrap(), norm, "rep {rep}");
            }
            if cell["scenario"] != "true" && cell["scenario"] != "loose" {
                assert_eq!(cell["final_norm"][rep].as_f64().unwrap(), norm);
            }
        }
    }
    // The fitted scenario's regret includes the warm-up: 12 random rounds cost something.
    let fitted = results
        .iter()
        .find(|c| c["scenario"] == "fitted-doubling-0.5")
        .unwrap();
    assert_eq!(fitted["fitted_sigma"].as_array().unwrap().len(), 2);
    assert!(out_dir.join("unknown.csv").exists() && out_dir.join("unknown_dmm.png").exists());
}
