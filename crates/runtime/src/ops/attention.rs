//! Attention ops: `et_vk.sdpa.default` (`[q, k, v, attn_mask?, scale?, out]`, tensors
//! `[B, H, S, D]`), `sdpa_with_kv_cache.default` (`[q, k, v, k_cache, v_cache,
//! start_pos, seq_len, attn_mask?, dropout_p, is_causal, scale?, out]`, tensors
//! `[B, S, H, D]`, caches `[B, max_seq, H_kv, D]`), and the unfused pair the exporter
//! emits without the `causal_sdpa` fusion: `update_cache.default` (`[value, cache,
//! start_pos, out]`) and `llama.custom_sdpa.default` (`[q, k_cache, v_cache, start_pos,
//! attn_mask?, dropout_p, is_causal, scale?, out]`).
//!
//! Attention runs the `sdpa` shader: one 64-lane workgroup per (batch, head, query row)
//! with an online softmax over key chunks, layouts given by strides. Cache writes copy
//! `[B, S, H_kv, D]` rows into a cache at `[start_pos, start_pos + S)` in place: a constant
//! cache is its contiguous prepack, which persists across executes (and which
//! `Delegate::read_tensor` reads), so decode steps accumulate, and every op naming the same
//! cache constant shares that one buffer. `start_pos` is read on the GPU from the scalar
//! buffer, so a SymInt start position (a graph input or `et_vk.select_as_symint`) changes
//! without a re-record; the resize functions, which rerun whenever it changes, check
//! `start_pos + S <= max_seq` on the host. Attention is fp32 only.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Binding, Global, Launch, Push, Shapes, TensorId};
use crate::ops::training::folded_grid;
use crate::ops::{data_shader, same_dtype};
use crate::registry::{OpEntry, Registry};

/// Storage dtypes of the attention ops (math in float either way).
const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Dtypes of `update_cache` (the `sdpa_cache_update` copy variants).
const CACHE_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Local size of the `sdpa` shader (its `LANES`).
const LANES: u32 = 64;
/// Head dims one workgroup can hold (`LANES * PER_LANE` in `sdpa.comp`).
const MAX_HEAD_DIM: usize = 256;
/// `pos_slot` value meaning "no start position" (plain attention over all keys).
const NO_SLOT: u32 = u32::MAX;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "et_vk.sdpa.default",
        build: build_sdpa,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "softmax(q k^T * scale + mask) v on [B, H, S, D], k / v [B, H_kv, L, D] (H_kv divides H), mask [S or 1, L] additive, scale default 1/sqrt(D); D <= 256",
    })?;
    r.register(OpEntry {
        name: "sdpa_with_kv_cache.default",
        build: build_sdpa_kv_cache,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "writes k / v [B, S, H_kv, D] into caches [B, max_seq, H_kv, D] at start_pos (in place, persists) and attends q [B, S, H, D] over cache positions [0, start_pos + S), in one dispatch; causal when is_causal; GQA; no attn_mask, dropout 0; D <= 256",
    })?;
    r.register(OpEntry {
        name: "update_cache.default",
        build: build_update_cache,
        dtypes: CACHE_DTYPES,
        dynamic_shapes: true,
        note: "llama::update_cache: writes value [B, S, H, D] into cache [B, max_seq, H, D] at rows start_pos.. in place (persists across executes); start_pos + S <= max_seq; the [1] output is a placeholder and is not written",
    })?;
    r.register(OpEntry {
        name: "llama.custom_sdpa.default",
        build: build_custom_sdpa,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "attention of q [B, S, H, D] over cache positions [0, start_pos + S) of k_cache / v_cache [B, max_seq, H_kv, D]; causal relative to start_pos when is_causal; optional additive attn_mask [S, >= start_pos + S] (not with is_causal); GQA; dropout 0; D <= 256",
    })?;
    Ok(())
}

/// `ETVK_SDPA_VEC=0`: the attention reads key rows as scalars (8 in flight) even where
/// 4-vectors would do (comparisons; read once per process).
fn scalar_key_rows() -> bool {
    static SCALAR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SCALAR.get_or_init(|| std::env::var("ETVK_SDPA_VEC").is_ok_and(|v| v == "0"))
}

