//! Opening the etvk plugin (`libetvk.so`) and calling it through the C ABI of `etvk-abi`.
//!
//! This is the only module with `unsafe`: every call crosses into the plugin.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use etvk_abi::{
    EtvkArg, EtvkBackend, EtvkCompileSpec, EtvkDelegate, EtvkProfileEntry, EtvkStatus,
    FnAbiVersion, FnBackendCreate, FnBackendDestroy, FnDelegateDestroy, FnDelegateExecute,
    FnDelegateInit, FnDelegateProfile, FnDelegateSetProfiling, FnLastError, ETVK_ABI_VERSION,
    ETVK_PROFILE_NAME_LEN,
};

use crate::error::{HostError, Result};

/// Environment variable naming the plugin file.
pub const PLUGIN_ENV: &str = "ETVK_PLUGIN";

/// The places the plugin is looked for, in order: `explicit`, else `$ETVK_PLUGIN`, else the
/// platform's file name (`libetvk.so`) next to the current executable and in its parent
/// directory (cargo puts test binaries in `target/<profile>/deps`).
pub fn plugin_candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit {
        return vec![p.to_path_buf()];
    }
    if let Some(p) = std::env::var_os(PLUGIN_ENV).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let name = libloading::library_filename("etvk");
    let mut out = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        out.push(dir.join(&name));
        if let Some(parent) = dir.parent() {
            out.push(parent.join(&name));
        }
    }
    out
}

/// The plugin's entry points, resolved once.
#[derive(Clone, Copy)]
struct Fns {
    last_error: FnLastError,
    backend_create: FnBackendCreate,
    backend_destroy: FnBackendDestroy,
    delegate_init: FnDelegateInit,
    delegate_execute: FnDelegateExecute,
    delegate_destroy: FnDelegateDestroy,
    delegate_profile: FnDelegateProfile,
    delegate_set_profiling: FnDelegateSetProfiling,
}

/// An opened, version-checked etvk plugin.
pub struct Plugin {
    path: PathBuf,
    fns: Fns,
    // Declared last so it is dropped (unloaded) after everything above; handles created
    // from this plugin hold an `Arc<Plugin>`, so it outlives them too.
    _lib: libloading::Library,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin").field("path", &self.path).finish()
    }
}

fn status_name(s: EtvkStatus) -> &'static str {
    match s {
        EtvkStatus::Ok => "Ok",
        EtvkStatus::InvalidArgument => "InvalidArgument",
        EtvkStatus::InvalidProgram => "InvalidProgram",
        EtvkStatus::Unsupported => "Unsupported",
        EtvkStatus::DeviceError => "DeviceError",
        EtvkStatus::DeviceLost => "DeviceLost",
        EtvkStatus::OutOfMemory => "OutOfMemory",
        EtvkStatus::Internal => "Internal",
    }
}

