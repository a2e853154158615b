//! Vulkan delegate blob parsing: `VH00` header (§2.1 of the format notes), then the `VK00`
//! VkGraph flatbuffer (§2.2) through the verifier and the semantic checks into [`VkGraph`].
use crate::error::{escape_bytes, FormatError, MAX_NUMEL};
use crate::generated::{verifier_options, vk};
use crate::ir::{
    ConstantSource, DataType, DelegateHeader, OperatorCall, TensorValue, Value, VkGraph,
    VulkanDelegate,
};
use crate::realign::realign_unaligned_vectors;

const HDR: &str = "VH00";
const VKG: &str = "VkGraph";

/// Size of the meaningful part of the `VH00` header.
pub const DELEGATE_HEADER_SIZE: u16 = 30;
/// `VkBytes.offset` value that marks a constant stored in the program's named data.
pub const NAMED_DATA_OFFSET: u64 = u64::MAX;
/// The `VkDataType` code meaning "unset" (`staging_datatype` default).
pub const DTYPE_UNSET: i8 = 127;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Parse and check the `VH00` header of a delegate blob.
///
/// Returns the header and the byte ranges of the flatbuffer and of the constant region
/// (which, when `bytes_size == 0`, is the rest of the blob after `bytes_offset`).
pub fn parse_header(
    blob: &[u8],
) -> Result<
    (
        DelegateHeader,
        std::ops::Range<usize>,
        std::ops::Range<usize>,
    ),
    FormatError,
> {
    let len = blob.len() as u64;
    if blob.len() < DELEGATE_HEADER_SIZE as usize {
        return Err(FormatError::Truncated {
            ctx: HDR,
            what: "delegate header",
            need: DELEGATE_HEADER_SIZE as u64,
            have: len,
        });
    }
    if &blob[4..8] != b"VH00" {
        return Err(FormatError::BadMagic {
            ctx: HDR,
            at: "bytes 4..8",
            expected: "VH00",
            found: escape_bytes(&blob[4..8]),
        });
    }
    let header = DelegateHeader {
        header_size: u16_at(blob, 8),
        flatbuffer_offset: u32_at(blob, 10),
        flatbuffer_size: u32_at(blob, 14),
        bytes_offset: u32_at(blob, 18),
        bytes_size: u64_at(blob, 22),
    };
    if header.header_size < DELEGATE_HEADER_SIZE {
        return Err(FormatError::invalid(
            HDR,
            "header_size",
            format!(
                "{} is below the minimum {DELEGATE_HEADER_SIZE}",
                header.header_size
            ),
        ));
    }
    if header.flatbuffer_offset < header.header_size as u32 {
        return Err(FormatError::invalid(
            HDR,
            "flatbuffer_offset",
            format!(
                "{} lies inside the header ({} bytes)",
                header.flatbuffer_offset, header.header_size
            ),
        ));
    }
    if header.flatbuffer_size == 0 {
        return Err(FormatError::invalid(HDR, "flatbuffer_size", "is 0"));
    }
    // u64 arithmetic: u32 + u32 cannot overflow it.
    let fb_start = header.flatbuffer_offset as u64;
    let fb_end = fb_start + header.flatbuffer_size as u64;
    if fb_end > len {
        return Err(FormatError::OutOfBounds {
            ctx: HDR,
            region: format!(
                "flatbuffer [offset {}, size {}]",
                header.flatbuffer_offset, header.flatbuffer_size
            ),
            container: "blob",
            len,
        });
    }
    let bytes_start = header.bytes_offset as u64;
    if bytes_start < fb_end {
        return Err(FormatError::invalid(
            HDR,
            "bytes_offset",
            format!("{bytes_start} overlaps the flatbuffer, which ends at {fb_end}"),
        ));
    }
    let bytes_end = if header.bytes_size == 0 {
        // ExecuTorch uses the rest of the blob as the constant region in this case.
        bytes_start.max(len)
    } else {
        bytes_start.checked_add(header.bytes_size).ok_or_else(|| {
            FormatError::invalid(
                HDR,
                "bytes_size",
                format!(
                    "{} + bytes_offset {bytes_start} overflows",
                    header.bytes_size
                ),
            )
        })?
    };
    if bytes_start > len || bytes_end > len {
        return Err(FormatError::OutOfBounds {
            ctx: HDR,
            region: format!(
                "constant bytes [offset {}, size {}]",
                header.bytes_offset, header.bytes_size
            ),
            container: "blob",
            len,
        });
    }
    // All four values are <= len, which is a usize.
    Ok((
        header,
        fb_start as usize..fb_end as usize,
        bytes_start as usize..bytes_end as usize,
    ))
}

