//! Gradients of every kernel and combinator, `Kernel::gradient` = ∂k(x, y)/∂x and
//! `Kernel::diag_gradient` = ∇ₓ k(x, x), against independent references: central finite
//! differences of `Kernel::eval`, derivatives of the Matérn kernel computed with `mpmath`
//! (numerical differentiation of Rasmussen & Williams 2006 Eq. 4.14 at 50 digits, which does
//! not use the Bessel identity the code is built on), the closed form of Eq. 4.16 at ν = 7/2
//! differentiated by hand, the ascending series of K_ν near 0 (DLMF 10.31.1) and the Hessian
//! of the kernel at 0; plus structured inputs: duplicates, points a few ulps apart, mirrored
//! pairs, far-apart points and extreme length-scales.

use kernel_bandits::kernel::{Kernel, KernelExt, Linear, Matern, Rbf};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// (ν, r, dk/dr) with ℓ = 1 in one dimension: the derivative of
/// k(r) = 2^{1−ν}/Γ(ν) z^ν K_ν(z), z = √(2ν) r, computed with mpmath 1.3 at `mp.dps = 50` as
/// `mp.diff(lambda t: k(nu, t), mp.mpf(r))` (numerical differentiation of the kernel, not the
/// identity d/dz[z^ν K_ν] = −z^ν K_{ν−1}), printed to 17 digits, for r giving
/// z = 10⁻¹², 10⁻³, 1, 50, 710 and 760 (values below 10⁻³⁰⁰ left out).
#[allow(clippy::excessive_precision)]
const REFERENCE: &[(f64, f64, f64)] = &[
    (0.3, 1.2909944487358056e-12, -2.7982196801813008e+4),
    (0.3, 0.0012909944487358056, -7.0282626209562176),
    (0.3, 1.2909944487358056, -2.114078870855111e-1),
    (0.3, 64.54972243679028, -4.6609186232062669e-23),
    (0.75, 8.164965809277261e-13, -2.5622853652725704e-6),
    (0.75, 0.0008164965809277261, -7.8577191931651002e-2),
    (0.75, 0.816496580927726, -5.1195797108322634e-1),
    (0.75, 40.8248290463863, -7.6259043779294203e-22),
    (1.0, 7.071067811865475e-13, -3.9240116726114117e-11),
    (1.0, 0.0007071067811865475, -9.9329959596433363e-3),
    (1.0, std::f64::consts::FRAC_1_SQRT_2, -5.9541847065052326e-1),
    (1.0, 35.35533905932738, -2.4113527408598175e-21),
    (1.25, 6.324555320336758e-13, -3.162274637101787e-12),
    (1.25, 0.0006324555320336759, -3.0666809356442301e-3),
    (1.25, 0.6324555320336759, -6.3183895484894839e-1),
    (1.25, 31.622776601683793, -6.6550059211615911e-21),
    (1.5, 5.773502691896258e-13, -1.7320508075671454e-12),
    (1.5, 0.0005773502691896258, -1.7303196224981093e-3),
    (1.5, 0.5773502691896257, -6.3718588316898396e-1),
    (1.5, 28.867513459481287, -1.6703463658821288e-20),
    (2.5, 4.4721359549995796e-13, -7.4535599249992994e-13),
    (2.5, 0.00044721359549995795, -7.4535562007029253e-4),
    (2.5, 0.4472135954999579, -5.4840229198931992e-1),
    (2.5, 22.360679774997898, -3.6658934058937403e-19),
    (3.5, 3.7796447300922723e-13, -5.2915026221291813e-13),
    (3.5, 0.0003779644730092272, -5.2915017402122978e-4),
    (3.5, 0.37796447300922725, -4.5421483977009116e-1),
    (3.5, 18.89822365046136, -4.5127463135257496e-18),
    (7.5, 2.581988897471611e-13, -2.9792179586210897e-13),
    (7.5, 0.0002581988897471611, -2.9792178232020953e-4),
    (7.5, 0.25819888974716115, -2.8474732054248598e-1),
    (7.5, 12.909944487358056, -6.5421283985021047e-15),
    (7.5, 183.3212117204844, -1.2018223630104547e-293),
    (30.0, 1.2909944487358055e-13, -1.3355114986922126e-13),
    (30.0, 0.00012909944487358055, -1.3355114867680029e-4),
    (30.0, 0.12909944487358058, -1.3236423170608703e-1),
    (30.0, 6.454972243679028, -1.7483638924061423e-7),
    (30.0, 91.6606058602422, -2.1413397738850644e-263),
    (30.0, 98.11557810392122, -2.9576984093618056e-284),
    (100.0, 7.071067811865475e-14, -7.1424927392580558e-14),
    (100.0, 7.071067811865475e-05, -7.1424927210374112e-5),
    (100.0, 0.07071067811865475, -7.1242955543586216e-2),
    (100.0, 3.5355339059327378, -7.3612844494553587e-3),
    (100.0, 50.204581464244875, -6.5808524412867337e-207),
    (100.0, 53.74011537017761, -7.0510640202151176e-226),
];

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn gradient(k: &dyn Kernel, x: &[f64], y: &[f64]) -> Vec<f64> {
    let mut out = vec![f64::NAN; x.len()];
    k.gradient(x, y, &mut out).unwrap();
    out
}

