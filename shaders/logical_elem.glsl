// Helpers shared by the compare / logical / where / to_copy shaders (ops/logic.rs).
// Inputs are bound as `uint[]` words and decoded by a dtype code from the push constants,
// so one SPIR-V module serves every input dtype (and mixed-dtype pairs) without 8/16-bit
// storage: f16 and bool elements are shifted out of their word.

// Input dtype codes (the runtime's `logic::dt_code`).
#define DT_F32 0u
#define DT_F16 1u
#define DT_I32 2u
#define DT_BOOL 3u

// log2 of the elements per 32-bit word.
uint dt_shift(uint dt) {
  return dt == DT_F16 ? 1u : (dt == DT_BOOL ? 2u : 0u);
}

// The bits of element `i` out of `word`, the word that holds it.
uint dt_bits(uint word, uint i, uint dt) {
  if (dt == DT_F16) {
    return (word >> ((i & 1u) * 16u)) & 0xffffu;
  }
  if (dt == DT_BOOL) {
    return (word >> ((i & 3u) * 8u)) & 0xffu;
  }
  return word;
}

// Bits of element `i` of buffer array `buf` holding dtype `dt`.
#define LOAD_BITS(buf, i, dt) dt_bits(buf[(i) >> dt_shift(dt)], (i), (dt))

float bits_to_float(uint bits, uint dt) {
  if (dt == DT_F32) {
    return uintBitsToFloat(bits);
  }
  if (dt == DT_F16) {
    return unpackHalf2x16(bits).x;
  }
  if (dt == DT_I32) {
    return float(int(bits));
  }
  return bits != 0u ? 1.0 : 0.0;
}

// Float sources truncate toward zero (C / PyTorch casts).
int bits_to_int(uint bits, uint dt) {
  if (dt == DT_I32) {
    return int(bits);
  }
  if (dt == DT_BOOL) {
    return bits != 0u ? 1 : 0;
  }
  return int(bits_to_float(bits, dt));
}

// `x != 0` decided on the bits, so -0.0 is false, NaN is true, and denormals count even
// where the device flushes them in float arithmetic.
bool bits_truth(uint bits, uint dt) {
  if (dt == DT_F32) {
    return (bits & 0x7fffffffu) != 0u;
  }
  if (dt == DT_F16) {
    return (bits & 0x7fffu) != 0u;
  }
  return bits != 0u;
}

// Index into a broadcast input of output element `i`. `sizes` are the output sizes
// innermost first; bit d of `bcast` says the input has size 1 (stride 0) on output dim d.
// An input's own sizes equal the output's on the other dims, so its strides follow.
uint bcast_index(uint i, uint rank, uint bcast, uvec4 sizes[2]) {
  uint rem = i;
  uint idx = 0u;
  uint stride = 1u;
  for (uint d = 0u; d < rank; ++d) {
    uint size = sizes[d >> 2][d & 3u];
    uint c = rem % size;
    rem /= size;
    if (((bcast >> d) & 1u) == 0u) {
      idx += c * stride;
      stride *= size;
    }
  }
  return idx;
}

// Round a float to the nearest fp16 value (comparisons whose PyTorch result type is half).
#include "f16_round.glsl"
float round_f16(float x) {
  return f16_round(x);
}
