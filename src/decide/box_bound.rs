//! The proven bound on sup UCB over a box and its certificate: see [`certify_box`].

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use super::certificate::refuse_refuted;
use crate::agent::Recommendation;
use crate::bound::{ConfidenceBound, UcbShape, UcbTerm};
use crate::continuous::{BoxDomain, RefineOptions, refine};
use crate::error::{Error, Result};
use crate::kernel::{Kernel, KernelRegularity};
use crate::points::Points;

/// Which bounds on a sub-box [`certify_box`] may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BoxOrder {
    /// The first-order bound only (see [`certify_box`]).
    First,
    /// The smaller of the first- and second-order bounds where the second is proven (exact
    /// bounds, κ four times differentiable), the first-order bound elsewhere.
    #[default]
    Best,
}

/// Settings of [`certify_box`].
///
/// | name | default | meaning |
/// |---|---|---|
/// | `tolerance` | 0.05 | stop when the bound on sup UCB is within this of the best UCB found (absolute, ≥ 0) |
/// | `max_boxes` | 200 000 | the most sub-boxes bounded (≥ 1) |
/// | `max_time` | none | stop after this much time (the result is still a proven bound) |
/// | `order` | [`BoxOrder::Best`] | which sub-box bounds to use |
/// | `refinements` | 8 | the most local maximisations of the UCB (0: none) |
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxCertifyOptions {
    /// The requested distance between the proven bound and the best UCB found.
    pub tolerance: f64,
    /// The most sub-boxes whose bound is computed.
    pub max_boxes: usize,
    /// A time budget.
    pub max_time: Option<Duration>,
    /// Which sub-box bounds to use.
    pub order: BoxOrder,
    /// The most local maximisations of the UCB.
    pub refinements: usize,
}

impl Default for BoxCertifyOptions {
    fn default() -> Self {
        Self {
            tolerance: 0.05,
            max_boxes: 200_000,
            max_time: None,
            order: BoxOrder::Best,
            refinements: 8,
        }
    }
}

impl BoxCertifyOptions {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a tolerance that is negative or not finite, or
    /// `max_boxes = 0`.
    pub fn check(&self) -> Result<()> {
        if !(self.tolerance >= 0.0 && self.tolerance.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "tolerance",
                value: self.tolerance,
                expected: "finite and at least 0",
            });
        }
        if self.max_boxes == 0 {
            return Err(Error::InvalidParameter {
                name: "max_boxes",
                value: 0.0,
                expected: "at least 1",
            });
        }
        Ok(())
    }
}

/// A recommendation over a box and a proven bound on its simple regret ([`certify_box`]).
///
/// Deterministically `upper` ≥ sup_{x ∈ Q} UCB(x) ≥ `best_found`; on the event E of the
/// [module documentation](super), f(x*) − f(x̂) ≤ `gap` (see [`certify_box`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BoxCertificate {
    /// x̂: the point of the box with the largest LCB found (the observed points inside the
    /// box, then a local maximisation of the LCB from the best of them). `index` is its
    /// position among the observations, or the number of observations for a point the local
    /// maximisation found.
    pub recommendation: Recommendation,
    /// A proven upper bound on sup_{x ∈ Q} UCB(x).
    pub upper: f64,
    /// The largest UCB found at a point of the box (a lower bound on sup UCB).
    pub best_found: f64,
    /// Where `best_found` was found.
    pub best_point: Vec<f64>,
    /// `upper − recommendation.lcb` ≥ f(x*) − f(x̂) on E.
    pub gap: f64,
    /// `upper − best_found`: how close the search got (compare with the requested tolerance).
    pub tolerance: f64,
    /// Whether the requested tolerance was reached (otherwise a budget stopped the search).
    pub converged: bool,
    /// Sub-boxes bounded.
    pub boxes: usize,
    /// Whether a second-order sub-box bound was available (see [`BoxOrder`]).
    pub second_order: bool,
    /// Observations the bound had absorbed.
    pub observations: usize,
}