fn diag_gradient(k: &dyn Kernel, x: &[f64]) -> Vec<f64> {
    let mut out = vec![f64::NAN; x.len()];
    k.diag_gradient(x, &mut out).unwrap();
    out
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, a| m.max(a.abs()))
}

/// Central differences of `f` at `x`, with the step hᵢ = 10⁻⁵ · max(1, |xᵢ|).
fn central_difference(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let h = 1e-5 * x[i].abs().max(1.0);
            let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
            plus[i] += h;
            minus[i] -= h;
            // The step actually taken (x ± h rounds).
            (f(&plus) - f(&minus)) / (plus[i] - minus[i])
        })
        .collect()
}

/// Every entry within 10⁻⁶ ‖g‖_∞ + 10⁻⁹ · `value_scale`/`scale` of the finite difference.
///
/// The central difference's error per entry is at most h²/6 · sup|∂³k| (truncation) plus
/// about ε · sup|k| / h (rounding of the two values). With h = 10⁻⁵ in units of `scale` (the
/// length-scale's order) the first is ~ 10⁻¹⁰ of the gradient's size for the kernels here
/// (third derivatives ~ 1/ℓ³ against first ~ 1/ℓ), far below the 10⁻⁶ relative term; the
/// second is 2.2·10⁻¹¹ · sup|k|/`scale`, 45 times below the absolute term.
fn assert_close_to_fd(name: &str, g: &[f64], fd: &[f64], value_scale: f64, scale: f64) {
    let tol = 1e-6 * norm_inf(g) + 1e-9 * value_scale / scale;
    for (i, (a, b)) in g.iter().zip(fd).enumerate() {
        assert!(
            (a - b).abs() <= tol,
            "{name}: entry {i}: gradient {a:e}, finite difference {b:e} (tolerance {tol:e})"
        );
    }
}

type Named = (String, Box<dyn Kernel>);

/// Every stationary kernel of the crate with length-scale `l`.
fn stationary_kernels(l: f64) -> Vec<Named> {
    let mut out: Vec<Named> = vec![("rbf".into(), Box::new(Rbf::new(l).unwrap()))];
    for nu in [0.5, 1.5, 2.5] {
        out.push((
            format!("matern {nu} closed"),
            Box::new(Matern::new(nu, l).unwrap()),
        ));
        out.push((
            format!("matern {nu} bessel"),
            Box::new(Matern::with_bessel(nu, l).unwrap()),
        ));
    }
    for nu in [0.3, 0.75, 1.0, 1.25, 3.5, 7.5, 30.0, 100.0] {
        out.push((
            format!("matern {nu}"),
            Box::new(Matern::new(nu, l).unwrap()),
        ));
    }
    out
}

