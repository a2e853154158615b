//! Instance, physical-device choice, logical device, queue, allocator, validation messenger.

use std::ffi::{c_void, CStr, CString};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ash::vk;

use crate::caps::{CoopMatShape, DeviceCaps, DeviceType};
use crate::error::{VkError, VkResult};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// How to open a [`Context`]. Filled by the runtime from its `RuntimeOptions`; this layer
/// reads no environment variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextOptions {
    /// Device selector: an enumeration index, or a case-insensitive substring of the name.
    pub device: Option<String>,
    /// Enable `VK_LAYER_KHRONOS_validation` and count error messages.
    pub validation: bool,
    /// With `validation`, also its synchronization validation: a hazard between commands
    /// that no barrier orders (e.g. two dispatches writing one buffer) is an error message.
    pub sync_validation: bool,
    /// How long a fence wait polls the fence before it sleeps in the driver, microseconds
    /// (0: no polling). The driver's wake-up can take longer than a small graph's GPU time.
    pub fence_spin_us: u64,
}

/// A physical device as enumerated, with its discovered capabilities.
#[derive(Debug, Clone)]
pub struct PhysicalDeviceInfo {
    /// Index in enumeration order (what a numeric selector picks).
    pub index: usize,
    /// Device name.
    pub name: String,
    /// Device type.
    pub device_type: DeviceType,
    /// Driver name and info (from `VkPhysicalDeviceDriverProperties`).
    pub driver: String,
    /// Capabilities and limits.
    pub caps: DeviceCaps,
    /// `None` when usable, else why not (API < 1.2, no compute queue).
    pub unusable: Option<String>,
    /// Whether the selector (or the default preference) picks this device.
    pub selected: bool,
}

/// Shared state of the debug messenger; lives in a `Box` so its address is stable for the
/// callback's user-data pointer.
struct ValidationState {
    errors: AtomicU64,
    last: Mutex<Option<String>>,
}

/// The Vulkan context: one instance, one logical device with one compute queue, and the
/// memory allocator. Every child object holds an `Arc<Context>`, so the device outlives them.
pub struct Context {
    /// [`ContextOptions::fence_spin_us`].
    fence_spin: std::time::Duration,
    entry: ash::Entry,
    instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    validation: Option<Box<ValidationState>>,
    pub(crate) physical: vk::PhysicalDevice,
    pub(crate) device: ash::Device,
    pub(crate) queue: Mutex<vk::Queue>,
    pub(crate) queue_family: u32,
    pub(crate) allocator: ManuallyDrop<vk_mem::Allocator>,
    info: PhysicalDeviceInfo,
    lost: AtomicBool,
    /// `VK_KHR_pipeline_executable_properties`, enabled only when `ETVK_PIPELINE_STATS` asks
    /// for the driver's per-pipeline statistics (registers, spills, ...).
    pub(crate) pipeline_stats: Option<ash::khr::pipeline_executable_properties::Device>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.info.name)
            .finish()
    }
}

/// The Vulkan loader, opened once per process and never closed, with one bare instance
/// that is never destroyed: the loader unloads a driver with the last instance that uses
/// it, and NVIDIA's does not load again in the same process (on an H100 a second context
/// after the first one's drop failed with ERROR_INCOMPATIBLE_DRIVER: one `etvk check` of
/// several programs, session 33).
fn load_entry() -> VkResult<ash::Entry> {
    static ENTRY: std::sync::OnceLock<Result<ash::Entry, String>> = std::sync::OnceLock::new();
    ENTRY
        .get_or_init(|| {
            // SAFETY: loading the system Vulkan loader runs its initialisers; this is the
            // documented way to use ash's `loaded` feature; the static keeps it open.
            let entry = unsafe { ash::Entry::load() }.map_err(|e| e.to_string())?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_0);
            let info = vk::InstanceCreateInfo::default().application_info(&app);
            // SAFETY: `info` lives until the call returns. The instance is deliberately
            // leaked (never destroyed, nothing created from it) to keep the drivers loaded;
            // failing to create it only loses that.
            let _keeper = unsafe { entry.create_instance(&info, None) };
            Ok(entry)
        })
        .clone()
        .map_err(VkError::LoaderMissing)
}