/// Everything the `sdpa` shader's push block needs, in its order.
struct SdpaPush {
    rows: usize,
    s: usize,
    h: usize,
    group: usize,
    d: usize,
    l: usize,
    causal: bool,
    pos_slot: u32,
    scale: f32,
    mask_row: Option<usize>,
    q_strides: [usize; 3],
    kv_strides: [usize; 3],
    out_strides: [usize; 3],
    /// The fused form's batch stride of the call's k / v (`kst.w`; 0 otherwise).
    new_kv_batch: usize,
    /// The HF RoPE inside (`sdpa_kv_rope_hf_*`): rotary dim, table rows, start_pos slot.
    rope_hf: [u32; 3],
    /// The fused forms' split keys ([`key_split`]): workgroups per query row (the shader
    /// uses as many as the step's keys fill).
    split: u32,
}

impl SdpaPush {
    fn launch(&self, what: &str) -> Result<Launch> {
        let st = |v: [usize; 3], name: &str| -> Result<Vec<u32>> {
            v.iter().map(|&x| to_u32(x, name)).collect()
        };
        let push = Push::new()
            .u32(to_u32(self.rows, "rows")?)
            .u32(to_u32(self.s.max(1), "S")?)
            .u32(to_u32(self.h.max(1), "H")?)
            .u32(to_u32(self.group.max(1), "group")?)
            .u32(to_u32(self.d, "D")?)
            .u32(to_u32(self.l, "L")?)
            .u32(self.causal as u32)
            .u32(self.pos_slot)
            .f32(self.scale)
            .u32(self.mask_row.is_some() as u32)
            .u32(to_u32(self.mask_row.unwrap_or(0), "mask row stride")?)
            .u32(scalar_key_rows() as u32)
            .u32_array(&st(self.q_strides, "q stride")?, 4, 0)
            .u32_array(
                &[
                    st(self.kv_strides, "k stride")?,
                    vec![to_u32(self.new_kv_batch, "k batch stride")?],
                ]
                .concat(),
                4,
                0,
            )
            .u32_array(&st(self.out_strides, "out stride")?, 4, 0)
            .u32_array(&self.rope_hf, 4, 0)
            .u32_array(&[self.split], 4, 0)
            .finish();
        let groups = (self.rows as u64) * u64::from(self.split.max(1));
        Ok(Launch {
            push,
            global: folded_grid(groups, [LANES, 1, 1], what)?,
        })
    }
}

/// Check the head dim fits the kernel and the head counts divide (grouped-query attention).
/// Shapes of q `[B, S, H, D]` attending KV caches `[B, max_seq, H_kv, D]` (the
/// `sdpa_with_kv_cache` and `custom_sdpa` layout), checked against each other.
#[derive(Clone, Copy)]
struct CacheAttention {
    b: usize,
    sq: usize,
    h: usize,
    d: usize,
    max_seq: usize,
    h_kv: usize,
    group: usize,
}

impl CacheAttention {
    /// The current shapes, and q's sizes (the output's).
    fn of(
        s: &Shapes,
        what: &str,
        q: TensorId,
        k_cache: TensorId,
        v_cache: TensorId,
    ) -> Result<(Vec<usize>, CacheAttention)> {
        let qd = s.dims(q).to_vec();
        let [b, sq, h, d] = rank4(what, "q", &qd, "[B, S, H, D]")?;
        let cd = s.dims(k_cache).to_vec();
        let [cb, max_seq, h_kv, cdd] = rank4(what, "k_cache", &cd, "[B, max_seq, H_kv, D]")?;
        if cb != b || cdd != d || s.dims(v_cache) != cd.as_slice() {
            return Err(invalid_arg(format!(
                "{what}: caches {cd:?} / {:?} must both be [B, max_seq, H_kv, D] with q {qd:?}'s B and D",
                s.dims(v_cache)
            )));
        }
        let group = check_heads(what, h, h_kv, d)?;
        Ok((
            qd,
            CacheAttention {
                b,
                sq,
                h,
                d,
                max_seq,
                h_kv,
                group,
            },
        ))
    }

