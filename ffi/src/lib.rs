//! etvk C ABI: `libetvk.so` / `libetvk.a`, declared in `ffi/include/etvk.h`.
//!
//! A thin wrapper over the Rust backend API ([`etvk_runtime::Backend`],
//! [`etvk_runtime::Delegate`]). The signatures are the `Fn*` aliases of [`etvk_abi`]; the
//! `const _` assertions below make any drift a compile error.
//!
//! Guarantees to the host:
//! - every function returns an [`EtvkStatus`]; on failure a one-line message that names the
//!   function and the argument is readable with [`etvk_last_error`] on the same thread;
//! - no panic crosses the boundary: each body runs under `catch_unwind` and a panic becomes
//!   [`EtvkStatus::Internal`] carrying the panic message;
//! - null handles and pointers, unknown dtype or argument kinds, ranks above
//!   [`ETVK_MAX_DIMS`], negative sizes and byte counts that do not match the shape are
//!   rejected with [`EtvkStatus::InvalidArgument`] before anything runs;
//! - a backend may be destroyed while delegates created on it live: each delegate keeps
//!   the backend's `Arc` alive until it is destroyed itself.

use std::cell::{OnceCell, RefCell};
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use etvk_abi::{
    arg_kind, EtvkArg, EtvkBackend, EtvkCompileSpec, EtvkDelegate, EtvkNamedDataLookup,
    EtvkProfileEntry, EtvkStatus, EtvkTensor,
};
use etvk_runtime::{
    Backend, Delegate, DelegateArg, Error, ErrorKind, HostDType, HostTensor, NamedData,
    RuntimeOptions,
};

// Each exported function must match the alias hosts load it through.
const _: etvk_abi::FnAbiVersion = etvk_abi_version;
const _: etvk_abi::FnLastError = etvk_last_error;
const _: etvk_abi::FnBackendCreate = etvk_backend_create;
const _: etvk_abi::FnBackendDestroy = etvk_backend_destroy;
const _: etvk_abi::FnDelegateInit = etvk_delegate_init;
const _: etvk_abi::FnDelegateExecute = etvk_delegate_execute;
const _: etvk_abi::FnDelegateDestroy = etvk_delegate_destroy;
const _: etvk_abi::FnDelegateReadTensor = etvk_delegate_read_tensor;
const _: etvk_abi::FnDelegateWriteTensor = etvk_delegate_write_tensor;
const _: etvk_abi::FnDelegateSetScalar = etvk_delegate_set_scalar;
const _: etvk_abi::FnDelegateProfile = etvk_delegate_profile;

// C mirrors of the etvk-abi constants. cbindgen emits constants only from the crate it
// generates bindings for, so the header's `#define`s come from these; the asserts below keep
// each equal to its etvk-abi original.

/// ABI version; bumped on any incompatible change. Hosts must check it first.
pub const ETVK_ABI_VERSION: u32 = 2;
/// Maximum tensor rank carried across the ABI (length of `EtvkTensor.sizes`).
pub const ETVK_MAX_DIMS: usize = 8;
/// Bytes of `EtvkProfileEntry.op`, the terminating NUL included.
pub const ETVK_PROFILE_NAME_LEN: usize = 96;
/// `EtvkTensor.dtype`: uint8 (ExecuTorch `ScalarType` numbering).
pub const ETVK_DTYPE_BYTE: i32 = 0;
/// `EtvkTensor.dtype`: int8.
pub const ETVK_DTYPE_CHAR: i32 = 1;
/// `EtvkTensor.dtype`: int16.
pub const ETVK_DTYPE_SHORT: i32 = 2;
/// `EtvkTensor.dtype`: int32.
pub const ETVK_DTYPE_INT: i32 = 3;
/// `EtvkTensor.dtype`: int64.
pub const ETVK_DTYPE_LONG: i32 = 4;
/// `EtvkTensor.dtype`: float16.
pub const ETVK_DTYPE_HALF: i32 = 5;
/// `EtvkTensor.dtype`: float32.
pub const ETVK_DTYPE_FLOAT: i32 = 6;
/// `EtvkTensor.dtype`: float64.
pub const ETVK_DTYPE_DOUBLE: i32 = 7;
/// `EtvkTensor.dtype`: bool (1 byte).
pub const ETVK_DTYPE_BOOL: i32 = 11;
/// `EtvkArg.kind`: a tensor (`EtvkArg.tensor`).
pub const ETVK_ARG_TENSOR: i32 = 0;
/// `EtvkArg.kind`: an integer (`EtvkArg.int_value`), e.g. a SymInt input.
pub const ETVK_ARG_INT: i32 = 1;
/// `EtvkArg.kind`: None / anything the delegate ignores.
pub const ETVK_ARG_NONE: i32 = 2;

const _: () = {
    use etvk_abi::{arg_kind as k, dtype as d};
    assert!(ETVK_ABI_VERSION == etvk_abi::ETVK_ABI_VERSION);
    assert!(ETVK_MAX_DIMS == etvk_abi::ETVK_MAX_DIMS);
    assert!(ETVK_PROFILE_NAME_LEN == etvk_abi::ETVK_PROFILE_NAME_LEN);
    assert!(ETVK_DTYPE_BYTE == d::BYTE);
    assert!(ETVK_DTYPE_CHAR == d::CHAR);
    assert!(ETVK_DTYPE_SHORT == d::SHORT);
    assert!(ETVK_DTYPE_INT == d::INT);
    assert!(ETVK_DTYPE_LONG == d::LONG);
    assert!(ETVK_DTYPE_HALF == d::HALF);
    assert!(ETVK_DTYPE_FLOAT == d::FLOAT);
    assert!(ETVK_DTYPE_DOUBLE == d::DOUBLE);
    assert!(ETVK_DTYPE_BOOL == d::BOOL);
    assert!(ETVK_ARG_TENSOR == k::TENSOR);
    assert!(ETVK_ARG_INT == k::INT);
    assert!(ETVK_ARG_NONE == k::NONE);
};

