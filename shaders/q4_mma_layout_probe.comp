#version 450
// Where the driver keeps each element of an int8 16 x 32 A, an int8 32 x 8 B and an int32
// 16 x 8 accumulator of NV cooperative matrices (the shapes of q4_linear_mma_reg.comp's
// MMA): one subgroup of 32 loads matrices of indices and writes, per invocation, its
// elements' rows and columns: out[lane * 52 + ..] = A rows[16], A columns (k)[16], B rows
// (k)[8], B columns[8], accumulator (row * 8 + column)[4]. The runtime derives the register
// form's element maps (its specialization constants) from them (ops/q4_mma_check.rs).
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_KHR_shader_subgroup_basic : require

#include "common.glsl"
layout(set = 0, binding = 0) writeonly buffer Out { uint outp[]; };

// Packed four int8 to a word (as q4_linear_mma.comp's tiles): A row-major, 8 words a row;
// B row-major (k rows of 8 columns), 2 words a row.
shared uint a_row[128];
shared uint a_col[128];
shared uint b_row[64];
shared uint b_col[64];
shared int c_idx[128];

void main() {
  const uint lane = gl_SubgroupInvocationID;
  for (uint w = lane; w < 128u; w += 32u) {
    const uint r = w / 8u, k0 = (w % 8u) * 4u;
    a_row[w] = r * 0x01010101u;
    a_col[w] = k0 | (k0 + 1u) << 8 | (k0 + 2u) << 16 | (k0 + 3u) << 24;
  }
  for (uint w = lane; w < 64u; w += 32u) {
    const uint k = w / 2u, n0 = (w % 2u) * 4u;
    b_row[w] = k * 0x01010101u;
    b_col[w] = n0 | (n0 + 1u) << 8 | (n0 + 2u) << 16 | (n0 + 3u) << 24;
  }
  for (uint i = lane; i < 128u; i += 32u) c_idx[i] = int(i);
  barrier();
  icoopmatNV<8, gl_ScopeSubgroup, 16, 32> ar, ac;
  coopMatLoadNV(ar, a_row, 0, 8, false);
  coopMatLoadNV(ac, a_col, 0, 8, false);
  icoopmatNV<8, gl_ScopeSubgroup, 32, 8> br, bc;
  coopMatLoadNV(br, b_row, 0, 2, false);
  coopMatLoadNV(bc, b_col, 0, 2, false);
  icoopmatNV<32, gl_ScopeSubgroup, 16, 8> cc;
  coopMatLoadNV(cc, c_idx, 0, 8, false);
  const uint o = lane * 52u;
  for (int i = 0; i < 16; ++i) {
    outp[o + uint(i)] = i < ar.length() ? uint(int(ar[i])) : 0xFFFFFFFFu;
    outp[o + 16u + uint(i)] = i < ac.length() ? uint(int(ac[i])) : 0xFFFFFFFFu;
  }
  for (int i = 0; i < 8; ++i) {
    outp[o + 32u + uint(i)] = i < br.length() ? uint(int(br[i])) : 0xFFFFFFFFu;
    outp[o + 40u + uint(i)] = i < bc.length() ? uint(int(bc[i])) : 0xFFFFFFFFu;
  }
  for (int i = 0; i < 4; ++i) outp[o + 48u + uint(i)] = i < cc.length() ? uint(cc[i]) : 0xFFFFFFFFu;
  // Lengths other than 16 / 8 / 4 are flagged in the last word's high bits.
  if (ar.length() != 16 || br.length() != 8 || cc.length() != 4) outp[o + 51u] |= 0x80000000u;
}
