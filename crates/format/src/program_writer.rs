//! `.pte` writer: a [`ProgramBuilder`] collects execution plans, segments, named data and
//! inline delegate data; [`write_program`] lays them out as the ExecuTorch serializer does
//! (§1.1): flatbuffer, 32-byte `eh00` extended header inserted after byte 8, then the
//! segments, each at a 128-byte boundary relative to `segment_base_offset`.
use flatbuffers::{FlatBufferBuilder, WIPOffset};

use crate::error::FormatError;
use crate::generated::et;
use crate::program::{EXTENDED_HEADER_LEN, EXTENDED_HEADER_MAGIC};
use crate::program_ir::{
    BackendDelegate, Chain, DelegateData, EValue, ExecutionPlan, Instruction, Operator, PlanTensor,
    TensorData,
};
use crate::writer::align_up;

/// Segment alignment used by the ExecuTorch serializer (`segment_alignment`).
pub const SEGMENT_ALIGNMENT: usize = 128;
/// Alignment of consecutive constants inside the constant segment.
const CONSTANT_ALIGNMENT: usize = 16;
const PTE: &str = "pte writer";

/// Collects the parts of a `.pte` program; see [`write_program`].
///
/// Plans are given as [`ExecutionPlan`]s. A plan tensor's initial data is expressed with
/// [`TensorData`]: `None`, `Planned` and `External` are written as given; for constant and
/// mutable initial data pass the token returned by [`ProgramBuilder::add_constant_data`] /
/// [`ProgramBuilder::add_mutable_data`] (a parsed program reports file ranges instead).
#[derive(Debug, Clone, Default)]
pub struct ProgramBuilder {
    plans: Vec<ExecutionPlan>,
    segments: Vec<Vec<u8>>,
    named_data: Vec<(String, usize)>,
    inline_delegate_data: Vec<Vec<u8>>,
    constants: Vec<Vec<u8>>,
    mutable: Vec<Vec<u8>>,
}

impl ProgramBuilder {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a raw segment (e.g. a delegate blob); returns its segment index, for
    /// [`DelegateData::Segment`].
    pub fn add_segment(&mut self, bytes: Vec<u8>) -> usize {
        self.segments.push(bytes);
        self.segments.len() - 1
    }

    /// Add a named-data entry in its own segment; returns the segment index.
    pub fn add_named_data(&mut self, key: &str, bytes: Vec<u8>) -> usize {
        let s = self.add_segment(bytes);
        self.named_data.push((key.to_owned(), s));
        s
    }

    /// Add an inline delegate blob (`backend_delegate_data`); returns its index, for
    /// [`DelegateData::Inline`].
    pub fn add_inline_delegate_data(&mut self, bytes: Vec<u8>) -> usize {
        self.inline_delegate_data.push(bytes);
        self.inline_delegate_data.len() - 1
    }

    /// Add constant tensor data to the constant segment; returns the token to put in the
    /// tensor's `data` (`TensorData::Constant(idx..idx)`, `idx` = its `data_buffer_idx`).
    pub fn add_constant_data(&mut self, bytes: &[u8]) -> TensorData {
        self.constants.push(bytes.to_vec());
        let idx = self.constants.len(); // offsets[0] is the reserved placeholder
        TensorData::Constant(idx..idx)
    }

    /// Add the initial value of a mutable tensor; returns the token for its `data`
    /// (`TensorData::MutableInit(idx..idx)`).
    pub fn add_mutable_data(&mut self, bytes: &[u8]) -> TensorData {
        self.mutable.push(bytes.to_vec());
        let idx = self.mutable.len();
        TensorData::MutableInit(idx..idx)
    }

    /// Add an execution plan.
    pub fn add_plan(&mut self, plan: ExecutionPlan) {
        self.plans.push(plan);
    }

    /// Shortcut for [`write_program`].
    pub fn finish(&self) -> Result<Vec<u8>, FormatError> {
        write_program(self)
    }
}

fn i32_of(what: &str, x: usize) -> Result<i32, FormatError> {
    i32::try_from(x)
        .map_err(|_| FormatError::invalid(PTE, what.to_owned(), format!("{x} does not fit in i32")))
}

fn ids(what: &str, v: &[usize]) -> Result<Vec<i32>, FormatError> {
    v.iter().map(|&x| i32_of(what, x)).collect()
}

/// Concatenate sub-buffers at `align` boundaries; returns the bytes and the offsets table
/// with the reserved `offsets[0] = 0` placeholder in front.
fn pack(parts: &[Vec<u8>], align: usize) -> (Vec<u8>, Vec<u64>) {
    let mut out = Vec::new();
    let mut offsets = vec![0u64];
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.resize(align_up(out.len(), align), 0);
        }
        offsets.push(out.len() as u64);
        out.extend_from_slice(p);
    }
    (out, offsets)
}

