//! Device capabilities discovered once at device selection.

use ash::vk;

/// Physical device type, in etvk's preference order (discrete first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// A discrete GPU.
    Discrete,
    /// An integrated GPU.
    Integrated,
    /// A virtual GPU.
    Virtual,
    /// A CPU implementation (lavapipe, SwiftShader).
    Cpu,
    /// Anything else.
    Other,
}

impl DeviceType {
    pub(crate) fn from_vk(t: vk::PhysicalDeviceType) -> DeviceType {
        match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }
    /// Lower number = preferred.
    pub fn preference(self) -> u8 {
        match self {
            DeviceType::Discrete => 0,
            DeviceType::Integrated => 1,
            DeviceType::Virtual => 2,
            DeviceType::Cpu => 3,
            DeviceType::Other => 4,
        }
    }
    /// "discrete", "integrated", "virtual", "cpu", "other".
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Discrete => "discrete",
            DeviceType::Integrated => "integrated",
            DeviceType::Virtual => "virtual",
            DeviceType::Cpu => "cpu",
            DeviceType::Other => "other",
        }
    }
}

/// One cooperative-matrix shape: D (M x N) = A (M x K) * B (K x N) + C, with the component
/// types written `a*b+c->d` (`f16*f16+f32->f32`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoopMatShape {
    /// Rows of A, C and D.
    pub m: u32,
    /// Columns of B, C and D.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
    /// Component types, `a*b+c->d`.
    pub types: String,
}

impl std::fmt::Display for CoopMatShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{} {}", self.m, self.n, self.k, self.types)
    }
}

/// Features (all enabled on the device when present) and limits that kernels care about.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceCaps {
    /// Device API version (`VK_MAKE_API_VERSION`).
    pub api_version: u32,
    /// `shaderFloat16`: fp16 arithmetic in shaders.
    pub shader_float16: bool,
    /// `shaderInt8`: int8 arithmetic in shaders.
    pub shader_int8: bool,
    /// `shaderInt16`.
    pub shader_int16: bool,
    /// `shaderInt64`.
    pub shader_int64: bool,
    /// `storageBuffer16BitAccess`: fp16/int16 storage-buffer loads and stores.
    pub storage_buffer_16bit: bool,
    /// `storageBuffer8BitAccess`: int8/uint8 storage-buffer loads and stores.
    pub storage_buffer_8bit: bool,
    /// `vulkanMemoryModel`: shaders in the Vulkan memory model (the cooperative-matrix
    /// kernels, as glslang compiles them).
    pub vulkan_memory_model: bool,
    /// Default subgroup size (shaders must not assume 32).
    pub subgroup_size: u32,
    /// Compute shaders may shuffle within a subgroup (`subgroupSupportedOperations` has
    /// SHUFFLE and `subgroupSupportedStages` COMPUTE).
    pub subgroup_shuffle: bool,
    /// Compute shaders may reduce within a subgroup (`subgroupSupportedOperations` has
    /// ARITHMETIC and `subgroupSupportedStages` COMPUTE).
    pub subgroup_arithmetic: bool,
    /// `VK_KHR_cooperative_matrix` is available (detected; enabled only together with
    /// [`Self::cooperative_matrix2_nv`]).
    pub cooperative_matrix_khr: bool,
    /// `VK_NV_cooperative_matrix2` usable and enabled, with what its shaders need besides:
    /// a Vulkan 1.3 device (its SPIR-V is 1.6), `VK_KHR_cooperative_matrix`, the workgroup
    /// scope, flexible dimensions, tensor addressing, block loads and per-element operations,
    /// `bufferDeviceAddress` (decode functions take buffer references), the Vulkan memory
    /// model, fp16 arithmetic and 16-bit storage.
    pub cooperative_matrix2_nv: bool,
    /// `VK_NV_cooperative_matrix` with its `cooperativeMatrix` feature: enabled on the
    /// device when present (shaders declaring the capability need it).
    pub cooperative_matrix_nv: bool,
    /// The NV cooperative matrix shapes the device offers (subgroup scope).
    pub cooperative_matrix_nv_shapes: Vec<CoopMatShape>,
    /// `VK_KHR_shader_integer_dot_product` available and enabled.
    pub integer_dot_product: bool,
    /// `shaderDenormPreserveFloat32`: shaders may ask that fp32 denormals be kept (not
    /// flushed to zero), which the denormal nibble decode needs.
    pub denorm_preserve_float32: bool,
    /// `shaderDenormPreserveFloat16`: fp16 denormals kept, which the wide backward's fp16
    /// nibble decode needs (its codes are fp16 subnormals).
    pub denorm_preserve_float16: bool,
    /// `maxComputeWorkGroupCount`.
    pub max_workgroup_count: [u32; 3],
    /// `maxComputeWorkGroupSize`.
    pub max_workgroup_size: [u32; 3],
    /// `maxComputeWorkGroupInvocations`.
    pub max_workgroup_invocations: u32,
    /// `maxStorageBufferRange` in bytes (bindings larger than this are refused).
    pub max_storage_buffer_range: u32,
    /// `maxPushConstantsSize` in bytes.
    pub max_push_constants_size: u32,
    /// `maxComputeSharedMemorySize` in bytes.
    pub max_shared_memory_size: u32,
    /// `maxBoundDescriptorSets`.
    pub max_bound_descriptor_sets: u32,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f32,
    /// Whether the compute queue supports timestamps (`timestampValidBits > 0`).
    pub timestamps: bool,
    /// `nonCoherentAtomSize`.
    pub non_coherent_atom_size: u64,
}

