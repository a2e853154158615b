#version 450
// Tensor-core probe and baseline: D[M][N] = A[M][K] * B[K][N], fp16 operands (row-major),
// fp32 accumulate and output, through NV cooperative matrices (VK_NV_cooperative_matrix;
// only devices with it run this). Each subgroup owns one TM x TN tile of D and walks K in
// steps of TK, loading A and B straight from the storage buffers (no shared-memory staging:
// this measures that the path works and what a plain form reaches, `etvk bench coopmat`).
// The tile shape is a specialization constant from the device's list of shapes
// (f16*f16+f32->f32); M, N and K must be multiples of it (the host checks).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
layout(constant_id = 3) const uint TM = 16;
layout(constant_id = 4) const uint TN = 16;
layout(constant_id = 5) const uint TK = 16;
layout(set = 0, binding = 0) writeonly buffer D { float d[]; };
layout(set = 0, binding = 1) readonly buffer A { float16_t a[]; };
layout(set = 0, binding = 2) readonly buffer B { float16_t b[]; };
layout(push_constant) uniform Params { uint M; uint N; uint K; } p;
void main() {
  const uint tiles_n = p.N / TN;
  const uint tile = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_NumSubgroups + gl_SubgroupID;
  // Whole subgroups leave (cooperative operations need every invocation of the subgroup).
  if (tile >= (p.M / TM) * tiles_n) return;
  const uint tm = tile / tiles_n, tn = tile % tiles_n;
  fcoopmatNV<32, gl_ScopeSubgroup, TM, TN> acc = fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>(0.0);
  for (uint k = 0u; k < p.K; k += TK) {
    fcoopmatNV<16, gl_ScopeSubgroup, TM, TK> ma;
    fcoopmatNV<16, gl_ScopeSubgroup, TK, TN> mb;
    coopMatLoadNV(ma, a, tm * TM * p.K + k, p.K, false);
    coopMatLoadNV(mb, b, k * p.N + tn * TN, p.N, false);
    acc = coopMatMulAddNV(ma, mb, acc);
  }
  coopMatStoreNV(acc, d, tm * TM * p.N + tn * TN, p.N, false);
}
