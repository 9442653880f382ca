//! The proven bound on sup UCB over a box (`kernel_bandits::decide::certify_box`).
//!
//! Reference: brute force — the largest UCB of `bounds` (the bound's own `evaluate`, not the
//! branch and bound) over a dense grid or many uniform points of the box; the bound must
//! never be below it. Structured and adversarial cases: narrow peaks (ℓ = 10⁻³), observed
//! points on faces and corners and duplicated, tiny noise, d = 1 … 6, a box reduced to a
//! point (where the bound is the UCB there), and bad input (which must change nothing).

use kernel_bandits::Error;
use kernel_bandits::bound::AnyBound;
use kernel_bandits::continuous::BoxDomain;
use kernel_bandits::decide::{BoxCertificate, BoxCertifyOptions, BoxOrder, certify_box};
use kernel_bandits::kernel::KernelExt;
use kernel_bandits::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// Uniform points in the box, row-major as Vec<Vec<f64>>.
fn uniform(domain: &BoxDomain, n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (0..domain.dim())
                .map(|i| {
                    let (l, h) = (domain.lo()[i], domain.hi()[i]);
                    l + rng.random::<f64>() * (h - l)
                })
                .collect()
        })
        .collect()
}

/// The full tensor grid with `per_side` points per coordinate (ends included).
fn grid(domain: &BoxDomain, per_side: usize) -> Vec<Vec<f64>> {
    let d = domain.dim();
    let mut out = Vec::new();
    let mut index = vec![0usize; d];
    loop {
        out.push(
            (0..d)
                .map(|i| {
                    let (l, h) = (domain.lo()[i], domain.hi()[i]);
                    l + (h - l) * index[i] as f64 / (per_side - 1) as f64
                })
                .collect(),
        );
        let mut k = 0;
        loop {
            if k == d {
                return out;
            }
            index[k] += 1;
            if index[k] < per_side {
                break;
            }
            index[k] = 0;
            k += 1;
        }
    }
}