/// The certificate of `bound` over the box `domain`: a proven upper bound on sup UCB by
/// branch and bound (derived below), the point
/// with the largest LCB found, and gap = upper − LCB(x̂).
///
/// On a finite arm set, [`super::certify`] is exact and cheaper.
///
///
/// # The bound on one sub-box
///
/// Let Q' ⊆ Q be a sub-box with centre c and half-widths h, and
/// D = sup_{x ∈ Q'} d_k(c, x) the largest distance from c in the kernel's feature space,
/// d_k(c, x)² = ‖φ(x) − φ(c)‖² = k(c, c) + k(x, x) − 2k(c, x). For the kernels this applies to
/// ([`Kernel::regularity`](crate::kernel::Kernel::regularity): k(x, y) = s²κ(‖(x − y)/ℓ‖) with
/// κ nonincreasing), d_k(c, x)² = 2s²(1 − κ(‖(x − c)/ℓ‖)) is largest at the corners, so
/// D² = 2(s² − k(c, c + h)), computed with an allowance of 10⁻¹² s² for the rounding of the
/// kernel value, and never above s²κ2‖h/ℓ‖² when κ is twice differentiable (κ(0) − κ(r) ≤
/// κ2 r²/2 because |κ″(r)| ≤ −κ″(0) = κ2: −κ″ is the covariance of the derivative process).
///
/// **First order, the exact bounds** (AY, IGP, AMM, DMM, GP-UCB, K-UCB:
/// U(x) = min_r U_r(x), U_r = μ_r + w_r ρ_r, [`UcbShape::Terms`]). With Φ the data's feature
/// map, μ_r(x) = ⟨θ_r, φ(x)⟩ and ρ_r(x) = ‖A_r^{1/2} φ(x)‖ with A_r = a_r(ΦᵀΦ + a_r I)⁻¹,
/// 0 ≺ A_r ⪯ I (the push-through identity turns k(x, x) − k_t(x)ᵀ(K_t + a I)⁻¹k_t(x) into
/// φ(x)ᵀA_r φ(x)). Hence, by Cauchy–Schwarz and the triangle inequality,
/// |μ_r(x) − μ_r(c)| ≤ ‖θ_r‖ d_k(c, x) and |ρ_r(x) − ρ_r(c)| ≤ ‖A_r^{1/2}‖ d_k(c, x) ≤
/// d_k(c, x), so for every x ∈ Q'
///
/// > U(x) ≤ min_r U_r(x) ≤ min_r [U_r(c) + (‖θ_r‖_H + w_r) D].
///
/// ‖θ_r‖² = yᵀα − a_r‖α‖² with α = (K_t + a_r I)⁻¹y (one back substitution per term).
///
/// **First order, CMM-UCB** ([`UcbShape::Primal`]). Its value is the maximum of g(x) over a
/// confidence set G whose functions all have ‖g‖_H ≤ B (Flynn & Reeb 2024 Thm 4.4; the
/// set as the implementation enlarges it for rounding, see [`crate::bound::Cmm`]), and every
/// dual value U_a it evaluates is ≥ that maximum (weak duality, Thm 4.5). For g ∈ G,
/// g(x) − g(c) = ⟨g, φ(x) − φ(c)⟩ ≤ B d_k(c, x), so
///
/// > max_{g ∈ G} g(x) ≤ max_{g ∈ G} g(c) + B D ≤ UCB(c) + B D.
///
/// This bounds the exact CMM-UCB (the primal maximum) everywhere on Q'; the values CMM
/// reports at points lie above it by its dual search's accuracy (its `certificate` reports
/// the duality gap), which is far below any useful tolerance.
///
/// **Second order, the exact bounds, κ four times differentiable** (RBF; Matérn ν > 2). Let
/// r be the term active at c and u a unit direction. Along x(s) = c + su,
/// μ_r″ = ⟨θ_r, ∂ᵤ²φ⟩ ≤ ‖θ_r‖√k4, and with g = ρ_r² = ⟨φ, A_rφ⟩,
/// ρ_r″ = g″/(2ρ_r) − (g′)²/(4ρ_r³) ≤ g″/(2ρ_r), g″ = 2⟨∂ᵤ²φ, A_rφ⟩ + 2⟨∂ᵤφ, A_r∂ᵤφ⟩ ≤
/// 2√k4 ρ_r + 2k2, so ρ_r″ ≤ √k4 + k2/ρ_r, where k2 = s²κ2/ℓ_min² ≥ ‖∂ᵤφ‖² and
/// k4 = s²κ4/ℓ_min⁴ ≥ ‖∂ᵤ²φ‖² ([`KernelRegularity`](crate::kernel::KernelRegularity)). On Q',
/// ρ_r ≥ ρ_min = max(ρ_r(c) − D, √(a_r s²/(t s² + a_r))) (ρ_r is 1-Lipschitz in d_k, and
/// A_r ⪰ a_r/(λ_max(K_t) + a_r)·I with λ_max ≤ t s²). Taylor's theorem with the Lagrange
/// remainder along the segment from c to x = c + v (inside the convex Q') gives
///
/// > U(x) ≤ U_r(x) ≤ U_r(c) + ∇U_r(c)·v + ½ H ‖v‖²,
/// > H = ‖θ_r‖√k4 + w_r(√k4 + k2/ρ_min),
///
/// whose supremum over |vᵢ| ≤ hᵢ is U_r(c) + Σᵢ |∂ᵢU_r(c)| hᵢ + ½ H ‖h‖². Where the first
/// order bound is at least the best value found, the second is also computed (one more
/// solve at c), and the smaller is used; near a maximiser, where ∇U ≈ 0, it shrinks like
/// ‖h‖² instead of ‖h‖. It is skipped where ρ_r(c) < 10⁻³ s (next to the data, where the
/// computed ∇ρ_r is unreliable), for CMM-UCB and for kernels without κ4 (Matérn ν ≤ 2:
/// Matérn 3/2's profile has a nonzero third derivative at 0⁺, 6√3, so its sample paths are
/// not twice differentiable in mean square).
///
/// Every sub-box bound carries a further 10⁻⁹·(|U(c)| + L s) for rounding (L the slope of
/// the first-order bound).
///
/// # Branch and bound
///
/// The lower bound is the largest UCB found at a point of Q: the centres of the sub-boxes,
/// the observed points inside Q, and local maximisations ([`crate::continuous::refine`]) of
/// the UCB from the best of them (again whenever a centre improves on the best by more than
/// a quarter of the tolerance, up to [`BoxCertifyOptions::refinements`]). Sub-boxes wait in a
/// priority queue on their upper bound; the one with the largest is split in two across
/// its longest side (in units of the length-scale), each half bounded, and a half whose bound
/// is at most the best value found is dropped (it cannot hold a larger UCB). The search
/// stops when the largest bound in the queue is within `tolerance` of the best value found,
/// or when `max_boxes` sub-boxes have been bounded or `max_time` has passed; then
/// `upper` = max(largest bound in the queue, best found) ≥ sup_Q UCB either way, and
/// [`BoxCertificate::tolerance`] = upper − best found says how far the search got.
///
/// # What is guaranteed
///
/// `upper` ≥ sup_{x ∈ Q} UCB_t(x) holds deterministically, for the data as they are (no
/// probability involved). On the event E of the [`decide` module documentation](super) (probability
/// ≥ 1 − δ, every x and every round at once, by Ville's inequality), max_Q f ≤ upper and
/// f(x̂) ≥ LCB_t(x̂), so f(x*) − f(x̂) ≤ `gap` = upper − LCB_t(x̂) for the recommendation x̂ and
/// every maximiser x* of f over Q, at every round, including one chosen by looking at the
/// data. The tolerance says nothing about f: it only measures how close `upper` is to the
/// largest UCB found, i.e. how much of `gap` is the search's and not the bound's.
///
/// # Errors
/// [`Error::InvalidParameter`] for invalid `options` or a bound with no observation (whose
/// dimension is not known); [`Error::DimensionMismatch`] if the box and the bound differ in
/// dimension; [`Error::Unsupported`] for a bound or kernel whose UCB the derivation does not
/// cover (sketched bounds; sums, products, slices and the linear kernel) — rather than an
/// unproven number; [`Error::Refuted`] when the data refute the bound's assumptions; the
/// bound's errors. Nothing is changed on error.
///
/// # Examples
/// ```
/// use kernel_bandits::continuous::BoxDomain;
/// use kernel_bandits::decide::{BoxCertifyOptions, certify_box};
/// use kernel_bandits::prelude::*;
/// let params = BoundParams::new().sigma(0.1).norm_bound(2.0).delta(0.01);
/// let mut dmm = Dmm::new(Rbf::new(0.3)?, params)?;
/// for (x, y) in [(0.1, 0.2), (0.5, 0.9), (0.5, 1.0), (0.9, 0.1)] {
///     dmm.observe(&[x], y)?;
/// }
/// let domain = BoxDomain::unit(1)?;
/// let options = BoxCertifyOptions { tolerance: 0.01, ..Default::default() };
/// let c = certify_box(&dmm, &domain, &options)?;
/// assert!(c.converged && c.upper - c.best_found <= 0.01);
/// // The bound is above the UCB at every point of a fine grid.
/// let grid: Vec<[f64; 1]> = (0..=1000).map(|i| [i as f64 / 1000.0]).collect();
/// let top = dmm.bounds(&grid)?.ucb.into_iter().fold(f64::MIN, f64::max);
/// assert!(top <= c.upper);
/// assert_eq!(c.gap, c.upper - c.recommendation.lcb);
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
pub fn certify_box<B>(
    bound: &B,
    domain: &BoxDomain,
    options: &BoxCertifyOptions,
) -> Result<BoxCertificate>
where
    B: ConfidenceBound + ?Sized,
{
    options.check()?;
    let d = domain.dim();
    match bound.dim() {
        None => {
            return Err(Error::InvalidParameter {
                name: "bound",
                value: 0.0,
                expected: "at least one observation",
            });
        }
        Some(dim) if dim != d => {
            return Err(Error::DimensionMismatch {
                expected: dim,
                got: d,
            });
        }
        Some(_) => {}
    }
    let regularity = bound.ucb_regularity()?;
    let kernel = regularity.kernel;
    kernel.check_dim(d)?;
    let kr = kernel.regularity().ok_or_else(|| Error::Unsupported {
        what: format!(
            "a proven bound over a box for the kernel {kernel:?} (only s²κ(‖(x − y)/ℓ‖) with a \
             nonincreasing κ: RBF, Matérn, their output scale and fitted length-scales)"
        ),
    })?;
    let lengthscales: Vec<f64> = match kr.lengthscales.len() {
        1 => vec![kr.lengthscales[0]; d],
        n if n == d => kr.lengthscales.clone(),
        n => {
            return Err(Error::DimensionMismatch {
                expected: n,
                got: d,
            });
        }
    };
    if let Some(what) = bound.diagnostics().describe() {
        return Err(Error::Refuted { what });
    }
    let observations = bound.observations()?;
    let t = observations.len();
    let inside: Vec<usize> = (0..t)
        .filter(|&i| domain.contains(observations.input(i)))
        .collect();
    let mut rows = Vec::with_capacity(inside.len() * d);
    for &i in &inside {
        rows.extend_from_slice(observations.input(i));
    }
    let observed_bounds = if inside.is_empty() {
        None
    } else {
        let points = Points::from_row_major(&rows, d)?;
        let checked = bound.evaluate_checked(&points)?;
        Some(refuse_refuted(&checked)?.clone())
    };

    let model = Model::new(
        bound,
        kernel,
        &kr,
        regularity.shape,
        &lengthscales,
        t,
        options,
    );
    let mut search = Search {
        model: &model,
        options,
        best: f64::NEG_INFINITY,
        best_point: domain.lo().to_vec(),
        boxes: 0,
        refinements_left: options.refinements,
        refined_at: f64::NEG_INFINITY,
        domain,
    };
    // The observed points inside the box seed the best value found.
    if let Some(b) = &observed_bounds {
        for (j, &u) in b.ucb.iter().enumerate() {
            if u > search.best {
                search.best = u;
                search.best_point = rows[j * d..(j + 1) * d].to_vec();
            }
        }
    }
    let started = Instant::now();
    let root = model.bound_boxes(
        vec![(domain.lo().to_vec(), domain.hi().to_vec())],
        search.best,
    )?;
    search.boxes += root.len();
    let mut heap = BinaryHeap::new();
    let mut serial = 0u64;
    for node in root {
        search.offer(&node);
        heap.push(Ranked(node, serial));
        serial += 1;
    }
    search.refine_best()?;
    let mut unsplittable = f64::NEG_INFINITY;
    const BATCH: usize = 32;
    while let Some(Ranked(top, _)) = heap.peek() {
        if top.upper - search.best <= options.tolerance {
            break;
        }
        if search.boxes >= options.max_boxes
            || options
                .max_time
                .is_some_and(|limit| started.elapsed() >= limit)
        {
            break;
        }
        let room = options.max_boxes - search.boxes;
        let mut halves = Vec::new();
        while halves.len() + 2 <= room.max(2) && halves.len() < 2 * BATCH {
            let Some(Ranked(node, _)) = heap.peek() else {
                break;
            };
            if node.upper - search.best <= options.tolerance {
                break;
            }
            let Some(Ranked(node, _)) = heap.pop() else {
                break;
            };
            match split(&node.lo, &node.hi, &lengthscales) {
                Some((a, b)) => {
                    halves.push(a);
                    halves.push(b);
                }
                None => unsplittable = unsplittable.max(node.upper),
            }
        }
        if halves.is_empty() {
            continue;
        }
        let before = search.best;
        let bounded = model.bound_boxes(halves, search.best)?;
        search.boxes += bounded.len();
        for node in &bounded {
            search.offer(node);
        }
        for node in bounded {
            if node.upper > search.best {
                heap.push(Ranked(node, serial));
                serial += 1;
            }
        }
        if search.best > before + 0.25 * options.tolerance {
            search.refine_best()?;
        }
    }
    let queued = heap
        .peek()
        .map_or(f64::NEG_INFINITY, |Ranked(n, _)| n.upper);
    let upper = queued.max(unsplittable).max(search.best);
    let recommendation = recommend(bound, domain, &observed_bounds, &inside, &rows, t, &search)?;
    let reached = upper - search.best;
    Ok(BoxCertificate {
        gap: upper - recommendation.lcb,
        recommendation,
        upper,
        best_found: search.best,
        best_point: search.best_point,
        tolerance: reached,
        converged: reached <= options.tolerance,
        boxes: search.boxes,
        second_order: model.second_order(),
        observations: t,
    })
}

