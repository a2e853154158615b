//! Compiles `shaders/*.comp` variants listed in `shaders/manifest.txt` with glslc, validates
//! them with spirv-val, reads bindings / push-constant size / capabilities from the SPIR-V,
//! and generates `$OUT_DIR/shaders.rs` (the `ShaderId` enum and the `SHADERS` table).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

struct Variant {
    name: String,
    source: String,
    local: [u32; 3],
    defines: Vec<(String, String)>,
    /// glslc -O (manifest `opt=0` turns it off for a variant whose optimized SPIR-V the
    /// driver compiles to slower code).
    optimize: bool,
    /// Manifest `spv=1`: the SPIR-V is committed as `shaders/spv/<name>.spv` (made by
    /// scripts/build-spv.sh with a glslang newer than Debian's glslc, for extensions that
    /// glslc cannot compile); the build only reflects it.
    prebuilt: bool,
    line: usize,
}

fn fail(msg: String) -> ! {
    // A build script reports errors by failing; the message is what the developer sees.
    panic!("etvk-shaders build: {msg}");
}

fn parse_manifest(text: &str) -> Vec<Variant> {
    let mut out = Vec::new();
    for (ln, raw) in text.lines().enumerate() {
        let line = ln + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut toks = content.split_whitespace();
        let pattern = toks.next().unwrap_or_default().to_string();
        let source = toks
            .next()
            .unwrap_or_else(|| fail(format!("manifest line {line}: missing source file")))
            .to_string();
        let mut local = [64u32, 1, 1];
        let mut optimize = true;
        let mut prebuilt = false;
        // Each define: key and its alternatives (tag, value).
        let mut defs: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for tok in toks {
            let (k, v) = tok.split_once('=').unwrap_or_else(|| {
                fail(format!(
                    "manifest line {line}: token {tok:?} is not KEY=VALUE"
                ))
            });
            if k == "local" {
                let parts: Vec<u32> = v
                    .split(',')
                    .map(|p| {
                        p.parse().unwrap_or_else(|_| {
                            fail(format!("manifest line {line}: bad local size {v:?}"))
                        })
                    })
                    .collect();
                if parts.is_empty() || parts.len() > 3 {
                    fail(format!(
                        "manifest line {line}: local size needs 1..3 numbers"
                    ));
                }
                for (i, p) in parts.iter().enumerate() {
                    local[i] = *p;
                }
                continue;
            }
            if k == "spv" {
                prebuilt = match v {
                    "0" => false,
                    "1" => true,
                    _ => fail(format!(
                        "manifest line {line}: spv must be 0 or 1, not {v:?}"
                    )),
                };
                continue;
            }
            if k == "opt" {
                optimize = match v {
                    "0" => false,
                    "1" => true,
                    _ => fail(format!(
                        "manifest line {line}: opt must be 0 or 1, not {v:?}"
                    )),
                };
                continue;
            }
            let alts = v
                .split('|')
                .map(|alt| match alt.split_once(':') {
                    Some((tag, val)) => (tag.to_string(), val.to_string()),
                    None => (alt.to_lowercase(), alt.to_string()),
                })
                .collect();
            defs.push((k.to_string(), alts));
        }
        // Cross product of alternatives.
        let mut combos: Vec<Vec<(String, String, String)>> = vec![vec![]];
        for (k, alts) in &defs {
            let mut next = Vec::new();
            for c in &combos {
                for (tag, val) in alts {
                    let mut c2 = c.clone();
                    c2.push((k.clone(), tag.clone(), val.clone()));
                    next.push(c2);
                }
            }
            combos = next;
        }
        for c in combos {
            let mut name = pattern.clone();
            for (k, tag, _) in &c {
                name = name.replace(&format!("{{{k}}}"), tag);
            }
            if name.contains('{') {
                fail(format!(
                    "manifest line {line}: name {name:?} has an unknown placeholder"
                ));
            }
            out.push(Variant {
                name,
                source: source.clone(),
                local,
                defines: c.into_iter().map(|(k, _, v)| (k, v)).collect(),
                optimize,
                prebuilt,
                line,
            });
        }
    }
    out
}