    /// The kernel's push block over the caches (keys = cache rows).
    fn push(
        &self,
        causal: bool,
        pos_slot: u32,
        scale: Option<f64>,
        mask_row: Option<usize>,
    ) -> SdpaPush {
        let CacheAttention {
            b,
            sq,
            h,
            d,
            max_seq,
            h_kv,
            group,
        } = *self;
        SdpaPush {
            rows: b * h * sq,
            s: sq,
            h,
            group,
            d,
            l: max_seq,
            causal,
            pos_slot,
            scale: scale.unwrap_or(1.0 / (d.max(1) as f64).sqrt()) as f32,
            mask_row,
            q_strides: [sq * h * d, d, h * d],
            kv_strides: [max_seq * h_kv * d, d, h_kv * d],
            out_strides: [sq * h * d, d, h * d],
            new_kv_batch: 0,
            rope_hf: [0; 3],
            split: 1,
        }
    }
}

fn check_heads(what: &str, h: usize, h_kv: usize, d: usize) -> Result<usize> {
    if d > MAX_HEAD_DIM {
        return Err(unsupported(format!(
            "{what}: head dim {d} exceeds the kernel's limit of {MAX_HEAD_DIM}"
        )));
    }
    if h_kv == 0 || !h.is_multiple_of(h_kv) {
        return Err(invalid_arg(format!(
            "{what}: key / value heads {h_kv} must divide query heads {h}"
        )));
    }
    Ok(h / h_kv)
}

/// The scale argument (`None` when `Null`), checked to be a number.
fn opt_scale(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<Option<f64>> {
    let x = g.double_arg_or(call, i, f64::NAN)?;
    Ok(if x.is_nan() { None } else { Some(x) })
}

fn rank4(what: &str, role: &str, dims: &[usize], form: &str) -> Result<[usize; 4]> {
    <[usize; 4]>::try_from(dims)
        .map_err(|_| invalid_arg(format!("{what}: {role} sizes {dims:?} must be {form}")))
}

/// `[q, k, v, attn_mask?, scale?, out]`, q / out `[B, H, S, D]`, k / v `[B, H_kv, L, D]`.
fn build_sdpa(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let what = call.what();
    let q = g.tensor_or_prepack(call, 0)?;
    let k = g.tensor_or_prepack(call, 1)?;
    let v = g.tensor_or_prepack(call, 2)?;
    let mask = g.opt_tensor_or_prepack(call, 3)?;
    let scale = opt_scale(g, call, 4)?;
    let out = g.tensor_arg(call, 5)?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(q), s.dtype(k), s.dtype(v), s.dtype(out)];
    dts.extend(mask.map(|m| s.dtype(m)));
    let dt = same_dtype(call, &dts)?;
    let sdpa = sdpa_shader(&what, dt)?;
    let mask_b = g.or_dummy(mask)?;
    let bindings = [
        Binding::Tensor(out),
        Binding::Tensor(q),
        Binding::Tensor(k),
        Binding::Tensor(v),
        Binding::Tensor(mask_b),
        Binding::Scalars,
    ];
    g.dispatch(call, Dispatch::new(sdpa, bindings), move |s| {
        let qd = s.dims(q).to_vec();
        let [b, h, sq, d] = rank4(&what, "q", &qd, "[B, H, S, D]")?;
        let kd = s.dims(k).to_vec();
        let [kb, h_kv, l, dk] = rank4(&what, "k", &kd, "[B, H_kv, L, D]")?;
        if kb != b || dk != d || s.dims(v) != kd.as_slice() {
            return Err(invalid_arg(format!(
                "{what}: k {kd:?} and v {:?} must both be [B, H_kv, L, D] with q {qd:?}'s B and D",
                s.dims(v)
            )));
        }
        let group = check_heads(&what, h, h_kv, d)?;
        let mask_row = match mask {
            Some(m) => Some(mask_row_stride(s, m, sq, l, &what)?),
            None => None,
        };
        s.set_dims(out, qd)?;
        SdpaPush {
            rows: b * h * sq,
            s: sq,
            h,
            group,
            d,
            l,
            causal: false,
            pos_slot: NO_SLOT,
            scale: scale.unwrap_or(1.0 / (d.max(1) as f64).sqrt()) as f32,
            mask_row,
            q_strides: [h * sq * d, sq * d, d],
            kv_strides: [h_kv * l * d, l * d, d],
            out_strides: [h * sq * d, sq * d, d],
            new_kv_batch: 0,
            rope_hf: [0; 3],
            split: 1,
        }
        .launch(&what)
    })
}