fn sub<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    seg: usize,
    offsets: &[u64],
) -> WIPOffset<et::SubsegmentOffsets<'a>> {
    let offsets = fbb.create_vector(offsets);
    et::SubsegmentOffsets::create(
        fbb,
        &et::SubsegmentOffsetsArgs {
            segment_index: seg as u32,
            offsets: Some(offsets),
        },
    )
}

/// Serialize the program. Errors name a plan field whose index or token is invalid for
/// the flatbuffer types (e.g. an index over `i32::MAX`, an unknown data token).
pub fn write_program(b: &ProgramBuilder) -> Result<Vec<u8>, FormatError> {
    let mut segments: Vec<&[u8]> = b.segments.iter().map(|s| s.as_slice()).collect();
    let (const_bytes, const_offsets) = pack(&b.constants, CONSTANT_ALIGNMENT);
    let (mut_bytes, mut_offsets) = pack(&b.mutable, CONSTANT_ALIGNMENT);
    let const_seg = (!b.constants.is_empty()).then(|| {
        segments.push(&const_bytes);
        segments.len() - 1
    });
    let mut_seg = (!b.mutable.is_empty()).then(|| {
        segments.push(&mut_bytes);
        segments.len() - 1
    });
    // Segment offsets relative to segment_base_offset.
    let mut seg_offsets = Vec::with_capacity(segments.len());
    let mut end = 0usize;
    for s in &segments {
        let off = align_up(end, SEGMENT_ALIGNMENT);
        seg_offsets.push(off);
        end = off + s.len();
    }

    let mut fbb = FlatBufferBuilder::with_capacity(4096);
    let mut plans = Vec::new();
    for (p, plan) in b.plans.iter().enumerate() {
        plans.push(write_plan(&mut fbb, p, plan, b)?);
    }
    let plans = fbb.create_vector(&plans);
    let inline: Vec<_> = b
        .inline_delegate_data
        .iter()
        .map(|d| {
            let data = fbb.create_vector(d);
            et::BackendDelegateInlineData::create(
                &mut fbb,
                &et::BackendDelegateInlineDataArgs { data: Some(data) },
            )
        })
        .collect();
    let inline = fbb.create_vector(&inline);
    let segs: Vec<_> = segments
        .iter()
        .zip(&seg_offsets)
        .map(|(s, &o)| {
            et::DataSegment::create(
                &mut fbb,
                &et::DataSegmentArgs {
                    offset: o as u64,
                    size: s.len() as u64,
                },
            )
        })
        .collect();
    let segs = fbb.create_vector(&segs);
    let constant_segment = const_seg.map(|s| sub(&mut fbb, s, &const_offsets));
    let mutable_segments = match mut_seg {
        Some(s) => {
            let m = sub(&mut fbb, s, &mut_offsets);
            Some(fbb.create_vector(&[m]))
        }
        None => None,
    };
    let named: Vec<_> = b
        .named_data
        .iter()
        .map(|(k, s)| {
            let key = fbb.create_string(k);
            et::NamedData::create(
                &mut fbb,
                &et::NamedDataArgs {
                    key: Some(key),
                    segment_index: *s as u32,
                },
            )
        })
        .collect();
    let named = fbb.create_vector(&named);
    let root = et::Program::create(
        &mut fbb,
        &et::ProgramArgs {
            version: 0,
            execution_plan: Some(plans),
            constant_buffer: None,
            backend_delegate_data: Some(inline),
            segments: Some(segs),
            constant_segment,
            mutable_data_segments: mutable_segments,
            named_data: Some(named),
        },
    );
    et::finish_program_buffer(&mut fbb, root);
    let fb = fbb.finished_data();

    // Insert the extended header after byte 8; only the root offset (relative to byte 0)
    // needs adjusting, every other offset is relative to its own position.
    let hdr_len = EXTENDED_HEADER_LEN as usize;
    let program_size = fb.len() + hdr_len;
    let base = if segments.is_empty() {
        0
    } else {
        align_up(program_size, SEGMENT_ALIGNMENT)
    };
    let mut out = Vec::with_capacity(base + end);
    let root_off = u32::from_le_bytes([fb[0], fb[1], fb[2], fb[3]]) + EXTENDED_HEADER_LEN;
    out.extend_from_slice(&root_off.to_le_bytes());
    out.extend_from_slice(&fb[4..8]);
    out.extend_from_slice(EXTENDED_HEADER_MAGIC);
    out.extend_from_slice(&EXTENDED_HEADER_LEN.to_le_bytes());
    out.extend_from_slice(&(program_size as u64).to_le_bytes());
    out.extend_from_slice(&(base as u64).to_le_bytes());
    out.extend_from_slice(&(end as u64).to_le_bytes());
    out.extend_from_slice(&fb[8..]);
    if !segments.is_empty() {
        out.resize(base, 0);
        for (s, &o) in segments.iter().zip(&seg_offsets) {
            out.resize(base + o, 0);
            out.extend_from_slice(s);
        }
    }
    Ok(out)
}

