//! Hostile input: every agent driven by random sequences of valid and invalid calls (NaN/∞
//! rewards and coordinates, wrong dimensions, empty and ragged arm sets, magnitudes up to
//! 1e±300 and `f64::MAX`, repeated identical arms, length-scales 1e-4 and 1e4).
//!
//! For every generated case:
//! - no call panics (the property runner catches panics and fails the case);
//! - every invalid call returns `Err`;
//! - a valid call returns `Ok` — then a `select` index is in range and the agent's bound is
//!   finite (mean, LCB, UCB) at fixed probe points — or a typed numerical error
//!   (`NonFinite`, `NotPositiveDefinite`; for R-PERP also `ArmSetChanged`/`UnplannedArm`);
//! - after every rejected call the state is unchanged: (a) the bound's `len`, dimension,
//!   fixed-arm state and mean/LCB/UCB bits at the probe points; (b) continuation: a twin agent,
//!   built identically and fed only the accepted calls, makes bit-identical choices and has
//!   bit-identical bounds after every call, and (for agents that are `Clone`) a clone taken
//!   just before a rejected call follows the original bit for bit over the next calls.
//!
//! `RandomAgent<ChaCha8Rng>` is not `Clone`; it is checked by its twin only (same seed, same
//! accepted calls: the same choices).
//!
//! The number of generated cases is printed (`cargo test --test integration -- hostile:: --nocapture`).

use std::sync::atomic::{AtomicUsize, Ordering};

use kernel_bandits::Result;
use kernel_bandits::nonstationary::{
    GreedyVariance, RPerp, RPerpParams, Restarting, SlidingWindow,
};
use kernel_bandits::prelude::*;
use nalgebra::DMatrix;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/// Hostile but finite numbers, from the largest (`f64::MAX`) to the smallest subnormal.
/// (`f64::MAX` rewards once made BKB and EK-UCB return ±∞/NaN bounds, their running sums
/// overflowing; they are now refused: `sketched_bounds_refuse_overflowing_rewards`.)
const EXTREMES: [f64; 16] = [
    0.0,
    -0.0,
    1e300,
    -1e300,
    f64::MAX,
    f64::MIN,
    1e-300,
    -1e-300,
    5e-324,
    f64::MIN_POSITIVE,
    1e150,
    -1e150,
    1e-4,
    1e4,
    2.0,
    -3.0,
];

const NON_FINITE: [f64; 3] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -1.0..1.0f64,
        2 => prop::sample::select(EXTREMES.to_vec()),
        1 => (-300i32..=300, any::<bool>())
            .prop_map(|(e, neg)| if neg { -(10f64.powi(e)) } else { 10f64.powi(e) }),
    ]
}

fn non_finite() -> impl Strategy<Value = f64> {
    prop::sample::select(NON_FINITE.to_vec())
}

fn point(d: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(finite(), d)
}

fn arm_set(d: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(point(d), 1..=4)
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    // Valid calls.
    /// `select` on the case's arm set (repeated: the fixed-arm path).
    SelectBase,
    /// `select` on the case's arm set as the rows of a `DMatrix`.
    SelectBaseMatrix,
    /// `select` on other finite arms of the right dimension.
    SelectFresh(Vec<Vec<f64>>),
    /// `select` on one arm of the case's set repeated `n` times.
    SelectRepeated(usize),
    /// `update` at the arm played last (the case's first arm before any play).
    UpdatePlayed(f64),
    /// `update` at an arbitrary finite point.
    UpdateAt(Vec<f64>, f64),
    // Invalid calls.
    SelectEmpty,
    /// The case's arms with arm `i` one coordinate longer or shorter.
    SelectRagged(usize, bool),
    /// The case's arms with coordinate (i, j) set to NaN/±∞.
    SelectNonFinite(usize, usize, f64),
    /// The case's arms with coordinate (i, j) set to NaN/±∞, as a `DMatrix`.
    SelectNonFiniteMatrix(usize, usize, f64),
    /// Arms of dimension d ± 1 (invalid once the agent's dimension is fixed).
    SelectWrongDim(Vec<Vec<f64>>),
    /// The played arm with coordinate j set to NaN/±∞.
    UpdateNonFiniteX(usize, f64, f64),
    /// The played arm with a NaN/±∞ reward.
    UpdateNonFiniteY(f64),
    /// A point of dimension d ± 1 (invalid once the agent's dimension is fixed).
    UpdateWrongDim(Vec<f64>, f64),
    /// A point with no coordinate.
    UpdateEmpty(f64),
}

impl Op {
    fn is_valid(&self) -> bool {
        matches!(
            self,
            Op::SelectBase
                | Op::SelectBaseMatrix
                | Op::SelectFresh(_)
                | Op::SelectRepeated(_)
                | Op::UpdatePlayed(_)
                | Op::UpdateAt(..)
        )
    }
}

fn wrong_dim(d: usize) -> impl Strategy<Value = usize> {
    if d == 1 {
        Just(2).boxed()
    } else {
        prop::sample::select(vec![d - 1, d + 1]).boxed()
    }
}

