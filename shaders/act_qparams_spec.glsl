// The choose_qparams node's parameters as specialization constants 3-7, for the kernels that
// quantize an 8da4w linear's raw x themselves (q4_linear_gemv_half.comp's and
// q4_linear_gemv_wide.comp's DQ forms, q4_dq_rowscale.comp); the runtime sets them from the
// node (ops/q4_linear/forward.rs, `DqGemv::spec`). Include after act_qparams.glsl.
layout(constant_id = 3) const uint DQ_MAPPING = 0u;
layout(constant_id = 4) const int DQ_QMIN = -128;
layout(constant_id = 5) const int DQ_QMAX = 127;
layout(constant_id = 6) const uint DQ_EPS_BITS = 0x34000000u;  // f32 epsilon
layout(constant_id = 7) const uint DQ_KINDS = 0u;

// act_qparams with the node's parameters: the row's (scale, zero point) as computed, then as
// the node stores and reads them back.
vec4 act_qparams_spec(float lo, float hi) {
  return act_qparams(lo, hi, DQ_MAPPING, DQ_QMIN, DQ_QMAX, uintBitsToFloat(DQ_EPS_BITS), DQ_KINDS);
}
