//! Creation ops: `aten.full.default` (`[size, fill_value, dtype, layout, device,
//! pin_memory, out]`), `aten.full_like.default` (`[self, fill_value, dtype, layout, device,
//! pin_memory, memory_format, out]`) and `aten.arange.start_step` (`[start, end, step, dtype,
//! layout, device, pin_memory, out]`); `aten.ones.default` / `aten.zeros.default` (`[size,
//! dtype, layout, device, pin_memory, out]`), `aten.ones_like.default` /
//! `aten.zeros_like.default` (`[self, dtype, layout, device, pin_memory, memory_format,
//! out]`) and `aten.scalar_tensor.default` (`[s, dtype, layout, device, pin_memory, out]`,
//! a 0-d output). executorch 1.5.1 decomposes ones / zeros / their `_like` forms into full /
//! full_like and leaves scalar_tensor on the CPU; their argument lists are the exporter's
//! serialization of the schemas (checked with the ops kept from decomposition).
//!
//! The exporter writes dtype / layout / device / memory-format arguments as `Null`, so the
//! output tensor's dtype decides what is written (int64 outputs arrive as int32; bool
//! outputs get `value != 0`, four to a word). Sizes and
//! scalars may be SymInts: they are read again at every resize, so a `full([seq, 4], x)` or
//! an `arange(0, seq)` follows the current sequence length.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program};
use crate::graph::{to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::ops::data_shader;
use crate::ops::shape::{move_global, size_items, SizeItem};
use crate::registry::Registry;

/// Output dtypes the `fill` / `arange` shaders have variants for.
const CREATE_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Output dtypes of the fills (`fill_u8` writes bools).
const FILL_DTYPES: &[DataType] = &[
    DataType::Float32,
    DataType::Float16,
    DataType::Int32,
    DataType::Bool,
];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register_dynamic(
        FILL_DTYPES,
        &[
            (
                "aten.ones.default",
                build_ones as crate::registry::OpBuildFn,
                "out filled with 1; sizes IntList or ValueList with SymInts (re-read at every execute)",
            ),
            (
                "aten.zeros.default",
                build_zeros,
                "out filled with 0; sizes IntList or ValueList with SymInts (re-read at every execute)",
            ),
            (
                "aten.ones_like.default",
                build_ones_like,
                "out shaped like self (follows its dynamic sizes), filled with 1",
            ),
            (
                "aten.zeros_like.default",
                build_zeros_like,
                "out shaped like self (follows its dynamic sizes), filled with 0",
            ),
            (
                "aten.scalar_tensor.default",
                build_scalar_tensor,
                "0-d out holding s (Int, Double, Bool or SymInt, re-read at every execute)",
            ),
        ],
    )?;
    r.register_dynamic(
        FILL_DTYPES,
        &[
            (
                "aten.full.default",
                build_full,
                "out filled with fill_value (Int, Double, Bool or SymInt); sizes IntList or ValueList with SymInts (re-read at every execute)",
            ),
            (
                "aten.full_like.default",
                build_full_like,
                "out shaped like self (follows its dynamic sizes), filled with fill_value; out's dtype decides",
            ),
        ],
    )?;
    r.register_dynamic(
        CREATE_DTYPES,
        &[
            (
                "aten.arange.start_step",
                build_arange,
                "start + i * step for i < ceil((end - start) / step); start/end/step Int, Double or SymInt; step 0 is an error",
            ),
        ],
    )
}

/// A scalar argument: a literal, or a SymInt whose current value is read at every resize.
#[derive(Debug, Clone, Copy)]
enum Num {
    Lit(f64),
    Sym(usize),
}

impl Num {
    fn get(self, s: &Shapes) -> Result<f64> {
        match self {
            Num::Lit(x) => Ok(x),
            Num::Sym(id) => s.scalar(id),
        }
    }
}

/// Arg `i` as a number: Int, Double, Bool or SymInt (`role` names it in errors).
fn num_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, role: &str) -> Result<Num> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Int(x) => Ok(Num::Lit(*x as f64)),
        GValue::Double(x) => Ok(Num::Lit(*x)),
        GValue::Bool(x) => Ok(Num::Lit(f64::from(u8::from(*x)))),
        GValue::SymInt => Ok(Num::Sym(v)),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): {role} must be an Int, Double, Bool or SymInt, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// The `size` arg of `full`: an IntList, or a ValueList of Int / SymInt values.
fn size_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<Vec<Num>> {
    Ok(size_items(g, call, i)?
        .into_iter()
        .map(|it| match it {
            SizeItem::Lit(x) => Num::Lit(x as f64),
            SizeItem::Sym(id) => Num::Sym(id),
        })
        .collect())
}

