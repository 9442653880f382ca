//! Structured, deterministic cases for the exact bounds (issue 15): "exact" must hold on the
//! inputs an agent actually produces, not only on random ones.
//!
//! A [`Case`] is a kernel (RBF, Matérn 1/2, 3/2, 5/2 with length-scales from 10⁻³ to 10³), the
//! bound parameters, an input dimension d ∈ {1, 2, 3}, a sequence of [`Step`]s (observations
//! and truncations) and a set of query points. The families, each a function returning
//! `Vec<Case>` whose `name`s identify the case in failure messages:
//!
//! - [`issue_15`]: the reproducible case of the issue (RBF ℓ = 0.3, a point 10⁻¹⁵ off the
//!   midpoint of two observations, queried on a grid of [0, 1]);
//! - [`mirrored`]: mirrored pairs and symmetric grids in 1–3 dimensions, with the midpoint or
//!   centre observed exactly, a few ulps off (`next_up`, `next_down`, bit arithmetic) and
//!   10⁻¹⁵ off, queried there and at mirrored points;
//! - [`duplicates`]: exact duplicates and near duplicates 10⁻¹⁵, 10⁻¹², 10⁻⁹ and 10⁻⁶ apart,
//!   each observed three times with different targets;
//! - [`clusters`]: tight clusters of width 10⁻⁸, 10⁻⁶ and 10⁻³ after a few exploration points,
//!   as an agent produces near its optimum;
//! - [`extremes`]: targets of scale 10⁻⁸ … 10⁸ under extreme length-scales, and a small
//!   regulariser (c = 100);
//! - [`long_sequences`]: ≥ 145 observations (past CMM-UCB's full decomposition every 100
//!   updates and past the 128 rows below which the exact argmax solves every arm), with
//!   truncations from above 100 to 100 and below, and regrowth;
//! - [`ties`]: query sets whose UCBs tie to the last bit (exact duplicate query points) or in
//!   exact arithmetic only (mirrored or coordinate-swapped points under a symmetric design).
//!
//! Every case's query set also contains an exact duplicate of one of its points. [`all`]
//! gathers the families; [`Size::Quick`] gives each geometry one kernel (rotating through the
//! kinds and length-scales), [`Size::Sweep`] every kernel of [`sweep_kernels`].
//!
//! [`replay`] feeds a case to a bound along one of several [`Path`]s (plain appends, appends
//! that reuse the last query's solved column, a fixed arm set, blocked batches) and hands the
//! bound to a visitor after *every* step, so that every incremental path is exercised;
//! [`bounds_after_every_step`] collects `evaluate` at each visit. Nothing here knows what a
//! test checks.

#![allow(dead_code)]

use std::fmt;
use std::sync::Arc;

use kernel_bandits::kernel::{Kernel, Matern, Rbf};
use kernel_bandits::points::AsPoints;
use kernel_bandits::prelude::{BoundParams, Bounds, ConfidenceBound};

/// The kernels of the cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    /// exp(−r²/(2ℓ²)).
    Rbf,
    /// Matérn ν = 1/2: exp(−r/ℓ).
    Matern12,
    /// Matérn ν = 3/2.
    Matern32,
    /// Matérn ν = 5/2.
    Matern52,
}

/// A kernel and its length-scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelSpec {
    /// Which kernel.
    pub kind: KernelKind,
    /// ℓ.
    pub lengthscale: f64,
}

impl KernelSpec {
    /// The crate's kernel.
    pub fn build(&self) -> Arc<dyn Kernel> {
        let l = self.lengthscale;
        match self.kind {
            KernelKind::Rbf => Arc::new(Rbf::new(l).unwrap()),
            KernelKind::Matern12 => Arc::new(Matern::new(0.5, l).unwrap()),
            KernelKind::Matern32 => Arc::new(Matern::new(1.5, l).unwrap()),
            KernelKind::Matern52 => Arc::new(Matern::new(2.5, l).unwrap()),
        }
    }
}

impl fmt::Display for KernelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            KernelKind::Rbf => "RBF",
            KernelKind::Matern12 => "Matérn 1/2",
            KernelKind::Matern32 => "Matérn 3/2",
            KernelKind::Matern52 => "Matérn 5/2",
        };
        write!(f, "{kind} ℓ = {:e}", self.lengthscale)
    }
}

/// σ, B, δ, c and η of the bounds (λ of AY-GP-UCB is left at its default σ²/c).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    /// σ.
    pub sigma: f64,
    /// B.
    pub norm_bound: f64,
    /// δ.
    pub delta: f64,
    /// c.
    pub scale: f64,
    /// η of IGP-UCB.
    pub eta: f64,
}