fn vk_err(what: &'static str, result: vk::Result) -> VkError {
    match result {
        vk::Result::ERROR_DEVICE_LOST => VkError::DeviceLost,
        vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => {
            VkError::OutOfMemory { what, result }
        }
        _ => VkError::Vk { what, result },
    }
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes a valid callback-data pointer for the duration of the call;
    // `p_message` is a NUL-terminated string or null.
    let msg = unsafe {
        if data.is_null() || (*data).p_message.is_null() {
            String::from("<no message>")
        } else {
            CStr::from_ptr((*data).p_message)
                .to_string_lossy()
                .into_owned()
        }
    };
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        log::error!("vulkan validation: {msg}");
        if !user.is_null() {
            // SAFETY: `user` is the `Box<ValidationState>` owned by the Context, which destroys
            // the messenger before dropping the box.
            let state = unsafe { &*(user as *const ValidationState) };
            state.errors.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut last) = state.last.lock() {
                *last = Some(msg);
            }
        }
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
        log::warn!("vulkan validation: {msg}");
    } else {
        log::debug!("vulkan: {msg}");
    }
    vk::FALSE
}

/// The validation layer's Vulkan header version (`spec_version`), or None without it.
fn validation_layer_version(entry: &ash::Entry) -> VkResult<Option<u32>> {
    // SAFETY: plain enumeration call on a loaded entry.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }
        .map_err(|r| vk_err("vkEnumerateInstanceLayerProperties", r))?;
    Ok(layers
        .iter()
        .find(|l| {
            l.layer_name_as_c_str()
                .map(|n| n == VALIDATION_LAYER)
                .unwrap_or(false)
        })
        .map(|l| l.spec_version))
}

/// The first Vulkan header with VK_NV_cooperative_matrix2: an older validation layer refuses
/// device creation with its feature struct (and VK_KHR_cooperative_matrix's before 1.3.255).
const COOPERATIVE_MATRIX2_HEADER: u32 = vk::make_api_version(0, 1, 3, 301);

/// The instance, and with `validation` the validation layer's header version.
fn create_instance(
    entry: &ash::Entry,
    validation: bool,
    sync_validation: bool,
) -> VkResult<(ash::Instance, Option<u32>)> {
    let layer = if validation {
        Some(validation_layer_version(entry)?.ok_or(VkError::ValidationLayerMissing)?)
    } else {
        None
    };
    // SAFETY: plain query on a loaded entry.
    let version = unsafe { entry.try_enumerate_instance_version() }
        .map_err(|r| vk_err("vkEnumerateInstanceVersion", r))?
        .unwrap_or(vk::API_VERSION_1_0);
    if version < vk::API_VERSION_1_2 {
        return Err(VkError::NoDevice(format!(
            "the Vulkan loader supports API {}.{}, etvk needs 1.2",
            vk::api_version_major(version),
            vk::api_version_minor(version)
        )));
    }
    let app_name = c"etvk";
    // 1.3 where the loader has it: the VK_NV_cooperative_matrix2 kernels are SPIR-V 1.6,
    // which needs a 1.3 device and instance; everything else asks for no more than 1.2.
    let api = if version >= vk::API_VERSION_1_3 {
        vk::API_VERSION_1_3
    } else {
        vk::API_VERSION_1_2
    };
    let app = vk::ApplicationInfo::default()
        .application_name(app_name)
        .engine_name(app_name)
        .api_version(api);
    let layer_ptrs = if validation {
        vec![VALIDATION_LAYER.as_ptr()]
    } else {
        vec![]
    };
    let ext_ptrs = if validation {
        vec![ash::ext::debug_utils::NAME.as_ptr()]
    } else {
        vec![]
    };
    let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
    let mut features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
    let mut info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_layer_names(&layer_ptrs)
        .enabled_extension_names(&ext_ptrs);
    if validation && sync_validation {
        info = info.push_next(&mut features);
    }
    // SAFETY: `info` and everything it points to live until the call returns.
    let instance =
        unsafe { entry.create_instance(&info, None) }.map_err(|r| vk_err("vkCreateInstance", r))?;
    Ok((instance, layer))
}

fn device_extensions(instance: &ash::Instance, pd: vk::PhysicalDevice) -> Vec<CString> {
    // SAFETY: `pd` was enumerated from `instance`.
    unsafe { instance.enumerate_device_extension_properties(pd) }
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.extension_name_as_c_str().ok().map(|c| c.to_owned()))
        .collect()
}

