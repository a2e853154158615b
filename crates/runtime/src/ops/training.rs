//! On-device training primitives (fp32, buffers): `et_vk.linear_dW.default`,
//! `et_vk.fused_ce.default`, `et_vk.adamw_step.default`, `et_vk.q4gsw_requant.default`
//! (format spec §4.4, §4.5, §4.8).
//!
//! Scalars that change per training step (learning rate, bias corrections, the loss
//! normalizer) are not baked into push constants: they live in f32 slots of the graph's
//! host-shared scalar buffer ([`GraphBuilder::scalar_slot_f32`]), which the shaders read at
//! execute time, so `Delegate::set_scalar` changes them between executes without a rebuild
//! or any re-upload. Tensors these ops mutate in place (`adamw_step`'s param / m / v) are
//! usually constants: they are prepacked contiguously once, shared with every other op that
//! uses them contiguously (so the forward pass sees the update), and persist across
//! executes.
//!
//! Every launch is a 2-D grid of workgroups folded so that no dimension exceeds 65535
//! (the minimum every Vulkan device supports), whatever the problem size.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Binding, Global, Launch, Push, Shapes, TensorId};
use crate::registry::{OpEntry, Registry};

const F32: &[DataType] = &[DataType::Float32];

/// Workgroups per grid dimension that every Vulkan device supports.
const MAX_GROUPS_PER_DIM: u64 = 65535;

/// `linear_dw.comp` tile sizes (TN x TK outputs per 16 x 16 workgroup).
const DW_TILE_N: usize = 64;
const DW_TILE_K: usize = 64;
const DW_LOCAL: [u32; 3] = [16, 16, 1];
/// Lanes per row of `fused_ce.comp` / `fused_ce_sum.comp` (their `LANES`).
const CE_LANES: u32 = 64;
/// Local size of the elementwise kernels (`adamw_step`, `q4gsw_requant`).
const ELEM_LOCAL: u32 = 64;
/// Workgroups of `adamw_step` at most (a few waves on any GPU; the shader loops).
const ADAMW_MAX_GROUPS: u64 = 16384;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "et_vk.linear_dW.default",
        build: build_linear_dw,
        dtypes: F32,
        dynamic_shapes: true,
        note: "dW[N, K] = d_out[.., N]^T @ x[.., K], leading dims flattened; tiled 64x64 blocks",
    })?;
    r.register(OpEntry {
        name: "et_vk.fused_ce.default",
        build: build_fused_ce,
        dtypes: F32,
        dynamic_shapes: true,
        note: "(loss, dlogits) of mean cross entropy over rows of logits [.., V]; labels int32, label < 0 or >= V ignores the row; n_valid a runtime scalar",
    })?;
    r.register(OpEntry {
        name: "et_vk.adamw_step.default",
        build: build_adamw_step,
        dtypes: F32,
        dynamic_shapes: true,
        note: "AdamW in place on param, m, v; lr, betas, eps, weight decay, bias corrections are runtime scalars (Delegate::set_scalar)",
    })?;
    r.register(OpEntry {
        name: "et_vk.q4gsw_requant.default",
        build: build_q4gsw_requant,
        dtypes: F32,
        dynamic_shapes: true,
        note: "latent [N, K] fp32 -> serialized q4gsw uint8 [N, ceil(K/2)]; round half to even, exact vs the CPU",
    })?;
    Ok(())
}

/// `groups` workgroups of `local` invocations, numbered linearly and folded into a 2-D grid
/// with at most 65535 workgroups per dimension (shaders recover the number as
/// `gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x`, or `linear_id()` for
/// invocations). Surplus workgroups of the last grid row must return early.
pub(crate) fn folded_grid(groups: u64, local: [u32; 3], what: &str) -> Result<Global> {
    if groups == 0 {
        return Ok(Global::Grid([0, local[1], local[2]]));
    }
    let x = groups.min(MAX_GROUPS_PER_DIM);
    let y = groups.div_ceil(x);
    if y > MAX_GROUPS_PER_DIM {
        return Err(unsupported(format!(
            "{what}: {groups} workgroups exceed the {MAX_GROUPS_PER_DIM} x {MAX_GROUPS_PER_DIM} grid limit"
        )));
    }
    Ok(Global::Grid([
        x as u32 * local[0],
        y as u32 * local[1],
        local[2],
    ]))
}

