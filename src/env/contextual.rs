//! The contextual bandits of Zenati et al. 2022 §5 and App. F.2: 'Bump', 'Chessboard' and
//! 'Step diagonal'.
//!
//! Each round draws a fresh context x and offers the same fixed "anchor" actions; the agent
//! sees the joint points [x ‖ a] and plays one of them. Rewards are r(x, a) + ε with
//! ε ~ N(0, σ²), and regret is measured against the best anchor for the round's context.

use std::fmt;
use std::str::FromStr;

use rand::rngs::ChaCha8Rng;
use rand::seq::index;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use super::synthetic::mix;
use crate::error::{Error, Result, non_negative};
use crate::points::{AsPoints, ContextualArms, Points, check_point};

/// Context dimension p of 'Bump' (Zenati et al. 2022 §5).
const BUMP_CONTEXT_DIM: usize = 5;

/// Size of the action grid {0, 0.01, …, 0.99} the anchors are drawn from.
const ACTION_GRID: usize = 100;

/// Stream of the generator that draws the anchors and Bump's parameters; rounds use streams
/// 0, 1, 2, ….
const SETUP_STREAM: u64 = u64::MAX;

/// Which reward function of Zenati et al. 2022 §5 / App. F.2. All three have actions in
/// [0, 1] (action dimension 1).
///
/// | Variant | Name | Context | r(x, a) |
/// |---|---|---|---|
/// | `Bump` | `bump` | x ∈ [0, 1]⁵ | max(0, 1 − \|a − a*\| − ⟨x − x*, w*⟩) |
/// | `Chessboard` | `chessboard` | x ∈ [0, 1] | 1, 0.5 or 0 on a 4 × 4 grid of quarter cells |
/// | `StepDiagonal` | `step_diagonal` | x ∈ [0, 1] | 1 if \|x − (a + 0.15)\| < 0.1, 0.5 if \|x − (a − 0.15)\| < 0.1, else 0 |
///
/// # Examples
/// ```
/// use kernel_bandits::env::ContextualEnv;
/// let env: ContextualEnv = "step_diagonal".parse().unwrap();
/// assert_eq!(env, ContextualEnv::StepDiagonal);
/// assert_eq!((env.name(), env.context_dim(), env.action_dim()), ("step_diagonal", 1, 1));
/// assert_eq!(ContextualEnv::ALL.len(), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextualEnv {
    /// 'Bump' (Zenati et al. 2022 §5): a tilted pyramid around the anchor a*, 5-dimensional contexts.
    Bump,
    /// 'Chessboard' (Zenati et al. 2022 App. F.2.2; `squares` in the authors' code).
    Chessboard,
    /// 'Step diagonal' (Zenati et al. 2022 App. F.2.2; `step_diag` in the authors' code).
    StepDiagonal,
}

impl ContextualEnv {
    /// The three environments, in the order of Zenati et al. (2022).
    pub const ALL: [Self; 3] = [Self::Bump, Self::Chessboard, Self::StepDiagonal];

    /// `"bump"`, `"chessboard"` or `"step_diagonal"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bump => "bump",
            Self::Chessboard => "chessboard",
            Self::StepDiagonal => "step_diagonal",
        }
    }

    /// Coordinates of a context: 5 for Bump, 1 for Chessboard and Step diagonal.
    pub fn context_dim(self) -> usize {
        match self {
            Self::Bump => BUMP_CONTEXT_DIM,
            Self::Chessboard | Self::StepDiagonal => 1,
        }
    }

    /// Coordinates of an action: 1 in all three environments.
    pub fn action_dim(self) -> usize {
        1
    }

    /// Coordinates of a joint point [context ‖ action].
    pub fn joint_dim(self) -> usize {
        self.context_dim() + self.action_dim()
    }
}

impl fmt::Display for ContextualEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name given to [`ContextualEnv::from_str`] is not an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseContextualEnvError {
    name: String,
}

impl fmt::Display for ParseContextualEnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown contextual environment `{}`: expected bump, chessboard or step_diagonal",
            self.name
        )
    }
}

impl std::error::Error for ParseContextualEnvError {}

impl FromStr for ContextualEnv {
    type Err = ParseContextualEnvError;

