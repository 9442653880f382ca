//! The synthetic RKHS kernel bandit of Flynn & Reeb (2024) §7.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result, positive};
use crate::kernel::Kernel;
use crate::points::{AsPoints, Points};

/// Settings of the synthetic problem.
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `dim` | 3 | ≥ 1 | input dimension d; arms and centres lie in [0, 1]^d |
/// | `centres` | 20 | ≥ 1 | number of kernel centres zᵢ of f |
/// | `arms` | 100 | ≥ 1 | fresh arms offered each round |
/// | `norm_bound` | 10 | (0, ∞) | ‖f‖_H = B exactly |
/// | `noise_sd` | 0.1 | [0, ∞) | reward noise N(0, σ²) |
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticConfig {
    /// Input dimension d.
    pub dim: usize,
    /// Number of centres of f.
    pub centres: usize,
    /// Arms per round.
    pub arms: usize,
    /// RKHS norm B of f.
    pub norm_bound: f64,
    /// Standard deviation σ of the Gaussian reward noise.
    pub noise_sd: f64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        Self {
            dim: 3,
            centres: 20,
            arms: 100,
            norm_bound: 10.0,
            noise_sd: 0.1,
        }
    }
}

/// The kernel bandit of Flynn & Reeb (2024) §7: f(x) = b Σᵢ wᵢ k(x, zᵢ) with zᵢ ~ U([0, 1])^d,
/// w ~ N(0, I) and b = B/√(wᵀK_zz w), so that ‖f‖_H = B; each round offers fresh arms
/// ~ U([0, 1])^d, and a reward is f(x) + ε with ε ~ N(0, σ²).
///
/// Everything random is a function of the seed and the round number, so the same f, arm sets
/// and noise can be replayed for several agents ([`SyntheticProblem::round`]).
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let kernel = Rbf::new(0.5)?;
/// let problem = SyntheticProblem::new(kernel, SyntheticConfig::default(), 1)?;
/// assert!((problem.rkhs_norm() - 10.0).abs() < 1e-9);
/// let mut agent = RandomAgent::new(2);
/// let trace = problem.run(&mut agent, 20)?;
/// assert_eq!(trace.regret.len(), 20);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SyntheticProblem<K> {
    kernel: K,
    config: SyntheticConfig,
    seed: u64,
    /// Centres zᵢ, row-major.
    centres: Vec<f64>,
    /// b·wᵢ.
    weights: Vec<f64>,
}

/// The arms, their true values and the noise of one round.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    dim: usize,
    /// Arms, row-major.
    arms: Vec<f64>,
    /// f at each arm.
    pub values: Vec<f64>,
    /// The noise ε added to whichever arm is played this round.
    pub noise: f64,
}

impl Round {
    /// A round with arms `arms` (row-major, `dim` coordinates each), true values and noise.
    pub(crate) fn new(dim: usize, arms: Vec<f64>, values: Vec<f64>, noise: f64) -> Self {
        Self {
            dim,
            arms,
            values,
            noise,
        }
    }

    /// The arms as points.
    pub fn arms(&self) -> Points<'_> {
        Points::from_row_major(&self.arms, self.dim).expect("arms are finite by construction")
    }

    /// Arm `i`'s coordinates.
    pub fn arm(&self, i: usize) -> &[f64] {
        &self.arms[i * self.dim..(i + 1) * self.dim]
    }

    /// max_x f(x) over this round's arms.
    pub fn best_value(&self) -> f64 {
        self.values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

impl AsPoints for Round {
    fn as_points(&self) -> Result<Points<'_>> {
        Ok(self.arms())
    }
}

/// What an agent did over a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RegretTrace {
    /// Index of the arm played in each round.
    pub chosen: Vec<usize>,
    /// Noisy reward observed in each round.
    pub rewards: Vec<f64>,
    /// Instantaneous regret rₜ = max f − f(xₜ) in each round.
    pub regret: Vec<f64>,
}

impl RegretTrace {
    /// Cumulative regret after each round.
    pub fn cumulative(&self) -> Vec<f64> {
        self.regret
            .iter()
            .scan(0.0, |acc, r| {
                *acc += r;
                Some(*acc)
            })
            .collect()
    }

    /// Total regret over the run.
    pub fn total(&self) -> f64 {
        self.regret.iter().sum()
    }
}

