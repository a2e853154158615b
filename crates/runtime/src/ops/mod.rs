//! Op builders, one module per family. Each family has a `register_all(&mut Registry)`;
//! [`register_all`] below is the one place that calls them.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::OpCall;
use crate::error::{internal, unsupported};
use crate::registry::Registry;

pub mod attention;
pub mod binary;
pub mod conv;
pub mod creation;
pub(crate) mod fusion;
pub mod grid;
pub mod indexing;
pub mod llama;
pub mod logic;
pub mod matmul;
pub mod norm;
pub mod pool;
pub mod prepack;
pub mod q4_linear;
pub(crate) mod q4_mma_check;
pub(crate) mod q4_wide_check;
pub mod q8_linear;
pub mod q8ta;
pub mod quant_blocks;
pub mod quantize;
pub mod reduce;
pub mod resize;
pub mod shape;
pub mod training;
pub mod unary;

/// Register every op family. Add new families here (and nowhere else).
pub fn register_all(r: &mut Registry) -> Result<()> {
    attention::register_all(r)?;
    binary::register_all(r)?;
    conv::register_all(r)?;
    creation::register_all(r)?;
    grid::register_all(r)?;
    indexing::register_all(r)?;
    llama::register_all(r)?;
    logic::register_all(r)?;
    matmul::register_all(r)?;
    norm::register_all(r)?;
    pool::register_all(r)?;
    prepack::register_all(r)?;
    q4_linear::register_all(r)?;
    q8ta::register_all(r)?;
    quant_blocks::register_all(r)?;
    quantize::register_all(r)?;
    reduce::register_all(r)?;
    resize::register_all(r)?;
    shape::register_all(r)?;
    training::register_all(r)?;
    unary::register_all(r)?;
    Ok(())
}

/// Manifest tag of a float dtype (`f32`, `f16`), the suffix of float shader variants.
pub fn float_tag(dt: DataType) -> Option<&'static str> {
    match dt {
        DataType::Float32 => Some("f32"),
        DataType::Float16 => Some("f16"),
        _ => None,
    }
}

/// The `{prefix}_{f32|f16}` shader variant for `dt`, or `Unsupported` naming the op.
pub fn float_shader(prefix: &str, dt: DataType, call: &OpCall) -> Result<ShaderId> {
    let tag = float_tag(dt).ok_or_else(|| {
        unsupported(format!(
            "{}: dtype {} is not supported (float32, float16 are)",
            call.what(),
            dt.name()
        ))
    })?;
    variant(prefix, tag, call)
}

/// The `{prefix}_{f32|f16|i32}` variant for `dt` (data-movement shaders: copies, gathers,
/// slices), or `Unsupported` naming the op.
pub fn data_shader(prefix: &str, dt: DataType, call: &OpCall) -> Result<ShaderId> {
    let tag = match dt {
        DataType::Int32 => "i32",
        _ => float_tag(dt).ok_or_else(|| {
            unsupported(format!(
                "{}: dtype {} is not supported (float32, float16, int32 are)",
                call.what(),
                dt.name()
            ))
        })?,
    };
    variant(prefix, tag, call)
}

fn variant(prefix: &str, tag: &str, call: &OpCall) -> Result<ShaderId> {
    let name = format!("{prefix}_{tag}");
    ShaderId::from_name(&name).ok_or_else(|| {
        internal(format!(
            "{}: shader variant {name} missing from the manifest",
            call.what()
        ))
    })
}

/// A possibly negative dim (PyTorch convention) normalized against `rank`, or an error
/// naming `what`.
pub fn norm_dim(d: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    let n = if d < 0 { d + r } else { d };
    if n < 0 || n >= r {
        return Err(crate::error::invalid_program(format!(
            "{what}: dim {d} out of range for rank {rank}"
        )));
    }
    Ok(n as usize)
}

/// Fail unless every tensor dtype in `dts` equals the first.
pub fn same_dtype(call: &OpCall, dts: &[DataType]) -> Result<DataType> {
    let first = dts
        .first()
        .copied()
        .ok_or_else(|| internal("same_dtype of nothing"))?;
    if let Some(d) = dts.iter().find(|d| **d != first) {
        return Err(unsupported(format!(
            "{}: mixed dtypes {} and {} are not supported",
            call.what(),
            first.name(),
            d.name()
        )));
    }
    Ok(first)
}

/// The constant behind arg `i` of `call`, or an error naming the op, the arg and `what` it
/// is (for arguments packed once at load: 4-bit weights and their scales, int8 weights).
pub(crate) fn constant_arg(
    g: &crate::builder::GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    what: &str,
) -> Result<crate::builder::ConstantInfo> {
    use crate::builder::GValue;
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::TensorRef(c) => Ok(c.clone()),
        GValue::Tensor(_) => Err(unsupported(format!(
            "{}: {what} (arg {i}, value {v}) is a runtime tensor; {what} must be a constant (packed at load)",
            call.what()
        ))),
        other => Err(crate::error::invalid_program(format!(
            "{}: {what} (arg {i}, value {v}) must be a constant tensor, got {}",
            call.what(),
            crate::builder::gvalue_kind(other)
        ))),
    }
}
