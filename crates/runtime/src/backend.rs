//! The device context shared by delegates: the Vulkan context and a pipeline cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use etvk_shaders::{Feature, ShaderId};
use etvk_vulkan::{ComputePipeline, Context, DeviceCaps};

use crate::api::{Error, ErrorKind, Result};
use crate::error::{internal, unsupported};

/// Key of a compiled pipeline: shader variant, local size, extra specialization constants.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    shader: ShaderId,
    local: [u32; 3],
    spec: Vec<u32>,
}

/// Backend internals: one device, pipelines shared by every delegate on it.
pub(crate) struct BackendInner {
    pub(crate) ctx: Arc<Context>,
    pipelines: Mutex<HashMap<PipelineKey, Arc<ComputePipeline>>>,
    /// Whether graphs record per-dispatch timestamps ([`crate::RuntimeOptions::profile`]).
    pub(crate) profile: bool,
    /// How graphs run their resize passes ([`crate::RuntimeOptions::resize`]).
    pub(crate) resize_mode: crate::api::ResizeMode,
    /// Whether the f16 tensor-core kernels (backward, the forward's hi / lo form) passed their self-check
    /// here (run once, at first need).
    f16_mma_ok: OnceLock<bool>,
    /// Whether the forward's codes form passed its part of that self-check.
    f16_codes_ok: OnceLock<bool>,
    /// [`Self::int8_mma_ok`], once decided.
    int8_mma_ok: OnceLock<bool>,
    /// [`Self::int8_mma_reg_spec`], once decided.
    int8_mma_reg: OnceLock<Option<[u32; 4]>>,
    /// The wide backward's fp16-decode variants that passed (true) or failed their
    /// self-check here, each checked at its first need.
    wide_f16_ok: Mutex<HashMap<ShaderId, bool>>,
}

fn feature_supported(caps: &DeviceCaps, f: Feature) -> (bool, &'static str) {
    match f {
        Feature::Float16 => (caps.shader_float16, "shaderFloat16"),
        Feature::Int8 => (caps.shader_int8, "shaderInt8"),
        Feature::Int16 => (caps.shader_int16, "shaderInt16"),
        Feature::Int64 => (caps.shader_int64, "shaderInt64"),
        Feature::Storage16Bit => (caps.storage_buffer_16bit, "storageBuffer16BitAccess"),
        Feature::Storage8Bit => (caps.storage_buffer_8bit, "storageBuffer8BitAccess"),
        Feature::IntegerDotProduct => (
            caps.integer_dot_product,
            "VK_KHR_shader_integer_dot_product",
        ),
        // KHR: enabled only with VK_NV_cooperative_matrix2, whose shaders declare both.
        Feature::CooperativeMatrixKhr => (caps.cooperative_matrix2_nv, "VK_KHR_cooperative_matrix"),
        Feature::CooperativeMatrix2Nv => (caps.cooperative_matrix2_nv, "VK_NV_cooperative_matrix2"),
        Feature::BufferDeviceAddress => (caps.cooperative_matrix2_nv, "bufferDeviceAddress"),
        Feature::CooperativeMatrixNv => (caps.cooperative_matrix_nv, "VK_NV_cooperative_matrix"),
        Feature::VulkanMemoryModel => (caps.vulkan_memory_model, "vulkanMemoryModel"),
        Feature::SubgroupShuffle => (caps.subgroup_shuffle, "subgroup shuffles in compute"),
        Feature::SubgroupArithmetic => (caps.subgroup_arithmetic, "subgroup reductions in compute"),
    }
}

/// Kernel experiments: with `ETVK_SPIRV_OVERRIDE_DIR` set, `<dir>/<variant name>.spv` (when
/// present) replaces that variant's embedded SPIR-V, so that a shader edit can be timed on
/// a device without rebuilding the runtime there. The replacement must keep the variant's
/// bindings and push constants; nothing here can check that, hence a warning per use.
fn spirv_override(name: &str) -> Result<Option<Vec<u32>>> {
    let Some(dir) = std::env::var_os("ETVK_SPIRV_OVERRIDE_DIR") else {
        return Ok(None);
    };
    let path = std::path::Path::new(&dir).join(format!("{name}.spv"));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(internal(format!("reading {}: {e}", path.display()))),
    };
    if bytes.len() % 4 != 0 || bytes.len() < 20 || bytes[..4] != [0x03, 0x02, 0x23, 0x07] {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{} is not little-endian SPIR-V", path.display()),
        ));
    }
    log::warn!("shader {name}: SPIR-V replaced by {}", path.display());
    Ok(Some(
        bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect(),
    ))
}

