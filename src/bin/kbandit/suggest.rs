//! `kbandit suggest`: one step of a stopping loop whose objective lives outside — read the
//! observations so far, then either print the next arm to evaluate or stop and print the
//! certified recommendation.
//!
//! The certificate is the one of `kernel_bandits::decide::certify` over the arms: x̂ = the arm
//! with the largest LCB, gap = max UCB − LCB(x̂) ≥ f(x*) − f(x̂) on the event of probability
//! ≥ 1 − δ on which the bound holds at every round at once. Each call recomputes it from the
//! whole file; stopping at the first call whose gap meets the rule keeps the guarantee,
//! whichever call that is (the rounds at which one looks may depend on the data).

use std::path::PathBuf;

use clap::Args;
use kernel_bandits::bound::{BoundConfig, BoundKind};
use kernel_bandits::decide::RegretCertificate;
use kernel_bandits::prelude::*;

use crate::bounds::{ModelArgs, read_data_and_points};

/// The next arm was printed: evaluate it, append the row, call again.
pub const EXIT_CONTINUE: u8 = 0;
/// A rule on the certified gap holds: the recommendation was printed, stop.
pub const EXIT_CERTIFIED: u8 = 4;
/// The budget is spent without a certificate: the recommendation (the arm with the largest LCB)
/// was printed with the gap it reached, stop.
pub const EXIT_BUDGET: u8 = 5;

/// Arguments of `kbandit suggest`.
#[derive(Debug, Args)]
pub struct SuggestArgs {
    /// Observations so far: a header row, then one row per evaluation with the input
    /// coordinates and, in the last column, the value. A header alone (no observations yet) is
    /// fine: the first arm is then the one of largest prior UCB.
    #[arg(long)]
    data: PathBuf,
    /// The arms: a header row, then one row per candidate point (the data's input dimension).
    /// The certificate is over these rows.
    #[arg(long)]
    arms: PathBuf,
    /// Confidence bound: ay, igp, amm, dmm or cmm.
    #[arg(long, value_parser = crate::parse_bound, default_value = "dmm")]
    bound: BoundKind,
    #[command(flatten)]
    model: ModelArgs,
    /// Stop when the certified gap is at most ε (in the values' units).
    #[arg(long, allow_negative_numbers = true)]
    gap: Option<f64>,
    /// Stop when the certified gap is at most r × (max − min of the observed values); needs two
    /// observations.
    #[arg(long = "relative-gap", allow_negative_numbers = true)]
    relative_gap: Option<f64>,
    /// Stop when the certified gap is at most σ, the noise level (the criterion of Makarova et
    /// al. 2022).
    #[arg(long = "noise-level")]
    noise_level: bool,
    /// Stop when the data hold this many observations.
    #[arg(long)]
    budget: Option<usize>,
}

/// Why the loop stops, if it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Continue,
    Gap,
    RelativeGap,
    NoiseLevel,
    Budget,
}

impl Verdict {
    fn exit(self) -> u8 {
        match self {
            Self::Continue => EXIT_CONTINUE,
            Self::Gap | Self::RelativeGap | Self::NoiseLevel => EXIT_CERTIFIED,
            Self::Budget => EXIT_BUDGET,
        }
    }
}

fn check(args: &SuggestArgs) -> Result<(), String> {
    for (name, value) in [("--gap", args.gap), ("--relative-gap", args.relative_gap)] {
        if let Some(v) = value
            && !(v.is_finite() && v > 0.0)
        {
            return Err(format!("{name} {v} is not finite and positive"));
        }
    }
    if args.gap.is_none()
        && args.relative_gap.is_none()
        && !args.noise_level
        && args.budget.is_none()
    {
        return Err(
            "no stopping rule: give --gap, --relative-gap, --noise-level or --budget (or \
             several: the first that holds stops)"
                .into(),
        );
    }
    if !(args.bound.is_exact() && args.bound != BoundKind::KUcb) {
        return Err(format!(
            "`kbandit suggest` certifies with ay, igp, amm, dmm or cmm, not {}",
            args.bound
        ));
    }
    Ok(())
}