/// Tag at the start of a live backend handle; a best-effort check that a pointer handed
/// back to us is one of ours (it cannot make a dangling pointer safe, but it turns the
/// common mix-ups, e.g. a delegate passed as a backend, into an error).
const BACKEND_MAGIC: u64 = 0x6574_766b_4241_434b; // "etvkBACK"
/// Tag at the start of a live delegate handle (see [`BACKEND_MAGIC`]).
const DELEGATE_MAGIC: u64 = 0x6574_766b_4445_4c45; // "etvkDELE"

/// What an `EtvkBackend*` points to.
struct BackendHandle {
    magic: u64,
    backend: Arc<Backend>,
}

/// What an `EtvkDelegate*` points to.
struct DelegateHandle {
    magic: u64,
    /// Behind a mutex so that a host calling execute on one delegate from two threads gets
    /// serialized runs instead of aliased `&mut`. Declared before `_backend` so it drops first.
    delegate: Mutex<Delegate>,
    /// Keeps the device alive while this delegate exists, whatever the host destroys first.
    _backend: Arc<Backend>,
}

thread_local! {
    /// This thread's last error message (empty when the last call succeeded).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Record `msg` as this thread's last error. Interior NULs (which a C string cannot hold)
/// become spaces so that the message is never lost.
fn set_last_error(msg: &str) {
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // `try_with` fails only while the thread is being torn down; nothing to report then.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = msg);
}

fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = CString::default());
}