/// Row stride of an additive mask whose last two dims are `[S or 1, L]` (leading dims 1).
fn mask_row_stride(s: &Shapes, m: TensorId, sq: usize, l: usize, what: &str) -> Result<usize> {
    let md = s.dims(m);
    let n = md.len();
    let ok = n >= 2
        && md[..n - 2].iter().all(|&x| x == 1)
        && md[n - 1] == l
        && (md[n - 2] == sq || md[n - 2] == 1);
    if !ok {
        return Err(invalid_arg(format!(
            "{what}: attn_mask sizes {md:?} must be [.., S or 1, L] = [.., {sq}, {l}] with leading dims 1"
        )));
    }
    Ok(if md[n - 2] == 1 { 0 } else { l })
}

/// The attention kernel for tensors of `dt` (float32 or float16 storage, float math).
fn sdpa_shader(what: &str, dt: DataType) -> Result<ShaderId> {
    sdpa_shader_of(what, dt, false)
}

/// The attention kernel, or with `fused_kv` its form that also writes the call's keys and
/// values into the caches (`sdpa_kv_*`).
fn sdpa_shader_of(what: &str, dt: DataType, fused_kv: bool) -> Result<ShaderId> {
    match (dt, fused_kv) {
        (DataType::Float32, false) => Ok(ShaderId::SdpaF32),
        (DataType::Float16, false) => Ok(ShaderId::SdpaF16),
        (DataType::Float32, true) => Ok(ShaderId::SdpaKvF32),
        (DataType::Float16, true) => Ok(ShaderId::SdpaKvF16),
        _ => Err(unsupported(format!(
            "{what}: dtype {} is not supported (float32, float16 are)",
            dt.name()
        ))),
    }
}

/// `[q, k, v, k_cache, v_cache, start_pos, seq_len, attn_mask?, dropout_p, is_causal,
/// scale?, out]`. The query length comes from `q`'s current sizes; `seq_len` is not read
/// (ExecuTorch's runtime does not read it either): export_llm's dynamic-length 8da4w Llama
/// (executorch 1.5.1) serializes it as the Int 1 of its example input while q is [1, <= 15,
/// H, D].
fn build_sdpa_kv_cache(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(12)?;
    let what = call.what();
    let q = g.tensor_or_prepack(call, 0)?;
    let k = g.tensor_or_prepack(call, 1)?;
    let v = g.tensor_or_prepack(call, 2)?;
    let k_cache = g.tensor_or_prepack(call, 3)?;
    let v_cache = g.tensor_or_prepack(call, 4)?;
    let pos_slot = g.scalar_slot(call.arg(5)?)?;
    match g.value(call.arg(6)?)? {
        GValue::Int(_) | GValue::SymInt => {}
        other => {
            return Err(invalid_program(format!(
                "{what}: seq_len (arg 6) must be an Int or SymInt, got {}",
                gvalue_kind(other)
            )))
        }
    }
    if g.opt_tensor_or_prepack(call, 7)?.is_some() {
        return Err(unsupported(format!(
            "{what}: attn_mask is not supported (the mask is the causal one from start_pos)"
        )));
    }
    let dropout = g.double_arg_or(call, 8, 0.0)?;
    if dropout != 0.0 {
        return Err(unsupported(format!(
            "{what}: dropout_p = {dropout} is not supported (inference only: 0)"
        )));
    }
    let causal = g.int_arg(call, 9)? != 0;
    let scale = opt_scale(g, call, 10)?;
    let out = g.tensor_arg(call, 11)?;
    let s = g.shapes();
    let dt = same_dtype(
        call,
        &[
            s.dtype(q),
            s.dtype(k),
            s.dtype(v),
            s.dtype(k_cache),
            s.dtype(v_cache),
            s.dtype(out),
        ],
    )?;
    let pos_v = call.arg(5)?;
    if !crate::ops::fusion::fusion_off() {
        // The RoPE before, when it left q and k to this dispatch (ops/fusion.rs): its inputs.
        let rope = g.rope_sdpa.get(&call.index).copied();
        let (q, k) = rope.map_or((q, k), |r| (r.xq, r.xk));
        return attention_writing_caches(
            g,
            call,
            [q, k, v, k_cache, v_cache, out],
            (dt, rope),
            pos_v,
            pos_slot,
            causal,
            scale,
        );
    }
    let sdpa = sdpa_shader(&what, dt)?;

    let cache_update = data_shader("sdpa_cache_update", dt, call)?;
    // Cache writes (`ETVK_FUSE=0`): one dispatch per cache, k / v [B, S, H_kv, D] ->
    // [B, max_seq, H_kv, D], then the attention over the caches.
    for (src, cache, role) in [(k, k_cache, "k"), (v, v_cache, "v")] {
        cache_write(g, call, src, cache, (pos_v, pos_slot), cache_update, role)?;
    }

    let bindings = cache_attention_bindings(out, q, k_cache, v_cache);
    g.dispatch(call, Dispatch::new(sdpa, bindings), move |s| {
        let (qd, c) = CacheAttention::of(s, &what, q, k_cache, v_cache)?;
        s.set_dims(out, qd)?;
        c.push(causal, pos_slot, scale, None).launch(&what)
    })
}

