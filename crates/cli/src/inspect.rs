//! `etvk inspect`: a readable dump of a `.pte` program and its Vulkan delegates.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use etvk_format::ir::{ConstantSource, Value as VkValue, VulkanDelegate};
use etvk_format::program_ir::{
    DelegateData, EValue, ExecutionPlan, Instruction, Program, TensorData,
};
use etvk_host::dtype::DType;
use etvk_host::kernels::{is_supported, qualified_name};
use etvk_host::VULKAN_BACKEND_ID;

use crate::error::CliError;

fn scalar_type_name(code: i8) -> String {
    DType::from_code(i32::from(code))
        .map(|d| d.name().to_string())
        .unwrap_or_else(|| format!("scalar_type({code})"))
}

/// Compile spec values are bytes; show text when printable, hex otherwise.
fn spec_value(v: &[u8]) -> String {
    if !v.is_empty() && v.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("{:?}", String::from_utf8_lossy(v))
    } else {
        format!(
            "0x{}",
            v.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    }
}

fn range_text(r: &std::ops::Range<usize>) -> String {
    format!("bytes {}..{} ({} bytes)", r.start, r.end, r.end - r.start)
}

fn evalue_text(v: &EValue) -> String {
    match v {
        EValue::Null => "None".into(),
        EValue::Int(i) => format!("Int {i}"),
        EValue::Bool(b) => format!("Bool {b}"),
        EValue::Double(d) => format!("Double {d}"),
        EValue::String(s) => format!("String {s:?}"),
        EValue::IntList(l) => format!("IntList (value ids) {l:?}"),
        EValue::DoubleList(l) => format!("DoubleList {l:?}"),
        EValue::BoolList(l) => format!("BoolList {l:?}"),
        EValue::TensorList(l) => format!("TensorList {l:?}"),
        EValue::OptionalTensorList(l) => format!("OptionalTensorList {l:?}"),
        EValue::Tensor(t) => {
            let dynamism = match t.shape_dynamism {
                0 => String::new(),
                1 => " dynamic(bound)".into(),
                2 => " dynamic(unbound)".into(),
                d => format!(" dynamism({d})"),
            };
            let data = match &t.data {
                TensorData::None => String::new(),
                TensorData::Constant(r) => format!(" constant {}", range_text(r)),
                TensorData::Planned { memory_id, offset } => {
                    format!(" planned arena {memory_id} @ {offset}")
                }
                TensorData::MutableInit(r) => format!(" mutable, initial {}", range_text(r)),
                TensorData::External(n) => format!(" external {n:?}"),
            };
            format!(
                "Tensor {} {:?}{dynamism}{data}",
                scalar_type_name(t.scalar_type),
                t.sizes
            )
        }
    }
}

fn instruction_text(plan: &ExecutionPlan, ins: &Instruction) -> String {
    match ins {
        Instruction::KernelCall { op_index, args } => {
            let name = plan
                .operators
                .get(*op_index)
                .map(|o| qualified_name(&o.name, &o.overload))
                .unwrap_or_else(|| format!("operator {op_index}?"));
            let flag = if is_supported(&name) {
                ""
            } else {
                "  [no CPU kernel]"
            };
            format!("KernelCall {name} args {args:?}{flag}")
        }
        Instruction::DelegateCall {
            delegate_index,
            args,
        } => format!("DelegateCall delegate {delegate_index} args {args:?}"),
        Instruction::MoveCall { from, to } => format!("MoveCall {from} -> {to}"),
        Instruction::JumpFalseCall { cond, destination } => {
            format!("JumpFalseCall if !{cond} goto {destination}")
        }
        Instruction::FreeCall { value } => format!("FreeCall {value}"),
    }
}

fn vk_value_text(v: &VkValue) -> String {
    match v {
        VkValue::Tensor(t) => {
            let mut s = format!("Tensor {} {:?}", t.dtype.name(), t.dims);
            if t.staging_dtype != t.dtype {
                let _ = write!(s, " staging {}", t.staging_dtype.name());
            }
            if let Some(c) = t.constant_id {
                let _ = write!(s, " constant {c}");
            }
            if let Some(m) = t.mem_obj_id {
                let _ = write!(s, " mem_obj {m}");
            }
            s
        }
        VkValue::Null => "Null".into(),
        VkValue::Int(i) => format!("Int {i}"),
        VkValue::Double(d) => format!("Double {d}"),
        VkValue::Bool(b) => format!("Bool {b}"),
        VkValue::IntList(l) => format!("IntList {l:?}"),
        VkValue::DoubleList(l) => format!("DoubleList {l:?}"),
        VkValue::BoolList(l) => format!("BoolList {l:?}"),
        VkValue::ValueList(l) => format!("ValueList {l:?}"),
        VkValue::String(s) => format!("String {s:?}"),
        VkValue::SymInt(i) => format!("SymInt {i}"),
    }
}