/// The 1:1 mapping of runtime error categories onto C status codes.
fn status_of(kind: ErrorKind) -> EtvkStatus {
    match kind {
        ErrorKind::InvalidArgument => EtvkStatus::InvalidArgument,
        ErrorKind::InvalidProgram => EtvkStatus::InvalidProgram,
        ErrorKind::Unsupported => EtvkStatus::Unsupported,
        ErrorKind::Device => EtvkStatus::DeviceError,
        ErrorKind::DeviceLost => EtvkStatus::DeviceLost,
        ErrorKind::OutOfMemory => EtvkStatus::OutOfMemory,
        ErrorKind::Internal => EtvkStatus::Internal,
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// The text of a caught panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// Run the body of exported function `func`: clear the last error, catch panics, and turn
/// the outcome into a status code (recording the message on failure, prefixed with `func`).
fn guard(func: &str, body: impl FnOnce() -> Result<(), Error>) -> EtvkStatus {
    clear_last_error();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => EtvkStatus::Ok,
        Ok(Err(e)) => {
            set_last_error(&format!("{func}: {}", e.message));
            status_of(e.kind)
        }
        Err(payload) => {
            set_last_error(&format!(
                "{func}: internal error (panic): {}",
                panic_message(payload.as_ref())
            ));
            EtvkStatus::Internal
        }
    }
}

/// Borrow the backend behind a handle, checking it is non-null and tagged as ours.
///
/// # Safety
/// `ptr` must be null or a pointer returned by `etvk_backend_create` and not yet destroyed.
unsafe fn backend_ref<'a>(ptr: *mut EtvkBackend) -> Result<&'a BackendHandle, Error> {
    if ptr.is_null() {
        return Err(invalid("backend is null"));
    }
    // SAFETY: per this function's contract a non-null `ptr` came from `Box::into_raw` of a
    // `BackendHandle` in `etvk_backend_create` and is still live.
    let handle = unsafe { &*(ptr as *const BackendHandle) };
    if handle.magic != BACKEND_MAGIC {
        return Err(invalid("backend is not a live etvk backend handle"));
    }
    Ok(handle)
}

/// Borrow the delegate behind a handle, checking it is non-null and tagged as ours.
///
/// # Safety
/// `ptr` must be null or a pointer returned by `etvk_delegate_init` and not yet destroyed.
unsafe fn delegate_ref<'a>(ptr: *mut EtvkDelegate) -> Result<&'a DelegateHandle, Error> {
    if ptr.is_null() {
        return Err(invalid("delegate is null"));
    }
    // SAFETY: per this function's contract a non-null `ptr` came from `Box::into_raw` of a
    // `DelegateHandle` in `etvk_delegate_init` and is still live.
    let handle = unsafe { &*(ptr as *const DelegateHandle) };
    if handle.magic != DELEGATE_MAGIC {
        return Err(invalid("delegate is not a live etvk delegate handle"));
    }
    Ok(handle)
}

/// Borrow `len` bytes at `ptr`; `what` names the argument in errors.
///
/// # Safety
/// A non-null `ptr` must point to `len` readable bytes that stay valid and unmodified for `'a`.
unsafe fn bytes_ref<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Error> {
    if len == 0 {
        // `from_raw_parts` needs a non-null pointer even for an empty slice; C callers
        // commonly pass NULL with a zero length.
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(invalid(format!("{what} is null but its length is {len}")));
    }
    if len > isize::MAX as usize {
        return Err(invalid(format!(
            "{what}: length {len} is larger than isize::MAX"
        )));
    }
    // SAFETY: non-null, `len` in range for a slice, and the caller guarantees `len` readable
    // bytes that outlive `'a`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Returns [`ETVK_ABI_VERSION`]; hosts must check it before any other call.
#[no_mangle]
pub extern "C" fn etvk_abi_version() -> u32 {
    ETVK_ABI_VERSION
}

/// This thread's last error message, or `""` when the last call succeeded.
///
/// The string is owned by etvk and valid until the next etvk call on this thread.
#[no_mangle]
pub extern "C" fn etvk_last_error() -> *const c_char {
    const EMPTY: &CStr = c"";
    // The pointer stays valid after the borrow ends: the CString is replaced only by the
    // next etvk call on this thread, which the documented lifetime already excludes.
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(EMPTY.as_ptr())
}

/// Open the Vulkan device chosen by the environment (`ETVK_DEVICE`, `ETVK_VALIDATION`) and
/// store a new backend handle in `*out` (set to NULL on failure).
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn etvk_backend_create(out: *mut *mut EtvkBackend) -> EtvkStatus {
    guard("etvk_backend_create", || {
        if out.is_null() {
            return Err(invalid("out is null"));
        }
        // SAFETY: `out` is non-null and, per the contract, valid for one pointer write.
        unsafe { out.write(std::ptr::null_mut()) };
        let backend = Backend::new(&RuntimeOptions::from_env())?;
        let handle = Box::new(BackendHandle {
            magic: BACKEND_MAGIC,
            backend,
        });
        // SAFETY: as above.
        unsafe { out.write(Box::into_raw(handle) as *mut EtvkBackend) };
        Ok(())
    })
}

/// Release a backend handle. Delegates created on it stay usable (they keep the device
/// alive) until they are destroyed. A NULL handle is an `InvalidArgument` error.
///
/// # Safety
/// `backend` must be null or a live handle from `etvk_backend_create`; it is invalid after
/// this call.
#[no_mangle]
pub unsafe extern "C" fn etvk_backend_destroy(backend: *mut EtvkBackend) -> EtvkStatus {
    guard("etvk_backend_destroy", || {
        // SAFETY: forwarded contract of this function.
        unsafe { backend_ref(backend) }?;
        // SAFETY: `backend_ref` checked it is our live `BackendHandle` from `Box::into_raw`;
        // ownership returns to Rust exactly once (the host must not use it again).
        let mut handle = unsafe { Box::from_raw(backend as *mut BackendHandle) };
        // Untag before freeing so that a double destroy is likely caught by the magic check.
        handle.magic = 0;
        drop(handle);
        Ok(())
    })
}

/// Node of [`CallbackNamedData`]'s append-only cache.
struct CachedEntry {
    key: String,
    bytes: Box<[u8]>,
    next: OnceCell<Box<CachedEntry>>,
}

/// [`NamedData`] over the host's lookup callback. The callback's bytes are valid only
/// during `etvk_delegate_init`, so each is copied once into an append-only list of
/// `OnceCell`s: entries are never moved or removed while `self` lives, which lets `get`
/// hand out `&[u8]` tied to `&self` without `unsafe`.
struct CallbackNamedData {
    lookup: EtvkNamedDataLookup,
    user: *mut c_void,
    head: OnceCell<Box<CachedEntry>>,
    /// A problem with a callback answer, appended to the init error message if init fails.
    note: RefCell<Option<String>>,
}

impl CallbackNamedData {
    /// Ask the host for `key`, copying the bytes it returns.
    fn fetch(&self, key: &str) -> Option<Box<[u8]>> {
        let lookup = self.lookup?;
        let mut data: *const u8 = std::ptr::null();
        let mut len: usize = 0;
        // SAFETY: the host promised (etvk_delegate_init's contract) that `lookup` is callable
        // with its `user` pointer during init; `key` outlives the call and `key.len()` bytes
        // are readable at its pointer; `data`/`len` are valid for writes.
        let rc = unsafe {
            lookup(
                self.user,
                key.as_ptr() as *const c_char,
                key.len(),
                &mut data,
                &mut len,
            )
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: on success the callback guarantees `len` readable bytes at `data`, valid
        // until init returns; they are copied right away.
        match unsafe { bytes_ref(data, len, "named data") } {
            Ok(bytes) => Some(bytes.into()),
            Err(e) => {
                *self.note.borrow_mut() = Some(format!(
                    "the named-data lookup for key '{key}' returned 0 but {}",
                    e.message
                ));
                None
            }
        }
    }
}

impl NamedData for CallbackNamedData {
    fn get(&self, key: &str) -> Option<&[u8]> {
        let mut cell = &self.head;
        loop {
            match cell.get() {
                Some(entry) if entry.key == key => return Some(&entry.bytes),
                Some(entry) => cell = &entry.next,
                None => {
                    let bytes = self.fetch(key)?;
                    let entry = cell.get_or_init(|| {
                        Box::new(CachedEntry {
                            key: key.to_owned(),
                            bytes,
                            next: OnceCell::new(),
                        })
                    });
                    return Some(&entry.bytes);
                }
            }
        }
    }
}

impl Drop for CallbackNamedData {
    fn drop(&mut self) {
        // Unlink iteratively: the default recursive drop of a long list could overflow the stack.
        let mut next = self.head.take();
        while let Some(mut entry) = next {
            next = entry.next.take();
        }
    }
}

/// Copy the host's compile specs into owned pairs.
///
/// # Safety
/// A non-null `specs` must point to `num_specs` readable specs whose keys/values are valid.
unsafe fn read_specs(
    specs: *const EtvkCompileSpec,
    num_specs: usize,
) -> Result<Vec<(String, Vec<u8>)>, Error> {
    if num_specs == 0 {
        return Ok(Vec::new());
    }
    if specs.is_null() {
        return Err(invalid(format!(
            "specs is null but num_specs is {num_specs}"
        )));
    }
    if num_specs > isize::MAX as usize / std::mem::size_of::<EtvkCompileSpec>() {
        return Err(invalid(format!("num_specs {num_specs} is too large")));
    }
    // SAFETY: non-null, size checked above, and the host guarantees `num_specs` readable specs.
    let specs = unsafe { std::slice::from_raw_parts(specs, num_specs) };
    let mut out = Vec::with_capacity(num_specs);
    for (i, spec) in specs.iter().enumerate() {
        if spec.key.is_null() {
            return Err(invalid(format!("specs[{i}].key is null")));
        }
        // SAFETY: non-null and, per the contract, a NUL-terminated string.
        let key = unsafe { CStr::from_ptr(spec.key) }
            .to_str()
            .map_err(|_| invalid(format!("specs[{i}].key is not valid UTF-8")))?;
        // SAFETY: per the contract `value_len` readable bytes at `value`.
        let value = unsafe { bytes_ref(spec.value, spec.value_len, &format!("specs[{i}].value")) }?;
        out.push((key.to_owned(), value.to_vec()));
    }
    Ok(out)
}

/// Parse, validate and build a delegate blob (`VH00` + `VK00`) on `backend`, reading
/// weights through `lookup` (may be NULL when the program has no named data), and store
/// the new delegate in `*out` (set to NULL on failure).
///
/// # Safety
/// `backend` must be null or live; `blob` must hold `blob_len` readable bytes; `specs` must
/// hold `num_specs` specs with NUL-terminated keys; `lookup` must be safe to call with
/// `lookup_user` until this function returns; `out` must be null or valid for one write.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the shape is fixed by etvk_abi::FnDelegateInit
pub unsafe extern "C" fn etvk_delegate_init(
    backend: *mut EtvkBackend,
    blob: *const u8,
    blob_len: usize,
    specs: *const EtvkCompileSpec,
    num_specs: usize,
    lookup: EtvkNamedDataLookup,
    lookup_user: *mut c_void,
    out: *mut *mut EtvkDelegate,
) -> EtvkStatus {
    guard("etvk_delegate_init", || {
        if out.is_null() {
            return Err(invalid("out is null"));
        }
        // SAFETY: `out` is non-null and, per the contract, valid for one pointer write.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: forwarded contract of this function.
        let backend = unsafe { backend_ref(backend) }?;
        if blob.is_null() {
            return Err(invalid("blob is null"));
        }
        // SAFETY: per the contract `blob_len` readable bytes at `blob`, valid during the call.
        let blob = unsafe { bytes_ref(blob, blob_len, "blob") }?;
        // SAFETY: forwarded contract of this function.
        let specs = unsafe { read_specs(specs, num_specs) }?;
        let named = CallbackNamedData {
            lookup,
            user: lookup_user,
            head: OnceCell::new(),
            note: RefCell::new(None),
        };
        let delegate =
            Delegate::init(&backend.backend, blob, &specs, &named).map_err(|mut e| {
                if let Some(note) = named.note.borrow_mut().take() {
                    e.message = format!("{} ({note})", e.message);
                }
                e
            })?;
        let handle = Box::new(DelegateHandle {
            magic: DELEGATE_MAGIC,
            delegate: Mutex::new(delegate),
            _backend: Arc::clone(&backend.backend),
        });
        // SAFETY: as above.
        unsafe { out.write(Box::into_raw(handle) as *mut EtvkDelegate) };
        Ok(())
    })
}

/// Element count and byte size of a C tensor, checking dtype, rank and sizes.
fn tensor_layout(t: &EtvkTensor, i: usize) -> Result<(HostDType, Vec<usize>, usize), Error> {
    tensor_layout_of(t, &format!("args[{i}]"))
}

/// [`tensor_layout`] with errors prefixed by `what` (the argument's name).
fn tensor_layout_of(t: &EtvkTensor, what: &str) -> Result<(HostDType, Vec<usize>, usize), Error> {
    let dtype = HostDType::from_code(t.dtype)
        .ok_or_else(|| invalid(format!("{what}: unknown dtype code {}", t.dtype)))?;
    let ndim = t.ndim as usize;
    if ndim > ETVK_MAX_DIMS {
        return Err(invalid(format!(
            "{what}: ndim {ndim} exceeds ETVK_MAX_DIMS ({ETVK_MAX_DIMS})"
        )));
    }
    let mut sizes = Vec::with_capacity(ndim);
    let mut nbytes = dtype.size_bytes();
    for (d, &s) in t.sizes[..ndim].iter().enumerate() {
        let s = usize::try_from(s)
            .map_err(|_| invalid(format!("{what}: sizes[{d}] is negative ({s})")))?;
        nbytes = nbytes
            .checked_mul(s)
            .ok_or_else(|| invalid(format!("{what}: byte size of shape overflows")))?;
        sizes.push(s);
    }
    Ok((dtype, sizes, nbytes))
}

/// Run a delegate once. `args` holds the inputs then the outputs, `num_args` of them
/// (inputs + outputs of the delegate). Output tensors receive the produced bytes (`nbytes`
/// is their capacity) and their `ndim`/`sizes` are overwritten with the produced shape;
/// integer outputs receive `int_value`. On failure no output is written.
///
/// # Safety
/// `delegate` must be null or live; `args` must point to `num_args` writable args whose
/// tensor `data` pointers hold `nbytes` bytes (readable for inputs, writable for outputs).
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_execute(
    delegate: *mut EtvkDelegate,
    args: *mut EtvkArg,
    num_args: usize,
) -> EtvkStatus {
    guard("etvk_delegate_execute", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        let mut delegate = handle.delegate.lock().map_err(|_| {
            Error::new(
                ErrorKind::Internal,
                "the delegate is unusable after a panic in an earlier call",
            )
        })?;
        let (n_in, n_out) = (delegate.num_inputs(), delegate.num_outputs());
        if num_args != n_in + n_out {
            return Err(invalid(format!(
                "num_args is {num_args} but the delegate takes {n_in} inputs + {n_out} outputs"
            )));
        }
        let args: &mut [EtvkArg] = if num_args == 0 {
            &mut []
        } else if args.is_null() {
            return Err(invalid(format!("args is null but num_args is {num_args}")));
        } else if num_args > isize::MAX as usize / std::mem::size_of::<EtvkArg>() {
            return Err(invalid(format!("num_args {num_args} is too large")));
        } else {
            // SAFETY: non-null, size checked, and the host guarantees `num_args` args that
            // nothing else touches during the call.
            unsafe { std::slice::from_raw_parts_mut(args, num_args) }
        };

        // SAFETY: forwarded contract of this function (tensor data pointers).
        let mut rust_args = unsafe { convert_args(args, n_in) }?;
        delegate.execute(&mut rust_args)?;
        drop(delegate);

        // SAFETY: forwarded contract of this function (output data pointers).
        unsafe { write_outputs(args, &rust_args, n_in) }
    })
}

/// Convert the host's arguments (`n_in` inputs first) into runtime arguments, validating
/// every tensor and copying the input bytes.
///
/// # Safety
/// Each input tensor's non-null `data` must hold `nbytes` readable bytes.
unsafe fn convert_args(args: &[EtvkArg], n_in: usize) -> Result<Vec<DelegateArg>, Error> {
    let mut rust_args = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let is_input = i < n_in;
        rust_args.push(match arg.kind {
            arg_kind::TENSOR => {
                let t = &arg.tensor;
                let (dtype, sizes, nbytes) = tensor_layout(t, i)?;
                let data = if is_input {
                    if t.nbytes != nbytes {
                        return Err(invalid(format!(
                            "args[{i}]: input nbytes is {} but its shape {sizes:?} of {dtype:?} needs {nbytes}",
                            t.nbytes
                        )));
                    }
                    let what = format!("args[{i}].tensor.data");
                    // SAFETY: per the contract `nbytes` readable bytes at `data`.
                    unsafe { bytes_ref(t.data as *const u8, nbytes, &what) }?.to_vec()
                } else {
                    if t.nbytes < nbytes {
                        return Err(invalid(format!(
                            "args[{i}]: output nbytes is {} but its shape {sizes:?} of {dtype:?} needs {nbytes}",
                            t.nbytes
                        )));
                    }
                    if t.data.is_null() && t.nbytes > 0 {
                        return Err(invalid(format!(
                            "args[{i}].tensor.data is null but its nbytes is {}",
                            t.nbytes
                        )));
                    }
                    // The runtime replaces an output's sizes and data with what the
                    // graph produced; the bytes are copied out after the run.
                    Vec::new()
                };
                DelegateArg::Tensor(HostTensor { dtype, sizes, data })
            }
            arg_kind::INT => DelegateArg::Int(arg.int_value),
            arg_kind::NONE => DelegateArg::None,
            other => {
                return Err(invalid(format!("args[{i}]: unknown arg kind {other}")));
            }
        });
    }
    Ok(rust_args)
}

/// Copy the produced outputs into the host's arguments (after checking that all fit, so
/// that a failure leaves every output untouched).
///
/// # Safety
/// Each output tensor's non-null `data` must hold `nbytes` writable bytes.
unsafe fn write_outputs(
    args: &mut [EtvkArg],
    produced: &[DelegateArg],
    n_in: usize,
) -> Result<(), Error> {
    // Check every output before writing any, so that a failure leaves them untouched.
    for (i, (arg, produced)) in args.iter().zip(produced).enumerate().skip(n_in) {
        match (arg.kind, produced) {
            (arg_kind::TENSOR, DelegateArg::Tensor(t)) if !ignored(t) => {
                check_output(i, &arg.tensor, t)?
            }
            (arg_kind::TENSOR, DelegateArg::Int(_)) => {
                return Err(invalid(format!(
                    "args[{i}] is a tensor but this output of the delegate is an integer (pass ETVK_ARG_INT)"
                )))
            }
            _ => {}
        }
    }
    for (arg, produced) in args.iter_mut().zip(produced).skip(n_in) {
        match (arg.kind, produced) {
            (arg_kind::TENSOR, DelegateArg::Tensor(t)) if !ignored(t) => {
                let dst = &mut arg.tensor;
                if !t.data.is_empty() {
                    // SAFETY: `check_output` verified `t.data.len() <= dst.nbytes` and a
                    // non-null `dst.data`; the host guarantees `nbytes` writable bytes
                    // there. `t.data` is our own buffer, so the ranges cannot overlap.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            t.data.as_ptr(),
                            dst.data as *mut u8,
                            t.data.len(),
                        )
                    };
                }
                dst.ndim = t.sizes.len() as u32;
                dst.sizes = [0; ETVK_MAX_DIMS];
                for (d, &s) in dst.sizes.iter_mut().zip(&t.sizes) {
                    *d = s as i64;
                }
            }
            (arg_kind::INT, DelegateArg::Int(v)) => arg.int_value = *v,
            _ => {}
        }
    }
    Ok(())
}

