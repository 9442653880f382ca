//! `kbandit reproduce safe` at a tiny size: every output file, and the properties the
//! experiment claims, recomputed here from the f and g it writes on the grid: the reachable
//! region (the seed's connected component of {g ≥ 0}, found again by a flood fill here), the
//! draw's acceptance rule, the safety of every evaluation of the valid bounds, the safe sets
//! inside the true safe set, and the reported fractions and counts.
#![cfg(feature = "cli")]

use std::collections::VecDeque;

use crate::common::cli;

use cli::{assert_fails_cleanly, floats, kbandit, read_json, scratch_dir};
use serde_json::Value;

fn indices(value: &Value) -> Vec<usize> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect()
}

/// The connected component of {g ≥ 0} holding `start` on the grid (d = 1: a path of n points;
/// d = 2: an n × n grid, index i·n + j, neighbours differing by one in i or in j).
fn component(g: &[f64], dim: usize, start: usize) -> Vec<bool> {
    let n = if dim == 1 {
        g.len()
    } else {
        (g.len() as f64).sqrt().round() as usize
    };
    let mut seen = vec![false; g.len()];
    let mut queue = VecDeque::from([start]);
    seen[start] = true;
    while let Some(j) = queue.pop_front() {
        let mut next = Vec::new();
        if dim == 1 {
            next.extend(j.checked_sub(1));
            next.extend((j + 1 < n).then_some(j + 1));
        } else {
            let (i, k) = (j / n, j % n);
            next.extend((i > 0).then(|| j - n));
            next.extend((i + 1 < n).then_some(j + n));
            next.extend((k > 0).then(|| j - 1));
            next.extend((k + 1 < n).then_some(j + 1));
        }
        for m in next {
            if !seen[m] && g[m] >= 0.0 {
                seen[m] = true;
                queue.push_back(m);
            }
        }
    }
    seen
}