/// The attention kernel's bindings 0-5 over KV caches, without a mask (q bound in its
/// place, never read).
fn cache_attention_bindings(
    out: TensorId,
    q: TensorId,
    k_cache: TensorId,
    v_cache: TensorId,
) -> Vec<Binding> {
    vec![
        Binding::Tensor(out),
        Binding::Tensor(q),
        Binding::Tensor(k_cache),
        Binding::Tensor(v_cache),
        Binding::Tensor(q),
        Binding::Scalars,
    ]
}

/// `sdpa_with_kv_cache` as one dispatch (`sdpa_kv_*`): the attention reads the call's keys
/// and values from k / v and writes them into the caches at rows start_pos.. (tensors
/// `[q, k, v, k_cache, v_cache, out]`); with `rope`, q and k are the inputs of the RoPE
/// before, which it rotates itself (`sdpa_kv_rope_*`).
#[allow(clippy::too_many_arguments)]
fn attention_writing_caches(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    [q, k, v, k_cache, v_cache, out]: [TensorId; 6],
    (dt, rope): (DataType, Option<crate::ops::fusion::RopeInputs>),
    pos_v: usize,
    pos_slot: u32,
    causal: bool,
    scale: Option<f64>,
) -> Result<()> {
    let what = call.what();
    let mut bindings = cache_attention_bindings(out, q, k_cache, v_cache);
    bindings.extend([Binding::Tensor(k), Binding::Tensor(v)]);
    if let Some(r) = rope {
        bindings.extend([Binding::Tensor(r.cos), Binding::Tensor(r.sin)]);
    }
    // Then the split keys' partial results and per-row counters (bound in any case; made
    // only where a cache of more than one 64-key chunk can split, see `key_split`).
    let cache_len = g.shapes().max_dims(k_cache).get(1).copied().unwrap_or(0);
    let split_on = cache_len > LANES as usize
        && !matches!(
            crate::builder::spec_or_env(&g.sdpa_split, "ETVK_SDPA_SPLIT").as_deref(),
            Some("off" | "0")
        );
    let d_max = g.shapes().max_dims(q).last().copied().unwrap_or(0);
    let (part, count) = if split_on {
        (
            g.new_tensor(
                DataType::Float32,
                vec![split_wave() * (d_max + 2)],
                None,
                format!("{what}: split keys' partial results"),
            )?,
            g.new_zeroed_tensor(
                DataType::Int32,
                vec![split_wave()],
                format!("{what}: split keys' counters"),
            )?,
        )
    } else {
        (q, q)
    };
    bindings.extend([Binding::Tensor(part), Binding::Tensor(count)]);
    let shader = match rope {
        Some(r) => match (dt, r.hf_start.is_some()) {
            (DataType::Float32, false) => ShaderId::SdpaKvRopeF32,
            (DataType::Float16, false) => ShaderId::SdpaKvRopeF16,
            (DataType::Float32, true) => ShaderId::SdpaKvRopeHfF32,
            (DataType::Float16, true) => ShaderId::SdpaKvRopeHfF16,
            (other, _) => {
                return Err(unsupported(format!(
                    "{what}: dtype {other:?} (fp32 / fp16 only)"
                )))
            }
        },
        None => sdpa_shader_of(&what, dt, true)?,
    };
    // The HF RoPE's start_pos slot (its tables are read from that row).
    let rope_slot = match rope.and_then(|r| r.hf_start) {
        Some(v) => Some((v, g.scalar_slot(v)?)),
        None => None,
    };
    g.dispatch(call, Dispatch::new(shader, bindings), move |s| {
        let (qd, c) = CacheAttention::of(s, &what, q, k_cache, v_cache)?;
        let mut rope_hf = [0; 3];
        if let Some(r) = rope {
            // The RoPE's own checks (ops/llama.rs), on q's sizes.
            let rope_what = format!("{what} (with the RoPE before)");
            match rope_slot {
                Some((pos_v, slot)) => {
                    let (rows, rd) = crate::ops::llama::check_rope_hf_freqs(
                        s, &rope_what, &qd, r.cos, r.sin, pos_v,
                    )?;
                    rope_hf = [to_u32(rd, "rotary dim")?, to_u32(rows, "freqs rows")?, slot];
                }
                None => crate::ops::llama::check_rope_freqs(s, &rope_what, &qd, r.cos, r.sin)?,
            }
        }
        for (src, role) in [(k, "k"), (v, "v")] {
            let sd = s.dims(src);
            if sd != [c.b, c.sq, c.h_kv, c.d] {
                return Err(invalid_arg(format!(
                    "{what}: {role} sizes {sd:?} must be [B, S, H_kv, D] = {:?} (q's B and S, the caches' H_kv and D)",
                    [c.b, c.sq, c.h_kv, c.d]
                )));
            }
        }
        check_window(&what, s.scalar(pos_v)?, c.sq, c.max_seq)?;
        s.set_dims(out, qd)?;
        let mut push = c.push(causal, pos_slot, scale, None);
        push.new_kv_batch = c.sq * c.h_kv * c.d;
        push.rope_hf = rope_hf;
        // The partial results hold rows of d_max + 2 (sizes are bounded by element count,
        // not per dim): a wider head takes the unsplit launch.
        if split_on && c.d <= d_max {
            push.split = key_split(push.rows, c.max_seq);
        }
        push.launch(&what)
    })
}

