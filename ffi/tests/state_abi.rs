//! The C ABI's GPU-resident state and runtime-scalar calls (`etvk_delegate_read_tensor`,
//! `etvk_delegate_write_tensor`, `etvk_delegate_set_scalar`, `etvk_delegate_replay`) on a
//! one-op AdamW graph built with the format writer: the state persists across executes and
//! replays, scalars change between them, and bad arguments are rejected with a status and a
//! message naming them.

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

use etvk::*;
use etvk_abi::{EtvkArg, EtvkBackend, EtvkDelegate, EtvkStatus, EtvkTensor, ETVK_MAX_DIMS};
use etvk_format::ir::DataType;

fn last_error() -> String {
    // SAFETY: etvk_last_error returns a valid NUL-terminated string owned by etvk.
    unsafe { CStr::from_ptr(etvk_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
fn expect_err(status: EtvkStatus, want: EtvkStatus, needles: &[&str]) {
    let msg = last_error();
    assert_eq!(status, want, "status (message: {msg:?})");
    for n in needles {
        assert!(msg.contains(n), "message {msg:?} does not mention {n:?}");
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn tensor(dtype: i32, sizes: &[i64], data: &mut [u8]) -> EtvkTensor {
    let mut t = EtvkTensor {
        dtype,
        ndim: sizes.len() as u32,
        sizes: [0; ETVK_MAX_DIMS],
        data: data.as_mut_ptr() as *mut c_void,
        nbytes: data.len(),
    };
    t.sizes[..sizes.len()].copy_from_slice(sizes);
    t
}

/// Value ids of the graph below.
struct Ids {
    param: usize,
    lr: usize,
    bc1: usize,
    bc2: usize,
}

const P0: [f32; 6] = [0.5, -1.0, 2.0, 0.25, -0.75, 1.5];
const HP: [f64; 5] = [0.1, 0.9, 0.999, 1e-8, 0.01];

/// `adamw_step` on param [2, 3] (inline constant), m and v (inline zero constants), grad
/// (input); the graph output is the updated param (aliased through the op's ValueList).
fn adamw_blob() -> (Vec<u8>, Ids) {
    let mut g = etvk_format::writer::GraphBuilder::new();
    let param = g.add_constant_inline(DataType::Float32, &[2, 3], &f32_bytes(&P0));
    let m = g.add_constant_inline(DataType::Float32, &[2, 3], &[0; 24]);
    let v = g.add_constant_inline(DataType::Float32, &[2, 3], &[0; 24]);
    let grad = g.add_tensor(DataType::Float32, &[2, 3]);
    let lr = g.add_double(HP[0]);
    let b1 = g.add_double(HP[1]);
    let b2 = g.add_double(HP[2]);
    let eps = g.add_double(HP[3]);
    let wd = g.add_double(HP[4]);
    let bc1 = g.add_double(1.0);
    let bc2 = g.add_double(1.0);
    let outs: Vec<usize> = (0..3)
        .map(|_| g.add_tensor(DataType::Float32, &[2, 3]))
        .collect();
    let out = g.add_value_list(&outs);
    g.add_op(
        "et_vk.adamw_step.default",
        &[param, m, v, grad, lr, b1, b2, eps, wd, bc1, bc2, out],
    );
    g.mark_input(grad);
    g.mark_output(outs[0]);
    let (graph, region) = g.finish();
    (
        etvk_format::writer::write_delegate(&graph, &region),
        Ids {
            param,
            lr,
            bc1,
            bc2,
        },
    )
}

fn create() -> (*mut EtvkBackend, *mut EtvkDelegate, Ids) {
    let mut backend = null_mut();
    // SAFETY: valid out pointer.
    let status = unsafe { etvk_backend_create(&mut backend) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    let (blob, ids) = adamw_blob();
    let mut delegate = null_mut();
    // SAFETY: valid pointers; no named data needed (the constants are inline).
    let status = unsafe {
        etvk_delegate_init(
            backend,
            blob.as_ptr(),
            blob.len(),
            null(),
            0,
            None,
            null_mut(),
            &mut delegate,
        )
    };
    assert_eq!(
        status,
        EtvkStatus::Ok,
        "etvk_delegate_init: {}",
        last_error()
    );
    (backend, delegate, ids)
}

/// One execute with gradient `g` ([2, 3]); returns the output (the updated parameter).
fn execute_step(delegate: *mut EtvkDelegate, g: &[f32]) -> Vec<f32> {
    let mut gb = f32_bytes(g);
    let mut ob = vec![0u8; 24];
    let mut args = [
        EtvkArg {
            kind: ETVK_ARG_TENSOR,
            int_value: 0,
            tensor: tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut gb),
        },
        EtvkArg {
            kind: ETVK_ARG_TENSOR,
            int_value: 0,
            tensor: tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut ob),
        },
    ];
    // SAFETY: two valid args with live buffers.
    let status = unsafe { etvk_delegate_execute(delegate, args.as_mut_ptr(), 2) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    f32s(&ob)
}

/// One f64 AdamW step (§4.4 order) with the scalars rounded to f32 as the GPU holds them.
fn adamw_ref(p: &mut [f64], m: &mut [f64], v: &mut [f64], g: &[f32], lr: f64, bc1: f64, bc2: f64) {
    let r = |x: f64| x as f32 as f64;
    let (lr, b1, b2, eps, wd, bc1, bc2) = (
        r(lr),
        r(HP[1]),
        r(HP[2]),
        r(HP[3]),
        r(HP[4]),
        r(bc1),
        r(bc2),
    );
    for i in 0..p.len() {
        let gi = g[i] as f64;
        let w = p[i] - lr * wd * p[i];
        m[i] = b1 * m[i] + (1.0 - b1) * gi;
        v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
        p[i] = w - lr * (m[i] / bc1) / ((v[i] / bc2).sqrt() + eps);
    }
}

/// Sets AdamW's bias corrections for step `t` (from 1) and returns them (bc1, bc2).
fn set_bias_corrections(delegate: *mut EtvkDelegate, ids: &Ids, t: i32) -> (f64, f64) {
    let bc1 = 1.0 - HP[1].powi(t);
    let bc2 = 1.0 - HP[2].powi(t);
    for (id, v) in [(ids.bc1, bc1), (ids.bc2, bc2)] {
        // SAFETY: `delegate` is live (the callers' handles).
        let status = unsafe { etvk_delegate_set_scalar(delegate, id, v) };
        assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    }
    (bc1, bc2)
}

fn read_param(delegate: *mut EtvkDelegate, id: usize) -> Vec<f32> {
    let mut buf = vec![0u8; 24];
    let mut t = tensor(ETVK_DTYPE_FLOAT, &[], &mut buf);
    // SAFETY: `t` points to 24 writable bytes.
    let status = unsafe { etvk_delegate_read_tensor(delegate, id, &mut t) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    assert_eq!(t.ndim, 2);
    assert_eq!(&t.sizes[..3], &[2, 3, 0]);
    f32s(&buf)
}

/// `etvk_delegate_replay` runs the last execute's work again on the gradient it left on the
/// GPU: each replay is one more AdamW step, with the bias corrections set in between, and
/// the state read back matches the f64 reference; before any execute it is refused.
#[test]
fn replay_steps_on_the_gpu_without_host_transfers() {
    let (backend, delegate, ids) = create();
    // SAFETY (replay calls): `delegate` is live or null on purpose.
    unsafe {
        expect_err(
            etvk_delegate_replay(delegate),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_replay", "execute first"],
        );
        expect_err(
            etvk_delegate_replay(null_mut()),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_replay", "delegate is null"],
        );
    }
    let mut p: Vec<f64> = P0.iter().map(|x| *x as f64).collect();
    let (mut m, mut v) = (vec![0f64; 6], vec![0f64; 6]);
    let g: Vec<f32> = (0..6).map(|i| (i % 4) as f32 - 1.5).collect();
    for t in 1..=3 {
        let (bc1, bc2) = set_bias_corrections(delegate, &ids, t);
        if t == 1 {
            execute_step(delegate, &g);
        } else {
            // SAFETY: `delegate` is live.
            let status = unsafe { etvk_delegate_replay(delegate) };
            assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
        }
        adamw_ref(&mut p, &mut m, &mut v, &g, HP[0], bc1, bc2);
        let state = read_param(delegate, ids.param);
        for i in 0..6 {
            let tol = 1e-6 + 1e-5 * p[i].abs();
            assert!(
                (state[i] as f64 - p[i]).abs() <= tol,
                "step {t} param[{i}] {} vs {}",
                state[i],
                p[i]
            );
        }
    }
    // SAFETY: both handles are live and destroyed once.
    unsafe {
        assert_eq!(etvk_delegate_destroy(delegate), EtvkStatus::Ok);
        assert_eq!(etvk_backend_destroy(backend), EtvkStatus::Ok);
    }
}

#[test]
fn state_persists_and_scalars_change_between_executes() {
    let (backend, delegate, ids) = create();
    assert_eq!(read_param(delegate, ids.param), P0.to_vec());
    let mut p: Vec<f64> = P0.iter().map(|x| *x as f64).collect();
    let (mut m, mut v) = (vec![0f64; 6], vec![0f64; 6]);
    let mut lr = HP[0];
    for t in 1..=4 {
        let (bc1, bc2) = set_bias_corrections(delegate, &ids, t);
        if t == 3 {
            lr = 0.02;
            // SAFETY: `delegate` is live.
            let status = unsafe { etvk_delegate_set_scalar(delegate, ids.lr, lr) };
            assert_eq!(status, EtvkStatus::Ok);
        }
        let g: Vec<f32> = (0..6)
            .map(|i| ((i * 7 + t as usize) % 5) as f32 - 2.0)
            .collect();
        let out = execute_step(delegate, &g);
        adamw_ref(&mut p, &mut m, &mut v, &g, lr, bc1, bc2);
        let state = read_param(delegate, ids.param);
        for i in 0..6 {
            let tol = 1e-6 + 1e-5 * p[i].abs();
            assert!(
                (out[i] as f64 - p[i]).abs() <= tol,
                "step {t} out[{i}] {} vs {}",
                out[i],
                p[i]
            );
            assert_eq!(out[i], state[i], "the output aliases the state");
        }
    }

    // Restore a saved parameter through the ABI and read it back.
    let mut saved = f32_bytes(&P0);
    let t = tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut saved);
    // SAFETY: `t` points to 24 readable bytes.
    let status = unsafe { etvk_delegate_write_tensor(delegate, ids.param, &t) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    assert_eq!(read_param(delegate, ids.param), P0.to_vec());

    // SAFETY: both handles are live and destroyed once.
    unsafe {
        assert_eq!(etvk_delegate_destroy(delegate), EtvkStatus::Ok);
        assert_eq!(etvk_backend_destroy(backend), EtvkStatus::Ok);
    }
}

#[test]
fn state_calls_reject_bad_arguments() {
    // SAFETY (all calls below): null and undersized arguments are the tested contract; the
    // buffers passed are live and as large as their nbytes says.
    unsafe {
        expect_err(
            etvk_delegate_set_scalar(null_mut(), 0, 1.0),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_set_scalar", "delegate is null"],
        );
        expect_err(
            etvk_delegate_read_tensor(null_mut(), 0, null_mut()),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_read_tensor", "delegate is null"],
        );
        expect_err(
            etvk_delegate_write_tensor(null_mut(), 0, null()),
            EtvkStatus::InvalidArgument,
            &["etvk_delegate_write_tensor", "delegate is null"],
        );

        let (backend, delegate, ids) = create();
        expect_err(
            etvk_delegate_read_tensor(delegate, ids.param, null_mut()),
            EtvkStatus::InvalidArgument,
            &["inout is null"],
        );
        expect_err(
            etvk_delegate_write_tensor(delegate, ids.param, null()),
            EtvkStatus::InvalidArgument,
            &["tensor is null"],
        );
        // Wrong dtype, too small a buffer: nothing written.
        let mut buf = vec![0xAAu8; 24];
        let mut t = tensor(ETVK_DTYPE_DOUBLE, &[], &mut buf);
        expect_err(
            etvk_delegate_read_tensor(delegate, ids.param, &mut t),
            EtvkStatus::InvalidArgument,
            &["stored as Float", &format!("value {}", ids.param)],
        );
        let mut small = vec![0xAAu8; 20];
        let mut t = tensor(ETVK_DTYPE_FLOAT, &[], &mut small);
        expect_err(
            etvk_delegate_read_tensor(delegate, ids.param, &mut t),
            EtvkStatus::InvalidArgument,
            &["nbytes is only 20"],
        );
        assert_eq!(small, vec![0xAA; 20]);
        assert_eq!(t.ndim, 0);
        // Not a tensor / not a scalar / out of range.
        let mut t = tensor(ETVK_DTYPE_FLOAT, &[], &mut buf);
        expect_err(
            etvk_delegate_read_tensor(delegate, ids.lr, &mut t),
            EtvkStatus::InvalidArgument,
            &["not a tensor"],
        );
        expect_err(
            etvk_delegate_set_scalar(delegate, ids.param, 1.0),
            EtvkStatus::InvalidArgument,
            &["not a runtime scalar"],
        );
        expect_err(
            etvk_delegate_set_scalar(delegate, 10_000, 1.0),
            EtvkStatus::InvalidArgument,
            &["value 10000"],
        );
        // Write: wrong shape, nbytes mismatch, null data, unknown dtype.
        let mut data = vec![0u8; 24];
        let t = tensor(ETVK_DTYPE_FLOAT, &[3, 2], &mut data);
        expect_err(
            etvk_delegate_write_tensor(delegate, ids.param, &t),
            EtvkStatus::InvalidArgument,
            &["[3, 2]", "[2, 3]"],
        );
        let mut t = tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut data);
        t.nbytes = 20;
        expect_err(
            etvk_delegate_write_tensor(delegate, ids.param, &t),
            EtvkStatus::InvalidArgument,
            &["nbytes is 20"],
        );
        let mut t = tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut data);
        t.data = null_mut();
        expect_err(
            etvk_delegate_write_tensor(delegate, ids.param, &t),
            EtvkStatus::InvalidArgument,
            &["tensor->data is null"],
        );
        let mut t = tensor(ETVK_DTYPE_FLOAT, &[2, 3], &mut data);
        t.dtype = 42;
        expect_err(
            etvk_delegate_write_tensor(delegate, ids.param, &t),
            EtvkStatus::InvalidArgument,
            &["unknown dtype code 42"],
        );
        // The state is untouched by the failed writes.
        assert_eq!(read_param(delegate, ids.param), P0.to_vec());
        assert_eq!(etvk_delegate_destroy(delegate), EtvkStatus::Ok);
        assert_eq!(etvk_backend_destroy(backend), EtvkStatus::Ok);
    }
}

/// `etvk_delegate_profile`: empty while profiling is off (the default); after
/// `etvk_delegate_set_profiling(1)`, the per-dispatch GPU times of the last execute, named by
/// op and node id; a count query, a truncated copy, bad arguments, and off again.
#[test]
fn profile_lists_the_last_execute_dispatches() {
    use etvk_abi::{EtvkProfileEntry, ETVK_PROFILE_NAME_LEN};
    let (backend, delegate, _ids) = create();
    let profiled = |delegate| {
        let mut count = usize::MAX;
        // SAFETY: a count query: null entries with capacity 0, a writable count.
        let status = unsafe { etvk_delegate_profile(delegate, null_mut(), 0, &mut count) };
        assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
        count
    };
    execute_step(delegate, &[0.5; 6]);
    if std::env::var("ETVK_PROFILE").as_deref() != Ok("1") {
        assert_eq!(profiled(delegate), 0, "profiling is off by default");
    }
    // SAFETY: a live delegate.
    let status = unsafe { etvk_delegate_set_profiling(delegate, 1) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    execute_step(delegate, &[0.5; 6]);

    let mut count = usize::MAX;
    // SAFETY: a count query: null entries with capacity 0, a writable count.
    let status = unsafe { etvk_delegate_profile(delegate, null_mut(), 0, &mut count) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    assert!(count >= 1, "one dispatch at least, got {count}");
    let empty = EtvkProfileEntry {
        op: [0; ETVK_PROFILE_NAME_LEN],
        node_id: u32::MAX,
        gpu_us: -1.0,
    };
    let mut entries = vec![empty; count + 2];
    let mut written = 0usize;
    // SAFETY: `entries` holds count + 2 writable entries.
    let status = unsafe {
        etvk_delegate_profile(delegate, entries.as_mut_ptr(), entries.len(), &mut written)
    };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    assert_eq!(written, count);
    // SAFETY: the op name is NUL-terminated within the array.
    let name = unsafe { CStr::from_ptr(entries[0].op.as_ptr()) }.to_string_lossy();
    assert_eq!(name, "et_vk.adamw_step.default");
    assert!(entries[0].gpu_us >= 0.0, "{}", entries[0].gpu_us);
    assert_ne!(entries[0].node_id, u32::MAX);
    assert_eq!(
        entries[count].node_id,
        u32::MAX,
        "nothing past the count is written"
    );

    // A capacity of 1 writes one entry and still reports the total.
    let mut one = vec![empty; 1];
    let mut total = 0usize;
    // SAFETY: one writable entry.
    let status = unsafe { etvk_delegate_profile(delegate, one.as_mut_ptr(), 1, &mut total) };
    assert_eq!(status, EtvkStatus::Ok);
    assert_eq!(total, count);
    assert_eq!(one[0].node_id, entries[0].node_id);

    // Off again: the next execute records no timestamps.
    // SAFETY: a live delegate.
    let status = unsafe { etvk_delegate_set_profiling(delegate, 0) };
    assert_eq!(status, EtvkStatus::Ok, "{}", last_error());
    execute_step(delegate, &[0.5; 6]);
    assert_eq!(profiled(delegate), 0, "profiling switched off");

    // SAFETY: the calls below pass null pointers on purpose; etvk checks them.
    unsafe {
        let status = etvk_delegate_set_profiling(null_mut(), 1);
        expect_err(status, EtvkStatus::InvalidArgument, &["delegate"]);
        let status = etvk_delegate_profile(delegate, null_mut(), 0, null_mut());
        expect_err(status, EtvkStatus::InvalidArgument, &["count"]);
        let status = etvk_delegate_profile(delegate, null_mut(), 3, &mut total);
        expect_err(status, EtvkStatus::InvalidArgument, &["entries"]);
        let status = etvk_delegate_profile(null_mut(), null_mut(), 0, &mut total);
        expect_err(status, EtvkStatus::InvalidArgument, &["delegate"]);
        assert_eq!(etvk_delegate_destroy(delegate), EtvkStatus::Ok);
        assert_eq!(etvk_backend_destroy(backend), EtvkStatus::Ok);
    }
}