impl ParamSpec {
    /// The issue's parameters: σ = 0.1, B = 10, δ = 0.01, c = 1, and η = 2/T for T = 1000.
    pub fn issue() -> Self {
        Self {
            sigma: 0.1,
            norm_bound: 10.0,
            delta: 0.01,
            scale: 1.0,
            eta: 0.002,
        }
    }

    /// As the crate's builder.
    pub fn bound_params(&self) -> BoundParams {
        BoundParams::new()
            .sigma(self.sigma)
            .norm_bound(self.norm_bound)
            .delta(self.delta)
            .scale(self.scale)
            .eta(self.eta)
    }
}

/// One step of a case.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Observe y at x.
    Observe(Vec<f64>, f64),
    /// Keep the first `len` observations (`ConfidenceBound::truncate`).
    Truncate(usize),
}

/// A structured case.
#[derive(Debug, Clone)]
pub struct Case {
    /// family/geometry [kernel], for failure messages.
    pub name: String,
    /// The family it comes from.
    pub family: &'static str,
    /// The kernel.
    pub kernel: KernelSpec,
    /// The bound parameters.
    pub params: ParamSpec,
    /// Input dimension.
    pub dim: usize,
    /// Observations and truncations, in order.
    pub steps: Vec<Step>,
    /// The points queried after every step.
    pub queries: Vec<Vec<f64>>,
}

impl Case {
    /// The observed inputs and targets after the first `steps` steps.
    pub fn data_after(&self, steps: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for step in &self.steps[..steps] {
            match step {
                Step::Observe(x, y) => {
                    xs.push(x.clone());
                    ys.push(*y);
                }
                Step::Truncate(len) => {
                    xs.truncate(*len);
                    ys.truncate(*len);
                }
            }
        }
        (xs, ys)
    }

    /// The number of observations after each number of steps, 0..=steps.len().
    pub fn lengths(&self) -> Vec<usize> {
        let mut len = 0;
        let mut out = vec![0];
        for step in &self.steps {
            len = match step {
                Step::Observe(..) => len + 1,
                Step::Truncate(keep) => len.min(*keep),
            };
            out.push(len);
        }
        out
    }

    /// The largest number of observations held at once.
    pub fn max_len(&self) -> usize {
        self.lengths().into_iter().max().unwrap_or(0)
    }

    /// Whether the case truncates from above `len` observations to `len` or fewer.
    pub fn truncates_across(&self, len: usize) -> bool {
        let lengths = self.lengths();
        lengths.windows(2).any(|w| w[0] > len && w[1] <= len)
    }
}

/// How many kernels each geometry is paired with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// One kernel per geometry, rotating through [`quick_kernels`]: the default test run.
    Quick,
    /// Every kernel of [`sweep_kernels`]: the slow run.
    Sweep,
}

/// The rotation of kernels for [`Size::Quick`]: every kind, length-scales 10⁻³ … 10³.
pub fn quick_kernels() -> Vec<KernelSpec> {
    use KernelKind::*;
    [
        (Rbf, 0.3),
        (Matern52, 1e-3),
        (Matern32, 1e3),
        (Matern12, 0.1),
        (Rbf, 1e3),
        (Matern52, 1.0),
        (Matern32, 1e-2),
        (Matern12, 1e-3),
        (Rbf, 1e-3),
        (Matern52, 10.0),
        (Matern32, 0.3),
        (Matern12, 1e3),
    ]
    .into_iter()
    .map(|(kind, lengthscale)| KernelSpec { kind, lengthscale })
    .collect()
}

/// Every kind with ℓ ∈ {10⁻³, 10⁻², 0.1, 0.3, 1, 10, 10³}.
pub fn sweep_kernels() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for kind in [
        KernelKind::Rbf,
        KernelKind::Matern12,
        KernelKind::Matern32,
        KernelKind::Matern52,
    ] {
        for lengthscale in [1e-3, 1e-2, 0.1, 0.3, 1.0, 10.0, 1e3] {
            out.push(KernelSpec { kind, lengthscale });
        }
    }
    out
}

/// A case without its kernel.
struct Geometry {
    name: String,
    dim: usize,
    steps: Vec<Step>,
    queries: Vec<Vec<f64>>,
    params: ParamSpec,
}

impl Geometry {
    fn new(name: impl Into<String>, dim: usize) -> Self {
        Self {
            name: name.into(),
            dim,
            steps: Vec::new(),
            queries: Vec::new(),
            params: ParamSpec::issue(),
        }
    }

    fn observe(&mut self, x: Vec<f64>, y: f64) {
        assert_eq!(x.len(), self.dim, "{}: observed point dimension", self.name);
        self.steps.push(Step::Observe(x, y));
    }

