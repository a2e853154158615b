#version 450
// Instruction-rate probe for `etvk bench alu`: every invocation runs `iters` rounds of
// CHAINS independent dependency chains of one kind of operation, so the rate measured is
// the issue rate of that operation with the whole GPU busy (the 4-bit kernels' decode and
// dot products are made of these). The operands come from push constants and the chains
// feed on each other, so the compiler can neither fold nor hoist them. The chains are folded
// (fp32 chains summed in order, integer chains xored) and the result is written
// only when it equals a value the chains essentially never produce, or, with `check` set,
// for every invocation (so a test can replay the chains on the CPU and prove they ran).
//   MODE 0: fp32 FMA                       (1 op per chain and round)
//   MODE 1: 3-input logic op (xor then and: one LOP3 on NVIDIA)
//   MODE 2: packed int8 dot product with accumulate (OpSDotKHR + add: one IDP4A)
//   MODE 3: the wide backward's per-code decode: AND with a magic-bits mask, subtract the
//           magic, FMA into the accumulator (3 ops)
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal uint fmt);

#ifndef MODE
#define MODE 0
#endif
#define CHAINS 16

layout(set = 0, binding = 0) buffer Out { uint sink[]; };
layout(push_constant) uniform Params { uint iters; uint a; uint b; uint c; uint check; } p;

void main() {
  const uint t = gl_GlobalInvocationID.x;
  uint fold = 0u;
#if MODE == 0
  float v[CHAINS];
  const float fa = uintBitsToFloat(p.a), fb = uintBitsToFloat(p.b);
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] = float(t + i);
  for (uint r = 0u; r < p.iters; ++r) {
    [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] = fma(v[i], fa, fb);
  }
  float sum = 0.0;
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) sum += v[i];
  fold = floatBitsToUint(sum);
#elif MODE == 1
  uint v[CHAINS];
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] = t * (i + 1u);
  for (uint r = 0u; r < p.iters; ++r) {
    // Each step reads its neighbour, so two steps never merge into one 3-input op.
    [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] = (v[i] ^ v[(i + 1u) % CHAINS]) & p.a;
  }
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) fold ^= v[i];
#elif MODE == 2
  int v[CHAINS];
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] = int(t + i);
  for (uint r = 0u; r < p.iters; ++r) {
    [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] += sdot4x8(uint(v[i]) ^ p.a, p.b, 0);
  }
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) fold ^= uint(v[i]);
#else
  float v[CHAINS];
  const float coef = uintBitsToFloat(p.c);
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) v[i] = float(t + i);
  uint h = (t * 0x9E3779B9u) | 0x4B000000u;
  for (uint r = 0u; r < p.iters; ++r) {
    [[unroll]] for (uint i = 0u; i < CHAINS; ++i) {
      // 16 distinct masks (nibble i % 4 and two mantissa bits from i / 4): no two
      // chains share a decode.
      const uint mask = p.a | (0xFu << (4u * (i & 3u))) | ((i >> 2u) << 20u);
      const float code = uintBitsToFloat(h & mask) - uintBitsToFloat(p.b);
      v[i] = fma(coef, code, v[i]);
    }
    h = (h + r) | 0x4B000000u;
  }
  float sum = 0.0;
  [[unroll]] for (uint i = 0u; i < CHAINS; ++i) sum += v[i];
  fold = floatBitsToUint(sum);
#endif
  if (p.check != 0u) {
    sink[t] = fold;
  } else if (fold == 0x9E3779B9u) {
    sink[0] = fold;
  }
}
