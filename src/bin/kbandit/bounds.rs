//! `kbandit bounds`: mean, LCB and UCB at query points from logged observations.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use kernel_bandits::Result;
use kernel_bandits::bound::{AdaptiveNorm, AnyBound, BoundConfig, BoundKind, CheckedBounds};
use kernel_bandits::decide::RegretCertificate;
use kernel_bandits::hyper::{
    FitOptions, KernelFamily, Noise, NoiseEstimate, NoiseVerdict, estimate_noise,
    fit_hyperparameters,
};
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
    /// Confidence bound: ay, igp, amm, dmm or cmm.
    #[arg(long, value_parser = crate::parse_bound)]
    bound: BoundKind,
    #[command(flatten)]
    model: ModelArgs,
    /// Fit the length-scale ℓ and the noise σ (maximum a posteriori under the priors of
    /// `kernel_bandits::hyper`; family from `--kernel` and `--nu`, output scale 1) on the
    /// observations (the first `--warmup` rows if given), print them to stderr and use them
    /// instead of `--lengthscale` and `--sigma`. With `--sigma` given as well, σ is held at it
    /// and only ℓ is fitted.
    #[arg(long)]
    fit: bool,
    /// With `--fit`: fit on the first N rows and bound with the rest only. Without it the bound
    /// reuses the rows it was fitted on and is an estimate, not a guaranteed bound (a warning
    /// says so).
    #[arg(long, requires = "fit")]
    warmup: Option<usize>,
    /// Start B at B0 and double it whenever the data refute it (dmm or cmm only; the one δ
    /// serves every level; the doublings are printed to stderr). Replaces `--norm-bound`.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "norm_bound")]
    adaptive_norm: Option<f64>,
    /// Print estimates of the noise σ (from replicated inputs and from the residuals of a
    /// kernel smoother) to stderr, and whether `--sigma` is plausible.
    #[arg(long)]
    check_noise: bool,
    /// Exit with status 0 even when the data refute the assumptions (LCB > UCB at some query
    /// point, or an empty confidence set). The warning on stderr is printed all the same;
    /// without this flag such a run exits with status 3 (after writing its output).
    #[arg(long)]
    allow_crossed: bool,
    /// Treat the query points as the arms of a decision and print to stderr, after the bounds,
    /// the certified recommendation: the row with the largest LCB, the largest UCB over the rows
    /// and the gap between them, which bounds how much better the best row is than the
    /// recommended one, with probability ≥ 1 − δ, whenever σ, B and the kernel were fixed before
    /// the data (not with `--adaptive-norm`, nor with `--fit` without `--warmup`: the line says
    /// so). Nothing is certified when the data refute the assumptions.
    #[arg(long)]
    certify: bool,
}

/// The kernel, the assumptions and the bounds' tuning constants, shared by `kbandit bounds` and
/// `kbandit suggest` (each adds its own `--bound`).
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Kernel.
    #[arg(long, value_enum)]
    pub kernel: KernelName,
    /// Matérn smoothness ν ∈ (0, 100] of `--kernel matern` (required there, refused with any
    /// other kernel).
    #[arg(long, allow_negative_numbers = true)]
    pub nu: Option<f64>,
    /// Length-scale ℓ (required by every kernel but `linear`).
    #[arg(long, allow_negative_numbers = true)]
    pub lengthscale: Option<f64>,
    #[command(flatten)]
    pub assumptions: Assumptions,
    /// c: covariance scale of the martingale mixture (a0 = σ²/c) [default: adaptive: AMM, DMM
    /// and CMM choose it from the grid 10^{-j/2}, j = 0..8, paying ln 9 in the radius; AY and IGP
    /// use c = 1].
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// λ for AY-GP-UCB [default: σ²/c].
    #[arg(long, allow_negative_numbers = true)]
    pub lambda: Option<f64>,
    /// η for IGP-UCB (the paper's 2/T with T = 1000).
    #[arg(long, default_value_t = 0.002, allow_negative_numbers = true)]
    pub eta: f64,
}

