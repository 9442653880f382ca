//! `kbandit reproduce batch` and `kbandit reproduce select-in` run as processes on tiny
//! configurations: the outputs exist and parse, the table agrees with the CSV, q = 1 replays
//! the plain one-point-at-a-time loops of the library (`Environment::run` on fresh arms,
//! `select_in` + `update` in the box), the reported UCBs are recomputed from the seeds, and bad
//! flags fail cleanly (one line on stderr, exit status 2).
#![cfg(feature = "cli")]

use crate::common::cli;

use std::path::Path;

use cli::{assert_fails_cleanly, floats, kbandit, read_json, scratch_dir};
use kernel_bandits::env::ContinuousProblem;
use kernel_bandits::prelude::*;
use serde_json::Value;

/// Evaluations, arms per round and box search of the tiny batch runs.
const EVALUATIONS: usize = 16;
const ARMS: usize = 20;
const STARTS: usize = 16;

fn batch_args(extra: &[&'static str]) -> Vec<&'static str> {
    let mut args = vec![
        "reproduce",
        "batch",
        "--evaluations",
        "16",
        "--arms",
        "20",
        "--starts",
        "16",
        "--refine",
        "1",
        "--reps",
        "2",
    ];
    args.extend_from_slice(extra);
    args
}

/// The CSV rows as string records, header first.
fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

/// The cell of `json` for (setting, method, q).
fn cell<'a>(json: &'a Value, setting: &str, method: &str, q: u64) -> &'a Value {
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["setting"] == setting && c["method"] == method && c["q"] == q)
        .unwrap_or_else(|| panic!("no cell {setting} {method} {q}"))
}

/// The paper's parameters the experiment gives the bounds, for T evaluations in d = 3.
fn params(kernel: &Rbf) -> BoundParams {
    BoundParams::paper_defaults(kernel, 3, EVALUATIONS)
        .sigma(0.1)
        .norm_bound(10.0)
        .delta(0.01)
}

fn problem(seed: u64) -> SyntheticProblem<Rbf> {
    let config = SyntheticConfig {
        dim: 3,
        arms: ARMS,
        ..SyntheticConfig::default()
    };
    SyntheticProblem::new(Rbf::new(0.5).unwrap(), config, seed).unwrap()
}