/// A bounded sub-box.
#[derive(Debug, Clone)]
struct Node {
    lo: Vec<f64>,
    hi: Vec<f64>,
    centre: Vec<f64>,
    /// UCB at the centre.
    value: f64,
    /// The proven bound on the UCB over the sub-box.
    upper: f64,
}

/// Max-heap order on the bound; among equal bounds the earlier node first (deterministic).
struct Ranked(Node, u64);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .upper
            .total_cmp(&other.0.upper)
            .then(other.1.cmp(&self.1))
    }
}

/// The two halves of a box across its longest side in length-scale units; `None` when that
/// side cannot be halved in floating point.
type Halves = ((Vec<f64>, Vec<f64>), (Vec<f64>, Vec<f64>));

fn split(lo: &[f64], hi: &[f64], lengthscales: &[f64]) -> Option<Halves> {
    let mut j = 0;
    let mut widest = -1.0;
    for i in 0..lo.len() {
        let w = (hi[i] - lo[i]) / lengthscales[i];
        if w > widest {
            widest = w;
            j = i;
        }
    }
    let mid = 0.5 * (lo[j] + hi[j]);
    if !(mid > lo[j] && mid < hi[j]) {
        return None;
    }
    let (mut left_hi, mut right_lo) = (hi.to_vec(), lo.to_vec());
    left_hi[j] = mid;
    right_lo[j] = mid;
    Some(((lo.to_vec(), left_hi), (right_lo, hi.to_vec())))
}