/// Workgroups a split KV-cache attention launch fills: four per SM of an H100 / H200 (H100,
/// 600-token decode of a dim-4096 export, session 39 run 8: 79.8 -> 77.7 us per whole
/// execute against two per SM, 12 tokens 72.9 -> 72.6).
const SPLIT_WAVE: usize = 528;

/// [`SPLIT_WAVE`], or `ETVK_SDPA_WAVE` (experiments).
fn split_wave() -> usize {
    static WAVE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WAVE.get_or_init(|| {
        std::env::var("ETVK_SDPA_WAVE")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&w| w > 0)
            .unwrap_or(SPLIT_WAVE)
    })
}

/// Workgroups per query row of a fused KV-cache attention over a cache of `keys` positions
/// for `rows` query rows: 1 (no split) unless the rows leave most of a wave idle and the
/// cache holds more than one 64-key chunk; then as many as fill the wave (`rows * splits <=
/// SPLIT_WAVE`), at most one per chunk. At run time the shader uses as many of them as the
/// step's keys fill, each whole chunks (`sdpa.comp`), so the launch stays the same as the
/// cache fills. A decode step of 32 heads over 2048 positions had one workgroup per head
/// walking all 2048 keys.
fn key_split(rows: usize, keys: usize) -> u32 {
    let chunks = keys.div_ceil(LANES as usize);
    // At most the wave: fits u32.
    (split_wave() / rows.max(1)).min(chunks).max(1) as u32
}