/// The linear kernel and the combinators, on 3 coordinates.
fn combined_kernels() -> Vec<Named> {
    let rbf = || Rbf::new(0.7).unwrap();
    let m52 = || Matern::new(2.5, 0.6).unwrap();
    let m_gen = || Matern::new(3.5, 0.8).unwrap();
    vec![
        ("linear".into(), Box::new(Linear::with_bias(0.3).unwrap())),
        ("scaled rbf".into(), Box::new(rbf().scaled(2.5).unwrap())),
        ("rbf + linear".into(), Box::new(rbf().plus(Linear::new()))),
        (
            "matern 5/2 · linear".into(),
            Box::new(m52().times(Linear::with_bias(1.0).unwrap())),
        ),
        ("rbf · matern 7/2".into(), Box::new(rbf().times(m_gen()))),
        (
            "rbf on 0..2 · matern 5/2 on 2..3".into(),
            Box::new(rbf().on(0..2).unwrap().times(m52().on(2..3).unwrap())),
        ),
        (
            "linear on 1..3 · matern 7/2 on 0..1".into(),
            Box::new(
                Linear::with_bias(0.5)
                    .unwrap()
                    .on(1..3)
                    .unwrap()
                    .times(m_gen().on(0..1).unwrap()),
            ),
        ),
        (
            "scaled (linear on 1..3 + matern on 0..1)".into(),
            Box::new(
                Linear::new()
                    .on(1..3)
                    .unwrap()
                    .plus(m_gen().on(0..1).unwrap())
                    .scaled(0.5)
                    .unwrap(),
            ),
        ),
    ]
}

#[test]
fn every_kernel_matches_finite_differences_at_random_points() {
    let mut rng = rng(19);
    let mut kernels = stationary_kernels(0.5);
    kernels.extend(combined_kernels());
    for (name, k) in &kernels {
        for _ in 0..30 {
            let x: Vec<f64> = (0..3).map(|_| rng.random_range(-1.0..1.0)).collect();
            let y: Vec<f64> = (0..3).map(|_| rng.random_range(-1.0..1.0)).collect();
            let g = gradient(k.as_ref(), &x, &y);
            let fd = central_difference(|p| k.eval(p, &y), &x);
            let value_scale = k.eval(&x, &y).abs().max(1.0) + 3.0;
            assert_close_to_fd(name, &g, &fd, value_scale, 1.0);
            // The diagonal's gradient, against differences of x ↦ k(x, x) through `eval` (not
            // `eval_diag`, which the stationary kernels answer with a constant).
            let dg = diag_gradient(k.as_ref(), &x);
            let fd = central_difference(|p| k.eval(p, p), &x);
            assert_close_to_fd(&format!("{name} (diagonal)"), &dg, &fd, value_scale, 1.0);
        }
    }
}

#[test]
fn matern_matches_mpmath_derivatives() {
    for &(nu, r, reference) in REFERENCE {
        let mut forms = vec![Matern::new(nu, 1.0).unwrap()];
        if [0.5, 1.5, 2.5].contains(&nu) {
            forms.push(Matern::with_bessel(nu, 1.0).unwrap());
        }
        for k in forms {
            // In one dimension the gradient is dk/dr at x = r > y = 0, and −dk/dr mirrored.
            let g = gradient(&k, &[r], &[0.0])[0];
            let rel = ((g - reference) / reference).abs();
            assert!(
                rel < 1e-12,
                "{k:?} at r = {r:e}: {g:e} vs {reference:e} ({rel:e})"
            );
            assert_eq!(gradient(&k, &[-r], &[0.0])[0], -g);
            // In three dimensions, along a unit direction u: the gradient is dk/dr · u.
            let u = [0.48, -0.6, 0.64];
            let x: Vec<f64> = u.iter().map(|c| c * r).collect();
            let g3 = gradient(&k, &x, &[0.0; 3]);
            let r3 = x.iter().map(|c| c * c).sum::<f64>().sqrt();
            // r3 differs from r by rounding; dk/dr at r3 differs by a relative O(ε · z k''/k').
            for (gi, xi) in g3.iter().zip(&x) {
                let expected = reference * xi / r3;
                assert!(
                    ((gi - expected) / expected).abs() < 1e-11,
                    "{k:?} at r = {r:e} in 3-d: {gi:e} vs {expected:e}"
                );
            }
        }
    }
}