fn write_plan<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    p: usize,
    plan: &ExecutionPlan,
    b: &ProgramBuilder,
) -> Result<WIPOffset<et::ExecutionPlan<'a>>, FormatError> {
    let at = |s: &str| format!("plans[{p}] ({}) {s}", plan.name);
    let mut values = Vec::with_capacity(plan.values.len());
    for (i, v) in plan.values.iter().enumerate() {
        let (tag, off) = write_evalue(fbb, &at(&format!("values[{i}]")), v, b)?;
        values.push(et::EValue::create(
            fbb,
            &et::EValueArgs {
                val_type: tag,
                val: Some(off),
            },
        ));
    }
    let values = fbb.create_vector(&values);
    let inputs = fbb.create_vector(&ids(&at("inputs"), &plan.inputs)?);
    let outputs = fbb.create_vector(&ids(&at("outputs"), &plan.outputs)?);
    let mut chains = Vec::new();
    for (c, ch) in plan.chains.iter().enumerate() {
        chains.push(write_chain(fbb, &at(&format!("chains[{c}]")), ch)?);
    }
    let chains = fbb.create_vector(&chains);
    let operators: Vec<_> = plan
        .operators
        .iter()
        .map(|Operator { name, overload }| {
            let name = fbb.create_string(name);
            let overload = fbb.create_string(overload);
            et::Operator::create(
                fbb,
                &et::OperatorArgs {
                    name: Some(name),
                    overload: Some(overload),
                },
            )
        })
        .collect();
    let operators = fbb.create_vector(&operators);
    let mut delegates = Vec::new();
    for BackendDelegate {
        id,
        processed,
        compile_specs,
    } in &plan.delegates
    {
        let specs: Vec<_> = compile_specs
            .iter()
            .map(|(k, v)| {
                let key = fbb.create_string(k);
                let value = fbb.create_vector(v);
                et::CompileSpec::create(
                    fbb,
                    &et::CompileSpecArgs {
                        key: Some(key),
                        value: Some(value),
                    },
                )
            })
            .collect();
        let specs = fbb.create_vector(&specs);
        let (location, index) = match processed {
            DelegateData::Inline(i) => (et::DataLocation::INLINE, *i),
            DelegateData::Segment(i) => (et::DataLocation::SEGMENT, *i),
        };
        let index = u32::try_from(index).map_err(|_| {
            FormatError::invalid(
                PTE,
                at("delegate index"),
                format!("{index} does not fit in u32"),
            )
        })?;
        let processed = et::BackendDelegateDataReference::create(
            fbb,
            &et::BackendDelegateDataReferenceArgs { location, index },
        );
        let id = fbb.create_string(id);
        delegates.push(et::BackendDelegate::create(
            fbb,
            &et::BackendDelegateArgs {
                id: Some(id),
                processed: Some(processed),
                compile_specs: Some(specs),
            },
        ));
    }
    let delegates = fbb.create_vector(&delegates);
    let sizes = fbb.create_vector(&plan.non_const_buffer_sizes);
    let name = fbb.create_string(&plan.name);
    Ok(et::ExecutionPlan::create(
        fbb,
        &et::ExecutionPlanArgs {
            name: Some(name),
            values: Some(values),
            inputs: Some(inputs),
            outputs: Some(outputs),
            chains: Some(chains),
            operators: Some(operators),
            delegates: Some(delegates),
            non_const_buffer_sizes: Some(sizes),
            ..Default::default()
        },
    ))
}

