//! `--kernel matern --nu ν` on the command line: `kbandit bounds` against the AMM-UCB bound
//! of Flynn & Reeb (2024, Cor. 4.6) computed here with a dense nalgebra Cholesky and the closed
//! form of the Matérn kernel at ν = 7/2 (Rasmussen & Williams 2006 Eq. 4.16), `kbandit bench`
//! on a general ν, and the error paths (one line on stderr, exit status 2).
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nalgebra::{DMatrix, DVector};

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kbandit-matern-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

fn kbandit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args(args)
        .output()
        .expect("the kbandit binary runs")
}

const OBSERVATIONS: &str = "x1,x2,y\n0.1,0.2,0.5\n0.6,0.6,-0.1\n0.1,0.2,0.4\n0.9,0.3,0.2\n";
const QUERIES: &str = "x1,x2\n0.1,0.2\n0.5,0.5\n1.0,0.0\n-0.1,-0.2\n";

/// Matérn 7/2 by R&W Eq. 4.16 (p = 3): (1 + z + 2z²/5 + z³/15) e^{−z}, z = √7 r/ℓ.
fn matern72(x: &[f64; 2], y: &[f64; 2], lengthscale: f64) -> f64 {
    let r = ((x[0] - y[0]).powi(2) + (x[1] - y[1]).powi(2)).sqrt();
    let z = 7f64.sqrt() * r / lengthscale;
    (1.0 + z + 0.4 * z * z + z * z * z / 15.0) * (-z).exp()
}

/// AMM-UCB (a = a0 = σ²/c): μ ± √((σ² ld + σ²B²/c·… ) / a) ρ, as in tests/integration/cli_bounds.rs.
fn amm_by_hand(
    data: &[([f64; 2], f64)],
    queries: &[[f64; 2]],
    lengthscale: f64,
    (sigma, b, delta, c): (f64, f64, f64, f64),
) -> Vec<[f64; 3]> {
    let k = |x: &[f64; 2], y: &[f64; 2]| matern72(x, y, lengthscale);
    let a = sigma * sigma / c;
    let t = data.len();
    let gram = DMatrix::from_fn(t, t, |i, j| k(&data[i].0, &data[j].0));
    let chol = (&gram + DMatrix::identity(t, t) * a).cholesky().unwrap();
    let y = DVector::from_iterator(t, data.iter().map(|d| d.1));
    let log_det = crate::common::log_det_ratio(&chol, a);
    let width = ((sigma * sigma * log_det + a * b * b + 2.0 * sigma * sigma * (1.0 / delta).ln())
        / a)
        .sqrt();
    queries
        .iter()
        .map(|x| {
            let kx = DVector::from_iterator(t, data.iter().map(|d| k(&d.0, x)));
            let mean = kx.dot(&chol.solve(&y));
            let spread = width * (1.0 - kx.dot(&chol.solve(&kx))).max(0.0).sqrt();
            [mean, mean - spread, mean + spread]
        })
        .collect()
}

