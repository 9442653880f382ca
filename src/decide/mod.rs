//! Decisions from the bounds: a recommendation with a certificate on its simple regret, and
//! stopping rules that look at the data after every observation.
//!
//! Flynn & Reeb (2024, §1) name three uses of tight confidence bounds: exploration (the UCB
//! agents), stopping rules and safety. This module is the second, over a finite domain D (an
//! arm set: [`certify`], exact) or over a box ([`certify_box`]: a proven upper bound on the
//! supremum of the UCB by branch and bound, derived in its documentation).
//!
//! # What is guaranteed, and when
//!
//! A bound of this crate whose σ, B, δ (and c or λ) are fixed before the data — AMM-, DMM- and
//! CMM-UCB (Flynn & Reeb 2024, Eq. 8 with Cor. 4.6, §5.4 and Thm 4.5; the default adaptive scale
//! included, a union bound over its grid), AY-GP-UCB (Abbasi-Yadkori 2012, Thm 3.11) and
//! IGP-UCB (Chowdhury & Gopalan 2017, Thm 2) — holds on one event E of probability at least
//! 1 − δ on which
//!
//! > LCB_t(x) ≤ f(x) ≤ UCB_t(x) for **every** x and **every** round t at once,
//!
//! when the noise is σ-sub-Gaussian and ‖f‖_H ≤ B (the mixture martingales are nonnegative
//! supermartingales, and Ville's inequality bounds all their values at once). On E, for the
//! recommendation x̂_t — the point of D with the largest LCB_t — and any maximiser x* of f
//! over D,
//!
//! > f(x*) − f(x̂_t) ≤ G_t := max_{x ∈ D} UCB_t(x) − LCB_t(x̂_t)
//!
//! because f(x*) ≤ UCB_t(x*) ≤ max UCB_t and f(x̂_t) ≥ LCB_t(x̂_t). E is one event for all
//! rounds, so the statement holds at a round chosen by looking at the data — "the first t with
//! G_t ≤ ε" — with no correction for optional stopping: the reason stopping rules want
//! time-uniform bounds (Jamieson et al. 2014 make the same argument for multi-armed bandits).
//!
//! On the same event, intersecting the bounds of the rounds so far is also valid and never
//! looser ([`Certifier`]): U*_t = min_{s ≤ t} max_{x ∈ D} UCB_s(x) bounds max f, and
//! L*_t(x) = max_{s ≤ t} LCB_s(x) bounds f(x) from below, so G*_t = U*_t − max_x L*_t(x) is a
//! certificate too. Intersecting needs every round's bound to be valid on the same event:
//! the same bound object, updated, with its parameters unchanged.
//!
//! # What is not covered
//!
//! - `AdaptiveNorm`: it grows B when the data refute it, so its early bounds are not valid for
//!   the true ‖f‖_H and no event E holds from the start; a certificate from it is a heuristic.
//! - GP-UCB, K-UCB, BKB and EK-UCB with a heuristic β (a constant, or β/5): no event E.
//! - A bound whose kernel, σ or B were fitted on the data it then conditions on (see
//!   `docs/unknown.md`; [`RefitMode::Strict`](crate::agent::RefitMode::Strict) keeps the
//!   fitting data out of the bound).
//! - Misspecification: when the data refute σ, B or the kernel (an empty confidence set, or
//!   LCB > UCB at some point of D, or a running lower bound above the current upper bound),
//!   nothing is certified: [`Error::Refuted`](crate::Error::Refuted), and the state is kept as
//!   it was.
//!
//! # Examples
//! ```
//! use kernel_bandits::decide::{StoppingRule, Stop};
//! use kernel_bandits::prelude::*;
//!
//! let kernel = Matern::new(2.5, 0.3)?;
//! // f = 0.8·k(0.6, ·) has ‖f‖_H = 0.8 ≤ B = 1.
//! let f = |x: &[f64]| 0.8 * kernel.eval(&[0.6], x);
//! let arms: Vec<[f64; 1]> = (0..50).map(|i| [i as f64 / 49.0]).collect();
//! let params = BoundParams::new().sigma(0.01).norm_bound(1.0).delta(0.01);
//! let mut agent = UcbAgent::new(Dmm::new(kernel, params)?);
//! let rule = StoppingRule::budget(200).gap(0.05);
//! let run = agent.run_until(&arms, |x: &[f64]| f(x), &rule)?;
//! assert_eq!(run.stopped_by, Stop::Gap);
//! let certificate = &run.certificate;
//! assert!(certificate.gap <= 0.05);
//! // On the event of probability ≥ 0.99: f(x*) − f(x̂) ≤ gap (noise-free values here).
//! let optimum = arms.iter().map(|x| f(x)).fold(f64::MIN, f64::max);
//! assert!(optimum - f(&certificate.recommendation.x) <= certificate.gap);
//! # Ok::<(), kernel_bandits::Error>(())
//! ```

mod box_bound;
mod certificate;
mod stopping;

pub use box_bound::{BoxCertificate, BoxCertifyOptions, BoxOrder, certify_box};
pub use certificate::{Certifier, RegretCertificate, certify};
pub use stopping::{CertifiedRun, Step, Stop, StoppingRule};
