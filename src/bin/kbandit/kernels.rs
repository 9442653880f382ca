//! The kernels the command line offers, one list for every command.

use clap::ValueEnum;

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
        }
    }

    /// Matérn's ν, for the Matérn kernels.
    pub fn nu(self) -> Option<f64> {
        match self {
            Self::Matern52 => Some(2.5),
            Self::Matern32 => Some(1.5),
            Self::Matern12 => Some(0.5),
            Self::Rbf | Self::Linear => None,
        }
    }

    /// Refuses the linear kernel, which `command` (a reproduction on radial kernels with a
    /// length-scale) does not run.
    pub fn require_radial(kernels: &[Self], command: &str) -> Result<(), String> {
        match kernels.iter().find(|k| **k == Self::Linear) {
            None => Ok(()),
            Some(k) => Err(format!(
                "{command} runs the radial kernels rbf, matern52, matern32 and matern12, not {}",
                k.tag()
            )),
        }
    }
}
