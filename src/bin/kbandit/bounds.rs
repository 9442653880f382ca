//! `kbandit bounds`: mean, LCB and UCB at query points from logged observations.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use kernel_bandits::Result;
use kernel_bandits::bound::{BoundConfig, BoundKind};
use kernel_bandits::prelude::*;

use crate::Assumptions;
use crate::kernels::KernelName;
use crate::table::{self, Table};

/// Arguments of `kbandit bounds`.
#[derive(Debug, Args)]
pub struct BoundsArgs {
    /// Observations: a header row, then one row per observation with the input coordinates
    /// and, in the last column, the response. With the header alone (no observations) the
    /// output is the prior bounds.
    #[arg(long)]
    data: PathBuf,
    /// Query points: a header row, then one row per point (the data's input dimension).
    #[arg(long)]
    query: PathBuf,
    /// Kernel.
    #[arg(long, value_enum)]
    kernel: KernelName,
    /// Matérn smoothness ν ∈ (0, 100] of `--kernel matern` (required there, refused with any
    /// other kernel).
    #[arg(long, allow_negative_numbers = true)]
    nu: Option<f64>,
    /// Length-scale ℓ (required by every kernel but `linear`).
    #[arg(long, allow_negative_numbers = true)]
    lengthscale: Option<f64>,
    /// Confidence bound: ay, igp, amm, dmm or cmm.
    #[arg(long, value_parser = crate::parse_bound)]
    bound: BoundKind,
    #[command(flatten)]
    assumptions: Assumptions,
    /// c: covariance scale of the martingale mixture (a0 = σ²/c).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    scale: f64,
    /// λ for AY-GP-UCB [default: σ²/c].
    #[arg(long, allow_negative_numbers = true)]
    lambda: Option<f64>,
    /// η for IGP-UCB (the paper's 2/T with T = 1000).
    #[arg(long, default_value_t = 0.002, allow_negative_numbers = true)]
    eta: f64,
}

fn kernel(args: &BoundsArgs) -> std::result::Result<Box<dyn Kernel>, String> {
    let nu = args.kernel.smoothness(args.nu)?;
    let lengthscale = || {
        args.lengthscale.ok_or_else(|| {
            format!(
                "--lengthscale is required for the {} kernel",
                args.kernel.tag()
            )
        })
    };
    let invalid = |e: Error| format!("--lengthscale: {e}");
    Ok(match (args.kernel, nu) {
        (KernelName::Linear, _) => Box::new(Linear::new()),
        (_, Some(nu)) => Box::new(Matern::new(nu, lengthscale()?).map_err(invalid)?),
        (_, None) => Box::new(Rbf::new(lengthscale()?).map_err(invalid)?),
    })
}

fn bound(args: &BoundsArgs, kernel: Box<dyn Kernel>) -> Result<Box<dyn ConfidenceBound>> {
    let mut params = args
        .assumptions
        .apply(BoundParams::new())
        .scale(args.scale)
        .eta(args.eta);
    if let Some(lambda) = args.lambda {
        params = params.lambda(lambda);
    }
    // K-UCB and the sketched bounds are not confidence bounds for given σ, B and δ.
    if !args.bound.is_exact() || args.bound == BoundKind::KUcb {
        return Err(Error::Unsupported {
            what: format!(
                "`kbandit bounds` computes ay, igp, amm, dmm or cmm, not {}",
                args.bound
            ),
        });
    }
    args.bound
        .build_boxed(kernel, &BoundConfig::new().params(params))
}

/// The observations in `path`, which may be none.
///
/// [`table::read`] rejects a table without rows, as it should for the query points. But no
/// observations is a fair question about the data: t = 0, what are the prior bounds? Every
/// bound answers it (μ = 0, ρ² = k(x, x), q = ld = 0), and the header, which names the inputs
/// and the response, still gives the input dimension. So a rejected file is read once more,
/// to tell a header-only file from one that is really at fault.
fn read_observations(path: &Path) -> std::result::Result<Table, String> {
    let error = match table::read(path) {
        Ok(table) => return Ok(table),
        Err(error) => error,
    };
    match header_only(path)? {
        Some(columns) => Ok(Table {
            columns,
            values: Vec::new(),
            lines: Vec::new(),
        }),
        None => Err(error),
    }
}

/// The number of columns of `path` if it is a regular file with a header row and no other
/// row, `None` otherwise (a pipe, which cannot be read a second time, or a file with rows).
///
/// # Errors
/// With no observations the header is the only source of the input dimension, so a file
/// without one (empty or blank), an unnamed column (a stray comma shifts the dimension) and a
/// lone row of numbers (an observation whose header was left out) are errors, not t = 0.
fn header_only(path: &Path) -> std::result::Result<Option<usize>, String> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    // The reader settings of `table::read`, so that the columns are counted alike.
    let Ok(mut reader) = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_path(path)
    else {
        return Ok(None);
    };
    let Ok(header) = reader.headers().cloned() else {
        return Ok(None);
    };
    if reader.records().next().is_some() {
        return Ok(None);
    }
    let name = path.display();
    if header.iter().all(str::is_empty) {
        return Err(format!(
            "{name}: no header row: even with no observations the file needs one naming the \
             columns (the inputs, then the response)"
        ));
    }
    if let Some(column) = header.iter().position(str::is_empty) {
        return Err(format!(
            "{name}:1: column {} of the header has no name",
            column + 1
        ));
    }
    if header.iter().all(|cell| cell.parse::<f64>().is_ok()) {
        return Err(format!(
            "{name}:1: `{}` is a row of numbers, not a header: the file needs a header row \
             naming the columns (the inputs, then the response) before the observations",
            header.iter().collect::<Vec<_>>().join(",")
        ));
    }
    Ok(Some(header.len()))
}

/// Runs the command, writing `mean,lcb,ucb` rows to stdout.
///
/// # Errors
/// A one-line message naming the file and line where the problem is.
pub fn run(args: &BoundsArgs) -> std::result::Result<(), String> {
    let kernel = kernel(args)?;
    let mut bound = bound(args, kernel).map_err(|e| e.to_string())?;
    let data = read_observations(&args.data)?;
    let query = table::read(&args.query)?;
    let (data_name, query_name) = (args.data.display(), args.query.display());
    if data.columns < 2 {
        return Err(format!(
            "{data_name}:1: need at least two columns (inputs, then the response), found {}",
            data.columns
        ));
    }
    let dim = data.columns - 1;
    if query.columns != dim {
        return Err(format!(
            "{query_name}:1: expected {dim} columns (the input dimension of {data_name}), found {}",
            query.columns
        ));
    }
    for i in 0..data.rows() {
        let (x, y) = data.row(i).split_at(dim);
        bound
            .observe(x, y[0])
            .map_err(|e| format!("{data_name}:{}: {e}", data.lines[i]))?;
    }
    let points = Points::from_row_major(&query.values, dim).map_err(|e| e.to_string())?;
    let bounds = bound.evaluate(&points).map_err(|e| match e {
        Error::NotPositiveDefinite { row, .. } => {
            format!("{query_name}:{}: {e}", query.lines[row])
        }
        e => format!("{query_name}: {e}"),
    })?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let write_error = |e: std::io::Error| format!("writing the output: {e}");
    writeln!(out, "mean,lcb,ucb").map_err(write_error)?;
    for j in 0..bounds.len() {
        // `{}` prints the shortest representation that reads back as the same f64.
        writeln!(
            out,
            "{},{},{}",
            bounds.mean[j], bounds.lcb[j], bounds.ucb[j]
        )
        .map_err(write_error)?;
    }
    out.flush().map_err(write_error)
}