fn print_vkgraph(d: &VulkanDelegate, supported: &HashSet<String>) {
    let g = &d.graph;
    let h = &d.header;
    outln!(
        "      VH00: flatbuffer {}+{}, bytes {}+{} (constant region {} bytes)",
        h.flatbuffer_offset,
        h.flatbuffer_size,
        h.bytes_offset,
        h.bytes_size,
        d.constant_region.len()
    );
    outln!(
        "      VkGraph version {:?}: {} values, {} constants, {} ops, inputs {:?}, outputs {:?}",
        g.version,
        g.values.len(),
        g.constants.len(),
        g.chain.len(),
        g.input_ids,
        g.output_ids
    );
    outln!("      values:");
    for (i, v) in g.values.iter().enumerate() {
        outln!("        [{i}] {}", vk_value_text(v));
    }
    outln!("      constants:");
    for (i, c) in g.constants.iter().enumerate() {
        match c {
            ConstantSource::Named { key, length } => {
                outln!("        [{i}] named {key} ({length} bytes)")
            }
            ConstantSource::Inline { offset, length } => {
                outln!("        [{i}] inline @ {offset} ({length} bytes)")
            }
        }
    }
    outln!("      chain:");
    let mut unsupported = 0usize;
    for (i, op) in g.chain.iter().enumerate() {
        let flag = if supported.contains(&op.name) {
            ""
        } else {
            unsupported += 1;
            "  [unsupported]"
        };
        outln!("        {i}: {} {:?}{flag}", op.name, op.args);
    }
    if unsupported > 0 {
        outln!("      {unsupported} op call(s) not in the etvk registry");
    }
}

fn print_plan(program: &Program, plan: &ExecutionPlan, supported: &HashSet<String>) {
    let instructions: usize = plan.chains.iter().map(|c| c.instructions.len()).sum();
    outln!(
        "method {:?}: {} values, inputs {:?}, outputs {:?}, {} chain(s), {instructions} instruction(s), non-const buffers {:?}",
        plan.name,
        plan.values.len(),
        plan.inputs,
        plan.outputs,
        plan.chains.len(),
        plan.non_const_buffer_sizes
    );
    if !plan.operators.is_empty() {
        outln!("  operators:");
        for (i, o) in plan.operators.iter().enumerate() {
            let name = qualified_name(&o.name, &o.overload);
            let flag = if is_supported(&name) {
                ""
            } else {
                "  [no CPU kernel]"
            };
            outln!("    [{i}] {name}{flag}");
        }
    }
    outln!("  values:");
    for (i, v) in plan.values.iter().enumerate() {
        let role = match (plan.inputs.contains(&i), plan.outputs.contains(&i)) {
            (true, true) => "  (input, output)",
            (true, false) => "  (input)",
            (false, true) => "  (output)",
            _ => "",
        };
        outln!("    [{i}] {}{role}", evalue_text(v));
    }
    for (c, chain) in plan.chains.iter().enumerate() {
        outln!(
            "  chain {c}: inputs {:?}, outputs {:?}",
            chain.inputs,
            chain.outputs
        );
        for (pc, ins) in chain.instructions.iter().enumerate() {
            outln!("    {pc}: {}", instruction_text(plan, ins));
        }
    }
    for (i, d) in plan.delegates.iter().enumerate() {
        let (where_, range) = match d.processed {
            DelegateData::Inline(k) => (
                format!("inline data {k}"),
                program.inline_delegate_data.get(k),
            ),
            DelegateData::Segment(k) => (format!("segment {k}"), program.segments.get(k)),
        };
        outln!(
            "  delegate {i}: {:?}, blob in {where_}{}",
            d.id,
            range
                .map(|r| format!(" ({})", range_text(r)))
                .unwrap_or_default()
        );
        for (k, v) in &d.compile_specs {
            outln!("    compile spec {k} = {}", spec_value(v));
        }
        if d.id != VULKAN_BACKEND_ID {
            outln!("    (not a {VULKAN_BACKEND_ID} delegate: etvk cannot run it)");
            continue;
        }
        let Some(blob) = range.and_then(|r| program.bytes.get(r.clone())) else {
            outln!("    blob reference out of range");
            continue;
        };
        match etvk_format::vkgraph::parse_delegate(blob) {
            Ok(vd) => print_vkgraph(&vd, supported),
            Err(e) => outln!("    invalid Vulkan delegate blob: {e}"),
        }
    }
}

/// Run `etvk inspect`.
pub fn inspect(model: &Path) -> Result<(), CliError> {
    let program = etvk_host::load_program(model)?;
    outln!("file: {} ({} bytes)", model.display(), program.bytes.len());
    match &program.extended_header {
        Some(h) => outln!(
            "extended header: length {}, program_size {}, segment_base_offset {}, segment_data_size {}",
            h.header_length, h.program_size, h.segment_base_offset, h.segment_data_size
        ),
        None => outln!("extended header: none"),
    }
    outln!("segments ({}):", program.segments.len());
    for (i, r) in program.segments.iter().enumerate() {
        outln!("  [{i}] {}", range_text(r));
    }
    if !program.inline_delegate_data.is_empty() {
        outln!(
            "inline delegate data ({}):",
            program.inline_delegate_data.len()
        );
        for (i, r) in program.inline_delegate_data.iter().enumerate() {
            outln!("  [{i}] {}", range_text(r));
        }
    }
    outln!("named data ({}):", program.named_data.len());
    for (k, r) in &program.named_data {
        outln!("  {k}: {}", range_text(r));
    }
    let supported: HashSet<String> = etvk_runtime::registered_ops()
        .into_iter()
        .map(|o| o.name)
        .collect();
    for plan in &program.plans {
        print_plan(&program, plan, &supported);
    }
    Ok(())
}