/// ν = 7/2: k = (1 + z + 2z²/5 + z³/15) e^{−z}, z = √7 r/ℓ (Rasmussen & Williams 2006
/// Eq. 4.16), so dk/dz = −(z/15)(3 + 3z + z²) e^{−z} and
/// ∇k = −(7/15)(3 + 3z + z²) e^{−z} (x − y)/ℓ².
#[test]
fn matern_seven_halves_matches_hand_derivative() {
    let l = 0.4;
    let k = Matern::new(3.5, l).unwrap();
    let y = [0.1, -0.2];
    let direction = [0.6, 0.8];
    for i in 0..=300 {
        // z from 10⁻⁸ to 600.
        let z = 1e-8 * (6e10_f64).powf(f64::from(i) / 300.0);
        let r = z * l / 7f64.sqrt();
        let x = [y[0] + r * direction[0], y[1] + r * direction[1]];
        let z = 7f64.sqrt() * (x[0] - y[0]).hypot(x[1] - y[1]) / l;
        let factor = -(7.0 / 15.0) * (3.0 + 3.0 * z + z * z) * (-z).exp() / (l * l);
        let g = gradient(&k, &x, &y);
        for j in 0..2 {
            let expected = factor * (x[j] - y[j]);
            let rel = ((g[j] - expected) / expected).abs();
            assert!(
                rel < 1e-12,
                "z = {z:e}, entry {j}: {:e} vs {expected:e}",
                g[j]
            );
        }
    }
}

/// The K_ν form (`Matern::with_bessel`) and the closed forms of `Matern::new` at ν = 1/2, 3/2
/// and 5/2 against the closed-form gradients written out here: −e^{−r/ℓ}(x − y)/(ℓr),
/// −3 e^{−√3 r/ℓ}(x − y)/ℓ² and −(5/3)(1 + √5 r/ℓ) e^{−√5 r/ℓ}(x − y)/ℓ².
#[test]
fn bessel_form_matches_closed_forms() {
    let l = 0.7;
    let y = [0.3, 0.1];
    let direction = [0.28, -0.96];
    // The factor of (x − y)/ℓ² as a function of u = r/ℓ: (p, s) for p e^{−s}.
    type Closed = fn(f64) -> (f64, f64);
    let cases: [(f64, Closed); 3] = [
        (0.5, |u| (-1.0 / u, u)),
        (1.5, |u| (-3.0, 3f64.sqrt() * u)),
        (2.5, |u| {
            let s = 5f64.sqrt() * u;
            (-(5.0 / 3.0) * (1.0 + s), s)
        }),
    ];
    for (nu, closed) in cases {
        let bessel = Matern::with_bessel(nu, l).unwrap();
        let fast = Matern::new(nu, l).unwrap();
        for i in 0..=2000 {
            // z from 10⁻¹² to 740.
            let z = 1e-12 * (740e12_f64).powf(f64::from(i) / 2000.0);
            let r = z * l / (2.0 * nu).sqrt();
            let x = [y[0] + r * direction[0], y[1] + r * direction[1]];
            let u = (x[0] - y[0]).hypot(x[1] - y[1]) / l;
            let gb = gradient(&bessel, &x, &y);
            let gf = gradient(&fast, &x, &y);
            for j in 0..2 {
                // e^{−s} = (e^{−s/2})², applied last: the expected values stay accurate where
                // e^{−s} alone would be subnormal (z > 708).
                let (p, s) = closed(u);
                let half = (-0.5 * s).exp();
                let expected = p * (x[j] - y[j]) / (l * l) * half * half;
                for (form, g) in [("bessel", gb[j]), ("closed", gf[j])] {
                    // Subnormal values (z > 708): the K_ν form multiplies a subnormal k_{ν−1}(z)
                    // (rounded to 5·10⁻³²⁴ absolute) by ν/(ν−1) (x − y)/ℓ², up to ~2·10³ here,
                    // so 10⁻³¹⁹ absolute.
                    let ok = (g - expected).abs() <= 1e-12 * expected.abs() + 1e-319;
                    assert!(ok, "ν = {nu} {form}, z = {z:e}: {g:e} vs {expected:e}");
                }
            }
        }
    }
}