/// Fail unless tensor `t` (arg `i`, `role`) has dtype `want`.
fn expect_dtype(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    t: TensorId,
    i: usize,
    role: &str,
    want: DataType,
) -> Result<()> {
    let dt = g.shapes().dtype(t);
    if dt != want {
        return Err(unsupported(format!(
            "{}: arg {i} ({role}) is {}, only {} is supported",
            call.what(),
            dt.name(),
            want.name()
        )));
    }
    Ok(())
}

/// Value `v` (an item of an output ValueList) as a GPU tensor.
fn list_item_tensor(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    v: usize,
    role: &str,
) -> Result<TensorId> {
    match g.value(v)? {
        GValue::Tensor(t) => Ok(*t),
        other => Err(invalid_program(format!(
            "{}: output {role} (value {v}) must be a tensor, got {}",
            call.what(),
            crate::builder::gvalue_kind(other)
        ))),
    }
}

/// (product of the leading dims, last dim) of `dims`; rank 0 is an error naming `role`.
fn rows_cols(dims: &[usize], role: &str) -> Result<(usize, usize)> {
    match dims.split_last() {
        Some((&last, lead)) => Ok((lead.iter().product(), last)),
        None => Err(invalid_arg(format!(
            "{role} must have rank >= 1, got a rank-0 tensor"
        ))),
    }
}

/// `et_vk.linear_dW.default [d_out, x, out]`: `dW[n][k] = sum_m d_out[m][n] * x[m][k]`.
fn build_linear_dw(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let dy = g.tensor_or_prepack(call, 0)?;
    let x = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    expect_dtype(g, call, dy, 0, "d_out", DataType::Float32)?;
    expect_dtype(g, call, x, 1, "x", DataType::Float32)?;
    expect_dtype(g, call, out, 2, "out", DataType::Float32)?;
    let invocations = DW_LOCAL.iter().product::<u32>();
    if g.caps().max_workgroup_invocations < invocations {
        return Err(unsupported(format!(
            "{}: the tiled kernel needs {invocations} invocations per workgroup, the device allows {}",
            call.what(),
            g.caps().max_workgroup_invocations
        )));
    }
    let what = call.what();
    let mut d = Dispatch::new(ShaderId::LinearDwF32, [out, dy, x]);
    d.local = Some(DW_LOCAL);
    g.dispatch(call, d, move |s| {
        let (dyd, xd) = (s.dims(dy).to_vec(), s.dims(x).to_vec());
        let (m, n) = rows_cols(&dyd, &format!("{what}: d_out"))?;
        let (mx, k) = rows_cols(&xd, &format!("{what}: x"))?;
        if m != mx {
            return Err(invalid_arg(format!(
                "{what}: d_out {dyd:?} and x {xd:?} disagree on the flattened leading size M ({m} vs {mx})"
            )));
        }
        s.set_dims(out, vec![n, k])?;
        let blocks_k = k.div_ceil(DW_TILE_K);
        let blocks = n.div_ceil(DW_TILE_N) * blocks_k;
        // Every index the shader forms must fit in 32 bits.
        to_u32(m * n.max(k), &format!("{what}: M * max(N, K)"))?;
        to_u32(n * k, &format!("{what}: N * K"))?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(m, "M")?)
                .u32(to_u32(n, "N")?)
                .u32(to_u32(k, "K")?)
                .u32(to_u32(blocks_k, "blocks_k")?)
                .u32(to_u32(blocks, "blocks")?)
                .finish(),
            global: folded_grid(blocks as u64, DW_LOCAL, &what)?,
        })
    })
}