    fn truncate(&mut self, len: usize) {
        self.steps.push(Step::Truncate(len));
    }

    fn query(&mut self, x: Vec<f64>) {
        assert_eq!(x.len(), self.dim, "{}: query dimension", self.name);
        self.queries.push(x);
    }

    /// Appends an exact duplicate of query `j`, so that two UCBs tie to the last bit.
    fn duplicate_query(&mut self, j: usize) {
        let x = self.queries[j].clone();
        self.queries.push(x);
    }

    fn with_kernel(&self, family: &'static str, kernel: KernelSpec) -> Case {
        Case {
            name: format!("{family}/{} [{kernel}]", self.name),
            family,
            kernel,
            params: self.params,
            dim: self.dim,
            steps: self.steps.clone(),
            queries: self.queries.clone(),
        }
    }
}

/// Pairs geometries with kernels: with [`Size::Quick`] geometry i gets
/// `kernels[(offset + i) % len]` (or `fixed[i % len]` when given), with [`Size::Sweep`] every
/// kernel of [`sweep_kernels`].
fn pair(
    family: &'static str,
    geometries: &[Geometry],
    size: Size,
    offset: usize,
    fixed: Option<&[KernelSpec]>,
) -> Vec<Case> {
    match size {
        Size::Quick => {
            let rotation = quick_kernels();
            geometries
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let kernel = match fixed {
                        Some(list) => list[i % list.len()],
                        None => rotation[(offset + i) % rotation.len()],
                    };
                    g.with_kernel(family, kernel)
                })
                .collect()
        }
        Size::Sweep => geometries
            .iter()
            .flat_map(|g| {
                sweep_kernels()
                    .into_iter()
                    .map(|k| g.with_kernel(family, k))
            })
            .collect(),
    }
}

/// SplitMix64: a deterministic generator independent of any crate's version.
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform on [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform on [−1, 1).
    fn signed(&mut self) -> f64 {
        2.0 * self.unit() - 1.0
    }

    fn point(&mut self, dim: usize) -> Vec<f64> {
        (0..dim).map(|_| self.unit()).collect()
    }
}

/// x moved by `ulps` units in the last place (bit arithmetic on a positive x).
pub fn ulps_off(x: f64, ulps: i64) -> f64 {
    assert!(x > 0.0);
    f64::from_bits((x.to_bits() as i64 + ulps) as u64)
}

fn add(x: &[f64], offset: &[f64]) -> Vec<f64> {
    x.iter().zip(offset).map(|(a, b)| a + b).collect()
}

fn shift(x: &[f64], by: f64) -> Vec<f64> {
    x.iter().map(|a| a + by).collect()
}

/// The issue's case: RBF ℓ = 0.3, σ = 0.1, B = 10, δ = 0.01, c = 1; y = 0.3 at 0.1, y = −0.2
/// at 0.9, then y = 0.5 at 0.5 + 10⁻¹⁵; queried at 0, 0.05, …, 1.
pub fn issue_15() -> Vec<Case> {
    let mut g = Geometry::new("0.5+1e-15 between 0.1 and 0.9", 1);
    g.observe(vec![0.1], 0.3);
    g.observe(vec![0.9], -0.2);
    g.observe(vec![0.5 + 1e-15], 0.5);
    for i in 0..=20 {
        g.query(vec![i as f64 / 20.0]);
    }
    g.duplicate_query(10);
    let kernel = KernelSpec {
        kind: KernelKind::Rbf,
        lengthscale: 0.3,
    };
    vec![g.with_kernel("issue15", kernel)]
}

/// A mirrored pair c ± h, then the midpoint exactly, one ulp either side, three ulps above
/// and 10⁻¹⁵ above, then the inner pair c ± h/2; queried at all of these and mirrored points.
fn mirrored_pair(centre: f64, h: f64, antisymmetric: bool) -> Geometry {
    let sign = if antisymmetric { -1.0 } else { 1.0 };
    let c = centre;
    let mut g = Geometry::new(
        format!(
            "pair {c} ± {h:e}, {} targets",
            if antisymmetric {
                "antisymmetric"
            } else {
                "symmetric"
            }
        ),
        1,
    );
    g.observe(vec![c - h], 0.4);
    g.observe(vec![c + h], sign * 0.4);
    g.observe(vec![c], 0.9);
    g.observe(vec![c.next_up()], 0.7);
    g.observe(vec![c.next_down()], 1.1);
    g.observe(vec![ulps_off(c, 3)], 0.85);
    g.observe(vec![c + 1e-15], 0.8);
    g.observe(vec![c - h / 2.0], -0.3);
    g.observe(vec![c + h / 2.0], sign * -0.3);
    for x in [
        c,
        c.next_up(),
        c.next_down(),
        ulps_off(c, 3),
        ulps_off(c, -3),
        c + 1e-15,
        c - 1e-15,
        c - h,
        c + h,
        c - h / 2.0,
        c + h / 2.0,
        c - h / 4.0,
        c + h / 4.0,
        c - 2.0 * h,
        c + 2.0 * h,
        0.0,
        1.0,
    ] {
        g.query(vec![x]);
    }
    g.duplicate_query(0);
    g
}