#[test]
fn duplicates_have_exactly_zero_gradient() {
    for l in [1e-300, 0.5, 1e300] {
        for (name, k) in stationary_kernels(l) {
            for x in [[0.0, 0.0, 0.0], [0.3, -1e8, 7.0], [1e-310, 5e-324, -1e300]] {
                let g = gradient(k.as_ref(), &x, &x);
                assert!(g.iter().all(|&v| v == 0.0), "{name}, ℓ = {l:e}: {g:?}");
                let dg = diag_gradient(k.as_ref(), &x);
                assert!(dg.iter().all(|&v| v == 0.0), "{name} diagonal: {dg:?}");
            }
        }
    }
}

#[test]
fn mirrored_pairs_are_exactly_antisymmetric() {
    let mut rng = rng(7);
    for l in [1e-3, 0.5, 40.0] {
        for (name, k) in stationary_kernels(l) {
            for _ in 0..20 {
                let x: Vec<f64> = (0..3).map(|_| rng.random_range(-1.0..1.0)).collect();
                // A random partner sharing one coordinate with x, and x a few ulps away.
                let mut y: Vec<f64> = (0..3).map(|_| rng.random_range(-1.0..1.0)).collect();
                y[1] = x[1];
                let ulps: Vec<f64> = x.iter().map(|v| v.next_up().next_up()).collect();
                for partner in [&y, &ulps] {
                    let a = gradient(k.as_ref(), &x, partner);
                    let b = gradient(k.as_ref(), partner, &x);
                    for (p, q) in a.iter().zip(&b) {
                        assert!(!p.is_nan(), "{name}: {a:?}");
                        // Equal as numbers (+0 and −0 both stand for a zero entry).
                        assert_eq!(*p, -q, "{name}, ℓ = {l}: {a:?} vs {b:?}");
                        if *p != 0.0 {
                            assert_eq!(p.to_bits(), (-q).to_bits());
                        }
                    }
                }
            }
        }
    }
}