/// SplitMix64 finaliser: decorrelates the seeds of the per-round generators (of the synthetic
/// and the contextual problems).
pub(crate) fn mix(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Stream of the generator that draws f; rounds use streams 0, 1, 2, ….
const FUNCTION_STREAM: u64 = u64::MAX;

impl<K: Kernel> SyntheticProblem<K> {
    /// Draws f for `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a zero dimension, centre or arm count, a non-positive B
    /// or a negative or non-finite σ; the kernel's dimension check; [`Error::NonFinite`] if the
    /// drawn function has zero RKHS norm (all weights cancel — practically impossible).
    pub fn new(kernel: K, config: SyntheticConfig, seed: u64) -> Result<Self> {
        for (name, value) in [
            ("dim", config.dim),
            ("centres", config.centres),
            ("arms", config.arms),
        ] {
            if value == 0 {
                return Err(Error::InvalidParameter {
                    name,
                    value: 0.0,
                    expected: "at least 1",
                });
            }
        }
        // The centres and each round's arms are stored as one row-major vector each.
        for (name, value) in [("centres", config.centres), ("arms", config.arms)] {
            if value
                .checked_mul(config.dim)
                .is_none_or(|n| n > isize::MAX as usize / 8)
            {
                return Err(Error::InvalidParameter {
                    name,
                    value: value as f64,
                    expected: "a count whose points (count × dim coordinates) fit in memory",
                });
            }
        }
        positive("norm_bound", config.norm_bound)?;
        crate::error::non_negative("noise_sd", config.noise_sd)?;
        kernel.check_dim(config.dim)?;
        let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, FUNCTION_STREAM));
        let centres: Vec<f64> = (0..config.centres * config.dim)
            .map(|_| rng.random::<f64>())
            .collect();
        let raw: Vec<f64> = (0..config.centres)
            .map(|_| StandardNormal.sample(&mut rng))
            .collect();
        let gram = kernel.gram(&Points::from_row_major(&centres, config.dim)?)?;
        let norm_sq = (0..config.centres)
            .map(|i| {
                (0..config.centres)
                    .map(|j| raw[i] * gram[(i, j)] * raw[j])
                    .sum::<f64>()
            })
            .sum::<f64>();
        if !(norm_sq > 0.0 && norm_sq.is_finite()) {
            return Err(Error::NonFinite {
                what: "RKHS norm of the drawn function".into(),
            });
        }
        let b = config.norm_bound / norm_sq.sqrt();
        Ok(Self {
            kernel,
            config,
            seed,
            centres,
            weights: raw.iter().map(|w| b * w).collect(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &SyntheticConfig {
        &self.config
    }

    /// The kernel f was drawn from.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// f(x).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if x has the wrong dimension.
    pub fn value(&self, x: &[f64]) -> Result<f64> {
        if x.len() != self.config.dim {
            return Err(Error::DimensionMismatch {
                expected: self.config.dim,
                got: x.len(),
            });
        }
        Ok(self.value_unchecked(x))
    }

    /// The seed f was drawn from.
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// The centres zᵢ (row-major) and the weights b·wᵢ of f.
    pub(crate) fn centres_and_weights(&self) -> (&[f64], &[f64]) {
        (&self.centres, &self.weights)
    }

    pub(crate) fn value_unchecked(&self, x: &[f64]) -> f64 {
        self.centres
            .chunks_exact(self.config.dim)
            .zip(&self.weights)
            .map(|(z, w)| w * self.kernel.eval(z, x))
            .sum()
    }

    /// ‖f‖_H = √(b²wᵀK_zz w), recomputed from the centres (equals B up to rounding).
    pub fn rkhs_norm(&self) -> f64 {
        let d = self.config.dim;
        let mut norm_sq = 0.0;
        for (zi, wi) in self.centres.chunks_exact(d).zip(&self.weights) {
            for (zj, wj) in self.centres.chunks_exact(d).zip(&self.weights) {
                norm_sq += wi * wj * self.kernel.eval(zi, zj);
            }
        }
        norm_sq.sqrt()
    }

    /// The arms, true values and noise of round `t` (0-based); the same for every call.
    pub fn round(&self, t: usize) -> Round {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, t as u64));
        let d = self.config.dim;
        let arms: Vec<f64> = (0..self.config.arms * d)
            .map(|_| rng.random::<f64>())
            .collect();
        let standard: f64 = StandardNormal.sample(&mut rng);
        let values = arms
            .chunks_exact(d)
            .map(|x| self.value_unchecked(x))
            .collect();
        Round {
            dim: d,
            arms,
            values,
            noise: self.config.noise_sd * standard,
        }
    }
}

impl<K: Kernel> super::Environment for SyntheticProblem<K> {
    type Round = Round;

    fn round(&self, t: usize) -> Round {
        SyntheticProblem::round(self, t)
    }
}

impl super::BanditRound for Round {
    fn arms(&self) -> Points<'_> {
        self.arms()
    }
    fn arm(&self, i: usize) -> &[f64] {
        self.arm(i)
    }
    fn values(&self) -> &[f64] {
        &self.values
    }
    fn noise(&self) -> f64 {
        self.noise
    }
}