fn op(d: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => Just(Op::SelectBase),
        2 => Just(Op::SelectBaseMatrix),
        2 => arm_set(d).prop_map(Op::SelectFresh),
        1 => (2usize..40).prop_map(Op::SelectRepeated),
        8 => finite().prop_map(Op::UpdatePlayed),
        2 => (point(d), finite()).prop_map(|(x, y)| Op::UpdateAt(x, y)),
        1 => Just(Op::SelectEmpty),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, longer)| Op::SelectRagged(i, longer)),
        1 => (any::<usize>(), any::<usize>(), non_finite())
            .prop_map(|(i, j, v)| Op::SelectNonFinite(i, j, v)),
        1 => (any::<usize>(), any::<usize>(), non_finite())
            .prop_map(|(i, j, v)| Op::SelectNonFiniteMatrix(i, j, v)),
        1 => wrong_dim(d)
            .prop_flat_map(|w| prop::collection::vec(point(w), 1..=3))
            .prop_map(Op::SelectWrongDim),
        1 => (any::<usize>(), non_finite(), finite())
            .prop_map(|(j, v, y)| Op::UpdateNonFiniteX(j, v, y)),
        1 => non_finite().prop_map(Op::UpdateNonFiniteY),
        1 => (wrong_dim(d).prop_flat_map(point), finite())
            .prop_map(|(x, y)| Op::UpdateWrongDim(x, y)),
        1 => finite().prop_map(Op::UpdateEmpty),
    ]
}

// ---------------------------------------------------------------------------------------------
// Agents under test
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum KernelChoice {
    Rbf(f64),
    Matern(f64, f64),
}

fn kernel_choice() -> impl Strategy<Value = KernelChoice> {
    let ls = prop::sample::select(vec![1e-4, 0.3, 1e4]);
    prop_oneof![
        ls.clone().prop_map(KernelChoice::Rbf),
        (prop::sample::select(vec![0.5, 1.5, 2.5]), ls)
            .prop_map(|(nu, l)| KernelChoice::Matern(nu, l)),
    ]
}

/// A bound as the hostile script builds it: the library's `BoundKind`, with BKB and EK-UCB
/// each in two widths.
#[derive(Debug, Clone, Copy, PartialEq)]
enum BoundCase {
    Ay,
    Igp,
    Amm,
    Dmm,
    Cmm,
    KUcb,
    /// BKB with a fixed β̃ (`true`) or Theorem 2's.
    Bkb(bool),
    /// EK-UCB with a fixed β̃ (`true`) or the theoretical one.
    EkUcb(bool),
}

impl BoundCase {
    fn is_exact(self) -> bool {
        !matches!(self, BoundCase::Bkb(_) | BoundCase::EkUcb(_))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    Detect,
    /// Detection with a memory limit too small for any set.
    DetectTiny,
    Declared,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AgentKind {
    Ucb(BoundCase, Policy),
    Random,
    RPerp { horizon: usize, interval: usize },
    Restarting(BoundCase, usize),
    SlidingWindow(BoundCase, usize),
}

fn params() -> BoundParams {
    BoundParams::new()
        .sigma(0.1)
        .norm_bound(1.0)
        .delta(0.05)
        .scale(1.0)
        .horizon(100)
}

fn sketch_params(fixed_beta: bool) -> SketchParams {
    let p = SketchParams::new().lambda(0.1).qbar(2.0).gamma(1.0);
    if fixed_beta {
        p.beta(1.0)
    } else {
        p.sigma(0.1).norm_bound(1.0)
    }
}

/// The observable state of an agent: compared bit for bit.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    /// Bound length, dimension, fixed arms, fixed-arm bytes (or agent-specific state).
    meta: String,
    /// mean, lcb, ucb bits at the probe points, or the error of the query.
    bits: std::result::Result<Vec<u64>, String>,
}

/// An agent under test, behind one object-safe surface.
trait Subject {
    fn select_rows(&mut self, arms: &[Vec<f64>]) -> Result<usize>;
    fn select_matrix(&mut self, arms: &DMatrix<f64>) -> Result<usize>;
    fn update(&mut self, x: &[f64], y: f64) -> Result<()>;
    /// The dimension the agent has fixed, if any.
    fn dim(&self) -> Option<usize>;
    fn snapshot(&self, probes: &[Vec<f64>]) -> Snapshot;
    /// Whether the agent exposes bounds that must be finite after an accepted call.
    fn has_bound(&self) -> bool;
    /// A clone, for agents that are `Clone`.
    fn fork(&self) -> Option<Box<dyn Subject>>;
    /// Whether `e` is an acceptable error for a valid call.
    fn tolerated(&self, e: &Error) -> bool {
        matches!(
            e,
            Error::NonFinite { .. } | Error::NotPositiveDefinite { .. }
        )
    }
}

/// Agents built on a `ConfidenceBound`.
trait WithBound: BanditAgent + Clone + 'static {
    type B: ConfidenceBound;
    fn the_bound(&self) -> &Self::B;
}

impl<B: ConfidenceBound + Clone + 'static> WithBound for UcbAgent<B> {
    type B = B;
    fn the_bound(&self) -> &B {
        self.bound()
    }
}

impl<B: ConfidenceBound + Clone + 'static> WithBound for Restarting<B> {
    type B = B;
    fn the_bound(&self) -> &B {
        self.agent().bound()
    }
}

impl<B: ConfidenceBound + Clone + 'static> WithBound for SlidingWindow<B> {
    type B = B;
    fn the_bound(&self) -> &B {
        self.agent().bound()
    }
}