/// A 3 × 3 grid of spacing s centred at (0.5, 0.5) with targets symmetric about the centre;
/// then the centre exactly, one ulp off in x, one ulp off in y, and 10⁻¹⁵ off diagonally.
fn symmetric_grid_2d(s: f64) -> Geometry {
    let c = 0.5;
    let mut g = Geometry::new(format!("3x3 grid spacing {s:e} about (0.5, 0.5)"), 2);
    for i in [-1.0, 0.0, 1.0] {
        for j in [-1.0, 0.0, 1.0] {
            if i != 0.0 || j != 0.0 {
                let y: f64 = 1.0 - 0.25 * (i * i + j * j);
                g.observe(vec![c + i * s, c + j * s], y);
            }
        }
    }
    g.observe(vec![c, c], 1.2);
    g.observe(vec![c.next_up(), c], 1.1);
    g.observe(vec![c, c.next_down()], 0.95);
    g.observe(vec![c + 1e-15, c - 1e-15], 1.05);
    let h = s / 2.0;
    for x in [
        vec![c, c],
        vec![c.next_up(), c],
        vec![c.next_down(), c],
        vec![c, c.next_down()],
        vec![c + 1e-15, c + 1e-15],
        vec![c - h, c - h],
        vec![c + h, c + h],
        vec![c - h, c + h],
        vec![c + h, c - h],
        vec![c - h, c],
        vec![c + h, c],
        vec![c, c - h],
        vec![c, c + h],
        vec![c - s, c - s],
        vec![c + s, c + s],
        vec![0.0, 1.0],
    ] {
        g.query(x);
    }
    g.duplicate_query(0);
    g
}

/// The eight corners of a cube of half-side s about (0.5, 0.5, 0.5), with targets invariant
/// under the full mirror and coordinate permutations; then the centre exactly, three ulps
/// off and 10⁻¹⁵ off.
fn symmetric_cube_3d(s: f64) -> Geometry {
    let c = 0.5;
    let mut g = Geometry::new(format!("cube half-side {s:e} about (0.5, 0.5, 0.5)"), 3);
    for sx in [-1.0, 1.0] {
        for sy in [-1.0, 1.0] {
            for sz in [-1.0, 1.0] {
                let y = 0.5 + 0.2 * (sx * sy + sy * sz + sx * sz) / 3.0;
                g.observe(vec![c + sx * s, c + sy * s, c + sz * s], y);
            }
        }
    }
    g.observe(vec![c, c, c], 0.9);
    g.observe(vec![ulps_off(c, 3), c, ulps_off(c, -3)], 0.8);
    g.observe(vec![c + 1e-15, c + 1e-15, c + 1e-15], 0.85);
    let h = s / 2.0;
    g.query(vec![c, c, c]);
    g.query(vec![ulps_off(c, 3), c, ulps_off(c, -3)]);
    g.query(vec![c.next_up(), c.next_up(), c.next_up()]);
    for v in [
        [1.0, 1.0, 1.0],
        [1.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 0.5, -0.5],
    ] {
        g.query(vec![c + h * v[0], c + h * v[1], c + h * v[2]]);
        g.query(vec![c - h * v[0], c - h * v[1], c - h * v[2]]);
    }
    g.query(vec![c + s, c + s, c + s]);
    g.query(vec![c - s, c + s, c - s]);
    g.query(vec![0.0, 0.0, 1.0]);
    g.duplicate_query(0);
    g
}

/// Mirrored pairs and symmetric grids in 1–3 dimensions.
pub fn mirrored(size: Size) -> Vec<Case> {
    let mut small_regulariser = mirrored_pair(0.5, 0.25, false);
    small_regulariser.name.push_str(", c = 100");
    small_regulariser.params.scale = 100.0;
    let geometries = [
        mirrored_pair(0.5, 0.25, false),
        mirrored_pair(0.5, 1e-3, true),
        mirrored_pair(0.3, 0.1, false),
        mirrored_pair(0.5, 1e-6, false),
        small_regulariser,
        symmetric_grid_2d(0.2),
        symmetric_grid_2d(1e-3),
        symmetric_cube_3d(0.25),
        symmetric_cube_3d(1e-4),
    ];
    pair("mirrored", &geometries, size, 0, None)
}