/// The 32 bits the `fill` / `arange` shaders read for `x` in an output of dtype `dt`: an
/// i32 (truncated toward zero, as PyTorch casts a float scalar to an int tensor) or an f32.
fn scalar_bits(x: f64, dt: DataType, what: &str, role: &str) -> Result<u32> {
    if dt == DataType::Bool {
        return Ok(u32::from(x != 0.0));
    }
    if dt != DataType::Int32 {
        return Ok((x as f32).to_bits());
    }
    let t = x.trunc();
    if !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&t) {
        return Err(invalid_arg(format!(
            "{what}: {role} {x} does not fit the int32 output"
        )));
    }
    Ok((t as i32) as u32)
}

/// The `fill` dispatch writing `value` into `out`, whose sizes `dims` computes at every
/// resize.
fn fill_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    out: TensorId,
    value: Num,
    dims: impl Fn(&Shapes) -> Result<Vec<usize>> + Send + Sync + 'static,
) -> Result<()> {
    let dt = g.shapes().dtype(out);
    let shader = if dt == DataType::Bool {
        etvk_shaders::ShaderId::FillU8
    } else {
        data_shader("fill", dt, call)?
    };
    let what = call.what();
    g.dispatch(call, Dispatch::new(shader, [out]), move |s| {
        let od = dims(s)?;
        let bits = scalar_bits(value.get(s)?, dt, &what, "fill_value")?;
        s.set_dims(out, od)?;
        let numel = s.numel(out);
        Ok(Launch {
            push: Push::new().u32(to_u32(numel, "numel")?).u32(bits).finish(),
            global: move_global(numel, dt),
        })
    })
}

fn build_full(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(7)?;
    let value = num_arg(g, call, 1, "fill_value")?;
    fill_sized(g, call, value, 6)
}

/// `[size, dtype, layout, device, pin_memory, out]` filled with `value`.
fn fill_sized_constant(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, value: f64) -> Result<()> {
    call.expect_args(6)?;
    fill_sized(g, call, Num::Lit(value), 5)
}

fn build_ones(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    fill_sized_constant(g, call, 1.0)
}

fn build_zeros(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    fill_sized_constant(g, call, 0.0)
}

/// `[s, dtype, layout, device, pin_memory, out]`: a 0-d tensor holding s.
fn build_scalar_tensor(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let value = num_arg(g, call, 0, "s")?;
    let out = g.tensor_arg(call, 5)?;
    let max = g.shapes().max_dims(out).to_vec();
    if !max.is_empty() {
        return Err(invalid_program(format!(
            "{}: the output has sizes {max:?}; scalar_tensor produces a 0-d tensor",
            call.what()
        )));
    }
    fill_dispatch(g, call, out, value, |_| Ok(Vec::new()))
}

/// The `size` list at arg 0 of `call`, `out` at arg `out_arg`, filled with `value`.
fn fill_sized(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    value: Num,
    out_arg: usize,
) -> Result<()> {
    let what = call.what();
    let sizes = size_arg(g, call, 0)?;
    let out = g.tensor_arg(call, out_arg)?;
    let rank = g.shapes().max_dims(out).len();
    if sizes.len() != rank {
        return Err(invalid_program(format!(
            "{what}: size has {} entries but the output has rank {rank}",
            sizes.len()
        )));
    }
    fill_dispatch(g, call, out, value, move |s| {
        sizes
            .iter()
            .enumerate()
            .map(|(d, n)| {
                let x = n.get(s)?;
                if x < 0.0 || x.fract() != 0.0 {
                    return Err(invalid_arg(format!(
                        "{what}: size {x} at dim {d} is not a non-negative integer"
                    )));
                }
                Ok(x as usize)
            })
            .collect()
    })
}

fn build_full_like(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let value = num_arg(g, call, 1, "fill_value")?;
    fill_like(g, call, value, 7)
}

/// `[self, dtype, layout, device, pin_memory, memory_format, out]` filled with `value`.
fn fill_like_constant(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, value: f64) -> Result<()> {
    call.expect_args(7)?;
    fill_like(g, call, Num::Lit(value), 6)
}

fn build_ones_like(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    fill_like_constant(g, call, 1.0)
}

fn build_zeros_like(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    fill_like_constant(g, call, 0.0)
}