fn bound_bits<B: ConfidenceBound>(bound: &B, probes: &[Vec<f64>]) -> Snapshot {
    let meta = format!(
        "len {} dim {:?} fixed {:?}",
        bound.len(),
        bound.dim(),
        bound.fixed_arms(),
    );
    let bits = match bound.bounds(probes) {
        Ok(b) => Ok(b
            .mean
            .iter()
            .chain(&b.lcb)
            .chain(&b.ucb)
            .map(|v| v.to_bits())
            .collect()),
        Err(e) => Err(format!("{e:?}")),
    };
    Snapshot { meta, bits }
}

struct Bounded<A>(A);

impl<A: WithBound> Subject for Bounded<A> {
    fn select_rows(&mut self, arms: &[Vec<f64>]) -> Result<usize> {
        self.0.select(arms)
    }
    fn select_matrix(&mut self, arms: &DMatrix<f64>) -> Result<usize> {
        self.0.select(arms)
    }
    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.0.update(x, y)
    }
    fn dim(&self) -> Option<usize> {
        self.0.the_bound().dim()
    }
    fn snapshot(&self, probes: &[Vec<f64>]) -> Snapshot {
        bound_bits(self.0.the_bound(), probes)
    }
    fn has_bound(&self) -> bool {
        true
    }
    fn fork(&self) -> Option<Box<dyn Subject>> {
        Some(Box::new(Bounded(self.0.clone())))
    }
}

/// The random agent; its dimension is fixed by its first accepted update.
struct Random {
    agent: RandomAgent,
    dim: Option<usize>,
}

impl Subject for Random {
    fn select_rows(&mut self, arms: &[Vec<f64>]) -> Result<usize> {
        self.agent.select(arms)
    }
    fn select_matrix(&mut self, arms: &DMatrix<f64>) -> Result<usize> {
        self.agent.select(arms)
    }
    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.agent.update(x, y)?;
        self.dim = Some(x.len());
        Ok(())
    }
    fn dim(&self) -> Option<usize> {
        self.dim
    }
    fn snapshot(&self, _probes: &[Vec<f64>]) -> Snapshot {
        Snapshot {
            meta: format!("dim {:?}", self.dim),
            bits: Ok(Vec::new()),
        }
    }
    fn has_bound(&self) -> bool {
        false
    }
    fn fork(&self) -> Option<Box<dyn Subject>> {
        None // RandomAgent<ChaCha8Rng> is not Clone: checked by its twin only.
    }
    fn tolerated(&self, _e: &Error) -> bool {
        false
    }
}

struct Perp<K>(RPerp<K>, usize);

impl<K: Kernel + Clone + 'static> Subject for Perp<K> {
    fn select_rows(&mut self, arms: &[Vec<f64>]) -> Result<usize> {
        self.0.select(arms)
    }
    fn select_matrix(&mut self, arms: &DMatrix<f64>) -> Result<usize> {
        self.0.select(arms)
    }
    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        self.0.update(x, y)
    }
    fn dim(&self) -> Option<usize> {
        Some(self.1)
    }
    fn snapshot(&self, _probes: &[Vec<f64>]) -> Snapshot {
        let a = &self.0;
        Snapshot {
            meta: format!(
                "active {:?} batch {:?} batches {:?} eliminations {:?}",
                a.potential_maximisers(),
                a.batch(),
                a.batches(),
                a.eliminations()
            ),
            bits: Ok(Vec::new()),
        }
    }
    fn has_bound(&self) -> bool {
        false
    }
    fn fork(&self) -> Option<Box<dyn Subject>> {
        Some(Box::new(Perp(self.0.clone(), self.1)))
    }
    fn tolerated(&self, e: &Error) -> bool {
        // Another arm set, or an update at an arm that is not the planned one.
        matches!(e, Error::ArmSetChanged { .. } | Error::UnplannedArm { .. })
    }
}

fn build_bound_agent<K: Kernel + Clone + 'static>(
    kind: AgentKind,
    kernel: K,
    arms: &[Vec<f64>],
    seed: u64,
) -> Result<Box<dyn Subject>> {
    fn wrap<B: ConfidenceBound + Clone + 'static>(
        kind: AgentKind,
        bound: B,
        arms: &[Vec<f64>],
    ) -> Result<Box<dyn Subject>> {
        Ok(match kind {
            AgentKind::Ucb(_, policy) => {
                let agent = UcbAgent::new(bound);
                let agent = match policy {
                    Policy::Detect => agent,
                    Policy::DetectTiny => {
                        agent.with_policy(ArmSetPolicy::Detect { memory_limit: 16 })
                    }
                    Policy::Declared => agent.with_arm_set(arms)?,
                    Policy::Off => agent.with_policy(ArmSetPolicy::Off),
                };
                Box::new(Bounded(agent))
            }
            AgentKind::Restarting(_, h) => Box::new(Bounded(Restarting::new(bound, h)?)),
            AgentKind::SlidingWindow(_, w) => Box::new(Bounded(SlidingWindow::new(bound, w)?)),
            _ => unreachable!(),
        })
    }
    let bound_kind = match kind {
        AgentKind::Ucb(b, _) | AgentKind::Restarting(b, _) | AgentKind::SlidingWindow(b, _) => b,
        _ => unreachable!(),
    };
    match bound_kind {
        BoundCase::Ay => wrap(kind, Ay::new(kernel, params())?, arms),
        BoundCase::Igp => wrap(kind, Igp::new(kernel, params())?, arms),
        BoundCase::Amm => wrap(kind, Amm::new(kernel, params())?, arms),
        BoundCase::Dmm => wrap(kind, Dmm::new(kernel, params())?, arms),
        BoundCase::Cmm => wrap(kind, Cmm::new(kernel, params())?, arms),
        BoundCase::KUcb => wrap(kind, KUcb::new(kernel, 0.1, 1.0)?, arms),
        BoundCase::Bkb(fixed) => wrap(kind, Bkb::new(kernel, sketch_params(fixed), seed)?, arms),
        BoundCase::EkUcb(fixed) => {
            wrap(kind, EkUcb::new(kernel, sketch_params(fixed), seed)?, arms)
        }
    }
}

