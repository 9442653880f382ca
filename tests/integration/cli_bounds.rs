//! `kbandit bounds` run as a process: its output against bounds computed here from a dense
//! nalgebra Cholesky and the formulas of Flynn & Reeb (2024), and every error path (one line on stderr
//! naming the file and line, exit status 2).
#![cfg(feature = "cli")]

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nalgebra::{DMatrix, DVector};

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kbandit-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `kbandit bounds --data D --query Q --kernel K --bound B` followed by `extra`.
fn bounds(data: &Path, query: &Path, kernel: &str, bound: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .arg("bounds")
        .arg("--data")
        .arg(data)
        .arg("--query")
        .arg(query)
        .args(["--kernel", kernel, "--bound", bound])
        .args(extra)
        .output()
        .expect("the kbandit binary runs")
}

const OBSERVATIONS: &str = "x1,x2,y\n0.1,0.2,0.5\n0.6,0.6,-0.1\n0.1,0.2,0.4\n0.9,0.3,0.2\n";
const QUERIES: &str = "x1,x2\n0.1,0.2\n0.5,0.5\n1.0,0.0\n";

/// AMM-UCB or AY-GP-UCB (they share the form μ_a ± w ρ_a) by hand, RBF kernel.
fn by_hand(
    data: &[([f64; 2], f64)],
    queries: &[[f64; 2]],
    lengthscale: f64,
    (sigma, b, delta, c): (f64, f64, f64, f64),
    ay: bool,
) -> Vec<[f64; 3]> {
    let k = |x: &[f64; 2], y: &[f64; 2]| {
        let r2 = (x[0] - y[0]).powi(2) + (x[1] - y[1]).powi(2);
        (-r2 / (2.0 * lengthscale * lengthscale)).exp()
    };
    let a = sigma * sigma / c;
    let t = data.len();
    let gram = DMatrix::from_fn(t, t, |i, j| k(&data[i].0, &data[j].0));
    let regularised = &gram + DMatrix::identity(t, t) * a;
    let chol = regularised.clone().cholesky().unwrap();
    let y = DVector::from_iterator(t, data.iter().map(|d| d.1));
    let log_det = crate::common::log_det_ratio(&chol, a);
    let log_inv_delta = (1.0 / delta).ln();
    let width = if ay {
        (sigma * (log_det + 2.0 * log_inv_delta).sqrt() + a.sqrt() * b) / a.sqrt()
    } else {
        ((sigma * sigma * log_det + a * b * b + 2.0 * sigma * sigma * log_inv_delta) / a).sqrt()
    };
    queries
        .iter()
        .map(|x| {
            let kx = DVector::from_iterator(t, data.iter().map(|d| k(&d.0, x)));
            let mean = kx.dot(&chol.solve(&y));
            let variance = 1.0 - kx.dot(&chol.solve(&kx));
            let spread = width * variance.max(0.0).sqrt();
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

#[test]
fn amm_and_ay_match_the_formulas_by_hand() {
    let dir = scratch_dir("formulas");
    let data = write(&dir, "obs.csv", OBSERVATIONS);
    let query = write(&dir, "points.csv", QUERIES);
    let observations = [
        ([0.1, 0.2], 0.5),
        ([0.6, 0.6], -0.1),
        ([0.1, 0.2], 0.4),
        ([0.9, 0.3], 0.2),
    ];
    let queries = [[0.1, 0.2], [0.5, 0.5], [1.0, 0.0]];
    for (bound, ay) in [("amm", false), ("ay", true)] {
        let out = bounds(&data, &query, "rbf", bound, &PRIOR_ARGS);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = parse_output(&out.stdout);
        let want = by_hand(&observations, &queries, 0.4, (0.2, 3.0, 0.05, 2.0), ay);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            for (a, b) in g.iter().zip(w) {
                assert!(
                    (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                    "{bound}: {g:?} vs {w:?}"
                );
            }
        }
    }
}

#[test]
fn every_bound_and_kernel_runs_and_orders_its_output() {
    let dir = scratch_dir("all");
    let data = write(&dir, "obs.csv", OBSERVATIONS);
    let query = write(&dir, "points.csv", QUERIES);
    for kernel in ["rbf", "matern12", "matern32", "matern52", "linear"] {
        for bound in ["ay", "igp", "amm", "dmm"] {
            let out = bounds(&data, &query, kernel, bound, &["--lengthscale", "0.5"]);
            assert!(out.status.success(), "{kernel}/{bound}");
            let rows = parse_output(&out.stdout);
            assert_eq!(rows.len(), 3);
            assert!(
                rows.iter().all(|[_, lcb, ucb]| lcb <= ucb),
                "{kernel}/{bound}"
            );
        }
    }
}

/// Runs `bounds` on the given file contents and returns (status, stderr).
fn failing(data: &str, query: &str, extra: &[&str]) -> (Option<i32>, String) {
    // Named by a hash of the whole input: tests run in parallel threads, and two cases must
    // not share a directory.
    let mut hasher = std::hash::DefaultHasher::new();
    (data, query, extra).hash(&mut hasher);
    let dir = scratch_dir(&format!("{:x}", hasher.finish()));
    let data_path = write(&dir, "obs.csv", data);
    let query_path = write(&dir, "points.csv", query);
    let mut args = vec!["--lengthscale", "0.5"];
    args.extend_from_slice(extra);
    let out = bounds(&data_path, &query_path, "rbf", "dmm", &args);
    assert!(out.stdout.is_empty(), "no output on error");
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn errors_name_the_file_and_line_and_exit_2() {
    let cases: [(&str, &str, &[&str], &str); 9] = [
        ("x,y\n0.1,0.5\n0.2\n", QUERIES, &[], "obs.csv:3:"),
        ("x,y\n0.1,0.5\n0.2,abc\n", QUERIES, &[], "obs.csv:3:"),
        ("x,y\n0.1,0.5\n0.2,NaN\n", QUERIES, &[], "obs.csv:3:"),
        ("x,y\n0.1,0.5\ninf,0.2\n", QUERIES, &[], "obs.csv:3:"),
        (OBSERVATIONS, "x1,x2\n", &[], "points.csv: no rows"),
        ("y\n0.5\n", QUERIES, &[], "obs.csv:1:"),
        (
            OBSERVATIONS,
            "x1,x2,x3\n0.1,0.2,0.3\n",
            &[],
            "points.csv:1:",
        ),
        (
            OBSERVATIONS,
            "x1,x2\n0.1,0.2\n0.3,1e999\n",
            &[],
            "points.csv:3:",
        ),
        (OBSERVATIONS, QUERIES, &["--sigma", "-1"], "sigma"),
    ];
    for (data, query, extra, expected) in cases {
        let (code, stderr) = failing(data, query, extra);
        assert_eq!(code, Some(2), "{expected}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(expected), "{expected:?} not in {stderr:?}");
    }
    for (flag, value) in [
        ("--norm-bound", "0"),
        ("--delta", "1.5"),
        ("--scale", "0"),
        ("--lambda", "-2"),
        ("--eta", "0"),
    ] {
        let (code, stderr) = failing(OBSERVATIONS, QUERIES, &[flag, value]);
        assert_eq!(code, Some(2), "{flag}: {stderr}");
        assert!(stderr.contains("invalid parameter"), "{flag}: {stderr}");
    }
    // Invalid or missing length-scale, missing file.
    let dir = scratch_dir("missing");
    let query = write(&dir, "points.csv", QUERIES);
    let missing = dir.join("nope.csv");
    let out = bounds(&missing, &query, "rbf", "amm", &["--lengthscale", "0.5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.csv"));
    for extra in [&["--lengthscale", "-1"][..], &[][..]] {
        let out = bounds(&query, &query, "matern32", "amm", extra);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("lengthscale"));
    }
}

/// `--bound cmm`: the exact bound lies inside DMM's, which lies inside AMM's (Flynn & Reeb 2024 §5),
/// and its mean is μ_{a0}, AMM's mean computed by hand.
#[test]
fn cmm_nests_inside_dmm_and_amm() {
    let dir = scratch_dir("cmm");
    let data = write(&dir, "obs.csv", OBSERVATIONS);
    let query = write(&dir, "points.csv", QUERIES);
    let extra = [
        "--lengthscale",
        "0.4",
        "--sigma",
        "0.2",
        "--norm-bound",
        "3",
        // The nesting holds for one c (Flynn & Reeb 2024 §5); the adaptive default lets AMM
        // and CMM choose theirs apart.
        "--scale",
        "1",
    ];
    let run = |bound: &str| {
        let out = bounds(&data, &query, "matern32", bound, &extra);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        parse_output(&out.stdout)
    };
    let (cmm, dmm, amm) = (run("cmm"), run("dmm"), run("amm"));
    assert_eq!(cmm.len(), 3);
    for j in 0..3 {
        let tol = 1e-9 * (1.0 + amm[j][2].abs());
        assert!(
            (cmm[j][0] - amm[j][0]).abs() <= tol,
            "mean {cmm:?} vs {amm:?}"
        );
        assert!(cmm[j][2] <= dmm[j][2] + tol && dmm[j][2] <= amm[j][2] + tol);
        assert!(cmm[j][1] >= dmm[j][1] - tol && dmm[j][1] >= amm[j][1] - tol);
        assert!(cmm[j][1] <= cmm[j][2]);
    }
}

/// The parameters of these tests: ℓ = 0.4, σ = 0.2, B = 3, δ = 0.05, c = 2 (`PRIOR` gives
/// σ, B, δ, c to the closed forms of the header-only tests).
const PRIOR: (f64, f64, f64, f64) = (0.2, 3.0, 0.05, 2.0);
const PRIOR_ARGS: [&str; 10] = [
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

/// The UCB with no data at a point of prior variance k(x, x), for each bound: with μ = 0,
/// ρ_a² = k(x, x), q_a = 0 and ld_a = 0, every formula of Flynn & Reeb (2024) §4 reduces to a
/// constant times √k(x, x), and the LCB is its negative.
fn prior_ucb(bound: &str, prior_variance: f64, (sigma, b, delta, c): (f64, f64, f64, f64)) -> f64 {
    let log_inv_delta = (1.0 / delta).ln();
    let factor = match bound {
        // R̃_{a0}² / a0 = (σ²B²/c + 2σ² ln(1/δ)) / (σ²/c) (Lemma C.2).
        "amm" => (b * b + 2.0 * c * log_inv_delta).sqrt(),
        // R̃_a²/a = B² + 2σ² ln(1/δ)/a falls with a: the grid's largest a, 10σ²/c, wins.
        "dmm" => (b * b + 2.0 * c * log_inv_delta / 10.0).sqrt(),
        // The infimum over a > 0 is the limit a → ∞: max f(x) over ‖f‖_H ≤ B alone.
        "cmm" => b,
        // (σ√(2 ln(1/δ)) + √λ B)/√λ at the default λ = σ²/c.
        "ay" => {
            let lambda = sigma * sigma / c;
            (sigma * (2.0 * log_inv_delta).sqrt() + lambda.sqrt() * b) / lambda.sqrt()
        }
        // σ√(0 + 0·η + 2 ln(1/δ)) + B: η plays no part before the first observation.
        "igp" => sigma * (2.0 * log_inv_delta).sqrt() + b,
        _ => unreachable!("{bound}"),
    };
    factor * prior_variance.sqrt()
}

/// `a` equals `b` to 1e-12 relative (exactly, for b = 0).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs()
}

/// Writes the query points as CSV with a header of `dim` names.
fn query_csv(points: &[Vec<f64>]) -> String {
    let dim = points[0].len();
    let header: Vec<String> = (1..=dim).map(|i| format!("x{i}")).collect();
    let mut text = header.join(",") + "\n";
    for p in points {
        let row: Vec<String> = p.iter().map(f64::to_string).collect();
        text += &(row.join(",") + "\n");
    }
    text
}

/// Observations with a header and no rows: t = 0, the prior bounds, the input dimension read
/// from the header. RBF has k(x, x) = 1 everywhere; the linear kernel's k(x, x) = ‖x‖² varies
/// (and is 0 at the origin, where every bound collapses to 0).
#[test]
fn header_only_data_gives_the_prior_bounds() {
    let cases: [(&str, Vec<Vec<f64>>); 2] = [
        ("x,y\n", vec![vec![0.3], vec![-1.5], vec![0.0], vec![2.0]]),
        (
            "x1,x2,x3,y\n",
            vec![
                vec![0.1, 0.2, 0.3],
                vec![1.0, -2.0, 0.5],
                vec![0.0, 0.0, 0.0],
            ],
        ),
    ];
    for (header, points) in cases {
        let dim = points[0].len();
        let dir = scratch_dir(&format!("prior-{dim}"));
        let data = write(&dir, "obs.csv", header);
        let query = write(&dir, "points.csv", &query_csv(&points));
        for kernel in ["rbf", "linear"] {
            for bound in ["ay", "igp", "amm", "dmm", "cmm"] {
                let out = bounds(&data, &query, kernel, bound, &PRIOR_ARGS);
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(
                    out.status.success(),
                    "d = {dim}, {kernel}/{bound}: {stderr}"
                );
                let rows = parse_output(&out.stdout);
                assert_eq!(rows.len(), points.len(), "d = {dim}, {kernel}/{bound}");
                for (x, [mean, lcb, ucb]) in points.iter().zip(rows) {
                    let prior_variance = match kernel {
                        "rbf" => 1.0,
                        _ => x.iter().map(|v| v * v).sum(),
                    };
                    let want = prior_ucb(bound, prior_variance, PRIOR);
                    let what = format!("d = {dim}, {kernel}/{bound} at {x:?}");
                    assert_eq!(mean, 0.0, "{what}");
                    assert!(close(ucb, want), "{what}: UCB {ucb} vs {want}");
                    assert!(close(lcb, -want), "{what}: LCB {lcb} vs {}", -want);
                }
            }
        }
    }
}

/// With no observations the header alone fixes the input dimension, so it is checked as the
/// observations would be: against the query points, and for being a header at all.
#[test]
fn header_only_data_with_a_wrong_or_malformed_header_is_an_input_error() {
    let cases: [(&str, &str, &str); 5] = [
        // Two inputs in the header, three in the query points.
        (
            "x1,x2,y\n",
            "x1,x2,x3\n0.1,0.2,0.3\n",
            "points.csv:1: expected 2 columns",
        ),
        // Three inputs in the header, two in the query points.
        ("x1,x2,x3,y\n", QUERIES, "points.csv:1: expected 3 columns"),
        // No input column.
        ("y\n", QUERIES, "obs.csv:1: need at least two columns"),
        // An observation without its header: not a header-only file.
        (
            "0.1,0.2,0.5\n",
            QUERIES,
            "obs.csv:1: `0.1,0.2,0.5` is a row of numbers",
        ),
        // An unnamed column (a stray comma) would shift the dimension.
        (
            "x1,,y\n",
            QUERIES,
            "obs.csv:1: column 2 of the header has no name",
        ),
    ];
    for (data, query, expected) in cases {
        let (code, stderr) = failing(data, query, &[]);
        assert_eq!(code, Some(2), "{expected}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(expected), "{expected:?} not in {stderr:?}");
    }
}

/// An empty or blank observation file is not t = 0: the header that names the columns, and
/// so gives the input dimension, is missing.
#[test]
fn an_empty_data_file_is_an_input_error() {
    for data in ["", "\n", "  \n"] {
        let (code, stderr) = failing(data, QUERIES, &[]);
        assert_eq!(code, Some(2), "{data:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains("obs.csv: no header row"),
            "{data:?}: {stderr}"
        );
    }
}

/// Data that certainly refute B: targets ±5 where every f with ‖f‖_H ≤ B = 0.01 has |f| ≤ 0.01
/// (RBF, k(x, x) = 1), with σ = 0.01, so its residual (≥ 4 · 4.99²) exceeds the data radius
/// R_t² (`checked_bounds` certifies the same on five such points by a dense Cholesky). Both
/// DMM and CMM: a warning on stderr naming the problem and the remedies, the output written
/// all the same, exit status 3; `--allow-crossed` exits with 0 and the same output.
#[test]
fn refuted_assumptions_warn_and_exit_3_unless_allowed() {
    let dir = scratch_dir("refuted");
    let data = write(
        &dir,
        "obs.csv",
        "x1,x2,y\n0.1,0.2,5\n0.6,0.6,-5\n0.9,0.3,5\n0.3,0.9,-5\n",
    );
    let query = write(&dir, "q.csv", QUERIES);
    let tight = [
        "--lengthscale",
        "0.5",
        "--sigma",
        "0.01",
        "--norm-bound",
        "0.01",
        "--delta",
        "0.01",
    ];
    for bound in ["dmm", "cmm"] {
        let out = bounds(&data, &query, "rbf", bound, &tight);
        let stderr = String::from_utf8(out.stderr.clone()).unwrap();
        assert_eq!(out.status.code(), Some(3), "{bound}: {stderr}");
        let rows = parse_output(&out.stdout);
        assert_eq!(rows.len(), 3, "{bound}: the output is written");
        let crossed = rows
            .iter()
            .filter(|r| r[1] > r[2] || r[1].is_nan() || r[2].is_nan())
            .count();
        assert!(
            stderr.starts_with("kbandit: warning: "),
            "{bound}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{bound}: {stderr}");
        if crossed > 0 {
            assert!(
                stderr.contains(&format!("LCB > UCB at {crossed} of 3 points")),
                "{bound}: {stderr}"
            );
        }
        for needle in [
            "confidence set is empty",
            "the data refute the assumptions (σ, B or the kernel)",
            "σ = 0.01, B = 0.01",
            "--norm-bound",
            "--adaptive-norm",
            "Exit status 3",
            "--allow-crossed",
        ] {
            assert!(
                stderr.contains(needle),
                "{bound}: {needle:?} not in {stderr}"
            );
        }
        assert_eq!(crossed, 3, "{bound} crosses at every query here: {stderr}");
        let allowed = bounds(
            &data,
            &query,
            "rbf",
            bound,
            &[&tight[..], &["--allow-crossed"]].concat(),
        );
        assert_eq!(allowed.status.code(), Some(0), "{bound}");
        assert_eq!(allowed.stdout, out.stdout, "{bound}: same output");
        assert_eq!(allowed.stderr, out.stderr, "{bound}: same warning");
    }
    // The same data with a B that explains them (the interpolant's norm √(yᵀK⁻¹y) is far
    // below 1000): no warning, status 0.
    let out = bounds(
        &data,
        &query,
        "rbf",
        "cmm",
        &[
            "--lengthscale",
            "0.5",
            "--sigma",
            "0.01",
            "--norm-bound",
            "1000",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--certify`: the certificate line against the CSV the same run printed — the row of largest
/// LCB (an exact tie, the first query point repeated at the end, goes to the first), the largest
/// UCB over the rows and their difference, with the file's line numbers; a line that says it is
/// an estimate under `--adaptive-norm`; no certificate when the data refute the assumptions.
#[test]
fn certify_prints_the_certificate_of_the_printed_bounds() {
    let dir = scratch_dir("certify");
    let data = write(&dir, "obs.csv", OBSERVATIONS);
    let query = write(
        &dir,
        "points.csv",
        "x1,x2\n0.1,0.2\n0.5,0.5\n1.0,0.0\n0.1,0.2\n",
    );
    let args = [
        "--lengthscale",
        "0.4",
        "--sigma",
        "0.2",
        "--norm-bound",
        "3",
        "--certify",
    ];
    for bound in ["amm", "dmm", "cmm"] {
        let out = bounds(&data, &query, "rbf", bound, &args);
        let stderr = String::from_utf8(out.stderr.clone()).unwrap();
        assert!(out.status.success(), "{bound}: {stderr}");
        let rows = parse_output(&out.stdout);
        let first_max = |column: usize| {
            (1..rows.len()).fold(0, |best, j| {
                if rows[j][column] > rows[best][column] {
                    j
                } else {
                    best
                }
            })
        };
        let (best, top) = (first_max(1), first_max(2));
        assert_eq!(rows[0], rows[3], "{bound}: the repeated point");
        assert_ne!(best, 3, "{bound}");
        let line = stderr
            .lines()
            .find(|l| l.starts_with("certificate: "))
            .unwrap_or_else(|| panic!("{bound}: no certificate in {stderr}"));
        let q = query.display();
        let want = format!(
            "certificate: recommended row {} ({q}:{}), lcb = {}, ucb = {}; max ucb = {} at row {} \
             ({q}:{}); gap = {} (with probability ≥ 1 − δ = 0.99,",
            best + 1,
            best + 2,
            rows[best][1],
            rows[best][2],
            rows[top][2],
            top + 1,
            top + 2,
            rows[top][2] - rows[best][1],
        );
        assert!(line.starts_with(&want), "{bound}:\n{line}\nwanted\n{want}");
    }
    // B learnt from the data: the line says that it is an estimate.
    let out = bounds(
        &data,
        &query,
        "rbf",
        "dmm",
        &[
            "--lengthscale",
            "0.4",
            "--sigma",
            "0.2",
            "--adaptive-norm",
            "0.5",
            "--certify",
        ],
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "(an estimate, not a guarantee: B was learnt from the data by --adaptive-norm)"
        ),
        "{stderr}"
    );
    // Refuted: the warning, exit 3, and no certificate.
    let refuted = write(
        &dir,
        "refuted.csv",
        "x1,x2,y\n0.1,0.2,5\n0.6,0.6,-5\n0.9,0.3,5\n0.3,0.9,-5\n",
    );
    let out = bounds(
        &refuted,
        &query,
        "rbf",
        "cmm",
        &[
            "--lengthscale",
            "0.5",
            "--sigma",
            "0.01",
            "--norm-bound",
            "0.01",
            "--certify",
        ],
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!stderr.contains("certificate:"), "{stderr}");
}
