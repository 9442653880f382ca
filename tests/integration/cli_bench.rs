//! `kbandit bench` run as a process: the JSON line's fields and their consistency, the report's
//! tables and plots, and bad arguments.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

fn kbandit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args(args)
        .output()
        .expect("the kbandit binary runs")
}

fn measure(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["bench", "--t", "150", "--arms", "40", "--rounds", "6"];
    args.extend_from_slice(extra);
    let out = kbandit(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn one_json_line_per_measurement() {
    for bound in ["ay", "igp", "amm", "dmm", "cmm", "k-ucb", "bkb", "ek-ucb"] {
        for fixed in [false, true] {
            let mut extra = vec!["--bound", bound, "--threads", "1"];
            if fixed {
                extra.push("--fixed-arms");
            }
            let m = measure(&extra);
            assert_eq!(m["bound"], bound);
            assert_eq!((m["t"].as_u64(), m["arms"].as_u64()), (Some(150), Some(40)));
            assert_eq!(m["dims"], 3);
            assert_eq!(m["threads"], 1);
            assert_eq!(m["fixed_arms"], fixed);
            assert_eq!(m["rounds"], 6);
            assert_eq!(m["mode"], "round");
            let (p10, median, p90) = (
                m["p10_ms"].as_f64().unwrap(),
                m["median_ms"].as_f64().unwrap(),
                m["p90_ms"].as_f64().unwrap(),
            );
            assert!(0.0 < p10 && p10 <= median && median <= p90, "{m}");
            // Only the bounds with per-arm state keep the fixed set.
            let keeps = fixed && !matches!(bound, "cmm" | "bkb" | "ek-ucb");
            assert_eq!(m["fixed_bytes"].as_u64().unwrap() > 0, keeps, "{m}");
        }
    }
}

#[test]
fn score_mode_times_the_evaluation_of_every_arm() {
    let m = measure(&["--bound", "dmm", "--score"]);
    assert_eq!(m["mode"], "score");
    assert!(m["median_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_report_has_every_cell_and_the_plots() {
    let dir = std::env::temp_dir().join(format!("kbandit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("BENCH.md");
    // A report from an earlier run, with measurements written by hand below the tables.
    let hand = "\n## How the speed is obtained, and further measurements\n\nkept by hand 42\n";
    std::fs::write(&report, format!("# old tables\n| stale |\n{hand}")).unwrap();
    let out = kbandit(&[
        "bench",
        "--report",
        report.to_str().unwrap(),
        "--report-t",
        "50,150",
        "--report-arms",
        "20",
        "--rounds",
        "3",
        "--budget",
        "0",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("| bound | path | t = 50 | t = 150 |"));
    // Five bounds with a fresh and a fixed row, three with one row.
    let rows = text
        .lines()
        .filter(|l| l.starts_with("| ") && l.matches('|').count() == 5 && !l.contains("bound"))
        .count();
    assert_eq!(rows, 5 * 2 + 3, "{text}");
    assert!(!text.contains(" – |"), "no empty cell: {text}");
    assert!(!text.contains("stale"), "{text}");
    assert!(text.ends_with(hand), "{text}");
    assert_eq!(text.matches("kept by hand").count(), 1);
    for kind in ["fresh", "fixed"] {
        let svg = dir.join("bench-plots").join(format!("bench_{kind}_20.svg"));
        assert!(std::fs::read_to_string(svg).unwrap().starts_with("<svg"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_exit_with_status_2() {
    for args in [
        &["bench", "--arms", "0"][..],
        &["bench", "--dims", "0"],
        &["bench", "--threads", "0"],
        &["bench", "--budget", "-1"],
    ] {
        let out = kbandit(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("kbandit: "));
    }
}

#[test]
fn an_unknown_bound_is_refused_with_the_list_of_names() {
    let out = kbandit(&["bench", "--bound", "ucb"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("expected one of ay, igp, amm, dmm, cmm, k-ucb, bkb, ek-ucb"),
        "{stderr}"
    );
    // The papers' names are accepted too.
    let out = kbandit(&[
        "bench", "--bound", "DMM-UCB", "--t", "20", "--arms", "5", "--rounds", "2", "--budget", "0",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""bound":"dmm""#));
}
