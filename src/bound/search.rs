//! One-dimensional minimisation for CMM-UCB's search over the regulariser a (on ln a): Brent's
//! method, and a plain golden-section search.
//!
//! Both are small and their stopping rules are tuned to what CMM needs (a bracket found by a
//! scan, a few dozen evaluations of an O(t) function), so they live here rather than behind an
//! optimisation crate's general interface; the unit tests below check them on functions whose
//! minimisers are known.

/// 2 − φ = (3 − √5)/2, the golden-section fraction of an interval.
const GOLDEN: f64 = 0.381_966_011_250_105_1;

/// Brent's minimisation without derivatives (Brent 1973, *Algorithms for Minimization without
/// Derivatives*, ch. 5): golden-section steps, replaced by a parabolic step through the three
/// best points whenever that step is inside the bracket and shorter than half the step
/// before last.
///
/// Minimises `f` over the bracket [`lo`, `hi`], starting from its interior point `x`, whose
/// value `fx` the caller already has. Stops when the minimiser is known to
/// ±(`rel`·|x| + `abs`), or after 100 iterations. Returns the best point evaluated and its
/// value; if `f` is not unimodal on the bracket, a local minimum.
///
/// The state, as in Brent's ALGOL procedure `localmin`: `x` is the best point so far, `w` the
/// second best, `v` the previous value of `w`; `d` is the current step and `e` the step
/// before last, whose size decides whether a parabolic step is trusted.
pub(crate) fn brent(
    f: impl Fn(f64) -> f64,
    mut lo: f64,
    mut hi: f64,
    x: f64,
    fx: f64,
    rel: f64,
    abs: f64,
) -> (f64, f64) {
    let (mut x, mut w, mut v) = (x, x, x);
    let (mut fx, mut fw, mut fv) = (fx, fx, fx);
    let (mut d, mut e) = (0.0_f64, 0.0_f64);
    for _ in 0..100 {
        let middle = 0.5 * (lo + hi);
        let tol = rel * x.abs() + abs;
        if (x - middle).abs() <= 2.0 * tol - 0.5 * (hi - lo) {
            break;
        }
        let mut golden = true;
        if e.abs() > tol {
            // The parabola through (x, fx), (w, fw), (v, fv): its vertex is x + p/q.
            let r = (x - w) * (fx - fv);
            let q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            let mut q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            if p.abs() < (0.5 * q * e).abs() && p > q * (lo - x) && p < q * (hi - x) {
                e = d;
                d = p / q;
                let u = x + d;
                // Never evaluate within tol of the bracket's ends.
                if u - lo < 2.0 * tol || hi - u < 2.0 * tol {
                    d = tol.copysign(middle - x);
                }
                golden = false;
            }
        }
        if golden {
            e = if x >= middle { lo - x } else { hi - x };
            d = GOLDEN * e;
        }
        // Steps shorter than tol would only re-evaluate x.
        let u = if d.abs() >= tol {
            x + d
        } else {
            x + tol.copysign(d)
        };
        let fu = f(u);
        if fu <= fx {
            if u >= x {
                lo = x;
            } else {
                hi = x;
            }
            (v, fv, w, fw, x, fx) = (w, fw, x, fx, u, fu);
        } else {
            if u < x {
                lo = u;
            } else {
                hi = u;
            }
            if fu <= fw || w == x {
                (v, fv, w, fw) = (w, fw, u, fu);
            } else if fu <= fv || v == x || v == w {
                (v, fv) = (u, fu);
            }
        }
    }
    (x, fx)
}

