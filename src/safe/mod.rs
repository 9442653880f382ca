//! Safety and level sets from the bounds: SafeOpt ([`SafeAgent`]) and level-set estimation
//! ([`LevelSetAgent`]) over a finite candidate set.
//!
//! Flynn & Reeb (2024, §1) name guaranteeing safety as the third use of tight confidence bounds
//! (after exploration and stopping, [`crate::decide`]). Both agents keep, at every candidate,
//! the bound's intervals intersected over the rounds, C_t(x) = C_{t−1}(x) ∩ [LCB_t(x),
//! UCB_t(x)] ([`RunningIntervals`]), and classify candidates with one rule — a value is
//! certainly at least a level when the lower end of its interval is — which gives SafeOpt's
//! safe set {x : ℓ^g(x) ≥ h} and the level set's "above" class {x : ℓ(x) ≥ h − ε}.
//!
//! **Boxes.** Both agents work on a finite candidate set; for a box, pass a grid or
//! space-filling points of it (e.g. [`crate::continuous::BoxDomain::space_filling`]). The
//! guarantees are then for those candidates: every evaluated candidate is safe, every
//! classified candidate is right to ε; nothing is claimed between them.
//!
//! # Why the guarantees hold at every round
//!
//! The bounds of this crate with σ, B and δ fixed before the data hold on one event E of
//! probability ≥ 1 − δ for every point and every round at once (nonnegative supermartingales
//! and Ville's inequality: Flynn & Reeb 2024, Thm 4.1; Abbasi-Yadkori 2012, Thm 3.11;
//! Chowdhury & Gopalan 2017, Thm 2). On E every round's interval contains f(x), so their
//! intersection does too, and a point declared safe stays truly safe whatever the later data:
//! the safe set may only grow, and a run may be stopped at a round chosen from the data. A
//! bound fitted on its own data, [`crate::bound::AdaptiveNorm`] (refused for constraints) and
//! heuristic β's carry no such event.

mod agent;
mod intervals;
mod level_set;

pub use agent::{ARM_MEMORY_LIMIT, SafeAgent, SafeChoice, SafeRecommendation, SafeRole};
pub use intervals::RunningIntervals;
pub use level_set::{Level, LevelChoice, LevelSetAgent};
