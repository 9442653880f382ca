//! Bounds chosen at run time: [`BoundKind`] names the eight bounds, [`BoundConfig`] holds every
//! parameter any of them reads, and [`AnyBound`] is whichever one was built — a
//! [`ConfidenceBound`] that can also be cloned and snapshotted, unlike a
//! `Box<dyn ConfidenceBound>`.

use std::fmt;
use std::str::FromStr;

use super::{
    Amm, ArmSetInfo, Ay, Bkb, BoundParams, Bounds, CheckedParams, Cmm, ConfidenceBound,
    Diagnostics, Dmm, EkUcb, Igp, KUcb, SketchParams,
};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::points::Points;

/// The eight confidence bounds of the crate, by name.
///
/// [`BoundKind::name`] (also `Display`) is the name used by the `kbandit` command line, by
/// snapshots and by [`ConfidenceBound::name`]; `FromStr` accepts it in any case, with `_` for
/// `-`, and with the papers' `-ucb` suffix (`"DMM-UCB"`, `"k_ucb"`, `"ek-ucb"`).
///
/// # Examples
/// ```
/// use kernel_bandits::bound::{BoundConfig, BoundKind, ConfidenceBound};
/// use kernel_bandits::kernel::Matern;
/// let kernel = Matern::new(2.5, 0.5)?;
/// // Paper defaults for d = 3 and T = 1000 fill in what a bound needs (IGP's η = 2/T).
/// let config = BoundConfig::paper_defaults(&kernel, 3, 1000);
/// for name in ["ay", "IGP-UCB", "dmm", "ek_ucb"] {
///     let kind: BoundKind = name.parse()?;
///     let mut bound = kind.build(kernel, &config)?;
///     bound.observe(&[0.1, 0.2, 0.3], 0.5)?;
///     assert_eq!(bound.name(), kind.name());
/// }
/// assert_eq!(BoundKind::ALL.len(), 8);
/// assert!("ucb".parse::<BoundKind>().is_err());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
#[non_exhaustive]
pub enum BoundKind {
    /// [`Ay`]: AY-GP-UCB (Abbasi-Yadkori 2012).
    Ay,
    /// [`Igp`]: IGP-UCB (Chowdhury & Gopalan 2017).
    Igp,
    /// [`Amm`]: AMM-UCB (Flynn & Reeb 2024 Cor. 4.6).
    Amm,
    /// [`Dmm`]: DMM-UCB (Flynn & Reeb 2024 §5.4).
    Dmm,
    /// [`Cmm`]: CMM-UCB (Flynn & Reeb 2024 Thm 4.5).
    Cmm,
    /// [`KUcb`]: exact kernel UCB with a fixed width (the baseline of Calandriello et al. 2019
    /// and Zenati et al. 2022).
    KUcb,
    /// [`Bkb`]: BKB (Calandriello et al. 2019).
    Bkb,
    /// [`EkUcb`]: EK-UCB (Zenati et al. 2022).
    EkUcb,
}

impl BoundKind {
    /// Every kind, in the order of the crate's tables.
    pub const ALL: [Self; 8] = [
        Self::Ay,
        Self::Igp,
        Self::Amm,
        Self::Dmm,
        Self::Cmm,
        Self::KUcb,
        Self::Bkb,
        Self::EkUcb,
    ];

    /// The kinds whose bounds hold, with probability ≥ 1 − δ at every round at once, for σ, B
    /// and δ fixed before the data: AY, IGP, AMM, DMM and CMM (Abbasi-Yadkori 2012; Chowdhury &
    /// Gopalan 2017; Flynn & Reeb 2024). The others use a heuristic β̃. Only these may certify
    /// a recommendation or a safe set ([`crate::decide`], [`crate::safe`]).
    pub const VALID: [Self; 5] = [Self::Ay, Self::Igp, Self::Amm, Self::Dmm, Self::Cmm];