fn parse_output(stdout: &[u8]) -> Vec<[f64; 3]> {
    let text = String::from_utf8(stdout.to_vec()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("mean,lcb,ucb"));
    lines
        .map(|line| {
            let v: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

fn bounds_args<'a>(data: &'a str, query: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["bounds", "--data", data, "--query", query, "--bound", "amm"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn bounds_with_general_nu_match_amm_by_hand() {
    let dir = scratch_dir("amm");
    let data = write(&dir, "obs.csv", OBSERVATIONS);
    let query = write(&dir, "points.csv", QUERIES);
    let (data, query) = (data.to_str().unwrap(), query.to_str().unwrap());
    let params = [
        "--lengthscale",
        "0.4",
        "--sigma",
        "0.2",
        "--norm-bound",
        "3",
        "--delta",
        "0.05",
        "--scale",
        "2",
    ];
    let mut extra = vec!["--kernel", "matern", "--nu", "3.5"];
    extra.extend_from_slice(&params);
    let out = kbandit(&bounds_args(data, query, &extra));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = parse_output(&out.stdout);
    let observations = [
        ([0.1, 0.2], 0.5),
        ([0.6, 0.6], -0.1),
        ([0.1, 0.2], 0.4),
        ([0.9, 0.3], 0.2),
    ];
    let queries = [[0.1, 0.2], [0.5, 0.5], [1.0, 0.0], [-0.1, -0.2]];
    let want = amm_by_hand(&observations, &queries, 0.4, (0.2, 3.0, 0.05, 2.0));
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        for (a, b) in g.iter().zip(w) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{g:?} vs {w:?}");
        }
    }
    // ν = 2.5 given through --nu is the matern52 kernel.
    let mut extra = vec!["--kernel", "matern", "--nu", "2.5"];
    extra.extend_from_slice(&params);
    let general = kbandit(&bounds_args(data, query, &extra));
    let mut extra = vec!["--kernel", "matern52"];
    extra.extend_from_slice(&params);
    let named = kbandit(&bounds_args(data, query, &extra));
    assert!(general.status.success() && named.status.success());
    assert_eq!(general.stdout, named.stdout);
    assert_ne!(general.stdout, out.stdout);
}

#[track_caller]
fn assert_refused(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("kbandit: ") && stderr.contains(needle),
        "{stderr}"
    );
}

#[test]
fn bad_nu_is_refused_with_one_line() {
    let dir = scratch_dir("errors");
    let data = write(&dir, "obs.csv", OBSERVATIONS);
    let query = write(&dir, "points.csv", QUERIES);
    let (data, query) = (data.to_str().unwrap(), query.to_str().unwrap());
    // `--nu=-inf`: clap would read a separate `-inf` as an option.
    for nu in ["0", "-1", "nan", "inf", "-inf", "100.5", "1e300"] {
        let nu = format!("--nu={nu}");
        let out = kbandit(&bounds_args(
            data,
            query,
            &["--kernel", "matern", &nu, "--lengthscale", "0.5"],
        ));
        assert_refused(&out, "--nu: invalid parameter `nu`");
    }
    let out = kbandit(&bounds_args(
        data,
        query,
        &["--kernel", "matern", "--lengthscale", "0.5"],
    ));
    assert_refused(&out, "--nu is required for the matern kernel");
    for kernel in ["rbf", "matern52", "matern32", "matern12", "linear"] {
        let out = kbandit(&bounds_args(
            data,
            query,
            &["--kernel", kernel, "--nu", "3.5", "--lengthscale", "0.5"],
        ));
        assert_refused(&out, "--nu applies to the matern kernel only");
    }
    let out = kbandit(&bounds_args(
        data,
        query,
        &["--kernel", "matern", "--nu", "3.5"],
    ));
    assert_refused(&out, "--lengthscale is required for the matern kernel");
    let out = kbandit(&bounds_args(
        data,
        query,
        &["--kernel", "matern", "--nu", "3.5", "--lengthscale", "-1"],
    ));
    assert_refused(&out, "--lengthscale");
}

#[test]
fn bench_times_a_general_nu() {
    let small = ["--t", "20", "--arms", "5", "--rounds", "3", "--budget", "0"];
    let mut args = vec!["bench", "--kernel", "matern", "--nu", "3.5"];
    args.extend_from_slice(&small);
    let out = kbandit(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["kernel"], "matern");
    assert_eq!(line["nu"], 3.5);
    assert_eq!(line["t"], 20);
    let mut args = vec!["bench"];
    args.extend_from_slice(&small);
    let default = kbandit(&args);
    let line: serde_json::Value = serde_json::from_slice(&default.stdout).unwrap();
    assert_eq!(
        (line["kernel"].as_str(), line["nu"].as_f64()),
        (Some("matern52"), Some(2.5))
    );
    for bad in [
        vec!["bench", "--kernel", "matern", "--nu", "0"],
        vec!["bench", "--kernel", "matern"],
        vec!["bench", "--nu", "3.5"],
        vec![
            "bench",
            "--kernel",
            "matern",
            "--nu",
            "3.5",
            "--report",
            "never-written.md",
        ],
    ] {
        let out = kbandit(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
    assert!(!Path::new("never-written.md").exists());
}

#[test]
fn reproductions_refuse_the_general_matern() {
    for experiment in ["table1", "nonstationary"] {
        let out = kbandit(&[
            "reproduce",
            experiment,
            "--kernels",
            "matern",
            "--reps",
            "1",
        ]);
        assert_refused(&out, "not matern");
    }
}
