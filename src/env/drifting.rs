//! Non-stationary rewards on a fixed arm set: piecewise-constant or drifting functions
//! (Iwazaki & Takeno 2025 §6).

use std::fmt;
use std::sync::Arc;

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use super::synthetic::{Round, mix};
use crate::error::{Error, Result, non_negative};
use crate::kernel::Kernel;
use crate::points::AsPoints;

/// A reward function of the round and the arm.
type RewardFn = Arc<dyn Fn(usize, &[f64]) -> f64 + Send + Sync>;

/// One piece of a piecewise-constant sequence: the first round and the function from then on.
pub type Piece<'a> = (usize, &'a dyn Fn(&[f64]) -> f64);

enum Rewards {
    /// (first round, f at every arm), first rounds increasing from 0.
    Phases(Vec<(usize, Vec<f64>)>),
    Drifting(RewardFn),
}

/// A bandit on a fixed finite arm set whose mean rewards f_t change with the round t: either
/// a piecewise-constant sequence of functions (abrupt changes, [`DriftingProblem::piecewise`],
/// [`DriftingProblem::paper004`]) or any function of (t, x) ([`DriftingProblem::drifting`]).
/// Regret is measured against the best arm of the current function; noise is N(0, σ²), a pure
/// function of (seed, t) like every environment here.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// use kernel_bandits::env::DriftingProblem;
/// let arms = [[0.0], [0.5], [1.0]];
/// let f = |x: &[f64]| x[0];
/// let g = |x: &[f64]| 1.0 - x[0];
/// let problem = DriftingProblem::piecewise(&arms, &[(0, &f), (10, &g)], 0.1, 3)?;
/// assert_eq!(problem.round(9).values, vec![0.0, 0.5, 1.0]);
/// assert_eq!(problem.round(10).values, vec![1.0, 0.5, 0.0]);
/// assert_eq!(problem.variation(20), 1.0);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Clone)]
pub struct DriftingProblem {
    dim: usize,
    arms: Vec<f64>,
    rewards: Arc<Rewards>,
    /// ‖f⁽ᵏ⁾‖_H of each piece, when known (the functions of Iwazaki & Takeno 2025).
    norms: Option<Vec<f64>>,
    noise_sd: f64,
    seed: u64,
}

impl fmt::Debug for DriftingProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriftingProblem")
            .field("arms", &(self.arms.len() / self.dim.max(1)))
            .field("dim", &self.dim)
            .field("noise_sd", &self.noise_sd)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// The 30 × 30 grid of Iwazaki & Takeno (2025) §6: points (i/29, j/29) of [0, 1]², row by row.
pub fn unit_grid(per_side: usize) -> Vec<[f64; 2]> {
    let step = 1.0 / (per_side.max(2) - 1) as f64;
    (0..per_side * per_side)
        .map(|k| [(k / per_side) as f64 * step, (k % per_side) as f64 * step])
        .collect()
}

impl DriftingProblem {
    fn with(
        arms: &(impl AsPoints + ?Sized),
        rewards: Rewards,
        noise_sd: f64,
        seed: u64,
    ) -> Result<Self> {
        let arms = arms.as_points()?;
        if arms.is_empty() {
            return Err(Error::NoArms);
        }
        let mut flat = Vec::with_capacity(arms.len() * arms.dim());
        arms.for_each(|_, x| flat.extend_from_slice(x));
        Ok(Self {
            dim: arms.dim(),
            arms: flat,
            rewards: Arc::new(rewards),
            norms: None,
            noise_sd: non_negative("noise_sd", noise_sd)?,
            seed,
        })
    }

