//! The synthetic RKHS bandit of Flynn & Reeb (2024) §7 on the continuous domain [0, 1]^d:
//! f evaluable (with its gradient) at every point of the cube, noisy observations, and the true
//! maximum over the cube, against which regret is measured.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::synthetic::{SyntheticConfig, SyntheticProblem, mix};
use crate::continuous::{BoxDomain, Maximum, RefineOptions, maximise};
use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// Stream of the generator that seeds the space-filling search for the optimum.
const OPTIMUM_STREAM: u64 = u64::MAX - 16;
/// Stream whose seed, mixed with the round, draws the observation noise of each round.
const NOISE_STREAM: u64 = u64::MAX - 17;
/// The most space-filling points [`OptimumSearch`] accepts.
const MAX_SAMPLES: usize = 1 << 24;

/// How [`ContinuousProblem`] locates the maximum of f over [0, 1]^d: f is evaluated at
/// `samples` space-filling points ([`BoxDomain::space_filling`], scrambled Sobol, seeded by
/// the problem's seed), and the best `refine` of them are refined by
/// [`maximise`](crate::continuous::maximise) (PANOC of Stella et al. 2017).
///
/// | name | default | range | meaning |
/// |---|---|---|---|
/// | `samples` | 2¹⁵ | 1 ..= 2²⁴ | space-filling points scored |
/// | `refine` | 16 | ≥ 1 | best points refined |
/// | `options` | [`RefineOptions::default`] | see there | settings of each refinement |
///
/// The search is a global optimisation heuristic: with the defaults the maximum of the §7
/// functions (20 RBF or Matérn bumps in d ≤ 4) is found to ~10⁻¹⁰ in every test of the crate,
/// but no finite search certifies a global maximum; raise `samples` for rougher kernels or
/// higher d.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimumSearch {
    /// Space-filling points scored.
    pub samples: usize,
    /// How many of the best are refined.
    pub refine: usize,
    /// Settings of each refinement.
    pub options: RefineOptions,
}

impl Default for OptimumSearch {
    fn default() -> Self {
        Self {
            samples: 1 << 15,
            refine: 16,
            options: RefineOptions::default(),
        }
    }
}

/// The kernel bandit of Flynn & Reeb (2024) §7 with a continuous arm set: the same function
/// f(x) = b Σᵢ₌₁ⁿ wᵢ k(x, zᵢ) (zᵢ ~ U([0, 1])^d, w ~ N(0, I), b = B/√(wᵀK_zz w) so that
/// ‖f‖_H = B) as the [`SyntheticProblem`] built with the same kernel, settings and seed, but
/// played on the whole cube [0, 1]^d: an agent may ask for f at any x, and regret is measured
/// against max_{x ∈ [0, 1]^d} f(x), located once at construction ([`OptimumSearch`]).
///
/// The gradient ∇f(x) = b Σᵢ wᵢ ∂k(x, zᵢ)/∂x comes from [`Kernel::gradient`], so the kernel must
/// have one. Everything random is a function of the seed (and of the round for the noise), so
/// several agents can be compared on the same f and noise.
///
/// # Examples
/// ```
/// use kernel_bandits::env::{ContinuousProblem, SyntheticConfig};
/// use kernel_bandits::kernel::Rbf;
/// let config = SyntheticConfig { dim: 2, ..SyntheticConfig::default() };
/// let problem = ContinuousProblem::new(Rbf::new(0.2)?, config, 5)?;
/// let best = problem.optimum();
/// assert!(problem.domain().contains(&best.point));
/// assert!(problem.value(&[0.3, 0.7])? <= best.value);
/// assert!(problem.regret(&[0.3, 0.7])? >= 0.0);
/// let reward = problem.observe(&[0.3, 0.7], 0)?; // f(x) + noise of round 0
/// assert!(reward.is_finite());
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ContinuousProblem<K> {
    synthetic: SyntheticProblem<K>,
    domain: BoxDomain,
    optimum: Maximum,
}

impl<K: Kernel> ContinuousProblem<K> {
    /// Draws f for `seed` (as [`SyntheticProblem::new`]; `config.arms` is not used) and locates
    /// its maximum with the default [`OptimumSearch`].
    ///
    /// # Errors
    /// As [`SyntheticProblem::new`]; [`Error::Unsupported`] if the kernel has no gradient.
    pub fn new(kernel: K, config: SyntheticConfig, seed: u64) -> Result<Self> {
        Self::from_synthetic(
            SyntheticProblem::new(kernel, config, seed)?,
            &OptimumSearch::default(),
        )
    }