/// The sub-box bounds of one bound on one kernel.
struct Model<'a, B: ?Sized> {
    bound: &'a B,
    kernel: &'a dyn Kernel,
    shape: UcbShape,
    /// s².
    variance: f64,
    /// κ2 of the unit profile.
    profile_curvature: Option<f64>,
    /// k2 = s²κ2/ℓ_min², k4 = s²κ4/ℓ_min⁴ when the second order applies.
    second: Option<(f64, f64)>,
    lengthscales: &'a [f64],
    observations: usize,
}

impl<'a, B: ConfidenceBound + ?Sized> Model<'a, B> {
    fn new(
        bound: &'a B,
        kernel: &'a dyn Kernel,
        kr: &KernelRegularity,
        shape: UcbShape,
        lengthscales: &'a [f64],
        observations: usize,
        options: &BoxCertifyOptions,
    ) -> Self {
        let second = match (&shape, options.order, kr.curvature(), kr.fourth()) {
            (UcbShape::Terms(_), BoxOrder::Best, Some(k2), Some(k4))
                if k2.is_finite() && k4.is_finite() =>
            {
                Some((k2, k4))
            }
            _ => None,
        };
        Self {
            bound,
            kernel,
            shape,
            variance: kr.variance,
            profile_curvature: kr.profile_curvature,
            second,
            lengthscales,
            observations,
        }
    }

