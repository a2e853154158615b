//! Element-wise comparison with a tolerance, reporting the worst element on failure.

use crate::tensor::{unravel, Tensor};

/// Tolerance: an element passes when `|got - want| <= atol + rtol * |want|`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tol {
    /// Absolute part.
    pub atol: f64,
    /// Relative part.
    pub rtol: f64,
}

impl Tol {
    /// fp32 elementwise default (ExecuTorch's own op tests use the same).
    pub const F32: Tol = Tol {
        atol: 1e-5,
        rtol: 1e-5,
    };
    /// fp32 reductions over up to ~100 terms: summation order differs from the f64
    /// reference, so the absolute error grows with the sum of |terms| (~1e-5 for K = 65
    /// with values in [-1, 1]).
    pub const F32_SUM: Tol = Tol {
        atol: 1e-4,
        rtol: 1e-5,
    };
    /// fp16 storage: one rounding of the output alone is up to 2^-11 relative.
    pub const F16: Tol = Tol {
        atol: 1e-3,
        rtol: 2e-3,
    };
    /// Exact equality (integer results, copies).
    pub const EXACT: Tol = Tol {
        atol: 0.0,
        rtol: 0.0,
    };

    /// A tolerance.
    pub fn new(atol: f64, rtol: f64) -> Tol {
        Tol { atol, rtol }
    }
}

/// Compare `got` with `want`: sizes must be equal and every element within `tol`.
/// The error names the number of bad elements and the worst one (by how far it exceeds
/// its allowance), with its multi-index.
pub fn compare(got: &Tensor, want: &Tensor, tol: Tol) -> Result<(), String> {
    if got.sizes != want.sizes {
        return Err(format!(
            "sizes {:?} differ from the expected {:?}",
            got.sizes, want.sizes
        ));
    }
    compare_values(&got.data, &want.data, &want.sizes, tol)
}

/// [`compare`] on flat values laid out row-major with `sizes`.
pub fn compare_values(got: &[f64], want: &[f64], sizes: &[usize], tol: Tol) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let mut bad = 0usize;
    // (excess over the allowance, index, got, want, allowance)
    let mut worst: Option<(f64, usize, f64, f64, f64)> = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let allowed = tol.atol + tol.rtol * w.abs();
        // NaN compares false everywhere, so test "within" rather than "outside"; an infinite
        // `want` makes the allowance infinite, so only equality matches it.
        let diff = (g - w).abs();
        let ok = g == w || (g.is_nan() && w.is_nan()) || (w.is_finite() && diff <= allowed);
        if !ok {
            bad += 1;
            let excess = if diff.is_nan() {
                f64::INFINITY
            } else {
                diff - allowed
            };
            let replace = match worst {
                None => true,
                Some((e, ..)) => excess > e,
            };
            if replace {
                worst = Some((excess, i, g, w, allowed));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((_, i, g, w, allowed)) => Err(format!(
            "{bad} of {} elements out of tolerance (atol {:e}, rtol {:e}); worst at {:?} (flat {i}): got {g:e}, want {w:e}, |diff| {:e} > allowed {allowed:e}",
            want.len(),
            tol.atol,
            tol.rtol,
            unravel(i, sizes),
            (g - w).abs(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_worst_element() {
        let want = Tensor::f32(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
        let got = Tensor::f32(&[2, 2], vec![1.0, 2.1, 3.0, 3.0]);
        let e = compare(&got, &want, Tol::F32).unwrap_err();
        assert!(e.starts_with("2 of 4"), "{e}");
        assert!(e.contains("[1, 1]"), "{e}");
        assert!(compare(&want, &want, Tol::EXACT).is_ok());
        let nan = Tensor::f32(&[2, 2], vec![1.0, f64::NAN, 3.0, 4.0]);
        assert!(compare(&nan, &want, Tol::F32).is_err());
        assert!(compare(&nan, &nan, Tol::EXACT).is_ok());
        // Infinities match only themselves, whatever the tolerance.
        let inf = Tensor::f32(&[2], vec![f64::INFINITY, f64::NEG_INFINITY]);
        let loose = Tol {
            atol: 1.0,
            rtol: 1.0,
        };
        assert!(compare(&inf, &inf, Tol::EXACT).is_ok());
        assert!(compare(
            &Tensor::f32(&[2], vec![5.0, f64::NEG_INFINITY]),
            &inf,
            loose
        )
        .is_err());
        assert!(compare(
            &Tensor::f32(&[2], vec![f64::NEG_INFINITY, f64::INFINITY]),
            &inf,
            loose
        )
        .is_err());
    }
}
