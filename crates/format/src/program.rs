//! `.pte` parsing (§1 of the format notes): `ET12` identifier, optional `eh00` extended
//! header, the verified program flatbuffer, then semantic checks into [`Program`].
use std::ops::Range;

use crate::error::{escape_bytes, FormatError};
use crate::generated::{et, verifier_options};
use crate::program_ir::{
    BackendDelegate, Chain, DelegateData, EValue, ExecutionPlan, ExtendedHeader, Instruction,
    Operator, PlanTensor, Program, TensorData,
};
use crate::realign::realign_unaligned_vectors;
use crate::vkgraph::{check_index, checked_numel};

const PTE: &str = "pte";

/// Magic of the extended header at file bytes 8..12.
pub const EXTENDED_HEADER_MAGIC: &[u8; 4] = b"eh00";
/// Serialized length of the extended header (magic + length + 3 u64 fields).
pub const EXTENDED_HEADER_LEN: u32 = 32;

/// Element size in bytes of an ExecuTorch `ScalarType` code, `None` for unknown codes.
pub fn scalar_type_size(code: i8) -> Option<usize> {
    Some(match code {
        0 | 1 | 11 | 12 | 13 | 16 | 17 | 23..=26 => 1,
        2 | 5 | 15 | 22 | 27 => 2,
        3 | 6 | 14 | 28 => 4,
        4 | 7 | 29 => 8,
        _ => return None,
    })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Parse the extended header if present (`eh00` at bytes 8..12); `Ok(None)` when absent.
pub fn parse_extended_header(bytes: &[u8]) -> Result<Option<ExtendedHeader>, FormatError> {
    if bytes.len() < 12 || &bytes[8..12] != EXTENDED_HEADER_MAGIC {
        return Ok(None);
    }
    let have = bytes.len() as u64;
    if bytes.len() < 16 {
        return Err(FormatError::Truncated {
            ctx: PTE,
            what: "extended header",
            need: 16,
            have,
        });
    }
    let header_length = u32_at(bytes, 12);
    if header_length < 24 {
        return Err(FormatError::invalid(
            PTE,
            "extended header length",
            format!("{header_length} is below the minimum 24"),
        ));
    }
    let need = if header_length >= 32 { 40 } else { 32 };
    if bytes.len() < need {
        return Err(FormatError::Truncated {
            ctx: PTE,
            what: "extended header",
            need: need as u64,
            have,
        });
    }
    Ok(Some(ExtendedHeader {
        header_length,
        program_size: u64_at(bytes, 16),
        segment_base_offset: u64_at(bytes, 24),
        segment_data_size: if header_length >= 32 {
            u64_at(bytes, 32)
        } else {
            0
        },
    }))
}

/// File byte range of a flatbuffer vector's payload. The vector was returned by the
/// verified root over `buf`, so its bytes lie inside `buf`; the subtraction is of addresses
/// only (no pointer is dereferenced).
fn range_in(buf: &[u8], v: &[u8]) -> Range<usize> {
    let start = (v.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    start..start + v.len()
}

/// Checked u64 byte range `[start, start + size)` that must lie in `0..limit`.
fn sub_range(start: u64, size: u64, limit: usize) -> Option<Range<usize>> {
    let end = start.checked_add(size)?;
    if end > limit as u64 {
        return None;
    }
    Some(start as usize..end as usize)
}

/// Constant or mutable sub-segment: the segment's byte range and the offsets table.
struct Subsegment {
    range: Range<usize>,
    offsets: Vec<u64>,
}

/// Parse and validate a whole `.pte` file.
pub fn parse_program(bytes: Vec<u8>) -> Result<Program, FormatError> {
    let parsed = parse_borrowed(&bytes)?;
    let (extended_header, plans, inline_delegate_data, segments, named_data) = parsed;
    Ok(Program {
        bytes,
        extended_header,
        plans,
        inline_delegate_data,
        segments,
        named_data,
        external: Vec::new(),
    })
}

type Parsed = (
    Option<ExtendedHeader>,
    Vec<ExecutionPlan>,
    Vec<Range<usize>>,
    Vec<Range<usize>>,
    Vec<(String, Range<usize>)>,
);

fn parse_borrowed(bytes: &[u8]) -> Result<Parsed, FormatError> {
    let len = bytes.len() as u64;
    if bytes.len() < 8 {
        return Err(FormatError::Truncated {
            ctx: PTE,
            what: "flatbuffer root + identifier",
            need: 8,
            have: len,
        });
    }
    if &bytes[4..8] != b"ET12" {
        return Err(FormatError::BadMagic {
            ctx: PTE,
            at: "bytes 4..8",
            expected: "ET12",
            found: escape_bytes(&bytes[4..8]),
        });
    }
    let eh = parse_extended_header(bytes)?;
    let fb: &[u8] = match &eh {
        Some(h) => {
            if h.program_size > len || h.program_size < 8 {
                return Err(FormatError::OutOfBounds {
                    ctx: PTE,
                    region: format!("program flatbuffer [offset 0, size {}]", h.program_size),
                    container: "file",
                    len,
                });
            }
            &bytes[..h.program_size as usize]
        }
        None => bytes,
    };
    let opts = verifier_options(fb.len());
    let verifier_error = |e: flatbuffers::InvalidFlatbuffer| FormatError::Verifier {
        ctx: PTE,
        detail: e.to_string(),
    };
    // Byte vectors never move, so ranges found in the realigned copy hold in `bytes` too.
    let fb = realign_unaligned_vectors(fb, |b| et::root_as_program_with_opts(&opts, b).map(|_| ()))
        .map_err(verifier_error)?;
    let fb: &[u8] = &fb;
    let root = et::root_as_program_with_opts(&opts, fb).map_err(verifier_error)?;

    // Segments, relative to segment_base_offset.
    let mut segments = Vec::new();
    for (i, s) in root.segments().iter().flatten().enumerate() {
        // Without an extended header the program is the whole file and segment offsets
        // count from its start, as ExecuTorch's loader reads them; the exporter writes such
        // files when a program has no constant data (one empty segment).
        let base = eh.as_ref().map_or(0, |h| h.segment_base_offset);
        let r = base
            .checked_add(s.offset())
            .and_then(|start| sub_range(start, s.size(), bytes.len()))
            .ok_or_else(|| FormatError::OutOfBounds {
                ctx: PTE,
                region: format!("segment {i} [offset {}, size {}]", s.offset(), s.size()),
                container: "file",
                len,
            })?;
        segments.push(r);
    }

    // Checked after the individual segments so that a cut file names the segment it cut.
    if let Some(h) = eh.as_ref().filter(|h| h.segment_base_offset != 0) {
        let end = h.segment_base_offset.checked_add(h.segment_data_size);
        if !matches!(end, Some(e) if e <= len) || h.segment_base_offset < h.program_size {
            return Err(FormatError::OutOfBounds {
                ctx: PTE,
                region: format!(
                    "segment data [offset {}, size {}]",
                    h.segment_base_offset, h.segment_data_size
                ),
                container: "file",
                len,
            });
        }
    }

    let mut named_data = Vec::new();
    for (i, nd) in root.named_data().iter().flatten().enumerate() {
        let key = nd.key().ok_or_else(|| {
            FormatError::invalid(PTE, format!("named_data[{i}]"), "key is missing")
        })?;
        let si = check_index(
            PTE,
            || format!("named_data[{i}] ({key}).segment_index"),
            nd.segment_index() as i64,
            segments.len(),
        )?;
        named_data.push((key.to_owned(), segments[si].clone()));
    }

    let inline_delegate_data: Vec<Range<usize>> = root
        .backend_delegate_data()
        .iter()
        .flatten()
        .map(|d| d.data().map_or(0..0, |v| range_in(fb, v.bytes())))
        .collect();

    let subsegment =
        |what: &str, s: et::SubsegmentOffsets<'_>| -> Result<Subsegment, FormatError> {
            let si = check_index(
                PTE,
                || format!("{what}.segment_index"),
                s.segment_index() as i64,
                segments.len(),
            )?;
            Ok(Subsegment {
                range: segments[si].clone(),
                offsets: s.offsets().iter().flatten().collect(),
            })
        };
    let constant_segment = root
        .constant_segment()
        .map(|s| subsegment("constant_segment", s))
        .transpose()?;
    let mutable_segments = root
        .mutable_data_segments()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, s)| subsegment(&format!("mutable_data_segments[{i}]"), s))
        .collect::<Result<Vec<_>, _>>()?;
    let constant_buffers: Vec<Range<usize>> = root
        .constant_buffer()
        .iter()
        .flatten()
        .map(|b| b.storage().map_or(0..0, |v| range_in(fb, v.bytes())))
        .collect();
    let ctx = DataCtx {
        len: bytes.len(),
        constant_segment: constant_segment.as_ref(),
        constant_buffers: &constant_buffers,
        mutable_segments: &mutable_segments,
        n_inline: inline_delegate_data.len(),
        n_segments: segments.len(),
    };

    let mut plans = Vec::new();
    for (p, plan) in root.execution_plan().iter().flatten().enumerate() {
        plans.push(parse_plan(p, &plan, &ctx)?);
    }
    Ok((eh, plans, inline_delegate_data, segments, named_data))
}