/// Parse and validate a Vulkan delegate blob (`VH00` header + `VK00` VkGraph + bytes).
///
/// On top of [`parse_vkgraph`], checks that every inline constant lies inside the blob's
/// constant region.
pub fn parse_delegate(blob: &[u8]) -> Result<VulkanDelegate, FormatError> {
    let (header, fb, region) = parse_header(blob)?;
    let graph = parse_vkgraph(&blob[fb])?;
    let region_len = region.len();
    for (i, c) in graph.constants.iter().enumerate() {
        if let ConstantSource::Inline { offset, length } = c {
            let end = offset.checked_add(*length);
            if !matches!(end, Some(e) if e <= region_len) {
                return Err(FormatError::OutOfBounds {
                    ctx: VKG,
                    region: format!("constants[{i}] [offset {offset}, length {length}]"),
                    container: "constant region",
                    len: region_len as u64,
                });
            }
        }
    }
    Ok(VulkanDelegate {
        header,
        graph,
        constant_region: blob[region].to_vec(),
    })
}

/// Checked `Vec` index conversion: `idx` must be in `0..len`.
pub(crate) fn check_index(
    ctx: &'static str,
    field: impl FnOnce() -> String,
    idx: i64,
    len: usize,
) -> Result<usize, FormatError> {
    if idx >= 0 && (idx as u64) < len as u64 {
        Ok(idx as usize)
    } else {
        Err(FormatError::IndexOutOfRange {
            ctx,
            field: field(),
            index: idx,
            len: len as u64,
        })
    }
}

fn dtype(code: i8, field: impl FnOnce() -> String) -> Result<DataType, FormatError> {
    DataType::from_code(code)
        .ok_or_else(|| FormatError::invalid(VKG, field(), format!("unknown VkDataType {code}")))
}

