//! etvk shader library: GLSL compute shaders from `shaders/` compiled at build time
//! (glslc `--target-env=vulkan1.2 -O`, then spirv-val) and embedded as SPIR-V.
//!
//! Variants come from `shaders/manifest.txt`; each becomes a [`ShaderId`] with a
//! [`ShaderInfo`] whose bindings, push-constant size and required device features were read
//! from the compiled SPIR-V itself.
//!
//! Conventions every shader follows (see `shaders/common.glsl`): set 0 holds N storage
//! buffers at bindings 0..N (outputs first by convention); specialization constants 0..2
//! are the local size; no assumption of subgroup size 32, at most 32 KiB of shared memory
//! (faster variants chosen at run time by feature checks may take more). In shaders with
//! cooperative matrices every shared variable is a multiple of 16 bytes: the build refuses
//! others (a cooperative load or store off a 16-byte offset goes wrong on NVIDIA's driver).

/// A device feature a shader needs (derived from its SPIR-V capabilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// `shaderFloat16` (fp16 arithmetic).
    Float16,
    /// `shaderInt8`.
    Int8,
    /// `shaderInt16`.
    Int16,
    /// `shaderInt64`.
    Int64,
    /// `storageBuffer16BitAccess`.
    Storage16Bit,
    /// `storageBuffer8BitAccess`.
    Storage8Bit,
    /// `VK_KHR_shader_integer_dot_product`.
    IntegerDotProduct,
    /// `VK_KHR_cooperative_matrix`.
    CooperativeMatrixKhr,
    /// `VK_NV_cooperative_matrix`.
    CooperativeMatrixNv,
    /// `VK_NV_cooperative_matrix2` (workgroup scope, tensor addressing, decode functions,
    /// per-element operations).
    CooperativeMatrix2Nv,
    /// `bufferDeviceAddress` (cooperative-matrix decode functions take buffer references).
    BufferDeviceAddress,
    /// `vulkanMemoryModel` (glslang declares it with the cooperative-matrix extensions).
    VulkanMemoryModel,
    /// Subgroup shuffles in compute shaders (`GroupNonUniformShuffle`).
    SubgroupShuffle,
    /// Subgroup reductions in compute shaders (`GroupNonUniformArithmetic`).
    SubgroupArithmetic,
}

/// Static description of one compiled shader variant.
#[derive(Debug)]
pub struct ShaderInfo {
    /// Variant name from the manifest (`binary_add_f32`).
    pub name: &'static str,
    /// Source file in `shaders/`.
    pub source: &'static str,
    /// Validated SPIR-V words.
    pub spirv: &'static [u32],
    /// Storage-buffer bindings 0..num_bindings in set 0.
    pub num_bindings: u32,
    /// Bit b set: binding b may be written (not declared `readonly`). The runtime orders
    /// dispatches by it: one that only reads a buffer needs no barrier after another reader.
    pub written_bindings: u32,
    /// Push-constant block size in bytes (0 if none).
    pub push_constant_bytes: u32,
    /// Default local size (specialization constants 0..2).
    pub local_size: [u32; 3],
    /// Device features the SPIR-V requires.
    pub features: &'static [Feature],
    /// The `-D` defines it was compiled with.
    pub defines: &'static [(&'static str, &'static str)],
}

include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

impl ShaderId {
    /// Its table entry.
    pub fn info(self) -> &'static ShaderInfo {
        &SHADERS[self as usize]
    }
    /// Look a variant up by manifest name.
    pub fn from_name(name: &str) -> Option<ShaderId> {
        ALL_SHADERS
            .iter()
            .copied()
            .find(|id| id.info().name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        assert_eq!(ALL_SHADERS.len(), SHADERS.len());
        for (i, id) in ALL_SHADERS.iter().enumerate() {
            assert_eq!(*id as usize, i);
            let info = id.info();
            assert_eq!(info.spirv[0], 0x0723_0203, "{}", info.name);
            assert_eq!(ShaderId::from_name(info.name), Some(*id));
        }
    }

    #[test]
    fn reflection_matches_sources() {
        let add = ShaderId::AddOne.info();
        assert_eq!((add.num_bindings, add.push_constant_bytes), (1, 4));
        // add_one's one buffer is read and written; binary's inputs are `readonly`.
        assert_eq!(add.written_bindings, 0b1);
        assert!(add.features.is_empty());
        let bin = ShaderId::BinaryAddF32.info();
        assert_eq!((bin.num_bindings, bin.push_constant_bytes), (3, 112));
        assert_eq!(bin.written_bindings, 0b001);
        let mm = ShaderId::MatmulTiledF32.info();
        assert_eq!((mm.num_bindings, mm.push_constant_bytes), (4, 64));
        assert_eq!(mm.written_bindings, 0b0001);
        assert_eq!(mm.local_size, [256, 1, 1]);
        let f16 = ShaderId::MatmulTiledF16.info();
        assert!(
            f16.features.contains(&Feature::Storage16Bit),
            "{:?}",
            f16.features
        );
    }
}
