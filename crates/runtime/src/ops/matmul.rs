//! Matrix-multiply family: `aten.linear.default` (and `_weight_int8pack_mm`'s prepacked
//! float weight) on `linear_gemv` (M <= 8) / `linear_tiled`; `aten.mm.default` (`[a, b,
//! out]`), `aten.addmm.default` (`[bias, mat1, mat2, beta, alpha, out]`) and
//! `aten.bmm.default` (`[a, b, out]`) on the strided `matmul_tiled` shader, each a choice of
//! [`MatStrides`] for [`matmul_launch`].

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{Dispatch, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program};
use crate::graph::{broadcast_strides, to_u32, Global, Launch, Push, TensorId};
use crate::ops::{float_shader, same_dtype};
use crate::registry::{OpEntry, Registry};

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "aten.linear.default",
        build: build_linear,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "x[..., K] @ W[N, K]^T + bias[N]; leading dims flattened",
    })?;
    r.register(OpEntry {
        name: "aten._weight_int8pack_mm.default",
        build: crate::ops::q8_linear::build_weight_int8pack_mm,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "x[..., K] @ (int8 W[N, K] * scales[N])^T; weight and scales constants, read as int8 by the kernels (8-bit per-channel weight-only linears)",
    })?;
    r.register(OpEntry {
        name: "aten.mm.default",
        build: build_mm,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "a[M, K] @ b[K, N]",
    })?;
    r.register(OpEntry {
        name: "aten.addmm.default",
        build: build_addmm,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "beta * bias + alpha * (mat1[M, K] @ mat2[K, N]); bias broadcasts to [M, N]",
    })?;
    r.register(OpEntry {
        name: "aten.bmm.default",
        build: build_bmm,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "a[B, M, K] @ b[B, K, N]",
    })
}

/// Element strides of one operand of the `matmul_tiled` shader: (batch, row, col).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatStrides {
    /// Batch stride.
    pub b: u32,
    /// Stride of the first matrix index (A: m, B: k, bias: m).
    pub r: u32,
    /// Stride of the second matrix index (A: k, B: n, bias: n).
    pub c: u32,
}

/// The `matmul_tiled` shader's launch: `out[b][m][n] = alpha * sum_k A[b,m,k] B[b,k,n] + beta
/// * bias[b,m,n]` (bias only when `bias` is Some), for `batch` batches; `clamp`: the
/// `matmul_tiled_clamp` variant's [out_min, out_max].
#[allow(clippy::too_many_arguments)]
pub fn matmul_launch(
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    a: MatStrides,
    b: MatStrides,
    bias: Option<MatStrides>,
    alpha: f32,
    beta: f32,
    clamp: Option<[f32; 2]>,
) -> Result<Launch> {
    let c = bias.unwrap_or(MatStrides { b: 0, r: 0, c: 0 });
    let push = Push::new()
        .u32(to_u32(m, "M")?)
        .u32(to_u32(n, "N")?)
        .u32(to_u32(k, "K")?)
        .u32(bias.is_some() as u32)
        .u32(a.b)
        .u32(a.r)
        .u32(a.c)
        .u32(b.b)
        .u32(b.r)
        .u32(b.c)
        .u32(c.b)
        .u32(c.r)
        .u32(c.c)
        .f32(alpha)
        .f32(beta);
    let push = match clamp {
        Some([lo, hi]) => push.f32(lo).f32(hi),
        None => push.u32(0),
    }
    .finish();
    // 64 x 64 output tiles, a workgroup of 256 each (matmul_tiled.comp).
    Ok(Launch {
        push,
        global: Global::Grid([
            to_u32(n.div_ceil(64), "column tiles")?.saturating_mul(256),
            to_u32(m.div_ceil(64), "row tiles")?,
            to_u32(batch, "batch")?,
        ]),
    })
}