#[test]
fn batch_outputs_parse_and_the_table_matches_the_csv() {
    let dir = scratch_dir("batch", "shape");
    let output = kbandit(&batch_args(&["--q", "1,4", "--threads", "2"]), &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    for stem in [
        "batch_box_evaluations",
        "batch_box_rounds",
        "batch_arms_evaluations",
        "batch_arms_rounds",
    ] {
        for ext in ["png", "svg"] {
            let file = dir.join(format!("{stem}.{ext}"));
            assert!(std::fs::metadata(&file).unwrap().len() > 1000, "{file:?}");
        }
    }
    let json = read_json(&dir.join("batch.json"));
    assert_eq!(json["evaluations"], EVALUATIONS);
    assert_eq!(json["reps"], 2);
    assert_eq!(json["results"].as_array().unwrap().len(), 2 * 2 * 2);
    assert_eq!(floats(&json["optimum"]).len(), 2);

    let rows = csv_rows(&dir.join("batch.csv"));
    assert_eq!(
        rows[0],
        [
            "setting",
            "method",
            "q",
            "rep",
            "seed",
            "final_regret",
            "wall_time_s"
        ]
    );
    assert_eq!(rows.len(), 1 + 2 * 2 * 2 * 2);
    for setting in ["box", "arms"] {
        for (method, title) in [("amm", "Kernel AMM-UCB"), ("dmm", "Kernel DMM-UCB")] {
            for q in [1u64, 4] {
                let c = cell(&json, setting, method, q);
                let finals: Vec<f64> = rows[1..]
                    .iter()
                    .filter(|r| r[0] == setting && r[1] == method && r[2] == q.to_string())
                    .map(|r| r[5].parse().unwrap())
                    .collect();
                assert_eq!(finals, floats(&c["final_regret"]));
                // Mean and standard error recomputed here, as the table prints them.
                let mean = (finals[0] + finals[1]) / 2.0;
                let se = (finals[0] - finals[1]).abs() / 2.0;
                let row = format!("| {title} | {q} |");
                let line = stdout.lines().find(|l| l.starts_with(&row)).unwrap();
                let column = if setting == "box" { 0 } else { 1 };
                let printed = line.split('|').nth(3 + 2 * column).unwrap().trim();
                assert_eq!(printed, format!("{mean:.1} ± {se:.1}"), "{line}");
                // The curve ends at the mean final regret and never decreases (regret ≥ 0:
                // each evaluation is scored against the round's best arm or max f).
                let curve = floats(&c["curve_mean"]);
                assert_eq!(curve.len(), EVALUATIONS);
                assert!((curve[EVALUATIONS - 1] - mean).abs() <= 1e-9 * mean.abs().max(1.0));
                assert!(curve.windows(2).all(|w| w[1] >= w[0] - 1e-9), "{curve:?}");
            }
        }
    }
}

#[test]
fn batch_q1_replays_the_plain_loops_of_the_library() {
    let dir = scratch_dir("batch", "q1");
    let output = kbandit(&batch_args(&["--q", "1", "--methods", "amm,dmm"]), &dir);
    assert!(output.status.success(), "{output:?}");
    let json = read_json(&dir.join("batch.json"));
    let seeds: Vec<u64> = json["results"][0]["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    let starts_seeds: Vec<u64> = json["starts_seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    let optimum = floats(&json["optimum"]);
    let kernel = Rbf::new(0.5).unwrap();
    let domain = BoxDomain::unit(3).unwrap();
    for (rep, &seed) in seeds.iter().enumerate() {
        let problem = problem(seed);
        // The maximum reported is the library's `ContinuousProblem`'s, f there is that value
        // (up to the order of summation), and no point of a dense sample beats it.
        let continuous =
            ContinuousProblem::new(Rbf::new(0.5).unwrap(), *problem.config(), seed).unwrap();
        assert_eq!(continuous.max_value(), optimum[rep]);
        let point = floats(&json["optimum_point"][rep]);
        assert!((problem.value(&point).unwrap() - optimum[rep]).abs() <= 1e-12);
        for x in domain.space_filling(4096, 99).chunks(3) {
            assert!(problem.value(x).unwrap() <= optimum[rep], "{x:?}");
        }
        for method in ["amm", "dmm"] {
            let build = || -> Box<dyn ConfidenceBound> {
                match method {
                    "amm" => Box::new(Amm::new(kernel, params(&kernel)).unwrap()),
                    _ => Box::new(Dmm::new(kernel, params(&kernel)).unwrap()),
                }
            };
            // Fresh arms: q = 1 is the table1 protocol, `Environment::run`.
            let mut agent = UcbAgent::new(build());
            let plain = problem.run(&mut agent, EVALUATIONS).unwrap().total();
            let reported = floats(&cell(&json, "arms", method, 1)["final_regret"])[rep];
            assert_eq!(reported, plain, "arms, {method}, repetition {rep}");

            // The box: select_in, then update, one point at a time.
            let options = ContinuousOptions {
                starts: STARTS,
                refine: 1,
                seed: starts_seeds[rep],
                // The rule `kbandit reproduce batch` uses by default.
                batch_rule: BatchRule::Exploration,
                ..ContinuousOptions::default()
            };
            let mut agent = UcbAgent::new(build()).with_continuous(options).unwrap();
            let mut regret = 0.0;
            for n in 0..EVALUATIONS {
                let choice = agent.select_in(&domain).unwrap();
                let value = problem.value(&choice.point).unwrap();
                regret += optimum[rep] - value;
                let noise = problem.round(n).noise;
                agent.update(&choice.point, value + noise).unwrap();
            }
            let reported = floats(&cell(&json, "box", method, 1)["final_regret"])[rep];
            assert_eq!(reported, regret, "box, {method}, repetition {rep}");
        }
    }
}

#[test]
fn select_in_outputs_parse_and_the_ucbs_are_recomputed_from_the_seeds() {
    let dir = scratch_dir("batch", "select-in");
    let args = [
        "reproduce",
        "select-in",
        "--kernel",
        "rbf",
        "--dims",
        "1,3",
        "--observations",
        "5,30",
        "--dense",
        "300",
        "--reps",
        "2",
        "--calls",
        "2",
        "--starts",
        "32",
        "--refine",
        "2",
    ];
    let output = kbandit(&args, &dir);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let json = read_json(&dir.join("select_in.json"));
    let cells = json["results"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 2 * 2);
    let rows = csv_rows(&dir.join("select_in.csv"));
    assert_eq!(rows.len(), 1 + 2 * 2 * 2 * 2);
    let kernel = Rbf::new(0.5).unwrap();
    let mut row = 1;
    for c in cells {
        let d = c["dims"].as_u64().unwrap() as usize;
        let t = c["observations"].as_u64().unwrap() as usize;
        let method = c["method"].as_str().unwrap();
        let line = format!("| {d} | {t} | {method} |");
        assert!(stdout.lines().any(|l| l.starts_with(&line)), "{stdout}");
        for r in c["repetitions"].as_array().unwrap() {
            // The bound rebuilt from the seed: t uniform points with noisy f.
            let config = SyntheticConfig {
                dim: d,
                arms: 1,
                ..SyntheticConfig::default()
            };
            let problem =
                SyntheticProblem::new(kernel, config, r["seed"].as_u64().unwrap()).unwrap();
            let params = BoundParams::paper_defaults(&kernel, d, t)
                .sigma(0.1)
                .norm_bound(10.0)
                .delta(0.01);
            let mut bound: Box<dyn ConfidenceBound> = match method {
                "amm" => Box::new(Amm::new(kernel, params).unwrap()),
                _ => Box::new(Dmm::new(kernel, params).unwrap()),
            };
            for n in 0..t {
                let round = problem.round(n);
                bound
                    .observe(round.arm(0), round.values[0] + round.noise)
                    .unwrap();
            }
            let point = floats(&r["point"]);
            let dense_point = floats(&r["dense_point"]);
            assert_eq!(point.len(), d);
            assert!(point.iter().all(|&x| (0.0..=1.0).contains(&x)), "{point:?}");
            assert!(dense_point.iter().all(|&x| (0.0..=1.0).contains(&x)));
            let at = bound
                .evaluate(&Points::from_row_major(&[point, dense_point].concat(), d).unwrap())
                .unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
            let select_ucb = r["select_ucb"].as_f64().unwrap();
            let dense_max = r["dense_max"].as_f64().unwrap();
            assert!(close(at.ucb[0], select_ucb), "{} {select_ucb}", at.ucb[0]);
            assert!(close(at.ucb[1], dense_max), "{} {dense_max}", at.ucb[1]);
            let half_width = (at.ucb[0] - at.lcb[0]) / 2.0;
            assert!(close(half_width, r["half_width"].as_f64().unwrap()));
            // Up to the last bits of the JSON numbers (a few ulps of the UCBs).
            let gap = dense_max - select_ucb;
            let ulps = 8.0 * f64::EPSILON * dense_max.abs().max(select_ucb.abs());
            assert!((r["gap"].as_f64().unwrap() - gap).abs() <= ulps, "{r}");
            // The relative gap is the program's gap over its own half-width (which matches the
            // one recomputed here to 10⁻⁹, above, but not to the last bits: the program evaluates
            // the point alone on the agent's bound, this test in a batch on a replayed one).
            let relative = r["relative_gap"].as_f64().unwrap();
            let reported_half_width = r["half_width"].as_f64().unwrap();
            assert!(
                (relative - gap / reported_half_width).abs() <= 2.0 * ulps / reported_half_width,
                "{relative} vs {gap} / {reported_half_width}"
            );
            // The CSV row says the same.
            let csv = &rows[row];
            assert_eq!(csv[..3], [d.to_string(), t.to_string(), method.to_owned()]);
            let csv_gap: f64 = csv[7].parse().unwrap();
            assert!((csv_gap - gap).abs() <= ulps);
            assert_eq!(floats(&r["call_s"]).len(), 2);
            row += 1;
        }
    }
}

#[test]
fn bad_flags_fail_cleanly() {
    let dir = scratch_dir("batch", "bad");
    for (args, needle) in [
        (
            batch_args(&["--q", "3"]),
            "--q value 3 does not divide --evaluations 16",
        ),
        (batch_args(&["--q", "0"]), "--q value 0"),
        (batch_args(&["--q", "4,4"]), "--q lists 4 twice"),
        (
            batch_args(&["--methods", "amm,amm"]),
            "--methods lists amm twice",
        ),
        (
            batch_args(&["--lengthscale", "-1"]),
            "--lengthscale -1 is not finite and positive",
        ),
        (
            vec!["reproduce", "batch", "--starts", "0"],
            "--starts and --refine must be at least 1",
        ),
        (batch_args(&["--kernel", "linear"]), "not linear"),
        (
            vec!["reproduce", "select-in", "--dense", "0"],
            "--dense, --reps and --calls must be at least 1",
        ),
        (
            vec!["reproduce", "select-in", "--methods", "random"],
            "random has no UCB",
        ),
        (
            vec!["reproduce", "select-in", "--dims", "0"],
            "--dims and --observations must be at least 1",
        ),
        (
            vec!["reproduce", "select-in", "--threads", "0"],
            "--threads must be at least 1",
        ),
    ] {
        assert_fails_cleanly(&kbandit(&args, &dir), needle);
    }
}