fn build_with_kernel<K: Kernel + Clone + 'static>(
    kind: AgentKind,
    kernel: K,
    arms: &[Vec<f64>],
    seed: u64,
) -> Result<Box<dyn Subject>> {
    match kind {
        AgentKind::Random => Ok(Box::new(Random {
            agent: RandomAgent::new(seed),
            dim: None,
        })),
        AgentKind::RPerp { horizon, interval } => {
            let p = RPerpParams::new(horizon)
                .interval(interval.min(horizon))
                .width_scale(0.1);
            Ok(Box::new(Perp(
                RPerp::new(kernel, arms, p, seed)?,
                arms[0].len(),
            )))
        }
        _ => build_bound_agent(kind, kernel, arms, seed),
    }
}

fn build(
    kind: AgentKind,
    kernel: KernelChoice,
    arms: &[Vec<f64>],
    seed: u64,
) -> Result<Box<dyn Subject>> {
    match kernel {
        KernelChoice::Rbf(l) => build_with_kernel(kind, Rbf::new(l)?, arms, seed),
        KernelChoice::Matern(nu, l) => build_with_kernel(kind, Matern::new(nu, l)?, arms, seed),
    }
}

// ---------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Case {
    kind: AgentKind,
    kernel: KernelChoice,
    arms: Vec<Vec<f64>>,
    ops: Vec<Op>,
    seed: u64,
}

fn case(kinds: impl Strategy<Value = AgentKind>, max_ops: usize) -> impl Strategy<Value = Case> {
    (kinds, kernel_choice(), 1usize..=3, any::<u64>()).prop_flat_map(
        move |(kind, kernel, d, seed)| {
            (arm_set(d), prop::collection::vec(op(d), 1..=max_ops)).prop_map(move |(arms, ops)| {
                Case {
                    kind,
                    kernel,
                    arms,
                    ops,
                    seed,
                }
            })
        },
    )
}

/// Counts of what the property tests did, printed at the end of each.
#[derive(Default)]
struct Counters {
    cases: AtomicUsize,
    valid_ok: AtomicUsize,
    valid_rejected: AtomicUsize,
    invalid: AtomicUsize,
    forks: AtomicUsize,
}

static TOTAL_CASES: AtomicUsize = AtomicUsize::new(0);