    /// Parses [`ContextualEnv::name`]; the authors' names `squares` and `step_diag` are
    /// accepted too.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "bump" => Ok(Self::Bump),
            "chessboard" | "squares" => Ok(Self::Chessboard),
            "step_diagonal" | "step_diag" => Ok(Self::StepDiagonal),
            _ => Err(ParseContextualEnvError { name: s.into() }),
        }
    }
}

/// Settings of a contextual problem.
///
/// | Name | Default | Range | Meaning |
/// |---|---|---|---|
/// | `anchors` | 10 | 1 ..= 100 | actions offered every round, drawn once without replacement from {0, 0.01, …, 0.99} |
/// | `noise_sd` | 0.1 | [0, ∞) | reward noise N(0, σ²) |
///
/// The runs of Zenati et al. (2022) §5 use the defaults and T = 2000 rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextualConfig {
    /// Number of anchor actions.
    pub anchors: usize,
    /// Standard deviation σ of the Gaussian reward noise.
    pub noise_sd: f64,
}

impl Default for ContextualConfig {
    fn default() -> Self {
        Self {
            anchors: 10,
            noise_sd: 0.1,
        }
    }
}

/// The parameters of 'Bump', drawn once per problem: r(x, a) = max(0, 1 − |a − a*| −
/// ⟨x − x*, w*⟩).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BumpParams {
    /// The best action a*, one of the anchors.
    pub a_star: f64,
    /// The centre x* ~ U([0, 1])⁵ of the contexts.
    pub x_star: [f64; BUMP_CONTEXT_DIM],
    /// The tilt w* ~ U([−1, 1])⁵.
    pub w_star: [f64; BUMP_CONTEXT_DIM],
}

impl BumpParams {
    fn value(&self, x: &[f64], a: f64) -> f64 {
        let tilt: f64 = x
            .iter()
            .zip(&self.x_star)
            .zip(&self.w_star)
            .map(|((x, x_star), w)| (x - x_star) * w)
            .sum();
        (1.0 - (a - self.a_star).abs() - tilt).max(0.0)
    }
}

/// 'Chessboard': the quarter cell [k/4, (k+1)/4) of a coordinate in [0, 1] (the last cell
/// closed at 1), or `None` outside [0, 1].
fn quarter(v: f64) -> Option<u8> {
    if !(0.0..=1.0).contains(&v) {
        None
    } else if v < 0.25 {
        Some(0)
    } else if v < 0.5 {
        Some(1)
    } else if v < 0.75 {
        Some(2)
    } else {
        Some(3)
    }
}

/// 'Chessboard' (Zenati et al. 2022 App. F.2.2 and Fig. 6; `Squares.sample_reward` in the
/// authors' code), cells indexed by (context quarter, action quarter).
fn chessboard(x: f64, a: f64) -> f64 {
    match (quarter(x), quarter(a)) {
        (Some(1), Some(0 | 2)) | (Some(3), Some(2)) => 1.0,
        (Some(0 | 2), Some(1)) | (Some(2), Some(3)) => 0.5,
        _ => 0.0,
    }
}

/// 'Step diagonal' (Zenati et al. 2022 App. F.2.2; widths as in the authors' code): two bands
/// of half-width 0.1 (open) around x = a ± 0.15.
fn step_diagonal(x: f64, a: f64) -> f64 {
    if (x - (a + 0.15)).abs() < 0.1 {
        1.0
    } else if (x - (a - 0.15)).abs() < 0.1 {
        0.5
    } else {
        0.0
    }
}