/// Whether an output tensor is still the placeholder [`convert_args`] passed in (no bytes
/// for a non-empty shape): the runtime leaves outputs it ignores untouched, and so do we.
fn ignored(t: &HostTensor) -> bool {
    t.data.is_empty() && t.sizes.iter().all(|&s| s != 0)
}

/// Check that a produced output fits the host's tensor `dst` (argument `i`).
fn check_output(i: usize, dst: &EtvkTensor, t: &HostTensor) -> Result<(), Error> {
    if t.dtype.code() != dst.dtype {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "args[{i}]: the delegate produced {:?} but the output was declared with dtype code {}",
                t.dtype, dst.dtype
            ),
        ));
    }
    if t.sizes.len() > ETVK_MAX_DIMS {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "args[{i}]: the produced output has rank {} (ETVK_MAX_DIMS is {ETVK_MAX_DIMS})",
                t.sizes.len()
            ),
        ));
    }
    let expected = t
        .sizes
        .iter()
        .try_fold(t.dtype.size_bytes(), |acc, &s| acc.checked_mul(s));
    if expected != Some(t.data.len()) || t.sizes.iter().any(|&s| i64::try_from(s).is_err()) {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "args[{i}]: the delegate produced {} bytes for shape {:?}",
                t.data.len(),
                t.sizes
            ),
        ));
    }
    if t.data.len() > dst.nbytes {
        return Err(invalid(format!(
            "args[{i}]: the output has shape {:?} ({} bytes) but nbytes is only {}",
            t.sizes,
            t.data.len(),
            dst.nbytes
        )));
    }
    if !t.data.is_empty() && dst.data.is_null() {
        return Err(invalid(format!("args[{i}].tensor.data is null")));
    }
    Ok(())
}