/// `et_vk.fused_ce.default [logits, labels, n_valid, ValueList(loss, dlogits)]`.
///
/// Semantics: rows = leading dims of logits flattened, V = last dim; labels hold one int32
/// per row. A row whose label is < 0 (ignore index) **or >= V** contributes 0 to the loss
/// and gets an all-zero dlogits row: an out-of-range label cannot be reported from the GPU,
/// and ignoring the row never reads out of bounds (the host should count only rows with
/// `0 <= label < V` in n_valid). `n_valid` (Double, Int or SymInt) is read through an f32
/// scalar slot at execute time; n_valid = 0 gives a non-finite loss, like a mean over
/// nothing.
fn build_fused_ce(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let logits = g.tensor_or_prepack(call, 0)?;
    let labels = g.tensor_or_prepack(call, 1)?;
    let n_valid = call.arg(2)?;
    let slot = g
        .scalar_slot_f32(n_valid)
        .map_err(|e| invalid_program(format!("{}: arg 2 (n_valid): {}", call.what(), e.message)))?;
    let outs = match g.value(call.arg(3)?)? {
        GValue::ValueList(ids) if ids.len() == 2 => ids.clone(),
        other => {
            return Err(invalid_program(format!(
                "{}: arg 3 must be a ValueList(loss, dlogits), got {}",
                call.what(),
                crate::builder::gvalue_kind(other)
            )))
        }
    };
    let loss = list_item_tensor(g, call, outs[0], "loss")?;
    let dlogits = list_item_tensor(g, call, outs[1], "dlogits")?;
    expect_dtype(g, call, logits, 0, "logits", DataType::Float32)?;
    if g.shapes().dtype(labels) != DataType::Int32 {
        return Err(unsupported(format!(
            "{}: labels are {}, the GPU kernel reads int32 (int64 labels are staged as int32: export with downcast_64_bit)",
            call.what(),
            g.shapes().dtype(labels).name()
        )));
    }
    expect_dtype(g, call, loss, 3, "loss", DataType::Float32)?;
    expect_dtype(g, call, dlogits, 3, "dlogits", DataType::Float32)?;
    let (max_rows, _) = rows_cols(
        g.shapes().max_dims(logits),
        &format!("{}: logits", call.what()),
    )?;
    let row_loss = g.new_tensor(
        DataType::Float32,
        vec![max_rows],
        None,
        format!("{} row losses", call.what()),
    )?;

    let what = call.what();
    let mut d = Dispatch::new(
        ShaderId::FusedCeF32,
        [
            Binding::Tensor(dlogits),
            Binding::Tensor(row_loss),
            Binding::Tensor(logits),
            Binding::Tensor(labels),
            Binding::Scalars,
        ],
    );
    d.local = Some([CE_LANES, 1, 1]);
    g.dispatch(call, d, move |s: &mut Shapes| {
        let ld = s.dims(logits).to_vec();
        let (rows, v) = rows_cols(&ld, &format!("{what}: logits"))?;
        let nl = s.numel(labels);
        if nl != rows {
            return Err(invalid_arg(format!(
                "{what}: labels {:?} hold {nl} values for {rows} rows of logits {ld:?}",
                s.dims(labels)
            )));
        }
        to_u32(rows * v, &format!("{what}: logits numel"))?;
        s.set_dims(dlogits, ld)?;
        s.set_dims(row_loss, vec![rows])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(v, "V")?)
                .u32(slot)
                .u32(0)
                .finish(),
            global: folded_grid(rows as u64, [CE_LANES, 1, 1], &what)?,
        })
    })?;

    let mut d = Dispatch::new(
        ShaderId::FusedCeSumF32,
        [
            Binding::Tensor(loss),
            Binding::Tensor(row_loss),
            Binding::Scalars,
        ],
    );
    d.local = Some([CE_LANES, 1, 1]);
    g.dispatch(call, d, move |s: &mut Shapes| {
        let rows = s.numel(row_loss);
        s.set_dims(loss, vec![])?;
        Ok(Launch {
            push: Push::new().u32(to_u32(rows, "rows")?).u32(slot).finish(),
            global: Global::Grid([CE_LANES, 1, 1]),
        })
    })
}

