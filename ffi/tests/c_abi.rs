//! Tests of the C ABI from both sides.
//!
//! - `c_example_*`: compile `ffi/examples/run_delegate.c` against `ffi/include/etvk.h` with the
//!   system C compiler, link `libetvk.so` from this test's target directory, and run it on a
//!   real fixture (delegate blob + named data extracted from `model.pte`) with validation on.
//! - `rust_*`: call the exported functions directly with bad arguments and check the status
//!   and the per-thread message. The `rust_device_*` ones need a working device and runtime.

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use etvk::*;
use etvk_abi::{
    EtvkArg, EtvkBackend, EtvkCompileSpec, EtvkDelegate, EtvkStatus, EtvkTensor, ETVK_MAX_DIMS,
};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ffi/ has a parent")
        .to_path_buf()
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests").join("fixtures").join(name)
}

/// `target/<profile>/`: this test runs from `target/<profile>/deps/`.
fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary has a directory");
    deps.parent().expect("deps/ has a parent").to_path_buf()
}

/// A fresh scratch directory for one test, under `target/<profile>/etvk-ffi-c/` (left in
/// place when a test fails, for inspection).
fn scratch(name: &str) -> PathBuf {
    let dir = target_profile_dir()
        .join("etvk-ffi-c")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The directory holding the `libetvk.so` to link: `cargo test` builds it into
/// `target/<profile>/deps/` (fresh for this very test build) while `cargo build` puts it in
/// `target/<profile>/`; the newer of the two wins.
fn libetvk_dir() -> PathBuf {
    let profile = target_profile_dir();
    let candidates = [profile.join("deps"), profile.clone()];
    candidates
        .iter()
        .filter_map(|dir| {
            let modified = std::fs::metadata(dir.join("libetvk.so"))
                .ok()?
                .modified()
                .ok()?;
            Some((modified, dir.clone()))
        })
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, dir)| dir)
        .unwrap_or_else(|| {
            panic!(
                "{} is missing: run `cargo build -p etvk-ffi` first",
                profile.join("libetvk.so").display()
            )
        })
}

/// Compile the C example with `cc` (C99, pedantic, warnings as errors), linking `lib_args`.
fn compile_c_example(out: &Path, lib_args: &[String]) {
    let ffi = repo_root().join("ffi");
    let status = Command::new("cc")
        .args([
            "-std=c99",
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
        ])
        .arg("-I")
        .arg(ffi.join("include"))
        .arg(ffi.join("examples").join("run_delegate.c"))
        .arg("-o")
        .arg(out)
        .args(lib_args)
        .status()
        .expect("running cc (is a C compiler installed?)");
    assert!(
        status.success(),
        "compiling ffi/examples/run_delegate.c failed"
    );
}

/// The C example linked against `libetvk.so`, compiled once per test process; returns the
/// executable and the directory of the library it must load.
fn c_example() -> &'static (PathBuf, PathBuf) {
    static EXE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    EXE.get_or_init(|| {
        let lib_dir = libetvk_dir();
        let out = scratch("c-example").join("run_delegate");
        compile_c_example(
            &out,
            &[
                format!("-L{}", lib_dir.display()),
                format!("-Wl,-rpath,{}", lib_dir.display()),
                "-letvk".into(),
                "-lm".into(),
            ],
        );
        (out, lib_dir)
    })
}

fn c_dtype(name: &str) -> &str {
    match name {
        "float32" | "float64" | "float16" | "int8" | "uint8" | "int16" | "int32" | "int64"
        | "bool" => name,
        other => panic!("io.json dtype {other} has no C example spelling"),
    }
}

