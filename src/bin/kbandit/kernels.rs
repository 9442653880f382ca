//! The kernels the command line offers, one list for every command.

use clap::ValueEnum;
use kernel_bandits::kernel::Matern;

/// A kernel by name. The discriminants are fixed: `reproduce` derives its problem seeds from
/// them, so reordering the variants must not change a reproduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelName {
    /// Squared exponential (RBF): k = exp(−r²/(2ℓ²)).
    Rbf = 0,
    /// Matérn ν = 5/2.
    Matern52 = 1,
    /// Matérn ν = 3/2.
    Matern32 = 2,
    /// Matérn ν = 1/2 (exponential).
    Matern12 = 3,
    /// Linear: k = xᵀx' (no length-scale).
    Linear = 4,
    /// Matérn of any smoothness ν ∈ (0, 100], given with `--nu` (`bounds`, `suggest` and `bench`).
    Matern = 5,
}

impl KernelName {
    /// The name on the command line and in file names.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Rbf => "rbf",
            Self::Matern52 => "matern52",
            Self::Matern32 => "matern32",
            Self::Matern12 => "matern12",
            Self::Linear => "linear",
            Self::Matern => "matern",
        }
    }

    /// The name in tables and plots.
    pub fn title(self) -> &'static str {
        match self {
            Self::Rbf => "RBF",
            Self::Matern52 => "Matérn 5/2",
            Self::Matern32 => "Matérn 3/2",
            Self::Matern12 => "Matérn 1/2",
            Self::Linear => "linear",
            Self::Matern => "Matérn",
        }
    }

    /// Matérn's ν, for the Matérn kernels of fixed smoothness (`None` for `matern`, whose ν
    /// comes from `--nu`: see [`KernelName::smoothness`]).
    pub fn nu(self) -> Option<f64> {
        match self {
            Self::Matern52 => Some(2.5),
            Self::Matern32 => Some(1.5),
            Self::Matern12 => Some(0.5),
            Self::Rbf | Self::Linear | Self::Matern => None,
        }
    }

    /// Matérn's ν for this kernel and the `--nu` option: the fixed ν of matern52, matern32 and
    /// matern12, `--nu` for matern (required, a finite number in (0, 100]), `None` for rbf and
    /// linear.
    ///
    /// # Errors
    /// A one-line message if `--nu` is missing for matern, given for another kernel, or out of
    /// range.
    pub fn smoothness(self, nu: Option<f64>) -> Result<Option<f64>, String> {
        match (self, nu) {
            (Self::Matern, None) => Err("--nu is required for the matern kernel".into()),
            (Self::Matern, Some(nu)) => {
                // The library's own check, so that the CLI accepts exactly what it does.
                Matern::new(nu, 1.0).map_err(|e| format!("--nu: {e}"))?;
                Ok(Some(nu))
            }
            (_, Some(_)) => Err(format!(
                "--nu applies to the matern kernel only, not to {} (matern52, matern32 and \
                 matern12 fix ν; e.g. --kernel matern --nu 3.5)",
                self.tag()
            )),
            (_, None) => Ok(self.nu()),
        }
    }

    /// Refuses the linear kernel, which `command` (a reproduction on radial kernels with a
    /// length-scale) does not run, and `matern`, whose ν the reproductions do not take.
    pub fn require_radial(kernels: &[Self], command: &str) -> Result<(), String> {
        match kernels
            .iter()
            .find(|k| matches!(k, Self::Linear | Self::Matern))
        {
            None => Ok(()),
            Some(k) => Err(format!(
                "{command} runs the radial kernels rbf, matern52, matern32 and matern12, not {}",
                k.tag()
            )),
        }
    }
}