fn build_linear(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let x = g.tensor_arg(call, 0)?;
    // The weight of a dequantize_affine node left out for this linear (ops/q8_linear.rs).
    if let Some(q8) = g.q8_weights.get(&call.arg(1)?).copied() {
        let bias = g.opt_tensor_or_prepack(call, 2)?;
        let out = g.tensor_arg(call, 3)?;
        return crate::ops::q8_linear::q8_linear_node(g, call, x, q8, bias, out);
    }
    let w = g.tensor_or_prepack(call, 1)?;
    let bias = g.opt_tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, 3)?;
    linear_node(g, call, x, w, bias, out)
}

/// `out = x @ w^T (+ bias)` for x [.., K], w [N, K] (both already GPU tensors).
fn linear_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    w: TensorId,
    bias: Option<TensorId>,
    out: TensorId,
) -> Result<()> {
    let wd = g.shapes().max_dims(w).to_vec();
    if wd.len() != 2 {
        return Err(invalid_program(format!(
            "{}: weight must be 2-D [N, K], got {wd:?}",
            call.what()
        )));
    }
    let wdt = g.shapes().dtype(w);
    linear_variants(
        g,
        call,
        (x, out, bias),
        (wd[0], wd[1], Some(wdt)),
        |kn, dt, bias_t| Ok(Dispatch::new(kn.shader(dt, call)?, [out, x, w, bias_t])),
    )
}

/// What the fp32 and the int8-weight linears share: one dtype for x, out, bias (and a float
/// weight: `weight_dtype`), the bias' and x's sizes against the weight's `(n, k)`, and one
/// kernel variant per [`LinearKernel`] (`dispatch(kernel, dtype, bias or dummy)`), chosen
/// by M at resize.
pub(crate) fn linear_variants(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (x, out, bias): (TensorId, TensorId, Option<TensorId>),
    (n, k, weight_dtype): (usize, usize, Option<DataType>),
    dispatch: impl Fn(LinearKernel, DataType, TensorId) -> Result<Dispatch>,
) -> Result<()> {
    let s = g.shapes();
    let mut dts = vec![s.dtype(x), s.dtype(out)];
    dts.extend(weight_dtype);
    dts.extend(bias.iter().map(|&b| s.dtype(b)));
    let dt = same_dtype(call, &dts)?;
    if let Some(b) = bias {
        if s.numel(b) != n {
            return Err(invalid_program(format!(
                "{}: bias has sizes {:?}, expected [{n}]",
                call.what(),
                s.max_dims(b)
            )));
        }
    }
    let xd = s.max_dims(x).to_vec();
    if xd.last() != Some(&k) {
        return Err(invalid_program(format!(
            "{}: input sizes {xd:?} do not end in the weight's K = {k}",
            call.what()
        )));
    }
    let max_m: usize = xd[..xd.len() - 1].iter().product();
    let bias_t = g.or_dummy(bias)?;
    let kernels = LinearKernel::up_to(max_m);
    let variants = kernels
        .iter()
        .map(|&kn| dispatch(kn, dt, bias_t))
        .collect::<Result<Vec<_>>>()?;
    let has_bias = bias.is_some();
    g.dispatch_select(call, variants, move |s| {
        linear_launch(s, (x, out), (n, k), has_bias, &kernels, max_m)
    })
}