/// Parse and validate a bare `VK00` VkGraph flatbuffer.
///
/// Runs the flatbuffers verifier (limits from the buffer length), then checks every value
/// index, union tag, dtype, dims product and constant reference, applying the schema
/// defaults (§2.2). Inline constant offsets are only checked against a region by
/// [`parse_delegate`], which knows the region.
pub fn parse_vkgraph(fb: &[u8]) -> Result<VkGraph, FormatError> {
    if fb.len() < 8 {
        return Err(FormatError::Truncated {
            ctx: VKG,
            what: "flatbuffer root + identifier",
            need: 8,
            have: fb.len() as u64,
        });
    }
    if !vk::vk_graph_buffer_has_identifier(fb) {
        return Err(FormatError::BadMagic {
            ctx: VKG,
            at: "bytes 4..8",
            expected: "VK00",
            found: escape_bytes(&fb[4..8]),
        });
    }
    let opts = verifier_options(fb.len());
    let verifier_error = |e: flatbuffers::InvalidFlatbuffer| FormatError::Verifier {
        ctx: VKG,
        detail: e.to_string(),
    };
    let fb =
        realign_unaligned_vectors(fb, |b| vk::root_as_vk_graph_with_opts(&opts, b).map(|_| ()))
            .map_err(verifier_error)?;
    let fb: &[u8] = &fb;
    let root = vk::root_as_vk_graph_with_opts(&opts, fb).map_err(verifier_error)?;

    let constants_fb = root.constants();
    let n_constants = constants_fb.map_or(0, |c| c.len());
    let mut constants = Vec::with_capacity(n_constants);
    for (i, c) in constants_fb.iter().flatten().enumerate() {
        let length = usize::try_from(c.length())
            .ok()
            .filter(|&l| l as u64 <= MAX_NUMEL * 8);
        let length = length.ok_or_else(|| {
            FormatError::invalid(
                VKG,
                format!("constants[{i}].length"),
                format!("{} is absurd", c.length()),
            )
        })?;
        let src = match (c.offset(), c.named_key()) {
            (NAMED_DATA_OFFSET, Some(key)) => ConstantSource::Named {
                key: key.to_owned(),
                length,
            },
            (NAMED_DATA_OFFSET, None) => {
                return Err(FormatError::invalid(
                    VKG,
                    format!("constants[{i}]"),
                    "offset is UINT64_MAX (named data) but named_key is missing",
                ))
            }
            (offset, _) => {
                let offset = usize::try_from(offset).map_err(|_| {
                    FormatError::invalid(
                        VKG,
                        format!("constants[{i}].offset"),
                        format!("{offset} does not fit in memory"),
                    )
                })?;
                ConstantSource::Inline { offset, length }
            }
        };
        constants.push(src);
    }

    let values_fb = root.values();
    let n_values = values_fb.map_or(0, |v| v.len());
    let mut values = Vec::with_capacity(n_values);
    for (i, v) in values_fb.iter().flatten().enumerate() {
        values.push(parse_value(i, &v, n_values, &constants)?);
    }

    // Every tensor using a constant must agree with its byte length.
    for (i, v) in values.iter().enumerate() {
        if let Value::Tensor(t) = v {
            if let Some(cid) = t.constant_id {
                let want = t.numel as u64 * t.dtype.size_bytes() as u64;
                let (ConstantSource::Named { length, .. } | ConstantSource::Inline { length, .. }) =
                    &constants[cid];
                if *length as u64 != want {
                    return Err(FormatError::invalid(
                        VKG,
                        format!(
                            "values[{i}] (Tensor {} {:?}) constant_id {cid}",
                            t.dtype.name(),
                            t.dims
                        ),
                        format!(
                            "constant length {length} != numel {} * {} bytes",
                            t.numel,
                            t.dtype.size_bytes()
                        ),
                    ));
                }
            }
        }
    }

    let mut chain = Vec::new();
    for (i, op) in root.chain().iter().flatten().enumerate() {
        let name = op
            .name()
            .ok_or_else(|| {
                FormatError::invalid(VKG, format!("chain[{i}]"), "operator name is missing")
            })?
            .to_owned();
        let mut args = Vec::new();
        for (j, a) in op.args().iter().flatten().enumerate() {
            args.push(check_index(
                VKG,
                || format!("chain[{i}] ({name}).args[{j}]"),
                a as i64,
                n_values,
            )?);
        }
        chain.push(OperatorCall {
            node_id: op.node_id(),
            name,
            args,
        });
    }

    let ids =
        |field: &str, v: Option<flatbuffers::Vector<'_, u32>>| -> Result<Vec<usize>, FormatError> {
            v.iter()
                .flatten()
                .enumerate()
                .map(|(j, id)| check_index(VKG, || format!("{field}[{j}]"), id as i64, n_values))
                .collect()
        };
    let input_ids = ids("input_ids", root.input_ids())?;
    let output_ids = ids("output_ids", root.output_ids())?;

    Ok(VkGraph {
        version: root.version().unwrap_or_default().to_owned(),
        values,
        chain,
        input_ids,
        output_ids,
        constants,
        storage_type_override: root.storage_type_override().0,
        memory_layout_override: root.memory_layout_override().0,
    })
}