fn write_chain<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    at: &str,
    ch: &Chain,
) -> Result<WIPOffset<et::Chain<'a>>, FormatError> {
    use et::InstructionArguments as A;
    let mut instrs = Vec::new();
    for (k, ins) in ch.instructions.iter().enumerate() {
        let f = format!("{at}.instructions[{k}]");
        let (tag, off) = match ins {
            Instruction::KernelCall { op_index, args } => {
                let args = fbb.create_vector(&ids(&f, args)?);
                let kc = et::KernelCall::create(
                    fbb,
                    &et::KernelCallArgs {
                        op_index: i32_of(&f, *op_index)?,
                        args: Some(args),
                    },
                );
                (A::KernelCall, kc.as_union_value())
            }
            Instruction::DelegateCall {
                delegate_index,
                args,
            } => {
                let args = fbb.create_vector(&ids(&f, args)?);
                let dc = et::DelegateCall::create(
                    fbb,
                    &et::DelegateCallArgs {
                        delegate_index: i32_of(&f, *delegate_index)?,
                        args: Some(args),
                    },
                );
                (A::DelegateCall, dc.as_union_value())
            }
            Instruction::MoveCall { from, to } => {
                let args = et::MoveCallArgs {
                    move_from: i32_of(&f, *from)?,
                    move_to: i32_of(&f, *to)?,
                };
                (
                    A::MoveCall,
                    et::MoveCall::create(fbb, &args).as_union_value(),
                )
            }
            Instruction::JumpFalseCall { cond, destination } => {
                let args = et::JumpFalseCallArgs {
                    cond_value_index: i32_of(&f, *cond)?,
                    destination_instruction: i32_of(&f, *destination)?,
                };
                (
                    A::JumpFalseCall,
                    et::JumpFalseCall::create(fbb, &args).as_union_value(),
                )
            }
            Instruction::FreeCall { value } => {
                let args = et::FreeCallArgs {
                    value_index: i32_of(&f, *value)?,
                };
                (
                    A::FreeCall,
                    et::FreeCall::create(fbb, &args).as_union_value(),
                )
            }
        };
        instrs.push(et::Instruction::create(
            fbb,
            &et::InstructionArgs {
                instr_args_type: tag,
                instr_args: Some(off),
            },
        ));
    }
    let instructions = fbb.create_vector(&instrs);
    let inputs = fbb.create_vector(&ids(at, &ch.inputs)?);
    let outputs = fbb.create_vector(&ids(at, &ch.outputs)?);
    Ok(et::Chain::create(
        fbb,
        &et::ChainArgs {
            inputs: Some(inputs),
            outputs: Some(outputs),
            instructions: Some(instructions),
            stacktrace: None,
        },
    ))
}

fn write_evalue<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    at: &str,
    v: &EValue,
    b: &ProgramBuilder,
) -> Result<(et::KernelTypes, WIPOffset<flatbuffers::UnionWIPOffset>), FormatError> {
    use et::KernelTypes as K;
    Ok(match v {
        EValue::Null => (
            K::Null,
            et::Null::create(fbb, &et::NullArgs {}).as_union_value(),
        ),
        EValue::Int(x) => (
            K::Int,
            et::Int::create(fbb, &et::IntArgs { int_val: *x }).as_union_value(),
        ),
        EValue::Bool(x) => (
            K::Bool,
            et::Bool::create(fbb, &et::BoolArgs { bool_val: *x }).as_union_value(),
        ),
        EValue::Double(x) => (
            K::Double,
            et::Double::create(fbb, &et::DoubleArgs { double_val: *x }).as_union_value(),
        ),
        EValue::String(s) => {
            let s = fbb.create_string(s);
            (
                K::String,
                et::String::create(
                    fbb,
                    &et::StringArgs {
                        string_val: Some(s),
                    },
                )
                .as_union_value(),
            )
        }
        EValue::IntList(x) => {
            let items = fbb.create_vector(x);
            (
                K::IntList,
                et::IntList::create(fbb, &et::IntListArgs { items: Some(items) }).as_union_value(),
            )
        }
        EValue::DoubleList(x) => {
            let items = fbb.create_vector(x);
            (
                K::DoubleList,
                et::DoubleList::create(fbb, &et::DoubleListArgs { items: Some(items) })
                    .as_union_value(),
            )
        }
        EValue::BoolList(x) => {
            let items = fbb.create_vector(x);
            (
                K::BoolList,
                et::BoolList::create(fbb, &et::BoolListArgs { items: Some(items) })
                    .as_union_value(),
            )
        }
        EValue::TensorList(x) => {
            let items = fbb.create_vector(&ids(at, x)?);
            (
                K::TensorList,
                et::TensorList::create(fbb, &et::TensorListArgs { items: Some(items) })
                    .as_union_value(),
            )
        }
        EValue::OptionalTensorList(x) => {
            let items: Vec<i32> = x
                .iter()
                .map(|o| o.map_or(Ok(-1), |i| i32_of(at, i)))
                .collect::<Result<_, _>>()?;
            let items = fbb.create_vector(&items);
            let l = et::OptionalTensorList::create(
                fbb,
                &et::OptionalTensorListArgs { items: Some(items) },
            );
            (K::OptionalTensorList, l.as_union_value())
        }
        EValue::Tensor(t) => (K::Tensor, write_tensor(fbb, at, t, b)?.as_union_value()),
    })
}