impl ModelArgs {
    /// The kernel of `--kernel`, `--nu` and `--lengthscale`.
    pub fn kernel(&self) -> std::result::Result<Box<dyn Kernel>, String> {
        build_kernel(self.kernel, self.nu, self.lengthscale)
    }

    /// The parameters of the command line, with σ replaced by `sigma` and B by `norm_bound`.
    pub fn params_with(&self, sigma: f64, norm_bound: f64) -> BoundParams {
        let mut params = self
            .assumptions
            .apply(BoundParams::new())
            .sigma(sigma)
            .norm_bound(norm_bound)
            .eta(self.eta);
        if let Some(scale) = self.scale {
            params = params.scale(scale);
        }
        if let Some(lambda) = self.lambda {
            params = params.lambda(lambda);
        }
        params
    }

    /// The parameters of the command line.
    pub fn params(&self) -> BoundParams {
        self.params_with(self.assumptions.sigma, self.assumptions.norm_bound)
    }
}

/// The exit status of `kbandit bounds` when the data refute the assumptions (see
/// [`misspecification_warning`]), unless `--allow-crossed` is given.
pub const EXIT_MISSPECIFIED: u8 = 3;

/// The warning for bounds that the data refute: what is wrong (from
/// [`CheckedBounds::describe`](kernel_bandits::bound::CheckedBounds::describe)), the σ and B
/// used, and what to change on the command line.
fn misspecification_warning(what: &str, sigma: f64, norm_bound: f64, args: &BoundsArgs) -> String {
    let sigma_origin = if args.fit { " (fitted)" } else { "" };
    let adaptive = if args.adaptive_norm.is_some() {
        "; --adaptive-norm reached its cap"
    } else {
        ""
    };
    format!(
        "warning: {what}. σ = {sigma}{sigma_origin}, B = {norm_bound}{adaptive}: try a larger \
         --norm-bound, a larger σ, another kernel or length-scale, or --adaptive-norm B0 (B \
         doubles whenever the data refute it). Exit status {EXIT_MISSPECIFIED}; \
         --allow-crossed exits with 0"
    )
}

fn kernel(args: &BoundsArgs) -> std::result::Result<Box<dyn Kernel>, String> {
    args.model.kernel().map_err(|e| {
        if e.starts_with("--lengthscale is required") {
            format!("{e} (or fit it with --fit)")
        } else {
            e
        }
    })
}

/// The kernel of `--kernel`, `--nu` and `--lengthscale`.
fn build_kernel(
    name: KernelName,
    nu: Option<f64>,
    lengthscale: Option<f64>,
) -> std::result::Result<Box<dyn Kernel>, String> {
    let nu = name.smoothness(nu)?;
    let lengthscale = || {
        lengthscale
            .ok_or_else(|| format!("--lengthscale is required for the {} kernel", name.tag()))
    };
    let invalid = |e: Error| format!("--lengthscale: {e}");
    Ok(match (name, nu) {
        (KernelName::Linear, _) => Box::new(Linear::new()),
        (_, Some(nu)) => Box::new(Matern::new(nu, lengthscale()?).map_err(invalid)?),
        (_, None) => Box::new(Rbf::new(lengthscale()?).map_err(invalid)?),
    })
}

/// The kernel family `--fit` fits: the radial kernel of `--kernel` and `--nu`.
fn family(args: &BoundsArgs) -> std::result::Result<KernelFamily, String> {
    if args.model.lengthscale.is_some() {
        return Err("--lengthscale conflicts with --fit, which fits it".into());
    }
    match (
        args.model.kernel,
        args.model.kernel.smoothness(args.model.nu)?,
    ) {
        (KernelName::Linear, _) => Err("--fit needs a radial kernel (rbf or matern)".into()),
        (_, Some(nu)) => Ok(KernelFamily::Matern { nu }),
        (_, None) => Ok(KernelFamily::Rbf),
    }
}