impl Plugin {
    /// Find and open the plugin (see [`plugin_candidates`]); a missing plugin is an error
    /// naming every path tried.
    pub fn load(explicit: Option<&Path>) -> Result<Arc<Plugin>> {
        let candidates = plugin_candidates(explicit);
        match candidates.iter().find(|p| p.is_file()) {
            Some(p) => Plugin::open(p),
            None => Err(HostError::Plugin(format!(
                "etvk plugin not found; tried {} (set --plugin or {PLUGIN_ENV})",
                if candidates.is_empty() {
                    "nothing (no executable path)".to_string()
                } else {
                    candidates
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ))),
        }
    }

    /// Open the plugin at `path` and check its ABI version. A plugin stays loaded for the
    /// rest of the process, and opening the same file again returns it: the GPU driver it
    /// brings in need not survive being unloaded and loaded again (NVIDIA's did not).
    pub fn open(path: &Path) -> Result<Arc<Plugin>> {
        static OPEN: std::sync::Mutex<Vec<(PathBuf, Arc<Plugin>)>> =
            std::sync::Mutex::new(Vec::new());
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut open = OPEN
            .lock()
            .map_err(|_| HostError::Plugin("plugin registry poisoned".into()))?;
        if let Some((_, p)) = open.iter().find(|(k, _)| *k == key) {
            return Ok(p.clone());
        }
        let plugin = Plugin::open_new(path)?;
        open.push((key, plugin.clone()));
        Ok(plugin)
    }

    fn open_new(path: &Path) -> Result<Arc<Plugin>> {
        // SAFETY: loading a library runs its initializers; the etvk plugin's are Rust's
        // (no global constructors with preconditions). The path is the user's choice.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| HostError::Plugin(format!("cannot open {}: {e}", path.display())))?;
        let sym =
            |name: &str| HostError::Plugin(format!("{}: missing symbol {name}", path.display()));
        // SAFETY: each symbol is declared by `etvk-abi` with exactly this type, and the ABI
        // version is checked before any other function is called.
        let version = unsafe {
            let f = lib
                .get::<FnAbiVersion>(b"etvk_abi_version\0")
                .map_err(|_| sym("etvk_abi_version"))?;
            f()
        };
        if version != ETVK_ABI_VERSION {
            return Err(HostError::Plugin(format!(
                "{}: ABI version {version}, this host needs {ETVK_ABI_VERSION}",
                path.display()
            )));
        }
        // SAFETY: as above; the function pointers are copied out and stay valid while
        // `lib` is loaded, which `Plugin` guarantees by owning it.
        let fns = unsafe {
            Fns {
                last_error: *lib
                    .get::<FnLastError>(b"etvk_last_error\0")
                    .map_err(|_| sym("etvk_last_error"))?,
                backend_create: *lib
                    .get::<FnBackendCreate>(b"etvk_backend_create\0")
                    .map_err(|_| sym("etvk_backend_create"))?,
                backend_destroy: *lib
                    .get::<FnBackendDestroy>(b"etvk_backend_destroy\0")
                    .map_err(|_| sym("etvk_backend_destroy"))?,
                delegate_init: *lib
                    .get::<FnDelegateInit>(b"etvk_delegate_init\0")
                    .map_err(|_| sym("etvk_delegate_init"))?,
                delegate_execute: *lib
                    .get::<FnDelegateExecute>(b"etvk_delegate_execute\0")
                    .map_err(|_| sym("etvk_delegate_execute"))?,
                delegate_destroy: *lib
                    .get::<FnDelegateDestroy>(b"etvk_delegate_destroy\0")
                    .map_err(|_| sym("etvk_delegate_destroy"))?,
                delegate_profile: *lib
                    .get::<FnDelegateProfile>(b"etvk_delegate_profile\0")
                    .map_err(|_| sym("etvk_delegate_profile"))?,
                delegate_set_profiling: *lib
                    .get::<FnDelegateSetProfiling>(b"etvk_delegate_set_profiling\0")
                    .map_err(|_| sym("etvk_delegate_set_profiling"))?,
            }
        };
        log::debug!("opened etvk plugin {} (ABI {version})", path.display());
        Ok(Arc::new(Plugin {
            path: path.to_path_buf(),
            fns,
            _lib: lib,
        }))
    }

    /// The file it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn last_error(&self) -> String {
        // SAFETY: `etvk_last_error` returns null or a NUL-terminated string valid until the
        // next etvk call on this thread; it is copied before any other call.
        unsafe {
            let p = (self.fns.last_error)();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    fn check(&self, status: EtvkStatus, call: impl FnOnce() -> String) -> Result<()> {
        if status == EtvkStatus::Ok {
            return Ok(());
        }
        Err(HostError::PluginCall {
            call: call(),
            status: status_name(status).to_string(),
            message: self.last_error(),
        })
    }
}

/// A backend context of the plugin (one Vulkan device), shared by the delegates on it.
pub struct PluginBackend {
    plugin: Arc<Plugin>,
    raw: *mut EtvkBackend,
}

// SAFETY: the C ABI's backend handle may be used from any thread (the runtime guards its
// device state); the host never uses one handle from two threads at once without `&mut`.
unsafe impl Send for PluginBackend {}
// SAFETY: see above; shared access only creates delegates, which the plugin synchronizes.
unsafe impl Sync for PluginBackend {}

impl std::fmt::Debug for PluginBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginBackend")
            .field("plugin", &self.plugin.path)
            .finish()
    }
}

