//! `kbandit`: confidence bounds for logged data from the command line.
//!
//! ```text
//! kbandit bounds --data obs.csv --query points.csv --kernel matern52 --lengthscale 0.5 \
//!     --bound dmm --sigma 0.1 --norm-bound 10 --delta 0.01 --scale 1.0
//! ```
//!
//! Errors print one line to stderr, naming the file and line where there is one, and exit
//! with status 2.

mod bounds;
mod table;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Bounds(bounds::BoundsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bounds(args) => bounds::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kbandit: {message}");
            ExitCode::from(2)
        }
    }
}