/// The shader's split of a step's `valid` keys over at most `max_splits` workgroups:
/// `[splits used, keys each]` (a mirror of `sdpa.comp`, for the tests).
#[cfg(test)]
fn step_split(max_splits: u32, valid: u32) -> [u32; 2] {
    if max_splits <= 1 {
        return [1, valid];
    }
    let chunks = valid.div_ceil(LANES);
    let splits = max_splits.min(chunks).max(1);
    let per = chunks.div_ceil(splits) * LANES;
    [valid.div_ceil(per).max(1), per]
}

/// Fail unless the cache window `[start_pos, start_pos + s)` lies inside `[0, max_seq)`.
fn check_window(what: &str, start: f64, s: usize, max_seq: usize) -> Result<()> {
    if start < 0.0 || start + s as f64 > max_seq as f64 {
        return Err(invalid_arg(format!(
            "{what}: start_pos {start} + S {s} exceeds the cache length {max_seq}"
        )));
    }
    Ok(())
}

/// One dispatch writing `src` `[B, S, H_kv, D]` into `cache` `[B, max_seq, H_kv, D]` at
/// rows `start_pos..` (`pos` = the start position's value id and scalar slot).
fn cache_write(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    src: TensorId,
    cache: TensorId,
    pos: (usize, u32),
    shader: ShaderId,
    role: &'static str,
) -> Result<()> {
    let what = call.what();
    let (pos_v, pos_slot) = pos;
    let bindings = [
        Binding::Tensor(cache),
        Binding::Tensor(src),
        Binding::Scalars,
    ];
    g.dispatch(call, Dispatch::new(shader, bindings), move |s| {
        let sd = s.dims(src).to_vec();
        let [b, sq, h_kv, hd] = rank4(&what, role, &sd, "[B, S, H_kv, D]")?;
        let cd = s.dims(cache).to_vec();
        let [cb, max_seq, ch, cdd] = rank4(&what, "cache", &cd, "[B, max_seq, H_kv, D]")?;
        if cb != b || ch != h_kv || cdd != hd || sq > max_seq {
            return Err(invalid_arg(format!(
                "{what}: {role} {sd:?} does not fit its cache {cd:?} (same B, H_kv, D; S <= max_seq)"
            )));
        }
        check_window(&what, s.scalar(pos_v)?, sq, max_seq)?;
        let numel = s.numel(src);
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(to_u32(sq.max(1), "S")?)
                .u32(to_u32((h_kv * hd).max(1), "H_kv * D")?)
                .u32(to_u32(max_seq, "max_seq")?)
                .u32(pos_slot)
                .u32_array(&[], 3, 0)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

/// `[value, cache, start_pos, out]` (ExecuTorch `llama::update_cache(Tensor value,
/// Tensor(a!) cache, SymInt start_pos) -> Tensor`). ExecuTorch's kernel returns its `[1]`
/// output untouched ("no one uses output, just a placeholder"), so it is not written here
/// either; the effect is the in-place cache write that later ops (custom_sdpa) and
/// `Delegate::read_tensor` see.
fn build_update_cache(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let value = g.tensor_or_prepack(call, 0)?;
    let cache = g.tensor_or_prepack(call, 1)?;
    let pos_v = call.arg(2)?;
    let pos_slot = g.scalar_slot(pos_v)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(value), s.dtype(cache)])?;
    let shader = data_shader("sdpa_cache_update", dt, call)?;
    cache_write(g, call, value, cache, (pos_v, pos_slot), shader, "value")
}

/// `[q, k_cache, v_cache, start_pos, attn_mask?, dropout_p, is_causal, scale?, out]`
/// (ExecuTorch `llama::custom_sdpa`, whose CPU kernel attends over the cache slice
/// `[0, start_pos + S)`, masks key `j > start_pos + i` when causal, and adds a 2-D float
/// mask `[S, keys]` otherwise). The caches are read as they are: the `update_cache` calls
/// before this op have written the new rows.
fn build_custom_sdpa(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(9)?;
    let what = call.what();
    let q = g.tensor_or_prepack(call, 0)?;
    let k_cache = g.tensor_or_prepack(call, 1)?;
    let v_cache = g.tensor_or_prepack(call, 2)?;
    let pos_v = call.arg(3)?;
    let pos_slot = g.scalar_slot(pos_v)?;
    let mask = g.opt_tensor_or_prepack(call, 4)?;
    let dropout = g.double_arg_or(call, 5, 0.0)?;
    if dropout != 0.0 {
        return Err(unsupported(format!(
            "{what}: dropout_p = {dropout} is not supported (inference only: 0)"
        )));
    }
    let causal = match g.value(call.arg(6)?)? {
        GValue::Null => false,
        _ => g.int_arg(call, 6)? != 0,
    };
    if causal && mask.is_some() {
        return Err(invalid_arg(format!(
            "{what}: attn_mask and is_causal cannot both be set (as in ExecuTorch's kernel)"
        )));
    }
    let scale = opt_scale(g, call, 7)?;
    let out = g.tensor_arg(call, 8)?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(q), s.dtype(k_cache), s.dtype(v_cache), s.dtype(out)];
    dts.extend(mask.map(|m| s.dtype(m)));
    let dt = same_dtype(call, &dts)?;
    let sdpa = sdpa_shader(&what, dt)?;
    let bindings = [
        Binding::Tensor(out),
        Binding::Tensor(q),
        Binding::Tensor(k_cache),
        Binding::Tensor(v_cache),
        Binding::Tensor(mask.unwrap_or(q)), // no mask: any bound buffer, never read
        Binding::Scalars,
    ];
    g.dispatch(call, Dispatch::new(sdpa, bindings), move |s| {
        let (qd, c) = CacheAttention::of(s, &what, q, k_cache, v_cache)?;
        let (sq, max_seq) = (c.sq, c.max_seq);
        let start = s.scalar(pos_v)?;
        check_window(&what, start, sq, max_seq)?;
        let keys = start as usize + sq;
        let mask_row = match mask {
            Some(m) => {
                let md = s.dims(m);
                // ExecuTorch's CPU kernel takes the mask row stride from the mask itself, so
                // a mask wider than the attended keys (e.g. [S, max_seq]) works too.
                match *md {
                    [rows, w] if (rows == sq || rows == 1) && w >= keys => {
                        Some(if rows == 1 { 0 } else { w })
                    }
                    _ => {
                        return Err(invalid_arg(format!(
                            "{what}: attn_mask sizes {md:?} must be [S or 1, >= start_pos + S] = [{sq}, >= {keys}]"
                        )))
                    }
                }
            }
            None => None,
        };
        s.set_dims(out, qd)?;
        c.push(causal, pos_slot, scale, mask_row).launch(&what)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_split_fills_a_wave_in_whole_chunks() {
        // Too many rows, or one chunk of keys: no split.
        assert_eq!(key_split(528, 4096), 1);
        assert_eq!(key_split(2, 64), 1);
        assert_eq!(key_split(300, 200), 1);
        // A decode step of 32 heads over 2048 positions: 16 splits (of 128 keys when full).
        assert_eq!(key_split(32, 2048), 16);
        assert_eq!(step_split(16, 2048), [16, 128]);
        // Fewer chunks than the wave allows: one chunk each, the last one partial.
        assert_eq!(key_split(2, 200), 4);
        assert_eq!(step_split(4, 200), [4, 64]);
        // 240 rows: two splits of two chunks.
        assert_eq!(key_split(240, 200), 2);
        assert_eq!(step_split(2, 200), [2, 128]);
        // Early steps use fewer: 16 keys take one workgroup, 300 keys five of 64; 600 keys
        // (ten chunks) five of two chunks, as long a walk as eight would make.
        assert_eq!(step_split(8, 16), [1, 64]);
        assert_eq!(step_split(8, 300), [5, 64]);
        assert_eq!(step_split(8, 600), [5, 128]);
        assert_eq!(step_split(8, 513), [5, 128]);
        for (rows, keys) in [(1, 100_000), (7, 3000), (33, 65), (131, 129)] {
            let max = key_split(rows, keys);
            assert!(rows * max as usize <= SPLIT_WAVE, "{rows} x {keys}");
            for valid in [1, 63, 64, 65, keys as u32 / 2, keys as u32] {
                let [splits, per] = step_split(max, valid);
                assert!(splits <= max, "{rows} x {keys}, {valid} keys");
                assert!(splits == 1 || per * splits >= valid);
                assert!(splits == 1 || per * (splits - 1) < valid);
                assert_eq!(per % LANES, 0);
            }
        }
    }
}