/// Lock the delegate behind a checked handle (a poisoned lock means an earlier call panicked).
fn lock_delegate(handle: &DelegateHandle) -> Result<std::sync::MutexGuard<'_, Delegate>, Error> {
    handle.delegate.lock().map_err(|_| {
        Error::new(
            ErrorKind::Internal,
            "the delegate is unusable after a panic in an earlier call",
        )
    })
}

/// Copy the GPU-resident tensor of VkGraph value `value_id` into `*inout`: a graph tensor,
/// or a constant's contiguous GPU copy (the one in-place ops such as `adamw_step` update,
/// which persists across executes). `inout->dtype` must be the value's host dtype (its
/// staging dtype; the GPU dtype for constants), `inout->data` must hold `inout->nbytes`
/// writable bytes; on success the bytes are written and `ndim` / `sizes` set to the
/// tensor's current sizes. On failure nothing is written.
///
/// # Safety
/// `delegate` must be null or live; `inout` must be null or point to a valid tensor whose
/// non-null `data` holds `nbytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_read_tensor(
    delegate: *mut EtvkDelegate,
    value_id: usize,
    inout: *mut EtvkTensor,
) -> EtvkStatus {
    guard("etvk_delegate_read_tensor", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        if inout.is_null() {
            return Err(invalid("inout is null"));
        }
        // SAFETY: non-null and, per the contract, a valid tensor.
        let dst = unsafe { &mut *inout };
        let want = HostDType::from_code(dst.dtype)
            .ok_or_else(|| invalid(format!("inout: unknown dtype code {}", dst.dtype)))?;
        let t = lock_delegate(handle)?.read_tensor(value_id)?;
        if t.dtype != want {
            return Err(invalid(format!(
                "inout->dtype is {want:?} but value {value_id} is stored as {:?} (dtype code {})",
                t.dtype,
                t.dtype.code()
            )));
        }
        if t.sizes.len() > ETVK_MAX_DIMS {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "value {value_id} has rank {} (ETVK_MAX_DIMS is {ETVK_MAX_DIMS})",
                    t.sizes.len()
                ),
            ));
        }
        if t.data.len() > dst.nbytes {
            return Err(invalid(format!(
                "value {value_id} has shape {:?} ({} bytes) but inout->nbytes is only {}",
                t.sizes,
                t.data.len(),
                dst.nbytes
            )));
        }
        if !t.data.is_empty() {
            if dst.data.is_null() {
                return Err(invalid("inout->data is null"));
            }
            // SAFETY: `dst.data` is non-null with `nbytes >= t.data.len()` writable bytes
            // per the contract; `t.data` is our own buffer, so the ranges cannot overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(t.data.as_ptr(), dst.data as *mut u8, t.data.len())
            };
        }
        dst.ndim = t.sizes.len() as u32;
        dst.sizes = [0; ETVK_MAX_DIMS];
        for (d, &s) in dst.sizes.iter_mut().zip(&t.sizes) {
            *d = s as i64;
        }
        Ok(())
    })
}

