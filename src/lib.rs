//! Confidence bounds for kernel bandits and sequential kernel regression, and the UCB agents
//! built on them.
//!
//! You observe a function f through noisy evaluations; a [`ConfidenceBound`](bound::ConfidenceBound)
//! gives, at any batch of points, the posterior mean and a lower and an upper bound on f that
//! hold at every round at once with probability 1 − δ, when the noise is σ-sub-Gaussian and
//! ‖f‖_H ≤ B. A [`UcbAgent`](agent::UcbAgent) plays the arm with the largest upper bound.
//!
//! # Quick start
//!
//! ```
//! use kernel_bandits::prelude::*;
//!
//! let kernel = Matern::new(2.5, 0.5)?; // ν, length-scale
//! let params = BoundParams::new().sigma(0.1).norm_bound(10.0).delta(0.01).scale(1.0);
//! let mut agent = UcbAgent::new(Dmm::new(kernel, params)?);
//!
//! let arms = vec![vec![0.1, 0.2], vec![0.7, 0.4], vec![0.5, 0.9]];
//! let i = agent.select(&arms)?; // index of the arm with the largest UCB
//! agent.update(&arms[i], 0.8)?; // the reward you observed
//!
//! // Bounds for any batch of points: mean, LCB and UCB.
//! let b = agent.bound().bounds(&[[0.1, 0.2], [0.3, 0.3]])?;
//! assert!(b.lcb[0] <= b.ucb[0]);
//! # Ok::<(), kernel_bandits::Error>(())
//! ```
//!
//! # The bounds
//!
//! | bound | type | paper |
//! |---|---|---|
//! | AY-GP-UCB | [`Ay`](bound::Ay) | Abbasi-Yadkori (2012) Thm 3.11, restated in Flynn & Reeb (2024) App. C.2 |
//! | IGP-UCB | [`Igp`](bound::Igp) | Chowdhury & Gopalan (2017) Thm 2, restated in Flynn & Reeb (2024) App. C.2 |
//! | AMM-UCB | [`Amm`](bound::Amm) | Flynn & Reeb (2024) Cor. 4.6 |
//! | DMM-UCB | [`Dmm`](bound::Dmm) | Flynn & Reeb (2024) §5.4 |
//! | CMM-UCB | [`Cmm`](bound::Cmm) | Flynn & Reeb (2024) §4.3, Thm 4.5, Eq. 12 |
//! | K-UCB | [`KUcb`](bound::KUcb) | exact baseline of Calandriello et al. (2019) and Zenati et al. (2022) |
//! | BKB | [`Bkb`](bound::Bkb) | Calandriello et al. (2019) Alg. 1, Thm 2; batched (BBKB): Calandriello et al. (2020) Alg. 1 |
//! | EK-UCB | [`EkUcb`](bound::EkUcb) | Zenati et al. (2022) Alg. 2, Prop. 4.2, Lemma 4.1 |
//!
//! # Modules
//!
//! | module | contents |
//! |---|---|
//! | [`kernel`] | [`Kernel`](kernel::Kernel) trait; RBF, Matérn of any ν ∈ (0, 100] (closed forms at 1/2, 3/2, 5/2), linear (Rasmussen & Williams 2006); output scale, sum, product, coordinate slices |
//! | [`posterior`] | the exact GP posterior with incremental Cholesky factors and fixed arm sets; the Nyström-sketched posterior of Calandriello et al. (2019) and Zenati et al. (2022) |
//! | [`bound`] | the confidence bounds above, all implementing [`ConfidenceBound`](bound::ConfidenceBound); [`BoundKind`](bound::BoundKind) builds any of them by name |
//! | [`hyper`] | fitting ℓ, σ (and optionally s²) by the log marginal likelihood (Rasmussen & Williams 2006 Eq. 2.30, 5.9) on a warm-up set, and an empty bound from the fit |
//! | [`agent`] | [`BanditAgent`](agent::BanditAgent), [`UcbAgent`](agent::UcbAgent), seeded [`RandomAgent`](agent::RandomAgent) |
//! | [`decide`] | a recommendation with a certificate on its simple regret over an arm set, valid at every round at once, and stopping rules on it ([`UcbAgent::run_until`](agent::UcbAgent::run_until)) |
//! | [`env`](mod@env) | the synthetic RKHS bandit of Flynn & Reeb (2024) §7, the contextual environments of Zenati et al. (2022) §5, drifting rewards (Iwazaki & Takeno 2025 §6) |
//! | [`nonstationary`] | R-PERP (Iwazaki & Takeno 2025, Alg. 1), restarting and sliding-window GP-UCB |
//! | [`prelude`] | the types most programs need |
//!
//! # Features
//!
//! - `parallel` (default): large batches are spread over all cores with rayon; the results are
//!   the same bits on any number of threads.
//! - `serde`: snapshots of every agent and bound (`to_json`, `to_bytes`), restored bit for bit.
//! - `cli`: the `kbandit` command line (demo, paper reproduction, benchmarks, bounds for logged
//!   data); a library user who does not enable it gets none of its dependencies.
//!
//! # Further reading
//!
//! The crate's source ships `README.md`; `docs/guide.md` (sketched bounds, contextual
//! bandits, fixed arm sets), `docs/bounds.md` (every bound's formula), `docs/guarantees.md`
//! (each promise and the test that checks it), `docs/cli.md` and `docs/reproduce.md` (the
//! command line); `BENCHMARKS.md` (time per round and memory); and runnable examples, among
//! them `examples/bayesian_optimisation.rs`, which optimises a noisy black-box function.
//!
//! # Papers
//!
//! - Flynn, H. & Reeb, D. (2024). Tighter confidence bounds for sequential kernel regression.
//! - Calandriello, D. et al. (2019). Gaussian process optimization with adaptive sketching:
//!   scalable and no regret.
//! - Zenati, H. et al. (2022). Efficient kernel UCB for contextual bandits.
//! - Iwazaki, S. & Takeno, S. (2025). Near-optimal algorithm for non-stationary kernelized
//!   bandits.
//! - Rasmussen, C. E. & Williams, C. K. I. (2006). Gaussian processes for machine learning.
//! - Jamieson, K. et al. (2014). lil' UCB: an optimal exploration algorithm for multi-armed
//!   bandits.
//! - Makarova, A. et al. (2022). Automatic termination for hyperparameter optimization.

#![deny(missing_docs)]
#![warn(missing_debug_implementations)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod bound;
pub mod continuous;
pub mod decide;
pub mod env;
pub mod error;
pub mod hyper;
pub mod kernel;
mod linalg;
pub mod nonstationary;
pub mod optimise;
pub mod parallel;
pub mod points;
pub mod posterior;
pub mod prelude;
mod rng;
pub mod safe;
#[cfg(feature = "serde")]
pub mod snapshot;

pub use error::{Error, Result, SnapshotError};

// The README's and the guide's examples run as doctests (`cargo test --doc`); they are not part
// of the rendered docs, where their relative links would break.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
struct GuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/continuous.md")]
struct ContinuousDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/unknown.md")]
struct UnknownDoctests;
