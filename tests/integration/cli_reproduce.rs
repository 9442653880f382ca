//! `kbandit reproduce` run as a process, on small configurations: the shape of every output
//! file, determinism across thread counts, a cell recomputed here through the library from the
//! seed the JSON reports, and the error paths (one line on stderr, exit status 2).
#![cfg(feature = "cli")]

use crate::common::cli;

use cli::{assert_fails_cleanly, kbandit, scratch_dir};

use std::path::Path;

use kernel_bandits::prelude::*;
use serde_json::Value;

const SMALL: [&str; 12] = [
    "reproduce",
    "table1",
    "--kernels",
    "rbf,matern32",
    "--lengthscales",
    "0.5",
    "--methods",
    "dmm,ay,random",
    "--reps",
    "2",
    "--horizon",
    "40",
];

fn read_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("table1.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn table1_outputs_have_the_documented_shape_and_match_the_library() {
    let dir = scratch_dir("repro", "shape");
    let output = kbandit(&[&SMALL[..], &["--threads", "2"]].concat(), &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("| method | RBF ℓ=0.5 | Matérn 3/2 ℓ=0.5 |"),
        "{stdout}"
    );
    for method in ["Kernel DMM-UCB", "AY-GP-UCB", "Random"] {
        assert!(stdout.contains(&format!("| {method} |")), "{stdout}");
    }
    // d = 3 but T = 40: the paper's table is not printed beside it.
    assert!(!stdout.contains("Flynn & Reeb (2024), Table 1"));

    let json = read_json(&dir);
    assert_eq!(json["horizon"], 40);
    assert_eq!(json["dims"], 3);
    assert_eq!(json["reps"], 2);
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2 * 3);
    for cell in results {
        assert!(["rbf", "matern32"].contains(&cell["kernel"].as_str().unwrap()));
        assert_eq!(cell["lengthscale"], 0.5);
        assert!(["dmm", "ay", "random"].contains(&cell["method"].as_str().unwrap()));
        let finals = cell["final_regret"].as_array().unwrap();
        let mean = cell["curve_mean"].as_array().unwrap();
        let std = cell["curve_std"].as_array().unwrap();
        assert_eq!(finals.len(), 2);
        assert_eq!((mean.len(), std.len()), (40, 40));
        let last_mean = (finals[0].as_f64().unwrap() + finals[1].as_f64().unwrap()) / 2.0;
        assert!((mean[39].as_f64().unwrap() - last_mean).abs() <= 1e-9 * (1.0 + last_mean));
    }

    // Recompute one cell through the library from the reported seed: the UCB agent with
    // DMM-UCB and the paper's parameters (c = T^{-d/(2d+2ν)} for Matérn 3/2).
    let cell = results
        .iter()
        .find(|c| c["kernel"] == "matern32" && c["method"] == "dmm")
        .unwrap();
    for rep in 0..2 {
        let seed = cell["seeds"][rep].as_u64().unwrap();
        let kernel = Matern::new(1.5, 0.5).unwrap();
        let problem = SyntheticProblem::new(kernel, SyntheticConfig::default(), seed).unwrap();
        let params = BoundParams::paper_defaults(&kernel, 3, 40);
        let mut agent = UcbAgent::new(Dmm::new(kernel, params).unwrap());
        let total = problem.run(&mut agent, 40).unwrap().total();
        assert_eq!(cell["final_regret"][rep].as_f64().unwrap(), total);
    }

    let csv = std::fs::read_to_string(dir.join("table1.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("kernel,lengthscale,method,rep,seed,final_regret,wall_time_s")
    );
    assert_eq!(lines.count(), 2 * 3 * 2);
    for stem in ["regret_rbf_0.5", "regret_matern32_0.5"] {
        let png = std::fs::read(dir.join(format!("{stem}.png"))).unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{stem}.png is not a PNG"
        );
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("Kernel DMM-UCB"),
            "{stem}.svg"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn table1_is_the_same_on_one_thread_and_for_a_subset() {
    let (one, two) = (scratch_dir("repro", "one"), scratch_dir("repro", "two"));
    let a = kbandit(&[&SMALL[..], &["--threads", "1"]].concat(), &one);
    assert!(a.status.success(), "{a:?}");
    // Only the Matérn setting and two methods, on two threads: its cells must be unchanged.
    let subset = [
        "reproduce",
        "table1",
        "--kernels",
        "matern32",
        "--methods",
        "random,dmm",
        "--lengthscales",
        "0.5",
        "--reps",
        "2",
        "--horizon",
        "40",
        "--threads",
        "2",
    ];
    let b = kbandit(&subset, &two);
    assert!(b.status.success(), "{b:?}");
    let (ja, jb) = (read_json(&one), read_json(&two));
    for cell in jb["results"].as_array().unwrap() {
        let same = ja["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kernel"] == cell["kernel"] && c["method"] == cell["method"])
            .unwrap();
        assert_eq!(same["final_regret"], cell["final_regret"]);
        assert_eq!(same["curve_mean"], cell["curve_mean"]);
    }
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

#[test]
fn table1_rejects_bad_arguments() {
    let dir = scratch_dir("repro", "bad");
    let base = ["reproduce", "table1", "--horizon", "5"];
    let cases: [(&[&str], &str); 4] = [
        (&["--lengthscales", "-0.5"], "length-scale -0.5"),
        (&["--reps", "0"], "--reps"),
        (&["--dims", "0"], "--dims"),
        (&["--methods", "dmm,dmm"], "dmm"),
    ];
    for (extra, needle) in cases {
        let output = kbandit(&[&base[..], extra].concat(), &dir);
        assert_fails_cleanly(&output, needle);
    }
    // An output directory that cannot be created (a file is in the way).
    let file = std::env::temp_dir().join(format!("kbandit-repro-{}-file", std::process::id()));
    std::fs::write(&file, "not a directory").unwrap();
    let output = kbandit(&[&base[..], &["--methods", "random"]].concat(), &file);
    assert_fails_cleanly(&output, "output directory");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn bands_writes_curves_that_nest_as_the_theory_says() {
    let dir = scratch_dir("repro", "bands");
    let output = kbandit(
        &["reproduce", "bands", "--grid", "51", "--observations", "12"],
        &dir,
    );
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("| DMM-UCB |") && stdout.contains("| IGP-UCB |"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(dir.join("bands.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("x,f,cmm_lcb,cmm_ucb,dmm_lcb,dmm_ucb,amm_lcb,amm_ucb,ay_lcb,ay_ucb,igp_lcb,igp_ucb")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 51);
    for row in &rows {
        for k in 0..5 {
            assert!(row[2 + 2 * k] <= row[3 + 2 * k], "LCB above UCB: {row:?}");
        }
        // DMM's grid contains AMM's regulariser: its band lies inside AMM's.
        assert!(
            row[4] >= row[6] && row[5] <= row[7],
            "DMM outside AMM: {row:?}"
        );
    }
    let observations = std::fs::read_to_string(dir.join("bands_observations.csv")).unwrap();
    assert_eq!(observations.lines().count(), 1 + 12);
    let png = std::fs::read(dir.join("bands.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(
        std::fs::read_to_string(dir.join("bands.svg"))
            .unwrap()
            .contains("<svg")
    );
    let _ = std::fs::remove_dir_all(&dir);

    let output = kbandit(&["reproduce", "bands", "--lengthscale", "0"], &dir);
    assert_fails_cleanly(&output, "invalid arguments");
}

/// `reproduce contextual` on a short horizon: the documented JSON shape, dictionary sizes for
/// the sketched methods only, a K-UCB cell recomputed through the library from the reported
/// seed, and argument errors.
#[test]
fn contextual_outputs_have_the_documented_shape() {
    use kernel_bandits::env::{ContextualConfig, ContextualEnv, ContextualProblem};
    let dir = scratch_dir("repro", "contextual");
    let args = [
        "reproduce",
        "contextual",
        "--reps",
        "2",
        "--horizon",
        "60",
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("| bump | EK-UCB |"), "{stdout}");
    let text = std::fs::read_to_string(dir.join("contextual.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (json["horizon"].as_u64(), json["reps"].as_u64()),
        (Some(60), Some(2))
    );
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 12);
    for cell in results {
        let method = cell["method"].as_str().unwrap();
        assert!(["ek_ucb", "bkb", "k_ucb", "random"].contains(&method));
        let env = cell["env"].as_str().unwrap();
        assert!(["bump", "chessboard", "step_diagonal"].contains(&env));
        assert_eq!(cell["final_regret"].as_array().unwrap().len(), 2);
        assert_eq!(cell["wall_time_s"].as_array().unwrap().len(), 2);
        let sketched = matches!(method, "ek_ucb" | "bkb");
        assert_eq!(cell.get("dictionary_size").is_some(), sketched, "{method}");
        if sketched {
            for m in cell["dictionary_size"].as_array().unwrap() {
                assert!((1..=60).contains(&m.as_u64().unwrap()));
            }
        }
        if method == "k_ucb" && env == "chessboard" {
            // Recompute repetition 0 through the library.
            let seed = cell["seeds"][0].as_u64().unwrap();
            let problem = ContextualProblem::new(
                ContextualEnv::Chessboard,
                ContextualConfig::default(),
                seed,
            )
            .unwrap();
            let mut agent = UcbAgent::new(KUcb::new(Rbf::new(0.1).unwrap(), 10.0, 0.1).unwrap());
            let trace = problem.run(&mut agent, 60).unwrap();
            let reported = cell["final_regret"][0].as_f64().unwrap();
            assert!(
                (trace.total() - reported).abs() < 1e-9,
                "{} vs {reported}",
                trace.total()
            );
        }
    }
    for ext in ["png", "svg"] {
        for kind in ["regret", "time"] {
            let path = dir.join(format!("contextual_step_diagonal_{kind}.{ext}"));
            assert!(
                std::fs::metadata(&path).unwrap().len() > 1000,
                "{}",
                path.display()
            );
        }
    }
    let bad = kbandit(&["reproduce", "contextual", "--lambda", "0"], &dir);
    assert_fails_cleanly(&bad, "--lambda");
    let bad = kbandit(&["reproduce", "contextual", "--methods", "bkb,bkb"], &dir);
    assert_fails_cleanly(&bad, "twice");
}

/// `reproduce nonstationary` on a short horizon: the documented JSON shape, standard errors,
/// R-PERP's elimination log, and argument errors.
#[test]
fn nonstationary_outputs_have_the_documented_shape() {
    let dir = scratch_dir("repro", "nonstationary");
    let args = [
        "reproduce",
        "nonstationary",
        "--reps",
        "2",
        "--horizon",
        "200",
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("| rbf | R-PERP, Eq. 8 width |"), "{stdout}");
    let text = std::fs::read_to_string(dir.join("nonstationary.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (json["horizon"].as_u64(), json["reps"].as_u64()),
        (Some(200), Some(2))
    );
    let results = json["results"].as_array().unwrap();
    // Ten methods by default (the GP-UCB baselines with both information gains) per kernel.
    assert_eq!(results.len(), 20);
    for cell in results {
        let method = cell["method"].as_str().unwrap();
        let methods = [
            "r_perp",
            "r_perp_theory",
            "r_gp_ucb",
            "r_gp_ucb_data",
            "sw_gp_ucb",
            "sw_gp_ucb_data",
            "r_amm",
            "r_dmm",
            "sw_dmm",
            "random",
        ];
        assert!(methods.contains(&method));
        assert!(["rbf", "matern52"].contains(&cell["kernel"].as_str().unwrap()));
        assert_eq!(cell["final_regret"].as_array().unwrap().len(), 2);
        let mean = cell["curve_mean"].as_array().unwrap();
        let se = cell["curve_se"].as_array().unwrap();
        assert_eq!((mean.len(), se.len()), (200, 200));
        // s.e. = sample std / √2 for two seeds: |a − b| / 2.
        let finals: Vec<f64> = cell["final_regret"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let want = (finals[0] - finals[1]).abs() / 2.0;
        assert!((se[199].as_f64().unwrap() - want).abs() < 1e-9 * want.max(1.0));
        assert_eq!(
            cell.get("eliminations").is_some(),
            method.starts_with("r_perp")
        );
    }
    for ext in ["png", "svg"] {
        let path = dir.join(format!("nonstationary_matern52.{ext}"));
        assert!(
            std::fs::metadata(&path).unwrap().len() > 1000,
            "{}",
            path.display()
        );
    }
    let bad = kbandit(&["reproduce", "nonstationary", "--delta", "1.5"], &dir);
    assert_fails_cleanly(&bad, "--delta");
}