/// The resize of a linear over [`LinearKernel`] variants (`kernels`, in variant order): out's
/// sizes from x's, the kernel of the current M and its launch (push constants M, N, K,
/// has_bias).
fn linear_launch(
    s: &mut crate::graph::Shapes,
    (x, out): (TensorId, TensorId),
    (n, k): (usize, usize),
    has_bias: bool,
    kernels: &[LinearKernel],
    max_m: usize,
) -> Result<(usize, Launch)> {
    let xd = s.dims(x).to_vec();
    if xd.last() != Some(&k) {
        return Err(invalid_program(format!(
            "input sizes {xd:?} do not end in K = {k}"
        )));
    }
    let m: usize = xd[..xd.len() - 1].iter().product();
    let mut od = xd;
    if let Some(l) = od.last_mut() {
        *l = n;
    }
    s.set_dims(out, od)?;
    let kn = LinearKernel::of(m);
    let idx = kernels.iter().position(|&c| c == kn).ok_or_else(|| {
        invalid_arg(format!(
            "M = {m} rows exceed the {max_m} the graph was built for"
        ))
    })?;
    let push = Push::new()
        .u32(to_u32(m, "M")?)
        .u32(to_u32(n, "N")?)
        .u32(to_u32(k, "K")?)
        .u32(has_bias as u32)
        .finish();
    let global = if m == 0 || n == 0 {
        Global::Linear(0)
    } else {
        match kn {
            LinearKernel::Gemv(_) => {
                Global::Linear(n.div_ceil(GEMV_ROWS) as u64 * u64::from(GEMV_LOCAL))
            }
            LinearKernel::Tiled => Global::Grid([
                to_u32(n.div_ceil(64), "column tiles")?.saturating_mul(256),
                to_u32(m.div_ceil(64), "row tiles")?,
                1,
            ]),
        }
    };
    Ok((idx, Launch { push, global }))
}

/// Weight rows per workgroup of `linear_gemv` (its local size / 32).
const GEMV_ROWS: usize = 4;
/// Local size of `linear_gemv` (manifest).
const GEMV_LOCAL: u32 = 128;

/// The kernel of [`linear_node`] (and the int8-weight linears) at M activation rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinearKernel {
    /// `linear_gemv_m{MT}`: MT >= M rows, each weight element read once for all of them.
    Gemv(usize),
    /// `linear_tiled`: 64 x 64 output tiles.
    Tiled,
}

impl LinearKernel {
    /// The kernels of every M up to `max_m`: a GEMV per row count up to 8, the tiled kernel
    /// above.
    pub(crate) fn up_to(max_m: usize) -> Vec<LinearKernel> {
        [1, 2, 4, 8, 9]
            .into_iter()
            .map(LinearKernel::of)
            .filter(|kn| kn.smallest_m() <= max_m.max(1))
            .collect()
    }
    fn of(m: usize) -> LinearKernel {
        match m {
            0..=1 => LinearKernel::Gemv(1),
            2 => LinearKernel::Gemv(2),
            3..=4 => LinearKernel::Gemv(4),
            5..=8 => LinearKernel::Gemv(8),
            _ => LinearKernel::Tiled,
        }
    }
    /// The fewest rows that take this kernel.
    fn smallest_m(self) -> usize {
        match self {
            LinearKernel::Gemv(1) => 0,
            LinearKernel::Gemv(mt) => mt / 2 + 1,
            LinearKernel::Tiled => 9,
        }
    }
    fn shader(self, dt: DataType, call: &OpCall<'_>) -> Result<etvk_shaders::ShaderId> {
        match self {
            LinearKernel::Gemv(mt) => float_shader(&format!("linear_gemv_m{mt}"), dt, call),
            LinearKernel::Tiled => float_shader("linear_tiled", dt, call),
        }
    }
}

/// Current `(M, K)` of a 2-D operand and `(K, N)` of the other, checked against each other.
fn mm_dims(a: &[usize], b: &[usize]) -> Result<(usize, usize, usize)> {
    if a.len() != 2 || b.len() != 2 {
        return Err(invalid_program(format!(
            "operands must be 2-D, got {a:?} and {b:?}"
        )));
    }
    if a[1] != b[0] {
        return Err(invalid_arg(format!("inner dims differ: {a:?} @ {b:?}")));
    }
    Ok((a[0], a[1], b[1]))
}