fn compute_queue_family(instance: &ash::Instance, pd: vk::PhysicalDevice) -> Option<(u32, u32)> {
    // SAFETY: `pd` was enumerated from `instance`.
    let fams = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    // Prefer a compute-only family (async compute on discrete GPUs), else any with compute.
    let pick = fams
        .iter()
        .enumerate()
        .find(|(_, f)| {
            f.queue_flags.contains(vk::QueueFlags::COMPUTE)
                && !f.queue_flags.contains(vk::QueueFlags::GRAPHICS)
        })
        .or_else(|| {
            fams.iter()
                .enumerate()
                .find(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        });
    pick.map(|(i, f)| (i as u32, f.timestamp_valid_bits))
}

/// Short name of a cooperative-matrix component type.
fn component_name(t: vk::ComponentTypeNV) -> String {
    match t {
        vk::ComponentTypeNV::FLOAT16 => "f16".into(),
        vk::ComponentTypeNV::FLOAT32 => "f32".into(),
        vk::ComponentTypeNV::FLOAT64 => "f64".into(),
        vk::ComponentTypeNV::SINT8 => "s8".into(),
        vk::ComponentTypeNV::SINT16 => "s16".into(),
        vk::ComponentTypeNV::SINT32 => "s32".into(),
        vk::ComponentTypeNV::SINT64 => "s64".into(),
        vk::ComponentTypeNV::UINT8 => "u8".into(),
        vk::ComponentTypeNV::UINT16 => "u16".into(),
        vk::ComponentTypeNV::UINT32 => "u32".into(),
        vk::ComponentTypeNV::UINT64 => "u64".into(),
        other => format!("{other:?}"),
    }
}

/// The NV cooperative matrix shapes of `pd` (subgroup scope only: the one GLSL exposes).
fn cooperative_matrix_nv_shapes(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> Vec<CoopMatShape> {
    let loader = ash::nv::cooperative_matrix::Instance::new(entry, instance);
    let f = loader
        .fp()
        .get_physical_device_cooperative_matrix_properties_nv;
    let mut count = 0u32;
    // SAFETY: `pd` belongs to `instance`, which has the extension's instance function loaded
    // (the caller checked that the device offers VK_NV_cooperative_matrix); a null array
    // asks for the count only.
    if unsafe { f(pd, &mut count, std::ptr::null_mut()) } != vk::Result::SUCCESS || count == 0 {
        return Vec::new();
    }
    let mut props = vec![vk::CooperativeMatrixPropertiesNV::default(); count as usize];
    // SAFETY: `props` holds `count` default-initialized structs (sType set), as the call
    // requires; it writes at most `count`.
    let r = unsafe { f(pd, &mut count, props.as_mut_ptr()) };
    if r != vk::Result::SUCCESS && r != vk::Result::INCOMPLETE {
        return Vec::new();
    }
    props.truncate(count as usize);
    props
        .iter()
        .filter(|p| p.scope == vk::ScopeNV::SUBGROUP)
        .map(|p| CoopMatShape {
            m: p.m_size,
            n: p.n_size,
            k: p.k_size,
            types: format!(
                "{}*{}+{}->{}",
                component_name(p.a_type),
                component_name(p.b_type),
                component_name(p.c_type),
                component_name(p.d_type)
            ),
        })
        .collect()
}

fn describe(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    index: usize,
) -> PhysicalDeviceInfo {
    let exts = device_extensions(instance, pd);
    let has_ext = |name: &CStr| exts.iter().any(|e| e.as_c_str() == name);

    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut p11 = vk::PhysicalDeviceVulkan11Properties::default();
    let mut p12 = vk::PhysicalDeviceVulkan12Properties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut driver)
        .push_next(&mut p11)
        .push_next(&mut p12);
    // SAFETY: `pd` belongs to `instance`; the chained structs outlive the call. The instance
    // is 1.2 so the *2 query and these structs are core.
    unsafe { instance.get_physical_device_properties2(pd, &mut props2) };
    let props = props2.properties;

    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let coop_nv_ext = has_ext(ash::nv::cooperative_matrix::NAME);
    let coop_khr_ext = has_ext(ash::khr::cooperative_matrix::NAME);
    let coop2_ext = has_ext(COOPERATIVE_MATRIX2_NV);
    let mut coop_nv = vk::PhysicalDeviceCooperativeMatrixFeaturesNV::default();
    let mut coop_khr = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let mut coop2 = CooperativeMatrix2FeaturesNv::default();
    let mut feats2 = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut f11)
        .push_next(&mut f12);
    if coop_nv_ext {
        feats2 = feats2.push_next(&mut coop_nv);
    }
    if coop_khr_ext && coop2_ext {
        feats2 = feats2.push_next(&mut coop_khr).push_next(&mut coop2);
    }
    // SAFETY: as above; each cooperative-matrix struct is chained only when the device
    // offers its extension.
    unsafe { instance.get_physical_device_features2(pd, &mut feats2) };
    let base = feats2.features;
    let coop_nv_ok = coop_nv_ext && coop_nv.cooperative_matrix == vk::TRUE;
    let coop2_ok = coop_khr_ext
        && coop2_ext
        && props.api_version >= vk::API_VERSION_1_3
        && coop_khr.cooperative_matrix == vk::TRUE
        && coop2.usable()
        && f12.buffer_device_address == vk::TRUE
        && f12.vulkan_memory_model == vk::TRUE
        && f12.vulkan_memory_model_device_scope == vk::TRUE
        && f12.shader_float16 == vk::TRUE
        && f11.storage_buffer16_bit_access == vk::TRUE;
    let coop_nv_shapes = if coop_nv_ok {
        cooperative_matrix_nv_shapes(entry, instance, pd)
    } else {
        Vec::new()
    };

    let name = props
        .device_name_as_c_str()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let driver_name = driver
        .driver_name_as_c_str()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let driver_info = driver
        .driver_info_as_c_str()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let queue = compute_queue_family(instance, pd);
    let limits = props.limits;
    // The instance asks for API 1.2, so 1.3-core features still need their extension.
    let integer_dot = has_ext(ash::khr::shader_integer_dot_product::NAME);
    // Whether compute shaders may use subgroup operations of kind `op`.
    let subgroup_op = |op: vk::SubgroupFeatureFlags| {
        p11.subgroup_supported_operations.contains(op)
            && p11
                .subgroup_supported_stages
                .contains(vk::ShaderStageFlags::COMPUTE)
    };
    let caps = DeviceCaps {
        api_version: props.api_version,
        shader_float16: f12.shader_float16 == vk::TRUE,
        shader_int8: f12.shader_int8 == vk::TRUE,
        shader_int16: base.shader_int16 == vk::TRUE,
        shader_int64: base.shader_int64 == vk::TRUE,
        storage_buffer_16bit: f11.storage_buffer16_bit_access == vk::TRUE,
        storage_buffer_8bit: f12.storage_buffer8_bit_access == vk::TRUE,
        // Enabled only with its device scope: with the model on, validation holds every
        // shader's device-scope barriers (the wide backward's) to that feature too.
        vulkan_memory_model: f12.vulkan_memory_model == vk::TRUE
            && f12.vulkan_memory_model_device_scope == vk::TRUE,
        subgroup_size: p11.subgroup_size,
        subgroup_shuffle: subgroup_op(vk::SubgroupFeatureFlags::SHUFFLE),
        subgroup_arithmetic: subgroup_op(vk::SubgroupFeatureFlags::ARITHMETIC),
        cooperative_matrix_khr: coop_khr_ext,
        cooperative_matrix2_nv: coop2_ok,
        cooperative_matrix_nv: coop_nv_ok,
        cooperative_matrix_nv_shapes: coop_nv_shapes,
        integer_dot_product: integer_dot,
        denorm_preserve_float32: p12.shader_denorm_preserve_float32 == vk::TRUE,
        denorm_preserve_float16: p12.shader_denorm_preserve_float16 == vk::TRUE,
        max_workgroup_count: limits.max_compute_work_group_count,
        max_workgroup_size: limits.max_compute_work_group_size,
        max_workgroup_invocations: limits.max_compute_work_group_invocations,
        max_storage_buffer_range: limits.max_storage_buffer_range,
        max_push_constants_size: limits.max_push_constants_size,
        max_shared_memory_size: limits.max_compute_shared_memory_size,
        max_bound_descriptor_sets: limits.max_bound_descriptor_sets,
        timestamp_period_ns: limits.timestamp_period,
        timestamps: queue.map(|(_, bits)| bits > 0).unwrap_or(false),
        non_coherent_atom_size: limits.non_coherent_atom_size,
    };
    let unusable = if props.api_version < vk::API_VERSION_1_2 {
        Some(format!(
            "supports Vulkan {}.{} only (etvk needs 1.2)",
            vk::api_version_major(props.api_version),
            vk::api_version_minor(props.api_version)
        ))
    } else if queue.is_none() {
        Some("no compute queue".to_string())
    } else {
        None
    };
    PhysicalDeviceInfo {
        index,
        name,
        device_type: DeviceType::from_vk(props.device_type),
        driver: format!("{driver_name} {driver_info}").trim().to_string(),
        caps,
        unusable,
        selected: false,
    }
}

