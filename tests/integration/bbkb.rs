//! BBKB, BKB with adaptive batches (Calandriello et al. 2020 Alg. 1): checked against a dense
//! from-scratch recomputation of the DTC/Nyström quantities for the dictionary it ends up
//! with, against a hand-worked case, and against BKB for C̃ < 1.

use kernel_bandits::bound::BatchFeedback;
use kernel_bandits::prelude::*;
use nalgebra::{DMatrix, DVector};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// The dense Nyström posterior with dictionary `anchors` on the observations `data`:
/// Λ = (K_ZS K_SZ + λK_ZZ)⁻¹ and Γ = K_ZS y (Zenati et al. 2022 Prop. 4.2), solved with LU.
struct Dense<'a> {
    kernel: Rbf,
    lambda: f64,
    anchors: &'a [Vec<f64>],
    /// (Λ⁻¹, Γ, K_ZZ)
    system: (DMatrix<f64>, DVector<f64>, DMatrix<f64>),
}

impl<'a> Dense<'a> {
    fn new(kernel: Rbf, lambda: f64, anchors: &'a [Vec<f64>], data: &[(Vec<f64>, f64)]) -> Self {
        let m = anchors.len();
        let kzz = DMatrix::from_fn(m, m, |i, j| kernel.eval(&anchors[i], &anchors[j]));
        let kzs = DMatrix::from_fn(m, data.len(), |i, s| kernel.eval(&anchors[i], &data[s].0));
        let y = DVector::from_iterator(data.len(), data.iter().map(|d| d.1));
        let system = (&kzs * kzs.transpose() + &kzz * lambda, &kzs * y, kzz);
        Self {
            kernel,
            lambda,
            anchors,
            system,
        }
    }

    fn column(&self, x: &[f64]) -> DVector<f64> {
        DVector::from_iterator(
            self.anchors.len(),
            self.anchors.iter().map(|z| self.kernel.eval(z, x)),
        )
    }

    /// μ̃(x) = k_Z(x)ᵀΛΓ.
    fn mean(&self, x: &[f64]) -> f64 {
        if self.anchors.is_empty() {
            return 0.0;
        }
        let weights = self.system.0.clone().lu().solve(&self.system.1).unwrap();
        self.column(x).dot(&weights)
    }

    /// σ̃²(x) = (k(x, x) − k_ZᵀK_ZZ⁻¹k_Z)/λ + k_ZᵀΛk_Z.
    fn variance(&self, x: &[f64]) -> f64 {
        let prior = self.kernel.eval(x, x);
        if self.anchors.is_empty() {
            return prior / self.lambda;
        }
        let k = self.column(x);
        let projected = k.dot(&self.system.2.clone().lu().solve(&k).unwrap());
        let explained = k.dot(&self.system.0.clone().lu().solve(&k).unwrap());
        (prior - projected).max(0.0) / self.lambda + explained
    }
}

fn assert_near(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-15, "{got:?} vs {want:?}");
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