#[test]
fn safe_writes_its_outputs_and_keeps_the_valid_bounds_safe() {
    let dir = scratch_dir("safe", "tiny");
    let args = [
        "reproduce",
        "safe",
        "--grid-1d",
        "120",
        "--grid-2d",
        "14",
        "--evaluations",
        "30",
        "--reps",
        "2",
        "--cmm-reps",
        "1",
        "--threads",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "### d = 1: 120 grid points",
        "### d = 2: 196 grid points",
        "| DMM | 2 |",
        "| CMM | 1 |",
        "| safeopt μ ± β·σ_GP (heuristic) | 2 |",
        "LSE (Gotovos et al. 2013)",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in {stdout}");
    }
    for file in ["safe.json", "safe.csv", "safe_lse.csv"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    for stem in [
        "safe_growth_d1",
        "safe_growth_d2",
        "safe_lse_d1",
        "safe_lse_d2",
        "safe_bands_d1",
    ] {
        for ext in ["png", "svg"] {
            let plot = dir.join(format!("{stem}.{ext}"));
            assert!(plot.is_file(), "{}", plot.display());
        }
    }
    let json = read_json(&dir.join("safe.json"));
    assert_eq!(json["evaluations"], 30);
    assert_eq!(json["safeopt_beta"], 2.0);
    let problems = json["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 4);
    let min_reachable = json["min_reachable"].as_f64().unwrap();
    let mut reachable_of = Vec::new();
    for p in problems {
        let dim = p["dim"].as_u64().unwrap() as usize;
        let g = floats(&p["g"]);
        assert_eq!(g.len(), if dim == 1 { 120 } else { 196 });
        let start = p["start"].as_u64().unwrap() as usize;
        let reachable = component(&g, dim, start);
        let size = reachable.iter().filter(|&&r| r).count();
        let safe = g.iter().filter(|&&v| v >= 0.0).count();
        // The acceptance rule: a nontrivial component under half of the safe set.
        assert_eq!(
            p["reachable_size"].as_u64().unwrap() as usize,
            size,
            "{dim}"
        );
        assert_eq!(p["safe_size"].as_u64().unwrap() as usize, safe);
        assert!(2 * size < safe, "|R| = {size}, safe set {safe}");
        assert!(
            size as f64 >= min_reachable * g.len() as f64,
            "|R| = {size}"
        );
        // The seed: R's point of largest g.
        let best = (0..g.len())
            .filter(|&j| reachable[j])
            .all(|j| g[j] <= g[start]);
        assert!(best && g[start] >= 0.0);
        let f = floats(&p["f"]);
        let best_f = (0..f.len())
            .filter(|&j| reachable[j])
            .map(|j| f[j])
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(p["best_reachable"].as_f64().unwrap(), best_f);
        reachable_of.push((dim, p["rep"].as_u64().unwrap(), g, reachable, size));
    }
    let runs = json["runs"].as_array().unwrap();
    // Six methods on four problems, CMM on the first repetition only.
    assert_eq!(runs.len(), 6 * 4 - 2);
    let mut valid_unsafe = 0;
    for r in runs {
        let (dim, rep) = (
            r["dim"].as_u64().unwrap() as usize,
            r["rep"].as_u64().unwrap(),
        );
        let (_, _, g, reachable, size) = reachable_of
            .iter()
            .find(|p| p.0 == dim && p.1 == rep)
            .unwrap();
        let evaluated = indices(&r["evaluated"]);
        let unsafe_count = evaluated.iter().filter(|&&j| g[j] < 0.0).count();
        assert_eq!(
            r["unsafe_evaluations"].as_u64().unwrap() as usize,
            unsafe_count
        );
        assert_eq!(r["evaluations"].as_u64().unwrap() as usize, evaluated.len());
        let fraction = floats(&r["reachable_fraction"]);
        assert_eq!(fraction.len(), 31);
        assert!(
            fraction.iter().all(|&v| (0.0..=1.0).contains(&v)),
            "{fraction:?}"
        );
        let final_safe = indices(&r["final_safe"]);
        let inside = final_safe.iter().filter(|&&j| reachable[j]).count();
        assert_eq!(fraction[30], inside as f64 / *size as f64);
        if r["valid"].as_bool().unwrap() {
            assert!(r["stopped"].is_null(), "{r}");
            valid_unsafe += unsafe_count;
            // S_T inside the true safe set, and S_t only grows.
            assert!(final_safe.iter().all(|&j| g[j] >= 0.0), "{}", r["method"]);
            assert_eq!(r["false_safe"], 0);
            assert!(fraction.windows(2).all(|w| w[0] <= w[1]), "{fraction:?}");
            // The seed is evaluated first (the only safe point at the start).
            assert!(fraction[0] > 0.0 && fraction[0] * *size as f64 == 1.0);
        }
    }
    assert_eq!(valid_unsafe, 0);
    let lse = json["lse"].as_array().unwrap();
    assert_eq!(lse.len(), 5 * 4 - 2);
    for r in lse {
        let classified = floats(&r["classified"]);
        assert_eq!(classified.len(), 31);
        assert!(classified.iter().all(|&v| (0.0..=1.0).contains(&v)));
        assert!(
            classified.windows(2).all(|w| w[0] <= w[1]),
            "{classified:?}"
        );
        assert_eq!(r["misclassified"], 0, "{r}");
    }
}

#[test]
fn safe_rejects_bad_arguments_cleanly() {
    let dir = scratch_dir("safe", "bad");
    let bad = |extra: &[&str], needle: &str| {
        let args = [&["reproduce", "safe"][..], extra].concat();
        assert_fails_cleanly(&kbandit(&args, &dir), needle);
    };
    bad(&["--dims", "3"], "--dims takes 1 and/or 2");
    bad(&["--dims", "1,1"], "--dims lists 1 twice");
    bad(&["--methods", "dmm,dmm"], "--methods lists dmm twice");
    bad(&["--safeopt-beta", "-1"], "--safeopt-beta must be positive");
    bad(
        &["--min-reachable", "0.6"],
        "--min-reachable must be in (0, 0.5)",
    );
    bad(&["--cmm-reps", "0"], "--cmm-reps must be at least 1");
}