/// The bound the command computes: as given, or with B doubled on refutation.
enum Built {
    Plain(AnyBound<Box<dyn Kernel>>),
    Adaptive(AdaptiveNorm<AnyBound<Box<dyn Kernel>>>),
}

impl Built {
    fn bound(&mut self) -> &mut dyn ConfidenceBound {
        match self {
            Self::Plain(b) => b,
            Self::Adaptive(b) => b,
        }
    }
}

fn bound(args: &BoundsArgs, kernel: Box<dyn Kernel>, sigma: f64) -> Result<Built> {
    // K-UCB and the sketched bounds are not confidence bounds for given σ, B and δ.
    if !args.bound.is_exact() || args.bound == BoundKind::KUcb {
        return Err(Error::Unsupported {
            what: format!(
                "`kbandit bounds` computes ay, igp, amm, dmm or cmm, not {}",
                args.bound
            ),
        });
    }
    let norm_bound = args
        .adaptive_norm
        .unwrap_or(args.model.assumptions.norm_bound);
    let config = BoundConfig::new().params(args.model.params_with(sigma, norm_bound));
    let bound = args.bound.build(kernel, &config)?;
    Ok(match args.adaptive_norm {
        None => Built::Plain(bound),
        Some(_) => Built::Adaptive(AdaptiveNorm::new(bound)?),
    })
}

/// What `--check-noise` prints: both estimates and the verdict on σ.
fn report_noise(estimate: &NoiseEstimate, sigma: f64) {
    match &estimate.replicates {
        Some(r) => {
            let verdict = match r.assess(sigma) {
                Ok(NoiseVerdict::TooSmall) => {
                    "below it: refuted (σ bounds the noise's standard deviation from above)"
                }
                Ok(NoiseVerdict::Plausible) => "inside it: plausible",
                Ok(NoiseVerdict::Loose) => {
                    "above it: valid if the noise is Gaussian-like, but loose"
                }
                Err(_) => "not comparable",
            };
            eprintln!(
                "noise from {} replicated inputs ({} degrees of freedom): σ̂ = {:.6}, {:.0}% interval [{:.6}, {:.6}]; --sigma {sigma} is {verdict}",
                r.groups,
                r.degrees_of_freedom,
                r.sigma,
                100.0 * r.confidence,
                r.interval.0,
                r.interval.1
            );
        }
        None => eprintln!("noise from replicates: no input is observed twice"),
    }
    if let Some(r) = &estimate.residual {
        eprintln!(
            "noise from smoother residuals (leave-one-out regulariser {:.3e}, {:.1} effective parameters): σ̂ = {:.6}{}",
            r.regulariser,
            r.effective_parameters,
            r.sigma,
            if r.at_search_edge {
                " (regulariser at the edge of its range: the kernel does not suit these data, σ̂ means little)"
            } else {
                ""
            }
        );
    }
}

/// The observations in `path`, which may be none.
///
/// [`table::read`] rejects a table without rows, as it should for the query points. But no
/// observations is a fair question about the data: t = 0, what are the prior bounds? Every
/// bound answers it (μ = 0, ρ² = k(x, x), q = ld = 0), and the header, which names the inputs
/// and the response, still gives the input dimension. So a rejected file is read once more,
/// to tell a header-only file from one that is really at fault.
/// The observations (inputs, then the `value` column) and the points (the same inputs) of a
/// command, checked to agree: (observations, points, input dimension).
///
/// # Errors
/// Unreadable files, fewer than two columns of observations, or points of another dimension
/// (messages name the file and the line).
pub(crate) fn read_data_and_points(
    data: &Path,
    points: &Path,
    value: &str,
) -> std::result::Result<(Table, Table, usize), String> {
    let observations = read_observations(data)?;
    let rows = table::read(points)?;
    let (data_name, points_name) = (data.display(), points.display());
    if observations.columns < 2 {
        return Err(format!(
            "{data_name}:1: need at least two columns (inputs, then the {value}), found {}",
            observations.columns
        ));
    }
    let dim = observations.columns - 1;
    if rows.columns != dim {
        return Err(format!(
            "{points_name}:1: expected {dim} columns (the input dimension of {data_name}), found {}",
            rows.columns
        ));
    }
    Ok((observations, rows, dim))
}