/// After every observation, on a sequence with repeated arms: the bound's mean is the dense
/// Nyström mean of the data up to the batch start (of all the data with
/// [`BatchFeedback::Immediate`]), its variance the dense one of all the data,
/// for the dictionary in use; the batch's accumulated variance is the dense σ̃²_fb summed over
/// the batch, and a resampling happens exactly when 1 + Σ σ̃²_fb > C̃.
#[test]
fn bbkb_matches_the_dense_reference_after_every_update() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let kernel = Rbf::new(0.3).unwrap();
    let lambda = 0.5;
    let beta = 1.0;
    let arms: Vec<Vec<f64>> = (0..12)
        .map(|_| vec![rng.random::<f64>(), rng.random::<f64>()])
        .collect();
    let queries: Vec<Vec<f64>> = (0..8)
        .map(|_| vec![rng.random::<f64>(), rng.random::<f64>()])
        .chain(arms.iter().take(3).cloned())
        .collect();
    let cases = [
        (1.5, BatchFeedback::AtBatchEnd),
        (3.0, BatchFeedback::AtBatchEnd),
        (10.0, BatchFeedback::AtBatchEnd),
        (3.0, BatchFeedback::Immediate),
        (10.0, BatchFeedback::Immediate),
    ];
    for (threshold, feedback) in cases {
        let params = SketchParams::new()
            .lambda(lambda)
            .beta(beta)
            .qbar(3.0)
            .batch_threshold(threshold)
            .batch_feedback(feedback);
        let mut bkb = Bkb::new(kernel, params, 9).unwrap();
        let mut data: Vec<(Vec<f64>, f64)> = Vec::new();
        // Observations up to the current batch start, and the accumulated σ̃²_fb.
        let mut batch_start = 0;
        let mut accumulated = 0.0;
        let mut batches = 0;
        for t in 0..80 {
            // Repeated arms: a few arms many times.
            let x = arms[if t % 3 == 0 { t % 12 } else { t % 4 }].clone();
            let y = (4.0 * x[0]).sin() + x[1] + 0.1 * rng.random::<f64>();
            let anchors: Vec<Vec<f64>> = bkb
                .posterior()
                .dictionary()
                .iter()
                .map(|&i| bkb.posterior().point(i).to_vec())
                .collect();
            let ends = if t == 0 {
                true
            } else {
                let at_start = Dense::new(kernel, lambda, &anchors, &data[..batch_start]);
                accumulated += at_start.variance(&x);
                1.0 + accumulated > threshold
            };
            let resamplings = bkb.resamplings();
            bkb.observe(&x, y).unwrap();
            data.push((x, y));
            assert_eq!(
                bkb.resamplings(),
                resamplings + usize::from(ends),
                "C = {threshold}, t = {t}: batch end"
            );
            if ends {
                batches += 1;
                batch_start = data.len();
                accumulated = 0.0;
                assert_eq!(bkb.batch(), (0, 0.0));
            } else {
                let (len, sum) = bkb.batch();
                assert_eq!(len, data.len() - batch_start);
                assert!(close(sum, accumulated, 1e-9), "{sum} vs {accumulated}");
                // Inside a batch the dictionary does not change.
                let now: Vec<Vec<f64>> = bkb
                    .posterior()
                    .dictionary()
                    .iter()
                    .map(|&i| bkb.posterior().point(i).to_vec())
                    .collect();
                assert_eq!(now, anchors);
            }
            let anchors: Vec<Vec<f64>> = bkb
                .posterior()
                .dictionary()
                .iter()
                .map(|&i| bkb.posterior().point(i).to_vec())
                .collect();
            let fed = match feedback {
                BatchFeedback::AtBatchEnd => batch_start,
                _ => data.len(),
            };
            let frozen = Dense::new(kernel, lambda, &anchors, &data[..fed]);
            let current = Dense::new(kernel, lambda, &anchors, &data);
            let got = bkb.bounds(&queries).unwrap();
            for (j, q) in queries.iter().enumerate() {
                let (mean, variance) = (frozen.mean(q), current.variance(q));
                assert!(
                    close(got.mean[j], mean, 1e-8),
                    "C = {threshold}, t = {t}, query {j}: mean {} vs {mean}",
                    got.mean[j]
                );
                let width = (got.ucb[j] - got.mean[j]) / beta;
                assert!(
                    close(width * width, variance, 1e-8),
                    "C = {threshold}, t = {t}, query {j}: variance {} vs {variance}",
                    width * width
                );
            }
        }
        assert!(
            (2..80).contains(&batches),
            "C = {threshold}: {batches} batches"
        );
    }
}