fn write_tensor<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    at: &str,
    t: &PlanTensor,
    b: &ProgramBuilder,
) -> Result<WIPOffset<et::Tensor<'a>>, FormatError> {
    let sizes: Vec<i32> = t
        .sizes
        .iter()
        .map(|&s| {
            i32::try_from(s).map_err(|_| {
                FormatError::invalid(PTE, at.to_owned(), format!("size {s} does not fit in i32"))
            })
        })
        .collect::<Result<_, _>>()?;
    let sizes = fbb.create_vector(&sizes);
    let dim_order = fbb.create_vector(&t.dim_order);
    let token = |r: &std::ops::Range<usize>, n: usize, what: &str| -> Result<u32, FormatError> {
        if r.start == r.end && r.start >= 1 && r.start <= n {
            Ok(r.start as u32)
        } else {
            Err(FormatError::invalid(
                PTE,
                at.to_owned(),
                format!("{what} data {r:?} is not a token from ProgramBuilder::add_{what}_data"),
            ))
        }
    };
    let mut args = et::TensorArgs {
        scalar_type: et::ScalarType(t.scalar_type),
        sizes: Some(sizes),
        dim_order: Some(dim_order),
        shape_dynamism: et::TensorShapeDynamism(t.shape_dynamism),
        ..Default::default()
    };
    match &t.data {
        TensorData::None => {}
        TensorData::Planned { memory_id, offset } => {
            args.allocation_info = Some(et::AllocationDetails::create(
                fbb,
                &et::AllocationDetailsArgs {
                    memory_id: *memory_id,
                    memory_offset_low: *offset as u32,
                    memory_offset_high: (*offset >> 32) as u32,
                },
            ));
        }
        TensorData::Constant(r) => args.data_buffer_idx = token(r, b.constants.len(), "constant")?,
        TensorData::MutableInit(r) => {
            args.data_buffer_idx = token(r, b.mutable.len(), "mutable")?;
            // data_buffer_idx > 0 together with allocation_info marks mutable data.
            args.allocation_info = Some(et::AllocationDetails::create(
                fbb,
                &et::AllocationDetailsArgs::default(),
            ));
        }
        TensorData::External(fqn) => {
            let fqn = fbb.create_string(fqn);
            args.extra_tensor_info = Some(et::ExtraTensorInfo::create(
                fbb,
                &et::ExtraTensorInfoArgs {
                    fully_qualified_name: Some(fqn),
                    location: et::TensorDataLocation::EXTERNAL,
                    ..Default::default()
                },
            ));
        }
    }
    Ok(et::Tensor::create(fbb, &args))
}

/// A one-plan program that runs a single Vulkan delegate: values are `inputs` then
/// `outputs` (plan tensors with no initial data), one `DelegateCall` with all of them,
/// the blob in a segment, and `named_data` in their own segments. Handy for host tests.
pub fn single_delegate_program(
    method: &str,
    blob: Vec<u8>,
    compile_specs: Vec<(String, Vec<u8>)>,
    named_data: Vec<(String, Vec<u8>)>,
    inputs: Vec<PlanTensor>,
    outputs: Vec<PlanTensor>,
) -> Result<Vec<u8>, FormatError> {
    let mut b = ProgramBuilder::new();
    let seg = b.add_segment(blob);
    for (k, d) in named_data {
        b.add_named_data(&k, d);
    }
    let n_in = inputs.len();
    let n = n_in + outputs.len();
    let values: Vec<EValue> = inputs
        .into_iter()
        .chain(outputs)
        .map(EValue::Tensor)
        .collect();
    b.add_plan(ExecutionPlan {
        name: method.to_owned(),
        values,
        inputs: (0..n_in).collect(),
        outputs: (n_in..n).collect(),
        chains: vec![Chain {
            inputs: (0..n_in).collect(),
            outputs: (n_in..n).collect(),
            instructions: vec![Instruction::DelegateCall {
                delegate_index: 0,
                args: (0..n).collect(),
            }],
        }],
        operators: vec![],
        delegates: vec![BackendDelegate {
            id: "VulkanBackend".to_owned(),
            processed: DelegateData::Segment(seg),
            compile_specs,
        }],
        non_const_buffer_sizes: vec![0],
    });
    write_program(&b)
}