/// Points a few ulps apart: for ν > 1 (and the RBF kernel) the gradient is the Hessian of the
/// kernel at 0 times x − y, −ν/((ν−1)ℓ²)(x − y) (the second spectral moment of the Matérn
/// spectral density, Rasmussen & Williams 2006 §4.2.1; −(x − y)/ℓ² for the RBF kernel); for
/// ν = 1/2 the one-sided slope −1/ℓ along the unit vector; for 1/2 < ν ≤ 1 a vanishing vector;
/// for ν < 1/2 a steep one, without NaN.
#[test]
fn points_a_few_ulps_apart() {
    let l = 0.5;
    let x = [0.3, -0.7, 1.1];
    let y: Vec<f64> = x
        .iter()
        .map(|v: &f64| v.next_up().next_up().next_up())
        .collect();
    let d: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a - b).collect();
    let r = d.iter().map(|v| v * v).sum::<f64>().sqrt();
    let rbf = gradient(&Rbf::new(l).unwrap(), &x, &y);
    for (g, di) in rbf.iter().zip(&d) {
        assert!(((g + di / (l * l)) / g).abs() < 1e-12);
    }
    // ν ∈ (1, 2) other than 3/2 is left out: there 1 − k_{ν−1}(z) ~ z^{2ν−2} is not below
    // 10⁻¹² at these z (~10⁻⁸ at ν = 1.25).
    for nu in [1.5, 2.5, 3.5, 7.5, 30.0, 100.0] {
        for k in [
            Matern::new(nu, l).unwrap(),
            Matern::with_bessel(nu, l).unwrap(),
        ] {
            let g = gradient(&k, &x, &y);
            for (gi, di) in g.iter().zip(&d) {
                let expected = -nu / ((nu - 1.0) * l * l) * di;
                let rel = ((gi - expected) / expected).abs();
                assert!(rel < 1e-12, "{k:?}: {gi:e} vs {expected:e}");
            }
        }
    }
    for k in [
        Matern::new(0.5, l).unwrap(),
        Matern::with_bessel(0.5, l).unwrap(),
    ] {
        let g = gradient(&k, &x, &y);
        for (gi, di) in g.iter().zip(&d) {
            let expected = -di / (r * l);
            let rel = ((gi - expected) / expected).abs();
            assert!(rel < 1e-12, "{k:?}: {gi:e} vs {expected:e}");
        }
    }
    // 1/2 < ν ≤ 1: ‖∇k‖ → 0 (like r^{2ν−1}, and r ln(1/r) at ν = 1).
    for nu in [0.75, 1.0] {
        let g = gradient(&Matern::new(nu, l).unwrap(), &x, &y);
        assert!(
            norm_inf(&g) < 1e-6 && g.iter().all(|v| v.is_finite()),
            "ν = {nu}: {g:?}"
        );
    }
    // ν < 1/2: the slope grows without bound, but no NaN.
    let g = gradient(&Matern::new(0.3, l).unwrap(), &x, &y);
    assert!(norm_inf(&g) > 1e3 && g.iter().all(|v| !v.is_nan()), "{g:?}");
}

/// 1/2 < ν < 1 near z = 0: dk/dz = −Γ(1−ν)/Γ(ν) (z/2)^{2ν−1} to leading order (from the
/// ascending series k = 1 − Γ(1−ν)/Γ(1+ν) (z/2)^{2ν} + …, DLMF 10.31.1; the next term is
/// O(z^{2−2ν}) relative); at ν = 3/4, Γ(1/4)/Γ(3/4) = 2.95867511918863889 (mpmath).
#[test]
fn matern_three_quarters_near_zero_matches_the_series() {
    let nu: f64 = 0.75;
    let ratio = 2.958_675_119_188_639;
    for z in [1e-305, 1e-250, 1e-100, 1e-40] {
        let r = z / (2.0 * nu).sqrt();
        let g = gradient(&Matern::new(nu, 1.0).unwrap(), &[r], &[0.0])[0];
        // ∇k = dk/dz · √(2ν) in one dimension with ℓ = 1.
        let expected = -ratio * (0.5 * z).powf(2.0 * nu - 1.0) * (2.0 * nu).sqrt();
        let rel = ((g - expected) / expected).abs();
        assert!(rel < 1e-12, "z = {z:e}: {g:e} vs {expected:e}");
    }
}

