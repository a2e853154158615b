//! Compute pipelines (SPIR-V + specialization + push constants) and descriptor pools.

use std::sync::Arc;

use ash::vk;

use crate::context::Context;
use crate::error::{VkError, VkResult};
use crate::memory::Buffer;

/// A compute pipeline whose layout is `num_bindings` storage buffers (set 0, bindings
/// 0..n) and `push_constant_bytes` of push constants.
///
/// Specialization constants: ids 0, 1, 2 are the local workgroup size (shaders declare
/// `layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;`), ids 3.. are
/// the extra `u32` constants given to [`ComputePipeline::new`].
pub struct ComputePipeline {
    ctx: Arc<Context>,
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    num_bindings: u32,
    push_constant_bytes: u32,
    local_size: [u32; 3],
    name: String,
}

impl std::fmt::Debug for ComputePipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputePipeline")
            .field("name", &self.name)
            .field("local_size", &self.local_size)
            .finish()
    }
}

impl ComputePipeline {
    /// Build a pipeline. `local_size` is checked against the device limits.
    pub fn new(
        ctx: &Arc<Context>,
        name: &str,
        spirv: &[u32],
        num_bindings: u32,
        push_constant_bytes: u32,
        local_size: [u32; 3],
        extra_spec: &[u32],
    ) -> VkResult<ComputePipeline> {
        ctx.ensure_alive()?;
        let caps = ctx.caps();
        let invocations = local_size.iter().map(|&v| v as u64).product::<u64>();
        if local_size
            .iter()
            .zip(caps.max_workgroup_size.iter())
            .any(|(a, b)| *a == 0 || a > b)
            || invocations > caps.max_workgroup_invocations as u64
        {
            return Err(VkError::Invalid(format!(
                "shader {name}: local size {local_size:?} exceeds device limits (size {:?}, invocations {})",
                caps.max_workgroup_size, caps.max_workgroup_invocations
            )));
        }
        if push_constant_bytes > caps.max_push_constants_size || push_constant_bytes & 3 != 0 {
            return Err(VkError::Invalid(format!(
                "shader {name}: {push_constant_bytes} push-constant bytes (must be a multiple of 4, at most {})",
                caps.max_push_constants_size
            )));
        }
        let device = &ctx.device;
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..num_bindings)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let dsl_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: valid create info; destroyed in Drop or on the failure paths below.
        let set_layout = ctx.check("vkCreateDescriptorSetLayout", unsafe {
            device.create_descriptor_set_layout(&dsl_info, None)
        })?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(push_constant_bytes)];
        let set_layouts = [set_layout];
        let mut pl_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
        if push_constant_bytes > 0 {
            pl_info = pl_info.push_constant_ranges(&ranges);
        }
        // SAFETY: valid create info referencing a live set layout.
        let layout = match ctx.check("vkCreatePipelineLayout", unsafe {
            device.create_pipeline_layout(&pl_info, None)
        }) {
            Ok(l) => l,
            Err(e) => {
                // SAFETY: created above, unused.
                unsafe { device.destroy_descriptor_set_layout(set_layout, None) };
                return Err(e);
            }
        };
        let cleanup = |module: Option<vk::ShaderModule>| {
            // SAFETY: objects created above and not used by anything else yet.
            unsafe {
                if let Some(m) = module {
                    device.destroy_shader_module(m, None);
                }
                device.destroy_pipeline_layout(layout, None);
                device.destroy_descriptor_set_layout(set_layout, None);
            }
        };
        let module_info = vk::ShaderModuleCreateInfo::default().code(spirv);
        // SAFETY: `spirv` is validated SPIR-V produced by the shader build (spirv-val).
        let module = match ctx.check("vkCreateShaderModule", unsafe {
            device.create_shader_module(&module_info, None)
        }) {
            Ok(m) => m,
            Err(e) => {
                cleanup(None);
                return Err(e);
            }
        };
        let mut spec_data: Vec<u32> = local_size.to_vec();
        spec_data.extend_from_slice(extra_spec);
        let entries: Vec<vk::SpecializationMapEntry> = (0..spec_data.len() as u32)
            .map(|i| {
                vk::SpecializationMapEntry::default()
                    .constant_id(i)
                    .offset(i * 4)
                    .size(4)
            })
            .collect();
        let spec_bytes: Vec<u8> = spec_data.iter().flat_map(|v| v.to_le_bytes()).collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&spec_bytes);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&spec);
        let flags = if ctx.pipeline_stats.is_some() {
            // Internal representations (ETVK_PIPELINE_IR) are kept only when asked for at
            // creation.
            let ir = if std::env::var_os("ETVK_PIPELINE_IR").is_some() {
                vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR
            } else {
                vk::PipelineCreateFlags::empty()
            };
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR | ir
        } else {
            vk::PipelineCreateFlags::empty()
        };
        let info = [vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(layout)];
        // SAFETY: all referenced objects are alive for the call.
        let r = unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) };
        // SAFETY: the module is no longer needed once the pipeline exists (or failed).
        unsafe { device.destroy_shader_module(module, None) };
        let pipeline = match ctx.check("vkCreateComputePipelines", r.map_err(|(_, e)| e)) {
            Ok(p) => p[0],
            Err(e) => {
                cleanup(None);
                return Err(e);
            }
        };
        if let Some(stats) = &ctx.pipeline_stats {
            print_pipeline_stats(stats, pipeline, name, local_size, extra_spec);
        }
        Ok(ComputePipeline {
            ctx: ctx.clone(),
            pipeline,
            layout,
            set_layout,
            num_bindings,
            push_constant_bytes,
            local_size,
            name: name.to_string(),
        })
    }

    /// Number of storage-buffer bindings.
    pub fn num_bindings(&self) -> u32 {
        self.num_bindings
    }
    /// Push-constant bytes the pipeline layout declares.
    pub fn push_constant_bytes(&self) -> u32 {
        self.push_constant_bytes
    }
    /// Local workgroup size it was specialized with.
    pub fn local_size(&self) -> [u32; 3] {
        self.local_size
    }
    /// Shader name (for errors and profiles).
    pub fn name(&self) -> &str {
        &self.name
    }
    pub(crate) fn raw(&self) -> (vk::Pipeline, vk::PipelineLayout) {
        (self.pipeline, self.layout)
    }
}

