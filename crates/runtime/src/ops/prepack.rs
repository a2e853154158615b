//! `et_vk.prepack.default(const, out)`: upload a constant for ops that take it as a plain
//! tensor. The output aliases the shared packed copy (layout `contiguous`), so an op that
//! mutates it in place (KV caches, training state) mutates what every reader sees, and the
//! mutation persists across executes.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{GraphBuilder, Layout, OpCall};
use crate::error::invalid_program;
use crate::registry::{OpEntry, Registry};

const ALL_DTYPES: &[DataType] = &[
    DataType::Float32,
    DataType::Float16,
    DataType::Int32,
    DataType::Int8,
    DataType::Uint8,
    DataType::Bool,
];

/// Register `et_vk.prepack.default`.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "et_vk.prepack.default",
        build: build_prepack,
        dtypes: ALL_DTYPES,
        dynamic_shapes: true,
        note: "uploads a constant once; the output aliases the shared contiguous copy",
    })
}

fn build_prepack(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(2)?;
    let src = call.arg(0)?;
    let out_v = call.arg(1)?;
    let out = g.tensor_arg(call, 1)?;
    let packed = g.prepack(src, &Layout::contiguous())?;
    let s = g.shapes();
    if s.dtype(out) != s.dtype(packed) || s.max_dims(out) != s.max_dims(packed) {
        return Err(invalid_program(format!(
            "{}: output {} {:?} does not match constant {} {:?}",
            call.what(),
            s.dtype(out).name(),
            s.max_dims(out),
            s.dtype(packed).name(),
            s.max_dims(packed)
        )));
    }
    g.alias_value(out_v, packed)
}