    /// f_t = `functions[k].1` from round `functions[k].0` (0-based) until the next one starts.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless the first function starts at round 0 and the start
    /// rounds increase; [`Error::NonFinite`] for a non-finite value at an arm; invalid arms or
    /// noise.
    pub fn piecewise(
        arms: &(impl AsPoints + ?Sized),
        functions: &[Piece<'_>],
        noise_sd: f64,
        seed: u64,
    ) -> Result<Self> {
        let points = arms.as_points()?;
        let starts_ok = functions.first().is_some_and(|f| f.0 == 0)
            && functions.windows(2).all(|w| w[0].0 < w[1].0);
        if !starts_ok {
            return Err(Error::InvalidParameter {
                name: "functions",
                value: functions.len() as f64,
                expected: "at least one function, the first from round 0, start rounds increasing",
            });
        }
        let mut phases = Vec::with_capacity(functions.len());
        for &(start, f) in functions {
            let mut values = Vec::with_capacity(points.len());
            points.for_each(|_, x| values.push(f(x)));
            if values.iter().any(|v| !v.is_finite()) {
                return Err(Error::NonFinite {
                    what: format!("reward function from round {start}"),
                });
            }
            phases.push((start, values));
        }
        Self::with(arms, Rewards::Phases(phases), noise_sd, seed)
    }

    /// f_t(x) = `reward(t, x)` for any function of the round and the arm (evaluated lazily).
    ///
    /// # Errors
    /// Invalid arms or noise.
    pub fn drifting(
        arms: &(impl AsPoints + ?Sized),
        reward: impl Fn(usize, &[f64]) -> f64 + Send + Sync + 'static,
        noise_sd: f64,
        seed: u64,
    ) -> Result<Self> {
        Self::with(arms, Rewards::Drifting(Arc::new(reward)), noise_sd, seed)
    }

    /// Iwazaki & Takeno 2025 §6: the 30 × 30 grid on [0, 1]², three functions
    /// f⁽ᵏ⁾ = Σ_{i=1}^{10} αᵢ k(·, x̄ᵢ) with αᵢ ~ U[−1, 1] and x̄ᵢ ~ U[0, 1]² drawn independently
    /// from `seed`, switching at ⌊T/5⌋ and ⌊2T/5⌋; noise N(0, σ²) (the paper does not state
    /// it; 0.1 is the crate's default).
    ///
    /// # Errors
    /// The kernel's dimension check (it must accept d = 2); invalid noise.
    pub fn paper004<K: Kernel>(
        kernel: &K,
        horizon: usize,
        noise_sd: f64,
        seed: u64,
    ) -> Result<Self> {
        kernel.check_dim(2)?;
        let arms = unit_grid(30);
        let mut functions = Vec::with_capacity(3);
        for k in 0..3u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, u64::MAX - 1 - k));
            let centres: Vec<[f64; 2]> = (0..10).map(|_| [rng.random(), rng.random()]).collect();
            let weights: Vec<f64> = (0..10).map(|_| 2.0 * rng.random::<f64>() - 1.0).collect();
            functions.push((centres, weights));
        }
        let norms = functions
            .iter()
            .map(|(centres, weights)| {
                let mut sq = 0.0;
                for (ci, wi) in centres.iter().zip(weights) {
                    for (cj, wj) in centres.iter().zip(weights) {
                        sq += wi * wj * kernel.eval(ci, cj);
                    }
                }
                sq.max(0.0).sqrt()
            })
            .collect();
        let starts = [0, horizon / 5, 2 * horizon / 5];
        let mut phases = Vec::with_capacity(3);
        for (start, (centres, weights)) in starts.iter().zip(&functions) {
            let values = arms
                .iter()
                .map(|x| {
                    centres
                        .iter()
                        .zip(weights)
                        .map(|(c, w)| w * kernel.eval(x, c))
                        .sum()
                })
                .collect();
            phases.push((*start, values));
        }
        phases.dedup_by_key(|p| p.0);
        let mut problem = Self::with(&arms, Rewards::Phases(phases), noise_sd, seed)?;
        problem.norms = Some(norms);
        Ok(problem)
    }

    /// The RKHS norms ‖f⁽ᵏ⁾‖_H = √(αᵀK_x̄x̄α) of the three functions of Iwazaki & Takeno
    /// (2025) ([`DriftingProblem::paper004`]; `None` for other problems).
    pub fn rkhs_norms(&self) -> Option<&[f64]> {
        self.norms.as_deref()
    }

    /// The arms, row-major.
    pub fn arms(&self) -> Vec<Vec<f64>> {
        self.arms
            .chunks_exact(self.dim)
            .map(<[f64]>::to_vec)
            .collect()
    }

    /// f_t at every arm.
    pub fn values(&self, t: usize) -> Vec<f64> {
        match &*self.rewards {
            Rewards::Phases(phases) => {
                let k = phases.partition_point(|p| p.0 <= t) - 1;
                phases[k].1.clone()
            }
            Rewards::Drifting(f) => self.arms.chunks_exact(self.dim).map(|x| f(t, x)).collect(),
        }
    }

    /// The total variation V_T = Σ_{t=1}^{T−1} max_x |f_t(x) − f_{t−1}(x)| on the arms over the
    /// first `horizon` rounds.
    pub fn variation(&self, horizon: usize) -> f64 {
        match &*self.rewards {
            Rewards::Phases(phases) => phases
                .windows(2)
                .filter(|w| w[1].0 < horizon)
                .map(|w| {
                    w[0].1
                        .iter()
                        .zip(&w[1].1)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0, f64::max)
                })
                .sum(),
            Rewards::Drifting(_) => (1..horizon)
                .map(|t| {
                    self.values(t - 1)
                        .iter()
                        .zip(self.values(t))
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0, f64::max)
                })
                .sum(),
        }
    }
}

impl super::Environment for DriftingProblem {
    type Round = Round;

    fn round(&self, t: usize) -> Round {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, t as u64));
        let standard: f64 = StandardNormal.sample(&mut rng);
        Round::new(
            self.dim,
            self.arms.clone(),
            self.values(t),
            self.noise_sd * standard,
        )
    }
}