/// A base point p and points 10⁻¹⁵, 10⁻¹², 10⁻⁹ and 10⁻⁶ off it in every coordinate; p twice
/// in a row, then each offset, three rounds with different targets.
fn near_duplicates(dim: usize) -> Geometry {
    let p: Vec<f64> = [0.37, 0.61, 0.23][..dim].to_vec();
    let offsets = [0.0, 0.0, 1e-15, 1e-12, 1e-9, 1e-6];
    let mut g = Geometry::new(format!("p and p + 1e-15 … 1e-6, d = {dim}"), dim);
    for round in 0..3 {
        for (k, &o) in offsets.iter().enumerate() {
            let y = 0.3 + 0.2 * k as f64 - 0.25 * round as f64 + 0.1 * ((k + round) % 2) as f64;
            g.observe(shift(&p, o), y);
        }
    }
    g.query(p.clone());
    for &o in &offsets[2..] {
        g.query(shift(&p, o));
        g.query(shift(&p, -o));
    }
    g.query(shift(&p, 5e-7));
    g.query(shift(&p, 0.05));
    g.query(shift(&p, 0.3));
    g.query(vec![0.95; dim]);
    g.duplicate_query(0);
    g.duplicate_query(3);
    g
}

/// The same point observed many times in a row with alternating targets, then a second point
/// and the first again.
fn repeated_point(dim: usize) -> Geometry {
    let p: Vec<f64> = [0.8, 0.15, 0.5][..dim].to_vec();
    let q = shift(&p, -0.1);
    let mut g = Geometry::new(format!("one point 12 times, d = {dim}"), dim);
    for k in 0..12 {
        g.observe(p.clone(), if k % 2 == 0 { 1.0 } else { -0.5 });
    }
    g.observe(q.clone(), 0.2);
    g.observe(p.clone(), 0.25);
    g.query(p.clone());
    g.query(q.clone());
    g.query(shift(&p, 1e-15));
    g.query(shift(&p, -0.05));
    g.query(shift(&p, -0.2));
    g.duplicate_query(0);
    g
}

/// Exact duplicates and near duplicates.
pub fn duplicates(size: Size) -> Vec<Case> {
    let geometries = [
        near_duplicates(1),
        near_duplicates(2),
        near_duplicates(3),
        repeated_point(1),
        repeated_point(3),
    ];
    pair("duplicates", &geometries, size, 3, None)
}

/// Six exploration points, then 18 points in a cluster of the given width about x* (x* itself
/// twice), targets f(x) plus a deterministic ±0.05 pattern: an agent near its optimum.
fn cluster(width: f64, dim: usize, seed: u64) -> Geometry {
    let centre: Vec<f64> = [0.62, 0.41, 0.55][..dim].to_vec();
    let f = |x: &[f64]| {
        let r2: f64 = x.iter().zip(&centre).map(|(a, b)| (a - b) * (a - b)).sum();
        1.0 - 4.0 * r2 + 0.3 * (3.0 * x[0]).sin()
    };
    let mut rng = SplitMix(seed);
    let mut g = Geometry::new(format!("cluster width {width:e}, d = {dim}"), dim);
    for _ in 0..6 {
        let x = rng.point(dim);
        let y = f(&x) + 0.05 * rng.signed();
        g.observe(x, y);
    }
    let mut members = Vec::new();
    for k in 0..18 {
        let x = if k == 3 || k == 10 {
            centre.clone()
        } else {
            let u: Vec<f64> = (0..dim).map(|_| width * rng.signed()).collect();
            add(&centre, &u)
        };
        let y = f(&x) + 0.05 * rng.signed();
        members.push(x.clone());
        g.observe(x, y);
    }
    g.query(centre.clone());
    for m in [0.5, 1.0, 2.0] {
        let mut e = vec![0.0; dim];
        e[0] = m * width;
        g.query(add(&centre, &e));
        g.query(add(&centre, &e.iter().map(|v| -v).collect::<Vec<_>>()));
    }
    g.query(shift(&centre, width));
    for member in members.iter().take(4) {
        g.query(member.clone());
    }
    g.query(vec![0.05; dim]);
    g.query(vec![0.9; dim]);
    g.duplicate_query(0);
    g
}

/// Tight clusters of widths 10⁻⁸, 10⁻⁶, 10⁻³.
pub fn clusters(size: Size) -> Vec<Case> {
    let geometries = [
        cluster(1e-8, 1, 11),
        cluster(1e-6, 2, 12),
        cluster(1e-3, 3, 13),
        cluster(1e-8, 3, 14),
        cluster(1e-3, 1, 15),
        cluster(1e-6, 1, 16),
    ];
    pair("clusters", &geometries, size, 6, None)
}

