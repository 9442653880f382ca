//! `kbandit reproduce stopping` at a tiny size: every output file, and the JSON's summaries
//! (when each ε was first certified, the validity counts and margins) recomputed here from the
//! per-round curves it also writes.
#![cfg(feature = "cli")]

use crate::common::cli;

use cli::{assert_fails_cleanly, floats, kbandit, read_json, scratch_dir};

#[test]
fn stopping_writes_its_outputs_and_consistent_summaries() {
    let dir = scratch_dir("stopping", "tiny");
    let args = [
        "reproduce",
        "stopping",
        "--domains",
        "arms",
        "--kernels",
        "rbf,matern52",
        "--methods",
        "dmm,ay,k-ucb,gp-ucb-5",
        "--epsilons",
        "2,0.5",
        "--arms",
        "60",
        "--budget",
        "40",
        "--reps",
        "2",
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "### RBF ℓ = 0.5",
        "### Matérn 5/2 ℓ = 0.5",
        "| DMM-UCB |",
        "| Makarova et al. 2022 / Optuna (heuristic) |",
        "| ε = 2 | ε = 0.5 |",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in {stdout}");
    }
    for file in ["stopping.json", "stopping.csv"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    for kernel in ["rbf", "matern52"] {
        for what in ["gap", "regret"] {
            for ext in ["png", "svg"] {
                let plot = dir.join(format!("stopping_{what}_{kernel}.{ext}"));
                assert!(plot.is_file(), "{}", plot.display());
            }
        }
    }
    let json = read_json(&dir.join("stopping.json"));
    assert_eq!(json["budget"], 40);
    assert_eq!(floats(&json["epsilons"]), [2.0, 0.5]);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 4 * 2);
    let first_at_most = |curve: &[f64], epsilon: f64| curve.iter().position(|&g| g <= epsilon);
    let validity = |gaps: &[f64], regrets: &[f64]| {
        let below = gaps.iter().zip(regrets).filter(|(g, r)| g < r).count();
        let margin = gaps
            .iter()
            .zip(regrets)
            .map(|(g, r)| g - r)
            .fold(f64::INFINITY, f64::min);
        (below, margin)
    };
    for run in runs {
        let method = run["method"].as_str().unwrap();
        let gaps = floats(&run["gap"]);
        let regrets = floats(&run["regret"]);
        assert_eq!(gaps.len(), regrets.len());
        // A run stops at the smallest ε or at the budget (gp-ucb-5 also waits for the
        // Makarova bound's ε).
        assert!(gaps.len() <= 41, "{method}");
        if method != "gp-ucb-5" && gaps.len() < 41 {
            assert!(gaps[gaps.len() - 1] <= 0.5, "{method}");
        }
        assert_eq!(run["valid"], matches!(method, "dmm" | "ay"));
        for (i, &epsilon) in [2.0, 0.5].iter().enumerate() {
            let reached = &run["reached"][i];
            assert_eq!(reached["epsilon"], epsilon);
            let at = first_at_most(&gaps, epsilon);
            assert_eq!(
                reached["evaluations"].as_u64(),
                at.map(|t| t as u64),
                "{method}"
            );
            if let Some(t) = at {
                assert_eq!(reached["regret"].as_f64(), Some(regrets[t]));
                assert_eq!(reached["gap"].as_f64(), Some(gaps[t]));
            }
        }
        let (below, margin) = validity(&gaps, &regrets);
        assert_eq!(run["violations"].as_u64(), Some(below as u64), "{method}");
        assert_eq!(run["smallest_margin"].as_f64(), Some(margin), "{method}");
        // The guaranteed bounds are never below the regret here (a check of the experiment,
        // not of the heuristics, whose counts are only recomputed).
        if run["valid"] == true {
            assert_eq!(below, 0, "{method}");
        }
        let makarova = &run["makarova"];
        if method == "gp-ucb-5" {
            let bound = floats(&makarova["bound"]);
            let regret = floats(&makarova["regret"]);
            assert_eq!(makarova["first_evaluations"], 20);
            assert_eq!(bound.len(), gaps.len().saturating_sub(20));
            let (below, margin) = validity(&bound, &regret);
            assert_eq!(makarova["violations"].as_u64(), Some(below as u64));
            if !bound.is_empty() {
                assert_eq!(makarova["smallest_margin"].as_f64(), Some(margin));
            }
            for (i, &epsilon) in [2.0, 0.5].iter().enumerate() {
                let at = first_at_most(&bound, epsilon).map(|t| (t + 20) as u64);
                assert_eq!(makarova["reached"][i]["evaluations"].as_u64(), at);
            }
        } else {
            assert!(makarova.is_null(), "{method}");
        }
    }
    let csv = std::fs::read_to_string(dir.join("stopping.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "kernel,method,valid,rep,seed,epsilon,evaluations,gap,regret,violations,\
             smallest_margin,wall_time_s"
        )
    );
    // One row per (run, ε), and one more per (gp-ucb-5 run, ε) for the Makarova bound.
    assert_eq!(lines.count(), (16 + 4) * 2);
}