/// Out (arg `out_arg`) shaped like self (arg 0), filled with `value`.
fn fill_like(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    value: Num,
    out_arg: usize,
) -> Result<()> {
    let what = call.what();
    let out = g.tensor_arg(call, out_arg)?;
    let xv = call.arg(0)?;
    // Only self's sizes matter: a constant is never uploaded for them.
    let like = match g.value(xv)? {
        GValue::Tensor(x) => Ok((Some(*x), Vec::new())),
        GValue::TensorRef(c) => Ok((None, c.dims.clone())),
        other => Err(invalid_program(format!(
            "{what} arg 0 (value {xv}): expected a tensor, got {}",
            gvalue_kind(other)
        ))),
    };
    let (x, fixed) = like?;
    let rank = g.shapes().max_dims(out).len();
    fill_dispatch(g, call, out, value, move |s| {
        let dims = match x {
            Some(x) => s.dims(x).to_vec(),
            None => fixed.clone(),
        };
        if dims.len() != rank {
            return Err(invalid_program(format!(
                "{what}: self has rank {} but the output has rank {rank}",
                dims.len()
            )));
        }
        Ok(dims)
    })
}

/// Number of elements of `arange(start, end, step)`, PyTorch's rule: for int outputs the
/// scalars are truncated to integers first; the step must be nonzero and point from start
/// toward end (or end == start: empty).
fn arange_len(start: f64, end: f64, step: f64, int_out: bool, what: &str) -> Result<usize> {
    let (start, end, step) = if int_out {
        (start.trunc(), end.trunc(), step.trunc())
    } else {
        (start, end, step)
    };
    if step == 0.0 || step.is_nan() {
        return Err(invalid_arg(format!(
            "{what}: step must be nonzero (got {step})"
        )));
    }
    if !start.is_finite() || !end.is_finite() {
        return Err(invalid_arg(format!(
            "{what}: unsupported range {start} to {end}: bounds must be finite"
        )));
    }
    if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
        return Err(invalid_arg(format!(
            "{what}: upper bound {end} and lower bound {start} are inconsistent with step sign {step}"
        )));
    }
    let len = ((end - start) / step).ceil();
    if len > usize::MAX as f64 / 2.0 {
        return Err(invalid_arg(format!(
            "{what}: arange({start}, {end}, {step}) has {len} elements, too many"
        )));
    }
    Ok(len as usize)
}

fn build_arange(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let what = call.what();
    let start = num_arg(g, call, 0, "start")?;
    let end = num_arg(g, call, 1, "end")?;
    let step = num_arg(g, call, 2, "step")?;
    let out = g.tensor_arg(call, 7)?;
    let s = g.shapes();
    let max = s.max_dims(out).to_vec();
    if max.len() != 1 {
        return Err(invalid_program(format!(
            "{what}: the output has sizes {max:?}; arange produces a 1-D tensor"
        )));
    }
    let dt = s.dtype(out);
    let int_out = dt == DataType::Int32;
    let shader = data_shader("arange", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out]), move |s| {
        let (a, b, st) = (start.get(s)?, end.get(s)?, step.get(s)?);
        let len = arange_len(a, b, st, int_out, &what)?;
        if len > max[0] {
            return Err(invalid_arg(format!(
                "{what}: arange({a}, {b}, {st}) has {len} elements, more than the output's \
                 serialized maximum {}",
                max[0]
            )));
        }
        s.set_dims(out, vec![len])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(len, "numel")?)
                .u32(scalar_bits(a, dt, &what, "start")?)
                .u32(scalar_bits(st, dt, &what, "step")?)
                .u32(0)
                .finish(),
            global: Global::Linear(len as u64),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arange_lengths_follow_pytorch() {
        assert_eq!(arange_len(0.0, 5.0, 1.0, false, "t").unwrap(), 5);
        assert_eq!(arange_len(0.0, 5.0, 2.0, false, "t").unwrap(), 3);
        assert_eq!(arange_len(1.0, 0.0, -0.3, false, "t").unwrap(), 4);
        assert_eq!(arange_len(3.0, 3.0, 1.0, false, "t").unwrap(), 0);
        // Int outputs truncate the scalars first: step 1.5 -> 1.
        assert_eq!(arange_len(0.0, 5.0, 1.5, true, "t").unwrap(), 5);
        assert!(arange_len(0.0, 5.0, 0.0, false, "t").is_err());
        assert!(arange_len(0.0, 5.0, 0.5, true, "t").is_err());
        assert!(arange_len(5.0, 0.0, 1.0, false, "t").is_err());
    }

    #[test]
    fn int_fill_bits_truncate_and_check_range() {
        assert_eq!(
            scalar_bits(-2.7, DataType::Int32, "t", "v").unwrap(),
            (-2i32) as u32
        );
        assert_eq!(
            scalar_bits(1.5, DataType::Float32, "t", "v").unwrap(),
            1.5f32.to_bits()
        );
        assert!(scalar_bits(3e9, DataType::Int32, "t", "v").is_err());
        assert!(scalar_bits(f64::NAN, DataType::Int32, "t", "v").is_err());
    }
}