impl Drop for ComputePipeline {
    fn drop(&mut self) {
        // SAFETY: owners drop pipelines only after the command buffers using them completed.
        unsafe {
            self.ctx.device.destroy_pipeline(self.pipeline, None);
            self.ctx.device.destroy_pipeline_layout(self.layout, None);
            self.ctx
                .device
                .destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

/// A descriptor set allocated from a [`DescriptorPool`]; valid while the pool lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorSet(pub(crate) vk::DescriptorSet);

/// A pool of storage-buffer descriptor sets, freed all at once on drop.
pub struct DescriptorPool {
    ctx: Arc<Context>,
    pool: vk::DescriptorPool,
    max_sets: u32,
    allocated: u32,
}

impl DescriptorPool {
    /// A pool for `max_sets` sets totalling at most `max_buffers` storage-buffer bindings.
    pub fn new(ctx: &Arc<Context>, max_sets: u32, max_buffers: u32) -> VkResult<DescriptorPool> {
        ctx.ensure_alive()?;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(max_buffers.max(1))];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(max_sets.max(1))
            .pool_sizes(&sizes);
        // SAFETY: valid create info; destroyed in Drop.
        let pool = ctx.check("vkCreateDescriptorPool", unsafe {
            ctx.device.create_descriptor_pool(&info, None)
        })?;
        Ok(DescriptorPool {
            ctx: ctx.clone(),
            pool,
            max_sets: max_sets.max(1),
            allocated: 0,
        })
    }

    /// Allocate a set for `pipeline` and bind `buffers[i]` (whole range) at binding `i`.
    pub fn allocate(
        &mut self,
        pipeline: &ComputePipeline,
        buffers: &[&Buffer],
    ) -> VkResult<DescriptorSet> {
        self.ctx.ensure_alive()?;
        if buffers.len() != pipeline.num_bindings as usize {
            return Err(VkError::Invalid(format!(
                "shader {}: {} buffers bound, layout has {} bindings",
                pipeline.name,
                buffers.len(),
                pipeline.num_bindings
            )));
        }
        let range_limit = self.ctx.caps().max_storage_buffer_range as u64;
        if let Some(b) = buffers.iter().find(|b| b.size() > range_limit) {
            return Err(VkError::Invalid(format!(
                "shader {}: a {}-byte binding exceeds maxStorageBufferRange ({range_limit})",
                pipeline.name,
                b.size()
            )));
        }
        if self.allocated >= self.max_sets {
            return Err(VkError::Invalid(format!(
                "descriptor pool exhausted ({} sets)",
                self.max_sets
            )));
        }
        let layouts = [pipeline.set_layout];
        let info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.pool)
            .set_layouts(&layouts);
        // SAFETY: pool and layout are alive; the pool was sized by the caller.
        let sets = self.ctx.check("vkAllocateDescriptorSets", unsafe {
            self.ctx.device.allocate_descriptor_sets(&info)
        })?;
        let set = sets[0];
        self.allocated += 1;
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = buffers
            .iter()
            .map(|b| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(b.handle())
                    .offset(0)
                    .range(vk::WHOLE_SIZE)]
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set is not in use by any pending command buffer (just allocated).
        unsafe { self.ctx.device.update_descriptor_sets(&writes, &[]) };
        Ok(DescriptorSet(set))
    }
}

impl Drop for DescriptorPool {
    fn drop(&mut self) {
        // SAFETY: owners drop the pool after their last submission completed.
        unsafe { self.ctx.device.destroy_descriptor_pool(self.pool, None) };
    }
}

/// Print the driver's statistics of `pipeline` to stderr (`ETVK_PIPELINE_STATS=1`: register
/// counts, spills, shared memory, whatever the driver reports), for kernel tuning.
fn print_pipeline_stats(
    stats: &ash::khr::pipeline_executable_properties::Device,
    pipeline: vk::Pipeline,
    name: &str,
    local_size: [u32; 3],
    extra_spec: &[u32],
) {
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    // SAFETY: `pipeline` was just created with CAPTURE_STATISTICS on a device with the
    // extension and feature enabled.
    let execs = unsafe { stats.get_pipeline_executable_properties(&info) }.unwrap_or_default();
    for i in 0..execs.len() as u32 {
        let ei = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(i);
        // SAFETY: as above; `i` < the executable count just returned.
        let list = unsafe { stats.get_pipeline_executable_statistics(&ei) }.unwrap_or_default();
        let parts: Vec<String> = list
            .iter()
            .map(|st| {
                let n = st
                    .name_as_c_str()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // SAFETY: the union member read is the one `format` names.
                let v = unsafe {
                    match st.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                            st.value.b32.to_string()
                        }
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => st.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => {
                            st.value.u64.to_string()
                        }
                        _ => st.value.f64.to_string(),
                    }
                };
                format!("{n}={v}")
            })
            .collect();
        eprintln!(
            "pipeline stats {name} local {local_size:?} spec {extra_spec:?}: {}",
            parts.join(", ")
        );
        // ETVK_PIPELINE_IR=DIR also writes the driver's internal representations (e.g.
        // machine code), when it offers any, to DIR/<name>.<index>.txt.
        if let Some(dir) = std::env::var_os("ETVK_PIPELINE_IR") {
            write_internal_representations(stats, &ei, name, std::path::Path::new(&dir));
        }
    }
}

