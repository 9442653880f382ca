//! `kbandit`: confidence bounds for logged data, and the papers' experiments, from the
//! command line.
//!
//! ```text
//! kbandit bounds --data obs.csv --query points.csv --kernel matern52 --lengthscale 0.5 \
//!     --bound dmm --sigma 0.1 --norm-bound 10 --delta 0.01 --scale 1.0
//! kbandit suggest --data obs.csv --arms arms.csv --kernel rbf --lengthscale 0.2 \
//!     --bound dmm --gap 0.1 --budget 200
//! kbandit bench --bound amm --t 1000 --arms 100 --dims 3 [--fixed-arms] [--threads N]
//! kbandit bench --report BENCHMARKS.md
//! kbandit demo
//! kbandit reproduce table1 [--reps 10] [--out results]
//! kbandit reproduce bands [--out results]
//! kbandit reproduce contextual [--reps 5] [--out results]
//! kbandit reproduce loose [--assumed-sigma 0.1,0.2] [--assumed-norm 10,20] [--reps 10] [--out results]
//! kbandit reproduce timing [--bounds ay,igp,amm,dmm,cmm,k-ucb,bkb,ek-ucb] [--rounds 1000] [--reps 2] [--out results]
//! kbandit reproduce nonstationary [--reps 5] [--methods r-gp-ucb,r-dmm,sw-dmm,...] [--info-gain greedy|data|both] [--out results]
//! kbandit reproduce variance [--observations 300] [--cover 0.3] [--out results]
//! kbandit reproduce stopping [--reps 10] [--budget 1000] [--out results]
//! ```
//!
//! Errors print one line to stderr, naming the file and line where there is one, and exit
//! with status 2. `kbandit bounds` exits with status 3 ([`bounds::EXIT_MISSPECIFIED`]), after
//! writing its output and a warning on stderr, when the data refute the assumptions (LCB > UCB
//! at some query point, or an empty confidence set), unless `--allow-crossed` is given.

mod bench;
mod bounds;
mod kernels;
mod plot;
mod reproduce;
mod suggest;
mod table;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use kernel_bandits::bound::{BoundKind, BoundParams, UnknownBound};

/// Confidence bounds for kernel bandits and sequential kernel regression.
#[derive(Debug, Parser)]
#[command(name = "kbandit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Mean, LCB and UCB at query points, given observations (CSV in, CSV out).
    ///
    /// Exit status: 0; 2 on an error; 3 when the data refute the assumptions (LCB > UCB at some
    /// query point, or an empty confidence set: a warning on stderr says which, and the output
    /// is written all the same), unless --allow-crossed is given.
    Bounds(bounds::BoundsArgs),
    /// One step of a stopping loop over a finite set of arms: from the observations so far,
    /// print the next arm to evaluate (one CSV line on stdout), or stop and print the certified
    /// recommendation.
    ///
    /// Exit status: 0, the next arm was printed (evaluate it, append `x,y` to --data, call
    /// again); 4, a rule on the certified gap holds (--gap, --relative-gap or --noise-level) and
    /// the recommendation was printed; 5, the --budget is spent, the recommendation printed
    /// uncertified; 3, the data refute the assumptions (nothing certified); 2, an error. See
    /// docs/cli.md for a shell loop.
    Suggest(suggest::SuggestArgs),
    /// Time UCB rounds of one bound (one JSON line), or run the whole grid into a report
    /// (`--report BENCHMARKS.md`).
    Bench(bench::BenchArgs),
    /// A quick tour on built-in defaults: one column of Table 1 of Flynn & Reeb (2024) with its
    /// five bounds, CMM included (3 repetitions), and its Figure 1 bands, with plots in results/demo.
    Demo(reproduce::DemoArgs),
    /// Reproduce a paper experiment: tables on stdout, JSON, CSV and plots in --out.
    Reproduce {
        #[command(subcommand)]
        experiment: reproduce::Experiment,
    },
}

/// The assumptions every bound rests on (Flynn & Reeb 2024 §2): conditionally σ-sub-Gaussian
/// noise, ‖f‖_H ≤ B, and the level δ.
#[derive(Debug, Args)]
pub struct Assumptions {
    /// σ: the noise is conditionally σ-sub-Gaussian.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    pub sigma: f64,
    /// B: bound on the RKHS norm of the unknown function.
    #[arg(
        long = "norm-bound",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    pub norm_bound: f64,
    /// δ ∈ (0, 1]: the bounds hold with probability at least 1 − δ.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    pub delta: f64,
}

/// A bound name for clap: `ay`, `igp`, `amm`, `dmm`, `cmm`, `k-ucb`, `bkb` or `ek-ucb` (see
/// [`BoundKind`]'s `FromStr`).
pub fn parse_bound(name: &str) -> Result<BoundKind, String> {
    name.parse().map_err(|e: UnknownBound| e.to_string())
}

impl Assumptions {
    /// `params` with σ, B and δ set from the command line.
    pub fn apply(&self, params: BoundParams) -> BoundParams {
        params
            .sigma(self.sigma)
            .norm_bound(self.norm_bound)
            .delta(self.delta)
    }
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Whether `--sigma` was typed (not its default): `bounds --fit` then holds σ at it.
    let sigma_given = matches
        .subcommand_matches("bounds")
        .is_some_and(|m| m.value_source("sigma") == Some(ValueSource::CommandLine));
    let result = match cli.command {
        Command::Bounds(args) => match bounds::run(&args, sigma_given) {
            Ok(false) => return ExitCode::from(bounds::EXIT_MISSPECIFIED),
            other => other.map(|_| ()),
        },
        Command::Suggest(args) => match suggest::run(&args) {
            Ok(status) => return ExitCode::from(status),
            Err(e) => Err(e),
        },
        Command::Bench(args) => bench::run(&args),
        Command::Demo(args) => reproduce::demo(&args),
        Command::Reproduce { experiment } => reproduce::run(&experiment),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kbandit: {message}");
            ExitCode::from(2)
        }
    }
}