impl PluginBackend {
    /// Create a backend context (opens the Vulkan device chosen by the plugin's options).
    pub fn create(plugin: Arc<Plugin>) -> Result<Arc<PluginBackend>> {
        let mut raw: *mut EtvkBackend = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer for the duration of the call.
        let status = unsafe { (plugin.fns.backend_create)(&mut raw) };
        plugin.check(status, || "etvk_backend_create".to_string())?;
        if raw.is_null() {
            return Err(HostError::Plugin(
                "etvk_backend_create returned Ok and a null handle".into(),
            ));
        }
        Ok(Arc::new(PluginBackend { plugin, raw }))
    }

    /// The plugin this backend lives in.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }
}

impl Drop for PluginBackend {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `etvk_backend_create` and is destroyed once; every
        // delegate holds an `Arc<PluginBackend>`, so none outlives it.
        let status = unsafe { (self.plugin.fns.backend_destroy)(self.raw) };
        if status != EtvkStatus::Ok {
            log::warn!(
                "etvk_backend_destroy: {}: {}",
                status_name(status),
                self.plugin.last_error()
            );
        }
    }
}

/// Named data served to `etvk_delegate_init`: key -> bytes.
pub trait NamedDataSource {
    /// Bytes under exactly `key`.
    fn lookup(&self, key: &str) -> Option<&[u8]>;
}

impl NamedDataSource for etvk_format::program_ir::Program {
    fn lookup(&self, key: &str) -> Option<&[u8]> {
        self.named_data(key)
    }
}

/// The `EtvkNamedDataLookup` callback: `user` is a `*const &dyn NamedDataSource`.
unsafe extern "C" fn lookup_trampoline(
    user: *mut c_void,
    key: *const c_char,
    key_len: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> i32 {
    if user.is_null() || key.is_null() || data.is_null() || len.is_null() {
        return 2;
    }
    // SAFETY: `user` points at the `&dyn NamedDataSource` that `PluginDelegate::init` keeps
    // alive on its stack for the whole `etvk_delegate_init` call; `key` holds `key_len`
    // bytes per the ABI.
    let (source, key) = unsafe {
        (
            &*(user as *const &dyn NamedDataSource),
            std::slice::from_raw_parts(key as *const u8, key_len),
        )
    };
    let Ok(key) = std::str::from_utf8(key) else {
        return 1;
    };
    // A panic must not unwind into the plugin's C frames (that aborts the process).
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| source.lookup(key)));
    match found {
        Ok(Some(bytes)) => {
            // SAFETY: `data` and `len` are non-null out-pointers from the plugin.
            unsafe {
                *data = bytes.as_ptr();
                *len = bytes.len();
            }
            0
        }
        Ok(None) => 1,
        Err(_) => 3,
    }
}

/// A delegate loaded into the plugin.
pub struct PluginDelegate {
    backend: Arc<PluginBackend>,
    raw: *mut EtvkDelegate,
    label: String,
}

// SAFETY: a delegate handle is only used through `&mut self` (execute) or on drop, so
// calls on it never overlap; the plugin permits use from any thread.
unsafe impl Send for PluginDelegate {}

impl std::fmt::Debug for PluginDelegate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginDelegate")
            .field("label", &self.label)
            .finish()
    }
}

impl PluginDelegate {
    /// `etvk_delegate_init` with the blob, the compile specs (verbatim) and `named_data`.
    /// `label` names the delegate in errors (e.g. `delegate 1 (VulkanBackend)`).
    pub fn init(
        backend: &Arc<PluginBackend>,
        blob: &[u8],
        compile_specs: &[(String, Vec<u8>)],
        named_data: &dyn NamedDataSource,
        label: &str,
    ) -> Result<PluginDelegate> {
        let keys = compile_specs
            .iter()
            .map(|(k, _)| {
                CString::new(k.as_bytes()).map_err(|_| {
                    HostError::InvalidProgram(format!(
                        "{label}: compile spec key {k:?} contains NUL"
                    ))
                })
            })
            .collect::<Result<Vec<CString>>>()?;
        let specs: Vec<EtvkCompileSpec> = keys
            .iter()
            .zip(compile_specs)
            .map(|(k, (_, v))| EtvkCompileSpec {
                key: k.as_ptr(),
                value: v.as_ptr(),
                value_len: v.len(),
            })
            .collect();
        let source: &dyn NamedDataSource = named_data;
        let user = &source as *const &dyn NamedDataSource as *mut c_void;
        let mut raw: *mut EtvkDelegate = std::ptr::null_mut();
        let plugin = &backend.plugin;
        // SAFETY: every pointer is valid for the duration of the call: `blob`, `specs` (whose
        // keys borrow `keys`), `user` (borrows `source` on this stack frame) and `raw`.
        let status = unsafe {
            (plugin.fns.delegate_init)(
                backend.raw,
                blob.as_ptr(),
                blob.len(),
                specs.as_ptr(),
                specs.len(),
                Some(lookup_trampoline),
                user,
                &mut raw,
            )
        };
        plugin.check(status, || format!("etvk_delegate_init ({label})"))?;
        if raw.is_null() {
            return Err(HostError::Plugin(format!(
                "etvk_delegate_init ({label}) returned Ok and a null handle"
            )));
        }
        Ok(PluginDelegate {
            backend: Arc::clone(backend),
            raw,
            label: label.to_string(),
        })
    }

