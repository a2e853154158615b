// Shared prelude of every etvk compute shader. Included after `#version 450`.
//
// Extensions are `enable`d, not required: glslc only emits a SPIR-V capability (and the
// build only records a device-feature requirement) when a shader actually uses the types.
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_shader_16bit_storage : enable
#extension GL_EXT_shader_8bit_storage : enable

// The local size comes from specialization constants 0..2, so the runtime picks it per
// device without recompiling; extra constants start at id 3.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#ifndef DTYPE
#define DTYPE float
#endif

// Flat invocation index over a 2-D grid (x fastest): a 1-D problem larger than
// maxComputeWorkGroupCount.x * local_size_x spills into y (see the runtime's `grid_1d`).
uint linear_id() {
  return gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * gl_WorkGroupSize.x) + gl_GlobalInvocationID.x;
}