fn to_matrix(rows: &[Vec<f64>]) -> DMatrix<f64> {
    DMatrix::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

/// Applies `op` to `agent`; returns the result as `Ok(Some(index))` for a select, `Ok(None)`
/// for an update, and `None` when the op does not apply (wrong dimension before the agent has
/// one).
fn apply(
    agent: &mut dyn Subject,
    op: &Op,
    arms: &[Vec<f64>],
    played: &[f64],
) -> Option<Result<Option<usize>>> {
    let d = arms[0].len();
    let select = |r: Result<usize>| Some(r.map(Some));
    let update = |r: Result<()>| Some(r.map(|()| None));
    match op {
        Op::SelectBase => select(agent.select_rows(arms)),
        Op::SelectBaseMatrix => select(agent.select_matrix(&to_matrix(arms))),
        Op::SelectFresh(fresh) => select(agent.select_rows(fresh)),
        Op::SelectRepeated(n) => select(agent.select_rows(&vec![arms[0].clone(); *n])),
        Op::UpdatePlayed(y) => update(agent.update(played, *y)),
        Op::UpdateAt(x, y) => update(agent.update(x, *y)),
        Op::SelectEmpty => select(agent.select_rows(&[])),
        Op::SelectRagged(i, longer) => {
            let mut bad = arms.to_vec();
            if bad.len() == 1 {
                bad.push(arms[0].clone());
            }
            let i = 1 + i % (bad.len() - 1);
            if *longer || d == 1 {
                bad[i].push(0.5);
            } else {
                bad[i].pop();
            }
            select(agent.select_rows(&bad))
        }
        Op::SelectNonFinite(i, j, v) | Op::SelectNonFiniteMatrix(i, j, v) => {
            let mut bad = arms.to_vec();
            let n = bad.len();
            bad[i % n][j % d] = *v;
            if matches!(op, Op::SelectNonFinite(..)) {
                select(agent.select_rows(&bad))
            } else {
                select(agent.select_matrix(&to_matrix(&bad)))
            }
        }
        Op::SelectWrongDim(bad) => {
            agent.dim()?;
            select(agent.select_rows(bad))
        }
        Op::UpdateNonFiniteX(j, v, y) => {
            let mut bad = played.to_vec();
            bad[j % d] = *v;
            update(agent.update(&bad, *y))
        }
        Op::UpdateNonFiniteY(v) => update(agent.update(played, *v)),
        Op::UpdateWrongDim(x, y) => {
            agent.dim()?;
            update(agent.update(x, *y))
        }
        Op::UpdateEmpty(y) => update(agent.update(&[], *y)),
    }
}

fn check_finite(s: &Snapshot, context: &str) -> std::result::Result<(), TestCaseError> {
    match &s.bits {
        Ok(bits) => {
            let values: Vec<f64> = bits.iter().map(|b| f64::from_bits(*b)).collect();
            if let Some(v) = values.iter().find(|v| !v.is_finite()) {
                return Err(fail(format!("{context}: non-finite bound value {v}")));
            }
            // (No lcb ≤ ucb check: DMM's and CMM's intersections of intervals may be empty
            // when the data contradict the norm bound, e.g. a reward of 10 with B = 1.)
            Ok(())
        }
        Err(e) => Err(fail(format!("{context}: bounds at the probes failed: {e}"))),
    }
}

/// Probe points: fixed moderate points and the case's arms.
fn probes(arms: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = arms[0].len();
    let mut p = vec![
        vec![0.0; d],
        vec![0.5; d],
        (0..d).map(|j| 0.3 - 0.2 * j as f64).collect(),
        vec![1.0; d],
    ];
    p.extend(arms.iter().take(2).cloned());
    p
}

/// Runs one case; see the module documentation for what is checked.
fn run_case(c: &Case, counters: &Counters) -> std::result::Result<(), TestCaseError> {
    counters.cases.fetch_add(1, Ordering::Relaxed);
    TOTAL_CASES.fetch_add(1, Ordering::Relaxed);
    let mut main = match build(c.kind, c.kernel, &c.arms, c.seed) {
        Ok(a) => a,
        // Declaring an arm set may fail numerically (e.g. a kernel value overflow); the
        // sliding window rejects the sketched bounds. Both are typed errors, not panics.
        Err(e) => {
            let expected = match c.kind {
                AgentKind::SlidingWindow(b, _) => !b.is_exact(),
                AgentKind::Ucb(_, Policy::Declared) | AgentKind::RPerp { .. } => {
                    matches!(
                        e,
                        Error::NonFinite { .. } | Error::NotPositiveDefinite { .. }
                    )
                }
                _ => false,
            };
            prop_assert!(expected, "building {:?} failed: {e:?}", c.kind);
            return Ok(());
        }
    };
    let twin = build(c.kind, c.kernel, &c.arms, c.seed)
        .map_err(|e| fail(format!("twin build failed: {e:?}")))?;
    // Followers: the twin (for ever) and clones taken before rejected calls (for 4 calls).
    let mut followers: Vec<(Box<dyn Subject>, usize)> = vec![(twin, usize::MAX)];
    let probes = probes(&c.arms);
    let mut played = c.arms[0].clone();
    for (step, op) in c.ops.iter().enumerate() {
        let ctx = format!("{:?} {:?}, step {step}, {op:?}", c.kind, c.kernel);
        let before = main.snapshot(&probes);
        let fork = main.fork();
        let Some(result) = apply(main.as_mut(), op, &c.arms, &played) else {
            continue;
        };
        let after = main.snapshot(&probes);
        match &result {
            Ok(choice) => {
                prop_assert!(op.is_valid(), "{ctx}: invalid call accepted: {result:?}");
                counters.valid_ok.fetch_add(1, Ordering::Relaxed);
                if let Some(i) = *choice {
                    let offered = match op {
                        Op::SelectFresh(f) => f.clone(),
                        Op::SelectRepeated(n) => vec![c.arms[0].clone(); *n],
                        _ => c.arms.clone(),
                    };
                    prop_assert!(i < offered.len(), "{ctx}: index {i} out of range");
                    played = offered[i].clone();
                }
                if main.has_bound() {
                    check_finite(&after, &ctx)?;
                }
            }
            Err(e) => {
                if op.is_valid() {
                    prop_assert!(main.tolerated(e), "{ctx}: valid call rejected: {e:?}");
                    counters.valid_rejected.fetch_add(1, Ordering::Relaxed);
                } else {
                    counters.invalid.fetch_add(1, Ordering::Relaxed);
                }
                prop_assert_eq!(
                    &after,
                    &before,
                    "{}: a rejected call changed the state",
                    ctx
                );
                if let Some(f) = fork {
                    counters.forks.fetch_add(1, Ordering::Relaxed);
                    followers.push((f, 4));
                }
            }
        }
        // Followers take the accepted calls only, and must agree bit for bit.
        if result.is_ok() {
            for (k, (follower, left)) in followers.iter_mut().enumerate() {
                let theirs = apply(follower.as_mut(), op, &c.arms, &played)
                    .expect("the main agent applied it");
                prop_assert_eq!(
                    theirs.as_ref().ok(),
                    result.as_ref().ok(),
                    "{}: follower {} chose differently ({:?})",
                    ctx,
                    k,
                    theirs
                );
                *left = left.saturating_sub(1);
            }
        }
        for (k, (follower, _)) in followers.iter().enumerate() {
            prop_assert_eq!(
                follower.snapshot(&probes),
                main.snapshot(&probes),
                "{}: follower {} has another state",
                ctx,
                k
            );
        }
        followers.retain(|(_, left)| *left > 0);
    }
    Ok(())
}

fn run_property(
    name: &str,
    cases: u32,
    max_ops: usize,
    kinds: impl Strategy<Value = AgentKind>,
) -> usize {
    let counters = Counters::default();
    // A fixed seed per property (FNV-1a of its name): every run checks the same cases.
    let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        // Shrinking reruns the agents; keep it bounded.
        max_shrink_iters: 2000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&case(kinds, max_ops), |c| run_case(&c, &counters));
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let n = counters.cases.load(Ordering::Relaxed);
    println!(
        "hostile {name}: {n} cases, {} valid calls accepted, {} valid calls rejected \
         (numerical range), {} invalid calls rejected, {} clones followed",
        counters.valid_ok.load(Ordering::Relaxed),
        counters.valid_rejected.load(Ordering::Relaxed),
        counters.invalid.load(Ordering::Relaxed),
        counters.forks.load(Ordering::Relaxed),
    );
    println!(
        "hostile: {} cases so far in this run",
        TOTAL_CASES.load(Ordering::Relaxed)
    );
    assert!(n >= cases as usize, "{name}: only {n} cases ran");
    n
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        4 => Just(Policy::Detect),
        1 => Just(Policy::DetectTiny),
        1 => Just(Policy::Declared),
        1 => Just(Policy::Off),
    ]
}