    /// The problem on the function of `synthetic`, its maximum located by `search`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `samples` outside 1 ..= 2²⁴, `refine = 0` or invalid
    /// refinement options; [`Error::Unsupported`] if the kernel has no gradient.
    pub fn from_synthetic(synthetic: SyntheticProblem<K>, search: &OptimumSearch) -> Result<Self> {
        if !(1..=MAX_SAMPLES).contains(&search.samples) {
            return Err(Error::InvalidParameter {
                name: "samples",
                value: search.samples as f64,
                expected: "1 to 2^24",
            });
        }
        if search.refine == 0 {
            return Err(Error::InvalidParameter {
                name: "refine",
                value: 0.0,
                expected: "at least 1",
            });
        }
        search.options.check()?;
        let d = synthetic.config().dim;
        let domain = BoxDomain::unit(d)?;
        let starts = domain.space_filling(search.samples, mix(synthetic.seed(), OPTIMUM_STREAM));
        let values: Vec<f64> = starts
            .chunks_exact(d)
            .map(|x| synthetic.value_unchecked(x))
            .collect();
        let mut objective = |x: &[f64]| value_gradient(&synthetic, x);
        let optimum = maximise(
            &domain,
            &starts,
            &values,
            search.refine,
            &mut objective,
            &search.options,
        )?;
        Ok(Self {
            synthetic,
            domain,
            optimum,
        })
    }

    /// The finite-arm problem with the same f (and its settings, kernel and seed).
    pub fn synthetic(&self) -> &SyntheticProblem<K> {
        &self.synthetic
    }

    /// The domain [0, 1]^d.
    pub fn domain(&self) -> &BoxDomain {
        &self.domain
    }

    /// The maximiser of f over [0, 1]^d found at construction, and max f (its `value`).
    pub fn optimum(&self) -> &Maximum {
        &self.optimum
    }

    /// max_{x ∈ [0, 1]^d} f(x), as found at construction.
    pub fn max_value(&self) -> f64 {
        self.optimum.value
    }

    /// f(x).
    ///
    /// # Errors
    /// As [`ContinuousProblem::value_gradient`].
    pub fn value(&self, x: &[f64]) -> Result<f64> {
        self.check(x)?;
        Ok(self.synthetic.value_unchecked(x))
    }

    /// f(x) and ∇f(x).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for x without d coordinates, [`Error::NonFinite`] for a
    /// NaN or infinite coordinate, [`Error::InvalidParameter`] for x outside [0, 1]^d.
    pub fn value_gradient(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        self.check(x)?;
        value_gradient(&self.synthetic, x)
    }

    /// The instantaneous regret max f − f(x) of playing x (≥ 0 up to the accuracy of the
    /// search for the maximum).
    ///
    /// # Errors
    /// As [`ContinuousProblem::value_gradient`].
    pub fn regret(&self, x: &[f64]) -> Result<f64> {
        Ok(self.optimum.value - self.value(x)?)
    }

    /// The noise ε_t ~ N(0, σ²) of round `t`, a pure function of the seed and t.
    pub fn noise(&self, t: usize) -> f64 {
        let stream = mix(self.synthetic.seed(), NOISE_STREAM);
        let mut rng = ChaCha8Rng::seed_from_u64(mix(stream, t as u64));
        let standard: f64 = StandardNormal.sample(&mut rng);
        self.synthetic.config().noise_sd * standard
    }

    /// The reward of playing x in round `t`: f(x) + ε_t.
    ///
    /// # Errors
    /// As [`ContinuousProblem::value_gradient`].
    pub fn observe(&self, x: &[f64], t: usize) -> Result<f64> {
        Ok(self.value(x)? + self.noise(t))
    }

    fn check(&self, x: &[f64]) -> Result<()> {
        let d = self.domain.dim();
        if x.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: x.len(),
            });
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: format!("coordinate {i} of x"),
            });
        }
        if let Some(&v) = x.iter().find(|v| !(0.0..=1.0).contains(*v)) {
            return Err(Error::InvalidParameter {
                name: "x",
                value: v,
                expected: "a point of [0, 1]^d",
            });
        }
        Ok(())
    }
}

/// f(x) = Σᵢ (b wᵢ) k(x, zᵢ) and ∇f(x) = Σᵢ (b wᵢ) ∂k(x, zᵢ)/∂x.
fn value_gradient<K: Kernel>(problem: &SyntheticProblem<K>, x: &[f64]) -> Result<(f64, Vec<f64>)> {
    let d = x.len();
    let (centres, weights) = problem.centres_and_weights();
    let kernel = problem.kernel();
    let mut gradient = vec![0.0; d];
    let mut partial = vec![0.0; d];
    for (z, w) in centres.chunks_exact(d).zip(weights) {
        kernel.gradient(x, z, &mut partial)?;
        for (g, p) in gradient.iter_mut().zip(&partial) {
            *g += w * p;
        }
    }
    Ok((problem.value_unchecked(x), gradient))
}