impl DeviceCaps {
    /// `(name, value)` lines for `etvk devices`.
    pub fn properties(&self) -> Vec<(String, String)> {
        let v = |b: bool| {
            if b {
                "yes".to_string()
            } else {
                "no".to_string()
            }
        };
        vec![
            (
                "api_version".into(),
                format!(
                    "{}.{}.{}",
                    vk::api_version_major(self.api_version),
                    vk::api_version_minor(self.api_version),
                    vk::api_version_patch(self.api_version)
                ),
            ),
            ("shader_float16".into(), v(self.shader_float16)),
            ("shader_int8".into(), v(self.shader_int8)),
            ("storage_buffer_16bit".into(), v(self.storage_buffer_16bit)),
            ("storage_buffer_8bit".into(), v(self.storage_buffer_8bit)),
            ("vulkan_memory_model".into(), v(self.vulkan_memory_model)),
            ("integer_dot_product".into(), v(self.integer_dot_product)),
            (
                "denorm_preserve_float32".into(),
                v(self.denorm_preserve_float32),
            ),
            (
                "denorm_preserve_float16".into(),
                v(self.denorm_preserve_float16),
            ),
            (
                "cooperative_matrix_khr".into(),
                v(self.cooperative_matrix_khr),
            ),
            (
                "cooperative_matrix2_nv".into(),
                v(self.cooperative_matrix2_nv),
            ),
            (
                "cooperative_matrix_nv".into(),
                if self.cooperative_matrix_nv_shapes.is_empty() {
                    v(self.cooperative_matrix_nv)
                } else {
                    let shapes: Vec<String> = self
                        .cooperative_matrix_nv_shapes
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                    format!("{} ({})", v(self.cooperative_matrix_nv), shapes.join("; "))
                },
            ),
            ("subgroup_size".into(), self.subgroup_size.to_string()),
            ("subgroup_shuffle".into(), v(self.subgroup_shuffle)),
            ("subgroup_arithmetic".into(), v(self.subgroup_arithmetic)),
            (
                "max_workgroup_count".into(),
                format!("{:?}", self.max_workgroup_count),
            ),
            (
                "max_workgroup_size".into(),
                format!("{:?}", self.max_workgroup_size),
            ),
            (
                "max_workgroup_invocations".into(),
                self.max_workgroup_invocations.to_string(),
            ),
            (
                "max_storage_buffer_range".into(),
                self.max_storage_buffer_range.to_string(),
            ),
            (
                "max_push_constants_size".into(),
                self.max_push_constants_size.to_string(),
            ),
            (
                "max_shared_memory_size".into(),
                self.max_shared_memory_size.to_string(),
            ),
            (
                "timestamp_period_ns".into(),
                self.timestamp_period_ns.to_string(),
            ),
            ("timestamps".into(), v(self.timestamps)),
        ]
    }
}