/// A hand-worked case: points 1 apart under an RBF kernel with ℓ = 10⁻³ are exactly
/// orthogonal (k = e^{−5·10⁵} = 0) and k(x, x) = 1, so with λ = 1 a point outside the
/// dictionary has σ̃²_fb = 1 exactly, and a repeat of the single anchor x₀ (seen once) has
/// σ̃²_fb = 1/(1 + λ) = ½. With C̃ = 3: x₀ (own batch, dictionary {x₀}), then x₁ (Σ = 1),
/// x₂ (Σ = 2: 1 + Σ = 3 is not > 3, the batch goes on), x₀ again (Σ = 2.5: the batch ends).
/// q̄ = 100 then takes every point into the dictionary, giving the exact posterior.
#[test]
fn a_batch_ends_strictly_above_the_threshold() {
    let kernel = Rbf::new(1e-3).unwrap();
    let params = |c: f64| {
        SketchParams::new()
            .lambda(1.0)
            .beta(1.0)
            .qbar(100.0)
            .batch_threshold(c)
    };
    let points = [[0.0], [1.0], [2.0]];
    let mut bkb = Bkb::new(kernel, params(3.0), 1).unwrap();
    bkb.observe(&[0.0], 1.0).unwrap();
    assert_eq!((bkb.resamplings(), bkb.batch()), (1, (0, 0.0)));
    let b = bkb.bounds(&points).unwrap();
    assert_near(&b.mean, &[0.5, 0.0, 0.0]); // 1·y/(1 + λ)
    bkb.observe(&[1.0], 4.0).unwrap();
    assert_eq!((bkb.resamplings(), bkb.batch()), (1, (1, 1.0)));
    bkb.observe(&[2.0], 8.0).unwrap();
    assert_eq!((bkb.resamplings(), bkb.batch()), (1, (2, 2.0)));
    // Inside the batch: the mean is the batch start's; x₀'s variance is unchanged (the new
    // points are orthogonal to it), x₁ and x₂ are outside the dictionary.
    let b = bkb.bounds(&points).unwrap();
    assert_near(&b.mean, &[0.5, 0.0, 0.0]);
    let widths: Vec<f64> = b.ucb.iter().zip(&b.mean).map(|(u, m)| u - m).collect();
    assert_near(&widths, &[0.5f64.sqrt(), 1.0, 1.0]);
    bkb.observe(&[0.0], 2.0).unwrap();
    assert_eq!((bkb.resamplings(), bkb.batch()), (2, (0, 0.0)));
    assert_eq!(bkb.dictionary_size(), 3);
    // Exact posterior: x₀ seen twice (sum 3), x₁ once (4), x₂ once (8); λ = 1.
    let b = bkb.bounds(&points).unwrap();
    let expected = [3.0 / 3.0, 4.0 / 2.0, 8.0 / 2.0];
    for (got, want) in b.mean.iter().zip(expected) {
        assert!((got - want).abs() < 1e-14, "{got} vs {want}");
    }
    let variances = [1.0 / 3.0, 0.5, 0.5];
    for ((u, m), v) in b.ucb.iter().zip(&b.mean).zip(variances) {
        assert!(((u - m) * (u - m) - v).abs() < 1e-14);
    }

    // A threshold one ulp below 3 ends the batch at x₂ instead.
    let mut early = Bkb::new(kernel, params(3.0f64.next_down()), 1).unwrap();
    for (x, y) in [(0.0, 1.0), (1.0, 4.0), (2.0, 8.0)] {
        early.observe(&[x], y).unwrap();
    }
    assert_eq!((early.resamplings(), early.batch()), (2, (0, 0.0)));
    // Inside a batch the duplicate's variance shrinks with the hallucinated count while its
    // mean stays: x₀ repeated within a long batch.
    let mut long = Bkb::new(kernel, params(100.0), 1).unwrap();
    long.observe(&[0.0], 1.0).unwrap();
    long.observe(&[0.0], 5.0).unwrap();
    let b = long.bounds(&[[0.0]]).unwrap();
    assert_near(&b.mean, &[0.5]);
    let w = b.ucb[0] - b.mean[0];
    assert_near(&[w * w], &[1.0 / 3.0]);
    assert_eq!(long.batch().0, 1);
    assert_near(&[long.batch().1], &[0.5]);
}

/// C̃ < 1 ends every batch at once: the same dictionaries and bit-identical bounds as BKB.
#[test]
fn a_threshold_below_one_is_bkb() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let kernel = Rbf::new(0.4).unwrap();
    let params = SketchParams::new().lambda(0.2).beta(1.5).qbar(2.0);
    let queries: Vec<Vec<f64>> = (0..10).map(|_| vec![rng.random::<f64>()]).collect();
    for threshold in [0.0, 0.5, 1.0f64.next_down()] {
        let mut bkb = Bkb::new(kernel, params, 4).unwrap();
        let mut bbkb = Bkb::new(kernel, params.batch_threshold(threshold), 4).unwrap();
        for t in 0..60 {
            let x = [(t % 7) as f64 / 7.0 + 0.01 * rng.random::<f64>()];
            let y = (5.0 * x[0]).cos();
            bkb.observe(&x, y).unwrap();
            bbkb.observe(&x, y).unwrap();
            assert_eq!(bbkb.posterior().dictionary(), bkb.posterior().dictionary());
            assert_eq!(
                bbkb.bounds(&queries).unwrap(),
                bkb.bounds(&queries).unwrap()
            );
        }
        assert_eq!(bbkb.resamplings(), 60);
    }
}