fn camel(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut cs = s.chars();
            match cs.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + cs.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn run_tool(cmd: &mut Command, tool: &str, package: &str) -> std::process::Output {
    match cmd.output() {
        Ok(o) => o,
        Err(e) => fail(format!(
            "cannot run `{tool}` ({e}); install it (Debian: apt-get install {package})"
        )),
    }
}

/// What the build reads back from a SPIR-V module.
struct Reflection {
    num_bindings: u32,
    /// Bit b: binding b may be written (not declared `readonly`).
    written: u32,
    push_bytes: u32,
    features: BTreeSet<&'static str>,
}

/// Shaders with cooperative matrices keep every shared variable a whole number of 16-byte
/// units: NVIDIA's driver lays shared variables out in declaration order, and a cooperative
/// load or store on an array that a smaller variable ahead of it moved off a 16-byte offset
/// reads and writes wrong data on the GPU only (session 10: a 4-byte array before the staging
/// tile; session 13: a `shared bool` ahead of the tiles). The build refuses such a shader.
fn check_shared_offsets(
    caps: &BTreeSet<u32>,
    vars: &[(u32, u32, u32)],
    pointers: &HashMap<u32, (u32, u32)>,
    types: &HashMap<u32, Vec<u32>>,
    constants: &HashMap<u32, u32>,
    names: &HashMap<u32, String>,
    name: &str,
) {
    if !caps.contains(&5357) && !caps.contains(&6022) {
        return;
    }
    // Natural (unpadded) size; None for types a shared variable here never has.
    fn natural_size(
        id: u32,
        types: &HashMap<u32, Vec<u32>>,
        constants: &HashMap<u32, u32>,
    ) -> Option<u32> {
        let t = types.get(&id)?;
        match t[0] & 0xffff {
            20 => Some(4),
            21 | 22 => Some(t[2] / 8),
            23 | 24 => Some(t[3] * natural_size(t[2], types, constants)?),
            28 => Some(constants.get(&t[3])? * natural_size(t[2], types, constants)?),
            30 => t[2..]
                .iter()
                .map(|m| natural_size(*m, types, constants))
                .sum(),
            _ => None,
        }
    }
    for (ptr, id, sc) in vars {
        if *sc != 4 {
            continue;
        }
        let Some(&(_, ty)) = pointers.get(ptr) else {
            continue;
        };
        if let Some(size) = natural_size(ty, types, constants) {
            if size % 16 != 0 {
                let var = names.get(id).cloned().unwrap_or_else(|| format!("%{id}"));
                fail(format!(
                    "{name}: shared variable `{var}` is {size} bytes; in a shader with \
                     cooperative matrices every shared variable must be a multiple of 16 bytes \
                     (the driver lays them out in order, and a cooperative load or store off a \
                     16-byte offset goes wrong on the GPU)"
                ));
            }
        }
    }
}

fn reflect(words: &[u32], name: &str) -> Reflection {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        fail(format!("{name}: not SPIR-V"));
    }
    let mut caps = BTreeSet::new();
    let mut bindings: HashMap<u32, u32> = HashMap::new(); // id -> binding
    let mut sets: HashMap<u32, u32> = HashMap::new();
    let mut array_stride: HashMap<u32, u32> = HashMap::new();
    let mut member_offset: HashMap<(u32, u32), u32> = HashMap::new();
    let mut types: HashMap<u32, Vec<u32>> = HashMap::new(); // id -> instruction words
    let mut constants: HashMap<u32, u32> = HashMap::new();
    let mut pointers: HashMap<u32, (u32, u32)> = HashMap::new(); // id -> (storage class, type)
    let mut vars: Vec<(u32, u32, u32)> = Vec::new(); // (ptr type, id, storage class)
    let mut names: HashMap<u32, String> = HashMap::new();
    // NonWritable (24) on a variable, or on a member of a block: `readonly` in GLSL.
    let mut non_writable: BTreeSet<u32> = BTreeSet::new();
    let mut members_non_writable: HashMap<u32, BTreeSet<u32>> = HashMap::new();
    let mut i = 5;
    while i < words.len() {
        let wc = (words[i] >> 16) as usize;
        let op = words[i] & 0xffff;
        if wc == 0 || i + wc > words.len() {
            fail(format!("{name}: malformed SPIR-V at word {i}"));
        }
        let ins = &words[i..i + wc];
        match op {
            17 => {
                caps.insert(ins[1]);
            }
            71 if wc >= 4 => match ins[2] {
                33 => {
                    bindings.insert(ins[1], ins[3]);
                }
                34 => {
                    sets.insert(ins[1], ins[3]);
                }
                6 => {
                    array_stride.insert(ins[1], ins[3]);
                }
                _ => {}
            },
            71 if wc == 3 && ins[2] == 24 => {
                non_writable.insert(ins[1]);
            }
            72 if wc == 4 && ins[3] == 24 => {
                members_non_writable
                    .entry(ins[1])
                    .or_default()
                    .insert(ins[2]);
            }
            72 if wc >= 5 && ins[3] == 35 => {
                member_offset.insert((ins[1], ins[2]), ins[4]);
            }
            20..=30 => {
                types.insert(ins[1], ins.to_vec());
            }
            32 => {
                pointers.insert(ins[1], (ins[2], ins[3]));
            }
            43 if wc >= 4 => {
                constants.insert(ins[2], ins[3]);
            }
            59 => vars.push((ins[1], ins[2], ins[3])),
            5 if wc >= 3 => {
                let bytes: Vec<u8> = ins[2..].iter().flat_map(|w| w.to_le_bytes()).collect();
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                names.insert(ins[1], String::from_utf8_lossy(&bytes[..end]).into_owned());
            }
            _ => {}
        }
        i += wc;
    }
    fn size_of(
        id: u32,
        types: &HashMap<u32, Vec<u32>>,
        constants: &HashMap<u32, u32>,
        strides: &HashMap<u32, u32>,
        offsets: &HashMap<(u32, u32), u32>,
        name: &str,
    ) -> u32 {
        let t = types
            .get(&id)
            .unwrap_or_else(|| fail(format!("{name}: unknown type id {id}")));
        match t[0] & 0xffff {
            21 | 22 => t[2] / 8,
            23 => t[3] * size_of(t[2], types, constants, strides, offsets, name),
            28 => {
                let len = *constants.get(&t[3]).unwrap_or(&0);
                let stride = *strides.get(&id).unwrap_or(&0);
                len * stride
            }
            30 => {
                let mut end = 0;
                for (m, mt) in t[2..].iter().enumerate() {
                    let off = *offsets.get(&(id, m as u32)).unwrap_or(&0);
                    end = end.max(off + size_of(*mt, types, constants, strides, offsets, name));
                }
                end
            }
            other => fail(format!(
                "{name}: push-constant member of unsupported type (opcode {other})"
            )),
        }
    }
    check_shared_offsets(&caps, &vars, &pointers, &types, &constants, &names, name);
    let mut binding_set = BTreeSet::new();
    let mut written = 0u32;
    let mut push_bytes = 0;
    for (ptr, id, sc) in &vars {
        if *sc == 9 {
            let (_, ty) = pointers[ptr];
            push_bytes = size_of(ty, &types, &constants, &array_stride, &member_offset, name);
        }
        if let Some(b) = bindings.get(id) {
            if sets.get(id).copied().unwrap_or(0) != 0 {
                fail(format!("{name}: only descriptor set 0 is supported"));
            }
            if *sc != 12 && *sc != 2 {
                fail(format!("{name}: binding {b} is not a storage buffer"));
            }
            binding_set.insert(*b);
            // Writable unless the variable or every member of its block is NonWritable
            // (the runtime leaves out barriers between dispatches by these bits).
            let (_, block) = pointers[ptr];
            let members = types.get(&block).map_or(0, |t| t.len() - 2);
            let readonly = non_writable.contains(id)
                || (members > 0
                    && members_non_writable
                        .get(&block)
                        .is_some_and(|m| m.len() == members));
            if *b >= 32 {
                fail(format!("{name}: binding {b}: at most 32 bindings"));
            }
            if !readonly {
                written |= 1 << b;
            }
        }
    }
    let n = binding_set.len() as u32;
    if binding_set.iter().copied().ne(0..n) {
        fail(format!(
            "{name}: bindings {binding_set:?} are not contiguous from 0"
        ));
    }
    let mut features = BTreeSet::new();
    for c in caps {
        let f = match c {
            9 => "Float16",
            39 => "Int8",
            22 => "Int16",
            11 => "Int64",
            4433 | 4434 => "Storage16Bit",
            4448 | 4449 => "Storage8Bit",
            6016..=6019 => "IntegerDotProduct",
            6022 => "CooperativeMatrixKhr",
            5430..=5439 => "CooperativeMatrix2Nv",
            5347 => "BufferDeviceAddress",
            5357 => "CooperativeMatrixNv",
            5345 => "VulkanMemoryModel",
            65 => "SubgroupShuffle",
            63 => "SubgroupArithmetic",
            _ => continue,
        };
        features.insert(f);
    }
    Reflection {
        num_bindings: n,
        written,
        push_bytes: push_bytes.div_ceil(4) * 4,
        features,
    }
}