/// Overwrite the GPU-resident tensor of VkGraph value `value_id` (see
/// [`etvk_delegate_read_tensor`]) with `*tensor`, e.g. to restore saved adapters or
/// optimizer state. Its sizes must equal the tensor's current sizes, `nbytes` must be
/// numel * element size, and its dtype must convert to the GPU dtype as execute's inputs
/// do (same dtype, int64 -> int32, float64 -> float32, float16 <-> float32).
///
/// # Safety
/// `delegate` must be null or live; `tensor` must be null or point to a valid tensor whose
/// `data` holds `nbytes` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_write_tensor(
    delegate: *mut EtvkDelegate,
    value_id: usize,
    tensor: *const EtvkTensor,
) -> EtvkStatus {
    guard("etvk_delegate_write_tensor", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        if tensor.is_null() {
            return Err(invalid("tensor is null"));
        }
        // SAFETY: non-null and, per the contract, a valid tensor.
        let t = unsafe { &*tensor };
        let (dtype, sizes, nbytes) = tensor_layout_of(t, "tensor")?;
        if t.nbytes != nbytes {
            return Err(invalid(format!(
                "tensor: nbytes is {} but its shape {sizes:?} of {dtype:?} needs {nbytes}",
                t.nbytes
            )));
        }
        if t.data.is_null() && nbytes > 0 {
            return Err(invalid("tensor->data is null"));
        }
        // SAFETY: per the contract `nbytes` readable bytes at `data`.
        let data = unsafe { bytes_ref(t.data as *const u8, nbytes, "tensor->data") }?.to_vec();
        let host = HostTensor { dtype, sizes, data };
        lock_delegate(handle)?.write_tensor(value_id, &host)
    })
}

/// Set a runtime scalar by VkGraph value id: a SymInt, or an Int/Double value that an op
/// reads at execute time (`adamw_step`'s learning rate, betas, eps, weight decay and bias
/// corrections, `fused_ce`'s n_valid). Takes effect at the next execute, without a rebuild
/// or any re-upload. A value that is not a runtime scalar of the graph is an
/// `InvalidArgument` error.
///
/// # Safety
/// `delegate` must be null or a live handle from `etvk_delegate_init`.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_set_scalar(
    delegate: *mut EtvkDelegate,
    value_id: usize,
    value: f64,
) -> EtvkStatus {
    guard("etvk_delegate_set_scalar", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        lock_delegate(handle)?.set_scalar(value_id, value)
    })
}

/// Run the work of the delegate's last execute again on the inputs it left on the GPU,
/// without host transfers (timing loops, and training steps whose state stays on the GPU):
/// outputs stay on the GPU, `etvk_delegate_read_tensor` reads them; inputs changed with
/// `etvk_delegate_write_tensor` and scalars with `etvk_delegate_set_scalar` are used. An
/// `InvalidArgument` error before the first execute, or after an execute's input sizes
/// changed the graph's shapes until the next execute records them.
///
/// # Safety
/// `delegate` must be null or a live handle from `etvk_delegate_init`.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_replay(delegate: *mut EtvkDelegate) -> EtvkStatus {
    guard("etvk_delegate_replay", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        lock_delegate(handle)?.replay()
    })
}