/// Mark the device `selector` (or the default preference) picks; error when none fits.
fn select(infos: &mut [PhysicalDeviceInfo], selector: Option<&str>) -> VkResult<usize> {
    let chosen = match selector {
        Some(sel) => {
            let sel_trim = sel.trim();
            let by_index = sel_trim.parse::<usize>().ok().and_then(|i| infos.iter().position(|d| d.index == i));
            let lower = sel_trim.to_lowercase();
            let found = by_index.or_else(|| infos.iter().position(|d| d.name.to_lowercase().contains(&lower)));
            let i = found.ok_or_else(|| {
                let names: Vec<String> = infos.iter().map(|d| format!("{}: {}", d.index, d.name)).collect();
                VkError::NoDevice(format!("device selector {sel:?} matches none of [{}]", names.join(", ")))
            })?;
            if let Some(why) = &infos[i].unusable {
                return Err(VkError::NoDevice(format!("selected device {:?} {why}", infos[i].name)));
            }
            i
        }
        None => infos
            .iter()
            .enumerate()
            .filter(|(_, d)| d.unusable.is_none())
            .min_by_key(|(_, d)| (d.device_type.preference(), d.index))
            .map(|(i, _)| i)
            .ok_or_else(|| {
                VkError::NoDevice(if infos.is_empty() {
                    "the loader reports no physical devices (Debian: apt-get install mesa-vulkan-drivers for lavapipe)".to_string()
                } else {
                    let why: Vec<String> = infos
                        .iter()
                        .map(|d| format!("{}: {}", d.name, d.unusable.clone().unwrap_or_default()))
                        .collect();
                    why.join("; ")
                })
            })?,
    };
    infos[chosen].selected = true;
    Ok(chosen)
}