/// The largest UCB over `points`, by the bound's `evaluate` in chunks.
fn dense_max<B: ConfidenceBound>(bound: &B, points: &[Vec<f64>]) -> f64 {
    points
        .chunks(4096)
        .map(|chunk| {
            bound
                .bounds(&chunk.to_vec())
                .unwrap()
                .ucb
                .into_iter()
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

/// f(x) = Σ_j c_j k(z_j, x), a function of known RKHS norm's order, sampled with noise.
fn observe_random<B: ConfidenceBound>(
    bound: &mut B,
    kernel: &impl Kernel,
    domain: &BoxDomain,
    t: usize,
    sigma: f64,
    seed: u64,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let centres = uniform(domain, 3, seed + 1000);
    let weights = [1.0, -0.7, 0.5];
    for x in uniform(domain, t, seed) {
        let f: f64 = centres
            .iter()
            .zip(weights)
            .map(|(z, w)| w * kernel.eval(z, &x))
            .sum();
        let noise: f64 = rng.sample(rand_distr::StandardNormal);
        bound.observe(&x, f + sigma * noise).unwrap();
    }
}

/// Checks the certificate against the dense reference; returns the margin upper − dense max.
fn check<B: ConfidenceBound>(
    what: &str,
    bound: &B,
    domain: &BoxDomain,
    points: &[Vec<f64>],
    options: &BoxCertifyOptions,
) -> (BoxCertificate, f64) {
    let c = certify_box(bound, domain, options).unwrap();
    let top = dense_max(bound, points);
    assert!(
        c.upper >= top,
        "{what}: the proven bound {} is below the dense maximum {top} (by {:e}; {} boxes)",
        c.upper,
        top - c.upper,
        c.boxes
    );
    assert!(
        c.best_found <= c.upper,
        "{what}: best found above the bound"
    );
    assert!(domain.contains(&c.best_point), "{what}: best point outside");
    assert!(domain.contains(&c.recommendation.x), "{what}: x̂ outside");
    assert_eq!(c.gap, c.upper - c.recommendation.lcb, "{what}: gap");
    assert_eq!(c.tolerance, c.upper - c.best_found, "{what}: tolerance");
    assert_eq!(c.converged, c.tolerance <= options.tolerance, "{what}");
    // The best value found is a UCB value at a point of the box: never above the supremum,
    // and the dense maximum is at most the bound. So best_found − tolerance ≤ top ≤ upper.
    assert!(c.best_found - 1e-9 * c.best_found.abs().max(1.0) <= top.max(c.best_found));
    let margin = c.upper - top;
    (c, margin)
}

fn params(sigma: f64, b: f64) -> BoundParams {
    BoundParams::new().sigma(sigma).norm_bound(b).delta(0.01)
}

fn options(tolerance: f64) -> BoxCertifyOptions {
    BoxCertifyOptions {
        tolerance,
        ..BoxCertifyOptions::default()
    }
}

/// DMM, AMM, CMM, AY, IGP on RBF and Matérn 5/2 (second order) and Matérn 3/2, 1/2 (first
/// order), d = 1 … 3: never below a dense grid.
#[test]
fn never_below_a_dense_grid_low_dimension() {
    let sizes = [(1, 2001), (2, 81), (3, 21)];
    for (d, per_side) in sizes {
        let domain = BoxDomain::unit(d).unwrap();
        let points = grid(&domain, per_side);
        for (k, nu) in [(0, 0.0), (1, 2.5), (2, 1.5), (3, 0.5)] {
            let lengthscale = 0.25;
            let p = params(0.1, 2.0).horizon(100);
            macro_rules! run {
                ($kernel:expr) => {{
                    let kernel = $kernel;
                    let bounds: Vec<(&str, AnyBound<_>)> = vec![
                        ("dmm", AnyBound::Dmm(Dmm::new(kernel, p).unwrap())),
                        ("amm", AnyBound::Amm(Amm::new(kernel, p).unwrap())),
                        ("cmm", AnyBound::Cmm(Cmm::new(kernel, p).unwrap())),
                        ("ay", AnyBound::Ay(Ay::new(kernel, p.lambda(0.01)).unwrap())),
                        ("igp", AnyBound::Igp(Igp::new(kernel, p).unwrap())),
                    ];
                    for (name, mut bound) in bounds {
                        observe_random(&mut bound, &kernel, &domain, 6 * d + 4, 0.1, 7 + d as u64);
                        let what = format!("{name} d={d} kernel={k}");
                        // Matérn 1/2: d_k(c, x) ~ √(2‖x − c‖/ℓ), so the first-order bound needs
                        // sub-boxes of side ~ℓ(tol/L)²: affordable in d = 1 only.
                        // The first-order bound alone (CMM-UCB, Matérn 3/2) in d = 3: within a
                        // budget.
                        let first_only =
                            (nu == 0.5 && d > 1) || (d > 2 && (name == "cmm" || nu == 1.5));
                        let opts = if first_only {
                            BoxCertifyOptions {
                                max_boxes: 20_000,
                                ..options(0.02)
                            }
                        } else {
                            options(0.02)
                        };
                        let (c, margin) = check(&what, &bound, &domain, &points, &opts);
                        assert!(c.converged || first_only, "{what}: {c:?}");
                        assert!(margin >= 0.0);
                    }
                }};
            }
            if k == 0 {
                run!(Rbf::new(lengthscale).unwrap());
            } else {
                run!(Matern::new(nu, lengthscale).unwrap());
            }
        }
    }
}

/// d = 4 … 6, uniform points (fewer boxes are affordable in a debug build: a looser
/// tolerance; the bound must hold whatever the tolerance).
#[test]
fn never_below_uniform_points_high_dimension() {
    for d in 4..=6 {
        let domain = BoxDomain::unit(d).unwrap();
        let points = uniform(&domain, 20_000, 3);
        let kernel = Matern::new(2.5, 0.5).unwrap();
        let p = params(0.1, 1.0);
        let mut dmm = Dmm::new(kernel, p).unwrap();
        observe_random(&mut dmm, &kernel, &domain, 20, 0.1, d as u64);
        let mut cmm = Cmm::new(kernel, p).unwrap();
        observe_random(&mut cmm, &kernel, &domain, 20, 0.1, d as u64);
        let opts = BoxCertifyOptions {
            tolerance: 0.1,
            max_boxes: 4000,
            ..BoxCertifyOptions::default()
        };
        check(&format!("dmm d={d}"), &dmm, &domain, &points, &opts);
        check(&format!("cmm d={d}"), &cmm, &domain, &points, &opts);
    }
}

/// A narrow peak: ℓ = 10⁻³ in d = 1, a large observation, and the dense grid refined around
/// it (a spacing of 10⁻⁶ near the observation).
#[test]
fn narrow_peak_short_lengthscale() {
    let domain = BoxDomain::unit(1).unwrap();
    let kernel = Rbf::new(1e-3).unwrap();
    let mut points: Vec<Vec<f64>> = (0..=20_000).map(|i| vec![i as f64 / 20_000.0]).collect();
    let observed = [0.3131, 0.7, 0.7005, 0.0, 1.0];
    for &x in &observed {
        for i in -2000..=2000 {
            let v = x + i as f64 * 1e-6;
            if (0.0..=1.0).contains(&v) {
                points.push(vec![v]);
            }
        }
    }
    // f = Σ cⱼ k(xⱼ, ·), observed exactly; ‖f‖² = cᵀKc ≈ 16 + 9 + 12.25 − 2·3·3.5·0.88 + 2.
    let c = [4.0, -3.0, 3.5, 1.0, -1.0];
    let f = |x: f64| -> f64 {
        observed
            .iter()
            .zip(c)
            .map(|(z, cj)| cj * kernel.eval(&[*z], &[x]))
            .sum()
    };
    let ys: Vec<f64> = observed.iter().map(|&x| f(x)).collect();
    for order in [BoxOrder::First, BoxOrder::Best] {
        let mut dmm = Dmm::new(kernel, params(0.01, 6.0)).unwrap();
        let mut cmm = Cmm::new(kernel, params(0.01, 6.0)).unwrap();
        for (x, &y) in observed.iter().zip(&ys) {
            dmm.observe(&[*x], y).unwrap();
            cmm.observe(&[*x], y).unwrap();
        }
        let opts = BoxCertifyOptions {
            tolerance: 1e-3,
            order,
            ..BoxCertifyOptions::default()
        };
        let (c, _) = check(&format!("dmm {order:?}"), &dmm, &domain, &points, &opts);
        assert!(c.converged, "{c:?}");
        let (c, _) = check(&format!("cmm {order:?}"), &cmm, &domain, &points, &opts);
        assert!(c.converged, "{c:?}");
    }
}

/// Observations on the faces and corners of the box, duplicated, with tiny noise
/// (σ = 10⁻⁴), d = 2; and a box whose data lie partly outside it.
#[test]
fn faces_corners_duplicates_tiny_noise() {
    let domain = BoxDomain::new(&[-1.0, 0.0], &[1.0, 0.5]).unwrap();
    let points = grid(&domain, 201);
    let inputs = [
        [-1.0, 0.0],
        [1.0, 0.5],
        [-1.0, 0.5],
        [1.0, 0.0],
        [0.0, 0.5],
        [0.0, 0.5],
        [1.0, 0.25],
        [0.3, 0.2],
        [2.0, 2.0], // outside the box
    ];
    for kernel in [
        Matern::new(2.5, 0.4).unwrap(),
        Matern::new(0.5, 0.4).unwrap(),
    ] {
        // f = k((0.9, 0.5), ·) − 0.5 k((−1, 0), ·), ‖f‖ ≤ 1.5 ≤ B, observed exactly (the
        // duplicates agree), σ = 10⁻⁴.
        let f = |x: &[f64]| kernel.eval(&[0.9, 0.5], x) - 0.5 * kernel.eval(&[-1.0, 0.0], x);
        let ys: Vec<f64> = inputs.iter().map(|x| f(x)).collect();
        let p = params(1e-4, 2.0);
        let mut dmm = Dmm::new(kernel, p).unwrap();
        let mut amm = Amm::new(kernel, p).unwrap();
        let mut cmm = Cmm::new(kernel, p).unwrap();
        for (x, &y) in inputs.iter().zip(&ys) {
            dmm.observe(x, y).unwrap();
            amm.observe(x, y).unwrap();
            cmm.observe(x, y).unwrap();
        }
        let what = format!("nu={}", kernel.nu());
        let (c, _) = check(
            &format!("dmm {what}"),
            &dmm,
            &domain,
            &points,
            &options(0.01),
        );
        // x̂'s LCB is at least every observed point's inside the box (the one outside, x = (2, 2),
        // is not a candidate).
        let lcb = dmm.bounds(&inputs[..8]).unwrap().lcb;
        let top_lcb = lcb.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert!(c.recommendation.lcb >= top_lcb, "{c:?} vs {top_lcb}");
        check(
            &format!("amm {what}"),
            &amm,
            &domain,
            &points,
            &options(0.01),
        );
        check(
            &format!("cmm {what}"),
            &cmm,
            &domain,
            &points,
            &options(0.01),
        );
    }
}

/// An output scale, fitted per-coordinate length-scales (ARD) and a box reduced to a point.
#[test]
fn scaled_and_per_coordinate_kernels_and_a_point_box() {
    use kernel_bandits::hyper::{FittedKernel, KernelFamily};
    let domain = BoxDomain::unit(2).unwrap();
    let points = grid(&domain, 121);
    let scaled = Rbf::new(0.3).unwrap().scaled(4.0).unwrap();
    let mut dmm = Dmm::new(scaled, params(0.1, 3.0)).unwrap();
    observe_random(&mut dmm, &scaled, &domain, 15, 0.1, 5);
    check("scaled rbf", &dmm, &domain, &points, &options(0.01));

    let ard =
        FittedKernel::per_dimension(KernelFamily::Matern { nu: 2.5 }, &[0.2, 1.5], 2.0).unwrap();
    let mut ard_dmm = Dmm::new(ard.clone(), params(0.1, 3.0)).unwrap();
    observe_random(&mut ard_dmm, &ard, &domain, 15, 0.1, 6);
    check("ard matern", &ard_dmm, &domain, &points, &options(0.01));

    // A degenerate box: the supremum is the UCB at its one point.
    let point = BoxDomain::new(&[0.3, 0.7], &[0.3, 0.7]).unwrap();
    let c = certify_box(&dmm, &point, &options(0.0)).unwrap();
    let u = dmm.bounds(&[[0.3, 0.7]]).unwrap().ucb[0];
    assert!(
        c.upper >= u && c.upper - u <= 1e-8 * u.abs().max(1.0),
        "{c:?} vs {u}"
    );
}

/// The second order pays: fewer boxes than the first order alone at the same tolerance, and
/// both proven.
#[test]
fn second_order_needs_fewer_boxes() {
    let domain = BoxDomain::unit(2).unwrap();
    let points = grid(&domain, 101);
    let kernel = Rbf::new(0.2).unwrap();
    let mut dmm = Dmm::new(kernel, params(0.1, 2.0)).unwrap();
    observe_random(&mut dmm, &kernel, &domain, 30, 0.1, 11);
    let first = BoxCertifyOptions {
        tolerance: 0.005,
        order: BoxOrder::First,
        ..BoxCertifyOptions::default()
    };
    let best = BoxCertifyOptions {
        order: BoxOrder::Best,
        ..first
    };
    let (a, _) = check("first", &dmm, &domain, &points, &first);
    let (b, _) = check("best", &dmm, &domain, &points, &best);
    assert!(a.converged && b.converged);
    assert!(!a.second_order && b.second_order);
    assert!(
        2 * b.boxes < a.boxes,
        "second order {} boxes, first order {}",
        b.boxes,
        a.boxes
    );
}

/// A budget stops the search with an honest result: the bound still holds, and the
/// tolerance reached is reported.
#[test]
fn budget_gives_a_proven_bound() {
    let domain = BoxDomain::unit(3).unwrap();
    let points = uniform(&domain, 30_000, 8);
    let kernel = Matern::new(2.5, 0.2).unwrap();
    let mut dmm = Dmm::new(kernel, params(0.1, 2.0)).unwrap();
    observe_random(&mut dmm, &kernel, &domain, 25, 0.1, 13);
    let opts = BoxCertifyOptions {
        tolerance: 1e-6,
        max_boxes: 50,
        ..BoxCertifyOptions::default()
    };
    let (c, _) = check("budget", &dmm, &domain, &points, &opts);
    assert!(!c.converged && c.tolerance > 1e-6 && c.boxes <= 52, "{c:?}");
}

/// Bad input is refused with a typed error, and nothing changes.
#[test]
fn bad_input_is_refused_and_changes_nothing() {
    assert!(BoxDomain::new(&[0.0, f64::NAN], &[1.0, 1.0]).is_err());
    assert!(BoxDomain::new(&[0.0, 1.0], &[1.0, 0.5]).is_err());
    let domain = BoxDomain::unit(2).unwrap();
    let kernel = Rbf::new(0.3).unwrap();
    let mut dmm = Dmm::new(kernel, params(0.1, 2.0)).unwrap();
    // No observation: the dimension is unknown.
    assert!(matches!(
        certify_box(&dmm, &domain, &BoxCertifyOptions::default()),
        Err(Error::InvalidParameter { name: "bound", .. })
    ));
    observe_random(&mut dmm, &kernel, &domain, 5, 0.1, 1);
    let probe = [[0.2, 0.4], [0.9, 0.9]];
    let before = (dmm.len(), dmm.bounds(&probe).unwrap());
    assert!(matches!(
        certify_box(
            &dmm,
            &BoxDomain::unit(3).unwrap(),
            &BoxCertifyOptions::default()
        ),
        Err(Error::DimensionMismatch { .. })
    ));
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        assert!(matches!(
            certify_box(&dmm, &domain, &options(bad)),
            Err(Error::InvalidParameter {
                name: "tolerance",
                ..
            })
        ));
    }
    let zero = BoxCertifyOptions {
        max_boxes: 0,
        ..BoxCertifyOptions::default()
    };
    assert!(certify_box(&dmm, &domain, &zero).is_err());
    assert_eq!((dmm.len(), dmm.bounds(&probe).unwrap()), before);
    // Kernels and bounds the derivation does not cover: an error, not a number.
    let sum = Rbf::new(0.3).unwrap().plus(Rbf::new(0.1).unwrap());
    let mut summed = Dmm::new(sum, params(0.1, 2.0)).unwrap();
    summed.observe(&[0.5, 0.5], 1.0).unwrap();
    assert!(matches!(
        certify_box(&summed, &domain, &BoxCertifyOptions::default()),
        Err(Error::Unsupported { .. })
    ));
    let sketch = SketchParams::new().lambda(1.0).beta(1.0).qbar(2.0);
    let mut bkb = Bkb::new(kernel, sketch, 3).unwrap();
    bkb.observe(&[0.5, 0.5], 1.0).unwrap();
    assert!(matches!(
        certify_box(&bkb, &domain, &BoxCertifyOptions::default()),
        Err(Error::Unsupported { .. })
    ));
    // Data that refute the assumptions: nothing is certified.
    let mut refuted = Dmm::new(kernel, params(1e-4, 0.1)).unwrap();
    for (x, y) in [([0.2, 0.2], 5.0), ([0.8, 0.8], -5.0)] {
        refuted.observe(&x, y).unwrap();
    }
    assert!(refuted.diagnostics().describe().is_some());
    let result = certify_box(&refuted, &domain, &BoxCertifyOptions::default());
    assert!(matches!(result, Err(Error::Refuted { .. })), "{result:?}");
}

/// 10⁶ uniform points in [0, 1]³ (release: `cargo test --release --all-features --test
/// integration -- box_certificate --ignored --nocapture`), the problem of Flynn & Reeb
/// (2024 §7) at t = 200: prints the margins.
#[test]
#[ignore]
fn million_uniform_points_d3() {
    let domain = BoxDomain::unit(3).unwrap();
    let points = uniform(&domain, 1_000_000, 99);
    for (name, nu) in [("rbf", 0.0), ("matern52", 2.5)] {
        let p = params(0.1, 10.0).horizon(200);
        macro_rules! run {
            ($kernel:expr) => {{
                let kernel = $kernel;
                let bounds: Vec<(&str, AnyBound<_>)> = vec![
                    ("cmm", AnyBound::Cmm(Cmm::new(kernel, p).unwrap())),
                    ("dmm", AnyBound::Dmm(Dmm::new(kernel, p).unwrap())),
                    ("amm", AnyBound::Amm(Amm::new(kernel, p).unwrap())),
                    ("ay", AnyBound::Ay(Ay::new(kernel, p.lambda(0.01)).unwrap())),
                    ("igp", AnyBound::Igp(Igp::new(kernel, p).unwrap())),
                ];
                for (bname, mut bound) in bounds {
                    observe_random(&mut bound, &kernel, &domain, 200, 0.1, 21);
                    let start = std::time::Instant::now();
                    let (c, margin) =
                        check(&format!("{name} {bname}"), &bound, &domain, &points, &options(0.05));
                    println!(
                        "{name} {bname}: upper {:.4} best {:.4} margin over 1e6 points {margin:.3e} \
                         tolerance {:.3e} boxes {} ({:?} incl. dense check)",
                        c.upper,
                        c.best_found,
                        c.tolerance,
                        c.boxes,
                        start.elapsed()
                    );
                }
            }};
        }
        if nu == 0.0 {
            run!(Rbf::new(0.2).unwrap());
        } else {
            run!(Matern::new(nu, 0.2).unwrap());
        }
    }
}

/// κ2 and κ4 of `Kernel::regularity` against finite differences of `Kernel::eval` along the
/// coordinate of the shortest length-scale: −∂²ₛ k(x, x + s e) and ∂⁴ₛ k(x, x + s e) at s = 0
/// (central differences with step h = ℓ/100; Matérn ν ≤ 5/2 has an |s|^{2ν} term, so the
/// fourth difference is O(h) off: 5% relative).
#[test]
fn kernel_constants_match_finite_differences() {
    use kernel_bandits::hyper::{FittedKernel, KernelFamily};
    fn check_kernel(what: &str, kernel: &dyn Kernel, dim: usize, axis: usize, l: f64) {
        let r = kernel.regularity().unwrap();
        let x = vec![0.3; dim];
        let k = |s: f64| {
            let mut y = x.clone();
            y[axis] += s;
            kernel.eval(&x, &y)
        };
        let h = l / 100.0;
        let k2 = -(k(h) - 2.0 * k(0.0) + k(-h)) / (h * h);
        let k4 = (k(2.0 * h) - 4.0 * k(h) + 6.0 * k(0.0) - 4.0 * k(-h) + k(-2.0 * h)) / h.powi(4);
        let (c2, c4) = (r.curvature().unwrap(), r.fourth().unwrap());
        assert!((k2 - c2).abs() <= 0.01 * c2, "{what}: k2 {c2} vs {k2}");
        assert!((k4 - c4).abs() <= 0.05 * c4, "{what}: k4 {c4} vs {k4}");
        assert_eq!(r.variance, k(0.0), "{what}");
    }
    check_kernel("rbf", &Rbf::new(0.7).unwrap(), 2, 0, 0.7);
    check_kernel("matern 5/2", &Matern::new(2.5, 0.3).unwrap(), 2, 1, 0.3);
    check_kernel("matern 7/2", &Matern::new(3.5, 0.3).unwrap(), 1, 0, 0.3);
    check_kernel("matern 3.3", &Matern::new(3.3, 0.5).unwrap(), 3, 2, 0.5);
    let scaled = Matern::new(2.5, 0.3).unwrap().scaled(3.0).unwrap();
    check_kernel("scaled matern 5/2", &scaled, 2, 0, 0.3);
    let ard = FittedKernel::per_dimension(KernelFamily::Rbf, &[1.5, 0.2], 2.0).unwrap();
    check_kernel("ard rbf", &ard, 2, 1, 0.2);
    // No fourth derivative (Matérn 3/2), no second (Matérn 1/2), no regularity (a sum).
    let m32 = Matern::new(1.5, 0.3).unwrap().regularity().unwrap();
    assert!(m32.curvature().is_some() && m32.fourth().is_none());
    let m12 = Matern::new(0.5, 0.3).unwrap().regularity().unwrap();
    assert!(m12.curvature().is_none() && m12.fourth().is_none());
    assert!(
        Rbf::new(0.3)
            .unwrap()
            .plus(Rbf::new(0.1).unwrap())
            .regularity()
            .is_none()
    );
}