fn tensor_spec(dir: &Path, t: &serde_json::Value) -> String {
    let shape: Vec<String> = t["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_i64().expect("size").to_string())
        .collect();
    format!(
        "{}:{}:{}",
        c_dtype(t["dtype"].as_str().expect("dtype")),
        shape.join(","),
        dir.join(t["file"].as_str().expect("file")).display()
    )
}

/// Extract fixture `name`'s named data from its `model.pte` into `<dir>/<key>.bin`.
fn extract_named_data(name: &str, dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir named");
    let pte = std::fs::read(fixture(name).join("model.pte")).expect("read model.pte");
    let program = etvk_format::program::parse_program(pte)
        .unwrap_or_else(|e| panic!("parse_program({name}/model.pte): {e}"));
    for (key, range) in &program.named_data {
        assert!(
            !key.contains('/') && !key.starts_with('.'),
            "named-data key {key:?} is not a plain file name"
        );
        std::fs::write(
            dir.join(format!("{key}.bin")),
            &program.bytes[range.clone()],
        )
        .expect("write named data");
    }
}

/// The compile specs of fixture `name`'s Vulkan delegate, as the C example's `--spec`
/// arguments (`KEY=0x<hex bytes>`: the values are bytes, e.g. `require_dynamic_shapes=0x01`).
fn spec_args(name: &str) -> Vec<String> {
    let pte = std::fs::read(fixture(name).join("model.pte")).expect("read model.pte");
    let program = etvk_format::program::parse_program(pte)
        .unwrap_or_else(|e| panic!("parse_program({name}/model.pte): {e}"));
    let delegates: Vec<_> = program
        .plans
        .iter()
        .flat_map(|p| &p.delegates)
        .filter(|d| d.id == "VulkanBackend")
        .collect();
    assert_eq!(delegates.len(), 1, "{name}: one Vulkan delegate expected");
    delegates[0]
        .compile_specs
        .iter()
        .map(|(key, value)| {
            let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
            format!("{key}=0x{hex}")
        })
        .collect()
}

/// The C example's command line for every case of fixture `name` (one init with the
/// program's compile specs, one execute per case); `rotate_expected` pairs case k with case
/// k+1's expected outputs.
fn fixture_command(exe: &Path, name: &str, named: &Path, rotate_expected: bool) -> Command {
    fixture_command_with_specs(exe, name, named, rotate_expected, &spec_args(name))
}

/// [`fixture_command`] with `specs` (`KEY=VALUE`) in place of the program's compile specs.
fn fixture_command_with_specs(
    exe: &Path,
    name: &str,
    named: &Path,
    rotate_expected: bool,
    specs: &[String],
) -> Command {
    let dir = fixture(name);
    let io: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("io.json")).expect("read io.json"))
            .expect("parse io.json");
    let mut cmd = Command::new(exe);
    cmd.arg(dir.join("delegate.bin")).arg(named);
    for spec in specs {
        cmd.arg("--spec").arg(spec);
    }
    cmd.arg("--atol").arg(io["atol"].to_string());
    cmd.arg("--rtol").arg(io["rtol"].to_string());
    let cases = io["cases"].as_array().expect("cases");
    for (k, case) in cases.iter().enumerate() {
        let expected = if rotate_expected {
            &cases[(k + 1) % cases.len()]
        } else {
            case
        };
        cmd.arg("--case");
        for t in case["inputs"].as_array().expect("inputs") {
            cmd.arg("--in").arg(tensor_spec(&dir, t));
        }
        for t in expected["outputs"].as_array().expect("outputs") {
            cmd.arg("--out").arg(tensor_spec(&dir, t));
        }
    }
    cmd.env("ETVK_VALIDATION", "1");
    cmd
}

/// Prepend `lib_dir` to the child's library path: `cargo test` puts target/<profile>/ on
/// LD_LIBRARY_PATH, which the linker's RUNPATH does not override.
fn with_lib_dir(cmd: &mut Command, lib_dir: &Path) {
    let mut paths = vec![lib_dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
    ));
    cmd.env(
        "LD_LIBRARY_PATH",
        std::env::join_paths(paths).expect("library path"),
    );
}