/// A contextual bandit of Zenati et al. (2022) §5 / App. F.2: the anchor actions (and Bump's a*, x*,
/// w*) drawn once from the seed, a fresh context x ~ U([0, 1])^p each round, and rewards
/// r(x, a) + ε with ε ~ N(0, σ²).
///
/// The agent sees the joint points [x ‖ aᵢ] for the anchors aᵢ (so its kernel acts on
/// p + 1 coordinates); regret in a round is max_i r(x, aᵢ) − r(x, a_played). Everything
/// random is a function of the seed and the round number, so several agents can be run on
/// the same anchors, contexts and noise ([`ContextualProblem::round`]).
///
/// # Examples
/// ```
/// use kernel_bandits::env::{ContextualConfig, ContextualEnv, ContextualProblem};
/// use kernel_bandits::prelude::*;
/// let problem = ContextualProblem::new(ContextualEnv::Chessboard, ContextualConfig::default(), 3)?;
/// assert_eq!(problem.value(&[0.3], &[0.1])?, 1.0);
/// let round = problem.round(0);
/// assert_eq!((round.arms().len(), round.arms().dim()), (10, 2));
///
/// let params = BoundParams::new().sigma(0.1).norm_bound(1.0).delta(0.05).scale(1.0);
/// let mut agent = UcbAgent::new(Ay::new(Rbf::new(0.1)?, params)?);
/// let trace = problem.run(&mut agent, 20)?;
/// assert_eq!(trace.regret.len(), 20);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ContextualProblem {
    env: ContextualEnv,
    config: ContextualConfig,
    seed: u64,
    /// The anchor actions (action dimension 1), in the order drawn.
    anchors: Vec<f64>,
    reward: Reward,
}

/// The environment's reward function with the parameters drawn for it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reward {
    Bump(BumpParams),
    Chessboard,
    StepDiagonal,
}

/// The context, arms, true values and noise of one round of a [`ContextualProblem`].
#[derive(Debug, Clone, PartialEq)]
pub struct ContextualRound {
    /// The context x drawn for this round.
    pub context: Vec<f64>,
    /// r(x, aᵢ) for each anchor aᵢ, in the order of the arms.
    pub values: Vec<f64>,
    /// The noise ε added to whichever arm is played this round.
    pub noise: f64,
    /// The joint points [x ‖ aᵢ].
    arms: ContextualArms,
    /// The anchors, row-major with `action_dim` coordinates each.
    actions: Vec<f64>,
    action_dim: usize,
}

impl ContextualRound {
    /// The joint points [x ‖ aᵢ] the agent chooses from.
    pub fn arms(&self) -> Points<'_> {
        self.arms.points()
    }

    /// The anchor actions aᵢ alone.
    pub fn actions(&self) -> Points<'_> {
        Points::from_row_major(&self.actions, self.action_dim)
            .expect("anchors are finite by construction")
    }

    /// Joint point `i`: [x ‖ aᵢ].
    ///
    /// # Panics
    /// If `i` is not below the number of arms.
    pub fn arm(&self, i: usize) -> &[f64] {
        self.arms.joint(i)
    }

    /// Anchor action `i`.
    ///
    /// # Panics
    /// If `i` is not below the number of arms.
    pub fn action(&self, i: usize) -> &[f64] {
        self.arms.action(i)
    }

    /// max_i r(x, aᵢ): the value of the best anchor for this round's context.
    pub fn best_value(&self) -> f64 {
        self.values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

impl AsPoints for ContextualRound {
    fn as_points(&self) -> Result<Points<'_>> {
        Ok(self.arms())
    }
}