/// `et_vk.adamw_step.default [param, m, v, grad, lr, beta1, beta2, eps, weight_decay,
/// bias_correction1, bias_correction2, out]`: in place on param, m, v (§4.4 order). The
/// seven scalars get f32 slots read at execute time (`Delegate::set_scalar(value_id, x)`
/// changes one; note that the exporter deduplicates equal Python scalars into one value,
/// so two arguments with the same value at export share a value id). `out` (a ValueList
/// of the three mutated tensors, or Null) is aliased to param, m, v so that later users of
/// the outputs see the updated tensors.
fn build_adamw_step(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(12)?;
    const ROLES: [&str; 11] = [
        "param",
        "m",
        "v",
        "grad",
        "lr",
        "beta1",
        "beta2",
        "eps",
        "weight_decay",
        "bias_correction1",
        "bias_correction2",
    ];
    let mut ts = [TensorId(0); 4];
    for (i, t) in ts.iter_mut().enumerate() {
        *t = g.tensor_or_prepack(call, i)?;
        expect_dtype(g, call, *t, i, ROLES[i], DataType::Float32)?;
    }
    let [param, m, v, grad] = ts;
    let mut slots = [0u32; 7];
    for (j, slot) in slots.iter_mut().enumerate() {
        let i = 4 + j;
        let id = call.arg(i)?;
        *slot = g.scalar_slot_f32(id).map_err(|e| {
            invalid_program(format!(
                "{}: arg {i} ({}): {}",
                call.what(),
                ROLES[i],
                e.message
            ))
        })?;
    }
    // Outputs alias the inputs they mutate.
    let out = call.arg(11)?;
    match g.value(out)?.clone() {
        GValue::Null => {}
        GValue::ValueList(ids) if ids.len() == 3 => {
            for (id, t) in ids.into_iter().zip([param, m, v]) {
                g.alias_value(id, t)?;
            }
        }
        other => {
            return Err(invalid_program(format!(
                "{}: arg 11 (out) must be a ValueList of 3 tensors or Null, got {}",
                call.what(),
                crate::builder::gvalue_kind(&other)
            )))
        }
    }
    let what = call.what();
    let mut d = Dispatch::new(
        ShaderId::AdamwStepF32,
        [
            Binding::Tensor(param),
            Binding::Tensor(m),
            Binding::Tensor(v),
            Binding::Tensor(grad),
            Binding::Scalars,
        ],
    );
    d.local = Some([ELEM_LOCAL, 1, 1]);
    g.dispatch(call, d, move |s: &mut Shapes| {
        let numel = s.numel(param);
        for (t, role) in [(m, "m"), (v, "v"), (grad, "grad")] {
            if s.numel(t) != numel {
                return Err(invalid_arg(format!(
                    "{what}: {role} {:?} has {} elements, param {:?} has {numel}",
                    s.dims(t),
                    s.numel(t),
                    s.dims(param)
                )));
            }
        }
        let mut push = Push::new().u32(to_u32(numel, "numel")?);
        for slot in slots {
            push = push.u32(slot);
        }
        Ok(Launch {
            push: push.finish(),
            // Four elements per step (vec4), grid-stride over at most ADAMW_MAX_GROUPS
            // workgroups (see adamw_step.comp).
            global: folded_grid(
                (numel as u64)
                    .div_ceil(4 * ELEM_LOCAL as u64)
                    .min(ADAMW_MAX_GROUPS),
                [ELEM_LOCAL, 1, 1],
                &what,
            )?,
        })
    })
}