/// Larger thresholds resample less often (fewer rebuilds), on the same data.
#[test]
fn larger_thresholds_resample_less() {
    let kernel = Rbf::new(0.2).unwrap();
    let counts: Vec<usize> = [0.0, 3.0, 10.0, 30.0]
        .iter()
        .map(|&c| {
            let params = SketchParams::new()
                .lambda(1.0)
                .beta(1.0)
                .qbar(2.0)
                .batch_threshold(c);
            let mut bkb = Bkb::new(kernel, params, 2).unwrap();
            for t in 0..200 {
                let x = [(t as f64 * 0.618_033_988_7).fract()];
                bkb.observe(&x, x[0]).unwrap();
            }
            bkb.resamplings()
        })
        .collect();
    assert_eq!(counts[0], 200);
    assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
}

#[test]
fn bad_input_is_rejected_and_changes_nothing() {
    let kernel = Rbf::new(0.5).unwrap();
    for c in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            Bkb::new(
                kernel,
                SketchParams::new().beta(1.0).qbar(1.0).batch_threshold(c),
                0
            ),
            Err(Error::InvalidParameter {
                name: "batch_threshold",
                ..
            })
        ));
    }
    // Batches need a fixed width; below 1 (BKB) the theoretical one stays available.
    let theory = SketchParams::new().qbar(1.0).sigma(0.1).norm_bound(1.0);
    assert!(matches!(
        Bkb::new(kernel, theory.batch_threshold(3.0), 0),
        Err(Error::MissingParameter { name: "beta", .. })
    ));
    assert!(Bkb::new(kernel, theory.batch_threshold(0.5), 0).is_ok());

    let params = SketchParams::new()
        .lambda(0.5)
        .beta(1.0)
        .qbar(5.0)
        .batch_threshold(50.0);
    let mut bkb = Bkb::new(kernel, params, 0).unwrap();
    for (x, y) in [([0.1, 0.2], 1.0), ([0.5, 0.5], -1.0), ([0.9, 0.1], 0.5)] {
        bkb.observe(&x, y).unwrap();
    }
    let query = vec![vec![0.1, 0.2], vec![0.7, 0.3]];
    let before = (bkb.bounds(&query).unwrap(), bkb.batch(), bkb.resamplings());
    assert_eq!(before.1.0, 2, "mid-batch");
    assert!(bkb.observe(&[0.1, f64::NAN], 1.0).is_err());
    assert!(bkb.observe(&[0.1, 0.2], f64::INFINITY).is_err());
    assert!(matches!(
        bkb.observe(&[0.1], 1.0),
        Err(Error::DimensionMismatch { .. })
    ));
    assert_eq!(bkb.len(), 3);
    assert_eq!(
        (bkb.bounds(&query).unwrap(), bkb.batch(), bkb.resamplings()),
        before
    );
}

/// Truncating inside a batch closes it: the mean then uses every remaining target (the
/// dense Nyström mean of the kept data for the dictionary in use).
#[test]
fn truncation_closes_the_batch() {
    let kernel = Rbf::new(0.3).unwrap();
    let lambda = 0.5;
    let params = SketchParams::new()
        .lambda(lambda)
        .beta(1.0)
        .qbar(2.0)
        .batch_threshold(100.0);
    let mut bkb = Bkb::new(kernel, params, 0).unwrap();
    let data: Vec<(Vec<f64>, f64)> = (0..10)
        .map(|i| (vec![i as f64 / 10.0], (i as f64).sin()))
        .collect();
    for (x, y) in &data {
        bkb.observe(x, *y).unwrap();
    }
    assert_eq!(bkb.batch().0, 9);
    bkb.truncate(6);
    assert_eq!(bkb.batch(), (0, 0.0));
    let anchors: Vec<Vec<f64>> = bkb
        .posterior()
        .dictionary()
        .iter()
        .map(|&i| bkb.posterior().point(i).to_vec())
        .collect();
    let dense = Dense::new(kernel, lambda, &anchors, &data[..6]);
    let query = [[0.33], [0.8]];
    let got = bkb.bounds(&query).unwrap();
    for (j, q) in query.iter().enumerate() {
        assert!(close(got.mean[j], dense.mean(q), 1e-9));
    }
}