impl ContextualProblem {
    /// Draws the anchors (and, for Bump, a* uniformly among the anchors, x* ~ U([0, 1])⁵ and
    /// w* ~ U([−1, 1])⁵) for `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `anchors` is 0 or above 100 (the size of the grid
    /// {0, 0.01, …, 0.99}), or if `noise_sd` is negative or not finite.
    pub fn new(env: ContextualEnv, config: ContextualConfig, seed: u64) -> Result<Self> {
        if !(1..=ACTION_GRID).contains(&config.anchors) {
            return Err(Error::InvalidParameter {
                name: "anchors",
                value: config.anchors as f64,
                expected: "an integer in 1..=100 (distinct points of {0, 0.01, …, 0.99})",
            });
        }
        non_negative("noise_sd", config.noise_sd)?;
        let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, SETUP_STREAM));
        let anchors: Vec<f64> = index::sample(&mut rng, ACTION_GRID, config.anchors)
            .into_iter()
            .map(|k| k as f64 / ACTION_GRID as f64)
            .collect();
        let reward = match env {
            ContextualEnv::Bump => {
                let a_star = anchors[rng.random_range(0..anchors.len())];
                let x_star = std::array::from_fn(|_| rng.random::<f64>());
                let w_star = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
                Reward::Bump(BumpParams {
                    a_star,
                    x_star,
                    w_star,
                })
            }
            ContextualEnv::Chessboard => Reward::Chessboard,
            ContextualEnv::StepDiagonal => Reward::StepDiagonal,
        };
        Ok(Self {
            env,
            config,
            seed,
            anchors,
            reward,
        })
    }

    /// The environment.
    pub fn env(&self) -> ContextualEnv {
        self.env
    }

    /// The settings.
    pub fn config(&self) -> &ContextualConfig {
        &self.config
    }

    /// The anchor actions offered every round, in the order of the arms.
    pub fn anchors(&self) -> Points<'_> {
        Points::from_row_major(&self.anchors, self.env.action_dim())
            .expect("anchors are finite by construction")
    }

    /// a*, x* and w* of a Bump problem; `None` for the other environments.
    pub fn bump(&self) -> Option<&BumpParams> {
        match &self.reward {
            Reward::Bump(params) => Some(params),
            Reward::Chessboard | Reward::StepDiagonal => None,
        }
    }

    /// The true mean reward r(x, a) (Zenati et al. 2022 §5 and App. F.2.2), for any finite
    /// context and action of the environment's dimensions (not only anchors, and also outside
    /// [0, 1]).
    ///
    /// # Errors
    /// [`Error::ZeroDimension`] / [`Error::DimensionMismatch`] if `context` or `action` has
    /// the wrong number of coordinates, [`Error::NonFinite`] if either holds NaN or ±∞.
    pub fn value(&self, context: &[f64], action: &[f64]) -> Result<f64> {
        check_point(context, Some(self.env.context_dim()), "context")?;
        check_point(action, Some(self.env.action_dim()), "action")?;
        Ok(self.value_unchecked(context, action[0]))
    }

    fn value_unchecked(&self, context: &[f64], action: f64) -> f64 {
        match &self.reward {
            Reward::Bump(params) => params.value(context, action),
            Reward::Chessboard => chessboard(context[0], action),
            Reward::StepDiagonal => step_diagonal(context[0], action),
        }
    }

    /// The context, arms, true values and noise of round `t` (0-based); the same for every
    /// call.
    pub fn round(&self, t: usize) -> ContextualRound {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, t as u64));
        let context: Vec<f64> = (0..self.env.context_dim())
            .map(|_| rng.random::<f64>())
            .collect();
        let standard: f64 = StandardNormal.sample(&mut rng);
        let actions = self.anchors();
        let arms = ContextualArms::new(&context, &actions)
            .expect("contexts and anchors are finite by construction");
        let values = self
            .anchors
            .iter()
            .map(|&a| self.value_unchecked(&context, a))
            .collect();
        ContextualRound {
            context,
            values,
            noise: self.config.noise_sd * standard,
            arms,
            actions: self.anchors.clone(),
            action_dim: self.env.action_dim(),
        }
    }
}

impl super::Environment for ContextualProblem {
    type Round = ContextualRound;

    fn round(&self, t: usize) -> ContextualRound {
        ContextualProblem::round(self, t)
    }
}

impl super::BanditRound for ContextualRound {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chessboard_cells_partition_the_square() {
        // Row = context quarter, column = action quarter (Zenati et al. 2022 App. F.2.2, Fig. 6).
        let expected = [
            [0.0, 0.5, 0.0, 0.0],
            [1.0, 0.0, 1.0, 0.0],
            [0.0, 0.5, 0.0, 0.5],
            [0.0, 0.0, 1.0, 0.0],
        ];
        for (i, row) in expected.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let centre = |k: usize| 0.125 + 0.25 * k as f64;
                assert_eq!(chessboard(centre(i), centre(j)), v, "cell ({i}, {j})");
            }
        }
        assert_eq!(chessboard(-0.1, 0.1), 0.0);
        assert_eq!(chessboard(0.3, 1.1), 0.0);
    }

    #[test]
    fn step_diagonal_bands_do_not_overlap() {
        for i in 0..=200 {
            let a = i as f64 / 200.0;
            assert_eq!(step_diagonal(a + 0.15, a), 1.0);
            assert_eq!(step_diagonal(a - 0.15, a), 0.5);
            assert_eq!(step_diagonal(a, a), 0.0);
        }
    }
}