    fn second_order(&self) -> bool {
        self.second.is_some()
    }

    /// D = sup over the box of d_k(centre, x), from the half-widths (see the module docs).
    fn feature_radius(&self, centre: &[f64], half: &[f64]) -> f64 {
        let corner: Vec<f64> = centre.iter().zip(half).map(|(c, h)| c + h).collect();
        let s2 = self.variance;
        let by_value = 2.0 * (s2 - self.kernel.eval(centre, &corner)) + 1e-12 * s2;
        let mut d2 = by_value.clamp(0.0, 2.0 * s2 + 1e-12 * s2);
        if let Some(k2) = self.profile_curvature {
            let scaled: f64 = half
                .iter()
                .zip(self.lengthscales)
                .map(|(h, l)| (h / l) * (h / l))
                .sum();
            d2 = d2.min(s2 * k2 * scaled);
        }
        d2.max(0.0).sqrt()
    }

    /// Evaluates the centres of the boxes and bounds each box; `best` is the best UCB found
    /// so far (the second-order bound is only computed where the first is above it).
    fn bound_boxes(&self, boxes: Vec<(Vec<f64>, Vec<f64>)>, best: f64) -> Result<Vec<Node>> {
        let centres: Vec<Vec<f64>> = boxes
            .iter()
            .map(|(lo, hi)| {
                lo.iter()
                    .zip(hi)
                    .map(|(l, h)| (0.5 * (l + h)).clamp(*l, *h))
                    .collect()
            })
            .collect();
        let mut out = Vec::with_capacity(boxes.len());
        match &self.shape {
            UcbShape::Terms(terms) => {
                let refs: Vec<&[f64]> = centres.iter().map(Vec::as_slice).collect();
                let values = self.bound.ucb_term_values_at(&refs);
                for (((lo, hi), centre), values) in boxes.into_iter().zip(centres).zip(values) {
                    let values = values?;
                    let half = half_widths(&lo, &hi, &centre);
                    let radius = self.feature_radius(&centre, &half);
                    let (value, upper) =
                        self.terms_bound(terms, &values, &centre, &half, radius, best)?;
                    out.push(Node {
                        lo,
                        hi,
                        centre,
                        value,
                        upper,
                    });
                }
            }
            UcbShape::Primal { norm_bound } => {
                let mut rows = Vec::with_capacity(centres.len() * self.lengthscales.len());
                for c in &centres {
                    rows.extend_from_slice(c);
                }
                let points = Points::from_row_major(&rows, self.lengthscales.len())?;
                let ucb = self.bound.evaluate(&points)?.ucb;
                for (((lo, hi), centre), value) in boxes.into_iter().zip(centres).zip(ucb) {
                    finite_value(value)?;
                    let half = half_widths(&lo, &hi, &centre);
                    let radius = self.feature_radius(&centre, &half);
                    let slope = norm_bound * self.variance.sqrt();
                    let upper = value + norm_bound * radius + 1e-9 * (value.abs() + slope);
                    out.push(Node {
                        lo,
                        hi,
                        centre,
                        value,
                        upper,
                    });
                }
            }
        }
        Ok(out)
    }