fn enumerate(
    entry: &ash::Entry,
    instance: &ash::Instance,
) -> VkResult<(Vec<vk::PhysicalDevice>, Vec<PhysicalDeviceInfo>)> {
    // SAFETY: plain enumeration on a live instance.
    let pds = unsafe { instance.enumerate_physical_devices() }
        .map_err(|r| vk_err("vkEnumeratePhysicalDevices", r))?;
    let infos = pds
        .iter()
        .enumerate()
        .map(|(i, pd)| describe(entry, instance, *pd, i))
        .collect();
    Ok((pds, infos))
}

/// Enumerate physical devices and mark the one `selector` would pick (no device is created).
pub fn list_physical_devices(selector: Option<&str>) -> VkResult<Vec<PhysicalDeviceInfo>> {
    let entry = load_entry()?;
    let (instance, _) = create_instance(&entry, false, false)?;
    let result = enumerate(&entry, &instance).map(|(_, mut infos)| {
        // A selector that matches nothing still lists the devices (none marked).
        let _ = select(&mut infos, selector);
        infos
    });
    // SAFETY: no child objects of this temporary instance exist.
    unsafe { instance.destroy_instance(None) };
    result
}

impl Context {
    /// Open the instance (validation if asked), pick a device, create it with one compute
    /// queue and every useful feature it has, and the allocator.
    pub fn new(options: &ContextOptions) -> VkResult<Arc<Context>> {
        let entry = load_entry()?;
        let (instance, layer) =
            create_instance(&entry, options.validation, options.sync_validation)?;
        // From here on, failures must destroy what was created: build in a closure.
        let mut validation: Option<Box<ValidationState>> = None;
        let mut debug = None;
        if options.validation {
            let state = Box::new(ValidationState {
                errors: AtomicU64::new(0),
                last: Mutex::new(None),
            });
            let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                        | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(debug_callback))
                .user_data(&*state as *const ValidationState as *mut c_void);
            // SAFETY: the instance was created with VK_EXT_debug_utils; the user-data box
            // outlives the messenger (destroyed first in Drop).
            match unsafe { loader.create_debug_utils_messenger(&info, None) } {
                Ok(m) => {
                    debug = Some((loader, m));
                    validation = Some(state);
                }
                Err(r) => {
                    // SAFETY: nothing else was created from the instance.
                    unsafe { instance.destroy_instance(None) };
                    return Err(vk_err("vkCreateDebugUtilsMessengerEXT", r));
                }
            }
        }
        let destroy_instance =
            |debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>| {
                // SAFETY: called only on failure paths before any device exists.
                unsafe {
                    if let Some((l, m)) = debug {
                        l.destroy_debug_utils_messenger(m, None);
                    }
                    instance.destroy_instance(None);
                }
            };
        let (pds, mut infos) = match enumerate(&entry, &instance) {
            Ok(v) => v,
            Err(e) => {
                destroy_instance(debug);
                return Err(e);
            }
        };
        let chosen = match select(&mut infos, options.device.as_deref()) {
            Ok(i) => i,
            Err(e) => {
                destroy_instance(debug);
                return Err(e);
            }
        };
        let pd = pds[chosen];
        let mut info = infos.swap_remove(chosen);
        if let Some(layer) = layer.filter(|_| info.caps.cooperative_matrix2_nv) {
            if layer < COOPERATIVE_MATRIX2_HEADER {
                log::info!(
                    "etvk: VK_NV_cooperative_matrix2 left off: the validation layer ({}.{}.{}) predates it",
                    vk::api_version_major(layer),
                    vk::api_version_minor(layer),
                    vk::api_version_patch(layer)
                );
                info.caps.cooperative_matrix2_nv = false;
            }
        }
        let (queue_family, _) = compute_queue_family(&instance, pd).unwrap_or((0, 0));
        let want_stats = std::env::var("ETVK_PIPELINE_STATS")
            .is_ok_and(|v| !v.is_empty() && v != "0")
            && has_device_extension(
                &instance,
                pd,
                ash::khr::pipeline_executable_properties::NAME,
            );
        // Timing diagnostics (shader overrides reading clockRealtime2x32EXT): the device
        // clock, where the device has it.
        let want_clock = std::env::var("ETVK_SHADER_CLOCK").is_ok_and(|v| v == "1")
            && has_device_extension(&instance, pd, ash::khr::shader_clock::NAME)
            && device_clock_supported(&instance, pd);
        if want_clock {
            log::info!("etvk: VK_KHR_shader_clock enabled (ETVK_SHADER_CLOCK=1)");
        }
        let wants = (want_stats, want_clock);
        let device = match create_device(&instance, pd, queue_family, &info.caps, wants) {
            Ok(d) => d,
            Err(e) => {
                destroy_instance(debug);
                return Err(e);
            }
        };
        // SAFETY: the family index and queue 0 were requested at device creation.
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        let mut alloc_info = vk_mem::AllocatorCreateInfo::new(&instance, &device, pd);
        alloc_info.vulkan_api_version = vk::API_VERSION_1_2;
        // SAFETY: instance, device and physical device are valid and outlive the allocator
        // (dropped first in Context::drop).
        let allocator = match unsafe { vk_mem::Allocator::new(alloc_info) } {
            Ok(a) => a,
            Err(r) => {
                // SAFETY: no children of the device exist yet.
                unsafe { device.destroy_device(None) };
                destroy_instance(debug);
                return Err(vk_err("vmaCreateAllocator", r));
            }
        };
        log::info!(
            "etvk: using Vulkan device {:?} ({}, {})",
            info.name,
            info.device_type.name(),
            info.driver
        );
        let pipeline_stats = want_stats
            .then(|| ash::khr::pipeline_executable_properties::Device::new(&instance, &device));
        Ok(Arc::new(Context {
            pipeline_stats,
            entry,
            instance,
            debug,
            validation,
            physical: pd,
            device,
            queue: Mutex::new(queue),
            queue_family,
            allocator: ManuallyDrop::new(allocator),
            info,
            lost: AtomicBool::new(false),
            fence_spin: std::time::Duration::from_micros(options.fence_spin_us),
        }))
    }

    /// The chosen device's description and capabilities.
    pub fn info(&self) -> &PhysicalDeviceInfo {
        &self.info
    }

    /// Capabilities and limits of the chosen device.
    pub fn caps(&self) -> &DeviceCaps {
        &self.info.caps
    }

    /// One line: name, type, driver.
    pub fn description(&self) -> String {
        format!(
            "{} ({}, {})",
            self.info.name,
            self.info.device_type.name(),
            self.info.driver
        )
    }

    /// Number of validation error messages seen so far (0 without validation).
    pub fn validation_error_count(&self) -> u64 {
        self.validation
            .as_ref()
            .map(|v| v.errors.load(Ordering::SeqCst))
            .unwrap_or(0)
    }

    /// The most recent validation error message, if any.
    pub fn last_validation_error(&self) -> Option<String> {
        self.validation
            .as_ref()
            .and_then(|v| v.last.lock().ok().and_then(|l| l.clone()))
    }

    /// How long a fence wait polls before it sleeps in the driver
    /// ([`ContextOptions::fence_spin_us`]).
    pub fn fence_spin(&self) -> std::time::Duration {
        self.fence_spin
    }
    /// Whether validation layers are enabled.
    pub fn validation_enabled(&self) -> bool {
        self.validation.is_some()
    }

    /// Fails with [`VkError::DeviceLost`] once the device has been lost.
    pub fn ensure_alive(&self) -> VkResult<()> {
        if self.lost.load(Ordering::SeqCst) {
            Err(VkError::DeviceLost)
        } else {
            Ok(())
        }
    }

    /// Map a Vulkan result to a typed error, latching device loss.
    pub(crate) fn check<T>(&self, what: &'static str, r: Result<T, vk::Result>) -> VkResult<T> {
        r.map_err(|res| {
            if res == vk::Result::ERROR_DEVICE_LOST {
                self.lost.store(true, Ordering::SeqCst);
            }
            vk_err(what, res)
        })
    }

    /// The raw ash device (for code inside this crate and tests that need it).
    pub fn raw_device(&self) -> &ash::Device {
        &self.device
    }

    /// The loader entry (kept alive with the context).
    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }

    /// Wait until the device is idle (used before teardown of graphs).
    pub fn wait_idle(&self) -> VkResult<()> {
        self.ensure_alive()?;
        let _q = self
            .queue
            .lock()
            .map_err(|_| VkError::Invalid("queue mutex poisoned".into()))?;
        // SAFETY: the queue lock is held so no submission races with the wait.
        let r = unsafe { self.device.device_wait_idle() };
        self.check("vkDeviceWaitIdle", r)
    }
}