    /// The short name: `ay`, `igp`, `amm`, `dmm`, `cmm`, `k-ucb`, `bkb` or `ek-ucb`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ay => "ay",
            Self::Igp => "igp",
            Self::Amm => "amm",
            Self::Dmm => "dmm",
            Self::Cmm => "cmm",
            Self::KUcb => "k-ucb",
            Self::Bkb => "bkb",
            Self::EkUcb => "ek-ucb",
        }
    }

    /// Whether the bound rests on the exact posterior (all but BKB and EK-UCB).
    pub fn is_exact(self) -> bool {
        !matches!(self, Self::Bkb | Self::EkUcb)
    }

    /// Whether the bound keeps per-arm state for a fixed arm set
    /// ([`ConfidenceBound::fix_arms`]): the exact bounds except CMM-UCB, whose eigenbasis
    /// changes with every observation.
    pub fn keeps_arm_state(self) -> bool {
        self.is_exact() && self != Self::Cmm
    }

    /// Builds the bound on `kernel`: AY, IGP, AMM, DMM and CMM read `config.params`; K-UCB
    /// reads λ and β̃ from `config.sketch` (it is the exact counterpart of the sketched bounds,
    /// compared with the same β̃); BKB and EK-UCB read `config.sketch` and draw their
    /// dictionaries from `config.seed`.
    ///
    /// # Errors
    /// Invalid or missing parameters, as the bound's own constructor (e.g. IGP-UCB without η
    /// and without a horizon; [`BoundConfig::paper_defaults`] sets both).
    pub fn build<K: Kernel>(self, kernel: K, config: &BoundConfig) -> Result<AnyBound<K>> {
        let params = config.params;
        let sketch = config.sketch;
        Ok(match self {
            Self::Ay => AnyBound::Ay(Ay::new(kernel, params)?),
            Self::Igp => AnyBound::Igp(Igp::new(kernel, params)?),
            Self::Amm => AnyBound::Amm(Amm::new(kernel, params)?),
            Self::Dmm => AnyBound::Dmm(Dmm::new(kernel, params)?),
            Self::Cmm => AnyBound::Cmm(Cmm::new(kernel, params)?),
            Self::KUcb => {
                let beta = sketch.beta.ok_or(Error::MissingParameter {
                    name: "beta",
                    hint: "K-UCB has no theoretical width: set SketchParams::beta",
                })?;
                AnyBound::KUcb(KUcb::new(kernel, sketch.lambda, beta)?)
            }
            Self::Bkb => AnyBound::Bkb(Bkb::new(kernel, sketch, config.seed)?),
            Self::EkUcb => AnyBound::EkUcb(EkUcb::new(kernel, sketch, config.seed)?),
        })
    }

    /// [`BoundKind::build`], boxed as a trait object.
    ///
    /// # Errors
    /// As [`BoundKind::build`].
    pub fn build_boxed<K: Kernel + 'static>(
        self,
        kernel: K,
        config: &BoundConfig,
    ) -> Result<Box<dyn ConfidenceBound>> {
        Ok(Box::new(self.build(kernel, config)?))
    }
}