/// Ten design points and a repeat of the first with another target, targets of the given
/// scale; queried at design points and between them.
fn scaled_targets(scale: f64, dim: usize, seed: u64) -> Geometry {
    let mut rng = SplitMix(seed);
    let mut g = Geometry::new(format!("targets × {scale:e}, d = {dim}"), dim);
    let design: Vec<Vec<f64>> = (0..10).map(|_| rng.point(dim)).collect();
    let f = |x: &[f64]| (5.0 * x[0]).sin() + 0.5 * (3.0 * x[dim - 1]).cos();
    for x in &design {
        g.observe(x.clone(), scale * f(x));
    }
    g.observe(design[0].clone(), scale * (f(&design[0]) + 0.5));
    for x in design.iter().take(4) {
        g.query(x.clone());
    }
    for w in design.windows(2).take(4) {
        g.query(w[0].iter().zip(&w[1]).map(|(a, b)| 0.5 * (a + b)).collect());
    }
    g.query(shift(&design[0], 1e-12));
    g.query(vec![0.5; dim]);
    g.duplicate_query(0);
    g
}

/// Extreme targets (10⁻⁸ … 10⁸) under extreme length-scales.
pub fn extremes(size: Size) -> Vec<Case> {
    use KernelKind::*;
    let geometries = [
        scaled_targets(1e-8, 1, 21),
        scaled_targets(1e8, 1, 22),
        scaled_targets(1e-4, 2, 23),
        scaled_targets(1e4, 2, 24),
        scaled_targets(1e8, 3, 25),
        scaled_targets(1e-8, 2, 26),
    ];
    let extreme: Vec<KernelSpec> = [
        (Matern52, 1e-3),
        (Rbf, 1e3),
        (Matern12, 1e3),
        (Matern32, 1e-3),
        (Rbf, 1e-3),
        (Matern52, 1e3),
    ]
    .into_iter()
    .map(|(kind, lengthscale)| KernelSpec { kind, lengthscale })
    .collect();
    pair("extremes", &geometries, size, 0, Some(&extreme))
}

/// A 1-D agent-like run: 110 points spiralling into 0.6 (every 7th a repeat), truncated to 99,
/// 12 points near 0.2, truncated to 100, then 50 more into 0.6; queried on a grid of 41.
fn long_spiral_1d() -> Geometry {
    let mut g = Geometry::new("1-D spiral into 0.6, 110 → 99 → 111 → 100 → 150", 1);
    let f = |x: f64| (6.0 * x).sin();
    let mut rng = SplitMix(31);
    let mut last = vec![0.6];
    let mut k: i32 = 0;
    let mut spiral = |g: &mut Geometry, n: usize, last: &mut Vec<f64>| {
        for _ in 0..n {
            let x = if k % 7 == 6 {
                last.clone()
            } else {
                vec![0.6 + 0.35 * (-0.93f64).powi(k)]
            };
            g.observe(x.clone(), f(x[0]) + 0.05 * rng.signed());
            *last = x;
            k += 1;
        }
    };
    spiral(&mut g, 110, &mut last);
    g.truncate(99);
    for i in 0..12 {
        g.observe(vec![0.2 + 1e-3 * i as f64], 0.1 * i as f64);
    }
    g.truncate(100);
    spiral(&mut g, 50, &mut last);
    for x in [0.6, 0.6 + 1e-15, 0.6f64.next_up(), 0.2, 0.2 + 5e-4] {
        g.query(vec![x]);
    }
    for i in 0..=40 {
        g.query(vec![i as f64 / 40.0]);
    }
    g.duplicate_query(0);
    g
}

/// A 2-D design in mirrored pairs (x, 1 − x) with equal targets, converging onto the two
/// mirrored optima near (0.3, 0.3) and (0.7, 0.7): 150 points, truncated to 101 and to 100,
/// then four more; queried at 16 mirrored pairs.
fn long_mirrored_2d() -> Geometry {
    let mut g = Geometry::new("2-D mirrored pairs, 150 → 101 → 100 → 104", 2);
    let mut rng = SplitMix(32);
    let f = |x: &[f64]| {
        let r = ((x[0] - 0.5).powi(2) + (x[1] - 0.5).powi(2)).sqrt();
        (3.0 * r).cos()
    };
    for k in 0..75 {
        let spread = 0.4 * 0.95f64.powi(k);
        let p = vec![0.3 + spread * rng.signed(), 0.3 + spread * rng.signed()];
        let mirror: Vec<f64> = p.iter().map(|v| 1.0 - v).collect();
        let y = f(&p) + 0.05 * rng.signed();
        g.observe(p, y);
        g.observe(mirror, y);
    }
    g.truncate(101);
    g.truncate(100);
    for p in [[0.3, 0.3], [0.7, 0.7], [0.3, 0.3], [0.5, 0.5]] {
        g.observe(p.to_vec(), 0.9);
    }
    for p in [[0.3, 0.3], [0.2, 0.35], [0.45, 0.1], [0.31, 0.29]] {
        g.query(p.to_vec());
        g.query(p.iter().map(|v| 1.0 - v).collect());
    }
    for _ in 0..12 {
        let p = vec![0.3 + 0.1 * rng.signed(), 0.3 + 0.1 * rng.signed()];
        g.query(p.iter().map(|v| 1.0 - v).collect());
        g.query(p);
    }
    g.query(vec![0.5, 0.5]);
    g.duplicate_query(0);
    g
}