struct DataCtx<'a> {
    len: usize,
    constant_segment: Option<&'a Subsegment>,
    constant_buffers: &'a [Range<usize>],
    mutable_segments: &'a [Subsegment],
    n_inline: usize,
    n_segments: usize,
}

fn int_indices(
    field: impl Fn(usize) -> String,
    v: Option<flatbuffers::Vector<'_, i32>>,
    n: usize,
) -> Result<Vec<usize>, FormatError> {
    v.iter()
        .flatten()
        .enumerate()
        .map(|(j, x)| check_index(PTE, || field(j), x as i64, n))
        .collect()
}

fn parse_plan(
    p: usize,
    plan: &et::ExecutionPlan<'_>,
    ctx: &DataCtx<'_>,
) -> Result<ExecutionPlan, FormatError> {
    let name = plan
        .name()
        .ok_or_else(|| {
            FormatError::invalid(PTE, format!("execution_plan[{p}]"), "name is missing")
        })?
        .to_owned();
    let at = |s: &str| format!("plan {name:?} {s}");
    let values_fb = plan.values();
    let n_values = values_fb.map_or(0, |v| v.len());
    let mut values = Vec::with_capacity(n_values);
    for (i, v) in values_fb.iter().flatten().enumerate() {
        values.push(parse_evalue(
            &at(&format!("values[{i}]")),
            &v,
            n_values,
            ctx,
        )?);
    }
    let inputs = int_indices(|j| at(&format!("inputs[{j}]")), plan.inputs(), n_values)?;
    let outputs = int_indices(|j| at(&format!("outputs[{j}]")), plan.outputs(), n_values)?;

    let mut operators = Vec::new();
    for (i, op) in plan.operators().iter().flatten().enumerate() {
        let name = op.name().ok_or_else(|| {
            FormatError::invalid(PTE, at(&format!("operators[{i}]")), "name is missing")
        })?;
        operators.push(Operator {
            name: name.to_owned(),
            overload: op.overload().unwrap_or_default().to_owned(),
        });
    }

    let mut delegates = Vec::new();
    for (i, d) in plan.delegates().iter().flatten().enumerate() {
        let field = at(&format!("delegates[{i}]"));
        let id = d
            .id()
            .ok_or_else(|| FormatError::invalid(PTE, field.clone(), "id is missing"))?
            .to_owned();
        let r = d.processed().ok_or_else(|| {
            FormatError::invalid(PTE, field.clone(), "processed data reference is missing")
        })?;
        let processed = match r.location() {
            et::DataLocation::INLINE => DelegateData::Inline(check_index(
                PTE,
                || format!("{field} ({id}).processed.index (INLINE)"),
                r.index() as i64,
                ctx.n_inline,
            )?),
            et::DataLocation::SEGMENT => DelegateData::Segment(check_index(
                PTE,
                || format!("{field} ({id}).processed.index (SEGMENT)"),
                r.index() as i64,
                ctx.n_segments,
            )?),
            other => {
                return Err(FormatError::invalid(
                    PTE,
                    format!("{field} ({id}).processed.location"),
                    format!("unknown DataLocation {}", other.0),
                ))
            }
        };
        let mut compile_specs = Vec::new();
        for (j, cs) in d.compile_specs().iter().flatten().enumerate() {
            let key = cs.key().ok_or_else(|| {
                FormatError::invalid(PTE, format!("{field}.compile_specs[{j}]"), "key is missing")
            })?;
            compile_specs.push((
                key.to_owned(),
                cs.value().map_or(Vec::new(), |v| v.bytes().to_vec()),
            ));
        }
        delegates.push(BackendDelegate {
            id,
            processed,
            compile_specs,
        });
    }

    let mut chains = Vec::new();
    for (c, ch) in plan.chains().iter().flatten().enumerate() {
        let cf = |s: &str| at(&format!("chains[{c}].{s}"));
        let inputs = int_indices(|j| cf(&format!("inputs[{j}]")), ch.inputs(), n_values)?;
        let outputs = int_indices(|j| cf(&format!("outputs[{j}]")), ch.outputs(), n_values)?;
        let instrs = ch.instructions();
        let n_instr = instrs.map_or(0, |v| v.len());
        let mut instructions = Vec::with_capacity(n_instr);
        for (k, ins) in instrs.iter().flatten().enumerate() {
            let f = cf(&format!("instructions[{k}]"));
            let tag = ins.instr_args_type();
            let missing = || FormatError::BadUnion {
                ctx: PTE,
                field: f.clone(),
                tag: tag.0,
                detail: "tag names a table that is missing",
            };
            let idx = |what: &str, x: i32, n: usize| {
                check_index(PTE, || format!("{f}.{what}"), x as i64, n)
            };
            let instr = match tag {
                et::InstructionArguments::KernelCall => {
                    let kc = ins.instr_args_as_kernel_call().ok_or_else(missing)?;
                    Instruction::KernelCall {
                        op_index: idx("op_index", kc.op_index(), operators.len())?,
                        args: int_indices(|j| format!("{f}.args[{j}]"), kc.args(), n_values)?,
                    }
                }
                et::InstructionArguments::DelegateCall => {
                    let dc = ins.instr_args_as_delegate_call().ok_or_else(missing)?;
                    Instruction::DelegateCall {
                        delegate_index: idx(
                            "delegate_index",
                            dc.delegate_index(),
                            delegates.len(),
                        )?,
                        args: int_indices(|j| format!("{f}.args[{j}]"), dc.args(), n_values)?,
                    }
                }
                et::InstructionArguments::MoveCall => {
                    let mc = ins.instr_args_as_move_call().ok_or_else(missing)?;
                    Instruction::MoveCall {
                        from: idx("move_from", mc.move_from(), n_values)?,
                        to: idx("move_to", mc.move_to(), n_values)?,
                    }
                }
                et::InstructionArguments::JumpFalseCall => {
                    let jf = ins.instr_args_as_jump_false_call().ok_or_else(missing)?;
                    Instruction::JumpFalseCall {
                        cond: idx("cond_value_index", jf.cond_value_index(), n_values)?,
                        destination: idx(
                            "destination_instruction",
                            jf.destination_instruction(),
                            n_instr,
                        )?,
                    }
                }
                et::InstructionArguments::FreeCall => {
                    let fc = ins.instr_args_as_free_call().ok_or_else(missing)?;
                    Instruction::FreeCall {
                        value: idx("value_index", fc.value_index(), n_values)?,
                    }
                }
                et::InstructionArguments::NONE => {
                    return Err(FormatError::BadUnion {
                        ctx: PTE,
                        field: f,
                        tag: 0,
                        detail: "NONE is not an instruction",
                    })
                }
                _ => {
                    return Err(FormatError::BadUnion {
                        ctx: PTE,
                        field: f,
                        tag: tag.0,
                        detail: "unknown InstructionArguments tag",
                    })
                }
            };
            instructions.push(instr);
        }
        chains.push(Chain {
            inputs,
            outputs,
            instructions,
        });
    }

    Ok(ExecutionPlan {
        name,
        values,
        inputs,
        outputs,
        chains,
        operators,
        delegates,
        non_const_buffer_sizes: plan.non_const_buffer_sizes().iter().flatten().collect(),
    })
}