fn parse_value(
    i: usize,
    v: &vk::VkValue<'_>,
    n_values: usize,
    constants: &[ConstantSource],
) -> Result<Value, FormatError> {
    let tag = v.value_type();
    let missing = || FormatError::BadUnion {
        ctx: VKG,
        field: format!("values[{i}]"),
        tag: tag.0,
        detail: "tag names a table that is missing",
    };
    Ok(match tag {
        vk::GraphTypes::NONE => {
            return Err(FormatError::BadUnion {
                ctx: VKG,
                field: format!("values[{i}]"),
                tag: 0,
                detail: "NONE is not a value",
            })
        }
        vk::GraphTypes::Null => {
            v.value_as_null().ok_or_else(missing)?;
            Value::Null
        }
        vk::GraphTypes::Int => Value::Int(v.value_as_int().ok_or_else(missing)?.int_val()),
        vk::GraphTypes::Double => {
            Value::Double(v.value_as_double().ok_or_else(missing)?.double_val())
        }
        vk::GraphTypes::Bool => Value::Bool(v.value_as_bool().ok_or_else(missing)?.bool_val()),
        vk::GraphTypes::IntList => Value::IntList(
            v.value_as_int_list()
                .ok_or_else(missing)?
                .items()
                .iter()
                .flatten()
                .collect(),
        ),
        vk::GraphTypes::DoubleList => Value::DoubleList(
            v.value_as_double_list()
                .ok_or_else(missing)?
                .items()
                .iter()
                .flatten()
                .collect(),
        ),
        vk::GraphTypes::BoolList => Value::BoolList(
            v.value_as_bool_list()
                .ok_or_else(missing)?
                .items()
                .iter()
                .flatten()
                .collect(),
        ),
        vk::GraphTypes::ValueList => {
            let l = v.value_as_value_list().ok_or_else(missing)?;
            let mut items = Vec::new();
            for (j, x) in l.items().iter().flatten().enumerate() {
                items.push(check_index(
                    VKG,
                    || format!("values[{i}] (ValueList).items[{j}]"),
                    x as i64,
                    n_values,
                )?);
            }
            Value::ValueList(items)
        }
        vk::GraphTypes::String => Value::String(
            v.value_as_string()
                .ok_or_else(missing)?
                .string_val()
                .unwrap_or_default()
                .to_owned(),
        ),
        vk::GraphTypes::SymInt => Value::SymInt(v.value_as_sym_int().ok_or_else(missing)?.value()),
        vk::GraphTypes::VkTensor => {
            let t = v.value_as_vk_tensor().ok_or_else(missing)?;
            Value::Tensor(parse_tensor(i, &t, constants)?)
        }
        _ => {
            return Err(FormatError::BadUnion {
                ctx: VKG,
                field: format!("values[{i}]"),
                tag: tag.0,
                detail: "unknown GraphTypes tag",
            })
        }
    })
}

/// Product of `dims` with overflow and [`MAX_NUMEL`] checks; `Err` carries the reason.
pub(crate) fn checked_numel(dims: impl IntoIterator<Item = u64>) -> Result<u64, &'static str> {
    let mut n: u64 = 1;
    for d in dims {
        n = n.checked_mul(d).ok_or("numel overflows")?;
    }
    // Checked after the loop so a zero dim anywhere still yields 0; an intermediate
    // product can only exceed the bound through a real overflow, caught above.
    if n > MAX_NUMEL {
        return Err("numel exceeds 2^40");
    }
    Ok(n)
}