/// A 3-D run: 20 exploration points, then 125 in a cluster of width 10⁻⁶ (with repeats),
/// truncated to 100, then 8 more; queried in and around the cluster.
fn long_cluster_3d() -> Geometry {
    let mut g = Geometry::new("3-D cluster width 1e-6, 145 → 100 → 108", 3);
    let mut rng = SplitMix(33);
    let centre = vec![0.25, 0.75, 0.5];
    for _ in 0..20 {
        let x = rng.point(3);
        g.observe(x, rng.signed());
    }
    let mut previous = centre.clone();
    for k in 0..133 {
        if k == 125 {
            g.truncate(100);
        }
        let x = if k % 5 == 4 {
            previous.clone()
        } else {
            let u: Vec<f64> = (0..3).map(|_| 1e-6 * rng.signed()).collect();
            add(&centre, &u)
        };
        g.observe(x.clone(), 1.0 + 0.05 * rng.signed());
        previous = x;
    }
    g.query(centre.clone());
    g.query(shift(&centre, 5e-7));
    g.query(shift(&centre, -5e-7));
    g.query(shift(&centre, 1e-3));
    g.query(vec![0.1, 0.1, 0.1]);
    g.query(vec![0.9, 0.2, 0.6]);
    for _ in 0..20 {
        let u: Vec<f64> = (0..3).map(|_| 2e-6 * rng.signed()).collect();
        g.query(add(&centre, &u));
    }
    g.duplicate_query(0);
    g
}

/// Sequences of ≥ 130 observations with truncations across 100.
pub fn long_sequences(size: Size) -> Vec<Case> {
    use KernelKind::*;
    let geometries = [long_spiral_1d(), long_mirrored_2d(), long_cluster_3d()];
    let kernels: Vec<KernelSpec> = [(Matern52, 0.2), (Rbf, 0.3), (Matern32, 0.1)]
        .into_iter()
        .map(|(kind, lengthscale)| KernelSpec { kind, lengthscale })
        .collect();
    pair("long", &geometries, size, 0, Some(&kernels))
}

/// Observations at 0.25 and 0.75 with equal targets; queries at 0.5 ± δ and duplicates.
fn tied_mirror_1d() -> Geometry {
    let mut g = Geometry::new("0.25 and 0.75, queries 0.5 ± δ", 1);
    g.observe(vec![0.25], 0.5);
    g.observe(vec![0.75], 0.5);
    g.observe(vec![0.5], 0.1);
    for d in [0.05, 0.1, 0.25, 0.4, 0.5] {
        g.query(vec![0.5 - d]);
        g.query(vec![0.5 + d]);
    }
    g.duplicate_query(0);
    g.duplicate_query(1);
    g
}

/// A design symmetric under swapping the two coordinates; queries in swapped pairs (whose
/// kernel vectors are permutations of each other) and duplicates.
fn tied_swap_2d() -> Geometry {
    let mut g = Geometry::new("swap-symmetric design", 2);
    g.observe(vec![0.2, 0.7], 0.6);
    g.observe(vec![0.7, 0.2], 0.6);
    g.observe(vec![0.4, 0.4], -0.2);
    g.observe(vec![0.9, 0.9], 0.3);
    g.observe(vec![0.1, 0.3], 0.45);
    g.observe(vec![0.3, 0.1], 0.45);
    for p in [[0.2, 0.6], [0.5, 0.3], [0.0, 1.0], [0.35, 0.45]] {
        g.query(p.to_vec());
        g.query(vec![p[1], p[0]]);
    }
    g.query(vec![0.5, 0.5]);
    g.duplicate_query(0);
    g.duplicate_query(8);
    g
}