fn write_internal_representations(
    stats: &ash::khr::pipeline_executable_properties::Device,
    ei: &vk::PipelineExecutableInfoKHR<'_>,
    name: &str,
    dir: &std::path::Path,
) {
    // Two-call idiom by hand: ash's wrapper cannot size the data buffers it must point to.
    let fp = stats.fp();
    let device = stats.device();
    let mut count = 0u32;
    // SAFETY: a count query with a null array.
    let r = unsafe {
        (fp.get_pipeline_executable_internal_representations_khr)(
            device,
            ei,
            &mut count,
            std::ptr::null_mut(),
        )
    };
    if r != vk::Result::SUCCESS || count == 0 {
        eprintln!("pipeline IR {name}: none offered ({r:?}, {count})");
        return;
    }
    let mut reps = vec![vk::PipelineExecutableInternalRepresentationKHR::default(); count as usize];
    // The same call fills the entries' sizes (null data pointers), then their data.
    let fill = |reps: &mut [vk::PipelineExecutableInternalRepresentationKHR<'_>], what: &str| {
        let mut n = reps.len() as u32;
        // SAFETY: `reps` holds `n` entries whose data pointers are null or point to buffers
        // of the sizes the driver reported for them.
        let r = unsafe {
            (fp.get_pipeline_executable_internal_representations_khr)(
                device,
                ei,
                &mut n,
                reps.as_mut_ptr(),
            )
        };
        let ok = r == vk::Result::SUCCESS || r == vk::Result::INCOMPLETE;
        if !ok {
            eprintln!("pipeline IR {name}: {what} query failed ({r:?})");
        }
        ok
    };
    if !fill(&mut reps, "size") {
        return;
    }
    let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
    for (r, b) in reps.iter_mut().zip(bufs.iter_mut()) {
        r.p_data = b.as_mut_ptr().cast();
    }
    if !fill(&mut reps, "data") {
        return;
    }
    let _ = std::fs::create_dir_all(dir);
    for (i, (r, b)) in reps.iter().zip(&bufs).enumerate() {
        let title = r
            .name_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = dir.join(format!("{name}.{i}.txt"));
        let body = if r.is_text == vk::TRUE {
            String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[])).into_owned()
        } else {
            format!("({} bytes of binary data)", b.len())
        };
        let _ = std::fs::write(&path, format!("{title}\n{body}"));
        eprintln!("pipeline IR {name}: {title} -> {}", path.display());
    }
}