fn parse_evalue(
    field: &str,
    v: &et::EValue<'_>,
    n_values: usize,
    ctx: &DataCtx<'_>,
) -> Result<EValue, FormatError> {
    let tag = v.val_type();
    let missing = || FormatError::BadUnion {
        ctx: PTE,
        field: field.to_owned(),
        tag: tag.0,
        detail: "tag names a table that is missing",
    };
    Ok(match tag {
        et::KernelTypes::NONE => {
            return Err(FormatError::BadUnion {
                ctx: PTE,
                field: field.to_owned(),
                tag: 0,
                detail: "NONE is not a value",
            })
        }
        et::KernelTypes::Null => {
            v.val_as_null().ok_or_else(missing)?;
            EValue::Null
        }
        et::KernelTypes::Int => EValue::Int(v.val_as_int().ok_or_else(missing)?.int_val()),
        et::KernelTypes::Bool => EValue::Bool(v.val_as_bool().ok_or_else(missing)?.bool_val()),
        et::KernelTypes::Double => {
            EValue::Double(v.val_as_double().ok_or_else(missing)?.double_val())
        }
        et::KernelTypes::String => EValue::String(
            v.val_as_string()
                .ok_or_else(missing)?
                .string_val()
                .unwrap_or_default()
                .to_owned(),
        ),
        et::KernelTypes::IntList => EValue::IntList(
            v.val_as_int_list()
                .ok_or_else(missing)?
                .items()
                .iter()
                .flatten()
                .collect(),
        ),
        et::KernelTypes::DoubleList => EValue::DoubleList(
            v.val_as_double_list()
                .ok_or_else(missing)?
                .items()
                .iter()
                .flatten()
                .collect(),
        ),
        et::KernelTypes::BoolList => EValue::BoolList(
            v.val_as_bool_list()
                .ok_or_else(missing)?
                .items()
                .iter()
                .flatten()
                .collect(),
        ),
        et::KernelTypes::TensorList => {
            let l = v.val_as_tensor_list().ok_or_else(missing)?;
            EValue::TensorList(int_indices(
                |j| format!("{field} (TensorList).items[{j}]"),
                l.items(),
                n_values,
            )?)
        }
        et::KernelTypes::OptionalTensorList => {
            let l = v.val_as_optional_tensor_list().ok_or_else(missing)?;
            let mut items = Vec::new();
            for (j, x) in l.items().iter().flatten().enumerate() {
                items.push(if x == -1 {
                    None
                } else {
                    Some(check_index(
                        PTE,
                        || format!("{field} (OptionalTensorList).items[{j}]"),
                        x as i64,
                        n_values,
                    )?)
                });
            }
            EValue::OptionalTensorList(items)
        }
        et::KernelTypes::Tensor => EValue::Tensor(parse_tensor(
            field,
            &v.val_as_tensor().ok_or_else(missing)?,
            ctx,
        )?),
        _ => {
            return Err(FormatError::BadUnion {
                ctx: PTE,
                field: field.to_owned(),
                tag: tag.0,
                detail: "unknown KernelTypes tag",
            })
        }
    })
}

