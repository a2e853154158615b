//! Matrix-multiply family on the strided `matmul` shader: `aten.linear.default`.
//! (mm / addmm / bmm reuse [`matmul_launch`] with other strides.)

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{Dispatch, GraphBuilder, OpCall};
use crate::error::invalid_program;
use crate::graph::{to_u32, Global, Launch, Push};
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
    })
}

/// Element strides of one operand of the `matmul` shader: (batch, row, col).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatStrides {
    /// Batch stride.
    pub b: u32,
    /// Stride of the first matrix index (A: m, B: k, bias: m).
    pub r: u32,
    /// Stride of the second matrix index (A: k, B: n, bias: n).
    pub c: u32,
}

/// The `matmul` shader's launch: `out[b][m][n] = alpha * sum_k A[b,m,k] B[b,k,n] + beta *
/// bias[b,m,n]` (bias only when `bias` is Some), for `batch` batches.
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
        .f32(beta)
        .u32(0)
        .finish();
    Ok(Launch {
        push,
        global: Global::Grid([to_u32(n, "N")?, to_u32(m, "M")?, to_u32(batch, "batch")?]),
    })
}

fn build_linear(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let x = g.tensor_arg(call, 0)?;
    let w = g.tensor_or_prepack(call, 1)?;
    let bias = g.opt_tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(x), s.dtype(w), s.dtype(out)];
    if let Some(b) = bias {
        dts.push(s.dtype(b));
    }
    let dt = same_dtype(call, &dts)?;
    let wd = s.max_dims(w).to_vec();
    if wd.len() != 2 {
        return Err(invalid_program(format!(
            "{}: weight must be 2-D [N, K], got {wd:?}",
            call.what()
        )));
    }
    let (n, k) = (wd[0], wd[1]);
    if let Some(b) = bias {
        if s.numel(b) != n {
            return Err(invalid_program(format!(
                "{}: bias has sizes {:?}, expected [{n}]",
                call.what(),
                s.max_dims(b)
            )));
        }
    }
    let shader = float_shader("matmul", dt, call)?;
    let bias_t = match bias {
        Some(b) => b,
        None => g.dummy()?,
    };
    let k32 = to_u32(k, "K")?;
    g.dispatch(call, Dispatch::new(shader, [out, x, w, bias_t]), move |s| {
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
        matmul_launch(
            m,
            n,
            k,
            1,
            MatStrides { b: 0, r: k32, c: 1 },
            // B[k][n] = W[n][k]: k is contiguous, n strides by K.
            MatStrides { b: 0, r: 1, c: k32 },
            bias.map(|_| MatStrides { b: 0, r: 0, c: 1 }),
            1.0,
            1.0,
        )
    })
}