#[test]
fn far_apart_and_extreme_lengthscales_give_no_nan() {
    let x = [0.0, 1e6, -3.0];
    let y = [1e6, -1e6, 1e300];
    for l in [1e-300, 1e-8, 1.0, 1e4] {
        for (name, k) in stationary_kernels(l) {
            let g = gradient(k.as_ref(), &x, &y);
            assert!(g.iter().all(|&v| v == 0.0), "{name}, ℓ = {l:e}: {g:?}");
        }
    }
    // ℓ = 10³⁰⁰, r ~ 1: z ~ 10⁻³⁰⁰; the gradient ~ (x − y)/ℓ² underflows for ν > 1 and is
    // ~ z^{2ν−1}/ℓ for ν ≤ 1 (1/ℓ at ν = 1/2); ν = 0.3 (slope ∝ z^{−0.4}) is left out.
    for (name, k) in stationary_kernels(1e300) {
        if name == "matern 0.3" {
            continue;
        }
        let g = gradient(k.as_ref(), &[0.0, 1.0, 2.0], &[1.0, 0.0, 0.0]);
        assert!(
            g.iter().all(|v| v.is_finite() && v.abs() < 1e-299),
            "{name}: {g:?}"
        );
    }
}

/// Points and length-scale both at ℓ = 10⁻³⁰⁰, 10⁻¹⁵⁰ and 10²⁰⁰ (gradients near 10³⁰⁰ and
/// 10⁻²⁰⁰), against finite differences with steps 10⁻⁵ ℓ.
#[test]
fn extreme_lengthscales_match_finite_differences() {
    let mut rng = rng(3);
    for l in [1e-300, 1e-150, 1e200] {
        for (name, k) in stationary_kernels(l) {
            for _ in 0..5 {
                let x: Vec<f64> = (0..2).map(|_| rng.random_range(-1.0..1.0) * l).collect();
                let y: Vec<f64> = (0..2).map(|_| rng.random_range(-1.0..1.0) * l).collect();
                let g = gradient(k.as_ref(), &x, &y);
                let fd: Vec<f64> = (0..2)
                    .map(|i| {
                        let h = 1e-5 * l;
                        let (mut plus, mut minus) = (x.clone(), x.clone());
                        plus[i] += h;
                        minus[i] -= h;
                        (k.eval(&plus, &y) - k.eval(&minus, &y)) / (plus[i] - minus[i])
                    })
                    .collect();
                assert_close_to_fd(&format!("{name}, ℓ = {l:e}"), &g, &fd, 1.0, l);
            }
        }
    }
}

#[test]
fn linear_and_slices_are_exact() {
    let k = Linear::with_bias(2.0).unwrap();
    let (x, y) = ([1.5, -2.0, 0.25], [3.0, 0.5, -7.0]);
    assert_eq!(gradient(&k, &x, &y), y.to_vec());
    assert_eq!(diag_gradient(&k, &x), vec![3.0, -4.0, 0.5]);
    let sliced = Linear::new().on(1..3).unwrap();
    assert_eq!(gradient(&sliced, &x, &y), vec![0.0, 0.5, -7.0]);
    assert_eq!(diag_gradient(&sliced, &x), vec![0.0, -4.0, 0.5]);
    // Points shorter than the slice: a typed error, no panic.
    let mut out = [0.0; 2];
    assert!(matches!(
        sliced.gradient(&x[..2], &y[..2], &mut out),
        Err(kernel_bandits::Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        sliced.diag_gradient(&x[..2], &mut out),
        Err(kernel_bandits::Error::DimensionMismatch { .. })
    ));
}

/// The product rule where one factor's gradient vanishes (x = y on the Matérn factor's
/// slice, ν = 0.3): only k_M · ∇k_L = 1 · y₂ remains; far apart on that slice, everything is 0.
#[test]
fn product_rule_with_a_vanishing_factor() {
    let m = Matern::new(0.3, 0.5).unwrap().on(0..2).unwrap();
    let k = m.times(Linear::new().on(2..3).unwrap());
    let (x, y) = ([0.2, 0.4, 3.0], [0.2, 0.4, -2.0]);
    assert_eq!(gradient(&k, &x, &y), vec![0.0, 0.0, -2.0]);
    let (x, y) = ([0.2, 1e9, 3.0], [0.2, 0.4, -2.0]);
    assert!(gradient(&k, &x, &y).iter().all(|&v| v == 0.0));
}