/// `et_vk.q4gsw_requant.default [latent, scales, group_size, packed]`: latent fp32 [N, K],
/// scales fp32 [G, N'] (N' >= N, the serialized transposed and width-padded scales,
/// G >= ceil(K / group_size)), packed uint8 [N, ceil(K/2)] in the serialized q4gsw layout
/// (even k in the low nibble, code = q + 8; an odd K's missing last column is code 8).
/// `packed` may be a graph tensor or a constant (then its contiguous copy is overwritten).
fn build_q4gsw_requant(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let latent = g.tensor_or_prepack(call, 0)?;
    let scales = g.tensor_or_prepack(call, 1)?;
    let gs = g.int_arg(call, 2)?;
    let out = g.tensor_or_prepack(call, 3)?;
    expect_dtype(g, call, latent, 0, "latent", DataType::Float32)?;
    expect_dtype(g, call, scales, 1, "scales", DataType::Float32)?;
    expect_dtype(g, call, out, 3, "packed", DataType::Uint8)?;
    if gs <= 0 {
        return Err(invalid_program(format!(
            "{}: group_size must be positive, got {gs}",
            call.what()
        )));
    }
    let gs = gs as usize;
    let what = call.what();
    let mut d = Dispatch::new(ShaderId::Q4gswRequantF32, [out, latent, scales]);
    d.local = Some([ELEM_LOCAL, 1, 1]);
    g.dispatch(call, d, move |s: &mut Shapes| {
        let ld = s.dims(latent).to_vec();
        let sd = s.dims(scales).to_vec();
        let [n, k] = ld[..] else {
            return Err(invalid_arg(format!(
                "{what}: latent must be 2-D [N, K], got {ld:?}"
            )));
        };
        let [groups, stride] = sd[..] else {
            return Err(invalid_arg(format!(
                "{what}: scales must be 2-D [G, N], got {sd:?}"
            )));
        };
        if stride < n || groups < k.div_ceil(gs) {
            return Err(invalid_arg(format!(
                "{what}: scales {sd:?} do not cover latent {ld:?} with group_size {gs} (need at least [{}, {n}])",
                k.div_ceil(gs)
            )));
        }
        let row_bytes = k.div_ceil(2);
        let total = n * row_bytes;
        let words = total.div_ceil(4);
        to_u32(n * k, &format!("{what}: latent numel"))?;
        to_u32(groups * stride, &format!("{what}: scales numel"))?;
        s.set_dims(out, vec![n, row_bytes])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(n, "N")?)
                .u32(to_u32(k, "K")?)
                .u32(to_u32(row_bytes, "row_bytes")?)
                .u32(to_u32(total, "packed bytes")?)
                .u32(to_u32(gs, "group_size")?)
                .u32(to_u32(stride, "scales row length")?)
                .u32(to_u32(words, "packed words")?)
                .u32(0)
                .finish(),
            global: folded_grid(
                (words as u64).div_ceil(ELEM_LOCAL as u64),
                [ELEM_LOCAL, 1, 1],
                &what,
            )?,
        })
    })
}

/// CPU reference of one requantized code (what the shader computes), shared by tests and
/// host-side tools: `q = clamp(round_half_even(latent / s), -8, 7)` (NaN and `s == 0` -> 0),
/// `code = q + 8`.
pub fn q4gsw_requant_code(latent: f32, s: f32) -> u8 {
    if s == 0.0 {
        return 8;
    }
    let t = latent / s;
    // `as` saturates and maps NaN to 0, like the shader's explicit NaN case.
    let q = t.round_ties_even().clamp(-8.0, 7.0) as i32;
    (q + 8) as u8
}

