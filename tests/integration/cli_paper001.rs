//! The Flynn & Reeb (2024) experiments of `kbandit` run as a process, on tiny configurations:
//! the CMM ⊆ DMM ⊆ AMM nesting of `reproduce bands` (the paper's §5.4–5.5), the loose-σ/B runs of
//! `reproduce loose` (App. F.3) recomputed through the library from the seeds they report, the
//! time-per-round files of `reproduce timing` (App. F.1), and the error paths.
#![cfg(feature = "cli")]

use crate::common::cli;

use cli::{assert_fails, floats, kbandit, read_json, scratch_dir};

use std::path::Path;

use kernel_bandits::bound::BoundKind;
use kernel_bandits::prelude::*;
use serde_json::Value;

fn assert_png_and_svg(dir: &Path, stem: &str) {
    let png = std::fs::read(dir.join(format!("{stem}.png"))).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{stem}.png");
    let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
    assert!(svg.starts_with("<svg"), "{stem}.svg");
}

/// Columns of bands.csv: x, f, then LCB and UCB of CMM, DMM, AMM, AY, IGP.
const BANDS_HEADER: &str =
    "x,f,cmm_lcb,cmm_ucb,dmm_lcb,dmm_ucb,amm_lcb,amm_ucb,ay_lcb,ay_ucb,igp_lcb,igp_ucb";