/// Shared builder of mm / addmm: `out = alpha * a @ b + beta * bias`.
#[allow(clippy::too_many_arguments)]
fn build_mm_common(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    a: TensorId,
    b: TensorId,
    bias: Option<TensorId>,
    alpha: f32,
    beta: f32,
    out: TensorId,
) -> Result<()> {
    let s = g.shapes();
    let mut dts = vec![s.dtype(a), s.dtype(b), s.dtype(out)];
    if let Some(c) = bias {
        dts.push(s.dtype(c));
        if s.max_dims(c).len() > 2 {
            return Err(invalid_program(format!(
                "{}: bias has sizes {:?}, expected rank <= 2",
                call.what(),
                s.max_dims(c)
            )));
        }
    }
    let dt = same_dtype(call, &dts)?;
    let shader = float_shader("matmul_tiled", dt, call)?;
    let bias_t = g.or_dummy(bias)?;
    g.dispatch(call, Dispatch::new(shader, [out, a, b, bias_t]), move |s| {
        let (m, k, n) = mm_dims(s.dims(a), s.dims(b))?;
        let bias_strides = match bias {
            Some(c) => {
                let cd = s.dims(c).to_vec();
                // Broadcast like PyTorch: a size-1 (or missing) dim strides by 0.
                let ok = cd.len() <= 2
                    && cd
                        .iter()
                        .rev()
                        .zip([n, m])
                        .all(|(&d, want)| d == 1 || d == want);
                if !ok {
                    return Err(invalid_arg(format!(
                        "bias sizes {cd:?} do not broadcast to [{m}, {n}]"
                    )));
                }
                let st = broadcast_strides(&cd, &[m, n]);
                Some(MatStrides {
                    b: 0,
                    r: to_u32(st[0], "bias stride")?,
                    c: to_u32(st[1], "bias stride")?,
                })
            }
            None => None,
        };
        s.set_dims(out, vec![m, n])?;
        let (k32, n32) = (to_u32(k, "K")?, to_u32(n, "N")?);
        matmul_launch(
            m,
            n,
            k,
            1,
            MatStrides { b: 0, r: k32, c: 1 },
            MatStrides { b: 0, r: n32, c: 1 },
            bias_strides,
            alpha,
            beta,
            None,
        )
    })
}

fn build_mm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let a = g.tensor_or_prepack(call, 0)?;
    let b = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    build_mm_common(g, call, a, b, None, 1.0, 1.0, out)
}

fn build_addmm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    // `[bias, mat1, mat2, beta, alpha, out]`; beta / alpha may be left out (default 1).
    let (beta, alpha) = match call.args.len() {
        4 => (1.0, 1.0),
        _ => {
            call.expect_args(6)?;
            (
                g.double_arg_or(call, 3, 1.0)?,
                g.double_arg_or(call, 4, 1.0)?,
            )
        }
    };
    let bias = g.tensor_or_prepack(call, 0)?;
    let a = g.tensor_or_prepack(call, 1)?;
    let b = g.tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    build_mm_common(g, call, a, b, Some(bias), alpha as f32, beta as f32, out)
}

fn build_bmm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let a = g.tensor_or_prepack(call, 0)?;
    let b = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(a), s.dtype(b), s.dtype(out)])?;
    let shader = float_shader("matmul_tiled", dt, call)?;
    let dummy = g.dummy()?;
    g.dispatch(call, Dispatch::new(shader, [out, a, b, dummy]), move |s| {
        let (ad, bd) = (s.dims(a).to_vec(), s.dims(b).to_vec());
        if ad.len() != 3 || bd.len() != 3 || ad[0] != bd[0] || ad[2] != bd[1] {
            return Err(invalid_arg(format!(
                "operands must be [B, M, K] and [B, K, N], got {ad:?} and {bd:?}"
            )));
        }
        let (batch, m, k, n) = (ad[0], ad[1], ad[2], bd[2]);
        s.set_dims(out, vec![batch, m, n])?;
        let (k32, n32) = (to_u32(k, "K")?, to_u32(n, "N")?);
        matmul_launch(
            m,
            n,
            k,
            batch,
            MatStrides {
                b: to_u32(m * k, "M*K")?,
                r: k32,
                c: 1,
            },
            MatStrides {
                b: to_u32(k * n, "K*N")?,
                r: n32,
                c: 1,
            },
            None,
            1.0,
            1.0,
            None,
        )
    })
}