    /// (U(c), bound over the box) for a UCB of terms.
    fn terms_bound(
        &self,
        terms: &[UcbTerm],
        values: &[f64],
        centre: &[f64],
        half: &[f64],
        radius: f64,
        best: f64,
    ) -> Result<(f64, f64)> {
        if values.len() != terms.len() {
            return Err(Error::LengthMismatch {
                what: "UCB terms",
                expected: terms.len(),
                got: values.len(),
            });
        }
        let s = self.variance.sqrt();
        let mut value = f64::INFINITY;
        let mut active = 0;
        let mut upper = f64::INFINITY;
        for (r, (term, &v)) in terms.iter().zip(values).enumerate() {
            finite_value(v)?;
            if v < value {
                value = v;
                active = r;
            }
            let slope = term.mean_norm + term.width;
            let first = v + slope * radius + 1e-9 * (v.abs() + slope * s);
            upper = upper.min(first);
        }
        if let Some((k2, k4)) = self.second
            && upper > best
        {
            let term = terms[active];
            let detail = self.bound.ucb_term_detail(centre, active)?;
            if detail.spread >= 1e-3 * s && detail.value.is_finite() {
                let a = term.regulariser;
                let floor =
                    (a * self.variance / (self.observations as f64 * self.variance + a)).sqrt();
                let rho_min = (detail.spread - radius).max(floor);
                let (sk4, theta, w) = (k4.sqrt(), term.mean_norm, term.width);
                let hessian = theta * sk4 + w * (sk4 + k2 / rho_min);
                let linear: f64 = detail
                    .gradient
                    .iter()
                    .zip(half)
                    .map(|(g, h)| g.abs() * h)
                    .sum();
                let h2: f64 = half.iter().map(|h| h * h).sum();
                let second = detail.value
                    + linear
                    + 0.5 * hessian * h2
                    + 1e-9 * (detail.value.abs() + (theta + w) * s + linear);
                if second.is_finite() {
                    upper = upper.min(second);
                }
            }
        }
        Ok((value, upper))
    }
}