    /// `etvk_delegate_execute`. Tensor pointers in `args` must be valid for their `nbytes`
    /// for the duration of the call (the caller builds them from owned buffers).
    pub fn execute(&mut self, args: &mut [EtvkArg]) -> Result<()> {
        let plugin = &self.backend.plugin;
        // SAFETY: `raw` is a live delegate; `args` is a valid array of `args.len()` entries
        // whose tensor pointers the caller guarantees (see above).
        let status =
            unsafe { (plugin.fns.delegate_execute)(self.raw, args.as_mut_ptr(), args.len()) };
        plugin.check(status, || format!("etvk_delegate_execute ({})", self.label))
    }
}

/// GPU time of one dispatch of a delegate's last execute.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuOpTime {
    /// Op name (`op/kernel` for ops with kernel alternatives).
    pub op: String,
    /// VkGraph node id of the op.
    pub node_id: u32,
    /// Microseconds of GPU time.
    pub us: f64,
}

impl PluginDelegate {
    /// Record per-dispatch GPU timestamps at later executes, or stop
    /// (`etvk_delegate_set_profiling`).
    pub fn set_profiling(&self, on: bool) -> Result<()> {
        let plugin = &self.backend.plugin;
        // SAFETY: `raw` is live.
        let status = unsafe { (plugin.fns.delegate_set_profiling)(self.raw, u32::from(on)) };
        plugin.check(status, || {
            format!("etvk_delegate_set_profiling ({})", self.label)
        })
    }

    /// Per-dispatch GPU times of the last execute (`etvk_delegate_profile`).
    pub fn profile(&self) -> Result<Vec<GpuOpTime>> {
        let plugin = &self.backend.plugin;
        let mut count = 0usize;
        // SAFETY: `raw` is live; capacity 0 with a null array only writes `count`.
        let status =
            unsafe { (plugin.fns.delegate_profile)(self.raw, std::ptr::null_mut(), 0, &mut count) };
        plugin.check(status, || format!("etvk_delegate_profile ({})", self.label))?;
        let empty = EtvkProfileEntry {
            op: [0; ETVK_PROFILE_NAME_LEN],
            node_id: 0,
            gpu_us: 0.0,
        };
        let mut entries = vec![empty; count];
        let mut written = 0usize;
        // SAFETY: `entries` holds `count` writable entries.
        let status = unsafe {
            (plugin.fns.delegate_profile)(self.raw, entries.as_mut_ptr(), count, &mut written)
        };
        plugin.check(status, || format!("etvk_delegate_profile ({})", self.label))?;
        Ok(entries
            .iter()
            .take(written.min(count))
            .map(|e| {
                let bytes: Vec<u8> =
                    e.op.iter()
                        .take_while(|&&c| c != 0)
                        .map(|&c| c as u8)
                        .collect();
                GpuOpTime {
                    op: String::from_utf8_lossy(&bytes).into_owned(),
                    node_id: e.node_id,
                    us: e.gpu_us,
                }
            })
            .collect())
    }
}

impl Drop for PluginDelegate {
    fn drop(&mut self) {
        let plugin = &self.backend.plugin;
        // SAFETY: `raw` came from `etvk_delegate_init` and is destroyed exactly once, before
        // its backend (held alive by `self.backend`).
        let status = unsafe { (plugin.fns.delegate_destroy)(self.raw) };
        if status != EtvkStatus::Ok {
            log::warn!(
                "etvk_delegate_destroy ({}): {}: {}",
                self.label,
                status_name(status),
                plugin.last_error()
            );
        }
    }
}