/// CPU reference of the whole requant: latent [n, k] row-major, scales [groups, stride]
/// row-major -> packed [n, ceil(k/2)].
pub fn q4gsw_requant_ref(
    latent: &[f32],
    scales: &[f32],
    n: usize,
    k: usize,
    group_size: usize,
    stride: usize,
) -> Vec<u8> {
    let row_bytes = k.div_ceil(2);
    let code = |r: usize, c: usize| -> u8 {
        if c >= k {
            8
        } else {
            q4gsw_requant_code(latent[r * k + c], scales[(c / group_size) * stride + r])
        }
    };
    let mut out = vec![0u8; n * row_bytes];
    for r in 0..n {
        for j in 0..row_bytes {
            out[r * row_bytes + j] = code(r, 2 * j) | (code(r, 2 * j + 1) << 4);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_every_dimension_within_65535_groups() {
        assert_eq!(
            folded_grid(10, [64, 1, 1], "t").unwrap(),
            Global::Grid([640, 1, 1])
        );
        match folded_grid(200_000, [64, 1, 1], "t").unwrap() {
            Global::Grid([x, y, 1]) => {
                assert_eq!(x, 65535 * 64);
                assert_eq!(y, 4);
            }
            other => panic!("{other:?}"),
        }
        assert!(folded_grid(65535 * 65535 + 1, [1, 1, 1], "t").is_err());
        assert_eq!(
            folded_grid(0, [16, 16, 1], "t").unwrap(),
            Global::Grid([0, 16, 1])
        );
    }

    /// The shader's quotient correction, in Rust: from a GPU quotient `t` within 3 ulps of
    /// `a / s`, pick the neighbour with the smallest exact remainder.
    fn corrected(t: f32, a: f32, s: f32) -> f32 {
        let rem = |c: f32| (-c).mul_add(s, a).abs();
        let mut best = (t, rem(t));
        for d in [-3i32, -2, -1, 1, 2, 3] {
            let c = f32::from_bits((t.to_bits() as i32 + d) as u32);
            let r = rem(c);
            if r < best.1 {
                best = (c, r);
            }
        }
        best.0
    }

    #[test]
    fn quotient_correction_recovers_the_correctly_rounded_division() {
        // Near-ties and random pairs in the range the shader corrects (0.25 <= |a/s| < 16),
        // with the approximate quotient off by up to 3 ulps either way.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        for i in 0..20_000 {
            let s = 1e-3 + next() * 3.0;
            let q = (i % 32) as f32 / 2.0 - 8.0 + 0.25 * (i % 2) as f32;
            let a = if i % 3 == 0 {
                next() * 30.0 - 15.0
            } else {
                q * s
            };
            let exact = a / s;
            if !(0.25..16.0).contains(&exact.abs()) {
                continue;
            }
            for d in -3i32..=3 {
                let approx = f32::from_bits((exact.to_bits() as i32 + d) as u32);
                assert_eq!(
                    corrected(approx, a, s).to_bits(),
                    exact.to_bits(),
                    "a {a} s {s} off by {d} ulps"
                );
            }
        }
    }

    #[test]
    fn requant_reference_rounds_half_to_even_and_packs_low_nibble_first() {
        // 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, clamp to [-8, 7], s == 0 -> 0.
        assert_eq!(q4gsw_requant_code(2.5, 1.0), 10);
        assert_eq!(q4gsw_requant_code(3.5, 1.0), 12);
        assert_eq!(q4gsw_requant_code(-2.5, 1.0), 6);
        assert_eq!(q4gsw_requant_code(100.0, 1.0), 15);
        assert_eq!(q4gsw_requant_code(-100.0, 1.0), 0);
        assert_eq!(q4gsw_requant_code(3.0, 0.0), 8);
        assert_eq!(q4gsw_requant_code(f32::NAN, 1.0), 8);
        // One row, K = 3: bytes (k0 | k1 << 4), (k2 | pad << 4).
        let packed = q4gsw_requant_ref(&[1.0, -1.0, 2.0], &[1.0], 1, 3, 4, 1);
        assert_eq!(packed, vec![9 | (7 << 4), 10 | (8 << 4)]);
    }
}