pub(crate) fn read_observations(path: &Path) -> std::result::Result<Table, String> {
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

/// Runs the command, writing `mean,lcb,ucb` rows to stdout. Returns whether the values are
/// confidence bounds: `false` (after a warning on stderr) when the data refute the
/// assumptions and `--allow-crossed` is not given.
///
/// # Errors
/// A one-line message naming the file and line where the problem is.
pub fn run(args: &BoundsArgs, sigma_given: bool) -> std::result::Result<bool, String> {
    let family = if args.fit { Some(family(args)?) } else { None };
    if let Some(b) = args.adaptive_norm
        && !(b.is_finite() && b > 0.0)
    {
        return Err(format!("--adaptive-norm {b} is not finite and positive"));
    }
    if args.adaptive_norm.is_some() && !matches!(args.bound, BoundKind::Dmm | BoundKind::Cmm) {
        return Err(format!(
            "--adaptive-norm needs dmm or cmm, whose diagnostics can refute B, not {}",
            args.bound
        ));
    }
    // Without --fit the kernel and the bound are checked before any file is read, so that a bad
    // flag is reported as such whatever the files hold.
    let given = match family {
        None => Some(
            bound(args, kernel(args)?, args.model.assumptions.sigma).map_err(|e| e.to_string())?,
        ),
        Some(_) => None,
    };
    let (data, query, dim) = read_data_and_points(&args.data, &args.query, "response")?;
    let (data_name, query_name) = (args.data.display(), args.query.display());
    let inputs: Vec<Vec<f64>> = (0..data.rows())
        .map(|i| data.row(i)[..dim].to_vec())
        .collect();
    let targets: Vec<f64> = (0..data.rows()).map(|i| data.row(i)[dim]).collect();
    let (kernel, sigma, first) = match family {
        // The same kernel again (cheap): the one built above is inside `given`.
        None => (kernel(args)?, args.model.assumptions.sigma, 0),
        Some(family) => {
            let warmup = args.warmup.unwrap_or(data.rows());
            if warmup < 2 || warmup > data.rows() {
                return Err(format!(
                    "--warmup {warmup}: need at least 2 and at most the {} observations of {data_name}",
                    data.rows()
                ));
            }
            let mut options = FitOptions::new().family(family);
            if sigma_given {
                options = options.noise(Noise::Fixed(args.model.assumptions.sigma));
            }
            let fit = fit_hyperparameters(&options, &inputs[..warmup], &targets[..warmup])
                .map_err(|e| format!("--fit on the first {warmup} rows of {data_name}: {e}"))?;
            eprintln!(
                "fitted on {warmup} observations: lengthscale = {}, sigma = {}{}, log marginal likelihood = {:.6}",
                fit.lengthscales()[0],
                fit.noise_sd(),
                if sigma_given { " (--sigma, held)" } else { "" },
                fit.log_likelihood(),
            );
            if let Some(report) = fit.edge_report() {
                eprintln!("warning: --fit: {report}");
            }
            if args.warmup.is_none() {
                eprintln!(
                    "warning: the bound reuses the observations ℓ and σ were fitted on, so its \
                     values are estimates, not guaranteed bounds; --warmup N fits on the first \
                     N rows and bounds with the rest"
                );
            }
            let first = if args.warmup.is_some() { warmup } else { 0 };
            let sigma = fit.noise_sd();
            (Box::new(fit.into_kernel()) as Box<dyn Kernel>, sigma, first)
        }
    };
    if args.check_noise {
        let estimate = estimate_noise(&kernel, &inputs, &targets, 0.95)
            .map_err(|e| format!("--check-noise on {data_name}: {e}"))?;
        report_noise(&estimate, sigma);
    }
    let mut built = match given {
        Some(built) => built,
        None => bound(args, kernel, sigma).map_err(|e| e.to_string())?,
    };
    let bound = built.bound();
    for i in first..data.rows() {
        bound
            .observe(&inputs[i], targets[i])
            .map_err(|e| format!("{data_name}:{}: {e}", data.lines[i]))?;
    }
    if let Built::Adaptive(adaptive) = &built {
        for d in adaptive.doublings() {
            eprintln!(
                "B refuted after {} observations in the bound: {} -> {}",
                d.observations, d.old_norm, d.new_norm
            );
        }
        eprintln!(
            "B = {} (level {}, δ = {}){}",
            adaptive.norm_bound(),
            adaptive.level(),
            adaptive.delta(),
            if adaptive.exhausted().is_some() {
                "; the doubling cap was reached and the confidence set is still empty"
            } else {
                ""
            }
        );
    }
    let norm_bound = match &built {
        Built::Adaptive(adaptive) => adaptive.norm_bound(),
        Built::Plain(_) => args.model.assumptions.norm_bound,
    };
    let bound = built.bound();
    let points = Points::from_row_major(&query.values, dim).map_err(|e| e.to_string())?;
    let checked = bound.evaluate_checked(&points).map_err(|e| match e {
        Error::NotPositiveDefinite { row, .. } => {
            format!("{query_name}:{}: {e}", query.lines[row])
        }
        e => format!("{query_name}: {e}"),
    })?;
    let bounds = &checked.bounds;
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
    out.flush().map_err(write_error)?;
    match checked.describe() {
        Some(what) => {
            eprintln!(
                "kbandit: {}",
                misspecification_warning(&what, sigma, norm_bound, args)
            );
            Ok(args.allow_crossed)
        }
        None => {
            if args.certify {
                print_certificate(&checked, bound.len(), &points, &query, args)?;
            }
            Ok(true)
        }
    }
}

/// The `--certify` line: the certificate of [`kernel_bandits::decide::certify`] over the query
/// rows, from the bounds already evaluated, with the file's line numbers, and whether it carries
/// the guarantee.
fn print_certificate(
    checked: &CheckedBounds,
    observations: usize,
    points: &Points<'_>,
    query: &Table,
    args: &BoundsArgs,
) -> std::result::Result<(), String> {
    let c = RegretCertificate::from_checked(points, checked, observations)
        .map_err(|e| format!("{}: --certify: {e}", args.query.display()))?;
    let heuristic = if args.adaptive_norm.is_some() {
        Some("B was learnt from the data by --adaptive-norm")
    } else if args.fit && args.warmup.is_none() {
        Some("the bound reuses the rows ℓ and σ were fitted on")
    } else {
        None
    };
    let r = &c.recommendation;
    eprintln!(
        "certificate: recommended row {} ({}:{}), lcb = {}, ucb = {}; max ucb = {} at row {} ({}:{}); \
         gap = {}{}",
        r.index + 1,
        args.query.display(),
        query.lines[r.index],
        r.lcb,
        r.ucb,
        c.upper,
        c.upper_index + 1,
        args.query.display(),
        query.lines[c.upper_index],
        c.gap,
        match heuristic {
            None => format!(
                " (with probability ≥ 1 − δ = {}, the best row is at most gap better than the \
                 recommended one)",
                1.0 - args.model.assumptions.delta
            ),
            Some(why) => format!(" (an estimate, not a guarantee: {why})"),
        }
    );
    Ok(())
}