/// `VK_NV_cooperative_matrix2`, which ash 0.38 (Vulkan headers 1.3.281) predates.
const COOPERATIVE_MATRIX2_NV: &CStr = c"VK_NV_cooperative_matrix2";

/// `VkPhysicalDeviceCooperativeMatrix2FeaturesNV`, laid out as the Vulkan headers declare it
/// (ash 0.38 predates the extension).
#[repr(C)]
#[derive(Clone, Copy)]
struct CooperativeMatrix2FeaturesNv {
    s_type: vk::StructureType,
    p_next: *mut std::ffi::c_void,
    workgroup_scope: vk::Bool32,
    flexible_dimensions: vk::Bool32,
    reductions: vk::Bool32,
    conversions: vk::Bool32,
    per_element_operations: vk::Bool32,
    tensor_addressing: vk::Bool32,
    block_loads: vk::Bool32,
}

impl Default for CooperativeMatrix2FeaturesNv {
    fn default() -> Self {
        Self {
            // VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV
            s_type: vk::StructureType::from_raw(1_000_593_000),
            p_next: std::ptr::null_mut(),
            workgroup_scope: vk::FALSE,
            flexible_dimensions: vk::FALSE,
            reductions: vk::FALSE,
            conversions: vk::FALSE,
            per_element_operations: vk::FALSE,
            tensor_addressing: vk::FALSE,
            block_loads: vk::FALSE,
        }
    }
}