#[test]
fn stopping_rejects_bad_arguments() {
    let dir = scratch_dir("stopping", "bad");
    let bad = |extra: &[&str], needle: &str| {
        let args = [&["reproduce", "stopping"][..], extra].concat();
        assert_fails_cleanly(&kbandit(&args, &dir), needle);
    };
    bad(&["--epsilons", "1,-1"], "ε = -1 is not finite and positive");
    bad(&["--epsilons", "1,1"], "--epsilons lists 1 twice");
    bad(&["--budget", "0"], "--reps and --budget must be at least 1");
    bad(&["--kernels", "linear"], "linear");
    bad(
        &["--box-ratio", "1"],
        "--box-ratio 1 is not finite and above 1",
    );
    bad(
        &["--box-boxes", "0"],
        "--box-budget and --box-boxes must be at least 1",
    );
    bad(
        &["--box-tolerance", "-0.1"],
        "--box-tolerance -0.1 is not finite",
    );
    bad(&["--domains", "box,box"], "--domains lists Box twice");
}

/// The box half at a tiny size: its outputs, the geometric schedule, the certificate built from
/// the proven bounds intersected over the certified rounds (U* = min of the rounds' `upper`,
/// a lower bound on f(x̂) that never decreases, so a gap that never increases), the summaries
/// recomputed from the curves, and f(x*) at least every value sampled (so no regret is
/// negative).
#[test]
fn stopping_on_the_box_certifies_on_a_schedule_with_intersected_bounds() {
    let dir = scratch_dir("stopping", "box");
    let args = [
        "reproduce",
        "stopping",
        "--domains",
        "box",
        "--kernels",
        "rbf,matern52",
        "--methods",
        "dmm,amm,gp-ucb-5",
        "--epsilons",
        "2,0.5",
        "--box-budget",
        "25",
        "--box-ratio",
        "1.2",
        "--box-boxes",
        "1500",
        "--reps",
        "1",
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "### Box, RBF ℓ = 0.5",
        "### Box, Matérn 5/2 ℓ = 0.5",
        "| DMM-UCB |",
        "| Makarova et al. 2022 / Optuna (heuristic) |",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in {stdout}");
    }
    for file in [
        "stopping_box.json",
        "stopping_box.csv",
        "stopping_box_rbf.png",
        "stopping_box_matern52.svg",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    assert!(!dir.join("stopping.json").exists(), "--domains box only");
    let json = read_json(&dir.join("stopping_box.json"));
    let schedule: Vec<u64> = json["schedule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    // round(5·1.2^k) = 5, 6, 7.2, 8.64, 10.4, 12.4, 14.9, 17.9, 21.5, 25.8; then the budget.
    assert_eq!(schedule, [5, 6, 7, 9, 10, 12, 15, 18, 21, 25]);
    for truth in json["true_max"].as_array().unwrap() {
        let value = truth["value"].as_f64().unwrap();
        assert!(value >= truth["grid_max"].as_f64().unwrap());
        assert!(value >= truth["uniform_max"].as_f64().unwrap());
    }
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 3);
    for run in runs {
        let method = run["method"].as_str().unwrap();
        let rounds: Vec<u64> = run["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(rounds, schedule[..rounds.len()], "{method}");
        let [gap, regret, lower, upper] =
            ["gap", "regret", "lower", "upper"].map(|k| floats(&run[k]));
        assert_eq!(gap.len(), rounds.len());
        let valid = run["valid"] == true;
        assert_eq!(valid, method != "gp-ucb-5");
        let mut upper_star = f64::INFINITY;
        for k in 0..gap.len() {
            upper_star = if valid {
                upper_star.min(upper[k])
            } else {
                upper[k]
            };
            assert_eq!(gap[k], upper_star - lower[k], "{method} at {}", rounds[k]);
            // f(x*) is the maximum: no recommendation beats it.
            assert!(regret[k] >= -1e-12, "{method}: regret {}", regret[k]);
            if valid && k > 0 {
                assert!(lower[k] >= lower[k - 1], "{method}: L* decreased");
                assert!(gap[k] <= gap[k - 1], "{method}: the gap grew");
            }
        }
        for (i, &epsilon) in [2.0, 0.5].iter().enumerate() {
            let reached = &run["reached"][i];
            let at = gap.iter().position(|&g| g <= epsilon);
            assert_eq!(
                reached["evaluations"].as_u64(),
                at.map(|k| rounds[k]),
                "{method}"
            );
        }
        let below = gap.iter().zip(&regret).filter(|(g, r)| g < r).count();
        assert_eq!(run["violations"].as_u64(), Some(below as u64), "{method}");
        if valid {
            assert_eq!(below, 0, "{method}");
        }
        if method == "gp-ucb-5" {
            let bound = floats(&run["makarova"]["bound"]);
            // From the 20th evaluation to the last, which is at least the last certified round
            // (the run waits for the Makarova bound's ε too) and at most the budget.
            let last = bound.len() as u64 + 19;
            assert!(last >= rounds[rounds.len() - 1] && last <= 25, "{last}");
        }
    }
    let csv = std::fs::read_to_string(dir.join("stopping_box.csv")).unwrap();
    // A header, one row per (run, ε), one more per (gp-ucb-5 run, ε).
    assert_eq!(csv.lines().count(), 1 + (6 + 2) * 2);
}