/// Runs one step. Returns the exit status ([`EXIT_CONTINUE`], [`EXIT_CERTIFIED`],
/// [`EXIT_BUDGET`], or [`crate::bounds::EXIT_MISSPECIFIED`] when the data refute the
/// assumptions).
///
/// # Errors
/// A one-line message naming the file and line where the problem is.
pub fn run(args: &SuggestArgs) -> Result<u8, String> {
    check(args)?;
    let kernel = args.model.kernel()?;
    let params = args.model.params();
    let mut bound = args
        .bound
        .build(kernel, &BoundConfig::new().params(params))
        .map_err(|e| e.to_string())?;
    let (data, arms, dim) = read_data_and_points(&args.data, &args.arms, "value")?;
    let (data_name, arms_name) = (args.data.display(), args.arms.display());
    let (mut lowest, mut highest) = (f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..data.rows() {
        let row = data.row(i);
        bound
            .observe(&row[..dim], row[dim])
            .map_err(|e| format!("{data_name}:{}: {e}", data.lines[i]))?;
        lowest = lowest.min(row[dim]);
        highest = highest.max(row[dim]);
    }
    let n = data.rows();
    let points = Points::from_row_major(&arms.values, dim).map_err(|e| e.to_string())?;
    let checked = bound.evaluate_checked(&points).map_err(|e| match e {
        Error::NotPositiveDefinite { row, .. } => format!("{arms_name}:{}: {e}", arms.lines[row]),
        e => format!("{arms_name}: {e}"),
    })?;
    if let Some(what) = checked.describe() {
        eprintln!(
            "kbandit: warning: {what}. σ = {}, B = {}: nothing is certified; try a larger \
             --norm-bound, a larger σ, another kernel or length-scale. Exit status {}",
            args.model.assumptions.sigma,
            args.model.assumptions.norm_bound,
            crate::bounds::EXIT_MISSPECIFIED
        );
        return Ok(crate::bounds::EXIT_MISSPECIFIED);
    }
    let certificate = RegretCertificate::from_checked(&points, &checked, n)
        .map_err(|e| format!("{arms_name}: {e}"))?;
    let gap = certificate.gap;
    let range = (n >= 2).then_some(highest - lowest);
    let verdict = if args.gap.is_some_and(|e| gap <= e) {
        Verdict::Gap
    } else if let (Some(r), Some(range)) = (args.relative_gap, range)
        && range > 0.0
        && gap <= r * range
    {
        Verdict::RelativeGap
    } else if args.noise_level && gap <= args.model.assumptions.sigma {
        Verdict::NoiseLevel
    } else if args.budget.is_some_and(|b| n >= b) {
        Verdict::Budget
    } else {
        Verdict::Continue
    };
    let row_text = |j: usize| {
        points
            .to_vec(j)
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let r = &certificate.recommendation;
    let where_ = |j: usize| format!("row {} ({arms_name}:{})", j + 1, arms.lines[j]);
    let summary = format!(
        "after {n} observations: recommended {}, lcb = {}; max ucb = {} at {}; certified gap = {}",
        where_(r.index),
        r.lcb,
        certificate.upper,
        where_(certificate.upper_index),
        gap
    );
    match verdict {
        Verdict::Continue => {
            let next = checked
                .bounds
                .argmax_ucb()
                .map_err(|e| format!("{arms_name}: {e}"))?;
            println!("{}", row_text(next));
            eprintln!(
                "next: {} (ucb = {}); {summary}",
                where_(next),
                checked.bounds.ucb[next]
            );
        }
        stop => {
            println!("{}", row_text(r.index));
            let why = match stop {
                Verdict::Gap => format!("gap ≤ --gap {}", args.gap.unwrap_or_default()),
                Verdict::RelativeGap => format!(
                    "gap ≤ --relative-gap {} × observed range {}",
                    args.relative_gap.unwrap_or_default(),
                    range.unwrap_or_default()
                ),
                Verdict::NoiseLevel => format!("gap ≤ σ = {}", args.model.assumptions.sigma),
                _ => format!(
                    "budget of {} observations spent, not certified",
                    args.budget.unwrap_or_default()
                ),
            };
            eprintln!(
                "stop ({why}): {summary} (with probability ≥ 1 − δ = {}, the best arm is at \
                 most gap better than the recommended one)",
                1.0 - args.model.assumptions.delta
            );
        }
    }
    Ok(verdict.exit())
}