impl CooperativeMatrix2FeaturesNv {
    /// Everything the etvk kernels use (`shaders/q4_linear_cm2.comp`).
    fn usable(&self) -> bool {
        [
            self.workgroup_scope,
            self.flexible_dimensions,
            self.per_element_operations,
            self.tensor_addressing,
            self.block_loads,
        ]
        .iter()
        .all(|&f| f == vk::TRUE)
    }

    /// The features [`Self::usable`] checks, to enable at device creation.
    fn enabled() -> Self {
        Self {
            workgroup_scope: vk::TRUE,
            flexible_dimensions: vk::TRUE,
            per_element_operations: vk::TRUE,
            tensor_addressing: vk::TRUE,
            block_loads: vk::TRUE,
            ..Self::default()
        }
    }
}

// SAFETY: the struct starts with sType / pNext like every Vulkan extension struct and is the
// one VK_NV_cooperative_matrix2 chains into VkPhysicalDeviceFeatures2 and VkDeviceCreateInfo.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for CooperativeMatrix2FeaturesNv {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for CooperativeMatrix2FeaturesNv {}

fn create_device(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    queue_family: u32,
    caps: &DeviceCaps,
    (pipeline_stats, device_clock): (bool, bool),
) -> VkResult<ash::Device> {
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(queue_family)
        .queue_priorities(&priorities)];
    // Enable exactly what the device reports, so shaders can rely on `caps`.
    let base = vk::PhysicalDeviceFeatures::default()
        .shader_int16(caps.shader_int16)
        .shader_int64(caps.shader_int64);
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default()
        .storage_buffer16_bit_access(caps.storage_buffer_16bit);
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
        .shader_float16(caps.shader_float16)
        .shader_int8(caps.shader_int8)
        .storage_buffer8_bit_access(caps.storage_buffer_8bit)
        .vulkan_memory_model(caps.vulkan_memory_model)
        .vulkan_memory_model_device_scope(caps.vulkan_memory_model);
    let mut dot = vk::PhysicalDeviceShaderIntegerDotProductFeatures::default()
        .shader_integer_dot_product(true);
    let mut coop_nv =
        vk::PhysicalDeviceCooperativeMatrixFeaturesNV::default().cooperative_matrix(true);
    let mut coop_khr =
        vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
    let mut coop2 = CooperativeMatrix2FeaturesNv::enabled();
    if caps.cooperative_matrix2_nv {
        f12 = f12.buffer_device_address(true);
    }
    let mut ext_names: Vec<*const std::ffi::c_char> = Vec::new();
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_features(&base)
        .push_next(&mut f11)
        .push_next(&mut f12);
    if caps.integer_dot_product {
        ext_names.push(ash::khr::shader_integer_dot_product::NAME.as_ptr());
        info = info.push_next(&mut dot);
    }
    if caps.cooperative_matrix_nv {
        ext_names.push(ash::nv::cooperative_matrix::NAME.as_ptr());
        info = info.push_next(&mut coop_nv);
    }
    if caps.cooperative_matrix2_nv {
        ext_names.push(ash::khr::cooperative_matrix::NAME.as_ptr());
        ext_names.push(COOPERATIVE_MATRIX2_NV.as_ptr());
        info = info.push_next(&mut coop_khr).push_next(&mut coop2);
    }
    let mut stats = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
        .pipeline_executable_info(true);
    if pipeline_stats {
        ext_names.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
        info = info.push_next(&mut stats);
    }
    let mut clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default().shader_device_clock(true);
    if device_clock {
        ext_names.push(ash::khr::shader_clock::NAME.as_ptr());
        info = info.push_next(&mut clock);
    }
    info = info.enabled_extension_names(&ext_names);
    // SAFETY: `info` and all chained structs/arrays live until the call returns; every
    // feature enabled was reported supported by this physical device.
    let r = unsafe { instance.create_device(pd, &info, None) };
    r.map_err(|r| vk_err("vkCreateDevice", r))
}

/// Whether physical device `pd` reports `shaderDeviceClock` (VK_KHR_shader_clock present).
fn device_clock_supported(instance: &ash::Instance, pd: vk::PhysicalDevice) -> bool {
    let mut clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default();
    let mut feats = vk::PhysicalDeviceFeatures2::default().push_next(&mut clock);
    // SAFETY: `pd` was enumerated from `instance`, which is alive; the chained struct lives
    // until the call returns and its extension is present on `pd`.
    unsafe { instance.get_physical_device_features2(pd, &mut feats) };
    clock.shader_device_clock == vk::TRUE
}

/// Whether physical device `pd` offers extension `name`.
fn has_device_extension(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    name: &std::ffi::CStr,
) -> bool {
    // SAFETY: `pd` was enumerated from `instance`, which is alive.
    let exts = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    exts.iter()
        .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: children hold an Arc<Context>, so none is alive now. Order: allocator,
        // device, messenger, instance; each destroyed exactly once.
        unsafe {
            let _ = self.device.device_wait_idle();
            ManuallyDrop::drop(&mut self.allocator);
            self.device.destroy_device(None);
            if let Some((loader, m)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
        // `validation` (the callback's user data) drops after the messenger is gone.
        let _ = self.physical;
    }
}
