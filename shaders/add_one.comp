#version 450
// Test shader: data[i] += 1 for i < n. Used by the device-layer smoke test.
#include "common.glsl"

layout(set = 0, binding = 0) buffer Data { float data[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint i = linear_id();
  if (i < p.n) {
    data[i] += 1.0;
  }
}
