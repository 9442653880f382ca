//! DMM-UCB's R̃_a² = R_t² + aB² − a·q_a (Flynn & Reeb 2024, Cor. 4.3 and Eq. 8) on near-singular
//! data, where it is a small difference of two terms of the order of ‖y‖² and rounding decides
//! its sign: each width R̃_a/√a the crate reports must come from a value at or above the exact
//! R̃_a², and not far above it.
//!
//! The exact values are independent of the crate: `python/tests/exact_cmm.py`
//! (`ExactCmm.reduced_radius_sq`), mpmath at 60 digits through the eigendecomposition of the
//! exact kernel matrix of the binary64 inputs, at the binary64 regularisers m·σ²/c. The
//! extended-precision test of the bounds themselves is `python/tests/test_cmm_exact.py`.

use kernel_bandits::kernel::Rbf;
use kernel_bandits::prelude::{Amm, BoundParams, ConfidenceBound, Dmm};

/// Two inputs 10⁻⁷ apart with y = ±1, σ = 10⁻⁴, RBF ℓ = 0.5, B = 10, δ = 0.1, c = 1: the case
/// in which DMM-UCB's LCB was above the exact one by 15% of the width.
fn witness_params() -> BoundParams {
    BoundParams::new()
        .sigma(1e-4)
        .norm_bound(10.0)
        .delta(0.1)
        .scale(1.0)
}

fn witness() -> Dmm<Rbf> {
    let mut dmm = Dmm::new(Rbf::new(0.5).unwrap(), witness_params()).unwrap();
    dmm.observe(&[0.5], 1.0).unwrap();
    dmm.observe(&[0.5 + 1e-7], -1.0).unwrap();
    dmm
}

/// R̃_a² at a = m·10⁻⁸ for m in the DMM grid, from `exact_cmm.py` (60 digits, rounded to the
/// nearest binary64).
const WITNESS_EXACT: [(f64, f64); 5] = [
    (0.1, 3.633_639_797_924_235e-5),
    (0.3, 9.870_442_436_350_786e-6),
    (1.0, 1.237_190_001_154_984_2e-6),
    (3.0, 5.705_304_483_912_644e-7),
    (10.0, 6.637_197_924_928_781e-6),
];

#[test]
fn dmm_radii_are_never_below_the_exact_ones_on_the_witness() {
    let dmm = witness();
    let widths = dmm.widths();
    let regularisers: Vec<f64> = dmm.posterior().regularisers().collect();
    assert_eq!(widths.len(), WITNESS_EXACT.len());
    for ((&width, &a), &(m, exact)) in widths.iter().zip(&regularisers).zip(&WITNESS_EXACT) {
        assert_eq!(a, m * 1e-8, "the grid is m·σ²/c");
        let radius_sq = width * width * a;
        // The squaring and the product add a few ulps; the exact value is positive.
        assert!(
            radius_sq >= exact * (1.0 - 1e-14),
            "a = {m}·a0: R̃² {radius_sq:e} below the exact {exact:e}"
        );
        if m == 1.0 {
            // a0: q cancels exactly (Lemma C.2) and nothing is added (AMM's width, to the bit);
            // what is left is ld_{a0}'s rounding, whose term ln(1 + (1 − k)/a0) ≈ 2·10⁻⁶
            // carries the kernel value's (about 10⁻¹⁰ of R̃² here; 2.9·10⁻¹² seen).
            assert!(
                (radius_sq / exact - 1.0).abs() < 1e-9,
                "a0: {radius_sq:e} against {exact:e}"
            );
        } else {
            // The allowance is a bound on rounding, which here is large against R̃² (each q
            // term has a relative error of about κ·u = 2·10⁹·u), but no larger than documented:
            // to first order η_a·q_a + η_{a0}·q_{a0} with η = (128u + 8γ₃)·tr(K_t + aI), and
            // q = yᵀ(K_t + aI)⁻¹y = 2/(1 − k + a) for y = (1, −1) (closed form, 1 − k by expm1).
            let u = f64::EPSILON / 2.0;
            let one_minus_k = -(-(1e-7f64 * 1e-7) / (2.0 * 0.25)).exp_m1();
            let q = |reg: f64| 2.0 / (one_minus_k + reg);
            let eta = |reg: f64| (128.0 + 24.0) * u * (2.0 + 2.0 * reg);
            let allowance = eta(a) * q(a) + eta(1e-8) * q(1e-8);
            assert!(
                radius_sq - exact <= 1.05 * allowance,
                "a = {m}·a0: R̃² {radius_sq:e} exceeds the exact {exact:e} by more than the \
                 allowance {allowance:e}"
            );
            // And it is needed: the allowance is not negligible here.
            assert!(allowance > 0.01 * exact, "a = {m}·a0");
        }
    }
}

#[test]
fn dmm_equals_amm_at_a0_and_is_never_looser() {
    // DMM's a0 entry is AMM's width to the bit, so DMM ≤ AMM survives the allowance.
    let dmm = witness();
    let mut amm = Amm::new(Rbf::new(0.5).unwrap(), witness_params()).unwrap();
    amm.observe(&[0.5], 1.0).unwrap();
    amm.observe(&[0.5 + 1e-7], -1.0).unwrap();
    let queries: Vec<[f64; 1]> = [0.499, 0.5, 0.500_000_05, 0.5 + 1e-7, 0.6, 0.05]
        .iter()
        .map(|&x| [x])
        .collect();
    let (d, a) = (dmm.bounds(&queries).unwrap(), amm.bounds(&queries).unwrap());
    for (j, x) in queries.iter().enumerate() {
        assert!(d.ucb[j] <= a.ucb[j], "x = {x:?}");
        assert!(d.lcb[j] >= a.lcb[j], "x = {x:?}");
    }
    assert_eq!(dmm.widths()[2].to_bits(), amm.width().to_bits());
}
