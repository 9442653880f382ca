//! `kbandit reproduce contextual --sweep` run as a process on a tiny horizon: the documented
//! JSON shape (which parameters each method reports), the configurations of Zenati et al.
//! (2022)'s Figures 1–5 and 7–12, a BBKB and a CBBKB point recomputed through the library
//! from the seeds the JSON reports, the plots, and the error paths (one line, exit status 2).
#![cfg(feature = "cli")]

use crate::common::cli;

use cli::{assert_fails_cleanly, scratch_dir};

use std::path::Path;
use std::process::{Command, Output};

use kernel_bandits::bound::BatchFeedback;
use kernel_bandits::env::{ContextualConfig, ContextualEnv, ContextualProblem};
use kernel_bandits::prelude::*;
use serde_json::Value;

fn kbandit(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args(["reproduce", "contextual", "--sweep"])
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("the kbandit binary runs")
}

const HORIZON: usize = 60;

#[test]
fn sweep_outputs_have_the_documented_shape_and_match_the_library() {
    let dir = scratch_dir("sweep", "shape");
    let horizon = HORIZON.to_string();
    let args = [
        "--envs",
        "bump,chessboard",
        "--reps",
        "2",
        "--horizon",
        &horizon,
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("| chessboard | CBBKB | 10 | – | 3 |"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(dir.join("contextual_sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (json["horizon"].as_u64(), json["reps"].as_u64()),
        (Some(HORIZON as u64), Some(2))
    );
    let results = json["results"].as_array().unwrap();
    // Per environment: EK-UCB, BKB and K-UCB over 3 λ, BBKB and CBBKB over 3 λ × 3 C̃, and on
    // 'Bump' EK-UCB's μ ∈ {1, 100} at λ = 10 (Figure 1).
    let count = |env: &str| results.iter().filter(|r| r["env"] == env).count();
    assert_eq!((count("bump"), count("chessboard")), (29, 27));
    let mut checked = 0;
    for point in results {
        let method = point["method"].as_str().unwrap();
        let env = point["env"].as_str().unwrap();
        let lambda = point["lambda"].as_f64().unwrap();
        assert!([1.0, 10.0, 100.0].contains(&lambda));
        assert_eq!(point.get("mu").is_some(), method == "ek_ucb", "{method}");
        let batched = matches!(method, "bbkb" | "cbbkb");
        assert_eq!(point.get("threshold").is_some(), batched, "{method}");
        if let Some(mu) = point.get("mu").and_then(Value::as_f64) {
            assert!(
                mu == lambda || (env == "bump" && lambda == 10.0 && [1.0, 100.0].contains(&mu))
            );
        }
        let sketched = method != "k_ucb";
        assert_eq!(point.get("dictionary_size").is_some(), sketched);
        assert_eq!(point.get("agent_seeds").is_some(), sketched);
        assert_eq!(point["final_regret"].as_array().unwrap().len(), 2);
        for t in point["wall_time_s"].as_array().unwrap() {
            assert!(t.as_f64().unwrap() >= 0.0);
        }
        // Recompute two batched points through the library.
        let threshold = point["threshold"].as_f64().unwrap_or(f64::NAN);
        if env == "chessboard" && batched && lambda == 1.0 && threshold == 30.0 {
            let play = |rep: usize, feedback| {
                let params = SketchParams::new()
                    .lambda(1.0)
                    .mu(1.0)
                    .beta(0.1)
                    .epsilon(0.5)
                    .gamma(0.1)
                    .qbar(2.0)
                    .batch_threshold(30.0)
                    .batch_feedback(feedback);
                let problem = ContextualProblem::new(
                    ContextualEnv::Chessboard,
                    ContextualConfig::default(),
                    point["seeds"][rep].as_u64().unwrap(),
                )
                .unwrap();
                let agent_seed = point["agent_seeds"][rep].as_u64().unwrap();
                let bound = Bkb::new(Rbf::new(0.1).unwrap(), params, agent_seed).unwrap();
                let mut agent = UcbAgent::new(bound);
                let trace = problem.run(&mut agent, HORIZON).unwrap();
                (trace.total(), agent.bound().dictionary_size() as u64)
            };
            let (this, other) = match method {
                "bbkb" => (BatchFeedback::AtBatchEnd, BatchFeedback::Immediate),
                _ => (BatchFeedback::Immediate, BatchFeedback::AtBatchEnd),
            };
            let mut told_apart = false;
            for rep in 0..2 {
                let (regret, dictionary) = play(rep, this);
                let reported = point["final_regret"][rep].as_f64().unwrap();
                assert!(
                    (regret - reported).abs() < 1e-9,
                    "{method}: {regret} vs {reported}"
                );
                assert_eq!(point["dictionary_size"][rep].as_u64(), Some(dictionary));
                told_apart |= (play(rep, other).0 - reported).abs() > 1e-6;
            }
            // The two feedback modes play differently here, so the check tells them apart.
            assert!(told_apart, "{method}");
            checked += 1;
        }
    }
    assert_eq!(checked, 2);
    for env in ["bump", "chessboard"] {
        for ext in ["png", "svg"] {
            let path = dir.join(format!("contextual_sweep_{env}.{ext}"));
            assert!(
                std::fs::metadata(&path).unwrap().len() > 1000,
                "{}",
                path.display()
            );
        }
    }
    assert!(!dir.join("contextual_sweep_step_diagonal.png").exists());
}

/// A subset of methods and parameters, and no extra μ.
#[test]
fn sweep_honours_its_lists() {
    let dir = scratch_dir("sweep", "lists");
    let args = [
        "--envs",
        "bump",
        "--methods",
        "ek-ucb,bbkb",
        "--lambdas",
        "10",
        "--thresholds",
        "0,5",
        "--extra-mus",
        "2",
        "--reps",
        "1",
        "--horizon",
        "20",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let text = std::fs::read_to_string(dir.join("contextual_sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let points: Vec<(String, Option<f64>, Option<f64>)> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["method"].as_str().unwrap().to_string(),
                p["mu"].as_f64(),
                p["threshold"].as_f64(),
            )
        })
        .collect();
    assert_eq!(
        points,
        vec![
            ("ek_ucb".into(), Some(10.0), None),
            ("ek_ucb".into(), Some(2.0), None),
            ("bbkb".into(), None, Some(0.0)),
            ("bbkb".into(), None, Some(5.0)),
        ]
    );
}

#[test]
fn bad_sweep_arguments_fail_cleanly() {
    let dir = scratch_dir("sweep", "bad");
    for (args, needle) in [
        (&["--lambdas", "0"][..], "--lambdas"),
        (&["--lambdas", "1,nan"], "--lambdas"),
        (&["--lambdas", "10,10"], "twice"),
        (&["--thresholds", "-1"], "threshold"),
        (&["--thresholds", "3,3"], "twice"),
        (&["--thresholds", "inf"], "threshold"),
        (&["--extra-mus", "0"], "--extra-mus"),
        (&["--horizon", "0"], "--horizon"),
        (&["--methods", "bbkb,bbkb"], "twice"),
    ] {
        let output = kbandit(args, &dir);
        assert_fails_cleanly(&output, needle);
    }
    assert!(!dir.join("contextual_sweep.json").exists());
}
