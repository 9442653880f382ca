//! Non-stationary kernel bandits (Iwazaki & Takeno 2025 §2): rewards f_t that change over time.
//!
//! | agent | type | reference |
//! |---|---|---|
//! | R-PERP | [`RPerp`] | Iwazaki & Takeno 2025 Alg. 1, Eq. 8, Thm 5 |
//! | R-GP-UCB | [`Restarting`] | Zhou & Shroff (2021); any UCB bound, restarted every H rounds |
//! | SW-GP-UCB | [`SlidingWindow`] | Zhou & Shroff (2021); any exact UCB bound on the last W points (Cholesky downdates) |
//!
//! Any exact bound fits either wrapper: the GP-UCB width of the baselines is
//! [`GpUcb`](crate::bound::GpUcb), with the greedy upper bound on the maximum information gain
//! or the data-dependent ½ ln det(I + K_t/λ) of the points in the model
//! ([`InformationGain`](crate::bound::InformationGain)); the tighter AMM and DMM bounds of
//! Flynn & Reeb (2024) give R-AMM, R-DMM and SW-DMM (DMM forgets its oldest point exactly, every
//! regulariser's factor downdated).
//!
//! [`GreedyVariance`] keeps the posterior variance of a fixed candidate set under a growing
//! set of chosen points (R-PERP's batch selection, the greedy information gain);
//! [`rperp_interval`], [`gp_ucb_interval`], [`gamma_proxy`] and [`greedy_information_gain`]
//! give H, W, γ̃_T and γ_T.

mod greedy;
mod restart;
mod rperp;
mod theory;
mod window;

pub use greedy::GreedyVariance;
pub use restart::Restarting;
pub use rperp::{Elimination, RPerp, RPerpParams};
pub use theory::{gamma_proxy, gp_ucb_interval, greedy_information_gain, rperp_interval};
pub use window::SlidingWindow;
