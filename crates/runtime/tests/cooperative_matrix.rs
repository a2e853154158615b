//! The NV cooperative-matrix path (`coopmat_gemm_f16` through
//! `etvk_runtime::bench::coopmat_gemm`): on a device with VK_NV_cooperative_matrix an fp16
//! GEMM through its tensor cores must match an f64 product of the same fp16 operands; on a
//! device without it (lavapipe) the request must be refused with `Unsupported`, naming what
//! is missing, and nothing may panic.

mod common;

use common::*;
use etvk_runtime::ErrorKind;

#[test]
fn coopmat_gemm_matches_f64_or_is_refused() {
    let be = backend();
    let has = be
        .device_caps()
        .cooperative_matrix_nv_shapes
        .iter()
        .any(|s| s.types == "f16*f16+f32->f32");
    // Multiples of every power-of-two tile up to 128.
    let result = etvk_runtime::bench::coopmat_gemm(&be, 128, 256, 384, 2);
    if has {
        let r = result.expect("cooperative-matrix GEMM");
        // fp32 accumulation of 384 products in [-1, 1], not IEEE-exact inside the tensor
        // cores: two 2^-24 ulps per step at most (H200: 7.2e-6).
        let bound = 2.0 * 384.0 * 2f64.powi(-24);
        assert!(
            r.worst_err <= bound,
            "worst error {:.2e} ({})",
            r.worst_err,
            r.shape
        );
        // Shapes that are not multiples of the tile are refused, not run.
        let e = etvk_runtime::bench::coopmat_gemm(&be, 128, 256, 385, 1).expect_err("K = 385");
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    } else {
        let e = result.expect_err("no cooperative matrices here");
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains("cooperative matrix"), "{e}");
    }
    assert_eq!(be.validation_error_count(), 0);
}