/// Random-looking data, every query present three times.
fn tripled_queries(dim: usize) -> Geometry {
    let mut rng = SplitMix(40 + dim as u64);
    let mut g = Geometry::new(format!("every query three times, d = {dim}"), dim);
    for _ in 0..8 {
        let x = rng.point(dim);
        g.observe(x, rng.signed());
    }
    let points: Vec<Vec<f64>> = (0..5).map(|_| rng.point(dim)).collect();
    for _ in 0..3 {
        for p in &points {
            g.query(p.clone());
        }
    }
    g
}

/// Query sets whose UCBs tie.
pub fn ties(size: Size) -> Vec<Case> {
    let geometries = [
        tied_mirror_1d(),
        tied_swap_2d(),
        tripled_queries(1),
        tripled_queries(3),
    ];
    pair("ties", &geometries, size, 9, None)
}

/// Every family.
pub fn all(size: Size) -> Vec<Case> {
    let mut cases = issue_15();
    cases.extend(mirrored(size));
    cases.extend(duplicates(size));
    cases.extend(clusters(size));
    cases.extend(extremes(size));
    cases.extend(long_sequences(size));
    cases.extend(ties(size));
    cases
}

/// How a bound absorbs a case's observations in [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// One `observe` per observation; the bound is visited after every step.
    Plain,
    /// As `Plain`, but every visit's queries also contain the point observed next, so that
    /// the append reuses the solved column of that query (a UCB agent's pattern).
    QueryNext,
    /// The case's queries declared as a fixed arm set (`fix_arms`) before the first
    /// observation, so that every update extends their kept columns.
    FixedArms,
    /// `observe_many` on runs of up to n consecutive observations; visited after each run
    /// and each truncation.
    Batched(usize),
}

/// What a visitor of [`replay`] is told.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    /// Steps applied so far (the data are `case.data_after(step)`).
    pub step: usize,
    /// Observations held.
    pub len: usize,
    /// The points to query at this visit.
    pub queries: &'a [Vec<f64>],
}

/// Feeds `case` to `bound` along `path`, calling `visit` before the first step and after every
/// step (or, for [`Path::Batched`], every run). The bound must be fresh.
///
/// # Errors
/// Whatever the bound returns on an observation, a truncation or `fix_arms`.
pub fn replay<B: ConfidenceBound>(
    case: &Case,
    bound: &mut B,
    path: Path,
    mut visit: impl FnMut(&B, Visit<'_>),
) -> kernel_bandits::Result<()> {
    assert!(
        bound.is_empty(),
        "{}: replay needs a fresh bound",
        case.name
    );
    if path == Path::FixedArms {
        bound.fix_arms(&case.queries.as_points()?, None)?;
    }
    let with_next = |step: usize| -> Vec<Vec<f64>> {
        let mut queries = case.queries.clone();
        if path == Path::QueryNext
            && let Some(Step::Observe(x, _)) = case.steps.get(step)
        {
            queries.push(x.clone());
        }
        queries
    };
    let queries = with_next(0);
    visit(
        bound,
        Visit {
            step: 0,
            len: 0,
            queries: &queries,
        },
    );
    let mut step = 0;
    while step < case.steps.len() {
        let end = match (&case.steps[step], path) {
            (Step::Truncate(len), _) => {
                bound.truncate(*len);
                step + 1
            }
            (Step::Observe(..), Path::Batched(n)) => {
                let mut end = step;
                while end < case.steps.len()
                    && end - step < n.max(1)
                    && matches!(case.steps[end], Step::Observe(..))
                {
                    end += 1;
                }
                let (xs, ys): (Vec<Vec<f64>>, Vec<f64>) = case.steps[step..end]
                    .iter()
                    .map(|s| match s {
                        Step::Observe(x, y) => (x.clone(), *y),
                        Step::Truncate(_) => unreachable!(),
                    })
                    .unzip();
                bound.observe_many(&xs.as_points()?, &ys)?;
                end
            }
            (Step::Observe(x, y), _) => {
                bound.observe(x, *y)?;
                step + 1
            }
        };
        step = end;
        let queries = with_next(step);
        visit(
            bound,
            Visit {
                step,
                len: bound.len(),
                queries: &queries,
            },
        );
    }
    Ok(())
}

/// `evaluate` at every visit of [`replay`]: (steps applied, bounds at the visit's queries).
///
/// # Errors
/// As [`replay`], and the first error of `evaluate`.
pub fn bounds_after_every_step<B: ConfidenceBound>(
    case: &Case,
    bound: &mut B,
    path: Path,
) -> kernel_bandits::Result<Vec<(usize, Bounds)>> {
    let mut out = Vec::new();
    let mut failure = None;
    replay(case, bound, path, |b, visit| {
        if failure.is_some() {
            return;
        }
        match b.evaluate(&visit.queries.as_points().unwrap()) {
            Ok(bounds) => out.push((visit.step, bounds)),
            Err(e) => failure = Some(e),
        }
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