impl fmt::Display for BoundKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of the eight bounds (see [`BoundKind`]'s `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBound(pub String);

impl fmt::Display for UnknownBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = BoundKind::ALL.iter().map(|k| k.name()).collect();
        write!(
            f,
            "unknown bound {:?}: expected one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownBound {}

impl From<UnknownBound> for Error {
    fn from(e: UnknownBound) -> Self {
        Error::Unsupported {
            what: e.to_string(),
        }
    }
}

impl FromStr for BoundKind {
    type Err = UnknownBound;

    fn from_str(s: &str) -> std::result::Result<Self, UnknownBound> {
        let folded = s.trim().to_ascii_lowercase().replace('_', "-");
        // The papers write AY-GP-UCB, IGP-UCB, DMM-UCB, …; K-UCB and EK-UCB keep their suffix.
        let short = folded
            .strip_suffix("-gp-ucb")
            .or_else(|| folded.strip_suffix("-ucb"))
            .filter(|short| !matches!(*short, "k" | "ek"))
            .unwrap_or(&folded);
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == short)
            .ok_or_else(|| UnknownBound(s.to_string()))
    }
}

/// Every parameter any bound reads, for [`BoundKind::build`].
///
/// # Examples
/// ```
/// use kernel_bandits::bound::{BoundConfig, BoundKind, BoundParams};
/// use kernel_bandits::kernel::Rbf;
/// let config = BoundConfig::new().params(BoundParams::new().sigma(0.05).norm_bound(2.0));
/// let cmm = BoundKind::Cmm.build(Rbf::new(0.2)?, &config)?;
/// assert!(BoundKind::Igp.build(Rbf::new(0.2)?, &config).is_err()); // no η, no horizon
/// # let _ = cmm;
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundConfig {
    /// σ, B, δ, c, λ, η and T of AY, IGP, AMM, DMM and CMM.
    pub params: BoundParams,
    /// λ, β̃ and the sketch settings of K-UCB, BKB and EK-UCB.
    pub sketch: SketchParams,
    /// Seed of the random dictionaries of BKB and EK-UCB.
    pub seed: u64,
}

impl Default for BoundConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl BoundConfig {
    /// [`BoundParams::new`], the sketch settings of Zenati et al. (2022 §5: λ = μ = 10,
    /// β̃ = 0.1, γ = 0.1·λ, BKB's q̄ = 2) and seed 0.
    pub fn new() -> Self {
        Self {
            params: BoundParams::new(),
            sketch: SketchParams::new()
                .lambda(10.0)
                .mu(10.0)
                .beta(0.1)
                .gamma(1.0)
                .qbar(2.0),
            seed: 0,
        }
    }

    /// The settings of Flynn & Reeb (2024 §7) for `kernel` on inputs of dimension `dim` over
    /// `horizon` rounds ([`BoundParams::paper_defaults`]: c from the kernel's smoothness,
    /// η = 2/T), with the sketch settings of [`BoundConfig::new`] and their horizon T.
    pub fn paper_defaults(kernel: &(impl Kernel + ?Sized), dim: usize, horizon: usize) -> Self {
        let config = Self::new();
        Self {
            params: BoundParams::paper_defaults(kernel, dim, horizon),
            sketch: config.sketch.horizon(horizon),
            ..config
        }
    }

    /// Replaces the parameters of the exact bounds.
    pub fn params(mut self, params: BoundParams) -> Self {
        self.params = params;
        self
    }

    /// Replaces the settings of K-UCB and the sketched bounds.
    pub fn sketch(mut self, sketch: SketchParams) -> Self {
        self.sketch = sketch;
        self
    }

    /// Sets the seed of the sketched bounds.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// Any of the eight bounds, chosen at run time (see [`BoundKind::build`]).
///
/// It is a [`ConfidenceBound`] like each of them (every method goes to the bound inside), and
/// unlike a `Box<dyn ConfidenceBound>` it is `Clone` and, with the `serde` feature, a
/// `Snapshot` (module `kernel_bandits::snapshot`): a `UcbAgent<AnyBound<K>>` saves and restores
/// whichever bound it holds.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum AnyBound<K> {
    /// AY-GP-UCB.
    Ay(Ay<K>),
    /// IGP-UCB.
    Igp(Igp<K>),
    /// AMM-UCB.
    Amm(Amm<K>),
    /// DMM-UCB.
    Dmm(Dmm<K>),
    /// CMM-UCB.
    Cmm(Cmm<K>),
    /// K-UCB.
    KUcb(KUcb<K>),
    /// BKB.
    Bkb(Bkb<K>),
    /// EK-UCB.
    EkUcb(EkUcb<K>),
}

/// `$body` with `$b` bound to the bound inside `$any`, whichever it is.
macro_rules! dispatch {
    ($any:expr, $b:ident => $body:expr) => {
        match $any {
            AnyBound::Ay($b) => $body,
            AnyBound::Igp($b) => $body,
            AnyBound::Amm($b) => $body,
            AnyBound::Dmm($b) => $body,
            AnyBound::Cmm($b) => $body,
            AnyBound::KUcb($b) => $body,
            AnyBound::Bkb($b) => $body,
            AnyBound::EkUcb($b) => $body,
        }
    };
}

impl<K> AnyBound<K> {
    /// Which bound this is.
    pub fn kind(&self) -> BoundKind {
        match self {
            Self::Ay(_) => BoundKind::Ay,
            Self::Igp(_) => BoundKind::Igp,
            Self::Amm(_) => BoundKind::Amm,
            Self::Dmm(_) => BoundKind::Dmm,
            Self::Cmm(_) => BoundKind::Cmm,
            Self::KUcb(_) => BoundKind::KUcb,
            Self::Bkb(_) => BoundKind::Bkb,
            Self::EkUcb(_) => BoundKind::EkUcb,
        }
    }
}

impl<K: Kernel> AnyBound<K> {
    /// σ, B, δ, c (and λ, η) of AY, IGP, AMM, DMM and CMM, as the bound uses them (B and δ
    /// are those in force, e.g. after [`super::AdaptiveNorm`] doubled B); `None` for K-UCB, BKB
    /// and EK-UCB, whose widths are set by [`SketchParams`].
    pub fn params(&self) -> Option<&CheckedParams> {
        match self {
            Self::Ay(b) => Some(b.params()),
            Self::Igp(b) => Some(b.params()),
            Self::Amm(b) => Some(b.params()),
            Self::Dmm(b) => Some(b.params()),
            Self::Cmm(b) => Some(b.params()),
            Self::KUcb(_) | Self::Bkb(_) | Self::EkUcb(_) => None,
        }
    }
}

impl<K: Kernel> ConfidenceBound for AnyBound<K> {
    fn name(&self) -> &'static str {
        dispatch!(self, b => b.name())
    }
    fn observe(&mut self, x: &[f64], y: f64) -> Result<()> {
        dispatch!(self, b => b.observe(x, y))
    }
    fn observe_many(&mut self, points: &Points<'_>, targets: &[f64]) -> Result<()> {
        dispatch!(self, b => b.observe_many(points, targets))
    }
    fn diagnostics(&self) -> Diagnostics {
        dispatch!(self, b => b.diagnostics())
    }
    fn observations(&self) -> Result<super::Observations> {
        dispatch!(self, b => b.observations())
    }
    fn evaluate(&self, points: &Points<'_>) -> Result<Bounds> {
        dispatch!(self, b => b.evaluate(points))
    }
    fn argmax_ucb(&self, points: &Points<'_>) -> Result<usize> {
        dispatch!(self, b => b.argmax_ucb(points))
    }
    fn top_ucb(&self, points: &Points<'_>, count: usize) -> Result<Vec<usize>> {
        dispatch!(self, b => b.top_ucb(points, count))
    }
    fn top_ucb_with_terms(
        &self,
        points: &Points<'_>,
        count: usize,
    ) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
        dispatch!(self, b => b.top_ucb_with_terms(points, count))
    }
    fn len(&self) -> usize {
        dispatch!(self, b => b.len())
    }
    fn dim(&self) -> Option<usize> {
        dispatch!(self, b => b.dim())
    }
    fn truncate(&mut self, len: usize) {
        dispatch!(self, b => b.truncate(len))
    }
    fn remove_oldest(&mut self) -> Result<()> {
        dispatch!(self, b => b.remove_oldest())
    }
    fn fix_arms(&mut self, arms: &Points<'_>, memory_limit: Option<usize>) -> Result<bool> {
        dispatch!(self, b => b.fix_arms(arms, memory_limit))
    }
    fn release_arms(&mut self) {
        dispatch!(self, b => b.release_arms())
    }
    fn fixed_arms(&self) -> Option<ArmSetInfo> {
        dispatch!(self, b => b.fixed_arms())
    }
    fn gradient(&self, x: &[f64]) -> Result<super::BoundGradient> {
        dispatch!(self, b => b.gradient(x))
    }
    fn ucb_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        dispatch!(self, b => b.ucb_gradient(x))
    }
    fn ucb_terms(&self) -> usize {
        dispatch!(self, b => b.ucb_terms())
    }
    fn ucb_term_values(&self, x: &[f64]) -> Result<Vec<f64>> {
        dispatch!(self, b => b.ucb_term_values(x))
    }
    fn ucb_term_values_at(&self, points: &[&[f64]]) -> Vec<Result<Vec<f64>>> {
        dispatch!(self, b => b.ucb_term_values_at(points))
    }
    fn ucb_gradient_among(&self, x: &[f64], terms: &[usize]) -> Result<(f64, Vec<f64>)> {
        dispatch!(self, b => b.ucb_gradient_among(x, terms))
    }
    fn ucb_regularity(&self) -> Result<super::UcbRegularity<'_>> {
        dispatch!(self, b => b.ucb_regularity())
    }
    fn ucb_term_detail(&self, x: &[f64], term: usize) -> Result<super::UcbTermDetail> {
        dispatch!(self, b => b.ucb_term_detail(x, term))
    }
    fn pending_variance<'a>(
        &'a self,
        pending: &Points<'_>,
    ) -> Result<Box<dyn super::PendingVariance + 'a>> {
        dispatch!(self, b => b.pending_variance(pending))
    }
}