/// The per-dispatch GPU times of the delegate's last execute, in execution order:
/// `*count` receives the number of dispatches and the first `min(capacity, *count)` entries
/// are written (`entries` may be null when `capacity` is 0). Op names longer than
/// `ETVK_PROFILE_NAME_LEN - 1` bytes are truncated. Empty unless profiling is on
/// (`etvk_delegate_set_profiling`, or `ETVK_PROFILE=1` in the environment when the backend
/// was created), or when the device has no timestamp queries.
///
/// # Safety
/// `delegate` must be null or live; `count` must be null or writable; `entries` must be null
/// or point to `capacity` writable entries.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_profile(
    delegate: *mut EtvkDelegate,
    entries: *mut EtvkProfileEntry,
    capacity: usize,
    count: *mut usize,
) -> EtvkStatus {
    guard("etvk_delegate_profile", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        if count.is_null() {
            return Err(invalid("count is null"));
        }
        if entries.is_null() && capacity > 0 {
            return Err(invalid("entries is null but capacity is not 0"));
        }
        let d = lock_delegate(handle)?;
        let times = d.profile_nodes();
        for (i, t) in times.iter().take(capacity).enumerate() {
            let mut op = [0 as c_char; ETVK_PROFILE_NAME_LEN];
            for (dst, &b) in op
                .iter_mut()
                .zip(t.op.as_bytes().iter().take(ETVK_PROFILE_NAME_LEN - 1))
            {
                *dst = b as c_char;
            }
            // SAFETY: `i < capacity` and `entries` points to `capacity` writable entries.
            unsafe {
                entries.add(i).write(EtvkProfileEntry {
                    op,
                    node_id: t.node_id,
                    gpu_us: t.us,
                })
            };
        }
        // SAFETY: non-null and writable per the contract.
        unsafe { count.write(times.len()) };
        Ok(())
    })
}

/// Record per-dispatch GPU timestamps at the delegate's later executes (`on` != 0) or stop
/// (`on` == 0), for `etvk_delegate_profile`. Off by default (unless `ETVK_PROFILE=1` was set
/// when the backend was created): timestamps cost ~0.1 ms per execute of a small graph on a
/// discrete GPU (ABI 1 always recorded them).
///
/// # Safety
/// `delegate` must be null or a live handle from `etvk_delegate_init`.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_set_profiling(
    delegate: *mut EtvkDelegate,
    on: u32,
) -> EtvkStatus {
    guard("etvk_delegate_set_profiling", || {
        // SAFETY: forwarded contract of this function.
        let handle = unsafe { delegate_ref(delegate) }?;
        lock_delegate(handle)?.set_profiling(on != 0)
    })
}

