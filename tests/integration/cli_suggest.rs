//! `kbandit suggest` run as a process, driven as a shell loop would drive it: each call's next
//! arm against the largest UCB of `kbandit bounds` on the same files, the stop against the
//! certificate recomputed here from those bounds and against the true regret of a known f, and
//! the documented exit statuses (0 next arm, 4 certified, 5 budget, 3 refuted, 2 error).
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernel_bandits::prelude::*;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kbandit-suggest-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const COMMON: [&str; 10] = [
    "--kernel",
    "rbf",
    "--lengthscale",
    "0.2",
    "--sigma",
    "0.01",
    "--norm-bound",
    "1",
    "--delta",
    "0.01",
];

fn run(command: &str, data: &Path, arms: &Path, extra: &[&str]) -> Output {
    let flag = if command == "suggest" {
        "--arms"
    } else {
        "--query"
    };
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .arg(command)
        .arg("--data")
        .arg(data)
        .arg(flag)
        .arg(arms)
        .args(COMMON)
        .args(extra)
        .output()
        .expect("the kbandit binary runs")
}

/// (mean, lcb, ucb) per arm from `kbandit bounds`.
fn bounds(data: &Path, arms: &Path, bound: &str) -> Vec<[f64; 3]> {
    let out = run("bounds", data, arms, &["--bound", bound]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let v: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

fn first_max(rows: &[[f64; 3]], column: usize) -> usize {
    (1..rows.len()).fold(0, |best, j| {
        if rows[j][column] > rows[best][column] {
            j
        } else {
            best
        }
    })
}

/// The loop of docs/cli.md on f = 0.8·k(0.63, ·) (‖f‖_H = 0.8 ≤ B = 1, noise-free values) over
/// 41 arms: every call prints the arm of largest UCB of `kbandit bounds` (exit 0) until the gap
/// max UCB − LCB(argmax LCB), recomputed here from `kbandit bounds`, is ≤ 0.05; then exit 4,
/// the recommended arm on stdout, its gap on stderr, and f(best arm) − f(recommended) ≤ gap.
#[test]
fn a_shell_loop_stops_with_a_valid_certificate() {
    let dir = scratch_dir("loop");
    let kernel = Rbf::new(0.2).unwrap();
    let f = |x: f64| 0.8 * kernel.eval(&[0.63], &[x]);
    let xs: Vec<f64> = (0..41).map(|i| i as f64 / 40.0).collect();
    let arms = dir.join("arms.csv");
    let mut text = String::from("x\n");
    for x in &xs {
        text.push_str(&format!("{x}\n"));
    }
    std::fs::write(&arms, text).unwrap();
    let data = dir.join("obs.csv");
    let mut observations = String::from("x,y\n");
    std::fs::write(&data, &observations).unwrap();
    let rule = ["--bound", "dmm", "--gap", "0.05", "--budget", "60"];
    let mut calls = 0;
    loop {
        let out = run("suggest", &data, &arms, &rule);
        let stdout = String::from_utf8(out.stdout.clone()).unwrap();
        let stderr = String::from_utf8(out.stderr.clone()).unwrap();
        let rows = bounds(&data, &arms, "dmm");
        let (best, top) = (first_max(&rows, 1), first_max(&rows, 2));
        let gap = rows[top][2] - rows[best][1];
        let printed: f64 = stdout.trim().parse().unwrap();
        match out.status.code() {
            Some(0) => {
                assert!(
                    gap > 0.05,
                    "call {calls}: gap {gap} but continued: {stderr}"
                );
                assert_eq!(printed, xs[top], "call {calls}: {stderr}");
                assert!(
                    stderr.starts_with(&format!("next: row {} ", top + 1)),
                    "{stderr}"
                );
                observations.push_str(&format!("{printed},{}\n", f(printed)));
                std::fs::write(&data, &observations).unwrap();
                calls += 1;
                assert!(calls <= 60, "no stop within the budget");
            }
            Some(4) => {
                assert!(gap <= 0.05, "stopped at gap {gap}: {stderr}");
                assert_eq!(printed, xs[best], "{stderr}");
                assert!(
                    stderr.contains(&format!("certified gap = {gap} (")),
                    "{stderr}"
                );
                let optimum = xs.iter().map(|&x| f(x)).fold(f64::MIN, f64::max);
                assert!(
                    optimum - f(printed) <= gap,
                    "{optimum} {} {gap}",
                    f(printed)
                );
                break;
            }
            other => panic!("exit status {other:?}: {stderr}"),
        }
    }
    assert!(calls >= 2, "{calls}");
    // The budget: the same data with a tighter ε and a budget already spent: exit 5 and the
    // arm of largest LCB.
    let out = run(
        "suggest",
        &data,
        &arms,
        &["--gap", "1e-9", "--budget", &calls.to_string()],
    );
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let rows = bounds(&data, &arms, "dmm");
    let printed: f64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(printed, xs[first_max(&rows, 1)]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("budget of"), "{stderr}");
}

/// The rules that are not an absolute ε: --noise-level stops at gap ≤ σ, --relative-gap at
/// gap ≤ r × (max y − min y), each checked on both sides of the threshold.
#[test]
fn noise_level_and_relative_gap_rules_use_their_thresholds() {
    let dir = scratch_dir("rules");
    let arms = dir.join("arms.csv");
    std::fs::write(&arms, "x\n0\n0.25\n0.5\n0.75\n1\n").unwrap();
    let data = dir.join("obs.csv");
    let mut text = String::from("x,y\n");
    for _ in 0..6 {
        for (x, y) in [(0.0, 0.1), (0.25, 0.5), (0.5, 0.7), (0.75, 0.4), (1.0, 0.0)] {
            text.push_str(&format!("{x},{y}\n"));
        }
    }
    std::fs::write(&data, text).unwrap();
    let rows = bounds(&data, &arms, "dmm");
    let gap = rows[first_max(&rows, 2)][2] - rows[first_max(&rows, 1)][1];
    // σ = 0.01 is below the gap: --noise-level does not stop.
    let status = |extra: &[&str]| run("suggest", &data, &arms, extra).status.code();
    assert!(gap > 0.01, "{gap}");
    assert_eq!(status(&["--noise-level", "--budget", "100"]), Some(0));
    // The observed range is 0.7: r = gap/0.7 stops, a little less does not.
    let r = gap / 0.7;
    assert_eq!(
        status(&["--relative-gap", &(r * 1.001).to_string()]),
        Some(4)
    );
    assert_eq!(
        status(&[
            "--relative-gap",
            &(r * 0.999).to_string(),
            "--budget",
            "100"
        ]),
        Some(0)
    );
    // With σ = 1 the gap is larger, but --noise-level compares with σ: recompute.
    let loose = Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args(["bounds", "--data"])
        .arg(&data)
        .arg("--query")
        .arg(&arms)
        .args(["--kernel", "rbf", "--lengthscale", "0.2", "--sigma", "1"])
        .args(["--norm-bound", "1", "--bound", "dmm"])
        .output()
        .unwrap();
    let rows: Vec<[f64; 3]> = String::from_utf8(loose.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|c| c.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    let loose_gap = rows[first_max(&rows, 2)][2] - rows[first_max(&rows, 1)][1];
    let out = Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args(["suggest", "--data"])
        .arg(&data)
        .arg("--arms")
        .arg(&arms)
        .args(["--kernel", "rbf", "--lengthscale", "0.2", "--sigma", "1"])
        .args(["--norm-bound", "1", "--noise-level"])
        .output()
        .unwrap();
    let want = if loose_gap <= 1.0 { 4 } else { 0 };
    assert_eq!(out.status.code(), Some(want), "gap {loose_gap}: {out:?}");
}

/// Exit 3 when the data refute the assumptions (nothing printed on stdout), 2 with one line on
/// stderr for no stopping rule, a heuristic bound, a bad ε and arms of the wrong dimension.
#[test]
fn refuted_data_and_bad_input_have_their_own_exit_statuses() {
    let dir = scratch_dir("errors");
    let arms = dir.join("arms.csv");
    std::fs::write(&arms, "x\n0\n0.5\n1\n").unwrap();
    let refuted = dir.join("refuted.csv");
    std::fs::write(&refuted, "x,y\n0.1,5\n0.4,-5\n0.7,5\n1.0,-5\n").unwrap();
    let out = run(
        "suggest",
        &refuted,
        &arms,
        &["--gap", "0.1", "--bound", "cmm"],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing is certified"));

    let data = dir.join("obs.csv");
    std::fs::write(&data, "x,y\n0.5,0.2\n").unwrap();
    let fails = |extra: &[&str], arms: &Path, needle: &str| {
        let out = run("suggest", &data, arms, extra);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    };
    fails(&[], &arms, "no stopping rule");
    fails(&["--gap", "0"], &arms, "--gap 0 is not finite and positive");
    fails(&["--gap", "0.1", "--bound", "k-ucb"], &arms, "not k-ucb");
    let wide = dir.join("wide.csv");
    std::fs::write(&wide, "x1,x2\n0,0\n").unwrap();
    fails(&["--gap", "0.1"], &wide, "expected 1 columns");
}