/// The rows of a bands.csv, parsed at full precision.
fn bands_rows(dir: &Path) -> Vec<Vec<f64>> {
    let csv = std::fs::read_to_string(dir.join("bands.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(BANDS_HEADER));
    lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect()
}

/// Flynn & Reeb (2024) §5.4–5.5: CMM's confidence set is the exact one, DMM minimises over a grid
/// of a containing AMM's a = σ²/c, so CMM ⊆ DMM ⊆ AMM at every point, and the widths are ordered.
/// Checked exactly, on several seeds and on a single observation (where the bands are widest),
/// a clustered set and many observations.
#[test]
fn bands_nest_cmm_inside_dmm_inside_amm_at_every_grid_point() {
    for (seed, observations) in [("0", "30"), ("1", "1"), ("2", "5"), ("3", "60")] {
        let dir = scratch_dir("p001", &format!("bands-{seed}"));
        let args = [
            "reproduce",
            "bands",
            "--grid",
            "61",
            "--seed",
            seed,
            "--observations",
            observations,
        ];
        let output = kbandit(&args, &dir);
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let order: Vec<usize> = ["| CMM-UCB |", "| DMM-UCB |", "| AMM-UCB |", "| IGP-UCB |"]
            .iter()
            .map(|row| {
                stdout
                    .find(row)
                    .unwrap_or_else(|| panic!("{row} in {stdout}"))
            })
            .collect();
        assert!(order.is_sorted(), "CMM-UCB first: {stdout}");
        let rows = bands_rows(&dir);
        assert_eq!(rows.len(), 61);
        for row in &rows {
            let (cmm, dmm, amm) = ((row[2], row[3]), (row[4], row[5]), (row[6], row[7]));
            assert!(cmm.0 <= cmm.1, "CMM's LCB above its UCB: {row:?}");
            assert!(
                dmm.0 <= cmm.0 && cmm.1 <= dmm.1,
                "CMM outside DMM (seed {seed}): {row:?}"
            );
            assert!(
                amm.0 <= dmm.0 && dmm.1 <= amm.1,
                "DMM outside AMM (seed {seed}): {row:?}"
            );
            assert!(cmm.1 - cmm.0 <= dmm.1 - dmm.0 && dmm.1 - dmm.0 <= amm.1 - amm.0);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The CMM columns are the library's CMM-UCB on the observations the run wrote, with the
/// paper's parameters for T = 1000 (Matérn 3/2, ℓ = 0.5, d = 1): the CLI wires data and
/// parameters through.
#[test]
fn bands_cmm_columns_are_the_library_bound_on_the_written_observations() {
    let dir = scratch_dir("p001", "bands-cmm");
    let args = ["reproduce", "bands", "--grid", "11", "--observations", "7"];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let kernel = Matern::new(1.5, 0.5).unwrap();
    let params = BoundParams::paper_defaults(&kernel, 1, 1000);
    let mut cmm = Cmm::new(kernel, params).unwrap();
    let observations = std::fs::read_to_string(dir.join("bands_observations.csv")).unwrap();
    for line in observations.lines().skip(1) {
        let (x, y) = line.split_once(',').unwrap();
        cmm.observe(&[x.parse().unwrap()], y.parse().unwrap())
            .unwrap();
    }
    let rows = bands_rows(&dir);
    let grid: Vec<[f64; 1]> = rows.iter().map(|r| [r[0]]).collect();
    let want = cmm.bounds(&grid).unwrap();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(
            (row[2], row[3]),
            (want.lcb[i], want.ucb[i]),
            "grid point {i}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A final regret recomputed through the library: `method` assuming (σ, B) on the problem with
/// the given seed, true σ and true ‖f‖ (Matérn 5/2, ℓ = 0.5, d = 3, T rounds).
fn library_regret(
    method: &str,
    assumed: (f64, f64),
    truth: (f64, f64),
    seed: u64,
    horizon: usize,
) -> f64 {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let config = SyntheticConfig {
        noise_sd: truth.0,
        norm_bound: truth.1,
        ..SyntheticConfig::default()
    };
    let problem = SyntheticProblem::new(kernel, config, seed).unwrap();
    let params = BoundParams::paper_defaults(&kernel, 3, horizon)
        .sigma(assumed.0)
        .norm_bound(assumed.1);
    let trace = match method {
        "dmm" => problem.run(
            &mut UcbAgent::new(Dmm::new(kernel, params).unwrap()),
            horizon,
        ),
        "ay" => problem.run(
            &mut UcbAgent::new(Ay::new(kernel, params).unwrap()),
            horizon,
        ),
        other => panic!("no library rerun for {other}"),
    };
    trace.unwrap().total()
}

/// `reproduce loose`: the documented JSON and CSV shapes and the plot; random agents identical
/// under every assumed pair; cells recomputed through the library with the assumed values in
/// the bound and the true ones in the problem; and the pair of true values equal to
/// `reproduce table1`'s cell for the same seed.
#[test]
fn loose_runs_each_assumed_pair_on_the_true_problem() {
    let dir = scratch_dir("p001", "loose");
    let args = [
        "reproduce",
        "loose",
        "--reps",
        "2",
        "--horizon",
        "25",
        "--methods",
        "dmm,ay,random",
        "--assumed-sigma",
        "0.1,0.3",
        "--assumed-norm",
        "10,25",
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains(
            "| method | σ = 0.1, B = 10 | σ = 0.1, B = 25 | σ = 0.3, B = 10 | σ = 0.3, B = 25 |"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("relative to the true values (σ = 0.1, B = 10)"),
        "{stdout}"
    );
    assert!(stdout.contains("| Random | 1.00× | 1.00× | 1.00× | 1.00× |"));

    let json = read_json(&dir.join("loose.json"));
    for (key, want) in [
        ("kernel", Value::from("matern52")),
        ("lengthscale", Value::from(0.5)),
        ("dims", Value::from(3)),
        ("horizon", Value::from(25)),
        ("reps", Value::from(2)),
        ("true_sigma", Value::from(0.1)),
        ("true_norm", Value::from(10.0)),
        ("delta", Value::from(0.01)),
        ("arms_per_round", Value::from(100)),
    ] {
        assert_eq!(json[key], want, "{key}");
    }
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 3 * 4);
    let cell = |method: &str, sigma: f64, norm: f64| {
        results
            .iter()
            .find(|c| {
                c["method"] == method && c["assumed_sigma"] == sigma && c["assumed_norm"] == norm
            })
            .unwrap_or_else(|| panic!("cell {method} {sigma} {norm}"))
    };
    for c in results {
        assert_eq!(floats(&c["final_regret"]).len(), 2);
        assert_eq!(floats(&c["wall_time_s"]).len(), 2);
        assert_eq!(floats(&c["curve_mean"]).len(), 25);
        assert_eq!(floats(&c["curve_std"]).len(), 25);
        assert_eq!(
            c["seeds"], json["results"][0]["seeds"],
            "one problem per repetition"
        );
        let finals = floats(&c["final_regret"]);
        let mean = (finals[0] + finals[1]) / 2.0;
        assert!((floats(&c["curve_mean"])[24] - mean).abs() <= 1e-12 * mean.max(1.0));
    }
    let random = cell("random", 0.1, 10.0)["final_regret"].clone();
    for (s, b) in [(0.1, 25.0), (0.3, 10.0), (0.3, 25.0)] {
        assert_eq!(cell("random", s, b)["final_regret"], random);
    }
    let seeds: Vec<u64> = json["results"][0]["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    for (method, s, b) in [("dmm", 0.3, 25.0), ("ay", 0.1, 25.0), ("dmm", 0.1, 10.0)] {
        let finals = floats(&cell(method, s, b)["final_regret"]);
        for (r, &seed) in seeds.iter().enumerate() {
            let want = library_regret(method, (s, b), (0.1, 10.0), seed, 25);
            assert!(
                (finals[r] - want).abs() <= 1e-9 * want.max(1.0),
                "{method} ({s}, {b}) rep {r}: {} vs {want}",
                finals[r]
            );
        }
    }
    // The assumed values reach the bound: a loose B changes DMM's choices.
    assert_ne!(
        cell("dmm", 0.3, 25.0)["final_regret"],
        cell("dmm", 0.1, 10.0)["final_regret"]
    );

    let csv = std::fs::read_to_string(dir.join("loose.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("method,assumed_sigma,assumed_norm,rep,seed,final_regret,wall_time_s")
    );
    assert_eq!(lines.count(), 3 * 4 * 2);
    assert_png_and_svg(&dir, "loose");

    // The true pair is `reproduce table1`'s cell: same seeds, same problem, same bound.
    let table1 = scratch_dir("p001", "loose-table1");
    let args = [
        "reproduce",
        "table1",
        "--kernels",
        "matern52",
        "--lengthscales",
        "0.5",
        "--methods",
        "dmm",
        "--reps",
        "2",
        "--horizon",
        "25",
    ];
    let output = kbandit(&args, &table1);
    assert!(output.status.success(), "{output:?}");
    let t1 = read_json(&table1.join("table1.json"));
    assert_eq!(t1["results"][0]["seeds"], json["results"][0]["seeds"]);
    assert_eq!(
        t1["results"][0]["final_regret"],
        cell("dmm", 0.1, 10.0)["final_regret"]
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&table1);
}

/// `--true-sigma` and `--true-norm` set the problem, not the bound.
#[test]
fn loose_true_values_set_the_problem() {
    let dir = scratch_dir("p001", "loose-truth");
    let args = [
        "reproduce",
        "loose",
        "--reps",
        "1",
        "--horizon",
        "15",
        "--methods",
        "ay",
        "--assumed-sigma",
        "0.2",
        "--assumed-norm",
        "6",
        "--true-sigma",
        "0.05",
        "--true-norm",
        "4",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    // The true pair was not run: no relative table.
    assert!(!stdout.contains("relative to the true values"), "{stdout}");
    let json = read_json(&dir.join("loose.json"));
    assert_eq!(json["true_sigma"], 0.05);
    assert_eq!(json["true_norm"], 4.0);
    let cell = &json["results"][0];
    let seed = cell["seeds"][0].as_u64().unwrap();
    let want = library_regret("ay", (0.2, 6.0), (0.05, 4.0), seed, 15);
    let got = floats(&cell["final_regret"])[0];
    assert!(
        (got - want).abs() <= 1e-9 * want.max(1.0),
        "{got} vs {want}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loose_rejects_bad_arguments() {
    let dir = scratch_dir("p001", "loose-bad");
    // Every case fails in the argument checks, before any run.
    let base = ["reproduce", "loose", "--horizon", "5"];
    let cases: [(&[&str], &str); 9] = [
        (&["--assumed-sigma", "-0.1"], "--assumed-sigma value -0.1"),
        (&["--assumed-sigma", "0"], "--assumed-sigma value 0"),
        (&["--assumed-norm", "10,NaN"], "--assumed-norm value NaN"),
        (&["--assumed-norm", "10,10"], "twice"),
        (&["--true-sigma", "-0.1"], "--true-sigma -0.1"),
        (&["--true-norm", "0"], "--true-norm value 0"),
        (&["--delta", "1.5"], "--delta 1.5"),
        (&["--reps", "0"], "--reps"),
        (&["--methods", "ay,ay"], "twice"),
    ];
    for (extra, needle) in cases {
        let output = kbandit(&[&base[..], extra].concat(), &dir);
        assert_fails(&output, needle, true);
    }
    let output = kbandit(&[&base[..], &["--kernel", "linear"]].concat(), &dir);
    assert_fails(&output, "linear", true);
    // Lists that do not parse: clap's error, status 2.
    let output = kbandit(&[&base[..], &["--assumed-sigma", "0.1,abc"]].concat(), &dir);
    assert_fails(&output, "abc", false);
    let output = kbandit(&[&base[..], &["--methods", "dmm,ucb"]].concat(), &dir);
    assert_fails(&output, "ucb", false);
    assert!(!dir.exists(), "a rejected run writes nothing");
}

/// `reproduce timing`: the documented JSON and CSV shapes, consistency between the per-round
/// means, the totals and the percentiles, and the three plots.
#[test]
fn timing_outputs_have_the_documented_shape() {
    let dir = scratch_dir("p001", "timing");
    let args = [
        "reproduce",
        "timing",
        "--rounds",
        "12",
        "--reps",
        "2",
        "--bounds",
        "amm,cmm,bkb",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("| bound | t = 12 | median | total per run (s) |"),
        "{stdout}"
    );
    for bound in ["amm", "cmm", "bkb"] {
        assert!(stdout.contains(&format!("| {bound} |")), "{stdout}");
    }
    let json = read_json(&dir.join("timing.json"));
    assert_eq!(json["rounds"], 12);
    assert_eq!(json["reps"], 2);
    assert_eq!(json["threads"], 1);
    assert_eq!(json["kernel"], "matern52");
    assert_eq!(json["arms_per_round"], 100);
    let results = json["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["bound"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["amm", "cmm", "bkb"]);
    let window = json["moving_window"].as_u64().unwrap() as usize;
    for r in results {
        let mean = floats(&r["time_mean_ms"]);
        let std = floats(&r["time_std_ms"]);
        let moving = floats(&r["moving_median_ms"]);
        let totals = floats(&r["total_s"]);
        assert_eq!(
            (mean.len(), std.len(), moving.len(), totals.len()),
            (12, 12, 12, 2)
        );
        assert!(mean.iter().all(|&m| m > 0.0 && m.is_finite()), "{mean:?}");
        assert!(std.iter().all(|&s| s >= 0.0));
        // The mean over repetitions of each run's total is the sum of the per-round means.
        let total_mean = (totals[0] + totals[1]) / 2.0;
        let sum: f64 = mean.iter().sum::<f64>() / 1e3;
        assert!(
            (total_mean - sum).abs() <= 1e-9 * sum,
            "{total_mean} vs {sum}"
        );
        // A centred moving median, recomputed here by counting: as many of the window's
        // values lie below it as above it.
        let half = window / 2;
        for (i, &m) in moving.iter().enumerate() {
            let (lo, hi) = (i.saturating_sub(half), (i + half + 1).min(12));
            let below = mean[lo..hi].iter().filter(|&&v| v < m).count();
            let above = mean[lo..hi].iter().filter(|&&v| v > m).count();
            assert_eq!(below, above, "round {i}: {m} in {:?}", &mean[lo..hi]);
        }
        let (p50, p90, p99) = (
            r["p50_ms"].as_f64().unwrap(),
            r["p90_ms"].as_f64().unwrap(),
            r["p99_ms"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p90 && p90 <= p99, "{r}");
    }
    let csv = std::fs::read_to_string(dir.join("timing.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("t,amm_ms,cmm_ms,bkb_ms"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 12);
    assert!(rows[0].starts_with("1,") && rows[11].starts_with("12,"));
    for stem in ["timing", "timing_zoom", "timing_log"] {
        assert_png_and_svg(&dir, stem);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no `--bounds`, every bound of the crate is timed, in `BoundKind::ALL` order.
#[test]
fn timing_runs_every_bound_by_default() {
    let dir = scratch_dir("p001", "timing-all");
    let output = kbandit(
        &["reproduce", "timing", "--rounds", "3", "--reps", "1"],
        &dir,
    );
    assert!(output.status.success(), "{output:?}");
    let json = read_json(&dir.join("timing.json"));
    let names: Vec<String> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["bound"].as_str().unwrap().to_owned())
        .collect();
    let all: Vec<String> = BoundKind::ALL.iter().map(|k| k.name().to_owned()).collect();
    assert_eq!(names, all);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn timing_rejects_bad_arguments() {
    let dir = scratch_dir("p001", "timing-bad");
    let base = ["reproduce", "timing"];
    let cases: [(&[&str], &str); 5] = [
        (&["--reps", "0"], "--reps"),
        (&["--rounds", "0"], "--rounds"),
        (&["--bounds", "amm,amm"], "amm twice"),
        (&["--lengthscale", "-1"], "--lengthscale -1"),
        (&["--kernel", "linear"], "linear"),
    ];
    for (extra, needle) in cases {
        let output = kbandit(&[&base[..], extra].concat(), &dir);
        assert_fails(&output, needle, true);
    }
    let output = kbandit(&[&base[..], &["--bounds", "amm,ucb"]].concat(), &dir);
    assert_fails(&output, "unknown bound \"ucb\"", false);
    assert!(!dir.exists(), "a rejected run writes nothing");
}