/// Destroy a delegate (and release its hold on the backend). A NULL handle is an
/// `InvalidArgument` error.
///
/// # Safety
/// `delegate` must be null or a live handle from `etvk_delegate_init`, not in use by another
/// thread; it is invalid after this call.
#[no_mangle]
pub unsafe extern "C" fn etvk_delegate_destroy(delegate: *mut EtvkDelegate) -> EtvkStatus {
    guard("etvk_delegate_destroy", || {
        // SAFETY: forwarded contract of this function.
        unsafe { delegate_ref(delegate) }?;
        // SAFETY: `delegate_ref` checked it is our live `DelegateHandle` from `Box::into_raw`;
        // ownership returns to Rust exactly once.
        let mut handle = unsafe { Box::from_raw(delegate as *mut DelegateHandle) };
        handle.magic = 0;
        drop(handle);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dtype: i32, sizes: &[i64], data: &mut [u8]) -> EtvkArg {
        let mut t = EtvkTensor {
            dtype,
            ndim: sizes.len() as u32,
            sizes: [0; ETVK_MAX_DIMS],
            data: data.as_mut_ptr() as *mut c_void,
            nbytes: data.len(),
        };
        t.sizes[..sizes.len()].copy_from_slice(sizes);
        EtvkArg {
            kind: arg_kind::TENSOR,
            int_value: 0,
            tensor: t,
        }
    }

    fn convert_err(args: &[EtvkArg], n_in: usize) -> Error {
        // SAFETY: every tensor in these tests points to its own live buffer of `nbytes`.
        match unsafe { convert_args(args, n_in) } {
            Ok(_) => panic!("conversion should fail"),
            Err(e) => e,
        }
    }

    #[test]
    fn convert_checks_every_tensor() {
        let mut x = vec![0u8; 24];
        let mut y = vec![0u8; 24];
        let base = [
            tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut x),
            tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut y),
        ];
        // SAFETY: buffers live for the call.
        let ok = unsafe { convert_args(&base, 1) }.expect("valid args");
        assert_eq!(
            ok[0],
            DelegateArg::Tensor(HostTensor {
                dtype: HostDType::Float,
                sizes: vec![2, 3],
                data: vec![0; 24]
            })
        );

        let mut a = base;
        a[0].tensor.dtype = 9;
        let e = convert_err(&a, 1);
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(
            e.message.contains("args[0]: unknown dtype code 9"),
            "{}",
            e.message
        );

        let mut a = base;
        a[1].tensor.ndim = 9;
        assert!(convert_err(&a, 1)
            .message
            .contains("args[1]: ndim 9 exceeds"));

        let mut a = base;
        a[0].tensor.sizes[0] = -1;
        assert!(convert_err(&a, 1)
            .message
            .contains("args[0]: sizes[0] is negative"));

        let mut a = base;
        a[0].tensor.nbytes = 20;
        assert!(convert_err(&a, 1)
            .message
            .contains("args[0]: input nbytes is 20"));

        let mut a = base;
        a[1].tensor.nbytes = 20;
        assert!(convert_err(&a, 1)
            .message
            .contains("args[1]: output nbytes is 20"));

        let mut a = base;
        a[0].tensor.data = std::ptr::null_mut();
        assert!(convert_err(&a, 1)
            .message
            .contains("args[0].tensor.data is null"));

        let mut a = base;
        a[1].tensor.data = std::ptr::null_mut();
        assert!(convert_err(&a, 1)
            .message
            .contains("args[1].tensor.data is null"));

        let mut a = base;
        a[1].kind = 5;
        assert!(convert_err(&a, 1)
            .message
            .contains("args[1]: unknown arg kind 5"));

        let mut a = base;
        a[0].tensor.sizes = [i64::MAX; ETVK_MAX_DIMS];
        assert!(convert_err(&a, 1).message.contains("overflows"));
    }

    #[test]
    fn outputs_are_copied_with_their_shape_or_left_untouched() {
        let mut x = vec![0u8; 4];
        let mut y = vec![0xAAu8; 16];
        let mut args = [
            tensor(ETVK_DTYPE_INT, &[1], &mut x),
            tensor(ETVK_DTYPE_INT, &[4], &mut y),
            EtvkArg {
                kind: arg_kind::INT,
                int_value: 0,
                tensor: tensor(0, &[], &mut []).tensor,
            },
        ];
        let produced = vec![
            DelegateArg::None,
            DelegateArg::Tensor(HostTensor {
                dtype: HostDType::Int,
                sizes: vec![1, 2],
                data: vec![1, 0, 0, 0, 2, 0, 0, 0],
            }),
            DelegateArg::Int(7),
        ];
        // SAFETY: `y` is live and 16 bytes long.
        unsafe { write_outputs(&mut args, &produced, 1) }.expect("fits");
        assert_eq!(args[1].tensor.ndim, 2);
        assert_eq!(&args[1].tensor.sizes[..3], &[1, 2, 0]);
        assert_eq!(args[2].int_value, 7);
        assert_eq!(&y[..8], &[1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(&y[8..], &[0xAA; 8]);

        // Too big for the capacity: an error and nothing written.
        let mut y2 = vec![0xAAu8; 4];
        let mut args = [tensor(ETVK_DTYPE_INT, &[1], &mut y2)];
        // SAFETY: `y2` is live and 4 bytes long.
        let e = unsafe { write_outputs(&mut args, &produced[1..2], 0) }.expect_err("too big");
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("args[0]") && e.message.contains("nbytes is only 4"));
        assert_eq!(y2, vec![0xAA; 4]);
        assert_eq!(args[0].tensor.ndim, 1);
    }

    #[test]
    fn ignored_outputs_stay_untouched_and_kind_mismatches_are_named() {
        let mut y = vec![0xAAu8; 8];
        let mut args = [tensor(ETVK_DTYPE_FLOAT, &[2], &mut y)];
        // What convert_args passed in, unchanged by the runtime (an ignored output).
        // SAFETY: `y` is live and 8 bytes long.
        let placeholder = unsafe { convert_args(&args, 0) }.expect("valid");
        // SAFETY: as above.
        unsafe { write_outputs(&mut args, &placeholder, 0) }.expect("ignored output");
        assert_eq!(y, vec![0xAA; 8]);
        assert_eq!(args[0].tensor.ndim, 1);

        // SAFETY: as above.
        let e = unsafe { write_outputs(&mut args, &[DelegateArg::Int(3)], 0) }.expect_err("int");
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("args[0] is a tensor"), "{}", e.message);
    }

    #[test]
    fn status_mapping_is_one_to_one() {
        let kinds = [
            (ErrorKind::InvalidArgument, EtvkStatus::InvalidArgument),
            (ErrorKind::InvalidProgram, EtvkStatus::InvalidProgram),
            (ErrorKind::Unsupported, EtvkStatus::Unsupported),
            (ErrorKind::Device, EtvkStatus::DeviceError),
            (ErrorKind::DeviceLost, EtvkStatus::DeviceLost),
            (ErrorKind::OutOfMemory, EtvkStatus::OutOfMemory),
            (ErrorKind::Internal, EtvkStatus::Internal),
        ];
        for (k, s) in kinds {
            assert_eq!(status_of(k), s);
        }
    }

    #[test]
    fn panics_become_internal_errors() {
        let status = guard("etvk_test", || panic!("boom {}", 42));
        assert_eq!(status, EtvkStatus::Internal);
        // SAFETY: etvk_last_error returns a valid C string.
        let msg = unsafe { CStr::from_ptr(etvk_last_error()) };
        assert_eq!(
            msg.to_str().unwrap(),
            "etvk_test: internal error (panic): boom 42"
        );
        assert_eq!(guard("etvk_test", || Ok(())), EtvkStatus::Ok);
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(etvk_last_error()) }.to_bytes(), b"");
    }

    struct Host {
        calls: usize,
        value: Vec<u8>,
    }

    unsafe extern "C" fn host_lookup(
        user: *mut c_void,
        key: *const c_char,
        key_len: usize,
        data: *mut *const u8,
        len: *mut usize,
    ) -> i32 {
        // SAFETY: `user` is the test's `Host`; etvk passes valid key bytes and out pointers.
        unsafe {
            let host = &mut *(user as *mut Host);
            host.calls += 1;
            match std::slice::from_raw_parts(key as *const u8, key_len) {
                b"w" => {
                    *data = host.value.as_ptr();
                    *len = host.value.len();
                    0
                }
                b"broken" => {
                    *data = std::ptr::null();
                    *len = 3;
                    0
                }
                _ => 1,
            }
        }
    }

    #[test]
    fn named_data_copies_and_caches_callback_bytes() {
        let mut host = Host {
            calls: 0,
            value: vec![1, 2, 3],
        };
        let named = CallbackNamedData {
            lookup: Some(host_lookup),
            user: &mut host as *mut Host as *mut c_void,
            head: OnceCell::new(),
            note: RefCell::new(None),
        };
        let a = named.get("w").expect("known key");
        assert_eq!(a, &[1, 2, 3]);
        assert_eq!(named.get("missing"), None);
        let b = named.get("w").expect("cached");
        assert_eq!(
            a.as_ptr(),
            b.as_ptr(),
            "the second get is served from the cache"
        );
        assert_eq!(named.get("broken"), None);
        assert!(named.note.borrow().as_deref().unwrap().contains("'broken'"));
        drop(named);
        assert_eq!(host.calls, 3);

        let none = CallbackNamedData {
            lookup: None,
            user: std::ptr::null_mut(),
            head: OnceCell::new(),
            note: RefCell::new(None),
        };
        assert_eq!(none.get("w"), None);
    }
}