/// Compile one variant with glslc into `spv`, validate it with spirv-val, and read it back.
fn compile(var: &Variant, shader_dir: &std::path::Path, spv: &std::path::Path) -> Vec<u8> {
    let src = shader_dir.join(&var.source);
    let mut cmd = Command::new("glslc");
    cmd.arg("--target-env=vulkan1.2");
    if var.optimize {
        cmd.arg("-O");
    }
    cmd.arg("-fshader-stage=compute").arg("-I").arg(shader_dir);
    for (k, val) in &var.defines {
        cmd.arg(format!("-D{k}={val}"));
    }
    cmd.arg("-o").arg(spv).arg(&src);
    let o = run_tool(&mut cmd, "glslc", "glslc");
    if !o.status.success() {
        fail(format!(
            "glslc failed for variant {} ({} line {}):\n{}",
            var.name,
            var.source,
            var.line,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let o = run_tool(
        Command::new("spirv-val")
            .arg("--target-env")
            .arg("vulkan1.2")
            .arg(spv),
        "spirv-val",
        "spirv-tools",
    );
    if !o.status.success() {
        fail(format!(
            "spirv-val rejected variant {}:\n{}",
            var.name,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    std::fs::read(spv).unwrap_or_else(|e| fail(format!("read {}: {e}", spv.display())))
}

/// The SPIR-V words of a module's bytes.
fn spirv_words(bytes: &[u8], name: &str) -> Vec<u32> {
    if !bytes.len().is_multiple_of(4) {
        fail(format!("{name}: SPIR-V size not a multiple of 4"));
    }
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Reflect one variant's SPIR-V and append its constant, enum entry and table row.
fn emit(
    var: &Variant,
    idx: usize,
    words: &[u32],
    code: &mut String,
    enum_body: &mut String,
    all: &mut String,
    table: &mut String,
) {
    let r = reflect(words, &var.name);
    if r.push_bytes > 128 {
        fail(format!(
            "{}: {} push-constant bytes exceed the portable 128",
            var.name, r.push_bytes
        ));
    }
    let ident = camel(&var.name);
    let konst = format!("SPV_{}", var.name.to_uppercase());
    write!(code, "static {konst}: [u32; {}] = [", words.len()).unwrap();
    for (i, w) in words.iter().enumerate() {
        if i % 12 == 0 {
            code.push('\n');
        }
        write!(code, "0x{w:08x},").unwrap();
    }
    code.push_str("\n];\n");
    writeln!(
        enum_body,
        "    /// `{}` ({}).\n    {ident} = {idx},",
        var.name, var.source
    )
    .unwrap();
    writeln!(all, "    ShaderId::{ident},").unwrap();
    let defines: Vec<String> = var
        .defines
        .iter()
        .map(|(k, v)| format!("({k:?}, {v:?})"))
        .collect();
    let feats: Vec<String> = r.features.iter().map(|f| format!("Feature::{f}")).collect();
    writeln!(
            table,
            "    ShaderInfo {{ name: {:?}, source: {:?}, spirv: &{konst}, num_bindings: {}, written_bindings: {:#x}, push_constant_bytes: {}, local_size: {:?}, features: &[{}], defines: &[{}] }},",
            var.name,
            var.source,
            r.num_bindings,
            r.written,
            r.push_bytes,
            var.local,
            feats.join(", "),
            defines.join(", ")
        )
        .unwrap();
}

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let shader_dir = manifest_dir.join("../../shaders");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed={}", shader_dir.display());
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(rd) = std::fs::read_dir(&shader_dir) {
        for e in rd.flatten() {
            println!("cargo:rerun-if-changed={}", e.path().display());
        }
    }
    let manifest_path = shader_dir.join("manifest.txt");
    let manifest = std::fs::read_to_string(&manifest_path)
        .unwrap_or_else(|e| fail(format!("cannot read {}: {e}", manifest_path.display())));
    let variants = parse_manifest(&manifest);

    let v = run_tool(Command::new("glslc").arg("--version"), "glslc", "glslc");
    if !v.status.success() {
        fail("`glslc --version` failed; install glslc (Debian: apt-get install glslc)".into());
    }

    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut code = String::new();
    let mut table = String::new();
    let mut enum_body = String::new();
    let mut all = String::new();
    for (idx, var) in variants.iter().enumerate() {
        if let Some(prev) = seen.insert(var.name.clone(), var.line) {
            fail(format!(
                "shader name {:?} defined twice (manifest lines {prev} and {})",
                var.name, var.line
            ));
        }
        let bytes = if var.prebuilt {
            // Debian's spirv-val predates these extensions; the device's driver is the judge
            // (and the kernels' GPU tests).
            let spv = shader_dir.join("spv").join(format!("{}.spv", var.name));
            std::fs::read(&spv).unwrap_or_else(|e| {
                fail(format!(
                    "variant {} (manifest line {}): read {}: {e} (scripts/build-spv.sh makes it)",
                    var.name,
                    var.line,
                    spv.display()
                ))
            })
        } else {
            compile(var, &shader_dir, &out_dir.join(format!("{}.spv", var.name)))
        };
        let words = spirv_words(&bytes, &var.name);
        emit(
            var,
            idx,
            &words,
            &mut code,
            &mut enum_body,
            &mut all,
            &mut table,
        );
    }
    let n = variants.len();
    let mut gen = String::new();
    writeln!(
        gen,
        "// @generated by crates/shaders/build.rs from shaders/manifest.txt. Do not edit."
    )
    .unwrap();
    gen.push_str(&code);
    writeln!(
        gen,
        "/// Every compiled shader variant (one per manifest expansion).\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n#[repr(u32)]\npub enum ShaderId {{\n{enum_body}}}\n"
    )
    .unwrap();
    writeln!(gen, "/// All shader ids, in manifest order.\npub const ALL_SHADERS: [ShaderId; {n}] = [\n{all}];\n").unwrap();
    writeln!(gen, "/// The table, indexed by `ShaderId as usize`.\npub static SHADERS: [ShaderInfo; {n}] = [\n{table}];").unwrap();
    let dest = out_dir.join("shaders.rs");
    std::fs::write(&dest, gen).unwrap_or_else(|e| fail(format!("write {}: {e}", dest.display())));
}