fn exact_bound() -> impl Strategy<Value = BoundCase> {
    prop::sample::select(vec![
        BoundCase::Ay,
        BoundCase::Igp,
        BoundCase::Amm,
        BoundCase::Dmm,
        BoundCase::KUcb,
    ])
}

fn sketched_bound() -> impl Strategy<Value = BoundCase> {
    prop_oneof![
        any::<bool>().prop_map(BoundCase::Bkb),
        any::<bool>().prop_map(BoundCase::EkUcb),
    ]
}

fn any_bound() -> impl Strategy<Value = BoundCase> {
    prop_oneof![5 => exact_bound(), 1 => Just(BoundCase::Cmm), 2 => sketched_bound()]
}

// ---------------------------------------------------------------------------------------------
// The properties: 10 500 generated cases in all.
// ---------------------------------------------------------------------------------------------

#[test]
fn hostile_ucb_exact_bounds() {
    run_property(
        "ucb-exact (AY, IGP, AMM, DMM, K-UCB)",
        3000,
        12,
        (exact_bound(), policy()).prop_map(|(b, p)| AgentKind::Ucb(b, p)),
    );
}

#[test]
fn hostile_ucb_cmm() {
    run_property(
        "ucb-cmm",
        1000,
        12,
        policy().prop_map(|p| AgentKind::Ucb(BoundCase::Cmm, p)),
    );
}

#[test]
fn hostile_ucb_sketched_bounds() {
    run_property(
        "ucb-sketched (BKB, EK-UCB)",
        2000,
        12,
        (sketched_bound(), policy()).prop_map(|(b, p)| AgentKind::Ucb(b, p)),
    );
}

#[test]
fn hostile_random_agent() {
    run_property("random", 1000, 12, Just(AgentKind::Random));
}

#[test]
fn hostile_rperp() {
    run_property(
        "r-perp",
        1000,
        12,
        (2usize..=12, 1usize..=6)
            .prop_map(|(horizon, interval)| AgentKind::RPerp { horizon, interval }),
    );
}

#[test]
fn hostile_restarting() {
    run_property(
        "restarting",
        1000,
        12,
        (any_bound(), 1usize..=4).prop_map(|(b, h)| AgentKind::Restarting(b, h)),
    );
}

#[test]
fn hostile_sliding_window() {
    run_property(
        "sliding-window",
        1000,
        12,
        (any_bound(), 1usize..=4).prop_map(|(b, w)| AgentKind::SlidingWindow(b, w)),
    );
}