/// Run `cmd`; returns (exit code, stdout, stderr), echoing stdout for `--nocapture`.
fn run(mut cmd: Command) -> (Option<i32>, String, String) {
    let out = cmd.output().expect("run the C example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("{stdout}{stderr}");
    (out.status.code(), stdout, stderr)
}

/// Run the C example on every case of fixture `name` and expect all outputs to match;
/// returns its stdout.
fn run_fixture_through_c(name: &str) -> String {
    let (exe, lib_dir) = c_example();
    let work = scratch(name);
    let named = work.join("named");
    extract_named_data(name, &named);
    let mut cmd = fixture_command(exe, name, &named, false);
    with_lib_dir(&mut cmd, lib_dir);
    let (code, stdout, stderr) = run(cmd);
    assert_eq!(
        code,
        Some(0),
        "C example on {name} failed:\n{stdout}\n{stderr}"
    );
    let cases = std::fs::read_to_string(fixture(name).join("io.json"))
        .expect("read io.json")
        .matches("\"inputs\"")
        .count();
    assert!(
        stdout.contains(&format!("OK: {cases} case(s)")),
        "unexpected output:\n{stdout}"
    );
    let _ = std::fs::remove_dir_all(&work);
    stdout
}

#[test]
fn c_example_a_linear_fp32() {
    run_fixture_through_c("a_linear_fp32");
}

#[test]
fn c_example_b_mlp_fp32() {
    run_fixture_through_c("b_mlp_fp32");
}

/// Same module as a_linear_fp32, exported with `storage_type_override` (a compile spec the
/// runtime accepts and ignores: every tensor is a buffer) and tensors tagged BUFFER.
#[test]
fn c_example_a3_linear_fp32_buffer_storage() {
    assert_eq!(
        spec_args("a3_linear_fp32_buffer_storage"),
        ["storage_type_override=0x00000000"]
    );
    run_fixture_through_c("a3_linear_fp32_buffer_storage");
}

/// Dynamic batch: one init, cases of batch 8, 1, 5 and 32, each with its own input sizes
/// and the produced output sizes checked against the expected ones.
#[test]
fn c_example_g1_mlp_dynamic_batch() {
    assert_eq!(
        spec_args("g1_mlp_dynamic_batch"),
        ["require_dynamic_shapes=0x01"]
    );
    let stdout = run_fixture_through_c("g1_mlp_dynamic_batch");
    for (case, batch) in [8, 1, 5, 32].into_iter().enumerate() {
        let line = format!("case {case} out 0: {} elements,", batch * 64);
        assert!(stdout.contains(&line), "no {line:?} in:\n{stdout}");
    }
}

/// The compile specs reach the runtime: g1 with `require_dynamic_shapes` = 0 refuses its
/// first case (batch 8, not the serialized 32) with an error naming the input and the size.
#[test]
fn c_example_g1_without_dynamic_shapes_refuses_a_resize() {
    let (exe, lib_dir) = c_example();
    let name = "g1_mlp_dynamic_batch";
    let work = scratch("g1-static");
    let named = work.join("named");
    extract_named_data(name, &named);
    let specs = ["require_dynamic_shapes=0x00".to_string()];
    let mut cmd = fixture_command_with_specs(exe, name, &named, false, &specs);
    with_lib_dir(&mut cmd, lib_dir);
    let (code, stdout, stderr) = run(cmd);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("run_delegate: case 0: ")
            && stderr.contains("input 0: sizes [8, 64]")
            && stderr.contains("dynamic shapes"),
        "{stderr}"
    );

    // A malformed hex value is the example's own usage error.
    let specs = ["require_dynamic_shapes=0x1".to_string()];
    let mut cmd = fixture_command_with_specs(exe, name, &named, false, &specs);
    with_lib_dir(&mut cmd, lib_dir);
    let (code, _, stderr) = run(cmd);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("bad hex --spec value"), "{stderr}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn c_example_reports_mismatches_and_errors() {
    let (exe, lib_dir) = c_example();
    let work = scratch("c-mismatch");
    let named = work.join("named");
    extract_named_data("a_linear_fp32", &named);

    // Wrong expectations: exit 1 and say so.
    let mut cmd = fixture_command(exe, "a_linear_fp32", &named, true);
    with_lib_dir(&mut cmd, lib_dir);
    let (code, stdout, _) = run(cmd);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("MISMATCH"), "{stdout}");

    // Missing named data: exit 2 with etvk_last_error naming the key.
    let mut cmd = fixture_command(exe, "a_linear_fp32", &work.join("nowhere"), false);
    with_lib_dir(&mut cmd, lib_dir);
    let (code, _, stderr) = run(cmd);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("etvk_delegate_init: ") && stderr.contains("c56e8d75"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn c_example_links_the_static_library() {
    let lib = libetvk_dir().join("libetvk.a");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build -p etvk-ffi`",
        lib.display()
    );
    let work = scratch("c-static");
    let exe = work.join("run_delegate_static");
    // vk-mem is C++, hence libstdc++ beside the usual Rust std dependencies.
    compile_c_example(
        &exe,
        &[
            lib.display().to_string(),
            "-lstdc++".into(),
            "-lpthread".into(),
            "-ldl".into(),
            "-lm".into(),
        ],
    );
    let named = work.join("named");
    extract_named_data("a_linear_fp32", &named);
    let (code, stdout, stderr) = run(fixture_command(&exe, "a_linear_fp32", &named, false));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let _ = std::fs::remove_dir_all(&work);
}

/// This thread's last error message.
fn last_error() -> String {
    // SAFETY: etvk_last_error returns a valid NUL-terminated string owned by etvk.
    unsafe { CStr::from_ptr(etvk_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Assert `status` is `want` and the message mentions each of `needles`.
#[track_caller]
fn expect_err(status: EtvkStatus, want: EtvkStatus, needles: &[&str]) {
    let msg = last_error();
    assert_eq!(status, want, "status (message: {msg:?})");
    for n in needles {
        assert!(msg.contains(n), "message {msg:?} does not mention {n:?}");
    }
}

#[test]
fn rust_abi_version_and_empty_last_error() {
    assert_eq!(etvk_abi_version(), etvk_abi::ETVK_ABI_VERSION);
    // A fresh thread has no error yet.
    let msg = std::thread::spawn(last_error).join().expect("thread");
    assert_eq!(msg, "");
}

#[test]
fn rust_null_handles_and_out_pointers() {
    // SAFETY (all calls below): null pointers are part of the tested contract.
    unsafe {
        expect_err(
            etvk_backend_create(null_mut()),
            EtvkStatus::InvalidArgument,
            &["etvk_backend_create", "out is null"],
        );
        expect_err(
            etvk_backend_destroy(null_mut()),
            EtvkStatus::InvalidArgument,
            &["etvk_backend_destroy", "backend is null"],
        );
        expect_err(
            etvk_delegate_destroy(null_mut()),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_destroy", "delegate is null"],
        );
        expect_err(
            etvk_delegate_execute(null_mut(), null_mut(), 0),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_execute", "delegate is null"],
        );
        let blob = [0u8; 16];
        let mut out: *mut EtvkDelegate = std::ptr::NonNull::dangling().as_ptr();
        expect_err(
            etvk_delegate_init(
                null_mut(),
                blob.as_ptr(),
                blob.len(),
                null(),
                0,
                None,
                null_mut(),
                &mut out,
            ),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_init", "backend is null"],
        );
        assert!(out.is_null(), "out must be cleared on failure");
        expect_err(
            etvk_delegate_init(
                null_mut(),
                blob.as_ptr(),
                blob.len(),
                null(),
                0,
                None,
                null_mut(),
                null_mut(),
            ),
            EtvkStatus::InvalidArgument,
            &["out is null"],
        );
    }
}

#[test]
fn rust_last_error_is_per_thread() {
    // SAFETY: a null handle is part of the tested contract.
    let status = unsafe { etvk_delegate_destroy(null_mut()) };
    assert_eq!(status, EtvkStatus::InvalidArgument);
    let other = std::thread::spawn(last_error).join().expect("thread");
    assert_eq!(other, "", "another thread must not see this thread's error");
    assert!(last_error().contains("delegate is null"));
    // The next call clears it.
    // SAFETY: a valid (null) pointer for a failing call; clears then sets again.
    let _ = unsafe { etvk_backend_destroy(null_mut()) };
    assert!(!last_error().contains("delegate is null"));
}

/// A backend on the default device; panics with the runtime's message when there is none.
fn backend() -> *mut EtvkBackend {
    let mut backend = null_mut();
    // SAFETY: `backend` is a valid out pointer.
    let status = unsafe { etvk_backend_create(&mut backend) };
    assert_eq!(
        status,
        EtvkStatus::Ok,
        "etvk_backend_create: {}",
        last_error()
    );
    backend
}

unsafe extern "C" fn lookup_from_program(
    user: *mut c_void,
    key: *const c_char,
    key_len: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> i32 {
    // SAFETY: `user` is the `Program` passed to etvk_delegate_init below; etvk passes
    // `key_len` readable key bytes and valid out pointers.
    unsafe {
        let program = &*(user as *const etvk_format::program_ir::Program);
        let key = std::slice::from_raw_parts(key as *const u8, key_len);
        let Ok(key) = std::str::from_utf8(key) else {
            return 1;
        };
        match program.named_data(key) {
            Some(bytes) => {
                *data = bytes.as_ptr();
                *len = bytes.len();
                0
            }
            None => 1,
        }
    }
}

/// Load fixture `a_linear_fp32` (x[4,64] -> y[4,128]); returns (backend, delegate).
fn linear_delegate() -> (*mut EtvkBackend, *mut EtvkDelegate) {
    let dir = fixture("a_linear_fp32");
    let program =
        etvk_format::program::parse_program(std::fs::read(dir.join("model.pte")).expect("pte"))
            .expect("parse_program");
    let blob = std::fs::read(dir.join("delegate.bin")).expect("delegate.bin");
    let backend = backend();
    let mut delegate = null_mut();
    // SAFETY: all pointers are valid for the call; the callback reads `program`, which
    // outlives it.
    let status = unsafe {
        etvk_delegate_init(
            backend,
            blob.as_ptr(),
            blob.len(),
            null(),
            0,
            Some(lookup_from_program),
            &program as *const _ as *mut c_void,
            &mut delegate,
        )
    };
    assert_eq!(
        status,
        EtvkStatus::Ok,
        "etvk_delegate_init: {}",
        last_error()
    );
    (backend, delegate)
}

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
        kind: ETVK_ARG_TENSOR,
        int_value: 0,
        tensor: t,
    }
}

#[test]
fn rust_device_garbage_blob_and_bad_specs() {
    let backend = backend();
    let garbage = b"this is not a VH00 delegate blob at all".to_vec();
    let mut delegate = null_mut();
    // SAFETY: valid pointers; the blob is garbage on purpose.
    let status = unsafe {
        etvk_delegate_init(
            backend,
            garbage.as_ptr(),
            garbage.len(),
            null(),
            0,
            None,
            null_mut(),
            &mut delegate,
        )
    };
    assert!(
        matches!(status, EtvkStatus::InvalidProgram),
        "status {status:?}: {}",
        last_error()
    );
    assert!(last_error().starts_with("etvk_delegate_init: "));
    assert!(delegate.is_null());

    let spec = EtvkCompileSpec {
        key: null(),
        value: null(),
        value_len: 0,
    };
    // SAFETY: valid pointers except the spec key, which is null on purpose.
    let status = unsafe {
        etvk_delegate_init(
            backend,
            garbage.as_ptr(),
            garbage.len(),
            &spec,
            1,
            None,
            null_mut(),
            &mut delegate,
        )
    };
    expect_err(
        status,
        EtvkStatus::InvalidArgument,
        &["specs[0].key is null"],
    );
    // SAFETY: null blob on purpose.
    let status = unsafe {
        etvk_delegate_init(
            backend,
            null(),
            0,
            null(),
            0,
            None,
            null_mut(),
            &mut delegate,
        )
    };
    expect_err(status, EtvkStatus::InvalidArgument, &["blob is null"]);
    // SAFETY: `backend` is live and destroyed once.
    assert_eq!(unsafe { etvk_backend_destroy(backend) }, EtvkStatus::Ok);
}

#[test]
fn rust_device_execute_argument_checks() {
    let (backend, delegate) = linear_delegate();
    // The delegate keeps the device alive after the backend handle is gone.
    // SAFETY: `backend` is live and destroyed once.
    assert_eq!(unsafe { etvk_backend_destroy(backend) }, EtvkStatus::Ok);

    let dir = fixture("a_linear_fp32");
    let mut x = std::fs::read(dir.join("case0_in0.bin")).expect("input");
    let want = std::fs::read(dir.join("case0_out0.bin")).expect("output");
    let mut y = vec![0u8; want.len()];
    let good = |x: &mut Vec<u8>, y: &mut Vec<u8>| {
        [
            tensor(ETVK_DTYPE_FLOAT, &[4, 64], x),
            tensor(ETVK_DTYPE_FLOAT, &[4, 128], y),
        ]
    };
    // SAFETY (all execute calls): `args` points to the given number of valid args whose
    // buffers are live for the call.
    let exec = |args: &mut [EtvkArg], n: usize| unsafe {
        etvk_delegate_execute(delegate, args.as_mut_ptr(), n)
    };

    let mut args = good(&mut x, &mut y);
    expect_err(
        exec(&mut args, 1),
        EtvkStatus::InvalidArgument,
        &["num_args is 1"],
    );
    expect_err(
        exec(&mut args, 3),
        EtvkStatus::InvalidArgument,
        &["num_args is 3"],
    );
    // SAFETY: null args with a non-zero count on purpose.
    let status = unsafe { etvk_delegate_execute(delegate, null_mut(), 2) };
    expect_err(status, EtvkStatus::InvalidArgument, &["args is null"]);

    let mut args = good(&mut x, &mut y);
    args[0].tensor.dtype = 42;
    expect_err(
        exec(&mut args, 2),
        EtvkStatus::InvalidArgument,
        &["args[0]", "dtype code 42"],
    );
    let mut args = good(&mut x, &mut y);
    args[1].tensor.ndim = ETVK_MAX_DIMS as u32 + 1;
    expect_err(
        exec(&mut args, 2),
        EtvkStatus::InvalidArgument,
        &["args[1]", "ndim 9"],
    );
    let mut args = good(&mut x, &mut y);
    args[0].tensor.sizes[1] = -64;
    expect_err(
        exec(&mut args, 2),
        EtvkStatus::InvalidArgument,
        &["args[0]", "negative"],
    );
    let mut args = good(&mut x, &mut y);
    args[0].tensor.nbytes -= 4;
    expect_err(
        exec(&mut args, 2),
        EtvkStatus::InvalidArgument,
        &["args[0]", "nbytes"],
    );
    let mut args = good(&mut x, &mut y);
    args[1].tensor.nbytes = 16;
    args[1].tensor.ndim = 0;
    expect_err(
        exec(&mut args, 2),
        EtvkStatus::InvalidArgument,
        &["args[1]", "nbytes"],
    );
    let mut args = good(&mut x, &mut y);
    args[1].kind = 99;
    expect_err(
        exec(&mut args, 2),
        EtvkStatus::InvalidArgument,
        &["args[1]", "kind 99"],
    );

    // A good call still works after all the rejected ones, and reports the shape.
    let mut args = good(&mut x, &mut y);
    args[1].tensor.ndim = 0;
    args[1].tensor.sizes = [0; ETVK_MAX_DIMS];
    assert_eq!(exec(&mut args, 2), EtvkStatus::Ok, "{}", last_error());
    assert_eq!(last_error(), "");
    assert_eq!(args[1].tensor.ndim, 2);
    assert_eq!(&args[1].tensor.sizes[..2], &[4, 128]);
    let got: Vec<f32> = y
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let exp: Vec<f32> = want
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    for (i, (g, w)) in got.iter().zip(&exp).enumerate() {
        assert!(
            (g - w).abs() <= 1e-3 + 1e-3 * w.abs(),
            "y[{i}] = {g}, want {w}"
        );
    }

    // SAFETY: `delegate` is live and destroyed once.
    assert_eq!(unsafe { etvk_delegate_destroy(delegate) }, EtvkStatus::Ok);
}