impl<K> AnyBound<K> {
    /// The error for a kind whose B cannot be changed in place.
    fn fixed_norm(&self) -> Error {
        let why = match self.kind() {
            BoundKind::Amm => {
                "AMM-UCB's radius R~^2 at a0 is never negative (Flynn & Reeb 2024 Lemma C.2), so \
                 its data never refute B"
            }
            _ => "only DMM-UCB and CMM-UCB can have their norm bound B and delta replaced",
        };
        Error::Unsupported {
            what: format!(
                "adjusting the norm bound of the {} bound: {why}",
                self.kind()
            ),
        }
    }
}

/// B and δ of the DMM-UCB or CMM-UCB inside; every other kind is refused: AMM-UCB because its
/// R̃² at a0 is never negative (Flynn & Reeb 2024 Lemma C.2), so its data can never refute B,
/// and the others because their radii are not the martingale mixture's.
///
/// `norm_bound` and `delta` report NaN for the other kinds (they have no such parameter, or, for
/// AY, IGP and AMM, one this capability does not manage).
impl<K: Kernel> super::AdjustableNorm for AnyBound<K> {
    fn norm_bound(&self) -> f64 {
        match self {
            Self::Dmm(b) => b.norm_bound(),
            Self::Cmm(b) => b.norm_bound(),
            _ => f64::NAN,
        }
    }
    fn delta(&self) -> f64 {
        match self {
            Self::Dmm(b) => b.delta(),
            Self::Cmm(b) => b.delta(),
            _ => f64::NAN,
        }
    }
    fn set_norm_bound(&mut self, norm_bound: f64, delta: f64) -> Result<()> {
        match self {
            Self::Dmm(b) => b.set_norm_bound(norm_bound, delta),
            Self::Cmm(b) => b.set_norm_bound(norm_bound, delta),
            _ => Err(self.fixed_norm()),
        }
    }
}

#[cfg(feature = "serde")]
impl<K: Kernel + crate::snapshot::Snapshot> crate::snapshot::Snapshot for AnyBound<K> {
    /// `bound<kernel>`; the state names the bound it holds.
    fn kind() -> String {
        format!("bound<{}>", K::kind())
    }

    fn restore(&mut self) -> Result<()> {
        dispatch!(self, b => crate::snapshot::Snapshot::restore(b))
    }
}