impl BackendInner {
    pub(crate) fn new(
        ctx: Arc<Context>,
        profile: bool,
        resize_mode: crate::api::ResizeMode,
    ) -> BackendInner {
        BackendInner {
            ctx,
            pipelines: Mutex::new(HashMap::new()),
            profile,
            resize_mode,
            f16_mma_ok: OnceLock::new(),
            f16_codes_ok: OnceLock::new(),
            int8_mma_ok: OnceLock::new(),
            int8_mma_reg: OnceLock::new(),
            wide_f16_ok: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the f16 tensor-core kernels' variants, the backward's and the forward's hi / lo
    /// form (with the 128 x 128 tiles that fit the device's shared memory), compute right on
    /// this device ([`crate::ops::q4_mma_check`]); checked once, and a failure (or an error
    /// running the check) is logged and keeps the portable kernels.
    pub(crate) fn f16_mma_ok(&self) -> bool {
        *self
            .f16_mma_ok
            .get_or_init(|| self.self_check(false, "f16 tensor-core 4-bit kernels", "portable"))
    }

    /// Whether the forward's codes form (`q4_linear_fwd_mma_c_*`) computes right on this
    /// device, checked apart from [`Self::f16_mma_ok`] and only after it passed: the codes
    /// form reads its scales in the accumulator element order of an H200's fragments and
    /// writes NaN on a device with another, and then the hi / lo form runs instead.
    pub(crate) fn f16_codes_ok(&self) -> bool {
        self.f16_mma_ok()
            && *self.f16_codes_ok.get_or_init(|| {
                self.self_check(true, "f16 tensor-core forward's codes form", "hi / lo form")
            })
    }

    /// Whether the wide backward's fp16-decode variant `shader` computes right on
    /// this device ([`crate::ops::q4_wide_check`]): the device's features allow it and its
    /// self-check passed (run once per variant; a failure is logged and keeps the magic
    /// decode).
    pub(crate) fn wide_f16_ok(&self, shader: ShaderId) -> bool {
        if !self.shader_supported(shader) {
            return false;
        }
        let mut done = self.wide_f16_ok.lock().unwrap_or_else(|p| p.into_inner());
        *done.entry(shader).or_insert_with(|| {
            self.passed(
                || crate::ops::q4_wide_check::check(self, shader),
                shader.info().name,
                "the magic decode runs",
            )
        })
    }

    /// Whether the int8 tensor-core forward (`q4_linear_mma_f*`) computes right on this device
    /// ([`crate::ops::q4_mma_check::check_int8`]: limbs, MMAs, scales, split-K slices and
    /// their reduce, against f64); checked once, and a failure (or an error running the check)
    /// is logged and keeps the other kernels.
    pub(crate) fn int8_mma_ok(&self) -> bool {
        *self.int8_mma_ok.get_or_init(|| {
            self.passed(
                || crate::ops::q4_mma_check::check_int8_all(self, false),
                "the int8 tensor-core 4-bit forward",
                "other kernels run",
            )
        })
    }

    /// The int8 tensor-core forward's register-operand form (`q4_linear_mma_reg_*`) on this
    /// device: its element maps (specialization constants 3..=6) where the driver's
    /// fragments keep the m16n8k32 MMA's rows, k and columns in the invocations that kernel
    /// fills ([`crate::ops::q4_mma_check::int8_reg_layout`]) and the kernel then passes the
    /// int8 forward's self-check with them; `None` (logged) keeps the shared-memory tiles.
    pub(crate) fn int8_mma_reg_spec(&self) -> Option<[u32; 4]> {
        *self.int8_mma_reg.get_or_init(|| {
            let layout = match crate::ops::q4_mma_check::int8_reg_layout(self) {
                Ok(Ok(maps)) => maps,
                Ok(Err(why)) => {
                    log::warn!(
                        "{}: cooperative-matrix fragments unlike the m16n8k32 MMA's ({why}); the int8 forward keeps its shared-memory tiles",
                        self.ctx.description()
                    );
                    return None;
                }
                Err(e) => {
                    log::warn!(
                        "{}: the cooperative-matrix layout probe did not run ({e}); the int8 forward keeps its shared-memory tiles",
                        self.ctx.description()
                    );
                    return None;
                }
            };
            log::info!("int8 register-operand MMA element maps {layout:08x?}");
            self.passed(
                || crate::ops::q4_mma_check::check_int8_reg_all(self, false, &layout),
                "the int8 tensor-core forward's register-operand form",
                "its shared-memory tiles run",
            )
            .then_some(layout)
        })
    }

    /// Whether a self-check (`check`) passes; a failure, or an error that kept it from
    /// running, is logged as `what` failing, and `instead` running. `ETVK_SELF_CHECKS=0`
    /// skips the checks and trusts every kernel: for timing diagnostics whose shader
    /// overrides compute wrong results on purpose (the checks would replace them).
    fn passed(
        &self,
        check: impl FnOnce() -> Result<Option<String>>,
        what: &str,
        instead: &str,
    ) -> bool {
        if std::env::var("ETVK_SELF_CHECKS").is_ok_and(|v| v == "0") {
            log::warn!("ETVK_SELF_CHECKS=0: {what} runs unchecked");
            return true;
        }
        match check() {
            Ok(None) => true,
            Ok(Some(why)) => {
                log::warn!(
                    "{}: {what} failed its self-check ({why}); {instead} instead",
                    self.ctx.description()
                );
                false
            }
            Err(e) => {
                log::warn!(
                    "{}: {what}'s self-check did not run ({e}); {instead} instead",
                    self.ctx.description()
                );
                false
            }
        }
    }

    /// Runs the self-check of the codes variants (`codes`) or of all the others; logs why it
    /// failed.
    fn self_check(&self, codes: bool, what: &str, instead: &str) -> bool {
        let shared = self.ctx.caps().max_shared_memory_size;
        let list: Vec<_> = crate::ops::q4_mma_check::variants(false, shared)
            .into_iter()
            .filter(|v| v.codes == codes)
            .collect();
        self.passed(
            || crate::ops::q4_mma_check::check_all(self, &list),
            &format!("the {what}"),
            &format!("the {instead} kernels run"),
        )
    }

    /// Whether the device has every feature `shader` needs.
    pub(crate) fn shader_supported(&self, shader: ShaderId) -> bool {
        shader
            .info()
            .features
            .iter()
            .all(|f| feature_supported(self.ctx.caps(), *f).0)
    }

    /// The pipeline for `(shader, local, spec)`, compiled once per backend.
    pub(crate) fn pipeline(
        &self,
        shader: ShaderId,
        local: [u32; 3],
        spec: &[u32],
    ) -> Result<Arc<ComputePipeline>> {
        let info = shader.info();
        for f in info.features {
            let (ok, name) = feature_supported(self.ctx.caps(), *f);
            if !ok {
                return Err(unsupported(format!(
                    "shader {} needs device feature {name}, which {} lacks",
                    info.name,
                    self.ctx.info().name
                )));
            }
        }
        let key = PipelineKey {
            shader,
            local,
            spec: spec.to_vec(),
        };
        let mut cache = self
            .pipelines
            .lock()
            .map_err(|_| internal("pipeline cache mutex poisoned"))?;
        if let Some(p) = cache.get(&key) {
            return Ok(p.clone());
        }
        let replacement = spirv_override(info.name)?;
        let p = Arc::new(ComputePipeline::new(
            &self.ctx,
            info.name,
            replacement.as_deref().unwrap_or(info.spirv),
            info.num_bindings,
            info.push_constant_bytes,
            local,
            spec,
        )?);
        cache.insert(key, p.clone());
        Ok(p)
    }

    /// Error when validation reported any error message so far.
    pub(crate) fn check_validation(&self, when: &str) -> Result<()> {
        let n = self.ctx.validation_error_count();
        if n > 0 {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "{n} Vulkan validation error(s) {when}; last: {}",
                    self.ctx.last_validation_error().unwrap_or_default()
                ),
            ));
        }
        Ok(())
    }
}