/// Golden-section search for the minimum of `f` on [`lo`, `hi`] with a fixed number of
/// `iterations` (each shrinks the interval by φ − 1 ≈ 0.618 and costs one evaluation):
/// exact for a unimodal `f` up to the final interval's width, and robust where Brent's
/// parabolic steps could be misled (a flat or rounding-dominated `f`). Returns the better of
/// the two interior points of the final interval, and its value.
pub(crate) fn golden_section(
    f: impl Fn(f64) -> f64,
    mut lo: f64,
    mut hi: f64,
    iterations: usize,
) -> (f64, f64) {
    // φ − 1 = 1 − GOLDEN: the interior points sit at this fraction from either end.
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut u1, mut u2) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
    let (mut h1, mut h2) = (f(u1), f(u2));
    for _ in 0..iterations {
        if h1 <= h2 {
            hi = u2;
            (u2, h2) = (u1, h1);
            u1 = hi - phi * (hi - lo);
            h1 = f(u1);
        } else {
            lo = u1;
            (u1, h1) = (u2, h2);
            u2 = lo + phi * (hi - lo);
            h2 = f(u2);
        }
    }
    if h1 <= h2 { (u1, h1) } else { (u2, h2) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Brent on f with the tolerance CMM uses; also counts the evaluations.
    fn brent_on(f: impl Fn(f64) -> f64, lo: f64, hi: f64, x: f64) -> (f64, f64, usize) {
        let calls = Cell::new(0);
        let counted = |s: f64| {
            calls.set(calls.get() + 1);
            f(s)
        };
        let (s, v) = brent(counted, lo, hi, x, f(x), 1e-6, 1e-7);
        (s, v, calls.get())
    }

    #[test]
    fn brent_finds_a_parabola_s_vertex_in_a_few_steps() {
        let (s, v, calls) = brent_on(|s| (s - 1.3).powi(2) + 2.0, -4.0, 5.0, 0.5);
        assert!((s - 1.3).abs() < 1e-6, "{s}");
        assert!((v - 2.0).abs() < 1e-12);
        // A parabola is fitted exactly: far fewer steps than golden section's ~40.
        assert!(calls < 12, "{calls} evaluations");
    }

    #[test]
    fn brent_handles_a_kink_and_an_asymmetric_bracket() {
        // Not differentiable at the minimum: parabolic steps fail, golden steps must carry it.
        let (s, v, _) = brent_on(|s| (s - 0.25).abs() + 0.1 * s * s, -10.0, 1.0, -3.0);
        assert!((s - 0.25).abs() < 1e-5, "{s}");
        assert!((v - 0.1 * 0.0625).abs() < 1e-5);
    }

    #[test]
    fn brent_on_a_cmm_like_dual_over_ln_a() {
        // h(a) = R² + aB² − b² a/(λ + a) over s = ln a (one eigenvalue): convex in a, smooth
        // in s. Its minimiser solves B² = b²λ/(λ + a)², i.e. a* = |b|√λ/B − λ.
        let (lambda, b, norm) = (3.0, 4.0, 1.0);
        let h = |s: f64| {
            let a = s.exp();
            10.0 + a * norm * norm - b * b * a / (lambda + a)
        };
        let (s, _, _) = brent_on(h, -10.0, 10.0, 0.0);
        let a = s.exp();
        let derivative = norm * norm - b * b * lambda / (lambda + a).powi(2);
        assert!(derivative.abs() < 1e-5, "h'(a*) = {derivative}");
        assert!((a - ((b * b * lambda).sqrt() / norm - lambda)).abs() < 1e-5);
    }

    #[test]
    fn brent_at_the_bracket_end_stays_inside() {
        // Decreasing on the whole bracket: the answer is within tol of the upper end.
        let (s, _, _) = brent_on(|s| -s, 0.0, 2.0, 1.0);
        assert!(s <= 2.0 && s > 2.0 - 1e-5, "{s}");
    }

    #[test]
    fn golden_section_converges_to_the_minimiser() {
        let (s, v) = golden_section(|s| (s - 0.7).powi(2) - 1.0, -5.0, 5.0, 120);
        assert!((s - 0.7).abs() < 1e-7, "{s}");
        assert!((v + 1.0).abs() < 1e-14);
        // After n steps the interval is 10·0.618ⁿ wide: 40 steps give ~4e-8.
        let (s, _) = golden_section(|s| (s + 2.0).abs(), -5.0, 5.0, 40);
        assert!((s + 2.0).abs() < 1e-7, "{s}");
    }

    #[test]
    fn golden_section_on_a_flat_function_stays_in_the_interval() {
        let (s, v) = golden_section(|_| 1.0, -1.0, 3.0, 60);
        assert!((-1.0..=3.0).contains(&s));
        assert_eq!(v, 1.0);
    }
}