fn half_widths(lo: &[f64], hi: &[f64], centre: &[f64]) -> Vec<f64> {
    lo.iter()
        .zip(hi)
        .zip(centre)
        .map(|((l, h), c)| (h - c).max(c - l))
        .collect()
}

fn finite_value(v: f64) -> Result<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Error::NonFinite {
            what: "UCB at the centre of a sub-box".into(),
        })
    }
}

/// The best UCB found and the local refinements.
struct Search<'m, 'a, B: ?Sized> {
    model: &'m Model<'a, B>,
    options: &'m BoxCertifyOptions,
    best: f64,
    best_point: Vec<f64>,
    boxes: usize,
    refinements_left: usize,
    /// The best value when the last refinement started.
    refined_at: f64,
    domain: &'m BoxDomain,
}

impl<B: ConfidenceBound + ?Sized> Search<'_, '_, B> {
    fn offer(&mut self, node: &Node) {
        if node.value > self.best {
            self.best = node.value;
            self.best_point.clone_from(&node.centre);
        }
    }

    /// A local maximisation of the UCB from the best point found (skipped for a bound or
    /// kernel without gradients: the bound stays proven, only the search is slower).
    fn refine_best(&mut self) -> Result<()> {
        if self.refinements_left == 0 || self.best <= self.refined_at {
            return Ok(());
        }
        self.refinements_left -= 1;
        self.refined_at = self.best;
        let bound = self.model.bound;
        let mut f = |x: &[f64]| bound.ucb_gradient(x);
        let options = RefineOptions {
            tolerance: 1e-9,
            max_iterations: 60,
            ..RefineOptions::default()
        };
        match refine(self.domain, &self.best_point, &mut f, &options) {
            Ok(found) => {
                if found.value > self.best && self.domain.contains(&found.point) {
                    self.best = found.value;
                    self.best_point = found.point;
                }
                self.refined_at = self.best;
                Ok(())
            }
            Err(Error::Unsupported { .. }) => {
                self.refinements_left = 0;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// The point with the largest LCB found: the observed points inside the box, then a local
/// maximisation of the LCB from the best of them (or from the best UCB point if none).
fn recommend<B: ConfidenceBound + ?Sized, M: ?Sized>(
    bound: &B,
    domain: &BoxDomain,
    observed: &Option<crate::bound::Bounds>,
    inside: &[usize],
    rows: &[f64],
    t: usize,
    search: &Search<'_, '_, M>,
) -> Result<Recommendation> {
    let d = domain.dim();
    let mut best: Option<Recommendation> = None;
    if let Some(b) = observed {
        for (j, &i) in inside.iter().enumerate() {
            if best.as_ref().is_none_or(|r| b.lcb[j] > r.lcb) {
                best = Some(Recommendation {
                    x: rows[j * d..(j + 1) * d].to_vec(),
                    index: i,
                    lcb: b.lcb[j],
                    mean: b.mean[j],
                    ucb: b.ucb[j],
                });
            }
        }
    }
    let start = best
        .as_ref()
        .map_or_else(|| search.best_point.clone(), |r| r.x.clone());
    let mut f = |x: &[f64]| bound.gradient(x).map(|g| (g.lcb, g.lcb_gradient));
    let options = RefineOptions {
        tolerance: 1e-9,
        max_iterations: 60,
        ..RefineOptions::default()
    };
    if search.options.refinements > 0 {
        match refine(domain, &start, &mut f, &options) {
            Ok(found) => {
                if best.as_ref().is_none_or(|r| found.value > r.lcb)
                    && domain.contains(&found.point)
                {
                    // The values as `evaluate` computes them, which a user would check.
                    let points = Points::from_row_major(&found.point, d)?;
                    let checked = bound.evaluate_checked(&points)?;
                    let b = refuse_refuted(&checked)?;
                    if best.as_ref().is_none_or(|r| b.lcb[0] > r.lcb) {
                        best = Some(Recommendation {
                            x: found.point,
                            index: t,
                            lcb: b.lcb[0],
                            mean: b.mean[0],
                            ucb: b.ucb[0],
                        });
                    }
                }
            }
            Err(Error::Unsupported { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    match best {
        Some(r) => Ok(r),
        None => {
            let points = Points::from_row_major(&start, d)?;
            let checked = bound.evaluate_checked(&points)?;
            let b = refuse_refuted(&checked)?;
            Ok(Recommendation {
                x: start,
                index: t,
                lcb: b.lcb[0],
                mean: b.mean[0],
                ucb: b.ucb[0],
            })
        }
    }
}