fn parse_tensor(
    field: &str,
    t: &et::Tensor<'_>,
    ctx: &DataCtx<'_>,
) -> Result<PlanTensor, FormatError> {
    let sizes: Vec<i64> = t.sizes().iter().flatten().map(i64::from).collect();
    let dim_order: Vec<u8> = t.dim_order().iter().flatten().collect();
    let f = || format!("{field} (Tensor) sizes {sizes:?}");
    if let Some(bad) = sizes.iter().find(|&&s| s < 0) {
        return Err(FormatError::invalid(
            PTE,
            f(),
            format!("negative size {bad}"),
        ));
    }
    let numel = checked_numel(sizes.iter().map(|&s| s as u64))
        .map_err(|e| FormatError::invalid(PTE, f(), e))?;
    if !dim_order.is_empty() {
        let mut seen = vec![false; sizes.len()];
        let ok = dim_order.len() == sizes.len()
            && dim_order.iter().all(|&d| {
                (d as usize) < seen.len() && !std::mem::replace(&mut seen[d as usize], true)
            });
        if !ok {
            return Err(FormatError::invalid(
                PTE,
                f(),
                format!(
                    "dim_order {dim_order:?} is not a permutation of 0..{}",
                    sizes.len()
                ),
            ));
        }
    }
    let scalar_type = t.scalar_type().0;
    let nbytes = || -> Result<u64, FormatError> {
        let es = scalar_type_size(scalar_type).ok_or_else(|| {
            FormatError::invalid(PTE, f(), format!("unknown scalar_type {scalar_type}"))
        })?;
        Ok(numel * es as u64) // numel <= 2^40, es <= 8: no overflow
    };
    let idx = t.data_buffer_idx();
    let extra = t.extra_tensor_info();
    let data = if let Some(x) = extra.filter(|x| x.location() == et::TensorDataLocation::EXTERNAL) {
        let fqn = x.fully_qualified_name().ok_or_else(|| {
            FormatError::invalid(PTE, f(), "EXTERNAL tensor without fully_qualified_name")
        })?;
        TensorData::External(fqn.to_owned())
    } else {
        match (idx, t.allocation_info()) {
            (0, None) => TensorData::None,
            (0, Some(a)) => TensorData::Planned {
                memory_id: a.memory_id(),
                offset: (a.memory_offset_high() as u64) << 32 | a.memory_offset_low() as u64,
            },
            (idx, None) => {
                let n = nbytes()?;
                match ctx.constant_segment.filter(|s| !s.offsets.is_empty()) {
                    Some(seg) => {
                        TensorData::Constant(sub_data(f(), "constant segment", seg, idx, n)?)
                    }
                    None => {
                        // Legacy programs keep constants in the deprecated constant_buffer.
                        let b = check_index(
                            PTE,
                            || format!("{}.data_buffer_idx", f()),
                            idx as i64,
                            ctx.constant_buffers.len(),
                        )?;
                        let r = &ctx.constant_buffers[b];
                        if (r.len() as u64) < n {
                            return Err(FormatError::invalid(
                                PTE,
                                f(),
                                format!(
                                    "constant_buffer[{b}] holds {} bytes, tensor needs {n}",
                                    r.len()
                                ),
                            ));
                        }
                        TensorData::Constant(r.start..r.start + n as usize)
                    }
                }
            }
            (idx, Some(_)) => {
                let n = nbytes()?;
                let ms = extra.map_or(0, |x| x.mutable_data_segments_idx());
                let mi = check_index(
                    PTE,
                    || format!("{}.extra_tensor_info.mutable_data_segments_idx", f()),
                    i64::try_from(ms).unwrap_or(i64::MAX),
                    ctx.mutable_segments.len(),
                )?;
                TensorData::MutableInit(sub_data(
                    f(),
                    "mutable data segment",
                    &ctx.mutable_segments[mi],
                    idx,
                    n,
                )?)
            }
        }
    };
    debug_assert!(
        ctx.len
            >= match &data {
                TensorData::Constant(r) | TensorData::MutableInit(r) => r.end,
                _ => 0,
            }
    );
    Ok(PlanTensor {
        scalar_type,
        sizes,
        dim_order,
        shape_dynamism: t.shape_dynamism().0,
        data,
    })
}

/// Range of sub-buffer `idx` of a constant/mutable segment holding `n` bytes.
fn sub_data(
    field: String,
    what: &'static str,
    seg: &Subsegment,
    idx: u32,
    n: u64,
) -> Result<Range<usize>, FormatError> {
    let i = check_index(
        PTE,
        || format!("{field}.data_buffer_idx"),
        idx as i64,
        seg.offsets.len(),
    )?;
    let off = seg.offsets[i];
    sub_range(off, n, seg.range.len())
        .map(|r| seg.range.start + r.start..seg.range.start + r.end)
        .ok_or(FormatError::OutOfBounds {
            ctx: PTE,
            region: format!("{field} data [offset {off}, size {n}]"),
            container: what,
            len: seg.range.len() as u64,
        })
}