fn parse_tensor(
    i: usize,
    t: &vk::VkTensor<'_>,
    constants: &[ConstantSource],
) -> Result<TensorValue, FormatError> {
    let dims_u32: Vec<u32> = t.dims().iter().flatten().collect();
    let field = || format!("values[{i}] (Tensor) dims {dims_u32:?}");
    let dtype = dtype(t.datatype().0, || format!("values[{i}] (Tensor).datatype"))?;
    let numel = checked_numel(dims_u32.iter().map(|&d| d as u64))
        .map_err(|e| FormatError::invalid(VKG, field(), e))?;
    let staging_dtype = match t.staging_datatype().0 {
        DTYPE_UNSET => dtype,
        c => self::dtype(c, || format!("values[{i}] (Tensor).staging_datatype"))?,
    };
    let constant_id = match t.constant_id() {
        c if c < 0 => None,
        c => Some(check_index(
            VKG,
            || format!("values[{i}] (Tensor).constant_id"),
            c as i64,
            constants.len(),
        )?),
    };
    let mem_obj_id = match t.mem_obj_id() {
        m if m < 0 => None,
        m => Some(m as usize),
    };
    Ok(TensorValue {
        dtype,
        // numel <= 2^40 bounds every dim that matters; a zero dim makes numel 0 and the
        // others are still u32, which fits usize on 64-bit and 32-bit targets alike.
        dims: dims_u32.iter().map(|&d| d as usize).collect(),
        numel: numel as usize,
        constant_id,
        mem_obj_id,
        staging_dtype,
        storage_type: t.storage_type().0,
        memory_layout: t.memory_layout().0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flatbuffers::FlatBufferBuilder;

    /// A one-value graph whose union tag and table are chosen by the test.
    fn graph_with_value(tag: u8, with_table: bool) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let table = with_table
            .then(|| vk::Int::create(&mut fbb, &vk::IntArgs { int_val: 5 }).as_union_value());
        let v = vk::VkValue::create(
            &mut fbb,
            &vk::VkValueArgs {
                value_type: vk::GraphTypes(tag),
                value: table,
            },
        );
        let values = fbb.create_vector(&[v]);
        let root = vk::VkGraph::create(
            &mut fbb,
            &vk::VkGraphArgs {
                values: Some(values),
                ..Default::default()
            },
        );
        vk::finish_vk_graph_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }

    #[test]
    fn union_tags_are_checked() {
        assert_eq!(
            parse_vkgraph(&graph_with_value(2, true)).unwrap().values,
            vec![Value::Int(5)]
        );
        let e = parse_vkgraph(&graph_with_value(0, false))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "VkGraph: values[0]: union tag 0: NONE is not a value");
        let e = parse_vkgraph(&graph_with_value(200, true))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "VkGraph: values[0]: union tag 200: unknown GraphTypes tag"
        );
        // A tag without its table is caught by the verifier already.
        let e = parse_vkgraph(&graph_with_value(2, false))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("VkGraph: flatbuffer verification failed"),
            "{e}"
        );
        // Tag says Double, table is an Int: the verifier or the accessor must refuse or read
        // a Double table; either way, no panic and no silent Int.
        let r = parse_vkgraph(&graph_with_value(3, true));
        assert!(!matches!(r, Ok(ref g) if g.values == vec![Value::Int(5)]));
    }

    /// Finishes `fbb` as a graph whose one value is tensor `t`.
    fn finish_with_tensor(fbb: &mut FlatBufferBuilder, t: flatbuffers::WIPOffset<vk::VkTensor>) {
        let v = vk::VkValue::create(
            fbb,
            &vk::VkValueArgs {
                value_type: vk::GraphTypes::VkTensor,
                value: Some(t.as_union_value()),
            },
        );
        let values = fbb.create_vector(&[v]);
        let root = vk::VkGraph::create(
            fbb,
            &vk::VkGraphArgs {
                values: Some(values),
                ..Default::default()
            },
        );
        vk::finish_vk_graph_buffer(fbb, root);
    }

    #[test]
    fn missing_optional_fields_take_schema_defaults() {
        let mut fbb = FlatBufferBuilder::new();
        let t = vk::VkTensor::create(
            &mut fbb,
            &vk::VkTensorArgs {
                datatype: vk::VkDataType(5),
                ..Default::default()
            },
        );
        finish_with_tensor(&mut fbb, t);
        // constant_id and mem_obj_id default to 0 (not -1!), staging to UNSET -> dtype.
        // constant_id 0 with no constants table is out of range.
        let e = parse_vkgraph(fbb.finished_data()).unwrap_err().to_string();
        assert!(
            e.contains("values[0] (Tensor).constant_id = 0 out of range (len 0)"),
            "{e}"
        );
    }

    #[test]
    fn defaults_applied_when_fields_are_absent() {
        let mut fbb = FlatBufferBuilder::new();
        let dims = fbb.create_vector(&[3u32]);
        let t = vk::VkTensor::create(
            &mut fbb,
            &vk::VkTensorArgs {
                datatype: vk::VkDataType(4),
                dims: Some(dims),
                constant_id: -1,
                mem_obj_id: 0,
                storage_type: vk::VkStorageType(255),
                memory_layout: vk::VkMemoryLayout(255),
                staging_datatype: vk::VkDataType(DTYPE_UNSET),
            },
        );
        finish_with_tensor(&mut fbb, t);
        let g = parse_vkgraph(fbb.finished_data()).unwrap();
        let Value::Tensor(t) = &g.values[0] else {
            panic!("{:?}", g.values)
        };
        assert_eq!(
            (t.dtype, t.staging_dtype),
            (DataType::Float16, DataType::Float16)
        );
        assert_eq!((t.constant_id, t.mem_obj_id, t.numel), (None, Some(0), 3));
        assert_eq!((t.storage_type, t.memory_layout), (255, 255));
        assert_eq!(
            (g.storage_type_override, g.memory_layout_override),
            (255, 255)
        );
        assert_eq!(g.version, "");
    }
}