/// `GreedyVariance` (not a `BanditAgent`): hostile candidate sets are rejected at
/// construction; on a valid set, any sequence of choices keeps every variance finite and in
/// [0, k(c, c)], and the information gain finite.
#[test]
fn hostile_greedy_variance() {
    let counters = Counters::default();
    let strategy = (
        kernel_choice(),
        1usize..=3,
        prop_oneof![3 => Just(0.01), 1 => prop::sample::select(EXTREMES.to_vec())],
        any::<bool>(),
        (0usize..3, 0usize..8, non_finite()),
    )
        .prop_flat_map(|(kernel, d, lambda, corrupt, bad)| {
            (
                Just(kernel),
                Just(lambda),
                Just(corrupt),
                Just(bad),
                prop::collection::vec(point(d), 0..=5),
                prop::collection::vec(any::<usize>(), 0..=8),
                // Hostile but finite targets: a mean that overflows is a typed error.
                prop::collection::vec(finite(), 9),
            )
        });
    let mut runner = TestRunner::new(Config {
        cases: 500,
        rng_seed: RngSeed::Fixed(0x005e_ed0f_ba5e),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &strategy,
            |(kernel, lambda, corrupt, (i, j, v), mut arms, picks, targets)| {
                counters.cases.fetch_add(1, Ordering::Relaxed);
                TOTAL_CASES.fetch_add(1, Ordering::Relaxed);
                let mut invalid = arms.is_empty() || lambda < f64::MIN_POSITIVE;
                if corrupt && !arms.is_empty() {
                    let n = arms.len();
                    let d = arms[0].len();
                    arms[i % n][j % d] = v;
                    invalid = true;
                }
                let gp = match kernel {
                    KernelChoice::Rbf(l) => {
                        GreedyVariance::new(Rbf::new(l).unwrap(), &arms, lambda)
                            .map(|g| Box::new(g) as Box<dyn GreedyLike>)
                    }
                    KernelChoice::Matern(nu, l) => {
                        GreedyVariance::new(Matern::new(nu, l).unwrap(), &arms, lambda)
                            .map(|g| Box::new(g) as Box<dyn GreedyLike>)
                    }
                };
                let mut gp = match gp {
                    Ok(gp) => {
                        prop_assert!(!invalid, "invalid candidates accepted");
                        gp
                    }
                    Err(e) => {
                        prop_assert!(
                            invalid || matches!(e, Error::NonFinite { .. }),
                            "valid candidates rejected: {e:?}"
                        );
                        return Ok(());
                    }
                };
                let n = arms.len();
                for &p in &picks {
                    gp.choose(p % n);
                    for (c, v) in gp.variances().iter().enumerate() {
                        prop_assert!(v.is_finite() && *v >= 0.0, "variance {v} of candidate {c}");
                    }
                    prop_assert!(gp.information_gain().is_finite());
                }
                match gp.mean(&targets[..picks.len()]) {
                    Ok(mean) => prop_assert!(mean.iter().all(|m| m.is_finite()), "mean {mean:?}"),
                    Err(e) => prop_assert!(matches!(e, Error::NonFinite { .. }), "{e:?}"),
                }
                // A wrong number of targets is an error, not a panic.
                prop_assert!(gp.mean(&targets[..picks.len() + 1]).is_err());
                Ok(())
            },
        )
        .unwrap();
    println!(
        "hostile greedy-variance: {} cases; {} cases so far in this run",
        counters.cases.load(Ordering::Relaxed),
        TOTAL_CASES.load(Ordering::Relaxed)
    );
}

trait GreedyLike {
    fn choose(&mut self, j: usize);
    fn variances(&self) -> &[f64];
    fn information_gain(&self) -> f64;
    fn mean(&self, y: &[f64]) -> Result<Vec<f64>>;
}

impl<K: Kernel> GreedyLike for GreedyVariance<K> {
    fn choose(&mut self, j: usize) {
        GreedyVariance::choose(self, j)
    }
    fn variances(&self) -> &[f64] {
        GreedyVariance::variances(self)
    }
    fn information_gain(&self) -> f64 {
        GreedyVariance::information_gain(self)
    }
    fn mean(&self, y: &[f64]) -> Result<Vec<f64>> {
        GreedyVariance::mean(self, y)
    }
}

// ---------------------------------------------------------------------------------------------
// The same arm thousands of times (deterministic)
// ---------------------------------------------------------------------------------------------

const REPEATS: usize = 2500;

/// Offers an arm set that holds the same arm 1000 times next to another arm, and updates at
/// the repeated arm `REPEATS` times (with a little alternating noise); then the bounds at the
/// arm and elsewhere must be finite, ordered and close to the data, a rejected call must change
/// nothing, and the agent must still select.
fn same_arm_repeatedly<B: ConfidenceBound + Clone>(bound: B) {
    same_arm_repeatedly_among(bound, 1000);
}

/// [`same_arm_repeatedly`] with the arm `copies` times in the arm set.
fn same_arm_repeatedly_among<B: ConfidenceBound + Clone>(bound: B, copies: usize) {
    let name = bound.name();
    let mut agent = UcbAgent::new(bound);
    let x = vec![0.2, 0.4];
    let mut arms = vec![x.clone(); copies];
    arms.push(vec![0.9, 0.1]);
    for t in 0..REPEATS {
        let i = agent.select(&arms).unwrap();
        assert!(i < arms.len(), "{name}: index {i}");
        let y = 0.5 + if t % 2 == 0 { 0.01 } else { -0.01 };
        agent
            .update(&x, y)
            .unwrap_or_else(|e| panic!("{name}: update {t}: {e:?}"));
    }
    assert_eq!(agent.bound().len(), REPEATS, "{name}");
    let probes = vec![x.clone(), vec![0.9, 0.1], vec![0.21, 0.4], vec![5.0, -5.0]];
    let before = bound_bits(agent.bound(), &probes);
    let b = agent.bound().bounds(&probes).unwrap();
    for k in 0..probes.len() {
        assert!(
            b.mean[k].is_finite() && b.lcb[k].is_finite() && b.ucb[k].is_finite(),
            "{name}: probe {k}: {b:?}"
        );
        assert!(
            b.lcb[k] <= b.mean[k] && b.mean[k] <= b.ucb[k],
            "{name}: {b:?}"
        );
    }
    // BKB's resampled dictionary may be empty after any update (Alg. 1: a well-known arm is
    // drawn with a small probability), which leaves the prior: skip the closeness check there.
    if name != "bkb" {
        assert!((b.mean[0] - 0.5).abs() < 0.05, "{name}: mean {}", b.mean[0]);
        assert!(b.lcb[0] <= 0.5 && 0.5 <= b.ucb[0], "{name}: {b:?}");
    }
    // Rejected calls change nothing.
    assert!(agent.update(&x, f64::NAN).is_err());
    assert!(agent.update(&[0.2], 0.5).is_err());
    assert!(agent.select(&Vec::<Vec<f64>>::new()).is_err());
    assert_eq!(bound_bits(agent.bound(), &probes), before, "{name}");
    let i = agent.select(&arms).unwrap();
    assert!(i < arms.len());
}

fn kernel() -> Matern {
    Matern::new(2.5, 0.3).unwrap()
}

#[test]
fn same_arm_repeatedly_ay() {
    same_arm_repeatedly(Ay::new(kernel(), params()).unwrap());
}

#[test]
fn same_arm_repeatedly_igp() {
    same_arm_repeatedly(Igp::new(kernel(), params()).unwrap());
}

#[test]
fn same_arm_repeatedly_amm() {
    same_arm_repeatedly(Amm::new(kernel(), params()).unwrap());
}

#[test]
fn same_arm_repeatedly_dmm() {
    same_arm_repeatedly(Dmm::new(kernel(), params()).unwrap());
}

/// Slow in the debug profile (an eigendecomposition update per observation, over 60 s):
/// run in release with `cargo test --release --test integration -- hostile:: --ignored`. With 100 copies of
/// the arm rather than 1000: every CMM selection projects each arm on the t eigenvectors
/// (O(t²) per arm), which took 470 s of the 2500 rounds with 1000 copies (37 s of the first
/// 1000 rounds against 5 s with 100); the duplicates and the rank-one K are the same.
#[test]
#[ignore = "slow in debug; run in release"]
fn same_arm_repeatedly_cmm() {
    same_arm_repeatedly_among(Cmm::new(kernel(), params()).unwrap(), 100);
}

#[test]
fn same_arm_repeatedly_k_ucb() {
    same_arm_repeatedly(KUcb::new(kernel(), 0.1, 1.0).unwrap());
}

#[test]
fn same_arm_repeatedly_bkb() {
    same_arm_repeatedly(Bkb::new(kernel(), sketch_params(true), 1).unwrap());
    same_arm_repeatedly(Bkb::new(kernel(), sketch_params(false), 2).unwrap());
}

#[test]
fn same_arm_repeatedly_ek_ucb() {
    same_arm_repeatedly(EkUcb::new(kernel(), sketch_params(true), 1).unwrap());
    same_arm_repeatedly(EkUcb::new(kernel(), sketch_params(false), 2).unwrap());
}

// ---------------------------------------------------------------------------------------------
// Regression tests for what the properties found
// ---------------------------------------------------------------------------------------------

/// A clone of CMM-UCB answered differently from the original in the last bits: `Clone`
/// dropped the cached eigendecompositions, and a spectrum recomputed from scratch differs from
/// the original's bordered update.
#[test]
fn cmm_clone_answers_bit_for_bit_as_the_original() {
    let mut cmm = Cmm::new(Rbf::new(1e4).unwrap(), params()).unwrap();
    let probes = vec![vec![0.0, 0.0], vec![0.5, 0.5], vec![0.3, 0.1]];
    cmm.observe(&[0.1, 0.2], 0.5).unwrap();
    let _ = cmm.bounds(&probes).unwrap(); // caches the spectrum for t = 1
    cmm.observe(&[0.7, 0.2], -0.3).unwrap();
    let original = bound_bits(&cmm, &probes); // a bordered update of t = 1's
    let clone = cmm.clone();
    assert_eq!(bound_bits(&clone, &probes), original);
}

/// Regression: a second reward of ±`f64::MAX` at an arm overflowed BKB's and EK-UCB's running
/// sums and weights, and the bounds became ±∞/NaN. It is now refused, and nothing changes.
#[test]
fn sketched_bounds_refuse_overflowing_rewards() {
    let kernel = Rbf::new(0.3).unwrap();
    let params = SketchParams::new().beta(1.0).horizon(50);
    let bounds: Vec<Box<dyn ConfidenceBound>> = vec![
        Box::new(EkUcb::new(kernel, params, 1).unwrap()),
        Box::new(Bkb::new(kernel, params, 1).unwrap()),
    ];
    for mut bound in bounds {
        bound.observe(&[0.5], -1e100).unwrap();
        let probes = [[0.5], [0.2]];
        let before = bound.bounds(&probes).unwrap();
        for y in [-f64::MAX, -0.75 * f64::MAX, 1e200] {
            assert!(matches!(
                bound.observe(&[0.5], y),
                Err(Error::NonFinite { .. })
            ));
            assert_eq!(bound.len(), 1);
            assert_eq!(bound.bounds(&probes).unwrap(), before, "{}", bound.name());
        }
        bound.observe(&[0.2], 1.0).unwrap();
        let after = bound.bounds(&probes).unwrap();
        assert!(
            after
                .lcb
                .iter()
                .chain(&after.ucb)
                .chain(&after.mean)
                .all(|v| v.is_finite())
        );
    }
}
